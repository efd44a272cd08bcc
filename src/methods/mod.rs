//! Every attribution method on one substrate (docs/DESIGN.md §3): FALAT ([`crate::methods::falat`]), ECHO
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

/// Ablations (the components of a method that can be switched off) live with the diagnosis, which
/// records them; re-exported here, where the methods read them.
pub use crate::diagnosis::ablation;
pub mod baselines;
pub mod defa;
pub mod echo;
pub mod falat;
pub mod view;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::diagnosis::{Candidate, Caveat, Claim, Diagnosis, Rule, Standing};
use crate::judge::Judge;
pub(crate) use crate::judge::session::Session;
use crate::model::Trajectory;
use crate::substrate::{Substrate, signals};

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
    pub pipeline: falat::Options,
    /// Components switched off (ablations); empty runs each method as its paper gives it.
    pub ablations: ablation::Ablations,
}

impl MethodOptions {
    /// The options of a FALAT run with these pipeline options (their `ground_truth` is the run's).
    pub fn for_falat(pipeline: falat::Options) -> MethodOptions {
        MethodOptions { ground_truth: pipeline.ground_truth, pipeline, ..MethodOptions::new(true) }
    }

    /// The FALAT pipeline's options of this run: [`MethodOptions::pipeline`] with the run's
    /// ground-truth setting and ablations.
    pub fn falat(&self) -> falat::Options {
        falat::Options { ground_truth: self.ground_truth, ablations: self.ablations.clone(), ..self.pipeline.clone() }
    }

