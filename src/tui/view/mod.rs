//! The view model: what input handling needs to know about the screen, computed from the app's
//! state and the terminal's size before input is handled (the shape of gitui's components, which
//! keep their state apart from drawing). It holds the layout ([`Screen`]), the current view's text
//! length and its links (each step reference with the row and columns it occupies), the list's
//! rows, the overlays' lengths and the header's tabs. The app reads it to page, scroll, follow
//! links and hit mouse clicks; `ui` draws the same state with the same builders ([`text`]), so the
//! app never calls drawing code to learn a layout.
//!
//! Adding a view: a [`View`] variant (its action and default key) and its text in
//! [`text::view_text`]: a view that is its text is then laid out, scrolled, linked and drawn as
//! it is; a view with a list or panes of its own also gets its arm in [`layout`] and its drawing in
//! `ui::views`.

pub mod text;

use std::ops::Range;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Block;
use unicode_width::UnicodeWidthChar;

use super::action::{Action, Group};
use super::app::{App, Level, Mode, View, clean};
use super::links::LinkAt;
use crate::methods::Method;

/// Where things are on the screen for a terminal size: computed by [`layout`], shared by the
/// view model and the drawing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Screen {
    /// The whole terminal.
    pub area: Rect,
    /// The hierarchy view's panes: phases, steps, evidence, dependencies.
    pub panes: [Rect; 4],
    /// Visible rows of the phases list.
    pub phase_rows: u16,
    /// Visible rows of the steps list.
    pub step_rows: u16,
    /// The evidence text area (width, height).
    pub evidence: (u16, u16),
    /// Visible rows of the dependencies list.
    pub edge_rows: u16,
    /// The list pane of the candidates, roles or methods view (rows start one below its top).
    pub view_list: Rect,
    /// Visible rows of that list.
    pub list_rows: u16,
    /// Visible lines of the help or messages overlay.
    pub help_rows: u16,
    /// The text area inside the border of the view's scrollable text: the verdict, the prior,
    /// the candidate detail, the method details (empty in the other views).
    pub text: Rect,
    /// The roles view's header, above its list (empty in the other views).
    pub head: Rect,
}

/// A step reference of the current view's text and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The step it names, 0-based.
    pub step: usize,
    /// Its row in the wrapped text, 0-based: of the scrollable text ([`Screen::text`]), or of
    /// the roles view's header ([`Screen::head`]).
    pub line: usize,
    /// The columns it occupies on that row, from the text's left edge.
    pub cols: Range<u16>,
}

/// What input handling needs of the current frame, computed by [`ViewModel::compute`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ViewModel {
    /// The layout.
    pub screen: Screen,
    /// Lines of the view's scrollable text, wrapped to its width (0 in the hierarchy and roles
    /// views).
    pub text_lines: usize,
    /// The step references of the view's text, in reading order.
    pub links: Vec<Link>,
    /// The steps the list's rows stand for, in the order shown (candidates, roles, methods: the
    /// step each row names, `None` for a method that named none or has not run).
    pub rows: Vec<Option<usize>>,
    /// Lines of the help overlay at the terminal's width.
    pub help_lines: usize,
    /// Lines of the messages overlay at the terminal's width.
    pub message_lines: usize,
    /// The header's view tabs and the columns each occupies.
    pub tabs: Vec<(View, Range<u16>)>,
}

impl ViewModel {
    /// The view model of the app's state on a terminal of `area`.
    pub fn compute(app: &App, area: Rect) -> ViewModel {
        let screen = layout(app, area);
        let scrolls = text::scrolls(app.nav.view);
        let width = if scrolls { screen.text.width } else { screen.head.width };
        let linked = text::view_text(app);
        let (wrapped, links) = wrap_linked(linked.lines, &linked.links, width);
        let rows = match app.nav.view {
            View::Candidates => {
                let d = app.results.diagnosis.as_ref();
                let cands = d.map_or(&[][..], |d| d.candidates.as_slice());
                app.cands.rows().iter().map(|&k| cands.get(k).map(|c| c.step)).collect()
            }
            View::Roles => app.role_rows().into_iter().map(|(s, _)| Some(s)).collect(),
            View::Methods => {
                Method::ALL.iter().map(|m| app.results.methods.get(m).and_then(|d| d.decisive_step)).collect()
            }
            _ => Vec::new(),
        };
        let mut tabs = Vec::new();
        let mut start = HEADER_NAME.chars().count();
        for (v, label) in tab_labels(app, area.width) {
            start += 1;
            let end = start + label.chars().count();
            tabs.push((v, start as u16..end as u16));
            start = end;
        }
        ViewModel {
            screen,
            text_lines: if scrolls { wrapped.len() } else { 0 },
            links,
            rows,
            help_lines: help_lines(app, area.width).len(),
            message_lines: message_lines(app, area.width).len(),
            tabs,
        }
    }

