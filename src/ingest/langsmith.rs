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
//! - a prebuilt agent graph's own nodes inside an agent (the model node `agent`,
//!   `pre_model_hook`, `post_model_hook`, `generate_structured_response` of langgraph's
//!   `create_react_agent`; `model` and `<middleware>.before_model`-like nodes of langchain's
//!   `create_agent`) → that agent's scope, and their runs act as it: the agent is the subgraph
//!   node before the run's own in `extra.metadata.langgraph_checkpoint_ns`
//!   (`refund_agent:<task id>|agent:<task id>`), else `lc_agent_name`, else the nearest
//!   LangGraph node's agent invocation above the run. A multi-agent graph of prebuilt agents
//!   (langgraph-supervisor, a swarm) runs every agent's model calls in a node named `agent`; a
//!   single agent's top-level `agent` node (`agent:<task id>`, under the root alone) is still the
//!   agent `agent`. An agent node's run directly inside its own invocation (a worker's compiled
//!   graph inside the node that calls it, both named by the worker) is a scope;
//! - `llm` runs → model calls: `inputs.messages` (LangChain messages, possibly batched `[[...]]`)
//!   or `inputs.prompts`, and `outputs.generations[][].message` (or `.text`), or the Chat
//!   Completions response `wrap_openai` records (`outputs.choices[].message`); tokens from
//!   `prompt_tokens` / `completion_tokens`, else `outputs.llm_output.token_usage`, else
//!   `outputs.usage_metadata`;
//! - `tool` runs → tool executions (arguments `inputs.input`, result `outputs.output`, call id
//!   from a `ToolMessage` output's `tool_call_id`, or from the last message of a LangGraph
//!   `Command` output's `update.messages`); a tool named `transfer_to_<agent>` or
//!   `transfer_back_to_<agent>` is a hand-off to `<agent>`; `retriever` / `embedding` runs →
//!   tool-like;
//! - langgraph-supervisor's hand-back, an AI message named by the worker that calls
//!   `transfer_back_to_<supervisor>` and its tool message, which no tool run records → a
//!   hand-off by the worker, told once, before the first run whose input messages hold it;
//! - another `run_type` → kept with a diagnostic naming the run (id, name) and the type
//!   ([`spantree::unknown_kind`]): a model call when `inputs.messages` / `outputs.generations` /
//!   `outputs.messages` hold chat messages, else a message with its `outputs` (else `inputs`)
//!   text, else a scope;
//! - `error` (text) or `status: "error"` → error.
//!
//! The root's `inputs` / `outputs` give the task and the observed output.
//!
//! LangGraph's shapes: langchain-ai/langgraph@0017beb `libs/prebuilt/langgraph/prebuilt/
//! chat_agent_executor.py` (`create_react_agent`: nodes `agent`, `tools`, `pre_model_hook`,
//! `post_model_hook`, `generate_structured_response`; `name` names the graph as a subgraph node);
//! langchain-ai/langgraph@0018810 `libs/langgraph/langgraph/pregel/_algo.py`
//! (`prepare_single_task`: the metadata `langgraph_step`, `langgraph_node`, `langgraph_triggers`,
//! `langgraph_path`, `langgraph_checkpoint_ns`, the parent's namespace, `|`, then `<node>:<task
//! id>`); langchain-ai/langgraph-supervisor-py@00aab9e `langgraph_supervisor/supervisor.py`
//! (`create_supervisor`: the supervisor is a `create_react_agent` graph added as node
//! `supervisor`, each worker a node named by it that invokes the worker's graph) and
//! `handoff.py` (`transfer_to_<agent>` tools returning a `Command` to the parent graph,
//! `create_handoff_back_messages`); langchain-ai/langchain@005adc3 `libs/langchain_v1/langchain/
//! agents/factory.py` (`create_agent`: nodes `model`, `tools`, middleware nodes, and
//! `lc_agent_name` in the metadata of a named agent).

use std::collections::{HashMap, HashSet};

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
    let mut nodes = Runs::default();
    for (run, parent, place) in &flat {
        nodes.push(run, parent.clone(), place, &mut diags);
    }
    Ok(spantree::load_by_trace(name, SourceFormat::LangSmith, nodes.finish(), diags))
}

