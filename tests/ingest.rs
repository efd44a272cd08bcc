//! Loading the real trace files bundled with the project: every Who&When file, the τ-bench and
//! Magentic-One corpus files, and the format override. Files are read from the project copies
//! (`data/`, `tests/fixtures/`), never from outside the repository.

// The other loaders' tests share this binary (one link of the library instead of five).
#[path = "ingest/broken.rs"]
mod broken;
#[path = "ingest/formats.rs"]
mod formats;
#[path = "ingest/formats_c.rs"]
mod formats_c;
#[path = "ingest/frameworks_a.rs"]
mod frameworks_a;
#[path = "ingest/frameworks_b.rs"]
mod frameworks_b;
#[path = "ingest/names_and_types.rs"]
mod names_and_types;
#[path = "ingest/support.rs"]
mod support;
#[path = "ingest/sweep.rs"]
mod sweep;

use std::path::{Path, PathBuf};

use falat::ingest::{self, FormatChoice, Loaded, fs};
use falat::model::{LinkKind, SourceFormat, StepKind, Trajectory};
use serde_json::Value;
use support::{errors, shape};

fn project(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn load(rel: &str) -> Loaded {
    fs::load_path(&project(rel), None).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn only(loaded: &Loaded) -> &Trajectory {
    assert_eq!(loaded.trajectories.len(), 1);
    &loaded.trajectories[0]
}

const WHO_AND_WHEN: &str = "data/who-and-when";

#[test]
fn every_who_and_when_file_loads_with_its_label_and_all_records() {
    let files = fs::dataset_files(&project(WHO_AND_WHEN)).unwrap();
    assert_eq!(files.len(), 111);
    let mut per_subset = [0, 0];
    for path in &files {
        let loaded = fs::load_path(path, None).unwrap_or_else(|e| panic!("{e}"));
        let hand = path.to_string_lossy().contains("Hand-Crafted");
        let want = if hand { SourceFormat::WhoWhenHand } else { SourceFormat::WhoWhenAlgorithm };
        assert_eq!(loaded.format, want, "{}", path.display());
        per_subset[usize::from(hand)] += 1;
        assert!(loaded.diagnostics.is_empty(), "{}: {:?}", path.display(), loaded.diagnostics);
        let t = only(&loaded);
        // Independent check against the raw JSON: one step per history record, same label.
        let raw: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        assert_eq!(t.steps.len(), raw["history"].as_array().unwrap().len());
        let gold = t.gold.as_ref().expect("gold label");
        assert_eq!(gold.agent, raw["mistake_agent"].as_str().unwrap());
        let step: usize = raw["mistake_step"].as_str().unwrap().parse().unwrap();
        assert_eq!(gold.step, Some(step));
        assert!(t.agent_names().iter().any(|a| a.eq_ignore_ascii_case(&gold.agent)));
        assert_eq!(t.task, raw["question"].as_str().unwrap().trim());
        assert!(t.steps.iter().enumerate().all(|(i, s)| s.index == i && !s.agent.is_empty()));
    }
    assert_eq!(per_subset, [76, 35]);
}

/// (file, steps, gold agent, gold step, category, agents in order of first appearance)
type Expected = (&'static str, usize, &'static str, usize, Option<&'static str>, &'static [&'static str]);

const LABELS: [Expected; 8] = [
    ("Hand-Crafted/1.json", 29, "WebSurfer", 12, None, &["human", "Orchestrator", "WebSurfer"]),
    (
        "Hand-Crafted/3.json",
        93,
        "WebSurfer",
        32,
        Some("Tool failure"),
        &["human", "Orchestrator", "WebSurfer", "Assistant"],
    ),
    (
        "Hand-Crafted/30.json",
        121,
        "Assistant",
        82,
        None,
        &["human", "Orchestrator", "WebSurfer", "FileSurfer", "Assistant"],
    ),
    (
        "Hand-Crafted/47.json",
        67,
        "Orchestrator",
        51,
        None,
        &["human", "Orchestrator", "WebSurfer", "FileSurfer", "ComputerTerminal", "Assistant"],
    ),
    (
        "Algorithm-Generated/1.json",
        6,
        "Excel_Expert",
        0,
        None,
        &["Excel_Expert", "Computer_terminal", "BusinessLogic_Expert", "DataVerification_Expert"],
    ),
    (
        "Algorithm-Generated/30.json",
        7,
        "Culinary_Expert",
        3,
        Some("Factual_Error"),
        &["AudioProcessing_Expert", "Computer_terminal", "TranscriptionVerification_Expert", "Culinary_Expert"],
    ),
    (
        "Algorithm-Generated/80.json",
        8,
        "PythonDebugging_Expert",
        0,
        None,
        &[
            "PythonDebugging_Expert",
            "Computer_terminal",
            "Environment_Expert",
            "Verification_Expert",
            "Space_Historian_Expert",
        ],
    ),
    (
        "Algorithm-Generated/10.json",
        10,
        "Validation_Expert",
        5,
        None,
        &["Validation_Expert", "Computer_terminal", "Geography_Expert"],
    ),
];

#[test]
fn gold_labels_and_agents_of_chosen_files_are_exact() {
    for (file, steps, agent, step, category, agents) in LABELS {
        let loaded = load(&format!("{WHO_AND_WHEN}/{file}"));
        let t = only(&loaded);
        assert_eq!(t.steps.len(), steps, "{file}");
        let gold = t.gold.as_ref().unwrap();
        assert_eq!((gold.agent.as_str(), gold.step), (agent, Some(step)), "{file}");
        assert_eq!(gold.category.as_deref(), category, "{file}");
        assert_eq!(t.agent_names(), agents, "{file}");
    }
}

#[test]
fn outputs_roles_and_metadata_of_a_hand_crafted_file() {
    let loaded = load("data/who-and-when/Hand-Crafted/1.json");
    let t = only(&loaded);
    assert_eq!(t.id, "1");
    assert_eq!(t.expected_output.as_deref(), Some("Renzo Gracie Jiu-Jitsu Wall Street"));
    assert_eq!(t.observed_output.as_deref(), Some("Alliance Jiu Jitsu, NY Jidokwan Taekwondo"));
    assert!(t.metadata.contains(&("is_corrected".into(), "false".into())));
    assert_eq!(t.steps[12].ids.id.as_deref(), Some("12"));
}

#[test]
fn algorithm_generated_agents_carry_their_system_prompts() {
    let loaded = load("data/who-and-when/Algorithm-Generated/1.json");
    let t = only(&loaded);
    let role = t.agent_role("excel_expert").expect("system prompt");
    assert!(role.contains("Excel"), "{role}");
    assert_eq!(t.agent_role("Computer_terminal"), None);
    assert_eq!(t.steps[1].kind, StepKind::ToolResult);
    assert_eq!(t.expected_output.as_deref(), Some("8"));
    assert!(t.metadata.contains(&("level".into(), "2".into())));
}

/// (file, step, role string, agent, kind, delegation target)
type RolePattern = (&'static str, usize, &'static str, &'static str, StepKind, Option<&'static str>);

const ROLE_PATTERNS: [RolePattern; 11] = [
    ("1", 0, "human", "human", StepKind::Message, None),
    ("1", 1, "Orchestrator (thought)", "Orchestrator", StepKind::Thought, None),
    ("1", 3, "Orchestrator (-> WebSurfer)", "Orchestrator", StepKind::Delegation, Some("WebSurfer")),
    ("1", 4, "WebSurfer", "WebSurfer", StepKind::Message, None),
    ("3", 34, "Orchestrator (-> Assistant)", "Orchestrator", StepKind::Delegation, Some("Assistant")),
    ("3", 36, "Assistant", "Assistant", StepKind::Message, None),
    ("5", 19, "Orchestrator (termination condition)", "Orchestrator", StepKind::Thought, None),
    ("8", 75, "Orchestrator (-> FileSurfer)", "Orchestrator", StepKind::Delegation, Some("FileSurfer")),
    ("8", 77, "FileSurfer", "FileSurfer", StepKind::Message, None),
    ("14", 10, "Orchestrator (-> ComputerTerminal)", "Orchestrator", StepKind::Delegation, Some("ComputerTerminal")),
    ("14", 12, "ComputerTerminal", "ComputerTerminal", StepKind::ToolResult, None),
];

#[test]
fn every_hand_crafted_role_pattern_maps_to_agent_and_kind() {
    for (file, index, role, agent, kind, target) in ROLE_PATTERNS {
        let loaded = load(&format!("{WHO_AND_WHEN}/Hand-Crafted/{file}.json"));
        let s = &only(&loaded).steps[index];
        assert_eq!(s.role, role, "{file}.json step {index}");
        assert_eq!((s.agent.as_str(), s.kind, s.delegate_to.as_deref()), (agent, kind, target), "{role}");
    }
}

#[test]
fn delegations_link_to_the_delegate_reply() {
    let loaded = load("data/who-and-when/Hand-Crafted/14.json");
    let t = only(&loaded);
    let from_10: Vec<(usize, LinkKind)> = t.links.iter().filter(|l| l.from == 10).map(|l| (l.to, l.kind)).collect();
    assert_eq!(from_10, [(12, LinkKind::Delegation)]);
}

const TAU: &str = "tests/fixtures/corpus/openai-chat/agentrx_tau_failed_task2.json";

#[test]
fn tau_bench_record_loads_with_tool_links() {
    let loaded = load(TAU);
    assert_eq!(loaded.format, SourceFormat::TauBench);
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    let t = only(&loaded);
    assert_eq!(t.id, "task-2-trial-2");
    assert_eq!(t.steps.len(), 32);
    assert!(t.task.starts_with("You are Yusuf Rossi in 19122."), "{}", t.task);
    assert_eq!(t.expected_output.as_deref(), Some("10"));
    assert!(t.observed_output.as_deref().unwrap().starts_with("The return request for the following items"));
    assert_eq!(t.agent_names(), ["system", "user", "assistant", "tool"]);
    assert!(t.agent_role("assistant").unwrap().starts_with("# Retail agent policy"));
    let calls = t.steps.iter().filter(|s| s.kind == StepKind::ToolCall).count();
    assert_eq!(calls, 10);
    assert_eq!(t.links.len(), 10);
    for l in &t.links {
        assert_eq!(l.kind, LinkKind::ToolResult);
        assert_eq!(l.to, l.from + 1);
        assert_eq!(t.steps[l.from].ids.refs, t.steps[l.to].ids.refs);
    }
    let call = &t.steps[10];
    assert_eq!(call.content, r#"find_user_id_by_name_zip({"first_name":"Yusuf","last_name":"Rossi","zip":"19122"})"#);
    assert_eq!(call.ids.id.as_deref(), Some("11"));
    assert_eq!(call.ids.refs, ["call_MXICmVATzlhUFRoPSUAcGuwe"]);
    assert_eq!(t.steps[11].tool_name.as_deref(), Some("find_user_id_by_name_zip"));
    assert!(t.metadata.contains(&("reward".into(), "0.0".into())));
}

#[test]
fn tau_bench_data_set_and_bare_traj_load() {
    let raw: Value = serde_json::from_slice(&std::fs::read(project(TAU)).unwrap()).unwrap();
    let mut second = raw.clone();
    second["task_id"] = 5.into();
    let set = serde_json::to_vec(&Value::Array(vec![raw.clone(), second])).unwrap();
    let loaded = ingest::parse("set.json", &set, None).unwrap();
    assert_eq!(loaded.format, SourceFormat::TauBench);
    let ids: Vec<&str> = loaded.trajectories.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["task-2-trial-2", "task-5-trial-2"]);

    let chat = serde_json::to_vec(&raw["traj"]).unwrap();
    let loaded = ingest::parse("chat.json", &chat, None).unwrap();
    assert_eq!(loaded.format, SourceFormat::OpenAiChat);
    let t = only(&loaded);
    assert_eq!((t.steps.len(), t.links.len()), (32, 10));
    assert!(t.task.starts_with("Hey! I’d like to know how many t-shirt"));
}

#[test]
fn tau_bench_record_with_repr_fields_loads_the_same_steps() {
    let raw: Value = serde_json::from_slice(&std::fs::read(project(TAU)).unwrap()).unwrap();
    let mut repr = raw.clone();
    for m in repr["traj"].as_array_mut().unwrap() {
        for v in m.as_object_mut().unwrap().values_mut() {
            *v = Value::String(python_repr(v));
        }
    }
    repr["info"] = Value::String(python_repr(&raw["info"]));
    let bytes = serde_json::to_vec(&repr).unwrap();
    let from_repr = ingest::parse("repr.json", &bytes, None).unwrap();
    let plain = load(TAU);
    assert!(from_repr.diagnostics.is_empty(), "{:?}", from_repr.diagnostics);
    let (a, b) = (only(&from_repr), only(&plain));
    assert_eq!(a.steps, b.steps);
    assert_eq!(a.links, b.links);
    assert_eq!(a.task, b.task);
    assert_eq!(a.expected_output, b.expected_output);
}

/// Python's `repr` of a JSON value (single-quoted strings, True/False/None).
fn python_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            let body = s.replace('\\', "\\\\").replace('\'', "\\'").replace('\n', "\\n");
            format!("'{body}'")
        }
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(python_repr).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", python_repr(&Value::String(k.clone())), python_repr(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

const MAGENTIC: &str = "tests/fixtures/corpus/autogen-magentic-one";

#[test]
fn magentic_one_logs_load_and_match_who_and_when() {
    let short = load(&format!("{MAGENTIC}/agentrx_magentic_42576abe-0deb-4869-8c63-225c2d75a95a.json"));
    assert_eq!(short.format, SourceFormat::MagenticLog);
    let t = only(&short);
    assert_eq!(t.agent_names(), ["human", "Orchestrator"]);
    assert!(t.task.starts_with("In the fictional language of Tizin"));
    assert_eq!(t.observed_output.as_deref(), Some("Maktay Zapple Mato"));
    assert_eq!(t.gold, None);
    // The same run is Who&When Hand-Crafted 24: same steps, record for record.
    let ww = load("data/who-and-when/Hand-Crafted/24.json");
    assert_eq!(t.steps, only(&ww).steps);

    let long = load(&format!("{MAGENTIC}/agentrx_magentic_2dfc4c37-fec1-4518-84a7-10095d30ad75.json"));
    let t = only(&long);
    assert_eq!(t.steps.len(), 20);
    assert_eq!(t.agent_names(), ["human", "Orchestrator", "WebSurfer", "Assistant"]);
    assert_eq!(t.steps[14].delegate_to.as_deref(), Some("Assistant"));
    assert_eq!(t.observed_output.as_deref(), Some("5"));
    assert!(long.diagnostics.is_empty());
}

#[test]
fn format_override_reads_as_told() {
    let path = project("data/who-and-when/Hand-Crafted/1.json");
    let both = FormatChoice::parse("who-and-when").unwrap();
    assert_eq!(fs::load_path_with(&path, &both).unwrap().format, SourceFormat::WhoWhenHand);
    // A Who&When file is also a Magentic-One log with labels.
    let magentic = fs::load_path(&path, Some(SourceFormat::MagenticLog)).unwrap();
    assert_eq!(magentic.format, SourceFormat::MagenticLog);
    assert_eq!(only(&magentic).steps.len(), 29);
    // Forced into the wrong subset every record lacks its agent name.
    let err = fs::load_path(&path, Some(SourceFormat::WhoWhenAlgorithm)).unwrap_err();
    assert!(
        err.to_string().ends_with(
            "as who-and-when-algorithm: trajectory \"1\" has no usable step (history[0]: missing \"name\" (the agent); record skipped; 28 more)"
        ),
        "{err}"
    );
}

#[test]
fn the_documented_jsonl_example_loads_as_described() {
    let doc = std::fs::read_to_string(project("docs/FORMATS.md")).unwrap();
    let start = doc.find("```json\n").expect("an example block") + "```json\n".len();
    let example = &doc[start..start + doc[start..].find("```").unwrap()];
    let loaded = ingest::parse("example.jsonl", example.as_bytes(), None).unwrap();
    assert_eq!(loaded.format, SourceFormat::FalatJsonl);
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    let t = only(&loaded);
    assert_eq!(t.id, "run-7");
    assert_eq!(t.steps.len(), 4);
    let links: Vec<(usize, usize, LinkKind)> = t.links.iter().map(|l| (l.from, l.to, l.kind)).collect();
    assert_eq!(links, [(0, 1, LinkKind::Delegation), (1, 2, LinkKind::ToolResult), (0, 3, LinkKind::Parent)]);
    let gold = t.gold.as_ref().unwrap();
    assert_eq!((gold.agent.as_str(), gold.step), ("Coder", Some(3)));
    assert_eq!(t.agent_role("planner"), Some("Plans and delegates."));
}

// ---- Variants of claimed formats (tests/fixtures/variants, see its README) ----

const VARIANTS: &str = "tests/fixtures/variants";

fn variant(name: &str) -> Loaded {
    load(&format!("{VARIANTS}/{name}"))
}

fn links(t: &Trajectory) -> Vec<(usize, usize, LinkKind)> {
    t.links.iter().map(|l| (l.from, l.to, l.kind)).collect()
}

use StepKind::{Delegation as D, Message as M, Thought as Th, ToolCall as C, ToolResult as R};

#[test]
fn codex_rollout_from_before_the_envelope_loads_as_codex() {
    let l = variant("01-codex-legacy-pre-envelope.jsonl");
    assert_eq!(l.format, SourceFormat::Codex);
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    let t = only(&l);
    assert_eq!(t.task, "Count the Rust source files under src/ and tell me the number.");
    assert_eq!(
        shape(t),
        [("user", M), ("user", M), ("codex", Th), ("codex", C), ("codex", R), ("codex", C), ("codex", R), ("codex", M)]
    );
    assert!(t.steps[0].content.starts_with("<environment_context>"));
    assert_eq!(t.steps[4].content, "14\n");
    assert_eq!(links(t), [(3, 4, LinkKind::ToolResult), (5, 6, LinkKind::ToolResult)]);
    assert_eq!(errors(t), [6]);
    assert_eq!(t.observed_output.as_deref(), Some("There are 41 Rust source files under src/."));
    assert!(t.metadata.contains(&("lines_not_steps".into(), "record_state 4".into())));
    assert_eq!(l.skipped(), ingest::Skipped { records: 0, not_steps: 4 });
}

#[test]
fn recent_codex_rollout_flags_every_failed_exit_and_keeps_encrypted_reasoning() {
    let l = variant("18-codex-ordinal-world-state-custom-tool.jsonl");
    assert_eq!(l.format, SourceFormat::Codex);
    let t = only(&l);
    assert_eq!(
        shape(t),
        [("user", M), ("codex", Th), ("codex", C), ("codex", R), ("codex", C), ("codex", R), ("codex", M)]
    );
    assert_eq!(t.steps[1].content, "[encrypted reasoning]");
    assert_eq!(t.steps[2].tool_name.as_deref(), Some("apply_patch"));
    assert_eq!(links(t), [(2, 3, LinkKind::ToolResult), (4, 5, LinkKind::ToolResult)]);
    // "Process exited with code 101" is a failed exit like "Exit code: 101".
    assert_eq!(errors(t), [5]);
    assert!(t.metadata.contains(&("lines_not_steps".into(), "world_state 2, turn_context 1".into())));
    // The harness's settings are not evidence; the command and the error are.
    let call = falat::evidence::extract(&t.steps[4]);
    assert!(!call.iter().any(|e| e.key.contains("10000") || e.key.contains("yield")), "{call:?}");
    let result = falat::evidence::extract(&t.steps[5]);
    assert!(result.iter().any(|e| e.kind == falat::evidence::EvidenceKind::ExitCode(101)));
    assert!(!result.iter().any(|e| e.key == "5f2a" || e.key == "5.8" || e.key == "120"), "{result:?}");
}

#[test]
fn claude_code_compaction_keeps_the_chain_and_the_summary_is_the_harness() {
    let l = variant("02-claude-code-compact-boundary.jsonl");
    assert_eq!(l.format, SourceFormat::ClaudeCode);
    let t = only(&l);
    assert_eq!(
        shape(t),
        [
            ("user", M),
            ("claude", C),
            ("claude", R),
            ("claude", M),
            ("harness", M),
            ("claude", C),
            ("claude", R),
            ("claude", M)
        ]
    );
    assert_eq!(t.agent_names(), ["user", "claude", "harness"]);
    assert_eq!(t.steps[4].role, "compact_summary");
    assert!(t.steps[4].content.starts_with("This session is being continued"));
    let parents: Vec<(usize, usize)> =
        t.links.iter().filter(|l| l.kind == LinkKind::Parent).map(|l| (l.from, l.to)).collect();
    // One unbroken chain: the boundary's logicalParentUuid joins step 3 to the summary.
    assert_eq!(parents, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7)]);
    assert_eq!(errors(t), [2]);
    assert_eq!(t.task, "Fix the failing unit test in parser.rs and run the tests.");
}

#[test]
fn claude_code_images_and_redacted_thinking_are_placeholders() {
    let l = variant("14-claude-code-images-redacted-thinking.jsonl");
    let t = only(&l);
    assert_eq!(t.task, "The header in this screenshot overlaps the menu. Fix the CSS.");
    assert_eq!(shape(t), [("user", M), ("claude", Th), ("claude", Th), ("claude", C), ("claude", R), ("claude", M)]);
    assert_eq!(
        t.steps[0].content,
        "[image image/png, 146 KB]\nThe header in this screenshot overlaps the menu. Fix the CSS."
    );
    assert_eq!(t.steps[2].content, "[redacted thinking]");
    assert_eq!(t.steps[4].content, "[image image/png, 146 KB]");
    assert_eq!(links(t).iter().filter(|l| l.2 == LinkKind::ToolResult).count(), 1);
    assert!(l.diagnostics.is_empty());
}

#[test]
fn otel_span_events_of_older_conventions_are_read() {
    let l = variant("04-otel-semantic-kernel-span-events.otlp.json");
    assert_eq!(l.format, SourceFormat::OtelGenAi);
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    let t = only(&l);
    assert_eq!(shape(t), [("user", M), ("assistant", C), ("assistant", R), ("assistant", M)]);
    assert_eq!(t.steps[1].tool_name.as_deref(), Some("FlightPlugin-search_flights"));
    assert_eq!(t.steps[1].ids.refs, ["call_f1"]);
    assert_eq!(links(t), [(1, 2, LinkKind::ToolResult)]);
    assert_eq!(t.observed_output.as_deref(), Some("I booked flight XX100 for 210 EUR, the cheapest option."));
    assert_eq!(t.steps[0].content, "Book the cheapest flight from Lisbon to Oslo on 12 June.");
}

#[test]
fn otel_semconv_events_logs_and_encodings_of_every_generation() {
    let l = variant("22-otel-semconv-1.28-span-events.otlp.json");
    let t = only(&l);
    assert_eq!(shape(t), [("user", D), ("user", M), ("weather", C), ("weather", R), ("weather", M)]);
    assert_eq!(errors(t), [3]);
    assert_eq!(t.steps[3].content, "upstream 503: forecast service unavailable");
    assert_eq!(t.steps[2].ids.refs, ["call_w1"]);
    assert!(links(t).contains(&(2, 3, LinkKind::ToolResult)));
    assert_eq!(t.agent_role("weather"), Some("You report the weather."));

    let l = variant("23-otel-log-events-and-double-encoded-messages.otlp.json");
    let t = only(&l);
    let texts: Vec<&str> = t.steps.iter().map(|s| s.content.as_str()).collect();
    assert_eq!(
        texts,
        [
            "Summarise the ticket #812.",
            "Ticket 812: login fails after password reset.",
            "Is the fix deployed?",
            "Not yet: it ships on Friday."
        ]
    );
    assert_eq!(shape(t), [("user", M), ("assistant", M), ("user", M), ("assistant", M)]);

    let l = variant("24-otel-indexed-prompt-and-plain-string-messages.otlp.json");
    let t = only(&l);
    let texts: Vec<&str> = t.steps.iter().map(|s| s.content.as_str()).collect();
    assert_eq!(texts, ["Translate 'bonjour'.", "Hello.", "And 'merci'?", "Thank you."]);
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
}

#[test]
fn vercel_ai_sdk_spans_are_model_calls_and_tool_calls() {
    let l = variant("21-vercel-ai-sdk-generate-text.otlp.json");
    assert_eq!(l.format, SourceFormat::OtelGenAi);
    let t = only(&l);
    assert_eq!(shape(t), [("user", M), ("assistant", C), ("assistant", R), ("assistant", M)]);
    assert_eq!(t.steps[1].tool_name.as_deref(), Some("convert"));
    assert_eq!(t.steps[2].content, "{\"eur\": 110.4}");
    assert_eq!(links(t), [(1, 2, LinkKind::ToolResult)]);
    assert_eq!(t.steps[1].tokens.map(|k| (k.input, k.output)), Some((50, 12)));
    assert_eq!(t.steps[3].tokens.map(|k| (k.input, k.output)), Some((80, 9)));
    assert_eq!(t.observed_output.as_deref(), Some("120 USD is 110.40 EUR."));
}

#[test]
fn langfuse_observations_api_page_is_one_trajectory_per_trace() {
    let l = variant("06-langfuse-observations-api-list.json");
    assert_eq!(l.format, SourceFormat::Langfuse);
    let t = only(&l);
    assert_eq!(shape(t), [("user", D), ("user", M), ("billing_agent", C), ("billing_agent", R), ("billing_agent", M)]);
    assert_eq!(t.task, "Why was I charged twice in June?");
    assert!(t.metadata.contains(&("trace_id".into(), "tr-7f1d2c3b".into())));
    assert!(links(t).contains(&(2, 3, LinkKind::ToolResult)));
    // The agent's parent was never ingested: it hangs at the trace root, reported.
    let msgs: Vec<String> = l.diagnostics.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        msgs,
        [
            "observation data[0] (billing_agent): parent \"fastapi-span-never-ingested\" is not in the trace; loaded as a root"
        ]
    );
    // Two traces on one page are two trajectories.
    let raw: Value = serde_json::from_slice(
        &std::fs::read(project(&format!("{VARIANTS}/06-langfuse-observations-api-list.json"))).unwrap(),
    )
    .unwrap();
    let mut page = raw.clone();
    let mut other = raw["data"][3].clone();
    other["traceId"] = "tr-second".into();
    other["id"] = "obs-x".into();
    page["data"].as_array_mut().unwrap().push(other);
    let two = ingest::parse("page.json", page.to_string().as_bytes(), None).unwrap();
    let ids: Vec<&str> = two.trajectories.iter().map(|t| t.metadata[0].1.as_str()).collect();
    assert_eq!(ids, ["tr-7f1d2c3b", "tr-second"]);
}

