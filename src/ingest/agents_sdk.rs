//! OpenAI Agents SDK traces, as the SDK's backend exporter posts them.
//!
//! Schema: openai-agents-python (0.2–0.6, 2025) `src/agents/tracing/processors.py`
//! (`BackendSpanExporter` posts `{"data": [item.export() ...]}`), `traces.py` (`Trace.export`:
//! `{object: "trace", id, workflow_name, group_id, metadata}`), `spans.py` (`Span.export`:
//! `{object: "trace.span", id, trace_id, parent_id, started_at, ended_at, span_data, error}`,
//! `error = {message, data}`) and `span_data.py` (`span_data.type`). Also read: a bare list of
//! such items, and JSON Lines of them (a file processor writing one export per line). Items are
//! grouped by `trace_id` (one trajectory per trace, in order of first appearance); each span
//! becomes a [`spantree`] node, siblings ordered by `started_at` (the exporter sends spans in the
//! order they end):
//! - `agent` `{name, handoffs, tools, output_type}` → the agent its descendants act as. A top-level
//!   agent span (a run, or the target of a hand-off) has no step of its own: the SDK records no
//!   invocation message; an agent span under a `function` span (an agent used as a tool) is a
//!   delegation by the calling agent;
//! - `generation` `{input, output, model, usage{input_tokens, output_tokens}}` → a model call
//!   whose `input` / `output` are Chat Completions messages: the conversation each call re-sends
//!   in `input` is shown once, output tool calls are tool-call steps;
//! - `function` `{name, input, output}` → the result of the tool call the model made (matched by
//!   tool name, oldest open call first: function spans carry no call id), or a call and a result
//!   when no model output holds the call (Responses API runs, whose `response` spans export only
//!   `response_id`);
//! - `handoff` `{from_agent, to_agent}` → a delegation step answering the model's call of the
//!   hand-off tool (the SDK's default name, `transfer_to_<agent>` in snake case), linked to the
//!   target agent's next step;
//! - `guardrail` `{name, triggered}` → a message, an error when the tripwire triggered; `custom`
//!   `{name, data}` → a message with its data;
//! - `response`, `mcp_tools`, `transcription`, `speech`, `speech_group` → scopes (no step; the
//!   response span holds no message text);
//! - a type `span_data.py` does not define → kept with a diagnostic naming the span (id, name)
//!   and the type ([`spantree::unknown_kind`]): a tool execution when it has a `function` span's
//!   fields (`name` and a non-message `input` / `output`), a model call when `input` / `output`
//!   hold chat messages, else a message with its text (its other fields, as a `custom` span's
//!   data), or a scope when it has none;
//! - `error` on any span → the span's step is an error, with `error.data.error` (else
//!   `error.message`) as its text.

use std::borrow::{Borrow, Cow};
use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::messages::msgs_from_value;
use super::spantree::{self, Node, Op};
use super::{DETECT_SAMPLE, Document, FormatError, JsonLines, Loaded, value_line, value_text};
use crate::model::{Diagnostic, SourceFormat, StepKind, TokenCounts};

/// Whether `doc` holds OpenAI Agents SDK exports: items with `object: "trace.span"` and a
/// `span_data` object with a `type` (alone, in a list, under `data`, or one per line).
pub fn detect(doc: &Document) -> bool {
    let items = items(doc);
    let sample = items.iter().take(DETECT_SAMPLE);
    let mut spans = 0;
    for (_, v) in sample {
        match v.get("object").and_then(Value::as_str) {
            Some("trace.span") if v.pointer("/span_data/type").is_some_and(Value::is_string) => spans += 1,
            Some("trace") if v.get("id").is_some() => {}
            _ => return false,
        }
    }
    spans > 0
}

