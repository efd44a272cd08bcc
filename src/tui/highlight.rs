//! The raw evidence of a step as styled lines: code blocks and JSON highlighted with syntect,
//! extracted values and error lines marked, everything sanitised, wrapped to the pane width and
//! cached per (step, width) so that a redraw only slices what is visible.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, LazyLock};

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, ThemeSet};
use syntect::parsing::{SyntaxReference, SyntaxSet};
use syntect::util::LinesWithEndings;
use unicode_width::UnicodeWidthChar;

use super::theme::Theme;
use crate::evidence::{Evidence, EvidenceKind};
use crate::text;

static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);
static THEMES: LazyLock<ThemeSet> = LazyLock::new(ThemeSet::load_defaults);

/// Loads the syntax and theme sets and compiles the common syntaxes on another thread, so the
/// first highlighted step does not wait for them.
pub fn warm_up() {
    std::thread::spawn(|| {
        // Syntect compiles a syntax's patterns on first use: do it for the common ones here.
        let theme = &THEMES.themes["base16-ocean.dark"];
        for (lang, sample) in
            [("python", "import x\nprint(f'{x}')\n"), ("json", "{\"a\": [1]}\n"), ("sh", "ls -l | wc\n")]
        {
            let mut h = HighlightLines::new(syntax_for(lang), theme);
            for line in LinesWithEndings::from(sample) {
                let _ = h.highlight_line(line, &SYNTAXES);
            }
        }
    });
}

/// Content longer than this is shown without syntax highlighting (it would take too long).
const HIGHLIGHT_LIMIT: usize = 200_000;

/// Converts a syntect style to a ratatui style: foreground colour and font style; the background
/// is left to the terminal. In monochrome mode only the font style is kept.
pub fn syntect_style(s: syntect::highlighting::Style, mono: bool) -> Style {
    let mut out = Style::default();
    if !mono {
        out = out.fg(Color::Rgb(s.foreground.r, s.foreground.g, s.foreground.b));
    }
    for (font, modifier) in [
        (FontStyle::BOLD, Modifier::BOLD),
        (FontStyle::ITALIC, Modifier::ITALIC),
        (FontStyle::UNDERLINE, Modifier::UNDERLINED),
    ] {
        if s.font_style.contains(font) {
            out = out.add_modifier(modifier);
        }
    }
    out
}

/// What the gutter of a line shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gutter {
    /// Nothing.
    Plain,
    /// A code or JSON line.
    Code,
    /// A line with an error.
    Error,
}

/// One logical line of evidence, before wrapping.
#[derive(Debug, Clone, PartialEq)]
pub struct EvLine {
    /// The gutter mark.
    pub gutter: Gutter,
    /// Sanitised, styled text.
    pub spans: Vec<Span<'static>>,
}

const VALUE: u8 = 1;
const ERROR: u8 = 2;
const FENCE: u8 = 4;

/// The styled logical lines of a step's content with its evidence.
pub fn content_lines(content: &str, evidence: &[Evidence], theme: &Theme) -> Vec<EvLine> {
    if let Some(pretty) = pretty_json(content) {
        return code_block_lines(&pretty, syntax_for("json"), theme);
    }
    let mut flags = vec![0u8; content.len()];
    let mut code: HashMap<usize, (usize, Vec<Span<'static>>)> = HashMap::new();
    for e in evidence {
        let Some(range) = content.get(e.span.clone()).map(|_| e.span.clone()) else { continue };
        match &e.kind {
            EvidenceKind::CodeBlock(lang) => {
                flags[range.clone()].iter_mut().for_each(|f| *f |= FENCE);
                highlight_interior(content, range, lang.as_deref(), theme, &mut code);
            }
            EvidenceKind::ErrorLine => flags[range].iter_mut().for_each(|f| *f |= ERROR),
            k if k.is_value() => flags[range].iter_mut().for_each(|f| *f |= VALUE),
            _ => {}
        }
    }
    for (start, end) in json_regions(content, &flags) {
        flags[start..end].iter_mut().for_each(|f| *f &= !VALUE);
        highlight_region(content, start, end, syntax_for("json"), theme, &mut code);
    }
    let mut out = Vec::new();
    let mut start = 0;
    for line in content.split('\n') {
        let end = start + line.len();
        out.push(one_line(content, start..end, &flags, &mut code, theme));
        start = end + 1;
    }
    out
}

fn pretty_json(content: &str) -> Option<String> {
    let t = content.trim();
    if !(t.starts_with('{') && t.ends_with('}') || t.starts_with('[') && t.ends_with(']')) || t.len() < 2 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(t).ok()?;
    serde_json::to_string_pretty(&v).ok()
}

fn syntax_for(lang: &str) -> &'static SyntaxReference {
    let lang = match lang {
        "py" | "python3" => "python",
        "shell" | "console" | "zsh" => "sh",
        l => l,
    };
    SYNTAXES.find_syntax_by_token(lang).unwrap_or_else(|| SYNTAXES.find_syntax_plain_text())
}

