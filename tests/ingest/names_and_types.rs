//! Tool results carry their call's tool name in every loader; Codex rollouts and `codex exec
//! --json` streams name the types they do not know when those hold a step; a record left out in
//! the middle of a run is placed between the steps it sat between.
//!
//! The Codex shapes follow codex-rs: `protocol/src/protocol.rs` (`RolloutItem`, `EventMsg`),
//! `protocol/src/models.rs` (`ResponseItem`, with `ghost_snapshot` and `compaction`), the rollout
//! policy's list of persisted events, and `exec/src/exec_events.rs` (`ThreadEvent` with
//! `item.plan.delta` and `request_user_input`, `ThreadItemDetails` with `plan` and
//! `collab_tool_call`), as of CLI 0.9x (early 2026).

use std::path::Path;

use falat::ingest::{self, Loaded, Place};
use falat::model::{LinkKind, SourceFormat, StepKind};

use super::support::{fixture_in, links_of, load_fixture, shape};

use StepKind::{Delegation as D, Message as M, Thought as Th, ToolCall as C, ToolResult as R};

fn diags(l: &Loaded) -> Vec<(Option<usize>, &str)> {
    l.diagnostics.iter().map(|d| (d.line, d.message.as_str())).collect()
}

fn parse(name: &str, lines: &[&str]) -> Loaded {
    ingest::parse(name, lines.join("\n").as_bytes(), None).unwrap_or_else(|e| panic!("{e}"))
}

