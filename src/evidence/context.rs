//! Values in context: where a number or a date sits in a step's text, and whether that place makes
//! it part of what the step *does* rather than a value it *states*.
//!
//! `head -80` in a shell command, `2026` in a search query, `184` in `orchestrator.py:184`, `4000`
//! in `localhost:4000` or `7593` in a uuid are not figures an agent asserts about the world: they
//! are options, query terms, line numbers, ports and ids. An agent telling the user "the total is
//! 42" does state `42`. The classification is syntactic (where the value sits: a tool call's input,
//! a code span, a shell command line, a JSON member with a command, query, path or id key, a URL or
//! path, a timestamp, a `file:line` reference, a `host:port`, an option's value, an id token, a
//! counter) and knows no data set, file or benchmark wording. The unsourced-value signal
//! (`substrate::signals`) only counts values without a context.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use super::{Evidence, EvidenceKind, URL};
use crate::model::{Step, StepKind};

/// Where a value sits when that place makes it context, not a stated value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueContext {
    /// The input of a tool call (other than a tool that delivers an answer or a message): the
    /// arguments the agent chose, not a claim about the world.
    CallInput,
    /// Code: a fenced block (or after an unclosed fence) or an inline code span.
    Code,
    /// A shell command: a `$ ` prompt line, a line with shell plumbing (`2>&1`, `>/dev/null`,
    /// ` && `, a pipe into a program with options), or a JSON member whose key names a command
    /// or a script (`"command": "..."`).
    Command,
    /// A command-line option's value outside a command (`--depth=3`, `-n 80`).
    Flag,
    /// A search query: a JSON member whose key names a query or a pattern, or the quoted text
    /// after "searched for", "typed", "query:".
    Query,
    /// Part of a URL, a file path or an IP address, or of a JSON member whose key names one.
    Location,
    /// A line or column number: `line 42`, `lines 10-20`, `src/x.py:42`, `"line": 42`.
    LineNumber,
    /// A network port: `localhost:4000`, `127.0.0.1:8080`, `port 5432`, `"port": 80`.
    Port,
    /// A timestamp: an ISO date-time, a clock time with seconds, the date that opens a log line.
    Timestamp,
    /// Part of an identifier: a hex or uuid-like token, a token with letters and digits joined by
    /// `-` or `_` before the number (`gpt-4o-2024`), `#123`, `id 42`, a ticket key (`OPS-2207`),
    /// a JSON member keyed as an id.
    Id,
    /// A counter or progress mark: `[3/10]`, `attempt 4`, `page 12 of 30`, `"limit": 50`.
    Counter,
    /// The number of a reference: a standard or proposal (`RFC 9110`, `PEP 8`, `ISO 8601`,
    /// `CVE-2024-3094`), a section (`§5.5`, `section 4.2`), a Unicode code point (`U+0300`), a
    /// version (`v1.2`, `version 0.17`, `1.4.2`, `attrs==24.2.0`, `lodash@4.17.21`, a version in
    /// an API's history: "exists since 1.39", "added in Python 3.9", "deprecated since 2.0").
    Reference,
}

impl ValueContext {
    /// A short name for display (`call-input`, `code`, `command`...).
    pub fn label(self) -> &'static str {
        match self {
            ValueContext::CallInput => "call-input",
            ValueContext::Code => "code",
            ValueContext::Command => "command",
            ValueContext::Flag => "flag",
            ValueContext::Query => "query",
            ValueContext::Location => "location",
            ValueContext::LineNumber => "line-number",
            ValueContext::Port => "port",
            ValueContext::Timestamp => "timestamp",
            ValueContext::Id => "id",
            ValueContext::Counter => "counter",
            ValueContext::Reference => "reference",
        }
    }
}

