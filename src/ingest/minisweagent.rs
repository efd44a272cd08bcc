//! mini-SWE-agent trajectories, as `minisweagent/run/utils/save.py` (`save_traj`) of
//! mini-swe-agent 1.x writes them: `{info: {exit_status, submission, model_stats: {instance_cost,
//! api_calls}, config, mini_version}, messages: [{role, content, extra?}], trajectory_format:
//! "mini-swe-agent-1"}`.
//!
//! The agent (`agents/default.py`) has no tools: each assistant message holds one action, a
//! ```` ```bash ```` block (`action_regex` of the default config), and the next `user` message is
//! its observation, rendered by `action_observation_template` as `<returncode>N</returncode>` and
//! `<output>…</output>` (or `<output_head>` / `<output_tail>` with a `<warning>` for long
//! output). Mapping:
//! - `system` → the agent's role text; the first `user` message → the user's message, the task its
//!   `<pr_description>` without the template's opening line (else the whole text);
//! - an `assistant` message → a thought (its text outside the code blocks) and one tool call
//!   `bash` per block (mini-swe-agent refuses messages with several and runs none; all are
//!   kept);
//! - the next `user` message → the result of all those calls (one observation answers the turn,
//!   so the turns after a refused one stay paired with their own); flagged when its return code is not 0,
//!   when it is the format-error or timeout template (`format_error_template`,
//!   `timeout_template`), or when it reports a failed exit in other words;
//! - the observed output is `info.submission`, else the last observation (after the submit
//!   marker line `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` when it has one; none when nothing follows
//!   the marker).
//!
//! The agent is named `mini-swe-agent` (the trajectory names none).

use serde_json::Value;

use super::actions::{Actions, tagged};
use super::{Document, FormatError, Loaded, content_text, value_text};
use crate::model::{AgentInfo, Diagnostic, SourceFormat, StepKind, Trajectory};

/// The agent name of the assistant's steps.
pub const AGENT: &str = "mini-swe-agent";
/// Observations of failed turns written by mini-swe-agent's templates.
const TEMPLATE_ERRORS: [&str; 2] = ["Please always provide EXACTLY ONE action", "timed out and has been killed"];

/// Whether `doc` is a mini-SWE-agent trajectory: an object with a `trajectory_format` starting
/// with `mini-swe-agent` and a `messages` array.
pub fn detect(doc: &Document) -> bool {
    let Document::Json(v) = doc else { return false };
    v.get("trajectory_format").and_then(Value::as_str).is_some_and(|f| f.starts_with("mini-swe-agent"))
        && v.get("messages").is_some_and(Value::is_array)
}