#[test]
fn tau2_bench_results_attribute_user_tool_calls_to_the_user() {
    let l = variant("09-tau2-bench-simulations.json");
    assert_eq!(l.format, SourceFormat::TauBench);
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    let t = only(&l);
    assert_eq!(t.id, "task-[mobile_data_issue]airplane_mode_on-trial-0");
    assert_eq!(
        shape(t),
        [
            ("assistant", M),
            ("user", M),
            ("assistant", C),
            ("tool", R),
            ("assistant", M),
            ("user", C),
            ("tool", R),
            ("user", M),
            ("assistant", C),
            ("tool", R),
            ("assistant", M),
            ("user", M)
        ]
    );
    assert_eq!(t.steps[5].tool_name.as_deref(), Some("check_network_status"));
    assert_eq!(links(t), [(2, 3, LinkKind::ToolResult), (5, 6, LinkKind::ToolResult), (8, 9, LinkKind::ToolResult)]);
    assert_eq!(errors(t), [9]);
    assert_eq!(t.task, "No mobile data.\nPhone number 555-0100\nFollow the agent's instructions.");
    assert!(t.metadata.contains(&("reward".into(), "0.0".into())));
    assert!(
        t.metadata.contains(&("purpose".into(), "User cannot use mobile data because airplane mode is on.".into()))
    );
}

