//! The heuristic judge's answers to the attribution questions of ECHO, DeFA and the Who&When
//! baselines ([`crate::judge::attribution`]).
//!
//! They read the structure, not the context text: every answer is built from the findings of
//! [`recall`] (the same signals FALAT uses, unchanged), aggregated the way the question asks
//! (one global pick, a sequential verdict, a comparison of halves, an analyst's perspective, a
//! propagation edge, an adjudication). The constants are documented in [`params`]; none refers to
//! a data set.

use std::ops::Range;

use super::label;
use crate::diagnosis::{Finding, Signal, Transition};
use crate::hierarchy::{Action, Origin};
use crate::judge::attribution::{
    Alternative, Analysis, Conclusion, Effect, ErrorCategory, Evaluation, Half, Perspective, PropagationEdge,
    SEGMENT_CANDIDATES, VoteTarget,
};
use crate::judge::{Answer, Context, Question};
use crate::substrate::signals::{combine, default_step, final_step, is_own_signal, reaches_final, recall};
use crate::text;

/// Thresholds of the heuristic attribution answers (0..=1 step scores, the noisy-or of findings).
pub mod params {
    /// Step-by-step says "decisive" at the first step scoring at least this.
    pub const STEP_BY_STEP: f32 = 0.45;
    /// DeFA adjudication: the earliest candidate within this share of the best adjudicated score
    /// wins (temporal precedence among near-equals).
    pub const ADJUDICATION_SHARE: f32 = 0.75;
    /// DeFA adjudication: factor for a candidate that only continues an earlier candidate's error.
    pub const INHERITED: f32 = 0.4;
    /// DeFA adjudication: factor for a candidate a later step corrects.
    pub const CORRECTED: f32 = 0.3;
    /// DeFA adjudication: factor for a candidate whose effect does not reach the final output.
    pub const UNREACHED: f32 = 0.6;
    /// Confidence given when nothing points anywhere and a default step is named.
    pub const DEFAULT_CONFIDENCE: f32 = 0.15;
    /// Alternative hypotheses an ECHO analyst gives at most.
    pub const ALTERNATIVES: usize = 2;
}

/// Answers an attribution question (the other kinds are answered by the parent module).
pub(super) fn answer(ctx: &Context<'_>, q: &Question) -> Answer {
    match q {
        Question::LocateError { .. } => locate_error(ctx),
        Question::IsDecisive { step, .. } => is_decisive(ctx, *step),
        Question::LocateInRange { range, split, .. } => locate_in_range(ctx, range.clone(), *split),
        Question::AnalystVote { perspective, target, .. } => Answer::Analysis(analyse(ctx, *perspective, *target)),
        Question::SegmentRecall { segment, .. } => Answer::Candidates(segment_recall(ctx, segment.clone())),
        Question::TracePropagation { candidates, .. } => Answer::Propagation { edges: propagation(ctx, candidates) },
        Question::Adjudicate { candidates, edges, .. } => adjudicate(ctx, candidates, edges),
        // Not reached: the parent answers the FALAT kinds before delegating here.
        _ => Answer::Candidates(Vec::new()),
    }
}

/// DeFA recall in one segment: the [`SEGMENT_CANDIDATES`] strongest steps of the segment (the
/// earlier on ties), in step order.
fn segment_recall(ctx: &Context<'_>, segment: Range<usize>) -> Vec<(usize, Vec<Finding>)> {
    let n = ctx.trajectory.steps.len();
    let mut found: Vec<(usize, Vec<Finding>)> =
        segment.filter(|i| *i < n).filter_map(|i| recall(ctx, i).map(|f| (i, f))).collect();
    found.sort_by(|a, b| combine(&b.1).total_cmp(&combine(&a.1)).then(a.0.cmp(&b.0)));
    found.truncate(SEGMENT_CANDIDATES);
    found.sort_by_key(|(i, _)| *i);
    found
}

/// The score of one step: the noisy-or of its findings, 0 without any.
fn score(ctx: &Context<'_>, i: usize) -> f32 {
    recall(ctx, i).map(|f| combine(&f)).unwrap_or(0.0)
}

fn scores(ctx: &Context<'_>) -> Vec<f32> {
    (0..ctx.trajectory.steps.len()).map(|i| score(ctx, i)).collect()
}

