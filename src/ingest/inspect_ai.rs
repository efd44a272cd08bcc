//! Inspect AI eval logs: the JSON log, and the `.eval` ZIP archive Inspect writes by default.
//!
//! Schema: inspect_ai (0.3.x, 2025) `src/inspect_ai/log/_log.py` (`EvalLog {version, status,
//! eval: EvalSpec {task, model, dataset, ...}, plan, results, stats, error, samples}`, `EvalSample
//! {id, epoch, input, target, messages, output: ModelOutput {completion, choices}, scores,
//! metadata, events, error, limit, attachments}`), `model/_chat_message.py` (`ChatMessageSystem`,
//! `ChatMessageUser`, `ChatMessageAssistant {tool_calls: [{id, function, arguments,
//! parse_error}]}`, `ChatMessageTool {tool_call_id, function, error: {type, message}}`),
//! `_content.py` (content `text`, `reasoning {reasoning, redacted}`, `image`, `audio`, `video`,
//! `data`) and `log/_recorders/eval.py` (the `.eval` archive: `header.json` (the log without
//! samples), `samples/<id>_epoch_<n>.json` (one `EvalSample` each), `summaries.json`,
//! `reductions.json`, `_journal/start.json` and `_journal/summaries/*.json` while the run lasts).
//!
//! One trajectory per sample (`<file>#<sample id>` when the log holds several, with
//! `_epoch_<n>` when a sample ran more than once). Steps from `messages`:
//! - `system` → the role text of `assistant` (not a step); `user` → a message by `user`;
//! - `assistant` → its reasoning as thoughts (`[redacted thinking]` when redacted), its text as
//!   a message, then one tool call per `tool_calls[k]` (`arguments` as JSON; a `parse_error`
//!   flags the call);
//! - `tool` → a result linked to its call by `tool_call_id`, an error when it carries `error
//!   {type, message}` (added to its text) or reports a failed exit in any wording;
//! - images, audio, video and data content are placeholders (`[image image/png, 3 KB]`);
//!   `attachment://<hash>` references
//!   are replaced by the sample's `attachments`;
//! - a sample `error {message}` is a last error step by `inspect`.
//!
//! The task is the sample `input` (a string, or its first user message); the expected output the
//! `target` (alternatives joined by ` | `); the observed output `output.completion`, else the first
//! score's `answer`, else the last assistant text. Scores, the sample's `limit`, the task and the
//! model are metadata. `events` are dropped: they repeat the messages (model calls with their
//! whole input, tool calls with their results).

use std::io::{Cursor, Read};

use serde_json::Value;

use super::messages::REDACTED_THINKING;
use super::steps::{Builder, with_error};
use super::{Document, FormatError, LoadError, Loaded, failed_exit, value_text};
use crate::model::{Diagnostic, SourceFormat, StepKind, Trajectory};

/// The agent of assistant messages.
pub const AGENT: &str = "assistant";
/// The agent of the harness's own steps (a sample error).
pub const HARNESS: &str = "inspect";
/// The most bytes one archive member may hold once decompressed (a guard against ZIP bombs).
pub const MAX_MEMBER_BYTES: u64 = 1 << 30;

/// Whether `bytes` start with a ZIP local file header (`PK\x03\x04`) or are an empty archive
/// (`PK\x05\x06`).
pub fn is_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06")
}

/// Reads an Inspect `.eval` archive into the JSON log it packs: `header.json` (or
/// `_journal/start.json` for a run still in progress) with `samples` set to the archive's
/// `samples/*.json` members in archive order.
///
/// # Errors
/// [`LoadError::Invalid`] (as `inspect-ai`) when the archive cannot be read, holds neither
/// `header.json` nor `_journal/start.json`, or a member is not JSON (naming the member).
pub fn zip_document(path: &str, bytes: &[u8]) -> Result<Document, LoadError> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| invalid(path, format!("a ZIP archive that cannot be read: {e}")))?;
    let header = match member(&mut archive, "header.json", path)? {
        Some(h) => h,
        None => member(&mut archive, "_journal/start.json", path)?.ok_or_else(|| {
            invalid(
                path,
                "a ZIP archive without header.json or _journal/start.json, expected an Inspect AI .eval log".into(),
            )
        })?,
    };
    // Sample members in archive order (the order Inspect wrote them).
    let names: Vec<String> = (0..archive.len())
        .filter_map(|i| archive.name_for_index(i)?.ok().map(|n| n.into_owned()))
        .filter(|n| n.starts_with("samples/") && n.ends_with(".json"))
        .collect();
    let mut samples = Vec::new();
    for name in &names {
        samples.extend(member(&mut archive, name, path)?);
    }
    let mut log = match header {
        Value::Object(m) => m,
        other => {
            return Err(invalid(
                path,
                format!("header.json in the archive is {}, expected an object", super::type_name(&other)),
            ));
        }
    };
    log.insert("samples".into(), Value::Array(samples));
    Ok(Document::Json(Value::Object(log)))
}

