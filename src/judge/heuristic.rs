//! The offline judge: answers every question from lexical and structural signals, with no
//! network and deterministically (docs/DESIGN.md §4).
//!
//! Signals: values and their first sources (provenance in the hierarchy), tool errors and exit
//! codes, hedging words, repeated actions, delegation structure, relevance of what a step does to
//! the task's key terms (the prior `π`), the answer type against `π`, and similarity for
//! redundancy. Weights are fixed constants documented at [`weights`]; none refers to a data set.

mod attribution;

use std::collections::HashSet;
use std::time::Instant;

use super::{Answer, Context, CriterionKind, Judge, Judged, Question};
use crate::diagnosis::{Cost, Criterion, Finding, Role, Signal, Transition};
use crate::evidence::{self, EvidenceKind};
use crate::graph::EdgeKind;
use crate::hierarchy::{Action, Origin, StepSummary};
use crate::model::{LinkKind, StepKind};
use crate::prior::{self, AnswerType};
use crate::substrate::{LinkIndex, Upstream};
use crate::text;

/// The weights of the heuristic signals, 0..=1. A candidate's score is the noisy-or of its
/// findings' weights.
pub mod weights {
    /// Per unsourced non-trivial value (capped at [`UNSOURCED_MAX`]).
    pub const UNSOURCED_PER_VALUE: f32 = 0.12;
    /// Cap for unsourced values.
    pub const UNSOURCED_MAX: f32 = 0.55;
    /// Hedged or assumed content.
    pub const ASSUMPTION: f32 = 0.5;
    /// Code or tool call that failed.
    pub const FAILED_ACTION: f32 = 0.4;
    /// Going on after a tool error as if nothing happened.
    pub const IGNORED_ERROR: f32 = 0.45;
    /// Browsing to something unrelated to the task and the instruction.
    pub const IRRELEVANT: f32 = 0.4;
    /// An answer of the wrong type for `π`.
    pub const ANSWER_TYPE: f32 = 0.3;
    /// A delegation whose delegate could not act on it.
    pub const WRONG_DELEGATION: f32 = 0.45;
    /// Claiming verification without evidence, or ending with an unresolved error.
    pub const PREMATURE: f32 = 0.35;
    /// Repeating an action that already failed.
    pub const REPEATED: f32 = 0.25;
    /// The wrong value of the final output first appears here.
    pub const WRONG_VALUE: f32 = 0.6;
    /// The expected value was in a tool output and this step, the next to read it, lost it.
    pub const MISREAD: f32 = 0.5;
    /// Phase suspicion (from `M_hi`): a step of the phase reports an error, failure or nothing.
    pub const PHASE_ERROR: f32 = 0.5;
    /// Phase suspicion: a step of the phase hedges.
    pub const PHASE_HEDGE: f32 = 0.4;
    /// Phase suspicion: an agent of the phase introduces values of its own (the way invented
    /// figures enter a run, so as strong as an error).
    pub const PHASE_VALUES: f32 = 0.5;
    /// Phase suspicion: the phase answers or claims a verified result.
    pub const PHASE_ANSWER: f32 = 0.3;
    /// Phase suspicion: the phase's agent is none of those the prior expects.
    pub const PHASE_PRIOR: f32 = 0.2;
}

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

/// Answers a question (the heuristic judge's logic, usable by other judges as their fallback).
pub fn answer(ctx: &Context<'_>, question: &Question) -> Answer {
    // Step numbers come from callers (and from LLM answers): never index past the trajectory.
    let n = ctx.trajectory.steps.len();
    match question {
        Question::Prior => Answer::Prior(prior::derive(&ctx.trajectory.task, &ctx.trajectory.agents)),
        Question::PhaseSummary { phase } => phase_summary(ctx, *phase),
        Question::RecallCandidates { range } => {
            Answer::Candidates(range.clone().filter_map(|i| recall(ctx, i).map(|f| (i, f))).collect())
        }
        Question::LabelTransition { from, to } if *from >= n || *to >= n => Answer::Transition(Transition::NoInfluence),
        Question::LabelTransition { from, to } => Answer::Transition(label(ctx, *from, *to)),
        Question::Verify { step, .. } if *step >= n => {
            Answer::Criterion(Criterion { passed: false, evidence: format!("step {step} is not in the trajectory") })
        }
        Question::Verify { step, criterion, live } => Answer::Criterion(verify(ctx, *step, *criterion, live)),
        Question::Roles { window } if window.start >= n || window.is_empty() => Answer::Roles {
            roles: Vec::new(),
            decisive: window.start,
            reason: format!("steps {}..{} are not in the trajectory", window.start, window.end),
        },
        Question::Roles { window } => roles(ctx, window.start..window.end.min(n)),
        q => attribution::answer(ctx, q),
    }
}