    /// The step each link names, in reading order.
    pub fn targets(&self) -> Vec<usize> {
        self.links.iter().map(|l| l.step).collect()
    }

    /// The number of rows of the view's list: the links in the verdict view, whose selection
    /// moves through them.
    pub fn list_len(&self, view: View) -> usize {
        if view == View::Verdict { self.links.len() } else { self.rows.len() }
    }

    /// The view whose tab is at column `x` of the header row.
    pub fn tab_at(&self, x: u16) -> Option<View> {
        self.tabs.iter().find(|(_, r)| r.contains(&x)).map(|(v, _)| *v)
    }
}

/// Where things are on a screen of `area` for the app's view: a pure function, shared by
/// drawing and by the view model.
pub fn layout(app: &App, area: Rect) -> Screen {
    let mut s = Screen { area, ..Screen::default() };
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        return s;
    }
    let [_, body, _, _] = frame_areas(area);
    let rows = |r: Rect| r.height.saturating_sub(2);
    s.panes = pane_areas(body);
    s.phase_rows = rows(s.panes[0]);
    s.step_rows = rows(s.panes[1]);
    let (_, _, text) = evidence_areas(s.panes[2]);
    s.evidence = (text.width, text.height);
    s.edge_rows = edge_areas(s.panes[3])[2].height;
    let bordered = |r: Rect| Block::bordered().inner(r);
    match app.nav.view {
        View::Candidates => {
            let [_, list, detail] = candidates_areas(app, body);
            s.view_list = list;
            s.text = bordered(detail);
        }
        View::Roles => [s.head, s.view_list] = roles_areas(app, body),
        View::Methods => {
            let (_, _, b, detail) = methods_areas(body);
            s.view_list = Rect { y: b.y.saturating_sub(1), height: b.height + 2, ..b };
            s.text = bordered(detail);
        }
        View::Hierarchy => {}
        // A view that is its text (the prior, the verdict): one bordered pane.
        _ => s.text = bordered(body),
    }
    s.list_rows = rows(s.view_list);
    let overlay = match app.mode {
        Mode::Messages => message_lines(app, area.width).len(),
        _ => help_lines(app, area.width).len(),
    };
    s.help_rows = (overlay as u16 + 2).min(body.height).saturating_sub(2);
    s
}

/// The hierarchy view's panes: phases, steps, evidence, dependencies.
pub fn pane_areas(area: Rect) -> [Rect; 4] {
    let [left, right] = Layout::horizontal([Constraint::Percentage(42), Constraint::Percentage(58)]).areas(area);
    let [phases, steps] = Layout::vertical([Constraint::Percentage(34), Constraint::Percentage(66)]).areas(left);
    let [evidence, edges] = Layout::vertical([Constraint::Percentage(68), Constraint::Percentage(32)]).areas(right);
    [phases, steps, evidence, edges]
}

/// The evidence pane's header and text areas (the text leaves a column for the scrollbar).
pub fn evidence_areas(pane: Rect) -> (Rect, Rect, Rect) {
    let inner = Block::bordered().inner(pane);
    let [head, body] = Layout::vertical([Constraint::Length(3), Constraint::Min(1)]).areas(inner);
    (head, body, Rect { width: body.width.saturating_sub(1), ..body })
}

/// The dependencies pane's path row, header row and list rows.
pub fn edge_areas(pane: Rect) -> [Rect; 3] {
    let inner = Block::bordered().inner(pane);
    Layout::vertical([Constraint::Length(1), Constraint::Length(1), Constraint::Min(0)]).areas(inner)
}

