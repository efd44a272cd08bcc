//! The offline judge: answers every question from the signals of [`super::signals`], with no
//! network and deterministically (docs/DESIGN.md §4). It is a thin adapter: the detectors, their
//! weights and the trajectory facts live in [`super::signals`]; here they are combined into the
//! answers each question asks for (a phase's suspicion, a transition label, a verification
//! criterion, the roles of a window, and the attribution answers in `attribution`).

mod attribution;
pub mod phase;

use std::collections::HashSet;
use std::time::Instant;

use super::signals::{
    claimed_failure, combine, final_step, is_agent_output, is_own_signal, jaccard, producer, reaches_final, recall,
    result_of, tells_user_a_value, words_of, wrong_value_origins,
};
use super::{Answer, Context, CriterionKind, Judge, Judged, Question};
use crate::diagnosis::Part::Step;
use crate::diagnosis::{Cost, Criterion, Finding, Role, Signal, Transition};
use crate::graph::EdgeKind;
use crate::hierarchy::Action;
use crate::model::{LinkKind, StepKind};
use crate::prior;
use crate::prose;
use crate::substrate::Upstream;

/// The heuristic judge.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicJudge;

impl Judge for HeuristicJudge {
    fn name(&self) -> String {
        "heuristic".into()
    }

    fn ask(&self, ctx: &Context<'_>, question: &Question) -> Judged {
        let start = Instant::now();
        let answer = answer(ctx, question);
        Judged { answer, cost: Cost { calls: 1, wall: start.elapsed(), ..Cost::default() }, warning: None }
    }
}

/// The offline judge with a ranker of its own instead of the shipped one: its answers are the
/// heuristic judge's, its step probabilities and calibration come from `model`. Cross-validation
/// (`falat eval --folds K`) judges each held-out fold with one, fitted without that fold.
#[derive(Debug, Clone)]
pub struct HeuristicWithRanker {
    model: crate::rank::model::RankerModel,
}

impl HeuristicWithRanker {
    /// The offline judge ranking with `model`.
    pub fn new(model: crate::rank::model::RankerModel) -> HeuristicWithRanker {
        HeuristicWithRanker { model }
    }
}

impl Judge for HeuristicWithRanker {
    fn name(&self) -> String {
        "heuristic".into()
    }

    fn ask(&self, ctx: &Context<'_>, question: &Question) -> Judged {
        HeuristicJudge.ask(ctx, question)
    }

    fn step_probabilities(&self, ctx: &Context<'_>) -> Vec<f32> {
        crate::rank::probabilities(ctx, &self.model)
    }

    fn ranker(&self) -> &crate::rank::model::RankerModel {
        &self.model
    }
}

/// Answers a question (the heuristic judge's logic, usable by other judges as their fallback).
pub fn answer(ctx: &Context<'_>, question: &Question) -> Answer {
    // Step numbers come from callers (and from LLM answers): never index past the trajectory.
    let n = ctx.trajectory.steps.len();
    match question {
        Question::Prior => Answer::Prior(prior::derive(&ctx.trajectory.task, &ctx.trajectory.agents)),
        Question::PhaseSummary { phase } => phase::summary(ctx, *phase),
        Question::RecallCandidates { range } => {
            Answer::Candidates(range.clone().filter_map(|i| recall(ctx, i).map(|f| (i, f))).collect())
        }
        Question::LabelTransition { from, to } if *from >= n || *to >= n => Answer::Transition(Transition::NoInfluence),
        Question::LabelTransition { from, to } => Answer::Transition(label(ctx, *from, *to)),
        Question::Verify { step, .. } if *step >= n => Answer::Criterion(Criterion {
            passed: false,
            evidence: prose!["step ", Step(*step), " is not in the trajectory"],
        }),
        Question::Verify { step, criterion, live } => Answer::Criterion(verify(ctx, *step, *criterion, live)),
        Question::Roles { window } if window.start >= n || window.is_empty() => Answer::Roles {
            roles: Vec::new(),
            decisive: window.start,
            reason: format!("steps {}..{} are not in the trajectory", window.start, window.end).into(),
        },
        Question::Roles { window } => roles(ctx, window.start..window.end.min(n)),
        q => attribution::answer(ctx, q),
    }
}

