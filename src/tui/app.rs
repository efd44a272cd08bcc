//! The app: a router between the components. It holds them ([`Nav`] where the user is,
//! [`Results`] what the analysis found, [`OverrideEditor`], [`CandidateList`], [`Search`],
//! [`Runs`]), sends each action to the one it concerns, and turns what they report into the
//! status line. Nothing here draws, and nothing here calls drawing code: what input needs of the
//! screen (the layout, the view's text length, its links and rows) is the [`ViewModel`], computed
//! from the state before input is handled; [`super::ui::render`] reads an `&App`.
//!
//! Input enters through [`App::on_event`] / [`App::on_key`] / [`App::apply`], background results
//! through [`App::on_job`]. Work the app cannot do itself (start or cancel a run, copy to the
//! clipboard, write files, quit) comes back as [`Effect`]s for the event loop to carry out.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};
use ratatui::text::Line;

use super::action::Action;
use super::candidates::CandidateList;
use super::highlight::{self, EvidenceCache};
use super::job::{JobDone, JobMsg, RunRequest, RunTarget};
use super::keymap::KeyMap;
use super::nav::{Extent, Moved, Nav};
pub use super::nav::{Offsets, Pane, View};
use super::overrides::{Edit, OverrideEditor};
pub use super::results::StepMarks;
use super::results::{Results, Taken};
use super::runs::Runs;
use super::search::Search;
use super::store::{self, Exported, Restored};
use super::theme::Theme;
use crate::diagnosis::{Diagnosis, Overrides, Role};
use crate::graph::{DepEdge, DepGraph, EdgeKind};
use crate::hierarchy::{Hierarchy, Phase};
use crate::judge::Judge;
use crate::methods::Method;
use crate::methods::falat::{Options, Stage};
use crate::model::Trajectory;
use crate::substrate::Substrate;
use crate::text;

/// Where key presses go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Keys go through the key map.
    Normal,
    /// Typing a search query.
    Search(String),
    /// Typing a step number.
    Jump(String),
    /// Typing the candidates filter (the list narrows as you type).
    Filter(String),
    /// The help overlay is open.
    Help,
    /// The messages overlay is open: every status message of the session, whole.
    Messages,
    /// Quit was asked while overrides could not be saved: `y` quits, any other key stays.
    ConfirmQuit,
}

pub use super::status::{Level, Status};

/// What a line of input is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    Search,
    Jump,
    Filter,
}

/// Something the event loop must do for the app.
pub enum Effect {
    /// Start a run in the background.
    Run(Box<RunRequest>),
    /// Cancel the running run.
    Cancel,
    /// Put text on the clipboard (OSC 52).
    Copy(String),
    /// Write a file; the result comes back through [`App::on_saved`] / [`App::on_exported`].
    File(Box<FileEffect>),
    /// Suspend the program like a shell's ctrl-z: the terminal is restored, the process stops
    /// (SIGTSTP) and takes the terminal back when the shell resumes it.
    Suspend,
    /// Leave.
    Quit,
}

/// File writes the app asks for (it does no IO itself).
pub enum FileEffect {
    /// Save the overrides (beside the trace, else in the state folder).
    SaveOverrides {
        /// The trajectory's id, recorded in the file.
        trajectory: String,
        /// The overrides to save.
        overrides: Overrides,
        /// Their undo history, oldest first (saved with them).
        undo: Vec<Overrides>,
    },
    /// Write the reports: the machine's verdict and the user's decision beside it.
    Export {
        /// The machine's verdict.
        machine: Box<Diagnosis>,
        /// The diagnosis with the user's overrides, when there are any.
        user: Option<Box<Diagnosis>>,
    },
}

/// Settings an [`App`] starts with.
pub struct Config {
    /// Colours.
    pub theme: Theme,
    /// Keys.
    pub keymap: KeyMap,
    /// Use the expected output `o*` when the trace has one.
    pub ground_truth: bool,
    /// Messages to show at start (load diagnostics, restored overrides, config problems).
    pub notes: Vec<String>,
    /// Messages about something the user should fix (a label file that names no run of the
    /// trace, a label naming another agent than its step's): shown first, at the warning level.
    pub problems: Vec<String>,
    /// Show timings in the status line (off in tests, so screens are deterministic).
    pub show_timings: bool,
    /// The method `a` runs (falat runs the staged pipeline).
    pub method: Method,
    /// Where the overrides and reports go.
    pub places: store::Places,
    /// The overrides found at open and the file they came from (see [`store::load_places`]).
    pub restored: (Restored, Option<PathBuf>),
    /// Where records the loader left out sat among the steps ([`crate::ingest::Loaded::skip_places`]).
    pub skipped_at: Vec<crate::ingest::Place>,
}

pub use super::view::Screen;
use super::view::ViewModel;

/// The TUI's state: the components and what they share.
pub struct App {
    /// The trace file.
    pub trace: PathBuf,
    /// Where the overrides and reports go (beside the trace, or the fallback folders).
    pub places: store::Places,
    /// The trajectory shown.
    pub traj: Arc<Trajectory>,
    /// The judge for pipeline runs.
    pub judge: Arc<dyn Judge>,
    /// Use the expected output.
    pub ground_truth: bool,
    /// The method `a` runs: falat runs the staged pipeline (with overrides), another method runs
    /// through [`crate::methods::run`].
    pub method: Method,
    /// Where the user is: view, focus, selections, scroll, jump history.
    pub nav: Nav,
    /// What the analysis found: substrate, stages, diagnoses, every method's verdict.
    pub results: Results,
    /// The user's overrides with their undo history.
    pub editor: OverrideEditor,
    /// The candidates view's filter and sort.
    pub cands: CandidateList,
    /// Search in step content.
    pub search: Search,
    /// The background run in progress and the one queued behind it.
    pub runs: Runs,
    /// Colours.
    pub theme: Theme,
    /// Keys.
    pub keymap: KeyMap,
    /// Where keys go.
    pub mode: Mode,
    /// First visible line of the help or messages overlay.
    pub help_scroll: usize,
    /// The status message.
    pub status: Option<Status>,
    /// Every status message of the session, oldest first (at most [`MESSAGES`]), for the
    /// messages overlay: the status line may cut a long one.
    pub messages: VecDeque<Status>,
    /// The files of the last export.
    pub exported: Option<Exported>,
    /// Set when the app should end.
    pub quit: bool,
    /// Show timings.
    pub show_timings: bool,
    /// Frames of the spinner drawn so far.
    pub ticks: u64,
    dirty: bool,
    /// The view model: the layout, the current view's text length, links and rows, computed
    /// from the state for the terminal's size before each input and each frame.
    pub view: ViewModel,
    /// Wrapped evidence lines per (step, width).
    evidence: EvidenceCache,
    /// Where records the loader left out sat among the steps: the steps list marks the step
    /// before each (or after, when it came first) and its evidence header names the line.
    pub skipped_at: Vec<crate::ingest::Place>,
}

/// Half-width of the re-search window (the pipeline's default).
pub const ROLE_WINDOW: usize = 3;

