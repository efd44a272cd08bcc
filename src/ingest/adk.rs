//! Google Agent Development Kit (ADK) saved sessions and event lists.
//!
//! Schema: google/adk-python (1.x, 2025) `src/google/adk/sessions/session.py` (`Session {id,
//! app_name, user_id, state, events, last_update_time}`) and `src/google/adk/events/event.py`
//! (`Event {id, invocation_id, author, branch, timestamp, content: {role, parts}, actions:
//! {transfer_to_agent, escalate, state_delta, ...}, partial, turn_complete, error_code,
//! error_message, usage_metadata}`), read from the snake_case of `model_dump` or the camelCase
//! aliases the ADK API server returns (`appName`, `invocationId`, `transferToAgent`, ...). A
//! bare list of events (or one per line) loads too.
//!
//! Steps, in event order, by the event's `author` (the agent's name, or `user`):
//! - `text` parts → messages (`thought: true` parts → thoughts); images and files are
//!   placeholders;
//! - `function_call {id, name, args}` → a tool call; a call of `transfer_to_agent` is a
//!   delegation to `args.agent_name`, linked to that agent's next step;
//! - `function_response {id, name, response}` → a tool result linked to its call by `id`, an error
//!   when the response holds an `error` (or `status: "error"`), or reports a failed exit;
//! - `executable_code` / `code_execution_result` → a call of `code_execution` and its result
//!   (an error when `outcome` is not `OUTCOME_OK`);
//! - `actions.transfer_to_agent` without a `transfer_to_agent` call in the run → a delegation
//!   step of its own; `actions.escalate` → `[escalate]` on the event's last step;
//! - `error_code` / `error_message` → the event's last step (or a message of its own) is an error;
//! - a part of a kind not read above (no `text`, call, response, code or media field) → kept as a
//!   message with its text, with a diagnostic naming the event (place, id, author) and the part's
//!   fields; parts holding only metadata (`thought_signature`, `video_metadata`, ...) are no
//!   content;
//! - `usage_metadata.{prompt_token_count, candidates_token_count}` → tokens on its first step.
//!
//! `partial: true` events (streaming chunks, repeated in full by the event that completes them)
//! are not steps (counted in `events_not_steps`); `state_delta`, `artifact_delta` and
//! `grounding_metadata` are dropped (state, not actions). The task is the first user text, the
//! observed output the last agent text that is not an error.

use std::borrow::Cow;

use serde_json::Value;

use super::gemini::{GPart, content_parts, genai_part, response_text};
use super::steps::{Builder, with_error};
use super::{DETECT_SAMPLE, Document, FormatError, JsonLines, Loaded, failed_exit, value_line, value_text};
use crate::model::{Diagnostic, LinkKind, SourceFormat, StepKind, Trajectory};

/// The tool ADK gives the model to hand the conversation to another agent.
pub const TRANSFER_TOOL: &str = "transfer_to_agent";

/// A field by its snake_case name or its camelCase alias.
fn get<'a>(v: &'a Value, snake: &str) -> Option<&'a Value> {
    if let Some(x) = v.get(snake).filter(|x| !x.is_null()) {
        return Some(x);
    }
    let mut camel = String::with_capacity(snake.len());
    let mut up = false;
    for c in snake.chars() {
        match (c, up) {
            ('_', _) => up = true,
            (c, true) => {
                camel.push(c.to_ascii_uppercase());
                up = false;
            }
            (c, false) => camel.push(c),
        }
    }
    v.get(&camel).filter(|x| !x.is_null())
}

fn is_event(v: &Value) -> bool {
    get(v, "invocation_id").is_some_and(Value::is_string) && v.get("author").is_some_and(Value::is_string)
}

fn is_session(v: &Value) -> bool {
    v.get("events").is_some_and(Value::is_array)
        && get(v, "app_name").is_some_and(Value::is_string)
        && get(v, "user_id").is_some_and(Value::is_string)
}