    /// Defaults: seed 0, panel 3, segments of 24 steps, the pipeline's defaults.
    pub fn new(ground_truth: bool) -> MethodOptions {
        MethodOptions {
            ground_truth,
            seed: 0,
            panel: 3,
            segment_len: defa::SEGMENT_LEN,
            pipeline: falat::Options::new(ground_truth),
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

/// Runs one method on a trajectory and its substrate (built by [`Substrate::build`] from `t`):
/// the one entry point of every method. Each method returns its raw verdict (the step, the rule
/// that chose it, the evidence as [`crate::diagnosis::Explanation`] data); [`finish`] then ranks,
/// calibrates, sets the confidence and renders the reason, the same way for all of them.
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
    // FALAT's pipeline finishes its own diagnosis (the TUI runs it stage by stage and needs the
    // same finished value): see `falat::Pipeline::diagnosis`.
    let mut d = match method {
        Method::Falat => return falat::run(t, sub, judge, &opts.falat()),
        Method::Echo => with_notes(echo::run(t, sub, judge, opts), judge, &echo::departures()),
        Method::Defa => with_notes(defa::run(t, sub, judge, opts), judge, &defa::departures(opts)),
        Method::AllAtOnce => baselines::all_at_once(t, sub, judge, opts),
        Method::StepByStep => baselines::step_by_step(t, sub, judge, opts),
        Method::BinarySearch => baselines::binary_search(t, sub, judge, opts),
        Method::Random => baselines::random(t, sub, judge, opts),
    };
    finish(&mut d, t, sub, judge, opts.ground_truth);
    d
}

/// The finishing step every method's raw verdict goes through, once: ranks every step by the
/// judge's step probabilities, names the best-ranked step the user did not exclude when the
/// method named none ([`Rule::RankedFirst`]), sets the confidence ([`confidence`]), and adds the
/// claims that follow from the ranking and the dependency graph, the caveats, the category the
/// explanation supports and the rendered reason.
pub fn finish(d: &mut Diagnosis, t: &Trajectory, sub: &Substrate, judge: &dyn Judge, ground_truth: bool) {
    let ctx = crate::substrate::Context::of(t, sub, ground_truth);
    let probs = judge.step_probabilities(&ctx);
    if probs.len() != t.steps.len() || t.steps.is_empty() {
        d.reason = d.explanation.render(d.decisive_step, d.agent.as_deref());
        return;
    }
    let no_failure = matches!(d.explanation.rule, Rule::NoFailure { .. });
    if d.decisive_step.is_none()
        && !no_failure
        && let Some(top) = crate::rank::best_not_excluded(&probs, &d.overrides.excluded)
    {
        d.decisive_step = Some(top);
        d.agent = Some(t.steps[top].agent.clone());
        d.explanation.rule = Rule::RankedFirst;
    }
    if let Some(why) = &d.fallback
        && d.explanation.rule == Rule::Method
    {
        d.explanation.rule = Rule::Fallback { name: String::new(), why: why.clone() };
    }
    d.ranking = crate::rank::ranking(t, &probs, d.decisive_step);
    let model = judge.ranker().for_ground_truth(ground_truth);
    d.confidence = confidence(d, &probs, &|p| model.confidence(f64::from(p)) as f32);
    d.category = d.explanation.category(d.category);
    claims(d, t);
    d.reason = d.explanation.render(d.decisive_step, d.agent.as_deref());
}

/// The confidence of a diagnosis, computed here only: 1 for a step the user pinned; else the
/// decisive step's probability through the ranker's calibration map (the chance that the step
/// is right), at most the method's cap when its fallback named the step
/// ([`Method::fallback_cap`]); 0 when no step is named.
pub fn confidence(d: &Diagnosis, probs: &[f32], calibrate: &dyn Fn(f32) -> f32) -> f32 {
    let Some(s) = d.decisive_step.filter(|s| *s < probs.len()) else { return 0.0 };
    if d.overrides.pinned == Some(s) {
        return 1.0;
    }
    let c = calibrate(probs[s]);
    match (d.fallback.is_some(), d.method.fallback_cap()) {
        (true, Some(cap)) => c.min(cap),
        _ => c,
    }
}

/// Where `step` stood in the method's verification: nothing to say for a method that verifies
/// no candidates (only FALAT does); else whether it was no candidate, pruned, or checked and
/// with what result.
fn standing(d: &Diagnosis, step: usize) -> Standing {
    if d.method != Method::Falat {
        return Standing::Unverified;
    }
    match d.candidates.iter().find(|c| c.step == step) {
        None => Standing::NotCandidate,
        Some(c) if c.pruned.is_some() => Standing::Pruned,
        Some(Candidate { verification: Some(v), .. }) if v.independence.passed && v.sufficiency.passed => {
            Standing::PassedVerification
        }
        Some(Candidate { verification: Some(_), .. }) => Standing::FailedVerification,
        Some(_) => Standing::Unchecked,
    }
}

/// The claims and caveats that follow from the ranking, the path and the trajectory.
fn claims(d: &mut Diagnosis, t: &Trajectory) {
    let e = &mut d.explanation;
    e.claims.clear();
    e.caveats.retain(|c| matches!(c, Caveat::OfflineJudge));
    let Some(s) = d.decisive_step else { return };
    let top = d.ranking.iter().filter(|r| r.step != s).map(|r| r.probability).fold(f32::MIN, f32::max);
    let p_named = d.ranking.iter().find(|r| r.step == s).map_or(0.0, |r| r.probability);
    if let Some((best, p_named)) = d.more_probable_step() {
        let (step, agent, p) = (best.step, best.agent.clone(), best.probability);
        let standing = standing(d, step);
        d.explanation.claims.push(Claim::MoreProbable { step, agent, p, named: s, p_named, standing });
    } else if p_named > 0.0 && p_named >= top {
        d.explanation.claims.push(Claim::RanksFirst { step: s, p: p_named });
    }
    let e = &mut d.explanation;
    match d.path.as_slice() {
        [] if d.final_output_step.is_some() || d.method.traces_path() => {
            let observed = t.observed_output.as_deref().map(str::trim).filter(|o| !o.is_empty());
            let states_observed = observed.is_some_and(|o| t.steps.get(s).is_some_and(|st| st.content.contains(o)));
            let sufficiency = d
                .candidates
                .iter()
                .find(|c| c.step == s)
                .and_then(|c| c.verification.as_ref())
                .filter(|v| v.sufficiency.passed)
                .map(|v| v.sufficiency.evidence.clone());
            e.claims.push(Claim::NoPathToOutput {
                from: s,
                final_step: d.final_output_step,
                answer_stated: d.final_output_step.is_some_and(|f| signals::states_answer(t, f)),
                states_observed,
                sufficiency,
            });
        }
        [] => {}
        path => e.claims.push(Claim::PathToOutput {
            path: path.to_vec(),
            answer_stated: path.last().is_some_and(|&f| signals::states_answer(t, f)),
        }),
    }
    if d.fallback.is_some()
        && let Some(cap) = d.method.fallback_cap()
    {
        e.caveats.push(Caveat::ConfidenceCapped { cap });
    }
    if d.confidence < crate::diagnosis::LOW_CONFIDENCE {
        e.caveats.push(Caveat::LowConfidence { confidence: d.confidence });
    }
}

/// Adds the method's options that depart from its paper and, with the offline judge, a note that
/// its answers stand in for the model's judgement the paper uses.
fn with_notes(mut d: Diagnosis, judge: &dyn Judge, departures: &[String]) -> Diagnosis {
    d.details.push(crate::diagnosis::Detail::Options(departures.to_vec()));
    offline_note(&mut d, judge);
    d
}

/// With the heuristic judge, a detail and a caveat saying so (docs/DESIGN.md §4: a stand-in for
/// the model).
pub fn offline_note(d: &mut Diagnosis, judge: &dyn Judge) {
    if judge.kind() == crate::judge::JudgeKind::Heuristic {
        d.details.push(crate::diagnosis::Detail::OfflineJudge);
        d.explanation.caveats.push(Caveat::OfflineJudge);
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
