//! Tables in the steps of a run, and the values agents read from them: a figure stated for one
//! column of a table ("Q3 2025 revenue: NOK 4,064 million") that the table gives under another
//! ("Q3 2024"). docs/METHODS.md, "Grounding".
//!
//! A table is a block of two or more consecutive lines that each split into two cells or more:
//! at `|` (a Markdown table; its `|---|` rule is skipped), else at runs of two spaces or more, or
//! tabs (a table printed with aligned columns, as pages and terminals show them). The block's
//! first line is its header; the cells of a row are matched to the header's from the right (a
//! header often has no cell above the row labels).

use std::collections::HashMap;
use std::sync::LazyLock;

use super::{Context, contains_word, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// At most this many steps back a stated value is looked for in a table.
const WINDOW: usize = 60;

/// At most this many cells are kept per step (a huge output is cut, not indexed without end).
const MAX_CELLS_PER_STEP: usize = 2000;

/// A number as tables and messages write it: thousands grouped by commas or by single spaces
/// (`4,064`, `78 745`, also no-break and thin spaces), decimals after a point.
static NUMBER: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?:[ \u{a0}\u{202f}\u{2009}]\d{3})+|\d+(?:\.\d+)?").unwrap()
});

/// Cells of a table line split at runs of two spaces or more, or tabs.
static GAP: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r"\t+|\s{2,}").unwrap());

/// One numeric cell of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// The step whose text holds the table (0-based).
    pub step: usize,
    /// The row's label: its first cell (`Revenue`, `5501 Tromsø`).
    pub row: String,
    /// The header of the cell's column (`Q3 2024`).
    pub column: String,
    /// The cell's text as written (`4,064`).
    pub text: String,
    /// The row's other numeric cells as `(column header, text)`.
    pub others: Vec<(String, String)>,
}

/// The numeric cells of every table in the run, by normalised value
/// ([`crate::evidence::normalize_number`]), each list in step order.
pub type TableIndex = HashMap<String, Vec<Cell>>;

/// The cells of a table line: at `|` for a Markdown row, else at gaps; `None` for a rule under
/// the header or between rows: Markdown's `|---|:--|`, psql's `------+------`, MySQL's
/// `+----+----+`, or dashes under aligned columns (`-----  -----`).
fn cells(line: &str) -> Option<Vec<&str>> {
    let line = line.trim();
    if line.contains('-') && line.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '+' | '=')) {
        return None;
    }
    if line.contains('|') {
        // Bars at both edges are Markdown's frame; a row without the leading one that ends on a
        // bar ends on an empty cell (`Hillcrest | 1931 | 1999 |` under a `Notes` column).
        let inner = match line.strip_prefix('|') {
            Some(inner) => inner.strip_suffix('|').unwrap_or(inner),
            None => line,
        };
        return Some(inner.split('|').map(str::trim).collect());
    }
    Some(GAP.split(line).map(str::trim).filter(|c| !c.is_empty()).collect())
}

/// Units a cell may write after its number (compared ignoring case): time, length, mass,
/// volume, data, power, frequency and rates. `km/h` and `req/s` are a unit per a unit.
const UNITS: [&str; 52] = [
    "ns", "us", "µs", "μs", "ms", "s", "sec", "secs", "min", "mins", "h", "hr", "hrs", "d", "mm", "cm", "m", "km",
    "ft", "mi", "in", "g", "mg", "kg", "t", "lb", "lbs", "ml", "l", "b", "kb", "mb", "gb", "tb", "kib", "mib", "gib",
    "tib", "w", "kw", "kwh", "mw", "hz", "khz", "mhz", "ghz", "rpm", "fps", "req", "ops", "mph", "x",
];

/// Whether the text after a cell's number is a unit ([`UNITS`], or one per another: `km/h`,
/// `req/s`), or degrees (`°C`), after at most one space. A word such as a place's name
/// (`1530 Moss`) is none.
fn is_unit(rest: &str) -> bool {
    let r = rest.strip_prefix([' ', '\u{a0}']).unwrap_or(rest);
    if matches!(r, "°" | "°C" | "°F") {
        return true;
    }
    let known = |u: &str| UNITS.iter().any(|k| k.eq_ignore_ascii_case(u));
    match r.split_once('/') {
        Some((a, b)) => known(a) && known(b),
        None => known(r),
    }
}