/// Labels the edge from candidate `from` to step `to` (FALAT stage 2).
pub fn label(ctx: &Context<'_>, from: usize, to: usize) -> Transition {
    let Some(g) = ctx.graph else {
        return Transition::NoInfluence;
    };
    // A claim that reports as done the state change a candidate failed to make carries that
    // failure on to the output: it follows from the candidate, whatever edges lie between them.
    if claimed_failure(ctx, to) == Some(from) {
        return Transition::FollowUp;
    }
    // A step acting on a delegate's report whose own search showed what the report denied
    // carries the report's error on.
    if crate::substrate::signals::instructions::relayed_denial(ctx, to) == Some(from) {
        return Transition::FollowUp;
    }
    // A message relaying an outcome that the reporting agent's own source denied, and a step of
    // the specialist a hand-off against the routing instructions chose, carry that error on.
    if crate::substrate::signals::relayed_outcome(ctx, to) == Some(from)
        || crate::substrate::signals::misrouted_by(ctx, to) == Some(from)
    {
        return Transition::FollowUp;
    }
    let direct = g.find(from, to).map(|e| g.graph[e].clone());
    // Only when there is no direct edge: a step with thousands of edges is asked about each of
    // them, and looking through its children for every one would be quadratic.
    let via_child = || g.protocol_children(from).iter().any(|&c| g.find(c, to).is_some());
    let Some(e) = direct.or_else(|| {
        via_child().then(|| crate::graph::DepEdge {
            kind: EdgeKind::Protocol(LinkKind::ToolResult),
            shared: Vec::new(),
            weight: 1.0,
            label: None,
        })
    }) else {
        // The pipeline asks about the final step for a candidate whose output no step uses:
        // a dead end, unless the candidate steers the run (a deviation from π, a delegation, a
        // premature answer) and so reaches the output without passing values.
        // A step where the output's wrong value first appears reaches the output by that value,
        // whether or not the graph records the edge (the final step may be a closing turn, such as
        // a simulated user's goodbye, that quotes nothing). A misread record or count told to the
        // user reaches the outcome through the user, whom the graph does not model, and a state
        // change is itself part of the outcome.
        if Some(to) == final_step(ctx) && !g.has_outgoing(from) {
            // A message that tells the user a value is itself an output the user reads.
            let carries = tells_user_a_value(ctx, from)
                || recall(ctx, from).is_some_and(|f| {
                    f.iter().any(|f| {
                        matches!(
                            f.signal,
                            Signal::PriorDeviation
                                | Signal::WrongDelegation
                                | Signal::PrematureAnswer
                                | Signal::WrongValueOrigin
                                | Signal::UnavailableValue
                                | Signal::CountMismatch
                                | Signal::IgnoredResult
                                | Signal::UnconfirmedAction
                                | Signal::PartialCheck
                                | Signal::PartialSearch
                                | Signal::OmittedHits
                                | Signal::ForbiddenChange
                                | Signal::RefusalBypassed
                                | Signal::WrongStatistic
                                | Signal::Miscalculation
                        ) || failed_edit(ctx, from, f)
                    })
                })
                // A claim that reads a failing test run as a pass ends the work on it, and so
                // does a claim that every part is done over a failure it never told.
                || crate::substrate::signals::misreads_failed_run(ctx, from)
                // Going on as if a refused edit were made leaves the change out of the result.
                || crate::substrate::signals::goes_on_over_refused_edit(ctx, from).is_some()
                || crate::substrate::signals::claims_done_over_failure(ctx, from);
            return if carries { Transition::FollowUp } else { Transition::DeadEnd };
        }
        return Transition::NoInfluence;
    };
    let a = &ctx.trajectory.steps[from];
    let b = &ctx.trajectory.steps[to];
    let from_failed = result_of(ctx, from).is_some_and(|r| ctx.hierarchy.steps[r].flags.failed_execution);
    // A fixed run repairs the candidate only when the failed run is all that is wrong with it; an
    // invented value or an assumption survives the fix and is carried on.
    let only_failure = recall(ctx, from).is_none_or(|f| {
        f.iter().all(|f| matches!(f.signal, Signal::FailedAction | Signal::RepeatedFailure | Signal::IgnoredToolError))
    });
    if from_failed && only_failure && b.agent == a.agent && ctx.hierarchy.steps[to].action == Action::WriteCode {
        let ok = result_of(ctx, to)
            .is_some_and(|r| !ctx.hierarchy.steps[r].flags.failed_execution && !ctx.hierarchy.steps[r].flags.error);
        if ok {
            return Transition::Correction;
        }
    }
    if b.agent == a.agent && jaccard(words_of(ctx, from), words_of(ctx, to)) > 0.8 {
        return Transition::Redundancy;
    }
    // A step that reads a value from the wrong row of a table showing the right one, or from a
    // page that says it is outdated, makes its own error.
    if to != from && crate::substrate::signals::misreads(ctx, to) {
        return Transition::ErrorShift;
    }
    if to != from
        && recall(ctx, to).is_some_and(|f| {
            f.iter().any(|f| {
                matches!(
                    f.signal,
                    Signal::UnsourcedValue
                        | Signal::Assumption
                        | Signal::PriorDeviation
                        | Signal::PartialCheck
                        | Signal::PartialSearch
                        | Signal::OmittedHits
                        | Signal::ForbiddenChange
                        | Signal::RefusalBypassed
                        | Signal::WrongStatistic
                        | Signal::Miscalculation
                )
            })
        })
    {
        return Transition::ErrorShift;
    }
    if e.shared.is_empty() && !matches!(e.kind, EdgeKind::Protocol(_)) {
        return Transition::NoInfluence;
    }
    Transition::FollowUp
}

