//! Load benchmark: `cargo bench --bench load`.
//!
//! Times `ingest::parse` (format detection + loader + checks) on the largest bundled Who&When file,
//! on generated 50,000-step trajectories (falat JSONL and OpenAI chat), on a generated OTLP/JSON
//! trace of 100,000 spans (about 100 MB, built in memory at bench time, never written to the
//! repository; `scripts/gen_otlp_100k_spans.py` writes the same trace to a file), on generated
//! large files of the span-list, run-list and JSON Lines shapes (an OpenInference span list of
//! 100,000 spans, a LangSmith run list, a Langfuse trace, a Claude Code session, a codex exec
//! stream, a Codex rollout, a Gemini CLI JSON Lines recording, ADK events and an OpenAI Agents
//! export of 50,000 records each, the 100,000-span OTLP trace as OTLP NDJSON of 100 spans per
//! line, and an OpenHands evaluation `output.jsonl` of 5,000 records; `FALAT_BENCH_WRITE=DIR` writes every generated input to DIR instead, to measure peak
//! memory with `/usr/bin/time -v falat inspect FILE`; `docs/FORMATS.md`, "Cost bound", has the
//! figures) and on one fixture of each agent-framework format (SWE-agent, mini-SWE-agent,
//! OpenHands, smolagents, pydantic-ai, Strands, Claude Code inline sidechains;
//! `tests/fixtures/frameworks-b/`), next to a plain `serde_json::Value` parse of the same bytes (for JSONL: every line into a `Value`, held in a
//! `Vec` like a loaded document), and prints the figures. Then the same for one fixture of each
//! agent-framework format (`tests/fixtures/frameworks/`), an Inspect AI `.eval` archive built from
//! one of them (its baseline: unpacking the archive and parsing every member).
//! Each case runs for about a second after a warm-up; the median and the fastest run are shown.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use falat::ingest::{self, fs};
use serde_json::{Value, json};

/// Steps of the generated trajectories.
const STEPS: usize = 50_000;

fn main() {
    // `FALAT_BENCH_WRITE=DIR cargo bench --bench load` writes the generated inputs to DIR (to
    // measure a load's peak memory with `/usr/bin/time -v falat inspect FILE`) and stops.
    if let Some(dir) = std::env::var_os("FALAT_BENCH_WRITE") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("create the output folder");
        let mut all = vec![
            ("falat-200k.jsonl", falat_jsonl(200_000)),
            ("openai-chat-50k.json", openai_chat(STEPS)),
            ("otlp-100k.otlp.json", otlp_crawler(CRAWLER_CALLS)),
        ];
        for ((_, bytes, _), file) in generated_shapes().into_iter().zip(SHAPE_FILES) {
            all.push((file, bytes));
        }
        for (file, bytes) in all {
            std::fs::write(dir.join(file), &bytes).expect("write a generated input");
            println!("{} {}", dir.join(file).display(), size(bytes.len()));
        }
        return;
    }
    let largest = largest_who_and_when();
    let bytes = std::fs::read(&largest).expect("read the largest Who&When file");
    let name = largest.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(&largest).display().to_string();
    println!("load benchmark (median / fastest of repeated runs; ingest = detect + load + checks)");
    println!(
        "{:<48} {:>9} {:>7} {:>20} {:>20} {:>7}",
        "input", "size", "steps", "ingest::parse", "serde_json::Value", "ratio"
    );
    compare(&name, &bytes, parse_whole);
    compare("generated falat JSONL (50,000 steps)", &falat_jsonl(STEPS), parse_lines);
    compare("generated OpenAI chat (50,000 steps)", &openai_chat(STEPS), parse_whole);
    compare("generated OTLP trace (100,000 spans)", &otlp_crawler(CRAWLER_CALLS), parse_whole);
    for (name, bytes, baseline) in generated_shapes() {
        compare(name, &bytes, baseline);
    }
    for (file, jsonl) in FRAMEWORK_B_FIXTURES {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/frameworks-b").join(file);
        let bytes = std::fs::read(&path).expect("read a frameworks-b fixture");
        compare(file, &bytes, if jsonl { parse_lines } else { parse_whole });
    }
    let frameworks = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/frameworks");
    for (file, baseline) in FRAMEWORK_FIXTURES {
        let bytes = std::fs::read(frameworks.join(file)).expect("read a framework fixture");
        compare(&format!("frameworks/{file}"), &bytes, baseline);
    }
    let log = std::fs::read(frameworks.join("inspect-ai-two-samples.json")).expect("read the Inspect log");
    compare("frameworks/inspect-ai-two-samples.eval (ZIP)", &eval_zip(&log), parse_zip);
}

