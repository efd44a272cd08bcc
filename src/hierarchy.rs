//! The trajectory hierarchy `M` of FALAT stage 1 (docs/DESIGN.md §2): `M_lo` raw evidence per step,
//! `M_mid` one-line extractive step summaries with the values each step uses and introduces, and
//! `M_hi` phases (contiguous step ranges with one purpose).
//!
//! Everything here is computed from the trajectory by code (no judge): it is the cheap structure
//! that the judge's questions are built from. Phase summaries and suspicion scores are filled in by
//! the judge afterwards ([`crate::methods::falat`]).

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

pub use crate::diagnosis::Purpose;
use crate::evidence::{self, Evidence, EvidenceKind};
use crate::model::{Step, StepKind, Trajectory};
use crate::text;

/// What a step does, as far as the text shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Lays out a plan (a Magentic-One "Initial plan", a manager's plan).
    Plan,
    /// Updates a progress ledger or picks the next speaker.
    Coordinate,
    /// Hands work to another agent.
    Delegate,
    /// Browses or searches the web.
    Search,
    /// Reads a file.
    ReadFile,
    /// Writes code for execution.
    WriteCode,
    /// Returns a tool's output.
    ToolOutput,
    /// Checks earlier work.
    Verify,
    /// States an answer or conclusion.
    Answer,
    /// Ends the run (`TERMINATE`, termination condition).
    Terminate,
    /// Anything else: reasoning, discussion.
    Discuss,
    /// The user's request.
    Request,
}

impl Action {
    /// Lower-case name for display.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Plan => "plan",
            Action::Coordinate => "coordinate",
            Action::Delegate => "delegate",
            Action::Search => "search",
            Action::ReadFile => "read-file",
            Action::WriteCode => "write-code",
            Action::ToolOutput => "tool-output",
            Action::Verify => "verify",
            Action::Answer => "answer",
            Action::Terminate => "terminate",
            Action::Discuss => "discuss",
            Action::Request => "request",
        }
    }
}

/// Error and risk flags of a step, set from its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags {
    /// The step contains error lines (traceback, exception, not found, refusal), the format
    /// flags it as an error, or it is a tool result that opens with an error ([`error_lead`]).
    pub error: bool,
    /// A terminal reports a non-zero exit code or failed execution, or a tool result's test
    /// runner summary counts failures (`43 tests completed, 1 failed`, whatever the exit code;
    /// [`evidence::summary::test_summary_passed`]).
    pub failed_execution: bool,
    /// A tool reports that there was nothing to run or nothing was found.
    pub empty_result: bool,
    /// The step rests on assumptions, placeholders, samples or made-up data.
    pub hedged: bool,
    /// The step claims results were verified or confirmed.
    pub claims_verified: bool,
    /// The step states an answer.
    pub answer: bool,
    /// The step, an agent's own text (no tool call or output), writes out a calculation whose
    /// result is wrong ([`evidence::arithmetic::slips`]: "2,000 − 640 − 520 = 1,040").
    pub miscalculation: bool,
}

impl Flags {
    /// The names of the set flags, for display.
    pub fn names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        for (on, name) in [
            (self.error, "error"),
            (self.failed_execution, "failed-exec"),
            (self.empty_result, "empty-result"),
            (self.hedged, "hedged"),
            (self.claims_verified, "claims-verified"),
            (self.answer, "answer"),
            (self.miscalculation, "miscalculation"),
        ] {
            if on {
                v.push(name);
            }
        }
        v
    }
}

/// Where a value was first seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// In the task text, the system prompts or the agents' roles (given, not produced).
    Given,
    /// First in this step (0-based).
    Step(usize),
}

/// `M_mid`: a one-line extractive summary of a step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepSummary {
    /// 0-based step index.
    pub index: usize,
    /// The actor.
    pub agent: String,
    /// The step kind as loaded.
    pub kind: StepKind,
    /// What it does.
    pub action: Action,
    /// The key decision or statement: the first meaningful sentence, sanitised, at most 160 chars.
    pub decision: String,
    /// Value keys this step reuses, with where each first appeared.
    pub uses: Vec<(String, Origin)>,
    /// Value keys that appear here first (not given, not in any earlier step).
    pub introduces: Vec<String>,
    /// Error and risk flags.
    pub flags: Flags,
}

impl StepSummary {
    /// The one-line form: `#3 WebSurfer search: I typed ... [error]`.
    pub fn line(&self) -> String {
        let flags = self.flags.names();
        let tail = if flags.is_empty() { String::new() } else { format!(" [{}]", flags.join(", ")) };
        format!("#{} {} {}: {}{}", self.index, self.agent, self.action.as_str(), self.decision, tail)
    }
}

/// `M_hi`: a contiguous range of steps with one purpose.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// 0-based phase number.
    pub id: usize,
    /// Step range, 0-based, end exclusive.
    pub range: Range<usize>,
    /// What the steps do.
    pub purpose: Purpose,
    /// The agent the phase is about (the delegate of a delegated phase, else the main actor).
    pub agent: String,
    /// One-line summary (filled from the structure, refined by the judge).
    pub summary: String,
    /// How suspicious the phase is, 0..=1 (filled by the judge; 0 until then).
    pub suspicion: f32,
}