/// Sets [`Evidence::context`] on every number and date of a step's evidence (`ev` extracted from
/// `step.content`); a tool result's values are left without one (a tool's output is a source, not
/// the agent's statement, so the question does not arise). Every value of a tool call's input is [`ValueContext::CallInput`], unless the
/// tool delivers an answer or a message (its name has a word such as `answer`, `respond`,
/// `reply`, `final`, `submit`, `message`, `think`); elsewhere each value gets the context of the
/// first region of [`Regions`] it starts in, checked in the order of [`ValueContext`].
pub fn classify(step: &Step, ev: &mut [Evidence]) {
    let is_value = |e: &Evidence| matches!(e.kind, EvidenceKind::Number | EvidenceKind::Date);
    // What a tool returns is a source, never a statement of the agent: its values are not asked.
    if step.kind == StepKind::ToolResult || !ev.iter().any(is_value) {
        return;
    }
    if step.kind == StepKind::ToolCall && !delivers_statement(step.tool_name.as_deref()) {
        for e in ev.iter_mut().filter(|e| is_value(e)) {
            e.context = Some(ValueContext::CallInput);
        }
        return;
    }
    let regions = Regions::of(&step.content);
    for e in ev.iter_mut().filter(|e| is_value(e)) {
        e.context = regions.at(&step.content, &e.span);
    }
}

/// The context of the value at byte range `span` of `text` (the lexical part of [`classify`],
/// without the step's kind): for one-off questions and tests; [`classify`] scans a text once for
/// all its values.
pub fn context_in(text: &str, span: Range<usize>) -> Option<ValueContext> {
    Regions::of(text).at(text, &span)
}

/// Whether a tool call's input is a statement: the tool delivers an answer or a message. The tool
/// name is split into lower-case words at `_`, `-`, `.`, spaces and camel-case humps.
fn delivers_statement(tool: Option<&str>) -> bool {
    const STATES: &[&str] =
        &["answer", "respond", "response", "reply", "final", "submit", "say", "message", "think", "finish"];
    tool.is_some_and(|t| words(t).iter().any(|w| STATES.contains(&w.as_str())))
}

