//! Diagnosis benchmark: `cargo bench --bench diagnose [-- --sizes 1000,5000 --methods falat
//! --shapes generated,coding,tool-loop --timeout 60]`.
//!
//! Two parts, both offline (heuristic judge, ground truth on):
//!
//! 1. The bundled Who&When set: the largest trajectory and the whole set, loading excluded
//!    (median, fastest and slowest of repeated runs).
//! 2. Scaling: generated falat JSONL traces of 1,000, 5,000, 10,000 and 50,000 steps (four agents
//!    cycling message, tool call, tool result and message; numbers in every step, some of them
//!    new and unsourced; a failing tool result with an error line about every 50 steps; an
//!    ignored error and a wrong final answer), diagnosed by every method; then a coding-agent
//!    session of the same sizes (shape `coding`: the bundled Claude Code session
//!    `tests/fixtures/corpus/claude-code/spotter_short.jsonl`, 15 lines with a command the user
//!    refuses, repeated with fresh ids), and a long tool loop after one request (shape
//!    `tool-loop`: the bundled OpenAI Agents SDK trace
//!    `tests/fixtures/handbuilt/openai-agents/agents-sdk_calendar_moved_unasked.json`, whose
//!    spans — lookups returning lists, an update, a message stating counts — are repeated with
//!    fresh span ids under the one trace: no user turn after the first, so every rule that reads
//!    "since the user's last turn" sees the whole run). Each run is a child
//!    process (this binary with `--child`) so that its peak resident memory (`VmHWM` from
//!    `/proc/self/status`, Linux) is its own; a run past the timeout (default 120 s) is killed
//!    and reported as such. The table gives wall and CPU time of the diagnosis (loading excluded;
//!    CPU time from `/proc/self/stat`, all threads), peak memory of the process, candidates, and
//!    the growth exponent `log(c2/c1)/log(n2/n1)` of CPU time between consecutive sizes (1 is
//!    linear, 3 is cubic; CPU time is steadier than wall time on a busy machine).

use std::hint::black_box;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use falat::ingest::fs::{dataset_files, load_path};
use falat::ingest::parse;
use falat::judge::heuristic::HeuristicJudge;
use falat::methods::{self, Method, MethodOptions};
use falat::model::{SourceFormat, Trajectory};

const SIZES: [usize; 4] = [1_000, 5_000, 10_000, 50_000];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(Shape::parse(&args[i + 1]), &args[i + 2], args[i + 3].parse().expect("size"));
        return;
    }
    let value = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let sizes: Vec<usize> = value("--sizes")
        .map(|s| s.split(',').map(|x| x.parse().expect("--sizes takes numbers")).collect())
        .unwrap_or_else(|| SIZES.to_vec());
    let methods = value("--methods")
        .map(|s| Method::parse_list(&s).expect("--methods takes method names"))
        .unwrap_or_else(|| Method::ALL.to_vec());
    let shapes: Vec<Shape> = value("--shapes")
        .map(|s| s.split(',').map(Shape::parse).collect())
        .unwrap_or_else(|| vec![Shape::Generated, Shape::Coding, Shape::ToolLoop]);
    let timeout = Duration::from_secs(value("--timeout").map(|s| s.parse().expect("seconds")).unwrap_or(120));
    if !args.iter().any(|a| a == "--skip-bundled") {
        bundled();
    }
    for shape in shapes {
        scaling(shape, &sizes, &methods, timeout);
    }
}

/// The kind of trace the scaling part generates.
#[derive(Clone, Copy)]
enum Shape {
    /// A falat JSONL multi-agent run ([`generated_trace`]).
    Generated,
    /// A Claude Code session ([`coding_session`]).
    Coding,
    /// An Agents SDK run of one request and a long tool loop ([`tool_loop`]).
    ToolLoop,
}

impl Shape {
    fn parse(s: &str) -> Shape {
        match s {
            "generated" => Shape::Generated,
            "coding" => Shape::Coding,
            "tool-loop" => Shape::ToolLoop,
            other => panic!("--shapes takes generated, coding and tool-loop, not {other}"),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Shape::Generated => "generated",
            Shape::Coding => "coding",
            Shape::ToolLoop => "tool-loop",
        }
    }
}

/// Part 1: the bundled Who&When set.
fn bundled() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/who-and-when");
    let files = dataset_files(&dir).expect("list data/who-and-when");
    let all: Vec<(u64, Trajectory)> = files
        .iter()
        .map(|f| {
            let size = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
            (size, load_path(f, None).expect("loads").trajectories.remove(0))
        })
        .collect();
    let (size, largest) = all.iter().max_by_key(|(s, _)| *s).expect("files");
    let opts = MethodOptions::new(true);
    println!("bundled Who&When, FALAT (heuristic judge, ground truth on; median / fastest / slowest)");
    let times = repeat(|| {
        black_box(methods::run(Method::Falat, largest, &HeuristicJudge, &opts));
    });
    report(&format!("largest trajectory {} ({} steps, {} kB)", largest.id, largest.steps.len(), size / 1000), &times);
    let times = repeat(|| {
        for (_, t) in &all {
            black_box(methods::run(Method::Falat, t, &HeuristicJudge, &opts));
        }
    });
    report(&format!("whole bundled set ({} trajectories)", all.len()), &times);
    println!();
}

