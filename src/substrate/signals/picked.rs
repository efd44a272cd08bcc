//! The record an agent picks among those a lookup returned, read against what the user said of
//! the record they mean: a call that names (by its identifier) one record of a list whose
//! attribute differs from the one the user stated, while another record of the same list holds
//! the user's value exactly (a date of birth, a name, a code); and an agent's message that tells
//! the user's value for an attribute that the record just returned gives otherwise. Dates are
//! compared in any common written form (`March 14, 1978`, `1978-03-14`, `03/14/1978`,
//! `14.03.1978`). docs/METHODS.md, "Actions".

use serde_json::{Map, Value};

use super::actions::is_human;
use super::call_arguments;
use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// How many steps back [`picked_other_record`] looks for the lookup that lists the record a
/// call names.
const PICK_LOOKBACK: usize = 30;

/// How many of the user's turns before a call or message are read for the values the user gave.
const USER_TURNS: usize = 4;

/// How many steps back [`restated_against_result`] looks for the tool output it reads.
const RESTATE_LOOKBACK: usize = 4;

/// A date numbers-only: `03/14/1978`, `14.03.1978`, `14-03-1978` (day and month in either order)
/// or `1978/03/14`.
static NUMERIC_DATE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"\b(?:(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})|(\d{4})/(\d{1,2})/(\d{1,2}))\b").unwrap()
});

/// The dates of a text: each as the ISO keys it may mean and as written ([`stated_dates`]).
type Dates = Vec<(Vec<String>, String)>;

/// One of the user's turns: its step, its lower-case text and its dates.
type UserTurn = (usize, String, Dates);

/// The records of a list, in order.
type Records<'v> = Vec<&'v Map<String, Value>>;

/// The ISO key of a date `y`, `m`, `d` when it is one.
fn iso(y: u32, m: u32, d: u32) -> Option<String> {
    ((1..=12).contains(&m) && (1..=31).contains(&d) && (1000..=2999).contains(&y))
        .then(|| format!("{y:04}-{m:02}-{d:02}"))
}

/// The dates `text` states, each as the ISO keys it may mean (one, or two for a numeric date whose
/// day and month could be either: `04/05/1978`) and as written. Words and ISO dates are read as
/// the evidence reads them ([`crate::evidence::date_key`]); numeric dates here.
pub(super) fn stated_dates(text: &str) -> Dates {
    let mut out: Dates = crate::evidence::extract_text(text)
        .into_iter()
        .filter(|e| e.kind == crate::evidence::EvidenceKind::Date && e.key.len() == 10)
        .map(|e| (vec![e.key.clone()], e.text(text).to_string()))
        .collect();
    for c in NUMERIC_DATE.captures_iter(text) {
        let n = |k: usize| c.get(k).and_then(|m| m.as_str().parse::<u32>().ok());
        let keys: Vec<String> = match (n(1), n(2), n(3)) {
            (Some(a), Some(b), Some(y)) => {
                let mut k: Vec<String> = [iso(y, a, b), iso(y, b, a)].into_iter().flatten().collect();
                k.dedup();
                k
            }
            _ => [n(4), n(5), n(6)]
                .into_iter()
                .collect::<Option<Vec<u32>>>()
                .and_then(|v| iso(v[0], v[1], v[2]))
                .into_iter()
                .collect(),
        };
        if !keys.is_empty() {
            out.push((keys, c[0].to_string()));
        }
    }
    out
}

/// The date a record's field holds: an ISO date (also opening a timestamp) or a numeric one
/// read day-first only when the month-first reading is impossible.
fn field_date(v: &str) -> Option<String> {
    let v = v.trim();
    if let Some(k) =
        v.get(..10).and_then(crate::evidence::date_key).filter(|_| v.len() == 10 || v[10..].starts_with('T'))
    {
        return Some(k);
    }
    let (keys, written) = stated_dates(v).into_iter().next()?;
    (written.len() == v.len() && keys.len() == 1).then(|| keys[0].clone())
}

/// Whether `text` (lower case) holds `phrase` (lower case) as whole words.
fn has_phrase(text: &str, phrase: &str) -> bool {
    let inner = |c: char| c.is_alphanumeric();
    text.match_indices(phrase).any(|(p, _)| {
        !text[..p].chars().next_back().is_some_and(inner) && !text[p + phrase.len()..].chars().next().is_some_and(inner)
    })
}

