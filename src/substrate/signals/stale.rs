//! A value used after a state change replaced it: the statement balance read before the fee was
//! waived, proposed as the payment although `waive_fee` returned `"new_statement_balance"`; the
//! old API key written into the secret right after `keys create` printed the new one. The agent
//! read both outputs; it acts on the older. docs/METHODS.md, "Grounding".

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::{Context, changes_state, finding, grounding::json_of, links, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::evidence::{self, EvidenceKind};
use crate::model::StepKind;
use crate::prose;

/// How many steps back from the use the replacing output and the first reading are looked for.
const STALE_WINDOW: usize = 60;

/// An identifier or secret as tools print one: a prefix of letters and underscores ending in `_`
/// (`pk_live_`, `ghp_`, `sk_test_`), then 10 or more letters and digits.
static TOKEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b([A-Za-z][A-Za-z]*(?:_[A-Za-z]+)*_)([A-Za-z0-9]{10,})\b").unwrap());

/// The numeric members of a JSON value, as (last member name, number as normalised text).
fn numeric_members(v: &Value, key: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Number(n) => out.push((key.to_string(), evidence::normalize_number(&n.to_string()))),
        Value::Array(a) => a.iter().for_each(|x| numeric_members(x, key, out)),
        Value::Object(o) => o.iter().for_each(|(k, x)| numeric_members(x, k, out)),
        _ => {}
    }
}

/// Whether member `later` names the new value of member `earlier`: the name with a word of
/// change before it (`new_statement_balance`, `updated_balance`, `remaining_balance` for
/// `balance`).
fn renames(earlier: &str, later: &str) -> bool {
    let (e, l) = (earlier.to_ascii_lowercase(), later.to_ascii_lowercase());
    ["new_", "updated_", "current_", "remaining_", "revised_", "adjusted_"]
        .iter()
        .any(|p| l.strip_prefix(p) == Some(e.as_str()))
}

/// The tool output at step `b` answers a state-changing call ([`changes_state`]).
fn after_change(ctx: &Context<'_>, b: usize) -> Option<usize> {
    let c = links(ctx).produced_by.get(b).copied().flatten()?;
    changes_state(ctx.trajectory, c).then_some(c)
}

/// Step `i`, a state-changing call or an agent's message, uses a value that a state change made
/// since its reading replaced:
/// - a number that a tool output at step `a` gives as member `K`, where a later output `b`
///   (`a < b < i`) answering a state-changing call gives member `new_K` (`updated_K`,
///   `remaining_K`…) another value, which step `i` does not use (a member named `K` again is as
///   often another record's: the refund of another order);
/// - an identifier or secret ([`TOKEN`]: `pk_live_51Hx…`) first printed at step `a`, where a
///   later output `b` answering a state-changing call prints another of the same prefix and
///   length (within 3), which step `i` does not use.
///
/// Numbers under 10 without decimals are not read (counts and flags repeat by chance).
pub(super) fn superseded_value(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    let acts = s.kind == StepKind::ToolCall && changes_state(t, i);
    let tells = s.kind == StepKind::Message && !super::actions::served_person(s);
    if !acts && !tells {
        return;
    }
    let from = i.saturating_sub(STALE_WINDOW);
    let outputs: Vec<usize> = (from..i).filter(|&r| t.steps[r].kind == StepKind::ToolResult).collect();
    if outputs.is_empty() {
        return;
    }
    let content = &s.content;
    // Numbers: the step's own values, read against the members of the outputs before it.
    let used: Vec<String> = ctx.hierarchy.evidence[i]
        .iter()
        .filter(|e| e.kind == EvidenceKind::Number && e.context.is_none())
        .map(|e| e.key.clone())
        .filter(|k| k.contains('.') || k.parse::<f64>().is_ok_and(|v| v.abs() >= 10.0))
        .collect();
    if !used.is_empty() {
        let members: Vec<(usize, Vec<(String, String)>)> = outputs
            .iter()
            .filter_map(|&r| {
                let v = json_of(&t.steps[r].content)?;
                let mut m = Vec::new();
                numeric_members(&v, "", &mut m);
                (!m.is_empty()).then_some((r, m))
            })
            .collect();
        for key in &used {
            // The first output that gives the value, and the member it gives it as.
            let Some((a, name)) =
                members.iter().find_map(|(r, m)| m.iter().find(|(_, v)| v == key).map(|(k, _)| (*r, k)))
            else {
                continue;
            };
            // Only a member named as the new value of the one read counts: a member of the same
            // name in a later output is as often another record's (the refund of another order
            // after a return) as the same record's.
            let newer = members.iter().filter(|(b, _)| *b > a).find_map(|(b, m)| {
                let c = after_change(ctx, *b)?;
                m.iter()
                    .find(|(k, v)| v != key && !used.contains(v) && renames(name, k))
                    .map(|(k, v)| (*b, c, k.clone(), v.clone()))
            });
            if let Some((b, c, new_name, new_value)) = newer {
                let tool = t.steps[c].tool_name.as_deref().unwrap_or("the call");
                out.push(finding(
                    Signal::IgnoredResult,
                    weights::MISREAD,
                    prose![
                        format!("uses {key} (\"{name}\" at step "),
                        Part::Step(a),
                        "), but step ",
                        Part::Step(b),
                        format!(", after {tool}, gives \"{new_name}\": {new_value}")
                    ],
                ));
                return;
            }
        }
    }
    // Identifiers and secrets.
    for m in TOKEN.captures_iter(content) {
        let (token, prefix) = (m.get(0).map_or("", |x| x.as_str()), &m[1]);
        if prefix.len() < 3 || !token.chars().any(|c| c.is_ascii_digit()) {
            continue;
        }
        let Some(a) = outputs.iter().copied().find(|&r| t.steps[r].content.contains(token)) else { continue };
        let newer = outputs.iter().copied().filter(|&b| b > a).find_map(|b| {
            let c = after_change(ctx, b)?;
            TOKEN
                .captures_iter(&t.steps[b].content)
                .map(|x| x.get(0).map_or("", |y| y.as_str()).to_string())
                .find(|other| {
                    other != token
                        && other.starts_with(prefix)
                        && other.len().abs_diff(token.len()) <= 3
                        && !content.contains(other.as_str())
                })
                .map(|other| (b, c, other))
        });
        if let Some((b, c, other)) = newer {
            let what = super::call_command(t, c)
                .map(|cmd| format!("`{}`", crate::text::clip(&cmd, 50)))
                .unwrap_or_else(|| t.steps[c].tool_name.clone().unwrap_or_else(|| "the call".into()));
            out.push(finding(
                Signal::IgnoredResult,
                weights::MISREAD,
                prose![
                    format!("uses {}, read at step ", crate::text::clip(token, 40)),
                    Part::Step(a),
                    ", but step ",
                    Part::Step(b),
                    format!(", after {what}, gives a new one: {}", crate::text::clip(&other, 40))
                ],
            ));
            return;
        }
    }
}
