//! OTLP/JSON and span-list envelopes, shared by the OTel GenAI, OpenInference and any-agent
//! loaders.
//!
//! OTLP/JSON (OpenTelemetry protocol spec, "JSON Protobuf Encoding"): an
//! `ExportTraceServiceRequest` `{resourceSpans: [{resource, scopeSpans: [{scope: {name}, spans:
//! [...]}]}]}`, one per file or one per line (the file exporter's NDJSON). A span is `{traceId,
//! spanId, parentSpanId, name, kind, startTimeUnixNano, endTimeUnixNano, attributes: [{key,
//! value: AnyValue}], events: [{timeUnixNano, name, attributes}], status: {code, message}}`.
//! Real exporters differ from the spec (`TRACE_FORMATS.md` §2), and all variants are accepted:
//! ids in hex, base64 or decimal; `kind` and `status.code` as integers or enum names
//! (`SPAN_KIND_CLIENT`, `STATUS_CODE_ERROR`); `intValue` as a string or a number; JSON held in
//! string attributes (parsed where a loader expects structure).
//!
//! Span lists: the OpenInference spec's JSON span `{name, context: {trace_id, span_id},
//! parent_id, span_kind, start_time, end_time, status_code, status_message, attributes: {...},
//! events}` and any-agent's dump of OTel SDK spans (`parent: {span_id}`, `status: {status_code,
//! description}`, decimal ids), both with a plain attribute object.

use std::collections::{BTreeMap, HashMap};

use base64::Engine;
use serde_json::{Map, Value};

use super::{Document, FormatError, value_text};
use crate::model::Diagnostic;

/// Span attributes by key, values decoded from `AnyValue`.
pub type Attrs = BTreeMap<String, Value>;

/// A span read from any envelope, before a dialect gives it meaning.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawSpan {
    /// The trace id (normalised like `span_id`), when given.
    pub trace_id: Option<String>,
    /// The span id, normalised to lowercase hex where it was hex, base64 or an integer.
    pub span_id: String,
    /// The parent span id (normalised like `span_id`); `None` for a root.
    pub parent_id: Option<String>,
    /// The span name.
    pub name: String,
    /// The span kind in lowercase (`client`, `internal`), when given and known.
    pub kind: Option<String>,
    /// The start time as written (unix nanoseconds or ISO 8601).
    pub start: Option<String>,
    /// A sort key for the start: unix nanoseconds zero-padded to 24 digits, or the text as is.
    pub sort_key: Option<String>,
    /// The status is ERROR.
    pub is_error: bool,
    /// The status message, or the message of an `exception` event.
    pub error: Option<String>,
    /// The attributes.
    pub attrs: Attrs,
    /// The instrumentation scope name (`openinference.instrumentation.openai`).
    pub scope: Option<String>,
    /// Where the span is, for diagnostics (`span 03491beea3cb073d (chat gpt-4o-mini)`).
    pub place: String,
    /// GenAI content events of the span, in order: span events and log records named
    /// `gen_ai.content.prompt` / `gen_ai.content.completion` (semconv before 1.27) or
    /// `gen_ai.{system,user,assistant,tool}.message` / `gen_ai.choice` (1.27–1.36).
    pub genai_events: Vec<GenAiEvent>,
}

/// One GenAI content event: its name and payload (the `body` of a log record, or the attributes
/// of a span event as an object).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GenAiEvent {
    /// The event name (`gen_ai.user.message`, `gen_ai.content.prompt`).
    pub name: String,
    /// The body or the attributes.
    pub payload: Value,
}

impl RawSpan {
    /// A string attribute (numbers and booleans written out).
    pub fn str(&self, key: &str) -> Option<String> {
        match self.attrs.get(key)? {
            Value::Null => None,
            v => Some(value_text(v)),
        }
    }

    /// An unsigned integer attribute (`"412"` and `412` alike).
    pub fn uint(&self, key: &str) -> Option<u64> {
        match self.attrs.get(key)? {
            Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f as u64)),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// Whether any attribute key starts with `prefix`.
    pub fn has_prefix(&self, prefix: &str) -> bool {
        self.attrs.keys().any(|k| k.starts_with(prefix))
    }
}

