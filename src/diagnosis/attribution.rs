//! Value types of the attribution methods' answers (ECHO's analyses and votes, DeFA's
//! propagation edges, the binary search's halves): plain data that diagnoses and reports carry.
//! The questions that produce them and their JSON forms live in the judge
//! (`judge::attribution`).

use std::fmt;

/// Candidates one DeFA segment recall names at most (the same budget for every judge, so that
/// segmentation decides what each recall can name).
pub const SEGMENT_CANDIDATES: usize = 4;

/// The six analyst perspectives of the ECHO panel (the ECHO paper, §3.2 and A.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Perspective {
    /// Attributes only on strong, direct evidence; prefers a single agent.
    Conservative,
    /// Attributes on weaker evidence and early; open to several agents sharing the fault.
    Liberal,
    /// Weighs raw evidence most: values, their sources, tool outputs.
    DetailFocused,
    /// Weighs recurring process failures most: repeated actions, ignored errors, bad hand-offs.
    PatternFocused,
    /// Doubts claims without consequences; discounts hedges and steps nothing builds on.
    Skeptical,
    /// Balanced: the most impactful mistake.
    General,
}

impl Perspective {
    /// All six, in the paper's order.
    pub const ALL: [Perspective; 6] = [
        Perspective::Conservative,
        Perspective::Liberal,
        Perspective::DetailFocused,
        Perspective::PatternFocused,
        Perspective::Skeptical,
        Perspective::General,
    ];

    /// The name used in JSON and reports (`detail-focused`...).
    pub fn as_str(self) -> &'static str {
        match self {
            Perspective::Conservative => "conservative",
            Perspective::Liberal => "liberal",
            Perspective::DetailFocused => "detail-focused",
            Perspective::PatternFocused => "pattern-focused",
            Perspective::Skeptical => "skeptical",
            Perspective::General => "general",
        }
    }

    /// Parses [`Perspective::as_str`].
    pub fn parse(s: &str) -> Option<Perspective> {
        Perspective::ALL.into_iter().find(|p| p.as_str() == s.trim())
    }

    /// The focus instruction an LLM analyst with this perspective is given (ECHO A.5).
    pub fn instruction(self) -> &'static str {
        match self {
            Perspective::Conservative => {
                "Attribute only on clear, direct evidence; prefer a single responsible agent; lower your confidence when in doubt."
            }
            Perspective::Liberal => {
                "Consider subtle and indirect contributions; attribute early deviations; several agents may share the fault."
            }
            Perspective::DetailFocused => {
                "Check the concrete details: values, their sources, tool outputs, code and its results."
            }
            Perspective::PatternFocused => {
                "Look for recurring patterns: repeated failing actions, ignored errors, poor hand-offs across the run."
            }
            Perspective::Skeptical => {
                "Question every claim; discount hedges and steps whose output nothing uses; trace errors to their origin."
            }
            Perspective::General => "Take a balanced view and name the mistake with the largest impact on the outcome.",
        }
    }
}

impl fmt::Display for Perspective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an ECHO analyst is asked to attribute. ECHO's decoupled analysis (the ECHO paper, A.1 and
/// "The Question of Unifying or Decoupling Objective Analyses") asks the agent and the step in
/// separate, independent analyses: a step analyst is not told which agent the agent analysts
/// found. [`VoteTarget::Both`] is the unified analysis the paper compares against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VoteTarget {
    /// Which agent is responsible.
    Agent,
    /// Which step is the decisive error (any agent's).
    Step,
    /// Agent and step in one analysis (the unified variant).
    Both,
}

impl VoteTarget {
    /// `agent`, `step`, `both`.
    pub fn as_str(self) -> &'static str {
        match self {
            VoteTarget::Agent => "agent",
            VoteTarget::Step => "step",
            VoteTarget::Both => "both",
        }
    }
}

