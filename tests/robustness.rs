//! Nothing panics: random JSON, byte-mutated real files and structurally mutated real files go
//! through `ingest::parse` with detection and with every format forced, and what loads must be
//! well formed (steps numbered 0..n, links in range, every acting agent listed, text view free of
//! control characters).
//!
//! `FALAT_FUZZ_ANALYSIS=1` also runs every method (offline judge, with and without the expected
//! output) on each trajectory that loads in these properties; it is off by default because it
//! multiplies their time (10,000 cases: about 4 minutes on 2 cores).

use std::path::Path;

use falat::cli::inspect::{InspectReport, render_text};
use falat::ingest::{self, FormatChoice, SUPPORTED};
use proptest::prelude::*;
use serde_json::{Map, Value};

const FIXTURES: [&str; 18] = [
    "data/who-and-when/Hand-Crafted/24.json",
    "data/who-and-when/Algorithm-Generated/1.json",
    "tests/fixtures/corpus/openai-chat/agentrx_tau_failed_task2.json",
    "tests/fixtures/corpus/autogen-magentic-one/agentrx_magentic_42576abe-0deb-4869-8c63-225c2d75a95a.json",
    "sample_traces/who-and-when-algorithm-generated-30.json",
    // Variants of claimed formats (tests/fixtures/variants/README.md); JSON Lines files are
    // mutated line by line.
    "tests/fixtures/variants/01-codex-legacy-pre-envelope.jsonl",
    "tests/fixtures/variants/02-claude-code-compact-boundary.jsonl",
    "tests/fixtures/variants/04-otel-semantic-kernel-span-events.otlp.json",
    "tests/fixtures/variants/06-langfuse-observations-api-list.json",
    "tests/fixtures/variants/09-tau2-bench-simulations.json",
    "tests/fixtures/variants/12-autogen-agentchat-taskresult.json",
    "tests/fixtures/variants/18-codex-ordinal-world-state-custom-tool.jsonl",
    "tests/fixtures/variants/21-vercel-ai-sdk-generate-text.otlp.json",
    "tests/fixtures/variants/22-otel-semconv-1.28-span-events.otlp.json",
    "tests/fixtures/variants/23-otel-log-events-and-double-encoded-messages.otlp.json",
    "tests/fixtures/variants/24-otel-indexed-prompt-and-plain-string-messages.otlp.json",
    "tests/fixtures/variants/25-trail-nested-child-spans.json",
    "tests/fixtures/variants/15-openai-chat-utf16le-powershell.json",
];

/// Fixtures that are UTF-8 JSON or JSON Lines (all but the UTF-16 one), for structural mutation.
const STRUCTURED: usize = FIXTURES.len() - 1;

/// Cases per property: `PROPTEST_CASES` when set, else 10,000.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(10_000)
}

/// A fixture as one value: the document, or its JSON lines as an array (`true`).
fn as_value(bytes: &[u8]) -> (Value, bool) {
    match serde_json::from_slice(bytes) {
        Ok(v) => (v, false),
        Err(_) => {
            let text = std::str::from_utf8(bytes).unwrap();
            let lines = text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap());
            (Value::Array(lines.collect()), true)
        }
    }
}

const JSONL: &str = r#"{"falat": 1, "task": "t", "gold": {"agent": "b", "step": 1}}
{"agent": "a", "kind": "tool_call", "id": "c1", "content": "f()"}
{"agent": "b", "kind": "tool_result", "refs": ["c1"], "parent": "c1", "content": "ok"}
"#;

/// The fixtures' bytes (read once), then the JSONL example.
fn fixtures() -> &'static [Vec<u8>] {
    static ALL: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut all: Vec<Vec<u8>> = FIXTURES.iter().map(|f| std::fs::read(root.join(f)).unwrap()).collect();
        all.push(JSONL.as_bytes().to_vec());
        all
    })
}

/// Parses `bytes` with detection, each supported format forced and the Who&When alias; checks
/// what loads.
fn check_all(bytes: &[u8]) {
    let mut choices = vec![FormatChoice::Detect(SUPPORTED.to_vec())];
    choices.extend(SUPPORTED.iter().map(|f| FormatChoice::Force(*f)));
    choices.push(FormatChoice::parse("who-and-when").unwrap());
    for choice in &choices {
        if let Ok(loaded) = ingest::parse_with("p.json", bytes, choice) {
            check_loaded(&loaded);
        }
    }
}