/// Traces with more steps open on the substrate of their first this-many steps; the whole
/// trajectory's substrate is built in the background (see [`Results::indexing`]).
pub const SYNC_STEPS: usize = 5_000;

/// How many status messages the messages overlay keeps.
pub const MESSAGES: usize = 200;

impl App {
    /// The records left out next to step `s`: those right after it (`true`), or before it when
    /// it is the first step read after them and none was read before (`false`).
    pub fn skipped_next_to(&self, s: usize) -> Vec<(crate::ingest::Place, bool)> {
        self.skipped_at
            .iter()
            .filter_map(|p| match (p.after, p.before) {
                (Some(a), _) if a == s => Some((*p, true)),
                (None, Some(b)) if b == s => Some((*p, false)),
                _ => None,
            })
            .collect()
    }

    /// An app on a loaded trajectory, building its substrate (of the first [`SYNC_STEPS`] steps
    /// of a larger one; the event loop builds the whole one in the background).
    pub fn new(trace: PathBuf, traj: Trajectory, judge: Arc<dyn Judge>, config: Config) -> App {
        let (substrate, indexing) = super::results::first_substrate(&traj, SYNC_STEPS);
        App::with_substrate(trace, traj, substrate, indexing, judge, config)
    }

    /// An app on a trajectory and a substrate already built for it (`partial` when it covers
    /// only the first steps; the whole one then comes through [`JobMsg::Substrate`]).
    pub fn with_substrate(
        trace: PathBuf,
        traj: Trajectory,
        substrate: Arc<Substrate>,
        partial: bool,
        judge: Arc<dyn Judge>,
        config: Config,
    ) -> App {
        let total = traj.steps.len();
        let (restored, from) = config.restored;
        let warn = !config.problems.is_empty() || !restored.problems.is_empty();
        let mut notes = config.problems;
        notes.extend(config.notes);
        if partial {
            let shown = substrate.hierarchy.steps.len();
            notes.push(format!("indexing {total} steps in the background; the first {shown} are shown"));
        }
        if let Some(from) = from.filter(|_| !restored.overrides.is_empty()) {
            notes.push(format!("restored your overrides from {}", from.display()));
        }
        notes.extend(restored.problems.iter().cloned());
        let level = if warn { Level::Warn } else { Level::Info };
        let mut app = App {
            trace,
            places: config.places,
            traj: Arc::new(traj),
            judge,
            ground_truth: config.ground_truth,
            method: config.method,
            nav: Nav::default(),
            results: Results::new(substrate, partial),
            editor: OverrideEditor::with_history(restored.overrides, restored.undo),
            cands: CandidateList::default(),
            search: Search::default(),
            runs: Runs::default(),
            theme: config.theme,
            keymap: config.keymap,
            mode: Mode::Normal,
            help_scroll: 0,
            status: None,
            messages: VecDeque::new(),
            exported: None,
            quit: false,
            show_timings: config.show_timings,
            ticks: 0,
            dirty: true,
            view: ViewModel::default(),
            evidence: EvidenceCache::default(),
            skipped_at: config.skipped_at,
        };
        if !notes.is_empty() {
            app.set_status(level, notes.join("; "));
        }
        app
    }

    // ----- read access for the views -----

    /// Whether the whole trajectory's substrate is still being built.
    pub fn indexing(&self) -> bool {
        self.results.indexing
    }

    /// The hierarchy: stage 1's (with suspicion) once it ran, else the substrate's.
    pub fn hierarchy(&self) -> &Hierarchy {
        self.results.hierarchy()
    }

    /// The substrate the views and runs share.
    pub fn substrate(&self) -> Arc<Substrate> {
        Arc::clone(&self.results.substrate)
    }

    /// The dependency graph: stage 2's (with transition labels) once it ran, else the
    /// substrate's.
    pub fn graph(&self) -> &DepGraph {
        self.results.graph()
    }

    /// The diagnosis of the last finished run (the user's decision when there are overrides).
    pub fn diagnosis(&self) -> Option<&Diagnosis> {
        self.results.diagnosis.as_ref()
    }

    /// What the diagnosis says about a step.
    pub fn marks(&self, step: usize) -> StepMarks {
        self.results.marks(step)
    }

    /// The phases.
    pub fn phases(&self) -> &[Phase] {
        self.results.phases()
    }

    /// The index of the phase holding `step`.
    pub fn phase_of(&self, step: usize) -> usize {
        let phases = self.phases();
        phases.partition_point(|p| p.range.end <= step).min(phases.len().saturating_sub(1))
    }

    /// The number of steps that can be shown (all of them once indexing is done).
    pub fn n_steps(&self) -> usize {
        self.hierarchy().steps.len()
    }

    /// The number of steps in the trajectory.
    pub fn total_steps(&self) -> usize {
        self.traj.steps.len()
    }

    /// The selected step's edges as the dependencies pane lists them: `(incoming?, other step,
    /// edge)`, incoming first, each side strongest first; edges that share nothing but small
    /// numbers are left out (see [`App::weak_edges`]).
    pub fn edges(&self) -> Vec<(bool, usize, &DepEdge)> {
        self.all_edges().into_iter().filter(|(_, _, e)| !number_only(e)).collect()
    }

    /// The selected step's edges that share nothing but small numbers (a count, a year, "89"):
    /// such values recur by chance, so these links say little about where a value came from.
    pub fn weak_edges(&self) -> Vec<(bool, usize, &DepEdge)> {
        self.all_edges().into_iter().filter(|(_, _, e)| number_only(e)).collect()
    }

    fn all_edges(&self) -> Vec<(bool, usize, &DepEdge)> {
        let g = self.graph();
        if self.nav.step >= self.n_steps() {
            return Vec::new();
        }
        let mut inc = g.incoming(self.nav.step);
        let mut out = g.outgoing(self.nav.step);
        for v in [&mut inc, &mut out] {
            v.sort_by(|a, b| b.1.weight.total_cmp(&a.1.weight).then(a.0.cmp(&b.0)));
        }
        let inc = inc.into_iter().map(|(s, e)| (true, s, e));
        inc.chain(out.into_iter().map(|(s, e)| (false, s, e))).collect()
    }

    /// The step that gives the final output, as the analysis reads it
    /// ([`crate::substrate::signals::final_step`]: the last substantive step, not a closing
    /// "terminate" or a tool output). While a long trace's substrate covers only its first
    /// steps, the last step. `None` for an empty trajectory.
    pub fn final_step(&self) -> Option<usize> {
        let last = self.n_steps().checked_sub(1)?;
        let sub = &self.results.substrate;
        if sub.hierarchy.steps.len() != self.n_steps() {
            return Some(last);
        }
        sub.final_step(&self.traj).or(Some(last))
    }

    /// A dependency path from the selected step to the final output ([`App::final_step`]), both
    /// included; `None` when its effect does not reach it.
    pub fn path_to_output(&self) -> Option<Vec<usize>> {
        let end = self.final_step()?;
        self.graph().path(self.nav.step, end)
    }