/// The three levels of the hierarchy, plus value provenance.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Hierarchy {
    /// `M_lo`: evidence per step, indexed like the steps.
    pub evidence: Vec<Vec<Evidence>>,
    /// `M_mid`: one summary per step.
    pub steps: Vec<StepSummary>,
    /// `M_hi`: phases covering all steps in order.
    pub phases: Vec<Phase>,
    /// Where each value key was first seen.
    pub first_seen: HashMap<String, Origin>,
}

impl Hierarchy {
    /// The phase containing a step.
    pub fn phase_of(&self, step: usize) -> Option<&Phase> {
        self.phases.iter().find(|p| p.range.contains(&step))
    }
}

static HEDGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?-u:\b)(assum(e|ing|ption)|hypothetical(ly)?|placeholder|for (demonstration|illustration|the sake of)|sample data|dummy|mock(ed)? data|simulat(e|ed|ing)|example (data|values)|let'?s suppose|made[- ]up|fictional data|without (actual|real) (data|access)|based on (my|general) knowledge|typically|estimated?)(?-u:\b)").unwrap()
});
/// A hedging word of [`HEDGE`] in any of its inflections (`estimates`, `assumptions`,
/// `simulation`), as a tool output writes it in a field name or a value. An adverb's adjective is
/// no inflection: "a typical sight" in a review does not write "typically".
static HEDGE_FORMS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?-u:\b)(assum(?:e|es|ed|ing|ptions?)|hypothetical(?:ly)?|placeholders?|for (demonstration|illustration|the sake of)|sample data|dummy|mock(ed)? data|simulat(?:e|es|ed|ing|ions?)|example (data|values)|let'?s suppose|made[- ]up|fictional data|without (actual|real) (data|access)|based on (my|general) knowledge|typically|estimat(?:e|es|ed|ing|ions?))(?-u:\b)").unwrap()
});
/// The stem of a hedging word: its first five letters, lower case, so that "estimated",
/// "estimates" and "estimate" are one word.
fn hedge_stem(word: &str) -> String {
    word.chars().take(5).flat_map(char::to_lowercase).collect()
}
/// The stems of the hedging words of `text` ([`HEDGE`]'s matches).
fn hedge_words(text: &str) -> impl Iterator<Item = String> + '_ {
    HEDGE.find_iter(text).map(|m| hedge_stem(m.as_str()))
}

static VERIFIED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?-u:\b)(verified|confirmed|validated|has been (checked|verified)|is correct|are correct|accurate)(?-u:\b)")
        .unwrap()
});
static ANSWER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(final answer|the answer is|in conclusion|therefore,? the|the result is|we have (reached|determined|found)|the (correct|final) (answer|result))").unwrap()
});
static SEARCH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(i typed|i clicked|i scrolled|i visited|address: |web_search|search results?|i searched|here is a screenshot)").unwrap()
});
/// The opening of a tool result that reports an error (see [`error_lead`]).
static ERROR_LEAD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"^(?:(?i:error|fatal(?: error)?|exception)(?:\s*\[[^\]\n]*\])?\s*:|(?i:an? (?:error|exception) (?:occurred|has occurred|was raised))(?-u:\b)|(?i:error)\s+(?:executing|calling|running|invoking|while|during|occurred|in tool)(?-u:\b)|(?i:(?:http\s+)?error\s+[45]\d\d)(?-u:\b)|Traceback \(most recent call last\)|(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?::|\s*(?:\n|$))|\{\s*"(?:error|exception)"\s*:\s*(?:"[^"\s]|\{\s*"|\[\s*[^\s\]]|true|[1-9]))"#,
    )
    .unwrap()
});
static EMPTY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(there is no code|no code block detected|no (results|data) (found|available)|code output:\s*$|returned no (results|output)|is empty)").unwrap()
});

/// Builds `M_lo` and `M_mid` for a trajectory, and the phases of `M_hi` (without suspicion).
///
/// The per-step work (evidence, flags, action, decision line) runs on all cores; value
/// provenance, which depends on step order, runs after it in order.
pub fn build(t: &Trajectory) -> Hierarchy {
    let local: Vec<(Vec<Evidence>, StepSummary)> = par_map(&t.steps, |step| {
        let ev = evidence::extract(step);
        let summary = summarize(step, &ev, Vec::new(), Vec::new());
        (ev, summary)
    });
    let (evidence, mut steps): (Vec<Vec<Evidence>>, Vec<StepSummary>) = local.into_iter().unzip();
    let mut first_seen: HashMap<String, Origin> = HashMap::new();
    let mut given = t.task.clone();
    for a in &t.agents {
        given.push('\n');
        given.push_str(&a.name);
        if let Some(r) = &a.role {
            given.push('\n');
            given.push_str(r);
        }
    }
    for e in evidence::extract_text(&given) {
        if e.kind.is_value() {
            first_seen.entry(e.key).or_insert(Origin::Given);
        }
    }
    let given_lower = given.to_lowercase();
    for (i, summary) in steps.iter_mut().enumerate() {
        let (uses, introduces) = provenance(i, &evidence[i], &mut first_seen, &given_lower);
        summary.uses = uses;
        summary.introduces = introduces;
    }
    unhedge_observed(t, &mut steps);
    unhedge_policy(t, &mut steps);
    waved_off_warnings(t, &evidence, &mut steps);
    let phases = phases(t, &steps);
    Hierarchy { evidence, steps, phases, first_seen }
}

