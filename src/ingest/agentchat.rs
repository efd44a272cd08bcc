//! AutoGen AgentChat message logs (autogen-agentchat 0.4 and later, 2025): a team's `TaskResult`
//! `{messages: [...], stop_reason}`, a bare array of its messages, or JSON Lines of them (what
//! `run_stream` yields, dumped with `model_dump`).
//!
//! A message is `{id?, source, type, content, models_usage: {prompt_tokens, completion_tokens}?,
//! metadata, created_at?}`; `source` is the agent (`user` is the user, `MagenticOneOrchestrator`
//! a Magentic-One team's orchestrator). By `type`:
//! - `TextMessage`, `StopMessage`, `ToolCallSummaryMessage`, `StructuredMessage` → message;
//!   `MultiModalMessage` → message whose `content` list mixes text with images (placeholders);
//! - `ThoughtEvent` → thought;
//! - `HandoffMessage` → delegation to `target` (a Swarm team's hand-off), linked to the target's
//!   next step;
//! - `ToolCallRequestEvent` (`content: [{id, name, arguments}]`) → one tool call per call;
//!   `ToolCallExecutionEvent` (`content: [{call_id, name, content, is_error}]`) → one tool result
//!   per result, linked to its call by id;
//! - `CodeGenerationEvent` → tool call (the code); `CodeExecutionEvent` (`result: {exit_code,
//!   output}`) → tool result, an error when the exit code is not 0;
//! - `SelectSpeakerEvent` (`content: [speaker]`) makes the selecting agent's message just before it
//!   a delegation to that speaker; `MemoryQueryEvent`, `UserInputRequestedEvent` and streaming
//!   chunks are not steps (counted in the `messages_not_steps` metadata);
//! - another type with text content → message, with a diagnostic naming it.
//!
//! Read as [`SourceFormat::MagenticLog`] (the format of unlabelled Magentic-One logs): the task is
//! the first user message, the observed output the `FINAL ANSWER:` line or the last message.

use std::collections::HashMap;

use serde_json::Value;

use super::messages::placeholder;
use super::spantree::USER;
use super::{DETECT_SAMPLE, Document, FormatError, Loaded, failed_exit, value_text};
use crate::model::{Diagnostic, Link, LinkKind, SourceFormat, Step, StepIds, StepKind, TokenCounts, Trajectory};

/// Message types of AgentChat that identify a message log.
const TYPES: [&str; 16] = [
    "TextMessage",
    "MultiModalMessage",
    "StopMessage",
    "ToolCallSummaryMessage",
    "HandoffMessage",
    "StructuredMessage",
    "ThoughtEvent",
    "ToolCallRequestEvent",
    "ToolCallExecutionEvent",
    "CodeGenerationEvent",
    "CodeExecutionEvent",
    "SelectSpeakerEvent",
    "MemoryQueryEvent",
    "UserInputRequestedEvent",
    "ModelClientStreamingChunkEvent",
    "SelectorEvent",
];

/// The messages of a document when it is an AgentChat log, with their 1-based line in a JSON
/// Lines file: `{messages: [...]}`, a bare array, or one message per line (a `run_stream` dump),
/// whose sampled items are mostly `{source, type}` with a known `type`.
pub fn messages_of(doc: &Document) -> Option<Vec<(Option<usize>, &Value)>> {
    let list: Vec<(Option<usize>, &Value)> = match doc {
        Document::Json(Value::Object(m)) => m.get("messages")?.as_array()?.iter().map(|v| (None, v)).collect(),
        Document::Json(Value::Array(items)) => items.iter().map(|v| (None, v)).collect(),
        Document::Json(_) => return None,
        Document::Lines { values, .. } => values.iter().map(|(l, v)| (Some(*l), v)).collect(),
    };
    let sample = &list[..list.len().min(DETECT_SAMPLE)];
    let shaped = sample
        .iter()
        .filter(|(_, m)| {
            m.get("source").is_some_and(Value::is_string)
                && m.get("type").and_then(Value::as_str).is_some_and(|t| TYPES.contains(&t))
        })
        .count();
    (!sample.is_empty() && shaped * 2 > sample.len()).then_some(list)
}

