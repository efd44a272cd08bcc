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

/// One revision of a record a tool result returned.
struct Revision {
    /// The tool result's step.
    step: usize,
    /// The record's id ([`record_id`]).
    id: String,
    /// Its revision number ([`revision`]).
    rev: f64,
    /// The record as returned.
    record: serde_json::Map<String, Value>,
}

/// A revision member as a JSON text writes it (`"version": 2`), any case: the cheap test before
/// a tool result is parsed.
static REVISION_MEMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?i)"(?:version|revision|rev)"\s*:\s*\d"#).unwrap());

/// A member that numbers a record's revisions: `version`, `revision`, `rev` (any case).
fn is_version_key(k: &str) -> bool {
    matches!(k.to_ascii_lowercase().as_str(), "version" | "revision" | "rev")
}

/// A member that identifies a record: `id`, or a name ending in `_id` or `Id` (`quote_id`,
/// `orderId`), with a string value.
fn record_id(o: &serde_json::Map<String, Value>) -> Option<(&str, &str)> {
    o.iter().find_map(|(k, v)| {
        let id = k == "id" || k.ends_with("_id") || k.ends_with("Id");
        Some((k.as_str(), v.as_str()?)).filter(|_| id)
    })
}

/// The revision number of a record object ([`is_version_key`]), when it has one.
fn revision(o: &serde_json::Map<String, Value>) -> Option<f64> {
    o.iter().find(|(k, _)| is_version_key(k)).and_then(|(_, v)| v.as_f64())
}

/// Step `i`, a tool call, names a record (its id as an argument's value) that two earlier tool
/// results of the last [`STALE_WINDOW`] steps returned with a revision number
/// ([`is_version_key`]: `"version": 1`, then `"version": 2, "supersedes_version": 1`), and passes
/// the older one: its revision as an argument whose name holds `version` or `revision`, or a
/// figure of the older revision that the newer one changed (`"total": 18400` where version 2 says
/// 16560) and does not hold. The call acts on a superseded revision of the record: a purchase
/// order raised from the quote as it was before the discount.
pub(super) fn superseded_revision(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::ToolCall {
        return;
    }
    let Some(args) = super::call_arguments(&step.content) else { return };
    let ids: Vec<&str> = args.values().filter_map(Value::as_str).filter(|v| v.len() >= 2).collect();
    if ids.is_empty() {
        return;
    }
    // The records with a revision the window's results return, named by the call.
    let mut revisions: Vec<Revision> = Vec::new();
    for r in i.saturating_sub(STALE_WINDOW)..i {
        // Only a result that writes a revision member and one of the call's values is parsed.
        let content = &t.steps[r].content;
        if t.steps[r].kind != StepKind::ToolResult
            || !REVISION_MEMBER.is_match(content)
            || !ids.iter().any(|id| content.contains(id))
        {
            continue;
        }
        let Some(Value::Object(o)) = json_of(content) else { continue };
        let (Some((_, id)), Some(rev)) = (record_id(&o), revision(&o)) else { continue };
        if ids.contains(&id) {
            revisions.push(Revision { step: r, id: id.to_string(), rev, record: o.clone() });
        }
    }
    let Some(newest) = revisions.iter().max_by(|a, b| a.rev.total_cmp(&b.rev).then(a.step.cmp(&b.step))) else {
        return;
    };
    let (latest_step, id, latest) = (newest.step, newest.id.as_str(), newest.rev);
    for Revision { rev, record: old, .. } in revisions.iter().filter(|x| x.id == id && x.rev < latest) {
        // The older revision named by number.
        let by_number = args.iter().any(|(k, v)| {
            let k = k.to_ascii_lowercase();
            (k.contains("version") || k.contains("revision")) && v.as_f64() == Some(*rev)
        });
        // A figure of the older revision that the newer one changed.
        let changed: Vec<(&String, f64, f64)> = old
            .iter()
            .filter(|(k, _)| !is_version_key(k))
            .filter_map(|(k, v)| Some((k, v.as_f64()?, newest.record.get(k)?.as_f64()?)))
            .filter(|(_, a, b)| (a - b).abs() > 1e-9)
            .collect();
        let by_figure = changed.iter().find(|(_, a, b)| {
            args.values().any(|v| v.as_f64() == Some(*a)) && !args.values().any(|v| v.as_f64() == Some(*b))
        });
        if !by_number && by_figure.is_none() {
            continue;
        }
        let detail = match by_figure {
            Some((k, a, b)) => format!(" with {k} {} where it is now {}", number(*a), number(*b)),
            None => String::new(),
        };
        out.push(finding(
            Signal::IgnoredResult,
            weights::MISREAD,
            prose![
                format!("acts on revision {} of {id}{detail}; step ", number(*rev)),
                Part::Step(latest_step),
                format!(" returned revision {} of it", number(latest)),
            ],
        ));
        return;
    }
}

