//! Loading trajectories from files: format detection, the loaders and their errors.
//!
//! Every loader is a pure function of the bytes (no IO here; [`fs`] reads files at the edge).
//! A document is first parsed as one JSON value or, failing that, as JSON Lines; each format then
//! says whether it recognises the document and turns it into trajectories plus diagnostics. A bad
//! record is skipped with a [`Diagnostic`]; only a document with no usable step is an error.

pub mod actions;
pub mod agentchat;
pub mod anyagent;
pub mod claude;
pub mod codex;
pub mod error;
pub mod fs;
pub mod jsonl;
pub mod labels;
pub mod langfuse;
pub mod langsmith;
pub mod messages;
pub mod minisweagent;
pub mod openai;
pub mod openhands;
pub mod openinference;
pub mod otel;
pub mod otlp;
pub mod pydanticai;
pub mod pyrepr;
pub mod smolagents;
pub mod spantree;
pub mod splice;
pub mod strands;
pub mod sweagent;
pub mod tau;
pub mod whowhen;
// Agent-framework formats, set A (issue 26).
pub mod adk;
pub mod agents_sdk;
pub mod codex_exec;
pub mod gemini;
pub mod inspect_ai;
pub mod mlflow;
pub mod steps;

use std::fmt;

use serde::Deserialize as _;
use serde_json::Value;

pub use error::{FormatError, FormatNameError};

use crate::model::{Diagnostic, SourceFormat, Trajectory};

/// The formats this build can load, in the order auto-detection tries them.
pub const SUPPORTED: [SourceFormat; 25] = SourceFormat::ALL;

/// How many records of a list detection looks at (the first ones), so detection stays cheap on
/// 50,000-step files and tolerates a few bad records.
pub const DETECT_SAMPLE: usize = 256;

/// What a load produced: one or more trajectories (a τ-bench list is a data set) and diagnostics.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The format the document was read as.
    pub format: SourceFormat,
    /// The trajectories, in document order.
    pub trajectories: Vec<Trajectory>,
    /// Problems that did not stop the load, ordered by line where lines are known.
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
        /// `(line number, error message naming the column)` of each line that is not JSON.
        bad: Vec<(usize, String)>,
    },
}

impl Drop for Document {
    /// Takes nested arrays and objects apart without recursion, so dropping a document nested
    /// [`MAX_NESTING`] deep cannot overflow the stack of any thread.
    fn drop(&mut self) {
        let mut stack: Vec<Value> = match self {
            Document::Json(v) => vec![std::mem::take(v)],
            Document::Lines { values, .. } => values.drain(..).map(|(_, v)| v).collect(),
        };
        while let Some(v) = stack.pop() {
            match v {
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
                _ => {}
            }
        }
    }
}

/// How the format of a document is chosen: detected among some formats, or forced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatChoice {
    /// Try these formats in order and take the first that matches.
    Detect(Vec<SourceFormat>),
    /// Read the document as this format, whatever it looks like.
    Force(SourceFormat),
}

impl FormatChoice {
    /// Parses a `--format` value: `auto`, `who-and-when` (either subset, detected), or an exact
    /// name of a [`SUPPORTED`] format.
    ///
    /// # Errors
    /// [`FormatNameError`], listing the accepted names.
    pub fn parse(name: &str) -> Result<FormatChoice, FormatNameError> {
        let lower = name.trim().to_ascii_lowercase();
        match lower.as_str() {
            "auto" => return Ok(FormatChoice::Detect(SUPPORTED.to_vec())),
            "who-and-when" => {
                return Ok(FormatChoice::Detect(vec![SourceFormat::WhoWhenAlgorithm, SourceFormat::WhoWhenHand]));
            }
            _ => {}
        }
        let expected = FormatChoice::names();
        match SourceFormat::parse(&lower) {
            Some(f) if SUPPORTED.contains(&f) => Ok(FormatChoice::Force(f)),
            Some(format) => Err(FormatNameError::NoLoader { format, expected }),
            None => Err(FormatNameError::Unknown { name: name.to_string(), expected }),
        }
    }

    /// Every name [`FormatChoice::parse`] accepts.
    pub fn names() -> Vec<&'static str> {
        let mut names = vec!["auto", "who-and-when"];
        names.extend(SUPPORTED.iter().map(|f| f.as_str()));
        names
    }
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
        /// Whether it has bytes, all of them white space.
        white_space: bool,
    },
    /// The file is not valid UTF-8.
    NotUtf8 {
        /// The file.
        path: String,
        /// 1-based line of the first invalid byte.
        line: usize,
        /// 1-based column (in characters) of the first invalid byte.
        column: usize,
        /// 0-based byte offset of the first invalid byte.
        offset: usize,
        /// The invalid byte.
        byte: u8,
    },
    /// The file is binary, not text: it starts with the signature of a known binary kind (an
    /// image, a compressed file...) or holds a NUL byte or other control characters text has not.
    Binary {
        /// The file.
        path: String,
        /// 1-based line of the first byte text has not (1 for a signature).
        line: usize,
        /// 1-based column (in characters) of that byte.
        column: usize,
        /// What the signature says it is (`a PNG image`), when known.
        kind: Option<&'static str>,
    },
    /// The file is text but not JSON or JSON Lines: its first non-blank line is not JSON and does
    /// not start an object or an array (a plain-text note, a log, YAML...).
    PlainText {
        /// The file.
        path: String,
        /// 1-based line of the first non-blank line.
        line: usize,
        /// 1-based column of its first non-blank character.
        column: usize,
        /// The start of that line (sanitised and clipped, for the message).
        start: String,
    },
    /// The file is one JSON scalar (a number, a string, `true`, `null`): no format is one.
    Scalar {
        /// The file.
        path: String,
        /// 1-based line of the value.
        line: usize,
        /// 1-based column of the value.
        column: usize,
        /// What it is (`a number`, see [`type_name`]).
        found: &'static str,
    },
    /// The file starts with a byte-order mark (or the NUL pattern of UTF-16/32 JSON) but its bytes
    /// are not valid in that encoding.
    BadEncoding {
        /// The file.
        path: String,
        /// The encoding recognised (`UTF-16LE with BOM`, `UTF-16BE`, `UTF-32LE with BOM`...).
        encoding: String,
        /// 0-based byte offset of the first invalid code unit.
        offset: usize,
    },
    /// The JSON nests arrays and objects deeper than [`MAX_NESTING`].
    TooDeep {
        /// The file.
        path: String,
        /// 1-based line where the limit was passed.
        line: usize,
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
    /// A label file (`--labels`) in neither label layout, or unusable in its own.
    Labels {
        /// The file.
        path: String,
        /// What is wrong or what was expected.
        message: String,
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
            LoadError::Empty { path, white_space: false } => {
                write!(f, "{path}: the file is empty; {}", expected_trace())
            }
            LoadError::Empty { path, white_space: true } => {
                write!(f, "{path}: the file holds only white space; {}", expected_trace())
            }
            LoadError::NotUtf8 { path, line, column, offset, byte } => write!(
                f,
                "{path}:{line}:{column}: not UTF-8 text (invalid byte 0x{byte:02X} at byte offset {offset}); expected a \
                 JSON or JSON Lines trace in UTF-8 (or UTF-16 or UTF-32)"
            ),
            LoadError::Binary { path, line, column, kind } => {
                let what = kind.map(|k| format!(" ({k})")).unwrap_or_default();
                write!(
                    f,
                    "{path}:{line}:{column}: a binary file{what}, not JSON or JSON Lines text; {}",
                    expected_trace()
                )
            }
            LoadError::PlainText { path, line, column, start } => write!(
                f,
                "{path}:{line}:{column}: not JSON or JSON Lines: the text starts \"{start}\"; {}",
                expected_trace()
            ),
            LoadError::Scalar { path, line, column, found } => write!(
                f,
                "{path}:{line}:{column}: the file is one JSON value, {found}, not a trace; {}",
                expected_trace()
            ),
            LoadError::BadEncoding { path, encoding, offset } => {
                write!(
                    f,
                    "{path}: invalid {encoding} (bad code unit at byte offset {offset}), expected a JSON or JSONL trace"
                )
            }
            LoadError::TooDeep { path, line } => {
                write!(f, "{path}:{line}: JSON nested deeper than {MAX_NESTING} levels, the most falat reads")
            }
            LoadError::NotJson { path, line, column, message } => {
                write!(f, "{path}:{line}:{column}: not JSON: {message}; expected a JSON or JSONL trace")
            }
            LoadError::UnknownFormat { path, tried, found } => {
                let names: Vec<&str> = tried.iter().map(|t| t.as_str()).collect();
                write!(f, "{path}: no known trace format matched (tried {}); found {found}", names.join(", "))
            }
            LoadError::Invalid { path, format, message } => write!(f, "{path}: as {format}: {message}"),
            LoadError::Labels { path, message } => write!(f, "{path}: as labels: {message}"),
        }
    }
}

impl std::error::Error for LoadError {}

