//! A top-N query sorted the wrong way for what the task asks: the user wants "the 5 endpoints
//! with the worst p95 latency" and the query ends `ORDER BY p95_ms ASC LIMIT 5`, which returns
//! the five fastest. The same in pandas (`sort_values("p95_ms").head(5)`, `nsmallest(5,
//! "p95_ms")`), in Python (`sorted(rows, key=lambda r: r["p95_ms"])[:5]`) and in an API's
//! arguments (`{"sort": "p95_ms", "order": "asc", "limit": 5}`). Every ticket, chart or answer
//! built on its rows inherits the reversal. docs/METHODS.md, "Actions".

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

/// A pandas sort kept to its first rows: `sort_values("p95_ms", ascending=False).head(5)`,
/// `sort_values(by=["p95_ms"])[:5]`, `.iloc[:5]`, `.iloc[0]`. Groups: the arguments, the key.
static PANDAS_SORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"\.sort_values\(((?:\s*by\s*=\s*)?\[?\s*['"]([^'"]+)['"][^)]*)\)\s*(?:\[\s*\[?['"][^\]]*\]?\s*\]\s*)?\.?(?:head\(|iloc\[\s*(?::\s*\d|0\s*\])|\[\s*:\s*\d)"#,
    )
    .unwrap()
});

/// pandas' `nlargest(5, "p95_ms")` and `nsmallest(5, "p95_ms")`. Groups: which, the key.
static PANDAS_N: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\.(nlargest|nsmallest)\(\s*\d+\s*,\s*(?:columns\s*=\s*)?\[?\s*['"]([^'"]+)['"]"#).unwrap()
});

/// Python's `sorted(rows, key=lambda r: r["p95_ms"])[:5]`. Groups: the arguments, the key.
static SORTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\bsorted\(([^()]*key\s*=\s*lambda\s+\w+\s*:\s*-?\s*\w+\[\s*['"]([^'"]+)['"]\s*\][^()]*)\)\s*\[\s*:"#)
        .unwrap()
});

/// Argument names of an API's sort key, its direction and its bound on the results.
const SORT_KEYS: [&str; 6] = ["sort", "sort_by", "sortBy", "order_by", "orderBy", "sort_field"];
const DIRECTION_KEYS: [&str; 6] = ["order", "direction", "sort_order", "sortOrder", "dir", "sort_direction"];
const BOUND_KEYS: [&str; 8] = ["limit", "top", "n", "count", "page_size", "per_page", "first", "max_results"];

/// A sort kept to its first rows, as a call writes it.
struct Sort {
    /// The sort key as written: `p95_ms`.
    key: String,
    descending: bool,
    /// How the call writes the sort, for the finding: `ORDER BY p95_ms ASC`.
    shown: String,
}

/// The bounded sort of a call's query text, read as SQL, pandas, Python or an API's arguments.
fn bounded_sort(content: &str) -> Option<Sort> {
    let query = query_text(content);
    if LIMITED.is_match(&query)
        && let Some(c) = ORDER_BY.captures(&query)
    {
        let first = c[1].split(',').next().unwrap_or("").trim();
        // The key without its direction and null ordering: `p95_ms` of `p95_ms ASC NULLS LAST`.
        let key = first
            .split_whitespace()
            .take_while(|w| !matches!(w.to_ascii_lowercase().as_str(), "asc" | "desc" | "nulls"))
            .collect::<Vec<_>>()
            .join(" ");
        let descending = words(first).iter().any(|w| w == "desc");
        return Some(Sort { key, descending, shown: format!("ORDER BY {}", crate::text::clip(first, 40)) });
    }
    if let Some(c) = PANDAS_SORT.captures(&query) {
        let args: String = c[1].split_whitespace().collect();
        // `ascending=False` sorts descending; a list of directions is read by its first.
        let descending = args.contains("ascending=False") || args.contains("ascending=[False");
        return Some(Sort { key: c[2].to_string(), descending, shown: crate::text::clip(&c[0], 60).to_string() });
    }
    if let Some(c) = PANDAS_N.captures(&query) {
        let descending = &c[1] == "nlargest";
        return Some(Sort { key: c[2].to_string(), descending, shown: crate::text::clip(&c[0], 60).to_string() });
    }
    if let Some(c) = SORTED.captures(&query) {
        let args: String = c[1].split_whitespace().collect();
        // `key=lambda r: -r["x"]` sorts descending, as `reverse=True` does; both at once do not.
        let negated = args.contains(":-");
        let descending = args.contains("reverse=True") != negated;
        return Some(Sort { key: c[2].to_string(), descending, shown: crate::text::clip(&c[0], 60).to_string() });
    }
    api_sort(&call_arguments(content)?)
}

