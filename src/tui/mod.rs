//! The terminal debugger (docs/DESIGN.md §6): the FALAT hierarchy as drill-down panes (`Phases` →
//! `Steps` → `Evidence`), the selected step's typed dependency edges, pipeline stages run in the
//! background with progress and cancel, views for candidates, roles, the prior, the verdict and
//! every method side by side, manual overrides saved beside the trace, and export of the reports.
//!
//! Layout of the module, after gitui and television:
//! - [`app`]: the state and its update logic; it does no IO: running, cancelling, copying and
//!   writing files come back as [`Effect`]s that the event loop (or [`drive`]) carries out;
//! - [`view`]: the view model, computed from the state and the terminal's size before input is
//!   handled and before each frame ([`App::prepare`]): the layout, the view's text length, its
//!   links (each step reference with its row and columns), the list's rows, the overlays' lengths
//!   and the header's tabs; with the views' text ([`view::text`]), which input and drawing share.
//!   The app reads the view model, never the drawing code;
//! - [`ui`]: `render(&App, &mut Frame)`, a pure function snapshot-tested with `TestBackend`,
//!   drawing with the layout and text of [`view`]; it writes nothing back;
//! - [`event_loop`]: tokio `select!` over terminal events, job messages and signals;
//! - [`job`]: pipeline runs on the blocking pool with cancel and throttled progress;
//! - [`action`], [`keymap`]: actions and the TOML key map; [`theme`]: TOML themes;
//! - components with their own state and update, which the app holds and routes actions to:
//!   [`nav`] (view, focus, selections, scroll, the step reference selected in prose, the jump
//!   history), [`results`] (the substrate built once, the stages, the diagnoses, every method's
//!   verdict), [`candidates`] (the candidates list's filter and sort), [`search`] (search in step
//!   content), [`overrides`] (editing the user's overrides, with undo), [`runs`] (the run in
//!   progress and the one queued behind it);
//! - [`links`]: the step references of the views' text, from the data that wrote it (a diagnosis's
//!   steps, the [`crate::diagnosis::Part::Step`]s of its reason and claims), selectable;
//! - [`highlight`]: evidence lines (syntect, values, error lines), wrapped and cached;
//! - [`store`]: the overrides file and the exported reports.
//!
//! Every string from the trace passes through [`crate::text::sanitize`] before it is drawn.

pub mod action;
pub mod app;
pub mod candidates;
pub mod event_loop;
pub mod highlight;
pub mod job;
pub mod keymap;
pub mod links;
pub mod nav;
pub mod overrides;
pub mod results;
pub mod runs;
pub mod search;
pub mod status;
pub mod store;
pub mod theme;
pub mod ui;
pub mod view;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use crossterm::event::{DisableMouseCapture, EnableMouseCapture, EventStream};
use serde::Deserialize;

pub use app::{App, Config, Effect, FileEffect, Mode, Pane, View};
pub use nav::Nav;
pub use ui::render;

use crate::judge::Judge;
use crate::judge::heuristic::HeuristicJudge;
use crate::model::SourceFormat;

/// How to open the TUI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuiOptions {
    /// A built-in theme (`dark`, `light`, `high-contrast`) or a theme file; `None` uses the
    /// config file's `theme`, else the terminal's background (with `detect_background`), else
    /// `dark`.
    pub theme: Option<String>,
    /// With no theme given or configured, ask the terminal for its colours (OSC 10/11 queries
    /// with a short timeout, only when stdout is a terminal) and take `light` on a light
    /// one. Off by default (tests, library use); `falat open` sets it.
    pub detect_background: bool,
    /// Read the trace as this format instead of detecting it.
    pub format: Option<SourceFormat>,
    /// A key map file; `None` uses `keys.toml` in the config folder when it exists.
    pub keymap: Option<PathBuf>,
    /// Give the expected output `o*` to the analysis when the trace has one (default true).
    pub ground_truth: bool,
    /// The method `a` runs for the verdict, roles and candidates views: falat (default) runs the
    /// staged pipeline with overrides; another method runs through [`crate::methods::run`].
    pub method: crate::methods::Method,
    /// The folder of `config.toml` and `keys.toml`; `None` is `$XDG_CONFIG_HOME/falat` or
    /// `~/.config/falat`.
    pub config_dir: Option<PathBuf>,
    /// The folder `e` writes the reports into; `None` writes them beside the trace (or, when they
    /// cannot be written there, into the data folder).
    pub export_dir: Option<PathBuf>,
    /// Replaces the XDG state and data folders used when files cannot be written beside the
    /// trace (see [`store::Places`]); `None` uses them.
    pub fallback_dir: Option<PathBuf>,
    /// The id of the trajectory to open in a file that holds several; `None` opens the first.
    pub trajectory: Option<String>,
    /// Label files (`docs/LABELS.md`) whose gold step and agent the views show; never read by
    /// the analysis.
    pub labels: Vec<PathBuf>,
    /// The task given on the command line (`--task`), replacing the trace's; `None` keeps it.
    pub task: Option<String>,
}

