//! smolagents memory dumps: the step dicts of `agent.memory.get_full_steps()` (or of
//! `[step.dict() for step in agent.memory.steps]`), as `smolagents/memory.py` of smolagents
//! 1.x writes them, saved as a JSON list (or under `steps` / `memory` of an object that may name
//! the agent in `agent_name` or `name`).
//!
//! Step dicts, told apart by their keys:
//! - `SystemPromptStep` `{system_prompt}` → the agent's role text;
//! - `TaskStep` `{task, task_images}` → the user's message (the first is the task; images are
//!   placeholders);
//! - `PlanningStep` `{model_input_messages, model_output_message, plan, timing, token_usage}` → a
//!   thought (the plan);
//! - `PlanningStep` of smolagents 1.8–1.1x `{model_input_messages, model_output_message_facts,
//!   facts, model_output_message_plan, plan}` → two thoughts (the facts, the plan);
//! - `ActionStep` `{step_number, model_input_messages, tool_calls: [{id, type, function: {name,
//!   arguments}}], error: {type, message}, model_output_message, model_output, code_action,
//!   observations, observations_images, action_output, timing, token_usage, is_final_answer}` →
//!   the model output (a thought when the step calls tools, else a message), one tool call per
//!   `tool_calls[k]`, and one result (the `observations`, else the error) answering them, flagged
//!   when `error` is set; a final answer's `action_output` is the observed output; smolagents
//!   1.0–1.1x wrote `{step, start_time, end_time, duration, ...}` without `step_number`,
//!   `token_usage` and `is_final_answer` (the last step's `action_output` is then the answer);
//! - `FinalAnswerStep` `{output}` (older: `final_answer`) → the answer, the observed output.
//!
//! `model_input_messages` are the context the model saw, never new steps. Tokens:
//! `token_usage.{input_tokens, output_tokens}` (older: `input_token_count` / `output_token_count`).
//! The agent is named by the wrapper's `agent_name` / `name`, else `agent`; managed agents are
//! called as tools and show as tool calls of their name.

use serde_json::Value;

use super::actions::Actions;
use super::{DETECT_SAMPLE, Document, FormatError, Loaded, value_text};
use crate::model::{AgentInfo, Diagnostic, SourceFormat, StepKind, TokenCounts, Trajectory};

/// The agent name when the dump names none.
pub const AGENT: &str = "agent";

fn steps_of(doc: &Document) -> Option<(&[Value], Option<&str>)> {
    let Document::Json(v) = doc else { return None };
    match v {
        Value::Array(items) => Some((items, None)),
        Value::Object(m) => {
            let steps = ["steps", "memory"].iter().find_map(|k| m.get(*k)?.as_array())?;
            let name = ["agent_name", "name"].iter().find_map(|k| m.get(*k)?.as_str());
            Some((steps, name))
        }
        _ => None,
    }
}

/// Which step dict an item is, by its keys.
fn step_type(item: &Value) -> Option<&'static str> {
    let has = |k: &str| item.get(k).is_some();
    if has("step_number") && (has("observations") || has("model_output") || has("tool_calls")) {
        Some("action")
    } else if has("step") && has("model_output") && has("observations") {
        // smolagents 1.8–1.1x `ActionStep.dict()` wrote the step number as `step`.
        Some("action")
    } else if has("task") && has("task_images") {
        Some("task")
    } else if has("plan") && (has("model_output_message") || has("model_output_message_plan")) {
        Some("planning")
    } else if has("system_prompt") && item.as_object().is_some_and(|m| m.len() <= 2) {
        Some("system")
    } else if (has("output") || has("final_answer")) && item.as_object().is_some_and(|m| m.len() == 1) {
        Some("final")
    } else {
        None
    }
}

/// Whether `doc` is a smolagents memory dump: most of its first [`DETECT_SAMPLE`] items are step
/// dicts and one is an `ActionStep`.
pub fn detect(doc: &Document) -> bool {
    let Some((steps, _)) = steps_of(doc) else { return false };
    let sample = &steps[..steps.len().min(DETECT_SAMPLE)];
    let typed: Vec<&str> = sample.iter().filter_map(step_type).collect();
    typed.contains(&"action") && typed.len() * 2 > sample.len()
}

