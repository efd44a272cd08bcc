//! `falat diagnose TRACE... [--method M] [--format md|json] [-o PATH] [--no-ground-truth]`: the diagnosis
//! report of each trajectory (Markdown for people, JSON `falat.diagnosis/v1` for programs, see
//! `docs/REPORT_SCHEMA.md`).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};

use crate::diagnosis::Diagnosis;
use crate::ingest::{
    FormatChoice,
    fs::{apply_label_sets, load_path_with, read_label_files},
};
use crate::methods::{self, Method, MethodOptions};
use crate::model::Trajectory;
use crate::report;

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Markdown, for people.
    Md,
    /// JSON (`falat.diagnosis/v1`), for programs.
    Json,
}

/// Arguments of `falat diagnose`.
#[derive(Debug, Args)]
pub struct DiagnoseArgs {
    /// Trace files (JSON or JSONL); a file holding several trajectories gives several reports.
    /// Among several files, one that cannot be read is named on stderr and skipped, the others
    /// are reported, and the exit status is 2.
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// Report format.
    #[arg(long, value_enum, default_value = "md")]
    pub format: ReportFormat,
    /// Write the report to this file instead of standard output (written atomically).
    #[arg(short = 'o', long = "output", value_name = "PATH")]
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
    /// With `--judge llm`: show what would be sent to the server and its token count, send
    /// nothing (FALAT).
    #[arg(long)]
    pub dry_run: bool,
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
        eprintln!("falat: {note}");
    }
    for path in &args.traces {
        let mut loaded = match load_path_with(path, &args.trace_format) {
            Ok(l) => l,
            Err(e) if args.traces.len() > 1 => {
                eprintln!("falat: {e}; skipped");
                failed += 1;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        // The TUI's overrides beside the trace are the user's decisions; this report is the
        // machine's alone, so say so rather than let a pinned step seem ignored.
        let saved = crate::ingest::fs::beside(path, crate::ingest::fs::OVERRIDES_SUFFIX);
        if saved.is_file() {
            eprintln!(
                "falat: {}: overrides saved by the TUI are not applied here; this report is the machine's verdict (the TUI's export, e, writes one with them)",
                saved.display()
            );
        }
        for d in &loaded.diagnostics {
            tracing::warn!("{}: {d}", path.display());
        }
        for note in apply_label_sets(&label_sets, &mut loaded.trajectories) {
            // Among several traces, say which one the note is about.
            match args.traces.len() {
                1 => eprintln!("falat: {note}"),
                _ => eprintln!("falat: {}: {note}", crate::text::sanitize(&path.display().to_string())),
            }
        }
        let opts = method_options(args);
        for t in loaded.trajectories {
            for m in &args.method {
                let d = methods::run(*m, &t, judge.as_ref(), &opts);
                results.push((t.clone(), d));
            }
        }
    }
    if results.is_empty() && failed > 0 {
        anyhow::bail!("none of the {} trace files could be read", args.traces.len());
    }
    let text = render(&results, args.format)?;
    match &args.output {
        Some(path) => {
            write_atomic(path, text.as_bytes())?;
            writeln!(out, "wrote {}", path.display())?;
        }
        None => out.write_all(text.as_bytes())?,
    }
    Ok(if failed > 0 { 2 } else { 0 })
}

/// `--dry-run`: the requests the LLM judge would send for each trajectory, with token counts.
#[cfg(feature = "llm")]
fn dry_run(args: &DiagnoseArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let cfg = args.judge.llm_config(true)?;
    for path in &args.traces {
        let loaded = load_path_with(path, &args.trace_format)?;
        for t in &loaded.trajectories {
            for m in &args.method {
                let opts = method_options(args);
                let report = crate::judge::llm::dry_run_with(&cfg, |judge| {
                    methods::run(*m, t, judge, &opts);
                })?;
                writeln!(out, "# {} ({}), method {}", crate::text::sanitize(&t.id), path.display(), m.as_str())?;
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

/// The reports of several diagnoses in one format: Markdown reports separated by a rule, or one
/// JSON object (one diagnosis) or array (several).
///
/// # Errors
/// Serialisation failure (not expected).
pub fn render(results: &[(Trajectory, Diagnosis)], format: ReportFormat) -> anyhow::Result<String> {
    Ok(match format {
        ReportFormat::Md => {
            let parts: Vec<String> = results.iter().map(|(t, d)| report::to_markdown(t, d)).collect();
            parts.join("\n---\n\n")
        }
        ReportFormat::Json => {
            let values: Vec<serde_json::Value> = results.iter().map(|(t, d)| report::to_json(t, d)).collect();
            let v = if values.len() == 1 { values.into_iter().next().expect("one") } else { values.into() };
            serde_json::to_string_pretty(&v)? + "\n"
        }
    })
}

/// Writes a file atomically: a temporary file beside it, then a rename.
///
/// # Errors
/// The folder cannot be written.
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let mut builder = tempfile::Builder::new();
    // A report or an overrides file is an ordinary file of the user's: created like any other
    // (0666 less the umask), not with the temporary file's owner-only mode.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut tmp = builder.tempfile_in(dir).map_err(|e| {
        // The error names the random temporary file, which the user never asked for: keep its
        // cause alone.
        // (tempfile words it "<cause> at path \"<temporary file>\"" and gives no source.)
        let text = e.to_string();
        let cause = match text.find(" at path \"") {
            Some(i) => text[..i].to_string(),
            None => text,
        };
        anyhow::anyhow!("cannot write in {}: {cause}", dir.display())
    })?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    // The persist error's text repeats its IO error's: keep the IO error alone.
    tmp.persist(path).map_err(|e| e.error).with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[cfg(unix)]
    #[test]
    fn a_written_file_has_the_mode_of_any_new_file_not_the_temporary_file_s() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"x").unwrap();
        let written = dir.path().join("report.md");
        super::write_atomic(&written, b"# report\n").unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&written), mode(&plain));
        assert_eq!(std::fs::read_to_string(&written).unwrap(), "# report\n");
    }

    #[test]
    fn a_file_that_cannot_be_written_is_named_by_its_folder_not_the_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no").join("report.md");
        let err = format!("{:#}", super::write_atomic(&missing, b"x").unwrap_err());
        assert!(err.starts_with(&format!("cannot write in {}: ", dir.path().join("no").display())), "{err}");
        assert!(!err.contains("no/.tmp") && !err.contains("at path"), "{err}");
    }
}
