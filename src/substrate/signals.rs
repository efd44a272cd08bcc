//! The signals below the judges: per-step detectors of deviations (unsourced values, assumptions,
//! failed or repeated actions, ignored tool errors, irrelevant browsing, wrong delegations,
//! premature answers, the origin of a wrong output value, an answer of the wrong type, a state
//! change that blocks a later call on the same object; in [`actions`], a state change the tool
//! rejects or the user did not confirm; in [`grounding`], a value from a record marked
//! unavailable, a count that disagrees with its list and an answer that uses nothing its lookup
//! returned; in `lookup`, a lookup an agent claims with nothing looked up before it), their
//! weights, and the trajectory facts they rest on (the final step, the output's items, where
//! wrong values originate, which step produced a tool output). docs/DESIGN.md §4.
//!
//! No judge logic lives here: the heuristic judge ([`super::heuristic`]) answers the questions of
//! FALAT, ECHO, DeFA and the baselines from these signals, the fitted judge and the step ranker
//! ([`crate::rank`]) turn them into features, and the LLM prompts list them. Every function is
//! pure over a [`Context`]; per-trajectory facts are memoised in [`crate::substrate::Facts`].
//! Weights are fixed constants documented at [`weights`]; none refers to a data set.

mod arithmetic;
mod assertion;
mod bounds;
pub use assertion::claimed_failure;
mod callers;
mod clicked;
mod coding;
mod confirmed;
mod constraints;
mod conversion;
mod derivation;
mod environment;
pub mod inexact;
pub mod instructions;
mod interface;
mod lookup;
mod ordering;
mod outcome;
pub use outcome::relayed_outcome;
mod passed;
mod periods;
mod picked;
mod procedure;
mod quotes;
pub use instructions::Prohibition;
mod progress;
mod recovery;
mod reproduction;
pub mod revert;
mod rows;
mod runtime;
mod searched;
pub mod shell;
mod side_effects;
mod sources;
mod stale;
mod statistics;
mod tables;
mod targets;
mod traced;
mod units;
mod versions;
mod zones;

pub use periods::YearSeriesIndex;
use shell::is_shell_tool;
pub use shell::shell_command;
pub use stale::SupersededList;
pub use units::AmountIndex;

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use super::Context;

pub mod actions;
pub mod grounding;
use crate::diagnosis::{Finding, Part, Prose, Signal};
use crate::evidence::{self, EvidenceKind};
use crate::hierarchy::{Action, Origin, StepSummary};
use crate::model::{StepKind, Trajectory};
use crate::prior::{self, AnswerType};
use crate::prose;
use crate::substrate::LinkIndex;
use crate::text;

/// The weights of the heuristic signals, 0..=1. A candidate's score is the noisy-or of its
/// findings' weights.
pub mod weights {
    /// Per unsourced non-trivial value (capped at [`UNSOURCED_MAX`]).
    pub const UNSOURCED_PER_VALUE: f32 = 0.12;
    /// Cap for unsourced values.
    pub const UNSOURCED_MAX: f32 = 0.55;
    /// A lookup an agent claims with no tool call, tool output or page read before it (an
    /// unsourced-value finding, as strong as the most unsourced values weigh).
    pub const CLAIMED_LOOKUP: f32 = UNSOURCED_MAX;
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
    /// A state change that made a later call on the same object fail.
    pub const BLOCKING_CHANGE: f32 = 0.5;
    /// The run's first assertion of its result, with nothing observed behind what it asserts.
    pub const UNVERIFIED_ASSERTION: f32 = 0.35;
    /// A worker action the plan depended on that brought nothing new.
    pub const NO_PROGRESS: f32 = 0.3;
    /// A state-changing call its tool rejected (as strong as a failed call: the call is wrong,
    /// but the world did not change).
    pub const REJECTED_ACTION: f32 = 0.4;
    /// A state change made without the confirmation the system policy asks for: a broken rule
    /// with a lasting effect.
    pub const UNCONFIRMED_ACTION: f32 = 0.5;
    /// A value offered or used from a record its tool marked unavailable (a misread record, as
    /// strong as losing a shown value: [`MISREAD`]).
    pub const UNAVAILABLE_VALUE: f32 = 0.5;
    /// A count told that disagrees with the list it counts (a misread list, as [`MISREAD`]).
    pub const COUNT_MISMATCH: f32 = 0.5;
    /// A call made with a near miss of the value the user gave (a misread request, as
    /// [`MISREAD`]).
    pub const ARGUMENT_MISMATCH: f32 = 0.5;
    /// A claim that the whole test suite passes after a run of a subset only (an unverified
    /// claim that also misreports its check: a little above [`UNVERIFIED_ASSERTION`]).
    pub const PARTIAL_CHECK: f32 = 0.45;
    /// A change of a path the user said not to touch (a broken rule with a lasting effect, as
    /// [`UNCONFIRMED_ACTION`]).
    pub const FORBIDDEN_CHANGE: f32 = 0.5;
    /// A change the user refused, made another way (as [`FORBIDDEN_CHANGE`]).
    pub const REFUSAL_BYPASSED: f32 = 0.5;
    /// Code that reports one statistic under the name of another (`statistics::wrong_statistic`).
    pub const WRONG_STATISTIC: f32 = 0.5;
    /// A calculation written out with a wrong result (`arithmetic::miscalculation`): a value
    /// checked false on the page, as strong as a misread list ([`COUNT_MISMATCH`]).
    pub const MISCALCULATION: f32 = 0.5;
    /// A state change tried again, unchecked, after a failure that left its outcome unknown (a
    /// change that may now be made twice: a broken rule with a lasting effect, as
    /// [`UNCONFIRMED_ACTION`]).
    pub const BLIND_RETRY: f32 = 0.5;
}

/// Noisy-or of finding weights.
pub fn combine(findings: &[Finding]) -> f32 {
    1.0 - findings.iter().map(|f| 1.0 - f.weight.clamp(0.0, 1.0)).product::<f32>()
}

/// The findings of one step, or `None` when it shows no violation.
///
/// Asked many times per step (by the judge, the ranker's features and the report), so the
/// findings that depend on the trajectory and the expected output alone are computed once per
/// step ([`Facts::findings`](crate::substrate::Facts::findings)); the two that read the prior
/// `π` (an off-task step, an answer of the wrong type) are asked each time, since stage 1 may
/// answer the prior differently from the substrate's.
pub fn recall(ctx: &Context<'_>, i: usize) -> Option<Vec<Finding>> {
    let s = ctx.hierarchy.steps.get(i)?;
    let n = ctx.trajectory.steps.len();
    let cells = ctx.facts.findings.get(ctx.ground_truth).get_or_init(|| (0..n).map(|_| OnceLock::new()).collect());
    let own = match cells.get(i) {
        Some(cell) => cell.get_or_init(|| own_findings(ctx, i)).as_ref()?,
        None => &own_findings(ctx, i)?,
    };
    let [before, middle, after] = own.as_ref();
    let mut f = before.clone();
    irrelevant(ctx, s, &mut f);
    f.extend(middle.iter().cloned());
    answer_type(ctx, s, &mut f);
    f.extend(after.iter().cloned());
    (!f.is_empty()).then_some(f)
}

/// Whether step `i`'s own findings (those of [`recall`] that read neither the prior nor the
/// graph, computed once per step) hold one that `keep` accepts; without cloning them.
pub(crate) fn own_finding(ctx: &Context<'_>, i: usize, keep: impl Fn(&Finding) -> bool) -> bool {
    let n = ctx.trajectory.steps.len();
    if i >= n {
        return false;
    }
    let cells = ctx.facts.findings.get(ctx.ground_truth).get_or_init(|| (0..n).map(|_| OnceLock::new()).collect());
    cells[i].get_or_init(|| own_findings(ctx, i)).as_ref().is_some_and(|own| own.iter().flatten().any(keep))
}

/// The findings of one step that read neither the prior nor the graph, in recall's order: those
/// before the off-task check, those between it and the answer-type check, those after.
pub type OwnFindings = Box<[Vec<Finding>; 3]>;

/// [`recall`]'s findings that read neither the prior nor the graph; `None` for a step that is
/// never the error (the system policy, the task statement, a tool output that is not an
/// agent's report).
fn own_findings(ctx: &Context<'_>, i: usize) -> Option<OwnFindings> {
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
    lookup::claimed_lookup(ctx, i, &mut f);
    versions::recalled_version(ctx, i, &mut f);
    versions::told_supported_after_drop(ctx, i, &mut f);
    // A call the user refused is the user's decision, not the agent's error.
    let refused = result_of(ctx, i).is_some_and(|r| refused_by_user(ctx, r));
    // A check that reproduces the failure the task reports, or that fails right after an edit
    // (the edit's failure, found at the edit), is no rejected state change.
    let check =
        result_of(ctx, i).is_some_and(|r| reproduces_reported_failure(ctx, r)) || edit_checked_by(ctx, i).is_some();
    // An edit the editor refused and the agent then made again is part of the work; so is a
    // check that passed again after a fix, code run again corrected, or a missing program run
    // another way ([`recovery::recovered_by_another_command`]); so is a look-up of a program that
    // found nothing (`which hatch && hatch run test`, [`guard_found_nothing`]): nothing ran.
    // An edit the editor refused changed nothing: going on as if it were made is the error.
    if !refused
        && !coding::refused_edit(ctx, i)
        && !coding::recovered_edit(ctx, i)
        && !coding::edit_checked_at_once(ctx, i)
        && !recovery::recovered_by_another_command(ctx, i)
        && !recovery::missing_program_tried_again(ctx, i)
        && !result_of(ctx, i).is_some_and(|r| guard_found_nothing(ctx, r))
        && (check || !actions::rejected(ctx, i, &mut f))
    {
        failed_action(ctx, i, &mut f);
    }
    coding::silent_noop(ctx, i, &mut f);
    coding::expectation_rewritten(ctx, i, &mut f);
    coding::failing_test_removed(ctx, i, &mut f);
    coding::timing_waited_out(ctx, i, &mut f);
    coding::overbroad_substitution(ctx, i, &mut f);
    coding::outside_repository(ctx, i, &mut f);
    coding::masks_error(ctx, i, &mut f);
    coding::unsafe_fix(ctx, i, &mut f);
    coding::dedupe_incomplete(ctx, i, &mut f);
    coding::pinned_past_constraint(ctx, i, &mut f);
    runtime::newer_than_stressed(ctx, i, &mut f);
    coding::other_copy_edited(ctx, i, &mut f);
    traced::untraced_edit(ctx, i, &mut f);
    procedure::skipped_procedure_step(ctx, i, &mut f);
    procedure::dropped_requirement(ctx, i, &mut f);
    environment::other_environment_context(ctx, i, &mut f);
    bounds::off_by_one_bound(ctx, i, &mut f);
    bounds::month_end_as_exclusive(ctx, i, &mut f);
    quotes::misattributed_quote(ctx, i, &mut f);
    inexact::bound_taken_as_exact(ctx, i, &mut f);
    conversion::converted_wrong_way(ctx, i, &mut f);
    clicked::other_namesake_opened(ctx, i, &mut f);
    rows::neighbour_line_url(ctx, i, &mut f);
    rows::value_from_other_record(ctx, i, &mut f);
    reproduction::copy_of_reproduced_module(ctx, i, &mut f);
    coding::rerun_unchanged(ctx, i, &mut f);
    coding::pinned_vulnerable(ctx, i, &mut f);
    callers::callers_broken(ctx, i, &mut f);
    side_effects::wider_than_task(ctx, i, &mut f);
    if !(i > 0 && refused_by_user(ctx, i - 1)) {
        ignored_error(ctx, i, &mut f);
    }
    actions::unconfirmed(ctx, i, &mut f);
    actions::argument_mismatch(ctx, i, &mut f);
    confirmed::beyond_confirmed(ctx, i, &mut f);
    actions::off_brief(ctx, i, &mut f);
    actions::query_off_instruction(ctx, i, &mut f);
    ordering::reversed_order(ctx, i, &mut f);
    actions::converted_backwards(ctx, i, &mut f);
    actions::retry_drift(ctx, i, &mut f);
    actions::blind_retry(ctx, i, &mut f);
    actions::wrong_record(ctx, i, &mut f);
    picked::picked_other_record(ctx, i, &mut f);
    picked::restated_against_result(ctx, i, &mut f);
    outcome::outcome_against_source(ctx, i, &mut f);
    passed::told_passing_after_failure(ctx, i, &mut f);
    actions::paired_with_other_record(ctx, i, &mut f);
    targets::sibling_file_edited(ctx, i, &mut f);
    targets::neighbouring_commit(ctx, i, &mut f);
    targets::defaulted_target(ctx, i, &mut f);
    stale::superseded_value(ctx, i, &mut f);
    stale::superseded_revision(ctx, i, &mut f);
    stale::superseded_record_read(ctx, i, &mut f);
    stale::replaced_figure(ctx, i, &mut f);
    stale::consumed_since(ctx, i, &mut f);
    actions::currency_left_out(ctx, i, &mut f);
    grounding::unavailable(ctx, i, &mut f);
    grounding::count_mismatch(ctx, i, &mut f);
    grounding::ignored_result(ctx, i, &mut f);
    grounding::told_not_applied(ctx, i, &mut f);
    actions::told_made_over_rejected(ctx, i, &mut f);
    tables::wrong_column(ctx, i, &mut f);
    tables::wrong_row(ctx, i, &mut f);
    units::minor_units_as_major(ctx, i, &mut f);
    units::utc_as_local(ctx, i, &mut f);
    units::local_as_utc(ctx, i, &mut f);
    zones::other_season_offset(ctx, i, &mut f);
    zones::wrong_day(ctx, i, &mut f);
    zones::day_in_other_zone(ctx, i, &mut f);
    zones::fixed_offset_across_change(ctx, i, &mut f);
    zones::utc_time_given_an_offset(ctx, i, &mut f);
    searched::none_wider_than_search(ctx, i, &mut f);
    searched::none_from_narrow_query(ctx, i, &mut f);
    units::scaled_wrong(ctx, i, &mut f);
    units::unscaled_duration(ctx, i, &mut f);
    units::currency_relabelled(ctx, i, &mut f);
    periods::other_year_figure(ctx, i, &mut f);
    sources::outdated_source(ctx, i, &mut f);
    grounding::promised_time(ctx, i, &mut f);
    grounding::neighbouring_date(ctx, i, &mut f);
    // `irrelevant` (reads the prior) goes here.
    let mut g = Vec::new();
    wrong_delegation(ctx, i, &mut g);
    misrouted(ctx, i, &mut g);
    constraints::dropped_constraint(ctx, i, &mut g);
    constraints::flag_against_request(ctx, i, &mut g);
    constraints::stay_length_against_request(ctx, i, &mut g);
    constraints::broken_requirement(ctx, i, &mut g);
    premature(ctx, s, &mut g);
    repeated(ctx, i, &mut g);
    wrong_value(ctx, i, &mut g);
    // `answer_type` (reads the prior) goes here.
    let mut h = Vec::new();
    blocking_change(ctx, i, &mut h);
    assertion::unverified(ctx, i, &mut h);
    progress::no_progress(ctx, i, &mut h);
    coding::reproduction_not_rerun(ctx, i, &mut h);
    reproduction::claim_against_expected(ctx, i, &mut h);
    instructions::partial_check(ctx, i, &mut h);
    instructions::stopped_early(ctx, i, &mut h);
    actions::claimed_over_failure(ctx, i, &mut h);
    instructions::partial_search(ctx, i, &mut h);
    instructions::scoped_search_reported_whole(ctx, i, &mut h);
    instructions::omitted_hits(ctx, i, &mut h);
    instructions::forbidden_change(ctx, i, &mut h);
    instructions::edits_file_marked_frozen(ctx, i, &mut h);
    instructions::dropped_kept_name(ctx, i, &mut h);
    instructions::refusal_bypassed(ctx, i, &mut h);
    statistics::wrong_statistic(ctx, i, &mut h);
    statistics::wrong_base(ctx, i, &mut h);
    arithmetic::miscalculation(ctx, i, &mut h);
    Some(Box::new([f, g, h]))
}

/// A tool result that is really an agent's own output (a browsing agent's report).
pub(crate) fn is_agent_output(ctx: &Context<'_>, i: usize) -> bool {
    let s = &ctx.hierarchy.steps[i];
    matches!(s.action, Action::Search | Action::ReadFile)
}

/// The JSON object of a call's arguments: the text from its first `{` to its last `}` (the shape
/// every format falat reads writes a call in: `{"city": "Paris"}`, `name({…})`, a `tool_use`
/// input). `None` when the text holds no such object, or when it does not parse.
pub(super) fn call_arguments(content: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    let (start, end) = (content.find('{')?, content.rfind('}')?);
    match serde_json::from_str::<serde_json::Value>(content.get(start..=end)?).ok()? {
        serde_json::Value::Object(m) => Some(m),
        _ => None,
    }
}

#[cfg(test)]
mod call_arguments_tests {
    use super::call_arguments;

    #[test]
    fn reads_the_object_between_first_and_last_brace() {
        let args = call_arguments(r#"get_weather({"city": "Paris", "days": 3})"#).unwrap();
        assert_eq!(args.get("city").and_then(|v| v.as_str()), Some("Paris"));
        assert_eq!(args.get("days").and_then(|v| v.as_u64()), Some(3));
        assert!(call_arguments(r#"{"nested": {"a": 1}}"#).unwrap().contains_key("nested"));
    }

    #[test]
    fn text_without_an_object_has_no_arguments() {
        // A closing brace before the opening one must not panic (trace text is untrusted).
        assert!(call_arguments("} then {").is_none());
        assert!(call_arguments("ls -la").is_none());
        assert!(call_arguments("{not json}").is_none());
        assert!(call_arguments("{").is_none());
    }
}

/// The strings and numbers of a JSON value, nested ones too, in order: the one walk of a value's
/// leaves (a call's string arguments, its number arguments, a tool result's values).
pub(super) fn json_leaves<'v>(v: &'v serde_json::Value, out: &mut Vec<&'v serde_json::Value>) {
    match v {
        serde_json::Value::String(_) | serde_json::Value::Number(_) => out.push(v),
        serde_json::Value::Array(a) => a.iter().for_each(|x| json_leaves(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| json_leaves(x, out)),
        _ => {}
    }
}

/// The string values of a call's JSON arguments (`run_python({"code": "…"})`, a draft's
/// `body`), nested ones too, one per line, JSON escapes undone; `None` when the call's text holds
/// no JSON object.
pub(super) fn call_strings(content: &str) -> Option<String> {
    let args = call_arguments(content)?;
    let mut leaves = Vec::new();
    args.values().for_each(|v| json_leaves(v, &mut leaves));
    let out: Vec<String> = leaves.into_iter().filter_map(|v| v.as_str().map(str::to_string)).collect();
    Some(out.join("\n"))
}

fn finding(signal: Signal, weight: f32, evidence: impl Into<Prose>) -> Finding {
    Finding { signal, weight, evidence: evidence.into().sanitized(200) }
}

fn unsourced(ctx: &Context<'_>, s: &StepSummary, out: &mut Vec<Finding>) {
    // Plans state what to find out (guesses included) and tool outputs are sources: neither claims.
    if matches!(s.action, Action::Search | Action::ReadFile | Action::ToolOutput | Action::Coordinate | Action::Plan) {
        return;
    }
    // The user is a source: a figure a user's turn gives (a fee from a notification) is news,
    // not an invented value.
    if actions::is_human(&ctx.trajectory.steps[s.index]) {
        return;
    }
    // The reply right after another agent's code, holding no code itself, is what running the
    // code printed (a Magentic-One terminal's message): its figures are computed, not invented.
    // An orchestrator's turn between them that only hands the code over ("Executor, please run
    // the code block Coder just wrote") does not break the link.
    let prev = code_before_reply(ctx, s.index);
    // In a trace that records no task, a step before anything was observed has only the
    // unrecorded prompt to go on: nothing it states lacks a source for certain.
    if derivation::before_unrecorded_prompt_ends(ctx, s.index) {
        return;
    }
    if let Some(p) = prev
        && ctx.hierarchy.steps[p].action == Action::WriteCode
        && ctx.trajectory.steps[p].agent != ctx.trajectory.steps[s.index].agent
        && s.action != Action::WriteCode
        && s.kind == StepKind::Message
    {
        return;
    }
    let ev = &ctx.hierarchy.evidence[s.index];
    // Only values the step states: not those in a command, a call's input, a query, a line
    // number, an id... (`evidence::ValueContext`).
    let numeric: Vec<&str> = s
        .introduces
        .iter()
        .filter(|k| {
            ev.iter().any(|e| {
                &e.key == *k && matches!(e.kind, EvidenceKind::Number | EvidenceKind::Date) && e.context.is_none()
            })
        })
        .map(String::as_str)
        .collect();
    // A sum or difference of the step's own figures is worked out, not invented.
    let operands: Vec<f64> = ev
        .iter()
        .filter(|e| e.kind == EvidenceKind::Number && !evidence::is_trivial_number(&e.key))
        .filter_map(|e| e.key.parse::<f64>().ok())
        .collect();
    let numeric: Vec<&str> = numeric.into_iter().filter(|k| !derived(k, &operands)).collect();
    // A rate the step states as a percentage, written as a factor ("7.5 %" then "× 0.925").
    let content = &ctx.trajectory.steps[s.index].content;
    // Whether the step writes a temperature at all (a degree sign or "degree"), read once.
    let degrees = content.contains(['°', 'º']) || content.contains("egree");
    let percents: Vec<f64> = ev
        .iter()
        .filter(|e| {
            e.kind == EvidenceKind::Number
                && (e.text(content).contains('%')
                    || content[e.span.end..].trim_start_matches(' ').starts_with(['%', '٪']))
        })
        .filter_map(|e| e.key.trim_end_matches('%').trim().parse::<f64>().ok())
        .collect();
    let numeric: Vec<&str> = numeric.into_iter().filter(|k| !rate_factor(k, &percents)).collect();
    // A percentage the step states that is the share of two of its own figures ("412 of the 9,873
    // orders, i.e. 4.2%").
    let numeric: Vec<&str> = numeric.into_iter().filter(|k| !share_of(k, &percents, &operands)).collect();
    // An amount that is a percentage the step states of another of its figures: "78.40 EUR
    // (incl. 7% VAT = 5.13 EUR)", a 15% tip of 42.00, a net price before the tax.
    let numeric: Vec<&str> = numeric.into_iter().filter(|k| !percent_of(k, &percents, &operands)).collect();
    // A change between two of its own figures that the step states as a percentage ("€50,532.45,
    // up 22.9% on Q2 (€41,120.70)"), and a count or amount that is the total of a column of the
    // step's own table ("168 expense lines" over lines of 61, 33 and 74).
    let totals = tables::column_totals(content);
    let numeric: Vec<&str> = numeric
        .into_iter()
        .filter(|k| {
            !ev.iter().any(|e| {
                e.kind == EvidenceKind::Number
                    && e.key == *k
                    && (change_of(content, e.span.start, k, &percents, &operands) || column_total(k, &totals))
            })
        })
        .collect();
    // A result the step works out in writing ("14 + 31 + 3 = 48", "10.125 × 0.20 = 2.025"), or a
    // part of a figure from an earlier step that it breaks down in writing ("3630, which is 3600 +
    // 30", 3630 from the task).
    let sourced: Vec<(f64, usize)> = ev
        .iter()
        .filter(|e| e.kind == EvidenceKind::Number && !evidence::is_trivial_number(&e.key))
        .filter(|e| first_written(ctx, &e.key).is_some_and(|j| j < s.index))
        .filter_map(|e| Some((e.key.parse::<f64>().ok()?, e.span.start)))
        .collect();
    // A product or quotient of two sourced figures of its sentence, or of one the step worked out
    // so before ("300 boxes at £61.50 each come to £18,450.00. At a rate of 1.1873 that is
    // €21,905.69").
    // Worked out only when some value is still unsourced: this reads every number of the step.
    // `worked` holds the figures worked out from sourced factors directly (a total), which a
    // conversion in a later sentence may rest on; `chained` those resting on one of them.
    let (mut worked, mut chained): (Vec<(f64, usize)>, Vec<usize>) = (Vec::new(), Vec::new());
    if !numeric.is_empty() {
        let factors: Vec<(f64, usize)> = ev
            .iter()
            .filter(|e| e.kind == EvidenceKind::Number && e.context.is_none())
            .filter_map(|e| Some((e.key.parse::<f64>().ok()?, e.span.start)))
            .filter(|&(x, _)| x.fract() == 0.0 && (2.0..=10.0).contains(&x))
            .chain(sourced.iter().copied())
            .collect();
        let asked = derivation::asked(ctx, s.index);
        let mut numbers: Vec<_> = ev.iter().filter(|e| e.kind == EvidenceKind::Number).collect();
        numbers.sort_by_key(|e| e.span.start);
        for e in numbers {
            let Ok(x) = e.key.parse::<f64>() else { continue };
            if derivation::sourced_product(content, e.span.start, &e.key, &factors, &[], &asked) {
                worked.push((x, e.span.start));
            } else if derivation::sourced_product(content, e.span.start, &e.key, &factors, &worked, &[]) {
                chained.push(e.span.start);
            }
        }
    }
    let numeric: Vec<&str> = numeric
        .into_iter()
        .filter(|k| {
            !ev.iter().any(|e| {
                e.kind == EvidenceKind::Number
                    && e.key == *k
                    && (worked.iter().any(|&(_, p)| p == e.span.start)
                        || chained.contains(&e.span.start)
                        || written_result(content, e.span.start, k)
                        || written_part(content, e.span.start, &sourced)
                        || rounded_form(content, e.span.start, k, &sourced)
                        // A duration between two clock times the step writes ("arr 11:30 … 2.5
                        // hours before your 14:00 meeting").
                        || clock_gap(content, e.span.start, k)
                        // A clock time worked out from another by a duration the step states
                        // ("departs 9:50 PM; boarding closes 15 min before, so be there by 9:35").
                        || clock_shift(content, e.span.start)
                        // A value restated in another unit of the same measure ("2.3 km"
                        // after "2300 m").
                        || unit_restated(content, e.span.start, k)
                            .iter()
                            .any(|src| first_written(ctx, src).is_some_and(|j| j < s.index))
                        // An earlier size or duration in another unit, rounded ("1.7 MB" after
                        // "1712 kB", "8.2 GB" after `"remaining_mb": 8210`).
                        || unit_rounded(ctx, s.index, content, e.span.start, k)
                        // The sum or difference of two figures the step names, each sourced
                        // ("ship 800 from here and 400 from there" for an order of 1,200).
                        || derivation::sourced_sum(content, e.span.start, k, &sourced)
                        // The time between two timestamps of one earlier record ("took 77
                        // minutes" after `started_at` 08:48, `finished_at` 10:05).
                        || derivation::timestamp_gap(ctx, s.index, content, e.span.start, k)
                        // A rounded form of a finer figure of its sentence or an earlier step
                        // ("about 1,200" after 1,187, "about 3.4 million" after 3,412,880).
                        || derivation::rounded_figure(ctx, s.index, content, e.span.start, k)
                        // A longer figure of an earlier step cut to the decimals it is written
                        // with ("= 0.2434" after a calculator's 0.243399117).
                        || derivation::plain_rounding(ctx, s.index, k)
                        // A temperature converted between °C and °F, or a finer reading cut to
                        // its decimals ("95°F (35.0°C)", "89.1°F" after 89.06).
                        || degrees && derivation::temperature(ctx, s.index, content, e.span.start, e.span.end, k)
                        // A growth factor 1 + r of a rate the step or an earlier one writes
                        // ("1.2434^4" after a CAGR of 0.2434).
                        || derivation::growth_factor(ctx, s.index, content, k)
                        // A ratio the line writes, as a percentage or its complement ("by 18%
                        // (HR 0.82)").
                        || derivation::ratio_percent(content, e.span.start, k, &percents)
                        // A bound an earlier number and a fraction the run wrote give ("up to
                        // 4,140 s" for 3600 s and a 15% jitter).
                        || derivation::spread_bound(ctx, s.index, content, e.span.start, k)
                        // No task recorded: a value a later tool output confirms.
                        || derivation::confirmed_later(ctx, s.index, e.text(content)))
            })
        })
        .collect();
    // "No earlier source" must hold as written: a number some earlier step writes in another
    // form (inside an id such as `H-88120`, a timestamp, a fraction 0.7 for 70 %) has one.
    let numeric: Vec<&str> =
        numeric.into_iter().filter(|k| first_written(ctx, k).is_none_or(|j| j >= s.index)).collect();
    // A date given without its year and dated by the step ("Friday Dec 12" → `2025-12-12`), and
    // that year as the step writes it in the date, are the given date, not invented.
    let completed: Vec<&str> = ev
        .iter()
        .filter(|e| e.kind == EvidenceKind::Date && completes_given_date(ctx, s.index, &e.key))
        .map(|e| e.key.as_str())
        .collect();
    let numeric: Vec<&str> = numeric
        .into_iter()
        .filter(|k| !completed.iter().any(|d| d == k || d.strip_prefix(k).is_some_and(|r| r.starts_with('-'))))
        .collect();
    // A total that the amounts before it add up to is worked out too ("Total: 78.65" after three
    // lines of 25.00, 34.90 and 18.75).
    let numeric: Vec<&str> =
        numeric.into_iter().filter(|k| !matches!(total_check(content, ev, k), Some(Total::Adds))).collect();
    // A value a coding agent names as the fix ("`m` is 1 instead of 60") and then writes in an
    // edit whose check passes is its design, checked by the run, not an invented fact.
    let numeric: Vec<&str> = numeric.into_iter().filter(|k| !written_and_checked(ctx, s.index, k)).collect();
    // A value an agent's reasoning expects and its next tool output then shows ("fakeredis 2.26
    // is already installed", then the version printed) is what it went to check, not a claim.
    let numeric: Vec<&str> = numeric.into_iter().filter(|k| !checked_next(ctx, s.index, k)).collect();
    // A figure a coding agent works out while reasoning ("at 23:59:58 the window is bucket 1439")
    // that a program it then runs prints, the program's text not holding it, is what the run went
    // on to compute: checked, not invented.
    let numeric: Vec<&str> = numeric.into_iter().filter(|k| !computed_later(ctx, s.index, k)).collect();
    // The number of tests a run reports passed over its parts ("all 73 tests pass" after result
    // lines of 58, 9, 2 and 4 passed) is that run's total, counted, not invented.
    let numeric: Vec<&str> = numeric.into_iter().filter(|k| !recovery::passed_total(ctx, s.index, k)).collect();
    // A count of a list's entries that agrees with the list a tool output gave ("14 open P1
    // tickets" after a list of 14, "33" over two pages of 25 and 8) is counted, not invented.
    // A count that disagrees with that list is the count-mismatch finding's: its number has a
    // source, the list it miscounts, and is not told a second time as one with none.
    let counted = if numeric.is_empty() { Vec::new() } else { grounding::counted(ctx, s.index) };
    let numeric: Vec<&str> = numeric
        .into_iter()
        .filter(|k| {
            !ev.iter().any(|e| e.kind == EvidenceKind::Number && e.key == *k && counted.contains(&e.span.start))
        })
        .collect();
    if numeric.is_empty() {
        return;
    }
    let w = (numeric.len() as f32 * weights::UNSOURCED_PER_VALUE).min(weights::UNSOURCED_MAX);
    let shown: Vec<&str> = numeric.iter().take(5).copied().collect();
    let hint = shown
        .iter()
        .find_map(|k| match total_check(content, ev, k) {
            Some(Total::Near(hint)) => Some(hint),
            _ => None,
        })
        .unwrap_or_default();
    out.push(finding(Signal::UnsourcedValue, w, format!("states {} with no earlier source{hint}", shown.join(", "))));
}

/// How many steps after a stated value [`written_and_checked`] looks for the edit that writes it.
const FIX_WINDOW: usize = 200;

/// Whether a later edit of the agent of step `i` ([`edits`]) within [`FIX_WINDOW`] steps writes
/// the number `key` (as a whole word of its text) and the first check after that edit (a call
/// within [`RERUN_WINDOW`] steps) ([`edit_checked_by`]) ran and did not
/// fail ([`failed_check_after_edit`]).
fn written_and_checked(ctx: &Context<'_>, i: usize, key: &str) -> bool {
    let t = ctx.trajectory;
    let agent = &t.steps[i].agent;
    let n = t.steps.len();
    // Bounded like the other coding rules: a long run is not read to its end for every value.
    (i + 1..n.min(i + 1 + FIX_WINDOW)).any(|e| {
        t.steps[e].agent == *agent
            && contains_word(&t.steps[e].content, key)
            && edits(t, e)
            && (e + 1..n.min(e + 1 + RERUN_WINDOW))
                .find(|&j| t.steps[j].kind == StepKind::ToolCall && !edits(t, j) && !refused_call(ctx, j))
                .is_some_and(|c| edit_checked_by(ctx, c) == Some(e))
            && failed_check_after_edit(ctx, e).is_none()
    })
}

/// How close a sum of the amounts before a total must come to it, as a share of the total, for
/// the reason to show it as the total's arithmetic slip.
const NEAR_TOTAL: f64 = 0.02;

/// What the amounts before a total add up to ([`total_check`]).
enum Total {
    /// Two to four of them give it exactly (at its written precision): the total is worked out.
    Adds,
    /// None gives it, but some come within [`NEAR_TOTAL`] of it: the reason's hint, `"; the amounts before
    /// it add up to 83.60 (78.65 + 4.95)"`.
    Near(String),
}

/// For a number the step calls a total ("Total to pay: 84.60"), whether the amounts written
/// before it in the same step add up to it, or come near it without giving it: then the reader
/// sees the arithmetic slip instead of only "no earlier source". `None` when no word of a total
/// ("total", "sum", "altogether", "in all", "to pay") stands in the 24 bytes before the number, or
/// no sum of two to four amounts comes within [`NEAR_TOTAL`] (2 %) of it. At most the last 12 amounts (numbers
/// over 10 or with decimals, not in context) before it are tried.
fn total_check(content: &str, ev: &[evidence::Evidence], key: &str) -> Option<Total> {
    let e = ev.iter().find(|e| e.kind == EvidenceKind::Number && e.key == key)?;
    static TOTAL_WORD: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"(?i)(total|\bsum|\baltogether|\bin all|\bto pay)\b").unwrap());
    // A total word after the amount: "€581.96 in total", "1,204 altogether".
    static TOTAL_AFTER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)^[^\w\n]{0,3}(?:[a-z]{1,3}[ \t]+)?(?:in total|total|altogether|in all)\b").unwrap()
    });
    let mut from = e.span.start.saturating_sub(24);
    while !content.is_char_boundary(from) {
        from -= 1;
    }
    if !TOTAL_WORD.is_match(content.get(from..e.span.start)?) && !TOTAL_AFTER.is_match(&content[e.span.end..]) {
        return None;
    }
    let v: f64 = key.parse().ok()?;
    // The precision as written ("84.60"), not as normalised ("84.6").
    let written = e.text(content).trim();
    let decimals =
        written.split_once('.').map_or(0, |(_, d)| d.chars().take_while(char::is_ascii_digit).count()) as i32;
    let tol = 0.5 * 10f64.powi(-decimals.max(2)) + 1e-9;
    // A total in a currency adds amounts in that currency ("€581.96" adds the € amounts, not the
    // clock times and distances between them).
    let currency_before = |start: usize| {
        content[..start]
            .trim_end_matches([' ', '\u{a0}'])
            .chars()
            .next_back()
            .filter(|c| matches!(c, '€' | '$' | '£' | '¥'))
    };
    let currency = currency_before(e.span.start);
    let amounts: Vec<(f64, &str)> = ev
        .iter()
        .filter(|a| a.kind == EvidenceKind::Number && a.span.end <= e.span.start && a.context.is_none())
        .filter(|a| currency.is_none() || currency_before(a.span.start) == currency)
        .filter_map(|a| {
            let x: f64 = a.key.parse().ok()?;
            let text = a.text(content).trim();
            (x > 10.0 || text.contains('.')).then_some((x, text))
        })
        .collect();
    let mut amounts: Vec<(f64, String)> =
        amounts[amounts.len().saturating_sub(12)..].iter().map(|&(x, t)| (x, t.to_string())).collect();
    // An amount per unit ("€139/night", "12.50 per ticket", "€8 each") counts times the number
    // of units the step states ("3 nights", "4 tickets"): at most 4 such products.
    static PER_UNIT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)^[\s\u{a0}]*(?:/[\s\u{a0}]*[a-z]+|per[\s\u{a0}]+[a-z]+|each|a[\s\u{a0}]+(?:night|day|week|month|person|head))\b").unwrap()
    });
    static UNITS: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\b([2-9]|[12]\d|3[01])[\s\u{a0}]+([a-z]{2,}s)\b").unwrap());
    let counts: Vec<u32> = {
        let mut c: Vec<u32> = UNITS.captures_iter(content).filter_map(|c| c[1].parse().ok()).take(8).collect();
        c.sort_unstable();
        c.dedup();
        c
    };
    let per_unit: Vec<(f64, String)> = ev
        .iter()
        .filter(|a| a.kind == EvidenceKind::Number && a.span.end <= e.span.start && a.context.is_none())
        .filter(|a| PER_UNIT.is_match(&content[a.span.end..]))
        .filter(|a| currency.is_none() || currency_before(a.span.start) == currency)
        .filter_map(|a| Some((a.key.parse::<f64>().ok()?, a.text(content).trim().to_string())))
        .flat_map(|(x, t)| counts.iter().map(move |&n| (x * f64::from(n), format!("{t} × {n}"))))
        .take(4)
        .collect();
    amounts.extend(per_unit);
    let amounts = &amounts[..];
    let n = amounts.len();
    let mut best: Option<(f64, Vec<usize>)> = None;
    // Every choice of two to four amounts, in order; fewer terms first, so a tie keeps the
    // shortest sum (a subtotal and shipping rather than every line).
    let masks = (2..=4u32).flat_map(|k| (1u32..(1 << n)).filter(move |m| m.count_ones() == k));
    for mask in masks {
        let picked: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
        let sum: f64 = picked.iter().map(|&i| amounts[i].0).sum();
        if (sum - v).abs() <= tol {
            return Some(Total::Adds);
        }
        if best.as_ref().is_none_or(|(b, _)| (sum - v).abs() < (b - v).abs() - 1e-9) {
            best = Some((sum, picked));
        }
    }
    let (sum, picked) = best.filter(|(sum, _)| (sum - v).abs() <= NEAR_TOTAL * v.abs())?;
    let terms: Vec<&str> = picked.iter().map(|&i| amounts[i].1.as_str()).collect();
    // Written at the finest precision of the total and its terms.
    let places = |w: &str| w.split_once('.').map_or(0, |(_, d)| d.chars().take_while(char::is_ascii_digit).count());
    let precision = terms.iter().map(|t| places(t)).chain([decimals.max(0) as usize]).max().unwrap_or(0);
    Some(Total::Near(format!("; the amounts before it add up to {sum:.precision$} ({})", terms.join(" + "))))
}

