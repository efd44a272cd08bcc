//! A figure read for another year than the one the task asks about: a search result gives a
//! series of figures by year ("Population: 2011 377,835 · 2021 385,606") and the agent takes the
//! 2011 figure for a question about the 2021 census. docs/METHODS.md, "Grounding".

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// How many steps back the series are looked for.
const WINDOW: usize = 60;

/// A year followed, within a few characters that hold no digit, by a figure of four digits or
/// more (commas or single spaces grouping thousands): `2011 377,835`, `2021: 545 796`,
/// `(2011) • Total 377,835`. Groups: the year, the figure.
static YEAR_FIGURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b((?:19|20)\d\d)\b[^\d\n]{0,20}?\b(\d{1,3}(?:,\d{3})+|\d{1,3}(?:[ \u{a0}\u{202f}]\d{3})+|\d{4,})\b")
        .unwrap()
});

/// A year as the task writes it.
static YEAR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b(?:19|20)\d\d\b").unwrap());

/// A figure as a message writes it (commas or single spaces grouping thousands).
static FIGURE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(?:\d{1,3}(?:,\d{3})+|\d{1,3}(?:[ \u{a0}\u{202f}]\d{3})+|\d{4,})\b").unwrap());

/// One year and the figure given for it on a line: the year, the figure normalised
/// ([`figure`]) and the pair's byte range in the line.
type YearFigure = (String, String, std::ops::Range<usize>);

/// A line of an observation that gives figures for two different years or more.
#[derive(Debug, Clone)]
struct YearSeries {
    /// The observation's step.
    step: usize,
    /// The line as written.
    line: String,
    /// Its (year, figure) pairs, in order.
    pairs: Vec<YearFigure>,
}

/// The year series of a trajectory's observations ([`series`]): the lines in step order, and
/// per (year, figure) the first step giving it.
#[derive(Debug, Clone, Default)]
pub struct YearSeriesIndex {
    lines: Vec<YearSeries>,
    first: HashMap<(String, String), usize>,
}

/// A figure normalised: its digits (`377,835`, `377 835` and `377835` are one figure); a year
/// is no figure.
fn figure(written: &str) -> Option<String> {
    let digits: String = written.chars().filter(char::is_ascii_digit).collect();
    let year = digits.len() == 4 && (digits.starts_with("19") || digits.starts_with("20"));
    (digits.len() >= 4 && !year).then(|| digits.trim_start_matches('0').to_string())
}

/// The lines of the trajectory's observations (tool outputs) that give figures for two
/// different years or more, computed once.
fn series<'a>(ctx: &Context<'a>) -> &'a YearSeriesIndex {
    ctx.facts.year_series.get_or_init(|| {
        let mut out = YearSeriesIndex::default();
        for s in ctx.trajectory.steps.iter().filter(|s| s.kind == StepKind::ToolResult) {
            if !YEAR.is_match(&s.content) {
                continue;
            }
            for line in s.content.lines() {
                let pairs: Vec<YearFigure> = YEAR_FIGURE
                    .captures_iter(line)
                    .filter_map(|c| Some((c[1].to_string(), figure(&c[2])?, c.get(0)?.range())))
                    .collect();
                if !pairs.iter().any(|(y, _, _)| *y != pairs[0].0) {
                    continue;
                }
                for (y, f, _) in &pairs {
                    out.first.entry((y.clone(), f.clone())).or_insert(s.index);
                }
                out.lines.push(YearSeries { step: s.index, line: line.to_string(), pairs });
            }
        }
        out
    })
}

/// Step `i`, an agent's message, thought or call, states a figure (four digits or more, not a
/// year) that a line of an earlier observation (within [`WINDOW`] steps) gives for one year
/// while the same line gives another figure for the year the task asks about (the task names
/// one year only), and no observation before it gives the stated figure for the task's year;
/// the first agent step stating the figure only. "states 377,835, which step 13 gives for 2011
/// ("2011 377,835 · 2021 385,606"); the task asks about 2021, for which it gives 385,606".
pub(super) fn other_year_figure(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if !super::grounding::agent_step(t, i) {
        return;
    }
    let s = &t.steps[i];
    let index = series(ctx);
    let lines = &index.lines;
    let from = i.saturating_sub(WINDOW);
    let window = &lines[lines.partition_point(|x| x.step < from)..lines.partition_point(|x| x.step < i)];
    if window.is_empty() {
        return;
    }
    let mut years: Vec<&str> = YEAR.find_iter(&t.task).map(|m| m.as_str()).collect();
    years.sort_unstable();
    years.dedup();
    let [asked] = years[..] else { return };
    for m in FIGURE.find_iter(&s.content) {
        let Some(v) = figure(m.as_str()) else { continue };
        // Given for the asked year before: the figure is that year's, whatever else says.
        if index.first.get(&(asked.to_string(), v.clone())).is_some_and(|&j| j < i) {
            continue;
        }
        let Some((x, wrong, right)) = window.iter().rev().find_map(|x| {
            let wrong = x.pairs.iter().find(|(y, f, _)| *f == v && y != asked)?;
            let right = x.pairs.iter().find(|(y, f, _)| y == asked && *f != v)?;
            Some((x, wrong, right))
        }) else {
            continue;
        };
        // Stated by an earlier agent step: this one repeats it.
        let earlier = (0..i).any(|j| {
            let o = &t.steps[j];
            o.kind != StepKind::ToolResult
                && !super::is_outside_agent(&o.agent)
                && FIGURE.find_iter(&o.content).any(|w| figure(w.as_str()).as_deref() == Some(v.as_str()))
        });
        if earlier {
            return;
        }
        // The part of the line from one pair to the other, as written.
        let span = wrong.2.start.min(right.2.start)..wrong.2.end.max(right.2.end);
        let quoted = crate::text::clip(&x.line[span], 80);
        let given = &x.line[right.2.clone()];
        let given = FIGURE.find_iter(given).last().map_or(right.1.as_str(), |w| w.as_str());
        out.push(finding(
            Signal::IgnoredResult,
            weights::MISREAD,
            prose![
                format!("states {}, which step ", m.as_str()),
                Part::Step(x.step),
                format!(
                    " gives for {} (\"{quoted}\"); the task asks about {asked}, for which it gives {given}",
                    wrong.0
                )
            ],
        ));
        return;
    }
}
