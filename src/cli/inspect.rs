//! `falat inspect TRACE [--format F] [--json]`: the trajectory as loaded.
//!
//! Text output: a header block (file, format, trajectory id, task, expected and observed output,
//! agents, gold label, metadata), one line per step (`index  agent  kind  first line`, the gold
//! step marked with `*`, another step the format marks as an error, or a tool result whose text
//! opens with an error ([`crate::hierarchy::error_lead`]) or counts failed tests, with `!`, one the
//! format marks with a warning with `~`), then, when anything was, how much was skipped (records dropped with a
//! diagnostic, lines that are not steps by design) and the diagnostics. Every piece of trace text is passed through
//! [`crate::text::sanitize`] first, so a trace cannot drive the terminal. `--json` prints an
//! [`InspectReport`] instead (strings whole, with C1 controls and bidi overrides written as
//! `\uXXXX` escapes, [`crate::text::escape_json_controls`]); its serde types live here, at the
//! edge, not in the model. `-` as the trace reads standard input.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde::Serialize;

use crate::ingest::{
    FormatChoice, Loaded, Skipped,
    fs::{STDIN_NAME, apply_label_files, apply_task, is_stdin, load_input},
};
use crate::model::{Step, StepKind, Trajectory};
use crate::text::{clip, first_line, sanitize};

/// Widest agent column, in characters.
const AGENT_WIDTH: usize = 32;
/// Widest step summary, in characters.
const SUMMARY_WIDTH: usize = 100;
/// Widest header value (task, outputs, reason), in characters.
const VALUE_WIDTH: usize = 160;

/// Arguments of `falat inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The trace file (JSON or JSONL, or an Inspect AI `.eval` archive), `-` for standard input.
    pub trace: PathBuf,
    /// The trace format: auto, who-and-when (either subset), who-and-when-algorithm,
    /// who-and-when-hand, magentic-one, swe-agent, mini-swe-agent, openhands, smolagents,
    /// pydantic-ai, strands, otel-genai, openinference, any-agent, claude-code, codex, langsmith,
    /// langfuse, openai-agents, codex-exec, gemini-cli, google-adk, mlflow, inspect-ai, tau-bench,
    /// openai-chat or falat-jsonl. Also `--trace-format`, as in
    /// `falat diagnose`, where `--format` is the report's.
    #[arg(long, visible_alias = "trace-format", short = 'f', value_name = "F", default_value = "auto", value_parser = FormatChoice::parse)]
    pub format: FormatChoice,
    /// Print the trajectory as JSON (full step contents, links, diagnostics) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Label files (AgentRx ground truth, or falat labels JSONL; see docs/LABELS.md): their gold
    /// step and agent replace the trace's own, and the steps they name are marked.
    #[arg(long, value_name = "FILE")]
    pub labels: Vec<PathBuf>,
    /// The task, when the trace does not record it.
    #[command(flatten)]
    pub task: super::task::TaskArgs,
}

/// Loads the trace and writes it to `out` as text or JSON; returns exit code 0.
///
/// # Errors
/// The load error (naming the file, and line and column where they apply), or a failed write.
pub fn run(args: &InspectArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let mut loaded = load_input(&args.trace, &args.format)?;
    for note in apply_label_files(&args.labels, &mut loaded.trajectories)? {
        super::note(&note);
    }
    if let Some(task) = args.task.read()? {
        for note in apply_task(&task, &mut loaded.trajectories) {
            super::note(&note);
        }
    }
    let shown = if is_stdin(&args.trace) { STDIN_NAME.to_string() } else { args.trace.display().to_string() };
    if args.json {
        let report = InspectReport::new(&shown, &loaded);
        let text = serde_json::to_string_pretty(&report).context("cannot write the report")?;
        // serde_json escapes ESC and the other C0 controls; the C1 controls and bidi overrides
        // of trace text are escaped too, so the JSON can be printed to a terminal.
        writeln!(out, "{}", crate::text::escape_json_controls(&text))?;
    } else {
        out.write_all(render_text(&shown, &loaded).as_bytes())?;
    }
    Ok(0)
}

