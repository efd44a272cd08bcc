//! End to end in a real pseudo-terminal (portable-pty + vt100): the `falat` binary opens a
//! bundled Who&When sample, runs the whole pipeline by keys and quits; Ctrl-C and a panic
//! restore the terminal too; a light terminal gets the light theme. Waits poll the screen with a timeout (no fixed sleeps).

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};

const ROWS: u16 = 45;
const COLS: u16 = 160;
const TIMEOUT: Duration = Duration::from_secs(60);

struct Term {
    parser: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn Child + Send + Sync>,
    reader: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Term {
    /// Runs `program args` in a fresh pty with a private config folder.
    fn spawn(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Term {
        let dir = tempfile::tempdir().expect("tempdir");
        let pty = native_pty_system()
            .openpty(PtySize { rows: ROWS, cols: COLS, pixel_width: 0, pixel_height: 0 })
            .expect("openpty");
        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        cmd.cwd(env!("CARGO_MANIFEST_DIR"));
        cmd.env("TERM", "xterm-256color");
        cmd.env("HOME", dir.path());
        cmd.env("XDG_CONFIG_HOME", dir.path());
        cmd.env_remove("NO_COLOR");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pty.slave.spawn_command(cmd).expect("spawn");
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().expect("reader");
        let writer = pty.master.take_writer().expect("writer");
        let rows = NonZeroU16::new(ROWS).expect("rows");
        let cols = NonZeroU16::new(COLS).expect("cols");
        let parser = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, 0)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (p, r) = (Arc::clone(&parser), Arc::clone(&raw));
        let reader = std::thread::spawn(move || {
            let _master = pty.master;
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                p.lock().expect("parser").process(&buf[..n]);
                r.lock().expect("raw").extend_from_slice(&buf[..n]);
            }
        });
        Term { parser, raw, writer, child, reader: Some(reader), _dir: dir }
    }

    fn screen(&self) -> String {
        self.parser.lock().expect("parser").screen().contents()
    }

    fn send(&mut self, bytes: &str) {
        self.writer.write_all(bytes.as_bytes()).expect("write");
        self.writer.flush().expect("flush");
    }

    /// The row and column where `text` starts on the screen.
    fn find(&self, text: &str) -> Option<(u16, u16)> {
        let screen = self.screen();
        screen.lines().enumerate().find_map(|(r, line)| {
            let at = line.find(text)?;
            Some((r as u16, line[..at].chars().count() as u16))
        })
    }

    /// Whether the cell is drawn as a selection (a background colour or inverse video).
    fn highlighted(&self, row: u16, col: u16) -> bool {
        let p = self.parser.lock().expect("parser");
        p.screen().cell(row, col).is_some_and(|c| c.inverse() || c.bgcolor() != vt100::Color::Default)
    }

    /// Polls the screen until every text is on it.
    fn wait_for(&self, texts: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if texts.iter().all(|t| s.contains(t)) {
                return s;
            }
            assert!(start.elapsed() < TIMEOUT, "timed out waiting for {texts:?}; screen:\n{s}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Polls until the child exits; returns its exit status.
    fn wait_exit(&mut self) -> portable_pty::ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                // The reader ends when the pty closes: every byte is parsed then.
                if let Some(r) = self.reader.take() {
                    r.join().expect("reader thread");
                }
                return status;
            }
            assert!(start.elapsed() < TIMEOUT, "timed out waiting for exit; screen:\n{}", self.screen());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Asserts the terminal was given back: main screen, no mouse capture, cursor shown.
    fn assert_restored(&self) {
        let p = self.parser.lock().expect("parser");
        let screen = p.screen();
        assert!(!screen.alternate_screen(), "still on the alternate screen");
        assert_eq!(screen.mouse_protocol_mode(), vt100::MouseProtocolMode::None, "mouse capture left on");
        assert!(!screen.hide_cursor(), "cursor left hidden");
        let raw = self.raw.lock().expect("raw");
        let text = String::from_utf8_lossy(&raw);
        let enter = text.find("\u{1b}[?1049h").expect("entered the alternate screen");
        let leave = text.rfind("\u{1b}[?1049l").expect("left the alternate screen");
        assert!(leave > enter);
    }
}

fn fixture_copy(name: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    std::fs::copy(Path::new("tests/fixtures/tui").join(name), &path).expect("copy");
    let shown = path.display().to_string();
    (dir, shown)
}

fn falat() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_falat"))
}

