//! Messages for broken inputs, pinned with insta snapshots (`tests/snapshots/`): not JSON, empty,
//! not UTF-8, unknown format, bad records (skipped with a diagnostic) and no usable step.

use falat::ingest::{self, LoadError, Loaded};
use falat::model::SourceFormat;

fn error(name: &str, bytes: &[u8], format: Option<SourceFormat>) -> String {
    match ingest::parse(name, bytes, format) {
        Ok(l) => panic!("{name} loaded: {:?}", l.trajectories),
        Err(e) => e.to_string(),
    }
}

/// The diagnostics of a load that succeeds, one per line.
fn diagnostics(name: &str, bytes: &[u8]) -> String {
    let loaded: Loaded = ingest::parse(name, bytes, None).unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<String> = loaded.diagnostics.iter().map(|d| d.to_string()).collect();
    format!(
        "format: {}\nsteps: {}\n{}",
        loaded.format,
        loaded.trajectories.iter().map(|t| t.steps.len().to_string()).collect::<Vec<_>>().join(", "),
        lines.join("\n")
    )
}

#[test]
fn not_json() {
    let text = "{\"history\": [\n  {\"role\": \"human\", \"content\": \"hi\"},\n  {\"role\": \"WebSurfer\" \"content\": \"x\"}\n]}\n";
    insta::assert_snapshot!(error("run.json", text.as_bytes(), None));
}

#[test]
fn not_json_lines() {
    let text = "{\"agent\": \"a\", \"content\": \"x\"}\n{\"agent\": \"b\", content: \"y\"}\n{\"agent\": \"c\"\n";
    insta::assert_snapshot!(error("run.jsonl", text.as_bytes(), None));
}

#[test]
fn plain_text() {
    insta::assert_snapshot!(error("notes.txt", b"Agent run failed at step 3\n", None));
}

#[test]
fn empty() {
    insta::assert_snapshot!(error("empty.json", b"", None));
    assert!(matches!(ingest::parse("blank.json", b" \n\t\n", None), Err(LoadError::Empty { .. })));
}

#[test]
fn not_utf8() {
    let bytes = b"[{\"role\": \"user\", \"content\": \"ok\"},\n {\"role\": \"user\", \"content\": \"caf\xe9\"}]";
    insta::assert_snapshot!(error("latin1.json", bytes, None));
}

#[test]
fn unknown_format() {
    // A package manifest: JSON, but no trace.
    let bytes = br#"{"name": "left-pad", "version": "1.3.0", "dependencies": {}, "scripts": {"test": "tap"}}"#;
    insta::assert_snapshot!(error("package.json", bytes, None));
}

#[test]
fn unknown_format_of_a_list() {
    insta::assert_snapshot!(error("numbers.json", b"[1, 2, 3]", None));
}

#[test]
fn forced_format_that_does_not_fit() {
    insta::assert_snapshot!(error(
        "chat.json",
        br#"[{"role": "user", "content": "hi"}]"#,
        Some(SourceFormat::TauBench)
    ));
}

#[test]
fn bad_records_of_who_and_when() {
    let text = r#"{"question": "q?", "ground_truth": "4", "mistake_agent": "WebSurfer", "mistake_step": "3",
      "history": [
        {"role": "human", "content": "q?"},
        {"role": "Orchestrator (-> WebSurfer)", "content": 12},
        {"content": "no role"},
        {"role": "WebSurfer", "content": "found 5"},
        "just a string"
      ]}"#;
    insta::assert_snapshot!(diagnostics("hand.json", text.as_bytes()));
}

#[test]
fn bad_records_of_openai_chat() {
    let text = r#"{"messages": [
        {"role": "user", "content": "q?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"arguments": "{}"}}
        ]},
        {"role": "tool", "tool_call_id": "c9", "content": "result"},
        {"role": "assistant", "content": true},
        {"content": "no role"}
      ]}"#;
    insta::assert_snapshot!(diagnostics("chat.json", text.as_bytes()));
}

