//! A value of the run's answer read from a page or document that says it is outdated: "You are
//! viewing documentation for API v1, which was deprecated on 2021-03-31. See the current
//! version (v3)." The page says in its own words that it is not the source to answer from.
//! docs/METHODS.md, "Grounding".

use std::sync::LazyLock;

use regex::Regex;

use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::hierarchy::Action;
use crate::model::StepKind;
use crate::prose;

/// A page's or document's own notice that it is outdated: "this page / version / documentation
/// is deprecated / outdated / obsolete / superseded / archived / no longer maintained", "you are
/// viewing documentation for an older version", "… which was deprecated on 2021-03-31", "see the
/// current / latest version". One function or field marked deprecated is no such notice.
static OUTDATED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b(?:this|the)\s+(?:page|document|documentation|docs|article|version|edition|release|guide|manual|content|information)",
        r"\s+(?:is|was|has\s+been)\s+(?:now\s+)?(?:deprecated|outdated|obsolete|superseded|archived|no\s+longer\s+(?:maintained|updated|current|valid|supported))\b",
        r"|\byou\s+are\s+(?:viewing|reading|looking\s+at)\s+(?:the\s+)?(?:documentation|docs|an?\s+(?:old|older|archived|outdated|previous|legacy)\s+(?:version|page|release|edition))",
        r"|\b(?:documentation|docs|version|edition|release)\s+[^.\n]{0,40}?\bwhich\s+(?:was|is|has\s+been)\s+(?:deprecated|superseded|retired|archived)\b",
        r"|\b(?:see|view|go\s+to|read|switch\s+to)\s+the\s+(?:current|latest|newest|most\s+recent)\s+(?:version|edition|release|documentation|docs)\b",
    ))
    .expect("a valid pattern")
});

/// A number with its unit or alone, as an answer states it (`5 GB`, `4:12:37`, `1,024`).
static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d[\d,]*(?:\.\d+)?").expect("a valid pattern"));

/// The first address a step shows (`(https://docs…/v1/upload-limits)`), the page it reads.
fn address(text: &str) -> Option<&str> {
    static URL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"https?://[^\s)\]>'\x22]+").expect("a valid pattern"));
    URL.find(text).map(|m| m.as_str())
}

/// Whether an observation's text vouches for a value by itself: it is no outdated page, not the
/// page at `here` read again (scrolled), and no search engine's list of results (whose snippets
/// quote the pages, the outdated one too).
fn vouches(text: &str, here: Option<&str>) -> bool {
    let at = address(text);
    let results = at.is_some_and(|a| a.contains("/search?") || a.contains("/search/") || a.contains("?q="));
    !OUTDATED.is_match(text) && !results && (here.is_none() || at != here)
}

/// Whether step `i` shows what a source says: a tool's output, or a worker's report of the page
/// it opened (a search or a file read, as Magentic-One's WebSurfer and FileSurfer write it).
fn observes(ctx: &Context<'_>, i: usize) -> bool {
    let s = &ctx.hierarchy.steps[i];
    s.kind == StepKind::ToolResult || matches!(s.action, Action::Search | Action::ReadFile)
}

/// Step `i` shows a page or document that says it is outdated ([`OUTDATED`]) and holds a number
/// of the run's final output ([`super::final_step`], after `i`; not 0 or 1, not a year), and no
/// other observation before the final output that vouches for a value by itself ([`vouches`]: not
/// outdated, not this page scrolled, not a search engine's results quoting it) holds that
/// number: the answer was read from a source that said not to answer from it. "reads 5 GB from a page that says it is outdated ("You are
/// viewing documentation for API v1, which was deprecated on 2021-03-31"), and the final answer
/// at step 13 gives 5 GB".
pub(super) fn outdated_source(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let Some(r) = outdated_reading(ctx, i) else { return };
    out.push(finding(
        Signal::IgnoredResult,
        weights::MISREAD,
        prose![
            format!(
                "reads {} from a page that says it is outdated (\"{}\"), and the final answer at step ",
                r.written,
                crate::text::clip(&r.notice, 80)
            ),
            Part::Step(r.answer),
            format!(" gives {}", r.written)
        ],
    ));
}

