//! Findings about the actions of a tool-using assistant: a state-changing call that the tool
//! rejects, a state change made without the user's explicit confirmation where the system policy
//! asks for it, a state change tried again unchecked after a failure that left its outcome
//! unknown, and the lookup errors an agent recovered from (context, not the decisive error).
//!
//! A call changes state when [`super::changes_state`] says so (its tool's name does not start
//! with a read verb). Every rule reads the trajectory's roles, calls and results only: no tool,
//! file or benchmark is named. docs/METHODS.md, "Actions".

use std::collections::HashMap;

use super::{Context, call_arguments, call_error, changes_state, finding, result_of, weights};
use crate::diagnosis::{Finding, Part, Prose, Signal};
use crate::evidence::EvidenceKind;
use crate::model::{StepKind, Trajectory};
use crate::prose;

/// Step `i`, a state-changing call, was rejected by its tool: its result is an error report
/// ([`super::call_error`]: a result the format marks as an error, or one that opens with an
/// error line) and not a failed execution of code (that stays [`Signal::FailedAction`]). Returns whether the finding was added, so that the
/// generic [`Signal::FailedAction`] is not counted twice for the same call.
///
/// A rejection the agent recovered from ([`recovered_change`]) is context, not the error: no
/// finding, and none of the generic kind either.
pub(super) fn rejected(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) -> bool {
    if !changes_state(ctx.trajectory, i) {
        return false;
    }
    let Some(error) = call_error(ctx, i) else { return false };
    // Code that crashed (a traceback, a non-zero exit) failed to run: that is a failed action,
    // not a refusal by the tool. An edit is judged by the check after it instead
    // ([`Signal::FailedAction`] names that check), so an editing command that exits non-zero
    // (`sed -i … && sed -n '60,64p FILE`, a quote lost) stays a rejected change, whichever way
    // the format writes the exit code.
    let r = result_of(ctx, i).unwrap_or(i);
    if ctx.hierarchy.steps[r].flags.failed_execution && !super::edits(ctx.trajectory, i) {
        return false;
    }
    // A command that ran out of time was not refused: it did not finish (a hang the task may be
    // about).
    if super::says_timed_out(&error) {
        return false;
    }
    // A program that is not installed ran nothing; the agent that tells the reader so owns up
    // to a gap of the environment (an optional local CI runner, a linter run instead).
    if super::missing_program_reported(ctx, r).is_some() {
        return true;
    }
    if recovered_change(ctx, i) {
        return true;
    }
    // Told as made by the agent's very next step: the rejection is the tool's answer, the
    // telling is the error ([`told_made_over_rejection`] puts the finding there).
    if told_made_over_rejection(ctx, r).is_some() {
        return true;
    }
    let tool = ctx.trajectory.steps[i].tool_name.as_deref().unwrap_or("the call");
    out.push(finding(
        Signal::RejectedAction,
        weights::REJECTED_ACTION,
        prose![format!("{tool} changes state and the tool rejects it at step "), Part::Step(r), format!(": {error}")],
    ));
    true
}

/// A step that tells a change as made: "has been updated", "I've cancelled it"
/// ([`super::grounding::CHANGE_MADE`]), "is booked", "is in place", "is confirmed", "is done".
static TOLD_MADE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"(?i)\b(?:is|are)\s+(?:now\s+)?(?:booked|confirmed|reserved|in place|done|applied|updated|created|cancel+ed|scheduled|paid|fixed|saved|deployed|merged|sent)\b")
        .expect("a valid pattern")
});

/// The step right after result `r` of a rejected state change (a tool's call, or a shell command
/// that edits a file: not a program run, whose failure is its own; not a call whose rejection
/// names a figure of its own making, [`invented_argument`]; not one the agent recovered from,
/// [`recovered_change`]; not one whose error says the change holds or was partly made:
/// "already cancelled", "created"; "already shipped" is no such thing), when it is a message or thought of the call's agent with a
/// sentence that tells the change as made ([`TOLD_MADE`]) as a plain statement (no plan, question
/// or condition: "let me", "whether", "once", "if", "will"; nothing that says it did not happen or
/// happened before: "can't", "sorry", "already", "earlier", "solid") about the call's object (a
/// word of its tool's name after its verb, or a value of its arguments; any sentence for an edit
/// of a file), and
/// no other sentence names an error. "Your hotel is booked: …" after `RATE_EXPIRED`; "The
/// replacement is in place." after `sed: can't read …`. The tool's rejection is its answer; the
/// agent that tells the opposite misreads it, and that telling is the decisive error, not the
/// call.
pub(crate) fn told_made_over_rejection(ctx: &Context<'_>, r: usize) -> Option<usize> {
    let t = ctx.trajectory;
    let call = super::links(ctx).produced_by.get(r).copied().flatten()?;
    let editing = super::edits(t, call);
    if !changes_state(t, call) || super::call_command(t, call).is_some() && !editing {
        return None;
    }
    let error = call_error(ctx, call)?.to_lowercase();
    // The state holds already, or the change was partly made: nothing to misread.
    static HOLDS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\balready (?:been )?(?:cancel+ed|booked|confirmed|applied|done|exists?|in place|set|updated|created|paid|refunded|deleted|removed|reserved|scheduled)\b|\b(?:created|succeeded)\b").expect("a valid pattern")
    });
    if HOLDS.is_match(&error) || invented_argument(ctx, call, &error) || recovered_change(ctx, call) {
        return None;
    }
    let next = r + 1;
    let s = t.steps.get(next)?;
    if s.agent != t.steps[call].agent || !matches!(s.kind, StepKind::Message | StepKind::Thought) {
        return None;
    }
    let low = s.content.to_lowercase();
    const ERRORS: [&str; 14] = [
        "error",
        "fail",
        "reject",
        "expired",
        "unable",
        "could not",
        "couldn't",
        "can't",
        "cannot",
        "declined",
        "sorry",
        "unfortunately",
        "unavailable",
        "won't",
    ];
    if ERRORS.iter().any(|w| low.contains(w)) {
        return None;
    }
    // The words that name the call's object: its tool's name (`book_hotel` → hotel), its string
    // arguments (`#W4411`).
    let object: Vec<String> = {
        // A name of several words opens with its verb (`book_hotel`, `cancel_pending_order`): the
        // rest names the object.
        let tool = t.steps[call].tool_name.as_deref().unwrap_or("").to_lowercase();
        let words: Vec<&str> = tool.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
        let nouns = if words.len() > 1 { &words[1..] } else { &words[..] };
        let mut w: Vec<String> = nouns.iter().filter(|w| w.len() > 3).map(|w| w.to_string()).collect();
        if let Some(strings) = super::call_strings(&t.steps[call].content) {
            w.extend(
                strings.lines().filter(|v| v.len() >= 3 && v.split_whitespace().count() <= 3).map(str::to_lowercase),
            );
        }
        w
    };
    static NOT_STATED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\b(?:let me|let's|whether|once|if|will|i'll|going to|so that|should|not|no longer|already|earlier|before|previous(?:ly)?|solid|taken|full(?:y)?)\b|\?")
            .expect("a valid pattern")
    });
    let told = crate::text::sentences(&s.content).any(|sentence| {
        let low = sentence.to_lowercase();
        (TOLD_MADE.is_match(sentence) || super::grounding::CHANGE_MADE.is_match(sentence))
            && !NOT_STATED.is_match(sentence)
            && (editing || object.iter().any(|o| low.contains(o.as_str())))
    });
    told.then_some(next)
}

/// Whether call `call`, rejected with `error` (lower case), passes a number argument (a JSON number
/// of its arguments, above 10) that no step before it writes ([`super::first_written`]) and that
/// the error names (`"amount": 1200.0` rejected as "amount 1200.0 exceeds charge ch_81 (120.0)"):
/// the call was wrong itself, and the rejection answers that.
fn invented_argument(ctx: &Context<'_>, call: usize, error: &str) -> bool {
    let Some(args) = call_arguments(&ctx.trajectory.steps[call].content) else { return false };
    let mut leaves = Vec::new();
    args.values().for_each(|v| super::json_leaves(v, &mut leaves));
    let found: Vec<String> = leaves.iter().filter(|v| v.is_number()).map(|v| v.to_string()).collect();
    found.iter().any(|written| {
        let k = crate::evidence::normalize_number(written);
        !k.is_empty()
            && !crate::evidence::is_trivial_number(&k)
            && (error.contains(written.as_str()) || error.contains(k.as_str()))
            && super::first_written(ctx, &k).is_none_or(|j| j >= call)
    })
}

/// Step `i` tells a state change as made right after the tool rejected it
/// ([`told_made_over_rejection`]): "tells the change as made ("Your hotel is booked: …") although
/// the tool rejected it at step 22: RATE_EXPIRED".
pub(super) fn told_made_over_rejected(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let Some(r) = i.checked_sub(1) else { return };
    if told_made_over_rejection(ctx, r) != Some(i) {
        return;
    }
    let Some(call) = super::links(ctx).produced_by.get(r).copied().flatten() else { return };
    let error = call_error(ctx, call).unwrap_or_default();
    out.push(finding(
        Signal::IgnoredResult,
        weights::MISREAD,
        prose![
            format!(
                "tells the change as made (\"{}\") although the tool rejected it at step ",
                crate::text::clip(t.steps[i].content.trim(), 50)
            ),
            Part::Step(r),
            format!(": {}", crate::text::clip(&error, 60))
        ],
    ));
}

/// Whether step `call` is a read-only lookup whose error the agent recovered from: the call
/// does not change state, its result is an error, and the agent's next call of the same kind
/// ([`same_kind`]: the same tool, retried or with a corrected argument) succeeds, with only
/// successful read-only calls of the agent between (a look at the schema before the corrected
/// query). Looked for within [`RECOVERY_WINDOW`] steps of the failed result.
pub(crate) fn recovered_lookup(ctx: &Context<'_>, call: usize) -> bool {
    let t = ctx.trajectory;
    let Some(step) = t.steps.get(call) else { return false };
    if step.kind != StepKind::ToolCall || changes_state(t, call) || call_error(ctx, call).is_none() {
        return false;
    }
    let Some(r) = result_of(ctx, call) else { return false };
    // A call that ran out of time asked nothing wrong: only the same call again retries it. The
    // same tool with other arguments (the next region's query) is another lookup.
    if super::says_timed_out(&t.steps[r].content) {
        // The arguments as JSON (member order and spacing aside), else the call's text.
        let key = |c: &str| call_arguments(c).map_or_else(|| c.trim().to_string(), |m| format!("{m:?}"));
        let args = key(&step.content);
        return next_try_succeeds(ctx, call, r, |k| {
            same_kind(step.tool_name.as_deref(), t.steps[k].tool_name.as_deref()) && key(&t.steps[k].content) == args
        });
    }
    next_try_succeeds(ctx, call, r, |k| same_kind(step.tool_name.as_deref(), t.steps[k].tool_name.as_deref()))
}

/// Whether the agent of call `call`, whose result is step `r`, tried again with success: its next
/// call for which `again` holds, within [`RECOVERY_WINDOW`] steps of `r` and with only successful
/// read-only calls of the agent before it, has a result that is no error.
fn next_try_succeeds(ctx: &Context<'_>, call: usize, r: usize, again: impl Fn(usize) -> bool) -> bool {
    let t = ctx.trajectory;
    let agent = &t.steps[call].agent;
    for k in r + 1..t.steps.len().min(r + 1 + RECOVERY_WINDOW) {
        if t.steps[k].kind != StepKind::ToolCall || t.steps[k].agent != *agent {
            continue;
        }
        let ok = result_of(ctx, k).is_some() && call_error(ctx, k).is_none();
        if again(k) {
            return ok;
        }
        if !ok || changes_state(t, k) {
            return false;
        }
    }
    false
}

/// Whether the agent recovered from the error of call `call`: a read-only lookup retried or
/// corrected with success ([`recovered_lookup`]), or a rejected state change made another way
/// right after ([`recovered_change`]). Going on after such an error is not ignoring it.
pub(crate) fn recovered(ctx: &Context<'_>, call: usize) -> bool {
    recovered_lookup(ctx, call)
        || changes_state(ctx.trajectory, call) && call_error(ctx, call).is_some() && recovered_change(ctx, call)
}

/// How many steps after a rejected state change the agent's next change of the same object is
/// looked for.
pub const CHANGE_RECOVERY_WINDOW: usize = 40;

/// Whether the rejected state-changing call `call` was recovered from: the agent's next
/// state-changing call on the same object ([`super::call_object`], within
/// [`CHANGE_RECOVERY_WINDOW`] steps) succeeds, so the change the
/// user wanted was made another way (an exchange refused for a pending order, then the order
/// modified). A call that names no object is recovered when it is a shell command done again
/// with success ([`redone_command`]); any call is when it is retried at once with success
/// ([`retried_at_once`]: a booking refused for its vehicle class, then made with the class the
/// error asked for; a reservation refused for a customer's name, then made with the id).
pub(crate) fn recovered_change(ctx: &Context<'_>, call: usize) -> bool {
    let t = ctx.trajectory;
    let Some(object) = super::call_object(&t.steps[call].content) else {
        return redone_command(ctx, call) || retried_at_once(ctx, call);
    };
    let agent = &t.steps[call].agent;
    let next = (call + 1..t.steps.len().min(call + 1 + CHANGE_RECOVERY_WINDOW)).find(|&k| {
        t.steps[k].agent == *agent
            && changes_state(t, k)
            && super::call_object(&t.steps[k].content).as_deref() == Some(object.as_str())
    });
    // The retry may name the object another way (`customer_id` where the refused call had the
    // customer's name): the same tool again at once, with success, is a recovery too.
    next.is_some_and(|k| result_of(ctx, k).is_some() && call_error(ctx, k).is_none()) || retried_at_once(ctx, call)
}

