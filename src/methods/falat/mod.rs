//! The four FALAT stages (docs/DESIGN.md §2; the FALAT paper, "FALAT: Tracing Errors in LLM Agent
//! Trajectories via Dependency-Guided Search"), each a function of its inputs plus a judge,
//! each returning a value the next stage and the UI can show, each recording its own cost.
//!
//! 1. [`search_space`]: the prior `π` and the hierarchy `M` (phases with suspicion).
//! 2. [`dependencies`]: the typed dependency graph, candidates, transition labels and pruning.
//! 3. [`verify`]: error independence, counterfactual sufficiency, temporal precedence.
//! 4. [`research`]: local re-search in a window, roles, possibly a move to a neighbour.
//!
//! [`Pipeline`] holds the stage outputs so that a UI can run stages one at a time, and
//! [`diagnose`] runs them all. User [`Overrides`] (marked, excluded, pinned steps) enter at
//! stage 2 and 3, so re-running downstream stages honours them.

pub mod decision;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::diagnosis::Part::Step;
use crate::diagnosis::details::{PhaseSearched, StepCheck};
use crate::diagnosis::{
    Candidate, Cost, Criterion, Detail, Diagnosis, ErrorCategory, Finding, Origin, Overrides, PipelineProgress, Prose,
    Role, Rule, Signal, StageCost, StageName, Transition, Verification,
};
use crate::graph::DepGraph;
use crate::hierarchy::Hierarchy;
use crate::judge::session::Session;
pub use crate::judge::session::{Cancelled, ProgressFn};
use crate::judge::{Answer, Context, CriterionKind, Judge, Question};
use crate::methods::ablation::{Ablations, Component};
use crate::model::Trajectory;
use crate::prior::Prior;
use crate::prose;
use crate::substrate::Substrate;
use crate::substrate::signals::{self, combine};
use decision::{Checked, FalatOptions, Undiscriminating, Verdict};

/// How to run the pipeline.
#[derive(Clone, Default)]
pub struct Options {
    /// Use the expected output `o*` when the trajectory has one.
    pub ground_truth: bool,
    /// Half-width of the re-search window (docs/DESIGN.md §2: default 3).
    pub window: usize,
    /// The user's overrides.
    pub overrides: Overrides,
    /// Set to stop between judge calls; a cancelled stage returns [`Cancelled`].
    pub cancel: Option<Arc<AtomicBool>>,
    /// Called after each judge call.
    pub progress: Option<ProgressFn>,
    /// FALAT's decision options (score floor, fallback, phase threshold); the defaults follow
    /// the paper.
    pub falat: FalatOptions,
    /// Components switched off (hierarchy, prior, pruning, verification, research).
    pub ablations: Ablations,
}

impl Options {
    /// Defaults of the `diagnose` command: ground truth on, window 3, no overrides.
    pub fn new(ground_truth: bool) -> Options {
        Options { ground_truth, window: 3, ..Options::default() }
    }

    /// A judge session with these options' cancel flag and progress callback.
    pub fn session<'j>(&self, judge: &'j dyn Judge) -> Session<'j> {
        Session::controlled(judge, self.cancel.clone(), self.progress.clone())
    }
}

pub use crate::diagnosis::Stage;

/// Stage 1 output.
#[derive(Debug, Clone)]
pub struct SearchSpace {
    /// The prior `π`.
    pub prior: Prior,
    /// The hierarchy `M`, phases with summaries and suspicion.
    pub hierarchy: Hierarchy,
}

/// Stage 2 output.
#[derive(Debug, Clone)]
pub struct Dependencies {
    /// The graph with transition labels on edges leaving candidates.
    pub graph: DepGraph,
    /// All candidates, pruned ones with their reason, sorted by step.
    pub candidates: Vec<Candidate>,
    /// The phases recall searched (coarse to fine, [`decision::zoom`]), in search order; every
    /// phase when the hierarchy is ablated.
    pub searched: Vec<usize>,
}

/// Stage 3 output.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The candidates with verification records.
    pub candidates: Vec<Candidate>,
    /// The step chosen by temporal precedence among valid candidates.
    pub chosen: Option<usize>,
    /// How the step was chosen: pinned, the earliest valid candidate, or a fallback (unverified).
    pub verdict: Option<Verdict>,
}

/// Stage 4 output.
#[derive(Debug, Clone)]
pub struct ReSearch {
    /// The decisive step after re-search.
    pub decisive: usize,
    /// Roles in the window.
    pub roles: Vec<(usize, Role)>,
    /// Why the decision stayed or moved.
    pub reason: Prose,
    /// The counterfactual check of each step of the window (both criteria), in step order.
    pub checks: Vec<Checked>,
}