/// Loads a run list read one run at a time ([`ListDoc`]): each top-level run is parsed, its
/// `child_runs` flattened, mapped to span-tree nodes and dropped before the next. `None` for a
/// list under another key than `runs`, a run that does not parse, or no usable run.
pub fn load_list(name: &str, list: &ListDoc<'_>) -> Option<Loaded> {
    if !matches!(list.key.as_deref(), None | Some("runs")) {
        return None;
    }
    let mut diags = Vec::new();
    let mut nodes = Runs::default();
    for (i, raw) in list.items.iter().enumerate() {
        let v = super::value_line(raw.get())?;
        let mut flat = Vec::new();
        flatten(&v, None, &format!("runs[{i}]"), &mut flat, &mut diags);
        for (run, parent, place) in flat {
            nodes.push(run, parent, &place, &mut diags);
        }
    }
    if nodes.nodes.is_empty() {
        return None;
    }
    Some(spantree::load_by_trace(name, SourceFormat::LangSmith, nodes.finish(), diags))
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

/// The span-tree nodes of the runs read so far, with what [`Runs::finish`] needs to know of each
/// run's LangGraph node.
#[derive(Default)]
struct Runs {
    nodes: Vec<(Option<String>, Node)>,
    graph: Vec<GraphRun>,
}

/// What a run says of its LangGraph node, beside its span-tree node.
#[derive(Default)]
struct GraphRun {
    /// A chain run that is its own LangGraph node and became an agent invocation.
    node_agent: bool,
    /// The run's node is one of a prebuilt agent graph's own nodes ([`is_agent_graph_node`]) and
    /// neither its namespace nor `lc_agent_name` says which agent's: its runs' ancestors decide.
    inner: bool,
    /// The call id of a hand-back ([`HandBack`]) this node stands for.
    hand_back: Option<String>,
}

impl Runs {
    fn push(&mut self, run: &Value, parent: Option<String>, place: &str, diags: &mut Vec<Diagnostic>) {
        let trace = run.get("trace_id").map(value_text).map(spantree::bounded_id);
        let (n, graph, backs) = node(run, parent, place, diags);
        for b in backs {
            let call = b.call_id.clone().unwrap_or_else(|| format!("{} {}", b.from, b.tool));
            self.nodes.push((trace.clone(), b.node(&n)));
            self.graph.push(GraphRun { hand_back: Some(call), ..GraphRun::default() });
        }
        self.nodes.push((trace, n));
        self.graph.push(graph);
    }

    /// The nodes, once the runs inside an agent's subgraph are that agent's and each hand-back is
    /// told once ([`fold_agent_graphs`], [`first_hand_backs`]).
    fn finish(mut self) -> Vec<(Option<String>, Node)> {
        fold_agent_graphs(&mut self.nodes, &self.graph);
        let keep = first_hand_backs(&self.nodes, &self.graph);
        self.nodes.into_iter().zip(keep).filter_map(|(n, k)| k.then_some(n)).collect()
    }
}

fn node(
    run: &Value,
    parent: Option<String>,
    place: &str,
    diags: &mut Vec<Diagnostic>,
) -> (Node, GraphRun, Vec<HandBack>) {
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
    let enclosing = graph_node.and_then(|g| enclosing_agent(run, g));
    let inner = enclosing.is_none() && graph_node.is_some_and(is_agent_graph_node);
    let node_graph = graph_node.filter(|_| enclosing.is_none());
    n.op = run_op(run, node_graph, &mut n, diags);
    let node_agent = n.parent.is_some() && matches!(n.op, Op::Agent { .. });
    if !matches!(n.op, Op::Agent { .. }) {
        n.agent = enclosing.or_else(|| graph_node.filter(|g| !NOT_AGENTS.contains(g)).map(str::to_string));
    }
    let backs = take_hand_backs(&mut n.input);
    (n, GraphRun { node_agent, inner, hand_back: None }, backs)
}

/// Nodes of the prebuilt agent graphs, which run inside the agent's own graph: langgraph's
/// `create_react_agent` (`agent`, the model call; `pre_model_hook`, `post_model_hook`,
/// `generate_structured_response`; its `tools` node is in [`NOT_AGENTS`]) and langchain's
/// `create_agent` (`model`; middleware nodes `<middleware>.before_model` and the like).
const AGENT_GRAPH_NODES: [&str; 5] =
    ["agent", "model", "pre_model_hook", "post_model_hook", "generate_structured_response"];

/// The hooks `create_agent` names a middleware node by (`<middleware>.<hook>`).
const MIDDLEWARE_HOOKS: [&str; 4] = [".before_agent", ".before_model", ".after_model", ".after_agent"];

fn is_agent_graph_node(g: &str) -> bool {
    AGENT_GRAPH_NODES.contains(&g) || MIDDLEWARE_HOOKS.iter().any(|h| g.ends_with(h))
}

/// The agent whose own graph a run's LangGraph node `graph_node` belongs to, when the node is
/// one of a prebuilt agent graph's ([`is_agent_graph_node`]) and the metadata names the agent:
/// the namespace `langgraph_checkpoint_ns` of a node inside a subgraph is the subgraph's node,
/// then the node itself (`refund_agent:<task id>|agent:<task id>`: node `agent` of the graph
/// that runs as node `refund_agent`); else `lc_agent_name`, which `create_agent(name=…)` puts
/// on every run of its graph. `None` for a node of the top graph (`agent:<task id>`, a single
/// ReAct agent) or of a graph that a tool runs (`…|tools:<task id>|agent:<task id>`).
fn enclosing_agent(run: &Value, graph_node: &str) -> Option<String> {
    if !is_agent_graph_node(graph_node) {
        return None;
    }
    let meta = run.pointer("/extra/metadata")?;
    if let Some(ns) = meta.get("langgraph_checkpoint_ns").and_then(Value::as_str) {
        let mut names = ns.rsplit('|').map(|segment| segment.split(':').next().unwrap_or(segment));
        if names.next() == Some(graph_node)
            && let Some(outer) =
                names.next().filter(|o| !o.is_empty() && !NOT_AGENTS.contains(o) && !is_agent_graph_node(o))
        {
            return Some(outer.to_string());
        }
    }
    meta.get("lc_agent_name")
        .and_then(Value::as_str)
        .filter(|a| !a.trim().is_empty() && *a != graph_node)
        .map(str::to_string)
}

/// Folds the runs of an agent's own graph into that agent, where the metadata did not
/// ([`enclosing_agent`]): a run whose node is one of a prebuilt agent graph's
/// ([`GraphRun::inner`]) below another LangGraph node's agent invocation acts as that agent
/// (its chain is a scope, not an agent named `agent`), and an agent node's run directly inside
/// its own invocation (langgraph-supervisor runs a worker's compiled graph inside the node that
/// calls it, both named by the worker) is a scope. A run with only the root above it keeps its
/// own node's name: a single ReAct agent's `agent` node is that agent.
fn fold_agent_graphs(nodes: &mut [(Option<String>, Node)], graph: &[GraphRun]) {
    if !graph.iter().any(|g| g.inner || g.node_agent) {
        return;
    }
    let index: HashMap<&str, usize> = nodes.iter().enumerate().map(|(i, (_, n))| (n.id.as_str(), i)).collect();
    // The nearest agent invocation above node `i` that is not a prebuilt graph's own node.
    let agent_above = |i: usize| -> Option<usize> {
        let mut at = i;
        for _ in 0..MAX_DEPTH {
            at = *index.get(nodes[at].1.parent.as_deref()?)?;
            if matches!(nodes[at].1.op, Op::Agent { .. }) && !graph[at].inner {
                return Some(at);
            }
        }
        None
    };
    let mut fold = Vec::new();
    for (i, g) in graph.iter().enumerate() {
        let Some(a) = (g.inner || g.node_agent).then(|| agent_above(i)).flatten() else {
            continue;
        };
        let same_agent = matches!((&nodes[i].1.op, &nodes[a].1.op), (Op::Agent { name, .. }, Op::Agent { name: above, .. }) if name == above);
        if graph[a].node_agent && (g.inner || same_agent) {
            fold.push(i);
        }
    }
    for i in fold {
        let n = &mut nodes[i].1;
        if matches!(n.op, Op::Agent { .. }) {
            n.op = Op::Scope;
        }
        n.agent = None;
    }
}

/// How many parents [`fold_agent_graphs`] looks through for an agent invocation.
const MAX_DEPTH: usize = 256;

/// langgraph-supervisor's hand-back: a worker's graph ends with an AI message named by the
/// worker calling `transfer_back_to_<supervisor>` and the tool message answering it
/// (langgraph-supervisor `handoff.py`, `create_handoff_back_messages`), which no tool run
/// records; they reach the supervisor's next runs in their input messages.
struct HandBack {
    /// The worker handing back.
    from: String,
    /// The agent handed back to.
    to: String,
    /// The hand-back call's id.
    call_id: Option<String>,
    /// The tool name (`transfer_back_to_<to>`).
    tool: String,
    /// The AI message's text ("Transferring back to supervisor").
    text: String,
}

impl HandBack {
    /// The hand-off node that tells it, just before the run whose input first holds it (its
    /// sibling, with the same sort key and listed first).
    fn node(self, before: &Node) -> Node {
        let id = format!("{}#{}", before.id, self.call_id.as_deref().unwrap_or(&self.tool));
        let mut h = Node::new(id, before.parent.clone(), self.tool, before.place.clone());
        h.sort_key = before.sort_key.clone();
        h.timestamp = before.timestamp.clone();
        h.role = "tool".into();
        h.output_text = Some(self.text).filter(|t| !t.trim().is_empty());
        h.agent = Some(self.from);
        h.op = Op::Handoff { to: self.to, call_id: self.call_id };
        h
    }
}

/// Takes the hand-back messages ([`HandBack`]) out of `msgs`: an assistant message with a name
/// whose tool calls are `transfer_back_to_<agent>` calls. The tool message answering it stays,
/// and is shown as answered by the hand-off.
fn take_hand_backs(msgs: &mut Vec<Msg>) -> Vec<HandBack> {
    let mut backs = Vec::new();
    msgs.retain(|m| {
        let Some(from) = m.name.as_deref().filter(|_| m.role == "assistant") else {
            return true;
        };
        let calls: Vec<(&Option<String>, &str)> = m
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::ToolCall { id, name, .. } => Some((id, name.as_str())),
                _ => None,
            })
            .collect();
        let to_of = |name: &str| name.strip_prefix(HAND_BACK).filter(|t| !t.is_empty()).map(str::to_string);
        if calls.is_empty() || calls.iter().any(|(_, name)| to_of(name).is_none()) {
            return true;
        }
        for (id, name) in calls {
            let to = to_of(name).unwrap_or_default();
            backs.push(HandBack {
                from: from.to_string(),
                to,
                call_id: id.clone(),
                tool: name.to_string(),
                text: m.text(),
            });
        }
        false
    });
    backs
}

