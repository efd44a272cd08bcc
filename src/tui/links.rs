//! Step references in prose: the step numbers a verdict, a candidate's findings or a method's
//! reason mention (`step 12`, `steps 3, 5 and 9`, `steps 4-6`, `#89`), found so that the views can
//! make them selectable and Enter can jump to them.
//!
//! A [`Linker`] turns prose into spans while counting the references in reading order; the view
//! that draws the text and the app that follows Enter build the same text, so both agree on which
//! reference is the `k`-th.

use std::ops::Range;
use std::sync::LazyLock;

use ratatui::style::Style;
use ratatui::text::Span;
use regex::Regex;

/// `step N`, `steps N, M and K`, `steps N-M`, `step N to M`, and `#N`.
static STEP_REF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:\bsteps?\s+\d+(?:(?:\s*,\s*|\s*,?\s+(?:and|or|to)\s+|\s*[-–]\s*)\d+)*|#\d+)")
        .expect("step reference pattern")
});

static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d+").expect("number pattern"));

/// The step references in `text`: the byte range of each number and the step it names, in
/// order. Numbers from `n_steps` on are not steps of this trajectory and are left out, and so is
/// anything inside double quotes (quoted trace text may say "step 3" of its own numbering).
pub fn step_refs(text: &str, n_steps: usize) -> Vec<(Range<usize>, usize)> {
    let mut out = Vec::new();
    for m in STEP_REF.find_iter(text) {
        let quotes = text[..m.start()].matches('"').count();
        if quotes % 2 == 1 {
            continue;
        }
        for n in NUMBER.find_iter(m.as_str()) {
            let Ok(step) = n.as_str().parse::<usize>() else { continue };
            if step < n_steps {
                out.push((m.start() + n.start()..m.start() + n.end(), step));
            }
        }
    }
    out
}

/// Builds spans with selectable step references and collects their targets in reading order.
#[derive(Debug, Clone)]
pub struct Linker {
    /// The step each reference names, in the order they were emitted.
    pub targets: Vec<usize>,
    selected: Option<usize>,
    selection: Style,
    n_steps: usize,
}

impl Linker {
    /// A linker for a trajectory of `n_steps` steps; the `selected`-th reference (0-based) is
    /// drawn with `selection`.
    pub fn new(n_steps: usize, selected: Option<usize>, selection: Style) -> Linker {
        Linker { targets: Vec::new(), selected, selection, n_steps }
    }

    /// A step number that is a reference in itself (a path, the decisive step).
    pub fn link(&mut self, step: usize, style: Style) -> Span<'static> {
        let style = self.next_style(step, style);
        Span::styled(step.to_string(), style)
    }

    /// Prose split into spans around its step references (see [`step_refs`]).
    pub fn prose(&mut self, text: &str, style: Style) -> Vec<Span<'static>> {
        let mut spans = Vec::new();
        let mut at = 0;
        for (range, step) in step_refs(text, self.n_steps) {
            if range.start > at {
                spans.push(Span::styled(text[at..range.start].to_string(), style));
            }
            let s = self.next_style(step, style.underlined());
            spans.push(Span::styled(text[range.clone()].to_string(), s));
            at = range.end;
        }
        if at < text.len() || spans.is_empty() {
            spans.push(Span::styled(text[at..].to_string(), style));
        }
        spans
    }

    fn next_style(&mut self, step: usize, style: Style) -> Style {
        let k = self.targets.len();
        self.targets.push(step);
        if self.selected == Some(k) { self.selection } else { style }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(text: &str) -> Vec<usize> {
        step_refs(text, 100).into_iter().map(|(_, s)| s).collect()
    }

    #[test]
    fn finds_the_forms_a_reason_uses() {
        assert_eq!(steps("step 12 (WebSurfer): the blind comparison also names step 12"), [12, 12]);
        assert_eq!(steps("Steps 3, 5 and 9 repeat it; steps 4-6 too"), [3, 5, 9, 4, 6]);
        assert_eq!(steps("uses 89 ← #89, pruned by step 7 to 8"), [89, 7, 8]);
        assert_eq!(steps("step 120 is past the end; 12 steps; stepwise 4"), Vec::<usize>::new());
        assert_eq!(steps(r#"lands on "step 4 of the guide", then step 5"#), [5], "quoted trace text is not ours");
    }

    #[test]
    fn spans_keep_the_text_and_mark_the_selected_reference() {
        let sel = Style::new().bold();
        let mut l = Linker::new(100, Some(1), sel);
        let spans = l.prose("step 3 then step 4.", Style::new());
        let text: String = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "step 3 then step 4.");
        assert_eq!(l.targets, [3, 4]);
        assert_eq!(spans.iter().filter(|s| s.style == sel).map(|s| s.content.as_ref()).collect::<Vec<_>>(), ["4"]);
    }
}