/// Whether `doc` is OTLP/JSON: an object with `resourceSpans`, or JSON Lines of such objects.
///
/// OTLP logs (`resourceLogs`) count when they carry GenAI events (log-based GenAI semconv).
pub fn is_otlp(doc: &Document) -> bool {
    let genai_logs = |v: &Value| {
        v.get("resourceLogs").and_then(Value::as_array).is_some_and(|rl| {
            rl.iter()
                .filter_map(|r| r.get("scopeLogs").and_then(Value::as_array))
                .flatten()
                .filter_map(|sl| sl.get("logRecords").and_then(Value::as_array))
                .flatten()
                .any(|rec| log_event_name(rec).is_some_and(|n| n.starts_with("gen_ai.")))
        })
    };
    let is_request = |v: &Value| v.get("resourceSpans").is_some_and(Value::is_array) || genai_logs(v);
    match doc {
        Document::Json(v) => is_request(v),
        Document::Lines { values, .. } => !values.is_empty() && values.iter().all(|(_, v)| is_request(v)),
    }
}

/// All spans of an OTLP/JSON document, in document order; bad spans become diagnostics.
///
/// GenAI events sent as log records (`resourceLogs`, in the same document) are attached to their
/// spans, see [`GenAiEvent`].
pub fn otlp_spans(doc: &Document, diags: &mut Vec<Diagnostic>) -> Vec<RawSpan> {
    let mut out = Vec::new();
    let values: Vec<(Option<usize>, &Value)> = match doc {
        Document::Json(v) => vec![(None, v)],
        Document::Lines { values, .. } => values.iter().map(|(l, v)| (Some(*l), v)).collect(),
    };
    for (line, v) in &values {
        request_spans(v, *line, &mut out, diags);
    }
    attach_logs(&values, &mut out);
    out
}

/// The event name of an OTLP log record: `eventName` (`event_name` as protobuf's JSON mapping
/// also accepts), else the `event.name` attribute (OTel Events API before logs data model 1.4).
pub fn log_event_name(rec: &Value) -> Option<std::borrow::Cow<'_, str>> {
    if let Some(n) = rec.get("eventName").or_else(|| rec.get("event_name")).and_then(Value::as_str) {
        return Some(std::borrow::Cow::Borrowed(n));
    }
    let attrs = rec.get("attributes")?;
    let value = match attrs {
        Value::Array(kvs) => {
            kvs.iter().find(|kv| kv.get("key").and_then(Value::as_str) == Some("event.name"))?.get("value")?
        }
        Value::Object(m) => m.get("event.name")?,
        _ => return None,
    };
    match any_value(value) {
        Value::String(s) => Some(std::borrow::Cow::Owned(s)),
        _ => None,
    }
}

/// GenAI events sent as OTLP log records (`resourceLogs[].scopeLogs[].logRecords[]`, the event
/// name in `eventName` or the `event.name` attribute, the content in `body`), attached to the span
/// of their `spanId`. Records whose span is not in the document make a `chat` span of their own
/// per span id (or per trace when they carry no span id).
fn attach_logs(doc_values: &[(Option<usize>, &Value)], out: &mut Vec<RawSpan>) {
    // Span id → its first span, so each record finds its span in constant time.
    let mut by_id: HashMap<String, usize> = HashMap::with_capacity(out.len());
    for (i, sp) in out.iter().enumerate() {
        by_id.entry(sp.span_id.clone()).or_insert(i);
    }
    for (_, v) in doc_values {
        let resource_logs = v.get("resourceLogs").and_then(Value::as_array);
        for (r, rl) in resource_logs.into_iter().flatten().enumerate() {
            let scope_logs = rl.get("scopeLogs").and_then(Value::as_array);
            for (s, sl) in scope_logs.into_iter().flatten().enumerate() {
                let records = sl.get("logRecords").and_then(Value::as_array);
                for (k, rec) in records.into_iter().flatten().enumerate() {
                    let Some(name) = log_event_name(rec).filter(|n| n.starts_with("gen_ai.")) else {
                        continue;
                    };
                    let name = name.into_owned();
                    let attrs = match rec.get("attributes") {
                        Some(a @ Value::Object(_)) => attr_object(a),
                        Some(a) => attr_list(a),
                        None => Attrs::new(),
                    };
                    let mut payload: serde_json::Map<String, Value> = attrs.into_iter().collect();
                    payload.insert("body".into(), rec.get("body").map(any_value).unwrap_or(Value::Null));
                    let event = GenAiEvent { name, payload: Value::Object(payload) };
                    let span_id = rec.get("spanId").or_else(|| rec.get("span_id")).and_then(norm_id);
                    let trace_id = rec.get("traceId").or_else(|| rec.get("trace_id")).and_then(norm_id);
                    let key = span_id.or_else(|| trace_id.clone()).unwrap_or_else(|| "log".into());
                    match by_id.get(&key) {
                        Some(&i) => out[i].genai_events.push(event),
                        None => {
                            let time = ["timeUnixNano", "time_unix_nano", "observedTimeUnixNano"]
                                .iter()
                                .find_map(|k| rec.get(*k))
                                .map(value_text);
                            by_id.insert(key.clone(), out.len());
                            let mut attrs = Attrs::new();
                            attrs.insert("gen_ai.operation.name".into(), Value::from("chat"));
                            out.push(RawSpan {
                                trace_id,
                                place: format!(
                                    "log records of span {key} at resourceLogs[{r}].scopeLogs[{s}].logRecords[{k}]"
                                ),
                                span_id: key,
                                name: "chat".into(),
                                sort_key: time.as_deref().map(sort_key),
                                start: time,
                                attrs,
                                genai_events: vec![event],
                                ..RawSpan::default()
                            });
                        }
                    }
                }
            }
        }
    }
}

