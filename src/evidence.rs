//! `M_lo`, the raw evidence of a step: code blocks, exit codes, error lines, values, URLs, paths,
//! quoted strings and named entities, each with its byte span into [`Step::content`].
//!
//! Extraction is lexical (regular expressions), deterministic and does no IO. Values are also
//! given a normalised form ([`Evidence::key`]) so that value provenance can match `1,234` with
//! `1234` and `"Paris"` with `Paris` (FALAT stage 1, docs/DESIGN.md §2).

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::model::{Step, StepKind};

pub mod arithmetic;
pub mod context;
pub mod summary;

pub use context::ValueContext;

/// What a piece of evidence is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EvidenceKind {
    /// A fenced code block; the language tag when given (`python`, `sh`, `json`).
    CodeBlock(Option<String>),
    /// An exit code reported by a terminal (`exitcode: 1`, `exit code: 0`,
    /// `<returncode>1</returncode>`).
    ExitCode(i32),
    /// A line reporting an error: traceback, exception, a panic (Go's `panic: …`, Rust's
    /// `thread 'main' panicked at …`), HTTP error, "not found", a refusal.
    ErrorLine,
    /// A number, with its unit when one follows.
    Number,
    /// A year or a date.
    Date,
    /// An http(s) URL.
    Url,
    /// A file path or file name with an extension.
    FilePath,
    /// A quoted string.
    Quoted,
    /// A capitalised multi-word name.
    Entity,
    /// A dotted version or other number of three parts or more (`1.26.17`, `v2.3.0rc1`,
    /// `3.3.0.17`, an address `10.0.0.12`): one value, not the number its first two parts spell.
    Version,
}

impl EvidenceKind {
    /// A short name for display (`code`, `exit`, `error`, `number`...).
    pub fn label(&self) -> &'static str {
        match self {
            EvidenceKind::CodeBlock(_) => "code",
            EvidenceKind::ExitCode(_) => "exit",
            EvidenceKind::ErrorLine => "error",
            EvidenceKind::Number => "number",
            EvidenceKind::Date => "date",
            EvidenceKind::Url => "url",
            EvidenceKind::FilePath => "path",
            EvidenceKind::Quoted => "quoted",
            EvidenceKind::Entity => "entity",
            EvidenceKind::Version => "version",
        }
    }

    /// Whether this kind is a value that can flow between steps (for provenance edges).
    pub fn is_value(&self) -> bool {
        matches!(
            self,
            EvidenceKind::Number
                | EvidenceKind::Date
                | EvidenceKind::Url
                | EvidenceKind::FilePath
                | EvidenceKind::Quoted
                | EvidenceKind::Entity
                | EvidenceKind::Version
        )
    }
}

/// One piece of raw evidence in a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// What it is.
    pub kind: EvidenceKind,
    /// Byte range into the step's content (always on char boundaries).
    pub span: Range<usize>,
    /// The normalised value used for matching across steps (lower case, no thousands separators).
    pub key: String,
    /// For a number or a date found by [`extract`]: the syntactic context that makes it part of
    /// what the step *does* (a command, a call's input, a query, a line number, an id...) rather
    /// than a value it *states*; `None` for a stated value, for other kinds, in a tool result, and
    /// for everything [`extract_text`] returns (it does not classify).
    pub context: Option<ValueContext>,
}

impl Evidence {
    /// The exact text of the evidence in `content`.
    pub fn text<'a>(&self, content: &'a str) -> &'a str {
        content.get(self.span.clone()).unwrap_or_default()
    }
}

