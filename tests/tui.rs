//! TUI tests on real Who&When samples (`tests/fixtures/tui/`): TestBackend snapshots of every
//! view before and after the pipeline ran, key-driven navigation, overrides (re-run, saved,
//! restored), export, hostile trace content, and the event loop with a blocked judge.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use falat::diagnosis::{Origin, Part, Role};
use falat::judge::heuristic::HeuristicJudge;
use falat::judge::{Context, Judge, Judged, Question};
use falat::methods::Method;
use falat::methods::falat::Stage;
use falat::tui::action::Action;
use falat::tui::app::{Level, Mode, Pane, View};
use falat::tui::job::{self, JobMsg, RunRequest, RunTarget};
use falat::tui::runs::Activity;
use falat::tui::{self, App, TuiOptions, store};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};

const HAND: &str = "hand-crafted-1.json";
const ALGO: &str = "algorithm-generated-1.json";

/// A copy of a fixture in a fresh folder (overrides and reports go beside it), with an empty
/// config folder so the user's own key map and theme never leak into the tests.
struct Fixture {
    dir: tempfile::TempDir,
    trace: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        Fixture::copy(&Path::new("tests/fixtures/tui").join(name))
    }

    /// A copy of any trace file (the bundled Who&When runs live in `data/who-and-when`).
    fn copy(source: &Path) -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let trace = dir.path().join(source.file_name().expect("a file name"));
        std::fs::copy(source, &trace).expect("copy fixture");
        Fixture { dir, trace }
    }

    fn opts(&self) -> TuiOptions {
        TuiOptions {
            theme: Some("dark".into()),
            config_dir: Some(self.dir.path().join("config")),
            ..TuiOptions::default()
        }
    }

    fn open(&self) -> App {
        self.open_with(Arc::new(HeuristicJudge))
    }

    fn open_with(&self, judge: Arc<dyn Judge>) -> App {
        let mut app = tui::open(&self.trace, &self.opts(), judge).expect("open");
        app.show_timings = false;
        app
    }
}

/// A cut status line without its pointer to the messages overlay (`… — press ! for all
/// messages`, or `… (press !)` in a short room); `None` when it has none.
fn without_pointer(status: &str) -> Option<&str> {
    status.strip_suffix("… — press ! for all messages").or_else(|| status.strip_suffix("… (press !)"))
}

fn draw(app: &App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    term.draw(|f| tui::render(app, f)).expect("draw");
    term
}

/// The screen with temporary folder names replaced by `[TMP]`, for stable snapshots.
fn redact_tmp(screen: &str) -> String {
    let tmp = std::env::temp_dir().display().to_string();
    let re =
        regex::Regex::new(&format!(r"{}/\.tmp[A-Za-z0-9]*", regex::escape(tmp.trim_end_matches('/')))).expect("re");
    re.replace_all(screen, "[TMP]").into_owned()
}

fn screen(app: &App) -> String {
    draw(app, 120, 40).backend().to_string()
}

fn key_event(code: KeyCode) -> KeyEvent {
    let mods = match code {
        KeyCode::Char(c) if c.is_ascii_uppercase() => KeyModifiers::SHIFT,
        _ => KeyModifiers::NONE,
    };
    KeyEvent::new(code, mods)
}

/// Presses keys given as text (`<enter>`, `<esc>`, `<tab>` for named keys) and carries out the
/// effects synchronously; returns what was copied.
fn press(app: &mut App, keys: &str) -> Vec<String> {
    press_on(app, keys, 120, 40)
}

/// [`press`] on a terminal `w`×`h`.
fn press_on(app: &mut App, keys: &str, w: u16, h: u16) -> Vec<String> {
    let mut copied = Vec::new();
    for key in parse_keys(keys) {
        let effects = app.on_key(key);
        tui::drive(app, effects, &mut copied);
        // Like the event loop: each frame is prepared for the screen, then drawn.
        app.prepare(Rect::new(0, 0, w, h));
        draw(app, w, h);
    }
    copied
}

/// Keys as text: characters, and `<enter>`, `<esc>`, `<pgdn>`... for named keys, `<c-d>` for
/// ctrl and a letter.
fn parse_keys(keys: &str) -> Vec<KeyEvent> {
    let mut out = Vec::new();
    let mut rest = keys;
    while let Some(c) = rest.chars().next() {
        if let Some(end) = rest.strip_prefix('<').and_then(|r| r.find('>')) {
            let name = &rest[1..end + 1];
            if let Some(c) = name.strip_prefix("c-").and_then(|c| c.chars().next()) {
                out.push(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL));
                rest = &rest[end + 2..];
                continue;
            }
            out.push(key_event(match name {
                "enter" => KeyCode::Enter,
                "esc" => KeyCode::Esc,
                "tab" => KeyCode::Tab,
                "backtab" => KeyCode::BackTab,
                "down" => KeyCode::Down,
                "up" => KeyCode::Up,
                "pgdn" => KeyCode::PageDown,
                "pgup" => KeyCode::PageUp,
                "bs" => KeyCode::Backspace,
                other => panic!("unknown key name {other}"),
            }));
            rest = &rest[end + 2..];
        } else {
            out.push(key_event(KeyCode::Char(c)));
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

// ----- snapshots -----

fn snapshot_views(fixture: &str, label: &str) {
    let f = Fixture::new(fixture);
    let mut app = f.open();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_suffix(format!("{}-{label}", fixture.trim_end_matches(".json")));
    settings.set_prepend_module_to_snapshot(false);
    if label == "after" {
        press(&mut app, "a");
        let decisive = app.results.diagnosis.clone().expect("the pipeline ran").decisive_step.expect("a decisive step");
        // The run itself selects the decisive step: no key needed to see it.
        assert_eq!(app.nav.step, decisive);
        // A run that warned says so in the status line, as a warning, with where to read it.
        let warnings = app.results.diagnosis.as_ref().map_or(0, |d| d.warnings.len());
        let status = app.status.clone().expect("status");
        if warnings > 0 {
            assert_eq!(status.level, Level::Warn, "{}", status.text);
            let count = if warnings == 1 { "1 warning".to_string() } else { format!("{warnings} warnings") };
            assert!(
                status.text.starts_with(&format!("finished all stages, {count} (press 5: verdict): decisive step")),
                "{}",
                status.text
            );
            // The short form (80 columns) keeps the count, the key and the view first.
            assert!(
                status
                    .short
                    .as_deref()
                    .is_some_and(|s| s.starts_with(&format!("{count} (5: verdict): step {decisive} by "))),
                "{:?}",
                status.short
            );
        } else {
            assert_eq!(status.level, Level::Ok, "{}", status.text);
            assert!(!status.text.contains("warning"), "{}", status.text);
        }
    }
    settings.bind(|| {
        for v in View::ALL {
            app.nav.view = v;
            let screen = screen(&app);
            assert_titles_whole_and_cuts_marked(&screen, &format!("{v:?} 120x40 {label}"));
            insta::assert_snapshot!(v.title().to_lowercase(), screen);
            for (w, h) in [(80, 24), (200, 60)] {
                let name = format!("{}-{w}x{h}", v.title().to_lowercase());
                let screen = draw(&app, w, h).backend().to_string();
                assert_titles_whole_and_cuts_marked(&screen, &format!("{v:?} {w}x{h} {label}"));
                insta::assert_snapshot!(name, screen);
            }
        }
    });
}

/// Every pane's left title is followed by its rule and every right title is whole (ends in a
/// space before the corner, or in `…` when cut); the status line, when it fills the width, ends
/// in `…`. Checked on every snapshot screen, so no size or view can let a title collide.
fn assert_titles_whole_and_cuts_marked(screen: &str, what: &str) {
    let lines: Vec<&str> = screen.lines().map(|l| l.trim_matches('"')).collect();
    for line in &lines {
        for (at, _) in line.match_indices("┌ ") {
            let title = &line[at + "┌ ".len()..];
            let end = title.find(" ─");
            let gap = title.find(['─', '┐']);
            assert!(end.is_some() && end.map(|e| e + 1) == gap, "{what}: a title runs into the next in {line:?}");
        }
        for (at, _) in line.match_indices('┐') {
            let before = line[..at].chars().next_back();
            assert!(matches!(before, Some(' ' | '─' | '…')), "{what}: a right title is cut bare in {line:?}");
        }
    }
    let status = lines[lines.len() - 2];
    if !status.ends_with(' ') && without_pointer(status).is_none() {
        assert!(status.ends_with('…'), "{what}: the status line is cut without an ellipsis: {status:?}");
    }
}

#[test]
fn snapshots_hand_crafted_before_run() {
    snapshot_views(HAND, "before");
}

#[test]
fn snapshots_hand_crafted_after_run() {
    snapshot_views(HAND, "after");
}

#[test]
fn snapshots_algorithm_generated_before_run() {
    snapshot_views(ALGO, "before");
}

#[test]
fn snapshots_algorithm_generated_after_run() {
    snapshot_views(ALGO, "after");
}

#[test]
fn a_langfuse_warning_is_marked_in_the_steps_list_and_its_message_is_in_the_evidence() {
    // Step 5 is a RETRIEVER at `level: WARNING` whose `statusMessage` says why it found nothing.
    let f = Fixture::copy(Path::new("tests/fixtures/handbuilt/langfuse/rag_ratelimit_warning.langfuse.json"));
    let mut app = f.open();
    press(&mut app, ":5<enter><enter>");
    assert_eq!(app.nav.step, 5);
    let s = screen(&app);
    let row = s.lines().find(|l| l.contains("△")).unwrap_or_else(|| panic!("a warning mark in:\n{s}"));
    assert!(row.contains(" 5"), "{row}");
    assert_eq!(s.matches('△').count(), 1, "one warning step: {s}");
    assert!(s.contains("[warning] 0 documents matched filter {plan: team}"), "{s}");
    // The Langfuse EVENT is no step: no assistant message says its payload.
    assert!(!s.contains("latency_ms"), "{s}");
}

#[test]
fn snapshot_evidence_with_code_and_dependencies() {
    // Algorithm-generated step 2 holds a python block; step 3 is the terminal's output.
    let f = Fixture::new(ALGO);
    let mut app = f.open();
    press(&mut app, "a:2<enter><enter>");
    assert_eq!((app.nav.step, app.nav.focus), (2, Pane::Evidence));
    press(&mut app, "<pgdn>");
    assert!(app.nav.evidence_scroll > 0, "the evidence scrolls");
    insta::assert_snapshot!("algorithm-generated-1-evidence-step-2", screen(&app));
}

#[test]
fn snapshot_help_overlay_and_running_status() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "?");
    assert_eq!(app.mode, Mode::Help);
    insta::assert_snapshot!("hand-crafted-1-help", screen(&app));
    press(&mut app, "j");
    assert_eq!((app.mode.clone(), app.help_scroll), (Mode::Help, 1), "j scrolls the help, it stays open");
    press(&mut app, "<esc>");
    assert_eq!(app.mode, Mode::Normal, "esc closes the help");
    // A run in progress, as the background job reports it.
    let effects = app.on_key(key_event(KeyCode::Char('a')));
    assert!(matches!(effects.as_slice(), [tui::Effect::Run(_)]));
    let id = app.runs.running.as_ref().expect("running").id;
    app.on_job(JobMsg::Progress { id, activity: Activity::Stage(Stage::Verification), done: 3, total: 8 });
    insta::assert_snapshot!("hand-crafted-1-running", screen(&app));
    // The judge's questions and calls so far (an LLM run reports them after each question).
    app.on_job(JobMsg::Asked { id, questions: 14, calls: 11 });
    let shown = screen(&app);
    assert!(shown.contains("verification 3/8 · 14 questions (11 calls)"), "{shown}");
}

// ----- methods -----

fn snapshot_methods_after_running_all(fixture: &str) {
    let f = Fixture::new(fixture);
    let mut app = f.open();
    press(&mut app, "6");
    assert_eq!(app.nav.view, View::Methods);
    assert!(screen(&app).contains("press M to run all 7 methods"), "{}", screen(&app));
    press(&mut app, "M");
    assert!(app.runs.running.is_none());
    assert_eq!(app.results.methods.len(), Method::ALL.len(), "every method ran");
    assert!(app.results.diagnosis.is_none(), "running all methods leaves the pipeline's verdict alone");
    let name = format!("{}-methods-all-run", fixture.trim_end_matches(".json"));
    insta::assert_snapshot!(name, screen(&app));
}

#[test]
fn snapshot_methods_view_after_running_all_methods_hand_crafted() {
    snapshot_methods_after_running_all(HAND);
}

#[test]
fn snapshot_methods_view_after_running_all_methods_algorithm_generated() {
    snapshot_methods_after_running_all(ALGO);
}

#[test]
fn selecting_the_echo_row_shows_the_analysts_votes_and_the_review_flag() {
    let f = Fixture::new(ALGO);
    let mut app = f.open();
    press(&mut app, "6Mj");
    assert_eq!(app.selected_method(), Method::Echo);
    let s = screen(&app);
    for part in [" echo details ", "panel", "agent consensus", "step consensus", "review"] {
        assert!(s.contains(part), "{part} missing:\n{s}");
    }
    let echo = app.results.methods.get(&Method::Echo).expect("echo ran");
    let analyst = &echo.details.iter().find(|x| x.title() == "panel").expect("panel").lines()[0];
    assert!(s.contains(analyst.as_str()), "the analysts are listed:\n{s}");
    // DeFA's row shows its propagation graph.
    press(&mut app, "j");
    assert_eq!(app.selected_method(), Method::Defa);
    assert!(screen(&app).contains("propagation graph"), "{}", screen(&app));
    // Enter goes to the step the selected method named.
    let step = app.results.methods[&Method::Defa].decisive_step.expect("defa names a step");
    press(&mut app, "<enter>");
    assert_eq!((app.nav.view, app.nav.step), (View::Hierarchy, step));
}

#[test]
fn tab_selects_the_step_references_of_a_methods_details_and_enter_follows_them() {
    // See: issue 15 item 2, in the methods view: the details name steps (a DeFA segment's
    // candidates, an edge of its propagation graph, the verdict's reason).
    let f = Fixture::new(ALGO);
    let mut app = f.open();
    press(&mut app, "6Mjj");
    assert_eq!(app.selected_method(), Method::Defa);
    let defa = app.results.methods[&Method::Defa].clone();
    let links = app.links();
    // The details' first reference is the step the method named, then those of its reason and details.
    assert_eq!(links.first().copied(), defa.decisive_step, "{links:?}");
    assert!(links.len() >= 2, "the reason and the details name steps: {links:?}");
    press(&mut app, "<tab><tab>");
    let status = app.status.clone().expect("status").text;
    assert_eq!(status.split(':').next(), Some(format!("step reference 2 of {}", links.len()).as_str()), "{status}");
    press(&mut app, "<enter>");
    assert_eq!((app.nav.view, app.nav.step), (View::Hierarchy, links[1]));
    // Back in the methods view, moving to another method drops the selected reference.
    press(&mut app, "<bs>");
    assert_eq!(app.nav.view, View::Methods);
    press(&mut app, "k");
    assert_eq!(app.nav.link, None);
}

#[test]
fn another_method_runs_on_a_and_fills_the_verdict_view() {
    let f = Fixture::new(HAND);
    let opts = TuiOptions { method: Method::Echo, ..f.opts() };
    let mut app = tui::open(&f.trace, &opts, Arc::new(HeuristicJudge)).expect("open");
    app.show_timings = false;
    press(&mut app, "a");
    let d = app.results.diagnosis.clone().expect("echo ran");
    assert_eq!(d.method, Method::Echo);
    assert!(app.results.pipeline.last_stage().is_none(), "the staged pipeline did not run");
    assert!(app.results.methods.contains_key(&Method::Echo));
    press(&mut app, "5");
    let s = screen(&app);
    assert!(s.contains("method echo selected (--method)"), "{s}");
    assert!(s.contains("overrides apply to falat only"), "{s}");
    assert!(s.contains("method echo · judge heuristic"), "{s}");
    press(&mut app, "6");
    assert_eq!(app.selected_method(), Method::Echo, "the methods view starts on the selected method");
}

#[test]
fn a_cancelled_methods_run_keeps_no_results() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    let flag = Arc::new(AtomicBool::new(false));
    let judge = CancellingJudge { flag: Arc::clone(&flag), calls: AtomicUsize::new(0) };
    let effects = app.on_key(key_event(KeyCode::Char('M')));
    let [tui::Effect::Run(req)] = effects.as_slice() else { panic!("a run") };
    assert_eq!(req.target, RunTarget::AllMethods);
    let done = job::execute(req, &app.traj, &judge, flag, None);
    assert!(done.outcome.is_err() && done.methods.is_empty(), "cancelled");
    assert!(judge.calls.load(Ordering::SeqCst) <= 4, "the real judge is not asked after cancel");
    app.on_job(JobMsg::Done(Box::new(done)));
    assert!(app.runs.running.is_none() && app.results.methods.is_empty());
    assert_eq!(app.status.clone().expect("status").text, "cancelled all methods; results unchanged");
}

// ----- navigation -----

#[test]
fn drill_down_and_back_up() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    assert_eq!((app.nav.view, app.nav.focus, app.nav.phase, app.nav.step), (View::Hierarchy, Pane::Phases, 0, 0));
    let s = screen(&app);
    for title in [" Phases ", " Steps ", " Evidence ", " Dependencies "] {
        assert!(s.contains(title), "pane {title} missing:\n{s}");
    }
    press(&mut app, "G");
    let last = app.phases().len() - 1;
    assert_eq!(app.nav.phase, last);
    assert_eq!(app.nav.step, app.phases()[last].range.start, "a phase selects its first step");
    press(&mut app, "<enter>");
    assert_eq!(app.nav.focus, Pane::Steps);
    press(&mut app, "jj");
    assert_eq!(app.nav.step, app.phases()[last].range.start + 2);
    press(&mut app, "<enter>");
    assert_eq!(app.nav.focus, Pane::Evidence);
    press(&mut app, "<esc><esc>");
    assert_eq!(app.nav.focus, Pane::Phases);
    press(&mut app, "g");
    assert_eq!((app.nav.phase, app.nav.step), (0, 0));
    press(&mut app, "<tab><tab><tab>");
    assert_eq!(app.nav.focus, Pane::Edges);
    press(&mut app, "<tab>");
    assert_eq!(app.nav.focus, Pane::Phases);
    press(&mut app, "<backtab>");
    assert_eq!(app.nav.focus, Pane::Edges);
}