fn request_spans(v: &Value, line: Option<usize>, out: &mut Vec<RawSpan>, diags: &mut Vec<Diagnostic>) {
    let resource_spans = v.get("resourceSpans").and_then(Value::as_array);
    for (r, rs) in resource_spans.into_iter().flatten().enumerate() {
        let scope_spans =
            rs.get("scopeSpans").or_else(|| rs.get("instrumentationLibrarySpans")).and_then(Value::as_array);
        for (s, ss) in scope_spans.into_iter().flatten().enumerate() {
            let scope = ss
                .get("scope")
                .or_else(|| ss.get("instrumentationLibrary"))
                .and_then(|sc| sc.get("name"))
                .and_then(Value::as_str);
            let spans = ss.get("spans").and_then(Value::as_array);
            for (k, sp) in spans.into_iter().flatten().enumerate() {
                let path = format!("resourceSpans[{r}].scopeSpans[{s}].spans[{k}]");
                let at = match line {
                    Some(l) => format!("line {l} {path}"),
                    None => path.clone(),
                };
                match otlp_span(sp, &at) {
                    Ok(mut span) => {
                        span.scope = scope.map(str::to_string);
                        out.push(span);
                    }
                    Err(msg) => diags.push(Diagnostic { line, message: format!("{path} skipped: {msg}") }),
                }
            }
        }
    }
}

fn otlp_span(v: &Value, at: &str) -> Result<RawSpan, FormatError> {
    let obj = v.as_object().ok_or(FormatError::Shape { expected: "a span object".into() })?;
    let span_id = obj.get("spanId").and_then(norm_id).ok_or(FormatError::missing("spanId"))?;
    let name = obj.get("name").map(value_text).unwrap_or_default();
    let start = obj.get("startTimeUnixNano").map(value_text);
    let mut span = RawSpan {
        trace_id: obj.get("traceId").and_then(norm_id),
        parent_id: obj.get("parentSpanId").and_then(norm_id),
        kind: obj.get("kind").and_then(kind_name),
        sort_key: start.as_deref().map(sort_key),
        start,
        attrs: obj.get("attributes").map(attr_list).unwrap_or_default(),
        place: format!("span {span_id} ({name}) at {at}"),
        span_id,
        name,
        ..RawSpan::default()
    };
    if let Some(st) = obj.get("status") {
        span.is_error = st.get("code").is_some_and(is_error_code);
        span.error = st.get("message").map(value_text).filter(|m| !m.is_empty());
    }
    read_events(obj.get("events"), &mut span);
    Ok(span)
}

/// The outline of a one-request OTLP/JSON trace file, read without building its spans: each
/// `scopeSpans` entry with its indices, scope name and the raw JSON text of its spans, borrowed
/// from the input. Large traces are loaded from it one span at a time (see [`outline`]).
#[derive(Debug, Default)]
pub struct Outline<'a> {
    /// `(resourceSpans index, scopeSpans index, scope name, raw spans)`, in document order.
    pub scopes: Vec<(usize, usize, Option<String>, Vec<&'a serde_json::value::RawValue>)>,
    /// The document's top-level keys other than `resourceSpans`.
    pub other_keys: Vec<String>,
}

/// Reads the [`Outline`] of `text` when it is one JSON object whose `resourceSpans` follows the
/// OTLP/JSON shape (`scopeSpans` or `instrumentationLibrarySpans`, `scope` or
/// `instrumentationLibrary` with a `name`); `None` otherwise (the caller reads the document
/// whole). Typed and borrowing: only the outline is allocated, the spans stay text until each
/// is read.
pub fn outline(text: &str) -> Option<Outline<'_>> {
    serde_json::from_str::<Outline<'_>>(text).ok()
}

mod typed {
    //! serde types of the OTLP/JSON outline (the edge where the bytes are read).
    use std::borrow::Cow;

    use serde::Deserialize;
    use serde::de::{IgnoredAny, MapAccess, Visitor};
    use serde_json::value::RawValue;

