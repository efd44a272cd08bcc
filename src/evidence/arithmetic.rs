//! Calculations written out in a text and checked: "€2,000 − €640 − €520 = €1,040" is a slip
//! (it comes to 840). Lexical, no IO; the finding that uses it is
//! `substrate::signals::arithmetic::miscalculation` (docs/METHODS.md, "Grounding").

use std::sync::LazyLock;

use regex::Regex;

/// A written calculation on one line: two or more numbers (a currency sign may lead each; thousands
/// grouped with commas) joined by `+`, `*`, `×`, `÷`, `/`, `−` (the minus sign), or by `-`, `–`
/// and `x` with blanks around them (so dates, ranges and sizes such as `1920x1080` are no
/// calculation), then `=` and the result, which may carry a sign, a currency sign and a `%`. A
/// currency may also be written as its ISO code and a blank before the figure (`EUR 695`).
/// Group `expr` is the calculation, `result` the result as written, `pct` the `%` after it.
static CALCULATION: LazyLock<Regex> = LazyLock::new(|| {
    const CURRENCY: &str =
        r"(?:[$€£]|(?:EUR|USD|GBP|CHF|JPY|CAD|AUD|NZD|SEK|NOK|DKK|PLN|CZK|INR|CNY|HKD|SGD|MXN|BRL|ZAR)[ \t])";
    let num = format!(r"{CURRENCY}?[ \t]?(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?");
    const OP: &str = r"(?:[ \t]*[+*×÷/−][ \t]*|[ \t]+[-–x][ \t]+)";
    Regex::new(&format!(
        r"(?:^|[^\w.,:/$€£-])(?P<expr>{num}(?:{OP}{num})+)[ \t]*=[ \t]*(?P<result>[-−]?{CURRENCY}?[ \t]?(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?)(?P<pct>%)?(?:$|[^\d.,%:/])"
    ))
    .unwrap()
});

/// The value of a written calculation ([`CALCULATION`]'s `expr`, or any text of numbers and
/// operators): `*`, `×`, `x`, `/`, `÷` before `+`, `-`, `−`, `–`, left to right; a `-` where a
/// number is due is its sign; currency signs and thousands commas dropped (`15,870` is one
/// number). `None` on a division by zero, on an operator last, or on nothing to read.
pub fn value(expr: &str) -> Option<f64> {
    static TOKEN: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+*×x/÷−–]").unwrap());
    let mut terms: Vec<f64> = Vec::new();
    let (mut pending, mut sign, mut expect_number) = (None::<char>, 1.0, true);
    for m in TOKEN.find_iter(expr) {
        let t = m.as_str();
        if expect_number {
            if t == "-" {
                sign = -sign;
                continue;
            }
            let n = sign * t.replace(',', "").parse::<f64>().ok()?;
            sign = 1.0;
            match pending.take() {
                Some('*' | '×' | 'x') => *terms.last_mut()? *= n,
                Some('/' | '÷') if n != 0.0 => *terms.last_mut()? /= n,
                Some('/' | '÷') => return None,
                Some('-' | '−' | '–') => terms.push(-n),
                _ => terms.push(n),
            }
            expect_number = false;
        } else {
            pending = t.chars().next();
            expect_number = true;
        }
    }
    (!expect_number).then(|| terms.iter().sum())
}

/// A number as written (`€1,040`, `−60`, `208.50`): its value and its count of decimals.
fn written_number(s: &str) -> Option<(f64, i32)> {
    let negative = s.starts_with(['-', '−']);
    let digits: String = s.chars().filter(|c| c.is_ascii_digit() || *c == '.').collect();
    let v: f64 = digits.parse().ok()?;
    let decimals = digits.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    Some((if negative { -v } else { v }, decimals))
}

/// Whether `result` (written with `decimals` decimals, a percentage when `percent`) is what the
/// calculation gives, at that precision: `1,040 / 3 = 347` and `1 / 3 = 0.33` hold, and so does
/// `640 / 2000 = 32%`.
fn holds(got: f64, result: f64, decimals: i32, percent: bool) -> bool {
    let tol = 0.5 * 10f64.powi(-decimals) + 1e-9 * result.abs().max(1.0);
    (got - result).abs() <= tol || percent && (got * 100.0 - result).abs() <= tol
}

/// The wrong calculations of a text, outside fenced code: per slip, the calculation as written
/// (markdown emphasis taken out) and what it comes to, rounded to the result's precision.
pub fn slips(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || !line.contains('=') {
            continue;
        }
        // Emphasis and inline code marks around the figures are no part of them.
        let plain = line.replace("**", "").replace("__", "").replace('`', "");
        for c in CALCULATION.captures_iter(&plain) {
            let (expr, result) = (&c["expr"], &c["result"]);
            let Some(got) = value(expr) else { continue };
            let Some((r, decimals)) = written_number(result) else { continue };
            if holds(got, r, decimals, c.name("pct").is_some()) {
                continue;
            }
            let percent = c.name("pct").is_some();
            let v = if percent { got * 100.0 } else { got };
            let shown = format!("{v:.prec$}{}", if percent { "%" } else { "" }, prec = decimals.max(0) as usize);
            let written = format!("{} = {}{}", expr.trim(), result.trim(), if percent { "%" } else { "" });
            out.push((crate::text::clip(&written, 80), shown));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::slips;

    #[test]
    fn a_wrong_result_is_a_slip_with_what_it_comes_to() {
        let plan =
            "3. Daily spending = **€2,000 − €640 − €520 = €1,040**\n   → over 5 days: €1,040 / 5 = **€208 per day**";
        assert_eq!(slips(plan), vec![("€2,000 − €640 − €520 = €1,040".to_string(), "840".to_string())]);
        assert_eq!(slips("So 12 x 7 = 74 hours in all."), vec![("12 x 7 = 74".to_string(), "84".to_string())]);
        assert_eq!(
            slips("| Hotel Bellecour Royal | 9.0 | 3 x 265 = EUR 695 | 695 + 176 = EUR 871 |"),
            vec![("3 x 265 = EUR 695".to_string(), "795".to_string())]
        );
        assert_eq!(slips("a share of 640 / 2000 = 36%"), vec![("640 / 2000 = 36%".to_string(), "32%".to_string())]);
    }

    #[test]
    fn right_results_rounded_results_and_what_is_no_calculation_are_not_slips() {
        for text in [
            "€2,000 − €640 − €520 = €840, so €840 / 5 = €168 a day",
            "1,040 / 3 = 347 and 1 / 3 = 0.33",
            "640 / 2000 = 32%",
            "4 × €128 = €512",
            "3 x 149 = EUR 447 and EUR 447 + EUR 176 = EUR 623",
            "12 - 3 = 9; 100 – 1 = 99",
            "Window 1920x1080 = full HD",
            "from 2025-05-12 = day one",
            "the range 10-20 = typical",
            "10:05 - 07:05 = 3h",
            "version 1.2 + 3 = 4.2? no: v1.2 + 3",
            "```python\ntotal = 2000 - 640 - 520 = 1040\n```",
            "x = 5",
            "-- 2 + 2 = 5 is a famous line",
        ] {
            let s = slips(text);
            if text.starts_with("-- ") {
                // A quoted line is still written arithmetic.
                assert_eq!(s.len(), 1, "{text}");
                continue;
            }
            assert!(s.is_empty(), "{text}: {s:?}");
        }
    }
}