#[test]
fn steps_move_across_phases_and_jump_by_number() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "<enter>jjjj");
    assert_eq!(app.nav.step, 4);
    assert_eq!(app.nav.phase, app.phase_of(4));
    assert!(screen(&app).contains("#4 "), "evidence header shows the step");
    press(&mut app, ":27<enter>");
    assert_eq!(app.nav.step, 27);
    press(&mut app, ":999<enter>");
    assert_eq!(app.nav.step, 27, "out of range keeps the selection");
    let status = app.status.clone().expect("status");
    assert_eq!(status.level, Level::Warn);
    assert!(status.text.contains("steps are 0 to 28"), "{}", status.text);
    press(&mut app, ":<esc>");
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn search_finds_steps_and_cycles() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "/jidokwan<enter>");
    let first = app.nav.step;
    assert!(app.traj.steps[first].content.to_lowercase().contains("jidokwan"));
    let status = app.status.clone().expect("status").text;
    assert!(status.contains("'jidokwan' found in step"), "{status}");
    press(&mut app, "n");
    let second = app.nav.step;
    assert!(second != first && app.traj.steps[second].content.to_lowercase().contains("jidokwan"));
    press(&mut app, "N");
    assert_eq!(app.nav.step, first);
    press(&mut app, "/no such needle anywhere<enter>");
    assert_eq!(app.nav.step, first);
    assert_eq!(app.status.clone().expect("status").level, Level::Warn);
}

#[test]
fn an_edge_jumps_to_the_other_step() {
    let f = Fixture::new(ALGO);
    let mut app = f.open();
    press(&mut app, ":1<enter>");
    let edges: Vec<(bool, usize)> = app.edges().into_iter().map(|(i, s, _)| (i, s)).collect();
    assert!(!edges.is_empty(), "step 1 has dependency edges");
    let s = screen(&app);
    assert!(s.contains("← #0   runs the code  1.00"), "edge kinds shown in plain words:\n{s}");
    assert!(s.contains("  step link           strength transition"), "the dependencies have column headers:\n{s}");
    // The final output is the analysis' final step: the last substantive one (step 5 closes the
    // run with a plain "TERMINATE").
    assert!(s.contains("no dependency path from step 1 to the final output (step 4)"), "{s}");
    press(&mut app, "<tab><tab>");
    assert_eq!(app.nav.focus, Pane::Edges);
    let target = edges[edges.len() - 1].1;
    press(&mut app, "G<enter>");
    assert_eq!(app.nav.step, target);
    assert_eq!(app.nav.focus, Pane::Steps);
}

#[test]
fn views_switch_and_jump_back_to_the_hierarchy() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "a2");
    assert_eq!(app.nav.view, View::Candidates);
    let d = app.results.diagnosis.clone().expect("diagnosis");
    let decisive = d.decisive_step.expect("decisive step");
    assert_eq!(d.candidates[app.nav.list_sel].step, decisive, "the candidates view opens on the decisive step");
    press(&mut app, "<enter>");
    assert_eq!((app.nav.view, app.nav.step), (View::Hierarchy, decisive));
    press(&mut app, "3");
    assert_eq!(app.nav.view, View::Roles);
    assert_eq!(app.role_rows()[app.nav.list_sel], (decisive, Some(Role::RootCause)));
    press(&mut app, "]]");
    assert_eq!(app.nav.view, View::Verdict);
    press(&mut app, "]");
    assert_eq!(app.nav.view, View::Methods);
    press(&mut app, "]");
    assert_eq!(app.nav.view, View::Hierarchy);
    press(&mut app, "[[");
    assert_eq!(app.nav.view, View::Verdict);
    let s = screen(&app);
    assert!(s.contains("ROOT_CAUSE") && s.contains(&format!("decisive step {decisive}")), "{s}");
}

#[test]
fn copy_sends_the_sanitised_step() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    let copied = press(&mut app, ":12<enter>y");
    assert_eq!(copied.len(), 1);
    assert!(copied[0].starts_with("step 12 (WebSurfer)"), "{}", copied[0]);
    assert!(app.status.clone().expect("status").text.contains("osc 52"));
}

#[test]
fn mouse_scroll_moves_the_pane_under_the_pointer() {
    use crossterm::event::{MouseEvent, MouseEventKind};
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "G");
    let steps = app.view.screen.panes[1];
    let ev =
        |kind| Event::Mouse(MouseEvent { kind, column: steps.x + 3, row: steps.y + 2, modifiers: KeyModifiers::NONE });
    app.on_event(ev(MouseEventKind::ScrollDown));
    assert_eq!(app.nav.focus, Pane::Steps);
    assert_eq!(app.nav.step, app.phases()[app.nav.phase].range.start + 1);
    app.on_event(ev(MouseEventKind::ScrollUp));
    assert_eq!(app.nav.step, app.phases()[app.nav.phase].range.start);
}

// ----- overrides -----

#[test]
fn pin_reruns_saves_and_is_restored_on_reopen() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "a");
    let before = app.results.diagnosis.clone().expect("diagnosis").decisive_step;
    assert_eq!(before, Some(12));
    press(&mut app, ":16<enter>p");
    let d = app.results.diagnosis.clone().expect("re-run diagnosis");
    assert_eq!(d.decisive_step, Some(16), "downstream stages re-ran with the pin");
    assert_eq!(d.overrides.pinned, Some(16));
    assert_eq!(d.category, "user_pinned");
    let path = store::overrides_path(&f.trace);
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("saved")).expect("json");
    assert_eq!(saved["pinned"], 16);
    assert_eq!(saved["schema"], store::OVERRIDES_SCHEMA);
    assert!(screen(&app).contains("★"), "the pinned step is marked");
    // The machine's decisive step (12) is no longer the root cause in the user's decision: the
    // Steps pane keeps a ▶ on it; the pinned step carries the ROOT tag.
    press(&mut app, ":12<enter>");
    let shown = screen(&app);
    let row = |n: &str| shown.lines().find(|l| l.contains(n)).unwrap_or_default().to_string();
    assert!(row(" 12 WebSurfer").contains("▶ 12 WebSurfer"), "{shown}");
    assert!(row(" 16 WebSurfer").contains("ROOT"), "{shown}");

    let mut again = f.open();
    assert_eq!(again.overrides().pinned, Some(16), "restored on reopen");
    let status = again.status.clone().expect("status").text;
    assert!(status.contains("restored your overrides"), "{status}");
    press(&mut again, "a");
    assert_eq!(again.results.diagnosis.clone().expect("diagnosis").decisive_step, Some(16));
    // Restored overrides: the run also finds the machine's own verdict to show beside them.
    assert_eq!(again.machine_verdict().expect("machine verdict").decisive_step, Some(12));
    press(&mut again, "e");
    let md = std::fs::read_to_string(store::beside(&f.trace, ".falat.md")).expect("markdown");
    assert!(md.contains("**Decisive step 12**"), "{md}");
    assert!(md.contains("You overrode the machine: marked none, excluded none, pinned 16."), "{md}");
}

#[test]
fn an_override_is_the_users_decision_beside_the_machines_unchanged_verdict() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "a");
    let machine = app.results.diagnosis.clone().expect("diagnosis");
    assert_eq!(machine.decisive_step, Some(12));
    // Pin the task statement (step 0), whose own checks fail.
    press(&mut app, ":0<enter>p");
    let user = app.user_decision().cloned().expect("a user decision");
    assert_eq!((user.decisive_step, user.overrides.pinned), (Some(0), Some(0)));
    let m = app.machine_verdict().expect("machine verdict");
    assert_eq!(
        (m.decisive_step, m.confidence, m.category.as_str()),
        (Some(12), machine.confidence, machine.category.as_str())
    );
    let status = app.status.clone().expect("status").text;
    assert!(status.contains("pinned step 0"), "{status}");
    press(&mut app, "5");
    let verdict = screen(&app);
    assert!(verdict.contains("decisive step 12"), "{verdict}");
    assert!(verdict.contains(&format!("confidence {:.2}", machine.confidence)), "{verdict}");
    assert!(verdict.contains("YOUR DECISION   step 0"), "{verdict}");
    assert!(!verdict.contains("confidence 1.00"), "the pin's confidence is not shown as the machine's: {verdict}");
    // The overrides listed are the user's, though the lines above show the machine's verdict.
    assert!(verdict.contains("your overrides: marked [] · excluded [] · pinned 0"), "{verdict}");
    // Marked and then pinned, a step carries the user's mark once.
    press(&mut app, "1m");
    let user = app.user_decision().cloned().expect("a user decision");
    assert_eq!((user.overrides.marked.as_slice(), user.overrides.pinned), (&[0][..], Some(0)));
    let c = user.candidates.iter().find(|c| c.step == 0).expect("step 0 is a candidate");
    let marks = c.findings.iter().filter(|f| f.signal == falat::diagnosis::Signal::UserMarked).count();
    assert_eq!(marks, 1, "{:?}", c.findings);
    press(&mut app, "5");
    assert!(screen(&app).contains("your overrides: marked [0] · excluded [] · pinned 0"), "{}", screen(&app));
    // The methods view compares machine verdicts: the falat row keeps step 12.
    press(&mut app, "6M");
    assert_eq!(app.results.methods[&Method::Falat].decisive_step, Some(12));
    // The export carries both, the machine's verdict in the verdict fields.
    press(&mut app, "e");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(store::beside(&f.trace, ".falat.report.json")).expect("json"))
            .expect("valid");
    assert_eq!(json["decisive_step"], 12);
    assert_eq!(json["category"], serde_json::json!(machine.category.as_str()));
    assert_eq!(json["user_decision"]["decisive_step"], 0);
    assert_eq!(json["user_decision"]["category"], "user_pinned");
    assert_eq!(json["overrides"]["pinned"], 0);
    let md = std::fs::read_to_string(store::beside(&f.trace, ".falat.md")).expect("markdown");
    assert!(md.contains("**Decisive step 12** by **WebSurfer**"), "{md}");
    assert!(md.contains("## Your decision"), "{md}");
    assert!(md.contains("With your overrides the decisive step is **step 0**"), "{md}");
    // Undo (the mark, then the pin): no decision of the user's any more.
    press(&mut app, "u");
    assert_eq!(app.overrides().pinned, Some(0));
    press(&mut app, "u");
    assert!(app.user_decision().is_none());
    assert_eq!(app.decisive_step(), Some(12));
}

#[test]
fn exclude_mark_and_undo() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "a:12<enter>X");
    let d = app.results.diagnosis.clone().expect("diagnosis");
    assert_ne!(d.decisive_step, Some(12), "an excluded step is never named");
    let c12 = d.candidate(12).expect("still listed");
    assert!(c12.pruned.as_ref().expect("pruned").reason.contains("excluded by the user"));
    press(&mut app, ":5<enter>m");
    let d = app.results.diagnosis.clone().expect("diagnosis");
    assert_eq!(d.candidate(5).expect("marked candidate").origin, Origin::User);
    assert_eq!(d.decisive_step, Some(16), "a mark adds a candidate; it does not outrank a verified one");
    assert_eq!(app.overrides().marked, vec![5]);
    assert_eq!(app.overrides().excluded, vec![12]);
    press(&mut app, "u");
    assert!(app.overrides().marked.is_empty());
    assert!(app.results.diagnosis.clone().expect("diagnosis").candidate(5).is_none_or(|c| c.origin == Origin::Machine));
    press(&mut app, "u");
    assert!(app.overrides().is_empty());
    assert_eq!(app.results.diagnosis.clone().expect("diagnosis").decisive_step, Some(12), "undo restores the verdict");
    let restored = store::load_overrides(&f.trace, app.n_steps());
    assert!(restored.overrides.is_empty(), "undo is saved too");
    press(&mut app, "u");
    assert_eq!(app.status.clone().expect("status").text, "nothing to undo");
}

#[test]
fn overrides_before_any_run_are_saved_and_used_by_the_next_run() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, ":16<enter>p");
    assert!(app.results.diagnosis.is_none());
    assert!(app.status.clone().expect("status").text.contains("press a to run the pipeline with them"));
    press(&mut app, "a");
    assert_eq!(app.results.diagnosis.clone().expect("diagnosis").decisive_step, Some(16));
}

#[test]
fn override_from_the_candidates_view_targets_the_selected_candidate() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "a2j");
    let target = app.results.diagnosis.clone().expect("diagnosis").candidates[app.nav.list_sel].step;
    press(&mut app, "X");
    assert_eq!(app.overrides().excluded, vec![target]);
    let s = screen(&app);
    assert!(s.contains("excluded"), "{s}");
}

#[test]
fn snapshot_candidates_with_user_overrides() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "a:12<enter>X:5<enter>m2");
    let d = app.results.diagnosis.clone().expect("diagnosis");
    let row = d.candidates.iter().position(|c| c.step == 12).expect("excluded candidate listed");
    app.nav.list_sel = row;
    let s = screen(&app);
    assert!(s.contains("excluded by the user") && s.contains("user"), "{s}");
    insta::assert_snapshot!("hand-crafted-1-candidates-with-overrides", redact_tmp(&s));
}

#[test]
fn a_corrupt_overrides_file_is_kept_and_reported() {
    let f = Fixture::new(HAND);
    let path = store::overrides_path(&f.trace);
    std::fs::write(&path, "{\"schema\": \"falat.overrides/v1\", \"pinned\": ").expect("write");
    let mut app = f.open();
    assert!(app.overrides().is_empty());
    let status = app.status.clone().expect("status");
    assert_eq!(status.level, Level::Warn);
    assert!(status.text.contains("moved it aside to"), "{}", status.text);
    let backup = store::beside(&path, ".bak");
    assert_eq!(std::fs::read_to_string(&backup).expect("backup"), "{\"schema\": \"falat.overrides/v1\", \"pinned\": ");
    press(&mut app, "p");
    assert_eq!(store::load_overrides(&f.trace, app.n_steps()).overrides.pinned, Some(0));
    assert!(backup.exists(), "the backup survives the next save");
}

// ----- export -----

#[test]
fn export_writes_both_reports_beside_the_trace() {
    let f = Fixture::new(ALGO);
    let mut app = f.open();
    press(&mut app, "e");
    assert_eq!(app.status.clone().expect("status").level, Level::Warn, "nothing to export before a run");
    assert!(!store::beside(&f.trace, ".falat.md").exists());
    press(&mut app, "a:3<enter>m");
    press(&mut app, "e");
    let md_path = store::beside(&f.trace, ".falat.md");
    let json_path = store::beside(&f.trace, ".falat.report.json");
    let status = app.status.clone().expect("status").text;
    assert!(status.contains(&md_path.display().to_string()) && status.contains(&json_path.display().to_string()));
    let md = std::fs::read_to_string(&md_path).expect("markdown");
    assert!(md.starts_with("# falat diagnosis"));
    assert!(md.contains("You overrode the machine: marked 3, excluded none, pinned none."), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("json")).expect("valid");
    assert_eq!(json["schema"], "falat.diagnosis/v1");
    assert_eq!(json["overrides"]["marked"], serde_json::json!([3]));
    // The verdict fields are the machine's; the mark's outcome is the user's decision beside it.
    let machine = app.machine_verdict().cloned().expect("machine verdict");
    assert_eq!(json["decisive_step"], serde_json::json!(machine.decisive_step));
    assert!(machine.overrides.is_empty());
    let d = app.results.diagnosis.clone().expect("diagnosis");
    if d.decisive_step != machine.decisive_step {
        assert_eq!(json["user_decision"]["decisive_step"], serde_json::json!(d.decisive_step));
    }
    press(&mut app, "5");
    assert!(screen(&app).contains("exported"), "the verdict view shows the exported files");
}

// ----- hostile content -----

#[test]
fn escape_sequences_in_the_trace_never_reach_the_screen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("evil\u{1b}[2J\u{7}name.json");
    let evil = "ALERT\u{1b}[2J\u{1b}[31m red \u{1b}]0;pwned\u{7} title \u{1b}]52;c;ZXZpbA==\u{1b}\\ clip \u{9b}31m c1 \u{7}bell\r\nnext";
    let doc = serde_json::json!({
        "question": format!("task {evil}"),
        "ground_truth": "x\u{1b}[5m",
        "history": [
            {"name": "Agent\u{1b}[41m", "role": "assistant", "content": evil},
            {"name": "Computer_terminal", "role": "user", "content": format!("exitcode: 1 (execution failed)\nCode output: Error {evil}")},
            {"name": "Agent\u{1b}[41m", "role": "assistant", "content": format!("```python\nprint('{evil}')\n```\nThe answer is 42. {evil}")},
        ],
        "system_prompt": {"Agent\u{1b}[41m": format!("role {evil}")},
    });
    std::fs::write(&trace, serde_json::to_vec(&doc).expect("json")).expect("write");
    let opts = TuiOptions { config_dir: Some(dir.path().join("config")), ..TuiOptions::default() };
    let mut app = tui::open(&trace, &opts, Arc::new(HeuristicJudge)).expect("open");
    app.show_timings = false;
    press(&mut app, "ae");
    assert!(app.status.clone().expect("status").text.contains("exported"));
    for step in 0..3 {
        press(&mut app, &format!(":{step}<enter>/pwned<enter>"));
        for v in View::ALL {
            app.nav.view = v;
            let term = draw(&app, 120, 40);
            let buf = term.backend().buffer();
            for cell in buf.content() {
                assert!(
                    !cell.symbol().chars().any(|c| c.is_control()),
                    "control character {:?} on screen",
                    cell.symbol()
                );
            }
        }
        app.nav.view = View::Hierarchy;
    }
    let s = screen(&app);
    assert!(s.contains("ALERT") && s.contains("title"), "the printable text stays:\n{s}");
}

// ----- theme, keys, small terminal -----

#[test]
fn a_terminal_too_small_shows_a_message() {
    let f = Fixture::new(HAND);
    let app = f.open();
    let s = draw(&app, 50, 10).backend().to_string();
    assert!(s.contains("terminal too small: 50x10"), "{s}");
    assert!(!s.contains("Phases"));
}