/// Noisy-or of finding weights.
pub fn combine(findings: &[Finding]) -> f32 {
    1.0 - findings.iter().map(|f| 1.0 - f.weight.clamp(0.0, 1.0)).product::<f32>()
}

/// A phase's suspicion from `M_hi`-level facts only (FALAT's coarse level: no step is examined
/// for evidence here): the noisy-or of [`weights::PHASE_ERROR`] when a step of the phase reports
/// an error, a failed run or an empty result, [`weights::PHASE_HEDGE`] when one hedges,
/// [`weights::PHASE_VALUES`] when an agent (not a tool) introduces values of its own,
/// [`weights::PHASE_ANSWER`] when the phase answers or claims a verified result, and
/// [`weights::PHASE_PRIOR`] when the phase's agent is none of those `π` expects.
fn phase_summary(ctx: &Context<'_>, phase: usize) -> Answer {
    let Some(p) = ctx.hierarchy.phases.get(phase) else {
        return Answer::PhaseSummary { summary: String::new(), suspicion: 0.0 };
    };
    let steps =
        &ctx.hierarchy.steps[p.range.start.min(ctx.hierarchy.steps.len())..p.range.end.min(ctx.hierarchy.steps.len())];
    let mut w: Vec<f32> = Vec::new();
    if steps.iter().any(|s| s.flags.error || s.flags.failed_execution || s.flags.empty_result) {
        w.push(weights::PHASE_ERROR);
    }
    if steps.iter().any(|s| s.flags.hedged) {
        w.push(weights::PHASE_HEDGE);
    }
    if steps.iter().any(|s| s.kind != StepKind::ToolResult && !s.introduces.is_empty() && s.action != Action::Request) {
        w.push(weights::PHASE_VALUES);
    }
    if steps.iter().any(|s| s.flags.answer || s.flags.claims_verified) {
        w.push(weights::PHASE_ANSWER);
    }
    if let Some(prior) = ctx.prior {
        let expected: Vec<&str> = prior.requirements.iter().filter_map(|r| r.agent.as_deref()).collect();
        if !expected.is_empty() && !expected.iter().any(|a| a.eq_ignore_ascii_case(&p.agent)) {
            w.push(weights::PHASE_PRIOR);
        }
    }
    let suspicion = 1.0 - w.iter().map(|x| 1.0 - x).product::<f32>();
    Answer::PhaseSummary { summary: p.summary.clone(), suspicion }
}

/// The findings of one step, or `None` when it shows no violation.
pub fn recall(ctx: &Context<'_>, i: usize) -> Option<Vec<Finding>> {
    let s = ctx.hierarchy.steps.get(i)?;
    // The system policy and the task statement are the rules and the question, never the error.
    let policy = ctx.trajectory.steps[i].role.eq_ignore_ascii_case("system");
    if policy || matches!(s.action, Action::Request) || s.kind == StepKind::ToolResult && !is_agent_output(ctx, i) {
        return None;
    }
    let mut f = Vec::new();
    unsourced(ctx, s, &mut f);
    if s.flags.hedged && s.action != Action::Plan {
        f.push(finding(Signal::Assumption, weights::ASSUMPTION, hedge_evidence(&ctx.trajectory.steps[i].content)));
    }
    failed_action(ctx, i, &mut f);
    ignored_error(ctx, i, &mut f);
    irrelevant(ctx, s, &mut f);
    wrong_delegation(ctx, i, &mut f);
    premature(ctx, s, &mut f);
    repeated(ctx, i, &mut f);
    wrong_value(ctx, i, &mut f);
    answer_type(ctx, s, &mut f);
    (!f.is_empty()).then_some(f)
}

