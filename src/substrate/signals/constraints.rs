//! A constraint the user stressed that a delegation leaves out: "the tests must stay
//! 3.8-compatible", then a sub-agent asked to write the tests with no word of Python 3.8.
//! docs/METHODS.md, "Instructions".

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
}