    use super::Outline;

    #[derive(Deserialize)]
    pub struct ResourceSpans<'a> {
        #[serde(borrow, default, rename = "scopeSpans", alias = "instrumentationLibrarySpans")]
        pub scope_spans: Option<Vec<ScopeSpans<'a>>>,
    }

    #[derive(Deserialize)]
    pub struct ScopeSpans<'a> {
        #[serde(borrow, default, alias = "instrumentationLibrary")]
        pub scope: Option<Scope<'a>>,
        #[serde(borrow, default)]
        pub spans: Option<Vec<&'a RawValue>>,
    }

    #[derive(Deserialize)]
    pub struct Scope<'a> {
        #[serde(borrow, default)]
        pub name: Option<Cow<'a, str>>,
    }

    impl<'de> Deserialize<'de> for Outline<'de> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Top;
            impl<'de> Visitor<'de> for Top {
                type Value = Outline<'de>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an OTLP/JSON ExportTraceServiceRequest")
                }
                fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Outline<'de>, M::Error> {
                    let mut out = Outline::default();
                    let mut seen = false;
                    while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                        if key == "resourceSpans" && !seen {
                            seen = true;
                            let resources: Vec<ResourceSpans<'de>> = map.next_value()?;
                            for (r, rs) in resources.into_iter().enumerate() {
                                for (s, ss) in rs.scope_spans.unwrap_or_default().into_iter().enumerate() {
                                    let name = ss.scope.and_then(|sc| sc.name).map(Cow::into_owned);
                                    out.scopes.push((r, s, name, ss.spans.unwrap_or_default()));
                                }
                            }
                        } else {
                            out.other_keys.push(key.into_owned());
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                    if !seen {
                        return Err(serde::de::Error::missing_field("resourceSpans"));
                    }
                    Ok(out)
                }
            }
            d.deserialize_map(Top)
        }
    }
}

/// Reads a span of an OTLP/JSON request (see the module doc); `at` names its place.
///
/// # Errors
/// When the item is not an object or has no `spanId`.
pub fn request_span(v: &Value, at: &str) -> Result<RawSpan, FormatError> {
    otlp_span(v, at)
}

/// Reads a span of a span list (OpenInference spec JSON span or any-agent dump).
///
/// # Errors
/// When the item is not an object or has no span id in `context.span_id` / `span_id`.
pub fn list_span(v: &Value, at: &str) -> Result<RawSpan, FormatError> {
    let obj = v.as_object().ok_or(FormatError::Shape { expected: "a span object".into() })?;
    let ctx = obj.get("context");
    let span_id = ctx
        .and_then(|c| c.get("span_id"))
        .or_else(|| obj.get("span_id"))
        .and_then(norm_id)
        .ok_or(FormatError::missing("context.span_id"))?;
    let parent_id = obj
        .get("parent_id")
        .or_else(|| obj.get("parent_span_id"))
        .or_else(|| obj.get("parent").and_then(|p| p.get("span_id")))
        .and_then(norm_id);
    let name = obj.get("name").map(value_text).unwrap_or_default();
    let start = obj.get("start_time").map(value_text);
    let mut span = RawSpan {
        trace_id: ctx.and_then(|c| c.get("trace_id")).or_else(|| obj.get("trace_id")).and_then(trace_id),
        parent_id,
        kind: obj.get("kind").and_then(kind_name),
        sort_key: start.as_deref().map(sort_key),
        start,
        attrs: obj.get("attributes").map(attr_object).unwrap_or_default(),
        place: format!("span {span_id} ({name}) at {at}"),
        span_id,
        name,
        ..RawSpan::default()
    };
    let status = obj.get("status");
    let code = obj
        .get("status_code")
        .or_else(|| status.and_then(|s| s.get("status_code")))
        .or_else(|| status.and_then(|s| s.get("code")));
    span.is_error = code.is_some_and(is_error_code);
    span.error = obj
        .get("status_message")
        .or_else(|| status.and_then(|s| s.get("description")))
        .filter(|m| !m.is_null())
        .map(value_text)
        .filter(|m| !m.is_empty());
    read_events(obj.get("events"), &mut span);
    Ok(span)
}

