//! The *progress* finding: a worker action whose observation brings nothing new toward the task,
//! when the plan depended on it (docs/METHODS.md, "Progress").
//!
//! An agent that was asked to find something and comes back with the same page it already saw,
//! an empty result, or an observation that repeats an earlier one word for word has not moved
//! the run forward; whatever is decided next rests on information the run does not have. The
//! plan depended on the action when it answers an instruction handed to its agent (a
//! delegation, or the coordinator naming it as the next speaker) or when the agent called a tool
//! itself. Only actions that look (reads, searches, lookups, navigation) are judged so: a call
//! that changes state brings its change, whatever its tool answers.

use std::collections::HashMap;

use super::{Context, finding, is_agent_output, jaccard, result_of, weights, words_of};
use crate::diagnosis::{Finding, Part, Prose, Signal};
use crate::hierarchy::Action;
use crate::model::StepKind;
use crate::prose;

/// Two observations with at least this word overlap (Jaccard) say the same thing.
const SAME_OBSERVATION: f32 = 0.9;
/// Observations shorter than this (bytes) are too short to compare (a bare "OK").
const MIN_OBSERVATION: usize = 40;
/// How many earlier observations of the same agent or tool an observation is compared with.
const LOOK_BACK: usize = 8;

/// Per step, why its observation brought nothing new, computed once per trajectory.
fn stalls<'a>(ctx: &Context<'a>) -> &'a [Option<Prose>] {
    ctx.facts.no_progress.get_or_init(|| compute(ctx))
}

/// The step whose observation step `i` is: itself for an agent that reports what it read (a
/// browsing agent), its result for a tool call.
/// A call that changes state ([`super::changes_state`]: an edit, a write, a `sed -i`, an order
/// modified) has none to judge: it brings something new by what it changes, whatever its tool
/// answers ("The file x.py has been updated successfully." twice is two edits, and an empty
/// answer is a quiet success).
fn observation_of(ctx: &Context<'_>, i: usize) -> Option<usize> {
    let s = &ctx.hierarchy.steps[i];
    if s.kind == StepKind::ToolResult || matches!(s.action, Action::Coordinate | Action::Plan | Action::Request) {
        return None;
    }
    if super::changes_state(ctx.trajectory, i) {
        return None;
    }
    if let Some(r) = result_of(ctx, i) {
        return Some(r);
    }
    is_agent_output(ctx, i).then_some(i)
}

/// Whether the plan asked for step `i`: an instruction or a delegation to its agent came right
/// before it (within three steps), or the step calls a tool itself.
fn asked_for(ctx: &Context<'_>, i: usize) -> bool {
    let t = ctx.trajectory;
    let agent = &t.steps[i].agent;
    let delegated = (i.saturating_sub(3)..i).any(|j| {
        let s = &t.steps[j];
        s.kind == StepKind::Delegation && s.delegate_to.as_deref().is_none_or(|d| d.eq_ignore_ascii_case(agent))
            || s.content.to_lowercase().contains(&format!("next speaker {}", agent.to_lowercase()))
    });
    delegated || result_of(ctx, i).is_some()
}

/// How many steps apart a command and its re-run may be for [`recheck`] to look between them.
const RECHECK_WINDOW: usize = 200;

/// Whether shell call `i` (output `o`) runs again the command line of shell call `s` (output
/// `e`) to check a change: the same agent changed state between them ([`super::changes_state`]:
/// an edit, an install), at most [`RECHECK_WINDOW`] steps apart, and either the output is not the
/// same text (`npm ls` showing `overridden` after the override was written: what changed is the
/// news) or the re-run failed again (a test run after an edit failing as before: the news is
/// that the change did not fix it, which the failed check puts on the change). A re-run that
/// succeeds word for word as before still repeats it.
fn recheck(ctx: &Context<'_>, s: usize, e: usize, i: usize, o: usize) -> bool {
    let t = ctx.trajectory;
    if i <= s || i - s > RECHECK_WINDOW {
        return false;
    }
    let same = t.steps[o].content.trim() == t.steps[e].content.trim();
    if same && !ctx.hierarchy.steps[o].flags.failed_execution {
        return false;
    }
    let (Some(a), Some(b)) = (super::call_command(t, s), super::call_command(t, i)) else { return false };
    let by_agent = |k: usize| t.steps[k].kind == StepKind::ToolCall && t.steps[k].agent == t.steps[i].agent;
    a.trim() == b.trim()
        && (s + 1..i).any(|k| {
            by_agent(k)
                && super::changes_state(t, k)
                // The same failure word for word checks only an edit of code: an edit of the
                // docs (README, CHANGELOG, docs/) or an install cannot be what it measures.
                && (!same
                    || super::edits(t, k)
                        && super::instructions::changed_paths(t, k).iter().any(|(p, _)| !is_doc(p)))
        })
}

/// Whether `path` is documentation: a `.md`, `.rst`, `.txt` or `.adoc` file, a README, CHANGELOG,
/// LICENSE or CONTRIBUTING file, or a file under a `docs/` or `doc/` folder.
fn is_doc(path: &str) -> bool {
    let low = path.to_ascii_lowercase();
    let name = low.rsplit('/').next().unwrap_or(&low);
    [".md", ".rst", ".txt", ".adoc"].iter().any(|x| name.ends_with(x))
        || ["readme", "changelog", "license", "contributing"].iter().any(|x| name.starts_with(x))
        || low.split('/').any(|c| c == "docs" || c == "doc")
}

fn compute(ctx: &Context<'_>) -> Vec<Option<Prose>> {
    let t = ctx.trajectory;
    let n = t.steps.len();
    let mut out = vec![None; n];
    // Earlier observations per agent (or tool), most recent last.
    let mut seen: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
    for (i, slot) in out.iter_mut().enumerate() {
        let Some(o) = observation_of(ctx, i) else { continue };
        if o >= n {
            continue;
        }
        let who = t.steps[i].tool_name.clone().unwrap_or_else(|| t.steps[i].agent.clone());
        let flags = &ctx.hierarchy.steps[o].flags;
        let earlier = seen.entry(who).or_default();
        let why = if flags.empty_result && !flags.failed_execution {
            Some(prose!["its observation (step ", Part::Step(o), ") is empty"])
        } else if t.steps[o].content.trim().len() >= MIN_OBSERVATION {
            earlier
                .iter()
                .rev()
                .take(LOOK_BACK)
                // Another call answered by the same observation (a turn of several actions a
                // harness refused with one message) is no earlier observation of it.
                .filter(|(_, e)| *e != o)
                .find(|(s, e)| {
                    jaccard(words_of(ctx, o), words_of(ctx, *e)) >= SAME_OBSERVATION && !recheck(ctx, *s, *e, i, o)
                })
                .map(|(s, e)| {
                    if s == e {
                        prose!["it shows what step ", Part::Step(*e), " already showed"]
                    } else {
                        prose!["its observation (step ", Part::Step(o), ") repeats step ", Part::Step(*e), "'s"]
                    }
                })
        } else {
            None
        };
        earlier.push((i, o));
        if let Some(why) = why.filter(|_| asked_for(ctx, i)) {
            *slot = Some(Prose::from("brings nothing new toward the task: ").with(why));
        }
    }
    out
}

/// The progress finding of step `i`.
pub(crate) fn no_progress(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    if let Some(why) = stalls(ctx).get(i).cloned().flatten() {
        out.push(finding(Signal::NoProgress, weights::NO_PROGRESS, why));
    }
}