/// Loads an AgentChat log named `name`.
///
/// # Errors
/// A message when the document is not a `{messages: [{source, type, content}]}` log.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let messages = messages_of(doc).ok_or(FormatError::Shape {
        expected: "an AutoGen AgentChat TaskResult {messages: [{source, type, content}], stop_reason} or a list of \
         such messages"
            .into(),
    })?;
    let mut r = Reader::default();
    for (i, (line, m)) in messages.iter().enumerate() {
        match line {
            Some(l) => r.message(m, &format!("line {l}")),
            None => r.message(m, &format!("messages[{i}]")),
        }
    }
    let executed = executions(&r.steps);
    r.links.extend(executed);
    let mut t = Trajectory {
        id: name.to_string(),
        source: SourceFormat::MagenticLog,
        task: r.task.clone().unwrap_or_default(),
        observed_output: observed(&r.steps),
        steps: r.steps,
        links: r.links,
        ..Trajectory::default()
    };
    let stop = match doc {
        Document::Json(v) => v.get("stop_reason").filter(|s| !s.is_null()).map(value_text),
        Document::Lines { .. } => r.stop_reason.clone(),
    };
    if let Some(stop) = stop {
        t.metadata.push(("stop_reason".into(), stop));
    }
    if !r.skipped.is_empty() {
        let list: Vec<String> = r.skipped.iter().map(|(t, n)| format!("{t} {n}")).collect();
        t.metadata.push(("messages_not_steps".into(), list.join(", ")));
    }
    t.refresh_agents();
    Ok(Loaded { format: SourceFormat::MagenticLog, trajectories: vec![t], diagnostics: r.diagnostics })
}

/// Links from code to the terminal that ran it, for teams whose executor answers in plain text
/// (autogen-agentchat's `CodeExecutorAgent`, Magentic-One's `ComputerTerminal`: it runs the code
/// blocks of the messages it received and replies with their output as a `TextMessage`). An
/// agent is read as such an executor when it never writes a fenced code block (a line opening
/// with three backticks) and each of its
/// messages comes at most 3 steps after another agent's message with one; each of its messages
/// is then linked from that code (the latest such message). Nothing is added when the log has
/// `CodeExecutionEvent`s, which are linked by type.
fn executions(steps: &[Step]) -> Vec<Link> {
    // A code block opens on a line of its own (a team's description that mentions "```python
    // code blocks" in a sentence holds none).
    let fenced = |s: &Step| s.kind == StepKind::Message && s.content.lines().any(|l| l.trim_start().starts_with("```"));
    if steps.iter().any(|s| s.role == "CodeExecutionEvent") {
        return Vec::new();
    }
    let mut by_agent: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, s) in steps.iter().enumerate() {
        if s.kind == StepKind::Message && s.agent != USER {
            by_agent.entry(s.agent.as_str()).or_default().push(i);
        }
    }
    let code_before = |i: usize| -> Option<usize> {
        (i.saturating_sub(3)..i).rev().find(|&j| fenced(&steps[j]) && steps[j].agent != steps[i].agent)
    };
    let mut links = Vec::new();
    for own in by_agent.values() {
        if own.iter().any(|&i| fenced(&steps[i])) {
            continue;
        }
        let from: Vec<Option<usize>> = own.iter().map(|&i| code_before(i)).collect();
        if from.iter().all(Option::is_some) {
            links.extend(own.iter().zip(from).map(|(&to, from)| Link {
                from: from.unwrap_or_default(),
                to,
                kind: LinkKind::Execution,
            }));
        }
    }
    links.sort_by_key(|l| (l.to, l.from));
    links
}