/// The value of a numeric cell, normalised: the whole cell is one number ([`NUMBER`]), maybe
/// with a sign, a percent sign, a currency symbol or a unit after it ([`is_unit`]: `48.3 ms`,
/// `21 m`).
fn cell_value(cell: &str) -> Option<String> {
    let t = cell.trim().trim_start_matches(['+', '−', '-', '$', '€', '£']).trim_end_matches(['%', '*']).trim();
    let m = NUMBER.find(t)?;
    if m.start() != 0 || (m.end() != t.len() && !is_unit(&t[m.end()..])) {
        return None;
    }
    let n = crate::evidence::normalize_number(&m.as_str().replace([' ', '\u{a0}', '\u{202f}', '\u{2009}'], ""));
    (!n.is_empty()).then_some(n)
}

/// Indexes the tables of every step's text.
pub(super) fn index(t: &crate::model::Trajectory) -> TableIndex {
    let mut out: TableIndex = HashMap::new();
    for s in &t.steps {
        index_text(s.index, &s.content, &mut out);
    }
    out
}

/// Calls `each` with every table of `text` (a run of two lines or more with two cells or more,
/// its header first; Markdown rules skipped), in order, until it returns `false`. A text with no
/// gap, bar or tab, or no digit, has none.
fn for_each_table<'a>(text: &'a str, mut each: impl FnMut(&[Vec<&'a str>]) -> bool) {
    // A cheap test first: a table has a gap or a bar, and digits.
    if !(text.contains("  ") || text.contains('|') || text.contains('\t')) || !text.bytes().any(|b| b.is_ascii_digit())
    {
        return;
    }
    let mut block: Vec<Vec<&str>> = Vec::new();
    for line in text.lines().chain(std::iter::once("")) {
        match cells(line) {
            None => continue,
            Some(c) if c.len() >= 2 => block.push(c),
            Some(_) => {
                if block.len() >= 2 && !each(&block) {
                    return;
                }
                block.clear();
            }
        }
    }
}

/// Adds the tables of step `step`'s text to `out`.
fn index_text(step: usize, text: &str, out: &mut TableIndex) {
    let mut kept = 0;
    for_each_table(text, |block| {
        kept += table(step, block, out);
        kept < MAX_CELLS_PER_STEP
    });
}

/// Adds the numeric cells of one table (`block[0]` its header) to `out`; returns how many. A
/// row with one numeric cell is indexed too (a stations table with `Opened` and text `Notes`).
fn table(step: usize, block: &[Vec<&str>], out: &mut TableIndex) -> usize {
    let header = &block[0];
    let mut added = 0;
    for row in &block[1..] {
        // The column of row cell `k`, matched from the right; the first cell is the row's label.
        let shift = row.len() as isize - header.len() as isize;
        let column = |k: usize| -> Option<&str> {
            let h = k as isize - shift;
            (k >= 1 && h >= 0).then(|| header.get(h as usize).copied()).flatten().filter(|h| !h.is_empty())
        };
        let numeric: Vec<(String, &str, &str)> =
            (1..row.len()).filter_map(|k| Some((cell_value(row[k])?, column(k)?, row[k]))).collect();
        if numeric.is_empty() || !row[0].chars().any(char::is_alphabetic) {
            continue;
        }
        for (value, col, text) in &numeric {
            let others =
                numeric.iter().filter(|(_, c, _)| c != col).map(|(_, c, t)| (c.to_string(), t.to_string())).collect();
            out.entry(value.clone()).or_default().push(Cell {
                step,
                row: row[0].to_string(),
                column: col.to_string(),
                text: text.to_string(),
                others,
            });
            added += 1;
        }
    }
    added
}

/// The tables of `text` (as [`for_each_table`] reads them) as lists of rows: for each, the
/// number of rows under its header, and the count a footer line gives (psql's `(11 rows)`,
/// MySQL's `11 rows in set`) when the text prints one table and one such line. At most the
/// first 16 tables.
pub(super) fn row_counts(text: &str) -> Vec<(usize, Option<usize>)> {
    static FOOTER: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"(?m)^\s*\(?(\d+) rows?\)?(?: in set\b.*)?\s*$").unwrap());
    let mut out = Vec::new();
    for_each_table(text, |block| {
        out.push((block.len() - 1, None));
        out.len() < 16
    });
    let footers: Vec<usize> = FOOTER.captures_iter(text).filter_map(|c| c[1].parse().ok()).collect();
    if let ([only], [footer]) = (out.as_mut_slice(), footers.as_slice()) {
        only.1 = Some(*footer);
    }
    out
}