/// The text view of a load (see the module doc); safe to print to a terminal.
pub fn render_text(path: &str, loaded: &Loaded) -> String {
    let mut s = String::new();
    field(&mut s, "file", &sanitize(path));
    field(&mut s, "format", loaded.format.as_str());
    for t in &loaded.trajectories {
        render_trajectory(&mut s, t);
    }
    let skipped = loaded.skipped();
    if skipped != Skipped::default() {
        let mut parts = Vec::new();
        if skipped.records > 0 {
            parts.push(format!("{} (see diagnostics)", crate::text::count(skipped.records, "record", "records")));
        }
        if skipped.not_steps > 0 {
            parts.push(crate::text::count(skipped.not_steps, "line that is not a step", "lines that are not steps"));
        }
        field(&mut s, "skipped", &parts.join(", "));
    }
    render_diagnostics(&mut s, &loaded.described());
    s
}

fn field(s: &mut String, name: &str, value: &str) {
    s.push_str(&format!("{name:<11} {value}\n"));
}

fn render_trajectory(s: &mut String, t: &Trajectory) {
    field(s, "trajectory", &first_line(&t.id, VALUE_WIDTH));
    let none = || "(none)".to_string();
    match t.task.trim().is_empty() {
        true => field(s, "task", "(none recorded; --task or --task-file gives it)"),
        false => field(s, "task", &first_line(&t.task, VALUE_WIDTH)),
    }
    let expected = t.expected_output.as_deref().map(|o| first_line(o, VALUE_WIDTH));
    field(s, "expected", &expected.unwrap_or_else(none));
    let observed = t.observed_output.as_deref().map(|o| first_line(o, VALUE_WIDTH));
    field(s, "observed", &observed.unwrap_or_else(none));
    let agents: Vec<String> = t.agents.iter().map(|a| first_line(&a.name, 60)).collect();
    field(s, "agents", &agents.join(", "));
    field(s, "gold", &gold_text(t));
    if !t.metadata.is_empty() {
        let meta: Vec<String> =
            t.metadata.iter().map(|(k, v)| format!("{}={}", sanitize(k), first_line(v, 60))).collect();
        field(s, "metadata", &meta.join(", "));
    }
    field(s, "steps", &t.steps.len().to_string());
    render_steps(s, t);
}

fn gold_text(t: &Trajectory) -> String {
    let Some(g) = &t.gold else {
        return "(none)".into();
    };
    let mut text = first_line(&g.agent, AGENT_WIDTH);
    match g.step {
        Some(step) => text.push_str(&format!(", step {step}")),
        None => text.push_str(", no step"),
    }
    if let Some(c) = &g.category {
        text.push_str(&format!(" [{}]", first_line(c, 40)));
    }
    if let Some(r) = g.reason.as_deref().filter(|r| !r.trim().is_empty()) {
        text.push_str(&format!(": {}", first_line(r, VALUE_WIDTH)));
    }
    text
}

fn render_steps(s: &mut String, t: &Trajectory) {
    let index_width = t.steps.len().saturating_sub(1).to_string().len().max(5);
    let agent_width =
        t.steps.iter().map(|st| first_line(&st.agent, AGENT_WIDTH).chars().count()).max().unwrap_or(0).max(5);
    let gold = t.gold.as_ref().and_then(|g| g.step);
    s.push_str(&format!("  {:>index_width$}  {:<agent_width$}  {:<11}  content\n", "index", "agent", "kind"));
    for st in &t.steps {
        // A test run whose runner counts failures failed, whatever exit status it reports; a tool
        // result whose text opens with an error (`Error: …`, `{"error": …}`, a traceback) failed
        // too when the format has no error flag of its own: the analysis reads both as errors.
        let failed = st.is_error
            || st.kind == StepKind::ToolResult
                && (crate::evidence::summary::test_summary_passed(&st.content) == Some(false)
                    || crate::hierarchy::error_lead(&st.content));
        let mark = match (gold == Some(st.index), failed) {
            (true, _) => '*',
            (false, true) => '!',
            (false, false) if st.warning.is_some() => '~',
            (false, false) => ' ',
        };
        let agent = first_line(&st.agent, AGENT_WIDTH);
        s.push_str(&format!(
            "{mark} {:>index_width$}  {agent:<agent_width$}  {:<11}  {}\n",
            st.index,
            st.kind.as_str(),
            summary(st)
        ));
    }
}

/// The first line of a step's content, sanitised and clipped; a delegation names its target, a
/// tool call its tool (`get_order({"order_id": "58213"})`, [`crate::report::step_line`]).
pub fn summary(step: &Step) -> String {
    let line = crate::report::step_line(step, SUMMARY_WIDTH);
    match (&step.kind, &step.delegate_to) {
        (StepKind::Delegation, Some(to)) => clip(&format!("-> {}: {line}", first_line(to, AGENT_WIDTH)), SUMMARY_WIDTH),
        _ => line,
    }
}

