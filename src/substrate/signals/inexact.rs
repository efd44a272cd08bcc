//! A figure an earlier step gave only as a bound, later used as the exact figure: the report's
//! text says crews answered "more than 140 water main breaks" (and the reader adds that this is a
//! lower bound, the table being unreadable), and the plan says "140 main breaks × $12,400".
//! docs/METHODS.md, "Grounding".

use std::sync::LazyLock;

use regex::Regex;

use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::hierarchy::Action;
use crate::model::{Step, StepKind};
use crate::prose;

/// How many steps back the bound is looked for.
const WINDOW: usize = 60;

/// A lower bound on a count: "more than 140 water main breaks", "at least 3,200 users", "over 40
/// stores". Group 1: the bound's words; group 2: the figure; group 3: up to three words after it.
/// Upper bounds ("up to 600 requests per minute", "less than 150 minutes") are limits and
/// thresholds far more often than partial counts: they are not read.
static BOUND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(more than|over|at least|upwards of|in excess of|no fewer than)\s+\$?(\d[\d,]*(?:\.\d+)?)\s+((?:[a-z][a-z-]*\s*){1,3})",
    )
    .unwrap()
});

/// The words that, written before a figure or in its sentence, keep it a bound or an estimate.
static HEDGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:more than|over|at least|upwards of|in excess of|fewer than|less than|at most|up to|no more than|no fewer than|approximately|approx|about|around|roughly|nearly|almost|some|estimated?|lower bound|upper bound|minimum|maximum|or more|or so|plus)\b|~|≈|\d\+",
    )
    .unwrap()
});

/// Words after a figure that name no counted thing.
const NOT_NOUNS: [&str; 14] =
    ["the", "and", "per", "in", "of", "for", "to", "a", "an", "this", "that", "each", "than", "from"];

/// The counted thing's words after a bound's figure: words of four letters or more that are not
/// [`NOT_NOUNS`], lower case, plural `s` dropped.
fn noun_words(after: &str) -> Vec<String> {
    after
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_ascii_lowercase())
        .take_while(|w| !NOT_NOUNS.contains(&w.as_str()))
        .filter(|w| w.len() >= 4)
        .map(|w| w.trim_end_matches('s').to_string())
        .collect()
}

/// Whether `s` is an agent's own step (not a tool's output, not the user's or the system's).
fn agent_own(s: &Step) -> bool {
    s.kind != StepKind::ToolResult
        && !super::actions::served_person(s)
        && !super::is_outside_agent(&s.agent)
        && !super::is_outside_agent(&s.role)
        && !s.role.eq_ignore_ascii_case("tool")
}

/// Where `text` writes `figure` as an exact count of the thing `nouns` name: the figure as a
/// whole number (not part of a longer one), one of the nouns among the four words after it (or,
/// in code, in the name it is assigned to: `breaks = 140`), and no [`HEDGE`] in the three words
/// before it. Its byte offset.
fn exact_use(text: &str, figure: &str, nouns: &[String]) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(p) = text[from..].find(figure) {
        let at = from + p;
        from = at + figure.len();
        let before_ok = at == 0 || !(bytes[at - 1].is_ascii_digit() || matches!(bytes[at - 1], b',' | b'.'));
        let end = at + figure.len();
        let after_ok = end >= bytes.len()
            || !(bytes[end].is_ascii_digit()
                || bytes[end] == b'+'
                || (bytes[end] == b',' || bytes[end] == b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit));
        if !before_ok || !after_ok {
            continue;
        }
        let after: String = text[end..].split_whitespace().take(4).collect::<Vec<_>>().join(" ").to_ascii_lowercase();
        let named_after = after
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| nouns.iter().any(|n| w.trim_end_matches('s') == n.as_str()));
        // Code: `main_breaks = 140`.
        let line_start = text[..at].rfind('\n').map_or(0, |k| k + 1);
        let lhs = text[line_start..at].trim_end();
        let assigned = lhs.ends_with('=')
            && lhs
                .trim_end_matches('=')
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| nouns.iter().any(|n| w.to_ascii_lowercase().trim_end_matches('s') == n.as_str()));
        if !named_after && !assigned {
            continue;
        }
        let mut start = line_start.max(at.saturating_sub(40));
        while !text.is_char_boundary(start) {
            start += 1;
        }
        let before: Vec<&str> = text[start..at].split_whitespace().collect();
        let near = before[before.len().saturating_sub(3)..].join(" ");
        if HEDGE.is_match(&near) {
            continue;
        }
        return Some(at);
    }
    None
}

