//! Broken session files a first user wrote (`tests/fixtures/handbuilt/{claude-code,codex,openhands}`,
//! see `handbuilt/NOTE.md`) and small inline records: nothing a loader cannot use is dropped
//! without a diagnostic naming its line (or JSON path), what was expected and what was found, and
//! a record whose shape is unambiguous is kept.

use falat::ingest::{self, Loaded};
use falat::model::{Diagnostic, LinkKind, SourceFormat, StepKind};

use super::support::{errors, load_fixture, one_in, shape};

use StepKind::{Message as M, Thought as Th, ToolCall as C, ToolResult as R};

const DIR: &str = "handbuilt";

fn tool_links(t: &falat::model::Trajectory) -> Vec<(usize, usize)> {
    t.links.iter().filter(|l| l.kind == LinkKind::ToolResult).map(|l| (l.from, l.to)).collect()
}

fn diags(l: &Loaded) -> Vec<(Option<usize>, &str)> {
    l.diagnostics.iter().map(|d: &Diagnostic| (d.line, d.message.as_str())).collect()
}

/// The coding session every Claude Code file below is cut from: the task, `grep`, the `Edit`,
/// `pytest`, the closing message.
const CLAUDE_SHAPE: [(&str, StepKind); 8] = [
    ("user", M),
    ("claude", C),
    ("claude", R),
    ("claude", C),
    ("claude", R),
    ("claude", C),
    ("claude", R),
    ("claude", M),
];

#[test]
fn claude_code_result_answering_no_tool_use_is_kept_unlinked_and_named() {
    let l = load_fixture(DIR, "claude-code/b2_orphan_result_claude.jsonl");
    assert_eq!(l.format, SourceFormat::ClaudeCode);
    let t = &l.trajectories[0];
    assert_eq!(shape(t), CLAUDE_SHAPE);
    // The pytest result (step 6) answers an id no call has: it stays a step, linked to nothing.
    assert_eq!(tool_links(t), [(1, 2), (3, 4)]);
    assert_eq!(t.steps[6].ids.refs, ["toolu_01XXXXXXXXXXXXXXXXXXXXXX"]);
    assert!(t.steps[6].content.contains("passed"), "{}", t.steps[6].content);
    assert_eq!(
        diags(&l),
        [(
            Some(7),
            "tool_result answers tool_use_id \"toolu_01XXXXXXXXXXXXXXXXXXXXXX\", which no tool_use of the file has; \
             kept as a result linked to no call"
        )]
    );
}

#[test]
fn claude_code_line_without_type_is_read_by_its_message_role() {
    let l = load_fixture(DIR, "claude-code/b3_missing_type_claude.jsonl");
    let t = &l.trajectories[0];
    // The Edit call on the untyped line is a step again, linked to its result.
    assert_eq!(shape(t), CLAUDE_SHAPE);
    assert_eq!(t.steps[3].tool_name.as_deref(), Some("Edit"));
    assert_eq!(tool_links(t), [(1, 2), (3, 4), (5, 6)]);
    assert!(!t.metadata.iter().any(|(k, _)| k == "lines_not_steps"), "{:?}", t.metadata);
    assert_eq!(
        diags(&l),
        [(Some(4), "line has no \"type\"; its message has role \"assistant\" and content: read as type \"assistant\"")]
    );
}

#[test]
fn claude_code_unknown_line_type_holding_a_message_is_named_not_read() {
    let l = load_fixture(DIR, "claude-code/b4_unknown_type_claude.jsonl");
    let t = &l.trajectories[0];
    assert_eq!(
        shape(t),
        [("user", M), ("claude", C), ("claude", R), ("claude", R), ("claude", C), ("claude", R), ("claude", M)]
    );
    assert_eq!(tool_links(t), [(1, 2), (4, 5)]);
    assert!(t.metadata.contains(&("lines_not_steps".into(), "assistant_v2 1".into())));
    assert_eq!(
        diags(&l),
        [
            (
                Some(4),
                "unknown line type \"assistant_v2\" holds a message with role \"assistant\" and 1 tool_use block (a \
                 newer Claude Code version may write it); not read"
            ),
            (
                Some(5),
                "tool_result answers tool_use_id \"toolu_01b21d4c13b08207a67d8b98\", which no tool_use of the file \
                 has; kept as a result linked to no call"
            ),
        ]
    );
}

