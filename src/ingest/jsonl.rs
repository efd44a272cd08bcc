//! The falat JSONL format: one JSON object per line, one step per line, after an optional header.
//!
//! The format is documented field by field in `docs/FORMATS.md`; in short:
//! - header (optional, first non-blank line, recognised by having no `content`): `falat` (format
//!   version, 1), `id`, `task`, `expected_output`, `observed_output`, `gold {agent, step, reason,
//!   category}` (`step` 0-based among the step lines), `agents [{name, role}]`, `metadata {}`;
//! - step: `agent` and `content` (required), `kind` (default `message`), `role`, `id`, `parent`,
//!   `refs`, `delegate_to`, `tool_name`, `timestamp`, `tokens {input, output}`, `is_error`.
//!
//! `parent` gives a [`LinkKind::Parent`] link from the latest earlier step with that `id`; each of
//! `refs` gives a [`LinkKind::ToolResult`] link when a tool_result refers to a tool_call and a
//! [`LinkKind::Delegation`] link when a step refers to a delegation.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{DETECT_SAMPLE, Document, FormatError, JsonLines, Loaded, remap_index, type_name, typed_line, value_line};
use crate::model::{
    AgentInfo, Diagnostic, GoldLabel, Link, LinkKind, SourceFormat, Step, StepIds, StepKind, TokenCounts, Trajectory,
};

/// The version written in the header's `falat` field.
pub const VERSION: u64 = 1;

/// Whether a document is falat JSONL: a first line with a `falat` field, or more than half of
/// the (first [`DETECT_SAMPLE`]) lines with a string `agent` and a `content`; a single such
/// object is a one-step file.
pub fn detect(doc: &Document) -> bool {
    match doc {
        Document::Json(v) => v.get("falat").is_some() || is_step(v),
        Document::Lines { values, .. } => {
            let header = values.first().is_some_and(|(_, v)| v.get("falat").is_some());
            let sample = &values[..values.len().min(DETECT_SAMPLE)];
            let steps = sample.iter().filter(|(_, v)| is_step(v)).count();
            header || steps * 2 > sample.len()
        }
    }
}

fn is_step(v: &Value) -> bool {
    v.get("agent").is_some_and(Value::is_string) && v.get("content").is_some()
}

/// One non-blank line: its 1-based number and its value (`None` when it is not JSON).
type Record<'a> = (usize, Option<&'a Value>);

/// Loads a falat JSONL document from the file named `name`; bad step lines are skipped with a
/// diagnostic naming the line and the field.
///
/// # Errors
/// Never for JSONL input (an empty result is reported by the caller); kept for the loader shape.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let records = records(doc);
    let (header, steps_from) = match records.first() {
        Some((line, Some(v))) if v.get("content").is_none() => (Some((*line, *v)), 1),
        _ => (None, 0),
    };
    let mut r = Reader::new(name);
    for (ordinal, (line, value)) in records[steps_from..].iter().enumerate() {
        if let Some(v) = value {
            r.step_line(*line, parse_step(v), ordinal);
        }
    }
    let step_lines = records.len() - steps_from;
    if let Some((line, h)) = header {
        r.header(line, h, step_lines);
    }
    Ok(r.loaded())
}

/// Loads falat JSONL read one line at a time ([`JsonLines`]): each step line is deserialised
/// into a [`StepLine`] borrowing from the text and turned into a [`Step`] before the next line
/// is read; only a line of another shape (not an object, a repeated key) is read as a `Value`,
/// to say what is wrong with it. Same result as [`load`] on the same lines.
///
/// # Errors
/// Never (an empty result is reported by the caller); kept for the loader shape.
pub fn load_lines(name: &str, lines: &JsonLines<'_>) -> Result<Loaded, FormatError> {
    let mut r = Reader::new(name);
    let mut header: Option<(usize, Value)> = None;
    let mut ordinal = 0usize;
    for (k, (line, text)) in lines.records().enumerate() {
        let Some(text) = text else {
            ordinal += 1;
            continue;
        };
        if k == 0 {
            // The header is the first line when it has no `content`.
            if let Some(v) = value_line(text).filter(|v| v.get("content").is_none()) {
                header = Some((line, v));
                continue;
            }
        }
        let step = match typed_line::<StepLine<'_>>(text) {
            Some(fields) => step_from(|key| fields.get(key).and_then(|raw| value_line(raw.get())).map(Cow::Owned)),
            None => match value_line(text) {
                Some(v) => parse_step(&v),
                // Checked by the scan: every line read here is JSON.
                None => continue,
            },
        };
        r.step_line(line, step, ordinal);
        ordinal += 1;
    }
    if let Some((line, h)) = header {
        r.header(line, &h, ordinal);
    }
    Ok(r.loaded())
}