/// The test binary itself, running one of its ignored child tests in the pty (the library's
/// entry point in a real terminal, independent of which `falat` binary sits in the target folder).
fn child(name: &str, env: &[(&str, &str)]) -> Term {
    let me = std::env::current_exe().expect("current exe");
    Term::spawn(&me, &["--exact", name, "--ignored", "--nocapture", "--test-threads=1"], env)
}

#[test]
fn the_binary_runs_the_whole_pipeline_by_keys_and_quits() {
    let (_trace_dir, trace) = fixture_copy("hand-crafted-1.json");
    let mut t = Term::spawn(falat(), &["open", &trace], &[]);
    t.wait_for(&[" Phases ", " Steps ", " Evidence ", " Dependencies ", "ready · a runs the whole pipeline"]);
    t.send("a");
    let s = t.wait_for(&["finished all stages", "decisive step 12 by WebSurfer"]);
    // Without further keys: the hierarchy view shows the decisive step, selected, with its
    // phase marked and its evidence open.
    assert!(s.contains("#12 WebSurfer"), "the evidence shows step 12:\n{s}");
    assert!(s.contains("│▶ 2 3-28"), "the phase holding the verdict is marked:\n{s}");
    let (row, col) = t.find("◆ 12 WebSurfer").expect("step 12's row is on screen");
    assert!(t.highlighted(row, col + 2), "step 12's row is the selection:\n{s}");
    assert!(!t.highlighted(row - 1, col + 2), "step 11's row is not:\n{s}");
    t.send("5");
    // Waits for the whole verdict: a frame may arrive in several reads.
    t.wait_for(&["ROOT_CAUSE", "decisive step 12", "agent WebSurfer", "step 12 by WebSurfer (same step)"]);
    t.send(":12\r");
    t.wait_for(&["#12 WebSurfer", "ROOT_CAUSE"]);
    t.send("y");
    t.wait_for(&["copied step 12"]);
    // OSC 52 with the base64 of "step 12 (WebSur...".
    let raw = String::from_utf8_lossy(&t.raw.lock().expect("raw")).into_owned();
    assert!(raw.contains("\u{1b}]52;c;c3RlcCAxMiAoV2ViU3Vy"), "no OSC 52 copy in the output");
    t.send("q");
    let status = t.wait_exit();
    assert!(status.success(), "exit status {status:?}");
    t.assert_restored();
}

#[test]
fn the_library_entry_runs_the_pipeline_and_ctrl_c_quits() {
    let (_trace_dir, trace) = fixture_copy("algorithm-generated-1.json");
    let mut t = child("tui_child", &[("FALAT_TUI_CHILD_TRACE", &trace)]);
    t.wait_for(&[" Phases ", "algorithm-generated-1.json"]);
    t.send("a");
    // The run warns (its verdict is unverified): the status line, in its long or (with the run's
    // time, at 160 columns) short form, says the warning, the key and view, and the verdict.
    t.wait_for(&["1 warning (", "5: verdict): ", "step 0 by"]);
    t.send("3");
    t.wait_for(&["ROOT_CAUSE", "around the decisive step"]);
    t.send("\u{3}");
    let status = t.wait_exit();
    assert!(status.success(), "exit status {status:?}");
    t.assert_restored();
    t.wait_for(&["test tui_child ... ok"]);
}

#[test]
fn a_panic_restores_the_terminal_before_the_message() {
    let mut t = child("panic_child", &[("FALAT_PANIC_CHILD", "1")]);
    let status = t.wait_exit();
    assert!(!status.success(), "the child panicked");
    let s = t.wait_for(&["panicked", "boom inside the tui"]);
    t.assert_restored();
    assert!(!s.contains("drawn"), "the TUI screen is gone:\n{s}");
}

