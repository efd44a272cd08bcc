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

/// Every finding of the run, as `(step, signal)` in step order.
pub fn findings(t: &Trajectory) -> Vec<(usize, Signal)> {
    let sub = Substrate::build(t);
    let ctx = Context::of(t, &sub, false);
    (0..t.steps.len())
        .flat_map(|i| signals::recall(&ctx, i).unwrap_or_default().into_iter().map(move |f| (i, f.signal)))
        .collect()
}