/// The fields of a step line that [`parse_step`] reads, each the raw JSON text of its value
/// (borrowed from the line; `null` kept apart from absent); other keys are skipped unread.
#[derive(Deserialize)]
struct StepLine<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    agent: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    content: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    kind: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    role: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    delegate_to: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    tool_name: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    timestamp: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    parent: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    refs: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    tokens: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    is_error: Option<&'a RawValue>,
}

impl<'a> StepLine<'a> {
    fn get(&self, key: &str) -> Option<&'a RawValue> {
        match key {
            "agent" => self.agent,
            "content" => self.content,
            "kind" => self.kind,
            "role" => self.role,
            "delegate_to" => self.delegate_to,
            "tool_name" => self.tool_name,
            "timestamp" => self.timestamp,
            "id" => self.id,
            "parent" => self.parent,
            "refs" => self.refs,
            "tokens" => self.tokens,
            "is_error" => self.is_error,
            _ => None,
        }
    }
}

/// A present field, `null` included (serde's `Option` would read `null` as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

fn records(doc: &Document) -> Vec<Record<'_>> {
    match doc {
        Document::Json(v) => vec![(1, Some(v))],
        Document::Lines { values, bad } => {
            let mut all: Vec<Record<'_>> = values.iter().map(|(l, v)| (*l, Some(v))).collect();
            all.extend(bad.iter().map(|(l, _)| (*l, None)));
            all.sort_by_key(|(l, _)| *l);
            all
        }
    }
}

#[derive(Default)]
struct Reader {
    t: Trajectory,
    diagnostics: Vec<Diagnostic>,
    /// `origin[k]`: the 0-based ordinal among step lines of loaded step `k`.
    origin: Vec<usize>,
    /// Step id → index of the latest step with that id.
    ids: HashMap<String, usize>,
}

impl Reader {
    fn new(name: &str) -> Reader {
        let mut r = Reader::default();
        r.t.id = name.to_string();
        r.t.source = SourceFormat::FalatJsonl;
        r
    }

    fn loaded(self) -> Loaded {
        Loaded { format: SourceFormat::FalatJsonl, trajectories: vec![self.t], diagnostics: self.diagnostics }
    }

    fn note(&mut self, line: usize, message: String) {
        self.diagnostics.push(Diagnostic { line: Some(line), message });
    }

    fn step_line(&mut self, line: usize, step: Result<Step, FormatError>, ordinal: usize) {
        let mut step = match step {
            Ok(s) => s,
            Err(e) => return self.note(line, format!("{e}; record skipped")),
        };
        step.ids.line = Some(line);
        let at = self.t.steps.len();
        self.link(line, &step, at);
        if let Some(id) = &step.ids.id {
            self.ids.insert(id.clone(), at);
        }
        self.t.steps.push(step);
        self.origin.push(ordinal);
    }

