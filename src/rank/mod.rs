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

use std::sync::Arc;

use crate::diagnosis::RankedStep;
use crate::model::Trajectory;
use crate::substrate::Context;

/// Step probabilities from a fitted model (0 for masked steps), memoised in the substrate's facts
/// per ground-truth setting and per model ([`model::StepModel::id`]).
pub fn probabilities(ctx: &Context<'_>, m: &model::RankerModel) -> Vec<f32> {
    let step_model = m.for_ground_truth(ctx.ground_truth);
    let key = (step_model.id(), ctx.ground_truth);
    let cached =
        ctx.facts.ranking.lock().ok().and_then(|r| r.iter().find(|(k, _)| *k == key).map(|(_, p)| Arc::clone(p)));
    if let Some(p) = cached {
        return p.as_ref().clone();
    }
    let f = features::extract(ctx);
    let p: Vec<f32> = step_model.probabilities(&f).into_iter().map(|p| p as f32).collect();
    if let Ok(mut r) = ctx.facts.ranking.lock() {
        r.push((key, Arc::new(p.clone())));
    }
    p
}

/// The order of steps by probability, highest first (ties: earlier step first).
pub fn order(probs: &[f32]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..probs.len()).collect();
    idx.sort_by(|&a, &b| probs[b].total_cmp(&probs[a]).then(a.cmp(&b)));
    idx
}

/// The best-ranked step not in `excluded` (ties: the earlier step), if any step is left.
pub fn best_not_excluded(probs: &[f32], excluded: &[usize]) -> Option<usize> {
    order(probs).into_iter().find(|s| !excluded.contains(s))
}

/// Every step of `t` ranked: `decisive` first when given, then the others by probability
/// (highest first, ties by the earlier step). `probs` has one probability per step.
pub fn ranking(t: &Trajectory, probs: &[f32], decisive: Option<usize>) -> Vec<RankedStep> {
    let decisive = decisive.filter(|s| *s < t.steps.len() && *s < probs.len());
    let ranked = |s: usize| RankedStep { step: s, agent: t.steps[s].agent.clone(), probability: probs[s] };
    decisive.into_iter().chain(order(probs).into_iter().filter(|s| Some(*s) != decisive)).map(ranked).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Step;

    #[test]
    fn the_ranking_puts_the_decisive_step_first_and_the_best_step_skips_exclusions() {
        let t = Trajectory {
            steps: (0..4).map(|i| Step { index: i, agent: format!("a{i}"), ..Step::default() }).collect(),
            ..Trajectory::default()
        };
        let probs = [0.0, 0.2, 0.5, 0.3];
        let r = ranking(&t, &probs, Some(1));
        assert_eq!(r.iter().map(|r| r.step).collect::<Vec<_>>(), vec![1, 2, 3, 0]);
        assert_eq!((r[0].agent.as_str(), r[0].probability), ("a1", 0.2));
        assert_eq!(ranking(&t, &probs, None).iter().map(|r| r.step).collect::<Vec<_>>(), vec![2, 3, 1, 0]);
        assert_eq!(best_not_excluded(&probs, &[]), Some(2));
        assert_eq!(best_not_excluded(&probs, &[2]), Some(3));
        assert_eq!(best_not_excluded(&probs, &[0, 1, 2, 3]), None);
    }
}
