//! FALAT's decision rules (the paper "FALAT: Tracing Errors in LLM Agent Trajectories via
//! Dependency-Guided Search": §2 typed dependencies and pruning, §3
//! dependency-guided search and verification, §4 local re-search), as pure functions over the
//! judge's answers: which candidates pruning removes, which candidate is decisive, and whether
//! re-search moves the decision. The stages in [`crate::methods::falat`] ask the judge; these rules
//! decide, so the same rules hold whatever judge answered.
//!
//! Where falat departs from the paper it is a named field of [`FalatOptions`] whose default is
//! the paper's behaviour (or, where the paper is silent, a documented choice), listed by
//! [`FalatOptions::departures`] in reports.

use std::collections::{HashMap, HashSet};

use crate::diagnosis::Part::Step;
use crate::diagnosis::{Candidate, Criterion, Origin, Overrides, Part, Prose, Pruning, Signal, Transition};
use crate::prose;

/// What FALAT does when no candidate passes both verification criteria (the paper does not
/// say). Either way the report marks the verdict as unverified with low confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Fallback {
    /// The live candidate with the highest recall score (the earlier on ties); the first step
    /// acting on the task when no candidate is live.
    #[default]
    StrongestLive,
    /// The first step acting on the task.
    FirstActing,
}

impl Fallback {
    /// `strongest-live`, `first-acting`.
    pub fn as_str(self) -> &'static str {
        match self {
            Fallback::StrongestLive => "strongest-live",
            Fallback::FirstActing => "first-acting",
        }
    }

    /// Parses [`Fallback::as_str`].
    pub fn parse(s: &str) -> Option<Fallback> {
        [Fallback::StrongestLive, Fallback::FirstActing].into_iter().find(|f| f.as_str() == s.trim())
    }
}

/// FALAT's options. [`FalatOptions::default`] follows the paper.
#[derive(Debug, Clone, PartialEq)]
pub struct FalatOptions {
    /// A valid candidate must also score at least `max(floor, 0.7 × best live score)`. Off by
    /// default (the paper: a candidate passing both criteria is valid). A departure when set.
    pub score_floor: Option<f32>,
    /// What to name when no candidate is valid (the paper is silent).
    pub fallback: Fallback,
    /// A phase of `M_hi` is searched (zoomed into) when the judge's suspicion of it (0..=1)
    /// reaches this. The paper zooms into "suspicious phases" without a threshold; 0.5 is falat's
    /// choice (the middle of the judge's scale). See [`zoom`].
    pub phase_threshold: f32,
    /// At most this many phases are searched, the most suspicious first; `None` searches every
    /// phase that reaches [`FalatOptions::phase_threshold`]. The paper gives no number.
    pub max_phases: Option<usize>,
    /// When verification does not tell the candidates apart (every checked candidate passes, or
    /// none does), the calibrated ranking decides ([`Verdict::Ranked`]): the most probable of the
    /// candidates instead of the earliest valid one, or the most probable step instead of the
    /// [`FalatOptions::fallback`]. On by default:
    /// a departure from the paper, whose earliest-valid rule is only as good as verification's
    /// power to tell candidates apart (docs/METHODS.md, "When verification does not
    /// discriminate").
    pub ranking_decides: bool,
}

impl Default for FalatOptions {
    fn default() -> FalatOptions {
        FalatOptions {
            score_floor: None,
            fallback: Fallback::StrongestLive,
            phase_threshold: 0.5,
            max_phases: None,
            ranking_decides: true,
        }
    }
}

/// Why verification did not tell the candidates apart ([`Verdict::Ranked`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undiscriminating {
    /// Every one of the `checked` candidates passed both criteria.
    AllPassed {
        /// How many were checked (at least 2).
        checked: usize,
        /// The named candidate is the earliest verified one holding a finding the ranking has no
        /// feature for ([`unseen_by_ranking`]), earlier than the ranking's most probable one.
        unseen: bool,
    },
    /// None of the `checked` candidates passed both criteria.
    NonePassed {
        /// How many were checked (0 when every candidate was pruned or none was recalled).
        checked: usize,
        /// The ranking put a final submission first and an earlier step holding a finding was
        /// named instead (`signals::actions::final_submission`).
        past_submission: bool,
        /// The ranking's most probable step holds no finding, and a step holding one, at least
        /// [`FINDING_SHARE`] as probable, was named instead.
        with_finding: bool,
    },
}