    /// Links `step` (to be pushed at `at`) to the earlier steps its `parent` and `refs` name.
    fn link(&mut self, line: usize, step: &Step, at: usize) {
        if let Some(p) = &step.ids.parent {
            match self.ids.get(p) {
                Some(&from) => self.t.links.push(Link { from, to: at, kind: LinkKind::Parent }),
                None => self.note(line, format!("parent {p:?} matches no earlier step id; no link")),
            }
        }
        for r in &step.ids.refs {
            let Some(&from) = self.ids.get(r) else {
                self.note(line, format!("ref {r:?} matches no earlier step id; no link"));
                continue;
            };
            let kind = match (self.t.steps[from].kind, step.kind) {
                (StepKind::ToolCall, StepKind::ToolResult) => LinkKind::ToolResult,
                (StepKind::Delegation, _) => LinkKind::Delegation,
                _ => continue,
            };
            self.t.links.push(Link { from, to: at, kind });
        }
    }

    /// Reads the header at `line`; `step_lines` is the number of step lines after it.
    fn header(&mut self, line: usize, h: &Value, step_lines: usize) {
        let Some(obj) = h.as_object() else {
            let found = type_name(h);
            return self.note(line, format!("header is {found}, expected an object; ignored"));
        };
        if let Some(id) = self.header_text(line, obj, "id") {
            self.t.id = id;
        }
        self.t.task = self.header_text(line, obj, "task").unwrap_or_default();
        self.t.expected_output = self.header_text(line, obj, "expected_output");
        self.t.observed_output = self.header_text(line, obj, "observed_output");
        self.agents(line, obj.get("agents"));
        if let Some(Value::Object(meta)) = obj.get("metadata") {
            for (k, v) in meta {
                self.t.metadata.push((k.clone(), super::value_text(v)));
            }
        }
        if let Some(g) = obj.get("gold").filter(|g| !g.is_null()) {
            match gold(g) {
                Ok(mut gold) => {
                    gold.step = self.gold_step(line, gold.step, step_lines);
                    self.t.gold = Some(gold);
                }
                Err(e) => self.note(line, format!("header \"gold\": {e}; gold label ignored")),
            }
        }
    }

    /// A string field of the header; a field of another type is reported and ignored.
    fn header_text(&mut self, line: usize, obj: &Map<String, Value>, key: &str) -> Option<String> {
        obj_text(obj, key).map_err(|e| self.note(line, format!("header {e}; ignored"))).ok().flatten()
    }

    fn agents(&mut self, line: usize, agents: Option<&Value>) {
        let list = match agents {
            None | Some(Value::Null) => return,
            Some(Value::Array(a)) => a,
            Some(other) => {
                let found = type_name(other);
                return self.note(line, format!("header \"agents\" is {found}, expected an array; ignored"));
            }
        };
        for (i, a) in list.iter().enumerate() {
            let name = a.get("name").and_then(Value::as_str).filter(|n| !n.trim().is_empty());
            let Some(name) = name else {
                self.note(line, format!("header agents[{i}]: missing \"name\"; ignored"));
                continue;
            };
            let role = a.get("role").and_then(Value::as_str).map(str::to_owned);
            self.t.agents.push(AgentInfo { name: name.trim().to_string(), role });
        }
    }

    /// The loaded index of gold step `step` (an ordinal among `step_lines` step lines).
    fn gold_step(&mut self, line: usize, step: Option<usize>, step_lines: usize) -> Option<usize> {
        let n = step?;
        if n >= step_lines {
            self.note(
                line,
                format!("gold step {n} is past the last step line ({step_lines} step lines); gold step dropped"),
            );
            return None;
        }
        let mapped = remap_index(&self.origin, n);
        if mapped.is_none() {
            self.note(line, format!("gold step {n} names a skipped line; gold step dropped"));
        }
        mapped
    }
}

/// A step line as a [`Step`] (index 0; the caller numbers it).
///
/// # Errors
/// Naming the first bad field.
pub fn parse_step(v: &Value) -> Result<Step, FormatError> {
    let obj = v.as_object().ok_or_else(|| FormatError::not_a("an object", v))?;
    step_from(|key| obj.get(key).map(Cow::Borrowed))
}

