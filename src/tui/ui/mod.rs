//! Drawing: a pure function of the [`App`] that writes nothing back. The layout and the views'
//! text come from [`super::view`] (the same functions the view model is computed with). The frame
//! is the header with the view tabs, the current view, the status line and the key hints; the help
//! overlay and the "terminal too small" message sit on top.

mod hierarchy;
mod views;

pub use super::view::{MIN_SIZE, layout, visible_offset, wrap_hanging};

use ratatui::Frame;
use ratatui::layout::{Margin, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Scrollbar, ScrollbarOrientation, ScrollbarState, Wrap};

use super::action::Action;
use super::app::{App, Mode, View, clean};
use super::view::{
    HEADER_NAME, frame_areas, header_name, help_lines, help_width, level_style, message_lines, overlay_width,
    tab_labels,
};
use crate::methods::falat::Stage;
use crate::text;
use unicode_width::UnicodeWidthChar;

/// Draws the whole screen: a pure function of the app (see [`App::prepare`]).
pub fn render(app: &App, f: &mut Frame) {
    let area = f.area();
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        return too_small(app, f, area);
    }
    let [header, body, status, hints] = frame_areas(area);
    render_header(app, f, header);
    views::render_view(app, f, body);
    render_status(app, f, status);
    render_hints(app, f, hints);
    match app.mode {
        Mode::Help => render_help(app, f, body),
        Mode::Messages => render_messages(app, f, body),
        _ => {}
    }
}

fn too_small(app: &App, f: &mut Frame, area: Rect) {
    let msg = format!(
        "terminal too small: {}x{}, falat needs at least {}x{} (q quits)",
        area.width, area.height, MIN_SIZE.0, MIN_SIZE.1
    );
    let height = 3.min(area.height);
    let row = Rect { y: area.y + (area.height - height) / 2, height, ..area };
    f.render_widget(Paragraph::new(msg).style(app.theme.warn).wrap(Wrap { trim: true }).centered(), row);
}

fn render_header(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    f.render_widget(Block::new().style(t.header), area);
    let mut spans = vec![Span::styled(HEADER_NAME, t.header.bold())];
    for (v, label) in tab_labels(app, area.width) {
        let style = if v == app.nav.view { t.tab_active } else { t.tab };
        spans.push(Span::raw(" "));
        spans.push(Span::styled(label, style));
    }
    let tabs = Line::from(spans);
    let name = header_name(app);
    let method =
        if app.method == crate::methods::Method::Falat { String::new() } else { format!(" · method {}", app.method) };
    let long = format!(
        "{name} · {} · {} steps · judge {}{method} ",
        app.traj.source,
        app.total_steps(),
        clean(&app.judge.name())
    );
    let room = (area.width as usize).saturating_sub(tabs.width() + 1);
    let info = [long, format!("{name}{method} "), format!("{name} ")]
        .into_iter()
        .find(|i| i.chars().count() <= room)
        // The name's end says the most (the run, the format, the extension): cut from the left.
        .unwrap_or_else(|| format!("{} ", clip_left(&name, room.saturating_sub(1))));
    f.render_widget(Paragraph::new(tabs), area);
    f.render_widget(Paragraph::new(info).style(t.header).right_aligned(), area);
}

/// `s` cut from the left to at most `max` characters, starting with `…` when cut; empty when
/// not even the ellipsis and one character fit.
pub fn clip_left(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    if max < 2 {
        return String::new();
    }
    let tail: String = s.chars().skip(n - (max - 1)).collect();
    format!("…{tail}")
}