/// Clears the `hedged` flag of a step whose every hedging word an earlier tool output wrote
/// (`_` read as a space), in any of its forms (words compared by their stem, [`hedge_stem`]):
/// "the estimated delivery is 14 March" after a lookup returning `estimated_delivery` or
/// `delivery_estimate` repeats the tool's field; it assumes nothing.
fn unhedge_observed(t: &Trajectory, steps: &mut [StepSummary]) {
    if !steps.iter().any(|s| s.flags.hedged) {
        return;
    }
    let mut observed: HashSet<String> = HashSet::new();
    for (i, summary) in steps.iter_mut().enumerate() {
        if summary.kind != StepKind::ToolResult && summary.flags.hedged && !observed.is_empty() {
            summary.flags.hedged = hedge_words(&strip_code(&t.steps[i].content)).any(|w| !observed.contains(&w));
        }
        if summary.kind == StepKind::ToolResult {
            let content = t.steps[i].content.replace('_', " ");
            observed.extend(HEDGE_FORMS.find_iter(&content).map(|m| hedge_stem(m.as_str())));
        }
    }
}

/// Clears the `hedged` flag of an agent's step whose every sentence with a hedging word restates
/// the operator's policy: it shares a pair of adjacent content words with a system message
/// before it. "Refunds to PayPal typically take 5-7 business days" after a policy saying
/// "refunded … in 5 to 7 business days" tells the policy; it assumes nothing.
fn unhedge_policy(t: &Trajectory, steps: &mut [StepSummary]) {
    if !steps.iter().any(|s| s.flags.hedged) {
        return;
    }
    let mut policy: HashSet<(String, String)> = HashSet::new();
    for (i, summary) in steps.iter_mut().enumerate() {
        let step = &t.steps[i];
        if step.role.eq_ignore_ascii_case("system") && step.kind == StepKind::Message {
            policy.extend(content_pairs(&step.content));
            continue;
        }
        if policy.is_empty() || !summary.flags.hedged || summary.kind == StepKind::ToolResult {
            continue;
        }
        let content = strip_code(&step.content);
        let restated = HEDGE.find_iter(&content).all(|m| {
            let sentence = text::sentence_around(&content, m.start(), m.end());
            content_pairs(&content[sentence]).iter().any(|p| policy.contains(p))
        });
        if restated {
            summary.flags.hedged = false;
        }
    }
}

/// The pairs of adjacent words of `text` (lower case, letters only) that are both content words:
/// three letters or more and no function word.
fn content_pairs(text: &str) -> Vec<(String, String)> {
    const FUNCTION: [&str; 24] = [
        "the", "and", "for", "are", "was", "were", "with", "that", "this", "you", "your", "our", "will", "can", "not",
        "but", "from", "has", "have", "had", "its", "any", "all", "may",
    ];
    let words: Vec<String> =
        text.split(|c: char| !c.is_alphabetic()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    words
        .windows(2)
        .filter(|w| w.iter().all(|x| x.chars().count() >= 3 && !FUNCTION.contains(&x.as_str())))
        .map(|w| (w[0].clone(), w[1].clone()))
        .collect()
}

/// How many steps after a tool output [`waved_off_warnings`] reads for the agent's word on it.
const WAVE_OFF_WINDOW: usize = 3;

/// A message that calls warnings harmless: "those deprecation warnings are harmless", "the font
/// warnings can be ignored", "warnings are just noise", "the warning is expected".
static WARNINGS_HARMLESS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?-u:\b)warn(?:ing)?s?(?-u:\b)[^.\n!?;]{0,60}?(?-u:\b)(?:(?:is|are|was|were|'s|'re|seem|seems|look|looks)\s+(?:just\s+|only\s+|all\s+|merely\s+|purely\s+)?(?:harmless|benign|noise|noisy|cosmetic|expected|safe to ignore|nothing to worry about|informational)|can (?:be )?(?:safely )?(?:be )?ignored?|(?:are|is) not (?:a problem|an error|errors))(?-u:\b)").unwrap()
});

