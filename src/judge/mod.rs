//! The judge interface (docs/DESIGN.md §4): every question a method asks goes through a [`Judge`].
//!
//! Questions and answers are plain typed values ([`Question`], [`Answer`]) with a JSON form
//! ([`Question::to_json`], [`Answer::to_json`]) so that an LLM judge can send and validate them and
//! a cache can record them. The [`heuristic::HeuristicJudge`] answers every question offline and
//! deterministically from the structure ([`Context`]).

pub mod attribution;
pub mod fitted;
pub mod heuristic;
#[cfg(feature = "llm")]
pub mod llm;
pub mod session;

use std::ops::Range;

use serde_json::{Value, json};

use crate::diagnosis::{Cost, Criterion, Finding, Prose, Role, Transition};
use crate::prior::Prior;
pub use crate::substrate::Context;
pub use crate::substrate::signals;
use attribution::{Analysis, ErrorCategory, Half, Perspective, PropagationEdge, VoteTarget};

/// The verification criteria of FALAT stage 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CriterionKind {
    /// The candidate introduces the error rather than inheriting it.
    Independence,
    /// Fixing the candidate would restore `o*`.
    Sufficiency,
}

impl CriterionKind {
    /// snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            CriterionKind::Independence => "error_independence",
            CriterionKind::Sufficiency => "counterfactual_sufficiency",
        }
    }
}

/// A question a method asks. Step numbers are 0-based everywhere.
#[derive(Debug, Clone, PartialEq)]
pub enum Question {
    /// Write the task-conditioned prior `π` from the task and agent roles only.
    Prior,
    /// Summarise a phase of `M_hi` and say how suspicious it is.
    PhaseSummary {
        /// Phase number.
        phase: usize,
    },
    /// Name the steps in a range that may be the decisive error, with findings.
    RecallCandidates {
        /// Steps to examine, end exclusive.
        range: Range<usize>,
    },
    /// Label the transition on the edge from a candidate to a later step.
    LabelTransition {
        /// The candidate step.
        from: usize,
        /// The later step.
        to: usize,
    },
    /// Check one verification criterion for a candidate.
    Verify {
        /// The candidate step.
        step: usize,
        /// The criterion.
        criterion: CriterionKind,
        /// The unpruned candidates in step order, `step` among them (shared by every verify
        /// question of one run, so a judge can index them once); the JSON form lists the others.
        live: std::sync::Arc<[usize]>,
    },
    /// Re-judge a window of steps comparatively (FALAT §4): a role per step and the step that
    /// generates the error. Blind: the question does not say which step was chosen so far, so
    /// the judge cannot anchor on it.
    Roles {
        /// The window, end exclusive.
        window: Range<usize>,
    },
    /// Who&When all-at-once: the whole log in one question; name the agent and the step of the
    /// decisive error. `context` is the full log, every step headed `[step i] agent (kind)`.
    /// Valid answer: [`Answer::Attribution`] with `step` in `0..steps`.
    LocateError {
        /// The whole log with explicit 0-based step numbers.
        context: String,
    },
    /// Who&When step-by-step: is `step` (the last step of `context`) the decisive error? The
    /// log is shown up to and including `step`. Valid answer: [`Answer::Verdict`].
    IsDecisive {
        /// The step under judgement, 0-based.
        step: usize,
        /// Steps `0..=step` with explicit numbers.
        context: String,
    },
    /// Who&When binary search: which half of `range` holds the decisive error, `range.start..split`
    /// or `split..range.end`? Valid answer: [`Answer::Half`].
    LocateInRange {
        /// The steps still in question, end exclusive.
        range: Range<usize>,
        /// The first step of the second half.
        split: usize,
        /// The steps of `range` with explicit numbers, the split marked.
        context: String,
    },
    /// ECHO objective analysis: one analyst of the panel, with its perspective, attributes the
    /// failure to an agent ([`VoteTarget::Agent`]) or to one step of the named agent
    /// ([`VoteTarget::Step`]). `context` is the hierarchical context (L1 full adjacent turns, L2
    /// key decisions, L3 summaries, L4 milestones). Valid answer: [`Answer::Analysis`]; a step
    /// outside the trajectory is discarded, not an error.
    AnalystVote {
        /// The analyst's perspective.
        perspective: Perspective,
        /// Agent or step.
        target: VoteTarget,
        /// The hierarchical context text.
        context: String,
    },
    /// DeFA candidate recall in one segment: which steps of `segment` may be the decisive error,
    /// with findings? `context` holds the segment in full and the other segments summarised.
    /// Valid answer: [`Answer::Candidates`] with every step inside `segment`.
    SegmentRecall {
        /// The segment's steps, end exclusive.
        segment: Range<usize>,
        /// The segment view.
        context: String,
    },
    /// DeFA failure propagation: for each candidate, its sources (earlier steps whose error it
    /// takes up) and its effects (later steps that continued, amplified or corrected it). Valid
    /// answer: [`Answer::Propagation`], edges going forward inside the trajectory.
    TracePropagation {
        /// The candidate steps of one segment.
        candidates: Vec<usize>,
        /// The segment view with the candidates' dependency edges.
        context: String,
    },
    /// DeFA adjudication: compare the candidates along the propagation graph, pick the decisive
    /// step (the earliest whose correction would turn the failure into success) and classify it
    /// in the [`ErrorCategory`] taxonomy. Valid answer: [`Answer::Adjudication`] naming one of
    /// `candidates`.
    Adjudicate {
        /// All candidates and sources, 0-based.
        candidates: Vec<usize>,
        /// The failure propagation graph.
        edges: Vec<PropagationEdge>,
        /// Candidate evidence and the graph as text.
        context: String,
    },
}

