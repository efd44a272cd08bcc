//! A currency conversion written the wrong way round: the quote says `"rate": 1.0842,
//! "rate_basis": "USD per 1 EUR"`, and the agent writes `€500.00 ÷ 1.0842 = $461.17`; euros
//! times dollars per euro give dollars, so the amount is $542.10. docs/METHODS.md, "Grounding".

use std::sync::LazyLock;

use regex::Regex;

use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// How many steps back the rate's quote is looked for.
const WINDOW: usize = 40;

/// A conversion written out: an amount with its currency (a symbol before or a code after), an
/// operator, a rate, `=`, and the result with its currency. Groups: symbol, amount, code,
/// operator, rate, symbol, result, code.
static WRITTEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"([€$£¥])?\s?(\d[\d,]*(?:\.\d+)?)\s?([A-Z]{3})?\s*([÷/×x*])\s*(\d+(?:\.\d+)?)\s*=\s*([€$£¥])?\s?(\d[\d,]*(?:\.\d+)?)\s?([A-Z]{3})?",
    )
    .unwrap()
});

/// A rate's basis: `USD per 1 EUR`, `USD per EUR`. Groups: the numerator's and the
/// denominator's codes.
static PER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b([A-Z]{3}) per (?:1 )?([A-Z]{3})\b").unwrap());

/// A currency pair: `EUR/USD`, whose rate is in the second currency per one of the first.
static PAIR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b([A-Z]{3})/([A-Z]{3})\b").unwrap());

/// The ISO code of a currency symbol.
fn code(symbol: &str) -> Option<&'static str> {
    Some(match symbol {
        "€" => "EUR",
        "$" => "USD",
        "£" => "GBP",
        "¥" => "JPY",
        _ => return None,
    })
}

/// The basis `(numerator, denominator)` of a rate a tool output gives: its `X per 1 Y`, else its
/// currency pair.
fn basis(text: &str) -> Option<(String, String)> {
    if let Some(c) = PER.captures(text) {
        return Some((c[1].to_string(), c[2].to_string()));
    }
    PAIR.captures(text).map(|c| (c[2].to_string(), c[1].to_string()))
}

/// Step `i`, an agent's message, thought or call, writes a conversion ([`WRITTEN`]) from one
/// currency to another with a rate that a tool output of the last [`WINDOW`] steps gives with its
/// basis ([`basis`]), and applies it the wrong way: it divides an amount in the rate's
/// denominator currency, or multiplies one in its numerator currency.
pub(super) fn converted_wrong_way(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind == StepKind::ToolResult
        || super::actions::served_person(step)
        || !step.content.contains('=')
        || !step.content.contains(['÷', '/', '×', 'x', '*'])
    {
        return;
    }
    for c in WRITTEN.captures_iter(&step.content) {
        let from = c.get(1).and_then(|m| code(m.as_str())).or_else(|| c.get(3).map(|m| m.as_str()));
        let to = c.get(6).and_then(|m| code(m.as_str())).or_else(|| c.get(8).map(|m| m.as_str()));
        let (Some(from), Some(to)) = (from, to) else { continue };
        if from == to {
            continue;
        }
        let rate = &c[5];
        let divides = matches!(&c[4], "÷" | "/");
        let Some((quoted, (num, den))) = (i.saturating_sub(WINDOW)..i).rev().find_map(|j| {
            let s = &t.steps[j];
            (s.kind == StepKind::ToolResult && super::contains_word(&s.content, rate))
                .then(|| basis(&s.content).map(|b| (j, b)))
                .flatten()
        }) else {
            continue;
        };
        let pair = |a: &str, b: &str| from == a && to == b;
        let wrong = if divides { pair(&den, &num) } else { pair(&num, &den) };
        if !wrong {
            continue;
        }
        let (Ok(amount), Ok(r)) = (c[2].replace(',', "").parse::<f64>(), rate.parse::<f64>()) else { continue };
        let right = if divides { amount * r } else { amount / r };
        out.push(finding(
            Signal::Miscalculation,
            weights::MISCALCULATION,
            prose![
                format!(
                    "converts {from} to {to} by {} {rate}, which step ",
                    if divides { "dividing by" } else { "multiplying by" }
                ),
                Part::Step(quoted),
                format!(" gives as {num} per 1 {den}: {} {from} is {right:.2} {to}, not {}", &c[2], &c[7]),
            ],
        ));
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_s_basis_is_read_from_its_words_or_its_pair() {
        assert_eq!(basis(r#""rate": 1.0842, "rate_basis": "USD per 1 EUR""#), Some(("USD".into(), "EUR".into())));
        assert_eq!(basis(r#""currency_pair": "EUR/USD", "rate": 1.0842"#), Some(("USD".into(), "EUR".into())));
        let c = WRITTEN.captures("Amount converted: €500.00 ÷ 1.0842 = $461.17").unwrap();
        assert_eq!((&c[2], &c[4], &c[5], &c[7]), ("500.00", "÷", "1.0842", "461.17"));
    }
}
