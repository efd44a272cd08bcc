//! Chat messages in one normal form, read from the shapes span-based traces embed.
//!
//! Span formats (OTel GenAI, OpenInference, any-agent, LangSmith, Langfuse) carry the messages an
//! LLM call saw and produced in several dialects. [`msg_from_value`] reads all of them into a
//! [`Msg`] of ordered [`Part`]s:
//! - OTel GenAI semconv: `{role, parts: [{type: text|reasoning|tool_call|tool_call_response, ...}],
//!   name?}` (`gen_ai.input.messages` / `gen_ai.output.messages`);
//! - OpenAI Chat Completions: `{role, content: string | [{type: text, text}], tool_calls: [{id,
//!   function: {name, arguments}}], tool_call_id}` (also Langfuse GENERATION input/output);
//! - LangChain: serialised `{lc, type: "constructor", id: [..., "AIMessage"], kwargs: {...}}`, dict
//!   `{type: human|ai|system|tool, content, tool_calls: [{id, name, args}]}` or
//!   `{type, data: {...}}` (LangSmith `inputs.messages`, `outputs.generations`);
//! - OpenInference unflattened `{message: {role, content, contents: [{message_content: {type,
//!   text}}], tool_calls: [{tool_call: {id, function: {name, arguments}}}], tool_call_id}}`;
//! - Anthropic content blocks `{type: text|thinking|tool_use|tool_result}` inside `content`;
//! - Bedrock Converse content blocks `{text}`, `{toolUse}`, `{toolResult}`, `{reasoningContent}`
//!   inside `content` (Strands Agents).

use serde_json::Value;

use super::value_text;

/// One chat message: who spoke and what, as ordered parts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Msg {
    /// Normalised role: `system`, `developer`, `user`, `assistant`, `tool` (others kept as given).
    pub role: String,
    /// The participant name, when the message names one (AutoGen agents, OTel `name`).
    pub name: Option<String>,
    /// The content, in order.
    pub parts: Vec<Part>,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Part {
    /// Plain text addressed to someone.
    Text(String),
    /// Model reasoning (`reasoning` part, `thinking` block, `message_content.type = reasoning`).
    Reasoning(String),
    /// A tool call: call id when given, tool name, arguments as JSON text.
    ToolCall {
        /// The call id (`tool_call.id`, `tool_use.id`).
        id: Option<String>,
        /// The tool's name.
        name: String,
        /// The arguments as text (JSON objects re-serialised, strings kept).
        args: String,
    },
    /// A tool's answer: the call id it answers, its text, and whether it reports an error.
    ToolResponse {
        /// The call id answered (`tool_call_id`, `tool_use_id`, part `id`).
        id: Option<String>,
        /// The result text.
        text: String,
        /// The tool reported an error (`is_error`, `status: error`).
        is_error: bool,
    },
}

impl Msg {
    /// The text parts joined by blank lines (reasoning and tool parts left out).
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n\n")
    }

    /// A key identifying the message's content, for de-duplicating repeated context.
    pub fn key(&self) -> String {
        format!("{}\u{1f}{:?}", self.role, self.parts)
    }

    /// A 64-bit hash of the role and parts (the name left out, as in [`Msg::key`]): the same key
    /// without building a string of the whole message.
    pub fn hash_key(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.role.hash(&mut h);
        self.parts.hash(&mut h);
        h.finish()
    }
}

/// Reads a list of messages: an array, a JSON string holding one, `{messages: [...]}`, LangChain's
/// nested `[[...]]` batch, or a single message. Unreadable items are left out.
pub fn msgs_from_value(v: &Value) -> Vec<Msg> {
    match v {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(inner @ (Value::Array(_) | Value::Object(_))) => msgs_from_value(&inner),
            _ => Vec::new(),
        },
        Value::Array(items) => items.iter().flat_map(msgs_from_item).collect(),
        Value::Object(m) => match m.get("messages") {
            Some(inner) => msgs_from_value(inner),
            None => msg_from_value(v).into_iter().collect(),
        },
        _ => Vec::new(),
    }
}

fn msgs_from_item(item: &Value) -> Vec<Msg> {
    match item {
        Value::Array(_) => msgs_from_value(item),
        _ => msg_from_value(item).into_iter().collect(),
    }
}