pub use crate::diagnosis::UNVERIFIED_CAP;

/// The state of a run: the trajectory's substrate, each stage's output once it has run, costs and
/// warnings.
#[derive(Debug, Clone, Default)]
pub struct Pipeline {
    /// The substrate the stages read (built on the first run when not given by [`Pipeline::new`]).
    pub substrate: Option<Arc<Substrate>>,
    /// Stage 1.
    pub space: Option<SearchSpace>,
    /// Stage 2.
    pub deps: Option<Dependencies>,
    /// Stage 3.
    pub verified: Option<Verified>,
    /// Stage 4.
    pub research: Option<ReSearch>,
    /// Cost per stage run.
    pub costs: Vec<StageCost>,
    /// Judge warnings.
    pub warnings: Vec<String>,
}

impl Pipeline {
    /// A pipeline over a substrate already built for the trajectory it will run on.
    pub fn new(substrate: Arc<Substrate>) -> Pipeline {
        Pipeline { substrate: Some(substrate), ..Pipeline::default() }
    }

    /// The substrate, built from `t` if none was given.
    fn substrate(&mut self, t: &Trajectory) -> Arc<Substrate> {
        Arc::clone(self.substrate.get_or_insert_with(|| Substrate::shared(t)))
    }

    /// Runs `stage` and every stage before it that has not run; clears stages after it.
    ///
    /// # Errors
    /// [`Cancelled`] when the options' cancel flag is set during the run.
    pub fn run(&mut self, t: &Trajectory, judge: &dyn Judge, opts: &Options, stage: Stage) -> Result<(), Cancelled> {
        let sub = self.substrate(t);
        let sub = sub.as_ref();
        if self.space.is_none() || stage == Stage::SearchSpace {
            let (s, cost) = search_space(t, sub, judge, opts, &mut self.warnings)?;
            self.space = Some(s);
            record(&mut self.costs, Stage::SearchSpace, cost);
            self.deps = None;
        }
        if stage > Stage::SearchSpace && (self.deps.is_none() || stage == Stage::Dependencies) {
            let space = self.space.as_ref().expect("stage 1 ran");
            let (d, cost) = dependencies(t, sub, space, judge, opts, &mut self.warnings)?;
            self.deps = Some(d);
            record(&mut self.costs, Stage::Dependencies, cost);
            self.verified = None;
        }
        if stage > Stage::Dependencies && (self.verified.is_none() || stage == Stage::Verification) {
            let (space, deps) = (self.space.as_ref().expect("stage 1 ran"), self.deps.as_ref().expect("stage 2 ran"));
            let (v, cost) = verify(t, sub, space, deps, judge, opts, &mut self.warnings)?;
            self.verified = Some(v);
            record(&mut self.costs, Stage::Verification, cost);
            self.research = None;
        }
        if stage == Stage::ReSearch {
            let space = self.space.as_ref().expect("stage 1 ran");
            let deps = self.deps.as_ref().expect("stage 2 ran");
            let verified = self.verified.as_ref().expect("stage 3 ran");
            let (r, cost) = research(t, sub, space, deps, verified, judge, opts, &mut self.warnings)?;
            self.research = r;
            record(&mut self.costs, Stage::ReSearch, cost);
        }
        self.clear_after(stage);
        Ok(())
    }

    /// Runs all four stages from scratch.
    ///
    /// # Errors
    /// [`Cancelled`] when cancelled.
    pub fn run_all(&mut self, t: &Trajectory, judge: &dyn Judge, opts: &Options) -> Result<(), Cancelled> {
        *self = Pipeline { substrate: self.substrate.take(), ..Pipeline::default() };
        self.run(t, judge, opts, Stage::ReSearch)
    }

    fn clear_after(&mut self, stage: Stage) {
        if stage < Stage::Dependencies {
            self.deps = None;
        }
        if stage < Stage::Verification {
            self.verified = None;
        }
        if stage < Stage::ReSearch {
            self.research = None;
        }
    }

    /// The latest stage that has run.
    pub fn last_stage(&self) -> Option<Stage> {
        if self.research.is_some() {
            Some(Stage::ReSearch)
        } else if self.verified.is_some() {
            Some(Stage::Verification)
        } else if self.deps.is_some() {
            Some(Stage::Dependencies)
        } else if self.space.is_some() {
            Some(Stage::SearchSpace)
        } else {
            None
        }
    }