/// A tool result that is really an agent's own output (a browsing agent's report).
fn is_agent_output(ctx: &Context<'_>, i: usize) -> bool {
    let s = &ctx.hierarchy.steps[i];
    matches!(s.action, Action::Search | Action::ReadFile)
}

fn finding(signal: Signal, weight: f32, evidence: String) -> Finding {
    Finding { signal, weight, evidence: text::clip(&text::sanitize(&evidence), 200) }
}

fn unsourced(ctx: &Context<'_>, s: &StepSummary, out: &mut Vec<Finding>) {
    // Plans state what to find out (guesses included) and tool outputs are sources: neither claims.
    if matches!(s.action, Action::Search | Action::ReadFile | Action::ToolOutput | Action::Coordinate | Action::Plan) {
        return;
    }
    let content = &ctx.trajectory.steps[s.index].content;
    let ev = &ctx.hierarchy.evidence[s.index];
    let numeric: Vec<&str> = s
        .introduces
        .iter()
        .filter(|k| {
            ev.iter().any(|e| {
                &e.key == *k
                    && matches!(e.kind, EvidenceKind::Number | EvidenceKind::Date)
                    && !in_code(content, e.span.start)
            })
        })
        .map(String::as_str)
        .collect();
    if numeric.is_empty() {
        return;
    }
    let w = (numeric.len() as f32 * weights::UNSOURCED_PER_VALUE).min(weights::UNSOURCED_MAX);
    let shown: Vec<&str> = numeric.iter().take(5).copied().collect();
    out.push(finding(Signal::UnsourcedValue, w, format!("states {} with no earlier source", shown.join(", "))));
}

fn in_code(content: &str, pos: usize) -> bool {
    let before = &content[..pos.min(content.len())];
    before.matches("```").count() % 2 == 1
}

fn hedge_evidence(content: &str) -> String {
    // ASCII lower-casing keeps byte offsets valid for `content`.
    let low = content.to_ascii_lowercase();
    for w in [
        "assum",
        "hypothetical",
        "placeholder",
        "sample",
        "simulat",
        "dummy",
        "mock",
        "suppose",
        "example",
        "estimat",
        "typically",
    ] {
        if let Some(p) = low.find(w) {
            let line_start = content[..p].rfind('\n').map_or(0, |x| x + 1);
            let line_end = content[p..].find('\n').map_or(content.len(), |x| p + x);
            return format!("rests on an assumption: {}", content[line_start..line_end].trim());
        }
    }
    "rests on an assumption".into()
}

/// The tool output that executed step `i`'s code or answered its call, if any.
fn result_of(ctx: &Context<'_>, i: usize) -> Option<usize> {
    links(ctx).result_of.get(i).copied().flatten()
}

/// The trajectory's links indexed by step (built once per hierarchy).
fn links<'a>(ctx: &Context<'a>) -> &'a LinkIndex {
    ctx.facts.links.get_or_init(|| LinkIndex::build(ctx.trajectory))
}