/// Clears the `error` flag of a tool output whose error lines are all warnings, whose last line
/// is no error, that the format does not mark failed, and that the agent's next message (within
/// [`WAVE_OFF_WINDOW`] steps) calls harmless: a run printing `WARNING: … Font family 'Arial'
/// not found.` before "Saved chart to …", then "those font warnings are harmless", did what it
/// was asked; it shows no failure for the agent to ignore. Had the output ended on an error
/// line, the agent's word would not clear it.
fn waved_off_warnings(t: &Trajectory, evidence: &[Vec<Evidence>], steps: &mut [StepSummary]) {
    for r in 0..steps.len() {
        let s = &steps[r];
        // A tool's output, or a terminal's reply to another agent's code (Magentic-One's
        // ComputerTerminal).
        let output = s.kind == StepKind::ToolResult
            || r > 0
                && t.steps[r - 1].agent != t.steps[r].agent
                && evidence[r - 1].iter().any(|e| matches!(e.kind, EvidenceKind::CodeBlock(_)));
        if !output || !s.flags.error || s.flags.failed_execution || t.steps[r].is_error {
            continue;
        }
        let content = &t.steps[r].content;
        if error_lead(content.trim()) {
            continue;
        }
        let line_of = |at: usize| {
            let start = content[..at].rfind('\n').map_or(0, |p| p + 1);
            let end = content[at..].find('\n').map_or(content.len(), |p| at + p);
            start..end
        };
        let mut lines = evidence[r].iter().filter(|e| e.kind == EvidenceKind::ErrorLine).map(|e| line_of(e.span.start));
        let all_warnings = lines.all(|l| content[l].to_ascii_lowercase().contains("warn"));
        let last = content.trim_end().rsplit('\n').next().unwrap_or_default();
        let last_is_error = !evidence::extract_text(last).iter().all(|e| e.kind != EvidenceKind::ErrorLine);
        if !all_warnings || last_is_error {
            continue;
        }
        let next = (r + 1..steps.len().min(r + 1 + WAVE_OFF_WINDOW)).find(|&k| steps[k].kind != StepKind::ToolResult);
        if next.is_some_and(|k| WARNINGS_HARMLESS.is_match(&t.steps[k].content)) {
            steps[r].flags.error = false;
        }
    }
}

/// `items.iter().map(f)` on all cores, in order (large inputs only).
fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads < 2 || items.len() < 2_000 {
        return items.iter().map(f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = items.chunks(chunk).map(|c| s.spawn(|| c.iter().map(&f).collect::<Vec<R>>())).collect();
        handles.into_iter().flat_map(|h| h.join().expect("hierarchy worker panicked")).collect()
    })
}

fn provenance(
    i: usize,
    ev: &[Evidence],
    first_seen: &mut HashMap<String, Origin>,
    given_lower: &str,
) -> (Vec<(String, Origin)>, Vec<String>) {
    let mut uses = Vec::new();
    let mut introduces = Vec::new();
    for e in ev.iter().filter(|e| e.kind.is_value()) {
        if e.kind == EvidenceKind::Number && evidence::is_trivial_number(&e.key) {
            continue;
        }
        if uses.iter().any(|(k, _)| *k == e.key) || introduces.contains(&e.key) {
            continue;
        }
        match first_seen.get(&e.key) {
            Some(o) => uses.push((e.key.clone(), *o)),
            None if given_lower.contains(&e.key) => {
                first_seen.insert(e.key.clone(), Origin::Given);
                uses.push((e.key.clone(), Origin::Given));
                see_rounded(&e.key, Origin::Given, first_seen);
            }
            None => {
                first_seen.insert(e.key.clone(), Origin::Step(i));
                introduces.push(e.key.clone());
                see_rounded(&e.key, Origin::Step(i), first_seen);
            }
        }
    }
    (uses, introduces)
}

/// Records the forms a number of three or more decimals takes rounded to one and two decimals
/// (`791.6543403552349` as `791.7` and `791.65`; a negative one also without its sign, as a loss
/// is told: "-$18,342.62", "lost $18,342.62"), and a fraction's as a percentage (`0.12343` as
/// `12.34` and `12.3`), as seen where the number was, unless seen before: a figure told rounded
/// from an observed one is that observation's value, not a new one. A sign dropped or a
/// percentage is recorded only with a decimal left (a whole number would match too many figures
/// by chance).
fn see_rounded(key: &str, origin: Origin, first_seen: &mut HashMap<String, Origin>) {
    let decimals = key.split_once('.').map_or(0, |(_, d)| d.len());
    if decimals < 3 {
        return;
    }
    let Ok(v) = key.parse::<f64>() else { return };
    // The figure itself rounded ("733.0" is read as 733), then its other forms, which must keep a
    // decimal to be recorded.
    let mut forms = vec![(v, true)];
    if v < 0.0 {
        forms.push((-v, false));
    }
    if v.abs() < 1.0 {
        forms.push((v.abs() * 100.0, false));
    }
    for (x, whole_ok) in forms {
        for d in 1..=2 {
            let rounded = evidence::normalize_number(&format!("{x:.d$}"));
            if !rounded.is_empty() && rounded != key && (whole_ok || rounded.contains('.')) {
                first_seen.entry(rounded).or_insert(origin);
            }
        }
    }
}

fn summarize(step: &Step, ev: &[Evidence], uses: Vec<(String, Origin)>, introduces: Vec<String>) -> StepSummary {
    let content = step.content.trim();
    let has_code = ev.iter().any(|e| matches!(e.kind, EvidenceKind::CodeBlock(_)));
    let reported = step.kind == StepKind::ToolResult && error_lead(content);
    // A test runner's summary that counts failures is a failed run whatever its exit status.
    let failed = ev.iter().any(|e| matches!(e.kind, EvidenceKind::ExitCode(c) if c != 0))
        || content.contains("execution failed")
        || step.kind == StepKind::ToolResult && evidence::summary::test_summary_passed(content) == Some(false);
    let flags = Flags {
        error: ev.iter().any(|e| e.kind == EvidenceKind::ErrorLine) || step.is_error || reported,
        failed_execution: failed,
        empty_result: EMPTY.is_match(content),
        hedged: step.kind != StepKind::ToolResult && HEDGE.is_match(&strip_code(content)),
        claims_verified: step.kind != StepKind::ToolResult && VERIFIED.is_match(content),
        answer: ANSWER.is_match(content),
        miscalculation: !matches!(step.kind, StepKind::ToolCall | StepKind::ToolResult)
            && content.contains('=')
            && !evidence::arithmetic::slips(content).is_empty(),
    };
    let action = classify(step, content, has_code, &flags);
    StepSummary {
        index: step.index,
        agent: step.agent.clone(),
        kind: step.kind,
        action,
        decision: decision_line(content, action),
        uses,
        introduces,
        flags,
    }
}

