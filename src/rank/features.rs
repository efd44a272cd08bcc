//! Features of every step for the fitted step ranker (`docs/RANKER.md`).
//!
//! One row of [`NAMES`] values per step, all derived from the substrate every method shares:
//! the offline judge's candidate signals (their weights, per signal), where the step sits (relative
//! position, first acting step, first step of its agent), what it is (kind, action, role, whether
//! it answers, hedges or claims verification), its agent (share of the run, whether that agent
//! delegates or calls tools), the dependency graph (whether its effect reaches the final output
//! and in how many hops, its degree), the provenance of the final output's values, and the
//! tool-error context around it. No feature names a benchmark, a file, an agent name or a task
//! wording.
//!
//! Steps that can never be decisive (the system policy, the task statement) are **masked**: the
//! ranker gives them probability 0.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::diagnosis::Signal;
use crate::graph::DepGraph;
use crate::hierarchy::{Action, Hierarchy, Origin};
use crate::model::{LinkKind, StepKind, Trajectory};
use crate::prior;
use crate::substrate::Context;
use crate::substrate::signals::{self, combine, jaccard, word_set};

/// The signals the ranker reads (the machine's; user marks are not features), each with a feature
/// of its own and all of them in the noisy-or score: [`Signal::STEP_LOCAL`] and the findings about
/// actions, grounding, assertions and progress (docs/METHODS.md). [`Signal::BlockingChange`] is
/// left out: it holds in 2 of the 88 labelled tune runs, too few to fit a weight for it, and
/// folding it into the score moved other runs' fitted probabilities without a gain in
/// cross-validation (`docs/RANKER.md`). The offline judge uses it with its hand-set weight.
const SIGNALS: [Signal; 15] = Signal::FINDINGS;

/// Feature names, in row order (the model file lists them and is checked against this).
pub const NAMES: [&str; 66] = [
    "score",
    "score_share",
    "findings",
    "sig_unsourced_value",
    "sig_assumption",
    "sig_failed_action",
    "sig_ignored_tool_error",
    "sig_prior_deviation",
    "sig_wrong_delegation",
    "sig_premature_answer",
    "sig_repeated_failure",
    "sig_wrong_value_origin",
    "sig_rejected_action",
    "sig_unconfirmed_action",
    "sig_unavailable_value",
    "sig_count_mismatch",
    "sig_unverified_assertion",
    "sig_no_progress",
    "earliest_candidate",
    "earlier_candidates",
    "pos_rel",
    "pos_first_act",
    "pos_agent_first",
    "pos_agent_rank",
    "log_steps",
    "kind_message",
    "kind_thought",
    "kind_tool_call",
    "kind_tool_result",
    "kind_delegation",
    "act_plan",
    "act_coordinate",
    "act_search",
    "act_read_file",
    "act_write_code",
    "act_verify",
    "act_answer",
    "act_terminate",
    "act_discuss",
    "role_user",
    "flag_error",
    "flag_failed_exec",
    "flag_empty",
    "flag_hedged",
    "flag_claims_verified",
    "flag_answer",
    "agent_share",
    "agent_delegates",
    "agent_calls_tools",
    "reaches_final",
    "hops_to_final",
    "is_final",
    "out_degree",
    "in_degree",
    "output_values_origin",
    "introduces",
    "uses_step_values",
    "prev_error",
    "own_result_error",
    "errors_before",
    "before_first_error",
    "task_overlap",
    "log_length",
    "call_changes_state",
    "first_state_change",
    "before_state_change",
];

/// The features of every step of one trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct StepFeatures {
    /// One row per step, [`NAMES`] in order.
    pub rows: Vec<Vec<f64>>,
    /// Steps that can never be decisive (system policy, task statement).
    pub masked: Vec<bool>,
}

/// Whether a step can never be the decisive error: the system policy (role `system`) or the
/// task statement (the request that opens the run). A human debugger reads these as the rules
/// and the question, not as something the run did.
pub fn never_decisive(t: &Trajectory, h: &Hierarchy, i: usize) -> bool {
    t.steps[i].role.eq_ignore_ascii_case("system") || h.steps.get(i).is_some_and(|s| s.action == Action::Request)
}

