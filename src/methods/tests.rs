//! Method tests on small hand-written trajectories with exact expected outputs.

use super::*;
use crate::diagnosis::{Detail, Role};
use crate::judge::attribution::{Conclusion, Effect, Perspective, VoteTarget};
use crate::judge::heuristic::HeuristicJudge;
use crate::model::{Link, LinkKind, Step, StepKind};

fn msg(agent: &str, content: &str) -> Step {
    Step { agent: agent.into(), content: content.into(), ..Step::default() }
}

fn tool(content: &str) -> Step {
    Step { agent: "Computer_terminal".into(), kind: StepKind::ToolResult, content: content.into(), ..Step::default() }
}

fn traj(id: &str, task: &str, steps: Vec<Step>, links: Vec<(usize, usize)>) -> Trajectory {
    let mut t = Trajectory { id: id.into(), task: task.into(), steps, ..Trajectory::default() };
    for (i, s) in t.steps.iter_mut().enumerate() {
        s.index = i;
    }
    t.links = links.into_iter().map(|(from, to)| Link { from, to, kind: LinkKind::Execution }).collect();
    t.refresh_agents();
    t
}

/// An assumed census figure (step 1) carried through a computation and a check.
pub(super) fn census() -> Trajectory {
    traj(
        "census",
        "What is the population difference between Seattle and Colville in the 2020 census?",
        vec![
            msg("Planner", "Let us look up both populations and subtract them."),
            msg("Data_Expert", "Let's assume the census figures are: Seattle 737,015 and Colville 4,965."),
            msg("Math_Expert", "Using 737,015 and 4,965 the difference is 732,050."),
            msg("Verification_Expert", "I checked 732,050 against 737,015 minus 4,965."),
            msg("Verification_Expert", "TERMINATE"),
        ],
        vec![],
    )
}

/// A syntax error that is corrected (steps 1-4), then an assumed discount (step 5).
pub(super) fn sales() -> Trajectory {
    traj(
        "sales",
        "Compute the total of the attached sales figures.",
        vec![
            msg("Planner", "Plan: compute the total of the attached sales figures and report it."),
            msg("Coder", "```python\nprint(sum(sales)\n```"),
            tool("exitcode: 1 (execution failed)\nCode output: SyntaxError: unexpected EOF"),
            msg("Coder", "Fixed the bracket.\n```python\nprint(sum(sales))\n```"),
            tool("exitcode: 0 (execution succeeded)\nCode output: 4521"),
            msg("Coder", "Let's assume a discount applies to the 4521, so the total is 4,069."),
            msg("Reviewer", "The total is 4,069. TERMINATE"),
        ],
        vec![(1, 2), (3, 4)],
    )
}

fn run_on(m: Method, t: &Trajectory) -> Diagnosis {
    run(m, t, &HeuristicJudge, &MethodOptions::new(true))
}

#[test]
fn every_method_names_the_assumed_census_figure() {
    let t = census();
    for m in Method::ALL {
        let d = run_on(m, &t);
        assert_eq!(d.method, m);
        assert_eq!(d.judge, "heuristic");
        assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(1), Some("Data_Expert")), "{m}");
    }
}

#[test]
fn judge_calls_are_counted_per_method() {
    let t = census();
    let calls = |m| run_on(m, &t).total_cost().calls;
    // ECHO: 3 agent analysts + 3 step analysts. DeFA: 1 segment recall + 1 propagation + 1
    // adjudication. Step-by-step stops at step 1; binary search halves 5 steps in 3 rounds.
    assert_eq!(calls(Method::Echo), 6);
    assert_eq!(calls(Method::Defa), 3);
    assert_eq!(calls(Method::AllAtOnce), 1);
    assert_eq!(calls(Method::StepByStep), 2);
    assert_eq!(calls(Method::BinarySearch), 3);
    assert_eq!(calls(Method::Random), 0);
    let d = run_on(Method::Echo, &t);
    let stages: Vec<(&str, u64)> = d.cost.iter().map(|c| (c.stage.as_str(), c.cost.calls)).collect();
    assert_eq!(stages, vec![("context", 0), ("agent-analysts", 3), ("step-analysts", 3)]);
    assert!(d.cost.iter().all(|c| c.cost.prompt_tokens == 0 && c.cost.completion_tokens == 0));
}