/// The evidence of a step's strongest finding, for reasons.
fn evidence(ctx: &Context<'_>, i: usize) -> String {
    let f = recall(ctx, i).unwrap_or_default();
    match f.iter().max_by(|a, b| a.weight.total_cmp(&b.weight)) {
        Some(f) => format!("{} ({})", f.evidence, f.signal.as_str()),
        None => "no violation found".into(),
    }
}

/// The first maximum of `values` (earliest index on ties), if any value is positive.
fn first_max(values: impl Iterator<Item = (usize, f32)>) -> Option<(usize, f32)> {
    values.filter(|(_, v)| *v > 0.0).fold(None, |best, (i, v)| match best {
        Some((_, b)) if b >= v => best,
        _ => Some((i, v)),
    })
}

/// All-at-once: the most critical error of the whole log (the highest step score, the earliest on
/// ties); with no finding, the first step acting on the task.
fn locate_error(ctx: &Context<'_>) -> Answer {
    let t = ctx.trajectory;
    let (step, confidence, reason) = match first_max(scores(ctx).into_iter().enumerate()) {
        Some((i, s)) => (i, s, format!("step {i} shows the strongest error: {}", evidence(ctx, i))),
        None => {
            let d = default_step(ctx, &[]).unwrap_or(0);
            (d, params::DEFAULT_CONFIDENCE, format!("no step shows an error; step {d} is the first to act on the task"))
        }
    };
    let agent = t.steps.get(step).map(|s| s.agent.clone()).unwrap_or_default();
    Answer::Attribution { agent, step, reason: text::clip(&reason, 300), confidence }
}

/// Step-by-step: decisive when the step's score reaches [`params::STEP_BY_STEP`]. The confidence
/// is the score for a "yes" and one minus it for a "no".
fn is_decisive(ctx: &Context<'_>, step: usize) -> Answer {
    let s = score(ctx, step);
    let decisive = s >= params::STEP_BY_STEP;
    let reason = if decisive {
        format!("step {step} introduces an error: {}", evidence(ctx, step))
    } else if s > 0.0 {
        format!("step {step} shows only weak signs of an error: {}", evidence(ctx, step))
    } else {
        format!("step {step} shows no error")
    };
    Answer::Verdict { decisive, reason: text::clip(&reason, 300), confidence: if decisive { s } else { 1.0 - s } }
}

/// Binary search: the half holding the most critical error (the Who&When prompt's question), i.e.
/// the higher maximum step score; a tie, no evidence on either side included, goes to the first
/// half, since an earlier error precedes its symptoms.
fn locate_in_range(ctx: &Context<'_>, range: Range<usize>, split: usize) -> Answer {
    let n = ctx.trajectory.steps.len();
    let worst = |r: Range<usize>| r.filter(|i| *i < n).map(|i| score(ctx, i)).fold(0.0, f32::max);
    let (first, second) = (worst(range.start..split), worst(split..range.end));
    let half = if first >= second { Half::First } else { Half::Second };
    let reason = format!(
        "strongest error in steps {}..{}: {first:.2}, in steps {split}..{}: {second:.2}",
        range.start, split, range.end
    );
    Answer::Half { half, reason }
}

/// How an ECHO analyst of one perspective weighs the heuristic signals and decides. Every analyst
/// looks for the decisive error, the earliest one that matters: it names the earliest step within
/// its `earliest` share of its strongest step; perspectives differ in weights, thresholds and
/// how far back they are willing to go.
#[derive(Debug, Clone, Copy)]
struct Lens {
    /// Factor for raw-evidence signals (unsourced values, wrong value origins).
    detail: f32,
    /// Factor for process signals (deviation, delegation, premature answer, repeats, ignored errors).
    process: f32,
    /// Factor for failed actions.
    failure: f32,
    /// Factor for assumptions and hedges.
    soft: f32,
    /// Under this likelihood the analyst concludes that no agent is clearly at fault.
    threshold: f32,
    /// Confidence = calibration × likelihood.
    calibration: f32,
    /// A runner-up agent within this share of the top one makes a multi-agent conclusion.
    multi: Option<f32>,
    /// Name the earliest step within this share of the strongest one.
    earliest: f32,
    /// An agent's likelihood is the noisy-or over its steps (patterns add up) instead of the max.
    accumulate: bool,
    /// Discount steps whose output nothing later uses.
    consequence: bool,
}

