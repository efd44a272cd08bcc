//! Off-by-one bounds an edit writes into code: a loop over 1-based page numbers that stops
//! before the last (`for page in range(2, total_pages)`, `for (let p = 2; p < totalPages;
//! p++)`), and a page count rounded up as the floor plus one (`total // per_page + 1`,
//! `Math.floor(total / perPage) + 1`), one too many whenever the total is a multiple of the page
//! size. Also a month's last day (`calendar.monthrange(y, m)[1]`) set as an end the code calls
//! exclusive ("day after the last day, exclusive"): the last day is left out. docs/METHODS.md,
//! "Grounding".

use std::sync::LazyLock;

use regex::Regex;

use super::coding::edit_lines;
use super::{Context, edits, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// A name of a count of 1-based numbered things: `total_pages`, `page_count`, `num_pages`,
/// `totalPages`, `last_page`.
static COUNT_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)total|count|^num_|\bnum_|_num\b|^n_|last_?page|pages$").unwrap());

/// `range(K, NAME)` with a start of 1 or more. Groups: the start, the bound.
static RANGE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\brange\(\s*([1-9])\s*,\s*([A-Za-z_][\w.\[\]'\x22]*)\s*\)").unwrap());

/// A C-style loop from 1 or more while below a bound: `let p = 2; p < totalPages;`. Groups: the
/// start, the bound.
static BELOW: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"=\s*([1-9])\s*;\s*\w+\s*<\s*([A-Za-z_][\w.]*)\s*;").unwrap());

/// A count rounded up as the floor plus one: `total // per_page + 1`,
/// `Math.floor(total / perPage) + 1`. Groups: the dividend, the divisor (either form).
static FLOOR_PLUS_ONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([A-Za-z_][\w.]*)\s*//\s*([A-Za-z_][\w.]*)\s*\+\s*1\b|Math\.floor\(\s*([A-Za-z_][\w.]*)\s*/\s*([A-Za-z_][\w.]*)\s*\)\s*\+\s*1\b")
        .unwrap()
});

/// The last part of a dotted or subscripted name: `total_pages` of `body["meta"]["total_pages"]`.
fn last_name(name: &str) -> &str {
    name.rsplit(['.', '[']).next().unwrap_or(name).trim_matches(['"', '\'', ']'])
}

/// What is off by one in an added line, for the finding.
fn off_by_one(line: &str) -> Option<String> {
    if line.trim_start().starts_with(['#', '/']) {
        return None;
    }
    for c in RANGE.captures_iter(line).chain(BELOW.captures_iter(line)) {
        let bound = last_name(&c[2]);
        if COUNT_NAME.is_match(bound) && !bound.starts_with("len") {
            return Some(format!(
                "`{}` counts from {} and stops before {bound}: the last one, number {bound}, is left out",
                crate::text::clip(c[0].trim(), 50),
                &c[1],
            ));
        }
    }
    let c = FLOOR_PLUS_ONE.captures(line)?;
    let (total, size) = match (c.get(1), c.get(2)) {
        (Some(a), Some(b)) => (a.as_str(), b.as_str()),
        _ => (c.get(3)?.as_str(), c.get(4)?.as_str()),
    };
    let counts = ["total", "count", "len", "size", "items", "rows", "records"];
    if !counts.iter().any(|w| last_name(total).to_ascii_lowercase().contains(w)) {
        return None;
    }
    Some(format!(
        "`{}` rounds up by adding 1 to the floor: one too many whenever {} is a multiple of {} (the \
         ceiling is `({t} + {s} - 1) // {s}`)",
        crate::text::clip(c[0].trim(), 50),
        last_name(total),
        last_name(size),
        t = last_name(total),
        s = last_name(size),
    ))
}

/// Step `e`, an edit, adds a line with an off-by-one bound ([`off_by_one`]): a loop over
/// 1-based numbers starting at 1 or more that stops below a count (`range(2, total_pages)`), or a
/// count of groups rounded up as floor plus one (`total // per_page + 1`).
pub(super) fn off_by_one_bound(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if t.steps[e].kind != StepKind::ToolCall || !edits(t, e) {
        return;
    }
    let Some((removed, added)) = edit_lines(t, e) else { return };
    for line in &added {
        // A line the edit keeps as it was is not what it writes.
        if removed.contains(line) {
            continue;
        }
        if let Some(why) = off_by_one(line) {
            out.push(finding(Signal::Miscalculation, weights::MISCALCULATION, why));
            return;
        }
    }
}

/// A name of an end bound: `end`, `end_date`, `until`, `upper`, `stop`, `period_end`.
static END_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(?:^|_)(?:end|until|upper|stop)(?:_|$)|^end").unwrap());

/// A month's number of days: `calendar.monthrange(y, m)[1]`, `monthrange(start.year, start.month)[1]`.
static MONTH_DAYS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"monthrange\([^()]*(?:\([^()]*\)[^()]*)*\)\s*\[\s*1\s*\]").unwrap());

