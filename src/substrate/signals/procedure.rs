//! A plan that leaves out a step of the written procedure the user asked to follow: "Cut the
//! 2.4.0 release following RELEASING.md", the agent reads the file, whose step 3 says "Run `make
//! lock` to regenerate `uv.lock`", and its plan bumps, tests, commits and tags without it (or
//! says it will skip it), and no later call runs it; and a plan that leaves out a requirement
//! the task insists on: "the old `timeout` keyword must keep working … should emit a
//! `DeprecationWarning` … Passing both should raise `TypeError`", and a plan that renames the
//! keyword outright, with no later edit writing either name. docs/METHODS.md, "Instructions".

use std::sync::LazyLock;

use regex::Regex;

use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// How many steps after the user's request the procedure's reading and the plan are looked for.
const WINDOW: usize = 40;

/// A document the user names to follow: "following RELEASING.md", "per docs/deploy.md", "as
/// CONTRIBUTING.md says". Group 1: the document's path.
static FOLLOW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:follow(?:ing)?|per|according to|as (?:described |laid out |written )?in|as|by)\s+(?:the\s+)?`?([\w./-]+\.(?:md|rst|txt))\b").unwrap()
});

/// A numbered item of a procedure: `3. Run `make lock` …`, up to the next item or a blank line.
static ITEM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^\s{0,3}(\d{1,2})[.)]\s+(.+(?:\n[ \t]+\S.*)*)").unwrap());

/// A span the procedure writes as code: `make lock`, `uv.lock`.
static CODE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`([^`\n]{3,80})`").unwrap());

/// A placeholder of a template (`vX.Y.Z`, `YYYY-MM-DD`, `<version>`): a span holding one is not
/// looked for literally.
static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"X\.Y|YYYY|<\w+>|\{\w+\}|\bN\b").unwrap());

/// Words of a plan line that drops what it names: "skip `make lock`", "no need to".
static SKIPS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:skip|skipping|no need|not needed|unnecessary|omit|leave out|no-op)\b").unwrap()
});

/// A read tool's line-number gutter (`    76→`, `    76\t`), removed before items are read.
static GUTTER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?m)^\s*\d{1,6}(?:→|\t)").unwrap());

/// The document's text without the gutter a read tool or `cat -n` prints
/// ([`crate::evidence::numbered_listing`]).
fn without_gutter(text: &str) -> std::borrow::Cow<'_, str> {
    if crate::evidence::numbered_listing(text) { GUTTER.replace_all(text, "") } else { text.into() }
}

/// One numbered item of the procedure, with the spans it writes as code.
struct Item<'a> {
    number: &'a str,
    text: &'a str,
    spans: Vec<&'a str>,
}

/// The numbered items of a document's text with code spans other than placeholders.
fn items(text: &str) -> Vec<Item<'_>> {
    ITEM.captures_iter(text)
        .filter_map(|c| {
            let (number, body) = (c.get(1)?.as_str(), c.get(2)?.as_str());
            let spans: Vec<&str> = CODE
                .captures_iter(body)
                .filter_map(|s| s.get(1).map(|m| m.as_str()))
                .filter(|s| !PLACEHOLDER.is_match(s))
                .collect();
            Some(Item { number, text: body, spans })
        })
        .collect()
}

/// Whether a plan is one: an `update_plan`-style call, or a thought or message of three numbered
/// lines or more.
fn is_plan(ctx: &Context<'_>, j: usize) -> bool {
    let s = &ctx.trajectory.steps[j];
    match s.kind {
        StepKind::ToolCall => s.tool_name.as_deref().is_some_and(|n| n.to_ascii_lowercase().contains("plan")),
        StepKind::Thought | StepKind::Message => ITEM.captures_iter(&s.content).count() >= 3,
        _ => false,
    }
}

