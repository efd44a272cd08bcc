//! `falat diagnose TRACE... [--method M] [--format md|json|jsonl] [-o PATH] [--no-ground-truth]`:
//! the diagnosis report of each trajectory and method (Markdown for people; for programs a JSON
//! array of `falat.diagnosis/v1` objects, or JSON Lines, one object per line, see
//! `docs/REPORT_SCHEMA.md`). `-` as a trace reads standard input; `-o -` is standard output.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::diagnosis::Diagnosis;
use crate::fsutil::is_stdout;
use crate::ingest::{
    FormatChoice,
    fs::{STDIN_NAME, apply_label_sets, apply_task, falat_file_kind, is_stdin, load_input, read_label_files},
};
use crate::methods::{self, Method, MethodOptions};
use crate::model::Trajectory;
use crate::report::{self, LOADING};

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Markdown, for people.
    Md,
    /// JSON, for programs: always an array of `falat.diagnosis/v1` objects, one per trajectory
    /// and method (one element for one trace).
    Json,
    /// JSON Lines: one `falat.diagnosis/v1` object per line, per trajectory and method.
    Jsonl,
    /// OTLP/JSON log records (`ExportLogsServiceRequest`, for `POST /v1/logs` of an OTLP
    /// receiver) on the decisive step's span (docs/EXPORTS.md).
    Otlp,
    /// Arize Phoenix span annotations (`POST /v1/span_annotations` body) on the decisive step's
    /// span.
    Phoenix,
    /// Langfuse scores (a JSON array of `POST /api/public/scores` bodies) on the trace and the
    /// decisive step's observation.
    Langfuse,
}

/// Arguments of `falat diagnose`.
#[derive(Debug, Args)]
pub struct DiagnoseArgs {
    /// Trace files (JSON or JSONL), `-` for standard input; a file holding several trajectories
    /// gives several reports. Among several files, one that cannot be read is named on stderr
    /// and skipped, the others are reported, and the exit status is 2. falat's own files
    /// (`*.falat.json` overrides, their `.bak` backups and `.lock` files, exported reports, temporary files) are
    /// skipped with a note, so `diagnose dir/*.json` takes the traces only.
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// Report format: md or json, or the verdict as the body a tracing tool's API takes (otlp,
    /// phoenix, langfuse; see docs/EXPORTS.md). An export needs the trace's span or trace ids and
    /// fails (exit 2) naming what is missing.
    #[arg(long, value_enum, default_value = "md")]
    pub format: ReportFormat,
    /// Write the report to this file instead of standard output: a regular file is replaced
    /// atomically, a symbolic link is written through (the link stays), a device or FIFO is
    /// written in place; `-` is standard output.
    #[arg(short = 'o', long = "output", visible_alias = "out", value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Do not give the expected output `o*` to the analysis, even when the trace has one.
    #[arg(long)]
    pub no_ground_truth: bool,
    /// Label files (AgentRx ground truth, or falat labels JSONL; see docs/LABELS.md) whose gold
    /// step and agent the report shows beside the verdict. The analysis never reads them.
    #[arg(long, value_name = "FILE")]
    pub labels: Vec<PathBuf>,
    /// The trace format (default: detected).
    #[arg(long = "trace-format", value_name = "F", default_value = "auto", value_parser = FormatChoice::parse)]
    pub trace_format: FormatChoice,
    /// Half-width of the local re-search window, in steps (FALAT).
    #[arg(long, default_value_t = 3)]
    pub window: usize,
    /// Methods to run, comma-separated: falat, echo, defa, all-at-once, step-by-step,
    /// binary-search, random, or all; one report per trajectory and method.
    #[arg(long, short = 'm', default_value = "falat", value_parser = Method::parse_list)]
    pub method: std::vec::Vec<Method>,
    /// Seed of the random baseline and of ECHO's analyst draw.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Show what the LLM judge would send to the server and its token count, send nothing
    /// (`--judge llm` or no `--judge`).
    #[arg(long)]
    pub dry_run: bool,
    /// The task, when the trace does not record it.
    #[command(flatten)]
    pub task: super::task::TaskArgs,
    /// The judge.
    #[command(flatten)]
    pub judge: super::judge::JudgeArgs,
    /// `-v` given to `falat` (set by the caller, not an option of its own).
    #[arg(skip)]
    pub verbose: u8,
}