fn check_loaded(loaded: &ingest::Loaded) {
    assert!(!loaded.trajectories.is_empty());
    // Opt-in (slow): every method also analyses what loads (module docs).
    if std::env::var_os("FALAT_FUZZ_ANALYSIS").is_some() {
        for t in loaded.trajectories.iter().filter(|t| t.steps.len() <= 400) {
            for gt in [true, false] {
                let opts = falat::methods::MethodOptions::new(gt);
                for m in falat::diagnosis::Method::ALL {
                    let d = falat::methods::run(m, t, &falat::judge::heuristic::HeuristicJudge, &opts);
                    assert!(d.decisive_step.is_none_or(|s| s < t.steps.len()));
                }
            }
        }
    }
    for t in &loaded.trajectories {
        assert!(!t.steps.is_empty());
        let n = t.steps.len();
        for (i, s) in t.steps.iter().enumerate() {
            assert_eq!(s.index, i);
            assert!(t.agents.iter().any(|a| a.name == s.agent));
        }
        assert!(t.links.iter().all(|l| l.from < n && l.to < n));
        if let Some(step) = t.gold.as_ref().and_then(|g| g.step) {
            assert!(step < n);
        }
    }
    let text = render_text("p.json", loaded);
    assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
    serde_json::to_string(&InspectReport::new("p.json", loaded)).unwrap();
}

/// Keys the loaders look at, so random objects reach deep into them.
const KEYS: &[&str] = &[
    "source",
    "simulations",
    "tasks",
    "traceId",
    "parentObservationId",
    "level",
    "statusMessage",
    "data",
    "child_spans",
    "span_attributes",
    "span_id",
    "events",
    "payload",
    "record_type",
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "isCompactSummary",
    "message",
    "timestamp",
    "requestor",
    "error",
    "models_usage",
    "role",
    "content",
    "name",
    "history",
    "messages",
    "traj",
    "task_id",
    "reward",
    "info",
    "task",
    "instruction",
    "outputs",
    "tool_calls",
    "tool_call_id",
    "function",
    "arguments",
    "function_call",
    "id",
    "type",
    "agent",
    "kind",
    "falat",
    "gold",
    "step",
    "mistake_step",
    "mistake_agent",
    "system_prompt",
    "question",
    "ground_truth",
    "refs",
    "parent",
    "tokens",
    "input",
    "output",
    "is_error",
    "index",
    "delegate_to",
    "agents",
    "metadata",
    "trial",
];

