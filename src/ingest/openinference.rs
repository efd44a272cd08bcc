//! OpenInference spans (Arize Phoenix), as OTLP/JSON, as a span list, or as one bare attribute map.
//!
//! Source: Arize-ai/openinference@1fe497f `spec/semantic_conventions.md`, `spec/traces.md`
//! (`TRACE_FORMATS.md` row 3). Attributes are flattened; `openinference.span.kind` (or a span
//! list item's `span_kind`) decides the node:
//! - `AGENT` → an agent invocation named `agent.name` (else `graph.node.name`, else the span
//!   name); `input.value` / `output.value` are its input and answer;
//! - `LLM` → a model call: `llm.input_messages.N.message.{role, content, name, tool_call_id,
//!   contents.M.message_content.{type, text}, tool_calls.K.tool_call.{id, function.name,
//!   function.arguments}}` and `llm.output_messages.*` (N, M, K 0-based); without them the
//!   OpenAI request / response in `input.value` / `output.value`;
//! - `TOOL` (and `RETRIEVER`, `RERANKER`, `EMBEDDING`, `GUARDRAIL`, `EVALUATOR`) → a tool execution:
//!   `tool.name` (else the span name), call id `tool.id` / `tool_call.id`, arguments
//!   `input.value` (else `tool_call.function.arguments`; `tool.parameters` is the schema, not the
//!   call), result `output.value`;
//! - `CHAIN`, `PROMPT` → scopes (a root chain's `input.value` / `output.value` are the task and
//!   answer); any other kind → kept with a diagnostic naming the span (id, name) and the kind
//!   ([`spantree::unknown_kind`]): a model call when it has `llm.input_messages` /
//!   `llm.output_messages`, else a message with its `output.value` (else `input.value`), else a
//!   scope.
//!
//! `agent.name` on a non-AGENT span names the agent acting there. Tokens:
//! `llm.token_count.prompt` / `completion`.
//!
//! Layouts: OTLP/JSON (see [`super::otlp`]); a span list `[{name, context: {trace_id, span_id},
//! parent_id, span_kind, start_time, status_code, attributes, ...}]` bare or under `spans` / `data`;
//! an attribute map `{"openinference.span.kind": ..., ...}` (one span, as Arize's test fixtures);
//! a TRAIL trace `{trace_id, spans: [tree]}` whose spans nest in `child_spans` and keep their
//! flattened attributes in `span_attributes` (TRAIL benchmark, Patronus AI 2025).

use serde_json::Value;

use super::messages::{Msg, msg_from_value, msgs_from_value};
use super::otlp::{self, RawSpan};
use super::spantree::{self, Node, Op};
use super::{Document, FormatError, ListDoc, Loaded};
use crate::model::{Diagnostic, SourceFormat, TokenCounts};

/// The attribute naming the span kind.
pub const KIND_KEY: &str = "openinference.span.kind";

const TOOL_KINDS: [&str; 6] = ["TOOL", "RETRIEVER", "RERANKER", "EMBEDDING", "GUARDRAIL", "EVALUATOR"];

/// Whether `doc` is OpenInference in one of the three layouts of the module doc.
pub fn detect(doc: &Document) -> bool {
    if otlp::is_otlp(doc) {
        return otlp::is_openinference(doc);
    }
    let Document::Json(v) = doc else {
        return false;
    };
    v.get(KIND_KEY).is_some_and(Value::is_string) || span_list(v).is_some_and(|l| is_oi_list(l))
}

fn span_list(v: &Value) -> Option<&Vec<Value>> {
    match v {
        Value::Array(items) => Some(items),
        Value::Object(m) => m.get("spans").or_else(|| m.get("data")).and_then(Value::as_array),
        _ => None,
    }
}

fn is_oi_list(items: &[Value]) -> bool {
    let has_id = |s: &Value| s.pointer("/context/span_id").is_some() || s.get("span_id").is_some();
    let is_oi = |s: &Value| {
        s.get("span_kind").is_some()
            || s.get("attributes").and_then(|a| a.get(KIND_KEY)).is_some()
            || s.get("span_attributes").and_then(|a| a.get(KIND_KEY)).is_some()
            || s.get("child_spans").is_some_and(Value::is_array)
    };
    items.iter().any(|s| has_id(s) && is_oi(s))
}

