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
//! OpenLLMetry (traceloop/openllmetry `semconv_ai` `SpanAttributes`, `TraceloopSpanKindValues`)
//! entity spans: `traceloop.span.kind` `agent` → an agent invocation named
//! `traceloop.entity.name`, `tool` → a tool execution of that name, `workflow` / `task` →
//! scopes; `traceloop.entity.input` / `traceloop.entity.output` (JSON of `{args, kwargs}` or
//! LangChain's `{inputs, ...}` / `{outputs, ...}`) are their input and output text. Its model
//! calls carry the indexed `gen_ai.prompt.N.*` form below.
//!
//! Tokens: `gen_ai.usage.input_tokens` / `output_tokens` (legacy `prompt_tokens` /
//! `completion_tokens`). Errors: status code ERROR, `error.type`, `exception` events.
//!
//! Generations of the conventions, all read: the JSON `gen_ai.input.messages` /
//! `gen_ai.output.messages` attributes (semconv 1.37+, 2025; also written doubly encoded or as a
//! plain string); span events or log records `gen_ai.{system,user,assistant,tool}.message` and
//! `gen_ai.choice` (1.27–1.36, 2024–2025); the indexed `gen_ai.prompt.N.*` /
//! `gen_ai.completion.N.*` attributes and the `gen_ai.content.prompt` / `gen_ai.content.completion`
//! events with a JSON `gen_ai.prompt` / `gen_ai.completion` (before 1.27: OpenLLMetry, Semantic
//! Kernel). Operation names of those conventions (`chat.completions`) are mapped by
//! [`normalize_op`].
//!
//! Vercel AI SDK spans (`ai.operationId`, AI SDK 3.3–5): `ai.generateText.doGenerate` /
//! `ai.streamText.doStream` (and the `Object` variants) are model calls with `ai.prompt.messages`
//! in and `ai.response.text` / `ai.response.toolCalls` out; `ai.toolCall` is a tool execution
//! (`ai.toolCall.{name, id, args | input, result | output}`); the outer `ai.generateText` and
//! other operations are scopes. Tokens: `ai.usage.{promptTokens, completionTokens}` or
//! `{inputTokens, outputTokens}`.

use serde_json::Value;

use super::messages::{Msg, Part, msgs_from_value};
use super::otlp::{self, RawSpan};
use super::spantree::{self, Node, Op};
use super::{Document, FormatError, Loaded, value_text};
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
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    otlp::load_span_groups(name, SourceFormat::OtelGenAi, doc, node)
}

/// Maps one span with GenAI attributes to a [`Node`] (also used for any-agent dumps).
pub fn node(span: &RawSpan, diags: &mut Vec<Diagnostic>) -> Node {
    let mut n = Node::new(span.span_id.clone(), span.parent_id.clone(), span.name.clone(), span.place.clone());
    n.sort_key = span.sort_key.clone();
    n.timestamp = span.start.clone();
    n.is_error = span.is_error || span.attrs.contains_key("error.type");
    n.error = span.error.clone().or_else(|| span.str("error.type"));
    n.tokens = tokens(span);
    if span.attrs.contains_key("ai.operationId") {
        vercel(span, &mut n);
        return n;
    }
    if let Some(op) = traceloop_op(span, &mut n) {
        n.op = op;
        return n;
    }
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

/// The attribute OpenLLMetry (traceloop) puts on the spans of its `@workflow`, `@task`,
/// `@agent` and `@tool` decorators and of framework steps.
pub const TRACELOOP_KIND: &str = "traceloop.span.kind";

/// An OpenLLMetry entity span (see the module doc) as a node: `agent` → an agent invocation
/// named `traceloop.entity.name`, `tool` → a tool execution, `workflow` and `task` → scopes; each
/// with `traceloop.entity.input` / `traceloop.entity.output` as its input and output text.
/// `None` for spans without a known `traceloop.span.kind` (model calls carry none).
fn traceloop_op(span: &RawSpan, n: &mut Node) -> Option<Op> {
    let kind = span.str(TRACELOOP_KIND)?.trim().to_ascii_lowercase();
    if !matches!(kind.as_str(), "agent" | "tool" | "workflow" | "task") {
        return None;
    }
    let name = span
        .str("traceloop.entity.name")
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| span.name.strip_suffix(&format!(".{kind}")).unwrap_or(&span.name).to_string());
    n.role = kind.clone();
    n.input_text = span.attrs.get("traceloop.entity.input").map(traceloop_text);
    n.output_text = span.attrs.get("traceloop.entity.output").map(traceloop_text);
    Some(match kind.as_str() {
        "agent" => Op::Agent { name, role: None },
        "tool" => Op::Tool { name, call_id: span.str("gen_ai.tool.call.id") },
        _ => Op::Scope,
    })
}

