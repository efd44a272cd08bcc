//! Claude Code session JSONL (`~/.claude/projects/<cwd>/<sessionId>.jsonl`) and its sub-agent
//! (sidechain) files.
//!
//! No official schema; the shape follows `TRACE_FORMATS.md` row 10a (checked against CLI 2.1.x
//! files). Each line is `{type, uuid, parentUuid, isSidechain, agentId?, sessionId, timestamp,
//! message?, toolUseResult?, ...}`:
//! - `user` / `assistant` lines are expanded per `message.content` block, one step each: `text` →
//!   message, `thinking` → thought, `tool_use` → tool call (`Task` / `Agent` → delegation to
//!   `input.subagent_type`), `tool_result` → tool result (`is_error` kept); a string content is
//!   one message. `isMeta` user lines are injected context and left out. `image`, `document` and
//!   `audio` blocks become placeholders (`[image image/png, 146 KB]`) joined to the line's text
//!   (the task is the text); `redacted_thinking` is a thought `[redacted thinking]`.
//! - `progress`, `system`, `summary`, `file-history-snapshot`, `queue-operation`, `attachment` and
//!   other lines are not steps (counted in the `lines_not_steps` metadata; the first line's `cwd`
//!   is the `cwd` metadata); `parentUuid` chains
//!   through them. Compaction (CLI 2.x): a `system` line with `subtype: compact_boundary` has
//!   `parentUuid: null` and names the line it continues in `logicalParentUuid`, which the chain
//!   follows; the next `user` line with `isCompactSummary` is the summary the harness wrote, a
//!   message by [`HARNESS`]. A `system` line that reports an error (`level: error`, `subtype:
//!   api_error`) is an error message by [`HARNESS`].
//! - Nothing is dropped silently: a line without `type` whose `message` has role `user` /
//!   `assistant` and a content is read as that role with a diagnostic (else skipped with one); a
//!   line of an unknown `type` that holds a `message` or a `toolUseResult` (a newer CLI may write
//!   it) is named with what it holds and not read; a `tool_result` whose `tool_use_id` no
//!   `tool_use` of the file has stays an unlinked result with a diagnostic naming id and line.
//! - A `tool_result` block's text is its `content` (a string, or text blocks joined); a block
//!   with no text takes the line's `toolUseResult` when that is a string (the CLI writes
//!   `"Error: <message>"` for a failed call, checked against CLI 2.0.37 session files).
//! - Links: `parentUuid` → [`LinkKind::Parent`]; `tool_use.id` ↔ `tool_result.tool_use_id` →
//!   [`LinkKind::ToolResult`] (the result takes the call's tool name); a `Task` call → the first step of its sub-agent →
//!   [`LinkKind::Delegation`].
//!
//! Sub-agents: the `Task` call's result line carries `toolUseResult.agentId` (older files: the
//! text `agentId: <id>` in the result; running sessions: `progress.data.agentId` with
//! `parentToolUseID`). The sub-agent's file is read through [`Related`], trying
//! `<stem>/subagents/agent-<id>.jsonl`, `subagents/agent-<id>.jsonl`, `agent-<id>.jsonl` and
//! `<stem>_subagents_agent-<id>.jsonl` beside the session; its steps are placed right after the
//! delegating step and act as `subagent_type`. Its first prompt, a copy of the `Task` prompt, is
//! left out. A sidechain file opened on its own acts as `agent-<agentId>`.
//!
//! Inline sidechains (CLI ≤ 2.0.27): a main session file holds the sub-agent's lines itself, with
//! `isSidechain: true`, chained by `parentUuid`, the first line's parent being the `Task` call's
//! line or none. Each chain is spliced after the `Task` call it answers (by its first line's
//! parent, else by the prompt, else the latest unanswered call before it) exactly like a sub-agent
//! file: it acts as `subagent_type` and its copy of the prompt is left out. A chain without a
//! `Task` call stays in place and acts as `agent-<agentId>`.
//!
//! The main agent is named [`MAIN_AGENT`]; tool results belong to the agent that called the tool.
//! Tokens: per assistant message id, the last line's `usage` (input = `input_tokens` +
//! `cache_creation_input_tokens` + `cache_read_input_tokens`) on the message's last step.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::messages::{REDACTED_THINKING, block_text, placeholder};
use super::spantree::USER;
use super::splice::{Thread, Who, splice};
use super::{Document, FormatError, JsonLines, Loaded, Related, failed_exit, parse_document, value_text};
use crate::model::{Diagnostic, Link, LinkKind, SourceFormat, Step, StepIds, StepKind, TokenCounts, Trajectory};

/// The name of the main session's agent.
pub const MAIN_AGENT: &str = "claude";
/// The speaker of text the harness writes into the session (the summary of a compaction).
pub const HARNESS: &str = "harness";
/// Content blocks that are media, shown as placeholders.
const MEDIA_BLOCKS: [&str; 3] = ["image", "document", "audio"];
/// How deep sub-agents of sub-agents are followed.
const MAX_DEPTH: usize = 4;
/// Tool names that spawn a sub-agent.
const TASK_TOOLS: [&str; 2] = ["Task", "Agent"];