/// The diagnostics as [`Loaded::described`] words them (a skipped record with its place among
/// the steps).
fn render_diagnostics(s: &mut String, diagnostics: &[String]) {
    if diagnostics.is_empty() {
        field(s, "diagnostics", "none");
        return;
    }
    field(s, "diagnostics", &diagnostics.len().to_string());
    for d in diagnostics {
        s.push_str(&format!("  {}\n", first_line(d, 300)));
    }
}

/// The `--json` output of `falat inspect`.
#[derive(Debug, Serialize)]
pub struct InspectReport<'a> {
    /// The file as given on the command line.
    pub file: &'a str,
    /// The format it was read as (`--format` names).
    pub format: &'static str,
    /// The trajectories, in file order.
    pub trajectories: Vec<TrajectoryReport<'a>>,
    /// What did not become steps: records dropped with a diagnostic, and lines or messages of
    /// the format that are not steps by design.
    pub skipped: SkippedReport,
    /// Problems that did not stop the load.
    pub diagnostics: Vec<DiagnosticReport>,
}

/// The `skipped` counts of the JSON report.
#[derive(Debug, Serialize)]
pub struct SkippedReport {
    /// Records dropped with a diagnostic (unreadable, or sent twice and loaded once).
    pub records: usize,
    /// Lines or messages that are not steps by design (counted per type in the metadata).
    pub not_steps: usize,
}

impl<'a> InspectReport<'a> {
    /// The report of `loaded`, read from `file`.
    pub fn new(file: &'a str, loaded: &'a Loaded) -> Self {
        InspectReport {
            file,
            format: loaded.format.as_str(),
            trajectories: loaded.trajectories.iter().map(TrajectoryReport::new).collect(),
            skipped: {
                let k = loaded.skipped();
                SkippedReport { records: k.records, not_steps: k.not_steps }
            },
            diagnostics: {
                let places = loaded.skip_places();
                let place = |i: usize| places.iter().find(|(k, _)| *k == i).map(|(_, p)| p);
                loaded
                    .diagnostics
                    .iter()
                    .enumerate()
                    .map(|(i, d)| DiagnosticReport {
                        line: d.line,
                        message: d.message.clone(),
                        after_step: place(i).and_then(|p| p.after),
                        before_step: place(i).and_then(|p| p.before),
                    })
                    .collect()
            },
        }
    }
}

/// One trajectory in the JSON report.
#[derive(Debug, Serialize)]
pub struct TrajectoryReport<'a> {
    /// The trajectory id.
    pub id: &'a str,
    /// The task text.
    pub task: &'a str,
    /// The reference answer, when known.
    pub expected_output: Option<&'a str>,
    /// The answer the run gave, when found.
    pub observed_output: Option<&'a str>,
    /// Agents in order of first appearance.
    pub agents: Vec<AgentReport<'a>>,
    /// The gold label, when the data set has one.
    pub gold: Option<GoldReport<'a>>,
    /// Other facts of the format, sorted by key.
    pub metadata: BTreeMap<&'a str, &'a str>,
    /// The steps, `steps[i].index == i`.
    pub steps: Vec<StepReport<'a>>,
    /// Protocol links between steps (0-based indices).
    pub links: Vec<LinkReport>,
}

impl<'a> TrajectoryReport<'a> {
    fn new(t: &'a Trajectory) -> Self {
        TrajectoryReport {
            id: &t.id,
            task: &t.task,
            expected_output: t.expected_output.as_deref(),
            observed_output: t.observed_output.as_deref(),
            agents: t.agents.iter().map(|a| AgentReport { name: &a.name, role: a.role.as_deref() }).collect(),
            gold: t.gold.as_ref().map(|g| GoldReport {
                agent: &g.agent,
                step: g.step,
                reason: g.reason.as_deref(),
                category: g.category.as_deref(),
            }),
            metadata: t.metadata.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
            steps: t.steps.iter().map(StepReport::new).collect(),
            links: t.links.iter().map(|l| LinkReport { from: l.from, to: l.to, kind: l.kind.as_str() }).collect(),
        }
    }
}

