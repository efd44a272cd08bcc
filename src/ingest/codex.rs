//! Codex CLI rollout JSONL (`~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`).
//!
//! Shape per `TRACE_FORMATS.md` row 10b (codex-rs `protocol.rs` `RolloutLine`): each line is
//! `{timestamp, type, payload}` with `type` ∈ `session_meta`, `turn_context`, `response_item`,
//! `event_msg`, `compacted`. Steps come from `response_item` payloads:
//! - `message`: `user` → message by the user, `assistant` → message by the agent (`content[]`
//!   `input_text` / `output_text` parts joined); `developer` / `system` → the agent's role text;
//! - `reasoning` → thought (`summary[].text`, then `content[].text`; an encrypted-only item, with
//!   no readable text, is the thought [`ENCRYPTED_REASONING`]);
//! - `function_call` (`name`, `arguments` JSON text, `call_id`), `custom_tool_call` (`input`),
//!   `local_shell_call` (`action.command`), `web_search_call` (`action.query`) → tool call;
//!   `function_call spawn_agent` → delegation to `arguments.agent_type`;
//! - `*_output` (`call_id`, `output`) → tool result; a JSON output `{output, metadata: {exit_code}}`
//!   is unwrapped and a non-zero exit code marks an error, as does a failed exit in the text in any
//!   wording ([`failed_exit`]: `Exit code: N`, `Process exited with code N`, `exit status N`),
//!   or an `exec_command_end` (non-zero `exit_code`) / `patch_apply_end` (`success: false`) event
//!   for its call id.
//!
//! Nothing is dropped silently: a `response_item` whose payload has no `type` is read as the one
//! item its fields make unambiguous ([`infer_item`], after the fields of each `ResponseItem`
//! variant in codex-rs `protocol/src/models.rs`, CLI 0.58) with a diagnostic, else skipped with
//! one; an output whose `call_id` no call of the file has stays an unlinked result with a
//! diagnostic naming id and line. Types falat does not know (a newer CLI may write them) are
//! named with what they hold and not read when they hold a message or a call ([`holds`]): a
//! line type other than `RolloutItem`'s (codex-rs `protocol.rs`: `session_meta`, `response_item`,
//! `compacted`, `turn_context`, `event_msg`), a `response_item` type other than `ResponseItem`'s,
//! an `event_msg` type other than `EventMsg`'s ([`EVENT_TYPES`]); one that holds neither is
//! counted in `lines_not_steps` (`event_msg NAME`, `response_item NAME`). The documented types
//! that hold no step (`ghost_snapshot`, `compaction`, the events not listed below) stay quiet.
//!
//! Versions: the envelope and `ordinal` (CLI 0.3x–0.15x, 2025–2026; `world_state` lines, which are
//! not steps, are counted in `lines_not_steps`), and the rollouts written before the envelope
//! (mid-2025): a bare `{id, timestamp, instructions, git}` header, `{record_type: "state"}` markers
//! and bare response items, read as if enveloped.
//!
//! `event_msg` lines duplicate messages; `user_message`, `agent_message` and `agent_reasoning` are
//! steps only when no `response_item` carries the same text. `collab_agent_spawn_end{call_id,
//! new_thread_id, new_agent_role}` and `collab_waiting_end{call_id, agent_statuses}` answer the
//! `spawn_agent` / `wait_agent` calls when no `*_output` does; the wait result that names a spawned
//! thread is linked from the spawn as the delegate's reply ([`LinkKind::Delegation`]).
//! `token_count.info.last_token_usage` goes on the latest agent step; `error` events are error
//! steps; `task_complete.last_agent_message` is the observed output.
//!
//! Sub-agent threads: a spawned thread's own rollout (`*<new_thread_id>.jsonl` beside the file,
//! read through [`Related`]) is placed right after the spawn step and acts as its nickname / role.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value;

use super::messages::placeholder;
use super::spantree::USER;
use super::splice::{Thread, Who, splice};
use super::{Document, FormatError, JsonLines, Loaded, Related, failed_exit, parse_document, value_text};
use crate::model::{
    AgentInfo, Diagnostic, Link, LinkKind, SourceFormat, Step, StepIds, StepKind, TokenCounts, Trajectory,
};

/// The name of the main session's agent when the session names none.
pub const MAIN_AGENT: &str = "codex";
/// How deep spawned threads of spawned threads are followed.
const MAX_DEPTH: usize = 4;
const LINE_TYPES: [&str; 5] = ["session_meta", "turn_context", "response_item", "event_msg", "compacted"];
/// The content of a thought whose reasoning the rollout only holds encrypted.
pub const ENCRYPTED_REASONING: &str = "[encrypted reasoning]";
/// `response_item` payload types, which rollouts before the envelope (mid-2025) wrote bare.
const ITEM_TYPES: [&str; 9] = [
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "local_shell_call_output",
    "web_search_call",
];

