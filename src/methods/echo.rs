//! ECHO (the paper "Where Did It All Go Wrong? A Hierarchical Look into Multi-Agent Error
//! Attribution"): hierarchical context, a panel of analysts with distinct perspectives judging
//! agent and step in separate analyses, and confidence-weighted consensus voting.
//!
//! 1. **Context** (§3.1, A.3; [`levels`], [`render`], [`render_hierarchical`]): for an agent,
//!    every step's distance to the nearest of its turns sets its level: L1 (distance 0-1) in full,
//!    L2 (2-3) key decisions, L3 (4 and more) one-line summaries, L4 the milestones of the rest of
//!    the trace (plans, answers, errors, checks, the end). Every analyst sees the conversation
//!    summary (each step at L3, milestones at L4, original step numbers, agents and roles) and each
//!    agent's L1 and L2 context (A.5). With [`Component::Hierarchy`] off, the analysts see the
//!    fixed ±1-turn window of A.2 instead ([`render_fixed_window`]).
//! 2. **Panel** (§3.2, [`draw_panel`]): `k` distinct perspectives drawn with the seed.
//! 3. **Decoupled analysis** (A.1): each analyst answers the agent question and, separately and
//!    independently, the step question (a step analyst is not told what the agent analysts
//!    found). Each analysis gives a conclusion type, agents, a step, a confidence, reasoning,
//!    per-agent likelihoods with evidence and alternative hypotheses (A.5). With
//!    [`Component::Decoupling`] off, one unified analysis names both.
//! 4. **Voting** ([`vote`], §3.3 and A.7): analyses under [`MIN_CONFIDENCE`] are dropped;
//!    conclusion types (single-agent, multi-agent, no clear fault) are weighed by summed
//!    confidence; the winning type's analyses vote for agents and steps with their confidence;
//!    step votes outside the trajectory are discarded; agent evaluations and alternatives are
//!    aggregated; review is flagged when the confidence spread exceeds [`MAX_SPREAD`] or more than
//!    two conclusion types got votes. The agent comes from the agent vote and the step from the
//!    step vote, as the paper scores them; when they disagree (the step's actor is another agent)
//!    the diagnosis says so. With [`Component::Consensus`] off, one general analyst decides.

use super::ablation::Component;
use super::{Method, MethodOptions, Session, SplitMix64, new_diagnosis, no_steps, view};
use crate::diagnosis::details::Votes;
use crate::diagnosis::{Detail, Diagnosis, Part, Prose, Role, StageName};
use crate::hierarchy::{Action, Hierarchy};
use crate::judge::attribution::{Alternative, Analysis, Conclusion, Evaluation, Perspective, VoteTarget};
use crate::judge::{Answer, Context, Judge, Question};
use crate::model::Trajectory;
use crate::substrate::Substrate;
use crate::substrate::signals::default_step;
use crate::text;

/// Analyses under this confidence are dropped before voting (ECHO A.7).
pub const MIN_CONFIDENCE: f32 = crate::diagnosis::details::ECHO_MIN_CONFIDENCE;
/// A confidence spread above this flags the consensus for review (ECHO A.7).
pub const MAX_SPREAD: f32 = 0.5;
/// Steps at most this far from an agent's turn are L1 (full).
pub const L1_DISTANCE: usize = 1;
/// Steps at most this far are L2 (key decisions); farther ones are L3 summaries, or L4 when they
/// are milestones.
pub const L2_DISTANCE: usize = 3;
/// L1 steps are shown in full up to this many characters (a token budget for very long tool
/// outputs; the cut is marked). A departure from the paper, which shows L1 turns whole.
pub const L1_MAX_CHARS: usize = 3000;

/// The four context levels of one agent: 0-based steps per level, in step order. Every step of
/// the trajectory is at exactly one level.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Levels {
    /// The agent the context is built for.
    pub agent: String,
    /// Its turns and their adjacent steps, shown in full.
    pub l1: Vec<usize>,
    /// Steps 2-3 away, shown as key decisions.
    pub l2: Vec<usize>,
    /// Steps 4 or more away that are no milestone, shown as one-line summaries.
    pub l3: Vec<usize>,
    /// Milestones 4 or more steps away.
    pub l4: Vec<usize>,
}

/// Whether a step is a milestone: the first step, a plan, an answer, a check, the end, or a step
/// with an error.
pub fn is_milestone(h: &Hierarchy, i: usize) -> bool {
    let s = &h.steps[i];
    i == 0
        || matches!(s.action, Action::Plan | Action::Answer | Action::Verify | Action::Terminate)
        || s.flags.error
        || s.flags.failed_execution
        || s.flags.answer
}

