//! A release stated from memory: an agent tells which version fixed a vulnerability or bug, or
//! which release is the latest, and no observation of the run gave that version (docs/METHODS.md,
//! "Versions stated from memory").
//!
//! A version number is usually a reference, not a claim (`attrs==24.2.0`, "added in Python
//! 3.9": `evidence::ValueContext::Reference`), and is never an unsourced value by itself. A
//! sentence that says a version *fixed* something, or *is the latest*, states a fact about the
//! world that an agent can only know from a source: an advisory, a changelog, a package index.
//! When no tool output, page read, task or user turn before it holds the version, the agent
//! recalled it, and the step that states it carries an unsourced-value finding (an upgrade to
//! the wrong "first fixed" release, a downgrade, or a "latest" that is not).
//!
//! Versions told as supported after a source said their support was dropped: a writer's "Python
//! 3.8 through 3.13 are supported" after the dependency's changelog "Dropped support for Python
//! 3.8 and 3.9" ([`told_supported_after_drop`]).

use std::sync::LazyLock;

use regex::Regex;

use super::{Context, actions, finding, is_agent_output, is_outside_agent, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// A version: two to four dot-separated numbers, an optional `v` before.
const VERSION: &str = r"v?(\d+(?:\.\d+){1,3})\b";

/// Sentences that tie a version to a fix or to being the newest release: "fixed in 1.26.17",
/// "patched in urllib3 2.2.2", "the first release that fixes it is 2.2.2", "the latest version
/// is 4.17.21", "vulnerable before 1.26.19".
static CLAIMS: LazyLock<[Regex; 5]> = LazyLock::new(|| {
    let re = |p: String| Regex::new(&p).unwrap();
    [
        re(format!(
            r"(?i)\b(?:fixed|patched|resolved|addressed|remediated)\s+(?:in|by|as of|since)\s+(?:[\w.-]+\s+){{0,2}}?(?:version\s+|release\s+)?{VERSION}"
        )),
        re(format!(
            r"(?i)\b(?:latest|newest|most recent|current)\s+(?:stable\s+)?(?:release|version)\b[^.\n]{{0,40}}?\b(?:is|was|:)\s+(?:[\w.-]+\s+)?{VERSION}"
        )),
        re(format!(
            r"(?i)\bfirst\s+(?:fixed\s+|patched\s+|safe\s+|secure\s+)?(?:release|version)\b[^.\n]{{0,60}}?\b(?:is|was|:)\s+(?:[\w.-]+\s+)?{VERSION}"
        )),
        re(format!(r"(?i)\b(?:vulnerable|affected)\s+(?:versions?\s+)?(?:before|below|prior to|<)\s*{VERSION}")),
        // The same told the other way round: "1.26.17 is the first release with the fix", "4.17.21
        // is the latest version".
        re(format!(
            r"(?i)\b{VERSION}\s+(?:is|was)\s+(?:the\s+)?(?:first|latest|newest|most recent)\s+(?:fixed\s+|patched\s+|safe\s+|secure\s+|stable\s+)?(?:release|version)\b"
        )),
    ]
});

/// Words after a number that make it a quantity, not a release ("fixed in 1.5 hours").
const UNITS: [&str; 22] = [
    "s", "ms", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h", "hr", "hrs", "hour",
    "hours", "day", "days", "x", "kb", "mb", "gb", "percent",
];

/// What makes a "fixed in" sentence about a vulnerability or a bug rather than about an API's
/// history: an advisory id, or a word of security or of a defect.
static ABOUT_A_FIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bCVE-\d{4}-\d+|\bGHSA-|\bvulnerab|\bsecurity\b|\badvisor|\bexploit|\bbug\b|\bregression\b|\bissue\b|\bfix")
        .unwrap()
});

/// Whether `step` is an agent's own message or thought: not the served person's, not an outside
/// agent's, not the system's.
fn agent_statement(step: &crate::model::Step) -> bool {
    matches!(step.kind, StepKind::Message | StepKind::Thought)
        && !actions::is_human(step)
        && !is_outside_agent(&step.agent)
        && !step.role.eq_ignore_ascii_case("system")
}

