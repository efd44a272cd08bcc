//! Gemini CLI chat recordings (`~/.gemini/tmp/<project hash>/chats/session-*.json`), and the
//! Gemini API content parts that Gemini CLI and Google ADK share ([`genai_part`]).
//!
//! Schema: gemini-cli `packages/core/src/services/chatRecordingService.ts` (0.2–0.1x, 2025):
//! `ConversationRecord {sessionId, projectHash, startTime, lastUpdated, messages}`, each
//! `MessageRecord {id, timestamp, type: user | gemini | info | error | warning, content:
//! PartListUnion, thoughts?: [{subject, description, timestamp}], tokens?: {input, output, cached,
//! thoughts, tool, total}, model?, toolCalls?: [{id, name, args, result?: PartListUnion, status,
//! timestamp, displayName, description, resultDisplay}]}`. The JSON Lines form of the same
//! records is read too: a line with `sessionId` and `projectHash` is the session, `{"$set":
//! {...}}` lines update it, every other line is a message record; a record written again with
//! the same `id` (a message whose tool calls completed later) replaces the earlier one in place.
//!
//! Steps, in record order:
//! - `user` → a message by `user` (the first is the task); `gemini` → its thoughts as thoughts
//!   (`subject: description`), its text as a message by `gemini`, then per tool call a call
//!   (`args` as JSON) and a result linked by the call `id`. The result's text is the
//!   `functionResponse.response` `output` (or `error`) of `result`, else `resultDisplay`; it is an
//!   error when `status` is `error` or `cancelled`, the response holds an `error`, or the output
//!   reports a failed exit in any wording (`Exit Code: 1`);
//! - `info` / `warning` → messages by `gemini-cli`; `error` → an error message by `gemini-cli`;
//! - `tokens.{input, output}` go on the record's first step; images and files are placeholders
//!   (`[image image/png, 3 KB]`).
//!
//! The observed output is the last `gemini` text.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{Map, Value};

use super::steps::{Builder, with_error};
use super::{DETECT_SAMPLE, Document, FormatError, JsonLines, Loaded, failed_exit, value_line, value_text};
use crate::model::{Diagnostic, SourceFormat, StepKind, Trajectory};

/// The agent of `gemini` records.
pub const AGENT: &str = "gemini";
/// The agent of the CLI's own `info`, `warning` and `error` records.
pub const HARNESS: &str = "gemini-cli";
const TYPES: [&str; 5] = ["user", "gemini", "info", "error", "warning"];

/// Whether `doc` is a Gemini CLI chat recording: an object with `sessionId`, `projectHash` and a
/// `messages` array, or JSON lines of which one is such a session header (without `messages`)
/// and the others message records `{id, type: user | gemini | ...}` or `$set` updates.
pub fn detect(doc: &Document) -> bool {
    match doc {
        Document::Json(v) => is_header(v) && v.get("messages").is_some_and(Value::is_array),
        Document::Lines { values, .. } => {
            let sample = &values[..values.len().min(DETECT_SAMPLE)];
            sample.iter().any(|(_, v)| is_header(v))
                && sample.iter().all(|(_, v)| is_header(v) || is_record(v) || v.get("$set").is_some())
        }
    }
}

fn is_header(v: &Value) -> bool {
    v.get("sessionId").is_some_and(Value::is_string) && v.get("projectHash").is_some_and(Value::is_string)
}

fn is_record(v: &Value) -> bool {
    v.get("id").is_some() && v.get("type").and_then(Value::as_str).is_some_and(|t| TYPES.contains(&t))
}