fn verify(ctx: &Context<'_>, step: usize, criterion: CriterionKind, live: &std::sync::Arc<[usize]>) -> Criterion {
    let findings = recall(ctx, step).unwrap_or_default();
    match criterion {
        CriterionKind::Independence => independence(ctx, step, &findings, live),
        CriterionKind::Sufficiency => sufficiency(ctx, step, &findings),
    }
}

fn independence(ctx: &Context<'_>, step: usize, findings: &[Finding], live: &std::sync::Arc<[usize]>) -> Criterion {
    let upstream: Vec<usize> = earliest_upstream(ctx, step, live).into_iter().collect();
    // Where the wrong value only surfaces here but an earlier candidate feeds this step, the value is
    // inherited: the error was introduced upstream (FALAT: trace back by backward dependencies).
    let own = findings.iter().any(|f| match f.signal {
        Signal::WrongValueOrigin => upstream.is_empty(),
        s => is_own_signal(s),
    });
    match (own, upstream.first()) {
        (true, _) => Criterion {
            passed: true,
            evidence: "it introduces its own deviation (new values, an assumption or a failed action)".into(),
        },
        (false, Some(u)) => Criterion {
            passed: false,
            evidence: prose!["it only inherits what the earlier step ", Step(*u), " introduced"],
        },
        (false, None) => Criterion { passed: true, evidence: "no earlier candidate reaches it".into() },
    }
}

/// The first wrong-value origin after `step` that `step` reaches, with its item.
fn reached_origin(ctx: &Context<'_>, step: usize) -> Option<(usize, String)> {
    let g = ctx.graph?;
    let origins = wrong_value_origins(ctx);
    let reach = ctx
        .facts
        .reaches_origin
        .get(ctx.ground_truth)
        .get_or_init(|| origins.iter().map(|(o, _)| g.ancestors(*o)).collect());
    origins
        .into_iter()
        .zip(reach)
        .find(|((o, _), r)| *o > step && r.get(step).copied().unwrap_or(false))
        .map(|(o, _)| o)
}

/// The earliest of the `live` candidates (in step order) that reaches `step` by at least one
/// edge and comes before it. One forward sweep per live set, shared by every candidate's question.
fn earliest_upstream(ctx: &Context<'_>, step: usize, live: &std::sync::Arc<[usize]>) -> Option<usize> {
    let g = ctx.graph?;
    let mut slot = ctx.facts.upstream.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let earliest = match slot.as_ref() {
        Some(u) if std::sync::Arc::ptr_eq(&u.live, live) => u.earliest.clone(),
        _ => {
            let earliest = std::sync::Arc::new(g.earliest_reaching(live));
            *slot = Some(Upstream { live: live.clone(), earliest: earliest.clone() });
            earliest
        }
    };
    drop(slot);
    earliest.get(step).copied().flatten().filter(|&o| o < step)
}

/// Whether finding `f` of step `step` is an edit's failure: the step edits files
/// (`signals::edits`) and a finding says the change was wrong (`failed_action`: the check after
/// it failed, a test's expectation rewritten to the bug).
fn failed_edit(ctx: &Context<'_>, step: usize, f: &Finding) -> bool {
    f.signal == Signal::FailedAction && crate::substrate::signals::edits(ctx.trajectory, step)
}