#[test]
fn the_key_map_file_rebinds_and_the_help_follows() {
    let f = Fixture::new(HAND);
    let keys = f.dir.path().join("keys.toml");
    std::fs::write(&keys, "[keys]\nrun_all = [\"r\"]\nhelp = [\"f2\"]\nno_such_action = [\"z\"]\n").expect("write");
    let opts = TuiOptions { keymap: Some(keys), ..f.opts() };
    let mut app = tui::open(&f.trace, &opts, Arc::new(HeuristicJudge)).expect("open");
    assert!(app.status.clone().expect("status").text.contains("unknown action 'no_such_action'"));
    press(&mut app, "a");
    assert!(app.results.diagnosis.is_none(), "a is unbound now");
    press(&mut app, "r");
    assert!(app.results.diagnosis.is_some());
    app.on_key(KeyEvent::new(KeyCode::F(2), KeyModifiers::NONE));
    app.prepare(Rect::new(0, 0, 120, 40));
    let s = screen(&app);
    assert!(s.contains(&format!("{:<19}run the whole pipeline", "r")), "{s}");
    // The general keys come after the others: page down to them.
    let mut seen = String::new();
    for _ in 0..4 {
        app.on_key(KeyEvent::new(KeyCode::PageDown, KeyModifiers::NONE));
        seen.push_str(&screen(&app));
    }
    assert!(seen.contains(&format!("{:<19}this help", "f2")), "{seen}");
}

#[test]
fn themes_load_by_name_or_file_and_monochrome_keeps_the_selection_visible() {
    let f = Fixture::new(HAND);
    let file = f.dir.path().join("mine.toml");
    std::fs::write(&file, "base = \"light\"\n[styles]\nselection = { bg = \"#123456\" }\n").expect("write");
    let app = tui::open(
        &f.trace,
        &TuiOptions { theme: Some(file.display().to_string()), ..f.opts() },
        Arc::new(HeuristicJudge),
    )
    .expect("open");
    assert_eq!(app.theme.selection.bg, Some(Color::Rgb(0x12, 0x34, 0x56)));
    let bad = tui::open(&f.trace, &TuiOptions { theme: Some("nope".into()), ..f.opts() }, Arc::new(HeuristicJudge));
    assert!(bad.is_err(), "an unknown theme given explicitly is an error");

    let mut app = f.open();
    app.theme = falat::tui::theme::Theme::builtin("high-contrast").expect("theme").monochrome();
    app.prepare(Rect::new(0, 0, 120, 40));
    let term = draw(&app, 120, 40);
    let buf = term.backend().buffer();
    assert!(buf.content().iter().all(|c| c.fg == Color::Reset && c.bg == Color::Reset), "no colour under NO_COLOR");
    let phases = app.view.screen.panes[0];
    let sel = &buf[(phases.x + 2, phases.y + 1)];
    assert!(sel.modifier.contains(Modifier::REVERSED), "the selected row is reversed");
}

// ----- background runs -----

/// A judge that blocks every call until released, counting calls.
struct GateJudge {
    open: Mutex<bool>,
    cv: Condvar,
    calls: AtomicUsize,
}

impl GateJudge {
    fn new() -> Arc<GateJudge> {
        Arc::new(GateJudge { open: Mutex::new(false), cv: Condvar::new(), calls: AtomicUsize::new(0) })
    }

    fn release(&self) {
        *self.open.lock().expect("lock") = true;
        self.cv.notify_all();
    }
}

impl Judge for GateJudge {
    fn name(&self) -> String {
        "gate".into()
    }

    fn ask(&self, ctx: &Context<'_>, q: &Question) -> Judged {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.lock().expect("lock");
        while !*open {
            open = self.cv.wait(open).expect("wait");
        }
        HeuristicJudge.ask(ctx, q)
    }
}

fn event(code: KeyCode) -> std::io::Result<Event> {
    Ok(Event::Key(key_event(code)))
}

async fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_keeps_handling_keys_while_the_judge_is_stuck() {
    let f = Fixture::new(HAND);
    let judge = GateJudge::new();
    let mut app = f.open_with(judge.clone());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let events = Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)));
    let ui = tokio::spawn(async move {
        let mut term = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
        let mut copy = |_: &str| Ok(());
        tui::event_loop::run(&mut term, &mut app, events, &mut copy).await.expect("loop");
        (app, term)
    });
    tx.send(event(KeyCode::Char('a'))).expect("send");
    wait_for("the judge to be asked", || judge.calls.load(Ordering::SeqCst) > 0).await;
    // The judge is blocked inside its first call; the loop must still take these keys.
    for code in [KeyCode::Char('G'), KeyCode::Enter, KeyCode::Char('j'), KeyCode::Char('x'), KeyCode::Char('q')] {
        tx.send(event(code)).expect("send");
    }
    let (app, term) =
        tokio::time::timeout(Duration::from_secs(5), ui).await.expect("quit while the judge is stuck").expect("join");
    assert_eq!(judge.calls.load(Ordering::SeqCst), 1, "the judge never got past its first call");
    assert_eq!(app.nav.focus, Pane::Steps);
    assert_eq!(app.nav.phase, app.phases().len() - 1);
    assert_eq!(app.nav.step, app.phases()[app.nav.phase].range.start + 1);
    assert!(app.runs.running.as_ref().is_some_and(|r| r.cancelling), "cancel was asked");
    assert!(term.backend().to_string().contains(" Steps "), "frames were drawn");
    assert!(screen(&app).contains("cancelling all stages"), "{}", screen(&app));
    judge.release();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_reports_progress_and_its_result() {
    let f = Fixture::new(ALGO);
    let app = f.open();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let req = RunRequest {
        id: 7,
        target: RunTarget::All,
        pipeline: app.results.pipeline.clone(),
        opts: falat::methods::falat::Options::new(true),
        machine: false,
    };
    job::spawn(req, Arc::clone(&app.traj), Arc::new(HeuristicJudge), tx);
    let (mut progress, mut asked) = (0, 0);
    loop {
        let msg =
            tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.expect("message").expect("open channel");
        match msg {
            JobMsg::Progress { id, .. } => {
                assert_eq!(id, 7);
                progress += 1;
            }
            JobMsg::Done(d) => {
                assert!(d.outcome.is_ok());
                assert!(d.diagnosis.expect("diagnosis").decisive_step.is_some());
                break;
            }
            JobMsg::Asked { id, questions, calls } => {
                assert_eq!(id, 7);
                asked = asked.max(questions);
                assert!(calls as usize <= questions, "the offline judge makes one call per question");
            }
            JobMsg::Substrate(_) => {}
        }
    }
    assert!(progress > 0, "progress was reported");
    assert!(asked > 0, "the judge's questions were reported");
}

/// A judge that cancels the run it serves after a few calls.
struct CancellingJudge {
    flag: Arc<AtomicBool>,
    calls: AtomicUsize,
}

impl Judge for CancellingJudge {
    fn name(&self) -> String {
        "cancelling".into()
    }

    fn ask(&self, ctx: &Context<'_>, q: &Question) -> Judged {
        if self.calls.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
            self.flag.store(true, Ordering::SeqCst);
        }
        HeuristicJudge.ask(ctx, q)
    }
}

#[test]
fn a_cancelled_run_stops_early_and_leaves_the_results_unchanged() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    let flag = Arc::new(AtomicBool::new(false));
    let judge = CancellingJudge { flag: Arc::clone(&flag), calls: AtomicUsize::new(0) };
    let effects = app.on_key(key_event(KeyCode::Char('a')));
    let [tui::Effect::Run(req)] = effects.as_slice() else { panic!("a run") };
    let done = job::execute(req, &app.traj, &judge, flag, None);
    assert!(done.outcome.is_err(), "cancelled");
    assert!(judge.calls.load(Ordering::SeqCst) <= 4, "stopped at the next check");
    app.on_job(JobMsg::Done(Box::new(done)));
    assert!(app.runs.running.is_none());
    assert!(app.results.pipeline.last_stage().is_none() && app.results.diagnosis.is_none());
    let status = app.status.clone().expect("status");
    assert_eq!(status.text, "cancelled all stages; results unchanged");
}

/// Sets the cancel flag when verification asks its first question.
struct CancelAtVerify {
    flag: Arc<AtomicBool>,
}

impl Judge for CancelAtVerify {
    fn name(&self) -> String {
        "heuristic".into()
    }
    fn ask(&self, ctx: &Context<'_>, q: &Question) -> Judged {
        if matches!(q, Question::Verify { .. }) {
            self.flag.store(true, Ordering::SeqCst);
        }
        HeuristicJudge.ask(ctx, q)
    }
}

#[test]
fn a_cancelled_run_keeps_the_stages_it_finished() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    let flag = Arc::new(AtomicBool::new(false));
    let judge = CancelAtVerify { flag: Arc::clone(&flag) };
    let effects = app.on_key(key_event(KeyCode::Char('a')));
    let [tui::Effect::Run(req)] = effects.as_slice() else { panic!("a run") };
    let done = job::execute(req, &app.traj, &judge, flag, None);
    assert!(done.outcome.is_err(), "cancelled");
    app.on_job(JobMsg::Done(Box::new(done)));
    assert_eq!(app.results.pipeline.last_stage(), Some(falat::methods::falat::Stage::Dependencies));
    assert!(app.results.pipeline.verified.is_none() && app.results.pipeline.research.is_none());
    let d = app.results.diagnosis.as_ref().expect("a partial diagnosis");
    assert_eq!(d.decisive_step, None, "no stage chose a step yet");
    assert!(!d.candidates.is_empty(), "stage 2's candidates are kept");
    assert_eq!(
        app.status.clone().expect("status").text,
        "cancelled all stages; kept the stages through dependencies+pruning"
    );
}

#[test]
fn a_new_run_while_running_cancels_and_follows() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    let first = app.on_key(key_event(KeyCode::Char('a')));
    let [tui::Effect::Run(req)] = first.as_slice() else { panic!("a run") };
    let id = req.id;
    let second = app.on_key(key_event(KeyCode::Char('D')));
    assert!(matches!(second.as_slice(), [tui::Effect::Cancel]), "the running one is cancelled first");
    let cancelled = job::JobDone {
        id,
        pipeline: app.results.pipeline.clone(),
        outcome: Err(falat::methods::falat::Cancelled),
        diagnosis: None,
        methods: Vec::new(),
        machine: None,
        elapsed: Duration::ZERO,
    };
    let next = app.on_job(JobMsg::Done(Box::new(cancelled)));
    let [tui::Effect::Run(req)] = next.as_slice() else { panic!("the queued run starts") };
    assert_eq!(req.target, RunTarget::Stage(falat::methods::falat::Stage::Dependencies));
}

/// A TestBackend the test can read while the event loop draws on it.
#[derive(Clone)]
struct SharedBackend(Arc<Mutex<TestBackend>>);

impl SharedBackend {
    fn text(&self) -> String {
        self.0.lock().expect("backend").to_string()
    }
}

impl ratatui::backend::Backend for SharedBackend {
    type Error = std::convert::Infallible;

    fn draw<'a, I>(&mut self, content: I) -> Result<(), Self::Error>
    where
        I: Iterator<Item = (u16, u16, &'a ratatui::buffer::Cell)>,
    {
        self.0.lock().expect("backend").draw(content)
    }
    fn hide_cursor(&mut self) -> Result<(), Self::Error> {
        self.0.lock().expect("backend").hide_cursor()
    }
    fn show_cursor(&mut self) -> Result<(), Self::Error> {
        self.0.lock().expect("backend").show_cursor()
    }
    fn get_cursor_position(&mut self) -> Result<ratatui::layout::Position, Self::Error> {
        self.0.lock().expect("backend").get_cursor_position()
    }
    fn set_cursor_position<P: Into<ratatui::layout::Position>>(&mut self, p: P) -> Result<(), Self::Error> {
        self.0.lock().expect("backend").set_cursor_position(p)
    }
    fn clear(&mut self) -> Result<(), Self::Error> {
        self.0.lock().expect("backend").clear()
    }
    fn clear_region(&mut self, t: ratatui::backend::ClearType) -> Result<(), Self::Error> {
        self.0.lock().expect("backend").clear_region(t)
    }
    fn size(&self) -> Result<ratatui::layout::Size, Self::Error> {
        self.0.lock().expect("backend").size()
    }
    fn window_size(&mut self) -> Result<ratatui::backend::WindowSize, Self::Error> {
        self.0.lock().expect("backend").window_size()
    }
    fn flush(&mut self) -> Result<(), Self::Error> {
        self.0.lock().expect("backend").flush()
    }
}

/// The heuristic judge, slowed down.
struct SleepyJudge {
    per_call: Duration,
    calls: AtomicUsize,
}

impl Judge for SleepyJudge {
    fn name(&self) -> String {
        "sleepy".into()
    }

    fn ask(&self, ctx: &Context<'_>, q: &Question) -> Judged {
        self.calls.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(self.per_call);
        HeuristicJudge.ask(ctx, q)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_judge_runs_in_the_background_while_the_screen_stays_live() {
    let f = Fixture::new(HAND);
    let judge = Arc::new(SleepyJudge { per_call: Duration::from_millis(80), calls: AtomicUsize::new(0) });
    let mut app = f.open_with(judge.clone());
    let backend = SharedBackend(Arc::new(Mutex::new(TestBackend::new(120, 40))));
    let view = backend.clone();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let events = Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)));
    let ui = tokio::spawn(async move {
        let mut term = Terminal::new(backend).expect("terminal");
        let mut copy = |_: &str| Ok(());
        tui::event_loop::run(&mut term, &mut app, events, &mut copy).await.expect("loop");
        app
    });
    wait_for("the first frame", || view.text().contains(" Phases ")).await;
    tx.send(event(KeyCode::Char('a'))).expect("send");
    wait_for("the run to start", || view.text().contains("running all stages")).await;
    tx.send(event(KeyCode::Char('G'))).expect("send");
    // The key is drawn while the judge is still working.
    wait_for("the key to be drawn during the run", || {
        let s = view.text();
        s.contains("3 of 3") && s.contains("running all stages")
    })
    .await;
    wait_for("progress in the status line", || view.text().contains("verification")).await;
    wait_for("the verdict", || view.text().contains("finished all stages: decisive step 12 by WebSurfer")).await;
    tx.send(event(KeyCode::Char('q'))).expect("send");
    let app = tokio::time::timeout(Duration::from_secs(5), ui).await.expect("quit").expect("join");
    assert!(judge.calls.load(Ordering::SeqCst) >= 10, "the slow judge answered every question");
    assert_eq!(app.results.diagnosis.expect("diagnosis").decisive_step, Some(12));
}

#[test]
fn a_missing_or_unreadable_trace_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = TuiOptions { config_dir: Some(dir.path().into()), ..TuiOptions::default() };
    let Err(e) = tui::open(&dir.path().join("nope.json"), &opts, Arc::new(HeuristicJudge)) else { panic!("an error") };
    assert!(format!("{e:#}").contains("cannot read"), "{e:#}");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{ not json").expect("write");
    let Err(e) = tui::open(&bad, &opts, Arc::new(HeuristicJudge)) else { panic!("an error") };
    assert!(format!("{e:#}").contains("not JSON"), "{e:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_trace_opens_on_its_first_steps_and_indexes_the_rest_in_the_background() {
    let n = tui::app::SYNC_STEPS + 1_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("large.json");
    let history: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let (name, content) = match i % 3 {
                0 => ("Planner", format!("Step {i}: look up City{i}.")),
                1 => ("Coder", format!("```python\nprint({i} * 2)\n```")),
                _ => ("Computer_terminal", format!("exitcode: 0 (execution succeeded)\nCode output: {}", i * 2)),
            };
            serde_json::json!({"name": name, "role": "assistant", "content": content})
        })
        .collect();
    let doc = serde_json::json!({"question": "total?", "ground_truth": "1", "history": history, "system_prompt": {}});
    std::fs::write(&trace, serde_json::to_vec(&doc).expect("json")).expect("write");
    let opts = TuiOptions { config_dir: Some(dir.path().join("config")), ..TuiOptions::default() };
    let mut app = tui::open(&trace, &opts, Arc::new(HeuristicJudge)).expect("open");
    assert!(app.indexing());
    assert_eq!((app.n_steps(), app.total_steps()), (tui::app::SYNC_STEPS, n));
    let s = screen(&app);
    assert!(s.contains(&format!("{n} steps")) && s.contains("indexing"), "{s}");
    press(&mut app, &format!(":{}<enter>", n - 1));
    assert_eq!(app.nav.step, 0);
    assert!(app.status.clone().expect("status").text.contains("not indexed yet"));
    // A run asked for while indexing waits for the whole substrate, then starts on it.
    assert!(press(&mut app, "a").is_empty());
    assert!(app.status.clone().expect("status").text.contains("starts once all"), "{:?}", app.status);

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    job::spawn_index(Arc::clone(&app.traj), tx);
    let msg = tokio::time::timeout(Duration::from_secs(60), rx.recv()).await.expect("indexed").expect("message");
    let effects = app.on_job(msg);
    assert!(!app.indexing());
    assert_eq!(app.n_steps(), n);
    // The run starts on the one substrate the views show: no second build.
    let Some(tui::Effect::Run(req)) = effects.first() else { panic!("the waiting run starts") };
    let shared = req.pipeline.substrate.as_ref().expect("the request carries the substrate");
    assert!(Arc::ptr_eq(shared, &app.substrate()));
    press(&mut app, "x");
    assert_eq!(app.status.clone().expect("status").text, "cancelling…");
    press(&mut app, &format!(":{}<enter>", n - 1));
    assert_eq!(app.nav.step, n - 1);
    assert!(screen(&app).contains(&format!("#{} Computer_terminal", n - 1)));
}

// ----- evidence -----

/// The text of a drawn line.
fn line_text(l: &ratatui::text::Line) -> String {
    l.spans.iter().map(|s| s.content.as_ref()).collect()
}

#[test]
fn a_fence_in_the_middle_of_a_sentence_opens_no_code_block() {
    // Hand-crafted 47, step 51: the team description mentions "```python code blocks" mid-line;
    // the real block is the `sh` script further down.
    let f = Fixture::copy(Path::new("data/who-and-when/Hand-Crafted/47.json"));
    let mut app = f.open();
    press(&mut app, ":51<enter><enter>");
    assert_eq!((app.nav.step, app.nav.focus), (51, Pane::Evidence));
    let lines = app.evidence_lines(51, 200);
    let find = |needle: &str| {
        lines.iter().map(line_text).find(|t| t.contains(needle)).unwrap_or_else(|| panic!("no line with {needle}"))
    };
    assert!(find("ComputerTerminal: A computer terminal").starts_with("  "), "prose keeps the plain gutter");
    assert!(find("We are working to address").starts_with("  "));
    assert!(find("unzip /workspace/API_NY").starts_with("│ "), "the sh block is code");
    assert!(find("ls /workspace/unzipped_data").starts_with("│ "));
    assert!(find("Run this script to extract").starts_with("  "), "the block ends at its closing fence");
}

