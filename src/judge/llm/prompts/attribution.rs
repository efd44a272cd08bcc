//! Prompts of the attribution questions that ECHO, DeFA and the Who&When baselines ask
//! ([`crate::methods`]): `locate_error`, `is_decisive`, `locate_in_range`, `analyst_vote`,
//! `segment_recall`, `trace_propagation` and `adjudicate`.
//!
//! Each of these questions carries the view its method built (`context`, every step headed
//! `[step N] agent (kind)` with 0-based numbers), so the prompt is the task, the outcome, that
//! view and the method's instruction. A view longer than the character budget of the current
//! [`Detail`] is trimmed by [`fit`]: every step keeps its header and the start and end of its
//! text, and when even headers do not fit, middle steps are left out with a note saying which.
//! The budget halves each time the server says the prompt does not fit the model's context.
//!
//! Answers are validated by [`crate::judge::attribution::parse_answer`] (steps inside the
//! trajectory and the question's range, known enum values), except `segment_recall`, which uses
//! the flat candidate form of FALAT's recall and its validation.

use serde_json::{Value, json};

use super::{Detail, Kind, Known, candidates_schema, outcome, short_string, steps_enum, task};
use crate::judge::attribution::{self, ErrorCategory, VoteTarget};
use crate::judge::llm::validate;
use crate::judge::llm::validate::Invalid;
use crate::judge::{Answer, Context, Question, QuestionKind};
use crate::text;

/// Characters of method view sent per character of raw step text allowed by a [`Detail`]
/// (22,400 characters, about 5,600 tokens, at [`Detail::FULL`]).
const VIEW_CHARS_PER_STEP_CHAR: usize = 40;
/// Characters of body every step shown keeps at least when a view is trimmed.
const MIN_BODY: usize = 60;
/// Most candidates named by one DeFA segment recall.
const MAX_SEGMENT_CANDIDATES: usize = attribution::SEGMENT_CANDIDATES;
/// Most propagation edges asked for in one call.
const MAX_EDGES: usize = 12;
/// Steps listed in a step-number enum of a schema; longer trajectories get a plain integer with
/// bounds (validation still rejects steps outside the trajectory).
const MAX_ENUM: usize = 400;

/// The attribution kinds, for [`super::KINDS`].
pub(super) static KINDS: [&dyn Kind; 7] = [
    &Attribution::LOCATE_ERROR,
    &Attribution::IS_DECISIVE,
    &Attribution::LOCATE_IN_RANGE,
    &Attribution::ANALYST_VOTE,
    &Attribution::SEGMENT_RECALL,
    &Attribution::TRACE_PROPAGATION,
    &Attribution::ADJUDICATE,
];

/// One attribution question kind: its name, prompt file and completion cap.
pub(super) struct Attribution {
    question: QuestionKind,
    template: &'static str,
    max_tokens: u32,
}

impl Attribution {
    const LOCATE_ERROR: Attribution =
        Attribution { question: QuestionKind::LocateError, template: include_str!("locate_error.md"), max_tokens: 160 };
    const IS_DECISIVE: Attribution =
        Attribution { question: QuestionKind::IsDecisive, template: include_str!("is_decisive.md"), max_tokens: 120 };
    const LOCATE_IN_RANGE: Attribution = Attribution {
        question: QuestionKind::LocateInRange,
        template: include_str!("locate_in_range.md"),
        max_tokens: 100,
    };
    const ANALYST_VOTE: Attribution =
        Attribution { question: QuestionKind::AnalystVote, template: include_str!("analyst_vote.md"), max_tokens: 520 };
    const SEGMENT_RECALL: Attribution = Attribution {
        question: QuestionKind::SegmentRecall,
        template: include_str!("segment_recall.md"),
        max_tokens: 60 + 80 * MAX_SEGMENT_CANDIDATES as u32,
    };
    const TRACE_PROPAGATION: Attribution = Attribution {
        question: QuestionKind::TracePropagation,
        template: include_str!("trace_propagation.md"),
        max_tokens: 30 + 24 * MAX_EDGES as u32,
    };
    const ADJUDICATE: Attribution =
        Attribution { question: QuestionKind::Adjudicate, template: include_str!("adjudicate.md"), max_tokens: 180 };
}

