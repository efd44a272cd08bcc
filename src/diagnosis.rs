//! The diagnosis every method returns, and the records it is made of: candidates with their
//! pruning and verification, roles, transition labels and costs (docs/DESIGN.md §2, "The result").

use std::fmt;
use std::time::Duration;

pub mod ablation;
pub mod attribution;
pub mod details;
pub mod explanation;

/// The purpose of a phase of the hierarchy (`M_hi`, FALAT §1); `hierarchy` finds it and re-exports
/// it, the diagnosis carries it in [`details::PhaseSearched`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Purpose {
    /// Planning or re-planning.
    Plan,
    /// Gathering information (search, files, tool outputs).
    Gather,
    /// Computing (code and its execution).
    Compute,
    /// Checking results.
    Verify,
    /// Giving the answer and ending.
    Answer,
    /// Work handed to one delegate.
    Delegated,
}

impl Purpose {
    /// Lower-case name for display.
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Plan => "plan",
            Purpose::Gather => "gather",
            Purpose::Compute => "compute",
            Purpose::Verify => "verify",
            Purpose::Answer => "answer",
            Purpose::Delegated => "delegated",
        }
    }
}

pub use details::Detail;
pub use explanation::{Caveat, Claim, Explanation, Part, Prose, Rule, Standing};

/// The six transition labels of FALAT stage 2, on an edge from a candidate to a later step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transition {
    /// Normal progress, or the later step adopts the candidate's output (and its error).
    FollowUp,
    /// The later step repeats the candidate without new evidence.
    Redundancy,
    /// The later step does not use the candidate's output.
    NoInfluence,
    /// The later step introduces a new deviation or transforms the upstream one.
    ErrorShift,
    /// The later step repairs the upstream deviation.
    Correction,
    /// The candidate's output is never used again.
    DeadEnd,
}

impl Transition {
    /// All labels.
    pub const ALL: [Transition; 6] = [
        Transition::FollowUp,
        Transition::Redundancy,
        Transition::NoInfluence,
        Transition::ErrorShift,
        Transition::Correction,
        Transition::DeadEnd,
    ];

