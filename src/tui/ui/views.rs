//! Drawing the views other than the hierarchy: candidates, roles, prior, verdict and methods side
//! by side, from the layout and text of [`crate::tui::view`]. [`render_view`] is the one place a
//! new view is wired in.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::hierarchy;
use super::{col, fit, pane, selected, visible_offset, wrap_hanging};
use crate::diagnosis::{Candidate, Diagnosis};
use crate::methods::Method;
use crate::tui::action::Action;
use crate::tui::app::{App, View, clean};
use crate::tui::view::text::{self, not_run};
use crate::tui::view::{candidates_areas, methods_areas, roles_areas};

/// Draws the current view into `area`.
pub fn render_view(app: &App, f: &mut Frame, area: Rect) {
    match app.nav.view {
        View::Hierarchy => hierarchy::render(app, f, area),
        View::Candidates => render_candidates(app, f, area),
        View::Roles => render_roles(app, f, area),
        View::Methods => render_methods(app, f, area),
        // The prior, the verdict: views that are their text.
        _ => render_text(app, f, area),
    }
}

/// A view that is its text ([`text::view_text`]): one pane with the view's title, scrolled.
fn render_text(app: &App, f: &mut Frame, area: Rect) {
    let block = pane(app, app.nav.view.title(), true, &[], area.width);
    scrolled(app, f, area, block, text::view_text(app).lines);
}

/// Draws the view's text in a pane, word-wrapped, from the view's scroll offset (clamped to the
/// text's height); when more is below, a scrollbar over the right border and "↓ more" on the
/// bottom one say so.
fn scrolled(app: &App, f: &mut Frame, area: Rect, block: ratatui::widgets::Block<'_>, lines: Vec<Line<'static>>) {
    let inner = block.inner(area);
    let lines = wrap_hanging(lines, inner.width);
    let h = inner.height as usize;
    let max = lines.len().saturating_sub(h);
    let off = app.nav.scroll[app.nav.view.index()].min(max);
    let mut block = block;
    if off < max {
        let key = app.keymap.hint(Action::ScrollDown);
        block = block.title_bottom(Line::styled(format!(" ↓ more ({key}) "), app.theme.dim).right_aligned());
    }
    let len = lines.len();
    f.render_widget(Paragraph::new(lines).scroll((off as u16, 0)).block(block), area);
    super::list_scrollbar(f, area, len, h, off);
}

fn list_rows(app: &App, area: Rect, len: usize) -> (usize, usize) {
    let h = area.height.saturating_sub(2) as usize;
    (visible_offset(app.nav.offsets.list, app.nav.list_sel, len, h), h)
}

// ----- candidates -----

fn render_candidates(app: &App, f: &mut Frame, area: Rect) {
    let cands = app.results.diagnosis.as_ref().map_or(&[][..], |d| d.candidates.as_slice());
    if cands.is_empty() {
        let block = pane(app, "Candidates", true, &[], area.width);
        let lines = if let Some(why) = text::no_failure_reason(app) {
            vec![
                Line::raw(""),
                Line::styled(
                    "no candidates: no failure found, so no step became a candidate to classify.",
                    app.theme.text,
                ),
                Line::raw(""),
                why,
            ]
        } else if app.results.diagnosis.is_some() {
            let mut lines = vec![Line::styled("no candidate was found.", app.theme.text)];
            lines.extend(text::candidates_note(app));
            lines
        } else {
            not_run(app, "candidates", Action::RunDependencies)
        };
        return wrapped(f, area, block, lines);
    }
    let [note, list, detail] = candidates_areas(app, area);
    f.render_widget(Paragraph::new(wrap_hanging(text::candidates_note(app), note.width)), note);
    let kept = cands.iter().filter(|c| c.pruned.is_none()).count();
    let rows = app.cands.rows();
    let sort = format!("sort {}", app.cands.sort.name());
    let counts = format!("{} kept · {} pruned", kept, cands.len() - kept);
    let info = if app.cands.filter.is_empty() {
        vec![format!("{counts} · {sort}"), counts]
    } else {
        let shown = format!("{} of {} match '{}'", rows.len(), cands.len(), clean(&app.cands.filter));
        vec![format!("{shown} · {sort}"), shown]
    };
    // With overrides the list is the user's decision (a pin wins precedence, a mark is never
    // pruned); the verdict view keeps the machine's. Say whose it is.
    let title = if app.user_decision().is_some() { "Candidates with your overrides" } else { "Candidates" };
    // The ✓/✗ column's meaning, on the bottom border (a header row would move the rows the
    // mouse and the selection address), when it fits whole.
    let legend = " checks: independence · sufficiency · precedence ";
    let mut block = pane(app, title, true, &info, list.width);
    if legend.chars().count() + 2 <= list.width as usize {
        block = block.title_bottom(Line::styled(legend, app.theme.dim));
    }
    let inner = block.inner(list);
    f.render_widget(block, list);
    let (off, h) = list_rows(app, list, rows.len());
    let lines: Vec<Line> = rows
        .iter()
        .enumerate()
        .skip(off)
        .take(h)
        .map(|(i, &k)| {
            let line = fit(candidate_row(app, &cands[k], inner.width), inner.width);
            if i == app.nav.list_sel { selected(line, app.theme.selection, inner.width) } else { line }
        })
        .collect();
    if lines.is_empty() {
        let msg = format!("no candidate matches '{}' (esc clears the filter)", clean(&app.cands.filter));
        f.render_widget(Paragraph::new(Line::styled(msg, app.theme.dim)), inner);
    } else {
        f.render_widget(Paragraph::new(lines), inner);
    }
    if let Some(c) = app.selected_candidate() {
        let lines = text::candidate_detail(app, c).lines;
        let block = pane(app, "Candidate", false, &[], detail.width);
        scrolled(app, f, detail, block, lines);
    }
}