impl Default for TuiOptions {
    fn default() -> TuiOptions {
        TuiOptions {
            theme: None,
            detect_background: false,
            format: None,
            keymap: None,
            ground_truth: true,
            method: crate::methods::Method::Falat,
            config_dir: None,
            export_dir: None,
            fallback_dir: None,
            trajectory: None,
            labels: Vec::new(),
            task: None,
        }
    }
}

/// Opens the TUI on a trajectory of a trace file (the first, or `opts.trajectory`) and runs it
/// until the user quits.
/// Builds its own tokio runtime: call it from synchronous code (use [`run_async`] inside a
/// runtime).
///
/// # Errors
/// When the trace cannot be loaded, the theme or key map is unusable, or the terminal fails.
pub fn run(path: &Path, opts: TuiOptions) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let result = rt.block_on(run_async(path, opts));
    // A cancelled run ends at its next judge call; do not let a slow judge hold the exit.
    rt.shutdown_timeout(Duration::from_millis(500));
    result
}

/// [`run`] inside an existing tokio runtime.
///
/// # Errors
/// As [`run`].
pub async fn run_async(path: &Path, opts: TuiOptions) -> anyhow::Result<()> {
    run_with_judge(path, opts, Arc::new(HeuristicJudge)).await
}

/// [`run_async`] with another judge (an LLM judge, or a slow one in tests).
///
/// # Errors
/// As [`run`].
pub async fn run_with_judge(path: &Path, opts: TuiOptions, judge: Arc<dyn Judge>) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    // Checked before anything is written: escape codes must never go into a pipe or a file.
    anyhow::ensure!(
        io::stdout().is_terminal(),
        "the TUI needs a terminal, but stdout is not a terminal (for a report in a pipe or a file use `falat diagnose`)"
    );
    let mut app = open(path, &opts, judge)?;
    let mut term = TerminalGuard::enter()?;
    let mut copy =
        |text: &str| crossterm::execute!(io::stdout(), crossterm::clipboard::CopyToClipboard::to_clipboard_from(text));
    let result = event_loop::run(&mut term.terminal, &mut app, EventStream::new(), &mut copy).await;
    drop(term);
    result
}

