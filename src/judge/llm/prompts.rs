//! The prompt of every question kind, built from the hierarchy so that only what a question needs
//! is sent: phase summaries first, raw evidence only for the steps under examination, step numbers
//! always written out.
//!
//! Every FALAT prompt of a trajectory starts with the same bytes, so a server's prompt cache
//! computes them once: the system message ([`FALAT_SYSTEM`], with the fixed definitions), then [`run`]
//! (the task and agents, the outcome, the whole run one line per step, the prior), then the
//! stage's own context and its question. The prior's prompt is [`FALAT_SYSTEM`] and [`opening`], the
//! start of every later one.
//!
//! Each kind is a [`Kind`]: a prompt file under `src/judge/llm/prompts/` (loaded with
//! `include_str!`), the values of its placeholders, the JSON schema of the answer, how many
//! questions one call answers (batching), and the validation of the answer (in [`super::validate`]).
//!
//! # Adding a question kind
//! 1. Write `prompts/<kind>.md` (a leading `<!-- ... -->` comment documents it and is not sent;
//!    `{{name}}` placeholders are filled by [`Kind::fill`]).
//! 2. Implement [`Kind`] for a unit struct (usually `batch` keeps its default: one question per
//!    call) with a parser in `validate.rs`, and add it to `KINDS`.
//!
//! The attribution questions of ECHO, DeFA and the Who&When baselines carry their method's view
//! of the run and share one implementation, in [`attribution`].
//!
//! A question whose kind has no entry is answered by the heuristic judge with a warning.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

pub mod attribution;

use super::validate::{self, Invalid};
use crate::diagnosis::Transition;
use crate::graph::{DepGraph, EdgeKind};
use crate::hierarchy::Action;
use crate::judge::{Answer, Context, CriterionKind, Question, QuestionKind, heuristic, signals};
use crate::model::StepKind;
use crate::text;

/// The system message of the attribution questions (ECHO, DeFA, the Who&When baselines).
pub const SYSTEM: &str = include_str!("prompts/system.md");
/// The system message of FALAT's questions: [`SYSTEM`]'s text, then the fixed definitions they
/// use (kinds of error, transition labels, verification criteria, re-search roles).
pub const FALAT_SYSTEM: &str = include_str!("prompts/falat_system.md");
/// The follow-up message of a repair request (`{{errors}}`).
pub const REPAIR: &str = include_str!("prompts/repair.md");

/// Most phases one `phase_summary` call covers.
const MAX_PHASES: usize = 24;
/// Most candidates named by one recall.
pub const MAX_CANDIDATES: usize = 4;
/// Edges of later candidates added to a label call while it has room (every edge of the asked
/// candidate is always in its call).
const MAX_EDGES: usize = 16;
/// Candidates verified per call (a batching size: every live candidate is verified, in as many
/// calls as it takes).
const MAX_VERIFY: usize = 6;

/// How much raw text a prompt may carry. It shrinks when the server says the prompt is longer
/// than the model's context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detail {
    /// Characters of raw text per examined step.
    pub step_chars: usize,
    /// Characters per one-line summary.
    pub line_chars: usize,
    /// Most steps shown with raw text.
    pub max_steps: usize,
}

impl Detail {
    /// The first try.
    pub const FULL: Detail = Detail { step_chars: 560, line_chars: 110, max_steps: 10 };

    /// Half the raw text, fewer steps; `None` below a useful minimum.
    pub fn shrink(self) -> Option<Detail> {
        (self.step_chars > 140).then(|| Detail {
            step_chars: self.step_chars / 2,
            line_chars: (self.line_chars * 3 / 4).max(50),
            max_steps: (self.max_steps * 2 / 3).max(3),
        })
    }
}

/// What the judge has learnt about one trajectory so far (used to batch questions).
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// Candidates its recall named, with a short description of their findings.
    pub recalled: Vec<(usize, String)>,
    /// Candidates whose edges were labelled by a call.
    pub labelled: BTreeSet<usize>,
    /// Calls made per question kind.
    pub calls: BTreeMap<String, u32>,
}

