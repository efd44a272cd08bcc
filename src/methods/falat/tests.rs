//! Stage tests on small hand-written trajectories with exact expected outputs.

use super::*;
use crate::judge::heuristic::HeuristicJudge;
use crate::model::{Link, LinkKind, Step, StepKind};

fn msg(agent: &str, content: &str) -> Step {
    Step { agent: agent.into(), content: content.into(), ..Step::default() }
}

fn tool(content: &str) -> Step {
    Step { agent: "Computer_terminal".into(), kind: StepKind::ToolResult, content: content.into(), ..Step::default() }
}

fn traj(task: &str, steps: Vec<Step>, links: Vec<(usize, usize)>) -> Trajectory {
    let mut t = Trajectory { id: "t".into(), task: task.into(), steps, ..Trajectory::default() };
    for (i, s) in t.steps.iter_mut().enumerate() {
        s.index = i;
    }
    t.links = links.into_iter().map(|(from, to)| Link { from, to, kind: LinkKind::Execution }).collect();
    t.refresh_agents();
    t
}

fn run(t: &Trajectory) -> Diagnosis {
    crate::methods::run(
        crate::methods::Method::Falat,
        t,
        &HeuristicJudge,
        &crate::methods::MethodOptions::for_falat(Options::new(true)),
    )
}

#[test]
fn invented_value_is_root_cause_and_repeats_propagate() {
    let t = traj(
        "What is the population difference between Seattle and Colville in the 2020 census?",
        vec![
            msg("Planner", "Let us look up both populations and subtract them."),
            msg("Data_Expert", "The census figures are: Seattle 737,015 and Colville 4,965."),
            msg("Math_Expert", "Using 737,015 and 4,965 the difference is 732,050."),
            msg("Verification_Expert", "I checked 732,050 against 737,015 minus 4,965."),
            msg("Verification_Expert", "TERMINATE"),
        ],
        vec![],
    );
    let d = run(&t);
    assert_eq!(d.decisive_step, Some(1));
    assert_eq!(d.agent.as_deref(), Some("Data_Expert"));
    assert_eq!(d.category, "hallucination");
    assert_eq!(d.role_of(1), Some(Role::RootCause));
    assert_eq!(d.role_of(2), Some(Role::Propagation));
    assert_eq!(d.path, vec![1, 3]);
}

#[test]
fn corrected_tool_error_is_pruned_with_correction() {
    let t = traj(
        "Compute the total of the attached sales figures.",
        vec![
            msg("Coder", "```python\nprint(sum(sales)\n```"),
            tool("exitcode: 1 (execution failed)\nCode output: SyntaxError: unexpected EOF"),
            msg("Coder", "Fixed the bracket.\n```python\nprint(sum(sales))\n```"),
            tool("exitcode: 0 (execution succeeded)\nCode output: 4521"),
            msg("Coder", "The total is 4521."),
        ],
        vec![(0, 1), (2, 3)],
    );
    let mut deps_p = Pipeline::default();
    deps_p.run(&t, &HeuristicJudge, &Options::new(false), Stage::Dependencies).unwrap();
    let deps = deps_p.deps.unwrap();
    let c0 = deps.candidates.iter().find(|c| c.step == 0).expect("step 0 is a candidate");
    let p = c0.pruned.as_ref().expect("pruned");
    assert_eq!(p.transition, Transition::Correction);
    assert_eq!(p.by_step, Some(2));
}

#[test]
fn unused_output_is_a_dead_end() {
    let t = traj(
        "Which river is longer, the Nile or the Amazon?",
        vec![
            msg("Geo_Expert", "Side note: the Danube is 2,850 km long."),
            msg("Geo_Expert", "Comparing the two rivers, the Nile is the longer one."),
            msg("Geo_Expert", "TERMINATE"),
        ],
        vec![],
    );
    let mut p = Pipeline::default();
    p.run(&t, &HeuristicJudge, &Options::new(false), Stage::Dependencies).unwrap();
    let deps = p.deps.unwrap();
    let c0 = deps.candidates.iter().find(|c| c.step == 0).expect("step 0 is a candidate");
    assert_eq!(c0.pruned.as_ref().map(|p| p.transition), Some(Transition::DeadEnd));
}

#[test]
fn later_traceback_is_a_symptom() {
    let t = traj(
        "How many rows of the attached file have a price above 100?",
        vec![
            msg(
                "Analyst",
                "Assume the file has a column named 'cost'. We will filter it.\n```python\nimport pandas as pd\ndf = pd.read_csv('data.csv')\nprint((df['cost'] > 100).sum())\n```",
            ),
            tool("exitcode: 1 (execution failed)\nCode output: Traceback (most recent call last):\nKeyError: 'cost'"),
            msg("Analyst", "The answer is 0 rows."),
        ],
        vec![(0, 1)],
    );
    let d = run(&t);
    assert_eq!(d.decisive_step, Some(0));
    assert_eq!(d.role_of(1), Some(Role::Symptom));
    assert_eq!(d.role_of(0), Some(Role::RootCause));
}

#[test]
fn overrides_pin_and_exclude() {
    let t = traj(
        "What is the population difference between Seattle and Colville in the 2020 census?",
        vec![
            msg("Planner", "Let us look up both populations and subtract them."),
            msg("Data_Expert", "The census figures are: Seattle 737,015 and Colville 4,965."),
            msg("Math_Expert", "Using 737,015 and 4,965 the difference is 732,050."),
            msg("Verification_Expert", "TERMINATE"),
        ],
        vec![],
    );
    let mut opts = Options::new(false);
    opts.overrides.excluded = vec![1];
    let d = crate::methods::run(
        crate::methods::Method::Falat,
        &t,
        &HeuristicJudge,
        &crate::methods::MethodOptions::for_falat(opts.clone()),
    );
    assert_eq!(d.candidate(1).and_then(|c| c.pruned.as_ref()).map(|p| p.reason.as_str()), Some("excluded by the user"));
    assert_ne!(d.decisive_step, Some(1));
    opts.overrides = Overrides { pinned: Some(0), ..Overrides::default() };
    let d = crate::methods::run(
        crate::methods::Method::Falat,
        &t,
        &HeuristicJudge,
        &crate::methods::MethodOptions::for_falat(opts.clone()),
    );
    assert_eq!(d.decisive_step, Some(0));
    assert_eq!(d.agent.as_deref(), Some("Planner"));
    assert_eq!(d.category, "user_pinned");
    // The pin is said once; the machine's own findings follow it when there are any.
    assert!(d.reason.starts_with("step 0 (Planner) was pinned by the user."), "{}", d.reason);
    assert_eq!(d.reason.matches("pinned by the user").count(), 1, "{}", d.reason);
    opts.overrides = Overrides { pinned: Some(1), ..Overrides::default() };
    let d = crate::methods::run(
        crate::methods::Method::Falat,
        &t,
        &HeuristicJudge,
        &crate::methods::MethodOptions::for_falat(opts.clone()),
    );
    assert!(
        d.reason.starts_with("step 1 (Data_Expert) was pinned by the user; the machine found: states "),
        "{}",
        d.reason
    );
    assert_eq!(d.reason.matches("pinned by the user").count(), 1, "{}", d.reason);
}
