//! The substrate every method shares (`docs/ARCHITECTURE.md`, "One substrate"): the structure of
//! one trajectory built once by code and passed to the FALAT pipeline, every other method, `eval`
//! and the TUI.
//!
//! - [`Substrate::hierarchy`]: `M` (evidence, step summaries, phases), [`crate::hierarchy::build`].
//! - [`Substrate::graph`]: the dependency graph without transition labels, [`DepGraph::build`].
//! - [`Substrate::prior`]: the prior `π` derived from the task and roles by code,
//!   [`crate::prior::derive`] (a judge may write its own in FALAT stage 1).
//! - [`Substrate::facts`]: [`Facts`] judges derive from these lazily, once (indexes of links,
//!   reachability, lower-case text), so that no question costs a scan of the whole trajectory.
//!
//! Building is linear in the steps and links (the hierarchy's evidence extraction dominates).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use crate::graph::DepGraph;
use crate::hierarchy::{self, Hierarchy};
use crate::model::{LinkKind, Trajectory};
use crate::prior::{self, Prior};

pub mod signals;

/// The structure of one trajectory, built once ([`Substrate::build`]).
#[derive(Debug, Clone)]
pub struct Substrate {
    /// The hierarchy `M` as built by code (phases without judged summaries or suspicion).
    pub hierarchy: Hierarchy,
    /// The dependency graph, without transition labels.
    pub graph: DepGraph,
    /// The prior `π` derived by code.
    pub prior: Prior,
    /// Facts derived lazily from the above and the trajectory.
    pub facts: Facts,
}

impl Substrate {
    /// Builds the hierarchy, the graph and the prior of `t`.
    pub fn build(t: &Trajectory) -> Substrate {
        let hierarchy = hierarchy::build(t);
        let graph = DepGraph::build(t, &hierarchy);
        let prior = prior::derive(&t.task, &t.agents);
        Substrate { hierarchy, graph, prior, facts: Facts::default() }
    }

    /// The step holding `t`'s final output as the analysis reads it ([`signals::final_step`]),
    /// for readers that ask no judge (the TUI). `t` is the trajectory the substrate was built from.
    pub fn final_step(&self, t: &Trajectory) -> Option<usize> {
        signals::final_step(&Context::of(t, self, false))
    }

    /// [`Substrate::build`] behind an `Arc`, for sharing across threads and runs.
    pub fn shared(t: &Trajectory) -> Arc<Substrate> {
        Arc::new(Substrate::build(t))
    }
}

/// What a judge may look at when answering: the trajectory and the structure built so far.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    /// The trajectory under diagnosis.
    pub trajectory: &'a Trajectory,
    /// Its hierarchy `M`.
    pub hierarchy: &'a Hierarchy,
    /// The prior `π`, once stage 1 has produced it.
    pub prior: Option<&'a Prior>,
    /// The dependency graph, once stage 2 has built it.
    pub graph: Option<&'a DepGraph>,
    /// Facts derived once per trajectory (the substrate's, [`crate::substrate::Facts`]).
    pub facts: &'a Facts,
    /// Whether the expected output `o*` may be used.
    pub ground_truth: bool,
}

impl<'a> Context<'a> {
    /// The whole context of a trajectory over its substrate: hierarchy, prior `π`, dependency
    /// graph and facts, with `o*` usable when `ground_truth` is set.
    pub fn of(trajectory: &'a Trajectory, substrate: &'a Substrate, ground_truth: bool) -> Context<'a> {
        Context {
            trajectory,
            hierarchy: &substrate.hierarchy,
            prior: Some(&substrate.prior),
            graph: Some(&substrate.graph),
            facts: &substrate.facts,
            ground_truth,
        }
    }

    /// The same context without the prior and the graph: what the methods that read the
    /// trajectory alone (ECHO's analysts, the Who&When baselines, FALAT before stage 1) may see.
    pub fn bare(self) -> Context<'a> {
        Context { prior: None, graph: None, ..self }
    }

    /// The expected output when ground truth may be used.
    pub fn expected(&self) -> Option<&str> {
        if self.ground_truth { self.trajectory.expected_output.as_deref() } else { None }
    }
}