#[test]
fn autogen_agentchat_task_result_loads_with_agents_from_source() {
    let l = variant("12-autogen-agentchat-taskresult.json");
    assert_eq!(l.format, SourceFormat::MagenticLog);
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    let t = only(&l);
    let (o, w) = ("MagenticOneOrchestrator", "WebSurfer");
    assert_eq!(shape(t), [("user", M), (o, M), (o, M), (w, C), (w, R), (w, M), (o, M), (w, Th), (w, M), (o, M)]);
    assert_eq!(links(t), [(3, 4, LinkKind::ToolResult)]);
    assert!(t.steps[5].content.ends_with("France won; capital Paris.\n[image]"), "{}", t.steps[5].content);
    assert_eq!(t.steps[1].tokens.map(|k| (k.input, k.output)), Some((400, 120)));
    assert_eq!(t.observed_output.as_deref(), Some("2,165,423"));
    assert!(t.task.starts_with("What is the population of the capital"));
    assert!(t.metadata.contains(&("stop_reason".into(), "The task was completed.".into())));
}

#[test]
fn trail_trace_with_nested_child_spans_loads_in_tree_order() {
    let l = variant("25-trail-nested-child-spans.json");
    assert_eq!(l.format, SourceFormat::OpenInference);
    let t = only(&l);
    let a = "CodeAgent.run";
    assert_eq!(shape(t), [("user", D), ("user", M), (a, M), (a, C), (a, R), (a, C), (a, R)]);
    assert_eq!(t.steps[3].tool_name.as_deref(), Some("web_search"));
    assert_eq!(errors(t), [6]);
    assert!(t.steps[6].content.contains("answer contradicts the observation"), "{}", t.steps[6].content);
    assert!(links(t).contains(&(3, 4, LinkKind::ToolResult)) && links(t).contains(&(5, 6, LinkKind::ToolResult)));
}