/// The first step whose text writes the number `key` (normalised, [`evidence::normalize_number`])
/// or the date `key` (its ISO key, [`evidence::date_key`]):
/// as a run of digits not part of a longer one and with no letter around it ([`standalone`]:
/// `88120` in `H-88120`, `14` and `12` in `2025-03-04T14:12:00Z`, not `347` in `a347f`), or, for a percentage, as the fraction it is (`0.7` for `70`),
/// with its thousands grouped by spaces (`78 745` for `78745`), or with a decimal comma (`78,40`
/// for `78.4`); a negative `key` is also found written without its sign (`-7` for "decreased by
/// 7.0%"). One pass over the run's text, built on first use. `None` when no step writes it.
pub(crate) fn first_written(ctx: &Context<'_>, key: &str) -> Option<usize> {
    static DIGITS: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\d+(?:,\d{3})*(?:\.\d+)?").unwrap());
    static DECIMAL_COMMA: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\d+,\d{1,2}").unwrap());
    static GROUPED: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\d{1,3}(?:[ \u{a0}\u{202f}\u{2009}]\d{3})+").unwrap());
    let index = ctx.facts.first_written.get_or_init(|| {
        let mut first: HashMap<String, usize> = HashMap::new();
        for (i, step) in ctx.trajectory.steps.iter().enumerate() {
            // Dates by their ISO key (`2025-03-04`, however the step writes them).
            for e in ctx.hierarchy.evidence[i].iter().filter(|e| e.kind == EvidenceKind::Date) {
                first.entry(e.key.clone()).or_insert(i);
            }
            for m in DIGITS.find_iter(&step.content) {
                if !standalone(&step.content, m.start(), m.end()) {
                    continue;
                }
                let n = evidence::normalize_number(m.as_str());
                if n.is_empty() {
                    continue;
                }
                // A fraction with at most two decimals is also the percentage it writes.
                if let Some((_, d)) = n.split_once('.')
                    && d.len() <= 2
                    && let Ok(v) = n.parse::<f64>()
                    && v < 1.0
                {
                    first.entry(evidence::normalize_number(&format!("{:.0}", v * 100.0))).or_insert(i);
                }
                first.entry(n).or_insert(i);
            }
            // A decimal comma ("78,40 EUR", "5,13"): one or two digits after the comma, not a list
            // of numbers ("3,14,15") nor a thousands group ("78,400"). The number is also the
            // decimal it writes.
            for m in DECIMAL_COMMA.find_iter(&step.content) {
                let text = &step.content;
                let before = text[..m.start()].chars().next_back();
                let after = &text[m.end()..];
                if before.is_some_and(|c| c.is_ascii_digit() || c == '.' || c == ',')
                    || after.starts_with(|c: char| c.is_ascii_digit())
                    || after.starts_with(',') && after[1..].starts_with(|c: char| c.is_ascii_digit())
                    || !standalone(text, m.start(), m.end())
                {
                    continue;
                }
                first.entry(evidence::normalize_number(&m.as_str().replace(',', "."))).or_insert(i);
            }
            // Thousands grouped by spaces ("78 745", "1 204 330"; also no-break and thin spaces).
            for m in GROUPED.find_iter(&step.content) {
                let text = &step.content;
                let before = text[..m.start()].chars().next_back();
                let after = text[m.end()..].chars().next();
                if before.is_some_and(|c| c.is_ascii_digit() || c == '.' || c == ',')
                    || after.is_some_and(|c| c.is_ascii_alphanumeric())
                    || !standalone(text, m.start(), m.end())
                {
                    continue;
                }
                let digits: String = m.as_str().chars().filter(char::is_ascii_digit).collect();
                first.entry(evidence::normalize_number(&digits)).or_insert(i);
            }
            // A month and day with a month name, with or without a year ("Friday Dec 12", "12th
            // of December"): by its ISO 8601 key without a year, `--12-12`.
            for key in month_days(&step.content) {
                first.entry(key).or_insert(i);
            }
        }
        first
    });
    // The index holds digits without their sign: a change told as "-7.0%" after "decreased by
    // 7.0%" is the figure the run wrote.
    index.get(key).or_else(|| key.strip_prefix('-').and_then(|k| index.get(k))).copied()
}

/// The month-and-day dates `text` writes with a month name ("Dec 12", "December 12th", "12 Dec",
/// "12th of December"), each as its ISO 8601 key without a year (`--12-12`). Dates written
/// with digits only (`12/12`) are not read: their order of day and month is not known.
fn month_days(text: &str) -> Vec<String> {
    static MONTH_DAY: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        let month = r"(?P<m{n}>jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?";
        regex::Regex::new(&format!(
            r"(?i)\b(?:{}\s+(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?|(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{})\b",
            month.replace("{n}", "1"),
            month.replace("{n}", "2")
        ))
        .unwrap()
    });
    if !text.bytes().any(|b| b.is_ascii_digit()) {
        return Vec::new();
    }
    MONTH_DAY
        .captures_iter(text)
        .filter_map(|c| {
            let (m, d) = match (c.name("m1"), c.name("d1")) {
                (Some(m), Some(d)) => (m, d),
                _ => (c.name("m2")?, c.name("d2")?),
            };
            let low = m.as_str().to_ascii_lowercase();
            let month = evidence::month_number(&low)?;
            let day: u32 = d.as_str().parse().ok()?;
            (1..=31).contains(&day).then(|| format!("--{month:02}-{day:02}"))
        })
        .collect()
}

/// Whether the date `key` (ISO, `2025-12-12`) completes with a year a month and day an earlier
/// step than `i` wrote without one ("Friday Dec 12" in the request): the agent dated what it
/// was given, it did not invent the date.
fn completes_given_date(ctx: &Context<'_>, i: usize, key: &str) -> bool {
    key.len() == 10
        && key.as_bytes()[4] == b'-'
        && key.get(5..).is_some_and(|md| first_written(ctx, &format!("--{md}")).is_some_and(|j| j < i))
}

/// Whether the digits at `start..end` of `text` are a number of their own: no ASCII letter right
/// before them and none after them but a unit of up to three letters (`48h`, `5km`; not a hex
/// hash `a347f` or `347f2c`), except the forms that write a value inside another one: an id's
/// prefix joined by `-` or `#` (`H-88120`), and an ISO timestamp's `T` and `Z`
/// (`2025-03-04T14:12:00Z`). A JSON escape (`\n`, `\t`, `\r`) right before them is no letter.
fn standalone(text: &str, start: usize, end: usize) -> bool {
    let bytes = text.as_bytes();
    let before = start.checked_sub(1).map(|k| bytes[k]);
    let after = bytes.get(end).copied();
    let timestamp_t = |k: usize| k > 0 && bytes[k - 1].is_ascii_digit();
    // A compound duration writes its parts after another part's unit (`30` in `1h30m`, `15` in
    // `2m15s`): a time unit right before, a digit before it, and a time unit or nothing after.
    let time_unit = |letters: &[u8]| matches!(letters, b"d" | b"h" | b"m" | b"s" | b"ms" | b"w");
    let compound_part = |k: usize| {
        let letters = bytes[..k].iter().rev().take_while(|b| b.is_ascii_alphabetic()).count();
        let unit_after = bytes[end..].iter().take_while(|b| b.is_ascii_alphabetic()).count();
        letters <= 2
            && time_unit(&bytes[k - letters..k])
            && k > letters
            && bytes[k - letters - 1].is_ascii_digit()
            && (unit_after == 0 || time_unit(&bytes[end..end + unit_after]))
    };
    // A JSON string escape right before the digits (`\n412G`, `\t25763`: a tool's output kept
    // as escaped JSON text) separates them like the line break or tab it stands for.
    let escaped = |k: usize| k >= 2 && bytes[k - 2] == b'\\' && matches!(bytes[k - 1], b'n' | b't' | b'r');
    let ok_before = match before {
        _ if escaped(start) => true,
        Some(b'T') => timestamp_t(start - 1),
        Some(b) if b.is_ascii_alphabetic() => compound_part(start),
        Some(_) => true,
        None => true,
    };
    // A unit of up to three letters may follow (`48h`, `5km`, `12ms`).
    let unit = bytes[end..].iter().take_while(|b| b.is_ascii_alphabetic()).count();
    let ok_after = match after {
        Some(b'Z') | Some(b'T') => true,
        Some(b) if b.is_ascii_alphabetic() => {
            unit <= 3 && bytes.get(end + unit).is_none_or(|b| !b.is_ascii_alphanumeric())
        }
        _ => true,
    };
    ok_before && ok_after
}

/// The numbers (normalised, [`evidence::normalize_number`]) that the value `key`, written in
/// `text` from byte `start` with its unit right after its digits ("2.3 km", "90min"), is in a neighbouring unit of
/// the same measure: `2300` for 2.3 km (metres), `0.45` for 450 m (kilometres), grams and
/// kilograms, millilitres and litres, milliseconds, seconds, minutes and hours, kB/MB/GB/TB
/// (by 1000 and 1024). Empty when no unit follows.
fn unit_restated(text: &str, start: usize, key: &str) -> Vec<String> {
    let Ok(v) = key.parse::<f64>() else { return Vec::new() };
    let factors: &[f64] = match unit_after(text, start).as_str() {
        "km" | "kg" | "l" | "litre" | "litres" | "liter" | "liters" => &[1000.0],
        "m" | "g" | "ml" => &[0.001],
        "s" | "sec" | "secs" | "second" | "seconds" => &[1000.0, 1.0 / 60.0],
        "ms" => &[0.001],
        "min" | "mins" | "minute" | "minutes" => &[60.0, 1.0 / 60.0],
        "h" | "hr" | "hrs" | "hour" | "hours" => &[60.0, 3600.0],
        "kb" | "mb" | "gb" | "tb" => &[1000.0, 1024.0, 0.001, 1.0 / 1024.0],
        _ => &[],
    };
    factors
        .iter()
        .map(|f| {
            let x = v * f;
            let written = format!("{x:.6}");
            let written = written.trim_end_matches('0').trim_end_matches('.');
            evidence::normalize_number(written)
        })
        .filter(|n| !n.is_empty())
        .collect()
}

/// Whether `key` is a rate the same step states as a percentage, written as a factor: `p / 100`,
/// `1 - p / 100` or `1 + p / 100` of one of `percents` (0.075, 0.925 or 1.075 beside "7.5 %"), at
/// the precision `key` is written with; a factor needs two decimals or more.
fn rate_factor(key: &str, percents: &[f64]) -> bool {
    let Ok(v) = key.parse::<f64>() else { return false };
    let decimals = key.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    if decimals < 2 || !(0.0..2.0).contains(&v) {
        return false;
    }
    let tol = 0.5 * 10f64.powi(-decimals) + 1e-9;
    percents.iter().any(|p| [p / 100.0, 1.0 - p / 100.0, 1.0 + p / 100.0].iter().any(|f| (f - v).abs() <= tol))
}

/// A clock time `H:MM` or `HH:MM` (24-hour), hours and minutes captured.
static CLOCK: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"\b([01]?\d|2[0-3]):([0-5]\d)\b").unwrap());

/// Half a unit of the last decimal place `key` is written with (`"22.9"` 0.05, `"168"` 0.5): how
/// far a worked-out value may lie from it and still be written so.
fn written_tolerance(key: &str) -> f64 {
    let decimals = key.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    0.5 * 10f64.powi(-decimals) + 1e-9
}

/// Whether the number `key` is the sum or the difference of two other numbers stated in the
/// same step, at the precision it is written with: a value worked out from the step's own figures
/// (a price difference, a total) is arithmetic, not an invented value. Only values with at least
/// three significant digits that are not years are tested (`100` = `50 + 50` or `2018` =
/// `2000 + 18` would match by coincidence); the operands are the step's numbers other than the
/// whole numbers 0 to 10 (`155` = `150 + 5` in a list counting by fives is no computation), at
/// most the first 40 of them.
fn derived(key: &str, operands: &[f64]) -> bool {
    let Ok(v) = key.parse::<f64>() else { return false };
    let significant = key.chars().filter(char::is_ascii_digit).collect::<String>();
    let significant = significant.trim_start_matches('0').trim_end_matches('0');
    let year = v.fract() == 0.0 && (1000.0..=2100.0).contains(&v);
    if significant.len() < 3 || year {
        return false;
    }
    let tol = written_tolerance(key);
    let ops: Vec<f64> = operands.iter().copied().filter(|x| (x - v).abs() > tol).take(40).collect();
    ops.iter()
        .enumerate()
        .any(|(i, &a)| ops[i + 1..].iter().any(|&b| ((a + b) - v).abs() <= tol || ((a - b).abs() - v).abs() <= tol))
}

/// Whether the number `key`, which the step states as a percentage (one of `percents`), is the
/// share `100 × a / b` of two other numbers the step states (`operands`, at most the first 12;
/// `a` < `b`), at the precision it is written with: "412 of the 9,873 orders, i.e. 4.2%".
fn share_of(key: &str, percents: &[f64], operands: &[f64]) -> bool {
    let Ok(v) = key.parse::<f64>() else { return false };
    if !percents.iter().any(|p| (p - v).abs() < 1e-9) {
        return false;
    }
    let tol = written_tolerance(key);
    let ops: Vec<f64> = operands.iter().copied().filter(|x| (x - v).abs() > tol && *x > 0.0).take(12).collect();
    ops.iter().any(|&a| ops.iter().any(|&b| a < b && (100.0 * a / b - v).abs() <= tol))
}

/// Whether the number `key`, which is no percentage the step states, is a percentage `p` of the
/// step (`percents`) of another of its numbers `a` (`operands`, at most the first 12), at the
/// precision it is written with: the part `a × p / 100` (a 15% tip), the part included in `a`
/// `a × p / (100 + p)` (the VAT in a gross amount) or what is left without it `a × 100 / (100 +
/// p)` (the net amount). Only values with at least three significant digits are tested, as in
/// [`derived`].
fn percent_of(key: &str, percents: &[f64], operands: &[f64]) -> bool {
    let Ok(v) = key.parse::<f64>() else { return false };
    let significant = key.chars().filter(char::is_ascii_digit).collect::<String>();
    if significant.trim_start_matches('0').trim_end_matches('0').len() < 3
        || percents.iter().any(|p| (p - v).abs() < 1e-9)
    {
        return false;
    }
    let tol = written_tolerance(key);
    let ops: Vec<f64> = operands.iter().copied().filter(|&a| a > v + tol).take(12).collect();
    percents.iter().filter(|&&p| p > 0.0 && p < 100.0).any(|&p| {
        ops.iter().any(|&a| {
            [a * p / 100.0, a * p / (100.0 + p), a * 100.0 / (100.0 + p)].iter().any(|x| (x - v).abs() <= tol)
        })
    })
}

/// The step whose code a reply of step `i` would be the output of: the nearest earlier step that
/// is not a thought, past at most two turns of a third agent that only hand the code over: a
/// coordinating or delegating message with no code block, or a message with no code block that
/// names the replying agent ("Executor, please run the code block Coder just wrote"). Looks at
/// most 8 steps back.
fn code_before_reply(ctx: &Context<'_>, i: usize) -> Option<usize> {
    let steps = &ctx.trajectory.steps;
    let mut handed_over = 0;
    for j in (i.saturating_sub(8)..i).rev() {
        let step = &steps[j];
        if step.kind == StepKind::Thought {
            continue;
        }
        let action = ctx.hierarchy.steps[j].action;
        let addresses_replier = || step.content.to_lowercase().contains(&steps[i].agent.to_lowercase());
        if handed_over < 2
            && step.agent != steps[i].agent
            && !step.content.contains("```")
            && (matches!(action, Action::Coordinate | Action::Delegate)
                || action == Action::Discuss && steps[i].agent.len() >= 3 && addresses_replier())
        {
            handed_over += 1;
            continue;
        }
        return Some(j);
    }
    None
}

/// Whether the number `key`, which the step states as a percentage (one of `percents`) with a
/// word of change or comparison within 40 bytes of it ("up", "fell", "increase", "vs", "QoQ"...)
/// or a sign ("+6.2%"), is the relative change
/// `100 × |a − b| / b` of two other numbers the step states (`operands`), one of them on the
/// percentage's own line ("€50,532.45 … up 22.9% on Q2 (€41,120.70)"), at the precision it is
/// written with. At most the first 24 operands are paired.
fn change_of(text: &str, at: usize, key: &str, percents: &[f64], operands: &[f64]) -> bool {
    static CHANGE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(?:up|down|increased?|decreased?|rise|rises|rose|fell|falls?|drop(?:s|ped)?|grew|grows|growth|gain(?:s|ed)?|declined?|higher|lower|more|less|change[ds]?|vs|versus|compared|against|qoq|yoy|mom)\b",
        )
        .unwrap()
    });
    static NUMBER: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?").unwrap());
    let Ok(v) = key.parse::<f64>() else { return false };
    if v <= 0.0 || !percents.iter().any(|p| (p - v).abs() < 1e-9) {
        return false;
    }
    let mut from = at.saturating_sub(40);
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let mut to = (at + 40).min(text.len());
    while !text.is_char_boundary(to) {
        to += 1;
    }
    // A signed percentage ("+6.2%", "−3.1 %") is a change by its sign alone.
    let signed = text[at..].starts_with(['+', '-', '−']) || text[..at].ends_with(['+', '-', '−']);
    if !signed && !CHANGE.is_match(&text[from..to]) {
        return false;
    }
    let tol = written_tolerance(key);
    let usable = |x: &f64| *x > 0.0 && (x - v).abs() > tol;
    let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |p| at + p);
    let on_line: Vec<f64> = NUMBER
        .find_iter(&text[line_start..line_end])
        .filter_map(|m| evidence::normalize_number(m.as_str()).parse::<f64>().ok())
        .filter(usable)
        .collect();
    let ops: Vec<f64> = operands.iter().copied().filter(usable).take(24).collect();
    on_line.iter().any(|&a| {
        ops.iter().any(|&b| {
            (a - b).abs() > 1e-9
                && (((100.0 * (a - b) / b).abs() - v).abs() <= tol || ((100.0 * (b - a) / a).abs() - v).abs() <= tol)
        })
    })
}

