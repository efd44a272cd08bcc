//! Cost bounded by the input (issue 26): crafted small files that used to take gigabytes or
//! minutes load (or are refused) within a heap cap of a few hundred MB and a few seconds, and a
//! property feeds adversarial documents (deep nesting, repeated and huge ids, huge strings, many
//! traces, many log records) to every loader under a cap proportional to the input.
//!
//! Heap use is measured by a counting global allocator (this test binary only), which also
//! refuses any allocation past [`HARD_CAP`] so that a regression fails the test (the process
//! aborts on the failed allocation) instead of exhausting the machine. Tests take a lock, so one
//! runs at a time and each sees its own peak. Time bounds are ten times and more over the
//! expected values, so a slow machine does not make them flaky.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use falat::ingest::{self, FormatChoice, SUPPORTED};
use proptest::prelude::*;
use serde_json::{Value, json};

/// No allocation may take the heap past this (a regression aborts here, not in the OS).
const HARD_CAP: usize = 1_500 << 20;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        if now > HARD_CAP {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        PEAK.fetch_max(now, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            let grow = new_size - layout.size();
            let now = LIVE.fetch_add(grow, Ordering::Relaxed) + grow;
            if now > HARD_CAP {
                LIVE.fetch_sub(grow, Ordering::Relaxed);
                return std::ptr::null_mut();
            }
            PEAK.fetch_max(now, Ordering::Relaxed);
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs `f`, returning its result, the heap it added at its peak (bytes) and its time.
fn measured<T>(f: impl FnOnce() -> T) -> (T, usize, Duration) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(base), took)
}

const MB: usize = 1 << 20;

/// Loads `bytes` with detection and checks the heap and time bounds.
fn load_within(name: &str, bytes: &[u8], heap_mb: usize, secs: u64) -> Result<ingest::Loaded, String> {
    let (res, peak, took) = measured(|| ingest::parse(name, bytes, None).map_err(|e| e.to_string()));
    assert!(
        peak <= heap_mb * MB,
        "{name}: {} KB file took {} MB of heap (cap {heap_mb} MB)",
        bytes.len() >> 10,
        peak / MB
    );
    assert!(took <= Duration::from_secs(secs), "{name}: took {took:?} (cap {secs} s)");
    res
}

#[test]
fn a_trail_trace_id_copied_into_every_span_stays_small() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 450 KB: a 200 KB document-level trace id, 5,000 small spans that inherit it.
    let spans: Vec<Value> = (0..5_000)
        .map(|i| json!({"span_id": format!("s{i}"), "span_name": "t", "span_attributes": {"openinference.span.kind": "TOOL"}, "child_spans": []}))
        .collect();
    let doc = json!({"trace_id": "f".repeat(200_000), "spans": spans});
    let bytes = serde_json::to_vec(&doc).unwrap();
    let loaded = load_within("trail.json", &bytes, 200, 20).unwrap();
    assert_eq!(loaded.trajectories.len(), 1);
    assert_eq!(loaded.trajectories[0].steps.len(), 10_000);
    let id = &loaded.trajectories[0].metadata.iter().find(|(k, _)| k == "trace_id").unwrap().1;
    assert!(id.starts_with("ffff") && id.len() < 200, "{} bytes", id.len());
}

#[test]
fn deeply_nested_langsmith_child_runs_stay_small() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 9,000 tool runs, each the only child of the one before (18,000 levels of JSON nesting).
    let depth = 9_000;
    let mut text = String::new();
    for i in 0..depth {
        text.push_str(&format!(r#"{{"id":"r{i}","name":"step","run_type":"tool","child_runs":["#));
    }
    text.push_str(&"]}".repeat(depth));
    let loaded = load_within("runs.json", text.as_bytes(), 300, 30).unwrap();
    assert_eq!(loaded.format, falat::model::SourceFormat::LangSmith);
    // A call and a result per run.
    assert_eq!(loaded.trajectories[0].steps.len(), 2 * depth);
}

/// An OTLP/JSON logs request with `n` GenAI event records, each of its own span and trace.
fn many_log_records(n: usize) -> Vec<u8> {
    let records: Vec<Value> = (0..n)
        .map(|i| {
            json!({"timeUnixNano": (1_760_000_000_000_000_000u64 + i as u64).to_string(),
                "traceId": format!("{:032x}", i + 1), "spanId": format!("{:016x}", i + 1),
                "eventName": "gen_ai.user.message", "body": {"kvlistValue": {"values": [
                    {"key": "content", "value": {"stringValue": format!("question {i}")}}]}}})
        })
        .collect();
    serde_json::to_vec(&json!({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]})).unwrap()
}

