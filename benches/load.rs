//! Load benchmark: `cargo bench --bench load`.
//!
//! Times `ingest::parse` (format detection + loader + checks) on the largest bundled Who&When file,
//! on generated 50,000-step trajectories (falat JSONL and OpenAI chat), on a generated OTLP/JSON
//! trace of 100,000 spans (about 100 MB, built in memory at bench time, never written to the
//! repository; `scripts/gen_otlp_100k_spans.py` writes the same trace to a file) and on one
//! fixture of each agent-framework format (SWE-agent, mini-SWE-agent, OpenHands, smolagents,
//! pydantic-ai, Strands, Claude Code inline sidechains; `tests/fixtures/frameworks-b/`), next to a plain
//! `serde_json::Value` parse of the same bytes (for JSONL: every line into a `Value`, held in a
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