#[test]
fn claude_code_lines_without_type_or_with_documented_non_step_types_stay_quiet_or_say_why() {
    let lines = [
        r#"{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"go"}}"#,
        // Documented bookkeeping lines: not steps, no diagnostic.
        r#"{"type":"file-history-snapshot","messageId":"u1","snapshot":{}}"#,
        r#"{"type":"summary","summary":"Go","leafUuid":"u1"}"#,
        // No type and no message: counted, quiet.
        r#"{"uuid":"x1","parentUuid":"u1"}"#,
        // No type, a message that is no turn: skipped with a diagnostic.
        r#"{"uuid":"x2","parentUuid":"u1","message":{"content":[{"type":"text","text":"?"}]}}"#,
        // An unknown type holding nothing to read: counted, quiet.
        r#"{"type":"telemetry_v3","uuid":"x3","parentUuid":"u1","data":{}}"#,
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}"#,
    ];
    let l = ingest::parse("s.jsonl", lines.join("\n").as_bytes(), None).unwrap();
    let t = &l.trajectories[0];
    assert_eq!(shape(t), [("user", M), ("claude", M)]);
    assert!(
        t.metadata.contains(&(
            "lines_not_steps".into(),
            "file-history-snapshot 1, summary 1, untyped 2, telemetry_v3 1".into()
        )),
        "{:?}",
        t.metadata
    );
    assert_eq!(
        diags(&l),
        [(
            Some(5),
            "line has no \"type\" and its message is not a turn (expected role user or assistant and content, found \
             a message with no role and 1 text block); skipped"
        )]
    );
}

#[test]
fn claude_code_failed_results_hold_the_tool_text_in_every_result_shape() {
    // A first user's eslint run: `toolUseResult` is the CLI's string "Error: ✖ 2 problems ...",
    // the block's `content` a string with the whole output, `is_error: true`.
    let t = one_in(DIR, "claude-code/r13_refused_bypass_claude.jsonl", SourceFormat::ClaudeCode, true);
    assert_eq!(t.steps[2].kind, R);
    assert!(t.steps[2].content.ends_with("\u{2716} 2 problems (2 errors, 0 warnings)"), "{}", t.steps[2].content);
    assert!(t.steps[2].content.contains("41:7  error  'retries' is assigned a value but never used"));
    assert_eq!(errors(&t), [2, 4]);
    assert_eq!(tool_links(&t), [(1, 2), (3, 4), (6, 7)]);
    // The same failure with the content as a list of text blocks, and with no content at all
    // (the CLI's string is then the result's text); `is_error` is the block's.
    let lines = [
        r#"{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"migrate"}}"#,
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"alembic revision"}}]}}"#,
        r#"{"type":"user","uuid":"r1","parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"ERROR [alembic] Multiple heads are present"},{"type":"text","text":"FAILED: Multiple heads are present"}]}]},"toolUseResult":"Error: Multiple heads are present"}"#,
        r#"{"type":"assistant","uuid":"a2","parentUuid":"r1","message":{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"npx eslint ."}}]}}"#,
        r#"{"type":"user","uuid":"r2","parentUuid":"a2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","is_error":true}]},"toolUseResult":"Error: \u2716 2 problems (2 errors, 0 warnings)"}"#,
        r#"{"type":"assistant","uuid":"a3","parentUuid":"r2","message":{"role":"assistant","content":[{"type":"tool_use","id":"t3","name":"Bash","input":{"command":"ls"}}]}}"#,
        r#"{"type":"user","uuid":"r3","parentUuid":"a3","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t3","content":"a.py"}]},"toolUseResult":{"stdout":"a.py","stderr":"","interrupted":false}}"#,
    ];
    let l = ingest::parse("s.jsonl", lines.join("\n").as_bytes(), None).unwrap();
    assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    let t = &l.trajectories[0];
    assert_eq!(
        shape(t),
        [("user", M), ("claude", C), ("claude", R), ("claude", C), ("claude", R), ("claude", C), ("claude", R)]
    );
    assert_eq!(t.steps[2].content, "ERROR [alembic] Multiple heads are present\nFAILED: Multiple heads are present");
    assert_eq!(t.steps[4].content, "Error: \u{2716} 2 problems (2 errors, 0 warnings)");
    assert_eq!(t.steps[6].content, "a.py");
    assert_eq!(errors(t), [2, 4]);
    assert_eq!(tool_links(t), [(1, 2), (3, 4), (5, 6)]);
}