    /// The snake_case label of the paper (`follow_up`, `dead_end`...).
    pub fn as_str(self) -> &'static str {
        match self {
            Transition::FollowUp => "follow_up",
            Transition::Redundancy => "redundancy",
            Transition::NoInfluence => "no_influence",
            Transition::ErrorShift => "error_shift",
            Transition::Correction => "correction",
            Transition::DeadEnd => "dead_end",
        }
    }

    /// Parses the snake_case label.
    pub fn parse(s: &str) -> Option<Transition> {
        Transition::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The role of a step around the decisive error (FALAT stage 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// The step that generates the error: the decisive step.
    RootCause,
    /// A step that inherits and passes on the error.
    Propagation,
    /// A step where the error becomes visible (a traceback, a wrong final answer).
    Symptom,
    /// A step that made the error more likely without generating it.
    Contributing,
}

impl Role {
    /// The upper-case name used in reports (`ROOT_CAUSE`...).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::RootCause => "ROOT_CAUSE",
            Role::Propagation => "PROPAGATION",
            Role::Symptom => "SYMPTOM",
            Role::Contributing => "CONTRIBUTING",
        }
    }

    /// Parses the upper-case name (case-insensitive).
    pub fn parse(s: &str) -> Option<Role> {
        let s = s.trim().to_ascii_uppercase();
        [Role::RootCause, Role::Propagation, Role::Symptom, Role::Contributing].into_iter().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a step is a candidate for the decisive error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Signal {
    /// It states values that appear nowhere before (not in the task, no tool output).
    UnsourcedValue,
    /// It rests on assumptions, placeholders or made-up data.
    Assumption,
    /// Its code or tool call failed.
    FailedAction,
    /// It goes on as if an earlier tool error had not happened; or it tries a state change again,
    /// unchecked, after a failure that left the change's outcome unknown (a time-out: "the charge
    /// may still have been processed"; docs/METHODS.md, "Actions").
    IgnoredToolError,
    /// It deviates from the prior `π` (irrelevant target, wrong answer type, missing capability).
    PriorDeviation,
    /// It hands work to an agent that cannot do it, or with an instruction that cannot work.
    WrongDelegation,
    /// It answers or ends before the answer was established or checked.
    PrematureAnswer,
    /// It repeats an action that already failed.
    RepeatedFailure,
    /// The wrong value of the final output first appears here (needs `o*`).
    WrongValueOrigin,
    /// It changes the state of an object, and a later state-changing call on the same object then
    /// fails: the operations ran in an order that blocked the later one.
    BlockingChange,
    /// The run's first assertion of its final value or of the task being done, where what it
    /// asserts appears in no observation before it (docs/METHODS.md, "Assertion").
    UnverifiedAssertion,
    /// A worker action the plan depended on whose observation brings nothing new: empty, or the
    /// same as an earlier one (docs/METHODS.md, "Progress").
    NoProgress,
    /// It is a state-changing call (it cancels, modifies, sends, writes) that the tool rejected:
    /// its result is an error.
    RejectedAction,
    /// It changes state without the user's explicit confirmation, where the system policy asks
    /// for that confirmation before such actions: no user turn confirms after the agent's last
    /// question before the call.
    UnconfirmedAction,
    /// It offers or uses a value (an item's identifier) that only a record the tool marked
    /// unavailable (`"available": false`, `"in_stock": false`...) gave.
    UnavailableValue,
    /// It tells a count that disagrees with the list it counts in the tool outputs since the
    /// last user turn (neither the list's length nor the size of one of its subsets).
    CountMismatch,
    /// It tells the user an answer right after a lookup's result and uses none of the values
    /// that result returned: what it tells does not come from what the tool said (a misread
    /// result); also a report of an outcome its own tool output denies, and a date the user gave
    /// told back against the record just read. Found by the offline judge only: the step ranker
    /// has no feature for it and the LLM judge is not asked for it (`docs/METHODS.md`,
    /// "Grounding").
    IgnoredResult,
    /// It calls a tool with a value the user did not give, where the user gave a near one: an
    /// identifier with two digits swapped or one mistyped, a date with another month, day or year
    /// (`docs/METHODS.md`, "Actions"); also a call or message on another record than the one
    /// described, a record picked from a lookup's list against the date, name or code the user
    /// gave while another record holds it, a change of a record whose lookup breaks a requirement
    /// the user insisted on, and a change of the sibling of the object the request names, both
    /// listed by the agent (a file named but for one part, the neighbouring row of a commit
    /// listing; "Targets").
    /// Found by the offline judge only, as [`Signal::IgnoredResult`].
    ArgumentMismatch,
    /// It claims the whole test suite passes ("I ran the full test suite", "all tests pass") when
    /// the last test run before it ran a subset (`pytest -k …`, `cargo test NAME`; "87
    /// deselected") and did not fail (`docs/METHODS.md`, "Instructions"). Found by the offline
    /// judge only, as [`Signal::IgnoredResult`].
    PartialCheck,
    /// It reports on what an instruction asked to be searched for, after searches that all kept
    /// to some of the folders the instruction names (`Grep` in `app/` only, when `workers/` and
    /// `scripts/` were asked for too; `docs/METHODS.md`, "Instructions"). Offline only, as
    /// [`Signal::PartialCheck`].
    PartialSearch,
    /// It reports on its own searches, naming some of the files their outputs list and leaving
    /// out others, while saying nothing more was found or counting fewer ("4 places" after a
    /// search that listed 7 files; `docs/METHODS.md`, "Instructions"). Offline only, as
    /// [`Signal::PartialSearch`].
    OmittedHits,
    /// It deletes, moves or edits a path that a user turn before it said not to touch ("Do NOT
    /// modify or delete any existing migration in migrations/versions/"), where no later user
    /// turn allowed it (`docs/METHODS.md`, "Instructions"). Offline only, as
    /// [`Signal::IgnoredResult`].
    ForbiddenChange,
    /// It makes, by another tool or command, the change of a call the user refused at the
    /// permission prompt (an edit refused, then `sed -i` on the same file), with no user turn
    /// allowing it in between (`docs/METHODS.md`, "Instructions"). Offline only, as
    /// [`Signal::IgnoredResult`].
    RefusalBypassed,
    /// Its code prints or assigns under the name of one statistic a value it computes as another
    /// (`print("median =", x.mean())`; `docs/METHODS.md`, "Instructions"). Offline only, as
    /// [`Signal::IgnoredResult`].
    WrongStatistic,
    /// It writes out a calculation whose result is wrong: "€2,000 − €640 − €520 = €1,040", which
    /// comes to 840 (`docs/METHODS.md`, "Grounding"). Offline only, as
    /// [`Signal::IgnoredResult`].
    Miscalculation,
    /// Marked by the user.
    UserMarked,
    /// Ranked among the most likely decisive steps by the fitted step ranker (its evidence gives
    /// the probability and the rank).
    Ranked,
}

impl Signal {
    /// The signals the step ranker has one feature for, each shown by a step in its own content
    /// and its own tool result: every machine signal but [`Signal::BlockingChange`] (a fact about
    /// a later call on the same object, which holds in too few labelled runs to fit a weight for
    /// it), the action and grounding signals ([`Signal::RejectedAction`],
    /// [`Signal::UnconfirmedAction`], [`Signal::UnavailableValue`], [`Signal::CountMismatch`]:
    /// newer than the fitted model, the ranker does not read them, so its feature vector keeps
    /// its length; the offline judge uses them with their hand-set weights) and
    /// [`Signal::Ranked`]. An LLM judge may name these and the action and grounding signals
    /// (`judge::llm::validate::LLM_SIGNALS`).
    pub const STEP_LOCAL: [Signal; 9] = [
        Signal::UnsourcedValue,
        Signal::Assumption,
        Signal::FailedAction,
        Signal::IgnoredToolError,
        Signal::PriorDeviation,
        Signal::WrongDelegation,
        Signal::PrematureAnswer,
        Signal::RepeatedFailure,
        Signal::WrongValueOrigin,
    ];

    /// The findings a reader makes from a step and what came before it: [`Signal::STEP_LOCAL`],
    /// then the findings about actions, grounding, assertions and progress (docs/METHODS.md), in
    /// this order. The LLM judge may name these, and the step ranker has one feature for each, in
    /// this order. Not `user_marked`, `ranked` or `blocking_change` (a fact about a later call on
    /// the same object, too rare in the labelled runs to fit a weight).
    pub const FINDINGS: [Signal; 15] = [
        Signal::UnsourcedValue,
        Signal::Assumption,
        Signal::FailedAction,
        Signal::IgnoredToolError,
        Signal::PriorDeviation,
        Signal::WrongDelegation,
        Signal::PrematureAnswer,
        Signal::RepeatedFailure,
        Signal::WrongValueOrigin,
        Signal::RejectedAction,
        Signal::UnconfirmedAction,
        Signal::UnavailableValue,
        Signal::CountMismatch,
        Signal::UnverifiedAssertion,
        Signal::NoProgress,
    ];

    /// Signals from the one that best names a root error to the one that least does.
    pub const PRIORITY: [Signal; 27] = [
        Signal::UserMarked,
        Signal::CountMismatch,
        Signal::Miscalculation,
        Signal::WrongStatistic,
        Signal::OmittedHits,
        Signal::IgnoredResult,
        Signal::ArgumentMismatch,
        Signal::RefusalBypassed,
        Signal::ForbiddenChange,
        Signal::UnavailableValue,
        Signal::UnsourcedValue,
        Signal::WrongValueOrigin,
        Signal::Assumption,
        Signal::WrongDelegation,
        Signal::PriorDeviation,
        Signal::BlockingChange,
        Signal::UnconfirmedAction,
        Signal::RejectedAction,
        Signal::IgnoredToolError,
        Signal::PartialCheck,
        Signal::PartialSearch,
        Signal::UnverifiedAssertion,
        Signal::PrematureAnswer,
        Signal::NoProgress,
        Signal::FailedAction,
        Signal::RepeatedFailure,
        Signal::Ranked,
    ];

    /// The snake_case name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::UnsourcedValue => "unsourced_value",
            Signal::Assumption => "assumption",
            Signal::FailedAction => "failed_action",
            Signal::IgnoredToolError => "ignored_tool_error",
            Signal::PriorDeviation => "prior_deviation",
            Signal::WrongDelegation => "wrong_delegation",
            Signal::PrematureAnswer => "premature_answer",
            Signal::RepeatedFailure => "repeated_failure",
            Signal::WrongValueOrigin => "wrong_value_origin",
            Signal::BlockingChange => "blocking_change",
            Signal::UnverifiedAssertion => "unverified_assertion",
            Signal::NoProgress => "no_progress",
            Signal::RejectedAction => "rejected_action",
            Signal::UnconfirmedAction => "unconfirmed_action",
            Signal::UnavailableValue => "unavailable_value",
            Signal::CountMismatch => "count_mismatch",
            Signal::IgnoredResult => "ignored_result",
            Signal::ArgumentMismatch => "argument_mismatch",
            Signal::PartialCheck => "partial_check",
            Signal::ForbiddenChange => "forbidden_change",
            Signal::PartialSearch => "partial_search",
            Signal::OmittedHits => "omitted_hits",
            Signal::RefusalBypassed => "refusal_bypassed",
            Signal::WrongStatistic => "wrong_statistic",
            Signal::Miscalculation => "miscalculation",
            Signal::UserMarked => "user_marked",
            Signal::Ranked => "ranked",
        }
    }

    /// Parses the snake_case name.
    pub fn parse(s: &str) -> Option<Signal> {
        use Signal::*;
        [
            UnsourcedValue,
            Assumption,
            FailedAction,
            IgnoredToolError,
            PriorDeviation,
            WrongDelegation,
            PrematureAnswer,
            RepeatedFailure,
            WrongValueOrigin,
            BlockingChange,
            UnverifiedAssertion,
            NoProgress,
            RejectedAction,
            UnconfirmedAction,
            UnavailableValue,
            CountMismatch,
            IgnoredResult,
            ArgumentMismatch,
            PartialCheck,
            PartialSearch,
            OmittedHits,
            ForbiddenChange,
            RefusalBypassed,
            WrongStatistic,
            Miscalculation,
            UserMarked,
            Ranked,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }

    /// The error category a decisive step with this signal falls in.
    pub fn category(self) -> ErrorCategory {
        match self {
            // A figure the written arithmetic does not give has nothing behind it.
            Signal::UnsourcedValue | Signal::WrongValueOrigin | Signal::Miscalculation => ErrorCategory::Hallucination,
            Signal::Assumption => ErrorCategory::UnsupportedAssumption,
            Signal::FailedAction | Signal::RejectedAction | Signal::ArgumentMismatch => {
                ErrorCategory::ToolInvocationError
            }
            Signal::IgnoredToolError
            | Signal::UnavailableValue
            | Signal::CountMismatch
            | Signal::IgnoredResult
            | Signal::OmittedHits => ErrorCategory::MisreadToolOutput,
            Signal::PriorDeviation
            | Signal::BlockingChange
            | Signal::UnconfirmedAction
            | Signal::ForbiddenChange
            | Signal::RefusalBypassed
            | Signal::WrongStatistic => ErrorCategory::InstructionOrPlanDeviation,
            Signal::WrongDelegation => ErrorCategory::WrongDelegation,
            Signal::PrematureAnswer | Signal::UnverifiedAssertion | Signal::PartialCheck | Signal::PartialSearch => {
                ErrorCategory::PrematureTermination
            }
            Signal::NoProgress => ErrorCategory::InstructionOrPlanDeviation,
            Signal::RepeatedFailure => ErrorCategory::RepeatedFailingAction,
            Signal::UserMarked => ErrorCategory::UserMarked,
            Signal::Ranked => ErrorCategory::Unknown,
        }
    }
}

