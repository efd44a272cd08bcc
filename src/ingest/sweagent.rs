//! SWE-agent 1.x trajectories (`.traj`), as `sweagent/types.py` (`AgentRunResult`,
//! `TrajectoryStep`, `HistoryItem`) and `sweagent/agent/agents.py` (`save_trajectory`) of
//! SWE-agent 1.0–1.1 write them:
//! `{trajectory: [{action, observation, response, thought, execution_time, state, query,
//! extra_info}], history: [{role, content, agent, message_type, tool_calls, tool_call_ids,
//! thought, action, is_demo}], info: {exit_status, submission, model_stats, ...}, replay_config,
//! environment}`.
//!
//! `history` is the conversation the model saw and is read when present; `trajectory[]` repeats
//! the same actions (each with its whole `query`) and is read only when `history` is empty
//! (files of SWE-agent 0.x keep the same two lists). From `history`:
//! - the `system` message is the role text of its agent; messages with `is_demo: true` are the
//!   demonstration, not the run, and are left out (counted in `swe_agent_not_steps`);
//! - the first `user` message (the instance template) is the user's message; the task is its
//!   `<pr_description>` (else `replay_config.problem_statement.text`, else the whole text);
//! - an `assistant` message is a thought (`thought`, else `content`), then one tool call per
//!   `tool_calls[k]` (its text the `action` line when there is one call; the id kept), or, without
//!   function calling, one call of the `action` line;
//! - a `tool` message answers its `tool_call_ids`; a `user` message of type `observation` after an
//!   action answers it by order; the `OBSERVATION:` prefix is dropped;
//! - agents are the messages' `agent` field (`main`; reviewers and retry agents by their names).
//!
//! Errors: a result is flagged when its text reports a failed exit ([`super::failed_exit`]) or
//! holds one of the error messages of SWE-agent's own tools and templates ([`TOOL_ERRORS`]).
//! The observed output is `info.submission` (the patch); `exit_status`, the cost and the number
//! of API calls are metadata.

use serde_json::Value;

use super::actions::{Actions, tagged};
use super::{Document, FormatError, Loaded, content_text, value_text};
use crate::model::{AgentInfo, Diagnostic, SourceFormat, StepKind, Trajectory};

/// Messages SWE-agent's tools and templates write when an action failed (`tools/edit_anthropic`,
/// `tools/windowed_edit_*`, `config/default.yaml` `command_cancelled_timeout_template`, the
/// shell's own `command not found`).
pub const TOOL_ERRORS: [&str; 9] = [
    "No replacement was performed",
    "did not appear verbatim in",
    "Invalid `path` parameter",
    "Invalid `view_range`",
    "Your proposed edit has introduced new syntax error",
    "was cancelled because it took more than",
    "command not found",
    "Traceback (most recent call last)",
    "Your output was not formatted correctly",
];

/// The default agent name when a message names none.
const MAIN: &str = "main";

/// Whether `doc` is a SWE-agent trajectory: an object with a `trajectory` array, a `history`
/// array and an `info` object.
pub fn detect(doc: &Document) -> bool {
    let Document::Json(v) = doc else { return false };
    v.get("trajectory").is_some_and(Value::is_array)
        && v.get("history").is_some_and(Value::is_array)
        && v.get("info").is_some_and(Value::is_object)
}

/// Whether a tool output holds one of [`TOOL_ERRORS`] or a failed exit.
pub fn is_error_text(text: &str) -> bool {
    TOOL_ERRORS.iter().any(|e| text.contains(e)) || super::failed_exit(text).is_some()
}

/// Loads a SWE-agent trajectory named `name`.
///
/// # Errors
/// A message when the document is not an object with a `history` or `trajectory` array.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let Document::Json(v) = doc else {
        return Err(FormatError::JsonLines { expected: "one JSON document" });
    };
    let history = v.get("history").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let trajectory = v.get("trajectory").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    if history.is_empty() && trajectory.is_empty() {
        return Err(FormatError::Shape {
            expected: "a \"history\" or \"trajectory\" array with at least one entry".into(),
        });
    }
    let mut r = Reader::default();
    if history.is_empty() {
        r.read_trajectory(trajectory);
    } else {
        r.read_history(history);
    }
    let info = v.get("info").cloned().unwrap_or(Value::Null);
    let problem = problem_statement(v);
    let mut t = Trajectory {
        id: name.to_string(),
        source: SourceFormat::SweAgent,
        task: r.task.clone().or(problem).unwrap_or_default(),
        observed_output: info.get("submission").map(value_text).filter(|s| !s.trim().is_empty()),
        steps: r.a.steps,
        links: r.a.links,
        agents: r.agents,
        ..Trajectory::default()
    };
    for key in ["exit_status", "swe_agent_version"] {
        if let Some(x) = info.get(key).map(value_text).filter(|x| !x.is_empty()) {
            t.metadata.push((key.to_string(), x));
        }
    }
    for key in ["instance_cost", "api_calls"] {
        if let Some(x) = info.pointer(&format!("/model_stats/{key}")).map(value_text) {
            t.metadata.push((key.to_string(), x));
        }
    }
    if r.demos > 0 {
        t.metadata.push(("swe_agent_not_steps".into(), format!("demonstration messages {}", r.demos)));
    }
    Ok(Loaded { format: SourceFormat::SweAgent, trajectories: vec![t], diagnostics: r.diagnostics })
}

