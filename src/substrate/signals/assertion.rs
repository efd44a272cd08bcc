//! The *assertion* finding: the first step outside a tool observation that asserts the run's
//! final value or claims the task done, and whether what it asserts was ever verified
//! (docs/METHODS.md, "Assertion").
//!
//! A run usually goes wrong before it ends, but the step that first *declares* it finished is
//! where an unverified result becomes the run's output: the claim "request satisfied", a
//! `FINAL ANSWER:` line, a ledger's `is_request_satisfied` set to true, "successfully completed",
//! a coding agent's "all tests pass" or "the bug is fixed".
//! When the values that claim asserts (the observed output's items when it states the output, or
//! its own numbers)
//! appear in no observation before it (no tool output, no page an agent read), nothing verified
//! them: the finding holds. A completion claim without values holds when no observation after the
//! last action reported on that action's effect (after an edit, only a call that is not an edit
//! checks it).

use std::sync::LazyLock;

use regex::Regex;

use super::{Context, finding, is_agent_output, is_outside_agent, output_items, weights};
use crate::diagnosis::{Finding, Part, Prose, Signal};
use crate::evidence::{self, EvidenceKind};
use crate::model::StepKind;
use crate::prose;

/// A claim that the task is done or the answer final: a final-answer line, a ledger's
/// `is_request_satisfied` answered true, or words that declare completion (for coding agents:
/// the tests pass or are green, everything passes, the bug is fixed, the fix is complete).
static CLAIM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"(?is)\bfinal answer(\*\*)?\s*[:：]"#,
        r#"|"is_request_satisfied"\s*:\s*\{[^{}]*"answer"\s*:\s*true"#,
        r#"|is_request_satisfied\W{0,4}true"#,
        r#"|\brequest (is |has been )?(satisfied|fulfilled|complete)"#,
        r#"|\b(task|request|job|work) (is |has been )?(successfully )?(completed?|done|finished)\b"#,
        r#"|\b(has|have) been successfully (completed|processed|submitted|done)"#,
        r#"|\bsuccessfully (completed|finished) (the|your|this) (task|request)"#,
        r#"|\b(all )?(the )?(tests|test suite|suite|build) (now |still )?(pass|passes|passed|are passing|is passing|succeeds)\b"#,
        r#"|\b(bug|issue|problem|error|failure) (is|has been) (now )?(fixed|resolved)\b"#,
        r#"|\b(tests|test suite|suite|build|checks|ci) (is |are )?(now )?green\b"#,
        r#"|\b(test\w*|everything) now pass(es)?\b|\beverything (passes|is passing)\b"#,
        r#"|\b(fix|change|changes|implementation) (is|are|has been) (now )?(complete|completed|done|in place)\b"#,
        // mini-swe-agent submits by printing this line; SWE-agent by calling `submit` alone.
        r#"|\bcomplete_task_and_submit_final_output\b|(?m:^\s*submit\s*$)"#
    ))
    .unwrap()
});

/// The first step outside tool observations that asserts the final value or claims the task
/// done, with what it asserts (a short quote), computed once per trajectory. Steps of someone
/// outside the agent system (the user) and tool outputs never count.
pub(crate) fn first_assertion(ctx: &Context<'_>) -> Option<(usize, String)> {
    ctx.facts.first_assertion.get_or_init(|| compute(ctx)).clone()
}

/// A report that what was asked worked ("`npm run build` succeeded", "ran successfully"): a claim
/// only in an agent's message to the reader, never in a call's text (a script that prints
/// "completed successfully", `echo "Build succeeded"`).
static SUCCESS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(succeeded|(completed|ran|finished|went through) successfully|(was|were) successful)\b").unwrap()
});