/// The readable text of a `traceloop.entity.input` / `output`: the JSON the decorators write
/// (`{args, kwargs}`, LangChain's `{inputs, tags, metadata, kwargs}` / `{outputs, kwargs}`)
/// unwrapped to what was passed or returned; a JSON string decoded; anything else as written.
fn traceloop_text(v: &Value) -> String {
    let parsed = match v {
        Value::String(s) if s.trim_start().starts_with('"') => {
            serde_json::from_str::<Value>(s).unwrap_or_else(|_| v.clone())
        }
        other => otlp::parsed_json(other),
    };
    let inner = match &parsed {
        Value::Object(m) if m.contains_key("inputs") => &m["inputs"],
        Value::Object(m) if m.contains_key("outputs") => &m["outputs"],
        Value::Object(m) if m.contains_key("args") || m.contains_key("kwargs") => {
            let args = m.get("args").and_then(Value::as_array).filter(|a| !a.is_empty());
            let kwargs = m.get("kwargs").filter(|k| k.as_object().is_some_and(|k| !k.is_empty()));
            match (args, kwargs) {
                (Some(a), None) if a.len() == 1 => &a[0],
                (None, Some(k)) => k,
                _ => &parsed,
            }
        }
        _ => &parsed,
    };
    value_text(inner)
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
/// known operation, else `chat` when the span has legacy prompt/completion attributes or GenAI
/// content events. Names of older or vendor conventions are mapped to the current ones
/// ([`normalize_op`]).
fn operation(span: &RawSpan) -> Option<String> {
    if let Some(op) = span.str("gen_ai.operation.name") {
        return Some(normalize_op(&op));
    }
    let first = normalize_op(span.name.split_whitespace().next().unwrap_or_default());
    let known = first == "invoke_agent" || first == "execute_tool" || LLM_OPS.contains(&first.as_str());
    if known {
        return Some(first);
    }
    let legacy = span.has_prefix("gen_ai.prompt") || span.has_prefix("gen_ai.completion");
    let events = !span.genai_events.is_empty();
    (legacy || events || span.attrs.contains_key("gen_ai.input.messages")).then(|| "chat".to_string())
}

/// Operation names of older conventions and SDKs mapped to semconv names: `chat.completions`,
/// `chat_completions`, `ChatCompletion` (Semantic Kernel, OpenAI SDK instrumentations) → `chat`;
/// `text.completions`, `completions` → `text_completion`; `embedding` → `embeddings`; `tool`,
/// `execute_function` → `execute_tool`; `agent`, `invoke` `agent` spellings → `invoke_agent`.
pub fn normalize_op(op: &str) -> String {
    let lower = op.trim().to_ascii_lowercase().replace(['.', '-', ' '], "_");
    match lower.as_str() {
        "chat_completions" | "chat_completion" | "chatcompletion" | "chatcompletions" | "chat_completions_create" => {
            "chat".into()
        }
        "text_completions" | "completions" | "textcompletion" => "text_completion".into(),
        "embedding" | "embed" => "embeddings".into(),
        "tool" | "execute_function" | "tool_call" => "execute_tool".into(),
        "agent" | "invoke_agents" | "agent_run" => "invoke_agent".into(),
        _ => lower,
    }
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
        Some(v) => match deep_json(v) {
            Value::String(text) => out.extend(msgs_or_text(&text, "user")),
            other => out.extend(msgs_from_value(&other)),
        },
        None => out.extend(msgs_from_value(&otlp::unflatten(&span.attrs, "gen_ai.prompt"))),
    }
    if let Some(Value::String(p)) = span.attrs.get("gen_ai.prompt") {
        out.extend(msgs_or_text(p, "user"));
    }
    if out.iter().all(|m| m.role == "system") {
        out.extend(event_messages(span, false));
    }
    out
}

