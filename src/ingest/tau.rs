//! τ-bench result records `{task_id, reward, info, traj, trial?, ...}`; a JSON array of records is
//! a data set (one trajectory per record). τ²-bench results `{info, tasks, simulations}` are read
//! too, one trajectory per simulation (see [`load_tau2`]).
//!
//! `traj` is an OpenAI chat message array (read by [`openai::read_messages`]). `info` holds the
//! task: `info.task.instruction` (the simulated user's goal, taken as the task text),
//! `info.task.outputs` (expected answers, joined by `, ` into the expected output) and
//! `info.task.user_id`. Some dumps write `info` or `traj` as a Python `repr` string; those are
//! decoded when possible, and otherwise the instruction is cut out of the text with a diagnostic.

use serde_json::Value;

use super::{Document, FormatError, Loaded, describe_value, openai, pyrepr, str_field, value_text};
use crate::model::{Diagnostic, SourceFormat, Trajectory};

/// Whether a document is a τ-bench record or a list of them (judged by its first item): an object
/// with `traj` and one of `task_id`, `reward`, `info`.
///
/// Also τ²-bench results: an object with a `simulations` array of `{messages}` objects and
/// `tasks` or `info`.
pub fn detect(doc: &Document) -> bool {
    let Document::Json(v) = doc else { return false };
    match v {
        Value::Array(items) => items.first().is_some_and(is_record),
        other => is_record(other) || is_tau2(other),
    }
}

fn is_tau2(v: &Value) -> bool {
    let sims = v.get("simulations").and_then(Value::as_array);
    sims.is_some_and(|s| s.iter().any(|x| x.get("messages").is_some()))
        && (v.get("tasks").is_some() || v.get("info").is_some())
}

fn is_record(v: &Value) -> bool {
    v.get("traj").is_some() && ["task_id", "reward", "info"].iter().any(|k| v.get(k).is_some())
}

/// Loads one record or a list of records from the file named `name`; a bad record is skipped
/// with a diagnostic naming `records[i]`.
///
/// # Errors
/// A message when the document is JSON Lines or neither an object nor an array.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let Document::Json(v) = doc else {
        return Err(FormatError::JsonLines { expected: "one JSON document" });
    };
    if v.get("simulations").is_some() {
        return load_tau2(name, v);
    }
    let (records, single) = match v {
        Value::Array(items) => (items.as_slice(), false),
        Value::Object(_) => (std::slice::from_ref(v), true),
        other => {
            return Err(FormatError::Found {
                expected: "a τ-bench record {task_id, reward, info, traj} or a list of them",
                found: describe_value(other).into(),
            });
        }
    };
    let mut diagnostics = Vec::new();
    let mut trajectories = Vec::new();
    for (i, rec) in records.iter().enumerate() {
        let place = if single { "record".to_string() } else { format!("records[{i}]") };
        let fallback_id = if single { name.to_string() } else { format!("{name}[{i}]") };
        match read_record(rec, &fallback_id, &place, &mut diagnostics) {
            Ok(t) => trajectories.push(t),
            Err(e) => diagnostics.push(Diagnostic { line: None, message: format!("{place}: {e}; record skipped") }),
        }
    }
    Ok(Loaded { format: SourceFormat::TauBench, trajectories, diagnostics })
}