fn read_events(events: Option<&Value>, span: &mut RawSpan) {
    for ev in events.and_then(Value::as_array).into_iter().flatten() {
        let name = ev.get("name").and_then(Value::as_str).unwrap_or_default();
        let attrs = match ev.get("attributes") {
            Some(a @ Value::Array(_)) => attr_list(a),
            Some(a) => attr_object(a),
            None => Attrs::new(),
        };
        if name.starts_with("gen_ai.") {
            let mut payload: serde_json::Map<String, Value> = attrs.into_iter().collect();
            if let Some(body) = ev.get("body") {
                payload.insert("body".into(), any_value(body));
            }
            span.genai_events.push(GenAiEvent { name: name.to_string(), payload: Value::Object(payload) });
            continue;
        }
        if name != "exception" {
            continue;
        }
        let text = |k: &str| attrs.get(k).map(value_text).unwrap_or_default();
        let msg = format!("{}: {}", text("exception.type"), text("exception.message"));
        span.is_error = true;
        span.error.get_or_insert(msg.trim_matches([' ', ':']).to_string());
    }
}

/// Decodes an OTLP `[{key, value: AnyValue}]` list into [`Attrs`]; later keys win.
pub fn attr_list(v: &Value) -> Attrs {
    let mut out = Attrs::new();
    for kv in v.as_array().into_iter().flatten() {
        if let (Some(k), Some(val)) = (kv.get("key").and_then(Value::as_str), kv.get("value")) {
            out.insert(k.to_string(), any_value(val));
        }
    }
    out
}

/// A plain attribute object (span lists, the bare OpenInference attribute map) as [`Attrs`].
pub fn attr_object(v: &Value) -> Attrs {
    match v {
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Value::Array(_) => attr_list(v),
        _ => Attrs::new(),
    }
}

/// Decodes an OTLP `AnyValue` (`stringValue`, `intValue` as string or number, `doubleValue`,
/// `boolValue`, `arrayValue.values`, `kvlistValue.values`, `bytesValue` kept as base64 text).
pub fn any_value(v: &Value) -> Value {
    let Some(obj) = v.as_object() else {
        return v.clone();
    };
    if let Some(s) = obj.get("stringValue") {
        return s.clone();
    }
    if let Some(i) = obj.get("intValue") {
        return match i {
            Value::String(s) => s.parse::<i64>().map(Value::from).unwrap_or_else(|_| i.clone()),
            other => other.clone(),
        };
    }
    for key in ["doubleValue", "boolValue", "bytesValue"] {
        if let Some(x) = obj.get(key) {
            return x.clone();
        }
    }
    if let Some(a) = obj.get("arrayValue") {
        let vals = a.get("values").and_then(Value::as_array);
        return Value::Array(vals.into_iter().flatten().map(any_value).collect());
    }
    if let Some(kv) = obj.get("kvlistValue") {
        return Value::Object(attr_list(kv.get("values").unwrap_or(&Value::Null)).into_iter().collect());
    }
    Value::Null
}

/// Normalises a trace or span id: 16/32-digit hex lowercased (a `0x` prefix, as Phoenix writes,
/// dropped), base64 of 8/16 bytes turned into hex, integers written as 16-digit hex, other strings
/// kept. Empty and all-zero ids are `None`.
pub fn norm_id(v: &Value) -> Option<String> {
    let id = match v {
        Value::String(s) => {
            let s = s.trim();
            norm_id_str(s.strip_prefix("0x").unwrap_or(s))?
        }
        Value::Number(n) => match n.as_u64() {
            Some(u) => format!("{u:016x}"),
            None => n.to_string(),
        },
        _ => return None,
    };
    (!id.is_empty() && id.chars().any(|c| c != '0')).then(|| super::spantree::bounded_id(id))
}

/// A trace id of a span list as the file writes it: a decimal integer (any-agent dumps the OTel
/// SDK's 128-bit `int`) is kept digit for digit, never re-typed through a float (serde_json's
/// `arbitrary_precision` keeps the number's text); a string is normalised as by [`norm_id`].
/// [`otel_id`] turns either into the hex of OTLP.
pub fn trace_id(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => {
            let text = n.to_string();
            (text.bytes().all(|b| b.is_ascii_digit()) && text.bytes().any(|b| b != b'0')).then_some(text)
        }
        other => norm_id(other),
    }
}

/// An id as OTLP/JSON writes it: `bytes` (16 for a trace id, 8 for a span id) as lowercase hex.
/// Accepts hex of that length (a `0x` prefix dropped), a decimal integer that fits (any-agent),
/// and a UUID (with or without dashes) for a 16-byte id; `None` for anything else or an all-zero
/// id.
pub fn otel_id(id: &str, bytes: usize) -> Option<String> {
    let id = id.trim();
    let id = id.strip_prefix("0x").unwrap_or(id);
    let hex: String = if bytes == 16 && id.len() == 36 && id.matches('-').count() == 4 {
        id.replace('-', "")
    } else {
        id.to_string()
    };
    let out = if hex.len() == bytes * 2 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        hex.to_ascii_lowercase()
    } else if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
        let n: u128 = id.parse().ok()?;
        if bytes < 16 && n >> (bytes * 8) != 0 {
            return None;
        }
        format!("{n:0width$x}", width = bytes * 2)
    } else {
        return None;
    };
    out.bytes().any(|b| b != b'0').then_some(out)
}

