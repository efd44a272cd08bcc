//! OpenHands trajectories: the event list that `openhands/events/serialization/event.py`
//! (`event_to_dict`) writes for each event of a session (OpenHands 0.2x–0.5x; the
//! `save_trajectory_path` file, the web UI's trajectory download, and the `history` of an
//! evaluation's `output.jsonl` record; a whole `output.jsonl`, one record per line, is one
//! trajectory per record, [`load_lines`]).
//!
//! An action is `{id, timestamp, source, message, action, args, tool_call_metadata:
//! {function_name, tool_call_id, model_response}, llm_metrics}`; an observation is `{id,
//! timestamp, source, message, cause, observation, content, extras, success,
//! tool_call_metadata}`. Mapping:
//! - `system` action → the role text of the agent (`args.agent_class`, else `agent`);
//! - `message` action → a message of its `source` (`user`, `agent`), the user's with the role
//!   `user` (the others' role is the action); the first user message is the task;
//! - `think` → a thought; `finish` → the agent's thought (`args.thought`) and its final message
//!   (`args.final_thought`, else `outputs.content`, else `message`), the observed output unless a
//!   delegate finishes; `delegate` → a delegation to `args.agent` (its text the `inputs`);
//! - the events between a `delegate` action and the `delegate` observation that ends it are the
//!   delegate's (`AgentController.start_delegate` runs it on the same event stream, source
//!   `agent`): its actions are attributed to `args.agent`, its `system` action is its role text;
//!   its first step is linked from the delegation; the observation answers the delegation by
//!   `cause`, else by the delegate action's
//!   `tool_call_metadata.tool_call_id`, else the innermost delegation still running (OpenHands
//!   0.4x+ writes no `cause` on it, and a delegate action made without a tool call has no
//!   metadata);
//! - `recall` actions (the harness fetching workspace context, 0.3x+) are not steps; their
//!   observation is a message by its source;
//! - any other action (`run`, `run_ipython`, `edit`, `read`, `write`, `browse`, MCP calls, ...) →
//!   the thought in `args.thought`, then a tool call named by `tool_call_metadata.function_name`
//!   (else the action), its text the command, code or path (else the other arguments as JSON);
//! - an observation → the result of the action its `cause` names (a delegate's result by a
//!   delegation link); flagged when `extras.metadata.exit_code` (older files: `extras.exit_code`)
//!   is non-zero and not -1 (OpenHands' "no exit code yet"), `success` is false, it is an
//!   `error` observation, or its text reports a failed exit;
//! - `agent_state_changed`, `null` and `change_agent_state` records are not steps (counted in
//!   `openhands_not_steps`); `model_response` (the model's whole reply, repeated on the observation) and `llm_metrics`
//!   (cumulative cost and tokens of the session, not per step) are not read.
//!
//! The agent acting is named by `args.agent_class` of the system action (`CodeActAgent`), else by
//! the event's `source`.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::actions::Actions;
use super::{DETECT_SAMPLE, Document, FormatError, JsonLines, Loaded, value_text};
use crate::model::{AgentInfo, Diagnostic, LinkKind, SourceFormat, StepKind, Trajectory};

/// Records that are bookkeeping, not steps.
const NOT_STEPS: [&str; 3] = ["agent_state_changed", "null", "change_agent_state"];
/// Argument fields that are bookkeeping, left out of a call's text.
const PLUMBING: [&str; 9] = [
    "thought",
    "is_input",
    "blocking",
    "is_static",
    "cwd",
    "hidden",
    "confirmation_state",
    "impl_source",
    "security_risk",
];

/// The events of a document: a bare list, or `history` / `trajectory` of an object.
fn events_of(doc: &Document) -> Option<&[Value]> {
    let Document::Json(v) = doc else { return None };
    match v {
        Value::Array(items) => Some(items),
        Value::Object(m) => ["history", "trajectory"].iter().find_map(|k| m.get(*k)?.as_array().map(Vec::as_slice)),
        _ => None,
    }
}

fn is_event(e: &Value) -> bool {
    (e.get("action").is_some_and(Value::is_string) || e.get("observation").is_some_and(Value::is_string))
        && e.get("source").is_some()
        && e.get("id").is_some()
}