/// `replay_config.problem_statement.text` (the config is a JSON string or an object).
fn problem_statement(v: &Value) -> Option<String> {
    let config = match v.get("replay_config")? {
        Value::String(s) => serde_json::from_str::<Value>(s).ok()?,
        other => other.clone(),
    };
    config.pointer("/problem_statement/text").and_then(Value::as_str).map(|s| s.trim().to_string())
}

#[derive(Default)]
struct Reader {
    a: Actions,
    agents: Vec<AgentInfo>,
    task: Option<String>,
    demos: usize,
    diagnostics: Vec<Diagnostic>,
}

impl Reader {
    fn read_history(&mut self, history: &[Value]) {
        for (i, m) in history.iter().enumerate() {
            let place = format!("history[{i}]");
            if !m.is_object() {
                self.note(format!("{place}: expected an object, found {}; record skipped", super::type_name(m)));
                continue;
            }
            if m.get("is_demo").and_then(Value::as_bool) == Some(true) {
                self.demos += 1;
                continue;
            }
            let text = match content_text(m.get("content")) {
                Ok(t) => t,
                Err(e) => {
                    self.note(format!("{place}: {e}; record skipped"));
                    continue;
                }
            };
            let agent = m.get("agent").and_then(Value::as_str).filter(|a| !a.is_empty()).unwrap_or(MAIN);
            let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
            match role {
                "system" => self.role_text(agent, &text),
                "assistant" => self.assistant(m, agent, &text, &place),
                "tool" => {
                    let ids: Vec<String> = m
                        .get("tool_call_ids")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect();
                    self.observation(agent, role, &text, &ids, &place);
                }
                "user"
                    if m.get("message_type").and_then(Value::as_str).is_none_or(|t| t == "observation")
                        && self.a.steps.iter().any(|s| s.kind == StepKind::ToolCall) =>
                {
                    self.observation(agent, role, &text, &[], &place)
                }
                "user" => self.user(&text, &place),
                other => self.note(format!(
                    "{place}: unknown role {other:?}, expected system, user, assistant or tool; record skipped"
                )),
            }
        }
    }

    /// SWE-agent 0.x files (and 1.x files without history): one thought, call and result per entry.
    fn read_trajectory(&mut self, trajectory: &[Value]) {
        for (i, e) in trajectory.iter().enumerate() {
            let place = format!("trajectory[{i}]");
            let text = |k: &str| e.get(k).map(value_text).unwrap_or_default();
            let thought = text("thought");
            if !thought.trim().is_empty() {
                self.a.push(MAIN, "assistant", StepKind::Thought, thought, Some(place.clone()));
            }
            let action = text("action");
            if action.trim().is_empty() {
                continue;
            }
            let tool = command_name(&action).to_string();
            let c = self.a.call(MAIN, "assistant", &tool, action, None);
            self.a.steps[c].ids.id = Some(place.clone());
            self.observation(MAIN, "tool", &text("observation"), &[], &place);
        }
    }

    fn note(&mut self, message: String) {
        self.diagnostics.push(Diagnostic { line: None, message });
    }

    fn role_text(&mut self, agent: &str, text: &str) {
        if !text.trim().is_empty() && !self.agents.iter().any(|a| a.name == agent) {
            self.agents.push(AgentInfo { name: agent.to_string(), role: Some(text.to_string()) });
        }
    }

    fn user(&mut self, text: &str, place: &str) {
        if self.task.is_none() {
            self.task = Some(tagged(text, "pr_description").unwrap_or(text).trim().to_string());
        }
        self.a.push(super::spantree::USER, "user", StepKind::Message, text.to_string(), Some(place.to_string()));
    }

    fn assistant(&mut self, m: &Value, agent: &str, text: &str, place: &str) {
        let thought = m.get("thought").map(value_text).filter(|t| !t.trim().is_empty()).unwrap_or(text.to_string());
        if !thought.trim().is_empty() {
            self.a.push(agent, "assistant", StepKind::Thought, thought, Some(place.to_string()));
        }
        let action = m.get("action").map(value_text).unwrap_or_default();
        let calls = m.get("tool_calls").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for call in calls {
            let f = call.get("function").unwrap_or(call);
            let tool = f.get("name").map(value_text).unwrap_or_default();
            let args = f.get("arguments").map(value_text).unwrap_or_default();
            let content = if calls.len() == 1 && !action.trim().is_empty() { action.clone() } else { args };
            let id = call.get("id").and_then(Value::as_str);
            let c = self.a.call(agent, "assistant", &tool, content, id);
            self.a.steps[c].ids.id = Some(place.to_string());
        }
        if calls.is_empty() && !action.trim().is_empty() {
            let tool = command_name(&action).to_string();
            let c = self.a.call(agent, "assistant", &tool, action, None);
            self.a.steps[c].ids.id = Some(place.to_string());
        }
    }

    fn observation(&mut self, agent: &str, role: &str, text: &str, ids: &[String], place: &str) {
        let text = text.strip_prefix("OBSERVATION:").map(|t| t.strip_prefix('\n').unwrap_or(t)).unwrap_or(text);
        let r = self.a.result(agent, role, text.to_string(), ids, is_error_text(text));
        self.a.steps[r].ids.id = Some(place.to_string());
    }
}

/// The command of an action line (`str_replace_editor view /x` → `str_replace_editor`).
fn command_name(action: &str) -> &str {
    action.split_whitespace().next().unwrap_or_default()
}