fn compute(ctx: &Context<'_>) -> Option<(usize, String)> {
    let t = ctx.trajectory;
    ctx.hierarchy.steps.iter().find_map(|s| {
        let observation = s.kind == StepKind::ToolResult && !is_agent_output(ctx, s.index);
        if observation || is_outside_agent(&s.agent) || s.index == 0 {
            return None;
        }
        let content = &t.steps[s.index].content;
        let m = CLAIM.find(content).or_else(|| {
            (t.steps[s.index].kind == StepKind::Message && !content.contains("```"))
                .then(|| SUCCESS.find(content))
                .flatten()
        })?;
        Some((s.index, quote(content, m.start(), m.end())))
    })
}

/// The claim's line, trimmed, at most 80 characters.
fn quote(content: &str, start: usize, end: usize) -> String {
    let line_start = content[..start].rfind('\n').map_or(0, |x| x + 1);
    let line_end = content[end..].find('\n').map_or(content.len(), |x| end + x);
    let line = content[line_start..line_end].trim().trim_start_matches(['{', '"', ' ']);
    crate::text::clip(line, 80)
}

/// The values the assertion at step `a` asserts: what follows its final-answer line (split at
/// commas and semicolons); else the observed output's items when the step states the observed
/// output; else the step's own non-trivial numbers but those the task gives (none for a bare
/// claim). Lower case.
fn asserted_values(ctx: &Context<'_>, a: usize) -> Vec<String> {
    let content = &ctx.trajectory.steps[a].content;
    if let Some(m) = ANSWER_LINE.captures(content).and_then(|c| c.get(1)) {
        let items: Vec<String> = m
            .as_str()
            .split([',', ';'])
            .map(|x| x.trim().trim_matches(['.', '"', '\'', '*']).to_lowercase())
            .filter(|x| x.chars().count() >= 2)
            .take(8)
            .collect();
        if !items.is_empty() {
            return items;
        }
    }
    let observed =
        ctx.trajectory.observed_output.as_deref().and_then(|o| o.lines().map(str::trim).find(|l| !l.is_empty()));
    if observed.is_some_and(|o| content.contains(o)) {
        // Items are values ("Paris", "4310 invoices"), not the sentences of a whole message.
        let items: Vec<String> = output_items(ctx)
            .into_iter()
            .filter(|x| x.split_whitespace().count() <= MAX_ITEM_WORDS && !COURTESY.is_match(x))
            .collect();
        if !items.is_empty() {
            return items;
        }
    }
    // A figure the task gives ("over 35% of GDP") is the question's, not the claim's.
    let given = numbers(&ctx.trajectory.task);
    ctx.hierarchy.evidence[a]
        .iter()
        .filter(|e| e.kind == EvidenceKind::Number && !evidence::is_trivial_number(&e.key))
        .map(|e| e.text(content).to_lowercase())
        .filter(|v| numbers(v).iter().any(|n| !given.contains(n)))
        .collect()
}

/// The words a reply opens or closes with to be polite ("Thanks for your patience", "Is there
/// anything else I can help with?"): they assert nothing.
static COURTESY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\W*(?:thanks|thank you|hi|hello|hey|dear|sorry|apologies|you're welcome|is there anything else|anything else|let me know|have a (?:great|nice|good|lovely)|glad to|happy to help|best regards|kind regards|cheers)\b").unwrap()
});

/// An item of the observed output with more words than this is a sentence, not a value.
const MAX_ITEM_WORDS: usize = 6;

/// The text of a final-answer line after its marker.
static ANSWER_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\bfinal answer(?:\*\*)?\s*[:：]\s*([^\n]+)").unwrap());

/// The numbers written in `text` (digits with separators and a decimal part), normalised
/// ([`evidence::normalize_number`]: `124.50` and `124.5` are one figure).
fn numbers(text: &str) -> Vec<String> {
    static NUM: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d[\d,]*(?:\.\d+)?").unwrap());
    NUM.find_iter(text).map(|m| evidence::normalize_number(m.as_str().trim_end_matches(','))).collect()
}