/// The stage chips and the running run or the last message.
fn render_status(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    f.render_widget(Block::new().style(t.status), area);
    let mut spans = vec![Span::raw(" ")];
    let running_stage = app.runs.running.as_ref().filter(|r| r.target.is_pipeline()).and_then(|r| r.activity.stage());
    // Narrow terminals get one-letter stage chips, leaving the room to the message.
    let names = if area.width >= 110 { ["prior", "deps", "verify", "re-search"] } else { ["P", "D", "V", "R"] };
    let gap = if area.width >= 110 { "  " } else { " " };
    for (s, name) in Stage::ALL.into_iter().zip(names) {
        let (mark, style) = if running_stage == Some(s) {
            (spinner(app.ticks), t.info)
        } else if stage_done(app, s) && asked_nothing(app, s) {
            // A judging stage that asked no question (no candidate left to verify) ran but
            // checked nothing: a ✓ would read as "verified".
            ("–", t.dim)
        } else if stage_done(app, s) || running_stage.is_some_and(|r| s < r && ran_in_this_run(app, s)) {
            ("✓", t.ok)
        } else {
            ("·", t.dim)
        };
        spans.push(Span::styled(format!("{name}{}{mark}{gap}", if name.len() > 1 { " " } else { "" }), style));
    }
    spans.push(Span::styled("│ ", t.dim));
    match (&app.runs.running, &app.status) {
        (Some(r), _) => {
            let stage = r.activity.label();
            let mut count = if r.total > 0 { format!(" {}/{}", r.done, r.total) } else { String::new() };
            if r.questions.0 > 0 {
                count.push_str(&format!(
                    " · {} ({})",
                    crate::text::count(r.questions.0 as u64, "question", "questions"),
                    crate::text::count(r.questions.1, "call", "calls")
                ));
            }
            let took = if app.show_timings {
                format!(" · {:.1} s", r.started.elapsed().as_secs_f64())
            } else {
                String::new()
            };
            let what = if r.cancelling { "cancelling" } else { "running" };
            spans.push(Span::styled(format!("{what} {}: {stage}{count}{took}", r.target.label()), t.info));
            spans.push(Span::styled(format!(" · {} cancel", app.keymap.hint(Action::Cancel)), t.dim));
        }
        (None, Some(s)) => {
            let room = (area.width as usize).saturating_sub(Line::from(spans.clone()).width());
            // A cut status points to the messages overlay, which shows it whole (every status is
            // kept there).
            let more = app.keymap.hint(Action::Messages);
            let width = |x: &str| unicode_width::UnicodeWidthStr::width(x);
            let text = match &s.short {
                Some(short) if width(&s.text) > room => short,
                _ => &s.text,
            };
            spans.push(Span::styled(shorten(text, room, Some(&more)), level_style(app, s.level)));
        }
        (None, None) => spans
            .push(Span::styled(format!("ready · {} runs the whole pipeline", app.keymap.hint(Action::RunAll)), t.dim)),
    }
    f.render_widget(Paragraph::new(fit(Line::from(spans), area.width)), area);
}

/// The fewest columns of a cut status message the long pointer to the messages overlay leaves.
const MIN_KEPT: usize = 32;

/// A status message shortened to `room` columns: long paths lose their middle folders first
/// (`/home/ana/…/falat/overrides.json`), so the reason after a path stays on screen; what still
/// does not fit is cut with an ellipsis, followed by a pointer to the messages overlay when `more`
/// (its key) is given: `… — press ! for all messages`, or `… (press !)` when that would leave
/// less than [`MIN_KEPT`] columns of the message; the overlay shows the message whole.
pub fn shorten(text: &str, room: usize, more: Option<&str>) -> String {
    let width = |s: &str| unicode_width::UnicodeWidthStr::width(s);
    if width(text) <= room {
        return text.to_string();
    }
    let mut words: Vec<String> = text.split(' ').map(str::to_string).collect();
    loop {
        let joined = words.join(" ");
        if width(&joined) <= room {
            return joined;
        }
        // The longest path that can still lose a folder.
        let Some((i, short)) = words
            .iter()
            .enumerate()
            .filter_map(|(i, w)| shorter_path(w).map(|s| (i, s)))
            .max_by_key(|(i, _)| words[*i].chars().count())
        else {
            break;
        };
        words[i] = short;
    }
    // The pointer in words a new user reads; in a short room, shorter.
    let tail = match more {
        Some(k) if room >= MIN_KEPT + width(&format!("… — press {k} for all messages")) => {
            format!("… — press {k} for all messages")
        }
        Some(k) => format!("… (press {k})"),
        None => "…".to_string(),
    };
    let keep = room.saturating_sub(width(&tail));
    let joined = words.join(" ");
    let mut out = String::new();
    for c in joined.chars() {
        if width(&out) + c.width().unwrap_or(0) > keep {
            break;
        }
        out.push(c);
    }
    if keep == 0 {
        return text::clip(text, room);
    }
    // Cut between words, never inside one (a path between its folders), unless a single word
    // fills more than half the room (a long id: its start says more than nothing).
    if out.len() < joined.len() && !joined[out.len()..].starts_with(' ') {
        let start = out.rfind(' ').map_or(0, |i| i + 1);
        match out[start..].rfind('/') {
            Some(slash) => out.truncate(start + slash + 1),
            None => {
                if let Some(space) = out.rfind(' ').filter(|&i| width(&out[..i]) * 2 >= keep) {
                    out.truncate(space);
                }
            }
        }
    }
    let out = out.trim_end().trim_end_matches([',', ';', ':', '(', '·', '—', '-']).trim_end();
    format!("{out}{tail}")
}

