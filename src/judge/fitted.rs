//! The fitted judge (`--judge fitted`, `docs/RANKER.md`): the questions FALAT's stages and the
//! other methods ask, answered from the fitted step ranker's probabilities, with the offline
//! judge's findings as the evidence a person reads.
//!
//! It keeps the methods' structure and only supplies the judgement:
//! - candidate recall: the [`RECALL`] most probable steps of the whole run (each with the
//!   heuristic findings it has and a `ranked` finding giving its probability), so the search
//!   space recalls widely while staying short; a candidate's weights add up (noisy-or) to its
//!   probability relative to the most probable step;
//! - phase suspicion: the phase's best step probability relative to the run's best;
//! - transition labels: the offline judge's, except that a `follow_up` or `redundancy` edge into
//!   a step more probable than its source becomes `error_shift`: a later step the ranker finds
//!   more likely to be the error does not adopt an earlier candidate's error, it introduces its
//!   own (so pruning removes it only as the evidence says);
//! - verification, per criterion: *error independence* fails when an earlier candidate that
//!   feeds this one is at least as probable (the error is then inherited); *counterfactual
//!   sufficiency* passes when the step is probable enough relative to the best
//!   ([`SUFFICIENT`]), with the offline judge's reachability finding as further evidence;
//! - re-search (blind to the step chosen so far): the most probable step of the window is the
//!   root cause (the others get the offline judge's roles);
//! - the Who&When baselines, DeFA adjudication and candidate recall: by probability.
//!
//! The prior and ECHO's analysts are the offline judge's.

use std::time::Instant;

use super::{Answer, Context, CriterionKind, Judge, Judged, Question};
use crate::diagnosis::Part::Step;
use crate::diagnosis::{Cost, Criterion, Finding, Prose, Signal, Transition};
use crate::judge::attribution::{ErrorCategory, Half};
use crate::judge::heuristic::{self, HeuristicJudge};
use crate::prose;
use crate::rank::{self, model::RankerModel};
use crate::substrate::signals;

/// How many of the most probable steps candidate recall names.
pub const RECALL: usize = 8;
/// Sufficiency passes at this share of the best step's probability: the same bar as
/// step-by-step's [`DECISIVE_SHARE`], so that among steps the ranker finds about as likely as the
/// best, temporal precedence (the earliest valid candidate) decides. Chosen in cross-validation
/// over the tune part (0.7, 0.8, 0.9, 0.98 tried; `docs/RANKER.md`).
pub const SUFFICIENT: f32 = 0.7;
/// Step-by-step names a step decisive at this share of the best step's probability.
pub const DECISIVE_SHARE: f32 = 0.7;

/// The fitted judge: a ranker model (the shipped one by default) over the offline judge.
#[derive(Debug, Clone)]
pub struct FittedJudge {
    model: Option<RankerModel>,
}

impl Default for FittedJudge {
    fn default() -> FittedJudge {
        FittedJudge::shipped()
    }
}

impl FittedJudge {
    /// The judge with the shipped model (`models/step_ranker.json`).
    pub fn shipped() -> FittedJudge {
        FittedJudge { model: None }
    }

    /// The judge with another model (cross-validation fits one per fold).
    pub fn with_model(model: RankerModel) -> FittedJudge {
        FittedJudge { model: Some(model) }
    }

    fn model(&self) -> &RankerModel {
        self.model.as_ref().unwrap_or_else(|| rank::model::shipped())
    }

    fn probs(&self, ctx: &Context<'_>) -> Vec<f32> {
        rank::probabilities(ctx, self.model())
    }
}

impl Judge for FittedJudge {
    fn name(&self) -> String {
        "fitted".into()
    }

    fn kind(&self) -> super::JudgeKind {
        super::JudgeKind::Fitted
    }

    fn ask(&self, ctx: &Context<'_>, question: &Question) -> Judged {
        let start = Instant::now();
        let answer = self.answer(ctx, question);
        Judged { answer, cost: Cost { calls: 1, wall: start.elapsed(), ..Cost::default() }, warning: None }
    }