/// The lens of each perspective (ECHO A.5: attribution preferences and evidence priorities).
fn lens(p: Perspective) -> Lens {
    let base = Lens {
        detail: 1.0,
        process: 1.0,
        failure: 1.0,
        soft: 1.0,
        threshold: 0.3,
        calibration: 1.0,
        multi: None,
        earliest: 0.8,
        accumulate: false,
        consequence: false,
    };
    match p {
        Perspective::Conservative => {
            Lens { process: 0.9, soft: 0.8, threshold: 0.45, calibration: 0.85, earliest: 0.9, ..base }
        }
        Perspective::Liberal => {
            Lens { process: 1.1, soft: 1.1, threshold: 0.2, multi: Some(0.8), earliest: 0.6, ..base }
        }
        Perspective::DetailFocused => Lens { detail: 1.4, process: 0.8, soft: 0.9, calibration: 0.95, ..base },
        Perspective::PatternFocused => Lens {
            detail: 0.8,
            process: 1.4,
            failure: 1.1,
            calibration: 0.95,
            multi: Some(0.9),
            accumulate: true,
            ..base
        },
        Perspective::Skeptical => Lens {
            failure: 0.8,
            soft: 0.6,
            threshold: 0.35,
            calibration: 0.8,
            earliest: 0.8,
            consequence: true,
            ..base
        },
        Perspective::General => Lens { multi: Some(0.95), ..base },
    }
}

impl Lens {
    fn factor(&self, s: Signal) -> f32 {
        match s {
            Signal::UnsourcedValue
            | Signal::WrongValueOrigin
            | Signal::UnavailableValue
            | Signal::CountMismatch
            | Signal::Miscalculation
            | Signal::IgnoredResult
            | Signal::ArgumentMismatch => self.detail,
            Signal::PriorDeviation
            | Signal::WrongDelegation
            | Signal::PrematureAnswer
            | Signal::RepeatedFailure
            | Signal::BlockingChange
            | Signal::UnverifiedAssertion
            | Signal::NoProgress
            | Signal::UnconfirmedAction
            | Signal::PartialCheck
            | Signal::PartialSearch
            | Signal::OmittedHits
            | Signal::ForbiddenChange
            | Signal::RefusalBypassed
            | Signal::WrongStatistic
            | Signal::IgnoredToolError => self.process,
            Signal::FailedAction | Signal::RejectedAction => self.failure,
            Signal::Assumption => self.soft,
            Signal::UserMarked | Signal::Ranked => 1.0,
        }
    }

    /// A step's score through the lens.
    fn score(&self, ctx: &Context<'_>, i: usize) -> f32 {
        let Some(findings) = recall(ctx, i) else { return 0.0 };
        let weighed: Vec<Finding> = findings
            .into_iter()
            .map(|f| Finding { weight: (f.weight * self.factor(f.signal)).clamp(0.0, 1.0), ..f })
            .collect();
        let s = combine(&weighed);
        if self.consequence && !has_consequence(ctx, i) { 0.6 * s } else { s }
    }

    /// The step this lens picks among `(step, score)` in step order: the earliest within its
    /// share of the best.
    fn pick(&self, scored: &[(usize, f32)]) -> Option<(usize, f32)> {
        let best = first_max(scored.iter().copied())?;
        scored.iter().copied().find(|(_, s)| *s > 0.0 && *s >= self.earliest * best.1)
    }
}

/// Whether anything later builds on step `i`: a later step reuses a value first seen there, a
/// protocol link leaves it, or it holds the final output.
fn has_consequence(ctx: &Context<'_>, i: usize) -> bool {
    let used_later = ctx.facts.used_later.get_or_init(|| {
        let n = ctx.hierarchy.steps.len();
        let mut used = vec![false; n];
        for (k, s) in ctx.hierarchy.steps.iter().enumerate() {
            for (_, o) in &s.uses {
                if let Origin::Step(j) = *o
                    && j < k
                {
                    used[j] = true;
                }
            }
        }
        for l in &ctx.trajectory.links {
            if l.from < n {
                used[l.from] = true;
            }
        }
        used
    });
    used_later.get(i).copied().unwrap_or(false) || final_step(ctx) == Some(i)
}

/// Agents in order of first appearance among the steps.
fn agent_order(ctx: &Context<'_>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in &ctx.trajectory.steps {
        if !out.iter().any(|a| a.eq_ignore_ascii_case(&s.agent)) {
            out.push(s.agent.clone());
        }
    }
    out
}