#[test]
fn utf16_export_from_powershell_is_decoded() {
    let l = variant("15-openai-chat-utf16le-powershell.json");
    assert_eq!(l.format, SourceFormat::OpenAiChat);
    let t = only(&l);
    assert_eq!(shape(t), [("user", M), ("assistant", M)]);
    assert_eq!(t.task, "What is 17 * 3?");
    assert_eq!(t.observed_output.as_deref(), Some("17 * 3 = 41."));
}

#[test]
fn a_thousand_level_nested_export_loads() {
    let deep = format!("{}\"x\"{}", "[".repeat(1000), "]".repeat(1000));
    let doc = format!(
        "{{\"messages\": [{{\"role\": \"user\", \"content\": \"q\"}}, {{\"role\": \"assistant\", \"content\": \"a\", \"extra\": {deep}}}]}}"
    );
    // On a small stack too: a deep document loads on a stack of its own.
    let loaded = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || ingest::parse("deep.json", doc.as_bytes(), None).map(|l| l.trajectories[0].steps.len()))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(loaded, Ok(2));
    // A document kept by the caller is dropped without recursion.
    let doc = ingest::parse_document("deep.json", format!("{}1{}", "[".repeat(5000), "]".repeat(5000)).as_bytes());
    std::thread::Builder::new().stack_size(256 * 1024).spawn(move || drop(doc)).unwrap().join().unwrap();
}

