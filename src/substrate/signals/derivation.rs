//! Values an agent works out from values it has a source for, and values whose source the trace
//! does not record: what the unsourced-value rule ([`super::unsourced`]) must not call invented.
//! docs/METHODS.md, "Values in context" ("Worked out from sourced values" and "No task
//! recorded").
//!
//! - The sum or the difference of two figures the same step writes, each with an earlier source
//!   ("ship 800 from the first warehouse and 400 from the second" for an order of 1,200).
//! - The product or the quotient of two figures the same sentence writes, each sourced or itself
//!   worked out so earlier in the step (a quantity times a unit price, an amount times a rate).
//! - A percentage that is a ratio the same line writes, or its complement ("reduced by 18% (HR
//!   0.82)").
//! - A figure in another unit of a value whose unit a JSON member's name gives (`"remaining_mb":
//!   8210` → "8.2 GB"; [`member_unit`], read by `signals::unit_rounded`).
//! - A rounded figure: a number told as approximate ("about 1,200" after 1,187) or followed by a
//!   scale word ("about 3.4 million" for 3,412,880) that rounds a finer figure its sentence or an
//!   earlier step writes ([`rounded_figure`]), and a bound an earlier number and a fraction the
//!   run wrote give ("up to 4,140 s" for 3600 s and a jitter of 0.15).
//! - A temperature in the other scale of one the step writes ("95°F (35.0°C)"), or a finer
//!   reading cut to its decimals ("89.1°F" after 89.06; [`temperature`]).
//! - A duration that is the time between two timestamps of one earlier record
//!   (`"started_at": "…T08:48:00Z", "finished_at": "…T10:05:00Z"` → "77 minutes").
//! - With no task recorded, what the agent states before it observed anything, and a value a
//!   later tool output of the run confirms.

use super::{Context, written_tolerance};
use crate::evidence::EvidenceKind;
use crate::model::StepKind;

/// At most this many sourced figures of a step are paired by [`sourced_sum`].
const MAX_OPERANDS: usize = 12;

/// How far (in bytes, either side) from a percentage [`ratio_percent`] looks for the ratio it
/// restates: the same line, near it.
const RATIO_REACH: usize = 120;

/// How many steps after a value [`confirmed_later`] reads for the tool output that confirms it.
const CONFIRM_WINDOW: usize = 20;

/// Whether the number `key`, written at byte `at` of `text`, is the sum or the difference of two
/// figures that the same sentence writes and that each have an earlier source (`sourced`: value
/// and byte offset, the step's numbers other than 0 to 10 that an earlier step, the task or a
/// tool output wrote), at the precision `key` is written with: "enough for 1,200 if we ship 800
/// from Gothenburg and 400 from Hamburg" after an order of 1,200 and a stock of 800 works 400
/// out. Unlike a sum of figures the step alone states (`signals::derived`, three significant
/// digits or more), a round figure counts here: both operands are sourced and named in the
/// statement itself ([`sentence_around`]), which keeps a step full of figures from sourcing a
/// number by coincidence. At most [`MAX_OPERANDS`] distinct operands are paired; a year is never
/// worked out this way.
pub(super) fn sourced_sum(text: &str, at: usize, key: &str, sourced: &[(f64, usize)]) -> bool {
    let Ok(v) = key.parse::<f64>() else { return false };
    let year = v.fract() == 0.0 && (1000.0..=2100.0).contains(&v);
    if year || v <= 0.0 {
        return false;
    }
    let sentence = sentence_around(text, at);
    let tol = written_tolerance(key);
    let mut ops: Vec<f64> = Vec::new();
    for &(x, _) in sourced.iter().filter(|(_, p)| sentence.contains(p) && *p != at) {
        if x > 0.0 && (x - v).abs() > tol && !ops.iter().any(|o| (o - x).abs() < 1e-12) {
            ops.push(x);
        }
        if ops.len() >= MAX_OPERANDS {
            break;
        }
    }
    ops.iter()
        .enumerate()
        .any(|(i, &a)| ops[i + 1..].iter().any(|&b| ((a + b) - v).abs() <= tol || ((a - b).abs() - v).abs() <= tol))
}

/// How many significant digits a product or quotient [`sourced_product`] tests must have: a
/// shorter figure is a product of some pair of a run's many figures by coincidence.
const PRODUCT_DIGITS: usize = 4;