/// The error category of a decisive step. DeFA ("DeFA: Dependency-Guided Failure Attribution for
/// LLM Agents", §3.1) classifies the decisive step in the Who&When Pro failure-mode taxonomy, of
/// which the paper names two categories: hallucination and tool parameter or invocation error;
/// those keep the paper's names here. The paper does not list the others, so the rest of
/// [`ErrorCategory::TAXONOMY`] are falat's names for the failure kinds its signals detect
/// (docs/METHODS.md). Three more values are not error kinds and no judge may answer them: the
/// user marked or pinned the step, or no category could be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum ErrorCategory {
    /// Values, facts or sources stated with nothing behind them (named by the paper).
    Hallucination,
    /// A tool or code called with wrong parameters, or a call that fails (named by the paper:
    /// "tool parameter or invocation error").
    ToolInvocationError,
    /// A tool output read wrongly, or an error in it ignored.
    MisreadToolOutput,
    /// Work that departs from the task, the instructions or the plan.
    InstructionOrPlanDeviation,
    /// Work handed to an agent that cannot do it, or with an instruction that cannot work.
    WrongDelegation,
    /// The run answers or stops before the answer is established.
    PrematureTermination,
    /// A check that claims success without evidence, or misses the error.
    VerificationFailure,
    /// An action that already failed, repeated without change.
    RepeatedFailingAction,
    /// Reasoning built on an assumption, placeholder or made-up data.
    UnsupportedAssumption,
    /// An error of none of the kinds above.
    Other,
    /// Not an error kind: the step is a candidate because the user marked it.
    UserMarked,
    /// Not an error kind: the user pinned the step as decisive.
    UserPinned,
    /// Not an error kind: no category could be given (no finding at the step).
    #[default]
    Unknown,
}