/// Loads a chat recording named `name` as one trajectory.
///
/// # Errors
/// A message when the document has no session header or no `messages`.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let mut diags = Vec::new();
    let mut header = Map::new();
    // (line, record), a record written again replacing the earlier one in place.
    let mut records: Vec<(Option<usize>, &Value)> = Vec::new();
    match doc {
        Document::Json(v) => {
            if !is_header(v) {
                return Err(FormatError::Shape {
                    expected: "a chat recording {sessionId, projectHash, startTime, messages}".into(),
                });
            }
            if let Some(m) = v.as_object() {
                header = m.iter().filter(|(k, _)| *k != "messages").map(|(k, v)| (k.clone(), v.clone())).collect();
            }
            let Some(msgs) = v.get("messages").and_then(Value::as_array) else {
                return Err(FormatError::NothingUsable {
                    list: "\"messages\"".into(),
                    problem: "is missing or not an array",
                });
            };
            records.extend(msgs.iter().map(|m| (None, m)));
        }
        Document::Lines { values, .. } => {
            let lines = values.iter().map(|(no, v)| (*no, v));
            records.extend(read_lines(lines, |_, v| v, &mut header, &mut diags)?);
        }
    }
    Ok(build(name, header, records.into_iter().map(|(l, r)| (l, Cow::Borrowed(r))), diags))
}

/// Loads a chat recording read one line at a time ([`JsonLines`]): a first pass keeps the session
/// header and where each record's last state is (its line), a second parses each record's line
/// again, maps it and drops it, so no `Value` of the whole file is held. Same result as [`load`]
/// on the same lines.
///
/// # Errors
/// As [`load`].
pub fn load_lines(name: &str, lines: &JsonLines<'_>) -> Result<Loaded, FormatError> {
    let mut header = Map::new();
    let mut diags = Vec::new();
    let texts: Vec<(usize, &str)> = lines.records().filter_map(|(no, t)| Some((no, t?))).collect();
    let parsed = texts.iter().filter_map(|(no, t)| Some((*no, value_line(t)?)));
    let at: Vec<(Option<usize>, usize)> = read_lines(parsed, |no, _| no, &mut header, &mut diags)?;
    let by_line: HashMap<usize, &str> = texts.into_iter().collect();
    let records = at.into_iter().filter_map(|(line, no)| Some((line, Cow::Owned(value_line(by_line.get(&no)?)?))));
    Ok(build(name, header, records, diags))
}

/// The records of JSON lines, each kept as `keep(line, value)`, a record written again replacing
/// the earlier one in place; header lines and `$set` updates go into `header`.
///
/// # Errors
/// When no line is a session header.
fn read_lines<V: std::borrow::Borrow<Value>, K>(
    lines: impl Iterator<Item = (usize, V)>,
    keep: impl Fn(usize, V) -> K,
    header: &mut Map<String, Value>,
    diags: &mut Vec<Diagnostic>,
) -> Result<Vec<(Option<usize>, K)>, FormatError> {
    let mut records = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (no, line) in lines {
        let v = line.borrow();
        if is_header(v) && !is_record(v) {
            header.extend(v.as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v.clone())));
        } else if let Some(set) = v.get("$set").and_then(Value::as_object) {
            header.extend(set.iter().map(|(k, v)| (k.clone(), v.clone())));
        } else if is_record(v) || (v.get("id").is_some() && v.get("type").is_some_and(Value::is_string)) {
            // A record of a type this loader does not know goes on, to be named by its type.
            let id = value_text(&v["id"]);
            match at.get(&id) {
                Some(&i) => records[i] = (Some(no), keep(no, line)),
                None => {
                    at.insert(id, records.len());
                    records.push((Some(no), keep(no, line)));
                }
            }
        } else {
            diags.push(Diagnostic {
                line: Some(no),
                message: "skipped: expected a message record {id, type: user | gemini | info | error | warning}".into(),
            });
        }
    }
    if header.is_empty() {
        return Err(FormatError::Shape { expected: "a session line {sessionId, projectHash, startTime}".into() });
    }
    Ok(records)
}