/// The exported items of a document with their place (`data[3]`, `line 4`).
fn items(doc: &Document) -> Vec<(String, &Value)> {
    match doc {
        Document::Json(v) => {
            let list = match v {
                Value::Array(a) => Some(("", a)),
                Value::Object(m) => m.get("data").and_then(Value::as_array).map(|a| ("data", a)),
                _ => None,
            };
            match list {
                Some((key, a)) => a.iter().enumerate().map(|(i, x)| (format!("{key}[{i}]"), x)).collect(),
                None if v.get("object").is_some() => vec![("the document".to_string(), v)],
                None => Vec::new(),
            }
        }
        Document::Lines { values, .. } => values
            .iter()
            .flat_map(|(l, v)| match export_body(v) {
                Some(a) => a.iter().enumerate().map(|(i, x)| (format!("line {l} data[{i}]"), x)).collect(),
                None => vec![(format!("line {l}"), v)],
            })
            .collect(),
    }
}

/// The items of an exporter request body `{"data": [...]}` (one body per line when a file keeps
/// each batch the `BackendSpanExporter` posted), `None` for an item itself.
fn export_body(v: &Value) -> Option<&Vec<Value>> {
    v.get("object").is_none().then(|| v.get("data").and_then(Value::as_array)).flatten()
}

/// A line's value as exported items: the items of an exporter body, else the value itself.
fn line_items(place: String, v: Value) -> Vec<(String, Value)> {
    match v {
        Value::Object(mut m) if !m.contains_key("object") && m.get("data").is_some_and(Value::is_array) => {
            let Some(Value::Array(a)) = m.remove("data") else { return Vec::new() };
            a.into_iter().enumerate().map(|(i, x)| (format!("{place} data[{i}]"), x)).collect()
        }
        v => vec![(place, v)],
    }
}

/// Loads an Agents SDK export named `name`: one trajectory per trace id.
///
/// # Errors
/// A message when the document holds no `trace.span` item.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let all = items(doc);
    let functions = function_spans(all.iter().map(|(_, v)| *v));
    assemble(name, all.into_iter().map(|(place, v)| (place, Cow::Borrowed(v))), &functions)
}

/// Loads an export read one line at a time ([`JsonLines`]): a first look collects the ids of
/// `function` spans (only lines that name the type, or hold a `\u` escape, are parsed), then each
/// line is parsed, mapped to a span-tree node and dropped before the next. Same result as
/// [`load`] on the same lines.
///
/// # Errors
/// As [`load`].
pub fn load_lines(name: &str, lines: &JsonLines<'_>) -> Result<Loaded, FormatError> {
    let candidates = lines.records().filter_map(|(_, t)| t.filter(|t| t.contains("\"function\"") || t.contains("\\u")));
    let functions =
        function_spans(candidates.filter_map(value_line).flat_map(|v| line_items(String::new(), v)).map(|(_, v)| v));
    let items =
        lines.values().flat_map(|(l, v)| line_items(format!("line {l}"), v)).map(|(place, v)| (place, Cow::Owned(v)));
    assemble(name, items, &functions)
}

/// Trace id → the ids of its `function` spans (an agent span under one is an agent used as a tool).
type Functions = HashMap<String, HashSet<String>>;

fn function_spans<V: Borrow<Value>>(items: impl Iterator<Item = V>) -> Functions {
    let mut out = Functions::new();
    for v in items {
        let v = v.borrow();
        if v.get("object").and_then(Value::as_str) != Some("trace.span")
            || v.pointer("/span_data/type").and_then(Value::as_str) != Some("function")
        {
            continue;
        }
        if let Some(id) = v.get("id").and_then(Value::as_str) {
            let trace = v.get("trace_id").map(value_text).unwrap_or_default();
            out.entry(trace).or_default().insert(id.to_string());
        }
    }
    out
}

