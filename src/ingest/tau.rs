//! τ-bench result records `{task_id, reward, info, traj, trial?, ...}`; a JSON array of records is
//! a data set (one trajectory per record).
//!
//! `traj` is an OpenAI chat message array (read by [`openai::read_messages`]). `info` holds the
//! task: `info.task.instruction` (the simulated user's goal, taken as the task text),
//! `info.task.outputs` (expected answers, joined by `, ` into the expected output) and
//! `info.task.user_id`. Some dumps write `info` or `traj` as a Python `repr` string; those are
//! decoded when possible, and otherwise the instruction is cut out of the text with a diagnostic.

use serde_json::Value;

use super::{Document, Loaded, describe_value, openai, pyrepr, str_field, type_name, value_text};
use crate::model::{Diagnostic, SourceFormat, Trajectory};

/// Whether a document is a τ-bench record or a list of them (judged by its first item): an object
/// with `traj` and one of `task_id`, `reward`, `info`.
pub fn detect(doc: &Document) -> bool {
    let Document::Json(v) = doc else { return false };
    match v {
        Value::Array(items) => items.first().is_some_and(is_record),
        other => is_record(other),
    }
}

fn is_record(v: &Value) -> bool {
    v.get("traj").is_some() && ["task_id", "reward", "info"].iter().any(|k| v.get(k).is_some())
}

/// Loads one record or a list of records from the file named `name`; a bad record is skipped
/// with a diagnostic naming `records[i]`.
///
/// # Errors
/// A message when the document is JSON Lines or neither an object nor an array.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, String> {
    let Document::Json(v) = doc else {
        return Err("expected one JSON document, found JSON Lines".into());
    };
    let (records, single) = match v {
        Value::Array(items) => (items.as_slice(), false),
        Value::Object(_) => (std::slice::from_ref(v), true),
        other => {
            return Err(format!(
                "expected a τ-bench record {{task_id, reward, info, traj}} or a list of them, found {}",
                describe_value(other)
            ));
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
) -> Result<Trajectory, String> {
    if !rec.is_object() {
        return Err(format!("expected an object, found {}", type_name(rec)));
    }
    let traj = decoded(rec.get("traj").ok_or("missing \"traj\"")?);
    let messages =
        traj.as_array().ok_or_else(|| format!("\"traj\" is {}, expected an array of messages", type_name(&traj)))?;
    let mut t = Trajectory { id: record_id(rec, fallback_id), source: SourceFormat::TauBench, ..Trajectory::default() };
    openai::read_messages(messages, &format!("{place}.traj"), &mut t, diagnostics);
    if t.steps.is_empty() {
        return Err("no usable message in \"traj\"".into());
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