/// Step `i`, an agent's message or thought, states a version in a sentence that ties it to a fix
/// ([`CLAIMS`] with [`ABOUT_A_FIX`]) or to being the latest release, and no step before it that
/// could have given it (a tool output, a page an agent read, the served person's turns, the
/// task) holds that version: an unsourced-value finding quoting the sentence.
pub(super) fn recalled_version(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if !agent_statement(step) {
        return;
    }
    let content = &step.content;
    if !content.bytes().any(|b| b == b'.') {
        return;
    }
    for sentence in crate::text::sentences(content) {
        for (k, re) in CLAIMS.iter().enumerate() {
            let Some(c) = re.captures(sentence) else { continue };
            // "Fixed in" and "vulnerable before" are about a defect only with a word of one; "the
            // latest release is" and "the first fixed release is" stand alone.
            if matches!(k, 0 | 3) && !ABOUT_A_FIX.is_match(sentence) {
                continue;
            }
            let version = &c[1];
            // "fixed in 1.5 hours" is a duration, not a release.
            let after = sentence[c.get(1).map_or(0, |m| m.end())..].trim_start().to_ascii_lowercase();
            let unit = after.split(|c: char| !c.is_ascii_alphanumeric() && c != '%').next().unwrap_or("");
            if UNITS.contains(&unit) || after.starts_with('%') {
                continue;
            }
            if sourced(ctx, i, version) {
                continue;
            }
            out.push(finding(
                Signal::UnsourcedValue,
                weights::UNSOURCED_MAX,
                prose![format!(
                    "states \"{}\" from memory: no tool output, page or user turn before it gives {version}",
                    crate::text::clip(sentence.trim(), 100)
                )],
            ));
            return;
        }
    }
}

/// How many steps before a claim [`sourced`] reads for the version's source (the task is always
/// read): a run where thousands of messages each claim a fix would otherwise read the whole run
/// again for each claim.
const SOURCE_WINDOW: usize = 400;

/// Whether a step of the [`SOURCE_WINDOW`] steps before `i` that could source a version holds
/// `version` as a word of its own (not inside a longer version: `1.26.17` is not in
/// `1.26.170`): a tool output, a page an agent read, the served person's turn; or the task.
fn sourced(ctx: &Context<'_>, i: usize, version: &str) -> bool {
    let t = ctx.trajectory;
    let holds = |text: &str| {
        text.match_indices(version).any(|(p, _)| {
            let before = text[..p].chars().next_back();
            let mut after = text[p + version.len()..].chars();
            let (next, then) = (after.next(), after.next());
            let continues = next.is_some_and(|c| c.is_ascii_digit())
                || next == Some('.') && then.is_some_and(|c| c.is_ascii_digit());
            !before.is_some_and(|c| c.is_ascii_digit() || c == '.') && !continues
        })
    };
    holds(&t.task)
        || (i.saturating_sub(SOURCE_WINDOW)..i).any(|j| {
            let s = &t.steps[j];
            (s.kind == StepKind::ToolResult
                || is_agent_output(ctx, j)
                || actions::is_human(s)
                || actions::served_person(s))
                && holds(&s.content)
        })
}

/// Versions as a source lists them: "3.8 and 3.9", "16, 17 or 18", "v2.7" (group of the
/// pattern that uses it). One to three dot-separated numbers each.
const VERSION_LIST: &str = r"v?\d+(?:\.\d+){0,2}(?:\s*(?:,|and|&|or)\s*v?\d+(?:\.\d+){0,2})*";

/// A source's word that support for versions of a product ended: "Dropped support for Python 3.8
/// and 3.9", "removes compatibility with Node 16", "This release drops Python 3.8", "no longer
/// supports Python 3.7", "Python 3.7 is no longer supported", "Support for Node 16 has ended".
/// Group `product` is the product's name, `versions` the versions, `older` present when the
/// source says "and older" (every earlier version of that line is dropped too).
static DROPPED: LazyLock<[Regex; 4]> = LazyLock::new(|| {
    let re = |p: String| Regex::new(&p).unwrap();
    let older = r"(?P<older>\s+(?:and|or)\s+(?:older|earlier|below|lower|prior))?";
    [
        re(format!(
            r"(?i)\b(?:dropped|drops|removed|removes|ended|ends|discontinued)\s+(?:the\s+)?(?:(?:support\s+for|compatibility\s+with)\s+)?(?P<product>[A-Za-z][\w+#-]*)\s+(?P<versions>{VERSION_LIST}){older}"
        )),
        re(format!(
            r"(?i)\bno\s+longer\s+(?:supports?|compatible\s+with)\s+(?P<product>[A-Za-z][\w+#-]*)\s+(?P<versions>{VERSION_LIST}){older}"
        )),
        re(format!(
            r"(?i)\b(?P<product>[A-Za-z][\w+#-]*)\s+(?P<versions>{VERSION_LIST}){older}\s+(?:is|are)\s+no\s+longer\s+supported"
        )),
        re(format!(
            r"(?i)\bsupport\s+for\s+(?P<product>[A-Za-z][\w+#-]*)\s+(?P<versions>{VERSION_LIST}){older}\s+(?:has|have)\s+(?:ended|been\s+(?:dropped|removed))"
        )),
    ]
});