    /// The diagnosis from what has run so far (a partial run names no decisive step). Once
    /// verification has run, it goes through the shared finishing step
    /// ([`crate::methods::finish`]): ranking, confidence, claims and the rendered reason.
    pub fn diagnosis(&self, t: &Trajectory, judge: &dyn Judge, opts: &Options) -> Diagnosis {
        let mut d = assemble(t, self, judge, opts);
        if let (Some(sub), Some(_)) = (&self.substrate, &self.verified) {
            crate::methods::finish(&mut d, t, sub, judge, opts.ground_truth);
        }
        d
    }
}

fn record(costs: &mut Vec<StageCost>, stage: Stage, cost: Cost) {
    match costs.iter_mut().find(|c| c.stage == StageName::Falat(stage)) {
        Some(c) => c.cost = cost,
        None => costs.push(StageCost { stage: StageName::Falat(stage), cost }),
    }
}

/// Runs the whole FALAT pipeline on a trajectory and its substrate: FALAT's entry point, called by
/// [`crate::methods::run_on`] (the CLI, `eval`, the tests) and, stage by stage, by the TUI through
/// [`Pipeline`]; both end in [`Pipeline::diagnosis`].
pub(crate) fn run(t: &Trajectory, sub: &Arc<Substrate>, judge: &dyn Judge, opts: &Options) -> Diagnosis {
    let mut p = Pipeline::new(Arc::clone(sub));
    match p.run_all(t, judge, opts) {
        Ok(()) => p.diagnosis(t, judge, opts),
        Err(Cancelled) => {
            let mut d = p.diagnosis(t, judge, opts);
            d.warnings.push("cancelled before the pipeline finished".into());
            d
        }
    }
}

/// The judge context once stage 2 has run: trajectory, hierarchy, prior and graph.
fn full_context<'a>(
    t: &'a Trajectory,
    sub: &'a Substrate,
    space: &'a SearchSpace,
    graph: &'a DepGraph,
    opts: &Options,
) -> Context<'a> {
    Context {
        trajectory: t,
        hierarchy: &space.hierarchy,
        prior: Some(&space.prior),
        graph: Some(graph),
        facts: &sub.facts,
        ground_truth: opts.ground_truth,
    }
}

/// Stage 1: the prior `π` (from the task and roles only) and the hierarchy with phase suspicion.
///
/// # Errors
/// [`Cancelled`].
pub fn search_space(
    t: &Trajectory,
    sub: &Substrate,
    judge: &dyn Judge,
    opts: &Options,
    warnings: &mut Vec<String>,
) -> Result<(SearchSpace, Cost), Cancelled> {
    let start = Instant::now();
    let mut s = opts.session(judge);
    let mut hierarchy = sub.hierarchy.clone();
    let ctx = Context::of(t, sub, opts.ground_truth).bare();
    let prior = if opts.ablations.off(Component::Prior) {
        // Withheld: later stages see an empty π (no answer type, constraints, terms or procedure).
        Prior::default()
    } else {
        match s.ask(&ctx, &Question::Prior) {
            Answer::Prior(p) => p,
            _ => sub.prior.clone(),
        }
    };
    let n = hierarchy.phases.len();
    let mut summaries = Vec::with_capacity(n);
    {
        let ctx = Context { prior: Some(&prior), ..ctx };
        for phase in 0..n {
            s.check()?;
            if let Answer::PhaseSummary { summary, suspicion } = s.ask(&ctx, &Question::PhaseSummary { phase }) {
                summaries.push((summary, suspicion));
            } else {
                summaries.push((hierarchy.phases[phase].summary.clone(), 0.0));
            }
            s.tick(PipelineProgress::Stage(Stage::SearchSpace), phase + 1, n);
        }
    }
    for (p, (summary, suspicion)) in hierarchy.phases.iter_mut().zip(summaries) {
        if !summary.is_empty() {
            p.summary = summary;
        }
        p.suspicion = suspicion.clamp(0.0, 1.0);
    }
    let cost = s.close(start, warnings);
    Ok((SearchSpace { prior, hierarchy }, cost))
}