/// The levels of `agent` (compared case-insensitively); an agent without turns has everything
/// at L3/L4.
pub fn levels(t: &Trajectory, h: &Hierarchy, agent: &str) -> Levels {
    let mut turns: Vec<usize> =
        t.steps.iter().filter(|s| s.agent.eq_ignore_ascii_case(agent)).map(|s| s.index).collect();
    turns.sort_unstable();
    let mut out = Levels { agent: agent.to_string(), ..Levels::default() };
    for i in 0..t.steps.len() {
        // The nearest turn is the first at or after `i` or the one before it.
        let k = turns.partition_point(|&j| j < i);
        let d = [k.checked_sub(1), Some(k)]
            .into_iter()
            .flatten()
            .filter_map(|k| turns.get(k))
            .map(|&j| i.abs_diff(j))
            .min()
            .unwrap_or(usize::MAX);
        match d {
            d if d <= L1_DISTANCE => out.l1.push(i),
            d if d <= L2_DISTANCE => out.l2.push(i),
            _ if is_milestone(h, i) => out.l4.push(i),
            _ => out.l3.push(i),
        }
    }
    out
}

/// The text of one agent's hierarchical context, in step order with each step's level marked.
pub fn render(t: &Trajectory, h: &Hierarchy, l: &Levels) -> String {
    let mut rows: Vec<(usize, String)> = Vec::new();
    rows.extend(l.l1.iter().map(|&i| (i, format!("L1 {}", view::capped(&t.steps[i], L1_MAX_CHARS)))));
    rows.extend(l.l2.iter().map(|&i| (i, format!("L2 {}", view::decision(t, h, i)))));
    rows.extend(l.l3.iter().map(|&i| (i, format!("L3 {}", view::brief(t, h, i, 100)))));
    rows.extend(l.l4.iter().map(|&i| (i, format!("L4 milestone {}", view::brief(t, h, i, 80)))));
    rows.sort_by_key(|(i, _)| *i);
    let body: Vec<String> = rows.into_iter().map(|(_, r)| r).collect();
    format!(
        "Hierarchical context for {} (L1 full, L2 key decisions, L3 summaries, L4 milestones):\n{}",
        l.agent,
        body.join("\n")
    )
}

/// The analysts' context (ECHO A.5): the conversation summary (every step as one line, the L3
/// form, milestones marked `L4`), then for each agent its L1 steps in full and its L2 steps as
/// key decisions. Farther steps are in the summary, so nothing is repeated at a coarser level.
pub fn render_hierarchical(t: &Trajectory, h: &Hierarchy, agents: &[String]) -> String {
    let summary: Vec<String> = (0..t.steps.len())
        .map(|i| {
            let mark = if is_milestone(h, i) { "L4 " } else { "L3 " };
            format!("{mark}{}", view::brief(t, h, i, 100))
        })
        .collect();
    let mut out = format!(
        "Conversation summary (every step; L3 summary, L4 milestone):\n{}\n\nHierarchical context per agent (L1 its turns and the adjacent steps in full, L2 key decisions 2-3 steps away):",
        summary.join("\n")
    );
    for a in agents {
        let l = levels(t, h, a);
        let mut rows: Vec<(usize, String)> = Vec::new();
        rows.extend(l.l1.iter().map(|&i| (i, format!("L1 {}", view::capped(&t.steps[i], L1_MAX_CHARS)))));
        rows.extend(l.l2.iter().map(|&i| (i, format!("L2 {}", view::decision(t, h, i)))));
        rows.sort_by_key(|(i, _)| *i);
        let body: Vec<String> = rows.into_iter().map(|(_, r)| r).collect();
        out.push_str(&format!("\n\n== {a} ==\n{}", body.join("\n")));
    }
    out
}

/// The fixed-window context of ECHO A.2 (the baseline the hierarchy is compared with): every step
/// in full with the previous and the next turn as one line each (`None` at the ends).
pub fn render_fixed_window(t: &Trajectory, h: &Hierarchy) -> String {
    let n = t.steps.len();
    let line = |j: Option<usize>| j.map_or_else(|| "None".to_string(), |j| view::brief(t, h, j, 100));
    let rows: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "previous: {}\ncurrent: {}\nnext: {}",
                line(i.checked_sub(1)),
                view::capped(&t.steps[i], L1_MAX_CHARS),
                line((i + 1 < n).then_some(i + 1))
            )
        })
        .collect();
    format!("Fixed-window context (each turn with the previous and the next):\n{}", rows.join("\n\n"))
}

