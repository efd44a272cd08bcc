//! A quotation credited to someone other than the person the source credits it to: the
//! post-mortem says `"We rebuilt the failover path from scratch…," said Dev Patel, Chief
//! Technology Officer`, and the writer's item has `"We rebuilt the failover path from
//! scratch…," said CEO Marta Ruiz`. docs/METHODS.md, "Grounding".

use std::sync::LazyLock;

use regex::Regex;

use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// How many steps back the source of a quotation is looked for.
const WINDOW: usize = 80;

/// How far before or after a quotation its attribution is read, in bytes.
const REACH: usize = 120;

/// A quotation of six words or more, in straight or curly double quotes. Group 1 (or 2): its text.
static QUOTE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#""([^"\n]{30,600})"|“([^”\n]{30,600})”"#).unwrap());

/// A person's name: two or three capitalised words (`Dev Patel`, `Mary K. Lee`).
static NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b[A-Z][a-z]+(?:\s+[A-Z]\.)?(?:\s+[A-Z][a-z]+(?:-[A-Z][a-z]+)?){1,2}\b").unwrap());

/// Words of titles, roles and places that open or close a capitalised run without being a name.
const NOT_NAMES: [&str; 24] = [
    "Chief",
    "Officer",
    "Executive",
    "Technology",
    "Financial",
    "Operating",
    "Director",
    "President",
    "Vice",
    "Council",
    "Member",
    "Mayor",
    "Minister",
    "Senator",
    "Head",
    "Manager",
    "Senior",
    "Lead",
    "The",
    "Said",
    "According",
    "Source",
    "Newsroom",
    "Department",
];

/// The names of people in `text` ([`NAME`]), without title words ([`NOT_NAMES`]) and the runs
/// left with fewer than two words.
fn names(text: &str) -> Vec<String> {
    NAME.find_iter(text)
        .filter_map(|m| {
            let words: Vec<&str> = m.as_str().split_whitespace().filter(|w| !NOT_NAMES.contains(w)).collect();
            (words.len() >= 2).then(|| words.join(" "))
        })
        .collect()
}

/// The text around a quotation at `range` in `text`, outside it: up to [`REACH`] bytes before
/// (from the line's start) and after (to the line's end), where its attribution is written.
fn around(text: &str, range: std::ops::Range<usize>) -> String {
    let line_start = text[..range.start].rfind('\n').map_or(0, |p| p + 1);
    let line_end = text[range.end..].find('\n').map_or(text.len(), |p| range.end + p);
    let mut from = line_start.max(range.start.saturating_sub(REACH));
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let mut to = line_end.min(range.end + REACH);
    while !text.is_char_boundary(to) {
        to -= 1;
    }
    format!("{} {}", &text[from..range.start], &text[range.end..to])
}

/// A verb of speech that ties a quotation to its speaker: "said", "according to".
static SPEECH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:said|says|say|told|tells|stated|states|added|adds|wrote|writes|according to|noted|explained|remarked|recalled|warned)\b").unwrap()
});

/// The quotation's text cut to its first words, whitespace collapsed, for finding it elsewhere.
fn key(quote: &str) -> String {
    quote.split_whitespace().take(8).collect::<Vec<_>>().join(" ")
}

/// Where `text` quotes `k` ([`key`]), and the names around it ([`around`]).
fn attributed(text: &str, k: &str) -> Option<Vec<String>> {
    QUOTE.captures_iter(text).find_map(|c| {
        let q = c.get(1).or_else(|| c.get(2))?;
        let whole = c.get(0)?.range();
        (key(q.as_str()) == k).then(|| names(&around(text, whole)))
    })
}

/// Step `i`, an agent's message, thought or call, quotes six words or more ([`QUOTE`]) and
/// credits the quotation to a person ([`names`] around it, with a verb of speech: [`SPEECH`]) while the earliest earlier step of the
/// last [`WINDOW`] that quotes the same words credits them to other people only: the quotation
/// is given to the wrong person. Only the first step that gives it to that person is the finding.
pub(super) fn misattributed_quote(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind == StepKind::ToolResult
        || super::actions::served_person(step)
        || !step.content.contains(['"', '“'])
        || !SPEECH.is_match(&step.content)
    {
        return;
    }
    for c in QUOTE.captures_iter(&step.content) {
        let Some(q) = c.get(1).or_else(|| c.get(2)) else { continue };
        // The step credits the quotation to someone with a verb of speech (a title in quotes
        // beside a name is no quotation of that person).
        let beside = around(&step.content, c.get(0).map_or(q.range(), |m| m.range()));
        let claimed = names(&beside);
        if claimed.is_empty() || !SPEECH.is_match(&beside) {
            continue;
        }
        let k = key(q.as_str());
        let from = i.saturating_sub(WINDOW);
        // The earliest step quoting the same words with a name beside them.
        let Some((source, credited)) = (from..i).find_map(|j| {
            let found = attributed(&t.steps[j].content, &k)?;
            (!found.is_empty()).then_some((j, found))
        }) else {
            continue;
        };
        if credited.iter().any(|n| claimed.contains(n)) {
            continue;
        }
        // An earlier step of an agent already gave it to the same person: that one is the finding.
        let earlier = (source + 1..i).any(|j| {
            let s = &t.steps[j];
            s.kind != StepKind::ToolResult
                && !super::actions::served_person(s)
                && attributed(&s.content, &k).is_some_and(|n| n.iter().any(|n| claimed.contains(n)))
        });
        if earlier {
            return;
        }
        out.push(finding(
            Signal::IgnoredResult,
            weights::MISREAD,
            prose![
                format!("credits \"{}…\" to {}; step ", crate::text::clip(&k, 50), claimed.join(", "),),
                Part::Step(source),
                format!(" gives it to {}", credited.join(", ")),
            ],
        ));
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotations_are_credited_to_the_names_beside_them() {
        let source = "\"We rebuilt the failover path from scratch so that a single relay fault can never again cascade,\" said Dev Patel, Chief Technology Officer.";
        let k = "We rebuilt the failover path from scratch so";
        assert_eq!(attributed(source, k), Some(vec!["Dev Patel".to_string()]));
        let claim = "\"We rebuilt the failover path from scratch so that a single relay fault can never again cascade,\" said CEO Marta Ruiz.";
        assert_eq!(attributed(claim, k), Some(vec!["Marta Ruiz".to_string()]));
        let notes = "3. Dev Patel, Chief Technology Officer: \"We rebuilt the failover path from scratch so that a single relay fault can never again cascade.\"";
        assert_eq!(attributed(notes, k), Some(vec!["Dev Patel".to_string()]));
    }
}