    fn step_probabilities(&self, ctx: &Context<'_>) -> Vec<f32> {
        self.probs(ctx)
    }

    fn ranker(&self) -> &RankerModel {
        self.model()
    }
}

/// The steps among the `k` most probable (probability above 0), in step order.
fn top_steps(p: &[f32], k: usize) -> Vec<usize> {
    let mut top: Vec<usize> = rank::order(p).into_iter().take(k).filter(|&i| p[i] > 0.0).collect();
    top.sort_unstable();
    top
}

fn best(p: &[f32]) -> f32 {
    p.iter().copied().fold(0.0, f32::max)
}

/// A candidate's findings: its heuristic ones and a `ranked` one, with equal weights whose
/// noisy-or is `share` (its probability relative to the best step).
fn findings(ctx: &Context<'_>, i: usize, p: &[f32]) -> Vec<Finding> {
    let share = if best(p) > 0.0 { (p[i] / best(p)).clamp(0.0, 1.0) } else { 0.0 };
    let rank = rank::order(p).iter().position(|&s| s == i).map_or(0, |r| r + 1);
    let mut f = signals::recall(ctx, i).unwrap_or_default();
    f.push(Finding {
        signal: Signal::Ranked,
        evidence: format!("the fitted ranker gives it P = {:.2} (rank {rank} of {})", p[i], p.len()).into(),
        weight: 0.0,
    });
    let w = 1.0 - (1.0 - share).powf(1.0 / f.len() as f32);
    for x in &mut f {
        x.weight = w;
    }
    f
}

impl FittedJudge {
    fn answer(&self, ctx: &Context<'_>, q: &Question) -> Answer {
        let n = ctx.trajectory.steps.len();
        let p = self.probs(ctx);
        if p.len() != n || n == 0 {
            return heuristic::answer(ctx, q);
        }
        let top = best(p.as_slice());
        let share = |i: usize| if top > 0.0 && i < n { p[i] / top } else { 0.0 };
        match q {
            Question::PhaseSummary { phase } => match heuristic::answer(ctx, q) {
                Answer::PhaseSummary { summary, .. } => {
                    let s = ctx
                        .hierarchy
                        .phases
                        .get(*phase)
                        .map_or(0.0, |ph| ph.range.clone().filter(|&i| i < n).map(share).fold(0.0, f32::max));
                    Answer::PhaseSummary { summary, suspicion: s }
                }
                other => other,
            },
            Question::RecallCandidates { range } | Question::SegmentRecall { segment: range, .. } => {
                let wanted = top_steps(&p, RECALL);
                Answer::Candidates(
                    wanted.into_iter().filter(|i| range.contains(i)).map(|i| (i, findings(ctx, i, &p))).collect(),
                )
            }
            Question::LabelTransition { from, to } if *from < n && *to < n => {
                let heur = heuristic::answer(ctx, q);
                match heur {
                    // A later step that is more probable than the candidate it follows does not
                    // adopt or repeat that candidate's error: it introduces its own.
                    Answer::Transition(Transition::FollowUp | Transition::Redundancy) if p[*to] > p[*from] => {
                        Answer::Transition(Transition::ErrorShift)
                    }
                    other => other,
                }
            }
            Question::Verify { step, criterion, live } if *step < n => {
                Answer::Criterion(self.verify(ctx, *step, *criterion, live, &p))
            }
            Question::Roles { window } if window.start < n && !window.is_empty() => {
                // Blind re-search: the most probable step of the window, whatever was chosen.
                let w = window.start..window.end.min(n);
                let decisive = w.clone().fold(w.start, |b, i| if p[i] > p[b] { i } else { b });
                let reason = prose![
                    "step ",
                    Step(decisive),
                    format!(" is the most probable step of the window (P = {:.2})", p[decisive])
                ];
                match heuristic::answer(ctx, &Question::Roles { window: w }) {
                    Answer::Roles { roles, .. } => Answer::Roles { roles, decisive, reason },
                    other => other,
                }
            }
            Question::LocateError { .. } => {
                let s = rank::order(&p)[0];
                Answer::Attribution {
                    agent: ctx.trajectory.steps[s].agent.clone(),
                    step: s,
                    reason: format!("the most probable step (P = {:.2})", p[s]),
                    confidence: p[s],
                }
            }
            Question::IsDecisive { step, .. } if *step < n => Answer::Verdict {
                decisive: share(*step) >= DECISIVE_SHARE,
                reason: format!("P = {:.2}, {:.0}% of the most probable step", p[*step], 100.0 * share(*step)),
                confidence: p[*step],
            },
            Question::LocateInRange { range, split, .. } => {
                let mass = |r: std::ops::Range<usize>| r.filter(|&i| i < n).map(|i| p[i]).sum::<f32>();
                let (a, b) = (mass(range.start..*split), mass(*split..range.end));
                Answer::Half {
                    half: if a >= b { Half::First } else { Half::Second },
                    reason: format!("probability {a:.2} in the first half, {b:.2} in the second"),
                }
            }
            Question::Adjudicate { candidates, .. } if !candidates.is_empty() => {
                let s = candidates
                    .iter()
                    .copied()
                    .filter(|&c| c < n)
                    .fold(candidates[0].min(n - 1), |b, c| if p[c] > p[b] { c } else { b });
                let category = signals::recall(ctx, s)
                    .and_then(|f| {
                        crate::diagnosis::Candidate {
                            step: s,
                            agent: String::new(),
                            findings: f,
                            score: 0.0,
                            pruned: None,
                            verification: None,
                            origin: crate::diagnosis::Origin::Machine,
                        }
                        .main_signal()
                    })
                    .map_or(ErrorCategory::Other, ErrorCategory::of_signal);
                Answer::Adjudication {
                    step: s,
                    category,
                    reason: format!("the most probable candidate (P = {:.2})", p[s]),
                    confidence: p[s],
                }
            }
            _ => HeuristicJudge.ask(ctx, q).answer,
        }
    }

