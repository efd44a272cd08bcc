//! OpenAI Chat Completions message arrays: a bare array `[{role, content, ...}]` or an object
//! `{"messages": [...]}` (a request body, an AutoGen v0.2 chat history).
//!
//! One message is one step, except an assistant message with `tool_calls`: its text (if any) is a
//! message step and each `tool_calls[k]` is a tool_call step whose content is
//! `name(arguments)`. A `role: "tool"` message is a tool_result step; its `tool_call_id` is
//! matched to the call's `id`, giving a [`LinkKind::ToolResult`] link. Legacy `function_call` /
//! `role: "function"` pairs are matched by function name. The agent is `name` when given (AutoGen
//! uses it for agent names), else the role. `ids.id` is the message's `index` field when present,
//! else its 0-based position; `ids.refs` holds the call id. Fields written as Python `repr`
//! strings (some τ-bench dumps) are decoded with [`super::pyrepr`].

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{
    DETECT_SAMPLE, Document, FormatError, ListDoc, Loaded, content_text, describe_value, pyrepr, str_field, type_name,
    value_line,
};
use crate::model::{AgentInfo, Diagnostic, Link, LinkKind, SourceFormat, Step, StepKind, Trajectory};

/// The roles of the Chat Completions API (`function` is the legacy tool role).
pub const ROLES: [&str; 6] = ["system", "developer", "user", "assistant", "tool", "function"];

/// Top-level keys that mark a `{"messages": [...]}` document as another tool's run, which holds
/// chat messages but is not a plain chat: mini-SWE-agent (`trajectory_format`), SWE-agent
/// (`trajectory`, `replay_config`), Who&When and OpenHands (`history`), τ-bench (`traj`,
/// `simulations`).
pub const FOREIGN_KEYS: [&str; 6] =
    ["trajectory_format", "trajectory", "replay_config", "history", "traj", "simulations"];

/// Whether a document is a chat message array: an array (or `{"messages": [...]}` without any of
/// [`FOREIGN_KEYS`]) in which more than half of the (first [`DETECT_SAMPLE`]) items are objects
/// with a Chat Completions role.
pub fn detect(doc: &Document) -> bool {
    let Document::Json(v) = doc else { return false };
    let foreign = v.as_object().is_some_and(|m| FOREIGN_KEYS.iter().any(|k| m.contains_key(*k)));
    !foreign && messages_of(v).is_some_and(looks_like_messages)
}

/// Whether more than half of the first [`DETECT_SAMPLE`] `items` have a Chat Completions role.
pub fn looks_like_messages(items: &[Value]) -> bool {
    let sample = &items[..items.len().min(DETECT_SAMPLE)];
    let known = sample.iter().filter(|m| has_chat_role(m)).count();
    known > 0 && known * 2 > sample.len()
}

fn has_chat_role(m: &Value) -> bool {
    decode_message(m)
        .ok()
        .and_then(|m| m.get("role").and_then(Value::as_str).map(str::to_owned))
        .is_some_and(|r| ROLES.contains(&r.as_str()))
}

fn messages_of(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Array(items) => Some(items),
        Value::Object(m) => m.get("messages")?.as_array().map(Vec::as_slice),
        _ => None,
    }
}

/// Loads a chat message array named `name`.
///
/// # Errors
/// A message when the document is JSON Lines or holds no message array.
pub fn load(name: &str, doc: &Document) -> Result<Loaded, FormatError> {
    let Document::Json(v) = doc else {
        return Err(FormatError::JsonLines { expected: "one JSON document" });
    };
    let messages = messages_of(v).ok_or_else(|| FormatError::Found {
        expected: "an array of messages or an object with a \"messages\" array",
        found: describe_value(v).into(),
    })?;
    Ok(load_items(name, messages.iter().map(Cow::Borrowed)))
}

/// Loads a chat message array read one message at a time ([`ListDoc`]: the document is the
/// array, or holds it under `messages`): each message is parsed when it is reached, mapped and
/// dropped before the next, so no `Value` of the whole document is held. Same result as [`load`]
/// on the same document; `None` when a message does not parse on its own.
pub fn load_list(name: &str, list: &ListDoc<'_>) -> Option<Loaded> {
    let mut bad = false;
    let items = list.items.iter().map_while(|raw| match value_line(raw.get()) {
        Some(v) => Some(Cow::Owned(v)),
        None => {
            bad = true;
            None
        }
    });
    let loaded = load_items(name, items);
    (!bad).then_some(loaded)
}

