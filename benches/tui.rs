//! TUI performance on a generated 50,000-step trajectory: time from opening the file to the
//! first frame, and the time a key press takes to be handled and redrawn (TestBackend 160x45).
//! Run with `cargo bench --bench tui`; it prints the figures.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use falat::judge::heuristic::HeuristicJudge;
use falat::tui::{self, App, TuiOptions};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

const STEPS: usize = 50_000;
const AGENTS: [&str; 4] = ["Planner", "Data_Expert", "Computer_terminal", "Verification_Expert"];

/// One step of a synthetic AG2-style run: plans, code, terminal output, JSON, prose.
fn content(i: usize) -> String {
    match i % 40 {
        0 => {
            format!("Here is the plan for part {i}: look up the population of City{i}, compute the totals and verify.")
        }
        k if k % 4 == 1 => format!(
            "We compute the value for city {i}.\n```python\nimport pandas as pd\ndf = pd.read_csv('city_{i}.csv')\nprint(df['population'].sum() * {k})\n```\nThe value should be {}.",
            i * 3
        ),
        k if k % 4 == 2 => {
            if i.is_multiple_of(7) {
                format!(
                    "exitcode: 1 (execution failed)\nCode output: Traceback (most recent call last):\n  File \"x.py\", line 3\nKeyError: 'population_{i}'"
                )
            } else {
                format!("exitcode: 0 (execution succeeded)\nCode output: {}", i * 3)
            }
        }
        k if k % 4 == 3 => format!(
            "Updated ledger:\n{{\n  \"is_request_satisfied\": {{\"reason\": \"step {i} is not verified\", \"answer\": false}},\n  \"next_speaker\": {{\"answer\": \"{}\"}}\n}}",
            AGENTS[i % 4]
        ),
        _ => format!(
            "I checked {} against the source \"Census Bureau {}\" and it looks right. See https://example.com/census/{i} for the table. {}",
            i * 3,
            i % 97,
            "The numbers are consistent with the previous report. ".repeat(3)
        ),
    }
}

fn write_trace(path: &Path) {
    let history: Vec<_> =
        (0..STEPS).map(|i| json!({"content": content(i), "name": AGENTS[i % 4], "role": "assistant"})).collect();
    let doc = json!({
        "is_correct": false,
        "question": "What is the total population of the listed cities in the 2020 census?",
        "ground_truth": "123456",
        "history": history,
        "mistake_agent": "Data_Expert",
        "mistake_step": "1",
        "system_prompt": {"Planner": "You plan.", "Data_Expert": "You compute.", "Verification_Expert": "You check."},
    });
    std::fs::write(path, serde_json::to_vec(&doc).expect("json")).expect("write trace");
}

fn key(c: KeyCode) -> KeyEvent {
    let mods = match c {
        KeyCode::Char(ch) if ch.is_ascii_uppercase() => KeyModifiers::SHIFT,
        _ => KeyModifiers::NONE,
    };
    KeyEvent::new(c, mods)
}

fn keys(s: &str) -> Vec<KeyCode> {
    s.chars()
        .map(|c| match c {
            '\n' => KeyCode::Enter,
            '\u{1b}' => KeyCode::Esc,
            '\t' => KeyCode::Tab,
            '>' => KeyCode::PageDown,
            c => KeyCode::Char(c),
        })
        .collect()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn summary(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let mean = v.iter().sum::<Duration>() / v.len() as u32;
    let pct = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{name:<34} n={:<5} mean {:>7.3} ms  p50 {:>7.3} ms  p99 {:>7.3} ms  max {:>7.3} ms",
        v.len(),
        ms(mean),
        ms(pct(0.5)),
        ms(pct(0.99)),
        ms(v[v.len() - 1])
    );
}