/// Whether the number `key` (not a whole number of 0 to 10) is one of `totals`, the column totals
/// of the step's own tables ([`tables::column_totals`]), at the precision it is written with.
fn column_total(key: &str, totals: &[f64]) -> bool {
    let Ok(v) = key.parse::<f64>() else { return false };
    if evidence::is_trivial_number(key) {
        return false;
    }
    let tol = written_tolerance(key);
    totals.iter().any(|t| (t - v).abs() <= tol)
}

/// Whether the number written at byte `at` of `text` is the minutes of a clock time (`9:35`,
/// `21:35`) that another clock time of the same text gives shifted by a duration the text states
/// (`15 min`, `2 hours`, `1.5 h`): "new departure 9:50 PM … boarding closes 15 min before
/// departure, so be at the gate by 9:35 PM". Times compare on a 12-hour dial, so `9:35 PM` and
/// `21:35` agree. At most the first 24 clock times and 12 durations are tried.
fn clock_shift(text: &str, at: usize) -> bool {
    static DURATION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\b(\d+(?:\.\d+)?)[\s\u{a0}]*(?:(h|hrs?|hours?)|(min|mins|minutes?))\b").unwrap()
    });
    let clocks: Vec<(usize, f64)> = CLOCK
        .captures_iter(text)
        .take(24)
        .filter_map(|c| Some((c.get(2)?.start(), c[1].parse::<f64>().ok()? * 60.0 + c[2].parse::<f64>().ok()?)))
        .collect();
    let Some(&(_, own)) = clocks.iter().find(|(m, _)| *m == at) else { return false };
    let durations: Vec<f64> = DURATION
        .captures_iter(text)
        .take(12)
        .filter_map(|c| {
            let n = c[1].parse::<f64>().ok()?;
            Some(if c.get(2).is_some() { n * 60.0 } else { n })
        })
        .filter(|d| *d > 0.0)
        .collect();
    clocks.iter().filter(|(m, _)| *m != at).any(|&(_, other)| {
        durations.iter().any(|&d| [other + d, other - d].iter().any(|x| (x - own).rem_euclid(720.0) < 1e-9))
    })
}

/// The lower-case unit written right after the number that starts at byte `start` of `text`
/// (`"mb"` for `1.7 MB`, `"kb"` for `1712kB`): the letters after its digits and blanks.
fn unit_after(text: &str, start: usize) -> String {
    let rest = text.get(start..).unwrap_or("").trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ',');
    rest.trim_start_matches([' ', '\u{a0}'])
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .collect::<String>()
        .to_ascii_lowercase()
}

/// The measure (0 data size, 1 duration) and the sizes in bytes or seconds of a unit; a data
/// size unit has its decimal and its binary size (`kB` is 1,000 or 1,024 bytes as tools write
/// it). `None` for any other word.
fn unit_scale(unit: &str) -> Option<(u8, &'static [f64])> {
    Some(match unit {
        "b" | "byte" | "bytes" => (0, &[1.0]),
        "kb" | "kib" => (0, &[1e3, 1024.0]),
        "mb" | "mib" => (0, &[1e6, 1_048_576.0]),
        "gb" | "gib" => (0, &[1e9, 1_073_741_824.0]),
        "tb" | "tib" => (0, &[1e12, 1_099_511_627_776.0]),
        "ms" => (1, &[0.001]),
        "s" | "sec" | "secs" | "second" | "seconds" => (1, &[1.0]),
        "min" | "mins" | "minute" | "minutes" => (1, &[60.0]),
        "h" | "hr" | "hrs" | "hour" | "hours" => (1, &[3600.0]),
        _ => return None,
    })
}

/// The measure and sizes of a unit as [`unit_rounded`] reads it: [`unit_scale`]'s data sizes
/// and durations, and lengths (2: `mm`, `cm`, `m`, `km`, in metres) and masses (3: `mg`, `g`,
/// `kg`, in grams).
fn rounded_scale(unit: &str) -> Option<(u8, &'static [f64])> {
    Some(match unit {
        "mm" => (2, &[0.001]),
        "cm" => (2, &[0.01]),
        "m" => (2, &[1.0]),
        "km" => (2, &[1000.0]),
        "mg" => (3, &[0.001]),
        "g" => (3, &[1.0]),
        "kg" => (3, &[1000.0]),
        _ => return unit_scale(unit),
    })
}

/// A value written as a number and a unit of data size or time and nothing else (`2 min`,
/// `120s`, `1.5 GB`): its measure ([`unit_scale`]) and its size in bytes or seconds for each
/// reading of the unit.
fn quantity(text: &str) -> Option<(u8, Vec<f64>)> {
    let t = text.trim();
    let digits = t.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let v: f64 = t[..digits].parse().ok()?;
    let unit = t[digits..].trim_start().to_ascii_lowercase();
    if unit.is_empty() || !unit.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let (measure, sizes) = unit_scale(&unit)?;
    Some((measure, sizes.iter().map(|s| v * s).collect()))
}

/// How many steps back [`unit_rounded`] looks for the value a rounded one restates.
const ROUNDED_WINDOW: usize = 400;

/// Whether the number `key`, written at byte `start` of `text` with a unit of data size, time,
/// length or mass ([`rounded_scale`]), is a value that one of the [`ROUNDED_WINDOW`] steps before
/// step `i` writes in another unit of the same measure (written after it, or named by its JSON
/// member, [`derivation::member_unit`]), converted and rounded to the precision `key` is written
/// with: "1.7 MB" after a tool printed "1712 kB", "2.5 h" after "9,000 s", "8.2 GB" after
/// `"remaining_mb": 8210`.
fn unit_rounded(ctx: &Context<'_>, i: usize, text: &str, start: usize, key: &str) -> bool {
    let Ok(v) = key.parse::<f64>() else { return false };
    let Some((measure, stated)) = rounded_scale(&unit_after(text, start)) else { return false };
    let decimals = key.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    let scale = 10f64.powi(decimals);
    (i.saturating_sub(ROUNDED_WINDOW)..i).rev().any(|j| {
        let content = &ctx.trajectory.steps[j].content;
        ctx.hierarchy.evidence[j].iter().filter(|e| e.kind == EvidenceKind::Number).any(|e| {
            // The unit written after the number, else the one its JSON member's name gives
            // (`"remaining_mb": 8210`).
            let after = unit_after(content, e.span.start);
            let unit = if after.is_empty() { derivation::member_unit(content, e.span.start) } else { after };
            let Some((m, written)) = rounded_scale(&unit) else { return false };
            let Ok(x) = e.key.parse::<f64>() else { return false };
            m == measure
                && x > 0.0
                && stated.iter().any(|&su| {
                    written.iter().any(|&sw| {
                        let y = x * sw / su;
                        (y - v).abs() > 1e-12 && ((y * scale).round() / scale - v).abs() <= 1e-9 * v.abs().max(1.0)
                    })
                })
        })
    })
}

/// Whether the number `key` written at byte `at` of `text` is the result of the arithmetic written
/// just before it on the same line: `a op b … = N` with numbers (thousands may be grouped with
/// commas, `1,284 / 15,870 = 0.0809`) and `+`, `-`, `*`, `×`, `x`, `/`, `÷` (usual precedence, no
/// brackets), equal to `N` at the precision `N` is written with.
fn written_result(text: &str, at: usize, key: &str) -> bool {
    static EXPRESSION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*[-+*×x/÷]\s*(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)+)\s*(?:=|≈|equals)\s*[$€£]?\s*$",
        )
        .unwrap()
    });
    let Ok(v) = key.parse::<f64>() else { return false };
    let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
    let Some(c) = EXPRESSION.captures(&text[line_start..at]) else { return false };
    let Some(result) = evaluate(&c[1]) else { return false };
    let decimals = key.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    (result - v).abs() <= 0.5 * 10f64.powi(-decimals) + 1e-9
}

/// Whether the number `key`, written in `text` from byte `start` with a unit of time right after
/// its digits ("2.5 hours", "45 min", "3h"), is the time between two clock times the same text writes
/// (`HH:MM`, 24-hour, the same day), in hours or minutes at the precision `key` is written with:
/// "arrives 11:30 … that leaves you 2.5 hours before your 14:00 meeting" works it out. At most the
/// first 12 clock times are paired.
fn clock_gap(text: &str, start: usize, key: &str) -> bool {
    static UNIT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^[\s\u{a0}]*(?:(h|hrs?|hours?)|(min|mins|minutes?))\b").unwrap()
    });
    let Ok(v) = key.parse::<f64>() else { return false };
    let rest = text.get(start..).unwrap_or("").trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ',');
    let Some(unit) = UNIT.captures(rest) else { return false };
    let per_minute = if unit.get(1).is_some() { 1.0 / 60.0 } else { 1.0 };
    let clocks: Vec<f64> = CLOCK
        .captures_iter(text)
        .filter_map(|c| {
            // Seconds after the minutes (`14:02:37`) count.
            let end = c.get(0)?.end();
            let secs = text.get(end..end + 3).filter(|x| x.starts_with(':')).and_then(|x| x[1..].parse::<f64>().ok());
            Some(c[1].parse::<f64>().ok()? * 60.0 + c[2].parse::<f64>().ok()? + secs.unwrap_or(0.0) / 60.0)
        })
        .take(12)
        .collect();
    // A gap told as approximate ("~2.5 min", "about 2.5 minutes") may be a person's rounding of
    // 2 min 23 s: a tenth of the figure either way.
    let before = text[..start].trim_end().to_lowercase();
    let approximate = before.ends_with(['~', '≈'])
        || ["about", "around", "roughly", "approximately", "nearly", "almost", "some"]
            .iter()
            .any(|w| before.ends_with(w));
    let tol = if approximate { written_tolerance(key).max(0.1 * v) } else { written_tolerance(key) };
    v > 0.0
        && clocks.iter().enumerate().any(|(i, &a)| {
            clocks[i + 1..].iter().any(|&b| (a - b).abs() > 0.0 && ((a - b).abs() * per_minute - v).abs() <= tol)
        })
}

/// Whether the number written at byte `at` of `text` is a term of a written sum or difference
/// (`3600 + 30`, `a - b - c`: numbers and `+`, `-` with spaces around them; not a date or a range
/// such as `2023-05-22` or `10-20`) whose value is a figure written on the same line, outside the
/// sum, that an earlier step wrote (`sourced`: value and byte offset): the step breaks that
/// figure down in prose ("3630, which is 3600 + 30"), so each part is worked out from it. Code
/// (`range(1, 30 + 1)`) states no such figure beside its sum.
fn written_part(text: &str, at: usize, sourced: &[(f64, usize)]) -> bool {
    static SUM: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\b\d+(?:\.\d+)?(?:[ \t]+[-+][ \t]+\d+(?:\.\d+)?)+\b").unwrap());
    let start = text[..at].rfind('\n').map_or(0, |p| p + 1);
    let end = text[at..].find('\n').map_or(text.len(), |p| at + p);
    SUM.find_iter(&text[start..end]).any(|m| {
        let span = start + m.start()..start + m.end();
        span.contains(&at)
            && evaluate(m.as_str()).is_some_and(|total| {
                total != 0.0
                    && sourced.iter().any(|&(x, pos)| {
                        (start..end).contains(&pos)
                            && !span.contains(&pos)
                            && (x - total).abs() <= 1e-9 * x.abs().max(1.0)
                    })
            })
    })
}

/// Whether the number `key` written at byte `at` of `text` is a figure from an earlier step
/// (`sourced`: value and byte offset) rounded to the precision `key` is written with, and the
/// sentence around it says so ("4.2107 s … the table shows it rounded to 4.2s"): a rounded
/// restatement, not a new value. The rounded figure must have more decimals than `key`.
fn rounded_form(text: &str, at: usize, key: &str, sourced: &[(f64, usize)]) -> bool {
    let Ok(v) = key.parse::<f64>() else { return false };
    let decimals = key.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    let start = text[..at].rfind(['\n', '.', ';']).map_or(0, |p| p + 1);
    let end = text[at..].find(['\n', ';', ')']).map_or(text.len(), |p| at + p);
    let sentence = text[start..end].to_ascii_lowercase();
    if !sentence.contains("round") {
        return false;
    }
    let scale = 10f64.powi(decimals);
    sourced.iter().any(|&(x, _)| {
        let finer = format!("{x}").split_once('.').map_or(0, |(_, d)| d.len()) as i32 > decimals;
        finer && ((x * scale).round() / scale - v).abs() <= 1e-9 * v.abs().max(1.0)
    })
}

/// The value of a written sum, difference, product or quotient ([`evidence::arithmetic::value`]).
fn evaluate(expr: &str) -> Option<f64> {
    evidence::arithmetic::value(expr)
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
pub(crate) fn result_of(ctx: &Context<'_>, i: usize) -> Option<usize> {
    links(ctx).result_of.get(i).copied().flatten()
}

/// The trajectory's links indexed by step (built once per hierarchy).
pub(crate) fn links<'a>(ctx: &Context<'a>) -> &'a LinkIndex {
    ctx.facts.links.get_or_init(|| LinkIndex::build(ctx.trajectory))
}

/// Whether step `step` reaches the final step in the dependency graph (one backward walk from
/// the final step per hierarchy, instead of one path search per step).
pub fn reaches_final(ctx: &Context<'_>, step: usize) -> bool {
    let (Some(g), Some(end)) = (ctx.graph, final_step(ctx)) else { return false };
    ctx.facts.reaches_final.get_or_init(|| g.ancestors(end)).get(step).copied().unwrap_or(false)
}

fn failed_action(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let Some(r) = result_of(ctx, i) else { return };
    // A lookup the agent retried or corrected with success, or a command it ran again with
    // success, is context, not the error.
    if recovered(ctx, i) {
        return;
    }
    // A read that fails (`git log` outside a repository, `cat` of a missing file) changes
    // nothing and checks nothing: what the agent does with the answer is judged where it does it.
    if only_reads(ctx.trajectory, i) {
        return;
    }
    // Nor does a query that changes and checks nothing (`pip index versions`, a registry or
    // record lookup): what the agent does without its answer is judged where it does it (the
    // message that goes on as if it had one, `ignored_tool_error`).
    if is_query(ctx.trajectory, i) {
        return;
    }
    // An edit is judged by the check after it: when that check fails, the edit broke something
    // or did not fix it.
    if edits(ctx.trajectory, i) {
        // An edit the agent reverted is not what the run leaves behind: its failed check is not
        // the decisive error by itself.
        // Nor is one whose failing test a later edit drops: the failure was caught, and the run
        // is lost where the test is removed (`coding::failing_test_removed`).
        // Nor is one that makes the very change the task asks for (the version bump): what fails
        // then is what the change brings, and the agent's handling of it is judged where it is.
        if let Some((c, line)) = failed_check_after_edit(ctx, i)
            && coding::reverted(ctx, i).is_none()
            && coding::failure_hidden(ctx, i, c).is_none()
            && !coding::makes_requested_change(ctx, i)
        {
            out.push(finding(
                Signal::FailedAction,
                weights::FAILED_ACTION,
                prose!["the check after this edit fails at step ", Part::Step(c), format!(": {line}")],
            ));
        }
        return;
    }
    // Running into the failure the task reports reproduces it: the work starts there. A check
    // failing after an edit is the edit's failure (above), not the check's.
    // A program found missing that the agent tells the reader about is a gap in the
    // environment it owned up to, not its failed action.
    if reproduces_reported_failure(ctx, r)
        || edit_checked_by(ctx, i).is_some()
        || missing_program_reported(ctx, r).is_some()
    {
        return;
    }
    // `npm audit` exiting 1 (vulnerabilities found), `grep` exiting 1 (no match): the program
    // reported what it found, it did not fail.
    if reports_by_exit_code(ctx, i, r) {
        return;
    }
    let rs = &ctx.hierarchy.steps[r];
    // A test run whose failure only its runner's summary counts (no failing exit status, no
    // error mark): the tests ran and reported, the call did not fail. What the agent makes of
    // the report is judged where it does it (the claim that reads it as a pass).
    let counted_only = !ctx.trajectory.steps[r].is_error
        && exit_code(ctx, r).is_none_or(|c| c == 0)
        && !ctx.trajectory.steps[r].content.contains("execution failed");
    if counted_only && runs_tests(ctx.trajectory, i) {
        return;
    }
    if rs.flags.failed_execution || rs.flags.error && ctx.trajectory.steps[r].is_error {
        let line = error_line(ctx, r).unwrap_or_else(|| "execution failed".into());
        out.push(finding(
            Signal::FailedAction,
            weights::FAILED_ACTION,
            prose!["its code failed at step ", Part::Step(r), format!(": {line}")],
        ));
    }
}

/// Whether the tool output at step `r` shows a failure: a failed execution, or an error line
/// that is not a "nothing to run" notice.
pub(crate) fn shows_failure(ctx: &Context<'_>, r: usize) -> bool {
    let h = &ctx.hierarchy.steps[r];
    h.kind == StepKind::ToolResult && (h.flags.failed_execution || h.flags.error && !h.flags.empty_result)
        || ctx.trajectory.steps[r].is_error
}

/// Whether the user refused call `c` at the permission prompt ([`refused_by_user`] on its
/// result): the call did not run, so it neither checks nor changes anything.
pub(crate) fn refused_call(ctx: &Context<'_>, c: usize) -> bool {
    result_of(ctx, c).is_some_and(|r| refused_by_user(ctx, r))
}

/// The program or module a tool output at step `r` says is missing, when it says so: a shell's
/// `pytest: command not found` or `sh: 1: pytest: not found`, zsh's `zsh:1: command not found:
/// pytest`, Python's `No module named pytest`,
/// Windows' `'pytest' is not recognized as an internal or external command`. The command never
/// ran: its failure says nothing of the code it was to check, only of the environment.
pub(crate) fn missing_program(ctx: &Context<'_>, r: usize) -> Option<String> {
    static MISSING: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(concat!(
            r#"(?m)(?:^|: )(?P<sh>[\w.+-]+): (?:command )?not found\s*$"#,
            r#"|(?m)(?:^|: )command not found: (?P<zsh>[\w.+-]+)\s*$"#,
            r#"|No module named '?(?P<py>[\w.]+)'?"#,
            r#"|'(?P<win>[\w.+-]+)' is not recognized as an internal or external command"#
        ))
        .unwrap()
    });
    let s = ctx.trajectory.steps.get(r)?;
    if s.kind != StepKind::ToolResult {
        return None;
    }
    let c = MISSING.captures(&s.content)?;
    ["sh", "zsh", "py", "win"].iter().find_map(|k| c.name(k)).map(|m| m.as_str().to_string())
}

/// What the shell says when it could not run a command line at all, at tool output `r`: a
/// program missing ([`missing_program`]); a command name the shell did not find, whatever it is
/// (dash's `/bin/sh: 1: python -m pytest: not found` after a quoting slip made a whole command
/// line one word; bash's `bash: ./run_tests.sh: No such file or directory`, zsh's `zsh: no such
/// file or directory: ./x`); a syntax error of the line (`Syntax error: Unterminated quoted
/// string`, `unexpected EOF while looking for matching`, `syntax error near unexpected token`,
/// zsh's `parse error near`, `bad substitution`). Only a line the shell itself writes counts
/// (`sh:`, `bash:`, `/bin/sh: 1:`, `zsh:1:`…, right at its start); a builtin's own error (`bash:
/// line 1: cd: x: No such file or directory`) is a failure of that command, not of the line.
/// `None` when the output shows none: such a failure says nothing of the code the command was
/// to check.
pub(crate) fn shell_could_not_run(ctx: &Context<'_>, r: usize) -> Option<String> {
    static SHELL_SAYS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(concat!(
            r"(?m)^\s*(?:/[\w/]*/)?(?:ba|da|z|k|fi|)sh(?::\s*(?:line\s*)?\d+)?:\s*",
            r"(?:(?P<name>[^:\n]+): (?:command )?not found\s*$",
            r"|(?P<file>[^:\n]+): No such file or directory\s*$",
            r"|(?:command not found|no such file or directory): (?P<zsh>\S+)\s*$",
            r"|(?P<syntax>.*(?:[Ss]yntax error|unexpected EOF while looking for matching|[Uu]nterminated quoted string|parse error near|bad substitution|unexpected end of file).*))"
        ))
        .unwrap()
    });
    if let Some(name) = missing_program(ctx, r) {
        return Some(name);
    }
    let s = ctx.trajectory.steps.get(r)?;
    if s.kind != StepKind::ToolResult {
        return None;
    }
    let c = SHELL_SAYS.captures(&s.content)?;
    ["name", "file", "zsh", "syntax"].iter().find_map(|k| c.name(k)).map(|m| m.as_str().trim().to_string())
}

/// How many steps after a missing program's output [`missing_program_reported`] looks for the
/// agent's message that tells it.
const REPORT_WINDOW: usize = 200;

/// The agent's message, within [`REPORT_WINDOW`] steps after tool output `r`, that tells the
/// reader the program `r` found missing is missing or could not be run ("pytest is not installed
/// here, so I could not run the suite"): the agent owns up to the gap in its environment instead
/// of going on as if the check had run. `None` when `r` shows no missing program or no message
/// tells it.
pub(crate) fn missing_program_reported(ctx: &Context<'_>, r: usize) -> Option<usize> {
    static ABSENT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(not (?:installed|available|found|present)|isn'?t (?:installed|available)|missing|could ?n[o']t|can ?n[o']t|unable to|was ?n[o']t able)\b",
        )
        .unwrap()
    });
    let name = missing_program(ctx, r)?;
    let t = ctx.trajectory;
    let end = t.steps.len().min(r + 1 + REPORT_WINDOW);
    (r + 1..end).find(|&m| {
        let s = &t.steps[m];
        s.kind == StepKind::Message
            && !is_outside_agent(&s.agent)
            && contains_word(lower_of(ctx, m), &name.to_lowercase())
            && ABSENT.is_match(&s.content)
    })
}

/// How many edits right before a check [`edit_checked_by`] looks through for the one its output
/// names.
const EDIT_GROUP: usize = 20;

/// The edit that call `c` checks: `c` is a call that ran ([`refused_call`]) and is not an edit
/// ([`edits`]), and the calls that ran right before it are edits (the edits since the previous
/// call that was not one; a call the user refused checked nothing and is passed over), so `c` is
/// the first check after them (tests run, the file read back, the program started, a migration
/// applied). It checks the last of them, unless its output names the file of an earlier one of
/// them (at most [`EDIT_GROUP`] back) and not the last one's: then the latest edit of a file the
/// output names (a migration that fails to apply, edited before the model edited after it).
pub(crate) fn edit_checked_by(ctx: &Context<'_>, c: usize) -> Option<usize> {
    let t = ctx.trajectory;
    if t.steps[c].kind != StepKind::ToolCall || edits(t, c) || refused_call(ctx, c) {
        return None;
    }
    let group: Vec<usize> = (0..c)
        .rev()
        .filter(|&j| t.steps[j].kind == StepKind::ToolCall && !refused_call(ctx, j) && !installs(t, j))
        .take_while(|&j| edits(t, j))
        .take(EDIT_GROUP)
        .collect();
    let last = *group.first()?;
    let Some(output) = result_of(ctx, c).filter(|_| group.len() > 1).map(|r| &t.steps[r].content) else {
        return Some(last);
    };
    let named = |e: usize| instructions::changed_paths(t, e).iter().any(|(p, _)| names_file(output, p));
    if named(last) {
        return Some(last);
    }
    Some(group.iter().copied().find(|&e| named(e)).unwrap_or(last))
}

/// Whether call `c` installs dependencies ([`installs`]) and the agent's last command after it
/// that runs something (not a read, not another install) succeeds: the environment had what the
/// work needed (an install refused offline, the packages already there), so the failed install
/// is no failure of the run.
pub(crate) fn install_worked_around(ctx: &Context<'_>, c: usize) -> bool {
    let t = ctx.trajectory;
    if !installs(t, c) {
        return false;
    }
    let agent = &t.steps[c].agent;
    (c + 1..t.steps.len())
        .rev()
        .find(|&k| {
            t.steps[k].kind == StepKind::ToolCall
                && t.steps[k].agent == *agent
                && call_command(t, k).is_some()
                && !only_reads(t, k)
                && !installs(t, k)
        })
        .is_some_and(|k| result_of(ctx, k).is_some() && call_error(ctx, k).is_none())
}

/// How many steps after an agent's thought [`checked_next`] looks for the tool output that
/// shows what it expected.
const CHECKED_NEXT: usize = 4;

/// Whether step `i` is an agent's thought whose value `key` the first tool output after it
/// (within [`CHECKED_NEXT`] steps, before any other message of the agent) writes too: the agent
/// said what it expected and then looked.
fn checked_next(ctx: &Context<'_>, i: usize, key: &str) -> bool {
    let t = ctx.trajectory;
    if t.steps[i].kind != StepKind::Thought {
        return false;
    }
    (i + 1..t.steps.len().min(i + 1 + CHECKED_NEXT))
        .take_while(|&k| !matches!(t.steps[k].kind, StepKind::Message | StepKind::Thought))
        .find(|&k| t.steps[k].kind == StepKind::ToolResult)
        .is_some_and(|r| ctx.hierarchy.evidence[r].iter().any(|e| e.key == key))
}

/// How many steps after an agent's reasoning [`computed_later`] looks for the program output
/// that computes what it stated.
const COMPUTED_LATER: usize = 20;

/// Whether step `i` is reasoning of an agent that goes on with shell or code calls (a thought, or
/// a message its agent follows with a call) after it has observed something (a tool output
/// before it: a figure stated before anything was read has no source, whatever comes later),
/// and the output of one of its own shell or code runs within [`COMPUTED_LATER`] steps (no user
/// turn between) holds the number `key` (three digits or more) while the call's own text does
/// not: the agent worked it out from what it read, the program computed it.
fn computed_later(ctx: &Context<'_>, i: usize, key: &str) -> bool {
    let t = ctx.trajectory;
    let agent = &t.steps[i].agent;
    if key.chars().filter(char::is_ascii_digit).count() < 3
        || !matches!(t.steps[i].kind, StepKind::Thought | StepKind::Message)
        || !t.steps[..i].iter().any(|s| s.kind == StepKind::ToolResult)
    {
        return false;
    }
    let end = t.steps.len().min(i + 1 + COMPUTED_LATER);
    (i + 1..end)
        .take_while(|&k| !actions::is_human(&t.steps[k]))
        .filter(|&k| t.steps[k].kind == StepKind::ToolCall && t.steps[k].agent == *agent)
        .filter(|&k| call_command(t, k).is_some() && !contains_word(&t.steps[k].content, key))
        .filter_map(|k| result_of(ctx, k))
        .any(|r| {
            // A figure the program prints as a value of its own: not a percentage (`[100%]`), a
            // line number (`line 512`), a part of a date or an id.
            let out = &t.steps[r].content;
            ctx.hierarchy.evidence[r].iter().any(|e| {
                e.key == key
                    && e.kind == EvidenceKind::Number
                    && e.context.is_none()
                    && !out[e.span.end..].trim_start_matches(' ').starts_with('%')
                    && !out[..e.span.start].ends_with(['-', '/', ':', '.'])
                    && !out[..e.span.start].to_ascii_lowercase().ends_with("line ")
                    && !out[e.span.end..].starts_with(['-', '/', ':'])
            })
        })
}

/// Whether a message tells the error an output showed: it repeats two words in a row (three
/// letters or more each, ignoring case) of one of the output's lines that says it failed
/// ("not a git repository" → "No git repository here"), or names what such a line quotes
/// ([`names_what_error_quotes`]).
pub(super) fn tells_error(message: &str, output: &str) -> bool {
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
    };
    let said = words(message);
    let pairs: HashSet<(String, String)> = said.windows(2).map(|w| (w[0].clone(), w[1].clone())).collect();
    output
        .lines()
        .filter(|l| {
            let low = l.to_lowercase();
            ["fatal", "error", "not ", "no such", "cannot", "can't", "failed", "denied"].iter().any(|w| low.contains(w))
        })
        .any(|l| {
            words(l)
                .windows(2)
                .any(|w| w[0].len() >= 3 && w[1].len() >= 3 && pairs.contains(&(w[0].clone(), w[1].clone())))
        })
        || names_what_error_quotes(message, output)
}

/// Whether a message names, as a word, the identifier that one of an output's error lines
/// (`ErrorLine` evidence, not a warning) quotes: `unexpected keyword argument 'proxies'` →
/// "`proxies=` is gone in 0.28" (four characters or more: letters, digits and `_`, a letter among
/// them). The agent read the error and speaks of its cause. Repeating the run's counts ("214
/// passed") names nothing the error quotes, and a quoted path ("saved to
/// reports/sales_week_09.png" over `Permission denied: 'reports/sales_week_09.png'`) is no cause
/// named: a claim of success names the file too.
pub(super) fn names_what_error_quotes(message: &str, output: &str) -> bool {
    evidence::extract_text(output).iter().filter(|e| e.kind == EvidenceKind::ErrorLine).any(|e| {
        let line = e.text(output);
        !line.to_ascii_lowercase().contains("warn")
            && QUOTED_NAME.captures_iter(line).any(|c| {
                let name = c.iter().skip(1).flatten().next().map_or("", |m| m.as_str());
                name.len() >= 4
                    && name.chars().all(|ch| ch.is_alphanumeric() || ch == '_')
                    && name.chars().any(char::is_alphabetic)
                    && contains_word(message, name)
            })
    })
}