/// Stage 2: the dependency graph, candidate recall (suspicious phases first), transition labels
/// on edges leaving candidates, and pruning with a reason for each pruned candidate.
///
/// # Errors
/// [`Cancelled`].
pub fn dependencies(
    t: &Trajectory,
    sub: &Substrate,
    space: &SearchSpace,
    judge: &dyn Judge,
    opts: &Options,
    warnings: &mut Vec<String>,
) -> Result<(Dependencies, Cost), Cancelled> {
    let start = Instant::now();
    let mut s = opts.session(judge);
    let mut graph = sub.graph.clone();
    let (mut candidates, searched) = recall_candidates(t, sub, space, &graph, opts, &mut s)?;
    add_user_marks(t, &mut candidates, &opts.overrides);
    let ctx = full_context(t, sub, space, &graph, opts);
    let end = signals::final_step(&ctx);
    let mut labels: Vec<(usize, usize, Transition)> = Vec::new();
    // Labels asked of a candidate and the final step with no graph edge between them.
    let mut edgeless: Vec<(usize, usize)> = Vec::new();
    // The earlier candidate each candidate carries on without a dependency edge, found once per
    // candidate (not once per pair: a long run has thousands).
    let carriers: Vec<(usize, [Option<usize>; 4])> = candidates
        .iter()
        .map(|d| {
            (
                d.step,
                [
                    signals::claimed_failure(&ctx, d.step),
                    signals::instructions::relayed_denial(&ctx, d.step),
                    signals::relayed_outcome(&ctx, d.step),
                    signals::misrouted_by(&ctx, d.step),
                ],
            )
        })
        .collect();
    for (k, c) in candidates.iter().enumerate() {
        s.check()?;
        let mut targets = effect_targets(&graph, c.step);
        // A candidate whose output no later step uses gets one label on its edge to the final
        // output: dead_end, or a carrying label when it changes the course of the run.
        if targets.is_empty()
            && let Some(e) = end.filter(|e| *e > c.step)
        {
            targets.push(e);
            edgeless.push((c.step, e));
        }
        // A later claim that reports as done the change this candidate failed to make carries
        // its failure on without a dependency edge (signals::claimed_failure), and so does a step
        // acting on this candidate's report when the report denied what its own search showed
        // (signals::instructions::relayed_denial), a message relaying an outcome its reporter's
        // own source denied (signals::relayed_outcome), and a step of a specialist that a hand-off
        // against the routing instructions chose (signals::misrouted_by): ask about them too.
        for &(d, from) in &carriers {
            if d > c.step && !targets.contains(&d) && from.contains(&Some(c.step)) {
                targets.push(d);
            }
        }
        for to in targets {
            if let Answer::Transition(l) = s.ask(&ctx, &Question::LabelTransition { from: c.step, to }) {
                labels.push((c.step, to, l));
            }
        }
        s.tick(PipelineProgress::Stage(Stage::Dependencies), k + 1, candidates.len());
    }
    for (from, to, l) in &labels {
        graph.set_label(*from, *to, *l);
    }
    let kept: &[(usize, usize, Transition)] = if opts.ablations.off(Component::Pruning) { &[] } else { &labels };
    decision::prune(&mut candidates, kept, end, &opts.overrides);
    // A final step pruned as following a candidate that reaches it by no dependency edge: the
    // candidate's effect reaches the outcome through what it told the user, and the final step
    // reports that outcome. Say so, or the prune reads as a path the report says is not there.
    for c in candidates.iter_mut() {
        if let Some(p) = c.pruned.as_mut()
            && p.transition == Transition::FollowUp
            && let Some(f) = p.by_step
            && edgeless.contains(&(f, c.step))
        {
            p.reason = crate::prose![
                "it reports the outcome that candidate step ",
                crate::diagnosis::Part::Step(f),
                " set through what it told the user, not by a dependency edge"
            ];
        }
    }
    let cost = s.close(start, warnings);
    Ok((Dependencies { graph, candidates, searched }, cost))
}