/// The candidates view's note ([`text::candidates_note`], no rows without one), list and detail areas.
pub fn candidates_areas(app: &App, area: Rect) -> [Rect; 3] {
    // The note on a named step that is not a candidate, as tall as it wraps (at most a quarter).
    let note = wrap_hanging(text::candidates_note(app), area.width).len() as u16;
    let [note, rest] =
        Layout::vertical([Constraint::Length(note.min(area.height / 4)), Constraint::Min(0)]).areas(area);
    let [list, detail] = Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(rest);
    [note, list, detail]
}

/// The roles view's header and list areas: the header as tall as its wrapped lines (at least
/// three rows, at most a third of the area), so that a long re-search reason does not hide the
/// dependency path below it.
pub fn roles_areas(app: &App, area: Rect) -> [Rect; 2] {
    let head = wrap_hanging(text::roles_head(app).lines, area.width).len() as u16;
    let head = head.clamp(3, (area.height / 3).max(3));
    Layout::vertical([Constraint::Length(head), Constraint::Min(3)]).areas(area)
}

/// The methods view's list pane, its header row, its rows, and the detail pane.
pub fn methods_areas(area: Rect) -> (Rect, Rect, Rect, Rect) {
    let rows = Method::ALL.len() as u16;
    let [list, detail] = Layout::vertical([Constraint::Length(rows + 3), Constraint::Min(3)]).areas(area);
    let inner = Block::bordered().inner(list);
    let [head, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(inner);
    (list, head, body, detail)
}

/// Word-wraps lines to `width` columns with a hanging indent: a continuation starts under the
/// first empty span when the line has one (it marks the start of prose split into several spans
/// by its step references), else under the line's last span (the value after a label, the
/// evidence after a signal), or under its leading spaces when it is one span; a hang wider than
/// half the width falls back to that.
pub fn wrap_hanging(lines: Vec<Line<'static>>, width: u16) -> Vec<Line<'static>> {
    wrap_linked(lines, &[], width).0
}

/// [`wrap_hanging`], and where each of `links` (spans of `lines`) lands: its row in the wrapped
/// lines and its columns there, in the order given.
pub fn wrap_linked(lines: Vec<Line<'static>>, links: &[LinkAt], width: u16) -> (Vec<Line<'static>>, Vec<Link>) {
    let width = width as usize;
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut placed: Vec<Link> = links.iter().map(|l| Link { step: l.step, line: 0, cols: 0..0 }).collect();
    let cw = |c: char| c.width().unwrap_or(0);
    for (i, line) in lines.into_iter().enumerate() {
        // The links of this line: the first character of their span and their width.
        let starts: Vec<(usize, usize, usize)> = links
            .iter()
            .enumerate()
            .filter(|(_, l)| l.line == i && l.span < line.spans.len())
            .map(|(k, l)| {
                let at = line.spans[..l.span].iter().map(|s| s.content.chars().count()).sum();
                (k, at, line.spans[l.span].width())
            })
            .collect();
        if line.width() <= width || width < 8 {
            let cells: Vec<char> = line.spans.iter().flat_map(|s| s.content.chars()).collect();
            for &(k, at, w) in &starts {
                let col: usize = cells[..at].iter().map(|c| cw(*c)).sum();
                placed[k] = Link { step: placed[k].step, line: out.len(), cols: col as u16..(col + w) as u16 };
            }
            out.push(line);
            continue;
        }
        let lead = |s: &str| s.chars().take_while(|c| *c == ' ').count();
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        // An empty span marks where continuations hang (prose with links is many spans).
        let marker = line.spans.iter().skip(1).position(|s| s.content.is_empty()).map(|i| i + 1);
        let before_last: usize = match marker {
            Some(m) => line.spans[..m].iter().map(|s| s.width()).sum(),
            None => line.spans.iter().rev().skip(1).map(|s| s.width()).sum(),
        };
        let hang_span = marker.and_then(|m| line.spans.get(m + 1)).or(line.spans.last());
        let hang = if line.spans.len() > 1 && before_last <= width / 2 {
            before_last + hang_span.map_or(0, |s| lead(&s.content))
        } else {
            lead(&text)
        };
        let hang = if hang > width / 2 { lead(&text).min(width / 2) } else { hang };
        // Characters with their styles, laid out greedily; breaks at the last space that fits.
        let cells: Vec<(char, Style)> =
            line.spans.iter().flat_map(|s| s.content.chars().map(move |c| (c, s.style))).collect();
        let mut start = 0;
        let mut first = true;
        while start < cells.len() {
            let avail = if first { width } else { width - hang };
            let (mut end, mut used, mut brk) = (start, 0, None);
            while end < cells.len() {
                let w = cw(cells[end].0);
                if used + w > avail {
                    break;
                }
                if cells[end].0 == ' ' && end > start {
                    brk = Some(end);
                }
                used += w;
                end += 1;
            }
            let cut = if end < cells.len() { brk.filter(|b| *b > start).unwrap_or(end.max(start + 1)) } else { end };
            let indent = if first { 0 } else { hang };
            for &(k, at, w) in starts.iter().filter(|(_, at, _)| (start..cut).contains(at)) {
                let col = indent + cells[start..at].iter().map(|(c, _)| cw(*c)).sum::<usize>();
                placed[k] = Link { step: placed[k].step, line: out.len(), cols: col as u16..(col + w) as u16 };
            }
            let mut spans: Vec<Span<'static>> = Vec::new();
            for (c, st) in &cells[start..cut] {
                match spans.last_mut() {
                    Some(last) if last.style == *st => last.content.to_mut().push(*c),
                    _ => spans.push(Span::styled(c.to_string(), *st)),
                }
            }
            if !first {
                spans.insert(0, Span::raw(" ".repeat(hang)));
            }
            out.push(Line { spans, style: line.style, alignment: line.alignment });
            start = cut;
            while start < cells.len() && cells[start].0 == ' ' {
                start += 1;
            }
            first = false;
        }
    }
    (out, placed)
}

/// The smallest terminal the layout works in.
pub const MIN_SIZE: (u16, u16) = (60, 15);

/// The frame's rows: header, body, status line, key hints.
pub fn frame_areas(area: Rect) -> [Rect; 4] {
    Layout::vertical([Constraint::Length(1), Constraint::Min(5), Constraint::Length(1), Constraint::Length(1)])
        .areas(area)
}

/// The first visible row of a list `len` long with `rows` rows, from the one shown before so
/// that the list scrolls only as far as needed to keep `sel` visible.
pub fn visible_offset(before: usize, sel: usize, len: usize, rows: usize) -> usize {
    if rows == 0 {
        return 0;
    }
    let off = if sel < before {
        sel
    } else if sel >= before + rows {
        sel + 1 - rows
    } else {
        before
    };
    off.min(len.saturating_sub(rows))
}

/// The program's name at the left of the header, before the tabs.
pub const HEADER_NAME: &str = " falat ";

/// The fewest columns of the trace's name ([`header_name`]) the header keeps beside the tabs with
/// their titles: a longer name is cut to make room for the titles (the header then shows its end
/// after `…`); with less room than this the tabs go by their keys instead.
pub const HEADER_NAME_MIN: usize = 16;

/// The view tabs' labels, in header order, for a header `width` columns wide: each tab's key and
/// title when at least [`HEADER_NAME_MIN`] columns of the trace's name ([`header_name`]), or the
/// whole of a shorter one, still fit beside them (a longer name is then cut, not the titles);
/// else the current view's tab with its title and the others by their key only (` 2 `), so that
/// a narrow terminal (80 columns) keeps the file name in sight.
pub fn tab_labels(app: &App, width: u16) -> Vec<(View, String)> {
    let full = |v: View| format!(" {} {} ", app.keymap.hint(v.action()), v.title());
    let labels: Vec<(View, String)> = View::ALL.into_iter().map(|v| (v, full(v))).collect();
    let used = HEADER_NAME.chars().count() + labels.iter().map(|(_, l)| l.chars().count() + 1).sum::<usize>();
    let name = header_name(app).chars().count().min(HEADER_NAME_MIN);
    // The name, a space before it and one after; before the first frame (no width yet) whole.
    if width == 0 || used + name + 2 <= width as usize {
        return labels;
    }
    View::ALL
        .into_iter()
        .map(|v| (v, if v == app.nav.view { full(v) } else { format!(" {} ", app.keymap.hint(v.action())) }))
        .collect()
}

/// The name the header gives the open trace: its file name, with the run's id after `›` unless
/// the file is named after it (a file of several runs, `--trajectory`, shows which one is open);
/// sanitised.
pub fn header_name(app: &App) -> String {
    let mut name = app.trace.file_name().map(|n| clean(&n.to_string_lossy())).unwrap_or_default();
    let stem = app.trace.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if !app.traj.id.is_empty() && app.traj.id != stem {
        name = format!("{name} › {}", clean(&app.traj.id));
    }
    name
}

/// The style of a status message of level `l`.
pub fn level_style(app: &App, l: Level) -> Style {
    let t = &app.theme;
    match l {
        Level::Info => t.info,
        Level::Ok => t.ok,
        Level::Warn => t.warn,
        Level::Error => t.error,
    }
}

/// The lines of the help overlay for a terminal `width` columns wide, generated from the key map:
/// every action by group, then the legend of the markers and of the paper's terms behind the
/// plain labels. Nothing is cut: a text too long for the overlay wraps under its own column, and
/// keys too long for theirs take a line of their own above their text.
pub fn help_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut lines = Vec::new();
    for g in [Group::Navigate, Group::Views, Group::Pipeline, Group::Overrides, Group::General] {
        lines.push(Line::styled(g.title().to_string(), t.title_focus));
        for a in Action::ALL.into_iter().filter(|a| a.group() == g) {
            lines.extend(help_entry(app, &app.keymap.all_keys(a), a.describe()));
        }
        lines.push(Line::raw(""));
    }
    lines.push(Line::styled("roles (roles view, step tags)", t.title_focus));
    for (role, what) in [
        ("ROOT_CAUSE", "the step that generates the error: the decisive step"),
        ("PROPAGATION", "a later step that inherits the error and passes it on"),
        ("SYMPTOM", "a step where the error becomes visible (a traceback, a wrong final answer)"),
        ("CONTRIBUTING", "a step that made the error more likely without generating it"),
    ] {
        lines.extend(help_entry(app, role, what));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("numbers", t.title_focus));
    for (term, what) in [
        (
            "score",
            "candidates: how strong the findings that made the step a candidate are (their weights \
             combined by noisy-or), 0-1; not a probability",
        ),
        (
            "P",
            "verdict (ranker P): the fitted ranker's probability that the step is the decisive error, 0-1; \
             the P of all steps of a run add up to 1",
        ),
        (
            "confidence",
            "verdict: the chance that the named step is right, 0-1: its P calibrated on the methods' past \
             decisions on labelled runs (docs/RANKER.md); at most 0.20 when no candidate passed \
             verification, low below 0.30",
        ),
        (
            "named, lower P",
            "the verdict comes from verification first: the earliest candidate that passed independence \
             and sufficiency is named, and P decides only when verification tells no candidates apart \
             (all or none passed); so the named step leads the ranked list even when another has a \
             higher P",
        ),
    ] {
        lines.extend(help_entry(app, term, what));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("columns", t.title_focus));
    for (col, what) in [
        ("phase suspicion", "phases: 0-1 with a bar of four cells, how likely the phase holds the error (prior stage)"),
        (
            "checks ✓✓✗",
            "candidates, three marks, each passed ✓ or failed ✗: error independence (the step brings its own \
             error, not one it inherits), counterfactual sufficiency (correcting it alone would have fixed \
             the outcome), temporal precedence (it is the one verification named: the earliest that \
             passed the first two, or the ranking's pick among them). A verified candidate passed the first two",
        ),
        ("vs gold, vs falat", "methods: ✓ same step · ≈ same agent, other step · ≠ neither · · nothing to compare"),
    ] {
        lines.extend(help_entry(app, col, what));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("markers (one meaning each)", t.title_focus));
    for (mark, what) in [
        ("▶", "the phase / candidate / step (once you override) holding the machine's verdict"),
        ("◆ ◇", "candidate kept / pruned"),
        ("▲", "a step with an error or a failed execution"),
        ("△", "a step the trace marks with a warning (Langfuse level WARNING); its text says it"),
        (
            "⋯",
            "after the step number: a record of the file next to this step was not read (its evidence says which line)",
        ),
        ("★", "pinned by you"),
        ("+", "marked by you"),
        ("⊘", "excluded by you"),
        ("✓ ✗", "a check passed / failed"),
        ("–", "on the status line: a stage that ran but asked the judge nothing (verify: no candidate left)"),
        ("≈ ≠", "methods: same agent at another step / neither step nor agent"),
        ("↓ more", "on a border: the text goes on below (ctrl-d scrolls it)"),
    ] {
        lines.extend(help_entry(app, mark, what));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("dependencies (paper terms in brackets)", t.title_focus));
    for (label, what) in [
        ("reuses values", "a later step reuses a value of the earlier one (semantic edge)"),
        ("tool result etc.", "tool result, delegation, parent, runs the code: set by the framework (protocol edge)"),
        ("strength", "0-1: protocol 1; semantic by how rare the shared values are"),
        ("follows it", "the later step adopts its output (follow_up)"),
        ("repeats it", "repeats it without new evidence (redundancy)"),
        ("not influenced", "does not use its output (no_influence)"),
        ("changes the error", "brings a new deviation (error_shift)"),
        ("corrects it", "repairs the deviation (correction)"),
        ("dead end", "its output is never used again (dead_end)"),
    ] {
        lines.extend(help_entry(app, label, what));
    }
    wrap_hanging(lines, help_width(width).saturating_sub(2))
}

/// The width of the help's key column, its two leading spaces included.
const HELP_KEYS: usize = 21;

/// One entry of the help: the keys (or the term) in their column, then what they do; keys wider
/// than the column go on a line of their own, the text on the next one under its column.
fn help_entry(app: &App, keys: &str, what: &str) -> Vec<Line<'static>> {
    let t = &app.theme;
    let text = Span::styled(what.to_string(), t.text);
    if keys.chars().count() < HELP_KEYS - 2 {
        return vec![Line::from(vec![Span::styled(format!("  {keys:<w$}", w = HELP_KEYS - 2), t.key), text])];
    }
    vec![
        Line::from(vec![Span::styled(format!("  {keys}"), t.key)]),
        Line::from(vec![Span::raw(" ".repeat(HELP_KEYS)), text]),
    ]
}