/// Whether the rejected call `call` was retried at once with success: the agent's next call
/// after the rejection, within [`RECOVERY_WINDOW`] steps and with only successful read-only calls
/// between, is of the same tool (the name equal, ignoring case) and its result is no error. The
/// change was made; the rejection only made the agent correct an argument. Not for a shell
/// command, a file edit or code that failed to run: any next call of a shell, an editor or an
/// interpreter is "the same tool" whatever it does (their own recoveries are
/// [`redone_command`], `coding::recovered_edit` and the failed-code rules).
fn retried_at_once(ctx: &Context<'_>, call: usize) -> bool {
    let t = ctx.trajectory;
    let step = &t.steps[call];
    let Some(tool) = step.tool_name.as_deref() else { return false };
    let r = result_of(ctx, call).unwrap_or(call);
    if super::call_command(t, call).is_some() || super::edits(t, call) || ctx.hierarchy.steps[r].flags.failed_execution
    {
        return false;
    }
    next_try_succeeds(ctx, call, r, |k| t.steps[k].tool_name.as_deref().is_some_and(|n| n.eq_ignore_ascii_case(tool)))
}

/// Whether the failed shell command `call` was done again with success by the same agent within
/// [`CHANGE_RECOVERY_WINDOW`] steps: a later command with the same action
/// ([`super::assertion::action_key`]: the same program and first argument, `alembic revision`)
/// that did not fail, usually after the agent changed what made it fail (the database upgraded,
/// a missing package installed). A call that is no shell command is never redone this way.
fn redone_command(ctx: &Context<'_>, call: usize) -> bool {
    let t = ctx.trajectory;
    let s = &t.steps[call];
    let shell = super::call_command(t, call).is_some();
    let Some(key) = super::assertion::action_key(t, call).filter(|_| shell) else { return false };
    (call + 1..t.steps.len().min(call + 1 + CHANGE_RECOVERY_WINDOW))
        .find(|&k| {
            t.steps[k].kind == StepKind::ToolCall
                && t.steps[k].agent == s.agent
                && super::assertion::action_key(t, k).as_deref() == Some(key.as_str())
        })
        .is_some_and(|k| result_of(ctx, k).is_some() && call_error(ctx, k).is_none())
}

/// How many steps after a failed lookup's result its retry is looked for.
pub const RECOVERY_WINDOW: usize = 8;

/// Whether two tool names are the same kind of lookup: equal, or sharing their first two words
/// (`find_user_id_by_email` and `find_user_id_by_name_zip`; `getOrder` and `getOrderItems`).
pub(super) fn same_kind(a: Option<&str>, b: Option<&str>) -> bool {
    let (Some(a), Some(b)) = (a, b) else { return false };
    if a.eq_ignore_ascii_case(b) {
        return true;
    }
    let (wa, wb) = (name_words(a), name_words(b));
    wa.len() >= 2 && wb.len() >= 2 && wa[..2] == wb[..2]
}

/// The lower-case words of a tool name or a key, split at `_`, `-`, `.`, spaces and
/// lower-to-upper case changes (`retryDelaySeconds` → retry, delay, seconds).
pub(super) fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Where the rule asking for the user's confirmation before a state change was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySource {
    /// A `system` or `developer` step (0-based index).
    Step(usize),
    /// An agent's instructions that are no step of the run (an OpenAI Agents SDK generation's
    /// system message, an agent's description): the agent's name.
    Instructions(String),
    /// The user's own turn (0-based index) asking to be asked first ("check first whether that
    /// works", "don't book anything yet").
    User(usize),
}

/// The rule asking for the user's confirmation before a state change ([`confirmation_policy`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmationPolicy {
    /// Where it was given.
    pub source: PolicySource,
    /// Its sentence, as written.
    pub sentence: String,
    /// The kind of action it holds back, as a word a tool's name holds (`book`, `pay`), when it
    /// names one ("don't book anything yet"); `None`: every state change.
    pub only: Option<&'static str>,
}

impl ConfirmationPolicy {
    /// Whether the rule holds for a call of the tool `tool` (any tool when it names no kind of
    /// action; else a tool whose lower-case name holds the kind's word).
    pub fn covers(&self, tool: Option<&str>) -> bool {
        self.only.is_none_or(|kind| tool.is_some_and(|t| t.to_ascii_lowercase().contains(kind)))
    }

    /// The first step the rule holds for: its step, or 0 for an agent's instructions.
    pub fn from_step(&self) -> usize {
        match self.source {
            PolicySource::Step(i) | PolicySource::User(i) => i,
            PolicySource::Instructions(_) => 0,
        }
    }
}

/// The rule asking for the user's confirmation before acting: the first sentence of a `system`
/// or `developer` step, else of an agent's instructions (role text that is no step), that names
/// the user's go-ahead (`confirm`, `confirmation`; or `consent`, `approval`, `permission`, an
/// explicit "yes" next to the person served: user, customer, guest...) together with an
/// obligation (whole words: `must`, `have to`, `need`, `require`, `obtain`, `explicit`, `always`,
/// `before`, `never`, `without`); else the first user turn that asks to be asked first
/// ([`asks_to_be_asked`]). Computed once per trajectory.
pub fn confirmation_policy<'a>(ctx: &Context<'a>) -> Option<&'a ConfirmationPolicy> {
    ctx.facts.confirmation_policy.get_or_init(|| policy_sentence(ctx.trajectory)).as_ref()
}

fn policy_sentence(t: &Trajectory) -> Option<ConfirmationPolicy> {
    let from_steps = t
        .steps
        .iter()
        .filter(|s| s.role.eq_ignore_ascii_case("system") || s.role.eq_ignore_ascii_case("developer"))
        .find_map(|s| {
            consent_rule(&s.content).map(|sentence| (PolicySource::Step(s.index), rule_kind(&sentence), sentence))
        });
    let from_roles = || {
        t.agents.iter().find_map(|a| {
            let role = a.role.as_deref()?;
            consent_rule(role)
                .map(|sentence| (PolicySource::Instructions(a.name.clone()), rule_kind(&sentence), sentence))
        })
    };
    let from_user = || {
        t.steps.iter().filter(|s| is_human(s)).find_map(|s| {
            asks_to_be_asked(&s.content)
                .map(|(sentence, only)| (PolicySource::User(s.index), only, sentence.to_string()))
        })
    };
    from_steps.or_else(from_roles).or_else(from_user).map(|(source, only, sentence)| ConfirmationPolicy {
        source,
        sentence,
        only,
    })
}

/// Verbs that name one kind of action, and the word a tool that does it holds in its name.
const KINDS: [(&str, &str); 14] = [
    ("book", "book"),
    ("pay", "pay"),
    ("buy", "buy"),
    ("purchas", "purchase"),
    ("order", "order"),
    ("charg", "charge"),
    ("send", "send"),
    ("delet", "delete"),
    ("remov", "remove"),
    ("cancel", "cancel"),
    ("refund", "refund"),
    ("transfer", "transfer"),
    ("reserv", "reserv"),
    ("submit", "submit"),
];

/// The kind of action a policy sentence is about when it opens with one and names no other
/// ("Sending email on Priya's behalf requires her explicit approval": `send`); `None` for a rule
/// about every state change.
fn rule_kind(sentence: &str) -> Option<&'static str> {
    let words: Vec<String> = sentence.split(|c: char| !c.is_alphanumeric()).map(str::to_lowercase).collect();
    let kind_of = |w: &str| KINDS.iter().find(|(stem, _)| w.starts_with(stem)).map(|(_, tool)| *tool);
    let first = kind_of(words.iter().find(|w| !w.is_empty())?)?;
    // A rule that names other kinds of action too ("Refunds and cancellations require …") is
    // about all of them: every state change.
    let kinds: std::collections::HashSet<&str> = words.iter().filter_map(|w| kind_of(w)).collect();
    (kinds.len() == 1).then_some(first)
}

/// The first sentence of a system text that asks for the user's go-ahead ([`confirmation_policy`]).
fn consent_rule(text: &str) -> Option<String> {
    // Whole words: "need" is not "needed", "only" is not "commonly".
    static OBLIGATION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(must|have to|has to|need|needs|require|requires|required|obtain|explicit|explicitly|always|before|never|without)\b",
        )
        .unwrap()
    });
    // Ways a policy names the user's go-ahead: a confirmation, consent, approval, permission, or
    // the user's "yes"; tied to the person served ("the user's permission", not "file
    // permissions").
    static CONSENT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"(?i)confirm|\b(consent|approval|approve|permission)\b|['"]yes['"]|\bexplicit yes\b"#)
            .unwrap()
    });
    static PERSON: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\b(user|users|customer|customers|guest|guests|client|clients|caller|patient|buyer|member|passenger|traveller|traveler)('s)?\b")
            .unwrap()
    });
    // The go-ahead of the person served named by a pronoun ("requires her explicit approval").
    static OWNED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\b(her|his|their|my|your)\s+(explicit\s+|express\s+|written\s+)?(consent|approval|permission|go-ahead)\b")
            .unwrap()
    });
    text.split(['.', '\n', ';'])
        .map(str::trim)
        .find(|sentence| {
            let low = sentence.to_lowercase();
            CONSENT.is_match(&low)
                && OBLIGATION.is_match(&low)
                && (low.contains("confirm") || PERSON.is_match(&low) || OWNED.is_match(&low))
        })
        .map(|sentence| sentence.trim_start_matches(['-', '*', ' ']).to_string())
}

/// The sentence of a user's turn that asks the agent to ask (or check) first instead of acting,
/// with the kind of action it holds back when it names one: "check first whether that works for
/// both of us", "ask me before you change the meeting", "show me the draft before anything goes
/// out", "let me review it first", "without asking me" and "don't change
/// anything yet" hold back every state change (`None`); "don't book anything yet" and "don't pay
/// yet" only bookings and payments (`Some("book")`, `Some("pay")`: the verb a tool's name must
/// hold). `None` overall when the turn asks nothing of the kind (a plain request to act is no
/// such rule).
pub fn asks_to_be_asked(text: &str) -> Option<(&str, Option<&'static str>)> {
    const CHANGES: &str = r"(?:change|modify|update|move|reschedule|edit|book|pay|buy|purchase|order|charge|send|delete|remove|cancel|refund|transfer|reserve|submit)";
    static ASK_FIRST: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(&format!(
            r"(?i)\b(?:check|ask|confirm)\s+(?:with me\s+)?first\b|\b(?:check|talk|speak) with (?:my|our|the) \w+(?: \w+)? first\b|\bbefore I (?:commit|decide|agree)\b|\bjust (?:tell|show) me\b[^.!?\n]{{0,40}}\bfor now\b|\bask me (?:first|before)\b|\b(?:show|let) me\b[^.!?\n]{{0,40}}?\b(?:first|before)\b|\bwithout (?:asking|checking with|confirming with) me\b|\b(?:don't|do not|dont|never)\s+(?P<ban>{CHANGES})\w*\b(?:[^.!?\n]{{0,30}}\b(?:yet|until|before|without)\b|\s+anything\b)|\bbefore (?:you\s+)?(?P<before>{CHANGES})\w*\b[^.!?\n]{{0,40}}\b(?:ask|check with|confirm with|tell) me\b"
        ))
        .unwrap()
    });
    let c = ASK_FIRST.captures(text)?;
    let m = c.get(0)?;
    let verb = c.name("ban").or_else(|| c.name("before")).map(|v| v.as_str().to_lowercase());
    let kind = verb.and_then(|v| KINDS.iter().find(|(stem, _)| v.starts_with(stem)).map(|(_, tool)| *tool));
    let start = text[..m.start()].rfind(['.', '!', '?', '\n']).map_or(0, |p| p + 1);
    let end = text[m.end()..].find(['.', '!', '?', '\n']).map_or(text.len(), |p| m.end() + p);
    Some((text[start..end].trim(), kind))
}

/// Per step, for a state-changing call made without the user's confirmation where the policy
/// asks for it: `Some(proposal)`, the agent's last message asking the user before the call
/// (`None` inside when it asked nothing). A call is confirmed when a user turn that affirms
/// ([`affirms`]) comes after the agent's last asking message ([`asks`]) and before the call; one
/// confirmation covers every call until the agent asks again. One forward pass, memoised.
pub fn unconfirmed_changes<'a>(ctx: &Context<'a>) -> &'a [Option<Option<usize>>] {
    ctx.facts.unconfirmed.get_or_init(|| {
        let t = ctx.trajectory;
        let mut out = vec![None; t.steps.len()];
        // Per agent, its last asking message; the last affirming user turn.
        let mut asked: HashMap<&str, usize> = HashMap::new();
        let mut affirmed: Option<usize> = None;
        let Some(policy) = confirmation_policy(ctx) else { return out };
        let from = policy.from_step();
        // Under the user's own rule, a later turn of the user asking for the change ("Please put
        // it back to Tuesday") is the user's decision: it confirms the calls after it.
        let user_rule = matches!(policy.source, PolicySource::User(_));
        let mut requested: Option<usize> = None;
        // Asking messages that only ask for details (an identity check, an email): a "sure, …"
        // that answers one gives details, not the go-ahead for an action.
        let mut for_details: Vec<usize> = Vec::new();
        for (i, s) in t.steps.iter().enumerate() {
            // The served person's turns only: an AutoGen agent with the role `user` is no user,
            // and a tool result a format gives the role `user` (Claude Code) affirms nothing.
            if is_human(s) {
                if affirms(&s.content) {
                    affirmed = Some(i);
                }
                if user_rule && i > from && is_human(s) && s.content.to_lowercase().contains("please") {
                    requested = Some(i);
                }
                continue;
            }
            if s.kind == StepKind::Message && asks(&s.content) {
                asked.insert(s.agent.as_str(), i);
                if asks_only_for_details(&s.content) {
                    for_details.push(i);
                }
                continue;
            }
            if i > from
                && changes_state(t, i)
                && !s.tool_name.as_deref().is_some_and(hands_off)
                && policy.covers(s.tool_name.as_deref())
            {
                let proposal = asked.get(s.agent.as_str()).copied();
                let confirmed = matches!((proposal, affirmed), (Some(p), Some(u)) if u > p && !for_details.contains(&p))
                    || requested.is_some_and(|u| proposal.is_none_or(|p| u > p));
                if !confirmed {
                    out[i] = Some(proposal);
                }
            }
        }
        out
    })
}