/// A name an error line quotes: `'proxies'`, `"user_id"`, `` `fmt` `` (no blank inside).
static QUOTED_NAME: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r#"'([^'\s]+)'|"([^"\s]+)"|`([^`\s]+)`"#).unwrap());

/// Whether call `c` is a shell command that installs dependencies
/// ([`side_effects::installs_dependencies`]): it prepares the environment, it checks nothing.
fn installs(t: &Trajectory, c: usize) -> bool {
    call_command(t, c).is_some_and(|line| side_effects::installs_dependencies(&line))
}

/// Whether a tool's output names the file at `path`: its name (`models.py`, at least 5
/// characters), its name without the extension (at least 5), or the id its name starts with
/// (`b2d7f0c4e913` of `b2d7f0c4e913_add_column.py`: at least 8 letters and digits, with a digit),
/// as a migration tool names a revision.
fn names_file(output: &str, path: &str) -> bool {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    let id = stem.split(['_', '-']).next().unwrap_or("");
    let id_like =
        id.len() >= 8 && id.chars().all(|c| c.is_ascii_alphanumeric()) && id.chars().any(|c| c.is_ascii_digit());
    name.len() >= 5 && output.contains(name)
        || stem.len() >= 5 && contains_word(output, stem)
        || id_like && contains_word(output, id)
}

/// The command line of step `i` when it calls a shell tool ([`shell_command`] on its tool's
/// name), `None` for any other step.
pub(crate) fn call_command(t: &Trajectory, i: usize) -> Option<String> {
    let s = &t.steps[i];
    s.tool_name.as_deref().and_then(|n| shell_command(&n.to_ascii_lowercase(), &s.content))
}

/// How many steps after a failed check [`rerun_passes`] looks for the same check run again.
const RERUN_WINDOW: usize = 40;

/// Whether shell call `c` is run again, as the same command line, by the same agent within
/// [`RERUN_WINDOW`] steps, and that run passed (its exit code is 0, or, without one, its output
/// shows no failure): the check failed on work in progress (a test that did not compile yet),
/// which the agent finished; not when the only changes in between rewrote a test that was there
/// before ([`recovery::rerun_counts`]). Also when the same agent's next run of the same check or a broader
/// one ([`recovery::rerun_unchanged_passes`]), with nothing changed in between, passed: the first
/// run's failure was not the code's.
pub(crate) fn rerun_passes(ctx: &Context<'_>, c: usize) -> bool {
    let t = ctx.trajectory;
    let command = |k: usize| call_command(t, k);
    let Some(line) = command(c) else { return false };
    if recovery::rerun_unchanged_passes(ctx, c, RERUN_WINDOW) {
        return true;
    }
    let agent = &t.steps[c].agent;
    (c + 1..t.steps.len().min(c + 1 + RERUN_WINDOW))
        .find(|&k| {
            t.steps[k].kind == StepKind::ToolCall
                && t.steps[k].agent == *agent
                && command(k).is_some_and(|x| x.trim() == line.trim())
        })
        // A test that was there before, rewritten to pass, fixed nothing the run showed.
        .filter(|&k| recovery::rerun_counts(ctx, c, k))
        .and_then(|k| result_of(ctx, k))
        .is_some_and(|r| !check_fails(ctx, r))
}

/// Whether the output at step `r` of a check (a test run, a build) shows it failed: its exit code
/// when the output has one (0 passed, whatever its log lines say: "redis ping failed: i/o
/// timeout" logged by a test that passes, unless a test runner's summary in it counts failures:
/// `43 tests completed, 1 failed` under Gradle's `BUILD SUCCESSFUL`, [`test_summary_passed`]),
/// else the summary, else [`shows_failure`]; the format's error mark
/// always fails it. A program that reports what it found by its exit code (`npm audit` 1:
/// vulnerabilities found; `grep` 1: no match; [`reports_by_exit_code`]) did not fail, whatever
/// the format's mark, on every path that asks whether a check failed.
pub(crate) fn check_fails(ctx: &Context<'_>, r: usize) -> bool {
    if links(ctx).produced_by.get(r).copied().flatten().is_some_and(|c| reports_by_exit_code(ctx, c, r)) {
        return false;
    }
    ctx.trajectory.steps[r].is_error
        || exit_code(ctx, r).map_or_else(
            || test_summary_passed(&ctx.trajectory.steps[r].content).map_or_else(|| shows_failure(ctx, r), |p| !p),
            // A runner's summary that counts failures fails the check whatever the exit status
            // (a build set to ignore test failures, a pipe into `tail`).
            |code| code != 0 || test_summary_passed(&ctx.trajectory.steps[r].content) == Some(false),
        )
}

pub use crate::evidence::summary::test_summary_passed;

/// The summary line of a test run whose output at step `r` reports exit status 0 (or no status,
/// no error mark of the format, and a build tool's `BUILD SUCCESS` line) while its
/// runner's summary counts failures (`43 tests completed, 1 failed` above Gradle's `BUILD
/// SUCCESSFUL`, a `pytest | tail` that lost pytest's status): the failure is in the text only,
/// and an agent that goes by the status reads it as a pass. `None` for any other output.
pub(crate) fn hidden_test_failure<'a>(ctx: &Context<'a>, r: usize) -> Option<&'a str> {
    let s = &ctx.trajectory.steps[r];
    // The status said success, or the format keeps it only as its error mark (a Codex output
    // unwrapped from `{output, metadata: {exit_code: 0}}`), which is not set.
    static BUILD_SUCCESS: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"(?m)^(?:\[INFO\]\s*)?BUILD SUCCESS").unwrap());
    let status_ok = match exit_code(ctx, r) {
        Some(code) => code == 0,
        // Without a status in the text, only an output that also says the build succeeded.
        None => BUILD_SUCCESS.is_match(&s.content),
    };
    if s.kind != StepKind::ToolResult || s.is_error || !status_ok {
        return None;
    }
    evidence::summary::test_summary(&s.content).filter(|(passed, _)| !passed).map(|(_, line)| line)
}

/// Whether step `i` claims every part of the work done over a failure of its agent that it never
/// told (`actions::claimed_over_failure`).
pub fn claims_done_over_failure(ctx: &Context<'_>, i: usize) -> bool {
    actions::claims_done_over_failure(ctx, i)
}

/// Whether step `a` is the claim that reads a test run failing in its text only as a pass
/// ([`misread_as_pass`], the 40 tool outputs before it): the claim steers the run to its end
/// as if the tests passed, whether or not a later step uses its words.
pub fn misreads_failed_run(ctx: &Context<'_>, a: usize) -> bool {
    let t = ctx.trajectory;
    (0..a)
        .rev()
        .filter(|&r| t.steps[r].kind == StepKind::ToolResult)
        .take(40)
        .any(|r| misread_as_pass(ctx, r) == Some(a))
}

/// The run's first claim that the work is done or the tests pass ([`assertion::first_assertion`])
/// when it follows the test run at step `r` whose failure is in its text only
/// ([`hidden_test_failure`]) with no edit in between: the agent read the failing run as a pass.
/// The claim is the error, not the edit the run checked.
pub(crate) fn misread_as_pass(ctx: &Context<'_>, r: usize) -> Option<usize> {
    hidden_test_failure(ctx, r)?;
    let (a, _) = assertion::first_assertion(ctx)?;
    (a > r && !(r + 1..a).any(|j| edits(ctx.trajectory, j))).then_some(a)
}

/// Whether shell call `c`, whose output `r` reports a non-zero exit code, only ran a program
/// whose documented exit codes report what it found ([`shell::reporting_exit`]: `npm audit` 1,
/// vulnerabilities found; `grep` 1, no match) and readers of its output ([`shell::READ_PROGRAMS`],
/// `sed` without `-i`): the exit code is that program's report, not a failure, even where the
/// format marks the result an error by its exit code (Claude Code, Gemini CLI). A program the
/// output says is missing fails it still.
pub(crate) fn reports_by_exit_code(ctx: &Context<'_>, c: usize, r: usize) -> bool {
    let t = ctx.trajectory;
    let Some(code) = exit_code(ctx, r).filter(|&code| code != 0) else { return false };
    let Some(line) = call_command(t, c) else { return false };
    if missing_program(ctx, r).is_some() {
        return false;
    }
    let cmds = shell::commands(&line);
    let reader = |x: &shell::Command| {
        x.invocation().is_none_or(|inv| shell::READ_PROGRAMS.contains(&inv.program) || inv.program == "sed")
            && !shell::command_edits(x)
    };
    cmds.iter().any(|x| shell::reporting_exit(x, code))
        && cmds.iter().all(|x| shell::reporting_exit(x, code) || reader(x))
}

/// The exit code step `r`'s text reports (`Exit code: 1`, `exitcode: 0`), the first one.
fn exit_code(ctx: &Context<'_>, r: usize) -> Option<i32> {
    ctx.hierarchy.evidence[r].iter().find_map(|e| match e.kind {
        EvidenceKind::ExitCode(code) => Some(code),
        _ => None,
    })
}

/// The failed check after edit `e`: the next call after it that ran and is not an edit, when it
/// is the first check of `e` ([`edit_checked_by`]) and its output shows a failure, with that
/// output's step and its error line.
pub(crate) fn failed_check_after_edit(ctx: &Context<'_>, e: usize) -> Option<(usize, String)> {
    let t = ctx.trajectory;
    let c = (e + 1..t.steps.len())
        .find(|&j| t.steps[j].kind == StepKind::ToolCall && !edits(t, j) && !refused_call(ctx, j) && !installs(t, j))?;
    if edit_checked_by(ctx, c) != Some(e) {
        return None;
    }
    // A checker that is not installed checked nothing; a check run again as it was, with
    // success, failed on work in progress that the agent went on to finish.
    let failed = |c: usize| {
        // A read (`cat`, `sed -n`) shows the code, it checks nothing.
        if only_reads(t, c) {
            return None;
        }
        // A check that failed on the environment (a settings variable unset, the wrong working
        // folder) and was run again at once corrected: the corrected run judges the edit.
        let c = recovery::environment_corrected(ctx, c).unwrap_or(c);
        if rerun_passes(ctx, c) || recovery::check_recovered(ctx, c) {
            return None;
        }
        // Exit status 127 is the shell's "command not found", whatever the output says.
        // The shell could not run the command line (a program missing, a quoting slip that
        // made `python -m pytest` one word): it says nothing of the code.
        // A run that failed in its text only, read by the agent as a pass: the misreading is
        // the error, not the edit ([`misread_as_pass`]). A linter or format check that names
        // only files the run never changed found what was there before ([`names_only_untouched`]).
        let r = result_of(ctx, c).filter(|&r| {
            check_fails(ctx, r)
                && shell_could_not_run(ctx, r).is_none()
                && exit_code(ctx, r) != Some(127)
                && misread_as_pass(ctx, r).is_none()
                && !names_only_untouched(ctx, c, r)
        })?;
        Some((r, check_failure(ctx, r).unwrap_or_else(|| "it failed".into())))
    };
    if let Some(found) = failed(c) {
        return Some(found);
    }
    // The first check passed without running the tests (the reproduction script run again, the
    // file read back): the first test run after it, before the next edit, judges the edit too,
    // when it fails on a test no output before the edit showed failing.
    if runs_tests(t, c) {
        return None;
    }
    let k = (c + 1..t.steps.len().min(c + 1 + TEST_RUN_WINDOW))
        .filter(|&j| t.steps[j].kind == StepKind::ToolCall && !refused_call(ctx, j))
        .take_while(|&j| !edits(t, j))
        .find(|&j| runs_tests(t, j))?;
    let (r, line) = failed(k)?;
    let tests = failing_tests(&t.steps[r].content);
    let new = tests.is_empty()
        || tests.iter().any(|name| {
            !(0..e)
                .any(|j| t.steps[j].kind == StepKind::ToolResult && failing_tests(&t.steps[j].content).contains(name))
        });
    new.then_some((r, line))
}

/// How many steps before a check [`names_only_untouched`] looks for the run's edits.
const UNTOUCHED_WINDOW: usize = 200;

/// Whether the failing check `c` (output `r`) is a checker that reports per file (a linter, a
/// format check: not a test run, [`runs_tests`]) and every file path its output names is one no
/// edit of the run before it changed (within [`UNTOUCHED_WINDOW`] steps): `terraform fmt -check`
/// listing `envs/dev/main.tf` after an edit of `envs/prod/terraform.tfvars` found what was there
/// before, so its failure is no evidence against the edit. Paths are compared by their trailing
/// components (`./envs/dev/main.tf` and `/home/x/repo/envs/dev/main.tf` are one file). `false`
/// when the output names no path: the failure may be anywhere. A test run is never read so: a
/// failing test in a file nobody edited fails on the code it calls.
fn names_only_untouched(ctx: &Context<'_>, c: usize, r: usize) -> bool {
    untouched_named(ctx, c, r).is_some()
}

/// The files the failing check `c` (output `r`) names when all of them are files the run never
/// changed ([`names_only_untouched`]).
fn untouched_named<'a>(ctx: &Context<'a>, c: usize, r: usize) -> Option<Vec<&'a str>> {
    let t = ctx.trajectory;
    if runs_tests(t, c) || !lints(t, c) {
        return None;
    }
    // A file path as checkers print one: at a line's start or after a space or quote, with an
    // extension, before an optional `:line` (`envs/dev/main.tf`, `src/a.py:3:1: E501`).
    static FILE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r#"(?m)(?:^|[\s'"(])((?:\.{0,2}/)?(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z]\w{0,5})(?::\d+)?(?:[\s:'")]|$)"#,
        )
        .unwrap()
    });
    let content = &t.steps[r].content;
    let named: Vec<&str> =
        FILE.captures_iter(content).map(|m| m.get(1).map_or("", |m| m.as_str()).trim_start_matches("./")).collect();
    if named.is_empty() {
        return None;
    }
    let changed: Vec<String> = (c.saturating_sub(UNTOUCHED_WINDOW)..c)
        .filter(|&j| t.steps[j].kind == StepKind::ToolCall && !refused_call(ctx, j))
        .flat_map(|j| instructions::changed_paths(t, j))
        .map(|(p, _)| p.trim_start_matches("./").to_string())
        .collect();
    let same = |a: &str, b: &str| {
        let tail = |long: &str, short: &str| long == short || long.ends_with(&format!("/{short}"));
        tail(a, b) || tail(b, a)
    };
    (!changed.is_empty() && !named.iter().any(|n| changed.iter().any(|p| same(p, n)))).then_some(named)
}

/// Whether call `c` runs a linter or a format check (`eslint`, `ruff`, `terraform fmt -check`,
/// `cargo fmt --check`, `make lint`…): a checker of style and form, whose complaint about a file
/// no edit of another file causes. A program run or a type check is none: an edit can break
/// code in a file it did not touch (a panic's trace, a caller's type error).
fn lints(t: &Trajectory, c: usize) -> bool {
    static LINTER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)(?:^|[\s/])(?:[\w-]*lint(?:er)?|eslint|ruff|flake8|pycodestyle|pydocstyle|black|isort|prettier|gofmt|goimports|rustfmt|clippy|shellcheck|rubocop|stylelint|hadolint|ktlint|fmt|format)(?:$|[\s:])",
        )
        .expect("a valid pattern")
    });
    call_command(t, c).is_some_and(|cmd| LINTER.is_match(&cmd))
}

/// The last component of a path (`charts.js` of `/home/x/web/src/charts.js`).
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether tool output `r` is a failing linter or format check that names only files the run
/// never changed ([`untouched_named`]) and the agent's next step names one of them ("flags
/// envs/dev/main.tf, which I didn't touch"): a failure that was there before, told, is no
/// failure of the run.
fn preexisting_told(ctx: &Context<'_>, r: usize) -> bool {
    let t = ctx.trajectory;
    let Some(c) = links(ctx).produced_by.get(r).copied().flatten() else { return false };
    let Some(files) = untouched_named(ctx, c, r) else { return false };
    t.steps.get(r + 1).is_some_and(|next| files.iter().any(|f| next.content.contains(file_name(f))))
}

/// How many steps after an edit's first check [`failed_check_after_edit`] looks for the first
/// test run.
const TEST_RUN_WINDOW: usize = 12;

/// Whether call `c`, whose result is step `r`, is a query ([`is_query`]) whose failure its agent
/// tells: the agent's next step that is not a thought is a message that tells the error of `r`
/// ([`tells_error`]). Returns that message's step.
fn query_failure_told(ctx: &Context<'_>, c: usize, r: usize) -> Option<usize> {
    let t = ctx.trajectory;
    if c >= t.steps.len() || !is_query(t, c) {
        return None;
    }
    let agent = &t.steps[c].agent;
    let next = (r + 1..t.steps.len()).find(|&k| t.steps[k].agent == *agent && t.steps[k].kind != StepKind::Thought)?;
    (t.steps[next].kind == StepKind::Message && tells_error(&t.steps[next].content, &t.steps[r].content))
        .then_some(next)
}

/// Whether message `m` is the one that tells a failed query ([`told_query_error`] of the tool
/// output before it, thoughts aside): its error words are the query's error, told.
fn tells_query_error(ctx: &Context<'_>, m: usize) -> bool {
    let t = ctx.trajectory;
    if t.steps[m].kind != StepKind::Message {
        return false;
    }
    let agent = &t.steps[m].agent;
    (0..m).rev().find(|&k| !(t.steps[k].agent == *agent && t.steps[k].kind == StepKind::Thought)).is_some_and(|r| {
        t.steps[r].kind == StepKind::ToolResult && told_query_error(ctx, r).is_some_and(|(_, x)| x == m)
    })
}

/// Whether call `c` is a query: it does not change state ([`changes_state`]) and, for a shell
/// command, only looks something up ([`shell::only_queries`]: no test run, check or build).
fn is_query(t: &Trajectory, c: usize) -> bool {
    t.steps[c].kind == StepKind::ToolCall
        && !changes_state(t, c)
        && call_command(t, c).is_none_or(|cmd| shell::only_queries(&cmd))
}

/// [`query_failure_told`] of the call that tool output `r` answers.
fn told_query_error(ctx: &Context<'_>, r: usize) -> Option<(usize, usize)> {
    let c = links(ctx).produced_by.get(r).copied().flatten()?;
    query_failure_told(ctx, c, r).map(|m| (c, m))
}

/// Whether call `c` is a shell command that runs a test runner ([`shell::runs_tests`]).
fn runs_tests(t: &Trajectory, c: usize) -> bool {
    call_command(t, c).is_some_and(|cmd| shell::commands(&cmd).iter().any(shell::runs_tests))
}

/// What the failing check at step `r` reports, for a reason: the tests it names as failed (at
/// most three) and its last error line ("test_total_is_int_cents failed:
/// tests/test_money.py:8: AssertionError"), at most 120 characters; `None` when it names neither.
pub(crate) fn check_failure(ctx: &Context<'_>, r: usize) -> Option<String> {
    let line = error_line(ctx, r);
    let tests: Vec<String> = failing_tests(&ctx.trajectory.steps[r].content)
        .into_iter()
        .filter(|t| !line.as_deref().is_some_and(|l| l.contains(t.as_str())))
        .take(3)
        .collect();
    let text = match (tests.is_empty(), line) {
        (true, line) => line?,
        (false, None) => format!("{} failed", tests.join(", ")),
        (false, Some(line)) => format!("{} failed: {line}", tests.join(", ")),
    };
    Some(crate::text::clip(&text, 120))
}