/// The steps a candidate's output reaches in one hop, or in two through its own protocol children
/// (a tool call reaches what its result feeds).
fn effect_targets(graph: &DepGraph, step: usize) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for (to, e) in graph.outgoing(step) {
        out.push(to);
        if matches!(e.kind, crate::graph::EdgeKind::Protocol(_)) {
            out.extend(graph.outgoing(to).into_iter().map(|(n, _)| n).filter(|n| *n != step));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn recall_candidates(
    t: &Trajectory,
    sub: &Substrate,
    space: &SearchSpace,
    graph: &DepGraph,
    opts: &Options,
    s: &mut Session<'_>,
) -> Result<(Vec<Candidate>, Vec<usize>), Cancelled> {
    let ctx = full_context(t, sub, space, graph, opts);
    // Coarse to fine (FALAT §1): the phases M_hi judged suspicious, most suspicious first
    // (decision::zoom); their steps are then examined with M_mid summaries and M_lo evidence.
    // Without the hierarchy every phase is examined, in order.
    let phases = &space.hierarchy.phases;
    let searched: Vec<usize> = if opts.ablations.off(Component::Hierarchy) {
        (0..phases.len()).collect()
    } else {
        decision::zoom(&phases.iter().map(|p| p.suspicion).collect::<Vec<_>>(), &opts.falat)
    };
    let mut out: Vec<Candidate> = Vec::new();
    let mut searched = searched;
    let total = searched.len();
    let recall = |phase: usize, out: &mut Vec<Candidate>, s: &mut Session<'_>| -> Result<(), Cancelled> {
        s.check()?;
        let p = &phases[phase];
        if let Answer::Candidates(found) = s.ask(&ctx, &Question::RecallCandidates { range: p.range.clone() }) {
            for (step, findings) in found.into_iter().filter(|(s, f)| *s < t.steps.len() && !f.is_empty()) {
                out.push(new_candidate(t, step, findings, Origin::Machine));
            }
        }
        Ok(())
    };
    for (k, &p) in searched.iter().enumerate() {
        recall(p, &mut out, s)?;
        s.tick(PipelineProgress::Recall, k + 1, total);
    }
    // The suspicious phases recalled nothing: with an offline judge, whose phase suspicion is
    // read from summary facts that do not show every finding the steps hold (a page that says it
    // is outdated, a query typed off its instruction), the others are searched, most suspicious
    // first, until one recalls a candidate. A model judged the phases itself, and each search
    // costs it a request.
    let offline = s.judge_kind() != crate::judge::JudgeKind::Llm;
    if out.is_empty() && offline && !opts.ablations.off(Component::Hierarchy) {
        let mut rest: Vec<usize> = (0..phases.len()).filter(|p| !searched.contains(p)).collect();
        rest.sort_by(|a, b| phases[*b].suspicion.total_cmp(&phases[*a].suspicion).then(a.cmp(b)));
        for p in rest {
            recall(p, &mut out, s)?;
            searched.push(p);
            if !out.is_empty() {
                break;
            }
        }
    }
    out.sort_by_key(|c| c.step);
    out.dedup_by_key(|c| c.step);
    Ok((out, searched))
}

fn new_candidate(t: &Trajectory, step: usize, findings: Vec<Finding>, origin: Origin) -> Candidate {
    let score = combine(&findings);
    Candidate { step, agent: t.steps[step].agent.clone(), findings, score, pruned: None, verification: None, origin }
}

fn add_user_marks(t: &Trajectory, candidates: &mut Vec<Candidate>, o: &Overrides) {
    // A step both marked and pinned is marked once.
    let steps: std::collections::BTreeSet<usize> = o.marked.iter().chain(o.pinned.iter()).copied().collect();
    for m in steps {
        if m >= t.steps.len() {
            continue;
        }
        let how = if o.pinned == Some(m) { "pinned by the user" } else { "marked by the user" };
        let user = Finding { signal: Signal::UserMarked, evidence: how.into(), weight: 1.0 };
        match candidates.iter_mut().find(|c| c.step == m) {
            Some(c) => {
                c.findings.push(user);
                c.score = combine(&c.findings);
                c.origin = Origin::User;
            }
            None => candidates.push(new_candidate(t, m, vec![user], Origin::User)),
        }
    }
    candidates.sort_by_key(|c| c.step);
}

/// Stage 3: verification of the unpruned candidates; the earliest valid one is chosen.
///
/// # Errors
/// [`Cancelled`].
pub fn verify(
    t: &Trajectory,
    sub: &Substrate,
    space: &SearchSpace,
    deps: &Dependencies,
    judge: &dyn Judge,
    opts: &Options,
    warnings: &mut Vec<String>,
) -> Result<(Verified, Cost), Cancelled> {
    let start = Instant::now();
    let mut s = opts.session(judge);
    let ctx = full_context(t, sub, space, &deps.graph, opts);
    let mut candidates = deps.candidates.clone();
    let live: Arc<[usize]> = candidates.iter().filter(|c| c.pruned.is_none()).map(|c| c.step).collect();
    let pinned = opts.overrides.pinned.filter(|p| *p < t.steps.len());
    let mut checks: Vec<Checked> = Vec::new();
    if !opts.ablations.off(Component::Verification) {
        // Every unpruned candidate, both criteria (FALAT §3): no cap, no shortcut.
        for (k, &step) in live.iter().enumerate() {
            s.check()?;
            let q = |criterion| Question::Verify { step, criterion, live: live.clone() };
            let independence = as_criterion(s.ask(&ctx, &q(CriterionKind::Independence)));
            let sufficiency = as_criterion(s.ask(&ctx, &q(CriterionKind::Sufficiency)));
            checks.push(Checked { step, independence, sufficiency });
            s.tick(PipelineProgress::Stage(Stage::Verification), k + 1, live.len());
        }
    }
    // The calibrated ranking's most probable step the user did not exclude: named when
    // verification does not tell the candidates apart, and when nothing else is named.
    let probs = judge.step_probabilities(&ctx);
    let ranked =
        crate::rank::order(&probs).into_iter().find(|s| probs[*s] > 0.0 && !opts.overrides.excluded.contains(s));
    // An unverified pick is never the final submission when an earlier step holds a finding:
    // handing the result in only delivers what that step made.
    let before_submission = |step: usize| earlier_than_submission(t, &candidates, &probs, opts, step);
    let first = ranked;
    let ranked = ranked.map(before_submission);
    let verdict = match decision::decide(&candidates, &checks, &opts.falat, pinned, &probs, ranked) {
        Verdict::Fallback(Some(s), f) => Verdict::Fallback(Some(before_submission(s)), f),
        Verdict::Ranked(s, Undiscriminating::NonePassed { checked, .. }) => {
            let past_submission = ranked != first;
            let near = if past_submission {
                None
            } else {
                decision::near_step_with_finding(&candidates, &probs, &opts.overrides.excluded, s)
            };
            Verdict::Ranked(
                near.unwrap_or(s),
                Undiscriminating::NonePassed { checked, past_submission, with_finding: near.is_some() },
            )
        }
        v => v,
    };
    // A run with nothing recalled, no error and no mismatch with the expected output has no
    // failure to attribute: say so instead of naming a step.
    let clean = pinned.is_none() && candidates.is_empty() && signals::no_failure(&ctx).is_some();
    let verdict = if clean { Verdict::NoFailure } else { verdict };
    // No fixed fallback step: the best-ranked step is named, and its probability says how
    // little that means.
    let chosen = if clean { None } else { verdict.step().or(ranked) };
    // Candidates are sorted by step: find one by binary search.
    let at = |candidates: &[Candidate], step: usize| candidates.binary_search_by_key(&step, |c| c.step).ok();
    let best = decision::best_live_score(&candidates);
    for k in checks {
        let i = at(&candidates, k.step).expect("live candidate");
        let c = &mut candidates[i];
        let valid = decision::is_valid(c, &k, best, &opts.falat);
        let precedence = decision::precedence(k.step, valid, verdict);
        c.verification = Some(Verification { independence: k.independence, sufficiency: k.sufficiency, precedence });
    }
    let cost = s.close(start, warnings);
    Ok((Verified { candidates, chosen, verdict: Some(verdict) }, cost))
}

/// `step`, or, when it is its agent's final submission ([`signals::actions::final_submission`])
/// and an earlier step holds a finding, the most probable such earlier step (`probs`; the earlier
/// on ties) that the user did not exclude.
fn earlier_than_submission(
    t: &Trajectory,
    candidates: &[Candidate],
    probs: &[f32],
    opts: &Options,
    step: usize,
) -> usize {
    if !signals::actions::final_submission(t, step) {
        return step;
    }
    let p = |s: usize| probs.get(s).copied().unwrap_or(0.0);
    candidates
        .iter()
        .filter(|c| c.step < step && !c.findings.is_empty() && !opts.overrides.excluded.contains(&c.step))
        .map(|c| c.step)
        .max_by(|a, b| p(*a).total_cmp(&p(*b)).then(b.cmp(a)))
        .unwrap_or(step)
}

fn as_criterion(a: Answer) -> Criterion {
    match a {
        Answer::Criterion(c) => c,
        _ => Criterion { passed: false, evidence: "the judge gave no verdict".into() },
    }
}

/// Stage 4: local re-search in a window of ±`opts.window` steps around the chosen step.
///
/// # Errors
/// [`Cancelled`].
#[allow(clippy::too_many_arguments)]
pub fn research(
    t: &Trajectory,
    sub: &Substrate,
    space: &SearchSpace,
    deps: &Dependencies,
    verified: &Verified,
    judge: &dyn Judge,
    opts: &Options,
    warnings: &mut Vec<String>,
) -> Result<(Option<ReSearch>, Cost), Cancelled> {
    let start = Instant::now();
    let mut s = opts.session(judge);
    let Some(chosen) = verified.chosen else {
        return Ok((None, Cost::default()));
    };
    if opts.ablations.off(Component::Research) {
        let reason = Prose::from("re-search is switched off");
        let out = ReSearch { decisive: chosen, roles: vec![(chosen, Role::RootCause)], reason, checks: Vec::new() };
        return Ok((Some(out), s.close(start, warnings)));
    }
    s.check()?;
    let ctx = full_context(t, sub, space, &deps.graph, opts);
    let window = chosen.saturating_sub(opts.window)..(chosen + opts.window + 1).min(t.steps.len());
    // Blind comparison (FALAT §4): the judge is not told which step was chosen.
    let answer = s.ask(&ctx, &Question::Roles { window: window.clone() });
    // A counterfactual check of every step of the window, both criteria.
    let steps: Arc<[usize]> = window.clone().collect();
    let mut checks = Vec::with_capacity(steps.len());
    for &step in steps.iter() {
        s.check()?;
        let q = |criterion| Question::Verify { step, criterion, live: steps.clone() };
        let independence = as_criterion(s.ask(&ctx, &q(CriterionKind::Independence)));
        let sufficiency = as_criterion(s.ask(&ctx, &q(CriterionKind::Sufficiency)));
        checks.push(Checked { step, independence, sufficiency });
    }
    let out = match answer {
        Answer::Roles { roles, decisive: pick, reason } if window.contains(&pick) => {
            let keep = opts.overrides.pinned.is_some() || opts.overrides.excluded.contains(&pick);
            // The comparison's reason goes where the sentence says what it names.
            let (decisive, why) = if keep {
                let why = prose!["kept step ", Step(chosen), ": the user's overrides decide; the comparison: "];
                (chosen, why.with(reason))
            } else {
                decision::research_move(chosen, pick, &reason, &checks)
            };
            let mut roles = roles;
            normalise_roles(&mut roles, decisive);
            ReSearch { decisive, roles, reason: why, checks }
        }
        _ => ReSearch {
            decisive: chosen,
            roles: vec![(chosen, Role::RootCause)],
            reason: "the judge gave no usable roles".into(),
            checks,
        },
    };
    s.tick(PipelineProgress::Stage(Stage::ReSearch), 1, 1);
    let cost = s.close(start, warnings);
    Ok((Some(out), cost))
}

/// Exactly one ROOT_CAUSE, at the decisive step.
fn normalise_roles(roles: &mut Vec<(usize, Role)>, decisive: usize) {
    roles.retain(|(s, r)| *s != decisive && *r != Role::RootCause);
    roles.push((decisive, Role::RootCause));
    roles.sort_by_key(|(s, _)| *s);
}

/// FALAT's raw verdict from what has run: the decisive step, its candidate's findings and the rule
/// that named it, the roles, the path, the candidates, costs and details. The shared finishing
/// step (`methods::finish`) ranks every step, sets the confidence and renders the reason.
fn assemble(t: &Trajectory, p: &Pipeline, judge: &dyn Judge, opts: &Options) -> Diagnosis {
    let candidates = match (&p.verified, &p.deps) {
        (Some(v), _) => v.candidates.clone(),
        (None, Some(d)) => d.candidates.clone(),
        _ => Vec::new(),
    };
    let decisive = p.research.as_ref().map(|r| r.decisive).or_else(|| p.verified.as_ref().and_then(|v| v.chosen));
    let no_failure = p.verified.as_ref().is_some_and(|v| v.verdict == Some(Verdict::NoFailure));
    let mut d = Diagnosis {
        trajectory: t.id.clone(),
        method: crate::diagnosis::Method::Falat,
        judge: judge.name(),
        decisive_step: decisive,
        agent: decisive.map(|s| t.steps[s].agent.clone()),
        roles: p.research.as_ref().map(|r| r.roles.clone()).unwrap_or_default(),
        candidates,
        cost: p.costs.clone(),
        warnings: p.warnings.clone(),
        used_ground_truth: opts.ground_truth && t.expected_output.is_some(),
        overrides: opts.overrides.clone(),
        ..Diagnosis::default()
    };
    if let (Some(step), Some(space), Some(deps), Some(sub)) = (decisive, &p.space, &p.deps, &p.substrate) {
        let ctx = full_context(t, sub, space, &deps.graph, opts);
        let end = signals::final_step(&ctx);
        // Empty when no dependency path leads from the decisive step to the final output (its
        // sufficiency then rests on steering the run, not on values it passes on).
        // (A step after the final one has no path to it: the path is empty, not the step alone.)
        d.path =
            end.and_then(|e| if step == e { Some(vec![step]) } else { deps.graph.path(step, e) }).unwrap_or_default();
        d.final_output_step = end;
        explain(&mut d, step, p.research.as_ref());
        if d.explanation.findings.is_empty() {
            // Re-search may name a step recall did not search (its phase was not suspicious):
            // its findings are still what the comparison read.
            d.explanation.findings = signals::recall(&ctx, step).unwrap_or_default();
            d.category = d.explanation.category(ErrorCategory::Unknown);
        }
        let moved = p.research.as_ref().is_some_and(|r| Some(r.decisive) != p.verified.as_ref().and_then(|v| v.chosen));
        // The re-search checks a window's steps against each other only, so it can pass a step
        // verification failed (an earlier candidate outside the window feeds it): say which, or
        // the warning and the checks read as a contradiction.
        let window_pass = p
            .research
            .as_ref()
            .is_some_and(|r| r.checks.iter().any(|k| k.step == step && k.independence.passed && k.sufficiency.passed));
        let note = if window_pass {
            " (the re-search's check passes it, but against the steps of its window only)"
        } else {
            ""
        };
        if let Some(Verdict::Ranked(_, why)) = p.verified.as_ref().and_then(|v| v.verdict)
            && !moved
            && d.overrides.pinned != Some(step)
        {
            let clause = why.clause();
            if let decision::Undiscriminating::NonePassed { .. } = why {
                d.warnings.push(format!("unverified: {clause} (step {step}){note}"));
                d.fallback = Some(clause.as_str().into());
            }
            // No finding on the named step: say what shows the run failed, or the verdict reads
            // like a run with no failure that was given a ROOT_CAUSE anyway.
            let failure = if d.explanation.findings.is_empty() { signals::failure_shown(&ctx) } else { None };
            d.explanation.rule = Rule::Ranking { why: clause.into(), failure };
        }
        if let Some(Verdict::Fallback(named, rule)) = p.verified.as_ref().and_then(|v| v.verdict)
            && !moved
        {
            // With no live candidate left for the fallback, the best-ranked step is named.
            let (name, why) = match named {
                Some(_) => (
                    rule.as_str(),
                    prose![
                        "no candidate passed both verification criteria; step ",
                        Step(step),
                        format!(" is named by the {} fallback", rule.as_str())
                    ],
                ),
                None => (
                    "ranked-first",
                    prose![
                        format!(
                            "no candidate passed both verification criteria and none was left for the {} fallback; \
                             step ",
                            rule.as_str()
                        ),
                        Step(step),
                        " is the best-ranked step"
                    ],
                ),
            };
            d.warnings.push(format!("unverified: {why}{note}"));
            d.fallback = Some(why.clone());
            d.explanation.rule = Rule::Fallback { name: name.to_string(), why };
        }
    }
    if no_failure && let (Some(space), Some(deps), Some(sub)) = (&p.space, &p.deps, &p.substrate) {
        let ctx = full_context(t, sub, space, &deps.graph, opts);
        d.final_output_step = signals::final_step(&ctx);
        let why = signals::no_failure(&ctx).unwrap_or_default();
        d.explanation.rule = Rule::NoFailure { why };
        d.category = ErrorCategory::Unknown;
    }
    d.details.push(Detail::Options(opts.falat.departures(opts.window)));
    crate::methods::offline_note(&mut d, judge);
    if !opts.ablations.is_empty() {
        d.details.push(Detail::Ablated(opts.ablations.iter().collect()));
    }
    if let (Some(space), Some(deps)) = (&p.space, &p.deps) {
        let phases = space
            .hierarchy
            .phases
            .iter()
            .map(|ph| PhaseSearched {
                phase: ph.id,
                steps: ph.range.clone(),
                purpose: ph.purpose,
                agent: ph.agent.clone(),
                suspicion: ph.suspicion,
                searched: deps.searched.contains(&ph.id),
            })
            .collect();
        d.details.push(Detail::PhaseSearch(phases));
    }
    if let Some(r) = &p.research
        && !r.checks.is_empty()
    {
        let checks = r
            .checks
            .iter()
            .map(|k| StepCheck { step: k.step, independence: k.independence.passed, sufficiency: k.sufficiency.passed })
            .collect();
        d.details.push(Detail::ReSearchChecks(checks));
    }
    d
}

/// The decisive step's category and explanation: its candidate's findings, the pin, the re-search.
fn explain(d: &mut Diagnosis, step: usize, research: Option<&ReSearch>) {
    let pinned = d.overrides.pinned == Some(step);
    d.explanation.findings = d.candidate(step).map(|c| c.findings.clone()).unwrap_or_default();
    d.explanation.rule = if pinned { Rule::Pinned } else { Rule::Method };
    d.explanation.research = research.map(|r| r.reason.clone());
    d.category = d.explanation.category(ErrorCategory::Unknown);
}

#[cfg(test)]
mod tests;
