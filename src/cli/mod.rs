//! The command line: argument definitions (clap derive) and dispatch to one module per command.
//!
//! Each subcommand has its own file with an `Args` struct and a `run(&Args, out) -> Result<i32>`
//! function; adding a command is one variant in [`Command`] and one arm in [`run`]. Commands
//! write their results to `out` (stdout in the binary, a buffer in tests) and return the process
//! exit code; errors go back to `main`, which prints them and exits with 2.

pub mod diagnose;
pub mod eval;
pub mod inspect;
pub mod judge;
pub mod open;
pub mod train;

use std::io::Write;

use clap::{Parser, Subcommand};

/// falat: a terminal debugger for failed LLM agent runs.
///
/// It loads the trajectory of a failed run (Who&When, Magentic-One, OpenAI chat, τ-bench, falat
/// JSONL) and finds the decisive error: which agent, which step.
#[derive(Debug, Parser)]
#[command(name = "falat", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Open a trace in the terminal debugger (also `falat TRACE`).
    Open(open::OpenArgs),
    /// Show a trajectory as loaded: format, task, agents, one line per step, gold label and
    /// diagnostics.
    Inspect(inspect::InspectArgs),
    /// Find the decisive error of each trajectory and write the diagnosis report (Markdown or
    /// JSON).
    Diagnose(diagnose::DiagnoseArgs),
    /// Score methods on labelled benchmark folders (Who&When layout): agent- and step-level
    /// accuracy per subset.
    Eval(eval::EvalArgs),
    /// Fit the step ranker on the tune part of labelled folders and write its model file
    /// (default: rebuild models/step_ranker.json from the bundled data).
    Train(train::TrainArgs),
}

impl Cli {
    /// Whether the command takes over the terminal (the TUI) rather than writing to stdout.
    pub fn is_interactive(&self) -> bool {
        matches!(self.command, Command::Open(_))
    }
}

/// The command line with `open` inserted when the first argument is a trace rather than a
/// command (`falat TRACE` is `falat open TRACE`).
pub fn normalize_args(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory;
    let Some(first) = args.get(1).and_then(|a| a.to_str()) else { return args };
    let cmd = Cli::command();
    let known = first.starts_with('-')
        || first == "help"
        || cmd.get_subcommands().any(|s| s.get_name() == first || s.get_all_aliases().any(|a| a == first));
    if known {
        return args;
    }
    let mut out = args;
    out.insert(1, "open".into());
    out
}

/// Runs a parsed command line, writing its output to `out`.
///
/// Returns the process exit code (0 on success).
///
/// # Errors
/// Whatever the command reports (a file that cannot be loaded, a failed write); `main` prints
/// the chain as `falat: {err:#}` and exits with 2.
pub fn run(cli: Cli, out: &mut dyn Write) -> anyhow::Result<i32> {
    match cli.command {
        Command::Inspect(args) => inspect::run(&args, out),
        Command::Open(args) => open::run(&args, out),
        Command::Diagnose(args) => diagnose::run(&args, out),
        Command::Eval(args) => eval::run(&args, out),
        Command::Train(args) => train::run(&args, out),
    }
}

/// The error of a command or option that needs a Cargo feature this build of falat left out
/// (`falat open` needs `tui`; `--judge llm` and `--dry-run` need `llm`). It names the feature and
/// how to get it back.
pub fn missing_feature(what: &str, feature: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{what} needs the `{feature}` feature, which this build of falat was compiled without; \
         rebuild with `--features {feature}` (on by default, e.g. `cargo install falat`)"
    )
}

/// Whether an error chain ends in a broken pipe (`falat inspect x | head`), which is no error.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