/// The names of the tests a test runner's output reports as failed, in order, each once: pytest
/// (`FAILED tests/t.py::test_x - …`, `____ test_x ____` headers), unittest (`FAIL: test_x (…)`),
/// `cargo test` (`test mod::test_x ... FAILED`), `go test` (`--- FAIL: TestX`) and Jest or Mocha
/// (`✕ name`).
pub(crate) fn failing_tests(output: &str) -> Vec<String> {
    static RUNNER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(concat!(
            r"(?m)^(?:FAILED \S*?::(?P<py>[\w\[\]\-.]+)",
            r"|_{3,} (?P<head>(?:\w+\.)*test\w*(?:\[[^\]\n]*\])?) _{3,}\s*$",
            r"|(?:FAIL|ERROR): (?P<ut>test\w*) \(",
            r"|test (?P<cargo>\S+) \.\.\. FAILED\s*$",
            r"|\s*--- FAIL: (?P<go>\S+)",
            r"|\s*[✕×] (?P<js>[^\n(]{1,80}?)(?: \(\d+ ?ms\))?\s*$)"
        ))
        .unwrap()
    });
    let mut names: Vec<String> = Vec::new();
    for c in RUNNER.captures_iter(output) {
        let m = ["py", "head", "ut", "cargo", "go", "js"].iter().find_map(|k| c.name(k));
        let Some(name) = m.map(|m| m.as_str().trim().to_string()) else { continue };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

pub(crate) fn error_line(ctx: &Context<'_>, i: usize) -> Option<String> {
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
    // An output whose command exited with 0 passed, whatever its log lines say.
    let failed = prev.kind == StepKind::ToolResult
        && (prev.flags.failed_execution || prev.flags.error && !prev.flags.empty_result)
        && exit_code(ctx, i - 1) != Some(0);
    // Writing code or editing a file after a failure is an attempt to fix it; the failure the
    // task reports is the work itself.
    // Telling the reader that the program the error shows missing is missing owns up to it,
    // whether at once or in a later message after checking another way (an optional tool such as
    // a local CI runner missing, a linter run instead); a look-up of a program that found nothing
    // ([`guard_found_nothing`]) ran nothing to react to.
    if !failed
        || missing_program_reported(ctx, i - 1).is_some()
        || recovery::missing_program_tried_again(ctx, i)
        || guard_found_nothing(ctx, i - 1)
        || matches!(s.action, Action::WriteCode | Action::Coordinate | Action::Delegate)
        || edits(ctx.trajectory, i)
        || reproduces_reported_failure(ctx, i - 1)
    {
        return;
    }
    // Going on after an error that the agent recovered from is not ignoring it.
    let failed_call = links(ctx).produced_by.get(i - 1).copied().flatten();
    // A failed read (`git diff` with no repository) that the agent's message then tells ("No git
    // repository here, so there is no diff to review") is owned up to, not ignored.
    if failed_call.is_some_and(|c| only_reads(ctx.trajectory, c))
        && s.kind == StepKind::Message
        && tells_error(&ctx.trajectory.steps[i].content, &ctx.trajectory.steps[i - 1].content)
    {
        return;
    }
    if failed_call.is_some_and(|c| recovered(ctx, c)) {
        return;
    }
    // A state change tried again at once after a failure that left its outcome unknown is found
    // as such ([`actions::blind_retry`]).
    if actions::blind_retry_of(ctx, i).is_some() {
        return;
    }
    // A rejected change told as made at once is a misreading of the rejection, found as such
    // ([`actions::told_made_over_rejected`]), not an error gone past.
    if actions::told_made_over_rejection(ctx, i - 1) == Some(i) {
        return;
    }
    // A linter or format check that names only files the run never changed found what was
    // there before; the agent that says so (names one of them) goes on knowingly.
    if let Some(files) = failed_call.and_then(|c| untouched_named(ctx, c, i - 1))
        && files.iter().any(|f| ctx.trajectory.steps[i].content.contains(file_name(f)))
    {
        return;
    }
    // A read (`grep -rn`, `cat`, `sed -n`) that did not fail shows the files' text: the error
    // lines it lists (`self.error('--timeout must be >= 0')`) are code, not an error of the run.
    if failed_call.is_some_and(|c| only_reads(ctx.trajectory, c))
        && !prev.flags.failed_execution
        && !ctx.trajectory.steps[i - 1].is_error
    {
        return;
    }
    // After a failed shell command (a test run, a build), reading files or running a check is
    // looking into the failure, not going on as if it had passed.
    let t = ctx.trajectory;
    let shell = |c: usize| t.steps[c].tool_name.as_deref().is_some_and(|n| is_shell_tool(&n.to_ascii_lowercase()));
    if failed_call.is_some_and(shell) && t.steps[i].kind == StepKind::ToolCall && !changes_state(t, i) {
        return;
    }
    // After a failed query, a query of the same kind (the same lookup retried or corrected, the
    // next region's query) changes nothing: it retries or goes on with the other parts, and what
    // the agent then tells or changes is where an ignored failure shows
    // ([`actions::claimed_over_failure`]). Another tool is going on as if the lookup had answered.
    if let Some(c) = failed_call
        && is_query(t, c)
        && is_query(t, i)
        && actions::same_kind(t.steps[c].tool_name.as_deref(), t.steps[i].tool_name.as_deref())
    {
        return;
    }
    // After a failed state change, a lookup (the order listed by its reference, the booking
    // fetched) checks what the failure left; what the agent then does or tells is where an ignored
    // failure shows.
    if failed_call.is_some_and(|c| changes_state(t, c)) && t.steps[i].kind == StepKind::ToolCall && is_query(t, i) {
        return;
    }
    // A message or thought that names what the error quotes has read it; a thought that writes
    // code again (a code agent's `<code>` block, a fenced block) is trying to fix it.
    if matches!(s.kind, StepKind::Message | StepKind::Thought)
        && names_what_error_quotes(&t.steps[i].content, &t.steps[i - 1].content)
        || s.kind == StepKind::Thought && ["<code>", "```"].iter().any(|m| t.steps[i].content.contains(m))
    {
        return;
    }
    let low = lower_of(ctx, i);
    let acknowledges = ["error", "fail", "issue", "problem", "fix", "correct", "unable", "not work", "exception"]
        .iter()
        .any(|w| low.contains(w));
    if !acknowledges {
        let evidence = match goes_on_over_refused_edit(ctx, i) {
            Some(c) => prose![
                "goes on as if the edit at step ",
                Part::Step(c),
                " were made; the editor refused it at step ",
                Part::Step(i - 1)
            ],
            None => prose!["goes on after the error at step ", Part::Step(i - 1)],
        };
        out.push(finding(Signal::IgnoredToolError, weights::IGNORED_ERROR, evidence));
    }
}

/// The edit call whose refusal step `i` (0-based) goes on after: step
/// `i - 1` answers an editor's edit the editor refused ([`coding::refused_edit`]) and the agent
/// did not make again ([`coding::recovered_edit`]). The run then goes on without the change, so
/// the step that goes on carries the missing change to the output.
pub(crate) fn goes_on_over_refused_edit(ctx: &Context<'_>, i: usize) -> Option<usize> {
    let c = links(ctx).produced_by.get(i.checked_sub(1)?).copied().flatten()?;
    (coding::refused_edit(ctx, c) && !coding::recovered_edit(ctx, c)).then_some(c)
}

/// Page title / address of a browsing step, as the step writes it.
fn browse_target(content: &str) -> Option<String> {
    // ASCII lower-casing keeps byte offsets valid for `content`.
    let low = content.to_ascii_lowercase();
    if let Some(p) = low.find("screenshot of [") {
        let rest = &content[p + 15..];
        let end = rest.find("](").unwrap_or_else(|| {
            // At most 120 bytes, ending on a character.
            let mut end = rest.len().min(120);
            while !rest.is_char_boundary(end) {
                end -= 1;
            }
            end
        });
        return Some(rest[..end].to_string());
    }
    for key in ["title: ", "address: "] {
        if let Some(p) = low.find(key) {
            let rest = &content[p + key.len()..];
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
    let target_low = target.to_lowercase();
    let hit = stems.iter().any(|t| target_low.contains(t.as_str()));
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
    // The served person's request is the task, not a routing decision of the system.
    if actions::served_person(step) {
        return;
    }
    let Some(reply) = links(ctx).reply_to.get(i).copied().flatten() else {
        return;
    };
    // An error the delegate recovered from (the lookup corrected and run again) is part of its
    // work: the delegate could act on the request.
    if recovered_error(ctx, reply) {
        return;
    }
    let r = &ctx.hierarchy.steps[reply];
    if r.flags.empty_result || r.flags.failed_execution || r.flags.error && r.kind == StepKind::ToolResult {
        let target = step.delegate_to.as_deref().unwrap_or("the delegate");
        out.push(finding(
            Signal::WrongDelegation,
            weights::WRONG_DELEGATION,
            prose![format!("{target} could not act on it (step "), Part::Step(reply), format!(": {})", r.decision)],
        ));
    }
}

/// Words too common to tell one specialist's remit from another's ([`misrouted`]).
const ROUTING_STOP: [&str; 40] = [
    "that",
    "this",
    "with",
    "from",
    "have",
    "your",
    "they",
    "them",
    "their",
    "what",
    "when",
    "which",
    "about",
    "into",
    "only",
    "also",
    "other",
    "agent",
    "agents",
    "handle",
    "handles",
    "hand",
    "handoff",
    "questions",
    "issues",
    "issue",
    "customer",
    "customers",
    "user",
    "users",
    "requests",
    "request",
    "anything",
    "things",
    "help",
    "with",
    "like",
    "such",
    "specialist",
    "exactly",
];

/// The lower-case content words of a text (four letters or more, not in [`ROUTING_STOP`]), cut
/// to their first five letters so that "charge" meets "charges" and "changed" meets "changes".
fn routing_stems(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 4)
        .map(str::to_lowercase)
        .filter(|w| !ROUTING_STOP.contains(&w.as_str()))
        .map(|w| w.chars().take(5).collect())
        .collect()
}

/// One specialist's name as the instructions and the hand-off may write it: lower case, words
/// apart, without a hand-off tool's verb (`transfer_to_billing_agent`, `Billing Agent` and
/// `billing-agent` are `billing agent`).
fn specialist_key(name: &str) -> String {
    let words = name.trim_matches('`').to_lowercase().replace(['_', '-'], " ");
    let words: Vec<&str> = words.split_whitespace().collect();
    let verb = match words.as_slice() {
        ["transfer" | "handoff" | "delegate" | "route", "to", ..] => 2,
        ["hand", "off", "to", ..] => 3,
        _ => 0,
    };
    words[verb.min(words.len())..].join(" ")
}

/// The pattern of a specialist name ending in `suffix` ("billing agent", `security_agent`),
/// compiled once per suffix and thread: a long run asks it at every hand-off.
fn sibling_pattern(suffix: &str) -> Option<regex::Regex> {
    thread_local! {
        static CACHE: std::cell::RefCell<HashMap<String, Option<regex::Regex>>> = Default::default();
    }
    CACHE.with(|c| {
        c.borrow_mut()
            .entry(suffix.to_string())
            .or_insert_with(|| {
                regex::Regex::new(&format!(r"(?i)\b(?:[a-z][a-z0-9]*[ _-]){{1,3}}{}\b", regex::escape(suffix))).ok()
            })
            .clone()
    })
}

/// Step `i`, a hand-off to agent C, where the delegating agent's instructions (its role text)
/// describe what each specialist takes ("Billing Agent (charges, refunds, plans, invoices),
/// Account Security Agent (suspected account takeover, password or email changes…)", or a list
/// of topics and hand-off tools: "- charges, refunds -> transfer_to_billing_agent", "refunds:
/// `billing_agent`", "for refunds use billing_agent") and the request being routed (the user's
/// last turn, else the task) matches another specialist's description better than C's: more
/// shared content words ([`routing_stems`], at least two), or any when the instructions give
/// that specialist priority ("Security issues take priority over everything else", "a disputed
/// payment goes to the Billing Agent even if a meter fault is mentioned too") and not C. A
/// description is the text after the specialist's name up to the next specialist's name, the end
/// of the sentence or of the line, or else the clause before the name. C is named by the agent
/// handed to or by the hand-off tool ([`specialist_key`]).
fn misrouted(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    let Some(chosen) = step.delegate_to.as_deref().filter(|_| step.kind == StepKind::Delegation) else { return };
    let Some(rules) = t.agents.iter().find(|a| a.name == step.agent).and_then(|a| a.role.as_deref()) else { return };
    let lower = rules.to_lowercase();
    // The specialists the instructions name, with where their names stand: the run's agents, and
    // names built like the chosen one's (a specialist that never acted in this run: "Account
    // Security Agent" beside "Billing Agent", `security_agent` beside `billing_agent`).
    let mut named: Vec<(usize, String)> = Vec::new();
    for a in t.agents.iter().filter(|a| a.name != step.agent && !is_outside_agent(&a.name)) {
        if let Some(p) = lower.find(&a.name.to_lowercase()) {
            named.push((p, a.name.clone()));
        }
    }
    let suffix = chosen.rsplit([' ', '_', '-']).next().unwrap_or("").to_lowercase();
    if suffix.len() >= 3
        && suffix != chosen.to_lowercase()
        && let Some(sibling) = sibling_pattern(&suffix)
    {
        for m in sibling.find_iter(rules) {
            if !named.iter().any(|(p, n)| *p <= m.start() && m.start() < p + n.len() || m.start() <= *p && *p < m.end())
            {
                // Drop a leading article or verb the pattern took ("to Billing Agent").
                let name = m.as_str();
                let words: Vec<&str> = name.split([' ', '_', '-']).collect();
                // An identifier is its last word ("use billing_agent").
                let offset = if name.contains('_') {
                    name.rfind(' ').map_or(0, |x| x + 1)
                } else {
                    let keep = words.iter().position(|w| w.chars().next().is_some_and(char::is_uppercase)).unwrap_or(0);
                    words[..keep].iter().map(|w| w.len() + 1).sum::<usize>()
                };
                named.push((m.start() + offset, name[offset..].to_string()));
            }
        }
    }
    // Identifiers a routing sentence or list sends work to ("route billing … to billing_agent",
    // "refunds -> transfer_to_billing_agent", "refunds: `billing_agent`", "for refunds use
    // billing_agent").
    static ROUTE_TO: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)(?:\bto |\buse |\bcall |->|→|=>|:)\s*(?:the )?`?([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b")
            .unwrap()
    });
    for c in ROUTE_TO.captures_iter(rules) {
        let m = c.get(1).expect("group 1");
        if !named.iter().any(|(p, n)| *p <= m.start() && m.start() < p + n.len()) {
            named.push((m.start(), m.as_str().to_string()));
        }
    }
    named.sort();
    named.dedup_by(|a, b| a.1.eq_ignore_ascii_case(&b.1));
    // The chosen specialist, by the agent's name or the hand-off tool's.
    let keys: Vec<String> =
        [Some(chosen), step.tool_name.as_deref()].into_iter().flatten().map(specialist_key).collect();
    let is_chosen = |n: &str| keys.contains(&specialist_key(n));
    if named.len() < 2 || !named.iter().any(|(_, n)| is_chosen(n)) {
        return;
    }
    // What the instructions give a specialist: the text after its name up to the next name or
    // the end of the clause ("Billing Agent (charges, refunds, …)"), or, when that holds fewer
    // than two content words, the clause before it ("route outages, login and connectivity
    // problems to tech_support").
    let describe = |k: usize| -> &str {
        let (p, name) = &named[k];
        let from = p + name.len();
        let until = named.get(k + 1).map_or(lower.len(), |(q, _)| *q);
        let after = &lower[from..until.max(from)];
        let end = after.find([';', '\n']).or_else(|| after.find(". ")).unwrap_or(after.len());
        let after = &after[..end];
        if routing_stems(after).len() >= 2 {
            return after;
        }
        let since = k.checked_sub(1).map_or(0, |j| named[j].0 + named[j].1.len()).min(*p);
        let before = &lower[since..*p];
        let start = before.rfind([';', '\n', '.']).map_or(0, |x| x + 1);
        // A colon ends the clause unless the clause ends in it ("refunds: billing_agent").
        let start = before[start..]
            .rfind(':')
            .map(|x| start + x + 1)
            .filter(|&x| routing_stems(&before[x..]).len() >= 2)
            .unwrap_or(start);
        &before[start..]
    };
    let request =
        (0..i).rev().find(|&j| actions::is_human(&t.steps[j])).map_or(t.task.as_str(), |j| t.steps[j].content.as_str());
    let wanted = routing_stems(request);
    let score = |k: usize| -> Vec<String> {
        let mut shared: Vec<String> = routing_stems(describe(k)).intersection(&wanted).cloned().collect();
        shared.sort();
        shared
    };
    // A specialist the instructions put first: a sentence with "priority" or "precedence", or
    // one that keeps a topic with it whatever else the request holds ("…, the Billing Agent takes
    // it, even if a meter fault is mentioned as well"; "regardless of"), that holds a word of its
    // name other than "agent" (before the "even if": what follows it is the topic overridden).
    let first = |name: &str| {
        lower.split(['.', '\n']).any(|sentence| {
            let main = ["even if", "even when", "regardless of"]
                .iter()
                .find_map(|w| sentence.find(w).map(|p| &sentence[..p]))
                .or_else(|| (sentence.contains("priority") || sentence.contains("precedence")).then_some(sentence));
            main.is_some_and(|main| {
                name.to_lowercase().split_whitespace().any(|w| w != "agent" && w.len() >= 4 && main.contains(w))
            })
        })
    };
    let chosen_score = (0..named.len()).filter(|&k| is_chosen(&named[k].1)).map(|k| score(k).len()).max().unwrap_or(0);
    let better = (0..named.len())
        .filter(|&k| !is_chosen(&named[k].1))
        .map(|k| (k, score(k)))
        .max_by_key(|(k, sc)| (first(&named[*k].1) && !sc.is_empty(), sc.len()));
    let Some((k, shared)) = better else { return };
    let priority = first(&named[k].1) && !first(chosen) && !shared.is_empty();
    if !(priority || shared.len() >= 2 && shared.len() > chosen_score) {
        return;
    }
    // A hand-back to the agent that delegated this one the work returns control; and once the
    // specialist the request matches better has acted in the run, a hand-off to another is the
    // request's next part (the quote got, then the purchase order raised).
    let key_of = |s: &crate::model::Step| specialist_key(&s.agent);
    let returns = (0..i).any(|j| {
        keys.contains(&key_of(&t.steps[j]))
            && t.steps[j].delegate_to.as_deref().is_some_and(|d| specialist_key(d) == specialist_key(&step.agent))
    });
    let better_key = specialist_key(&named[k].1);
    let better_acted = (0..i).any(|j| key_of(&t.steps[j]) == better_key);
    if returns || better_acted {
        return;
    }
    // The request's own words for the shared stems ("password", not "passw").
    let words: Vec<String> = shared
        .iter()
        .filter_map(|stem| {
            request
                .split(|c: char| !c.is_alphanumeric())
                .map(str::to_lowercase)
                .find(|w| w.chars().count() >= 4 && w.starts_with(stem.as_str()))
        })
        .take(4)
        .collect();
    let description = text::clip(describe(k).trim_matches(|c: char| !c.is_alphanumeric()), 40);
    let first = if priority { " first" } else { "" };
    out.push(finding(
        Signal::WrongDelegation,
        weights::WRONG_DELEGATION,
        format!(
            "hands off to {chosen}; its instructions give {} \"{description}\"{first}, which the request matches ({})",
            named[k].1,
            words.join(", "),
        ),
    ));
}

/// How many steps before a delegate's step [`misrouted_by`] looks for the hand-off to it.
const HANDOFF_LOOKBACK: usize = 200;

/// The hand-off that step `to` works under, when that hand-off went against the delegating
/// agent's routing instructions ([`misrouted`]): the last delegation to `to`'s agent within
/// [`HANDOFF_LOOKBACK`] steps before it. Everything the wrong specialist does answers a request
/// it should not have been given, so FALAT labels the pair `follow_up`. `None` otherwise.
pub fn misrouted_by(ctx: &Context<'_>, to: usize) -> Option<usize> {
    let t = ctx.trajectory;
    let agent = &t.steps.get(to)?.agent;
    let j = (to.saturating_sub(HANDOFF_LOOKBACK)..to)
        .rev()
        .find(|&j| t.steps[j].kind == StepKind::Delegation && t.steps[j].delegate_to.as_deref() == Some(agent))?;
    // Which hand-offs are misrouted is decided once per run: every step of a specialist asks.
    let misrouted_handoffs = ctx.facts.misrouted_handoffs.get_or_init(|| {
        (0..t.steps.len())
            .filter(|&k| t.steps[k].kind == StepKind::Delegation)
            .filter(|&k| {
                let mut found = Vec::new();
                misrouted(ctx, k, &mut found);
                !found.is_empty()
            })
            .collect()
    });
    misrouted_handoffs.binary_search(&j).is_ok().then_some(j)
}

fn premature(ctx: &Context<'_>, s: &StepSummary, out: &mut Vec<Finding>) {
    if !(s.flags.answer || s.action == Action::Terminate) || s.action == Action::Plan {
        return;
    }
    // Ends while the last tool output before it reports an error.
    let last_tool = (0..s.index).rev().find(|&j| ctx.hierarchy.steps[j].kind == StepKind::ToolResult);
    if let Some(j) = last_tool.filter(|&j| ctx.hierarchy.steps[j].flags.failed_execution) {
        out.push(finding(
            Signal::PrematureAnswer,
            weights::PREMATURE,
            prose!["answers although step ", Part::Step(j), " failed"],
        ));
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
            "claims a verified answer with no tool output behind it",
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
            // Run again after the agent changed something (a missing package installed, the
            // database upgraded), or run again with success: a retry, not a blind repeat.
            let changed =
                (j + 1..i).any(|k| ctx.trajectory.steps[k].agent == s.agent && changes_state(ctx.trajectory, k));
            // A program that reports what it found by its exit code (`npm audit` 1 after a DNS
            // error) ran this time: its report is no failure.
            let worked = result_of(ctx, i).is_some_and(|r| !shows_failure(ctx, r) || reports_by_exit_code(ctx, i, r));
            if changed || worked {
                return;
            }
            out.push(finding(
                Signal::RepeatedFailure,
                weights::REPEATED,
                prose!["repeats step ", Part::Step(j), ", which already failed"],
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

/// The step holding the final output: the step that states the answer the run returned
/// ([`compute_final_step`]; computed once per hierarchy).
pub fn final_step(ctx: &Context<'_>) -> Option<usize> {
    *ctx.facts.final_step.get_or_init(|| compute_final_step(ctx))
}

/// The lower-case content of step `i` (computed once per hierarchy).
pub(crate) fn lower_of<'a>(ctx: &Context<'a>, i: usize) -> &'a str {
    &ctx.facts.lower.get_or_init(|| ctx.trajectory.steps.iter().map(|s| s.content.to_lowercase()).collect())[i]
}

pub(crate) fn words_of<'a>(ctx: &Context<'a>, i: usize) -> &'a HashSet<String> {
    &ctx.facts.word_sets.get_or_init(|| ctx.trajectory.steps.iter().map(|s| word_set(&s.content)).collect())[i]
}

/// The final output is the step that states the answer the run returned, not a "request
/// satisfied" line and not a closing courtesy turn. In order:
/// 1. the last step outside tool outputs with an explicit final-answer line (`FINAL ANSWER:`,
///    `Final answer:`), whatever its action (a termination message that carries the answer);
/// 2. the last step outside tool outputs that states the recorded observed output (its first
///    line, at least 8 characters);
/// 3. the last step with substance (over 15 characters) that is not a tool output, a ledger
///    update, a bare termination, a completion claim with nothing else in it, or a turn of
///    someone outside the agent system (the user's thanks or goodbye) when an agent spoke;
/// 4. the last step.
fn compute_final_step(ctx: &Context<'_>) -> Option<usize> {
    let steps = &ctx.hierarchy.steps;
    let t = ctx.trajectory;
    let speaks = |s: &&StepSummary| s.kind != StepKind::ToolResult || is_agent_output(ctx, s.index);
    if let Some(s) = steps.iter().rev().filter(speaks).find(|s| FINAL_ANSWER_LINE.is_match(&t.steps[s.index].content)) {
        return Some(s.index);
    }
    if let Some(o) = observed_lead(t) {
        // The last statement of it, by an agent (a user quoting the answer back does not give it).
        if let Some(s) = steps
            .iter()
            .rev()
            .filter(speaks)
            .find(|s| !is_outside_agent(&s.agent) && t.steps[s.index].content.contains(o))
        {
            return Some(s.index);
        }
    }
    let agents_speak = steps.iter().any(|s| !is_outside_agent(&s.agent) && s.action != Action::Request);
    steps
        .iter()
        .rev()
        .find(|s| {
            let content = t.steps[s.index].content.trim();
            !matches!(s.action, Action::Terminate | Action::Coordinate | Action::ToolOutput)
                && content.len() > 15
                && !COMPLETION_ONLY.is_match(content)
                && (!agents_speak || !is_outside_agent(&s.agent))
        })
        .or_else(|| steps.last())
        .map(|s| s.index)
}

/// The first line of the recorded observed output when it is long enough (8 characters or more)
/// to be looked for in a step.
fn observed_lead(t: &Trajectory) -> Option<&str> {
    let observed = t.observed_output.as_deref()?;
    observed.lines().map(str::trim).find(|l| !l.is_empty()).filter(|o| o.chars().count() >= 8)
}

/// Whether step `i` (0-based) of `t` states the run's answer: it has a final-answer line, or it
/// holds the first line of the recorded observed output (the first two rules of the final
/// output's step). `false` for a step taken as the final output only as the run's last step of
/// substance, and for an index past the end.
pub fn states_answer(t: &Trajectory, i: usize) -> bool {
    t.steps.get(i).is_some_and(|s| {
        FINAL_ANSWER_LINE.is_match(&s.content) || observed_lead(t).is_some_and(|o| s.content.contains(o))
    })
}

/// An explicit final-answer line: `FINAL ANSWER: …`, `Final answer: …` at the start of a line.
static FINAL_ANSWER_LINE: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"(?im)^\s*(\*\*)?final answer(\*\*)?\s*[:：]").unwrap());

/// A step that only claims completion ("Request satisfied.", "Task completed successfully.",
/// "Done."), with no answer in it.
static COMPLETION_ONLY: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)^\W*(the )?(request|task|job|work)?\s*(is |has been |was )?(satisfied|complete|completed|done|finished)( successfully)?\W*$",
    )
    .unwrap()
});

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

/// Whether step `i` tells the user a value: an agent's message (not a tool call or output) that
/// states a number or a date and is answered by someone outside the agent system (the next
/// turn that is not a tool output is the user's), or ends the run. What the user reads is an
/// output of the run, whether or not a later step quotes it.
pub fn tells_user_a_value(ctx: &Context<'_>, i: usize) -> bool {
    let t = ctx.trajectory;
    let Some(step) = t.steps.get(i) else { return false };
    if step.kind != StepKind::Message || is_outside_agent(&step.agent) {
        return false;
    }
    let states_value = ctx.hierarchy.evidence[i]
        .iter()
        .any(|e| matches!(e.kind, EvidenceKind::Number | EvidenceKind::Date) && !evidence::is_trivial_number(&e.key));
    let next = t.steps[i + 1..].iter().find(|s| s.kind != StepKind::ToolResult);
    states_value && next.is_none_or(|s| is_outside_agent(&s.agent))
}

/// Whether an agent name stands for someone outside the agent system (the user, the system).
pub(crate) fn is_outside_agent(agent: &str) -> bool {
    matches!(agent.to_ascii_lowercase().as_str(), "user" | "human" | "system" | "developer")
}

/// The items of the observed output: the final-answer text split at commas, semicolons and line
/// breaks; without one, the numbers of a final step that states an answer. Lower case.
/// The words that open a final step's answer line: "The answer is", "The final answer is", "FINAL
/// ANSWER:", "Answer:".
static ANSWER_LINE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"(?i)\b(?:the\s+(?:final\s+)?answer\s+is\b|final\s+answer\s*:|answer\s*:)").unwrap()
});

pub fn output_items(ctx: &Context<'_>) -> Vec<String> {
    let text = match &ctx.trajectory.observed_output {
        Some(o) => o.clone(),
        None => match final_step(ctx) {
            Some(i) if ctx.hierarchy.steps[i].flags.answer || ctx.hierarchy.steps[i].action == Action::Discuss => {
                let content = &ctx.trajectory.steps[i].content;
                // A step that works the answer out and then states it ("235,684 × 1.0027 =
                // 236,320.3, so 236,320. The answer is 236320.") returns the answer line's
                // figures, not the working's.
                let line = ANSWER_LINE.find_iter(content).last().map(|m| {
                    let end = content[m.end()..].find('\n').map_or(content.len(), |p| m.end() + p);
                    m.start()..end
                });
                let numbers: Vec<String> = ctx.hierarchy.evidence[i]
                    .iter()
                    .filter(|e| e.kind == EvidenceKind::Number && !evidence::is_trivial_number(&e.key))
                    .filter(|e| line.as_ref().is_none_or(|l| l.contains(&e.span.start)))
                    .map(|e| e.text(content).to_lowercase())
                    .collect();
                return numbers;
            }
            _ => return Vec::new(),
        },
    };
    split_items(&text)
        .map(|s| s.trim().trim_matches(['.', '"', '\'']).to_lowercase())
        .filter(|s| s.chars().count() >= 3)
        .take(8)
        .collect()
}

/// The items of an output text: its parts between commas, semicolons and line breaks, where a
/// comma between two digits is a thousands separator and splits nothing (`$1,095.55` stays one
/// figure).
fn split_items(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut cuts = Vec::new();
    for (k, &b) in bytes.iter().enumerate() {
        let separator = match b {
            b';' | b'\n' => true,
            b',' => !(k > 0 && bytes[k - 1].is_ascii_digit() && bytes.get(k + 1).is_some_and(u8::is_ascii_digit)),
            _ => false,
        };
        if separator {
            cuts.push(start..k);
            start = k + 1;
        }
    }
    cuts.push(start..text.len());
    cuts.into_iter().map(move |r| &text[r])
}

/// Whether an output item agrees with the expected output (whole-word containment either way, or
/// equal numbers). Values are matched as values: "10" does not agree with "#W1023410", whose
/// digits only happen to contain it.
#[cfg(test)]
fn agrees(item: &str, expected: &str) -> bool {
    ExpectedIndex::of(expected).agrees(item)
}

/// The expected output `o*` trimmed and lower-cased, with the normalised keys of the numbers it
/// states: built once per trajectory ([`crate::substrate::Facts::expected_index`]), so that asking
/// whether an output item agrees with it never scans a long expected output again.
#[derive(Debug, Clone, Default)]
pub struct ExpectedIndex {
    /// The expected output, trimmed and lower-cased.
    pub lower: String,
    /// The normalised keys of its numbers ([`evidence::normalize_number`]).
    pub numbers: HashSet<String>,
}

impl ExpectedIndex {
    /// Indexes an expected output.
    pub fn of(expected: &str) -> ExpectedIndex {
        let lower = expected.trim().to_lowercase();
        let numbers = evidence::extract_text(&lower)
            .into_iter()
            .filter(|e| e.kind == EvidenceKind::Number)
            .map(|e| e.key)
            .collect();
        ExpectedIndex { lower, numbers }
    }

    /// Whether an output item (lower case) agrees with the expected output: one contains the
    /// other as whole words, or the item is a number the expected output states.
    pub fn agrees(&self, item: &str) -> bool {
        if contains_word(&self.lower, item) || contains_word(item, &self.lower) {
            return true;
        }
        let n = evidence::normalize_number(item);
        if !n.is_empty() {
            return self.numbers.contains(&n);
        }
        // A line that states one of the expected figures ("the total refund is $1,095.55") gives
        // it, whatever else it states on the way (the items it adds up).
        evidence::extract_text(item).iter().any(|e| {
            e.kind == EvidenceKind::Number && !evidence::is_trivial_number(&e.key) && self.numbers.contains(&e.key)
        })
    }
}

/// The expected output's index when ground truth may be used.
fn expected_index<'a>(ctx: &Context<'a>) -> Option<&'a ExpectedIndex> {
    ctx.expected()?;
    ctx.facts.expected_index.get_or_init(|| ctx.trajectory.expected_output.as_deref().map(ExpectedIndex::of)).as_ref()
}

/// Whether tool output `r` says the user refused the call (a permission prompt answered no): the
/// agent asked and the person in the loop declined, which is their decision, not a failed or
/// rejected action of the agent's. Read from the output's opening (lower case).
pub fn refused_by_user(ctx: &Context<'_>, r: usize) -> bool {
    let Some(s) = ctx.trajectory.steps.get(r) else { return false };
    if s.kind != StepKind::ToolResult {
        return false;
    }
    let head: String = lower_of(ctx, r).chars().take(200).collect();
    [
        "user doesn't want to proceed",
        "user does not want to proceed",
        "user denied",
        "user declined",
        "user rejected",
        "user refused",
        "denied by the user",
        "declined by the user",
        "rejected by the user",
        "refused by the user",
        // Codex: "exec command rejected by user", "patch rejected by user".
        "rejected by user",
        "denied by user",
        "declined by user",
        "cancelled by user",
        "canceled by user",
        // Gemini CLI: "[Operation Cancelled] Reason: User denied execution." / "User did not
        // allow tool call".
        "user did not allow",
        "user cancelled",
        "user canceled",
    ]
    .iter()
    .any(|p| head.contains(p))
}

/// Why the run shows no failure, one clause, or `None` when it shows one ([`failure_shown`]): no
/// step is an error or a failed execution (as the format or the content says), the run's record
/// does not say it failed, no step of the whole run has a finding ([`recall`]), and, with ground
/// truth, the observed output agrees with the expected one. FALAT then says "no failure found"
/// instead of naming a ROOT_CAUSE.
pub fn no_failure(ctx: &Context<'_>) -> Option<Prose> {
    let t = ctx.trajectory;
    if t.steps.is_empty() || failure_shown(ctx).is_some() {
        return None;
    }
    let expected = if ctx.ground_truth { t.expected_output.as_deref().map(str::trim) } else { None };
    let output = match expected.filter(|e| !e.is_empty()) {
        Some(_) => "the output agrees with the expected output",
        None => "there is no expected output to compare the output with",
    };
    let mut stop: Vec<Part> = match (0..t.steps.len()).find(|&r| refused_by_user(ctx, r)) {
        Some(r) => match links(ctx).produced_by.get(r).copied().flatten() {
            Some(call) => vec![
                "the user refused the call at step ".into(),
                Part::Step(call),
                " (the refusal is step ".into(),
                Part::Step(r),
                "); ".into(),
            ],
            None => vec!["the user refused the call answered at step ".into(), Part::Step(r), "; ".into()],
        },
        None => Vec::new(),
    };
    let errors: Vec<usize> = (0..t.steps.len())
        .filter(|&r| {
            t.steps[r].is_error || ctx.hierarchy.steps[r].flags.error && t.steps[r].kind == StepKind::ToolResult
        })
        .collect();
    if let Some(&r) = errors.iter().find(|&&r| reproduces_reported_failure(ctx, r)) {
        stop.extend(["step ".into(), Part::Step(r), " reproduces the failure the task reports; ".into()]);
    }
    // Per missing program, the outputs that show it and the message that tells it (at most three
    // programs): "steps 6 and 8 show `pytest` missing, which the agent tells at step 11".
    let mut told: Vec<(String, Vec<usize>, usize)> = Vec::new();
    for &r in &errors {
        let (Some(m), Some(name)) = (missing_program_reported(ctx, r), missing_program(ctx, r)) else { continue };
        if let Some(k) = told.iter().position(|(n, _, _)| *n == name) {
            told[k].1.push(r);
        } else if told.len() < 3 {
            told.push((name, vec![r], m));
        }
    }
    for (name, steps, m) in told {
        stop.push(if steps.len() == 1 { "step " } else { "steps " }.into());
        for (k, r) in steps.iter().enumerate() {
            stop.push(match k {
                0 => "".into(),
                k if k + 1 == steps.len() => " and ".into(),
                _ => ", ".into(),
            });
            stop.push(Part::Step(*r));
        }
        let verb = if steps.len() == 1 { "shows" } else { "show" };
        stop.extend([
            format!(" {verb} `{}` missing, which the agent tells at step ", crate::text::clip(&name, 40)).into(),
            Part::Step(m),
            "; ".into(),
        ]);
    }
    // A failed query the agent told the reader about (at most three).
    for (c, m) in errors.iter().filter_map(|&r| told_query_error(ctx, r)).take(3) {
        stop.extend([
            "the query at step ".into(),
            Part::Step(c),
            " failed, which the agent tells at step ".into(),
            Part::Step(m),
            "; ".into(),
        ]);
    }
    // The reproduction, already told, is not told again as recovered.
    let recovered: Vec<usize> =
        errors.into_iter().filter(|&r| recovered_error(ctx, r) && !reproduces_reported_failure(ctx, r)).collect();
    if !recovered.is_empty() {
        let (noun, verb) = if recovered.len() == 1 { ("error", "was") } else { ("errors", "were") };
        stop.push(format!("the tool {noun} at step ").into());
        for (k, r) in recovered.iter().enumerate() {
            if k > 0 {
                stop.push(", ".into());
            }
            stop.push(Part::Step(*r));
        }
        stop.push(format!(" {verb} recovered from; ").into());
    }
    if !stop.is_empty() {
        stop.push("otherwise ".into());
    }
    stop.push(format!("no step is an error or shows a finding, and {output}").into());
    if let Some(last) = unanswered(t) {
        let what = match t.steps[last].kind {
            StepKind::ToolCall => "a tool call",
            StepKind::ToolResult => "a tool result",
            StepKind::Delegation => "a hand-off",
            StepKind::Thought => "the agent's own reasoning",
            StepKind::Message => "a message",
        };
        stop.extend([
            "; but the run records no answer: it ends at step ".into(),
            Part::Step(last),
            format!(", {what}, and no agent tells an outcome after the last request, so the trace does not show whether the task was done").into(),
        ]);
    }
    Some(Prose::new(stop))
}

/// The last step of `t` (0-based) when the run records no answer: no observed output, the run
/// ends on an agent's step, and no message of an agent follows the last turn of the user (or
/// system) that asked for the work. `None` when an agent answered or the user spoke last.
fn unanswered(t: &Trajectory) -> Option<usize> {
    if t.observed_output.as_deref().is_some_and(|o| !o.trim().is_empty()) {
        return None;
    }
    let asked = t.steps.iter().rposition(|s| is_outside_agent(&s.agent)).map_or(0, |u| u + 1);
    // A run that ends on the user's own turn (a refusal, a last question) is told by its own clause.
    if asked >= t.steps.len() {
        return None;
    }
    let answered = t.steps[asked..]
        .iter()
        .any(|s| s.kind == StepKind::Message && !is_outside_agent(&s.agent) && !s.content.trim().is_empty());
    (!answered).then(|| t.steps.len().checked_sub(1)).flatten()
}

/// Whether the tool output at step `r` (0-based) answers a call the agent recovered from
/// ([`actions::recovered`]: the lookup retried with success, the change made another way).
fn recovered_error(ctx: &Context<'_>, r: usize) -> bool {
    links(ctx).produced_by.get(r).copied().flatten().is_some_and(|c| recovered(ctx, c))
}

/// Whether the agent recovered from the error of call `c`: [`actions::recovered`] (a lookup
/// retried, a change made another way, a command run again with success), an edit the editor
/// refused that the agent made again with success ([`coding::recovered_edit`]), a shell edit
/// whose error the agent checked and corrected at once ([`coding::edit_checked_at_once`]), a check that
/// passed again after a fix ([`recovery::check_recovered`]), code run again corrected
/// ([`recovery::code_recovered`]), or a program found missing and run another way
/// ([`recovery::missing_program_recovered`]).
pub(crate) fn recovered(ctx: &Context<'_>, c: usize) -> bool {
    actions::recovered(ctx, c)
        || coding::recovered_edit(ctx, c)
        || coding::edit_checked_at_once(ctx, c)
        || recovery::recovered_by_another_command(ctx, c)
}

/// The first sign that the run failed, one clause (`step 7 is an error`, `the run's record says
/// reward=0`, `the output disagrees with the expected output`, `step 12 shows a finding
/// (unsourced_value): states 18450 with no earlier source`), or
/// `None` when it shows none (then [`no_failure`] applies). Checked in that order, and last a
/// code executor's turn with no code to run (`the code executor had no code to run at step 1`);
/// steps 0-based.
/// A report that names a step with no finding of its own says this, so the user can tell a weak
/// verdict on a failed run from a run with no failure.
pub fn failure_shown(ctx: &Context<'_>) -> Option<Prose> {
    let t = ctx.trajectory;
    // A code executor that had nothing to run is the weakest sign: any other goes first.
    let (idle, errors): (Vec<usize>, Vec<usize>) = ctx
        .hierarchy
        .steps
        .iter()
        .map(|s| s.index)
        .filter(|&i| unresolved_error(ctx, i))
        .partition(|&i| nothing_to_run(&t.steps[i].content));
    if let Some(&i) = errors.first() {
        return Some(prose!["step ", Part::Step(i), " is an error"]);
    }
    if let Some(r) = recorded_failure(t) {
        return Some(format!("the run's record says {r}").into());
    }
    let expected = if ctx.ground_truth { t.expected_output.as_deref().map(str::trim) } else { None };
    if expected.is_some_and(|e| !e.is_empty()) && !output_agrees(ctx) {
        // A run whose answer falat could not find has no output to disagree.
        let answered = t.observed_output.as_deref().is_some_and(|o| !o.trim().is_empty());
        let shown = if answered {
            "the output disagrees with the expected output"
        } else {
            "the run states no output that agrees with the expected output"
        };
        return Some(shown.into());
    }
    (0..t.steps.len())
        .find_map(|i| Some((i, recall(ctx, i)?)))
        .map(|(i, f)| shown_finding(i, &f[0]))
        .or_else(|| idle.first().map(|&i| prose!["the code executor had no code to run at step ", Part::Step(i)]))
}

/// How many characters of a finding's evidence [`failure_shown`] quotes.
const SHOWN_EVIDENCE: usize = 160;

/// The clause naming step `i`'s finding `f` (its signal and evidence, clipped), so that a report
/// naming another step can say what shows the failure: `step 19 shows a finding
/// (unsourced_value): states 18450 with no earlier source`.
fn shown_finding(i: usize, f: &Finding) -> Prose {
    // One line: a quoted snippet's line breaks would break the report's paragraph.
    let one_line: Vec<Part> = f
        .evidence
        .parts()
        .iter()
        .map(|p| match p {
            Part::Text(t) => Part::Text(collapse_whitespace(t)),
            step => step.clone(),
        })
        .collect();
    let clipped = one_line.iter().map(|p| p.as_text().chars().count()).sum::<usize>() > SHOWN_EVIDENCE;
    let mut parts = Prose::new(one_line).sanitized(SHOWN_EVIDENCE).parts().to_vec();
    if let Some(Part::Text(last)) = parts.last_mut() {
        // A clipped quote ends at a word, not inside one.
        if clipped && let Some(space) = last.trim_end_matches('…').rfind(' ') {
            last.truncate(space);
            last.truncate(last.trim_end_matches([',', ';', ':']).len());
            last.push('…');
        }
        last.truncate(last.trim_end_matches('.').len());
    }
    let head = prose!["step ", Part::Step(i), format!(" shows a finding ({})", f.signal.as_str())];
    if parts.is_empty() { head } else { head.with(": ").with(Prose::new(parts)) }
}

/// `s` with every run of white space (line breaks too) as one space.
fn collapse_whitespace(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if !c.is_whitespace() {
            out.push(c);
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    out
}

/// Whether step `i` shows an error of the run that nothing resolved: an error line in a tool
/// output or an agent's report (not in a call's own text, not in a thought, not in the output of
/// a command that exited with 0 or a test run whose summary passed), a failed execution, or a
/// step the format marks as an error; and not the task's premise, a call the user refused, an
/// error the agent recovered from or owned up to (a failed read, a missing program it tells, a
/// failed query it tells, a check that passed when run again...).
pub(crate) fn unresolved_error(ctx: &Context<'_>, i: usize) -> bool {
    let t = ctx.trajectory;
    let s = &ctx.hierarchy.steps[i];
    // An error line in a tool call's own text (a command that redirects stderr) is no
    // error of the run; one in a tool output or an agent's report is, unless the output
    // says its command exited with 0 (a log line of a passing test run).
    let passed = s.kind == StepKind::ToolResult
        && exit_code(ctx, s.index)
            .map_or_else(|| test_summary_passed(&t.steps[s.index].content) == Some(true), |code| code == 0);
    // Nor is one in an agent's thought: it reasons about the work ("find where the read
    // timeout is configured"); an error it saw is shown where a tool showed it.
    let error_line = s.flags.error && !matches!(s.kind, StepKind::ToolCall | StepKind::Thought) && !passed;
    // A tool error the agent recovered from (the lookup retried with success, the change
    // made another way) is part of the work, not a failure of the run.
    (error_line || s.flags.failed_execution || t.steps[s.index].is_error)
        && !states_the_task(ctx, s.index)
        && !refused_by_user(ctx, s.index)
        && !recovered_error(ctx, s.index)
        && !links(ctx).produced_by.get(s.index).copied().flatten().is_some_and(|c| only_reads(t, c))
        && !links(ctx).produced_by.get(s.index).copied().flatten().is_some_and(|c| install_worked_around(ctx, c))
        && !reports_recovered_error(ctx, s.index)
        && !reproduces_reported_failure(ctx, s.index)
        && !quotes_observed_error(ctx, s.index)
        && missing_program_reported(ctx, s.index).is_none()
        && !preexisting_told(ctx, s.index)
        && !guard_found_nothing(ctx, s.index)
        && !links(ctx).produced_by.get(s.index).copied().flatten().is_some_and(|c| rerun_passes(ctx, c))
        && told_query_error(ctx, s.index).is_none()
        && !tells_query_error(ctx, s.index)
}

/// Whether `content` is a code executor's reply to a message with no code in it ("There is no
/// code from the last 1 message for me to execute", "No code block detected in the messages"):
/// the turn reached it with nothing to run. A sign that the conversation went astray, not a
/// failed command: [`failure_shown`] says which it is.
fn nothing_to_run(content: &str) -> bool {
    static NO_CODE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\A\s*(?:there is no code from the last \d+ messages? for me to execute|no code block (?:is )?detected in the messages?)\b").unwrap()
    });
    NO_CODE.is_match(content)
}

/// Whether step `i` states the task: the request ([`Action::Request`]) or a user message before
/// any agent's step (after a system prompt, or in two parts). The errors it describes ("checkout
/// gets 504s, the gateway read times out") are the task's premise, not a failure of the run; a
/// user's message after the agent has worked ("it still fails with …") is not the task.
fn states_the_task(ctx: &Context<'_>, i: usize) -> bool {
    let t = ctx.trajectory;
    let user = |k: usize| matches!(t.steps[k].role.to_ascii_lowercase().as_str(), "user" | "human");
    ctx.hierarchy.steps[i].action == Action::Request
        || user(i) && (0..i).all(|k| user(k) || t.steps[k].role.eq_ignore_ascii_case("system"))
}

/// How many steps before an agent's message [`quotes_observed_error`] looks for the tool output it
/// quotes.
const QUOTE_LOOKBACK: usize = 200;

/// Whether every error line of agent step `i` (not a tool call or output, not marked an error by
/// the format) quotes an error a tool output showed before it, within [`QUOTE_LOOKBACK`] steps:
/// "The `AttributeError: 'NoneType' object has no attribute 'group'` came from the pattern…". The
/// agent reports the tool's error, which is judged where the tool showed it; the report is no
/// error of its own. A line quotes an earlier output when it contains the first 40 characters (at
/// least 12) of that output's error phrase ([`evidence::error_phrase`]), or names a program an
/// earlier output found missing ([`missing_program`]: "pytest is not installed, so I could not
/// run the suite").
fn quotes_observed_error(ctx: &Context<'_>, i: usize) -> bool {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if matches!(s.kind, StepKind::ToolResult | StepKind::ToolCall) || s.is_error {
        return false;
    }
    let error_lines = |j: usize| {
        let content = &t.steps[j].content;
        ctx.hierarchy.evidence[j].iter().filter(|e| e.kind == EvidenceKind::ErrorLine).map(move |e| e.text(content))
    };
    let mut lines = error_lines(i).peekable();
    if lines.peek().is_none() {
        return false;
    }
    let outputs = || (i.saturating_sub(QUOTE_LOOKBACK)..i).filter(|&j| t.steps[j].kind == StepKind::ToolResult);
    let missing: Vec<String> = outputs().filter_map(|j| missing_program(ctx, j)).map(|n| n.to_lowercase()).collect();
    let observed: Vec<&str> = outputs()
        .flat_map(error_lines)
        .filter_map(evidence::error_phrase)
        .map(|p| p.get(..p.char_indices().nth(40).map_or(p.len(), |(k, _)| k)).unwrap_or(p))
        .filter(|p| p.len() >= 12)
        .collect();
    lines.all(|l| {
        observed.iter().any(|p| l.contains(p)) || {
            let low = l.to_lowercase();
            missing.iter().any(|n| contains_word(&low, n))
        }
    })
}

