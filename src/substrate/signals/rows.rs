//! An address read from the neighbouring line of a listing: `grep -n -B1 -A1 eu-central-2
//! docs/regions.md` shows the eu-central-2 row with `https://api.zrh.nimbus.example` and the
//! eu-north-1 row under it with `https://api.arn.nimbus.example`, and the agent writes "the
//! eu-central-2 endpoint is https://api.arn.nimbus.example". docs/METHODS.md, "Grounding".

use std::sync::LazyLock;

use regex::Regex;

use super::{Context, contains_word, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// How many steps back the listing is looked for.
const WINDOW: usize = 40;

/// A URL, up to a blank, a quote or a closing bracket.
static URL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"https?://[^\s)\]>"'`|,]+[^\s)\]>"'`|,.]"#).unwrap());

/// A line number `grep -n` or `cat -n` puts before a line: `19:`, `18-`, `  7→`.
static LINE_NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*\d+(?:[:\-→\t])").unwrap());

/// The label of a listing's line: its first cell (`| eu-central-2 | …`) or its first word, after
/// a line number; `None` when shorter than three characters or without a letter.
fn label(line: &str) -> Option<&str> {
    let line = LINE_NUMBER.find(line).map_or(line, |m| &line[m.end()..]);
    let first = match line.trim_start().strip_prefix('|') {
        Some(rest) => rest.split('|').next()?.trim(),
        None => line.split_whitespace().next()?.trim_matches(|c: char| !c.is_alphanumeric()),
    };
    (first.len() >= 3 && first.chars().any(char::is_alphabetic)).then_some(first)
}

/// Step `i`, an agent's message or thought, names in a sentence a line of an earlier tool
/// output (within [`WINDOW`] steps) by its label ([`label`]), and states there a URL that the
/// output gives on another line, whose label the sentence does not name, while the named line
/// gives another URL: the address was read from the neighbouring line.
pub(super) fn neighbour_line_url(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if !matches!(step.kind, StepKind::Message | StepKind::Thought)
        || super::actions::served_person(step)
        || !step.content.contains("://")
    {
        return;
    }
    for sentence in crate::text::sentences(&step.content) {
        for v in URL.find_iter(sentence).map(|m| m.as_str()) {
            for j in (i.saturating_sub(WINDOW)..i).rev() {
                let s = &t.steps[j];
                if s.kind != StepKind::ToolResult || !s.content.contains(v) {
                    continue;
                }
                let lines: Vec<&str> = s.content.lines().collect();
                let Some(holder) = lines.iter().find(|l| URL.find_iter(l).any(|u| u.as_str() == v)) else { continue };
                let Some(held_by) = label(holder) else { break };
                if contains_word(sentence, held_by) {
                    break;
                }
                // The line the sentence names, with another URL.
                let named = lines.iter().filter(|l| *l != holder).find_map(|l| {
                    let name = label(l).filter(|n| contains_word(sentence, n))?;
                    let there = URL.find(l)?.as_str();
                    (there != v && !sentence.contains(there)).then_some((name, there))
                });
                let Some((name, there)) = named else { break };
                out.push(finding(
                    Signal::IgnoredResult,
                    weights::MISREAD,
                    prose![
                        format!("states {v} for {name}, but step "),
                        Part::Step(j),
                        format!(" gives it on the {held_by} line; the {name} line gives {there}"),
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
    fn a_listing_line_s_label_is_its_first_cell_or_word() {
        assert_eq!(label("19:| eu-central-2   | Zurich     | https://api.zrh.nimbus.example  |"), Some("eu-central-2"));
        assert_eq!(label("20-| eu-north-1 | Stockholm |"), Some("eu-north-1"));
        assert_eq!(label("staging  https://stg.example.com"), Some("staging"));
        assert_eq!(label("| 12 | x |"), None);
    }
}