/// A fenced code block: both fences start a line (up to three spaces of indent, as in
/// CommonMark), so a sentence that mentions "```python code blocks" opens no block.
static CODE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?ms)^ {0,3}```([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^ {0,3}```").unwrap());
/// An exit code in a terminal's words (`Exit code: 1`, `exited with code 2`, `exit status 1`) or
/// in mini-swe-agent's observation tag (`<returncode>1</returncode>`, its
/// `action_observation_template`): the same fact, read the same way for every format.
static EXIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:(?:exit ?code|exited with code|exit status):? *|<returncode>[ \t\n]*)(-?\d+)").unwrap()
});
/// Plumbing fields: ids, timeouts, yield and wall times, token counts of the harness, written as
/// JSON members (`"yield_time_ms": 10000`) or header lines (`Chunk ID: 5f2a`). Their values are
/// settings of the harness, never evidence of what the agent did.
static PLUMBING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?im)"(?:id|[a-z_]*_id|[a-z_]*timeout[a-z_]*|[a-z_]*_ms|yield_time[a-z_]*|duration[a-z_]*|ordinal|max_output_tokens)"\s*:\s*(?:"[^"\n]*"|-?\d+(?:\.\d+)?)|^(?:chunk id|wall time|original token count):[^\n]*$"#,
    )
    .unwrap()
});
/// A line that reports an error ([`EvidenceKind::ErrorLine`]). A panic is one in its runtime's
/// own words, matched with their case: Go's `panic: ` opening a line, Rust's `panicked at`. An
/// apology reports an error only when it leads into what could not be done ("I'm sorry, I
/// couldn't find it", "sorry, the booking failed"), not as a courtesy ("sorry for the wait").
static ERROR_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?im)(traceback \(most recent call last\)|(?-i:^panic: |(?-u:\b)panicked at )|(?-u:\b)[A-Z][a-zA-Z]*(Error|Exception)(?::[^:\n]|:$|[ \t.!;'\x22]|$)|(?-u:\b)error:|execution failed|(?-u:\b)failed to(?-u:\b)|(?-u:\b)not found(?-u:\b)|(?-u:\b)(404|403|401|429|500|502|503|504)(?-u:\b)[^\n]{0,20}(error|not found|forbidden|unauthorized|too many|unavailable|bad gateway)|(?-u:\b)error[ \t]+[45]\d\d(?-u:\b)|(?-u:\b)unable to(?-u:\b)|(?-u:\b)cannot (access|find|open|retrieve)|(?-u:\b)could not(?-u:\b)|(?-u:\b)no (results|code block|data) (found|detected)|there is no code|(?-u:\b)sorry(?:,| but| to (?:say|report|tell you)| that)[^\n.!?]{0,80}?(?-u:\b)(?:couldn['’]?t|could not|can['’]?t|cannot|unable|(?:was|were)(?:n['’]?t| not) able|not able|failed|fails|didn['’]?t (?:work|go through|succeed)|did not (?:work|go through|succeed)|(?:is|was)(?:n['’]?t| not) possible|won['’]?t be able|went wrong|an error|no longer available)|i cannot|i can'?t (help|access|assist)|access denied|permission denied|(?:^|[^\w\n.-])(?:timed ?out|time out)(?:[^\w\n=(\x22']|[\x22'][^:\n]|[\x22']?$)|^[ \t]*timeout(?:!|[ \t]*$|[ \t]+(?:after|exceeded|expired|waiting|while|of|\d))|(?-u:\b)timeout(?: error| issue| problem| exceeded| expired| reached| occurred| after|!)|^[ \t]*[^#\s][^\n]*?(?-u:\b)timeout:?[ \t]*$|(?:^|[^\w\n.-])timeout[\x22'](?:[^:\n]|$)|exceeded (?:the )?timeout)",
    )
    .unwrap()
});
static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|[^\w.])(\$?-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|\$?-?\d+(?:\.\d+)?)(\s?(?:%|percent|km|kg|mi|miles|meters|m|minutes|min|hours|hrs|seconds|s|usd|dollars|years|feet|ft|lbs|g|cm|mm))?(?-u:\b)").unwrap()
});
/// A dotted number of three parts or more, maybe after a `v` and with a pre-release or build
/// suffix (`1.26.17`, `v2.3.0rc1`, `4.1.2-beta.1`): group 1 is the value.
static VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:^|[^\w.])v?(\d+\.\d+\.\d+(?:\.\d+)*(?:[-+.]?(?:a|b|rc|alpha|beta|dev|post|pre)\.?\d*)?)(?-u:\b)",
    )
    .unwrap()
});
static DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?-u:\b)((?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4}|\d{4}-\d{2}-\d{2}|\d{1,2} (?:january|february|march|april|may|june|july|august|september|october|november|december) \d{4})(?-u:\b)").unwrap()
});
/// An ISO date directly followed by a time (`2025-03-04T14:12`), which [`DATE`] leaves out.
static ISO_TIMESTAMP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|[^\w-])(\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01]))T\d").unwrap());
static URL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"https?://[^\s)\]>"'`]+"#).unwrap());
static PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s'(\x22])((?:/[\w.-]+)+|[\w-]+\.(?:csv|xlsx|xls|json|txt|py|pdf|docx|png|jpg|mp3|pptx|zip|md|jsonl|pdb|xml|html))(?-u:\b)").unwrap()
});
/// A quoted string: double quotes and curly quotes are paired in order, whatever the length of
/// what they hold, so that in code such as `s.rsplit(" ", 1)[0], "%b %d"` the closing quote of a
/// short string never opens a new one (`", 1)[0], "` is no value); [`push_values`] keeps the
/// strings of 2 to 80 characters. Single quotes are also apostrophes, so they pair only around 3
/// to 80 characters.
static QUOTED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#""([^"\n]*)"|'([^'\n]{3,80})'|“([^”\n]*)”"#).unwrap());
static ENTITY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u:\b)([A-Z][a-zA-Z'&.-]+(?:\s+(?:of|the|de|du|la|von|van)?\s*[A-Z][a-zA-Z'&.-]+)+)(?-u:\b)")
        .unwrap()
});