impl ErrorCategory {
    /// The categories a judge may answer (the taxonomy), in prompt order.
    pub const TAXONOMY: [ErrorCategory; 10] = [
        ErrorCategory::Hallucination,
        ErrorCategory::ToolInvocationError,
        ErrorCategory::MisreadToolOutput,
        ErrorCategory::InstructionOrPlanDeviation,
        ErrorCategory::WrongDelegation,
        ErrorCategory::PrematureTermination,
        ErrorCategory::VerificationFailure,
        ErrorCategory::RepeatedFailingAction,
        ErrorCategory::UnsupportedAssumption,
        ErrorCategory::Other,
    ];

    /// The categories the DeFA paper names (the rest of [`ErrorCategory::TAXONOMY`] is falat's).
    pub const NAMED_BY_PAPER: [ErrorCategory; 2] = [ErrorCategory::Hallucination, ErrorCategory::ToolInvocationError];

    /// The snake_case name used in reports, prompts and answers.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCategory::Hallucination => "hallucination",
            ErrorCategory::ToolInvocationError => "tool_parameter_or_invocation_error",
            ErrorCategory::MisreadToolOutput => "misread_tool_output",
            ErrorCategory::InstructionOrPlanDeviation => "instruction_or_plan_deviation",
            ErrorCategory::WrongDelegation => "wrong_delegation",
            ErrorCategory::PrematureTermination => "premature_termination",
            ErrorCategory::VerificationFailure => "verification_failure",
            ErrorCategory::RepeatedFailingAction => "repeated_failing_action",
            ErrorCategory::UnsupportedAssumption => "unsupported_assumption",
            ErrorCategory::Other => "other",
            ErrorCategory::UserMarked => "user_marked",
            ErrorCategory::UserPinned => "user_pinned",
            ErrorCategory::Unknown => "unknown",
        }
    }

    /// Parses a judge's answer: a name of [`ErrorCategory::TAXONOMY`] only.
    pub fn parse(s: &str) -> Option<ErrorCategory> {
        ErrorCategory::TAXONOMY.into_iter().find(|c| c.as_str() == s.trim())
    }

    /// The taxonomy category a judge answers for a heuristic signal: [`Signal::category`], or
    /// [`ErrorCategory::Other`] for a signal that names no error kind (the user's mark, the
    /// ranker).
    pub fn of_signal(s: Signal) -> ErrorCategory {
        Some(s.category()).filter(|c| ErrorCategory::TAXONOMY.contains(c)).unwrap_or(ErrorCategory::Other)
    }
}

impl fmt::Display for ErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorCategory {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// One reason a step is a candidate, with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The kind of violation.
    pub signal: Signal,
    /// Evidence quoted or described from the trajectory (sanitised, short), naming the steps it
    /// cites as data.
    pub evidence: Prose,
    /// Strength of this finding, 0..=1.
    pub weight: f32,
}

/// Why a candidate was pruned (FALAT stage 2).
#[derive(Debug, Clone, PartialEq)]
pub struct Pruning {
    /// The transition that decided it (`dead_end`, `no_influence`, `correction`, `follow_up`).
    pub transition: Transition,
    /// The step that the decision rests on, 0-based (the correcting step, the earlier candidate).
    pub by_step: Option<usize>,
    /// A sentence a person can check, naming the steps it cites as data.
    pub reason: Prose,
    /// Whether the user excluded it (then `transition` is `no_influence` and `by_step` `None`).
    pub by_user: bool,
}

/// One verification criterion of FALAT stage 3, passed or failed with evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Criterion {
    /// Whether the candidate meets it.
    pub passed: bool,
    /// Why, in a sentence naming the steps it cites as data.
    pub evidence: Prose,
}

/// The three criteria of FALAT stage 3.
#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    /// It introduces the error rather than inheriting it.
    pub independence: Criterion,
    /// Fixing it would restore `o*`: its effect reaches the final output.
    pub sufficiency: Criterion,
    /// It is the earliest valid candidate.
    pub precedence: Criterion,
}

impl Verification {
    /// Whether all three criteria passed.
    pub fn passed(&self) -> bool {
        self.independence.passed && self.sufficiency.passed && self.precedence.passed
    }
}