/// ECHO's options that depart from the paper, for reports.
pub fn departures() -> Vec<String> {
    vec![
        format!("L1 turns cut at {L1_MAX_CHARS} characters (the paper shows them whole)"),
        "panel drawn with a seed from the six perspectives (the paper drew three at random)".into(),
    ]
}

/// `k` distinct perspectives (clamped to 1..=6) drawn from the six with the seed mixed with the
/// trajectory id (a partial Fisher-Yates shuffle of [`Perspective::ALL`]).
pub fn draw_panel(seed: u64, id: &str, k: usize) -> Vec<Perspective> {
    let mut rng = SplitMix64::for_trajectory(seed, id);
    let mut all = Perspective::ALL.to_vec();
    let k = k.clamp(1, all.len());
    for i in 0..k {
        let j = i + rng.below(all.len() - i);
        all.swap(i, j);
    }
    all.truncate(k);
    all
}

/// The outcome of one consensus vote.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Consensus {
    /// The winning conclusion type, if any analysis was kept.
    pub conclusion: Option<Conclusion>,
    /// The agent with the most weighted votes among the winning type's analyses.
    pub agent: Option<String>,
    /// The step with the most weighted votes among them, 0-based.
    pub step: Option<usize>,
    /// The votes themselves (per type, agent and step), what was dropped, the spread and
    /// whether the disagreement calls for review: the data the report carries.
    pub votes: Votes,
    /// The synthesised reasoning (ECHO A.7).
    pub reasoning: String,
    /// Agent evaluations aggregated over the kept analyses: mean likelihood (an analysis that
    /// does not evaluate an agent counts 0 for it) and the evidence of the highest likelihood,
    /// most likely first.
    pub evaluations: Vec<Evaluation>,
    /// Alternative hypotheses of the kept analyses, merged by agent and step, each weighted by
    /// the sum of confidence × likelihood, strongest first; the winning attribution is left out.
    pub alternatives: Vec<Alternative>,
}

/// Confidence-weighted consensus voting over analyses of a trajectory of `steps` steps (ECHO
/// A.7). Ties: conclusion types in [`Conclusion::ALL`] order, agents by their place in
/// `agent_order` (first appearance), steps by the earlier step.
pub fn vote(analyses: &[Analysis], steps: usize, agent_order: &[String]) -> Consensus {
    let kept: Vec<&Analysis> = analyses.iter().filter(|a| a.confidence >= MIN_CONFIDENCE).collect();
    let mut c =
        Consensus { votes: Votes { dropped: analyses.len() - kept.len(), ..Votes::default() }, ..Consensus::default() };
    for t in Conclusion::ALL {
        let sum: f32 = kept.iter().filter(|a| a.conclusion == t).map(|a| a.confidence).sum();
        if kept.iter().any(|a| a.conclusion == t) {
            c.votes.types.push((t, sum));
        }
    }
    c.votes.spread = spread(&kept);
    c.votes.review = c.votes.spread > MAX_SPREAD || c.votes.types.len() > 2;
    c.conclusion = winning_type(&c.votes.types);
    let Some(winner) = c.conclusion else { return c };
    let support: Vec<&Analysis> = kept.into_iter().filter(|a| a.conclusion == winner).collect();
    c.votes.agents = agent_votes(&support, agent_order);
    c.agent = c.votes.agents.first().map(|(a, _)| a.clone());
    c.votes.out_of_range = support.iter().filter(|a| a.step.is_some_and(|s| s >= steps)).count();
    c.votes.steps = step_votes(&support, steps);
    c.step = c.votes.steps.first().map(|(s, _)| *s);
    c.reasoning = synthesise(winner, &support);
    c.evaluations = aggregate_evaluations(analyses, agent_order);
    c.alternatives = aggregate_alternatives(analyses, c.agent.as_deref(), c.step);
    c
}