/// Whether the number `key`, written at byte `at` of `text`, is the product or the quotient of two
/// figures the step writes: a quantity times a unit price, an amount times an exchange rate, a
/// total over a count ("300 boxes at £61.50 each come to £18,450.00", "at a rate of 1.1873 that
/// is €21,905.69"), to within one unit of the last place `key` is written with (a rounding either
/// way). Each operand is either one of `sourced` (value and byte offset: the step's numbers with
/// an earlier source, and the counts 2 to 10 it writes) in the same sentence as `key`, or one of
/// `worked` (figures this rule already worked out earlier in the same step, so a converted total
/// can rest on the total; only figures worked out from sourced ones directly are passed here).
/// Only figures of [`PRODUCT_DIGITS`] significant digits or more that are not years are tested,
/// no year is a factor, and at most [`MAX_OPERANDS`] distinct operands are paired. A quantity
/// the user asked for (`asked`: the figures the task and the user's messages write, [`asked`])
/// is a factor too, paired with a figure of the sentence: "at £61.50 each that is £18,450.00"
/// for the 300 boxes of the request.
pub(super) fn sourced_product(
    text: &str,
    at: usize,
    key: &str,
    sourced: &[(f64, usize)],
    worked: &[(f64, usize)],
    asked: &[f64],
) -> bool {
    let Ok(v) = key.parse::<f64>() else { return false };
    let year = v.fract() == 0.0 && (1000.0..=2100.0).contains(&v);
    let digits: String = key.chars().filter(char::is_ascii_digit).collect();
    if year || v <= 0.0 || digits.trim_start_matches('0').trim_end_matches('0').len() < PRODUCT_DIGITS {
        return false;
    }
    let sentence = sentence_around(text, at);
    let tol = 2.0 * written_tolerance(key);
    let in_sentence = sourced.iter().filter(|(_, p)| sentence.contains(p) && *p != at);
    let before = worked.iter().filter(|(_, p)| *p < at);
    let mut ops: Vec<f64> = Vec::new();
    for &(x, _) in in_sentence.chain(before) {
        // A year is no factor ("in 2024 the 2 sites used 4,048 kWh" is no 2024 × 2).
        let year = x.fract() == 0.0 && (1000.0..=2100.0).contains(&x);
        if x > 0.0 && !year && (x - v).abs() > tol && !ops.iter().any(|o| (o - x).abs() < 1e-12) {
            ops.push(x);
        }
        if ops.len() >= MAX_OPERANDS {
            break;
        }
    }
    let works = |a: f64, b: f64| {
        let (big, small) = if a >= b { (a, b) } else { (b, a) };
        (a * b - v).abs() <= tol || (big / small - v).abs() <= tol
    };
    ops.iter().enumerate().any(|(i, &a)| ops[i + 1..].iter().any(|&b| works(a, b)))
        || asked.iter().filter(|&&q| (q - v).abs() > tol).any(|&q| ops.iter().any(|&b| works(q, b)))
}

/// The figures the user asked with, as [`sourced_product`] pairs them: the numbers of the task
/// and of the served person's messages before step `i`, other than 0 and 1 and years, at most
/// [`MAX_OPERANDS`] of them. A turn that revises the request with a number ("Actually make it
/// 250 boxes", "change it to 4 nights instead") replaces what the turns before it asked.
pub(super) fn asked(ctx: &Context<'_>, i: usize) -> Vec<f64> {
    let t = ctx.trajectory;
    let task = crate::evidence::extract_text(&t.task);
    static REVISES: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\b(?:actually|instead|make it|change (?:it|that) to|rather|correction)\b").unwrap()
    });
    let users = super::actions::user_steps(ctx);
    let person = users[..users.partition_point(|&u| u < i)]
        .iter()
        .map(|&u| (ctx.hierarchy.evidence[u].as_slice(), REVISES.is_match(&t.steps[u].content)));
    let mut out: Vec<f64> = Vec::new();
    for (ev, revises) in std::iter::once((task.as_slice(), false)).chain(person) {
        if revises && ev.iter().any(|e| e.kind == EvidenceKind::Number && e.context.is_none()) {
            out.clear();
        }
        for e in ev.iter().filter(|e| e.kind == EvidenceKind::Number && e.context.is_none()) {
            let Ok(x) = e.key.parse::<f64>() else { continue };
            let year = x.fract() == 0.0 && (1000.0..=2100.0).contains(&x);
            if x > 1.0 && !year && !out.iter().any(|o| (o - x).abs() < 1e-12) {
                out.push(x);
            }
            if out.len() >= MAX_OPERANDS {
                return out;
            }
        }
    }
    out
}

/// The byte range of the sentence of `text` around byte `at` ([`crate::text::sentence_around`]).
fn sentence_around(text: &str, at: usize) -> std::ops::Range<usize> {
    crate::text::sentence_around(text, at, at)
}

/// Whether the number `key`, written at byte `at` of `text` and stated by the step as a
/// percentage (one of `percents`), is a ratio `r` (0 < r < 1, written with a decimal point)
/// written on the same line within [`RATIO_REACH`] bytes, as a percentage: `100 × r` ("a hazard
/// ratio of 0.82, i.e. 82% of the risk") or its complement `100 × (1 − r)` ("reduced the risk by
/// 18% (HR 0.82)"), at the precision `key` is written with. The bounds of a range ("95% CI
/// 0.69-0.84") are no such ratio.
pub(super) fn ratio_percent(text: &str, at: usize, key: &str, percents: &[f64]) -> bool {
    static RATIO: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"(?:^|[^\d.,])(0\.\d+)\b").unwrap());
    let Ok(v) = key.parse::<f64>() else { return false };
    if !percents.iter().any(|p| (p - v).abs() < 1e-9) {
        return false;
    }
    let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |p| at + p);
    let mut from = at.saturating_sub(RATIO_REACH).max(line_start);
    let mut to = (at + RATIO_REACH).min(line_end);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    while !text.is_char_boundary(to) {
        to -= 1;
    }
    let tol = written_tolerance(key);
    let window = &text[from..to];
    RATIO
        .captures_iter(window)
        .filter_map(|c| c.get(1))
        .filter(|m| !range_bound(window, m.start(), m.end()))
        .filter_map(|m| m.as_str().parse::<f64>().ok())
        .any(|r| r > 0.0 && r < 1.0 && ((100.0 * r - v).abs() <= tol || (100.0 * (1.0 - r) - v).abs() <= tol))
}

/// Whether the number at `start..end` of `text` is a bound of a range (`0.69-0.84`, `0.69 to
/// 0.84`, `0.69–0.84`): an interval's bounds are not the ratio it gives the interval of.
fn range_bound(text: &str, start: usize, end: usize) -> bool {
    static AFTER: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"^\s*(?:-|–|to)\s*\d").unwrap());
    static BEFORE: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\d\s*(?:-|–|to)\s*$").unwrap());
    AFTER.is_match(&text[end..]) || BEFORE.is_match(&text[..start])
}

/// How many steps back [`rounded_figure`] and [`spread_bound`] look for the value a stated one
/// rounds or bounds.
const OBSERVED_WINDOW: usize = 400;