/// Names of a record's money figures: a member or argument named one of these, or ending or
/// starting in one with `_` (`grand_total`, `amount_due`, `total_price`).
const FIGURE_NAMES: [&str; 9] = ["total", "amount", "price", "cost", "subtotal", "balance", "fare", "due", "charge"];

/// Whether `k` names a money figure ([`FIGURE_NAMES`]), in snake or camel case.
fn is_figure_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    k.split('_').any(|w| FIGURE_NAMES.contains(&w)) || FIGURE_NAMES.iter().any(|f| k.starts_with(f) || k.ends_with(f))
}

/// One record a tool result returned, as [`replaced_figure`] reads it.
struct Returned {
    /// The tool result's step.
    step: usize,
    /// The record's id ([`record_id`]).
    id: String,
    record: serde_json::Map<String, Value>,
}

/// Step `i`, a tool call, passes a money figure ([`is_figure_key`]: `"amount": 120.0`) for a
/// record it names by id, where that figure is what an earlier tool result of the last
/// [`STALE_WINDOW`] steps returned for the record (`"cart_id": "C-1", "total": 120.0`) and the
/// latest result for the same record, later, returns another one (`"total": 108.0`, after a promo
/// code), which the call does not pass: the call charges, refunds or orders at a figure the run
/// had already seen replaced. Records with a revision number are read by
/// [`superseded_revision`].
pub(super) fn replaced_figure(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::ToolCall {
        return;
    }
    let Some(args) = super::call_arguments(&step.content) else { return };
    let passed: Vec<f64> = args.iter().filter(|(k, _)| is_figure_key(k)).filter_map(|(_, v)| v.as_f64()).collect();
    let ids: Vec<&str> = args.values().filter_map(Value::as_str).filter(|v| v.len() >= 3).collect();
    if passed.is_empty() || ids.is_empty() {
        return;
    }
    let mut returned: Vec<Returned> = Vec::new();
    for r in i.saturating_sub(STALE_WINDOW)..i {
        let content = &t.steps[r].content;
        if t.steps[r].kind != StepKind::ToolResult || !ids.iter().any(|id| content.contains(id)) {
            continue;
        }
        let Some(Value::Object(o)) = json_of(content) else { continue };
        if revision(&o).is_some() {
            continue;
        }
        if let Some((_, id)) = record_id(&o).filter(|(_, id)| ids.contains(id)) {
            returned.push(Returned { step: r, id: id.to_string(), record: o.clone() });
        }
    }
    // Only the latest record returned is the one in force.
    let Some(newest) = returned.last() else { return };
    for old in returned.iter().filter(|o| o.id == newest.id && o.step < newest.step) {
        let replaced = old.record.iter().filter(|(k, _)| is_figure_key(k)).find_map(|(k, v)| {
            let (a, b) = (v.as_f64()?, newest.record.get(k)?.as_f64()?);
            let stale = (a - b).abs() > 1e-9 && a.abs() > 1.0 && passed.contains(&a) && !passed.contains(&b);
            stale.then_some((k, a, b))
        });
        let Some((k, a, b)) = replaced else { continue };
        out.push(finding(
            Signal::IgnoredResult,
            weights::MISREAD,
            prose![
                format!("passes {} for {}, the {k} step ", number(a), newest.id),
                Part::Step(old.step),
                " returned; step ",
                Part::Step(newest.step),
                format!(", later, returned {k} {} for it", number(b)),
            ],
        ));
        return;
    }
}