/// Whether `doc` is an OpenHands trajectory: most of its first [`DETECT_SAMPLE`] items are events
/// with `id`, `source` and `action` or `observation`; or JSON lines of evaluation records (an
/// evaluation's `output.jsonl`), most sampled lines an object with a `history` of such events.
pub fn detect(doc: &Document) -> bool {
    if let Document::Lines { values, .. } = doc {
        let sample = &values[..values.len().min(DETECT_SAMPLE)];
        let n = sample.iter().filter(|(_, v)| is_record(v)).count();
        return n > 0 && n * 2 > sample.len();
    }
    let Some(events) = events_of(doc) else { return false };
    looks_like_events(events)
}

fn looks_like_events(events: &[Value]) -> bool {
    let sample = &events[..events.len().min(DETECT_SAMPLE)];
    let n = sample.iter().filter(|e| is_event(e)).count();
    n > 0 && n * 2 > sample.len()
}

/// An evaluation record: an object whose `history` is a list of events.
fn is_record(v: &Value) -> bool {
    v.get("history").and_then(Value::as_array).is_some_and(|h| looks_like_events(h))
}

/// Loads an evaluation's `output.jsonl` read one line at a time ([`JsonLines`]): each line is one
/// record, parsed, loaded as one trajectory and dropped before the next. A file of one record
/// gives the trajectory `name`, of several `name#<instance_id>` (else `name#line<N>`); a line that
/// is not a record is skipped with a diagnostic naming it, and each record's diagnostics name its
/// line.
///
/// # Errors
/// When no line is a record.
pub fn load_lines(name: &str, lines: &JsonLines<'_>) -> Result<Loaded, FormatError> {
    load_records(name, lines.good == 1, lines.values().map(|(no, v)| (no, Cow::Owned(v))))
}

/// One trajectory per evaluation record of `records` (`(line, value)`), see [`load_lines`].
fn load_records<'v>(
    name: &str,
    single: bool,
    records: impl Iterator<Item = (usize, Cow<'v, Value>)>,
) -> Result<Loaded, FormatError> {
    let mut out = Loaded { format: SourceFormat::OpenHands, ..Loaded::default() };
    for (no, v) in records {
        if !is_record(&v) {
            out.diagnostics.push(Diagnostic {
                line: Some(no),
                message: "skipped: expected an evaluation record {instance_id, history: [events]}".into(),
            });
            continue;
        }
        let id = match v.get("instance_id").filter(|i| !i.is_null()) {
            _ if single => name.to_string(),
            Some(i) => format!("{name}#{}", value_text(i)),
            None => format!("{name}#line{no}"),
        };
        let mut one = load(&id, &Document::Json(v.into_owned()))?;
        for mut d in one.diagnostics.drain(..) {
            d.line = Some(no);
            out.diagnostics.push(d);
        }
        out.trajectories.append(&mut one.trajectories);
    }
    if out.trajectories.is_empty() {
        return Err(FormatError::Shape {
            expected: "JSON lines of OpenHands evaluation records {instance_id, history: [events]}".into(),
        });
    }
    Ok(out)
}