/// A record's scalar field as text: a string trimmed; `None` for other values.
fn text_of(r: &Map<String, Value>, key: &str) -> Option<String> {
    r.get(key)?.as_str().map(|s| s.trim().to_string())
}

/// Whether a field or argument names a record's identifier: an id ([`super::is_id_key`]) or a
/// reference or number (`patient_ref`, `caseRef`, `member_number`, `account_no`).
fn is_ref_key(k: &str) -> bool {
    let low = k.to_ascii_lowercase();
    super::is_id_key(k)
        || low == "ref"
        || ["_ref", "-ref", "_number", "_no"].iter().any(|e| low.ends_with(e))
        || k.ends_with("Ref")
        || k.ends_with("Number")
}

/// The identifier field of `r` whose value is `id`.
fn id_field(r: &Map<String, Value>, id: &str) -> Option<String> {
    r.iter()
        .find(|(k, v)| {
            is_ref_key(k)
                && match v {
                    Value::String(s) => s.trim() == id,
                    Value::Number(n) => n.to_string() == id,
                    _ => false,
                }
        })
        .map(|(k, _)| k.clone())
}

/// The records (objects) of the first array in `v` holding two or more objects, one of which has
/// an identifier field ([`super::is_id_key`]) whose value is `id`, with that field's name and the
/// position of that record.
fn list_naming<'v>(v: &'v Value, id: &str) -> Option<(Records<'v>, String, usize)> {
    match v {
        Value::Array(items) => {
            let records: Vec<&Map<String, Value>> = items.iter().filter_map(Value::as_object).collect();
            if records.len() >= 2
                && let Some((at, key)) = records.iter().enumerate().find_map(|(n, r)| id_field(r, id).map(|k| (n, k)))
            {
                return Some((records, key, at));
            }
            items.iter().find_map(|x| list_naming(x, id))
        }
        Value::Object(map) => map.values().find_map(|x| list_naming(x, id)),
        _ => None,
    }
}

/// Whether a record is marked as not to be used: a `false` flag of availability or activity
/// (`available`, `active`, `bookable`, `in_stock`, `is_open`...), or a state field that says
/// it is unavailable, inactive, closed, cancelled, full, merged or deleted.
fn marked_unusable(r: &Map<String, Value>) -> bool {
    r.iter().any(|(k, v)| {
        let k = k.to_ascii_lowercase();
        match v {
            Value::Bool(false) => {
                ["avail", "active", "open", "eligible", "bookable", "stock", "valid"].iter().any(|w| k.contains(w))
            }
            Value::String(s) if ["status", "state"].iter().any(|w| k.contains(w)) => {
                let s = s.to_ascii_lowercase();
                ["unavail", "inactive", "closed", "cancel", "full", "sold", "merged", "deleted", "archived", "deceased"]
                    .iter()
                    .any(|w| s.contains(w))
            }
            _ => false,
        }
    })
}

/// What the user stated in their last [`USER_TURNS`] turns before step `i`: each turn's step, its
/// lower-case text and its dates.
fn user_statements(ctx: &Context<'_>, i: usize) -> Vec<UserTurn> {
    let t = ctx.trajectory;
    let all = super::actions::user_steps(ctx);
    let before = all.partition_point(|&u| u < i);
    all[before.saturating_sub(USER_TURNS)..before]
        .iter()
        .map(|&u| (u, t.steps[u].content.to_lowercase(), stated_dates(&t.steps[u].content)))
        .collect()
}

/// Where the user stated `value` (a record's field), with the value as they wrote it: as a date
/// among their dates, else as a name or code (five or more characters with a letter, or four or
/// more digits) among their words, in whole words.
fn user_states(users: &[UserTurn], value: &str) -> Option<(usize, String)> {
    if let Some(d) = field_date(value) {
        return users.iter().rev().find_map(|(u, _, dates)| {
            dates.iter().find(|(keys, _)| keys.contains(&d)).map(|(_, written)| (*u, written.clone()))
        });
    }
    let v = value.to_lowercase();
    let name = v.chars().count() >= 5 && v.chars().any(char::is_alphabetic);
    let code = v.len() >= 4 && v.chars().all(|c| c.is_ascii_digit());
    if !(name || code) {
        return None;
    }
    users.iter().rev().find(|(_, text, _)| has_phrase(text, &v)).map(|(u, _, _)| (*u, value.to_string()))
}