fn aggregate_evaluations(analyses: &[Analysis], order: &[String]) -> Vec<Evaluation> {
    let kept: Vec<&Analysis> = analyses.iter().filter(|a| a.confidence >= MIN_CONFIDENCE).collect();
    let mut out: Vec<Evaluation> = Vec::new();
    for e in kept.iter().flat_map(|a| &a.evaluations) {
        match out.iter_mut().find(|x| x.agent.eq_ignore_ascii_case(&e.agent)) {
            Some(x) => {
                if e.likelihood > x.likelihood && !e.evidence.is_empty() {
                    x.evidence = e.evidence.clone();
                }
                x.likelihood += e.likelihood;
            }
            None => out.push(e.clone()),
        }
    }
    // Evidence goes with the highest single likelihood; the sum becomes the mean.
    for x in &mut out {
        let best = kept
            .iter()
            .flat_map(|a| &a.evaluations)
            .filter(|e| e.agent.eq_ignore_ascii_case(&x.agent) && !e.evidence.is_empty())
            .max_by(|a, b| a.likelihood.total_cmp(&b.likelihood));
        if let Some(b) = best {
            x.evidence = b.evidence.clone();
        }
        x.likelihood = ((x.likelihood / kept.len().max(1) as f32) * 100.0).round() / 100.0;
    }
    let rank = |n: &str| order.iter().position(|o| o.eq_ignore_ascii_case(n)).unwrap_or(usize::MAX);
    out.sort_by(|a, b| b.likelihood.total_cmp(&a.likelihood).then(rank(&a.agent).cmp(&rank(&b.agent))));
    out
}

fn aggregate_alternatives(analyses: &[Analysis], agent: Option<&str>, step: Option<usize>) -> Vec<Alternative> {
    let mut out: Vec<Alternative> = Vec::new();
    for a in analyses.iter().filter(|a| a.confidence >= MIN_CONFIDENCE) {
        for alt in &a.alternatives {
            let winner = step.is_some() && alt.step == step
                || step.is_none() && agent.is_some_and(|w| w.eq_ignore_ascii_case(&alt.agent));
            if winner {
                continue;
            }
            let w = a.confidence * alt.likelihood;
            match out.iter_mut().find(|x| x.agent.eq_ignore_ascii_case(&alt.agent) && x.step == alt.step) {
                Some(x) => x.likelihood += w,
                None => out.push(Alternative { likelihood: w, ..alt.clone() }),
            }
        }
    }
    for x in &mut out {
        x.likelihood = (x.likelihood * 100.0).round() / 100.0;
    }
    out.sort_by(|a, b| b.likelihood.total_cmp(&a.likelihood).then(a.step.cmp(&b.step)));
    out
}

/// Highest minus lowest confidence (0 without analyses).
fn spread(kept: &[&Analysis]) -> f32 {
    let confs = kept.iter().map(|a| a.confidence);
    if kept.is_empty() { 0.0 } else { confs.clone().fold(f32::MIN, f32::max) - confs.fold(f32::MAX, f32::min) }
}

/// The type with the most summed confidence; the first maximum wins (the earlier type in
/// [`Conclusion::ALL`] on a tie).
fn winning_type(votes: &[(Conclusion, f32)]) -> Option<Conclusion> {
    votes
        .iter()
        .fold(None, |best: Option<(Conclusion, f32)>, &(t, v)| match best {
            Some((_, b)) if b >= v => best,
            _ => Some((t, v)),
        })
        .map(|(t, _)| t)
}

fn agent_votes(support: &[&Analysis], order: &[String]) -> Vec<(String, f32)> {
    let mut votes: Vec<(String, f32)> = Vec::new();
    for a in support {
        for name in &a.agents {
            match votes.iter_mut().find(|(v, _)| v.eq_ignore_ascii_case(name)) {
                Some(v) => v.1 += a.confidence,
                None => votes.push((name.clone(), a.confidence)),
            }
        }
    }
    let rank = |n: &str| order.iter().position(|o| o.eq_ignore_ascii_case(n)).unwrap_or(usize::MAX);
    votes.sort_by(|a, b| b.1.total_cmp(&a.1).then(rank(&a.0).cmp(&rank(&b.0))));
    votes
}

fn step_votes(support: &[&Analysis], steps: usize) -> Vec<(usize, f32)> {
    let mut votes: Vec<(usize, f32)> = Vec::new();
    for a in support {
        if let Some(s) = a.step.filter(|s| *s < steps) {
            match votes.iter_mut().find(|(v, _)| *v == s) {
                Some(v) => v.1 += a.confidence,
                None => votes.push((s, a.confidence)),
            }
        }
    }
    votes.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    votes
}