const CODEX_SHAPE: [(&str, StepKind); 11] = [
    ("user", M),
    ("codex", C),
    ("codex", R),
    ("codex", C),
    ("codex", R),
    ("codex", Th),
    ("codex", C),
    ("codex", R),
    ("codex", C),
    ("codex", R),
    ("codex", M),
];

#[test]
fn codex_response_item_without_payload_type_is_read_by_its_fields() {
    let l = load_fixture(DIR, "codex/b3b_missing_payload_type_codex.jsonl");
    assert_eq!(l.format, SourceFormat::Codex);
    let t = &l.trajectories[0];
    // The apply_patch call (name + input + call_id: a custom_tool_call) is step 6, its output 7.
    assert_eq!(shape(t), CODEX_SHAPE);
    assert_eq!(t.steps[6].tool_name.as_deref(), Some("apply_patch"));
    assert!(t.steps[6].content.starts_with("*** Begin Patch"), "{}", t.steps[6].content);
    assert_eq!(t.steps[7].tool_name.as_deref(), Some("apply_patch"));
    assert_eq!(tool_links(t), [(1, 2), (3, 4), (6, 7), (8, 9)]);
    assert_eq!(errors(t), [2, 9]);
    assert_eq!(
        diags(&l),
        [(
            Some(12),
            "response_item payload has no \"type\"; read as a custom_tool_call (it has name, input and call_id)"
        )]
    );
}

#[test]
fn codex_unknown_line_type_holding_a_call_is_named_and_its_output_kept_unlinked() {
    let l = load_fixture(DIR, "codex/b4b_unknown_type_codex.jsonl");
    let t = &l.trajectories[0];
    let mut expected = CODEX_SHAPE.to_vec();
    expected.remove(6);
    assert_eq!(shape(t), expected);
    assert_eq!(t.steps[6].ids.refs, ["call_1fd147a29679ebc48f0e1e88"]);
    assert_eq!(t.steps[6].tool_name, None);
    assert_eq!(tool_links(t), [(1, 2), (3, 4), (7, 8)]);
    assert!(t.metadata.contains(&("lines_not_steps".into(), "turn_context 1, response_item_v2 1".into())));
    assert_eq!(
        diags(&l),
        [
            (
                Some(12),
                "unknown line type \"response_item_v2\" holds a custom_tool_call payload (a newer Codex version may \
                 write it); not read"
            ),
            (
                Some(13),
                "output answers call_id \"call_1fd147a29679ebc48f0e1e88\", which no call of the file has; kept as a \
                 result linked to no call"
            ),
        ]
    );
}