/// A question kind the LLM judge can ask.
pub trait Kind: Sync {
    /// The [`Question::kind`] it serves.
    fn question(&self) -> QuestionKind;
    /// Its name: the prompt file's and the recording's.
    fn name(&self) -> &'static str {
        self.question().as_str()
    }
    /// The prompt file's text.
    fn template(&self) -> &'static str;
    /// The system message's template: [`FALAT_SYSTEM`] for FALAT's questions (the default),
    /// [`SYSTEM`] for the attribution questions.
    fn system(&self) -> &'static str {
        FALAT_SYSTEM
    }
    /// The questions answered by the same call as `q`, `q` first.
    fn batch(&self, _ctx: &Context<'_>, q: &Question, _known: &Known) -> Vec<Question> {
        vec![q.clone()]
    }
    /// The answer, without a call, of a question outside what this judge examines once the
    /// kind's calls were made (phases not sent for recall, edges beyond the per-candidate limit).
    fn skip(&self, _ctx: &Context<'_>, _q: &Question, _known: &Known) -> Option<Answer> {
        None
    }
    /// Values of the template's placeholders.
    fn fill(&self, ctx: &Context<'_>, batch: &[Question], known: &Known, d: Detail) -> Vec<(&'static str, String)>;
    /// The JSON schema of the answer.
    fn schema(&self, ctx: &Context<'_>, batch: &[Question], d: Detail) -> Value;
    /// Upper bound on completion tokens.
    fn max_tokens(&self, batch: &[Question]) -> u32;
    /// Validates an answer: one result per question of the batch, or an error for the whole.
    ///
    /// # Errors
    /// An [`Invalid`] for a problem that concerns the whole answer (wrong shape, unknown steps).
    fn parse(
        &self,
        ctx: &Context<'_>,
        batch: &[Question],
        d: Detail,
        v: &Value,
    ) -> Result<Vec<Result<Answer, Invalid>>, Invalid>;
}

static KINDS: &[&dyn Kind] = &[&PriorKind, &PhaseKind, &RecallKind, &LabelKind, &VerifyKind, &RolesKind];

/// The kind serving a question kind, if there is a prompt for it.
pub fn kind(question: QuestionKind) -> Option<&'static dyn Kind> {
    KINDS.iter().chain(attribution::KINDS.iter()).copied().find(|k| k.question() == question)
}

/// The names of every kind with a prompt.
pub fn kinds() -> Vec<&'static str> {
    KINDS.iter().chain(attribution::KINDS.iter()).map(|k| k.name()).collect()
}

/// Fills `{{name}}` placeholders and drops the template's leading `<!-- -->` comment.
pub fn render(template: &str, vars: &[(&str, String)]) -> String {
    let mut body = template.trim_start();
    if body.starts_with("<!--")
        && let Some(end) = body.find("-->")
    {
        body = body[end + 3..].trim_start();
    }
    let mut out = body.trim_end().to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{{{k}}}}}"), v);
    }
    out
}

/// `Task: ...` (the first line of every prompt, so servers can reuse the cached prefix).
pub(crate) fn task(ctx: &Context<'_>) -> String {
    format!("Task: {}", text::clip(&text::sanitize(ctx.trajectory.task.trim()), 900))
}

/// Most characters of the run's view ([`view`]) before its step lines are clipped shorter.
const VIEW_CHARS: usize = 10_000;

/// The opening of every FALAT prompt of a trajectory, the prior's included: the task and the
/// agents of the team with their roles. Byte for byte the same for every question of the
/// trajectory (at one [`Detail`]), so a server's prompt cache serves it after the first call.
pub fn opening(ctx: &Context<'_>, d: Detail) -> String {
    let agents: Vec<String> = ctx
        .trajectory
        .agents
        .iter()
        .map(|a| match &a.role {
            Some(r) => format!("- {}: {}", a.name, text::clip(&text::sanitize(r).replace('\n', " "), d.line_chars)),
            None => format!("- {}", text::sanitize(&a.name)),
        })
        .collect();
    format!("{}\n\nAgents of the team:\n{}", task(ctx), agents.join("\n"))
}

/// The shared prefix of every FALAT question after the prior: [`opening`], the outcome, the run
/// ([`view`]) and the prior `π` (empty before stage 1 has produced it). It is built only from
/// what does not change while the pipeline runs (the trajectory, the extractive step summaries,
/// the phase ranges; not the phase summaries or suspicion stage 1 writes), so every question of
/// a trajectory starts with the same bytes and a stage's own context follows it.
pub fn run(ctx: &Context<'_>, d: Detail) -> String {
    let parts = [opening(ctx, d), outcome(ctx), view(ctx, d), prior(ctx)];
    parts.into_iter().filter(|p| !p.is_empty()).collect::<Vec<_>>().join("\n\n")
}