/// The item a payload without `type` is, by the fields codex-rs `models.rs` (`ResponseItem`)
/// gives each variant: `role` + `content` → `message`; `name` + `arguments` + `call_id` →
/// `function_call`; `name` + `input` + `call_id` → `custom_tool_call`; `call_id` + `output` →
/// `function_call_output`. `Ok((type, the fields that decided))`, or `Err` with the fields found
/// when none or several fit.
fn infer_item(p: &Value) -> Result<(&'static str, &'static str), String> {
    let has = |k: &str| p.get(k).is_some_and(|v| !v.is_null());
    let text = |k: &str| p.get(k).is_some_and(Value::is_string);
    let fits: Vec<(&str, &str)> = [
        (text("role") && has("content"), ("message", "role and content")),
        (text("name") && has("arguments") && has("call_id"), ("function_call", "name, arguments and call_id")),
        (text("name") && has("input") && has("call_id"), ("custom_tool_call", "name, input and call_id")),
        (has("call_id") && has("output") && !has("name"), ("function_call_output", "call_id and output")),
    ]
    .into_iter()
    .filter_map(|(ok, v)| ok.then_some(v))
    .collect();
    match fits.as_slice() {
        [one] => Ok(*one),
        _ => {
            let keys: Vec<&str> = p.as_object().into_iter().flatten().map(|(k, _)| k.as_str()).collect();
            Err(match keys.is_empty() {
                true => "no fields".into(),
                false => format!("fields {}", keys.join(", ")),
            })
        }
    }
}

/// `response_item` payload types that are no step: codex-rs `models.rs` `ResponseItem`'s
/// `GhostSnapshot` (the harness's git snapshot), `Compaction` (alias `compaction_summary`, the
/// encrypted summary of a compacted history) and `Other` (what a client does not know).
const ITEMS_NOT_STEPS: [&str; 4] = ["ghost_snapshot", "compaction", "compaction_summary", "other"];

/// Every `event_msg` payload type codex-rs `protocol.rs` (`EventMsg`, CLI 0.3x–0.1xx) defines:
/// the ones falat reads (see the module doc) and the ones that hold no step of their own
/// (deltas of streamed text, the begin / end events of calls the response items already hold,
/// approvals, listings, review and undo markers, session and MCP start-up notices).
const EVENT_TYPES: [&str; 84] = [
    "error",
    "warning",
    "context_compacted",
    "task_started",
    "task_complete",
    "turn_started",
    "turn_complete",
    "token_count",
    "agent_message",
    "user_message",
    "agent_message_delta",
    "agent_reasoning",
    "agent_reasoning_delta",
    "agent_reasoning_raw_content",
    "agent_reasoning_raw_content_delta",
    "agent_reasoning_section_break",
    "session_configured",
    "thread_name_updated",
    "mcp_startup_update",
    "mcp_startup_complete",
    "mcp_tool_call_begin",
    "mcp_tool_call_end",
    "web_search_begin",
    "web_search_end",
    "exec_command_begin",
    "exec_command_output_delta",
    "terminal_interaction",
    "exec_command_end",
    "view_image_tool_call",
    "exec_approval_request",
    "request_user_input",
    "request_permissions",
    "dynamic_tool_call_request",
    "dynamic_tool_call_response",
    "elicitation_request",
    "apply_patch_approval_request",
    "deprecation_notice",
    "background_event",
    "undo_started",
    "undo_completed",
    "stream_error",
    "stream_info",
    "patch_apply_begin",
    "patch_apply_end",
    "turn_diff",
    "get_history_entry_response",
    "mcp_list_tools_response",
    "list_custom_prompts_response",
    "list_skills_response",
    "list_remote_skills_response",
    "remote_skill_downloaded",
    "skills_update_available",
    "plan_update",
    "plan_delta",
    "turn_aborted",
    "shutdown_complete",
    "entered_review_mode",
    "exited_review_mode",
    "raw_response_item",
    "item_started",
    "item_completed",
    "agent_message_content_delta",
    "reasoning_content_delta",
    "reasoning_raw_content_delta",
    "progress_trace",
    "thread_rolled_back",
    "model_reroute",
    "hook_started",
    "hook_completed",
    "image_generation_begin",
    "image_generation_end",
    "conversation_path",
    "collab_agent_spawn_begin",
    "collab_agent_spawn_end",
    "collab_agent_interaction_begin",
    "collab_agent_interaction_end",
    "collab_waiting_begin",
    "collab_waiting_end",
    "collab_close_begin",
    "collab_close_end",
    "collab_resume_begin",
    "collab_resume_end",
    "realtime_conversation_started",
    "realtime_conversation_closed",
];

/// What a payload of an unknown line type holds that a newer rollout may mean as a step, for the
/// diagnostic that names it (`a custom_tool_call payload`, `a message`, `a call`): a response
/// item (by its `type`, or the item its fields make unambiguous), else what its fields hold
/// ([`holds_fields`]); `None` when it holds neither message nor call.
fn holds(p: &Value) -> Option<String> {
    let ty = p.get("type").and_then(Value::as_str);
    if let Some(t) = ty.filter(|t| ITEM_TYPES.contains(t) || t.ends_with("_call_output")) {
        return Some(format!("a {t} payload"));
    }
    if ty.is_none()
        && let Ok((t, _)) = infer_item(p)
    {
        return Some(format!("a {t} payload"));
    }
    holds_fields(p)
}

/// What a payload's fields hold, whatever its type: a call (`call_id`, a `command`, an MCP
/// `invocation`, a `name` with `arguments` or `input`) or a message (`message`, `text` or
/// `last_agent_message` text, or `role` and `content`), or what its `item` holds ([`holds`]).
fn holds_fields(p: &Value) -> Option<String> {
    let text = |k: &str| p.get(k).and_then(Value::as_str).is_some_and(|t| !t.trim().is_empty());
    let has = |k: &str| p.get(k).is_some_and(|v| !v.is_null());
    if has("call_id") || has("invocation") || has("command") || (text("name") && (has("arguments") || has("input"))) {
        return Some("a call".into());
    }
    if ["message", "text", "last_agent_message"].iter().any(|k| text(k)) || (text("role") && has("content")) {
        return Some("a message".into());
    }
    p.get("item").filter(|i| i.is_object()).and_then(holds)
}