/// Whether `doc` is an ADK session (`{id, app_name, user_id, events}`) or a list of ADK events
/// (every sampled item with `invocation_id` and `author`; also one per line).
pub fn detect(doc: &Document) -> bool {
    match doc {
        Document::Json(v) if is_session(v) => true,
        Document::Json(Value::Array(a)) => !a.is_empty() && a.iter().take(DETECT_SAMPLE).all(is_event),
        Document::Json(_) => false,
        Document::Lines { values, .. } => {
            !values.is_empty() && values.iter().take(DETECT_SAMPLE).all(|(_, v)| is_event(v))
        }
    }
}

/// Loads an ADK session or event list named `name` as one trajectory.
///
/// # Errors
/// A message when the document is neither a session nor a list of events.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let (session, events): (Option<&Value>, Vec<(Option<usize>, &Value)>) = match doc {
        Document::Json(v) if is_session(v) => {
            (Some(v), v["events"].as_array().into_iter().flatten().map(|e| (None, e)).collect())
        }
        Document::Json(Value::Array(a)) => (None, a.iter().map(|e| (None, e)).collect()),
        Document::Lines { values, .. } => (None, values.iter().map(|(l, v)| (Some(*l), v)).collect()),
        Document::Json(_) => {
            return Err(FormatError::Shape {
                expected: "a session {id, app_name, user_id, events} or a list of events".into(),
            });
        }
    };
    let called_transfer = events.iter().any(|(_, e)| calls_transfer(e));
    let events = events.into_iter().map(|(l, e)| (l, Cow::Borrowed(e)));
    Ok(build(name, session, events, called_transfer))
}

/// Loads ADK events read one line at a time ([`JsonLines`]): a first look finds whether any event
/// calls [`TRANSFER_TOOL`] (only lines that name it, or hold a `\u` escape that might spell
/// it, are parsed), then each line is parsed, mapped
/// and dropped before the next. Same result as [`load`] on the same lines.
///
/// # Errors
/// None today (a line that is not an event is a diagnostic); the signature matches [`load`].
pub fn load_lines(name: &str, lines: &JsonLines<'_>) -> Result<Loaded, FormatError> {
    let called_transfer = lines
        .records()
        .filter_map(|(_, t)| t.filter(|t| t.contains(TRANSFER_TOOL) || t.contains("\\u")))
        .any(|t| value_line(t).is_some_and(|e| calls_transfer(&e)));
    let events = lines.values().map(|(l, e)| (Some(l), Cow::Owned(e)));
    Ok(build(name, None, events, called_transfer))
}

/// Whether an event calls [`TRANSFER_TOOL`].
fn calls_transfer(e: &Value) -> bool {
    content_parts(get(e, "content")).iter().any(|p| matches!(p, GPart::Call { name, .. } if name == TRANSFER_TOOL))
}

/// The trajectory of the `events` (each with its line, when read from JSON Lines) of a session
/// (`None` for a bare event list).
fn build<'v>(
    name: &str,
    session: Option<&Value>,
    events: impl Iterator<Item = (Option<usize>, Cow<'v, Value>)>,
    called_transfer: bool,
) -> Loaded {
    let mut diags = Vec::new();
    let mut b = Builder::default();
    let mut partial = 0;
    for (i, (line, e)) in events.enumerate() {
        let e = e.as_ref();
        if !is_event(e) {
            let place = line.map(|l| format!("line {l}")).unwrap_or_else(|| format!("events[{i}]"));
            diags.push(Diagnostic {
                line,
                message: format!("{place} skipped: expected an event with \"invocation_id\" and \"author\""),
            });
            continue;
        }
        if e.get("partial").and_then(Value::as_bool) == Some(true) {
            partial += 1;
            continue;
        }
        let place = line.map(|l| format!("line {l}")).unwrap_or_else(|| format!("events[{i}]"));
        event(&mut b, e, called_transfer, (&place, line), &mut diags);
    }
    b.finish();
    let task = b.steps.iter().find(|s| s.agent == "user" && s.kind == StepKind::Message).map(|s| s.content.clone());
    let observed = b
        .steps
        .iter()
        .rev()
        .find(|s| s.agent != "user" && s.kind == StepKind::Message && !s.is_error && !s.content.trim().is_empty())
        .map(|s| s.content.trim().to_string());
    let mut t = Trajectory {
        id: name.to_string(),
        source: SourceFormat::GoogleAdk,
        task: task.unwrap_or_default().trim().to_string(),
        observed_output: observed,
        steps: b.steps,
        links: b.links,
        agents: b.agents,
        ..Trajectory::default()
    };
    if let Some(s) = session {
        for (key, field) in [("session_id", "id"), ("app_name", "app_name"), ("user_id", "user_id")] {
            if let Some(v) = get(s, field) {
                t.metadata.push((key.into(), value_text(v)));
            }
        }
    }
    if partial > 0 {
        t.metadata.push(("events_not_steps".into(), format!("partial {partial}")));
    }
    Loaded { format: SourceFormat::GoogleAdk, trajectories: vec![t], diagnostics: diags }
}