fn load_items<'v>(name: &str, messages: impl Iterator<Item = Cow<'v, Value>>) -> Loaded {
    let mut t = Trajectory { id: name.to_string(), source: SourceFormat::OpenAiChat, ..Trajectory::default() };
    let mut diagnostics = Vec::new();
    read_items(messages, "messages", &mut t, &mut diagnostics);
    t.task = first_text(&t, "user").unwrap_or_default();
    t.observed_output = last_answer(&t);
    Loaded { format: SourceFormat::OpenAiChat, trajectories: vec![t], diagnostics }
}

/// Appends the steps and tool links of `messages` to `t`; bad messages and calls are skipped with
/// a diagnostic naming `label[i]`. The first system message becomes the role text of `assistant`.
pub fn read_messages(messages: &[Value], label: &str, t: &mut Trajectory, diagnostics: &mut Vec<Diagnostic>) {
    read_items(messages.iter().map(Cow::Borrowed), label, t, diagnostics);
}

/// [`read_messages`] over messages given one at a time, each dropped once read.
fn read_items<'v>(
    messages: impl Iterator<Item = Cow<'v, Value>>,
    label: &str,
    t: &mut Trajectory,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut reader = Reader { t, diagnostics, calls: HashMap::new(), legacy: Vec::new() };
    for (i, item) in messages.enumerate() {
        let place = format!("{label}[{i}]");
        match decode_message(&item) {
            Ok(m) => reader.message(&m, i, &place),
            Err(e) => reader.note(format!("{place}: {e}; record skipped")),
        }
    }
}

/// A message object with Python-repr fields decoded: all string fields when `role` itself is a
/// quoted repr (`"'user'"`), else only `tool_calls` / `function_call` when they are strings.
///
/// # Errors
/// When the item is not an object (or the repr of one).
pub fn decode_message(item: &Value) -> Result<Cow<'_, Map<String, Value>>, FormatError> {
    let obj = match item {
        Value::Object(m) => m,
        Value::String(s) => match pyrepr::parse(s) {
            Some(Value::Object(m)) => return Ok(Cow::Owned(decode_fields(m))),
            _ => return Err(FormatError::Found { expected: "an object", found: "a string".into() }),
        },
        other => return Err(FormatError::not_a("an object", other)),
    };
    let repr_role = obj.get("role").and_then(Value::as_str).is_some_and(|r| r.starts_with(['\'', '"']));
    let string_calls = ["tool_calls", "function_call"].iter().any(|k| obj.get(*k).is_some_and(Value::is_string));
    if !repr_role && !string_calls {
        return Ok(Cow::Borrowed(obj));
    }
    let mut out = obj.clone();
    for (key, v) in out.iter_mut() {
        let wanted = repr_role || key == "tool_calls" || key == "function_call";
        if let (true, Value::String(s)) = (wanted, &*v)
            && let Some(decoded) = decode_text(s)
        {
            *v = decoded;
        }
    }
    Ok(Cow::Owned(out))
}

fn decode_fields(mut m: Map<String, Value>) -> Map<String, Value> {
    for v in m.values_mut() {
        if let Value::String(s) = &*v
            && let Some(decoded) = decode_text(s)
        {
            *v = decoded;
        }
    }
    m
}

/// A string that holds a repr or JSON literal, decoded; `None` when it is plain text.
fn decode_text(s: &str) -> Option<Value> {
    pyrepr::parse(s).or_else(|| serde_json::from_str(s).ok())
}

/// `(call id, function name, arguments text)`; the id is `None` for a legacy `function_call`.
type Call = (Option<String>, String, String);

struct Reader<'a> {
    t: &'a mut Trajectory,
    diagnostics: &'a mut Vec<Diagnostic>,
    /// Call id → step index of tool calls not yet answered.
    calls: HashMap<String, usize>,
    /// `(function name, step index)` of legacy `function_call`s not yet answered.
    legacy: Vec<(String, usize)>,
}