/// Whether a tool result's text opens with an error report, the way tools and harnesses write
/// one when the format has no error flag of its own: `Error: …`, `error: …`, `Fatal error: …`,
/// `Exception: …`, `Error executing tool …`, an HTTP status told as an error (`Error 503: Service
/// Unavailable`, `HTTP Error 404`), `An error occurred while running the tool …` (the
/// OpenAI Agents SDK's default tool error), `Traceback (most recent call last)`, an exception
/// line (`ZeroDivisionError: division by zero`, `java.io.IOException: …`), or a JSON object whose
/// first member is a non-empty `"error"`. Only the opening counts (leading whitespace skipped):
/// an output that mentions an error further on, or reads `Errors: 0`, is data.
pub fn error_lead(text: &str) -> bool {
    ERROR_LEAD.is_match(text.trim_start())
}

fn classify(step: &Step, content: &str, has_code: bool, flags: &Flags) -> Action {
    let lower_start: String = content.chars().take(200).collect::<String>().to_lowercase();
    // The served person handing the request to the system (a span export's root recorded as a
    // delegation from `user`, whatever the run type it carries as its role: LangSmith's `chain`)
    // asks; it delegates nothing the run could get wrong.
    let person = ["user", "human", "customer"].iter().any(|n| step.agent.eq_ignore_ascii_case(n));
    if step.kind == StepKind::Delegation && person {
        return Action::Request;
    }
    match step.kind {
        StepKind::Delegation => return Action::Delegate,
        StepKind::ToolResult => return Action::ToolOutput,
        _ => {}
    }
    if step.role == "human" || step.role == "user" && step.index == 0 {
        return Action::Request;
    }
    // A framework's own planning step (smolagents' `PlanningStep`: facts survey and plan) is the
    // plan, whatever its text.
    if step.role == "planning" && step.kind == StepKind::Thought {
        return Action::Plan;
    }
    if content == "TERMINATE" || step.role.contains("termination") {
        return Action::Terminate;
    }
    if lower_start.contains("initial plan")
        || lower_start.contains("new plan")
        // A planner's turn under a heading of its own ("Plan:", "## Plan", "**Plan**"): AgentChat
        // and LangGraph planners open so.
        || ["plan:", "## plan", "# plan", "**plan"].iter().any(|h| lower_start.trim_start().starts_with(h))
        || lower_start.contains("here is the plan")
        // Magentic-One's task ledger restates the request and the team before its fact sheet and
        // plan ("Here is the plan to follow as best as possible:"; autogen's Magentic-One
        // orchestrator prompts), so the plan's heading comes after the first 200 characters.
        || lower_start.starts_with("we are working to address the following user request")
            && ["Here is the plan to follow", "here is the plan to follow"].iter().any(|h| content.contains(h))
    {
        return Action::Plan;
    }
    if lower_start.starts_with("updated ledger") || lower_start.starts_with("next speaker") {
        return Action::Coordinate;
    }
    if SEARCH.is_match(&lower_start) {
        return Action::Search;
    }
    // A file browser's page: the old Magentic-One file surfer's `Address: file://…`, AgentChat's
    // FileSurfer's `Path: …` header before its `Viewport position: Showing page …`.
    if lower_start.starts_with("address: file:")
        || lower_start.contains("viewport position") && lower_start.contains("file://")
        || lower_start.starts_with("path: ") && lower_start.contains("viewport position:")
    {
        return Action::ReadFile;
    }
    // The opening message of a run that restates the task with a plan is the plan.
    if step.index == 0 && (lower_start.contains("plan") || lower_start.contains("you are given")) {
        return Action::Plan;
    }
    if has_code {
        return Action::WriteCode;
    }
    if flags.answer {
        return Action::Answer;
    }
    if lower_start.contains("verif") || lower_start.contains("validat") || lower_start.contains("double-check") {
        return Action::Verify;
    }
    if step.index == 0 && lower_start.contains("plan") {
        return Action::Plan;
    }
    Action::Discuss
}

fn strip_code(content: &str) -> String {
    static CODE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?s)```.*?```").unwrap());
    CODE.replace_all(content, " ").into_owned()
}

/// The first meaningful sentence of the step, skipping boilerplate headers.
fn decision_line(content: &str, action: Action) -> String {
    let skip = ["you are given:", "updated ledger", "initial plan", "we are working to address", "{", "}", "```"];
    let line = content
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .find(|l| {
            let low = l.to_lowercase();
            !skip.iter().any(|s| low.starts_with(s)) || action == Action::Coordinate && low.contains("reason")
        })
        .unwrap_or_else(|| content.lines().next().unwrap_or_default());
    text::clip(&text::sanitize(line.trim()), 160)
}