fn norm_id_str(s: &str) -> Option<String> {
    let is_hex = s.chars().all(|c| c.is_ascii_hexdigit());
    if is_hex && matches!(s.len(), 16 | 32) {
        return Some(s.to_ascii_lowercase());
    }
    let b64 = base64::engine::general_purpose::STANDARD.decode(s).ok();
    if let Some(bytes) = b64.filter(|b| matches!(b.len(), 8 | 16)) {
        return Some(bytes.iter().map(|b| format!("{b:02x}")).collect());
    }
    Some(s.to_string())
}

/// Whether a status code means ERROR: `2`, `"2"`, `STATUS_CODE_ERROR`, `ERROR`, `error`.
pub fn is_error_code(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.as_u64() == Some(2),
        Value::String(s) => s == "2" || s.to_ascii_uppercase().ends_with("ERROR"),
        _ => false,
    }
}

/// The span kind as a lowercase name, from an integer (0-5, OTLP enum order) or an enum name
/// (`SPAN_KIND_CLIENT`, `internal`); `None` when unknown.
pub fn kind_name(v: &Value) -> Option<String> {
    const NAMES: [&str; 6] = ["unspecified", "internal", "server", "client", "producer", "consumer"];
    let name = match v {
        Value::Number(n) => NAMES.get(n.as_u64()? as usize)?.to_string(),
        Value::String(s) => {
            let lower = s.to_ascii_lowercase();
            let bare = lower.trim_start_matches("span_kind_").trim_start_matches("spankind.").to_string();
            match bare.parse::<usize>() {
                Ok(i) => NAMES.get(i)?.to_string(),
                Err(_) => bare,
            }
        }
        _ => return None,
    };
    NAMES.contains(&name.as_str()).then_some(name)
}

/// A sort key for a start time: unix nanoseconds (digits, or an ISO 8601 time read at any
/// precision and offset) zero-padded to 24 places, anything else unchanged
/// ([`super::spantree::time_sort_key`]).
pub fn sort_key(t: &str) -> String {
    super::spantree::time_sort_key(t)
}

/// Keys with more dot-separated segments than this are ignored by [`unflatten`] (no convention
/// nests that deep; the cap bounds recursion on hostile input).
const MAX_SEGMENTS: usize = 16;

/// Rebuilds nested values from flattened keys under `prefix`: `p.0.message.role = "user"` →
/// `[{message: {role: "user"}}]`. Numeric segments become array positions (0-based, gaps
/// dropped); JSON held in leaf strings is left as text; keys deeper than 16 segments are ignored.
pub fn unflatten(attrs: &Attrs, prefix: &str) -> Value {
    let dotted = format!("{prefix}.");
    let mut root = Value::Object(Map::new());
    for (k, v) in attrs.range(dotted.clone()..) {
        let Some(rest) = k.strip_prefix(&dotted) else {
            break;
        };
        if rest.split('.').count() > MAX_SEGMENTS {
            continue;
        }
        insert_path(&mut root, rest.split('.'), v.clone());
    }
    arrays(root)
}

fn insert_path<'a>(node: &mut Value, mut segs: impl Iterator<Item = &'a str>, leaf: Value) {
    let Some(seg) = segs.next() else {
        return;
    };
    let Value::Object(map) = node else {
        return;
    };
    let rest: Vec<&str> = segs.collect();
    if rest.is_empty() {
        map.insert(seg.to_string(), leaf);
        return;
    }
    let child = map.entry(seg.to_string()).or_insert_with(|| Value::Object(Map::new()));
    if !child.is_object() {
        *child = Value::Object(Map::new());
    }
    insert_path(child, rest.into_iter(), leaf);
}

/// Objects whose keys are all integers become arrays ordered by those integers.
fn arrays(v: Value) -> Value {
    let Value::Object(map) = v else {
        return v;
    };
    let numeric = !map.is_empty() && map.keys().all(|k| k.parse::<usize>().is_ok());
    if numeric {
        let mut items: Vec<(usize, Value)> =
            map.into_iter().map(|(k, v)| (k.parse().unwrap_or(usize::MAX), arrays(v))).collect();
        items.sort_by_key(|(i, _)| *i);
        return Value::Array(items.into_iter().map(|(_, v)| v).collect());
    }
    Value::Object(map.into_iter().map(|(k, v)| (k, arrays(v))).collect())
}