/// Whether step `j` is an observation: a tool output, a page an agent read, or what a terminal
/// printed running another step's code (a step linked as that code's result).
fn is_observation(ctx: &Context<'_>, j: usize) -> bool {
    let links = super::links(ctx);
    ctx.trajectory.steps[j].kind == StepKind::ToolResult
        || is_agent_output(ctx, j)
        || links.produced_by[j].is_some_and(|p| links.result_of[p] == Some(j))
}

/// The assertion finding of step `i`: it is the run's first assertion and what it asserts was
/// never observed before it.
pub(crate) fn unverified(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let Some((a, claim)) = first_assertion(ctx) else { return };
    if a != i {
        return;
    }
    let t = ctx.trajectory;
    // A test run after the last edit that exited with 0 while its runner counted failures: the
    // claim read the status, not the summary.
    let hidden = (1..a).rev().find_map(|r| {
        (super::misread_as_pass(ctx, r) == Some(a))
            .then(|| super::hidden_test_failure(ctx, r).map(|l| (r, l)))
            .flatten()
    });
    if let Some((r, summary)) = hidden {
        out.push(finding(
            Signal::UnverifiedAssertion,
            weights::UNVERIFIED_ASSERTION,
            prose![
                format!("claims the task done (\"{claim}\") although the test run at step "),
                Part::Step(r),
                format!(" reports \"{}\" under exit status 0", crate::text::clip(summary, 80))
            ],
        ));
        return;
    }
    // A state change that failed and was never made after all: the claim reports work that was
    // not done, whatever was checked after it.
    if let Some((c, _, r, error)) = first_unresolved(ctx).clone() {
        let what = action_text(t, c).map_or_else(|| "the call".to_string(), |k| format!("`{k}`"));
        out.push(finding(
            Signal::UnverifiedAssertion,
            weights::UNVERIFIED_ASSERTION,
            prose![
                format!("claims the task done (\"{}\") although {what} (step ", crate::text::clip(&claim, 48)),
                Part::Step(c),
                ") failed at step ",
                Part::Step(r),
                format!(" and was not redone: {error}")
            ],
        ));
        return;
    }
    // Calls the user refused did not run: they neither edit nor check.
    let ran = |c: usize| !super::refused_call(ctx, c);
    let last_edit = (1..a).rev().find(|&j| super::edits(t, j) && ran(j));
    // The last check after the edit: a call that ran and is not an edit, with its observation.
    let check = last_edit.and_then(|e| {
        (e + 1..a)
            .rev()
            .filter(|&c| !super::edits(t, c) && ran(c))
            .find_map(|c| super::result_of(ctx, c).filter(|&r| r < a && is_observation(ctx, r)))
    });
    if let Some(r) = check {
        // Checked: the claim stands unless the check failed, when it says the opposite of what
        // it saw. Failed as every rule reads a check ([`super::check_fails`]): by its exit code
        // when the output reports one (0 passed, whatever its captured log says), else by its
        // words.
        if super::check_fails(ctx, r) {
            let line = super::check_failure(ctx, r).map(|l| format!(": {l}"));
            out.push(finding(
                Signal::UnverifiedAssertion,
                weights::UNVERIFIED_ASSERTION,
                prose![
                    format!("claims the task done (\"{claim}\") although the check at step "),
                    Part::Step(r),
                    format!(" failed{}", line.unwrap_or_default())
                ],
            ));
        }
        return;
    }
    // Nothing changed after the failure the task reports was reproduced: the claim hands back
    // the code as it was.
    if last_edit.is_none()
        && let Some(r) = (1..a).find(|&r| super::shows_failure(ctx, r) && super::reproduces_reported_failure(ctx, r))
    {
        let evidence = prose![
            format!(
                "claims the task done (\"{claim}\") with no edit after the failure the task reports was reproduced at step "
            ),
            Part::Step(r)
        ];
        out.push(finding(Signal::UnverifiedAssertion, weights::UNVERIFIED_ASSERTION, evidence));
        return;
    }
    // Not checked after the last edit: whatever it asserts, the code it claims works was never
    // run (the edit's own result checks nothing).
    if let Some(e) = last_edit {
        let evidence =
            prose![format!("claims the task done (\"{claim}\") with no check after the edit at step "), Part::Step(e)];
        out.push(finding(Signal::UnverifiedAssertion, weights::UNVERIFIED_ASSERTION, evidence));
        return;
    }
    let values = asserted_values(ctx, a);
    let lower = super::lower_of;
    // An item is observed when an earlier observation contains it, or, for an item with numbers
    // ("4310 invoices"), when every number of it stands in one (as a whole word).
    let seen = |v: &str| (0..a).any(|j| is_observation(ctx, j) && lower(ctx, j).contains(v));
    let seen_number = |n: &str| (0..a).any(|j| is_observation(ctx, j) && numbers(lower(ctx, j)).iter().any(|x| x == n));
    let observed_before = |v: &str| {
        let ns = numbers(v);
        seen(v) || !ns.is_empty() && ns.iter().all(|n| seen_number(n))
    };
    let evidence: Prose = if values.is_empty() {
        // A bare completion claim: verified when an observation follows the last action (after
        // an edit, only a later call that is not an edit checks it: above).
        let last_action = (1..a).rev().find(|&j| super::result_of(ctx, j).is_some());
        let checked = last_action.is_some_and(|c| (c + 1..a).any(|j| is_observation(ctx, j)));
        if checked || last_action.is_none() && (1..a).any(|j| is_observation(ctx, j)) {
            return;
        }
        format!("claims the task done (\"{claim}\") with no observation of the result before it").into()
    } else {
        // Each value once (an answer may state the same number twice), at most three.
        let mut unseen: Vec<&str> = Vec::new();
        for v in values.iter().map(String::as_str).filter(|v| !observed_before(v)) {
            if !unseen.contains(&v) && unseen.len() < 3 {
                unseen.push(v);
            }
        }
        if unseen.is_empty() {
            return;
        }
        let verb = if unseen.len() == 1 { "appears" } else { "appear" };
        let sentence = |claim: &str, value_chars: usize| {
            format!(
                "asserts the final result (\"{claim}\") but {} {verb} in no observation before it",
                unseen
                    .iter()
                    .map(|v| format!("\"{}\"", crate::text::clip(v, value_chars)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        // A finding's evidence is kept to 200 characters: a long claim and long values are
        // clipped so that the sentence's end, what is wrong with them, is never the part cut.
        let full = sentence(&claim, 40);
        if full.chars().count() <= 200 {
            full.into()
        } else {
            let short = crate::text::clip(&claim, 40);
            let value_chars = (200usize.saturating_sub(sentence(&short, 0).chars().count()) / unseen.len()).max(8);
            sentence(&short, value_chars).into()
        }
    };
    out.push(finding(Signal::UnverifiedAssertion, weights::UNVERIFIED_ASSERTION, evidence));
}

/// The failed state change that the run's first assertion, at step `a`, reports as done
/// ([`unresolved_failure`]): the claim carries that failure on, so it follows from the call.
/// `None` when step `a` is not the first assertion or no such failure stands before it.
pub fn claimed_failure(ctx: &Context<'_>, a: usize) -> Option<usize> {
    first_unresolved(ctx).as_ref().filter(|(_, claim, _, _)| *claim == a).map(|(call, _, _, _)| *call)
}

/// [`unresolved_failure`] of the run's first assertion, as (call, assertion, result, error),
/// computed once per trajectory.
fn first_unresolved<'a>(ctx: &Context<'a>) -> &'a Option<(usize, usize, usize, String)> {
    ctx.facts.first_unresolved.get_or_init(|| {
        let (a, _) = first_assertion(ctx)?;
        unresolved_failure(ctx, a).map(|(c, r, e)| (c, a, r, e))
    })
}

/// The first state-changing call before the claim at step `a` that failed and was never done
/// after all, as (call, result, error line): its tool reports an error ([`super::call_error`])
/// that is not a timeout, not the failure the task reports, not an install the work went on
/// without ([`super::install_worked_around`]) and not the shell's own refusal to run
/// the command line ([`super::shell_could_not_run`]: it changed nothing), the agent did not recover from it
/// ([`super::actions::recovered`]) nor checked and corrected it at once
/// ([`super::coding::edit_checked_at_once`]), no edit follows the failure (the agent changed something in
/// answer to it), and no later call of the same action ([`action_key`]: the same program and
/// first argument of a shell command, else the same tool on the same object) succeeds before the
/// claim. A claim that itself speaks of a failure ("could not", "failed", "unable") reports it
/// and is left alone.
fn unresolved_failure(ctx: &Context<'_>, a: usize) -> Option<(usize, usize, String)> {
    static REPORTS_FAILURE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(could ?n[o']t|can ?n[o']t|unable to|failed|failure|not able to|permission denied|did not|didn't|error)\b")
            .unwrap()
    });
    // Failures that leave the wanted state in place: removing what is not there, creating what
    // exists, committing nothing, stopping no process.
    static LEAVES_STATE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)no such file or directory|file exists|already exists|nothing to commit|no process(es)? found")
            .unwrap()
    });
    let t = ctx.trajectory;
    if REPORTS_FAILURE.is_match(&t.steps[a].content) {
        return None;
    }
    (1..a).find_map(|c| {
        if !super::changes_state(t, c) {
            return None;
        }
        let r = super::result_of(ctx, c).filter(|&r| r < a)?;
        let error = super::call_error(ctx, c)?;
        if super::says_timed_out(&error)
            || LEAVES_STATE.is_match(&error)
            || super::install_worked_around(ctx, c)
            || super::reproduces_reported_failure(ctx, r)
            || super::shell_could_not_run(ctx, r).is_some()
            || super::actions::recovered(ctx, c)
            || super::coding::edit_checked_at_once(ctx, c)
            || (r + 1..a).any(|j| super::edits(t, j))
        {
            return None;
        }
        let key = action_key(t, c);
        let redone = (r + 1..a).any(|k| {
            k != c
                && t.steps[k].kind == StepKind::ToolCall
                && t.steps[k].agent == t.steps[c].agent
                && key.is_some()
                && action_key(t, k) == key
                && super::result_of(ctx, k).is_some_and(|rk| rk < a)
                && super::call_error(ctx, k).is_none()
        });
        (!redone).then_some((c, r, error))
    })
}

