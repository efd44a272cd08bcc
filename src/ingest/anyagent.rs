//! any-agent trace dumps (mozilla-ai/any-agent `AgentTrace`, e.g. `tests/assets/*_trace.json`).
//!
//! Shape: `{spans: [{name, kind, parent: {trace_id, span_id} , context: {trace_id, span_id},
//! start_time, end_time, status: {status_code, description}, attributes: {...}, events}],
//! final_output}`: OTel SDK spans dumped as JSON, ids as decimal integers, attributes as a plain
//! object in the GenAI dialect (`TRACE_FORMATS.md` §2): `invoke_agent`, `call_llm` with
//! `gen_ai.input.messages` (OpenAI-style `{role, content}`) and `gen_ai.output` (a JSON list of
//! `{tool.name, tool.args}` or the answer), `execute_tool` with `gen_ai.tool.args` and
//! `gen_ai.output`. Spans map as in [`super::otel`]; `final_output` is the observed output.

use serde_json::Value;

use super::otlp::{self, RawSpan};
use super::{Document, FormatError, Loaded, otel, spantree, value_text};
use crate::model::{Diagnostic, SourceFormat};

/// Whether `doc` is an any-agent dump: an object whose `spans` are span-list items with
/// `context.span_id` and at least one `gen_ai.*` attribute, none of them OpenInference.
pub fn detect(doc: &Document) -> bool {
    let Document::Json(v) = doc else {
        return false;
    };
    let Some(spans) = v.get("spans").and_then(Value::as_array) else {
        return false;
    };
    let attr_keys =
        || spans.iter().filter_map(|s| s.get("attributes").and_then(Value::as_object)).flat_map(|a| a.keys());
    !spans.is_empty()
        && spans.iter().any(|s| s.pointer("/context/span_id").is_some())
        && attr_keys().any(|k| k.starts_with("gen_ai."))
        && !attr_keys().any(|k| k == "openinference.span.kind")
}

/// Loads an any-agent dump named `name`.
///
/// # Errors
/// A message when `spans` is missing or holds no readable span.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let Document::Json(v) = doc else {
        return Err(FormatError::JsonLines { expected: "one JSON object with \"spans\"" });
    };
    let items =
        v.get("spans").and_then(Value::as_array).ok_or(FormatError::Shape { expected: "a \"spans\" array".into() })?;
    let mut diags = Vec::new();
    let spans: Vec<RawSpan> = items.iter().enumerate().filter_map(|(i, item)| read_span(item, i, &mut diags)).collect();
    if spans.is_empty() {
        return Err(FormatError::NoUsable { item: "span", list: "\"spans\"" });
    }
    let groups = otlp::by_trace(spans)
        .into_iter()
        .map(|(t, spans)| (t, spans.iter().map(|s| otel::node(s, &mut diags)).collect()))
        .collect();
    let mut loaded = spantree::load_groups(name, SourceFormat::AnyAgent, groups, diags);
    if let Some(out) = v.get("final_output").filter(|o| !o.is_null()) {
        for t in &mut loaded.trajectories {
            t.observed_output = Some(value_text(out));
        }
    }
    Ok(loaded)
}

fn read_span(item: &Value, i: usize, diags: &mut Vec<Diagnostic>) -> Option<RawSpan> {
    match otlp::list_span(item, &format!("spans[{i}]")) {
        Ok(s) => Some(s),
        Err(msg) => {
            diags.push(Diagnostic { line: None, message: format!("spans[{i}] skipped: {msg}") });
            None
        }
    }
}