/// Whether a tool passes the conversation on rather than changing a record: a transfer to a
/// human or another agent (τ-bench's `transfer_to_human_agents`, the OpenAI Agents SDK's
/// `transfer_to_<agent>` handoffs), a `handoff` or an `escalate` call. The policies that ask for
/// the user's confirmation ask it before changing their data; handing the user over is what a
/// policy prescribes when the agent cannot act, and needs no "yes".
fn hands_off(tool: &str) -> bool {
    let n = tool.to_ascii_lowercase();
    ["transfer_to", "handoff", "hand_off", "escalate"].iter().any(|p| n.starts_with(p))
}

/// Whether a role is the user's (the human or the simulated user the agent serves).
pub(super) fn is_user(role: &str) -> bool {
    role.eq_ignore_ascii_case("user") || role.eq_ignore_ascii_case("human")
}

/// The served person's turns (`is_human`), in step order; found once per run.
pub(super) fn user_steps<'a>(ctx: &Context<'a>) -> &'a [usize] {
    let t = ctx.trajectory;
    ctx.facts.user_steps.get_or_init(|| (0..t.steps.len()).filter(|&j| is_human(&t.steps[j])).collect())
}

/// Whether step `s` is the served person's own turn, not an agent's: a message whose role is the
/// user's ([`is_user`]) and whose speaker is named as one (`user`, `human`, `customer`, or the
/// role itself). AutoGen group chats give every agent but the speaker the role `user`
/// (`BusinessLogic_Expert` with role `user` is an agent).
pub fn is_human(s: &crate::model::Step) -> bool {
    s.kind == StepKind::Message && served_person(s)
}

/// Whether step `s`, of any kind, is the served person's own: its role is the user's and its
/// agent is that role or is named `user`, `human` or `customer` (a request a framework records
/// as a delegation to the system, a LangGraph root run). An AutoGen expert whose role is `user`
/// is not.
pub fn served_person(s: &crate::model::Step) -> bool {
    is_user(&s.role)
        && (s.agent.eq_ignore_ascii_case(&s.role)
            || ["user", "human", "customer"].iter().any(|n| s.agent.eq_ignore_ascii_case(n)))
}

/// Whether an agent's message asks the user something: a question mark, or a request to
/// confirm or to say how to go on.
pub fn asks(content: &str) -> bool {
    let low = content.to_lowercase();
    low.contains('?')
        || ["confirm", "let me know", "would you like", "shall i", "should i", "do you want"]
            .iter()
            .any(|w| low.contains(w))
}

/// Whether an agent's asking message ([`asks`]) only asks the user for details (an identity
/// check, an email, a date of birth: "could you give me your date of birth and the last four
/// digits of your card?", "please provide your order number") and proposes no action (no "shall
/// I", "would you like me to", "do you want me to", "OK to proceed", no "confirm" outside a
/// request for details). An affirming reply to it ("sure, DOB is March 14") gives the details;
/// it is no go-ahead for a change.
pub fn asks_only_for_details(content: &str) -> bool {
    static DETAILS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(?:could|can|would|will) you (?:please |kindly )?(?:give|provide|tell|share|send|confirm|verify|spell) (?:me |us )?(?:your|the)\b|\bwhat(?:'s| is| are) your\b|\bplease (?:provide|give|share|send|tell me|confirm) (?:me |us )?(?:your|the)\b|\bI (?:first )?need (?:your|to verify|to confirm your)\b|\bmay I have your\b",
        )
        .unwrap()
    });
    static PROPOSES: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\bshall I\b|\bshould I\b|\bwould you like (?:me|to)\b|\bdo you want (?:me|to)\b|\b(?:ok|okay|all right) to (?:proceed|go ahead)\b|\bproceed\b|\bgo ahead\b|\bconfirm (?:that|this|the (?:change|transfer|booking|order|cancellation|exchange|return|payment))\b",
        )
        .unwrap()
    });
    DETAILS.is_match(content) && !PROPOSES.is_match(content)
}

/// Whether a user turn affirms: it does not open with a refusal (`no`, `wait`, `stop`…) nor put
/// the decision off ("let me think about it", "not yet", "let me just double-check with my
/// husband first"), and it holds a word or phrase of consent (`yes`, `confirm`, `proceed`, `go
/// ahead`, `please do`…), or a weak one
/// (`ok`, `okay`, `sure`, `correct`) when it does not end by asking a question: "Hmm, ok. Let me
/// think about it. Would a switch take effect immediately?" asks, it does not consent.
pub fn affirms(content: &str) -> bool {
    let low = content.to_lowercase();
    let words: Vec<&str> = low.split(|c: char| !c.is_alphanumeric() && c != '\'').filter(|w| !w.is_empty()).collect();
    if matches!(words.first(), Some(&("no" | "nope" | "don't" | "wait" | "stop" | "cancel"))) {
        return false;
    }
    // A go-ahead put off until someone else is asked ("I'll go ahead, but let me just
    // double-check with my husband first") is not given yet.
    const DEFERS: [&str; 18] = [
        "think about it",
        "let me think",
        "not yet",
        "maybe later",
        "not sure",
        "hold on",
        "i'll decide",
        "haven't decided",
        "let me check",
        "let me just check",
        "let me double-check",
        "let me just double-check",
        "check with my",
        "ask my",
        "talk to my",
        "run it by",
        "give me a minute",
        "before you do",
    ];
    if DEFERS.iter().any(|p| low.contains(p)) {
        return false;
    }
    const STRONG: [&str; 7] = ["yes", "yeah", "yep", "yup", "confirm", "confirmed", "proceed"];
    const PHRASES: [&str; 6] = ["go ahead", "please do", "do it", "sounds good", "that works", "i agree"];
    const WEAK: [&str; 4] = ["ok", "okay", "sure", "correct"];
    let asks_back = low.trim_end().ends_with('?');
    words.iter().any(|w| STRONG.contains(w))
        || PHRASES.iter().any(|p| low.contains(p))
        || !asks_back && words.iter().any(|w| WEAK.contains(w))
}

/// Step `i` is a state-changing call made without the user's explicit confirmation although
/// the system policy asks for it ([`unconfirmed_changes`]).
pub(super) fn unconfirmed(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let Some(Some(proposal)) = unconfirmed_changes(ctx).get(i) else { return };
    let Some(policy) = confirmation_policy(ctx) else { return };
    let tool = ctx.trajectory.steps[i].tool_name.as_deref().unwrap_or("the call");
    let since = match proposal {
        Some(p) => prose!["no user turn confirms after its question at step ", Part::Step(*p)],
        None => Prose::from("it never asked the user"),
    };
    let head = format!("{tool} changes state without the user's confirmation that ");
    let rule = match &policy.source {
        PolicySource::Step(p) => prose![head, "the policy at step ", Part::Step(*p), " asks for: "],
        PolicySource::Instructions(agent) => prose![head, format!("{agent}'s instructions ask for: ")],
        PolicySource::User(u) => prose![
            head,
            "the user asked for at step ",
            Part::Step(*u),
            format!(" (\"{}\"): ", crate::text::clip(&policy.sentence, 60))
        ],
    };
    out.push(finding(Signal::UnconfirmedAction, weights::UNCONFIRMED_ACTION, rule.with(since)));
}

/// Step `i`, a tool call, passes a value the user did not give where one of the user's last
/// [`MISMATCH_TURNS`] turns before it gave a near one: a run of five or more digits (an order
/// number, also inside an id such as `W-52813`) that no earlier step writes, differing from one the
/// user wrote by one mistyped digit or two neighbouring digits swapped ([`near_miss`]); or a date
/// (by its ISO key) that no earlier step writes, differing from a date the user wrote in exactly
/// one of year, month and day. The user's value must be used by no call of the run (else this
/// call added a value, it did not replace one: a return date a week after the outbound one).
/// A state-changing call whose timestamp is the agent's own earlier one in another zone is read
/// first ([`zone_shift`]).
/// Shell commands and edits are not read (their text is code). Arguments are read from the JSON
/// object between the call text's first `{` and last `}`.
pub(crate) fn argument_mismatch(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if s.kind != StepKind::ToolCall {
        return;
    }
    let (Some(start), Some(end)) = (s.content.find('{'), s.content.rfind('}')) else { return };
    let Some(args) = s.content.get(start..=end) else { return };
    // Both kinds of value hold four digits in a row (a year, or part of a five-digit run): the
    // cheap test first, as this runs for every call each time a step's findings are asked for.
    if !has_digit_run(args, 4) {
        return;
    }
    if zone_shift(ctx, i, args, out) {
        return;
    }
    let all_users = user_steps(ctx);
    // The user's last few turns before the call.
    let before = all_users.partition_point(|&u| u < i);
    let users = &all_users[before.saturating_sub(MISMATCH_TURNS)..before];
    if users.is_empty() {
        return;
    }
    // Commands and edits write code and file text, not values the user gave.
    let tool_lower = s.tool_name.as_deref().unwrap_or("").to_ascii_lowercase();
    if super::shell_command(&tool_lower, &s.content).is_some() || super::edits(t, i) {
        return;
    }
    let unseen = |key: &str| super::first_written(ctx, key).is_none_or(|j| j >= i);
    // A value the user gave that some call of the run uses was not replaced by this one.
    let used_by_a_call =
        |given: &str| t.steps.iter().any(|c| c.kind == StepKind::ToolCall && c.content.contains(given));
    let tool = s.tool_name.as_deref().unwrap_or("the tool");
    // Dates first: a date's digits would also read as numbers.
    let call_dates: Vec<String> = crate::evidence::extract_text(args)
        .into_iter()
        .filter(|e| e.kind == EvidenceKind::Date)
        .map(|e| e.key)
        .collect();
    for d in call_dates.iter().filter(|d| unseen(d)) {
        for &u in users.iter().rev() {
            let near = ctx.hierarchy.evidence[u]
                .iter()
                .filter(|e| e.kind == EvidenceKind::Date && one_part_differs(&e.key, d))
                .find(|e| !call_dates.contains(&e.key) && !used_by_a_call(&e.key))
                .map(|e| e.text(&t.steps[u].content).to_string());
            if let Some(given) = near {
                push_mismatch(out, tool, d, &given, u);
                return;
            }
        }
    }
    for d in digit_runs(args) {
        if !unseen(&crate::evidence::normalize_number(d)) || call_dates.iter().any(|k| k.contains(d)) {
            continue;
        }
        for &u in users.iter().rev() {
            let given = digit_runs(&t.steps[u].content).find(|g| near_miss(g, d) && !used_by_a_call(g));
            if let Some(given) = given {
                push_mismatch(out, tool, d, given, u);
                return;
            }
        }
    }
}

/// How many steps before a state-changing call [`zone_shift`] looks for the agent's earlier calls.
const ZONE_LOOKBACK: usize = 40;

/// A timestamp argument with an explicit zone: `"start": "2026-12-09T15:00:00+01:00"` (key,
/// date, clock time `hh:mm`, zone `Z` or `±hh:mm`).
static ZONED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r#""([A-Za-z_][A-Za-z0-9_]*)"\s*:\s*"(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})""#,
    )
    .unwrap()
});

/// The zone of a timestamp as minutes east of UTC (`Z` is 0, `+01:00` 60, `-0530` -330).
fn zone_minutes(zone: &str) -> Option<i32> {
    if zone == "Z" {
        return Some(0);
    }
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let digits: String = zone.chars().filter(char::is_ascii_digit).collect();
    let (h, m) = (digits.get(..2)?.parse::<i32>().ok()?, digits.get(2..4)?.parse::<i32>().ok()?);
    Some(sign * (h * 60 + m))
}

/// Step `i`, a state-changing call, passes a timestamp (`args`, its JSON arguments) at the same
/// date and clock time as the same argument of the agent's own call within [`ZONE_LOOKBACK`]
/// steps before it, but in another zone: the check said `15:00+01:00`, the booking `15:00Z`, an
/// hour later. Returns whether the finding was added.
fn zone_shift(ctx: &Context<'_>, i: usize, args: &str, out: &mut Vec<Finding>) -> bool {
    let t = ctx.trajectory;
    if !super::changes_state(t, i) || !args.contains('T') {
        return false;
    }
    let agent = &t.steps[i].agent;
    for c in ZONED.captures_iter(args) {
        let (key, date, clock, zone) = (&c[1], &c[2], &c[3], &c[4]);
        let Some(z) = zone_minutes(zone) else { continue };
        for j in (i.saturating_sub(ZONE_LOOKBACK)..i).rev() {
            let x = &t.steps[j];
            if x.kind != StepKind::ToolCall || x.agent != *agent {
                continue;
            }
            let earlier = ZONED.captures_iter(&x.content).find(|e| {
                &e[1] == key && &e[2] == date && &e[3] == clock && zone_minutes(&e[4]).is_some_and(|w| w != z)
            });
            let Some(e) = earlier else { continue };
            let w = zone_minutes(&e[4]).unwrap_or(z);
            let apart = (w - z).abs();
            let apart = match apart % 60 {
                0 => format!("{} h", apart / 60),
                _ => format!("{} min", apart),
            };
            let tool = t.steps[i].tool_name.as_deref().unwrap_or("the tool");
            let other = x.tool_name.as_deref().unwrap_or("a call");
            out.push(finding(
                Signal::ArgumentMismatch,
                weights::ARGUMENT_MISMATCH,
                prose![
                    format!("calls {tool} with {key} {date}T{clock}{zone}, but its {other} call at step "),
                    Part::Step(j),
                    format!(" gave {key} {date}T{clock}{}: the same clock time in another zone, {apart} apart", &e[4])
                ],
            ));
            return true;
        }
    }
    false
}

