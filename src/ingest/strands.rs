//! Strands Agents spans, as `strands/telemetry/tracer.py` (`Tracer`) of strands-agents 1.x writes
//! them (instrumentation scope `strands.telemetry.tracer`, `gen_ai.system` /
//! `gen_ai.provider.name` `strands-agents`):
//! - `invoke_agent <name>` → an agent invocation named by `gen_ai.agent.name`; its
//!   `gen_ai.user.message` events are the prompt, its `gen_ai.choice` (`message`: the result's
//!   text) the answer;
//! - `execute_event_loop_cycle` → a scope (its message events repeat the conversation);
//! - `chat` → a model call: input from the span events `gen_ai.{system,user,assistant,tool}.message`
//!   whose `content` is JSON of Bedrock Converse content blocks, output from `gen_ai.choice`
//!   (`message`: JSON of the reply's blocks);
//! - `execute_tool <name>` → a tool execution (`gen_ai.tool.name`, `gen_ai.tool.call.id`): the
//!   arguments from its `gen_ai.tool.message` event, the result from its `gen_ai.choice` event
//!   (the `toolResult` content blocks), flagged when `tool.status` is `error` or the span's
//!   status is ERROR.
//!
//! Blocks are decoded by [`super::messages`]: `{text}`, `{toolUse: {toolUseId, name, input}}` (a
//! call), `{toolResult: {toolUseId, status, content}}` (its answer, linked by `toolUseId`, flagged
//! on `status: error`), `{reasoningContent}` (a thought), media as placeholders. A user message
//! holding only tool results is the tools' answer, not the user's words. The newer
//! `gen_ai.client.inference.operation.details` event (semconv opt-in `gen_ai_latest_experimental`)
//! is read from its `gen_ai.input.messages` / `gen_ai.output.messages`.

use serde_json::Value;

use super::messages::{Msg, Part, bedrock_text, msg_from_value, msgs_from_value};
use super::otlp::{self, RawSpan};
use super::pydanticai::{any_span, has_attr};
use super::spantree::{Node, Op};
use super::{Document, FormatError, Loaded, value_text};
use crate::model::{Diagnostic, SourceFormat};

/// The provider name Strands writes in `gen_ai.system` / `gen_ai.provider.name`.
pub const PROVIDER: &str = "strands-agents";

/// Marks only Strands spans carry, as JSON text: the provider name and the event-loop attribute
/// key. The streamed OTLP path leaves a file holding one of them to [`detect`].
pub const ATTRIBUTE_MARKS: [&str; 2] = ["\"strands-agents\"", "\"event_loop.cycle_id\""];

/// Whether `doc` is OTLP/JSON written by Strands Agents: a `strands.*` scope or a span whose
/// `gen_ai.system` / `gen_ai.provider.name` is `strands-agents`.
pub fn detect(doc: &Document) -> bool {
    let provider = |sp: &Value| {
        sp.get("attributes").and_then(Value::as_array).is_some_and(|a| {
            a.iter().any(|kv| {
                matches!(kv.get("key").and_then(Value::as_str), Some("gen_ai.system" | "gen_ai.provider.name"))
                    && kv.pointer("/value/stringValue").and_then(Value::as_str) == Some(PROVIDER)
            })
        })
    };
    otlp::is_otlp(doc)
        && any_span(doc, &|scope, sp| {
            scope.is_some_and(|s| s.starts_with("strands")) || provider(sp) || has_attr(sp, "event_loop.cycle_id")
        })
}

/// Loads Strands spans; one trajectory per trace id.
///
/// # Errors
/// A message when the document holds no span.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    otlp::load_span_groups(name, SourceFormat::Strands, doc, node)
}

/// Maps one span to a [`Node`]: [`super::otel::node`], corrected for the framework.
pub fn node(span: &RawSpan, diags: &mut Vec<Diagnostic>) -> Node {
    let mut n = super::otel::node(span, diags);
    if span.name.starts_with("execute_event_loop_cycle") {
        n.op = Op::Scope;
        return n;
    }
    match &n.op {
        Op::Tool { .. } => {
            let input = event(span, "gen_ai.tool.message").and_then(|p| field(p, "content"));
            let output = event(span, "gen_ai.choice").and_then(|p| field(p, "message"));
            if n.input_text.is_none() {
                n.input_text = input.map(|v| value_text(&v));
            }
            if n.output_text.is_none() {
                n.output_text = output.map(|v| bedrock_text(&v));
            }
            n.is_error |= span.str("tool.status").is_some_and(|s| s.eq_ignore_ascii_case("error"));
        }
        Op::Llm | Op::Agent { .. } => {
            let (input, output) = messages(span);
            if !input.is_empty() || !output.is_empty() {
                n.input = input;
                n.output = output;
            }
        }
        _ => {}
    }
    n
}

/// The payload of the span's first event named `name`.
fn event<'a>(span: &'a RawSpan, name: &str) -> Option<&'a Value> {
    span.genai_events.iter().find(|e| e.name == name).map(|e| &e.payload)
}

/// A payload field (or the field of its log `body`), JSON in a string decoded.
fn field(payload: &Value, key: &str) -> Option<Value> {
    let v = payload.get(key).or_else(|| payload.get("body").and_then(|b| b.get(key)))?;
    Some(otlp::parsed_json(v))
}

/// Input and output messages of a model call or agent span from its events.
fn messages(span: &RawSpan) -> (Vec<Msg>, Vec<Msg>) {
    let mut input = Vec::new();
    let mut output = Vec::new();
    for ev in &span.genai_events {
        let p = &ev.payload;
        if ev.name == "gen_ai.client.inference.operation.details" {
            input.extend(field(p, "gen_ai.input.messages").map(|v| msgs_from_value(&v)).unwrap_or_default());
            output.extend(field(p, "gen_ai.output.messages").map(|v| msgs_from_value(&v)).unwrap_or_default());
        } else if ev.name == "gen_ai.choice" {
            output.extend(field(p, "message").and_then(|c| blocks_msg(c, "assistant")));
        } else if let Some(role) = ev.name.strip_prefix("gen_ai.").and_then(|r| r.strip_suffix(".message")) {
            input.extend(field(p, "content").and_then(|c| blocks_msg(c, role)));
        }
    }
    (input, output)
}

/// A message of `role` from Bedrock content blocks (or plain text); texts trimmed, so the agent's
/// answer and the model's last reply compare equal. Only tool results → role `tool`.
fn blocks_msg(content: Value, role: &str) -> Option<Msg> {
    let content = match content {
        Value::String(s) => Value::String(s.trim().to_string()),
        other => other,
    };
    let mut m = msg_from_value(&serde_json::json!({"role": role, "content": content}))?;
    for p in &mut m.parts {
        if let Part::Text(t) = p {
            *t = t.trim().to_string();
        }
    }
    m.parts.retain(|p| !matches!(p, Part::Text(t) if t.is_empty()));
    if !m.parts.is_empty() && m.parts.iter().all(|p| matches!(p, Part::ToolResponse { .. })) {
        m.role = "tool".into();
    }
    (!m.parts.is_empty()).then_some(m)
}