/// Strings the loaders treat specially, and arbitrary ones.
fn arb_string() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "user",
            "assistant",
            "tool",
            "system",
            "function",
            "human",
            "WebSurfer",
            "Orchestrator (-> WebSurfer)",
            "Orchestrator (thought)",
            "Orchestrator (",
            " (->",
            "ComputerTerminal",
            "Computer_terminal",
            "'user'",
            "None",
            "'x'",
            "[{'id': 'c1'}]",
            "{'task': {'instruction': 'go'}}",
            "{'instruction': ",
            "c1",
            "0",
            "3",
            "-1",
            "tool_call",
            "tool_result",
            "delegation",
            "FINAL ANSWER: 4",
            "```py\nx\n```",
            "\u{1b}[2J\u{9b}x\r",
            "TextMessage",
            "ToolCallRequestEvent",
            "ToolCallExecutionEvent",
            "ThoughtEvent",
            "MultiModalMessage",
            "<image>",
            "GENERATION",
            "AGENT",
            "TOOL",
            "ERROR",
            "response_item",
            "function_call",
            "function_call_output",
            "reasoning",
            "state",
            "compact_boundary",
            "gen_ai.content.prompt",
            "gen_ai.user.message",
            "gen_ai.choice",
            "chat.completions",
            "ai.generateText.doGenerate",
            "ai.toolCall",
            "Process exited with code 101",
            "exit status 2",
            "[{\"role\": \"user\", \"content\": \"hi\"}]",
            "\"[{\\\"role\\\": \\\"user\\\"}]\"",
        ])
        .prop_map(str::to_string),
        ".{0,12}",
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        arb_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..8)
                .prop_map(|kvs| Value::Object(kvs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

/// A value written as one JSON document, or as JSON Lines when it is an array.
fn to_bytes(v: &Value, lines: bool) -> Vec<u8> {
    match (v, lines) {
        (Value::Array(items), true) => items.iter().map(|i| i.to_string()).collect::<Vec<_>>().join("\n").into_bytes(),
        _ => v.to_string().into_bytes(),
    }
}

/// Replaces the value at the path chosen by `picks` (child index modulo the child count) with
/// `new`; stops early at a leaf or when `picks` runs out.
fn replace_at(v: &mut Value, picks: &[usize], new: Value) {
    let child = match (v, picks.split_first()) {
        (Value::Array(items), Some((p, _))) if !items.is_empty() => {
            let n = items.len();
            &mut items[p % n]
        }
        (Value::Object(map), Some((p, _))) if !map.is_empty() => {
            let n = map.len();
            map.values_mut().nth(p % n).unwrap()
        }
        (v, _) => {
            *v = new;
            return;
        }
    };
    replace_at(child, &picks[1..], new);
}

/// Removes a key chosen by `picks` from an object on the path (a missing field).
fn remove_at(v: &mut Value, picks: &[usize]) {
    match (v, picks.split_first()) {
        (Value::Object(map), Some((p, rest))) if !map.is_empty() => {
            let key = map.keys().nth(p % map.len()).unwrap().clone();
            if rest.is_empty() || map[&key].is_null() {
                map.remove(&key);
            } else {
                remove_at(map.get_mut(&key).unwrap(), rest);
            }
        }
        (Value::Array(items), Some((p, rest))) if !items.is_empty() => {
            let n = items.len();
            remove_at(&mut items[p % n], rest);
        }
        _ => {}
    }
}

#[derive(Debug, Clone)]
enum ByteEdit {
    Truncate(usize),
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
}

fn apply(bytes: &mut Vec<u8>, edit: &ByteEdit) {
    let n = bytes.len().max(1);
    match edit {
        ByteEdit::Truncate(at) => bytes.truncate(at % n),
        ByteEdit::Set(at, b) => {
            if !bytes.is_empty() {
                bytes[at % n] = *b;
            }
        }
        ByteEdit::Insert(at, new) => {
            let at = at % (bytes.len() + 1);
            bytes.splice(at..at, new.iter().copied());
        }
        ByteEdit::Delete(at, len) => {
            let start = at % n;
            let end = (start + len).min(bytes.len());
            if start < end {
                bytes.drain(start..end);
            }
        }
    }
}

fn arb_edit() -> impl Strategy<Value = ByteEdit> {
    prop_oneof![
        any::<usize>().prop_map(ByteEdit::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(a, b)| ByteEdit::Set(a, b)),
        (
            any::<usize>(),
            prop_oneof![
                prop::collection::vec(any::<u8>(), 1..6),
                prop::sample::select(vec![
                    b"\n".to_vec(),
                    b"}".to_vec(),
                    b"\"".to_vec(),
                    b",null".to_vec(),
                    b"\xff\xfe".to_vec()
                ]),
            ]
        )
            .prop_map(|(a, b)| ByteEdit::Insert(a, b)),
        (any::<usize>(), 1usize..64).prop_map(|(a, l)| ByteEdit::Delete(a, l)),
    ]
}

/// Half of the time, a value from `s`; `None` leaves the field out.
fn maybe<S: Strategy<Value = Value> + 'static>(s: S) -> BoxedStrategy<Option<Value>> {
    prop::option::weighted(0.5, s).boxed()
}

/// A field that is nearly always there (a required one).
fn mostly<S: Strategy<Value = Value> + 'static>(s: S) -> BoxedStrategy<Option<Value>> {
    prop::option::weighted(0.95, s).boxed()
}