/// `M_hi`: phases. A plan or re-plan starts a phase; runs of work handed to one delegate form a
/// phase; elsewhere a phase ends where the purpose of the steps changes.
fn phases(t: &Trajectory, steps: &[StepSummary]) -> Vec<Phase> {
    let mut out: Vec<Phase> = Vec::new();
    let mut current: Option<(usize, Purpose, String)> = None;
    for (i, s) in steps.iter().enumerate() {
        let (purpose, agent) = purpose_of(t, steps, i, current.as_ref().map(|c| (c.1, c.2.as_str())));
        let starts = match &current {
            None => true,
            Some((_, p, a)) => {
                s.action == Action::Plan || *p != purpose || (purpose == Purpose::Delegated && *a != agent)
            }
        };
        if starts {
            if let Some((start, p, a)) = current.take() {
                out.push(new_phase(out.len(), start..i, p, a, steps));
            }
            current = Some((i, purpose, agent));
        }
    }
    if let Some((start, p, a)) = current {
        out.push(new_phase(out.len(), start..steps.len(), p, a, steps));
    }
    split_long(merge_short(out, steps), steps)
}

/// The most steps a phase holds. The paper's phases are the run's purposes; in a long run whose
/// purpose never changes (thousands of turns of one loop) that is one phase, and the
/// coarse-to-fine search and the Hierarchy view would read it whole. Such a phase is cut into
/// equal consecutive parts of at most this many steps, each with the phase's purpose and agent.
/// No bundled benchmark run is this long (the longest has 130 steps).
pub const MAX_PHASE_STEPS: usize = 200;

/// Cuts every phase longer than [`MAX_PHASE_STEPS`] into equal consecutive parts and renumbers.
fn split_long(phases: Vec<Phase>, steps: &[StepSummary]) -> Vec<Phase> {
    if phases.iter().all(|p| p.range.len() <= MAX_PHASE_STEPS) {
        return phases;
    }
    let mut out: Vec<Phase> = Vec::with_capacity(phases.len());
    for p in phases {
        let parts = p.range.len().div_ceil(MAX_PHASE_STEPS);
        let size = p.range.len().div_ceil(parts);
        let mut start = p.range.start;
        while start < p.range.end {
            let end = (start + size).min(p.range.end);
            out.push(new_phase(out.len(), start..end, p.purpose, p.agent.clone(), steps));
            start = end;
        }
    }
    out
}

fn purpose_of(t: &Trajectory, steps: &[StepSummary], i: usize, prev: Option<(Purpose, &str)>) -> (Purpose, String) {
    let s = &steps[i];
    if let Some(target) = &t.steps[i].delegate_to {
        return (Purpose::Delegated, target.clone());
    }
    let inherit = |fallback: Purpose| prev.map_or((fallback, s.agent.clone()), |(p, a)| (p, a.to_string()));
    // The delegating agent calling tools itself after the delegate answered (a Claude Code main
    // agent editing after its Explore sub-agent reported) does its own work, not the delegate's.
    if let Some((Purpose::Delegated, a)) = prev
        && s.agent != a
        && t.steps[i].kind == StepKind::ToolCall
    {
        let own = match s.action {
            Action::WriteCode => Purpose::Compute,
            Action::Verify => Purpose::Verify,
            Action::Answer | Action::Terminate => Purpose::Answer,
            _ => Purpose::Gather,
        };
        return (own, s.agent.clone());
    }
    match s.action {
        Action::Plan | Action::Request => (Purpose::Plan, s.agent.clone()),
        Action::Search | Action::ReadFile => match prev {
            Some((Purpose::Delegated, a)) => (Purpose::Delegated, a.to_string()),
            _ => (Purpose::Gather, s.agent.clone()),
        },
        Action::WriteCode => match prev {
            Some((Purpose::Delegated, a)) => (Purpose::Delegated, a.to_string()),
            _ => (Purpose::Compute, s.agent.clone()),
        },
        Action::Verify => (Purpose::Verify, s.agent.clone()),
        Action::Answer | Action::Terminate => (Purpose::Answer, s.agent.clone()),
        Action::ToolOutput | Action::Coordinate | Action::Discuss | Action::Delegate => inherit(Purpose::Gather),
    }
}

fn new_phase(id: usize, range: Range<usize>, purpose: Purpose, agent: String, steps: &[StepSummary]) -> Phase {
    let summary = phase_summary(&range, purpose, &agent, steps);
    Phase { id, range, purpose, agent, summary, suspicion: 0.0 }
}

/// An extractive phase summary: purpose, agent, step range, and the first decision in it.
pub fn phase_summary(range: &Range<usize>, purpose: Purpose, agent: &str, steps: &[StepSummary]) -> String {
    let first = steps[range.clone()]
        .iter()
        .find(|s| !matches!(s.action, Action::Coordinate | Action::ToolOutput))
        .map(|s| s.decision.as_str())
        .unwrap_or_default();
    let n_err = steps[range.clone()].iter().filter(|s| s.flags.error || s.flags.failed_execution).count();
    let errs = if n_err > 0 { format!(", {n_err} with errors") } else { String::new() };
    text::clip(
        &format!(
            "{} {} {} (steps {}-{}{}): {}",
            purpose.as_str(),
            if purpose == Purpose::Delegated { "to" } else { "by" },
            agent,
            range.start,
            range.end - 1,
            errs,
            first
        ),
        200,
    )
}