/// Whether an OTLP/JSON document carries OpenInference spans: an instrumentation scope named
/// `openinference.*` or an `openinference.span.kind` attribute.
pub fn is_openinference(doc: &Document) -> bool {
    let requests: Vec<&Value> = match doc {
        Document::Json(v) => vec![v],
        Document::Lines { values, .. } => values.iter().map(|(_, v)| v).collect(),
    };
    let scope_spans = requests
        .into_iter()
        .filter_map(|r| r.get("resourceSpans").and_then(Value::as_array))
        .flatten()
        .filter_map(|rs| rs.get("scopeSpans").and_then(Value::as_array))
        .flatten();
    for ss in scope_spans {
        let scope = ss.pointer("/scope/name").and_then(Value::as_str);
        if scope.is_some_and(|s| s.starts_with("openinference")) {
            return true;
        }
        let spans = ss.get("spans").and_then(Value::as_array).into_iter().flatten();
        let mut keys = spans
            .filter_map(|sp| sp.get("attributes").and_then(Value::as_array))
            .flatten()
            .filter_map(|kv| kv.get("key").and_then(Value::as_str));
        if keys.any(|k| k == "openinference.span.kind") {
            return true;
        }
    }
    false
}

/// Loads the spans of an OTLP/JSON document (one request, or one per JSON line) as `format`,
/// one trajectory per trace id, each span mapped to a span-tree node by `node` (the format's
/// attribute reading). Shared by the OTel GenAI, pydantic-ai and Strands loaders.
///
/// # Errors
/// A message when the document holds no span.
pub fn load_span_groups(
    name: &str,
    format: crate::model::SourceFormat,
    doc: &Document,
    node: fn(&RawSpan, &mut Vec<Diagnostic>) -> super::spantree::Node,
) -> Result<super::Loaded, FormatError> {
    let mut diags = Vec::new();
    let spans = otlp_spans(doc, &mut diags);
    if spans.is_empty() {
        return Err(FormatError::NoRecords { expected: "spans under resourceSpans[].scopeSpans[].spans" });
    }
    let groups = by_trace(spans)
        .into_iter()
        .map(|(t, spans)| (t, spans.iter().map(|s| node(s, &mut diags)).collect()))
        .collect();
    Ok(super::spantree::load_groups(name, format, groups, diags))
}

/// Loads OTLP/JSON requests read one line at a time ([`super::JsonLines`], OTLP NDJSON as the
/// collector's file exporter writes it) as `format`: each line is parsed, its spans are mapped to
/// span-tree nodes by `node` and the line is dropped before the next, so no `Value` of the whole
/// file is held. Same result as [`load_span_groups`] on the same lines. `None` (read the
/// document whole) when a line is not a request with `resourceSpans` or carries log records (GenAI
/// events in logs are attached to spans of any line), or when no line holds a span.
pub fn load_span_lines(
    name: &str,
    format: crate::model::SourceFormat,
    lines: &super::JsonLines<'_>,
    node: fn(&RawSpan, &mut Vec<Diagnostic>) -> super::spantree::Node,
) -> Option<super::Loaded> {
    let mut diags = Vec::new();
    // (trace id, node, the diagnostics of mapping its span), in document order.
    let mut nodes = Vec::new();
    for (line, v) in lines.values() {
        if !v.get("resourceSpans").is_some_and(Value::is_array) || v.get("resourceLogs").is_some() {
            return None;
        }
        let mut spans = Vec::new();
        request_spans(&v, Some(line), &mut spans, &mut diags);
        for span in spans {
            let mut own = Vec::new();
            let n = node(&span, &mut own);
            nodes.push((span.trace_id, n, own));
        }
    }
    if nodes.is_empty() {
        return None;
    }
    // The diagnostics of the spans, then those of the nodes trace by trace, as the whole-document
    // loader gives them.
    let mut groups = Vec::new();
    for (trace, members) in group_by(nodes, |(t, _, _)| t.clone()) {
        let mut group = Vec::with_capacity(members.len());
        for (_, n, own) in members {
            diags.extend(own);
            group.push(n);
        }
        groups.push((trace, group));
    }
    Some(super::spantree::load_groups(name, format, groups, diags))
}

/// Groups spans by trace id, traces in order of first appearance (spans without one join the
/// first trace).
pub fn by_trace(spans: Vec<RawSpan>) -> Vec<(Option<String>, Vec<RawSpan>)> {
    group_by(spans, |s| s.trace_id.clone())
}