/// An object with each of `fields` present or absent.
fn object(fields: Vec<(&'static str, BoxedStrategy<Option<Value>>)>) -> BoxedStrategy<Value> {
    let (keys, values): (Vec<_>, Vec<_>) = fields.into_iter().unzip();
    values
        .prop_map(move |vals| {
            let mut m = Map::new();
            for (k, v) in keys.iter().zip(vals) {
                if let Some(v) = v {
                    m.insert(k.to_string(), v);
                }
            }
            Value::Object(m)
        })
        .boxed()
}

fn one_of_str(items: &[&'static str]) -> BoxedStrategy<Value> {
    prop::sample::select(items.to_vec()).prop_map(Value::from).boxed()
}

/// A wrong-typed value (or a right one now and then).
fn junk() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..200).prop_map(Value::from),
        arb_string().prop_map(Value::String),
        Just(serde_json::json!({})),
        Just(serde_json::json!([])),
    ]
    .boxed()
}

fn call_id() -> BoxedStrategy<Value> {
    prop_oneof![10 => one_of_str(&["c1", "c2"]), 1 => junk()].boxed()
}

fn text() -> BoxedStrategy<Value> {
    prop_oneof![10 => arb_string().prop_map(Value::String), 1 => junk()].boxed()
}

fn arb_call() -> BoxedStrategy<Value> {
    let function = object(vec![
        ("name", maybe(prop_oneof![4 => one_of_str(&["f", "search", " "]), 1 => junk()])),
        ("arguments", maybe(text())),
    ]);
    prop_oneof![
        5 => object(vec![
            ("id", mostly(call_id())),
            ("type", maybe(one_of_str(&["function"]))),
            ("function", mostly(function)),
        ]),
        1 => junk(),
    ]
    .boxed()
}

/// A chat / Who&When history message with random fields present, absent or mistyped.
fn arb_message() -> BoxedStrategy<Value> {
    let role = prop_oneof![
        10 => one_of_str(&["assistant", "tool"]),
        10 => one_of_str(&[
            "user", "system", "function", "'assistant'", "human",
            "WebSurfer", "Orchestrator (-> WebSurfer)", "Orchestrator (thought)",
            "ComputerTerminal",
        ]),
        1 => junk(),
    ];
    let content = prop_oneof![
        4 => text(),
        1 => Just(serde_json::json!([{"type": "text", "text": "part"}, {"type": "image_url"}, 3])),
    ];
    let calls = prop_oneof![
        8 => prop::collection::vec(arb_call(), 0..3).prop_map(Value::Array),
        1 => one_of_str(&["[{'id': 'c1', 'function': {'name': 'f', 'arguments': '{}'}}]", "[{'id': "]),
        1 => junk(),
    ];
    object(vec![
        ("role", mostly(role)),
        ("content", mostly(content)),
        ("name", maybe(prop_oneof![one_of_str(&["f", "Coder", "Computer_terminal"]), junk()])),
        ("tool_calls", maybe(calls)),
        ("tool_call_id", maybe(call_id())),
        ("function_call", maybe(arb_call())),
        ("index", maybe(junk())),
    ])
}

/// A falat JSONL step line with random fields present, absent or mistyped.
fn arb_step_line() -> BoxedStrategy<Value> {
    let kind = prop_oneof![
        5 => one_of_str(&["message", "thought", "tool_call", "tool_result", "delegation"]),
        1 => junk(),
    ];
    let refs = prop_oneof![
        3 => prop::collection::vec(call_id(), 0..3).prop_map(Value::Array),
        1 => junk(),
    ];
    let tokens = prop_oneof![
        Just(serde_json::json!({"input": 3, "output": 4})),
        Just(serde_json::json!({"input": -1})),
        junk(),
    ];
    object(vec![
        ("agent", maybe(prop_oneof![4 => one_of_str(&["a", "b", " "]), 1 => junk()])),
        ("content", maybe(text())),
        ("kind", maybe(kind)),
        ("id", maybe(call_id())),
        ("parent", maybe(call_id())),
        ("refs", maybe(refs)),
        ("tokens", maybe(tokens)),
        ("is_error", maybe(junk())),
        ("delegate_to", maybe(text())),
    ])
}