/// Lower-case words of an identifier: `final_answer` → `final`, `answer`; `sendMessage` →
/// `send`, `message`.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            prev_lower = false;
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A JSON member with a string or array value: key, value.
static JSON_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""([A-Za-z_][\w.-]{0,40})"\s*:\s*("(?:[^"\\]|\\.)*"|\[(?:[^\[\]"]|"(?:[^"\\]|\\.)*")*\])"#).unwrap()
});
/// A JSON member with a number value: key, value.
static JSON_NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""([A-Za-z_][\w.-]{0,40})"\s*:\s*(-?\d+(?:\.\d+)?)"#).unwrap());
static INLINE_CODE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`[^`\n]+`").unwrap());
static PROMPT_LINE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?m)^[ \t]*\$ [^\n]*").unwrap());
static SHELL_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^[^\n]*(?:2>&1|[12]?>\s*/dev/null|[ \t]&&[ \t]|\|[ \t]*[a-z][\w.-]*[ \t]+-{1,2}[A-Za-z0-9])[^\n]*")
        .unwrap()
});
static QUERY_PHRASE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(?:search(?:ed|ing|es)?\s+(?:for|on)|looked\s+up|typed|query(?:\s+was)?\s*:?)\s*("[^"\n]{1,300}"|'[^'\n]{1,300}'|“[^”\n]{1,300}”)"#)
        .unwrap()
});
static PATH_TOKEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:~|\.{1,2})?/[\w.@+-]+(?:/[\w.@+-]*)*|[\w.@+-]+(?:/[\w.@+-]+)+").unwrap());
/// Whether a path-like token is an amount per unit: a number, one `/` and a word of letters
/// only (`171/night`, `12.50/hour`, `3/day`).
fn is_per_unit(token: &str) -> bool {
    token.split_once('/').is_some_and(|(n, unit)| {
        !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b',')
            && n.bytes().next().is_some_and(|b| b.is_ascii_digit())
            && !unit.is_empty()
            && unit.bytes().all(|b| b.is_ascii_alphabetic())
    })
}
static IP: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?-u:\b)(?:\d{1,3}\.){3}\d{1,3}(?-u:\b)").unwrap());
static DATETIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?|(?-u:\b)\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?-u:\b)|^\[?\d{4}-\d{2}-\d{2}\]?[ \t]+(?:\[|[A-Z]{3,8}(?-u:\b))").unwrap()
});
static LINE_WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?-u:\b)(?:lines?|col(?:umn)?)\s+(\d+)(?:\s*(?:-|–|to|and|,)\s*(\d+))?").unwrap()
});
/// `name.ext:N` or `name.ext:N:M`, with the name before the extension.
static FILE_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"([\w./\\-]*[A-Za-z_][\w-]*\.[A-Za-z][A-Za-z0-9]{0,9}):(\d+)(?::(\d+))?").unwrap());
static PORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:(?-u:\b)(?:localhost|(?:\d{1,3}\.){3}\d{1,3})|\[[0-9a-f:]*\]):(\d{1,5})(?-u:\b)|(?-u:\b)port\s*(?:number\s*)?[:=]?\s*(\d{2,5})(?-u:\b)").unwrap()
});
static FLAG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|[ \t(])--?[A-Za-z][\w-]*(?:=|[ \t]+)(-?\d+(?:\.\d+)?)(?-u:\b)").unwrap());
static ID_MARK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)#(\d+)|(?-u:\b)(?:[a-z]+[_-])?(?:id|ids|pid|uid|gid|tid|uuid)(?-u:\b)\s*[:#=]?\s*(\d+)").unwrap()
});
/// A ticket key as issue trackers write it: a project key of two to ten capitals and digits
/// opening with a capital, a `-`, and a number of three digits or more (`OPS-2207`,
/// `SUP-4471`). Case-sensitive: `gpt-4o` and `mod-100` are no keys.
static TICKET: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?-u:\b)[A-Z][A-Z0-9]{1,9}-(\d{3,})(?-u:\b)").unwrap());
/// A reference's number ([`ValueContext::Reference`]).
static REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)(?-u:\b)(?:rfc|pep|iso|iec|ieee|ecma|cve|ansi|nist|fips)[ -]?(\d+(?:[.:-]\d+)*(?:,?\s+(?:§\s*|section\s+)?\d+(?:\.\d+)+)?)|§+\s*(\d+(?:\.\d+)*)|(?-u:\b)(?:section|sect?\.|chapter|clause|appendix|version|release|ver\.)\s+(\d+(?:\.\d+)*)|(?-u:\b)U\+([0-9A-F]{4,6})|(?-u:\b)v(\d+(?:\.\d+)+)|(?-u:\b)(\d+\.\d+\.\d+(?:[.-]\w+)?)|[\w.-](?:==|>=|<=|~=|!=|@\^?|@~?)(\d+(?:\.\d+)*)",
            r"|(?-u:\b)(?:exists?|existed|stable|stabili[sz]ed|available|added|introduced|deprecated|removed|supported)\s+since\s+(?:[a-z]+\s+)?v?(\d+\.\d+(?:\.\d+)*)(?-u:\b)",
            r"|(?-u:\b)(?:added|introduced|deprecated|removed|stabili[sz]ed)\s+in\s+(?:[a-z]+\s+)?v?(\d+\.\d+(?:\.\d+)*)(?-u:\b)",
        )
    )
    .unwrap()
});
static COUNTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)[\[(](\d+)\s*/\s*(\d+)[\])]|(?-u:\b)(?:step|attempt|iteration|retry|round|turn|try|epoch|page|chunk|batch|trial)\s*#?\s*(\d+)(?:\s*(?:/|of)\s*(\d+))?(?-u:\b)").unwrap()
});

/// The regions of a text that put a value in context, per kind, computed once per text; a lookup
/// costs a binary search per kind, so a long text with many values stays linear.
pub struct Regions {
    /// Byte offsets of every "```", and of the `<code>` and `</code>` tags smolagents' code
    /// agents write their code between (a value after an odd number of them is in a block).
    fences: Vec<usize>,
    /// Per context kind, in the order they are checked: disjoint ranges sorted by start.
    kinds: Vec<(ValueContext, Vec<Range<usize>>)>,
}