    /// The rows of the roles view: every step in the re-search window around the decisive step
    /// and every step with a role, by step, with its role if it has one.
    pub fn role_rows(&self) -> Vec<(usize, Option<Role>)> {
        self.results.role_rows(ROLE_WINDOW, self.n_steps())
    }

    /// The number of candidates in the diagnosis.
    pub fn n_candidates(&self) -> usize {
        self.results.n_candidates()
    }

    /// The machine's verdict (see [`Results::machine_verdict`]).
    pub fn machine_verdict(&self) -> Option<&Diagnosis> {
        self.results.machine_verdict()
    }

    /// The user's decision: the diagnosis with the overrides, when there are any.
    pub fn user_decision(&self) -> Option<&Diagnosis> {
        self.results.user_decision()
    }

    /// Whether the user's overrides lead to the step the machine named (an exclusion of another
    /// step, a mark that did not win): then the step is the machine's, not a decision of the
    /// user's. False when there are no overrides or the machine's verdict is not known.
    pub fn overrides_kept_the_step(&self) -> bool {
        match (self.machine_verdict(), self.user_decision()) {
            (Some(m), Some(u)) => m.decisive_step == u.decisive_step,
            _ => false,
        }
    }

    /// The decisive step of the machine's verdict (of the diagnosis while that is unknown).
    pub fn decisive_step(&self) -> Option<usize> {
        self.results.decisive_step()
    }

    /// A step in one line for the lists (the steps pane, the roles view, the dependencies): a
    /// tool call as it reads ([`crate::report::call_line`]: a shell call its command, an edit its
    /// tool and file first), else the hierarchy's decision line.
    pub fn step_line(&self, s: usize) -> String {
        match self.traj.steps.get(s).and_then(|st| crate::report::call_line(st, 160)) {
            Some(line) => clean(&line),
            None => self.hierarchy().steps.get(s).map_or(String::new(), |sum| clean(&sum.decision)),
        }
    }

    /// A step in one line that quotes its failure, for the roles view: when the step is an error
    /// (its evidence has an error line, or the format marks it), its first error line
    /// (`ERROR: Multiple heads are present`; a line that only announces what follows and ends in
    /// `:`, like `Traceback (most recent call last):`, gives way to the next error line), else
    /// [`App::step_line`].
    pub fn failure_line(&self, s: usize) -> String {
        let (Some(st), Some(sum)) = (self.traj.steps.get(s), self.hierarchy().steps.get(s)) else {
            return String::new();
        };
        let errors: Vec<&str> = self
            .hierarchy()
            .evidence
            .get(s)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter(|e| e.kind == crate::evidence::EvidenceKind::ErrorLine)
            .map(|e| e.text(&st.content).trim())
            .filter(|l| !l.is_empty())
            .collect();
        let line = errors.iter().find(|l| !l.ends_with(':')).or(errors.first());
        match line {
            Some(line) if sum.flags.error || sum.flags.failed_execution || st.is_error => clean(&text::clip(line, 160)),
            _ => self.step_line(s),
        }
    }