#[test]
fn many_otlp_log_records_load_in_linear_time() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 100,000 records load in seconds; a search per record (as before) took over a minute.
    let bytes = many_log_records(100_000);
    let loaded = load_within("logs.json", &bytes, 900, 40).unwrap();
    assert_eq!(loaded.trajectories.len(), 100_000);
    assert_eq!(loaded.trajectories[99_999].steps[0].content, "question 99999");
}

#[test]
fn a_deeply_nested_file_gets_a_short_error_quickly() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let deep = format!("{}{}", "[".repeat(ingest::MAX_NESTING), "]".repeat(ingest::MAX_NESTING));
    let err = load_within("deep.json", deep.as_bytes(), 200, 20).unwrap_err();
    assert!(err.len() < 3_000, "{} characters", err.len());
    assert!(err.starts_with("deep.json: no known trace format matched"), "{err}");
    assert!(err.ends_with("found an array of 1 items, the first an array of 1 items, the first an array of 1 items, the first an array of 1 items"), "{err}");
}

#[cfg(unix)]
#[test]
fn fifos_devices_and_folders_named_like_traces_are_refused_not_read() {
    use falat::ingest::fs::{load_labelled, load_path};
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.json");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    std::fs::create_dir(dir.path().join("folder.json")).unwrap();
    std::fs::write(dir.path().join("folder.json/ok.txt"), "not a trace").unwrap();
    // Opening a FIFO for reading blocks until a writer comes: run the loads on a thread with a
    // deadline.
    let d = dir.path().to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let one = load_path(&d.join("pipe.json"), None).map(|_| ()).map_err(|e| e.to_string());
        let zero = load_path(Path::new("/dev/zero"), None).map(|_| ()).map_err(|e| e.to_string());
        let folder = load_path(&d.join("folder.json"), None).map(|_| ()).map_err(|e| e.to_string());
        let set = load_labelled(std::slice::from_ref(&d), &[]).map(|s| s.skipped);
        let _ = tx.send((one, zero, folder, set));
    });
    let (one, zero, folder, set) = rx.recv_timeout(Duration::from_secs(20)).expect("a FIFO or /dev/zero was read");
    let fifo_shown = fifo.display().to_string();
    assert_eq!(
        one.unwrap_err(),
        format!("{fifo_shown}: cannot read: it is a FIFO (named pipe), expected a regular file")
    );
    assert_eq!(zero.unwrap_err(), "/dev/zero: cannot read: it is a device, expected a regular file");
    assert!(folder.unwrap_err().ends_with("folder.json: cannot read: it is a folder, expected a regular file"));
    assert_eq!(
        set.unwrap(),
        [format!("{fifo_shown}: cannot read: it is a FIFO (named pipe), expected a regular file")]
    );
}

#[test]
fn the_100k_span_trace_loads_in_a_small_multiple_of_its_size() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // A tenth of the stress case of issue 26 (`scripts/gen_otlp_100k_spans.py`), built here.
    let bytes = crawler(4_999);
    let (loaded, peak, _) = measured(|| ingest::parse("crawler.json", &bytes, None).unwrap());
    let t = &loaded.trajectories[0];
    // The delegation (saying the task), a call and a result per fetch, the answer.
    assert_eq!(t.steps.len(), 1 + 4_999 * 2 + 1);
    assert_eq!(t.steps.iter().filter(|s| s.is_error).count(), 5);
    assert!(peak <= 4 * bytes.len(), "{} MB of heap for a {} MB file", peak / MB, bytes.len() / MB);
}