/// Whether step `i` is an agent's message that reports the error of the tool output just before
/// it ("The billing service timed out; retrying once.") when the agent recovered from that error:
/// the report is part of the recovery, not a failure of its own. Only the last tool output among
/// the three steps before `i` is looked at.
fn reports_recovered_error(ctx: &Context<'_>, i: usize) -> bool {
    let t = ctx.trajectory;
    if matches!(t.steps[i].kind, StepKind::ToolResult | StepKind::ToolCall) || t.steps[i].is_error {
        return false;
    }
    (i.saturating_sub(3)..i)
        .rev()
        .find(|&r| t.steps[r].kind == StepKind::ToolResult)
        .is_some_and(|r| shows_failure(ctx, r) && recovered_error(ctx, r))
}

/// The run's own record of its outcome, when it says the run failed: a metadata field the loader
/// kept from the source (`reward` of 0 or less, `success` or `resolved` false, `status` failed or
/// error), as `key=value`. A run whose record says it failed has a failure to attribute even when
/// no step shows one.
pub fn recorded_failure(t: &Trajectory) -> Option<String> {
    t.metadata.iter().find_map(|(k, v)| {
        let (key, value) = (k.to_ascii_lowercase(), v.trim().to_ascii_lowercase());
        let failed = match key.as_str() {
            "reward" => value.parse::<f64>().is_ok_and(|r| r <= 0.0),
            "success" | "resolved" => value == "false",
            "status" => matches!(value.as_str(), "failed" | "failure" | "error"),
            _ => false,
        };
        failed.then(|| format!("{k}={}", v.trim()))
    })
}

/// Whether some item of the observed output agrees with the expected output (`false` without
/// ground truth), computed once.
fn output_agrees(ctx: &Context<'_>) -> bool {
    let Some(x) = expected_index(ctx) else { return false };
    *ctx.facts.output_agrees.get_or_init(|| output_items(ctx).iter().any(|k| x.agrees(k)))
}

/// Whether `needle` occurs in `hay` with no letter or digit right before or after it.
pub(crate) fn contains_word(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(i, m)| {
        let before = hay[..i].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = hay[i + m.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        before && after
    })
}

/// `item` (lower case) as step `j` writes it: a number's own text there, else the first
/// case-insensitive occurrence of `item` in the step with its own letter case, else in the
/// observed output, else `item`.
pub(crate) fn as_written(ctx: &Context<'_>, j: usize, item: &str) -> String {
    let n = evidence::normalize_number(item);
    let content = &ctx.trajectory.steps[j].content;
    if let Some(e) =
        ctx.hierarchy.evidence[j].iter().find(|e| !n.is_empty() && e.kind == EvidenceKind::Number && e.key == n)
    {
        return e.text(content).trim().to_string();
    }
    // Else as the step writes it, or as the observed output does (output items come from it).
    let Ok(re) = regex::RegexBuilder::new(&regex::escape(item)).case_insensitive(true).build() else {
        return item.to_string();
    };
    [Some(content.as_str()), ctx.trajectory.observed_output.as_deref()]
        .into_iter()
        .flatten()
        .find_map(|text| re.find(text).map(|m| m.as_str().to_string()))
        .unwrap_or_else(|| item.to_string())
}

/// The first step whose content states `item` (numbers compared normalised).
fn first_statement(ctx: &Context<'_>, item: &str) -> Option<Statement> {
    let n = evidence::normalize_number(item);
    let states = |j: usize| {
        if !n.is_empty() {
            ctx.hierarchy.evidence[j].iter().any(|e| e.kind == EvidenceKind::Number && e.key == n)
        } else {
            contains_word(lower_of(ctx, j), item)
        }
    };
    // A list of results that shows the expected figure beside the wrong one (a search page with
    // both cities' populations) offers both: the wrong one is first stated where it is chosen.
    let offers_expected = |j: usize| {
        let x = expected_index(ctx);
        !n.is_empty()
            && (ctx.trajectory.steps[j].kind == StepKind::ToolResult || is_agent_output(ctx, j))
            && x.is_some_and(|x| {
                ctx.hierarchy.evidence[j].iter().any(|e| {
                    e.kind == EvidenceKind::Number
                        && e.key.len() >= 3
                        && !evidence::is_trivial_number(&e.key)
                        && x.numbers.contains(&e.key)
                })
            })
    };
    let n_steps = ctx.trajectory.steps.len();
    let first = (0..n_steps).find(|&j| states(j))?;
    let chosen = (first..n_steps).find(|&j| states(j) && !offers_expected(j)).unwrap_or(first);
    Some(Statement { first, chosen })
}

/// Where a value of the output is stated ([`first_statement`]): first, and first where it is
/// not offered beside the expected figure (where it was chosen); the two are the same step
/// unless a list of results showed both.
#[derive(Debug, Clone, Copy)]
struct Statement {
    first: usize,
    chosen: usize,
}

/// The steps where the wrong items of the output originate (needs `o*`), with the item.
pub fn wrong_value_origins(ctx: &Context<'_>) -> Vec<(usize, String)> {
    ctx.facts.wrong_value_origins.get(ctx.ground_truth).get_or_init(|| compute_origins(ctx)).clone()
}

fn compute_origins(ctx: &Context<'_>) -> Vec<(usize, String)> {
    let Some(x) = expected_index(ctx) else { return Vec::new() };
    let mut out = Vec::new();
    for item in output_items(ctx) {
        if x.agrees(&item) {
            continue;
        }
        if let Some(Statement { first, chosen }) = first_statement(ctx, &item) {
            // A value an agent reads from the wrong row of a table is wrong where it is read
            // for the thing asked about, wherever else the number was written before.
            let origin = misread_at(ctx, &item, first).map_or_else(|| adopter(ctx, &item, chosen), |(k, _)| k);
            if !out.iter().any(|(s, _)| *s == origin) {
                out.push((origin, item));
            }
        }
    }
    out
}

/// How a step reads a value from a source that shows the value is not the one to answer with
/// (docs/METHODS.md, "Grounding").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misreading {
    /// From another row of a table than the one it names, the named row's own value shown
    /// ([`tables::misread_row`]).
    OtherRow,
    /// From a page that says it is outdated ([`sources::outdated_source`]).
    OutdatedPage,
}

impl Misreading {
    /// How the reading is told: "from another row of a table that shows the right one".
    pub fn told(self) -> &'static str {
        match self {
            Misreading::OtherRow => "from another row of a table that shows the right one",
            Misreading::OutdatedPage => "from a page that says it is outdated",
        }
    }
}

/// The value step `i` misreads, normalised ([`evidence::normalize_number`]), and how.
fn misreading(ctx: &Context<'_>, i: usize) -> Option<(String, Misreading)> {
    tables::misread_row(ctx, i)
        .map(|m| (m.value, Misreading::OtherRow))
        .or_else(|| sources::outdated_reading(ctx, i).map(|r| (r.value, Misreading::OutdatedPage)))
}

/// Whether step `i` reads a value from a source that shows it is not the one to answer with
/// ([`Misreading`]): an error of its own, whatever it was asked to do.
pub fn misreads(ctx: &Context<'_>, i: usize) -> bool {
    misreading(ctx, i).is_some()
}

/// The first step from `first` on that misreads the number of the output's `item` ([`Misreading`]),
/// and how. Such a value is wrong where it is read, wherever else the number was written before.
pub fn misread_at(ctx: &Context<'_>, item: &str, first: usize) -> Option<(usize, Misreading)> {
    let items = evidence::extract_text(item);
    let n = items.iter().find(|e| e.kind == EvidenceKind::Number).map(|e| e.key.as_str())?;
    (first..ctx.trajectory.steps.len()).find_map(|k| {
        if !ctx.hierarchy.evidence[k].iter().any(|e| e.kind == EvidenceKind::Number && e.key == n) {
            return None;
        }
        misreading(ctx, k).filter(|(v, _)| v == n).map(|(_, how)| (k, how))
    })
}

/// How a `wrong_value_origin` finding says that the wrong value first appears in the output of
/// what its step ran or asked for, not in the step's own words ("the output's "Algeria" first
/// appears at step 63, in the output of this step"): the report then says what its category
/// means there.
pub const IN_ITS_OUTPUT: &str = ", in the output of this step";

fn wrong_value(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let Some(expected) = ctx.expected() else { return };
    if let Some((_, item)) = wrong_value_origins(ctx).into_iter().find(|(s, _)| *s == i) {
        // Say where the value is first stated: here, earlier (adopted here), or in the output
        // of what this step ran.
        let statement = first_statement(ctx, &item);
        // How this step misreads the value, when it is where the value is misread.
        let misread =
            statement.and_then(|s| misread_at(ctx, &item, s.first)).filter(|(k, _)| *k == i).map(|(_, how)| how);
        // Where the value was chosen, unless this step misreads it (then where it was first
        // written).
        let first = statement.map(|s| if misread.is_some() { s.first } else { s.chosen });
        let offered = statement.filter(|s| misread.is_none() && s.first < s.chosen && s.chosen == i).map(|s| s.first);
        let place = if let Some(listed) = offered {
            prose!["is chosen here; step ", Part::Step(listed), " listed it beside the expected figure"]
        } else {
            match (first, earlier_number(ctx, &item, i)) {
                (Some(f), _) if f < i && misread.is_some() => {
                    let how = misread.map_or("", Misreading::told);
                    prose![format!("is read here {how} (the number is written first at step "), Part::Step(f), ")"]
                }
                (Some(f), _) if f < i => prose!["stated first at step ", Part::Step(f), ", is adopted here"],
                (Some(f), _) if f > i => prose!["first appears at step ", Part::Step(f), IN_ITS_OUTPUT],
                // The line is first written here, but a number in it came from an earlier step.
                (_, Some((f, number))) => {
                    prose![format!("is first written here, with {number} from step "), Part::Step(f)]
                }
                _ => Prose::from("first appears here"),
            }
        };
        // A number as the step writes it ("$445,000" for the output's 445000), so that a search
        // for the quoted text finds it.
        let written = first.map_or_else(|| item.clone(), |f| as_written(ctx, f, &item));
        let shown = if written.to_lowercase() == item {
            format!("\"{written}\"")
        } else {
            format!("\"{item}\" (written \"{written}\")")
        };
        out.push(finding(
            Signal::WrongValueOrigin,
            weights::WRONG_VALUE,
            Prose::from(format!("the output's {shown} "))
                .with(place)
                .with(format!("; expected {}", text::clip(expected.trim(), 60))),
        ));
        return;
    }
    // The expected value was available in an output and the next agent step lost it.
    let Some(exp_low) = expected_index(ctx).map(|x| x.lower.as_str()) else { return };
    if exp_low.len() < 2 || output_agrees(ctx) {
        return;
    }
    // The first output showing the expected value and its next reader, found once per hierarchy.
    let seen = *ctx.facts.expected_seen.get(ctx.ground_truth).get_or_init(|| {
        let first_hit = (0..ctx.trajectory.steps.len()).find(|&j| {
            matches!(ctx.hierarchy.steps[j].action, Action::ToolOutput | Action::Search | Action::ReadFile)
                && contains_word(lower_of(ctx, j), exp_low)
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
            prose![
                "step ",
                Part::Step(j),
                format!(" shows the expected {}, but this step does not carry it on", text::clip(expected.trim(), 60))
            ],
        ));
    }
}

/// For an output item that is not a number itself (a line, a name with an amount), the earliest
/// step before `before` stating one of the non-trivial numbers it contains, with that number as
/// the step writes it.
fn earlier_number(ctx: &Context<'_>, item: &str, before: usize) -> Option<(usize, String)> {
    if !evidence::normalize_number(item).is_empty() {
        return None;
    }
    let keys: Vec<String> = evidence::extract_text(item)
        .iter()
        .filter(|e| e.kind == EvidenceKind::Number && !evidence::is_trivial_number(&e.key))
        .map(|e| e.key.clone())
        .collect();
    if keys.is_empty() {
        return None;
    }
    (0..before.min(ctx.trajectory.steps.len())).find_map(|j| {
        let content = &ctx.trajectory.steps[j].content;
        ctx.hierarchy.evidence[j]
            .iter()
            .find(|e| e.kind == EvidenceKind::Number && keys.contains(&e.key))
            .map(|e| (j, e.text(content).trim().to_string()))
    })
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
/// Whether the final output reuses a value that step `i` introduced (or produced through its
/// tool call), or step `i` is the final output's step.
pub fn feeds_output_values(ctx: &Context<'_>, i: usize) -> bool {
    let Some(f) = final_step(ctx) else { return false };
    i == f
        || ctx.hierarchy.steps[f]
            .uses
            .iter()
            .any(|(_, o)| matches!(o, crate::hierarchy::Origin::Step(j) if *j == i || producer(ctx, *j) == i))
}

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
            | Signal::BlockingChange
            | Signal::RejectedAction
            | Signal::UnconfirmedAction
            | Signal::UnavailableValue
            | Signal::CountMismatch
            | Signal::IgnoredResult
            | Signal::ArgumentMismatch
            | Signal::PartialCheck
            | Signal::ForbiddenChange
            | Signal::RefusalBypassed
            | Signal::WrongStatistic
            | Signal::Miscalculation
            | Signal::PartialSearch
            | Signal::OmittedHits
            | Signal::UnverifiedAssertion
            | Signal::NoProgress
            | Signal::UserMarked
            | Signal::Ranked
    )
}

/// Verbs that name tools which only read (look up, list, search, compute, think): a call of any
/// other tool changes the world (cancels, modifies, sends, writes), which is where a wrong
/// decision becomes irreversible.
const READ_VERBS: [&str; 12] =
    ["get", "list", "find", "search", "read", "lookup", "fetch", "query", "calculate", "compute", "think", "view"];

/// Verbs that name read-only tools of coding agents and browsers (Claude Code's `Grep`, `Glob`,
/// `WebSearch`, `WebFetch`; a `check_status`, a `wait_agent`; a database's `describe_table`,
/// `show_tables`, `inspect_schema`), and lookups that only confirm or count what a record holds
/// (`verify_customer`, `retrieve_invoice`, `count_orders`), beside [`READ_VERBS`].
const MORE_READ_VERBS: [&str; 12] =
    ["grep", "glob", "web", "check", "wait", "browse", "describe", "show", "inspect", "verify", "retrieve", "count"];

/// Words of a tool's name that say it only shows what a change would do (`preview_invoice`,
/// `create_preview`, `estimate_shipping`, `simulate_transfer`, `validate_order`).
const DRY_RUN_WORDS: [&str; 5] = ["preview", "estimate", "simulate", "validate", "dryrun"];

/// Whether a call's arguments ask for a dry run: a member `dry_run`, `dryRun`, `preview`,
/// `simulate` or `validate_only` set to `true` (`{"plan": "business", "preview": true}`).
fn dry_run_argument(content: &str) -> bool {
    static DRY: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#""(?:dry_run|dryRun|dry-run|preview|simulate|validate_only|validateOnly)"\s*:\s*true\b"#)
            .unwrap()
    });
    content.contains("true") && DRY.is_match(content)
}

/// Whether step `i` calls a tool that changes state: a tool call whose name does not start with
/// a read verb ([`READ_VERBS`], [`MORE_READ_VERBS`]) nor has `lookup`, `search` or a dry run's
/// word ([`DRY_RUN_WORDS`]) as a word (`price_lookup`, `FlightPlugin-search_flights`,
/// `preview_invoice`), and whose arguments ask for no dry run ([`dry_run_argument`]); for a shell
/// tool ([`shell_command`]), a command that does more than read and check
/// ([`command_changes_state`]).
pub fn changes_state(t: &Trajectory, i: usize) -> bool {
    let s = &t.steps[i];
    s.kind == StepKind::ToolCall
        && s.tool_name.as_deref().is_some_and(|n| {
            let n = n.to_ascii_lowercase();
            if let Some(cmd) = shell_command(&n, &s.content) {
                return command_changes_state(&cmd);
            }
            // An MCP tool's name carries its server before it (`mcp__stripe__retrieve_payout`):
            // the verb is the tool's own.
            let n = match n.strip_prefix("mcp__").and_then(|rest| rest.split_once("__")) {
                Some((_, tool)) => tool.to_string(),
                None => n,
            };
            let lookup_word = n
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| matches!(w, "lookup" | "search") || DRY_RUN_WORDS.contains(&w));
            !(READ_VERBS.iter().chain(&MORE_READ_VERBS).any(|v| n.starts_with(v))
                || lookup_word
                || dry_run_argument(&s.content)
                || reads_sql(&s.content))
        })
}

