//! Fitting the step ranker (`falat train`, `docs/RANKER.md`): smartcore's L2-penalised logistic
//! regression (LBFGS) on the standardised features of every step of labelled trajectories (the
//! gold step is the positive example, every other unmasked step a negative one), then a softmax
//! temperature chosen on out-of-fold logits (folds by task, [`super::split::fold_of`]) from a
//! fixed grid, minimising the negative log-likelihood of the gold step.
//!
//! Deterministic: the same trajectories in the same order give the same numbers.

use smartcore::linalg::basic::arrays::Array;
use smartcore::linalg::basic::matrix::DenseMatrix;
use smartcore::linear::logistic_regression::{LogisticRegression, LogisticRegressionParameters};

use super::features::{self, NAMES, StepFeatures};
use super::model::{RankerError, RankerModel, StepModel, softmax};
use super::split::fold_of;
use crate::model::Trajectory;
use crate::substrate::Context;
use crate::substrate::Substrate;

/// L2 penalty of the fit (on standardised features).
pub const ALPHA: f64 = 16.0;
/// L2 penalty of the Platt map's slope (a light pull towards 0 on few runs).
pub const PLATT_ALPHA: f64 = 1.0;
/// Folds used to fit the temperature on out-of-fold logits.
pub const TEMPERATURE_FOLDS: usize = 5;

/// One labelled trajectory as training data: its step features, the gold step and its fold.
#[derive(Debug, Clone)]
pub struct Example {
    /// Features of every step.
    pub features: StepFeatures,
    /// The gold step, 0-based (never a masked step).
    pub gold: usize,
    /// The task text the folds are drawn from.
    pub task: String,
}

/// The features of a labelled trajectory, or `None` when it has no gold step, or its gold step
/// is outside it or masked (a label on the system policy or the task statement teaches nothing).
pub fn example(t: &Trajectory, ground_truth: bool) -> Option<Example> {
    let gold = t.gold.as_ref()?.step?;
    let sub = Substrate::build(t);
    let ctx = Context::of(t, &sub, ground_truth);
    let features = features::extract(&ctx);
    (gold < t.steps.len() && !features.masked[gold]).then(|| Example { features, gold, task: t.task.clone() })
}

/// Fits one parameter set on `examples`.
///
/// # Errors
/// No usable example, or smartcore failing to fit.
pub fn fit(examples: &[Example], alpha: f64) -> Result<StepModel, RankerError> {
    let mut model = fit_weights(examples, alpha)?;
    // Out-of-fold logits for the temperature.
    let mut oof: Vec<(Vec<f64>, usize)> = Vec::new();
    for k in 0..TEMPERATURE_FOLDS {
        let (train, held): (Vec<&Example>, Vec<&Example>) =
            examples.iter().partition(|e| fold_of(&e.task, TEMPERATURE_FOLDS) != k);
        if train.is_empty() || held.is_empty() {
            continue;
        }
        let train: Vec<Example> = train.into_iter().cloned().collect();
        let Ok(m) = fit_weights(&train, alpha) else { continue };
        oof.extend(held.iter().map(|e| (m.logits(&e.features), e.gold)));
    }
    model.temperature = best_temperature(&oof);
    model.calibration = platt(&oof, model.temperature);
    Ok(model)
}

/// The temperature from the grid 0.25, 0.30, ..., 5.00 with the least negative log-likelihood of
/// the gold steps (1 when there is nothing to fit on).
pub fn best_temperature(logits: &[(Vec<f64>, usize)]) -> f64 {
    if logits.is_empty() {
        return 1.0;
    }
    let nll = |t: f64| -> f64 { logits.iter().map(|(z, g)| -softmax(z, t)[*g].max(1e-12).ln()).sum::<f64>() };
    (5..=100)
        .map(|k| f64::from(k) * 0.05)
        .fold((1.0, f64::INFINITY), |(bt, bv), t| {
            let v = nll(t);
            if v < bv { (t, v) } else { (bt, bv) }
        })
        .0
}

/// The Platt map `(slope, intercept)` of the ranker's own best steps: a one-feature logistic
/// regression (smartcore) of "the best-ranked step is the gold step" on the logit of its
/// out-of-fold probability (softmax at temperature `t`). The identity `(1, 0)` when there is
/// nothing to fit on or every run is a hit or a miss. `falat train` replaces it with the map of
/// the methods' own decisions ([`fit_calibration`], `crate::eval::fit`).
pub fn platt(logits: &[(Vec<f64>, usize)], t: f64) -> (f64, f64) {
    let decisions: Vec<Decision> = logits
        .iter()
        .filter_map(|(z, g)| {
            let p = softmax(z, t);
            let best = (0..p.len()).max_by(|&a, &b| p[a].total_cmp(&p[b]).then(b.cmp(&a)))?;
            Some(Decision { probability: p[best], right: best == *g })
        })
        .collect();
    fit_calibration(&decisions)
}

/// One decision of a method on a labelled trajectory, as calibration data: the ranker's
/// probability of the step the method named, and whether that step is the gold step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    /// The ranker's probability of the named step, in [0, 1].
    pub probability: f64,
    /// The named step is the gold step.
    pub right: bool,
}