#[derive(Default)]
struct Reader {
    steps: Vec<Step>,
    links: Vec<Link>,
    calls: HashMap<String, usize>,
    task: Option<String>,
    skipped: Vec<(String, usize)>,
    diagnostics: Vec<Diagnostic>,
    /// The stop reason of a `TaskResult` line of a JSON Lines dump.
    stop_reason: Option<String>,
    /// Hand-offs (`HandoffMessage` step, target agent) whose target has not acted yet.
    handoffs: Vec<(usize, String)>,
}

impl Reader {
    fn message(&mut self, m: &Value, place: &str) {
        // The `TaskResult` a `run_stream` dump ends with repeats the messages: only its stop reason
        // is new.
        if m.get("source").is_none() && m.get("messages").is_some() {
            self.stop_reason = m.get("stop_reason").filter(|s| !s.is_null()).map(value_text);
            self.not_step("TaskResult");
            return;
        }
        let Some(source) = m.get("source").and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()) else {
            self.note(format!("{place}: missing \"source\"; record skipped"));
            return;
        };
        let ty = m.get("type").and_then(Value::as_str).unwrap_or("TextMessage");
        let content = m.get("content").unwrap_or(&Value::Null);
        let first = self.steps.len();
        match ty {
            "ThoughtEvent" => {
                self.push(m, source, ty, StepKind::Thought, value_text(content));
            }
            "HandoffMessage" => {
                let s = self.push(m, source, ty, StepKind::Delegation, value_text(content));
                let target = m.get("target").and_then(Value::as_str).map(str::to_string);
                if let Some(t) = &target {
                    self.handoffs.push((s, t.clone()));
                }
                self.steps[s].delegate_to = target;
            }
            "ToolCallRequestEvent" => self.calls(m, source, content),
            "ToolCallExecutionEvent" => self.results(m, source, content),
            "CodeGenerationEvent" => {
                let code = m.get("code_blocks").map(value_text).unwrap_or_else(|| value_text(content));
                let s = self.push(m, source, ty, StepKind::ToolCall, code);
                self.steps[s].tool_name = Some("code_executor".into());
            }
            "CodeExecutionEvent" => {
                let result = m.get("result").unwrap_or(content);
                let output = result.get("output").map(value_text).unwrap_or_else(|| value_text(result));
                let code = result.get("exit_code").and_then(Value::as_i64).filter(|c| *c != 0);
                let s = self.push(m, source, ty, StepKind::ToolResult, output);
                self.steps[s].is_error = code.is_some() || failed_exit(&self.steps[s].content).is_some();
                self.steps[s].tool_name = Some("code_executor".into());
                if let Some(c) = (0..s).rev().find(|&c| self.steps[c].role == "CodeGenerationEvent") {
                    self.links.push(Link { from: c, to: s, kind: LinkKind::Execution });
                }
            }
            "SelectSpeakerEvent" | "SelectorEvent" => {
                self.select(source, content);
                self.not_step(ty);
            }
            "MemoryQueryEvent" | "UserInputRequestedEvent" | "ModelClientStreamingChunkEvent" => self.not_step(ty),
            _ => {
                if !TYPES.contains(&ty) {
                    self.note(format!("{place}: unknown message type {ty:?}; read as a message"));
                }
                let text = text_of(content);
                self.push(m, source, ty, StepKind::Message, text);
            }
        }
        if self.steps.len() > first && source == USER && self.task.is_none() {
            let text = self.steps[first].content.trim().to_string();
            self.task = (!text.is_empty()).then_some(text);
        }
        if let Some(u) = m.get("models_usage").filter(|u| u.is_object())
            && let Some(last) = self.steps.len().checked_sub(1).filter(|&l| l >= first)
        {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            self.steps[last].tokens = Some(TokenCounts { input: n("prompt_tokens"), output: n("completion_tokens") });
        }
    }

    fn calls(&mut self, m: &Value, source: &str, content: &Value) {
        for c in content.as_array().into_iter().flatten() {
            let s = self.push(
                m,
                source,
                "ToolCallRequestEvent",
                StepKind::ToolCall,
                c.get("arguments").map(value_text).unwrap_or_default(),
            );
            self.steps[s].tool_name = c.get("name").and_then(Value::as_str).map(str::to_string);
            if let Some(id) = c.get("id").map(value_text).filter(|i| !i.is_empty()) {
                self.steps[s].ids.refs.push(id.clone());
                self.calls.insert(id, s);
            }
        }
    }

    fn results(&mut self, m: &Value, source: &str, content: &Value) {
        for r in content.as_array().into_iter().flatten() {
            let text = r.get("content").map(value_text).unwrap_or_default();
            let s = self.push(m, source, "ToolCallExecutionEvent", StepKind::ToolResult, text);
            self.steps[s].tool_name = r.get("name").and_then(Value::as_str).map(str::to_string);
            self.steps[s].is_error = r.get("is_error").and_then(Value::as_bool) == Some(true)
                || failed_exit(&self.steps[s].content).is_some();
            if let Some(id) = r.get("call_id").map(value_text).filter(|i| !i.is_empty()) {
                if let Some(&c) = self.calls.get(&id) {
                    self.links.push(Link { from: c, to: s, kind: LinkKind::ToolResult });
                }
                self.steps[s].ids.refs.push(id);
            }
        }
    }

    /// The selecting agent's message just before a speaker selection delegates to the speaker.
    fn select(&mut self, source: &str, content: &Value) {
        let speaker = match content {
            Value::Array(items) => items.first().map(value_text),
            other => Some(value_text(other)),
        };
        let Some(speaker) = speaker.filter(|s| !s.is_empty()) else { return };
        if let Some(last) = self.steps.last_mut()
            && last.agent == source
            && last.kind == StepKind::Message
        {
            last.kind = StepKind::Delegation;
            last.delegate_to = Some(speaker);
        }
    }

    fn not_step(&mut self, ty: &str) {
        match self.skipped.iter_mut().find(|(t, _)| t == ty) {
            Some((_, n)) => *n += 1,
            None => self.skipped.push((ty.to_string(), 1)),
        }
    }

    fn note(&mut self, message: String) {
        self.diagnostics.push(Diagnostic { line: None, message });
    }

    fn push(&mut self, m: &Value, source: &str, ty: &str, kind: StepKind, content: String) -> usize {
        self.steps.push(Step {
            index: self.steps.len(),
            agent: source.to_string(),
            role: ty.to_string(),
            kind,
            content,
            ids: StepIds { id: m.get("id").map(value_text).filter(|i| !i.is_empty()), ..StepIds::default() },
            timestamp: m.get("created_at").and_then(Value::as_str).map(str::to_string),
            ..Step::default()
        });
        let s = self.steps.len() - 1;
        // A hand-off is linked to the first step its target takes after it.
        if let Some(k) = self.handoffs.iter().position(|(_, t)| t.eq_ignore_ascii_case(source)) {
            let (from, _) = self.handoffs.remove(k);
            self.links.push(Link { from, to: s, kind: LinkKind::Delegation });
        }
        s
    }
}

/// The text of a message `content`: a string, or a multimodal list whose strings are text and
/// whose images (`"<image>"`, image objects) are placeholders.
fn text_of(content: &Value) -> String {
    match content {
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) if s.trim() == "<image>" => "[image]".to_string(),
                Value::String(s) => s.clone(),
                Value::Object(o) if o.contains_key("data") && !o.contains_key("type") => "[image]".to_string(),
                other if other.get("type").is_some() => placeholder(other),
                other => value_text(other),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => value_text(other),
    }
}

/// The `FINAL ANSWER:` line of the last message that has one, else the last message's text.
fn observed(steps: &[Step]) -> Option<String> {
    for s in steps.iter().rev() {
        if let Some(pos) = s.content.rfind("FINAL ANSWER:") {
            let line = s.content[pos + "FINAL ANSWER:".len()..].trim().lines().next().unwrap_or_default().trim();
            if !line.is_empty() {
                return Some(line.to_string());
            }
        }
    }
    let last = steps.iter().rev().find(|s| s.kind == StepKind::Message && s.agent != USER)?;
    Some(last.content.trim().to_string())
}