/// What a trace file must be, for the messages of files that are none: JSON or JSON Lines in one
/// of the formats falat reads, by their `--format` names.
fn expected_trace() -> String {
    let names: Vec<&str> = SUPPORTED.iter().map(|f| f.as_str()).collect();
    format!(
        "expected a trace, JSON or JSON Lines (an object or an array), in one of the formats falat reads: {}",
        names.join(", ")
    )
}

/// Signatures of binary kinds a trace is mistaken for, and what to call them.
const BINARY_SIGNATURES: [(&[u8], &str); 11] = [
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xFF\xD8\xFF", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"\x1F\x8B", "gzip-compressed: decompress it first"),
    (b"\x28\xB5\x2F\xFD", "zstd-compressed: decompress it first"),
    (b"\xFD7zXZ\x00", "xz-compressed: decompress it first"),
    (b"BZh", "bzip2-compressed: decompress it first"),
    (b"\x7FELF", "an ELF executable"),
    (b"SQLite format 3\x00", "an SQLite database"),
];

/// How much of a file [`binary`] looks at.
const BINARY_SNIFF: usize = 8192;

/// Whether `bytes` (not UTF-16/32, see [`wide_encoding`]) are a binary file rather than text:
/// `(0-based offset of the first byte text has not, the kind)` when they start with a signature
/// of [`BINARY_SIGNATURES`] (offset 0), or hold a NUL byte in their first [`BINARY_SNIFF`]
/// bytes, or are not UTF-8 and hold a C0 control there other than tab, line feed, form feed,
/// carriage return and escape.
fn binary(bytes: &[u8]) -> Option<(usize, Option<&'static str>)> {
    if let Some((_, kind)) = BINARY_SIGNATURES.iter().find(|(sig, _)| {
        // bzip2's "BZh" is followed by its block size digit, 1 to 9.
        bytes.starts_with(sig) && (*sig != b"BZh" || bytes.get(3).is_some_and(|d| (b'1'..=b'9').contains(d)))
    }) {
        return Some((0, Some(*kind)));
    }
    let head = &bytes[..bytes.len().min(BINARY_SNIFF)];
    if let Some(at) = head.iter().position(|b| *b == 0) {
        return Some((at, None));
    }
    let invalid = std::str::from_utf8(bytes).err()?.valid_up_to();
    let control = |b: &u8| *b < 0x20 && !matches!(b, b'\t' | b'\n' | 0x0C | b'\r' | 0x1B);
    head.iter().any(control).then(|| (head.iter().position(control).unwrap_or(invalid).min(invalid), None))
}

/// The 1-based line and column (in characters) of byte `offset` of `bytes`, whose bytes before
/// `offset` are UTF-8.
fn line_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line_start = before.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let column = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
    (line, column)
}

/// Reads a file related to the one being parsed, by a path relative to that file's folder.
///
/// The path uses `/` as separator and may end in a name with one `*` (any run of characters);
/// the first match in name order is read. `None` when there is no such file. Loaders ask for
/// names built only from validated ids (no `..`, no absolute paths): Claude Code sub-agent
/// sessions and Codex sub-agent threads.
pub type Related<'a> = &'a dyn Fn(&str) -> Option<Vec<u8>>;

/// Parses `bytes` (named `path` in messages) as `format`, or detects it among [`SUPPORTED`] when
/// `None`.
///
/// # Errors
/// [`LoadError`] when the bytes are empty, not UTF-8, not JSON/JSONL, match no format, or hold no
/// usable step.
pub fn parse(path: &str, bytes: &[u8], format: Option<SourceFormat>) -> Result<Loaded, LoadError> {
    let choice = match format {
        Some(f) => FormatChoice::Force(f),
        None => FormatChoice::Detect(SUPPORTED.to_vec()),
    };
    parse_with(path, bytes, &choice)
}

/// Parses `bytes` (named `path` in messages) with the format chosen by `choice`.
///
/// Steps of every trajectory returned are numbered `0..n` and its agents are in order of first
/// appearance.
///
/// # Errors
/// As [`parse`]; [`LoadError::UnknownFormat`] lists the formats of a [`FormatChoice::Detect`].
pub fn parse_with(path: &str, bytes: &[u8], choice: &FormatChoice) -> Result<Loaded, LoadError> {
    parse_with_related(path, bytes, choice, &|_| None)
}

/// Like [`parse_with`], with `related` reading files the trace refers to (see [`Related`]): a
/// Claude Code session's sub-agent files, a Codex rollout's sub-agent threads. Pure: all IO is in
/// `related` ([`fs::load_path`] reads beside the file).
///
/// # Errors
/// As [`parse`]; a missing or broken related file is a diagnostic, not an error.
pub fn parse_with_related(
    path: &str,
    bytes: &[u8],
    choice: &FormatChoice,
    related: Related<'_>,
) -> Result<Loaded, LoadError> {
    // Deeply nested documents recurse in the parser, the loaders and `Drop`: all of that runs on a
    // stack that fits `MAX_NESTING` levels (reserved, only touched pages are committed).
    // Documents of ordinary depth load on the caller's stack.
    // (A ZIP archive's members are only seen once inflated: it always gets the large stack.)
    if !inspect_ai::is_zip(bytes) && wide_encoding(bytes).is_none() && !nests_deeper(bytes, SHALLOW_NESTING) {
        return load_document(path, bytes, choice, related);
    }
    stacker::grow(LOAD_STACK_BYTES, || load_document(path, bytes, choice, related))
}

/// How deep arrays and objects may nest (serde_json's own default limit is 128).
pub const MAX_NESTING: usize = 20_000;
/// Nesting any thread's stack holds while loading (a test thread has 2 MiB).
const SHALLOW_NESTING: usize = 128;
/// The stack a deep document loads on: room for [`MAX_NESTING`] levels of recursion in the
/// parser, the loaders and `Drop`, in unoptimised builds too.
const LOAD_STACK_BYTES: usize = 512 << 20;

fn load_document(path: &str, bytes: &[u8], choice: &FormatChoice, related: Related<'_>) -> Result<Loaded, LoadError> {
    // A ZIP archive (Inspect AI's `.eval` log) is recognised by its magic bytes, before any text
    // decoding, and read as the JSON log it packs.
    // A large OTLP trace is read span by span ([`load_otlp_streamed`]), span and run lists and
    // OpenAI chat arrays item by item ([`load_list_streamed`], [`load_chat_streamed`]).
    // JSON Lines are read one line at a time ([`load_lines`]).
    let doc = if inspect_ai::is_zip(bytes) {
        inspect_ai::zip_document(path, bytes)?
    } else if let Some(loaded) = load_otlp_streamed(path, bytes, choice) {
        return complete(path, loaded);
    } else {
        let text = decode(path, bytes)?;
        if let Some(loaded) = load_list_streamed(path, &text, choice) {
            return complete(path, loaded);
        }
        if let Some(loaded) = load_chat_streamed(path, &text, choice) {
            return complete(path, loaded);
        }
        match parse_text(path, &text)? {
            Parsed::Json(v) => Document::Json(v),
            Parsed::Lines(lines) => return load_lines(path, &lines, choice, related),
        }
    };
    let format = choose(path, &doc, choice)?;
    let mut loaded = load_as(path, &doc, format, related)?;
    if let Document::Lines { bad, .. } = &doc {
        loaded
            .diagnostics
            .extend(bad.iter().map(|(line, msg)| Diagnostic { line: Some(*line), message: format!("skipped: {msg}") }));
    }
    loaded.format = format;
    complete(path, loaded)
}

/// The format `choice` gives `doc`: the forced one, or the first candidate that matches.
///
/// # Errors
/// [`LoadError::UnknownFormat`] when no candidate matches.
fn choose(path: &str, doc: &Document, choice: &FormatChoice) -> Result<SourceFormat, LoadError> {
    match choice {
        FormatChoice::Force(f) => Ok(*f),
        FormatChoice::Detect(candidates) => {
            candidates.iter().copied().find(|f| matches(doc, *f)).ok_or_else(|| LoadError::UnknownFormat {
                path: path.to_string(),
                tried: candidates.clone(),
                found: clip_message(describe_with_hint(doc)),
            })
        }
    }
}

