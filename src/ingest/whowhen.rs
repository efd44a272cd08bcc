//! Who&When (ICML 2025 failure-attribution benchmark) and Magentic-One `[{role, content}]` logs.
//!
//! Two subsets share one file shape `{question, ground_truth, history, mistake_agent,
//! mistake_step, mistake_reason, ...}`:
//! - algorithm-generated (AG2 CaptainAgent teams): `history[i].name` is the agent, `role` is
//!   user/assistant relative to the speaker and ignored; `system_prompt` maps agents to roles;
//!   `is_correct`.
//! - hand-crafted (Magentic-One): the agent is the `role` string up to ` (`:
//!   `Orchestrator (-> WebSurfer)` is a delegation to WebSurfer, `Orchestrator (thought)` and
//!   `Orchestrator (termination condition)` are thoughts, `human` is the user; `is_corrected`.
//!
//! `mistake_step` is a 0-based index into `history`, stored as a string. A bare array of
//! `{role, content}` with Magentic-One roles is a [`SourceFormat::MagenticLog`] (no labels).

use serde_json::Value;

use super::{
    DETECT_SAMPLE, Document, FormatError, Loaded, content_text, describe_value, remap_index, str_field, value_text,
};
use crate::model::{AgentInfo, Diagnostic, GoldLabel, Link, LinkKind, SourceFormat, Step, StepKind, Trajectory};

/// The agent name of the code-execution tool in algorithm-generated runs.
pub const TERMINAL_AGENT: &str = "Computer_terminal";

/// The agent name of the code-execution tool in hand-crafted (Magentic-One) runs.
pub const HAND_TERMINAL_AGENT: &str = "ComputerTerminal";

/// Keys of a Who&When run besides `history`; a document needs one of them, so that another
/// tool's `history` (SWE-agent, OpenHands evaluation output) is not read as a Who&When run.
pub const OWN_KEYS: [&str; 10] = [
    "question",
    "ground_truth",
    "mistake_agent",
    "mistake_step",
    "mistake_reason",
    "system_prompt",
    "is_correct",
    "is_corrected",
    "question_ID",
    "level",
];