/// How many steps after a currency conversion [`converted_backwards`] looks for the call that
/// enters its result.
const CONVERSION_WINDOW: usize = 40;

/// The members of a call's arguments (`args`, a JSON object) naming the currencies a conversion
/// goes from and to: a member whose name starts with `from` / ends with `from` and one with `to`
/// (`from_currency`, `to_currency`, `from`, `to`, `base`/`target`), each a three-letter code.
fn conversion_codes(args: &serde_json::Map<String, serde_json::Value>) -> Option<(String, String)> {
    let code = |names: &[&str]| {
        args.iter().find_map(|(k, v)| {
            let k = k.to_ascii_lowercase();
            let named =
                names.iter().any(|n| k == *n || k.starts_with(&format!("{n}_")) || k.ends_with(&format!("_{n}")));
            let v = v.as_str()?.trim();
            (named && v.len() == 3 && v.chars().all(|c| c.is_ascii_alphabetic())).then(|| v.to_ascii_uppercase())
        })
    };
    let (from, to) = (code(&["from", "source", "base"])?, code(&["to", "target", "quote"])?);
    (from != to).then_some((from, to))
}

/// The numbers of a JSON value, at any depth, with the member name each is under.
fn numbers_under(v: &serde_json::Value, key: &str, out: &mut Vec<(String, f64)>) {
    match v {
        serde_json::Value::Object(m) => m.iter().for_each(|(k, x)| numbers_under(x, k, out)),
        serde_json::Value::Array(a) => a.iter().for_each(|x| numbers_under(x, key, out)),
        serde_json::Value::Number(n) => out.extend(n.as_f64().map(|x| (key.to_string(), x))),
        _ => {}
    }
}

/// Step `i`, a currency conversion (a call whose arguments name a `from` and a `to` currency by
/// three-letter codes, `{"amount": 1250, "from_currency": "EUR", "to_currency": "SEK"}`), whose
/// result (a number of its output other than the amount given) a later call of the agent within
/// [`CONVERSION_WINDOW`] steps enters under a member named for the currency it was converted
/// *from* (`"amount_eur": 13651.88`): the conversion ran the wrong way round. The finding sits
/// at the conversion.
pub(crate) fn converted_backwards(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if s.kind != StepKind::ToolCall {
        return;
    }
    let Some(args) = call_arguments(&s.content) else { return };
    let Some((from, to)) = conversion_codes(&args) else { return };
    let Some(r) = result_of(ctx, i) else { return };
    let Some(rs) = t.steps[r].content.find(['{', '[']) else { return };
    let Ok(result) = serde_json::from_str::<serde_json::Value>(&t.steps[r].content[rs..]) else { return };
    let mut given = Vec::new();
    numbers_under(&serde_json::Value::Object(args.clone()), "", &mut given);
    let mut produced = Vec::new();
    numbers_under(&result, "", &mut produced);
    let produced: Vec<f64> = produced
        .into_iter()
        .map(|(_, x)| x)
        .filter(|x| x.fract() != 0.0 || *x >= 10.0)
        .filter(|x| !given.iter().any(|(_, g)| (g - x).abs() < 1e-9))
        .collect();
    if produced.is_empty() {
        return;
    }
    let from_low = from.to_ascii_lowercase();
    let names_from =
        |k: &str| k.to_ascii_lowercase().split(|c: char| !c.is_ascii_alphanumeric()).any(|w| w == from_low);
    for j in r + 1..t.steps.len().min(r + 1 + CONVERSION_WINDOW) {
        let c = &t.steps[j];
        if c.kind != StepKind::ToolCall || c.agent != s.agent {
            continue;
        }
        let Some(args) = call_arguments(&c.content) else { continue };
        let v = serde_json::Value::Object(args);
        let mut entered = Vec::new();
        numbers_under(&v, "", &mut entered);
        if let Some((key, x)) =
            entered.iter().find(|(k, x)| names_from(k) && produced.iter().any(|p| (p - x).abs() < 0.005))
        {
            let tool = s.tool_name.as_deref().unwrap_or("the tool");
            out.push(finding(
                Signal::ArgumentMismatch,
                weights::ARGUMENT_MISMATCH,
                prose![
                    format!("calls {tool} from {from} to {to}, but step "),
                    Part::Step(j),
                    format!(" enters its result {x} as {key}: the conversion ran the wrong way round")
                ],
            ));
            return;
        }
    }
}

/// An amount written with its currency: `84.50 EUR`, `84,50 €`, `€84.50`, `$ 12`, `1 250 kr`,
/// `42.5 euros`. Groups: 1 the currency before, 2 its number; 3 the number before, 4 its
/// currency.
pub(super) static MONEY: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"(?i)(?:(€|£|\$|\b(?:EUR|USD|GBP|SEK|NOK|DKK|CHF|JPY|CAD|AUD)\b)\s?(\d[\d,.]*\d|\d)|(\d[\d,.]*\d|\d)\s?(€|£|\$|\b(?:EUR|USD|GBP|SEK|NOK|DKK|CHF|JPY|CAD|AUD|kr|euros?|dollars?|pounds?)\b))").unwrap()
});

/// The sums of money a text names ([`MONEY`], read by [`amount_value`]), in order.
pub(super) fn money_values(text: &str) -> Vec<f64> {
    MONEY
        .captures_iter(text)
        .filter_map(|c| c.get(2).or_else(|| c.get(3)))
        .filter_map(|m| amount_value(m.as_str()))
        .collect()
}

/// The currency codes a written currency can be: `€` is EUR, `$` any dollar, `kr` any krone.
pub(super) fn currency_codes(written: &str) -> &'static [&'static str] {
    match written.to_ascii_uppercase().as_str() {
        "€" | "EUR" => &["EUR"],
        "£" | "GBP" => &["GBP"],
        "$" => &["USD", "CAD", "AUD", "NZD", "SGD", "HKD"],
        "USD" => &["USD"],
        "CAD" => &["CAD"],
        "AUD" => &["AUD"],
        "KR" => &["SEK", "NOK", "DKK", "ISK"],
        "SEK" => &["SEK"],
        "NOK" => &["NOK"],
        "DKK" => &["DKK"],
        "CHF" => &["CHF"],
        "JPY" => &["JPY"],
        _ => &[],
    }
}

/// A written amount as a number: `84.50`, `84,50` (a comma before two final digits is a decimal
/// comma), `1,250.00`.
pub(super) fn amount_value(written: &str) -> Option<f64> {
    let w = written.trim();
    let w = match w.rfind(',') {
        Some(p) if w.len() - p == 3 && !w.contains('.') => format!("{}.{}", w[..p].replace(',', ""), &w[p + 1..]),
        _ => w.replace(',', ""),
    };
    w.parse().ok()
}

/// Step `i`, a state-changing call, passes an amount the user wrote with a currency (`84.50 EUR`
/// in one of the user's last [`MISMATCH_TURNS`] turns) and no currency argument, and its result
/// records that amount in another currency (`"currency": "USD"`: the tool's default): the call
/// left out the unit the user gave.
pub(crate) fn currency_left_out(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if s.kind != StepKind::ToolCall || !s.content.contains(|c: char| c.is_ascii_digit()) || !changes_state(t, i) {
        return;
    }
    let Some(args) = call_arguments(&s.content) else { return };
    if args.keys().any(|k| k.to_ascii_lowercase().contains("currency")) {
        return;
    }
    let amounts: Vec<f64> = args.values().filter_map(serde_json::Value::as_f64).collect();
    if amounts.is_empty() {
        return;
    }
    let Some(r) = result_of(ctx, i) else { return };
    let Some(rs) = t.steps[r].content.find('{') else { return };
    let Ok(serde_json::Value::Object(result)) = serde_json::from_str::<serde_json::Value>(&t.steps[r].content[rs..])
    else {
        return;
    };
    let Some(recorded) = result.get("currency").and_then(serde_json::Value::as_str) else { return };
    let all_users = user_steps(ctx);
    let before = all_users.partition_point(|&u| u < i);
    for &u in all_users[before.saturating_sub(MISMATCH_TURNS)..before].iter().rev() {
        for m in MONEY.captures_iter(&t.steps[u].content) {
            let (Some(cur), Some(num)) = (m.get(1).or_else(|| m.get(4)), m.get(2).or_else(|| m.get(3))) else {
                continue;
            };
            let Some(v) = amount_value(num.as_str()) else { continue };
            let codes = currency_codes(cur.as_str());
            let same = |x: &f64| (x - v).abs() < 0.005;
            let recorded_amount = result.values().filter_map(serde_json::Value::as_f64).any(|x| same(&x));
            if amounts.iter().any(same)
                && recorded_amount
                && !codes.is_empty()
                && !codes.iter().any(|c| c.eq_ignore_ascii_case(recorded))
            {
                let tool = s.tool_name.as_deref().unwrap_or("the tool");
                out.push(finding(
                    Signal::ArgumentMismatch,
                    weights::ARGUMENT_MISMATCH,
                    prose![
                        format!("calls {tool} with {v} and no currency, but the user wrote {} at step ", m[0].trim()),
                        Part::Step(u),
                        " and the result at step ",
                        Part::Step(r),
                        format!(" records it in {recorded}")
                    ],
                ));
                return;
            }
        }
    }
}

/// How many steps before a delegate's call [`off_brief`] looks for the delegation that briefed it.
const BRIEF_LOOKBACK: usize = 60;

/// Whether `word` occurs in `text` as a whole word (no letter, digit or `_` on either side).
fn has_word(text: &str, word: &str) -> bool {
    let inner = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(p, _)| {
        !text[..p].chars().next_back().is_some_and(inner) && !text[p + word.len()..].chars().next().is_some_and(inner)
    })
}

/// Whether `v` reads as a member of a listed set: a code or name of 2 to 24 characters that starts
/// with a letter and holds only letters, digits, `_` and `-` (`NORTH`, `eu-west-1`, `PRO_PLAN`).
fn is_member(v: &str) -> bool {
    (2..=24).contains(&v.len())
        && v.starts_with(|c: char| c.is_ascii_alphabetic())
        && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The sets a tool output lists, each of three or more distinct members ([`is_member`]): the
/// first cells of its rows (a query's table, `code | name` or aligned columns), and, for a JSON
/// array of records, the string values each member name takes across the records.
fn listed_sets(output: &str) -> Vec<Vec<String>> {
    static ROW_HEAD: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?m)^[ \t]*\|?[ \t]*([A-Za-z][A-Za-z0-9_-]{1,23})[ \t]*(?:\||\t|  |,|$)").unwrap()
    });
    let mut sets = Vec::new();
    let mut heads: Vec<String> = Vec::new();
    for c in ROW_HEAD.captures_iter(output) {
        if !heads.iter().any(|h| h == &c[1]) {
            heads.push(c[1].to_string());
        }
    }
    if heads.len() >= 3 {
        sets.push(heads);
    }
    if let Some(start) = output.find('[')
        && let Ok(serde_json::Value::Array(records)) = serde_json::from_str::<serde_json::Value>(&output[start..])
    {
        let mut by_key: Vec<(String, Vec<String>)> = Vec::new();
        for r in records.iter().filter_map(serde_json::Value::as_object) {
            for (k, v) in r {
                let Some(v) = v.as_str().filter(|v| is_member(v)) else { continue };
                let k = match by_key.iter().position(|(x, _)| x == k) {
                    Some(k) => k,
                    None => {
                        by_key.push((k.clone(), Vec::new()));
                        by_key.len() - 1
                    }
                };
                if !by_key[k].1.iter().any(|x| x == v) {
                    by_key[k].1.push(v.to_string());
                }
            }
        }
        sets.extend(by_key.into_iter().map(|(_, v)| v).filter(|v| v.len() >= 3));
    }
    sets
}

/// Step `i`, a tool call of a delegate (an agent another agent briefed by a delegation within
/// [`BRIEF_LOOKBACK`] steps), passes a quoted value (`'MAD1'` in a query, a JSON string) that is
/// one member of a set its own earlier tool output since the brief listed ([`listed_sets`]: the
/// codes of a lookup table, the names of a record list), while the brief names another member
/// of that set and not this one, and the call names no member the brief names: the delegate
/// filtered on a different entry than the one it was asked for. Unlike [`argument_mismatch`],
/// no digit need be involved; the listing is what shows the two values are different entries.
pub(crate) fn off_brief(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    static QUOTED: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r#"'([^'\n\\]{2,24})'|"([^"\n\\]{2,24})""#).unwrap());
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if s.kind != StepKind::ToolCall || super::is_outside_agent(&s.agent) || is_human(s) {
        return;
    }
    let Some(brief) = (i.saturating_sub(BRIEF_LOOKBACK)..i)
        .rev()
        .find(|&j| t.steps[j].kind == StepKind::Delegation && t.steps[j].delegate_to.as_deref() == Some(&s.agent))
    else {
        return;
    };
    let brief_text = &t.steps[brief].content;
    let values: Vec<&str> = QUOTED
        .captures_iter(&s.content)
        .filter_map(|c| c.get(1).or_else(|| c.get(2)))
        .map(|m| m.as_str())
        .filter(|v| is_member(v) && !has_word(brief_text, v))
        .collect();
    if values.is_empty() {
        return;
    }
    for r in brief + 1..i {
        let x = &t.steps[r];
        if x.kind != StepKind::ToolResult || x.agent != s.agent {
            continue;
        }
        for set in listed_sets(&x.content) {
            let asked: Vec<&String> = set.iter().filter(|m| has_word(brief_text, m)).collect();
            if asked.is_empty() || asked.iter().any(|m| has_word(&s.content, m)) {
                continue;
            }
            let Some(used) = values.iter().find(|v| set.iter().any(|m| m == *v)) else { continue };
            let tool = s.tool_name.as_deref().unwrap_or("the tool");
            out.push(finding(
                Signal::ArgumentMismatch,
                weights::ARGUMENT_MISMATCH,
                prose![
                    format!("calls {tool} with '{used}', but its brief at step "),
                    Part::Step(brief),
                    format!(" asks for {}, and the listing at step ", asked[0]),
                    Part::Step(r),
                    format!(" gives {} and {used} as different entries", asked[0])
                ],
            ));
            return;
        }
    }
}

