//! Loading trajectories from files: format detection, the loaders and their errors.
//!
//! Every loader is a pure function of the bytes (no IO here; [`fs`] reads files at the edge).
//! A document is first parsed as one JSON value or, failing that, as JSON Lines; each format then
//! says whether it recognises the document and turns it into trajectories plus diagnostics. A bad
//! record is skipped with a [`Diagnostic`]; only a document with no usable step is an error.

pub mod anyagent;
pub mod claude;
pub mod codex;
pub mod fs;
pub mod langfuse;
pub mod langsmith;
pub mod messages;
pub mod openai;
pub mod openinference;
pub mod otel;
pub mod otlp;
pub mod spantree;
pub mod splice;
pub mod whowhen;

use std::fmt;

use serde_json::Value;

use crate::model::{Diagnostic, SourceFormat, Trajectory};

/// What a load produced: one or more trajectories (a τ-bench list is a data set) and diagnostics.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The format the document was read as.
    pub format: SourceFormat,
    /// The trajectories, in document order.
    pub trajectories: Vec<Trajectory>,
    /// Problems that did not stop the load.
    pub diagnostics: Vec<Diagnostic>,
}

/// A parsed document: one JSON value, or JSON Lines with their 1-based line numbers.
#[derive(Debug, Clone)]
pub enum Document {
    /// The whole file is one JSON value.
    Json(Value),
    /// One JSON value per non-empty line; lines that failed to parse are in `bad`.
    Lines {
        /// `(line number, value)` of each parsed line, 1-based.
        values: Vec<(usize, Value)>,
        /// `(line number, error message)` of each line that is not JSON.
        bad: Vec<(usize, String)>,
    },
}

/// Why a file could not be loaded at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// Reading the file failed.
    Io {
        /// The file.
        path: String,
        /// The OS error.
        message: String,
    },
    /// The file has no bytes (or only white space).
    Empty {
        /// The file.
        path: String,
    },
    /// The file is not valid UTF-8.
    NotUtf8 {
        /// The file.
        path: String,
        /// 1-based line of the first invalid byte.
        line: usize,
        /// 0-based byte offset of the first invalid byte.
        offset: usize,
    },
    /// The file is neither JSON nor JSON Lines.
    NotJson {
        /// The file.
        path: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// The JSON matched no known format.
    UnknownFormat {
        /// The file.
        path: String,
        /// The formats tried.
        tried: Vec<SourceFormat>,
        /// A short description of what the document holds instead.
        found: String,
    },
    /// The document was recognised but is unusable (no step, wrong shape where it matters).
    Invalid {
        /// The file.
        path: String,
        /// The format it was read as.
        format: SourceFormat,
        /// What is wrong, naming the place.
        message: String,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Io { path, message } => write!(f, "{path}: cannot read: {message}"),
            LoadError::Empty { path } => write!(f, "{path}: the file is empty, expected a JSON or JSONL trace"),
            LoadError::NotUtf8 { path, line, offset } => {
                write!(f, "{path}:{line}: not UTF-8 (invalid byte at offset {offset}), expected a JSON or JSONL trace")
            }
            LoadError::NotJson { path, line, column, message } => {
                write!(f, "{path}:{line}:{column}: not JSON: {message}")
            }
            LoadError::UnknownFormat { path, tried, found } => {
                let names: Vec<&str> = tried.iter().map(|t| t.as_str()).collect();
                write!(f, "{path}: no known trace format matched (tried {}); found {found}", names.join(", "))
            }
            LoadError::Invalid { path, format, message } => write!(f, "{path}: as {format}: {message}"),
        }
    }
}

impl std::error::Error for LoadError {}

/// Reads a file related to the one being parsed, by a path relative to that file's folder.
///
/// The path uses `/` as separator and may end in a name with one `*` (any run of characters);
/// the first match in name order is read. `None` when there is no such file. Loaders ask for
/// names built only from validated ids (no `..`, no absolute paths): Claude Code sub-agent
/// sessions and Codex sub-agent threads.
pub type Related<'a> = &'a dyn Fn(&str) -> Option<Vec<u8>>;

/// Parses `bytes` (named `path` in messages) as `format`, or detects the format when `None`.
///
/// Files that refer to sibling files (Claude Code sub-agents) load without them; use
/// [`parse_with_related`] to resolve them.
///
/// # Errors
/// [`LoadError`] when the bytes are empty, not UTF-8, not JSON/JSONL, match no format, or hold no
/// usable step.
pub fn parse(path: &str, bytes: &[u8], format: Option<SourceFormat>) -> Result<Loaded, LoadError> {
    parse_with_related(path, bytes, format, &|_| None)
}

/// Like [`parse`], with `related` reading files the trace refers to (see [`Related`]): a Claude
/// Code session's sub-agent files, a Codex rollout's sub-agent threads. Pure: all IO is in
/// `related` ([`fs::load_path`] reads beside the file).
///
/// # Errors
/// As [`parse`]; a missing or broken related file is a diagnostic, not an error.
pub fn parse_with_related(
    path: &str,
    bytes: &[u8],
    format: Option<SourceFormat>,
    related: Related<'_>,
) -> Result<Loaded, LoadError> {
    let doc = parse_document(path, bytes)?;
    let format = match format {
        Some(f) => f,
        None => detect(&doc).ok_or_else(|| LoadError::UnknownFormat {
            path: path.to_string(),
            tried: SourceFormat::ALL.to_vec(),
            found: describe(&doc),
        })?,
    };
    let mut loaded = load_as(path, &doc, format, related)?;
    if let Document::Lines { bad, .. } = &doc {
        for (line, msg) in bad {
            loaded.diagnostics.push(Diagnostic { line: Some(*line), message: format!("skipped: not JSON: {msg}") });
        }
    }
    if loaded.trajectories.is_empty() {
        return Err(LoadError::Invalid { path: path.to_string(), format, message: "no trajectory found".into() });
    }
    for t in &mut loaded.trajectories {
        if t.steps.is_empty() {
            return Err(LoadError::Invalid {
                path: path.to_string(),
                format,
                message: format!("trajectory {:?} has no usable step", t.id),
            });
        }
        for (i, s) in t.steps.iter_mut().enumerate() {
            s.index = i;
        }
        t.refresh_agents();
    }
    loaded.format = format;
    Ok(loaded)
}