/// Diagnoses every trajectory of every trace and writes the reports; returns exit code 0.
///
/// # Errors
/// A trace that cannot be loaded (naming the file and place), or a failed write.
pub fn run(args: &DiagnoseArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    if args.dry_run {
        return dry_run(args, out);
    }
    // A line per LLM question on stderr, on a terminal or with -v.
    let progress = args.verbose > 0 || std::io::IsTerminal::is_terminal(&std::io::stderr());
    let judge = args.judge.build_with_progress(progress)?;
    let mut results: Vec<(Trajectory, Diagnosis)> = Vec::new();
    // A file that cannot be read is named and skipped; the others are still diagnosed, and the
    // exit status says that one failed (as ripgrep does for an unreadable file among many).
    let mut failed = 0usize;
    // Label files are read once, before any trace: a bad one stops the command before work is
    // done, and its skipped records are said once, not once per trace.
    let (label_sets, skipped) = read_label_files(&args.labels)?;
    for note in skipped {
        super::note(&note);
    }
    let task = args.task.read()?;
    let traces = trace_paths(&args.traces)?;
    let several = traces.len() > 1;
    let progress = Progress::new(traces.len() * args.method.len());
    for path in &traces {
        let shown = shown_trace(path);
        let mut loaded = match load_input(path, &args.trace_format) {
            Ok(l) => l,
            Err(e) if several => {
                progress.suspend(|| super::note(&format!("{e}; skipped")));
                progress.skip(args.method.len());
                failed += 1;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        // The TUI's overrides beside the trace are the user's decisions; this report is the
        // machine's alone, so say so rather than let a pinned step seem ignored.
        let saved = crate::ingest::fs::beside(path, crate::ingest::fs::OVERRIDES_SUFFIX);
        if !is_stdin(path) && saved.is_file() {
            progress.suspend(|| {
                super::note(&format!(
                    "{}: overrides saved by the TUI are not applied here; this report is the machine's verdict (the TUI's export, e, writes one with them)",
                    saved.display()
                ))
            });
        }
        progress.suspend(|| {
            for d in &loaded.diagnostics {
                tracing::warn!("{}", crate::text::sanitize(&format!("{shown}: {d}")));
            }
        });
        for note in apply_label_sets(&label_sets, &mut loaded.trajectories) {
            // Among several traces, say which one the note is about.
            progress.suspend(|| match several {
                false => super::note(&note),
                true => super::note(&format!("{shown}: {note}")),
            });
        }
        if let Some(task) = &task {
            for note in apply_task(task, &mut loaded.trajectories) {
                progress.suspend(|| match several {
                    false => super::note(&note),
                    true => super::note(&format!("{shown}: {note}")),
                });
            }
        }
        // What the loader skipped or guessed belongs in the report too, or a truncated file
        // reads like a whole one.
        let load_notes = load_warnings(&loaded.described());
        let opts = method_options(args);
        let n = loaded.trajectories.len();
        progress.add(n.saturating_sub(1) * args.method.len());
        for t in loaded.trajectories {
            for m in &args.method {
                progress.start(&t.id, m.as_str());
                let mut d = methods::run(*m, &t, judge.as_ref(), &opts);
                d.warnings.splice(0..0, load_notes.iter().cloned());
                if t.task.trim().is_empty() {
                    d.warnings.insert(load_notes.len(), NO_TASK.to_string());
                }
                results.push((t.clone(), d));
            }
        }
        if n == 0 {
            progress.skip(args.method.len());
        }
    }
    progress.finish();
    if results.is_empty() && failed > 0 {
        anyhow::bail!("none of the {} trace files could be read", traces.len());
    }
    let text = render(&results, args.format)?;
    match &args.output {
        Some(path) if !is_stdout(path) => {
            crate::fsutil::write_output(path, text.as_bytes())?;
            writeln!(out, "wrote {}", crate::fsutil::shown(path))?;
        }
        _ => out.write_all(text.as_bytes())?,
    }
    Ok(if failed > 0 { 2 } else { 0 })
}

/// The report's warning for a trajectory that records no task: the rules that compare the run
/// with what was asked (the reproduction, the expected value, the user's constraints) read nothing.
pub const NO_TASK: &str = "the trace records no task (the user's request): what compares the run with what was asked read nothing; give it with --task or --task-file";

/// At most this many of a file's load diagnostics are copied into each report's warnings.
const MAX_LOAD_WARNINGS: usize = 20;

/// The load diagnostics of a trace file as report warnings (`loading: line 9: skipped: …`),
/// sanitised, at most [`MAX_LOAD_WARNINGS`] and then how many more there were.
fn load_warnings<D: std::fmt::Display>(diagnostics: &[D]) -> Vec<String> {
    let mut out: Vec<String> =
        diagnostics.iter().take(MAX_LOAD_WARNINGS).map(|d| crate::text::sanitize(&format!("{LOADING}{d}"))).collect();
    if diagnostics.len() > MAX_LOAD_WARNINGS {
        out.push(format!(
            "{LOADING}{} more diagnostics (falat inspect lists them all)",
            diagnostics.len() - MAX_LOAD_WARNINGS
        ));
    }
    out
}

/// The traces to read: `paths` without falat's own files ([`falat_file_kind`]), each left out
/// with a note on stderr (a shell glob such as `dir/*.json` also matches the overrides
/// `TRACE.falat.json`).
///
/// # Errors
/// When nothing but falat's own files is left.
fn trace_paths(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut keep = Vec::with_capacity(paths.len());
    for p in paths {
        match falat_file_kind(p).filter(|_| !is_stdin(p)) {
            Some(kind) => super::note(&format!("{}: falat's own {kind}, not a trace; skipped", p.display())),
            None => keep.push(p.clone()),
        }
    }
    anyhow::ensure!(!keep.is_empty(), "no trace among the files given: each is one of falat's own files");
    Ok(keep)
}

/// A trace path as messages show it: sanitised, `<stdin>` for `-`.
fn shown_trace(path: &std::path::Path) -> String {
    if is_stdin(path) { STDIN_NAME.to_string() } else { crate::fsutil::shown(path) }
}

/// The progress line of `diagnose` on stderr: how many of the trajectory × method runs are done
/// and which one is running, with a spinner and the elapsed time that keep moving during a long
/// run. Drawn only when stderr is a terminal, and cleared at the end.
struct Progress {
    bar: indicatif::ProgressBar,
    started: std::cell::Cell<bool>,
}

impl Progress {
    fn new(total: usize) -> Progress {
        use std::io::IsTerminal;
        let target = if std::io::stderr().is_terminal() {
            indicatif::ProgressDrawTarget::stderr()
        } else {
            indicatif::ProgressDrawTarget::hidden()
        };
        let bar = indicatif::ProgressBar::with_draw_target(Some(total as u64), target);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} diagnosing {pos}/{len} ({elapsed}) {wide_msg}")
                .expect("valid template"),
        );
        if !bar.is_hidden() {
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
        }
        Progress { bar, started: std::cell::Cell::new(false) }
    }

    /// `n` more runs (a file that holds several trajectories).
    fn add(&self, n: usize) {
        self.bar.inc_length(n as u64);
    }

    /// `n` runs that will not happen (a file skipped).
    fn skip(&self, n: usize) {
        self.bar.inc(n as u64);
    }

    /// A run starts: the previous one is done.
    fn start(&self, trajectory: &str, method: &str) {
        if self.started.replace(true) {
            self.bar.inc(1);
        }
        self.bar.set_message(format!("{} ({method})", crate::text::clip(&crate::text::sanitize(trajectory), 60)));
    }

    /// Runs `f` (which prints to stderr) with the line cleared, then draws it again.
    fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// `--dry-run`: the requests the LLM judge would send for each trajectory, with token counts.
#[cfg(feature = "llm")]
fn dry_run(args: &DiagnoseArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    args.judge.check_dry_run()?;
    let cfg = args.judge.llm_config(true)?;
    let counter = crate::judge::llm::DryRunCounter::new(&cfg)?;
    let task = args.task.read()?;
    for path in &args.traces {
        let mut loaded = load_input(path, &args.trace_format)?;
        if let Some(task) = &task {
            // The prompts quote the task: show them as they would be sent.
            apply_task(task, &mut loaded.trajectories);
        }
        for t in &loaded.trajectories {
            for m in &args.method {
                let opts = method_options(args);
                let report = crate::judge::llm::dry_run_counting(&cfg, &counter, |judge| {
                    methods::run(*m, t, judge, &opts);
                })?;
                writeln!(out, "# {} ({}), method {}", crate::text::sanitize(&t.id), shown_trace(path), m.as_str())?;
                out.write_all(report.render().as_bytes())?;
            }
        }
    }
    Ok(0)
}

#[cfg(not(feature = "llm"))]
fn dry_run(_args: &DiagnoseArgs, _out: &mut dyn Write) -> anyhow::Result<i32> {
    Err(super::missing_feature("`--dry-run`", "llm"))
}

fn method_options(args: &DiagnoseArgs) -> MethodOptions {
    let mut opts = MethodOptions::new(!args.no_ground_truth);
    opts.pipeline.window = args.window;
    opts.seed = args.seed;
    opts
}

/// The reports of several diagnoses in one format: Markdown reports separated by a rule (each
/// heading names its method when several methods ran), a JSON array (always an array, one
/// element per trajectory and method), JSON Lines (one object per line), or one export body for
/// all of them. JSON text has the characters a terminal acts on escaped
/// ([`crate::text::escape_json_controls`]).
///
/// # Errors
/// An export the traces have no ids for ([`crate::export::ExportError`], naming what is
/// missing); serialisation failure (not expected).
pub fn render(results: &[(Trajectory, Diagnosis)], format: ReportFormat) -> anyhow::Result<String> {
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let pretty = |v: serde_json::Value| -> anyhow::Result<String> { Ok(serde_json::to_string_pretty(&v)? + "\n") };
    match format {
        ReportFormat::Md => {
            let methods: std::collections::BTreeSet<_> = results.iter().map(|(_, d)| d.method).collect();
            let parts: Vec<String> = results
                .iter()
                .map(|(t, d)| {
                    let md = report::to_markdown(t, d);
                    match (methods.len() > 1, md.split_once('\n')) {
                        // The heading names the trajectory; with several methods, the method too.
                        (true, Some((heading, rest))) => format!("{heading} (method {})\n{rest}", d.method),
                        _ => md,
                    }
                })
                .collect();
            Ok(parts.join("\n---\n\n"))
        }
        ReportFormat::Json => {
            let values: Vec<serde_json::Value> = results.iter().map(|(t, d)| report::to_json(t, d)).collect();
            Ok(crate::text::escape_json_controls(&serde_json::to_string_pretty(&values)?) + "\n")
        }
        ReportFormat::Jsonl => {
            let mut text = String::new();
            for (t, d) in results {
                text.push_str(&crate::text::escape_json_controls(&serde_json::to_string(&report::to_json(t, d))?));
                text.push('\n');
            }
            Ok(text)
        }
        ReportFormat::Otlp => pretty(crate::export::otlp_logs(results, now())?),
        ReportFormat::Phoenix => pretty(crate::export::phoenix_annotations(results)?),
        ReportFormat::Langfuse => pretty(crate::export::langfuse_scores(results)?),
    }
}