/// Who put a candidate on the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// The method's own detection.
    Machine,
    /// A manual override.
    User,
}

/// A step that may be the decisive error, with everything decided about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// 0-based step index.
    pub step: usize,
    /// The agent at that step.
    pub agent: String,
    /// Why it is a candidate.
    pub findings: Vec<Finding>,
    /// Combined strength, 0..=1.
    pub score: f32,
    /// Set when stage 2 pruned it.
    pub pruned: Option<Pruning>,
    /// Set when stage 3 checked it.
    pub verification: Option<Verification>,
    /// Machine or user.
    pub origin: Origin,
}

impl Candidate {
    /// The signal that best names the error: by [`Signal::PRIORITY`] (what a step invents or
    /// assumes outranks how its actions fail), ties broken by weight.
    pub fn main_signal(&self) -> Option<Signal> {
        explanation::main_signal(&self.findings)
    }
}

/// The highest confidence FALAT states for a step its fallback named (no candidate passed both
/// verification criteria): the fallback is a guess, whatever the ranker's probability of it.
pub const UNVERIFIED_CAP: f32 = 0.2;

/// Below this probability a diagnosis says its confidence is low.
pub const LOW_CONFIDENCE: f32 = 0.3;

/// One step of a diagnosis' ranking, with the probability that it is the decisive step.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedStep {
    /// 0-based step index.
    pub step: usize,
    /// The agent recorded at that step.
    pub agent: String,
    /// P(this step is the decisive step), 0..=1 (calibrated for the fitted ranker).
    pub probability: f32,
}

/// Calls, tokens and time spent by one stage or method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cost {
    /// Judge calls.
    pub calls: u64,
    /// Prompt tokens (0 for the heuristic judge).
    pub prompt_tokens: u64,
    /// Completion tokens (0 for the heuristic judge).
    pub completion_tokens: u64,
    /// Wall time.
    pub wall: Duration,
    /// Prompt tokens the server served from its prompt cache, as it reported them (0 for the
    /// offline judges and for servers that do not say).
    pub cached_tokens: u64,
    /// Who answered the questions (LLM judge only; all 0 for the offline judges).
    pub answers: AnswerCounts,
    /// Of [`Cost::prompt_tokens`], those sent after the trajectory's first call: the calls whose
    /// prompt could reuse what the trajectory sent before (LLM judge only).
    pub later_prompt_tokens: u64,
    /// Of [`Cost::cached_tokens`], those of the calls after the trajectory's first call.
    /// `later_cached_tokens / later_prompt_tokens` is the share of the prompt the server did not
    /// compute again ([`Cost::later_cached_share`]).
    pub later_cached_tokens: u64,
    /// Questions the LLM judge did not find in its replay folder (the heuristic judge answered
    /// them; each question counted once however often it is asked).
    pub replay_misses: u64,
}

impl Cost {
    /// Adds another cost to this one.
    pub fn add(&mut self, other: &Cost) {
        self.calls += other.calls;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.wall += other.wall;
        self.cached_tokens += other.cached_tokens;
        self.answers.add(&other.answers);
        self.later_prompt_tokens += other.later_prompt_tokens;
        self.later_cached_tokens += other.later_cached_tokens;
        self.replay_misses += other.replay_misses;
    }

    /// Prompt tokens served from the server's cache as a share (0..=1) of those sent after each
    /// trajectory's first call; `None` when no call followed a first one.
    pub fn later_cached_share(&self) -> Option<f64> {
        (self.later_prompt_tokens > 0).then(|| self.later_cached_tokens as f64 / self.later_prompt_tokens as f64)
    }
}

/// Who answered an LLM judge's questions: the model (at once or after its one repair request),
/// nobody by design (nothing to choose from, or outside what the judge sends), or the offline
/// judge after a failure, by cause. Counts questions, not calls (one call answers several).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AnswerCounts {
    /// Answered by the model's first reply.
    pub model: u64,
    /// Answered by the model's reply to the repair request.
    pub repaired: u64,
    /// Answered by structure without a call (nothing to choose from, or a question the judge
    /// does not send by design); not a fallback.
    pub not_asked: u64,
    /// Fallbacks: the reply stayed invalid after the repair request.
    pub fallback_invalid: u64,
    /// Fallbacks: the call failed (unreachable, refused, timed out, too large...).
    pub fallback_error: u64,
    /// Fallbacks: the token budget or the deadline was spent.
    pub fallback_budget: u64,
    /// Fallbacks: the exchange was not in the replay folder.
    pub fallback_replay: u64,
}

impl AnswerCounts {
    /// Adds other counts to these.
    pub fn add(&mut self, o: &AnswerCounts) {
        self.model += o.model;
        self.repaired += o.repaired;
        self.not_asked += o.not_asked;
        self.fallback_invalid += o.fallback_invalid;
        self.fallback_error += o.fallback_error;
        self.fallback_budget += o.fallback_budget;
        self.fallback_replay += o.fallback_replay;
    }

    /// Questions answered by the offline judge after a failure.
    pub fn fallbacks(&self) -> u64 {
        self.fallback_invalid + self.fallback_error + self.fallback_budget + self.fallback_replay
    }

    /// Every question counted.
    pub fn total(&self) -> u64 {
        self.model + self.repaired + self.not_asked + self.fallbacks()
    }

    /// Whether any LLM question was counted.
    pub fn any(&self) -> bool {
        self.total() > 0
    }