// ----- the verdict is reachable -----

#[test]
fn after_a_run_the_decisive_step_is_selected_and_its_phase_marked() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    assert_eq!((app.nav.step, app.nav.phase), (0, 0));
    press(&mut app, "a");
    let d = app.decisive_step().expect("a decisive step");
    assert_eq!((app.nav.view, app.nav.focus, app.nav.step), (View::Hierarchy, Pane::Steps, d));
    assert_eq!(app.nav.phase, app.phase_of(d));
    let screen = screen(&app);
    // The phase row holding the verdict carries ▶, and the selected step row is on screen.
    let marked: Vec<&str> = screen.lines().filter(|l| l.contains("│▶")).collect();
    assert_eq!(marked.len(), 1, "{screen}");
    assert!(marked[0].contains(&format!("▶{:>2} ", app.nav.phase)), "{screen}");
    assert!(screen.contains(&format!("#{d} ")), "the evidence header shows the step: {screen}");
}

#[test]
fn one_key_goes_to_the_decisive_step_from_every_view() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "d");
    assert!(app.status.as_ref().expect("status").text.contains("no verdict yet"));
    press(&mut app, "a");
    let d = app.decisive_step().expect("a decisive step");
    for v in ["1", "2", "3", "4", "5", "6"] {
        press(&mut app, &format!(":0<enter>{v}d"));
        assert_eq!((app.nav.view, app.nav.step), (View::Hierarchy, d), "from view {v}");
    }
}

#[test]
fn enter_on_a_step_number_in_the_verdict_view_jumps_to_it() {
    let f = Fixture::new(ALGO);
    let mut app = f.open();
    press(&mut app, "a:0<enter>5");
    let d = app.decisive_step().expect("a decisive step");
    let links = app.links();
    assert_eq!(links[0], d, "the decisive step comes first");
    press(&mut app, "<enter>");
    assert_eq!((app.nav.view, app.nav.step), (View::Hierarchy, d));
    if links.len() > 1 {
        press(&mut app, "5j<enter>");
        assert_eq!((app.nav.view, app.nav.step), (View::Hierarchy, links[1]));
    }
}

/// The style of the first cell of `needle` on the line of the screen that contains `line`.
fn style_at(term: &Terminal<TestBackend>, line: &str, needle: &str) -> Option<ratatui::style::Style> {
    let buf = term.backend().buffer();
    for y in 0..buf.area.height {
        let row: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol().to_string()).collect();
        if let Some(at) = row.find(line) {
            let off = row[at..].find(needle)? + at;
            let x = row[..off].chars().count() as u16;
            return Some(buf[(x, y)].style());
        }
    }
    None
}

/// A verdict whose finding names other steps in its prose ("steps 3 and 7") and whose claim names
/// the final output's step as data (step 7).
fn verdict_naming_steps(app: &mut App) {
    use falat::diagnosis::{Claim, Explanation, Finding, Signal};
    let mut d = falat::diagnosis::Diagnosis {
        decisive_step: Some(12),
        agent: Some("WebSurfer".into()),
        category: falat::diagnosis::ErrorCategory::Hallucination,
        confidence: 0.5,
        explanation: Explanation {
            findings: vec![Finding {
                signal: Signal::UnsourcedValue,
                evidence: "lands on an unrelated page; steps 3 and 7 only repeat it".into(),
                weight: 0.5,
            }],
            claims: vec![Claim::NoPathToOutput {
                from: 12,
                final_step: Some(7),
                answer_stated: true,
                states_observed: false,
                sufficiency: None,
            }],
            ..Explanation::default()
        },
        ..Default::default()
    };
    d.reason = d.explanation.render(d.decisive_step, d.agent.as_deref());
    app.results.diagnosis = Some(d);
    app.results.refresh_marks();
}

#[test]
fn enter_on_a_step_reference_in_the_verdicts_prose_jumps_there_and_backspace_returns() {
    // See: issue 15 item 2 ("Enter on any step number in any view jumps to it"), issue 24 (links
    // come from the data, not from a regex over the prose).
    let f = Fixture::new(HAND);
    let mut app = f.open();
    verdict_naming_steps(&mut app);
    press(&mut app, "5");
    // The references in reading order: the decisive step, the reason's step, the two steps of the
    // claim that no path reaches the final output, the gold step. "steps 3 and 7" of the
    // finding's prose are not links.
    let gold = app.traj.gold.as_ref().and_then(|g| g.step).expect("a gold step");
    let links = app.links();
    assert_eq!(links, [12, 12, 12, 7, gold], "{links:?}");
    press(&mut app, "jjj");
    let status = app.status.clone().expect("status").text;
    assert!(status.starts_with(&format!("step reference 4 of {}: step 7 (", links.len())), "{status}");
    // The selected reference is drawn selected inside the prose, the others underlined, and a
    // number of the prose plain.
    app.prepare(Rect::new(0, 0, 120, 40));
    let term = draw(&app, 120, 40);
    let seven = style_at(&term, "from step 12 to step 7", "7, the").expect("the claim is shown");
    assert_eq!(seven.bg, app.theme.selection.bg, "step 7 is the selected reference");
    let twelve = style_at(&term, "from step 12 to step 7", "12 to").expect("the claim is shown");
    assert!(twelve.add_modifier.contains(Modifier::UNDERLINED) && twelve.bg != app.theme.selection.bg);
    let three = style_at(&term, "steps 3 and 7", "3 and").expect("the why line is shown");
    assert!(!three.add_modifier.contains(Modifier::UNDERLINED), "a number in prose is not a link");
    press(&mut app, "<enter>");
    assert_eq!((app.nav.view, app.nav.step, app.nav.focus), (View::Hierarchy, 7, Pane::Steps));
    // See: issue 15 item 3: the status line says where you are and what was done, not the verdict.
    let status = app.status.clone().expect("status").text;
    assert!(status.starts_with("step 7 ("), "{status}");
    assert!(status.contains(&format!("from step reference 4 of {} in the verdict", links.len())), "{status}");
    assert!(status.ends_with("ctrl-o back"), "{status}");
    assert!(!status.contains("decisive step 12"), "{status}");
    // Back to the verdict with the same reference selected; forward again.
    press(&mut app, "<bs>");
    assert_eq!((app.nav.view, app.nav.list_sel), (View::Verdict, 3));
    assert_eq!(app.status.clone().expect("status").text, "back to the verdict view");
    app.on_key(KeyEvent::new(KeyCode::Right, KeyModifiers::ALT));
    assert_eq!((app.nav.view, app.nav.step), (View::Hierarchy, 7));
    app.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    assert_eq!(app.nav.view, View::Verdict, "ctrl-o goes back too");
    // Tab moves through the references as well, wrapping around.
    press(&mut app, "<tab>");
    assert_eq!(app.nav.list_sel, 4 % links.len());
}

#[test]
fn tab_selects_the_step_references_of_a_candidates_detail_and_enter_follows_them() {
    // See: issue 15 item 2, in the candidates view: the row is a step, its detail names others.
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "a");
    let mut d = app.results.diagnosis.clone().expect("diagnosis");
    let c = &mut d.candidates[0];
    let row_step = c.step;
    // One step as data, one written into the text (as a judge's free words would be).
    c.findings[0].evidence = falat::prose!["copies the value step ", Part::Step(9), " produced; see step 2"];
    c.pruned = Some(falat::diagnosis::Pruning {
        transition: falat::diagnosis::Transition::FollowUp,
        by_step: Some(4),
        reason: falat::prose!["inherits the error of step ", Part::Step(4)],
        by_user: false,
    });
    c.verification = None;
    app.results.diagnosis = Some(d);
    app.cands.refresh(app.results.diagnosis.as_ref());
    press(&mut app, "2gg");
    assert_eq!(app.selected_candidate().map(|c| c.step), Some(row_step));
    // The steps the finding's and the reason's prose name as data, and the step that pruned it;
    // a number written into the text is no link.
    assert_eq!(app.links(), [9, 4, 4]);
    press(&mut app, "<tab><tab>");
    let status = app.status.clone().expect("status").text;
    assert!(status.starts_with("step reference 2 of 3: step 4"), "{status}");
    assert!(screen(&app).contains("tab selects the 3 step references above"), "the detail says how to reach them");
    press(&mut app, "<enter>");
    assert_eq!((app.nav.view, app.nav.step), (View::Hierarchy, 4));
    assert!(app.status.clone().expect("status").text.contains("in candidates"));
    // Esc drops the reference: Enter goes to the row's own step again.
    press(&mut app, "<bs><tab><esc><enter>");
    assert_eq!(app.nav.step, row_step);
    // The finding's step is a link too.
    press(&mut app, "<bs><tab><enter>");
    assert_eq!((app.nav.view, app.nav.step), (View::Hierarchy, 9));
}

// ----- 80×24 -----

#[test]
fn at_80_by_24_the_help_scrolls_to_every_key_and_the_footer_keeps_export_and_copy() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    let small = |app: &App| draw(app, 80, 24).backend().to_string();
    let footer = small(&app).lines().last().expect("footer").to_string();
    for hint in ["e export", "y copy", "? help", "q quit", "a run"] {
        assert!(footer.contains(hint), "{hint} in {footer}");
    }
    app.on_key(key_event(KeyCode::Char('?')));
    app.prepare(Rect::new(0, 0, 80, 24));
    let first = small(&app);
    assert!(first.contains("navigate") && !first.contains("undo last override"), "{first}");
    // Scrolling (at the 80×24 height) reaches the overrides and general keys.
    let mut seen = String::new();
    for _ in 0..3 {
        app.on_key(key_event(KeyCode::PageDown));
        seen.push_str(&small(&app));
    }
    assert!(seen.contains("undo last override") && seen.contains("export reports"), "{seen}");
    app.on_key(key_event(KeyCode::Char('G')));
    let end = small(&app);
    assert!(end.contains("dead end") && end.contains("(dead_end)"), "the legend ends the help: {end}");
    insta::assert_snapshot!("hand-crafted-1-help-80x24-end", end);
    app.on_key(key_event(KeyCode::Char('?')));
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn at_80_by_24_titles_never_collide_and_cut_text_ends_in_an_ellipsis() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "a");
    for v in View::ALL {
        app.nav.view = v;
        let screen = draw(&app, 80, 24).backend().to_string();
        for line in screen.lines() {
            // A pane title is followed by its rule, never by another title's text.
            for title in [" Phases ", " Steps ", " Evidence ", " Dependencies ", " Candidates ", " Roles "] {
                if let Some(at) = line.find(&format!("┌{title}")) {
                    let after = &line[at + "┌".len() + title.len()..];
                    assert!(after.starts_with('─'), "{title} collides in {line}");
                }
            }
        }
    }
    app.nav.view = View::Hierarchy;
    let screen = draw(&app, 80, 24).backend().to_string();
    // The steps list: the agent names are whole and the decision is cut with an ellipsis.
    let row = screen.lines().find(|l| l.contains(" 12 WebSurfer")).expect("step 12 row");
    assert!(row.contains("…│"), "{row}");
    // The status after a run: its shorter form, whole, the verdict first.
    let status = screen.lines().rev().nth(1).expect("status").trim_matches('"');
    assert!(status.contains("│ done: decisive step 12 by WebSurfer ("), "what matters comes first: {status}");
    assert!(!status.contains('…'), "{status}");
    // A long status with no shorter form is cut with an ellipsis.
    app.set_status(Level::Ok, "finished all stages: decisive step 12 by WebSurfer, and a long tail of words after it");
    let screen = draw(&app, 80, 24).backend().to_string();
    let status = screen.lines().rev().nth(1).expect("status").trim_matches('"');
    assert!(
        status.trim_end().ends_with("… — press ! for all messages"),
        "a long status is cut with an ellipsis and says what ! does: {status}"
    );
}

#[test]
fn wrapped_lines_keep_their_indent_and_agent_names_use_the_width() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "a2");
    let screen = draw(&app, 80, 24).backend().to_string();
    let lines: Vec<&str> = screen.lines().collect();
    let at = lines.iter().position(|l| l.contains("prior_deviation      0.40")).expect("finding row");
    // The continuation starts under the evidence text (after "  prior_deviation      0.40  ": the
    // signal's column holds its longest name, unverified_assertion, and a space).
    assert!(lines[at + 1].starts_with(&format!("\"│{}", " ".repeat(29))), "{}", lines[at + 1]);
    assert!(!lines[at + 1][4 + 29..].starts_with(' '), "{}", lines[at + 1]);
    // Agent names are whole when there is room (BusinessLogic_Expert has 20 characters).
    let g = Fixture::new(ALGO);
    let mut app = g.open();
    press(&mut app, ":3<enter>");
    let wide = draw(&app, 160, 40).backend().to_string();
    assert!(wide.contains(" 2 BusinessLogic_Expert    "), "{wide}");
    assert!(wide.contains(" 4 DataVerification_Expert "), "{wide}");
}

/// The rows of a drawn screen as plain text, cell by cell.
fn rows_of(term: &Terminal<TestBackend>) -> Vec<String> {
    let buf = term.backend().buffer();
    (0..buf.area.height).map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect()).collect()
}

/// The symbols over the right border of a pane, between its corners.
fn right_border(term: &Terminal<TestBackend>, pane: Rect) -> String {
    let buf = term.backend().buffer();
    (pane.y + 1..pane.bottom() - 1).map(|y| buf[(pane.right() - 1, y)].symbol()).collect()
}

#[test]
fn at_80_by_24_the_steps_keep_their_role_tags_and_cut_their_decision_instead() {
    let f = Fixture::copy(Path::new("data/who-and-when/Hand-Crafted/47.json"));
    let mut app = f.open();
    press_on(&mut app, "a", 80, 24);
    let d = app.results.diagnosis.clone().expect("the pipeline ran");
    let term = draw(&app, 80, 24);
    let rows = rows_of(&term);
    let steps = app.view.screen.panes[1];
    // Every step of the shown phase that has a role carries its tag whole; the decision after
    // it is what is cut, and the agent name stays whole when it can.
    let range = app.phases()[app.nav.phase].range.clone();
    let tagged: Vec<(usize, Role)> = d.roles.iter().copied().filter(|(s, _)| range.contains(s)).collect();
    assert_eq!(tagged, [(61, Role::RootCause), (63, Role::Propagation), (64, Role::Propagation)]);
    for (s, role) in tagged {
        let tag = match role {
            Role::RootCause => "ROOT",
            Role::Propagation => "PROP",
            Role::Symptom => "SYMP",
            Role::Contributing => "CONT",
        };
        let row = rows[steps.y as usize + 1..steps.bottom() as usize - 1]
            .iter()
            .map(|r| r.chars().take(steps.width as usize).collect::<String>())
            .find(|r| r.contains(&format!(" {s} ")))
            .expect("the step's row");
        assert!(row.contains(&format!(" {tag} ")), "{tag} in {row:?}");
        assert!(row.ends_with("…│"), "the decision is cut, not the tag: {row:?}");
    }
    assert!(rows.iter().any(|r| r.contains(" 61 Orchestrator ROOT ")), "{rows:#?}");
    insta::assert_snapshot!("hand-crafted-47-80x24-after-run", term.backend().to_string());
}

#[test]
fn at_80_by_24_a_list_longer_than_its_pane_shows_a_scrollbar_over_its_border() {
    // Hand-crafted 47 has nine phases, more than the five rows of the phases pane at 80×24.
    let f = Fixture::copy(Path::new("data/who-and-when/Hand-Crafted/47.json"));
    let mut app = f.open();
    press_on(&mut app, "a", 80, 24);
    let phases = app.view.screen.panes[0];
    assert_eq!((app.phases().len(), app.view.screen.phase_rows), (9, 5));
    // The run selects the decisive step's phase, the last: the list has scrolled and the thumb is
    // at the bottom; at the first phase the thumb is at the top, then the track.
    assert_eq!(right_border(&draw(&app, 80, 24), phases), "║║███");
    press_on(&mut app, "<esc>g", 80, 24);
    assert_eq!((app.nav.focus, app.nav.phase), (Pane::Phases, 0));
    assert_eq!(right_border(&draw(&app, 80, 24), phases), "███║║");
    // At the last phase, the list has scrolled and the thumb is at the bottom.
    press_on(&mut app, "<esc>G", 80, 24);
    assert_eq!((app.nav.focus, app.nav.phase), (Pane::Phases, 8));
    let term = draw(&app, 80, 24);
    assert_eq!(right_border(&term, phases), "║║███");
    assert!(rows_of(&term)[phases.bottom() as usize - 2].contains(" 8 61-66 "));
    // Hand-crafted 1: three phases fit and keep a plain border; the 26 steps of phase 2 do not
    // fit in 12 rows, and the thumb of the steps list is at the top.
    let g = Fixture::new(HAND);
    let mut app = g.open();
    press_on(&mut app, "a", 80, 24);
    let [phases, steps, _, _] = app.view.screen.panes;
    assert_eq!((app.phases().len(), app.phases()[2].range.len(), app.view.screen.step_rows), (3, 26, 12));
    let term = draw(&app, 80, 24);
    assert_eq!(right_border(&term, phases), "│││││");
    assert_eq!(right_border(&term, steps), "██████║║║║║║");
}

/// The help's rows at `w`×`h`, every one of them, gathered page by page from the positions its
/// title gives (`lines 19-37 of 73`).
fn help_rows(app: &mut App, w: u16, h: u16) -> Vec<String> {
    press_on(app, "?", w, h);
    let re = regex::Regex::new(r"lines (\d+)-(\d+) of (\d+)").expect("re");
    let mut rows: Vec<Option<String>> = Vec::new();
    loop {
        let screen = rows_of(&draw(app, w, h));
        let top = screen.iter().position(|r| r.contains("┌ Help ")).expect("the help box");
        let c = re.captures(&screen[top]).expect("the help says which lines it shows");
        let [from, to, n] = [1, 2, 3].map(|i| c[i].parse::<usize>().expect("a number"));
        rows.resize(n, None);
        for (i, r) in screen[top + 1..=top + 1 + to - from].iter().enumerate() {
            rows[from - 1 + i] = Some(r.clone());
        }
        if to == n {
            break;
        }
        press_on(app, "<pgdn>", w, h);
    }
    press_on(app, "<esc>", w, h);
    rows.into_iter().map(|r| r.expect("scrolling shows every line")).collect()
}

