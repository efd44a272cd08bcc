//! Loading every trace format beyond Who&When from the project's fixtures: step counts, agents,
//! kinds and protocol links measured on the corpus (`tests/fixtures/corpus`, real files) and on
//! the hand-built fixtures (`tests/fixtures/handbuilt`, see its NOTE.md); broken variants load
//! with diagnostics or fail with a message naming the place; mutated files never panic.

use std::path::PathBuf;
use std::sync::LazyLock;

use falat::ingest::fs::read_related;
use falat::ingest::{self, FormatChoice, LoadError, Loaded, SUPPORTED, parse, parse_document, parse_with_related};
use falat::model::{Link, LinkKind, SourceFormat, StepKind, Trajectory};
use proptest::prelude::*;
use serde_json::{Value, json};

use StepKind::{Delegation, Message, Thought, ToolCall, ToolResult};

use super::support::{count, has, kinds, step_agents, tokens};

fn fixture(rel: &str) -> PathBuf {
    super::support::fixture_in("", rel)
}

/// The single trajectory of a fixture, checking the detected format.
fn one(rel: &str, format: SourceFormat) -> Trajectory {
    super::support::one_in("", rel, format, false)
}

// ---------------------------------------------------------------- OTel GenAI

#[test]
fn otel_genai_single_chat_span_yields_user_message_and_tool_call() {
    let t = one("corpus/otel-genai/genai-interlingua_raw_in.otlp.json", SourceFormat::OtelGenAi);
    assert_eq!(kinds(&t), [Message, ToolCall]);
    assert_eq!(t.agent_names(), ["user", "assistant"]);
    assert_eq!(t.task, "Where is order A-1187?");
    let call = &t.steps[1];
    assert_eq!(call.tool_name.as_deref(), Some("lookup_order"));
    assert_eq!(call.ids.refs, ["call_9RtYbK2mXqLp"]);
    assert_eq!(call.ids.id.as_deref(), Some("03491beea3cb073d"));
    assert_eq!(tokens(&t, 1), Some((412, 27)));
    assert!(t.agent_role("assistant").unwrap().contains("support agent"));
    assert!(t.links.is_empty());
}

#[test]
fn otel_genai_ndjson_with_nested_agents_legacy_attributes_and_base64_ids() {
    let t = one("handbuilt/otel/travel_agents.otlp.jsonl", SourceFormat::OtelGenAi);
    assert_eq!(kinds(&t), [Delegation, ToolCall, ToolResult, Delegation, Thought, ToolCall, ToolResult, Message]);
    assert_eq!(
        step_agents(&t),
        [
            "user",
            "travel_planner",
            "travel_planner",
            "travel_planner",
            "booking_agent",
            "booking_agent",
            "booking_agent",
            "booking_agent"
        ]
    );
    assert_eq!(t.steps[3].delegate_to.as_deref(), Some("booking_agent"));
    // The legacy indexed completion's call is answered by the execute_tool span's call id.
    assert!(has(&t, 1, 2, LinkKind::ToolResult));
    assert!(has(&t, 5, 6, LinkKind::ToolResult));
    assert!(has(&t, 0, 1, LinkKind::Delegation));
    assert!(has(&t, 3, 4, LinkKind::Delegation));
    // Base64 parent ids on line 2 resolve to the hex span ids of line 1.
    assert!(has(&t, 0, 3, LinkKind::Parent));
    assert!(has(&t, 3, 6, LinkKind::Parent));
    assert_eq!(t.steps[3].ids.id.as_deref(), Some("4444444444444444"));
    assert!(t.steps[6].is_error);
    assert!(t.steps[6].content.contains("date format invalid"));
    assert_eq!(tokens(&t, 1), Some((50, 12)));
    assert_eq!(tokens(&t, 4), Some((80, 20)));
    assert_eq!(t.task, "Find a hotel in Oslo for May 3");
    assert_eq!(t.observed_output.as_deref(), Some("Booked Hotel Nord for May 3."));
    assert!(t.agent_role("travel_planner").unwrap().contains("Search before"));
    assert!(t.agent_role("booking_agent").unwrap().contains("book_room"));
}

// ---------------------------------------------------------------- OpenInference