/// The method view of an attribution question.
fn view(q: &Question) -> &str {
    match q {
        Question::LocateError { context }
        | Question::IsDecisive { context, .. }
        | Question::LocateInRange { context, .. }
        | Question::AnalystVote { context, .. }
        | Question::SegmentRecall { context, .. }
        | Question::TracePropagation { context, .. }
        | Question::Adjudicate { context, .. } => context,
        _ => "",
    }
}

/// The trajectory's agents, then any other agent that acts in a step, in order of appearance.
fn agent_names(ctx: &Context<'_>) -> Vec<String> {
    let mut names: Vec<String> = ctx.trajectory.agents.iter().map(|a| a.name.clone()).collect();
    for s in &ctx.trajectory.steps {
        if !names.contains(&s.agent) {
            names.push(s.agent.clone());
        }
    }
    names
}

/// The schema of an agent name: one of the trajectory's agents.
fn agent_schema(ctx: &Context<'_>) -> Value {
    let names = agent_names(ctx);
    if names.is_empty() { short_string(80) } else { json!({"type": "string", "enum": names}) }
}

/// The schema of a step number in `range`.
fn step_schema(range: std::ops::Range<usize>) -> Value {
    if range.len() <= MAX_ENUM {
        steps_enum(range)
    } else {
        json!({"type": "integer", "minimum": range.start, "maximum": range.end.saturating_sub(1)})
    }
}

fn confidence() -> Value {
    json!({"type": "number", "minimum": 0, "maximum": 1})
}

/// Trims a method view to at most about `budget` characters.
///
/// Blocks start at lines beginning with `[step `; text before the first block is kept up to a
/// quarter of the budget. Each block keeps its header line and the start and end of its body
/// (two thirds head, one third tail: errors are often last) within an equal share of the budget,
/// at least [`MIN_BODY`] characters. When not every block fits with that minimum, blocks are kept
/// from both ends, alternately, and the middle ones are replaced by one line naming how many were
/// left out. A view within the budget is returned as is.
pub fn fit(view: &str, budget: usize) -> String {
    if view.chars().count() <= budget {
        return view.to_string();
    }
    let mut preamble = String::new();
    let mut blocks: Vec<(String, String)> = Vec::new();
    for line in view.lines() {
        if line.starts_with("[step ") {
            blocks.push((text::clip(line, 200), String::new()));
        } else if let Some((_, body)) = blocks.last_mut() {
            body.push_str(line);
            body.push('\n');
        } else {
            preamble.push_str(line);
            preamble.push('\n');
        }
    }
    let preamble = clip_middle(preamble.trim_end(), budget / 4);
    if blocks.is_empty() {
        return clip_middle(view, budget);
    }
    let rest = budget.saturating_sub(preamble.chars().count());
    // What a block costs at least: its header and the first characters of its body.
    let least = |(h, b): &(String, String)| h.chars().count() + 1 + b.trim().chars().count().min(MIN_BODY + 6);
    let (keep_head, keep_tail) = if blocks.iter().map(least).sum::<usize>() <= rest {
        (blocks.len(), 0)
    } else {
        // Keep whole blocks from both ends, alternately, while they fit beside the note line.
        let room = rest.saturating_sub(80);
        let (mut head, mut tail, mut used) = (0, 0, 0);
        while head + tail < blocks.len() {
            let next = if head <= tail { &blocks[head] } else { &blocks[blocks.len() - 1 - tail] };
            if used + least(next) > room && head + tail >= 2 {
                break;
            }
            used += least(next);
            if head <= tail { head += 1 } else { tail += 1 }
        }
        (head, tail)
    };
    let kept = keep_head + keep_tail;
    let headers: usize =
        blocks[..keep_head].iter().chain(&blocks[blocks.len() - keep_tail..]).map(|(h, _)| h.chars().count() + 1).sum();
    let share = (rest.saturating_sub(headers) / kept.max(1)).max(MIN_BODY);
    let show = |(h, b): &(String, String)| {
        let b = b.trim();
        if b.is_empty() { h.clone() } else { format!("{h}\n{}", clip_middle(b, share)) }
    };
    let mut out: Vec<String> = Vec::new();
    if !preamble.is_empty() {
        out.push(preamble);
    }
    out.extend(blocks[..keep_head].iter().map(show));
    let left = blocks.len() - kept;
    if left > 0 {
        out.push(format!("[… {left} steps left out to fit the model's context …]"));
    }
    out.extend(blocks[blocks.len() - keep_tail..].iter().map(show));
    out.join("\n")
}

