//! A top-N query sorted the wrong way for what the task asks: the user wants "the 5 endpoints
//! with the worst p95 latency" and the query ends `ORDER BY p95_ms ASC LIMIT 5`, which returns
//! the five fastest. Every ticket, chart or answer built on its rows inherits the reversal.
//! docs/METHODS.md, "Actions".

use std::sync::LazyLock;

use regex::Regex;

use super::{Context, call_arguments, finding, weights};
use crate::diagnosis::{Finding, Signal};
use crate::model::StepKind;

/// `ORDER BY` and what follows it up to `LIMIT`, `OFFSET`, `FETCH`, `;` or the end: group 1.
static ORDER_BY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?is)\border\s+by\s+(.+?)\s*(?:\blimit\b|\boffset\b|\bfetch\b|;|$)").unwrap());

/// A bound on the rows a query returns: `LIMIT 5`, `TOP 5`, `FETCH FIRST 5 ROWS`.
static LIMITED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\blimit\s+\d+|\bselect\s+top\s+\d+|\bfetch\s+first\s+\d+").unwrap());

/// Words of a request for the highest values of a measure, and for the lowest.
static HIGH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(highest|slowest|largest|biggest|longest|greatest|heaviest|costliest|priciest|most expensive|maximum)\b").unwrap()
});
static LOW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(lowest|fastest|smallest|shortest|cheapest|lightest|least expensive|minimum|fewest)\b").unwrap()
});
/// "Worst" and "best", whose direction depends on the measure ([`BAD_WHEN_HIGH`]).
static JUDGED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)\b(worst|best)\b").unwrap());

/// Parts of a column name of a measure that is bad when high: latency, durations, errors, cost.
const BAD_WHEN_HIGH: [&str; 14] = [
    "latency", "p50", "p90", "p95", "p99", "ms", "duration", "time", "delay", "lag", "error", "errors", "cost",
    "failures",
];

/// The words of an identifier or phrase, lower case: `p95_ms` → `p95`, `ms`.
fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_ascii_lowercase).collect()
}

/// The text of a call's query: the string values of its JSON arguments joined, else its text.
fn query_text(content: &str) -> String {
    match call_arguments(content) {
        Some(args) => args.values().filter_map(|v| v.as_str()).collect::<Vec<_>>().join("\n"),
        None => content.to_string(),
    }
}

/// Step `i`, a tool call, runs a query bounded to a few rows ([`LIMITED`]) whose first `ORDER BY`
/// key is a column the task's sentence names a word of (`p95_ms` for "p95 latency"), sorted
/// ascending (`ASC`, or no direction: the SQL default) while the sentence asks for the highest
/// ("slowest", "largest", "worst" of a measure bad when high: [`BAD_WHEN_HIGH`]), or descending
/// while it asks for the lowest: the rows returned are the other end of the ranking.
pub(super) fn reversed_order(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    let sorts = ["ORDER", "order", "Order"].iter().any(|w| step.content.contains(w));
    if step.kind != StepKind::ToolCall || t.task.is_empty() || !sorts {
        return;
    }
    let query = query_text(&step.content);
    if !LIMITED.is_match(&query) {
        return;
    }
    let Some(c) = ORDER_BY.captures(&query) else { return };
    let first = c[1].split(',').next().unwrap_or("").trim();
    let descending = words(first).iter().any(|w| w == "desc");
    // The key without its direction and null ordering: `p95_ms` of `p95_ms ASC NULLS LAST`.
    let name = first
        .split_whitespace()
        .take_while(|w| !matches!(w.to_ascii_lowercase().as_str(), "asc" | "desc" | "nulls"))
        .collect::<Vec<_>>()
        .join(" ");
    let name_words = words(&name);
    if name_words.is_empty() {
        return;
    }
    for sentence in crate::text::sentences(&t.task) {
        let task_words = words(sentence);
        // The sentence names the measure the query sorts by.
        if !name_words.iter().any(|w| w.len() >= 3 && task_words.contains(w)) {
            continue;
        }
        let bad_high = name_words.iter().any(|w| BAD_WHEN_HIGH.contains(&w.as_str()));
        let judged = JUDGED.captures(sentence).map(|m| m[1].to_ascii_lowercase());
        let wants_high = match judged.as_deref() {
            _ if HIGH.is_match(sentence) => Some(true),
            _ if LOW.is_match(sentence) => Some(false),
            Some("worst") if bad_high => Some(true),
            Some("best") if bad_high => Some(false),
            _ => None,
        };
        let Some(wants_high) = wants_high else { continue };
        if wants_high == descending {
            return;
        }
        let asked = HIGH
            .find(sentence)
            .or_else(|| LOW.find(sentence))
            .or_else(|| JUDGED.find(sentence))
            .map_or("", |m| m.as_str());
        out.push(finding(
            Signal::ArgumentMismatch,
            weights::ARGUMENT_MISMATCH,
            format!(
                "sorts by {name} {} (`ORDER BY {}`) and keeps the first rows, the {} values, while the task asks for the {asked}: \"{}\"",
                if descending { "descending" } else { "ascending" },
                crate::text::clip(first, 40),
                if descending { "highest" } else { "lowest" },
                crate::text::clip(sentence.trim(), 80),
            ),
        ));
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_order_key_and_its_direction_are_read() {
        let q = "SELECT endpoint, p95_ms FROM t GROUP BY endpoint\nORDER BY p95_ms ASC\nLIMIT 5;";
        assert_eq!(&ORDER_BY.captures(q).unwrap()[1], "p95_ms ASC");
        assert!(LIMITED.is_match(q));
        assert_eq!(words("round(x)::numeric DESC").last().map(String::as_str), Some("desc"));
    }
}