#[test]
fn echo_panel_votes_for_the_assumption() {
    let d = run_on(Method::Echo, &census());
    assert_eq!(
        d.details[0],
        Detail::Panel(vec![Perspective::DetailFocused, Perspective::Liberal, Perspective::General])
    );
    let consensus = d.details.iter().find(|x| x.title() == "step consensus").unwrap();
    let Detail::Consensus(VoteTarget::Step, votes) = consensus else { panic!("{consensus:?}") };
    assert_eq!(votes.types.len(), 1);
    assert_eq!((votes.types[0].0, (votes.types[0].1 * 100.0).round()), (Conclusion::SingleAgent, 188.0));
    assert_eq!(votes.steps.iter().map(|(s, _)| *s).collect::<Vec<_>>(), vec![1]);
    assert!(!votes.review);
    assert_eq!(consensus.lines()[0], "types: single_agent 1.88");
    assert_eq!(consensus.lines()[2], "steps: 1 1.88");
    // The step's probability through the shipped ranker's calibration map.
    // 0.6155 before the ranker was refitted on hedges that restate the policy and figures with
    // thousands separators, 0.6258 before it was refitted on quoted strings paired in order, 0.6264 before it
    // was refitted on the claimed-lookup finding, 0.6230 before it was refitted on reading failed
    // reads, installs and test summaries, 0.6102 before it was refitted on figures told rounded
    // from a longer one.
    assert!((d.confidence - 0.6189).abs() < 5e-4, "{}", d.confidence);
    assert_eq!(d.roles, vec![(1, Role::RootCause)]);
    assert!(d.warnings.is_empty());
}

#[test]
fn defa_prunes_the_corrected_error_by_propagation() {
    let d = run_on(Method::Defa, &sales());
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(5), Some("Coder")));
    assert_eq!(d.category, "unsupported_assumption");
    let graph = d.details.iter().find(|x| matches!(x, Detail::PropagationGraph(_))).unwrap();
    let Detail::PropagationGraph(edges) = graph else { unreachable!() };
    let edges: Vec<(usize, usize, Effect)> = edges.iter().map(|e| (e.from, e.to, e.effect)).collect();
    assert_eq!(edges, vec![(1, 2, Effect::Continued), (1, 3, Effect::Corrected), (5, 6, Effect::Continued)]);
    assert_eq!(
        graph.lines(),
        vec!["1 -> 2 continued".to_string(), "1 -> 3 corrected".into(), "5 -> 6 continued".into()]
    );
    assert_eq!(d.roles, vec![(5, Role::RootCause), (6, Role::Symptom)]);
    assert_eq!(d.candidates.iter().map(|c| c.step).collect::<Vec<_>>(), vec![1, 5]);
    let stages: Vec<(&str, u64)> = d.cost.iter().map(|c| (c.stage.as_str(), c.cost.calls)).collect();
    assert_eq!(stages, vec![("segmentation", 0), ("recall", 1), ("propagation", 1), ("adjudication", 1)]);
}