#[test]
fn at_80_by_24_every_help_entry_is_whole() {
    let f = Fixture::new(HAND);
    for (w, h) in [(80, 24), (60, 15)] {
        let mut app = f.open();
        let rows = help_rows(&mut app, w, h);
        for r in &rows {
            let inner = r.trim_matches('│').trim_end();
            assert!(!inner.ends_with('…'), "{w}x{h}: a help line is cut: {r:?}");
        }
        // Read as text, wrapped lines joined again, the help holds every key and description whole.
        let text = rows.iter().map(|r| r.trim_matches('│').trim()).collect::<Vec<_>>().join(" ");
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for a in Action::ALL {
            let keys = app.keymap.all_keys(a);
            assert!(text.contains(&format!("{keys} {}", a.describe())), "{w}x{h}: {keys} {}", a.describe());
        }
        for term in [
            "reuses values a later step reuses a value of the earlier one (semantic edge)",
            "runs the code: set by the framework (protocol edge)",
            "semantic by how rare the shared values are",
        ] {
            assert!(text.contains(term), "{w}x{h}: {term} in {text}");
        }
        if w == 80 {
            insta::assert_snapshot!("hand-crafted-1-help-80x24-whole", rows.join("\n"));
        }
    }
}

// ----- a trace in a folder that cannot be written -----

/// A trace in a folder this process cannot write, and a writable fallback root. As an ordinary
/// user the folder is read-only; as root, where permissions do not stop writes, folders stand
/// where the overrides and reports beside the trace would go, so writing them fails all the
/// same (both are done: whichever applies).
struct ReadOnly {
    _dir: tempfile::TempDir,
    folder: PathBuf,
    trace: PathBuf,
    home: PathBuf,
}

impl ReadOnly {
    fn new(name: &str) -> ReadOnly {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = dir.path().join("shared-dataset");
        std::fs::create_dir(&folder).expect("folder");
        let trace = folder.join(name);
        std::fs::copy(Path::new("tests/fixtures/tui").join(name), &trace).expect("copy");
        for suffix in [".falat.json", ".falat.md", ".falat.report.json"] {
            std::fs::create_dir(store::beside(&trace, suffix)).expect("blocker");
        }
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555)).expect("chmod");
        let home = dir.path().join("home");
        ReadOnly { _dir: dir, folder, trace, home }
    }

    fn opts(&self) -> TuiOptions {
        TuiOptions {
            theme: Some("dark".into()),
            config_dir: Some(self.home.join("config")),
            fallback_dir: Some(self.home.clone()),
            ..TuiOptions::default()
        }
    }

    fn open(&self, opts: &TuiOptions) -> App {
        let mut app = tui::open(&self.trace, opts, Arc::new(HeuristicJudge)).expect("open");
        app.show_timings = false;
        app
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&self.folder, std::fs::Permissions::from_mode(0o755));
    }
}

#[test]
fn overrides_and_reports_of_a_read_only_folder_go_to_the_state_and_data_folders() {
    let ro = ReadOnly::new(HAND);
    let mut app = ro.open(&ro.opts());
    press(&mut app, "a:16<enter>p");
    let key = store::trace_key(&ro.trace);
    let saved = ro.home.join("state/falat/traces").join(&key).join("overrides.falat.json");
    let status = app.status.clone().expect("status");
    assert!(status.text.contains(&format!("saved to {}", saved.display())), "{}", status.text);
    // A folder stands where the overrides file goes (as root the folder's mode stops nothing):
    // the reason is that, as it is for an ordinary user.
    let reason = format!("{HAND}.falat.json is a folder, which falat leaves alone: saved to");
    assert!(status.text.contains(&reason), "{}", status.text);
    assert_eq!(status.level, Level::Warn);
    let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&saved).expect("saved")).expect("json");
    assert_eq!(file["pinned"], 16);

    // Reopened, the mark is still there, and the status says where it came from.
    let mut again = ro.open(&ro.opts());
    assert_eq!(again.overrides().pinned, Some(16));
    let status = again.status.clone().expect("status").text;
    assert!(status.contains(&format!("restored your overrides from {}", saved.display())), "{status}");

    // The reports go to the data folder, and the status says so.
    press(&mut again, "ae");
    let reports = ro.home.join("data/falat/reports").join(&key);
    let md = reports.join(format!("{HAND}.falat.md"));
    let status = again.status.clone().expect("status");
    assert_eq!(status.level, Level::Ok, "{}", status.text);
    assert!(
        status.text.contains(&md.display().to_string())
            && status.text.contains(&format!("{HAND}.falat.md is a folder, which falat leaves alone")),
        "{}",
        status.text
    );
    assert!(std::fs::read_to_string(&md).expect("markdown").contains("## Your decision"));
    assert!(reports.join(format!("{HAND}.falat.report.json")).is_file());

    // An --export-dir that cannot be made is named, with what is in its way.
    let blocker = ro.home.join("a-file");
    std::fs::write(&blocker, "not a folder").expect("file");
    let opts = TuiOptions { export_dir: Some(blocker.join("tickets")), ..ro.opts() };
    let mut blocked = ro.open(&opts);
    press(&mut blocked, "ae");
    let status = blocked.status.clone().expect("status");
    assert_eq!(status.level, Level::Error, "{}", status.text);
    assert_eq!(
        status.text,
        format!(
            "export failed: cannot create the folder {}: {} is a file, not a folder",
            blocker.join("tickets").display(),
            blocker.display()
        )
    );

    // --export-dir chooses the folder.
    let chosen = ro.home.join("tickets");
    let opts = TuiOptions { export_dir: Some(chosen.clone()), ..ro.opts() };
    let mut third = ro.open(&opts);
    press(&mut third, "ae");
    assert!(chosen.join(format!("{HAND}.falat.md")).is_file(), "{:?}", third.status);
    assert!(chosen.join(format!("{HAND}.falat.report.json")).is_file());
}

/// The overrides file and the Markdown report beside a trace in a folder that can be written
/// are symbolic links: falat follows neither, saves and exports to the fallback folders, and the
/// status says why in those words. Before, it said "the trace's folder cannot be written".
#[test]
fn a_symbolic_link_beside_the_trace_is_the_reason_the_status_gives() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join(HAND);
    std::fs::copy(Path::new("tests/fixtures/tui").join(HAND), &trace).expect("copy");
    let mine = dir.path().join("mine.txt");
    std::fs::write(&mine, "the user's own file").expect("mine");
    for suffix in [".falat.json", ".falat.md"] {
        std::os::unix::fs::symlink(&mine, store::beside(&trace, suffix)).expect("link");
    }
    let home = dir.path().join("home");
    let opts = TuiOptions {
        theme: Some("dark".into()),
        config_dir: Some(home.join("config")),
        fallback_dir: Some(home.clone()),
        ..TuiOptions::default()
    };
    let mut app = tui::open(&trace, &opts, Arc::new(HeuristicJudge)).expect("open");
    press(&mut app, "a:16<enter>p");
    let key = store::trace_key(&trace);
    let saved = home.join("state/falat/traces").join(&key).join("overrides.falat.json");
    let status = app.status.clone().expect("status");
    assert_eq!(status.level, Level::Warn);
    assert!(
        status.text.contains(&format!(
            "{HAND}.falat.json is a symbolic link, which falat does not follow: saved to {}",
            saved.display()
        )),
        "{}",
        status.text
    );
    assert!(!status.text.contains("cannot be written"), "{}", status.text);
    press(&mut app, "e");
    let status = app.status.clone().expect("status").text;
    assert!(
        status.starts_with(&format!("{HAND}.falat.md is a symbolic link, which falat does not follow: exported")),
        "{status}"
    );
    // Nothing the user made is lost: the overrides are saved, the links and the file they point
    // to are as they were.
    let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&saved).expect("saved")).expect("json");
    assert_eq!(file["pinned"], 16);
    assert_eq!(std::fs::read_to_string(&mine).expect("mine"), "the user's own file");
    assert!(std::fs::symlink_metadata(store::beside(&trace, ".falat.json")).expect("link").file_type().is_symlink());
}

#[test]
fn the_messages_overlay_counts_one_message_in_the_singular() {
    let f = Fixture::new(ALGO);
    let mut one = f.open();
    press(&mut one, "u!");
    assert_eq!(one.messages.len(), 1);
    let s = draw(&one, 80, 24).backend().to_string();
    assert!(s.contains(" 1 message "), "{s}");
}

#[test]
fn a_save_that_fails_everywhere_is_an_error_on_screen() {
    let ro = ReadOnly::new(HAND);
    // The fallback root lies under a regular file: no folder can be made there, even as root.
    std::fs::create_dir_all(&ro.home).expect("home");
    let blocked = ro.home.join("a-file");
    std::fs::write(&blocked, "not a folder").expect("file");
    let opts = TuiOptions { fallback_dir: Some(blocked.join("below")), ..ro.opts() };
    let mut app = ro.open(&opts);
    press(&mut app, "a:16<enter>m");
    let status = app.status.clone().expect("status");
    assert_eq!(status.level, Level::Error, "{}", status.text);
    assert!(status.text.contains("could not save the overrides"), "{}", status.text);
    // The status line keeps what failed and cuts the rest with an ellipsis and a pointer to the
    // messages overlay, at 80 and 160 columns.
    for (w, h) in [(80, 24), (160, 45)] {
        app.prepare(Rect::new(0, 0, w, h));
        let s = draw(&app, w, h).backend().to_string();
        let line = s.lines().rev().nth(1).expect("status line");
        assert!(line.contains("could not save the overrides"), "{w}: {line}");
        assert!(line.trim_end_matches([' ', '"']).ends_with("… — press ! for all messages"), "{w}: {line}");
        if w == 160 {
            assert!(line.contains("will not replace /tmp/…/"), "the path loses its middle first: {line}");
        }
    }
    // `!` shows it whole: both paths and both causes, wrapped, at 80 columns too.
    let full = status.text.clone();
    assert!(full.contains("it is a folder; and the fallback: cannot create"), "{full}");
    assert_eq!(full.matches("it is a folder").count(), 1, "the cause is not repeated: {full}");
    for (w, h) in [(80, 24), (160, 45)] {
        app.prepare(Rect::new(0, 0, w, h));
        app.on_key(key_event(KeyCode::Char('!')));
        assert_eq!(app.mode, Mode::Messages);
        app.prepare(Rect::new(0, 0, w, h));
        let s = draw(&app, w, h).backend().to_string();
        // The overlay's inside, row by row (it is 120 columns at most, centred).
        let width = usize::from(w.min(120));
        let x = (usize::from(w) - width) / 2;
        let inside: String = s
            .lines()
            .map(|l| l.trim_start_matches('"').chars().skip(x + 1).take(width - 2).collect::<String>())
            .collect();
        let squeezed: String = inside.chars().filter(|c| !c.is_whitespace()).collect();
        let path = store::beside(&ro.trace, ".falat.json").display().to_string();
        assert!(squeezed.contains(&path), "{w}: the whole path is there: {s}");
        // Said in the user's terms, naming what is in the way (not the OS's "Not a directory").
        assert!(squeezed.contains(&format!("{}isafile,notafolder", blocked.display())), "{w}: {s}");
        assert!(!squeezed.contains("oserror"), "{w}: {s}");
        // (The first says at open that the folder in the overrides file's place was left alone.)
        assert!(s.contains(" 5 messages "), "{w}: the messages are counted: {s}");
        app.on_key(key_event(KeyCode::Char('!')));
        assert_eq!(app.mode, Mode::Normal, "! closes it again");
    }
    press(&mut app, "e");
    let status = app.status.clone().expect("status");
    assert_eq!(status.level, Level::Error, "{}", status.text);
    assert!(status.text.contains("export failed"), "{}", status.text);
    // The same wording as the save's: the folder that cannot be made and what is in its way.
    assert!(
        status.text.contains(&format!("and the fallback: cannot create the folder {}", blocked.display()))
            && status.text.ends_with(&format!("{} is a file, not a folder", blocked.display())),
        "{}",
        status.text
    );
    // Quitting with overrides that could not be saved asks first; any key but y stays.
    press(&mut app, "q");
    assert_eq!((app.mode.clone(), app.quit), (Mode::ConfirmQuit, false));
    assert!(app.status.clone().expect("status").text.contains("quit and lose them? y quits"));
    assert!(draw(&app, 120, 40).backend().to_string().contains("y quit and lose the unsaved overrides"));
    press(&mut app, "n");
    assert_eq!((app.mode.clone(), app.quit), (Mode::Normal, false));
    press(&mut app, "qy");
    assert!(app.quit, "y quits");
}

#[test]
fn two_windows_on_one_trace_keep_each_other_s_overrides() {
    let f = Fixture::new(HAND);
    let mut a = f.open();
    let mut b = f.open();
    press(&mut a, ":16<enter>p");
    press(&mut b, ":5<enter>m");
    // B's save met A's: B now shows both, and says so.
    assert_eq!((b.overrides().marked.clone(), b.overrides().pinned), (vec![5], Some(16)));
    let status = b.status.clone().expect("status");
    assert_eq!(status.level, Level::Warn, "{}", status.text);
    assert!(status.text.contains("another falat saved overrides"), "{}", status.text);
    // A's next save keeps B's mark; the file holds everything both did.
    press(&mut a, ":7<enter>X");
    let on_disk = store::load_overrides(&f.trace, a.n_steps()).overrides;
    assert_eq!((on_disk.marked, on_disk.excluded, on_disk.pinned), (vec![5], vec![7], Some(16)));
    // Undo in B goes back to B's own state before the merge.
    press(&mut b, "u");
    assert_eq!((b.overrides().marked.clone(), b.overrides().pinned), (vec![5], None));
}

#[test]
fn quitting_after_a_save_that_worked_does_not_ask() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "p");
    press(&mut app, "q");
    assert!(app.quit);
}

#[test]
fn the_undo_history_survives_reopening() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, ":3<enter>m:5<enter>X:7<enter>p");
    let mut again = f.open();
    assert_eq!(again.overrides().pinned, Some(7));
    press(&mut again, "u");
    assert_eq!((again.overrides().pinned, again.overrides().excluded.clone()), (None, vec![5]));
    press(&mut again, "uu");
    assert!(again.overrides().is_empty(), "{:?}", again.overrides());
    press(&mut again, "u");
    assert_eq!(again.status.clone().expect("status").text, "nothing to undo");
}

// ----- large runs -----

#[test]
fn twenty_five_thousand_candidates_filter_as_you_type_and_sort() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "a2");
    let mut d = app.results.diagnosis.clone().expect("diagnosis");
    let template = d.candidates[0].clone();
    d.candidates = (0..25_000)
        .map(|i| falat::diagnosis::Candidate {
            step: i,
            agent: if i % 2 == 0 { "WebSurfer".into() } else { "Orchestrator".into() },
            score: (i % 97) as f32 / 100.0,
            ..template.clone()
        })
        .collect();
    app.results.diagnosis = Some(d);
    press(&mut app, "/or");
    assert_eq!(app.mode, Mode::Filter("or".into()));
    press(&mut app, "ch");
    assert_eq!(app.cands.rows().len(), 12_500, "the list narrows as you type");
    press(&mut app, "<enter>");
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.selected_candidate().map(|c| c.step), Some(1));
    press(&mut app, "jj");
    assert_eq!(app.selected_candidate().map(|c| c.step), Some(5));
    press(&mut app, "s");
    assert_eq!(app.cands.sort.name(), "score");
    assert_eq!(app.selected_candidate().map(|c| c.step), Some(5), "the selection stays on its candidate");
    let top = app.cands.get(app.results.diagnosis.as_ref(), 0).expect("first row");
    assert_eq!((top.score, top.agent.as_str()), (0.96, "Orchestrator"));
    let s = screen(&app);
    assert!(s.contains("12500 of 25000 match 'orch' · sort score"), "{s}");
    press(&mut app, "/<esc>");
    assert_eq!((app.cands.filter.as_str(), app.cands.rows().len()), ("", 25_000));
    press(&mut app, "/zzz<enter>");
    assert!(screen(&app).contains("no candidate matches 'zzz'"));
}

#[test]
fn the_methods_view_shows_falat_after_a_run_and_keeps_its_legend() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "a6");
    let s = screen(&app);
    let falat = s.lines().find(|l| l.contains("▶ falat")).expect("falat row");
    assert!(falat.contains("12") && falat.contains("WebSurfer") && !falat.contains("not run"), "{s}");
    assert!(!s.contains("falat has not run"), "{s}");
    for text in ["vs gold", "vs falat", "✓ same step · ≈ same agent · ≠ neither"] {
        assert!(s.contains(text), "{text}: {s}");
    }
    press(&mut app, "M");
    let s = screen(&app);
    assert!(s.contains("✓ same step · ≈ same agent · ≠ neither"), "the legend stays once the methods ran: {s}");
    let narrow = draw(&app, 80, 24).backend().to_string();
    assert!(narrow.contains("vs gold") && narrow.contains("vs falat"), "{narrow}");
}

#[test]
fn a_click_on_a_tab_opens_its_view() {
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let f = Fixture::new(HAND);
    let mut app = f.open();
    let s = screen(&app);
    let header = s.lines().next().expect("header").trim_start_matches('"');
    for (title, view) in [("Verdict", View::Verdict), ("Candidates", View::Candidates), ("Hierarchy", View::Hierarchy)]
    {
        let column = header[..header.find(title).expect("tab")].chars().count() as u16;
        let click =
            MouseEvent { kind: MouseEventKind::Down(MouseButton::Left), column, row: 0, modifiers: KeyModifiers::NONE };
        app.on_event(Event::Mouse(click));
        assert_eq!(app.nav.view, view, "clicked {title}");
    }
}

#[test]
fn only_the_decisive_candidate_carries_a_gutter_mark() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "a2j");
    let term = draw(&app, 120, 40);
    let buf = term.backend().buffer();
    let row_of = |text: &str| {
        (0..buf.area.height)
            .find(|&y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect::<String>().contains(text))
            .expect("row")
    };
    let decisive = row_of("▶   12 WebSurfer");
    assert_ne!(buf[(1, decisive)].style().fg, None, "the decisive row's mark is coloured");
    // Step 24's row (not selected, not decisive): a blank gutter with no colour.
    let other = row_of("   24 WebSurfer");
    assert_eq!(buf[(1, other)].symbol(), " ");
    assert_eq!(buf[(1, other)].style().bg, Some(Color::Reset), "{:?}", buf[(1, other)].style());
}