/// A source's word that support for versions came back or was added ("Restored support for
/// Python 3.9", "re-added compatibility with Node 18", "Added support for Python 3.13"): a later
/// release may undo a drop, so a version a source names so is not read as dropped.
static RESTORED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b(?:restored|restores|re-?added|re-?adds|re-?enabled|reinstated|brought\s+back|added\s+back|added|adds)\s+(?:the\s+)?(?:support\s+for|compatibility\s+with)\s+(?P<product>[A-Za-z][\w+#-]*)\s+(?P<versions>{VERSION_LIST})"
    ))
    .unwrap()
});

/// A sentence that contrasts with an earlier release or speaks of the past ("Unlike 1.x, which
/// supported Python 3.8 through 3.12, …", "previously supported"): its versions are not what the
/// agent says is supported now.
static PAST_OR_CONTRAST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:unlike|previously|formerly|used\s+to|(?:which|that|was|were|had\s+been)\s+supported|compared\s+(?:to|with))\b").unwrap()
});

/// A sentence that says versions are supported: "Python 3.8 through 3.13 are supported", "we
/// support Python 3.9-3.12", "works with Node 16 and later", "compatible with Python 3.8+".
static SUPPORTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:supported|supports|support\s+for|(?:we|they|also|still|now|fully)\s+support|compatible\s+with|works\s+(?:on|with)|runs\s+on)\b").unwrap()
});

/// Words that turn a support sentence around or bound it from below: "no longer supported",
/// "not supported", "dropped", "requires Python >= 3.10", "only 3.10 and later".
static NOT_SUPPORTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:no\s+longer|not|cannot|can't|isn't|aren't|won't|dropped|drops|removed|removes|unsupported|deprecated|requires?|required|only|minimum|at\s+least|end\s+of)\b|>=|≥").unwrap()
});

/// A version or a range of versions written in a sentence: "3.8 through 3.13", "3.8-3.13",
/// "3.10 to 3.12", "3.9". Groups 1 and 2 (2 absent for one version).
static VERSION_SPAN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|[^\w.])v?(\d+(?:\.\d+){0,2})(?:\s*(?:through|thru|to|until|-|–|—)\s*v?(\d+(?:\.\d+){0,2}))?(?:[^\w.]|\.(?:\s|$)|$)").unwrap()
});