/// An agent in the JSON report.
#[derive(Debug, Serialize)]
pub struct AgentReport<'a> {
    /// The agent name.
    pub name: &'a str,
    /// Its system prompt or description, when known.
    pub role: Option<&'a str>,
}

/// The gold label in the JSON report.
#[derive(Debug, Serialize)]
pub struct GoldReport<'a> {
    /// The responsible agent.
    pub agent: &'a str,
    /// The decisive step, 0-based.
    pub step: Option<usize>,
    /// The annotator's reason.
    pub reason: Option<&'a str>,
    /// The error category.
    pub category: Option<&'a str>,
}

/// One step in the JSON report.
#[derive(Debug, Serialize)]
pub struct StepReport<'a> {
    /// 0-based position.
    pub index: usize,
    /// The actor.
    pub agent: &'a str,
    /// `message`, `thought`, `tool_call`, `tool_result` or `delegation`.
    pub kind: &'static str,
    /// The raw role string of the format.
    pub role: &'a str,
    /// The delegate of a delegation.
    pub delegate_to: Option<&'a str>,
    /// The tool of a tool call or result.
    pub tool_name: Option<&'a str>,
    /// The format's own id of the step.
    pub id: Option<&'a str>,
    /// The format's parent id.
    pub parent: Option<&'a str>,
    /// Reference ids (tool-call ids, hand-off targets).
    pub refs: &'a [String],
    /// The timestamp as the format writes it.
    pub timestamp: Option<&'a str>,
    /// Input and output tokens, when given.
    pub tokens: Option<[u64; 2]>,
    /// Whether the format marks the step as an error.
    pub is_error: bool,
    /// The warning the format marks the step with (Langfuse `level: WARNING`: its
    /// `statusMessage`, or `WARNING`); left out when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<&'a str>,
    /// The step in one line as the text view shows it: the first line of the content, sanitised;
    /// a tool call whose content lacks its tool's name as `tool_name(arguments)`.
    pub summary: String,
    /// The full content, unmodified.
    pub content: &'a str,
}

impl<'a> StepReport<'a> {
    fn new(s: &'a Step) -> Self {
        StepReport {
            index: s.index,
            agent: &s.agent,
            kind: s.kind.as_str(),
            role: &s.role,
            delegate_to: s.delegate_to.as_deref(),
            tool_name: s.tool_name.as_deref(),
            id: s.ids.id.as_deref(),
            parent: s.ids.parent.as_deref(),
            refs: &s.ids.refs,
            timestamp: s.timestamp.as_deref(),
            tokens: s.tokens.map(|t| [t.input, t.output]),
            is_error: s.is_error,
            warning: s.warning.as_deref(),
            summary: summary(s),
            content: &s.content,
        }
    }
}

/// A protocol link in the JSON report.
#[derive(Debug, Serialize)]
pub struct LinkReport {
    /// The earlier step.
    pub from: usize,
    /// The later step.
    pub to: usize,
    /// `tool_result`, `delegation`, `parent` or `execution`.
    pub kind: &'static str,
}

/// A diagnostic in the JSON report.
#[derive(Debug, Serialize)]
pub struct DiagnosticReport {
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// What was found and done.
    pub message: String,
    /// For a record left out: the last step read before it (0-based), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_step: Option<usize>,
    /// For a record left out: the first step read after it (0-based), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_step: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::parse;

    #[test]
    fn text_view_strips_escapes_and_marks_gold() {
        let jsonl = "{\"falat\": 1, \"task\": \"t\\u001b[2Jask\", \"gold\": {\"agent\": \"b\", \"step\": 1}}\n\
                     {\"agent\": \"a\\u001b]0;x\\u0007\", \"content\": \"\\n\\nhello\\u001b[31m red\\nsecond\"}\n\
                     {\"agent\": \"b\", \"kind\": \"delegation\", \"delegate_to\": \"a\", \"content\": \"go\"}\n";
        let loaded = parse("x.jsonl", jsonl.as_bytes(), None).unwrap();
        let text = render_text("x.jsonl", &loaded);
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text:?}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[3], "task        task");
        assert_eq!(lines[6], "agents      a, b");
        assert_eq!(lines[7], "gold        b, step 1");
        assert_eq!(lines[10], "      0  a      message      hello red");
        assert_eq!(lines[11], "*     1  b      delegation   -> a: go");
        assert_eq!(lines[12], "diagnostics none");
    }
}