/// Loads a smolagents memory dump named `name`.
///
/// # Errors
/// A message when the document holds no list of steps.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let (items, agent_name) =
        steps_of(doc).ok_or(FormatError::Shape { expected: "a list of smolagents memory steps".into() })?;
    let agent = agent_name.unwrap_or(AGENT).to_string();
    let mut a = Actions::default();
    let mut agents = Vec::new();
    let mut task: Option<String> = None;
    let mut output: Option<String> = None;
    let mut diagnostics = Vec::new();
    let mut last_action_output: Option<String> = None;
    for (i, item) in items.iter().enumerate() {
        let place = format!("steps[{i}]");
        let first = a.steps.len();
        let text = |k: &str| item.get(k).map(value_text).filter(|t| !t.trim().is_empty());
        match step_type(item) {
            Some("system") => {
                if let Some(p) = text("system_prompt") {
                    agents.push(AgentInfo { name: agent.clone(), role: Some(p) });
                }
            }
            Some("task") => {
                let t = text("task").unwrap_or_default();
                task.get_or_insert_with(|| t.trim().to_string());
                let content = with_images(t, item.get("task_images"));
                a.push(super::spantree::USER, "task", StepKind::Message, content, Some(place.clone()));
            }
            Some("planning") => {
                // smolagents 1.8–1.1x planned in two parts: the facts survey, then the plan.
                if let Some(facts) = text("facts") {
                    a.push(&agent, "planning", StepKind::Thought, facts, Some(place.clone()));
                }
                let plan = text("plan").unwrap_or_default();
                a.push(&agent, "planning", StepKind::Thought, plan, Some(place.clone()));
            }
            Some("action") => {
                action(&mut a, &agent, item, &place, &mut output);
                // Before `is_final_answer` (smolagents 1.8–1.1x) the run's answer is the last
                // step's `action_output`, the value `final_answer` returned.
                if item.get("is_final_answer").is_none() {
                    last_action_output = text("action_output");
                }
            }
            Some("final") => {
                let out = text("output").or_else(|| text("final_answer")).unwrap_or_default();
                output = Some(out.trim().to_string());
                a.push(&agent, "final_answer", StepKind::Message, out, Some(place.clone()));
            }
            _ => diagnostics.push(Diagnostic {
                line: None,
                message: format!(
                    "{place}: not a smolagents step (expected TaskStep, PlanningStep, ActionStep, FinalAnswerStep or SystemPromptStep keys); record skipped"
                ),
            }),
        }
        if let Some(tok) = tokens(item)
            && let Some(s) = a.steps[first..].iter_mut().find(|s| s.agent == agent)
        {
            s.tokens = Some(tok);
        }
        for s in &mut a.steps[first..] {
            s.timestamp = item.pointer("/timing/start_time").or_else(|| item.get("start_time")).map(value_text);
        }
    }
    if output.is_none() {
        output = last_action_output.map(|o| o.trim().to_string());
    }
    let t = Trajectory {
        id: name.to_string(),
        source: SourceFormat::Smolagents,
        task: task.unwrap_or_default(),
        observed_output: output.filter(|o| !o.is_empty()),
        steps: a.steps,
        links: a.links,
        agents,
        ..Trajectory::default()
    };
    Ok(Loaded { format: SourceFormat::Smolagents, trajectories: vec![t], diagnostics })
}

fn action(a: &mut Actions, agent: &str, item: &Value, place: &str, output: &mut Option<String>) {
    let calls = item.get("tool_calls").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let model_output = item
        .get("model_output")
        .map(value_text)
        .or_else(|| item.pointer("/model_output_message/content").map(value_text))
        .filter(|t| !t.trim().is_empty());
    if let Some(t) = model_output {
        let kind = if calls.is_empty() { StepKind::Message } else { StepKind::Thought };
        a.push(agent, "assistant", kind, t, Some(place.to_string()));
    }
    let mut ids = Vec::new();
    for (k, call) in calls.iter().enumerate() {
        let f = call.get("function").unwrap_or(call);
        let tool = f.get("name").map(value_text).unwrap_or_default();
        let args = f.get("arguments").map(value_text).unwrap_or_default();
        let id = super::messages::id_text(call.get("id")).unwrap_or_else(|| format!("{place}.tool_calls[{k}]"));
        let c = a.call(agent, "assistant", &tool, args, Some(&id));
        a.steps[c].ids.id = Some(place.to_string());
        ids.push(id);
    }
    let observations = item.get("observations").map(value_text).filter(|t| !t.trim().is_empty());
    let error = item.get("error").filter(|e| !e.is_null()).map(|e| {
        let ty = e.get("type").map(value_text).unwrap_or_default();
        let msg = e.get("message").map(value_text).unwrap_or_else(|| value_text(e));
        match ty.is_empty() {
            true => msg,
            false => format!("{ty}: {msg}"),
        }
    });
    let text = match (&observations, &error) {
        (Some(o), Some(e)) => format!("{o}\n[error] {e}"),
        (Some(o), None) => o.clone(),
        (None, Some(e)) => format!("[error] {e}"),
        (None, None) => String::new(),
    };
    let images = item.get("observations_images");
    if !calls.is_empty() || !text.is_empty() {
        let r = a.result(agent, "tool", with_images(text, images), &ids, error.is_some());
        a.steps[r].ids.id = Some(place.to_string());
    }
    if item.get("is_final_answer").and_then(Value::as_bool) == Some(true)
        && let Some(out) = item.get("action_output").map(value_text).filter(|o| !o.trim().is_empty())
    {
        *output = Some(out.trim().to_string());
    }
}

/// `text` with a placeholder for each image of an image list (`[2 images]`).
fn with_images(text: String, images: Option<&Value>) -> String {
    match images.and_then(Value::as_array).map_or(0, Vec::len) {
        0 => text,
        1 => format!("{text}\n[image]"),
        n => format!("{text}\n[{n} images]"),
    }
}

fn tokens(item: &Value) -> Option<TokenCounts> {
    let get = |ptr: &str| item.pointer(ptr).and_then(Value::as_u64);
    let input = get("/token_usage/input_tokens").or_else(|| get("/input_token_count"));
    let output = get("/token_usage/output_tokens").or_else(|| get("/output_token_count"));
    (input.is_some() || output.is_some())
        .then(|| TokenCounts { input: input.unwrap_or(0), output: output.unwrap_or(0) })
}