/// A plain parse of the same bytes, to compare ingest against; returns the values parsed.
type Baseline = fn(&[u8]) -> usize;

/// One fixture of each agent-framework format, with the plain parse to compare against.
const FRAMEWORK_FIXTURES: [(&str, Baseline); 7] = [
    ("26-openai-agents-sdk-trace-ingest-payload.json", parse_whole),
    ("codex-exec-failed-test.jsonl", parse_lines),
    ("28-gemini-cli-chat-session.json", parse_whole),
    ("gemini-cli-session.jsonl", parse_lines),
    ("adk-session-transfer.json", parse_whole),
    ("mlflow-trace-tool-error.json", parse_whole),
    ("31-inspect-ai-eval-log.json", parse_whole),
];

/// An Inspect AI `.eval` archive of a JSON log: `header.json` (the log without samples) and one
/// deflated `samples/<id>_epoch_<n>.json` per sample.
fn eval_zip(log: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut header: Value = serde_json::from_slice(log).unwrap();
    let samples = header.as_object_mut().unwrap().remove("samples").unwrap();
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for s in samples.as_array().unwrap() {
        zip.start_file(format!("samples/{}_epoch_{}.json", s["id"], s["epoch"]), opts).unwrap();
        zip.write_all(s.to_string().as_bytes()).unwrap();
    }
    zip.start_file("header.json", opts).unwrap();
    zip.write_all(header.to_string().as_bytes()).unwrap();
    zip.finish().unwrap();
    out.into_inner()
}

/// Every member of a ZIP archive inflated and parsed into a `Value`.
fn parse_zip(bytes: &[u8]) -> usize {
    use std::io::Read;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut values = Vec::new();
    for i in 0..archive.len() {
        let mut text = String::new();
        archive.by_index(i).unwrap().read_to_string(&mut text).unwrap();
        values.push(serde_json::from_str::<Value>(&text).unwrap());
    }
    black_box(&values);
    values.len()
}

/// One fixture per format of the agent-framework loaders (`tests/fixtures/frameworks-b/`), and
/// whether it is JSON Lines.
const FRAMEWORK_B_FIXTURES: [(&str, bool); 7] = [
    ("32-swe-agent-traj.traj", false),
    ("mini-swe-agent.traj.json", false),
    ("33-openhands-trajectory-events.json", false),
    ("smolagents-memory-full-steps.json", false),
    ("36-pydantic-ai-logfire-events-attribute.otlp.json", false),
    ("strands-agent-tool-error.otlp.json", false),
    ("claude-code-inline-sidechains.jsonl", true),
];

/// Model calls of the generated OTLP trace: with the tool spans and the root, 100,000 spans.
const CRAWLER_CALLS: usize = 49_999;

fn largest_who_and_when() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/who-and-when");
    fs::dataset_files(&dir)
        .expect("list data/who-and-when")
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .expect("data/who-and-when has files")
}

/// Times ingest against the plain parse `baseline` and prints one row.
fn compare(name: &str, bytes: &[u8], baseline: Baseline) {
    let loaded = ingest::parse(name, bytes, None).expect("the input loads");
    let steps: usize = loaded.trajectories.iter().map(|t| t.steps.len()).sum();
    let ingest_times = time(|| {
        let l = ingest::parse(name, bytes, None).unwrap();
        l.trajectories.len()
    });
    let plain_times = time(|| baseline(bytes));
    let (im, imin) = stats(&ingest_times);
    let (pm, pmin) = stats(&plain_times);
    println!(
        "{:<48} {:>9} {:>7} {:>20} {:>20} {:>6.2}x",
        name,
        size(bytes.len()),
        steps,
        format!("{} / {}", ms(im), ms(imin)),
        format!("{} / {}", ms(pm), ms(pmin)),
        im.as_secs_f64() / pm.as_secs_f64()
    );
    println!(
        "{:<48} {:>9} {:>7} {:>20} {:>20}",
        "",
        "",
        "",
        format!("{:.0} MB/s", mb_per_s(bytes.len(), im)),
        format!("{:.0} MB/s", mb_per_s(bytes.len(), pm))
    );
}

fn parse_whole(bytes: &[u8]) -> usize {
    let v: Value = serde_json::from_slice(bytes).unwrap();
    black_box(&v);
    1
}

/// Every non-blank line parsed into a `Value`, all held until the end (as a loaded document is).
fn parse_lines(bytes: &[u8]) -> usize {
    let text = std::str::from_utf8(bytes).unwrap();
    let values: Vec<Value> =
        text.lines().filter(|l| !l.trim().is_empty()).map(|line| serde_json::from_str(line).unwrap()).collect();
    black_box(&values);
    values.len()
}