impl Undiscriminating {
    /// One clause: what verification did and which step the ranking names for it.
    pub fn clause(self) -> String {
        match self {
            Undiscriminating::AllPassed { checked, unseen } => {
                let all = if checked == 2 {
                    "both verified candidates".to_string()
                } else {
                    format!("all {checked} verified candidates")
                };
                if unseen {
                    format!(
                        "{all} passed both independence and sufficiency and the earliest holds a finding the ranking has no \
                         feature for, so verification did not tell them apart and that one is named before the ranking's most \
                         probable one"
                    )
                } else {
                    format!(
                        "{all} passed both independence and sufficiency, so verification did not tell them apart and the most \
                         probable of the verified candidates is named"
                    )
                }
            }
            Undiscriminating::NonePassed { checked, past_submission, with_finding } => {
                let what = match checked {
                    0 => "no candidate was left to verify".to_string(),
                    1 => "the one verified candidate failed verification".to_string(),
                    n => format!("none of the {n} verified candidates passed both independence and sufficiency"),
                };
                if past_submission {
                    format!(
                        "{what}, and the ranking's most probable step is the final submission, which only hands in what earlier \
                         steps made, so the most probable earlier step with a finding is named"
                    )
                } else if with_finding {
                    format!(
                        "{what}, and the ranking's most probable step holds no finding while this one, nearly as probable, \
                         holds one, so this step is named"
                    )
                } else {
                    format!("{what}, so the ranking's most probable step is named")
                }
            }
        }
    }
}

/// When no candidate passes and the ranking's most probable step holds no finding, a verified
/// candidate that holds one is named instead when its probability is at least this share of that
/// step's: the ranking cannot tell two steps this close apart, and the finding is evidence a user
/// can check.
pub const FINDING_SHARE: f32 = 0.5;

/// The relative part of the optional score floor: a valid candidate scores at least this share
/// of the best live machine candidate.
pub const FLOOR_RELATIVE: f32 = 0.7;

impl FalatOptions {
    /// Each option that departs from the paper, or fills in what the paper leaves open, as
    /// `name = value (why)`, with the re-search window's half-width `window` (the paper says "a
    /// bounded neighbourhood" without a size). Never empty.
    pub fn departures(&self, window: usize) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(f) = self.score_floor {
            out.push(format!(
                "score_floor = {f} (departure: a valid candidate must also score ≥ max({f}, {FLOOR_RELATIVE} × best))"
            ));
        }
        out.push(format!(
            "fallback = {} (the paper does not say what to name when no candidate is valid)",
            self.fallback.as_str()
        ));
        out.push(format!("window = ±{window} steps (the paper bounds the re-search window without a size)"));
        out.push(format!(
            "phase_threshold = {} (the paper searches suspicious phases without a threshold)",
            self.phase_threshold
        ));
        if let Some(k) = self.max_phases {
            out.push(format!("max_phases = {k} (departure: the paper searches every suspicious phase)"));
        }
        if self.ranking_decides {
            out.push(
                "ranking_decides = on (departure: when every verified candidate passes, the most probable of \
                 the verified candidates is named instead of the earliest; when none passes, the ranking's most \
                 probable step)"
                    .to_string(),
            );
        }
        out
    }
}

/// Coarse-to-fine search (FALAT §1): which phases of `M_hi` recall zooms into, given the judge's
/// suspicion of each phase (`suspicion[p]` for phase `p`, 0..=1). The phases whose suspicion
/// reaches `phase_threshold` (and is above 0), the most suspicious first, ties in phase order,
/// cut to `max_phases`. When no phase reaches the threshold, the single most suspicious phase
/// with any suspicion is searched (the paper always zooms somewhere); when every phase has
/// suspicion 0, none is.
pub fn zoom(suspicion: &[f32], opts: &FalatOptions) -> Vec<usize> {
    let mut order: Vec<usize> = (0..suspicion.len()).filter(|p| suspicion[*p] > 0.0).collect();
    order.sort_by(|a, b| suspicion[*b].total_cmp(&suspicion[*a]).then(a.cmp(b)));
    let mut out: Vec<usize> = order.iter().copied().filter(|p| suspicion[*p] >= opts.phase_threshold).collect();
    if out.is_empty() {
        out.extend(order.first());
    }
    if let Some(k) = opts.max_phases {
        out.truncate(k.max(1));
    }
    out
}

/// Whether a transition carries the candidate's effect forward (FALAT §2: `follow_up` adopts
/// it, `error_shift` transforms it, `redundancy` repeats it); `no_influence`, `dead_end` and
/// `correction` stop it.
pub fn carries(t: Transition) -> bool {
    matches!(t, Transition::FollowUp | Transition::ErrorShift | Transition::Redundancy)
}