/// Members of a record that say how much of something is left to use: stock, seats, balance.
const AVAILABILITY: [&str; 12] = [
    "available",
    "available_qty",
    "qty_available",
    "quantity_available",
    "in_stock",
    "stock",
    "balance",
    "available_balance",
    "remaining",
    "seats_available",
    "seats_left",
    "capacity",
];

/// Argument names of the quantity a state change takes.
const QUANTITY: [&str; 6] = ["qty", "quantity", "amount", "units", "count", "seats"];

/// Step `i`, an agent's message or thought, states a figure that an earlier tool result (within
/// [`STALE_WINDOW`] steps) gave as what is left of something ([`AVAILABILITY`]: `"available":
/// 120`), after which the same agent made a state change that takes from it: a call that
/// changes state ([`changes_state`]), names one of the record's identifiers (`"sku": "PMP-220"`),
/// takes a quantity ([`QUANTITY`]) and succeeded. The figure is what was left before the agent's
/// own change: "Rotterdam has 120 units available" after reserving 80 of its 120.
pub(super) fn consumed_since(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if !matches!(step.kind, StepKind::Message | StepKind::Thought) || super::actions::served_person(step) {
        return;
    }
    if !step.content.bytes().any(|b| b.is_ascii_digit()) {
        return;
    }
    // One pass over a result tells whether it writes an availability member.
    static MEMBER: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(&format!(r#""(?:{})"\s*:"#, AVAILABILITY.join("|"))).expect("a valid pattern"));
    let from = i.saturating_sub(STALE_WINDOW);
    // The latest tool result giving an availability member, and the figures it gives.
    let Some((read, record)) = (from..i).rev().find_map(|r| {
        let s = &t.steps[r];
        if s.kind != StepKind::ToolResult || !MEMBER.is_match(&s.content) {
            return None;
        }
        match json_of(&s.content)? {
            Value::Object(o) => Some((r, o)),
            _ => None,
        }
    }) else {
        return;
    };
    let Some((member, left)) =
        AVAILABILITY.iter().find_map(|k| Some((*k, record.get(*k)?.as_f64().filter(|v| *v > 1.0)?)))
    else {
        return;
    };
    let written = number(left);
    if !super::contains_word(&step.content, &written) {
        return;
    }
    let ids: Vec<&str> = record.values().filter_map(Value::as_str).filter(|v| v.len() >= 3).collect();
    let agent = &step.agent;
    for c in read + 1..i {
        let call = &t.steps[c];
        if call.kind != StepKind::ToolCall || !changes_state(t, c) || super::call_error(ctx, c).is_some() {
            continue;
        }
        if call.agent != *agent {
            continue;
        }
        let Some(args) = super::call_arguments(&call.content) else { continue };
        let names_record = args.values().filter_map(Value::as_str).any(|v| ids.contains(&v));
        let Some(taken) = QUANTITY.iter().find_map(|k| args.get(*k)?.as_f64().filter(|q| *q > 0.0 && *q <= left))
        else {
            continue;
        };
        if !names_record {
            continue;
        }
        // A later reading of what is left replaces the old one.
        if (c + 1..i)
            .any(|r| t.steps[r].kind == StepKind::ToolResult && t.steps[r].content.contains(&format!("\"{member}\"")))
        {
            return;
        }
        let tool = call.tool_name.as_deref().unwrap_or("the call");
        out.push(finding(
            Signal::IgnoredResult,
            weights::MISREAD,
            prose![
                format!("states {written}, the \"{member}\" step "),
                Part::Step(read),
                format!(" read, but {tool} at step "),
                Part::Step(c),
                format!(" took {} of it since: {} are left", number(taken), number(left - taken)),
            ],
        ));
        return;
    }
}

/// `18400` for 18400.0, `2.5` for 2.5.
fn number(x: f64) -> String {
    if x.fract() == 0.0 { format!("{x:.0}") } else { x.to_string() }
}

/// A status a record gives itself when it no longer holds: superseded, expired, deprecated,
/// retired, archived, withdrawn, obsolete, replaced, revoked (any case).
const SUPERSEDED_STATUS: [&str; 9] =
    ["superseded", "expired", "deprecated", "retired", "archived", "withdrawn", "obsolete", "replaced", "revoked"];

/// The mark by which a record says it no longer holds, as `member: value`: a status member
/// (`status`, `state`, `lifecycle`, `lifecycle_state`) with a [`SUPERSEDED_STATUS`] value, or a
/// `superseded_by` / `replaced_by` member (any case, camel case too) with a value that is not
/// null, false or empty. Read in the record and in the objects it holds (a `metadata` member), two
/// levels down.
fn superseded_mark(o: &serde_json::Map<String, Value>, depth: usize) -> Option<String> {
    for (k, v) in o {
        let key = k.to_ascii_lowercase().replace('_', "");
        let status = matches!(key.as_str(), "status" | "state" | "lifecycle" | "lifecyclestate");
        if status
            && let Some(s) = v.as_str()
            && SUPERSEDED_STATUS.contains(&s.trim().to_ascii_lowercase().as_str())
        {
            return Some(format!("\"{k}\": \"{s}\""));
        }
        if matches!(key.as_str(), "supersededby" | "replacedby") {
            match v {
                Value::String(s) if !s.trim().is_empty() => return Some(format!("\"{k}\": \"{s}\"")),
                Value::Object(_) | Value::Number(_) | Value::Bool(true) => return Some(format!("\"{k}\"")),
                _ => {}
            }
        }
    }
    if depth == 0 {
        return None;
    }
    o.values().filter_map(Value::as_object).find_map(|x| superseded_mark(x, depth - 1))
}

/// The normalised numbers ([`evidence::normalize_number`]) a JSON value holds: its numbers, and
/// the digits its strings write (`4.2`, `32`, `1,024`).
fn numbers_in(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Number(n) => out.push(evidence::normalize_number(&n.to_string())),
        Value::String(s) => {
            static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d[\d,]*(?:\.\d+)?").unwrap());
            out.extend(NUMBER.find_iter(s).map(|m| evidence::normalize_number(m.as_str().trim_end_matches(','))));
        }
        Value::Array(a) => a.iter().for_each(|x| numbers_in(x, out)),
        Value::Object(o) => o.values().for_each(|x| numbers_in(x, out)),
        _ => {}
    }
}

/// A record of a list that marks itself no longer valid ([`superseded_mark`]), returned beside
/// one that does not.
#[derive(Debug, Clone)]
struct SupersededRecord {
    /// The record's id ([`record_id`], in the record or its `metadata`), when it has one.
    id: Option<String>,
    /// The mark, as [`superseded_mark`] writes it.
    mark: String,
    /// The numbers the record holds ([`numbers_in`]).
    numbers: Vec<String>,
}

/// A tool output whose lists hold records marked superseded beside records that are not
/// ([`superseded_lists`]).
#[derive(Debug, Clone)]
pub struct SupersededList {
    /// The tool output's step.
    step: usize,
    /// Its marked records.
    marked: Vec<SupersededRecord>,
    /// The numbers its unmarked records hold.
    current: Vec<String>,
}

/// The lists of records a tool output holds: the output itself when it is an array, and the
/// arrays its members hold, one level down; only their object entries.
fn record_lists(v: &Value) -> Vec<Vec<&serde_json::Map<String, Value>>> {
    fn objects(a: &[Value]) -> Vec<&serde_json::Map<String, Value>> {
        a.iter().filter_map(Value::as_object).collect()
    }
    match v {
        Value::Array(a) => vec![objects(a)],
        Value::Object(o) => o.values().filter_map(Value::as_array).map(|a| objects(a)).collect(),
        _ => Vec::new(),
    }
}

/// The tool outputs of the trajectory whose lists hold a record marked superseded beside one that
/// is not, in step order, computed once.
fn superseded_lists<'a>(ctx: &Context<'a>) -> &'a [SupersededList] {
    ctx.facts.superseded_lists.get_or_init(|| {
        let t = ctx.trajectory;
        let mut out = Vec::new();
        for r in (0..t.steps.len()).filter(|&r| t.steps[r].kind == StepKind::ToolResult) {
            // A cheap look for the mark's words first: most outputs hold none.
            let low = super::lower_of(ctx, r);
            if !SUPERSEDED_STATUS.iter().any(|w| low.contains(w)) {
                continue;
            }
            let Some(v) = json_of(&t.steps[r].content) else { continue };
            let mut list = SupersededList { step: r, marked: Vec::new(), current: Vec::new() };
            for records in record_lists(&v) {
                let marks: Vec<Option<String>> = records.iter().map(|o| superseded_mark(o, 2)).collect();
                if !marks.iter().any(Option::is_some) || !marks.iter().any(Option::is_none) {
                    continue;
                }
                for (o, mark) in records.iter().zip(marks) {
                    let mut numbers = Vec::new();
                    o.values().for_each(|x| numbers_in(x, &mut numbers));
                    match mark {
                        Some(mark) => {
                            let id = record_id(o)
                                .or_else(|| o.values().filter_map(Value::as_object).find_map(record_id))
                                .map(|(_, id)| id.to_string());
                            list.marked.push(SupersededRecord { id, mark, numbers });
                        }
                        None => list.current.extend(numbers),
                    }
                }
            }
            if !list.marked.is_empty() {
                out.push(list);
            }
        }
        out
    })
}