/// Splits the bytes into a [`Document`].
///
/// # Errors
/// Empty, non-UTF-8 and non-JSON inputs (a JSONL file where no line parses is non-JSON).
pub fn parse_document(path: &str, bytes: &[u8]) -> Result<Document, LoadError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        let line = bytes[..offset].iter().filter(|b| **b == b'\n').count() + 1;
        LoadError::NotUtf8 { path: path.to_string(), line, offset }
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(LoadError::Empty { path: path.to_string() });
    }
    let whole_err = match serde_json::from_str::<Value>(text) {
        Ok(v) => return Ok(Document::Json(v)),
        Err(e) => e,
    };
    // JSON Lines: only when the first non-empty line is a complete JSON value on its own.
    let mut values = Vec::new();
    let mut bad = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(v) => values.push((i + 1, v)),
            Err(e) => bad.push((i + 1, e.to_string())),
        }
    }
    let first_ok = values.first().map(|(l, _)| *l);
    let first_bad = bad.first().map(|(l, _)| *l);
    let lines_ok = match (first_ok, first_bad) {
        (Some(ok), Some(b)) => ok < b && values.len() > 1,
        (Some(_), None) => true,
        _ => false,
    };
    if lines_ok {
        return Ok(Document::Lines { values, bad });
    }
    Err(LoadError::NotJson {
        path: path.to_string(),
        line: whole_err.line(),
        column: whole_err.column().max(1),
        message: whole_err.to_string().split(" at line").next().unwrap_or_default().to_string(),
    })
}

/// The format a document most likely is, or `None`.
pub fn detect(doc: &Document) -> Option<SourceFormat> {
    SourceFormat::ALL.into_iter().find(|f| matches(doc, *f))
}

/// Whether `doc` looks like `format`.
pub fn matches(doc: &Document, format: SourceFormat) -> bool {
    use SourceFormat::*;
    match format {
        WhoWhenAlgorithm | WhoWhenHand | MagenticLog => whowhen::detect(doc) == Some(format),
        OpenAiChat | TauBench | FalatJsonl => openai::detect(doc) == Some(format),
        OtelGenAi => otel::detect(doc),
        OpenInference => openinference::detect(doc),
        AnyAgent => anyagent::detect(doc),
        ClaudeCode => claude::detect(doc),
        Codex => codex::detect(doc),
        LangSmith => langsmith::detect(doc),
        Langfuse => langfuse::detect(doc),
    }
}

fn load_as(path: &str, doc: &Document, format: SourceFormat, related: Related<'_>) -> Result<Loaded, LoadError> {
    use SourceFormat::*;
    let name = file_stem(path);
    let res = match format {
        WhoWhenAlgorithm | WhoWhenHand | MagenticLog => whowhen::load(&name, doc, format),
        OpenAiChat | TauBench | FalatJsonl => openai::load(&name, doc, format),
        OtelGenAi => otel::load(&name, doc),
        OpenInference => openinference::load(&name, doc),
        AnyAgent => anyagent::load(&name, doc),
        ClaudeCode => claude::load(&name, doc, related),
        Codex => codex::load(&name, doc, related),
        LangSmith => langsmith::load(&name, doc),
        Langfuse => langfuse::load(&name, doc),
    };
    res.map_err(|message| LoadError::Invalid { path: path.to_string(), format, message })
}

/// The file name without folders and the last extension (`data/12.json` → `12`).
pub fn file_stem(path: &str) -> String {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
    match base.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_string(),
        _ => base.to_string(),
    }
}

/// A short description of a document, for "found ... instead" messages.
pub fn describe(doc: &Document) -> String {
    match doc {
        Document::Json(v) => describe_value(v),
        Document::Lines { values, .. } => {
            let first = values.first().map(|(_, v)| describe_value(v)).unwrap_or_default();
            format!("{} JSON lines, the first {first}", values.len())
        }
    }
}

fn describe_value(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let keys: Vec<&str> = m.keys().take(8).map(String::as_str).collect();
            format!("an object with keys [{}]", keys.join(", "))
        }
        Value::Array(a) => match a.first() {
            Some(first) => format!("an array of {} items, the first {}", a.len(), describe_value(first)),
            None => "an empty array".into(),
        },
        Value::String(_) => "a string".into(),
        Value::Number(_) => "a number".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Null => "null".into(),
    }
}

/// Text of a JSON value for step content: strings as they are, `null` as empty, others as JSON.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A string field of an object, also accepting numbers (`"12"` and `12` alike).
pub fn str_field<'a>(v: &'a Value, key: &str) -> Option<std::borrow::Cow<'a, str>> {
    match v.get(key)? {
        Value::String(s) => Some(std::borrow::Cow::Borrowed(s.as_str())),
        Value::Number(n) => Some(std::borrow::Cow::Owned(n.to_string())),
        Value::Bool(b) => Some(std::borrow::Cow::Owned(b.to_string())),
        _ => None,
    }
}
