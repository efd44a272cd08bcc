//! MLflow traces as `Trace.to_json()` / `to_dict()` writes them (MLflow 3, and MLflow 2.14+).
//!
//! Schema: mlflow `mlflow/entities/trace.py` (`{info, data}`), `trace_info.py` (MLflow 3: `{trace_id,
//! request_preview, response_preview, state: OK | ERROR | IN_PROGRESS, request_time, ...}`;
//! MLflow 2 `trace_info_v2.py`: `{request_id, status, timestamp_ms, ...}`), `trace_data.py`
//! (`{spans}`) and `span.py` (MLflow 3 `Span.to_dict`: `{name, trace_id, span_id,
//! parent_span_id, start_time_unix_nano, end_time_unix_nano, status: {code, message},
//! attributes, events}`; MLflow 2: `{name, context: {span_id, trace_id}, parent_id, start_time,
//! end_time, status_code, status_message, attributes, events}`). Attribute values are
//! JSON-encoded strings (`"mlflow.spanType": "\"LLM\""`). A list of traces loads one
//! trajectory per trace.
//!
//! Each span becomes a [`spantree`] node, siblings ordered by start time, by
//! `mlflow.spanType` (`mlflow/entities/span.py`, `SpanType`):
//! - `AGENT` → an agent invocation named by the span (its input messages or prompt are the
//!   delegated request); descendants act as it;
//! - `LLM`, `CHAT_MODEL` → a model call: input messages from `mlflow.spanInputs` (`{messages}`,
//!   a list, or a prompt), output messages from `mlflow.spanOutputs` (OpenAI `choices[].message`,
//!   LangChain `generations[][].message`, a message, or text); the conversation each call
//!   re-sends is shown once; tokens from `mlflow.chat.tokenUsage` (`input_tokens`,
//!   `output_tokens`) or the output's `usage`;
//! - `TOOL`, `RETRIEVER`, `EMBEDDING`, `RERANKER`, `PARSER` → a tool execution (arguments from
//!   the inputs, result from the outputs) answering the model's call of that tool (matched by
//!   name: MLflow spans carry no call id), or a call and a result;
//! - `CHAIN`, `UNKNOWN` → scopes (a failed scope whose failure no child shows is an error step of
//!   its own);
//! - another type (`span_type` may be any string) → kept with a diagnostic naming the span (id,
//!   name) and the type ([`spantree::unknown_kind`]): a model call when its inputs / outputs hold
//!   chat messages, else a message with its outputs (else inputs) text, else a scope.
//!
//! A span is an error when its status is `ERROR` (`STATUS_CODE_ERROR`), with the status message or
//! the `exception` event's `exception.type: exception.message` as its text. The task is the first
//! user message (else the root's inputs, else `request_preview`); the observed output the root's
//! outputs (else `response_preview`).

use serde_json::Value;

use super::messages::{Msg, Part, msg_from_value, msgs_from_value};
use super::spantree::{self, Node, Op};
use super::{DETECT_SAMPLE, Document, FormatError, Loaded, value_text};
use crate::model::{Diagnostic, SourceFormat, TokenCounts};

const TOOL_TYPES: [&str; 5] = ["TOOL", "RETRIEVER", "EMBEDDING", "RERANKER", "PARSER"];

fn spans_of(t: &Value) -> Option<&Vec<Value>> {
    t.pointer("/data/spans").and_then(Value::as_array)
}

fn is_trace(t: &Value) -> bool {
    let info = t.get("info").filter(|i| i.is_object());
    let has_id =
        info.is_some_and(|i| ["trace_id", "request_id"].iter().any(|k| i.get(*k).is_some_and(Value::is_string)));
    let mlflow_attrs = spans_of(t).is_some_and(|spans| {
        spans.iter().take(DETECT_SAMPLE).any(|s| {
            s.get("attributes").and_then(Value::as_object).is_some_and(|a| a.keys().any(|k| k.starts_with("mlflow.")))
        })
    });
    has_id && mlflow_attrs
}

fn traces(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(a) => a.iter().filter(|t| is_trace(t)).collect(),
        _ if is_trace(v) => vec![v],
        _ => Vec::new(),
    }
}

/// Whether `doc` is an MLflow trace (`{info: {trace_id | request_id}, data: {spans}}` with
/// `mlflow.*` span attributes) or a list of them.
pub fn detect(doc: &Document) -> bool {
    match doc {
        Document::Json(v) => !traces(v).is_empty(),
        Document::Lines { .. } => false,
    }
}

