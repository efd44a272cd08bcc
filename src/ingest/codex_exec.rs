//! `codex exec --json` event streams (JSON Lines on stdout).
//!
//! Schema: codex-rs `exec/src/exec_events.rs` (CLI 0.4x–0.6x, 2025), `ThreadEvent` tagged by
//! `type`: `thread.started {thread_id}`, `turn.started`, `turn.completed {usage: {input_tokens,
//! cached_input_tokens, output_tokens}}`, `turn.failed {error: {message}}`, `item.started` /
//! `item.updated` / `item.completed {item}`, and `error {message}`. An item is `{id, type, ...}`
//! (`item_type` and `assistant_message` in the first releases):
//! - `agent_message {text}` → a message by the agent (`codex`);
//! - `reasoning {text}` → a thought;
//! - `command_execution {command, aggregated_output, exit_code, status}` → a tool call (the
//!   command) and its result (the output), an error when `exit_code` is non-zero, `status` is
//!   `failed` or `declined`, or the output reports a failed exit in any wording;
//! - `file_change {changes: [{path, kind}], status}` → a call listing the changes and a result
//!   with the status (an error when `failed`);
//! - `mcp_tool_call {server, tool, arguments, result: {content, structured_content}, error:
//!   {message}, status}` → a call of `tool` and its result, an error on `error` or `failed`;
//! - `web_search {query}` → a call of `web_search`; `todo_list {items: [{text, completed}]}` → a
//!   thought listing the plan (`[x]` done, `[ ]` open); `plan {text}` (plan mode) → a thought;
//!   `error {message}` → an error message;
//! - `collab_tool_call {tool, receiver_thread_ids, prompt, agents_states, status}` (multi-agent
//!   runs, CLI 0.9x) → a call of `tool` with the prompt (`spawn_agent` a delegation to the first
//!   receiving thread) and, once it ended, a result listing each thread's state.
//!
//! `request_user_input {call_id, questions}` is a call of `request_user_input` asking the
//! questions; `item.plan.delta` (the plan item's streamed text) is no step. An event of a type
//! falat does not know (a newer CLI may write it) is named in a diagnostic with what it holds and
//! not read when it holds an item, a message or a call; one named like the stream's events
//! (`thread.`, `turn.`, `item.`) that holds none is counted in `events_not_steps` as `unknown`.
//! Each step keeps the line its item first appeared on.
//!
//! An item is sent when it starts, as it updates and when it completes: it is one step (or one
//! call and result) at the place it first appeared, holding its last state; a call that never
//! completed has no result step. Steps of a turn end with the turn's token usage on its last
//! step; `turn.failed` and `error` events are error messages. The stream does not hold the
//! prompt: the task is empty. `thread.started`, `turn.started` and `turn.completed` are not steps
//! (counted in `events_not_steps`).

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value;

use super::steps::{Builder, with_error};
use super::{DETECT_SAMPLE, Document, FormatError, JsonLines, Loaded, failed_exit, value_text};
use crate::model::{Diagnostic, SourceFormat, StepKind, Trajectory};

/// The agent of the stream's steps.
pub const AGENT: &str = "codex";
/// The `ThreadEvent` types of `exec_events.rs`.
const EVENTS: [&str; 10] = [
    "thread.started",
    "turn.started",
    "turn.completed",
    "turn.failed",
    "item.started",
    "item.updated",
    "item.completed",
    "item.plan.delta",
    "request_user_input",
    "error",
];
/// The prefixes of the stream's own event names: an event of a newer CLI named so is still one
/// of its events (named in a diagnostic when it holds a step, see [`holds`]).
const EVENT_PREFIXES: [&str; 3] = ["thread.", "turn.", "item."];

/// Whether `ty` is a stream event: a known one or one named like them.
fn is_event(ty: &str) -> bool {
    EVENTS.contains(&ty) || EVENT_PREFIXES.iter().any(|p| ty.starts_with(p))
}

/// What an event of a type falat does not know holds that may be a step: an item (`item` with an
/// `id`), a message (`message` or `text`, or an `error.message`) or a call (`call_id`, a
/// `command`); `None` when it holds none.
fn holds(v: &Value) -> Option<&'static str> {
    let text = |k: &str| v.get(k).and_then(Value::as_str).is_some_and(|t| !t.trim().is_empty());
    if v.get("item").is_some_and(|i| i.get("id").is_some()) {
        Some("an item")
    } else if v.get("call_id").is_some() || v.get("command").is_some() {
        Some("a call")
    } else if text("message") || text("text") || v.pointer("/error/message").is_some() {
        Some("a message")
    } else {
        None
    }
}