/// The run at the level every stage shares (`M_mid` under `M_hi`'s ranges): each phase's step
/// range, purpose and agent, then one summary line per step, clipped so the whole stays near
/// [`VIEW_CHARS`] characters (at least 30 per line).
pub fn view(ctx: &Context<'_>, d: Detail) -> String {
    let n = ctx.hierarchy.steps.len();
    if n == 0 {
        return String::new();
    }
    let chars = (VIEW_CHARS / n).clamp(30, d.line_chars.max(30));
    let mut out = vec!["The run, phase by phase, one line per step:".to_string()];
    for p in &ctx.hierarchy.phases {
        out.push(format!(
            "phase {} (steps {}-{}, {} by {}):",
            p.id,
            p.range.start,
            p.range.end.saturating_sub(1),
            p.purpose.as_str(),
            text::sanitize(&p.agent)
        ));
        out.extend(p.range.clone().filter(|&i| i < n).map(|i| format!("  {}", step_line(ctx, i, chars))));
    }
    out.join("\n")
}

/// The task-conditioned prior `π` as the later FALAT stages see it (recall, labelling,
/// verification, re-search), or nothing before stage 1 has produced it.
fn prior(ctx: &Context<'_>) -> String {
    ctx.prior.map_or_else(String::new, |p| {
        format!("Expected way to solve the task (prior):\n{}", text::sanitize(&p.describe()))
    })
}

/// The expected answer (with ground truth only) and the answer the run gave.
pub(crate) fn outcome(ctx: &Context<'_>) -> String {
    let mut out = Vec::new();
    if let Some(e) = ctx.expected() {
        out.push(format!("Correct answer: {}", text::clip(&text::sanitize(e.trim()), 200)));
    }
    let given = ctx
        .trajectory
        .observed_output
        .clone()
        .or_else(|| signals::final_step(ctx).map(|i| text::first_line(&ctx.trajectory.steps[i].content, 200)));
    if let Some(g) = given {
        out.push(format!("Answer given by the run: {}", text::clip(&text::sanitize(g.trim()), 200)));
    }
    out.join("\n")
}

/// The one-line summary of a step: `step 3 WebSurfer search: ... [error]`.
fn step_line(ctx: &Context<'_>, i: usize, chars: usize) -> String {
    let s = &ctx.hierarchy.steps[i];
    let flags = s.flags.names();
    let tail = if flags.is_empty() { String::new() } else { format!(" [{}]", flags.join(", ")) };
    format!("step {i} {} {}: {}{tail}", s.agent, s.action.as_str(), text::clip(&s.decision, chars))
}

/// The raw text of a step, clipped to `chars` keeping its start and end (errors are often last).
fn step_raw(ctx: &Context<'_>, i: usize, chars: usize) -> String {
    let step = &ctx.trajectory.steps[i];
    let content = text::sanitize(step.content.trim());
    let n = content.chars().count();
    let body = if n <= chars {
        content
    } else {
        let head: String = content.chars().take(chars * 2 / 3).collect();
        let tail: String = content.chars().skip(n - chars / 3).collect();
        format!("{head} [...] {tail}")
    };
    format!("--- step {i} ({}, {}):\n{body}", step.agent, step.kind.as_str())
}

fn steps_enum(steps: impl IntoIterator<Item = usize>) -> Value {
    json!({"type": "integer", "enum": steps.into_iter().collect::<Vec<_>>()})
}

fn short_string(max: usize) -> Value {
    json!({"type": "string", "maxLength": max})
}