/// Whether `doc` is a Codex rollout: JSON lines of `{type, payload}` with a rollout line type.
///
/// Also a rollout written before the envelope: a bare `{id, timestamp, instructions?, git?}`
/// header line, `{record_type: "state"}` markers and bare response items.
pub fn detect(doc: &Document) -> bool {
    let lines = lines_of(doc);
    let is_rollout = |v: &Value| {
        v.get("payload").is_some_and(Value::is_object)
            && v.get("type").and_then(Value::as_str).is_some_and(|t| LINE_TYPES.contains(&t))
    };
    lines.iter().any(|(_, v)| is_rollout(v)) || is_legacy(&lines)
}

/// A rollout before the `{timestamp, type, payload}` envelope: its first line is a header
/// `{id, timestamp, instructions?, git?}` without `type`, and a later line is a `record_type`
/// marker or a bare response item.
fn is_legacy(lines: &[(usize, &Value)]) -> bool {
    let Some((_, first)) = lines.first() else {
        return false;
    };
    let header = first.get("id").is_some()
        && first.get("timestamp").is_some()
        && first.get("type").is_none()
        && first.get("payload").is_none();
    header && lines.iter().skip(1).any(|(_, v)| v.get("record_type").is_some() || is_bare_item(v))
}

/// A pre-envelope rollout's line `i` (0-based among the JSON lines) wrapped in the envelope: the
/// header as `session_meta`, bare items as `response_item`, `record_type` markers as their own
/// line type.
fn envelope(i: usize, v: &Value) -> Value {
    let ty = match (i, v.get("record_type").and_then(Value::as_str)) {
        (0, _) => "session_meta".to_string(),
        (_, Some(record)) => format!("record_{record}"),
        _ => "response_item".to_string(),
    };
    let ts = v.get("timestamp").cloned().unwrap_or(Value::Null);
    serde_json::json!({"timestamp": ts, "type": ty, "payload": v})
}

fn lines_of(doc: &Document) -> Vec<(usize, &Value)> {
    match doc {
        Document::Lines { values, .. } => values.iter().map(|(l, v)| (*l, v)).collect(),
        Document::Json(v @ Value::Object(_)) => vec![(1, v)],
        Document::Json(_) => Vec::new(),
    }
}

/// One pass over a rollout's lines: `(1-based line, value)`.
type Pass<'s> = Box<dyn Iterator<Item = (usize, Cow<'s, Value>)> + 's>;

/// A rollout's lines, read more than once (the copies of response items are found first): values
/// held in a document, or JSON Lines parsed again on each pass and dropped line by line
/// ([`JsonLines`]); `legacy` wraps a pre-envelope rollout's lines in the envelope as they are read.
#[derive(Clone, Copy)]
struct Lines<'s> {
    source: Source<'s>,
    legacy: bool,
}

#[derive(Clone, Copy)]
enum Source<'s> {
    Held(&'s [(usize, &'s Value)]),
    Text(&'s JsonLines<'s>),
}

impl<'s> Lines<'s> {
    fn pass(self) -> Pass<'s> {
        let raw: Pass<'s> = match self.source {
            Source::Held(l) => Box::new(l.iter().map(|(n, v)| (*n, Cow::Borrowed(*v)))),
            Source::Text(t) => Box::new(t.values().map(|(n, v)| (n, Cow::Owned(v)))),
        };
        if self.legacy { Box::new(raw.enumerate().map(|(i, (n, v))| (n, Cow::Owned(envelope(i, &v))))) } else { raw }
    }

    /// The lines as the rollout's envelope: as written, or wrapped when the rollout is from before
    /// the envelope (no line has a `payload`, [`is_legacy`]).
    ///
    /// # Errors
    /// When no line is a rollout line of either kind.
    fn enveloped(source: Source<'s>) -> Result<Lines<'s>, FormatError> {
        let lines = Lines { source, legacy: false };
        if lines.pass().any(|(_, v)| v.get("payload").is_some()) {
            return Ok(lines);
        }
        let mut pass = lines.pass();
        let first = pass.next();
        let header = first.as_ref().is_some_and(|(_, v)| {
            v.get("id").is_some()
                && v.get("timestamp").is_some()
                && v.get("type").is_none()
                && v.get("payload").is_none()
        });
        if header && pass.any(|(_, v)| v.get("record_type").is_some() || is_bare_item(&v)) {
            return Ok(Lines { source, legacy: true });
        }
        Err(FormatError::Shape {
            expected: "JSON lines of {timestamp, type, payload} (the rollout envelope), or a rollout from before \
                       it: a {id, timestamp, instructions, git} header line then bare response items"
                .into(),
        })
    }
}

fn is_bare_item(v: &Value) -> bool {
    v.get("payload").is_none() && v.get("type").and_then(Value::as_str).is_some_and(|t| ITEM_TYPES.contains(&t))
}

/// Loads a rollout named `name`, following spawned threads through `related`.
///
/// # Errors
/// A message when no line is a `{type, payload}` rollout line.
pub fn load(name: &str, doc: &Document, related: Related<'_>) -> Result<Loaded, FormatError> {
    let lines = lines_of(doc);
    load_rollout(name, Source::Held(&lines), related)
}