/// The file names `FALAT_BENCH_WRITE` gives the inputs of [`generated_shapes`], in order.
const SHAPE_FILES: [&str; 11] = [
    "openinference-100k.json",
    "langsmith-50k.json",
    "claude-code-50k.jsonl",
    "codex-exec-50k.jsonl",
    "langfuse-50k.json",
    "codex-rollout-50k.jsonl",
    "gemini-cli-50k.jsonl",
    "adk-events-50k.jsonl",
    "openai-agents-50k.jsonl",
    "otlp-100k.ndjson",
    "openhands-output-5k.jsonl",
];

/// The generated large inputs of the span-list, run-list and JSON Lines formats, with the plain
/// parse to compare against.
fn generated_shapes() -> Vec<(&'static str, Vec<u8>, Baseline)> {
    vec![
        ("generated OpenInference span list (100,000)", openinference_spans(100_000), parse_whole as Baseline),
        ("generated LangSmith run list (50,000 runs)", langsmith_runs(STEPS), parse_whole),
        ("generated Claude Code session (50,000 lines)", claude_session(STEPS), parse_lines),
        ("generated codex exec stream (50,000 lines)", codex_exec_stream(STEPS), parse_lines),
        ("generated Langfuse trace (50,000 obs.)", langfuse_trace(STEPS), parse_whole),
        ("generated Codex rollout (50,000 lines)", codex_rollout(STEPS), parse_lines),
        ("generated Gemini CLI JSONL (50,000 lines)", gemini_lines(STEPS), parse_lines),
        ("generated ADK events (50,000 lines)", adk_events(STEPS), parse_lines),
        ("generated OpenAI Agents export (50,000 lines)", agents_sdk_lines(STEPS), parse_lines),
        ("generated OTLP NDJSON (100,000 spans)", otlp_ndjson(CRAWLER_CALLS), parse_lines),
        ("generated OpenHands output.jsonl (5,000 records)", openhands_output(5_000), parse_lines),
    ]
}

/// An OpenHands evaluation `output.jsonl` of `n` records: the record of
/// `tests/fixtures/frameworks-b/openhands-eval-output-record.json` (12 events) under `n` instance
/// ids, one per line.
fn openhands_output(n: usize) -> Vec<u8> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/frameworks-b/openhands-eval-output-record.json");
    let record: Value = serde_json::from_slice(&std::fs::read(path).expect("read the OpenHands record")).unwrap();
    ndjson((0..n).map(|i| {
        let mut r = record.clone();
        r["instance_id"] = format!("instance-{i}").into();
        r
    }))
}

/// `values` one compact JSON text per line.
fn ndjson(values: impl IntoIterator<Item = Value>) -> Vec<u8> {
    let mut out = String::new();
    for v in values {
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

/// A Codex rollout of about `n` lines: `session_meta`, the user's prompt, then turns of a
/// `function_call` (`shell`) and its `function_call_output` (every 997th exits 1), with the
/// `event_msg` copy of the agent's message after every tenth call.
fn codex_rollout(n: usize) -> Vec<u8> {
    let line = |i: usize, ty: &str, payload: Value| json!({"timestamp": iso(i), "type": ty, "payload": payload});
    let mut lines = vec![
        line(
            0,
            "session_meta",
            json!({"id": "0199a213-81c0-7800-8aa1-bbab2a035a53", "timestamp": iso(0),
            "cwd": "/work", "originator": "codex_cli_rs", "cli_version": "0.46.0"}),
        ),
        line(
            1,
            "response_item",
            json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "Sum the table."}]}),
        ),
    ];
    let mut i = 0;
    while lines.len() < n {
        let call = format!("call_{i}");
        lines.push(line(
            2 * i + 2,
            "response_item",
            json!({"type": "function_call", "name": "shell",
            "arguments": json!({"command": ["bash", "-lc", format!("grep -n row{i} table.csv")]}).to_string(),
            "call_id": call}),
        ));
        let code = i32::from(i % 997 == 0);
        lines.push(line(2 * i + 3, "response_item", json!({"type": "function_call_output", "call_id": call,
            "output": json!({"output": prose(i), "metadata": {"exit_code": code, "duration_seconds": 0.1}}).to_string()})));
        if i % 10 == 9 {
            lines.push(line(
                2 * i + 3,
                "response_item",
                json!({"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": prose(i + 1)}]}),
            ));
            lines.push(line(2 * i + 3, "event_msg", json!({"type": "agent_message", "message": prose(i + 1)})));
        }
        i += 1;
    }
    ndjson(lines)
}