/// A step from its fields, `get(key)` giving a field's value (see [`parse_step`]).
fn step_from<'v>(get: impl Fn(&str) -> Option<Cow<'v, Value>>) -> Result<Step, FormatError> {
    let agent = required_name(get("agent"), "agent")?;
    let content = get("content").ok_or(FormatError::missing("content"))?;
    let kind = match text(get("kind"), "kind")? {
        None => StepKind::Message,
        Some(k) => StepKind::parse(&k).ok_or_else(|| {
            let names: Vec<&str> = StepKind::ALL.iter().map(|k| k.as_str()).collect();
            FormatError::Field {
                field: "kind".into(),
                what: "".into(),
                found: format!("{k:?}"),
                expected: format!("one of {}", names.join(", ")).into(),
            }
        })?,
    };
    Ok(Step {
        agent,
        kind,
        content: text(Some(content), "content")?.unwrap_or_default(),
        role: text(get("role"), "role")?.unwrap_or_default(),
        delegate_to: text(get("delegate_to"), "delegate_to")?,
        tool_name: text(get("tool_name"), "tool_name")?,
        timestamp: text(get("timestamp"), "timestamp")?,
        ids: StepIds {
            id: id(get("id").as_deref(), "id")?,
            parent: id(get("parent").as_deref(), "parent")?,
            refs: refs(get("refs").as_deref())?,
            line: None,
        },
        tokens: tokens(get("tokens").as_deref())?,
        is_error: match get("is_error").as_deref() {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => return Err(FormatError::wrong_type("is_error", other, "true or false")),
        },
        index: 0,
        warning: None,
    })
}

/// A non-empty string field, trimmed.
fn required_name(v: Option<Cow<'_, Value>>, key: &'static str) -> Result<String, FormatError> {
    match text(v, key)? {
        None => Err(FormatError::missing(key)),
        Some(a) if a.trim().is_empty() => Err(FormatError::EmptyField { field: key, what: "" }),
        Some(a) => Ok(a.trim().to_string()),
    }
}

/// A string field (`null` or absent → `None`); an owned string is moved, not copied.
fn text(v: Option<Cow<'_, Value>>, key: &str) -> Result<Option<String>, FormatError> {
    match v {
        None => Ok(None),
        Some(Cow::Owned(Value::String(s))) => Ok(Some(s)),
        Some(v) => match v.as_ref() {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            other => Err(FormatError::wrong_type(key, other, "a string")),
        },
    }
}

/// A string field of an object (`null` or absent → `None`).
fn obj_text(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, FormatError> {
    text(obj.get(key).map(Cow::Borrowed), key)
}

/// An id field: a string or an integer, as text.
fn id(v: Option<&Value>, key: &str) -> Result<Option<String>, FormatError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => id_text(v).map(Some).ok_or_else(|| FormatError::wrong_type(key, v, "a string or an integer")),
    }
}

fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) if n.is_u64() || n.is_i64() => Some(n.to_string()),
        _ => None,
    }
}

fn refs(v: Option<&Value>) -> Result<Vec<String>, FormatError> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                id_text(v).ok_or_else(|| FormatError::Field {
                    field: "refs".into(),
                    what: format!("[{i}]").into(),
                    found: type_name(v).into(),
                    expected: "a string or an integer".into(),
                })
            })
            .collect(),
        Some(other) => Err(FormatError::wrong_type("refs", other, "an array of ids")),
    }
}

fn tokens(v: Option<&Value>) -> Result<Option<TokenCounts>, FormatError> {
    let t = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(t)) => t,
        Some(other) => return Err(FormatError::wrong_type("tokens", other, "an object {input, output}")),
    };
    let count = |key: &str| match t.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v.as_u64().ok_or_else(|| FormatError::Field {
            field: format!("tokens.{key}"),
            what: "".into(),
            found: if v.is_number() { v.to_string() } else { type_name(v).to_string() },
            expected: "a non-negative integer".into(),
        }),
    };
    Ok(Some(TokenCounts { input: count("input")?, output: count("output")? }))
}

