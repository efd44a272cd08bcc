//! Validation of the model's answers: JSON extraction from whatever the server returned, then a
//! strict check per question kind. Unknown step numbers, missing fields and wrong types are
//! rejected with a sentence naming the problem (sent back in the one repair request).

use std::ops::Range;

use serde_json::{Map, Value};

use crate::diagnosis::{Criterion, Finding, Role, Signal, Transition};
use crate::judge::{Answer, Context};
use crate::prior::{AnswerType, Capability, ExpectedStep, Prior, Requirement};
use crate::text;

/// The signals a model may name: those a reader finds in a step itself ([`Signal::STEP_LOCAL`])
/// and the questions about actions and grounding a reader answers from the step and the turns
/// and tool outputs before it (a rejected or unconfirmed state change, a value from an
/// unavailable record, a count that disagrees with its list), the run's first unverified claim of
/// completion and an action that brought nothing new. Not `user_marked`, `ranked` or
/// `blocking_change`: the last is a fact about a later call on the same object, found by the
/// offline judge, which the model is not asked for.
pub const LLM_SIGNALS: [Signal; 15] = Signal::FINDINGS;

/// Why an answer (or one question's part of it) cannot be used. Its text is what the repair
/// request tells the model and what the fallback's warning says.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Invalid {
    /// The reply holds no `{`.
    #[error("the answer contains no JSON object")]
    NoJson,
    /// The object never closes (cut by `max_tokens`, for example).
    #[error("truncated JSON: the object is not closed (the answer was cut off)")]
    Truncated,
    /// The JSON parser's complaint.
    #[error("invalid JSON: {0}")]
    Json(String),
    /// An object was expected.
    #[error("expected a JSON object, got {got}")]
    NotAnObject {
        /// What came instead (`an array`...).
        got: &'static str,
    },
    /// A required field is absent.
    #[error("missing field \"{0}\"")]
    Missing(String),
    /// A field holds the wrong type.
    #[error("\"{field}\" must be {expected}, got {got}")]
    WrongType {
        /// The field.
        field: String,
        /// What it must be (`a string`, `true or false`...).
        expected: &'static str,
        /// What it is.
        got: &'static str,
    },
    /// A text copies the prompt's placeholder or says nothing.
    #[error("\"{0}\" is empty or a placeholder; write the actual text")]
    Placeholder(String),
    /// A name outside the allowed set (`answer_type`, `capability`, `agent`, `signal`).
    #[error("unknown {what} \"{value}\"")]
    Unknown {
        /// What was named.
        what: &'static str,
        /// The name given.
        value: String,
    },
    /// A step that was not among the steps given.
    #[error("step {step} is not one of the steps given ({})", list(allowed))]
    StepNotGiven {
        /// The step named.
        step: usize,
        /// The steps that may be named.
        allowed: Vec<usize>,
    },
    /// A phase that was not among the phases given.
    #[error("phase {phase} is not one of the phases given ({})", list(allowed))]
    PhaseNotGiven {
        /// The phase named.
        phase: usize,
        /// The phases asked about.
        allowed: Vec<usize>,
    },
    /// A phase asked about has no entry.
    #[error("phase {0} is missing")]
    PhaseMissing(usize),
    /// A severity outside 1..=3.
    #[error("severity {0} is outside 1..3")]
    Severity(u64),
    /// A suspicion outside 0..=10.
    #[error("suspicion {suspicion} of phase {phase} is outside 0..10")]
    Suspicion {
        /// The phase.
        phase: usize,
        /// The value given.
        suspicion: f64,
    },
    /// An edge that was not asked about.
    #[error("edge \"{edge}\" was not asked about (edges: {})", asked.join(", "))]
    EdgeNotAsked {
        /// The edge given (`"3>9"`).
        edge: String,
        /// The edges asked about.
        asked: Vec<String>,
    },
    /// An edge asked about has no label.
    #[error("edge \"{0}\" is missing")]
    EdgeMissing(String),
    /// An edge's label is not a transition label.
    #[error("edge \"{edge}\": unknown label \"{label}\"")]
    UnknownLabel {
        /// The edge.
        edge: String,
        /// The label given.
        label: String,
    },
    /// A verdict for a step that is not a candidate.
    #[error("step \"{key}\" is not one of the candidates ({})", list(candidates))]
    NotACandidate {
        /// The key given.
        key: String,
        /// The candidates asked about.
        candidates: Vec<usize>,
    },
    /// A candidate asked about has no verdict.
    #[error("the verdict for step {0} is missing")]
    VerdictMissing(usize),
    /// A key of `roles` that is no step number.
    #[error("role key \"{0}\" is not a step number")]
    RoleKey(String),
    /// A role that is not one of the roles.
    #[error("step {step}: unknown role \"{role}\"")]
    UnknownRole {
        /// The step.
        step: usize,
        /// The role given.
        role: String,
    },
    /// An attribution answer (ECHO, DeFA, the Who&When baselines) that cannot be used.
    #[error(transparent)]
    Attribution(#[from] crate::judge::attribution::ParseError),
    /// The question is not of the kind the prompt serves (a programming error, never the model's).
    #[error("not a {0} question")]
    WrongQuestion(&'static str),
    /// The answer stopped at `max_tokens`, which likely caused the problem.
    #[error("{0} (stopped at max_tokens)")]
    StoppedAtMaxTokens(Box<Invalid>),
    /// The repair request itself failed.
    #[error("{0}")]
    RepairCall(super::client::CallError),
}

/// The finding weight of a severity 1..=3.
pub fn severity_weight(severity: u64) -> f32 {
    match severity {
        1 => 0.35,
        2 => 0.55,
        _ => 0.75,
    }
}

/// The first JSON object in a reply: code fences and prose around it are ignored.
///
/// # Errors
/// [`Invalid::NoJson`], [`Invalid::Truncated`] (the object never closes, e.g. cut by
/// `max_tokens`) or [`Invalid::Json`] with the parser's message.
pub fn extract_json(reply: &str) -> Result<Value, Invalid> {
    let start = reply.find('{').ok_or(Invalid::NoJson)?;
    let end = object_end(&reply[start..]).ok_or(Invalid::Truncated)?;
    serde_json::from_str(&reply[start..start + end]).map_err(|e| Invalid::Json(e.to_string()))
}

/// Byte length of the balanced `{...}` at the start of `s`, skipping braces inside strings.
fn object_end(s: &str) -> Option<usize> {
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    for (i, c) in s.char_indices() {
        match (in_str, c) {
            (true, _) if escaped => escaped = false,
            (true, '\\') => escaped = true,
            (true, '"') => in_str = false,
            (true, _) => {}
            (false, '"') => in_str = true,
            (false, '{') => depth += 1,
            (false, '}') => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

fn field<'a>(obj: &'a Value, name: &str) -> Result<&'a Value, Invalid> {
    let o = obj.as_object().ok_or(Invalid::NotAnObject { got: type_name(obj) })?;
    o.get(name).ok_or_else(|| Invalid::Missing(name.to_string()))
}

fn wrong(field: &str, expected: &'static str, v: &Value) -> Invalid {
    Invalid::WrongType { field: field.to_string(), expected, got: type_name(v) }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Whether a string only copies the prompt's placeholder (`...`, `###`) or says nothing.
fn is_placeholder(s: &str) -> bool {
    s.chars().all(|c| c.is_whitespace() || matches!(c, '.' | '#' | '…' | '-' | '_' | '?'))
}

fn string(v: &Value, what: &str) -> Result<String, Invalid> {
    match v.as_str() {
        Some(s) if !is_placeholder(s) => Ok(text::clip(&text::sanitize(s.trim()), 240)),
        Some(_) => Err(Invalid::Placeholder(what.to_string())),
        None => Err(wrong(what, "a string", v)),
    }
}

fn array<'a>(v: &'a Value, what: &str) -> Result<&'a Vec<Value>, Invalid> {
    v.as_array().ok_or_else(|| wrong(what, "an array", v))
}

fn object<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>, Invalid> {
    v.as_object().ok_or_else(|| wrong(what, "an object", v))
}

fn int(v: &Value, what: &str) -> Result<u64, Invalid> {
    v.as_u64().ok_or_else(|| wrong(what, "a non-negative integer", v))
}

fn boolean(v: &Value, what: &str) -> Result<bool, Invalid> {
    v.as_bool().ok_or_else(|| wrong(what, "true or false", v))
}

/// A step number that must be one of `allowed`.
fn step(v: &Value, what: &str, allowed: &[usize]) -> Result<usize, Invalid> {
    let n = int(v, what)? as usize;
    if allowed.contains(&n) { Ok(n) } else { Err(Invalid::StepNotGiven { step: n, allowed: allowed.to_vec() }) }
}

fn list(xs: &[usize]) -> String {
    let shown: Vec<String> = xs.iter().take(12).map(|x| x.to_string()).collect();
    if xs.len() > 12 { format!("{}, ...", shown.join(", ")) } else { shown.join(", ") }
}

/// The prior `π`: answer type, constraints, requirements with known agents, key terms, and
/// optionally tools and the expected procedure (each step with a known agent or null).
///
/// # Errors
/// Unknown answer type, capability or agent; wrong types; missing fields.
pub fn prior(ctx: &Context<'_>, v: &Value) -> Result<Prior, Invalid> {
    let at = string(field(v, "answer_type")?, "answer_type")?;
    let answer_type =
        AnswerType::parse(&at.to_lowercase()).ok_or(Invalid::Unknown { what: "answer_type", value: at })?;
    let constraints = strings(field(v, "constraints")?, "constraints")?;
    let key_terms = strings(field(v, "key_terms")?, "key_terms")?.into_iter().map(|k| k.to_lowercase()).collect();
    let mut requirements = Vec::new();
    for r in array(field(v, "requirements")?, "requirements")? {
        let c = string(field(r, "capability")?, "capability")?;
        let capability = Capability::parse(&c).ok_or(Invalid::Unknown { what: "capability", value: c })?;
        let agent = match field(r, "agent")? {
            Value::Null => None,
            a => {
                let name = string(a, "agent")?;
                let known = ctx.trajectory.agents.iter().find(|x| x.name.eq_ignore_ascii_case(&name));
                Some(known.ok_or(Invalid::Unknown { what: "agent", value: name })?.name.clone())
            }
        };
        requirements.push(Requirement { capability, agent });
    }
    let mut p = Prior { answer_type: Some(answer_type), constraints, requirements, key_terms, ..Prior::default() };
    // Tools and the procedure are optional in an answer: when missing they follow from the
    // agents and the requirements, as the heuristic prior does.
    p.tools = match v.get("tools") {
        Some(t) => strings(t, "tools")?,
        None => crate::prior::tools(&ctx.trajectory.agents),
    };
    p.procedure = match v.get("procedure") {
        Some(steps) => {
            let mut out = Vec::new();
            for s in array(steps, "procedure")? {
                let action = string(field(s, "action")?, "action")?;
                let agent = match s.get("agent") {
                    None | Some(Value::Null) => None,
                    Some(a) => {
                        let name = string(a, "agent")?;
                        let known = ctx.trajectory.agents.iter().find(|x| x.name.eq_ignore_ascii_case(&name));
                        Some(known.ok_or(Invalid::Unknown { what: "agent", value: name })?.name.clone())
                    }
                };
                out.push(ExpectedStep { capability: None, agent, action });
            }
            out
        }
        None => crate::prior::procedure(&p),
    };
    Ok(p)
}

fn strings(v: &Value, what: &str) -> Result<Vec<String>, Invalid> {
    array(v, what)?.iter().map(|s| string(s, what)).collect()
}

/// Phase summaries: `(phase, Answer::PhaseSummary)` for the phases given (suspicion 0..=10 is
/// scaled to 0..=1). Phases not answered are left out (the caller reports them missing).
///
/// # Errors
/// Wrong shape, an unknown phase number, a suspicion out of range.
pub fn phases(_ctx: &Context<'_>, ids: &[usize], v: &Value) -> Result<Vec<(usize, Answer)>, Invalid> {
    let mut out: Vec<(usize, Answer)> = Vec::new();
    for item in array(field(v, "phases")?, "phases")? {
        let p = int(field(item, "phase")?, "phase")? as usize;
        if !ids.contains(&p) {
            return Err(Invalid::PhaseNotGiven { phase: p, allowed: ids.to_vec() });
        }
        let summary = string(field(item, "summary")?, "summary")?;
        let s = field(item, "suspicion")?;
        let suspicion = s.as_f64().ok_or_else(|| wrong("suspicion", "a number", s))?;
        if !(0.0..=10.0).contains(&suspicion) {
            return Err(Invalid::Suspicion { phase: p, suspicion });
        }
        if !out.iter().any(|(q, _)| *q == p) {
            out.push((p, Answer::PhaseSummary { summary, suspicion: (suspicion / 10.0) as f32 }));
        }
    }
    Ok(out)
}

/// Candidates named by a recall: `(step, findings)` for steps among `shown`, in step order.
///
/// # Errors
/// Wrong shape, a step not shown, an unknown signal, a severity outside 1..=3.
pub fn candidates(shown: &[usize], v: &Value) -> Result<Vec<(usize, Vec<Finding>)>, Invalid> {
    let mut out: Vec<(usize, Vec<Finding>)> = Vec::new();
    for item in array(field(v, "candidates")?, "candidates")? {
        let s = step(field(item, "step")?, "step", shown)?;
        let name = string(field(item, "signal")?, "signal")?;
        let signal = Signal::parse(&name)
            .filter(|x| LLM_SIGNALS.contains(x))
            .ok_or(Invalid::Unknown { what: "signal", value: name })?;
        let evidence = string(field(item, "evidence")?, "evidence")?;
        let sev = int(field(item, "severity")?, "severity")?;
        if !(1..=3).contains(&sev) {
            return Err(Invalid::Severity(sev));
        }
        let f = Finding { signal, evidence: text::clip(&evidence, 200).into(), weight: severity_weight(sev) };
        match out.iter_mut().find(|(x, _)| *x == s) {
            Some((_, fs)) if fs.iter().any(|g| g.signal == f.signal) => {}
            Some((_, fs)) => fs.push(f),
            None => out.push((s, vec![f])),
        }
    }
    out.sort_by_key(|(s, _)| *s);
    Ok(out)
}

/// Transition labels for the edges `keys` (`"from>to"`): one result per key.
///
/// # Errors
/// Wrong shape or an edge that was not asked about.
pub fn labels(keys: &[String], v: &Value) -> Result<Vec<Result<Transition, Invalid>>, Invalid> {
    let obj = object(field(v, "labels")?, "labels")?;
    if let Some(k) = obj.keys().find(|k| !keys.contains(k)) {
        return Err(Invalid::EdgeNotAsked { edge: k.clone(), asked: keys.to_vec() });
    }
    Ok(keys
        .iter()
        .map(|k| {
            let l = obj.get(k).ok_or_else(|| Invalid::EdgeMissing(k.clone()))?;
            let s = string(l, k)?;
            Transition::parse(&s).ok_or_else(|| Invalid::UnknownLabel { edge: k.clone(), label: s })
        })
        .collect())
}

/// The two verdicts of one candidate: `(independence, sufficiency)`, or why they are invalid.
pub type Verdict = Result<(Criterion, Criterion), Invalid>;

/// Verdicts per candidate step: `(independence, sufficiency)` or why it is invalid.
///
/// # Errors
/// Wrong shape or a step that is not a candidate.
pub fn verdicts(steps: &[usize], v: &Value) -> Result<Vec<Verdict>, Invalid> {
    let obj = object(field(v, "verdicts")?, "verdicts")?;
    if let Some(k) = obj.keys().find(|k| !steps.iter().any(|s| s.to_string() == **k)) {
        return Err(Invalid::NotACandidate { key: k.clone(), candidates: steps.to_vec() });
    }
    Ok(steps
        .iter()
        .map(|s| {
            let item = obj.get(&s.to_string()).ok_or(Invalid::VerdictMissing(*s))?;
            let ind = boolean(field(item, "independent")?, "independent")?;
            let suf = boolean(field(item, "sufficient")?, "sufficient")?;
            let why = string(field(item, "why")?, "why")?;
            Ok((
                Criterion { passed: ind, evidence: why.as_str().into() },
                Criterion { passed: suf, evidence: why.into() },
            ))
        })
        .collect())
}

/// Roles in a window, the decisive step (in the window) and the reason.
///
/// # Errors
/// Wrong shape, a step outside the window, an unknown role.
pub fn roles(window: Range<usize>, v: &Value) -> Result<Answer, Invalid> {
    let steps: Vec<usize> = window.clone().collect();
    let obj = object(field(v, "roles")?, "roles")?;
    let mut roles = Vec::new();
    for (k, r) in obj {
        let s: usize = k.trim().parse().map_err(|_| Invalid::RoleKey(k.clone()))?;
        if !window.contains(&s) {
            return Err(Invalid::StepNotGiven { step: s, allowed: steps.clone() });
        }
        let name = string(r, k)?;
        if name.eq_ignore_ascii_case("none") {
            continue;
        }
        roles.push((s, Role::parse(&name).ok_or(Invalid::UnknownRole { step: s, role: name })?));
    }
    roles.sort_by_key(|(s, _)| *s);
    let decisive = step(field(v, "decisive_step")?, "decisive_step", &steps)?;
    let reason = string(field(v, "reason")?, "reason")?;
    Ok(Answer::Roles { roles, decisive, reason: reason.into() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn extraction_ignores_fences_and_prose() {
        let v = extract_json("Sure! Here it is:\n```json\n{\"a\": \"x}\", \"b\": {\"c\": 1}}\n```\nHope it helps.")
            .unwrap();
        assert_eq!(v, json!({"a": "x}", "b": {"c": 1}}));
    }

    #[test]
    fn truncated_and_missing_json_are_rejected() {
        assert!(extract_json("{\"candidates\": [{\"step\": 3, \"evid").unwrap_err().to_string().contains("truncated"));
        assert!(extract_json("I think step 3 is wrong.").unwrap_err().to_string().contains("no JSON object"));
        assert!(extract_json("{\"a\": 1,}").unwrap_err().to_string().contains("invalid JSON"));
    }

    #[test]
    fn out_of_range_steps_are_rejected() {
        let v = json!({"candidates": [{"step": 99, "signal": "assumption", "evidence": "guess", "severity": 2}]});
        assert!(candidates(&[2, 3, 4], &v).unwrap_err().to_string().contains("step 99 is not one of the steps given"));
        let r = json!({"roles": {"12": "SYMPTOM"}, "decisive_step": 5, "reason": "x"});
        assert!(roles(3..8, &r).unwrap_err().to_string().contains("step 12"));
        let r = json!({"roles": {"5": "ROOT_CAUSE"}, "decisive_step": 9, "reason": "x"});
        assert!(roles(3..8, &r).unwrap_err().to_string().contains("step 9"));
        let l = json!({"labels": {"3>5": "follow_up", "3>9": "dead_end"}});
        assert!(labels(&["3>5".into()], &l).unwrap_err().to_string().contains("3>9"));
    }

    #[test]
    fn wrong_types_and_missing_fields_are_rejected() {
        let v = json!({"candidates": [{"step": "3", "signal": "assumption", "evidence": "x", "severity": 2}]});
        assert!(candidates(&[3], &v).unwrap_err().to_string().contains("must be a non-negative integer, got a string"));
        let v = json!({"candidates": [{"step": 3, "signal": "assumption", "severity": 2}]});
        assert!(candidates(&[3], &v).unwrap_err().to_string().contains("missing field \"evidence\""));
        let v = json!({"candidates": [{"step": 3, "signal": "bad_vibes", "evidence": "x", "severity": 2}]});
        assert!(candidates(&[3], &v).unwrap_err().to_string().contains("unknown signal"));
        let v = json!({"verdicts": {"3": {"independent": "yes", "sufficient": true, "why": "x"}}});
        let got = verdicts(&[3, 4], &v).unwrap();
        assert!(got[0].as_ref().unwrap_err().to_string().contains("true or false"));
        assert!(got[1].as_ref().unwrap_err().to_string().contains("missing"));
        assert!(verdicts(&[3], &json!({"verdicts": []})).unwrap_err().to_string().contains("must be an object"));
        let v = json!({"verdicts": {"3": {"independent": true, "sufficient": true, "why": "..."}}});
        assert!(verdicts(&[3], &v).unwrap()[0].as_ref().unwrap_err().to_string().contains("placeholder"));
    }

    #[test]
    fn valid_answers_are_read() {
        let v = json!({"candidates": [
            {"step": 4, "signal": "unsourced_value", "evidence": "states 12", "severity": 3},
            {"step": 2, "signal": "assumption", "evidence": "guesses", "severity": 1},
            {"step": 4, "signal": "assumption", "evidence": "assumes", "severity": 1},
        ]});
        let c = candidates(&[2, 4], &v).unwrap();
        assert_eq!(c.iter().map(|(s, f)| (*s, f.len())).collect::<Vec<_>>(), vec![(2, 1), (4, 2)]);
        assert_eq!(c[1].1[0].weight, severity_weight(3));
        let l = labels(&["1>2".into(), "1>4".into()], &json!({"labels": {"1>2": "correction"}})).unwrap();
        assert_eq!(l[0], Ok(Transition::Correction));
        assert!(l[1].is_err());
        let r = roles(
            3..6,
            &json!({"roles": {"3": "NONE", "4": "ROOT_CAUSE", "5": "symptom"}, "decisive_step": 4, "reason": "r"}),
        );
        assert_eq!(
            r.unwrap(),
            Answer::Roles { roles: vec![(4, Role::RootCause), (5, Role::Symptom)], decisive: 4, reason: "r".into() }
        );
    }
}