/// The totals of the numeric columns of every table in `text` (a Markdown table or aligned
/// columns, as [`index`] reads them): for each column with two numeric cells or more below its
/// header, the sum of its values. "168 expense lines" over a table whose lines column gives 61,
/// 33 and 74 is counted from the table, not invented. At most the first 16 tables and 40 rows
/// of each are read.
pub(super) fn column_totals(text: &str) -> Vec<f64> {
    let mut totals = Vec::new();
    let mut blocks = 0;
    for_each_table(text, |block| {
        if block.len() >= 3 {
            blocks += 1;
            let rows = &block[1..block.len().min(41)];
            for k in 1..block[0].len() {
                let values: Vec<f64> = rows
                    .iter()
                    .filter(|r| r.len() == block[0].len())
                    .filter_map(|r| cell_value(r[k])?.parse::<f64>().ok())
                    .collect();
                if values.len() >= 2 {
                    totals.push(values.iter().sum());
                }
            }
        }
        blocks < 16
    });
    totals
}

/// Whether a number is too plain to be read from one table cell: fewer than three significant
/// digits, or a year.
fn plain(value: &str) -> bool {
    let digits: String = value.chars().filter(char::is_ascii_digit).collect();
    let significant = digits.trim_start_matches('0').len();
    let year = !value.contains('.') && value.parse::<u32>().is_ok_and(|y| (1900..=2100).contains(&y));
    significant < 3 || year
}

/// Whether `line` names a row: one of the row label's words of three letters or more, as a word.
fn names_row(line: &str, row: &str) -> bool {
    row.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3 && w.chars().all(char::is_alphabetic))
        .any(|w| contains_word(&line.to_lowercase(), &w.to_lowercase()))
}

/// Whether `line` names a column by its whole header, as a phrase, or by the header without a
/// unit suffix (`p99` for `p99_ms`, `latency` for `latency (s)`).
fn names_column(line: &str, column: &str) -> bool {
    const UNITS: [&str; 14] =
        ["ms", "s", "sec", "secs", "pct", "usd", "eur", "kb", "mb", "gb", "min", "h", "hrs", "pc"];
    let (line, column) = (line.to_lowercase(), column.to_lowercase());
    if contains_word(&line, &column) {
        return true;
    }
    let stem = match column.rsplit_once(['_', ' ']) {
        Some((stem, unit)) if UNITS.contains(&unit.trim_matches(['(', ')'])) => stem.trim(),
        _ => return false,
    };
    stem.len() >= 2 && contains_word(&line, stem)
}

/// The words a line of a list is read with: the line, and the lead-in line of its list (`lead`,
/// the last line before it ending with `:`, "Reading the export against the 800 ms p99
/// threshold:"), which names what every item's figure is.
fn with_lead(line: &str, lead: Option<&str>) -> String {
    let item = line.trim_start().starts_with(['-', '*', '•']);
    match lead.filter(|_| item) {
        Some(lead) => format!("{lead}\n{line}"),
        None => line.to_string(),
    }
}

/// Whether step `i` is an agent's message or report (not a tool's output, not the user, not an
/// outside agent, not code) with a number in it: a step that may tell a figure read from a table.
fn tells_figures(ctx: &Context<'_>, i: usize) -> bool {
    let step = &ctx.trajectory.steps[i];
    matches!(step.kind, StepKind::Message | StepKind::Thought)
        && !super::actions::is_human(step)
        && !super::is_outside_agent(&step.agent)
        && ctx.hierarchy.steps[i].action != crate::hierarchy::Action::WriteCode
        && NUMBER.is_match(&step.content)
}

