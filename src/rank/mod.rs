//! Ranking every step of a trajectory by the probability that it is the decisive error
//! (`docs/RANKER.md`).
//!
//! - [`features`]: one feature row per step from the shared substrate.
//! - [`model`]: the fitted logistic ranker and its shipped parameters (`models/step_ranker.json`).
//! - [`train`]: fitting it with smartcore (`falat train`).
//! - [`split`]: the fixed tune/report split and the cross-validation folds.
//!
//! Every method's diagnosis carries a ranking of all steps ([`attach`]): its decisive step first,
//! then the other steps by the judge's step probabilities
//! ([`crate::judge::Judge::step_probabilities`]); the diagnosis' confidence is the probability of
//! its decisive step, so it reads as "P(this step is right)".

pub mod features;
pub mod model;
pub mod split;
pub mod train;

use crate::diagnosis::{Diagnosis, RankedStep};
use crate::judge::Context;
use crate::model::Trajectory;

/// Step probabilities from a fitted model (0 for masked steps), memoised in the substrate's facts per
/// ground-truth setting.
pub fn probabilities(ctx: &Context<'_>, m: &model::RankerModel) -> Vec<f32> {
    ctx.facts
        .ranking
        .get(ctx.ground_truth)
        .get_or_init(|| {
            let f = features::extract(ctx);
            m.for_ground_truth(ctx.ground_truth).probabilities(&f).into_iter().map(|p| p as f32).collect()
        })
        .clone()
}

/// The order of steps by probability, highest first (ties: earlier step first).
pub fn order(probs: &[f32]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..probs.len()).collect();
    idx.sort_by(|&a, &b| probs[b].total_cmp(&probs[a]).then(a.cmp(&b)));
    idx
}

/// Gives a diagnosis its ranking of every step and its confidence (the probability of its
/// decisive step). A diagnosis without a decisive step gets the best-ranked step the user did not
/// exclude, with a reason saying that no step shows a strong signal (its low confidence says the
/// rest, [`Diagnosis::low_confidence`]); a diagnosis pinned by the user keeps confidence 1.
pub fn attach(d: &mut Diagnosis, t: &Trajectory, probs: &[f32]) {
    attach_calibrated(d, t, probs, &|p| p);
}

/// [`attach`] with the judge's step probabilities and its ranker's calibration map
/// ([`model::StepModel::confidence`]): the confidence is the calibrated probability that the
/// decisive step is right; the ranking keeps the raw step probabilities.
pub fn attach_judged(d: &mut Diagnosis, t: &Trajectory, judge: &dyn crate::judge::Judge, ctx: &Context<'_>) {
    let m = judge.ranker().for_ground_truth(ctx.ground_truth);
    attach_calibrated(d, t, &judge.step_probabilities(ctx), &|p| m.confidence(f64::from(p)) as f32);
}

fn attach_calibrated(d: &mut Diagnosis, t: &Trajectory, probs: &[f32], calibrate: &dyn Fn(f32) -> f32) {
    if probs.len() != t.steps.len() || t.steps.is_empty() {
        return;
    }
    let ranked = order(probs);
    if d.decisive_step.is_none()
        && let Some(&top) = ranked.iter().find(|s| !d.overrides.excluded.contains(s))
    {
        d.decisive_step = Some(top);
        d.agent = Some(t.steps[top].agent.clone());
        d.reason = format!(
            "no step shows a strong signal; step {top} ({}) ranks first with P = {:.2}",
            t.steps[top].agent, probs[top]
        );
    }
    let decisive = d.decisive_step.filter(|s| *s < t.steps.len());
    let mut ranking: Vec<RankedStep> = Vec::with_capacity(t.steps.len());
    if let Some(s) = decisive {
        ranking.push(RankedStep { step: s, agent: t.steps[s].agent.clone(), probability: probs[s] });
    }
    ranking.extend(ranked.into_iter().filter(|s| Some(*s) != decisive).map(|s| RankedStep {
        step: s,
        agent: t.steps[s].agent.clone(),
        probability: probs[s],
    }));
    d.ranking = ranking;
    if d.overrides.pinned.is_some_and(|p| Some(p) == decisive) {
        d.confidence = 1.0;
    } else if let Some(s) = decisive {
        d.confidence = calibrate(probs[s]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Step;

    #[test]
    fn attach_puts_the_decisive_step_first_and_fills_a_missing_one() {
        let t = Trajectory {
            steps: (0..4).map(|i| Step { index: i, agent: format!("a{i}"), ..Step::default() }).collect(),
            ..Trajectory::default()
        };
        let probs = [0.0, 0.2, 0.5, 0.3];
        let mut d = Diagnosis { decisive_step: Some(1), ..Diagnosis::default() };
        attach(&mut d, &t, &probs);
        assert_eq!(d.ranking.iter().map(|r| r.step).collect::<Vec<_>>(), vec![1, 2, 3, 0]);
        assert_eq!(d.confidence, 0.2);
        assert!(d.low_confidence());
        let mut d = Diagnosis::default();
        attach(&mut d, &t, &probs);
        assert_eq!((d.decisive_step, d.agent.as_deref(), d.confidence), (Some(2), Some("a2"), 0.5));
        assert!(d.reason.starts_with("no step shows a strong signal"));
        let mut d = Diagnosis::default();
        d.overrides.excluded = vec![2];
        attach(&mut d, &t, &probs);
        assert_eq!(d.decisive_step, Some(3));
    }
}