/// Every trace file the tests ship, under `tests/fixtures` and `sample_traces`.
fn trace_files() -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![fixture_in("", ""), Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let ext = p.extension().and_then(|x| x.to_str()).unwrap_or("");
            if p.is_dir() {
                dirs.push(p);
            } else if ["json", "jsonl", "traj", "eval"].contains(&ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_result_linked_to_a_named_call_carries_the_calls_tool_name_in_every_loader() {
    let mut formats = std::collections::BTreeSet::new();
    let mut checked = 0;
    for path in trace_files() {
        let Ok(loaded) = ingest::fs::load_path(&path, None) else { continue };
        for t in &loaded.trajectories {
            for l in t.links.iter().filter(|l| l.kind == LinkKind::ToolResult) {
                let (call, result) = (&t.steps[l.from], &t.steps[l.to]);
                if result.kind != StepKind::ToolResult || call.tool_name.is_none() {
                    continue;
                }
                assert!(
                    result.tool_name.is_some(),
                    "{}: result {} answers the {:?} call {} but has no tool name",
                    path.display(),
                    result.index,
                    call.tool_name,
                    call.index
                );
                formats.insert(loaded.format.as_str());
                checked += 1;
            }
        }
    }
    assert!(checked > 200, "{checked}");
    for f in ["claude-code", "codex", "codex-exec", "openai-chat", "openhands", "langsmith", "google-adk"] {
        assert!(formats.contains(f), "{f}: {formats:?}");
    }
}

#[test]
fn a_claude_code_tool_result_is_named_after_its_tool_use() {
    let l = load_fixture("frameworks-b", "claude-code-inline-sidechains.jsonl");
    let t = &l.trajectories[0];
    assert_eq!(t.steps[3].tool_name.as_deref(), Some("Grep"));
    assert_eq!((t.steps[4].kind, t.steps[4].tool_name.as_deref()), (R, Some("Grep")));
    assert!(links_of(t, LinkKind::ToolResult).contains(&(3, 4)));
    // Every result of the session: the call it is linked to names the same tool.
    for l in t.links.iter().filter(|l| l.kind == LinkKind::ToolResult) {
        assert_eq!(t.steps[l.to].tool_name, t.steps[l.from].tool_name, "{l:?}");
    }
    // The `Task` call's result is the delegation's reply, named `Task` too.
    let task = t.steps.iter().position(|s| s.kind == D).unwrap();
    let reply = t.links.iter().find(|l| l.from == task && l.kind == LinkKind::ToolResult).unwrap().to;
    assert_eq!(t.steps[reply].tool_name.as_deref(), Some("Task"));
}

#[test]
fn a_claude_code_step_keeps_the_line_it_was_read_from() {
    let l = load_fixture("handbuilt", "claude-code/b2_orphan_result_claude.jsonl");
    let lines: Vec<Option<usize>> = l.trajectories[0].steps.iter().map(|s| s.ids.line).collect();
    assert!(lines.iter().all(Option::is_some), "{lines:?}");
    assert!(lines.windows(2).all(|w| w[0] <= w[1]), "{lines:?}");
}

/// A rollout with lines of types codex-rs defines but falat does not read, and lines of types it
/// does not define: `(line, what)` of each.
const ROLLOUT: [&str; 14] = [
    r#"{"timestamp":"2026-02-03T10:00:00.000Z","type":"session_meta","payload":{"id":"0199c0de-0000-7000-8000-000000000001","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.98.0"}}"#,
    r#"{"timestamp":"2026-02-03T10:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Why does make test fail?"}]}}"#,
    r#"{"timestamp":"2026-02-03T10:00:02.000Z","type":"event_msg","payload":{"type":"task_started","model_context_window":272000}}"#,
    r#"{"timestamp":"2026-02-03T10:00:03.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"make test\"]}","call_id":"call_a"}}"#,
    r#"{"timestamp":"2026-02-03T10:00:04.000Z","type":"event_msg","payload":{"type":"exec_command_begin","call_id":"call_a","turn_id":"1","command":["bash","-lc","make test"],"cwd":"/w","parsed_cmd":[]}}"#,
    r#"{"timestamp":"2026-02-03T10:00:05.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_a","output":"{\"output\":\"FAIL: test_parse\\n\",\"metadata\":{\"exit_code\":2}}"}}"#,
    r#"{"timestamp":"2026-02-03T10:00:06.000Z","type":"response_item","payload":{"type":"ghost_snapshot","ghost_commit":{"id":"4f2a","parent":null,"preexisting_untracked_files":[]}}}"#,
    r#"{"timestamp":"2026-02-03T10:00:07.000Z","type":"event_msg","payload":{"type":"agent_message_v2","message":"The parser rejects ISO week dates.","phase":"commentary"}}"#,
    r#"{"timestamp":"2026-02-03T10:00:08.000Z","type":"response_item","payload":{"type":"tool_search_call","call_id":"call_b","name":"tool_search","arguments":"{\"query\":\"date\"}"}}"#,
    r#"{"timestamp":"2026-02-03T10:00:09.000Z","type":"event_msg","payload":{"type":"rate_limits_updated","primary":{"used_percent":12.5}}}"#,
    r#"{"timestamp":"2026-02-03T10:00:10.000Z","type":"event_log","payload":{"type":"agent_message","message":"Fixing parse_week_date now."}}"#,
    r#"{"timestamp":"2026-02-03T10:00:11.000Z","type":"response_item","payload":{"type":"compaction","encrypted_content":"gAAAA"}}"#,
    r#"{"timestamp":"2026-02-03T10:00:12.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"make test fails in test_parse: ISO week dates are rejected."}]}}"#,
    r#"{"timestamp":"2026-02-03T10:00:13.000Z","type":"event_msg","payload":{"type":"task_complete","last_agent_message":"make test fails in test_parse: ISO week dates are rejected."}}"#,
];

#[test]
fn codex_types_a_newer_cli_may_write_are_named_when_they_hold_a_step_and_documented_ones_stay_quiet() {
    let l = parse("rollout-2026-02-03.jsonl", &ROLLOUT);
    assert_eq!(l.format, SourceFormat::Codex);
    let t = &l.trajectories[0];
    assert_eq!(shape(t), [("user", M), ("codex", C), ("codex", R), ("codex", M)]);
    assert_eq!(t.steps[2].tool_name.as_deref(), Some("shell"));
    assert_eq!(
        diags(&l),
        [
            (
                Some(8),
                "event_msg of unknown type \"agent_message_v2\" holds a message (a newer Codex version may write \
                 it); not read"
            ),
            (
                Some(9),
                "response_item of unknown type \"tool_search_call\" holds a call (a newer Codex version may write \
                 it); not read"
            ),
            (
                Some(11),
                "unknown line type \"event_log\" holds a message (a newer Codex version may write it); not read"
            ),
        ]
    );
    // task_started, exec_command_begin, ghost_snapshot and compaction are codex-rs's own types
    // that hold no step: quiet. Unknown types that hold none are counted.
    assert!(
        t.metadata.contains(&("lines_not_steps".into(), "event_msg rate_limits_updated 1, event_log 1".into())),
        "{:?}",
        t.metadata
    );
    assert_eq!(l.skipped().records, 3);
}

#[test]
fn a_skipped_codex_record_is_placed_between_the_steps_around_it() {
    let l = parse("rollout-2026-02-03.jsonl", &ROLLOUT);
    let places: Vec<Place> = l.skip_places().into_iter().map(|(_, p)| p).collect();
    // Lines 8, 9 and 11 sit between the shell result (line 6, step 2) and the answer (line 13).
    assert_eq!(places, [8, 9, 11].map(|line| Place { line, after: Some(2), before: Some(3) }).to_vec(), "{places:?}");
    assert_eq!(places[0].to_string(), "between steps 2 and 3");
    assert!(
        l.described()[0].starts_with("line 8 (between steps 2 and 3): event_msg of unknown type"),
        "{:?}",
        l.described()
    );
    // A cut first or last line: before the first step, after the last.
    let mut cut = ROLLOUT.to_vec();
    cut[1] = r#"{"timestamp":"2026-02-03T10:00:01.000Z","type":"response_item","payload":{"type":"mess"#;
    cut.push(r#"{"timestamp":"2026-02-03T10:00:14.000Z","type":"response_item","payload":{"type":"message","ro"#);
    let l = parse("rollout-cut.jsonl", &cut);
    let places: Vec<String> = l.skip_places().into_iter().map(|(_, p)| p.to_string()).collect();
    assert_eq!(places.first().map(String::as_str), Some("before step 0"), "{places:?}");
    assert_eq!(places.last().map(String::as_str), Some("after step 2, the last"), "{places:?}");
}

#[test]
fn a_place_is_known_only_where_steps_keep_their_lines() {
    // Google ADK events keep no line on their steps: the cut line has a line but no place.
    let l = load_fixture("frameworks", "adk-truncated-last-line.jsonl");
    assert!(l.diagnostics.iter().any(ingest::is_skip), "{:?}", l.diagnostics);
    assert_eq!(l.skip_places(), []);
    assert_eq!(l.described(), l.diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>());
}

/// A `codex exec --json` stream of a newer CLI: a plan item and its deltas, a question to the
/// user, a collab spawn, an event of a type falat does not know that holds an item, and one that
/// holds nothing.
const EXEC: [&str; 13] = [
    r#"{"type":"thread.started","thread_id":"0199c0de-0000-7000-8000-0000000000aa"}"#,
    r#"{"type":"turn.started"}"#,
    r#"{"type":"item.started","item":{"id":"item_0","type":"plan","text":""}}"#,
    r#"{"type":"item.plan.delta","item_id":"item_0","delta":"1. Find the parser"}"#,
    r#"{"type":"item.completed","item":{"id":"item_0","type":"plan","text":"1. Find the parser\n2. Fix it"}}"#,
    r#"{"type":"request_user_input","id":"turn_1","call_id":"call_q","questions":[{"id":"q1","header":"Scope","question":"Fix only the parser?","options":[]}]}"#,
    r#"{"type":"item.started","item":{"id":"item_1","type":"collab_tool_call","tool":"spawn_agent","sender_thread_id":"t0","receiver_thread_ids":[],"prompt":"Find every caller of parse_week_date","agents_states":{},"status":"in_progress"}}"#,
    r#"{"type":"item.completed","item":{"id":"item_1","type":"collab_tool_call","tool":"spawn_agent","sender_thread_id":"t0","receiver_thread_ids":["t1"],"prompt":"Find every caller of parse_week_date","agents_states":{"t1":{"status":"running","message":null}},"status":"completed"}}"#,
    r#"{"type":"item.snapshot","item":{"id":"item_2","type":"agent_message","text":"Looking at the callers."}}"#,
    r#"{"type":"turn.diff_updated","unified_diff_len":0}"#,
    r#"{"type":"item.completed","item":{"id":"item_3","type":"command_execution","command":"cargo test","aggregated_output":"test result: ok","exit_code":0,"status":"completed"}}"#,
    r#"{"type":"item.completed","item":{"id":"item_4","type":"agent_message","text":"Fixed; cargo test passes."}}"#,
    r#"{"type":"turn.completed","usage":{"input_tokens":900,"cached_input_tokens":0,"output_tokens":80}}"#,
];

#[test]
fn a_newer_codex_exec_stream_is_still_detected_and_its_unknown_events_are_named() {
    let l = parse("exec.jsonl", &EXEC);
    assert_eq!(l.format, SourceFormat::CodexExec);
    let t = &l.trajectories[0];
    assert_eq!(
        shape(t),
        [("codex", Th), ("codex", C), ("codex", D), ("codex", R), ("codex", C), ("codex", R), ("codex", M)]
    );
    assert_eq!(t.steps[0].content, "1. Find the parser\n2. Fix it");
    assert_eq!(
        (t.steps[1].tool_name.as_deref(), t.steps[1].content.as_str()),
        (Some("request_user_input"), "Fix only the parser?")
    );
    assert_eq!(t.steps[2].tool_name.as_deref(), Some("spawn_agent"));
    assert_eq!(t.steps[2].delegate_to.as_deref(), Some("t1"));
    assert_eq!(t.steps[3].content, "status: completed\nt1: running");
    assert_eq!(t.steps[3].tool_name.as_deref(), Some("spawn_agent"));
    assert_eq!(links_of(t, LinkKind::ToolResult), [(2, 3), (4, 5)]);
    assert_eq!(
        diags(&l),
        [(
            Some(9),
            "unknown event type \"item.snapshot\" holds an item (a newer Codex version may write it); not read"
        )]
    );
    assert!(
        t.metadata.contains(&(
            "events_not_steps".into(),
            "thread.started 1, turn.started 1, item.plan.delta 1, unknown 1, turn.completed 1".into()
        )),
        "{:?}",
        t.metadata
    );
    // Each step keeps the line its item (or event) first appeared on.
    let lines: Vec<Option<usize>> = t.steps.iter().map(|s| s.ids.line).collect();
    assert_eq!(lines, [3, 6, 7, 7, 11, 11, 12].map(Some));
    assert_eq!(l.skip_places().into_iter().map(|(_, p)| p.to_string()).collect::<Vec<_>>(), ["between steps 3 and 4"]);
}