/// Loads JSON Lines: the format is detected on the first [`DETECT_SAMPLE`] lines (on every line
/// when none matches them), then a streaming loader reads the lines one at a time (falat JSONL,
/// Claude Code, codex exec, Codex rollouts, Gemini CLI, ADK events, OpenAI Agents exports, OpenHands
/// evaluation records, OTLP NDJSON of spans); the other formats (OTLP NDJSON with log records, and any format whose
/// documents are not JSON Lines) get every line as a `Value` ([`JsonLines::document`]).
fn load_lines(
    path: &str,
    lines: &JsonLines<'_>,
    choice: &FormatChoice,
    related: Related<'_>,
) -> Result<Loaded, LoadError> {
    use SourceFormat::{
        ClaudeCode, Codex, CodexExec, FalatJsonl, GeminiCli, GoogleAdk, OpenAiAgents, OpenHands, OpenInference,
        OtelGenAi, PydanticAi, Strands,
    };
    let sampled = match choice {
        FormatChoice::Force(f) => Some(*f),
        FormatChoice::Detect(candidates) => {
            let sample = lines.sample(DETECT_SAMPLE);
            candidates.iter().copied().find(|f| matches(&sample, *f))
        }
    };
    let name = file_stem(path);
    let invalid = |format: SourceFormat| {
        move |e: FormatError| LoadError::Invalid {
            path: path.to_string(),
            format,
            message: clip_message(e.to_string()),
        }
    };
    let span_lines = match sampled {
        Some(f @ (OtelGenAi | OpenInference | PydanticAi | Strands)) => {
            otlp::load_span_lines(&name, f, lines, span_node(f)).map(|l| (f, l))
        }
        _ => None,
    };
    let (format, mut loaded) = match sampled {
        _ if span_lines.is_some() => span_lines.unwrap_or_default(),
        Some(f @ FalatJsonl) => (f, jsonl::load_lines(&name, lines).map_err(invalid(f))?),
        Some(f @ ClaudeCode) => (f, claude::load_lines(&name, lines, related).map_err(invalid(f))?),
        Some(f @ CodexExec) => (f, codex_exec::load_lines(&name, lines).map_err(invalid(f))?),
        Some(f @ Codex) => (f, codex::load_lines(&name, lines, related).map_err(invalid(f))?),
        Some(f @ GeminiCli) => (f, gemini::load_lines(&name, lines).map_err(invalid(f))?),
        Some(f @ GoogleAdk) => (f, adk::load_lines(&name, lines).map_err(invalid(f))?),
        Some(f @ OpenAiAgents) => (f, agents_sdk::load_lines(&name, lines).map_err(invalid(f))?),
        Some(f @ OpenHands) => (f, openhands::load_lines(&name, lines).map_err(invalid(f))?),
        _ => {
            let doc = lines.document();
            let format = match sampled {
                Some(f) => f,
                None => choose(path, &doc, choice)?,
            };
            (format, load_as(path, &doc, format, related)?)
        }
    };
    loaded.diagnostics.extend(
        lines.bad.iter().map(|(line, msg)| Diagnostic { line: Some(*line), message: format!("skipped: {msg}") }),
    );
    loaded.format = format;
    complete(path, loaded)
}

/// The span-to-node mapping of an OTLP format (`format` is one of the four OTLP loaders).
fn span_node(format: SourceFormat) -> fn(&otlp::RawSpan, &mut Vec<Diagnostic>) -> spantree::Node {
    match format {
        SourceFormat::OpenInference => openinference::node,
        SourceFormat::PydanticAi => pydanticai::node,
        SourceFormat::Strands => strands::node,
        _ => otel::node,
    }
}

/// Cuts long diagnostics, orders them by line and checks the load ([`finish`]).
fn complete(path: &str, mut loaded: Loaded) -> Result<Loaded, LoadError> {
    for d in &mut loaded.diagnostics {
        if d.message.len() > MAX_MESSAGE_CHARS {
            d.message = clip_message(std::mem::take(&mut d.message));
        }
    }
    loaded.diagnostics.sort_by_key(|d| d.line);
    finish(path, loaded)
}

/// Loads a one-request OTLP/JSON trace file (an object whose only key is `resourceSpans`) one
/// span at a time: the typed [`otlp::outline`] borrows each span's text from the input, and each
/// span is parsed, mapped to a [`spantree::Node`] and dropped before the next, so memory stays a
/// small multiple of the file instead of a `serde_json::Value` of it (about 12 times the file for
/// span-heavy traces). The result is what [`otel::load`] / [`openinference::load`] give from the
/// whole document. `None` (read the document whole) for anything else: another shape, log
/// records beside the spans, a format choice that excludes the OTLP loaders, a document
/// OpenInference may claim by an attribute, a span that does not parse on its own, no span.
fn load_otlp_streamed(path: &str, bytes: &[u8], choice: &FormatChoice) -> Option<Loaded> {
    use SourceFormat::{OpenInference, OtelGenAi};
    if wide_encoding(bytes).is_some() {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let outline = otlp::outline(text)?;
    if !outline.other_keys.is_empty() {
        return None;
    }
    // pydantic-ai and Strands spans are OTLP too, and detection tries them first: their marks
    // (the detectors' scope names and attribute keys, found here in the text) send the file the
    // whole-document way.
    let framework_scope = |n: &str| n == pydanticai::SCOPE || n.starts_with("strands");
    if outline.scopes.iter().any(|(_, _, name, _)| name.as_deref().is_some_and(framework_scope))
        || pydanticai::ATTRIBUTE_MARKS.iter().chain(&strands::ATTRIBUTE_MARKS).any(|m| text.contains(m))
    {
        return None;
    }
    let by_scope =
        outline.scopes.iter().any(|(_, _, name, _)| name.as_deref().is_some_and(|n| n.starts_with("openinference")));
    // A span attribute may name the OpenInference kind: the whole-document path decides then.
    if !by_scope && text.contains(openinference::KIND_KEY) {
        return None;
    }
    let detected = if by_scope { OpenInference } else { OtelGenAi };
    let format = match choice {
        FormatChoice::Force(f @ (OtelGenAi | OpenInference)) => *f,
        FormatChoice::Force(_) => return None,
        FormatChoice::Detect(candidates) if candidates.contains(&detected) => detected,
        FormatChoice::Detect(_) => return None,
    };
    let mut diags = Vec::new();
    let mut nodes: Vec<(Option<String>, spantree::Node)> = Vec::new();
    for (r, s, scope, spans) in &outline.scopes {
        for (k, raw) in spans.iter().enumerate() {
            let place = format!("resourceSpans[{r}].scopeSpans[{s}].spans[{k}]");
            let value = from_str(raw.get()).ok()?;
            match otlp::request_span(&value, &place) {
                Ok(mut span) => {
                    span.scope = scope.clone();
                    let node = match format {
                        OpenInference => openinference::node(&span, &mut diags),
                        _ => otel::node(&span, &mut diags),
                    };
                    nodes.push((span.trace_id, node));
                }
                Err(msg) => diags.push(Diagnostic { line: None, message: format!("{place} skipped: {msg}") }),
            }
            drop_deep(value);
        }
    }
    if nodes.is_empty() {
        return None;
    }
    let mut loaded = spantree::load_by_trace(&file_stem(path), format, nodes, diags);
    loaded.format = format;
    Some(loaded)
}

/// A JSON document whose records are one list: the document is the array, or the array is under
/// one key of the root object ([`LIST_KEYS`]). Each item is kept as its raw text, borrowed from
/// the document, and parsed when a loader reaches it; the root's other keys are parsed.
#[derive(Debug)]
pub struct ListDoc<'a> {
    /// The root object's other keys (empty when the document is the array).
    pub root: serde_json::Map<String, Value>,
    /// The key of the list (`None` when the document is the array).
    pub key: Option<String>,
    /// The items, in order, each the raw JSON text of one record.
    pub items: Vec<&'a serde_json::value::RawValue>,
}

/// The keys under which span lists, run lists and traces hold their records, in the order they
/// are looked for: `spans` (OpenInference span lists), `runs` (LangSmith), `data` (span lists of a
/// query API), `observations` (a Langfuse trace).
pub const LIST_KEYS: [&str; 4] = ["spans", "runs", "data", "observations"];

/// Keys whose presence in the first 64 KiB marks a span or run list worth reading item by item
/// (OpenInference's span kind and ids, TRAIL's nested spans, LangSmith's `run_type`, a Langfuse
/// trace's `observations`); any other
/// document is parsed whole at once.
const LIST_MARKS: [&str; 6] =
    ["\"span_kind\"", "openinference.span.kind", "\"child_spans\"", "\"context\"", "\"run_type\"", "\"observations\""];

#[derive(serde::Deserialize, PartialEq, Eq, Hash)]
struct Key<'a>(#[serde(borrow)] std::borrow::Cow<'a, str>);

impl<'a> ListDoc<'a> {
    /// The outline of `text` when it is a list or an object with a [`LIST_KEYS`] array; `None`
    /// otherwise (or when it is not one JSON value).
    pub fn outline(text: &'a str) -> Option<ListDoc<'a>> {
        ListDoc::outline_under(text, &LIST_KEYS)
    }

    /// The outline of `text` when it is a list or an object with an array under one of `keys`
    /// (the first found, in the order of `keys`); `None` otherwise.
    pub fn outline_under(text: &'a str, keys: &[&'static str]) -> Option<ListDoc<'a>> {
        use serde_json::value::RawValue;
        let trimmed = text.trim_start();
        if trimmed.starts_with('[') {
            let items: Vec<&'a RawValue> = typed_line(text)?;
            return Some(ListDoc { root: serde_json::Map::new(), key: None, items });
        }
        let mut map: std::collections::HashMap<Key<'a>, &'a RawValue> = typed_line(text)?;
        let key = keys.iter().copied().find(|k| {
            map.get(&Key(std::borrow::Cow::Borrowed(*k))).is_some_and(|v| v.get().trim_start().starts_with('['))
        })?;
        let list = map.remove(&Key(std::borrow::Cow::Borrowed(key)))?;
        let items: Vec<&'a RawValue> = typed_line(list.get())?;
        let mut root = serde_json::Map::new();
        for (k, v) in map {
            root.insert(k.0.into_owned(), from_str(v.get()).ok()?);
        }
        Some(ListDoc { root, key: Some(key.to_string()), items })
    }

    /// The document with only its first `n` items, for format detection.
    pub fn sample(&self, n: usize) -> Document {
        let items: Vec<Value> = self.items.iter().take(n).filter_map(|r| from_str(r.get()).ok()).collect();
        match &self.key {
            None => Document::Json(Value::Array(items)),
            Some(k) => {
                let mut root = self.root.clone();
                root.insert(k.clone(), Value::Array(items));
                Document::Json(Value::Object(root))
            }
        }
    }
}

