//! The offline answer to FALAT's coarse question (`Question::PhaseSummary`): how suspicious is a
//! phase of `M_hi`, judged from what the phase summary says, never from a step's evidence.
//!
//! The FALAT paper's coarse-to-fine search ("FALAT: Tracing Errors in LLM Agent Trajectories via
//! Dependency-Guided Search", §1) judges phases from the global level `M_hi` and zooms into the
//! suspicious ones. What a phase summary holds here: its purpose and agent, and, counted over its
//! steps' `M_mid` flags, whether it reports errors, hedges, answers, introduces values of its own
//! or feeds values to the final output; set against `π`, whether its agent and purpose are the
//! ones the expected procedure gives. Each fact is one [`PhaseFact`] with a weight; the suspicion
//! is their noisy-or. A phase with one weak fact stays under the pipeline's default threshold
//! (0.5); a phase needs an error, invented values that reach the output, or several facts.

use crate::diagnosis::Signal;
use crate::hierarchy::{Action, Origin, Phase, Purpose, StepSummary};
use crate::judge::{Answer, Context};
use crate::model::StepKind;
use crate::prior::{Capability, Prior};
use crate::substrate::signals;

/// One fact a phase summary states, with the suspicion it adds (0..=1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseFact {
    /// A step of the phase reports an error, a failed run or an empty result.
    Error,
    /// A step of the phase hedges or assumes.
    Hedge,
    /// An agent (not a tool) of the phase introduces values no earlier step or the task gave.
    OwnValues,
    /// Values first seen in the phase are used by the final output.
    FeedsOutput,
    /// The phase answers or claims a verified result.
    Answer,
    /// An agent of the phase reports that nothing more exists where it looked: no other
    /// references, callers or matches, nothing anywhere in the repository
    /// (`signals::instructions::claims_nothing_more`). A report the next agent acts on without
    /// looking again.
    NothingMore,
    /// An agent of the phase writes out a calculation whose result is wrong (its step's
    /// `miscalculation` flag): a slip anyone can check on the page, so it is suspicious alone.
    Miscalculation,
    /// A call of the phase passes an argument that contradicts what the request or an earlier
    /// output says (`argument_mismatch`: a UTC window queried at another offset, a stay booked
    /// for other nights, an id from the neighbouring row): checkable on the page, so suspicious
    /// alone, like [`PhaseFact::Miscalculation`].
    ArgumentMismatch,
    /// The phase's agent is none of the agents `π` expects.
    UnexpectedAgent,
    /// The phase's purpose is no step of `π`'s expected procedure (gathering where nothing needs
    /// looking up, computing where nothing needs computing).
    OutsideProcedure,
}

impl PhaseFact {
    /// The suspicion the fact adds. Single facts stay under 0.5 except a calculation that does
    /// not hold; an error together with anything else, or own values that reach the final
    /// output, pass it.
    pub fn weight(self) -> f32 {
        match self {
            PhaseFact::Error => 0.35,
            PhaseFact::Hedge => 0.3,
            PhaseFact::OwnValues => 0.25,
            PhaseFact::FeedsOutput => 0.3,
            PhaseFact::Answer => 0.2,
            PhaseFact::NothingMore => 0.35,
            PhaseFact::Miscalculation => 0.5,
            PhaseFact::ArgumentMismatch => 0.5,
            PhaseFact::UnexpectedAgent => 0.2,
            PhaseFact::OutsideProcedure => 0.15,
        }
    }

    /// Lower-case words for the summary.
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseFact::Error => "errors",
            PhaseFact::Hedge => "hedges",
            PhaseFact::OwnValues => "own values",
            PhaseFact::FeedsOutput => "feeds the output",
            PhaseFact::Answer => "answers",
            PhaseFact::NothingMore => "reports nothing more",
            PhaseFact::Miscalculation => "a calculation that does not hold",
            PhaseFact::ArgumentMismatch => "an argument that contradicts the request",
            PhaseFact::UnexpectedAgent => "agent not expected by the prior",
            PhaseFact::OutsideProcedure => "outside the expected procedure",
        }
    }
}

