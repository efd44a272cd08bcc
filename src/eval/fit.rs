//! Fitting the ranker as it ships (`falat train`, `docs/RANKER.md`): the step model of
//! [`crate::rank::train`], then its confidence map fitted on **the methods' own out-of-fold
//! decisions**.
//!
//! The confidence a diagnosis states is the probability that *its* decisive step is right. The
//! methods do not simply name the ranker's most probable step (FALAT names the earliest valid
//! candidate), so a map fitted on the ranker's best steps misjudges them: on the bundled tune
//! part it left the offline judge's FALAT underconfident (mean confidence 0.25 against 0.35 step
//! accuracy). Here the runs are split into folds by task; for each fold a ranker is fitted on the
//! others, and on the held-out runs every method but the random baseline runs with the fitted
//! judge and with the offline judge (both ranking with that fold's ranker). Each decision (the
//! named step's probability, whether it is the gold step) is one calibration example
//! ([`crate::rank::train::fit_calibration`]). The runs are shared between threads; the examples
//! are gathered in run and method order, so the fit is deterministic.

use std::sync::Arc;

use super::benchmark::in_parallel;
use crate::judge::fitted::FittedJudge;
use crate::judge::heuristic::HeuristicJudge;
use crate::judge::{Context, Judge, Judged, Question};
use crate::methods::{self, Method, MethodOptions};
use crate::model::Trajectory;
use crate::rank::model::{RankerError, RankerModel};
use crate::rank::split::fold_of;
use crate::rank::train::{self, Decision, Example, TEMPERATURE_FOLDS, fit_calibration};
use crate::substrate::Substrate;

/// A labelled trajectory prepared for fitting: its training examples with and without ground
/// truth ([`train::example`]; `None` when its gold step is missing or masked).
#[derive(Debug, Clone)]
pub struct Labelled<'a> {
    /// The trajectory, with its gold label.
    pub trajectory: &'a Trajectory,
    /// Its example for the parameter set with ground truth.
    pub with: Option<Example>,
    /// Its example for the parameter set without ground truth.
    pub without: Option<Example>,
}

impl<'a> Labelled<'a> {
    /// Prepares `t` (computes its step features twice).
    pub fn of(t: &'a Trajectory) -> Labelled<'a> {
        Labelled { trajectory: t, with: train::example(t, true), without: train::example(t, false) }
    }
}

/// Fits the ranker on `runs`: both parameter sets ([`train::train_examples`]), then each set's
/// confidence map on the methods' out-of-fold decisions (module docs). A set keeps the map of its best
/// steps ([`train::platt`]) when no fold gives decisions to fit on.
///
/// # Errors
/// No usable run, or the fit failing.
pub fn fit_ranker(runs: &[Labelled<'_>], trained_on: &str) -> Result<RankerModel, RankerError> {
    let examples = |keep: &dyn Fn(&Labelled<'_>) -> bool, gt: bool| -> Vec<Example> {
        runs.iter().filter(|r| keep(r)).filter_map(|r| if gt { r.with.clone() } else { r.without.clone() }).collect()
    };
    let mut model = train::train_examples(&examples(&|_| true, true), &examples(&|_| true, false), trained_on)?;
    // Each held-out run with the ranker fitted without its fold, in run order.
    let mut jobs: Vec<(&Trajectory, Arc<RankerModel>)> = Vec::new();
    for k in 0..TEMPERATURE_FOLDS {
        let held = |r: &Labelled<'_>| fold_of(&r.trajectory.task, TEMPERATURE_FOLDS) == k;
        if !runs.iter().any(held) {
            continue;
        }
        let keep = |r: &Labelled<'_>| !held(r);
        let Ok(m) = train::train_examples(&examples(&keep, true), &examples(&keep, false), "fold") else { continue };
        let m = Arc::new(m);
        jobs.extend(runs.iter().filter(|r| held(r)).map(|r| (r.trajectory, Arc::clone(&m))));
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_run = in_parallel(jobs.len(), threads, |i| {
        let (t, m) = &jobs[i];
        (decisions(t, m, true), decisions(t, m, false))
    });
    let with: Vec<Decision> = per_run.iter().flat_map(|(w, _)| w.iter().copied()).collect();
    let without: Vec<Decision> = per_run.iter().flat_map(|(_, wo)| wo.iter().copied()).collect();
    if !with.is_empty() {
        model.with_ground_truth.calibration = fit_calibration(&with);
    }
    if !without.is_empty() {
        model.without_ground_truth.calibration = fit_calibration(&without);
    }
    Ok(model)
}

/// The methods whose decisions the confidence map is fitted on: all but the random baseline,
/// whose steps say nothing about how far a ranked probability can be trusted.
pub const CALIBRATED_ON: [Method; 6] =
    [Method::Falat, Method::Echo, Method::Defa, Method::AllAtOnce, Method::StepByStep, Method::BinarySearch];

/// The decisions of the [`CALIBRATED_ON`] methods on `t` with the fitted judge and with the
/// offline judge, both ranking with `model` (none when `t` has no gold step).
fn decisions(t: &Trajectory, model: &Arc<RankerModel>, ground_truth: bool) -> Vec<Decision> {
    let Some(gold) = t.gold.as_ref().and_then(|g| g.step) else { return Vec::new() };
    let fitted = FittedJudge::with_model(RankerModel::clone(model));
    let offline = OfflineRankedBy { model: Arc::clone(model) };
    let judges: [&dyn Judge; 2] = [&fitted, &offline];
    judges
        .into_iter()
        .flat_map(|j| CALIBRATED_ON.iter().map(move |m| (j, *m)))
        .filter_map(|(judge, method)| {
            // A substrate per run: it memoises facts of one judge's run.
            let sub = Substrate::shared(t);
            let d = methods::run_on(method, t, &sub, judge, &MethodOptions::new(ground_truth));
            let first = d.ranking.first()?;
            Some(Decision { probability: f64::from(first.probability), right: first.step == gold })
        })
        .collect()
}

/// The offline judge ranking steps with a given model instead of the shipped one.
struct OfflineRankedBy {
    model: Arc<RankerModel>,
}

impl Judge for OfflineRankedBy {
    fn name(&self) -> String {
        HeuristicJudge.name()
    }

    fn ask(&self, ctx: &Context<'_>, question: &Question) -> Judged {
        HeuristicJudge.ask(ctx, question)
    }

    fn step_probabilities(&self, ctx: &Context<'_>) -> Vec<f32> {
        crate::rank::probabilities(ctx, &self.model)
    }

    fn ranker(&self) -> &RankerModel {
        &self.model
    }
}