fn invalid(path: &str, message: String) -> LoadError {
    LoadError::Invalid { path: path.to_string(), format: SourceFormat::InspectAi, message }
}

/// The JSON of archive member `name`, `None` when there is no such member.
fn member(archive: &mut zip::ZipArchive<Cursor<&[u8]>>, name: &str, path: &str) -> Result<Option<Value>, LoadError> {
    let unreadable = |e: &dyn std::fmt::Display| invalid(path, format!("{name} in the archive cannot be read: {e}"));
    let mut file = match archive.by_name(name) {
        Ok(m) => m,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(unreadable(&e)),
    };
    let mut buf = Vec::new();
    (&mut file).take(MAX_MEMBER_BYTES + 1).read_to_end(&mut buf).map_err(|e| unreadable(&e))?;
    if buf.len() as u64 > MAX_MEMBER_BYTES {
        return Err(invalid(path, format!("{name} in the archive holds more than {MAX_MEMBER_BYTES} bytes")));
    }
    let text = std::str::from_utf8(&buf).map_err(|e| {
        invalid(path, format!("{name} in the archive is not UTF-8 (invalid byte at offset {})", e.valid_up_to()))
    })?;
    if let Some(line) = super::too_deep_at(text) {
        let limit = super::MAX_NESTING;
        return Err(invalid(path, format!("{name} in the archive:{line}: JSON nested deeper than {limit} levels")));
    }
    super::from_str(text).map(Some).map_err(|e| {
        invalid(
            path,
            format!("{name} in the archive:{}:{}: not JSON: {}", e.line(), e.column(), super::error_message(&e)),
        )
    })
}

/// Whether `doc` is an Inspect eval log: `{version, status, eval: {task, model | dataset}}`.
pub fn detect(doc: &Document) -> bool {
    let Document::Json(v) = doc else {
        return false;
    };
    let eval = v.get("eval").filter(|e| e.is_object());
    v.get("version").is_some_and(Value::is_number)
        && v.get("status").is_some_and(Value::is_string)
        && eval.is_some_and(|e| {
            e.get("task").is_some_and(Value::is_string) && (e.get("model").is_some() || e.get("dataset").is_some())
        })
}

/// Loads an eval log named `name`: one trajectory per sample.
///
/// # Errors
/// A message when the log holds no samples (a log written with `--no-log-samples`, or a run
/// that logged none yet).
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let Document::Json(log) = doc else {
        return Err(FormatError::JsonLines { expected: "one JSON eval log {version, status, eval, samples}" });
    };
    if !log.get("eval").is_some_and(Value::is_object) {
        return Err(FormatError::Shape {
            expected: "an eval log {version, status, eval: {task, model}, samples}".into(),
        });
    }
    let samples: Vec<&Value> = log.get("samples").and_then(Value::as_array).into_iter().flatten().collect();
    if samples.is_empty() {
        return Err(FormatError::NothingUsable {
            list: "the eval log".into(),
            problem: "holds no samples (written with --no-log-samples, or no sample finished)",
        });
    }
    let mut diags = Vec::new();
    let several_epochs = samples.iter().any(|s| s.get("epoch").and_then(Value::as_u64).is_some_and(|e| e > 1));
    let mut trajectories = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        let sid = s.get("id").filter(|v| !v.is_null()).map(value_text).unwrap_or_else(|| i.to_string());
        let epoch = s.get("epoch").and_then(Value::as_u64).unwrap_or(1);
        let id = match (samples.len(), several_epochs) {
            (1, _) => name.to_string(),
            (_, false) => format!("{name}#{sid}"),
            (_, true) => format!("{name}#{sid}_epoch_{epoch}"),
        };
        let mut t = sample(id, s, i, &mut diags);
        for (key, ptr) in [("task", "/eval/task"), ("model", "/eval/model"), ("status", "/status")] {
            if let Some(v) = log.pointer(ptr).filter(|v| !v.is_null()) {
                t.metadata.push((key.into(), value_text(v)));
            }
        }
        t.metadata.push(("sample_id".into(), sid));
        t.metadata.push(("epoch".into(), epoch.to_string()));
        trajectories.push(t);
    }
    Ok(Loaded { format: SourceFormat::InspectAi, trajectories, diagnostics: diags })
}