/// Loads MLflow traces named `name`: one trajectory per trace.
///
/// # Errors
/// A message when the document holds no MLflow trace.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let Document::Json(v) = doc else {
        return Err(FormatError::JsonLines { expected: "one JSON trace {info, data: {spans}}" });
    };
    let found = traces(v);
    if found.is_empty() {
        return Err(FormatError::Shape {
            expected: "a trace {info: {trace_id}, data: {spans: [...]}} with mlflow.* span attributes".into(),
        });
    }
    let mut diags = Vec::new();
    let mut groups = Vec::new();
    for (ti, t) in found.iter().enumerate() {
        let id = t.get("info").and_then(|i| i.get("trace_id").or_else(|| i.get("request_id"))).map(value_text);
        let prefix = if found.len() > 1 { format!("traces[{ti}].") } else { String::new() };
        let nodes = spans_of(t)
            .into_iter()
            .flatten()
            .enumerate()
            .filter_map(|(i, s)| node(s, &format!("{prefix}data.spans[{i}]"), &mut diags))
            .collect();
        groups.push((id, nodes));
    }
    let mut loaded = spantree::load_groups(name, SourceFormat::Mlflow, groups, diags);
    for (traj, t) in loaded.trajectories.iter_mut().zip(&found) {
        let info = &t["info"];
        let preview = |k: &str| info.get(k).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
        if traj.task.is_empty()
            && let Some(p) = preview("request_preview")
        {
            traj.task = p.to_string();
        }
        if traj.observed_output.is_none() {
            traj.observed_output = preview("response_preview").map(str::to_string);
        }
        if let Some(state) = info.get("state").or_else(|| info.get("status")).filter(|s| !s.is_null()) {
            traj.metadata.push(("state".into(), value_text(state)));
        }
    }
    Ok(loaded)
}

/// An attribute's value: JSON-encoded strings decoded, other values as they are.
fn attr(s: &Value, key: &str) -> Option<Value> {
    let v = s.get("attributes")?.get(key)?;
    match v {
        Value::String(text) => Some(serde_json::from_str(text).unwrap_or_else(|_| v.clone())),
        Value::Null => None,
        other => Some(other.clone()),
    }
}

/// A start time as a sort key: nanoseconds (a number or digits) zero-padded, an ISO 8601 time
/// as its unix nanoseconds ([`spantree::time_sort_key`]); `None` for anything else.
fn time_key(v: Option<&Value>) -> Option<String> {
    let t = match v? {
        Value::Number(n) => n.as_u64()?.to_string(),
        Value::String(s) => s.trim().to_string(),
        _ => return None,
    };
    let key = spantree::time_sort_key(&t);
    key.bytes().all(|c| c.is_ascii_digit()).then_some(key)
}

fn node(s: &Value, place: &str, diags: &mut Vec<Diagnostic>) -> Option<Node> {
    let text = |v: Option<&Value>| v.filter(|v| !v.is_null()).map(value_text);
    let id = text(s.get("span_id")).or_else(|| text(s.pointer("/context/span_id")));
    let Some(id) = id else {
        diags.push(Diagnostic { line: None, message: format!("{place} skipped: missing \"span_id\"") });
        return None;
    };
    let name = text(s.get("name")).unwrap_or_default();
    let parent = text(s.get("parent_span_id")).or_else(|| text(s.get("parent_id")));
    let mut n = Node::new(id, parent, name.clone(), format!("span {place} ({name})"));
    let ty = attr(s, "mlflow.spanType").map(|t| value_text(&t)).unwrap_or_else(|| "UNKNOWN".into());
    n.role = ty.clone();
    let start = s.get("start_time_unix_nano").or_else(|| s.get("start_time"));
    n.sort_key = time_key(start);
    n.timestamp = text(start);
    let code = s.pointer("/status/code").or_else(|| s.get("status_code")).map(value_text).unwrap_or_default();
    n.is_error = code.to_ascii_uppercase().contains("ERROR") || code == "2";
    let exception = s.get("events").and_then(Value::as_array).into_iter().flatten().find_map(|e| {
        (e.get("name").and_then(Value::as_str) == Some("exception")).then(|| {
            let a = |k: &str| e.pointer(&format!("/attributes/{}", k.replace('/', "~1"))).map(value_text);
            match (a("exception.type"), a("exception.message")) {
                (Some(t), Some(m)) => format!("{t}: {m}"),
                (t, m) => m.or(t).unwrap_or_default(),
            }
        })
    });
    let status_msg = text(s.pointer("/status/message")).or_else(|| text(s.get("status_message")));
    n.error = status_msg.filter(|m| !m.trim().is_empty()).or(exception.filter(|m| !m.is_empty()));
    let inputs = attr(s, "mlflow.spanInputs");
    let outputs = attr(s, "mlflow.spanOutputs");
    n.op = match ty.as_str() {
        "AGENT" => {
            set_io(&mut n, inputs.as_ref(), outputs.as_ref());
            n.input = inputs.as_ref().map(input_msgs).unwrap_or_default();
            n.output = outputs.as_ref().map(output_msgs).unwrap_or_default();
            Op::Agent { name, role: None }
        }
        "LLM" | "CHAT_MODEL" => {
            n.input = inputs.as_ref().map(input_msgs).unwrap_or_default();
            if n.input.is_empty()
                && let Some(all) = attr(s, "mlflow.chat.messages")
            {
                n.input = msgs_from_value(&all).into_iter().filter(|m| m.role != "assistant").collect();
            }
            n.output = outputs.as_ref().map(output_msgs).unwrap_or_default();
            if n.output.is_empty() {
                n.output_text = outputs.as_ref().map(value_text).filter(|t| !t.is_empty());
            }
            n.tokens = tokens(s, outputs.as_ref());
            Op::Llm
        }
        t if TOOL_TYPES.contains(&t) => {
            set_io(&mut n, inputs.as_ref(), outputs.as_ref());
            Op::Tool { name, call_id: None }
        }
        "CHAIN" | "UNKNOWN" => {
            set_io(&mut n, inputs.as_ref(), outputs.as_ref());
            Op::Scope
        }
        other => {
            set_io(&mut n, inputs.as_ref(), outputs.as_ref());
            // Chat messages in, or a model's reply out (OpenAI `choices`, LangChain
            // `generations`, messages): read as the `LLM` span it then is.
            let chat_in = inputs.as_ref().map(spantree::chat_messages).unwrap_or_default();
            let reply = outputs.as_ref().filter(|o| {
                o.get("choices").is_some() || o.get("generations").is_some() || !spantree::chat_messages(o).is_empty()
            });
            if !chat_in.is_empty() || reply.is_some() {
                n.input = chat_in;
                n.output = outputs.as_ref().map(output_msgs).unwrap_or_default();
                if !n.output.is_empty() {
                    n.output_text = None;
                }
                n.tokens = tokens(s, outputs.as_ref());
            }
            spantree::unknown_kind(&mut n, "mlflow.spanType", other, None, diags)
        }
    };
    Some(n)
}