#[test]
fn codex_untyped_payloads_are_read_only_when_one_item_fits() {
    let lines = [
        r#"{"timestamp":"t","type":"session_meta","payload":{"id":"s","cwd":"/w"}}"#,
        r#"{"timestamp":"t","type":"response_item","payload":{"role":"user","content":[{"type":"input_text","text":"list files"}]}}"#,
        r#"{"timestamp":"t","type":"response_item","payload":{"name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}}"#,
        r#"{"timestamp":"t","type":"response_item","payload":{"call_id":"c1","output":"a.py"}}"#,
        r#"{"timestamp":"t","type":"response_item","payload":{"status":"completed"}}"#,
        // An unknown line type holding nothing a step could be: counted, quiet.
        r#"{"timestamp":"t","type":"world_state_v2","payload":{"cwd":"/w"}}"#,
    ];
    let l = ingest::parse("rollout.jsonl", lines.join("\n").as_bytes(), None).unwrap();
    assert_eq!(l.format, SourceFormat::Codex);
    let t = &l.trajectories[0];
    assert_eq!(shape(t), [("user", M), ("codex", C), ("codex", R)]);
    assert_eq!(t.task, "list files");
    assert_eq!(t.steps[1].tool_name.as_deref(), Some("shell"));
    assert_eq!(t.steps[2].content, "a.py");
    assert_eq!(tool_links(t), [(1, 2)]);
    assert_eq!(
        diags(&l),
        [
            (Some(2), "response_item payload has no \"type\"; read as a message (it has role and content)"),
            (
                Some(3),
                "response_item payload has no \"type\"; read as a function_call (it has name, arguments and call_id)"
            ),
            (
                Some(4),
                "response_item payload has no \"type\"; read as a function_call_output (it has call_id and output)"
            ),
            (
                Some(5),
                "response_item payload has no \"type\" and its fields name no item (expected role + content, name + \
                 arguments or input + call_id, or call_id + output; found fields status); skipped"
            ),
        ]
    );
}

#[test]
fn openhands_observation_whose_cause_names_no_event_is_named_and_placed() {
    let l = load_fixture(DIR, "openhands/b5_orphan_cause_openhands.json");
    assert_eq!(l.format, SourceFormat::OpenHands);
    let t = &l.trajectories[0];
    assert_eq!(t.steps.len(), 14);
    // `cause: 999` names nothing, but its tool_call_id is the call of step 4.
    assert_eq!(tool_links(t), [(1, 2), (4, 5), (7, 8), (9, 10), (11, 12)]);
    assert_eq!(t.steps[5].content, "bash: ./scripts/gen_protos.sh: Permission denied");
    assert_eq!(errors(t), [5, 10]);
    assert_eq!(
        diags(&l),
        [(
            None,
            "events[6]: run observation answers \"cause\" 999, which no earlier event has; linked to step 4 by its \
             tool_call_id"
        )]
    );
}

#[test]
fn openhands_unmatched_observations_say_how_they_were_placed() {
    let events = r#"[
      {"id": 0, "source": "user", "action": "message", "args": {"content": "build it"}},
      {"id": 1, "source": "agent", "action": "run", "args": {"command": "make"}},
      {"id": 2, "source": "agent", "observation": "run", "cause": 77, "content": "make: ok"},
      {"id": 3, "source": "agent", "observation": "run", "cause": 78, "content": "late output"},
      {"id": 4, "source": "user", "observation": "recall", "cause": 0, "content": "workspace info"}
    ]"#;
    let l = ingest::parse("oh.json", events.as_bytes(), Some(SourceFormat::OpenHands)).unwrap();
    let t = &l.trajectories[0];
    // The recall observation is context the harness added, a message of its source.
    assert_eq!(shape(t), [("user", M), ("agent", C), ("agent", R), ("agent", R), ("user", M)]);
    assert_eq!(tool_links(t), [(1, 2)]);
    // A recall caused by the user's message names an event that is no call: no diagnostic.
    assert_eq!(
        diags(&l),
        [
            (
                None,
                "events[2]: run observation answers \"cause\" 77, which no earlier event has; linked by order to step \
                 1, the oldest call without a result"
            ),
            (
                None,
                "events[3]: run observation answers \"cause\" 78, which no earlier event has; kept as a result \
                 linked to no call"
            ),
        ]
    );
}