/// Loads a rollout read one line at a time ([`JsonLines`]): each pass over the lines parses each
/// line and drops it before the next, so no `Value` of the whole file is held. Same result as
/// [`load`] on the same lines.
///
/// # Errors
/// As [`load`].
pub fn load_lines(name: &str, lines: &JsonLines<'_>, related: Related<'_>) -> Result<Loaded, FormatError> {
    load_rollout(name, Source::Text(lines), related)
}

fn load_rollout(name: &str, source: Source<'_>, related: Related<'_>) -> Result<Loaded, FormatError> {
    let lines = Lines::enveloped(source)?;
    let mut ctx = Ctx { related, diagnostics: Vec::new(), visited: Vec::new() };
    let agent = session_agent(lines.pass()).unwrap_or_else(|| MAIN_AGENT.to_string());
    let who = Who { agent: &agent, user: USER, file: None, skip_prompt: None };
    let r = read_thread(lines, &who, &mut ctx, 0);
    let observed = r.observed.clone().or_else(|| last_text(&r.thread.steps, &agent));
    let mut t = Trajectory {
        id: name.to_string(),
        source: SourceFormat::Codex,
        task: r.task.unwrap_or_default(),
        observed_output: observed,
        steps: r.thread.steps,
        links: r.thread.links,
        agents: r.roles,
        metadata: r.metadata,
        ..Trajectory::default()
    };
    t.refresh_agents();
    Ok(Loaded { format: SourceFormat::Codex, trajectories: vec![t], diagnostics: ctx.diagnostics })
}

/// The agent a rollout names in `session_meta`: `agent_nickname`, `agent_role`, or the spawn's
/// nickname / role under `source.subagent.thread_spawn`.
fn session_agent(mut lines: Pass<'_>) -> Option<String> {
    let (_, line) = lines.find(|(_, v)| v.get("type").and_then(Value::as_str) == Some("session_meta"))?;
    let meta = line.get("payload")?;
    let spawn = meta.pointer("/source/subagent/thread_spawn");
    [
        meta.get("agent_nickname"),
        meta.get("agent_role"),
        spawn.and_then(|s| s.get("agent_nickname")),
        spawn.and_then(|s| s.get("agent_role")),
    ]
    .into_iter()
    .flatten()
    .find_map(|v| v.as_str().filter(|s| !s.is_empty()).map(str::to_string))
}

struct Ctx<'a> {
    related: Related<'a>,
    diagnostics: Vec<Diagnostic>,
    visited: Vec<String>,
}

/// What reading one rollout gave.
struct Read {
    thread: Thread,
    task: Option<String>,
    observed: Option<String>,
    roles: Vec<AgentInfo>,
    metadata: Vec<(String, String)>,
}

/// Texts carried by `response_item`s, to drop the `event_msg` copies.
#[derive(Default)]
struct Dupes {
    counts: HashMap<(String, String), usize>,
    outputs: Vec<String>,
}

impl Dupes {
    fn scan(lines: Pass<'_>) -> Dupes {
        let mut d = Dupes::default();
        for (_, v) in lines {
            if v.get("type").and_then(Value::as_str) != Some("response_item") {
                continue;
            }
            let Some(p) = v.get("payload") else { continue };
            let ty = p.get("type").and_then(Value::as_str).unwrap_or_default();
            match ty {
                "message" => {
                    let role = p.get("role").and_then(Value::as_str).unwrap_or_default();
                    d.add(role, &message_text(p));
                }
                "reasoning" => d.add("reasoning", &reasoning_text(p)),
                t if t.ends_with("_output") => {
                    d.outputs.push(p.get("call_id").map(value_text).unwrap_or_default());
                }
                _ => {}
            }
        }
        d
    }

    fn add(&mut self, kind: &str, text: &str) {
        *self.counts.entry((kind.to_string(), text.trim().to_string())).or_default() += 1;
    }

    /// Whether an event's text is a copy of a response item (each item absorbs one copy).
    fn take(&mut self, kind: &str, text: &str) -> bool {
        let key = (kind.to_string(), text.trim().to_string());
        match self.counts.get_mut(&key) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }
}

#[derive(Default)]
struct Reader {
    steps: Vec<Step>,
    links: Vec<Link>,
    calls: HashMap<String, usize>,
    /// Spawned thread id → spawn step.
    spawns: HashMap<String, usize>,
    task: Option<String>,
    observed: Option<String>,
    roles: Vec<AgentInfo>,
    metadata: Vec<(String, String)>,
    prompt_skipped: bool,
    /// Call ids whose `exec_command_end` / `patch_apply_end` event reports a failure.
    failed_calls: Vec<String>,
    /// Line types that are not steps (`turn_context`, `world_state`, state markers), with counts.
    skipped: Vec<(String, usize)>,
    /// The 1-based line being read, kept as each step's id.
    line: usize,
}