/// Whether a finding of `findings` steers the run: anything but an invented value or a failed
/// action, which change nothing a later step relies on unless a later step carries their values.
fn steers(findings: &[Finding]) -> bool {
    findings
        .iter()
        .any(|f| !matches!(f.signal, Signal::UnsourcedValue | Signal::FailedAction | Signal::RepeatedFailure))
}

/// Whether step `o` states the output's wrong `item` (a number) with no earlier source: the value
/// is new there (`introduces`) and the step has an unsourced-value finding. Such a value is made
/// at `o`, whatever path of the graph reaches it.
fn invented_at(ctx: &Context<'_>, o: usize, item: &str) -> bool {
    let numbers = crate::evidence::extract_text(item);
    let Some(key) = numbers.iter().find(|e| e.kind == crate::evidence::EvidenceKind::Number).map(|e| &e.key) else {
        return false;
    };
    ctx.hierarchy.steps[o].introduces.contains(key)
        && recall(ctx, o).is_some_and(|fs| fs.iter().any(|f| f.signal == Signal::UnsourcedValue))
}

/// How a step makes the output's wrong value itself ([`made_at`]).
#[derive(Clone, Copy, PartialEq)]
enum Made {
    /// Stated with no earlier source ([`invented_at`]).
    Invented,
    /// Read from a source that shows it is not the value to answer with (`signals::misread_at`).
    Misread(crate::substrate::signals::Misreading),
}

impl Made {
    /// The verb and the manner of "the output's wrong "X" is {verb} at step N {manner}".
    fn words(self) -> (&'static str, &'static str) {
        match self {
            Made::Invented => ("stated", "with no earlier source"),
            Made::Misread(how) => ("read", how.told()),
        }
    }
}

/// Whether and how step `o` makes the output's wrong `item` itself.
fn made_at(ctx: &Context<'_>, o: usize, item: &str) -> Option<Made> {
    if invented_at(ctx, o, item) {
        return Some(Made::Invented);
    }
    crate::substrate::signals::misread_at(ctx, item, o).filter(|(k, _)| *k == o).map(|(_, how)| Made::Misread(how))
}