/// One value per ground-truth setting: the facts that read the expected output `o*` differ with
/// and without it.
#[derive(Debug, Clone, Default)]
pub struct ByTruth<T> {
    /// Computed without the expected output.
    pub without: OnceLock<T>,
    /// Computed with the expected output.
    pub with: OnceLock<T>,
}

impl<T> ByTruth<T> {
    /// The cell for a ground-truth setting.
    pub fn get(&self, ground_truth: bool) -> &OnceLock<T> {
        if ground_truth { &self.with } else { &self.without }
    }
}

/// Facts judges derive from a trajectory's substrate, each computed once on first use. They are
/// a cache, not part of the substrate's value; every one of them is a pure function of the
/// trajectory, the hierarchy and the graph's edges (transition labels do not change them).
#[derive(Debug, Default)]
pub struct Facts {
    /// The wrong output items and the steps they originate at.
    pub wrong_value_origins: ByTruth<Vec<(usize, String)>>,
    /// The step holding the final output.
    pub final_step: OnceLock<Option<usize>>,
    /// The lower-case content of each step.
    pub lower: OnceLock<Vec<String>>,
    /// The lower-case word set of each step's content.
    pub word_sets: OnceLock<Vec<HashSet<String>>>,
    /// The trajectory's links indexed by step.
    pub links: OnceLock<LinkIndex>,
    /// Per step, whether it reaches the final step in the dependency graph.
    pub reaches_final: OnceLock<Vec<bool>>,
    /// Per wrong-value origin (in the order of `wrong_value_origins`), which steps reach it.
    pub reaches_origin: ByTruth<Vec<Vec<bool>>>,
    /// The first tool output showing the expected value and the next agent step after it.
    pub expected_seen: ByTruth<Option<(usize, Option<usize>)>>,
    /// Per step, whether a later step reuses a value first seen there or a link leaves it.
    pub used_later: OnceLock<Vec<bool>>,
    /// For the last set of live candidates asked about, the earliest of them reaching each step.
    pub upstream: Mutex<Option<Upstream>>,
    /// The fitted step ranker's probability of each step ([`crate::rank::probabilities`]), per
    /// ground-truth setting and per model ([`crate::rank::model::RankerModel::id`]): a judge with
    /// its own ranker (one per cross-validation fold) never reads another's.
    pub ranking: Mutex<Vec<(RankingKey, Arc<Vec<f32>>)>>,
    /// The expected output lower-cased with the numbers it states, built once
    /// ([`signals::ExpectedIndex`]); `None` when the trajectory has none.
    pub expected_index: OnceLock<Option<signals::ExpectedIndex>>,
    /// Whether an item of the observed output agrees with the expected output (needs `o*`).
    pub output_agrees: OnceLock<bool>,
    /// Per step, the later failed call its state change blocked, with the object they share
    /// ([`crate::substrate::signals::blocking_changes`]).
    pub blocking: OnceLock<Vec<Option<(usize, String)>>>,
    /// The run's first assertion of its final value or of completion, with its quote
    /// (`signals::assertion`).
    pub first_assertion: OnceLock<Option<(usize, String)>>,
    /// Per step, why its observation brought nothing new (`signals::progress`).
    pub no_progress: OnceLock<Vec<Option<crate::diagnosis::Prose>>>,
    /// The rule asking for the user's confirmation, with where it was given
    /// ([`signals::actions::confirmation_policy`]).
    pub confirmation_policy: OnceLock<Option<signals::actions::ConfirmationPolicy>>,
    /// Per step, a state change made without that confirmation, with the agent's last question
    /// before it ([`signals::actions::unconfirmed_changes`]).
    pub unconfirmed: OnceLock<Vec<Option<Option<usize>>>>,
    /// The records and lists of the tool outputs ([`signals::grounding::records`]).
    pub records: OnceLock<signals::grounding::Records>,
    /// The identifiers the task names (tests, files, functions), lower case
    /// (`signals::reproduces_reported_failure`).
    pub task_identifiers: OnceLock<Vec<String>>,
    /// The first call that edits files (`signals::edits`).
    pub first_edit: OnceLock<Option<usize>>,
    /// Per number written anywhere in the run (normalised, [`crate::evidence::normalize_number`]),
    /// the first step whose text holds it ([`signals::first_written`]).
    pub first_written: OnceLock<HashMap<String, usize>>,
    /// The failed state change the run's first assertion reports as done, as (call, assertion,
    /// result, error) (`signals::assertion`).
    pub first_unresolved: OnceLock<Option<(usize, usize, usize, String)>>,
    /// The served person's turns (`signals::actions::is_human`), in order
    /// (`signals::actions::argument_mismatch`).
    pub user_steps: OnceLock<Vec<usize>>,
    /// The served user's turns with a sentence that stresses a version
    /// (`signals::constraints::version_turns`), in order.
    pub version_turns: OnceLock<Vec<usize>>,
    /// Per kind of requirement a user states in words (`signals::constraints`), the user turns
    /// that speak of it, in order, each with its last sentence that does (as a byte range of the
    /// turn's text).
    pub requirement_turns: OnceLock<Vec<RequirementTurns>>,
    /// The user turns' prohibitions of changes to paths (`signals::instructions`).
    pub prohibitions: OnceLock<Vec<signals::Prohibition>>,
    /// The code names the user's turns ask to keep, each with the turn's step and sentence
    /// (`signals::instructions::kept_names`).
    pub kept_names: OnceLock<Vec<(usize, String, Vec<String>)>>,
    /// The calls the user refused at the permission prompt (`signals::instructions`).
    pub refused_calls: OnceLock<Vec<signals::instructions::RefusedCall>>,
    /// The user turns that lift a prohibition or a refusal, in order (`signals::instructions`).
    pub permits: OnceLock<Vec<usize>>,
    /// The shell calls that run tests, with the part of the command that does
    /// (`signals::instructions`).
    pub test_runs: OnceLock<Vec<(usize, String)>>,
    /// The hand-offs that go against the delegating agent's routing instructions, in order
    /// (`signals::misrouted_by`).
    pub misrouted_handoffs: OnceLock<Vec<usize>>,
    /// The lower bounds on counts the run's reports give, in step order
    /// ([`signals::inexact::LowerBound`]).
    pub lower_bounds: OnceLock<Vec<signals::inexact::LowerBound>>,
    /// The amounts with a currency the steps write, by figure and scale word, each with its step
    /// and currency in step order (`signals::units::currency_relabelled`).
    pub amounts: OnceLock<signals::AmountIndex>,
    /// The tool outputs whose lists hold a record marked superseded beside one that is not
    /// (`signals::stale::superseded_record_read`), in step order.
    pub superseded_lists: OnceLock<Vec<signals::SupersededList>>,
    /// The lines of tool outputs that give figures for two years or more, and the first step
    /// giving each year's figure (`signals::periods::other_year_figure`).
    pub year_series: OnceLock<signals::YearSeriesIndex>,
    /// Per ground-truth setting and step, the findings of [`signals::recall`] that read neither
    /// the prior nor the graph, in the three runs around the two findings that read the prior
    /// (`None` for a step recall never reads: a policy, a request, a tool output).
    pub findings: ByTruth<Vec<OnceLock<Option<signals::OwnFindings>>>>,
}