/// Reads one message in any of the dialects in the module doc; `None` when `v` has no role.
pub fn msg_from_value(v: &Value) -> Option<Msg> {
    let obj = v.as_object()?;
    if let Some(inner) = obj.get("message").filter(|m| m.is_object())
        && obj.get("role").is_none()
    {
        return openinference_msg(inner);
    }
    if obj.get("lc").is_some() && obj.get("kwargs").is_some() {
        return langchain_serialised(v);
    }
    if let Some(data) = obj.get("data").filter(|d| d.is_object())
        && obj.get("role").is_none()
    {
        let role = obj.get("type").and_then(Value::as_str).unwrap_or("user");
        return Some(with_role(data, role));
    }
    let role = obj.get("role").or_else(|| obj.get("type")).and_then(Value::as_str)?;
    Some(with_role(v, role))
}

/// Normalises role names across dialects (`human` → `user`, `ai`/`model` → `assistant`).
pub fn norm_role(role: &str) -> String {
    match role.to_ascii_lowercase().as_str() {
        "human" | "humanmessage" | "user" => "user".into(),
        "ai" | "aimessage" | "aimessagechunk" | "model" | "assistant" | "bot" => "assistant".into(),
        "system" | "systemmessage" => "system".into(),
        "tool" | "toolmessage" | "function" | "functionmessage" | "ipython" => "tool".into(),
        "developer" => "developer".into(),
        other => other.to_string(),
    }
}

fn with_role(v: &Value, role: &str) -> Msg {
    let role = norm_role(role);
    let mut parts = Vec::new();
    if let Some(ps) = v.get("parts").and_then(Value::as_array) {
        parts.extend(ps.iter().filter_map(genai_part));
    }
    if let Some(c) = v.get("content") {
        content_parts(c, &role, v, &mut parts);
    }
    if let Some(r) = v.get("refusal").and_then(Value::as_str).filter(|r| !r.is_empty()) {
        parts.push(Part::Text(r.to_string()));
    }
    // An OpenAI audio reply (`content: null`, `audio: {id, transcript}`) said its transcript.
    if parts.is_empty()
        && let Some(t) = audio_transcript(v.get("audio"))
    {
        parts.push(Part::Text(t.to_string()));
    }
    for key in ["tool_calls", "function_call"] {
        if let Some(calls) = v.get(key) {
            parts.extend(tool_calls(calls));
        }
    }
    if let Some(calls) = v.pointer("/additional_kwargs/tool_calls")
        && !parts.iter().any(|p| matches!(p, Part::ToolCall { .. }))
    {
        parts.extend(tool_calls(calls));
    }
    Msg { name: v.get("name").and_then(Value::as_str).map(str::to_string), role, parts }
}

/// The transcript of an OpenAI Chat Completions assistant audio reply, given its `audio` field
/// (`{role: assistant, content: null, audio: {id, data?, expires_at, transcript}}`), when not
/// empty.
pub fn audio_transcript(audio: Option<&Value>) -> Option<&str> {
    audio?.get("transcript")?.as_str().filter(|t| !t.trim().is_empty())
}

/// A GenAI semconv message part (`{type, content}` and friends).
fn genai_part(p: &Value) -> Option<Part> {
    let ty = p.get("type").and_then(Value::as_str).unwrap_or("text");
    let content = || p.get("content").map(value_text).unwrap_or_default();
    Some(match ty {
        "text" => Part::Text(content()),
        "reasoning" | "thinking" => Part::Reasoning(content()),
        "tool_call" => Part::ToolCall {
            id: id_text(p.get("id")),
            name: p.get("name").map(value_text).unwrap_or_default(),
            args: p.get("arguments").map(args_text).unwrap_or_default(),
        },
        "tool_call_response" => Part::ToolResponse {
            id: id_text(p.get("id")),
            text: p.get("response").or_else(|| p.get("result")).map(value_text).unwrap_or_default(),
            is_error: false,
        },
        _ => Part::Text(placeholder(p)),
    })
}

/// `content` as a string or a list of blocks (OpenAI parts, Anthropic blocks, Codex items).
fn content_parts(c: &Value, role: &str, msg: &Value, out: &mut Vec<Part>) {
    let tool_id = id_text(msg.get("tool_call_id"));
    match c {
        Value::String(s) if role == "tool" || tool_id.is_some() => {
            out.push(Part::ToolResponse { id: tool_id, text: s.clone(), is_error: tool_failed(msg) })
        }
        Value::String(s) => out.push(Part::Text(s.clone())),
        Value::Array(blocks) if role == "tool" && !blocks.iter().all(is_block) => {
            out.push(Part::ToolResponse { id: tool_id, text: c.to_string(), is_error: tool_failed(msg) })
        }
        Value::Array(blocks) => {
            for b in blocks {
                out.extend(block_part(b, &tool_id, role == "tool"));
            }
        }
        Value::Null => {}
        // A tool's structured result (an object, a number) is still the tool's answer.
        other if role == "tool" || tool_id.is_some() => {
            out.push(Part::ToolResponse { id: tool_id, text: other.to_string(), is_error: tool_failed(msg) })
        }
        other => out.push(Part::Text(other.to_string())),
    }
}