fn sufficiency(ctx: &Context<'_>, step: usize, findings: &[Finding]) -> Criterion {
    if findings.iter().any(|f| f.signal == Signal::WrongValueOrigin) {
        return Criterion { passed: true, evidence: "the wrong value of the final output traces back to it".into() };
    }
    if let Some((o, item)) = reached_origin(ctx, step) {
        let written = crate::substrate::signals::as_written(ctx, o, &item);
        // A value the origin states with no earlier source is made there: reaching that step in
        // the graph does not carry it from this one, unless this step's finding steers the run
        // (an assumption, a wrong delegation...) toward it.
        // A step that misreads a table had the right value in front of it: an earlier step's
        // loss of that value (a result it did not carry on) is repaired by the table itself.
        let made = made_at(ctx, o, &item).filter(|made| {
            let kept = |f: &&Finding| !(matches!(made, Made::Misread(_)) && f.signal == Signal::IgnoredToolError);
            !steers(&findings.iter().filter(kept).cloned().collect::<Vec<_>>())
        });
        if let Some((verb, how)) = made.map(Made::words) {
            return Criterion {
                passed: false,
                evidence: prose![
                    format!("the output's wrong \"{written}\" is {verb} at step "),
                    Step(o),
                    format!(" {how}: it does not follow from this step")
                ],
            };
        }
        return Criterion {
            passed: true,
            evidence: prose![
                format!("the output's wrong \"{written}\" surfaces at step "),
                Step(o),
                ", which depends on it"
            ],
        };
    }
    let Some(end) = final_step(ctx) else {
        return Criterion { passed: false, evidence: "no final output".into() };
    };
    // The code an edit leaves is what the run leaves behind, whatever path the graph records.
    if findings.iter().any(|f| failed_edit(ctx, step, f)) {
        return Criterion {
            passed: true,
            evidence: "the code it leaves, which the check fails on, is part of the run's outcome".into(),
        };
    }
    // So is a wrong bound or count the edit writes into the code (`bounds::off_by_one_bound`).
    if findings.iter().any(|f| f.signal == Signal::Miscalculation)
        && crate::substrate::signals::edits(ctx.trajectory, step)
    {
        return Criterion {
            passed: true,
            evidence: "the code it leaves, with the wrong bound, is part of the run's outcome".into(),
        };
    }
    let reaches = step >= end || reaches_final(ctx, step);
    // Reaching the output's step in the graph is position, not evidence: in a coordinated run
    // nearly every step does. It counts when the step's finding steers the run, or when the
    // output reuses a value the step introduced (an invented value or a failed action that the
    // output does not carry is not what a correction would change).
    if reaches && !steers(findings) && !crate::substrate::signals::feeds_output_values(ctx, step) {
        return Criterion {
            passed: false,
            evidence: prose![
                "its path to the final output at step ",
                Step(end),
                " carries none of its values, and its findings do not steer the run"
            ],
        };
    }
    if reaches {
        return Criterion { passed: true, evidence: prose!["its effect reaches the final output at step ", Step(end)] };
    }
    let process = findings.iter().any(|f| {
        matches!(
            f.signal,
            Signal::PriorDeviation
                | Signal::WrongDelegation
                | Signal::PrematureAnswer
                | Signal::Assumption
                | Signal::IgnoredToolError
                | Signal::UserMarked
        )
    }) || crate::substrate::signals::misreads_failed_run(ctx, step);
    // The output's wrong value read at a later step this one does not reach, from the wrong row
    // of a table showing the right one, is not a course this step set: the later step had what
    // it needed in front of it. (A value stated there with no source may still be worked out
    // from what this step set going, so that alone does not clear it.)
    if process {
        let origins = crate::substrate::signals::wrong_value_origins(ctx);
        let made: Vec<(usize, &str, (&str, &str))> = origins
            .iter()
            .filter_map(|(o, item)| match made_at(ctx, *o, item)? {
                m @ Made::Misread(_) => Some((*o, item.as_str(), m.words())),
                Made::Invented => None,
            })
            .collect();
        if let Some((o, item, (verb, how))) =
            made.first().filter(|_| made.len() == origins.len() && made.iter().all(|m| m.0 > step))
        {
            let written = crate::substrate::signals::as_written(ctx, *o, item);
            return Criterion {
                passed: false,
                evidence: prose![
                    format!("the output's wrong \"{written}\" is {verb} at step "),
                    Step(*o),
                    format!(" {how}, and this step does not reach that step")
                ],
            };
        }
    }
    // A claim that reads a failing test run as a pass ends the work as if it had passed.
    if process {
        return Criterion {
            passed: true,
            evidence: "it changes the course of the run, which every later step follows".into(),
        };
    }
    // A misread record or count told to the user, a state change the user did not confirm, or
    // one the tool refused (and nothing made it another way: `actions::rejected` leaves no finding
    // then) is part of the outcome itself: the user acts on what they are told, and the state
    // changed, or left unchanged, is what the run leaves behind.
    if let Some(f) = findings.iter().find(|f| {
        matches!(
            f.signal,
            Signal::UnavailableValue
                | Signal::CountMismatch
                | Signal::IgnoredResult
                | Signal::UnconfirmedAction
                | Signal::RejectedAction
                | Signal::ArgumentMismatch
                | Signal::PartialCheck
                | Signal::PartialSearch
                | Signal::OmittedHits
                | Signal::ForbiddenChange
                | Signal::RefusalBypassed
        )
    }) {
        let what = match f.signal {
            Signal::UnconfirmedAction => "the state it changes",
            Signal::ForbiddenChange => "the change it was told not to make",
            Signal::RefusalBypassed => "the change the user refused",
            Signal::RejectedAction => "the change it failed to make",
            Signal::ArgumentMismatch => "what the call with the wrong value did or returned",
            _ => "what it tells the user",
        };
        return Criterion { passed: true, evidence: format!("{what} is part of the run's outcome").into() };
    }
    Criterion {
        passed: false,
        evidence: prose!["no dependency path leads from it to the final output at step ", Step(end)],
    }
}

