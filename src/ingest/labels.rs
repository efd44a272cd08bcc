//! Gold labels kept apart from the trajectories they describe (`docs/LABELS.md`).
//!
//! Two layouts are read:
//! - **AgentRx ground truth**: a JSON array of `{trajectory_id, failures[], root_cause,
//!   failure_summary}`; each failure has `failure_id`, `step_number`, `failed_agent`,
//!   `failure_category`, `step_reason`, and `root_cause.failure_id` names the decisive one.
//!   `step_number` is **1-based over the run's chat messages, counting the system message**, so
//!   it names a message, not a loaded step: one message with several `tool_calls` becomes several
//!   steps, and the label maps to the first step of that message ([`message_step`]).
//!   `trajectory_id` is the τ-bench record's `task_id`.
//! - **falat labels JSONL**: one object per line, `{"trajectory": ID, "step": N, "agent": NAME}`
//!   with optional `"reason"` and `"category"`; `step` is falat's own 0-based step index (the
//!   `index` column of `falat inspect`) and `trajectory` the id `falat inspect` prints (or, for a
//!   τ-bench record, its `task_id`).
//!
//! Pure: the caller reads the file. A bad record becomes a [`Diagnostic`] and the rest is kept.

use serde_json::Value;

use super::{FormatError, describe_value};
use crate::model::{Diagnostic, GoldLabel, Trajectory};

/// Which label layout a document uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelFormat {
    /// AgentRx `tau_ground_truth.json`.
    AgentRx,
    /// falat labels JSONL `{trajectory, step, agent}`.
    Jsonl,
}

/// Where a label puts the decisive error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelStep {
    /// falat's 0-based step index.
    Step(usize),
    /// The N-th chat message of the run, 1-based, the system message counted (AgentRx).
    Message(usize),
}

/// One label for one trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalLabel {
    /// The trajectory it belongs to: a trajectory id or a τ-bench `task_id`.
    pub trajectory: String,
    /// The decisive step.
    pub step: LabelStep,
    /// The agent responsible.
    pub agent: String,
    /// The annotator's reason.
    pub reason: Option<String>,
    /// The error category.
    pub category: Option<String>,
}

/// Labels read from one file, with what could not be read.
#[derive(Debug, Clone, Default)]
pub struct LabelSet {
    /// The labels, in file order.
    pub labels: Vec<ExternalLabel>,
    /// Records skipped and why (line numbers for JSONL).
    pub diagnostics: Vec<Diagnostic>,
}

/// Recognises a label file by its content: an AgentRx ground-truth array (first item has
/// `trajectory_id` and `root_cause`), or JSON Lines whose first object has `trajectory` and
/// `step` and no field of a trajectory format (`traj`, `history`, `messages`, `content`).
pub fn detect(text: &str) -> Option<LabelFormat> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let v: Value = serde_json::from_str(trimmed).ok()?;
        let first = v.as_array()?.first()?;
        return (first.get("trajectory_id").is_some() && first.get("root_cause").is_some())
            .then_some(LabelFormat::AgentRx);
    }
    let line = trimmed.lines().next()?;
    let v: Value = serde_json::from_str(line).ok()?;
    let o = v.as_object()?;
    let trajectory_like = ["traj", "history", "messages", "content"].iter().any(|k| o.contains_key(*k));
    (o.contains_key("trajectory") && o.contains_key("step") && !trajectory_like).then_some(LabelFormat::Jsonl)
}

/// Parses a label file of either layout (detected from the text).
///
/// # Errors
/// A message when the text is in neither layout, or the AgentRx document is not JSON.
pub fn parse(text: &str) -> Result<LabelSet, FormatError> {
    match detect(text) {
        Some(LabelFormat::AgentRx) => parse_agentrx(text),
        Some(LabelFormat::Jsonl) => Ok(parse_jsonl(text)),
        None => Err(FormatError::Shape {
            expected: "an AgentRx ground-truth array [{trajectory_id, failures, root_cause}] or JSON Lines \
                       {\"trajectory\", \"step\", \"agent\"}"
                .into(),
        }),
    }
}

fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Parses the AgentRx ground-truth layout.
///
/// # Errors
/// A message when the text is not a JSON array.
pub fn parse_agentrx(text: &str) -> Result<LabelSet, FormatError> {
    let v: Value = serde_json::from_str(text).map_err(|e| FormatError::NotJson {
        message: super::error_message(&e),
        line: e.line(),
        column: e.column(),
    })?;
    let items = v
        .as_array()
        .ok_or_else(|| FormatError::Found { expected: "an array of labels", found: describe_value(&v).into() })?;
    let mut out = LabelSet::default();
    for (i, item) in items.iter().enumerate() {
        match agentrx_label(item) {
            Ok(l) => out.labels.push(l),
            Err(e) => out.diagnostics.push(Diagnostic { line: None, message: format!("labels[{i}]: {e}; skipped") }),
        }
    }
    Ok(out)
}

fn agentrx_label(item: &Value) -> Result<ExternalLabel, FormatError> {
    let trajectory = item.get("trajectory_id").and_then(id_text).ok_or(FormatError::missing("trajectory_id"))?;
    let root = item
        .get("root_cause")
        .and_then(|r| r.get("failure_id"))
        .and_then(Value::as_u64)
        .ok_or(FormatError::missing("root_cause.failure_id"))?;
    let failures = item
        .get("failures")
        .and_then(Value::as_array)
        .ok_or(FormatError::Missing { field: "failures", what: " array" })?;
    let f = failures
        .iter()
        .find(|f| f.get("failure_id").and_then(Value::as_u64) == Some(root))
        .ok_or_else(|| FormatError::NotAmong { what: format!("root cause failure {root}"), list: "failures" })?;
    let n = f
        .get("step_number")
        .and_then(Value::as_u64)
        .ok_or(FormatError::Missing { field: "step_number", what: " (of the root cause)" })?;
    if n == 0 {
        return Err(FormatError::Field {
            field: "step_number".into(),
            what: "".into(),
            found: "0".into(),
            expected: "a 1-based step number".into(),
        });
    }
    let text = |k: &str| f.get(k).and_then(Value::as_str).map(str::to_string);
    Ok(ExternalLabel {
        trajectory,
        step: LabelStep::Message(n as usize),
        agent: text("failed_agent").unwrap_or_default(),
        // The annotator's text counts steps as AgentRx does (messages from 1, the system message
        // first); say which number that is, so that it is not read as falat's 0-based step.
        reason: text("step_reason").map(|r| format!("AgentRx message {n} (counted from 1): {}", r.trim())),
        category: text("failure_category"),
    })
}

/// Parses falat labels JSONL; a bad line is a diagnostic with its 1-based line number.
pub fn parse_jsonl(text: &str) -> LabelSet {
    let mut out = LabelSet::default();
    for (k, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |m: String| Diagnostic { line: Some(k + 1), message: format!("{m}; line skipped") };
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                out.diagnostics.push(bad(format!("not JSON: {e}")));
                continue;
            }
        };
        let Some(trajectory) = v.get("trajectory").and_then(id_text) else {
            out.diagnostics.push(bad("expected \"trajectory\" (a string or number)".into()));
            continue;
        };
        let Some(step) = v.get("step").and_then(Value::as_u64) else {
            out.diagnostics.push(bad("expected \"step\", a 0-based step index".into()));
            continue;
        };
        let text = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        out.labels.push(ExternalLabel {
            trajectory,
            step: LabelStep::Step(step as usize),
            agent: text("agent").unwrap_or_default(),
            reason: text("reason"),
            category: text("category"),
        });
    }
    out
}

/// The first step of the `n`-th chat message (1-based, system message counted). Messages are
/// the runs of consecutive steps sharing a message id (`ids.id`), which is how the chat loaders
/// split one message into its text and its tool calls.
pub fn message_step(t: &Trajectory, n: usize) -> Option<usize> {
    let mut count = 0;
    let mut prev: Option<&str> = None;
    for s in &t.steps {
        let id = s.ids.id.as_deref();
        if id.is_none() || id != prev {
            count += 1;
            if count == n {
                return Some(s.index);
            }
        }
        prev = id;
    }
    None
}

/// Whether a label's `trajectory` names this trajectory: its id, or its τ-bench `task_id`.
pub fn names(label: &str, t: &Trajectory) -> bool {
    if t.id == label {
        return true;
    }
    t.metadata.iter().any(|(k, v)| k == "task_id" && v == label)
}

/// Gives each trajectory the label that names it (a label found in the trace is replaced).
/// Returns diagnostics for labels whose step lies outside their trajectory.
pub fn apply(set: &LabelSet, trajectories: &mut [Trajectory]) -> Vec<Diagnostic> {
    apply_each(set, trajectories).0
}