/// A Gemini CLI chat recording in JSON Lines of about `n` lines: the session header, the user's
/// prompt, then `gemini` records with a `run_shell_command` tool call and its result (every 997th
/// fails), each written twice (first without its tool calls, then complete, as the CLI does).
fn gemini_lines(n: usize) -> Vec<u8> {
    let mut lines = vec![
        json!({"sessionId": "3e0b9f6c-1d2a-4c7e-8f5b-6a9d0e1c2b34", "projectHash": "9c1d7e2f", "startTime": iso(0),
            "lastUpdated": iso(0), "kind": "main"}),
        json!({"id": "u-0", "timestamp": iso(0), "type": "user", "content": [{"text": "Sum the table."}]}),
    ];
    let mut i = 0;
    while lines.len() < n {
        let id = format!("g-{i}");
        let thoughts = json!([{"subject": "Next row", "description": prose(i), "timestamp": iso(i)}]);
        let tokens = json!({"input": 120, "output": 30, "cached": 0, "thoughts": 10, "tool": 0, "total": 160});
        lines.push(json!({"id": id, "timestamp": iso(i), "type": "gemini", "content": "", "thoughts": thoughts,
            "tokens": tokens, "model": "gemini-2.5-flash"}));
        let call = format!("run_shell_command-{i}");
        let failed = i % 997 == 0;
        let output = format!("{}\nExit Code: {}", prose(i + 1), i32::from(failed));
        lines.push(json!({"id": id, "timestamp": iso(i), "type": "gemini", "content": "", "thoughts": thoughts,
            "tokens": tokens, "model": "gemini-2.5-flash", "toolCalls": [{"id": call, "name": "run_shell_command",
            "args": {"command": format!("grep -n row{i} table.csv")}, "status": if failed { "error" } else { "success" },
            "timestamp": iso(i), "result": [{"functionResponse": {"id": call, "name": "run_shell_command",
            "response": {"output": output}}}]}]}));
        i += 1;
    }
    ndjson(lines)
}

/// Google ADK events, one per line (`Event.model_dump_json`), about `n`: the user's prompt, then
/// a model event calling `fetch_page` and the tool's response event (every 997th an error).
fn adk_events(n: usize) -> Vec<u8> {
    let inv = "e-6f1a2b3c-0d4e-4f5a-8b9c-1d2e3f4a5b6c";
    let mut lines = vec![json!({"invocation_id": inv, "author": "user", "id": "ev-0", "timestamp": 1.0,
        "content": {"role": "user", "parts": [{"text": "Sum the table."}]}})];
    let mut i = 0;
    while lines.len() < n {
        let call = format!("adk-{i}");
        lines.push(json!({"invocation_id": inv, "author": "root_agent", "id": format!("ev-{i}c"),
            "timestamp": 2.0 + i as f64, "content": {"role": "model", "parts": [{"text": prose(i), "thought": true},
            {"function_call": {"id": call, "name": "fetch_page", "args": {"url": format!("https://example.org/p/{i}")}}}]},
            "usage_metadata": {"prompt_token_count": 120, "candidates_token_count": 30}}));
        let response = if i % 997 == 0 { json!({"error": "HTTP 404"}) } else { json!({"result": prose(i + 1)}) };
        lines.push(json!({"invocation_id": inv, "author": "root_agent", "id": format!("ev-{i}r"),
            "timestamp": 2.5 + i as f64, "content": {"role": "user", "parts": [{"function_response":
            {"id": call, "name": "fetch_page", "response": response}}]}}));
        i += 1;
    }
    ndjson(lines)
}