/// Whether step `step` reaches the final step in the dependency graph (one backward walk from
/// the final step per hierarchy, instead of one path search per step).
pub fn reaches_final(ctx: &Context<'_>, step: usize) -> bool {
    let (Some(g), Some(end)) = (ctx.graph, final_step(ctx)) else { return false };
    ctx.facts.reaches_final.get_or_init(|| g.ancestors(end)).get(step).copied().unwrap_or(false)
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

fn failed_action(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let Some(r) = result_of(ctx, i) else { return };
    let rs = &ctx.hierarchy.steps[r];
    if rs.flags.failed_execution || rs.flags.error && ctx.trajectory.steps[r].is_error {
        let line = error_line(ctx, r).unwrap_or_else(|| "execution failed".into());
        out.push(finding(Signal::FailedAction, weights::FAILED_ACTION, format!("its code failed at step {r}: {line}")));
    }
}

fn error_line(ctx: &Context<'_>, i: usize) -> Option<String> {
    let content = &ctx.trajectory.steps[i].content;
    ctx.hierarchy.evidence[i]
        .iter()
        .rev()
        .find(|e| e.kind == EvidenceKind::ErrorLine)
        .map(|e| e.text(content).trim().to_string())
}

fn ignored_error(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    if i == 0 {
        return;
    }
    let prev = &ctx.hierarchy.steps[i - 1];
    let s = &ctx.hierarchy.steps[i];
    // A "nothing to run" notice is not an error to react to.
    let failed = prev.kind == StepKind::ToolResult
        && (prev.flags.failed_execution || prev.flags.error && !prev.flags.empty_result);
    if !failed || matches!(s.action, Action::WriteCode | Action::Coordinate | Action::Delegate) {
        return;
    }
    let low = lower_of(ctx, i);
    let acknowledges = ["error", "fail", "issue", "problem", "fix", "correct", "unable", "not work", "exception"]
        .iter()
        .any(|w| low.contains(w));
    if !acknowledges {
        out.push(finding(
            Signal::IgnoredToolError,
            weights::IGNORED_ERROR,
            format!("goes on after the error at step {}", i - 1),
        ));
    }
}

/// Page title / address of a browsing step, lower case.
fn browse_target(content: &str) -> Option<String> {
    let low = content.to_lowercase();
    if let Some(p) = low.find("screenshot of [") {
        let rest = &low[p + 15..];
        let end = rest.find("](").unwrap_or(rest.len().min(120));
        return Some(rest[..end].to_string());
    }
    for key in ["title: ", "address: "] {
        if let Some(p) = low.find(key) {
            let rest = &low[p + key.len()..];
            return Some(rest.lines().next().unwrap_or_default().to_string());
        }
    }
    None
}

fn irrelevant(ctx: &Context<'_>, s: &StepSummary, out: &mut Vec<Finding>) {
    if s.action != Action::Search {
        return;
    }
    let Some(target) = browse_target(&ctx.trajectory.steps[s.index].content) else {
        return;
    };
    // The key terms of π (FALAT: recall compares the run with the prior); the task's own when no
    // stage has produced π.
    let mut terms: HashSet<String> = match ctx.prior {
        Some(p) => p.key_terms.iter().cloned().collect(),
        None => prior::key_terms(&ctx.trajectory.task).into_iter().collect(),
    };
    if let Some(instr) = (0..s.index).rev().take(4).find(|&j| ctx.trajectory.steps[j].kind == StepKind::Delegation) {
        terms.extend(prior::key_terms(&ctx.trajectory.steps[instr].content));
    }
    let stems: Vec<String> = terms.iter().map(|t| t.chars().take(5).collect()).collect();
    let hit = stems.iter().any(|t| target.contains(t.as_str()));
    if !hit && !target.trim().is_empty() {
        out.push(finding(
            Signal::PriorDeviation,
            weights::IRRELEVANT,
            format!("lands on \"{}\", unrelated to the task and the instruction", text::clip(target.trim(), 80)),
        ));
    }
}

fn wrong_delegation(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let step = &ctx.trajectory.steps[i];
    if step.kind != StepKind::Delegation {
        return;
    }
    let Some(reply) = links(ctx).reply_to.get(i).copied().flatten() else {
        return;
    };
    let r = &ctx.hierarchy.steps[reply];
    if r.flags.empty_result || r.flags.failed_execution || r.flags.error && r.kind == StepKind::ToolResult {
        let target = step.delegate_to.as_deref().unwrap_or("the delegate");
        out.push(finding(
            Signal::WrongDelegation,
            weights::WRONG_DELEGATION,
            format!("{target} could not act on it (step {reply}: {})", r.decision),
        ));
    }
}

fn premature(ctx: &Context<'_>, s: &StepSummary, out: &mut Vec<Finding>) {
    if !(s.flags.answer || s.action == Action::Terminate) || s.action == Action::Plan {
        return;
    }
    // Ends while the last tool output before it reports an error.
    let last_tool = (0..s.index).rev().find(|&j| ctx.hierarchy.steps[j].kind == StepKind::ToolResult);
    if let Some(j) = last_tool.filter(|&j| ctx.hierarchy.steps[j].flags.failed_execution) {
        out.push(finding(Signal::PrematureAnswer, weights::PREMATURE, format!("answers although step {j} failed")));
        return;
    }
    if s.flags.claims_verified
        && s.flags.answer
        && !s
            .uses
            .iter()
            .any(|(_, o)| matches!(o, Origin::Step(j) if ctx.hierarchy.steps[*j].kind == StepKind::ToolResult))
    {
        out.push(finding(
            Signal::PrematureAnswer,
            weights::PREMATURE,
            "claims a verified answer with no tool output behind it".into(),
        ));
    }
}

fn repeated(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let s = &ctx.trajectory.steps[i];
    if s.content.len() < 40 || matches!(ctx.hierarchy.steps[i].action, Action::Coordinate | Action::Terminate) {
        return;
    }
    let words = words_of(ctx, i);
    for j in (0..i).rev().take(12) {
        let o = &ctx.trajectory.steps[j];
        if o.agent != s.agent || o.kind != s.kind {
            continue;
        }
        let failed = result_of(ctx, j).is_some_and(|r| {
            ctx.hierarchy.steps[r].flags.failed_execution || ctx.hierarchy.steps[r].flags.empty_result
        });
        if failed && jaccard(words, words_of(ctx, j)) > 0.8 {
            out.push(finding(
                Signal::RepeatedFailure,
                weights::REPEATED,
                format!("repeats step {j}, which already failed"),
            ));
            return;
        }
    }
}

/// Lower-case word set of a text.
pub fn word_set(s: &str) -> HashSet<String> {
    s.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 2).map(str::to_lowercase).collect()
}