/// Fields of a google-genai `types.Part` that hold no content of their own (signatures and
/// media settings beside a part's content).
const PART_METADATA: [&str; 8] = [
    "thought",
    "thought_signature",
    "thoughtSignature",
    "video_metadata",
    "videoMetadata",
    "media_resolution",
    "mediaResolution",
    "part_metadata",
];

/// One part of an event's content: read, or of a kind falat does not know (its fields and text).
enum EventPart {
    Known(GPart),
    Unknown { kinds: Vec<String>, text: String },
}

/// The parts of an event's `content`: each of `content.parts` read ([`genai_part`]), a part with
/// content fields falat does not know kept as [`EventPart::Unknown`] (metadata-only parts left
/// out); other shapes of `content` as [`content_parts`] reads them.
fn event_parts(content: Option<&Value>) -> Vec<EventPart> {
    let Some(raw) = content.and_then(|c| c.get("parts")).and_then(Value::as_array) else {
        return content_parts(content).into_iter().map(EventPart::Known).collect();
    };
    let mut out = Vec::new();
    for p in raw {
        if let Some(g) = genai_part(p) {
            out.push(EventPart::Known(g));
            continue;
        }
        let fields: serde_json::Map<String, Value> = p
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| !PART_METADATA.contains(&k.as_str()) && !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if fields.is_empty() {
            continue;
        }
        let kinds = fields.keys().cloned().collect();
        let text = match fields.len() {
            1 => fields.values().next().map(value_text).unwrap_or_default(),
            _ => value_text(&Value::Object(fields)),
        };
        out.push(EventPart::Unknown { kinds, text });
    }
    out
}