/// Step `i`, a tool call (not a shell command or an edit), names by its identifier a record of a
/// list that a tool output within [`PICK_LOOKBACK`] steps returned (two or more objects), and is
/// the first call since that output to name it, while an attribute of that record differs from
/// what the user stated in their last [`USER_TURNS`] turns and another record of the same list
/// holds the user's value exactly: a date (in any written form), a name or a code. No attribute
/// may speak for the chosen record (one it holds as the user stated it and the other does not),
/// the other record may not be marked unusable ([`marked_unusable`]), and the user may not have
/// named the chosen record's identifier.
pub(crate) fn picked_other_record(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if s.kind != StepKind::ToolCall || is_human(s) || super::call_command(t, i).is_some() || super::edits(t, i) {
        return;
    }
    let Some(args) = call_arguments(&s.content) else { return };
    let ids: Vec<String> = args
        .iter()
        .filter(|(k, _)| is_ref_key(k))
        .filter_map(|(_, v)| match v {
            Value::String(x) if !x.trim().is_empty() => Some(x.trim().to_string()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .collect();
    if ids.is_empty() {
        return;
    }
    let users = user_statements(ctx, i);
    if users.is_empty() {
        return;
    }
    for j in (i.saturating_sub(PICK_LOOKBACK)..i).rev() {
        let r = &t.steps[j];
        if r.kind != StepKind::ToolResult
            || !r.content.contains('[')
            || !ids.iter().any(|id| r.content.contains(id.as_str()))
        {
            continue;
        }
        let Some(value) = super::grounding::json_of(&r.content) else { continue };
        for id in &ids {
            let Some((list, key, chosen)) = list_naming(&value, id) else { continue };
            // Only the first call since the lookup that names the record picks it.
            let picked_before =
                (j + 1..i).any(|c| t.steps[c].kind == StepKind::ToolCall && t.steps[c].content.contains(id.as_str()));
            if picked_before || users.iter().any(|(_, text, _)| has_phrase(text, &id.to_lowercase())) {
                return;
            }
            if let Some(f) = other_matches(&users, &list, &key, chosen, s.tool_name.as_deref(), j) {
                out.push(f);
            }
            return;
        }
    }
}

/// The finding of [`picked_other_record`] for the record at `chosen` of `list` (identified by its
/// field `key`, listed at step `j`): the one other usable record that holds what the user stated
/// for a field where the chosen record holds something else, and differs from the user in no
/// field where the chosen record agrees with them.
fn other_matches(
    users: &[UserTurn],
    list: &[&Map<String, Value>],
    key: &str,
    chosen: usize,
    tool: Option<&str>,
    j: usize,
) -> Option<Finding> {
    let record = list[chosen];
    let mut fields: Vec<&String> =
        record.keys().filter(|k| !is_ref_key(k) && k.as_str() != key && !is_state(k)).collect();
    fields.sort();
    // The user's value (as written, and its turn) for each field the chosen record holds.
    let chosen_says: Vec<_> = fields
        .into_iter()
        .filter_map(|f| text_of(record, f).filter(|v| !v.is_empty()).map(|v| (f, v)))
        .map(|(f, v)| {
            let said = user_states(users, &v);
            (f, v, said)
        })
        .collect();
    let mut found = Vec::new();
    for n in (0..list.len()).filter(|&n| n != chosen && !marked_unusable(list[n])) {
        let mut against = None;
        let mut for_chosen = false;
        for (field, value, said) in &chosen_says {
            let Some(other) = text_of(list[n], field).filter(|v| !v.is_empty() && v != value) else { continue };
            match (said, user_states(users, &other)) {
                (None, Some((u, written))) => {
                    against = against.or(Some((field.to_string(), value.clone(), other, u, written)));
                }
                (Some(_), None) => for_chosen = true,
                _ => {}
            }
        }
        if let (Some(a), false) = (against, for_chosen) {
            found.push((n, a));
        }
    }
    let [(n, (field, value, other_value, u, written))] = <[_; 1]>::try_from(found).ok()?;
    let id_of = |r: &Map<String, Value>| match r.get(key)? {
        Value::String(x) => Some(x.trim().to_string()),
        Value::Number(x) => Some(x.to_string()),
        _ => None,
    };
    let (chosen_id, other_id) = (id_of(record)?, id_of(list[n])?);
    let tool = tool.unwrap_or("the call");
    Some(finding(
        Signal::ArgumentMismatch,
        weights::ARGUMENT_MISMATCH,
        prose![
            format!("{tool} picks {key} {chosen_id} ({field} {value}), but the user gave "),
            format!("\"{}\" at step ", crate::text::clip(&written, 40)),
            Part::Step(u),
            format!(", and {key} {other_id} of the list at step "),
            Part::Step(j),
            format!(" has {field} {other_value}")
        ],
    ))
}

/// Whether a field holds a record's state or kind rather than what it is (`status`, `type`...).
fn is_state(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    ["status", "state", "type", "kind", "result", "outcome"].iter().any(|w| k == *w || k.ends_with(&format!("_{w}")))
}

/// The dated fields of a JSON value at any depth: each field's name and its date's ISO key.
fn dated_fields(v: &Value, key: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| dated_fields(x, k, out)),
        Value::Array(a) => a.iter().for_each(|x| dated_fields(x, key, out)),
        Value::String(s) => out.extend(field_date(s).map(|d| (key.to_string(), d))),
        _ => {}
    }
}

/// Step `i`, an agent's message, tells a date that the user gave in one of their last
/// [`USER_TURNS`] turns, while the tool output just before it (within [`RESTATE_LOOKBACK`]
/// steps, no user turn between) gives a date that differs from it in exactly one of year, month
/// and day for a field, and no field of that output holds the date told: the agent restates the
/// user's value for an attribute the record it just read contradicts (a date of birth told as
/// the user gave it, of a record that holds a look-alike one).
pub(crate) fn restated_against_result(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if s.kind != StepKind::Message || is_human(s) || super::is_outside_agent(&s.agent) {
        return;
    }
    let told = stated_dates(&s.content);
    if told.is_empty() {
        return;
    }
    let Some(r) = (i.saturating_sub(RESTATE_LOOKBACK)..i).rev().find(|&k| t.steps[k].kind == StepKind::ToolResult)
    else {
        return;
    };
    if (r + 1..i).any(|k| is_human(&t.steps[k])) {
        return;
    }
    let Some(value) = super::grounding::json_of(&t.steps[r].content) else { return };
    let mut fields = Vec::new();
    dated_fields(&value, "", &mut fields);
    if fields.is_empty() {
        return;
    }
    let users = user_statements(ctx, i);
    for (keys, written) in &told {
        if fields.iter().any(|(_, d)| keys.contains(d)) {
            continue;
        }
        let Some(u) =
            users.iter().rev().find(|(_, _, dates)| dates.iter().any(|(k, _)| k.iter().any(|x| keys.contains(x))))
        else {
            continue;
        };
        let Some((field, date)) = fields.iter().find(|(_, d)| keys.iter().any(|k| one_part_differs(k, d))) else {
            continue;
        };
        let tool = t.steps[r].tool_name.as_deref().unwrap_or("the tool");
        out.push(finding(
            Signal::IgnoredResult,
            weights::ARGUMENT_MISMATCH,
            prose![
                format!("tells {written} as the user gave it at step "),
                Part::Step(u.0),
                format!(", but the {tool} output at step "),
                Part::Step(r),
                format!(" just before gives {field} {date}")
            ],
        ));
        return;
    }
}

/// Whether two ISO dates (`yyyy-mm-dd`) differ in exactly one of year, month and day.
fn one_part_differs(a: &str, b: &str) -> bool {
    let (pa, pb): (Vec<&str>, Vec<&str>) = (a.split('-').collect(), b.split('-').collect());
    pa.len() == 3 && pb.len() == 3 && pa.iter().zip(&pb).filter(|(x, y)| x != y).count() == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_read_in_words_iso_and_both_numeric_orders() {
        let keys = |t: &str| stated_dates(t).into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(keys("born June 2, 1964"), vec![vec!["1964-06-02".to_string()]]);
        assert_eq!(keys("DOB 1964-06-02"), vec![vec!["1964-06-02".to_string()]]);
        assert_eq!(keys("DOB 06/22/1964"), vec![vec!["1964-06-22".to_string()]]);
        assert_eq!(keys("geb. 22.06.1964"), vec![vec!["1964-06-22".to_string()]]);
        assert_eq!(keys("on 04/05/1964"), vec![vec!["1964-04-05".to_string(), "1964-05-04".to_string()]]);
        assert_eq!(field_date("1964-06-02"), Some("1964-06-02".to_string()));
        assert_eq!(field_date("1964-06-02T00:00:00Z"), Some("1964-06-02".to_string()));
        assert_eq!(field_date("04/05/1964"), None);
        assert!(has_phrase("for jonas berg, please", "jonas berg"));
        assert!(!has_phrase("for jonas bergman", "jonas berg"));
    }
}