/// Jaccard similarity of two word sets, 0..=1.
pub fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f32 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    a.intersection(b).count() as f32 / a.union(b).count() as f32
}

/// The step holding the final output: the last step with substance that is not a tool output,
/// a ledger update or a bare `TERMINATE`.
pub fn final_step(ctx: &Context<'_>) -> Option<usize> {
    *ctx.facts.final_step.get_or_init(|| compute_final_step(ctx))
}

/// The lower-case content of step `i` (computed once per hierarchy).
fn lower_of<'a>(ctx: &Context<'a>, i: usize) -> &'a str {
    &ctx.facts.lower.get_or_init(|| ctx.trajectory.steps.iter().map(|s| s.content.to_lowercase()).collect())[i]
}

fn words_of<'a>(ctx: &Context<'a>, i: usize) -> &'a HashSet<String> {
    &ctx.facts.word_sets.get_or_init(|| ctx.trajectory.steps.iter().map(|s| word_set(&s.content)).collect())[i]
}

fn compute_final_step(ctx: &Context<'_>) -> Option<usize> {
    ctx.hierarchy
        .steps
        .iter()
        .rev()
        .find(|s| {
            !matches!(s.action, Action::Terminate | Action::Coordinate | Action::ToolOutput)
                && ctx.trajectory.steps[s.index].content.trim().len() > 15
        })
        .or_else(|| ctx.hierarchy.steps.last())
        .map(|s| s.index)
}

/// The prior's default when nothing points anywhere: the first step that acts on the task (not a
/// request, plan, coordination, delegation, tool output or termination): by temporal precedence
/// the earliest step that could have gone wrong. Steps in `excluded` (the user's exclusions) are never named.
pub fn default_step(ctx: &Context<'_>, excluded: &[usize]) -> Option<usize> {
    let acts = |s: &&StepSummary| {
        !excluded.contains(&s.index)
            && !matches!(
                s.action,
                Action::Request
                    | Action::Plan
                    | Action::Coordinate
                    | Action::Delegate
                    | Action::ToolOutput
                    | Action::Terminate
            )
            && ctx.trajectory.steps[s.index].content.trim().len() > 15
            && !is_outside_agent(&ctx.trajectory.steps[s.index].agent)
    };
    let steps = &ctx.hierarchy.steps;
    steps.iter().find(acts).map(|s| s.index)
}

/// Whether an agent name stands for someone outside the agent system (the user, the system).
fn is_outside_agent(agent: &str) -> bool {
    matches!(agent.to_ascii_lowercase().as_str(), "user" | "human" | "system" | "developer")
}