#[test]
fn five_digit_step_numbers_keep_their_columns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("long.json");
    let history: Vec<serde_json::Value> = (0..10_050)
        .map(|i| {
            let content = format!("I found \"ledger entry {i}\" after reading \"ledger entry {}\".", i.max(1) - 1);
            serde_json::json!({"content": content, "name": "Verification_Expert", "role": "assistant"})
        })
        .collect();
    let doc = serde_json::json!({"is_correct": false, "question": "Which ledger entry is wrong?", "history": history});
    std::fs::write(&trace, doc.to_string()).expect("write");
    let opts =
        TuiOptions { theme: Some("dark".into()), config_dir: Some(dir.path().join("config")), ..TuiOptions::default() };
    let mut app = tui::open(&trace, &opts, Arc::new(HeuristicJudge)).expect("open");
    // What the background indexing sends the event loop.
    app.on_job(JobMsg::Substrate(falat::substrate::Substrate::shared(&app.traj)));
    press(&mut app, ":10020<enter>");
    assert_eq!(app.nav.step, 10_020);
    let s = screen(&app);
    assert!(s.contains("← #10019 reuses values"), "{s}");
    assert!(s.contains("→ #10021 reuses values"), "{s}");
    // A long path shows its ends and its length.
    assert!(s.contains("to the output: #10020 → #10021 → #10022 → … → #10048 → #10049 (29 h…"), "{s}");
    assert!(draw(&app, 200, 60).backend().to_string().contains("#10049 (29 hops)"));
    assert!(s.contains("10020 Verification_Expert"), "{s}");
}

#[test]
fn the_app_asks_for_file_writes_as_effects_and_never_writes_itself() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    let effects = app.on_key(key_event(KeyCode::Char('m')));
    let [tui::Effect::File(save)] = effects.as_slice() else { panic!("one file effect") };
    assert!(matches!(**save, tui::FileEffect::SaveOverrides { .. }));
    let path = store::overrides_path(&f.trace);
    assert!(!path.exists(), "nothing written by the app itself");
    let mut copied = Vec::new();
    tui::drive(&mut app, effects, &mut copied);
    assert!(path.is_file(), "written when the effect is carried out");
    assert!(app.status.clone().expect("status").text.contains(&format!("saved to {}", path.display())));
    press(&mut app, "a");
    let effects = app.on_key(key_event(KeyCode::Char('e')));
    assert!(matches!(effects.as_slice(), [tui::Effect::File(e)] if matches!(**e, tui::FileEffect::Export { .. })));
    assert!(!store::beside(&f.trace, ".falat.md").exists());
}

#[test]
fn a_chosen_run_of_a_multi_run_file_keeps_its_overrides_apart() {
    let f = Fixture::copy(Path::new("data/agentrx-tau/tau_dataset_failed.json"));
    let first = tui::open(&f.trace, &f.opts(), Arc::new(HeuristicJudge)).expect("open");
    assert_eq!(first.traj.id, "task-3-trial-3");
    let status = first.status.as_ref().expect("a status").text.clone();
    assert!(
        status.starts_with(
            "the file holds 13 trajectories; showing task-3-trial-3 (1 of 13; --trajectory ID opens another)"
        ),
        "{status}"
    );
    let opts = TuiOptions { trajectory: Some("task-41-trial-41".into()), ..f.opts() };
    let mut app = tui::open(&f.trace, &opts, Arc::new(HeuristicJudge)).expect("open");
    assert_eq!(app.traj.id, "task-41-trial-41");
    let status = app.status.as_ref().expect("a status").text.clone();
    assert!(status.contains("showing task-41-trial-41 (4 of 13;"), "{status}");
    press(&mut app, "a:16<enter>p");
    let saved = store::beside(&f.trace, "#task-41-trial-41.falat.json");
    let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&saved).expect("saved")).expect("json");
    assert_eq!((file["pinned"].as_u64(), file["trajectory"].as_str()), (Some(16), Some("task-41-trial-41")));
    // The first run's overrides are its own; the chosen run finds its pin again.
    assert!(!store::beside(&f.trace, ".falat.json").exists());
    let again = tui::open(&f.trace, &opts, Arc::new(HeuristicJudge)).expect("open");
    assert_eq!(again.overrides().pinned, Some(16));
    // An unknown id names the ones the file holds.
    let bad = TuiOptions { trajectory: Some("task-9".into()), ..f.opts() };
    let err = tui::open(&f.trace, &bad, Arc::new(HeuristicJudge)).err().expect("an error").to_string();
    assert!(err.ends_with("holds no trajectory \"task-9\"; it holds task-3-trial-3, task-28-trial-28, task-39-trial-39, task-41-trial-41, task-47-trial-47, task-59-trial-59, task-71-trial-71, task-79-trial-79, task-80-trial-80, task-82-trial-82 and 3 more"), "{err}");
}

#[test]
fn a_labels_file_shows_the_gold_step_of_the_opened_run() {
    let f = Fixture::copy(Path::new("data/agentrx-tau/tau_dataset_failed.json"));
    let labels = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/agentrx-tau/tau_ground_truth.json");
    let opts = TuiOptions { trajectory: Some("task-41-trial-41".into()), labels: vec![labels], ..f.opts() };
    let app = tui::open(&f.trace, &opts, Arc::new(HeuristicJudge)).expect("open");
    // Message 17 of the AgentRx label is falat's step 16.
    assert_eq!(app.traj.gold.as_ref().map(|g| (g.step, g.agent.as_str())), Some((Some(16), "Assistant")));
    // A labels file naming no run of the trace says so in the status, with the ids.
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("l.jsonl");
    std::fs::write(&other, "{\"trajectory\": \"nope\", \"step\": 1, \"agent\": \"a\"}\n").unwrap();
    let app =
        tui::open(&f.trace, &TuiOptions { labels: vec![other], ..f.opts() }, Arc::new(HeuristicJudge)).expect("open");
    let status = app.status.as_ref().expect("a status");
    assert!(status.text.contains("none of its 1 labels names a trajectory of this trace"), "{}", status.text);
    assert_eq!(status.level, Level::Warn);
    // Not a labels file: opening fails and names it.
    let bad = TuiOptions { labels: vec![f.trace.clone()], ..f.opts() };
    let err = tui::open(&f.trace, &bad, Arc::new(HeuristicJudge)).err().expect("an error").to_string();
    assert!(err.contains("as labels"), "{err}");
}

#[test]
fn the_verdict_view_says_when_a_step_is_more_probable_than_the_one_named() {
    let f = Fixture::copy(Path::new("sample_traces/who-and-when-hand-crafted-47.json"));
    let mut app = f.open();
    press(&mut app, "a5");
    let m = app.machine_verdict().expect("machine verdict");
    assert_eq!(m.decisive_step, Some(61));
    assert_eq!(m.more_probable_step().map(|(r, _)| r.step), Some(24));
    let verdict = screen(&app);
    assert!(
        verdict.contains(
            // P 0.09 for step 24 until the ranker was refitted on quoted strings paired in order,
            // 0.08 until it was refitted on the claimed-lookup finding, 0.09 until it was refitted
            // on reading failed reads, installs and test summaries, 0.08 until it was refitted on
            // figures told rounded from a longer one.
            "Step 24 (FileSurfer) is more probable than step 61 (P 0.08 against 0.01). FALAT names step 61 because both"
        ),
        "{verdict}"
    );
}

/// A file of several runs opened on one (`--trajectory`) shows that run's id in the header; a
/// file named after its run does not repeat it.
#[test]
fn the_header_names_the_run_of_a_file_of_several() {
    let header = |app: &App| {
        let screen = draw(app, 160, 30).backend().to_string();
        screen.lines().find(|l| l.contains(" falat ")).unwrap_or_default().to_string()
    };
    let f = Fixture::copy(Path::new("data/agentrx-tau/tau_dataset_failed.json"));
    let opts = TuiOptions { trajectory: Some("task-28-trial-28".into()), ..f.opts() };
    let app = tui::open(&f.trace, &opts, Arc::new(HeuristicJudge)).expect("open");
    let h = header(&app);
    assert!(h.ends_with(" tau_dataset_failed.json › task-28-trial-28 \""), "{h}");
    let f = Fixture::copy(Path::new("data/who-and-when/Hand-Crafted/1.json"));
    let h = header(&f.open());
    assert!(h.contains(" 1.json · who-and-when-hand · ") && !h.contains('›'), "{h}");
}

// ----- scrolling at 80×24, whose decision, marks, esc -----

/// The screen at 80×24.
fn small(app: &App) -> String {
    draw(app, 80, 24).backend().to_string()
}

#[test]
fn at_80_by_24_the_verdict_scrolls_to_its_end_and_back() {
    let f = Fixture::copy(Path::new("sample_traces/who-and-when-hand-crafted-47.json"));
    let mut app = f.open();
    press_on(&mut app, "a5", 80, 24);
    let top = small(&app);
    assert!(top.contains("ROOT_CAUSE   decisive step 61"), "{top}");
    assert!(!top.contains("export: press e"), "the end is below at first: {top}");
    assert!(top.contains("↓ more (ctrl-d)"), "the border says more is below: {top}");
    press_on(&mut app, "<c-d>", 80, 24);
    let page = small(&app);
    assert!(!page.contains("ROOT_CAUSE"), "ctrl-d scrolled the verdict: {page}");
    press_on(&mut app, "G", 80, 24);
    let end = small(&app);
    assert!(end.contains("export: press e to write the reports beside the trace"), "{end}");
    assert!(end.contains("judge calls:") && end.contains("re-search"), "{end}");
    assert!(!end.contains("↓ more"), "nothing more below the end: {end}");
    // The offset is clamped to the text: more ctrl-d and pgdn stay at the end, one ctrl-u
    // leaves it.
    let at_end = app.nav.scroll[View::Verdict.index()];
    press_on(&mut app, "<c-d><pgdn><c-d>", 80, 24);
    assert_eq!(app.nav.scroll[View::Verdict.index()], at_end);
    press_on(&mut app, "<c-u>", 80, 24);
    assert!(app.nav.scroll[View::Verdict.index()] < at_end);
    press_on(&mut app, "g", 80, 24);
    assert_eq!(app.nav.scroll[View::Verdict.index()], 0);
    assert!(small(&app).contains("ROOT_CAUSE"));
    // Pgdn pages down to the end as well; each view keeps its own offset.
    press_on(&mut app, "<pgdn><pgdn><pgdn><pgdn>", 80, 24);
    assert!(small(&app).contains("export: press e"), "{}", small(&app));
    press_on(&mut app, "4", 80, 24);
    assert_eq!(app.nav.scroll[View::Prior.index()], 0);
    press_on(&mut app, "5", 80, 24);
    assert!(small(&app).contains("export: press e"), "the verdict kept its offset");
}

#[test]
fn at_80_by_24_the_prior_and_a_candidates_detail_scroll_to_their_last_line() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press_on(&mut app, "a2", 80, 24);
    let first = small(&app);
    assert!(first.contains("step 12 WebSurfer · score"), "the decisive candidate's detail: {first}");
    assert!(!first.contains("temporal precedence"), "its end is cut at first: {first}");
    press_on(&mut app, "<c-d><c-d><c-d>", 80, 24);
    let end = small(&app);
    assert!(end.contains("✓ pass temporal precedence"), "{end}");
    assert!(!end.contains("↓ more"), "the detail's last line is on screen: {end}");
    // Another row's detail starts at its top.
    press_on(&mut app, "j", 80, 24);
    assert_eq!(app.nav.scroll[View::Candidates.index()], 0);
    press_on(&mut app, "4", 80, 24);
    let prior = small(&app);
    assert!(prior.contains("↓ more"), "{prior}");
    press_on(&mut app, "G", 80, 24);
    let end = small(&app);
    assert!(end.contains("expected procedure") || end.contains("tools:"), "{end}");
    assert!(!end.contains("↓ more"), "{end}");
}

#[test]
fn an_exclusion_that_keeps_the_machines_step_is_not_the_users_decision() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "a");
    assert_eq!(app.decisive_step(), Some(12));
    // Exclude a step that is not the decisive one: the run with it still names step 12.
    press(&mut app, ":20<enter>X");
    assert_eq!(app.overrides().excluded, vec![20]);
    assert_eq!(app.user_decision().and_then(|u| u.decisive_step), Some(12));
    assert!(app.overrides_kept_the_step());
    let status = app.status.clone().expect("status").text;
    assert!(status.contains("your overrides keep step 12") && !status.contains("your decision"), "{status}");
    press(&mut app, "5");
    let verdict = screen(&app);
    assert!(!verdict.contains("YOUR DECISION"), "{verdict}");
    assert!(!verdict.contains("yours, not the machine's"), "{verdict}");
    assert!(
        verdict.contains("with your overrides the decisive step is still step 12: the machine's, not a decision"),
        "{verdict}"
    );
    assert!(verdict.contains("your overrides: marked [] · excluded [20] · pinned none"), "{verdict}");
    // A pin that changes the step is the user's decision.
    press(&mut app, ":0<enter>p5");
    let verdict = screen(&app);
    assert!(verdict.contains("YOUR DECISION   step 0"), "{verdict}");
    assert!(!app.overrides_kept_the_step());
}

#[test]
fn esc_clears_the_candidates_filter_and_the_search_before_anything_else() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press(&mut app, "a2/16<enter>");
    assert_eq!(app.cands.filter, "16");
    let filtered = app.cands.rows().len();
    assert!(filtered < app.cands.total(), "{filtered} of {}", app.cands.total());
    press(&mut app, "<esc>");
    assert_eq!((app.cands.filter.as_str(), app.nav.view), ("", View::Candidates), "esc cleared the filter only");
    assert_eq!(app.cands.rows().len(), app.cands.total());
    assert!(!screen(&app).contains("match '16'"));
    press(&mut app, "<esc>");
    assert_eq!(app.nav.view, View::Hierarchy, "the next esc goes back");
    press(&mut app, "/orchestrator<enter>");
    assert!(app.search.query.is_some());
    let focus = app.nav.focus;
    press(&mut app, "<esc>");
    assert_eq!((app.search.query.clone(), app.nav.focus), (None, focus), "esc cleared the search only");
    assert_eq!(app.status.clone().expect("status").text, "search cleared");
}

#[test]
fn the_help_explains_roles_columns_and_gives_each_mark_one_meaning() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    let rows = help_rows(&mut app, 200, 60);
    let text = rows.join("\n");
    for role in ["ROOT_CAUSE", "PROPAGATION", "SYMPTOM", "CONTRIBUTING"] {
        assert!(rows.iter().any(|r| r.contains(role)), "{role} in the help:\n{text}");
    }
    assert!(text.contains("phase suspicion") && text.contains("how likely the phase holds the error"), "{text}");
    assert!(text.contains("⊘") && text.contains("excluded by you"), "{text}");
    assert!(text.contains("ctrl-z") && text.contains("suspend"), "{text}");
    // One meaning per mark: every line that shows a mark says its meaning, and no other one's
    // (✗ is a failed check, never "excluded" or "neither").
    let meanings = [('⊘', "excluded"), ('≠', "neither"), ('★', "pinned"), ('✗', "fail")];
    for (mark, word) in meanings {
        let lines: Vec<&String> = rows.iter().filter(|r| r.contains(mark)).collect();
        assert!(!lines.is_empty(), "{mark} is explained:\n{text}");
        for r in lines {
            assert!(r.contains(word), "{mark} means {word}: {r}");
            for (_, other) in meanings.iter().filter(|(m, _)| *m != mark) {
                assert!(!r.contains(other), "{mark} beside {other}: {r}");
            }
        }
    }
    // The screens use the same marks: an excluded step shows ⊘ in the steps list.
    press(&mut app, "a:20<enter>X");
    let s = screen(&app);
    assert!(s.contains("⊘ excluded by you"), "{s}");
    assert!(!s.contains("✗ excluded"), "{s}");
}

#[test]
fn the_roles_header_grows_so_that_the_dependency_path_stays_visible() {
    let f = Fixture::copy(Path::new("sample_traces/who-and-when-hand-crafted-47.json"));
    let mut app = f.open();
    for (w, h) in [(80, 24), (60, 15)] {
        press_on(&mut app, "a3", w, h);
        let s = draw(&app, w, h).backend().to_string();
        assert!(s.contains("dependency path to the final output: 61 → 63 → 66"), "{w}x{h}: {s}");
        assert!(s.contains("ROOT_CAUSE   Orchestrator"), "{w}x{h}: {s}");
    }
}

#[test]
fn a_run_without_a_failure_says_so_instead_of_a_root_cause() {
    let f = Fixture::copy(Path::new(
        "tests/fixtures/corpus/openinference/arize_openinference_client_span_tool_calls.attrs.json",
    ));
    let mut app = f.open();
    press(&mut app, "a5");
    let m = app.machine_verdict().expect("machine verdict");
    assert_eq!(m.decisive_step, None);
    let s = screen(&app);
    assert!(s.contains("NO FAILURE FOUND   no ROOT_CAUSE is named"), "{s}");
    assert!(!s.contains("ROOT_CAUSE   decisive step"), "{s}");
    assert!(s.contains("finished all stages") && s.contains(": no failure found"), "{s}");
    // The roles view says why it has no roles, instead of asking to run the pipeline again.
    press(&mut app, "3");
    let s = screen(&app);
    assert!(s.contains("no roles: no failure found, so there is no candidate to classify."), "{s}");
    assert!(!s.contains("no roles yet") && !s.contains("to run the whole pipeline"), "{s}");
    insta::assert_snapshot!("roles_view_after_no_failure_found", draw(&app, 80, 24).backend().to_string());
}

// ----- the view model -----

