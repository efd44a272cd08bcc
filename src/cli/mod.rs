//! The command line: argument definitions (clap derive) and dispatch to one module per command.
//!
//! Each subcommand has its own file with an `Args` struct and a `run(&Args, out) -> Result<i32>`
//! function; adding a command is one variant in [`Command`] and one arm in [`run`]. Commands
//! write their results to `out` (stdout in the binary, a buffer in tests) and return the process
//! exit code; errors go back to `main`, which prints them and exits with 2.

pub mod completions;
pub mod diagnose;
pub mod eval;
pub mod inspect;
pub mod judge;
pub mod man;
pub mod open;
pub mod task;
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
    /// Show more on stderr: -v informational messages, -vv debugging detail, -vvv everything
    /// (warnings are always shown; `RUST_LOG` overrides this).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Colour theme of the terminal debugger: dark, light, high-contrast, or a theme file
    /// (default: the config file's `theme`, else light when the terminal reports a light
    /// background, else dark). `NO_COLOR` turns colours off. Accepted anywhere on the command
    /// line; other commands than `open` ignore it.
    #[arg(long, value_name = "NAME", global = true)]
    pub theme: Option<String>,
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
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(completions::CompletionsArgs),
    /// Print the manual page (roff, section 1) to stdout: `falat man | man -l -`.
    Man(man::ManArgs),
}

impl Cli {
    /// Whether the command takes over the terminal (the TUI) rather than writing to stdout.
    pub fn is_interactive(&self) -> bool {
        matches!(self.command, Command::Open(_))
    }

    /// Sends the library's `tracing` events (warnings of the LLM client and its exchange cache,
    /// trace diagnostics of `diagnose`) to stderr, never stdout: warnings and errors by default,
    /// more with `-v`, or what `RUST_LOG` selects (`RUST_LOG=falat=debug`). Colour only when
    /// stderr is a terminal and `NO_COLOR` is unset. Nothing is installed for the TUI, which owns
    /// the terminal. The LLM client logs no request bodies or headers at `-v` levels, so no API
    /// key reaches the log.
    pub fn init_logging(&self) {
        use std::io::IsTerminal;
        use tracing_subscriber::EnvFilter;
        if self.is_interactive() {
            return;
        }
        let default = match self.verbose {
            0 => "warn",
            1 => "warn,falat=info",
            2 => "warn,falat=debug",
            _ => "warn,falat=trace",
        };
        let from_env = std::env::var("RUST_LOG").ok().filter(|v| !v.trim().is_empty());
        let (filter, bad) = match from_env.as_deref().map(EnvFilter::try_new) {
            Some(Ok(f)) => (f, None),
            Some(Err(e)) => (EnvFilter::new(default), Some(e)),
            None => (EnvFilter::new(default), None),
        };
        let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        let installed = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(ansi)
            .event_format(LogLine)
            .try_init()
            .is_ok();
        if let (true, Some(e)) = (installed, bad) {
            tracing::warn!("RUST_LOG is not a valid filter ({e}); using {default:?}");
        }
    }
}

/// A log event as one line the way command-line tools write them: `falat: warning: …` (level in
/// lower case, no padding, no time or target), then the event's fields.
struct LogLine;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for LogLine
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        use tracing::Level;
        let level = match *event.metadata().level() {
            Level::ERROR => "error",
            Level::WARN => "warning",
            Level::INFO => "info",
            Level::DEBUG => "debug",
            Level::TRACE => "trace",
        };
        if writer.has_ansi_escapes() {
            let colour = match *event.metadata().level() {
                Level::ERROR => "31",
                Level::WARN => "33",
                _ => "2",
            };
            write!(writer, "falat: \x1b[{colour}m{level}\x1b[0m: ")?;
        } else {
            write!(writer, "falat: {level}: ")?;
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// The command line with `open` inserted when the first argument is a trace rather than a
/// command (`falat TRACE` is `falat open TRACE`): a file that exists, `-` (standard input), or a
/// word that looks like a path (it has a `/`, `\` or `.`). Any other word is left to clap, which reports an unknown
/// command and suggests a similar one.
pub fn normalize_args(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory;
    // Global options (`-v`, `-vv`, `--verbose`, `--theme NAME`, `--theme=NAME`) may come before
    // the command or trace.
    let is_verbose =
        |a: &str| a == "--verbose" || (a.len() > 1 && a.starts_with('-') && a[1..].bytes().all(|b| b == b'v'));
    let mut at = 1;
    while let Some(a) = args.get(at).and_then(|a| a.to_str()) {
        match a {
            "--theme" => at += 2,
            _ if a.starts_with("--theme=") || is_verbose(a) => at += 1,
            _ => break,
        }
    }
    if at >= args.len() {
        return args;
    }
    let Some(first) = args[at].to_str() else { return args };
    let cmd = Cli::command();
    let known = (first.starts_with('-') && first != "-")
        || first == "help"
        || cmd.get_subcommands().any(|s| s.get_name() == first || s.get_all_aliases().any(|a| a == first));
    // A word that names no file and does not look like a path is more likely a mistyped command
    // (`falat diagnos run.json`): clap then says so and suggests the command it resembles.
    // `-` is standard input (`falat - < run.json`).
    let looks_like_path = first == "-" || std::path::Path::new(first).exists() || first.contains(['/', '\\', '.']);
    if known || !looks_like_path {
        return args;
    }
    let mut out = args;
    out.insert(at, "open".into());
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
        Command::Open(args) => open::run(&args, cli.theme.as_deref(), out),
        Command::Diagnose(mut args) => {
            args.verbose = cli.verbose;
            diagnose::run(&args, out)
        }
        Command::Eval(args) => eval::run(&args, out),
        Command::Train(args) => train::run(&args, out),
        Command::Completions(args) => completions::run(&args, out),
        Command::Man(args) => man::run(&args, out),
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

/// Prints `falat: MESSAGE` on stderr, sanitised ([`crate::text::sanitize`]): messages name files
/// and quote keys and ids from traces, which must not drive the terminal.
pub fn note(message: &str) {
    eprintln!("falat: {}", crate::text::sanitize(message));
}

pub use crate::fsutil::config_dir;

/// Whether an error chain ends in a broken pipe (`falat inspect x | head`), which is no error.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