/// ECHO A.7: the analyst count and average confidence, the first reasoning (clipped to 200
/// characters when others support it too) and a note of the others.
fn synthesise(winner: Conclusion, support: &[&Analysis]) -> String {
    let n = support.len();
    let avg = support.iter().map(|a| a.confidence).sum::<f32>() / n.max(1) as f32;
    let first = support.first().map(|a| a.reasoning.as_str()).unwrap_or_default();
    let first = if n > 1 { text::clip(first, 200) } else { first.to_string() };
    let others = if n > 1 { format!(" ({} other analyses support it)", n - 1) } else { String::new() };
    format!("{n} analyst(s) concluded {} with average confidence {avg:.2}: {first}{others}", winner.as_str())
}

/// Runs ECHO on a trajectory.
pub fn run(t: &Trajectory, sub: &Substrate, judge: &dyn Judge, opts: &MethodOptions) -> Diagnosis {
    if t.steps.is_empty() {
        return no_steps(Method::Echo, t, judge, opts);
    }
    let h = &sub.hierarchy;
    let ctx = Context::of(t, sub, opts.ground_truth).bare();
    let order = agent_order(t);
    let off = |c| opts.ablations.off(c);
    let panel =
        if off(Component::Consensus) { vec![Perspective::General] } else { draw_panel(opts.seed, &t.id, opts.panel) };
    let mut session = super::session(judge, opts);
    let context = session.stage(StageName::EchoContext, |_| {
        if off(Component::Hierarchy) { render_fixed_window(t, h) } else { render_hierarchical(t, h, &order) }
    });
    let (agent_analyses, step_analyses) = if off(Component::Decoupling) {
        let both = session.stage(StageName::EchoAnalysts, |s| ask_panel(s, &ctx, &panel, VoteTarget::Both, &context));
        (both.clone(), both)
    } else {
        let agents =
            session.stage(StageName::EchoAgentAnalysts, |s| ask_panel(s, &ctx, &panel, VoteTarget::Agent, &context));
        let steps =
            session.stage(StageName::EchoStepAnalysts, |s| ask_panel(s, &ctx, &panel, VoteTarget::Step, &context));
        (agents, steps)
    };
    let by_agent = vote(&agent_analyses, t.steps.len(), &order);
    let by_step = vote(&step_analyses, t.steps.len(), &order);
    let agent = by_agent
        .agent
        .clone()
        .or_else(|| by_step.step.map(|s| t.steps[s].agent.clone()))
        .unwrap_or_else(|| fallback_agent(&ctx));
    let turn = first_turn(&ctx, &agent);
    let step = by_step.step.or(turn).unwrap_or_else(|| default_step(&ctx, &[]).unwrap_or(0));
    let mut d = new_diagnosis(Method::Echo, t, judge, opts, Some(step));
    if by_step.step.is_none() {
        let which =
            if turn == Some(step) { "the voted agent's first turn" } else { "the first step acting on the task" };
        d.fallback =
            Some(crate::prose!["the step vote settled on no step; step ", Part::Step(step), format!(" is {which}")]);
    } else if by_step.conclusion == Some(Conclusion::NoClearFault) {
        // The analysts still put a step forward (ECHO A.7 keeps it), but as a guess, not a fault.
        d.fallback = Some(crate::prose![
            "the step analysts concluded that no agent is clearly at fault; step ",
            Part::Step(step),
            " is the step their analyses put forward as the most likely"
        ]);
    }
    // Like the other methods' fallbacks, said among the warnings too.
    d.warnings.extend(d.fallback.as_ref().map(Prose::to_string));
    // ECHO scores the agent and the step of separate analyses: the agent is the agent vote's.
    d.agent = Some(agent.clone());
    explain(&mut d, &by_agent, &by_step, &agent);
    if !t.steps[step].agent.eq_ignore_ascii_case(&agent) {
        d.warnings.push(format!(
            "the agent analysts name {agent} while step {step} was taken by {}: agent and step come from separate analyses",
            t.steps[step].agent
        ));
    }
    d.roles = vec![(step, Role::RootCause)];
    d.details.push(Detail::Panel(panel.clone()));
    d.details.push(Detail::Analyses(VoteTarget::Agent, agent_analyses.clone()));
    d.details.push(Detail::Consensus(VoteTarget::Agent, by_agent.votes.clone()));
    if !off(Component::Decoupling) {
        d.details.push(Detail::Analyses(VoteTarget::Step, step_analyses.clone()));
        d.details.push(Detail::Consensus(VoteTarget::Step, by_step.votes.clone()));
    }
    d.details.push(Detail::AgentEvidence(by_agent.evaluations.clone()));
    d.details.push(Detail::Alternatives(alternatives(&by_agent, &by_step)));
    session.finish(&mut d);
    d
}