/// Loads an OpenHands event list named `name`.
///
/// # Errors
/// A message when the document holds no event list.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    if let Document::Lines { values, .. } = doc {
        let records = values.iter().map(|(no, v)| (*no, Cow::Borrowed(v)));
        return load_records(name, values.len() == 1, records);
    }
    let events = events_of(doc)
        .ok_or(FormatError::Shape { expected: "a list of OpenHands events (or an object with \"history\")".into() })?;
    let agent = events
        .iter()
        .find(|e| e.get("action").and_then(Value::as_str) == Some("system"))
        .and_then(|e| e.pointer("/args/agent_class"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut r = Reader { agent, ..Reader::default() };
    for (i, e) in events.iter().enumerate() {
        let place = format!("events[{i}]");
        if !is_event(e) {
            r.diagnostics.push(Diagnostic {
                line: None,
                message: format!(
                    "{place}: expected an event with id, source and action or observation; record skipped"
                ),
            });
            continue;
        }
        match e.get("action").and_then(Value::as_str) {
            Some(action) => r.action(e, action, &place),
            None => r.observation(e, &place),
        }
        r.seen.extend(id_of(e));
    }
    let mut t = Trajectory {
        id: name.to_string(),
        source: SourceFormat::OpenHands,
        task: r.task.unwrap_or_default(),
        observed_output: r.output,
        steps: r.a.steps,
        links: r.a.links,
        agents: r.agents,
        ..Trajectory::default()
    };
    if r.not_steps > 0 {
        t.metadata.push(("openhands_not_steps".into(), format!("state changes {}", r.not_steps)));
    }
    Ok(Loaded { format: SourceFormat::OpenHands, trajectories: vec![t], diagnostics: r.diagnostics })
}

#[derive(Default)]
struct Reader {
    a: Actions,
    agent: Option<String>,
    agents: Vec<AgentInfo>,
    task: Option<String>,
    output: Option<String>,
    /// Event id → the step an observation caused by it answers (a call or a delegation).
    by_event: HashMap<String, usize>,
    /// The ids of every event read so far (steps or not).
    seen: HashSet<String>,
    /// Delegations whose delegate is still running, innermost last: `(delegation step, delegate
    /// agent)`. The events between a `delegate` action and its observation are the delegate's.
    delegates: Vec<(usize, String)>,
    /// Tool call id of a delegate action → its delegation step.
    delegation_calls: HashMap<String, usize>,
    not_steps: usize,
    diagnostics: Vec<Diagnostic>,
}

impl Reader {
    /// The agent of an event: for the `agent` source, the running delegate (the innermost
    /// delegation still open), else the main agent; else the source (`user`, `environment`).
    fn who(&self, e: &Value) -> String {
        match e.get("source").and_then(Value::as_str).unwrap_or("agent") {
            "agent" => match self.delegates.last() {
                Some((_, d)) => d.clone(),
                None => self.agent.clone().unwrap_or_else(|| "agent".into()),
            },
            other => other.to_string(),
        }
    }

    fn action(&mut self, e: &Value, action: &str, place: &str) {
        let agent = self.who(e);
        let args = e.get("args").cloned().unwrap_or(Value::Null);
        let arg = |k: &str| args.get(k).map(value_text).filter(|t| !t.trim().is_empty());
        let message = e.get("message").map(value_text).filter(|t| !t.trim().is_empty());
        let first = self.a.steps.len();
        match action {
            "system" => {
                let text = arg("content").or(message).unwrap_or_default();
                if !text.is_empty() && !self.agents.iter().any(|a| a.name == agent) {
                    self.agents.push(AgentInfo { name: agent, role: Some(text) });
                }
                return;
            }
            // `recall` is the harness fetching workspace context and microagent knowledge for the
            // user's message (OpenHands 0.3x+, `RecallAction`): no one's call.
            "change_agent_state" | "recall" => {
                self.not_steps += 1;
                return;
            }
            "message" => {
                let text = arg("content").or(message).unwrap_or_default();
                if agent == "user" && self.task.is_none() {
                    self.task = Some(text.trim().to_string());
                }
                let images = args.get("image_urls").and_then(Value::as_array).map_or(0, Vec::len);
                let text = match images {
                    0 => text,
                    n => format!("{text}\n[{n} image{}]", if n == 1 { "" } else { "s" }),
                };
                // The user's message has the user's role, as every other format gives it.
                let role = if agent == "user" { "user" } else { action };
                self.a.push(&agent, role, StepKind::Message, text, None);
            }
            "think" => {
                self.a.push(&agent, action, StepKind::Thought, arg("thought").unwrap_or_default(), None);
            }
            "finish" => {
                if let Some(t) = arg("thought") {
                    self.a.push(&agent, action, StepKind::Thought, t, None);
                }
                let outputs = args.pointer("/outputs/content").map(value_text).filter(|t| !t.trim().is_empty());
                let text = arg("final_thought").or(outputs).or(message).unwrap_or_default();
                // A delegate's finish answers its delegation; only the main agent's is the run's.
                if self.delegates.is_empty() {
                    self.output = Some(text.trim().to_string()).filter(|t| !t.is_empty());
                }
                self.a.push(&agent, action, StepKind::Message, text, None);
            }
            "delegate" => {
                if let Some(t) = arg("thought") {
                    self.a.push(&agent, action, StepKind::Thought, t, None);
                }
                let to = arg("agent").unwrap_or_else(|| "delegate".into());
                let text = args.get("inputs").map(value_text).unwrap_or_default();
                let s = self.a.push(&agent, action, StepKind::Delegation, text, None);
                self.a.steps[s].delegate_to = Some(to.clone());
                self.a.steps[s].tool_name =
                    e.pointer("/tool_call_metadata/function_name").and_then(Value::as_str).map(str::to_string);
                if let Some(id) = e.pointer("/tool_call_metadata/tool_call_id").and_then(Value::as_str) {
                    self.a.steps[s].ids.refs.push(id.to_string());
                    self.delegation_calls.insert(id.to_string(), s);
                }
                self.delegates.push((s, to));
                self.note_event(e, s);
            }
            _ => {
                if let Some(t) = arg("thought") {
                    self.a.push(&agent, action, StepKind::Thought, t, None);
                }
                let tool = e
                    .pointer("/tool_call_metadata/function_name")
                    .and_then(Value::as_str)
                    .unwrap_or(action)
                    .to_string();
                let call_id = e.pointer("/tool_call_metadata/tool_call_id").and_then(Value::as_str);
                let s = self.a.call(&agent, action, &tool, call_text(&args, message), call_id);
                self.note_event(e, s);
            }
        }
        for s in &mut self.a.steps[first..] {
            s.ids.id = Some(id_of(e).unwrap_or_else(|| place.to_string()));
            s.timestamp = e.get("timestamp").map(value_text);
        }
        // A delegate's first step is linked from the delegation that started it.
        if let Some(&(d, ref name)) = self.delegates.last()
            && first < self.a.steps.len()
            && self.a.steps[first].agent == *name
            && !self.a.links.iter().any(|l| l.from == d && l.kind == LinkKind::Delegation)
        {
            self.a.link(d, first, LinkKind::Delegation);
        }
    }

    fn observation(&mut self, e: &Value, place: &str) {
        let kind = e.get("observation").and_then(Value::as_str).unwrap_or_default();
        if NOT_STEPS.contains(&kind) {
            self.not_steps += 1;
            return;
        }
        let content = e.get("content").map(value_text).filter(|t| !t.trim().is_empty());
        let text = content.or_else(|| e.get("message").map(value_text)).unwrap_or_default();
        let exit = e
            .pointer("/extras/metadata/exit_code")
            .or_else(|| e.pointer("/extras/exit_code"))
            .and_then(Value::as_i64)
            .filter(|&c| c != 0 && c != -1);
        let failed = exit.is_some() || e.get("success").and_then(Value::as_bool) == Some(false) || kind == "error";
        let cause = e.get("cause").and_then(|c| super::messages::id_text(Some(c)));
        let mut target = cause.as_deref().and_then(|c| self.by_event.get(c).copied());
        // The observation ending a delegation (`AgentDelegateObservation`) carries no cause in
        // OpenHands 0.4x+ (`AgentController.end_delegate`), only the delegate action's
        // `tool_call_metadata`, which is null when the action came from no tool call: it answers
        // that delegation, else the innermost one still running.
        if kind == "delegate" && target.is_none() {
            let by_id = e
                .pointer("/tool_call_metadata/tool_call_id")
                .and_then(Value::as_str)
                .and_then(|id| self.delegation_calls.get(id).copied());
            target = by_id.or_else(|| self.delegates.last().map(|(s, _)| *s));
        }
        if kind == "recall" && target.is_none() {
            // Context the harness added for the user's message (`RecallObservation`).
            let s = self.a.push(&self.who(e), kind, StepKind::Message, text, None);
            self.a.steps[s].ids.id = Some(id_of(e).unwrap_or_else(|| place.to_string()));
            self.a.steps[s].timestamp = e.get("timestamp").map(value_text);
            return;
        }
        if let Some(t) = target
            && self.a.steps[t].kind == StepKind::Delegation
        {
            self.delegates.retain(|(s, _)| *s != t);
        }
        let agent = match target {
            Some(t) => self.a.steps[t].agent.clone(),
            None => self.who(e),
        };
        let call_id = e.pointer("/tool_call_metadata/tool_call_id").and_then(Value::as_str);
        let s = match target {
            Some(t) if self.a.steps[t].kind == StepKind::Delegation => {
                let s = self.a.push(&agent, kind, StepKind::ToolResult, text, None);
                self.a.steps[s].is_error = failed || super::failed_exit(&self.a.steps[s].content).is_some();
                self.a.link(t, s, LinkKind::Delegation);
                s
            }
            Some(t) => {
                let ids: Vec<String> = self.a.steps[t].ids.refs.clone();
                match ids.is_empty() {
                    true => {
                        let s = self.a.push(&agent, kind, StepKind::ToolResult, text, None);
                        self.a.steps[s].is_error = failed || super::failed_exit(&self.a.steps[s].content).is_some();
                        self.a.steps[s].tool_name = self.a.steps[t].tool_name.clone();
                        self.a.link(t, s, LinkKind::ToolResult);
                        s
                    }
                    false => self.a.result(&agent, kind, text, &ids, failed),
                }
            }
            None => {
                let ids: Vec<String> = call_id.map(|c| vec![c.to_string()]).unwrap_or_default();
                if ids.is_empty() && cause.is_none() {
                    // An observation nothing caused (an environment notice): a message.
                    let s = self.a.push(&agent, kind, StepKind::Message, text, None);
                    self.a.steps[s].is_error = failed;
                    s
                } else {
                    self.a.result(&agent, kind, text, &ids, failed)
                }
            }
        };
        // An observation whose cause (or tool call id) names no action: say so, and how it was
        // placed instead.
        let unmatched = match (&cause, target, call_id) {
            (Some(c), None, _) if !self.seen.contains(c) => Some(format!("\"cause\" {c}, which no earlier event has")),
            (None, None, Some(id)) if self.a.call_step(id).is_none() => {
                Some(format!("tool_call_id {id:?}, which no earlier action has"))
            }
            _ => None,
        };
        if let Some(what) = unmatched {
            let linked = self.a.links.iter().find(|l| l.to == s && l.kind == LinkKind::ToolResult).map(|l| l.from);
            let placed = match (linked, call_id.and_then(|id| self.a.call_step(id))) {
                (Some(c), Some(by_id)) if c == by_id => format!("linked to step {c} by its tool_call_id"),
                (Some(c), _) => format!("linked by order to step {c}, the oldest call without a result"),
                (None, _) => "kept as a result linked to no call".to_string(),
            };
            self.diagnostics.push(Diagnostic {
                line: None,
                message: format!("{place}: {kind} observation answers {what}; {placed}"),
            });
        }
        self.a.steps[s].ids.id = Some(id_of(e).unwrap_or_else(|| place.to_string()));
        if let Some(c) = cause {
            self.a.steps[s].ids.parent = Some(c);
        }
        self.a.steps[s].timestamp = e.get("timestamp").map(value_text);
    }

    fn note_event(&mut self, e: &Value, step: usize) {
        if let Some(id) = id_of(e) {
            self.by_event.insert(id, step);
        }
    }
}

fn id_of(e: &Value) -> Option<String> {
    super::messages::id_text(e.get("id"))
}

/// The text of a call: its command, code, or path with the command (`view /x`), else the other
/// arguments as JSON, else the event's message.
fn call_text(args: &Value, message: Option<String>) -> String {
    let get = |k: &str| args.get(k).map(value_text).filter(|t| !t.trim().is_empty());
    if let Some(c) = get("command").filter(|_| get("path").is_none()).or_else(|| get("code")) {
        return c;
    }
    if let Value::Object(m) = args {
        let kept: serde_json::Map<String, Value> = m
            .iter()
            .filter(|(k, v)| !PLUMBING.contains(&k.as_str()) && !v.is_null() && v.as_str() != Some(""))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !kept.is_empty() {
            return Value::Object(kept).to_string();
        }
    }
    message.unwrap_or_default()
}