/// Step `i`, an agent's message, thought or call, states a number (more than 10 or with
/// decimals, not a year) that a record of an earlier tool output of the last [`STALE_WINDOW`]
/// steps holds, where that record marks itself no longer valid ([`superseded_mark`]:
/// `"status": "superseded"`, `"superseded_by": "HR-DE-PL-2024"`) and the same list returned a
/// record that does not; and no other record, tool output, user or system message before step
/// `i` gives that number, nor an earlier agent step states it. The value was read from the
/// version the tool said was replaced, with the current one beside it: a policy's 2022 threshold
/// applied after its 2024 revision dropped it.
pub(super) fn superseded_record_read(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if !super::grounding::agent_step(t, i) {
        return;
    }
    let s = &t.steps[i];
    let from = i.saturating_sub(STALE_WINDOW);
    // The lists of the window: they are in step order.
    let all = superseded_lists(ctx);
    let lists = &all[all.partition_point(|l| l.step < from)..all.partition_point(|l| l.step < i)];
    if lists.is_empty() {
        return;
    }
    let year = |n: &str| n.len() == 4 && (n.starts_with("19") || n.starts_with("20"));
    let current = |n: &str| lists.iter().any(|l| l.current.iter().any(|c| c == n));
    let read = |j: usize| lists.iter().any(|l| l.step == j);
    let stated_before = |n: &str| {
        (0..i)
            .filter(|&j| !read(j))
            .any(|j| ctx.hierarchy.evidence[j].iter().any(|e| e.kind == EvidenceKind::Number && e.key == n))
    };
    let content = &s.content;
    for e in ctx.hierarchy.evidence[i].iter().filter(|e| e.kind == EvidenceKind::Number) {
        let n = e.key.as_str();
        if evidence::is_trivial_number(n) || year(n) || current(n) {
            continue;
        }
        let Some((step, rec)) =
            lists.iter().find_map(|l| l.marked.iter().find(|m| m.numbers.iter().any(|x| x == n)).map(|m| (l.step, m)))
        else {
            continue;
        };
        if stated_before(n) {
            continue;
        }
        let record = rec.id.as_deref().map_or_else(|| "a record".to_string(), |id| format!("the record {id}"));
        out.push(finding(
            Signal::UnavailableValue,
            weights::UNAVAILABLE_VALUE,
            prose![
                format!("states {}, which only {record} at step ", e.text(content)),
                Part::Step(step),
                format!(" gives, and that record says {}: a current one was returned beside it", rec.mark)
            ],
        ));
        return;
    }
}
