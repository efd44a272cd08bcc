//! What the user asked that a step then leaves out or turns round:
//! - [`dropped_constraint`]: a constraint the user stressed that a delegation leaves out: "the
//!   tests must stay 3.8-compatible", then a sub-agent asked to write the tests with no word of
//!   Python 3.8 (docs/METHODS.md, "Instructions");
//! - [`flag_against_request`]: a call's yes/no option set against the user's words for it: "let
//!   it run until the end of the period", then `cancel_subscription` with `at_period_end: false`
//!   (docs/METHODS.md, "Actions");
//! - [`broken_requirement`]: a state change on a record whose own lookup breaks a requirement the
//!   user insisted on: "it MUST have free cancellation", then a booking of the rate whose details
//!   said `"type": "non_refundable"` (docs/METHODS.md, "Actions");
//! - [`stay_length_against_request`]: a call whose check-in and check-out dates make another
//!   number of nights than the user asked for: "3 nights starting Tuesday October 14", then
//!   `check_out` 2025-10-16 (docs/METHODS.md, "Actions").

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

/// The sentences of a text ([`crate::text::sentences`]: a version's own point, `3.8`, does not cut).
pub(super) use crate::text::sentences;

/// The served user's turns (`actions::is_human`) with a sentence that stresses a version
/// ([`STRESSED`] words and a [`VERSION`]), in order: found once per run, as every later
/// delegation and edit of a long run reads them.
pub(super) fn version_turns<'a>(ctx: &Context<'a>) -> &'a [usize] {
    let t = ctx.trajectory;
    ctx.facts.version_turns.get_or_init(|| {
        let users = super::actions::user_steps(ctx);
        users
            .iter()
            .copied()
            .filter(|&u| sentences(&t.steps[u].content).any(|s| STRESSED.is_match(s) && VERSION.is_match(s)))
            .collect()
    })
}

/// A version as numbers (`3.8` is `[3, 8]`), for comparing; `None` when a part is no number.
pub(super) fn version_parts(v: &str) -> Option<Vec<u32>> {
    v.split('.').map(|p| p.parse().ok()).collect()
}

/// Whether version `a` is above version `b`, part by part (a missing part is 0).
pub(super) fn above(a: &[u32], b: &[u32]) -> bool {
    let n = a.len().max(b.len());
    let at = |v: &[u32], k: usize| v.get(k).copied().unwrap_or(0);
    (0..n).map(|k| at(a, k).cmp(&at(b, k))).find(|o| o.is_ne()) == Some(std::cmp::Ordering::Greater)
}

/// A version of a language or runtime a turn of the served user stresses.
pub(super) struct Stressed {
    /// The user's turn.
    pub step: usize,
    /// The language or runtime as written (`Python`).
    pub name: String,
    /// The version as written (`3.8`) and as numbers.
    pub version: String,
    pub parts: Vec<u32>,
}

