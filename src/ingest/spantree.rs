//! Turning a tree of spans (or runs, or observations) into ordered steps and protocol links.
//!
//! The span formats differ in their envelopes but agree on the shape of a run: a tree whose
//! nodes are agent invocations, LLM calls, tool executions and plain scopes. Each loader maps its
//! records to [`Node`]s; [`build`] then
//! - orders the tree depth-first, siblings by start time (then document order);
//! - emits steps per node: an agent node is a [`StepKind::Delegation`] by its caller, an LLM node
//!   its new input messages and all its output messages (one step per part), a tool node a call
//!   and a result (only the result when an earlier LLM output already holds the call);
//! - gives every step the agent of the nearest agent ancestor (`TRACE_FORMATS.md` §2: "propagate
//!   it down from the nearest `invoke_agent`/AGENT ancestor");
//! - links parent node → child node ([`LinkKind::Parent`], first step to first step), tool call
//!   → result ([`LinkKind::ToolResult`], by call id, else the oldest open call of that tool), and
//!   delegation → the delegate's first step ([`LinkKind::Delegation`]).
//!
//! LLM calls repeat the whole conversation in their input; an input message is new when it occurs
//! more often in this input (up to its position) than it has already been shown (by any agent:
//! multi-agent graphs pass one conversation along). An input that holds the call's own reply was
//! recorded after the call (a message list the traced program kept appending to, serialised
//! later): the new input messages from the reply on are left out of that call (they are the
//! steps of later nodes) and one [`Diagnostic`] names the calls. A node whose
//! parent is missing, or that sits on a parent cycle, becomes a root with a [`Diagnostic`].

use std::collections::{HashMap, HashSet, VecDeque};

use super::Loaded;
use super::messages::{Msg, Part};
use crate::model::{
    AgentInfo, Diagnostic, Link, LinkKind, SourceFormat, Step, StepIds, StepKind, TokenCounts, Trajectory,
};

/// The agent name used when no agent span names one.
pub const DEFAULT_AGENT: &str = "assistant";
/// The agent name of user messages and of the caller of a root agent.
pub const USER: &str = "user";

/// What a node stands for.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// An agent invocation (`invoke_agent`, OpenInference AGENT, Langfuse AGENT): a delegation to
    /// `name`, whose descendants act as `name`.
    Agent {
        /// The agent's name.
        name: String,
        /// Its description or instructions, when given.
        role: Option<String>,
    },
    /// A model call: input and output messages.
    Llm,
    /// A tool execution: arguments in `input_text`, result in `output_text`.
    Tool {
        /// The tool's name.
        name: String,
        /// The call id the execution answers, when given.
        call_id: Option<String>,
    },
    /// A hand-off to another agent (`transfer_to_<agent>` tools): a delegation step that answers
    /// the model's call of the hand-off tool and links to the target's next step.
    Handoff {
        /// The agent handed to.
        to: String,
        /// The call id of the hand-off tool call, when given.
        call_id: Option<String>,
    },
    /// A point event shown as a message (Langfuse EVENT), an error when the node is one.
    Event,
    /// A grouping span with no step of its own (chains, workflows, unknown kinds).
    Scope,
}

/// One span / run / observation, mapped from its format.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The node's id (normalised span id, run id, observation id).
    pub id: String,
    /// The parent's id, when it has one.
    pub parent: Option<String>,
    /// The span or run name.
    pub name: String,
    /// What the node is.
    pub op: Op,
    /// The agent acting in this node and its descendants when the node itself names one without
    /// being an agent invocation (OpenInference `agent.name` on an LLM span); `None` inherits.
    pub agent: Option<String>,
    /// The raw role/kind string for [`Step::role`] (`chat`, `execute_tool`, `LLM`, `tool`).
    pub role: String,
    /// Input messages (LLM and agent nodes).
    pub input: Vec<Msg>,
    /// Output messages (LLM and agent nodes).
    pub output: Vec<Msg>,
    /// Raw input text (tool arguments, chain input), when there are no input messages.
    pub input_text: Option<String>,
    /// Raw output text (tool result, chain output), when there are no output messages.
    pub output_text: Option<String>,
    /// Sorts siblings: zero-padded unix nanoseconds, an ISO time or a LangSmith `dotted_order`.
    pub sort_key: Option<String>,
    /// The start time as the format writes it.
    pub timestamp: Option<String>,
    /// Token counts of the node, put on its first output step.
    pub tokens: Option<TokenCounts>,
    /// The node ended in error (span status ERROR, an exception event, `level: ERROR`).
    pub is_error: bool,
    /// The error message, when given.
    pub error: Option<String>,
    /// A warning the node carries (Langfuse `level: WARNING`): its message, empty when it has
    /// none; put on the node's last step ([`Step::warning`]).
    pub warning: Option<String>,
    /// Where the node is in the file, for diagnostics (`span 03491beea3cb073d`, `runs[2]`).
    pub place: String,
}

/// Ids longer than this many bytes are shortened by [`bounded_id`].
pub const MAX_ID_BYTES: usize = 128;

/// An id of at most about [`MAX_ID_BYTES`] bytes: a longer one becomes its first 64 bytes, `…`
/// and a 64-bit hash of the whole, so distinct ids stay distinct and equal ids equal, while an id
/// copied onto every child, step and link costs a constant (a file whose trace id is a 400 KB
/// string cannot take gigabytes).
pub fn bounded_id(id: String) -> String {
    if id.len() <= MAX_ID_BYTES {
        return id;
    }
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    id.hash(&mut h);
    let mut cut = 64;
    while !id.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…{:016x}", &id[..cut], h.finish())
}

impl Node {
    /// A scope node with only an id, parent, name and place set; the ids are bounded
    /// ([`bounded_id`]).
    pub fn new(id: String, parent: Option<String>, name: String, place: String) -> Node {
        Node {
            id: bounded_id(id),
            parent: parent.map(bounded_id),
            name,
            op: Op::Scope,
            agent: None,
            role: String::new(),
            input: Vec::new(),
            output: Vec::new(),
            input_text: None,
            output_text: None,
            sort_key: None,
            timestamp: None,
            warning: None,
            tokens: None,
            is_error: false,
            error: None,
            place,
        }
    }
}