/// Extracts the evidence of one step, sorted by span start, with the [`ValueContext`] of each of
/// its numbers and dates ([`context::classify`]).
///
/// In a tool call's arguments, a quoted string followed by `:` is a JSON member name
/// (`"command":`), the same in every call of the tool, and a quoted flag or shell name (`"-lc"`,
/// `"bash"`) is a word every shell call repeats: neither is a value the call reuses.
pub fn extract(step: &Step) -> Vec<Evidence> {
    let mut ev = extract_text(&step.content);
    if step.kind == StepKind::ToolCall {
        let text = step.content.as_str();
        ev.retain(|e| !(e.kind == EvidenceKind::Quoted && (is_member_name(text, &e.span) || is_command_word(&e.key))));
    }
    context::classify(step, &mut ev);
    ev
}

/// Whether a quoted string of a tool call's arguments is a word every shell call repeats: a flag
/// (`-lc`, `--json`) or a shell's name (`bash`, `sh`, `zsh`, `powershell`) in an argument list
/// such as Codex's `["bash", "-lc", "…"]`.
fn is_command_word(key: &str) -> bool {
    key.starts_with('-') && !key.contains(char::is_whitespace)
        || matches!(key, "bash" | "sh" | "zsh" | "fish" | "dash" | "cmd" | "powershell" | "pwsh")
}

/// Whether the quoted string at `span` (its inside, quotes excluded) is followed by `:` after its
/// closing quote and optional blanks, as a JSON or dict member name is.
fn is_member_name(text: &str, span: &Range<usize>) -> bool {
    let mut rest = text[span.end..].chars();
    rest.next(); // the closing quote
    rest.as_str().trim_start_matches([' ', '\t']).starts_with(':')
}

/// Extracts the evidence of a text, sorted by span start. Spans are byte ranges into `text`.
pub fn extract_text(text: &str) -> Vec<Evidence> {
    let mut out = Vec::new();
    for c in CODE.captures_iter(text) {
        let lang = c.get(1).map(|m| m.as_str().to_ascii_lowercase()).filter(|s| !s.is_empty());
        let whole = c.get(0).expect("group 0");
        out.push(Evidence {
            kind: EvidenceKind::CodeBlock(lang),
            span: whole.range(),
            key: String::new(),
            context: None,
        });
    }
    for c in EXIT.captures_iter(text) {
        let code = c[1].parse().unwrap_or(-1);
        out.push(Evidence {
            kind: EvidenceKind::ExitCode(code),
            span: c.get(0).expect("group 0").range(),
            key: code.to_string(),
            context: None,
        });
    }
    let mut last_line = usize::MAX;
    // A file shown with its line numbers is the file's text: its `catch (error)` and "failed to"
    // lines are code or data, not errors of the run.
    let listing = numbered_listing(text);
    for m in ERROR_LINE.find_iter(text).filter(|_| !listing) {
        let start = text[..m.start()].rfind('\n').map_or(0, |p| p + 1);
        if start == last_line {
            continue;
        }
        let end = text[m.end()..].find('\n').map_or(text.len(), |p| m.end() + p);
        // A field labelled "Error:" whose value says there is none (a shell tool's report of a
        // clean run: `Error: (none)`, `error: null`) reports no error.
        if m.as_str().ends_with(':') && no_value(&text[m.end()..end]) {
            continue;
        }
        // An exception's name in quotes (`'HTTPServerError' -> 'http_server_error'`, "raises
        // `KeyError`") is a word the output mentions, not an error it reports.
        if quoted_name(text, &m) {
            continue;
        }
        last_line = start;
        out.push(Evidence { kind: EvidenceKind::ErrorLine, span: start..end, key: String::new(), context: None });
    }
    push_values(text, &mut out);
    let plumbing: Vec<Range<usize>> = PLUMBING.find_iter(text).map(|m| m.range()).collect();
    out.retain(|e| !e.kind.is_value() || !plumbing.iter().any(|p| p.start <= e.span.start && e.span.end <= p.end));
    out.sort_by_key(|e| (e.span.start, e.span.end));
    out
}