fn candidate_row(app: &App, c: &Candidate, width: u16) -> Line<'static> {
    let t = &app.theme;
    let decisive = app.results.diagnosis.as_ref().and_then(|d| d.decisive_step) == Some(c.step);
    let state = crate::tui::candidates::state(c);
    let style = match state {
        "excluded" => t.excluded,
        "pruned" => t.pruned,
        "user" => t.marked,
        _ => t.candidate,
    };
    let main = c.main_signal();
    let signal = main.map_or("-", |s| s.as_str());
    // The evidence of the finding the row names, not of whichever finding came first.
    let why = match &c.pruned {
        Some(p) => format!("{}: {}", p.transition, p.reason),
        None => c
            .findings
            .iter()
            .find(|f| Some(f.signal) == main)
            .or(c.findings.first())
            .map(|f| f.evidence.to_string())
            .unwrap_or_default(),
    };
    let checks = c.verification.as_ref().map_or("   ".to_string(), |v| {
        [&v.independence, &v.sufficiency, &v.precedence].iter().map(|c| if c.passed { '✓' } else { '✗' }).collect()
    });
    let digits = app.total_steps().saturating_sub(1).to_string().len().max(4);
    Line::from(vec![
        // Only the decisive step's row carries a mark: the others have a plain gutter.
        if decisive { Span::styled("▶", t.root_cause) } else { Span::raw(" ") },
        Span::raw(" "),
        Span::styled(format!("{:>digits$} ", c.step), t.text),
        Span::styled(col(&clean(&c.agent), agent_width(app, width)), t.text),
        Span::styled(format!("{:.2} ", c.score), t.dim),
        Span::styled(col(state, 9), style),
        Span::styled(format!("{checks} "), t.info),
        Span::styled(col(signal, 19), t.warn),
        Span::styled(clean(&why), t.dim),
    ])
}

/// Draws lines in a pane, word-wrapped with hanging indents (see [`wrap_hanging`]).
fn wrapped(f: &mut Frame, area: Rect, block: ratatui::widgets::Block<'_>, lines: Vec<Line<'static>>) {
    let inner = block.inner(area);
    f.render_widget(Paragraph::new(wrap_hanging(lines, inner.width)).block(block), area);
}

/// The agent column of a list `width` wide: the longest agent name when there is room, at most
/// a quarter of the row.
fn agent_width(app: &App, width: u16) -> usize {
    let longest = app.traj.agents.iter().map(|a| clean(&a.name).chars().count()).max().unwrap_or(5).max(5);
    (longest + 1).min((width as usize / 4).max(8))
}

// ----- roles -----