/// What [`build`] produced.
#[derive(Debug, Clone, Default)]
pub struct Built {
    /// The steps in tree order (`index` set).
    pub steps: Vec<Step>,
    /// Parent, tool-result and delegation links between the steps.
    pub links: Vec<Link>,
    /// Agents with role text (system messages, agent descriptions).
    pub agents: Vec<AgentInfo>,
    /// Missing parents, cycles, duplicate ids.
    pub diagnostics: Vec<Diagnostic>,
    /// Input text of the first root: the run's task when the format keeps it there.
    pub root_input: Option<String>,
    /// Output text of the last root: the run's answer when the format keeps it there.
    pub root_output: Option<String>,
}

/// Orders `nodes` as a tree and emits steps and links (see the module doc).
///
/// The nodes are consumed: once a node's steps are emitted its texts (ids, messages, input and
/// output, error, name, place) are dropped, except those of the roots, which give the run's task and
/// answer, so the nodes' text and the steps' text are not both held at the end (peak memory is
/// about one copy of the text, not two).
pub fn build(mut nodes: Vec<Node>) -> Built {
    // The nodes stay until the last step is built: no spare capacity beside them.
    nodes.shrink_to_fit();
    let mut diagnostics = Vec::new();
    let (roots, children) = tree(&nodes, &mut diagnostics);
    let mut em = Emitter { failed_below: failed_below(&nodes, &children), ..Emitter::default() };
    let mut keep = vec![false; nodes.len()];
    for &r in &roots {
        keep[r] = true;
    }
    // Repeated nodes (a span sent twice) are neither roots nor children: mark them done.
    let mut visited: Vec<bool> = repeated(&nodes);
    for &r in &roots {
        em.walk(&mut nodes, &children, r, &mut visited, &keep);
    }
    // Nodes on a parent cycle are reachable from no root.
    for i in 0..nodes.len() {
        if visited[i] {
            continue;
        }
        diagnostics.push(Diagnostic {
            line: None,
            message: format!("{}: its parent chain loops back to itself; loaded as a root", nodes[i].place),
        });
        em.walk(&mut nodes, &children, i, &mut visited, &keep);
    }
    em.diagnostics.append(&mut diagnostics);
    em.finish(&nodes, &roots)
}

impl Node {
    /// Drops the texts building no longer reads once the node's steps are emitted.
    fn release(&mut self) {
        self.id = String::new();
        self.parent = None;
        self.agent = None;
        self.role = String::new();
        self.timestamp = None;
        self.input = Vec::new();
        self.output = Vec::new();
        self.input_text = None;
        self.output_text = None;
        self.error = None;
        self.warning = None;
        self.name = String::new();
        self.place = String::new();
        self.sort_key = None;
        if let Op::Agent { role, .. } = &mut self.op {
            *role = None;
        }
    }
}

/// A sort key for a start time, so that siblings compare by the instant they started whatever
/// the precision or offset each was written with: an ISO 8601 / RFC 3339 time (`2026-11-29T10:41:07Z`,
/// `…07.219Z`, `…07.219000+00:00`, a space for `T`, no offset read as UTC) becomes its unix
/// nanoseconds, and a string of digits (OTLP unix nanoseconds) is kept; both zero-padded to 24
/// places. Anything else (a time before 1970, a LangSmith `dotted_order`) is returned unchanged
/// and so sorts after every parsed time (digits sort before letters).
pub fn time_sort_key(t: &str) -> String {
    let t = t.trim();
    if !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit()) {
        return format!("{t:0>24}");
    }
    match iso_unix_nanos(t) {
        Some(n) => format!("{n:024}"),
        None => t.to_string(),
    }
}