/// The items of the observed output: the final-answer text split at commas, semicolons and line
/// breaks; without one, the numbers of a final step that states an answer. Lower case.
pub fn output_items(ctx: &Context<'_>) -> Vec<String> {
    let text = match &ctx.trajectory.observed_output {
        Some(o) => o.clone(),
        None => match final_step(ctx) {
            Some(i) if ctx.hierarchy.steps[i].flags.answer || ctx.hierarchy.steps[i].action == Action::Discuss => {
                let content = &ctx.trajectory.steps[i].content;
                return ctx.hierarchy.evidence[i]
                    .iter()
                    .filter(|e| e.kind == EvidenceKind::Number && !evidence::is_trivial_number(&e.key))
                    .map(|e| e.text(content).to_lowercase())
                    .collect();
            }
            _ => return Vec::new(),
        },
    };
    text.split([',', ';', '\n'])
        .map(|s| s.trim().trim_matches(['.', '"', '\'']).to_lowercase())
        .filter(|s| s.chars().count() >= 3)
        .take(8)
        .collect()
}

/// Whether an output item agrees with the expected output (whole-word containment either way, or
/// equal numbers). Values are matched as values: "10" does not agree with "#W1023410", whose
/// digits only happen to contain it.
fn agrees(item: &str, expected: &str) -> bool {
    let exp = expected.trim().to_lowercase();
    if contains_word(&exp, item) || contains_word(item, &exp) {
        return true;
    }
    let n = evidence::normalize_number(item);
    !n.is_empty() && evidence::extract_text(&exp).iter().any(|e| e.kind == EvidenceKind::Number && e.key == n)
}

/// Whether `needle` occurs in `hay` with no letter or digit right before or after it.
fn contains_word(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(i, m)| {
        let before = hay[..i].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = hay[i + m.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        before && after
    })
}

/// `item` as step `j` writes it: a number's own text there, else `item`.
fn as_written(ctx: &Context<'_>, j: usize, item: &str) -> String {
    let n = evidence::normalize_number(item);
    let content = &ctx.trajectory.steps[j].content;
    ctx.hierarchy.evidence[j]
        .iter()
        .find(|e| !n.is_empty() && e.kind == EvidenceKind::Number && e.key == n)
        .map_or_else(|| item.to_string(), |e| e.text(content).trim().to_string())
}

/// The first step whose content states `item` (numbers compared normalised).
fn first_statement(ctx: &Context<'_>, item: &str) -> Option<usize> {
    let n = evidence::normalize_number(item);
    (0..ctx.trajectory.steps.len()).find(|&j| {
        if !n.is_empty() {
            ctx.hierarchy.evidence[j].iter().any(|e| e.kind == EvidenceKind::Number && e.key == n)
        } else {
            contains_word(lower_of(ctx, j), item)
        }
    })
}

/// The steps where the wrong items of the output originate (needs `o*`), with the item.
pub fn wrong_value_origins(ctx: &Context<'_>) -> Vec<(usize, String)> {
    ctx.facts.wrong_value_origins.get(ctx.ground_truth).get_or_init(|| compute_origins(ctx)).clone()
}

fn compute_origins(ctx: &Context<'_>) -> Vec<(usize, String)> {
    let Some(expected) = ctx.expected() else { return Vec::new() };
    let mut out = Vec::new();
    for item in output_items(ctx) {
        if agrees(&item, expected) {
            continue;
        }
        if let Some(first) = first_statement(ctx, &item) {
            let origin = adopter(ctx, &item, first);
            if !out.iter().any(|(s, _)| *s == origin) {
                out.push((origin, item));
            }
        }
    }
    out
}