/// Loads a span list (OpenInference, TRAIL), a LangSmith run list or a Langfuse trace one item at a time
/// ([`ListDoc`]): the format is detected on the first [`DETECT_SAMPLE`] items, then each item is
/// parsed, turned into span-tree nodes and dropped before the next. `None` (read the document
/// whole) for any other document or format, or when the list loader declines it (an item that
/// does not parse, no usable span).
fn load_list_streamed(path: &str, text: &str, choice: &FormatChoice) -> Option<Loaded> {
    use SourceFormat::{LangSmith, Langfuse, OpenInference};
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut end = text.len().min(1 << 16);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    if !LIST_MARKS.iter().any(|m| head.contains(m)) {
        return None;
    }
    let list = ListDoc::outline(text)?;
    let format = match choice {
        FormatChoice::Force(f) => *f,
        FormatChoice::Detect(candidates) => {
            let sample = list.sample(DETECT_SAMPLE);
            candidates.iter().copied().find(|f| matches(&sample, *f))?
        }
    };
    let name = file_stem(path);
    let mut loaded = match format {
        OpenInference => openinference::load_list(&name, &list)?,
        LangSmith => langsmith::load_list(&name, &list)?,
        Langfuse => langfuse::load_list(&name, &list)?,
        _ => return None,
    };
    loaded.format = format;
    Some(loaded)
}

/// Loads an OpenAI chat message array (the document is the array, or holds it under `messages`)
/// one message at a time ([`ListDoc`], [`openai::load_list`]) when it is detected as one on its
/// first [`DETECT_SAMPLE`] messages (or forced). `None` (read the document whole) for any other
/// document: no `"role"` key in its first 64 KiB, nesting deeper than the caller's stack holds,
/// another format detected, a message that does not parse on its own.
fn load_chat_streamed(path: &str, text: &str, choice: &FormatChoice) -> Option<Loaded> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut end = text.len().min(1 << 16);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if !text[..end].contains("\"role\"") || nests_deeper(text.as_bytes(), SHALLOW_NESTING) {
        return None;
    }
    let list = ListDoc::outline_under(text, &["messages"])?;
    let format = match choice {
        FormatChoice::Force(f) => *f,
        FormatChoice::Detect(candidates) => {
            let sample = list.sample(DETECT_SAMPLE);
            candidates.iter().copied().find(|f| matches(&sample, *f))?
        }
    };
    if format != SourceFormat::OpenAiChat {
        return None;
    }
    let mut loaded = openai::load_list(&file_stem(path), &list)?;
    loaded.format = format;
    Some(loaded)
}

/// Drops a value without recursion (see [`Document`]'s `Drop`).
fn drop_deep(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// Checks that every trajectory has a step, numbers the steps and orders the agents.
fn finish(path: &str, mut loaded: Loaded) -> Result<Loaded, LoadError> {
    let invalid = |message: String| LoadError::Invalid {
        path: path.to_string(),
        format: loaded.format,
        message: clip_message(message),
    };
    let why = first_reason(&loaded.diagnostics);
    if loaded.trajectories.is_empty() {
        return Err(invalid(format!("no usable trajectory{why}")));
    }
    if let Some(t) = loaded.trajectories.iter().find(|t| t.steps.is_empty()) {
        return Err(invalid(format!("trajectory {:?} has no usable step{why}", t.id)));
    }
    for t in &mut loaded.trajectories {
        for (i, s) in t.steps.iter_mut().enumerate() {
            s.index = i;
        }
        let n = t.steps.len();
        t.links.retain(|l| l.from < n && l.to < n);
        name_results(t);
        t.refresh_agents();
    }
    Ok(loaded)
}

/// Gives each tool result without a tool name the name of the call its [`LinkKind::ToolResult`]
/// link comes from, so every view, report and finding that reads a result by its tool (a shell's
/// output, an edit's confirmation) finds it on the result itself, whatever the format wrote
/// there (Claude Code's `tool_result` blocks, AutoGen results before `name` was added to them,
/// carry only the call's id).
///
/// [`LinkKind::ToolResult`]: crate::model::LinkKind::ToolResult
pub fn name_results(t: &mut Trajectory) {
    use crate::model::{LinkKind, StepKind};
    for l in &t.links {
        if l.kind != LinkKind::ToolResult || l.from >= t.steps.len() || l.to >= t.steps.len() {
            continue;
        }
        let named = t.steps[l.to].tool_name.as_deref().is_some_and(|n| !n.trim().is_empty());
        if t.steps[l.to].kind != StepKind::ToolResult || named {
            continue;
        }
        if let Some(name) = t.steps[l.from].tool_name.clone().filter(|n| !n.trim().is_empty()) {
            t.steps[l.to].tool_name = Some(name);
        }
    }
}

/// Whether a load diagnostic says a record of the file was left out (`skipped`, `not read`),
/// rather than read with a guess or loaded once.
pub fn is_skip(d: &Diagnostic) -> bool {
    let m = &d.message;
    (m.contains("skipped") && !m.contains("names a skipped")) || m.contains("; not read")
}

/// Where a record the loader left out sat among the steps: between the step read from the last
/// line before it and the step read from the first line after it (0-based step indices). Known
/// for formats whose steps keep their source line ([`crate::model::StepIds::line`]: falat JSONL,
/// Claude Code, Codex rollouts, `codex exec --json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The 1-based line of the record left out.
    pub line: usize,
    /// The last step read before it; `None` when it came before every step.
    pub after: Option<usize>,
    /// The first step read after it; `None` when it came after every step.
    pub before: Option<usize>,
}

impl fmt::Display for Place {
    /// `between steps 5 and 6`, `before step 0`, `after step 12, the last`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.after, self.before) {
            (Some(a), Some(b)) => write!(f, "between steps {a} and {b}"),
            (None, Some(b)) => write!(f, "before step {b}"),
            (Some(a), None) => write!(f, "after step {a}, the last"),
            (None, None) => write!(f, "at line {}", self.line),
        }
    }
}

/// Where the record `line` (1-based) of the file sat among `t`'s steps, from the lines its steps
/// were read from; `None` when no step keeps a line. Steps spliced in from other files (a
/// sub-agent's thread) keep lines of their own file: a step whose line goes back below a line
/// already seen is taken as one of them and not used to place the record.
pub fn place(t: &Trajectory, line: usize) -> Option<Place> {
    let mut seen = 0;
    let (mut after, mut before) = (None, None);
    for s in &t.steps {
        let Some(l) = s.ids.line else { continue };
        if l < seen {
            continue;
        }
        seen = l;
        if l < line {
            after = Some(s.index);
        } else if l > line && before.is_none() {
            before = Some(s.index);
        }
    }
    (after.is_some() || before.is_some()).then_some(Place { line, after, before })
}

impl Loaded {
    /// Where each diagnostic that left a record out ([`is_skip`]) sat among the steps, for a
    /// load of one trajectory: `(index into diagnostics, place)` in diagnostic order.
    pub fn skip_places(&self) -> Vec<(usize, Place)> {
        let [t] = self.trajectories.as_slice() else { return Vec::new() };
        self.diagnostics
            .iter()
            .enumerate()
            .filter(|(_, d)| is_skip(d))
            .filter_map(|(i, d)| Some((i, place(t, d.line?)?)))
            .collect()
    }

    /// Every diagnostic as the user reads it, in order: `line 9 (between steps 5 and 6): skipped:
    /// …` when it left a record out and its place among the steps is known
    /// ([`Loaded::skip_places`]), else as [`Diagnostic`] displays it.
    pub fn described(&self) -> Vec<String> {
        let places = self.skip_places();
        self.diagnostics
            .iter()
            .enumerate()
            .map(|(i, d)| match (d.line, places.iter().find(|(k, _)| *k == i)) {
                (Some(l), Some((_, p))) => format!("line {l} ({p}): {}", d.message),
                _ => d.to_string(),
            })
            .collect()
    }
}

/// What a load left out, for `inspect`: records dropped with a diagnostic (unreadable, or sent
/// twice and loaded once) and lines or messages of the format that are not steps by design
/// (Claude Code `progress` lines, Codex `turn_context`, AgentChat speaker selections), counted in
/// the `*_not_steps` metadata of each trajectory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Skipped {
    /// Records dropped with a diagnostic naming them.
    pub records: usize,
    /// Lines or messages that are not steps by design.
    pub not_steps: usize,
}