/// Pruning by transition labels (FALAT §2). `labels` are `(from, to, label)` on edges leaving
/// candidates; a candidate whose output no later step uses carries one label to the final output
/// (`dead_end`, or a carrying label when it changes the course of the run). A candidate is
/// pruned when
/// - the user excluded it;
/// - its effect cannot reach the final output: every label on its outgoing edges stops it
///   (`no_influence`, `dead_end`, `correction`), or a later step corrects it and nothing after
///   the correction carries it, unless it is the final step itself;
/// - it is only a symptom of an earlier candidate: an earlier candidate reaches it by
///   `follow_up` (it adopts that error) or `redundancy` (it repeats it), and no earlier candidate
///   reaches it by `error_shift` (which would make it introduce a deviation of its own).
///
/// User-marked candidates are never pruned by the machine. Each pruned candidate keeps its reason.
pub fn prune(
    candidates: &mut [Candidate],
    labels: &[(usize, usize, Transition)],
    final_step: Option<usize>,
    o: &Overrides,
) {
    let steps: HashSet<usize> = candidates.iter().map(|c| c.step).collect();
    // Labels by their source and by their target, each in label order (linear in the labels).
    let mut by_from: HashMap<usize, Vec<&(usize, usize, Transition)>> = HashMap::new();
    let mut by_to: HashMap<usize, Vec<&(usize, usize, Transition)>> = HashMap::new();
    for l in labels {
        by_from.entry(l.0).or_default().push(l);
        by_to.entry(l.1).or_default().push(l);
    }
    for c in candidates.iter_mut() {
        c.pruned = None;
        if o.excluded.contains(&c.step) {
            c.pruned = Some(Pruning {
                transition: Transition::NoInfluence,
                by_step: None,
                reason: "excluded by the user".into(),
                by_user: true,
            });
            continue;
        }
        if c.origin == Origin::User {
            continue;
        }
        let incoming: Vec<&(usize, usize, Transition)> = by_to
            .get(&c.step)
            .into_iter()
            .flatten()
            .copied()
            .filter(|(f, _, _)| *f < c.step && steps.contains(f))
            .collect();
        let shifted = incoming.iter().any(|(_, _, l)| *l == Transition::ErrorShift);
        let adopted = incoming.iter().find(|(_, _, l)| matches!(l, Transition::FollowUp | Transition::Redundancy));
        if let (false, Some((f, _, l))) = (shifted, adopted) {
            let reason = match l {
                Transition::Redundancy => prose!["it repeats candidate step ", Step(*f), " without new evidence"],
                _ => prose!["it adopts the error of candidate step ", Step(*f)],
            };
            c.pruned = Some(Pruning { transition: *l, by_step: Some(*f), reason, by_user: false });
            continue;
        }
        let out: &[&(usize, usize, Transition)] = by_from.get(&c.step).map_or(&[], Vec::as_slice);
        let is_final = final_step.is_some_and(|e| c.step >= e);
        // A correction repairs the deviation: what the candidate passed on before the repair
        // (its own tool output, say) does not carry it to the final output.
        let repaired = out.iter().filter(|(_, _, l)| *l == Transition::Correction).map(|(_, to, _)| *to).min();
        let carried = out.iter().any(|(_, to, l)| carries(*l) && repaired.is_none_or(|r| *to > r));
        if !is_final && !out.is_empty() && !carried {
            let (_, to, l) =
                out.iter().find(|(_, _, l)| *l == Transition::Correction).or(out.first()).expect("non-empty");
            let reason = match l {
                Transition::Correction => {
                    prose!["step ", Step(*to), " corrects it, and nothing else carries its effect"]
                }
                Transition::DeadEnd => "its output is never used again".into(),
                _ => "no later step uses its output".into(),
            };
            let by_step = (*l != Transition::DeadEnd).then_some(*to);
            c.pruned = Some(Pruning { transition: *l, by_step, reason, by_user: false });
        }
    }
}

/// The two verification criteria of one candidate, as the judge answered them.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The candidate step.
    pub step: usize,
    /// Error independence: it introduces the error rather than inheriting it.
    pub independence: Criterion,
    /// Counterfactual sufficiency: correcting it alone would restore `o*`.
    pub sufficiency: Criterion,
}

impl Checked {
    /// Whether it passes both criteria.
    pub fn passes(&self) -> bool {
        self.independence.passed && self.sufficiency.passed
    }
}

/// How stage 3 reached its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The user pinned the step.
    Pinned(usize),
    /// The earliest valid candidate (FALAT §3, temporal precedence).
    Valid(usize),
    /// No candidate was valid; the fallback named this step (or nothing, when no candidate is
    /// live and the caller must name the first acting step).
    Fallback(Option<usize>, Fallback),
    /// Verification did not tell the candidates apart; the ranking decides
    /// ([`FalatOptions::ranking_decides`]): the most probable of the candidates when all passed,
    /// the most probable step the user did not exclude when none did.
    Ranked(usize, Undiscriminating),
    /// No candidate was recalled and the run shows no failure at all (no error, no finding,
    /// no mismatch with the expected output): no step is named.
    NoFailure,
}