/// Whether `doc` is a Claude Code session: JSON lines with a `user` or `assistant` line holding a
/// `message` object and a `uuid`, and no Codex `payload` lines.
pub fn detect(doc: &Document) -> bool {
    let lines = lines_of(doc);
    let is_turn = |v: &Value| {
        matches!(v.get("type").and_then(Value::as_str), Some("user" | "assistant"))
            && v.get("message").is_some_and(Value::is_object)
            && v.get("uuid").is_some_and(Value::is_string)
    };
    lines.iter().any(|(_, v)| is_turn(v)) && !lines.iter().any(|(_, v)| v.get("payload").is_some())
}

/// The `(line, value)` pairs of a document; a one-line file parses as one JSON value.
fn lines_of(doc: &Document) -> Vec<(usize, &Value)> {
    match doc {
        Document::Lines { values, .. } => values.iter().map(|(l, v)| (*l, v)).collect(),
        Document::Json(v @ Value::Object(_)) => vec![(1, v)],
        Document::Json(_) => Vec::new(),
    }
}

/// Loads a session named `name` (the file stem), following sub-agent files through `related`.
///
/// # Errors
/// A message when the document has no user or assistant line.
pub fn load(name: &str, doc: &Document, related: Related<'_>) -> Result<Loaded, FormatError> {
    let lines = lines_of(doc);
    let first_turn = lines.iter().find(|(_, v)| v.get("message").is_some()).map(|(_, v)| *v);
    let lines = lines.into_iter().map(|(l, v)| (l, Cow::Borrowed(v)));
    load_session(name, first_turn, lines, related)
}

/// Loads a session read one line at a time ([`JsonLines`]): each line is parsed, read into
/// steps and dropped before the next. Same result as [`load`] on the same lines.
///
/// # Errors
/// As [`load`].
pub fn load_lines(name: &str, lines: &JsonLines<'_>, related: Related<'_>) -> Result<Loaded, FormatError> {
    let first_turn = lines.values().map(|(_, v)| v).find(|v| v.get("message").is_some());
    load_session(name, first_turn.as_ref(), lines.values().map(|(l, v)| (l, Cow::Owned(v))), related)
}

/// A session from its lines; `first_turn` is the first line with a `message` (none: an error).
fn load_session<'v>(
    name: &str,
    first_turn: Option<&Value>,
    lines: impl Iterator<Item = (usize, Cow<'v, Value>)>,
    related: Related<'_>,
) -> Result<Loaded, FormatError> {
    // A sidechain file (a sub-agent opened on its own) starts with a sidechain turn.
    let agent = match first_turn {
        None => {
            return Err(FormatError::Shape { expected: "JSON lines of type user/assistant with a \"message\"".into() });
        }
        Some(v) if v.get("isSidechain").and_then(Value::as_bool) == Some(true) => sidechain_name(v),
        Some(_) => MAIN_AGENT.to_string(),
    };
    let mut ctx = Ctx { stem: name, related, visited: HashSet::new(), diagnostics: Vec::new() };
    let who = Who { agent: &agent, user: USER, file: None, skip_prompt: None };
    let session = read_session(lines, &who, &mut ctx, 0);
    let mut t = Trajectory {
        id: name.to_string(),
        source: SourceFormat::ClaudeCode,
        task: session.task.unwrap_or_default(),
        observed_output: last_text(&session.thread.steps, &agent),
        steps: session.thread.steps,
        links: session.thread.links,
        metadata: session.metadata,
        ..Trajectory::default()
    };
    t.refresh_agents();
    Ok(Loaded { format: SourceFormat::ClaudeCode, trajectories: vec![t], diagnostics: ctx.diagnostics })
}

/// State shared across a session and its sub-agent files.
struct Ctx<'a> {
    stem: &'a str,
    related: Related<'a>,
    visited: HashSet<String>,
    diagnostics: Vec<Diagnostic>,
}

/// The steps and links of one file, sub-agents spliced in.
struct Session {
    thread: Thread,
    task: Option<String>,
    metadata: Vec<(String, String)>,
}

/// A `Task` call seen in a file: its step, call id, sub-agent type and prompt.
struct TaskCall {
    step: usize,
    id: String,
    subagent: String,
    prompt: String,
}

fn read_session<'v>(
    lines: impl Iterator<Item = (usize, Cow<'v, Value>)>,
    who: &Who<'_>,
    ctx: &mut Ctx<'_>,
    depth: usize,
) -> Session {
    let mut r = Reader { main_file: who.file.is_none(), ..Reader::default() };
    for (no, v) in lines {
        r.line(no, &v, who, ctx);
    }
    r.name_results();
    r.note_orphans(who, ctx);
    r.finish_tokens();
    let links = r.links();
    let roots = r.roots();
    let mut subs = r.sub_sessions(who, ctx, depth);
    let main = Thread { steps: std::mem::take(&mut r.steps), links, roots };
    let main = match r.inline_steps.is_empty() {
        true => main,
        false => {
            let (main, inline, new_index) = r.split_inline(main, who);
            subs = subs.into_iter().filter_map(|(k, t)| Some((new_index[k]?, t))).collect();
            for (k, t) in inline {
                subs.entry(k).or_insert(t);
            }
            main
        }
    };
    Session { thread: splice(main, subs), task: r.task, metadata: r.metadata }
}