impl Loaded {
    /// How much of the document did not become steps (see [`Skipped`]).
    pub fn skipped(&self) -> Skipped {
        let records = self.diagnostics.iter().filter(|d| is_skip(d) || d.message.contains("loaded once")).count();
        let not_steps = self
            .trajectories
            .iter()
            .flat_map(|t| &t.metadata)
            .filter(|(k, _)| k.ends_with("_not_steps"))
            .flat_map(|(_, v)| v.split(", "))
            .filter_map(|part| part.rsplit(' ').next()?.parse::<usize>().ok())
            .sum();
        Skipped { records, not_steps }
    }
}

/// `" (first diagnostic; N more)"`, or empty when there is none: the reason a load came up empty.
fn first_reason(diagnostics: &[Diagnostic]) -> String {
    match diagnostics {
        [] => String::new(),
        [one] => format!(" ({one})"),
        [first, rest @ ..] => format!(" ({first}; {} more)", rest.len()),
    }
}

/// Splits the bytes into a [`Document`].
///
/// A document is JSON Lines when it is not one JSON value, its first non-empty line is a JSON
/// value on its own, and at least as many lines parse as fail. Every line is held as a `Value`:
/// loading itself reads JSON Lines one line at a time instead ([`JsonLines`]).
///
/// # Errors
/// Empty, non-UTF-8 and non-JSON inputs; [`LoadError::NotJson`] names the 1-based line and column
/// of the first error.
pub fn parse_document(path: &str, bytes: &[u8]) -> Result<Document, LoadError> {
    let text = decode(path, bytes)?;
    match parse_text(path, &text)? {
        Parsed::Json(v) => Ok(Document::Json(v)),
        Parsed::Lines(lines) => Ok(lines.document()),
    }
}

/// A decoded text as one JSON value, or as JSON Lines not yet parsed.
enum Parsed<'a> {
    Json(Value),
    Lines(JsonLines<'a>),
}

/// `text` (decoded, see [`decode`]) without its byte-order mark, as one JSON value or as
/// [`JsonLines`] (see [`parse_document`]).
fn parse_text<'a>(path: &str, text: &'a str) -> Result<Parsed<'a>, LoadError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(LoadError::Empty { path: path.to_string(), white_space: !text.is_empty() });
    }
    if let Some(line) = too_deep_at(text) {
        return Err(LoadError::TooDeep { path: path.to_string(), line });
    }
    // Where the first non-blank line starts: line, column, and the line from there.
    let first = || {
        let (line, text) = non_blank(text).next()?;
        let trimmed = text.trim_start();
        Some((line, text[..text.len() - trimmed.len()].chars().count() + 1, trimmed))
    };
    match from_str(text) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => Ok(Parsed::Json(v)),
        Ok(v) => {
            let (line, column, _) = first().unwrap_or((1, 1, ""));
            Err(LoadError::Scalar { path: path.to_string(), line, column, found: type_name(&v) })
        }
        Err(whole_err) => JsonLines::scan(path, text, &whole_err).map(Parsed::Lines).map_err(|e| {
            // Not broken JSON but no JSON at all: a first line that is no JSON value and does not
            // open an object or an array.
            match first() {
                Some((line, column, start)) if !start.starts_with(['{', '[']) && check_syntax(start).is_err() => {
                    let start = crate::text::clip(&crate::text::sanitize(start), 40);
                    LoadError::PlainText { path: path.to_string(), line, column, start }
                }
                _ => e,
            }
        }),
    }
}

/// A JSON Lines text read one line at a time: a first pass checks each non-blank line's syntax
/// without building anything (`serde::de::IgnoredAny`), then a loader parses each line when it
/// reads it, into its own typed record or a `Value`, and drops it before the next. Memory is the
/// text plus what the loader keeps, never a `Value` of every line.
#[derive(Debug, Clone)]
pub struct JsonLines<'a> {
    text: &'a str,
    /// `(line number, error message naming the column)` of each non-blank line that is not
    /// JSON, 1-based, in order.
    pub bad: Vec<(usize, String)>,
    /// How many non-blank lines are JSON.
    pub good: usize,
}

impl<'a> JsonLines<'a> {
    /// Checks every line of `text` (see [`parse_document`] for when a text is JSON Lines).
    ///
    /// # Errors
    /// [`LoadError::NotJson`] at the first bad line when most lines fail, else at `whole_err`
    /// (the error of parsing `text` as one value) when the first non-blank line is not JSON.
    pub fn scan(path: &str, text: &'a str, whole_err: &serde_json::Error) -> Result<JsonLines<'a>, LoadError> {
        let not_json = |line: usize, err: &serde_json::Error| LoadError::NotJson {
            path: path.to_string(),
            line,
            column: err.column().max(1),
            message: error_message(err),
        };
        let mut bad = Vec::new();
        let mut good = 0usize;
        let mut first_good: Option<usize> = None;
        let mut first_bad: Option<(usize, serde_json::Error)> = None;
        for (no, line) in non_blank(text) {
            match check_syntax(line) {
                Ok(()) => {
                    good += 1;
                    first_good.get_or_insert(no);
                }
                Err(e) => {
                    let msg = format!("not JSON at column {}: {}", e.column(), error_message(&e));
                    bad.push((no, msg));
                    first_bad.get_or_insert((no, e));
                }
            }
        }
        let starts_ok = first_good.is_some_and(|ok| bad.first().is_none_or(|(b, _)| ok < *b));
        match first_bad {
            _ if !starts_ok => Err(not_json(whole_err.line(), whole_err)),
            Some((line, err)) if bad.len() > good => Err(not_json(line, &err)),
            _ => Ok(JsonLines { text, bad, good }),
        }
    }

    /// Every non-blank line in order: its 1-based number and its text, `None` for a line that is
    /// not JSON (listed in [`JsonLines::bad`]).
    pub fn records(&self) -> impl Iterator<Item = (usize, Option<&'a str>)> + '_ {
        let mut bad = self.bad.iter().map(|(l, _)| *l).peekable();
        non_blank(self.text).map(move |(no, line)| match bad.peek() {
            Some(&b) if b == no => {
                bad.next();
                (no, None)
            }
            _ => (no, Some(line)),
        })
    }

    /// The JSON lines, each parsed into a `Value` when the iterator reaches it.
    pub fn values(&self) -> impl Iterator<Item = (usize, Value)> + '_ {
        self.records().filter_map(|(no, line)| Some((no, from_str(line?).ok()?)))
    }

    /// The first `n` JSON lines as a [`Document`] (with the bad lines among them), for format
    /// detection.
    pub fn sample(&self, n: usize) -> Document {
        let values: Vec<(usize, Value)> = self.values().take(n).collect();
        let last = values.last().map_or(0, |(l, _)| *l);
        let bad = self.bad.iter().filter(|(l, _)| *l <= last).cloned().collect();
        Document::Lines { values, bad }
    }

    /// Every JSON line as a [`Document`] (each line a `Value`, all held at once).
    pub fn document(&self) -> Document {
        Document::Lines { values: self.values().collect(), bad: self.bad.clone() }
    }
}

/// The non-blank lines of `text` with their 1-based numbers (`\n` or `\r\n` ends a line).
fn non_blank(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(i, l)| (i + 1, l))
}

/// Whether `line` is one JSON value, checked without building it.
fn check_syntax(line: &str) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(line);
    de.disable_recursion_limit();
    serde::de::IgnoredAny::deserialize(&mut de)?;
    de.end()
}

/// One line as a loader's typed record `T` (borrowing from the line where `T` does), without
/// serde_json's recursion limit. `None` when the line does not have `T`'s shape: the loader then
/// reads the line as a `Value` ([`JsonLines::values`]) to say what is wrong with it.
pub fn typed_line<'a, T: serde::Deserialize<'a>>(line: &'a str) -> Option<T> {
    let mut de = serde_json::Deserializer::from_str(line);
    de.disable_recursion_limit();
    let v = T::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(v)
}

/// One JSON line as a `Value` (the fallback of [`typed_line`]).
pub fn value_line(line: &str) -> Option<Value> {
    from_str(line).ok()
}

/// One JSON value without serde_json's recursion limit; the stack grows on the heap as needed.
fn from_str(text: &str) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value = serde::Deserialize::deserialize(serde_stacker::Deserializer::new(&mut de))?;
    de.end()?;
    Ok(value)
}

/// Whether UTF-8 `bytes` nest arrays and objects deeper than `limit` (see [`deeper_at`]).
fn nests_deeper(bytes: &[u8], limit: usize) -> bool {
    deeper_at(bytes, limit).is_some()
}

/// The 1-based line where arrays and objects first nest deeper than [`MAX_NESTING`], if they do
/// (brackets inside strings are skipped).
fn too_deep_at(text: &str) -> Option<usize> {
    deeper_at(text.as_bytes(), MAX_NESTING)
}

