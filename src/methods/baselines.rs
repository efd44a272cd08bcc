//! The Who&When baselines (Zhang et al., ICML 2025, the benchmark's reference methods) and the
//! random floor. Each shows the judge the log with explicit step numbers ([`super::view`]).
//!
//! - [`all_at_once`]: the whole log, one question ([`Question::LocateError`]).
//! - [`step_by_step`]: steps `0..=i` for `i = 0, 1, ...` until the judge says step `i` is decisive
//!   ([`Question::IsDecisive`]).
//! - [`binary_search`]: the judge names the half holding the error until one step is left
//!   ([`Question::LocateInRange`], halves as in [`bisect`]).
//! - [`random`]: a seeded uniform draw of a step.

use std::ops::Range;

use super::{Method, MethodOptions, Session, SplitMix64, new_diagnosis, no_steps, view};
use crate::diagnosis::details::{Round as RoundRecord, StepVerdict};
use crate::diagnosis::{Detail, Diagnosis, Part, Role, StageName};
use crate::judge::attribution::Half;
use crate::judge::{Answer, Context, Judge, Question};
use crate::model::Trajectory;
use crate::substrate::Substrate;
use crate::substrate::signals::default_step;
use crate::text;

fn context<'a>(t: &'a Trajectory, sub: &'a Substrate, opts: &MethodOptions) -> Context<'a> {
    Context::of(t, sub, opts.ground_truth).bare()
}

/// The step named when the judge's answer is unusable: the first step acting on the task.
fn fallback(ctx: &Context<'_>) -> usize {
    default_step(ctx, &[]).unwrap_or(0)
}

/// All-at-once: one question over the whole log. A step outside the trajectory falls back to the
/// first step acting on the task, with a warning.
pub fn all_at_once(t: &Trajectory, sub: &Substrate, judge: &dyn Judge, opts: &MethodOptions) -> Diagnosis {
    if t.steps.is_empty() {
        return no_steps(Method::AllAtOnce, t, judge, opts);
    }
    let ctx = context(t, sub, opts);
    let mut session = super::session(judge, opts);
    let answer = session.stage(StageName::AllAtOnce, |s| {
        s.ask(&ctx, &Question::LocateError { context: view::log(t, 0..t.steps.len()) })
    });
    let (step, reason, named, fell_back) = match answer {
        Answer::Attribution { agent, step, reason, .. } if step < t.steps.len() => (step, reason, agent, None),
        _ => {
            session.warnings.push("the judge named no step inside the trajectory; the default step is used".into());
            let step = fallback(&ctx);
            let why = crate::prose![
                "the judge named no step inside the trajectory; step ",
                Part::Step(step),
                " is the default step"
            ];
            (step, "no usable answer".into(), String::new(), Some(why))
        }
    };
    let mut d = new_diagnosis(Method::AllAtOnce, t, judge, opts, Some(step));
    d.fallback = fell_back;
    d.explanation.account = reason;
    d.roles = vec![(step, Role::RootCause)];
    d.details.push(Detail::JudgeAnswer { agent: named.to_string(), step });
    session.finish(&mut d);
    d
}

/// Step-by-step: walks forward; the first step the judge calls decisive is named. When the judge
/// never says yes, the step whose "no" was least confident is named, with a warning.
pub fn step_by_step(t: &Trajectory, sub: &Substrate, judge: &dyn Judge, opts: &MethodOptions) -> Diagnosis {
    if t.steps.is_empty() {
        return no_steps(Method::StepByStep, t, judge, opts);
    }
    let ctx = context(t, sub, opts);
    let mut session = super::session(judge, opts);
    let walk = session.stage(StageName::StepByStep, |s| walk(s, &ctx));
    let fallback = (!walk.said_yes).then(|| {
        crate::prose![
            "the judge called no step decisive; step ",
            Part::Step(walk.step),
            " was its least certain \"no\""
        ]
    });
    if let Some(f) = &fallback {
        session.warnings.push(f.to_string());
    }
    let mut d = new_diagnosis(Method::StepByStep, t, judge, opts, Some(walk.step));
    d.fallback = fallback;
    d.explanation.account = walk.reason;
    d.roles = vec![(walk.step, Role::RootCause)];
    d.details.push(Detail::Verdicts(walk.verdicts));
    session.finish(&mut d);
    d
}

/// The outcome of a step-by-step walk.
struct Walk {
    step: usize,
    reason: String,
    said_yes: bool,
    /// One record per step walked.
    verdicts: Vec<StepVerdict>,
}

/// Asks about steps `0, 1, ...`, each with the log up to it, until a "yes".
fn walk(s: &mut Session<'_>, ctx: &Context<'_>) -> Walk {
    let t = ctx.trajectory;
    let mut shown = String::new();
    let mut least_sure: Option<(usize, f32, String)> = None;
    let mut verdicts = Vec::new();
    for i in 0..t.steps.len() {
        if i > 0 {
            shown.push_str("\n\n");
        }
        shown.push_str(&view::full(&t.steps[i]));
        match s.ask(ctx, &Question::IsDecisive { step: i, context: shown.clone() }) {
            Answer::Verdict { decisive: true, reason, confidence } => {
                verdicts.push(StepVerdict { step: i, decisive: Some(true), confidence });
                return Walk { step: i, reason, said_yes: true, verdicts };
            }
            Answer::Verdict { confidence, reason, .. } => {
                verdicts.push(StepVerdict { step: i, decisive: Some(false), confidence });
                if least_sure.as_ref().is_none_or(|(_, c, _)| confidence < *c) {
                    least_sure = Some((i, confidence, reason));
                }
            }
            _ => verdicts.push(StepVerdict { step: i, decisive: None, confidence: 0.0 }),
        }
    }
    match least_sure {
        Some((step, _, reason)) => Walk { step, reason, said_yes: false, verdicts },
        None => Walk { step: fallback(ctx), reason: "no usable verdict".into(), said_yes: false, verdicts },
    }
}