/// The versions (two parts or more) the served user's turns before step `before` stress: each
/// [`VERSION`] in a sentence with [`STRESSED`] words ("dotfig still supports Python 3.8"), in
/// order.
pub(super) fn stressed_versions(ctx: &Context<'_>, before: usize) -> Vec<Stressed> {
    let t = ctx.trajectory;
    let users = version_turns(ctx);
    let mut out = Vec::new();
    for &u in &users[..users.partition_point(|&u| u < before)] {
        for sentence in sentences(&t.steps[u].content).filter(|s| STRESSED.is_match(s)) {
            for c in VERSION.captures_iter(sentence) {
                if let Some(parts) = version_parts(&c[2]).filter(|p| p.len() >= 2) {
                    out.push(Stressed { step: u, name: c[1].to_string(), version: c[2].to_string(), parts });
                }
            }
        }
    }
    out
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
    // The served user's turns before the delegation that stress a version, the latest first.
    let users = version_turns(ctx);
    for &u in users[..users.partition_point(|&u| u < i)].iter().rev() {
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
    let Some(args) = super::call_arguments(&step.content) else { return };
    let options: Vec<(&String, bool, Vec<String>)> = args
        .iter()
        .filter_map(|(k, v)| Some((k, v.as_bool()?, name_words(k))))
        .filter(|(_, _, words)| words.len() >= 2)
        .collect();
    if options.is_empty() {
        return;
    }
    let users = super::actions::user_steps(ctx);
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

/// How many steps before a state-changing call [`broken_requirement`] reads tool outputs for the
/// record it acts on.
const RECORD_LOOKBACK: usize = 40;

/// A kind of requirement a user states in words and a record states in fields: its words in a
/// user's sentence ([`Requirement::said`]), and the fields that break it ([`Requirement::broken_by`]).
struct Requirement {
    /// How the finding names it ("free cancellation").
    name: &'static str,
    /// The user's words for it: "free cancellation", "refundable", "direct flights".
    said: &'static LazyLock<regex::Regex>,
    /// The user's words that give it up ("non-refundable is fine", "with one stop").
    given_up: &'static LazyLock<regex::Regex>,
    /// Whether a record's field (its key and value) says the record breaks it; `Some(false)` when
    /// the field says the record meets it, `None` when the field says nothing of it.
    broken_by: fn(&str, &serde_json::Value) -> Option<bool>,
}

static REFUND_SAID: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)\b(free[ -]cancell?ation|(?:fully )?refundable|cancell?able|cancel (?:it )?for free)\b")
        .unwrap()
});
static REFUND_GIVEN_UP: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)\b(non[- ]?refundable|not refundable|no free[ -]cancell?ation|without free[ -]cancell?ation|non[- ]?cancell?able)\b").unwrap()
});
static DIRECT_SAID: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)\b(direct|non[- ]?stop)\s+(flights?|routes?|connections?|trains?)\b").unwrap()
});
static DIRECT_GIVEN_UP: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)\b(one|a|1|two|2)\s+(stops?|layovers?|connections?)\s+(is|are)\s+(ok|okay|fine)\b").unwrap()
});

/// The requirements [`broken_requirement`] reads: each maps the user's words to record fields by
/// their names, never by a guess.
static REQUIREMENTS: [Requirement; 2] = [
    Requirement { name: "free cancellation", said: &REFUND_SAID, given_up: &REFUND_GIVEN_UP, broken_by: refund_field },
    Requirement { name: "a direct route", said: &DIRECT_SAID, given_up: &DIRECT_GIVEN_UP, broken_by: stops_field },
];

/// A key or value with `-`, spaces and case changes made `_`, lower case: `nonRefundable` and
/// `non-refundable` are `non_refundable`.
fn snake(x: &str) -> String {
    let mut out = String::new();
    for c in x.trim().chars() {
        if c.is_uppercase() && out.chars().next_back().is_some_and(|p| p.is_lowercase()) {
            out.push('_');
        }
        out.extend(if c == '-' || c == ' ' { '_' } else { c }.to_lowercase());
    }
    out
}