#[test]
fn bad_records_of_a_tau_bench_set() {
    let text = r#"[
        {"task_id": 1, "reward": 0.0, "info": "{'task': {'instruction': 'Buy a lamp.'", "traj": [
            {"role": "user", "content": "I want a lamp"}, {"role": "assistant", "content": "Done."}]},
        {"task_id": 2, "reward": 0.0, "traj": {"role": "user"}},
        {"task_id": 3, "reward": 1.0, "traj": []}
      ]"#;
    insta::assert_snapshot!(diagnostics("set.json", text.as_bytes()));
}

#[test]
fn bad_records_of_falat_jsonl() {
    let text = r#"{"falat": 1, "task": "t", "gold": {"agent": "b", "step": "two"}}
{"agent": "a", "content": "start", "id": "s1"}
{"agent": "", "content": "nobody"}
{"agent": "b", "content": "x", "kind": "answer"}
{"agent": "b", "content": "y", "tokens": {"input": -1}}
{"agent": "b", "content": "z", "parent": "s0", "is_error": "yes"}
{"agent": "b", "content": "z", "parent": "s0"}
not json at all
"#;
    insta::assert_snapshot!(diagnostics("run.jsonl", text.as_bytes()));
}

#[test]
fn no_usable_step() {
    let text =
        "{\"falat\": 1, \"task\": \"t\"}\n{\"agent\": 3, \"content\": \"x\"}\n{\"who\": \"b\", \"content\": \"y\"}\n";
    insta::assert_snapshot!(error("run.jsonl", text.as_bytes(), None));
    insta::assert_snapshot!(
        "no_usable_step_who_and_when",
        error(
            "empty-history.json",
            br#"{"question": "q", "history": [], "mistake_agent": "A", "mistake_step": "0"}"#,
            None
        )
    );
}

#[test]
fn bad_records_of_a_magentic_log() {
    let text = r#"[
        {"role": "human", "content": "q?"},
        {"role": "Orchestrator (-> WebSurfer)"},
        {"role": "WebSurfer", "content": "found it"}
      ]"#;
    insta::assert_snapshot!(diagnostics("log.json", text.as_bytes()));
}