    /// Whether most questions that needed an answer (model, repaired or fallen back) fell back.
    pub fn mostly_fallback(&self) -> bool {
        let asked = self.model + self.repaired + self.fallbacks();
        asked > 0 && self.fallbacks() * 2 > asked
    }

    /// `model 5, repaired 1, fallback 2 (invalid 1, error 1), not asked 3`: the parts that are
    /// not zero.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("model {}", self.model)];
        if self.repaired > 0 {
            parts.push(format!("repaired {}", self.repaired));
        }
        let f = self.fallbacks();
        if f > 0 {
            let why: Vec<String> = [
                ("invalid", self.fallback_invalid),
                ("error", self.fallback_error),
                ("budget", self.fallback_budget),
                ("replay miss", self.fallback_replay),
            ]
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(w, n)| format!("{w} {n}"))
            .collect();
            parts.push(format!("fallback {f} ({})", why.join(", ")));
        }
        if self.not_asked > 0 {
            parts.push(format!("not asked {}", self.not_asked));
        }
        parts.join(", ")
    }
}

/// FALAT's four stages, in order (docs/DESIGN.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// Stage 1: prior and hierarchy.
    SearchSpace,
    /// Stage 2: dependencies and pruning.
    Dependencies,
    /// Stage 3: verification.
    Verification,
    /// Stage 4: local re-search.
    ReSearch,
}

impl Stage {
    /// All stages in order.
    pub const ALL: [Stage; 4] = [Stage::SearchSpace, Stage::Dependencies, Stage::Verification, Stage::ReSearch];

    /// Name used in costs and the UI.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::SearchSpace => "prior+hierarchy",
            Stage::Dependencies => "dependencies+pruning",
            Stage::Verification => "verification",
            Stage::ReSearch => "re-search",
        }
    }
}

/// What FALAT's pipeline reports progress on (`judge::session::ProgressFn`): one of its
/// stages, or stage 2's candidate recall, which runs phase by phase before the pruning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipelineProgress {
    /// A stage: its judge calls done so far of those expected.
    Stage(Stage),
    /// Stage 2's candidate recall: phases searched so far of those to search.
    Recall,
}

/// A stage of any method, as its cost is reported (`StageCost`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StageName {
    /// A FALAT stage.
    Falat(Stage),
    /// ECHO: building the hierarchical context (§3.1).
    EchoContext,
    /// ECHO, unified ablation: analysts naming agent and step at once.
    EchoAnalysts,
    /// ECHO: the agent analysts (§3.2).
    EchoAgentAnalysts,
    /// ECHO: the step analysts (§3.2).
    EchoStepAnalysts,
    /// DeFA: segmentation (§3.2).
    DefaSegmentation,
    /// DeFA: candidate recall per segment (§3.3).
    DefaRecall,
    /// DeFA: failure propagation (§3.4).
    DefaPropagation,
    /// DeFA: root-cause adjudication (§3.5).
    DefaAdjudication,
    /// Who&When all-at-once.
    AllAtOnce,
    /// Who&When step-by-step.
    StepByStep,
    /// Who&When binary search.
    BinarySearch,
    /// The random baseline's draw.
    RandomDraw,
    /// Judge calls made outside any stage.
    Judge,
}

impl StageName {
    /// The name in reports and the UI (`prior+hierarchy`, `agent-analysts`, `recall`...).
    pub fn as_str(self) -> &'static str {
        match self {
            StageName::Falat(s) => s.as_str(),
            StageName::EchoContext => "context",
            StageName::EchoAnalysts => "analysts",
            StageName::EchoAgentAnalysts => "agent-analysts",
            StageName::EchoStepAnalysts => "step-analysts",
            StageName::DefaSegmentation => "segmentation",
            StageName::DefaRecall => "recall",
            StageName::DefaPropagation => "propagation",
            StageName::DefaAdjudication => "adjudication",
            StageName::AllAtOnce => "all-at-once",
            StageName::StepByStep => "step-by-step",
            StageName::BinarySearch => "binary-search",
            StageName::RandomDraw => "draw",
            StageName::Judge => "judge",
        }
    }
}

impl fmt::Display for StageName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for StageName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The cost of one named stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageCost {
    /// The stage.
    pub stage: StageName,
    /// What it spent.
    pub cost: Cost,
}

/// User overrides applied to a run (saved beside the trace as `TRACE.falat.json`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Overrides {
    /// Steps the user marked as candidates.
    pub marked: Vec<usize>,
    /// Candidate steps the user excluded.
    pub excluded: Vec<usize>,
    /// The step the user pinned as decisive.
    pub pinned: Option<usize>,
}

impl Overrides {
    /// Whether no override is set.
    pub fn is_empty(&self) -> bool {
        self.marked.is_empty() && self.excluded.is_empty() && self.pinned.is_none()
    }
}

/// An attribution method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Method {
    /// The FALAT pipeline (the paper "FALAT: Tracing Errors in LLM Agent Trajectories via
    /// Dependency-Guided Search").
    #[default]
    Falat,
    /// ECHO: hierarchical context, analyst panel, consensus voting (the ECHO paper).
    Echo,
    /// DeFA: dependency graph, segments, failure propagation, adjudication (the DeFA paper).
    Defa,
    /// Who&When all-at-once: the whole log, one question.
    AllAtOnce,
    /// Who&When step-by-step: walk forward until the judge names the step.
    StepByStep,
    /// Who&When binary search: halve the range until one step is left.
    BinarySearch,
    /// A seeded uniform draw of a step: the floor.
    Random,
}

