//! A "none" told wider than the search that found nothing: an agent searched with one tool of a
//! family (`search_direct_flight`), the result was empty, and it tells the user there are none
//! at all ("there are no available flights"), while the run shows a sibling tool of the same
//! family (`search_onestop_flight`) that was not tried before the claim. docs/METHODS.md,
//! "Actions".

use std::sync::LazyLock;

use regex::Regex;

use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// How many steps before the claim the empty search may be.
const CLAIM_WINDOW: usize = 6;

/// A claim that there is none of something: "no available flights", "there are no rooms",
/// "couldn't find any flights", "no matching results". Group 1 or 2 is the noun.
static NONE_CLAIM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:there (?:are|were|is) no|no|zero)\s+(?:available\s+|matching\s+|open\s+|other\s+)?([a-z]{3,})\b|\b(?:could ?n[o']t|could not|did ?n[o']t|did not|was ?n[o']t able to|unable to) find any\s+(?:available\s+|matching\s+)?([a-z]{3,})\b",
    )
    .unwrap()
});

/// Whether a tool's output is empty: `[]`, `{}`, nothing, or a line saying no results.
fn empty_output(text: &str) -> bool {
    let t = text.trim();
    let low = t.to_ascii_lowercase();
    t.is_empty()
        || t == "[]"
        || t == "{}"
        || t == "null"
        || low.starts_with("no results")
        || low.starts_with("no matches")
        || low.starts_with("0 results")
}

/// A search tool's name as words: its verb first (`search`, `find`, `list`, `lookup`, `get`) and
/// its noun last, two words or more between or around them: `search_direct_flight` →
/// (`search`, [`direct`], `flight`).
fn family(name: &str) -> Option<(String, Vec<String>, String)> {
    let words: Vec<String> = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let [verb, middle @ .., noun] = words.as_slice() else { return None };
    if !matches!(verb.as_str(), "search" | "find" | "list" | "lookup" | "query") || middle.is_empty() {
        return None;
    }
    Some((verb.clone(), middle.to_vec(), noun.clone()))
}

/// Whether `word` names the tool's noun: the same word, its plural, or the noun's stem.
fn names_noun(word: &str, noun: &str) -> bool {
    let w = word.to_ascii_lowercase();
    let stem = noun.trim_end_matches('s');
    stem.len() >= 3 && w.starts_with(stem)
}

/// Step `i`, an agent's message to the user, says there is none of something ([`NONE_CLAIM`],
/// the noun being the one of the search tool's name) right after (within [`CLAIM_WINDOW`] steps)
/// its search with a tool of a family ([`family`]: `search_direct_flight`) came back empty
/// ([`empty_output`]), and the run shows another tool of that family (same verb and noun, other
/// qualifier words: `search_onestop_flight`) that the agent did not call before the claim, while
/// the claim's sentence does not say the search's qualifier ("no direct flights" tells what was
/// searched). The search was partial; the "none" is told as if it were not. The first such
/// message of the agent.
pub(super) fn none_wider_than_search(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if s.kind != StepKind::Message || super::actions::is_human(s) || super::is_outside_agent(&s.agent) {
        return;
    }
    let Some(claim) = NONE_CLAIM.captures(&s.content) else { return };
    let noun_word = claim.get(1).or(claim.get(2)).map_or("", |m| m.as_str());
    let from = i.saturating_sub(CLAIM_WINDOW);
    let Some(c) = (from..i).rev().find(|&k| {
        let x = &t.steps[k];
        x.kind == StepKind::ToolCall && x.agent == s.agent && x.tool_name.as_deref().and_then(family).is_some()
    }) else {
        return;
    };
    let Some(r) = super::result_of(ctx, c) else { return };
    if !empty_output(&t.steps[r].content) {
        return;
    }
    let Some(tool) = t.steps[c].tool_name.as_deref() else { return };
    let Some((verb, qualifier, noun)) = family(tool) else { return };
    if !names_noun(noun_word, &noun) {
        return;
    }
    // The claim's sentence says what was searched.
    let sentence = crate::text::sentence_around(&s.content, claim.get(0).map_or(0, |m| m.start()), 0);
    let said = s.content[sentence].to_ascii_lowercase();
    if qualifier.iter().any(|q| super::contains_word(&said, q)) {
        return;
    }
    let sibling = t.steps.iter().enumerate().find(|(_, x)| {
        x.kind == StepKind::ToolCall
            && x.tool_name.as_deref().and_then(family).is_some_and(|(v, q, n)| v == verb && n == noun && q != qualifier)
    });
    let Some((k, sibling)) = sibling else { return };
    let other = sibling.tool_name.as_deref().unwrap_or_default();
    if (0..i).any(|j| t.steps[j].kind == StepKind::ToolCall && t.steps[j].tool_name.as_deref() == Some(other)) {
        return;
    }
    out.push(finding(
        Signal::PartialSearch,
        weights::PARTIAL_CHECK,
        prose![
            format!("says \"{}\" after searching only with {tool} (step ", claim[0].trim()),
            Part::Step(c),
            format!("), which found none; {other} (step "),
            Part::Step(k),
            format!(") searches {} too", noun_word.to_ascii_lowercase())
        ],
    ));
}

/// How many steps after the empty search the conclusion may be.
const CONCLUSION_WINDOW: usize = 4;