/// The kind of a [`Question`]: which judgement it asks for. FALAT's stages ask the first six
/// (the FALAT paper's prior, coarse-to-fine recall, transition labels, verification and
/// re-search), the Who&When baselines, ECHO and DeFA the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuestionKind {
    /// The prior `π` from the task and roles.
    Prior,
    /// A phase's summary and suspicion (`M_hi`).
    PhaseSummary,
    /// The candidates of a range of steps.
    RecallCandidates,
    /// The typed label of a transition from a candidate.
    LabelTransition,
    /// One verification criterion of one candidate.
    Verify,
    /// The blind comparison of a re-search window.
    Roles,
    /// Who&When all-at-once: the decisive agent and step of the whole log.
    LocateError,
    /// Who&When step-by-step: whether one step is decisive.
    IsDecisive,
    /// Who&When binary search: which half holds the error.
    LocateInRange,
    /// ECHO: one analyst's vote.
    AnalystVote,
    /// DeFA: the candidates of one segment.
    SegmentRecall,
    /// DeFA: the propagation edges between candidates.
    TracePropagation,
    /// DeFA: the adjudication among candidates.
    Adjudicate,
}

impl QuestionKind {
    /// Every kind, in the order above.
    pub const ALL: [QuestionKind; 13] = [
        QuestionKind::Prior,
        QuestionKind::PhaseSummary,
        QuestionKind::RecallCandidates,
        QuestionKind::LabelTransition,
        QuestionKind::Verify,
        QuestionKind::Roles,
        QuestionKind::LocateError,
        QuestionKind::IsDecisive,
        QuestionKind::LocateInRange,
        QuestionKind::AnalystVote,
        QuestionKind::SegmentRecall,
        QuestionKind::TracePropagation,
        QuestionKind::Adjudicate,
    ];