/// Whether the error-line match `m` of `text` is an exception class's name between quotes of one
/// kind (`'ValueError'`, `"TimeoutError"`, `` `KeyError` ``): the match then ends with the closing
/// quote and the opening one stands right before it.
fn quoted_name(text: &str, m: &regex::Match<'_>) -> bool {
    let name = m.as_str();
    let Some(close) = name.chars().last().filter(|c| matches!(c, '\'' | '"' | '`')) else { return false };
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && text[..m.start()].ends_with(close)
        && name[..name.len() - 1].chars().all(|c| c.is_ascii_alphanumeric())
}

/// The error phrase of an error line: from where its first error marker starts (an exception's
/// class, `error:`, `permission denied`, `timed out`...) to the end of the line, trimmed, or `None`
/// when the line holds none. `E   AttributeError: 'x'` gives `AttributeError: 'x'`.
pub fn error_phrase(line: &str) -> Option<&str> {
    let line = line.lines().next().unwrap_or("");
    ERROR_LINE.find(line).map(|m| line[m.start()..].trim())
}

/// Whether a field's value says it has none: `(none)`, `none`, `null`, `nil`, `n/a`, `-`,
/// `(empty)` (case-insensitive, brackets and quotes aside).
fn no_value(value: &str) -> bool {
    let v =
        value.trim().trim_matches(|c: char| matches!(c, '(' | ')' | '[' | ']' | '"' | '\'' | '<' | '>' | ',' | '.'));
    ["none", "null", "nil", "n/a", "na", "-", "empty", "no error", "no errors"]
        .contains(&v.to_ascii_lowercase().as_str())
}

/// Whether `text` is a file shown with a line number before each line, as coding agents' read
/// tools and `cat -n` / `nl` print one (`   76→text`, `  76\ttext`, `76: text`, `76 | text`):
/// at least three numbered lines, and at least four in five non-empty lines numbered.
pub fn numbered_listing(text: &str) -> bool {
    static GUTTER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*\d{1,6}(?:→|\t|: | \| )").unwrap());
    let (mut lines, mut numbered) = (0usize, 0usize);
    for line in text.lines().filter(|l| !l.trim().is_empty()).take(400) {
        lines += 1;
        numbered += usize::from(GUTTER.is_match(line));
    }
    numbered >= 3 && numbered * 5 >= lines * 4
}