/// Reads the lines of one file into steps.
#[derive(Default)]
struct Reader {
    steps: Vec<Step>,
    /// uuid → (first, last) step of the line, for lines with steps.
    by_uuid: HashMap<String, (usize, usize)>,
    /// uuid → the 1-based line that first carried it.
    line_of: HashMap<String, usize>,
    /// uuid → parentUuid for every line (noise lines included).
    parent_of: HashMap<String, Option<String>>,
    /// (first step, last step, parentUuid) of every line with steps.
    line_parents: Vec<(usize, usize, Option<String>)>,
    calls: HashMap<String, usize>,
    /// (result step, the `tool_use_id` it answers, its 1-based line).
    results: Vec<(usize, String, usize)>,
    tasks: Vec<TaskCall>,
    /// Task call id → sub-agent id.
    agent_ids: HashMap<String, String>,
    /// Assistant message id → (last step, usage of its last line).
    usage: HashMap<String, (usize, Option<TokenCounts>)>,
    task: Option<String>,
    skipped: Vec<(String, usize)>,
    metadata: Vec<(String, String)>,
    prompt_skipped: bool,
    /// uuids of the sidechain lines of a main session file (older CLI versions write a `Task`
    /// sub-agent's conversation inline).
    inline_lines: HashSet<String>,
    /// Step → uuid of its line, for the steps of inline sidechain lines.
    inline_steps: Vec<(usize, String)>,
    /// The 1-based line being read.
    line: usize,
    /// Whether the file is the session loaded (its steps keep their line), not a sub-agent's file.
    main_file: bool,
}

impl Reader {
    fn line(&mut self, no: usize, v: &Value, who: &Who<'_>, ctx: &mut Ctx<'_>) {
        self.line = no;
        // The session's working folder (every turn line writes it): the repository root a
        // search's path is read against.
        if !self.metadata.iter().any(|(k, _)| k == "cwd")
            && let Some(cwd) = v.get("cwd").and_then(Value::as_str).filter(|c| !c.is_empty())
        {
            self.metadata.push(("cwd".into(), cwd.to_string()));
        }
        let ty = match line_type(v) {
            LineType::Typed(t) => t,
            LineType::Untyped(role) => {
                ctx.diagnostics.push(who.diag(
                    no,
                    format!("line has no \"type\"; its message has role {role:?} and content: read as type {role:?}"),
                ));
                role
            }
            LineType::UntypedUnread(found) => {
                ctx.diagnostics.push(who.diag(
                    no,
                    format!(
                        "line has no \"type\" and its message is not a turn (expected role user or assistant and \
                         content, found {found}); skipped"
                    ),
                ));
                ""
            }
            LineType::Unknown(t, holds) => {
                ctx.diagnostics.push(who.diag(
                    no,
                    format!(
                        "unknown line type {t:?} holds {holds} (a newer Claude Code version may write it); \
                         not read"
                    ),
                ));
                t
            }
        };
        let uuid = v.get("uuid").and_then(Value::as_str).map(str::to_string);
        // A compaction boundary starts a new chain (`parentUuid: null`) but names the line it
        // continues in `logicalParentUuid`: the chain goes on through it.
        let parent = v
            .get("parentUuid")
            .and_then(Value::as_str)
            .or_else(|| v.get("logicalParentUuid").and_then(Value::as_str))
            .map(str::to_string);
        if let Some(u) = &uuid {
            if parent.as_deref() == Some(u.as_str()) {
                ctx.diagnostics.push(who.diag(no, format!("line {u:?} is its own parent; read as a root")));
            }
            if let Some(&first) = self.line_of.get(u) {
                // The same record written twice (a resumed or retried session): one step.
                ctx.diagnostics.push(who.diag(no, format!("line repeats uuid {u:?} of line {first}; loaded once")));
                return;
            }
            self.line_of.insert(u.clone(), no);
        }
        let parent = parent.filter(|p| Some(p) != uuid.as_ref());
        if let Some(u) = &uuid {
            self.parent_of.insert(u.clone(), parent.clone());
        }
        self.note_agent_id(v);
        let inline = who.file.is_none() && v.get("isSidechain").and_then(Value::as_bool) == Some(true);
        if let (true, Some(u)) = (inline, &uuid) {
            self.inline_lines.insert(u.clone());
        }
        let is_turn = matches!(ty, "user" | "assistant");
        let is_meta = v.get("isMeta").and_then(Value::as_bool) == Some(true);
        // A `system` line that reports an error (an API error, `level: error`) is the harness's
        // error step, so the failure it records is not lost.
        let system_error = ty == "system"
            && (v.get("level").and_then(Value::as_str) == Some("error")
                || v.get("subtype").and_then(Value::as_str) == Some("api_error"));
        if system_error {
            let text = ["content", "error", "cause"]
                .iter()
                .find_map(|k| v.get(*k).filter(|x| !x.is_null()).map(value_text))
                .unwrap_or_else(|| "API error".into());
            let first = self.steps.len();
            let s = self.push(v, "system", HARNESS, StepKind::Message, text);
            self.steps[s].is_error = true;
            if let Some(u) = uuid {
                self.by_uuid.insert(u, (first, s));
            }
            self.line_parents.push((first, s, parent));
            return;
        }
        if !is_turn || is_meta {
            self.note_skipped(ty, v);
            return;
        }
        let Some(msg) = v.get("message").filter(|m| m.is_object()) else {
            ctx.diagnostics.push(who.diag(no, format!("{ty} line without a \"message\" object skipped")));
            return;
        };
        if self.is_skipped_prompt(ty, msg, who) {
            return;
        }
        let first = self.steps.len();
        self.blocks(v, msg, ty, who);
        if let (true, Some(u)) = (inline && who.agent == MAIN_AGENT, &uuid) {
            self.inline_steps.extend((first..self.steps.len()).map(|s| (s, u.clone())));
        }
        if self.steps.len() > first {
            let last = self.steps.len() - 1;
            if let Some(u) = uuid {
                self.by_uuid.insert(u, (first, last));
            }
            self.line_parents.push((first, last, parent));
        }
    }