fn wrong_value(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let Some(expected) = ctx.expected() else { return };
    if let Some((_, item)) = wrong_value_origins(ctx).into_iter().find(|(s, _)| *s == i) {
        // Say where the value is first stated: here, earlier (adopted here), or in the output
        // of what this step ran.
        let first = first_statement(ctx, &item);
        let place = match first {
            Some(f) if f < i => format!("stated first at step {f}, is adopted here"),
            Some(f) if f > i => format!("first appears at step {f}, in the output of this step"),
            _ => "first appears here".to_string(),
        };
        // A number as the step writes it ("$445,000" for the output's 445000), so that a search
        // for the quoted text finds it.
        let written = first.map_or_else(|| item.clone(), |f| as_written(ctx, f, &item));
        let shown = if written == item { format!("\"{item}\"") } else { format!("\"{item}\" (written \"{written}\")") };
        out.push(finding(
            Signal::WrongValueOrigin,
            weights::WRONG_VALUE,
            format!("the output's {shown} {place}; expected {}", text::clip(expected.trim(), 60)),
        ));
        return;
    }
    // The expected value was available in an output and the next agent step lost it.
    let exp_low = expected.trim().to_lowercase();
    if exp_low.len() < 2 || output_items(ctx).iter().any(|k| agrees(k, expected)) {
        return;
    }
    // The first output showing the expected value and its next reader, found once per hierarchy.
    let seen = *ctx.facts.expected_seen.get(ctx.ground_truth).get_or_init(|| {
        let first_hit = (0..ctx.trajectory.steps.len()).find(|&j| {
            matches!(ctx.hierarchy.steps[j].action, Action::ToolOutput | Action::Search | Action::ReadFile)
                && contains_word(lower_of(ctx, j), &exp_low)
        });
        first_hit.map(|j| {
            let next_reader = (j + 1..ctx.trajectory.steps.len()).find(|&k| {
                !matches!(ctx.hierarchy.steps[k].action, Action::ToolOutput | Action::Coordinate)
                    && ctx.trajectory.steps[k].kind != StepKind::ToolResult
            });
            (j, next_reader)
        })
    });
    if let Some((j, _)) = seen.filter(|(j, next_reader)| *j < i && *next_reader == Some(i)) {
        out.push(finding(
            Signal::IgnoredToolError,
            weights::MISREAD,
            format!(
                "step {j} shows the expected {}, but this step does not carry it on",
                text::clip(expected.trim(), 60)
            ),
        ));
    }
}

/// The step that made a value first seen at `o` a fact: a value guessed in a plan becomes one at
/// the first later step that states it outside a plan; a tool output's value is its producer's.
fn adopter(ctx: &Context<'_>, item: &str, o: usize) -> usize {
    if ctx.hierarchy.steps[o].action != Action::Plan {
        return producer(ctx, o);
    }
    let later = (o + 1..ctx.trajectory.steps.len())
        .find(|&j| ctx.hierarchy.steps[j].action != Action::Plan && contains_word(lower_of(ctx, j), item))
        .unwrap_or(o);
    producer(ctx, later)
}

/// The step responsible for a value first seen at `o`: for a tool output, the step that made the
/// call or wrote the code; otherwise `o` itself.
pub fn producer(ctx: &Context<'_>, o: usize) -> usize {
    if ctx.trajectory.steps[o].kind != StepKind::ToolResult {
        return o;
    }
    links(ctx).produced_by.get(o).copied().flatten().unwrap_or(o)
}

fn answer_type(ctx: &Context<'_>, s: &StepSummary, out: &mut Vec<Finding>) {
    let Some(p) = ctx.prior else { return };
    if Some(s.index) != final_step(ctx) || !s.flags.answer {
        return;
    }
    let content = &ctx.trajectory.steps[s.index].content;
    let has_number = ctx.hierarchy.evidence[s.index].iter().any(|e| e.kind == EvidenceKind::Number);
    if p.answer_type == Some(AnswerType::Number) && !has_number {
        out.push(finding(
            Signal::PriorDeviation,
            weights::ANSWER_TYPE,
            format!("the task asks for a number; the answer gives none: {}", text::first_line(content, 80)),
        ));
    }
}