/// What step `i` types into a search: the quoted text of a browser worker's "I typed '…'" (as
/// Magentic-One's WebSurfer reports it), or the `query` / `q` / `search_query` / `search_term`
/// argument of a tool call whose tool searches (a word `search` in its name).
fn typed_query(t: &Trajectory, i: usize) -> Option<String> {
    static TYPED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"(?i)^\s*I typed ['"‘“](.{3,200}?)['"’”] into\b"#).expect("a valid pattern")
    });
    let s = &t.steps[i];
    match s.kind {
        StepKind::Message | StepKind::ToolResult => TYPED.captures(&s.content).map(|c| c[1].to_string()),
        StepKind::ToolCall => {
            let tool = s.tool_name.as_deref()?.to_ascii_lowercase();
            if !tool.contains("search") {
                return None;
            }
            let args = call_arguments(&s.content)?;
            ["query", "q", "search_query", "search_term"]
                .iter()
                .find_map(|k| args.get(*k)?.as_str().map(str::to_string))
        }
        _ => None,
    }
}

/// The instruction step `i`'s worker acts on: the latest delegation to its agent within
/// [`BRIEF_LOOKBACK`] steps, or a message of another agent (not the person served, not a tool)
/// among the three steps before it (a coordinator's "Please search the web for …").
fn instruction_for(t: &Trajectory, i: usize) -> Option<usize> {
    let agent = &t.steps[i].agent;
    let near = (i.saturating_sub(3)..i).rev().find(|&j| {
        let x = &t.steps[j];
        x.agent != *agent
            && matches!(x.kind, StepKind::Message | StepKind::Delegation)
            && !is_human(x)
            && !super::is_outside_agent(&x.agent)
    });
    near.or_else(|| {
        (i.saturating_sub(BRIEF_LOOKBACK)..i)
            .rev()
            .find(|&j| t.steps[j].kind == StepKind::Delegation && t.steps[j].delegate_to.as_deref() == Some(agent))
    })
}

/// The words of a query, lower case, punctuation at their ends taken off.
fn query_words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Step `i`, a worker's search ([`typed_query`]), types a query that is a query its instruction
/// ([`instruction_for`]) quotes with one number changed: the same words in the same order, but
/// for one whose digits differ from the quoted one's (as many digits: a year, an edition, an id).
/// "types 'Kesselberg Trail 50K 2023 Ergebnisse', but the instruction at step 2 asks for
/// 'Kesselberg Trail 50K 2024 Ergebnisse'". The search then finds the other year's pages, and
/// every step after reads them. docs/METHODS.md, "Actions".
pub(crate) fn query_off_instruction(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    static QUOTED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"'([^'\n]{3,200})'|"([^"\n]{3,200})"|‘([^’\n]{3,200})’|“([^”\n]{3,200})”"#)
            .expect("a valid pattern")
    });
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if is_human(s) || super::is_outside_agent(&s.agent) {
        return;
    }
    let Some(typed) = typed_query(t, i) else { return };
    let words = query_words(&typed);
    if words.len() < 3 || !words.iter().any(|w| w.bytes().all(|b| b.is_ascii_digit())) {
        return;
    }
    let Some(j) = instruction_for(t, i) else { return };
    for c in QUOTED.captures_iter(&t.steps[j].content) {
        let Some(quoted) = (1..=4).find_map(|k| c.get(k)) else { continue };
        let asked = query_words(quoted.as_str());
        if asked.len() != words.len() {
            continue;
        }
        let differ: Vec<usize> = (0..words.len()).filter(|&k| words[k] != asked[k]).collect();
        let [k] = differ.as_slice() else { continue };
        let (a, b) = (&asked[*k], &words[*k]);
        let digits = |w: &str| !w.is_empty() && w.bytes().all(|x| x.is_ascii_digit());
        if !(digits(a) && digits(b) && a.len() == b.len()) {
            continue;
        }
        out.push(finding(
            Signal::ArgumentMismatch,
            weights::ARGUMENT_MISMATCH,
            prose![
                format!("types '{}', but the instruction at step ", crate::text::clip(typed.trim(), 60)),
                Part::Step(j),
                format!(" asks for '{}' ({a}, not {b})", crate::text::clip(quoted.as_str().trim(), 60))
            ],
        ));
        return;
    }
}

/// How many of the user's turns before a call [`argument_mismatch`] compares the call with.
const MISMATCH_TURNS: usize = 4;

/// The runs of five or more ASCII digits in `text` that are whole numbers (not next to a decimal
/// point, a comma or another digit): order numbers, also inside ids such as `W-52813`.
fn digit_runs(text: &str) -> impl Iterator<Item = &str> {
    static DIGITS: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"[0-9]{5,}").unwrap());
    DIGITS
        .find_iter(text)
        .filter(move |m| {
            let before = text[..m.start()].chars().next_back();
            let after = text[m.end()..].chars().next();
            !matches!(before, Some('.' | ',')) && !matches!(after, Some('.' | ','))
        })
        .map(|m| m.as_str())
}

/// Whether `text` holds at least `n` ASCII digits in a row.
fn has_digit_run(text: &str, n: usize) -> bool {
    let mut run = 0;
    text.bytes().any(|b| {
        run = if b.is_ascii_digit() { run + 1 } else { 0 };
        run >= n
    })
}

/// Whether `given` and `used`, digit runs of the same length, differ by one mistyped digit or by
/// two neighbouring digits swapped.
fn near_miss(given: &str, used: &str) -> bool {
    let (g, u) = (given.as_bytes(), used.as_bytes());
    if g.len() != u.len() || g == u {
        return false;
    }
    let diff: Vec<usize> = (0..g.len()).filter(|&k| g[k] != u[k]).collect();
    match diff.as_slice() {
        [_] => true,
        [a, b] => *b == a + 1 && g[*a] == u[*b] && g[*b] == u[*a],
        _ => false,
    }
}

/// Whether two ISO dates (`yyyy-mm-dd`) differ in exactly one of year, month and day.
fn one_part_differs(a: &str, b: &str) -> bool {
    let (pa, pb): (Vec<&str>, Vec<&str>) = (a.split('-').collect(), b.split('-').collect());
    pa.len() == 3 && pb.len() == 3 && pa.iter().zip(&pb).filter(|(x, y)| x != y).count() == 1
}

/// How many steps back [`retry_drift`] looks for the failed call that a call retries.
const RETRY_WINDOW: usize = 12;

/// A string, number or boolean argument as text; `None` for objects, arrays and null.
fn scalar_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Whether a retry that did not need to change an argument only wrote its value another way:
/// the same value ([`same_value`]), the same date without and with its year (`Nov 30` and
/// `2025-11-30` when 2025 is in `years`, the years the retry wrote for the arguments its error
/// named), the same size or duration in another unit (`2 min` and `120 s`) or the same word in
/// another case (`Payments` and `payments`). Putting every date in the form the error asked for
/// is part of the fix.
fn rewritten(a: &str, b: &str, years: &[u32]) -> bool {
    if same_value(a, b) {
        return true;
    }
    let (ta, tb) = (a.trim(), b.trim());
    if ta.to_lowercase() == tb.to_lowercase() {
        return true;
    }
    // A date written without its year, given with the year of the dates the retry fixed.
    let yearless = |short: &str, full: &str| {
        let Some(key) = crate::evidence::date_key(full) else { return false };
        let year: Option<u32> = key.get(..4).and_then(|y| y.parse().ok());
        month_day(short).is_some_and(|md| key.ends_with(&format!("-{:02}-{:02}", md.0, md.1)))
            && year.is_some_and(|y| years.contains(&y))
    };
    if yearless(ta, tb) || yearless(tb, ta) {
        return true;
    }
    let (Some(x), Some(y)) = (super::quantity(ta), super::quantity(tb)) else { return false };
    x.0 == y.0 && x.1.iter().any(|sx| y.1.iter().any(|sy| (sx - sy).abs() <= 1e-9 * sx.abs().max(1.0)))
}

/// Whether two argument values are one value written two ways: the same date (`March 21, 2025`
/// and `2025-03-21`; `21.03.2025` and `2025-03-21`, the same numbers in another order) or the
/// same number (`7` and `7.0`). A retry that only rewrites a value in the
/// form the error asked for changes nothing.
fn same_value(a: &str, b: &str) -> bool {
    let dates = |v: &str| -> Vec<String> {
        crate::evidence::extract_text(v).into_iter().filter(|e| e.kind == EvidenceKind::Date).map(|e| e.key).collect()
    };
    let (da, db) = (dates(a), dates(b));
    if !da.is_empty() && da == db {
        return true;
    }
    // A date in another order or with other separators (`21.03.2025`, `17/10/2025`): the same
    // numbers, and nothing but digits and separators.
    let parts = |v: &str| -> Option<Vec<u32>> {
        if !v.trim().chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | '/' | '-' | ' ')) {
            return None;
        }
        let mut p: Vec<u32> = v.split(|c: char| !c.is_ascii_digit()).filter_map(|d| d.parse().ok()).collect();
        p.sort_unstable();
        (p.len() >= 3).then_some(p)
    };
    if let (Some(pa), Some(pb)) = (parts(a), parts(b))
        && pa == pb
    {
        return true;
    }
    matches!((a.trim().parse::<f64>(), b.trim().parse::<f64>()), (Ok(x), Ok(y)) if (x - y).abs() < 1e-9)
}

/// The month and day of a date written with a month name and no year (`Nov 30`, `30 November`,
/// `Nov 30th`); `None` for anything else.
fn month_day(text: &str) -> Option<(u32, u32)> {
    let low = text.to_ascii_lowercase();
    let words: Vec<&str> = low.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let [a, b] = words.as_slice() else { return None };
    let month = |w: &str| {
        (w.len() >= 3 && w.chars().all(|c| c.is_ascii_alphabetic())).then(|| crate::evidence::month_number(w)).flatten()
    };
    let day = |w: &str| {
        let digits = w.trim_end_matches(['s', 't', 'n', 'd', 'h', 'r']);
        digits.parse::<u32>().ok().filter(|d| (1..=31).contains(d) && digits.len() <= 2)
    };
    match (month(a), month(b)) {
        (Some(m), None) => Some((m, day(b)?)),
        (None, Some(m)) => Some((m, day(a)?)),
        _ => None,
    }
}

/// Whether an argument is a value rather than prose: not a member that holds free text
/// (`description`, `reason`, `message`, `query`…), and a number, a boolean or a string of at most
/// 40 characters and three words (a date, a code, an id, a name).
fn value_like(key: &str, value: &str) -> bool {
    const PROSE: [&str; 12] = [
        "description",
        "reason",
        "explanation",
        "thought",
        "summary",
        "message",
        "comment",
        "note",
        "text",
        "query",
        "prompt",
        "content",
    ];
    let key = key.to_ascii_lowercase();
    !PROSE.iter().any(|p| key.contains(p)) && value.chars().count() <= 40 && value.split_whitespace().count() <= 3
}

/// Step `i`, a tool call, retries the agent's failed call of the same tool (its last call of
/// that tool within [`RETRY_WINDOW`] steps, with no turn of the served person between) whose
/// error names one of the call's arguments, by member name or by value; the retry changes that
/// argument, and also changes others the error did not name to values no tool output between
/// them wrote: "retries query_expenses after the error at step 3 named office, but also changes
/// from 2025-07-01 → 2024-07-01, which the error did not name". Fixing what the error named is
/// the recovery; what else changed came from nowhere. Arguments are the JSON objects of both
/// calls ([`call_arguments`]); only strings, numbers and booleans present in both are compared.
pub(crate) fn retry_drift(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if s.kind != StepKind::ToolCall || !s.content.contains('{') {
        return;
    }
    let Some(tool) = s.tool_name.as_deref() else { return };
    // Commands and edits write code and file text, not values.
    if super::shell_command(&tool.to_ascii_lowercase(), &s.content).is_some() || super::edits(t, i) {
        return;
    }
    let Some(j) = (i.saturating_sub(RETRY_WINDOW)..i).rev().find(|&j| {
        let c = &t.steps[j];
        c.kind == StepKind::ToolCall && c.agent == s.agent && c.tool_name.as_deref() == Some(tool)
    }) else {
        return;
    };
    let Some(error) = call_error(ctx, j) else { return };
    if (j..i).any(|k| is_human(&t.steps[k])) {
        return;
    }
    let (Some(before), Some(now)) = (call_arguments(&t.steps[j].content), call_arguments(&s.content)) else { return };
    let error = error.to_lowercase();
    let named = |key: &str, value: &str| {
        error.contains(&key.to_lowercase()) || value.chars().count() >= 3 && error.contains(&value.to_lowercase())
    };
    let written_between =
        |value: &str| (j + 1..i).any(|k| t.steps[k].kind == StepKind::ToolResult && t.steps[k].content.contains(value));
    let changed: Vec<(&String, String, String)> = before
        .iter()
        .filter_map(|(key, old)| Some((key, scalar_text(old)?, now.get(key).and_then(scalar_text)?)))
        .filter(|(_, old, new)| old != new)
        .collect();
    // The years of the dates the retry wrote for the arguments the error named: a date of
    // another argument given the same year is the same date, written as the error asked.
    let years: Vec<u32> = changed
        .iter()
        .filter(|(key, old, _)| named(key, old))
        .filter_map(|(_, _, new)| crate::evidence::date_key(new)?.get(..4)?.parse().ok())
        .collect();
    let mut fixed = Vec::new();
    let mut drifted = Vec::new();
    for (key, old, new) in changed {
        if same_value(&old, &new) {
            continue;
        }
        if named(key, &old) {
            fixed.push(key.as_str());
        } else if value_like(key, &old)
            && value_like(key, &new)
            && !written_between(&new)
            && !rewritten(&old, &new, &years)
        {
            drifted.push(format!("{key} {} → {}", crate::text::clip(&old, 30), crate::text::clip(&new, 30)));
        }
    }
    if fixed.is_empty() || drifted.is_empty() {
        return;
    }
    let r = result_of(ctx, j).unwrap_or(j);
    let which = if drifted.len() == 1 { "which the error did not name" } else { "none of which the error named" };
    out.push(finding(
        Signal::ArgumentMismatch,
        weights::ARGUMENT_MISMATCH,
        prose![
            format!("retries {tool} after the error at step "),
            Part::Step(r),
            format!(" named {}, but also changes {}, {which}", fixed.join(", "), drifted.join(", "))
        ],
    ));
}