fn read_thread(lines: Lines<'_>, who: &Who<'_>, ctx: &mut Ctx<'_>, depth: usize) -> Read {
    let mut dupes = Dupes::scan(lines.pass());
    let mut r = Reader::default();
    // A line's 128-bit digest → the line it was first seen on.
    let mut sent: HashMap<u128, usize> = HashMap::new();
    for (no, v) in lines.pass() {
        let v = v.as_ref();
        let ty = v.get("type").and_then(Value::as_str).unwrap_or_default();
        // A record written twice (same time, type and payload) is one step.
        if v.get("timestamp").is_some_and(Value::is_string) && v.get("payload").is_some() {
            let key = digest(v);
            if let Some(first) = sent.get(&key) {
                ctx.diagnostics.push(who.diag(no, format!("line repeats line {first}; loaded once")));
                continue;
            }
            sent.insert(key, no);
        }
        let Some(p) = v.get("payload").filter(|p| p.is_object()) else {
            ctx.diagnostics.push(who.diag(no, "line without a \"payload\" object skipped".into()));
            continue;
        };
        let ts = v.get("timestamp").and_then(Value::as_str);
        r.line = no;
        match ty {
            "response_item" => match p.get("type") {
                Some(_) => r.response_item(p, ts, who, ctx),
                None => r.untyped_item(p, ts, who, ctx),
            },
            "event_msg" => {
                let ty = p.get("type").and_then(Value::as_str).unwrap_or_default();
                match (EVENT_TYPES.contains(&ty), holds(p)) {
                    (false, Some(what)) => ctx.diagnostics.push(who.diag(
                        no,
                        format!(
                            "event_msg of unknown type {ty:?} holds {what} (a newer Codex version may write it); not \
                             read"
                        ),
                    )),
                    (false, None) => r.not_step(&format!("event_msg {ty}")),
                    (true, _) => r.event(p, ts, who, &mut dupes),
                }
            }
            "session_meta" => r.session_meta(p, who),
            "compacted" => r.metadata.push(("compacted".into(), p.get("message").map(value_text).unwrap_or_default())),
            other => {
                if let Some(what) = (!other.is_empty()).then(|| holds(p)).flatten() {
                    ctx.diagnostics.push(who.diag(
                        no,
                        format!(
                            "unknown line type {other:?} holds {what} (a newer Codex version may write it); not read"
                        ),
                    ));
                }
                r.not_step(if other.is_empty() { "untyped" } else { other })
            }
        }
    }
    r.note_orphans(who, ctx);
    if !r.skipped.is_empty() {
        let list: Vec<String> = r.skipped.iter().map(|(t, n)| format!("{t} {n}")).collect();
        r.metadata.push(("lines_not_steps".into(), list.join(", ")));
    }
    for step in r.steps.iter_mut().filter(|s| s.kind == StepKind::ToolResult) {
        if step.ids.refs.iter().any(|c| !c.is_empty() && r.failed_calls.contains(c)) {
            step.is_error = true;
        }
    }
    let subs = r.sub_threads(who, ctx, depth);
    let roots = (!r.steps.is_empty()).then_some(0).into_iter().collect();
    let main = Thread { steps: std::mem::take(&mut r.steps), links: std::mem::take(&mut r.links), roots };
    Read { thread: splice(main, subs), task: r.task, observed: r.observed, roles: r.roles, metadata: r.metadata }
}

impl Reader {
    fn not_step(&mut self, ty: &str) {
        match self.skipped.iter_mut().find(|(t, _)| t == ty) {
            Some((_, n)) => *n += 1,
            None => self.skipped.push((ty.to_string(), 1)),
        }
    }

    fn session_meta(&mut self, p: &Value, who: &Who<'_>) {
        let instructions = p
            .get("instructions")
            .or_else(|| p.pointer("/base_instructions/text"))
            .map(value_text)
            .filter(|t| !t.trim().is_empty());
        if let Some(text) = instructions {
            self.add_role(who.agent, &text);
        }
        for key in ["id", "cli_version", "originator", "cwd"] {
            if let Some(val) = p.get(key).and_then(Value::as_str) {
                self.metadata.push((format!("session_{key}"), val.to_string()));
            }
        }
    }

    fn add_role(&mut self, agent: &str, text: &str) {
        match self.roles.iter_mut().find(|a| a.name == agent) {
            Some(a) => {
                let r = a.role.get_or_insert_with(String::new);
                if !r.is_empty() {
                    r.push_str("\n\n");
                }
                r.push_str(text);
            }
            None => self.roles.push(AgentInfo { name: agent.to_string(), role: Some(text.to_string()) }),
        }
    }

    fn response_item(&mut self, p: &Value, ts: Option<&str>, who: &Who<'_>, ctx: &mut Ctx<'_>) {
        let ty = p.get("type").and_then(Value::as_str).unwrap_or_default();
        match ty {
            "message" => self.message(p, ts, who),
            "reasoning" => {
                let text = reasoning_text(p);
                if !text.trim().is_empty() {
                    self.push(ts, who.agent, "reasoning", StepKind::Thought, text);
                } else if p.get("encrypted_content").is_some_and(|e| !e.is_null()) {
                    self.push(ts, who.agent, "reasoning", StepKind::Thought, ENCRYPTED_REASONING.into());
                }
            }
            "function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call" => {
                self.call(p, ty, ts, who.agent)
            }
            t if t.ends_with("_output") => self.output(p, ts, who.agent),
            t if ITEMS_NOT_STEPS.contains(&t) => {}
            t => match holds_fields(p) {
                Some(what) => ctx.diagnostics.push(who.diag(
                    self.line,
                    format!(
                        "response_item of unknown type {t:?} holds {what} (a newer Codex version may write it); not \
                         read"
                    ),
                )),
                None => self.not_step(&format!("response_item {t}")),
            },
        }
    }