/// A falat JSONL file of `steps` step lines after a header: delegations, tool calls, tool results
/// and messages, linked by ids and refs (as `cargo bench --bench load` generates it).
fn falat_jsonl(steps: usize) -> Vec<u8> {
    let mut out =
        json!({"falat": 1, "task": "Sum the table.", "gold": {"agent": "Coder", "step": steps / 2}}).to_string();
    out.push('\n');
    for i in 0..steps {
        let text =
            format!("Step {i}: checked source #{} for item {}; the table lists {} rows.", i % 97, i % 13, i % 211);
        let line = match i % 4 {
            0 => {
                json!({"agent": "Planner", "kind": "delegation", "delegate_to": "Coder", "id": format!("d{i}"), "content": text})
            }
            1 => json!({"agent": "Coder", "kind": "tool_call", "tool_name": "python", "id": format!("c{i}"),
                "refs": [format!("d{}", i - 1)], "content": text}),
            2 => json!({"agent": "python", "kind": "tool_result", "refs": [format!("c{}", i - 1)], "content": text,
                "tokens": {"input": 120, "output": 30}}),
            _ => json!({"agent": "Coder", "content": text, "parent": format!("d{}", i - 3)}),
        };
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

#[test]
fn a_200k_line_jsonl_file_loads_in_a_small_multiple_of_its_size() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = falat_jsonl(200_000);
    let (loaded, peak, _) = measured(|| ingest::parse("big.jsonl", &bytes, None).unwrap());
    let t = &loaded.trajectories[0];
    assert_eq!(t.steps.len(), 200_000);
    assert_eq!(t.links.len(), 150_000);
    assert_eq!(t.gold.as_ref().and_then(|g| g.step), Some(100_000));
    // Read one line at a time: the loaded steps (about 3 times the file by themselves), not a
    // `Value` of every line (which took about 10 times the file).
    assert!(peak <= 4 * bytes.len(), "{} MB of heap for a {} MB file", peak / MB, bytes.len() / MB);
}

#[test]
fn a_bad_line_in_the_middle_of_a_jsonl_file_is_named_and_the_others_load() {
    let bytes = falat_jsonl(1_000);
    let text = String::from_utf8(bytes).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    // Line 499 (the tool call `c497`) loses its closing brace.
    let broken = lines[498].trim_end_matches('}').to_string();
    lines[498] = &broken;
    let l = ingest::parse("mid.jsonl", lines.join("\n").as_bytes(), None).unwrap();
    let t = &l.trajectories[0];
    assert_eq!(t.steps.len(), 999);
    assert_eq!(t.steps[496].ids.line, Some(498));
    assert_eq!(t.steps[497].ids.line, Some(500));
    assert_eq!(t.steps[497].content, "Step 498: checked source #13 for item 4; the table lists 76 rows.");
    let msgs: Vec<String> = l.diagnostics.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        msgs,
        [
            format!(
                "line 499: skipped: not JSON at column {}: the text ends inside an object ({{ not closed; the file may be cut short)",
                broken.chars().count()
            ),
            // The tool result that answered the lost call says its link is missing.
            "line 500: ref \"c497\" matches no earlier step id; no link".to_string(),
        ]
    );
}

/// A Codex rollout of about `n` lines (as `cargo bench --bench load` generates it):
/// `session_meta`, the user's prompt, then `shell` function calls each answered by its output
/// (every 997th exits 1), and after every tenth call an assistant message with its `event_msg`
/// copy (not a step of its own).
fn codex_rollout(n: usize) -> Vec<u8> {
    let line = |i: usize, ty: &str, payload: Value| {
        let ts = format!("2025-03-14T09:{:02}:{:02}.{:03}Z", i / 60_000 % 60, i / 1000 % 60, i % 1000);
        json!({"timestamp": ts, "type": ty, "payload": payload}).to_string()
    };
    let mut lines = vec![
        line(0, "session_meta", json!({"id": "0199a213-81c0-7800-8aa1-bbab2a035a53", "cwd": "/work"})),
        line(
            1,
            "response_item",
            json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "Sum the table."}]}),
        ),
    ];
    let mut i = 0;
    while lines.len() < n {
        let text =
            format!("Step {i}: checked source #{} for item {}; the table lists {} rows.", i % 97, i % 13, i % 211);
        let call = format!("call_{i}");
        let args = json!({"command": ["bash", "-lc", format!("grep -n row{i} table.csv")]}).to_string();
        lines.push(line(
            2 * i + 2,
            "response_item",
            json!({"type": "function_call", "name": "shell",
            "arguments": args, "call_id": call}),
        ));
        let output = json!({"output": text, "metadata": {"exit_code": i32::from(i % 997 == 0)}}).to_string();
        lines.push(line(
            2 * i + 3,
            "response_item",
            json!({"type": "function_call_output", "call_id": call,
            "output": output}),
        ));
        if i % 10 == 9 {
            lines.push(line(
                2 * i + 3,
                "response_item",
                json!({"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": text}]}),
            ));
            lines.push(line(2 * i + 3, "event_msg", json!({"type": "agent_message", "message": text})));
        }
        i += 1;
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out.into_bytes()
}