/// A word of approximation right before a number, in any case, a currency sign between them
/// allowed ("~1,200", "about 1,200", "roughly $3.5", "just under 2,000"). Group 1 holds a word
/// that puts the value below the figure ("nearly", "almost", "just under"), group 2 one that
/// puts it above ("just over").
static APPROX_BEFORE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)(?:~|≈|\b(?:about|around|roughly|approximately|approx\.?|some|close to|(nearly|almost|just under)|(just over)))\s*[$€£]?\s*$",
    )
    .unwrap()
});

/// A scale word right after a number's digits ("3.4 million", "1.2 bn"), captured.
static SCALE_AFTER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"(?i)^[\s\u{a0}]*(thousand|million|mn|billion|bn|trillion)\b").unwrap()
});

/// A figure as a sentence writes it ("6,412,880", "1588457", "41.6").
static FIGURE: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?").unwrap());

/// The numbers (evidence values) that the [`OBSERVED_WINDOW`] steps before step `i` write,
/// distinct, in no order.
fn observed_before(ctx: &Context<'_>, i: usize) -> Vec<f64> {
    let mut out: Vec<f64> = (i.saturating_sub(OBSERVED_WINDOW)..i)
        .flat_map(|j| ctx.hierarchy.evidence[j].iter())
        .filter(|e| e.kind == EvidenceKind::Number)
        .filter_map(|e| e.key.parse::<f64>().ok())
        .filter(|x| x.is_finite())
        .collect();
    out.sort_by(f64::total_cmp);
    out.dedup();
    out
}

/// A figure told as a rounding: what [`rounding`] reads off the words around it.
#[derive(Debug, PartialEq)]
struct Rounding {
    /// The stated value, its scale word applied (1.6e6 for "1.6 million").
    stated: f64,
    /// The unit of rounding, its scale word applied (1e5 for "1.6 million", 100 for "1,200").
    unit: f64,
    /// Where the finer figure lies: below the stated one (-1, "nearly"), above it (1, "just
    /// over"), or either side (0).
    side: i8,
}

impl Rounding {
    /// Whether `x` is a finer figure this one rounds: another value, within half a unit of the
    /// stated one, on its side.
    fn rounds(&self, x: f64) -> bool {
        let d = x - self.stated;
        let eps = 1e-9 * self.stated.abs().max(1.0);
        d.abs() > eps && d.abs() <= self.unit / 2.0 + eps && (self.side == 0 || d * f64::from(self.side) > 0.0)
    }
}

/// The rounding that the number `key`, written at byte `at` of `text`, is told as: introduced by
/// a word of approximation ([`APPROX_BEFORE`]) or followed by a scale word ([`SCALE_AFTER`]),
/// at the unit [`rounding_unit`] gives it, with two significant digits or more unless a scale
/// word follows ("about 40" is 40 ones, "2 million" 2 millions, "about 7" no rounding).
fn rounding(text: &str, at: usize, key: &str) -> Option<Rounding> {
    let v = key.parse::<f64>().ok().filter(|v| *v > 0.0)?;
    let rest = text.get(at..).unwrap_or("").trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ',');
    let scale = SCALE_AFTER.captures(rest).map(|c| match c[1].to_ascii_lowercase().as_str() {
        "thousand" => 1e3,
        "million" | "mn" => 1e6,
        "billion" | "bn" => 1e9,
        _ => 1e12,
    });
    let approx = APPROX_BEFORE.captures(&text[..at]);
    if scale.is_none() && approx.is_none() {
        return None;
    }
    let side = match &approx {
        Some(c) if c.get(1).is_some() => -1,
        Some(c) if c.get(2).is_some() => 1,
        _ => 0,
    };
    let unit = rounding_unit(key, if scale.is_some() { 1 } else { 2 })?;
    let scale = scale.unwrap_or(1.0);
    Some(Rounding { stated: v * scale, unit: unit * scale, side })
}

/// The unit (a power of ten) of the number `key` as written, read as a rounding that keeps
/// `least` significant digits or more: that of its last digit written, a decimal's trailing
/// zeros counting ("4.1" 0.1, "1.60" 0.01, "3400" 100), except that a whole number's trailing
/// zeros, which do not say whether they are significant, count as far as `least` needs ("500"
/// with two is 50 tens: 10; "40" 40 ones: 1). `None` when `key` keeps fewer ("7", "0.5" with
/// two).
fn rounding_unit(key: &str, least: usize) -> Option<f64> {
    let (decimals, zeros) = match key.split_once('.') {
        Some((_, d)) => (d.len(), 0),
        None => (0, key.len() - key.trim_end_matches('0').len()),
    };
    let digits = significant_digits(key);
    let missing = least.saturating_sub(digits);
    if digits == 0 || missing > zeros {
        return None;
    }
    Some(10f64.powi((zeros - missing) as i32 - decimals as i32))
}