#[test]
fn openinference_otlp_reads_flattened_messages_and_token_counts() {
    let t = one("corpus/openinference/genai-interlingua_openinference_in.otlp.json", SourceFormat::OpenInference);
    assert_eq!(kinds(&t), [Message, ToolCall]);
    assert_eq!(t.agent_names(), ["user", "assistant"]);
    assert_eq!(t.steps[1].tool_name.as_deref(), Some("lookup_order"));
    assert_eq!(t.steps[1].ids.refs, ["call_9RtYbK2mXqLp"]);
    assert_eq!(t.steps[1].content, r#"{"order_id": "A-1187"}"#);
    assert_eq!(tokens(&t, 1), Some((412, 27)));
    assert_eq!(t.observed_output, None, "a tool call is not an answer");
}

#[test]
fn openinference_bare_attribute_map_links_tool_call_to_tool_message() {
    let t =
        one("corpus/openinference/arize_openinference_client_span_tool_calls.attrs.json", SourceFormat::OpenInference);
    assert_eq!(kinds(&t), [Message, Message, ToolCall, ToolResult, Message]);
    assert_eq!(step_agents(&t), ["user", "assistant", "assistant", "assistant", "assistant"]);
    assert_eq!(t.links, [Link { from: 2, to: 3, kind: LinkKind::ToolResult }]);
    assert_eq!(t.steps[3].content, "rainy, 57°F");
    assert_eq!(tokens(&t, 4), Some((97, 52)));
    assert_eq!(t.task, "Weather in Paris?");
    assert!(t.observed_output.clone().unwrap().contains("rainy"));
    // The map carries no span id: no step gets an invented one (reports would show it as the span's).
    assert!(t.steps.iter().all(|s| s.ids.id.is_none()), "{:?}", t.steps.iter().map(|s| &s.ids.id).collect::<Vec<_>>());
}

#[test]
fn openinference_span_list_with_agent_and_tool_kinds() {
    let spans = json!([
        {"name": "agent", "context": {"trace_id": "0x6c80880dbeb609e2ed41e06a6397a0dd", "span_id": "0xd9bdedf0df0b7208"},
         "kind": "SpanKind.INTERNAL", "parent_id": null, "start_time": "2024-05-08T21:46:11.000000Z",
         "status": {"status_code": "OK"},
         "attributes": {"openinference.span.kind": "AGENT", "agent.name": "researcher",
                        "input.value": "find the capital of Norway", "output.value": "Oslo"}},
        {"name": "search", "context": {"trace_id": "0x6c80880dbeb609e2ed41e06a6397a0dd", "span_id": "0x7eb5df0046c77cd2"},
         "parent_id": "0xd9bdedf0df0b7208", "start_time": "2024-05-08T21:46:12.000000Z",
         "span_kind": "TOOL", "status_code": "ERROR", "status_message": "timeout",
         "attributes": {"tool.name": "web_search", "input.value": "{\"q\": \"capital of Norway\"}"}}
    ]);
    let loaded = parse("spans.json", spans.to_string().as_bytes(), None).unwrap();
    assert_eq!(loaded.format, SourceFormat::OpenInference);
    let t = &loaded.trajectories[0];
    assert_eq!(kinds(t), [Delegation, ToolCall, ToolResult]);
    assert_eq!(step_agents(t), ["user", "researcher", "researcher"]);
    assert!(has(t, 1, 2, LinkKind::ToolResult));
    assert!(has(t, 0, 1, LinkKind::Parent));
    assert!(t.steps[2].is_error);
    assert_eq!(t.steps[2].content, "timeout");
    assert_eq!(t.task, "find the capital of Norway");
    assert_eq!(t.observed_output.as_deref(), Some("Oslo"));
}

#[test]
fn openinference_siblings_follow_the_instant_they_started_whatever_its_precision_and_offset() {
    // Listed `late`, `early`, `same`: `early` starts at 21:46:12Z written in +02:00 (a string
    // order would put it last), `late` 500 ms after it, and `same` at the very instant of
    // `late` written without fraction (a string order would put it first): it keeps its place
    // after `late`.
    let tool = |id: &str, start: &str, q: &str| {
        json!({"name": id, "context": {"trace_id": "0x01", "span_id": format!("0x0{}", id.len())},
               "parent_id": "0x0a", "start_time": start, "span_kind": "TOOL",
               "attributes": {"tool.name": id, "input.value": q, "output.value": "ok"}})
    };
    let spans = json!([
        {"name": "agent", "context": {"trace_id": "0x01", "span_id": "0x0a"}, "parent_id": null,
         "start_time": "2024-05-08T21:46:11Z",
         "attributes": {"openinference.span.kind": "AGENT", "agent.name": "researcher", "input.value": "go"}},
        tool("late", "2024-05-08T21:46:12.500Z", "second"),
        tool("early", "2024-05-08T23:46:12+02:00", "first"),
        tool("sametime", "2024-05-08T21:46:12.5Z", "third"),
    ]);
    let loaded = parse("spans.json", spans.to_string().as_bytes(), None).unwrap();
    assert_eq!(loaded.format, SourceFormat::OpenInference);
    let calls: Vec<&str> =
        loaded.trajectories[0].steps.iter().filter(|s| s.kind == ToolCall).map(|s| s.content.as_str()).collect();
    assert_eq!(calls, ["first", "second", "third"]);
}

#[test]
fn agents_sdk_and_langsmith_siblings_follow_the_instant_they_started() {
    // Agents SDK: `started_at` with and without a fraction, `Z` and `+00:00`.
    let span = |id: &str, start: &str, input: &str| {
        json!({"object": "trace.span", "id": id, "trace_id": "trace_1", "parent_id": "s0", "started_at": start,
               "span_data": {"type": "function", "name": id, "input": input, "output": "ok"}, "error": null})
    };
    let doc = json!({"data": [
        {"object": "trace", "id": "trace_1", "workflow_name": "w"},
        {"object": "trace.span", "id": "s0", "trace_id": "trace_1", "parent_id": null,
         "started_at": "2025-06-03T09:14:00Z", "span_data": {"type": "agent", "name": "Helper"}, "error": null},
        span("b", "2025-06-03T09:14:01.250Z", "second"),
        span("a", "2025-06-03T09:14:01Z", "first"),
        span("c", "2025-06-03T10:14:02+01:00", "third"),
    ]});
    let t = &parse("spans.json", doc.to_string().as_bytes(), None).unwrap().trajectories[0];
    let calls: Vec<&str> = t.steps.iter().filter(|s| s.kind == ToolCall).map(|s| s.content.as_str()).collect();
    assert_eq!(calls, ["first", "second", "third"]);
    // LangSmith runs without `dotted_order`: `start_time` at any precision.
    let run = |id: &str, start: &str, q: &str| {
        json!({"id": id, "name": id, "run_type": "tool", "trace_id": "r0", "parent_run_id": "r0",
               "start_time": start, "inputs": {"input": q}, "outputs": {"output": "ok"}})
    };
    let runs = json!([
        {"id": "r0", "name": "agent", "run_type": "chain", "trace_id": "r0", "parent_run_id": null,
         "start_time": "2025-06-03T09:14:00", "inputs": {"input": "go"}, "outputs": {"output": "done"}},
        run("r2", "2025-06-03T09:14:01.250000Z", "second"),
        run("r1", "2025-06-03T09:14:01Z", "first"),
    ]);
    let loaded = parse("runs.json", runs.to_string().as_bytes(), None).unwrap();
    assert_eq!(loaded.format, SourceFormat::LangSmith);
    let calls: Vec<&str> =
        loaded.trajectories[0].steps.iter().filter(|s| s.kind == ToolCall).map(|s| s.content.as_str()).collect();
    assert_eq!(calls, ["first", "second"]);
}

// ---------------------------------------------------------------- any-agent

#[test]
fn any_agent_openai_dump_inherits_the_agent_and_matches_tools_by_name() {
    let t = one("corpus/otel-genai/any-agent_OPENAI_trace.json", SourceFormat::AnyAgent);
    assert_eq!(kinds(&t), [Delegation, Message, ToolCall, ToolResult, ToolCall, ToolResult, Message]);
    assert_eq!(t.agent_names(), ["user", "any_agent"]);
    assert_eq!(&step_agents(&t)[2..], ["any_agent"; 5]);
    assert!(has(&t, 2, 3, LinkKind::ToolResult));
    assert!(has(&t, 4, 5, LinkKind::ToolResult));
    assert!(has(&t, 0, 2, LinkKind::Delegation));
    assert!(has(&t, 0, 6, LinkKind::Parent));
    assert_eq!(t.steps[3].tool_name.as_deref(), Some("get_current_time"));
    assert_eq!(tokens(&t, 2), Some((269, 16)));
    assert!(t.task.starts_with("Find what year it is"));
    assert!(t.observed_output.clone().unwrap().contains("Write the year to a file"));
    assert_eq!(t.agent_role("any_agent"), Some("Use the available tools to answer."));
}

#[test]
fn any_agent_smolagents_dump_ends_with_the_final_answer_tool() {
    let t = one("corpus/otel-genai/any-agent_SMOLAGENTS_trace.json", SourceFormat::AnyAgent);
    assert_eq!(t.steps.len(), 8);
    assert_eq!(kinds(&t), [Delegation, Message, ToolCall, ToolResult, ToolCall, ToolResult, ToolCall, ToolResult]);
    assert_eq!(t.agent_names(), ["user", "any_agent"]);
    assert!(has(&t, 6, 7, LinkKind::ToolResult));
    assert_eq!(t.steps[7].tool_name.as_deref(), Some("final_answer"));
    assert_eq!(count(&t, LinkKind::ToolResult), 3);
    assert_eq!(count(&t, LinkKind::Parent), 6);
}

// ---------------------------------------------------------------- Claude Code

const CLAUDE_SESSION: &str = "corpus/claude-code/codemie_incremental-subagents_turn-1.jsonl";

#[test]
fn claude_session_with_sub_agent_is_one_trajectory_hung_under_the_task_call() {
    let t = one(CLAUDE_SESSION, SourceFormat::ClaudeCode);
    assert_eq!(t.steps.len(), 66);
    assert_eq!(t.agent_names(), ["user", "claude", "solution-architect"]);
    let task = &t.steps[3];
    assert_eq!(task.kind, Delegation);
    assert_eq!(task.tool_name.as_deref(), Some("Task"));
    assert_eq!(task.delegate_to.as_deref(), Some("solution-architect"));
    // The sub-agent's 43 steps come right after the delegating step (its copy of the prompt
    // is left out), then the Task result.
    assert!(t.steps[4..=46].iter().all(|s| s.agent == "solution-architect"));
    assert_eq!(t.steps[47].agent, "claude");
    assert_eq!(t.steps[47].kind, ToolResult);
    assert!(has(&t, 3, 4, LinkKind::Delegation));
    assert!(has(&t, 3, 4, LinkKind::Parent));
    assert!(has(&t, 3, 47, LinkKind::ToolResult));
    assert!(has(&t, 0, 1, LinkKind::Parent));
    // Inside the sub-agent: Read (step 7) → its result (step 9), a failing Read (33 → 36).
    assert!(has(&t, 7, 9, LinkKind::ToolResult));
    assert!(has(&t, 33, 36, LinkKind::ToolResult));
    assert!(t.steps[36].is_error);
    assert_eq!(count(&t, LinkKind::ToolResult), 26);
    assert!(t.task.starts_with("@\"solution-architect (agent)\" analyze"));
    assert!(t.observed_output.clone().unwrap().starts_with("The solution-architect agent has completed"));
    assert_eq!(tokens(&t, 3), Some((29377, 511)));
}

#[test]
fn claude_session_without_its_sub_agent_file_says_which_file_is_missing() {
    let bytes = std::fs::read(fixture(CLAUDE_SESSION)).unwrap();
    let loaded = parse("turn-1.jsonl", &bytes, None).unwrap();
    let t = &loaded.trajectories[0];
    assert_eq!(t.steps.len(), 23);
    let d = &loaded.diagnostics[0];
    assert!(d.message.contains("sub-agent a485154"), "{d}");
    assert!(d.message.contains("subagents/agent-a485154.jsonl"), "{d}");
}

#[test]
fn claude_sub_agent_resolves_from_the_documented_subagents_folder() {
    let bytes = std::fs::read(fixture(CLAUDE_SESSION)).unwrap();
    let sub = fixture("corpus/claude-code/codemie_incremental-subagents_turn-1_subagents_agent-a485154.jsonl");
    let asked = std::cell::RefCell::new(Vec::new());
    let related = |rel: &str| {
        asked.borrow_mut().push(rel.to_string());
        (rel == "e9fb405b/subagents/agent-a485154.jsonl").then(|| std::fs::read(&sub).unwrap())
    };
    let loaded =
        parse_with_related("e9fb405b.jsonl", &bytes, &FormatChoice::Detect(SUPPORTED.to_vec()), &related).unwrap();
    assert_eq!(loaded.trajectories[0].steps.len(), 66);
    assert_eq!(asked.borrow()[0], "e9fb405b/subagents/agent-a485154.jsonl");
}

#[test]
fn claude_short_session_keeps_noise_lines_out_and_chains_parents_through_them() {
    let t = one("corpus/claude-code/spotter_short.jsonl", SourceFormat::ClaudeCode);
    assert_eq!(kinds(&t), [Message, Thought, Message, ToolCall, ToolCall, ToolResult, ToolResult, Message]);
    assert_eq!(step_agents(&t), ["user", "claude", "claude", "claude", "claude", "claude", "claude", "user"]);
    assert!(has(&t, 3, 5, LinkKind::ToolResult));
    assert!(has(&t, 4, 6, LinkKind::ToolResult));
    // Step 4's parent line is a progress line whose parent is step 3.
    assert!(has(&t, 3, 4, LinkKind::Parent));
    assert!(has(&t, 6, 7, LinkKind::Parent));
    assert!(t.steps[5].is_error && t.steps[6].is_error);
    assert_eq!(t.task, "mix phx.server doesnt seem to start");
    let noise = t.metadata.iter().find(|(k, _)| k == "lines_not_steps").unwrap();
    assert_eq!(noise.1, "file-history-snapshot 1, progress 3, system 2");
}

#[test]
fn claude_sidechain_files_load_on_their_own() {
    let t = one("corpus/claude-code/spotter_ae4a77f8_subagents_agent-aac57f5.jsonl", SourceFormat::ClaudeCode);
    assert_eq!(t.steps.len(), 28);
    assert_eq!(t.agent_names(), ["user", "agent-aac57f5"]);
    assert_eq!(count(&t, LinkKind::ToolResult), 12);
    assert!(has(&t, 2, 8, LinkKind::ToolResult));
    assert!(has(&t, 6, 12, LinkKind::ToolResult));
    assert!(t.task.starts_with("Search hex.pm"));

    let t = one(
        "corpus/claude-code/codemie_incremental-subagents_turn-1_subagents_agent-a485154.jsonl",
        SourceFormat::ClaudeCode,
    );
    assert_eq!(t.steps.len(), 44);
    assert_eq!(t.agent_names(), ["user", "agent-a485154"]);
    assert_eq!(count(&t, LinkKind::ToolResult), 20);
}

// ---------------------------------------------------------------- Codex

#[test]
fn codex_drops_event_copies_of_messages() {
    let t = one("corpus/codex-cli/agent-history_real_sessions_codex_session-01.jsonl", SourceFormat::Codex);
    assert_eq!(kinds(&t), [Message, Message, Message]);
    assert_eq!(step_agents(&t), ["user", "user", "codex"]);
    assert_eq!(t.task, "[REDACTED_PROMPT]");
    assert_eq!(t.observed_output.as_deref(), Some("[REDACTED_ASSISTANT_TEXT]"));
    assert_eq!(tokens(&t, 2), Some((22539, 10)));
    assert_eq!(t.agent_role("codex"), Some("[REDACTED_BASE_INSTRUCTIONS]\n\n[REDACTED_DEVELOPER_CONTEXT]"));
}

#[test]
fn codex_rollout_links_function_calls_to_outputs() {
    let t = one(
        "corpus/codex-cli/codemie_rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl",
        SourceFormat::Codex,
    );
    // Encrypted-only reasoning items are placeholder thoughts (steps 3 and 6), not dropped.
    assert_eq!(
        kinds(&t),
        [
            Message, Message, Message, Thought, ToolCall, ToolResult, Thought, ToolCall, ToolResult, Thought, ToolCall,
            ToolResult
        ]
    );
    assert_eq!(t.steps[3].content, "[encrypted reasoning]");
    assert_eq!(t.agent_names(), ["user", "codex"]);
    assert!(has(&t, 4, 5, LinkKind::ToolResult));
    assert!(has(&t, 7, 8, LinkKind::ToolResult));
    assert!(has(&t, 10, 11, LinkKind::ToolResult));
    assert_eq!(t.steps[5].content.lines().next(), Some("_bmad"));
    assert_eq!(t.steps[4].tool_name.as_deref(), Some("shell"));
    assert_eq!(tokens(&t, 4), Some((7266, 115)));
    assert_eq!(t.task, "what is current repository about? summarize purpuse and explain goals");
    assert!(t.steps[9].content.starts_with("**Clarifying documentation"));
}

const CODEX_SPAWN: &str = "corpus/codex-cli/codemie_turn-spawn-skill.HANDBUILT.jsonl";

#[test]
fn codex_spawn_agent_is_a_delegation_linked_to_the_wait_result() {
    let t = one(CODEX_SPAWN, SourceFormat::Codex);
    assert_eq!(kinds(&t), [Message, ToolCall, ToolResult, Delegation, ToolResult, ToolCall, ToolResult]);
    assert_eq!(t.steps[3].delegate_to.as_deref(), Some("explorer"));
    assert_eq!(t.steps[3].ids.refs, ["call_spawn1", "child-thread-uuid"]);
    assert!(has(&t, 1, 2, LinkKind::ToolResult));
    assert!(has(&t, 3, 4, LinkKind::ToolResult));
    assert!(has(&t, 5, 6, LinkKind::ToolResult));
    assert!(has(&t, 3, 6, LinkKind::Delegation));
    assert_eq!(t.task, "run a review");
}

#[test]
fn codex_spawned_thread_file_is_spliced_after_the_spawn() {
    let bytes = std::fs::read(fixture(CODEX_SPAWN)).unwrap();
    let dir = fixture("handbuilt/codex");
    let related = |rel: &str| read_related(&dir, rel);
    let loaded =
        parse_with_related("spawn.jsonl", &bytes, &FormatChoice::Detect(SUPPORTED.to_vec()), &related).unwrap();
    let t = &loaded.trajectories[0];
    assert_eq!(t.steps.len(), 10);
    assert_eq!(t.agent_names(), ["user", "codex", "Darwin"]);
    assert_eq!(t.steps[3].delegate_to.as_deref(), Some("Darwin"));
    assert_eq!(step_agents(t)[4..7], ["Darwin", "Darwin", "Darwin"]);
    assert_eq!(kinds(t)[4..7], [ToolCall, ToolResult, Message]);
    assert!(t.steps[5].is_error, "exit code 128 is an error");
    assert!(has(t, 3, 4, LinkKind::Delegation));
    assert!(has(t, 4, 5, LinkKind::ToolResult));
    assert!(has(t, 3, 9, LinkKind::Delegation));
}

// ---------------------------------------------------------------- LangSmith and Langfuse

#[test]
fn langsmith_flat_export_orders_by_dotted_order_and_follows_hand_offs() {
    let t = one("handbuilt/langsmith/supervisor_runs.flat.json", SourceFormat::LangSmith);
    assert_eq!(t.steps.len(), 17);
    assert_eq!(t.agent_names(), ["user", "LangGraph", "supervisor", "researcher", "math_expert"]);
    assert_eq!(
        kinds(&t)[..8],
        [Delegation, Delegation, ToolCall, Delegation, Delegation, ToolCall, ToolResult, Message]
    );
    // transfer_to_researcher: the model's call (2) is answered by the hand-off (3), which leads
    // to the researcher's first step (5).
    assert_eq!(t.steps[3].delegate_to.as_deref(), Some("researcher"));
    assert!(has(&t, 2, 3, LinkKind::ToolResult));
    assert!(has(&t, 3, 5, LinkKind::Delegation));
    assert!(has(&t, 5, 6, LinkKind::ToolResult));
    assert!(has(&t, 0, 1, LinkKind::Delegation));
    // The failing multiply run answers the first call by tool name; the retry by call id.
    assert!(has(&t, 12, 13, LinkKind::ToolResult));
    assert!(t.steps[13].is_error);
    assert!(t.steps[13].content.starts_with("TypeError"));
    assert!(has(&t, 14, 15, LinkKind::ToolResult));
    assert_eq!(tokens(&t, 2), Some((118, 14)));
    assert_eq!(t.task, "What was the population of Paris in 2023, doubled?");
    assert!(t.observed_output.clone().unwrap().ends_with("4,205,300."));
    assert!(t.agent_role("researcher").unwrap().contains("Do not do math"));
}

#[test]
fn langsmith_nested_child_runs_load_like_the_flat_list() {
    let flat = one("handbuilt/langsmith/supervisor_runs.flat.json", SourceFormat::LangSmith);
    let nested = one("handbuilt/langsmith/supervisor_run.nested.json", SourceFormat::LangSmith);
    let view = |t: &Trajectory| -> Vec<(String, StepKind, String)> {
        t.steps.iter().map(|s| (s.agent.clone(), s.kind, s.content.clone())).collect()
    };
    assert_eq!(view(&flat), view(&nested));
    let mut a = flat.links.clone();
    let mut b = nested.links.clone();
    a.sort_by_key(|l| (l.from, l.to, l.kind));
    b.sort_by_key(|l| (l.from, l.to, l.kind));
    assert_eq!(a, b);
}

/// Steps as `(agent, kind, tool name, delegate)` and links sorted, the view both message forms of
/// a LangSmith run must give alike.
type RunView = (Vec<(String, StepKind, Option<String>, Option<String>)>, Vec<(usize, usize, LinkKind)>);

fn run_view(t: &Trajectory) -> RunView {
    let steps = t.steps.iter().map(|s| (s.agent.clone(), s.kind, s.tool_name.clone(), s.delegate_to.clone())).collect();
    let mut links: Vec<_> = t.links.iter().map(|l| (l.from, l.to, l.kind)).collect();
    links.sort_by_key(|&(f, to, k)| (f, to, k as u8));
    (steps, links)
}

fn owned(v: &[&str]) -> Vec<Option<String>> {
    v.iter().map(|s| (!s.is_empty()).then(|| s.to_string())).collect()
}

#[test]
fn langsmith_recovered_error_reads_alike_serialised_or_as_dicts_whose_inputs_grew_after_the_call() {
    let lc = one("handbuilt/langsmith/r06_recovered_error.langsmith.json", SourceFormat::LangSmith);
    let dict = one("handbuilt/langsmith/x06_dictform_recovered.langsmith.json", SourceFormat::LangSmith);
    for t in [&lc, &dict] {
        assert_eq!(t.agent_names(), ["user", "LangGraph", "support_agent"]);
        assert_eq!(kinds(t), [Delegation, Delegation, ToolCall, ToolResult, Message, ToolCall, ToolResult, Message]);
        assert_eq!(
            step_agents(t),
            [
                "user",
                "LangGraph",
                "support_agent",
                "support_agent",
                "support_agent",
                "support_agent",
                "support_agent",
                "support_agent"
            ]
        );
        let tools: Vec<Option<String>> = t.steps.iter().map(|s| s.tool_name.clone()).collect();
        assert_eq!(tools, owned(&["", "", "get_invoice", "get_invoice", "", "get_invoice", "get_invoice", ""]));
        assert!(has(t, 2, 3, LinkKind::ToolResult));
        assert!(has(t, 5, 6, LinkKind::ToolResult));
        assert!(has(t, 1, 2, LinkKind::Delegation));
        assert_eq!(count(t, LinkKind::ToolResult), 2);
        assert!(t.steps[3].is_error);
        assert!(t.steps[3].content.starts_with("HTTPError: 504 Gateway Timeout"), "{}", t.steps[3].content);
        assert_eq!(t.steps[4].content, "The billing service timed out; retrying once.");
        let retries = t.steps.iter().filter(|s| s.content.contains("retrying once")).count();
        assert_eq!(retries, 1, "the retry message is shown once");
        assert_eq!(
            t.observed_output.as_deref(),
            Some("Invoice INV-3302 is open: you owe 148.20 EUR, due on 15 May 2025.")
        );
    }
    assert_eq!(run_view(&lc), run_view(&dict));
    let diags =
        super::support::load_fixture("", "handbuilt/langsmith/x06_dictform_recovered.langsmith.json").diagnostics;
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert!(diags[0].message.starts_with("2 model call(s) hold their own reply in their recorded input (run runs[2] (ChatOpenAI), run runs[4] (ChatOpenAI))"), "{}", diags[0].message);
}

#[test]
fn langsmith_wrong_delegation_reads_alike_serialised_or_as_dicts_whose_inputs_grew_after_the_call() {
    let lc = one("handbuilt/langsmith/r09_wrong_delegation.langsmith.json", SourceFormat::LangSmith);
    let dict = one("handbuilt/langsmith/x09_dictform_wrong_delegation.langsmith.json", SourceFormat::LangSmith);
    for t in [&lc, &dict] {
        assert_eq!(t.agent_names(), ["user", "LangGraph", "supervisor", "tech_support"]);
        assert_eq!(
            kinds(t),
            [
                Delegation, Delegation, ToolCall, Delegation, Delegation, ToolCall, ToolResult, Message, Delegation,
                Message
            ]
        );
        assert_eq!(
            step_agents(t),
            [
                "user",
                "LangGraph",
                "supervisor",
                "supervisor",
                "LangGraph",
                "tech_support",
                "tech_support",
                "tech_support",
                "LangGraph",
                "supervisor"
            ]
        );
        let tools: Vec<Option<String>> = t.steps.iter().map(|s| s.tool_name.clone()).collect();
        assert_eq!(
            tools,
            owned(&[
                "",
                "",
                "transfer_to_tech_support",
                "transfer_to_tech_support",
                "",
                "run_diagnostics",
                "run_diagnostics",
                "",
                "",
                ""
            ])
        );
        let delegates: Vec<Option<String>> = t.steps.iter().map(|s| s.delegate_to.clone()).collect();
        assert_eq!(
            delegates,
            owned(&["LangGraph", "supervisor", "", "tech_support", "tech_support", "", "", "", "supervisor", ""])
        );
        // The worker's report is the worker's, after the hand-off, not the supervisor's before it.
        assert!(t.steps[7].content.starts_with("I ran diagnostics on account FW-88213"));
        assert!(has(t, 2, 3, LinkKind::ToolResult));
        assert!(has(t, 3, 5, LinkKind::Delegation));
        assert!(has(t, 5, 6, LinkKind::ToolResult));
        assert!(has(t, 8, 9, LinkKind::Delegation));
        assert_eq!(count(t, LinkKind::ToolResult), 2);
        assert_eq!(count(t, LinkKind::Delegation), 5);
    }
    assert_eq!(run_view(&lc), run_view(&dict));
}

/// The steps of a langgraph-supervisor run as `(agent, kind, tool name, delegate)`.
fn supervisor_view(t: &Trajectory) -> Vec<(&str, StepKind, &str, &str)> {
    t.steps
        .iter()
        .map(|s| {
            (s.agent.as_str(), s.kind, s.tool_name.as_deref().unwrap_or(""), s.delegate_to.as_deref().unwrap_or(""))
        })
        .collect()
}

#[test]
fn langsmith_supervisor_over_prebuilt_agents_gives_each_agent_its_own_model_calls() {
    // langgraph-supervisor's `create_supervisor` over two `create_react_agent` workers: each
    // agent's graph runs its own `agent` (model) and `tools` nodes, which are that agent's steps,
    // not an agent called "agent".
    let t = one("handbuilt/langsmith/supervisor_refund_to_tech_agent.langsmith.json", SourceFormat::LangSmith);
    assert_eq!(t.agent_names(), ["user", "LangGraph", "supervisor", "tech_agent"]);
    assert_eq!(
        supervisor_view(&t),
        [
            ("user", Delegation, "", "LangGraph"),
            ("LangGraph", Delegation, "", "supervisor"),
            ("supervisor", ToolCall, "transfer_to_tech_agent", ""),
            ("supervisor", Delegation, "transfer_to_tech_agent", "tech_agent"),
            ("LangGraph", Delegation, "", "tech_agent"),
            ("tech_agent", ToolCall, "run_line_test", ""),
            ("tech_agent", ToolResult, "run_line_test", ""),
            ("tech_agent", Message, "", ""),
            ("tech_agent", Delegation, "transfer_back_to_supervisor", "supervisor"),
            ("LangGraph", Delegation, "", "supervisor"),
            ("supervisor", Message, "", ""),
        ]
    );
    // Each model call is its agent's: the supervisor's routing rules are its role, the worker's
    // prompt the worker's.
    let supervisor = t.agent_role("supervisor").expect("the supervisor's prompt");
    assert!(
        supervisor.contains(
            "Billing and refund requests go to billing_agent; device and connectivity problems go to tech_agent."
        ),
        "{supervisor}"
    );
    assert!(!supervisor.contains("line test"), "{supervisor}");
    let worker = t.agent_role("tech_agent").expect("the worker's prompt");
    assert!(worker.starts_with("You are tech_agent") && !worker.contains("billing_agent"), "{worker}");
    assert_eq!(t.agent_role("agent"), None);
    assert_eq!(tokens(&t, 2), Some((312, 17)));
    assert_eq!(tokens(&t, 10), Some((472, 38)));
    // The hand-off answers the supervisor's call (by the call id of the `Command` it returns)
    // and leads to the worker's first step; the worker's hand-back (an AI message the
    // supervisor's next model call reads, answered by its tool message) to the supervisor's reply.
    assert!(t.steps[3].content.starts_with("Successfully transferred to tech_agent"), "{}", t.steps[3].content);
    assert_eq!(t.steps[3].ids.refs, ["call_Qm4XvR8sT2nB6yL1"]);
    assert!(has(&t, 2, 3, LinkKind::ToolResult));
    assert!(has(&t, 3, 5, LinkKind::Delegation));
    assert!(has(&t, 5, 6, LinkKind::ToolResult));
    assert_eq!(t.steps[8].content, "Transferring back to supervisor");
    assert!(has(&t, 8, 10, LinkKind::Delegation));
    assert!(!t.steps.iter().any(|s| s.content.contains("Successfully transferred back")));
    let diags = super::support::load_fixture("", "handbuilt/langsmith/supervisor_refund_to_tech_agent.langsmith.json")
        .diagnostics;
    assert!(diags.is_empty(), "{diags:?}");
}

#[test]
fn langsmith_supervisor_twin_routes_to_the_billing_agent() {
    let t = one("handbuilt/langsmith/supervisor_refund_to_billing_agent_ok.langsmith.json", SourceFormat::LangSmith);
    assert_eq!(t.agent_names(), ["user", "LangGraph", "supervisor", "billing_agent"]);
    let delegates: Vec<(&str, &str)> =
        supervisor_view(&t).into_iter().filter(|s| s.1 == Delegation).map(|s| (s.0, s.3)).collect();
    assert_eq!(
        delegates,
        [
            ("user", "LangGraph"),
            ("LangGraph", "supervisor"),
            ("supervisor", "billing_agent"),
            ("LangGraph", "billing_agent"),
            ("billing_agent", "supervisor"),
            ("LangGraph", "supervisor")
        ]
    );
    let llm_agents: Vec<&str> =
        t.steps.iter().filter(|s| matches!(s.kind, ToolCall | Message)).map(|s| s.agent.as_str()).collect();
    assert_eq!(llm_agents, ["supervisor", "billing_agent", "billing_agent", "billing_agent", "supervisor"]);
    assert!(t.agent_role("billing_agent").unwrap().contains("refund only a payment that was taken twice"));
}

#[test]
fn langsmith_agent_graph_nodes_without_a_namespace_are_the_agent_above_them() {
    // The same supervisor run with no `langgraph_checkpoint_ns` (an older export): the `agent`
    // nodes' ancestors say whose they are. A single ReAct agent's top-level `agent` node stays the
    // agent `agent` (sql_share_of_orders_to_canada.json).
    let text =
        std::fs::read_to_string(fixture("handbuilt/langsmith/supervisor_refund_to_tech_agent.langsmith.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    for run in v["runs"].as_array_mut().unwrap() {
        if let Some(m) = run.pointer_mut("/extra/metadata").and_then(Value::as_object_mut) {
            m.remove("langgraph_checkpoint_ns");
        }
    }
    let bare = parse("runs.json", &serde_json::to_vec(&v).unwrap(), None).unwrap().trajectories.remove(0);
    let t = one("handbuilt/langsmith/supervisor_refund_to_tech_agent.langsmith.json", SourceFormat::LangSmith);
    assert_eq!(supervisor_view(&bare), supervisor_view(&t));
    assert_eq!(bare.agent_role("supervisor"), t.agent_role("supervisor"));
    let single = one("handbuilt/langsmith/sql_share_of_orders_to_canada.json", SourceFormat::LangSmith);
    assert_eq!(single.agent_names(), ["user", "LangGraph", "agent"]);
}

#[test]
fn langchain_message_dicts_read_like_the_serialised_messages() {
    use falat::ingest::messages::msg_from_value;
    let call = json!([{"id": "c1", "name": "get_invoice", "args": {"invoice_id": "INV-1"}, "type": "tool_call"}]);
    let serialised = json!({"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {"type": "ai", "content": "checking", "tool_calls": call, "name": "billing"}});
    let forms = [
        json!({"type": "ai", "data": {"type": "ai", "content": "checking", "tool_calls": call, "name": "billing",
            "additional_kwargs": {}, "id": null}}),
        json!({"type": "ai", "content": "checking", "tool_calls": call, "name": "billing"}),
        json!({"role": "assistant", "content": "checking", "name": "billing",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_invoice", "arguments": {"invoice_id": "INV-1"}}}]}),
    ];
    let want = msg_from_value(&serialised).unwrap();
    assert_eq!(want.role, "assistant");
    assert_eq!(want.name.as_deref(), Some("billing"));
    for f in &forms {
        assert_eq!(msg_from_value(f).as_ref(), Some(&want), "{f}");
    }
    let tool_lc = json!({"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"],
        "kwargs": {"type": "tool", "content": "ok", "tool_call_id": "c1"}});
    let tool_dict = json!({"type": "tool", "data": {"type": "tool", "content": "ok", "tool_call_id": "c1"}});
    let tool_role = json!({"role": "tool", "content": "ok", "tool_call_id": "c1"});
    let want = msg_from_value(&tool_lc);
    assert_eq!(msg_from_value(&tool_dict), want);
    assert_eq!(msg_from_value(&tool_role), want);
}

#[test]
fn langfuse_observations_nest_agents_and_mark_error_levels() {
    let t = one("handbuilt/langfuse/trip_planner_trace.json", SourceFormat::Langfuse);
    assert_eq!(
        kinds(&t),
        [Delegation, ToolCall, ToolResult, Delegation, ToolCall, ToolResult, Message, Message, Message]
    );
    assert_eq!(
        step_agents(&t),
        ["user", "planner", "planner", "planner", "budget_agent", "budget_agent", "budget_agent", "planner", "planner"]
    );
    assert!(has(&t, 1, 2, LinkKind::ToolResult));
    assert!(has(&t, 4, 5, LinkKind::ToolResult));
    assert!(has(&t, 3, 4, LinkKind::Delegation));
    assert!(has(&t, 0, 3, LinkKind::Parent));
    assert!(has(&t, 3, 6, LinkKind::Parent));
    assert!(t.steps[5].is_error);
    assert_eq!(t.steps[5].content, "HTTP 503 from the prices API");
    assert_eq!(tokens(&t, 4), Some((150, 21)), "legacy usage");
    assert_eq!(tokens(&t, 8), Some((402, 41)));
    assert_eq!(t.task, "Plan a day in Lyon for under 50 EUR, indoors if it rains.");
    assert!(t.observed_output.clone().unwrap().starts_with("Morning: Musée"));
    assert!(t.metadata.contains(&("session_id".into(), "sess-42".into())));
    // The EVENT at `level: WARNING` (no `statusMessage`) stays a step, marked as a warning.
    let warned: Vec<(usize, &str)> =
        t.steps.iter().filter_map(|s| s.warning.as_deref().map(|w| (s.index, w))).collect();
    assert_eq!(warned, [(7, "WARNING")]);
    assert_eq!(t.steps[7].content, "price estimated, not looked up");
}

#[test]
fn langfuse_rag_trace_follows_start_times_shows_its_warning_and_keeps_its_event_out_of_the_steps() {
    let t = one("handbuilt/langfuse/rag_ratelimit_warning.langfuse.json", SourceFormat::Langfuse);
    // The steps follow `startTime` (vector-search 07.219 before rewrite-query 07.230, answer
    // 08.447 before rerank 08.813), not the file's order.
    let tools: Vec<(usize, StepKind, &str)> =
        t.steps.iter().filter_map(|s| s.tool_name.as_deref().map(|n| (s.index, s.kind, n))).collect();
    assert_eq!(
        tools,
        [
            (0, ToolCall, "vector-search"),
            (1, ToolResult, "vector-search"),
            (4, ToolCall, "vector-search-filtered"),
            (5, ToolResult, "vector-search-filtered"),
            (8, ToolCall, "rerank"),
            (9, ToolResult, "rerank"),
            (10, ToolCall, "groundedness-check"),
            (11, ToolResult, "groundedness-check"),
        ]
    );
    assert_eq!(kinds(&t)[2..4], [Message, Message]);
    assert_eq!(t.steps[3].content, "Team plan API rate limit requests per minute per API key or per workspace");
    assert_eq!(t.steps[5].content, "[]\n[warning] 0 documents matched filter {plan: team}");
    assert_eq!(t.steps[5].warning.as_deref(), Some("0 documents matched filter {plan: team}"));
    assert!(!t.steps[5].is_error);
    assert_eq!(t.steps.iter().filter(|s| s.warning.is_some()).count(), 1);
    // The EVENT `response-sent` is no step (no assistant message says its payload).
    assert_eq!(t.steps.len(), 12);
    assert!(
        t.metadata
            .contains(&("event".into(), "response-sent {\"channel\":\"docs-widget\",\"latency_ms\":4920}".into()))
    );
    assert!(t.observed_output.clone().unwrap().starts_with("On the **Team** plan the API limit is"));
}

// ---------------------------------------------------------------- detection

/// Every corpus and hand-built file, with the format it must be detected as.
const ALL_FIXTURES: [(&str, SourceFormat); 16] = [
    ("corpus/otel-genai/genai-interlingua_raw_in.otlp.json", SourceFormat::OtelGenAi),
    ("handbuilt/otel/travel_agents.otlp.jsonl", SourceFormat::OtelGenAi),
    ("corpus/otel-genai/any-agent_OPENAI_trace.json", SourceFormat::AnyAgent),
    ("corpus/otel-genai/any-agent_SMOLAGENTS_trace.json", SourceFormat::AnyAgent),
    ("corpus/openinference/genai-interlingua_openinference_in.otlp.json", SourceFormat::OpenInference),
    ("corpus/openinference/arize_openinference_client_span_tool_calls.attrs.json", SourceFormat::OpenInference),
    (CLAUDE_SESSION, SourceFormat::ClaudeCode),
    ("corpus/claude-code/codemie_incremental-subagents_turn-1_subagents_agent-a485154.jsonl", SourceFormat::ClaudeCode),
    ("corpus/claude-code/spotter_ae4a77f8_subagents_agent-aac57f5.jsonl", SourceFormat::ClaudeCode),
    ("corpus/claude-code/spotter_short.jsonl", SourceFormat::ClaudeCode),
    ("corpus/codex-cli/agent-history_real_sessions_codex_session-01.jsonl", SourceFormat::Codex),
    (
        "corpus/codex-cli/codemie_rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl",
        SourceFormat::Codex,
    ),
    (CODEX_SPAWN, SourceFormat::Codex),
    ("handbuilt/codex/rollout-2026-05-12T10-00-03-child-thread-uuid.jsonl", SourceFormat::Codex),
    ("handbuilt/langsmith/supervisor_runs.flat.json", SourceFormat::LangSmith),
    ("handbuilt/langfuse/trip_planner_trace.json", SourceFormat::Langfuse),
];

/// The formats this file's loaders add.
const NEW_FORMATS: [SourceFormat; 7] = [
    SourceFormat::OtelGenAi,
    SourceFormat::OpenInference,
    SourceFormat::AnyAgent,
    SourceFormat::ClaudeCode,
    SourceFormat::Codex,
    SourceFormat::LangSmith,
    SourceFormat::Langfuse,
];

fn doc(rel: &str) -> ingest::Document {
    let bytes = std::fs::read(fixture(rel)).unwrap();
    parse_document(rel, &bytes).unwrap()
}

#[test]
fn each_fixture_matches_exactly_one_of_the_new_formats() {
    for (rel, format) in ALL_FIXTURES {
        let d = doc(rel);
        assert_eq!(ingest::detect(&d), Some(format), "{rel}");
        let claimed: Vec<SourceFormat> = NEW_FORMATS.into_iter().filter(|f| ingest::matches(&d, *f)).collect();
        assert_eq!(claimed, [format], "{rel}");
    }
}

#[test]
fn new_detectors_leave_who_and_when_openai_tau_and_falat_jsonl_alone() {
    let mut docs = vec![
        doc("corpus/openai-chat/agentrx_tau_failed_task2.json"),
        doc("corpus/autogen-magentic-one/agentrx_magentic_42576abe-0deb-4869-8c63-225c2d75a95a.json"),
        doc("corpus/autogen-magentic-one/agentrx_magentic_2dfc4c37-fec1-4518-84a7-10095d30ad75.json"),
    ];
    let inline = [
        // OpenAI chat messages.
        r#"[{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
             "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "r"}]"#,
        // A τ-bench record.
        r#"{"task_id": 2, "reward": 0.0, "info": {}, "traj": [{"role": "user", "content": "q"}]}"#,
        // Who&When algorithm-generated.
        r#"{"question": "q", "ground_truth": "a", "history": [{"name": "A", "role": "user",
            "content": "c"}], "mistake_agent": "A", "mistake_step": "0"}"#,
        // falat JSONL.
        "{\"agent\": \"planner\", \"kind\": \"message\", \"content\": \"hi\"}\n\
         {\"agent\": \"coder\", \"kind\": \"tool_call\", \"content\": \"ls\", \"id\": \"1\"}\n",
    ];
    for text in inline {
        docs.push(parse_document("inline", text.as_bytes()).unwrap());
    }
    for d in &docs {
        for f in NEW_FORMATS {
            assert!(!ingest::matches(d, f), "{f} claimed {}", ingest::describe(d));
        }
    }
    // The Magentic-One corpus files still reach their own loader.
    let t = one(
        "corpus/autogen-magentic-one/agentrx_magentic_2dfc4c37-fec1-4518-84a7-10095d30ad75.json",
        SourceFormat::MagenticLog,
    );
    assert_eq!(t.agent_names(), ["human", "Orchestrator", "WebSurfer", "Assistant"]);
}

// ---------------------------------------------------------------- broken variants

fn text(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).unwrap()
}

#[test]
fn truncated_jsonl_line_is_skipped_with_its_line_number() {
    let full = text("corpus/claude-code/spotter_short.jsonl");
    let lines: Vec<&str> = full.lines().collect();
    let mut broken: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    broken[9] = lines[9][..lines[9].len() / 2].to_string(); // the Glob call, line 10
    let loaded = parse("short.jsonl", broken.join("\n").as_bytes(), None).unwrap();
    assert_eq!(loaded.format, SourceFormat::ClaudeCode);
    let t = &loaded.trajectories[0];
    assert_eq!(t.steps.len(), 7);
    let d = &loaded.diagnostics[0];
    assert_eq!(d.line, Some(10));
    assert!(d.to_string().starts_with("line 10: skipped: not JSON"), "{d}");

    let codex = text(CODEX_SPAWN);
    let cut = &codex[..codex.len() - 40];
    let loaded = parse("spawn.jsonl", cut.as_bytes(), None).unwrap();
    assert_eq!(loaded.diagnostics[0].line, Some(12));
}

#[test]
fn truncated_json_document_fails_naming_line_and_column() {
    let full = text("corpus/otel-genai/genai-interlingua_raw_in.otlp.json");
    let err = parse("raw.json", &full.as_bytes()[..2000], None).unwrap_err();
    let LoadError::NotJson { line, column, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!((*line, *column), (74, 1));
    assert!(err.to_string().starts_with(&format!("raw.json:{line}:{column}: not JSON")));
}

/// The raw OTel corpus file with one attribute of its span replaced.
fn otel_with(edit: impl Fn(&mut Value)) -> Vec<u8> {
    let mut v: Value = serde_json::from_str(&text("corpus/otel-genai/genai-interlingua_raw_in.otlp.json")).unwrap();
    edit(&mut v["resourceSpans"][0]["scopeSpans"][0]["spans"][0]);
    v.to_string().into_bytes()
}

#[test]
fn unknown_operation_and_missing_parent_load_with_diagnostics() {
    let bytes = otel_with(|span| {
        span["parentSpanId"] = json!("ffffffffffffffff");
        span["attributes"][0]["value"] = json!({"stringValue": "frobnicate"});
    });
    let loaded = parse("raw.json", &bytes, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.trajectories[0].steps.len(), 2, "its messages are still read");
    let msgs: Vec<String> = loaded.diagnostics.iter().map(|d| d.to_string()).collect();
    assert!(
        msgs.iter()
            .any(|m| m.contains("span 03491beea3cb073d") && m.contains("unknown gen_ai operation \"frobnicate\"")),
        "{msgs:?}"
    );
    assert!(msgs.iter().any(|m| m.contains("parent \"ffffffffffffffff\" is not in the trace")), "{msgs:?}");
}

#[test]
fn unknown_openinference_kind_is_kept_with_a_diagnostic_and_its_text() {
    let mut v: Value =
        serde_json::from_str(&text("corpus/openinference/arize_openinference_client_span_tool_calls.attrs.json"))
            .unwrap();
    let known = parse("attrs.json", v.to_string().as_bytes(), None).unwrap();
    v["openinference.span.kind"] = json!("TELEPORTER");
    // A span of an unknown kind that carries `llm.input_messages` is read as the model call it is.
    let loaded = parse("attrs.json", v.to_string().as_bytes(), None).unwrap();
    let view = |l: &Loaded| -> Vec<(String, StepKind, String)> {
        l.trajectories[0].steps.iter().map(|s| (s.agent.clone(), s.kind, s.content.clone())).collect()
    };
    assert_eq!(view(&loaded), view(&known));
    assert_eq!(view(&loaded).len(), 5);
    let d = loaded.diagnostics[0].to_string();
    assert!(
        d.ends_with(
            "unknown openinference.span.kind \"TELEPORTER\" (id \"\", name \"gpt-4-0613\"); read as a model call \
             because it carries messages"
        ),
        "{d}"
    );

    let spans = json!([
        {"name": "a", "context": {"span_id": "0x01"}, "span_kind": "AGENT",
         "attributes": {"agent.name": "x", "input.value": "go"}},
        {"name": "b", "context": {"span_id": "0x02"}, "parent_id": "0x01", "span_kind": "TELEPORTER",
         "attributes": {"output.value": "zap"}},
        {"name": "c", "context": {"span_id": "0x03"}, "parent_id": "0x01", "span_kind": "TELEPORTER",
         "attributes": {}}
    ]);
    let loaded = parse("spans.json", spans.to_string().as_bytes(), None).unwrap();
    let t = &loaded.trajectories[0];
    // Its text is a step of the agent; the span without text is a scope.
    assert_eq!(kinds(t), [Delegation, Message]);
    assert_eq!(step_agents(t), ["user", "x"]);
    assert_eq!(t.steps[1].content, "zap");
    assert_eq!(t.steps[1].role, "TELEPORTER");
    let d: Vec<String> = loaded.diagnostics.iter().map(|d| d.to_string()).collect();
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(d[0].contains("span 02 (b)"), "{d:?}");
    assert!(
        d[0].ends_with(
            "unknown openinference.span.kind \"TELEPORTER\" (id \"02\", name \"b\"); kept as a message with its text"
        ),
        "{d:?}"
    );
    assert!(d[1].ends_with("(id \"03\", name \"c\"); kept as a scope (it carries no text)"), "{d:?}");
}

#[test]
fn langsmith_unknown_run_types_are_kept_with_a_diagnostic_and_their_text() {
    let mut runs: Value =
        serde_json::from_str(&text("handbuilt/langsmith/r06_recovered_error.langsmith.json")).unwrap();
    runs[5]["run_type"] = json!("function");
    runs[6]["run_type"] = json!("chat_model");
    let loaded = parse("runs.json", runs.to_string().as_bytes(), None).unwrap();
    let t = &loaded.trajectories[0];
    // The `chat_model` run carries messages: the model call of the final answer. The `function`
    // run carries the tool's output: a message with that text (its tool message then answers
    // the call from the next model input).
    assert_eq!(
        kinds(t),
        [Delegation, Delegation, ToolCall, ToolResult, Message, ToolCall, Message, ToolResult, Message]
    );
    assert_eq!(
        t.steps[6].content,
        "{\"invoice_id\": \"INV-3302\", \"amount_due_eur\": 148.2, \"due_date\": \"2025-05-15\", \"status\": \"open\"}"
    );
    assert_eq!(t.steps[6].role, "function");
    assert!(has(t, 5, 7, LinkKind::ToolResult));
    assert_eq!(t.steps[8].content, "Invoice INV-3302 is open: you owe 148.20 EUR, due on 15 May 2025.");
    let d: Vec<String> = loaded.diagnostics.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        d,
        [
            "run runs[5] (get_invoice): unknown run_type \"function\" (id \"00000000-0000-4000-8000-000000040006\", \
             name \"get_invoice\"); kept as a message with its text",
            "run runs[6] (ChatOpenAI): unknown run_type \"chat_model\" (id \"00000000-0000-4000-8000-000000041007\", \
             name \"ChatOpenAI\"); read as a model call because it carries messages",
        ]
    );
}

#[test]
fn langfuse_unknown_observation_types_are_kept_with_a_diagnostic_and_their_text() {
    let mut v: Value = serde_json::from_str(&text("handbuilt/langfuse/trip_planner_trace.json")).unwrap();
    for o in v["observations"].as_array_mut().unwrap() {
        match o["id"].as_str() {
            Some("obs-05") => o["type"] = json!("LLM_CALL"),
            Some("obs-06") => o["type"] = json!("HTTP_CALL"),
            _ => {}
        }
    }
    let loaded = parse("trace.json", v.to_string().as_bytes(), None).unwrap();
    let t = &loaded.trajectories[0];
    assert_eq!(
        kinds(t),
        [Delegation, ToolCall, ToolResult, Delegation, ToolCall, Message, ToolResult, Message, Message, Message]
    );
    // The LLM_CALL's messages give the budget agent's call as before; the failed HTTP_CALL keeps
    // its input text and its error.
    assert_eq!(t.steps[4].content, "{\"venue\": \"Musée des Confluences\"}");
    assert_eq!(t.steps[5].agent, "budget_agent");
    assert_eq!(t.steps[5].content, "Musée des Confluences\n[error] HTTP 503 from the prices API");
    assert!(t.steps[5].is_error);
    let d: Vec<String> = loaded.diagnostics.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        d,
        [
            "observation traces[0].observations[5] (budget-llm): unknown observation type \"LLM_CALL\" (id \"obs-05\", \
             name \"budget-llm\"); read as a model call because it carries messages",
            "observation traces[0].observations[6] (price_lookup): unknown observation type \"HTTP_CALL\" (id \
             \"obs-06\", name \"price_lookup\"); kept as a message with its text",
        ]
    );
}