/// An ECHO analyst's analysis through its perspective's lens. The agent, step and unified
/// questions are answered independently of each other: the step analysis looks at every step,
/// whatever agent the agent analysts may have found.
fn analyse(ctx: &Context<'_>, p: Perspective, target: VoteTarget) -> Analysis {
    let l = lens(p);
    let scored: Vec<(usize, f32)> = (0..ctx.trajectory.steps.len()).map(|i| (i, l.score(ctx, i))).collect();
    let mut a = match target {
        VoteTarget::Agent | VoteTarget::Both => analyse_agents(ctx, p, &l, &scored),
        VoteTarget::Step => analyse_steps(ctx, p, &l, &scored),
    };
    a.alternatives = alternatives(ctx, &scored, &a, target);
    a
}

/// Up to [`params::ALTERNATIVES`] alternative hypotheses: for the agent question the other agents'
/// strongest steps, for the step question the next strongest steps, each with its lens score.
fn alternatives(ctx: &Context<'_>, scored: &[(usize, f32)], a: &Analysis, target: VoteTarget) -> Vec<Alternative> {
    let steps = &ctx.trajectory.steps;
    let mut ranked: Vec<(usize, f32)> =
        scored.iter().copied().filter(|(i, s)| *s > 0.0 && Some(*i) != a.step).collect();
    ranked.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    let mut out: Vec<Alternative> = Vec::new();
    for (i, s) in ranked {
        let agent = &steps[i].agent;
        let named = a.agents.iter().any(|x| x.eq_ignore_ascii_case(agent));
        let seen = out.iter().any(|x| x.agent.eq_ignore_ascii_case(agent));
        if target != VoteTarget::Step && (named || seen) {
            continue;
        }
        out.push(Alternative {
            agent: agent.clone(),
            step: Some(i),
            likelihood: round2(s),
            reason: text::clip(&evidence(ctx, i), 160),
        });
        if out.len() == params::ALTERNATIVES {
            break;
        }
    }
    out
}

/// The agent analysis: per-agent likelihoods (the agent's strongest step, or the noisy-or of its
/// steps for an accumulating lens); the attributed agent is the actor of the step the lens picks
/// over the whole trajectory, joined by agents within the multi-agent share of its likelihood.
fn analyse_agents(ctx: &Context<'_>, p: Perspective, l: &Lens, scored: &[(usize, f32)]) -> Analysis {
    let steps = &ctx.trajectory.steps;
    let evaluations = evaluate_agents(ctx, l, scored);
    let Some((step, _)) = l.pick(scored) else {
        return no_fault(ctx, p, None, evaluations);
    };
    let agent = steps[step].agent.clone();
    let likelihood = evaluations.iter().find(|e| e.agent.eq_ignore_ascii_case(&agent)).map_or(0.0, |e| e.likelihood);
    if likelihood < l.threshold {
        return no_fault(ctx, p, Some(step), evaluations);
    }
    let mut agents = vec![agent.clone()];
    if let Some(m) = l.multi {
        let others =
            evaluations.iter().filter(|e| !e.agent.eq_ignore_ascii_case(&agent) && e.likelihood >= m * likelihood);
        agents.extend(others.map(|e| e.agent.clone()));
    }
    let conclusion = if agents.len() > 1 { Conclusion::MultiAgent } else { Conclusion::SingleAgent };
    let why = format!("{p}: {agent} made the decisive error at step {step}: {}", evidence(ctx, step));
    Analysis {
        conclusion,
        agents,
        step: Some(step),
        confidence: round2(l.calibration * likelihood),
        reasoning: text::clip(&why, 300),
        evaluations: evaluations.into_iter().filter(|e| e.likelihood > 0.0).collect(),
        alternatives: Vec::new(),
    }
}

/// The step analysis: the step the lens picks over the whole trajectory (any agent's); the
/// attributed agent is its actor.
fn analyse_steps(ctx: &Context<'_>, p: Perspective, l: &Lens, scored: &[(usize, f32)]) -> Analysis {
    let steps = &ctx.trajectory.steps;
    let evaluations = evaluate_agents(ctx, l, scored);
    match l.pick(scored) {
        Some((i, s)) if s >= l.threshold => Analysis {
            conclusion: Conclusion::SingleAgent,
            agents: vec![steps[i].agent.clone()],
            step: Some(i),
            confidence: round2(l.calibration * s),
            reasoning: text::clip(&format!("{p}: step {i} ({}): {}", steps[i].agent, evidence(ctx, i)), 300),
            evaluations: evaluations.into_iter().filter(|e| e.likelihood > 0.0).collect(),
            alternatives: Vec::new(),
        },
        picked => no_fault(ctx, p, picked.map(|(i, _)| i), evaluations),
    }
}