/// Whether the number `key`, written at byte `at` of step `i`'s `text`, is a rounded form of a
/// finer figure that its sentence ([`sentence_around`]) or one of the [`OBSERVED_WINDOW`] steps
/// before writes, so no value the agent made up: "about 1,200 requests" after a log's 1,187,
/// "~4.1 s" after 4.06 s, "about 1.6 million" after `"population": 1588457`, "~18%" after an
/// earlier step's fraction 0.179 (a percentage rounds the fraction it is). The figure is told
/// as a rounding ([`rounding`]) when a word of approximation introduces it ("~", "≈", "about",
/// "around", "roughly", "approximately", "approx.", "some", "close to", "nearly", "almost",
/// "just under", "just over") or a scale word follows it ("thousand", "million", "mn",
/// "billion", "bn", "trillion"). Its unit of rounding is that of its last significant digit,
/// and it keeps two significant digits or more unless a scale word follows ([`rounding_unit`]):
/// any number rounds to some one-digit figure, so "about 40 ms" is no restatement of 41.6. The
/// finer figure differs from the stated one by half a unit or less, below it after "nearly",
/// "almost" or "just under", above it after "just over".
pub(super) fn rounded_figure(ctx: &Context<'_>, i: usize, text: &str, at: usize, key: &str) -> bool {
    let Some(r) = rounding(text, at, key) else { return false };
    let sentence = sentence_around(text, at);
    // A percentage rounds a fraction as well: "~18%" after a series of 0.179, 0.184, 0.183.
    let percent = PERCENT_AFTER.is_match(&text[at..]);
    let finer = |x: f64| r.rounds(x) || percent && x > 0.0 && x < 1.0 && r.rounds(x * 100.0);
    FIGURE
        .find_iter(&text[sentence])
        .filter_map(|m| m.as_str().replace(',', "").parse::<f64>().ok())
        .any(|x| r.rounds(x))
        || observed_before(ctx, i).into_iter().any(finer)
}

/// The temperature scale (`'C'` or `'F'`) of a number that ends at byte `end` of `text`: `°C`,
/// `°F` (or `º`, one space allowed before the sign) or "degrees Celsius / Fahrenheit" right after
/// it; `None` for any other number.
fn temperature_scale(text: &str, end: usize) -> Option<char> {
    static SCALE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^\s?(?:[°º]\s?([CF])\b|(?i:degrees?\s+(c)elsius|degrees?\s+(f)ahrenheit))").unwrap()
    });
    let rest = text.get(end..)?;
    // Most numbers are followed by no degree sign and no "degree": skip the regex for them.
    let next = rest.strip_prefix(' ').unwrap_or(rest);
    if !next.starts_with(['°', 'º', 'd', 'D']) {
        return None;
    }
    let c = SCALE.captures(rest)?;
    let letter = c.get(1).or(c.get(2)).or(c.get(3))?.as_str();
    Some(if letter.eq_ignore_ascii_case("c") { 'C' } else { 'F' })
}

/// Whether the temperature `key`, written by step `i` at `start..end` of `text` with a scale
/// ([`temperature_scale`]: `°C`, `°F`), is a temperature of the other scale that the step or one
/// of the [`OBSERVED_WINDOW`] steps before writes, converted (°F = °C × 9/5 + 32) at the
/// precision `key` is written with, or a finer figure of the same scale cut to that precision:
/// "95°F (35.0°C)", "89.1°F" after a script printed 89.06 (a measurement's decimals, unlike a
/// price's, are no figure of their own). docs/METHODS.md, "Values in context".
pub(super) fn temperature(ctx: &Context<'_>, i: usize, text: &str, start: usize, end: usize, key: &str) -> bool {
    let Some(scale) = temperature_scale(text, end) else { return false };
    let Ok(v) = key.parse::<f64>() else { return false };
    let decimals = key.split_once('.').map_or(0, |(_, d)| d.len());
    let unit = 10f64.powi(-(decimals as i32));
    let same = |x: f64| (x * 10f64.powi(decimals as i32)).round() / 10f64.powi(decimals as i32);
    let converts = |x: f64, from: char| {
        let c = if from == scale {
            // The same scale: only a finer figure, cut to `key`'s decimals, is a rounding of it.
            let finer = format!("{x}").split_once('.').is_some_and(|(_, d)| d.len() > decimals);
            if !finer {
                return false;
            }
            x
        } else if scale == 'C' {
            (x - 32.0) * 5.0 / 9.0
        } else {
            x * 9.0 / 5.0 + 32.0
        };
        (same(c) - v).abs() <= unit * 1e-6
    };
    // The step's own temperatures of the other scale ("95°F (35.0°C)").
    let converted_own = FIGURE.find_iter(text).filter(|m| m.start() != start).any(|m| {
        let x = m.as_str().replace(',', "").parse::<f64>().ok();
        x.zip(temperature_scale(text, m.end())).is_some_and(|(x, from)| from != scale && converts(x, from))
    });
    // An earlier figure, whose scale the output may not write: cut finer to `key`'s decimals, or,
    // for a figure precise enough that a chance match is unlikely (three significant digits),
    // converted from the other scale.
    let other = if scale == 'C' { 'F' } else { 'C' };
    converted_own
        || observed_before(ctx, i)
            .into_iter()
            .any(|x| converts(x, scale) || significant_digits(key) >= 3 && converts(x, other))
}

/// Whether the decimal `key` (written by step `i`, with a decimal point and three significant
/// digits or more) is a finer figure that one of the [`OBSERVED_WINDOW`] steps before writes,
/// written with two decimals more or longer, cut to the decimals `key` has: "CAGR = 0.2434" after
/// a calculator's 0.243399117. Told without a word of approximation, so only a figure precise
/// enough that matching by chance is unlikely counts: "0.24" after a longer figure does not, nor
/// "12.4" after a price of 12.35 (one decimal dropped is another figure, not a rounding).
pub(super) fn plain_rounding(ctx: &Context<'_>, i: usize, key: &str) -> bool {
    let Some((_, decimals)) = key.split_once('.') else { return false };
    if significant_digits(key) < 3 || decimals.is_empty() {
        return false;
    }
    let Ok(v) = key.parse::<f64>() else { return false };
    let scale = 10f64.powi(decimals.len() as i32);
    observed_before(ctx, i).into_iter().any(|x| {
        let finer = format!("{x}").split_once('.').is_some_and(|(_, d)| d.len() >= decimals.len() + 2);
        finer && ((x * scale).round() / scale - v).abs() <= 1e-9 * v.abs().max(1.0)
    })
}