/// The 1-based line where UTF-8 JSON first nests deeper than `limit`, if it does.
fn deeper_at(bytes: &[u8], limit: usize) -> Option<usize> {
    let (mut depth, mut line, mut in_string, mut escaped) = (0usize, 1usize, false, false);
    for &b in bytes {
        match (in_string, b) {
            // A JSON string holds no raw line break: a new line is outside any string.
            (_, b'\n') => {
                line += 1;
                (in_string, escaped) = (false, false);
            }
            (true, _) if escaped => escaped = false,
            (true, b'\\') => escaped = true,
            (true, b'"') | (false, b'"') => in_string = !in_string,
            (false, b'[' | b'{') => {
                depth += 1;
                if depth > limit {
                    return Some(line);
                }
            }
            (false, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// The bytes as text: UTF-8 (with or without a byte-order mark), or UTF-16 / UTF-32 recognised
/// by their byte-order mark or, without one, by the NUL bytes around the first ASCII character
/// (RFC 4627 §3), as Windows PowerShell's `Out-File` and `>` write them.
///
/// # Errors
/// [`LoadError::NotUtf8`] naming the first invalid byte; [`LoadError::BadEncoding`] naming the
/// encoding recognised and the first invalid code unit.
fn decode<'a>(path: &str, bytes: &'a [u8]) -> Result<std::borrow::Cow<'a, str>, LoadError> {
    if let Some((offset, kind @ Some(_))) = binary(bytes) {
        let (line, column) = line_column(bytes, offset);
        return Err(LoadError::Binary { path: path.to_string(), line, column, kind });
    }
    let Some((encoding, bom, unit, big_endian)) = wide_encoding(bytes) else {
        if let Some((offset, kind)) = binary(bytes) {
            let (line, column) = line_column(bytes, offset);
            return Err(LoadError::Binary { path: path.to_string(), line, column, kind });
        }
        return std::str::from_utf8(bytes).map(std::borrow::Cow::Borrowed).map_err(|e| {
            let offset = e.valid_up_to();
            let (line, column) = line_column(bytes, offset);
            LoadError::NotUtf8 { path: path.to_string(), line, column, offset, byte: bytes[offset] }
        });
    };
    let bad = |offset: usize| LoadError::BadEncoding { path: path.to_string(), encoding: encoding.clone(), offset };
    let body = &bytes[bom..];
    if !body.len().is_multiple_of(unit) {
        return Err(bad(bytes.len() - body.len() % unit));
    }
    let word = |c: &[u8]| -> u32 {
        let v = c.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b));
        if big_endian { v } else { c.iter().rev().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)) }
    };
    let mut out = String::with_capacity(body.len() / unit);
    if unit == 2 {
        let units = body.chunks_exact(2).map(|c| word(c) as u16);
        for (i, ch) in char::decode_utf16(units).enumerate() {
            out.push(ch.map_err(|_| bad(bom + 2 * i))?);
        }
    } else {
        for (i, c) in body.chunks_exact(4).enumerate() {
            out.push(char::from_u32(word(c)).ok_or_else(|| bad(bom + 4 * i))?);
        }
    }
    Ok(std::borrow::Cow::Owned(out))
}

/// `(name, BOM length, code unit size, big-endian)` of a UTF-16 / UTF-32 document, or `None` for
/// UTF-8.
fn wide_encoding(b: &[u8]) -> Option<(String, usize, usize, bool)> {
    let named = |n: &str, bom: usize, unit: usize, be: bool| {
        let with = if bom > 0 { " with BOM" } else { " (no BOM)" };
        Some((format!("{n}{with}"), bom, unit, be))
    };
    match b {
        [0xFF, 0xFE, 0, 0, ..] => named("UTF-32LE", 4, 4, false),
        [0, 0, 0xFE, 0xFF, ..] => named("UTF-32BE", 4, 4, true),
        [0xFF, 0xFE, ..] => named("UTF-16LE", 2, 2, false),
        [0xFE, 0xFF, ..] => named("UTF-16BE", 2, 2, true),
        [a, 0, 0, 0, ..] if *a != 0 => named("UTF-32LE", 0, 4, false),
        [0, 0, 0, a, ..] if *a != 0 => named("UTF-32BE", 0, 4, true),
        [a, 0, c, 0, ..] if *a != 0 && *c != 0 => named("UTF-16LE", 0, 2, false),
        [0, a, 0, c, ..] if *a != 0 && *c != 0 => named("UTF-16BE", 0, 2, true),
        _ => None,
    }
}

/// serde_json's message without its " at line L column C" suffix, its terse phrases in plain
/// words (`EOF while parsing a list` → `the text ends inside a list ([ not closed; ...)`).
fn error_message(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let text = match text.rfind(" at line ") {
        Some(pos) => text[..pos].to_string(),
        None => text,
    };
    let plain = match text.as_str() {
        "EOF while parsing a list" => "the text ends inside a list ([ not closed; the file may be cut short)",
        "EOF while parsing an object" => "the text ends inside an object ({ not closed; the file may be cut short)",
        "EOF while parsing a string" => "the text ends inside a string (\" not closed; the file may be cut short)",
        "EOF while parsing a value" => "the text ends where a value should follow (the file may be cut short)",
        "expected ident" | "expected value" => {
            "no JSON value here (an object, an array, a string, a number, true, false or null)"
        }
        "key must be a string" => "an object key must be in double quotes",
        "trailing characters" => "more text after the JSON value",
        "trailing comma" => "a comma before the closing bracket",
        _ => return text,
    };
    plain.to_string()
}

/// The first [`SUPPORTED`] format a document looks like, or `None`.
pub fn detect(doc: &Document) -> Option<SourceFormat> {
    SUPPORTED.into_iter().find(|f| matches(doc, *f))
}

/// Whether `doc` looks like `format`.
pub fn matches(doc: &Document, format: SourceFormat) -> bool {
    use SourceFormat::*;
    match format {
        MagenticLog => whowhen::detect(doc) == Some(format) || agentchat::messages_of(doc).is_some(),
        WhoWhenAlgorithm | WhoWhenHand => whowhen::detect(doc) == Some(format),
        TauBench => tau::detect(doc),
        OpenAiChat => openai::detect(doc),
        FalatJsonl => jsonl::detect(doc),
        // pydantic-ai and Strands spans are OTel GenAI too; their own loaders read them.
        OtelGenAi => otel::detect(doc) && !pydanticai::detect(doc) && !strands::detect(doc),
        OpenInference => openinference::detect(doc),
        AnyAgent => anyagent::detect(doc),
        ClaudeCode => claude::detect(doc),
        Codex => codex::detect(doc),
        LangSmith => langsmith::detect(doc),
        Langfuse => langfuse::detect(doc),
        SweAgent => sweagent::detect(doc),
        MiniSweAgent => minisweagent::detect(doc),
        OpenHands => openhands::detect(doc),
        Smolagents => smolagents::detect(doc),
        PydanticAi => pydanticai::detect(doc),
        Strands => strands::detect(doc),
        OpenAiAgents => agents_sdk::detect(doc),
        CodexExec => codex_exec::detect(doc),
        GeminiCli => gemini::detect(doc),
        GoogleAdk => adk::detect(doc),
        Mlflow => mlflow::detect(doc),
        InspectAi => inspect_ai::detect(doc),
    }
}

fn load_as(path: &str, doc: &Document, format: SourceFormat, related: Related<'_>) -> Result<Loaded, LoadError> {
    use SourceFormat::*;
    let name = file_stem(path);
    let res = match format {
        MagenticLog if agentchat::messages_of(doc).is_some() => agentchat::load(&name, doc),
        WhoWhenAlgorithm | WhoWhenHand | MagenticLog => whowhen::load(&name, doc, format),
        TauBench => tau::load(&name, doc),
        OpenAiChat => openai::load(&name, doc),
        FalatJsonl => jsonl::load(&name, doc),
        OtelGenAi => otel::load(&name, doc),
        OpenInference => openinference::load(&name, doc),
        AnyAgent => anyagent::load(&name, doc),
        ClaudeCode => claude::load(&name, doc, related),
        Codex => codex::load(&name, doc, related),
        LangSmith => langsmith::load(&name, doc),
        Langfuse => langfuse::load(&name, doc),
        SweAgent => sweagent::load(&name, doc),
        MiniSweAgent => minisweagent::load(&name, doc),
        OpenHands => openhands::load(&name, doc),
        Smolagents => smolagents::load(&name, doc),
        PydanticAi => pydanticai::load(&name, doc),
        Strands => strands::load(&name, doc),
        OpenAiAgents => agents_sdk::load(&name, doc),
        CodexExec => codex_exec::load(&name, doc),
        GeminiCli => gemini::load(&name, doc),
        GoogleAdk => adk::load(&name, doc),
        Mlflow => mlflow::load(&name, doc),
        InspectAi => inspect_ai::load(&name, doc),
    };
    res.map_err(|e| LoadError::Invalid { path: path.to_string(), format, message: clip_message(e.to_string()) })
}