/// Whether a field speaks of free cancellation: a yes/no field named `refundable`,
/// `free_cancellation`, `cancellable` (`is_refundable`, `freeCancellation`) says whether it holds,
/// one named `non_refundable` the opposite; a text value `non_refundable` (`"type":
/// "non-refundable"`) breaks it and `free_cancellation`/`refundable` meets it.
fn refund_field(key: &str, value: &serde_json::Value) -> Option<bool> {
    let key = snake(key);
    let negative = |k: &str| k.contains("non_refundable") || k.contains("nonrefundable") || k.contains("non_cancel");
    let positive = |k: &str| {
        k.contains("refundable") || k.contains("free_cancel") || k.contains("freecancel") || k.ends_with("cancellable")
    };
    match value {
        serde_json::Value::Bool(b) if negative(&key) => Some(*b),
        serde_json::Value::Bool(b) if positive(&key) => Some(!b),
        serde_json::Value::String(x) => {
            let x = snake(x);
            if negative(&x) || x == "not_refundable" || x == "no_refund" {
                Some(true)
            } else if x == "refundable" || x == "fully_refundable" || x == "free_cancellation" {
                Some(false)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Whether a field speaks of a direct route: a count named `stops` (`num_stops`, `stop_count`,
/// `layovers`) breaks it when above 0; a yes/no field named `direct`, `nonstop` (`is_direct`) says
/// whether it holds.
fn stops_field(key: &str, value: &serde_json::Value) -> Option<bool> {
    let key = snake(key);
    let words: Vec<&str> = key.split('_').collect();
    let counts = ["stops", "stop", "layovers", "stopovers"];
    match value {
        serde_json::Value::Number(n) if words.iter().any(|w| counts.contains(w)) && words.len() <= 3 => {
            n.as_f64().map(|x| x > 0.0)
        }
        serde_json::Value::Bool(b) if words.iter().any(|w| ["direct", "nonstop"].contains(w)) => Some(!b),
        _ => None,
    }
}

/// Whether an argument names a record: an identifier ([`super::is_id_key`]) or a code
/// (`rate_code`, `fareCode`).
fn names_record(key: &str) -> bool {
    super::is_id_key(key) || key.to_ascii_lowercase().ends_with("code")
}

/// A scalar as text: a string trimmed, a number as written.
fn scalar(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(x) => Some(x.trim().to_string()).filter(|x| !x.is_empty()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The objects of `v` that are the record the call's identifiers `ids` name: every identifier is
/// the object's own field or an enclosing object's (a rate inside its hotel) with the call's
/// value, and one at least is the object's own. Outermost first.
fn named_records<'v>(
    v: &'v serde_json::Value,
    ids: &[(&String, String)],
    inherited: &[(String, String)],
    out: &mut Vec<&'v serde_json::Map<String, serde_json::Value>>,
) {
    match v {
        serde_json::Value::Object(map) => {
            let mut here = inherited.to_vec();
            for (k, x) in map {
                if let Some(x) = scalar(x).filter(|_| names_record(k)) {
                    here.retain(|(hk, _)| hk != k);
                    here.push((k.clone(), x));
                }
            }
            let own = ids.iter().any(|(k, x)| map.get(k.as_str()).and_then(scalar).as_deref() == Some(x.as_str()));
            let all = ids.iter().all(|(k, x)| here.iter().any(|(hk, hx)| hk == *k && hx == x));
            if own && all {
                out.push(map);
            }
            map.values().for_each(|x| named_records(x, ids, &here, out));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|x| named_records(x, ids, inherited, out)),
        _ => {}
    }
}

/// The first field of `record` (its own, or of an object inside it, not of a list inside it) that
/// [`Requirement::broken_by`] reads, as `(key, value as written, broken)`.
fn requirement_field(
    record: &serde_json::Map<String, serde_json::Value>,
    req: &Requirement,
) -> Option<(String, String, bool)> {
    record.iter().find_map(|(k, v)| match v {
        serde_json::Value::Object(inner) => requirement_field(inner, req),
        _ => (req.broken_by)(k, v).map(|broken| (k.clone(), v.to_string(), broken)),
    })
}

/// The latest sentence of the served user's turns before step `i` that speaks of
/// `REQUIREMENTS[r]`, as `(step, sentence)`, when it insists on it ([`STRESSED`] words or "needs",
/// and none that give it up): a later turn that speaks of it without insisting ("non-refundable is
/// fine") lifts it. The turns that speak of each requirement are found once per run.
fn required<'t>(ctx: &Context<'t>, i: usize, r: usize) -> Option<(usize, &'t str)> {
    static NEEDS: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"(?i)\b(needs?|essential|mandatory|non-negotiable)\b").unwrap());
    static WAIVED: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"(?i)(n't|\bnot|\bno)\s+(need|needed|required|necessary|important|must)\b|\boptional\b")
            .unwrap()
    });
    let t = ctx.trajectory;
    let users = super::actions::user_steps(ctx);
    let turns = ctx.facts.requirement_turns.get_or_init(|| {
        REQUIREMENTS
            .iter()
            .map(|req| {
                users
                    .iter()
                    .filter_map(|&u| {
                        let text = t.steps[u].content.as_str();
                        let last =
                            sentences(text).filter(|s| req.said.is_match(s) || req.given_up.is_match(s)).last()?;
                        let start = last.as_ptr() as usize - text.as_ptr() as usize;
                        Some((u, start..start + last.len()))
                    })
                    .collect()
            })
            .collect()
    });
    let req = &REQUIREMENTS[r];
    let spoken = &turns[r];
    let (u, range) = spoken[..spoken.partition_point(|(u, _)| *u < i)].last()?;
    let last = &t.steps[*u].content[range.clone()];
    let insists = (STRESSED.is_match(last) || NEEDS.is_match(last)) && !WAIVED.is_match(last);
    (insists && !req.given_up.is_match(last)).then_some((*u, last))
}