/// The steps a candidate's output reaches in one hop, or in two through its own protocol
/// children (the same targets the pipeline asks about).
pub fn effect_targets(graph: &DepGraph, step: usize) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for (to, e) in graph.outgoing(step) {
        out.push(to);
        if matches!(e.kind, EdgeKind::Protocol(_)) {
            out.extend(graph.outgoing(to).into_iter().map(|(n, _)| n).filter(|n| *n != step));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The schema of a candidate recall (`recall_candidates`, `segment_recall`): at most `max`
/// candidates among `steps`, each with a signal, evidence and a severity 1..=3.
fn candidates_schema(steps: Vec<usize>, max: usize) -> Value {
    let signals: Vec<&str> = validate::LLM_SIGNALS.iter().map(|s| s.as_str()).collect();
    json!({
        "type": "object",
        "properties": {"candidates": {
            "type": "array",
            "maxItems": max,
            "items": {
                "type": "object",
                "properties": {
                    "step": steps_enum(steps),
                    "signal": {"type": "string", "enum": signals},
                    "evidence": short_string(80),
                    "severity": {"type": "integer", "minimum": 1, "maximum": 3},
                },
                "required": ["step", "signal", "evidence", "severity"],
                "additionalProperties": false,
            },
        }},
        "required": ["candidates"],
        "additionalProperties": false,
    })
}

struct PriorKind;

impl Kind for PriorKind {
    fn question(&self) -> QuestionKind {
        QuestionKind::Prior
    }
    fn template(&self) -> &'static str {
        include_str!("prompts/prior.md")
    }
    fn fill(&self, ctx: &Context<'_>, _: &[Question], _: &Known, d: Detail) -> Vec<(&'static str, String)> {
        vec![("opening", opening(ctx, d))]
    }
    fn schema(&self, ctx: &Context<'_>, _: &[Question], _: Detail) -> Value {
        let types = ["number", "date", "name", "list", "url", "text"];
        let caps = ["web-lookup", "file-reading", "computation", "verification"];
        let mut agents: Vec<Value> = ctx.trajectory.agents.iter().map(|a| json!(a.name)).collect();
        agents.push(Value::Null);
        json!({
            "type": "object",
            "properties": {
                "answer_type": {"type": "string", "enum": types},
                "constraints": {"type": "array", "items": short_string(80), "maxItems": 4},
                "requirements": {"type": "array", "maxItems": 4, "items": {
                    "type": "object",
                    "properties": {"capability": {"type": "string", "enum": caps}, "agent": {"enum": agents}},
                    "required": ["capability", "agent"],
                    "additionalProperties": false,
                }},
                "key_terms": {"type": "array", "items": short_string(30), "maxItems": 8},
                "tools": {"type": "array", "items": short_string(40), "maxItems": 4},
                "procedure": {"type": "array", "maxItems": 6, "items": {
                    "type": "object",
                    "properties": {"action": short_string(60), "agent": {"enum": agents}},
                    "required": ["action", "agent"],
                    "additionalProperties": false,
                }},
            },
            "required": ["answer_type", "constraints", "requirements", "key_terms", "tools", "procedure"],
            "additionalProperties": false,
        })
    }
    fn max_tokens(&self, _: &[Question]) -> u32 {
        // Room for the longest answer the schema allows (4 constraints, 4 requirements, 8 terms,
        // 4 tools, 6 procedure steps).
        700
    }
    fn parse(
        &self,
        ctx: &Context<'_>,
        _: &[Question],
        _: Detail,
        v: &Value,
    ) -> Result<Vec<Result<Answer, Invalid>>, Invalid> {
        validate::prior(ctx, v).map(|p| vec![Ok(Answer::Prior(p))])
    }
}

struct PhaseKind;

impl PhaseKind {
    /// A phase asked about: its number and extractive summary (its step range, purpose and agent
    /// head it in the run's view, its steps' lines follow there).
    fn phase_text(ctx: &Context<'_>, phase: usize, d: Detail) -> String {
        format!("phase {phase}: {}", text::clip(&ctx.hierarchy.phases[phase].summary, d.line_chars))
    }
}

impl Kind for PhaseKind {
    fn question(&self) -> QuestionKind {
        QuestionKind::PhaseSummary
    }
    fn template(&self) -> &'static str {
        include_str!("prompts/phase_summary.md")
    }
    fn batch(&self, ctx: &Context<'_>, q: &Question, _: &Known) -> Vec<Question> {
        let Question::PhaseSummary { phase } = q else { return vec![q.clone()] };
        let n = ctx.hierarchy.phases.len();
        let mut out = vec![q.clone()];
        out.extend((0..n).filter(|p| p != phase).map(|p| Question::PhaseSummary { phase: p }));
        out.truncate(MAX_PHASES);
        out
    }
    fn fill(&self, ctx: &Context<'_>, batch: &[Question], _: &Known, d: Detail) -> Vec<(&'static str, String)> {
        let phases: Vec<String> = phase_ids(batch).into_iter().map(|p| PhaseKind::phase_text(ctx, p, d)).collect();
        vec![("run", run(ctx, d)), ("phases", phases.join("\n"))]
    }
    fn schema(&self, _: &Context<'_>, batch: &[Question], _: Detail) -> Value {
        let ids = phase_ids(batch);
        json!({
            "type": "object",
            "properties": {"phases": {
                "type": "array",
                "minItems": ids.len(),
                "maxItems": ids.len(),
                "items": {
                    "type": "object",
                    "properties": {
                        "phase": steps_enum(ids.iter().copied()),
                        "summary": short_string(60),
                        "suspicion": {"type": "integer", "minimum": 0, "maximum": 10},
                    },
                    "required": ["phase", "summary", "suspicion"],
                    "additionalProperties": false,
                },
            }},
            "required": ["phases"],
            "additionalProperties": false,
        })
    }
    fn max_tokens(&self, batch: &[Question]) -> u32 {
        // Room for the longest answer the schema allows (60-character summaries).
        40 + 45 * batch.len() as u32
    }
    fn parse(
        &self,
        ctx: &Context<'_>,
        batch: &[Question],
        _: Detail,
        v: &Value,
    ) -> Result<Vec<Result<Answer, Invalid>>, Invalid> {
        let ids = phase_ids(batch);
        let got = validate::phases(ctx, &ids, v)?;
        Ok(ids
            .iter()
            .map(|p| got.iter().find(|(q, _)| q == p).map(|(_, a)| a.clone()).ok_or(Invalid::PhaseMissing(*p)))
            .collect())
    }
}