/// A search called in code or as a tool: `web_search(query=…)`, `search(…)`, a tool whose name
/// has `search` in it.
static SEARCH_CALL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)\b\w*search\w*\s*\(").unwrap());

/// A phrase in double quotes inside a query (`"sandbox escape"`), and a `site:` restriction.
static QUOTED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#""[^"\n]{2,60}""#).unwrap());

/// A search result's own advice that the query was too narrow.
static TOO_NARROW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:less restrictive|shorter query|broader (?:query|search)|fewer (?:keywords|terms)|try (?:a )?(?:more general|different))").unwrap()
});

/// Nouns of a "no …" that speak of the search itself, not of what was looked for.
const SEARCH_NOUNS: [&str; 12] =
    ["result", "results", "match", "matches", "hits", "hit", "entries", "records", "output", "errors", "data", "pages"];

/// Whether step `k` searches: a tool call whose tool's name or code calls a search.
fn searches(s: &crate::model::Step) -> bool {
    s.kind == StepKind::ToolCall
        && (s.tool_name.as_deref().is_some_and(|n| n.to_ascii_lowercase().contains("search"))
            || SEARCH_CALL.is_match(&s.content))
}

/// A search call's query: its JSON string arguments, or in code the argument of the search call
/// on its line (`web_search(query='"jinja2" CVE-2024')` → `"jinja2" CVE-2024`), else the call.
fn query_text(call: &str) -> String {
    if let Some(q) = super::call_strings(call).filter(|q| !q.trim().is_empty()) {
        return q;
    }
    let Some(m) = SEARCH_CALL.find(call) else { return call.to_string() };
    let line = call[m.end()..].lines().next().unwrap_or_default().trim();
    let arg = line.strip_prefix("query").map_or(line, |r| r.trim_start().trim_start_matches('=').trim_start());
    let arg = arg.trim_end_matches(')').trim_end();
    match arg.chars().next() {
        Some(q @ ('\'' | '"')) if arg.len() >= 2 && arg.ends_with(q) => arg[1..arg.len() - 1].to_string(),
        _ => arg.to_string(),
    }
}

/// Whether a search's result found nothing: [`empty_output`], or an error whose text says no
/// results were found (a search tool that raises on none: "Exception: No results found!").
fn found_nothing(text: &str) -> bool {
    empty_output(text) || text.to_ascii_lowercase().contains("no results found")
}

/// Step `i`, an agent's thought or message, concludes that there is none of something ("so
/// Jinja2 had no CVE published in 2024") within [`CONCLUSION_WINDOW`] steps of one search of
/// its own that found nothing ([`found_nothing`]), with no other search between, where that
/// search's query was narrow (two quoted phrases or more, or a `site:` restriction) or its
/// result said so ([`TOO_NARROW`]: "Try a less restrictive/shorter query"), and the query names
/// what the conclusion says there is none of. One narrow query that found nothing shows only
/// that this query matched nothing; the "none" is told from it.
pub(super) fn none_from_narrow_query(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if !matches!(s.kind, StepKind::Message | StepKind::Thought)
        || super::actions::served_person(s)
        || super::is_outside_agent(&s.agent)
    {
        return;
    }
    let from = i.saturating_sub(CONCLUSION_WINDOW + 1);
    let Some(c) = (from..i).rev().find(|&k| searches(&t.steps[k]) && t.steps[k].agent == s.agent) else { return };
    let Some(r) = super::result_of(ctx, c) else { return };
    if r >= i || !found_nothing(&t.steps[r].content) {
        return;
    }
    let query = query_text(&t.steps[c].content);
    let narrow =
        QUOTED.find_iter(&query).count() >= 2 || query.contains("site:") || TOO_NARROW.is_match(&t.steps[r].content);
    if !narrow {
        return;
    }
    let query_low = query.to_ascii_lowercase();
    let Some(noun) = NONE_CLAIM.captures_iter(&s.content).find_map(|m| {
        let n = m.get(1).or(m.get(2))?.as_str();
        let low = n.to_ascii_lowercase();
        (!SEARCH_NOUNS.contains(&low.as_str()) && query_low.contains(low.trim_end_matches('s'))).then_some(m)
    }) else {
        return;
    };
    out.push(finding(
        Signal::PartialSearch,
        weights::PARTIAL_CHECK,
        prose![
            format!("concludes \"{}\" from one search that found nothing (step ", noun[0].trim()),
            Part::Step(r),
            format!("), whose query was narrow: {}", crate::text::clip(query.trim(), 120)),
        ],
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_tool_s_name_gives_its_family() {
        assert_eq!(family("search_direct_flight"), Some(("search".into(), vec!["direct".into()], "flight".into())));
        assert_eq!(family("search_flight"), None);
        assert_eq!(family("book_reservation"), None);
        assert!(names_noun("flights", "flight"));
        assert!(!names_noun("seats", "flight"));
        assert!(empty_output(" [] "));
        assert!(!empty_output("[{\"flight_number\": \"HAT069\"}]"));
        assert!(found_nothing(
            "[error] AgentExecutionError: … due to: Exception: No results found! Try a less restrictive/shorter query."
        ));
        assert_eq!(
            query_text("results = web_search(query='\"jinja2\" CVE-2024 site:nvd.nist.gov')\nprint(results)"),
            "\"jinja2\" CVE-2024 site:nvd.nist.gov"
        );
        assert!(TOO_NARROW.is_match("No results found! Try a less restrictive/shorter query."));
    }
}