impl Reader<'_> {
    fn note(&mut self, message: String) {
        self.diagnostics.push(Diagnostic { line: None, message });
    }

    fn message(&mut self, m: &Map<String, Value>, i: usize, place: &str) {
        let role = match m.get("role") {
            Some(Value::String(r)) => r.trim().to_string(),
            Some(other) => {
                let found = type_name(other);
                return self.note(format!("{place}: \"role\" is {found}, expected a string; record skipped"));
            }
            None => return self.note(format!("{place}: missing \"role\"; record skipped")),
        };
        let content = match content_text(m.get("content")) {
            // A refusal is what the model said instead of content.
            // An audio reply (`content: null`) said its `audio.transcript`.
            Ok(c) if c.is_empty() => m
                .get("refusal")
                .and_then(Value::as_str)
                .or_else(|| super::messages::audio_transcript(m.get("audio")))
                .map(str::to_string)
                .unwrap_or(c),
            Ok(c) => c,
            Err(e) => return self.note(format!("{place}: {e}; record skipped")),
        };
        let base = Step {
            agent: agent_of(m, &role),
            ids: crate::model::StepIds { id: Some(message_id(m, i)), ..Default::default() },
            role: role.clone(),
            content,
            ..Step::default()
        };
        match role.as_str() {
            "tool" => self.tool_result(m, base, place),
            "function" => self.function_result(m, base),
            _ => self.speaker(m, base, place),
        }
    }

    /// A message of system / user / assistant: its text step (kept when it has text or no call),
    /// then one tool_call step per call, each registered for its result.
    fn speaker(&mut self, m: &Map<String, Value>, base: Step, place: &str) {
        if base.role == "system" && self.t.agents.is_empty() && !base.content.is_empty() {
            self.t.agents.push(AgentInfo { name: "assistant".into(), role: Some(base.content.clone()) });
        }
        let calls: Vec<(Option<String>, String, Step)> = self
            .calls_of(m, place)
            .into_iter()
            .map(|(id, name, args)| (id.clone(), name.clone(), call_step(&base, id, name, args)))
            .collect();
        if calls.is_empty() || !base.content.trim().is_empty() {
            self.t.steps.push(base);
        }
        for (id, name, step) in calls {
            let at = self.t.steps.len();
            match id {
                Some(id) => {
                    self.calls.insert(id, at);
                }
                None => self.legacy.push((name, at)),
            }
            self.t.steps.push(step);
        }
    }

    /// `(id, name, arguments)` of each readable `tool_calls[k]` and of a legacy `function_call`
    /// (id `None`); unreadable calls are skipped with a diagnostic.
    fn calls_of(&mut self, m: &Map<String, Value>, place: &str) -> Vec<Call> {
        let mut out = Vec::new();
        match m.get("tool_calls") {
            None | Some(Value::Null) => {}
            Some(Value::Array(calls)) => {
                for (k, call) in calls.iter().enumerate() {
                    match tool_call(call) {
                        Ok(c) => out.push(c),
                        Err(e) => self.note(format!("{place}.tool_calls[{k}]: {e}; call skipped")),
                    }
                }
            }
            Some(other) => {
                self.note(format!("{place}: \"tool_calls\" is {}, expected an array; calls skipped", type_name(other)))
            }
        }
        if let Some(fc) = m.get("function_call").filter(|v| !v.is_null()) {
            match function_parts(fc) {
                Ok((name, args)) => out.push((None, name, args)),
                Err(e) => self.note(format!("{place}.function_call: {e}; call skipped")),
            }
        }
        out
    }

    fn tool_result(&mut self, m: &Map<String, Value>, mut step: Step, place: &str) {
        step.kind = StepKind::ToolResult;
        step.is_error = super::failed_exit(&step.content).is_some();
        step.agent = "tool".into();
        step.tool_name = m.get("name").and_then(Value::as_str).map(str::to_owned);
        let to = self.t.steps.len();
        match str_field_map(m, "tool_call_id") {
            Some(id) => {
                match self.calls.remove(&id) {
                    Some(from) => {
                        if step.tool_name.is_none() {
                            step.tool_name = self.t.steps[from].tool_name.clone();
                        }
                        self.t.links.push(Link { from, to, kind: LinkKind::ToolResult });
                    }
                    None => self
                        .note(format!("{place}: tool_call_id {id:?} matches no earlier tool call; result not linked")),
                }
                step.ids.refs.push(id);
            }
            None => self.note(format!("{place}: tool message without \"tool_call_id\"; result not linked")),
        }
        self.t.steps.push(step);
    }

    fn function_result(&mut self, m: &Map<String, Value>, mut step: Step) {
        step.kind = StepKind::ToolResult;
        step.agent = "tool".into();
        let name = m.get("name").and_then(Value::as_str).unwrap_or_default();
        step.tool_name = (!name.is_empty()).then(|| name.to_string());
        let to = self.t.steps.len();
        if let Some(pos) = self.legacy.iter().rposition(|(n, _)| n == name) {
            let (_, from) = self.legacy.remove(pos);
            self.t.links.push(Link { from, to, kind: LinkKind::ToolResult });
        }
        self.t.steps.push(step);
    }
}