/// A version's numbers, for comparing (`3.10` after `3.9`).
fn version_key(v: &str) -> Vec<u64> {
    v.trim_start_matches(['v', 'V']).split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// Whether a source within [`DROP_WINDOW`] steps before `i` says support for `product` version
/// `version` came back or was added ([`RESTORED`]).
fn restored(ctx: &Context<'_>, i: usize, product: &str, version: &[u64]) -> bool {
    let t = ctx.trajectory;
    (i.saturating_sub(DROP_WINDOW)..i).any(|j| {
        let content = &t.steps[j].content;
        content.to_ascii_lowercase().contains("support")
            && RESTORED.captures_iter(content).any(|c| {
                c["product"].eq_ignore_ascii_case(product)
                    && VERSION_SPAN.captures_iter(&c["versions"]).any(|v| version_key(&v[1]) == version)
            })
    })
}

/// How many steps before a statement [`told_supported_after_drop`] reads for a source's word.
const DROP_WINDOW: usize = 200;

/// Step `i`, an agent's message or thought, says versions of a product are supported (a
/// [`SUPPORTED`] sentence naming the product, not turned around by [`NOT_SUPPORTED`]) and names
/// one, or a range holding one, that a source before it says support was dropped for (a tool
/// output, a page read, another agent's message; [`DROPPED`], the last [`DROP_WINDOW`] steps):
/// "says "Python 3.8 through 3.13 are supported", but step 7 says "Dropped support for Python 3.8
/// and 3.9"" (`ignored_result`). docs/METHODS.md, "Grounding".
pub(super) fn told_supported_after_drop(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if !agent_statement(step) || !SUPPORTED.is_match(&step.content) {
        return;
    }
    let statements: Vec<&str> = crate::text::sentences(&step.content)
        .filter(|s| {
            SUPPORTED.is_match(s)
                && !NOT_SUPPORTED.is_match(s)
                && !PAST_OR_CONTRAST.is_match(s)
                && s.bytes().any(|b| b.is_ascii_digit())
        })
        .collect();
    if statements.is_empty() {
        return;
    }
    for j in (i.saturating_sub(DROP_WINDOW)..i).rev() {
        let s = &t.steps[j];
        let source = s.kind == StepKind::ToolResult
            || is_agent_output(ctx, j)
            || (s.kind == StepKind::Message && s.agent != step.agent && !actions::is_human(s));
        if !source
            || !{
                let lower = s.content.to_ascii_lowercase();
                ["support", "drop", "remov", "discontinu", "compatib", "ended", "ends "]
                    .iter()
                    .any(|w| lower.contains(w))
            }
        {
            continue;
        }
        for re in DROPPED.iter() {
            for c in re.captures_iter(&s.content) {
                let product = c["product"].to_ascii_lowercase();
                let older = c.name("older").is_some();
                let dropped: Vec<Vec<u64>> = VERSION_SPAN
                    .captures_iter(&c["versions"])
                    .map(|v| version_key(&v[1]))
                    .filter(|d| !restored(ctx, i, &product, d))
                    .collect();
                for sentence in &statements {
                    let lower = sentence.to_ascii_lowercase();
                    let Some(at) = lower.match_indices(&product).map(|(p, _)| p).find(|&p| {
                        let before = lower[..p].chars().next_back();
                        let after = lower[p + product.len()..].chars().next();
                        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
                    }) else {
                        continue;
                    };
                    let Some(span) = VERSION_SPAN.captures_iter(&sentence[at..]).find(|v| {
                        let low = version_key(&v[1]);
                        let high = v.get(2).map_or_else(|| low.clone(), |h| version_key(h.as_str()));
                        // "1.27 and older" drops every earlier version of the 1.x line too.
                        dropped.iter().any(|d| {
                            low <= *d && (d <= &high || older && low.first() == d.first())
                                || older && high <= *d && high.first() == d.first()
                        })
                    }) else {
                        continue;
                    };
                    // Quoted from the product's mention before the versions: "Python 3.8 through
                    // 3.13 are supported".
                    let from = lower[..at + span.get(1).map_or(0, |m| m.start())].rfind(&product).unwrap_or(at);
                    let said = crate::text::sentence_around(
                        &s.content,
                        c.get(0).map_or(0, |m| m.start()),
                        c.get(0).map_or(0, |m| m.end()),
                    );
                    out.push(finding(
                        Signal::IgnoredResult,
                        weights::MISREAD,
                        prose![
                            format!("says \"{}\", but step ", crate::text::clip(sentence[from..].trim(), 90)),
                            Part::Step(j),
                            format!(" says \"{}\"", crate::text::clip(s.content[said].trim(), 90))
                        ],
                    ));
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fix_or_latest_release_claim_names_its_version() {
        let version = |s: &str| CLAIMS.iter().find_map(|re| re.captures(s).map(|c| c[1].to_string()));
        assert_eq!(
            version("CVE-2024-37891 was fixed in urllib3 1.26.17, so I'll install it").as_deref(),
            Some("1.26.17")
        );
        assert_eq!(version("The latest release of lodash is 4.17.21").as_deref(), Some("4.17.21"));
        assert_eq!(version("The first patched version is v2.2.2.").as_deref(), Some("2.2.2"));
        assert_eq!(version("Versions before 3.1.4 are vulnerable; affected below 3.1.4").as_deref(), Some("3.1.4"));
        assert_eq!(version("urllib3 1.26.17 is the first release with the fix").as_deref(), Some("1.26.17"));
        assert_eq!(version("so v4.17.21 was the latest version then").as_deref(), Some("4.17.21"));
        assert_eq!(version("pip install attrs==24.2.0"), None);
        assert_eq!(version("The bug was fixed in 1.5 hours").as_deref(), Some("1.5"), "the rule drops it by its unit");
        assert_eq!(version("2.0.7 is the version installed here"), None);
        assert_eq!(version("str.removeprefix was added in Python 3.9"), None);
    }
}