/// One round of [`bisect`]: the range in question, the split, and the half the judge named.
pub type Round = (Range<usize>, usize, Half);

/// Binary search over `0..n` (`n > 0`): while more than one step is left, `range` splits at
/// `start + ceil(len / 2)` (the first half takes the middle step, as Who&When's
/// `mid = (start + end) // 2` with inclusive ends) and `choose` names the half. Returns the step
/// left and the rounds, `ceil(log2 n)` of them.
pub fn bisect(n: usize, mut choose: impl FnMut(Range<usize>, usize) -> Half) -> (usize, Vec<Round>) {
    let mut range = 0..n;
    let mut rounds = Vec::new();
    while range.len() > 1 {
        let split = range.start + range.len().div_ceil(2);
        let half = choose(range.clone(), split);
        rounds.push((range.clone(), split, half));
        range = match half {
            Half::First => range.start..split,
            Half::Second => split..range.end,
        };
    }
    (range.start, rounds)
}

/// Binary search: each round shows the range's steps with the split marked. An unusable answer
/// counts as the first half, with a warning.
pub fn binary_search(t: &Trajectory, sub: &Substrate, judge: &dyn Judge, opts: &MethodOptions) -> Diagnosis {
    if t.steps.is_empty() {
        return no_steps(Method::BinarySearch, t, judge, opts);
    }
    let ctx = context(t, sub, opts);
    let mut session = super::session(judge, opts);
    let mut last_reason = String::new();
    let (step, rounds) = session.stage(StageName::BinarySearch, |s| {
        bisect(t.steps.len(), |range, split| match ask_half(s, &ctx, range, split) {
            Some((half, reason)) => {
                last_reason = reason;
                half
            }
            None => {
                s.warnings.push(format!("no usable half for the split at step {split}; the first half is taken"));
                Half::First
            }
        })
    });
    let mut d = new_diagnosis(Method::BinarySearch, t, judge, opts, Some(step));
    d.explanation.account = text::clip(&format!("left after {} halvings; last: {last_reason}", rounds.len()), 400);
    d.roles = vec![(step, Role::RootCause)];
    let rounds =
        rounds.iter().map(|(r, split, half)| RoundRecord { range: r.clone(), split: *split, half: *half }).collect();
    d.details.push(Detail::Rounds(rounds));
    session.finish(&mut d);
    d
}

/// One binary-search question: the range's steps in full with the split marked.
fn ask_half(s: &mut Session<'_>, ctx: &Context<'_>, range: Range<usize>, split: usize) -> Option<(Half, String)> {
    let t = ctx.trajectory;
    let context = format!(
        "{}\n\n--- split: the second half starts at step {split} ---\n\n{}",
        view::log(t, range.start..split),
        view::log(t, split..range.end)
    );
    match s.ask(ctx, &Question::LocateInRange { range, split, context }) {
        Answer::Half { half, reason } => Some((half, reason)),
        _ => None,
    }
}

/// Random: a uniform draw of a step from the seed and the trajectory id. No judge call.
pub fn random(t: &Trajectory, _sub: &Substrate, judge: &dyn Judge, opts: &MethodOptions) -> Diagnosis {
    if t.steps.is_empty() {
        return no_steps(Method::Random, t, judge, opts);
    }
    let mut session = super::session(judge, opts);
    let step =
        session.stage(StageName::RandomDraw, |_| SplitMix64::for_trajectory(opts.seed, &t.id).below(t.steps.len()));
    let mut d = new_diagnosis(Method::Random, t, judge, opts, Some(step));
    d.explanation.account = format!("drawn uniformly from {} steps (seed {})", t.steps.len(), opts.seed);
    session.finish(&mut d);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(rounds: &[Round]) -> Vec<(usize, usize, usize)> {
        rounds.iter().map(|(r, s, _)| (r.start, r.end, *s)).collect()
    }

    #[test]
    fn bisect_halves_with_the_middle_in_the_first_half() {
        let (step, rounds) = bisect(10, |_, _| Half::First);
        assert_eq!(step, 0);
        assert_eq!(ranges(&rounds), vec![(0, 10, 5), (0, 5, 3), (0, 3, 2), (0, 2, 1)]);
        let (step, rounds) = bisect(10, |_, _| Half::Second);
        assert_eq!(step, 9);
        assert_eq!(ranges(&rounds), vec![(0, 10, 5), (5, 10, 8), (8, 10, 9)]);
        let (step, rounds) = bisect(9, |r, _| if r.start == 0 && r.end == 9 { Half::Second } else { Half::First });
        assert_eq!(step, 5);
        assert_eq!(ranges(&rounds), vec![(0, 9, 5), (5, 9, 7), (5, 7, 6)]);
    }

    #[test]
    fn bisect_finds_any_step_in_ceil_log2_rounds() {
        for n in 1..40 {
            for target in 0..n {
                let (step, rounds) = bisect(n, |_, split| if target < split { Half::First } else { Half::Second });
                assert_eq!(step, target);
                assert!(rounds.len() <= (n as f64).log2().ceil() as usize, "n {n}: {} rounds", rounds.len());
            }
        }
        assert_eq!(bisect(1, |_, _| Half::Second), (0, Vec::new()));
    }
}