fn syntect_theme(theme: &Theme) -> &'static syntect::highlighting::Theme {
    THEMES.themes.get(&theme.syntax).unwrap_or_else(|| &THEMES.themes["base16-ocean.dark"])
}

/// Multi-line JSON objects or arrays outside code blocks that start at the beginning of a line
/// (a ledger, page metadata): `(start, end)` byte ranges.
fn json_regions(content: &str, flags: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < content.len() {
        let line_end = content[pos..].find('\n').map_or(content.len(), |i| pos + i);
        let first = content[pos..line_end].trim_start();
        let start = line_end - first.len();
        let opens = (first.starts_with('{') || first.starts_with('[')) && flags[start] & FENCE == 0;
        if opens {
            let mut values = serde_json::Deserializer::from_str(&content[start..]).into_iter::<serde::de::IgnoredAny>();
            if let Some(Ok(_)) = values.next() {
                let end = start + values.byte_offset();
                if content[start..end].contains('\n') && end - start <= HIGHLIGHT_LIMIT {
                    out.push((start, end));
                    pos = content[end..].find('\n').map_or(content.len(), |i| end + i + 1);
                    continue;
                }
            }
        }
        pos = line_end + 1;
    }
    out
}

/// Highlights the interior of a fenced code block.
fn highlight_interior(
    content: &str,
    block: std::ops::Range<usize>,
    lang: Option<&str>,
    theme: &Theme,
    out: &mut HashMap<usize, (usize, Vec<Span<'static>>)>,
) {
    let Some(nl) = content[block.clone()].find('\n') else { return };
    let start = block.start + nl + 1;
    let end = if content[..block.end].ends_with("```") { block.end - 3 } else { block.end };
    if start >= end || end - start > HIGHLIGHT_LIMIT {
        return;
    }
    let syntax = match lang {
        Some(l) => syntax_for(l),
        None => SYNTAXES
            .find_syntax_by_first_line(&content[start..end])
            .unwrap_or_else(|| SYNTAXES.find_syntax_by_token("python").unwrap_or(SYNTAXES.find_syntax_plain_text())),
    };
    highlight_region(content, start, end, syntax, theme, out);
}

/// Highlights `content[start..end]` (which starts a line) with syntect; records spans by the
/// byte where each line starts, with the number of content bytes they cover.
fn highlight_region(
    content: &str,
    start: usize,
    end: usize,
    syntax: &SyntaxReference,
    theme: &Theme,
    out: &mut HashMap<usize, (usize, Vec<Span<'static>>)>,
) {
    let interior = &content[start..end];
    let mut h = HighlightLines::new(syntax, syntect_theme(theme));
    let mut offset = start;
    for line in LinesWithEndings::from(interior) {
        let body = line.trim_end_matches(['\n', '\r']);
        let spans = match h.highlight_line(line, &SYNTAXES) {
            Ok(pieces) => pieces_to_spans(&pieces, theme.mono),
            Err(_) => vec![Span::raw(text::sanitize(body))],
        };
        out.insert(offset, (body.len(), spans));
        offset += line.len();
    }
}

fn pieces_to_spans(pieces: &[(syntect::highlighting::Style, &str)], mono: bool) -> Vec<Span<'static>> {
    pieces
        .iter()
        .map(|(s, t)| (syntect_style(*s, mono), text::sanitize(t.trim_end_matches(['\n', '\r']))))
        .filter(|(_, t)| !t.is_empty())
        .map(|(s, t)| Span::styled(t, s))
        .collect()
}

fn code_block_lines(code: &str, syntax: &SyntaxReference, theme: &Theme) -> Vec<EvLine> {
    if code.len() > HIGHLIGHT_LIMIT {
        return code
            .lines()
            .map(|l| EvLine { gutter: Gutter::Code, spans: vec![Span::raw(text::sanitize(l))] })
            .collect();
    }
    let mut h = HighlightLines::new(syntax, syntect_theme(theme));
    LinesWithEndings::from(code)
        .map(|line| {
            let spans = match h.highlight_line(line, &SYNTAXES) {
                Ok(pieces) => pieces_to_spans(&pieces, theme.mono),
                Err(_) => vec![Span::raw(text::sanitize(line.trim_end()))],
            };
            EvLine { gutter: Gutter::Code, spans }
        })
        .collect()
}

fn one_line(
    content: &str,
    range: std::ops::Range<usize>,
    flags: &[u8],
    code: &mut HashMap<usize, (usize, Vec<Span<'static>>)>,
    theme: &Theme,
) -> EvLine {
    let mut spans = Vec::new();
    let mut pos = range.start;
    let mut gutter = Gutter::Plain;
    if let Some((len, highlighted)) = code.remove(&range.start) {
        spans.extend(highlighted);
        pos = (range.start + len).min(range.end);
        gutter = Gutter::Code;
    }
    while pos < range.end {
        let f = flags[pos];
        let mut end = pos + 1;
        while end < range.end && (flags[end] == f || !content.is_char_boundary(end)) {
            end += 1;
        }
        let piece = text::sanitize(&content[pos..end]);
        if !piece.is_empty() {
            spans.push(Span::styled(piece, flag_style(f, theme)));
        }
        if f & ERROR != 0 && gutter == Gutter::Plain {
            gutter = Gutter::Error;
        }
        pos = end;
    }
    EvLine { gutter, spans }
}

fn flag_style(f: u8, theme: &Theme) -> Style {
    let mut s = theme.text;
    if f & FENCE != 0 {
        return theme.code_fence;
    }
    if f & ERROR != 0 {
        s = s.patch(theme.error_line);
    }
    if f & VALUE != 0 {
        s = s.patch(theme.value);
    }
    s
}

fn gutter_span(g: Gutter, theme: &Theme) -> Span<'static> {
    match g {
        Gutter::Plain => Span::raw("  "),
        Gutter::Code => Span::styled("│ ", theme.code_fence),
        Gutter::Error => Span::styled("! ", theme.error),
    }
}

/// Wraps logical lines to `width` columns (gutter included), at spaces where possible.
pub fn wrap(lines: &[EvLine], width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let avail = width.saturating_sub(2).max(1);
    let mut out = Vec::with_capacity(lines.len());
    for l in lines {
        let cells: Vec<(char, Style)> =
            l.spans.iter().flat_map(|s| s.content.chars().map(move |c| (c, s.style))).collect();
        if cells.is_empty() {
            out.push(Line::from(vec![gutter_span(l.gutter, theme)]));
            continue;
        }
        // Continuations hang under the text of the line: after its indent and a list marker
        // (`- `, `* `, `1. `), so a wrapped list item stays readable. Code keeps its own layout.
        let hang = if l.gutter == Gutter::Code { 0 } else { hanging_indent(&cells).min(avail / 2) };
        let mut start = 0;
        while start < cells.len() {
            let room = if start == 0 { avail } else { avail - hang };
            let end = break_at(&cells, start, room);
            let mut spans = vec![gutter_span(l.gutter, theme)];
            if start > 0 && hang > 0 {
                spans.push(Span::raw(" ".repeat(hang)));
            }
            spans.extend(group(&cells[start..end]));
            out.push(Line::from(spans));
            start = end;
            if start > 0 && hang > 0 {
                while start < cells.len() && cells[start].0 == ' ' {
                    start += 1;
                }
            }
        }
    }
    out
}

/// The columns before a line's text: its leading spaces and a list marker after them.
fn hanging_indent(cells: &[(char, Style)]) -> usize {
    let lead = cells.iter().take_while(|c| c.0 == ' ' || c.0 == '\t').count();
    let rest: String = cells[lead..].iter().take(6).map(|c| c.0).collect();
    let marker = if rest.starts_with("- ") || rest.starts_with("* ") || rest.starts_with("• ") {
        2
    } else {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && (rest[digits..].starts_with(". ") || rest[digits..].starts_with(") ")) {
            digits + 2
        } else {
            0
        }
    };
    lead + marker
}

/// Where the visual line that starts at `start` ends.
fn break_at(cells: &[(char, Style)], start: usize, avail: usize) -> usize {
    let mut width = 0;
    let mut end = start;
    let mut last_space = None;
    while end < cells.len() {
        let w = cells[end].0.width().unwrap_or(0);
        if width + w > avail {
            break;
        }
        if cells[end].0 == ' ' {
            last_space = Some(end);
        }
        width += w;
        end += 1;
    }
    if end == start {
        return start + 1;
    }
    if end < cells.len()
        && let Some(sp) = last_space.filter(|sp| *sp > start + avail / 3)
    {
        return sp + 1;
    }
    end
}

fn group(cells: &[(char, Style)]) -> Vec<Span<'static>> {
    let mut out: Vec<Span<'static>> = Vec::new();
    let mut buf = String::new();
    let mut style = cells.first().map(|c| c.1).unwrap_or_default();
    for (c, s) in cells {
        if *s != style {
            out.push(Span::styled(std::mem::take(&mut buf), style));
            style = *s;
        }
        buf.push(*c);
    }
    if !buf.is_empty() {
        out.push(Span::styled(buf, style));
    }
    out
}

