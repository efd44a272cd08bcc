//! The attribution questions asked by ECHO, DeFA and the Who&When baselines
//! ([`crate::methods`]): their JSON forms and a validating parser for the answers. The value
//! types of the answers are plain data in [`crate::diagnosis::attribution`], re-exported here.
//!
//! The questions themselves are variants of [`super::Question`]; every one carries the `context`
//! text the method built (the view a model would see, with explicit 0-based step numbers), so an
//! LLM judge can send it as is. The task and, with ground truth, `o*` come from the judge
//! [`super::Context`], not from the context text.

use serde_json::{Value, json};

use super::{Answer, Question};
pub use crate::diagnosis::attribution::*;
use crate::diagnosis::{Finding, Signal};

pub use crate::diagnosis::ErrorCategory;

/// The JSON fields of an attribution question (without `kind`), or `None` for other kinds.
pub(super) fn question_fields(q: &Question) -> Option<Value> {
    Some(match q {
        Question::LocateError { context } => json!({ "context": context }),
        Question::IsDecisive { step, context } => json!({ "step": step, "context": context }),
        Question::LocateInRange { range, split, context } => json!({
            "from_step": range.start, "to_step": range.end, "split": split, "context": context,
        }),
        Question::AnalystVote { perspective, target, context } => json!({
            "perspective": perspective.as_str(),
            "instruction": perspective.instruction(),
            "target": target.as_str(),
            "context": context,
        }),
        Question::SegmentRecall { segment, context } => {
            json!({ "from_step": segment.start, "to_step": segment.end, "context": context })
        }
        Question::TracePropagation { candidates, context } => json!({ "candidates": candidates, "context": context }),
        Question::Adjudicate { candidates, edges, context } => json!({
            "candidates": candidates,
            "edges": edges_json(edges),
            "categories": ErrorCategory::TAXONOMY.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
            "context": context,
        }),
        _ => return None,
    })
}

fn edges_json(edges: &[PropagationEdge]) -> Vec<Value> {
    edges.iter().map(|e| json!({ "from": e.from, "to": e.to, "effect": e.effect.as_str() })).collect()
}

/// The JSON form of an attribution answer, or `None` for other kinds.
pub(super) fn answer_json(a: &Answer) -> Option<Value> {
    Some(match a {
        Answer::Attribution { agent, step, reason, confidence } => {
            json!({ "agent": agent, "step": step, "reason": reason, "confidence": confidence })
        }
        Answer::Verdict { decisive, reason, confidence } => {
            json!({ "decisive": decisive, "reason": reason, "confidence": confidence })
        }
        Answer::Half { half, reason } => json!({ "half": half.as_str(), "reason": reason }),
        Answer::Analysis(x) => json!({
            "conclusion": x.conclusion.as_str(),
            "agents": x.agents,
            "step": x.step,
            "confidence": x.confidence,
            "reasoning": x.reasoning,
            "evaluations": x.evaluations.iter().map(|e| json!({ "agent": e.agent, "likelihood": e.likelihood, "evidence": e.evidence })).collect::<Vec<_>>(),
            "alternatives": x.alternatives.iter().map(|a| json!({ "agent": a.agent, "step": a.step, "likelihood": a.likelihood, "reason": a.reason })).collect::<Vec<_>>(),
        }),
        Answer::Propagation { edges } => json!({ "edges": edges_json(edges) }),
        Answer::Adjudication { step, category, reason, confidence } => json!({
            "step": step, "category": category.as_str(), "reason": reason, "confidence": confidence,
        }),
        _ => return None,
    })
}