/// The blind comparison of a window (FALAT §4): the strongest step of the window is the first
/// guess (a tool output that only shows an error hands it to the step that produced it); an
/// earlier step of the window with the same kind of error that it builds on, nearly as strong,
/// generates it instead. Without any finding in the window the first step is named, weakly, and
/// the reason says it is named by position, not for an error it shows.
fn roles(ctx: &Context<'_>, window: std::ops::Range<usize>) -> Answer {
    let scored: Vec<(usize, f32)> =
        window.clone().map(|j| (j, recall(ctx, j).map(|f| combine(&f)).unwrap_or(0.0))).collect();
    let strongest = scored.iter().copied().fold(None, |best: Option<(usize, f32)>, (j, v)| match best {
        Some((_, b)) if b >= v => best,
        _ if v > 0.0 => Some((j, v)),
        _ => best,
    });
    let Some((mut decisive, _)) = strongest else {
        let first = window.start;
        return Answer::Roles {
            roles: vec![(first, Role::RootCause)],
            decisive: first,
            reason: prose![
                "no step from ",
                Step(window.start),
                " to ",
                Step(window.end.saturating_sub(1)),
                " has a finding of its own, so none stands out and step ",
                Step(first),
                " is named only by position, as the window's first step"
            ],
        };
    };
    let mut reason = prose!["step ", Step(decisive), " shows the strongest error of the window"];
    if ctx.trajectory.steps[decisive].kind == StepKind::ToolResult && !is_agent_output(ctx, decisive) {
        let p = producer(ctx, decisive);
        if p != decisive && window.contains(&p) {
            reason = prose![
                "step ",
                Step(decisive),
                " is a tool output that only shows the error; step ",
                Step(p),
                " produced it"
            ];
            decisive = p;
        }
    }
    if let Some(g) = ctx.graph {
        let decisive_score = recall(ctx, decisive).map(|f| combine(&f)).unwrap_or(0.0);
        for j in window.start..decisive {
            let Some(f) = recall(ctx, j) else { continue };
            let same_kind =
                recall(ctx, decisive).unwrap_or_default().iter().any(|c| f.iter().any(|x| x.signal == c.signal));
            if same_kind && g.find(j, decisive).is_some() && combine(&f) >= 0.8 * decisive_score {
                reason = prose![
                    "step ",
                    Step(j),
                    " already shows the same kind of error and step ",
                    Step(decisive),
                    " builds on it"
                ];
                decisive = j;
                break;
            }
        }
    }
    let mut roles = vec![(decisive, Role::RootCause)];
    let downstream: HashSet<usize> =
        ctx.graph.map(|g| g.descendants(decisive).into_iter().collect()).unwrap_or_default();
    for j in window {
        if j == decisive {
            continue;
        }
        let s = &ctx.hierarchy.steps[j];
        if j > decisive && downstream.contains(&j) {
            let visible = s.flags.error || s.flags.failed_execution || Some(j) == final_step(ctx);
            roles.push((j, if visible { Role::Symptom } else { Role::Propagation }));
        } else if j < decisive && recall(ctx, j).is_some() && ctx.graph.is_some_and(|g| g.path(j, decisive).is_some()) {
            roles.push((j, Role::Contributing));
        } else if j > decisive && (s.flags.error || s.flags.failed_execution) && recall(ctx, j).is_none() {
            roles.push((j, Role::Symptom));
        }
    }
    roles.sort_by_key(|(s, _)| *s);
    Answer::Roles { roles, decisive, reason }
}

#[cfg(test)]
mod bounds_tests {
    use super::*;
    use crate::hierarchy;
    use crate::model::{Step, Trajectory};

    #[test]
    fn out_of_range_steps_get_neutral_answers_not_panics() {
        let t = Trajectory {
            steps: vec![Step { agent: "a".into(), content: "hello there".into(), ..Step::default() }],
            ..Trajectory::default()
        };
        let h = hierarchy::build(&t);
        let ctx = Context {
            trajectory: &t,
            hierarchy: &h,
            prior: None,
            graph: None,
            facts: &crate::substrate::Facts::default(),
            ground_truth: false,
        };
        assert_eq!(
            answer(&ctx, &Question::LabelTransition { from: 0, to: 9 }),
            Answer::Transition(Transition::NoInfluence)
        );
        let q = Question::Verify { step: 5, criterion: CriterionKind::Sufficiency, live: vec![].into() };
        assert!(matches!(answer(&ctx, &q), Answer::Criterion(Criterion { passed: false, .. })));
        let q = Question::Roles { window: 7..9 };
        assert!(matches!(answer(&ctx, &q), Answer::Roles { decisive: 7, ref roles, .. } if roles.is_empty()));
        let q = Question::Roles { window: 0..9 };
        assert!(matches!(answer(&ctx, &q), Answer::Roles { decisive: 0, .. }));
        assert_eq!(answer(&ctx, &Question::RecallCandidates { range: 3..8 }), Answer::Candidates(vec![]));
    }
}