/// Step `i`, an agent's message or report (not a tool's output, not the user, not code), states
/// on one line a value that a table of an earlier step (within [`WINDOW`] steps) gives in one
/// column only of a row the line names ([`names_row`]), while the line (or its list's lead-in,
/// [`with_lead`]) names another column of
/// that table by its header and not the value's own ("Q3 2025 revenue: NOK 4,064 million" where
/// the table gives 4,064 under "Q3 2024" and 4,312 under "Q3 2025"). The value was read from the
/// wrong column: a misread result. Plain values (fewer than three significant digits, years:
/// [`plain`]) and lines that are themselves table rows are not read. docs/METHODS.md,
/// "Grounding".
pub(super) fn wrong_column(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if !tells_figures(ctx, i) {
        return;
    }
    let index = &super::grounding::records(ctx).tables;
    if index.is_empty() {
        return;
    }
    let from = i.saturating_sub(WINDOW);
    // The last line so far ending with `:`, the lead-in of the list that follows it.
    let mut lead: Option<&str> = None;
    for line in step.content.lines() {
        if line.contains('|') || cells(line).is_some_and(|c| c.len() >= 2) {
            continue;
        }
        let lead_in = lead;
        if line.trim_end().ends_with(':') {
            lead = Some(line);
        }
        for m in NUMBER.find_iter(line) {
            let text = m.as_str().replace([' ', '\u{a0}', '\u{202f}', '\u{2009}'], "");
            let value = crate::evidence::normalize_number(&text);
            if value.is_empty() || plain(&value) {
                continue;
            }
            let Some(found) = index.get(&value) else { continue };
            // The nearest earlier table holding it in a row the line names.
            let Some(cell) = found.iter().rev().find(|c| c.step < i && c.step >= from && names_row(line, &c.row))
            else {
                continue;
            };
            // The same value in another column of the row: nothing tells which was read.
            if cell.others.iter().any(|(_, o)| cell_value(o).as_deref() == Some(value.as_str())) {
                continue;
            }
            // The columns are named by the line or its list's lead-in; the row by the line.
            let named_in = with_lead(line, lead_in);
            if names_column(&named_in, &cell.column) {
                continue;
            }
            let Some((named, there)) = cell
                .others
                .iter()
                .find(|(c, _)| names_column(&named_in, c) && !cell.column.to_lowercase().contains(&c.to_lowercase()))
            else {
                continue;
            };
            out.push(finding(
                Signal::IgnoredResult,
                weights::MISREAD,
                prose![
                    format!("states {} for \"{named}\", but the table at step ", m.as_str()),
                    Part::Step(cell.step),
                    format!(
                        " gives {} under \"{}\" (row \"{}\"); under \"{named}\" it gives {there}",
                        cell.text, cell.column, cell.row
                    )
                ],
            ));
            return;
        }
    }
}

/// A value an agent states for one row of a table that the table gives, in the same column, for
/// another row ([`misread_row`]).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RowMisread {
    /// The value as the agent writes it (`1891`).
    pub written: String,
    /// The value normalised ([`crate::evidence::normalize_number`]).
    pub value: String,
    /// The step whose text holds the table (0-based).
    pub table_step: usize,
    /// The label of the row the agent names (`Elm Street`).
    pub row: String,
    /// The header of the column the value is in (`Opened`).
    pub column: String,
    /// The named row's cell in that column, as written (`1887`).
    pub there: String,
    /// The label of the row that holds the stated value (`Mill Lane`).
    pub holder: String,
}

/// Whether `sentence` (lower case) names a table row by its whole label, as a phrase; the label
/// has a word of three letters or more.
fn names_whole_row(sentence: &str, label: &str) -> bool {
    let label = label.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
    label.split(|c: char| !c.is_alphanumeric()).any(|w| w.chars().count() >= 3 && w.chars().all(char::is_alphabetic))
        && contains_word(sentence, &label)
}

/// The sentences of a line: it is cut after `.`, `;`, `!` or `?` followed by a blank (a decimal
/// point is followed by a digit).
fn sentences(line: &str) -> Vec<&str> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    for k in 0..bytes.len() {
        if matches!(bytes[k], b'.' | b';' | b'!' | b'?') && bytes.get(k + 1).is_some_and(u8::is_ascii_whitespace) {
            out.push(&line[start..=k]);
            start = k + 1;
        }
    }
    out.push(&line[start..]);
    out
}

/// The cell of `row` under the header cell `h` of a table whose header has `width` cells, matched
/// from the right as [`table`] matches them; `None` for the row's label or a cell left of the row.
fn cell_under(row: &[String], width: usize, h: usize) -> Option<&str> {
    let k = h as isize + row.len() as isize - width as isize;
    (k >= 1).then(|| row.get(k as usize).map(String::as_str)).flatten()
}