impl Verdict {
    /// The chosen step, if any.
    pub fn step(self) -> Option<usize> {
        match self {
            Verdict::Pinned(s) | Verdict::Valid(s) | Verdict::Ranked(s, _) => Some(s),
            Verdict::Fallback(s, _) => s,
            Verdict::NoFailure => None,
        }
    }

    /// Whether the step passed verification (or was pinned by the user). A ranked verdict
    /// after every candidate passed is verified; one after none passed is not.
    pub fn verified(self) -> bool {
        !matches!(
            self,
            Verdict::Fallback(..) | Verdict::Ranked(_, Undiscriminating::NonePassed { .. }) | Verdict::NoFailure
        )
    }
}

/// Whether a checked candidate is valid under the options: both criteria pass and, when the
/// score floor is on, it scores enough (user marks are exempt from the floor).
pub fn is_valid(c: &Candidate, check: &Checked, best: f32, opts: &FalatOptions) -> bool {
    let floor_ok = match opts.score_floor {
        None => true,
        Some(f) => c.origin == Origin::User || c.score >= f.max(FLOOR_RELATIVE * best),
    };
    check.passes() && floor_ok
}

/// Stage 3's decision (FALAT §3): the pinned step; else the earliest valid candidate; else the
/// fallback. `checks` holds every unpruned candidate's criteria.
///
/// With [`FalatOptions::ranking_decides`], verification that does not discriminate hands the
/// decision to the calibrated ranking (`probs`: the judge's probability of each step, 0-based):
/// when at least two candidates were checked and all are valid, the most probable of the verified
/// candidates (the earlier on ties); when none is valid, or none was left to check, `ranked` (the
/// ranking's most probable step the user did not exclude). A single valid candidate, or some valid
/// and some not, is verification telling them apart: the paper's rule decides. Without `ranked`
/// (no probabilities) the paper's rules hold throughout.
pub fn decide(
    candidates: &[Candidate],
    checks: &[Checked],
    opts: &FalatOptions,
    pinned: Option<usize>,
    probs: &[f32],
    ranked: Option<usize>,
) -> Verdict {
    if let Some(p) = pinned {
        return Verdict::Pinned(p);
    }
    let best = best_live_score(candidates);
    let by_step: HashMap<usize, &Candidate> = candidates.iter().map(|c| (c.step, c)).collect();
    let mut valid: Vec<usize> = checks
        .iter()
        .filter(|k| by_step.get(&k.step).is_some_and(|c| is_valid(c, k, best, opts)))
        .map(|k| k.step)
        .collect();
    valid.sort_unstable();
    if let (true, Some(r)) = (opts.ranking_decides, ranked) {
        let checked = checks.len();
        if valid.is_empty() {
            return Verdict::Ranked(
                r,
                Undiscriminating::NonePassed { checked, past_submission: false, with_finding: false },
            );
        }
        let p = |s: usize| probs.get(s).copied().unwrap_or(0.0);
        if checked >= 2 && valid.len() == checked {
            let top = valid.iter().copied().max_by(|a, b| p(*a).total_cmp(&p(*b)).then(b.cmp(a))).unwrap_or(r);
            // The ranking cannot weigh what it has no feature for: an earlier verified candidate
            // holding such a finding goes first, as the paper's earliest-valid rule would name it.
            let unseen = valid.iter().copied().find(|s| by_step.get(s).is_some_and(|c| unseen_by_ranking(c)));
            if let Some(u) = unseen.filter(|&u| u < top) {
                return Verdict::Ranked(u, Undiscriminating::AllPassed { checked, unseen: true });
            }
            return Verdict::Ranked(top, Undiscriminating::AllPassed { checked, unseen: false });
        }
    }
    if let Some(&s) = valid.first() {
        return Verdict::Valid(s);
    }
    let step = match opts.fallback {
        Fallback::StrongestLive => candidates
            .iter()
            .filter(|c| c.pruned.is_none())
            .max_by(|a, b| a.score.total_cmp(&b.score).then(b.step.cmp(&a.step)))
            .map(|c| c.step),
        Fallback::FirstActing => None,
    };
    Verdict::Fallback(step, opts.fallback)
}