fn render_roles(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let rows = app.role_rows();
    if rows.is_empty() {
        let block = pane(app, "Roles", true, &[], area.width);
        // The pipeline ran and named no step: say so, instead of asking to run it.
        let lines = match (app.results.diagnosis.as_ref(), text::no_failure_reason(app)) {
            (Some(_), Some(why)) => vec![
                Line::raw(""),
                Line::styled("no roles: no failure found, so there is no candidate to classify.", t.text),
                Line::raw(""),
                Line::styled("with no decisive step, no step is a root cause, a propagation or a symptom:", t.dim),
                why,
            ],
            (Some(d), None) if d.decisive_step.is_none() => vec![
                Line::raw(""),
                Line::styled("no roles: no decisive step was named, so no step could be classified.", t.text),
                Line::raw(""),
                Line::styled("the verdict view says why.", t.dim),
            ],
            _ => not_run(app, "roles", Action::RunResearch),
        };
        return wrapped(f, area, block, lines);
    }
    let head = text::roles_head(app).lines;
    let [top, list] = roles_areas(app, area);
    f.render_widget(Paragraph::new(wrap_hanging(head, top.width)), top);
    let block = pane(app, "Roles", true, &[format!("{} steps", rows.len())], list.width);
    let inner = block.inner(list);
    f.render_widget(block, list);
    let (off, h) = list_rows(app, list, rows.len());
    let lines: Vec<Line> = rows
        .iter()
        .enumerate()
        .skip(off)
        .take(h)
        .map(|(i, (s, r))| {
            let sum = &app.hierarchy().steps[*s];
            let (name, style) = r.map_or(("·", t.dim), |r| (r.as_str(), t.role(r)));
            let line = Line::from(vec![
                Span::styled(format!("{s:>5}  "), t.text),
                Span::styled(format!("{name:<13}"), style),
                Span::styled(col(&clean(&sum.agent), agent_width(app, inner.width)), t.text),
                Span::styled(app.failure_line(*s), t.dim),
            ]);
            let line = fit(line, inner.width);
            if i == app.nav.list_sel { selected(line, t.selection, inner.width) } else { line }
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}

// ----- methods -----

/// Whether a method's verdict agrees with another: `✓` same step, `≈` same agent at another
/// step, `≠` neither, `·` nothing to compare (`✗` is kept for a failed check).
fn agreement(d: &Diagnosis, step: Option<usize>, agent: Option<&str>) -> &'static str {
    let same_agent =
        matches!((d.agent.as_deref(), agent), (Some(a), Some(b)) if a.trim().eq_ignore_ascii_case(b.trim()));
    match (d.decisive_step, step) {
        (_, None) if agent.is_none() => "·",
        (Some(a), Some(b)) if a == b => "✓",
        _ if same_agent => "≈",
        _ => "≠",
    }
}

fn render_methods(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let (list, head, body, detail) = methods_areas(area);
    let ran = app.results.methods.len();
    let right = if ran == 0 { "not run".to_string() } else { format!("{ran} of {} ran", Method::ALL.len()) };
    let legend = Line::styled(" vs gold, vs falat: ✓ same step · ≈ same agent · ≠ neither · machine verdicts ", t.dim);
    let block =
        pane(app, "Methods", true, &[right], list.width).title_bottom(fit(legend, list.width.saturating_sub(2)));
    let inner = block.inner(list);
    f.render_widget(block, list);
    let agent_w = agent_width(app, inner.width);
    let header = format!(
        "  {}{}{}{}{}{}{}{}",
        col("method", 15),
        col("step", 6),
        col("agent", agent_w),
        col("vs gold", 8),
        col("vs falat", 9),
        col("conf", 6),
        col("calls", 7),
        "category"
    );
    f.render_widget(Paragraph::new(fit(Line::styled(header, t.dim), inner.width)), head);
    let falat = app.results.methods.get(&Method::Falat);
    let gold = app.traj.gold.as_ref();
    let lines: Vec<Line> = Method::ALL
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mark = if *m == app.method { "▶ " } else { "  " };
            let mut spans = vec![Span::styled(mark, t.root_cause), Span::styled(col(m.as_str(), 15), t.text)];
            match app.results.methods.get(m) {
                None => spans.push(Span::styled("not run", t.dim)),
                Some(d) => {
                    let step = d.decisive_step.map_or("-".to_string(), |s| s.to_string());
                    let vs_falat = match falat {
                        Some(fd) if *m != Method::Falat => agreement(d, fd.decisive_step, fd.agent.as_deref()),
                        _ => "·",
                    };
                    let vs_gold = gold.map_or("·", |g| agreement(d, g.step, Some(g.agent.as_str())));
                    spans.extend([
                        Span::styled(col(&step, 6), t.title_focus),
                        Span::styled(col(&clean(d.agent.as_deref().unwrap_or("-")), agent_w), t.text),
                        Span::styled(format!("{vs_gold:<8}"), agree_style(app, vs_gold)),
                        Span::styled(format!("{vs_falat:<9}"), agree_style(app, vs_falat)),
                        Span::styled(format!("{:<6}", format!("{:.2}", d.confidence)), t.info),
                        Span::styled(format!("{:<7}", d.total_cost().calls), t.dim),
                        Span::styled(d.category.as_str(), t.warn),
                    ]);
                }
            }
            let line = fit(Line::from(spans), body.width);
            if i == app.nav.list_sel { selected(line, t.selection, body.width) } else { line }
        })
        .collect();
    f.render_widget(Paragraph::new(lines), body);
    render_method_detail(app, f, detail);
}

fn agree_style(app: &App, mark: &str) -> Style {
    match mark {
        "✓" => app.theme.ok,
        "≈" => app.theme.warn,
        "≠" => app.theme.error,
        _ => app.theme.dim,
    }
}

fn render_method_detail(app: &App, f: &mut Frame, area: Rect) {
    let title = format!("{} details", app.selected_method());
    let block = pane(app, &title, false, &[], area.width);
    scrolled(app, f, area, block, text::method_detail(app).lines);
}
