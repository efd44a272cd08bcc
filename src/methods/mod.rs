//! Every attribution method on one substrate (docs/DESIGN.md §3): FALAT ([`crate::pipeline`]), ECHO
//! ([`echo`], the ECHO paper), DeFA ([`defa`], the DeFA paper) and the Who&When baselines
//! ([`baselines`]: all-at-once, step-by-step, binary search, random).
//!
//! All share ingest, the hierarchy, the dependency graph and the [`Judge`], and return the same
//! [`Diagnosis`] (method name, decisive step, the agent recorded at that step, category, reason,
//! confidence, roles and candidates where the method has them, method-specific `details`, and the
//! cost of every stage: judge calls, tokens, wall time). Steps are 0-based everywhere.
//!
//! The text each method shows a judge (the whole log, a prefix, a range, ECHO's hierarchical
//! context, DeFA's segment view) is built here by [`view`], with explicit step numbers, and sent
//! inside the question; the heuristic judge reads the structure instead.
//!
//! Benchmarks (methods over labelled folders, scored) run through [`crate::eval::benchmark`].

pub mod ablation;
pub mod baselines;
pub mod defa;
pub mod echo;
pub mod view;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::diagnosis::Diagnosis;
use crate::judge::Judge;
pub(crate) use crate::judge::session::Session;
use crate::model::Trajectory;
use crate::pipeline;
use crate::substrate::Substrate;

pub use crate::diagnosis::Method;

/// How to run a method.
#[derive(Clone)]
pub struct MethodOptions {
    /// Use the expected output `o*` when the trajectory has one.
    pub ground_truth: bool,
    /// Seed of the random baseline and of ECHO's panel draw (mixed with the trajectory id, so each
    /// trajectory gets its own reproducible draw).
    pub seed: u64,
    /// ECHO panel size `k`, 1..=6 (default 3, as in the paper).
    pub panel: usize,
    /// DeFA segment length in steps (default 24); shorter trajectories are one segment.
    pub segment_len: usize,
    /// The FALAT pipeline's options (its `ground_truth` is replaced by the one above).
    pub pipeline: pipeline::Options,
    /// Components switched off (ablations); empty runs each method as its paper gives it.
    pub ablations: ablation::Ablations,
}

impl MethodOptions {
    /// Defaults: seed 0, panel 3, segments of 24 steps, the pipeline's defaults.
    pub fn new(ground_truth: bool) -> MethodOptions {
        MethodOptions {
            ground_truth,
            seed: 0,
            panel: 3,
            segment_len: defa::SEGMENT_LEN,
            pipeline: pipeline::Options::new(ground_truth),
            ablations: ablation::Ablations::none(),
        }
    }
}

impl Default for MethodOptions {
    fn default() -> MethodOptions {
        MethodOptions::new(true)
    }
}

/// Runs one method on a trajectory, building its [`Substrate`] first. Never fails: an empty
/// trajectory gives a diagnosis without a decisive step and a warning. To run several methods on
/// one trajectory, build the substrate once and call [`run_on`].
pub fn run(method: Method, t: &Trajectory, judge: &dyn Judge, opts: &MethodOptions) -> Diagnosis {
    run_on(method, t, &Substrate::shared(t), judge, opts)
}

/// Runs one method on a trajectory and its substrate (built by [`Substrate::build`] from `t`).
pub fn run_on(
    method: Method,
    t: &Trajectory,
    sub: &Arc<Substrate>,
    judge: &dyn Judge,
    opts: &MethodOptions,
) -> Diagnosis {
    if t.steps.is_empty() {
        return no_steps(method, t, judge, opts);
    }
    let mut d = match method {
        Method::Falat => {
            let popts = pipeline::Options {
                ground_truth: opts.ground_truth,
                ablations: opts.ablations.clone(),
                ..opts.pipeline.clone()
            };
            pipeline::diagnose_on(t, sub, judge, &popts)
        }
        Method::Echo => with_notes(echo::run(t, sub, judge, opts), judge, &echo::departures()),
        Method::Defa => with_notes(defa::run(t, sub, judge, opts), judge, &defa::departures(opts)),
        Method::AllAtOnce => baselines::all_at_once(t, sub, judge, opts),
        Method::StepByStep => baselines::step_by_step(t, sub, judge, opts),
        Method::BinarySearch => baselines::binary_search(t, sub, judge, opts),
        Method::Random => baselines::random(t, sub, judge, opts),
    };
    if d.ranking.is_empty() {
        let ctx = crate::judge::Context::of(t, sub, opts.ground_truth);
        crate::rank::attach_judged(&mut d, t, judge, &ctx);
    }
    d
}

/// Adds the method's options that depart from its paper and, with the offline judge, a note that
/// its answers stand in for the model's judgement the paper uses.
fn with_notes(mut d: Diagnosis, judge: &dyn Judge, departures: &[String]) -> Diagnosis {
    d.details.push(crate::diagnosis::Detail::Options(departures.to_vec()));
    offline_note(&mut d, judge);
    d
}

/// With the heuristic judge, a detail saying so (docs/DESIGN.md §4: a stand-in for the model).
pub fn offline_note(d: &mut Diagnosis, judge: &dyn Judge) {
    if judge.name() == "heuristic" {
        d.details.push(crate::diagnosis::Detail::OfflineJudge);
    }
}

/// The diagnosis of an empty trajectory: no step, a warning.
pub(crate) fn no_steps(method: Method, t: &Trajectory, judge: &dyn Judge, opts: &MethodOptions) -> Diagnosis {
    let mut d = new_diagnosis(method, t, judge, opts, None);
    d.warnings.push("the trajectory has no steps".into());
    d
}

/// A diagnosis of `method` naming `step` (the agent is the actor recorded at that step).
pub(crate) fn new_diagnosis(
    method: Method,
    t: &Trajectory,
    judge: &dyn Judge,
    opts: &MethodOptions,
    step: Option<usize>,
) -> Diagnosis {
    let step = step.filter(|s| *s < t.steps.len());
    Diagnosis {
        trajectory: t.id.clone(),
        method,
        judge: judge.name(),
        decisive_step: step,
        agent: step.map(|s| t.steps[s].agent.clone()),
        category: crate::diagnosis::ErrorCategory::Unknown,
        used_ground_truth: opts.ground_truth && t.expected_output.is_some(),
        ..Diagnosis::default()
    }
}

/// A judge session for a method run: the pipeline options' cancel flag and progress callback.
pub(crate) fn session<'j>(judge: &'j dyn Judge, opts: &MethodOptions) -> Session<'j> {
    opts.pipeline.session(judge)
}

/// A small portable pseudo-random generator (SplitMix64): the same numbers on every platform and
/// with every version of any random-number crate, so seeded results are stable.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator for `seed` mixed with `id` (FNV-1a of the id), one stream per trajectory.
    pub fn for_trajectory(seed: u64, id: &str) -> SplitMix64 {
        let h = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
        SplitMix64(seed ^ h)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next_u64() % n as u64) as usize }
    }
}