/// Loads the trace, theme, key map and saved overrides into an [`App`] (no terminal needed).
///
/// # Errors
/// When the trace cannot be loaded or holds no trajectory, or an explicitly given theme or key
/// map is unusable.
pub fn open(path: &Path, opts: &TuiOptions, judge: Arc<dyn Judge>) -> anyhow::Result<App> {
    highlight::warm_up();
    // `-`: the trace comes from standard input; keys still come from the terminal (crossterm
    // reads /dev/tty when standard input is not one).
    let piped = if crate::ingest::fs::is_stdin(path) { Some(read_stdin()?) } else { None };
    let mut loaded = match &piped {
        Some(bytes) => {
            let choice = match opts.format {
                Some(f) => crate::ingest::FormatChoice::Force(f),
                None => crate::ingest::FormatChoice::Detect(crate::ingest::SUPPORTED.to_vec()),
            };
            crate::ingest::parse_with_related(crate::ingest::fs::STDIN_NAME, bytes, &choice, &|_| None)?
        }
        None => crate::ingest::fs::load_path(path, opts.format)?,
    };
    let path = if piped.is_some() { Path::new(crate::ingest::fs::STDIN_NAME) } else { path };
    let mut label_notes = crate::ingest::fs::apply_label_files(&opts.labels, &mut loaded.trajectories)?;
    if let Some(task) = &opts.task {
        label_notes.extend(crate::ingest::fs::apply_task(task, &mut loaded.trajectories));
    }
    let count = loaded.trajectories.len();
    anyhow::ensure!(count > 0, "the trace holds no trajectory");
    let index = match &opts.trajectory {
        None => 0,
        Some(id) => loaded.trajectories.iter().position(|t| &t.id == id).with_context(|| {
            let ids: Vec<String> = loaded.trajectories.iter().take(10).map(|t| app::clean(&t.id)).collect();
            let more = if count > 10 { format!(" and {} more", count - 10) } else { String::new() };
            format!("{} holds no trajectory {:?}; it holds {}{more}", path.display(), app::clean(id), ids.join(", "))
        })?,
    };
    let skipped_at: Vec<crate::ingest::Place> = loaded.skip_places().into_iter().map(|(_, p)| p).collect();
    let described = loaded.described();
    let traj = loaded.trajectories.into_iter().nth(index).context("the trace holds no trajectory")?;
    anyhow::ensure!(!traj.steps.is_empty(), "{}: the trajectory has no steps", path.display());
    let mut notes = Vec::new();
    if count > 1 {
        notes.push(format!(
            "the file holds {count} trajectories; showing {} ({} of {count}; --trajectory ID opens another)",
            app::clean(&traj.id),
            index + 1
        ));
    }
    if let Some(first) = described.first() {
        notes.push(format!("{} load warnings, first: {}", described.len(), app::clean(first)));
    }
    if traj.task.trim().is_empty() {
        notes.push("the trace records no task (the user's request); --task or --task-file gives it".to_string());
    }
    let dir = opts.config_dir.clone().or_else(config_dir);
    let mut problems = label_notes;
    let settings = Settings::load(dir.as_deref(), &mut problems);
    // Under NO_COLOR every theme is monochrome: no need to ask the terminal.
    let ask = opts.detect_background && !theme::no_color_requested();
    let background = if opts.theme.is_none() && settings.theme.is_none() && ask { terminal_background() } else { None };
    let theme = resolve_theme(opts.theme.as_deref(), settings.theme.as_deref(), background, &mut problems)?;
    let keymap = resolve_keymap(opts.keymap.as_deref(), dir.as_deref(), &mut problems)?;
    let mut places = match &piped {
        Some(bytes) => store::Places::for_stdin(bytes, opts.export_dir.clone(), opts.fallback_dir.as_deref()),
        None => store::Places::new(path, opts.export_dir.clone(), opts.fallback_dir.as_deref()),
    };
    if index > 0 {
        places = places.for_run(&traj.id);
    }
    if piped.is_some() {
        notes.push(match &places.state {
            Some(dir) => format!(
                "the trace came from standard input: your overrides are kept in {}, not beside a file",
                dir.display()
            ),
            None => "the trace came from standard input and no home folder is known: overrides cannot be saved".into(),
        });
    }
    let restored = store::load_places(&mut places, traj.steps.len());
    let config = Config {
        theme,
        keymap,
        ground_truth: opts.ground_truth,
        notes,
        problems,
        show_timings: true,
        method: opts.method,
        places,
        restored,
        skipped_at,
    };
    Ok(App::new(path.to_path_buf(), traj, judge, config))
}