impl Method {
    /// All methods, in table order.
    pub const ALL: [Method; 7] = [
        Method::Falat,
        Method::Echo,
        Method::Defa,
        Method::AllAtOnce,
        Method::StepByStep,
        Method::BinarySearch,
        Method::Random,
    ];

    /// The name used by `--method`, in diagnoses and in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Falat => "falat",
            Method::Echo => "echo",
            Method::Defa => "defa",
            Method::AllAtOnce => "all-at-once",
            Method::StepByStep => "step-by-step",
            Method::BinarySearch => "binary-search",
            Method::Random => "random",
        }
    }

    /// The method's name as a sentence's subject: `FALAT`, `ECHO`, `DeFA`, `All-at-once`…
    pub fn title(self) -> &'static str {
        match self {
            Method::Falat => "FALAT",
            Method::Echo => "ECHO",
            Method::Defa => "DeFA",
            Method::AllAtOnce => "All-at-once",
            Method::StepByStep => "Step-by-step",
            Method::BinarySearch => "Binary search",
            Method::Random => "Random",
        }
    }

    /// How the method names its decisive step, as a clause a report can quote ("FALAT names step 4
    /// because it is …"): the method's own rule, which is not "the most probable step" for most
    /// methods.
    /// The highest confidence the method states for a step its fallback named, when it caps
    /// it: FALAT's [`UNVERIFIED_CAP`]; the other methods state the ranker's calibrated
    /// probability as it is.
    pub fn fallback_cap(self) -> Option<f32> {
        match self {
            Method::Falat => Some(UNVERIFIED_CAP),
            _ => None,
        }
    }

    /// Whether the method traces a dependency path from its decisive step to the final output
    /// (FALAT, DeFA); reports of the others make no claim about paths.
    pub fn traces_path(self) -> bool {
        matches!(self, Method::Falat | Method::Defa)
    }

    pub fn decision_rule(self) -> &'static str {
        match self {
            Method::Falat => {
                "the earliest candidate that passes verification (temporal precedence), unless the local \
                 re-search moved the decision within its window"
            }
            Method::Echo => "the step its analysts' weighted vote settles on",
            Method::Defa => "where the failure propagation graph's adjudication puts the error's origin",
            Method::AllAtOnce => "the step the single question over the whole log names",
            Method::StepByStep => "the first step the judge calls decisive, walking forward",
            Method::BinarySearch => "the step the halving search ends on",
            Method::Random => "a seeded random draw",
        }
    }

    /// Parses a name of [`Method::as_str`] (case-insensitive, `_` accepted for `-`).
    pub fn parse(s: &str) -> Option<Method> {
        let s = s.trim().to_ascii_lowercase().replace('_', "-");
        Method::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// Parses a comma-separated list (`falat,echo`); `all` stands for every method.
    ///
    /// # Errors
    /// [`UnknownName`] for the first unknown name.
    pub fn parse_list(s: &str) -> Result<Vec<Method>, UnknownName> {
        if s.trim() == "all" {
            return Ok(Method::ALL.to_vec());
        }
        s.split(',')
            .filter(|x| !x.trim().is_empty())
            .map(|x| Method::parse(x).ok_or_else(|| UnknownName::method(x.trim())))
            .collect()
    }
}

/// A name on the command line that is not one of a closed set (a method, an ablation component).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnknownName {
    /// Not a method name ([`Method::parse`]); the message lists every method and `all`.
    #[error("unknown method {0:?} (known: {known}, all)", known = Method::ALL.map(Method::as_str).join(", "))]
    Method(String),
    /// Not a component name ([`ablation::Component::parse`]); `known` lists the names, in table order.
    #[error("unknown component {name:?} (known: {})", known.join(", "))]
    Component {
        /// The name as given, trimmed.
        name: String,
        /// Every component name.
        known: Vec<&'static str>,
    },
}

impl UnknownName {
    fn method(name: &str) -> UnknownName {
        UnknownName::Method(name.to_string())
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A method's verdict on one trajectory.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Diagnosis {
    /// The trajectory id.
    pub trajectory: String,
    /// The method that reached the verdict.
    pub method: Method,
    /// The judge (`heuristic`, `llm:<model>`).
    pub judge: String,
    /// The decisive step, 0-based, or `None` when no step can be named.
    pub decisive_step: Option<usize>,
    /// The agent recorded at the decisive step.
    pub agent: Option<String>,
    /// The decisive step's error category.
    pub category: ErrorCategory,
    /// Why, in a few sentences: [`Explanation::render`] of [`Diagnosis::explanation`], set by
    /// the finishing step (`methods::finish`); a method's raw verdict leaves it empty.
    pub reason: String,
    /// Why the decisive step is named, as data: the rule, the findings, the claims and caveats
    /// the reports and the TUI render.
    pub explanation: Explanation,
    /// Confidence in 0..=1: the probability that the decisive step is right, once the ranking is
    /// attached by the finishing step (`methods::finish`).
    pub confidence: f32,
    /// Every step, the decisive step first, then by probability (see [`RankedStep`]).
    pub ranking: Vec<RankedStep>,
    /// Roles of the steps around the decisive step, by step.
    pub roles: Vec<(usize, Role)>,
    /// Dependency path from the decisive step to the final output, 0-based steps.
    pub path: Vec<usize>,
    /// The step the analysis takes as the final output (0-based; the last step stating the
    /// observed output is not always it: see `judge::signals::final_step`), for the methods that
    /// trace a [`Diagnosis::path`] (FALAT, DeFA); `None` for the others.
    pub final_output_step: Option<usize>,
    /// Every candidate with its pruning and verification record.
    pub candidates: Vec<Candidate>,
    /// Cost per stage.
    pub cost: Vec<StageCost>,
    /// Problems a person should know of (judge fallbacks, missing output).
    pub warnings: Vec<String>,
    /// Set when the method's own rule named no step and its fallback named the decisive step
    /// (FALAT: no candidate passed verification; step-by-step: the judge called no step
    /// decisive; all-at-once: no step of the run was named; DeFA: nothing recalled or no usable
    /// adjudication; ECHO: the step vote settled on nothing): why, in a sentence. Reports then
    /// give this, not the rule, as the reason.
    pub fallback: Option<Prose>,
    /// Whether `o*` was used.
    pub used_ground_truth: bool,
    /// The user's overrides, when any were applied.
    pub overrides: Overrides,
    /// Method-specific details as data (ECHO votes, DeFA propagation, FALAT's phase search...).
    pub details: Vec<Detail>,
}

impl Diagnosis {
    /// The total cost over all stages.
    pub fn total_cost(&self) -> Cost {
        let mut c = Cost::default();
        for s in &self.cost {
            c.add(&s.cost);
        }
        c
    }