/// A path with one more middle folder replaced by `…` (the first two parts and the last two
/// stay); `None` when it is not a path or cannot get shorter.
fn shorter_path(word: &str) -> Option<String> {
    let parts: Vec<&str> = word.split('/').collect();
    // ["", "home", ..., "dir", "file"]: keep the root and first folder, and the last two.
    if parts.len() < 5 || !word.contains('/') {
        return None;
    }
    let (head, rest) = parts.split_at(2);
    let (middle, tail) = rest.split_at(rest.len() - 2);
    let real: Vec<&&str> = middle.iter().filter(|p| **p != "…").collect();
    if real.is_empty() {
        return None;
    }
    // Drop the first real folder of the middle; the middle becomes one `…`.
    let kept: Vec<&str> = real.iter().skip(1).map(|p| **p).collect();
    let mut out: Vec<&str> = head.to_vec();
    out.push("…");
    out.extend(kept);
    out.extend(tail);
    Some(out.join("/"))
}

/// Whether the running pipeline run has already done stage `s` (its results arrive at its end).
fn ran_in_this_run(app: &App, s: Stage) -> bool {
    use crate::tui::job::RunTarget;
    match app.runs.running.as_ref().map(|r| r.target) {
        Some(RunTarget::All) => true,
        Some(RunTarget::Stage(_)) => true,
        Some(RunTarget::Rerun { from, .. }) => s >= from,
        _ => false,
    }
}

/// Whether stage `s` is one that asks the judge (verification, re-search) and its latest run
/// made no judge call.
fn asked_nothing(app: &App, s: Stage) -> bool {
    matches!(s, Stage::Verification | Stage::ReSearch)
        && app
            .results
            .pipeline
            .costs
            .iter()
            .rev()
            .find(|c| c.stage == crate::diagnosis::StageName::Falat(s))
            .is_some_and(|c| c.cost.calls == 0)
}

fn stage_done(app: &App, s: Stage) -> bool {
    let p = &app.results.pipeline;
    match s {
        Stage::SearchSpace => p.space.is_some(),
        Stage::Dependencies => p.deps.is_some(),
        Stage::Verification => p.verified.is_some(),
        Stage::ReSearch => p.research.is_some(),
    }
}

fn spinner(ticks: u64) -> &'static str {
    const FRAMES: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];
    FRAMES[(ticks % 8) as usize]
}

fn render_hints(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let line = match &app.mode {
        Mode::Search(q) => input_line(app, "/", q, "search step content", area.width as usize),
        Mode::Jump(n) => input_line(app, ":", n, "jump to step number", area.width as usize),
        Mode::Filter(q) => {
            input_line(app, "/", q, "filter candidates (step, agent, state, signal, text)", area.width as usize)
        }
        Mode::ConfirmQuit => Line::from(vec![
            Span::raw(" "),
            Span::styled("y", t.key),
            Span::styled(" quit and lose the unsaved overrides  ", t.dim),
            Span::styled("any other key", t.key),
            Span::styled(" stay", t.dim),
        ]),
        Mode::Help | Mode::Messages => Line::from(vec![
            Span::raw(" "),
            Span::styled(app.keymap.hint(Action::Down), t.key),
            Span::styled("/", t.dim),
            Span::styled(app.keymap.hint(Action::Up), t.key),
            Span::styled(" scroll  ", t.dim),
            Span::styled(app.keymap.hint(Action::Back), t.key),
            Span::styled(" close  ", t.dim),
            Span::styled(app.keymap.hint(Action::Quit), t.key),
            Span::styled(" quit", t.dim),
        ]),
        Mode::Normal => {
            let hints: Vec<(String, &str, &str, u8)> = hint_actions(app)
                .into_iter()
                .map(|(a, label, prio)| (app.keymap.hint(a), label, short_label(label), prio))
                .collect();
            hint_line(app, &hints, area.width as usize)
        }
    };
    f.render_widget(Paragraph::new(fit(line, area.width)), area);
}

/// The priority from which a footer hint is a main one: shortened before it is left out.
const MAIN_HINT: u8 = 5;

/// The shorter label a hint takes on a narrow terminal (`go to step` → `go`), or the label.
fn short_label(label: &str) -> &str {
    match label {
        "go to step" => "go",
        "step refs" | "next step ref" => "refs",
        "run all methods" => "run all",
        "jump back" => "jump",
        other => other,
    }
}

