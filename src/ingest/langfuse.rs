//! Langfuse trace exports (`TraceWithFullDetails`, `GET /api/public/traces/{id}`).
//!
//! Schema: langfuse/langfuse-python@c3c6a09 `langfuse/api/commons/types/*.py` (`TRACE_FORMATS.md`
//! row 7b). A trace is `{id, timestamp, name, input, output, sessionId, userId, metadata, tags,
//! observations: [...], scores: [...]}`; an observation is `{id, traceId, type, name, startTime,
//! endTime, parentObservationId, input, output, model, usageDetails | usage, level,
//! statusMessage, metadata}`. Each observation becomes a [`spantree`] node, siblings ordered by
//! the instant of `startTime` (read at any precision and offset, as Langfuse's trace view sorts by
//! the parsed time; ties keep the document's order, as its stable sort does):
//! - `AGENT` → an agent invocation named `name`; descendants act as it;
//! - `GENERATION` → a model call: `input` (chat messages, `{messages}`, or a prompt string) and
//!   `output` (an assistant message with `tool_calls`, or text); tokens from `usageDetails.
//!   {input, output}` (legacy `usage.{input, output}`, `promptTokens` / `completionTokens`);
//! - `TOOL` (and `RETRIEVER`, `EMBEDDING`, `EVALUATOR`, `GUARDRAIL`) → a tool execution: `input`
//!   arguments, `output` result, call id from `metadata.tool_call_id`;
//! - `EVENT` at level DEBUG / DEFAULT → no step (a scope, so observations below it stay in place):
//!   what the application logged, listed in the trajectory's metadata as `event` = `name payload`
//!   (payload clipped to 300 characters), never an agent's message nor the final output; an
//!   EVENT at level WARNING or ERROR → a message step that says it;
//! - `SPAN`, `CHAIN` → scopes; another type → kept with a diagnostic naming
//!   the observation (id, name) and the type ([`spantree::unknown_kind`]): a model call when its
//!   `input` / `output` hold chat messages, else a message with its output (else input) text, else
//!   a scope;
//! - `level` (`ObservationLevel`): `ERROR` → the observation's steps are errors and its last says
//!   `statusMessage` (`[error] …`); `WARNING` → its last step carries the warning
//!   ([`crate::model::Step::warning`], the `statusMessage` or `WARNING`) and says the message
//!   (`[warning] …`); a warning scope (SPAN) gets a step of its own; `DEBUG`, `DEFAULT` → plain.
//!
//! The trace's `input` / `output` are the task and observed output. Layouts: one trace, a list of
//! traces (one trajectory each), `{data: [...]}`, or `{trace, observations}`; and a page of the
//! observations API (`GET /api/public/observations`, `{data: [observation...], meta: {page,
//! limit, totalItems, totalPages}}`), whose observations are grouped by `traceId` into one
//! trajectory each (no trace header: task and answer come from the messages). An observation whose
//! parent was never ingested is attached at the trace root, with a diagnostic.

use serde_json::Value;

use super::messages::{Msg, Part, msg_from_value, msgs_from_value};
use super::spantree::{self, Node, Op};
use super::{Document, FormatError, ListDoc, Loaded, value_text};
use crate::model::{Diagnostic, SourceFormat, TokenCounts};

const TOOL_TYPES: [&str; 5] = ["TOOL", "RETRIEVER", "EMBEDDING", "EVALUATOR", "GUARDRAIL"];

/// Whether `doc` is a Langfuse export: a trace object with an `observations` array of objects
/// with `id` and `type` (also in a list or under `data`), or a page of the observations API
/// (`{data: [observation...], meta}`, observations with `id`, `traceId` and `type`).
pub fn detect(doc: &Document) -> bool {
    let Document::Json(v) = doc else {
        return false;
    };
    !traces(v).is_empty()
}

fn is_trace(v: &Value) -> bool {
    v.get("observations")
        .and_then(Value::as_array)
        .is_some_and(|obs| obs.iter().any(|o| o.get("id").is_some() && o.get("type").is_some()))
}

/// An observation of the observations API: `{id, traceId, type, ...}`, not a trace.
fn is_observation(v: &Value) -> bool {
    v.get("id").is_some()
        && v.get("traceId").is_some_and(Value::is_string)
        && v.get("type").is_some_and(Value::is_string)
        && v.get("observations").is_none()
}