/// The trajectory of the `records` (each with its line, when read from JSON Lines) and the
/// session `header`.
fn build<'v>(
    name: &str,
    header: Map<String, Value>,
    records: impl Iterator<Item = (Option<usize>, Cow<'v, Value>)>,
    mut diags: Vec<Diagnostic>,
) -> Loaded {
    let mut b = Builder::default();
    for (i, (line, r)) in records.enumerate() {
        record(&mut b, &r, i, line, &mut diags);
    }
    b.finish();
    let task = b.steps.iter().find(|s| s.agent == "user").map(|s| s.content.trim().to_string()).unwrap_or_default();
    let observed = b
        .steps
        .iter()
        .rev()
        .find(|s| s.agent == AGENT && s.kind == StepKind::Message && !s.content.trim().is_empty())
        .map(|s| s.content.trim().to_string());
    let mut t = Trajectory {
        id: name.to_string(),
        source: SourceFormat::GeminiCli,
        task,
        observed_output: observed,
        steps: b.steps,
        links: b.links,
        agents: b.agents,
        ..Trajectory::default()
    };
    for (key, field) in [("session_id", "sessionId"), ("project_hash", "projectHash"), ("start_time", "startTime")] {
        if let Some(v) = header.get(field).filter(|v| !v.is_null()) {
            t.metadata.push((key.into(), value_text(v)));
        }
    }
    Loaded { format: SourceFormat::GeminiCli, trajectories: vec![t], diagnostics: diags }
}

fn record(b: &mut Builder, r: &Value, i: usize, line: Option<usize>, diags: &mut Vec<Diagnostic>) {
    let place = match line {
        Some(l) => format!("line {l}"),
        None => format!("messages[{i}]"),
    };
    let ty = r.get("type").and_then(Value::as_str).unwrap_or("");
    let first = b.steps.len();
    let parts = content_parts(r.get("content"));
    match ty {
        "user" => {
            let text = parts_text(&parts);
            if !text.trim().is_empty() {
                b.push("user", ty, StepKind::Message, text);
            }
        }
        "gemini" => {
            for th in r.get("thoughts").and_then(Value::as_array).into_iter().flatten() {
                let field = |k: &str| th.get(k).map(value_text).unwrap_or_default();
                let text = match (field("subject"), field("description")) {
                    (s, d) if s.is_empty() => d,
                    (s, d) if d.is_empty() => s,
                    (s, d) => format!("{s}: {d}"),
                };
                let s = b.push(AGENT, "thought", StepKind::Thought, text);
                b.steps[s].timestamp = th.get("timestamp").map(value_text);
            }
            for p in &parts {
                match p {
                    GPart::Text { text, thought: true } => {
                        b.push(AGENT, ty, StepKind::Thought, text.clone());
                    }
                    GPart::Text { text, .. } if text.trim().is_empty() => {}
                    GPart::Text { text, .. } | GPart::Media(text) => {
                        b.push(AGENT, ty, StepKind::Message, text.clone());
                    }
                    _ => {}
                }
            }
            for c in r.get("toolCalls").and_then(Value::as_array).into_iter().flatten() {
                tool_call(b, c);
            }
        }
        "info" | "warning" | "error" => {
            let s = b.push(HARNESS, ty, StepKind::Message, format!("[{ty}] {}", parts_text(&parts)));
            b.steps[s].is_error = ty == "error";
        }
        other => {
            // A newer CLI may write a type this loader does not know: say what the record holds.
            let calls = r.get("toolCalls").and_then(Value::as_array).map_or(0, Vec::len);
            let text = !parts_text(&parts).trim().is_empty();
            let holds = match (text, calls) {
                (_, 0) if !text => String::new(),
                (true, 0) => " holding text".to_string(),
                (t, n) => format!(
                    " holding {}{n} tool call{}",
                    if t { "text and " } else { "" },
                    if n == 1 { "" } else { "s" }
                ),
            };
            let place = if line.is_some() { String::new() } else { format!("{place} ") };
            diags.push(Diagnostic {
                line,
                message: format!(
                    "{place}skipped: unknown message type {other:?}{holds} (expected user, gemini, info, error or \
                     warning; a newer Gemini CLI version may write it)"
                ),
            });
            return;
        }
    }
    let id = r.get("id").map(value_text);
    for s in first..b.steps.len() {
        let step = &mut b.steps[s];
        step.ids.id = id.clone();
        if step.timestamp.is_none() {
            step.timestamp = r.get("timestamp").map(value_text);
        }
    }
    let tok = |k: &str| r.pointer(&format!("/tokens/{k}")).and_then(Value::as_u64);
    if let (true, Some(i), Some(o)) = (b.steps.len() > first, tok("input"), tok("output")) {
        b.tokens(first, i, o);
    }
}