/// Phase numbers of a batch of `PhaseSummary` questions, in batch order.
fn phase_ids(batch: &[Question]) -> Vec<usize> {
    batch.iter().filter_map(|q| if let Question::PhaseSummary { phase } = q { Some(*phase) } else { None }).collect()
}

struct RecallKind;

impl RecallKind {
    /// The steps of the batch's ranges that may be named (coarse to fine: the model sees every
    /// step of the suspicious phase as an `M_mid` summary line); agent steps only (not requests,
    /// coordination or plain tool outputs), in step order.
    pub fn shown(ctx: &Context<'_>, batch: &[Question], _d: Detail) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for q in batch {
            let Question::RecallCandidates { range } = q else { continue };
            for i in range.clone().filter(|&i| i < ctx.hierarchy.steps.len()) {
                let s = &ctx.hierarchy.steps[i];
                if matches!(s.action, Action::Request | Action::Coordinate)
                    || s.kind == StepKind::ToolResult && s.action == Action::ToolOutput && !s.flags.error
                {
                    continue;
                }
                out.push(i);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The steps whose raw evidence (`M_lo`) is shown: the shown steps the summaries flag (an
    /// error, a failed run, a hedge, an answer, new values), at most `d.max_steps`, in step order.
    /// A structural choice from `M_mid`, not a judgement.
    pub fn evidence(ctx: &Context<'_>, shown: &[usize], d: Detail) -> Vec<usize> {
        shown
            .iter()
            .copied()
            .filter(|&i| {
                let s = &ctx.hierarchy.steps[i];
                !s.flags.names().is_empty() || !s.introduces.is_empty()
            })
            .take(d.max_steps)
            .collect()
    }
}

impl Kind for RecallKind {
    fn question(&self) -> QuestionKind {
        QuestionKind::RecallCandidates
    }
    fn template(&self) -> &'static str {
        include_str!("prompts/recall_candidates.md")
    }
    /// A range with no step that may be named (a phase of requests only, such as the task
    /// statement) has nothing to choose from: no candidates, without a call.
    fn skip(&self, ctx: &Context<'_>, q: &Question, _: &Known) -> Option<Answer> {
        RecallKind::shown(ctx, std::slice::from_ref(q), Detail::FULL).is_empty().then(|| Answer::Candidates(Vec::new()))
    }
    fn fill(&self, ctx: &Context<'_>, batch: &[Question], _: &Known, d: Detail) -> Vec<(&'static str, String)> {
        let overview: Vec<String> = ctx
            .hierarchy
            .phases
            .iter()
            .map(|p| {
                format!(
                    "phase {} (steps {}-{}, suspicion {:.0}/10): {}",
                    p.id,
                    p.range.start,
                    p.range.end.saturating_sub(1),
                    p.suspicion * 10.0,
                    text::clip(&p.summary, d.line_chars * 2 / 3)
                )
            })
            .collect();
        let shown = RecallKind::shown(ctx, batch, d);
        let ranges = batch.iter().filter_map(|q| match q {
            Question::RecallCandidates { range } => Some(range.clone()),
            _ => None,
        });
        let (from, end) = ranges.fold((usize::MAX, 0), |(f, e), r| (f.min(r.start), e.max(r.end)));
        let allowed: Vec<String> = shown.iter().map(|i| i.to_string()).collect();
        let evidence: Vec<String> =
            RecallKind::evidence(ctx, &shown, d).into_iter().map(|i| step_raw(ctx, i, d.step_chars)).collect();
        vec![
            ("run", run(ctx, d)),
            ("overview", overview.join("\n")),
            ("from", from.min(end).to_string()),
            ("last", end.saturating_sub(1).to_string()),
            ("allowed", allowed.join(", ")),
            ("steps", if evidence.is_empty() { "(none flagged)".to_string() } else { evidence.join("\n") }),
            ("max", MAX_CANDIDATES.to_string()),
        ]
    }
    fn schema(&self, ctx: &Context<'_>, batch: &[Question], d: Detail) -> Value {
        candidates_schema(RecallKind::shown(ctx, batch, d), MAX_CANDIDATES)
    }
    fn max_tokens(&self, _: &[Question]) -> u32 {
        // Room for the longest answer the schema allows (80-character evidence per candidate).
        60 + 80 * MAX_CANDIDATES as u32
    }
    fn parse(
        &self,
        ctx: &Context<'_>,
        batch: &[Question],
        d: Detail,
        v: &Value,
    ) -> Result<Vec<Result<Answer, Invalid>>, Invalid> {
        let shown = RecallKind::shown(ctx, batch, d);
        let found = validate::candidates(&shown, v)?;
        Ok(batch
            .iter()
            .map(|q| {
                let Question::RecallCandidates { range } = q else { return Err(Invalid::WrongQuestion("recall")) };
                Ok(Answer::Candidates(found.iter().filter(|(s, _)| range.contains(s)).cloned().collect()))
            })
            .collect())
    }
}

struct LabelKind;

impl Kind for LabelKind {
    fn question(&self) -> QuestionKind {
        QuestionKind::LabelTransition
    }
    fn template(&self) -> &'static str {
        include_str!("prompts/label_transition.md")
    }
    fn batch(&self, ctx: &Context<'_>, q: &Question, known: &Known) -> Vec<Question> {
        let (Question::LabelTransition { from, .. }, Some(g)) = (q, ctx.graph) else { return vec![q.clone()] };
        // Every edge of the asked candidate (so none is left to a fallback), then edges of later
        // recalled candidates while the call has room.
        let mut out = vec![q.clone()];
        for to in effect_targets(g, *from) {
            let e = Question::LabelTransition { from: *from, to };
            if !out.contains(&e) {
                out.push(e);
            }
        }
        let later = known.recalled.iter().map(|(s, _)| *s).filter(|s| s > from && !known.labelled.contains(s));
        for c in later {
            let edges: Vec<Question> =
                effect_targets(g, c).into_iter().map(|to| Question::LabelTransition { from: c, to }).collect();
            if out.len() + edges.len() > MAX_EDGES {
                break;
            }
            out.extend(edges);
        }
        out
    }
    fn skip(&self, ctx: &Context<'_>, q: &Question, known: &Known) -> Option<Answer> {
        match q {
            Question::LabelTransition { from, to } if known.labelled.contains(from) => {
                Some(Answer::Transition(heuristic::label(ctx, *from, *to)))
            }
            _ => None,
        }
    }
    fn fill(&self, ctx: &Context<'_>, batch: &[Question], _: &Known, d: Detail) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for (from, tos) in edges_by_candidate(batch) {
            out.push(format!("Candidate {}", step_raw(ctx, from, d.step_chars / 2)));
            for to in tos {
                let s = &ctx.hierarchy.steps[to];
                out.push(format!("  {from}>{to}: step {to} ({}, {})", text::sanitize(&s.agent), s.action.as_str()));
            }
        }
        vec![("run", run(ctx, d)), ("edges", out.join("\n"))]
    }
    fn schema(&self, _: &Context<'_>, batch: &[Question], _: Detail) -> Value {
        let labels: Vec<&str> = Transition::ALL.iter().map(|t| t.as_str()).collect();
        let keys = edge_keys(batch);
        let props: serde_json::Map<String, Value> =
            keys.iter().map(|k| (k.clone(), json!({"type": "string", "enum": labels}))).collect();
        json!({
            "type": "object",
            "properties": {"labels": {"type": "object", "properties": props, "required": keys, "additionalProperties": false}},
            "required": ["labels"],
            "additionalProperties": false,
        })
    }
    fn max_tokens(&self, batch: &[Question]) -> u32 {
        20 + 14 * batch.len() as u32
    }
    fn parse(
        &self,
        _: &Context<'_>,
        batch: &[Question],
        _: Detail,
        v: &Value,
    ) -> Result<Vec<Result<Answer, Invalid>>, Invalid> {
        let keys = edge_keys(batch);
        let got = validate::labels(&keys, v)?;
        Ok(got.into_iter().map(|r| r.map(Answer::Transition)).collect())
    }
}