/// Groups items by a key in order of first appearance; items without a key join the first group.
/// Linear: each key is looked up in a hash map.
pub fn group_by<T>(items: Vec<T>, key: impl Fn(&T) -> Option<String>) -> Vec<(Option<String>, Vec<T>)> {
    let mut groups: Vec<(Option<String>, Vec<T>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for item in items {
        let k = key(&item);
        let at = match &k {
            Some(t) => index.get(t).copied(),
            None => (!groups.is_empty()).then_some(0),
        };
        match at {
            Some(i) => groups[i].1.push(item),
            None => {
                if let Some(t) = &k {
                    index.insert(t.clone(), groups.len());
                }
                groups.push((k, vec![item]));
            }
        }
    }
    groups
}

/// A value with JSON held in a string parsed (`"[{...}]"` → array); other values unchanged.
pub fn parsed_json(v: &Value) -> Value {
    if let Value::String(s) = v {
        let t = s.trim_start();
        if (t.starts_with('{') || t.starts_with('['))
            && let Ok(inner) = serde_json::from_str::<Value>(s)
        {
            return inner;
        }
    }
    v.clone()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ids_in_hex_base64_and_decimal_normalise_to_hex() {
        assert_eq!(norm_id(&json!("03491BEEA3CB073D")).unwrap(), "03491beea3cb073d");
        assert_eq!(norm_id(&json!("A0kb7qPLBz0=")).unwrap(), "03491beea3cb073d");
        assert_eq!(norm_id(&json!("0xD9BDEDF0DF0B7208")).unwrap(), "d9bdedf0df0b7208");
        assert_eq!(norm_id(&json!(236_999_999_999u64)).unwrap(), "000000372e4d01ff");
        assert_eq!(norm_id(&json!("")), None);
        assert_eq!(norm_id(&json!("0000000000000000")), None);
    }

    #[test]
    fn trace_ids_keep_their_text_and_convert_to_otlp_hex() {
        let big: Value = serde_json::from_str("100927429609276267646756448943279827607").unwrap();
        assert_eq!(trace_id(&big).unwrap(), "100927429609276267646756448943279827607");
        assert_eq!(otel_id("100927429609276267646756448943279827607", 16).unwrap(), "4bedea77bb33b9c5f280371eae21ea97");
        assert_eq!(otel_id("9295669169508793927", 8).unwrap(), "8100d9dbee1f3e47");
        assert_eq!(otel_id("0x81013C7B8EBD6647", 8).unwrap(), "81013c7b8ebd6647");
        assert_eq!(otel_id("3c0e9d8c-1b0f-4c8e-9a4e-2f6f1b9b7d11", 16).unwrap(), "3c0e9d8c1b0f4c8e9a4e2f6f1b9b7d11");
        assert_eq!(otel_id("100927429609276267646756448943279827607", 8), None, "too wide for a span id");
        assert_eq!(otel_id("toolu_01", 8), None);
        assert_eq!(otel_id("0000000000000000", 8), None);
    }

    #[test]
    fn enums_are_read_as_names_or_integers() {
        assert_eq!(kind_name(&json!(3)).unwrap(), "client");
        assert_eq!(kind_name(&json!("SPAN_KIND_CLIENT")).unwrap(), "client");
        assert_eq!(kind_name(&json!("SpanKind.INTERNAL")).unwrap(), "internal");
        assert_eq!(kind_name(&json!("SPAN_KIND_WEIRD")), None);
        assert!(is_error_code(&json!(2)));
        assert!(is_error_code(&json!("STATUS_CODE_ERROR")));
        assert!(is_error_code(&json!("error")));
        assert!(!is_error_code(&json!("STATUS_CODE_OK")));
    }

    #[test]
    fn any_values_decode_including_string_ints_and_nested_lists() {
        assert_eq!(any_value(&json!({"intValue": "412"})), json!(412));
        assert_eq!(
            any_value(&json!({"arrayValue": {"values": [{"stringValue": "a"}, {"boolValue": true}]}})),
            json!(["a", true])
        );
        assert_eq!(
            any_value(&json!({"kvlistValue": {"values": [{"key": "k", "value": {"doubleValue": 0.5}}]}})),
            json!({"k": 0.5})
        );
    }

    #[test]
    fn flattened_keys_unflatten_into_arrays() {
        let attrs: Attrs = [
            ("p.1.message.role".to_string(), json!("tool")),
            ("p.0.message.role".to_string(), json!("user")),
            ("p.0.message.tool_calls.0.tool_call.id".to_string(), json!("c")),
            ("q.0.x".to_string(), json!(1)),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            unflatten(&attrs, "p"),
            json!([{"message": {"role": "user", "tool_calls": [{"tool_call": {"id": "c"}}]}},
                   {"message": {"role": "tool"}}])
        );
    }
}