/// Key hints `(key, label, short label, priority)` on one line of `width` columns, in their
/// order. When they do not fit, the minor hints (priority below [`MAIN_HINT`]) are left out,
/// least important first; if the main ones still do not fit, they take their short labels (least
/// important first), then the least important of them are left out too. A hint is shown whole or
/// not at all: never cut inside a word.
fn hint_line(app: &App, hints: &[(String, &str, &str, u8)], width: usize) -> Line<'static> {
    let t = &app.theme;
    let cols = |s: &str| unicode_width::UnicodeWidthStr::width(s);
    let mut labels: Vec<&str> = hints.iter().map(|h| h.1).collect();
    let mut keep = vec![true; hints.len()];
    let total = |labels: &[&str], keep: &[bool]| {
        1 + hints
            .iter()
            .zip(labels)
            .zip(keep)
            .filter(|(_, k)| **k)
            .map(|((h, l), _)| cols(&h.0) + cols(l) + 3)
            .sum::<usize>()
    };
    // Least important first; among equals, the later one first.
    let mut order: Vec<usize> = (0..hints.len()).collect();
    order.sort_by_key(|&i| (hints[i].3, std::cmp::Reverse(i)));
    for &i in order.iter().filter(|&&i| hints[i].3 < MAIN_HINT) {
        if total(&labels, &keep) <= width {
            break;
        }
        keep[i] = false;
    }
    for &i in &order {
        if total(&labels, &keep) <= width {
            break;
        }
        labels[i] = hints[i].2;
    }
    for &i in &order {
        if total(&labels, &keep) <= width {
            break;
        }
        keep[i] = false;
    }
    let mut spans = vec![Span::raw(" ")];
    for ((h, label), _) in hints.iter().zip(&labels).zip(&keep).filter(|(_, k)| **k) {
        spans.push(Span::styled(h.0.clone(), t.key));
        spans.push(Span::styled(format!(" {label}  "), t.dim));
    }
    Line::from(spans)
}

/// The footer's hints with a priority (higher stays longer on a narrow terminal).
fn hint_actions(app: &App) -> Vec<(Action, &'static str, u8)> {
    let mut v = match app.nav.view {
        View::Hierarchy => vec![(Action::Enter, "drill", 6), (Action::Back, "back", 3), (Action::NextPane, "pane", 2)],
        View::Candidates => vec![
            (Action::Enter, "go to step", 6),
            (Action::Search, "filter", 8),
            (Action::Sort, "sort", 6),
            (Action::NextPane, "step refs", 3),
            (Action::Back, "back", 2),
        ],
        View::Roles => {
            vec![(Action::Enter, "go to step", 6), (Action::NextPane, "step refs", 4), (Action::Back, "back", 2)]
        }
        View::Verdict => vec![(Action::Enter, "go to step", 6), (Action::Down, "next step ref", 4)],
        View::Methods => vec![
            (Action::RunMethods, "run all methods", 7),
            (Action::Enter, "go to step", 6),
            (Action::NextPane, "step refs", 1),
            (Action::Back, "back", 2),
        ],
        View::Prior => vec![(Action::Back, "back", 2)],
    };
    if app.nav.history_len() > 0 {
        v.push((Action::JumpBack, "jump back", 2));
    }
    if app.nav.view != View::Candidates {
        v.push((Action::Search, "search", 4));
    }
    v.extend([
        (Action::RunAll, "run", 8),
        (Action::GoToDecisive, "verdict", 7),
        (Action::JumpToStep, "step", 3),
        (Action::Mark, "mark", 4),
        (Action::Exclude, "exclude", 1),
        (Action::Pin, "pin", 4),
        (Action::Undo, "undo", 1),
        (Action::Export, "export", 8),
        (Action::Copy, "copy", 8),
        (Action::Help, "help", 10),
        (Action::Quit, "quit", 9),
    ]);
    v
}