/// Unix nanoseconds of an ISO 8601 date-time `YYYY-MM-DD[T| ]HH:MM[:SS[.fraction]][Z|±HH[:]MM]`
/// (no offset: UTC); `None` for anything else or a time before 1970.
pub fn iso_unix_nanos(t: &str) -> Option<u128> {
    let b = t.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = t.get(r)?;
        (!s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())).then(|| s.parse().ok()).flatten()
    };
    if b.len() < 16 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' {
        return None;
    }
    let (y, mo, d, h, mi) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?);
    let mut i = 16;
    let mut sec = 0;
    let mut nanos: i64 = 0;
    if b.get(i) == Some(&b':') {
        sec = num(i + 1..i + 3)?;
        i += 3;
        if matches!(b.get(i), Some(b'.' | b',')) {
            i += 1;
            let start = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            let frac = &t[start..i];
            if frac.is_empty() {
                return None;
            }
            let nine: String = frac.chars().chain(std::iter::repeat('0')).take(9).collect();
            nanos = nine.parse().ok()?;
        }
    }
    let offset_min: i64 = match &t[i..] {
        "" | "Z" | "z" => 0,
        rest => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let digits: String = rest[1..].chars().filter(|&c| c != ':').collect();
            if digits.len() != 4 || !digits.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            sign * (digits[..2].parse::<i64>().ok()? * 60 + digits[2..].parse::<i64>().ok()?)
        }
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    // Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
    let yy = if mo <= 2 { y - 1 } else { y };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let doy = (153 * (if mo > 2 { mo - 3 } else { mo + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3_600 + mi * 60 + sec - offset_min * 60;
    u128::try_from(i128::from(secs) * 1_000_000_000 + i128::from(nanos)).ok()
}

/// Roots and child lists, each sorted by `(sort_key, document order)`.
fn tree(nodes: &[Node], diagnostics: &mut Vec<Diagnostic>) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    let skip = repeated(nodes);
    for (i, n) in nodes.iter().enumerate() {
        match by_id.get(n.id.as_str()) {
            Some(&first) => diagnostics.push(Diagnostic {
                line: None,
                message: format!(
                    "{}: id {:?} was sent twice (first at {}); loaded once, the first holds",
                    n.place, n.id, nodes[first].place
                ),
            }),
            None => {
                by_id.insert(n.id.as_str(), i);
            }
        }
    }
    let mut roots = Vec::new();
    let mut children = vec![Vec::new(); nodes.len()];
    for (i, n) in nodes.iter().enumerate().filter(|(i, _)| !skip[*i]) {
        match n.parent.as_deref().filter(|p| !p.is_empty()) {
            None => roots.push(i),
            Some(p) => match by_id.get(p) {
                Some(&j) if j != i => children[j].push(i),
                Some(_) => {
                    diagnostics.push(Diagnostic {
                        line: None,
                        message: format!("{}: is its own parent; loaded as a root", n.place),
                    });
                    roots.push(i);
                }
                None => {
                    diagnostics.push(Diagnostic {
                        line: None,
                        message: format!("{}: parent {p:?} is not in the trace; loaded as a root", n.place),
                    });
                    roots.push(i);
                }
            },
        }
    }
    let order = |a: &usize, b: &usize| (nodes[*a].sort_key.as_deref(), *a).cmp(&(nodes[*b].sort_key.as_deref(), *b));
    roots.sort_by(order);
    for c in &mut children {
        c.sort_by(order);
    }
    (roots, children)
}

/// For each node, whether a node below it is an error: one post-order pass over the child lists
/// (iterative, so deep trees are fine; linear in nodes and child edges).
fn failed_below(nodes: &[Node], children: &[Vec<usize>]) -> Vec<bool> {
    let mut state = vec![0u8; nodes.len()];
    let mut below = vec![false; nodes.len()];
    for start in 0..nodes.len() {
        if state[start] != 0 {
            continue;
        }
        state[start] = 1;
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        while let Some(top) = stack.last_mut() {
            let (i, k) = *top;
            if let Some(&c) = children[i].get(k) {
                top.1 += 1;
                if state[c] == 0 {
                    state[c] = 1;
                    stack.push((c, 0));
                }
                continue;
            }
            stack.pop();
            state[i] = 2;
            below[i] = children[i].iter().any(|&c| nodes[c].is_error || below[c]);
        }
    }
    below
}

/// `true` for each node whose id an earlier node already has (a span or record sent twice).
fn repeated(nodes: &[Node]) -> Vec<bool> {
    let mut seen: HashSet<&str> = HashSet::new();
    nodes.iter().map(|n| !seen.insert(n.id.as_str())).collect()
}

/// Walk frames: enter a node, or leave an agent node (to emit its output after its children).
enum Frame {
    Enter {
        node: usize,
        agent: Option<String>,
        anchor: Option<usize>,
    },
    Leave {
        node: usize,
        agent: String,
        delegation: Option<usize>,
    },
    /// The result of a tool execution whose span has children (an agent used as a tool, a
    /// tool that runs model calls): emitted after their steps, answering `call`.
    ToolEnd {
        node: usize,
        agent: String,
        call: usize,
    },
}

#[derive(Default)]
struct Emitter {
    steps: Vec<Step>,
    links: Vec<Link>,
    agents: Vec<AgentInfo>,
    diagnostics: Vec<Diagnostic>,
    /// How often each message key has been shown (across agents: a conversation passed from
    /// one agent to the next is shown once).
    seen: HashMap<u64, usize>,
    /// Tool call id → its call step.
    calls: HashMap<String, usize>,
    /// Call ids that already have a result step.
    answered: HashSet<String>,
    /// Per tool name: call steps still waiting for a result, oldest first (answered ones are in
    /// `closed` until they reach the front).
    open: HashMap<String, VecDeque<usize>>,
    /// The same, for the calls without an id.
    open_anonymous: HashMap<String, VecDeque<usize>>,
    /// Hand-off steps and their target agent, linked once all steps exist.
    handoffs: Vec<(usize, String)>,
    /// `(from, to, kind)` of every link, so a link is added once in constant time.
    linked: HashSet<(usize, usize, u8)>,
    /// Per agent, the steps it took, in order (to find an agent's next step by binary search).
    by_agent: HashMap<String, Vec<usize>>,
    /// Per agent invoked by another agent (an agent used as a tool, a sub-agent), that caller:
    /// the user-role messages of its model calls are the caller's request, said by the caller.
    callers: HashMap<String, String>,
    /// Call steps closed out of order, skipped when they reach the front of their queue.
    closed: HashSet<usize>,
    /// Per node, whether a node below it failed ([`failed_below`]).
    failed_below: Vec<bool>,
    /// Model calls whose recorded input holds their own reply: the node's place and how many
    /// input messages were left out from the reply on.
    late_inputs: Vec<(String, usize)>,
}

impl Emitter {
    /// Emits the steps of the tree under `root`; a node's texts are released ([`Node::release`])
    /// once its steps are out (an agent node's after its children), unless `keep` says otherwise.
    fn walk(&mut self, nodes: &mut [Node], children: &[Vec<usize>], root: usize, visited: &mut [bool], keep: &[bool]) {
        let mut stack = vec![Frame::Enter { node: root, agent: None, anchor: None }];
        while let Some(frame) = stack.pop() {
            match frame {
                Frame::Enter { node, agent, anchor } => {
                    if std::mem::replace(&mut visited[node], true) {
                        continue;
                    }
                    self.enter(nodes, children, node, agent, anchor, &mut stack);
                    let waits = match nodes[node].op {
                        Op::Agent { .. } => true,
                        Op::Tool { .. } => !children[node].is_empty(),
                        _ => false,
                    };
                    if !keep[node] && !waits {
                        nodes[node].release();
                    }
                }
                Frame::ToolEnd { node, agent, call } => {
                    if let Op::Tool { name, call_id } = &nodes[node].op {
                        let (name, call_id) = (name.clone(), call_id.clone());
                        self.emit_tool_result(&nodes[node], &agent, &name, call_id.as_deref(), call);
                    }
                    if !keep[node] {
                        nodes[node].release();
                    }
                }
                Frame::Leave { node, agent, delegation } => {
                    self.leave(&nodes[node], &agent, delegation);
                    if !keep[node] {
                        nodes[node].release();
                    }
                }
            }
        }
    }

    fn enter(
        &mut self,
        nodes: &[Node],
        children: &[Vec<usize>],
        i: usize,
        inherited: Option<String>,
        anchor: Option<usize>,
        stack: &mut Vec<Frame>,
    ) {
        let n = &nodes[i];
        let first = self.steps.len();
        let named = match &n.op {
            Op::Agent { name, .. } => Some(name.clone()),
            _ => n.agent.clone(),
        };
        let agent = named.clone().or_else(|| inherited.clone()).unwrap_or_else(|| DEFAULT_AGENT.to_string());
        let delegation = match &n.op {
            // A tool execution with children (an agent used as a tool): its call now, its result
            // after the children's steps, which happen while it runs.
            Op::Tool { name, call_id } if !children[i].is_empty() => {
                let call = self.tool_call(n, &agent, name, call_id.as_deref());
                stack.push(Frame::ToolEnd { node: i, agent: agent.clone(), call });
                None
            }
            _ => self.emit_node(n, &agent, inherited.as_deref()),
        };
        // A failed scope (a chain, a plain span) whose failure no descendant reports would lose
        // its error: it becomes an error step of its own.
        if matches!(n.op, Op::Scope) && n.is_error && !self.failed_below.get(i).copied().unwrap_or(false) {
            let text = n.error.clone().unwrap_or_else(|| format!("{} failed", n.name));
            let s = self.push(n, &agent, StepKind::Message, text);
            self.steps[s].is_error = true;
        }
        // A warning goes on the node's last step (a tool's result, which a tool with children
        // emits on leaving it); a scope's warning, which no step of its own would show, becomes a
        // step that says it.
        match &n.op {
            Op::Tool { .. } if !children[i].is_empty() => {}
            _ if n.warning.is_none() => {}
            _ if self.steps.len() > first => self.warn(self.steps.len() - 1, n),
            Op::Scope => {
                let s = self.push(n, &agent, StepKind::Message, String::new());
                self.warn(s, n);
            }
            _ => {}
        }
        let own = (self.steps.len() > first).then_some(first);
        if let (Some(a), Some(f)) = (anchor, own) {
            self.link(a, f, LinkKind::Parent);
        }
        if matches!(n.op, Op::Agent { .. }) {
            stack.push(Frame::Leave { node: i, agent: agent.clone(), delegation });
        }
        let child_agent = named.or(inherited).map(|_| agent);
        for &c in children[i].iter().rev() {
            stack.push(Frame::Enter { node: c, agent: child_agent.clone(), anchor: own.or(anchor) });
        }
    }

    /// Emits the node's own steps; returns the delegation step of an agent node.
    fn emit_node(&mut self, n: &Node, agent: &str, caller: Option<&str>) -> Option<usize> {
        match &n.op {
            Op::Agent { name, role } => {
                if let Some(r) = role.as_deref().filter(|r| !r.trim().is_empty()) {
                    self.add_role(name, r);
                }
                Some(self.emit_agent_start(n, name, caller))
            }
            Op::Llm => {
                self.emit_llm(n, agent);
                None
            }
            Op::Tool { name, call_id } => {
                self.emit_tool(n, agent, name, call_id.as_deref());
                None
            }
            Op::Handoff { to, call_id } => {
                self.emit_handoff(n, agent, to, call_id.as_deref());
                None
            }
            Op::Event => {
                let mut text = n.output_text.clone().or_else(|| n.input_text.clone()).unwrap_or_else(|| n.name.clone());
                // An event that reports an error (Langfuse `level: ERROR`) is an error step that
                // says its message.
                if n.is_error
                    && let Some(e) = n.error.as_deref().filter(|e| !text.contains(*e))
                {
                    text = if text.trim().is_empty() { e.to_string() } else { format!("{text}\n[error] {e}") };
                }
                let s = self.push(n, agent, StepKind::Message, text);
                self.steps[s].is_error = n.is_error;
                None
            }
            Op::Scope => None,
        }
    }

    fn emit_handoff(&mut self, n: &Node, agent: &str, to: &str, call_id: Option<&str>) {
        let call = self.find_call(&n.name, call_id);
        let text =
            n.output_text.clone().or_else(|| n.input_text.clone()).unwrap_or_else(|| format!("hand off to {to}"));
        let s = self.push(n, agent, StepKind::Delegation, text);
        self.steps[s].delegate_to = Some(to.to_string());
        self.steps[s].tool_name = Some(n.name.clone());
        self.steps[s].is_error = n.is_error;
        if let Some(id) = call_id {
            self.steps[s].ids.refs.push(id.to_string());
            self.answered.insert(id.to_string());
        }
        if let Some(c) = call {
            self.link(c, s, LinkKind::ToolResult);
        }
        self.handoffs.push((s, to.to_string()));
    }

    fn emit_agent_start(&mut self, n: &Node, name: &str, caller: Option<&str>) -> usize {
        let caller = caller.unwrap_or(USER);
        if caller != USER && caller != name {
            self.callers.insert(name.to_string(), caller.to_string());
        }
        let fresh: Vec<String> = self
            .new_msgs(&n.input)
            .into_iter()
            .filter(|m| !matches!(m.role.as_str(), "system" | "developer"))
            .map(Msg::text)
            .filter(|t| !t.trim().is_empty())
            .collect();
        let text = match (n.input.is_empty(), &n.input_text) {
            (false, _) if !fresh.is_empty() => fresh.join("\n\n"),
            (true, Some(t)) => t.clone(),
            _ => format!("invoke agent {name}"),
        };
        for m in &n.input {
            if matches!(m.role.as_str(), "system" | "developer") {
                self.add_role(name, &m.text());
            }
        }
        for m in self.new_msgs(&n.input).into_iter().cloned().collect::<Vec<_>>() {
            self.note_seen(&m);
        }
        let s = self.push(n, caller, StepKind::Delegation, text);
        self.steps[s].delegate_to = Some(name.to_string());
        s
    }

    fn leave(&mut self, n: &Node, agent: &str, delegation: Option<usize>) {
        for m in &n.output {
            if self.seen_count(m.hash_key()) == 0 {
                self.emit_msg(n, agent, m);
            }
        }
        if let Some(d) = delegation
            && let Some(j) = self.next_step_of(agent, d)
        {
            self.link(d, j, LinkKind::Delegation);
        }
    }

    fn emit_llm(&mut self, n: &Node, agent: &str) {
        let mut fresh = self.new_msgs(&n.input);
        // A model call cannot have seen its own reply: an input that holds it was recorded after
        // the call (a message list the program kept changing, serialised later), and the
        // messages from the reply on are later steps, shown where they happen.
        let replies: HashSet<u64> = n.output.iter().filter(|m| !m.parts.is_empty()).map(Msg::hash_key).collect();
        if let Some(cut) = fresh.iter().position(|m| replies.contains(&m.hash_key())) {
            self.late_inputs.push((n.place.clone(), fresh.len() - cut));
            fresh.truncate(cut);
        }
        for m in fresh {
            self.emit_msg(n, agent, m);
        }
        let before = self.steps.len();
        for m in &n.output {
            self.emit_msg(n, agent, m);
        }
        if n.output.is_empty() {
            if let Some(t) = n.output_text.as_deref().filter(|t| !t.trim().is_empty()) {
                self.push(n, agent, StepKind::Message, t.to_string());
            } else if n.is_error {
                let text = n.error.clone().unwrap_or_else(|| format!("{} failed", n.name));
                self.push(n, agent, StepKind::Message, text);
            }
        }
        let target = if self.steps.len() > before { Some(before) } else { self.steps.len().checked_sub(1) };
        if let (Some(t), Some(tok)) = (target, n.tokens)
            && self.steps[t].tokens.is_none()
        {
            self.steps[t].tokens = Some(tok);
        }
        if n.is_error
            && let Some(last) = self.steps.len().checked_sub(1).filter(|&l| l >= before)
        {
            self.steps[last].is_error = true;
            if let Some(e) = n.error.as_deref().filter(|e| !self.steps[last].content.contains(*e)) {
                self.steps[last].content.push_str(&format!("\n[error] {e}"));
            }
        }
    }

    fn emit_tool(&mut self, n: &Node, agent: &str, tool: &str, call_id: Option<&str>) {
        let call = self.tool_call(n, agent, tool, call_id);
        self.emit_tool_result(n, agent, tool, call_id, call);
    }

    /// The call step a tool execution answers: the model's earlier call ([`Self::find_call`]),
    /// else a call step of its own with the execution's arguments.
    fn tool_call(&mut self, n: &Node, agent: &str, tool: &str, call_id: Option<&str>) -> usize {
        if let Some(c) = self.find_call(tool, call_id) {
            return c;
        }
        let args = n.input_text.clone().unwrap_or_default();
        let c = self.push(n, agent, StepKind::ToolCall, args);
        self.steps[c].tool_name = Some(tool.to_string());
        if let Some(id) = call_id {
            self.steps[c].ids.refs.push(id.to_string());
        }
        c
    }

    /// The result step of a tool execution, linked from `call`.
    fn emit_tool_result(&mut self, n: &Node, agent: &str, tool: &str, call_id: Option<&str>, call: usize) {
        let text = match (&n.output_text, &n.error) {
            (Some(t), Some(e)) if n.is_error && !t.contains(e.as_str()) => format!("{t}\n[error] {e}"),
            (Some(t), _) => t.clone(),
            (None, Some(e)) => e.clone(),
            (None, None) => String::new(),
        };
        let failed = super::failed_exit(&text).is_some();
        let r = self.push(n, agent, StepKind::ToolResult, text);
        self.steps[r].tool_name = Some(tool.to_string());
        self.steps[r].is_error = n.is_error || failed;
        self.steps[r].tokens = n.tokens;
        self.warn(r, n);
        if let Some(id) = call_id {
            self.steps[r].ids.refs.push(id.to_string());
            self.answered.insert(id.to_string());
        }
        self.link(call, r, LinkKind::ToolResult);
    }

    /// An earlier call step this tool execution answers: by call id, else the oldest open call
    /// of the same tool (only calls without an id when the execution has one).
    fn find_call(&mut self, tool: &str, call_id: Option<&str>) -> Option<usize> {
        if let Some(&c) = call_id.and_then(|id| self.calls.get(id)) {
            self.close(tool, c);
            return Some(c);
        }
        let call = match call_id {
            // An execution with an id answers only a call without one.
            Some(_) => {
                let queue = self.open_anonymous.get_mut(tool)?;
                loop {
                    let c = queue.pop_front()?;
                    if !self.closed.contains(&c) {
                        break c;
                    }
                }
            }
            None => self.pop_open(tool)?,
        };
        self.closed.insert(call);
        for id in &self.steps[call].ids.refs {
            self.answered.insert(id.clone());
        }
        Some(call)
    }

    /// Marks a call answered; it leaves its queues when it reaches their front.
    fn close(&mut self, _tool: &str, step: usize) {
        self.closed.insert(step);
    }

    /// The oldest call of `tool` still open, taken out of its queue.
    fn pop_open(&mut self, tool: &str) -> Option<usize> {
        let queue = self.open.get_mut(tool)?;
        while let Some(c) = queue.pop_front() {
            if !self.closed.contains(&c) {
                return Some(c);
            }
        }
        None
    }

    /// The oldest open call of `tool`, left in its queue (closed ones in front are dropped).
    fn front_open(&mut self, tool: &str) -> Option<usize> {
        let queue = self.open.get_mut(tool)?;
        while let Some(&c) = queue.front() {
            if !self.closed.contains(&c) {
                return Some(c);
            }
            queue.pop_front();
        }
        None
    }

    fn emit_msg(&mut self, n: &Node, agent: &str, m: &Msg) {
        self.note_seen(m);
        let speaker = match m.role.as_str() {
            "system" | "developer" => {
                self.add_role(agent, &m.text());
                return;
            }
            "user" => m.name.clone().unwrap_or_else(|| self.callers.get(agent).cloned().unwrap_or_else(|| USER.into())),
            "assistant" => m.name.clone().unwrap_or_else(|| agent.to_string()),
            _ => agent.to_string(),
        };
        for p in &m.parts {
            self.emit_part(n, &speaker, &m.role, p);
        }
    }

    fn emit_part(&mut self, n: &Node, speaker: &str, role: &str, p: &Part) {
        match p {
            Part::Text(t) if t.trim().is_empty() => {}
            Part::Text(t) => {
                let s = self.push(n, speaker, StepKind::Message, t.clone());
                self.steps[s].role = role.to_string();
            }
            Part::Reasoning(t) if t.trim().is_empty() => {}
            Part::Reasoning(t) => {
                let s = self.push(n, speaker, StepKind::Thought, t.clone());
                self.steps[s].role = role.to_string();
            }
            Part::ToolCall { id, name, args } => self.emit_call_part(n, speaker, role, id, name, args),
            Part::ToolResponse { id, text, is_error } => {
                self.emit_response_part(n, speaker, role, id.as_deref(), text, *is_error)
            }
        }
    }

    fn emit_call_part(&mut self, n: &Node, speaker: &str, role: &str, id: &Option<String>, name: &str, args: &str) {
        if id.as_ref().is_some_and(|i| self.calls.contains_key(i)) {
            return;
        }
        let s = self.push(n, speaker, StepKind::ToolCall, args.to_string());
        self.steps[s].role = role.to_string();
        self.steps[s].tool_name = Some(name.to_string());
        if let Some(i) = id {
            self.steps[s].ids.refs.push(i.clone());
            self.calls.insert(i.clone(), s);
        }
        self.open.entry(name.to_string()).or_default().push_back(s);
        if id.is_none() {
            self.open_anonymous.entry(name.to_string()).or_default().push_back(s);
        }
    }

    fn emit_response_part(
        &mut self,
        n: &Node,
        speaker: &str,
        role: &str,
        id: Option<&str>,
        text: &str,
        is_error: bool,
    ) {
        if id.is_some_and(|i| self.answered.contains(i)) {
            return;
        }
        let call = match id {
            Some(i) => self.calls.get(i).copied(),
            None => self.oldest_open(),
        };
        // A tool's answer belongs to the agent that called the tool, whichever role carries it
        // (pydantic-ai sends tool returns in a user-role message).
        let speaker = match call {
            Some(c) => self.steps[c].agent.clone(),
            None => speaker.to_string(),
        };
        let s = self.push(n, &speaker, StepKind::ToolResult, text.to_string());
        self.steps[s].role = role.to_string();
        self.steps[s].is_error = is_error || super::failed_exit(text).is_some();
        if let Some(i) = id {
            self.steps[s].ids.refs.push(i.to_string());
            self.answered.insert(i.to_string());
        }
        if let Some(c) = call {
            let tool = self.steps[c].tool_name.clone().unwrap_or_default();
            self.close(&tool, c);
            self.steps[s].tool_name = Some(tool);
            self.link(c, s, LinkKind::ToolResult);
        }
    }

    fn oldest_open(&mut self) -> Option<usize> {
        let tools: Vec<String> = self.open.keys().cloned().collect();
        let step = tools.iter().filter_map(|t| self.front_open(t)).min()?;
        self.close("", step);
        Some(step)
    }

    fn push(&mut self, n: &Node, agent: &str, kind: StepKind, content: String) -> usize {
        let index = self.steps.len();
        match self.by_agent.get_mut(agent) {
            Some(v) => v.push(index),
            None => {
                self.by_agent.insert(agent.to_string(), vec![index]);
            }
        }
        self.steps.push(Step {
            index,
            agent: agent.to_string(),
            role: n.role.clone(),
            kind,
            content,
            // A span without an id of its own (an attribute map alone) gives its steps none.
            ids: StepIds {
                id: Some(n.id.clone()).filter(|i| !i.is_empty()),
                parent: n.parent.clone(),
                ..StepIds::default()
            },
            timestamp: n.timestamp.clone(),
            ..Step::default()
        });
        index
    }

    /// Marks step `s` with the warning of node `n`, when it has one, and writes the warning's
    /// message into the step's text (`[warning] …`) unless the text already holds it.
    fn warn(&mut self, s: usize, n: &Node) {
        let Some(w) = n.warning.as_deref().filter(|_| self.steps[s].warning.is_none()) else {
            return;
        };
        let step = &mut self.steps[s];
        let w = w.trim();
        step.warning = Some(if w.is_empty() { "WARNING".to_string() } else { w.to_string() });
        if step.content.trim().is_empty() {
            step.content = format!("[warning] {}", if w.is_empty() { n.name.as_str() } else { w });
        } else if !w.is_empty() && !step.content.contains(w) {
            step.content.push_str(&format!("\n[warning] {w}"));
        }
    }

    fn link(&mut self, from: usize, to: usize, kind: LinkKind) {
        let l = Link { from, to, kind };
        if from != to && self.linked.insert((from, to, kind as u8)) {
            self.links.push(l);
        }
    }

    fn note_seen(&mut self, m: &Msg) {
        *self.seen.entry(m.hash_key()).or_default() += 1;
    }

    fn seen_count(&self, key: u64) -> usize {
        self.seen.get(&key).copied().unwrap_or(0)
    }

    /// The messages of `msgs` not shown yet: a message is new when it occurs more often in
    /// `msgs` up to its position than it has been shown.
    fn new_msgs<'m>(&self, msgs: &'m [Msg]) -> Vec<&'m Msg> {
        let mut counts: HashMap<u64, usize> = HashMap::new();
        let mut out = Vec::new();
        for m in msgs {
            let key = m.hash_key();
            let c = counts.entry(key).or_default();
            *c += 1;
            if *c > self.seen_count(key) {
                out.push(m);
            }
        }
        out
    }

    fn add_role(&mut self, agent: &str, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        match self.agents.iter_mut().find(|a| a.name == agent) {
            Some(a) if a.role.as_deref().is_some_and(|r| r.contains(text)) => {}
            Some(a) => {
                let joined = match a.role.take() {
                    Some(r) => format!("{r}\n\n{text}"),
                    None => text.to_string(),
                };
                a.role = Some(joined);
            }
            None => self.agents.push(AgentInfo { name: agent.to_string(), role: Some(text.to_string()) }),
        }
    }

    /// Links each hand-off to the target agent's next step.
    fn link_handoffs(&mut self) {
        for (s, to) in std::mem::take(&mut self.handoffs) {
            if let Some(j) = self.next_step_of(&to, s) {
                self.link(s, j, LinkKind::Delegation);
            }
        }
    }

    /// The first step of `agent` after step `after`, by binary search in its steps.
    fn next_step_of(&self, agent: &str, after: usize) -> Option<usize> {
        let steps = self.by_agent.get(agent)?;
        steps.get(steps.partition_point(|&j| j <= after)).copied()
    }

    fn finish(mut self, nodes: &[Node], roots: &[usize]) -> Built {
        self.link_handoffs();
        if !self.late_inputs.is_empty() {
            let left: usize = self.late_inputs.iter().map(|(_, k)| k).sum();
            let places: Vec<&str> = self.late_inputs.iter().take(3).map(|(p, _)| p.as_str()).collect();
            let more = match self.late_inputs.len() {
                k if k > 3 => format!(" and {} more", k - 3),
                _ => String::new(),
            };
            self.diagnostics.push(Diagnostic {
                line: None,
                message: format!(
                    "{} model call(s) hold their own reply in their recorded input ({}{more}): the input was \
                     recorded after the call; the {left} message(s) from the reply on are left out of that \
                     context and shown where they happen",
                    self.late_inputs.len(),
                    places.join(", ")
                ),
            });
        }
        let root_input = roots.first().and_then(|&r| {
            let n = &nodes[r];
            let from_msgs = n.input.iter().find(|m| m.role == "user").map(Msg::text);
            from_msgs.or_else(|| n.input_text.clone())
        });
        let root_output = roots.last().and_then(|&r| {
            let n = &nodes[r];
            let from_msgs = n.output.iter().rev().map(Msg::text).find(|t| !t.is_empty());
            match n.op {
                // A model call's raw output is a response object, not an answer.
                Op::Llm => from_msgs,
                _ => from_msgs.or_else(|| n.output_text.clone()),
            }
        });
        Built {
            steps: self.steps,
            links: self.links,
            agents: self.agents,
            diagnostics: self.diagnostics,
            root_input,
            root_output,
        }
    }
}