/// Each agent's error likelihood through the lens with the evidence of its strongest step, most
/// likely first (equal ones in order of first appearance).
fn evaluate_agents(ctx: &Context<'_>, l: &Lens, scored: &[(usize, f32)]) -> Vec<Evaluation> {
    let steps = &ctx.trajectory.steps;
    let mut evaluations: Vec<Evaluation> = agent_order(ctx)
        .into_iter()
        .map(|a| {
            let own: Vec<(usize, f32)> =
                scored.iter().copied().filter(|(i, _)| steps[*i].agent.eq_ignore_ascii_case(&a)).collect();
            let likelihood = if l.accumulate {
                1.0 - own.iter().map(|(_, s)| 1.0 - s).product::<f32>()
            } else {
                own.iter().map(|(_, s)| *s).fold(0.0, f32::max)
            };
            let evidence = match first_max(own.iter().copied()) {
                Some((i, _)) => text::clip(&format!("step {i}: {}", evidence(ctx, i)), 200),
                None => String::new(),
            };
            Evaluation { agent: a, likelihood: round2(likelihood), evidence }
        })
        .collect();
    evaluations.sort_by(|a, b| b.likelihood.total_cmp(&a.likelihood));
    evaluations
}

/// A no-clear-fault analysis. It still names the most likely step (`step`, else the first step
/// acting on the task) and its actor. Its confidence (in the absence of a clear fault) is half of
/// one minus the highest likelihood.
fn no_fault(ctx: &Context<'_>, p: Perspective, step: Option<usize>, evaluations: Vec<Evaluation>) -> Analysis {
    let top = evaluations.first().map(|e| e.likelihood).unwrap_or(0.0);
    let step = step.or_else(|| default_step(ctx, &[]));
    Analysis {
        conclusion: Conclusion::NoClearFault,
        agents: step.map(|s| ctx.trajectory.steps[s].agent.clone()).into_iter().collect(),
        step,
        confidence: round2(0.5 * (1.0 - top)),
        reasoning: format!("{p}: no agent is clearly at fault (highest likelihood {top:.2})"),
        evaluations: evaluations.into_iter().filter(|e| e.likelihood > 0.0).collect(),
        alternatives: Vec::new(),
    }
}

fn round2(x: f32) -> f32 {
    (x * 100.0).round() / 100.0
}

/// The effect of a FALAT transition label in DeFA's terms (`no_influence`, `dead_end`: none).
pub fn effect_of(t: Transition) -> Option<Effect> {
    match t {
        Transition::FollowUp | Transition::Redundancy => Some(Effect::Continued),
        Transition::ErrorShift => Some(Effect::Amplified),
        Transition::Correction => Some(Effect::Corrected),
        Transition::NoInfluence | Transition::DeadEnd => None,
    }
}