/// The tool name prefix of a hand-back to the agent it names.
const HAND_BACK: &str = "transfer_back_to_";

/// Which nodes to keep: every node but the hand-back nodes ([`HandBack::node`]) after the first
/// of each call (the supervisor's every later run repeats it in its input), and all of them when
/// a tool run answers the call.
fn first_hand_backs(nodes: &[(Option<String>, Node)], graph: &[GraphRun]) -> Vec<bool> {
    let mut keep = vec![true; nodes.len()];
    if graph.iter().all(|g| g.hand_back.is_none()) {
        return keep;
    }
    let answered: HashSet<&str> = nodes
        .iter()
        .zip(graph)
        .filter(|(_, g)| g.hand_back.is_none())
        .filter_map(|((_, n), _)| match &n.op {
            Op::Handoff { call_id: Some(c), .. } | Op::Tool { call_id: Some(c), .. } => Some(c.as_str()),
            _ => None,
        })
        .collect();
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (i, g) in graph.iter().enumerate() {
        let Some(call) = g.hand_back.as_deref() else {
            continue;
        };
        keep[i] = false;
        if answered.contains(call) {
            continue;
        }
        let key = |j: usize| (nodes[j].1.sort_key.as_deref(), j);
        match first.get(call) {
            Some(&j) if key(j) <= key(i) => {}
            _ => {
                first.insert(call, i);
            }
        }
    }
    for i in first.into_values() {
        keep[i] = true;
    }
    keep
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
    let out = run.pointer("/outputs/output").map(|o| command_message(o).unwrap_or(o));
    let call_id = out
        .and_then(|o| o.pointer("/kwargs/tool_call_id").or_else(|| o.get("tool_call_id")))
        .or_else(|| run.pointer("/inputs/tool_call_id"))
        .map(value_text);
    match name.strip_prefix("transfer_to_").or_else(|| name.strip_prefix(HAND_BACK)) {
        Some(to) if !to.is_empty() => Op::Handoff { to: to.to_string(), call_id },
        _ => Op::Tool { name: name.to_string(), call_id },
    }
}