/// The header's `gold` object; `step` is the raw ordinal, mapped by the caller.
fn gold(g: &Value) -> Result<GoldLabel, FormatError> {
    let obj = g.as_object().ok_or_else(|| FormatError::not_a("an object", g))?;
    let agent = required_name(obj.get("agent").map(Cow::Borrowed), "agent")?;
    let step = match obj.get("step") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| FormatError::wrong_type("step", v, "a 0-based step number"))?,
        ),
    };
    Ok(GoldLabel { agent, step, reason: obj_text(obj, "reason")?, category: obj_text(obj, "category")? })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::parse;

    const SAMPLE: &str = r#"{"falat": 1, "id": "run-7", "task": "What is 6*7?", "expected_output": "42", "gold": {"agent": "Coder", "step": 3, "reason": "typo"}, "agents": [{"name": "Planner", "role": "plans"}]}
{"agent": "Planner", "kind": "delegation", "delegate_to": "Coder", "id": "d1", "content": "compute 6*7"}
{"agent": "Coder", "kind": "tool_call", "tool_name": "python", "id": "c1", "refs": ["d1"], "content": "print(6*7)"}
{"agent": "python", "kind": "tool_result", "refs": ["c1"], "content": "42", "tokens": {"input": 3, "output": 1}}
{"agent": "Coder", "content": "The answer is 24.", "parent": "d1"}
"#;

    #[test]
    fn header_steps_and_links_load() {
        let l = parse("run.jsonl", SAMPLE.as_bytes(), None).unwrap();
        assert_eq!(l.format, SourceFormat::FalatJsonl);
        let t = &l.trajectories[0];
        assert_eq!((t.id.as_str(), t.task.as_str()), ("run-7", "What is 6*7?"));
        assert_eq!(t.expected_output.as_deref(), Some("42"));
        assert_eq!(t.agent_names(), ["Planner", "Coder", "python"]);
        assert_eq!(t.agent_role("planner"), Some("plans"));
        assert_eq!(t.gold.as_ref().map(|g| (g.agent.as_str(), g.step)), Some(("Coder", Some(3))));
        assert_eq!(t.steps[2].tokens, Some(TokenCounts { input: 3, output: 1 }));
        let links: Vec<(usize, usize, LinkKind)> = t.links.iter().map(|l| (l.from, l.to, l.kind)).collect();
        assert_eq!(links, [(0, 1, LinkKind::Delegation), (1, 2, LinkKind::ToolResult), (0, 3, LinkKind::Parent)]);
        assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    }

    #[test]
    fn skipped_lines_move_the_gold_step() {
        let text = SAMPLE.replacen(r#""kind": "tool_call""#, r#""kind": "call""#, 1);
        let l = parse("run.jsonl", text.as_bytes(), None).unwrap();
        let t = &l.trajectories[0];
        assert_eq!(t.steps.len(), 3);
        assert_eq!(t.gold.as_ref().unwrap().step, Some(2));
        let msgs: Vec<String> = l.diagnostics.iter().map(|d| d.to_string()).collect();
        assert_eq!(
            msgs,
            [
                "line 3: \"kind\" is \"call\", expected one of message, thought, tool_call, tool_result, delegation; record skipped",
                "line 4: ref \"c1\" matches no earlier step id; no link",
            ]
        );
    }

    #[test]
    fn gold_on_a_broken_line_is_dropped() {
        let text = SAMPLE.replacen("\"The answer is 24.\"", "oops", 1);
        let l = parse("run.jsonl", text.as_bytes(), None).unwrap();
        assert_eq!(l.trajectories[0].gold.as_ref().unwrap().step, None);
        let msgs: Vec<String> = l.diagnostics.iter().map(|d| d.to_string()).collect();
        assert_eq!(
            msgs,
            [
                "line 1: gold step 3 names a skipped line; gold step dropped",
                "line 5: skipped: not JSON at column 31: no JSON value here (an object, an array, a string, a number, true, false or null)",
            ]
        );
    }

    #[test]
    fn one_step_object_is_a_trajectory() {
        let l = parse("one.json", br#"{"agent": "a", "content": "hi"}"#, None).unwrap();
        assert_eq!(l.format, SourceFormat::FalatJsonl);
        assert_eq!(l.trajectories[0].steps[0].content, "hi");
    }
}