/// A line that calls an end exclusive: `help="day after the last day, exclusive"`, `# end is
/// exclusive`, "the end date is exclusive".
static EXCLUSIVE_END: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bend\b[^\n]{0,80}\bexclusive\b|\bexclusive\b[^\n]{0,40}\bend\b|day after the last day").unwrap()
});

/// The assignment of an end bound ([`END_NAME`]) to the month's last day among `added` lines:
/// the line holds [`MONTH_DAYS`], or a name an added line assigned from it (`last_day =
/// calendar.monthrange(…)[1]`, then `end = start.replace(day=last_day)`). The line, trimmed.
fn month_end_line(added: &[String]) -> Option<&str> {
    let days: Vec<&str> = added
        .iter()
        .filter(|l| MONTH_DAYS.is_match(l))
        .filter_map(|l| {
            let (lhs, _) = l.split_once('=')?;
            let lhs = lhs.trim();
            lhs.chars().all(|c| c.is_alphanumeric() || c == '_').then_some(lhs)
        })
        .collect();
    added.iter().map(String::as_str).find(|l| {
        let Some((lhs, rhs)) = l.split_once('=') else { return false };
        let lhs = lhs.trim();
        if rhs.starts_with('=') || !END_NAME.is_match(lhs.rsplit('.').next().unwrap_or(lhs)) {
            return false;
        }
        // The end is the last day itself, not the day after it (`+ timedelta(days=1)`).
        let after = rhs.contains("timedelta") || rhs.contains("+ 1") || rhs.contains("+1");
        !after && (MONTH_DAYS.is_match(rhs) || days.iter().any(|d| super::contains_word(rhs, d)))
    })
}

/// Step `e`, an edit, sets an end bound to a month's last day ([`month_end_line`]) while the
/// edit's text, or an earlier step of the last 60, calls the end exclusive ([`EXCLUSIVE_END`]):
/// the records of the month's last day are left out.
pub(super) fn month_end_as_exclusive(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let content = &t.steps[e].content;
    if t.steps[e].kind != StepKind::ToolCall || !content.contains("monthrange") || !edits(t, e) {
        return;
    }
    let Some((removed, added)) = edit_lines(t, e) else { return };
    let added: Vec<String> = added.into_iter().filter(|l| !removed.contains(l)).collect();
    let Some(line) = month_end_line(&added) else { return };
    let said = (e.saturating_sub(60)..=e).rev().find_map(|j| Some((j, EXCLUSIVE_END.find(&t.steps[j].content)?)));
    let Some((j, m)) = said else { return };
    let line = crate::text::clip(line, 60);
    let words = crate::text::clip(m.as_str(), 60);
    let evidence = if j == e {
        prose![format!(
            "sets `{line}`, the month's last day, as an end it calls exclusive (\"{words}\"): the last day is left out"
        )]
    } else {
        prose![
            format!("sets `{line}`, the month's last day, as an end that step "),
            Part::Step(j),
            format!(" calls exclusive (\"{words}\"): the last day is left out"),
        ]
    };
    out.push(finding(Signal::Miscalculation, weights::MISCALCULATION, evidence));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_by_one_bounds_are_found_and_their_correct_twins_are_not() {
        assert!(off_by_one("for page in range(2, total_pages):").is_some());
        assert!(off_by_one(r#"for page in range(2, body["meta"]["total_pages"]):"#).is_some());
        assert!(off_by_one("for (let p = 2; p < totalPages; p++) {").is_some());
        assert!(off_by_one("return self.total // self.per_page + 1").is_some());
        assert!(off_by_one("const pages = Math.floor(totalCount / perPage) + 1;").is_some());
        // The inclusive bound, a 0-based loop, a length, an index's page number: no finding.
        assert!(off_by_one("for page in range(2, total_pages + 1):").is_none());
        assert!(off_by_one("for i in range(0, total_pages):").is_none());
        assert!(off_by_one("for i in range(1, len(rows)):").is_none());
        assert!(off_by_one("page = index // per_page + 1").is_none());
        assert!(off_by_one("return -(-self.total // self.per_page)").is_none());
    }

    #[test]
    fn a_month_s_last_day_set_as_the_end_is_found_and_the_day_after_is_not() {
        let lines = |ls: &[&str]| ls.iter().map(|l| l.to_string()).collect::<Vec<_>>();
        let last =
            lines(&["last_day = calendar.monthrange(start.year, start.month)[1]", "end = start.replace(day=last_day)"]);
        assert_eq!(month_end_line(&last), Some("end = start.replace(day=last_day)"));
        let direct = lines(&["period_end = date(y, m, monthrange(y, m)[1])"]);
        assert!(month_end_line(&direct).is_some());
        let after = lines(&[
            "last_day = calendar.monthrange(start.year, start.month)[1]",
            "end = start.replace(day=last_day) + timedelta(days=1)",
        ]);
        assert_eq!(month_end_line(&after), None);
        assert_eq!(month_end_line(&lines(&["days = calendar.monthrange(y, m)[1]"])), None);
    }
}
