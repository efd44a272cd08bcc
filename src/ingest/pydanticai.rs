//! pydantic-ai spans (as Logfire or any OTLP exporter receives them), as pydantic-ai 0.x–1.x
//! writes them in `pydantic_ai/models/instrumented.py` (`InstrumentedModel`,
//! `InstrumentationSettings`) and `pydantic_ai/_agent_graph.py` / `agent/__init__.py`:
//! - the `agent run` span (`invoke_agent <name>` from instrumentation version 3) names the agent
//!   in `agent_name` (`gen_ai.agent.name`) and holds the answer in `final_result` and the whole
//!   conversation in `all_messages_events` (version 1) or `pydantic_ai.all_messages` (version 2+);
//!   it is an agent invocation, the conversation being context already held by the model calls;
//! - `chat <model>` spans hold the messages of one model request: with the default
//!   `event_mode="attributes"` of version 1, an `events` attribute, a JSON list of
//!   `gen_ai.{system,user,assistant,tool}.message` events and `gen_ai.choice` (the response);
//!   from version 2, `gen_ai.input.messages` / `gen_ai.output.messages` (read as OTel GenAI);
//! - `running tool` spans (`execute_tool <name>` from version 3) are tool executions:
//!   `gen_ai.tool.name`, `gen_ai.tool.call.id`, arguments in `tool_arguments`
//!   (`gen_ai.tool.call.arguments`), result in `tool_response` (`gen_ai.tool.call.result`);
//! - `running tools` and other spans are scopes.
//!
//! Every model request repeats the conversation: messages already shown, and tool answers the
//! tool spans already gave, are not steps again ([`spantree`]). A tool answer that ends in
//! pydantic-ai's retry prompt (`RetryPromptPart.model_response`, "Fix the errors and try again.")
//! is flagged as an error, as is a span with status ERROR.

use serde_json::{Value, json};

use super::messages::{Msg, Part, msg_from_value};
use super::otlp::{self, RawSpan};
use super::spantree::{self, Node, Op};
use super::{DETECT_SAMPLE, Document, FormatError, Loaded, value_text};
use crate::model::SourceFormat;

/// The instrumentation scope pydantic-ai names.
pub const SCOPE: &str = "pydantic-ai";

/// Attribute keys only pydantic-ai spans carry, as JSON text (quoted): the streamed OTLP path
/// leaves a file holding one of them to [`detect`].
pub const ATTRIBUTE_MARKS: [&str; 4] =
    ["\"all_messages_events\"", "\"pydantic_ai.all_messages\"", "\"tool_arguments\"", "\"final_result\""];
/// The end of pydantic-ai's retry prompt to the model.
pub const RETRY_SUFFIX: &str = "Fix the errors and try again.";

/// Whether any of the first [`DETECT_SAMPLE`] spans of an OTLP document satisfies `pred`
/// (called with the scope name and the raw span), without decoding the spans.
pub fn any_span(doc: &Document, pred: &dyn Fn(Option<&str>, &Value) -> bool) -> bool {
    let values: Vec<&Value> = match doc {
        Document::Json(v) => vec![v],
        Document::Lines { values, .. } => values.iter().map(|(_, v)| v).take(DETECT_SAMPLE).collect(),
    };
    let mut seen = 0;
    for v in values {
        for rs in v.get("resourceSpans").and_then(Value::as_array).into_iter().flatten() {
            for ss in rs.get("scopeSpans").and_then(Value::as_array).into_iter().flatten() {
                let scope = ss.pointer("/scope/name").and_then(Value::as_str);
                for sp in ss.get("spans").and_then(Value::as_array).into_iter().flatten() {
                    if pred(scope, sp) {
                        return true;
                    }
                    seen += 1;
                    if seen >= DETECT_SAMPLE {
                        return false;
                    }
                }
            }
        }
    }
    false
}

/// Whether a raw OTLP span has an attribute `key`.
pub fn has_attr(span: &Value, key: &str) -> bool {
    span.get("attributes")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|kv| kv.get("key").and_then(Value::as_str) == Some(key)))
}