/// One trace of a document: its header (the trace object, when the document has one), its id and
/// its observations.
struct TraceGroup<'a> {
    header: Option<&'a Value>,
    id: Option<String>,
    /// `(index in the document's list, observation)`.
    observations: Vec<(usize, &'a Value)>,
}

/// The traces of a document: trace objects (one, a list, or under `data`), else the
/// observations of an observations API page grouped by `traceId` in order of first appearance.
fn traces(v: &Value) -> Vec<TraceGroup<'_>> {
    let list = match v {
        Value::Array(items) => Some(items),
        Value::Object(m) => m.get("data").and_then(Value::as_array),
        _ => None,
    };
    fn whole(t: &Value) -> TraceGroup<'_> {
        let header = t.get("trace").unwrap_or(t);
        let observations = t.get("observations").and_then(Value::as_array).map(|o| o.iter().enumerate().collect());
        TraceGroup {
            header: Some(header),
            id: header.get("id").map(value_text),
            observations: observations.unwrap_or_default(),
        }
    }
    let Some(items) = list else {
        return if is_trace(v) { vec![whole(v)] } else { Vec::new() };
    };
    let found: Vec<TraceGroup<'_>> = items.iter().filter(|t| is_trace(t)).map(whole).collect();
    if !found.is_empty() || !items.iter().any(is_observation) {
        return found;
    }
    let observations: Vec<(usize, &Value)> = items.iter().enumerate().filter(|(_, o)| is_observation(o)).collect();
    super::otlp::group_by(observations, |(_, o)| o.get("traceId").map(value_text))
        .into_iter()
        .map(|(id, observations)| TraceGroup { header: None, id, observations })
        .collect()
}

/// Loads a Langfuse export named `name`; one trajectory per trace.
///
/// # Errors
/// A message when no trace with observations is found.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let Document::Json(v) = doc else {
        return Err(FormatError::JsonLines { expected: "one JSON trace export" });
    };
    let found = traces(v);
    if found.is_empty() {
        return Err(FormatError::Shape {
            expected: "a trace with an \"observations\" array of {id, type}, or an observations API page \
                       {data: [{id, traceId, type}], meta}"
                .into(),
        });
    }
    let mut diags = Vec::new();
    let mut groups = Vec::new();
    let mut events = Vec::new();
    for (ti, t) in found.iter().enumerate() {
        let mut sink = Events::default();
        let nodes = t
            .observations
            .iter()
            .filter_map(|&(i, o)| {
                let place = match t.header {
                    Some(_) => format!("traces[{ti}].observations[{i}]"),
                    None => format!("data[{i}]"),
                };
                node(o, &place, &mut sink, &mut diags)
            })
            .collect();
        groups.push((t.id.clone(), nodes));
        events.push(sink);
    }
    let mut loaded = spantree::load_groups(name, SourceFormat::Langfuse, groups, diags);
    for ((traj, t), sink) in loaded.trajectories.iter_mut().zip(&found).zip(events) {
        if let Some(h) = t.header {
            apply_header(traj, h);
        }
        sink.apply(traj);
    }
    Ok(loaded)
}

/// Loads one trace `{id, input, output, ..., observations: [...]}` read one observation at a time
/// ([`ListDoc`]): each is parsed, mapped to a span-tree node and dropped before the next. `None`
/// for any other shape [`load`] reads (a list of traces, an observations page, a trace under
/// `trace`), an observation that does not parse, or no usable observation.
pub fn load_list(name: &str, list: &ListDoc<'_>) -> Option<Loaded> {
    if list.key.as_deref() != Some("observations") || list.root.contains_key("trace") {
        return None;
    }
    let mut diags = Vec::new();
    let mut nodes = Vec::new();
    let mut sink = Events::default();
    for (i, raw) in list.items.iter().enumerate() {
        let o = super::value_line(raw.get())?;
        if let Some(n) = node(&o, &format!("traces[0].observations[{i}]"), &mut sink, &mut diags) {
            nodes.push(n);
        }
    }
    if nodes.is_empty() {
        return None;
    }
    let id = list.root.get("id").map(value_text);
    let mut loaded = spantree::load_groups(name, SourceFormat::Langfuse, vec![(id, nodes)], diags);
    let header = Value::Object(list.root.clone());
    for traj in &mut loaded.trajectories {
        apply_header(traj, &header);
    }
    if let Some(traj) = loaded.trajectories.first_mut() {
        sink.apply(traj);
    }
    Some(loaded)
}