/// The chat messages `v` holds ([`super::messages::msgs_from_value`]) when every one has a chat
/// role (`system`, `developer`, `user`, `assistant`, `tool`), else none: how a span of an unknown
/// kind is told to carry a conversation rather than data that happens to have a `type` key.
pub fn chat_messages(v: &serde_json::Value) -> Vec<Msg> {
    let msgs = super::messages::msgs_from_value(v);
    let chat = |m: &Msg| matches!(m.role.as_str(), "system" | "developer" | "user" | "assistant" | "tool");
    match msgs.iter().all(chat) {
        true => msgs,
        false => Vec::new(),
    }
}

/// What a span of a kind its loader does not know becomes, with a [`Diagnostic`] naming the
/// span (place, id, name) and the kind, so nothing is dropped silently (`docs/FORMATS-TRACES.md`,
/// "Nothing silently dropped"). `field` names the kind's field (`span_data.type`, `run_type`).
/// The node's `input` / `output` must hold the chat messages it carries ([`chat_messages`]) and
/// its `input_text` / `output_text` its text. In order:
/// - `as_tool` given (a loader that recognises its own tool span's fields): a tool execution of
///   the span's name, the reason said in the diagnostic;
/// - messages in or out: a model call (as OTel GenAI reads an unknown operation with messages);
/// - text: an event, a message step with its output (else its input) text;
/// - nothing: a scope.
pub fn unknown_kind(n: &mut Node, field: &str, kind: &str, as_tool: Option<&str>, diags: &mut Vec<Diagnostic>) -> Op {
    let has_text = |t: &Option<String>| t.as_deref().is_some_and(|t| !t.trim().is_empty());
    let (op, read_as) = if let Some(why) = as_tool {
        (Op::Tool { name: n.name.clone(), call_id: None }, format!("read as a tool execution of {:?} {why}", n.name))
    } else if !n.input.is_empty() || !n.output.is_empty() {
        (Op::Llm, "read as a model call because it carries messages".to_string())
    } else if has_text(&n.output_text) || has_text(&n.input_text) {
        (Op::Event, "kept as a message with its text".to_string())
    } else {
        (Op::Scope, "kept as a scope (it carries no text)".to_string())
    };
    diags.push(Diagnostic {
        line: None,
        message: format!("{}: unknown {field} {kind:?} (id {:?}, name {:?}); {read_as}", n.place, n.id, n.name),
    });
    op
}