/// The user turns that speak of one kind of requirement, in order, each with the byte range of
/// its last sentence that does ([`Facts::requirement_turns`]).
pub type RequirementTurns = Vec<(usize, std::ops::Range<usize>)>;

impl Clone for Facts {
    /// Copies what is computed, except the per-run [`Upstream`] cache.
    fn clone(&self) -> Facts {
        Facts {
            wrong_value_origins: self.wrong_value_origins.clone(),
            final_step: self.final_step.clone(),
            lower: self.lower.clone(),
            word_sets: self.word_sets.clone(),
            links: self.links.clone(),
            reaches_final: self.reaches_final.clone(),
            reaches_origin: self.reaches_origin.clone(),
            expected_seen: self.expected_seen.clone(),
            used_later: self.used_later.clone(),
            upstream: Mutex::new(None),
            ranking: Mutex::new(self.ranking.lock().map(|r| r.clone()).unwrap_or_default()),
            expected_index: self.expected_index.clone(),
            output_agrees: self.output_agrees.clone(),
            blocking: self.blocking.clone(),
            first_assertion: self.first_assertion.clone(),
            no_progress: self.no_progress.clone(),
            confirmation_policy: self.confirmation_policy.clone(),
            unconfirmed: self.unconfirmed.clone(),
            records: self.records.clone(),
            task_identifiers: self.task_identifiers.clone(),
            first_edit: self.first_edit.clone(),
            first_written: self.first_written.clone(),
            first_unresolved: self.first_unresolved.clone(),
            user_steps: self.user_steps.clone(),
            version_turns: self.version_turns.clone(),
            requirement_turns: self.requirement_turns.clone(),
            prohibitions: self.prohibitions.clone(),
            kept_names: self.kept_names.clone(),
            refused_calls: self.refused_calls.clone(),
            permits: self.permits.clone(),
            test_runs: self.test_runs.clone(),
            misrouted_handoffs: self.misrouted_handoffs.clone(),
            lower_bounds: self.lower_bounds.clone(),
            amounts: self.amounts.clone(),
            superseded_lists: self.superseded_lists.clone(),
            year_series: self.year_series.clone(),
            findings: self.findings.clone(),
        }
    }
}

