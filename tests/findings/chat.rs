//! Small OpenAI Chat Completions runs built in the tests, and what the offline signals find in
//! them: the helpers the `findings` test files share.

use falat::diagnosis::Signal;
use falat::model::Trajectory;
use falat::substrate::{Context, Substrate, signals};
use serde_json::{Value, json};

pub fn system(text: &str) -> Value {
    json!({"role": "system", "content": text})
}

pub fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

pub fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

/// An assistant turn with one tool call and the tool's answer: two messages, two steps.
pub fn call(id: &str, tool: &str, args: Value, result: &str) -> Vec<Value> {
    vec![
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": tool, "arguments": args.to_string()}}]}),
        json!({"role": "tool", "tool_call_id": id, "name": tool, "content": result}),
    ]
}

/// The messages as one OpenAI chat log, loaded through `falat::ingest` (its one trajectory).
pub fn load(messages: Vec<Value>) -> Trajectory {
    let bytes = serde_json::to_vec(&Value::Array(messages)).expect("serialises");
    let loaded = falat::ingest::parse("run.json", &bytes, None).expect("an OpenAI chat log");
    loaded.trajectories.into_iter().next().expect("one trajectory")
}

/// The one trajectory of a Who&When run (either subset) written as JSON.
pub fn who_and_when(run: &Value) -> Trajectory {
    let bytes = serde_json::to_vec(run).expect("serialises");
    falat::ingest::parse("run.json", &bytes, None).expect("a Who&When run").trajectories.remove(0)
}

/// FALAT's diagnosis of `t` with the offline judge, without ground truth.
pub fn falat(t: &Trajectory) -> falat::diagnosis::Diagnosis {
    falat_with(t, false)
}

/// FALAT's diagnosis of `t` with the offline judge, with the run's expected output when
/// `ground_truth`.
pub fn falat_with(t: &Trajectory, ground_truth: bool) -> falat::diagnosis::Diagnosis {
    falat::methods::run(
        falat::methods::Method::Falat,
        t,
        &falat::judge::heuristic::HeuristicJudge,
        &falat::methods::MethodOptions::new(ground_truth),
    )
}

/// The evidence of one finding (without ground truth).
pub fn evidence(t: &Trajectory, step: usize, signal: Signal) -> String {
    let sub = Substrate::build(t);
    let ctx = Context::of(t, &sub, false);
    signals::recall(&ctx, step)
        .unwrap_or_default()
        .into_iter()
        .find(|f| f.signal == signal)
        .map(|f| f.evidence.to_string())
        .unwrap_or_else(|| panic!("no {signal:?} at step {step}"))
}

/// The first trajectory of a file under `tests/fixtures` (`rel` is relative to it).
pub fn fixture(rel: &str) -> Trajectory {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    falat::ingest::parse(&path.display().to_string(), &bytes, None).expect("loads").trajectories.remove(0)
}

/// The first trajectory of the file at `path` read as `falat diagnose` reads it, with the files
/// beside it that it refers to (a Claude Code session's `subagents/` files).
pub fn load_beside(path: &std::path::Path) -> Trajectory {
    falat::ingest::fs::load_path(path, None).expect("loads").trajectories.remove(0)
}

/// [`load_beside`] of a file under `tests/fixtures`.
pub fn fixture_beside(rel: &str) -> Trajectory {
    load_beside(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel))
}

/// Every finding of the run, as `(step, signal)` in step order.
pub fn findings(t: &Trajectory) -> Vec<(usize, Signal)> {
    let sub = Substrate::build(t);
    let ctx = Context::of(t, &sub, false);
    (0..t.steps.len())
        .flat_map(|i| signals::recall(&ctx, i).unwrap_or_default().into_iter().map(move |f| (i, f.signal)))
        .collect()
}