/// The steps a verdict names, in the order the verdict view shows them, from the diagnosis's
/// data: the decisive step, the first five ranked steps, the steps of its "more probable"
/// claims, of its reason, its dependency path (or its claim that none reaches the output), the
/// gold step.
fn steps_the_verdict_names(app: &App) -> Vec<usize> {
    use falat::diagnosis::{Claim, Part};
    let d = app.machine_verdict().expect("a verdict");
    let steps = |parts: Vec<Part>| -> Vec<usize> {
        parts.into_iter().filter_map(|p| if let Part::Step(s) = p { Some(s) } else { None }).collect()
    };
    let mut out: Vec<usize> = d.decisive_step.into_iter().collect();
    // Under the quoted step, the later step that undid it.
    out.extend(d.decisive_step.and_then(|s| falat::report::reverted_at(&app.traj, s)).map(|r| r.step));
    out.extend(d.ranking.iter().take(5).map(|r| r.step));
    if !d.ranking.is_empty() {
        for c in d.explanation.claims.iter().filter(|c| matches!(c, Claim::MoreProbable { .. })) {
            out.extend(steps(c.parts(d.method, &d.explanation.rule)));
        }
    }
    out.extend(steps(d.explanation.parts(d.decisive_step, d.agent.as_deref())));
    if d.path.is_empty() {
        for c in d.explanation.claims.iter().filter(|c| matches!(c, Claim::NoPathToOutput { .. })) {
            out.extend(steps(c.parts(d.method, &d.explanation.rule)));
        }
    } else {
        out.extend(&d.path);
    }
    out.extend(app.traj.gold.as_ref().and_then(|g| g.step));
    out
}

#[test]
fn the_view_model_links_the_steps_the_verdict_names_and_places_them_where_they_are_drawn() {
    // See: issue 24: the verdict's links come from the explanation's data, and the view model
    // (computed without a terminal) says where each is on the screen.
    let f = Fixture::copy(Path::new("sample_traces/who-and-when-hand-crafted-47.json"));
    let mut app = f.open();
    press_on(&mut app, "a5", 80, 24);
    let d = app.machine_verdict().expect("a verdict").clone();
    assert_eq!(d.decisive_step, Some(61));
    let links = app.links();
    assert_eq!(links, steps_the_verdict_names(&app));
    // The decisive step; the ranking's first five; the claim that step 24 is more probable than
    // the named step 61, and that step 24 was no verified candidate; the reason's steps (61, and 63
    // where its finding says the output's value first appears); the dependency path 61 → 63 → 66;
    // the gold step 51.
    assert_eq!(links, [61, 61, 24, 4, 59, 1, 24, 61, 61, 24, 61, 63, 61, 61, 61, 63, 66, 51], "{links:?}");
    // 80×24: a frame of header, body, status and hints; the verdict's text inside the body's
    // border, wrapped to 78 columns.
    let vm = app.view.clone();
    assert_eq!(vm.screen.text, Rect::new(1, 2, 78, 19));
    // (The reason names verification's two criteria: "passed both independence and sufficiency".)
    // (Under the headline, the decisive step: a line naming it, three quoted lines and the count
    // of the others.)
    // (The reason names the step's finding first and the ranking's rule after it, in short.)
    // (Under the headline, what its category means here: two lines, "here, the wrong value
    // first appears in the output of what this step ran or asked for, not in its own words".)
    assert_eq!(vm.text_lines, 31);
    // Every link is drawn where the model places it: select each in turn (the view scrolls it
    // into sight) and read the drawn frame at its row and columns.
    for (k, link) in vm.links.iter().enumerate() {
        let term = draw(&app, 80, 24);
        let buf = term.backend().buffer();
        let scroll = app.nav.scroll[View::Verdict.index()];
        assert!((scroll..scroll + 19).contains(&link.line), "link {k} at line {} is shown", link.line);
        let y = vm.screen.text.y + (link.line - scroll) as u16;
        let drawn: String = link.cols.clone().map(|x| buf[(vm.screen.text.x + x, y)].symbol().to_string()).collect();
        assert_eq!(drawn, link.step.to_string(), "link {k}");
        assert_eq!(
            buf[(vm.screen.text.x + link.cols.start, y)].style().bg,
            app.theme.selection.bg,
            "link {k} selected"
        );
        press_on(&mut app, "j", 80, 24);
    }
    // The scroll bounds: the last page shows the last line.
    press_on(&mut app, "G", 80, 24);
    assert_eq!(app.nav.scroll[View::Verdict.index()], 31 - 19);
    press_on(&mut app, "<pgdn>", 80, 24);
    assert_eq!(app.nav.scroll[View::Verdict.index()], 31 - 19, "no scrolling past the end");
    press_on(&mut app, "g", 80, 24);
    assert_eq!(app.nav.scroll[View::Verdict.index()], 0);
}

#[test]
fn the_view_model_holds_the_lists_rows_and_the_header_tabs() {
    let f = Fixture::copy(Path::new("sample_traces/who-and-when-hand-crafted-47.json"));
    let mut app = f.open();
    press_on(&mut app, "a2", 80, 24);
    let d = app.results.diagnosis.clone().expect("a diagnosis");
    let cands: Vec<Option<usize>> = app.cands.rows().iter().map(|&k| Some(d.candidates[k].step)).collect();
    assert_eq!(app.view.rows, cands);
    assert_eq!(app.view.list_len(View::Candidates), d.candidates.len());
    press_on(&mut app, "3", 80, 24);
    let roles: Vec<Option<usize>> = app.role_rows().iter().map(|(s, _)| Some(*s)).collect();
    assert_eq!(app.view.rows, roles);
    assert_eq!(app.view.text_lines, 0, "the roles view's header does not scroll");
    assert_eq!(app.links().first().copied(), d.decisive_step, "the header links the decisive step");
    // The tabs: " falat " then " 1 ", " 2 "... one column apart (at 80 columns the current view's alone
    // keeps its title).
    assert_eq!(app.view.tab_at(8), Some(View::Hierarchy));
    assert_eq!(app.view.tab_at(7), None);
    let verdict = app.view.tabs.iter().find(|(v, _)| *v == View::Verdict).expect("a verdict tab").1.clone();
    let header: String = {
        let term = draw(&app, 80, 24);
        let buf = term.backend().buffer();
        verdict.clone().map(|x| buf[(x, 0)].symbol().to_string()).collect()
    };
    // At 80 columns the other views' tabs show their key only, leaving room for the file name.
    assert_eq!(header, " 5 ");
    press_on(&mut app, "5", 80, 24);
    let verdict = app.view.tabs.iter().find(|(v, _)| *v == View::Verdict).expect("a verdict tab").1.clone();
    let term = draw(&app, 80, 24);
    let buf = term.backend().buffer();
    assert_eq!(verdict.map(|x| buf[(x, 0)].symbol().to_string()).collect::<String>(), " 5 Verdict ");
}

// ----- the footer, the help's numbers and the verification wording (80 columns) -----

/// At 80 columns the key hints of every view and input mode fit whole: the main keys stay, the
/// least important hints are left out or shortened whole, never cut inside a word; a status
/// message too long for its line is cut between words and points to the messages overlay.
#[test]
fn at_80_columns_the_footer_keeps_its_main_keys_whole_and_the_status_cuts_between_words() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    press_on(&mut app, "a", 80, 24);
    let labels = [
        "drill",
        "go",
        "go to step",
        "filter",
        "sort",
        "refs",
        "step refs",
        "back",
        "next step ref",
        "run all",
        "run all methods",
        "jump",
        "jump back",
        "search",
        "run",
        "verdict",
        "step",
        "mark",
        "exclude",
        "pin",
        "undo",
        "export",
        "copy",
        "help",
        "quit",
        "pane",
    ];
    for view in ['1', '2', '3', '4', '5', '6'] {
        press_on(&mut app, &view.to_string(), 80, 24);
        let rows = rows_of(&draw(&app, 80, 24));
        let footer = rows.last().expect("footer").trim_end().to_string();
        assert!(!footer.contains('…'), "view {view}: {footer}");
        for hint in ["a run", "? help", "q quit", "e export"] {
            assert!(footer.contains(hint), "view {view}: {hint} in {footer}");
        }
        // Each hint is a key and one of the labels, whole.
        for hint in footer.trim().split("  ") {
            let (_, label) = hint.split_once(' ').unwrap_or(("", hint));
            assert!(labels.contains(&label), "view {view}: {hint:?} is no whole hint in {footer}");
        }
        if view == '2' {
            assert!(footer.contains("/ filter") && footer.contains("enter go"), "{footer}");
        }
    }
    // The input modes keep the keys that end them.
    for (keys, what) in [("2/", "filter candidates"), ("1/", "search step content"), ("1:", "jump to step number")] {
        press_on(&mut app, keys, 80, 24);
        let footer = rows_of(&draw(&app, 80, 24)).last().expect("footer").trim_end().to_string();
        assert!(footer.ends_with(&format!("{what} · enter ok · esc cancel")), "{keys}: {footer}");
        press_on(&mut app, "<esc>", 80, 24);
    }
    // The status: cut between two words of the message, then the pointer to `!`.
    let full = "finished all stages: decisive step 61 by Orchestrator (hallucination), confidence 0.07; \
                the reports are exported beside the trace";
    app.set_status(Level::Ok, full);
    let rows = rows_of(&draw(&app, 80, 24));
    let status = rows[rows.len() - 2].trim_end().to_string();
    let shown = status.split("│ ").nth(1).expect("the status after the stage marks");
    let kept =
        shown.strip_suffix("… — press ! for all messages").unwrap_or_else(|| panic!("cut with a pointer: {status}"));
    assert!(full.starts_with(kept) && full[kept.len()..].starts_with(' '), "cut between words: {status}");
}

/// The help (at 80×24, scrolled) explains the numbers a user sees, a candidate's score, P and
/// the confidence, and the three verification marks by name.
#[test]
fn the_help_explains_score_p_confidence_and_the_three_checks() {
    let f = Fixture::new(HAND);
    let mut app = f.open();
    let rows = help_rows(&mut app, 80, 24);
    for r in &rows {
        assert!(!r.trim_matches('│').trim_end().ends_with('…'), "a help line is cut: {r:?}");
    }
    let text = rows.iter().map(|r| r.trim_matches('│').trim()).collect::<Vec<_>>().join(" ");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for said in [
        "score candidates: how strong the findings that made the step a candidate are (their weights combined by noisy-or), 0-1; not a probability",
        "P verdict (ranker P): the fitted ranker's probability that the step is the decisive error, 0-1",
        "confidence verdict: the chance that the named step is right, 0-1: its P calibrated on the methods' past decisions on labelled runs",
        "named, lower P the verdict comes from verification first",
        "checks ✓✓✗ candidates, three marks, each passed ✓ or failed ✗: error independence",
        "counterfactual sufficiency (correcting it alone would have fixed the outcome), temporal precedence",
        "A verified candidate passed the first two",
    ] {
        assert!(text.contains(said), "{said}\nin\n{text}");
    }
}

/// When verification passed every candidate and the ranking chose, a candidate row reads ✓✓✗
/// (it passed independence and sufficiency, not precedence): the verdict names the two criteria
/// it means, so the third mark does not contradict it.
#[test]
fn the_verdict_names_the_two_criteria_beside_a_row_that_failed_the_third() {
    let f = Fixture::copy(Path::new("sample_traces/who-and-when-hand-crafted-47.json"));
    let mut app = f.open();
    press_on(&mut app, "a2", 120, 60);
    let candidates = draw(&app, 120, 60).backend().to_string();
    assert!(candidates.contains("✓✓✗") && candidates.contains("✓✓✓"), "{candidates}");
    press_on(&mut app, "5", 120, 60);
    let verdict = draw(&app, 120, 60).backend().to_string();
    let text = verdict.lines().map(|l| l.trim_matches(['"', '│', ' ', '█', '║'])).collect::<Vec<_>>().join(" ");
    assert!(text.contains("both verified candidates passed both independence and sufficiency"), "{verdict}");
    assert!(!text.contains("both criteria"), "{verdict}");
}

// ----- a first user's tool-using runs: tools by name, the verdict's step, 80 columns -----

const LANGSMITH: &str = "tests/fixtures/handbuilt/langsmith/supervisor_run.nested.json";
const WRONG_ID: &str = "tests/fixtures/handbuilt/first-user/r05_wrong_id.openai.json";
const LONG_RUN: &str = "tests/fixtures/handbuilt/first-user/r12_long_wrong_month.openai.json";
/// A run whose verdict the ranking names outside the candidates (no candidate passed verification).
const OUTSIDE_CANDIDATES: &str = "tests/fixtures/frameworks-b/openhands-eval-output-record.json";

/// The rows of a screen as text, without the frame's quotes.
fn text_rows(term: &Terminal<TestBackend>) -> Vec<String> {
    rows_of(term).into_iter().map(|r| r.trim_end().to_string()).collect()
}

/// A span format keeps only a tool call's arguments (`{}` for a hand-off tool): the steps pane,
/// the dependencies and the roles view name the tool (`transfer_to_researcher({})`), and the
/// evidence header names it before the kind, so that a narrow pane keeps it.
#[test]
fn a_tool_call_of_a_span_format_shows_its_tool_in_the_lists_and_the_evidence_header() {
    let f = Fixture::copy(Path::new(LANGSMITH));
    let mut app = f.open();
    assert_eq!(app.traj.steps[2].content, "{}");
    assert_eq!(app.traj.steps[2].tool_name.as_deref(), Some("transfer_to_researcher"));
    press_on(&mut app, ":2<enter>", 80, 24);
    assert_eq!(app.nav.step, 2);
    let rows = text_rows(&draw(&app, 80, 24));
    let step_row = rows.iter().find(|r| r.contains("  2 supervisor")).expect("the row of step 2");
    assert!(step_row.contains("transfer_to_r"), "{step_row}");
    assert!(!step_row.contains("{}  "), "{step_row}");
    let header = rows.iter().find(|r| r.contains("#2 supervisor")).expect("the evidence header");
    assert!(header.contains("#2 supervisor · call transfer_to_researcher"), "{header}");
    // Wide: the whole call, and the tool's arguments beside its name.
    let wide = draw(&app, 160, 45).backend().to_string();
    assert!(wide.contains("transfer_to_researcher({})"), "{wide}");
    press_on(&mut app, ":5<enter>", 160, 45);
    let wide = draw(&app, 160, 45).backend().to_string();
    assert!(wide.contains("web_search({\"query\":\"Paris population 2023\"})"), "{wide}");
    assert!(wide.contains("#5 researcher · call web_search · "), "{wide}");
    press_on(&mut app, ":2<enter>", 80, 24);
    insta::assert_snapshot!("tool-calls-langsmith-80x24", draw(&app, 80, 24).backend().to_string());
}

/// The verdict view shows the decisive step itself under its headline (agent, kind and tool,
/// first lines), at 80×24 and 160×45, as the Markdown report quotes it.
#[test]
fn the_verdict_view_quotes_the_decisive_step() {
    let f = Fixture::copy(Path::new(WRONG_ID));
    let mut app = f.open();
    press_on(&mut app, "a5", 160, 45);
    let d = app.machine_verdict().expect("a verdict").clone();
    // The call made with the order number mistyped (argument_mismatch).
    assert_eq!(d.decisive_step, Some(2));
    let wide = draw(&app, 160, 45).backend().to_string();
    assert!(wide.contains("  the step: assistant · tool_call get_order"), "{wide}");
    assert!(wide.contains("  > get_order({\"order_id\": \"52813\"})"), "{wide}");
    let small_rows = text_rows(&draw(&app, 80, 24));
    let at =
        small_rows.iter().position(|r| r.contains("the step: assistant · tool_call get_order")).expect("the step line");
    assert!(small_rows[at + 1].contains("  > get_order({\"order_id\": \"52813\"})"), "{small_rows:?}");
    insta::assert_snapshot!("verdict-quote-80x24", small(&app));

    // A tool call of the long run: its tool by name, in the call's one-line form.
    let f = Fixture::copy(Path::new(LONG_RUN));
    let mut app = f.open();
    press_on(&mut app, "a5", 80, 24);
    let d = app.machine_verdict().expect("a verdict").clone();
    let s = d.decisive_step.expect("a step");
    let step = &app.traj.steps[s];
    assert_eq!(step.kind, falat::model::StepKind::ToolCall);
    let tool = step.tool_name.clone().expect("a tool");
    let rows = text_rows(&draw(&app, 80, 24));
    assert!(rows.iter().any(|r| r.contains(&format!("the step: assistant · tool_call {tool}"))), "{rows:?}");
    let first = falat::text::first_line(&step.content, 60);
    assert!(rows.iter().any(|r| r.contains(&format!("> {}", &first[..first.len().min(40)]))), "{rows:?}");
    insta::assert_snapshot!("verdict-tool-call-160x45", draw(&app, 160, 45).backend().to_string());
}

/// A low confidence is worded from the ranking beside it: when another step is more probable
/// than the named one, the sentence says so instead of "no step stands out".
#[test]
fn the_low_confidence_line_agrees_with_the_ranking() {
    let f = Fixture::copy(Path::new(WRONG_ID));
    let mut app = f.open();
    press_on(&mut app, "a5", 160, 45);
    let d = app.machine_verdict().expect("a verdict").clone();
    assert!(d.low_confidence(), "{}", d.confidence);
    let (best, p_named) = d.more_probable_step().expect("a more probable step");
    let (best, p) = (best.step, best.probability);
    let named = d.decisive_step.expect("a step");
    let screen = draw(&app, 160, 45).backend().to_string();
    // The more probable step was no candidate: the sentence says why it is not the verdict.
    assert!(d.candidate(best).is_none(), "step {best} is a candidate: the test needs one that is not");
    let expected = format!(
        "low confidence: the named step {named} has P {p_named:.2}, and step {best} is more probable (P {p:.2}) but \
         was not a candidate and was not verified; read both"
    );
    assert!(screen.contains(&expected), "{expected}\n{screen}");
    assert!(!screen.contains("stands out"), "{screen}");
}

/// The step the ranking named is no candidate: the candidates view says so above its list, with
/// the rule that named it, so that a user who looks for it there finds why it is missing.
#[test]
fn the_candidates_view_names_the_step_the_ranking_named_outside_them() {
    let f = Fixture::copy(Path::new(OUTSIDE_CANDIDATES));
    let mut app = f.open();
    press_on(&mut app, "a2", 80, 24);
    let d = app.results.diagnosis.clone().expect("a diagnosis");
    let s = d.decisive_step.expect("a step");
    assert!(d.candidates.iter().all(|c| c.step != s), "step {s} is a candidate here: the test needs one that is not");
    assert!(matches!(d.explanation.rule, falat::diagnosis::Rule::Ranking { .. }), "{:?}", d.explanation.rule);
    let wide = draw(&app, 160, 45).backend().to_string();
    assert!(
        wide.contains(&format!("▶ Step {s}, the step named, is not a candidate: the ranking named it (")),
        "{wide}"
    );
    let rows = text_rows(&draw(&app, 80, 24));
    assert!(rows[1].starts_with(&format!("▶ Step {s}, the step named, is not a candidate")), "{rows:?}");
    // The list and its rows the mouse addresses start below the note.
    let list_top = rows.iter().position(|r| r.starts_with("┌ Candidates")).expect("the list");
    assert!(list_top > 1, "{rows:?}");
    assert_eq!(app.view.screen.view_list.y as usize, list_top);
    insta::assert_snapshot!("candidates-named-outside-80x24", small(&app));
}