    /// The wrapped evidence lines of a step at a width: from the cache [`App::prepare`] fills,
    /// else built now (and not kept: reading never changes the app).
    pub fn evidence_lines(&self, step: usize, width: u16) -> Arc<Vec<Line<'static>>> {
        let key = (step, width as usize);
        self.evidence.get(key).unwrap_or_else(|| Arc::new(self.build_evidence(step, width)))
    }

    fn build_evidence(&self, step: usize, width: u16) -> Vec<Line<'static>> {
        let content = &self.traj.steps[step].content;
        let ev = self.results.substrate.hierarchy.evidence.get(step).map_or(&[][..], Vec::as_slice);
        let lines = highlight::content_lines(content, ev, &self.theme);
        highlight::wrap(&lines, width as usize, &self.theme)
    }

    /// The selected step's evidence at the screen's width, built into the cache when missing.
    fn cached_evidence(&mut self) -> Arc<Vec<Line<'static>>> {
        let (step, width) = (self.nav.step, self.view.screen.evidence.0);
        if let Some(lines) = self.evidence.get((step, width as usize)) {
            return lines;
        }
        let lines = self.build_evidence(step, width);
        self.evidence.insert((step, width as usize), lines)
    }

    /// The steps the current view's text links to, in reading order (the verdict, the selected
    /// candidate's or method's detail, the roles view's header): from the view model.
    pub fn links(&self) -> Vec<usize> {
        self.view.targets()
    }

    /// Computes the view model again for the last frame's size: the state changed.
    fn refresh_view(&mut self) {
        self.view = ViewModel::compute(self, self.view.screen.area);
    }

    /// Gets the app ready to draw a frame of `area`: the view model for it, the lists' first
    /// visible rows (scrolled just enough to show the selections) and the selected step's
    /// evidence in the cache. Drawing ([`super::ui::render`]) then only reads the app.
    pub fn prepare(&mut self, area: Rect) {
        use super::view::visible_offset;
        self.view = ViewModel::compute(self, area);
        let s = self.view.screen;
        let n = &self.nav;
        let range = self.phases().get(n.phase).map_or(0..0, |p| p.range.clone());
        let o = n.offsets;
        let offsets = Offsets {
            phase: visible_offset(o.phase, n.phase, self.phases().len(), s.phase_rows as usize),
            step: visible_offset(o.step, n.step.saturating_sub(range.start), range.len(), s.step_rows as usize),
            edge: visible_offset(o.edge, n.edge, self.edges().len(), s.edge_rows as usize),
            list: visible_offset(o.list, n.list_sel, self.list_len(), s.list_rows as usize),
        };
        self.nav.offsets = offsets;
        if self.nav.view == View::Hierarchy && s.evidence.0 > 0 && self.nav.step < self.n_steps() {
            self.cached_evidence();
        }
    }

    /// Whether a redraw is due; clears the flag.
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Asks for a redraw.
    pub fn touch(&mut self) {
        self.dirty = true;
    }

    /// Sets the status message and keeps it in the messages overlay.
    /// The text is sanitised: it may quote trace content or file names.
    pub fn set_status(&mut self, level: Level, text: impl Into<String>) {
        self.set_status_with_short(level, text, None);
    }

    /// [`App::set_status`] with a shorter form for a narrow status line ([`Status::short`]).
    pub fn set_status_with_short(&mut self, level: Level, text: impl Into<String>, short: Option<String>) {
        let status = Status { text: clean(&text.into()), level, short: short.map(|s| clean(&s)) };
        if self.messages.back() != Some(&status) {
            if self.messages.len() == MESSAGES {
                self.messages.pop_front();
            }
            self.messages.push_back(status.clone());
        }
        self.status = Some(status);
        self.dirty = true;
    }

    // ----- input -----

    /// Handles a terminal event.
    pub fn on_event(&mut self, ev: Event) -> Vec<Effect> {
        match ev {
            Event::Key(k) if k.kind != KeyEventKind::Release => self.on_key(k),
            Event::Mouse(m) => self.on_mouse(m),
            Event::Resize(..) | Event::FocusGained => {
                self.dirty = true;
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// Handles a key press according to the mode.
    pub fn on_key(&mut self, k: KeyEvent) -> Vec<Effect> {
        self.dirty = true;
        match self.mode.clone() {
            Mode::Normal => self.keymap.action(&k).map(|a| self.apply(a)).unwrap_or_default(),
            Mode::Help | Mode::Messages => self.on_overlay_key(k),
            Mode::ConfirmQuit => self.on_confirm_quit(k),
            Mode::Search(buf) => self.edit_input(k, buf, Input::Search),
            Mode::Jump(buf) => self.edit_input(k, buf, Input::Jump),
            Mode::Filter(buf) => self.edit_input(k, buf, Input::Filter),
        }
    }

    /// Quits, unless overrides could not be saved: then asks first (never a silent loss).
    fn quit_or_ask(&mut self) -> Vec<Effect> {
        if !self.editor.unsaved {
            return vec![Effect::Quit];
        }
        self.mode = Mode::ConfirmQuit;
        self.set_status(
            Level::Error,
            "your overrides could not be saved: quit and lose them? y quits, any other key stays",
        );
        Vec::new()
    }

    /// The answer to [`Self::quit_or_ask`]'s question.
    fn on_confirm_quit(&mut self, k: KeyEvent) -> Vec<Effect> {
        self.mode = Mode::Normal;
        if matches!(k.code, KeyCode::Char('y' | 'Y')) {
            return vec![Effect::Quit];
        }
        self.set_status(Level::Warn, "stayed; your overrides are still unsaved (an edit tries to save them again)");
        Vec::new()
    }

    /// Keys while the help or the messages are open: the moving keys scroll, the overlay's own
    /// key or back closes it, quit quits; other keys do nothing (so a stray key does not close
    /// it).
    fn on_overlay_key(&mut self, k: KeyEvent) -> Vec<Effect> {
        self.refresh_view();
        let height = (self.view.screen.help_rows as usize).max(1);
        let len = match self.mode {
            Mode::Messages => self.view.message_lines,
            _ => self.view.help_lines,
        };
        let max = len.saturating_sub(height);
        let page = height.saturating_sub(1).max(1);
        self.help_scroll = match self.keymap.action(&k) {
            Some(Action::Quit) => return self.quit_or_ask(),
            Some(Action::Help | Action::Back | Action::Messages) => {
                self.mode = Mode::Normal;
                0
            }
            Some(Action::Up) => self.help_scroll.saturating_sub(1),
            Some(Action::Down) => self.help_scroll + 1,
            Some(Action::PageUp | Action::ScrollUp) => self.help_scroll.saturating_sub(page),
            Some(Action::PageDown | Action::ScrollDown) => self.help_scroll + page,
            Some(Action::Top) => 0,
            Some(Action::Bottom) => max,
            _ => self.help_scroll,
        }
        .min(max);
        Vec::new()
    }

    fn edit_input(&mut self, k: KeyEvent, mut buf: String, input: Input) -> Vec<Effect> {
        let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(crossterm::event::KeyModifiers::CONTROL);
        match k.code {
            KeyCode::Esc => {
                self.mode = Mode::Normal;
                if input == Input::Filter {
                    self.set_filter(String::new());
                }
                return Vec::new();
            }
            _ if ctrl_c => {
                self.mode = Mode::Normal;
                return Vec::new();
            }
            KeyCode::Enter => {
                self.mode = Mode::Normal;
                match input {
                    Input::Search => self.start_search(buf),
                    Input::Jump => self.jump(&buf),
                    Input::Filter => self.set_filter(buf),
                }
                return Vec::new();
            }
            KeyCode::Backspace => {
                buf.pop();
            }
            KeyCode::Char(c) if input != Input::Jump || c.is_ascii_digit() => buf.push(c),
            _ => {}
        }
        if input == Input::Filter {
            self.set_filter(buf.clone());
        }
        self.mode = match input {
            Input::Search => Mode::Search(buf),
            Input::Jump => Mode::Jump(buf),
            Input::Filter => Mode::Filter(buf),
        };
        Vec::new()
    }

    /// Sets the candidates filter and keeps the selection on the same candidate when it is
    /// still shown.
    fn set_filter(&mut self, filter: String) {
        let step = self.selected_candidate().map(|c| c.step);
        self.cands.filter = filter;
        self.refresh_candidates(step);
        if !self.cands.filter.is_empty() {
            let (n, total) = (self.cands.rows().len(), self.cands.total());
            self.set_status(Level::Info, format!("filter '{}': {n} of {total} candidates", clean(&self.cands.filter)));
        }
    }

    /// Cycles the candidates' sort key.
    fn cycle_sort(&mut self) {
        if self.nav.view != View::Candidates {
            return self.set_status(Level::Info, "s sorts the candidates view (press 2)");
        }
        let step = self.selected_candidate().map(|c| c.step);
        self.cands.sort = self.cands.sort.next();
        self.refresh_candidates(step);
        self.set_status(Level::Info, format!("candidates sorted by {}", self.cands.sort.name()));
    }

    /// Recomputes the candidates rows; the selection follows `step` when it is still shown.
    fn refresh_candidates(&mut self, step: Option<usize>) {
        self.cands.refresh(self.results.diagnosis.as_ref());
        if self.nav.view == View::Candidates {
            self.nav.list_sel = step.and_then(|s| self.cands.row_of(self.results.diagnosis.as_ref(), s)).unwrap_or(0);
            self.nav.link = None;
            self.nav.scroll[View::Candidates.index()] = 0;
        }
    }

    /// The candidate selected in the candidates view.
    pub fn selected_candidate(&self) -> Option<&crate::diagnosis::Candidate> {
        self.cands.get(self.results.diagnosis.as_ref(), self.nav.list_sel)
    }

    fn on_mouse(&mut self, m: MouseEvent) -> Vec<Effect> {
        self.refresh_view();
        let pos = Position::new(m.column, m.row);
        let pane = if self.nav.view == View::Hierarchy {
            Pane::ALL.into_iter().zip(self.view.screen.panes).find(|(_, r)| r.contains(pos)).map(|(p, _)| p)
        } else {
            None
        };
        match m.kind {
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                let down = m.kind == MouseEventKind::ScrollDown;
                if let Some(p) = pane {
                    self.nav.focus = p;
                }
                let n = if self.nav.view == View::Hierarchy && self.nav.focus == Pane::Evidence { 3 } else { 1 };
                for _ in 0..n {
                    self.apply(if down { Action::Down } else { Action::Up });
                }
            }
            MouseEventKind::Down(MouseButton::Left) if m.row == 0 => {
                let v = self.view.tab_at(m.column);
                self.set_view(v);
            }
            MouseEventKind::Down(MouseButton::Left) => self.click(pane, pos),
            _ => return Vec::new(),
        }
        self.dirty = true;
        Vec::new()
    }

    fn click(&mut self, pane: Option<Pane>, pos: Position) {
        if let Some(p) = pane {
            self.nav.focus = p;
            let r = self.view.screen.panes[p.index()];
            let row = pos.y.saturating_sub(r.y + 1) as usize;
            let ext = self.extent();
            match p {
                Pane::Phases => {
                    let row = row + self.nav.offsets.phase;
                    self.nav.select_phase(row, &ext);
                }
                Pane::Steps => {
                    let range = ext.phases.get(self.nav.phase).cloned().unwrap_or(0..0);
                    let s = range.start + self.nav.offsets.step + row;
                    if s < range.end {
                        self.nav.select_step(s, &ext);
                    }
                }
                Pane::Edges => {
                    // The list starts below the path and header rows.
                    let row = row.saturating_sub(2) + self.nav.offsets.edge;
                    self.nav.edge = row.min(self.edges().len().saturating_sub(1));
                }
                Pane::Evidence => {}
            }
        } else if self.nav.view != View::Hierarchy {
            let r = self.view.screen.view_list;
            if r.contains(pos) {
                self.nav.list_sel = pos.y.saturating_sub(r.y + 1) as usize + self.nav.offsets.list;
                self.nav.link = None;
                self.clamp_list();
            }
        }
    }

    /// Carries out an action: routes it to the component it concerns.
    pub fn apply(&mut self, a: Action) -> Vec<Effect> {
        self.dirty = true;
        self.refresh_view();
        let view = self.nav.view;
        match a {
            Action::Quit => return self.quit_or_ask(),
            Action::Suspend => return vec![Effect::Suspend],
            // Esc clears the candidates filter or the search before it does anything else.
            Action::Back if view == View::Candidates && !self.cands.filter.is_empty() => {
                self.set_filter(String::new());
                self.set_status(Level::Info, "filter cleared: all candidates are shown");
            }
            Action::Back if view == View::Hierarchy && self.search.query.is_some() => {
                self.search = Search::default();
                self.set_status(Level::Info, "search cleared");
            }
            Action::Help => self.mode = Mode::Help,
            Action::Messages => self.open_messages(),
            Action::Search if view == View::Candidates => self.mode = Mode::Filter(self.cands.filter.clone()),
            Action::Search => self.mode = Mode::Search(String::new()),
            Action::Sort => self.cycle_sort(),
            Action::JumpToStep => self.mode = Mode::Jump(String::new()),
            Action::GoToDecisive => self.go_to_decisive(),
            Action::JumpBack | Action::JumpForward => self.history(a == Action::JumpBack),
            Action::SearchNext => self.search_again(true),
            Action::SearchPrev => self.search_again(false),
            Action::Copy => return self.copy(),
            Action::Export => return self.export(),
            Action::RunAll if self.method == Method::Falat => return self.request(RunTarget::All),
            Action::RunAll => return self.request(RunTarget::Method(self.method)),
            Action::RunMethods => return self.request(RunTarget::AllMethods),
            Action::RunPrior => return self.request(RunTarget::Stage(Stage::SearchSpace)),
            Action::RunDependencies => return self.request(RunTarget::Stage(Stage::Dependencies)),
            Action::RunVerification => return self.request(RunTarget::Stage(Stage::Verification)),
            Action::RunResearch => return self.request(RunTarget::Stage(Stage::ReSearch)),
            Action::Cancel => return self.cancel(),
            Action::Mark | Action::Exclude | Action::Pin => return self.toggle_override(a),
            Action::Undo => return self.undo(),
            Action::ViewHierarchy
            | Action::ViewCandidates
            | Action::ViewRoles
            | Action::ViewPrior
            | Action::ViewVerdict
            | Action::ViewMethods => self.set_view(View::ALL.into_iter().find(|v| v.action() == a)),
            Action::NextView => self.set_view(Some(view.cycle(true))),
            Action::PrevView => self.set_view(Some(view.cycle(false))),
            _ => self.navigate(a),
        }
        Vec::new()
    }

    fn open_messages(&mut self) {
        self.mode = Mode::Messages;
        // Open on the newest messages.
        // The overlay's height: the layout of a frame with the messages open.
        let rows = super::view::layout(self, self.view.screen.area).help_rows;
        self.help_scroll = self.view.message_lines.saturating_sub((rows as usize).max(1));
    }

    fn set_view(&mut self, v: Option<View>) {
        if let Some(v) = v {
            let row = self.initial_list_sel(v);
            self.nav.set_view(v, row);
        }
    }

    /// In the candidates view start on the decisive step's candidate, in roles on ROOT_CAUSE,
    /// in the verdict on its first step reference.
    fn initial_list_sel(&self, view: View) -> usize {
        let decisive = self.results.diagnosis.as_ref().and_then(|d| d.decisive_step);
        match (view, decisive) {
            (View::Candidates, Some(s)) => self.cands.row_of(self.results.diagnosis.as_ref(), s).unwrap_or(0),
            (View::Roles, Some(s)) => self.role_rows().iter().position(|(st, _)| *st == s).unwrap_or(0),
            (View::Methods, _) => Method::ALL.iter().position(|m| *m == self.method).unwrap_or(0),
            _ => 0,
        }
    }

    // ----- navigation -----

    /// What the lists hold right now, for [`Nav`].
    fn extent(&self) -> Extent {
        let nav = &self.nav;
        let s = &self.view.screen;
        let hierarchy = nav.view == View::Hierarchy;
        let page_rows = match (nav.view, nav.focus) {
            (View::Hierarchy, Pane::Phases) => s.phase_rows,
            (View::Hierarchy, Pane::Steps) => s.step_rows,
            (View::Hierarchy, Pane::Edges) => s.edge_rows,
            (View::Hierarchy, Pane::Evidence) => s.evidence.1,
            _ => s.list_rows,
        } as usize;
        Extent {
            phases: self.phases().iter().map(|p| p.range.clone()).collect(),
            n_steps: self.n_steps(),
            edges: if hierarchy && nav.focus == Pane::Edges {
                self.edges().into_iter().map(|(_, s, _)| s).collect()
            } else {
                Vec::new()
            },
            evidence_lines: 0,
            list_len: if hierarchy { 0 } else { self.list_len() },
            row_step: if hierarchy { None } else { self.row_step() },
            links: if hierarchy { Vec::new() } else { self.links() },
            page_rows,
            text_lines: self.view.text_lines,
            text_rows: s.text.height as usize,
        }
    }

    fn navigate(&mut self, a: Action) {
        let mut ext = self.extent();
        if self.nav.view == View::Hierarchy && self.nav.focus == Pane::Evidence && self.view.screen.evidence.0 > 0 {
            ext.evidence_lines = self.cached_evidence().len();
        }
        let moved = self.nav.navigate(a, &ext);
        // A step reference selected in the text is scrolled into view (links keep their places
        // when the selection moves among them).
        let selected = if self.nav.view == View::Verdict { Some(self.nav.list_sel) } else { self.nav.link };
        if super::view::text::scrolls(self.nav.view)
            && matches!(a, Action::Up | Action::Down | Action::NextPane | Action::PrevPane)
            && let Some(link) = selected.and_then(|k| self.view.links.get(k))
        {
            self.nav.show_text_line(link.line, self.view.screen.text.height as usize);
        }
        self.report(moved);
    }

    /// Puts what a navigation did in the status line.
    fn report(&mut self, moved: Moved) {
        let back = self.keymap.hint(Action::JumpBack);
        match moved {
            Moved::Quiet => {}
            Moved::Jumped { step, from } => {
                let what = self.step_words(step);
                let from = if from.is_empty() { String::new() } else { format!(" · from {from}") };
                self.set_status(Level::Info, format!("step {step}{what}{from} · {back} back"));
            }
            Moved::Link { index, of, step } => {
                let enter = self.keymap.hint(Action::Enter);
                let what = self.step_words(step);
                self.set_status(
                    Level::Info,
                    format!("step reference {} of {of}: step {step}{what} · {enter} jumps to it", index + 1),
                );
            }
            Moved::History { back: was_back, to } => {
                let dir = if was_back { "back" } else { "forward" };
                let place = match to.view {
                    View::Hierarchy => format!("step {}{}", to.step, self.step_words(to.step)),
                    v => format!("the {} view", v.name()),
                };
                self.set_status(Level::Info, format!("{dir} to {place}"));
            }
            Moved::NoLinks => {
                let what = match self.nav.view {
                    View::Candidates => "the selected candidate's detail",
                    View::Roles => "the re-search's reason and path",
                    View::Methods => "the selected method's details",
                    v => v.name(),
                };
                self.set_status(Level::Info, format!("no step numbers to select in {what}"));
            }
            Moved::HistoryEmpty { back: true } => {
                self.set_status(Level::Info, "no jump to go back from: enter on a step number, :, d and search jump")
            }
            Moved::HistoryEmpty { back: false } => self.set_status(Level::Info, "no later jump to go forward to"),
        }
    }

    /// A few words on what a step is: ` (WebSurfer · the decisive step)`.
    fn step_words(&self, step: usize) -> String {
        let Some(st) = self.traj.steps.get(step) else { return String::new() };
        let mut parts = vec![text::clip(&clean(&st.agent), 24)];
        if self.decisive_step() == Some(step) {
            parts.push("the decisive step".into());
        } else if self.user_decision().and_then(|u| u.decisive_step) == Some(step) {
            parts.push("your decision".into());
        } else if self.results.marks(step).candidate.is_some() {
            parts.push("a candidate".into());
        }
        if self.traj.gold.as_ref().and_then(|g| g.step) == Some(step) {
            parts.push("the gold step".into());
        }
        format!(" ({})", parts.join(" · "))
    }

    fn history(&mut self, back: bool) {
        let ext = self.extent();
        let moved = self.nav.history(back, &ext);
        self.report(moved);
    }

    /// The step the selected row of a list view stands for.
    fn row_step(&self) -> Option<usize> {
        match self.nav.view {
            View::Hierarchy => Some(self.nav.step),
            View::Candidates => self.selected_candidate().map(|c| c.step),
            View::Roles => self.role_rows().get(self.nav.list_sel).map(|(s, _)| *s),
            View::Methods => self.selected_method_result().and_then(|d| d.decisive_step),
            View::Verdict => self.links().get(self.nav.list_sel).copied(),
            View::Prior => None,
        }
    }

    fn list_len(&self) -> usize {
        match self.nav.view {
            View::Candidates => self.cands.rows().len(),
            View::Roles => self.role_rows().len(),
            View::Methods => Method::ALL.len(),
            View::Verdict => self.links().len(),
            _ => 0,
        }
    }

    /// The method of the selected row of the methods view.
    pub fn selected_method(&self) -> Method {
        Method::ALL[self.nav.list_sel.min(Method::ALL.len() - 1)]
    }

    /// The diagnosis of the selected row of the methods view, once that method ran.
    pub fn selected_method_result(&self) -> Option<&Diagnosis> {
        self.results.methods.get(&self.selected_method())
    }

    fn clamp_list(&mut self) {
        // The results changed: the verdict's links with them.
        self.refresh_view();
        let len = self.list_len();
        self.nav.list_sel = self.nav.list_sel.min(len.saturating_sub(1));
    }

    /// Selects a phase and its first step.
    pub fn select_phase(&mut self, p: usize) {
        let ext = self.extent();
        self.nav.select_phase(p, &ext);
    }

    /// Selects a step (and its phase).
    pub fn select_step(&mut self, s: usize) {
        let ext = self.extent();
        self.nav.select_step(s, &ext);
    }

    /// Jumps to step `s` in the hierarchy view (remembered in the jump history).
    fn jump_to(&mut self, s: usize, from: &str) -> Moved {
        let ext = self.extent();
        self.nav.jump(s, &ext, from)
    }

    fn jump(&mut self, buf: &str) {
        match buf.trim().parse::<usize>() {
            Ok(n) if n < self.n_steps() => {
                let moved = self.jump_to(n, "");
                self.report(moved);
            }
            Ok(n) if n < self.total_steps() => self
                .set_status(Level::Info, format!("step {n} is not indexed yet: indexing {} steps", self.total_steps())),
            _ => self.set_status(
                Level::Warn,
                format!("no step '{}': steps are 0 to {}", text::clip(buf, 20), self.total_steps().saturating_sub(1)),
            ),
        }
    }

    // ----- search -----

    fn start_search(&mut self, q: String) {
        if self.search.start(&q, &self.traj.steps) {
            self.search_again(true);
        }
    }

    fn search_again(&mut self, forward: bool) {
        let Some(q) = self.search.query.clone() else {
            return self.set_status(Level::Info, "no search yet: press / to search");
        };
        match self.search.find(&self.traj.steps, self.nav.step, self.n_steps(), forward) {
            Some(s) => {
                self.jump_to(s, "search");
                self.scroll_to_match(&q);
                let total = self.search.total();
                let steps = if total == 1 { "step matches" } else { "steps match" };
                self.set_status(Level::Info, format!("'{}' found in step {s} ({total} {steps})", clean(&q)));
            }
            None => self.set_status(Level::Warn, format!("no step contains '{}'", clean(&q))),
        }
    }

    fn scroll_to_match(&mut self, q: &str) {
        if self.view.screen.evidence.0 == 0 {
            return;
        }
        let q = q.to_lowercase();
        let lines = self.cached_evidence();
        let hit = lines.iter().position(|l| {
            let t: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            t.to_lowercase().contains(&q)
        });
        self.nav.evidence_scroll = hit.map_or(0, |h| h.saturating_sub(2));
    }

    // ----- clipboard and export -----

    /// The step an override or a copy applies to: the selected step reference when there is one,
    /// else the selected row's step.
    fn target_step(&self) -> Option<usize> {
        match (self.nav.view, self.nav.link) {
            (View::Hierarchy | View::Verdict | View::Prior, _) | (_, None) => self.row_step(),
            (_, Some(k)) => self.links().get(k).copied(),
        }
    }

    fn copy(&mut self) -> Vec<Effect> {
        let s = self.nav.step;
        let st = &self.traj.steps[s];
        let body = format!("step {s} ({})\n{}", text::sanitize(&st.agent), text::sanitize(&st.content));
        let chars = body.chars().count();
        self.set_status(Level::Ok, format!("copied step {s} ({chars} chars) to the clipboard with osc 52"));
        vec![Effect::Copy(body)]
    }

    fn export(&mut self) -> Vec<Effect> {
        if self.results.diagnosis.is_none() {
            self.set_status(Level::Warn, "nothing to export yet: run the pipeline first (press a)");
            return Vec::new();
        }
        let Some(machine) = self.machine_verdict().cloned().map(Box::new) else {
            let key = self.keymap.hint(Action::RunAll);
            self.set_status(
                Level::Warn,
                format!("the machine's verdict without your overrides is not known yet: press {key}, then export"),
            );
            return Vec::new();
        };
        let user = self.user_decision().cloned().map(Box::new);
        vec![Effect::File(Box::new(FileEffect::Export { machine, user }))]
    }

    // ----- pipeline runs -----

    fn options(&self) -> Options {
        Options { overrides: self.overrides().clone(), window: ROLE_WINDOW, ..Options::new(self.ground_truth) }
    }

    /// Starts a run, or queues it behind the running one (which is cancelled: the latest wins);
    /// while the substrate is being built, the run waits for it.
    pub fn request(&mut self, target: RunTarget) -> Vec<Effect> {
        if self.runs.queue(target) {
            self.set_status(Level::Info, format!("restarting: {}", target.label()));
            return vec![Effect::Cancel];
        }
        if self.results.indexing {
            self.runs.defer(target);
            self.set_status(
                Level::Info,
                format!("{} starts once all {} steps are indexed", target.label(), self.total_steps()),
            );
            return Vec::new();
        }
        vec![self.start(target)]
    }

    fn start(&mut self, target: RunTarget) -> Effect {
        let stage = self.results.first_stage(target);
        let id = self.runs.begin(target, stage);
        self.dirty = true;
        Effect::Run(Box::new(self.results.run_request(id, target, self.options())))
    }

    fn cancel(&mut self) -> Vec<Effect> {
        if self.runs.cancel() {
            self.set_status(Level::Info, "cancelling…");
            vec![Effect::Cancel]
        } else if self.runs.take_pending().is_some() {
            self.set_status(Level::Info, "cancelled the run waiting for indexing");
            Vec::new()
        } else {
            self.set_status(Level::Info, "nothing is running");
            Vec::new()
        }
    }

    /// Takes a message from background work.
    pub fn on_job(&mut self, msg: JobMsg) -> Vec<Effect> {
        self.dirty = true;
        match msg {
            JobMsg::Progress { id, activity, done, total } => {
                self.runs.progress(id, activity, done, total);
                Vec::new()
            }
            JobMsg::Asked { id, questions, calls } => {
                self.runs.asked(id, questions, calls);
                Vec::new()
            }
            JobMsg::Substrate(s) => {
                self.results.indexed(s);
                self.evidence.clear();
                self.nav.phase = self.phase_of(self.nav.step);
                if !self.runs.busy() {
                    self.set_status(Level::Info, format!("indexed all {} steps", self.total_steps()));
                }
                match self.runs.take_pending() {
                    Some(t) if !self.runs.busy() => vec![self.start(t)],
                    _ => Vec::new(),
                }
            }
            JobMsg::Done(d) => self.finish(*d),
        }
    }

    fn finish(&mut self, d: JobDone) -> Vec<Effect> {
        let Some(run) = self.runs.finish(d.id) else { return Vec::new() };
        let took = if self.show_timings { format!(" in {}", ms(d.elapsed)) } else { String::new() };
        let taken = self.results.take_run(d, run.target);
        self.cands.refresh(self.results.diagnosis.as_ref());
        match taken {
            Taken::Methods(n) => {
                let see = if self.nav.view == View::Methods {
                    String::new()
                } else {
                    format!("; press {} for the methods view", self.keymap.hint(Action::ViewMethods))
                };
                self.set_status(Level::Ok, format!("finished all methods{took}: {n} verdicts{see}"));
            }
            Taken::Verdict { before } => {
                self.follow_verdict(before);
                self.clamp_list();
                let verdict = self.verdict_line();
                let (level, done) = match (self.editor.note.take(), run.target) {
                    (Some(n), RunTarget::Rerun { .. }) => {
                        (n.level, format!("{}; re-ran {}", n.text, run.target.label()))
                    }
                    (_, RunTarget::Method(m)) => (Level::Ok, format!("finished method {m}")),
                    _ => (Level::Ok, format!("finished {}", run.target.label())),
                };
                // A run that warned (an unreachable LLM server, an unverified verdict) says so,
                // and which view shows the warnings, before the verdict, so that a cut status
                // line still shows both.
                let warned = self.machine_verdict().map_or(0, |d| d.warnings.len());
                let key = self.keymap.hint(Action::ViewVerdict);
                let (level, warns, short_warns) = match warned {
                    0 => (level, String::new(), String::new()),
                    n => {
                        let count = crate::text::count(n, "warning", "warnings");
                        (Level::Warn, format!(", {count} (press {key}: verdict)"), format!("{count} ({key}: verdict)"))
                    }
                };
                // At 80 columns the long form is cut before its verdict: the short one drops
                // what the chips and the views already say (which run, how long, and, after a
                // warning, the word "decisive").
                let short = match warned {
                    0 => format!("done{}", self.verdict_short()),
                    _ => format!("{short_warns}{}", self.verdict_short().replacen(": decisive step ", ": step ", 1)),
                };
                // A re-run's status starts with what the user changed: no shorter form drops it.
                let short = (!matches!(run.target, RunTarget::Rerun { .. })).then_some(short);
                self.set_status_with_short(level, format!("{done}{took}{warns}{verdict}"), short);
            }
            Taken::KeptStages(kept) => {
                self.clamp_list();
                self.set_status(
                    Level::Warn,
                    format!("cancelled {}; kept the stages through {}", run.target.label(), kept.as_str()),
                );
            }
            Taken::Cancelled => {
                self.set_status(Level::Warn, format!("cancelled {}; results unchanged", run.target.label()));
            }
        }
        match self.runs.take_pending() {
            Some(t) => vec![self.start(t)],
            None => Vec::new(),
        }
    }

    /// After a run: when the verdict names a new decisive step, select it so that the hierarchy
    /// view shows it without further keys (a re-run that keeps the verdict leaves the selection).
    fn follow_verdict(&mut self, before: Option<usize>) {
        let Some(s) = self.decisive_step().filter(|s| Some(*s) != before) else { return };
        self.select_step(s);
        if self.nav.focus == Pane::Phases {
            self.nav.focus = Pane::Steps;
        }
    }

    /// Selects the decisive step in the hierarchy view, from any view.
    fn go_to_decisive(&mut self) {
        match self.decisive_step() {
            Some(s) if s < self.n_steps() => {
                let moved = self.jump_to(s, "");
                self.report(moved);
            }
            Some(s) => self.set_status(Level::Info, format!("decisive step {s} is not indexed yet")),
            None if self.results.diagnosis.is_some() => {
                self.set_status(Level::Info, "the verdict names no decisive step")
            }
            None => self.set_status(
                Level::Info,
                format!("no verdict yet: press {} to run the pipeline", self.keymap.hint(Action::RunAll)),
            ),
        }
    }

    /// [`App::verdict_line`] in fewer words for a narrow status line: `: decisive step 44 by
    /// assistant (0.20)`.
    fn verdict_short(&self) -> String {
        let machine = match self.machine_verdict().and_then(|d| d.decisive_step.map(|s| (s, d))) {
            Some((s, d)) => {
                format!(": decisive step {s} by {} ({})", clean(d.agent.as_deref().unwrap_or("?")), prob(d.confidence))
            }
            _ => return self.verdict_line(),
        };
        match self.user_decision() {
            Some(u) if self.overrides_kept_the_step() => match u.decisive_step {
                Some(s) => format!("{machine}; overrides keep {s}"),
                None => machine,
            },
            Some(u) => format!("{machine}; yours: {}", user_decision_text(u)),
            None => machine,
        }
    }

    fn verdict_line(&self) -> String {
        let machine = match self.machine_verdict().and_then(|d| d.decisive_step.map(|s| (s, d))) {
            Some((s, d)) => format!(
                ": decisive step {s} by {} (confidence {})",
                clean(d.agent.as_deref().unwrap_or("?")),
                prob(d.confidence)
            ),
            None if self
                .machine_verdict()
                .is_some_and(|d| matches!(d.explanation.rule, crate::diagnosis::Rule::NoFailure { .. })) =>
            {
                ": no failure found".into()
            }
            None if self.machine_verdict().is_some() => ": no decisive step named".into(),
            None => String::new(),
        };
        match self.user_decision() {
            Some(u) if self.overrides_kept_the_step() => match u.decisive_step {
                Some(s) => format!("{machine}; your overrides keep step {s}"),
                None => machine,
            },
            Some(u) => format!("{machine}; your decision: {}", user_decision_text(u)),
            None => machine,
        }
    }

    // ----- overrides -----

    fn toggle_override(&mut self, a: Action) -> Vec<Effect> {
        let Some(s) = self.target_step() else {
            self.set_status(Level::Info, "select a step first (hierarchy, candidates or roles view)");
            return Vec::new();
        };
        let edit = match a {
            Action::Mark => Edit::Mark,
            Action::Exclude => Edit::Exclude,
            _ => Edit::Pin,
        };
        let msg = self.editor.apply(edit, s);
        self.overrides_changed(msg)
    }

    fn undo(&mut self) -> Vec<Effect> {
        if self.editor.undo() {
            self.overrides_changed("undid the last override".into())
        } else {
            self.set_status(Level::Info, "nothing to undo");
            Vec::new()
        }
    }

    /// Asks for the overrides to be saved at once and re-runs the stages downstream of them.
    fn overrides_changed(&mut self, msg: String) -> Vec<Effect> {
        let rerun = match (&self.runs.running, self.results.pipeline.last_stage()) {
            (Some(r), _) if r.target.is_pipeline() || r.target == RunTarget::AllMethods => Some(r.target),
            (Some(_), _) => None,
            (None, Some(last)) if last >= Stage::Dependencies => {
                Some(RunTarget::Rerun { from: Stage::Dependencies, to: last })
            }
            _ => None,
        };
        let hint = if self.method != Method::Falat {
            format!("; overrides apply to falat only (method {} is selected)", self.method)
        } else if rerun.is_none() {
            "; press a to run the pipeline with them".to_string()
        } else {
            String::new()
        };
        self.editor.begin_note(msg, hint, rerun.is_some());
        let save = FileEffect::SaveOverrides {
            trajectory: self.traj.id.clone(),
            overrides: self.overrides().clone(),
            undo: self.editor.history().to_vec(),
        };
        let mut effects = vec![Effect::File(Box::new(save))];
        effects.extend(rerun.map(|t| self.request(t)).unwrap_or_default());
        if let Some((level, text)) = self.editor.note_status(self.runs.busy()) {
            self.set_status(level, text);
        }
        effects
    }

    /// Takes the result of saving the overrides: the status says where they went, or that they
    /// could not be saved (an error, never silent).
    pub fn on_saved(&mut self, result: anyhow::Result<store::Saved>) {
        if let Some((level, text)) = self.editor.saved(result, self.runs.busy()) {
            self.set_status(level, text);
        }
    }

    /// Takes the result of an export.
    pub fn on_exported(&mut self, result: anyhow::Result<Exported>) {
        match result {
            Ok(e) => {
                // The reason first: a long path may be shortened in the status line.
                let why = e.fallback.as_ref().map_or(String::new(), |f| format!("{}: ", f.reason()));
                let msg = format!("{why}exported {} and {}", e.markdown.display(), e.json.display());
                // Two long paths do not fit a narrow status line: the short form names the two
                // kinds of report once and their folder, which the path shortening can fold.
                let folder = e.markdown.parent().map(|d| d.display().to_string()).unwrap_or_default();
                let short = format!(
                    "{why}exported {} and {} to {folder}",
                    crate::ingest::fs::REPORT_MD_SUFFIX,
                    crate::ingest::fs::REPORT_JSON_SUFFIX
                );
                self.exported = Some(e);
                self.set_status_with_short(Level::Ok, msg, Some(short));
            }
            Err(e) => self.set_status(Level::Error, format!("export failed: {e:#}")),
        }
    }

    /// Whether a step is marked, excluded or pinned by the user: `(marked, excluded, pinned)`.
    pub fn user_marks(&self, s: usize) -> (bool, bool, bool) {
        self.editor.marks(s)
    }

    /// The user's overrides.
    pub fn overrides(&self) -> &Overrides {
        &self.editor.current
    }
}

/// Whether a semantic edge shares nothing but small numbers (at most four digits).
pub fn number_only(e: &DepEdge) -> bool {
    let small = |k: &str| {
        let digits: String = k.chars().filter(|c| !matches!(c, '.' | '-' | '%' | '$')).collect();
        !digits.is_empty() && digits.len() <= 4 && digits.chars().all(|c| c.is_ascii_digit())
    };
    e.kind == EdgeKind::Semantic && !e.shared.is_empty() && e.shared.iter().all(|k| small(k))
}

/// The user's decision in a few words: `step 4 (pinned)` or `step 7 with your marks`.
pub fn user_decision_text(u: &Diagnosis) -> String {
    let how = if u.overrides.pinned.is_some() && u.overrides.pinned == u.decisive_step {
        "pinned"
    } else {
        "with your overrides"
    };
    match u.decisive_step {
        Some(s) => format!("step {s} ({how})"),
        None => "no step (with your overrides)".into(),
    }
}

/// Trace text made safe and single-line for the screen.
pub fn clean(s: &str) -> String {
    text::sanitize(s).replace('\n', " ")
}

/// A duration for the status line: milliseconds below ten seconds, else seconds.
pub fn ms(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 { format!("{:.0} ms", s * 1000.0) } else { format!("{s:.1} s") }
}

/// A probability with two decimals; one that rounds to zero but is not says `<0.01` (on a long
/// trace every step's probability is small).
pub fn prob(p: f32) -> String {
    if p > 0.0 && p < 0.005 { "<0.01".into() } else { format!("{p:.2}") }
}