/// Every trace fixture of the project is detected as exactly one format: no other loader claims
/// it too (an ambiguous file would load differently depending on detection order).
#[test]
fn every_fixture_is_claimed_by_exactly_one_format() {
    let mut files = Vec::new();
    for dir in
        ["tests/fixtures/corpus", "tests/fixtures/handbuilt", VARIANTS, "tests/fixtures/tui", "data/who-and-when"]
    {
        files.extend(fs::dataset_files(&project(dir)).unwrap());
    }
    assert!(files.len() >= 147, "{}", files.len());
    let mut problems = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let doc = ingest::parse_document(&path.display().to_string(), &bytes).unwrap();
        let claims: Vec<SourceFormat> = ingest::SUPPORTED.into_iter().filter(|f| ingest::matches(&doc, *f)).collect();
        // A Who&When Hand-Crafted file is, by design, also a labelled Magentic-One log.
        let allowed = [SourceFormat::WhoWhenHand, SourceFormat::MagenticLog];
        let ok = claims.len() == 1 || claims == allowed;
        if !ok {
            problems.push(format!("{}: {claims:?}", path.display()));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

fn parse_str(name: &str, text: &str) -> Loaded {
    ingest::parse(name, text.as_bytes(), None).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn records_sent_twice_are_one_step_and_their_lines_are_named() {
    // Claude Code: the same uuid written twice.
    let line = r#"{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"go"}}"#;
    let answer = r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}"#;
    let l = parse_str("s.jsonl", &[line, answer, line, answer].join("\n"));
    assert_eq!(shape(only(&l)), [("user", M), ("claude", M)]);
    let msgs: Vec<String> = l.diagnostics.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        msgs,
        [
            "line 3: line repeats uuid \"u1\" of line 1; loaded once",
            "line 4: line repeats uuid \"a1\" of line 2; loaded once"
        ]
    );
    assert_eq!(l.skipped(), ingest::Skipped { records: 2, not_steps: 0 });

    // Codex: an enveloped line written twice.
    let call = r#"{"timestamp":"t1","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}}"#;
    let out = r#"{"timestamp":"t2","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"exit status 3"}}"#;
    let l = parse_str("r.jsonl", &[call, call, out].join("\n"));
    let t = only(&l);
    assert_eq!(shape(t), [("codex", C), ("codex", R)]);
    assert_eq!(errors(t), [1]);
    assert_eq!(l.diagnostics[0].to_string(), "line 2: line repeats line 1; loaded once");

    // OTLP JSON Lines: a span exported twice, a span that is its own parent.
    let span = |id: &str, parent: &str| {
        format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"{id}","parentSpanId":"{parent}","name":"execute_tool f","attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"execute_tool"}}}},{{"key":"gen_ai.tool.name","value":{{"stringValue":"f"}}}}]}}]}}]}}]}}"#
        )
    };
    let text =
        [span("1111111111111111", ""), span("1111111111111111", ""), span("2222222222222222", "2222222222222222")];
    let l = parse_str("t.otlp.jsonl", &text.join("\n"));
    assert_eq!(shape(only(&l)), [("assistant", C), ("assistant", R), ("assistant", C), ("assistant", R)]);
    let msgs: Vec<String> = l.diagnostics.iter().map(|d| d.to_string()).collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert!(msgs[0].starts_with("span 1111111111111111 (execute_tool f) at line 2 resourceSpans[0]"), "{msgs:?}");
    assert!(msgs[0].ends_with("was sent twice (first at span 1111111111111111 (execute_tool f) at line 1 resourceSpans[0].scopeSpans[0].spans[0]); loaded once, the first holds"), "{msgs:?}");
    assert!(
        msgs[1].ends_with("at line 3 resourceSpans[0].scopeSpans[0].spans[0]: is its own parent; loaded as a root"),
        "{msgs:?}"
    );
}