fn lines_of(doc: &Document) -> Vec<(usize, &Value)> {
    match doc {
        Document::Lines { values, .. } => values.iter().map(|(l, v)| (*l, v)).collect(),
        Document::Json(v @ Value::Object(_)) => vec![(1, v)],
        Document::Json(Value::Array(a)) => a.iter().enumerate().map(|(i, v)| (i + 1, v)).collect(),
        Document::Json(_) => Vec::new(),
    }
}

fn item_type(item: &Value) -> Option<&str> {
    item.get("type").or_else(|| item.get("item_type")).and_then(Value::as_str)
}

/// Whether `doc` is a `codex exec --json` stream: every sampled line is an object whose `type` is
/// one of the stream's events, and at least one is `thread.started`, `turn.*`, or an `item.*`
/// event whose `item` has an `id` and a type.
pub fn detect(doc: &Document) -> bool {
    let lines = lines_of(doc);
    let mut distinctive = false;
    for (_, v) in lines.iter().take(DETECT_SAMPLE) {
        let Some(ty) = v.get("type").and_then(Value::as_str).filter(|t| is_event(t)) else {
            return false;
        };
        distinctive |= match ty {
            "error" => false,
            t if t.starts_with("item.") => {
                v.get("item").is_some_and(|i| i.get("id").is_some() && item_type(i).is_some())
            }
            _ => true,
        };
    }
    distinctive
}

/// Loads a `codex exec --json` stream named `name` as one trajectory.
///
/// # Errors
/// A message when no line is a stream event.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    load_events(name, lines_of(doc).into_iter().map(|(l, v)| (l, Cow::Borrowed(v))))
}

/// Loads a stream read one line at a time ([`JsonLines`]): each line is parsed and dropped once
/// read, keeping only each item's last state. Same result as [`load`] on the same lines.
///
/// # Errors
/// As [`load`].
pub fn load_lines(name: &str, lines: &JsonLines<'_>) -> Result<Loaded, FormatError> {
    load_events(name, lines.values().map(|(l, v)| (l, Cow::Owned(v))))
}

/// `key` of an object, borrowed from a borrowed value or moved out of an owned one.
fn take<'v>(v: Cow<'v, Value>, key: &str) -> Option<Cow<'v, Value>> {
    match v {
        Cow::Borrowed(v) => v.get(key).map(Cow::Borrowed),
        Cow::Owned(Value::Object(mut m)) => m.remove(key).map(Cow::Owned),
        Cow::Owned(_) => None,
    }
}