/// Reads a trace from standard input, at most [`crate::ingest::fs::MAX_FILE_BYTES`].
///
/// # Errors
/// When standard input is a terminal (nothing was piped in), cannot be read or is too large.
fn read_stdin() -> anyhow::Result<Vec<u8>> {
    use std::io::{IsTerminal, Read};
    let name = crate::ingest::fs::STDIN_NAME;
    anyhow::ensure!(
        !io::stdin().is_terminal(),
        "`-` reads the trace from standard input, but standard input is a terminal: pipe a trace into it \
         (`falat open - < run.json`)"
    );
    let max = crate::ingest::fs::MAX_FILE_BYTES;
    let mut bytes = Vec::new();
    io::stdin().lock().take(max + 1).read_to_end(&mut bytes).with_context(|| format!("cannot read {name}"))?;
    anyhow::ensure!(bytes.len() as u64 <= max, "{name}: more than {max} bytes, the most falat reads from one trace");
    Ok(bytes)
}

/// The user's config folder: `$XDG_CONFIG_HOME/falat` or `~/.config/falat`.
pub fn config_dir() -> Option<PathBuf> {
    crate::fsutil::config_dir()
}

/// The TUI's part of `config.toml` (other keys belong to other commands and are ignored).
#[derive(Debug, Default, Deserialize)]
struct Settings {
    theme: Option<String>,
}

impl Settings {
    fn load(dir: Option<&Path>, notes: &mut Vec<String>) -> Settings {
        let Some(path) = dir.map(|d| d.join("config.toml")).filter(|p| p.is_file()) else {
            return Settings::default();
        };
        match std::fs::read_to_string(&path).map_err(anyhow::Error::from).and_then(|t| Ok(toml::from_str(&t)?)) {
            Ok(s) => s,
            Err(e) => {
                notes.push(format!("ignored {}: {e:#}", path.display()));
                Settings::default()
            }
        }
    }
}

/// The terminal's background, light or dark, from OSC 10/11 colour queries (terminal-colorsaurus
/// compares the foreground's and background's luminance; a DA1 request bounds the wait) when stdout is a terminal; `None` when it is not or the terminal does not
/// answer.
fn terminal_background() -> Option<Background> {
    use std::io::IsTerminal;
    if !io::stdout().is_terminal() {
        return None;
    }
    match terminal_colorsaurus::theme_mode(terminal_colorsaurus::QueryOptions::default()).ok()? {
        terminal_colorsaurus::ThemeMode::Light => Some(Background::Light),
        terminal_colorsaurus::ThemeMode::Dark => Some(Background::Dark),
    }
}

/// The background colour a terminal reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Background {
    /// A light background: the `light` theme is the default.
    Light,
    /// A dark background: the `dark` theme is the default.
    Dark,
}

/// The built-in theme used when neither `--theme` nor the config file names one: `light` on a
/// light background, else `dark` (also when the terminal did not say).
pub fn default_theme(background: Option<Background>) -> &'static str {
    match background {
        Some(Background::Light) => "light",
        Some(Background::Dark) | None => "dark",
    }
}

fn resolve_theme(
    option: Option<&str>,
    config: Option<&str>,
    background: Option<Background>,
    notes: &mut Vec<String>,
) -> anyhow::Result<theme::Theme> {
    let fallback = default_theme(background);
    let theme = match (option, config) {
        (Some(spec), _) => theme::Theme::resolve(spec)?,
        (None, Some(spec)) => theme::Theme::resolve(spec).unwrap_or_else(|e| {
            notes.push(format!("config theme ignored: {e:#}"));
            theme::Theme::builtin(fallback).expect("built-in theme")
        }),
        (None, None) => theme::Theme::builtin(fallback)?,
    };
    Ok(if theme::no_color_requested() { theme.monochrome() } else { theme })
}

fn resolve_keymap(
    option: Option<&Path>,
    dir: Option<&Path>,
    notes: &mut Vec<String>,
) -> anyhow::Result<keymap::KeyMap> {
    let (map, problems) = match (option, dir.map(|d| d.join("keys.toml")).filter(|p| p.is_file())) {
        (Some(p), _) => keymap::KeyMap::with_user_file(p)?,
        (None, Some(p)) => keymap::KeyMap::with_user_file(&p)
            .unwrap_or_else(|e| (keymap::KeyMap::default_map(), vec![format!("{e:#}")])),
        (None, None) => (keymap::KeyMap::default_map(), Vec::new()),
    };
    notes.extend(problems);
    Ok(map)
}