/// The clause of `sentence` that holds the words of `req`: the sentence cut at `,`, `;`, dashes,
/// " and " and " but " (the whole sentence when none holds them).
fn clause_of<'s>(sentence: &'s str, req: &Requirement) -> &'s str {
    static CUT: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r"[,;—–]|\s-\s|\s(?:and|but)\s").unwrap());
    CUT.split(sentence).map(str::trim).find(|c| req.said.is_match(c)).unwrap_or(sentence)
}

/// Step `i`, a state-changing call (not a shell command), acts on a record that a tool
/// output within [`RECORD_LOOKBACK`] steps before it shows, found by the call's identifier and code
/// arguments ([`names_record`]: `hotel_id`, `rate_code`; [`named_records`]), and that record's
/// field breaks a requirement the served user insisted on before the call ([`required`]; the
/// requirement's words name the field, [`REQUIREMENTS`]): "it MUST have free cancellation", then
/// a booking of the rate whose details said `"type": "non_refundable"`; "only direct flights",
/// then the fare with `"stops": 1`. The latest output that shows the record with such a field
/// decides: one that shows it meets the requirement is no finding. docs/METHODS.md, "Actions".
pub(super) fn broken_requirement(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    // A call that writes a file names no record (`create_reservation` is read as an edit, so
    // edits are not left out: their arguments hold paths, not identifiers).
    if step.kind != StepKind::ToolCall || !super::changes_state(t, i) || super::call_command(t, i).is_some() {
        return;
    }
    let Some(args) = super::call_arguments(&step.content) else { return };
    let ids: Vec<(&String, String)> =
        args.iter().filter(|(k, _)| names_record(k)).filter_map(|(k, v)| Some((k, scalar(v)?))).collect();
    if ids.is_empty() {
        return;
    }
    for (r, req) in REQUIREMENTS.iter().enumerate() {
        let Some((u, sentence)) = required(ctx, i, r) else { continue };
        let decided = (i.saturating_sub(RECORD_LOOKBACK).max(u)..i).rev().find_map(|j| {
            if t.steps[j].kind != StepKind::ToolResult {
                return None;
            }
            let value = super::grounding::json_of(&t.steps[j].content)?;
            let mut records = Vec::new();
            named_records(&value, &ids, &[], &mut records);
            records.iter().rev().find_map(|r| requirement_field(r, req)).map(|f| (j, f))
        });
        let Some((j, (key, value, true))) = decided else { continue };
        let tool = step.tool_name.as_deref().unwrap_or("the call");
        let named: Vec<String> = ids.iter().map(|(k, x)| format!("{k} {x}")).collect();
        out.push(finding(
            Signal::ArgumentMismatch,
            weights::ARGUMENT_MISMATCH,
            prose![
                format!("{tool} on {}: the record at step ", named.join(", ")),
                Part::Step(j),
                format!(" has \"{key}\": {value}, but the user required {} at step ", req.name),
                Part::Step(u),
                format!(" (\"{}\")", crate::text::first_line(clause_of(sentence, req), 90))
            ],
        ));
        return;
    }
}

/// A length of stay the user asks for: "3 nights", "three nights", "a 3-night stay". Groups: the
/// number in digits or in words.
static NIGHTS: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b(\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fourteen)[ -]nights?\b",
    )
    .unwrap()
});

/// The value of a number in digits or in words (one to twelve, fourteen).
fn count_value(written: &str) -> Option<i64> {
    const WORDS: [&str; 14] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen",
        "fourteen",
    ];
    let w = written.to_ascii_lowercase();
    w.parse().ok().or_else(|| WORDS.iter().position(|x| *x == w).map(|p| p as i64 + 1))
}