/// Whether the decimal `key` (written by step `i` in `text`, three significant digits or more,
/// between 0 and 2) is a growth factor `1 + r` or `1 − r` of a rate `r` (0 < r < 1) that the
/// same step writes or one of the [`OBSERVED_WINDOW`] steps before it wrote, at the precision
/// `key` is written with: "4.1 × 1.2434^4 = 9.80" after "= 0.2434" (or a calculator's
/// 0.243399117) checks a compound rate with its own figure.
pub(super) fn growth_factor(ctx: &Context<'_>, i: usize, text: &str, key: &str) -> bool {
    let Ok(v) = key.parse::<f64>() else { return false };
    if !key.contains('.') || significant_digits(key) < 3 || !(0.0..2.0).contains(&v) {
        return false;
    }
    let tol = super::written_tolerance(key);
    let own = FIGURE.find_iter(text).filter_map(|m| m.as_str().replace(',', "").parse::<f64>().ok());
    own.chain(observed_before(ctx, i))
        .filter(|r| *r > 0.0 && *r < 1.0)
        .any(|r| ((1.0 + r) - v).abs() <= tol || ((1.0 - r) - v).abs() <= tol)
}

/// A number followed by a percent sign or word ("18%", "18 %", "18 percent"), matched from the
/// number's first byte.
static PERCENT_AFTER: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"^[\d.,]+[ \t\u{a0}]*(?:%|percent\b|per cent\b)").unwrap());

/// A bound word right before a number: "up to 4,140", "at most 4140 s", "no more than", "at
/// least 3,060".
static BOUND_BEFORE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"(?i)\b(?:up to|at most|no more than|at least)[ \t]*[$€£]?[ \t]*$").unwrap()
});

/// A percentage as written ("15%", "12.5 %"): the number captured.
static PERCENT: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"(?:^|[^\d.])(\d{1,2}(?:\.\d+)?)[ \t]*%").unwrap());

/// A fraction as written ("0.15", "jitter=0.1"): one to three decimals, no digit or point
/// joined to it.
static FRACTION: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"(?:^|[^\d.])(0\.\d{1,3})(?:$|[^\d.])").unwrap());

/// At most this many distinct fractions are tried by [`spread_bound`].
const MAX_FRACTIONS: usize = 32;

/// Whether the number `key`, written at byte `at` of step `i`'s `text` right after a bound word
/// ([`BOUND_BEFORE`]: "up to", "at most", "no more than", "at least"), is `y × (1 + f)` or `y ×
/// (1 − f)`, at the precision `key` is written with, for a number `y` one of the
/// [`OBSERVED_WINDOW`] steps before wrote and a fraction `f` (0 < f < 1) that the run wrote up to
/// this step, as a percentage ("15%") or a decimal ("0.15"): "the TTL is up to 4,140 s" after a
/// base of 3600 s and a jitter of 15% is the bound the run's own figures give, not an invented
/// one. The bound needs three significant digits or more, which keeps a round figure from being
/// sourced by any pair; at most [`MAX_FRACTIONS`] fractions are tried.
pub(super) fn spread_bound(ctx: &Context<'_>, i: usize, text: &str, at: usize, key: &str) -> bool {
    if !BOUND_BEFORE.is_match(&text[..at]) {
        return false;
    }
    let Ok(v) = key.parse::<f64>() else { return false };
    let significant: String = key.chars().filter(char::is_ascii_digit).collect();
    if v <= 0.0 || significant.trim_start_matches('0').trim_end_matches('0').len() < 3 {
        return false;
    }
    let mut fractions: Vec<f64> = Vec::new();
    for j in (i.saturating_sub(OBSERVED_WINDOW)..=i).rev() {
        let page = &ctx.trajectory.steps[j].content;
        let percents = PERCENT.captures_iter(page).filter_map(|c| c[1].parse::<f64>().ok()).map(|p| p / 100.0);
        let decimals = FRACTION.captures_iter(page).filter_map(|c| c[1].parse::<f64>().ok());
        for f in percents.chain(decimals).filter(|f| *f > 0.0 && *f < 1.0) {
            if !fractions.iter().any(|g| (g - f).abs() < 1e-12) {
                fractions.push(f);
            }
        }
        if fractions.len() >= MAX_FRACTIONS {
            fractions.truncate(MAX_FRACTIONS);
            break;
        }
    }
    if fractions.is_empty() {
        return false;
    }
    let tol = written_tolerance(key);
    observed_before(ctx, i)
        .into_iter()
        .filter(|y| *y > 0.0 && (y - v).abs() > tol)
        .any(|y| fractions.iter().any(|f| (y * (1.0 + f) - v).abs() <= tol || (y * (1.0 - f) - v).abs() <= tol))
}

/// The unit that the name of the JSON member (or `name=` / `name:` field) holding the number at
/// byte `start` of `text` gives, in lower case: `mb` for `"remaining_mb": 8210`, `ms` for
/// `latencyMs=412`, `bytes` for `size_bytes: 1048576`. The name's last part after `_`, `-` or a
/// change to upper case is the unit when it is one; empty when no such name stands right before
/// the number.
pub(crate) fn member_unit(text: &str, start: usize) -> String {
    let before = text[..start].trim_end_matches([' ', '\t']);
    let Some(before) = before.strip_suffix([':', '=']) else { return String::new() };
    let before = before.trim_end_matches([' ', '\t']);
    let before = before.strip_suffix(['"', '\'']).unwrap_or(before);
    let name_start = before
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        .last()
        .map_or(before.len(), |(p, _)| p);
    let name = &before[name_start..];
    // The last part: after `_` or `-`, or from the last upper-case letter of a camelCase name.
    let part = match name.rfind(['_', '-']) {
        Some(p) => &name[p + 1..],
        None => {
            let upper = name.char_indices().rfind(|(p, c)| *p > 0 && c.is_ascii_uppercase());
            match upper {
                Some((p, _)) => &name[p..],
                None => return String::new(),
            }
        }
    };
    let part = part.to_ascii_lowercase();
    let known = [
        "b", "bytes", "kb", "kib", "mb", "mib", "gb", "gib", "tb", "tib", "ms", "s", "sec", "secs", "seconds", "min",
        "mins", "minutes", "h", "hr", "hrs", "hours", "mm", "cm", "m", "km", "g", "kg", "mg",
    ];
    if known.contains(&part.as_str()) { part } else { String::new() }
}

