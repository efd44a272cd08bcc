//! Step references as links: the steps a view's text names, taken from the data that wrote the
//! text (a diagnosis's decisive step, ranking and path, a pruning's `by_step`, the
//! [`Part::Step`]s of a claim or of the reason), never read back out of prose.
//!
//! A [`Linker`] builds a view's lines and records where each link is (line and span, before
//! wrapping) in reading order; [`super::view::wrap_linked`] then wraps the lines and gives every
//! link its row and columns. The view model ([`super::view::ViewModel`]) and the drawing build the
//! same text with the same linker, so both agree on which reference is the `k`-th.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::diagnosis::Part;

/// Where a link sits in a linker's lines, before wrapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkAt {
    /// The step it names, 0-based.
    pub step: usize,
    /// The line, 0-based.
    pub line: usize,
    /// The span of that line holding the step number.
    pub span: usize,
}

/// Builds lines whose step numbers are links, and records the links in reading order.
#[derive(Debug, Clone)]
pub struct Linker {
    /// The lines built so far.
    pub lines: Vec<Line<'static>>,
    /// The links, in the order they were emitted.
    pub links: Vec<LinkAt>,
    /// Links of the line being built: (span, step).
    pending: Vec<(usize, usize)>,
    selected: Option<usize>,
    selection: Style,
    n_steps: usize,
}

impl Linker {
    /// A linker for a trajectory of which `n_steps` steps can be shown; the `selected`-th link
    /// (0-based) is drawn with `selection`.
    pub fn new(n_steps: usize, selected: Option<usize>, selection: Style) -> Linker {
        Linker { lines: Vec::new(), links: Vec::new(), pending: Vec::new(), selected, selection, n_steps }
    }

    /// The step each link names, in reading order.
    pub fn targets(&self) -> Vec<usize> {
        self.links.iter().map(|l| l.step).collect()
    }

    /// Appends a step number that is a link to `spans`, the spans of the next line
    /// [`Linker::push`] adds.
    pub fn link(&mut self, spans: &mut Vec<Span<'static>>, step: usize, style: Style) {
        let k = self.links.len() + self.pending.len();
        self.pending.push((spans.len(), step));
        let style = if self.selected == Some(k) { self.selection } else { style };
        spans.push(Span::styled(step.to_string(), style));
    }

    /// Appends rendered parts to `spans`: the text as it is (cleaned for the screen), each step
    /// that can be shown as an underlined link.
    pub fn parts(&mut self, spans: &mut Vec<Span<'static>>, parts: &[Part], style: Style) {
        for p in parts {
            match p {
                Part::Step(s) if *s < self.n_steps => self.link(spans, *s, style.underlined()),
                p => spans.push(Span::styled(crate::tui::app::clean(&p.as_text()), style)),
            }
        }
    }

    /// Adds a line made of `spans` (with the links appended to them since the last line).
    pub fn push(&mut self, spans: Vec<Span<'static>>) {
        let line = self.lines.len();
        self.links.extend(self.pending.drain(..).map(|(span, step)| LinkAt { step, line, span }));
        self.lines.push(Line::from(spans));
    }

    /// Adds a line without links.
    pub fn push_line(&mut self, line: Line<'static>) {
        debug_assert!(self.pending.is_empty(), "links wait for their line");
        self.lines.push(line);
    }

    /// Adds lines without links.
    pub fn extend(&mut self, lines: impl IntoIterator<Item = Line<'static>>) {
        for l in lines {
            self.push_line(l);
        }
    }

    /// Inserts a line without links before the others.
    pub fn prepend(&mut self, line: Line<'static>) {
        self.lines.insert(0, line);
        for l in &mut self.links {
            l.line += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_come_from_the_parts_and_the_selected_one_is_drawn_selected() {
        let sel = Style::new().bold();
        let mut l = Linker::new(100, Some(1), sel);
        let parts =
            [Part::Text("step ".into()), Part::Step(3), Part::Text(" then step 4 and ".into()), Part::Step(120)];
        let mut spans = vec![Span::raw("  ")];
        l.parts(&mut spans, &parts, Style::new());
        l.link(&mut spans, 7, Style::new());
        l.push(spans);
        let text: String = l.lines[0].spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "  step 3 then step 4 and 1207");
        // "step 4" in the prose is not data, and step 120 is past the shown steps.
        assert_eq!(l.targets(), [3, 7]);
        assert_eq!(l.links[1], LinkAt { step: 7, line: 0, span: 5 });
        assert_eq!(l.lines[0].spans[5].style, sel);
        l.prepend(Line::raw("note"));
        assert_eq!(l.links[0], LinkAt { step: 3, line: 1, span: 2 });
    }
}
