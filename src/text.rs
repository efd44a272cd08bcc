//! Text helpers for untrusted trace content: sanitising for the terminal, first lines, clipping,
//! and the one sentence splitter the findings read users' and agents' sentences with.

/// Removes what must never reach a terminal raw: ANSI/VT escape sequences (CSI, OSC, DCS, single
/// ESC sequences), C0 and C1 control characters (except `\n` and `\t`), and bidi overrides.
/// Tabs become four spaces and `\r\n` becomes `\n`; a lone `\r` becomes a visible `␍`.
///
/// The result is safe to print in any terminal; printable characters are kept unchanged.
pub fn sanitize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('␍');
                }
            }
            c if c.is_control() => {}
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' => {}
            c => out.push(c),
        }
    }
    out
}

fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.peek() {
        Some('[') => {
            chars.next();
            skip_csi(chars);
        }
        Some(']') | Some('P') | Some('X') | Some('^') | Some('_') => {
            chars.next();
            skip_string(chars);
        }
        Some(c) if ('\u{20}'..='\u{2f}').contains(c) => {
            // ESC + intermediates + final byte (charset selection and the like).
            for c in chars.by_ref() {
                if ('\u{30}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
        Some(_) => {
            chars.next();
        }
        None => {}
    }
}

fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
    }
}

/// Skips an OSC/DCS/SOS/PM/APC string up to BEL, ST (`ESC \`) or C1 ST.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                break;
            }
            _ => {}
        }
    }
}