fn merge_short(phases: Vec<Phase>, steps: &[StepSummary]) -> Vec<Phase> {
    let mut out: Vec<Phase> = Vec::new();
    for p in phases {
        let short = p.range.len() == 1 && p.purpose != Purpose::Plan;
        let merge = match out.last() {
            Some(last) => {
                (short && last.purpose != Purpose::Plan) || (last_is_short(Some(last)) && p.purpose != Purpose::Plan)
            }
            None => false,
        };
        if merge {
            let last = out.last_mut().expect("checked");
            last.range.end = p.range.end;
            last.summary = phase_summary(&last.range, last.purpose, &last.agent, steps);
        } else {
            out.push(p);
        }
    }
    for (i, p) in out.iter_mut().enumerate() {
        p.id = i;
    }
    out
}

fn last_is_short(p: Option<&Phase>) -> bool {
    p.is_some_and(|p| p.range.len() == 1 && p.purpose != Purpose::Plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Step;

    fn step(i: usize, agent: &str, kind: StepKind, content: &str) -> Step {
        Step { index: i, agent: agent.into(), kind, content: content.into(), ..Step::default() }
    }

    #[test]
    fn the_delegating_agents_own_calls_after_the_delegate_reported_are_its_own_phase() {
        let mut delegation = step(1, "claude", StepKind::Delegation, "Find every reference to the flag.");
        delegation.delegate_to = Some("Explore".into());
        let mut request = step(0, "user", StepKind::Message, "Remove the flag everywhere.");
        request.role = "user".into();
        let steps = vec![
            request,
            delegation,
            step(2, "Explore", StepKind::ToolCall, "Bash: rg -n FLAG"),
            step(3, "Explore", StepKind::ToolResult, "src/a.py:3:FLAG = 1"),
            step(4, "Explore", StepKind::Message, "One reference: src/a.py:3."),
            step(5, "claude", StepKind::ToolResult, "One reference: src/a.py:3."),
            step(6, "claude", StepKind::ToolCall, "Edit src/a.py"),
            step(7, "claude", StepKind::ToolResult, "The file src/a.py has been updated."),
            step(8, "claude", StepKind::ToolCall, "Bash: pytest -q"),
            step(9, "claude", StepKind::ToolResult, "3 passed"),
        ];
        let t = Trajectory { task: "Remove the flag everywhere.".into(), steps, ..Trajectory::default() };
        let h = build(&t);
        let phases: Vec<(Range<usize>, Purpose, &str)> =
            h.phases.iter().map(|p| (p.range.clone(), p.purpose, p.agent.as_str())).collect();
        let delegated =
            phases.iter().find(|(_, p, _)| *p == Purpose::Delegated).unwrap_or_else(|| panic!("{phases:?}"));
        assert_eq!((delegated.0.clone(), delegated.2), (1..6, "Explore"), "{phases:?}");
        assert_eq!(phases.last().map(|(r, _, a)| (r.start, *a)), Some((6, "claude")), "{phases:?}");
    }

    #[test]
    fn a_hedge_that_restates_the_system_policy_assumes_nothing() {
        let mut policy =
            step(0, "system", StepKind::Message, "Refunds go to the original payment method in 5 to 7 business days.");
        policy.role = "system".into();
        let told = "Your refund is $59.90. Refunds to a card typically take 5-7 business days.";
        let guessed = "Your refund is $59.90. Delivery typically takes a week.";
        for (reply, hedged) in [(told, false), (guessed, true)] {
            let steps = vec![policy.clone(), step(1, "assistant", StepKind::Message, reply)];
            let t = Trajectory { task: "Return the kettle.".into(), steps, ..Trajectory::default() };
            assert_eq!(build(&t).steps[1].flags.hedged, hedged, "{reply}");
        }
        // The same reply without a policy before it hedges.
        let steps = vec![step(0, "assistant", StepKind::Message, told)];
        let t = Trajectory { task: "Return the kettle.".into(), steps, ..Trajectory::default() };
        assert!(build(&t).steps[0].flags.hedged);
    }

    #[test]
    fn a_long_phase_is_cut_into_equal_parts() {
        let steps: Vec<Step> = (0..1000)
            .map(|i| step(i, ["a", "b"][i % 2], StepKind::Message, &format!("turn {i}: still looking")))
            .collect();
        let t = Trajectory { task: "Find it.".into(), steps, ..Trajectory::default() };
        let h = build(&t);
        let ranges: Vec<Range<usize>> = h.phases.iter().map(|p| p.range.clone()).collect();
        assert!(ranges.iter().all(|r| r.len() <= MAX_PHASE_STEPS), "{ranges:?}");
        assert_eq!(ranges.first().map(|r| r.start), Some(0));
        assert_eq!(ranges.last().map(|r| r.end), Some(1000));
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start), "{ranges:?}");
        assert!(h.phases.iter().enumerate().all(|(i, p)| p.id == i));
        assert!(h.phases.iter().all(|p| p.summary.contains(&format!("steps {}-{}", p.range.start, p.range.end - 1))));
    }

    #[test]
    fn provenance_marks_new_and_reused_values() {
        let t = Trajectory {
            task: "What is the population difference between Seattle and Colville?".into(),
            steps: vec![
                step(0, "A", StepKind::Message, "Seattle has 737,015 people."),
                step(1, "B", StepKind::Message, "So 737015 minus 4,965 is 732,050."),
            ],
            ..Trajectory::default()
        };
        let h = build(&t);
        assert_eq!(h.steps[0].introduces, vec!["737015".to_string()]);
        assert_eq!(h.steps[1].uses, vec![("737015".to_string(), Origin::Step(0))]);
        assert_eq!(h.steps[1].introduces, vec!["4965".to_string(), "732050".to_string()]);
    }

    #[test]
    fn a_tool_result_that_opens_with_an_error_is_flagged_as_an_error() {
        for text in [
            "Error: division by zero",
            "error: could not compile `falat`",
            "  Fatal error: out of memory",
            "Exception: no such table",
            "Error executing tool get_weather: timeout",
            "Traceback (most recent call last):\n  File \"x.py\", line 3",
            "ZeroDivisionError: division by zero",
            "java.io.IOException: closed",
            "{\"error\": \"order not found\"}",
            "{\"error\": {\"code\": 404}}",
            "An error occurred while running the tool. Please try again. Error: no seats on 2025-10-30",
            "Error 503: Service Unavailable (upstream fx-rates)",
            "HTTP Error 404: Not Found",
        ] {
            assert!(error_lead(text), "{text}");
        }
        for text in [
            "Errors: 0, warnings: 2",
            "error_rate,count\n0.1,3",
            "{\"error\": null, \"result\": 42}",
            "{\"result\": 42, \"error\": \"\"}",
            "Found 3 lines with error: in the log",
            "The request failed with an Error: see above",
            "No error occurred while running the tool.",
            "Error 5 of the checklist is fixed",
            "Error 2024 report: none",
            "42",
        ] {
            assert!(!error_lead(text), "{text}");
        }
        let t = Trajectory {
            steps: vec![
                step(0, "assistant", StepKind::ToolCall, "divide({\"a\": 84, \"b\": 0})"),
                step(1, "tool", StepKind::ToolResult, "Error: division by zero"),
                step(2, "assistant", StepKind::Message, "Error: I could not divide."),
            ],
            ..Trajectory::default()
        };
        let h = build(&t);
        assert!(h.steps[1].flags.error);
        assert!(!h.steps[1].flags.failed_execution, "a tool's error report is no failed execution");
        let t = Trajectory {
            steps: vec![
                step(0, "tool", StepKind::ToolResult, "Exception: no such table"),
                step(1, "assistant", StepKind::Message, "Exception: no such table"),
                step(2, "tool", StepKind::ToolResult, "Errors: 0, warnings: 2"),
            ],
            ..Trajectory::default()
        };
        let h = build(&t);
        let errors: Vec<bool> = h.steps.iter().map(|s| s.flags.error).collect();
        assert_eq!(errors, [true, false, false], "only a tool result's opening reports its error");
    }

    #[test]
    fn magentic_ones_task_ledger_is_a_plan() {
        let ledger = "We are working to address the following user request:\n\nOn PyPI, what is the release date of \
            requests 2.31.0?\n\nTo answer this request we have assembled the following team:\n\nWebSurfer: A helpful \
            assistant with access to a web browser.\n\nHere is an initial fact sheet to consider:\n\n4. EDUCATED \
            GUESSES\n- 2.31.0 was a security release in 2023.\n\nHere is the plan to follow as best as possible:\n\n\
            - WebSurfer: open the release history.";
        let t = Trajectory {
            steps: vec![
                step(0, "user", StepKind::Message, "On PyPI, what is the release date of requests 2.31.0?"),
                step(1, "MagenticOneOrchestrator", StepKind::Message, ledger),
                step(
                    2,
                    "MagenticOneOrchestrator",
                    StepKind::Message,
                    "We are working to address the following user request: see above.",
                ),
            ],
            ..Trajectory::default()
        };
        let h = build(&t);
        assert_eq!(h.steps[1].action, Action::Plan);
        assert_ne!(h.steps[2].action, Action::Plan, "no plan follows the restated request");
    }

    #[test]
    fn par_map_keeps_order() {
        let items: Vec<usize> = (0..5_000).collect();
        assert_eq!(par_map(&items, |x| x * 2), items.iter().map(|x| x * 2).collect::<Vec<_>>());
    }

    #[test]
    fn flags_and_actions() {
        let t = Trajectory {
            steps: vec![
                step(0, "A", StepKind::Message, "Let's assume the price is $20.\n```python\nprint(20*2)\n```"),
                step(
                    1,
                    "Computer_terminal",
                    StepKind::ToolResult,
                    "exitcode: 1 (execution failed)\nCode output: NameError: x",
                ),
                step(2, "A", StepKind::Message, "TERMINATE"),
            ],
            ..Trajectory::default()
        };
        let h = build(&t);
        assert_eq!(h.steps[0].action, Action::WriteCode);
        assert!(h.steps[0].flags.hedged);
        assert!(h.steps[1].flags.failed_execution && h.steps[1].flags.error);
        assert_eq!(h.steps[2].action, Action::Terminate);
    }
}
