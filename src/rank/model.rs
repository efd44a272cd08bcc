//! The fitted step ranker's parameters and how it turns features into probabilities
//! (`docs/RANKER.md`).
//!
//! A logistic regression over the standardised features of [`super::features`] gives each step a
//! logit `z`; within one trajectory the probability that step `i` is the decisive step is the
//! softmax `exp(z_i / T) / Σ_j exp(z_j / T)` over the steps that are not masked, with the
//! temperature `T` fitted for calibration. Two parameter sets are kept: one for analyses with the
//! expected output `o*`, one without (the `o*` signals are absent then).
//!
//! The shipped model is `models/step_ranker.json`, embedded at build time; `falat train` writes it.

use std::sync::OnceLock;

use serde_json::{Value, json};

use super::features::{NAMES, StepFeatures};

/// One parameter set: standardisation, weights, bias and temperature.
#[derive(Debug, Clone, PartialEq)]
pub struct StepModel {
    /// Mean of each feature on the training steps.
    pub mean: Vec<f64>,
    /// Standard deviation of each feature (1 where a feature is constant).
    pub scale: Vec<f64>,
    /// Logistic-regression weight of each standardised feature.
    pub weights: Vec<f64>,
    /// Intercept (does not change the ranking; kept for the pointwise probability).
    pub bias: f64,
    /// Softmax temperature, fitted on out-of-fold logits.
    pub temperature: f64,
    /// Platt map of the confidence: `(slope, intercept)` of
    /// `P(right) = σ(slope · logit(p) + intercept)` for the probability `p` of the named step,
    /// fitted on out-of-fold best-step probabilities; `(1, 0)` is the identity.
    pub calibration: (f64, f64),
}

impl StepModel {
    /// A fingerprint of the parameters that set the step probabilities (FNV-1a over the bits of
    /// means, scales, weights and temperature): two models with the same fingerprint rank alike,
    /// so the substrate caches probabilities under it.
    pub fn id(&self) -> u64 {
        let params = self.mean.iter().chain(&self.scale).chain(&self.weights).chain([&self.bias, &self.temperature]);
        params.fold(0xcbf2_9ce4_8422_2325_u64, |h, x| {
            x.to_bits().to_le_bytes().iter().fold(h, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
        })
    }

    /// The logit of each step (masked steps get `-inf`).
    pub fn logits(&self, f: &StepFeatures) -> Vec<f64> {
        f.rows
            .iter()
            .zip(&f.masked)
            .map(|(row, &m)| {
                if m {
                    return f64::NEG_INFINITY;
                }
                let dot: f64 = row
                    .iter()
                    .zip(self.mean.iter().zip(&self.scale))
                    .zip(&self.weights)
                    .map(|((x, (mu, sd)), w)| (x - mu) / sd * w)
                    .sum();
                dot + self.bias
            })
            .collect()
    }

    /// The calibrated probability that a step named with probability `p` is the decisive step
    /// ([`StepModel::calibration`]); 0 stays 0.
    pub fn confidence(&self, p: f64) -> f64 {
        if p <= 0.0 {
            return 0.0;
        }
        let q = p.clamp(1e-6, 1.0 - 1e-6);
        let z = self.calibration.0 * (q / (1.0 - q)).ln() + self.calibration.1;
        1.0 / (1.0 + (-z).exp())
    }

    /// The probability of each step being the decisive step (0 for masked steps; the others sum
    /// to 1 unless every step is masked).
    pub fn probabilities(&self, f: &StepFeatures) -> Vec<f64> {
        softmax(&self.logits(f), self.temperature)
    }
}

/// Softmax of `z / t` over the finite entries; `-inf` entries get 0.
pub fn softmax(z: &[f64], t: f64) -> Vec<f64> {
    let t = if t > 0.0 { t } else { 1.0 };
    let max = z.iter().copied().filter(|x| x.is_finite()).fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return vec![0.0; z.len()];
    }
    let e: Vec<f64> = z.iter().map(|x| if x.is_finite() { ((x - max) / t).exp() } else { 0.0 }).collect();
    let sum: f64 = e.iter().sum();
    e.into_iter().map(|x| x / sum).collect()
}

/// The ranker: a parameter set with and one without ground truth, and how it was trained.
#[derive(Debug, Clone, PartialEq)]
pub struct RankerModel {
    /// For analyses given the expected output `o*`.
    pub with_ground_truth: StepModel,
    /// For analyses without it.
    pub without_ground_truth: StepModel,
    /// L2 penalty used in the fit.
    pub alpha: f64,
    /// Number of trajectories it was fitted on.
    pub trajectories: usize,
    /// Where they came from (folder names and the split), for the reader of the file.
    pub trained_on: String,
}

impl RankerModel {
    /// The parameter set for an analysis with or without ground truth.
    pub fn for_ground_truth(&self, gt: bool) -> &StepModel {
        if gt { &self.with_ground_truth } else { &self.without_ground_truth }
    }