/// The file name without folders and the last extension (`data/12.json` → `12`).
pub fn file_stem(path: &str) -> String {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
    match base.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_string(),
        _ => base.to_string(),
    }
}

/// [`describe`], followed by the variant the document resembles and what it lacks, when its keys
/// are those of a known variant (so that an unreadable variant is named, not just refused), else
/// by the closest formats by their distinctive keys ([`closest_formats`]).
pub fn describe_with_hint(doc: &Document) -> String {
    match near_miss(doc).or_else(|| closest_formats(doc)) {
        Some(hint) => format!("{}; {hint}", describe(doc)),
        None => describe(doc),
    }
}

/// The distinctive keys of formats recognised by keys: `(format, keys all required, keys of
/// which one is required)`, checked on the document (an object) or on its first item (a list).
const SIGNATURES: [(SourceFormat, &[&str], &[&str]); 6] = [
    (SourceFormat::WhoWhenHand, &["history"], &whowhen::OWN_KEYS),
    (SourceFormat::SweAgent, &["trajectory", "history", "info"], &[]),
    (SourceFormat::MiniSweAgent, &["trajectory_format", "messages"], &[]),
    (SourceFormat::OpenHands, &["id", "source"], &["action", "observation"]),
    (SourceFormat::Smolagents, &["step_number"], &["observations", "model_output", "tool_calls"]),
    (SourceFormat::TauBench, &["task_id", "traj"], &[]),
];

/// Keys of [`SIGNATURES`] that many JSON documents have: they count towards a format only beside
/// one of its other keys, never name it alone (a Chat Completions response has an `"id"` and is
/// no OpenHands event).
const GENERIC_KEYS: [&str; 4] = ["id", "info", "messages", "level"];

/// The formats whose distinctive keys ([`SIGNATURES`]) the document has most of, with what it
/// lacks: `the closest format is swe-agent (has "history", "info"; missing "trajectory")`.
/// `None` when it has none of them but [`GENERIC_KEYS`].
pub fn closest_formats(doc: &Document) -> Option<String> {
    let Document::Json(v) = doc else { return None };
    let obj = match v {
        Value::Array(items) => items.first()?.as_object()?,
        other => other.as_object()?,
    };
    let quoted = |ks: &[&str]| ks.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", ");
    let mut scored: Vec<(usize, String)> = Vec::new();
    for (format, all, one_of) in SIGNATURES {
        let has: Vec<&str> = all.iter().chain(one_of.iter()).copied().filter(|k| obj.contains_key(*k)).collect();
        // Only a key that marks the format names it: "id" or "messages" alone says nothing.
        if !has.iter().any(|k| !GENERIC_KEYS.contains(k)) {
            continue;
        }
        let mut missing: Vec<String> =
            all.iter().filter(|k| !obj.contains_key(**k)).map(|k| format!("{k:?}")).collect();
        if !one_of.is_empty() && !one_of.iter().any(|k| obj.contains_key(*k)) {
            missing.push(format!("one of {}", quoted(one_of)));
        }
        let name = match format {
            SourceFormat::WhoWhenHand => "who-and-when",
            f => f.as_str(),
        };
        let lacks = match missing.is_empty() {
            true => "a value of the wrong type".to_string(),
            false => format!("missing {}", missing.join(", ")),
        };
        scored.push((has.len(), format!("{name} (has {}; {lacks})", quoted(&has))));
    }
    let best = scored.iter().map(|(n, _)| *n).max()?;
    let top: Vec<String> = scored.into_iter().filter(|(n, _)| *n == best).map(|(_, s)| s).collect();
    Some(match top.len() {
        1 => format!("the closest format is {}", top[0]),
        _ => format!("the closest formats are {}", top.join(" and ")),
    })
}

/// The variant whose distinctive keys a document has although no loader claims it, and what is
/// missing for it to load.
fn near_miss(doc: &Document) -> Option<String> {
    let first_items = |v: &Value, key: &str| v.get(key).and_then(Value::as_array).and_then(|a| a.first().cloned());
    match doc {
        Document::Json(v) => {
            if let Some(what) = chat_completion_response(v) {
                return Some(what.into());
            }
            if v.get("simulations").is_some() {
                return Some("it looks like τ²-bench results, which need \"simulations\": [{task_id, messages}] and \"tasks\" or \"info\"".into());
            }
            if first_items(v, "data").is_some_and(|t| {
                t.get("observations").is_some_and(|o| o.as_array().is_some_and(|o| o.iter().all(Value::is_string)))
            }) {
                return Some("it looks like a Langfuse traces list, which holds only observation ids: export each trace with GET /api/public/traces/{id}, or its observations with GET /api/public/observations?traceId=...".into());
            }
            if first_items(v, "data").is_some_and(|o| o.get("traceId").is_some()) {
                return Some(
                    "it looks like a Langfuse observations page, whose items need \"id\", \"traceId\" and \"type\""
                        .into(),
                );
            }
            if first_items(v, "messages").is_some_and(|m| m.get("source").is_some()) {
                return Some("it looks like an AutoGen AgentChat TaskResult, whose messages need \"source\" and a known \"type\" (TextMessage, ToolCallRequestEvent, ...)".into());
            }
            if v.get("resourceLogs").is_some() {
                return Some(
                    "it looks like OTLP logs, which falat reads only when their records are GenAI events (gen_ai.*)"
                        .into(),
                );
            }
            if first_items(v, "spans").is_some_and(|s| s.get("child_spans").is_some() || s.get("span_id").is_some()) {
                return Some("it looks like a span list, whose spans need a span id and an OpenInference kind or gen_ai.* attributes".into());
            }
            None
        }
        Document::Lines { values, .. } => {
            let any = |f: &dyn Fn(&Value) -> bool| values.iter().any(|(_, v)| f(v));
            if any(&|v| v.get("record_type").is_some()) {
                return Some("it looks like a Codex rollout from before the envelope, which needs a first line {id, timestamp, instructions, git}".into());
            }
            if any(&|v| v.get("payload").is_some()) {
                return Some("it looks like a Codex rollout, whose lines need \"type\" session_meta, turn_context, response_item, event_msg or compacted".into());
            }
            if any(&|v| v.get("uuid").is_some() && v.get("parentUuid").is_some()) {
                return Some("it looks like a Claude Code session, which needs a user or assistant line with a \"message\" object".into());
            }
            None
        }
    }
}

/// What an OpenAI Chat Completions *response* (or a list of them) is, and what to give instead:
/// the API's response object (`{"object": "chat.completion", "choices": [{"message"}]}`, or a
/// streamed `chat.completion.chunk` with `choices[].delta`) carries only the model's reply, none
/// of the request's messages, so it is no run (`openai-chat` reads the `messages` array).
fn chat_completion_response(v: &Value) -> Option<&'static str> {
    let item = match v {
        Value::Array(items) => items.first()?,
        other => other,
    };
    let object = item.get("object").and_then(Value::as_str);
    let choice = item.get("choices").and_then(Value::as_array).and_then(|c| c.first());
    let has = |key: &str| choice.is_some_and(|c| c.get(key).is_some());
    if object == Some("chat.completion.chunk") || (object.is_none() && has("delta")) {
        return Some(
            "it is a streamed OpenAI Chat Completions chunk (\"choices\"[].delta): it holds part of the model's reply only; give the request's \"messages\" array with the whole reply appended",
        );
    }
    (object == Some("chat.completion") || (object.is_none() && has("message"))).then_some(
        "it is an OpenAI Chat Completions response object: it holds only the model's reply (\"choices\"[].message); give the request's \"messages\" array with the reply appended",
    )
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

/// A short description of a JSON value: its type, and the first keys of an object (each cut to
/// 40 characters); arrays name their first item, down to three levels.
pub fn describe_value(v: &Value) -> String {
    describe_at(v, 0)
}

fn describe_at(v: &Value, depth: usize) -> String {
    match v {
        Value::Object(m) => {
            // Keys are trace content: sanitised and clipped before they reach a message.
            let keys: Vec<String> =
                m.keys().take(8).map(|k| crate::text::clip(&crate::text::sanitize(k).replace('\n', "␊"), 40)).collect();
            let more = if m.len() > 8 { ", ..." } else { "" };
            if keys.is_empty() {
                "an empty object".into()
            } else {
                format!("an object with keys [{}{more}]", keys.join(", "))
            }
        }
        Value::Array(a) if depth >= 3 && !a.is_empty() => format!("an array of {} items", a.len()),
        Value::Array(a) => match a.first() {
            Some(first) => format!("an array of {} items, the first {}", a.len(), describe_at(first, depth + 1)),
            None => "an empty array".into(),
        },
        Value::String(_) => "a string".into(),
        Value::Number(_) => "a number".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Null => "null".into(),
    }
}

/// `s` cut to at most `max` characters, with `…` when cut (linear in `max`, not in `s`).
pub fn clip_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// The longest error or diagnostic message falat builds, in characters: a longer one keeps its
/// first part and says how much was cut.
pub const MAX_MESSAGE_CHARS: usize = 2_000;