/// Whether a call's arguments (the JSON object from the text's first `{` to its last `}`) hold a
/// SQL statement (a `sql`, `query` or `statement` member) that only reads: it opens with
/// `SELECT`, `WITH`, `SHOW`, `DESCRIBE`, `EXPLAIN` or `PRAGMA` and holds no word that writes
/// (`INSERT`, `UPDATE`, `DELETE`, `MERGE`, `DROP`, `ALTER`, `CREATE`, `TRUNCATE`, `GRANT`). A
/// `run_sql` call with a `SELECT` is a lookup.
fn reads_sql(content: &str) -> bool {
    // Cheap test first: this runs each time a rule asks whether a call changes state.
    if !["\"sql\"", "\"query\"", "\"statement\""].iter().any(|k| content.contains(k)) {
        return false;
    }
    let Some(args) = call_arguments(content) else { return false };
    let Some(sql) = ["sql", "query", "statement"].iter().find_map(|k| args.get(*k).and_then(|v| v.as_str())) else {
        return false;
    };
    let upper = sql.to_ascii_uppercase();
    let first = upper.split_whitespace().next().unwrap_or("");
    const READS: [&str; 6] = ["SELECT", "WITH", "SHOW", "DESCRIBE", "EXPLAIN", "PRAGMA"];
    const WRITES: [&str; 9] = ["INSERT", "UPDATE", "DELETE", "MERGE", "DROP", "ALTER", "CREATE", "TRUNCATE", "GRANT"];
    READS.contains(&first)
        && !upper.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').any(|w| WRITES.contains(&w))
}

/// Whether a shell command does more than read and check: one of its simple commands (the
/// line split as the shell splits it, [`shell::commands`]) redirects output into a file or runs
/// a program that is not a reader, a test runner or checker, or a read or check subcommand
/// ([`shell::reads_or_checks`]: `git status`, `cargo test`, `npx eslint .`, `uv run pytest`, a
/// `python -c` probe whose code writes nothing, `source .venv/bin/activate`…).
pub fn command_changes_state(cmd: &str) -> bool {
    shell::changes_state(cmd)
}

/// Whether a shell command edits files ([`shell::edits_files`]: not only scratch files in the
/// system's temporary folder): one of its simple commands
/// redirects output into a file, or runs `sed -i` or `perl -i`, `patch`, `tee`, `mv`, `cp`,
/// `rm`, `touch`, `mkdir`, `truncate`, or a `git` subcommand that changes the working tree
/// (`apply`, `checkout`, `restore`, `reset`, `stash`…; not `git commit`, which records the files
/// as they are). Running a program, installing packages or building is not an edit (it may change
/// state: [`command_changes_state`]).
pub fn command_edits_files(cmd: &str) -> bool {
    shell::edits_files(cmd)
}

/// Words in a tool's name that mark a call editing files or content (`apply_patch`, `Edit`,
/// `MultiEdit`, `str_replace_editor`, `write_file`, `replace`, `insert`): after a failure, such a
/// call is an attempt to fix it; before a claim that the work is done, its own result checks
/// nothing.
const EDIT_VERBS: [&str; 6] = ["patch", "edit", "write", "replace", "insert", "create"];

/// Whether a lower-case tool name holds an edit verb ([`EDIT_VERBS`]) in one of its words
/// (`str_replace_editor`, `multiedit`, `overwrite_file`), but not in a word that only spells one:
/// `apply_credit` and `accredit_vendor` credit an account, they edit nothing; and `create` only
/// with words of a file (`create_file`, `create_new_file`), not with a record's
/// (`create_international_wire`, `create_refund`).
fn names_edit(name: &str) -> bool {
    // `create` makes a file only where the name names nothing else than one (`create_file`,
    // `create`): `create_international_wire` and `create_ticket` act on records.
    const FILE_WORDS: [&str; 8] = ["file", "files", "new", "text", "dir", "directory", "document", "doc"];
    let words: Vec<&str> = name.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    words.iter().any(|w| {
        let verb = EDIT_VERBS.iter().find(|v| w.contains(*v));
        match verb {
            None => false,
            Some(_) if w.ends_with("credit") => false,
            Some(&"create") if !EDIT_VERBS.iter().any(|v| *v != "create" && w.contains(v)) => {
                words.iter().all(|x| x.contains("create") || FILE_WORDS.contains(x))
            }
            Some(_) => true,
        }
    })
}

/// The first call of the run that edits ([`edits`]), computed once per trajectory.
fn first_edit(ctx: &Context<'_>) -> Option<usize> {
    *ctx.facts.first_edit.get_or_init(|| (0..ctx.trajectory.steps.len()).find(|&j| edits(ctx.trajectory, j)))
}

/// Whether step `i` is a tool call that edits files or content: its tool's name contains one of
/// [`EDIT_VERBS`], or has the word `file` with `change`, `update`, `delete`, `modify` or `apply`
/// (Codex's `file_change`), and does not name a to-do list (`TodoWrite` keeps the agent's plan, it changes
/// no file); for a shell tool, its command edits files ([`command_edits_files`]: `sed -i`, a
/// redirection into a file, `git apply`...). A call that changes only scratch files in the
/// system's temporary folder (`/tmp/repro.py`, [`shell::in_temp_dir`]) edits nothing of the work:
/// a reproduction written there stays a reproduction.
pub fn edits(t: &Trajectory, i: usize) -> bool {
    let s = &t.steps[i];
    s.kind == StepKind::ToolCall
        && s.tool_name.as_deref().is_some_and(|n| {
            let n = n.to_ascii_lowercase();
            match shell_command(&n, &s.content) {
                // Removing a scratch file the agent made itself changes no code under test.
                Some(cmd) => command_edits_files(&cmd) && !coding::removes_own_scratch(t, i),
                None => {
                    let words: Vec<&str> = n.split(|c: char| !c.is_ascii_alphanumeric()).collect();
                    // Codex's `file_change`, an `update_file` or `delete_file` tool.
                    let file_change = words.iter().any(|w| *w == "file" || *w == "files")
                        && words
                            .iter()
                            .any(|w| ["change", "changes", "update", "delete", "modify", "apply"].contains(w));
                    // A scratch file in the system's temporary folder (a `Write` of
                    // `/tmp/repro.py`) is no file of the work.
                    let scratch = || {
                        let paths = instructions::tool_paths(&n, &s.content);
                        !paths.is_empty() && paths.iter().all(|(p, _)| shell::in_temp_dir(p))
                    };
                    (file_change || names_edit(&n))
                        && !n.contains("todo")
                        && !editor_reads(&n, &s.content)
                        && !scratch()
                }
            }
        })
}

/// Whether an editing tool's call (lower-case name `tool`) only shows a file: its arguments (a
/// JSON object) name the `view` or `read` command (SWE-agent's and OpenHands'
/// `str_replace_editor view`), or its text is the tool's command line with that command
/// (SWE-agent's `str_replace_editor view /testbed/x.py [1, 40]`), or, for a tool named an editor, hold nothing but where to read
/// (OpenHands writes a file read as the editor's call with `path`, `start`, `end`). Such a call
/// is a read, not an edit.
fn editor_reads(tool: &str, content: &str) -> bool {
    const WHERE: [&str; 12] = [
        "path",
        "file_path",
        "filename",
        "start",
        "end",
        "view_range",
        "offset",
        "limit",
        "impl_source",
        "security_risk",
        "thought",
        "command",
    ];
    // SWE-agent writes the call as its command line: `str_replace_editor view /testbed/x.py`.
    let mut words = content.split_whitespace();
    if words.next().is_some_and(|w| w.eq_ignore_ascii_case(tool))
        && words.next().is_some_and(|w| matches!(w.to_ascii_lowercase().as_str(), "view" | "read" | "cat" | "show"))
    {
        return true;
    }
    // Some formats write a call as `name({…})`.
    let Some(args) = call_arguments(content) else { return false };
    match args.get("command").and_then(|c| c.as_str()) {
        Some(c) => matches!(c.to_ascii_lowercase().as_str(), "view" | "read" | "cat" | "show"),
        None => tool.contains("editor") && !args.is_empty() && args.keys().all(|k| WHERE.contains(&k.as_str())),
    }
}

/// Whether call `c` only reads files: a shell call whose command line only reads, lists or
/// searches files ([`shell::reads_files_only`]: `sed -n '1,60p' x.rs`, `cat`, `rg`, `git
/// show`), a file-reading tool (its name `read`, `read_file`, `read_many_files`, `view`,
/// `view_file`, `open_file`, `cat`, `ls`, `list_directory`, `list_dir`, `glob`, `grep`,
/// `search_file_content`), or an editor's call that only shows a file ([`editor_reads`]). Such a
/// call neither reproduces a failure nor checks a change: it shows the code, it does not run it.
pub(crate) fn only_reads(t: &Trajectory, c: usize) -> bool {
    const READ_TOOLS: [&str; 13] = [
        "read",
        "read_file",
        "read_many_files",
        "view",
        "view_file",
        "open_file",
        "cat",
        "ls",
        "list_directory",
        "list_dir",
        "glob",
        "grep",
        "search_file_content",
    ];
    let s = &t.steps[c];
    if s.kind != StepKind::ToolCall {
        return false;
    }
    let Some(tool) = s.tool_name.as_deref().map(str::to_ascii_lowercase) else { return false };
    match shell_command(&tool, &s.content) {
        Some(cmd) => shell::reads_files_only(&cmd),
        None => READ_TOOLS.contains(&tool.as_str()) || editor_reads(&tool, &s.content),
    }
}

/// Whether a task (lower case) reports a failure: one of [`REPORTED_FAILURE`]'s words, or CI's
/// colour for a failing build or test ("has been red on main since #412", "the build is red",
/// "went red").
fn task_reports_failure(task: &str) -> bool {
    static RED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"\b(is|are|been|went|turned|turns|goes|stays|still|was|were|gone) red\b|\bred (on|in) (main|master|ci)\b",
        )
        .unwrap()
    });
    REPORTED_FAILURE.iter().any(|w| task.contains(w)) || RED.is_match(task)
}

/// Words by which a task reports a failure ("the test suite fails on ...", "raises an exception",
/// "the CLI panics on an empty file").
const REPORTED_FAILURE: [&str; 13] = [
    "fail",
    "error",
    "bug",
    "broken",
    "break",
    "crash",
    "panic",
    "exception",
    "traceback",
    "does not work",
    "doesn't work",
    "instead of",
    "but should",
];

/// Words by which a task reports a hang ("the export hangs on …", "never finishes").
const REPORTED_HANG: [&str; 6] = ["hang", "freez", "never finish", "never return", "times out", "stuck"];

/// A sentence saying that something ran out of time: "timed out" ("Command timed out after 2m",
/// "The last command … timed out and has been killed"), "Timeout after 30s", "timeout of 5000 ms
/// exceeded", "Exceeded timeout of 5000 ms", pytest-timeout's "Timeout >10.0s" and its `+++
/// Timeout +++` banner, "time limit exceeded", "deadline exceeded", "took more than 300 seconds".
/// The word `timeout` alone is no such sentence: it names a setting (`--timeout=30`,
/// `timeout=args.timeout`, `'timeout'`), and inside an identifier (`DEFAULT_TIMEOUT`,
/// `request_timeout`, `TimeoutError`) it is no word at all.
static TIMEOUT_PROSE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(concat!(
        r"(?im)\btimed out\b",
        r"|\btimeout (?:after|of|expired|exceeded|reached|elapsed)\b",
        r"|\btimeout\s*>\s*\d",
        r"|\bexceeded (?:the |its |a )?(?:timeout|time limit|deadline)\b",
        // PostgreSQL's "canceling statement due to statement timeout"; Snowflake's "reached its
        // statement or warehouse timeout".
        r"|\bstatement timeout\b|\breached its (?:[a-z]+ ){0,3}timeout\b",
        r"|\b(?:time limit|deadline) (?:exceeded|reached)\b",
        r"|\btook (?:more|longer) than \d+(?:\.\d+)? ?(?:ms|s|secs?|seconds?|m|mins?|minutes?)\b",
        r"|^[\s+=*!-]*timeout[\s+=*!.-]*$",
    ))
    .unwrap()
});

/// Whether an output says that a command ran out of time ([`TIMEOUT_PROSE`]), in its own words
/// rather than in code it shows: a file shown with its line numbers
/// ([`evidence::numbered_listing`]) says nothing of the run, and neither does a match inside a
/// string assigned to a name (`msg = "request timed out"`) or inline code (after an odd number of
/// `` ` `` on its line), inside a call's parentheses (`raise TimeoutError('request timed out')`,
/// `log.warn(… timed out …)`), or on a comment or code line (opening with `#`, `//`, `/*`, `*`, `raise`, `throw`,
/// `except`, `catch`, `return`, `def`, `assert`, `print`, `log`).
pub(crate) fn says_timed_out(text: &str) -> bool {
    if evidence::numbered_listing(text) {
        return false;
    }
    TIMEOUT_PROSE.find_iter(text).any(|m| {
        let line_start = text[..m.start()].rfind('\n').map_or(0, |p| p + 1);
        !in_code(&text[line_start..m.start()])
    })
}

/// Whether the text before a match on its line (`before`) puts the match in code
/// ([`says_timed_out`]).
fn in_code(before: &str) -> bool {
    static CODE_LINE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^\s*(?:#|//|/\*|\*|(?:raise|throw|except|catch|return|def|assert|print|printf|console|log|logger|logging)\b)",
        )
        .unwrap()
    });
    static CALL_OPEN: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"[\w.]\(").unwrap());
    if CODE_LINE.is_match(before) {
        return true;
    }
    // Inside a string assigned to a name (`msg = "timed out"`): the last quote before the
    // match opens it, right after `=`. A quoted message in a tool's JSON or a runner's report
    // (`"message": "Command timed out"`, `thrown: "Exceeded timeout of 5000 ms"`) is the output's
    // own words.
    let chars: Vec<(usize, char)> = before.char_indices().collect();
    let opening = |k: usize| {
        let c = chars[k].1;
        c == '"'
            || c == '\''
                && !(k > 0
                    && chars[k - 1].1.is_alphanumeric()
                    && chars.get(k + 1).is_some_and(|(_, c)| c.is_alphanumeric()))
    };
    let quotes: Vec<usize> = (0..chars.len()).filter(|&k| opening(k)).collect();
    let assigned =
        quotes.len() % 2 == 1 && quotes.last().is_some_and(|&k| before[..chars[k].0].trim_end().ends_with('='));
    let backticks = before.chars().filter(|&c| c == '`').count() % 2 == 1;
    let open_call = CALL_OPEN.find_iter(before).last().is_some_and(|m| !before[m.end()..].contains(')'));
    assigned || backticks || open_call
}

/// Endings of web addresses (`arxiv.org`, `usgs.gov/...`): a task naming one names where to look.
const WEB_SUFFIXES: [&str; 7] = [".org", ".com", ".net", ".gov", ".edu", ".io", ".html"];

/// Whether the failure shown at tool output `r` is the one the task reports: the task reports a
/// failure ([`REPORTED_FAILURE`]), the output names an identifier the task names (a test, a file,
/// a function, a value it quotes: a token of at least six characters with `_`, `.`, `/`, `-` or
/// `::` in it, such as `test_parse_dates`, `parser.py` or `cr-me-br-l-e`, not a web address; or
/// an exception's class such as `ZeroDivisionError`; or an error message the task quotes, such as
/// `Error: invalid duration: 90s`; a file's path only in an output that shows a failure,
/// [`check_fails`]: a command that succeeded and printed a path lists it), and no edit came before it
/// ([`edits`]); or the task reports a hang ([`REPORTED_HANG`]) and the output says the command
/// ran out of time ([`says_timed_out`], or exit code 124, `timeout`'s), before any edit; or the task
/// reports a failure of a checker it names ([`shell::CHECK_PROGRAMS`]: "CI is failing on the eslint
/// step") and the output's command runs it, before any edit; or the output, a failure, is of a
/// check the task quotes as a command, run as quoted ([`recovery::runs_quoted_command`]), before
/// any edit. A call that only reads files ([`only_reads`]: `sed -n`, `cat`, `rg`, `git show`)
/// is never a reproduction. Reproducing the failure the user reported is
/// where the work starts, not the agent's failed action; the same failure after an edit is the fix
/// failing.
pub(crate) fn reproduces_reported_failure(ctx: &Context<'_>, r: usize) -> bool {
    if first_edit(ctx).is_some_and(|e| e < r) {
        return false;
    }
    // A read shows the code, it does not run it: `sed -n '1,60p' window.rs` printing a comment
    // that names the reported flag reproduces nothing.
    if links(ctx).produced_by.get(r).copied().flatten().is_some_and(|c| only_reads(ctx.trajectory, c)) {
        return false;
    }
    // A command line that could not run (a program missing, exit status 127, a `which poetry &&`
    // guard that found nothing) ran none of the code: it shows the environment, not the failure.
    if shell_could_not_run(ctx, r).is_some()
        || ctx.hierarchy.evidence[r].iter().any(|e| e.kind == EvidenceKind::ExitCode(127))
        || guard_found_nothing(ctx, r)
    {
        return false;
    }
    // A hang the task reports is reproduced by a command that runs out of time.
    let task = &ctx.trajectory.task;
    // `timeout` exits with 124 when it stops a command.
    let stopped = ctx.hierarchy.evidence[r].iter().any(|e| e.kind == EvidenceKind::ExitCode(124));
    if REPORTED_HANG.iter().any(|w| task.to_lowercase().contains(w))
        && (stopped || says_timed_out(&ctx.trajectory.steps[r].content))
    {
        return true;
    }
    let names = ctx.facts.task_identifiers.get_or_init(|| {
        let task = ctx.trajectory.task.to_lowercase();
        if !task_reports_failure(&task) {
            return Vec::new();
        }
        // `tests/test_x.py::test_y` names a file and a test: either may appear in the output.
        let original = &ctx.trajectory.task;
        // An error message the task quotes (`Error: invalid duration: 90s`), shown again by a
        // command, reproduces it: its error phrase, at least 12 characters.
        static QUOTE: std::sync::LazyLock<regex::Regex> =
            std::sync::LazyLock::new(|| regex::Regex::new(r#"`([^`\n]+)`|"([^"\n]+)""#).unwrap());
        let messages: Vec<String> = QUOTE
            .captures_iter(original)
            .filter_map(|c| c.get(1).or_else(|| c.get(2)))
            .filter_map(|m| evidence::error_phrase(m.as_str()))
            .filter(|p| p.len() >= 12)
            .map(str::to_lowercase)
            .collect();
        original
            .split(|c: char| c.is_whitespace() || matches!(c, '`' | '\'' | '"' | '(' | ')' | ',' | ';'))
            .flat_map(|w| w.split("::"))
            .map(|w| w.trim_end_matches(['.', ':', '?', '!']))
            .filter(|w| {
                // An exception's class (`ZeroDivisionError`, `KeyError`) names the failure too.
                let class = w.len() >= 8
                    && w.chars().filter(char::is_ascii_uppercase).count() >= 2
                    && w.chars().all(|c| c.is_ascii_alphanumeric())
                    && ["Error", "Exception", "Panic", "Fault"].iter().any(|e| w.ends_with(e));
                class || w.len() >= 6 && w.contains(['_', '.', '/', ':', '-']) && w.chars().any(char::is_alphabetic)
            })
            .map(str::to_lowercase)
            // Addresses name a place to look, not the thing that fails.
            .filter(|w| {
                !w.contains("://") && !WEB_SUFFIXES.iter().any(|x| w.ends_with(x) || w.contains(&format!("{x}/")))
            })
            .chain(messages)
            .collect()
    });
    // As a whole identifier: `parser.py` in `src/parser.py`, not in `test_parser.py`.
    let whole = |hay: &str, n: &str| {
        let part = |c: char| c.is_alphanumeric() || c == '_';
        hay.match_indices(n).any(|(i, m)| {
            hay[..i].chars().next_back().is_none_or(|c| !part(c))
                && hay[i + m.len()..].chars().next().is_none_or(|c| !part(c))
        })
    };
    // A file's path the task names (`src/index.js`), printed by a command that did not fail (a
    // listing, a script that prints a manifest's entry point), is no failure: only a failing
    // output reproduces by a path; a test, a function or an error message counts either way.
    let is_path = |n: &str| {
        n.contains('/')
            || n.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty() && (1..=4).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric())
            })
    };
    if !names.is_empty() && names.iter().any(|n| whole(lower_of(ctx, r), n) && (!is_path(n) || check_fails(ctx, r))) {
        return true;
    }
    // The command the task quotes as showing the failure (`go test -race ./pkg/...` "reports a
    // DATA RACE"), run as quoted before any edit.
    if recovery::runs_quoted_command(ctx, r) {
        return true;
    }
    // The check the task names as failing ("CI is failing on the eslint step"), run again.
    let task = task.to_lowercase();
    let Some(call) = links(ctx).produced_by.get(r).copied().flatten() else { return false };
    let step = &ctx.trajectory.steps[call];
    let tool = step.tool_name.as_deref().unwrap_or("").to_ascii_lowercase();
    let Some(cmd) = shell_command(&tool, &step.content) else { return false };
    let cmd = cmd.to_lowercase();
    task_reports_failure(&task) && shell::CHECK_PROGRAMS.iter().any(|p| whole(&task, p) && whole(&cmd, p))
}

/// Whether tool output `r` is that of a command line guarded by a look-up of its program
/// (`which poetry && poetry run pytest`, `command -v tox && tox`, after any `cd`) that prints no
/// path ending in that program (`/usr/bin/poetry`): the look-up failed and nothing after the
/// `&&` ran.
fn guard_found_nothing(ctx: &Context<'_>, r: usize) -> bool {
    let Some(call) = links(ctx).produced_by.get(r).copied().flatten() else { return false };
    let Some(cmd) = call_command(ctx.trajectory, call) else { return false };
    let Some(first) = cmd.split("&&").map(str::trim).find(|p| !p.starts_with("cd ")) else { return false };
    let words: Vec<&str> = first.split_whitespace().collect();
    let program = match words[..] {
        ["which", p] | ["type", p] | ["hash", p] | ["command", "-v", p] => p,
        _ => return false,
    };
    let path_end = format!("/{program}");
    cmd.contains("&&") && !ctx.trajectory.steps[r].content.split_whitespace().any(|w| w.ends_with(&path_end))
}

/// Whether an argument name names an identifier: `id`, or ending in `_id`, `-id` or `Id`
/// (`order_id`, `issue-id`, `userId`); `paid` or `valid` do not.
fn is_id_key(k: &str) -> bool {
    let low = k.to_ascii_lowercase();
    low == "id" || low.ends_with("_id") || low.ends_with("-id") || k.ends_with("Id")
}

/// The object a call acts on: its first argument that names an identifier ([`is_id_key`]) with a
/// string or number value, as `key=value`. Arguments are read by [`call_arguments`]; a call
/// without them names no object.
fn call_object(content: &str) -> Option<String> {
    let args = call_arguments(content)?;
    let text = content;
    args.iter()
        .filter(|(k, _)| is_id_key(k))
        .filter_map(|(k, v)| {
            let v = match v {
                serde_json::Value::String(s) if !s.trim().is_empty() => s.trim().to_string(),
                serde_json::Value::Number(n) => n.to_string(),
                _ => return None,
            };
            // The first such argument as written (a JSON map does not keep the order).
            Some((text.find(&format!("\"{k}\"")).unwrap_or(usize::MAX), format!("{k}={v}")))
        })
        .min()
        .map(|(_, o)| o)
}

/// The error a call's result reports, when the result is an error report: a failed execution,
/// a result the format marks as an error, or one whose text opens with an error line (a page
/// that merely mentions an error further down does not count).
/// The line of a failed result that says why, when no error line was found: a line that
/// opens with a failure word (`FAILED`, `ERROR`, `fatal`, `✖`, `✗`, `×`, `make: ***`), else a
/// short message (three lines at most) whole, else the last non-empty line (where tools sum up),
/// clipped to 160 bytes.
pub(super) fn failure_line(content: &str) -> Option<String> {
    static FAILURE_WORD: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)^\s*(?:failed|failure|error|fatal|panic|✖|✗|×|make: \*\*\*)").unwrap()
    });
    // A line that is only a markup tag (`<output>`, `</output>`, as harnesses wrap a command's
    // output) says nothing of the failure.
    static TAG_ONLY: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"^</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>$").unwrap());
    let lines: Vec<&str> = content.lines().map(str::trim).filter(|l| !l.is_empty() && !TAG_ONLY.is_match(l)).collect();
    if let Some(line) = lines.iter().find(|l| FAILURE_WORD.is_match(l)) {
        return Some(text::clip(line, 160));
    }
    // A short message (one sentence broken by a quoted snippet) is quoted whole.
    if lines.len() <= 3 {
        return (!lines.is_empty()).then(|| text::clip(&lines.join(" "), 160));
    }
    lines.last().map(|l| text::clip(l, 160))
}

fn call_error(ctx: &Context<'_>, call: usize) -> Option<String> {
    let r = result_of(ctx, call)?;
    let rs = &ctx.hierarchy.steps[r];
    let content = &ctx.trajectory.steps[r].content;
    let lead = content.len() - content.trim_start().len();
    // An error line at the opening, or an error report as tools write one (`{"error": "…"}`,
    // `Error executing tool …`: [`crate::hierarchy::error_lead`]).
    // Warnings the agent called harmless (the step's error flag cleared) open no error.
    let opens = rs.flags.error
        && (ctx.hierarchy.evidence[r].iter().any(|e| e.kind == EvidenceKind::ErrorLine && e.span.start <= lead)
            || rs.kind == StepKind::ToolResult && crate::hierarchy::error_lead(content));
    let first_error = || {
        ctx.hierarchy.evidence[r]
            .iter()
            .find(|e| e.kind == EvidenceKind::ErrorLine)
            .map(|e| e.text(content).trim().to_string())
            // The tool marked the result failed in words the error lines do not know ("FAILED:
            // Multiple heads are present", "✖ 2 problems"): its last non-empty line, where
            // tools sum up, else its first.
            .or_else(|| failure_line(content))
            .unwrap_or_else(|| "the call failed".into())
    };
    // A terminal that reports exit code 0 says the command ran and succeeded: an error word in
    // what it printed (a commit message about a "read timeout", a log it showed) is content, not
    // a refusal of the call. The format's own error mark still counts.
    let succeeded =
        !rs.flags.failed_execution && ctx.hierarchy.evidence[r].iter().any(|e| e.kind == EvidenceKind::ExitCode(0));
    (rs.flags.failed_execution || ctx.trajectory.steps[r].is_error || opens && !succeeded).then(first_error)
}

/// Per step, the later call its state change blocked: `Some((j, object))` when step `i` is a
/// successful state-changing call ([`changes_state`]) on an object ([`call_object`]) and `j` is
/// the next state-changing call on the same object, it fails, and no call of `j`'s tool on that
/// object had failed before `i` (the failure is new after the change). Calls without a result
/// are left out. One forward pass over the calls, memoised per hierarchy. A debugger reads this
/// as operations done in the wrong order (modifying an order's items, which locks it, before
/// changing its address).
pub fn blocking_changes<'a>(ctx: &Context<'a>) -> &'a [Option<(usize, String)>] {
    ctx.facts.blocking.get_or_init(|| {
        let t = ctx.trajectory;
        let n = t.steps.len();
        let mut out = vec![None; n];
        // Per object: the last successful change; per object and tool, the first failed call.
        let mut last: HashMap<String, usize> = HashMap::new();
        let mut failed_at: HashMap<(String, String), usize> = HashMap::new();
        for i in 0..n {
            if !changes_state(t, i) {
                continue;
            }
            let Some(object) = call_object(&t.steps[i].content) else { continue };
            let tool = t.steps[i].tool_name.clone().unwrap_or_default();
            // A call without a result (a cut-off trace) neither succeeded nor failed, and one the
            // user refused did not run.
            if result_of(ctx, i).is_none() || refused_call(ctx, i) {
                continue;
            }
            if call_error(ctx, i).is_some() {
                if let Some(c) = last.remove(&object)
                    && failed_at.get(&(object.clone(), tool.clone())).is_none_or(|&f| f > c)
                {
                    out[c] = Some((i, object.clone()));
                }
                failed_at.entry((object, tool)).or_insert(i);
            } else {
                last.insert(object, i);
            }
        }
        out
    })
}

fn blocking_change(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let Some(Some((j, object))) = blocking_changes(ctx).get(i) else { return };
    let tool = ctx.trajectory.steps[*j].tool_name.as_deref().unwrap_or("a call");
    let error = call_error(ctx, *j).unwrap_or_default();
    out.push(finding(
        Signal::BlockingChange,
        weights::BLOCKING_CHANGE,
        prose![
            format!("changes {object}; the later {tool} on it fails at step "),
            Part::Step(*j),
            format!(": {error}")
        ],
    ));
}

