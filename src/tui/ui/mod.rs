//! Drawing: a pure function of the [`App`] (plus the layout memo in [`App::ui`]). The frame is
//! the header with the view tabs, the current view, the status line and the key hints; the help
//! overlay and the "terminal too small" message sit on top.

mod hierarchy;
mod views;

use std::cell::Cell;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::action::{Action, Group};
use super::app::{App, Level, Mode, View, clean};
use crate::pipeline::Stage;
use crate::text;

/// The smallest terminal the layout works in.
pub const MIN_SIZE: (u16, u16) = (60, 15);

/// Draws the whole screen.
pub fn render(app: &App, f: &mut Frame) {
    let area = f.area();
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        return too_small(app, f, area);
    }
    let [header, body, status, hints] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(5), Constraint::Length(1), Constraint::Length(1)])
            .areas(area);
    render_header(app, f, header);
    views::render_view(app, f, body);
    render_status(app, f, status);
    render_hints(app, f, hints);
    if app.mode == Mode::Help {
        render_help(app, f, body);
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
    let mut spans = vec![Span::styled(" falat ", t.header.bold())];
    for v in View::ALL {
        let style = if v == app.view { t.tab_active } else { t.tab };
        spans.push(Span::raw(" "));
        spans.push(Span::styled(format!(" {} {} ", app.keymap.hint(v.action()), v.title()), style));
    }
    let tabs = Line::from(spans);
    let name = app.trace.file_name().map(|n| clean(&n.to_string_lossy())).unwrap_or_default();
    let method =
        if app.method == crate::methods::Method::Falat { String::new() } else { format!(" · method {}", app.method) };
    let long = format!(
        "{name} · {} · {} steps · judge {}{method} ",
        app.traj.source,
        app.total_steps(),
        clean(&app.judge.name())
    );
    let room = (area.width as usize).saturating_sub(tabs.width() + 1);
    let info = [long, format!("{name}{method} "), format!("{name} "), String::new()]
        .into_iter()
        .find(|i| i.chars().count() <= room);
    f.render_widget(Paragraph::new(tabs), area);
    f.render_widget(Paragraph::new(info.unwrap_or_default()).style(t.header).right_aligned(), area);
}

/// The stage chips and the running run or the last message.
fn render_status(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    f.render_widget(Block::new().style(t.status), area);
    let mut spans = vec![Span::raw(" ")];
    let running_stage = app.running.as_ref().filter(|r| r.target.is_pipeline()).map(|r| stage_of(&r.stage));
    for (s, name) in Stage::ALL.into_iter().zip(["prior", "deps", "verify", "re-search"]) {
        let (mark, style) = if running_stage == Some(s) {
            (spinner(app.ticks), t.info)
        } else if stage_done(app, s) {
            ("✓", t.ok)
        } else {
            ("·", t.dim)
        };
        spans.push(Span::styled(format!("{name} {mark}  "), style));
    }
    spans.push(Span::styled("│ ", t.dim));
    match (&app.running, &app.status) {
        (Some(r), _) => {
            let stage = if r.stage.is_empty() { "starting".to_string() } else { r.stage.clone() };
            let count = if r.total > 0 { format!(" {}/{}", r.done, r.total) } else { String::new() };
            let took = if app.show_timings {
                format!(" · {:.1} s", r.started.elapsed().as_secs_f64())
            } else {
                String::new()
            };
            let what = if r.cancelling { "cancelling" } else { "running" };
            spans.push(Span::styled(format!("{what} {}: {stage}{count}{took}", r.target.label()), t.info));
            spans.push(Span::styled(format!(" · {} cancel", app.keymap.hint(Action::Cancel)), t.dim));
        }
        (None, Some(s)) => spans.push(Span::styled(s.text.clone(), level_style(app, s.level))),
        (None, None) => spans
            .push(Span::styled(format!("ready · {} runs the whole pipeline", app.keymap.hint(Action::RunAll)), t.dim)),
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn stage_done(app: &App, s: Stage) -> bool {
    let p = &app.pipeline;
    match s {
        Stage::SearchSpace => p.space.is_some(),
        Stage::Dependencies => p.deps.is_some(),
        Stage::Verification => p.verified.is_some(),
        Stage::ReSearch => p.research.is_some(),
    }
}

/// The stage a progress label belongs to.
fn stage_of(label: &str) -> Stage {
    match label {
        "recall" => Stage::Dependencies,
        l => Stage::ALL.into_iter().find(|s| s.as_str() == l).unwrap_or(Stage::SearchSpace),
    }
}

fn spinner(ticks: u64) -> &'static str {
    const FRAMES: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];
    FRAMES[(ticks % 8) as usize]
}