/// The help overlay's width on a terminal `width` columns wide.
pub fn help_width(width: u16) -> u16 {
    100.min(width)
}

/// The lines of the messages overlay for a terminal `width` columns wide: every status message
/// of the session, oldest first, whole (wrapped), each with its level.
pub fn message_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let inner = overlay_width(width).saturating_sub(2);
    let mut lines = Vec::new();
    for m in &app.messages {
        let level = match m.level {
            Level::Info => "info ",
            Level::Ok => "ok   ",
            Level::Warn => "warn ",
            Level::Error => "error",
        };
        let line = Line::from(vec![
            Span::styled(format!("{level} "), level_style(app, m.level)),
            Span::raw(""),
            Span::styled(m.text.clone(), app.theme.text),
        ]);
        lines.extend(wrap_hanging(vec![line], inner));
    }
    if lines.is_empty() {
        lines.push(Line::styled("no messages yet", app.theme.dim));
    }
    lines
}

/// The messages overlay's width on a terminal `width` columns wide.
pub fn overlay_width(width: u16) -> u16 {
    120.min(width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_link_keeps_its_row_and_columns_under_the_hanging_indent() {
        let spans = vec![
            Span::raw("  why: "),
            Span::raw(""),
            Span::raw("the value first appears at step "),
            Span::raw("12"),
            Span::raw(" and is copied by step "),
            Span::raw("7"),
            Span::raw("."),
        ];
        let links = [LinkAt { step: 12, line: 1, span: 3 }, LinkAt { step: 7, line: 1, span: 5 }];
        let lines = vec![Line::raw("head"), Line::from(spans)];
        let (out, placed) = wrap_linked(lines, &links, 40);
        let rows: Vec<String> = out.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect();
        assert_eq!(rows, ["head", "  why: the value first appears at step", "       12 and is copied by step 7."]);
        assert_eq!(placed[0], Link { step: 12, line: 2, cols: 7..9 });
        assert_eq!(placed[1], Link { step: 7, line: 2, cols: 32..33 });
        // Unwrapped (too narrow to wrap), the columns are those of the whole line.
        let (_, placed) = wrap_linked(
            vec![Line::raw(""), Line::from(vec![Span::raw("ab "), Span::raw("3")])],
            &[LinkAt { step: 3, line: 1, span: 1 }],
            4,
        );
        assert_eq!(placed, [Link { step: 3, line: 1, cols: 3..4 }]);
    }
}