#[test]
fn baselines_on_the_corrected_error() {
    let t = sales();
    let d = run_on(Method::StepByStep, &t);
    assert_eq!(d.decisive_step, Some(5));
    let Detail::Verdicts(v) = &d.details[0] else { panic!("{:?}", d.details[0]) };
    assert_eq!(v.len(), 6, "steps 0..=5 were asked");
    assert_eq!((v[1].step, v[1].decisive), (1, Some(false)));
    assert_eq!(v[5].decisive, Some(true));
    assert_eq!(d.details[0].lines()[1], "step 1: not decisive (0.60)");
    let d = run_on(Method::BinarySearch, &t);
    assert_eq!(d.decisive_step, Some(5));
    let Detail::Rounds(r) = &d.details[0] else { panic!("{:?}", d.details[0]) };
    assert_eq!(r.iter().map(|r| (r.range.clone(), r.split)).collect::<Vec<_>>(), vec![(0..7, 4), (4..7, 6), (4..6, 5)]);
    assert_eq!(d.details[0].lines(), vec!["0..7 split 4: second", "4..7 split 6: first", "4..6 split 5: second"]);
    assert_eq!(run_on(Method::AllAtOnce, &t).decisive_step, Some(5));
    assert_eq!(run_on(Method::Falat, &t).decisive_step, Some(5));
}

#[test]
fn random_is_seeded_per_trajectory() {
    let t = sales();
    let draw = |seed| {
        let opts = MethodOptions { seed, ..MethodOptions::new(true) };
        run(Method::Random, &t, &HeuristicJudge, &opts).decisive_step
    };
    assert_eq!(draw(0), Some(2));
    assert_eq!(draw(0), draw(0));
    let draws: Vec<Option<usize>> = (0..20).map(draw).collect();
    assert!(draws.iter().any(|d| *d != Some(2)), "other seeds draw other steps");
    assert!(draws.iter().all(|d| d.is_some_and(|s| s < 7)));
}

#[test]
fn an_empty_trajectory_names_no_step() {
    let t = Trajectory { id: "empty".into(), ..Trajectory::default() };
    let opts = MethodOptions::new(true);
    for m in Method::ALL {
        let d = run_on(m, &t);
        assert_eq!((d.decisive_step, d.agent.as_deref()), (None, None), "{m}");
        assert_eq!(d.warnings, vec!["the trajectory has no steps".to_string()]);
    }
    let sub = crate::substrate::Substrate::build(&t);
    let direct = [
        echo::run(&t, &sub, &HeuristicJudge, &opts),
        defa::run(&t, &sub, &HeuristicJudge, &opts),
        baselines::all_at_once(&t, &sub, &HeuristicJudge, &opts),
        baselines::step_by_step(&t, &sub, &HeuristicJudge, &opts),
        baselines::binary_search(&t, &sub, &HeuristicJudge, &opts),
        baselines::random(&t, &sub, &HeuristicJudge, &opts),
    ];
    assert!(direct.iter().all(|d| d.decisive_step.is_none() && d.warnings.len() == 1));
}

#[test]
fn method_names_parse_and_print() {
    for m in Method::ALL {
        assert_eq!(Method::parse(m.as_str()), Some(m));
    }
    assert_eq!(Method::parse("Binary_Search"), Some(Method::BinarySearch));
    assert_eq!(Method::parse("bisect"), None);
    assert_eq!(Method::parse_list("falat, echo"), Ok(vec![Method::Falat, Method::Echo]));
    assert_eq!(Method::parse_list("all").unwrap().len(), 7);
    assert_eq!(
        Method::parse_list("falat,nope").unwrap_err().to_string(),
        "unknown method \"nope\" (known: falat, echo, defa, all-at-once, step-by-step, binary-search, random, all)"
    );
}

#[test]
fn views_carry_explicit_step_numbers() {
    let t = sales();
    let h = crate::hierarchy::build(&t);
    assert_eq!(view::header(&t.steps[2]), "[step 2] Computer_terminal (tool_result)");
    assert!(view::log(&t, 1..3).starts_with("[step 1] Coder (message):\n```python"));
    assert!(view::log(&t, 1..3).contains("\n\n[step 2] Computer_terminal (tool_result):\nexitcode: 1"));
    assert_eq!(
        view::brief(&t, &h, 4, 20),
        "[step 4] Computer_terminal (tool_result) tool-output: exitcode: 0 (execut…"
    );
    assert!(view::decision(&t, &h, 5).contains("(new values: 4069)"), "{}", view::decision(&t, &h, 5));
}
