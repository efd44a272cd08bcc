//! A check told as passing right after it failed: `npm audit --audit-level=high` exits 1 listing
//! `braces <3.0.3 Severity: high`, and the agent's next message says "`npm audit
//! --audit-level=high` is satisfied". The commit, the "done" summary and the red CI run that follow
//! only inherit the misreading. docs/METHODS.md, "Assertion".

use std::sync::LazyLock;

use regex::Regex;

use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// How many steps after the failed check the message may come.
const WINDOW: usize = 3;

/// Words that tell a check as passing: "is satisfied", "passes", "is green", "is clean".
static PASSING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:is|are|now|looks|stays)\s+(?:now\s+)?(?:satisfied|green|clean|passing|happy|fine|ok(?:ay)?)\b|\b(?:passes|passed|succeeds|succeeded|is met|are met)\b",
    )
    .unwrap()
});

/// Words that tell it as failing, in the same sentence: then the message read the failure.
static FAILING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:not|n't|still fails?|fail(?:s|ed|ing)?|red|broken|blocks?|unless|until|once|after|if|would|will)\b",
    )
    .unwrap()
});

/// The command's program and first argument (`npm audit`, `cargo test`, `make lint`), lower case:
/// how a message names the check it ran.
fn command_name(command: &str) -> Option<String> {
    let words: Vec<&str> =
        command.split([';', '&', '|']).next()?.split_whitespace().filter(|w| !w.contains('=')).take(2).collect();
    (words.len() == 2 && words[1].chars().next().is_some_and(char::is_alphabetic))
        .then(|| words.join(" ").to_ascii_lowercase())
}

/// Step `i`, an agent's message or thought, names a check of its own (the program and first
/// argument of a shell command: `npm audit`) that failed within the last [`WINDOW`] steps
/// ([`super::check_fails`]: a non-zero exit code, or failure words without one; an audit's
/// exit code that reports vulnerabilities found), and in the
/// sentence naming it tells it as passing ([`PASSING`]) with no word of failure, negation or
/// condition ([`FAILING`]); no other call ran between. The agent read the failed check as passed.
pub(super) fn told_passing_after_failure(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if !matches!(s.kind, StepKind::Message | StepKind::Thought)
        || super::actions::served_person(s)
        || super::is_outside_agent(&s.agent)
        || !PASSING.is_match(&s.content)
    {
        return;
    }
    let from = i.saturating_sub(WINDOW + 1);
    let Some(c) = (from..i).rev().find(|&k| t.steps[k].kind == StepKind::ToolCall) else { return };
    if t.steps[c].agent != s.agent {
        return;
    }
    let Some(r) = super::result_of(ctx, c).filter(|&r| r < i) else { return };
    let tool = t.steps[c].tool_name.as_deref().unwrap_or_default();
    let Some(command) = super::shell_command(tool, &t.steps[c].content) else { return };
    let Some(name) = command_name(&command) else { return };
    // An audit reports what it found by its exit code (`npm audit` 1: vulnerabilities at the
    // level asked for), which is no failure of the program but is the gate not passing.
    let audit_found = name.contains("audit") && super::reports_by_exit_code(ctx, c, r);
    if !audit_found && !super::check_fails(ctx, r) {
        return;
    }
    let low = s.content.to_ascii_lowercase();
    let Some(at) = low.find(&name) else { return };
    let sentence = crate::text::sentence_around(&s.content, at, at + name.len());
    let said = &s.content[sentence];
    let Some(pass) = PASSING.find(said) else { return };
    if FAILING.is_match(said) {
        return;
    }
    // What the output shows: its failure line, or an audit's count of what it found.
    let line = super::check_failure(ctx, r)
        .or_else(|| t.steps[r].content.lines().map(str::trim).find(|l| l.contains("vulnerabilit")).map(str::to_string));
    let why = line.map(|l| format!(": {}", crate::text::clip(&l, 80))).unwrap_or_default();
    out.push(finding(
        Signal::IgnoredResult,
        weights::MISREAD,
        prose![
            format!(
                "says `{}` \"{}\" right after it failed at step ",
                crate::text::clip(command.trim(), 60),
                pass.as_str().trim()
            ),
            Part::Step(r),
            why,
        ],
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_is_named_by_its_program_and_first_argument() {
        assert_eq!(command_name("npm audit --audit-level=high"), Some("npm audit".into()));
        assert_eq!(command_name("CI=1 cargo test -q; echo EXIT=$?"), Some("cargo test".into()));
        assert_eq!(command_name("ls"), None);
        assert!(PASSING.is_match("so `npm audit --audit-level=high` is satisfied."));
        assert!(FAILING.is_match("the audit still fails on braces"));
    }
}