/// A TRAIL trace (Patronus, 2025: `{trace_id, spans: [tree]}`, each span `{span_id,
/// parent_span_id, span_name, span_kind?, span_attributes, timestamp, duration, status_code,
/// status_message, logs, child_spans: [...]}`) flattened, depth first, into span-list items of the
/// OpenInference JSON shape. Spans of other lists are returned as they are. Iterative, so nesting
/// depth does not matter.
///
/// Ids are normalised ([`otlp::norm_id`], so bounded in length) before they are copied: the
/// document's `trace_id` onto every span, a span's id onto each of its children.
fn flatten_tree(items: &[Value], trace_id: Option<&Value>) -> Vec<Value> {
    let norm = |v: Option<&Value>| v.and_then(otlp::norm_id).map(Value::String).unwrap_or(Value::Null);
    let doc_trace = norm(trace_id);
    let mut out = Vec::new();
    let mut stack: Vec<(&Value, Option<Value>)> = items.iter().rev().map(|s| (s, None)).collect();
    while let Some((span, parent)) = stack.pop() {
        if span.get("span_attributes").is_none() && span.get("child_spans").is_none() {
            out.push(span.clone());
            continue;
        }
        let id = norm(span.get("span_id"));
        let parent = span.get("parent_span_id").filter(|p| !p.is_null()).map(|p| norm(Some(p))).or(parent);
        let mut item = serde_json::Map::new();
        let field = |k: &str| span.get(k).cloned().unwrap_or(Value::Null);
        item.insert("name".into(), span.get("span_name").or_else(|| span.get("name")).cloned().unwrap_or_default());
        let trace = match span.get("trace_id") {
            Some(t) => norm(Some(t)),
            None => doc_trace.clone(),
        };
        item.insert("context".into(), serde_json::json!({"trace_id": trace, "span_id": id}));
        item.insert("parent_id".into(), parent.unwrap_or(Value::Null));
        item.insert("start_time".into(), field("timestamp"));
        item.insert("status_code".into(), field("status_code"));
        item.insert("status_message".into(), field("status_message"));
        item.insert("attributes".into(), span.get("span_attributes").cloned().unwrap_or_else(|| serde_json::json!({})));
        if let Some(k) = span.get("span_kind") {
            item.insert("span_kind".into(), k.clone());
        }
        out.push(Value::Object(item));
        for child in span.get("child_spans").and_then(Value::as_array).into_iter().flatten().rev() {
            stack.push((child, Some(id.clone())));
        }
    }
    out
}

/// Loads an OpenInference document named `name`; one trajectory per trace id.
///
/// # Errors
/// A message when the document holds no readable span.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let mut diags = Vec::new();
    let spans = spans(doc, &mut diags)?;
    if spans.is_empty() {
        return Err(FormatError::NoRecords { expected: "OpenInference spans" });
    }
    let groups = otlp::by_trace(spans)
        .into_iter()
        .map(|(t, spans)| (t, spans.iter().map(|s| node(s, &mut diags)).collect()))
        .collect();
    Ok(spantree::load_groups(name, SourceFormat::OpenInference, groups, diags))
}

fn spans(doc: &Document, diags: &mut Vec<Diagnostic>) -> Result<Vec<RawSpan>, FormatError> {
    if otlp::is_otlp(doc) {
        return Ok(otlp::otlp_spans(doc, diags));
    }
    let Document::Json(v) = doc else {
        return Err(FormatError::JsonLines { expected: "OTLP/JSON, a span list or an attribute map" });
    };
    if v.get(KIND_KEY).is_some() {
        // An attribute map is one span's attributes without its id: the steps get no id (an
        // invented one would be shown as the span's id in reports and exports).
        return Ok(vec![RawSpan {
            span_id: String::new(),
            name: v.get("llm.model_name").map(super::value_text).unwrap_or_default(),
            attrs: otlp::attr_object(v),
            place: "the attribute map".into(),
            ..RawSpan::default()
        }]);
    }
    let items = span_list(v).ok_or(FormatError::Shape { expected: "a span list".into() })?;
    let items = &flatten_tree(items, v.get("trace_id"));
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match otlp::list_span(item, &format!("spans[{i}]")) {
            Ok(mut s) => {
                if let Some(k) = item.get("span_kind").filter(|_| !s.attrs.contains_key(KIND_KEY)) {
                    s.attrs.insert(KIND_KEY.into(), k.clone());
                }
                out.push(s);
            }
            Err(msg) => diags.push(Diagnostic { line: None, message: format!("spans[{i}] skipped: {msg}") }),
        }
    }
    Ok(out)
}

