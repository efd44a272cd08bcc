//! A worker's report of an outcome that its own source denies: in a run of several agents, an
//! agent reports an entity (a trial, a build, a service, a shipment: a code such as `ZX-7` or a
//! name in capitals) as met, significant, passed, succeeded, confirmed or available, while its
//! own last tool output about that entity says the opposite (not significant, did not meet,
//! failed, unavailable, not confirmed). The report is where the error starts; another agent that
//! tells the same outcome for the entity afterwards relays it ([`relayed_outcome`]).
//! docs/METHODS.md, "Grounding".

use regex::Regex;

use super::actions::is_human;
use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// How many steps before a report its agent's tool outputs are read.
const SOURCE_WINDOW: usize = 60;

/// How many steps after a report another agent's message may relay it.
const RELAY_WINDOW: usize = 30;

/// One kind of outcome: the words that report it and the phrases that deny it.
struct Family {
    /// Words that report the outcome (`met`, `passed`).
    positive: Regex,
    /// Phrases that deny it (`not significant`, `did not meet`, `failed`).
    negative: Regex,
}

static FAMILIES: std::sync::LazyLock<[Family; 4]> = std::sync::LazyLock::new(|| {
    let re = |p: &str| Regex::new(p).unwrap();
    [
        Family {
            positive: re(r"(?i)\b(?:met|significant(?:ly)?|statistically significant|achieved)\b"),
            negative: re(
                r"(?i)\b(?:not (?:statistically )?significant(?:ly)?|no (?:statistically )?significant|non-?significant|did not (?:statistically )?significantly(?: [a-z]+)?|(?:did not|failed to|does not) (?:meet|reach|achieve|show|demonstrate)|(?:was|were) not met|missed (?:its|the|their) (?:primary )?(?:end ?point|target|goal))\b",
            ),
        },
        Family {
            positive: re(r"(?i)\b(?:passed|passes|succeeded|successful(?:ly)?)\b"),
            negative: re(r"(?i)\b(?:failed|failing|did not pass|unsuccessful|did not succeed)\b"),
        },
        Family {
            positive: re(r"(?i)\b(?:available|in stock)\b"),
            negative: re(r"(?i)\b(?:unavailable|not available|out of stock|sold out|no longer available)\b"),
        },
        Family {
            positive: re(r"(?i)\b(?:confirmed|verified)\b"),
            negative: re(
                r"(?i)\b(?:not confirmed|unconfirmed|not verified|unverified|could not (?:be )?(?:confirm|verif)\w*)\b",
            ),
        },
    ]
});

/// An entity a report line is about: a code with a hyphen (`ZX-7`, `BUILD-114`) or a name of four
/// or more capitals (`ORCA`).
static SUBJECT: std::sync::LazyLock<Regex> =
    std::sync::LazyLock::new(|| Regex::new(r"\b(?:[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+|[A-Z]{4,}[0-9]*)\b").unwrap());

/// The first match of `family`'s positive words in `line` that no negation precedes (`not`,
/// `no`, `never`, `n't` within the three words before it) and that is not inside a denial.
fn affirmed<'l>(family: &Family, line: &'l str) -> Option<&'l str> {
    let denials: Vec<std::ops::Range<usize>> = family.negative.find_iter(line).map(|m| m.range()).collect();
    family.positive.find_iter(line).find_map(|m| {
        if denials.iter().any(|d| d.start <= m.start() && m.end() <= d.end) {
            return None;
        }
        let before: Vec<String> =
            line[..m.start()].split_whitespace().rev().take(3).map(str::to_ascii_lowercase).collect();
        let negated = before.iter().any(|w| {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'');
            matches!(w, "not" | "no" | "never" | "nor") || w.ends_with("n't")
        });
        (!negated).then_some(m.as_str())
    })
}

/// Whether `text` holds `word` as a whole word.
fn has_word(text: &str, word: &str) -> bool {
    let inner = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    text.match_indices(word).any(|(p, _)| {
        !text[..p].chars().next_back().is_some_and(inner) && !text[p + word.len()..].chars().next().is_some_and(inner)
    })
}

/// Whether two or more agents other than the served person and outside parties act in the run.
fn team(ctx: &Context<'_>) -> bool {
    let t = ctx.trajectory;
    let mut seen: Vec<&str> = Vec::new();
    for s in &t.steps {
        if matches!(s.kind, StepKind::Message | StepKind::ToolCall | StepKind::Delegation)
            && !is_human(s)
            && !super::is_outside_agent(&s.agent)
            && !s.role.eq_ignore_ascii_case("system")
            && !seen.contains(&s.agent.as_str())
        {
            seen.push(&s.agent);
            if seen.len() >= 2 {
                return true;
            }
        }
    }
    false
}