/// [`apply`], also returning which label was given to which trajectory: `(trajectory index,
/// label index)` pairs, in trajectory order.
pub fn apply_each(set: &LabelSet, trajectories: &mut [Trajectory]) -> (Vec<Diagnostic>, Vec<(usize, usize)>) {
    let mut out = Vec::new();
    let mut applied = Vec::new();
    for (ti, t) in trajectories.iter_mut().enumerate() {
        let Some((li, l)) = set.labels.iter().enumerate().find(|(_, l)| names(&l.trajectory, t)) else { continue };
        let step = match l.step {
            LabelStep::Step(s) => (s < t.steps.len()).then_some(s),
            LabelStep::Message(n) => message_step(t, n),
        };
        if step.is_none() {
            out.push(Diagnostic {
                line: None,
                message: match l.step {
                    LabelStep::Step(s) => format!(
                        "label for {}: step {s} is outside its {} steps; ignored",
                        crate::text::sanitize(&t.id),
                        t.steps.len()
                    ),
                    LabelStep::Message(n) => format!(
                        "label for {}: message {n} is past its last message; ignored",
                        crate::text::sanitize(&t.id)
                    ),
                },
            });
            continue;
        }
        t.gold =
            Some(GoldLabel { agent: l.agent.clone(), step, reason: l.reason.clone(), category: l.category.clone() });
        applied.push((ti, li));
    }
    (out, applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Step, StepIds};

    fn step(i: usize, msg: &str) -> Step {
        Step { index: i, ids: StepIds { id: Some(msg.into()), ..StepIds::default() }, ..Step::default() }
    }

    #[test]
    fn message_numbers_map_past_split_messages() {
        // Messages 1, 2, 3 (two tool calls), 4.
        let t = Trajectory {
            steps: vec![step(0, "1"), step(1, "2"), step(2, "3"), step(3, "3"), step(4, "4")],
            ..Trajectory::default()
        };
        assert_eq!([1, 2, 3, 4, 5].map(|n| message_step(&t, n)), [Some(0), Some(1), Some(2), Some(4), None]);
    }

    #[test]
    fn both_layouts_are_detected_and_read() {
        let rx = r#"[{"trajectory_id": 7, "failures": [{"failure_id": 1, "step_number": 3, "failed_agent": "Assistant"},
                     {"failure_id": 2, "step_number": 5, "failed_agent": "User"}], "root_cause": {"failure_id": 2}}]"#;
        assert_eq!(detect(rx), Some(LabelFormat::AgentRx));
        let set = parse(rx).unwrap();
        assert_eq!(set.labels[0].step, LabelStep::Message(5));
        assert_eq!((set.labels[0].trajectory.as_str(), set.labels[0].agent.as_str()), ("7", "User"));
        let jl = "{\"trajectory\": \"a\", \"step\": 2, \"agent\": \"x\"}\nnot json\n{\"trajectory\": \"b\"}\n";
        assert_eq!(detect(jl), Some(LabelFormat::Jsonl));
        let set = parse(jl).unwrap();
        assert_eq!(set.labels.len(), 1);
        assert_eq!(set.diagnostics.iter().map(|d| d.line).collect::<Vec<_>>(), vec![Some(2), Some(3)]);
        assert_eq!(detect("{\"role\": \"user\", \"content\": \"hi\"}"), None);
    }

    #[test]
    fn labels_apply_by_task_id_and_reject_steps_outside() {
        let mut ts = vec![
            Trajectory {
                id: "task-7-trial-0".into(),
                metadata: vec![("task_id".into(), "7".into())],
                steps: vec![step(0, "1"), step(1, "2"), step(2, "2")],
                ..Trajectory::default()
            },
            Trajectory { id: "b".into(), steps: vec![step(0, "1")], ..Trajectory::default() },
        ];
        let set = LabelSet {
            labels: vec![
                ExternalLabel {
                    trajectory: "7".into(),
                    step: LabelStep::Message(2),
                    agent: "Assistant".into(),
                    reason: None,
                    category: None,
                },
                ExternalLabel {
                    trajectory: "b".into(),
                    step: LabelStep::Step(4),
                    agent: "x".into(),
                    reason: None,
                    category: None,
                },
            ],
            diagnostics: Vec::new(),
        };
        let d = apply(&set, &mut ts);
        assert_eq!(ts[0].gold.as_ref().and_then(|g| g.step), Some(1));
        assert!(ts[1].gold.is_none());
        assert_eq!(d.len(), 1);
    }
}
