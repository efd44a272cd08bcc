//! OTLP/JSON traces with OpenTelemetry GenAI semantic conventions (`gen_ai.*`).
//!
//! Source: open-telemetry/semantic-conventions@953276ff (`docs/gen-ai/`), as summarised in
//! `TRACE_FORMATS.md` row 2. One span becomes one node of [`spantree`]:
//! - `gen_ai.operation.name` (or the first word of the span name) `invoke_agent` → an agent
//!   invocation named by `gen_ai.agent.name` (else the rest of the span name, brackets dropped),
//!   described by `gen_ai.agent.description`;
//! - `chat`, `text_completion`, `generate_content` (and any-agent's `call_llm`) → an LLM call whose
//!   messages come from `gen_ai.input.messages` / `gen_ai.output.messages` (JSON strings of
//!   `[{role, parts: [...]}]`) plus `gen_ai.system_instructions`, or from the older indexed form
//!   `gen_ai.prompt.N.{role,content,tool_call_id}` / `gen_ai.completion.N.{role,content,
//!   tool_calls.K.{id,name,arguments}}`, or from any-agent's `gen_ai.output`;
//! - `execute_tool` → a tool execution: `gen_ai.tool.name`, `gen_ai.tool.call.id`, arguments in
//!   `gen_ai.tool.call.arguments` (any-agent: `gen_ai.tool.args`), result in
//!   `gen_ai.tool.call.result` (any-agent: `gen_ai.output`);
//! - `create_agent`, `invoke_workflow`, `embeddings` and spans without GenAI attributes → scopes;
//!   an unknown operation is, with a diagnostic, a model call when it carries messages and a
//!   scope otherwise.
//!
//! Tokens: `gen_ai.usage.input_tokens` / `output_tokens` (legacy `prompt_tokens` /
//! `completion_tokens`). Errors: status code ERROR, `error.type`, `exception` events.

use serde_json::Value;

use super::messages::{Msg, Part, msgs_from_value};
use super::otlp::{self, RawSpan};
use super::spantree::{self, Node, Op};
use super::{Document, Loaded, value_text};
use crate::model::{Diagnostic, SourceFormat, TokenCounts};

/// Operations that are model calls (`call_llm` is any-agent's name for `chat`).
const LLM_OPS: [&str; 5] = ["chat", "text_completion", "generate_content", "call_llm", "completion"];
/// Operations kept as scopes without a step of their own.
const SCOPE_OPS: [&str; 4] = ["create_agent", "invoke_workflow", "embeddings", "retrieval"];

/// Whether `doc` is OTLP/JSON that is not OpenInference (OpenInference has its own loader).
pub fn detect(doc: &Document) -> bool {
    otlp::is_otlp(doc) && !otlp::is_openinference(doc)
}

/// Loads an OTLP/JSON document (one request, or one per JSON line) as GenAI spans; one
/// trajectory per trace id.
///
/// # Errors
/// A message when the document holds no span.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, String> {
    let mut diags = Vec::new();
    let spans = otlp::otlp_spans(doc, &mut diags);
    if spans.is_empty() {
        return Err("expected spans under resourceSpans[].scopeSpans[].spans, found none".into());
    }
    let groups = otlp::by_trace(spans)
        .into_iter()
        .map(|(t, spans)| (t, spans.iter().map(|s| node(s, &mut diags)).collect()))
        .collect();
    Ok(spantree::load_groups(name, SourceFormat::OtelGenAi, groups, diags))
}

/// Maps one span with GenAI attributes to a [`Node`] (also used for any-agent dumps).
pub fn node(span: &RawSpan, diags: &mut Vec<Diagnostic>) -> Node {
    let mut n = Node::new(span.span_id.clone(), span.parent_id.clone(), span.name.clone(), span.place.clone());
    n.sort_key = span.sort_key.clone();
    n.timestamp = span.start.clone();
    n.is_error = span.is_error || span.attrs.contains_key("error.type");
    n.error = span.error.clone().or_else(|| span.str("error.type"));
    n.tokens = tokens(span);
    let op = operation(span);
    n.role = op.clone().unwrap_or_else(|| span.name.clone());
    n.op = match op.as_deref() {
        Some("invoke_agent") => agent_op(span),
        Some(o) if LLM_OPS.contains(&o) => Op::Llm,
        Some("execute_tool") => tool_op(span, &mut n),
        Some(o) if SCOPE_OPS.contains(&o) => Op::Scope,
        Some(other) => unknown_op(span, other, diags),
        None => Op::Scope,
    };
    if matches!(n.op, Op::Llm | Op::Agent { .. }) {
        n.input = input_messages(span);
        n.output = output_messages(span);
    }
    n
}

/// An unknown operation: a model call when the span carries messages, else a scope.
fn unknown_op(span: &RawSpan, op: &str, diags: &mut Vec<Diagnostic>) -> Op {
    let has_messages = span.has_prefix("gen_ai.input.")
        || span.has_prefix("gen_ai.output.")
        || span.has_prefix("gen_ai.prompt.")
        || span.has_prefix("gen_ai.completion.");
    let (op_kind, read_as) = match has_messages {
        true => (Op::Llm, "read as a model call because it carries messages"),
        false => (Op::Scope, "kept as a scope"),
    };
    diags.push(Diagnostic {
        line: None,
        message: format!("{}: unknown gen_ai operation {op:?}; {read_as}", span.place),
    });
    op_kind
}