fn read_record(
    rec: &Value,
    fallback_id: &str,
    place: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Trajectory, FormatError> {
    if !rec.is_object() {
        return Err(FormatError::not_a("an object", rec));
    }
    let traj = decoded(rec.get("traj").ok_or(FormatError::missing("traj"))?);
    let messages = traj.as_array().ok_or_else(|| FormatError::wrong_type("traj", &traj, "an array of messages"))?;
    let mut t = Trajectory { id: record_id(rec, fallback_id), source: SourceFormat::TauBench, ..Trajectory::default() };
    openai::read_messages(messages, &format!("{place}.traj"), &mut t, diagnostics);
    if t.steps.is_empty() {
        return Err(FormatError::NoUsable { item: "message", list: "\"traj\"" });
    }
    for key in ["task_id", "trial", "reward"] {
        if let Some(v) = str_field(rec, key) {
            t.metadata.push((key.into(), v.into_owned()));
        }
    }
    if let Some(info) = rec.get("info") {
        read_info(info, &mut t, place, diagnostics);
    }
    if t.task.is_empty() {
        t.task = openai::first_text(&t, "user").unwrap_or_default();
    }
    t.observed_output = openai::last_answer(&t);
    Ok(t)
}

/// Loads τ²-bench results `{timestamp, info, tasks, simulations}` (sierra-research/tau2-bench,
/// `Results`, 2025): one trajectory per simulation.
///
/// A simulation is `{id, task_id, trial, termination_reason, reward_info: {reward, ...},
/// messages}`; a message is `{role: assistant|user|tool, content, tool_calls: [{id, name,
/// arguments, requestor}], turn_idx, timestamp}`, and a tool message answers the call whose `id` it
/// carries, with `error: true` on failure. Both the agent and the simulated user call tools
/// (`requestor`); calls are attributed to whoever made them. The task text is the user scenario's
/// instructions from the `tasks` entry with the simulation's `task_id` (its `description.purpose`
/// kept as metadata).
fn load_tau2(name: &str, v: &Value) -> Result<Loaded, FormatError> {
    let sims = v.get("simulations").and_then(Value::as_array).ok_or(FormatError::NothingUsable {
        list: "τ²-bench results: \"simulations\"".into(),
        problem: "is not an array of {task_id, messages}",
    })?;
    let tasks = v.get("tasks").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let mut diagnostics = Vec::new();
    let mut trajectories = Vec::new();
    for (i, sim) in sims.iter().enumerate() {
        let place = format!("simulations[{i}]");
        let Some(messages) = sim.get("messages").and_then(Value::as_array) else {
            let msg = format!("{place}: missing \"messages\" array; simulation skipped");
            diagnostics.push(Diagnostic { line: None, message: msg });
            continue;
        };
        let openai_msgs: Vec<Value> = messages.iter().map(tau2_message).collect();
        let id = match (str_field(sim, "task_id"), str_field(sim, "trial")) {
            (Some(task), Some(trial)) => format!("task-{task}-trial-{trial}"),
            (Some(task), None) => format!("task-{task}"),
            _ => format!("{name}[{i}]"),
        };
        let mut t = Trajectory { id, source: SourceFormat::TauBench, ..Trajectory::default() };
        openai::read_messages(&openai_msgs, &format!("{place}.messages"), &mut t, &mut diagnostics);
        if t.steps.is_empty() {
            let msg = format!("{place}: no usable message; simulation skipped");
            diagnostics.push(Diagnostic { line: None, message: msg });
            continue;
        }
        mark_tool_errors(messages, &mut t);
        let task_id = str_field(sim, "task_id").map(|s| s.into_owned());
        for key in ["task_id", "trial", "termination_reason"] {
            if let Some(val) = str_field(sim, key) {
                t.metadata.push((key.into(), val.into_owned()));
            }
        }
        if let Some(r) = sim.pointer("/reward_info/reward").filter(|r| !r.is_null()) {
            t.metadata.push(("reward".into(), value_text(r)));
        }
        let task = tasks.iter().find(|tk| str_field(tk, "id").map(|s| s.into_owned()) == task_id);
        match task {
            Some(tk) => apply_tau2_task(tk, &mut t),
            None if task_id.is_some() => diagnostics.push(Diagnostic {
                line: None,
                message: format!(
                    "{place}: task {:?} is not in \"tasks\"; the task is the first user message",
                    task_id.unwrap_or_default()
                ),
            }),
            None => {}
        }
        if t.task.is_empty() {
            t.task = openai::first_text(&t, "user").unwrap_or_default();
        }
        t.observed_output = openai::last_answer(&t);
        trajectories.push(t);
    }
    if trajectories.is_empty() && sims.is_empty() {
        return Err(FormatError::NothingUsable {
            list: "τ²-bench results: \"simulations\"".into(),
            problem: "is empty",
        });
    }
    Ok(Loaded { format: SourceFormat::TauBench, trajectories, diagnostics })
}

/// A τ²-bench message in the OpenAI chat shape: calls `{id, name, arguments}` under `function`,
/// a tool message's `id` as `tool_call_id`.
fn tau2_message(m: &Value) -> Value {
    let mut out = m.clone();
    let Some(obj) = out.as_object_mut() else { return out };
    if let Some(Value::Array(calls)) = obj.get_mut("tool_calls") {
        for c in calls.iter_mut() {
            if c.get("function").is_some() {
                continue;
            }
            let args = c.get("arguments").map(|a| match a {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            let function = serde_json::json!({"name": c.get("name").cloned().unwrap_or(Value::Null), "arguments": args.unwrap_or_default()});
            if let Some(co) = c.as_object_mut() {
                co.insert("function".into(), function);
                co.entry("type").or_insert_with(|| "function".into());
            }
        }
    }
    if obj.get("role").and_then(Value::as_str) == Some("tool")
        && obj.get("tool_call_id").is_none()
        && let Some(id) = obj.get("id").cloned()
    {
        obj.insert("tool_call_id".into(), id);
    }
    out
}

/// Tool results whose τ²-bench message has `error: true` are errors (matched by call id).
fn mark_tool_errors(messages: &[Value], t: &mut Trajectory) {
    let failed: Vec<String> = messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .filter(|m| m.get("error").and_then(Value::as_bool) == Some(true))
        .filter_map(|m| str_field(m, "id").map(|s| s.into_owned()))
        .collect();
    for s in &mut t.steps {
        if s.kind == crate::model::StepKind::ToolResult && s.ids.refs.iter().any(|r| failed.contains(r)) {
            s.is_error = true;
        }
    }
}

/// The task text of a τ²-bench task: `user_scenario.instructions` (a string, or its structured
/// fields `reason_for_call`, `known_info`, `unknown_info`, `task_instructions` joined by lines).
fn apply_tau2_task(task: &Value, t: &mut Trajectory) {
    let instructions = task.pointer("/user_scenario/instructions");
    t.task = match instructions {
        Some(Value::Object(fields)) => ["reason_for_call", "known_info", "unknown_info", "task_instructions"]
            .iter()
            .filter_map(|k| fields.get(*k).filter(|v| !v.is_null()).map(value_text))
            .filter(|s| !s.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => value_text(other).trim().to_string(),
        None => String::new(),
    };
    if let Some(purpose) = task.pointer("/description/purpose").filter(|p| !p.is_null()) {
        t.metadata.push(("purpose".into(), value_text(purpose)));
    }
}

/// `task-<task_id>[-trial-<trial>]`, or `fallback` without a task id.
fn record_id(rec: &Value, fallback: &str) -> String {
    match (str_field(rec, "task_id"), str_field(rec, "trial")) {
        (Some(id), Some(trial)) => format!("task-{id}-trial-{trial}"),
        (Some(id), None) => format!("task-{id}"),
        _ => fallback.to_string(),
    }
}

/// A value, or the literal a string holds (Python repr or JSON), decoded.
fn decoded(v: &Value) -> std::borrow::Cow<'_, Value> {
    match v {
        Value::String(s) => match pyrepr::parse(s).or_else(|| serde_json::from_str(s).ok()) {
            Some(d) => std::borrow::Cow::Owned(d),
            None => std::borrow::Cow::Borrowed(v),
        },
        other => std::borrow::Cow::Borrowed(other),
    }
}

/// Reads the task instruction, expected outputs and user id out of `info` (an object, or a repr
/// string of one); what cannot be read is reported, never fatal.
fn read_info(info: &Value, t: &mut Trajectory, place: &str, diagnostics: &mut Vec<Diagnostic>) {
    let info = decoded(info);
    if let Value::String(text) = &*info {
        let found = instruction_from_text(text);
        let what =
            if found.is_some() { "took the task instruction from the text" } else { "no task instruction found" };
        diagnostics.push(Diagnostic {
            line: None,
            message: format!("{place}.info: not a readable dict or JSON object; {what}"),
        });
        t.task = found.unwrap_or_default();
        return;
    }
    let Some(task) = info.get("task") else { return };
    let task = decoded(task);
    if let Some(instruction) = str_field(&task, "instruction") {
        t.task = instruction.trim().to_string();
    }
    if let Some(user) = str_field(&task, "user_id") {
        t.metadata.push(("user_id".into(), user.into_owned()));
    }
    if let Some(Value::Array(outputs)) = task.get("outputs") {
        let outs: Vec<String> = outputs.iter().map(value_text).collect();
        t.expected_output = (!outs.is_empty()).then(|| outs.join(", "));
    }
}

/// The string after an `'instruction':` or `"instruction":` key in repr or JSON text.
fn instruction_from_text(text: &str) -> Option<String> {
    ["'instruction'", "\"instruction\""].iter().find_map(|key| {
        let pos = text.find(key)?;
        let rest = text[pos + key.len()..].trim_start().strip_prefix(':')?;
        pyrepr::parse_string_prefix(rest).map(|(s, _)| s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(info: Value) -> Value {
        json!({"task_id": 7, "reward": 0.0, "info": info, "traj": [
            {"role": "system", "content": "policy"},
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "bye"}
        ]})
    }

    #[test]
    fn repr_info_is_decoded() {
        let info = json!(
            "{'task': {'user_id': 'u1', 'instruction': 'You are Ann. Return it.', 'outputs': ['10', 'x']}, 'source': 'user'}"
        );
        let l = load("f", &Document::Json(record(info))).unwrap();
        let t = &l.trajectories[0];
        assert_eq!(t.task, "You are Ann. Return it.");
        assert_eq!(t.expected_output.as_deref(), Some("10, x"));
        assert_eq!(t.id, "task-7");
        assert!(l.diagnostics.is_empty());
    }

    #[test]
    fn unreadable_repr_info_still_yields_the_instruction() {
        let info = json!("{'task': Task(user_id='u1', 'instruction': \"It's me.\", actions=[...])}");
        let l = load("f", &Document::Json(record(info))).unwrap();
        assert_eq!(l.trajectories[0].task, "It's me.");
        assert_eq!(
            l.diagnostics[0].message,
            "record.info: not a readable dict or JSON object; took the task instruction from the text"
        );
    }

    #[test]
    fn bad_records_of_a_data_set_are_skipped() {
        let set = json!([record(json!({})), {"task_id": 8, "traj": 5}, 3]);
        let l = load("set", &Document::Json(set)).unwrap();
        assert_eq!(l.trajectories.len(), 1);
        let msgs: Vec<String> = l.diagnostics.iter().map(|d| d.to_string()).collect();
        assert_eq!(
            msgs,
            [
                "records[1]: \"traj\" is a number, expected an array of messages; record skipped",
                "records[2]: expected an object, found a number; record skipped",
            ]
        );
        // Without an instruction the first user message is the task.
        assert_eq!(l.trajectories[0].task, "hello");
    }
}