    /// Each `tool_result` takes the name of the `tool_use` it answers (the block carries only the
    /// id), as a result of every other format does.
    fn name_results(&mut self) {
        for (s, id, _) in &self.results {
            if let Some(&c) = self.calls.get(id) {
                self.steps[*s].tool_name = self.steps[c].tool_name.clone();
            }
        }
    }

    /// A diagnostic for each `tool_result` whose `tool_use_id` no `tool_use` of the file has: the
    /// result stays a step, unlinked.
    fn note_orphans(&self, who: &Who<'_>, ctx: &mut Ctx<'_>) {
        for (_, id, line) in &self.results {
            let message = match id.is_empty() {
                true => "tool_result without a \"tool_use_id\"; kept as a result linked to no call".to_string(),
                false if self.calls.contains_key(id) => continue,
                false => format!(
                    "tool_result answers tool_use_id {id:?}, which no tool_use of the file has; kept as a result \
                     linked to no call"
                ),
            };
            ctx.diagnostics.push(who.diag(*line, message));
        }
    }

    fn note_skipped(&mut self, ty: &str, v: &Value) {
        if ty == "summary"
            && let Some(s) = v.get("summary").and_then(Value::as_str)
        {
            self.metadata.push(("summary".into(), s.to_string()));
        }
        let name = if ty.is_empty() { "untyped" } else { ty };
        match self.skipped.iter_mut().find(|(t, _)| t == name) {
            Some((_, n)) => *n += 1,
            None => self.skipped.push((name.to_string(), 1)),
        }
    }