/// At 80 columns the header keeps the trace's name (its start cut with `…` when it is too long)
/// by showing the other views' tabs by key only, and the status line after a run says the
/// verdict in few words instead of cutting it after "decisive step".
#[test]
fn at_80_columns_the_header_keeps_the_file_name_and_the_status_the_verdict() {
    let f = Fixture::copy(Path::new(LONG_RUN));
    let mut app = f.open();
    press_on(&mut app, "a", 80, 24);
    let d = app.machine_verdict().expect("a verdict").clone();
    let s = d.decisive_step.expect("a step");
    let rows = text_rows(&draw(&app, 80, 24));
    assert!(rows[0].ends_with(" r12_long_wrong_month.openai.json"), "{:?}", rows[0]);
    assert!(rows[0].starts_with(" falat   1 Hierarchy   2   3   4   5   6 "), "{:?}", rows[0]);
    let status = &rows[rows.len() - 2];
    let expected = format!("decisive step {s} by assistant ({:.2})", d.confidence);
    assert!(status.contains(&expected), "{expected} in {status:?}");
    assert!(!status.contains('…'), "{status:?}");
    // Wide, the whole tabs and the whole status.
    let wide = text_rows(&draw(&app, 160, 45));
    assert!(
        wide[0].contains(" 2 Candidates ") && wide[0].contains("r12_long_wrong_month.openai.json · "),
        "{:?}",
        wide[0]
    );
    let status = &wide[wide.len() - 2];
    assert!(
        status.contains("finished all stages") && status.contains(&format!("decisive step {s} by assistant")),
        "{status:?}"
    );
    // The tabs the mouse clicks are the tabs drawn.
    press_on(&mut app, "5", 80, 24);
    let verdict = app.view.tabs.iter().find(|(v, _)| *v == View::Verdict).expect("a verdict tab").1.clone();
    let candidates = app.view.tabs.iter().find(|(v, _)| *v == View::Candidates).expect("a candidates tab").1.clone();
    let buf_row = &text_rows(&draw(&app, 80, 24))[0];
    let cols: Vec<char> = buf_row.chars().collect();
    let at = |r: std::ops::Range<u16>| r.map(|x| cols[x as usize]).collect::<String>();
    assert_eq!(at(verdict), " 5 Verdict ");
    assert_eq!(at(candidates), " 2 ");
    // A name too long for the room loses its start, never its end.
    let long = f.dir.path().join("a-very-long-export-name-from-the-tracing-tool-r12_long_wrong_month.openai.json");
    std::fs::copy(&f.trace, &long).expect("copy");
    let mut app = tui::open(&long, &f.opts(), Arc::new(HeuristicJudge)).expect("open");
    app.show_timings = false;
    press_on(&mut app, "1", 80, 24);
    let header = text_rows(&draw(&app, 80, 24))[0].clone();
    assert!(header.ends_with("r12_long_wrong_month.openai.json") && header.contains(" …"), "{header:?}");
    assert!(header.chars().count() <= 80, "{header:?}");
}

// ----- a first user's coding-agent sessions: calls as they read, failures quoted -----

const CODEX_LONG: &str = "tests/fixtures/handbuilt/coding/r15_long_codex.jsonl";
const CLAUDE_PROTECTED: &str = "tests/fixtures/handbuilt/coding/r11_deleted_protected_claude.jsonl";
const GEMINI_OK: &str = "tests/fixtures/handbuilt/coding/r04_ok_gemini_go.json";

/// Codex shell calls show their command, not their JSON, in the steps pane at 160 and 80
/// columns; the verdict quotes the decisive `apply_patch` by its file first, and the evidence
/// header says what the call does.
#[test]
fn codex_calls_read_as_their_commands_in_the_lists_and_the_verdict() {
    let f = Fixture::copy(Path::new(CODEX_LONG));
    let mut app = f.open();
    press_on(&mut app, "a", 160, 45);
    let s = app.machine_verdict().and_then(|d| d.decisive_step).expect("a step");
    assert_eq!(app.traj.steps[s].tool_name.as_deref(), Some("apply_patch"));
    for (w, h) in [(160, 45), (80, 24)] {
        let screen = draw(&app, w, h).backend().to_string();
        assert!(!screen.contains("{\"command\""), "{w}x{h}:\n{screen}");
        assert!(screen.contains(" shell: . .venv"), "{w}x{h}:\n{screen}");
    }
    press_on(&mut app, ":4<enter>", 160, 45);
    let rows = text_rows(&draw(&app, 160, 45));
    let row = rows.iter().find(|r| r.contains("    4 codex")).expect("the row of step 4");
    assert!(row.contains("shell: python3.8 -m venv .venv && . .venv/bin/a"), "{row}");
    let header = rows.iter().find(|r| r.contains("#4 codex")).expect("the evidence header");
    assert!(header.contains("#4 codex · call shell · discuss · python3.8 -m venv .venv && . .venv/bin/"), "{header}");
    insta::assert_snapshot!("coding-codex-steps-160x45", draw(&app, 160, 45).backend().to_string());
    press_on(&mut app, "5", 80, 24);
    let rows = text_rows(&draw(&app, 80, 24));
    let at = rows.iter().position(|r| r.contains("the step: codex · tool_call apply_patch")).expect("the step line");
    assert!(rows[at + 1].contains("> apply_patch tests/test_server.py: srv = start_http_server(0,"), "{rows:?}");
    // The reason: the step's finding first, the ranking's rule after it.
    let text = rows.join(" ");
    assert!(!text.contains("Decided by the ranking"), "{rows:?}");
    assert!(text.contains(&format!("step {s} (codex): the check after this edit fails")), "{rows:?}");
    insta::assert_snapshot!("coding-codex-verdict-80x24", small(&app));
}

/// The roles view's SYMPTOM row quotes the failure (the result's first error line), not the
/// first line of the tool's output; the ROOT_CAUSE row, a call, its command.
#[test]
fn the_roles_view_quotes_the_failure_of_an_error_step() {
    // Codex: the test run's output starts with the command pytest ran; its error line is below.
    let f = Fixture::copy(Path::new(CODEX_LONG));
    let mut app = f.open();
    press_on(&mut app, "a3", 160, 45);
    let d = app.machine_verdict().expect("a verdict").clone();
    let symptom = d.roles.iter().find(|(_, r)| *r == Role::Symptom).map(|(s, _)| *s).expect("a symptom");
    assert!(app.traj.steps[symptom].content.starts_with(".venv/bin/python -m pytest -q tests"));
    let rows = text_rows(&draw(&app, 160, 45));
    let row = rows.iter().find(|r| r.contains("SYMPTOM")).expect("the symptom row");
    assert!(row.contains(" codex E   SyntaxError: invalid syntax  "), "{row}");
    // Claude Code: the call by its command (the protected migration deleted). The revision that
    // met two heads before it was run again with success: context, no contributing error.
    let f = Fixture::copy(Path::new(CLAUDE_PROTECTED));
    let mut app = f.open();
    press_on(&mut app, "a3", 160, 45);
    for (w, h) in [(160, 45), (80, 24)] {
        let rows = text_rows(&draw(&app, w, h));
        let root = rows.iter().find(|r| r.contains("ROOT_CAUSE ")).expect("the root cause row");
        assert!(root.contains("claude Bash: git rm -q migrations/versions/0003_hotfix"), "{w}x{h}: {root}");
        assert!(!rows.iter().any(|r| r.contains("CONTRIBUTING")), "{w}x{h}: {rows:#?}");
    }
    insta::assert_snapshot!("coding-claude-roles-160x45", draw(&app, 160, 45).backend().to_string());
    insta::assert_snapshot!("coding-claude-roles-80x24", small(&app));
}

/// At 80 columns a cut status after an export says what `!` does.
#[test]
fn a_narrow_status_names_both_reports_and_their_folder() {
    // The two exported paths do not fit 80 columns; the short form names the two kinds of report
    // once and the folder, and the messages overlay keeps both full paths.
    let f = Fixture::copy(Path::new(GEMINI_OK));
    let mut app = f.open();
    press_on(&mut app, "ae", 80, 24);
    let rows = text_rows(&draw(&app, 80, 24));
    let status = &rows[rows.len() - 2];
    let folder = f.trace.parent().expect("folder").display().to_string();
    assert!(status.contains(&format!("│ exported .falat.md and .falat.report.json to {folder}")), "{status}");
    assert!(!status.contains('…'), "{status}");
    let full = app.messages.back().expect("message").text.clone();
    let trace = f.trace.display().to_string();
    assert_eq!(full, format!("exported {trace}.falat.md and {trace}.falat.report.json"));
    insta::assert_snapshot!("coding-gemini-exported-80x24", redact_tmp(&small(&app)));
}

#[test]
fn a_cut_status_says_what_the_messages_key_does() {
    // Marking a step saves the overrides and re-runs the search: the message names the file and
    // the new verdict, more than 80 columns hold.
    let f = Fixture::copy(Path::new(GEMINI_OK));
    let mut app = f.open();
    press_on(&mut app, "am", 80, 24);
    let rows = text_rows(&draw(&app, 80, 24));
    let status = &rows[rows.len() - 2];
    assert!(status.contains("│ marked step "), "{status}");
    assert!(status.ends_with("… — press ! for all messages"), "{status}");
    assert!(status.chars().count() <= 80, "{status}");
}

#[test]
fn snapshot_a_record_left_out_is_marked_between_the_steps_it_sat_between() {
    // Line 12 of this Codex rollout is of a type falat does not know (it holds the apply_patch
    // call): it sat between steps 5 and 6.
    let f = Fixture::copy(Path::new("tests/fixtures/handbuilt/codex/b4b_unknown_type_codex.jsonl"));
    let mut app = f.open();
    let status = app.status.clone().expect("status").text;
    assert!(status.contains("2 load warnings, first: line 12 (between steps 5 and 6): unknown line type"), "{status}");
    press(&mut app, ":5<enter>");
    assert_eq!(app.nav.step, 5);
    let shown = screen(&app);
    // The steps list marks step 5; its evidence header names the line.
    assert!(shown.contains(" 5⋯codex"), "{shown}");
    assert!(shown.contains("⋯ line 12 of the file, after this step"), "{shown}");
    insta::assert_snapshot!("codex-record-left-out-after-step-5", shown);
}

// ----- a user's notes at 120×40: the header's tabs, a run with no failure, the roles window,
// the category of an edit that applied, an edit undone later -----

/// A copy of `source` under the name `name` in a fresh folder.
fn renamed(source: &str, name: &str) -> Fixture {
    let f = Fixture::copy(Path::new(source));
    let trace = f.dir.path().join(name);
    std::fs::rename(&f.trace, &trace).expect("rename");
    Fixture { dir: f.dir, trace }
}

/// With a 39-character trace name the header keeps the tabs' titles from 100 columns on and cuts
/// the name with an ellipsis instead; at 80 columns (no room for the titles whatever the name)
/// it keeps the whole name and shows the other tabs by their keys, as docs/COMMANDS.md ("Small terminals") says.
#[test]
fn a_long_trace_name_is_cut_before_the_tab_titles_are() {
    let name = "r05_wrong_id_order_lookup_session.openai.json";
    let name = &name[name.len() - 39..];
    assert_eq!(name.chars().count(), 39);
    let f = renamed("tests/fixtures/handbuilt/first-user/r05_wrong_id.openai.json", name);
    let mut app = f.open();
    let mut headers = Vec::new();
    for w in [80u16, 100, 120, 160] {
        press_on(&mut app, "3", w, 40);
        let header = text_rows(&draw(&app, w, 40))[0].clone();
        assert!(header.chars().count() <= w as usize, "{w}: {header:?}");
        if w == 80 {
            assert!(header.starts_with(" falat   1   2   3 Roles   4   5   6 "), "{w}: {header:?}");
            assert!(header.ends_with(&format!(" {name}")), "{w}: {header:?}");
        } else {
            assert!(
                header.starts_with(" falat   1 Hierarchy   2 Candidates   3 Roles   4 Prior   5 Verdict   6 Methods "),
                "{w}: {header:?}"
            );
        }
        match w {
            100 | 120 => {
                let shown = header.rsplit(" …").next().expect("a cut name");
                assert!(name.ends_with(shown) && shown.chars().count() >= 16, "{w}: {header:?}");
            }
            _ => assert!(header.ends_with(name) && !header.contains('…'), "{w}: {header:?}"),
        }
        // The tabs the mouse clicks are the tabs drawn.
        let cols: Vec<char> = header.chars().collect();
        for (v, r) in &app.view.tabs {
            let drawn: String = r.clone().map(|x| cols[x as usize]).collect();
            assert!(drawn.starts_with(&format!(" {} ", v.index() + 1)), "{w}: {drawn:?}");
        }
        headers.push(format!("{w:>3} |{header}|"));
    }
    insta::assert_snapshot!("header-39-char-name-80-100-120-160", headers.join("\n"));
}

/// A run with no failure: the ranking beside "No failure found" says what it is (where to look
/// if the user suspects a failure) and that its `P` is no sign of one; the candidates and roles
/// views say why they are empty, with the verdict's reason.
#[test]
fn with_no_failure_found_the_ranking_and_the_empty_views_say_what_they_are() {
    let f = Fixture::copy(Path::new("tests/fixtures/handbuilt/pydantic-ai/late_orders_share_ok.pydantic-ai.json"));
    let mut app = f.open();
    press(&mut app, "a5");
    let d = app.machine_verdict().expect("a verdict").clone();
    assert_eq!(d.decisive_step, None);
    assert!(d.candidates.is_empty());
    let first = d.ranking[0].step;
    let s = screen(&app);
    assert!(s.contains("NO FAILURE FOUND   no ROOT_CAUSE is named"), "{s}");
    assert!(s.contains(&format!("if you suspect a failure anyway, read first (ranker P): {first} (")), "{s}");
    assert!(s.contains("so a high P is no sign of a failure"), "{s}");
    assert!(!s.contains("ranker P ") && !s.contains(", named)"), "{s}");
    insta::assert_snapshot!("verdict-no-failure-120x40", s);
    press(&mut app, "2");
    let s = screen(&app);
    assert!(s.contains("no candidates: no failure found, so no step became a candidate to classify."), "{s}");
    assert!(s.contains("No failure found: "), "{s}");
    press(&mut app, "3");
    let s = screen(&app);
    assert!(s.contains("no roles: no failure found, so there is no candidate to classify."), "{s}");
    assert!(s.contains("No failure found: "), "{s}");
    assert!(!s.contains("to run the whole pipeline"), "{s}");
}

/// The reverted-patch session (`coding/r21_reverted_patch_codex.jsonl`): a patch that applied
/// and whose test run failed (step 7), undone by `git checkout --` (step 11), then the test's
/// expectation patched instead.
const REVERTED: &str = "tests/fixtures/handbuilt/coding/r21_reverted_patch_codex.jsonl";

/// The roles view says which steps have roles: those of the window around the decisive step.
#[test]
fn the_roles_view_says_only_the_window_around_the_decisive_step_has_roles() {
    let f = Fixture::copy(Path::new(REVERTED));
    let mut app = f.open();
    press(&mut app, "a3");
    let s = app.machine_verdict().and_then(|d| d.decisive_step).expect("a step");
    let (lo, hi) = (s - 3, s + 3);
    let screen = screen(&app);
    assert!(
        screen.contains(&format!(
            "roles of steps {lo}–{hi} only (±3 around the decisive step {s}); other steps unclassified (: goes to any step)"
        )),
        "{screen}"
    );
    let rows: Vec<usize> = app.role_rows().iter().map(|(k, _)| *k).collect();
    assert_eq!(rows, (lo..=hi).collect::<Vec<_>>());
    // The decisive step is a link of the header: tab selects it, enter goes there.
    press(&mut app, "<tab><enter>");
    assert_eq!(app.nav.view, View::Hierarchy);
    assert_eq!(app.nav.step, s);
}

/// The verdict on an edit that applied glosses its category (no malformed call); a verdict that
/// names an edit a later step reverted says so, with the revert as a link.
#[test]
fn the_verdict_on_a_reverted_edit_that_applied_glosses_its_category_and_names_the_revert() {
    let f = Fixture::copy(Path::new(REVERTED));
    let mut app = f.open();
    press(&mut app, "a5");
    // The machine names the test's expectation rewritten to the bug (step 14), which stays.
    let d = app.machine_verdict().expect("a verdict").clone();
    assert_eq!(d.decisive_step, Some(14));
    assert_eq!(d.category.as_str(), "tool_parameter_or_invocation_error");
    let s = screen(&app);
    assert!(
        s.contains("category: here, the edit applied without error: the change it made was wrong, not the call"),
        "{s}"
    );
    assert!(!s.contains("reverted at step"), "{s}");
    insta::assert_snapshot!("verdict-edit-that-applied-120x40", s);
    // A verdict on the patch it reverted first (the ranking's second step, as when no finding
    // decides) says the patch was undone.
    app.results.diagnosis = Some(falat::diagnosis::Diagnosis { decisive_step: Some(7), ..d });
    app.prepare(ratatui::layout::Rect::new(0, 0, 120, 40));
    let s = screen(&app);
    assert!(s.contains("reverted at step 11 (git checkout -- shop/money.py): a later step undid this edit"), "{s}");
    // The revert is the second link: j selects it, enter goes there.
    assert_eq!(app.links()[..2], [7, 11]);
    press(&mut app, "j<enter>");
    assert_eq!((app.nav.view, app.nav.step), (View::Hierarchy, 11));
    // Another category keeps its plain gloss.
    let f = Fixture::copy(Path::new("tests/fixtures/handbuilt/coding/refused-edit-then-sed.claude-code.jsonl"));
    let mut app = f.open();
    press(&mut app, "a5");
    let s = screen(&app);
    assert!(s.contains("· instruction_or_plan_deviation"), "{s}");
    assert!(s.contains("category: work against the task, the user's or the agent's instructions, or the plan"), "{s}");
    assert!(!s.contains("reverted at step"), "{s}");
}
