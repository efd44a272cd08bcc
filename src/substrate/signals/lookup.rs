//! A lookup an agent claims before anything was looked up: an *unsourced-value* finding of the
//! stating step (docs/METHODS.md, "Values in context").
//!
//! An agent that writes "I have successfully retrieved the article", "after manually searching"
//! or "according to the Wikipedia page" reports having searched, opened, read, located or
//! retrieved something. When no tool call, tool output or page read at all came before it in the
//! run, the lookup never happened: what the step states from it has no source, and the step
//! carries an unsourced-value finding (weight [`weights::CLAIMED_LOOKUP`], category
//! hallucination) quoting its claim. A claim after any call or read is not checked against what
//! that call returned.

use std::sync::LazyLock;

use regex::Regex;

use super::{Context, actions, finding, is_agent_output, is_outside_agent, weights};
use crate::diagnosis::{Finding, Signal};
use crate::hierarchy::Action;
use crate::model::StepKind;

/// A first-person claim of a finished lookup ("I have successfully located", "I retrieved",
/// "we have searched"), a lookup told as done before what follows ("after manually searching",
/// "upon reviewing") or a statement sourced to a page ("according to the Wikipedia page").
static CLAIM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b(?:I|we)(?:\s+have|\s+had|'ve)?(?:\s+now|\s+already|\s+successfully|\s+manually|\s+carefully)*\s+",
        r"(?:searched|looked\s+up|located|retrieved|fetched|accessed|opened|browsed|consulted|visited|read\s+through)\b",
        r"|\b(?:after|upon)\s+(?:manually\s+|carefully\s+)?(?:searching|browsing|consulting|visiting|accessing|looking\s+up)\b",
        r"|\baccording\s+to\s+(?:the\s+|its\s+|their\s+)?(?:official\s+)?(?:[\w'-]+\s+){0,3}",
        r"(?:page|website|site|article|entry|database|listing|records?)\b",
    ))
    .unwrap()
});

/// Words that make the claim conditional or planned ("once I have located", "if we searched").
static CONDITIONAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:once|if|when|until|before|after|unless|will|can|should|would)\s*$").unwrap()
});

/// Adds an unsourced-value finding to `out` when step `i` (0-based), an agent's own message (not
/// the served person, the system, a tool output, a plan or a request), claims a lookup
/// ([`CLAIM`], outside fenced code, not conditional) and no step from 1 to `i - 1` is a tool
/// call, a tool output or a page an agent read (see the module). Steps already hedged (their
/// assumption finding is given) and step 0 (the task) are skipped.
pub(super) fn claimed_lookup(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let s = &ctx.hierarchy.steps[i];
    let step = &ctx.trajectory.steps[i];
    if i == 0
        || s.flags.hedged
        || is_outside_agent(&step.agent)
        || actions::is_human(step)
        || s.kind == StepKind::ToolResult
        || is_agent_output(ctx, i)
        || matches!(s.action, Action::Request | Action::Plan | Action::Coordinate | Action::ToolOutput)
    {
        return;
    }
    let Some(claim) = claim_in(&step.content) else { return };
    let looked = (1..i).any(|j| {
        let o = &ctx.hierarchy.steps[j];
        matches!(o.kind, StepKind::ToolResult | StepKind::ToolCall) || is_agent_output(ctx, j)
    });
    if !looked {
        out.push(finding(
            Signal::UnsourcedValue,
            weights::CLAIMED_LOOKUP,
            format!("claims a lookup (\"{claim}\") with no tool call, tool output or page read before it"),
        ));
    }
}

/// The first lookup claim of `content` outside fenced code and not conditional, quoted (at most
/// 60 characters).
fn claim_in(content: &str) -> Option<String> {
    content.split("```").step_by(2).find_map(|part| {
        let m = CLAIM.find_iter(part).find(|m| !CONDITIONAL.is_match(&part[..m.start()]))?;
        let end = part[m.end()..].find(['\n', '.']).map_or(part.len(), |x| m.end() + x);
        Some(crate::text::clip(part[m.start()..end].trim(), 60))
    })
}

#[cfg(test)]
mod tests {
    use super::claim_in;

    #[test]
    fn finished_lookups_are_claims() {
        assert_eq!(
            claim_in("I have successfully located the relevant trial on the NIH website. Here it is").as_deref(),
            Some("I have successfully located the relevant trial on the NIH w…")
        );
        assert_eq!(
            claim_in("The distance is 356,500 km according to the Wikipedia page for the Moon.").as_deref(),
            Some("according to the Wikipedia page for the Moon")
        );
        assert_eq!(
            claim_in("**Findings:**\n\nAfter manually searching for the paper, it").as_deref(),
            Some("After manually searching for the paper, it")
        );
    }

    #[test]
    fn plans_conditions_and_code_are_not_claims() {
        assert_eq!(claim_in("I will now proceed to access the article."), None);
        assert_eq!(claim_in("Once we have located the trails, we can read the reviews."), None);
        assert_eq!(claim_in("```python\n# we searched the page\nprint(1)\n```\nDone."), None);
        assert_eq!(claim_in("I found that the sum is 12."), None);
    }
}
