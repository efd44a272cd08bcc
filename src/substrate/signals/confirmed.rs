//! A state-changing call that does something else than what the user confirmed: the agent
//! proposed a change with its amount ("Shall I credit $42.50 to your card?"), the user said yes,
//! and the call then passes another amount, or names records the proposal did not. The confirmed
//! values are read from the agent's proposal and the user's confirming turn; the call's from its
//! JSON arguments. docs/METHODS.md, "Actions".

use super::actions::{MONEY, affirms, amount_value, asks, currency_codes, is_human, money_values};
use super::call_arguments;
use super::{Context, changes_state, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// Currency codes an amount's key may carry (`total_usd`).
const CURRENCIES: [&str; 10] = ["usd", "eur", "gbp", "chf", "cad", "aud", "jpy", "sek", "nok", "dkk"];

/// Whether an argument's key names a sum of money (`amount`, `refund_amount`, `total`, `price`,
/// `credit`). `total` with another word names a sum only when that word is one of money
/// (`total_cost`, `total_due`): `total_baggages` and `total_items` count things.
fn is_money_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    let words: Vec<&str> = k.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let money = |w: &str| {
        matches!(w, "amount" | "price" | "sum" | "credit" | "charge" | "value" | "cost" | "due" | "paid" | "fee")
    };
    words.iter().any(|w| money(w))
        || words.contains(&"total") && words.iter().all(|w| *w == "total" || money(w) || CURRENCIES.contains(w))
        || k.ends_with("amount")
}

/// The sentences of an agent's message that ask the user ([`asks`]), joined by line breaks. A
/// sentence ends at `.`, `!` or `?` before a space or the end, or at a line break (a decimal
/// point does not end one).
fn asking_sentences(text: &str) -> String {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (k, b) in bytes.iter().enumerate() {
        let ends =
            matches!(b, b'.' | b'!' | b'?') && bytes.get(k + 1).is_none_or(u8::is_ascii_whitespace) || *b == b'\n';
        if ends {
            let sentence = &text[start..=k];
            if asks(sentence) {
                out.push(sentence.trim());
            }
            start = k + 1;
        }
    }
    if start < text.len() && asks(&text[start..]) {
        out.push(text[start..].trim());
    }
    out.join("\n")
}

/// How many steps before a state-changing call [`beyond_confirmed`] looks for the confirming turn.
const CONFIRM_LOOKBACK: usize = 12;

/// The confirmation that call `i` acts on: the user's last turn before it (within
/// [`CONFIRM_LOOKBACK`] steps), which affirms ([`affirms`]), and the agent's message right
/// before that turn, which asks ([`asks`]). No other state-changing call of the agent may sit
/// between the confirmation and `i` (that call used it). Returns (proposal, confirmation).
fn confirmation_for(ctx: &Context<'_>, i: usize) -> Option<(usize, usize)> {
    let t = ctx.trajectory;
    let agent = &t.steps[i].agent;
    let from = i.saturating_sub(CONFIRM_LOOKBACK);
    let u = (from..i).rev().find(|&k| is_human(&t.steps[k]))?;
    if !affirms(&t.steps[u].content) || (u + 1..i).any(|k| t.steps[k].agent == *agent && changes_state(t, k)) {
        return None;
    }
    let p = (from..u).rev().find(|&k| t.steps[k].kind == StepKind::Message && !is_human(&t.steps[k]))?;
    (t.steps[p].agent == *agent && asks(&t.steps[p].content)).then_some((p, u))
}