#[test]
fn langfuse_observation_with_missing_parent_becomes_a_root() {
    let mut v: Value = serde_json::from_str(&text("handbuilt/langfuse/trip_planner_trace.json")).unwrap();
    let obs = v["observations"].as_array_mut().unwrap();
    let budget = obs.iter_mut().find(|o| o["id"] == "obs-04").unwrap();
    budget["parentObservationId"] = json!("obs-99");
    let loaded = parse("trace.json", v.to_string().as_bytes(), None).unwrap();
    let d = loaded.diagnostics[0].to_string();
    assert!(d.contains("observations[4] (budget_agent)"), "{d}");
    assert!(d.contains("parent \"obs-99\" is not in the trace; loaded as a root"), "{d}");
    let t = &loaded.trajectories[0];
    assert_eq!(t.steps.len(), 9);
    let to_budget = t.steps.iter().find(|s| s.delegate_to.as_deref() == Some("budget_agent")).unwrap();
    assert_eq!(to_budget.agent, "user", "a root agent is invoked by the user");
}

// ---------------------------------------------------------------- mutated files never panic

/// Every fixture's bytes, read once.
static FILES: LazyLock<Vec<(String, Vec<u8>)>> = LazyLock::new(|| {
    let mut out: Vec<(String, Vec<u8>)> =
        ALL_FIXTURES.iter().map(|(rel, _)| (rel.to_string(), std::fs::read(fixture(rel)).unwrap())).collect();
    out.push(("nested.json".into(), std::fs::read(fixture("handbuilt/langsmith/supervisor_run.nested.json")).unwrap()));
    out
});