/// Whether a machine candidate holds a finding the step ranker has no feature for (a signal
/// outside [`Signal::FINDINGS`], other than the user's mark, the ranking's own and
/// [`Signal::BlockingChange`]): the offline judge's narrow rules for misread results, mismatched
/// arguments, partial checks and searches, forbidden changes and miscalculations
/// (docs/METHODS.md). The ranking's probability of such a step does not count that finding.
pub fn unseen_by_ranking(c: &Candidate) -> bool {
    c.origin == Origin::Machine
        && c.findings.iter().any(|f| {
            !Signal::FINDINGS.contains(&f.signal)
                && !matches!(f.signal, Signal::UserMarked | Signal::Ranked | Signal::BlockingChange)
        })
}

/// When `step` (the ranking's pick after nothing passed verification) holds no finding: the most
/// probable candidate that pruning kept (verification examined it) and that holds one (the
/// earlier on ties), whose probability (`probs`, per step) is at least [`FINDING_SHARE`] of
/// `step`'s, and that is not in `excluded` (the user's exclusions). `None` when `step` holds a
/// finding or no such candidate exists. A pruned candidate was judged to carry an earlier error
/// or to lead nowhere: it is not named.
pub fn near_step_with_finding(
    candidates: &[Candidate],
    probs: &[f32],
    excluded: &[usize],
    step: usize,
) -> Option<usize> {
    if candidates.iter().any(|c| c.step == step && !c.findings.is_empty()) {
        return None;
    }
    let p = |s: usize| probs.get(s).copied().unwrap_or(0.0);
    candidates
        .iter()
        .filter(|c| {
            !c.findings.is_empty()
                && c.pruned.is_none()
                && !excluded.contains(&c.step)
                && p(c.step) > 0.0
                && p(c.step) >= FINDING_SHARE * p(step)
        })
        .map(|c| c.step)
        .max_by(|a, b| p(*a).total_cmp(&p(*b)).then(b.cmp(a)))
}

/// The highest score among live machine candidates (a user's mark must not raise the floor).
pub fn best_live_score(candidates: &[Candidate]) -> f32 {
    candidates.iter().filter(|c| c.pruned.is_none() && c.origin == Origin::Machine).map(|c| c.score).fold(0.0, f32::max)
}

/// The temporal-precedence record of one checked candidate given the verdict.
pub fn precedence(step: usize, valid: bool, verdict: Verdict) -> Criterion {
    match verdict {
        Verdict::Valid(ch) | Verdict::Pinned(ch) if ch == step => {
            Criterion { passed: true, evidence: "the earliest valid candidate".into() }
        }
        Verdict::Valid(ch) | Verdict::Pinned(ch) if valid && step > ch => {
            Criterion { passed: false, evidence: prose!["step ", Step(ch), " is an earlier valid candidate"] }
        }
        Verdict::Valid(ch) | Verdict::Pinned(ch) => {
            Criterion { passed: false, evidence: prose!["not valid; step ", Step(ch), " was chosen"] }
        }
        // The named step passed when verification passed every candidate and the ranking chose
        // among them; otherwise no step passed this last criterion.
        Verdict::Ranked(ch, why) => Criterion {
            passed: ch == step && matches!(why, Undiscriminating::AllPassed { .. }),
            evidence: if ch == step {
                format!("{}: this step", why.clause()).into()
            } else {
                prose![format!("{}: step ", why.clause()), Step(ch)]
            },
        },
        Verdict::Fallback(Some(ch), f) if ch == step => Criterion {
            passed: false,
            evidence: format!(
                "no candidate passed both independence and sufficiency; named by the {} fallback, unverified",
                f.as_str()
            )
            .into(),
        },
        Verdict::Fallback(..) => {
            Criterion { passed: false, evidence: "no candidate passed both independence and sufficiency".into() }
        }
        Verdict::NoFailure => Criterion { passed: false, evidence: "the run shows no failure".into() },
    }
}