/// Features of every step of `ctx.trajectory`. Uses the context's prior and graph when it has
/// them and derives them otherwise, so the answer does not depend on which stage asks.
pub fn extract(ctx: &Context<'_>) -> StepFeatures {
    let t = ctx.trajectory;
    let h = ctx.hierarchy;
    let n = t.steps.len();
    let own_prior;
    let prior = match ctx.prior {
        Some(p) => p,
        None => {
            own_prior = prior::derive(&t.task, &t.agents);
            &own_prior
        }
    };
    let own_graph;
    let graph = match ctx.graph {
        Some(g) => g,
        None => {
            own_graph = DepGraph::build(t, h);
            &own_graph
        }
    };
    let ctx = Context { prior: Some(prior), graph: Some(graph), ..*ctx };
    let masked: Vec<bool> = (0..n).map(|i| never_decisive(t, h, i)).collect();
    let findings: Vec<Vec<crate::diagnosis::Finding>> = (0..n)
        .map(|i| {
            let mut f = if masked[i] { Vec::new() } else { signals::recall(&ctx, i).unwrap_or_default() };
            f.retain(|x| SIGNALS.contains(&x.signal));
            f
        })
        .collect();
    let scores: Vec<f64> = findings.iter().map(|f| f64::from(combine(f))).collect();
    let best = scores.iter().copied().fold(0.0, f64::max);
    let earliest = scores.iter().position(|s| *s > 0.0);
    let final_step = signals::final_step(&ctx);
    let hops = hops_to(graph, final_step, n);
    let first_act = (0..n).find(|&i| !masked[i]);
    let results = result_steps(t);
    let failed = |j: usize| {
        let s = &h.steps[j];
        s.flags.failed_execution || s.flags.error && (t.steps[j].is_error || s.kind == StepKind::ToolResult)
    };
    let first_error = (0..n).find(|&j| failed(j));
    // Agents: share of the steps, whether they delegate or call tools, first step.
    let mut agent_steps: HashMap<&str, usize> = HashMap::new();
    let mut delegates: HashSet<&str> = HashSet::new();
    let mut tools: HashSet<&str> = HashSet::new();
    for s in &t.steps {
        *agent_steps.entry(s.agent.as_str()).or_default() += 1;
        match s.kind {
            StepKind::Delegation => {
                delegates.insert(s.agent.as_str());
            }
            StepKind::ToolCall => {
                tools.insert(s.agent.as_str());
            }
            _ => {}
        }
    }
    let mut seen_agent: HashMap<&str, usize> = HashMap::new();
    // Provenance of the final output's values.
    let mut output_origin = vec![0.0; n];
    if let Some(f) = final_step {
        for (_, o) in &h.steps[f].uses {
            if let Origin::Step(j) = o {
                output_origin[signals::producer(&ctx, *j)] += 1.0;
            }
        }
        output_origin[f] += h.steps[f].introduces.len() as f64;
    }
    let task_words = word_set(&t.task);
    let state: Vec<bool> = (0..n).map(|i| signals::changes_state(t, i)).collect();
    let first_state = state.iter().position(|s| *s);
    let mut errors_before = 0usize;
    let mut rows = Vec::with_capacity(n);
    let denom = (n.max(2) - 1) as f64;
    for i in 0..n {
        let s = &h.steps[i];
        let step = &t.steps[i];
        let mut r: Vec<f64> = Vec::with_capacity(NAMES.len());
        let f = &findings[i];
        r.push(scores[i]);
        r.push(if best > 0.0 { scores[i] / best } else { 0.0 });
        r.push(f.len() as f64);
        for sig in SIGNALS {
            r.push(f.iter().filter(|x| x.signal == sig).map(|x| f64::from(x.weight)).fold(0.0, f64::max));
        }
        r.push(flag(earliest == Some(i)));
        r.push(scores[..i].iter().filter(|x| **x > 0.0).count() as f64 / denom);
        r.push(i as f64 / denom);
        r.push(flag(first_act == Some(i)));
        let rank = seen_agent.entry(step.agent.as_str()).or_default();
        r.push(flag(*rank == 0));
        r.push(((*rank as f64) + 1.0).ln());
        *rank += 1;
        r.push((n as f64).ln());
        for k in [StepKind::Message, StepKind::Thought, StepKind::ToolCall, StepKind::ToolResult, StepKind::Delegation]
        {
            r.push(flag(step.kind == k));
        }
        for a in [
            Action::Plan,
            Action::Coordinate,
            Action::Search,
            Action::ReadFile,
            Action::WriteCode,
            Action::Verify,
            Action::Answer,
            Action::Terminate,
            Action::Discuss,
        ] {
            r.push(flag(s.action == a));
        }
        r.push(flag(step.role.eq_ignore_ascii_case("user") || step.role.eq_ignore_ascii_case("human")));
        for on in [
            s.flags.error,
            s.flags.failed_execution,
            s.flags.empty_result,
            s.flags.hedged,
            s.flags.claims_verified,
            s.flags.answer,
        ] {
            r.push(flag(on));
        }
        let a = step.agent.as_str();
        r.push(agent_steps.get(a).copied().unwrap_or(0) as f64 / n as f64);
        r.push(flag(delegates.contains(a)));
        r.push(flag(tools.contains(a)));
        r.push(flag(hops[i].is_some()));
        r.push(hops[i].map_or(1.0, |d| (d as f64 / 10.0).min(1.0)));
        r.push(flag(final_step == Some(i)));
        let (out_degree, in_degree) = graph.degree(i);
        r.push((out_degree as f64).ln_1p());
        r.push((in_degree as f64).ln_1p());
        r.push(output_origin[i].min(5.0));
        r.push((s.introduces.len() as f64).ln_1p());
        r.push((s.uses.iter().filter(|(_, o)| matches!(o, Origin::Step(_))).count() as f64).ln_1p());
        r.push(flag(i > 0 && failed(i - 1)));
        r.push(flag(results.get(&i).is_some_and(|&j| failed(j))));
        r.push((errors_before as f64).ln_1p());
        r.push(flag(first_error.is_some_and(|e| results.get(&i) == Some(&e) || i + 1 == e)));
        r.push(f64::from(jaccard(&word_set(&step.content), &task_words)));
        r.push((step.content.len() as f64).ln_1p() / 8.0);
        r.push(flag(state[i]));
        r.push(flag(first_state == Some(i)));
        r.push(flag(!state[i] && (i + 1..(i + 3).min(n)).any(|j| state[j])));
        if failed(i) {
            errors_before += 1;
        }
        debug_assert_eq!(r.len(), NAMES.len());
        rows.push(r);
    }
    StepFeatures { rows, masked }
}

fn flag(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

/// The step that answered each call or ran each code block: `call → result`.
fn result_steps(t: &Trajectory) -> HashMap<usize, usize> {
    t.links
        .iter()
        .filter(|l| matches!(l.kind, LinkKind::Execution | LinkKind::ToolResult))
        .map(|l| (l.from, l.to))
        .collect()
}

/// Hops from each step to `target` along the graph's edges (`None`: unreachable), by one
/// backward breadth-first search: linear in the graph's size.
fn hops_to(graph: &DepGraph, target: Option<usize>, n: usize) -> Vec<Option<usize>> {
    let mut out = vec![None; n];
    let Some(t) = target.filter(|t| *t < n) else { return out };
    out[t] = Some(0);
    let mut queue = VecDeque::from([t]);
    while let Some(s) = queue.pop_front() {
        let d = out[s].unwrap_or(0);
        for (from, _) in graph.incoming(s) {
            if from < n && out[from].is_none() {
                out[from] = Some(d + 1);
                queue.push_back(from);
            }
        }
    }
    out
}