/// The operation: `gen_ai.operation.name`, else the first word of the span name when it is a
/// known operation, else `chat` when the span has legacy prompt/completion attributes.
fn operation(span: &RawSpan) -> Option<String> {
    if let Some(op) = span.str("gen_ai.operation.name") {
        return Some(op);
    }
    let first = span.name.split_whitespace().next().unwrap_or_default();
    let known = first == "invoke_agent" || first == "execute_tool" || LLM_OPS.contains(&first);
    if known {
        return Some(first.to_string());
    }
    let legacy = span.has_prefix("gen_ai.prompt.") || span.has_prefix("gen_ai.completion.");
    (legacy || span.attrs.contains_key("gen_ai.input.messages")).then(|| "chat".to_string())
}

fn agent_op(span: &RawSpan) -> Op {
    let from_name = span
        .name
        .strip_prefix("invoke_agent")
        .map(|r| r.trim().trim_matches(['[', ']']).trim().to_string())
        .filter(|r| !r.is_empty());
    let name = span
        .str("gen_ai.agent.name")
        .or(from_name)
        .or_else(|| span.str("gen_ai.agent.id"))
        .unwrap_or_else(|| spantree::DEFAULT_AGENT.to_string());
    let role = span.str("gen_ai.agent.description").filter(|d| d != "No description.");
    Op::Agent { name, role }
}

fn tool_op(span: &RawSpan, n: &mut Node) -> Op {
    let name = span
        .str("gen_ai.tool.name")
        .or_else(|| span.name.strip_prefix("execute_tool").map(|r| r.trim().to_string()))
        .unwrap_or_default();
    n.input_text = ["gen_ai.tool.call.arguments", "gen_ai.tool.args", "input.value"].iter().find_map(|k| span.str(k));
    n.output_text = ["gen_ai.tool.call.result", "gen_ai.output", "output.value"].iter().find_map(|k| span.str(k));
    Op::Tool { name, call_id: span.str("gen_ai.tool.call.id") }
}

fn tokens(span: &RawSpan) -> Option<TokenCounts> {
    let input = span.uint("gen_ai.usage.input_tokens").or_else(|| span.uint("gen_ai.usage.prompt_tokens"));
    let output = span.uint("gen_ai.usage.output_tokens").or_else(|| span.uint("gen_ai.usage.completion_tokens"));
    (input.is_some() || output.is_some())
        .then(|| TokenCounts { input: input.unwrap_or(0), output: output.unwrap_or(0) })
}

/// Input messages: system instructions first, then `gen_ai.input.messages`, else the indexed
/// `gen_ai.prompt.N.*` form.
fn input_messages(span: &RawSpan) -> Vec<Msg> {
    let mut out = Vec::new();
    if let Some(si) = span.attrs.get("gen_ai.system_instructions") {
        let text = system_text(&otlp::parsed_json(si));
        if !text.is_empty() {
            out.push(Msg { role: "system".into(), name: None, parts: vec![Part::Text(text)] });
        }
    }
    match span.attrs.get("gen_ai.input.messages") {
        Some(v) => out.extend(msgs_from_value(&otlp::parsed_json(v))),
        None => out.extend(msgs_from_value(&otlp::unflatten(&span.attrs, "gen_ai.prompt"))),
    }
    out
}

/// `gen_ai.system_instructions`: a list of parts or plain text.
fn system_text(v: &Value) -> String {
    match v {
        Value::Array(parts) => parts
            .iter()
            .map(|p| p.get("content").map(value_text).unwrap_or_else(|| value_text(p)))
            .collect::<Vec<_>>()
            .join("\n"),
        other => value_text(other),
    }
}

/// Output messages: `gen_ai.output.messages`, else `gen_ai.completion.N.*`, else any-agent's
/// `gen_ai.output` (a JSON list of `{tool.name, tool.args}` calls, or the answer text).
fn output_messages(span: &RawSpan) -> Vec<Msg> {
    if let Some(v) = span.attrs.get("gen_ai.output.messages") {
        return msgs_from_value(&otlp::parsed_json(v));
    }
    let legacy = msgs_from_value(&otlp::unflatten(&span.attrs, "gen_ai.completion"));
    if !legacy.is_empty() {
        return legacy;
    }
    match span.attrs.get("gen_ai.output") {
        Some(v) => vec![any_agent_output(v)],
        None => Vec::new(),
    }
}

/// any-agent's `gen_ai.output` of a `call_llm` span as one assistant message.
fn any_agent_output(v: &Value) -> Msg {
    let parsed = otlp::parsed_json(v);
    let calls: Vec<Part> = parsed
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let name = c.get("tool.name")?;
            Some(Part::ToolCall {
                id: None,
                name: value_text(name),
                args: c.get("tool.args").map(value_text).unwrap_or_default(),
            })
        })
        .collect();
    let parts = if calls.is_empty() { vec![Part::Text(value_text(v))] } else { calls };
    Msg { role: "assistant".into(), name: None, parts }
}