#[derive(Debug, Clone)]
enum Mutation {
    /// Cut the file at this fraction of its length.
    Truncate(f64),
    /// Drop the line at this fraction of the line count.
    DropLine(f64),
    /// Overwrite an ASCII byte at this fraction of the length with this character.
    Replace(f64, char),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let ch = prop::sample::select(vec!['{', '}', '[', ']', '"', ',', ':', '0', 'x', ' ', '\n']);
    prop_oneof![
        (0.0..1.0f64).prop_map(Mutation::Truncate),
        (0.0..1.0f64).prop_map(Mutation::DropLine),
        (0.0..1.0f64, ch).prop_map(|(f, c)| Mutation::Replace(f, c)),
    ]
}

fn apply(bytes: &[u8], m: &Mutation) -> Vec<u8> {
    let at = |f: f64, len: usize| ((len as f64) * f) as usize;
    match *m {
        Mutation::Truncate(f) => bytes[..at(f, bytes.len())].to_vec(),
        Mutation::DropLine(f) => {
            let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
            let skip = at(f, lines.len());
            let kept: Vec<&[u8]> = lines.iter().enumerate().filter(|(i, _)| *i != skip).map(|(_, l)| *l).collect();
            kept.join(&b'\n')
        }
        Mutation::Replace(f, c) => {
            let mut out = bytes.to_vec();
            let i = at(f, out.len()).min(out.len().saturating_sub(1));
            if out.get(i).is_some_and(u8::is_ascii) {
                out[i] = c as u8;
            }
            out
        }
    }
}

/// What must hold for any successful load.
fn check(loaded: &Loaded) {
    for t in &loaded.trajectories {
        for (i, s) in t.steps.iter().enumerate() {
            assert_eq!(s.index, i);
        }
        for l in &t.links {
            assert!(l.from < t.steps.len() && l.to < t.steps.len(), "{l:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn mutated_fixtures_load_or_fail_without_panicking(
        file in 0..17usize,
        m in mutation(),
        forced in prop::option::of(prop::sample::select(NEW_FORMATS.to_vec())),
    ) {
        let (name, bytes) = &FILES[file % FILES.len()];
        let mutated = apply(bytes, &m);
        match parse(name, &mutated, forced) {
            Ok(loaded) => check(&loaded),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