/// A trajectory from built steps: task from the root input or the first user message, observed
/// output from the root output or the last agent message; agents keep their role text.
pub fn into_trajectory(id: String, source: SourceFormat, built: Built) -> Trajectory {
    let task =
        built.root_input.filter(|t| !t.trim().is_empty()).or_else(|| first_user_text(&built.steps)).unwrap_or_default();
    let observed = built.root_output.filter(|t| !t.trim().is_empty()).or_else(|| last_agent_text(&built.steps));
    Trajectory {
        id,
        source,
        task: task.trim().to_string(),
        observed_output: observed.map(|o| o.trim().to_string()),
        steps: built.steps,
        agents: built.agents,
        links: built.links,
        ..Trajectory::default()
    }
}

/// [`load_groups`] over nodes paired with their trace id: grouped by trace id, in first-seen
/// order ([`super::otlp::group_by`]).
pub fn load_by_trace(
    name: &str,
    source: SourceFormat,
    nodes: Vec<(Option<String>, Node)>,
    diagnostics: Vec<Diagnostic>,
) -> Loaded {
    let groups = super::otlp::group_by(nodes, |(t, _)| t.clone())
        .into_iter()
        .map(|(t, nodes)| (t, nodes.into_iter().map(|(_, n)| n).collect()))
        .collect();
    load_groups(name, source, groups, diagnostics)
}