/// How a reason names state-changing call `c`: the first simple command of its shell command
/// that changes state (`rm -rf build`), else its tool's name; at most 40 characters.
fn action_text(t: &crate::model::Trajectory, c: usize) -> Option<String> {
    let s = &t.steps[c];
    let tool = s.tool_name.as_deref()?;
    let text = match super::shell_command(&tool.to_ascii_lowercase(), &s.content) {
        Some(cmd) => super::shell::commands(&cmd)
            .into_iter()
            .find(super::shell::command_changes)
            .map_or_else(|| tool.to_string(), |c| c.text),
        None => tool.to_string(),
    };
    Some(crate::text::clip(&text, 40))
}

/// What a state-changing call does, to tell when it is done again: for a shell command, the
/// program and first argument of its first simple command that changes state
/// ([`super::shell::action_key`]: `rm build` for `sudo rm -rf build/`, `npm install`); for
/// another tool, its name and the object it acts on (`cancel_order order_id=#W1`). `None` for a
/// call without a tool name.
pub(super) fn action_key(t: &crate::model::Trajectory, c: usize) -> Option<String> {
    let s = &t.steps[c];
    let tool = s.tool_name.as_deref()?;
    let Some(cmd) = super::shell_command(&tool.to_ascii_lowercase(), &s.content) else {
        return Some(match super::call_object(&s.content) {
            Some(object) => format!("{tool} {object}"),
            None => tool.to_string(),
        });
    };
    super::shell::action_key(&cmd)
}