fn level_style(app: &App, l: Level) -> Style {
    let t = &app.theme;
    match l {
        Level::Info => t.info,
        Level::Ok => t.ok,
        Level::Warn => t.warn,
        Level::Error => t.error,
    }
}

fn render_hints(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let line = match &app.mode {
        Mode::Search(q) => input_line(app, "/", q, "search step content"),
        Mode::Jump(n) => input_line(app, ":", n, "jump to step number"),
        _ => {
            let mut spans = vec![Span::raw(" ")];
            let mut width = 1;
            for (a, label) in hint_actions(app) {
                let key = app.keymap.hint(a);
                let label = format!(" {label}  ");
                width += key.chars().count() + label.chars().count();
                if width > area.width as usize {
                    break;
                }
                spans.push(Span::styled(key, t.key));
                spans.push(Span::styled(label, t.dim));
            }
            Line::from(spans)
        }
    };
    f.render_widget(Paragraph::new(line), area);
}

fn hint_actions(app: &App) -> Vec<(Action, &'static str)> {
    let mut v = match app.view {
        View::Hierarchy => vec![(Action::Enter, "drill"), (Action::Back, "back"), (Action::NextPane, "pane")],
        View::Candidates | View::Roles | View::Verdict => {
            vec![(Action::Enter, "go to step"), (Action::Back, "back")]
        }
        View::Methods => {
            vec![(Action::RunMethods, "run all methods"), (Action::Enter, "go to step"), (Action::Back, "back")]
        }
        _ => vec![(Action::Back, "back")],
    };
    v.extend([
        (Action::RunAll, "run all"),
        (Action::Help, "help"),
        (Action::Quit, "quit"),
        (Action::Search, "search"),
        (Action::JumpToStep, "step"),
        (Action::Mark, "mark"),
        (Action::Exclude, "exclude"),
        (Action::Pin, "pin"),
        (Action::Undo, "undo"),
        (Action::Export, "export"),
        (Action::Copy, "copy"),
    ]);
    v
}

fn input_line(app: &App, prompt: &str, text: &str, what: &str) -> Line<'static> {
    let t = &app.theme;
    Line::from(vec![
        Span::styled(format!(" {prompt}"), t.key),
        Span::styled(clean(text), t.text),
        Span::styled("█", t.dim),
        Span::styled(format!("   {what} · enter ok · esc cancel"), t.dim),
    ])
}

/// The help overlay, generated from the key map, in two columns.
fn render_help(app: &App, f: &mut Frame, body: Rect) {
    let t = &app.theme;
    let groups = [Group::Navigate, Group::Views, Group::Pipeline, Group::Overrides, Group::General];
    let col = |gs: &[Group]| -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        for g in gs {
            lines.push(Line::styled(g.title().to_string(), t.title_focus));
            for a in Action::ALL.into_iter().filter(|a| a.group() == *g) {
                let keys = text::clip(&app.keymap.all_keys(a), 18);
                lines.push(Line::from(vec![
                    Span::styled(format!("  {keys:<19}"), t.key),
                    Span::styled(a.describe().to_string(), t.text),
                ]));
            }
            lines.push(Line::raw(""));
        }
        lines
    };
    let left = col(&groups[..1]);
    let right = col(&groups[1..]);
    let height = (left.len().max(right.len()) as u16 + 2).min(body.height);
    let width = 96.min(body.width);
    let area = Rect { x: body.x + (body.width - width) / 2, y: body.y + (body.height - height) / 2, width, height };
    f.render_widget(Clear, area);
    let block = Block::bordered()
        .border_style(t.border_focus)
        .title(Line::styled(" Help ", t.title_focus))
        .title_bottom(Line::styled(" any key closes · keys from the key map ", t.dim).right_aligned())
        .style(t.text);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let [l, r] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(inner);
    f.render_widget(Paragraph::new(left), l);
    f.render_widget(Paragraph::new(right), r);
}

/// A bordered pane with an exact title and optional right-aligned information.
fn pane<'a>(app: &App, title: &'a str, focused: bool, right: String) -> Block<'a> {
    let t = &app.theme;
    let mut b = Block::bordered()
        .border_style(if focused { t.border_focus } else { t.border })
        .title(Line::styled(format!(" {title} "), if focused { t.title_focus } else { t.title }));
    if !right.is_empty() {
        b = b.title_top(Line::styled(format!(" {right} "), t.dim).right_aligned());
    }
    b
}

/// Keeps the selected row visible: updates and returns the list's first visible row.
fn scroll_offset(cell: &Cell<usize>, sel: usize, len: usize, height: usize) -> usize {
    let mut off = cell.get();
    if height == 0 {
        return 0;
    }
    if sel < off {
        off = sel;
    } else if sel >= off + height {
        off = sel + 1 - height;
    }
    off = off.min(len.saturating_sub(height));
    cell.set(off);
    off
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