/// Restyles the case-insensitive occurrences of `query` in a rendered line.
pub fn mark_matches(line: &Line<'static>, query: &str, style: Style) -> Line<'static> {
    let q: Vec<char> = query.chars().flat_map(char::to_lowercase).collect();
    if q.is_empty() {
        return line.clone();
    }
    let mut cells: Vec<(char, Style)> =
        line.spans.iter().flat_map(|s| s.content.chars().map(move |c| (c, s.style))).collect();
    let lower: Vec<char> = cells.iter().map(|(c, _)| c.to_lowercase().next().unwrap_or(*c)).collect();
    let mut i = 0;
    let mut found = false;
    while i + q.len() <= lower.len() {
        if lower[i..i + q.len()] == q[..] {
            for cell in &mut cells[i..i + q.len()] {
                cell.1 = cell.1.patch(style);
            }
            found = true;
            i += q.len();
        } else {
            i += 1;
        }
    }
    if !found {
        return line.clone();
    }
    Line::from(group(&cells))
}

/// `(step, width)`.
type CacheKey = (usize, usize);

/// Wrapped evidence lines by (step, width), keeping the most recent few.
#[derive(Debug, Default)]
pub struct EvidenceCache {
    entries: VecDeque<(CacheKey, Arc<Vec<Line<'static>>>)>,
}

impl EvidenceCache {
    const CAPACITY: usize = 32;

    /// Forgets every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The cached lines for `(step, width)`, if any.
    pub fn get(&self, key: CacheKey) -> Option<Arc<Vec<Line<'static>>>> {
        self.entries.iter().find(|(k, _)| *k == key).map(|(_, lines)| Arc::clone(lines))
    }

    /// Keeps `lines` for `(step, width)` (the oldest entry goes when full); returns them.
    pub fn insert(&mut self, key: CacheKey, lines: Vec<Line<'static>>) -> Arc<Vec<Line<'static>>> {
        self.get_or_build(key, || lines)
    }

    /// The cached lines for `(step, width)`, built with `build` when missing.
    pub fn get_or_build(
        &mut self,
        key: CacheKey,
        build: impl FnOnce() -> Vec<Line<'static>>,
    ) -> Arc<Vec<Line<'static>>> {
        if let Some((_, lines)) = self.entries.iter().find(|(k, _)| *k == key) {
            return Arc::clone(lines);
        }
        let lines = Arc::new(build());
        if self.entries.len() >= Self::CAPACITY {
            self.entries.pop_front();
        }
        self.entries.push_back((key, Arc::clone(&lines)));
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::extract_text;

    fn theme() -> Theme {
        Theme::builtin("dark").expect("theme")
    }

    fn text_of(l: &EvLine) -> String {
        l.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn code_is_highlighted_and_values_and_errors_marked() {
        let content = "Total is 1,234 km.\n```python\nx = 42\nprint(x)\n```\nTraceback (most recent call last):";
        let t = theme();
        let lines = content_lines(content, &extract_text(content), &t);
        assert_eq!(lines.len(), 6);
        let value = lines[0].spans.iter().find(|s| s.content.contains("1,234")).expect("value span");
        assert_eq!(value.style, t.text.patch(t.value));
        assert_eq!(lines[2].gutter, Gutter::Code);
        assert_eq!(text_of(&lines[2]), "x = 42");
        assert!(lines[2].spans.len() > 1, "syntax highlighting splits the line: {:?}", lines[2].spans);
        assert_eq!(lines[5].gutter, Gutter::Error);
    }

    #[test]
    fn embedded_json_is_highlighted_in_place() {
        let content = "Updated Ledger:\n{\n  \"is_request_satisfied\": {\"answer\": false}\n} trailing\nmore";
        let lines = content_lines(content, &extract_text(content), &theme());
        let gutters: Vec<Gutter> = lines.iter().map(|l| l.gutter).collect();
        assert_eq!(gutters, vec![Gutter::Plain, Gutter::Code, Gutter::Code, Gutter::Code, Gutter::Plain]);
        assert_eq!(text_of(&lines[3]), "} trailing");
        assert_eq!(text_of(&lines[4]), "more");
    }

    #[test]
    fn json_is_pretty_printed_and_highlighted() {
        let lines = content_lines("{\"a\": [1, 2], \"b\": \"x\"}", &[], &theme());
        assert!(lines.len() > 3);
        assert!(lines.iter().all(|l| l.gutter == Gutter::Code));
    }

    #[test]
    fn escapes_never_survive() {
        let content = "red \u{1b}[31mALERT\u{1b}[0m\n```sh\necho \u{1b}]0;owned\u{7}hi\n```";
        let lines = content_lines(content, &extract_text(content), &theme());
        for l in &lines {
            assert!(!text_of(l).chars().any(|c| c.is_control()), "{:?}", text_of(l));
        }
    }

    #[test]
    fn wrapping_breaks_at_spaces_and_keeps_all_text() {
        let l = EvLine { gutter: Gutter::Plain, spans: vec![Span::raw("alpha beta gamma delta epsilon")] };
        let out = wrap(&[l], 14, &theme());
        let texts: Vec<String> = out.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect();
        assert_eq!(texts, vec!["  alpha beta ", "  gamma delta ", "  epsilon"]);
    }

    #[test]
    fn wrapped_list_items_hang_under_their_text() {
        let l = EvLine { gutter: Gutter::Plain, spans: vec![Span::raw("  - alpha beta gamma delta")] };
        let out = wrap(&[l], 16, &theme());
        let texts: Vec<String> = out.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect();
        assert_eq!(texts, vec!["    - alpha ", "      beta ", "      gamma ", "      delta"]);
        let l = EvLine { gutter: Gutter::Plain, spans: vec![Span::raw("12. one two three four")] };
        let out = wrap(&[l], 14, &theme());
        let texts: Vec<String> = out.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect();
        assert_eq!(texts, vec!["  12. one two ", "      three ", "      four"]);
    }

    #[test]
    fn matches_are_restyled() {
        let style = Style::default().add_modifier(Modifier::REVERSED);
        let l = mark_matches(&Line::from("Find the NEEDLE here"), "needle", style);
        let hit = l.spans.iter().find(|s| s.content == "NEEDLE").expect("match span");
        assert!(hit.style.add_modifier.contains(Modifier::REVERSED));
    }
}