/// Whether `doc` is OTLP/JSON written by pydantic-ai: its scope is `pydantic-ai`, or a span carries
/// pydantic-ai's own attributes (`all_messages_events`, `pydantic_ai.all_messages`,
/// `tool_arguments`, `final_result` with `agent_name`).
pub fn detect(doc: &Document) -> bool {
    otlp::is_otlp(doc)
        && any_span(doc, &|scope, sp| {
            scope == Some(SCOPE)
                || has_attr(sp, "all_messages_events")
                || has_attr(sp, "pydantic_ai.all_messages")
                || (has_attr(sp, "tool_arguments") && has_attr(sp, "gen_ai.tool.name"))
                || (has_attr(sp, "agent_name") && has_attr(sp, "final_result"))
        })
}

/// Loads pydantic-ai spans; one trajectory per trace id.
///
/// # Errors
/// A message when the document holds no span.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    otlp::load_span_groups(name, SourceFormat::PydanticAi, doc, node)
}

/// Maps one span to a [`Node`]: [`super::otel::node`], corrected for the framework.
pub fn node(span: &RawSpan, diags: &mut Vec<crate::model::Diagnostic>) -> Node {
    let mut n = super::otel::node(span, diags);
    let first = span.name.split_whitespace().next().unwrap_or_default();
    let agent = span.str("agent_name").or_else(|| span.str("gen_ai.agent.name"));
    if span.name == "agent run"
        || (first == "invoke_agent" && agent.is_some())
        || span.attrs.contains_key("final_result")
    {
        let name = agent.unwrap_or_else(|| spantree::DEFAULT_AGENT.to_string());
        n.role = span.name.clone();
        n.op = Op::Agent { name, role: None };
        n.input = Vec::new();
        n.output = span
            .str("final_result")
            .filter(|r| !r.trim().is_empty())
            .map(|r| vec![Msg { role: "assistant".into(), name: None, parts: vec![Part::Text(r)] }])
            .unwrap_or_default();
        return n;
    }
    if span.name == "running tool" || (first == "execute_tool" && span.attrs.contains_key("tool_arguments")) {
        let tool = span.str("gen_ai.tool.name").unwrap_or_default();
        n.role = span.name.clone();
        n.input_text = span.str("tool_arguments").or_else(|| span.str("gen_ai.tool.call.arguments"));
        n.output_text = span.str("tool_response").or_else(|| span.str("gen_ai.tool.call.result"));
        n.is_error |= n.output_text.as_deref().is_some_and(|t| t.trim_end().ends_with(RETRY_SUFFIX));
        n.op = Op::Tool { name: tool, call_id: span.str("gen_ai.tool.call.id") };
        return n;
    }
    if span.name == "running tools" {
        n.op = Op::Scope;
        return n;
    }
    if let Some(events) = span.attrs.get("events").map(otlp::parsed_json).filter(Value::is_array) {
        n.op = Op::Llm;
        n.role = span.str("gen_ai.operation.name").unwrap_or_else(|| "chat".into());
        let (input, output) = event_messages(&events);
        n.input = input;
        n.output = output;
    }
    n
}

/// The messages of a version-1 `events` attribute: inputs from `gen_ai.*.message` events, outputs
/// from `gen_ai.choice`.
pub fn event_messages(events: &Value) -> (Vec<Msg>, Vec<Msg>) {
    let mut input = Vec::new();
    let mut output = Vec::new();
    for ev in events.as_array().into_iter().flatten() {
        let name = ev.get("event.name").and_then(Value::as_str).unwrap_or_default();
        if name == "gen_ai.choice" {
            let msg = ev.get("message").unwrap_or(ev);
            output.extend(event_msg(msg, "assistant"));
        } else if let Some(role) = name.strip_prefix("gen_ai.").and_then(|r| r.strip_suffix(".message")) {
            input.extend(event_msg(ev, role));
        }
    }
    (input, output)
}

/// One event as a message; a tool message answers the call named by its `id`.
fn event_msg(ev: &Value, role: &str) -> Option<Msg> {
    let role = ev.get("role").and_then(Value::as_str).unwrap_or(role);
    if role == "tool" {
        let text = ev.get("content").map(value_text).unwrap_or_default();
        let is_error = text.trim_end().ends_with(RETRY_SUFFIX);
        let id = super::messages::id_text(ev.get("id").or_else(|| ev.get("tool_call_id")));
        return Some(Msg { role: "tool".into(), name: None, parts: vec![Part::ToolResponse { id, text, is_error }] });
    }
    let mut m = ev.clone();
    if let Some(obj) = m.as_object_mut() {
        obj.insert("role".into(), json!(role));
        // `name` of a pydantic-ai event is a tool name, not a participant.
        obj.remove("name");
    }
    msg_from_value(&m)
}