    /// A `response_item` whose payload has no `type`: read as the item its fields make
    /// unambiguous ([`infer_item`]), with a diagnostic either way.
    fn untyped_item(&mut self, p: &Value, ts: Option<&str>, who: &Who<'_>, ctx: &mut Ctx<'_>) {
        let message = match infer_item(p) {
            Ok((ty, why)) => {
                let mut typed = p.clone();
                if let Value::Object(m) = &mut typed {
                    m.insert("type".into(), Value::String(ty.into()));
                }
                self.response_item(&typed, ts, who, ctx);
                format!("response_item payload has no \"type\"; read as a {ty} (it has {why})")
            }
            Err(found) => format!(
                "response_item payload has no \"type\" and its fields name no item (expected role + content, \
                 name + arguments or input + call_id, or call_id + output; found {found}); skipped"
            ),
        };
        ctx.diagnostics.push(who.diag(self.line, message));
    }

    /// A diagnostic for each result whose `call_id` no call of the thread has: the result stays a
    /// step, linked to no call.
    fn note_orphans(&self, who: &Who<'_>, ctx: &mut Ctx<'_>) {
        for step in self.steps.iter().filter(|s| s.kind == StepKind::ToolResult) {
            let id = step.ids.refs.first().map_or("", String::as_str);
            let message = match id.is_empty() {
                true => "output without a \"call_id\"; kept as a result linked to no call".to_string(),
                false if self.calls.contains_key(id) => continue,
                false => format!(
                    "output answers call_id {id:?}, which no call of the file has; kept as a result linked to no call"
                ),
            };
            ctx.diagnostics.push(who.diag(step.ids.line.unwrap_or(self.line), message));
        }
    }

    fn message(&mut self, p: &Value, ts: Option<&str>, who: &Who<'_>) {
        let role = p.get("role").and_then(Value::as_str).unwrap_or("user");
        let text = message_text(p);
        match role {
            "developer" | "system" => self.add_role(who.agent, &text),
            "assistant" => {
                self.push(ts, who.agent, role, StepKind::Message, text);
            }
            _ => self.user_text(ts, who, role, text, false),
        }
    }

    /// A user message; the task when it is the first real prompt (not injected context).
    fn user_text(&mut self, ts: Option<&str>, who: &Who<'_>, role: &str, text: String, event: bool) {
        if text.trim().is_empty() {
            return;
        }
        let skip = who.skip_prompt.is_some_and(|s| s.trim() == text.trim());
        if skip && !self.prompt_skipped {
            self.prompt_skipped = true;
            return;
        }
        let injected = text.trim_start().starts_with('<') || text.starts_with("# AGENTS.md");
        if self.task.is_none() && who.user == USER && (event || !injected) {
            self.task = Some(text.trim().to_string());
        }
        self.push(ts, who.user, role, StepKind::Message, text);
    }

    fn call(&mut self, p: &Value, ty: &str, ts: Option<&str>, agent: &str) {
        let (name, content) = call_name_and_input(p, ty);
        let call_id = p.get("call_id").or_else(|| p.get("id")).map(value_text).unwrap_or_default();
        let spawn = name == "spawn_agent";
        let kind = if spawn { StepKind::Delegation } else { StepKind::ToolCall };
        let args = serde_json::from_str::<Value>(&content).unwrap_or(Value::Null);
        let content = match (spawn, args.get("message")) {
            (true, Some(m)) => value_text(m),
            _ => content,
        };
        let s = self.push(ts, agent, ty, kind, content);
        self.steps[s].tool_name = Some(name);
        self.steps[s].ids.refs.push(call_id.clone());
        if spawn {
            let role = ["agent_type", "agent_role", "role"].iter().find_map(|k| args.get(*k).and_then(Value::as_str));
            self.steps[s].delegate_to = Some(role.unwrap_or("subagent").to_string());
        }
        self.calls.insert(call_id, s);
    }

    fn output(&mut self, p: &Value, ts: Option<&str>, agent: &str) {
        let call_id = p.get("call_id").map(value_text).unwrap_or_default();
        let (text, is_error) = output_text(p.get("output").unwrap_or(&Value::Null));
        self.result(ts, agent, &call_id, text, is_error);
    }

    fn result(&mut self, ts: Option<&str>, agent: &str, call_id: &str, text: String, is_error: bool) -> usize {
        let ty = "function_call_output";
        let s = self.push(ts, agent, ty, StepKind::ToolResult, text);
        self.steps[s].is_error = is_error;
        self.steps[s].ids.refs.push(call_id.to_string());
        if let Some(&c) = self.calls.get(call_id) {
            self.steps[s].tool_name = self.steps[c].tool_name.clone();
            self.links.push(Link { from: c, to: s, kind: LinkKind::ToolResult });
        }
        s
    }