#[test]
fn a_large_codex_rollout_loads_in_a_small_multiple_of_its_size() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 50,000 lines: 2 + 2,272 rounds of 22 lines (10 calls, 10 outputs, a message and its copy),
    // then 7 more calls and their outputs: 22,727 calls.
    let bytes = codex_rollout(50_000);
    let (loaded, peak, _) = measured(|| ingest::parse("rollout.jsonl", &bytes, None).unwrap());
    assert_eq!(loaded.format, falat::model::SourceFormat::Codex);
    let t = &loaded.trajectories[0];
    // The prompt, then per call a call and a result, and the 2,272 messages (their event copies
    // are not steps): 1 + 2 * 22,727 + 2,272.
    assert_eq!(t.steps.len(), 1 + 2 * 22_727 + 2_272);
    assert_eq!(t.task, "Sum the table.");
    assert_eq!(t.steps.iter().filter(|s| s.is_error).count(), 22_727_usize.div_ceil(997));
    // Each line is parsed and dropped before the next (every line as a `Value`, as before, took
    // about 11 times the file).
    assert!(peak <= 4 * bytes.len(), "{} MB of heap for a {} MB file", peak / MB, bytes.len() / MB);
}

#[test]
fn a_bad_line_in_the_middle_of_a_codex_rollout_is_named_and_the_others_load() {
    let bytes = codex_rollout(1_000);
    let text = String::from_utf8(bytes).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    // The first call output from line 501 on (line 502, the output of `call_227`) loses its
    // closing brace.
    let k = (500..lines.len()).find(|&k| lines[k].contains("\"function_call_output\"")).unwrap();
    assert_eq!(k + 1, 502);
    assert!(lines[k].contains("\"call_227\""), "{}", lines[k]);
    let broken = lines[k].trim_end_matches('}').to_string();
    lines[k] = &broken;
    let l = ingest::parse("mid.jsonl", lines.join("\n").as_bytes(), None).unwrap();
    assert_eq!(l.format, falat::model::SourceFormat::Codex);
    let t = &l.trajectories[0];
    let full = ingest::parse("full.jsonl", text.as_bytes(), None).unwrap();
    assert_eq!(t.steps.len(), full.trajectories[0].steps.len() - 1);
    let call = t.steps.iter().position(|s| s.ids.line == Some(501)).unwrap();
    assert_eq!(t.steps[call].kind, falat::model::StepKind::ToolCall);
    assert_eq!(t.steps[call].tool_name.as_deref(), Some("shell"));
    assert_eq!(t.steps[call + 1].ids.line, Some(503));
    assert!(!t.links.iter().any(|link| link.from == call), "the lost output's call has no result link");
    let msgs: Vec<String> = l.diagnostics.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        msgs,
        [format!(
            "line 502: skipped: not JSON at column {}: the text ends inside an object ({{ not closed; the file may be cut short)",
            broken.chars().count()
        )]
    );
}

/// An OpenAI chat message array of `n` messages (as `cargo bench --bench load` generates it):
/// the user's prompt, then assistant tool calls each answered by a `tool` message, and every
/// tenth round an assistant message.
fn openai_chat(n: usize) -> Vec<u8> {
    let mut messages = vec![json!({"role": "user", "content": "Sum the table."})];
    let mut i = 1;
    while messages.len() < n {
        let text =
            format!("Step {i}: checked source #{} for item {}; the table lists {} rows.", i % 97, i % 13, i % 211);
        if i % 10 == 0 {
            messages.push(json!({"role": "assistant", "content": text}));
        } else {
            let id = format!("call_{i}");
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                "function": {"name": "lookup", "arguments": format!("{{\"row\":{i}}}")}}]}));
            if messages.len() < n {
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": text}));
            }
        }
        i += 1;
    }
    serde_json::to_vec(&Value::Array(messages)).unwrap()
}