fn ask_panel(
    s: &mut Session<'_>,
    ctx: &Context<'_>,
    panel: &[Perspective],
    target: VoteTarget,
    context: &str,
) -> Vec<Analysis> {
    let mut out = Vec::new();
    for &p in panel {
        let q = Question::AnalystVote { perspective: p, target, context: context.to_string() };
        match s.ask(ctx, &q) {
            Answer::Analysis(a) => out.push(a),
            _ => s.warnings.push(format!("the {p} analyst gave no usable analysis")),
        }
    }
    out
}

fn agent_order(t: &Trajectory) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in &t.steps {
        if !out.iter().any(|a| a.eq_ignore_ascii_case(&s.agent)) {
            out.push(s.agent.clone());
        }
    }
    out
}

/// Without an agent consensus: the actor of the first step acting on the task.
fn fallback_agent(ctx: &Context<'_>) -> String {
    let t = ctx.trajectory;
    t.steps[default_step(ctx, &[]).unwrap_or(0).min(t.steps.len() - 1)].agent.clone()
}

/// The agent's first turn with substance, else its first turn.
fn first_turn(ctx: &Context<'_>, agent: &str) -> Option<usize> {
    let t = ctx.trajectory;
    let turns: Vec<usize> = t.steps.iter().filter(|s| s.agent.eq_ignore_ascii_case(agent)).map(|s| s.index).collect();
    turns.iter().copied().find(|&i| t.steps[i].content.trim().len() > 15).or(turns.first().copied())
}

fn explain(d: &mut Diagnosis, by_agent: &Consensus, by_step: &Consensus, agent: &str) {
    let basis = match (&by_agent.agent, by_step.step) {
        (Some(_), Some(_)) => by_step.reasoning.clone(),
        (None, _) => format!("no agent analysis reached confidence {MIN_CONFIDENCE}; {agent} acts first on the task"),
        (Some(_), None) => {
            format!("no step analysis reached confidence {MIN_CONFIDENCE}; {agent}'s first turn is named")
        }
    };
    d.explanation.account = text::clip(&format!("Agent: {}. Step: {basis}", by_agent.reasoning), 600);
    if by_agent.votes.review || by_step.votes.review {
        d.warnings.push(format!(
            "the panel disagrees (confidence spread {:.2}/{:.2}, conclusion types {}/{}): review recommended",
            by_agent.votes.spread,
            by_step.votes.spread,
            by_agent.votes.types.len(),
            by_step.votes.types.len()
        ));
    }
}