/// The sort an API call's arguments ask for: a sort key ([`SORT_KEYS`]) with a bound on the
/// results ([`BOUND_KEYS`]), descending when the direction ([`DIRECTION_KEYS`]) says `desc` or the
/// key is written `-p95_ms`, ascending when the direction says `asc`. No direction written and no
/// sign: the API's default, unknown, is not read.
fn api_sort(args: &serde_json::Map<String, serde_json::Value>) -> Option<Sort> {
    let (name, key) = SORT_KEYS.iter().find_map(|k| Some((*k, args.get(*k)?.as_str()?)))?;
    BOUND_KEYS
        .iter()
        .find(|k| args.get(**k).is_some_and(|v| v.is_u64() || v.as_str().is_some_and(|s| s.parse::<u64>().is_ok())))?;
    let direction = DIRECTION_KEYS.iter().find_map(|k| Some((*k, args.get(*k)?.as_str()?)));
    let (key, descending) = match (key.strip_prefix('-'), direction) {
        (Some(k), _) => (k, true),
        (None, Some((_, d))) if d.eq_ignore_ascii_case("desc") || d.eq_ignore_ascii_case("descending") => (key, true),
        (None, Some((_, d))) if d.eq_ignore_ascii_case("asc") || d.eq_ignore_ascii_case("ascending") => (key, false),
        _ => return None,
    };
    let shown = match direction {
        Some((d, v)) => format!("\"{name}\": \"{key}\", \"{d}\": \"{v}\""),
        None => format!("\"{name}\": \"-{key}\""),
    };
    Some(Sort { key: key.to_string(), descending, shown })
}

/// Words of a request for the highest values of a measure, and for the lowest.
static HIGH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(highest|slowest|largest|biggest|longest|greatest|heaviest|costliest|priciest|most expensive|maximum|top \d+|top (?:three|five|ten))\b").unwrap()
});
static LOW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(lowest|fastest|smallest|shortest|cheapest|lightest|least expensive|minimum|fewest|bottom \d+)\b",
    )
    .unwrap()
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

/// Step `i`, a tool call, runs a sort kept to its first rows ([`bounded_sort`]) whose key is a
/// column the task's sentence names a word of (`p95_ms` for "p95 latency"), sorted ascending
/// (`ASC`, or no direction: the SQL and pandas default) while the sentence asks for the highest
/// ("slowest", "largest", "top 5", "worst" of a measure bad when high: [`BAD_WHEN_HIGH`]), or
/// descending while it asks for the lowest: the rows returned are the other end of the ranking.
pub(super) fn reversed_order(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    let sorts = ["ORDER", "order", "Order", "sort", "nlargest", "nsmallest"].iter().any(|w| step.content.contains(w));
    if step.kind != StepKind::ToolCall || t.task.is_empty() || !sorts {
        return;
    }
    let Some(Sort { key, descending, shown }) = bounded_sort(&step.content) else { return };
    let name_words = words(&key);
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
                "sorts by {key} {} (`{shown}`) and keeps the first rows, the {} values, while the task asks for the {asked}: \"{}\"",
                if descending { "descending" } else { "ascending" },
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

    /// The key and direction of each form a bounded sort is written in.
    fn read(content: &str) -> Option<(String, bool)> {
        bounded_sort(content).map(|s| (s.key, s.descending))
    }

    #[test]
    fn bounded_sorts_are_read_in_pandas_python_and_api_arguments() {
        let k = |k: &str, d: bool| Some((k.to_string(), d));
        assert_eq!(read(r#"df.sort_values("p95_ms").head(5)"#), k("p95_ms", false));
        assert_eq!(read(r#"df.sort_values(by=["p95_ms"], ascending=False)[:5]"#), k("p95_ms", true));
        assert_eq!(read(r#"top = df.sort_values('revenue', ascending = True).iloc[:3]"#), k("revenue", false));
        assert_eq!(read(r#"df.sort_values("revenue")[["name", "revenue"]].head(3)"#), k("revenue", false));
        assert_eq!(read(r#"df.nsmallest(5, "p95_ms")"#), k("p95_ms", false));
        assert_eq!(read(r#"df.nlargest(3, columns="revenue")"#), k("revenue", true));
        assert_eq!(read(r#"sorted(rows, key=lambda r: r["delay"])[:5]"#), k("delay", false));
        assert_eq!(read(r#"sorted(rows, key=lambda r: r["delay"], reverse=True)[:5]"#), k("delay", true));
        assert_eq!(read(r#"sorted(rows, key=lambda r: -r["delay"])[:5]"#), k("delay", true));
        assert_eq!(read(r#"{"sort": "revenue", "order": "asc", "limit": 5}"#), k("revenue", false));
        assert_eq!(read(r#"{"sort_by": "-revenue", "per_page": 5}"#), k("revenue", true));
        // Not kept to its first rows, or with a direction the call does not write: not read.
        assert_eq!(read(r#"df.sort_values("p95_ms")"#), None);
        assert_eq!(read(r#"{"sort": "revenue", "limit": 5}"#), None);
        assert_eq!(read(r#"{"sort": "revenue", "order": "asc"}"#), None);
    }
}