/// `"from>to"` per `LabelTransition` question, in batch order.
fn edge_keys(batch: &[Question]) -> Vec<String> {
    batch
        .iter()
        .map(|q| match q {
            Question::LabelTransition { from, to } => format!("{from}>{to}"),
            _ => String::new(),
        })
        .collect()
}

fn edges_by_candidate(batch: &[Question]) -> Vec<(usize, Vec<usize>)> {
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    for q in batch {
        let Question::LabelTransition { from, to } = q else { continue };
        match out.iter_mut().find(|(f, _)| f == from) {
            Some((_, tos)) => tos.push(*to),
            None => out.push((*from, vec![*to])),
        }
    }
    out
}

struct VerifyKind;

impl VerifyKind {
    /// The live candidates of a verify question: the step and the others, in step order.
    fn live(q: &Question) -> Vec<usize> {
        let Question::Verify { step, live, .. } = q else { return Vec::new() };
        let mut live: Vec<usize> = live.iter().copied().chain([*step]).collect();
        live.sort_unstable();
        live.dedup();
        live
    }

    fn describe(ctx: &Context<'_>, c: usize, live: &[usize], known: &Known, d: Detail) -> String {
        let mut s = format!("- step {c} ({})", text::sanitize(&ctx.hierarchy.steps[c].agent));
        if let Some((_, f)) = known.recalled.iter().find(|(s, _)| *s == c) {
            s.push_str(&format!("\n  found: {}", text::clip(f, d.line_chars)));
        }
        // Backward dependencies only (FALAT traces error independence through them); whether the
        // output reaches the final answer is the model's to judge.
        if let Some(g) = ctx.graph {
            let feeds: Vec<String> =
                live.iter().filter(|&&o| o < c && g.path(o, c).is_some()).map(|o| format!("step {o}")).collect();
            let feeds = if feeds.is_empty() { "none".to_string() } else { feeds.join(", ") };
            s.push_str(&format!("\n  earlier candidates it depends on: {feeds}"));
        }
        s
    }
}