/// One trajectory per trace id of the `items` (each with its place), each span mapped to a node
/// as it is reached.
fn assemble<'v>(
    name: &str,
    items: impl Iterator<Item = (String, Cow<'v, Value>)>,
    functions: &Functions,
) -> Result<Loaded, FormatError> {
    let mut diags = Vec::new();
    let mut order: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut headers: HashMap<String, Value> = HashMap::new();
    // Trace id → its nodes and the diagnostics of mapping its spans, in item order.
    let mut spans: HashMap<String, (Vec<Node>, Vec<Diagnostic>)> = HashMap::new();
    let none = HashSet::new();
    for (place, v) in items {
        let trace = v.get("trace_id").or_else(|| v.get("id")).map(value_text).unwrap_or_default();
        match v.get("object").and_then(Value::as_str) {
            Some("trace") => {
                if seen.insert(trace.clone()) {
                    order.push(trace.clone());
                }
                headers.insert(trace, v.into_owned());
            }
            Some("trace.span") => {
                let trace = v.get("trace_id").map(value_text).unwrap_or_default();
                if seen.insert(trace.clone()) {
                    order.push(trace.clone());
                }
                let under = functions.get(&trace).unwrap_or(&none);
                let (nodes, node_diags) = spans.entry(trace).or_default();
                nodes.extend(node(&v, &place, under, node_diags));
            }
            _ => diags.push(Diagnostic {
                line: line_of(&place),
                message: format!("{place} skipped: expected \"object\": \"trace\" or \"trace.span\""),
            }),
        }
    }
    order.retain(|t| spans.contains_key(t));
    if order.is_empty() {
        return Err(FormatError::Shape {
            expected: "trace.span items {object, id, trace_id, parent_id, span_data}".into(),
        });
    }
    let mut groups = Vec::new();
    for trace in &order {
        let (nodes, node_diags) = spans.remove(trace).unwrap_or_default();
        diags.extend(node_diags);
        groups.push((Some(trace.clone()), nodes));
    }
    let mut loaded = spantree::load_groups(name, SourceFormat::OpenAiAgents, groups, diags);
    for (t, trace) in loaded.trajectories.iter_mut().zip(&order) {
        // The answer is the last assistant text a model produced, not a guardrail or custom span.
        t.observed_output = t
            .steps
            .iter()
            .rev()
            .find(|s| s.kind == StepKind::Message && s.role == "assistant" && !s.content.trim().is_empty())
            .map(|s| s.content.trim().to_string());
        if let Some(h) = headers.get(trace) {
            for key in ["workflow_name", "group_id"] {
                if let Some(v) = h.get(key).filter(|v| !v.is_null()) {
                    t.metadata.push((key.into(), value_text(v)));
                }
            }
        }
    }
    Ok(loaded)
}

fn line_of(place: &str) -> Option<usize> {
    place.strip_prefix("line ").and_then(|l| l.split(' ').next()?.parse().ok())
}

/// The SDK's default hand-off tool name for an agent (`handoffs.py`, `Handoff.default_tool_name`:
/// `transfer_to_` + the name in function style: spaces and other non-word characters as `_`,
/// lower case).
pub fn handoff_tool_name(agent: &str) -> String {
    let styled: String = agent
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c.to_ascii_lowercase() } else { '_' })
        .collect();
    format!("transfer_to_{styled}")
}