fn load_events<'v>(name: &str, lines: impl Iterator<Item = (usize, Cow<'v, Value>)>) -> Result<Loaded, FormatError> {
    let mut diags = Vec::new();
    // Each item's last state and the line it first appeared on, in order of first appearance;
    // other events in place.
    enum Entry<'v> {
        Item(String),
        Event(usize, Cow<'v, Value>),
    }
    let mut entries: Vec<Entry<'v>> = Vec::new();
    let mut items: HashMap<String, (usize, Cow<'v, Value>, bool)> = HashMap::new();
    let mut not_steps: Vec<(&str, usize)> = Vec::new();
    let mut thread = None;
    for (no, v) in lines {
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
        match ty {
            "item.started" | "item.updated" | "item.completed" => {
                let done = ty == "item.completed";
                let ty = ty.to_string();
                let Some(item) = take(v, "item").filter(|i| i.is_object()) else {
                    diags.push(Diagnostic { line: Some(no), message: format!("{ty} skipped: missing \"item\"") });
                    continue;
                };
                let Some(id) = item.get("id").filter(|i| !i.is_null()).map(value_text) else {
                    diags.push(Diagnostic { line: Some(no), message: format!("{ty} skipped: the item has no \"id\"") });
                    continue;
                };
                match items.get_mut(&id) {
                    Some(e) => {
                        e.1 = item;
                        e.2 |= done;
                    }
                    None => {
                        items.insert(id.clone(), (no, item, done));
                        entries.push(Entry::Item(id));
                    }
                }
            }
            "item.plan.delta" => count(&mut not_steps, "item.plan.delta"),
            "request_user_input" => entries.push(Entry::Event(no, v)),
            "thread.started" | "turn.started" => {
                let key = if ty == "thread.started" {
                    thread = v.get("thread_id").map(value_text);
                    "thread.started"
                } else {
                    "turn.started"
                };
                count(&mut not_steps, key);
            }
            "turn.completed" | "turn.failed" | "error" => entries.push(Entry::Event(no, v)),
            other => match holds(&v) {
                Some(what) => diags.push(Diagnostic {
                    line: Some(no),
                    message: format!(
                        "unknown event type {other:?} holds {what} (a newer Codex version may write it); not read"
                    ),
                }),
                None if is_event(other) => count(&mut not_steps, "unknown"),
                None => diags.push(Diagnostic {
                    line: Some(no),
                    message: format!("skipped: unknown event type {other:?}, expected one of {}", EVENTS.join(", ")),
                }),
            },
        }
    }
    let mut b = Builder::default();
    let mut turn_start = 0;
    for e in &entries {
        match e {
            Entry::Item(id) => {
                let (no, item, done) = &items[id];
                item_steps(&mut b, id, item, *done, *no, &mut diags);
            }
            Entry::Event(no, v) => match v.get("type").and_then(Value::as_str).unwrap_or("") {
                "turn.completed" => {
                    count(&mut not_steps, "turn.completed");
                    let usage = |k: &str| v.pointer(&format!("/usage/{k}")).and_then(Value::as_u64);
                    if let (Some(last), Some(i), Some(o)) = (
                        b.steps.len().checked_sub(1).filter(|&l| l >= turn_start),
                        usage("input_tokens"),
                        usage("output_tokens"),
                    ) {
                        b.tokens(last, i, o);
                    }
                    turn_start = b.steps.len();
                }
                "request_user_input" => {
                    let questions: Vec<String> = v
                        .get("questions")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|q| q.get("question").map(value_text).unwrap_or_else(|| value_text(q)))
                        .collect();
                    let call = v.get("call_id").map(value_text);
                    let s = b.call(
                        AGENT,
                        "request_user_input",
                        "request_user_input",
                        call.as_deref(),
                        questions.join("\n"),
                    );
                    b.steps[s].ids.line = Some(*no);
                }
                ty => {
                    let msg =
                        v.pointer("/error/message").or_else(|| v.get("message")).map(value_text).unwrap_or_default();
                    let what = if ty == "turn.failed" { "turn failed" } else { "error" };
                    let s = b.push(AGENT, ty, StepKind::Message, format!("[{what}] {msg}"));
                    b.steps[s].is_error = true;
                    b.steps[s].ids.id = Some(format!("line {no}"));
                    b.steps[s].ids.line = Some(*no);
                    turn_start = b.steps.len();
                }
            },
        }
    }
    b.finish();
    if b.steps.is_empty() && entries.is_empty() && not_steps.is_empty() {
        return Err(FormatError::Shape {
            expected: "JSON lines of codex exec events {type: thread.started | turn.* | item.*}".into(),
        });
    }
    let observed = b
        .steps
        .iter()
        .rev()
        .find(|s| s.kind == StepKind::Message && s.role == "agent_message")
        .map(|s| s.content.trim().to_string());
    let mut t = Trajectory {
        id: name.to_string(),
        source: SourceFormat::CodexExec,
        observed_output: observed,
        steps: b.steps,
        links: b.links,
        agents: b.agents,
        ..Trajectory::default()
    };
    if let Some(th) = thread {
        t.metadata.push(("thread_id".into(), th));
    }
    if !not_steps.is_empty() {
        let list: Vec<String> = not_steps.iter().map(|(k, n)| format!("{k} {n}")).collect();
        t.metadata.push(("events_not_steps".into(), list.join(", ")));
    }
    Ok(Loaded { format: SourceFormat::CodexExec, trajectories: vec![t], diagnostics: diags })
}

fn count<'a>(list: &mut Vec<(&'a str, usize)>, key: &'a str) {
    match list.iter_mut().find(|(k, _)| *k == key) {
        Some((_, n)) => *n += 1,
        None => list.push((key, 1)),
    }
}