/// A JSON string holding JSON (possibly encoded twice, as some exporters do) decoded; other values
/// as [`otlp::parsed_json`].
fn deep_json(v: &Value) -> Value {
    let mut cur = otlp::parsed_json(v);
    for _ in 0..3 {
        match &cur {
            Value::String(s) if s.trim_start().starts_with(['[', '{', '"']) => match serde_json::from_str::<Value>(s) {
                Ok(inner) => cur = inner,
                Err(_) => break,
            },
            _ => break,
        }
    }
    cur
}

/// Messages held in a string (JSON, possibly encoded twice), or the string as one message of
/// `role` when it is plain text.
fn msgs_or_text(s: &str, role: &str) -> Vec<Msg> {
    let decoded = deep_json(&Value::String(s.to_string()));
    match &decoded {
        Value::String(text) if !text.trim().is_empty() => {
            vec![Msg { role: role.into(), name: None, parts: vec![Part::Text(text.clone())] }]
        }
        Value::String(_) => Vec::new(),
        other => {
            let msgs = msgs_from_value(other);
            match msgs.is_empty() {
                true => vec![Msg { role: role.into(), name: None, parts: vec![Part::Text(value_text(other))] }],
                false => msgs,
            }
        }
    }
}

/// Messages from the span's GenAI content events: inputs (`output == false`) from
/// `gen_ai.content.prompt` and `gen_ai.{system,user,assistant,tool}.message`, outputs from
/// `gen_ai.content.completion` and `gen_ai.choice`.
fn event_messages(span: &RawSpan, output: bool) -> Vec<Msg> {
    let mut out = Vec::new();
    for ev in &span.genai_events {
        let p = &ev.payload;
        let body = p.get("body").filter(|b| !b.is_null());
        match (ev.name.as_str(), output) {
            ("gen_ai.content.prompt", false) => {
                let v = p.get("gen_ai.prompt").or(body).cloned().unwrap_or(Value::Null);
                out.extend(msgs_or_text(&value_or_text(&v), "user"));
            }
            ("gen_ai.content.completion", true) => {
                let v = p.get("gen_ai.completion").or(body).cloned().unwrap_or(Value::Null);
                out.extend(msgs_or_text(&value_or_text(&v), "assistant"));
            }
            ("gen_ai.choice", true) => {
                let b = body.unwrap_or(p);
                let msg = b.get("message").unwrap_or(b);
                out.extend(role_message(msg, "assistant"));
            }
            (name, false) if name.ends_with(".message") => {
                let role = name.trim_start_matches("gen_ai.").trim_end_matches(".message");
                out.extend(role_message(body.unwrap_or(p), role));
            }
            _ => {}
        }
    }
    out
}