fn agent_of(m: &Map<String, Value>, role: &str) -> String {
    match m.get("name").and_then(Value::as_str).map(str::trim) {
        Some(name) if !name.is_empty() && role != "tool" && role != "function" => name.into(),
        _ => role.to_string(),
    }
}

fn message_id(m: &Map<String, Value>, i: usize) -> String {
    str_field_map(m, "index").unwrap_or_else(|| i.to_string())
}

fn str_field_map(m: &Map<String, Value>, key: &str) -> Option<String> {
    match m.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `(id, function name, arguments text)` of one `tool_calls[k]` entry.
fn tool_call(call: &Value) -> Result<Call, FormatError> {
    if !call.is_object() {
        return Err(FormatError::not_a("an object", call));
    }
    let id = str_field(call, "id").map(|s| s.into_owned());
    let function = call.get("function").or_else(|| call.get("custom")).ok_or(FormatError::missing("function"))?;
    let (name, args) = function_parts(function)?;
    Ok((id, name, args))
}

/// `(name, arguments text)` of a `function` object; `input` is accepted for custom tools.
fn function_parts(f: &Value) -> Result<(String, String), FormatError> {
    let name = match f.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_string(),
        Some(Value::String(_)) => return Err(FormatError::EmptyField { field: "name", what: "" }),
        Some(other) => return Err(FormatError::wrong_type("name", other, "a string")),
        None => return Err(FormatError::missing("name")),
    };
    let args = f.get("arguments").or_else(|| f.get("input"));
    Ok((name, args.map(super::value_text).unwrap_or_default()))
}

fn call_step(base: &Step, id: Option<String>, name: String, args: String) -> Step {
    Step {
        kind: StepKind::ToolCall,
        content: format!("{name}({args})"),
        tool_name: Some(name),
        ids: crate::model::StepIds { id: base.ids.id.clone(), refs: id.into_iter().collect(), ..Default::default() },
        ..base.clone()
    }
}

/// The trimmed content of the first message step with `role`, if any.
pub fn first_text(t: &Trajectory, role: &str) -> Option<String> {
    t.steps
        .iter()
        .find(|s| s.kind == StepKind::Message && s.role == role && !s.content.trim().is_empty())
        .map(|s| s.content.trim().to_string())
}