    fn event(&mut self, p: &Value, ts: Option<&str>, who: &Who<'_>, dupes: &mut Dupes) {
        let ty = p.get("type").and_then(Value::as_str).unwrap_or_default();
        let msg = || p.get("message").map(value_text).unwrap_or_default();
        match ty {
            "user_message" if !dupes.take("user", &msg()) => self.user_text(ts, who, "user", msg(), true),
            "user_message" if self.task.is_none() && who.user == USER => self.task = Some(msg().trim().to_string()),
            "agent_message" if !dupes.take("assistant", &msg()) => {
                self.push(ts, who.agent, "assistant", StepKind::Message, msg());
            }
            "agent_reasoning" => {
                let text = p.get("text").map(value_text).unwrap_or_default();
                if !dupes.take("reasoning", &text) {
                    self.push(ts, who.agent, "reasoning", StepKind::Thought, text);
                }
            }
            "token_count" => self.tokens(p, who.agent),
            "collab_agent_spawn_end" => self.spawned(p, ts, who.agent, dupes),
            "collab_waiting_end" => self.waited(p, ts, who.agent, dupes),
            "error" | "stream_error" => {
                let s = self.push(ts, who.agent, ty, StepKind::Message, msg());
                self.steps[s].is_error = true;
            }
            // The exec and patch events report how a call ended; their failure marks its result.
            "exec_command_end" | "patch_apply_end" => {
                let code = p.get("exit_code").and_then(Value::as_i64).filter(|c| *c != 0);
                let failed = p.get("success").and_then(Value::as_bool) == Some(false);
                if code.is_some() || failed {
                    self.failed_calls.push(p.get("call_id").map(value_text).unwrap_or_default());
                }
            }
            "turn_aborted" => {
                let reason = p.get("reason").map(value_text).unwrap_or_default();
                let s = self.push(ts, who.agent, ty, StepKind::Message, format!("turn aborted: {reason}"));
                self.steps[s].is_error = true;
            }
            "task_complete" => {
                if let Some(m) = p.get("last_agent_message").and_then(Value::as_str) {
                    self.observed = Some(m.trim().to_string());
                }
            }
            _ => {}
        }
    }

    /// `last_token_usage` on the latest agent step that has no counts yet.
    fn tokens(&mut self, p: &Value, agent: &str) {
        let Some(u) = p.pointer("/info/last_token_usage") else {
            return;
        };
        let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        let last = self.steps.iter().rposition(|s| s.agent == agent && s.kind != StepKind::ToolResult);
        if let Some(i) = last.filter(|&i| self.steps[i].tokens.is_none()) {
            self.steps[i].tokens = Some(TokenCounts { input: n("input_tokens"), output: n("output_tokens") });
        }
    }

    fn spawned(&mut self, p: &Value, ts: Option<&str>, agent: &str, dupes: &Dupes) {
        let call_id = p.get("call_id").map(value_text).unwrap_or_default();
        let thread = p.get("new_thread_id").map(value_text).unwrap_or_default();
        let role = p.get("new_agent_role").and_then(Value::as_str);
        if let Some(&c) = self.calls.get(&call_id) {
            if let Some(r) = role {
                self.steps[c].delegate_to = Some(r.to_string());
            }
            if !thread.is_empty() {
                self.steps[c].ids.refs.push(thread.clone());
                self.spawns.insert(thread.clone(), c);
            }
        }
        if !dupes.outputs.contains(&call_id) {
            let text = format!("spawned {} thread {thread}", role.unwrap_or("agent"));
            self.result(ts, agent, &call_id, text, false);
        }
    }

    fn waited(&mut self, p: &Value, ts: Option<&str>, agent: &str, dupes: &Dupes) {
        let call_id = p.get("call_id").map(value_text).unwrap_or_default();
        let statuses = p.get("agent_statuses").or_else(|| p.get("statuses"));
        if dupes.outputs.contains(&call_id) {
            return;
        }
        let text = statuses.map(value_text).unwrap_or_default();
        let s = self.result(ts, agent, &call_id, text, false);
        let threads = statuses
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|st| st.get("thread_id").and_then(Value::as_str));
        for t in threads {
            if let Some(&spawn) = self.spawns.get(t) {
                self.links.push(Link { from: spawn, to: s, kind: LinkKind::Delegation });
            }
        }
    }

    fn push(&mut self, ts: Option<&str>, agent: &str, role: &str, kind: StepKind, content: String) -> usize {
        self.steps.push(Step {
            index: self.steps.len(),
            agent: agent.to_string(),
            role: role.to_string(),
            kind,
            content,
            ids: StepIds { id: Some(self.line.to_string()), line: Some(self.line), ..StepIds::default() },
            timestamp: ts.map(str::to_string),
            ..Step::default()
        });
        self.steps.len() - 1
    }

    /// Reads the rollout of each spawned thread that has one beside the file; the spawn step then
    /// delegates to the thread's agent name.
    fn sub_threads(&mut self, who: &Who<'_>, ctx: &mut Ctx<'_>, depth: usize) -> HashMap<usize, Thread> {
        let mut out = HashMap::new();
        let mut spawns: Vec<(String, usize)> = self.spawns.iter().map(|(t, s)| (t.clone(), *s)).collect();
        spawns.sort_by_key(|(_, s)| *s);
        for (thread, step) in spawns {
            if depth >= MAX_DEPTH || !is_safe_id(&thread) || ctx.visited.contains(&thread) {
                continue;
            }
            ctx.visited.push(thread.clone());
            let pattern = format!("*{thread}.jsonl");
            let Some(bytes) = (ctx.related)(&pattern) else {
                continue;
            };
            let delegate = self.steps[step].delegate_to.clone().unwrap_or_default();
            let prompt = self.steps[step].content.clone();
            if let Some((agent, t)) = sub_thread(&pattern, &bytes, &delegate, &prompt, who, ctx, depth) {
                self.steps[step].delegate_to = Some(agent);
                out.insert(step, t);
            }
        }
        out
    }
}