/// The Platt map `(slope, intercept)` fitted on `decisions`: a one-feature logistic regression
/// (smartcore, L2 penalty [`PLATT_ALPHA`]) of `right` on the logit of `probability`. The identity
/// `(1, 0)` when there is nothing to fit on, or every decision is right or every one wrong.
pub fn fit_calibration(decisions: &[Decision]) -> (f64, f64) {
    let x: Vec<Vec<f64>> = decisions
        .iter()
        .map(|d| {
            let q = d.probability.clamp(1e-6, 1.0 - 1e-6);
            vec![(q / (1.0 - q)).ln()]
        })
        .collect();
    let y: Vec<i32> = decisions.iter().map(|d| i32::from(d.right)).collect();
    if !y.contains(&1) || !y.contains(&0) {
        return (1.0, 0.0);
    }
    let Ok(m) = DenseMatrix::from_2d_vec(&x) else { return (1.0, 0.0) };
    match LogisticRegression::fit(&m, &y, LogisticRegressionParameters::default().with_alpha(PLATT_ALPHA)) {
        Ok(lr) => (*lr.coefficients().get((0, 0)), *lr.intercept().get((0, 0))),
        Err(_) => (1.0, 0.0),
    }
}

fn fit_weights(examples: &[Example], alpha: f64) -> Result<StepModel, RankerError> {
    let mut rows: Vec<Vec<f64>> = Vec::new();
    let mut y: Vec<i32> = Vec::new();
    for e in examples {
        for (i, row) in e.features.rows.iter().enumerate() {
            if !e.features.masked[i] {
                rows.push(row.clone());
                y.push(i32::from(i == e.gold));
            }
        }
    }
    if !y.contains(&1) || !y.contains(&0) {
        return Err(RankerError::NoLabelledStep);
    }
    let d = NAMES.len();
    let n = rows.len() as f64;
    let mean: Vec<f64> = (0..d).map(|j| rows.iter().map(|r| r[j]).sum::<f64>() / n).collect();
    let scale: Vec<f64> = (0..d)
        .map(|j| {
            let var = rows.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f64>() / n;
            if var > 1e-12 { var.sqrt() } else { 1.0 }
        })
        .collect();
    let std_rows: Vec<Vec<f64>> =
        rows.iter().map(|r| r.iter().enumerate().map(|(j, x)| (x - mean[j]) / scale[j]).collect()).collect();
    let x = DenseMatrix::from_2d_vec(&std_rows).map_err(|e| RankerError::Fit(e.to_string()))?;
    let params = LogisticRegressionParameters::default().with_alpha(alpha);
    let lr = LogisticRegression::fit(&x, &y, params).map_err(|e| RankerError::Fit(e.to_string()))?;
    let weights: Vec<f64> = (0..d).map(|j| *lr.coefficients().get((0, j))).collect();
    let bias = *lr.intercept().get((0, 0));
    Ok(StepModel { mean, scale, weights, bias, temperature: 1.0, calibration: (1.0, 0.0) })
}

/// Trains both parameter sets (with and without ground truth) on labelled trajectories.
///
/// # Errors
/// No usable trajectory, or the fit failing.
pub fn train(trajectories: &[&Trajectory], trained_on: &str) -> Result<RankerModel, RankerError> {
    let with: Vec<Example> = trajectories.iter().filter_map(|t| example(t, true)).collect();
    let without: Vec<Example> = trajectories.iter().filter_map(|t| example(t, false)).collect();
    train_examples(&with, &without, trained_on)
}

/// Trains both parameter sets from prepared examples (with and without ground truth).
///
/// # Errors
/// No usable example, or the fit failing.
pub fn train_examples(with: &[Example], without: &[Example], trained_on: &str) -> Result<RankerModel, RankerError> {
    Ok(RankerModel {
        with_ground_truth: fit(with, ALPHA)?,
        without_ground_truth: fit(without, ALPHA)?,
        alpha: ALPHA,
        trajectories: with.len(),
        trained_on: trained_on.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model with no features, only the confidence map `calibration`.
    fn mapped_by(calibration: (f64, f64)) -> StepModel {
        StepModel { mean: vec![], scale: vec![], weights: vec![], bias: 0.0, temperature: 1.0, calibration }
    }

    #[test]
    fn the_map_of_decisions_raises_an_underconfident_probability() {
        // Steps named at P = 0.2 and right half of the time.
        let ds: Vec<Decision> =
            (0..40).map(|i| Decision { probability: if i % 4 < 2 { 0.2 } else { 0.25 }, right: i % 2 == 0 }).collect();
        let (slope, intercept) = fit_calibration(&ds);
        let m = mapped_by((slope, intercept));
        assert!(m.confidence(0.2) > 0.4 && m.confidence(0.2) < 0.6, "{slope} {intercept}: {}", m.confidence(0.2));
    }

    #[test]
    fn platt_lowers_overconfident_best_steps_and_keeps_the_identity_without_both_outcomes() {
        // Best steps at P = 0.8 (logit ln 4 at T = 1) right in one run of four: the map must
        // bring 0.8 well below 0.8.
        let run = |gold: usize| (vec![4f64.ln(), 0.0], gold);
        let logits = vec![run(0), run(1), run(1), run(1)];
        let (slope, intercept) = platt(&logits, 1.0);
        let m = mapped_by((slope, intercept));
        assert!(m.confidence(0.8) < 0.5, "{slope} {intercept}: {}", m.confidence(0.8));
        assert_eq!(m.confidence(0.0), 0.0);
        assert_eq!(platt(&[run(0), run(0)], 1.0), (1.0, 0.0));
    }
}