/// Whether step `i` comes before anything the run observed, in a trace that records no task:
/// no tool output and no turn of another speaker stands before it. Such a step has only the
/// prompt to go on, and the trace does not hold the prompt (`codex exec --json` writes none), so
/// no value it states can be called invented for want of an earlier source.
pub(super) fn before_unrecorded_prompt_ends(ctx: &Context<'_>, i: usize) -> bool {
    let t = ctx.trajectory;
    t.task.trim().is_empty()
        && !t.steps[..i].iter().any(|s| s.kind == StepKind::ToolResult || s.agent != t.steps[i].agent)
}

/// Whether, in a trace that records no task, the value written `written` by step `i` is
/// confirmed by a tool output of the [`CONFIRM_WINDOW`] steps after it, which writes it too (with
/// no digit joined to it: the date `2026-07-01` in `orders_2026-07-01.csv`, a count in a log
/// line). Without the prompt, a value the run then finds in the world is taken to come from the
/// prompt. With a task recorded this does not hold: the task is the source the value lacks.
pub(super) fn confirmed_later(ctx: &Context<'_>, i: usize, written: &str) -> bool {
    let t = ctx.trajectory;
    if !t.task.trim().is_empty() || written.is_empty() {
        return false;
    }
    let n = t.steps.len();
    (i + 1..n.min(i + 1 + CONFIRM_WINDOW)).filter(|&k| t.steps[k].kind == StepKind::ToolResult).any(|k| {
        let page = &t.steps[k].content;
        page.match_indices(written).any(|(p, m)| {
            let before = page[..p].chars().next_back();
            let after = page[p + m.len()..].chars().next();
            // No digit (or decimal point and digit) joined to it on either side.
            let joined_before = before.is_some_and(|c| c.is_ascii_digit() || c == '.');
            let joined_after = after.is_some_and(|c| c.is_ascii_digit())
                || after == Some('.') && page[p + m.len() + 1..].starts_with(|c: char| c.is_ascii_digit());
            !(joined_before || joined_after)
        })
    })
}

/// How many steps back [`timestamp_gap`] reads for the record it works a duration out of.
const SOURCE_WINDOW: usize = 60;

/// At most this many timestamps of one record are paired by [`timestamp_gap`].
const MAX_TIMESTAMPS: usize = 200;

/// An ISO-8601 date and time (`2026-03-04T09:42:00Z`, `2026-03-04 09:42:10.5+01:00`): date,
/// hours, minutes, optional seconds and offset captured.
static ISO_TIME: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:(Z)|([+-])(\d{2}):?(\d{2}))?",
    )
    .unwrap()
});

/// The seconds since 1970-01-01 of an [`ISO_TIME`] match (UTC when it gives no offset).
fn epoch_seconds(c: &regex::Captures<'_>) -> Option<i64> {
    let n = |k: usize| c.get(k).map_or(Some(0), |m| m.as_str().parse::<i64>().ok());
    let (y, m, d) = (n(1)?, n(2)?, n(3)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let offset = match c.get(8).map(|m| m.as_str()) {
        Some(sign) => (n(9)? * 3600 + n(10)? * 60) * if sign == "-" { -1 } else { 1 },
        None => 0,
    };
    Some(days * 86_400 + n(4)? * 3600 + n(5)? * 60 + n(6)? - offset)
}

/// Whether the number `key`, written in `text` from byte `start` with a unit of time right after
/// its digits ("77 minutes", "1.3 h", "45 s", "2 days"), is the time between two ISO-8601
/// timestamps that one step of the [`SOURCE_WINDOW`] steps before step `i` writes (a job's
/// `started_at` and `finished_at`), at the precision `key` is written with: the agent works the
/// duration out of the record. At most [`MAX_TIMESTAMPS`] timestamps of a step are read, sorted,
/// and each paired by a binary search, so a long run stays linear.
pub(super) fn timestamp_gap(ctx: &Context<'_>, i: usize, text: &str, start: usize, key: &str) -> bool {
    static UNIT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^[\s\u{a0}]*(?:(s|secs?|seconds?)|(min|mins|minutes?)|(h|hrs?|hours?)|(days?))\b").unwrap()
    });
    let Ok(v) = key.parse::<f64>() else { return false };
    let rest = text.get(start..).unwrap_or("").trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ',');
    let Some(unit) = UNIT.captures(rest) else { return false };
    let per = [1.0, 60.0, 3600.0, 86_400.0][(1..=4).find(|&k| unit.get(k).is_some()).unwrap_or(1) - 1];
    if v <= 0.0 {
        return false;
    }
    let (gap, tol) = (v * per, written_tolerance(key) * per);
    let t = ctx.trajectory;
    (i.saturating_sub(SOURCE_WINDOW)..i).rev().any(|j| {
        let mut times: Vec<i64> = ISO_TIME
            .captures_iter(&t.steps[j].content)
            .take(MAX_TIMESTAMPS)
            .filter_map(|c| epoch_seconds(&c))
            .collect();
        if times.len() < 2 {
            return false;
        }
        times.sort_unstable();
        times.iter().any(|&a| {
            let lo = a as f64 + gap - tol;
            let k = times.partition_point(|&b| (b as f64) < lo);
            times.get(k).is_some_and(|&b| b > a && (b as f64) <= a as f64 + gap + tol)
        })
    })
}