#[test]
fn a_failed_scope_whose_children_report_nothing_is_an_error_step() {
    let doc = r#"{"id": "t", "observations": [
        {"id": "a", "type": "AGENT", "name": "planner", "startTime": "1", "input": "plan"},
        {"id": "s", "type": "SPAN", "name": "fetch", "parentObservationId": "a", "startTime": "2",
         "level": "ERROR", "statusMessage": "connection reset by peer"},
        {"id": "g", "type": "GENERATION", "name": "llm", "parentObservationId": "a", "startTime": "3",
         "output": "I could not fetch the page.", "level": "ERROR", "statusMessage": "rate limited"}]}"#;
    let l = parse_str("lf.json", doc);
    let t = only(&l);
    assert_eq!(shape(t), [("user", D), ("planner", M), ("planner", M)]);
    assert_eq!(t.steps[0].content, "plan");
    assert_eq!(t.steps[1].content, "connection reset by peer");
    assert_eq!(t.steps[2].content, "I could not fetch the page.\n[error] rate limited");
    assert_eq!(errors(t), [1, 2]);
}

#[test]
fn agentchat_messages_as_json_lines_load_with_the_stop_reason() {
    let lines = [
        r#"{"source": "user", "type": "TextMessage", "content": "2+2?"}"#,
        r#"{"source": "coder", "type": "CodeGenerationEvent", "content": "print(2+2)", "code_blocks": [{"code": "print(2+2)", "language": "python"}]}"#,
        r#"{"source": "executor", "type": "CodeExecutionEvent", "content": "", "result": {"exit_code": 1, "output": "NameError"}}"#,
        r#"{"source": "coder", "type": "HandoffMessage", "content": "over to you", "target": "checker"}"#,
        r#"{"source": "checker", "type": "StopMessage", "content": "4"}"#,
        r#"{"messages": [], "stop_reason": "Text 'TERMINATE' mentioned"}"#,
    ];
    let l = parse_str("stream.jsonl", &lines.join("\n"));
    assert_eq!(l.format, SourceFormat::MagenticLog);
    let t = only(&l);
    assert_eq!(shape(t), [("user", M), ("coder", C), ("executor", R), ("coder", D), ("checker", M)]);
    assert_eq!(errors(t), [2]);
    assert_eq!(t.steps[3].delegate_to.as_deref(), Some("checker"));
    // The hand-off reaches the target's next step.
    assert_eq!(links(t), [(1, 2, LinkKind::Execution), (3, 4, LinkKind::Delegation)]);
    assert!(t.metadata.contains(&("stop_reason".into(), "Text 'TERMINATE' mentioned".into())));
    assert!(t.metadata.contains(&("messages_not_steps".into(), "TaskResult 1".into())));
}