/// One trajectory per group of nodes (one group per trace id): ids are `name` for a single
/// group, else `name#<trace id>`; each trace's diagnostics are prefixed with its id.
pub fn load_groups(
    name: &str,
    source: SourceFormat,
    groups: Vec<(Option<String>, Vec<Node>)>,
    mut diagnostics: Vec<Diagnostic>,
) -> Loaded {
    let single = groups.len() == 1;
    let mut trajectories = Vec::new();
    for (trace, nodes) in groups {
        let mut built = build(nodes);
        let id = match (&trace, single) {
            (Some(t), false) => format!("{name}#{t}"),
            _ => name.to_string(),
        };
        for mut d in built.diagnostics.drain(..) {
            if !single {
                d.message = format!("trace {id}: {}", d.message);
            }
            diagnostics.push(d);
        }
        let mut t = into_trajectory(id, source, built);
        if let Some(tr) = trace {
            t.metadata.push(("trace_id".into(), tr));
        }
        trajectories.push(t);
    }
    Loaded { format: source, trajectories, diagnostics }
}

/// The first user message of the steps, for formats that keep the task nowhere else.
pub fn first_user_text(steps: &[Step]) -> Option<String> {
    steps.iter().find(|s| s.agent == USER && s.kind == StepKind::Message).map(|s| s.content.trim().to_string())
}