#[test]
fn variants_that_cannot_be_read_are_named_with_what_they_lack() {
    let cases: [(&str, &[u8], Option<SourceFormat>); 6] = [
        ("results.json", br#"{"info": {}, "simulations": [{"task_id": "t"}]}"#, None),
        ("page.json", br#"{"data": [{"traceId": "t1", "name": "x"}], "meta": {"page": 1}}"#, None),
        ("team.json", br#"{"messages": [{"source": "a", "type": "NewKindOfMessage"}], "stop_reason": null}"#, None),
        ("rollout.jsonl", b"{\"record_type\":\"state\"}\n{\"type\":\"message\",\"role\":\"user\"}\n", None),
        ("rollout.jsonl", b"{\"id\":\"x\",\"timestamp\":\"t\"}\n{\"role\":\"user\"}\n", Some(SourceFormat::Codex)),
        ("obs.json", br#"{"data": [{"name": "x"}]}"#, Some(SourceFormat::Langfuse)),
    ];
    let all: Vec<String> = cases.iter().map(|(name, bytes, f)| error(name, bytes, *f)).collect();
    insta::assert_snapshot!(all.join("\n"));
}

#[test]
fn encodings_and_nesting_limits_are_named() {
    let mut odd_utf16 = vec![0xFF, 0xFE];
    odd_utf16.extend("[1]".encode_utf16().flat_map(u16::to_le_bytes));
    odd_utf16.push(0x20);
    let lone_surrogate = [0xFE, 0xFF, 0x00, b'[', 0xD8, 0x00, 0x00, b']'];
    let deep = format!("{}{}", "{\"a\":".repeat(20_001), "}".repeat(20_001));
    let all = [
        error("ps.json", &odd_utf16, None),
        error("be.json", &lone_surrogate, None),
        error("deep.json", format!("\n{deep}").as_bytes(), None),
    ];
    insta::assert_snapshot!(all.join("\n"));
}

#[test]
fn unknown_format_names_the_closest_formats_and_what_they_lack() {
    // A SWE-agent run without its `trajectory`, and a `history` with none of Who&When's keys.
    let partial = br#"{"history": [{"role": "user", "content": "fix it", "agent": "main"}], "info": {"exit_status": "submitted"}}"#;
    let bare = br#"{"history": [{"role": "user", "content": "fix it"}]}"#;
    insta::assert_snapshot!(format!("{}\n{}", error("run.traj", partial, None), error("history.json", bare, None)));
}

/// Files that are no JSON at all: each message names the file, the line and column where they
/// are known, what the file is, and what falat reads instead (every `--format` name).
#[test]
fn files_that_are_not_json_at_all_say_what_they_are_and_what_falat_reads() {
    let png: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
    let cases: [(&str, &[u8]); 8] = [
        // serde_json said "expected ident" for text that starts like true, false or null.
        ("notes.txt", b"the agent failed at step 3\nthen it stopped\n"),
        ("run.log", b"\n\n   nothing was found\n"),
        ("blank.json", b" \n\t\n"),
        ("answer.json", b"\n  42\n"),
        ("cut.json", br#"{"messages": ["#),
        ("image.png", png),
        ("run.json.gz", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xab\xae\x05\x00"),
        ("nul.json", b"[{\"role\": \"user\",\n \"content\": \"a\0b\"}]"),
    ];
    let all: Vec<String> = cases.iter().map(|(name, bytes)| error(name, bytes, None)).collect();
    // Where: file, line and column.
    let wheres: Vec<&str> = all.iter().map(|m| m.split(": ").next().unwrap()).collect();
    assert_eq!(
        wheres,
        [
            "notes.txt:1:1",
            "run.log:3:4",
            "blank.json",
            "answer.json:2:3",
            "cut.json:1:14",
            "image.png:1:1",
            "run.json.gz:1:1",
            "nul.json:2:15"
        ]
    );
    let formats: Vec<&str> = SourceFormat::ALL.iter().map(|f| f.as_str()).collect();
    for m in all.iter().filter(|m| !m.starts_with("cut.json")) {
        assert!(m.ends_with(&formats.join(", ")), "every format falat reads is listed: {m}");
        assert!(!m.contains("expected ident") && !m.contains("expected value"), "{m}");
    }
    insta::assert_snapshot!(all.join("\n"));
}

/// An OpenAI Chat Completions response object (or a streamed chunk) holds the model's reply and
/// none of the request's messages: it is named as what it is, with what to give instead, and no
/// format is named as "closest" by keys every JSON object may have ("id").
#[test]
fn a_chat_completions_response_is_named_and_no_format_is_closest_by_its_id() {
    let response = br#"{"id": "chatcmpl-9x", "object": "chat.completion", "created": 1718000000, "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris.", "refusal": null}, "logprobs": null, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14}}"#;
    let chunks =
        br#"[{"id": "chatcmpl-9x", "object": "chat.completion.chunk", "created": 1718000000, "model": "gpt-4o",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Par"}, "finish_reason": null}]}]"#;
    let only_generic = br#"{"id": "r-1", "level": 2, "messages": "see the log"}"#;
    let all = [
        error("reply.json", response, None),
        error("stream.json", chunks, None),
        error("record.json", only_generic, None),
    ];
    for m in &all {
        assert!(!m.contains("closest format"), "{m}");
    }
    assert!(all[0].contains("an OpenAI Chat Completions response object"), "{}", all[0]);
    assert!(all[0].ends_with("give the request's \"messages\" array with the reply appended"), "{}", all[0]);
    insta::assert_snapshot!(all.join("\n"));
}