/// Words of a failed change's result that leave its outcome unknown: "may still have been
/// processed", "might have gone through", "status unknown", "did not answer", "no response
/// from", "connection reset", "gateway timeout", "check … status before retrying". A result that
/// says the call ran out of time ([`super::says_timed_out`]) leaves it unknown too.
static UNSETTLED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(concat!(
        r"(?i)\b(?:may|might|could)\s+(?:still\s+|already\s+|well\s+)?have\s+(?:been\s+[a-z]+|gone\s+through|succeeded|completed|gone\s+out|taken\s+effect)",
        r"|\b(?:outcome|status|result|state)\s+(?:is\s+|was\s+|remains\s+)?(?:unknown|uncertain|indeterminate|undetermined)\b",
        r"|\bunknown\s+(?:outcome|status|result|state)\b",
        r"|\b(?:did\s+not|didn't|failed\s+to)\s+(?:answer|respond|reply)\b",
        r"|\bno\s+response\s+(?:from|within|received)\b",
        r"|\bconnection\s+(?:was\s+)?(?:reset|closed|aborted|dropped)\b",
        r"|\bgateway\s+time-?out\b",
        r"|\bcheck\s+(?:the\s+)?(?:[a-z_]+\s+)?status\s+before\s+(?:retrying|trying\s+again|any\s+retry|you\s+retry)",
    ))
    .expect("a valid pattern")
});

/// Words of a failed change's result that say nothing was made: "was not created", "no booking
/// was made", "nothing was charged", "rolled back", "safe to retry", "before the request was
/// sent".
static NOT_MADE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    const MADE: &str = "(?:created|processed|charged|sent|made|applied|committed|placed|booked|executed|changed)";
    regex::Regex::new(&format!(
        concat!(
            r"(?i)\b(?:was|were|is|are)\s+(?:not|never)\s+{made}\b",
            r"|\b(?:has|have)\s+not\s+been\s+{made}\b",
            r"|\bno\s+(?:\w+\s+){{0,2}}(?:was|were|has\s+been)\s+{made}\b",
            r"|\bnothing\s+(?:was|has\s+been)\s+{made}\b",
            r"|\brolled\s+back\b|\bsafe\s+to\s+retry\b|\bbefore\s+the\s+request\s+was\s+sent\b",
        ),
        made = MADE
    ))
    .expect("a valid pattern")
});

/// Argument names that make a retry safe when both calls carry the same value: the server
/// applies a request with a key it has seen once (`idempotency_key`, `request_id`,
/// `client_token`, `dedup_key`, `operation_id`).
fn is_idempotency_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.contains("idempot")
        || k.contains("dedup")
        || matches!(
            k.as_str(),
            "request_id"
                | "requestid"
                | "client_request_id"
                | "client_token"
                | "clienttoken"
                | "operation_id"
                | "nonce"
        )
}

/// How many steps back [`blind_retry_of`] looks for the failed change a call tries again.
const BLIND_RETRY_WINDOW: usize = 12;

/// When step `i` tries again a state change whose outcome the tool left unknown, without first
/// checking whether it was made: `(call, result)` of the earlier call. The earlier call is the
/// agent's last call of the same tool (not a shell command or a file edit) within
/// [`BLIND_RETRY_WINDOW`] steps, on the same object ([`super::call_object`], else the same
/// values for the arguments both calls share), whose result is an error or a time-out that says
/// the change may have been made ([`UNSETTLED`], [`super::says_timed_out`]) and not that nothing
/// was made ([`NOT_MADE`]); after that result no turn of the person served comes (a "yes, try
/// again") and no look-up of the agent that names a value of the failed call (its status
/// checked; a call made alongside it, before its result, checks nothing), and the two calls do
/// not carry the same idempotency key ([`is_idempotency_key`]: the server drops a request it
/// has seen).
pub(crate) fn blind_retry_of(ctx: &Context<'_>, i: usize) -> Option<(usize, usize)> {
    let t = ctx.trajectory;
    let s = t.steps.get(i)?;
    // A file edit is judged by its check; a tool named for what it creates (`create_order`) is
    // a state change like any other.
    if s.kind != StepKind::ToolCall
        || !changes_state(t, i)
        || super::call_command(t, i).is_some()
        || !super::coding::edited_files(t, i).is_empty()
    {
        return None;
    }
    let tool = s.tool_name.as_deref()?;
    let j = (i.saturating_sub(BLIND_RETRY_WINDOW)..i).rev().find(|&k| {
        t.steps[k].kind == StepKind::ToolCall
            && t.steps[k].agent == s.agent
            && t.steps[k].tool_name.as_deref() == Some(tool)
    })?;
    let r = result_of(ctx, j)?;
    if r > i {
        return None;
    }
    let result = &t.steps[r].content;
    // Nothing was made, in the result's own words: the retry is safe.
    if NOT_MADE.is_match(result) {
        return None;
    }
    let before_args = call_arguments(&t.steps[j].content);
    // What comes after the failure was known: a turn of the person served, or a look-up that
    // names a value of the failed call (its order, invoice or account) checks what happened. A
    // call made alongside the failed one (parallel calls, before its result) checks nothing.
    let telling = |v: &String| {
        !(matches!(v.as_str(), "true" | "false" | "") || v.len() < 2 && v.bytes().all(|b| b.is_ascii_digit()))
    };
    let values: Vec<String> =
        before_args.iter().flat_map(|m| m.values()).filter_map(scalar_text).filter(telling).collect();
    for k in r + 1..i {
        let c = &t.steps[k];
        if is_human(c) {
            return None;
        }
        let names_one = || {
            call_arguments(&c.content).is_some_and(|m| m.values().filter_map(scalar_text).any(|v| values.contains(&v)))
        };
        if c.kind == StepKind::ToolCall && c.agent == s.agent && !changes_state(t, k) && names_one() {
            return None;
        }
    }
    // An error or time-out that says so; a result whose opening words leave the outcome open
    // ("GatewayTimeout: … did not answer") is one, whether or not the format marks it failed.
    let opening = crate::text::clip(result, 300);
    let failed = t.steps[r].is_error || call_error(ctx, j).is_some();
    if !(failed && UNSETTLED.is_match(result) || super::says_timed_out(result) || UNSETTLED.is_match(&opening)) {
        return None;
    }
    let (before, now) = (before_args?, call_arguments(&s.content)?);
    let same_key =
        before.iter().any(|(k, v)| is_idempotency_key(k) && scalar_text(v).is_some() && now.get(k) == Some(v));
    if same_key {
        return None;
    }
    let same_object = match super::call_object(&t.steps[j].content) {
        Some(o) => super::call_object(&s.content).as_deref() == Some(o.as_str()),
        None => {
            let shared: Vec<_> = before
                .iter()
                .filter(|(k, _)| !is_idempotency_key(k))
                .filter_map(|(k, v)| Some((scalar_text(v)?, now.get(k).and_then(scalar_text)?)))
                .collect();
            !shared.is_empty() && shared.iter().all(|(a, b)| a == b)
        }
    };
    same_object.then_some((j, r))
}

/// Step `i` tries again a state change whose outcome the tool left unknown, unchecked
/// ([`blind_retry_of`]): "calls charge_saved_card again after the call at step 5 left its outcome
/// unknown ("The charge may still have been processed"), unchecked: the change may now be made
/// twice".
/// A charge, an order, a message sent after a time-out may have gone through; the agent that
/// repeats it without a look at the object's status (or the same idempotency key) risks doing it
/// twice, and that retry is the error, not the time-out. docs/METHODS.md, "Actions".
pub(crate) fn blind_retry(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let Some((j, r)) = blind_retry_of(ctx, i) else { return };
    let t = ctx.trajectory;
    let tool = t.steps[i].tool_name.as_deref().unwrap_or("the call");
    let result = &t.steps[r].content;
    // The sentence of the result that leaves the outcome open, else its first line.
    static MAY_HAVE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\b(?:may|might|could)\s+(?:still\s+|already\s+|well\s+)?have\s+|\b(?:outcome|status)\s+(?:is\s+)?unknown\b")
            .expect("a valid pattern")
    });
    let said = MAY_HAVE
        .find(result)
        .or_else(|| UNSETTLED.find(result))
        .map(|m| {
            let start = result[..m.start()].rfind(['.', ';', '\n']).map_or(0, |p| p + 1);
            let end = result[m.end()..].find(['.', ';', '\n']).map_or(result.len(), |p| m.end() + p);
            result[start..end].trim()
        })
        .filter(|x| !x.is_empty())
        .unwrap_or_else(|| result.lines().next().unwrap_or("").trim());
    out.push(finding(
        Signal::IgnoredToolError,
        weights::BLIND_RETRY,
        prose![
            format!("calls {tool} again after the call at step "),
            Part::Step(j),
            format!(
                " left its outcome unknown (\"{}\"), unchecked: the change may now be made twice",
                crate::text::clip(said, 70)
            )
        ],
    ));
}

fn push_mismatch(out: &mut Vec<Finding>, tool: &str, used: &str, given: &str, user_step: usize) {
    out.push(finding(
        Signal::ArgumentMismatch,
        weights::ARGUMENT_MISMATCH,
        prose![
            format!("calls {tool} with {used}, but the user wrote {} at step ", crate::text::clip(given, 40)),
            Part::Step(user_step)
        ],
    ));
}

/// How many steps back [`wrong_record`] looks for the lookup that lists the record a call names.
const RECORD_LOOKBACK: usize = 30;

/// Step `i`, a state-changing call, names a record of a list an earlier tool output gave by one
/// of its identifiers (`"line_id": "L1"`, or one of a list of them under the plural key:
/// `"item_ids": ["1323134954"]` names records by `item_id`), while the agent's own message right
/// before the call
/// (what it says it is about to do), or else the user's last turn, describes another record of
/// that list: it names a word that only that other record has among the list's records
/// ("blue"), and no word that only the named record has ("white"). The list is the last one
/// within [`RECORD_LOOKBACK`] steps whose records (two or more objects) hold the call's field
/// with the call's value; words are the letters-only words of three or more characters of a
/// record's text fields other than identifiers. Shell commands and edits are not read.
pub(crate) fn wrong_record(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if s.kind != StepKind::ToolCall || !changes_state(t, i) || super::call_command(t, i).is_some() || super::edits(t, i)
    {
        return;
    }
    let Some(args) = call_arguments(&s.content) else { return };
    // An identifier, or each of a list of them under the plural key (`"item_ids": ["1323134954"]`
    // names records by their `item_id`).
    let mut ids: Vec<(String, String)> = args
        .keys()
        .filter(|k| super::is_id_key(k))
        .filter_map(|k| field_text(&args, k).filter(|x| !x.is_empty()).map(|x| (k.clone(), x)))
        .collect();
    for (k, v) in &args {
        let Some(items) = v.as_array() else { continue };
        let Some(one) = k.strip_suffix('s').filter(|one| super::is_id_key(one)) else { continue };
        ids.extend(
            items.iter().filter_map(|x| x.as_str()).filter(|x| !x.is_empty()).map(|x| (one.to_string(), x.to_string())),
        );
    }
    if ids.is_empty() {
        return;
    }
    for j in (i.saturating_sub(RECORD_LOOKBACK)..i).rev() {
        if t.steps[j].kind != StepKind::ToolResult || !t.steps[j].content.contains('[') {
            continue;
        }
        let Some(value) = super::grounding::json_of(&t.steps[j].content) else { continue };
        for (key, id) in &ids {
            let Some(list) = list_holding(&value, key, id) else { continue };
            if let Some(found) = describes_other(ctx, i, j, key, id, &list) {
                out.push(found);
            }
            return;
        }
    }
}