    /// The JSON form written to `models/step_ranker.json` (numbers rounded to 1e-9, so the file is
    /// byte-stable).
    pub fn to_json(&self) -> Value {
        let set = |m: &StepModel| {
            json!({
                "temperature": round(m.temperature),
                "calibration": {"slope": round(m.calibration.0), "intercept": round(m.calibration.1)},
                "bias": round(m.bias),
                "features": NAMES.iter().enumerate().map(|(i, n)| json!({
                    "name": n,
                    "mean": round(m.mean[i]),
                    "scale": round(m.scale[i]),
                    "weight": round(m.weights[i]),
                })).collect::<Vec<_>>(),
            })
        };
        json!({
            "format": "falat.step_ranker/v1",
            "model": "logistic regression over standardised step features, softmax per trajectory",
            "alpha": self.alpha,
            "trajectories": self.trajectories,
            "trained_on": self.trained_on,
            "with_ground_truth": set(&self.with_ground_truth),
            "without_ground_truth": set(&self.without_ground_truth),
        })
    }

    /// Reads the JSON form.
    ///
    /// # Errors
    /// [`RankerError`] naming the missing or mismatched field (feature names must equal
    /// [`NAMES`] in order).
    pub fn from_json(v: &Value) -> Result<RankerModel, RankerError> {
        let bad = |set: &str, problem: String| RankerError::Field { set: set.to_string(), problem };
        if v.get("format").and_then(Value::as_str) != Some("falat.step_ranker/v1") {
            return Err(RankerError::Format);
        }
        let set = |key: &str| -> Result<StepModel, RankerError> {
            let s = v.get(key).ok_or_else(|| RankerError::MissingSet(key.to_string()))?;
            let num =
                |o: &Value, k: &str| o.get(k).and_then(Value::as_f64).ok_or_else(|| bad(key, format!("missing {k}")));
            let feats =
                s.get("features").and_then(Value::as_array).ok_or_else(|| bad(key, "missing features".into()))?;
            if feats.len() != NAMES.len() {
                return Err(bad(key, format!("{} features, this falat computes {}", feats.len(), NAMES.len())));
            }
            let mut m = StepModel {
                mean: Vec::new(),
                scale: Vec::new(),
                weights: Vec::new(),
                bias: num(s, "bias")?,
                temperature: num(s, "temperature")?,
                calibration: match s.get("calibration") {
                    Some(c) => (num(c, "slope")?, num(c, "intercept")?),
                    None => (1.0, 0.0),
                },
            };
            for (f, name) in feats.iter().zip(NAMES) {
                if f.get("name").and_then(Value::as_str) != Some(name) {
                    return Err(bad(
                        key,
                        format!("expected feature {name}, found {}", f.get("name").unwrap_or(&Value::Null)),
                    ));
                }
                m.mean.push(num(f, "mean")?);
                m.scale.push(num(f, "scale")?);
                m.weights.push(num(f, "weight")?);
            }
            Ok(m)
        };
        Ok(RankerModel {
            with_ground_truth: set("with_ground_truth")?,
            without_ground_truth: set("without_ground_truth")?,
            alpha: v.get("alpha").and_then(Value::as_f64).unwrap_or(0.0),
            trajectories: v.get("trajectories").and_then(Value::as_u64).unwrap_or(0) as usize,
            trained_on: v.get("trained_on").and_then(Value::as_str).unwrap_or_default().to_string(),
        })
    }
}

/// Why a step ranker could not be read or fitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RankerError {
    /// The document is not the JSON form `falat.step_ranker/v1`.
    #[error("expected \"format\": \"falat.step_ranker/v1\"")]
    Format,
    /// A parameter set (`with_ground_truth`, `without_ground_truth`) is missing.
    #[error("missing \"{0}\"")]
    MissingSet(String),
    /// A parameter set lacks a field or does not match this falat's features.
    #[error("{set}: {problem}")]
    Field {
        /// The parameter set.
        set: String,
        /// What is wrong.
        problem: String,
    },
    /// No example has both a labelled step and an unlabelled one to fit on.
    #[error("no labelled step to fit on")]
    NoLabelledStep,
    /// The logistic regression failed (smartcore's message).
    #[error("{0}")]
    Fit(String),
}

fn round(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}

/// The shipped model file, as embedded.
pub const SHIPPED_JSON: &str = include_str!("../../models/step_ranker.json");

/// The shipped model (parsed once).
///
/// # Panics
/// Never for a build of this repository: a test parses the shipped file.
pub fn shipped() -> &'static RankerModel {
    static MODEL: OnceLock<RankerModel> = OnceLock::new();
    MODEL.get_or_init(|| {
        let v: Value = serde_json::from_str(SHIPPED_JSON).expect("models/step_ranker.json is JSON");
        RankerModel::from_json(&v).expect("models/step_ranker.json matches this falat's features")
    })
}