#[test]
fn a_large_openai_chat_array_loads_in_a_small_multiple_of_its_size() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = openai_chat(50_000);
    let (loaded, peak, _) = measured(|| ingest::parse("chat.json", &bytes, None).unwrap());
    assert_eq!(loaded.format, falat::model::SourceFormat::OpenAiChat);
    let t = &loaded.trajectories[0];
    // One step per message (a message with one tool call and no text is the call's step).
    assert_eq!(t.steps.len(), 50_000);
    assert_eq!(t.links.len(), t.steps.iter().filter(|s| s.kind == falat::model::StepKind::ToolResult).count());
    assert_eq!(t.task, "Sum the table.");
    // Read one message at a time: never a `Value` of the whole array (that took about 16 times
    // the file).
    assert!(peak <= 5 * bytes.len(), "{} MB of heap for a {} MB file", peak / MB, bytes.len() / MB);
}

/// An OpenInference span list `{"spans": [...]}` of `n` spans: an AGENT root, then LLM and TOOL
/// spans under it (every 997th tool span fails).
fn openinference_list(n: usize) -> Vec<u8> {
    let mut spans = vec![
        json!({"name": "crawler", "context": {"trace_id": "t1", "span_id": "r0"}, "span_kind": "AGENT",
        "start_time": "2025-03-14T09:00:00.000000Z", "attributes": {"openinference.span.kind": "AGENT", "agent.name": "crawler"}}),
    ];
    for i in 1..n {
        let start = format!("2025-03-14T09:{:02}:{:02}.{:06}Z", i / 60_000 % 60, i / 1000 % 60, i % 1000);
        let text = format!("Step {i}: fetched page {} and found {} links.", i % 97, i % 211);
        spans.push(if i % 2 == 1 {
            json!({"name": "ChatCompletion", "context": {"trace_id": "t1", "span_id": format!("s{i}")}, "parent_id": "r0",
                "span_kind": "LLM", "start_time": start, "attributes": {"openinference.span.kind": "LLM",
                "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": text,
                "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": text}})
        } else {
            json!({"name": "fetch_page", "context": {"trace_id": "t1", "span_id": format!("s{i}")}, "parent_id": "r0",
                "span_kind": "TOOL", "start_time": start, "status_code": if i % 997 == 0 { "ERROR" } else { "OK" },
                "attributes": {"openinference.span.kind": "TOOL", "tool.name": "fetch_page", "input.value": format!("page {i}"),
                "output.value": text}})
        });
    }
    serde_json::to_vec(&json!({"spans": spans})).unwrap()
}

#[test]
fn a_large_span_list_loads_in_a_small_multiple_of_its_size() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = openinference_list(20_000);
    let (loaded, peak, _) = measured(|| ingest::parse("spans.json", &bytes, None).unwrap());
    assert_eq!(loaded.format, falat::model::SourceFormat::OpenInference);
    let t = &loaded.trajectories[0];
    // The delegation to the agent, then two steps per LLM span (its new user message and the
    // reply) and per TOOL span (call and result): 1 + 2 * 10,000 + 2 * 9,999.
    assert_eq!(t.steps.len(), 39_999);
    assert_eq!(t.steps.iter().filter(|s| s.is_error).count(), 20_000 / 2 / 997);
    // Read one span at a time: never a `Value` of the whole list (that alone took about 12 times
    // the file). What remains is the span-tree nodes and the steps built from them, held together.
    assert!(peak <= 8 * bytes.len(), "{} MB of heap for a {} MB file", peak / MB, bytes.len() / MB);
}