/// The prompt line of an input mode: the text typed, then what it is and the keys that end it,
/// as much as fits in `width` columns: the keys (enter, esc) stay longest, then what the input
/// is, shortened before its parenthesis, then left out (never cut inside a word).
fn input_line(app: &App, prompt: &str, text: &str, what: &str, width: usize) -> Line<'static> {
    let t = &app.theme;
    let cols = |s: &str| unicode_width::UnicodeWidthStr::width(s);
    let typed = clean(text);
    let used = 1 + cols(prompt) + cols(&typed) + 1;
    let brief = what.split(" (").next().unwrap_or(what);
    let tails = [
        format!("   {what} · enter ok · esc cancel"),
        format!("   {brief} · enter ok · esc cancel"),
        "   enter ok · esc cancel".to_string(),
        "   esc cancel".to_string(),
    ];
    let tail = tails.iter().find(|s| used + cols(s) <= width).cloned().unwrap_or_default();
    Line::from(vec![
        Span::styled(format!(" {prompt}"), t.key),
        Span::styled(typed, t.text),
        Span::styled("█", t.dim),
        Span::styled(tail, t.dim),
    ])
}

/// The help overlay: one scrollable column of [`help_lines`], centred over the body.
fn render_help(app: &App, f: &mut Frame, body: Rect) {
    let t = &app.theme;
    let lines = help_lines(app, body.width);
    let width = help_width(body.width);
    let height = (lines.len() as u16 + 2).min(body.height);
    let area = Rect { x: body.x + (body.width - width) / 2, y: body.y + (body.height - height) / 2, width, height };
    f.render_widget(Clear, area);
    let visible = height.saturating_sub(2);
    let max = lines.len().saturating_sub(visible as usize);
    let off = app.help_scroll.min(max);
    let pos = format!(" lines {}-{} of {} ", off + 1, (off + visible as usize).min(lines.len()), lines.len());
    let block = Block::bordered()
        .border_style(t.border_focus)
        .title(Line::styled(" Help ", t.title_focus))
        .title(Line::styled(pos, t.dim).right_aligned())
        .title_bottom(
            Line::styled(
                format!(
                    " {}/{} scroll · {} or {} closes ",
                    app.keymap.hint(Action::Down),
                    app.keymap.hint(Action::Up),
                    app.keymap.hint(Action::Back),
                    app.keymap.hint(Action::Help)
                ),
                t.dim,
            )
            .right_aligned(),
        )
        .style(t.text);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let shown: Vec<Line> = lines.into_iter().skip(off).take(visible as usize).map(|l| fit(l, inner.width)).collect();
    f.render_widget(Paragraph::new(shown), inner);
}

/// The messages overlay: [`message_lines`] in a scrollable box over the body.
fn render_messages(app: &App, f: &mut Frame, body: Rect) {
    let t = &app.theme;
    let lines = message_lines(app, app.view.screen.area.width.max(body.width));
    let width = overlay_width(body.width);
    let height = (lines.len() as u16 + 2).min(body.height);
    let area = Rect { x: body.x + (body.width - width) / 2, y: body.y + (body.height - height) / 2, width, height };
    f.render_widget(Clear, area);
    let visible = height.saturating_sub(2) as usize;
    let off = app.help_scroll.min(lines.len().saturating_sub(visible));
    let pos = format!(" {} ", crate::text::count(app.messages.len(), "message", "messages"));
    let keys = format!(
        " {}/{} scroll · {} or {} closes ",
        app.keymap.hint(Action::Down),
        app.keymap.hint(Action::Up),
        app.keymap.hint(Action::Back),
        app.keymap.hint(Action::Messages)
    );
    let block = Block::bordered()
        .border_style(t.border_focus)
        .title(Line::styled(" Messages ", t.title_focus))
        .title(Line::styled(pos, t.dim).right_aligned())
        .title_bottom(fit(Line::styled(keys, t.dim), width.saturating_sub(2)).right_aligned())
        .style(t.text);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let shown: Vec<Line> = lines.into_iter().skip(off).take(visible).map(|l| fit(l, inner.width)).collect();
    f.render_widget(Paragraph::new(shown), inner);
}

/// A bordered pane `width` columns wide with an exact title and right-aligned information: the
/// first of `right` (longest first) that fits beside the title, else the last one cut with an
/// ellipsis, so that the two never run into each other.
fn pane<'a>(app: &App, title: &'a str, focused: bool, right: &[String], width: u16) -> Block<'a> {
    let t = &app.theme;
    let mut b = Block::bordered()
        .border_style(if focused { t.border_focus } else { t.border })
        .title(Line::styled(format!(" {title} "), if focused { t.title_focus } else { t.title }));
    // Corners, the title with its spaces, one rule between, the info's spaces.
    let room = (width as usize).saturating_sub(title.chars().count() + 2 + 2 + 1 + 2);
    let info = right
        .iter()
        .find(|r| r.chars().count() <= room)
        .cloned()
        .or_else(|| right.last().filter(|_| room >= 4).map(|r| text::clip(r, room)));
    if let Some(info) = info.filter(|i| !i.is_empty()) {
        b = b.title_top(Line::styled(format!(" {info} "), t.dim).right_aligned());
    }
    b
}