/// Task and observed output from the trace's `input` / `output`; name, session and user as
/// metadata.
fn apply_header(t: &mut crate::model::Trajectory, header: &Value) {
    if let Some(input) = header.get("input").filter(|v| !v.is_null()) {
        let first_user = msgs_from_value(input).into_iter().find(|m| m.role == "user");
        let task = first_user.map(|m| m.text()).unwrap_or_else(|| io_text(input));
        t.task = task.trim().to_string();
    }
    if let Some(out) = header.get("output").filter(|v| !v.is_null()).map(io_text) {
        t.observed_output = Some(out.trim().to_string());
    }
    for (key, field) in [("name", "name"), ("session_id", "sessionId"), ("user_id", "userId")] {
        if let Some(v) = header.get(field).and_then(Value::as_str) {
            t.metadata.push((key.into(), v.to_string()));
        }
    }
}

/// Longest payload kept of an event that is no step, in characters.
const EVENT_CHARS: usize = 300;

/// The EVENT observations of one trace that are no steps (level DEFAULT or DEBUG): what the
/// application logged, not something an agent said or did.
#[derive(Default)]
struct Events {
    /// `(start-time sort key, position, "name payload")`.
    list: Vec<(Option<String>, usize, String)>,
}

impl Events {
    /// Adds the events to the trajectory's metadata in start-time order, one `event` entry each
    /// (`response-sent {"channel":"docs-widget"}`; payloads clipped to [`EVENT_CHARS`]).
    fn apply(mut self, t: &mut crate::model::Trajectory) {
        self.list.sort_by(|a, b| (a.0.as_deref(), a.1).cmp(&(b.0.as_deref(), b.1)));
        for (_, _, text) in self.list {
            t.metadata.push(("event".into(), text));
        }
    }
}

fn node(o: &Value, place: &str, events: &mut Events, diags: &mut Vec<Diagnostic>) -> Option<Node> {
    let text = |k: &str| o.get(k).filter(|v| !v.is_null()).map(value_text);
    let Some(id) = text("id") else {
        diags.push(Diagnostic { line: None, message: format!("{place} skipped: missing \"id\"") });
        return None;
    };
    let name = text("name").unwrap_or_default();
    let mut n = Node::new(id, text("parentObservationId"), name.clone(), format!("observation {place} ({name})"));
    // Langfuse orders observations by the instant they started (`startTime`, a JS `Date`: the
    // same instant in another precision or offset is a tie), ties in the order it got them.
    n.sort_key = text("startTime").map(|t| spantree::time_sort_key(&t));
    n.timestamp = text("startTime");
    // `level` (langfuse `ObservationLevel`): DEBUG and DEFAULT are plain, WARNING marks the
    // observation's last step with its `statusMessage`, ERROR makes it an error step.
    let level = text("level").unwrap_or_default().trim().to_ascii_uppercase();
    let status = text("statusMessage").filter(|m| !m.trim().is_empty());
    n.is_error = level == "ERROR";
    n.error = status.clone();
    if level == "WARNING" {
        n.warning = Some(status.unwrap_or_default());
    }
    n.role = text("type").unwrap_or_default().to_ascii_uppercase();
    // An event's payload is shown whole (an object keeps its keys); other observations show the
    // text their input and output carry.
    let io = if n.role == "EVENT" { event_text } else { io_text };
    n.input_text = o.get("input").filter(|v| !v.is_null()).map(io);
    n.output_text = o.get("output").filter(|v| !v.is_null()).map(io);
    n.op = observation_op(o, &mut n, diags);
    // An EVENT (a point in time the application logged: a message sent, a cache hit) is no
    // step unless it reports a problem: it is kept as a scope, so observations below it stay in
    // place, and listed in the trajectory's metadata.
    if n.role == "EVENT" && n.op == Op::Event && !n.is_error && n.warning.is_none() {
        let payload = n.output_text.take().or_else(|| n.input_text.take()).unwrap_or_default();
        let text = match payload.trim() {
            "" => n.name.clone(),
            p => format!("{} {}", n.name, crate::text::clip(p, EVENT_CHARS)),
        };
        events.list.push((n.sort_key.clone(), events.list.len(), text.trim().to_string()));
        n.op = Op::Scope;
    }
    Some(n)
}