/// Alternative hypotheses of both votes, strongest first, one per agent and step.
fn alternatives(by_agent: &Consensus, by_step: &Consensus) -> Vec<Alternative> {
    let mut all: Vec<Alternative> = by_agent.alternatives.iter().chain(&by_step.alternatives).cloned().collect();
    all.sort_by(|a, b| b.likelihood.total_cmp(&a.likelihood).then(a.step.cmp(&b.step)));
    all.dedup_by(|a, b| a.agent.eq_ignore_ascii_case(&b.agent) && a.step == b.step);
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy;
    use crate::model::Step;

    fn analysis(conclusion: Conclusion, agents: &[&str], step: Option<usize>, confidence: f32) -> Analysis {
        Analysis {
            conclusion,
            agents: agents.iter().map(|a| a.to_string()).collect(),
            step,
            confidence,
            reasoning: format!("{} {confidence}", agents.join("+")),
            evaluations: Vec::new(),
            alternatives: Vec::new(),
        }
    }

    fn order() -> Vec<String> {
        vec!["A".into(), "B".into(), "C".into()]
    }

    #[test]
    fn analyses_under_the_threshold_are_dropped() {
        let v = vote(
            &[
                analysis(Conclusion::SingleAgent, &["B"], Some(4), 0.29),
                analysis(Conclusion::SingleAgent, &["A"], Some(2), 0.3),
            ],
            10,
            &order(),
        );
        assert_eq!(v.votes.dropped, 1);
        assert_eq!((v.agent.as_deref(), v.step), (Some("A"), Some(2)));
        assert_eq!(v.votes.agents, vec![("A".to_string(), 0.3)]);
        let none = vote(&[analysis(Conclusion::SingleAgent, &["B"], Some(4), 0.1)], 10, &order());
        assert_eq!((none.conclusion, none.agent, none.step, none.votes.dropped), (None, None, None, 1));
    }

    #[test]
    fn votes_are_weighted_by_confidence() {
        let v = vote(
            &[
                analysis(Conclusion::SingleAgent, &["B"], Some(7), 0.7),
                analysis(Conclusion::SingleAgent, &["A"], Some(3), 0.4),
                analysis(Conclusion::SingleAgent, &["A"], Some(5), 0.4),
            ],
            10,
            &order(),
        );
        assert_eq!(v.votes.agents, vec![("A".to_string(), 0.8), ("B".to_string(), 0.7)]);
        assert_eq!(v.agent.as_deref(), Some("A"));
        // Step votes: 7 has 0.7, 3 and 5 have 0.4 each.
        assert_eq!(v.votes.steps, vec![(7, 0.7), (3, 0.4), (5, 0.4)]);
        assert_eq!(v.step, Some(7));
    }

    #[test]
    fn conclusion_types_are_weighed_first() {
        let v = vote(
            &[
                analysis(Conclusion::SingleAgent, &["A"], Some(1), 0.35),
                analysis(Conclusion::SingleAgent, &["A"], Some(1), 0.35),
                analysis(Conclusion::MultiAgent, &["B", "C"], Some(6), 0.75),
            ],
            10,
            &order(),
        );
        assert_eq!(v.conclusion, Some(Conclusion::MultiAgent));
        assert_eq!(v.votes.types, vec![(Conclusion::SingleAgent, 0.7), (Conclusion::MultiAgent, 0.75)]);
        // Only the winning type's analyses vote; both agents of the multi-agent one get its weight.
        assert_eq!(v.votes.agents, vec![("B".to_string(), 0.75), ("C".to_string(), 0.75)]);
        assert_eq!((v.agent.as_deref(), v.step), (Some("B"), Some(6)));
    }

    #[test]
    fn ties_go_to_the_first_agent_the_earlier_step_and_single_agent() {
        let v = vote(
            &[
                analysis(Conclusion::SingleAgent, &["C"], Some(5), 0.5),
                analysis(Conclusion::SingleAgent, &["B"], Some(3), 0.5),
                analysis(Conclusion::MultiAgent, &["A", "C"], Some(1), 1.0),
            ],
            10,
            &order(),
        );
        assert_eq!(v.conclusion, Some(Conclusion::SingleAgent), "1.0 each: single-agent wins the tie");
        assert_eq!(v.agent.as_deref(), Some("B"), "B appears before C");
        assert_eq!(v.step, Some(3), "the earlier step");
    }

    #[test]
    fn disagreement_flags_review() {
        let spread = |lo: f32, hi: f32| {
            vote(
                &[
                    analysis(Conclusion::SingleAgent, &["A"], Some(1), lo),
                    analysis(Conclusion::SingleAgent, &["A"], Some(1), hi),
                ],
                10,
                &order(),
            )
        };
        let exact = spread(0.375, 0.875);
        assert_eq!(
            (exact.votes.spread, exact.votes.review),
            (0.5, false),
            "a spread of exactly 0.5 does not exceed it"
        );
        let wide = spread(0.3125, 0.875);
        assert_eq!((wide.votes.spread, wide.votes.review), (0.5625, true));
        let three = vote(
            &[
                analysis(Conclusion::SingleAgent, &["A"], Some(1), 0.5),
                analysis(Conclusion::MultiAgent, &["A", "B"], Some(1), 0.5),
                analysis(Conclusion::NoClearFault, &["C"], None, 0.5),
            ],
            10,
            &order(),
        );
        assert_eq!((three.votes.types.len(), three.votes.spread, three.votes.review), (3, 0.0, true));
        let two = vote(
            &[
                analysis(Conclusion::SingleAgent, &["A"], Some(1), 0.5),
                analysis(Conclusion::MultiAgent, &["A", "B"], Some(1), 0.5),
            ],
            10,
            &order(),
        );
        assert!(!two.votes.review, "two conclusion types are not more than two");
    }

    #[test]
    fn step_votes_outside_the_trajectory_are_discarded() {
        let v = vote(
            &[
                analysis(Conclusion::SingleAgent, &["A"], Some(12), 0.875),
                analysis(Conclusion::SingleAgent, &["A"], Some(10), 0.75),
                analysis(Conclusion::SingleAgent, &["A"], Some(9), 0.375),
            ],
            10,
            &order(),
        );
        assert_eq!(v.votes.out_of_range, 2);
        assert_eq!(v.votes.steps, vec![(9, 0.375)]);
        assert_eq!(v.step, Some(9));
        assert_eq!(v.votes.agents, vec![("A".to_string(), 2.0)], "the agent vote still counts");
    }

    #[test]
    fn reasoning_is_synthesised() {
        let long = "x".repeat(300);
        let mut a = analysis(Conclusion::SingleAgent, &["A"], Some(1), 0.5);
        a.reasoning = long;
        let b = analysis(Conclusion::SingleAgent, &["A"], Some(1), 0.7);
        let v = vote(&[a, b], 10, &order());
        assert!(v.reasoning.starts_with("2 analyst(s) concluded single_agent with average confidence 0.60: xxx"));
        assert!(v.reasoning.ends_with("x… (1 other analyses support it)"), "{}", v.reasoning);
    }

    #[test]
    fn panels_are_distinct_seeded_draws() {
        let p = draw_panel(0, "t", 3);
        assert_eq!(p.len(), 3);
        assert_eq!(p, draw_panel(0, "t", 3));
        let mut sorted = p.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 3, "no perspective twice");
        assert_eq!(draw_panel(0, "t", 9).len(), 6);
        assert_eq!(draw_panel(0, "t", 0).len(), 1);
        let panels: Vec<Vec<Perspective>> = (0..10).map(|s| draw_panel(s, "t", 3)).collect();
        assert!(panels.iter().any(|q| *q != p), "seeds change the draw");
        let mut all = draw_panel(7, "t", 6);
        all.sort();
        assert_eq!(all, Perspective::ALL.to_vec());
    }

    fn long_trajectory() -> Trajectory {
        let mut steps: Vec<Step> = (0..16)
            .map(|i| Step {
                index: i,
                agent: if i == 5 { "A".into() } else { "B".into() },
                content: format!("Working on part {i} of the task with some detail."),
                ..Step::default()
            })
            .collect();
        steps[15].content = "TERMINATE".into();
        Trajectory { id: "levels".into(), steps, ..Trajectory::default() }
    }

    #[test]
    fn levels_follow_the_distance_to_the_agents_turns() {
        let t = long_trajectory();
        let h = hierarchy::build(&t);
        let l = levels(&t, &h, "a");
        assert_eq!(l.l1, vec![4, 5, 6]);
        assert_eq!(l.l2, vec![2, 3, 7, 8]);
        assert_eq!(l.l3, vec![1, 9, 10, 11, 12, 13, 14], "every farther step is summarised");
        assert_eq!(l.l4, vec![0, 15], "the first step and the end are milestones");
        let text = render(&t, &h, &l);
        assert!(text.contains("L1 [step 5] A (message):\nWorking on part 5"));
        assert!(text.contains("L2 [step 2] B (message) discuss: Working on part 2"));
        assert!(text.contains("L3 [step 12] B (message) discuss: Working on part 12"));
        assert!(text.contains("L3 [step 14] B (message) discuss: Working on part 14"));
        assert!(text.contains("L4 milestone [step 15] B (message) terminate: TERMINATE"));
        assert!(text.find("[step 4]") < text.find("[step 5]"), "step order");
        let busy = levels(&t, &h, "B");
        assert_eq!(busy.l1.len(), 16, "an agent acting everywhere sees everything in full");
        let all = render_hierarchical(&t, &h, &["B".to_string(), "A".to_string()]);
        assert!(all.starts_with("Conversation summary (every step; L3 summary, L4 milestone):\nL4 [step 0] B"));
        assert!(all.contains("\nL3 [step 1] B (message) discuss: Working on part 1"));
        assert!(all.contains("\n\n== A ==\nL2 [step 2] B (message) discuss: Working on part 2"));
        assert!(all.contains("L1 [step 5] A (message):\nWorking on part 5 of the task with some detail.\nL1 [step 6]"));
        assert!(all.ends_with("L2 [step 8] B (message) discuss: Working on part 8 of the task with some detail."));
        let fixed = render_fixed_window(&t, &h);
        assert!(fixed.contains("previous: None\ncurrent: [step 0] B (message):\nWorking on part 0"));
        assert!(fixed.contains("current: [step 15] B (message):\nTERMINATE\nnext: None"));
    }

    #[test]
    fn long_l1_steps_are_capped_with_a_note() {
        let mut t = long_trajectory();
        t.steps[5].content = "y".repeat(L1_MAX_CHARS + 25);
        let h = hierarchy::build(&t);
        let text = render(&t, &h, &levels(&t, &h, "A"));
        assert!(
            text.contains(&format!("L1 [step 5] A (message):\n{}\n[… 25 more characters]", "y".repeat(L1_MAX_CHARS)))
        );
    }
}