/// A report's claim that its own source denies: the entity, the word that reports it, the
/// family, the tool output's step and the phrase that denies it.
pub(super) struct Contradicted {
    subject: String,
    word: String,
    family: usize,
    source: usize,
    denial: String,
}

/// The claims of step `r`, an agent's message in a team run, that the agent's own last tool
/// output about the claim's entity (within [`SOURCE_WINDOW`] steps) denies. A claim is a line
/// of the message whose first entity ([`SUBJECT`]) is reported with a family's positive word
/// ([`affirmed`]) and no denial; the output's text about the entity is the whole output when it
/// names no other entity the message reports on, else its lines that name the entity; it must
/// deny the outcome and not affirm it.
pub(super) fn contradicted(ctx: &Context<'_>, r: usize) -> Vec<Contradicted> {
    let t = ctx.trajectory;
    let s = &t.steps[r];
    if s.kind != StepKind::Message || is_human(s) || super::is_outside_agent(&s.agent) {
        return Vec::new();
    }
    let lines: Vec<(&str, &str)> = s.content.lines().filter_map(|l| SUBJECT.find(l).map(|m| (m.as_str(), l))).collect();
    if lines.is_empty() {
        return Vec::new();
    }
    let subjects: Vec<&str> = lines.iter().map(|(x, _)| *x).collect();
    let mut out = Vec::new();
    for (subject, line) in &lines {
        for (k, family) in FAMILIES.iter().enumerate() {
            let Some(word) = affirmed(family, line) else { continue };
            if family.negative.is_match(line) {
                continue;
            }
            // The agent's last tool output about the entity.
            let Some(source) = (r.saturating_sub(SOURCE_WINDOW)..r).rev().find(|&j| {
                t.steps[j].kind == StepKind::ToolResult
                    && t.steps[j].agent == s.agent
                    && has_word(&t.steps[j].content, subject)
            }) else {
                continue;
            };
            let text = &t.steps[source].content;
            let alone = !subjects.iter().any(|o| o != subject && has_word(text, o));
            let about: Vec<&str> =
                if alone { vec![text.as_str()] } else { text.lines().filter(|l| has_word(l, subject)).collect() };
            let denial = about.iter().find_map(|a| family.negative.find(a).map(|m| m.as_str().to_string()));
            let Some(denial) = denial else { continue };
            if about.iter().any(|a| affirmed(family, a).is_some()) {
                continue;
            }
            out.push(Contradicted { subject: subject.to_string(), word: word.to_string(), family: k, source, denial });
            break;
        }
    }
    // Whether it is a team run is asked last: it reads the run's steps.
    if !out.is_empty() && !team(ctx) {
        out.clear();
    }
    out
}

/// Step `i`, an agent's report in a team run, reports an outcome of an entity that the agent's
/// own last tool output about it denies ([`contradicted`]).
pub(crate) fn outcome_against_source(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let Some(c) = contradicted(ctx, i).into_iter().next() else { return };
    let tool = ctx.trajectory.steps[c.source].tool_name.as_deref().unwrap_or("tool");
    out.push(finding(
        Signal::IgnoredResult,
        weights::MISREAD,
        prose![
            format!("reports {} as \"{}\", but its own {tool} output at step ", c.subject, c.word),
            Part::Step(c.source),
            format!(" says \"{}\"", c.denial)
        ],
    ));
}

/// The report that step `to` relays, when `to` is a message of another agent, within
/// [`RELAY_WINDOW`] steps after a report whose claim its own source denies ([`contradicted`]),
/// that tells the same outcome for the same entity (a line naming the entity with a positive
/// word of the same family). The relaying step carries the report's error on: FALAT labels the
/// pair `follow_up`. `None` otherwise.
pub fn relayed_outcome(ctx: &Context<'_>, to: usize) -> Option<usize> {
    let t = ctx.trajectory;
    let s = t.steps.get(to)?;
    if s.kind != StepKind::Message || is_human(s) {
        return None;
    }
    (to.saturating_sub(RELAY_WINDOW)..to).rev().find(|&r| {
        t.steps[r].agent != s.agent
            && t.steps[r].kind == StepKind::Message
            && contradicted(ctx, r).iter().any(|c| {
                s.content.lines().any(|l| has_word(l, &c.subject) && affirmed(&FAMILIES[c.family], l).is_some())
            })
    })
}