/// An OpenAI Agents SDK export, one item per line, of about `n` items: the trace, an `agent`
/// span, then `generation` spans whose output calls `fetch_page` and the `function` spans
/// answering them (every 997th with an error).
fn agents_sdk_lines(n: usize) -> Vec<u8> {
    const TID: &str = "trace_0a1b2c3d4e5f60718293a4b5c6d7e8f9";
    let span = |id: String, parent: &str, i: usize, data: Value, error: Value| {
        json!({"object": "trace.span", "id": id, "trace_id": TID, "parent_id": parent, "started_at": iso(i),
            "ended_at": iso(i + 1), "span_data": data, "error": error})
    };
    let mut lines = vec![
        json!({"object": "trace", "id": TID, "workflow_name": "Crawler", "group_id": null, "metadata": {}}),
        span(
            "span_a".into(),
            "",
            0,
            json!({"type": "agent", "name": "Crawler", "handoffs": [], "tools": ["fetch_page"]}),
            Value::Null,
        ),
    ];
    let mut i = 1;
    while lines.len() < n {
        let call = format!("call_{i}");
        let args = json!({"url": format!("https://example.org/p/{i}")}).to_string();
        lines.push(span(
            format!("span_g{i}"),
            "span_a",
            2 * i,
            json!({"type": "generation", "model": "gpt-4o",
            "input": [{"role": "user", "content": prose(i)}],
            "output": [{"role": "assistant", "content": null, "tool_calls": [{"id": call, "type": "function",
                "function": {"name": "fetch_page", "arguments": args}}]}],
            "usage": {"input_tokens": 120, "output_tokens": 30}}),
            Value::Null,
        ));
        let error = if i % 997 == 0 {
            json!({"message": "Error running tool", "data": {"error": "HTTP 404"}})
        } else {
            Value::Null
        };
        lines.push(span(
            format!("span_f{i}"),
            "span_a",
            2 * i + 1,
            json!({"type": "function", "name": "fetch_page",
            "input": args, "output": prose(i + 1)}),
            error,
        ));
        i += 1;
    }
    ndjson(lines)
}

/// The spans of [`otlp_crawler`] as OTLP NDJSON (the collector's file exporter): one export
/// request per line, 100 spans each.
fn otlp_ndjson(calls: usize) -> Vec<u8> {
    let whole: Value = serde_json::from_slice(&otlp_crawler(calls)).unwrap();
    let rs = &whole["resourceSpans"][0];
    let ss = &rs["scopeSpans"][0];
    let spans = ss["spans"].as_array().unwrap();
    ndjson(spans.chunks(100).map(|chunk| {
        json!({"resourceSpans": [{"resource": rs["resource"], "scopeSpans": [{"scope": ss["scope"], "spans": chunk}]}]})
    }))
}

/// An ISO 8601 time `i` milliseconds after 2025-03-14T09:00:00Z (sorts as text).
fn iso(i: usize) -> String {
    let (s, ms) = (i / 1000, i % 1000);
    format!("2025-03-14T{:02}:{:02}:{:02}.{ms:03}Z", 9 + s / 3600, s / 60 % 60, s % 60)
}

/// An OpenInference span list `{"spans": [...]}` (the spec's JSON span, flat attribute keys): an
/// AGENT root, then `LLM` spans whose output asks for a tool and `TOOL` spans answering them
/// (every 997th fails).
fn openinference_spans(n: usize) -> Vec<u8> {
    const TID: &str = "0af7651916cd43dd8448eb211c80319c";
    let mut spans = vec![json!({"name": "crawler", "context": {"trace_id": TID, "span_id": "r0"}, "parent_id": null,
        "span_kind": "AGENT", "start_time": iso(0), "end_time": iso(n), "status_code": "OK",
        "attributes": {"openinference.span.kind": "AGENT", "agent.name": "crawler",
            "input.value": "Sum the table.", "output.value": "42"}})];
    for i in 1..n {
        let span = if i % 2 == 1 {
            json!({"name": "ChatCompletion", "context": {"trace_id": TID, "span_id": format!("s{i}")},
                "parent_id": "r0", "span_kind": "LLM", "start_time": iso(i), "end_time": iso(i + 1),
                "status_code": "OK", "attributes": {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
                    "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": prose(i),
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": prose(i + 1),
                    "llm.token_count.prompt": 120, "llm.token_count.completion": 30}})
        } else {
            let failed = i % 997 == 0;
            json!({"name": "fetch_page", "context": {"trace_id": TID, "span_id": format!("s{i}")},
                "parent_id": "r0", "span_kind": "TOOL", "start_time": iso(i), "end_time": iso(i + 1),
                "status_code": if failed { "ERROR" } else { "OK" },
                "status_message": if failed { "HTTP 404" } else { "" },
                "attributes": {"openinference.span.kind": "TOOL", "tool.name": "fetch_page",
                    "input.value": format!("{{\"url\": \"https://example.org/p/{i}\"}}"), "output.value": prose(i)}})
        };
        spans.push(span);
    }
    serde_json::to_vec(&json!({"spans": spans})).unwrap()
}