/// A message cut to [`MAX_MESSAGE_CHARS`] (`… (N more characters)`), so no input can make an
/// error unreadably long.
pub fn clip_message(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((at, _)) => {
            let rest = message[at..].chars().count();
            format!("{}… ({rest} more characters)", &message[..at])
        }
        None => message,
    }
}

/// The JSON type of a value with its article, for "expected X, found Y" messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
    }
}

/// Text of a JSON value for display: strings as they are, `null` as empty, others as JSON.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The non-zero exit code a tool output reports, in any common wording: `Exit code: N`,
/// `Process exited with code N`, `exit status N` (also cargo's `(exit status: N)`), `exitcode: N`.
/// `None` when the output reports none or reports 0.
///
/// The wording must start a line (after spaces or list marks), or be cargo's parenthesised
/// `(exit status: N)`, so that prose mentioning an exit code in passing is not an error.
pub fn failed_exit(text: &str) -> Option<i64> {
    static EXIT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?im)^[\s>*#-]*(?:process |command )?(?:exit ?code|exited with code|exit status)\s*:?\s*(-?\d+)|\(exit (?:code|status):?\s*(-?\d+)\)",
        )
        .expect("valid regex")
    });
    let caps = EXIT.captures(text)?;
    let code = caps.get(1).or_else(|| caps.get(2))?.as_str().parse::<i64>().ok()?;
    (code != 0).then_some(code)
}

/// Step content from a `content` field: a string, `null` (empty), or a list of parts whose
/// `text` (or `refusal`) fields are joined by newlines (other parts show as placeholders,
/// `[image_url]`, `[audio wav]`, see [`messages::placeholder`]).
///
/// # Errors
/// `"content" is <type>, expected a string` for numbers, booleans and objects.
pub fn content_text(v: Option<&Value>) -> Result<String, FormatError> {
    match v {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => Ok(parts.iter().map(part_text).collect::<Vec<_>>().join("\n")),
        Some(other) => Err(FormatError::wrong_type("content", other, "a string")),
    }
}

fn part_text(part: &Value) -> String {
    if let Some(s) = part.as_str() {
        return s.to_string();
    }
    if let Some(t) = part.get("text").or_else(|| part.get("refusal")).and_then(Value::as_str) {
        return t.to_string();
    }
    messages::placeholder(part)
}

/// A string field of an object, also accepting numbers and booleans (`"12"` and `12` alike).
pub fn str_field<'a>(v: &'a Value, key: &str) -> Option<std::borrow::Cow<'a, str>> {
    match v.get(key)? {
        Value::String(s) => Some(std::borrow::Cow::Borrowed(s.as_str())),
        Value::Number(n) => Some(std::borrow::Cow::Owned(n.to_string())),
        Value::Bool(b) => Some(std::borrow::Cow::Owned(b.to_string())),
        _ => None,
    }
}

/// The loaded index of the record that was number `original` in the file, given `origin[k]` =
/// the original number of loaded step `k` (increasing). `None` when that record was skipped.
pub fn remap_index(origin: &[usize], original: usize) -> Option<usize> {
    origin.binary_search(&original).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(bytes: &[u8]) -> String {
        parse("t.json", bytes, None).unwrap_err().to_string()
    }

    #[test]
    fn broken_json_names_line_and_column() {
        assert_eq!(
            err(b"{\n  \"a\": 1,\n  \"b\": ]\n}"),
            "t.json:3:8: not JSON: no JSON value here (an object, an array, a string, a number, true, false or null); expected a JSON or JSONL trace"
        );
    }

    #[test]
    fn jsonl_with_more_bad_lines_than_good_is_not_json() {
        assert_eq!(
            err(b"{\"agent\":\"a\",\"content\":\"x\"}\nnope\nnope again\n"),
            "t.json:2:2: not JSON: no JSON value here (an object, an array, a string, a number, true, false or null); expected a JSON or JSONL trace"
        );
    }

    #[test]
    fn format_choice_accepts_aliases_and_rejects_unknown_names() {
        assert_eq!(
            FormatChoice::parse("Who-And-When"),
            Ok(FormatChoice::Detect(vec![SourceFormat::WhoWhenAlgorithm, SourceFormat::WhoWhenHand]))
        );
        assert_eq!(FormatChoice::parse("tau-bench"), Ok(FormatChoice::Force(SourceFormat::TauBench)));
        assert_eq!(FormatChoice::parse("otel-genai"), Ok(FormatChoice::Force(SourceFormat::OtelGenAi)));
        let msg = FormatChoice::parse("otlp").unwrap_err().to_string();
        assert!(msg.starts_with("unknown format \"otlp\", expected one of: auto,"), "{msg}");
    }

    #[test]
    fn failed_exits_in_every_wording() {
        assert_eq!(failed_exit("Exit code: 2\nWall time: 1s"), Some(2));
        assert_eq!(failed_exit("Chunk ID: 5f2a\nProcess exited with code 101\nOutput:"), Some(101));
        assert_eq!(failed_exit("exit status 1"), Some(1));
        assert_eq!(failed_exit("error: process didn't exit successfully: `x` (exit status: 101)"), Some(101));
        assert_eq!(failed_exit("exitcode: 1 (execution failed)"), Some(1));
        assert_eq!(failed_exit("Process exited with code 0"), None);
        assert_eq!(failed_exit("the docs say exit code 3 means busy"), None);
    }

    #[test]
    fn utf16_and_utf32_with_or_without_bom_decode() {
        let json = "{\"messages\":[{\"role\":\"user\",\"content\":\"é 17\"}]}";
        let le: Vec<u8> = [0xFF, 0xFE].into_iter().chain(json.encode_utf16().flat_map(u16::to_le_bytes)).collect();
        let be: Vec<u8> = [0xFE, 0xFF].into_iter().chain(json.encode_utf16().flat_map(u16::to_be_bytes)).collect();
        let bare_le: Vec<u8> = json.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let utf32: Vec<u8> =
            [0xFF, 0xFE, 0, 0].into_iter().chain(json.chars().flat_map(|c| (c as u32).to_le_bytes())).collect();
        let bom8: Vec<u8> = [0xEF, 0xBB, 0xBF].into_iter().chain(json.bytes()).collect();
        for bytes in [le, be, bare_le, utf32, bom8] {
            let t = &parse("w.json", &bytes, None).unwrap().trajectories[0];
            assert_eq!(t.task, "é 17");
        }
        let mut odd = vec![0xFF, 0xFE];
        odd.extend(json.encode_utf16().flat_map(u16::to_le_bytes));
        odd.push(b'x');
        assert_eq!(
            parse("w.json", &odd, None).unwrap_err().to_string(),
            format!(
                "w.json: invalid UTF-16LE with BOM (bad code unit at byte offset {}), expected a JSON or JSONL trace",
                odd.len() - 1
            )
        );
        let lone: Vec<u8> = vec![0xFF, 0xFE, b'[', 0, 0x00, 0xD8, b']', 0];
        assert!(
            parse("w.json", &lone, None)
                .unwrap_err()
                .to_string()
                .contains("invalid UTF-16LE with BOM (bad code unit at byte offset 4)")
        );
    }

    #[test]
    fn an_unreadable_variant_is_named_with_what_it_lacks() {
        let e = err(br#"{"info": {}, "simulations": []}"#);
        assert!(e.ends_with("found an object with keys [info, simulations]; it looks like τ²-bench results, which need \"simulations\": [{task_id, messages}] and \"tasks\" or \"info\""), "{e}");
        let e = err(b"{\"record_type\":\"state\"}\n{\"type\":\"message\",\"role\":\"user\"}\n");
        assert!(e.ends_with("it looks like a Codex rollout from before the envelope, which needs a first line {id, timestamp, instructions, git}"), "{e}");
    }

    #[test]
    fn nesting_deeper_than_the_limit_is_named() {
        let deep = format!("{}{}", "[".repeat(MAX_NESTING + 1), "]".repeat(MAX_NESTING + 1));
        assert_eq!(
            parse("d.json", deep.as_bytes(), None).unwrap_err().to_string(),
            format!("d.json:1: JSON nested deeper than {MAX_NESTING} levels, the most falat reads")
        );
        // Brackets inside strings do not count.
        assert_eq!(too_deep_at(&format!("\"{}\"", "[".repeat(MAX_NESTING + 5))), None);
    }

    #[test]
    fn remap_finds_kept_records_only() {
        let origin = [0, 1, 3, 4];
        assert_eq!(remap_index(&origin, 3), Some(2));
        assert_eq!(remap_index(&origin, 2), None);
    }

    #[test]
    fn content_accepts_strings_null_and_parts() {
        let parts = serde_json::json!([{"type": "text", "text": "a"}, {"type": "image_url"}]);
        assert_eq!(content_text(Some(&parts)), Ok("a\n[image]".into()));
        assert_eq!(content_text(None), Ok(String::new()));
        assert_eq!(
            content_text(Some(&serde_json::json!(3))).map_err(|e| e.to_string()),
            Err("\"content\" is a number, expected a string".into())
        );
    }
}