fn sub_thread(
    file: &str,
    bytes: &[u8],
    delegate: &str,
    prompt: &str,
    who: &Who<'_>,
    ctx: &mut Ctx<'_>,
    depth: usize,
) -> Option<(String, Thread)> {
    let doc = match parse_document(file, bytes) {
        Ok(d) => d,
        Err(e) => {
            ctx.diagnostics
                .push(Diagnostic { line: None, message: format!("spawned thread: {e}; its steps are missing") });
            return None;
        }
    };
    let held = lines_of(&doc);
    let lines = Lines { source: Source::Held(&held), legacy: false };
    let agent = session_agent(lines.pass()).unwrap_or_else(|| delegate.to_string());
    let sub_who = Who { agent: &agent, user: who.agent, file: Some(file), skip_prompt: Some(prompt) };
    let thread = read_thread(lines, &sub_who, ctx, depth + 1).thread;
    Some((agent, thread))
}

/// A 128-bit digest of a line's JSON text (two SipHash-1-3 sums with fixed keys): two lines with
/// the same value have the same digest, and different lines collide with a chance of about
/// `n² / 2¹²⁹`, so repeated lines are found without keeping a copy of every line.
fn digest(v: &Value) -> u128 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let text = v.to_string();
    let sum = |seed: u8| {
        let mut h = DefaultHasher::new();
        seed.hash(&mut h);
        text.hash(&mut h);
        h.finish()
    };
    (u128::from(sum(0)) << 64) | u128::from(sum(1))
}

/// Thread ids that may be used in file names: ASCII letters, digits, `-` and `_`, at most 80.
fn is_safe_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 80 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The tool name and input text of a call item.
fn call_name_and_input(p: &Value, ty: &str) -> (String, String) {
    let text = |k: &str| p.get(k).map(value_text).unwrap_or_default();
    match ty {
        "custom_tool_call" => (text("name"), text("input")),
        "local_shell_call" => {
            let cmd = p.pointer("/action/command");
            let joined = match cmd {
                Some(Value::Array(parts)) => parts.iter().map(value_text).collect::<Vec<_>>().join(" "),
                Some(other) => value_text(other),
                None => text("action"),
            };
            ("local_shell".into(), joined)
        }
        "web_search_call" => {
            let q = p.pointer("/action/query").map(value_text).unwrap_or_else(|| text("action"));
            ("web_search".into(), q)
        }
        _ => (text("name"), text("arguments")),
    }
}

/// A tool output's text and error flag: JSON `{output, metadata: {exit_code}}` unwrapped,
/// `{content, success}` read; an MCP tool's result (`CallToolResult`, MCP spec 2025-06-18:
/// `{content: [{type: text, text} | {type: image, ...}], isError}`, or the bare content array)
/// read as the text of its blocks; the text checked for a failed exit in any wording
/// ([`failed_exit`]).
fn output_text(out: &Value) -> (String, bool) {
    let parsed_owned;
    let parsed = match out {
        Value::String(s) if s.trim_start().starts_with(['{', '[']) => {
            parsed_owned = serde_json::from_str::<Value>(s).unwrap_or(Value::Null);
            &parsed_owned
        }
        Value::String(_) => &Value::Null,
        other => other,
    };
    if let Some(blocks) = mcp_blocks(parsed) {
        let text = super::messages::blocks_text(blocks);
        let flagged = parsed.get("isError").or_else(|| parsed.get("is_error")).and_then(Value::as_bool) == Some(true);
        let failed = flagged || failed_exit(&text).is_some();
        return (text, failed);
    }
    if let Some(inner) = parsed.get("output").or_else(|| parsed.get("content")) {
        let code = parsed.pointer("/metadata/exit_code").and_then(Value::as_i64);
        let failed = parsed.get("success").and_then(Value::as_bool) == Some(false);
        let text = value_text(inner);
        // The exit code, when recorded, is the authority; otherwise the text's own wording.
        let failed = failed || code.map_or_else(|| failed_exit(&text).is_some(), |c| c != 0);
        return (text, failed);
    }
    let text = value_text(out);
    let code = parsed.get("exit_code").and_then(Value::as_i64).filter(|c| *c != 0).or_else(|| failed_exit(&text));
    (text, code.is_some())
}

/// The content blocks of an MCP `CallToolResult` (`{content: [...]}`) or of a bare content array:
/// a list whose items are all `{type, ...}` blocks.
fn mcp_blocks(v: &Value) -> Option<&[Value]> {
    let blocks = match v {
        Value::Array(items) => items,
        Value::Object(m) => m.get("content")?.as_array()?,
        _ => return None,
    };
    let is_block = |b: &Value| b.get("type").is_some_and(Value::is_string);
    (!blocks.is_empty() && blocks.iter().all(is_block)).then_some(blocks.as_slice())
}

/// The text parts of a `message` item joined by blank lines (images as `[input_image]`).
fn message_text(p: &Value) -> String {
    let parts = p.get("content").and_then(Value::as_array);
    parts
        .into_iter()
        .flatten()
        .map(|c| match c.get("text").or_else(|| c.get("refusal")) {
            Some(t) => value_text(t),
            None => placeholder(c),
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The readable text of a `reasoning` item: summary texts, then content texts.
fn reasoning_text(p: &Value) -> String {
    let texts = |k: &str| -> Vec<String> {
        p.get(k).and_then(Value::as_array).into_iter().flatten().filter_map(|s| s.get("text").map(value_text)).collect()
    };
    let mut all = texts("summary");
    all.extend(texts("content"));
    all.join("\n\n")
}

/// The last message of `agent`.
fn last_text(steps: &[Step], agent: &str) -> Option<String> {
    steps
        .iter()
        .rev()
        .find(|s| s.agent == agent && s.kind == StepKind::Message && !s.is_error)
        .map(|s| s.content.trim().to_string())
}