#[test]
fn inspect_ai_and_adk_results_answering_no_call_are_named() {
    let log = r#"{"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}, "samples": [{"id": 1, "epoch": 1,
      "input": "add", "target": "3", "messages": [
        {"role": "user", "content": "add 1 and 2"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": "add", "arguments": {"a": 1, "b": 2}}]},
        {"role": "tool", "tool_call_id": "c9", "function": "add", "content": "3"}
      ], "output": {"completion": "3"}}]}"#;
    let l = ingest::parse("log.json", log.as_bytes(), Some(SourceFormat::InspectAi)).unwrap();
    let t = &l.trajectories[0];
    assert_eq!(t.steps.iter().map(|s| s.kind).collect::<Vec<_>>(), [M, C, R]);
    assert_eq!(tool_links(t), Vec::<(usize, usize)>::new());
    assert_eq!(
        diags(&l),
        [(
            None,
            "samples[0].messages[2]: tool message answers tool_call_id \"c9\", which no earlier assistant tool call \
             has; kept as a result linked to no call"
        )]
    );

    let events = r#"[
      {"invocation_id": "i1", "author": "user", "id": "e1", "content": {"role": "user", "parts": [{"text": "refund order 7"}]}},
      {"invocation_id": "i1", "author": "support", "id": "e2", "content": {"role": "model", "parts": [{"function_call": {"id": "f1", "name": "refund", "args": {"order": 7}}}]}},
      {"invocation_id": "i1", "author": "support", "id": "e3", "content": {"role": "user", "parts": [{"function_response": {"id": "f2", "name": "refund", "response": {"ok": true}}}]}}
    ]"#;
    let l = ingest::parse("adk.json", events.as_bytes(), Some(SourceFormat::GoogleAdk)).unwrap();
    let t = &l.trajectories[0];
    assert_eq!(t.steps.iter().map(|s| s.kind).collect::<Vec<_>>(), [M, C, R]);
    assert_eq!(tool_links(t), Vec::<(usize, usize)>::new());
    assert_eq!(
        diags(&l),
        [(
            None,
            "events[2]: function_response \"refund\" answers id \"f2\", which no earlier function_call has; kept as a \
             result linked to no call"
        )]
    );
}

#[test]
fn gemini_cli_records_of_an_unknown_type_are_named_with_what_they_hold() {
    let json = r#"{"sessionId": "s1", "projectHash": "p", "startTime": "2026-01-01T00:00:00Z", "messages": [
      {"id": "m1", "timestamp": "t", "type": "user", "content": "run the tests"},
      {"id": "m2", "timestamp": "t", "type": "gemini_v2", "content": "running",
       "toolCalls": [{"id": "c1", "name": "run_shell_command", "args": {"command": "go test"}, "status": "success"}]},
      {"id": "m3", "timestamp": "t", "type": "gemini", "content": "done"}
    ]}"#;
    let l = ingest::parse("session-1.json", json.as_bytes(), Some(SourceFormat::GeminiCli)).unwrap();
    assert_eq!(shape(&l.trajectories[0]), [("user", M), ("gemini", M)]);
    assert_eq!(
        diags(&l),
        [(
            None,
            "messages[1] skipped: unknown message type \"gemini_v2\" holding text and 1 tool call (expected user, \
             gemini, info, error or warning; a newer Gemini CLI version may write it)"
        )]
    );
    let lines = [
        r#"{"sessionId": "s1", "projectHash": "p", "startTime": "2026-01-01T00:00:00Z"}"#,
        r#"{"id": "m1", "timestamp": "t", "type": "user", "content": "run the tests"}"#,
        r#"{"id": "m2", "timestamp": "t", "type": "gemini_v2", "content": "running"}"#,
        r#"{"id": "m3", "timestamp": "t", "type": "gemini", "content": "done"}"#,
    ];
    let l = ingest::parse("session-1.jsonl", lines.join("\n").as_bytes(), Some(SourceFormat::GeminiCli)).unwrap();
    assert_eq!(shape(&l.trajectories[0]), [("user", M), ("gemini", M)]);
    assert_eq!(
        diags(&l),
        [(
            Some(3),
            "skipped: unknown message type \"gemini_v2\" holding text (expected user, gemini, info, error or warning; \
             a newer Gemini CLI version may write it)"
        )]
    );
}