/// Runs the TUI on `$FALAT_TUI_CHILD_TRACE`; run inside a pty by the tests above.
#[test]
#[ignore = "run inside a pty by the_library_entry_runs_the_pipeline_and_ctrl_c_quits"]
fn tui_child() {
    let trace = std::env::var("FALAT_TUI_CHILD_TRACE").expect("only inside the pty test");
    falat::tui::run(Path::new(&trace), falat::tui::TuiOptions::default()).expect("tui");
}

/// Enters TUI mode and panics; run inside a pty by `a_panic_restores_the_terminal_before_the_message`.
#[test]
#[ignore = "run inside a pty by a_panic_restores_the_terminal_before_the_message"]
fn panic_child() {
    assert_eq!(std::env::var("FALAT_PANIC_CHILD").as_deref(), Ok("1"), "only inside the pty test");
    let mut guard = falat::tui::TerminalGuard::enter().expect("terminal");
    guard.terminal.draw(|f| f.render_widget(ratatui::widgets::Paragraph::new("drawn"), f.area())).expect("draw");
    panic!("boom inside the tui");
}

#[test]
fn without_a_terminal_on_stdout_it_says_so_in_one_line_before_any_output() {
    let (_trace_dir, trace) = fixture_copy("hand-crafted-1.json");
    let out = std::process::Command::new(falat())
        .args(["open", &trace])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "nothing is written into the pipe: {:?}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains("not a terminal") && !err.contains('\u{1b}'), "{err}");
}

/// The colour of the header's first cell.
fn header_bg(t: &Term) -> vt100::Color {
    t.parser.lock().expect("parser").screen().cell(0, 0).map_or(vt100::Color::Default, |c| c.bgcolor())
}

/// Answers the colour query falat sends when no theme is set (terminal-colorsaurus: OSC 10 and
/// OSC 11 for the foreground and background colours, then a DA1 request as the sentinel) with
/// `foreground` and `background`, as a terminal does.
fn answer_colour_query(t: &mut Term, foreground: &str, background: &str) {
    let start = Instant::now();
    while !String::from_utf8_lossy(&t.raw.lock().expect("raw")).contains("\u{1b}]11;?") {
        assert!(start.elapsed() < TIMEOUT, "no OSC 11 query was sent");
        std::thread::sleep(Duration::from_millis(5));
    }
    t.send(&format!("\u{1b}]10;{foreground}\u{7}\u{1b}]11;{background}\u{7}\u{1b}[?62;22c"));
}

#[test]
fn a_terminal_with_a_light_background_gets_the_light_theme_unless_one_is_given() {
    let (_trace_dir, trace) = fixture_copy("hand-crafted-1.json");
    // themes/light.toml and themes/dark.toml: header = { bg = "#e4e8ef" } / { bg = "#1f2530" }.
    let light = vt100::Color::Rgb(0xe4, 0xe8, 0xef);
    let dark = vt100::Color::Rgb(0x1f, 0x25, 0x30);
    let (black, white) = ("rgb:0000/0000/0000", "rgb:ffff/ffff/ffff");
    for (foreground, background, want) in [(black, white, light), (white, black, dark)] {
        let mut t = Term::spawn(falat(), &["open", &trace], &[]);
        answer_colour_query(&mut t, foreground, background);
        t.wait_for(&[" Phases ", "ready · a runs the whole pipeline"]);
        assert_eq!(header_bg(&t), want, "{background}");
        t.send("q");
        t.wait_exit();
    }
    // --theme wins, and no query is sent then.
    let mut t = Term::spawn(falat(), &["--theme", "dark", &trace], &[]);
    t.wait_for(&[" Phases ", "ready · a runs the whole pipeline"]);
    assert_eq!(header_bg(&t), dark);
    assert!(!String::from_utf8_lossy(&t.raw.lock().expect("raw")).contains("\u{1b}]11;?"), "queried despite --theme");
    t.send("q");
    t.wait_exit();
}