fn push_values(text: &str, out: &mut Vec<Evidence>) {
    for m in URL.find_iter(text) {
        let url = m.as_str().trim_end_matches(['.', ',', ';', ':']);
        let span = m.start()..m.start() + url.len();
        out.push(Evidence { kind: EvidenceKind::Url, span, key: url.to_ascii_lowercase(), context: None });
    }
    let url_spans: Vec<Range<usize>> =
        out.iter().filter(|e| e.kind == EvidenceKind::Url).map(|e| e.span.clone()).collect();
    let inside_url = |r: &Range<usize>| url_spans.iter().any(|u| u.start <= r.start && r.end <= u.end);
    for m in DATE.find_iter(text) {
        let key = date_key(m.as_str()).unwrap_or_else(|| m.as_str().to_ascii_lowercase());
        out.push(Evidence { kind: EvidenceKind::Date, span: m.range(), key, context: None });
    }
    // An ISO date that opens a timestamp (`2025-03-04T14:12:00Z`).
    for c in ISO_TIMESTAMP.captures_iter(text) {
        let g = c.get(1).expect("group 1");
        out.push(Evidence { kind: EvidenceKind::Date, span: g.range(), key: g.as_str().to_string(), context: None });
    }
    let mut versions: Vec<Range<usize>> = Vec::new();
    for c in VERSION.captures_iter(text) {
        let g = c.get(1).expect("group 1");
        if inside_url(&g.range()) {
            continue;
        }
        versions.push(g.range());
        out.push(Evidence {
            kind: EvidenceKind::Version,
            span: g.range(),
            key: g.as_str().to_ascii_lowercase(),
            context: None,
        });
    }
    let inside_version = |r: &Range<usize>| versions.iter().any(|v| v.start <= r.start && r.end <= v.end);
    for c in NUMBER.captures_iter(text) {
        let g = c.get(1).expect("group 1");
        if inside_url(&g.range()) || inside_version(&g.range()) {
            continue;
        }
        let key = normalize_number(g.as_str());
        if key.is_empty() {
            continue;
        }
        let end = c.get(2).map_or(g.end(), |u| u.end());
        out.push(Evidence { kind: EvidenceKind::Number, span: g.start()..end, key, context: None });
    }
    for c in PATH.captures_iter(text) {
        let g = c.get(1).expect("group 1");
        if inside_url(&g.range()) || g.as_str().len() < 4 {
            continue;
        }
        out.push(Evidence {
            kind: EvidenceKind::FilePath,
            span: g.range(),
            key: g.as_str().to_ascii_lowercase(),
            context: None,
        });
    }
    for c in QUOTED.captures_iter(text) {
        let g = c.get(1).or_else(|| c.get(2)).or_else(|| c.get(3)).expect("one group");
        if !(2..=80).contains(&g.as_str().chars().count()) {
            continue;
        }
        let key = g.as_str().trim().to_ascii_lowercase();
        if key.len() >= 3 {
            out.push(Evidence { kind: EvidenceKind::Quoted, span: g.range(), key, context: None });
        }
    }
    for m in ENTITY.find_iter(text) {
        if inside_url(&m.range()) {
            continue;
        }
        let key = m.as_str().to_ascii_lowercase();
        if is_stop_entity(&key) {
            continue;
        }
        out.push(Evidence { kind: EvidenceKind::Entity, span: m.range(), key, context: None });
    }
}

/// The key of a date written with its year, in ISO form (`Mar 4, 2025`, `4 March 2025`,
/// `2025-03-04` → `2025-03-04`), so that one date written two ways is one value; `None` for a
/// text that is not such a date.
pub fn date_key(text: &str) -> Option<String> {
    let low = text.to_ascii_lowercase();
    let words: Vec<&str> =
        low.split(|c: char| !c.is_ascii_alphanumeric() && c != '-').filter(|w| !w.is_empty()).collect();
    let (y, m, d) = match words.as_slice() {
        [iso] => {
            let mut p = iso.split('-');
            (p.next()?.parse::<u32>().ok()?, p.next()?.parse::<u32>().ok()?, p.next()?.parse::<u32>().ok()?)
        }
        [a, b, year] => {
            let month = month_number;
            let day = |w: &str| w.trim_end_matches(|c: char| c.is_ascii_alphabetic()).parse::<u32>().ok();
            let (m, d) = match month(a) {
                Some(m) => (m, day(b)?),
                None => (month(b)?, day(a)?),
            };
            (year.parse::<u32>().ok()?, m, d)
        }
        _ => return None,
    };
    ((1..=12).contains(&m) && (1..=31).contains(&d)).then(|| format!("{y:04}-{m:02}-{d:02}"))
}

/// The month (1-12) a lower-case word names by its first three letters (`dec`, `december`,
/// `sept`); `None` for any other word.
pub fn month_number(word: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    MONTHS.iter().position(|m| word.starts_with(m)).map(|i| i as u32 + 1)
}

/// `1,234.50` → `1234.5`, `$12` → `12`, `007` → `7`; empty for non-numbers.
pub fn normalize_number(s: &str) -> String {
    let t: String = s.chars().filter(|c| *c != ',' && *c != '$').collect();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => {
            if v.fract() == 0.0 && v.abs() < 1e15 {
                format!("{}", v as i64)
            } else {
                let s = format!("{v:.6}");
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            }
        }
        _ => String::new(),
    }
}