/// A record's field `key` as text: a string trimmed, or a number as written; `None` for other
/// values.
fn field_text(r: &serde_json::Map<String, serde_json::Value>, key: &str) -> Option<String> {
    match r.get(key)? {
        serde_json::Value::String(x) => Some(x.trim().to_string()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The records (objects) of the first array in `v` that has two or more records with the field
/// `key` and one whose `key` is `id`.
fn list_holding<'v>(
    v: &'v serde_json::Value,
    key: &str,
    id: &str,
) -> Option<Vec<&'v serde_json::Map<String, serde_json::Value>>> {
    use serde_json::Value;
    let holds = |r: &serde_json::Map<String, Value>| field_text(r, key).as_deref() == Some(id);
    match v {
        Value::Array(items) => {
            let records: Vec<_> = items.iter().filter_map(Value::as_object).filter(|r| r.contains_key(key)).collect();
            if records.len() >= 2 && records.iter().any(|r| holds(r)) {
                return Some(records);
            }
            items.iter().find_map(|x| list_holding(x, key, id))
        }
        Value::Object(map) => map.values().find_map(|x| list_holding(x, key, id)),
        _ => None,
    }
}

/// The letters-only words (three or more letters, lower case) of a record's text fields other
/// than identifiers and states ([`is_state_key`]).
fn record_words(r: &serde_json::Map<String, serde_json::Value>) -> std::collections::HashSet<String> {
    r.iter()
        .filter(|(k, _)| !super::is_id_key(k) && !is_state_key(k))
        .filter_map(|(_, v)| v.as_str())
        .flat_map(|x| x.split(|c: char| !c.is_alphabetic()))
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect()
}

/// Whether a record's field holds its state or kind, not what it is: `status`, `state`,
/// `outcome`, `result`, `type`, `kind`, or a code (`decline_code`, `paymentStatus`). A user who
/// writes "declined" or "failed" tells what happened to one of several records; that word is weak
/// evidence of which record a call should act on (the one still to fix is often another).
fn is_state_key(key: &str) -> bool {
    // The key's last word: after the last `_`, `-` or `.`, or its last capitalised part.
    let tail = key.rsplit(['_', '-', '.']).next().unwrap_or(key);
    let last = tail.rfind(|c: char| c.is_ascii_uppercase()).map_or(tail, |at| &tail[at..]);
    ["status", "state", "outcome", "result", "type", "kind", "code"].iter().any(|w| last.eq_ignore_ascii_case(w))
}

/// A record's label: its `name`, `title`, `description` or `product` text, else none.
fn record_label(r: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
    ["name", "title", "description", "product", "item"].iter().find_map(|k| r.get(*k).and_then(|v| v.as_str()))
}

/// The finding of [`wrong_record`] when the description before call `i` (the agent's message
/// after the lookup at step `j`, else the user's last turn) names another record of `list` than
/// the one whose `key` is `id`.
fn describes_other(
    ctx: &Context<'_>,
    i: usize,
    j: usize,
    key: &str,
    id: &str,
    list: &[&serde_json::Map<String, serde_json::Value>],
) -> Option<Finding> {
    let t = ctx.trajectory;
    let agent = &t.steps[i].agent;
    let said = (j + 1..i).rev().find(|&k| t.steps[k].kind == StepKind::Message && t.steps[k].agent == *agent);
    let d = said.or_else(|| (0..i).rev().find(|&k| is_human(&t.steps[k])))?;
    let text: std::collections::HashSet<String> = t.steps[d]
        .content
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect();
    let words: Vec<_> = list.iter().map(|r| record_words(r)).collect();
    // The words only one record of the list has.
    let own = |n: usize| -> Vec<&String> {
        let mut w: Vec<&String> =
            words[n].iter().filter(|w| words.iter().enumerate().all(|(m, o)| m == n || !o.contains(*w))).collect();
        w.sort();
        w
    };
    let chosen = list.iter().position(|r| field_text(r, key).as_deref() == Some(id))?;
    if own(chosen).iter().any(|w| text.contains(*w)) {
        return None;
    }
    let mut described = (0..list.len()).filter(|&n| n != chosen).filter_map(|n| {
        let named: Vec<&String> = own(n).into_iter().filter(|w| text.contains(*w)).collect();
        (!named.is_empty()).then_some((n, named))
    });
    let (other, named) = described.next()?;
    if described.next().is_some() {
        return None;
    }
    let other_id = field_text(list[other], key)?;
    let label = |r: &serde_json::Map<String, serde_json::Value>| {
        record_label(r).map_or(String::new(), |l| format!(" (\"{}\")", crate::text::clip(l, 60)))
    };
    let tool = t.steps[i].tool_name.as_deref().unwrap_or("the call");
    let named: Vec<&str> = named.iter().take(3).map(|w| w.as_str()).collect();
    Some(finding(
        Signal::ArgumentMismatch,
        weights::ARGUMENT_MISMATCH,
        prose![
            format!("{tool} acts on {key} {id}{}, but step ", label(list[chosen])),
            Part::Step(d),
            format!(
                " describes \"{}\", which only {key} {other_id}{} of the list at step ",
                named.join("\", \""),
                label(list[other])
            ),
            Part::Step(j),
            " has"
        ],
    ))
}

/// How many steps before an agent's message [`paired_with_other_record`] reads tool outputs for
/// records.
const PAIRING_LOOKBACK: usize = 40;

/// A record of a tool output as [`paired_with_other_record`] reads it: one of its identifiers and
/// what it is (its own label, else the labels of the objects it holds: an order's items).
struct Described {
    /// The tool output's step.
    step: usize,
    /// The identifier's field (`order_id`).
    key: String,
    /// The identifier as the output writes it (`#W100231`).
    id: String,
    /// The record's labels ([`record_label`]): its own, and those of the objects it holds.
    labels: Vec<String>,
}

/// Whether a value can be told apart as an identifier in prose: four characters or more, with a
/// digit.
fn is_telling_id(x: &str) -> bool {
    x.trim_start_matches('#').chars().count() >= 4 && x.chars().any(|c| c.is_ascii_digit())
}

/// The records of a tool output's JSON `v` that have an identifier ([`is_telling_id`]) and a
/// label: one [`Described`] per identifier field.
fn described_records(v: &serde_json::Value, step: usize, out: &mut Vec<Described>) {
    use serde_json::Value;
    let label = |x: &Value| {
        x.as_object()
            .and_then(record_label)
            .map(str::trim)
            .filter(|l| (3..=60).contains(&l.chars().count()) && l.chars().any(char::is_alphabetic))
            .map(str::to_string)
    };
    match v {
        Value::Object(map) => {
            let mut labels: Vec<String> = label(v).into_iter().collect();
            for x in map.values() {
                match x {
                    Value::Object(_) => labels.extend(label(x)),
                    Value::Array(items) => labels.extend(items.iter().filter_map(label)),
                    _ => {}
                }
            }
            if !labels.is_empty() {
                for k in map.keys().filter(|k| super::is_id_key(k)) {
                    if let Some(id) = field_text(map, k).filter(|x| is_telling_id(x)) {
                        out.push(Described { step, key: k.clone(), id, labels: labels.clone() });
                    }
                }
            }
            map.values().for_each(|x| described_records(x, step, out));
        }
        Value::Array(items) => items.iter().for_each(|x| described_records(x, step, out)),
        _ => {}
    }
}

/// The pieces of a message [`paired_with_other_record`] reads one by one: cut after `.`, `!`,
/// `?`, `;` and at line ends, each with its closing mark.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    static PIECE: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"[^.!?;\n]+[.!?;]*").unwrap());
    PIECE.find_iter(text).map(|m| m.as_str().trim()).filter(|p| !p.is_empty())
}

/// Words that set a description against the identifier beside it instead of pairing them ("not
/// the boots", "instead of", "unlike").
static CONTRAST: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)(n't\b|\bnot\b|\binstead\b|\brather\b|\bneither\b|\bnor\b|\bexcept\b|\bother than\b|\bapart from\b|\bbesides\b|\bunlike\b|\bwhereas\b|\bwhile\b)",
    )
    .unwrap()
});

/// Step `i`, an agent's message, states an identifier next to a description that the tool
/// outputs within [`PAIRING_LOOKBACK`] steps before it give to another record: a piece of the
/// message ([`pieces`]; not a question, no word of [`CONTRAST`]) names exactly one identifier of
/// the outputs' records ([`described_records`]: an identifier field of four or more characters
/// with a digit, and a label: the record's own `name`, `title`..., or those of the objects it
/// holds, an order's items), none of that record's labels (nor a word of four or more letters of
/// them), and the whole label of another record whose same identifier field holds another value
/// and which that identifier's records do not have: "cancel #W100231 (the kayak order)" where the
/// lookup shows #W100231 holds the tent and the kayak is #W100213. A label both records have is
/// no finding. docs/METHODS.md, "Actions".
pub(crate) fn paired_with_other_record(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if s.kind != StepKind::Message
        || is_user(&s.role)
        || s.role.eq_ignore_ascii_case("system")
        || !s.content.chars().any(|c| c.is_ascii_digit())
    {
        return;
    }
    // The message's tokens that could be identifiers: only outputs that hold one are read.
    let tokens: Vec<&str> = s
        .content
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
        .filter(|w| is_telling_id(w))
        .collect();
    if tokens.is_empty() {
        return;
    }
    let mut records = Vec::new();
    for j in i.saturating_sub(PAIRING_LOOKBACK)..i {
        let r = &t.steps[j];
        if r.kind != StepKind::ToolResult || !tokens.iter().any(|w| r.content.contains(w)) {
            continue;
        }
        if let Some(v) = super::grounding::json_of(&r.content) {
            described_records(&v, j, &mut records);
        }
    }
    if records.len() < 2 {
        return;
    }
    for piece in pieces(&s.content) {
        if piece.ends_with('?') || CONTRAST.is_match(piece) {
            continue;
        }
        if let Some(found) = pairs_other(piece, &records) {
            out.push(found);
            return;
        }
    }
}

/// The finding of [`paired_with_other_record`] for one piece of a message, if it pairs the one
/// identifier it names with another record's label.
fn pairs_other(piece: &str, records: &[Described]) -> Option<Finding> {
    let bare = |id: &str| id.trim_start_matches('#').to_string();
    let mut named: Vec<&str> =
        records.iter().map(|r| r.id.as_str()).filter(|id| super::contains_word(piece, &bare(id))).collect();
    named.sort_unstable();
    named.dedup();
    let [x] = named[..] else { return None };
    let low = piece.to_lowercase();
    let own: Vec<&Described> = records.iter().filter(|r| r.id == x).collect();
    let own_labels: Vec<String> = own.iter().flat_map(|r| r.labels.iter().map(|l| l.to_lowercase())).collect();
    let keys: Vec<&str> = own.iter().map(|r| r.key.as_str()).collect();
    let words = |l: &str| -> Vec<String> {
        l.split(|c: char| !c.is_alphabetic()).filter(|w| w.chars().count() >= 4).map(str::to_string).collect()
    };
    for other in records.iter().filter(|r| r.id != x && keys.contains(&r.key.as_str())) {
        for label in &other.labels {
            let d = label.to_lowercase();
            if own_labels.contains(&d) || !super::contains_word(&low, &d) {
                continue;
            }
            let d_words = words(&d);
            let mentions_own = own_labels.iter().any(|l| {
                super::contains_word(&low, l)
                    || words(l).iter().any(|w| !d_words.contains(w) && super::contains_word(&low, w))
            });
            if mentions_own {
                return None;
            }
            let shown = own.last()?;
            let as_written = low
                .find(&d)
                .filter(|_| low.len() == piece.len())
                .and_then(|at| piece.get(at..at + d.len()))
                .unwrap_or(label);
            let what: Vec<String> = shown.labels.iter().take(2).map(|l| format!("\"{l}\"")).collect();
            let mut parts = vec![
                Part::from(format!("pairs {x} with \"{as_written}\"; the lookup at step ")),
                Part::Step(shown.step),
                Part::from(format!(" shows {x} is {} and \"{label}\" is {}", what.join(" and "), other.id)),
            ];
            if other.step != shown.step {
                parts.extend([Part::from(" (step "), Part::Step(other.step), Part::from(")")]);
            }
            return Some(finding(Signal::ArgumentMismatch, weights::ARGUMENT_MISMATCH, Prose::new(parts)));
        }
    }
    None
}

/// A marker a command prints to hand the run's result in: an upper-case token of two or more
/// words joined by `_` that holds SUBMIT, FINISH(ED), COMPLETE or FINAL (`echo TASK_COMPLETE`,
/// `echo …_SUBMIT_FINAL_OUTPUT`), or a command line that is only `submit`.
static SUBMIT_COMMAND: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(concat!(
        r"\b(?:echo|printf)\s+['\x22]?[A-Z0-9_]*_?(?:SUBMIT|FINISH(?:ED)?|COMPLETE|FINAL)(?:_[A-Z0-9_]+)?\b",
        r"|(?m:^\s*submit\s*$)"
    ))
    .unwrap()
});

/// Whether step `i` is its agent's final submission: a call of a tool whose name says it hands the
/// result in (`submit`, `finish`, `final_answer`, `task_complete`, `attempt_completion`; the
/// words of the name), or a command that prints a submission marker ([`SUBMIT_COMMAND`]), after
/// which the agent calls nothing and says nothing more (only tool outputs and other speakers
/// follow). Handing the result in only delivers what earlier steps made: it is no decisive error
/// of its own when an earlier step holds a finding.
pub fn final_submission(t: &Trajectory, i: usize) -> bool {
    let s = &t.steps[i];
    if !matches!(s.kind, StepKind::ToolCall | StepKind::Message) {
        return false;
    }
    let named = s.tool_name.as_deref().is_some_and(|n| {
        let words: Vec<String> = n
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .collect();
        let has = |w: &str| words.iter().any(|x| x == w);
        has("submit")
            || has("finish")
            || words == ["final", "answer"]
            || has("complete") && (has("task") || words.len() == 1)
            || has("attempt") && has("completion")
    });
    let last = !t.steps[i + 1..]
        .iter()
        .any(|x| x.agent == s.agent && matches!(x.kind, StepKind::ToolCall | StepKind::Message | StepKind::Delegation));
    last && (named || s.kind == StepKind::ToolCall && SUBMIT_COMMAND.is_match(&s.content))
}