/// The last message not spoken by the user: the run's answer when no output is recorded.
pub fn last_agent_text(steps: &[Step]) -> Option<String> {
    steps
        .iter()
        .rev()
        .find(|s| s.agent != USER && s.kind == StepKind::Message && !s.content.trim().is_empty())
        .map(|s| s.content.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, parent: Option<&str>, op: Op) -> Node {
        let mut n = Node::new(id.into(), parent.map(Into::into), id.into(), id.into());
        n.op = op;
        n
    }

    fn text(role: &str, t: &str) -> Msg {
        Msg { role: role.into(), name: None, parts: vec![Part::Text(t.into())] }
    }

    #[test]
    fn an_input_holding_the_call_s_own_reply_is_cut_there_and_a_repeated_reply_is_not() {
        let agent = Op::Agent { name: "a".into(), role: None };
        // Call 1 was logged with the list it kept appending to: its reply "ok", the user's "again"
        // and call 2's reply "ok" (said twice, legitimately) are all in its input.
        let later = vec![text("user", "q"), text("assistant", "ok"), text("user", "again"), text("assistant", "ok")];
        let mut llm1 = node("b", Some("a"), Op::Llm);
        llm1.sort_key = Some("1".into());
        llm1.input = later.clone();
        llm1.output = vec![text("assistant", "ok")];
        let mut llm2 = node("c", Some("a"), Op::Llm);
        llm2.sort_key = Some("2".into());
        llm2.input = later[..3].to_vec();
        llm2.output = vec![text("assistant", "ok")];
        let built = build(vec![node("a", None, agent), llm1, llm2]);
        let got: Vec<(&str, &str)> = built.steps.iter().map(|s| (s.agent.as_str(), s.content.as_str())).collect();
        assert_eq!(got, [("user", "invoke agent a"), ("user", "q"), ("a", "ok"), ("user", "again"), ("a", "ok")]);
        let d: Vec<&str> = built.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            d,
            ["1 model call(s) hold their own reply in their recorded input (b): the input was recorded after the \
              call; the 3 message(s) from the reply on are left out of that context and shown where they happen"]
        );
    }

    #[test]
    fn agent_names_propagate_to_descendants_and_repeated_input_is_shown_once() {
        let agent = Op::Agent { name: "planner".into(), role: None };
        let mut llm1 = node("b", Some("a"), Op::Llm);
        llm1.sort_key = Some("1".into());
        llm1.input = vec![text("user", "q")];
        llm1.output = vec![text("assistant", "thinking aloud")];
        let mut llm2 = node("c", Some("a"), Op::Llm);
        llm2.sort_key = Some("2".into());
        llm2.input = vec![text("user", "q"), text("assistant", "thinking aloud")];
        llm2.output = vec![text("assistant", "done")];
        let built = build(vec![llm2, node("a", None, agent), llm1]);
        let got: Vec<(&str, StepKind, &str)> =
            built.steps.iter().map(|s| (s.agent.as_str(), s.kind, s.content.as_str())).collect();
        assert_eq!(
            got,
            vec![
                ("user", StepKind::Delegation, "invoke agent planner"),
                ("user", StepKind::Message, "q"),
                ("planner", StepKind::Message, "thinking aloud"),
                ("planner", StepKind::Message, "done"),
            ]
        );
        assert!(built.links.contains(&Link { from: 0, to: 2, kind: LinkKind::Delegation }));
        assert!(built.links.contains(&Link { from: 0, to: 1, kind: LinkKind::Parent }));
    }

    #[test]
    fn tool_node_answers_the_earlier_call_part_by_id() {
        let mut llm = node("a", None, Op::Llm);
        llm.output = vec![Msg {
            role: "assistant".into(),
            name: None,
            parts: vec![Part::ToolCall { id: Some("c1".into()), name: "f".into(), args: "{}".into() }],
        }];
        let mut tool = node("b", None, Op::Tool { name: "f".into(), call_id: Some("c1".into()) });
        tool.sort_key = Some("2".into());
        tool.output_text = Some("42".into());
        let built = build(vec![llm, tool]);
        assert_eq!(built.steps.len(), 2);
        assert_eq!(built.links, vec![Link { from: 0, to: 1, kind: LinkKind::ToolResult }]);
    }

    #[test]
    fn start_times_sort_by_instant_whatever_their_precision_and_offset() {
        let k = time_sort_key;
        // 09:15:01 UTC written five ways is one key; later instants sort after it.
        let base = k("2025-03-04T09:15:01Z");
        for same in [
            "2025-03-04T09:15:01.000Z",
            "2025-03-04T10:15:01+01:00",
            "2025-03-04 09:15:01",
            "2025-03-04T04:15:01.000000-0500",
        ] {
            assert_eq!(k(same), base, "{same}");
        }
        assert_eq!(base, format!("{:024}", 1_741_079_701_000_000_000u128));
        assert!(k("2025-03-04T09:15:00.999999Z") < base);
        assert!(base < k("2025-03-04T09:15:01.25Z"));
        assert!(k("2025-03-04T09:15:01.25Z") < k("2025-03-04T09:15:01.250000001Z"));
        assert!(k("2025-03-04T10:15:00.600+01:00") < k("2025-03-04T09:15:00.700Z"));
        // Unix nanoseconds as digits compare with parsed times.
        assert_eq!(k("1741079701000000000"), base);
        assert_eq!(k("2025-03-04T09:15"), format!("{:024}", 1_741_079_700_000_000_000u128));
        // Not a time: unchanged (a LangSmith `dotted_order`, a bad date, before 1970).
        for other in
            ["20250304T091501000000Zabc", "2025-13-04T09:15:01Z", "1969-12-31T23:59:59Z", "2025-03-04T09:15:01+1"]
        {
            assert_eq!(k(other), other);
        }
    }

    #[test]
    fn a_warning_marks_the_nodes_last_step_and_a_warning_scope_gets_a_step() {
        let mut tool = node("t", None, Op::Tool { name: "search".into(), call_id: None });
        tool.input_text = Some("q".into());
        tool.output_text = Some("[]".into());
        tool.warning = Some("0 documents matched".into());
        tool.sort_key = Some("1".into());
        let mut scope = node("s", None, Op::Scope);
        scope.name = "post".into();
        scope.warning = Some(String::new());
        scope.sort_key = Some("2".into());
        let built = build(vec![scope, tool]);
        let got: Vec<(&str, Option<&str>)> =
            built.steps.iter().map(|s| (s.content.as_str(), s.warning.as_deref())).collect();
        assert_eq!(
            got,
            [
                ("q", None),
                ("[]\n[warning] 0 documents matched", Some("0 documents matched")),
                ("[warning] post", Some("WARNING"))
            ]
        );
        assert!(built.steps.iter().all(|s| !s.is_error));
    }

    #[test]
    fn missing_parent_and_cycles_become_roots_with_diagnostics() {
        let a = node("a", Some("zz"), Op::Event);
        let b = node("b", Some("c"), Op::Event);
        let c = node("c", Some("b"), Op::Event);
        let built = build(vec![a, b, c]);
        assert_eq!(built.steps.len(), 3);
        assert_eq!(built.diagnostics.len(), 2, "{:?}", built.diagnostics);
        assert!(built.diagnostics[0].message.contains("parent \"zz\""));
        assert!(built.diagnostics[1].message.contains("parent chain loops back to itself"));
    }

    #[test]
    fn a_node_sent_twice_is_one_step_and_a_self_parent_is_reported() {
        let a = node("a", None, Op::Event);
        let again = node("a", None, Op::Event);
        let own = node("s", Some("s"), Op::Event);
        let built = build(vec![a, again, own]);
        assert_eq!(built.steps.len(), 2);
        let msgs: Vec<&str> = built.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert!(msgs[0].contains("was sent twice"), "{msgs:?}");
        assert!(msgs[1].ends_with("is its own parent; loaded as a root"), "{msgs:?}");
    }
}