/// Whether a terminal may act on `c` although it is not an ASCII control: DEL, the C1 controls
/// (U+0080–U+009F), the bidi marks, embeddings, overrides and isolates (U+200E, U+200F,
/// U+202A–U+202E, U+2066–U+2069) and the line and paragraph separators (U+2028, U+2029).
pub fn is_terminal_control(c: char) -> bool {
    matches!(c, '\u{7f}'..='\u{9f}' | '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// JSON text (as `serde_json` writes it) with every character of [`is_terminal_control`] written
/// as a `\uXXXX` escape, so that printing it cannot drive a terminal or reorder what is shown,
/// while a JSON reader gets the same strings back. (serde_json escapes the C0 controls, ESC
/// among them, but writes these raw.) Outside strings JSON text is ASCII, so only strings change.
pub fn escape_json_controls(json: &str) -> String {
    if !json.chars().any(is_terminal_control) {
        return json.to_string();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_terminal_control(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// The first non-empty line of `s`, sanitised and trimmed, clipped to `max` characters with `…`.
/// A line that only opens what follows (a lone `{`, `[` or `(`, a code fence, a short label
/// ending in `:` such as "New task:" or "Observation:") says nothing on its own: the next
/// non-empty lines continue it, joined by single spaces, until `max` characters are reached.
pub fn first_line(s: &str, max: usize) -> String {
    let mut lines = s.lines().map(str::trim).filter(|l| !l.is_empty());
    let Some(first) = lines.next() else { return String::new() };
    if !opens_only(first) {
        return clip(&sanitize(first), max);
    }
    let mut line = first.to_string();
    let mut width = line.chars().count();
    for next in lines {
        if width > max {
            break;
        }
        line.push(' ');
        line.push_str(next);
        width += 1 + next.chars().count();
    }
    clip(&sanitize(&line), max)
}

/// Whether a (trimmed) line only opens what the lines after it hold: a lone bracket, a code
/// fence, or a label of at most 24 characters ending in a colon.
fn opens_only(line: &str) -> bool {
    matches!(line, "{" | "[" | "(" | "[{")
        || line.starts_with("```")
        || line.ends_with(':') && line.chars().count() <= 24
}

/// `n` and the noun for that count: `count(1, "call", "calls")` is "1 call", `count(2, ...)` "2 calls".
pub fn count<N: std::fmt::Display + PartialEq + From<u8>>(n: N, one: &str, many: &str) -> String {
    let noun = if n == N::from(1) { one } else { many };
    format!("{n} {noun}")
}

/// `s` with its first character in upper case ("no candidate" → "No candidate"), for a clause
/// that starts a sentence.
pub fn sentence_case(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `s` clipped to at most `max` characters, ending in `…` when cut.
pub fn clip(s: &str, max: usize) -> String {
    // `nth` stops after `max` characters: clipping a long text costs no pass over all of it.
    if s.chars().nth(max).is_none() {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Where sentences end: `.`, `!`, `?` or `;` followed by white space or the end of the text, and
/// line breaks. A dot inside a number (`3.8`), a path or a file name (`app/main.py`) ends none.
static SENTENCE_END: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"[.!?;](?:\s|$)|\n").unwrap());

/// The sentences of a text ([`SENTENCE_END`]), trimmed, empty ones left out; each keeps its
/// closing mark (`Do not touch app/main.py.`). The one splitter the findings read users' and
/// agents' sentences with.
pub fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut last = 0;
    let mut out = Vec::new();
    for m in SENTENCE_END.find_iter(text) {
        let end = if text[m.start()..].starts_with('\n') { m.start() } else { m.start() + 1 };
        out.push(&text[last..end]);
        last = m.end();
    }
    out.push(&text[last..]);
    out.into_iter().map(str::trim).filter(|s| !s.is_empty())
}

/// The byte range of the sentence of `text` that holds bytes `start..end` (a match in it): from
/// after the last sentence end before `start` to the first one at or after `end`, its closing
/// mark included, white space trimmed. Byte offsets; `start <= end <= text.len()`, on character
/// boundaries.
pub fn sentence_around(text: &str, start: usize, end: usize) -> std::ops::Range<usize> {
    let from = SENTENCE_END.find_iter(&text[..start]).last().map_or(0, |m| m.end());
    let to = SENTENCE_END.find(&text[end..]).map_or(text.len(), |m| {
        if text[end + m.start()..].starts_with('\n') { end + m.start() } else { end + m.start() + 1 }
    });
    let s = &text[from..to];
    let lead = s.len() - s.trim_start().len();
    from + lead..from + s.trim_end().len()
}

#[cfg(test)]
mod tests {
    #[test]
    fn sentences_end_at_marks_before_space_and_at_line_breaks() {
        let text = "Keep Python 3.8 support; do not touch app/main.py. Why? Because\nCI runs it!";
        let got: Vec<&str> = super::sentences(text).collect();
        assert_eq!(got, ["Keep Python 3.8 support;", "do not touch app/main.py.", "Why?", "Because", "CI runs it!"]);
        assert_eq!(super::sentences("  \n ").count(), 0);
    }

    #[test]
    fn the_sentence_around_a_match_keeps_its_mark_and_no_neighbour() {
        let text = "Ran it. The full suite passes: 40 passed. Done";
        let at = text.find("full").unwrap();
        assert_eq!(&text[super::sentence_around(text, at, at + 4)], "The full suite passes: 40 passed.");
        let at = text.find("Done").unwrap();
        assert_eq!(&text[super::sentence_around(text, at, at + 4)], "Done");
        assert_eq!(&text[super::sentence_around(text, 0, 3)], "Ran it.");
        let text = "see src/a.py\nall 12 tests pass";
        let at = text.find("12").unwrap();
        assert_eq!(&text[super::sentence_around(text, at, at + 2)], "all 12 tests pass");
    }

    use super::*;

    #[test]
    fn sentence_case_raises_only_the_first_character() {
        assert_eq!(sentence_case("no candidate passed; step 4"), "No candidate passed; step 4");
        assert_eq!(sentence_case("options"), "Options");
        assert_eq!(sentence_case("évalué"), "Évalué");
        assert_eq!(sentence_case(""), "");
    }

    #[test]
    fn count_names_the_noun_for_the_number() {
        assert_eq!(count(1usize, "message", "messages"), "1 message");
        assert_eq!(count(0usize, "message", "messages"), "0 messages");
        assert_eq!(count(2u64, "trajectory", "trajectories"), "2 trajectories");
    }

    #[test]
    fn escape_sequences_are_removed() {
        assert_eq!(sanitize("a\u{1b}[31mred\u{1b}[0m b"), "ared b");
        assert_eq!(sanitize("x\u{1b}]0;title\u{7}y"), "xy");
        assert_eq!(sanitize("x\u{1b}]52;c;AAAA\u{1b}\\y"), "xy");
        assert_eq!(sanitize("bell\u{7} nul\u{0} del\u{7f}"), "bell nul del");
        assert_eq!(sanitize("a\r\nb\rc\td"), "a\nb␍c    d");
        assert_eq!(sanitize("\u{9b}2Jok"), "ok");
        assert_eq!(sanitize("rtl\u{202e}txt"), "rtltxt");
    }

    #[test]
    fn json_keeps_its_strings_but_loses_raw_terminal_controls() {
        let value = serde_json::json!({"k\u{1b}]52;c;QUFB\u{7}": "a\u{9b}2J\u{85}b\u{202e}txt\u{2066}\u{7f}é"});
        let text = escape_json_controls(&serde_json::to_string(&value).unwrap());
        assert!(!text.chars().any(|c| c == '\u{1b}' || is_terminal_control(c)), "{text}");
        assert!(text.contains("a\\u009b2J\\u0085b\\u202etxt\\u2066\\u007fé"), "{text}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), value, "the same value back");
    }

    #[test]
    fn first_line_skips_blank_lines_and_clips() {
        assert_eq!(first_line("\n\n  hello world  \nnext", 20), "hello world");
        assert_eq!(first_line("abcdefghij", 5), "abcd…");
    }

    #[test]
    fn first_line_continues_a_line_that_only_opens_what_follows() {
        assert_eq!(first_line("New task:\nCount the files\n\nunder src/", 60), "New task: Count the files under src/");
        assert_eq!(
            first_line("{\n  \"order_id\": \"#W1\",\n  \"status\": \"pending\"\n}", 30),
            "{ \"order_id\": \"#W1\", \"status\"…"
        );
        assert_eq!(first_line("```python\nprint(1)\n```", 40), "```python print(1) ```");
        // A sentence that ends in a colon is a line of its own.
        assert_eq!(first_line("Here is the verification process:\n1. Sugar", 60), "Here is the verification process:");
        assert_eq!(first_line("Plan:\n\x1b[2Jdo it", 40), "Plan: do it", "what continues it is sanitised too");
    }
}