/// Which Who&When / Magentic shape a document has, if any: an object with a `history` array and
/// one of Who&When's [`OWN_KEYS`] (algorithm-generated when it has `system_prompt` or named
/// messages), or an array whose first [`DETECT_SAMPLE`] items are mostly `{role, content}` with at
/// least one Magentic-One role.
pub fn detect(doc: &Document) -> Option<SourceFormat> {
    let Document::Json(v) = doc else { return None };
    match v {
        Value::Object(m)
            if m.get("history").is_some_and(Value::is_array) && OWN_KEYS.iter().any(|k| m.contains_key(*k)) =>
        {
            let history = m["history"].as_array()?;
            if m.contains_key("system_prompt") || history.iter().any(|h| h.get("name").is_some()) {
                Some(SourceFormat::WhoWhenAlgorithm)
            } else {
                Some(SourceFormat::WhoWhenHand)
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let sample = &items[..items.len().min(DETECT_SAMPLE)];
            let shaped = sample.iter().filter(|h| h.get("role").is_some() && h.get("content").is_some()).count();
            let magentic = shaped * 2 > sample.len()
                && sample.iter().any(|h| h.get("role").and_then(Value::as_str).is_some_and(is_magentic_role));
            magentic.then_some(SourceFormat::MagenticLog)
        }
        _ => None,
    }
}

fn is_magentic_role(role: &str) -> bool {
    role.starts_with("Orchestrator") || role == "WebSurfer" || role == "FileSurfer" || role == "ComputerTerminal"
}

/// Loads a Who&When file or a Magentic-One log named `name`.
///
/// A history record that cannot be read is skipped with a diagnostic; the step keeps its history
/// position in `ids.id` and the gold `mistake_step` is moved to the loaded index of that record.
///
/// # Errors
/// A message when the document has no `history` array (or is no array for a Magentic log).
pub fn load(name: &str, doc: &Document, format: SourceFormat) -> Result<Loaded, FormatError> {
    let (history, top) = history_of(doc)?;
    let label = if top.is_some() { "history" } else { "messages" };
    let (steps, origin, mut diagnostics) = read_history(history, format == SourceFormat::WhoWhenAlgorithm, label);
    let mut t = Trajectory { id: name.to_string(), source: format, steps, ..Trajectory::default() };
    t.links = protocol_links(&t.steps);
    if let Some(top) = top {
        read_top(top, &mut t);
        if !t.steps.is_empty() {
            read_gold(top, &mut t, &origin, history.len(), &mut diagnostics);
        }
    } else if let Some(first) = t.steps.first().filter(|s| s.role == "human") {
        t.task = first.content.trim().to_string();
    }
    t.observed_output = final_answer(&t.steps);
    Ok(Loaded { format, trajectories: vec![t], diagnostics })
}

/// The history records and, for a Who&When object, the object itself.
fn history_of(doc: &Document) -> Result<(&[Value], Option<&Value>), FormatError> {
    let Document::Json(v) = doc else {
        return Err(FormatError::JsonLines { expected: "one JSON document" });
    };
    let (history, top) = match v {
        Value::Array(items) => (items.as_slice(), None),
        Value::Object(_) => match v.get("history") {
            Some(Value::Array(h)) => (h.as_slice(), Some(v)),
            Some(other) => {
                return Err(FormatError::wrong_type("history", other, "an array of messages"));
            }
            None => {
                return Err(FormatError::Found {
                    expected: "a Who&When \"history\" array, a Magentic-One log [{role, content}] or an AutoGen \
                               AgentChat TaskResult {messages: [{source, type, content}]}",
                    found: describe_value(v).into(),
                });
            }
        },
        other => {
            return Err(FormatError::Found {
                expected: "an object with \"history\" or an array of {role, content}",
                found: describe_value(other).into(),
            });
        }
    };
    if history.is_empty() {
        return Err(FormatError::NothingUsable {
            list: "the history".into(),
            problem: "is empty, expected at least one message",
        });
    }
    Ok((history, top))
}

/// The readable records as steps (with their history position in `ids.id`), `origin[k]` = the
/// history position of step `k`, and a diagnostic per skipped record (named `label[i]`).
fn read_history(history: &[Value], algorithm: bool, label: &str) -> (Vec<Step>, Vec<usize>, Vec<Diagnostic>) {
    let mut steps = Vec::with_capacity(history.len());
    let mut origin = Vec::with_capacity(history.len());
    let mut diagnostics = Vec::new();
    for (i, item) in history.iter().enumerate() {
        match parse_step(item, algorithm) {
            Ok(mut step) => {
                step.ids.id = Some(i.to_string());
                steps.push(step);
                origin.push(i);
            }
            Err(msg) => {
                diagnostics.push(Diagnostic { line: None, message: format!("{label}[{i}]: {msg}; record skipped") })
            }
        }
    }
    (steps, origin, diagnostics)
}

fn parse_step(item: &Value, algorithm: bool) -> Result<Step, FormatError> {
    let obj = item.as_object().ok_or_else(|| FormatError::not_a("an object", item))?;
    let content = match obj.get("content") {
        None => return Err(FormatError::missing("content")),
        Some(c) => content_text(Some(c))?,
    };
    let role = match obj.get("role") {
        None => String::new(),
        Some(Value::String(r)) => r.clone(),
        Some(other) => return Err(FormatError::wrong_type("role", other, "a string")),
    };
    let mut step = Step { content, role, ..Step::default() };
    if algorithm {
        step.agent = agent_name(obj.get("name"))?;
    } else {
        if step.role.trim().is_empty() {
            return Err(FormatError::Missing { field: "role", what: " (the agent)" });
        }
        (step.agent, step.kind, step.delegate_to) = parse_hand_role(&step.role);
    }
    if step.agent == TERMINAL_AGENT || step.agent == HAND_TERMINAL_AGENT {
        step.kind = StepKind::ToolResult;
        step.tool_name = Some(step.agent.clone());
    }
    Ok(step)
}

/// The agent of an algorithm-generated record: its `name`, a non-empty string.
fn agent_name(name: Option<&Value>) -> Result<String, FormatError> {
    const WHAT: &str = " (the agent)";
    match name {
        Some(Value::String(n)) if !n.trim().is_empty() => Ok(n.trim().to_string()),
        Some(Value::String(_)) => Err(FormatError::EmptyField { field: "name", what: WHAT }),
        Some(other) => Err(FormatError::Field {
            field: "name".into(),
            what: WHAT.into(),
            found: super::type_name(other).into(),
            expected: "a string".into(),
        }),
        None => Err(FormatError::Missing { field: "name", what: WHAT }),
    }
}

/// Splits a Magentic-One role string into (agent, kind, delegation target).
///
/// `Orchestrator (-> WebSurfer)` → (`Orchestrator`, delegation, `WebSurfer`);
/// `Orchestrator (thought)` / `(termination condition)` → thought; `human` and plain names →
/// message.
pub fn parse_hand_role(role: &str) -> (String, StepKind, Option<String>) {
    let Some((agent, rest)) = role.split_once(" (") else {
        return (role.trim().to_string(), StepKind::Message, None);
    };
    let inner = rest.trim_end_matches(')').trim();
    if let Some(target) = inner.strip_prefix("->") {
        return (agent.trim().to_string(), StepKind::Delegation, Some(target.trim().to_string()));
    }
    (agent.trim().to_string(), StepKind::Thought, None)
}

/// Protocol links the framework fixes: a delegation to the delegate's next step, and a step with
/// a code block to the terminal output that ran it.
fn protocol_links(steps: &[Step]) -> Vec<Link> {
    let mut links = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        if let Some(target) = &s.delegate_to
            && let Some(j) = (i + 1..steps.len()).take(4).find(|&j| steps[j].agent.eq_ignore_ascii_case(target))
        {
            links.push(Link { from: i, to: j, kind: LinkKind::Delegation });
        }
        if s.kind == StepKind::ToolResult
            && i > 0
            && let Some(j) = (0..i)
                .rev()
                .take(3)
                .find(|&j| steps[j].kind != StepKind::ToolResult && steps[j].content.contains("```"))
        {
            links.push(Link { from: j, to: i, kind: LinkKind::Execution });
        }
    }
    links
}