fn tool_call(b: &mut Builder, c: &Value) {
    let id = c.get("id").filter(|v| !v.is_null()).map(value_text);
    let name = c.get("name").map(value_text).unwrap_or_default();
    let args = c.get("args").map(value_text).unwrap_or_default();
    let s = b.call(AGENT, "tool_call", &name, id.as_deref(), args);
    b.steps[s].timestamp = c.get("timestamp").map(value_text);
    let status = c.get("status").and_then(Value::as_str).unwrap_or("");
    let parts = content_parts(c.get("result"));
    let mut error = None;
    let mut texts = Vec::new();
    for p in &parts {
        match p {
            GPart::Response { response, .. } => {
                let (text, err) = response_text(response);
                texts.push(text);
                error = error.or(err);
            }
            GPart::Text { text, .. } | GPart::Media(text) => texts.push(text.clone()),
            _ => {}
        }
    }
    let mut text = texts.join("\n");
    if text.trim().is_empty()
        && let Some(d) = c.get("resultDisplay").and_then(Value::as_str)
    {
        text = d.to_string();
    }
    // A call still running (or awaiting approval) when the session was saved has no result.
    if parts.is_empty() && text.is_empty() && !matches!(status, "error" | "cancelled") {
        return;
    }
    if let Some(e) = &error {
        text = with_error(&text, e);
    }
    if text.trim().is_empty() {
        text = format!("status: {status}");
    }
    let failed = matches!(status, "error" | "cancelled") || error.is_some() || failed_exit(&text).is_some();
    let r = b.result(AGENT, "tool_result", None, id.as_deref(), text);
    b.steps[r].is_error = failed;
    b.steps[r].timestamp = c.get("timestamp").map(value_text);
}

/// A function response's text and error: `{output}` / `{error}` as text, else the JSON.
pub fn response_text(response: &Value) -> (String, Option<String>) {
    let error = response.get("error").filter(|e| !e.is_null()).map(|e| match e {
        Value::Object(_) => e.get("message").map(value_text).unwrap_or_else(|| value_text(e)),
        _ => value_text(e),
    });
    let output = ["output", "result", "content"].iter().find_map(|k| response.get(*k)).filter(|o| !o.is_null());
    let text = match (output, &error) {
        (Some(o), _) => value_text(o),
        (None, Some(e)) => e.clone(),
        (None, None) => value_text(response),
    };
    (text, error)
}

/// One Gemini API content part (`google.genai.types.Part`), read from its camelCase (Gemini CLI,
/// the REST API) or snake_case (the Python SDK's `model_dump`, Google ADK) keys.
#[derive(Debug, Clone, PartialEq)]
pub enum GPart {
    /// `text`, a thought when `thought: true`.
    Text {
        /// The text.
        text: String,
        /// The part is the model's thought summary.
        thought: bool,
    },
    /// `functionCall {id, name, args}`.
    Call {
        /// The call id, when given.
        id: Option<String>,
        /// The function's name.
        name: String,
        /// The arguments as JSON text.
        args: String,
    },
    /// `functionResponse {id, name, response}`.
    Response {
        /// The call id answered, when given.
        id: Option<String>,
        /// The function's name.
        name: String,
        /// The response object.
        response: Value,
    },
    /// `executableCode {code, language}`: code the model runs.
    Code(String),
    /// `codeExecutionResult {outcome, output}`: its output, and whether the outcome is not OK.
    CodeResult {
        /// The output.
        output: String,
        /// `outcome` is other than `OUTCOME_OK`.
        failed: bool,
    },
    /// A placeholder for inline data or a file (`[image image/png, 3 KB]`).
    Media(String),
}