/// Part 2: every method on generated traces of growing size, one child process per run.
fn scaling(shape: Shape, sizes: &[usize], methods: &[Method], timeout: Duration) {
    let exe = std::env::current_exe().expect("own path");
    let what = match shape {
        Shape::Generated => "generated multi-agent traces",
        Shape::Coding => "a Claude Code session repeated with fresh ids",
        Shape::ToolLoop => "an Agents SDK run of one request, its spans repeated with fresh ids",
    };
    println!();
    println!("{what}, one process per run, timeout {} s", timeout.as_secs());
    println!(
        "{:<14} {:>7} {:>10} {:>10} {:>10} {:>11} {:>9}  decisive",
        "method", "steps", "wall", "cpu", "peak RSS", "candidates", "exponent"
    );
    for m in methods {
        let mut last: Option<(usize, f64)> = None;
        for &n in sizes {
            let started = Instant::now();
            let mut child = Command::new(&exe)
                .args(["--child", shape.as_str(), m.as_str(), &n.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn child");
            let finished = loop {
                if child.try_wait().expect("wait").is_some() {
                    break true;
                }
                if started.elapsed() > timeout {
                    let _ = child.kill();
                    let _ = child.wait();
                    break false;
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            if !finished {
                println!("{:<14} {n:>7} {:>10} {:>10} {:>10} {:>11} {:>9}", m.as_str(), "timeout", "-", "-", "-", "-");
                last = None;
                continue;
            }
            let out = child.wait_with_output().expect("child output");
            let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 5 {
                println!("{:<14} {n:>7} child failed: {line}", m.as_str());
                last = None;
                continue;
            }
            let secs: f64 = f[0].parse().expect("secs");
            let cpu: f64 = f[1].parse().expect("cpu secs");
            let kb: u64 = f[2].parse().expect("kB");
            let exponent = match last {
                Some((n0, c0)) if c0 > 0.0 && cpu > 0.0 => {
                    format!("{:.2}", (cpu / c0).ln() / (n as f64 / n0 as f64).ln())
                }
                _ => "-".into(),
            };
            println!(
                "{:<14} {n:>7} {:>8.3} s {:>8.2} s {:>7} MB {:>11} {exponent:>9}  {}",
                m.as_str(),
                secs,
                cpu,
                kb / 1024,
                f[3],
                f[4]
            );
            last = Some((n, cpu));
        }
    }
}

/// One run in a child process: prints `wall_seconds cpu_seconds peak_kB candidates decisive`.
fn child(shape: Shape, method: &str, steps: usize) {
    let m = Method::parse(method).expect("method");
    let (bytes, name, format) = match shape {
        Shape::Generated => (generated_trace(steps), "generated.jsonl", SourceFormat::FalatJsonl),
        Shape::Coding => (coding_session(steps), "session.jsonl", SourceFormat::ClaudeCode),
        Shape::ToolLoop => (tool_loop(steps), "trace.json", SourceFormat::OpenAiAgents),
    };
    let mut loaded = parse(name, &bytes, Some(format)).expect("parses");
    let t = loaded.trajectories.remove(0);
    drop(bytes);
    let opts = MethodOptions::new(true);
    let (start, cpu0) = (Instant::now(), cpu_seconds());
    let d = methods::run(m, &t, &HeuristicJudge, &opts);
    let (secs, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    let decisive = d.decisive_step.map_or("-".to_string(), |s| s.to_string());
    println!("{secs:.4} {cpu:.4} {} {} {decisive}", peak_kb(), d.candidates.len());
}

/// User plus system CPU time of the process so far, in seconds (`/proc/self/stat` fields 14 and
/// 15, in clock ticks of 1/100 s), 0 where `/proc` is missing.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// The process's peak resident set in kB (`VmHWM`), 0 where `/proc` is missing.
fn peak_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// A deterministic pseudo-random stream (SplitMix64), so every run sees the same trace.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A falat JSONL trajectory of `steps` steps with the mix long agent runs have: a planner
/// delegating, a coder calling a tool and reading results, a reviewer commenting; numbers in every
/// step (half carried over from an earlier step, half new and unsourced); a failing tool result
/// with a traceback about every 50 steps, sometimes ignored; a wrong final answer.
fn generated_trace(steps: usize) -> Vec<u8> {
    use std::fmt::Write;
    let mut rng = Rng(steps as u64);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"{{"falat": 1, "id": "generated-{steps}", "task": "Compute the total revenue of the 2023 sales table and report it in USD.", "expected_output": "48213", "observed_output": "51377", "gold": {{"agent": "Coder", "step": {}}}, "agents": [{{"name": "Planner", "role": "plans and delegates"}}, {{"name": "Coder", "role": "writes and runs code"}}, {{"name": "python", "role": "tool"}}, {{"name": "Reviewer", "role": "checks results"}}]}}"#,
        steps / 3
    );
    let mut seen: Vec<u64> = vec![2023];
    for i in 0..steps {
        let carried = seen[rng.below(seen.len() as u64) as usize];
        let fresh = 1000 + rng.below(90_000);
        if seen.len() < 4096 {
            seen.push(fresh);
        } else {
            let k = rng.below(seen.len() as u64) as usize;
            seen[k] = fresh;
        }
        let last = i + 1 == steps;
        let line = match i % 4 {
            0 if last => {
                format!(r#"{{"agent": "Planner", "content": "FINAL ANSWER: the total revenue is {} USD."}}"#, 51377)
            }
            0 => format!(
                r#"{{"agent": "Planner", "kind": "delegation", "delegate_to": "Coder", "id": "d{i}", "content": "Next, sum region {} using the value {carried} from before; I assume the rate is {fresh}."}}"#,
                i % 17
            ),
            1 => format!(
                r#"{{"agent": "Coder", "kind": "tool_call", "tool_name": "python", "id": "c{i}", "refs": ["d{}"], "content": "total = sum(rows[{}:{}]) * {carried} / {fresh}"}}"#,
                i - 1,
                i % 211,
                i % 211 + 40
            ),
            2 if rng.below(50) == 0 => format!(
                r#"{{"agent": "python", "kind": "tool_result", "refs": ["c{}"], "is_error": true, "content": "Traceback (most recent call last):\n  File \"main.py\", line {}, in <module>\nKeyError: 'region_{}'"}}"#,
                i - 1,
                i % 90,
                i % 17
            ),
            2 => format!(
                r#"{{"agent": "python", "kind": "tool_result", "refs": ["c{}"], "content": "{fresh}.{}"}}"#,
                i - 1,
                rng.below(100)
            ),
            _ => format!(
                r#"{{"agent": "{}", "content": "The subtotal is {fresh}; it matches {carried}, so we continue with region {}."}}"#,
                if i % 8 == 3 { "Reviewer" } else { "Coder" },
                (i + 1) % 17
            ),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out.into_bytes()
}

/// A Claude Code session of `lines` lines: the bundled session
/// `tests/fixtures/corpus/claude-code/spotter_short.jsonl` (a user's request, commands, a call the
/// user refuses) repeated, every identifier (a string under a key ending in `id`, `Id`, `ID` or
/// `Uuid`, the session's id aside) given the repetition's suffix so that calls, results and
/// parents link within their own copy.
fn coding_session(lines: usize) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus/claude-code/spotter_short.jsonl");
    let text = std::fs::read_to_string(&path).expect("read the bundled Claude Code session");
    let records: Vec<serde_json::Value> =
        text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    fn suffix(v: &mut serde_json::Value, key: Option<&str>, tag: &str) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, x) in map.iter_mut() {
                    suffix(x, Some(k), tag);
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|x| suffix(x, key, tag)),
            serde_json::Value::String(s) => {
                let is_id = key.is_some_and(|k| {
                    k != "sessionId"
                        && (k.ends_with("id") || k.ends_with("Id") || k.ends_with("ID") || k.ends_with("Uuid"))
                        || k == "uuid"
                });
                if is_id {
                    s.push_str(tag);
                }
            }
            _ => {}
        }
    }
    let mut out = String::new();
    for n in 0..lines {
        let mut record = records[n % records.len()].clone();
        suffix(&mut record, None, &format!("-{}", n / records.len()));
        out.push_str(&record.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

/// An OpenAI Agents SDK trace of about `spans` spans: the bundled trace record once, then the
/// bundled run's spans repeated, each copy with fresh span ids (`id`, `parent_id`) so that its
/// links stay within it, all under the one trace. The loaded run is one user request followed
/// by a tool loop of lookups returning lists, updates and messages that state counts.
fn tool_loop(spans: usize) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/handbuilt/openai-agents/agents-sdk_calendar_moved_unasked.json");
    let text = std::fs::read_to_string(&path).expect("read the bundled Agents SDK trace");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("a JSON document");
    let data = doc["data"].as_array().expect("a data list");
    let (trace, spans_of_run) = data.split_first().expect("a trace record");
    let mut out = vec![trace.clone()];
    for n in 0..spans {
        let mut span = spans_of_run[n % spans_of_run.len()].clone();
        let tag = format!("-{}", n / spans_of_run.len());
        for key in ["id", "parent_id"] {
            if let Some(serde_json::Value::String(s)) = span.get_mut(key) {
                s.push_str(&tag);
            }
        }
        out.push(span);
    }
    serde_json::to_vec(&serde_json::json!({ "data": out })).expect("serialise")
}

/// Runs `f` after one warm-up until about two seconds have passed (at least 5 runs).
fn repeat(mut f: impl FnMut()) -> Vec<Duration> {
    f();
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < 5 || start.elapsed() < Duration::from_secs(2) {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
    }
    times.sort();
    times
}

fn report(name: &str, times: &[Duration]) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name:<60} {:>9.2} ms {:>9.2} ms {:>9.2} ms  ({} runs)",
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1]),
        times.len()
    );
}