/// A Claude Code session as its JSONL transcript writes it: the user's task, then per call an
/// assistant `tool_use` answered by the user's `tool_result` (`(tool, input, result, is_error)`),
/// then the assistant's closing text.
pub fn claude_code(task: &str, calls: &[(&str, Value, &str, bool)], closing: &str) -> Trajectory {
    let mut turns: Vec<ClaudeTurn<'_>> = calls
        .iter()
        .map(|(tool, input, result, is_error)| ClaudeTurn::Call(tool, input.clone(), result, *is_error))
        .collect();
    turns.push(ClaudeTurn::Text(closing));
    claude_session(task, &turns)
}

/// One assistant turn of [`claude_session`].
pub enum ClaudeTurn<'a> {
    /// A text message.
    Text(&'a str),
    /// A `tool_use` (tool, input) answered by the user's `tool_result` (result, is_error).
    Call(&'a str, Value, &'a str, bool),
    /// A later turn of the user.
    User(&'a str),
}

/// A Claude Code 2.x session JSONL transcript (records chained by `parentUuid`): the user's
/// task, then the assistant's turns in order, loaded through `falat::ingest` (its one trajectory).
pub fn claude_session(task: &str, turns: &[ClaudeTurn<'_>]) -> Trajectory {
    let mut records: Vec<Value> = Vec::new();
    let mut push = |kind: &str, message: Value| {
        let n = records.len();
        let parent = n.checked_sub(1).map(|p| format!("00000000-0000-4000-8000-{p:012}"));
        records.push(json!({
            "parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/w/shop",
            "sessionId": "5e55a7c1-0000-4000-8000-000000000000", "version": "2.0.37", "type": kind,
            "uuid": format!("00000000-0000-4000-8000-{n:012}"),
            "timestamp": format!("2026-11-30T14:00:{:02}.000Z", n % 60), "message": message
        }));
    };
    push("user", json!({"role": "user", "content": task}));
    for (k, turn) in turns.iter().enumerate() {
        match turn {
            ClaudeTurn::Text(text) => push(
                "assistant",
                json!({"role": "assistant", "type": "message", "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": text}]}),
            ),
            ClaudeTurn::User(text) => push("user", json!({"role": "user", "content": text})),
            ClaudeTurn::Call(tool, input, result, is_error) => {
                let id = format!("toolu_{k:02}");
                push(
                    "assistant",
                    json!({"role": "assistant", "type": "message", "model": "claude-sonnet-4-5",
                        "content": [{"type": "tool_use", "id": id, "name": tool, "input": input}]}),
                );
                push(
                    "user",
                    json!({"role": "user", "content": [
                        {"tool_use_id": id, "type": "tool_result", "content": result, "is_error": is_error}]}),
                );
            }
        }
    }
    let text: Vec<String> = records.iter().map(Value::to_string).collect();
    let loaded =
        falat::ingest::parse("session.jsonl", text.join("\n").as_bytes(), None).expect("a Claude Code session");
    loaded.trajectories.into_iter().next().expect("one trajectory")
}

/// The steps with a finding of `signal`.
pub fn steps_with(t: &Trajectory, signal: Signal) -> Vec<usize> {
    findings(t).into_iter().filter(|(_, s)| *s == signal).map(|(i, _)| i).collect()
}

/// The steps of `t` with a finding of `signal` whose evidence contains `words`, in order: one
/// kind of finding among those a signal gathers ("in the minor unit", "no step converts it").
pub fn steps_saying(t: &Trajectory, signal: Signal, words: &str) -> Vec<usize> {
    steps_with(t, signal).into_iter().filter(|&i| evidence(t, i, signal).contains(words)).collect()
}

/// Asserts that FALAT finds no failure in the run of fixture `rel`, and no finding at all.
pub fn no_failure(rel: &str) {
    let t = fixture(rel);
    assert_eq!(findings(&t), Vec::new(), "{rel}");
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (None, None), "{rel}: {}", d.reason);
    assert!(d.reason.starts_with("No failure found"), "{rel}: {}", d.reason);
}
