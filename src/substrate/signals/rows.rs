//! An address read from the neighbouring line of a listing: `grep -n -B1 -A1 eu-central-2
//! docs/regions.md` shows the eu-central-2 row with `https://api.zrh.nimbus.example` and the
//! eu-north-1 row under it with `https://api.arn.nimbus.example`, and the agent writes "the
//! eu-central-2 endpoint is https://api.arn.nimbus.example". Also a call that names one record
//! of a listing and passes a figure of the next one: `create_refund({"charge_id": "ch_3PqB8m",
//! "amount": 124.5})` where the listing gives ch_3PqB8m `"amount": 142.5` and the row under it
//! `"amount": 124.5`. docs/METHODS.md, "Grounding" and "Actions".

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

/// The arrays of two or more objects in a JSON value, nested ones too (at most 64 arrays).
fn record_lists<'v>(v: &'v serde_json::Value, out: &mut Vec<&'v [serde_json::Value]>) {
    if out.len() >= 64 {
        return;
    }
    match v {
        serde_json::Value::Array(a) => {
            if a.len() >= 2 && a.iter().all(serde_json::Value::is_object) {
                out.push(a);
            }
            a.iter().for_each(|x| record_lists(x, out));
        }
        serde_json::Value::Object(o) => o.values().for_each(|x| record_lists(x, out)),
        _ => {}
    }
}

/// Whether a figure is one a record could be told apart by: not a small whole number (a
/// quantity, a count of one or two, a flag).
fn distinctive(x: f64) -> bool {
    x.fract() != 0.0 || x.abs() >= 10.0
}

/// Step `i`, a tool call, names one record of a list an earlier tool output gave (within
/// [`WINDOW`] steps) by a string argument that only that record holds (`"charge_id":
/// "ch_3PqB8m"`), and passes a number (`"amount": 124.5`) that the record does not hold while
/// another record of the same list holds it under a member the named record gives another value
/// (`"amount": 142.5`): the figure was read from the wrong row. Small whole numbers are not read
/// (quantities), nor a figure the user gave (`derivation::asked`: a change to a new amount).
pub(super) fn value_from_other_record(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::ToolCall || !step.content.contains('{') {
        return;
    }
    let Some(args) = super::call_arguments(&step.content) else { return };
    let ids: Vec<&str> = args.values().filter_map(|v| v.as_str()).filter(|s| s.len() >= 3).collect();
    let figures: Vec<(&str, f64)> =
        args.iter().filter_map(|(k, v)| Some((k.as_str(), v.as_f64()?))).filter(|&(_, x)| distinctive(x)).collect();
    if ids.is_empty() || figures.is_empty() {
        return;
    }
    let mut asked: Option<Vec<f64>> = None;
    for j in (i.saturating_sub(WINDOW)..i).rev() {
        let s = &t.steps[j];
        if s.kind != StepKind::ToolResult || !ids.iter().any(|id| s.content.contains(id)) {
            continue;
        }
        let Some(json) = super::grounding::json_of(&s.content) else { continue };
        let mut lists = Vec::new();
        record_lists(&json, &mut lists);
        for list in lists {
            let holds = |r: &serde_json::Value, id: &str| {
                r.as_object().is_some_and(|o| o.values().any(|v| v.as_str() == Some(id)))
            };
            for id in &ids {
                let mut holders = list.iter().enumerate().filter(|(_, r)| holds(r, id));
                let (Some((at, named)), None) = (holders.next(), holders.next()) else { continue };
                let Some(named) = named.as_object() else { continue };
                for &(arg, x) in &figures {
                    let same = |v: &serde_json::Value| v.as_f64().is_some_and(|y| (y - x).abs() < 1e-9);
                    if named.values().any(same) {
                        continue;
                    }
                    let other = list.iter().enumerate().filter(|&(k, _)| k != at).find_map(|(k, r)| {
                        let (member, _) = r.as_object()?.iter().find(|(m, v)| {
                            same(v) && named.get(m.as_str()).and_then(serde_json::Value::as_f64).is_some()
                        })?;
                        Some((k, r, member.as_str()))
                    });
                    let Some((k, record, member)) = other else { continue };
                    let asked = asked.get_or_insert_with(|| super::derivation::asked(ctx, i));
                    if asked.iter().any(|a| (a - x).abs() < 1e-9) {
                        continue;
                    }
                    let own = named.get(member).map(ToString::to_string).unwrap_or_default();
                    // The other record's own name: its first string member that differs from the
                    // named record's.
                    let other_name = record
                        .as_object()
                        .and_then(|o| {
                            o.iter().find_map(|(m, v)| {
                                let v = v.as_str()?;
                                (named.get(m.as_str()).and_then(serde_json::Value::as_str) != Some(v)).then_some(v)
                            })
                        })
                        .unwrap_or("another record");
                    let place = if k == at + 1 {
                        "the next record"
                    } else if k + 1 == at {
                        "the record before it"
                    } else {
                        "another record"
                    };
                    out.push(finding(
                        Signal::ArgumentMismatch,
                        weights::MISREAD,
                        prose![
                            format!("passes {arg} {x} for {id}, but step "),
                            Part::Step(j),
                            format!(" gives {id} {member} {own}; {x} is the {member} of {place} ({other_name})"),
                        ],
                    ));
                    return;
                }
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