/// A flat LangSmith run list: a `chain` root, then `llm` and `tool` runs under it (every 997th
/// tool run has an error).
fn langsmith_runs(n: usize) -> Vec<u8> {
    const TID: &str = "6f1e2c3a-0000-4000-8000-00000000a001";
    let mut runs = vec![json!({"id": "run-0", "name": "LangGraph", "run_type": "chain", "trace_id": TID,
        "dotted_order": format!("{}run-0", iso(0)), "start_time": iso(0),
        "inputs": {"messages": [{"type": "human", "content": "Sum the table."}]},
        "outputs": {"messages": [{"type": "ai", "content": "42"}]}, "error": null, "status": "success"})];
    for i in 1..n {
        let id = format!("run-{i}");
        let dotted = format!("{}run-0.{}{id}", iso(0), iso(i));
        let run = if i % 2 == 1 {
            json!({"id": id, "name": "ChatOpenAI", "run_type": "llm", "trace_id": TID, "parent_run_id": "run-0",
                "dotted_order": dotted, "start_time": iso(i),
                "inputs": {"messages": [[{"type": "human", "content": prose(i)}]]},
                "outputs": {"generations": [[{"text": prose(i + 1), "message": {"type": "ai", "content": prose(i + 1)}}]]},
                "extra": {"metadata": {"langgraph_node": "agent"}}, "error": null, "status": "success"})
        } else {
            let error = (i % 997 == 0).then_some("HTTP 404");
            json!({"id": id, "name": "fetch_page", "run_type": "tool", "trace_id": TID, "parent_run_id": "run-0",
                "dotted_order": dotted, "start_time": iso(i), "inputs": {"input": format!("page {i}")},
                "outputs": {"output": prose(i)}, "error": error, "status": if error.is_some() { "error" } else { "success" }})
        };
        runs.push(run);
    }
    serde_json::to_vec(&Value::Array(runs)).unwrap()
}

/// A Claude Code session of `n` lines: the prompt, then assistant `Bash` tool uses each answered
/// by a user `tool_result` line, chained by `parentUuid`.
fn claude_session(n: usize) -> Vec<u8> {
    let mut out = String::new();
    let base = |i: usize, parent: Option<String>, ty: &str, message: Value| {
        json!({"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/work",
            "sessionId": "5e55-10n", "version": "2.0.14", "type": ty, "message": message,
            "uuid": format!("u{i}"), "timestamp": iso(i)})
    };
    out.push_str(&base(0, None, "user", json!({"role": "user", "content": "Sum the table."})).to_string());
    out.push('\n');
    for i in 1..n {
        let parent = Some(format!("u{}", i - 1));
        let line = if i % 2 == 1 {
            base(
                i,
                parent,
                "assistant",
                json!({"id": format!("msg_{i}"), "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": [{"type": "tool_use", "id": format!("toolu_{i}"),
                "name": "Bash", "input": {"command": format!("grep -n row{i} table.csv"), "description": prose(i)}}],
                "usage": {"input_tokens": 120, "output_tokens": 30}}),
            )
        } else {
            base(
                i,
                parent,
                "user",
                json!({"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": format!("toolu_{}", i - 1), "content": prose(i), "is_error": i % 997 == 0}]}),
            )
        };
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