/// The hint that a list scrolls: when its `len` rows do not fit in the `rows` of the bordered
/// pane `area`, a scrollbar (drawn like the evidence pane's) over the pane's right border shows
/// where the rows from `offset` sit in the list. Drawn over the border, it takes no column from
/// the rows.
fn list_scrollbar(f: &mut Frame, area: Rect, len: usize, rows: usize, offset: usize) {
    if len <= rows || rows == 0 {
        return;
    }
    let mut state = ScrollbarState::new(len - rows).position(offset);
    let bar = Scrollbar::new(ScrollbarOrientation::VerticalRight).begin_symbol(None).end_symbol(None);
    f.render_stateful_widget(bar, area.inner(Margin { horizontal: 0, vertical: 1 }), &mut state);
}

/// A line cut to `width` columns, ending in `…` when something was cut.
pub(crate) fn fit(line: Line<'static>, width: u16) -> Line<'static> {
    let width = width as usize;
    if line.width() <= width {
        return line;
    }
    let mut out = Vec::new();
    let mut used = 0;
    for span in line.spans {
        let mut content = String::new();
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            if used + w + 1 > width {
                break;
            }
            used += w;
            content.push(c);
        }
        let full = content.chars().count() == span.content.chars().count();
        out.push(Span::styled(content, span.style));
        if !full {
            break;
        }
    }
    let style = out.last().map(|s| s.style).unwrap_or_default();
    out.push(Span::styled("…", style));
    Line { spans: out, style: line.style, alignment: line.alignment }
}

/// A row as the selection shows it: padded to the width and restyled.
fn selected(mut line: Line<'static>, style: Style, width: u16) -> Line<'static> {
    for s in &mut line.spans {
        s.style = s.style.patch(style);
    }
    let w = line.width();
    if w < width as usize {
        line.spans.push(Span::styled(" ".repeat(width as usize - w), style));
    }
    line.style = style;
    line
}

/// A column cell `w` wide: clipped so that at least one space separates it from the next.
fn col(s: &str, w: usize) -> String {
    format!("{:<w$}", text::clip(s, w.saturating_sub(1)))
}

#[cfg(test)]
mod tests {
    use super::{clip_left, shorten};

    #[test]
    fn a_file_name_too_long_for_the_header_loses_its_start() {
        let name = "exports/2025-06-01/r12_long_wrong_month.openai.json";
        assert_eq!(clip_left(name, 80), name);
        assert_eq!(clip_left(name, 33), "…r12_long_wrong_month.openai.json");
        assert_eq!(clip_left(name, 33).chars().count(), 33);
        assert_eq!(clip_left("ab", 1), "");
        assert_eq!(clip_left("日本語のファイル.json", 6), "….json");
    }

    #[test]
    fn a_long_status_loses_the_middle_of_its_paths_first_then_ends_in_an_ellipsis() {
        let msg = "could not save: cannot replace /home/ana/data/shared/runs/trace.json: Permission denied";
        assert_eq!(shorten(msg, 200, Some("!")), msg);
        assert_eq!(
            shorten(msg, 73, Some("!")),
            "could not save: cannot replace /home/…/runs/trace.json: Permission denied"
        );
        assert_eq!(shorten(msg, 40, Some("!")), "could not save: cannot… (press !)");
        // With room, the pointer says what the key does.
        assert_eq!(shorten(msg, 64, Some("!")), "could not save: cannot replace /… — press ! for all messages");
        assert_eq!(shorten(msg, 40, None), "could not save: cannot replace /home/…/…");
    }

    #[test]
    fn a_status_is_cut_between_words_and_a_single_long_word_by_characters() {
        let msg = "finished all stages in 20 ms: decisive step 61 by Orchestrator (hallucination)";
        assert_eq!(shorten(msg, 60, Some("!")), "finished all stages in 20 ms… — press ! for all messages");
        assert_eq!(shorten(msg, 50, Some("!")), "finished all stages in 20 ms: decisive… (press !)");
        // No dangling punctuation before the ellipsis.
        assert_eq!(shorten(msg, 41, Some("!")), "finished all stages in 20 ms… (press !)");
        let id = "run-0123456789abcdef0123456789abcdef0123456789";
        assert_eq!(shorten(id, 20, Some("!")), "run-01234… (press !)");
    }
}