    /// Sub-agent ids from `toolUseResult.agentId` or a running session's `progress` line.
    fn note_agent_id(&mut self, v: &Value) {
        let from_result = v.pointer("/toolUseResult/agentId").and_then(Value::as_str);
        if let Some(id) = from_result {
            let call = v
                .pointer("/message/content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find_map(|b| b.get("tool_use_id").and_then(Value::as_str));
            if let Some(c) = call {
                self.agent_ids.insert(c.to_string(), id.to_string());
            }
        }
        let progress = v.pointer("/data/agentId").and_then(Value::as_str);
        let parent_call = v.get("parentToolUseID").and_then(Value::as_str);
        if let (Some(id), Some(c)) = (progress, parent_call) {
            self.agent_ids.entry(c.to_string()).or_insert_with(|| id.to_string());
        }
    }

    fn is_skipped_prompt(&mut self, ty: &str, msg: &Value, who: &Who<'_>) -> bool {
        let (Some(skip), false) = (who.skip_prompt, self.prompt_skipped) else {
            return false;
        };
        let text = msg.get("content").map(block_text).unwrap_or_default();
        let hit = ty == "user" && text.trim() == skip.trim();
        self.prompt_skipped |= hit;
        hit
    }

    fn blocks(&mut self, v: &Value, msg: &Value, ty: &str, who: &Who<'_>) {
        let role = msg.get("role").and_then(Value::as_str).unwrap_or(ty).to_string();
        // Older sessions keep sidechain lines in the main file: they act as the sub-agent.
        let inline_sidechain = who.file.is_none()
            && who.user == USER
            && who.agent == MAIN_AGENT
            && v.get("isSidechain").and_then(Value::as_bool) == Some(true);
        let (agent, user) = match inline_sidechain {
            true => (sidechain_name(v), who.agent.to_string()),
            false => (who.agent.to_string(), who.user.to_string()),
        };
        // The summary written when a session is compacted is the harness's text, not the user's.
        let summary = v.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
        let (speaker, role) = match (ty, summary) {
            (_, true) => (HARNESS, "compact_summary".to_string()),
            ("assistant", _) => (agent.as_str(), role),
            _ => (user.as_str(), role),
        };
        match msg.get("content") {
            Some(Value::String(s)) => self.text_step(v, &role, speaker, StepKind::Message, s),
            Some(Value::Array(blocks)) => {
                // Media blocks join the text of the same line, so a prompt `[image, text]` is one
                // message whose text (not the placeholder) is the task.
                let mut media = Vec::new();
                for b in blocks {
                    let bty = b.get("type").and_then(Value::as_str).unwrap_or("");
                    if MEDIA_BLOCKS.contains(&bty) {
                        media.push(placeholder(b));
                        continue;
                    }
                    if bty == "text" && !media.is_empty() {
                        let text = b.get("text").map(value_text).unwrap_or_default();
                        self.task_from(speaker, &text);
                        let joined = format!("{}\n{text}", media.join("\n"));
                        media.clear();
                        self.text_step(v, &role, speaker, StepKind::Message, &joined);
                        continue;
                    }
                    self.block(v, &role, speaker, &agent, b);
                }
                if !media.is_empty() {
                    self.push(v, &role, speaker, StepKind::Message, media.join("\n"));
                }
            }
            _ => {}
        }
        if ty == "assistant" {
            self.note_usage(v, msg);
        }
    }

    fn block(&mut self, v: &Value, role: &str, speaker: &str, agent: &str, b: &Value) {
        let ty = b.get("type").and_then(Value::as_str).unwrap_or("");
        let text = |k: &str| b.get(k).map(value_text).unwrap_or_default();
        match ty {
            "text" => self.text_step(v, role, speaker, StepKind::Message, &text("text")),
            "thinking" => self.text_step(v, role, speaker, StepKind::Thought, &text("thinking")),
            "tool_use" => self.tool_use(v, role, agent, b),
            "tool_result" => self.tool_result(v, role, agent, b),
            "redacted_thinking" => {
                self.push(v, role, speaker, StepKind::Thought, REDACTED_THINKING.to_string());
            }
            _ => {
                self.push(v, role, speaker, StepKind::Message, placeholder(b));
            }
        }
    }

    fn text_step(&mut self, v: &Value, role: &str, speaker: &str, kind: StepKind, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        if kind == StepKind::Message {
            self.task_from(speaker, text);
        }
        self.push(v, role, speaker, kind, text.to_string());
    }

    /// The first text the user writes is the task.
    fn task_from(&mut self, speaker: &str, text: &str) {
        if speaker == USER && self.task.is_none() && !text.trim().is_empty() {
            self.task = Some(text.trim().to_string());
        }
    }

    fn tool_use(&mut self, v: &Value, role: &str, agent: &str, b: &Value) {
        let name = b.get("name").map(value_text).unwrap_or_default();
        let id = b.get("id").map(value_text).unwrap_or_default();
        let input = b.get("input").cloned().unwrap_or(Value::Null);
        let is_task = TASK_TOOLS.contains(&name.as_str());
        let prompt = input.get("prompt").map(value_text);
        let content = match (&prompt, is_task) {
            (Some(p), true) => p.clone(),
            _ => value_text(&input),
        };
        let kind = if is_task { StepKind::Delegation } else { StepKind::ToolCall };
        let s = self.push(v, role, agent, kind, content);
        self.steps[s].tool_name = Some(name);
        self.steps[s].ids.refs.push(id.clone());
        if is_task {
            let subagent = input.get("subagent_type").map(value_text).unwrap_or_else(|| "subagent".into());
            self.steps[s].delegate_to = Some(subagent.clone());
            self.tasks.push(TaskCall { step: s, id: id.clone(), subagent, prompt: prompt.unwrap_or_default() });
        }
        self.calls.insert(id, s);
    }

    fn tool_result(&mut self, v: &Value, role: &str, agent: &str, b: &Value) {
        let id = b.get("tool_use_id").map(value_text).unwrap_or_default();
        let mut text = b.get("content").map(block_text).unwrap_or_default();
        // A result block without text: the CLI's own record of the result, when it is a string
        // (`"Error: ..."` for a failed call).
        if text.trim().is_empty()
            && let Some(Value::String(r)) = v.get("toolUseResult")
        {
            text = r.clone();
        }
        if let Some(agent_id) = agent_id_in_text(&text) {
            self.agent_ids.entry(id.clone()).or_insert(agent_id);
        }
        let s = self.push(v, role, agent, StepKind::ToolResult, text);
        self.steps[s].is_error =
            b.get("is_error").and_then(Value::as_bool) == Some(true) || failed_exit(&self.steps[s].content).is_some();
        self.steps[s].ids.refs.push(id.clone());
        self.results.push((s, id, self.line));
    }

    fn push(&mut self, v: &Value, role: &str, agent: &str, kind: StepKind, content: String) -> usize {
        let api_error = v.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true);
        self.steps.push(Step {
            index: self.steps.len(),
            agent: agent.to_string(),
            role: role.to_string(),
            kind,
            content,
            ids: StepIds {
                id: v.get("uuid").and_then(Value::as_str).map(str::to_string),
                parent: v.get("parentUuid").and_then(Value::as_str).map(str::to_string),
                line: self.main_file.then_some(self.line),
                ..StepIds::default()
            },
            timestamp: v.get("timestamp").and_then(Value::as_str).map(str::to_string),
            is_error: api_error,
            ..Step::default()
        });
        self.steps.len() - 1
    }

    fn note_usage(&mut self, v: &Value, msg: &Value) {
        let Some(last) = self.steps.len().checked_sub(1) else {
            return;
        };
        let id = msg
            .get("id")
            .and_then(Value::as_str)
            .or_else(|| v.get("uuid").and_then(Value::as_str))
            .unwrap_or_default()
            .to_string();
        let usage = msg.get("usage").map(|u| {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            TokenCounts {
                input: n("input_tokens") + n("cache_creation_input_tokens") + n("cache_read_input_tokens"),
                output: n("output_tokens"),
            }
        });
        self.usage.insert(id, (last, usage));
    }

    fn finish_tokens(&mut self) {
        for (step, usage) in self.usage.values() {
            if let Some(u) = usage {
                self.steps[*step].tokens = Some(*u);
            }
        }
        if !self.skipped.is_empty() {
            let list: Vec<String> = self.skipped.iter().map(|(t, n)| format!("{t} {n}")).collect();
            self.metadata.push(("lines_not_steps".into(), list.join(", ")));
        }
    }