/// A lower bound on a count that a step reporting what was found gives ([`BOUND`]): "more than
/// 140 water main breaks" at `step`.
#[derive(Debug, Clone)]
pub struct LowerBound {
    /// The 0-based step whose text gives the bound.
    pub step: usize,
    /// The bound's words ("more than").
    pub words: String,
    /// The figure as written ("140").
    pub figure: String,
    /// Up to three words after the figure ("water main breaks").
    pub after: String,
    /// The counted thing's words ([`noun_words`]).
    pub nouns: Vec<String>,
}

/// The lower bounds the run's reports give, in step order: steps that report what was found (a
/// tool's output or an agent's message; not the user's, not a plan or hand-off), bounds on a
/// count of something (a noun after the figure, two digits or more) that the task does not set
/// itself. Computed once per trajectory.
fn lower_bounds<'a>(ctx: &Context<'a>) -> &'a [LowerBound] {
    ctx.facts.lower_bounds.get_or_init(|| {
        let t = ctx.trajectory;
        let mut out = Vec::new();
        for (j, source) in t.steps.iter().enumerate() {
            if !matches!(source.kind, StepKind::ToolResult | StepKind::Message)
                || super::actions::served_person(source)
                || super::is_outside_agent(&source.role)
                || matches!(ctx.hierarchy.steps.get(j).map(|h| h.action), Some(Action::Request | Action::Plan))
            {
                continue;
            }
            for c in BOUND.captures_iter(&source.content) {
                let (Some(words), Some(figure), Some(after)) = (c.get(1), c.get(2), c.get(3)) else { continue };
                let nouns = noun_words(after.as_str());
                // A count of something, not a year or a single digit.
                if nouns.is_empty() || figure.as_str().len() < 2 {
                    continue;
                }
                // A bound the task sets is a condition, not a partial count.
                if t.task.contains(c.get(0).map_or("", |m| m.as_str()).trim_end()) {
                    continue;
                }
                out.push(LowerBound {
                    step: j,
                    words: words.as_str().to_string(),
                    figure: figure.as_str().to_string(),
                    after: after.as_str().trim().to_string(),
                    nouns,
                });
            }
        }
        out
    })
}

/// Step `i`, an agent's own step, writes a figure as the exact count of a thing ([`exact_use`])
/// while an earlier step of the last [`WINDOW`] that reports what was found ([`lower_bounds`])
/// gave that figure only as a bound on the same thing ([`BOUND`]: "more than 140 water
/// main breaks"), and no step between them (nor before the bound) gives it as exact. The bound
/// was taken for the count; only the first step that does so is the finding.
pub(super) fn bound_taken_as_exact(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if !agent_own(step) || !step.content.bytes().any(|b| b.is_ascii_digit()) {
        return;
    }
    let from = i.saturating_sub(WINDOW);
    let bounds = lower_bounds(ctx);
    let lo = bounds.partition_point(|b| b.step < from);
    let hi = bounds.partition_point(|b| b.step < i);
    // Latest source first; within one source, in text order.
    let mut k = hi;
    while k > lo {
        let j = bounds[k - 1].step;
        let first = bounds[lo..k].partition_point(|b| b.step < j) + lo;
        for b in &bounds[first..k] {
            let figure = b.figure.as_str();
            if exact_use(&step.content, figure, &b.nouns).is_none() {
                continue;
            }
            // The exact figure was given before (a table's total): using it is no error; an
            // earlier agent step that took the bound as exact is the finding instead.
            if (0..i).filter(|&k| k != j).any(|k| exact_use(&t.steps[k].content, figure, &b.nouns).is_some()) {
                return;
            }
            out.push(finding(
                Signal::IgnoredResult,
                weights::MISREAD,
                prose![
                    format!("uses {figure} as the exact figure; step "),
                    Part::Step(j),
                    format!(" gives it only as a bound: \"{} {figure} {}\"", b.words, b.after),
                ],
            ));
            return;
        }
        k = first;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_is_exact_where_no_bound_words_stand_before_it() {
        let nouns = noun_words("water main breaks in 2024");
        assert_eq!(nouns, vec!["water".to_string(), "main".to_string(), "break".to_string()]);
        assert!(exact_use("We have 140 main breaks repaired in 2024.", "140", &nouns).is_some());
        assert!(exact_use("breaks = 140\navg = 12400", "140", &nouns).is_some());
        assert!(exact_use("crews answered more than 140 main breaks", "140", &nouns).is_none());
        assert!(exact_use("about 140 breaks", "140", &nouns).is_none());
        assert!(exact_use("1,140 main breaks", "140", &nouns).is_none());
        assert!(exact_use("140 hydrants", "140", &nouns).is_none());
    }
}