/// Labels the edge from candidate `from` to step `to` (FALAT stage 2).
pub fn label(ctx: &Context<'_>, from: usize, to: usize) -> Transition {
    let Some(g) = ctx.graph else {
        return Transition::NoInfluence;
    };
    let direct = g.find(from, to).map(|e| g.graph[e].clone());
    let via_child =
        g.outgoing(from).into_iter().any(|(c, e)| matches!(e.kind, EdgeKind::Protocol(_)) && g.find(c, to).is_some());
    let Some(e) = direct.or_else(|| {
        via_child.then(|| crate::graph::DepEdge {
            kind: EdgeKind::Protocol(LinkKind::ToolResult),
            shared: Vec::new(),
            weight: 1.0,
            label: None,
        })
    }) else {
        // The pipeline asks about the final step for a candidate whose output no step uses:
        // a dead end, unless the candidate steers the run (a deviation from π, a delegation, a
        // premature answer) and so reaches the output without passing values.
        if Some(to) == final_step(ctx) && g.outgoing(from).is_empty() {
            let steers = recall(ctx, from).is_some_and(|f| {
                f.iter().any(|f| {
                    matches!(f.signal, Signal::PriorDeviation | Signal::WrongDelegation | Signal::PrematureAnswer)
                })
            });
            return if steers { Transition::FollowUp } else { Transition::DeadEnd };
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
    if to != from
        && recall(ctx, to).is_some_and(|f| {
            f.iter().any(|f| matches!(f.signal, Signal::UnsourcedValue | Signal::Assumption | Signal::PriorDeviation))
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
        (false, Some(u)) => {
            Criterion { passed: false, evidence: format!("it only inherits what candidate step {u} introduced") }
        }
        (false, None) => Criterion { passed: true, evidence: "no earlier candidate reaches it".into() },
    }
}

/// Signals by which a step introduces a deviation of its own (rather than passing one on).
pub fn is_own_signal(s: Signal) -> bool {
    matches!(
        s,
        Signal::UnsourcedValue
            | Signal::Assumption
            | Signal::FailedAction
            | Signal::PriorDeviation
            | Signal::WrongValueOrigin
            | Signal::WrongDelegation
            | Signal::UserMarked
            | Signal::Ranked
    )
}

fn sufficiency(ctx: &Context<'_>, step: usize, findings: &[Finding]) -> Criterion {
    if findings.iter().any(|f| f.signal == Signal::WrongValueOrigin) {
        return Criterion { passed: true, evidence: "the wrong value of the final output traces back to it".into() };
    }
    if let Some((o, item)) = reached_origin(ctx, step) {
        return Criterion {
            passed: true,
            evidence: format!("the output's wrong \"{item}\" surfaces at step {o}, which depends on it"),
        };
    }
    let Some(end) = final_step(ctx) else {
        return Criterion { passed: false, evidence: "no final output".into() };
    };
    let reaches = step >= end || reaches_final(ctx, step);
    if reaches {
        return Criterion { passed: true, evidence: format!("its effect reaches the final output at step {end}") };
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
    });
    if process {
        return Criterion {
            passed: true,
            evidence: "it changes the course of the run, which every later step follows".into(),
        };
    }
    Criterion { passed: false, evidence: format!("no dependency path leads from it to the final output at step {end}") }
}

/// The blind comparison of a window (FALAT §4): the strongest step of the window is the first
/// guess (a tool output that only shows an error hands it to the step that produced it); an
/// earlier step of the window with the same kind of error that it builds on, nearly as strong,
/// generates it instead. Without any finding in the window the first step is named, weakly.
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
            reason: format!("no step of {}..{} shows an error", window.start, window.end),
        };
    };
    let mut reason = format!("step {decisive} shows the strongest error of the window");
    if ctx.trajectory.steps[decisive].kind == StepKind::ToolResult && !is_agent_output(ctx, decisive) {
        let p = producer(ctx, decisive);
        if p != decisive && window.contains(&p) {
            reason = format!("step {decisive} is a tool output that only shows the error; step {p} produced it");
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
                reason = format!("step {j} already shows the same kind of error and step {decisive} builds on it");
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
mod value_tests {
    use super::*;

    #[test]
    fn values_do_not_match_digits_inside_ids() {
        assert!(!agrees("order #w1023410 is cancelled", "10"));
        assert!(!agrees("item 9612497925", "10"));
        assert!(agrees("there are 10 options", "10"));
        assert!(agrees("10.0", "10"));
        assert!(agrees("paris", "Paris"));
    }
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