/// How many steps before a claim of completion [`claimed_over_failure`] looks for a failed call
/// of the claiming agent.
pub const CLAIM_FAILURE_WINDOW: usize = 40;

/// A claim that every part of the work is done: "all", "every", "each" or "both" before a word of
/// completion within a few words ("all regional queries completed", "every invoice was sent",
/// "both bookings are confirmed"), or a report of no failure ("without any errors", "no errors
/// occurred", "completed successfully with no failures").
static ALL_DONE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(concat!(
        r"(?i)\b(?:all|every|each|both)\b(?:[\s,]+[\w'’-]+){0,6}?[\s,]+(?:(?:have|has|were|was|are|is|got)\s+(?:been\s+|now\s+)?)?",
        r"(?:successfully\s+)?(?:completed?|succeeded|successful|finished|done|ran|processed|returned|applied|executed|sent|updated|confirmed|went through)\b",
        r"|\b(?:without|with no|no)\s+(?:any\s+)?(?:errors?|failures?|issues?|problems?)\b(?:\s+(?:occurred|were (?:encountered|reported)))?",
    ))
    .unwrap()
});

/// Words with which a message qualifies a claim of completion: it tells that a part failed or is
/// missing ("all but APAC completed", "except", "timed out", "could not").
static QUALIFIED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b(?:except|but|apart from|other than|save for|failed|fail|failure|error|timed? ?out|time-?out|could not|couldn't|cannot|can't|unable|missing|skipped|partial|incomplete|pending|retry|retried|not (?:yet )?(?:complete|done|run|available|included))\b",
    )
    .unwrap()
});

/// Step `i`, an agent's message, claims that every part of the work is done ([`ALL_DONE`], in a
/// sentence that does not qualify it: [`QUALIFIED`]) while a call of the same agent within
/// [`CLAIM_FAILURE_WINDOW`] steps before it failed (its result is an error of the run that nothing
/// resolved: [`super::unresolved_error`], or a timeout) and no message of that agent between the
/// failure and the claim told it. A failed read of a file is context, and a test run is judged by
/// the coding rules, so neither counts. The claim hides the failure from whoever reads the report:
/// the issue's "claim of completion after part of the work" (an agent that reports "all regional
/// queries completed" after one region's query timed out). docs/METHODS.md, "Actions".
pub(crate) fn claimed_over_failure(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let Some((claim, c, r)) = claim_over_failure(ctx, i) else { return };
    let t = ctx.trajectory;
    let line = super::error_line(ctx, r)
        .or_else(|| super::failure_line(&t.steps[r].content))
        .unwrap_or_else(|| "the call failed".into());
    let tool = t.steps[c].tool_name.as_deref().unwrap_or("the call");
    out.push(finding(
        Signal::IgnoredToolError,
        weights::IGNORED_ERROR,
        prose![
            format!("claims \"{}\" while its {tool} call at step ", crate::text::clip(claim.trim(), 80)),
            Part::Step(c),
            " failed at step ",
            Part::Step(r),
            format!(" ({})", crate::text::clip(line.trim(), 80)),
            ", which it never told"
        ],
    ));
}

/// Whether step `i` claims every part of the work done over a failure it never told
/// ([`claimed_over_failure`]): the claim ends the work on the failed part for whoever reads it (a
/// teammate who writes the report, the user), whether or not a later step quotes its words.
pub(crate) fn claims_done_over_failure(ctx: &Context<'_>, i: usize) -> bool {
    claim_over_failure(ctx, i).is_some()
}

/// The claim of [`claimed_over_failure`] at step `i` (its sentence), the failed call and its
/// result: the latest failure the claim hides.
fn claim_over_failure<'t>(ctx: &Context<'t>, i: usize) -> Option<(&'t str, usize, usize)> {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind != StepKind::Message
        || is_human(step)
        || super::is_outside_agent(&step.agent)
        || step.role.eq_ignore_ascii_case("system")
    {
        return None;
    }
    let text = &step.content;
    let claim = crate::text::sentences(text).find(|s| ALL_DONE.is_match(s) && !QUALIFIED.is_match(s))?;
    let agent = &step.agent;
    let from = i.saturating_sub(CLAIM_FAILURE_WINDOW);
    // The latest such failure: an earlier one the agent worked around (a query split by region
    // after the whole one timed out) is less likely what the claim hides.
    let failed = (from..i).rev().find(|&c| {
        let s = &t.steps[c];
        if s.kind != StepKind::ToolCall || s.agent != *agent || super::only_reads(t, c) {
            return false;
        }
        if super::call_command(t, c)
            .is_some_and(|cmd| super::shell::commands(&cmd).iter().any(super::shell::runs_tests))
        {
            return false;
        }
        let Some(r) = result_of(ctx, c) else { return false };
        let timed_out = super::says_timed_out(&t.steps[r].content) && !recovered(ctx, c);
        (super::unresolved_error(ctx, r) || timed_out)
            // Told by the agent before the claim: the reader knows.
            && !(r + 1..i).any(|k| {
                t.steps[k].kind == StepKind::Message
                    && t.steps[k].agent == *agent
                    && (super::tells_error(&t.steps[k].content, &t.steps[r].content)
                        || QUALIFIED.is_match(&t.steps[k].content))
            })
    });
    let c = failed?;
    Some((claim, c, result_of(ctx, c).unwrap_or(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sets_a_listing_gives_are_its_row_heads_and_its_records_values() {
        let table = "SITE | CITY\n-----+------\nAMS1 | Amsterdam\nBER2 | Berlin\nMAD1 | Madrid\n(3 rows)";
        assert_eq!(listed_sets(table), vec![vec!["SITE", "AMS1", "BER2", "MAD1"]]);
        let records = r#"[{"code": "gold", "seats": 5}, {"code": "silver", "seats": 3}, {"code": "bronze"}]"#;
        assert_eq!(listed_sets(records), vec![vec!["gold", "silver", "bronze"]]);
        // Two members are no set; a number or a sentence is no member.
        assert!(listed_sets("AMS1 | Amsterdam\nBER2 | Berlin").is_empty());
        assert!(listed_sets(r#"[{"n": "1 2"}, {"n": "3"}, {"n": "a b"}]"#).is_empty());
        assert!(has_word("for site BER2, November", "BER2") && !has_word("BER21 only", "BER2"));
    }

    #[test]
    fn a_value_written_another_way_is_no_change_of_it() {
        // A date without its year, given the year the retry wrote for the date the error named.
        assert!(rewritten("Oct 12", "2026-10-12", &[2026]));
        assert!(rewritten("12 October", "2026-10-12", &[2026]));
        assert!(rewritten("Oct 12th", "2026-10-12", &[2026]));
        assert!(!rewritten("Oct 12", "2025-10-12", &[2026]), "another year");
        assert!(!rewritten("Oct 12", "2026-10-13", &[2026]), "another day");
        assert!(!rewritten("Oct 12", "2026-10-12", &[]), "no year to go by");
        assert!(!rewritten("Oct 12", "October", &[2026]));
        // Another case, another unit of the same size or duration.
        assert!(rewritten("Checkout", "checkout", &[]));
        assert!(rewritten("2 min", "120 s", &[]));
        assert!(rewritten("1 GB", "1024 MB", &[]));
        assert!(!rewritten("2 min", "100 s", &[]));
        assert!(!rewritten("eu-west-1", "us-east-1", &[]));
        assert!(!rewritten("2 min", "2 MB", &[]), "another measure");
    }

    #[test]
    fn a_message_is_read_in_pieces_and_ids_need_a_digit() {
        let text = "1. A-1042: the tent\nPlan: cancel A-1042 (the boots); refund in 5 days. Ok?";
        let p: Vec<&str> = pieces(text).collect();
        assert_eq!(p, ["1.", "A-1042: the tent", "Plan: cancel A-1042 (the boots);", "refund in 5 days.", "Ok?"]);
        assert!(is_telling_id("#D7730412"));
        assert!(is_telling_id("RN-40917"));
        assert!(!is_telling_id("L1"), "too short to tell apart in prose");
        assert!(!is_telling_id("standard"), "no digit");
    }

    #[test]
    fn a_digit_run_is_counted_in_a_row() {
        assert!(has_digit_run(r#"{"date": "2025-06-14"}"#, 4));
        assert!(!has_digit_run(r#"{"id": "r3", "page": 12, "n": 345}"#, 4));
        assert!(has_digit_run("W-52813", 5));
    }

    #[test]
    fn tool_names_split_into_words_and_share_a_kind_by_their_first_two() {
        assert_eq!(name_words("find_user_id_by_email"), ["find", "user", "id", "by", "email"]);
        assert_eq!(name_words("getOrderItems"), ["get", "order", "items"]);
        assert!(same_kind(Some("find_user_id_by_email"), Some("find_user_id_by_name_zip")));
        assert!(same_kind(Some("getOrder"), Some("get_order_items")));
        assert!(!same_kind(Some("get_order_details"), Some("get_user_details")));
        assert!(!same_kind(Some("search"), Some("search_web")), "one word is not a kind");
        assert!(same_kind(Some("search"), Some("Search")));
    }

    #[test]
    fn assent_and_refusal() {
        assert!(affirms("Yes, please proceed with the return."));
        assert!(affirms("This works perfectly—please go ahead!"));
        assert!(affirms("ok"));
        assert!(!affirms("No, don't do that yet. Yes is not my answer."));
        assert!(!affirms("I'll go with the first option. Please process the refund to the other card."));
        assert!(!affirms("Can you escalate this?"));
        // "yesterday" is not "yes".
        assert!(!affirms("I ordered it yesterday."));
        // Putting the decision off, or a weak "ok" before a question, is no consent.
        assert!(!affirms("Hmm, ok. Let me think about it. Would a switch take effect immediately?"));
        assert!(!affirms("Sure, but not yet: I want to check with my partner."));
        assert!(!affirms("Okay. And would it cost more per month?"));
        assert!(affirms("Yes, switch me now. How long until it is active?"));
        assert!(affirms("Okay, that works."));
    }

    #[test]
    fn the_policy_sentence_names_confirmation_with_an_obligation() {
        let step = |role: &str, content: &str| crate::model::Step {
            role: role.into(),
            agent: role.into(),
            content: content.into(),
            ..Default::default()
        };
        let t = Trajectory {
            steps: vec![
                step("user", "You must confirm this."),
                step(
                    "system",
                    "# Policy\nBe polite. Before taking actions that update the database, you have to obtain explicit user confirmation (yes) to proceed.",
                ),
            ],
            ..Default::default()
        };
        let policy = policy_sentence(&t).expect("a policy sentence");
        assert_eq!(policy.source, PolicySource::Step(0), "the step's own index (0 by default here)");
        assert_eq!(policy.only, None);
        assert_eq!(
            policy.sentence,
            "Before taking actions that update the database, you have to obtain explicit user confirmation (yes) to proceed"
        );
        // A policy that mentions confirmation without asking for it, and a user turn, are none.
        let t = Trajectory { steps: vec![step("system", "Orders are confirmed by email.")], ..Default::default() };
        assert_eq!(policy_sentence(&t), None);
    }

    #[test]
    fn questions_and_requests_to_confirm_ask() {
        assert!(asks("Would you like me to proceed with the return request?"));
        assert!(asks("Please confirm the order id."));
        assert!(!asks("Your order has been cancelled."));
    }
}

#[cfg(test)]
mod submission_tests {
    use super::*;

    fn run(steps: &[(&str, StepKind, Option<&str>, &str)]) -> Trajectory {
        let steps = steps
            .iter()
            .enumerate()
            .map(|(index, (agent, kind, tool, content))| crate::model::Step {
                index,
                agent: (*agent).into(),
                role: (*agent).into(),
                kind: *kind,
                tool_name: tool.map(Into::into),
                content: (*content).into(),
                ..Default::default()
            })
            .collect();
        Trajectory { steps, ..Default::default() }
    }

    #[test]
    fn a_final_submission_hands_the_result_in_and_is_its_agent_s_last_act() {
        use StepKind::{Message, ToolCall, ToolResult};
        let echo = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached";
        let t = run(&[
            ("a", ToolCall, Some("bash"), "grep -n TTL settings.py"),
            ("a", ToolResult, Some("bash"), "4:TTL = 3600"),
            ("a", ToolCall, Some("bash"), echo),
            ("a", ToolResult, Some("bash"), "diff --git a/x b/x"),
        ]);
        assert!(final_submission(&t, 2));
        assert!(!final_submission(&t, 0), "a command that hands nothing in");
        // Not the last act of its agent: the marker was printed mid-run.
        let t = run(&[("a", ToolCall, Some("bash"), echo), ("a", Message, None, "Now the tests.")]);
        assert!(!final_submission(&t, 0));
        // Tools named to hand the result in, in any framework; lower-case words in a script are not
        // a marker.
        for name in ["submit", "finish", "final_answer", "task_complete", "attempt_completion", "submit_patch"] {
            assert!(final_submission(&run(&[("a", ToolCall, Some(name), "{}")]), 0), "{name}");
        }
        for name in ["complete_todo", "finalize_invoice", "search"] {
            assert!(!final_submission(&run(&[("a", ToolCall, Some(name), "{}")]), 0), "{name}");
        }
        assert!(final_submission(&run(&[("a", ToolCall, Some("bash"), "submit")]), 0));
        assert!(!final_submission(&run(&[("a", ToolCall, Some("bash"), "echo 'job complete'")]), 0));
        // Another speaker after it does not make it any less the agent's last act.
        let t = run(&[("a", ToolCall, Some("finish"), "{}"), ("user", Message, None, "thanks")]);
        assert!(final_submission(&t, 0));
    }
}