/// `content` as parts: a string, one part, a list of parts, or `{parts: [...]}` (a `Content`).
pub fn content_parts(v: Option<&Value>) -> Vec<GPart> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![GPart::Text { text: s.clone(), thought: false }],
        Some(Value::Array(items)) => items.iter().flat_map(|i| content_parts(Some(i))).collect(),
        Some(o @ Value::Object(_)) => match o.get("parts") {
            Some(ps) => content_parts(Some(ps)),
            None => genai_part(o).into_iter().collect(),
        },
        Some(other) => vec![GPart::Text { text: value_text(other), thought: false }],
    }
}

/// Reads one part; `None` for a part with nothing falat shows (empty metadata parts).
pub fn genai_part(p: &Value) -> Option<GPart> {
    let get = |camel: &str, snake: &str| p.get(camel).or_else(|| p.get(snake)).filter(|v| !v.is_null());
    if let Some(t) = p.get("text").filter(|t| !t.is_null()) {
        return Some(GPart::Text {
            text: value_text(t),
            thought: p.get("thought").and_then(Value::as_bool) == Some(true),
        });
    }
    if let Some(c) = get("functionCall", "function_call") {
        return Some(GPart::Call {
            id: super::messages::id_text(c.get("id")),
            name: c.get("name").map(value_text).unwrap_or_default(),
            args: c.get("args").map(value_text).unwrap_or_default(),
        });
    }
    if let Some(r) = get("functionResponse", "function_response") {
        return Some(GPart::Response {
            id: super::messages::id_text(r.get("id")),
            name: r.get("name").map(value_text).unwrap_or_default(),
            response: r.get("response").cloned().unwrap_or(Value::Null),
        });
    }
    if let Some(c) = get("executableCode", "executable_code") {
        return Some(GPart::Code(c.get("code").map(value_text).unwrap_or_default()));
    }
    if let Some(r) = get("codeExecutionResult", "code_execution_result") {
        let outcome = r.get("outcome").map(value_text).unwrap_or_default();
        return Some(GPart::CodeResult {
            output: r.get("output").map(value_text).unwrap_or_default(),
            failed: !outcome.is_empty() && outcome != "OUTCOME_OK",
        });
    }
    for (camel, snake, uri) in [("inlineData", "inline_data", "data"), ("fileData", "file_data", "fileUri")] {
        if let Some(d) = get(camel, snake) {
            let mime = d.get("mimeType").or_else(|| d.get("mime_type")).and_then(Value::as_str).unwrap_or("");
            let kind = match mime.split('/').next().unwrap_or("") {
                "" => "data",
                "application" | "text" => "document",
                k => k,
            };
            let mut details: Vec<String> = Vec::new();
            if !mime.is_empty() {
                details.push(mime.to_string());
            }
            if let Some(data) = d.get(uri).or_else(|| d.get("file_uri")).and_then(Value::as_str) {
                if uri == "data" {
                    let bytes = data.len() / 4 * 3;
                    details.push(if bytes >= 1024 { format!("{} KB", bytes / 1024) } else { format!("{bytes} bytes") });
                } else {
                    details.push(data.to_string());
                }
            }
            return Some(GPart::Media(match details.is_empty() {
                true => format!("[{kind}]"),
                false => format!("[{kind} {}]", details.join(", ")),
            }));
        }
    }
    None
}

/// The text and placeholder parts joined by newlines (thoughts included, tool parts left out).
pub fn parts_text(parts: &[GPart]) -> String {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            GPart::Text { text, .. } | GPart::Media(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}