/// Whether the terminal is in TUI mode (so it is restored exactly once: restoring twice moves the
/// cursor back to where the alternate screen was entered, over what was printed since).
static TUI_ACTIVE: AtomicBool = AtomicBool::new(false);

/// Ends mouse capture, raw mode and the alternate screen, once.
fn restore_terminal() {
    if TUI_ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = crossterm::execute!(io::stdout(), DisableMouseCapture);
        ratatui::restore();
    }
}

/// Suspends the program like a shell's ctrl-z: ends mouse capture, raw mode and the alternate
/// screen, stops the process with SIGTSTP (crossterm has no helper for it) and, once the shell
/// resumes it (`fg`, SIGCONT), takes the terminal back. `Ok(false)` when the terminal is not in
/// TUI mode (tests on a `TestBackend`) or on a platform without job control.
///
/// # Errors
/// When the terminal cannot be set up again after the resume.
pub fn suspend() -> io::Result<bool> {
    #[cfg(unix)]
    {
        if !TUI_ACTIVE.load(Ordering::SeqCst) {
            return Ok(false);
        }
        restore_terminal();
        // SAFETY: raise only sends a signal to this process; SIGTSTP's default action stops it
        // and raise returns once SIGCONT resumes it.
        unsafe {
            libc::raise(libc::SIGTSTP);
        }
        crossterm::terminal::enable_raw_mode()?;
        crossterm::execute!(
            io::stdout(),
            crossterm::terminal::EnterAlternateScreen,
            crossterm::terminal::Clear(crossterm::terminal::ClearType::All),
            EnableMouseCapture
        )?;
        TUI_ACTIVE.store(true, Ordering::SeqCst);
        Ok(true)
    }
    #[cfg(not(unix))]
    Ok(false)
}

/// The terminal in TUI mode: raw mode, alternate screen, mouse capture. Dropping it restores the
/// terminal; a panic restores it before the panic message is printed.
pub struct TerminalGuard {
    /// The terminal to draw on.
    pub terminal: ratatui::DefaultTerminal,
}

impl TerminalGuard {
    /// Enters TUI mode.
    ///
    /// # Errors
    /// When the terminal cannot be set up (it is restored before returning).
    pub fn enter() -> anyhow::Result<TerminalGuard> {
        // ratatui installs its own restoring hook; ours runs first and makes the restore
        // idempotent for the guard's drop during unwinding.
        let terminal = ratatui::try_init();
        TUI_ACTIVE.store(true, Ordering::SeqCst);
        let terminal = match terminal {
            Ok(t) => t,
            Err(e) => {
                restore_terminal();
                return Err(e).context("cannot set up the terminal");
            }
        };
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
        let guard = TerminalGuard { terminal };
        crossterm::execute!(io::stdout(), EnableMouseCapture)?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Carries out effects synchronously: runs the pipeline on this thread and feeds the result
/// back; copies go to `copied`. For tests and headless use.
pub fn drive(app: &mut App, effects: Vec<Effect>, copied: &mut Vec<String>) {
    let mut queue: std::collections::VecDeque<Effect> = effects.into();
    while let Some(e) = queue.pop_front() {
        match e {
            Effect::Run(req) => {
                let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
                let done = job::execute(&req, &app.traj, app.judge.as_ref(), flag, None);
                queue.extend(app.on_job(job::JobMsg::Done(Box::new(done))));
            }
            Effect::Copy(t) => copied.push(t),
            Effect::File(f) => file_effect(app, *f),
            Effect::Quit => app.quit = true,
            Effect::Cancel | Effect::Suspend => {}
        }
    }
}

/// Carries out a file write the app asked for and gives it the result: the one place the TUI
/// writes files (the event loop and [`drive`] both call it).
pub fn file_effect(app: &mut App, f: app::FileEffect) {
    match f {
        app::FileEffect::SaveOverrides { trajectory, overrides, undo } => {
            let saved = store::save_places(&mut app.places, &trajectory, &overrides, &undo);
            app.on_saved(saved);
        }
        app::FileEffect::Export { machine, user } => {
            app.on_exported(store::export_places(&app.places, &app.traj, &machine, user.as_deref()));
        }
    }
}
