//! LangSmith run exports: `Run` objects as a flat list, under `runs`, or one root with nested
//! `child_runs`.
//!
//! Schema: langchain-ai/langsmith-sdk@bc8dd67 `python/langsmith/schemas.py` (`TRACE_FORMATS.md`
//! row 7a). A run is `{id, name, run_type, start_time, end_time, inputs, outputs, error, status,
//! parent_run_id, trace_id, dotted_order, child_runs, extra: {metadata: {langgraph_node}},
//! prompt_tokens, completion_tokens}`. Each run becomes a [`spantree`] node, siblings ordered by
//! `dotted_order` (else `start_time`):
//! - the root run and `chain` runs that are their own LangGraph node (`extra.metadata.
//!   langgraph_node` equal to the run name, except `__start__` / `__end__` / `tools`) → agent
//!   invocations; other chains and `prompt` / `parser` runs → scopes;
//! - `llm` runs → model calls: `inputs.messages` (LangChain messages, possibly batched `[[...]]`)
//!   or `inputs.prompts`, and `outputs.generations[][].message` (or `.text`), or the Chat
//!   Completions response `wrap_openai` records (`outputs.choices[].message`); tokens from
//!   `prompt_tokens` / `completion_tokens`, else `outputs.llm_output.token_usage`, else
//!   `outputs.usage_metadata`;
//! - `tool` runs → tool executions (arguments `inputs.input`, result `outputs.output`, call id
//!   from a `ToolMessage` output's `tool_call_id`); a tool named `transfer_to_<agent>` is a
//!   hand-off to `<agent>`; `retriever` / `embedding` runs → tool-like;
//! - another `run_type` → kept with a diagnostic naming the run (id, name) and the type
//!   ([`spantree::unknown_kind`]): a model call when `inputs.messages` / `outputs.generations` /
//!   `outputs.messages` hold chat messages, else a message with its `outputs` (else `inputs`)
//!   text, else a scope;
//! - `error` (text) or `status: "error"` → error.
//!
//! The root's `inputs` / `outputs` give the task and the observed output.

use serde_json::Value;

use super::messages::{Msg, Part, msg_from_value, msgs_from_value};
use super::spantree::{self, Node, Op};
use super::{Document, FormatError, ListDoc, Loaded, value_text};
use crate::model::{Diagnostic, SourceFormat, TokenCounts};

/// LangGraph nodes that are plumbing, not agents.
const NOT_AGENTS: [&str; 3] = ["__start__", "__end__", "tools"];

/// Whether `doc` is a LangSmith export: runs with `run_type` and `id`, as a list, under `runs`,
/// or a single root run.
pub fn detect(doc: &Document) -> bool {
    let Document::Json(v) = doc else {
        return false;
    };
    match runs_of(v) {
        Some(runs) => runs.iter().any(is_run),
        None => is_run(v),
    }
}

fn is_run(v: &Value) -> bool {
    v.get("run_type").is_some_and(Value::is_string) && v.get("id").is_some()
}

fn runs_of(v: &Value) -> Option<&Vec<Value>> {
    match v {
        Value::Array(items) => Some(items),
        Value::Object(m) => m.get("runs").and_then(Value::as_array),
        _ => None,
    }
}

/// Loads a LangSmith export named `name`; one trajectory per `trace_id`.
///
/// # Errors
/// A message when no run is found.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let Document::Json(v) = doc else {
        return Err(FormatError::JsonLines { expected: "one JSON document of runs" });
    };
    let mut flat = Vec::new();
    let mut diags = Vec::new();
    match runs_of(v) {
        Some(runs) => {
            for (i, r) in runs.iter().enumerate() {
                flatten(r, None, &format!("runs[{i}]"), &mut flat, &mut diags);
            }
        }
        None => flatten(v, None, "the root run", &mut flat, &mut diags),
    }
    if flat.is_empty() {
        return Err(FormatError::NoRecords { expected: "runs with \"id\" and \"run_type\"" });
    }
    let mut nodes = Vec::with_capacity(flat.len());
    for (run, parent, place) in &flat {
        let trace = run.get("trace_id").map(value_text).map(spantree::bounded_id);
        nodes.push((trace, node(run, parent.clone(), place, &mut diags)));
    }
    Ok(spantree::load_by_trace(name, SourceFormat::LangSmith, nodes, diags))
}