/// The steps of one event; `at` is its place (`line 4`, `events[3]`) and line, for diagnostics.
fn event(b: &mut Builder, e: &Value, called_transfer: bool, at: (&str, Option<usize>), diags: &mut Vec<Diagnostic>) {
    let author = e.get("author").map(value_text).unwrap_or_default();
    let role = get(e, "content").and_then(|c| c.get("role")).map(value_text).unwrap_or_else(|| author.clone());
    let first = b.steps.len();
    for p in event_parts(get(e, "content")) {
        let p = match p {
            EventPart::Known(p) => p,
            EventPart::Unknown { kinds, text } => {
                let id = e.get("id").map(value_text).unwrap_or_default();
                let kept = match text.trim().is_empty() {
                    true => "it carries no text".to_string(),
                    false => {
                        b.push(&author, &role, StepKind::Message, text);
                        "kept as a message with its text".to_string()
                    }
                };
                // A line number is said by the diagnostic itself (`line 4: ...`).
                let place = if at.1.is_some() { String::new() } else { format!("{} ", at.0) };
                diags.push(Diagnostic {
                    line: at.1,
                    message: format!(
                        "{place}event {id:?} (author {author:?}): unknown part kind {}; {kept}",
                        kinds.join(", ")
                    ),
                });
                continue;
            }
        };
        match p {
            GPart::Text { text, .. } if text.trim().is_empty() => {}
            GPart::Text { text, thought: true } => {
                b.push(&author, &role, StepKind::Thought, text);
            }
            GPart::Text { text, .. } | GPart::Media(text) => {
                b.push(&author, &role, StepKind::Message, text);
            }
            GPart::Call { id, name, args } => {
                let s = b.call(&author, &role, &name, id.as_deref(), args.clone());
                if name == TRANSFER_TOOL {
                    let to = serde_json::from_str::<Value>(&args)
                        .ok()
                        .and_then(|a| a.get("agent_name").map(value_text))
                        .unwrap_or_default();
                    if !to.is_empty() {
                        b.delegate(s, &to);
                    }
                }
            }
            GPart::Response { id, name, response } => {
                let (text, error) = response_text(&response);
                let status_error = response.get("status").and_then(Value::as_str) == Some("error");
                let content = error.as_deref().map(|err| with_error(&text, err)).unwrap_or_else(|| text.clone());
                if let Some(cid) = id.as_deref().filter(|cid| b.call_step(cid).is_none()) {
                    let place = if at.1.is_some() { String::new() } else { format!("{}: ", at.0) };
                    diags.push(Diagnostic {
                        line: at.1,
                        message: format!(
                            "{place}function_response {name:?} answers id {cid:?}, which no earlier function_call \
                             has; kept as a result linked to no call"
                        ),
                    });
                }
                let r = b.result(&author, &role, Some(&name), id.as_deref(), content);
                b.steps[r].is_error = error.is_some() || status_error || failed_exit(&text).is_some();
            }
            GPart::Code(code) => {
                b.call(&author, &role, "code_execution", None, code);
            }
            GPart::CodeResult { output, failed } => {
                let call = (0..b.steps.len()).rev().find(|&s| {
                    b.steps[s].kind == StepKind::ToolCall && b.steps[s].tool_name.as_deref() == Some("code_execution")
                });
                let r = b.result(&author, &role, Some("code_execution"), None, output.clone());
                b.steps[r].is_error = failed || failed_exit(&output).is_some();
                if let Some(c) = call {
                    b.link(c, r, LinkKind::ToolResult);
                }
            }
        }
    }
    let actions = get(e, "actions");
    if let Some(to) = actions.and_then(|a| get(a, "transfer_to_agent")).map(value_text)
        && !called_transfer
    {
        let s = b.push(&author, "transfer_to_agent", StepKind::Message, format!("transfer to {to}"));
        b.delegate(s, &to);
    }
    let escalate = actions.and_then(|a| a.get("escalate")).and_then(Value::as_bool) == Some(true);
    let code = get(e, "error_code").map(value_text);
    let message = get(e, "error_message").map(value_text);
    if code.is_some() || message.is_some() {
        let detail = match (&code, &message) {
            (Some(c), Some(m)) => format!("{c}: {m}"),
            (Some(c), None) => c.clone(),
            (None, m) => m.clone().unwrap_or_default(),
        };
        match b.steps.len() > first {
            true => {
                let last = b.steps.len() - 1;
                b.steps[last].content = with_error(&b.steps[last].content, &detail);
                b.steps[last].is_error = true;
            }
            false => {
                let s = b.push(&author, &role, StepKind::Message, format!("[error] {detail}"));
                b.steps[s].is_error = true;
            }
        }
    }
    if escalate && b.steps.len() > first {
        let last = b.steps.len() - 1;
        b.steps[last].content.push_str("\n[escalate]");
    }
    let id = e.get("id").map(value_text);
    let ts = e.get("timestamp").map(value_text);
    for s in first..b.steps.len() {
        b.ids(s, id.clone(), None, ts.clone());
    }
    let tok = |k: &str| get(e, "usage_metadata").and_then(|u| get(u, k)).and_then(Value::as_u64);
    if let (true, Some(i), Some(o)) = (b.steps.len() > first, tok("prompt_token_count"), tok("candidates_token_count"))
    {
        b.tokens(first, i, o);
    }
}