/// Whether a list item is a content block (`{type, ...}` or a string), not data of a tool result.
fn is_block(b: &Value) -> bool {
    b.is_string() || b.get("type").is_some_and(Value::is_string)
}

/// A tool message that reports failure (`status: error`, `is_error: true`).
fn tool_failed(msg: &Value) -> bool {
    msg.get("status").and_then(Value::as_str) == Some("error")
        || msg.get("is_error").or_else(|| msg.get("isError")).and_then(Value::as_bool) == Some(true)
}

fn block_part(b: &Value, tool_id: &Option<String>, tool_role: bool) -> Option<Part> {
    let Some(ty) = b.get("type").and_then(Value::as_str) else {
        if let Some(bedrock) = bedrock_block(b) {
            return bedrock;
        }
        return Some(Part::Text(value_text(b)));
    };
    let text = |k: &str| b.get(k).map(value_text).unwrap_or_default();
    Some(match ty {
        "text" | "input_text" | "output_text" if tool_id.is_some() || tool_role => {
            Part::ToolResponse { id: tool_id.clone(), text: text("text"), is_error: false }
        }
        "text" | "input_text" | "output_text" => Part::Text(text("text")),
        "thinking" => Part::Reasoning(text("thinking")),
        "reasoning" => Part::Reasoning(text("text")),
        "redacted_thinking" => Part::Reasoning(REDACTED_THINKING.into()),
        "refusal" => Part::Text(text("refusal")),
        "tool_use" => Part::ToolCall {
            id: id_text(b.get("id")),
            name: text("name"),
            args: b.get("input").map(args_text).unwrap_or_default(),
        },
        // Vercel AI SDK message parts.
        "tool-call" => Part::ToolCall {
            id: id_text(b.get("toolCallId")),
            name: text("toolName"),
            args: b.get("args").or_else(|| b.get("input")).map(args_text).unwrap_or_default(),
        },
        "tool-result" => Part::ToolResponse {
            id: id_text(b.get("toolCallId")),
            text: b.get("result").or_else(|| b.get("output")).map(value_text).unwrap_or_default(),
            is_error: b.get("isError").and_then(Value::as_bool) == Some(true),
        },
        "tool_result" => Part::ToolResponse {
            id: id_text(b.get("tool_use_id")),
            text: b.get("content").map(block_text).unwrap_or_default(),
            is_error: b.get("is_error").and_then(Value::as_bool) == Some(true),
        },
        _ => Part::Text(placeholder(b)),
    })
}

/// A Bedrock Converse content block (`{text}`, `{toolUse: {toolUseId, name, input}}`,
/// `{toolResult: {toolUseId, status, content}}`, `{reasoningContent: {reasoningText: {text}}}`,
/// `{image: {format}}`, `{document: {format, name}}`, `{cachePoint}`), as Strands Agents and the
/// Bedrock Converse API write them: `Some(part)` for a known block (`Some(None)` for a cache
/// point, which is no content), `None` when `b` is not one.
fn bedrock_block(b: &Value) -> Option<Option<Part>> {
    let obj = b.as_object().filter(|m| m.len() == 1)?;
    let (key, v) = obj.iter().next()?;
    let text = |x: &Value, k: &str| x.get(k).map(value_text).unwrap_or_default();
    Some(match key.as_str() {
        "text" => Some(Part::Text(value_text(v))),
        "toolUse" => Some(Part::ToolCall {
            id: id_text(v.get("toolUseId")),
            name: text(v, "name"),
            args: v.get("input").map(args_text).unwrap_or_default(),
        }),
        "toolResult" => Some(Part::ToolResponse {
            id: id_text(v.get("toolUseId")),
            text: v.get("content").map(bedrock_text).unwrap_or_default(),
            is_error: v.get("status").and_then(Value::as_str) == Some("error"),
        }),
        "reasoningContent" => match v.pointer("/reasoningText/text") {
            Some(t) => Some(Part::Reasoning(value_text(t))),
            None => Some(Part::Reasoning(REDACTED_THINKING.into())),
        },
        "image" | "document" | "video" => {
            let format = v.get("format").and_then(Value::as_str);
            Some(Part::Text(match format {
                Some(f) => format!("[{key} {f}]"),
                None => format!("[{key}]"),
            }))
        }
        "cachePoint" => None,
        _ => return None,
    })
}