impl Regions {
    /// Scans `text` once for every region.
    pub fn of(text: &str) -> Regions {
        let mut fences: Vec<usize> = text.match_indices("```").map(|(p, _)| p).collect();
        if text.contains("<code>") {
            fences.extend(text.match_indices("<code>").chain(text.match_indices("</code>")).map(|(p, _)| p));
            fences.sort_unstable();
        }
        let mut r: Vec<(Range<usize>, ValueContext)> = Vec::new();
        let whole = |re: &Regex, c: ValueContext, r: &mut Vec<(Range<usize>, ValueContext)>| {
            r.extend(re.find_iter(text).map(|m| (m.range(), c)));
        };
        let groups = |re: &Regex, c: ValueContext, r: &mut Vec<(Range<usize>, ValueContext)>| {
            for caps in re.captures_iter(text) {
                r.extend(caps.iter().skip(1).flatten().map(|m| (m.range(), c)));
            }
        };
        whole(&INLINE_CODE, ValueContext::Code, &mut r);
        whole(&PROMPT_LINE, ValueContext::Command, &mut r);
        whole(&SHELL_LINE, ValueContext::Command, &mut r);
        for c in JSON_TEXT.captures_iter(text) {
            if let Some(ctx) = key_context(&c[1], false) {
                r.push((c.get(2).expect("value").range(), ctx));
            }
        }
        for c in JSON_NUMBER.captures_iter(text) {
            if let Some(ctx) = key_context(&c[1], true) {
                r.push((c.get(2).expect("value").range(), ctx));
            }
        }
        groups(&QUERY_PHRASE, ValueContext::Query, &mut r);
        r.extend(URL.find_iter(text).map(|m| (m.range(), ValueContext::Location)));
        r.extend(
            PATH_TOKEN
                .find_iter(text)
                .filter(|m| m.as_str().bytes().any(|b| b.is_ascii_alphabetic()))
                // An amount per unit (`171/night`, `12.50/hour`) is a rate, not a path.
                .filter(|m| !is_per_unit(m.as_str()))
                .map(|m| (m.range(), ValueContext::Location)),
        );
        whole(&DATETIME, ValueContext::Timestamp, &mut r);
        groups(&LINE_WORD, ValueContext::LineNumber, &mut r);
        for c in FILE_LINE.captures_iter(text) {
            let name = &c[1];
            let n = c.get(2).expect("line");
            // `db.internal:5432` is a host and a port; `src/app.py:42` and `x.rs:3:5` are lines.
            let port = c.get(3).is_none()
                && !name.contains(['/', '\\'])
                && n.as_str().parse::<u32>().is_ok_and(|v| (1024..=65535).contains(&v));
            let ctx = if port { ValueContext::Port } else { ValueContext::LineNumber };
            r.push((n.range(), ctx));
            if let Some(col) = c.get(3) {
                r.push((col.range(), ValueContext::LineNumber));
            }
        }
        groups(&PORT, ValueContext::Port, &mut r);
        whole(&IP, ValueContext::Location, &mut r);
        groups(&FLAG, ValueContext::Flag, &mut r);
        groups(&ID_MARK, ValueContext::Id, &mut r);
        groups(&TICKET, ValueContext::Id, &mut r);
        groups(&COUNTER, ValueContext::Counter, &mut r);
        groups(&REFERENCE, ValueContext::Reference, &mut r);
        // Per kind, in the order of the variants (code before command before query...), merged
        // into disjoint ranges sorted by start.
        r.sort_by_key(|(range, c)| (*c, range.start));
        let mut kinds: Vec<(ValueContext, Vec<Range<usize>>)> = Vec::new();
        for (range, c) in r {
            match kinds.last_mut() {
                Some((k, ranges)) if *k == c => match ranges.last_mut() {
                    Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
                    _ => ranges.push(range),
                },
                _ => kinds.push((c, vec![range])),
            }
        }
        Regions { fences, kinds }
    }

    /// The context of the value at `span` of `text` (the text these regions were computed from):
    /// a fenced block, the first region the value starts in, else an identifier token around it.
    pub fn at(&self, text: &str, span: &Range<usize>) -> Option<ValueContext> {
        if self.fences.partition_point(|&p| p < span.start) % 2 == 1 {
            return Some(ValueContext::Code);
        }
        let p = span.start;
        let holds = |ranges: &[Range<usize>]| {
            let i = ranges.partition_point(|r| r.start <= p);
            i > 0 && p < ranges[i - 1].end
        };
        if let Some((c, _)) = self.kinds.iter().find(|(_, ranges)| holds(ranges)) {
            return Some(*c);
        }
        in_identifier(text, span).then_some(ValueContext::Id)
    }
}