    /// For every uuid, the last step of the nearest line at or above it that has steps (through
    /// lines without steps); `None` when the chain ends or loops first. Linear: each uuid is
    /// resolved once.
    fn resolved(&self) -> HashMap<&str, Option<usize>> {
        let mut memo: HashMap<&str, Option<usize>> = HashMap::with_capacity(self.parent_of.len());
        for start in self.parent_of.keys() {
            let mut path: Vec<&str> = Vec::new();
            let mut on_path: HashSet<&str> = HashSet::new();
            let mut cur = Some(start.as_str());
            let answer = loop {
                let Some(u) = cur else { break None };
                if let Some(&known) = memo.get(u) {
                    break known;
                }
                if let Some(&(_, last)) = self.by_uuid.get(u) {
                    break Some(last);
                }
                if !on_path.insert(u) {
                    break None;
                }
                path.push(u);
                cur = self.parent_of.get(u).and_then(|p| p.as_deref());
            };
            for u in path {
                memo.insert(u, answer);
            }
            if let Some(&(_, last)) = self.by_uuid.get(start.as_str()) {
                memo.insert(start.as_str(), Some(last));
            }
        }
        memo
    }

    /// The nearest ancestor line with steps of a line whose parent is `parent`.
    fn resolve(&self, memo: &HashMap<&str, Option<usize>>, parent: Option<&str>) -> Option<usize> {
        let u = parent?;
        match self.by_uuid.get(u) {
            Some(&(_, last)) => Some(last),
            None => memo.get(u).copied().flatten(),
        }
    }

    fn links(&self) -> Vec<Link> {
        let mut links = Vec::new();
        let memo = self.resolved();
        for (first, last, parent) in &self.line_parents {
            if let Some(p) = self.resolve(&memo, parent.as_deref()).filter(|p| p != first) {
                links.push(Link { from: p, to: *first, kind: LinkKind::Parent });
            }
            // The blocks of one line (thinking, text, tool_use) follow each other: each is the
            // parent of the next, so the chain runs through the line to its last block.
            for s in *first..*last {
                links.push(Link { from: s, to: s + 1, kind: LinkKind::Parent });
            }
        }
        for (s, id, _) in &self.results {
            if let Some(&c) = self.calls.get(id) {
                links.push(Link { from: c, to: *s, kind: LinkKind::ToolResult });
            }
        }
        links
    }

    fn roots(&self) -> Vec<usize> {
        let memo = self.resolved();
        self.line_parents
            .iter()
            .filter(|(_, _, p)| self.resolve(&memo, p.as_deref()).is_none())
            .map(|(f, _, _)| *f)
            .collect()
    }

    /// Takes the inline sidechain steps out of `main`: one sub-thread per chain of sidechain lines
    /// (lines whose `parentUuid` leads to the same first sidechain line), keyed by the `Task` call
    /// it answers: the call's line when the first sidechain line's parent leads to one, else the
    /// call whose prompt is the chain's first user text, else the latest unanswered call before
    /// it. Steps of chains without a `Task` call stay in place. The chain acts as the call's
    /// `subagent_type`, its copy of the prompt is left out. Returns the main thread, the
    /// sub-threads by (new) delegating step, and each old step's new index in the main thread.
    fn split_inline(&self, main: Thread, who: &Who<'_>) -> (Thread, HashMap<usize, Thread>, Vec<Option<usize>>) {
        // Chain root (first sidechain line) of each inline step.
        let root_of = |uuid: &str| {
            let mut cur = uuid.to_string();
            for _ in 0..=self.parent_of.len() {
                match self.parent_of.get(&cur).cloned().flatten() {
                    Some(p) if self.inline_lines.contains(&p) => cur = p,
                    _ => break,
                }
            }
            cur
        };
        let mut chains: Vec<(String, Vec<usize>)> = Vec::new();
        for (s, u) in &self.inline_steps {
            let root = root_of(u);
            match chains.iter_mut().find(|(r, _)| *r == root) {
                Some((_, steps)) => steps.push(*s),
                None => chains.push((root, vec![*s])),
            }
        }
        let mut used: HashSet<usize> = HashSet::new();
        let mut owner: HashMap<usize, usize> = HashMap::new(); // inline step → task step
        let mut task_of_chain: Vec<Option<&TaskCall>> = Vec::new();
        let memo = self.resolved();
        for (root, steps) in &chains {
            let first = steps[0];
            let by_parent = self
                .resolve(&memo, self.parent_of.get(root).cloned().flatten().as_deref())
                .and_then(|p| self.tasks.iter().find(|t| t.step == p));
            let first_text = main.steps[first].content.trim();
            let by_prompt = || self.tasks.iter().find(|t| !used.contains(&t.step) && t.prompt.trim() == first_text);
            let latest = || self.tasks.iter().rev().find(|t| t.step < first && !used.contains(&t.step));
            let task = by_parent.or_else(by_prompt).or_else(latest);
            if let Some(t) = task {
                used.insert(t.step);
                owner.extend(steps.iter().map(|&s| (s, t.step)));
            }
            task_of_chain.push(task);
        }
        let mut new_index: Vec<Option<usize>> = vec![None; main.steps.len()];
        let mut kept = Vec::new();
        let mut subs: HashMap<usize, (Vec<usize>, &TaskCall)> = HashMap::new();
        for (i, step) in main.steps.iter().enumerate() {
            if owner.contains_key(&i) {
                continue;
            }
            new_index[i] = Some(kept.len());
            kept.push(step.clone());
        }
        for ((_, steps), task) in chains.iter().zip(&task_of_chain) {
            if let Some(t) = task {
                subs.insert(t.step, (steps.clone(), t));
            }
        }
        let remap_links = |map: &dyn Fn(usize) -> Option<usize>| -> Vec<Link> {
            main.links.iter().filter_map(|l| Some(Link { from: map(l.from)?, to: map(l.to)?, kind: l.kind })).collect()
        };
        let main_links = remap_links(&|i| new_index[i]);
        let roots = main.roots.iter().filter_map(|&r| new_index[r]).collect();
        let mut threads = HashMap::new();
        for (task_step, (steps, t)) in subs {
            let sidechain_agent = steps.iter().map(|&s| main.steps[s].agent.clone()).find(|a| a != who.agent);
            let skip_first =
                main.steps[steps[0]].agent == who.agent && main.steps[steps[0]].content.trim() == t.prompt.trim();
            let members: Vec<usize> = steps.iter().copied().skip(usize::from(skip_first)).collect();
            let local: HashMap<usize, usize> = members.iter().enumerate().map(|(k, &s)| (s, k)).collect();
            let sub_steps: Vec<Step> = members
                .iter()
                .map(|&s| {
                    let mut step = main.steps[s].clone();
                    if sidechain_agent.as_deref() == Some(step.agent.as_str()) {
                        step.agent = t.subagent.clone();
                    }
                    step
                })
                .collect();
            let links = remap_links(&|i| local.get(&i).copied());
            let has_parent: HashSet<usize> =
                links.iter().filter(|l| l.kind == LinkKind::Parent).map(|l| l.to).collect();
            let sub_roots = (0..sub_steps.len()).filter(|k| !has_parent.contains(k)).take(1).collect();
            let Some(at) = new_index[task_step] else { continue };
            threads.insert(at, Thread { steps: sub_steps, links, roots: sub_roots });
        }
        (Thread { steps: kept, links: main_links, roots }, threads, new_index)
    }