fn open_first_frame(path: &Path, opts: &TuiOptions) -> (App, Terminal<TestBackend>, Duration, Duration) {
    let start = Instant::now();
    let mut app = tui::open(path, opts, Arc::new(HeuristicJudge)).expect("open");
    let opened = start.elapsed();
    let mut term = Terminal::new(TestBackend::new(160, 45)).expect("terminal");
    // Like the event loop: prepare the frame, then draw it.
    app.prepare(ratatui::layout::Rect::new(0, 0, 160, 45));
    term.draw(|f| tui::render(&app, f)).expect("draw");
    (app, term, opened, start.elapsed())
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("synthetic-50k.json");
    write_trace(&path);
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!("trace: {STEPS} steps, {:.1} MB (Who&When algorithm-generated format)", size as f64 / 1e6);
    let opts = TuiOptions { config_dir: Some(dir.path().join("config")), ..TuiOptions::default() };

    let start = Instant::now();
    let loaded = falat::ingest::fs::load_path(&path, None).expect("load");
    let t_load = start.elapsed();
    let traj = &loaded.trajectories[0];
    let start = Instant::now();
    let ev: Vec<_> = traj.steps.iter().map(falat::evidence::extract).collect();
    let t_ev = start.elapsed();
    let start = Instant::now();
    let h = falat::hierarchy::build(traj);
    let t_h = start.elapsed();
    println!(
        "breakdown: load {:.0} ms, hierarchy::build {:.0} ms (of which evidence extraction alone {:.0} ms), {} evidence items",
        ms(t_load),
        ms(t_h),
        ms(t_ev),
        ev.iter().map(Vec::len).sum::<usize>()
    );
    drop((h, ev, loaded));
    if std::env::var_os("FALAT_BENCH_OPEN_ONLY").is_some() {
        return;
    }
    let mut first = Vec::new();
    let mut loaded = Vec::new();
    let mut kept = None;
    for _ in 0..3 {
        let (app, term, opened, frame) = open_first_frame(&path, &opts);
        loaded.push(opened);
        first.push(frame);
        kept = Some((app, term));
    }
    summary("open (load + hierarchy + app)", loaded);
    summary("open to first frame", first);
    let (mut app, mut term) = kept.expect("opened");

    println!(
        "first frame shows {} of {STEPS} steps, {} phases; the rest is indexed in the background",
        app.n_steps(),
        app.phases().len()
    );
    let start = Instant::now();
    let substrate = falat::substrate::Substrate::shared(&app.traj);
    println!(
        "background indexing after the first frame: the whole substrate (hierarchy, graph, prior) {:.0} ms ({} edges)",
        ms(start.elapsed()),
        substrate.graph.graph.edge_count()
    );
    app.on_job(falat::tui::job::JobMsg::Substrate(substrate));
    println!("after indexing: {} steps, {} phases", app.n_steps(), app.phases().len());

    let press = |app: &mut App, term: &mut Terminal<TestBackend>, code: KeyCode| -> Duration {
        let t = Instant::now();
        let effects = app.on_key(key(code));
        assert!(effects.is_empty(), "no background work in the key benchmark");
        app.prepare(ratatui::layout::Rect::new(0, 0, 160, 45));
        term.draw(|f| tui::render(app, f)).expect("draw");
        t.elapsed()
    };
    let run = |name: &str, app: &mut App, term: &mut Terminal<TestBackend>, seq: &str, reps: usize| {
        let mut v = Vec::new();
        for _ in 0..reps {
            for k in keys(seq) {
                v.push(press(app, term, k));
            }
        }
        summary(name, v);
    };
    run("phases: j/k", &mut app, &mut term, "jjjjjjjjjjkkkkk", 40);
    run("phases: G / g", &mut app, &mut term, "Gg", 50);
    run("steps: j (fresh evidence each key)", &mut app, &mut term, "\njjjjjjjjjjjjjjjjjjjj", 20);
    run("evidence: page down / up", &mut app, &mut term, "\n>>>kkk", 30);
    run("pane cycle: tab", &mut app, &mut term, "\t", 100);
    run("jump: :37519 enter", &mut app, &mut term, ":37519\n", 20);
    run("search: /failed enter, n, N", &mut app, &mut term, "/failed\nnnN", 10);
    run("views: 2 3 4 5 1", &mut app, &mut term, "23451", 20);
    run("help: ? and close", &mut app, &mut term, "??", 20);
    // 25,000 candidates: the filter narrows the list as you type, s sorts it.
    let candidates = (0..25_000)
        .map(|i| falat::diagnosis::Candidate {
            step: i,
            agent: AGENTS[i % 4].to_string(),
            findings: Vec::new(),
            score: (i % 97) as f32 / 100.0,
            pruned: None,
            verification: None,
            origin: falat::diagnosis::Origin::Machine,
        })
        .collect();
    app.results.diagnosis = Some(falat::diagnosis::Diagnosis { candidates, ..Default::default() });
    run("candidates (25,000): 2 /expert enter, s s s s", &mut app, &mut term, "2/expert\nssss\u{1b}1", 5);

    cancel_latency(&app);
    pipeline_on_prefix(&app, 2_000);
}