fn node(s: &Value, place: &str, functions: &HashSet<String>, diags: &mut Vec<Diagnostic>) -> Option<Node> {
    let text = |k: &str| s.get(k).filter(|v| !v.is_null()).map(value_text);
    let Some(id) = text("id") else {
        diags.push(Diagnostic { line: line_of(place), message: format!("{place} skipped: missing \"id\"") });
        return None;
    };
    let Some(data) = s.get("span_data").filter(|d| d.is_object()) else {
        diags.push(Diagnostic { line: line_of(place), message: format!("{place} skipped: missing \"span_data\"") });
        return None;
    };
    let ty = data.get("type").and_then(Value::as_str).unwrap_or("").to_string();
    let dname = data.get("name").filter(|v| !v.is_null()).map(value_text);
    let mut n = Node::new(
        id,
        text("parent_id"),
        dname.clone().unwrap_or_else(|| ty.clone()),
        format!("{place} ({ty} span {})", text("id").unwrap_or_default()),
    );
    n.role = ty.clone();
    n.sort_key = text("started_at").map(|t| spantree::time_sort_key(&t));
    n.timestamp = text("started_at");
    if let Some(err) = s.get("error").filter(|e| !e.is_null()) {
        n.is_error = true;
        let detail = err.pointer("/data/error").filter(|v| !v.is_null()).map(value_text);
        n.error = detail.or_else(|| err.get("message").map(value_text)).or_else(|| Some(value_text(err)));
    }
    let io = |k: &str| data.get(k).filter(|v| !v.is_null()).map(value_text);
    n.op = match ty.as_str() {
        "agent" => {
            let agent = dname.unwrap_or_else(|| spantree::DEFAULT_AGENT.to_string());
            let under_function = n.parent.as_deref().is_some_and(|p| functions.contains(p));
            if under_function {
                Op::Agent { name: agent, role: None }
            } else {
                n.agent = Some(agent);
                Op::Scope
            }
        }
        "generation" => {
            n.input = data.get("input").map(msgs_from_value).unwrap_or_default();
            n.output = data.get("output").map(msgs_from_value).unwrap_or_default();
            if n.output.is_empty() {
                n.output_text = io("output");
            }
            let count = |k: &str| data.pointer(&format!("/usage/{k}")).and_then(Value::as_u64);
            if let (Some(i), Some(o)) = (count("input_tokens"), count("output_tokens")) {
                n.tokens = Some(TokenCounts { input: i, output: o });
            }
            Op::Llm
        }
        "function" => {
            n.input_text = io("input");
            n.output_text = io("output");
            Op::Tool { name: n.name.clone(), call_id: None }
        }
        "handoff" => {
            let to = io("to_agent").unwrap_or_default();
            n.name = handoff_tool_name(&to);
            n.output_text = Some(match io("from_agent") {
                Some(from) => format!("hand off from {from} to {to}"),
                None => format!("hand off to {to}"),
            });
            Op::Handoff { to, call_id: None }
        }
        "guardrail" => {
            let triggered = data.get("triggered").and_then(Value::as_bool) == Some(true);
            n.is_error |= triggered;
            let verdict = if triggered { "triggered its tripwire" } else { "passed" };
            n.output_text = Some(format!("guardrail {} {verdict}", n.name));
            Op::Event
        }
        "custom" => {
            n.output_text = Some(match data.get("data").filter(|d| !d.is_null()) {
                Some(d) => format!("{}: {}", n.name, value_text(d)),
                None => n.name.clone(),
            });
            Op::Event
        }
        "response" | "mcp_tools" | "transcription" | "speech" | "speech_group" => Op::Scope,
        other => unknown_span(data, &mut n, other, diags),
    };
    if n.is_error && matches!(n.op, Op::Event) {
        let e = n.error.clone().unwrap_or_default();
        if let Some(t) = n.output_text.as_mut().filter(|t| !e.is_empty() && !t.contains(&e)) {
            t.push_str(&format!("\n[error] {e}"));
        }
    }
    Some(n)
}

/// A span of a type `span_data.py` does not define, kept with a diagnostic
/// ([`spantree::unknown_kind`]): with a `name` and a non-message `input` / `output`, the fields
/// of a `function` span, it is read as one; with Chat Completions messages in `input` / `output`
/// it is a model call; otherwise its `input` / `output` text, else its other fields (as a
/// `custom` span's data), make a message.
fn unknown_span(data: &Value, n: &mut Node, ty: &str, diags: &mut Vec<Diagnostic>) -> Op {
    let field = |k: &str| data.get(k).filter(|v| !v.is_null());
    let (input, output) = (field("input"), field("output"));
    n.input = input.map(spantree::chat_messages).unwrap_or_default();
    n.output = output.map(spantree::chat_messages).unwrap_or_default();
    let messages = !n.input.is_empty() || !n.output.is_empty();
    let function_like = field("name").is_some() && (input.is_some() || output.is_some()) && !messages;
    if !messages {
        n.input_text = input.map(value_text);
        n.output_text = output.map(value_text);
    }
    if input.is_none() && output.is_none() {
        let rest: serde_json::Map<String, Value> = data
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| !matches!(k.as_str(), "type" | "name") && !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !rest.is_empty() {
            n.output_text = Some(format!("{}: {}", n.name, value_text(&Value::Object(rest))));
        }
    }
    let why = function_like.then_some("because it has a function span's fields (name, input, output)");
    spantree::unknown_kind(n, "span_data.type", ty, why, diags)
}