/// Loads a run list read one run at a time ([`ListDoc`]): each top-level run is parsed, its
/// `child_runs` flattened, mapped to span-tree nodes and dropped before the next. `None` for a
/// list under another key than `runs`, a run that does not parse, or no usable run.
pub fn load_list(name: &str, list: &ListDoc<'_>) -> Option<Loaded> {
    if !matches!(list.key.as_deref(), None | Some("runs")) {
        return None;
    }
    let mut diags = Vec::new();
    let mut nodes = Vec::new();
    for (i, raw) in list.items.iter().enumerate() {
        let v = super::value_line(raw.get())?;
        let mut flat = Vec::new();
        flatten(&v, None, &format!("runs[{i}]"), &mut flat, &mut diags);
        for (run, parent, place) in flat {
            let trace = run.get("trace_id").map(value_text).map(spantree::bounded_id);
            nodes.push((trace, node(run, parent, &place, &mut diags)));
        }
    }
    if nodes.is_empty() {
        return None;
    }
    Some(spantree::load_by_trace(name, SourceFormat::LangSmith, nodes, diags))
}

/// Walks nested `child_runs` into a flat list of `(run, parent id, place)`, depth first, without
/// recursion. A nested run's place is its top-level run's, then its own position and depth
/// (`runs[0] … child_runs[2] at depth 7`), so places stay short however deep runs nest.
fn flatten<'a>(
    top: &'a Value,
    parent: Option<String>,
    place: &str,
    out: &mut Vec<(&'a Value, Option<String>, String)>,
    diags: &mut Vec<Diagnostic>,
) {
    let mut stack: Vec<(&'a Value, Option<String>, usize, usize)> = vec![(top, parent, 0, 0)];
    while let Some((run, parent, depth, index)) = stack.pop() {
        let here = match depth {
            0 => place.to_string(),
            1 => format!("{place}.child_runs[{index}]"),
            d => format!("{place} … child_runs[{index}] at depth {d}"),
        };
        if !is_run(run) {
            diags.push(Diagnostic {
                line: None,
                message: format!("{here} skipped: expected a run with \"id\" and \"run_type\""),
            });
            continue;
        }
        let own_parent = run.get("parent_run_id").filter(|p| !p.is_null()).map(value_text).or(parent);
        let id = run.get("id").map(value_text).map(spantree::bounded_id);
        out.push((run, own_parent, here));
        let children = run.get("child_runs").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for (i, c) in children.iter().enumerate().rev() {
            stack.push((c, id.clone(), depth + 1, i));
        }
    }
}

fn node(run: &Value, parent: Option<String>, place: &str, diags: &mut Vec<Diagnostic>) -> Node {
    let text = |k: &str| run.get(k).filter(|v| !v.is_null()).map(value_text);
    let name = text("name").unwrap_or_default();
    let id = text("id").unwrap_or_default();
    let mut n = Node::new(id, parent, name.clone(), format!("run {place} ({name})"));
    // `dotted_order` segments are fixed-width UTC times: siblings compare as strings.
    n.sort_key = text("dotted_order").or_else(|| text("start_time").map(|t| spantree::time_sort_key(&t)));
    n.timestamp = text("start_time");
    n.error = text("error");
    n.is_error = n.error.is_some() || text("status").as_deref() == Some("error");
    n.role = text("run_type").unwrap_or_default();
    n.input_text = run.get("inputs").filter(|v| !v.is_null()).map(io_text);
    n.output_text = run.get("outputs").filter(|v| !v.is_null()).map(io_text);
    let graph_node = run.pointer("/extra/metadata/langgraph_node").and_then(Value::as_str);
    n.op = run_op(run, graph_node, &mut n, diags);
    if !matches!(n.op, Op::Agent { .. }) {
        n.agent = graph_node.filter(|g| !NOT_AGENTS.contains(g)).map(str::to_string);
    }
    n
}

/// What a run is, by `run_type` (see the module doc).
fn run_op(run: &Value, graph_node: Option<&str>, n: &mut Node, diags: &mut Vec<Diagnostic>) -> Op {
    let name = n.name.clone();
    match n.role.as_str() {
        "llm" => llm(run, n),
        "tool" => tool(run, &name),
        "retriever" | "embedding" => Op::Tool { name, call_id: None },
        "chain" if n.parent.is_none() || is_agent_node(graph_node, &name) => {
            n.input = run.pointer("/inputs/messages").map(msgs_from_value).unwrap_or_default();
            // A request given as one text (a `@traceable` function's `question`) is the user's
            // message the model calls then repeat: shown once, on the delegation.
            if n.input.is_empty()
                && let Some(t) = n.input_text.clone().filter(|t| !t.trim().is_empty() && !t.starts_with('{'))
            {
                n.input = vec![text_msg("user", &Value::String(t))];
            }
            Op::Agent { name, role: None }
        }
        "chain" | "prompt" | "parser" => Op::Scope,
        other => {
            n.input = run.pointer("/inputs/messages").map(spantree::chat_messages).unwrap_or_default();
            n.output = match run.pointer("/outputs/generations") {
                Some(_) => generations(run.get("outputs").unwrap_or(&Value::Null)),
                None => run.pointer("/outputs/messages").map(spantree::chat_messages).unwrap_or_default(),
            };
            let other = other.to_string();
            spantree::unknown_kind(n, "run_type", &other, None, diags)
        }
    }
}

fn is_agent_node(graph_node: Option<&str>, name: &str) -> bool {
    graph_node.is_some_and(|g| g == name && !NOT_AGENTS.contains(&g))
}

fn llm(run: &Value, n: &mut Node) -> Op {
    let inputs = run.get("inputs").unwrap_or(&Value::Null);
    n.input = match (inputs.get("messages"), inputs.get("prompts")) {
        (Some(m), _) => msgs_from_value(m),
        (None, Some(Value::Array(prompts))) => prompts.iter().map(|p| text_msg("user", p)).collect(),
        _ => Vec::new(),
    };
    n.output = generations(run.get("outputs").unwrap_or(&Value::Null));
    n.tokens = tokens(run);
    Op::Llm
}

/// `outputs.generations[][]`: each generation's `message`, else its `text`; or, for a run that
/// LangSmith's `wrap_openai` recorded (langsmith-sdk `wrappers/_openai.py`,
/// `_process_chat_completion`: the Chat Completions response dumped whole), `outputs.choices[]`:
/// each choice's `message`, else its `text`.
fn generations(outputs: &Value) -> Vec<Msg> {
    if let Some(choices) = outputs.get("choices").and_then(Value::as_array) {
        return choices
            .iter()
            .filter_map(|c| match c.get("message") {
                Some(m) => msg_from_value(m),
                None => c.get("text").map(|t| text_msg("assistant", t)),
            })
            .collect();
    }
    let gens = outputs.get("generations").and_then(Value::as_array);
    let flat = gens.into_iter().flatten().flat_map(|g| match g {
        Value::Array(inner) => inner.iter().collect::<Vec<_>>(),
        other => vec![other],
    });
    flat.filter_map(|g| match g.get("message") {
        Some(m) => msg_from_value(m),
        None => g.get("text").map(|t| text_msg("assistant", t)),
    })
    .collect()
}

fn text_msg(role: &str, v: &Value) -> Msg {
    Msg { role: role.into(), name: None, parts: vec![Part::Text(value_text(v))] }
}

/// A run's tokens: `prompt_tokens` / `completion_tokens`, else `outputs.llm_output.token_usage`,
/// else `outputs.usage_metadata.{input_tokens, output_tokens}` (langsmith-sdk's `wrap_openai`).
fn tokens(run: &Value) -> Option<TokenCounts> {
    let u = |v: Option<&Value>| v.and_then(Value::as_u64);
    let usage = run.pointer("/outputs/llm_output/token_usage");
    let meta = run.pointer("/outputs/usage_metadata");
    let input = u(run.get("prompt_tokens"))
        .or_else(|| u(usage.and_then(|t| t.get("prompt_tokens"))))
        .or_else(|| u(meta.and_then(|t| t.get("input_tokens"))));
    let output = u(run.get("completion_tokens"))
        .or_else(|| u(usage.and_then(|t| t.get("completion_tokens"))))
        .or_else(|| u(meta.and_then(|t| t.get("output_tokens"))));
    (input.is_some() || output.is_some())
        .then(|| TokenCounts { input: input.unwrap_or(0), output: output.unwrap_or(0) })
}

fn tool(run: &Value, name: &str) -> Op {
    let out = run.pointer("/outputs/output");
    let call_id = out
        .and_then(|o| o.pointer("/kwargs/tool_call_id").or_else(|| o.get("tool_call_id")))
        .or_else(|| run.pointer("/inputs/tool_call_id"))
        .map(value_text);
    match name.strip_prefix("transfer_to_") {
        Some(to) => Op::Handoff { to: to.to_string(), call_id },
        None => Op::Tool { name: name.to_string(), call_id },
    }
}

/// The text of `inputs` / `outputs`: a single `input` / `output` / `question` / `answer` field
/// (a serialised message's content), else the whole object as JSON.
fn io_text(v: &Value) -> String {
    for key in ["input", "output", "question", "answer", "query"] {
        if let Some(x) = v.get(key) {
            return match msg_from_value(x) {
                Some(m) if !m.text().is_empty() => m.text(),
                _ => message_content(x),
            };
        }
    }
    if let Some(m) = v.get("messages") {
        let msgs = msgs_from_value(m);
        if let Some(last) = msgs.iter().rev().find(|m| !m.text().is_empty()) {
            return last.text();
        }
    }
    value_text(v)
}

fn message_content(x: &Value) -> String {
    match x.pointer("/kwargs/content").or_else(|| x.get("content")) {
        Some(c) => value_text(c),
        None => value_text(x),
    }
}