    /// The snake_case name: the `kind` of the question's JSON form, the LLM judge's prompt file
    /// (`prompts/<name>.md`) and the name in dry-run listings.
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionKind::Prior => "prior",
            QuestionKind::PhaseSummary => "phase_summary",
            QuestionKind::RecallCandidates => "recall_candidates",
            QuestionKind::LabelTransition => "label_transition",
            QuestionKind::Verify => "verify",
            QuestionKind::Roles => "roles",
            QuestionKind::LocateError => "locate_error",
            QuestionKind::IsDecisive => "is_decisive",
            QuestionKind::LocateInRange => "locate_in_range",
            QuestionKind::AnalystVote => "analyst_vote",
            QuestionKind::SegmentRecall => "segment_recall",
            QuestionKind::TracePropagation => "trace_propagation",
            QuestionKind::Adjudicate => "adjudicate",
        }
    }

    /// The kind of a [`QuestionKind::as_str`] name, if any.
    pub fn parse(name: &str) -> Option<QuestionKind> {
        QuestionKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl std::fmt::Display for QuestionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Question {
    /// The question's kind.
    pub fn kind(&self) -> QuestionKind {
        match self {
            Question::Prior => QuestionKind::Prior,
            Question::PhaseSummary { .. } => QuestionKind::PhaseSummary,
            Question::RecallCandidates { .. } => QuestionKind::RecallCandidates,
            Question::LabelTransition { .. } => QuestionKind::LabelTransition,
            Question::Verify { .. } => QuestionKind::Verify,
            Question::Roles { .. } => QuestionKind::Roles,
            Question::LocateError { .. } => QuestionKind::LocateError,
            Question::IsDecisive { .. } => QuestionKind::IsDecisive,
            Question::LocateInRange { .. } => QuestionKind::LocateInRange,
            Question::AnalystVote { .. } => QuestionKind::AnalystVote,
            Question::SegmentRecall { .. } => QuestionKind::SegmentRecall,
            Question::TracePropagation { .. } => QuestionKind::TracePropagation,
            Question::Adjudicate { .. } => QuestionKind::Adjudicate,
        }
    }

    /// The JSON form: `{"kind": ..., ...fields}`.
    pub fn to_json(&self) -> Value {
        let mut v = match self {
            Question::Prior => json!({}),
            Question::PhaseSummary { phase } => json!({ "phase": phase }),
            Question::RecallCandidates { range } => {
                json!({ "from_step": range.start, "to_step": range.end })
            }
            Question::LabelTransition { from, to } => json!({ "from": from, "to": to }),
            Question::Verify { step, criterion, live } => {
                let others: Vec<usize> = live.iter().copied().filter(|o| o != step).collect();
                json!({ "step": step, "criterion": criterion.as_str(), "others": others })
            }
            Question::Roles { window } => json!({ "from_step": window.start, "to_step": window.end }),
            q => attribution::question_fields(q).unwrap_or_else(|| json!({})),
        };
        v["kind"] = json!(self.kind().as_str());
        v
    }
}

/// A judge's answer; the variant matches the question's kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// For [`Question::Prior`].
    Prior(Prior),
    /// For [`Question::PhaseSummary`].
    PhaseSummary {
        /// One line.
        summary: String,
        /// 0..=1.
        suspicion: f32,
    },
    /// For [`Question::RecallCandidates`] and [`Question::SegmentRecall`]: `(step, findings)` for
    /// each candidate in the range.
    Candidates(Vec<(usize, Vec<Finding>)>),
    /// For [`Question::LabelTransition`].
    Transition(Transition),
    /// For [`Question::Verify`].
    Criterion(Criterion),
    /// For [`Question::Roles`].
    Roles {
        /// Role per step in the window (steps without a role are left out).
        roles: Vec<(usize, Role)>,
        /// The decisive step after re-judging (may differ from the chosen one).
        decisive: usize,
        /// Why it stayed or moved, naming steps as data.
        reason: Prose,
    },
    /// For [`Question::LocateError`]: `{"agent", "step", "reason", "confidence"}`.
    Attribution {
        /// The responsible agent.
        agent: String,
        /// The decisive step, 0-based.
        step: usize,
        /// Why.
        reason: String,
        /// 0..=1.
        confidence: f32,
    },
    /// For [`Question::IsDecisive`]: `{"decisive": bool, "reason", "confidence"}`.
    Verdict {
        /// Whether the step is the decisive error.
        decisive: bool,
        /// Why.
        reason: String,
        /// 0..=1.
        confidence: f32,
    },
    /// For [`Question::LocateInRange`]: `{"half": "first"|"second", "reason"}`.
    Half {
        /// The half that holds the decisive error.
        half: Half,
        /// Why.
        reason: String,
    },
    /// For [`Question::AnalystVote`]: `{"conclusion", "agents", "step", "confidence", "reasoning",
    /// "evaluations": [{"agent", "likelihood"}]}`.
    Analysis(Analysis),
    /// For [`Question::TracePropagation`]: `{"edges": [{"from", "to", "effect"}]}`.
    Propagation {
        /// Source and effect edges of the candidates.
        edges: Vec<PropagationEdge>,
    },
    /// For [`Question::Adjudicate`]: `{"step", "category", "reason", "confidence"}`.
    Adjudication {
        /// The decisive step, 0-based, one of the candidates.
        step: usize,
        /// Its error category.
        category: ErrorCategory,
        /// Why.
        reason: String,
        /// 0..=1.
        confidence: f32,
    },
}