/// The significant digits of a number as written (`key` without thousands separators): leading
/// zeros and, for a whole number, trailing zeros do not count ("40" has 1, "4.0" 2, "1200" 2).
fn significant_digits(key: &str) -> usize {
    let digits: String = key.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_start_matches('0');
    if key.contains('.') { digits.len() } else { digits.trim_end_matches('0').len() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits_leave_out_leading_and_whole_trailing_zeros() {
        assert_eq!(significant_digits("40"), 1);
        assert_eq!(significant_digits("4.0"), 2);
        assert_eq!(significant_digits("1200"), 2);
        assert_eq!(significant_digits("0.05"), 1);
        assert_eq!(significant_digits("3412880"), 6);
    }

    #[test]
    fn a_sum_or_difference_of_two_sourced_figures_of_its_sentence_is_worked_out() {
        let text = "For 1,200 we ship 800 from A and 400 from B. Or 2000 in all.\nA second 400 here.";
        let at = |n: &str| text.find(n).unwrap();
        let sourced = [(1200.0, at("1,200")), (800.0, at("800"))];
        assert!(sourced_sum(text, at("400"), "400", &sourced));
        assert!(!sourced_sum(text, at("400"), "500", &sourced));
        // The operands are in another sentence: not this statement's arithmetic.
        assert!(!sourced_sum(text, text.rfind("400").unwrap(), "400", &sourced));
        // A single operand is no arithmetic; a year is never worked out.
        assert!(!sourced_sum(text, at("400"), "400", &[(800.0, at("800"))]));
        assert!(!sourced_sum(text, at("2000"), "2000", &sourced));
    }

    #[test]
    fn a_percentage_is_a_ratio_on_its_line_or_its_complement() {
        let text = "lowered readmissions by 27% (odds ratio 0.73), ordinary 73% of the risk\nratio 0.50";
        let at = text.find("27").unwrap();
        assert!(ratio_percent(text, at, "27", &[27.0, 73.0]));
        let at73 = text.find("73%").unwrap();
        assert!(ratio_percent(text, at73, "73", &[27.0, 73.0]));
        // Not a percentage the step states, or no ratio on the line that gives it.
        assert!(!ratio_percent(text, at, "27", &[73.0]));
        assert!(!ratio_percent("down 50%\nratio 0.50", 5, "50", &[50.0]));
        // The bounds of an interval are not the ratio.
        let ci = "31% fewer (RR 0.76, 95% CI 0.69-0.84; or 0.69 to 0.84)";
        assert!(!ratio_percent(ci, 0, "31", &[31.0, 95.0]));
        assert!(ratio_percent(ci, 0, "24", &[24.0, 95.0]));
    }

    #[test]
    fn a_rounding_keeps_two_significant_digits() {
        // 12 hundreds, 50 tens, 41 tenths; "1" and "0.5" keep one digit at any unit.
        assert_eq!(rounding_unit("1200", 2), Some(100.0));
        assert_eq!(rounding_unit("500", 2), Some(10.0));
        assert!((rounding_unit("4.1", 2).unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(rounding_unit("1", 2), None);
        assert_eq!(rounding_unit("0.5", 2), None);
        assert!(APPROX_BEFORE.is_match("roughly $"));
        assert!(APPROX_BEFORE.is_match("at ~"));
        assert!(!APPROX_BEFORE.is_match("about the "));
        assert!(BOUND_BEFORE.is_match("may reach up to "));
        assert!(!BOUND_BEFORE.is_match("set up "));
    }

    #[test]
    fn a_timestamp_is_read_with_its_offset() {
        let at = |s: &str| epoch_seconds(&ISO_TIME.captures(s).unwrap()).unwrap();
        assert_eq!(at("1970-01-02T00:00:00Z"), 86_400);
        assert_eq!(at("2026-03-04T10:05:00Z") - at("2026-03-04T08:48:00Z"), 77 * 60);
        assert_eq!(at("2026-03-04T10:00:00+01:00"), at("2026-03-04T09:00:00Z"));
        assert_eq!(at("2026-03-01 00:00") - at("2026-02-28 23:30"), 1800);
    }

    #[test]
    fn a_member_s_name_gives_its_unit() {
        let json = r#"{"remaining_mb": 8210, "latencyMs":412, "size_bytes" : 9, "count": 3}"#;
        assert_eq!(member_unit(json, json.find("8210").unwrap()), "mb");
        assert_eq!(member_unit(json, json.find("412").unwrap()), "ms");
        assert_eq!(member_unit(json, json.find("9,").unwrap()), "bytes");
        assert_eq!(member_unit(json, json.find("3}").unwrap()), "");
        assert_eq!(member_unit("sent 4 items", 5), "");
        assert_eq!(member_unit("elapsed_s=12.5", 10), "s");
    }

    #[test]
    fn a_rounding_is_read_off_its_words_at_the_unit_of_its_last_significant_digit() {
        let read = |text: &str, key: &str| rounding(text, text.find(|c: char| c.is_ascii_digit()).unwrap(), key);
        let r = |stated: f64, unit: f64, side: i8| Some(Rounding { stated, unit, side });
        assert_eq!(read("about 1,200 failed", "1200"), r(1200.0, 100.0, 0));
        assert_eq!(read("nearly 1,100", "1100"), r(1100.0, 100.0, -1));
        assert_eq!(read("just over 2,000", "2000"), r(2000.0, 100.0, 1));
        // A scale word needs no word of approximation, and one significant digit is enough.
        assert_eq!(read("1.6 million people", "1.6"), r(1.6e6, 1e5, 0));
        assert_eq!(read("some 2 million", "2"), r(2e6, 1e6, 0));
        // A decimal's trailing zero is written precision: "4.10" is 410 hundredths.
        assert_eq!(read("about 4.10 s", "4.10"), r(4.1, 0.01, 0));
        assert_eq!(read("about 7 runs", "7"), None);
        assert_eq!(read("at 1,200 rpm", "1200"), None);
    }

    /// `check` asked of the last step of `messages` (an OpenAI chat log, `(role, content)`):
    /// called with the run's context, that step's index and its text.
    fn on_last_step(messages: &[(&str, &str)], check: impl Fn(&Context<'_>, usize, &str) -> bool) -> bool {
        let log: Vec<_> = messages.iter().map(|(r, c)| serde_json::json!({"role": r, "content": c})).collect();
        let bytes = serde_json::to_vec(&log).expect("serialises");
        let t = crate::ingest::parse("run.json", &bytes, None).expect("a chat log").trajectories.remove(0);
        let sub = crate::substrate::Substrate::build(&t);
        let ctx = Context::of(&t, &sub, false);
        let i = t.steps.len() - 1;
        check(&ctx, i, &t.steps[i].content)
    }

    /// Whether the figure `written` ("1,200") of the last message of `messages` is a rounded
    /// figure.
    fn rounded_in(messages: &[(&str, &str)], written: &str) -> bool {
        on_last_step(messages, |ctx, i, text| {
            rounded_figure(ctx, i, text, text.find(written).expect("written"), &written.replace(',', ""))
        })
    }

    #[test]
    fn a_longer_figure_cut_to_three_significant_digits_or_more_is_a_plain_rounding() {
        let plain = |log: &str, answer: &str, key: &str| {
            let messages = [("user", "What is the CAGR?"), ("user", log), ("assistant", answer)];
            on_last_step(&messages, |ctx, i, _| plain_rounding(ctx, i, key))
        };
        assert!(plain("calculator: 0.243399117", "CAGR = 0.2434, 24.3% per year.", "0.2434"));
        assert!(plain("calculator: 12.34567", "It is 12.35.", "12.35"));
        assert!(!plain("price: 12.35", "It is 12.4.", "12.4"));
        // Two significant digits may match any longer figure by chance; the same decimals are
        // no rounding; a figure the longer one does not round to is none.
        assert!(!plain("calculator: 0.243399117", "CAGR = 0.24.", "0.24"));
        assert!(!plain("calculator: 0.2434", "CAGR = 0.2434.", "0.2434"));
        assert!(!plain("calculator: 0.243399117", "CAGR = 0.2433.", "0.2433"));
    }

    #[test]
    fn one_plus_a_rate_the_run_wrote_is_a_growth_factor() {
        let factor = |log: &str, answer: &str, key: &str| {
            let messages = [("user", "What is the CAGR?"), ("user", log), ("assistant", answer)];
            on_last_step(&messages, |ctx, i, text| growth_factor(ctx, i, text, key))
        };
        // The rate in the same step, or a longer one an earlier step wrote.
        assert!(factor("calculator: 9.8", "CAGR = 0.2434. Check: 4.1 × 1.2434^4 = 9.80.", "1.2434"));
        assert!(factor("calculator: 0.243399117", "Check: 4.1 × 1.2434^4 = 9.80.", "1.2434"));
        // A decline: 1 − r.
        assert!(factor("calculator: 0.0815", "Each year keeps 0.9185 of the fleet.", "0.9185"));
        // No rate behind it, or too few digits to tell it from chance.
        assert!(!factor("calculator: 9.8", "Check: 4.1 × 1.2434^4 = 9.80.", "1.2434"));
        assert!(!factor("calculator: 0.2", "A factor of 1.2 a year.", "1.2"));
    }

    #[test]
    fn a_whole_figure_with_one_non_zero_digit_rounds_at_two_significant_digits() {
        let run = |log: &'static str, answer: &'static str| {
            [("user", "How many requests failed?"), ("user", log), ("assistant", answer)]
        };
        // 496 is 50 tens; 460 only 5 hundreds, a one-digit rounding any number has.
        assert!(rounded_in(&run("The log counts 496 failures.", "About 500 requests failed."), "500"));
        assert!(!rounded_in(&run("The log counts 460 failures.", "About 500 requests failed."), "500"));
        // After "just over" the finer figure lies above the stated one; after "just under" below.
        assert!(!rounded_in(&run("The log counts 496 failures.", "Just over 500 requests failed."), "500"));
        assert!(rounded_in(&run("The log counts 496 failures.", "Just under 500 requests failed."), "500"));
        // Written to the hundredth, 4.10 is no rounding of 4.06.
        assert!(rounded_in(&run("The median took 4.06 s.", "It takes about 4.1 s."), "4.1"));
        assert!(!rounded_in(&run("The median took 4.06 s.", "It takes about 4.10 s."), "4.10"));
    }

    #[test]
    fn the_finer_figure_is_read_in_the_sentence_or_in_any_of_the_steps_before() {
        // Its own sentence writes the finer figure.
        assert!(rounded_in(&[("assistant", "About 1,200 requests (1,187) failed.")], "1,200"));
        // A step 81 steps back (more than 60, fewer than 400), and not a tool's output.
        let mut far = vec![("user", "Last week 1,187 requests failed.")];
        far.extend((0..80).map(|k| (if k % 2 == 0 { "assistant" } else { "user" }, "ok")));
        far.push(("assistant", "About 1,200 requests failed last week."));
        assert!(rounded_in(&far, "1,200"));
        far.push(("assistant", "About 1,300 requests failed last week."));
        assert!(!rounded_in(&far, "1,300"));
    }
}