/// The context a JSON member's key gives its value, from the key's words: a command, a query, a
/// location, an id; for a number value also a line, a port or a counter (`"limit": 50`). Other
/// keys (`"total": 42`) give none: their values are stated.
fn key_context(key: &str, number: bool) -> Option<ValueContext> {
    const COMMAND: &[&str] = &["command", "commands", "cmd", "script", "code", "shell", "bash", "exec", "argv", "args"];
    const QUERY: &[&str] =
        &["query", "queries", "q", "search", "keyword", "keywords", "term", "terms", "pattern", "regex", "glob"];
    const LOCATION: &[&str] = &[
        "url",
        "urls",
        "uri",
        "href",
        "link",
        "path",
        "paths",
        "file",
        "filename",
        "files",
        "dir",
        "directory",
        "cwd",
        "workdir",
        "folder",
    ];
    const ID: &[&str] = &["id", "ids", "uuid", "guid", "sha", "hash", "ref", "commit"];
    const LINE: &[&str] = &["line", "lines", "lineno", "column", "col"];
    const COUNTER: &[&str] = &[
        "limit", "offset", "page", "max", "top", "depth", "head", "num", "retries", "retry", "attempt", "timeout", "n",
        "k",
    ];
    let w = words(key);
    let has = |set: &[&str]| w.iter().any(|x| set.contains(&x.as_str()));
    if has(COMMAND) {
        Some(ValueContext::Command)
    } else if has(QUERY) {
        Some(ValueContext::Query)
    } else if has(LOCATION) {
        Some(ValueContext::Location)
    } else if has(ID) {
        Some(ValueContext::Id)
    } else if !number {
        None
    } else if has(LINE) {
        Some(ValueContext::LineNumber)
    } else if w.iter().any(|x| x == "port") {
        Some(ValueContext::Port)
    } else if has(COUNTER) {
        Some(ValueContext::Counter)
    } else {
        None
    }
}