#[test]
fn errors_reported_beside_the_step_reach_it() {
    // Claude Code: an API error recorded as a `system` line is the harness's error step.
    let lines = [
        r#"{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"go"}}"#,
        r#"{"type":"system","subtype":"api_error","level":"error","uuid":"s1","parentUuid":"u1","content":"API Error: 529 overloaded"}"#,
        r#"{"type":"assistant","uuid":"a1","parentUuid":"s1","message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}"#,
    ];
    let l = parse_str("s.jsonl", &lines.join("\n"));
    let t = only(&l);
    assert_eq!(shape(t), [("user", M), ("harness", M), ("claude", M)]);
    assert_eq!(errors(t), [1]);
    assert_eq!(t.steps[1].content, "API Error: 529 overloaded");
    assert_eq!(links(t), [(0, 1, LinkKind::Parent), (1, 2, LinkKind::Parent)]);

    // Codex: the exec event's exit code marks the call's result, whatever the output says.
    let lines = [
        r#"{"timestamp":"t1","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}}"#,
        r#"{"timestamp":"t2","type":"event_msg","payload":{"type":"exec_command_end","call_id":"c1","exit_code":2,"stdout":""}}"#,
        r#"{"timestamp":"t3","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"no such file"}}"#,
    ];
    let l = parse_str("r.jsonl", &lines.join("\n"));
    assert_eq!(errors(only(&l)), [1]);
}