/// Stage 4's decision (FALAT §4): the judge compared the window's steps without being told the
/// current choice and named `pick` as the root cause, for the reason `basis` (the step that shows
/// the strongest error, the most probable one, or the window's first when none stands out);
/// every step of the window had its own counterfactual check (`checks`, both criteria). The
/// decision moves to `pick` when `pick` passes both and temporal precedence allows it: `pick` is
/// earlier than `chosen`, or `chosen` itself fails its check in the comparison (then the move may
/// go forward). Otherwise it stays. Returns the decisive step and why; the comparison's basis is
/// said where the sentence says what it names, so a pick by position never reads as one for an
/// error it shows.
pub fn research_move(chosen: usize, pick: usize, basis: &Prose, checks: &[Checked]) -> (usize, Prose) {
    let basis = || {
        if basis.trim().is_empty() { Prose::default() } else { Prose::from(" (").with(trim_dot(basis)).with(")") }
    };
    if pick == chosen {
        return (chosen, prose!["the blind comparison also names step ", Step(chosen)].with(basis()));
    }
    let own = checks.iter().find(|k| k.step == chosen);
    let chosen_holds = own.is_none_or(Checked::passes);
    match checks.iter().find(|k| k.step == pick) {
        Some(k) if k.passes() && (pick < chosen || !chosen_holds) => {
            let dir = if pick < chosen { "back" } else { "forward" };
            let why = if pick < chosen {
                Prose::from("it is earlier and its counterfactual check passes")
            } else {
                let failed = own.map_or(Prose::default(), |o| {
                    if o.independence.passed { o.sufficiency.evidence.clone() } else { o.independence.evidence.clone() }
                });
                prose!["its counterfactual check passes and step ", Step(chosen), "'s fails ("].with(failed).with(")")
            };
            (
                pick,
                prose![
                    format!("moved {dir} from step "),
                    Step(chosen),
                    " to step ",
                    Step(pick),
                    ": the blind comparison names it"
                ]
                .with(basis())
                .with(", and ")
                .with(why),
            )
        }
        Some(k) if k.passes() => (
            chosen,
            prose!["kept step ", Step(chosen), ": the blind comparison names the later step ", Step(pick)]
                .with(basis())
                .with(prose![
                    ", but step ",
                    Step(chosen),
                    " still passes both independence and sufficiency and comes first"
                ]),
        ),
        Some(k) => {
            let failed = if k.independence.passed { &k.sufficiency.evidence } else { &k.independence.evidence };
            (
                chosen,
                prose!["kept step ", Step(chosen), ": the blind comparison names step ", Step(pick)]
                    .with(basis())
                    .with(", but its counterfactual check fails (")
                    .with(failed.clone())
                    .with(")"),
            )
        }
        None => (
            chosen,
            prose!["kept step ", Step(chosen), ": the blind comparison names step ", Step(pick)]
                .with(basis())
                .with(", but it was not checked"),
        ),
    }
}