/// A string value as is, other JSON written out.
fn value_or_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One event body `{content, tool_calls, id}` as a message of `role` (the body's own `role`
/// wins); a tool message's `id` is the call it answers.
fn role_message(body: &Value, role: &str) -> Option<Msg> {
    let mut obj = match deep_json(body) {
        Value::Object(m) => m,
        Value::String(s) => {
            let mut m = serde_json::Map::new();
            m.insert("content".into(), Value::String(s));
            m
        }
        _ => return None,
    };
    obj.entry("role").or_insert_with(|| Value::String(role.to_string()));
    if is_tool_role(&obj, role)
        && !obj.contains_key("tool_call_id")
        && let Some(id) = obj.get("id").cloned()
    {
        obj.insert("tool_call_id".into(), id);
    }
    // A tool's result is kept as it was written (JSON text included): it is the tool's answer,
    // not parts of a message.
    let is_tool = obj.get("role").and_then(Value::as_str).is_some_and(|r| super::messages::norm_role(r) == "tool");
    if !is_tool && let Some(Value::String(c)) = obj.get("content").cloned() {
        let inner = deep_json(&Value::String(c));
        if inner.is_array() || inner.is_object() {
            obj.insert("content".into(), inner);
        }
    }
    super::messages::msg_from_value(&Value::Object(obj))
}

fn is_tool_role(obj: &serde_json::Map<String, Value>, role: &str) -> bool {
    let own = obj.get("role").and_then(Value::as_str).unwrap_or(role);
    super::messages::norm_role(own) == "tool"
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
        return match deep_json(v) {
            Value::String(text) => msgs_or_text(&text, "assistant"),
            other => msgs_from_value(&other),
        };
    }
    let legacy = msgs_from_value(&otlp::unflatten(&span.attrs, "gen_ai.completion"));
    if !legacy.is_empty() {
        return legacy;
    }
    if let Some(Value::String(c)) = span.attrs.get("gen_ai.completion") {
        return msgs_or_text(c, "assistant");
    }
    let events = event_messages(span, true);
    if !events.is_empty() {
        return events;
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

/// A Vercel AI SDK span (see the module doc) as a node.
fn vercel(span: &RawSpan, n: &mut Node) {
    let op = span.str("ai.operationId").unwrap_or_default();
    n.role = op.clone();
    let usage = |a: &str, b: &str| span.uint(a).or_else(|| span.uint(b));
    let input = usage("ai.usage.promptTokens", "ai.usage.inputTokens");
    let output = usage("ai.usage.completionTokens", "ai.usage.outputTokens");
    if input.is_some() || output.is_some() {
        n.tokens = Some(TokenCounts { input: input.unwrap_or(0), output: output.unwrap_or(0) });
    }
    if op == "ai.toolCall" {
        let name = span.str("ai.toolCall.name").unwrap_or_default();
        n.input_text = span.str("ai.toolCall.args").or_else(|| span.str("ai.toolCall.input"));
        n.output_text = span.str("ai.toolCall.result").or_else(|| span.str("ai.toolCall.output"));
        n.op = Op::Tool { name, call_id: span.str("ai.toolCall.id") };
        return;
    }
    if !(op.ends_with(".doGenerate") || op.ends_with(".doStream")) {
        n.op = Op::Scope;
        return;
    }
    n.op = Op::Llm;
    n.input = match span.attrs.get("ai.prompt.messages") {
        Some(v) => msgs_from_value(&deep_json(v)),
        None => span.attrs.get("ai.prompt").map(|p| vercel_prompt(&deep_json(p))).unwrap_or_default(),
    };
    let mut parts = Vec::new();
    if let Some(text) = span.str("ai.response.text").filter(|t| !t.is_empty()) {
        parts.push(Part::Text(text));
    }
    for call in
        deep_json(span.attrs.get("ai.response.toolCalls").unwrap_or(&Value::Null)).as_array().into_iter().flatten()
    {
        let args = call.get("args").or_else(|| call.get("input")).map(value_text).unwrap_or_default();
        parts.push(Part::ToolCall {
            id: call.get("toolCallId").map(value_text),
            name: call.get("toolName").map(value_text).unwrap_or_default(),
            args,
        });
    }
    if !parts.is_empty() {
        n.output = vec![Msg { role: "assistant".into(), name: None, parts }];
    }
}

/// The outer `ai.prompt` `{system?, prompt?, messages?}` as messages.
fn vercel_prompt(p: &Value) -> Vec<Msg> {
    let mut out = Vec::new();
    if let Some(system) = p.get("system").and_then(Value::as_str) {
        out.push(Msg { role: "system".into(), name: None, parts: vec![Part::Text(system.to_string())] });
    }
    if let Some(prompt) = p.get("prompt").and_then(Value::as_str) {
        out.push(Msg { role: "user".into(), name: None, parts: vec![Part::Text(prompt.to_string())] });
    }
    if let Some(m) = p.get("messages") {
        out.extend(msgs_from_value(m));
    }
    out
}