/// What an observation is, by `type` (see the module doc).
fn observation_op(o: &Value, n: &mut Node, diags: &mut Vec<Diagnostic>) -> Op {
    let name = n.name.clone();
    match n.role.as_str() {
        "AGENT" => {
            // A string input is the delegated prompt: shown once, on the delegation step.
            if let Some(Value::String(s)) = o.get("input") {
                n.input = vec![text_msg("user", s)];
            }
            Op::Agent { name, role: None }
        }
        "GENERATION" => generation(o, n),
        t if TOOL_TYPES.contains(&t) => Op::Tool { name, call_id: o.pointer("/metadata/tool_call_id").map(value_text) },
        "EVENT" => Op::Event,
        "SPAN" | "CHAIN" => Op::Scope,
        other => {
            n.input = o.get("input").map(spantree::chat_messages).unwrap_or_default();
            n.output = o.get("output").map(spantree::chat_messages).unwrap_or_default();
            let other = other.to_string();
            spantree::unknown_kind(n, "observation type", &other, None, diags)
        }
    }
}

fn generation(o: &Value, n: &mut Node) -> Op {
    n.input = match o.get("input") {
        Some(Value::String(s)) => vec![text_msg("user", s)],
        Some(v) => msgs_from_value(v),
        None => Vec::new(),
    };
    n.output = match o.get("output") {
        Some(Value::String(s)) => vec![text_msg("assistant", s)],
        Some(v) => msg_from_value(v).or_else(|| msgs_from_value(v).into_iter().last()).into_iter().collect(),
        None => Vec::new(),
    };
    n.tokens = tokens(o);
    Op::Llm
}

fn text_msg(role: &str, s: &str) -> Msg {
    Msg { role: role.into(), name: None, parts: vec![Part::Text(s.to_string())] }
}

fn tokens(o: &Value) -> Option<TokenCounts> {
    let get = |path: &str| o.pointer(path).and_then(Value::as_u64);
    let input = get("/usageDetails/input").or_else(|| get("/usage/input")).or_else(|| get("/promptTokens"));
    let output = get("/usageDetails/output").or_else(|| get("/usage/output")).or_else(|| get("/completionTokens"));
    (input.is_some() || output.is_some())
        .then(|| TokenCounts { input: input.unwrap_or(0), output: output.unwrap_or(0) })
}

/// The value an `@observe`d function was called with, when `v` is its `{args, kwargs}` record:
/// the one positional argument without keywords, else the keywords without positional ones.
fn observed_args(v: &Value) -> Option<&Value> {
    let m = v.as_object().filter(|m| m.len() == 2)?;
    let args = m.get("args")?.as_array()?;
    let kwargs = m.get("kwargs")?.as_object()?;
    match (args.as_slice(), kwargs.is_empty()) {
        ([one], true) => Some(one),
        ([], false) => m.get("kwargs"),
        _ => None,
    }
}

/// Text of an EVENT's `input` / `output`: strings as they are, anything else as JSON.
fn event_text(v: &Value) -> String {
    value_text(v)
}

/// Text of an `input` / `output`: strings as they are, a message's text, a one-field object's
/// value, the arguments the `@observe` decorator records (`{args, kwargs}`, langfuse-python
/// `_client/observe.py`, `_get_input_from_func_args`) as the one value passed or the keyword
/// arguments, else JSON.
fn io_text(v: &Value) -> String {
    if let Some(passed) = observed_args(v) {
        return io_text(passed);
    }
    match v {
        Value::String(s) => s.clone(),
        Value::Object(m) if m.len() == 1 => m.values().next().map(io_text).unwrap_or_default(),
        _ => match msg_from_value(v) {
            Some(msg) if !msg.text().is_empty() => msg.text(),
            _ => value_text(v),
        },
    }
}
