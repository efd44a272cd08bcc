//! What the user asked that a step then leaves out or turns round:
//! - [`dropped_constraint`]: a constraint the user stressed that a delegation leaves out: "the
//!   tests must stay 3.8-compatible", then a sub-agent asked to write the tests with no word of
//!   Python 3.8 (docs/METHODS.md, "Instructions");
//! - [`flag_against_request`]: a call's yes/no option set against the user's words for it: "let
//!   it run until the end of the period", then `cancel_subscription` with `at_period_end: false`
//!   (docs/METHODS.md, "Actions").

use std::sync::LazyLock;

use super::{Context, contains_word, edits, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// At most this many steps after a delegation the delegate's edits are looked for.
const DELEGATE_WINDOW: usize = 200;

/// A version of a language, runtime or platform the work must keep to: `Python 3.8`, `Node 18`,
/// `Go 1.20`, `Java 11`, `PostgreSQL 12`, `iOS 15`. Group 1 is the name, group 2 the version.
pub(super) static VERSION: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b(python|node(?:\.?js)?|go(?:lang)?|java|jdk|ruby|php|typescript|rust|swift|kotlin|\.net|dotnet|postgres(?:ql)?|mysql|django|rails|react|ios|android|ubuntu|debian|bash)\s*(?:>=\s*|≥\s*|version\s+|v)?(\d+(?:\.\d+){0,2})\b",
    )
    .unwrap()
});

/// Words that make a sentence a constraint the user insists on.
pub(super) static STRESSED: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b(must|important|still supports?|compatib\w*|requires?|required|need to|needs to|has to|have to|only|do not use|don't use|no newer|keep (?:it|them|the \w+) )",
    )
    .unwrap()
});

/// The sentences of a text: cut at a full stop, `!` or `?` followed by a space, and at line ends
/// (a version's own point, `3.8`, does not cut).
pub(super) fn sentences(text: &str) -> impl Iterator<Item = &str> {
    static CUT: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r"[.!?]\s+|\n").unwrap());
    CUT.split(text).map(str::trim).filter(|s| !s.is_empty())
}

/// Step `i`, a delegation, hands work to an agent that then edits files (within
/// [`DELEGATE_WINDOW`] steps), while a turn of the served user before it stresses a version
/// constraint ([`VERSION`] in a sentence with [`STRESSED`] words: "the tests must stay
/// 3.8-compatible", "we still support Node 16") and the delegation's text names neither that
/// version nor the constraint's sentence: the delegate never learns it. docs/METHODS.md,
/// "Instructions".
pub(super) fn dropped_constraint(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    let Some(delegate) = step.delegate_to.as_deref().filter(|_| step.kind == StepKind::Delegation) else { return };
    let prompt = step.content.to_lowercase();
    // The served user's turns before the delegation, the latest first.
    let users = ctx
        .facts
        .user_steps
        .get_or_init(|| (0..t.steps.len()).filter(|&j| super::actions::is_human(&t.steps[j])).collect());
    for &u in users.iter().rev().filter(|&&u| u < i) {
        for sentence in sentences(&t.steps[u].content) {
            if !STRESSED.is_match(sentence) {
                continue;
            }
            let Some(c) = VERSION.captures(sentence) else { continue };
            let version = c.get(2).map_or("", |m| m.as_str());
            let name = c.get(0).map_or("", |m| m.as_str());
            if !version.contains('.') && version.len() < 2 || contains_word(&prompt, version) {
                continue;
            }
            let end = t.steps.len().min(i + 1 + DELEGATE_WINDOW);
            let Some(edit) = (i + 1..end).find(|&k| t.steps[k].agent == delegate && edits(t, k)) else { return };
            out.push(finding(
                Signal::WrongDelegation,
                weights::WRONG_DELEGATION,
                prose![
                    format!("hands the work to {delegate} without the user's constraint \"{name}\" (step "),
                    Part::Step(u),
                    format!(": \"{}\"); {delegate} then edits files (step ", crate::text::first_line(sentence, 60)),
                    Part::Step(edit),
                    ")"
                ],
            ));
            return;
        }
    }
}

/// How many of the served user's turns before a call [`flag_against_request`] reads.
const REQUEST_TURNS: usize = 4;

/// Words that turn a sentence's request round ("not at the end of the period", "don't notify").
static NEGATED: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)\b(not|no|don't|do not|doesn't|never|without|instead of|rather than|skip)\b").unwrap()
});