impl Answer {
    /// The JSON form of the answer.
    pub fn to_json(&self) -> Value {
        match self {
            Answer::Prior(p) => json!({
                "answer_type": p.answer_type.map(|a| a.as_str()),
                "constraints": p.constraints,
                "requirements": p.requirements.iter().map(|r| json!({"capability": r.capability.as_str(), "agent": r.agent})).collect::<Vec<_>>(),
                "key_terms": p.key_terms,
                "tools": p.tools,
                "procedure": p.procedure.iter().map(|s| json!({"action": s.action, "agent": s.agent})).collect::<Vec<_>>(),
            }),
            Answer::PhaseSummary { summary, suspicion } => {
                json!({ "summary": summary, "suspicion": suspicion })
            }
            Answer::Candidates(c) => json!({ "candidates": c.iter().map(|(s, f)| json!({
                "step": s,
                "findings": f.iter().map(|f| json!({"signal": f.signal.as_str(), "evidence": f.evidence.as_str(), "weight": f.weight})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>() }),
            Answer::Transition(t) => json!({ "label": t.as_str() }),
            Answer::Criterion(c) => json!({ "passed": c.passed, "evidence": c.evidence.as_str() }),
            Answer::Roles { roles, decisive, reason } => json!({
                "roles": roles.iter().map(|(s, r)| json!({"step": s, "role": r.as_str()})).collect::<Vec<_>>(),
                "decisive_step": decisive,
                "reason": reason.as_str(),
            }),
            a => attribution::answer_json(a).unwrap_or_else(|| json!({})),
        }
    }
}

/// An answer with what it cost and a warning when it is a fallback.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The answer.
    pub answer: Answer,
    /// Calls, tokens and time spent on it.
    pub cost: Cost,
    /// Set when the judge could not answer properly and fell back (shown in the diagnosis).
    pub warning: Option<String>,
}

/// Which kind of judge answers: what reports and methods may rely on without parsing a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JudgeKind {
    /// The offline heuristic judge (or one that answers as it does, with another ranker).
    Heuristic,
    /// The fitted ranker's judge (`--judge fitted`).
    Fitted,
    /// An OpenAI-compatible LLM server.
    Llm,
}

/// Answers the questions of the methods. Implementations must be deterministic for a given
/// context and question when they claim to be (the heuristic judge is; an LLM judge replaying a
/// cache is too).
pub trait Judge: Send + Sync {
    /// `heuristic` or `llm:<model>`.
    fn name(&self) -> String;

    /// The kind of judge; the offline heuristic judge unless said otherwise.
    fn kind(&self) -> JudgeKind {
        JudgeKind::Heuristic
    }

    /// Answers one question. Never fails: a judge that cannot answer falls back and says so in
    /// [`Judged::warning`].
    fn ask(&self, ctx: &Context<'_>, question: &Question) -> Judged;

    /// The probability of each step of `ctx.trajectory` being the decisive step (0-based, one per
    /// step; the system policy and the task statement get 0). Used to rank every step of a
    /// diagnosis and to state its confidence (`methods::finish`). By default the shipped
    /// fitted ranker answers ([`crate::rank::model::shipped`]), which needs no network.
    fn step_probabilities(&self, ctx: &Context<'_>) -> Vec<f32> {
        crate::rank::probabilities(ctx, crate::rank::model::shipped())
    }

    /// The fitted ranker behind [`Judge::step_probabilities`]; its calibration map turns the
    /// decisive step's probability into the diagnosis' confidence (`methods::finish`).
    /// By default the shipped one.
    fn ranker(&self) -> &crate::rank::model::RankerModel {
        crate::rank::model::shipped()
    }
}