/// Whether the number at `span` is part of an identifier token (ASCII letters, digits, `-`, `_`
/// around it): a hex or uuid-like token (`019b7f94-51b4-7593`), or one whose part before the
/// number holds a digit or an `_` beside a letter (`gpt-4o-2024`, `run_2026`). `30-day` and
/// `mid-2024` are words around a stated value, not ids.
fn in_identifier(text: &str, span: &Range<usize>) -> bool {
    // Tokens are read at most this far on each side, so a long run of joined numbers stays linear.
    const REACH: usize = 64;
    let b = text.as_bytes();
    let is_tok = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
    let start = span.start.min(b.len());
    let mut s = start;
    while s > 0 && start - s < REACH && is_tok(b[s - 1]) {
        s -= 1;
    }
    let limit = b.len().min(start + REACH);
    let digits_end = (start..limit).find(|&i| !(b[i].is_ascii_digit() || b[i] == b'-' && i == start)).unwrap_or(limit);
    let mut e = digits_end;
    while e < limit && is_tok(b[e]) {
        e += 1;
    }
    let token = &b[s..e];
    let left = &b[s..start];
    if !token.iter().any(u8::is_ascii_alphabetic) {
        return false;
    }
    let hex_digits = token.iter().filter(|c| c.is_ascii_hexdigit()).count();
    let hex_like = hex_digits >= 8 && token.iter().all(|c| c.is_ascii_hexdigit() || *c == b'-');
    let joined = left.iter().any(u8::is_ascii_alphabetic) && left.iter().any(|c| c.is_ascii_digit() || *c == b'_');
    hex_like || joined
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::extract;

    /// The context of the first number or date whose text is `value` in `text`, as a step of `kind`.
    fn ctx_of(kind: StepKind, tool: Option<&str>, text: &str, value: &str) -> Option<ValueContext> {
        let step = Step { kind, tool_name: tool.map(String::from), content: text.into(), ..Step::default() };
        let ev = extract(&step);
        let e = ev
            .iter()
            .find(|e| matches!(e.kind, EvidenceKind::Number | EvidenceKind::Date) && e.text(text) == value)
            .unwrap_or_else(|| panic!("no value {value} in {text:?}: {ev:?}"));
        e.context
    }

    fn said(text: &str, value: &str) -> Option<ValueContext> {
        ctx_of(StepKind::Message, None, text, value)
    }

    #[test]
    fn a_tool_call_s_input_is_context_unless_the_tool_answers() {
        let cmd = r#"{"command":"ls -lt | head -20","description":"Newest files"}"#;
        assert_eq!(ctx_of(StepKind::ToolCall, Some("Bash"), cmd, "-20"), Some(ValueContext::CallInput));
        let args = r#"divide({"a": 84, "b": 12})"#;
        assert_eq!(ctx_of(StepKind::ToolCall, Some("divide"), args, "84"), Some(ValueContext::CallInput));
        let answer = r#"final_answer({"answer": "The total is 4,310"})"#;
        assert_eq!(ctx_of(StepKind::ToolCall, Some("final_answer"), answer, "4,310"), None);
        assert_eq!(
            ctx_of(StepKind::ToolCall, Some("sendMessage"), "Your refund of 561.05 is on its way", "561.05"),
            None
        );
    }

    #[test]
    fn references_and_versions_are_context() {
        let r = Some(ValueContext::Reference);
        assert_eq!(said("It now trims both sides per RFC 9110 §5.5.", "9110"), r);
        assert_eq!(said("It now trims both sides per RFC 9110 §5.5.", "5.5"), r);
        assert_eq!(said("RFC 9110 5.5: OWS on both sides is not part of the value.", "5.5"), r);
        assert_eq!(said("Drop combining marks (U+0300–U+036F) first.", "0300"), r);
        // A version of three parts is a value of its own kind, not a number in context.
        for (text, version) in
            [("Pinned attrs==24.2.0 in requirements.", "24.2.0"), ("Upgraded the client to 2.3.1 today.", "2.3.1")]
        {
            let step = Step { kind: StepKind::Message, content: text.into(), ..Step::default() };
            let kinds: Vec<(EvidenceKind, String)> = extract(&step)
                .into_iter()
                .filter(|e| e.kind.is_value())
                .map(|e| (e.kind.clone(), e.text(text).to_string()))
                .collect();
            assert_eq!(kinds, [(EvidenceKind::Version, version.to_string())], "{text}");
        }
        assert_eq!(said("Since version 0.17 it returns a tuple.", "0.17"), r);
        assert_eq!(said("See section 4.2 of the spec and PEP 8.", "4.2"), r);
        // A version in an API's history: when it came, went or became stable.
        assert_eq!(said("The method exists since 1.39; look at the imports.", "1.39"), r);
        assert_eq!(said("`removeprefix` was added in Python 3.9.", "3.9"), r);
        assert_eq!(said("It is deprecated since 2.0 and removed in 3.0.", "2.0"), r);
        // Stated figures stay values.
        assert_eq!(said("The refund of 42.50 was issued in March.", "42.50"), None);
        assert_eq!(said("Revenue rose by 3.5 points.", "3.5"), None);
    }

    #[test]
    fn commands_code_and_flags_are_context() {
        assert_eq!(said("I will run `mix phx.server 2>&1 | head -80` now.", "-80"), Some(ValueContext::Code));
        assert_eq!(said("Let me look:\nls -lt | head -20\nthen decide.", "-20"), Some(ValueContext::Command));
        assert_eq!(said("$ seq 1 500\n", "500"), Some(ValueContext::Command));
        assert_eq!(said("Run it:\n```sh\ntail -n 300 log\n```", "300"), Some(ValueContext::Code));
        assert_eq!(said("Convert:\n<code>\nm = secs / 60\n</code>", "60"), Some(ValueContext::Code));
        assert_eq!(said("<code>\nx = 1\n</code>\nThere were 60 of them.", "60"), None);
        assert_eq!(said("Retry with --depth=30 this time.", "30"), Some(ValueContext::Flag));
        assert_eq!(said("Use -n 80 to see more.", "80"), Some(ValueContext::Flag));
        assert_eq!(said(r#"{"cmd": ["bash", "-lc", "tail -n 300 app.log"]}"#, "300"), Some(ValueContext::Command));
    }

    #[test]
    fn queries_locations_and_ids_are_context() {
        assert_eq!(
            said(r#"{"query":"hex.pm opentelemetry_api latest version 2026"}"#, "2026"),
            Some(ValueContext::Query)
        );
        assert_eq!(
            said("I searched for \"best pizza 2024 awards\" and found nothing.", "2024"),
            Some(ValueContext::Query)
        );
        assert_eq!(said("Saved to /tmp/run/2031/out.txt.", "2031"), Some(ValueContext::Location));
        // An address is one dotted value, no number to place.
        let step =
            Step { kind: StepKind::Message, content: "The host 192.168.10.20 answers.".into(), ..Step::default() };
        assert!(extract(&step).iter().all(|e| e.kind != EvidenceKind::Number));
        // An amount per unit is a rate the step states, not a path.
        assert_eq!(said("ibis Centre: €171/night, 3 min walk", "171"), None);
        assert_eq!(said("Saved to out/171/night.txt", "171"), Some(ValueContext::Location));
        assert_eq!(said("Session 019b7f94-51b4-7593-922e-ba12b5b73b52 ended.", "7593"), Some(ValueContext::Id));
        assert_eq!(said("The model gpt-4o-2024-08-06 replied.", "2024-08-06"), Some(ValueContext::Id));
        assert_eq!(said("See issue #4512 for details.", "4512"), Some(ValueContext::Id));
        assert_eq!(said("Process pid 73121 exited.", "73121"), Some(ValueContext::Id));
        assert_eq!(said("Renamed the setting (ticket OPS-2207), nothing else.", "2207"), Some(ValueContext::Id));
        assert_eq!(said("Fixed SUP-4471: page 2 no longer repeats a row.", "4471"), Some(ValueContext::Id));
    }

    #[test]
    fn line_numbers_ports_timestamps_and_counters_are_context() {
        let trace = "  File \"/usr/lib/python3.11/site-packages/x/orchestrator.py\", line 184, in run\n/usr/lib/x/orchestrator.py:196: UserWarning: mismatch";
        assert_eq!(said(trace, "184"), Some(ValueContext::LineNumber));
        assert_eq!(said(trace, "196"), Some(ValueContext::LineNumber));
        assert_eq!(said("error at src/main.rs:37:12 here", "37"), Some(ValueContext::LineNumber));
        assert_eq!(said("The server listens on localhost:4000 now.", "4000"), Some(ValueContext::Port));
        assert_eq!(said("Open port 5432 on the database.", "5432"), Some(ValueContext::Port));
        assert_eq!(said("Connect to db.internal:6543 first.", "6543"), Some(ValueContext::Port));
        assert_eq!(said("2026-01-14T19:26:08.587Z worker started", "2026"), Some(ValueContext::Timestamp));
        assert_eq!(said("[2025-11-03] INFO boot\n", "2025-11-03"), Some(ValueContext::Timestamp));
        assert_eq!(said("Progress [37/120] done", "37"), Some(ValueContext::Counter));
        assert_eq!(said("This is attempt 12 of 20.", "12"), Some(ValueContext::Counter));
        assert_eq!(said(r#"{"file_path": "a.rs", "offset": 120, "limit": 50}"#, "120"), Some(ValueContext::Counter));
    }

    #[test]
    fn stated_values_have_no_context() {
        assert_eq!(said("The invoice total is 4,310.", "4,310"), None);
        assert_eq!(said("The balance is -80 after the refund.", "-80"), None);
        assert_eq!(said("It costs $561.05 and ships in 30-day windows.", "$561.05"), None);
        assert_eq!(said("Prices rose in mid-2024 to 1,250 per unit.", "2024"), None);
        assert_eq!(said("The population of Seattle is 737,015 (2020 census).", "737,015"), None);
        assert_eq!(said(r#"{"total": 42, "currency": "EUR"}"#, "42"), None);
        assert_eq!(said("The meeting was on April 20, 2018.", "April 20, 2018"), None);
        assert_eq!(said("| item | price |\n| pen | 12 |", "12"), None);
    }

    #[test]
    fn tool_names_split_into_words() {
        assert_eq!(words("final_answer"), vec!["final", "answer"]);
        assert_eq!(words("sendMessage"), vec!["send", "message"]);
        assert_eq!(words("list_all_product_types"), vec!["list", "all", "product", "types"]);
        assert!(!delivers_statement(Some("get_order_details")));
        assert!(delivers_statement(Some("respond")));
    }
}