/// Parses and validates a judge's JSON answer to an attribution question over a trajectory of
/// `steps` steps: the shape must be the one [`Answer::to_json`] writes for the question's kind,
/// and every step must lie in the trajectory (and in the question's range where it has one).
/// Why an attribution answer cannot be used: the first invalid field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A field is absent or holds the wrong type.
    #[error("\"{field}\" must {expected}")]
    Field {
        /// The field.
        field: &'static str,
        /// What it must be or hold (`be a string`, `hold names`).
        expected: &'static str,
    },
    /// A name outside the field's allowed values (`category`, `conclusion`, `signal`, `effect`).
    #[error("unknown \"{0}\"")]
    Unknown(&'static str),
    /// `half` is neither `first` nor `second`.
    #[error("\"half\" must be first or second, not {0:?}")]
    Half(String),
    /// A step outside the trajectory.
    #[error("step {step} is outside 0..{steps}")]
    StepOutside {
        /// The step named.
        step: usize,
        /// Steps in the trajectory.
        steps: usize,
    },
    /// An adjudicated step that is not a candidate.
    #[error("step {0} is not one of the candidates")]
    NotACandidate(usize),
    /// A recalled step outside the segment asked about.
    #[error("candidate step {step} is outside {}..{}", segment.start, segment.end)]
    OutsideSegment {
        /// The step named.
        step: usize,
        /// The segment asked about.
        segment: std::ops::Range<usize>,
    },
    /// A propagation edge that goes backward or leaves the trajectory.
    #[error("edge {from} -> {to} must go forward inside 0..{steps}")]
    Edge {
        /// Its source step.
        from: usize,
        /// Its target step.
        to: usize,
        /// Steps in the trajectory.
        steps: usize,
    },
}

const fn field(field: &'static str, expected: &'static str) -> ParseError {
    ParseError::Field { field, expected }
}

/// `None` when the question is not an attribution question.
///
/// # Errors
/// A [`ParseError`] naming the first invalid field.
pub fn parse_answer(q: &Question, v: &Value, steps: usize) -> Option<Result<Answer, ParseError>> {
    Some(match q {
        Question::LocateError { .. } => parse_attribution(v, steps),
        Question::IsDecisive { .. } => parse_verdict(v),
        Question::LocateInRange { .. } => parse_half(v),
        Question::AnalystVote { .. } => parse_analysis(v, steps).map(Answer::Analysis),
        Question::SegmentRecall { segment, .. } => parse_candidates(v, segment.clone()),
        Question::TracePropagation { .. } => parse_edges(v, steps).map(|edges| Answer::Propagation { edges }),
        Question::Adjudicate { candidates, .. } => parse_adjudication(v, steps, candidates),
        _ => return None,
    })
}

fn in_range(s: usize, steps: usize) -> Result<usize, ParseError> {
    if s < steps { Ok(s) } else { Err(ParseError::StepOutside { step: s, steps }) }
}

fn parse_attribution(v: &Value, steps: usize) -> Result<Answer, ParseError> {
    Ok(Answer::Attribution {
        agent: str_of(v, "agent")?,
        step: in_range(usize_of(v, "step")?, steps)?,
        reason: str_of(v, "reason").unwrap_or_default(),
        confidence: conf_of(v)?,
    })
}

fn parse_verdict(v: &Value) -> Result<Answer, ParseError> {
    let decisive = v.get("decisive").and_then(Value::as_bool).ok_or(field("decisive", "be true or false"))?;
    Ok(Answer::Verdict { decisive, reason: str_of(v, "reason").unwrap_or_default(), confidence: conf_of(v)? })
}

fn parse_half(v: &Value) -> Result<Answer, ParseError> {
    let half = match str_of(v, "half")?.as_str() {
        "first" => Half::First,
        "second" => Half::Second,
        h => return Err(ParseError::Half(h.to_string())),
    };
    Ok(Answer::Half { half, reason: str_of(v, "reason").unwrap_or_default() })
}

fn parse_adjudication(v: &Value, steps: usize, candidates: &[usize]) -> Result<Answer, ParseError> {
    let step = in_range(usize_of(v, "step")?, steps)?;
    if !candidates.is_empty() && !candidates.contains(&step) {
        return Err(ParseError::NotACandidate(step));
    }
    let category = ErrorCategory::parse(&str_of(v, "category")?).ok_or(ParseError::Unknown("category"))?;
    let reason = str_of(v, "reason").unwrap_or_default();
    Ok(Answer::Adjudication { step, category, reason, confidence: conf_of(v)? })
}

fn str_of(v: &Value, key: &'static str) -> Result<String, ParseError> {
    v.get(key).and_then(Value::as_str).map(str::to_string).ok_or(field(key, "be a string"))
}