/// DeFA propagation: for each candidate, its sources (direct predecessors in the dependency graph
/// that show findings of their own) and its effects (the steps its output reaches in one hop, or
/// two through its own protocol children), each labelled by what the later step did.
fn propagation(ctx: &Context<'_>, candidates: &[usize]) -> Vec<PropagationEdge> {
    let Some(g) = ctx.graph else { return Vec::new() };
    let mut out: Vec<PropagationEdge> = Vec::new();
    for &c in candidates.iter().filter(|c| **c < g.len()) {
        for (s, _) in g.incoming(c) {
            if s < c && recall(ctx, s).is_some() {
                out.extend(effect_of(label(ctx, s, c)).map(|effect| PropagationEdge { from: s, to: c, effect }));
            }
        }
        for to in reach(g, c) {
            out.extend(effect_of(label(ctx, c, to)).map(|effect| PropagationEdge { from: c, to, effect }));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Steps a step's output reaches in one hop, or two through its own protocol children.
fn reach(g: &crate::graph::DepGraph, step: usize) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for (to, e) in g.outgoing(step) {
        out.push(to);
        if matches!(e.kind, crate::graph::EdgeKind::Protocol(_)) {
            out.extend(g.outgoing(to).into_iter().map(|(n, _)| n).filter(|n| *n > step));
        }
    }
    out.sort_unstable();
    out.dedup();
    out.retain(|t| *t > step);
    out
}

/// DeFA adjudication: every candidate's score, lowered when it only continues an earlier
/// candidate's error ([`params::INHERITED`]), when a later step corrects it
/// ([`params::CORRECTED`]) and when its effect does not reach the final output
/// ([`params::UNREACHED`]); the earliest candidate within [`params::ADJUDICATION_SHARE`] of the
/// best wins.
fn adjudicate(ctx: &Context<'_>, candidates: &[usize], edges: &[PropagationEdge]) -> Answer {
    let n = ctx.trajectory.steps.len();
    let mut cands: Vec<usize> = candidates.iter().copied().filter(|c| *c < n).collect();
    cands.sort_unstable();
    cands.dedup();
    let index = EdgeIndex::new(&cands, edges);
    let rated: Vec<(usize, f32)> = cands.iter().map(|&c| (c, adjudicated(ctx, c, &index))).collect();
    let Some((_, best)) = first_max(rated.iter().copied()) else {
        let step = cands.first().copied().or_else(|| default_step(ctx, &[])).unwrap_or(0);
        return Answer::Adjudication {
            step,
            category: ErrorCategory::Other,
            reason: format!("no candidate shows an error; step {step} is named by default"),
            confidence: params::DEFAULT_CONFIDENCE,
        };
    };
    let (step, value) =
        rated.iter().copied().find(|(_, v)| *v > 0.0 && *v >= params::ADJUDICATION_SHARE * best).expect("best exists");
    let reason = format!("step {step} is the earliest error whose effect reaches the outcome: {}", evidence(ctx, step));
    Answer::Adjudication {
        step,
        category: category(ctx, step),
        reason: text::clip(&reason, 300),
        confidence: round2(value.clamp(0.0, 1.0)),
    }
}

/// The propagation edges indexed once for adjudication: the steps into which an edge continues an
/// earlier candidate's error, and the steps a later step corrects.
struct EdgeIndex {
    continued: std::collections::HashSet<usize>,
    corrected: std::collections::HashSet<usize>,
}

impl EdgeIndex {
    /// `cands` sorted and deduplicated.
    fn new(cands: &[usize], edges: &[PropagationEdge]) -> EdgeIndex {
        let continued = edges
            .iter()
            .filter(|e| e.from < e.to && e.effect == Effect::Continued && cands.binary_search(&e.from).is_ok())
            .map(|e| e.to)
            .collect();
        let corrected = edges.iter().filter(|e| e.effect == Effect::Corrected).map(|e| e.from).collect();
        EdgeIndex { continued, corrected }
    }
}

fn adjudicated(ctx: &Context<'_>, c: usize, index: &EdgeIndex) -> f32 {
    let findings = recall(ctx, c).unwrap_or_default();
    let own = findings.iter().any(|f| is_own_signal(f.signal));
    let inherits = !own && index.continued.contains(&c);
    let correctable = !findings.is_empty()
        && findings
            .iter()
            .all(|f| matches!(f.signal, Signal::FailedAction | Signal::RepeatedFailure | Signal::IgnoredToolError));
    let corrected = correctable && index.corrected.contains(&c);
    let mut v = combine(&findings);
    if inherits {
        v *= params::INHERITED;
    }
    if corrected {
        v *= params::CORRECTED;
    }
    if !reaches_output(ctx, c, &findings) {
        v *= params::UNREACHED;
    }
    v
}

/// Whether a candidate's effect reaches the final output: it is the final step, a dependency path
/// leads there, or it changes the course of the run (a process finding).
fn reaches_output(ctx: &Context<'_>, c: usize, findings: &[Finding]) -> bool {
    let Some(end) = final_step(ctx) else { return false };
    let process = findings.iter().any(|f| {
        matches!(
            f.signal,
            Signal::PriorDeviation | Signal::WrongDelegation | Signal::PrematureAnswer | Signal::WrongValueOrigin
        )
    });
    c >= end || process || reaches_final(ctx, c)
}

/// The taxonomy category of a step: a check that claims success without evidence is a
/// verification failure; otherwise the category of its strongest finding.
pub fn category(ctx: &Context<'_>, step: usize) -> ErrorCategory {
    let findings = recall(ctx, step).unwrap_or_default();
    let s = &ctx.hierarchy.steps[step];
    let verifying = s.action == Action::Verify || s.flags.claims_verified;
    if verifying && findings.iter().any(|f| f.signal == Signal::PrematureAnswer) {
        return ErrorCategory::VerificationFailure;
    }
    findings
        .iter()
        .max_by(|a, b| a.weight.total_cmp(&b.weight))
        .map_or(ErrorCategory::Other, |f| ErrorCategory::of_signal(f.signal))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::DepGraph;
    use crate::hierarchy;
    use crate::model::{Link, LinkKind, Step, StepKind, Trajectory};

    fn sales() -> Trajectory {
        let step = |agent: &str, kind, content: &str| Step {
            agent: agent.into(),
            kind,
            content: content.into(),
            ..Step::default()
        };
        let m = StepKind::Message;
        let r = StepKind::ToolResult;
        let mut t = Trajectory {
            task: "Compute the total of the attached sales figures.".into(),
            steps: vec![
                step("Planner", m, "Plan: compute the total of the attached sales figures and report it."),
                step("Coder", m, "```python\nprint(sum(sales)\n```"),
                step(
                    "Computer_terminal",
                    r,
                    "exitcode: 1 (execution failed)\nCode output: SyntaxError: unexpected EOF",
                ),
                step("Coder", m, "Fixed the bracket.\n```python\nprint(sum(sales))\n```"),
                step("Computer_terminal", r, "exitcode: 0 (execution succeeded)\nCode output: 4521"),
                step("Coder", m, "Let's assume a discount applies to the 4521, so the total is 4,069."),
                step("Reviewer", m, "The total is 4,069. TERMINATE"),
            ],
            links: vec![
                Link { from: 1, to: 2, kind: LinkKind::Execution },
                Link { from: 3, to: 4, kind: LinkKind::Execution },
            ],
            ..Trajectory::default()
        };
        for (i, s) in t.steps.iter_mut().enumerate() {
            s.index = i;
        }
        t.refresh_agents();
        t
    }

    fn with_ctx<T>(t: &Trajectory, f: impl FnOnce(&Context<'_>) -> T) -> T {
        let h = hierarchy::build(t);
        let g = DepGraph::build(t, &h);
        f(&Context {
            trajectory: t,
            hierarchy: &h,
            prior: None,
            graph: Some(&g),
            facts: &crate::substrate::Facts::default(),
            ground_truth: false,
        })
    }

    fn analysis(ctx: &Context<'_>, p: Perspective, target: VoteTarget) -> Analysis {
        match answer(ctx, &Question::AnalystVote { perspective: p, target, context: String::new() }) {
            Answer::Analysis(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn perspectives_weigh_the_same_evidence_differently() {
        let t = sales();
        with_ctx(&t, |ctx| {
            // Step 1 (failed, then corrected) scores 0.4, step 5 (assumed discount) 0.56.
            assert_eq!((round2(score(ctx, 1)), round2(score(ctx, 5))), (0.4, 0.56));
            let liberal = analysis(ctx, Perspective::Liberal, VoteTarget::Agent);
            assert_eq!((liberal.step, liberal.confidence), (Some(1), 0.6), "earliest within 0.6 of the best");
            let detail = analysis(ctx, Perspective::DetailFocused, VoteTarget::Agent);
            assert_eq!((detail.step, detail.confidence), (Some(5), 0.51));
            let conservative = analysis(ctx, Perspective::Conservative, VoteTarget::Agent);
            assert_eq!((conservative.step, conservative.confidence), (Some(5), 0.4), "0.4 < 0.9 × 0.47");
            let general = analysis(ctx, Perspective::General, VoteTarget::Agent);
            assert_eq!(general.step, Some(5), "0.4 < 0.8 × 0.56");
            let pattern = analysis(ctx, Perspective::PatternFocused, VoteTarget::Agent);
            let likelihoods: Vec<(&str, f32)> =
                pattern.evaluations.iter().map(|e| (e.agent.as_str(), e.likelihood)).collect();
            assert_eq!(likelihoods, vec![("Coder", 0.75)], "noisy-or over the coder's steps");
            assert!(pattern.evaluations[0].evidence.starts_with("step 5: "), "{:?}", pattern.evaluations);
            for a in [&liberal, &detail, &conservative, &pattern] {
                assert_eq!(
                    (a.conclusion, a.agents.as_slice()),
                    (Conclusion::SingleAgent, ["Coder".to_string()].as_slice())
                );
            }
            // The step analysis is independent of the agent vote: it looks at every step.
            let step = analysis(ctx, Perspective::General, VoteTarget::Step);
            assert_eq!(
                (step.step, step.confidence, step.agents.as_slice()),
                (Some(5), 0.56, ["Coder".to_string()].as_slice())
            );
            let alts: Vec<(Option<usize>, f32)> = step.alternatives.iter().map(|a| (a.step, a.likelihood)).collect();
            assert_eq!(alts, vec![(Some(1), 0.4)], "the next strongest step is the alternative");
            let liberal_step = analysis(ctx, Perspective::Liberal, VoteTarget::Step);
            assert_eq!(liberal_step.step, Some(1), "the liberal analyst goes further back");
        });
    }

    #[test]
    fn baseline_answers() {
        let t = sales();
        with_ctx(&t, |ctx| {
            let verdict = |step| match answer(ctx, &Question::IsDecisive { step, context: String::new() }) {
                Answer::Verdict { decisive, confidence, .. } => (decisive, confidence),
                other => panic!("{other:?}"),
            };
            assert_eq!(verdict(1), (false, 0.6), "0.4 is under the step-by-step threshold");
            assert_eq!(verdict(5), (true, 0.56));
            let half = |range: Range<usize>, split| match answer(
                ctx,
                &Question::LocateInRange { range, split, context: String::new() },
            ) {
                Answer::Half { half, .. } => half,
                other => panic!("{other:?}"),
            };
            assert_eq!(half(0..7, 4), Half::Second, "0.4 before step 4 against 0.56 after");
            assert_eq!(half(2..5, 4), Half::First, "no evidence on either side: the first half");
            match answer(ctx, &Question::LocateError { context: String::new() }) {
                Answer::Attribution { agent, step, .. } => assert_eq!((agent.as_str(), step), ("Coder", 5)),
                other => panic!("{other:?}"),
            }
        });
    }

    #[test]
    fn propagation_and_adjudication() {
        let t = sales();
        with_ctx(&t, |ctx| {
            let edges = propagation(ctx, &[1, 5]);
            let e = |from, to, effect| PropagationEdge { from, to, effect };
            assert_eq!(edges, vec![e(1, 2, Effect::Continued), e(1, 3, Effect::Corrected), e(5, 6, Effect::Continued)]);
            // Step 1: 0.4 × 0.3 (corrected); step 5: 0.56 reaches the output.
            assert_eq!(round2(adjudicated(ctx, 1, &EdgeIndex::new(&[1, 5], &edges))), 0.12);
            match answer(ctx, &Question::Adjudicate { candidates: vec![1, 5], edges, context: String::new() }) {
                Answer::Adjudication { step, category, confidence, .. } => {
                    assert_eq!((step, category, confidence), (5, ErrorCategory::UnsupportedAssumption, 0.56))
                }
                other => panic!("{other:?}"),
            }
            // Without the correction edge step 1 keeps its 0.4, still under 0.75 × 0.56.
            assert_eq!(round2(adjudicated(ctx, 1, &EdgeIndex::new(&[1, 5], &[]))), 0.4);
            match answer(ctx, &Question::Adjudicate { candidates: vec![1, 5], edges: vec![], context: String::new() }) {
                Answer::Adjudication { step, .. } => assert_eq!(step, 5),
                other => panic!("{other:?}"),
            }
            // A candidate with its own deviation is not discounted by an incoming edge.
            assert_eq!(round2(adjudicated(ctx, 5, &EdgeIndex::new(&[1, 5], &[e(1, 5, Effect::Continued)]))), 0.56);
        });
    }

    #[test]
    fn a_candidate_that_only_continues_an_error_is_discounted() {
        let mut t = sales();
        t.steps.drain(0..1);
        t.steps.truncate(3);
        t.steps[1].content = "exitcode: 1 (execution failed)\nCode output: FileNotFoundError: sales.csv".into();
        t.steps[2] = Step {
            agent: "Analyst".into(),
            content: "Great, the data is loaded and we can continue with the analysis.".into(),
            ..Step::default()
        };
        for (i, s) in t.steps.iter_mut().enumerate() {
            s.index = i;
        }
        t.links = vec![Link { from: 0, to: 1, kind: LinkKind::Execution }];
        t.refresh_agents();
        with_ctx(&t, |ctx| {
            let f = recall(ctx, 2).unwrap();
            assert_eq!(f.iter().map(|f| f.signal).collect::<Vec<_>>(), vec![Signal::IgnoredToolError]);
            let e = PropagationEdge { from: 0, to: 2, effect: Effect::Continued };
            assert_eq!(round2(adjudicated(ctx, 2, &EdgeIndex::new(&[0, 2], &[]))), 0.45);
            assert_eq!(round2(adjudicated(ctx, 2, &EdgeIndex::new(&[0, 2], &[e]))), 0.18, "0.45 × 0.4");
            assert_eq!(round2(adjudicated(ctx, 2, &EdgeIndex::new(&[2], &[e]))), 0.45, "the source is no candidate");
        });
    }
}