/// Step `i`, an agent's message or report (as [`wrong_column`] reads them), states in one sentence
/// a value for a row of a table it names by the row's whole label, and the column the value is
/// in by its header, where the table (of an earlier step within [`WINDOW`], or shown earlier in
/// the same step, as a web surfer's page text is) gives that value in that column for another
/// row, which the sentence does not name, and gives the named row another value there: "Elm
/// Street station opened in 1891" under a stations table whose `Opened` column gives Elm Street
/// 1887 and Mill Lane 1891. The value was read from the neighbouring row: a misread result.
/// Values of fewer than three significant digits are not read (a year is read: the row and the
/// column are named). The first such value of the step, if any. docs/METHODS.md, "Grounding".
pub(super) fn misread_row(ctx: &Context<'_>, i: usize) -> Option<RowMisread> {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if !tells_figures(ctx, i) {
        return None;
    }
    let index = &super::grounding::records(ctx).tables;
    if index.is_empty() {
        return None;
    }
    let from = i.saturating_sub(WINDOW);
    let mut parsed: HashMap<usize, Vec<Vec<Vec<String>>>> = HashMap::new();
    let mut offset = 0;
    for line in step.content.lines() {
        let at = offset;
        offset += line.len() + 1;
        if line.contains('|') || cells(line).is_some_and(|c| c.len() >= 2) {
            continue;
        }
        for sentence in sentences(line) {
            let lower = sentence.to_lowercase();
            for m in NUMBER.find_iter(sentence) {
                let value =
                    crate::evidence::normalize_number(&m.as_str().replace([' ', '\u{a0}', '\u{202f}', '\u{2009}'], ""));
                if value.chars().filter(char::is_ascii_digit).collect::<String>().trim_start_matches('0').len() < 3 {
                    continue;
                }
                let Some(found) = index.get(&value) else { continue };
                for cell in found.iter().rev().filter(|c| c.step <= i && c.step >= from) {
                    // A table of this step counts when it is shown before the sentence.
                    if cell.step == i
                        && !step.content[..at]
                            .lines()
                            .any(|l| l.contains(cell.row.as_str()) && l.contains(cell.text.as_str()))
                    {
                        continue;
                    }
                    if names_whole_row(&lower, &cell.row) || !names_column(&lower, &cell.column) {
                        continue;
                    }
                    let tables = parsed.entry(cell.step).or_insert_with(|| {
                        let mut out = Vec::new();
                        for_each_table(&t.steps[cell.step].content, |block| {
                            out.push(block.iter().map(|r| r.iter().map(|c| c.to_string()).collect()).collect());
                            out.len() < 16
                        });
                        out
                    });
                    for block in tables.iter() {
                        let header = &block[0];
                        let Some(h) = header.iter().position(|c| c == &cell.column) else { continue };
                        if !block[1..].iter().any(|r| r.first() == Some(&cell.row)) {
                            continue;
                        }
                        let named: Vec<&Vec<String>> = block[1..]
                            .iter()
                            .filter(|r| r.first().is_some_and(|l| *l != cell.row && names_whole_row(&lower, l)))
                            .collect();
                        let [row] = named.as_slice() else { continue };
                        let Some(there) = cell_under(row, header.len(), h) else { continue };
                        let there_value = cell_value(there);
                        if there_value.is_none() || there_value.as_deref() == Some(value.as_str()) {
                            continue;
                        }
                        // The value anywhere in the named row: nothing tells it was misread.
                        if row[1..].iter().any(|c| cell_value(c).as_deref() == Some(value.as_str())) {
                            continue;
                        }
                        // An agent that repeats a teammate's reading relays it; the misread is
                        // the teammate's.
                        if told_before(ctx, cell.step..i, &row[0], m.as_str()) {
                            continue;
                        }
                        return Some(RowMisread {
                            written: m.as_str().to_string(),
                            value,
                            table_step: cell.step,
                            row: row[0].clone(),
                            column: cell.column.clone(),
                            there: there.to_string(),
                            holder: cell.row.clone(),
                        });
                    }
                }
            }
        }
    }
    None
}