fn usize_of(v: &Value, key: &'static str) -> Result<usize, ParseError> {
    v.get(key).and_then(Value::as_u64).map(|n| n as usize).ok_or(field(key, "be a step number"))
}

fn conf_of(v: &Value) -> Result<f32, ParseError> {
    match v.get("confidence").and_then(Value::as_f64) {
        Some(c) if (0.0..=1.0).contains(&c) => Ok(c as f32),
        _ => Err(field("confidence", "be a number in 0..=1")),
    }
}

fn parse_analysis(v: &Value, steps: usize) -> Result<Analysis, ParseError> {
    let conclusion = Conclusion::parse(&str_of(v, "conclusion")?).ok_or(ParseError::Unknown("conclusion"))?;
    let agents = v
        .get("agents")
        .and_then(Value::as_array)
        .ok_or(field("agents", "be a list"))?
        .iter()
        .map(|a| a.as_str().map(str::to_string).ok_or(field("agents", "hold names")))
        .collect::<Result<Vec<_>, _>>()?;
    // A step outside the trajectory is kept out rather than failing the answer (ECHO A.7 discards
    // such step votes); a step that is no number is invalid.
    let step = match v.get("step") {
        None | Some(Value::Null) => None,
        Some(s) => Some(s.as_u64().ok_or(field("step", "be a step number or null"))? as usize).filter(|s| *s < steps),
    };
    let text_of = |e: &Value, key: &str| e.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let evaluations = v
        .get("evaluations")
        .and_then(Value::as_array)
        .map(|xs| {
            xs.iter()
                .filter_map(|e| {
                    Some(Evaluation {
                        agent: e.get("agent")?.as_str()?.to_string(),
                        likelihood: (e.get("likelihood")?.as_f64()? as f32).clamp(0.0, 1.0),
                        evidence: text_of(e, "evidence"),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    // Alternatives are optional; one with a step outside the trajectory keeps its agent only.
    let alternatives = v
        .get("alternatives")
        .and_then(Value::as_array)
        .map(|xs| {
            xs.iter()
                .filter_map(|a| {
                    Some(Alternative {
                        agent: a.get("agent")?.as_str()?.to_string(),
                        step: a.get("step").and_then(Value::as_u64).map(|s| s as usize).filter(|s| *s < steps),
                        likelihood: (a.get("likelihood").and_then(Value::as_f64).unwrap_or(0.0) as f32).clamp(0.0, 1.0),
                        reason: text_of(a, "reason"),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Analysis {
        conclusion,
        agents,
        step,
        confidence: conf_of(v)?,
        reasoning: str_of(v, "reasoning")?,
        evaluations,
        alternatives,
    })
}

fn parse_candidates(v: &Value, segment: std::ops::Range<usize>) -> Result<Answer, ParseError> {
    let items = v.get("candidates").and_then(Value::as_array).ok_or(field("candidates", "be a list"))?;
    let mut out = Vec::new();
    for c in items {
        let step = usize_of(c, "step")?;
        if !segment.contains(&step) {
            return Err(ParseError::OutsideSegment { step, segment: segment.clone() });
        }
        let findings = c
            .get("findings")
            .and_then(Value::as_array)
            .ok_or(field("findings", "be a list"))?
            .iter()
            .map(|f| {
                let signal = Signal::parse(&str_of(f, "signal")?).ok_or(ParseError::Unknown("signal"))?;
                let weight = f.get("weight").and_then(Value::as_f64).unwrap_or(0.5).clamp(0.0, 1.0) as f32;
                Ok(Finding { signal, evidence: str_of(f, "evidence").unwrap_or_default().into(), weight })
            })
            .collect::<Result<Vec<_>, ParseError>>()?;
        out.push((step, findings));
    }
    Ok(Answer::Candidates(out))
}

fn parse_edges(v: &Value, steps: usize) -> Result<Vec<PropagationEdge>, ParseError> {
    let items = v.get("edges").and_then(Value::as_array).ok_or(field("edges", "be a list"))?;
    items
        .iter()
        .map(|e| {
            let (from, to) = (usize_of(e, "from")?, usize_of(e, "to")?);
            if from >= to || to >= steps {
                return Err(ParseError::Edge { from, to, steps });
            }
            let effect = Effect::parse(&str_of(e, "effect")?).ok_or(ParseError::Unknown("effect"))?;
            Ok(PropagationEdge { from, to, effect })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(q: &Question, a: Answer, steps: usize) -> Result<Answer, ParseError> {
        parse_answer(q, &a.to_json(), steps).expect("an attribution question")
    }

    #[test]
    fn questions_have_a_kind_and_their_fields() {
        let q = Question::LocateInRange { range: 2..9, split: 6, context: "[step 2] A".into() };
        assert_eq!(
            q.to_json(),
            json!({"kind": "locate_in_range", "from_step": 2, "to_step": 9, "split": 6, "context": "[step 2] A"})
        );
        let q = Question::AnalystVote {
            perspective: Perspective::Skeptical,
            target: VoteTarget::Step,
            context: "ctx".into(),
        };
        let v = q.to_json();
        assert_eq!((v["kind"].as_str(), v["target"].as_str()), (Some("analyst_vote"), Some("step")));
        assert!(v.get("agent").is_none(), "a step analyst is not told the agent consensus");
        assert_eq!(v["perspective"], "skeptical");
        assert!(v["instruction"].as_str().unwrap().starts_with("Question every claim"));
        let q = Question::Adjudicate {
            candidates: vec![1, 4],
            edges: vec![PropagationEdge { from: 1, to: 4, effect: Effect::Amplified }],
            context: String::new(),
        };
        let v = q.to_json();
        assert_eq!(v["edges"], json!([{"from": 1, "to": 4, "effect": "amplified"}]));
        assert_eq!(v["categories"].as_array().unwrap().len(), ErrorCategory::TAXONOMY.len());
        let kinds: Vec<&str> = [
            Question::LocateError { context: String::new() },
            Question::IsDecisive { step: 0, context: String::new() },
            Question::SegmentRecall { segment: 0..1, context: String::new() },
            Question::TracePropagation { candidates: vec![], context: String::new() },
        ]
        .iter()
        .map(|q| q.kind().as_str())
        .collect();
        assert_eq!(kinds, vec!["locate_error", "is_decisive", "segment_recall", "trace_propagation"]);
    }

    #[test]
    fn answers_round_trip_through_json() {
        let q = Question::LocateError { context: String::new() };
        let a = Answer::Attribution { agent: "A".into(), step: 3, reason: "r".into(), confidence: 0.5 };
        assert_eq!(round_trip(&q, a.clone(), 5), Ok(a));
        let q = Question::IsDecisive { step: 2, context: String::new() };
        let a = Answer::Verdict { decisive: true, reason: "r".into(), confidence: 0.75 };
        assert_eq!(round_trip(&q, a.clone(), 5), Ok(a));
        let q = Question::LocateInRange { range: 0..4, split: 2, context: String::new() };
        let a = Answer::Half { half: Half::Second, reason: "r".into() };
        assert_eq!(round_trip(&q, a.clone(), 5), Ok(a));
        let q = Question::AnalystVote {
            perspective: Perspective::General,
            target: VoteTarget::Agent,
            context: String::new(),
        };
        let a = Answer::Analysis(Analysis {
            conclusion: Conclusion::MultiAgent,
            agents: vec!["A".into(), "B".into()],
            step: Some(4),
            confidence: 0.5,
            reasoning: "r".into(),
            evaluations: vec![
                Evaluation { agent: "A".into(), likelihood: 0.5, evidence: "step 4 states 12 unsourced".into() },
                Evaluation { agent: "B".into(), likelihood: 0.25, evidence: String::new() },
            ],
            alternatives: vec![Alternative { agent: "B".into(), step: Some(2), likelihood: 0.25, reason: "r".into() }],
        });
        assert_eq!(round_trip(&q, a.clone(), 5), Ok(a));
        let q = Question::SegmentRecall { segment: 2..4, context: String::new() };
        let f = Finding { signal: Signal::Assumption, evidence: "assumed".into(), weight: 0.5 };
        let a = Answer::Candidates(vec![(3, vec![f])]);
        assert_eq!(round_trip(&q, a.clone(), 5), Ok(a));
        let q = Question::TracePropagation { candidates: vec![1], context: String::new() };
        let a = Answer::Propagation { edges: vec![PropagationEdge { from: 1, to: 2, effect: Effect::Corrected }] };
        assert_eq!(round_trip(&q, a.clone(), 5), Ok(a));
        let q = Question::Adjudicate { candidates: vec![1, 3], edges: vec![], context: String::new() };
        let a = Answer::Adjudication {
            step: 3,
            category: ErrorCategory::VerificationFailure,
            reason: "r".into(),
            confidence: 0.25,
        };
        assert_eq!(round_trip(&q, a.clone(), 5), Ok(a));
        assert!(parse_answer(&Question::Prior, &json!({}), 5).is_none());
    }

    #[test]
    fn invalid_answers_are_named() {
        let q = Question::LocateError { context: String::new() };
        let bad = json!({"agent": "A", "step": 5, "reason": "r", "confidence": 0.5});
        assert_eq!(
            parse_answer(&q, &bad, 5).map(|r| r.map_err(|e| e.to_string())),
            Some(Err("step 5 is outside 0..5".into()))
        );
        let bad = json!({"agent": "A", "step": 1, "confidence": 1.5});
        assert_eq!(
            parse_answer(&q, &bad, 5),
            Some(Err(ParseError::Field { field: "confidence", expected: "be a number in 0..=1" }))
        );
        assert_eq!(
            parse_answer(&q, &bad, 5).map(|r| r.map_err(|e| e.to_string())),
            Some(Err("\"confidence\" must be a number in 0..=1".into()))
        );
        let q = Question::LocateInRange { range: 0..4, split: 2, context: String::new() };
        assert_eq!(parse_answer(&q, &json!({"half": "upper"}), 5), Some(Err(ParseError::Half("upper".into()))));
        let q = Question::SegmentRecall { segment: 2..4, context: String::new() };
        let bad = json!({"candidates": [{"step": 4, "findings": []}]});
        assert_eq!(
            parse_answer(&q, &bad, 9).map(|r| r.map_err(|e| e.to_string())),
            Some(Err("candidate step 4 is outside 2..4".into()))
        );
        let q = Question::TracePropagation { candidates: vec![1], context: String::new() };
        let bad = json!({"edges": [{"from": 3, "to": 1, "effect": "continued"}]});
        assert_eq!(
            parse_answer(&q, &bad, 9).map(|r| r.map_err(|e| e.to_string())),
            Some(Err("edge 3 -> 1 must go forward inside 0..9".into()))
        );
        let q = Question::Adjudicate { candidates: vec![1, 3], edges: vec![], context: String::new() };
        let bad = json!({"step": 2, "category": "hallucination", "reason": "", "confidence": 0.5});
        assert_eq!(
            parse_answer(&q, &bad, 9).map(|r| r.map_err(|e| e.to_string())),
            Some(Err("step 2 is not one of the candidates".into()))
        );
    }

    #[test]
    fn an_analyst_step_outside_the_trajectory_is_discarded_not_invalid() {
        let q = Question::AnalystVote {
            perspective: Perspective::General,
            target: VoteTarget::Agent,
            context: String::new(),
        };
        let v = json!({"conclusion": "single_agent", "agents": ["A"], "step": 40, "confidence": 0.5, "reasoning": "r"});
        match parse_answer(&q, &v, 10) {
            Some(Ok(Answer::Analysis(a))) => assert_eq!((a.step, a.agents), (None, vec!["A".to_string()])),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn names_parse() {
        for p in Perspective::ALL {
            assert_eq!(Perspective::parse(p.as_str()), Some(p));
        }
        for c in ErrorCategory::TAXONOMY {
            assert_eq!(ErrorCategory::parse(c.as_str()), Some(c));
        }
        assert_eq!(ErrorCategory::of_signal(Signal::FailedAction), ErrorCategory::ToolInvocationError);
        assert_eq!(ErrorCategory::of_signal(Signal::UserMarked), ErrorCategory::Other);
    }
}