/// The argument pair of a call that bounds a stay, as (arrival key, date, departure key, date):
/// members named for a check-in and a check-out (`check_in` / `check_out`, `checkin_date`,
/// `checkIn`), or an arrival and a departure, each a date (`2025-10-14`, a time after it is
/// ignored).
fn stay_dates(
    args: &serde_json::Map<String, serde_json::Value>,
) -> Option<(String, jiff::civil::Date, String, jiff::civil::Date)> {
    let date = |k: &str| {
        let v = args.get(k)?.as_str()?;
        v.get(..10)?.parse::<jiff::civil::Date>().ok()
    };
    let named = |prefixes: &[&str]| {
        args.keys().find(|k| {
            let n: String = k.to_ascii_lowercase().chars().filter(char::is_ascii_alphanumeric).collect();
            prefixes.iter().any(|p| n.starts_with(p))
        })
    };
    let (a, d) = (named(&["checkin", "arrival", "arrive"])?, named(&["checkout", "departure", "depart"])?);
    Some((a.clone(), date(a)?, d.clone(), date(d)?))
}

/// Step `i`, a tool call, passes a check-in and a check-out date ([`stay_dates`]) whose nights
/// differ from the number of nights the user asked for in one of their last [`REQUEST_TURNS`]
/// turns ("3 nights starting Tuesday October 14" against `check_in` 2025-10-14, `check_out`
/// 2025-10-16): the call books another stay than the one asked for (docs/METHODS.md, "Actions").
/// A user who asked for two lengths of stay is not read.
pub(super) fn stay_length_against_request(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::ToolCall
        || !step.content.to_ascii_lowercase().contains("check") && !step.content.contains("arriv")
    {
        return;
    }
    let Some(args) = super::call_arguments(&step.content) else { return };
    let Some((in_key, arrive, out_key, leave)) = stay_dates(&args) else { return };
    let nights = arrive.duration_until(leave).as_secs() / 86_400;
    let users = super::actions::user_steps(ctx);
    let before = users.partition_point(|&u| u < i);
    for &u in users[before.saturating_sub(REQUEST_TURNS)..before].iter().rev() {
        let asked: Vec<(i64, &str)> = NIGHTS
            .captures_iter(&t.steps[u].content)
            .filter_map(|c| Some((count_value(&c[1])?, c.get(0)?.as_str())))
            .collect();
        let Some(&(n, written)) = asked.first() else { continue };
        if asked.iter().any(|(m, _)| *m != n) || n == nights {
            return;
        }
        let tool = step.tool_name.as_deref().unwrap_or("the tool");
        out.push(finding(
            Signal::ArgumentMismatch,
            weights::ARGUMENT_MISMATCH,
            prose![
                format!(
                    "calls {tool} with {in_key} {arrive} and {out_key} {leave}: {nights} night{}, but the user asked for \"{written}\" (step ",
                    if nights == 1 { "" } else { "s" }
                ),
                Part::Step(u),
                ")"
            ],
        ));
        return;
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
    fn a_record_field_breaks_a_requirement_only_by_its_own_words() {
        use serde_json::json;
        assert_eq!(snake("nonRefundable"), "non_refundable");
        assert_eq!(snake("Non-refundable"), "non_refundable");
        assert_eq!(refund_field("type", &json!("non_refundable")), Some(true));
        assert_eq!(refund_field("policy", &json!("Non-Refundable")), Some(true));
        assert_eq!(refund_field("free_cancellation", &json!(false)), Some(true));
        assert_eq!(refund_field("isRefundable", &json!(true)), Some(false));
        assert_eq!(refund_field("non_refundable", &json!(false)), Some(false));
        assert_eq!(refund_field("type", &json!("free_cancellation")), Some(false));
        // A deadline, a penalty or a label says nothing by itself.
        assert_eq!(refund_field("free_cancellation_until", &json!(null)), None);
        assert_eq!(refund_field("label", &json!("Saver (pay now)")), None);
        assert_eq!(stops_field("stops", &json!(1)), Some(true));
        assert_eq!(stops_field("num_stops", &json!(0)), Some(false));
        assert_eq!(stops_field("is_direct", &json!(false)), Some(true));
        assert_eq!(stops_field("bus_stop_distance_m", &json!(300)), None);
    }

    #[test]
    fn a_requirement_is_quoted_by_its_clause() {
        let s = "Budget is under 200 a night and it MUST be refundable, my plans may change";
        assert_eq!(clause_of(s, &REQUIREMENTS[0]), "it MUST be refundable");
        assert!(REFUND_GIVEN_UP.is_match("non-refundable is fine"));
        assert!(DIRECT_SAID.is_match("only non-stop flights"));
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