/// Step `p`, an agent's plan ([`is_plan`]), comes after the agent read the procedure a user turn
/// asked to follow ([`FOLLOW`]: a call naming the document, whose result has numbered items), and
/// covers at least two of the procedure's items (it names one of each one's code spans), but
/// not another item whose code spans it names none of, or names only on a line that says to skip
/// it ([`SKIPS`]); and no call of the agent after the plan, up to the next user turn, names one
/// of that item's spans either. The first such item is the finding.
pub(super) fn skipped_procedure_step(ctx: &Context<'_>, p: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let plan = &t.steps[p];
    // A plan of numbered lines holds a "2." (or "2)"); a plan tool names itself.
    let numbered = plan.content.contains("2.") || plan.content.contains("2)");
    if !numbered && plan.kind != StepKind::ToolCall || !is_plan(ctx, p) || super::actions::served_person(plan) {
        return;
    }
    let from = p.saturating_sub(WINDOW);
    // The last user turn before the plan that asks to follow a document.
    let Some((u, doc)) = (from..p).rev().find_map(|u| {
        let s = &t.steps[u];
        let asks = super::actions::served_person(s) && s.kind != StepKind::ToolResult;
        asks.then(|| FOLLOW.captures(&s.content).map(|c| (u, c[1].to_string()))).flatten()
    }) else {
        return;
    };
    let name = doc.rsplit('/').next().unwrap_or(&doc);
    // The agent's reading of it: a call naming the document, then its result with numbered items.
    let Some(read) = (u + 1..p).find(|&j| {
        let s = &t.steps[j];
        s.kind == StepKind::ToolResult
            && s.agent == plan.agent
            && j > 0
            && t.steps[j - 1].kind == StepKind::ToolCall
            && t.steps[j - 1].content.contains(name)
            && items(&without_gutter(&s.content)).len() >= 3
    }) else {
        return;
    };
    let document = without_gutter(&t.steps[read].content);
    let procedure = items(&document);
    let text = plan.content.to_lowercase();
    let names = |span: &str| text.contains(&span.to_lowercase());
    let skipped_line = |span: &str| {
        let span = span.to_lowercase();
        text.lines().any(|l| l.contains(&span) && SKIPS.is_match(l))
    };
    let covered = procedure.iter().filter(|it| !it.spans.is_empty() && it.spans.iter().any(|s| names(s))).count();
    if covered < 2 {
        return;
    }
    let end = (p + 1..t.steps.len()).find(|&j| super::actions::is_human(&t.steps[j])).unwrap_or(t.steps.len());
    for it in procedure.iter().filter(|it| !it.spans.is_empty()) {
        let dropped = it.spans.iter().all(|s| !names(s) || skipped_line(s));
        if !dropped {
            continue;
        }
        let done_later = (p + 1..end).any(|j| {
            let s = &t.steps[j];
            s.kind == StepKind::ToolCall && s.agent == plan.agent && it.spans.iter().any(|sp| s.content.contains(sp))
        });
        if done_later {
            continue;
        }
        let how = if it.spans.iter().any(|s| skipped_line(s)) { "says to skip" } else { "leaves out" };
        out.push(finding(
            Signal::IgnoredResult,
            weights::MISREAD,
            prose![
                format!("the plan {how} step {} of {doc}, read at step ", it.number),
                Part::Step(read),
                format!(
                    ": \"{}\"; no call after it runs `{}`",
                    crate::text::clip(it.text.lines().next().unwrap_or("").trim(), 90),
                    it.spans[0]
                ),
            ],
        ));
        return;
    }
}