/// The whole pipeline on 50,000 steps takes long with the heuristic judge; in the TUI it runs in
/// the background. This measures how fast a cancel (`x`) stops it.
fn cancel_latency(app: &App) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let effects = {
        // On the substrate already built (as once indexing is done), so that `a` starts at once.
        let mut probe = tui::App::with_substrate(
            app.trace.clone(),
            (*app.traj).clone(),
            app.substrate(),
            false,
            Arc::new(HeuristicJudge),
            tui::Config {
                theme: app.theme.clone(),
                keymap: app.keymap.clone(),
                ground_truth: true,
                notes: Vec::new(),
                problems: Vec::new(),
                show_timings: false,
                method: falat::methods::Method::Falat,
                places: app.places.clone(),
                restored: Default::default(),
                skipped_at: Vec::new(),
            },
        );
        probe.on_key(key(KeyCode::Char('a')))
    };
    let Some(tui::Effect::Run(req)) = effects.into_iter().next() else { panic!("a run") };
    let flag = Arc::new(AtomicBool::new(false));
    let stage = Arc::new(std::sync::Mutex::new(String::new()));
    let (f2, s2, traj) = (Arc::clone(&flag), Arc::clone(&stage), Arc::clone(&app.traj));
    let progress: tui::job::Progress = Arc::new(move |a: tui::runs::Activity, done: usize, total: usize| {
        *s2.lock().expect("lock") = format!("{} {done}/{total}", a.label());
    });
    let worker = std::thread::spawn(move || {
        tui::job::execute(&req, &traj, &HeuristicJudge, f2, Some(progress));
    });
    std::thread::sleep(Duration::from_secs(3));
    let at = stage.lock().expect("lock").clone();
    let start = Instant::now();
    flag.store(true, Ordering::SeqCst);
    worker.join().expect("worker");
    println!(
        "whole pipeline on {STEPS} steps, cancelled after 3 s (at '{at}'): stopped {:.1} ms after x",
        ms(start.elapsed())
    );
}

/// The whole pipeline on the first `n` steps, as `a` runs it in the background.
fn pipeline_on_prefix(app: &App, n: usize) {
    let mut t = (*app.traj).clone();
    t.steps.truncate(n);
    t.links.retain(|l| l.from < n && l.to < n);
    let start = Instant::now();
    let d = falat::methods::run(
        falat::methods::Method::Falat,
        &t,
        &HeuristicJudge,
        &falat::methods::MethodOptions::for_falat(falat::methods::falat::Options::new(true)),
    );
    println!(
        "whole pipeline on the first {n} steps: {:.0} ms, {} candidates, decisive step {:?}",
        ms(start.elapsed()),
        d.candidates.len(),
        d.decisive_step
    );
}