/// The tool message a LangGraph `Command` output carries (a hand-off tool's result: `{goto,
/// graph, update: {messages}, resume}`, langgraph `types.py`): the last message of
/// `update.messages`, which answers the call.
fn command_message(output: &Value) -> Option<&Value> {
    output.get("goto")?;
    output.pointer("/update/messages").and_then(Value::as_array).and_then(|m| m.last())
}

/// The text of `inputs` / `outputs`: a single `input` / `output` / `question` / `answer` field
/// (a serialised message's content), else the whole object as JSON.
fn io_text(v: &Value) -> String {
    for key in ["input", "output", "question", "answer", "query"] {
        if let Some(x) = v.get(key).map(|x| command_message(x).unwrap_or(x)) {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::enclosing_agent;

    fn run(meta: serde_json::Value) -> serde_json::Value {
        json!({"id": "r", "run_type": "chain", "extra": {"metadata": meta}})
    }

    #[test]
    fn an_agent_graph_node_inside_a_subgraph_is_the_subgraph_nodes_agent() {
        let r = run(json!({"langgraph_node": "agent", "langgraph_checkpoint_ns": "refund_agent:1a|agent:2b"}));
        assert_eq!(enclosing_agent(&r, "agent").as_deref(), Some("refund_agent"));
        let deep = run(json!({"langgraph_checkpoint_ns": "team:0|researcher:1a|model:2b"}));
        assert_eq!(enclosing_agent(&deep, "model").as_deref(), Some("researcher"));
        let hook = run(json!({"langgraph_checkpoint_ns": "billing:1a|Summarize.before_model:2b"}));
        assert_eq!(enclosing_agent(&hook, "Summarize.before_model").as_deref(), Some("billing"));
    }

    #[test]
    fn a_top_level_node_a_node_under_a_tool_or_another_node_names_no_enclosing_agent() {
        let top = run(json!({"langgraph_checkpoint_ns": "agent:2b"}));
        assert_eq!(enclosing_agent(&top, "agent"), None);
        let in_tool = run(json!({"langgraph_checkpoint_ns": "supervisor:1a|tools:3c|agent:2b"}));
        assert_eq!(enclosing_agent(&in_tool, "agent"), None);
        let worker = run(json!({"langgraph_checkpoint_ns": "team:1a|researcher:2b"}));
        assert_eq!(enclosing_agent(&worker, "researcher"), None);
    }

    #[test]
    fn lc_agent_name_names_the_agent_when_the_namespace_does_not() {
        let named = run(json!({"langgraph_checkpoint_ns": "model:2b", "lc_agent_name": "helper"}));
        assert_eq!(enclosing_agent(&named, "model").as_deref(), Some("helper"));
        let bare = run(json!({"lc_agent_name": "helper"}));
        assert_eq!(enclosing_agent(&bare, "model").as_deref(), Some("helper"));
        assert_eq!(enclosing_agent(&run(json!({"lc_agent_name": "model"})), "model"), None);
    }
}