fn sample(id: String, s: &Value, i: usize, diags: &mut Vec<Diagnostic>) -> Trajectory {
    let attachments = s.get("attachments").and_then(Value::as_object);
    let resolve = |text: &str| -> String {
        match text.strip_prefix("attachment://").and_then(|h| attachments?.get(h)).and_then(Value::as_str) {
            Some(full) => full.to_string(),
            None => text.to_string(),
        }
    };
    let mut b = Builder::default();
    for (k, m) in s.get("messages").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        let first = b.steps.len();
        let content = contents(m.get("content"), &resolve);
        let text = |kind: Kind| -> String {
            content.iter().filter(|(k, _)| *k == kind).map(|(_, t)| t.as_str()).collect::<Vec<_>>().join("\n")
        };
        match role {
            "system" => b.role(AGENT, &text(Kind::Text)),
            "user" => {
                let t = text(Kind::Text);
                if !t.trim().is_empty() {
                    b.push("user", role, StepKind::Message, t);
                }
            }
            "assistant" => {
                for (kind, t) in &content {
                    if t.trim().is_empty() {
                        continue;
                    }
                    let kind = if *kind == Kind::Reasoning { StepKind::Thought } else { StepKind::Message };
                    b.push(AGENT, role, kind, t.clone());
                }
                for c in m.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    let cid = c.get("id").filter(|v| !v.is_null()).map(value_text);
                    let function = c.get("function").map(value_text).unwrap_or_default();
                    let args = c.get("arguments").map(value_text).unwrap_or_default();
                    let s = b.call(AGENT, role, &function, cid.as_deref(), resolve(&args));
                    if let Some(e) = c.get("parse_error").filter(|e| !e.is_null()).map(value_text) {
                        b.steps[s].content = with_error(&b.steps[s].content, &e);
                        b.steps[s].is_error = true;
                    }
                }
            }
            "tool" => {
                let cid = m.get("tool_call_id").filter(|v| !v.is_null()).map(value_text);
                let function = m.get("function").filter(|v| !v.is_null()).map(value_text);
                let t = text(Kind::Text);
                let error = m.get("error").filter(|e| !e.is_null()).map(|e| {
                    let ty = e.get("type").map(value_text).unwrap_or_default();
                    let msg = e.get("message").map(value_text).unwrap_or_default();
                    if ty.is_empty() { msg } else { format!("{ty}: {msg}") }
                });
                let body = error.as_deref().map(|e| with_error(&t, e)).unwrap_or_else(|| t.clone());
                if let Some(id) = cid.as_deref().filter(|id| b.call_step(id).is_none()) {
                    diags.push(Diagnostic {
                        line: None,
                        message: format!(
                            "samples[{i}].messages[{k}]: tool message answers tool_call_id {id:?}, which no \
                             earlier assistant tool call has; kept as a result linked to no call"
                        ),
                    });
                }
                let r = b.result(AGENT, role, function.as_deref(), cid.as_deref(), body);
                b.steps[r].is_error = error.is_some() || failed_exit(&t).is_some();
            }
            other => {
                diags.push(Diagnostic {
                    line: None,
                    message: format!("samples[{i}].messages[{k}] skipped: unknown role {other:?}"),
                });
            }
        }
        let mid = m.get("id").filter(|v| !v.is_null()).map(value_text);
        for st in first..b.steps.len() {
            b.steps[st].ids.id = mid.clone();
        }
    }
    if let Some(err) = s.get("error").filter(|e| !e.is_null()) {
        let msg = err.get("message").map(value_text).unwrap_or_else(|| value_text(err));
        let st = b.push(HARNESS, "error", StepKind::Message, format!("[error] {msg}"));
        b.steps[st].is_error = true;
    }
    b.finish();
    let task = match s.get("input") {
        Some(Value::String(q)) => resolve(q),
        Some(Value::Array(msgs)) => msgs
            .iter()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .map(|m| {
                let c = contents(m.get("content"), &resolve);
                c.into_iter().filter(|(k, _)| *k == Kind::Text).map(|(_, t)| t).collect::<Vec<_>>().join("\n")
            })
            .unwrap_or_default(),
        _ => String::new(),
    };
    let expected = match s.get("target") {
        Some(Value::String(t)) => Some(t.clone()),
        Some(Value::Array(ts)) if !ts.is_empty() => Some(ts.iter().map(value_text).collect::<Vec<_>>().join(" | ")),
        _ => None,
    };
    let completion = s.pointer("/output/completion").and_then(Value::as_str).filter(|c| !c.trim().is_empty());
    let answer = s
        .get("scores")
        .and_then(Value::as_object)
        .and_then(|sc| sc.values().find_map(|v| v.get("answer").and_then(Value::as_str)))
        .filter(|a| !a.trim().is_empty());
    let last = b
        .steps
        .iter()
        .rev()
        .find(|st| st.agent == AGENT && st.kind == StepKind::Message && !st.content.trim().is_empty())
        .map(|st| st.content.clone());
    let observed = completion.or(answer).map(str::to_string).or(last).map(|o| o.trim().to_string());
    let mut t = Trajectory {
        id,
        source: SourceFormat::InspectAi,
        task: task.trim().to_string(),
        expected_output: expected,
        observed_output: observed,
        steps: b.steps,
        links: b.links,
        agents: b.agents,
        ..Trajectory::default()
    };
    for (name, score) in s.get("scores").and_then(Value::as_object).into_iter().flatten() {
        if let Some(v) = score.get("value").filter(|v| !v.is_null()) {
            t.metadata.push((format!("score_{name}"), value_text(v)));
        }
    }
    if let Some(l) = s.get("limit").filter(|l| !l.is_null()) {
        let what = [l.get("type"), l.get("limit")].into_iter().flatten().map(value_text).collect::<Vec<_>>();
        t.metadata.push(("limit".into(), what.join(" ")));
    }
    t
}