    /// Loads the sub-agent file of each `Task` call that has one.
    fn sub_sessions(&self, who: &Who<'_>, ctx: &mut Ctx<'_>, depth: usize) -> HashMap<usize, Thread> {
        let mut out = HashMap::new();
        for t in &self.tasks {
            let Some(agent_id) = self.agent_ids.get(&t.id) else {
                continue;
            };
            if let Some(s) = sub_session(t, agent_id, who, ctx, depth) {
                out.insert(t.step, s.thread);
            }
        }
        out
    }
}

/// Line types Claude Code documents as not steps (bookkeeping written beside the conversation).
const NOT_STEP_LINES: [&str; 7] =
    ["progress", "system", "summary", "file-history-snapshot", "queue-operation", "attachment", "custom-title"];

/// What a line's `type` says, checked against what the line holds.
enum LineType<'v> {
    /// The line's `type` (a turn, a known non-step line, or an unknown type holding nothing to read).
    Typed(&'v str),
    /// No `type`, but a `message` with role `user` / `assistant` and `content`: read as that role.
    Untyped(&'v str),
    /// No `type`, and a `message` that is no turn: what was found instead.
    UntypedUnread(String),
    /// An unknown `type` whose line holds a message or a tool result: the type and what it holds.
    Unknown(&'v str, String),
}

/// The type of line `v` ([`LineType`]); lines without `type` or `message` are `Typed("")`.
fn line_type(v: &Value) -> LineType<'_> {
    let msg = v.get("message").filter(|m| m.is_object());
    let role = msg.and_then(|m| m.get("role")).and_then(Value::as_str);
    let has_content = msg.is_some_and(|m| m.get("content").is_some_and(|c| c.is_string() || c.is_array()));
    match v.get("type").and_then(Value::as_str) {
        Some(t) if matches!(t, "user" | "assistant") || NOT_STEP_LINES.contains(&t) => LineType::Typed(t),
        Some(t) => match (msg, v.get("toolUseResult")) {
            (Some(_), _) => LineType::Unknown(t, message_shape(role, msg)),
            (None, Some(_)) => LineType::Unknown(t, "a \"toolUseResult\"".into()),
            (None, None) => LineType::Typed(t),
        },
        None => match (msg, role) {
            (None, _) => LineType::Typed(""),
            (Some(_), Some(r @ ("user" | "assistant"))) if has_content => LineType::Untyped(r),
            (Some(_), _) => LineType::UntypedUnread(message_shape(role, msg)),
        },
    }
}

/// A message's shape for a diagnostic: `a message with role "assistant" and 1 tool_use block`.
fn message_shape(role: Option<&str>, msg: Option<&Value>) -> String {
    let role = role.map_or("no role".to_string(), |r| format!("role {r:?}"));
    let content = msg.and_then(|m| m.get("content"));
    let blocks = match content {
        Some(Value::Array(bs)) => {
            let mut kinds: Vec<(String, usize)> = Vec::new();
            for b in bs {
                let k = b.get("type").and_then(Value::as_str).unwrap_or("untyped").to_string();
                match kinds.iter_mut().find(|(t, _)| *t == k) {
                    Some((_, n)) => *n += 1,
                    None => kinds.push((k, 1)),
                }
            }
            let list: Vec<String> =
                kinds.iter().map(|(k, n)| format!("{n} {k} block{}", if *n == 1 { "" } else { "s" })).collect();
            match list.is_empty() {
                true => "no content blocks".to_string(),
                false => list.join(", "),
            }
        }
        Some(Value::String(_)) => "text content".to_string(),
        Some(other) => format!("content of type {}", super::type_name(other)),
        None => "no content".to_string(),
    };
    format!("a message with {role} and {blocks}")
}

/// The agent name of a sidechain line: `agent-<agentId>`, or `sidechain` without an id.
fn sidechain_name(v: &Value) -> String {
    match v.get("agentId").and_then(Value::as_str) {
        Some(id) => format!("agent-{id}"),
        None => "sidechain".to_string(),
    }
}

/// `agentId: a485154` in a Task result's text (CLI 2.0/2.1 append it).
fn agent_id_in_text(text: &str) -> Option<String> {
    let rest = &text[text.find("agentId: ")? + "agentId: ".len()..];
    let id: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect();
    is_safe_id(&id).then_some(id)
}

/// Ids that may be used in file names: 1 to 64 ASCII letters, digits, `-` or `_`.
fn is_safe_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn sub_session(t: &TaskCall, agent_id: &str, who: &Who<'_>, ctx: &mut Ctx<'_>, depth: usize) -> Option<Session> {
    if depth >= MAX_DEPTH || ctx.visited.contains(agent_id) {
        return None;
    }
    ctx.visited.insert(agent_id.to_string());
    let (file, doc) = sub_document(t, agent_id, who, ctx)?;
    let sub_who = Who { agent: &t.subagent, user: who.agent, file: Some(&file), skip_prompt: Some(&t.prompt) };
    let lines = lines_of(&doc).into_iter().map(|(l, v)| (l, Cow::Borrowed(v)));
    Some(read_session(lines, &sub_who, ctx, depth + 1))
}

/// Finds and parses a sub-agent's file: its name and document, or `None` with a diagnostic.
fn sub_document(t: &TaskCall, agent_id: &str, who: &Who<'_>, ctx: &mut Ctx<'_>) -> Option<(String, Document)> {
    let place = who.file.map_or(String::new(), |f| format!(" in {f}"));
    let mut fail = |message: String| {
        ctx.diagnostics.push(Diagnostic { line: None, message });
        None
    };
    if !is_safe_id(agent_id) {
        return fail(format!("sub-agent id {agent_id:?}{place} is not a plain id; not followed"));
    }
    let names = candidates(ctx.stem, agent_id);
    let found = names.iter().find_map(|n| (ctx.related)(n).map(|b| (n.clone(), b)));
    let Some((file, bytes)) = found else {
        return fail(format!(
            "sub-agent {agent_id} of the Task call {}{place}: no file found (tried {}); its steps are missing",
            t.id,
            names.join(", ")
        ));
    };
    let doc = match parse_document(&file, &bytes) {
        Ok(d) => d,
        Err(e) => return fail(format!("sub-agent {agent_id}: {e}; its steps are missing")),
    };
    if let Document::Lines { bad, .. } = &doc {
        for (l, msg) in bad {
            ctx.diagnostics.push(Diagnostic { line: None, message: format!("{file}:{l}: skipped: not JSON: {msg}") });
        }
    }
    Some((file, doc))
}

/// File names a sub-agent's session may have, relative to the session's folder.
fn candidates(stem: &str, id: &str) -> Vec<String> {
    vec![
        format!("{stem}/subagents/agent-{id}.jsonl"),
        format!("subagents/agent-{id}.jsonl"),
        format!("agent-{id}.jsonl"),
        format!("{stem}_subagents_agent-{id}.jsonl"),
    ]
}

/// The last text message of `agent`: the session's answer.
fn last_text(steps: &[Step], agent: &str) -> Option<String> {
    steps.iter().rev().find(|s| s.agent == agent && s.kind == StepKind::Message).map(|s| s.content.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::parse;

    #[test]
    fn agent_ids_in_result_text_are_read_and_unsafe_ids_refused() {
        let text = "done\nagentId: a485154 (for resuming to continue this agent's work if needed)";
        assert_eq!(agent_id_in_text(text).as_deref(), Some("a485154"));
        assert_eq!(agent_id_in_text("agentId: ../../etc/passwd"), None);
        assert!(!is_safe_id("a/b"));
        assert!(is_safe_id("a485154"));
    }

    #[test]
    fn inline_sidechain_lines_of_a_main_session_are_spliced_after_their_task_call() {
        let lines = [
            r#"{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"go"}}"#,
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Task","input":{"subagent_type":"x","prompt":"look"}}]}}"#,
            r#"{"type":"user","uuid":"s1","parentUuid":null,"isSidechain":true,"agentId":"abc","message":{"role":"user","content":"look"}}"#,
            r#"{"type":"assistant","uuid":"s2","parentUuid":"s1","isSidechain":true,"agentId":"abc","message":{"role":"assistant","content":[{"type":"text","text":"found it"}]}}"#,
        ];
        let loaded = parse("s.jsonl", lines.join("\n").as_bytes(), None).unwrap();
        let t = &loaded.trajectories[0];
        let agents: Vec<&str> = t.steps.iter().map(|s| s.agent.as_str()).collect();
        // The sub-agent's copy of the prompt is left out; its steps follow the delegation and act
        // as the sub-agent type.
        assert_eq!(agents, ["user", "claude", "x"]);
        assert_eq!(t.steps[1].kind, StepKind::Delegation);
        assert!(t.links.contains(&Link { from: 1, to: 2, kind: LinkKind::Delegation }));
        assert_eq!(t.task, "go");
    }
}