/// Loads a span list read one item at a time ([`ListDoc`]): each item (a TRAIL span with its
/// `child_spans`, or a flat span) is parsed, flattened, mapped to span-tree nodes and dropped
/// before the next. `None` for a list [`load`] would read differently (an attribute map, a `data`
/// list beside `spans`), an item that does not parse, or no usable span.
pub fn load_list(name: &str, list: &ListDoc<'_>) -> Option<Loaded> {
    match list.key.as_deref() {
        None | Some("spans") => {}
        Some("data") if !list.root.contains_key("spans") => {}
        Some(_) => return None,
    }
    if list.root.contains_key(KIND_KEY) {
        return None;
    }
    let mut diags = Vec::new();
    let mut nodes = Vec::new();
    let trace = list.root.get("trace_id");
    let mut i = 0;
    for raw in &list.items {
        let v = super::value_line(raw.get())?;
        // A flat span is read as it is; a TRAIL span is flattened with its children.
        let flat = v.get("span_attributes").is_none() && v.get("child_spans").is_none();
        let items = if flat { vec![v] } else { flatten_tree(std::slice::from_ref(&v), trace) };
        for mut item in items {
            // The attributes are moved into the span, not copied.
            let attrs = item.as_object_mut().and_then(|m| m.remove("attributes"));
            match otlp::list_span(&item, &format!("spans[{i}]")) {
                Ok(mut s) => {
                    s.attrs = match attrs {
                        Some(Value::Object(m)) => m.into_iter().collect(),
                        Some(a) => otlp::attr_object(&a),
                        None => otlp::Attrs::new(),
                    };
                    if let Some(k) = item.get("span_kind").filter(|_| !s.attrs.contains_key(KIND_KEY)) {
                        s.attrs.insert(KIND_KEY.into(), k.clone());
                    }
                    nodes.push((s.trace_id.clone(), node(&s, &mut diags)));
                }
                Err(msg) => diags.push(Diagnostic { line: None, message: format!("spans[{i}] skipped: {msg}") }),
            }
            i += 1;
        }
    }
    if nodes.is_empty() {
        return None;
    }
    Some(spantree::load_by_trace(name, SourceFormat::OpenInference, nodes, diags))
}

/// Maps one OpenInference span to a [`Node`].
pub fn node(span: &RawSpan, diags: &mut Vec<Diagnostic>) -> Node {
    let mut n = Node::new(span.span_id.clone(), span.parent_id.clone(), span.name.clone(), span.place.clone());
    n.sort_key = span.sort_key.clone();
    n.timestamp = span.start.clone();
    n.is_error = span.is_error;
    n.error = span.error.clone();
    n.input_text = span.str("input.value");
    n.output_text = span.str("output.value");
    let kind = span.str(KIND_KEY).unwrap_or_default().to_ascii_uppercase();
    n.role = kind.clone();
    n.op = match kind.as_str() {
        "AGENT" => agent_op(span),
        "LLM" => llm(span, &mut n),
        k if TOOL_KINDS.contains(&k) => tool_op(span, &mut n),
        "CHAIN" | "PROMPT" | "" => Op::Scope,
        other => {
            n.input = messages(span, "llm.input_messages");
            n.output = messages(span, "llm.output_messages");
            spantree::unknown_kind(&mut n, "openinference.span.kind", other, None, diags)
        }
    };
    if !matches!(n.op, Op::Agent { .. }) {
        n.agent = span.str("agent.name");
    }
    n
}

fn agent_op(span: &RawSpan) -> Op {
    let name = span.str("agent.name").or_else(|| span.str("graph.node.name")).unwrap_or_else(|| span.name.clone());
    Op::Agent { name, role: None }
}

fn llm(span: &RawSpan, n: &mut Node) -> Op {
    n.input = messages(span, "llm.input_messages");
    n.output = messages(span, "llm.output_messages");
    if n.input.is_empty() {
        n.input = span.attrs.get("input.value").map(io_msgs).unwrap_or_default();
    }
    if n.output.is_empty() {
        n.output = span.attrs.get("output.value").map(io_msgs).unwrap_or_default();
    }
    let prompt = span.uint("llm.token_count.prompt");
    let completion = span.uint("llm.token_count.completion");
    n.tokens = (prompt.is_some() || completion.is_some())
        .then(|| TokenCounts { input: prompt.unwrap_or(0), output: completion.unwrap_or(0) });
    Op::Llm
}

/// The flattened `prefix.N.message.*` messages, in index order.
fn messages(span: &RawSpan, prefix: &str) -> Vec<Msg> {
    let nested = otlp::unflatten(&span.attrs, prefix);
    nested.as_array().into_iter().flatten().filter_map(msg_from_value).collect()
}

/// Messages from `input.value` / `output.value` when no flattened messages exist: an OpenAI
/// request (`messages`) or response (`choices[].message`).
fn io_msgs(v: &Value) -> Vec<Msg> {
    let parsed = otlp::parsed_json(v);
    if let Some(choices) = parsed.get("choices").and_then(Value::as_array) {
        return choices.iter().filter_map(|c| c.get("message")).filter_map(msg_from_value).collect();
    }
    msgs_from_value(&parsed)
}

fn tool_op(span: &RawSpan, n: &mut Node) -> Op {
    if n.input_text.is_none() {
        n.input_text = span.str("tool_call.function.arguments");
    }
    let name = span.str("tool.name").unwrap_or_else(|| span.name.clone());
    let call_id = span.str("tool.id").or_else(|| span.str("tool_call.id"));
    Op::Tool { name, call_id }
}