fn is_stop_entity(key: &str) -> bool {
    const STOP: &[&str] =
        &["updated ledger", "initial plan", "final answer", "next speaker", "code output", "here is", "let me"];
    STOP.iter().any(|s| key.starts_with(s))
}

/// Whether a number is too common to carry provenance (0-10, small ordinals used as list markers).
pub fn is_trivial_number(key: &str) -> bool {
    match key.parse::<f64>() {
        Ok(v) => v.fract() == 0.0 && (0.0..=10.0).contains(&v),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(String, String)> {
        extract_text(text).iter().map(|e| (e.kind.label().to_string(), e.text(text).to_string())).collect()
    }

    #[test]
    fn quotes_pair_in_order_so_code_between_two_strings_is_no_value() {
        let quoted = |t: &str| -> Vec<String> {
            extract_text(t).iter().filter(|e| e.kind == EvidenceKind::Quoted).map(|e| e.text(t).to_string()).collect()
        };
        let code = r#"d = datetime.strptime(s.rsplit(" ", 1)[0], "%b %d %Y")"#;
        assert_eq!(quoted(code), ["%b %d %Y"]);
        assert_eq!(quoted(r#"x = {"a": "", "city": "Lyon"}"#), ["city", "Lyon"]);
        assert_eq!(quoted("he said “Springfield” twice"), ["Springfield"]);
        let long = format!(r#"msg = "{}", name = "Ada""#, "x".repeat(90));
        assert_eq!(quoted(&long), ["Ada"]);
    }

    #[test]
    fn a_timeout_word_in_a_name_a_flag_or_a_setting_is_no_error_line() {
        let errors = |t: &str| -> Vec<String> {
            extract_text(t)
                .iter()
                .filter(|e| e.kind == EvidenceKind::ErrorLine)
                .map(|e| e.text(t).to_string())
                .collect()
        };
        let source = "DEFAULT_TIMEOUT = 30\nparser.add_argument('--timeout', type=int)\n\
            resp = session.get(url, timeout=args.timeout)\nself.timeout = t\nrequest_timeout: 5";
        assert_eq!(errors(source), Vec::<String>::new());
        assert_eq!(
            errors("ssh: connect to host db port 22: Connection timed out"),
            ["ssh: connect to host db port 22: Connection timed out"]
        );
        assert_eq!(errors("Timeout\nretrying"), ["Timeout"]);
        assert_eq!(errors("Error executing tool get_weather: timeout"), ["Error executing tool get_weather: timeout"]);
        // A JSON or dict key named `timeout` is a setting; a quoted value "timeout" is an error.
        assert!(errors(r#"return self._request("GET", path, **{"timeout": self.timeout})"#).is_empty());
        assert_eq!(errors(r#"{"status": "error", "reason": "timeout"}"#).len(), 1);
        // The noun in prose names a setting (a task, a plan, a commit message); the error says the
        // time ran out.
        let prose = "Raise the gateway's read timeout to 45s.\nI need to find where the read timeout is configured.\n\
            [ops/read-timeout 4be1c07] ops: raise payments read timeout to 45s\nwith a timeout of 30s per call\n\
            ## Session-wide timeout\n# a per-request timeout";
        assert_eq!(errors(prose), Vec::<String>::new());
        for error in [
            "Request failed: connection timeout",
            "Timeout of 2000ms exceeded.",
            "thrown: Exceeded timeout of 5000 ms for a test.",
            "the page load hit a timeout error",
            "the browser encountered a timeout issue.",
            "timeout after 30s waiting for the lock",
            "upstream connect error: connection timeout",
        ] {
            assert_eq!(errors(error), [error], "{error}");
        }
    }

    #[test]
    fn a_dotted_version_is_one_value_not_the_number_of_its_first_parts() {
        let versions = |t: &str| -> Vec<(String, String)> {
            kinds(t).into_iter().filter(|(k, _)| k == "version" || k == "number").collect()
        };
        let v = |s: &str| ("version".to_string(), s.to_string());
        let n = |s: &str| ("number".to_string(), s.to_string());
        assert_eq!(versions("fixed in urllib3 1.26.17 and 2.2.2"), [v("1.26.17"), v("2.2.2")]);
        assert_eq!(versions("pin v2.3.0rc1, not 2.3"), [v("2.3.0rc1"), n("2.3")]);
        assert_eq!(versions("host 10.0.0.12 answered in 1.5 s"), [v("10.0.0.12"), n("1.5 s")]);
        assert_eq!(versions("urllib3-1.26.16-py2.py3-none-any.whl"), [v("1.26.16")]);
        // Its key is its text in lower case, the same wherever it is written.
        let e = extract_text("Bumped to 4.1.2-Beta.1.");
        assert_eq!(
            e.iter().map(|e| (e.kind.label(), e.key.as_str())).collect::<Vec<_>>(),
            [("version", "4.1.2-beta.1")]
        );
    }

    #[test]
    fn an_error_field_that_says_none_is_no_error() {
        let gemini = "Command: go test ./...\nDirectory: (root)\nStdout: ok  \tkv/internal/cache\t1.2s\nStderr: (empty)\nError: (none)\nExit Code: 0";
        assert!(!extract_text(gemini).iter().any(|e| e.kind == EvidenceKind::ErrorLine));
        let failed = "Stderr: (empty)\nError: exit status 1\nExit Code: 1";
        let lines: Vec<&str> =
            extract_text(failed).iter().filter(|e| e.kind == EvidenceKind::ErrorLine).map(|e| e.text(failed)).collect();
        assert_eq!(lines, ["Error: exit status 1"]);
        // A label with its detail on the next lines is an error.
        let npm = "npm error Lifecycle script `test` failed with error:\nnpm error code 1";
        assert!(extract_text(npm).iter().any(|e| e.kind == EvidenceKind::ErrorLine));
    }

    #[test]
    fn code_blocks_and_exit_codes() {
        let t =
            "Run this:\n```python\nprint(1)\n```\nexitcode: 1 (execution failed)\nTraceback (most recent call last):";
        let ev = extract_text(t);
        assert!(
            ev.iter()
                .any(|e| e.kind == EvidenceKind::CodeBlock(Some("python".into()))
                    && e.text(t).starts_with("```python"))
        );
        assert!(ev.iter().any(|e| e.kind == EvidenceKind::ExitCode(1)));
        assert!(
            ev.iter().any(|e| e.kind == EvidenceKind::ErrorLine && e.text(t) == "Traceback (most recent call last):")
        );
    }

    #[test]
    fn a_numbered_file_listing_has_no_error_lines() {
        let file = "    1→#!/usr/bin/env node\n   83→    } catch (error) {\n   84→      console.error('Failed to run task:', error);\n   85→    }\n";
        assert!(numbered_listing(file));
        assert!(!extract_text(file).iter().any(|e| e.kind == EvidenceKind::ErrorLine));
        let nl = "     1\tdef f():\n     2\t    raise ValueError('x')\n     3\t\n     4\treturn 1\n";
        assert!(numbered_listing(nl));
        // A traceback is no listing, nor is a list of three numbered items in prose.
        let tb = "Traceback (most recent call last):\n  File \"a.py\", line 3, in <module>\nZeroDivisionError: division by zero";
        assert!(!numbered_listing(tb));
        assert!(extract_text(tb).iter().any(|e| e.kind == EvidenceKind::ErrorLine));
        assert!(!numbered_listing("Steps:\n1. open the page\n2. it failed to load\n3. retry"));
    }

    #[test]
    fn a_fence_opens_only_at_the_start_of_a_line() {
        let t = "Runs scripts (quoted in ```python code blocks) or ```sh blocks.\n\n```sh\nls /tmp\n```\nDone.";
        let blocks: Vec<_> =
            extract_text(t).into_iter().filter(|e| matches!(e.kind, EvidenceKind::CodeBlock(_))).collect();
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].kind, EvidenceKind::CodeBlock(Some("sh".into())));
        assert_eq!(blocks[0].text(t), "```sh\nls /tmp\n```");
    }

    #[test]
    fn values_are_normalised() {
        let k = kinds("Seattle has 737,015 people; see https://data.census.gov/x. File data.csv, 'Blue Whale'.");
        assert!(k.contains(&("number".into(), "737,015".into())));
        assert!(k.contains(&("url".into(), "https://data.census.gov/x".into())));
        assert!(k.contains(&("path".into(), "data.csv".into())));
        assert!(k.contains(&("quoted".into(), "Blue Whale".into())));
        assert_eq!(normalize_number("737,015"), "737015");
        assert_eq!(normalize_number("$12.50"), "12.5");
    }

    #[test]
    fn every_wording_of_a_failed_exit_is_an_exit_code() {
        let mini = "<returncode>1</returncode>\n<output>\n1 failed, 9 passed in 0.07s\n</output>";
        for t in ["Exit code: 2", "Process exited with code 101", "exit status 1", "(exit status: 101)", mini] {
            let codes: Vec<i32> = extract_text(t)
                .iter()
                .filter_map(|e| match e.kind {
                    EvidenceKind::ExitCode(c) => Some(c),
                    _ => None,
                })
                .collect();
            assert_eq!(codes.len(), 1, "{t}");
            assert!(codes[0] > 0, "{t}");
        }
    }

    #[test]
    fn a_go_or_rust_panic_is_an_error_line() {
        let rust = "thread 'main' panicked at src/main.rs:7:22:\nindex out of bounds: the len is 3 but the index is 3";
        let go = "panic: assignment to entry in nil map\n\ngoroutine 1 [running]:\nmain.main()";
        for (t, line) in
            [(rust, "thread 'main' panicked at src/main.rs:7:22:"), (go, "panic: assignment to entry in nil map")]
        {
            let lines: Vec<&str> =
                extract_text(t).iter().filter(|e| e.kind == EvidenceKind::ErrorLine).map(|e| e.text(t)).collect();
            assert_eq!(lines, [line]);
        }
        // The word in prose is no panic.
        assert!(!extract_text("Don't panic: the tests pass.").iter().any(|e| e.kind == EvidenceKind::ErrorLine));
    }

    #[test]
    fn a_quoted_exception_name_is_a_word_not_an_error_line() {
        let lines = |t: &str| -> Vec<String> {
            extract_text(t)
                .iter()
                .filter(|e| e.kind == EvidenceKind::ErrorLine)
                .map(|e| e.text(t).to_string())
                .collect()
        };
        // A reproduction script printing the names it converts.
        let out =
            "'HTTPServerError'      -> 'h_t_t_p_server_error'\n'parseHTMLDocument'    -> 'parse_h_t_m_l_document'";
        assert!(lines(out).is_empty(), "{:?}", lines(out));
        assert!(lines("the handler catches \"TimeoutError\" and retries").is_empty());
        // The exception itself, and a quoted name followed by a real error on the line, still are.
        assert_eq!(lines("KeyError: 'user_id'"), ["KeyError: 'user_id'"]);
        assert_eq!(lines("'ValueError' raised: ValueError: bad input"), ["'ValueError' raised: ValueError: bad input"]);
        assert_eq!(lines("raise ValueError('bad input')").len(), 0, "a raise in code is followed by a bracket");
    }

    #[test]
    fn an_http_status_told_as_an_error_is_an_error_line() {
        for t in
            ["Error 503: Service Unavailable", "upstream returned 503 Service Unavailable", "HTTP Error 404: Not Found"]
        {
            assert!(extract_text(t).iter().any(|e| e.kind == EvidenceKind::ErrorLine), "{t}");
        }
        for t in ["Error 5 of 12 fixed", "served 503 requests in 2.1 s"] {
            let n = extract_text(t).iter().filter(|e| e.kind == EvidenceKind::ErrorLine).count();
            assert_eq!(n, 0, "{t}");
        }
    }

    #[test]
    fn plumbing_fields_are_not_values() {
        let t = "{\"cmd\":\"cargo test\",\"yield_time_ms\":10000,\"call_id\":\"call_x1\"}\nChunk ID: 5f2a\nWall time: 5.8 seconds\nOutput: 42 tests";
        let k = kinds(t);
        assert!(
            !k.iter()
                .any(|(_, v)| v.contains("10000") || v.contains("call_x1") || v.contains("5.8") || v.contains("5f2a")),
            "{k:?}"
        );
        assert!(k.contains(&("quoted".into(), "cargo test".into())), "{k:?}");
        assert!(k.contains(&("number".into(), "42".into())), "{k:?}");
    }

    #[test]
    fn entities_are_multi_word_names() {
        let k = kinds("We visited the New York Stock Exchange and Renzo Gracie Jiu-Jitsu.");
        assert!(k.contains(&("entity".into(), "New York Stock Exchange".into())));
    }
}