/// The content words of an option's name (`at_period_end`: `period`, `end`; `notifyCustomer`:
/// `notify`, `customer`), lowercase, connecting words left out.
fn name_words(key: &str) -> Vec<String> {
    const CONNECTING: [&str; 16] =
        ["at", "to", "in", "on", "of", "the", "is", "by", "for", "and", "or", "a", "an", "with", "if", "be"];
    let mut words = Vec::new();
    let mut word = String::new();
    for c in key.chars() {
        if (c == '_' || c == '-' || c.is_uppercase()) && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words.retain(|w| w.len() >= 3 && !CONNECTING.contains(&w.as_str()));
    words
}

/// Whether `sentence` holds `word` or a form of it: the same first five letters ("periods" for
/// `period`, "notified" for `notify`), or the word itself when shorter.
fn holds(sentence: &[String], word: &str) -> bool {
    let stem: String = word.chars().take(5).collect();
    sentence.iter().any(|w| if word.len() < 5 { w == word } else { w.starts_with(&stem) })
}

/// Step `i`, a tool call whose JSON arguments set a yes/no option (`"at_period_end": false`,
/// `"notify_customer": true`) whose name has two content words or more ([`name_words`]), where a
/// sentence of one of the served user's last [`REQUEST_TURNS`] turns before it holds every one of
/// them and asks the other way: without a negation ([`NEGATED`]) it asks for the option
/// ("please let it run until the end of the period" against `at_period_end: false`), with one it
/// asks against it ("don't notify the customer" against `notify_customer: true`). The call does
/// the opposite of what the user asked (docs/METHODS.md, "Actions").
pub(super) fn flag_against_request(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::ToolCall || !(step.content.contains("false") || step.content.contains("true")) {
        return;
    }
    let (Some(a), Some(b)) = (step.content.find('{'), step.content.rfind('}')) else { return };
    let Some(serde_json::Value::Object(args)) =
        step.content.get(a..=b).and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok())
    else {
        return;
    };
    let options: Vec<(&String, bool, Vec<String>)> = args
        .iter()
        .filter_map(|(k, v)| Some((k, v.as_bool()?, name_words(k))))
        .filter(|(_, _, words)| words.len() >= 2)
        .collect();
    if options.is_empty() {
        return;
    }
    let users = ctx
        .facts
        .user_steps
        .get_or_init(|| (0..t.steps.len()).filter(|&j| super::actions::is_human(&t.steps[j])).collect());
    let before = users.partition_point(|&u| u < i);
    for &u in users[before.saturating_sub(REQUEST_TURNS)..before].iter().rev() {
        for sentence in sentences(&t.steps[u].content) {
            let words: Vec<String> = sentence
                .split(|c: char| !c.is_alphanumeric() && c != '\'')
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .collect();
            for (key, value, name) in &options {
                if !name.iter().all(|w| holds(&words, w)) {
                    continue;
                }
                let asks_for = !NEGATED.is_match(sentence);
                if asks_for == *value {
                    continue;
                }
                let tool = step.tool_name.as_deref().unwrap_or("the tool");
                out.push(finding(
                    Signal::ArgumentMismatch,
                    weights::ARGUMENT_MISMATCH,
                    prose![
                        format!("calls {tool} with {key} {value}, but the user asked \""),
                        crate::text::first_line(sentence, 70),
                        "\" (step ",
                        Part::Step(u),
                        ")"
                    ],
                ));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_in_a_stressed_sentence_is_a_constraint() {
        let s = "Convert the tests. Important: tinyrate still supports Python 3.8 (requires-python >=3.8 in pyproject), so the tests must stay 3.8-compatible.";
        let stressed: Vec<&str> = sentences(s).filter(|x| STRESSED.is_match(x)).collect();
        assert_eq!(stressed.len(), 1);
        let c = VERSION.captures(stressed[0]).expect("a version");
        assert_eq!((&c[1], &c[2]), ("Python", "3.8"));
        assert!(VERSION.captures("we use Node 18 in CI").is_some_and(|c| &c[2] == "18"));
        assert!(VERSION.captures("version 3.8 of the API").is_none());
    }

    #[test]
    fn an_option_s_name_is_read_as_its_content_words() {
        assert_eq!(name_words("at_period_end"), ["period", "end"]);
        assert_eq!(name_words("notifyCustomer"), ["notify", "customer"]);
        assert_eq!(name_words("prorate"), ["prorate"]);
        let said = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert!(holds(&said("until the end of the periods"), "period"));
        assert!(holds(&said("please notified them"), "notify"));
        assert!(!holds(&said("the endpoint"), "end"));
    }
}
