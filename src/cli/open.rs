//! `falat TRACE` / `falat open TRACE [--theme NAME] [--format F] [--keymap FILE] [--method M]`: the
//! TUI (`--theme` is a global option of [`super::Cli`]).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::ingest::FormatChoice;
use crate::methods::Method;
#[cfg(feature = "tui")]
use crate::tui::{self, TuiOptions};

/// Arguments of `falat open`.
#[derive(Debug, Args)]
pub struct OpenArgs {
    /// The trace file to open (its first trajectory, unless `--trajectory` names another); `-`
    /// reads it from standard input (keys still come from the terminal; the overrides are then
    /// kept in the state folder, as nothing can be saved beside a file).
    pub trace: PathBuf,
    /// In a file that holds several trajectories (a τ-bench results file, a JSONL of runs), the
    /// id of the one to open, as `falat inspect` lists them. Its overrides and exports are kept
    /// apart from the other runs' (`TRACE#ID.falat.json`).
    #[arg(long, short = 't', value_name = "ID")]
    pub trajectory: Option<String>,
    /// The trace format (default: detected); names as for `falat inspect --format`. Also
    /// `--trace-format`, as in `falat diagnose`.
    #[arg(long, visible_alias = "trace-format", short = 'f', value_name = "F", default_value = "auto", value_parser = FormatChoice::parse)]
    pub format: FormatChoice,
    /// A key map file (default: `keys.toml` in the config folder when it exists).
    #[arg(long, value_name = "FILE")]
    pub keymap: Option<PathBuf>,
    /// Do not give the expected output `o*` to the analysis.
    #[arg(long)]
    pub no_ground_truth: bool,
    /// The judge.
    #[command(flatten)]
    pub judge: super::judge::JudgeArgs,
    /// The method `a` runs for the verdict, roles and candidates views: falat, echo, defa,
    /// all-at-once, step-by-step, binary-search or random (overrides apply to falat only).
    #[arg(long, short = 'm', value_name = "M", default_value = "falat", value_parser = parse_method)]
    pub method: Method,
    /// Label files (AgentRx ground truth, or falat labels JSONL; see docs/LABELS.md) whose gold
    /// step and agent the views show beside the verdict. The analysis never reads them.
    #[arg(long, value_name = "FILE")]
    pub labels: Vec<PathBuf>,
    /// The folder `e` writes the reports into (default: beside the trace, or the user's data
    /// folder when they cannot be written there).
    #[arg(long, value_name = "DIR")]
    pub export_dir: Option<PathBuf>,
    /// The task, when the trace does not record it.
    #[command(flatten)]
    pub task: super::task::TaskArgs,
}

fn parse_method(s: &str) -> Result<Method, String> {
    Method::parse(s).ok_or_else(|| {
        let names: Vec<&str> = Method::ALL.iter().map(|m| m.as_str()).collect();
        format!("unknown method {:?}; one of {}", s.trim(), names.join(", "))
    })
}

/// Runs the TUI until the user quits; returns exit code 0.
///
/// # Errors
/// The trace cannot be loaded, or the terminal cannot be set up.
#[cfg(feature = "tui")]
pub fn run(args: &OpenArgs, theme: Option<&str>, _out: &mut dyn Write) -> anyhow::Result<i32> {
    let format = match &args.format {
        FormatChoice::Force(f) => Some(*f),
        FormatChoice::Detect(_) => None,
    };
    let opts = TuiOptions {
        theme: theme.map(str::to_string),
        detect_background: true,
        format,
        keymap: args.keymap.clone(),
        ground_truth: !args.no_ground_truth,
        method: args.method,
        config_dir: None,
        export_dir: args.export_dir.clone(),
        fallback_dir: None,
        trajectory: args.trajectory.clone(),
        labels: args.labels.clone(),
        task: args.task.read()?,
    };
    let judge = args.judge.build()?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let result = rt.block_on(tui::run_with_judge(&args.trace, opts, judge));
    // A cancelled run ends at its next judge call; do not let a slow judge hold the exit.
    rt.shutdown_timeout(std::time::Duration::from_millis(500));
    result?;
    Ok(0)
}

/// Without the `tui` feature there is no terminal debugger: an error naming the feature.
///
/// # Errors
/// Always.
#[cfg(not(feature = "tui"))]
pub fn run(_args: &OpenArgs, _theme: Option<&str>, _out: &mut dyn Write) -> anyhow::Result<i32> {
    Err(super::missing_feature("`falat open`", "tui"))
}