    fn verify(
        &self,
        ctx: &Context<'_>,
        step: usize,
        criterion: CriterionKind,
        live: &std::sync::Arc<[usize]>,
        p: &[f32],
    ) -> Criterion {
        let top = best(p);
        let share = if top > 0.0 { p[step] / top } else { 0.0 };
        match criterion {
            CriterionKind::Independence => {
                let upstream = live
                    .iter()
                    .copied()
                    .filter(|&o| o < step && o < p.len() && p[o] >= p[step])
                    .find(|&o| ctx.graph.is_some_and(|g| g.path(o, step).is_some()));
                match upstream {
                    Some(o) => Criterion {
                        passed: false,
                        evidence: prose![
                            "candidate step ",
                            Step(o),
                            format!(
                                " feeds it and is at least as probable (P = {:.2} against {:.2}): the error is inherited",
                                p[o], p[step]
                            )
                        ],
                    },
                    None => Criterion {
                        passed: true,
                        evidence: format!("no earlier candidate as probable feeds it (P = {:.2})", p[step]).into(),
                    },
                }
            }
            CriterionKind::Sufficiency => {
                // Fixing a step restores the output only if it is where the error most likely
                // starts: a step well below the most probable one does not suffice.
                let passed = share >= SUFFICIENT;
                let reach = match heuristic::answer(ctx, &Question::Verify { step, criterion, live: live.clone() }) {
                    Answer::Criterion(c) => c.evidence,
                    _ => Prose::default(),
                };
                Criterion {
                    passed,
                    evidence: Prose::from(format!(
                        "P = {:.2}, {:.0}% of the most probable step ({} needed); ",
                        p[step],
                        100.0 * share,
                        if passed { "at least 70 %" } else { "70 %" }
                    ))
                    .with(reach),
                }
            }
        }
    }
}