/// What step probabilities depend on besides the trajectory: the model's fingerprint
/// (`StepModel::id`) and whether `o*` was given.
pub type RankingKey = (u64, bool);

/// The earliest live candidate reaching each step, for the live set it was computed for.
#[derive(Debug, Clone)]
pub struct Upstream {
    /// The live candidates (compared by identity: one run's verification shares one set).
    pub live: Arc<[usize]>,
    /// Per step, the earliest live candidate that reaches it by at least one edge.
    pub earliest: Arc<Vec<Option<usize>>>,
}

/// The trajectory's links indexed by step (the first link of each kind, in link order).
#[derive(Debug, Clone, Default)]
pub struct LinkIndex {
    /// The tool output that executed a step's code or answered its call.
    pub result_of: Vec<Option<usize>>,
    /// The reply to a delegation.
    pub reply_to: Vec<Option<usize>>,
    /// The step that produced a tool output or delegated to it (an execution, tool result or
    /// delegation link ending here).
    pub produced_by: Vec<Option<usize>>,
}

impl LinkIndex {
    /// Indexes `t.links`; links naming a step outside the trajectory are left out.
    pub fn build(t: &Trajectory) -> LinkIndex {
        let n = t.steps.len();
        let mut x = LinkIndex { result_of: vec![None; n], reply_to: vec![None; n], produced_by: vec![None; n] };
        for l in &t.links {
            if l.from >= n || l.to >= n {
                continue;
            }
            let result = matches!(l.kind, LinkKind::Execution | LinkKind::ToolResult);
            if result && x.result_of[l.from].is_none() {
                x.result_of[l.from] = Some(l.to);
            }
            if l.kind == LinkKind::Delegation && x.reply_to[l.from].is_none() {
                x.reply_to[l.from] = Some(l.to);
            }
            if (result || l.kind == LinkKind::Delegation) && x.produced_by[l.to].is_none() {
                x.produced_by[l.to] = Some(l.from);
            }
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Link, Step, StepKind};

    #[test]
    fn links_are_indexed_by_step() {
        let steps =
            (0..4).map(|i| Step { index: i, agent: "A".into(), kind: StepKind::Message, ..Step::default() }).collect();
        let t = Trajectory {
            steps,
            links: vec![
                Link { from: 0, to: 1, kind: LinkKind::Delegation },
                Link { from: 1, to: 2, kind: LinkKind::ToolResult },
                Link { from: 1, to: 3, kind: LinkKind::ToolResult },
                Link { from: 2, to: 9, kind: LinkKind::ToolResult },
            ],
            ..Trajectory::default()
        };
        let x = LinkIndex::build(&t);
        assert_eq!(x.result_of, vec![None, Some(2), None, None], "first link wins; out of range left out");
        assert_eq!(x.reply_to, vec![Some(1), None, None, None]);
        assert_eq!(x.produced_by, vec![None, Some(0), Some(1), Some(1)]);
        let s = Substrate::build(&t);
        assert_eq!(s.graph.len(), 4);
        assert_eq!(s.hierarchy.steps.len(), 4);
        let both: ByTruth<u8> = ByTruth::default();
        both.get(true).get_or_init(|| 1);
        assert_eq!((both.with.get(), both.without.get()), (Some(&1), None));
    }
}