    /// The role of a step, if it has one.
    pub fn role_of(&self, step: usize) -> Option<Role> {
        self.roles.iter().find(|(s, _)| *s == step).map(|(_, r)| *r)
    }

    /// Whether the confidence is below [`LOW_CONFIDENCE`].
    pub fn low_confidence(&self) -> bool {
        self.confidence < LOW_CONFIDENCE
    }

    /// The 1-based rank of a step in the ranking, if ranked.
    pub fn rank_of(&self, step: usize) -> Option<usize> {
        self.ranking.iter().position(|r| r.step == step).map(|p| p + 1)
    }

    /// The most probable step of the ranking, with the decisive step's own probability, when it is
    /// not the decisive step and is more probable than it as reports print them (two decimals, so
    /// the gap always shows); `None` otherwise. Reports then say that the method's rule
    /// ([`Method::decision_rule`]) or its fallback, not the ranking, named the decisive step.
    pub fn more_probable_step(&self) -> Option<(&RankedStep, f32)> {
        let named = self.decisive_step?;
        let p_named = self.ranking.iter().find(|r| r.step == named).map_or(0.0, |r| r.probability);
        let best = self
            .ranking
            .iter()
            .filter(|r| r.step != named)
            .max_by(|a, b| a.probability.total_cmp(&b.probability).then(b.step.cmp(&a.step)))?;
        let shown = |p: f32| (p * 100.0).round();
        (shown(best.probability) > shown(p_named)).then_some((best, p_named))
    }

    /// Agents by the summed probability of their steps, most likely first (ties by name).
    pub fn agent_ranking(&self) -> Vec<(String, f32)> {
        let mut out: Vec<(String, f32)> = Vec::new();
        for r in &self.ranking {
            match out.iter_mut().find(|(a, _)| a.eq_ignore_ascii_case(&r.agent)) {
                Some((_, p)) => *p += r.probability,
                None => out.push((r.agent.clone(), r.probability)),
            }
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }

    /// The candidate record of a step, if it is one.
    pub fn candidate(&self, step: usize) -> Option<&Candidate> {
        self.candidates.iter().find(|c| c.step == step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranked(step: usize, probability: f32) -> RankedStep {
        RankedStep { step, agent: format!("agent{step}"), probability }
    }

    #[test]
    fn a_more_probable_step_than_the_named_one_is_found_and_a_near_tie_is_not() {
        let mut d = Diagnosis {
            decisive_step: Some(46),
            ranking: vec![ranked(46, 0.01), ranked(24, 0.08), ranked(8, 0.04)],
            ..Diagnosis::default()
        };
        assert_eq!(d.more_probable_step().map(|(r, p)| (r.step, r.agent.as_str(), p)), Some((24, "agent24", 0.01)));
        // The named step is the most probable: nothing to say.
        d.ranking = vec![ranked(46, 0.30), ranked(24, 0.08)];
        assert_eq!(d.more_probable_step(), None);
        // A gap that two decimals cannot show is no gap, even when it is over 0.005.
        d.ranking = vec![ranked(46, 0.080), ranked(24, 0.083)];
        assert_eq!(d.more_probable_step(), None);
        d.ranking = vec![ranked(46, 0.0752), ranked(24, 0.0810)];
        assert_eq!(d.more_probable_step(), None);
        // Equal probabilities: the earlier step is the one named.
        d.ranking = vec![ranked(46, 0.01), ranked(30, 0.08), ranked(24, 0.08)];
        assert_eq!(d.more_probable_step().map(|(r, _)| r.step), Some(24));
        d.decisive_step = None;
        assert_eq!(d.more_probable_step(), None);
    }

    #[test]
    fn every_method_has_its_own_rule_and_title() {
        assert_eq!(Method::Falat.title(), "FALAT");
        assert!(Method::Falat.decision_rule().contains("earliest candidate that passes verification"));
        let titles: std::collections::HashSet<&str> = Method::ALL.iter().map(|m| m.title()).collect();
        let rules: std::collections::HashSet<&str> = Method::ALL.iter().map(|m| m.decision_rule()).collect();
        assert_eq!((titles.len(), rules.len()), (Method::ALL.len(), Method::ALL.len()));
    }
}