/// Step `i`, a state-changing call right after the user confirmed the agent's proposal
/// ([`confirmation_for`]), passes a sum of money (an argument whose key names one:
/// [`is_money_key`]) that neither the proposal nor the confirming turn names, while they name a
/// sum ([`money_values`], one reader of written amounts with `signals::actions`); or a list of identifiers (`"line_ids": ["A1", "A2"]`) with one the
/// proposal and the confirmation do not name, while they name another of the list. The finding
/// quotes both values. Shell commands and edits are not read.
pub(crate) fn beyond_confirmed(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if s.kind != StepKind::ToolCall
        || !changes_state(t, i)
        || super::call_command(t, i).is_some()
        || super::edits(t, i)
        || !s.content.contains('{')
    {
        return;
    }
    let Some(args) = call_arguments(&s.content) else { return };
    let Some((p, u)) = confirmation_for(ctx, i) else { return };
    let said = format!("{}\n{}", t.steps[p].content, t.steps[u].content);
    // The sums the question itself names ("Shall I refund €129.00?"), else all the proposal's: a
    // price quoted as context ("two lids at €14.50 each") is no sum the user agreed to.
    let asked = format!("{}\n{}", asking_sentences(&t.steps[p].content), t.steps[u].content);
    let money_text = if money_values(&asked).is_empty() { said.as_str() } else { asked.as_str() };
    let confirmed = money_values(money_text);
    let tool = s.tool_name.as_deref().unwrap_or("the call");
    let mut parts: Vec<String> = Vec::new();
    let mut quoted: Vec<String> = Vec::new();
    if !confirmed.is_empty() {
        for (key, v) in &args {
            let Some(x) = v.as_f64().or_else(|| v.as_str().and_then(|x| x.trim().parse().ok())) else { continue };
            if is_money_key(key) && !confirmed.iter().any(|c| (c - x).abs() < 0.005) {
                parts.push(format!("{key} {}", v.to_string().trim_matches('"')));
                for m in MONEY.find_iter(money_text).map(|m| m.as_str().trim().to_string()) {
                    if !quoted.contains(&m) {
                        quoted.push(m);
                    }
                }
            }
        }
    }
    // The currency of a confirmed sum: "£2,400.00" confirmed, then `"amount": 2400, "currency":
    // "USD"`. The sum is the one agreed to; its currency is not.
    if let Some((ckey, code)) = args.iter().find_map(|(k, v)| {
        let code = v.as_str()?.trim();
        (k.to_ascii_lowercase().contains("currency")
            && code.len() == 3
            && code.chars().all(|c| c.is_ascii_alphabetic()))
        .then_some((k, code.to_ascii_uppercase()))
    }) {
        let sums: Vec<f64> = args
            .iter()
            .filter(|(k, _)| is_money_key(k))
            .filter_map(|(_, v)| v.as_f64().or_else(|| v.as_str().and_then(|x| x.trim().parse().ok())))
            .collect();
        let written = MONEY.captures_iter(money_text).find_map(|c| {
            let (n, cur) = (c.get(2).or(c.get(3))?, c.get(1).or(c.get(4))?);
            let x = amount_value(n.as_str())?;
            let codes = currency_codes(cur.as_str());
            (sums.iter().any(|s| (s - x).abs() < 0.005) && !codes.is_empty() && !codes.contains(&code.as_str()))
                .then(|| c.get(0).map_or("", |m| m.as_str()).trim().to_string())
        });
        if let Some(w) = written {
            parts.push(format!("{ckey} {code}"));
            quoted.push(w);
        }
    }
    for (key, v) in &args {
        let Some(items) = v.as_array() else { continue };
        let ids: Vec<&str> = items.iter().filter_map(|x| x.as_str()).filter(|x| !x.is_empty()).collect();
        let named = |id: &str| said.split(|c: char| !c.is_alphanumeric() && c != '-' && c != '_').any(|w| w == id);
        let (kept, added): (Vec<&str>, Vec<&str>) = ids.iter().partition(|id| named(id));
        if kept.is_empty() || added.is_empty() {
            continue;
        }
        parts.push(format!("{key} {}", ids.join(", ")));
        quoted.push(kept.join(", "));
    }
    if parts.is_empty() {
        return;
    }
    out.push(finding(
        Signal::ArgumentMismatch,
        weights::ARGUMENT_MISMATCH,
        prose![
            format!("{tool} passes {}, but the proposal at step ", parts.join(" and ")),
            Part::Step(p),
            " that the user confirmed at step ",
            Part::Step(u),
            format!(" names {}", quoted.join(" and ")),
        ],
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_of_money_are_read_with_their_currency() {
        assert_eq!(
            money_values("Shall I credit €129.00 to the card, or $ 1,204.50 or 42.5 USD?"),
            vec![129.0, 1204.5, 42.5]
        );
        assert_eq!(money_values("order 4471, 3 items"), Vec::<f64>::new());
    }

    #[test]
    fn the_sums_a_question_asks_about_are_told_from_prices_quoted_before_it() {
        let text =
            "Your order has the kettle (€89.90) and two filters at €6.50 each. Shall I refund €89.90 for the kettle?";
        assert_eq!(asking_sentences(text), "Shall I refund €89.90 for the kettle?");
        assert_eq!(asking_sentences("Done. Anything else?"), "Anything else?");
    }

    #[test]
    fn money_keys_are_told_from_others() {
        assert!(is_money_key("amount"));
        assert!(is_money_key("refund_amount"));
        assert!(is_money_key("creditAmount"));
        assert!(!is_money_key("order_id"));
        assert!(!is_money_key("quantity"));
        assert!(is_money_key("total"));
        assert!(is_money_key("total_usd"));
        assert!(is_money_key("total_cost"));
        assert!(!is_money_key("total_baggages"));
        assert!(!is_money_key("total_items"));
    }
}