/// `p`'s parts without the full stops that end them.
fn trim_dot(p: &Prose) -> Prose {
    let mut out = p.parts().to_vec();
    if let Some(Part::Text(t)) = out.last_mut() {
        let trimmed = t.trim_end().trim_end_matches('.').len();
        t.truncate(trimmed);
    }
    Prose::new(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnosis::{Finding, Signal};

    fn cand(step: usize, score: f32) -> Candidate {
        Candidate {
            step,
            agent: "A".into(),
            findings: vec![Finding { signal: Signal::UnsourcedValue, evidence: Prose::default(), weight: score }],
            score,
            pruned: None,
            verification: None,
            origin: Origin::Machine,
        }
    }

    fn crit(passed: bool) -> Criterion {
        Criterion { passed, evidence: if passed { "yes".into() } else { "no".into() } }
    }

    fn check(step: usize, ind: bool, suf: bool) -> Checked {
        Checked { step, independence: crit(ind), sufficiency: crit(suf) }
    }

    #[test]
    fn a_verified_finding_nearly_as_probable_replaces_a_pick_without_one() {
        // Step 4 is the ranking's pick and no candidate; step 2 holds a finding at 0.45 (≥ half
        // of 0.5), step 1 one at 0.2 (less than half): step 2 is named.
        let probs = [0.0, 0.2, 0.45, 0.0, 0.5];
        let cands = vec![cand(1, 0.5), cand(2, 0.5)];
        assert_eq!(near_step_with_finding(&cands, &probs, &[], 4), Some(2));
        // Excluded by the user, or pruned: not named; then nothing is near enough.
        assert_eq!(near_step_with_finding(&cands, &probs, &[2], 4), None);
        let mut pruned = cands.clone();
        pruned[1].pruned = Some(Pruning {
            transition: Transition::DeadEnd,
            by_step: None,
            reason: "its output is never used again".into(),
            by_user: false,
        });
        assert_eq!(near_step_with_finding(&pruned, &probs, &[], 4), None);
        // The pick holds a finding itself: it stays.
        let with_own = vec![cand(2, 0.5), cand(4, 0.5)];
        assert_eq!(near_step_with_finding(&with_own, &probs, &[], 4), None);
    }

    /// The paper's rules: the earliest valid candidate whatever verification's spread.
    fn paper() -> FalatOptions {
        FalatOptions { ranking_decides: false, ..FalatOptions::default() }
    }

    #[test]
    fn the_ranking_decides_when_verification_does_not_discriminate() {
        let o = FalatOptions::default();
        let cands = vec![cand(2, 0.2), cand(5, 0.9), cand(8, 0.5)];
        // Step probabilities: step 3 (no candidate) is the most probable, then 8, 5, 2.
        let probs = [0.0, 0.05, 0.1, 0.3, 0.0, 0.2, 0.0, 0.0, 0.25];
        // Some pass, some fail: verification tells them apart, the earliest valid one is named.
        let mixed = vec![check(2, false, true), check(5, true, true), check(8, true, true)];
        assert_eq!(decide(&cands, &mixed, &o, None, &probs, Some(3)), Verdict::Valid(5));
        // All pass: the most probable of the candidates, here a later one.
        let all = vec![check(2, true, true), check(5, true, true), check(8, true, true)];
        let v = decide(&cands, &all, &o, None, &probs, Some(3));
        assert_eq!(v, Verdict::Ranked(8, Undiscriminating::AllPassed { checked: 3, unseen: false }));
        assert!(v.verified());
        assert_eq!(
            precedence(2, true, v).evidence,
            "all 3 verified candidates passed both independence and sufficiency, so verification did not tell them apart and the \
             most probable of the verified candidates is named: step 8"
        );
        // None passes: the ranking's best step overall, never the strongest live candidate.
        let none = vec![check(2, false, true), check(5, true, false), check(8, false, false)];
        let v = decide(&cands, &none, &o, None, &probs, Some(3));
        assert_eq!(
            v,
            Verdict::Ranked(
                3,
                Undiscriminating::NonePassed { checked: 3, past_submission: false, with_finding: false }
            )
        );
        assert!(!v.verified());
        // One candidate that passes is verification's own verdict.
        assert_eq!(decide(&cands[..1], &all[..1], &o, None, &probs, Some(3)), Verdict::Valid(2));
        // No candidate left at all.
        let v = decide(&[], &[], &o, None, &probs, Some(3));
        assert_eq!(
            v,
            Verdict::Ranked(
                3,
                Undiscriminating::NonePassed { checked: 0, past_submission: false, with_finding: false }
            )
        );
        // A pin wins; without a ranked step the paper's rules hold.
        assert_eq!(decide(&cands, &all, &o, Some(5), &probs, Some(3)), Verdict::Pinned(5));
        assert_eq!(decide(&cands, &all, &o, None, &[], None), Verdict::Valid(2));
    }

    #[test]
    fn the_earliest_valid_candidate_wins_without_a_floor() {
        let cands = vec![cand(2, 0.2), cand(5, 0.9), cand(8, 0.5)];
        let checks = vec![check(2, true, true), check(5, true, true), check(8, false, true)];
        let v = decide(&cands, &checks, &paper(), None, &[], None);
        assert_eq!(v, Verdict::Valid(2), "a weak but valid earlier candidate is decisive");
        let floor = FalatOptions { score_floor: Some(0.3), ..paper() };
        assert_eq!(
            decide(&cands, &checks, &floor, None, &[], None),
            Verdict::Valid(5),
            "the floor (0.7 × 0.9) rules step 2 out"
        );
        assert_eq!(decide(&cands, &checks, &paper(), Some(8), &[], None), Verdict::Pinned(8));
        assert_eq!(precedence(5, true, Verdict::Valid(2)).evidence, "step 2 is an earlier valid candidate");
        assert_eq!(precedence(8, false, Verdict::Valid(2)).evidence, "not valid; step 2 was chosen");
    }

    #[test]
    fn without_a_valid_candidate_the_named_fallback_decides() {
        let cands = vec![cand(2, 0.2), cand(5, 0.9), cand(7, 0.9)];
        let checks = vec![check(2, false, true), check(5, true, false), check(7, true, false)];
        let v = decide(&cands, &checks, &paper(), None, &[], None);
        assert_eq!(v, Verdict::Fallback(Some(5), Fallback::StrongestLive), "strongest, the earlier on ties");
        assert!(!v.verified());
        assert!(precedence(5, false, v).evidence.contains("strongest-live fallback, unverified"));
        let first = FalatOptions { fallback: Fallback::FirstActing, ..paper() };
        assert_eq!(decide(&cands, &checks, &first, None, &[], None), Verdict::Fallback(None, Fallback::FirstActing));
        assert_eq!(Fallback::parse("first-acting"), Some(Fallback::FirstActing));
    }

    #[test]
    fn pruning_follows_the_transition_labels() {
        use Transition::*;
        let mut cands = vec![cand(1, 0.5), cand(3, 0.5), cand(5, 0.5), cand(7, 0.5), cand(9, 0.5), cand(11, 0.5)];
        let labels = vec![
            (1, 3, FollowUp), // 3 adopts 1's error
            (1, 4, FollowUp), // 1 reaches the output through 4
            (3, 4, NoInfluence),
            (3, 6, DeadEnd),    // 3's own effect stops here, but it is a symptom of 1 anyway
            (5, 6, Correction), // 5 is corrected and carries nothing
            (5, 7, ErrorShift), // 7 transforms 5's error: 7 stays (it shifts, so 5 is not pruned either)
            (7, 12, FollowUp),
            (9, 10, Redundancy),
            (7, 9, Redundancy), // 9 repeats 7
            (11, 12, DeadEnd),
        ];
        prune(&mut cands, &labels, Some(12), &Overrides::default());
        let got: Vec<(usize, Option<Transition>)> =
            cands.iter().map(|c| (c.step, c.pruned.as_ref().map(|p| p.transition))).collect();
        assert_eq!(
            got,
            vec![(1, None), (3, Some(FollowUp)), (5, None), (7, None), (9, Some(Redundancy)), (11, Some(DeadEnd))]
        );
        assert_eq!(cands[1].pruned.as_ref().unwrap().reason, "it adopts the error of candidate step 1");
        assert_eq!(cands[5].pruned.as_ref().unwrap().reason, "its output is never used again");
        // Corrected at step 6; what it passed on before the repair does not count.
        let mut one = vec![cand(5, 0.5)];
        prune(&mut one, &[(5, 6, Correction), (5, 6, FollowUp)], Some(12), &Overrides::default());
        assert!(one[0].pruned.is_some());
        prune(&mut one, &[(5, 6, Correction)], Some(12), &Overrides::default());
        assert_eq!(one[0].pruned.as_ref().unwrap().reason, "step 6 corrects it, and nothing else carries its effect");
        // The final step is never pruned for not reaching the output; user marks never.
        let mut last = vec![cand(12, 0.5), Candidate { origin: Origin::User, ..cand(13, 0.1) }];
        prune(&mut last, &[(12, 13, NoInfluence), (12, 13, NoInfluence)], Some(12), &Overrides::default());
        assert!(last.iter().all(|c| c.pruned.is_none()));
        let o = Overrides { excluded: vec![12], ..Overrides::default() };
        prune(&mut last, &[], Some(12), &o);
        assert_eq!(last[0].pruned.as_ref().unwrap().reason, "excluded by the user");
    }

    #[test]
    fn research_moves_either_way_only_on_a_passing_check() {
        let checks = vec![check(4, true, true), check(6, true, false), check(8, true, true)];
        let basis = Prose::default();
        assert_eq!(research_move(6, 6, &basis, &checks).0, 6);
        let (back, why) = research_move(6, 4, &basis, &checks);
        assert_eq!(back, 4);
        assert!(why.starts_with("moved back from step 6 to step 4"), "{why}");
        let (fwd, why) = research_move(6, 8, &basis, &checks);
        assert_eq!(fwd, 8, "forward when the chosen step fails its own check");
        assert!(why.contains("step 6's fails (no)"), "{why}");
        let (kept, why) = research_move(4, 8, &basis, &checks);
        assert_eq!(kept, 4, "temporal precedence: a still valid earlier step stays");
        assert!(why.contains("still passes both independence and sufficiency"), "{why}");
        let (kept, why) = research_move(4, 6, &basis, &checks);
        assert_eq!(kept, 4);
        assert!(why.contains("its counterfactual check fails (no)"), "{why}");
    }

    #[test]
    fn research_says_why_the_comparison_names_its_step_where_it_names_it() {
        let checks = vec![check(2, true, true), check(5, true, true)];
        // No step stands out: the pick is by position, and the sentence says so, once.
        let basis = prose![
            "no step from ",
            Step(2),
            " to ",
            Step(8),
            " has a finding of its own, so none stands out and step ",
            Step(2),
            " is named only by position, as the window's first step."
        ];
        let (back, why) = research_move(5, 2, &basis, &checks);
        assert_eq!(back, 2);
        assert_eq!(
            why,
            "moved back from step 5 to step 2: the blind comparison names it (no step from 2 to 8 has a finding of its \
             own, so none stands out and step 2 is named only by position, as the window's first step), and it is \
             earlier and its counterfactual check passes"
        );
        assert_eq!(why.steps().collect::<Vec<_>>(), vec![5, 2, 2, 8, 2]);
        let strongest = prose!["step ", Step(5), " shows the strongest error of the window"];
        assert_eq!(
            research_move(5, 5, &strongest, &checks).1,
            "the blind comparison also names step 5 (step 5 shows the strongest error of the window)"
        );
    }

    #[test]
    fn departures_are_listed() {
        let d = paper().departures(3);
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(FalatOptions::default().departures(3)[3].starts_with("ranking_decides = on (departure"));
        assert!(d[0].starts_with("fallback = strongest-live"));
        let floor = FalatOptions { score_floor: Some(0.3), ..paper() }.departures(3);
        assert!(floor[0].starts_with("score_floor = 0.3 (departure"));
    }
}