#[test]
fn ctrl_z_suspends_to_the_shell_and_fg_takes_the_terminal_back() {
    let (_trace_dir, trace) = fixture_copy("hand-crafted-1.json");
    // An interactive shell with job control: it gives falat a process group of its own, so
    // SIGTSTP stops it (a process group without a shell around it is orphaned and never stops).
    let mut t = Term::spawn(Path::new("bash"), &["--norc", "--noprofile", "-i"], &[("PS1", "shell$ ")]);
    t.wait_for(&["shell$ "]);
    t.send(&format!("'{}' open '{trace}'\r", falat().display()));
    t.wait_for(&[" Phases ", "ready · a runs the whole pipeline"]);
    t.send("\u{1a}");
    let s = t.wait_for(&["Stopped"]);
    {
        let p = t.parser.lock().expect("parser");
        assert!(!p.screen().alternate_screen(), "suspended on the alternate screen:\n{s}");
        assert_eq!(p.screen().mouse_protocol_mode(), vt100::MouseProtocolMode::None, "mouse capture left on");
    }
    t.send("fg\r");
    t.wait_for(&[" Phases ", " Steps ", "ready · a runs the whole pipeline"]);
    assert!(t.parser.lock().expect("parser").screen().alternate_screen(), "fg takes the alternate screen back");
    // It answers keys again.
    t.send("5");
    t.wait_for(&["no verdict yet."]);
    t.send("q");
    t.wait_for(&["shell$ "]);
    t.send("exit\r");
    let status = t.wait_exit();
    assert!(status.success(), "exit status {status:?}");
}

/// The files under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(files_under(&p)) } else { out.push(p) }
    }
    out
}

#[test]
fn a_trace_piped_into_dash_opens_with_keys_from_the_terminal_and_overrides_in_the_state_folder() {
    // See: issue 28: `falat -` (and `falat open -`) reads the trace from standard input, as
    // `diagnose -` and `inspect -` do; the keys still come from the terminal.
    let (trace_dir, trace) = fixture_copy("hand-crafted-1.json");
    let script = r#"cat "$1" | "$0" -"#;
    let bin = falat().display().to_string();
    let mut t = Term::spawn(Path::new("/bin/sh"), &["-c", script, &bin, &trace], &[]);
    t.wait_for(&[" Phases ", "<stdin>", "the trace came from standard input"]);
    t.send("a");
    t.wait_for(&["finished all stages", "decisive step 12 by WebSurfer"]);
    // Mark the selected decisive step: nothing can be saved beside a file, so the overrides go
    // to the state folder, keyed by the content, and the status line says why.
    t.send("m");
    let state = t._dir.path().join(".local/state/falat/traces");
    let start = Instant::now();
    let saved = loop {
        if let Some(f) = files_under(&state).into_iter().find(|f| f.ends_with("overrides.falat.json")) {
            break f;
        }
        assert!(start.elapsed() < TIMEOUT, "no overrides saved under {}; screen:\n{}", state.display(), t.screen());
        std::thread::sleep(Duration::from_millis(20));
    };
    let key = saved.parent().and_then(|d| d.file_name()).expect("a folder").to_string_lossy().into_owned();
    assert!(key.starts_with("stdin-") && key.len() == "stdin-".len() + 16, "{key}");
    let text = std::fs::read_to_string(&saved).expect("read");
    let json: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(json["marked"], serde_json::json!([12]), "{text}");
    t.send("!");
    t.wait_for(&["the trace came from standard input: saved to"]);
    t.send("q");
    let status = t.wait_exit();
    assert!(status.success(), "exit status {status:?}");
    t.assert_restored();
    // Nothing beside the trace, nothing in the working folder.
    let beside: Vec<_> = std::fs::read_dir(trace_dir.path()).expect("dir").flatten().map(|e| e.file_name()).collect();
    assert_eq!(beside, [std::ffi::OsString::from("hand-crafted-1.json")]);
    let cwd = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in ["-.falat.json", "stdin.falat.json", "<stdin>.falat.json"] {
        assert!(!cwd.join(name).exists(), "{name} was written in the working folder");
    }
}