fn read_top(top: &Value, t: &mut Trajectory) {
    t.task = str_field(top, "question")
        .map(|s| s.trim().to_string())
        .or_else(|| t.steps.first().filter(|s| s.role == "human").map(|s| s.content.trim().to_string()))
        .unwrap_or_default();
    t.expected_output = str_field(top, "ground_truth").map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    if let Some(id) = str_field(top, "question_ID") {
        t.metadata.push(("question_id".into(), id.into_owned()));
    }
    for key in ["level", "is_correct", "is_corrected"] {
        if let Some(v) = str_field(top, key) {
            t.metadata.push((key.into(), v.into_owned()));
        }
    }
    if let Some(Value::Object(prompts)) = top.get("system_prompt") {
        for (agent, prompt) in prompts {
            t.agents.push(AgentInfo { name: agent.clone(), role: Some(value_text(prompt)) });
        }
    }
}

/// Reads `mistake_agent` / `mistake_step` (0-based index into `history`, as a string) /
/// `mistake_reason` / `labels` or `mistake_type` into `t.gold`, moving the step to its loaded
/// index (`origin[k]` is the history index of step `k`; `len` the history length).
fn read_gold(top: &Value, t: &mut Trajectory, origin: &[usize], len: usize, diagnostics: &mut Vec<Diagnostic>) {
    let Some(agent) = str_field(top, "mistake_agent") else {
        return;
    };
    let agent = agent.trim().to_string();
    let mut notes = Vec::new();
    let step = str_field(top, "mistake_step")
        .and_then(|s| gold_step(&s, origin, len).map_err(|e| notes.push(e.to_string())).ok());
    if !t.steps.iter().any(|s| s.agent.eq_ignore_ascii_case(&agent)) {
        notes.push(format!("mistake_agent {agent:?} acts at no step of the trajectory"));
    }
    diagnostics.extend(notes.into_iter().map(|message| Diagnostic { line: None, message }));
    let category = str_field(top, "labels").or_else(|| str_field(top, "mistake_type"));
    t.gold = Some(GoldLabel {
        agent,
        step,
        reason: str_field(top, "mistake_reason").map(|s| s.trim().to_string()),
        category: category.map(|s| s.trim().to_string()),
    });
}

/// The loaded index of `mistake_step` text `s` (a history index below `len`).
///
/// # Errors
/// Why the gold step is dropped: not a number, past the end, or a skipped record.
fn gold_step(s: &str, origin: &[usize], len: usize) -> Result<usize, FormatError> {
    let gold = |step: String, problem: String| FormatError::GoldStep { field: "mistake_step", step, problem };
    let n: usize = s.trim().parse().map_err(|_| gold(format!("{s:?}"), "is not a step number".into()))?;
    if n >= len {
        return Err(gold(n.to_string(), format!("is past the end of history ({len} records)")));
    }
    remap_index(origin, n).ok_or_else(|| gold(n.to_string(), "names a skipped record".into()))
}

/// The run's final answer: a `FINAL ANSWER:` line, else the last Orchestrator / assistant message
/// after the termination condition, else `None`.
fn final_answer(steps: &[Step]) -> Option<String> {
    for s in steps.iter().rev() {
        if let Some(pos) = s.content.rfind("FINAL ANSWER:") {
            let rest = s.content[pos + "FINAL ANSWER:".len()..].trim();
            let line = rest.lines().next().unwrap_or_default().trim();
            if !line.is_empty() {
                return Some(line.to_string());
            }
        }
    }
    let last = steps.last()?;
    if last.role.contains("termination") || last.agent == "Orchestrator" {
        let line = last.content.trim().lines().last().unwrap_or_default().trim();
        return (!line.is_empty()).then(|| line.to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_roles_split_into_agent_kind_and_target() {
        assert_eq!(
            parse_hand_role("Orchestrator (-> WebSurfer)"),
            ("Orchestrator".into(), StepKind::Delegation, Some("WebSurfer".into()))
        );
        assert_eq!(parse_hand_role("Orchestrator (thought)"), ("Orchestrator".into(), StepKind::Thought, None));
        assert_eq!(
            parse_hand_role("Orchestrator (termination condition)"),
            ("Orchestrator".into(), StepKind::Thought, None)
        );
        assert_eq!(parse_hand_role("human"), ("human".into(), StepKind::Message, None));
        assert_eq!(parse_hand_role("WebSurfer"), ("WebSurfer".into(), StepKind::Message, None));
    }
}