#[cfg(test)]
mod value_tests {
    use super::*;

    /// A harness that wraps a command's output in tags (`<returncode>2</returncode>`,
    /// `<output>` … `</output>`) is quoted by the failure's own line, never by a closing tag.
    #[test]
    fn a_failure_is_quoted_by_its_line_not_by_the_tags_around_it() {
        let wrapped = "<returncode>1</returncode>\n<output>\nrunning 12 tests\ntest a ... ok\ntest b ... FAILED\n2 of 12 tests did not pass\n</output>";
        assert_eq!(failure_line(wrapped).as_deref(), Some("2 of 12 tests did not pass"));
        let short = "<output>\nsed: can't read src/slug.py/: Not a directory\n</output>";
        assert_eq!(failure_line(short).as_deref(), Some("sed: can't read src/slug.py/: Not a directory"));
        assert_eq!(failure_line("<output>\nerror: no such file\n</output>").as_deref(), Some("error: no such file"));
        // A tag with text on its line is content.
        assert_eq!(failure_line("<returncode>2</returncode>").as_deref(), Some("<returncode>2</returncode>"));
    }

    #[test]
    fn a_browsed_page_is_quoted_as_written_and_a_long_title_is_cut_on_a_character() {
        assert_eq!(
            browse_target("Here is a screenshot of [Tri Rail | South Florida](https://x)").as_deref(),
            Some("Tri Rail | South Florida")
        );
        assert_eq!(browse_target("Title: KEYENCE 台灣基恩斯\nmore").as_deref(), Some("KEYENCE 台灣基恩斯"));
        // An unclosed link text of multi-byte characters ends at a character boundary near 120
        // bytes (byte 120 falls inside a character here).
        let long = format!("screenshot of [x{}", "薄".repeat(60));
        assert_eq!(browse_target(&long), Some(format!("x{}", "薄".repeat(39))));
    }

    #[test]
    fn values_do_not_match_digits_inside_ids() {
        assert!(!agrees("order #w1023410 is cancelled", "10"));
        assert!(!agrees("item 9612497925", "10"));
        assert!(agrees("there are 10 options", "10"));
        assert!(agrees("10.0", "10"));
        assert!(agrees("paris", "Paris"));
    }

    #[test]
    fn a_line_stating_an_expected_figure_agrees_and_thousands_separators_split_nothing() {
        // A τ-bench-style expected output of several figures: the line that tells one of them
        // gives it, whatever summands it states on the way.
        let line = "the total refund for the air purifier ($473.43) and the vacuum cleaner ($622.12) is $1,095.55";
        assert!(agrees(line, "1095.55, 1528.14"));
        assert!(!agrees("the total refund is $1,095.50", "1095.55, 1528.14"));
        // Small whole numbers are no figure to agree on ("5 to 7 days" against an expected 7).
        assert!(!agrees("refunds take 5 to 7 business days here", "7.5"));
        let items: Vec<&str> = split_items("Total: $1,095.55, paid by card; 2 items\nthanks").collect();
        assert_eq!(items, vec!["Total: $1,095.55", " paid by card", " 2 items", "thanks"]);
    }

    #[test]
    fn sums_and_differences_of_the_step_s_own_figures_are_derived() {
        // A refund worked out as the difference of two prices; totals of listed costs.
        assert!(derived("3.76", &[298.91, 302.67]));
        assert!(derived("232", &[160.0, 72.0, 180.0]));
        assert!(derived("255", &[160.0, 72.0, 180.0, 75.0]));
        // Not at the written precision, or no pair adds up.
        assert!(!derived("3.75", &[298.91, 302.67]));
        assert!(!derived("161", &[88.0, 72.0]));
        assert!(derived("160.5", &[88.5, 72.0]));
        // Round numbers, short numbers and years match by coincidence: never tested.
        assert!(!derived("100", &[50.0, 50.0]));
        assert!(!derived("23", &[255.0, 232.0]));
        assert!(!derived("2018", &[2000.0, 18.0]));
    }
}

#[cfg(test)]
mod runner_tests {
    use super::{command_changes_state, failing_tests, shell_command};

    #[test]
    fn a_shell_command_changes_state_when_it_does_more_than_read_and_check() {
        for reads in [
            "cargo test parser",
            "cargo test 2>&1 | tail -5",
            "cd /workspace/billing && python -m pytest tests/test_invoice.py -q",
            "ls -la specs 2>/dev/null || echo \"specs directory > missing\"",
            "find . -name \"*.md\" -type f -mmin -10 2>/dev/null",
            "find pkg -name package.json -exec cat {} \\;",
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff",
            "sed -n '1,160p' README.md",
            "rg --files -g 'AGENTS.md'",
            "timeout 30 go test ./...",
            "RUST_BACKTRACE=1 cargo test --lib week",
            "npm run test -- --watch=false",
            "npx eslint . --max-warnings=0",
            "python -c 'from sizefmt.core import humanize_bytes; print(humanize_bytes(1023))'",
            ". .venv/bin/activate && make lint",
            "uv run pytest -q",
            "pip show attrs",
        ] {
            assert!(!command_changes_state(reads), "{reads}");
        }
        for changes in [
            "sed -i 's/\"h\": 60/\"h\": 3600/' src/timeparse.py && echo done",
            "npm install lodash@^4.17.21 && npm test",
            "echo x > notes.txt",
            "sqlite3 shop.db < report.sql",
            "rm -rf build",
            "git commit -am fix",
            "find . -name '*.pyc' -delete",
            "python -c \"import os; os.remove('a')\"",
            "make release",
            "python -c \"open('VERSION', 'w').write('1.2')\"",
            "npx prettier --write .",
            "uv run python manage.py migrate",
            "pip install -e .",
        ] {
            assert!(command_changes_state(changes), "{changes}");
        }
    }

    #[test]
    fn the_command_of_a_shell_call_is_read_from_its_arguments() {
        let cmd = |tool: &str, content: &str| shell_command(tool, content);
        assert_eq!(
            cmd("bash", r#"{"command":"cargo test parser","description":"run"}"#).as_deref(),
            Some("cargo test parser")
        );
        assert_eq!(cmd("exec_command", r#"{"cmd":"git diff --stat"}"#).as_deref(), Some("git diff --stat"));
        assert_eq!(cmd("shell", r#"{"command":["bash","-lc","ls srcc"]}"#).as_deref(), Some("ls srcc"));
        assert_eq!(
            cmd("command_execution", "bash -lc 'rg -n \"fn parse\" src'").as_deref(),
            Some("rg -n \"fn parse\" src")
        );
        assert_eq!(cmd("execute_bash", "ls data").as_deref(), Some("ls data"));
        assert_eq!(cmd("bash", r#"Bash({"command":"ls -la"})"#).as_deref(), Some("ls -la"));
        assert_eq!(cmd("get_order_details", r##"{"order_id":"#W1"}"##), None);
    }

    #[test]
    fn the_failing_tests_of_common_runners_are_named() {
        let pytest = "..F\n=== FAILURES ===\n____ test_total_is_int_cents ____\n\n>   assert False\n\
            tests/test_money.py:8: AssertionError\nFAILED tests/test_money.py::test_total_is_int_cents - assert \
            False\nFAILED tests/test_io.py::test_read[utf-8] - OSError\n2 failed, 3 passed";
        assert_eq!(failing_tests(pytest), ["test_total_is_int_cents", "test_read[utf-8]"]);
        let cargo = "running 3 tests\ntest parser::tests::empty ... FAILED\ntest parser::tests::one ... ok\n\
            ---- parser::tests::empty stdout ----\nthread panicked";
        assert_eq!(failing_tests(cargo), ["parser::tests::empty"]);
        let go = "=== RUN   TestParse\n--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 1\nFAIL";
        assert_eq!(failing_tests(go), ["TestParse"]);
        let unittest = "FAIL: test_add (tests.test_math.MathTest)\n---\nAssertionError: 3 != 4";
        assert_eq!(failing_tests(unittest), ["test_add"]);
        let jest = "  Parser\n    ✓ reads dates (3 ms)\n    ✕ reads times (5 ms)\n";
        assert_eq!(failing_tests(jest), ["reads times"]);
        // A passing run, a build error and prose name no failing test.
        assert!(failing_tests("11 passed in 0.39s").is_empty());
        assert!(failing_tests("error[E0425]: cannot find function `get_usr`").is_empty());
        assert!(failing_tests("The tests FAILED earlier; FAIL: none of them now.").is_empty());
    }
}

#[cfg(test)]
mod blocking_tests {
    use super::*;
    use crate::substrate::Substrate;

    /// A τ-bench retail record: `calls` are `(tool, arguments JSON, result)` in order, each an
    /// assistant tool call answered by a tool message.
    fn run(calls: &[(&str, &str, &str)]) -> Trajectory {
        let mut traj = vec![
            serde_json::json!({"role": "system", "content": "# Retail agent policy"}),
            serde_json::json!({"role": "user", "content": "Change my jigsaw to the 500-piece one and fix my address."}),
        ];
        for (k, (tool, args, result)) in calls.iter().enumerate() {
            let id = format!("call_{k}");
            traj.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": tool, "arguments": args}}]}));
            traj.push(serde_json::json!({"role": "tool", "tool_call_id": id, "name": tool, "content": result}));
        }
        traj.push(serde_json::json!({"role": "assistant", "content": "Done."}));
        let record = serde_json::json!([{"task_id": 7, "reward": 0.0, "info": {}, "traj": traj, "trial": 0}]);
        let bytes = serde_json::to_vec(&record).expect("serialises");
        let loaded = crate::ingest::parse("retail.json", &bytes, None).expect("a τ-bench record");
        loaded.trajectories.into_iter().next().expect("one trajectory")
    }

    fn signals_of(t: &Trajectory) -> Vec<(usize, String)> {
        let sub = Substrate::build(t);
        let ctx = Context::of(t, &sub, false);
        (0..t.steps.len())
            .flat_map(|i| {
                recall(&ctx, i)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|f| f.signal == Signal::BlockingChange)
                    .map(move |f| (i, f.evidence.to_string()))
            })
            .collect()
    }

    const ITEMS: &str = r##"{"order_id": "#W4082615", "item_ids": ["9779102705"], "new_item_ids": ["1096508426"], "payment_method_id": "paypal_5364164"}"##;
    const ADDRESS: &str = r##"{"order_id": "#W4082615", "address1": "445 Maple Drive", "zip": "76165"}"##;
    const LOCKED: &str = "Error: non-pending order cannot be modified";

    #[test]
    fn a_change_that_makes_a_later_call_on_the_same_object_fail_is_flagged() {
        let t = run(&[
            ("get_order_details", r##"{"order_id": "#W4082615"}"##, r#"{"status": "pending"}"#),
            ("modify_pending_order_items", ITEMS, r#"{"status": "pending (item modified)"}"#),
            ("modify_pending_order_address", ADDRESS, LOCKED),
        ]);
        let calls: Vec<usize> = (0..t.steps.len()).filter(|&i| changes_state(&t, i)).collect();
        assert_eq!(calls.len(), 2, "the lookup only reads");
        let (items, address) = (calls[0], calls[1]);
        assert_eq!(
            signals_of(&t),
            vec![(
                items,
                format!(
                    "changes order_id=#W4082615; the later modify_pending_order_address on it fails at step {address}: {LOCKED}"
                )
            )]
        );
    }

    #[test]
    fn the_object_is_the_first_identifier_argument() {
        assert_eq!(call_object(&format!("modify_pending_order_items({ITEMS})")).as_deref(), Some("order_id=#W4082615"));
        assert_eq!(call_object(r#"close({"paid": "yes", "userId": 7, "id": "x"})"#).as_deref(), Some("userId=7"));
        assert_eq!(call_object(r#"send({"valid": "yes", "to": "a@b.c"})"#), None);
        assert_eq!(call_object("rm -rf build"), None);
    }

    #[test]
    fn failures_on_another_object_or_already_failing_before_the_change_are_not() {
        // The address call fails on another order: the change did not block it.
        let other = ADDRESS.replace("#W4082615", "#W9583042");
        let t = run(&[
            ("modify_pending_order_items", ITEMS, r#"{"status": "pending (item modified)"}"#),
            ("modify_pending_order_address", &other, LOCKED),
        ]);
        assert_eq!(signals_of(&t), vec![]);
        // The same call already failed before the change: the failure is not new.
        let t = run(&[
            ("modify_pending_order_address", ADDRESS, LOCKED),
            ("modify_pending_order_items", ITEMS, r#"{"status": "pending (item modified)"}"#),
            ("modify_pending_order_address", ADDRESS, LOCKED),
        ]);
        assert_eq!(signals_of(&t), vec![]);
        // A result that only mentions an error further down is not a failed call.
        let t = run(&[
            ("modify_pending_order_items", ITEMS, r#"{"status": "pending (item modified)"}"#),
            ("modify_pending_order_address", ADDRESS, "{\"status\": \"pending\",\n\"note\": \"Error: none\"}"),
        ]);
        assert_eq!(signals_of(&t), vec![]);
    }
}

#[cfg(test)]
mod recall_cache_tests {
    use super::*;
    use crate::model::Step;
    use crate::substrate::Substrate;

    /// A browsing step whose page is on-task for the task's own terms and off-task for a prior
    /// about something else: the cached findings must not carry one prior's answer to the other.
    #[test]
    fn the_findings_that_read_the_prior_are_asked_each_time() {
        let step = |index: usize, agent: &str, kind: StepKind, content: &str| Step {
            index,
            agent: agent.into(),
            kind,
            content: content.into(),
            ..Step::default()
        };
        let t = Trajectory {
            task: "What is the weather forecast for Paris tomorrow?".into(),
            steps: vec![
                step(0, "human", StepKind::Message, "What is the weather forecast for Paris tomorrow?"),
                step(
                    1,
                    "WebSurfer",
                    StepKind::Message,
                    "I clicked 'Forecast'.\nHere is a screenshot of [Paris forecast - Meteo](https://meteo.example/paris).",
                ),
            ],
            ..Trajectory::default()
        };
        let sub = Substrate::build(&t);
        assert_eq!(sub.hierarchy.steps[1].action, Action::Search, "the page visit is a search step");
        let off = crate::prior::Prior { key_terms: vec!["tokyo".into(), "earthquake".into()], ..Default::default() };
        let signals = |ctx: &Context<'_>| -> Vec<Signal> {
            recall(ctx, 1).unwrap_or_default().iter().map(|f| f.signal).collect()
        };
        let bare = Context::of(&t, &sub, false).bare();
        let with_off = Context { prior: Some(&off), ..bare };
        assert!(!signals(&bare).contains(&Signal::PriorDeviation), "on-task for the task's own terms");
        assert!(signals(&with_off).contains(&Signal::PriorDeviation), "off-task for a prior about Tokyo");
        assert!(!signals(&bare).contains(&Signal::PriorDeviation), "the cache kept no prior's answer");
        assert!(sub.facts.findings.get(false).get().is_some(), "the step's own findings were cached");
    }
}

#[cfg(test)]
mod arithmetic_tests {
    use super::*;

    #[test]
    fn a_result_worked_out_in_writing_is_derived() {
        let text = "Full suite: 14 + 31 + 3 = 48 passed";
        assert!(written_result(text, text.find("48").unwrap(), "48"));
        let text = "so 10.125 × 0.20 = 2.025 rounds to 2.02";
        assert!(written_result(text, text.find("2.025").unwrap(), "2.025"));
        let text = "net: 120 - 30 / 3 = 110";
        assert!(written_result(text, text.find("110").unwrap(), "110"));
        // A wrong sum is not derived, nor a value after another line's arithmetic.
        let text = "14 + 31 + 3 = 49 passed";
        assert!(!written_result(text, text.find("49").unwrap(), "49"));
        let text = "2 + 2 = 4\nThe total is 4";
        assert!(!written_result(text, text.rfind('4').unwrap(), "4"));
        assert_eq!(evaluate("1 / 0"), None);
        assert_eq!(evaluate("2 x 3 + 1"), Some(7.0));
        // Thousands grouped with commas: one number each.
        let text = "8.1 % (1,284 / 15,870 = 0.0809).";
        assert!(written_result(text, text.find("0.0809").unwrap(), "0.0809"));
        assert!(!written_result(text, text.find("0.0809").unwrap(), "0.0810"));
        assert_eq!(evaluate("1,284 + 16"), Some(1300.0));
    }

    #[test]
    fn a_duration_between_two_clock_times_of_the_step_is_derived() {
        let text = "arr Wien Hbf 11:30, direct. That leaves you 2.5 hours before your 14:00 meeting.";
        assert!(clock_gap(text, text.find("2.5").unwrap(), "2.5"));
        let text = "Boarding 09:10, departure 09:55: 45 min to spare.";
        assert!(clock_gap(text, text.find("45").unwrap(), "45"));
        // Another duration, a number with no unit of time, a single clock time: not derived.
        let text = "arr 11:30, that leaves you 3.5 hours before your 14:00 meeting.";
        assert!(!clock_gap(text, text.find("3.5").unwrap(), "3.5"));
        let text = "arr 11:30, seat 2.5 before your 14:00 meeting.";
        assert!(!clock_gap(text, text.find("2.5").unwrap(), "2.5"));
        let text = "That leaves you 2.5 hours before your 14:00 meeting.";
        assert!(!clock_gap(text, text.find("2.5").unwrap(), "2.5"));
        // Seconds count, and a gap told as approximate may be rounded by a tenth: 2 min 23 s.
        let text = "#4471 went out at 14:02:37, ~2.5 min before the jump at 14:05.";
        assert!(clock_gap(text, text.find("2.5").unwrap(), "2.5"));
        let text = "#4471 went out at 14:02:37, 2.5 min before the jump at 14:05.";
        assert!(!clock_gap(text, text.find("2.5").unwrap(), "2.5"));
    }

    #[test]
    fn a_percentage_written_as_a_factor_is_derived() {
        // "tier B gives 7.5 %": 0.075, its complement 0.925 and 1.075 are the same rate.
        for factor in ["0.075", "0.925", "1.075", "0.93"] {
            assert!(rate_factor(factor, &[7.5]), "{factor}");
        }
        // Another number, a factor written with one decimal, or no percentage stated: not derived.
        for other in ["0.06", "0.9", "0.925"] {
            assert!(!rate_factor(other, if other == "0.925" { &[] } else { &[7.5] }), "{other}");
        }
        assert!(rate_factor("1.19", &[19.0]));
    }

    #[test]
    fn a_percentage_that_is_the_share_of_two_stated_figures_is_derived() {
        // "412 of the 9,873 orders shipped late, i.e. 4.2%".
        assert!(share_of("4.2", &[4.2], &[412.0, 9873.0, 37.0]));
        assert!(share_of("4.17", &[4.17], &[412.0, 9873.0]));
        // Not the share at the precision written, not stated as a percentage, or a share of more
        // than the whole: not derived.
        assert!(!share_of("4.3", &[4.3], &[412.0, 9873.0]));
        assert!(!share_of("4.2", &[], &[412.0, 9873.0]));
        assert!(!share_of("2396.4", &[2396.4], &[412.0, 9873.0]));
    }

    #[test]
    fn a_signed_or_compared_percentage_change_is_derived() {
        // A signed percentage or one set against another figure ("vs") is a change by itself.
        let text = "Orders: 48,210 vs 45,390 in March, +6.2%.";
        let at = text.find("6.2").unwrap();
        assert!(change_of(text, at, "6.2", &[6.2], &[48210.0, 45390.0]));
        let text = "Orders 48,210 against 45,390: 6.2% more.";
        assert!(change_of(text, text.find("6.2").unwrap(), "6.2", &[6.2], &[48210.0, 45390.0]));
        // No sign and no word of change or comparison, or not the change at the precision
        // written: not derived.
        let text = "Orders: 48,210 and 45,390; 6.2% of them late.";
        assert!(!change_of(text, text.find("6.2").unwrap(), "6.2", &[6.2], &[48210.0, 45390.0]));
        let text = "Orders: 48,210 vs 45,390, +6.4%.";
        assert!(!change_of(text, text.find("6.4").unwrap(), "6.4", &[6.4], &[48210.0, 45390.0]));
    }

    #[test]
    fn a_sql_select_only_reads() {
        assert!(reads_sql(r#"run_sql({"sql": "SELECT count(*) FROM ops.orders WHERE placed_at >= '2026-11-01'"})"#));
        assert!(reads_sql(r#"{"query": "with late as (select 1) select * from late"}"#));
        assert!(!reads_sql(r#"{"sql": "UPDATE orders SET status = 'late' WHERE id = 4"}"#));
        assert!(!reads_sql(r#"{"sql": "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x"}"#));
        assert!(!reads_sql(r#"{"path": "SELECT.md"}"#));
    }
}

#[cfg(test)]
mod failure_line_tests {
    use super::*;

    #[test]
    fn a_failed_result_is_quoted_by_the_line_that_says_why() {
        let alembic = "ERROR [alembic.util.messaging] Multiple heads are present; please specify the head revision.\n  FAILED: Multiple heads are present; please specify the head revision.";
        assert_eq!(
            failure_line(alembic).as_deref(),
            Some("ERROR [alembic.util.messaging] Multiple heads are present; please specify the head revision.")
        );
        let eslint = "/src/api/client.ts\n  41:7  error  'retries' is assigned a value but never used\n\n✖ 2 problems (2 errors, 0 warnings)";
        assert_eq!(failure_line(eslint).as_deref(), Some("✖ 2 problems (2 errors, 0 warnings)"));
        assert_eq!(failure_line("a\nb\ncompiling…\nexit status 2").as_deref(), Some("exit status 2"));
        let editor =
            "No replacement was performed, old_str `    if x:\n        return 1` did not appear verbatim in f.py.";
        assert_eq!(
            failure_line(editor).as_deref(),
            Some("No replacement was performed, old_str `    if x: return 1` did not appear verbatim in f.py.")
        );
        assert_eq!(failure_line("  \n"), None);
    }
}

#[cfg(test)]
mod timeout_tests {
    use super::says_timed_out;

    #[test]
    fn a_timeout_is_read_where_the_output_says_a_command_ran_out_of_time() {
        for said in [
            "Command timed out after 2m 0.0s",
            "The last command <command>python run.py</command> timed out and has been killed.",
            "Error: Timeout after 30s",
            "+++++++++++++++++ Timeout +++++++++++++++++",
            "FAILED tests/test_sync.py::test_slow - Failed: Timeout >10.0s",
            "thrown: \"Exceeded timeout of 5000 ms for a test.\nAdd a timeout value to this test",
            "The command 'python x.py' was cancelled because it took more than 300 seconds.",
            "panic: test timed out after 10m0s",
            "The request didn't finish and timed out.",
            "{\"status\": \"error\", \"message\": \"Command timed out\"}",
        ] {
            assert!(says_timed_out(said), "{said}");
        }
        for code in [
            "DEFAULT_TIMEOUT = 30\nrequest_timeout: int = 5",
            "parser.add_argument('--timeout', type=int, default=30)",
            "from concurrent.futures import TimeoutError\nimport socket.timeout",
            "AttributeError: 'Namespace' object has no attribute 'timeout'",
            "    raise TimeoutError('request timed out')",
            "MESSAGE = 'the request timed out'",
            "    log.warning(\"fetch of %s timed out after %ss\", url, t)",
            "# retry when the request timed out",
            "timeout: 30\nretries: 3",
            "  12→        # the socket timed out\n  13→    return None\n  14→\n",
        ] {
            assert!(!says_timed_out(code), "{code}");
        }
    }
}

#[cfg(test)]
mod routing_tests {
    use super::*;
    use crate::model::{AgentInfo, Step, Trajectory};
    use crate::substrate::Substrate;

    /// The wrong-delegation evidence of a two-step run: the user's `request`, then the agent
    /// `Triage` (instructions `rules`) handing off to `to` through the tool `tool`.
    fn handoff(rules: &str, request: &str, to: &str, tool: &str) -> Vec<String> {
        let step = |index, agent: &str, kind, content: &str| Step {
            index,
            agent: agent.into(),
            role: agent.into(),
            kind,
            content: content.into(),
            ..Default::default()
        };
        let mut d = step(1, "Triage", StepKind::Delegation, "hand off");
        d.delegate_to = Some(to.into());
        d.tool_name = Some(tool.into());
        let agent = |name: &str, role: Option<&str>| AgentInfo { name: name.into(), role: role.map(str::to_string) };
        let t = Trajectory {
            task: request.into(),
            steps: vec![step(0, "user", StepKind::Message, request), d],
            agents: vec![agent("user", None), agent("Triage", Some(rules)), agent(to, None)],
            ..Default::default()
        };
        let sub = Substrate::build(&t);
        let ctx = Context::of(&t, &sub, false);
        let mut out = Vec::new();
        misrouted(&ctx, 1, &mut out);
        out.into_iter().map(|f| f.evidence.to_string()).collect()
    }

    const REQUEST: &str = "My internet was billed twice this month, please refund the duplicate payment.";

    #[test]
    fn routing_written_as_a_list_of_topics_and_hand_off_tools_is_read() {
        let lists = [
            // Arrows in a Markdown list, the specialist named by its hand-off tool.
            "Hand off:\n- outages, slow speeds, router faults -> transfer_to_network_agent\n\
             - payments, duplicate bills, refunds -> transfer_to_accounts_agent",
            // Colons and code spans.
            "Routing:\n* **Outages, slow speeds, router faults**: `network_agent`\n\
             * **Payments, duplicate bills, refunds**: `accounts_agent`",
            // "For X, use Y" and a Unicode arrow.
            "For outages, slow speeds and router faults, use network_agent. \
             For payments, duplicate bills and refunds, use accounts_agent.",
            "outages / slow speeds / router faults → transfer_to_network_agent\n\
             payments / duplicate bills / refunds → transfer_to_accounts_agent",
        ];
        for rules in lists {
            let found = handoff(rules, REQUEST, "Network Agent", "transfer_to_network_agent");
            assert_eq!(found.len(), 1, "{rules}: {found:?}");
            assert!(found[0].starts_with("hands off to Network Agent; its instructions give "), "{}", found[0]);
            assert!(found[0].ends_with("which the request matches (duplicate, payment, refund)"), "{}", found[0]);
            // The same request handed to the specialist the list names: no finding.
            assert_eq!(handoff(rules, REQUEST, "Accounts Agent", "transfer_to_accounts_agent"), Vec::<String>::new());
        }
    }

    #[test]
    fn a_specialist_is_one_name_however_it_is_written() {
        assert_eq!(specialist_key("transfer_to_billing_agent"), "billing agent");
        assert_eq!(specialist_key("Billing Agent"), "billing agent");
        assert_eq!(specialist_key("`billing-agent`"), "billing agent");
        assert_eq!(specialist_key("hand_off_to_billing"), "billing");
        assert_eq!(specialist_key("transfer"), "transfer");
    }
}

#[cfg(test)]
mod failure_shown_tests {
    use super::*;

    fn finding(evidence: Prose) -> Finding {
        Finding { signal: Signal::UnsourcedValue, evidence, weight: 0.5 }
    }

    #[test]
    fn a_step_that_shows_the_failure_is_named_with_its_finding() {
        let f = finding(prose!["states 18450 with no earlier source (step ", Part::Step(3), " says 18400)."]);
        let shown = shown_finding(19, &f);
        assert_eq!(
            shown,
            "step 19 shows a finding (unsourced_value): states 18450 with no earlier source (step 3 says 18400)"
        );
        assert_eq!(shown.steps().collect::<Vec<_>>(), [19, 3]);
    }

    #[test]
    fn a_long_quote_is_one_line_clipped_at_a_word() {
        let long =
            format!("asserts the final result (\"reason\": {{\n    \"x\": {}) with no source", "word ".repeat(60));
        let shown = shown_finding(2, &finding(long.into()));
        assert!(!shown.contains('\n'), "{shown}");
        assert!(shown.ends_with("word…"), "{shown}");
        assert!(shown.starts_with(
            "step 2 shows a finding (unsourced_value): asserts the final result (\"reason\": { \"x\": word"
        ));
        assert!(
            shown.chars().count() <= "step 2 shows a finding (unsourced_value): ".len() + SHOWN_EVIDENCE,
            "{shown}"
        );
    }
}

#[cfg(test)]
mod edit_name_tests {
    use super::names_edit;

    #[test]
    fn create_edits_only_where_the_name_is_of_a_file() {
        for name in ["create_file", "create", "str_replace_editor", "write_file", "multiedit", "create_new_file"] {
            assert!(names_edit(name), "{name}");
        }
        for name in ["create_international_wire", "create_refund", "apply_credit", "get_order"] {
            assert!(!names_edit(name), "{name}");
        }
    }
}