/// A document of one of the supported shapes built from `messages` and `steps`.
fn shaped(messages: Vec<Value>, steps: Vec<Value>, shape: usize, gold: Value) -> Vec<u8> {
    use serde_json::json;
    let record = json!({"task_id": 1, "reward": 0.0, "traj": messages,
        "info": {"task": {"instruction": "go", "outputs": ["1"]}}});
    let lines = |header: Option<Value>| {
        let all: Vec<String> = header.into_iter().chain(steps.clone()).map(|v| v.to_string()).collect();
        all.join("\n").into_bytes()
    };
    match shape {
        0 => Value::Array(messages).to_string().into_bytes(),
        1 => json!({"messages": messages}).to_string().into_bytes(),
        2 => record.to_string().into_bytes(),
        3 => json!([record, {"task_id": 2, "traj": "[{'role': 'user', 'content': 'x'}]", "info": "{'task': "}])
            .to_string()
            .into_bytes(),
        4 => json!({"question": "q", "history": messages, "mistake_agent": "WebSurfer", "mistake_step": gold})
            .to_string()
            .into_bytes(),
        5 => lines(Some(json!({"falat": 1, "task": "t", "gold": {"agent": "a", "step": gold}}))),
        _ => lines(None),
    }
}

/// A document in one of the shapes of the newer loaders, with `items` (random JSON) where the
/// messages, observations, spans or lines go.
fn new_shape(items: Vec<Value>, shape: usize, pick: Value) -> Vec<u8> {
    use serde_json::json;
    let lines = |header: Value, items: &[Value]| {
        let all: Vec<String> = std::iter::once(header).chain(items.iter().cloned()).map(|v| v.to_string()).collect();
        all.join("\n").into_bytes()
    };
    let kv = |k: &str, v: &Value| json!({"key": k, "value": {"stringValue": v.to_string()}});
    match shape {
        // AutoGen AgentChat TaskResult: items become messages with a source and a type.
        0 => {
            let msgs: Vec<Value> = items
                .iter()
                .enumerate()
                .map(|(i, c)| json!({"source": (["user", "WebSurfer", "MagenticOneOrchestrator"][i % 3]),
                    "type": (["TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent", "ThoughtEvent",
                             "MultiModalMessage", "SelectSpeakerEvent", "CodeExecutionEvent", "Other"][i % 8]),
                    "content": c, "models_usage": pick}))
                .collect();
            json!({"messages": msgs, "stop_reason": pick}).to_string().into_bytes()
        }
        // τ²-bench results.
        1 => json!({"info": {}, "tasks": [{"id": "t1", "user_scenario": {"instructions": pick}}],
            "simulations": [{"task_id": "t1", "trial": 0, "messages": items}, {"task_id": pick, "messages": pick}]})
        .to_string()
        .into_bytes(),
        // Langfuse observations page.
        2 => {
            let obs: Vec<Value> = items
                .iter()
                .enumerate()
                .map(|(i, o)| json!({"id": format!("o{i}"), "traceId": (["t1", "t2"][i % 2]),
                    "type": (["GENERATION", "TOOL", "AGENT", "SPAN", "EVENT"][i % 5]),
                    "parentObservationId": ([json!(null), json!("o0"), json!(format!("o{i}")), pick.clone()][i % 4]),
                    "input": o, "output": o, "level": (["DEFAULT", "ERROR"][i % 2]), "statusMessage": pick}))
                .collect();
            json!({"data": obs, "meta": {"page": 1}}).to_string().into_bytes()
        }
        // OTLP spans with GenAI events, Vercel attributes, log records.
        3 => {
            let spans: Vec<Value> = items
                .iter()
                .enumerate()
                .map(|(i, v)| json!({"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": format!("{:016x}", i % 4 + 1),
                    "parentSpanId": format!("{:016x}", (i + 1) % 5), "name": "chat.completions",
                    "attributes": [kv("gen_ai.operation.name", &json!((["chat.completions", "execute_tool", "invoke_agent"][i % 3]))),
                                   kv(["gen_ai.input.messages", "ai.operationId", "ai.prompt.messages", "gen_ai.prompt"][i % 4], v)],
                    "events": [{"name": (["gen_ai.content.prompt", "gen_ai.choice", "gen_ai.tool.message"][i % 3]),
                                "attributes": [kv("gen_ai.prompt", v), kv("message", v)]}],
                    "status": {"code": i % 3, "message": pick}}))
                .collect();
            let logs = json!([{"scopeLogs": [{"logRecords": [{"eventName": "gen_ai.user.message",
                "spanId": "0000000000000009", "body": {"stringValue": pick.to_string()}}]}]}]);
            json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}], "resourceLogs": logs}).to_string().into_bytes()
        }
        // TRAIL nested spans.
        4 => {
            let mut tree = json!({"span_id": "root", "span_attributes": {"openinference.span.kind": "AGENT"}, "child_spans": []});
            for (i, v) in items.iter().enumerate() {
                let child = json!({"span_id": format!("s{i}"), "span_attributes": {"openinference.span.kind": (["LLM", "TOOL", "CHAIN"][i % 3]),
                    "input.value": v, "output.value": v}, "status_code": pick, "child_spans": [v]});
                tree["child_spans"].as_array_mut().unwrap().push(child);
            }
            json!({"trace_id": "t", "spans": [tree]}).to_string().into_bytes()
        }
        // Codex rollout before the envelope.
        5 => lines(json!({"id": "x", "timestamp": "2025-08-20T00:00:00Z", "instructions": pick, "git": {}}), &items
            .iter()
            .enumerate()
            .map(|(i, v)| match i % 3 {
                0 => json!({"record_type": "state"}),
                1 => json!({"type": (["message", "function_call", "function_call_output", "reasoning"][i % 4]), "call_id": "c1", "output": v, "content": v}),
                _ => v.clone(),
            })
            .collect::<Vec<_>>()),
        // Claude Code session with a compaction boundary.
        _ => lines(
            json!({"type": "user", "uuid": "u0", "parentUuid": null, "message": {"role": "user", "content": pick}}),
            &items
                .iter()
                .enumerate()
                .map(|(i, v)| json!({"type": (["assistant", "user", "system"][i % 3]), "uuid": format!("u{}", i % 4),
                    "parentUuid": if i % 2 == 0 { json!(null) } else { json!(format!("u{}", i / 2)) },
                    "logicalParentUuid": format!("u{}", (i + 1) % 4), "subtype": "compact_boundary",
                    "isCompactSummary": i % 5 == 0, "message": {"role": "assistant", "content": v}}))
                .collect::<Vec<_>>(),
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn new_loader_shapes_never_panic(
        items in prop::collection::vec(arb_json(), 0..8),
        shape in 0usize..7,
        pick in arb_json(),
    ) {
        check_all(&new_shape(items, shape, pick));
    }

    #[test]
    fn random_json_never_panics(v in arb_json(), lines in any::<bool>()) {
        check_all(&to_bytes(&v, lines));
    }

    #[test]
    fn random_json_in_a_known_wrapper_never_panics(
        items in prop::collection::vec(arb_json(), 0..6),
        wrapper in 0usize..5,
    ) {
        let list = Value::Array(items);
        let mut m = Map::new();
        let v = match wrapper {
            0 => { m.insert("history".into(), list); m.insert("mistake_step".into(), "1".into()); Value::Object(m) }
            1 => { m.insert("messages".into(), list); Value::Object(m) }
            2 => { m.insert("task_id".into(), 1.into()); m.insert("traj".into(), list); Value::Object(m) }
            3 => { m.insert("falat".into(), 1.into()); let mut all = vec![Value::Object(m)]; all.extend(list.as_array().unwrap().iter().cloned()); Value::Array(all) }
            _ => list,
        };
        check_all(&to_bytes(&v, wrapper == 3));
    }

    #[test]
    fn shaped_traces_never_panic(
        messages in prop::collection::vec(arb_message(), 0..10),
        steps in prop::collection::vec(arb_step_line(), 0..10),
        shape in 0usize..7,
        gold in prop_oneof![one_of_str(&["0", "1", "2", "99", "x"]), (0u64..12).prop_map(Value::from), junk()],
    ) {
        check_all(&shaped(messages, steps, shape, gold));
    }

    #[test]
    fn byte_mutated_real_files_never_panic(
        which in 0usize..FIXTURES.len() + 1,
        edits in prop::collection::vec(arb_edit(), 1..4),
    ) {
        let mut bytes = fixtures()[which].clone();
        for e in &edits {
            apply(&mut bytes, e);
        }
        check_all(&bytes);
    }

    #[test]
    fn structurally_mutated_real_files_never_panic(
        which in 0usize..STRUCTURED,
        picks in prop::collection::vec(any::<usize>(), 1..6),
        new in arb_json(),
        remove in any::<bool>(),
    ) {
        let bytes = fixtures()[which].clone();
        let (mut v, lines) = as_value(&bytes);
        if remove {
            remove_at(&mut v, &picks);
        } else {
            replace_at(&mut v, &picks, new);
        }
        check_all(&to_bytes(&v, lines));
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    check_all(deep.as_bytes());
    let repr = format!(
        "[{{\"task_id\": 1, \"traj\": \"{}\", \"info\": \"{}\"}}]",
        "[".repeat(50_000),
        "{'a': ".repeat(50_000)
    );
    check_all(repr.as_bytes());
}

/// Pieces of step text that reach the analysis' own parsing (page titles, answers, numbers,
/// code, errors, hedges), with characters whose lower case has another byte length and
/// characters of several bytes.
fn step_piece() -> BoxedStrategy<String> {
    prop_oneof![
        prop::sample::select(vec![
            "Here is a screenshot of [",
            "](https://example.org/a)",
            "Title: ",
            "Address: ",
            "FINAL ANSWER: ",
            "The answer is ",
            "I assume ",
            "verified",
            "Error: ",
            "exit code: 1",
            "execution failed",
            "```python\nprint(1)\n```",
            "$1,234.50",
            "10",
            "#W1023410",
            "2010-01-02",
            "/workspace/API_NY.GDS.zip",
            "薄膜/透明體",
            "薄膜/透明體測厚專家 - VK系列雷射顯微鏡 | KEYENCE 台灣基恩斯",
            "İstanbul",
            "ẞ",
            "e\u{301}",
            "🦀",
            "\n",
            " ",
            ", ",
        ])
        .prop_map(str::to_string),
        ".{0,8}",
        // A browsed page whose title runs on in characters of several bytes.
        ("[a-z]{0,3}", "[薄膜透明體台灣]{30,60}").prop_map(|(a, b)| format!("Here is a screenshot of [{a}{b}")),
    ]
    .boxed()
}

fn step_text() -> impl Strategy<Value = String> {
    prop::collection::vec(step_piece(), 0..16).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases().min(300), ..ProptestConfig::default() })]

    /// Every method analyses a run of arbitrary step text without panicking, with and without the
    /// expected output (a page title of multi-byte characters once made the analysis panic).
    #[test]
    fn every_method_analyses_arbitrary_step_text(
        texts in prop::collection::vec(step_text(), 1..8),
        roles in prop::collection::vec(0usize..4, 8),
        expected in step_text(),
    ) {
        let role = ["WebSurfer", "Orchestrator (-> WebSurfer)", "Assistant", "Orchestrator (termination condition)"];
        let mut history = vec![serde_json::json!({"role": "human", "content": "Find the schedule of the train"})];
        for (i, t) in texts.iter().enumerate() {
            history.push(serde_json::json!({"role": role[roles[i]], "content": t}));
        }
        let doc = serde_json::json!({"history": history, "question": "Find the schedule of the train", "ground_truth": expected});
        let bytes = serde_json::to_vec(&doc).unwrap();
        let loaded = ingest::parse_with("p.json", &bytes, &FormatChoice::parse("who-and-when").unwrap()).unwrap();
        for t in &loaded.trajectories {
            for gt in [true, false] {
                let opts = falat::methods::MethodOptions::new(gt);
                for m in falat::diagnosis::Method::ALL {
                    let d = falat::methods::run(m, t, &falat::judge::heuristic::HeuristicJudge, &opts);
                    prop_assert!(d.decisive_step.is_none_or(|s| s < t.steps.len()));
                }
            }
        }
    }
}