/// One agent's evaluation by an analyst (ECHO A.5: "individual agent evaluations with error
/// likelihoods and evidence").
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// The agent.
    pub agent: String,
    /// Likelihood in 0..=1 that it made the decisive error.
    pub likelihood: f32,
    /// The evidence for it, one line (empty when the analyst gave none).
    pub evidence: String,
}

/// An alternative hypothesis of an analyst (ECHO A.5 output schema): another agent and step that
/// might be responsible, with its likelihood.
#[derive(Debug, Clone, PartialEq)]
pub struct Alternative {
    /// The agent of the alternative.
    pub agent: String,
    /// Its step, 0-based, when named.
    pub step: Option<usize>,
    /// Likelihood in 0..=1.
    pub likelihood: f32,
    /// Why, one line.
    pub reason: String,
}

/// The conclusion type of an ECHO analysis (consensus votes per type first, ECHO A.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Conclusion {
    /// One agent is responsible.
    SingleAgent,
    /// Several agents share the fault.
    MultiAgent,
    /// No agent is clearly at fault.
    NoClearFault,
}

impl Conclusion {
    /// All types, in tie-break order (a tie goes to the earlier one).
    pub const ALL: [Conclusion; 3] = [Conclusion::SingleAgent, Conclusion::MultiAgent, Conclusion::NoClearFault];

    /// `single_agent`, `multi_agent`, `no_clear_fault`.
    pub fn as_str(self) -> &'static str {
        match self {
            Conclusion::SingleAgent => "single_agent",
            Conclusion::MultiAgent => "multi_agent",
            Conclusion::NoClearFault => "no_clear_fault",
        }
    }

    /// Parses [`Conclusion::as_str`].
    pub fn parse(s: &str) -> Option<Conclusion> {
        Conclusion::ALL.into_iter().find(|c| c.as_str() == s.trim())
    }
}

/// One analyst's answer to [`Question::AnalystVote`] (ECHO A.5 output schema).
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// Single-agent, multi-agent or no clear fault.
    pub conclusion: Conclusion,
    /// The attributed agents, most responsible first (one for a single-agent conclusion).
    pub agents: Vec<String>,
    /// The decisive step, 0-based, when the analyst names one.
    pub step: Option<usize>,
    /// Confidence in 0..=1; the consensus drops analyses under 0.3.
    pub confidence: f32,
    /// Why, in a few sentences.
    pub reasoning: String,
    /// Error likelihood and evidence per agent, most likely first.
    pub evaluations: Vec<Evaluation>,
    /// Alternative hypotheses, most likely first.
    pub alternatives: Vec<Alternative>,
}

/// What a later step did with a candidate's effect (DeFA failure propagation, the DeFA paper §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Effect {
    /// It adopted the effect and went on with it.
    Continued,
    /// It made it worse or added a deviation of its own on top.
    Amplified,
    /// It repaired it.
    Corrected,
}

impl Effect {
    /// `continued`, `amplified`, `corrected`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Continued => "continued",
            Effect::Amplified => "amplified",
            Effect::Corrected => "corrected",
        }
    }

    /// Parses [`Effect::as_str`].
    pub fn parse(s: &str) -> Option<Effect> {
        [Effect::Continued, Effect::Amplified, Effect::Corrected].into_iter().find(|e| e.as_str() == s.trim())
    }
}

/// An edge of the DeFA failure propagation graph: step `to` did `effect` with what `from` caused.
/// Steps are 0-based, `from < to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PropagationEdge {
    /// The earlier step (a candidate or a source of one).
    pub from: usize,
    /// The later step.
    pub to: usize,
    /// What the later step did with the effect.
    pub effect: Effect,
}

/// The half of a range named by [`Question::LocateInRange`] (Who&When binary search).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Half {
    /// `range.start..split`.
    First,
    /// `split..range.end`.
    Second,
}

impl Half {
    /// `first`, `second`.
    pub fn as_str(self) -> &'static str {
        match self {
            Half::First => "first",
            Half::Second => "second",
        }
    }
}