/// The text of Bedrock `toolResult.content` (`[{text} | {json} | {image} | {document}]`), or of
/// any other value.
pub fn bedrock_text(c: &Value) -> String {
    match c {
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match (b.get("text"), b.get("json")) {
                (Some(t), _) => value_text(t),
                (None, Some(j)) => value_text(j),
                _ => match bedrock_block(b) {
                    Some(Some(Part::Text(t))) => t,
                    _ => value_text(b),
                },
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => value_text(other),
    }
}

/// The content of a thought whose reasoning the trace holds only redacted or encrypted.
pub const REDACTED_THINKING: &str = "[redacted thinking]";

/// A placeholder for a content block that is not text, so nothing vanishes silently: `[image
/// image/png, 150 KB]`, `[audio wav]`, `[document application/pdf]`, or `[type]`. Sizes are of the
/// decoded bytes of an inline base64 payload.
pub fn placeholder(b: &Value) -> String {
    let ty = b.get("type").and_then(Value::as_str).unwrap_or("part");
    let kind = match ty {
        // GenAI semconv `blob` / `uri` / `file` parts name their `modality`.
        "blob" | "uri" | "file" if b.get("modality").is_some_and(Value::is_string) => {
            b.get("modality").and_then(Value::as_str).unwrap_or(ty)
        }
        "image" | "input_image" | "image_url" | "image_file" => "image",
        "audio" | "input_audio" | "output_audio" => "audio",
        "document" | "file" | "input_file" => "document",
        other => other,
    };
    let source = b.get("source").or_else(|| b.get(ty)).unwrap_or(b);
    let media = ["media_type", "mime_type", "mimeType", "format"]
        .iter()
        .find_map(|k| source.get(*k).or_else(|| b.get(*k)).and_then(Value::as_str));
    let data = ["data", "base64", "image_url", "url"].iter().find_map(|k| source.get(*k).and_then(Value::as_str));
    let size = data.filter(|d| !d.starts_with("http")).map(|d| {
        let d = d.rsplit(',').next().unwrap_or(d);
        let bytes = d.len() / 4 * 3;
        if bytes >= 1024 { format!("{} KB", bytes / 1024) } else { format!("{bytes} bytes") }
    });
    let url = data.filter(|d| d.starts_with("http"));
    let details: Vec<&str> = [media, size.as_deref(), url].into_iter().flatten().collect();
    match details.is_empty() {
        true => format!("[{kind}]"),
        false => format!("[{kind} {}]", details.join(", ")),
    }
}

/// The text of a tool_result `content`: a string, or the text blocks of a list joined.
pub fn block_text(c: &Value) -> String {
    match c {
        Value::Array(blocks) => blocks_text(blocks),
        other => value_text(other),
    }
}

/// The text blocks of a list joined by newlines; other blocks as placeholders ([`placeholder`]).
pub fn blocks_text(blocks: &[Value]) -> String {
    blocks
        .iter()
        .map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => b.get("text").map(value_text).unwrap_or_default(),
            Some(_) => placeholder(b),
            None => value_text(b),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// OpenAI `tool_calls` / legacy `function_call`, or LangChain `tool_calls: [{id, name, args}]`.
fn tool_calls(v: &Value) -> Vec<Part> {
    let one = |c: &Value| {
        let f = c.get("function").unwrap_or(c);
        let args = f.get("arguments").or_else(|| c.get("args")).map(args_text).unwrap_or_default();
        Part::ToolCall { id: id_text(c.get("id")), name: f.get("name").map(value_text).unwrap_or_default(), args }
    };
    match v {
        Value::Array(calls) => calls.iter().map(one).collect(),
        Value::Object(_) => vec![one(v)],
        _ => Vec::new(),
    }
}

fn langchain_serialised(v: &Value) -> Option<Msg> {
    let class =
        v.get("id").and_then(Value::as_array).and_then(|a| a.last()).and_then(Value::as_str).unwrap_or("HumanMessage");
    let kwargs = v.get("kwargs")?;
    let role = match class {
        "ChatMessage" | "ChatMessageChunk" => kwargs.get("role").and_then(Value::as_str).unwrap_or("user").to_string(),
        other => other.trim_end_matches("Chunk").to_string(),
    };
    Some(with_role(kwargs, &role))
}

fn openinference_msg(m: &Value) -> Option<Msg> {
    let role = norm_role(m.get("role").and_then(Value::as_str).unwrap_or("user"));
    let tool_id = id_text(m.get("tool_call_id"));
    let mut parts = Vec::new();
    let mut texts = Vec::new();
    if let Some(c) = m.get("content").filter(|c| !c.is_null()) {
        texts.push(("text".to_string(), value_text(c)));
    }
    for c in m.get("contents").and_then(Value::as_array).into_iter().flatten() {
        let mc = c.get("message_content").unwrap_or(c);
        let ty = mc.get("type").and_then(Value::as_str).unwrap_or("text");
        let text = mc.get("text").map(value_text).unwrap_or_default();
        texts.push((ty.to_string(), text));
    }
    for (ty, text) in texts {
        parts.push(match (ty.as_str(), &tool_id) {
            ("reasoning", _) => Part::Reasoning(text),
            (_, Some(_)) => Part::ToolResponse { id: tool_id.clone(), text, is_error: false },
            ("text", None) => Part::Text(text),
            (other, None) => Part::Text(format!("[{other}] {text}")),
        });
    }
    for c in m.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        parts.extend(tool_calls(c.get("tool_call").unwrap_or(c)));
    }
    Some(Msg { role, name: m.get("name").and_then(Value::as_str).map(str::to_string), parts })
}

/// Tool arguments as text: strings kept, other JSON re-serialised.
pub fn args_text(v: &Value) -> String {
    value_text(v)
}

/// An id as text (strings kept, numbers written out), `None` for null, empty or missing.
pub fn id_text(v: Option<&Value>) -> Option<String> {
    let s = match v? {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    (!s.is_empty()).then_some(s)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn genai_parts_become_text_and_tool_parts() {
        let m = msg_from_value(&json!({"role": "assistant", "parts": [
            {"type": "text", "content": "hi"},
            {"type": "tool_call", "id": "c1", "name": "f", "arguments": {"a": 1}}
        ]}))
        .unwrap();
        assert_eq!(m.role, "assistant");
        assert_eq!(m.parts[0], Part::Text("hi".into()));
        assert_eq!(m.parts[1], Part::ToolCall { id: Some("c1".into()), name: "f".into(), args: "{\"a\":1}".into() });
    }

    #[test]
    fn media_refusals_and_redacted_reasoning_are_never_dropped() {
        let m = msg_from_value(&json!({"role": "assistant", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA".repeat(512)}},
            {"type": "redacted_thinking", "data": "x"},
            {"type": "refusal", "refusal": "I can't help with that."},
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
        ]}))
        .unwrap();
        assert_eq!(
            m.parts,
            [
                Part::Text("[image image/png, 1 KB]".into()),
                Part::Reasoning(REDACTED_THINKING.into()),
                Part::Text("I can't help with that.".into()),
                Part::Text("[audio wav, 3 bytes]".into()),
            ]
        );
        let g = msg_from_value(
            &json!({"role": "user", "parts": [{"type": "blob", "modality": "image", "mime_type": "image/jpeg"}]}),
        );
        assert_eq!(g.unwrap().parts, [Part::Text("[image image/jpeg]".into())]);
        let r = msg_from_value(&json!({"role": "assistant", "content": null, "refusal": "No."}));
        assert_eq!(r.unwrap().parts, [Part::Text("No.".into())]);
    }

    #[test]
    fn openai_tool_message_is_a_tool_response() {
        let m = msg_from_value(&json!({"role": "tool", "tool_call_id": "c1", "content": "ok"}));
        assert_eq!(
            m.unwrap().parts,
            vec![Part::ToolResponse { id: Some("c1".into()), text: "ok".into(), is_error: false }]
        );
    }

    #[test]
    fn langchain_serialised_ai_message_keeps_its_tool_calls() {
        let m = msg_from_value(&json!({"lc": 1, "type": "constructor",
            "id": ["langchain", "schema", "messages", "AIMessage"],
            "kwargs": {"content": "", "tool_calls": [{"id": "t1", "name": "search", "args": {"q": "x"}}]}}))
        .unwrap();
        assert_eq!(m.role, "assistant");
        assert!(matches!(&m.parts[1], Part::ToolCall { name, .. } if name == "search"));
    }

    #[test]
    fn nested_langchain_batches_and_json_strings_are_flattened() {
        let v = json!("[[{\"type\": \"human\", \"content\": \"q\"}]]");
        let ms = msgs_from_value(&v);
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].role, "user");
        assert_eq!(ms[0].text(), "q");
    }
}