fn set_io(n: &mut Node, inputs: Option<&Value>, outputs: Option<&Value>) {
    let text = |v: &Value| one_string_argument(v).map(str::to_string).unwrap_or_else(|| value_text(v));
    n.input_text = inputs.map(text).filter(|t| !t.is_empty());
    n.output_text = outputs.map(text).filter(|t| !t.is_empty());
}

/// The text a traced function was called with when it took one string argument: `@mlflow.trace`
/// records the inputs as the function's arguments by name (`{"question": "..."}`).
fn one_string_argument(v: &Value) -> Option<&str> {
    let m = v.as_object().filter(|m| m.len() == 1)?;
    m.values().next()?.as_str()
}

/// An LLM span's input messages: `{messages}`, a list, or a prompt string (`{prompt}` too).
fn input_msgs(v: &Value) -> Vec<Msg> {
    let msgs = msgs_from_value(v);
    if !msgs.is_empty() {
        return msgs;
    }
    let prompt = match v {
        Value::String(s) => Some(s.clone()),
        _ => v
            .get("prompt")
            .or_else(|| v.get("input"))
            .map(value_text)
            .or_else(|| one_string_argument(v).map(str::to_string)),
    };
    prompt.map(|p| vec![Msg { role: "user".into(), name: None, parts: vec![Part::Text(p)] }]).unwrap_or_default()
}

/// An LLM span's output messages (see the module doc).
fn output_msgs(v: &Value) -> Vec<Msg> {
    if let Some(choices) = v.get("choices").and_then(Value::as_array) {
        return choices.iter().filter_map(|c| c.get("message").and_then(msg_from_value)).collect();
    }
    if let Some(gens) = v.get("generations").and_then(Value::as_array) {
        return gens
            .iter()
            .flat_map(|g| g.as_array().cloned().unwrap_or_else(|| vec![g.clone()]))
            .filter_map(|g| match g.get("message") {
                Some(m) => msg_from_value(m),
                None => g.get("text").map(|t| Msg {
                    role: "assistant".into(),
                    name: None,
                    parts: vec![Part::Text(value_text(t))],
                }),
            })
            .collect();
    }
    match v {
        Value::String(s) => vec![Msg { role: "assistant".into(), name: None, parts: vec![Part::Text(s.clone())] }],
        Value::Object(_) if v.get("role").is_some() || v.get("messages").is_some() => msgs_from_value(v),
        _ => Vec::new(),
    }
}

fn tokens(s: &Value, outputs: Option<&Value>) -> Option<TokenCounts> {
    if let Some(u) = attr(s, "mlflow.chat.tokenUsage") {
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        if let (Some(i), Some(o)) = (n("input_tokens"), n("output_tokens")) {
            return Some(TokenCounts { input: i, output: o });
        }
    }
    let u = outputs?.get("usage")?;
    let n = |a: &str, b: &str| u.get(a).or_else(|| u.get(b)).and_then(Value::as_u64);
    Some(TokenCounts { input: n("prompt_tokens", "input_tokens")?, output: n("completion_tokens", "output_tokens")? })
}