/// A `codex exec --json` stream of about `n` lines: turns of a command execution (started, then
/// completed with its output; every 997th exits 1) and an agent message.
fn codex_exec_stream(n: usize) -> Vec<u8> {
    let mut lines = vec![json!({"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"})];
    let mut i = 0;
    while lines.len() < n {
        let cmd = format!("bash -lc 'grep -n row{i} table.csv'");
        lines.push(json!({"type": "turn.started"}));
        lines.push(json!({"type": "item.started", "item": {"id": format!("item_{i}"), "type": "command_execution",
            "command": cmd, "aggregated_output": "", "exit_code": null, "status": "in_progress"}}));
        lines.push(json!({"type": "item.completed", "item": {"id": format!("item_{i}"), "type": "command_execution",
            "command": cmd, "aggregated_output": prose(i), "exit_code": i32::from(i % 997 == 0),
            "status": if i % 997 == 0 { "failed" } else { "completed" }}}));
        lines.push(json!({"type": "item.completed", "item": {"id": format!("item_{i}m"), "type": "agent_message",
            "text": prose(i + 1)}}));
        lines.push(json!({"type": "turn.completed", "usage": {"input_tokens": 120, "cached_input_tokens": 0,
            "output_tokens": 30}}));
        i += 1;
    }
    let mut out = String::new();
    for l in lines {
        out.push_str(&l.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

/// A Langfuse trace (`GET /api/public/traces/{id}`) with `n` observations: an `AGENT` root, then
/// `GENERATION` and `TOOL` observations under it.
fn langfuse_trace(n: usize) -> Vec<u8> {
    const TID: &str = "lf-trace-100k";
    let mut obs = vec![json!({"id": "obs-0", "traceId": TID, "type": "AGENT", "name": "crawler",
        "startTime": iso(0), "input": "Sum the table.", "output": "42", "level": "DEFAULT",
        "parentObservationId": null})];
    for i in 1..n {
        let o = if i % 2 == 1 {
            json!({"id": format!("obs-{i}"), "traceId": TID, "type": "GENERATION", "name": "chat",
                "startTime": iso(i), "model": "gpt-4o-mini", "input": [{"role": "user", "content": prose(i)}],
                "output": {"role": "assistant", "content": prose(i + 1)}, "level": "DEFAULT",
                "parentObservationId": "obs-0", "usageDetails": {"input": 120, "output": 30}})
        } else {
            json!({"id": format!("obs-{i}"), "traceId": TID, "type": "TOOL", "name": "fetch_page",
                "startTime": iso(i), "input": {"url": format!("https://example.org/p/{i}")}, "output": prose(i),
                "level": if i % 997 == 0 { "ERROR" } else { "DEFAULT" }, "parentObservationId": "obs-0"})
        };
        obs.push(o);
    }
    serde_json::to_vec(&json!({"id": TID, "name": "crawler", "timestamp": iso(0), "input": "Sum the table.",
        "output": "42", "observations": obs}))
    .unwrap()
}

/// One OTLP/JSON trace of a long-running crawler agent (OTel GenAI semconv 1.37), as
/// `scripts/gen_otlp_100k_spans.py` writes it (compact JSON here): an `invoke_agent` root,
/// `calls` `chat` spans whose output is a `fetch_page` tool call, as many `execute_tool` spans
/// (every 997th fails with HTTP 404), and a final `chat` span with the answer; each chat span
/// carries its bounded context as `gen_ai.input.messages`.
fn otlp_crawler(calls: usize) -> Vec<u8> {
    const TID: &str = "0af7651916cd43dd8448eb211c80319c";
    const T0: u128 = 1_760_000_000_000_000_000;
    const TASK: &str = "Crawl docs.example.org and list every page that links to a 404.";
    let s = |k: &str, v: String| json!({"key": k, "value": {"stringValue": v}});
    let i = |k: &str, v: u64| json!({"key": k, "value": {"intValue": v.to_string()}});
    let root = format!("{:016x}", 1);
    let span = |sid: String, parent: Option<&str>, name: &str, t: u128, attrs: Vec<Value>, status: Value| {
        let mut sp = json!({"traceId": TID, "spanId": sid, "name": name, "kind": 1,
            "startTimeUnixNano": (T0 + t * 1_000_000).to_string(),
            "endTimeUnixNano": (T0 + t * 1_000_000 + 400_000).to_string(),
            "attributes": attrs, "status": status});
        if let Some(p) = parent {
            sp["parentSpanId"] = json!(p);
        }
        sp
    };
    let user = json!({"role": "user", "parts": [{"type": "text", "content": TASK}]});
    let mut spans = vec![span(
        root.clone(),
        None,
        "invoke_agent crawler",
        0,
        vec![
            s("gen_ai.operation.name", "invoke_agent".into()),
            s("gen_ai.agent.name", "crawler".into()),
            s("gen_ai.provider.name", "openai".into()),
            s("gen_ai.input.messages", json!([user]).to_string()),
        ],
        json!({"code": 0}),
    )];
    let mut last: Option<Value> = None;
    for k in 0..=calls {
        let cid = format!("call_{k:08}");
        let mut input = vec![user.clone()];
        input.extend(last.clone());
        let output = if k < calls {
            json!([{"role": "assistant", "parts": [{"type": "tool_call", "id": cid, "name": "fetch_page",
                "arguments": {"url": format!("https://docs.example.org/p/{k}")}}], "finish_reason": "tool_call"}])
        } else {
            json!([{"role": "assistant", "parts": [{"type": "text", "content": "No page links to a 404."}],
                "finish_reason": "stop"}])
        };
        let instructions = json!([{"type": "text", "content": "You crawl sites with fetch_page."}]);
        spans.push(span(
            format!("{:016x}", 2 * k + 2),
            Some(&root),
            "chat gpt-4o-mini",
            2 * k as u128 + 1,
            vec![
                s("gen_ai.operation.name", "chat".into()),
                s("gen_ai.request.model", "gpt-4o-mini".into()),
                s("gen_ai.provider.name", "openai".into()),
                i("gen_ai.usage.input_tokens", 220),
                i("gen_ai.usage.output_tokens", 18),
                s("gen_ai.system_instructions", instructions.to_string()),
                s("gen_ai.input.messages", Value::Array(input).to_string()),
                s("gen_ai.output.messages", output.to_string()),
            ],
            json!({"code": 0}),
        ));
        if k == calls {
            break;
        }
        let bad = k % 997 == 996;
        let result = match bad {
            true => format!("HTTP 404 Not Found: https://docs.example.org/p/{k}"),
            false => format!("200 OK, 14 links, none broken (p/{k})"),
        };
        let mut attrs = vec![
            s("gen_ai.operation.name", "execute_tool".into()),
            s("gen_ai.tool.name", "fetch_page".into()),
            s("gen_ai.tool.call.id", cid.clone()),
            s("gen_ai.tool.call.arguments", json!({"url": format!("https://docs.example.org/p/{k}")}).to_string()),
            s("gen_ai.tool.call.result", result.clone()),
        ];
        if bad {
            attrs.push(s("error.type", "HTTPError".into()));
        }
        let status = if bad { json!({"code": 2, "message": result}) } else { json!({"code": 0}) };
        spans.push(span(
            format!("{:016x}", 2 * k + 3),
            Some(&root),
            "execute_tool fetch_page",
            2 * k as u128 + 2,
            attrs,
            status,
        ));
        last = Some(json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": cid, "response": result}]}));
    }
    let doc = json!({"resourceSpans": [{"resource": {"attributes": [s("service.name", "site-crawler".into())]},
        "scopeSpans": [{"scope": {"name": "crawler.agent", "version": "3.2.0"}, "spans": spans}]}]});
    serde_json::to_vec(&doc).unwrap()
}

/// Runs `f` for a warm-up, then for about a second (at least 5 runs); returns each run's time.
fn time(mut f: impl FnMut() -> usize) -> Vec<Duration> {
    for _ in 0..2 {
        black_box(f());
    }
    let mut runs = Vec::new();
    let start = Instant::now();
    while runs.len() < 5 || (start.elapsed() < Duration::from_secs(1) && runs.len() < 1000) {
        let t = Instant::now();
        black_box(f());
        runs.push(t.elapsed());
    }
    runs
}

/// (median, fastest)
fn stats(runs: &[Duration]) -> (Duration, Duration) {
    let mut sorted = runs.to_vec();
    sorted.sort();
    (sorted[sorted.len() / 2], sorted[0])
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MB", bytes as f64 / (1 << 20) as f64)
    } else {
        format!("{:.0} kB", bytes as f64 / 1024.0)
    }
}

fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / (1 << 20) as f64 / d.as_secs_f64()
}

/// A line of plausible step text (~150 bytes) that varies with `i`.
fn prose(i: usize) -> String {
    format!(
        "Step {i}: checked source #{} for the value of item {}; the table lists {} rows and the total is {}.",
        i % 97,
        i % 13,
        i % 211,
        i * 7 % 1000
    )
}

/// A falat JSONL trajectory: a header, then `steps` lines cycling through delegation, tool call,
/// tool result and message, with ids and refs so links are built.
fn falat_jsonl(steps: usize) -> Vec<u8> {
    let mut out = json!({"falat": 1, "task": "Sum the table.", "expected_output": "42",
        "gold": {"agent": "Coder", "step": steps / 2}})
    .to_string();
    out.push('\n');
    for i in 0..steps {
        let line = match i % 4 {
            0 => json!({"agent": "Planner", "kind": "delegation", "delegate_to": "Coder",
                "id": format!("d{i}"), "content": prose(i)}),
            1 => json!({"agent": "Coder", "kind": "tool_call", "tool_name": "python",
                "id": format!("c{i}"), "refs": [format!("d{}", i - 1)], "content": prose(i)}),
            2 => json!({"agent": "python", "kind": "tool_result", "refs": [format!("c{}", i - 1)],
                "content": prose(i), "tokens": {"input": 120, "output": 30}}),
            _ => json!({"agent": "Coder", "content": prose(i), "parent": format!("d{}", i - 3)}),
        };
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

/// An OpenAI chat message array of `steps` messages: a user turn, then assistant tool calls each
/// answered by a tool message, with an assistant text reply now and then.
fn openai_chat(steps: usize) -> Vec<u8> {
    let mut messages = vec![json!({"role": "user", "content": "Sum the table."})];
    let mut i = 1;
    while messages.len() < steps {
        if i % 10 == 0 {
            messages.push(json!({"role": "assistant", "content": prose(i)}));
        } else {
            let id = format!("call_{i}");
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function",
                 "function": {"name": "lookup", "arguments": format!("{{\"row\":{i}}}")}}]}));
            if messages.len() < steps {
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": prose(i)}));
            }
        }
        i += 1;
    }
    serde_json::to_vec(&Value::Array(messages)).unwrap()
}