/// The steps of one item in its last state (see the module doc).
fn item_steps(b: &mut Builder, id: &str, item: &Value, done: bool, no: usize, diags: &mut Vec<Diagnostic>) {
    let ty = item_type(item).unwrap_or("");
    let text = |k: &str| item.get(k).filter(|v| !v.is_null()).map(value_text).unwrap_or_default();
    let status = text("status");
    let first = b.steps.len();
    match ty {
        "agent_message" | "assistant_message" => {
            b.push(AGENT, "agent_message", StepKind::Message, text("text"));
        }
        "reasoning" | "plan" => {
            b.push(AGENT, ty, StepKind::Thought, text("text"));
        }
        "collab_tool_call" => {
            // A collab tool (spawn_agent, send_input, wait, close_agent) of a multi-agent run:
            // its prompt goes to the receiving threads, and their states are its result.
            let tool = text("tool");
            let receivers: Vec<String> = item
                .get("receiver_thread_ids")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(value_text)
                .collect();
            let c = b.call(AGENT, ty, &tool, Some(id), text("prompt"));
            if tool == "spawn_agent" {
                b.steps[c].kind = StepKind::Delegation;
                b.steps[c].delegate_to = Some(receivers.first().cloned().unwrap_or_else(|| "subagent".into()));
            }
            if done || matches!(status.as_str(), "completed" | "failed") {
                let states: Vec<String> = item
                    .get("agents_states")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .map(|(thread, st)| {
                        let msg = st.get("message").filter(|m| !m.is_null()).map(value_text).unwrap_or_default();
                        format!("{thread}: {} {msg}", st.get("status").map(value_text).unwrap_or_default())
                            .trim()
                            .to_string()
                    })
                    .collect();
                let r = b.result(
                    AGENT,
                    ty,
                    None,
                    Some(id),
                    format!("status: {status}\n{}", states.join("\n")).trim().to_string(),
                );
                b.steps[r].is_error = status == "failed";
            }
        }
        "command_execution" => {
            b.call(AGENT, ty, ty, Some(id), text("command"));
            if done || item.get("exit_code").is_some_and(|c| !c.is_null()) {
                let out = text("aggregated_output");
                let code = item.get("exit_code").and_then(Value::as_i64);
                let content = match code {
                    Some(c) => format!("{out}\nExit code: {c}").trim_start().to_string(),
                    None => out.clone(),
                };
                let r = b.result(AGENT, ty, None, Some(id), content);
                b.steps[r].is_error = code.is_some_and(|c| c != 0)
                    || matches!(status.as_str(), "failed" | "declined")
                    || failed_exit(&out).is_some();
            }
        }
        "file_change" => {
            let changes: Vec<String> = item
                .get("changes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|c| {
                    format!(
                        "{} {}",
                        c.get("kind").map(value_text).unwrap_or_default(),
                        value_text(c.get("path").unwrap_or(&Value::Null))
                    )
                })
                .collect();
            b.call(AGENT, ty, ty, Some(id), changes.join("\n"));
            if done || (!status.is_empty() && status != "in_progress") {
                let r = b.result(AGENT, ty, None, Some(id), format!("status: {status}"));
                b.steps[r].is_error = status == "failed";
            }
        }
        "mcp_tool_call" => {
            let tool = text("tool");
            let args = item.get("arguments").map(value_text).unwrap_or_default();
            let server = text("server");
            let content = if server.is_empty() { args } else { format!("[{server}] {args}") };
            b.call(AGENT, ty, &tool, Some(id), content);
            let error = item.pointer("/error/message").map(value_text);
            if done || error.is_some() || item.get("result").is_some_and(|r| !r.is_null()) {
                let result = item.get("result").filter(|r| !r.is_null()).map(mcp_result).unwrap_or_default();
                let content = match &error {
                    Some(e) => with_error(&result, e),
                    None => result,
                };
                let r = b.result(AGENT, ty, None, Some(id), content);
                b.steps[r].is_error = error.is_some() || status == "failed";
            }
        }
        "web_search" => {
            let query = item.get("query").map(value_text).unwrap_or_default();
            b.call(AGENT, ty, ty, Some(id), query);
        }
        "todo_list" => {
            let lines: Vec<String> = item
                .get("items")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|t| {
                    let mark = if t.get("completed").and_then(Value::as_bool) == Some(true) { "[x]" } else { "[ ]" };
                    format!("{mark} {}", t.get("text").map(value_text).unwrap_or_default())
                })
                .collect();
            b.push(AGENT, ty, StepKind::Thought, lines.join("\n"));
        }
        "error" => {
            let s = b.push(AGENT, ty, StepKind::Message, format!("[error] {}", text("message")));
            b.steps[s].is_error = true;
        }
        other => {
            diags.push(Diagnostic {
                line: Some(no),
                message: format!(
                    "item {id:?} skipped: unknown item type {other:?} (a newer Codex version may write it)"
                ),
            });
        }
    }
    for s in first..b.steps.len() {
        b.steps[s].ids.id = Some(id.to_string());
        b.steps[s].ids.line = Some(no);
    }
}

/// An MCP result's text: its `content` blocks' text joined (other blocks as placeholders), else
/// `structured_content` as JSON.
fn mcp_result(r: &Value) -> String {
    match r.get("content") {
        Some(c @ Value::Array(_)) => super::messages::block_text(c),
        Some(c) if !c.is_null() => value_text(c),
        _ => r.get("structured_content").map(value_text).unwrap_or_else(|| value_text(r)),
    }
}