/// `s` within `max` characters: two thirds of the start, ` […] `, one third of the end.
fn clip_middle(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let head: String = s.chars().take(max * 2 / 3).collect();
    let tail: String = s.chars().skip(n - max / 3).collect();
    format!("{head} […] {tail}")
}

impl Attribution {
    /// The question, the instruction and the placeholder values specific to the kind.
    fn specific(&self, ctx: &Context<'_>, q: &Question) -> Vec<(&'static str, String)> {
        let n = ctx.trajectory.steps.len();
        let agent_of = |s: usize| ctx.trajectory.steps.get(s).map_or_else(String::new, |s| s.agent.clone());
        match q {
            Question::IsDecisive { step, .. } => vec![("step", step.to_string()), ("agent", agent_of(*step))],
            Question::LocateInRange { range, split, .. } => vec![
                ("from", range.start.to_string()),
                ("last", range.end.saturating_sub(1).to_string()),
                ("split", split.to_string()),
                ("before_split", split.saturating_sub(1).to_string()),
            ],
            Question::AnalystVote { perspective, target, .. } => {
                let question = match target {
                    VoteTarget::Agent => "Which agent made the decisive error (the earliest mistake whose correction would have led to the correct answer)? Consider that no single agent may be clearly at fault. conclusion: single_agent, multi_agent or no_clear_fault. agents: the responsible agents, most responsible first. step: the decisive step if you can name it, else null.",
                    VoteTarget::Step => "At which step was the decisive error made (the earliest mistake whose correction would have led to the correct answer, not where the failure became visible)? Judge every step, whoever took it. conclusion: single_agent, multi_agent or no_clear_fault. agents: the agent of that step first. step: that step.",
                    VoteTarget::Both => "Which agent made the decisive error, and at which step (the earliest mistake whose correction would have led to the correct answer)? conclusion: single_agent, multi_agent or no_clear_fault. agents: the responsible agents, most responsible first. step: the decisive step.",
                }
                .to_string();
                vec![
                    ("perspective", perspective.as_str().to_string()),
                    ("instruction", perspective.instruction().to_string()),
                    ("question", question),
                ]
            }
            Question::SegmentRecall { segment, .. } => vec![
                ("from", segment.start.to_string()),
                ("last", segment.end.saturating_sub(1).min(n.saturating_sub(1)).to_string()),
                ("max", MAX_SEGMENT_CANDIDATES.to_string()),
            ],
            Question::TracePropagation { candidates, .. } => vec![
                ("candidates", list(candidates)),
                ("last", n.saturating_sub(1).to_string()),
                ("max", MAX_EDGES.to_string()),
            ],
            Question::Adjudicate { candidates, .. } => vec![
                ("candidates", list(candidates)),
                ("categories", ErrorCategory::TAXONOMY.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")),
            ],
            _ => Vec::new(),
        }
    }
}

fn list(steps: &[usize]) -> String {
    steps.iter().map(|s| format!("step {s}")).collect::<Vec<_>>().join(", ")
}

/// The steps of a segment recall that exist in the trajectory.
fn segment_steps(ctx: &Context<'_>, q: &Question) -> Vec<usize> {
    match q {
        Question::SegmentRecall { segment, .. } => {
            segment.clone().filter(|&i| i < ctx.trajectory.steps.len()).collect()
        }
        _ => Vec::new(),
    }
}

impl Kind for Attribution {
    fn question(&self) -> QuestionKind {
        self.question
    }
    fn template(&self) -> &'static str {
        self.template
    }
    fn system(&self) -> &'static str {
        super::SYSTEM
    }
    /// A segment with no step has nothing to choose from: no candidates, without a call.
    fn skip(&self, ctx: &Context<'_>, q: &Question, _: &Known) -> Option<Answer> {
        (matches!(q, Question::SegmentRecall { .. }) && segment_steps(ctx, q).is_empty())
            .then(|| Answer::Candidates(Vec::new()))
    }
    fn fill(&self, ctx: &Context<'_>, batch: &[Question], _: &Known, d: Detail) -> Vec<(&'static str, String)> {
        let Some(q) = batch.first() else { return Vec::new() };
        let budget = d.step_chars * VIEW_CHARS_PER_STEP_CHAR;
        let mut vars = vec![
            ("task", task(ctx)),
            ("outcome", outcome(ctx)),
            ("agents", agent_names(ctx).join(", ")),
            ("context", fit(&text::sanitize(view(q)), budget)),
        ];
        vars.extend(self.specific(ctx, q));
        vars
    }
    fn schema(&self, ctx: &Context<'_>, batch: &[Question], _: Detail) -> Value {
        let n = ctx.trajectory.steps.len();
        let reason = short_string(200);
        let Some(q) = batch.first() else { return json!({}) };
        match q {
            Question::LocateError { .. } => json!({
                "type": "object",
                "properties": {"agent": agent_schema(ctx), "step": step_schema(0..n), "reason": reason, "confidence": confidence()},
                "required": ["agent", "step", "reason", "confidence"],
                "additionalProperties": false,
            }),
            Question::IsDecisive { .. } => json!({
                "type": "object",
                "properties": {"decisive": {"type": "boolean"}, "reason": reason, "confidence": confidence()},
                "required": ["decisive", "reason", "confidence"],
                "additionalProperties": false,
            }),
            Question::LocateInRange { .. } => json!({
                "type": "object",
                "properties": {"half": {"type": "string", "enum": ["first", "second"]}, "reason": reason},
                "required": ["half", "reason"],
                "additionalProperties": false,
            }),
            Question::AnalystVote { .. } => json!({
                "type": "object",
                "properties": {
                    "conclusion": {"type": "string", "enum": ["single_agent", "multi_agent", "no_clear_fault"]},
                    "agents": {"type": "array", "items": agent_schema(ctx), "maxItems": 3},
                    "step": {"anyOf": [step_schema(0..n), {"type": "null"}]},
                    "confidence": confidence(),
                    "reasoning": short_string(300),
                    "evaluations": {"type": "array", "maxItems": 4, "items": {
                        "type": "object",
                        "properties": {"agent": agent_schema(ctx), "likelihood": confidence(), "evidence": short_string(160)},
                        "required": ["agent", "likelihood", "evidence"],
                        "additionalProperties": false,
                    }},
                    "alternatives": {"type": "array", "maxItems": 2, "items": {
                        "type": "object",
                        "properties": {
                            "agent": agent_schema(ctx),
                            "step": {"anyOf": [step_schema(0..n), {"type": "null"}]},
                            "likelihood": confidence(),
                            "reason": short_string(160),
                        },
                        "required": ["agent", "step", "likelihood", "reason"],
                        "additionalProperties": false,
                    }},
                },
                "required": ["conclusion", "agents", "step", "confidence", "reasoning", "evaluations", "alternatives"],
                "additionalProperties": false,
            }),
            Question::SegmentRecall { .. } => candidates_schema(segment_steps(ctx, q), MAX_SEGMENT_CANDIDATES),
            Question::TracePropagation { .. } => json!({
                "type": "object",
                "properties": {"edges": {
                    "type": "array",
                    "maxItems": MAX_EDGES,
                    "items": {
                        "type": "object",
                        "properties": {
                            "from": step_schema(0..n),
                            "to": step_schema(0..n),
                            "effect": {"type": "string", "enum": ["continued", "amplified", "corrected"]},
                        },
                        "required": ["from", "to", "effect"],
                        "additionalProperties": false,
                    },
                }},
                "required": ["edges"],
                "additionalProperties": false,
            }),
            Question::Adjudicate { candidates, .. } => {
                let categories: Vec<&str> = ErrorCategory::TAXONOMY.iter().map(|c| c.as_str()).collect();
                let step = if candidates.is_empty() { step_schema(0..n) } else { steps_enum(candidates.clone()) };
                json!({
                    "type": "object",
                    "properties": {
                        "step": step,
                        "category": {"type": "string", "enum": categories},
                        "reason": reason,
                        "confidence": confidence(),
                    },
                    "required": ["step", "category", "reason", "confidence"],
                    "additionalProperties": false,
                })
            }
            _ => json!({}),
        }
    }
    fn max_tokens(&self, _: &[Question]) -> u32 {
        self.max_tokens
    }
    fn parse(
        &self,
        ctx: &Context<'_>,
        batch: &[Question],
        _: Detail,
        v: &Value,
    ) -> Result<Vec<Result<Answer, Invalid>>, Invalid> {
        let Some(q) = batch.first() else { return Err(Invalid::WrongQuestion("attribution")) };
        if let Question::SegmentRecall { .. } = q {
            return validate::candidates(&segment_steps(ctx, q), v).map(|c| vec![Ok(Answer::Candidates(c))]);
        }
        match attribution::parse_answer(q, v, ctx.trajectory.steps.len()) {
            Some(Ok(a)) => Ok(vec![Ok(a)]),
            Some(Err(e)) => Err(e.into()),
            None => Err(Invalid::WrongQuestion("attribution")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(n: usize, body: usize) -> String {
        (0..n).map(|i| format!("[step {i}] A (message):\n{}", "x".repeat(body))).collect::<Vec<_>>().join("\n\n")
    }

    #[test]
    fn a_view_within_the_budget_is_unchanged() {
        let v = log(3, 10);
        assert_eq!(fit(&v, 1000), v);
    }

    #[test]
    fn long_bodies_are_clipped_and_every_header_kept() {
        let v = format!("Overview line\n{}", log(10, 2000));
        let out = fit(&v, 3000);
        assert!(out.chars().count() <= 3400, "{} chars", out.chars().count());
        assert!(out.starts_with("Overview line\n[step 0] A (message):"));
        for i in 0..10 {
            assert!(out.contains(&format!("[step {i}] A (message):")), "step {i} kept");
        }
        assert!(out.contains(" […] "));
    }

    #[test]
    fn when_headers_do_not_fit_middle_steps_are_left_out_and_counted() {
        let out = fit(&log(500, 300), 4000);
        assert!(out.chars().count() <= 4600, "{} chars", out.chars().count());
        assert!(out.starts_with("[step 0] A (message):"));
        assert!(out.contains("[step 499] A (message):"));
        let left: usize = out
            .lines()
            .find_map(|l| l.strip_prefix("[… ").and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()))
            .expect("a note of the steps left out");
        let kept = out.lines().filter(|l| l.starts_with("[step ")).count();
        assert_eq!(left + kept, 500);
    }

    #[test]
    fn text_without_step_headers_is_clipped_in_the_middle() {
        let out = fit(&"y".repeat(10_000), 900);
        assert_eq!(out.chars().count(), 600 + 300 + " […] ".chars().count());
    }
}