impl Kind for VerifyKind {
    fn question(&self) -> QuestionKind {
        QuestionKind::Verify
    }
    fn template(&self) -> &'static str {
        include_str!("prompts/verify.md")
    }
    fn batch(&self, _: &Context<'_>, q: &Question, _: &Known) -> Vec<Question> {
        let Question::Verify { step, .. } = q else { return vec![q.clone()] };
        let live = VerifyKind::live(q);
        let shared: std::sync::Arc<[usize]> = live.clone().into();
        let mut order: Vec<usize> = vec![*step];
        order.extend(live.iter().copied().filter(|s| s != step));
        order.truncate(MAX_VERIFY);
        let mut out = vec![q.clone()];
        for c in order {
            for criterion in [CriterionKind::Independence, CriterionKind::Sufficiency] {
                let v = Question::Verify { step: c, criterion, live: shared.clone() };
                if !out.contains(&v) {
                    out.push(v);
                }
            }
        }
        out
    }
    fn fill(&self, ctx: &Context<'_>, batch: &[Question], known: &Known, d: Detail) -> Vec<(&'static str, String)> {
        let live = batch.first().map(VerifyKind::live).unwrap_or_default();
        let cands: Vec<String> =
            verify_steps(batch).into_iter().map(|c| VerifyKind::describe(ctx, c, &live, known, d)).collect();
        let fin = signals::final_step(ctx).map(|e| format!("Final output: step {e}.\n")).unwrap_or_default();
        vec![("run", run(ctx, d)), ("final", fin), ("candidates", cands.join("\n"))]
    }
    fn schema(&self, _: &Context<'_>, batch: &[Question], _: Detail) -> Value {
        let keys: Vec<String> = verify_steps(batch).iter().map(|s| s.to_string()).collect();
        let verdict = json!({
            "type": "object",
            "properties": {"independent": {"type": "boolean"}, "sufficient": {"type": "boolean"}, "why": short_string(140)},
            "required": ["independent", "sufficient", "why"],
            "additionalProperties": false,
        });
        let props: serde_json::Map<String, Value> = keys.iter().map(|k| (k.clone(), verdict.clone())).collect();
        json!({
            "type": "object",
            "properties": {"verdicts": {"type": "object", "properties": props, "required": keys, "additionalProperties": false}},
            "required": ["verdicts"],
            "additionalProperties": false,
        })
    }
    fn max_tokens(&self, batch: &[Question]) -> u32 {
        // Room for the longest answer the schema allows (a 140-character reason per candidate).
        30 + 80 * verify_steps(batch).len() as u32
    }
    fn parse(
        &self,
        _: &Context<'_>,
        batch: &[Question],
        _: Detail,
        v: &Value,
    ) -> Result<Vec<Result<Answer, Invalid>>, Invalid> {
        let steps = verify_steps(batch);
        let verdicts = validate::verdicts(&steps, v)?;
        Ok(batch
            .iter()
            .map(|q| {
                let Question::Verify { step, criterion, .. } = q else { return Err(Invalid::WrongQuestion("verify")) };
                let k = steps.iter().position(|s| s == step).expect("batch step");
                verdicts[k].clone().map(|(ind, suf)| {
                    Answer::Criterion(if *criterion == CriterionKind::Independence { ind } else { suf })
                })
            })
            .collect())
    }
}