/// Whether an agent's message or report of `steps` says `written` for the row `label` in one of
/// its sentences (a reading a later step only repeats).
fn told_before(ctx: &Context<'_>, steps: std::ops::Range<usize>, label: &str, written: &str) -> bool {
    steps.filter(|&k| matches!(ctx.trajectory.steps[k].kind, StepKind::Message | StepKind::Thought)).any(|k| {
        ctx.trajectory.steps[k]
            .content
            .lines()
            .filter(|l| !l.contains('|') && cells(l).is_none_or(|c| c.len() < 2))
            .any(|l| {
                sentences(l).into_iter().any(|s| {
                    let lower = s.to_lowercase();
                    names_whole_row(&lower, label) && contains_word(&lower, &written.to_lowercase())
                })
            })
    })
}

/// The finding of [`misread_row`]: "states 1891 for "Elm Street" ("Opened"), but the table at
/// step 17 gives it 1887 there; 1891 is the "Opened" of "Mill Lane"".
pub(super) fn wrong_row(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let Some(m) = misread_row(ctx, i) else { return };
    out.push(finding(
        Signal::IgnoredResult,
        weights::MISREAD,
        prose![
            format!("states {} for \"{}\" (\"{}\"), but the table at step ", m.written, m.row, m.column),
            Part::Step(m.table_step),
            format!(" gives it {} there; {} is the \"{}\" of \"{}\"", m.there, m.written, m.column, m.holder)
        ],
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_markdown_tables_are_indexed_by_column() {
        let mut idx = TableIndex::new();
        index_text(
            0,
            "Key figures (NOK million)          Q3 2025   Q3 2024\nRevenue                              4,312     4,064\nEBITDA margin                        11.2%     12.9%\n\n| region | 2024 | 2025 |\n|---|---|---|\n| 5501 Tromsø | 78 745 | 79 611 |",
            &mut idx,
        );
        let c = &idx["4064"][0];
        assert_eq!((c.row.as_str(), c.column.as_str(), c.text.as_str()), ("Revenue", "Q3 2024", "4,064"));
        assert_eq!(c.others, vec![("Q3 2025".to_string(), "4,312".to_string())]);
        assert_eq!(idx["12.9"][0].column, "Q3 2024");
        let c = &idx["78745"][0];
        assert_eq!((c.row.as_str(), c.column.as_str()), ("5501 Tromsø", "2024"));
    }

    #[test]
    fn psql_and_mysql_rules_keep_the_header() {
        // psql prints `---+---` under the header, MySQL `+---+` around it: the first row is a
        // row, not a header of its own.
        let mut idx = TableIndex::new();
        index_text(
            0,
            "  code    | churned | active_start\n----------+---------+--------------\n pro      |     121 |         4310\n pro_2024 |      66 |         1330\n(2 rows)",
            &mut idx,
        );
        let c = &idx["1330"][0];
        assert_eq!((c.row.as_str(), c.column.as_str()), ("pro_2024", "active_start"));
        assert_eq!(c.others, vec![("churned".to_string(), "66".to_string())]);
        let mut idx = TableIndex::new();
        index_text(
            0,
            "+--------+-------+-------+\n| region | q1    | q2    |\n+--------+-------+-------+\n| north  | 1,204 | 1,380 |\n+--------+-------+-------+",
            &mut idx,
        );
        assert_eq!(idx["1380"][0].column, "q2");
        // Dashes under aligned columns are a rule too.
        let mut idx = TableIndex::new();
        index_text(0, "name      total   paid\n--------  ------  ------\nacme      4,200   3,900", &mut idx);
        assert_eq!((idx["3900"][0].row.as_str(), idx["3900"][0].column.as_str()), ("acme", "paid"));
    }

    #[test]
    fn a_cell_with_a_unit_is_its_number() {
        assert_eq!(cell_value("48.31 ms").as_deref(), Some("48.31"));
        assert_eq!(cell_value("212 m").as_deref(), Some("212"));
        assert_eq!(cell_value("1,250 req/s").as_deref(), Some("1250"));
        assert_eq!(cell_value("−3.5°C").as_deref(), Some("3.5"));
        assert_eq!(cell_value("5501 Tromsø"), None);
        assert_eq!(cell_value("2024 Q3"), None);
        assert_eq!(cell_value("12 of 40"), None);
        assert_eq!(cell_value("1530 Moss"), None);
        assert_eq!(cell_value("120 km/h").as_deref(), Some("120"));
    }

    #[test]
    fn plain_values_are_not_read() {
        assert!(plain("2025"));
        assert!(plain("12"));
        assert!(!plain("4064"));
        assert!(!plain("11.2"));
    }
}