/// Loads a mini-SWE-agent trajectory named `name`.
///
/// # Errors
/// A message when the document has no `messages` array.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let Document::Json(v) = doc else {
        return Err(FormatError::JsonLines { expected: "one JSON document" });
    };
    let messages = v
        .get("messages")
        .and_then(Value::as_array)
        .ok_or(FormatError::Shape { expected: "a \"messages\" array".into() })?;
    let mut a = Actions::default();
    let mut agents = Vec::new();
    let mut task = None;
    let mut diagnostics = Vec::new();
    let mut pending = false;
    for (i, m) in messages.iter().enumerate() {
        let place = format!("messages[{i}]");
        let text = match content_text(m.get("content")) {
            Ok(t) => t,
            Err(e) => {
                diagnostics.push(Diagnostic { line: None, message: format!("{place}: {e}; record skipped") });
                continue;
            }
        };
        match m.get("role").and_then(Value::as_str).unwrap_or_default() {
            "system" if agents.is_empty() => agents.push(AgentInfo { name: AGENT.into(), role: Some(text) }),
            "system" => {}
            "assistant" => {
                let (thought, blocks) = split_actions(&text);
                if !thought.is_empty() {
                    a.push(AGENT, "assistant", StepKind::Thought, thought, Some(place.clone()));
                }
                if blocks.is_empty() {
                    // A turn without an action: the format error that follows answers nothing.
                    a.close_open();
                }
                for b in &blocks {
                    let c = a.call(AGENT, "assistant", "bash", b.clone(), None);
                    a.steps[c].ids.id = Some(place.clone());
                }
                pending = true;
            }
            "user" | "tool" if pending => {
                pending = false;
                let failed =
                    returncode(&text).is_some_and(|c| c != 0) || TEMPLATE_ERRORS.iter().any(|e| text.contains(e));
                let has_call = a.steps.last().is_some_and(|s| s.kind == StepKind::ToolCall);
                let s = match has_call {
                    // One observation answers the turn: the format error answers every block
                    // of a turn with several (none of them ran).
                    true => a.result_of_open(AGENT, "user", text, failed),
                    false => {
                        let s = a.push(super::spantree::USER, "user", StepKind::Message, text, None);
                        a.steps[s].is_error = failed;
                        s
                    }
                };
                a.steps[s].ids.id = Some(place);
            }
            role => {
                if task.is_none() && role == "user" {
                    let pr = tagged(&text, "pr_description").unwrap_or(&text).trim();
                    // The default instance template opens the description with this line.
                    let pr = pr.strip_prefix("Consider the following PR description:").unwrap_or(pr).trim();
                    task = Some(pr.to_string());
                }
                a.push(super::spantree::USER, role, StepKind::Message, text, Some(place));
            }
        }
    }
    let info = v.get("info").cloned().unwrap_or(Value::Null);
    let submission = info.get("submission").map(value_text).filter(|s| !s.trim().is_empty());
    let last_result = a.steps.iter().rev().find(|s| s.kind == StepKind::ToolResult).map(|s| output_of(&s.content));
    let mut t = Trajectory {
        id: name.to_string(),
        source: SourceFormat::MiniSweAgent,
        task: task.unwrap_or_default(),
        observed_output: submission.or(last_result.filter(|o| !o.trim().is_empty())),
        steps: a.steps,
        links: a.links,
        agents,
        ..Trajectory::default()
    };
    for (key, ptr) in [
        ("exit_status", "/exit_status"),
        ("mini_version", "/mini_version"),
        ("instance_cost", "/model_stats/instance_cost"),
        ("api_calls", "/model_stats/api_calls"),
    ] {
        if let Some(x) = info.pointer(ptr).map(value_text).filter(|x| !x.is_empty()) {
            t.metadata.push((key.to_string(), x));
        }
    }
    Ok(Loaded { format: SourceFormat::MiniSweAgent, trajectories: vec![t], diagnostics })
}

/// The text of an assistant message outside its ```` ```bash ```` blocks (trimmed), and the
/// blocks' commands.
pub fn split_actions(text: &str) -> (String, Vec<String>) {
    let mut thought = String::new();
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```bash") {
        thought.push_str(&rest[..start]);
        let body = &rest[start + "```bash".len()..];
        let body = body.strip_prefix('\n').unwrap_or(body);
        match body.find("```") {
            Some(end) => {
                blocks.push(body[..end].trim_end().to_string());
                rest = &body[end + 3..];
            }
            None => {
                blocks.push(body.trim_end().to_string());
                rest = "";
            }
        }
    }
    thought.push_str(rest);
    let thought = thought.trim();
    let thought = thought.strip_prefix("THOUGHT:").unwrap_or(thought).trim();
    (thought.to_string(), blocks)
}

/// The number in `<returncode>N</returncode>`, when the observation has one.
pub fn returncode(text: &str) -> Option<i64> {
    tagged(text, "returncode")?.parse().ok()
}

/// The first output lines of a submitting command (`agents/default.py`, `has_finished`); the
/// submission is what follows.
const SUBMIT_MARKERS: [&str; 2] = ["COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT"];

/// The `<output>` of an observation, else its whole text; after a submit marker line, what follows
/// it (the submission).
fn output_of(text: &str) -> String {
    let out = tagged(text, "output").unwrap_or(text).trim();
    match out.split_once('\n') {
        Some((first, rest)) if SUBMIT_MARKERS.contains(&first.trim()) => rest.trim().to_string(),
        None if SUBMIT_MARKERS.contains(&out) => String::new(),
        _ => out.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_split_from_the_thought() {
        let (t, b) = split_actions("THOUGHT: look first.\n\n```bash\nls -la\n```\n");
        assert_eq!(t, "look first.");
        assert_eq!(b, vec!["ls -la".to_string()]);
        assert_eq!(returncode("<returncode>2</returncode>\n<output>\nx\n</output>"), Some(2));
        assert_eq!(output_of("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ndiff --git a/x b/x"), "diff --git a/x b/x");
        assert_eq!(output_of("<returncode>0</returncode>\n<output>\n42\n</output>"), "42");
    }
}