/// The distinct candidate steps of a batch of `Verify` questions, in batch order.
fn verify_steps(batch: &[Question]) -> Vec<usize> {
    let mut out = Vec::new();
    for q in batch {
        if let Question::Verify { step, .. } = q
            && !out.contains(step)
        {
            out.push(*step);
        }
    }
    out
}

struct RolesKind;

impl Kind for RolesKind {
    fn question(&self) -> QuestionKind {
        QuestionKind::Roles
    }
    fn template(&self) -> &'static str {
        include_str!("prompts/roles.md")
    }
    fn fill(&self, ctx: &Context<'_>, batch: &[Question], _: &Known, d: Detail) -> Vec<(&'static str, String)> {
        let Some(Question::Roles { window, .. }) = batch.first() else { return Vec::new() };
        let per_step = (d.step_chars * 3 / 5).max(80);
        let steps: Vec<String> = window.clone().map(|i| step_raw(ctx, i, per_step)).collect();
        // Blind: the step chosen so far is not named (FALAT §4 re-search resists anchoring).
        vec![("run", run(ctx, d)), ("steps", steps.join("\n"))]
    }
    fn schema(&self, _: &Context<'_>, batch: &[Question], _: Detail) -> Value {
        let Some(Question::Roles { window, .. }) = batch.first() else { return json!({}) };
        let roles = ["ROOT_CAUSE", "PROPAGATION", "SYMPTOM", "CONTRIBUTING", "NONE"];
        let keys: Vec<String> = window.clone().map(|i| i.to_string()).collect();
        let props: serde_json::Map<String, Value> =
            keys.iter().map(|k| (k.clone(), json!({"type": "string", "enum": roles}))).collect();
        json!({
            "type": "object",
            "properties": {
                "roles": {"type": "object", "properties": props, "required": keys, "additionalProperties": false},
                "decisive_step": steps_enum(window.clone()),
                "reason": short_string(180),
            },
            "required": ["roles", "decisive_step", "reason"],
            "additionalProperties": false,
        })
    }
    fn max_tokens(&self, _: &[Question]) -> u32 {
        200
    }
    fn parse(
        &self,
        _: &Context<'_>,
        batch: &[Question],
        _: Detail,
        v: &Value,
    ) -> Result<Vec<Result<Answer, Invalid>>, Invalid> {
        let Some(Question::Roles { window, .. }) = batch.first() else { return Err(Invalid::WrongQuestion("roles")) };
        validate::roles(window.clone(), v).map(|a| vec![Ok(a)])
    }
}