/// The facts the summary of phase `p` states (in [`PhaseFact`] order).
pub fn facts(ctx: &Context<'_>, p: &Phase) -> Vec<PhaseFact> {
    let all = &ctx.hierarchy.steps;
    let range = p.range.start.min(all.len())..p.range.end.min(all.len());
    let steps: &[StepSummary] = &all[range.clone()];
    let mut out = Vec::new();
    if steps.iter().any(|s| s.flags.error || s.flags.failed_execution || s.flags.empty_result) {
        out.push(PhaseFact::Error);
    }
    if steps.iter().any(|s| s.flags.hedged) {
        out.push(PhaseFact::Hedge);
    }
    let own =
        |s: &&StepSummary| s.kind != StepKind::ToolResult && !s.introduces.is_empty() && s.action != Action::Request;
    if steps.iter().any(|s| own(&s)) {
        out.push(PhaseFact::OwnValues);
    }
    if let Some(end) = signals::final_step(ctx).and_then(|e| all.get(e))
        && end.uses.iter().any(|(_, o)| matches!(o, Origin::Step(k) if range.contains(k) && *k != end.index))
    {
        out.push(PhaseFact::FeedsOutput);
    }
    if steps.iter().any(|s| s.flags.answer || s.flags.claims_verified) {
        out.push(PhaseFact::Answer);
    }
    if range.clone().any(|i| {
        let s = &ctx.trajectory.steps[i];
        s.kind == StepKind::Message
            && !signals::actions::is_human(s)
            && signals::instructions::claims_nothing_more(&s.content)
    }) {
        out.push(PhaseFact::NothingMore);
    }
    if steps.iter().any(|s| s.flags.miscalculation) {
        out.push(PhaseFact::Miscalculation);
    }
    if range.clone().any(|i| signals::own_finding(ctx, i, |f| f.signal == Signal::ArgumentMismatch)) {
        out.push(PhaseFact::ArgumentMismatch);
    }
    if let Some(prior) = ctx.prior {
        let expected: Vec<&str> = prior.requirements.iter().filter_map(|r| r.agent.as_deref()).collect();
        if !expected.is_empty() && !expected.iter().any(|a| a.eq_ignore_ascii_case(&p.agent)) {
            out.push(PhaseFact::UnexpectedAgent);
        }
        if !fits_procedure(prior, p.purpose) {
            out.push(PhaseFact::OutsideProcedure);
        }
    }
    out
}

/// Whether `π`'s expected procedure has a step of this purpose. Planning, answering and
/// delegated work always fit; a `π` without requirements has no opinion.
fn fits_procedure(prior: &Prior, purpose: Purpose) -> bool {
    let needs = |c: &[Capability]| prior.procedure.iter().any(|s| s.capability.is_some_and(|x| c.contains(&x)));
    if prior.procedure.iter().all(|s| s.capability.is_none()) {
        return true;
    }
    match purpose {
        Purpose::Gather => needs(&[Capability::WebLookup, Capability::FileReading]),
        Purpose::Compute => needs(&[Capability::Computation]),
        Purpose::Verify => needs(&[Capability::Verification]),
        Purpose::Plan | Purpose::Answer | Purpose::Delegated => true,
    }
}

/// The answer to `Question::PhaseSummary`: the phase's extractive summary and the noisy-or of
/// its [`facts`]' weights (0 for a phase that does not exist).
pub fn summary(ctx: &Context<'_>, phase: usize) -> Answer {
    let Some(p) = ctx.hierarchy.phases.get(phase) else {
        return Answer::PhaseSummary { summary: String::new(), suspicion: 0.0 };
    };
    let facts = facts(ctx, p);
    let suspicion = 1.0 - facts.iter().map(|f| 1.0 - f.weight()).product::<f32>();
    Answer::PhaseSummary { summary: p.summary.clone(), suspicion }
}