/// The trimmed content of the last assistant message step, if any.
pub fn last_answer(t: &Trajectory) -> Option<String> {
    t.steps
        .iter()
        .rev()
        .find(|s| s.kind == StepKind::Message && s.role == "assistant" && !s.content.trim().is_empty())
        .map(|s| s.content.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load_value(v: Value) -> Loaded {
        load("t", &Document::Json(v)).unwrap()
    }

    #[test]
    fn tool_calls_become_steps_linked_to_results() {
        let v = json!({"messages": [
            {"role": "user", "content": "weather in Oslo and Rome?"},
            {"role": "assistant", "content": "Checking both.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "c2", "content": "sunny"},
            {"role": "tool", "tool_call_id": "c1", "content": "rain"},
            {"role": "assistant", "content": "Oslo rain, Rome sunny."}
        ]});
        let l = load_value(v);
        let t = &l.trajectories[0];
        let kinds: Vec<_> = t.steps.iter().map(|s| s.kind).collect();
        use StepKind::*;
        assert_eq!(kinds, [Message, Message, ToolCall, ToolCall, ToolResult, ToolResult, Message]);
        assert_eq!(t.steps[2].content, "weather({\"city\":\"Oslo\"})");
        assert_eq!(t.steps[3].ids.refs, ["c2"]);
        assert_eq!(
            t.links,
            [Link { from: 3, to: 4, kind: LinkKind::ToolResult }, Link { from: 2, to: 5, kind: LinkKind::ToolResult },]
        );
        assert_eq!(t.steps[4].tool_name.as_deref(), Some("weather"));
        assert_eq!(t.task, "weather in Oslo and Rome?");
        assert_eq!(t.observed_output.as_deref(), Some("Oslo rain, Rome sunny."));
        assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
    }

    #[test]
    fn call_without_text_keeps_indices_of_links() {
        let v = json!([
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "ok"}
        ]);
        let t = &load_value(v).trajectories[0];
        assert_eq!(t.steps.len(), 2);
        assert_eq!(t.links, [Link { from: 0, to: 1, kind: LinkKind::ToolResult }]);
    }

    #[test]
    fn legacy_function_calls_link_by_name_and_names_are_agents() {
        let v = json!([
            {"role": "user", "name": "Planner", "content": "go"},
            {"role": "assistant", "name": "Coder", "content": "", "function_call": {"name": "run", "arguments": "ls"}},
            {"role": "function", "name": "run", "content": "a.txt"}
        ]);
        let t = &load_value(v).trajectories[0];
        let agents: Vec<&str> = t.steps.iter().map(|s| s.agent.as_str()).collect();
        assert_eq!(agents, ["Planner", "Coder", "tool"]);
        assert_eq!(t.links, [Link { from: 1, to: 2, kind: LinkKind::ToolResult }]);
    }

    #[test]
    fn repr_messages_are_decoded() {
        let v = json!([
            {"role": "'user'", "content": "'hi there'", "index": "1"},
            {"role": "'assistant'", "content": "None",
             "tool_calls": "[{'id': 'call_9', 'type': 'function', 'function': {'name': 'find', 'arguments': '{\"q\": 1}'}}]",
             "index": "2"},
            {"role": "'tool'", "tool_call_id": "'call_9'", "name": "'find'", "content": "'found'", "index": "3"}
        ]);
        let t = &load_value(v).trajectories[0];
        assert_eq!(t.steps[0].content, "hi there");
        assert_eq!(t.steps[1].content, "find({\"q\": 1})");
        assert_eq!(t.steps[1].ids.id.as_deref(), Some("2"));
        assert_eq!(t.links, [Link { from: 1, to: 2, kind: LinkKind::ToolResult }]);
    }

    #[test]
    fn bad_messages_and_calls_are_skipped_with_their_place() {
        let v = json!([
            {"role": "user", "content": "q"},
            {"role": 7, "content": "x"},
            {"role": "assistant", "content": {"a": 1}},
            {"role": "assistant", "tool_calls": [{"id": "z", "function": {}}]},
            {"role": "tool", "tool_call_id": "nope", "content": "r"}
        ]);
        let l = load_value(v);
        let msgs: Vec<String> = l.diagnostics.iter().map(|d| d.to_string()).collect();
        assert_eq!(
            msgs,
            [
                "messages[1]: \"role\" is a number, expected a string; record skipped",
                "messages[2]: \"content\" is an object, expected a string; record skipped",
                "messages[3].tool_calls[0]: missing \"name\"; call skipped",
                "messages[4]: tool_call_id \"nope\" matches no earlier tool call; result not linked",
            ]
        );
        assert_eq!(l.trajectories[0].steps.len(), 3);
    }

    #[test]
    fn detection_needs_mostly_chat_roles() {
        let yes = Document::Json(json!([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]));
        let no = Document::Json(json!([{"role": "human", "content": "a"}, {"role": "WebSurfer", "content": "b"}]));
        assert!(detect(&yes));
        assert!(!detect(&no));
        assert!(!detect(&Document::Json(json!([]))));
    }
}