/// What a piece of message content is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Reasoning,
}

/// Message content as `(kind, text)` pieces: a string, or a list of `Content` items (text,
/// reasoning, placeholders for media).
fn contents(v: Option<&Value>, resolve: &dyn Fn(&str) -> String) -> Vec<(Kind, String)> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![(Kind::Text, resolve(s))],
        Some(Value::Array(items)) => items
            .iter()
            .map(|c| {
                let ty = c.get("type").and_then(Value::as_str).unwrap_or("text");
                let field = |k: &str| c.get(k).and_then(Value::as_str).map(resolve).unwrap_or_default();
                match ty {
                    "text" => (Kind::Text, field("text")),
                    "reasoning" if c.get("redacted").and_then(Value::as_bool) == Some(true) => {
                        (Kind::Reasoning, REDACTED_THINKING.to_string())
                    }
                    "reasoning" => (Kind::Reasoning, field("reasoning")),
                    other => (Kind::Text, media_placeholder(other, c, resolve)),
                }
            })
            .collect(),
        Some(other) => vec![(Kind::Text, value_text(other))],
    }
}

/// A placeholder for media content (`image`, `audio`, `video`, `data`...): `[image image/png, 3
/// KB]` for a data URI (attachments resolved), `[image https://...]` for a URL, else the media's
/// `format`.
fn media_placeholder(ty: &str, c: &Value, resolve: &dyn Fn(&str) -> String) -> String {
    let source = c.get(ty).and_then(Value::as_str).map(resolve);
    let mut details: Vec<String> = Vec::new();
    match source.as_deref() {
        Some(uri) if uri.starts_with("data:") => {
            let (head, data) = uri.split_once(',').unwrap_or((uri, ""));
            let mime = head.trim_start_matches("data:").split(';').next().unwrap_or("");
            if !mime.is_empty() {
                details.push(mime.to_string());
            }
            let bytes = data.len() / 4 * 3;
            details.push(if bytes >= 1024 { format!("{} KB", bytes / 1024) } else { format!("{bytes} bytes") });
        }
        Some(url) if url.starts_with("http") => details.push(url.to_string()),
        _ => details.extend(c.get("format").and_then(Value::as_str).map(str::to_string)),
    }
    match details.is_empty() {
        true => format!("[{ty}]"),
        false => format!("[{ty} {}]", details.join(", ")),
    }
}