/// The crawler trace of `scripts/gen_otlp_100k_spans.py` with `calls` model calls.
fn crawler(calls: usize) -> Vec<u8> {
    let s = |k: &str, v: String| json!({"key": k, "value": {"stringValue": v}});
    let task = json!({"role": "user", "parts": [{"type": "text", "content": "Crawl docs.example.org and list every page that links to a 404."}]});
    let span = |id: usize, parent: bool, name: &str, attrs: Vec<Value>, status: Value| {
        let mut sp = json!({"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": format!("{id:016x}"),
            "name": name, "kind": 1, "startTimeUnixNano": (1_760_000_000_000_000_000u64 + id as u64 * 1_000_000).to_string(),
            "attributes": attrs, "status": status});
        if parent {
            sp["parentSpanId"] = json!(format!("{:016x}", 1));
        }
        sp
    };
    let mut spans = vec![span(
        1,
        false,
        "invoke_agent crawler",
        vec![
            s("gen_ai.operation.name", "invoke_agent".into()),
            s("gen_ai.agent.name", "crawler".into()),
            s("gen_ai.input.messages", json!([task]).to_string()),
        ],
        json!({"code": 0}),
    )];
    let mut last: Option<Value> = None;
    for k in 0..=calls {
        let cid = format!("call_{k:08}");
        let mut input = vec![task.clone()];
        input.extend(last.clone());
        let output = match k < calls {
            true => {
                json!([{"role": "assistant", "parts": [{"type": "tool_call", "id": cid, "name": "fetch_page", "arguments": {"url": format!("https://docs.example.org/p/{k}")}}]}])
            }
            false => json!([{"role": "assistant", "parts": [{"type": "text", "content": "No page links to a 404."}]}]),
        };
        spans.push(span(
            2 * k + 2,
            true,
            "chat gpt-4o-mini",
            vec![
                s("gen_ai.operation.name", "chat".into()),
                s(
                    "gen_ai.system_instructions",
                    json!([{"type": "text", "content": "You crawl sites with fetch_page."}]).to_string(),
                ),
                s("gen_ai.input.messages", Value::Array(input).to_string()),
                s("gen_ai.output.messages", output.to_string()),
            ],
            json!({"code": 0}),
        ));
        if k == calls {
            break;
        }
        let bad = k % 997 == 996;
        let result =
            if bad { format!("HTTP 404 Not Found: https://docs.example.org/p/{k}") } else { format!("200 OK (p/{k})") };
        let status = if bad { json!({"code": 2, "message": result}) } else { json!({"code": 0}) };
        spans.push(span(
            2 * k + 3,
            true,
            "execute_tool fetch_page",
            vec![
                s("gen_ai.operation.name", "execute_tool".into()),
                s("gen_ai.tool.name", "fetch_page".into()),
                s("gen_ai.tool.call.id", cid.clone()),
                s("gen_ai.tool.call.result", result.clone()),
            ],
            status,
        ));
        last = Some(json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": cid, "response": result}]}));
    }
    serde_json::to_vec(
        &json!({"resourceSpans": [{"scopeSpans": [{"scope": {"name": "crawler.agent"}, "spans": spans}]}]}),
    )
    .unwrap()
}

/// An adversarial document in the shape of one of the loaders' inputs: `n` records, ids drawn
/// from `distinct` values (repeats when small) and padded to `id_len` bytes, a payload string of
/// `huge` bytes on every record, records nested `depth` levels where the format nests.
fn adversarial(shape: usize, n: usize, distinct: usize, id_len: usize, huge: usize, depth: usize) -> Vec<u8> {
    let id = |i: usize| format!("{:0>w$}", i % distinct.max(1), w = id_len.max(1));
    let big = "x".repeat(huge);
    let doc = match shape {
        // OTLP spans, parents chained, many traces.
        0 => {
            let spans: Vec<Value> = (0..n).map(|i| json!({"traceId": id(i / 3), "spanId": id(i), "parentSpanId": id(i + 1),
                "name": big, "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                {"key": "gen_ai.input.messages", "value": {"stringValue": format!("[{{\"role\":\"user\",\"content\":\"{big}\"}}]")}}]})).collect();
            json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
        }
        // OTLP GenAI log records.
        1 => {
            let recs: Vec<Value> = (0..n).map(|i| json!({"traceId": id(i), "spanId": id(i / 2), "eventName": "gen_ai.tool.message",
                "body": {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": big}}, {"key": "id", "value": {"stringValue": id(i)}}]}}})).collect();
            json!({"resourceLogs": [{"scopeLogs": [{"logRecords": recs}]}]})
        }
        // TRAIL nested child spans under a document trace id.
        2 => {
            let mut span = json!({"span_id": id(0), "span_name": big, "span_attributes": {"openinference.span.kind": "AGENT"}, "child_spans": []});
            for i in 1..depth.max(1) {
                span = json!({"span_id": id(i), "span_name": "n", "span_attributes": {"openinference.span.kind": "CHAIN"}, "child_spans": [span]});
            }
            let flat: Vec<Value> = (0..n).map(|i| json!({"span_id": id(i), "span_name": "t", "span_attributes": {"openinference.span.kind": "TOOL"}, "child_spans": []})).collect();
            let mut spans = vec![span];
            spans.extend(flat);
            json!({"trace_id": big, "spans": spans})
        }
        // LangSmith runs, nested and flat, repeated trace ids.
        3 => {
            let mut run = json!({"id": id(0), "run_type": "llm", "name": big, "trace_id": id(0)});
            for i in 1..depth.max(1) {
                run = json!({"id": id(i), "run_type": "chain", "name": "c", "trace_id": id(0), "child_runs": [run]});
            }
            let mut runs: Vec<Value> = (0..n).map(|i| json!({"id": id(i), "run_type": "tool", "name": "t", "trace_id": id(i % 7), "parent_run_id": id(i + 1), "error": big})).collect();
            runs.push(run);
            json!({"runs": runs})
        }
        // Langfuse observations page, many traces, parents by id.
        4 => {
            let data: Vec<Value> = (0..n)
                .map(|i| {
                    json!({"id": id(i), "traceId": id(i / 2), "type": (["EVENT", "SPAN", "GENERATION", "TOOL"][i % 4]),
                "parentObservationId": id(i + 1), "level": "ERROR", "statusMessage": big, "output": {"k": big}})
                })
                .collect();
            json!({"data": data, "meta": {"page": 1}})
        }
        // Claude Code lines, parent chains through repeated uuids.
        5 => {
            let lines: Vec<String> = (0..n).map(|i| json!({"type": (["user", "assistant", "progress"][i % 3]), "uuid": id(i), "parentUuid": id(i + 1),
                "message": {"role": "assistant", "content": [{"type": "text", "text": big}, {"type": "tool_use", "id": id(i), "name": "Bash", "input": {}}]}}).to_string()).collect();
            return lines.join("\n").into_bytes();
        }
        // Codex rollout lines with MCP outputs.
        _ => {
            let mut lines =
                vec![json!({"timestamp": "t", "type": "session_meta", "payload": {"id": id(0)}}).to_string()];
            lines.extend((0..n).map(|i| json!({"timestamp": "t", "type": "response_item", "payload": if i % 2 == 0 {
                json!({"type": "function_call", "name": big, "arguments": "{}", "call_id": id(i / 2)}) } else {
                json!({"type": "function_call_output", "call_id": id(i / 2), "output": json!([{"type": "text", "text": big}]).to_string()}) }}).to_string()));
            return lines.join("\n").into_bytes();
        }
    };
    serde_json::to_vec(&doc).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(48),
        ..ProptestConfig::default()
    })]

    // Every loader, detected and forced, on adversarial input: heap at most 40 times the input
    // plus 64 MB (the stated bound is a small multiple of the file; forced formats read the
    // document as a `serde_json::Value`, about 12 times a span-heavy file), and a few seconds.
    #[test]
    fn every_loader_stays_within_a_multiple_of_its_input(
        shape in 0usize..7,
        n in 1usize..3_000,
        distinct in 1usize..4_000,
        id_len in prop_oneof![Just(8usize), Just(40), 1_000usize..20_000],
        huge in prop_oneof![Just(0usize), 1usize..200, 20_000usize..60_000],
        depth in 1usize..400,
    ) {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        // Keep each case under a few MB so the property stays quick.
        let n = n.min(4_000_000 / (huge + id_len + 100));
        let bytes = adversarial(shape, n, distinct, id_len, huge, depth);
        let mut choices = vec![FormatChoice::Detect(SUPPORTED.to_vec())];
        choices.extend(SUPPORTED.iter().map(|f| FormatChoice::Force(*f)));
        for choice in &choices {
            let (res, peak, took) = measured(|| ingest::parse_with("adv.json", &bytes, choice).map(|l| l.trajectories.len()));
            prop_assert!(peak <= 40 * bytes.len() + 64 * MB, "shape {shape}, {choice:?}: {} MB of heap for {} KB", peak / MB, bytes.len() >> 10);
            prop_assert!(took <= Duration::from_secs(20), "shape {shape}, {choice:?}: {took:?} for {} KB", bytes.len() >> 10);
            if let Err(e) = res {
                prop_assert!(e.to_string().chars().count() <= ingest::MAX_MESSAGE_CHARS + 2_000, "{} characters", e.to_string().len());
            }
        }
    }
}