/// A number of the final answer that step `i` reads from a page saying it is outdated
/// ([`outdated_source`]).
pub(super) struct OutdatedReading {
    /// The number as the answer writes it, with its unit (`5 GB`).
    pub written: String,
    /// The number normalised ([`crate::evidence::normalize_number`]: `5`).
    pub value: String,
    /// The page's notice, as its sentence words it.
    pub notice: String,
    /// The final answer's step.
    pub answer: usize,
}

/// The reading of [`outdated_source`] at step `i`, if any.
pub(super) fn outdated_reading(ctx: &Context<'_>, i: usize) -> Option<OutdatedReading> {
    let t = ctx.trajectory;
    let content = &t.steps[i].content;
    if !observes(ctx, i) || super::actions::is_human(&t.steps[i]) {
        return None;
    }
    // A cheap look for the notice's words first: most observations hold none.
    const WORDS: [&str; 11] = [
        "deprecat",
        "outdated",
        "obsolete",
        "supersed",
        "archived",
        "no longer",
        "you are ",
        "retired",
        "current",
        "latest",
        "newest",
    ];
    let low = super::lower_of(ctx, i);
    if !WORDS.iter().any(|w| low.contains(w)) {
        return None;
    }
    let notice = OUTDATED.find(content)?;
    let f = super::final_step(ctx).filter(|&f| f > i)?;
    let answer = &t.steps[f].content;
    let here = address(content);
    let norm = |x: &str| crate::evidence::normalize_number(x);
    let holds = |text: &str, v: &str| NUMBER.find_iter(text).any(|m| norm(m.as_str()) == v);
    // A number of the answer, with the unit written after it (`5 GB`).
    static WITH_UNIT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(\d[\d,]*(?:\.\d+)?)(?:\s?(?:%|[A-Za-z]{1,5}\b))?").expect("a valid pattern"));
    let value = WITH_UNIT
        .captures_iter(answer)
        .map(|c| (c.get(0).map_or("", |m| m.as_str()).trim(), norm(&c[1])))
        .find(|(_, v)| {
            let year = v.len() == 4 && (v.starts_with("19") || v.starts_with("20"));
            v != "0"
                && v != "1"
                && !year
                && holds(content, v)
                && !(0..f).any(|j| {
                    j != i && observes(ctx, j) && holds(&t.steps[j].content, v) && vouches(&t.steps[j].content, here)
                })
        });
    let (written, value) = value?;
    // The notice's sentence, as the page words it.
    let start = content[..notice.start()].rfind(['\n', '.']).map_or(0, |p| p + 1);
    let end = content[notice.end()..]
        .find(". ")
        .map(|p| p + 1)
        .into_iter()
        .chain(content[notice.end()..].find('\n'))
        .min()
        .map_or(content.len(), |p| notice.end() + p);
    let sentence = content[start..end].trim().trim_start_matches(['⚠', '!', ' ']);
    Some(OutdatedReading { written: written.to_string(), value, notice: sentence.to_string(), answer: f })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_that_says_it_is_outdated_is_told_from_a_deprecated_function() {
        for notice in [
            "You are viewing documentation for API v1, which was deprecated on 2021-03-31. See the current version (v3).",
            "This page is no longer maintained.",
            "Note: this documentation is outdated; see the latest version.",
            "You are reading an older version of the guide.",
        ] {
            assert!(OUTDATED.is_match(notice), "{notice}");
        }
        for other in [
            "The `put_object_legacy` function is deprecated.",
            "Deprecated parameters: `acl`.",
            "Version 3 replaces the v2 upload flow.",
        ] {
            assert!(!OUTDATED.is_match(other), "{other}");
        }
    }
}