/// A name the task writes for code: a span in backticks, or a CamelCase word
/// (`DeprecationWarning`, `TypeError`).
static NAMED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`([^`\n]{3,60})`|\b([A-Z][a-z]+(?:[A-Z][a-z0-9]+)+)\b").unwrap());

/// The names a paragraph writes ([`NAMED`]), in order, each once, without placeholders.
fn named(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for c in NAMED.captures_iter(text) {
        if let Some(m) = c.get(1).or(c.get(2)) {
            let n = m.as_str().trim();
            // A template's placeholder (`python <filename.py>`, `{version}`) is no name of the work.
            let placeholder = n.contains(['<', '{']) || PLACEHOLDER.is_match(n);
            if n.chars().any(char::is_alphabetic) && !placeholder && !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

/// Step `p`, an agent's plan ([`is_plan`], numbered), follows a user turn (the last one before
/// it, within [`WINDOW`]) with a paragraph that insists on a requirement (a sentence with
/// [`super::constraints::STRESSED`] words: "must keep working") and names code that the rest of
/// the turn does not ([`named`]: `DeprecationWarning`, `TypeError`); the plan names something of
/// the turn (it is the plan for it) but none of that paragraph's own names, and no call of the
/// agent after it, up to the next user turn, names one either. The requirement was dropped at
/// the plan. The first such paragraph is the finding.
pub(super) fn dropped_requirement(ctx: &Context<'_>, p: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let plan = &t.steps[p];
    let numbered = plan.content.contains("2.") || plan.content.contains("2)");
    if !numbered || !is_plan(ctx, p) || super::actions::served_person(plan) || super::is_outside_agent(&plan.agent) {
        return;
    }
    let from = p.saturating_sub(WINDOW);
    let Some(u) = (from..p)
        .rev()
        .find(|&u| super::actions::served_person(&t.steps[u]) && t.steps[u].kind != StepKind::ToolResult)
    else {
        return;
    };
    let turn = &t.steps[u].content;
    let paragraphs: Vec<&str> = turn.split("\n\n").collect();
    let text = plan.content.to_lowercase();
    let names = |n: &str| text.contains(&n.to_lowercase());
    let all = named(turn);
    // The plan is this turn's: it names something the turn names.
    if !all.iter().any(|n| names(n)) {
        return;
    }
    let end = (p + 1..t.steps.len()).find(|&j| super::actions::is_human(&t.steps[j])).unwrap_or(t.steps.len());
    for (k, para) in paragraphs.iter().enumerate() {
        let Some(stressed) =
            super::constraints::sentences(para).into_iter().find(|s| super::constraints::STRESSED.is_match(s))
        else {
            continue;
        };
        let elsewhere: String =
            paragraphs.iter().enumerate().filter(|(m, _)| *m != k).map(|(_, q)| *q).collect::<Vec<_>>().join("\n");
        let own: Vec<&str> = named(para).into_iter().filter(|n| !elsewhere.contains(n)).collect();
        if own.is_empty() || own.iter().any(|n| names(n)) {
            continue;
        }
        let done_later = (p + 1..end).any(|j| {
            let s = &t.steps[j];
            s.agent == plan.agent && s.kind == StepKind::ToolCall && own.iter().any(|n| s.content.contains(n))
        });
        if done_later {
            continue;
        }
        out.push(finding(
            Signal::IgnoredResult,
            weights::MISREAD,
            prose![
                format!(
                    "neither the plan nor a call after it writes {}, which the request at step ",
                    own.iter().take(3).map(|n| format!("`{n}`")).collect::<Vec<_>>().join(" or ")
                ),
                Part::Step(u),
                format!(" insists on: \"{}\"", crate::text::clip(stressed.trim(), 80)),
            ],
        ));
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_procedure_s_items_and_their_code_spans_are_read() {
        let doc = "# Releasing\n\n1. Bump the version in `pyproject.toml`.\n2. Run `make lock` to regenerate `uv.lock`. The\n   workflow runs `uv lock --check`.\n3. Commit `release: vX.Y.Z` and tag `vX.Y.Z`.\n";
        let it = items(doc);
        assert_eq!(it.len(), 3);
        assert_eq!(it[1].spans, ["make lock", "uv.lock", "uv lock --check"]);
        assert!(it[2].spans.is_empty());
        let listed =
            "     1\t# Releasing\n     2\t\n     3\t1. Bump `a.toml`.\n     4\t2. Run `make lock`.\n     5\t3. Tag.\n";
        assert_eq!(items(&without_gutter(listed)).len(), 3);
        assert_eq!(&FOLLOW.captures("Cut the 2.4.0 release following RELEASING.md.").unwrap()[1], "RELEASING.md");
    }
}
