//! The hierarchy view: `Phases` (M_hi), `Steps` (M_mid), `Evidence` (M_lo) and the selected
//! step's `Dependencies`. Lists draw only their visible rows.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Margin, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Scrollbar, ScrollbarOrientation, ScrollbarState};

use super::{col, pane, scroll_offset, selected};
use crate::diagnosis::Role;
use crate::graph::EdgeKind;
use crate::hierarchy::Origin;
use crate::model::StepKind;
use crate::text;
use crate::tui::app::{App, Pane, clean};
use crate::tui::highlight;

/// Draws the four panes.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let [left, right] = Layout::horizontal([Constraint::Percentage(42), Constraint::Percentage(58)]).areas(area);
    let [phases, steps] = Layout::vertical([Constraint::Percentage(34), Constraint::Percentage(66)]).areas(left);
    let [evidence, edges] = Layout::vertical([Constraint::Percentage(68), Constraint::Percentage(32)]).areas(right);
    app.ui.rects.set([phases, steps, evidence, edges]);
    render_phases(app, f, phases);
    render_steps(app, f, steps);
    render_evidence(app, f, evidence);
    render_edges(app, f, edges);
}

fn focus_height(app: &App, pane: Pane, inner: Rect) {
    if app.focus == pane {
        app.ui.list_height.set(inner.height);
    }
}

fn render_phases(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let phases = app.phases();
    let focused = app.focus == Pane::Phases;
    let block = pane(app, "Phases", focused, format!("phase {} · {} phases", app.phase, phases.len()));
    let inner = block.inner(area);
    f.render_widget(block, area);
    focus_height(app, Pane::Phases, inner);
    let h = inner.height as usize;
    let off = scroll_offset(&app.ui.phase_offset, app.phase, phases.len(), h);
    let scored = app.pipeline.space.is_some();
    let id_w = phases.len().saturating_sub(1).to_string().len().max(2);
    let range_w = 2 * app.total_steps().saturating_sub(1).to_string().len() + 2;
    // The phase that holds the decisive step: its bar may not be the highest (the verdict weighs
    // more than the phase score), so it is marked on its own.
    let verdict_phase = app.decisive_step().filter(|s| *s < app.n_steps()).map(|s| app.phase_of(s));
    let lines: Vec<Line> = phases
        .iter()
        .enumerate()
        .skip(off)
        .take(h)
        .map(|(i, p)| {
            let susp = if scored {
                let n = (p.suspicion * 4.0).round() as usize;
                format!("{:.2} {}{} ", p.suspicion, "█".repeat(n), "·".repeat(4 - n.min(4)))
            } else {
                "  -       ".to_string()
            };
            let range = format!("{}-{}", p.range.start, p.range.end.saturating_sub(1));
            let here = verdict_phase == Some(i);
            let line = Line::from(vec![
                Span::styled(if here { "▶" } else { " " }, t.root_cause),
                Span::styled(format!("{i:>id_w$} "), if here { t.title_focus } else { t.dim }),
                Span::styled(col(&range, range_w.max(6)), t.text),
                Span::styled(susp, t.suspicion),
                Span::styled(clean(&p.summary), t.text),
            ]);
            row(app, line, i == app.phase, focused, inner.width)
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}

fn row(app: &App, line: Line<'static>, is_sel: bool, focused: bool, width: u16) -> Line<'static> {
    match (is_sel, focused) {
        (true, true) => selected(line, app.theme.selection, width),
        (true, false) => selected(line, app.theme.selection_unfocused, width),
        _ => line,
    }
}

fn render_steps(app: &App, f: &mut Frame, area: Rect) {
    let range = app.phases().get(app.phase).map(|p| p.range.clone()).unwrap_or(0..0);
    let focused = app.focus == Pane::Steps;
    let right =
        format!("phase {} · steps {}-{} of {}", app.phase, range.start, range.end.saturating_sub(1), app.total_steps());
    let block = pane(app, "Steps", focused, right);
    let inner = block.inner(area);
    f.render_widget(block, area);
    focus_height(app, Pane::Steps, inner);
    let h = inner.height as usize;
    let sel = app.step.saturating_sub(range.start);
    let off = scroll_offset(&app.ui.step_offset, sel, range.len(), h);
    let digits = app.total_steps().saturating_sub(1).to_string().len();
    let lines: Vec<Line> = (range.start + off..range.end)
        .take(h)
        .map(|s| row(app, step_row(app, s, digits, inner.width), s == app.step, focused, inner.width))
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}

/// `★◆ 12 WebSurfer      msg    ROOT I typed ...`
fn step_row(app: &App, s: usize, digits: usize, width: u16) -> Line<'static> {
    let t = &app.theme;
    let sum = &app.hierarchy().steps[s];
    let (marked, excluded, pinned) = app.user_marks(s);
    let m = app.marks(s);
    let user = match (pinned, excluded, marked) {
        (true, _, _) => Span::styled("★", t.pinned),
        (_, true, _) => Span::styled("✗", t.excluded),
        (_, _, true) => Span::styled("+", t.marked),
        _ => Span::raw(" "),
    };
    let cand = match m.candidate {
        Some(true) => Span::styled("◆", t.candidate),
        Some(false) => Span::styled("◇", t.pruned),
        None if sum.flags.error || sum.flags.failed_execution => Span::styled("!", t.error),
        None => Span::raw(" "),
    };
    let role = match m.role {
        Some(r) => Span::styled(format!("{:<5}", short_role(r)), t.role(r)),
        None => Span::raw("     "),
    };
    let mut spans = vec![
        user,
        cand,
        Span::styled(format!(" {s:>digits$} "), t.dim),
        Span::styled(col(&clean(&sum.agent), 14), t.text),
        Span::raw(" "),
    ];
    if width >= 60 {
        spans.push(Span::styled(col(short_kind(sum.kind), 7), t.dim));
    }
    spans.push(role);
    spans.push(Span::raw(" "));
    spans.push(Span::styled(clean(&sum.decision), t.text));
    Line::from(spans)
}

/// A four-letter role tag for lists.
fn short_role(r: Role) -> &'static str {
    match r {
        Role::RootCause => "ROOT",
        Role::Propagation => "PROP",
        Role::Symptom => "SYMP",
        Role::Contributing => "CONT",
    }
}

fn short_kind(k: StepKind) -> &'static str {
    match k {
        StepKind::Message => "msg",
        StepKind::Thought => "thought",
        StepKind::ToolCall => "call",
        StepKind::ToolResult => "result",
        StepKind::Delegation => "deleg",
    }
}

fn render_evidence(app: &App, f: &mut Frame, area: Rect) {
    let focused = app.focus == Pane::Evidence;
    let probe = pane(app, "Evidence", focused, String::new());
    let inner = probe.inner(area);
    let [head, body] = Layout::vertical([Constraint::Length(3), Constraint::Min(1)]).areas(inner);
    let text_area = Rect { width: body.width.saturating_sub(1), ..body };
    app.ui.evidence_size.set((text_area.width, text_area.height));
    let lines = if text_area.width > 0 { app.evidence_lines(app.step, text_area.width) } else { Default::default() };
    let h = text_area.height as usize;
    let scroll = app.evidence_scroll.min(lines.len().saturating_sub(h));
    let right = format!(
        "step {} · lines {}-{} of {}",
        app.step,
        (scroll + 1).min(lines.len()),
        (scroll + h).min(lines.len()),
        lines.len()
    );
    f.render_widget(pane(app, "Evidence", focused, right), area);
    f.render_widget(Paragraph::new(evidence_header(app, head.width)), head);
    let q = app.query.as_deref().filter(|q| !q.is_empty());
    let visible: Vec<Line> = lines
        .iter()
        .skip(scroll)
        .take(h)
        .map(|l| match q {
            Some(q) => highlight::mark_matches(l, q, app.theme.search_match),
            None => l.clone(),
        })
        .collect();
    f.render_widget(Paragraph::new(visible), text_area);
    if lines.len() > h {
        let mut state = ScrollbarState::new(lines.len().saturating_sub(h)).position(scroll);
        let bar = Scrollbar::new(ScrollbarOrientation::VerticalRight).begin_symbol(None).end_symbol(None);
        f.render_stateful_widget(bar, body.inner(Margin { horizontal: 0, vertical: 0 }), &mut state);
    }
}

/// Two lines about the step (agent, kind, markers, flags; values used and introduced) and a rule.
fn evidence_header(app: &App, width: u16) -> Vec<Line<'static>> {
    let t = &app.theme;
    let s = app.step;
    let step = &app.traj.steps[s];
    let sum = &app.hierarchy().steps[s];
    let mut first = vec![
        Span::styled(format!("#{s} "), t.title_focus),
        Span::styled(clean(&step.agent), t.text),
        Span::styled(format!(" · {} · {}", step.kind, sum.action.as_str()), t.dim),
    ];
    if let Some(tool) = &step.tool_name {
        first.push(Span::styled(format!(" · tool {}", clean(tool)), t.dim));
    }
    if let Some(to) = &step.delegate_to {
        first.push(Span::styled(format!(" · to {}", clean(to)), t.dim));
    }
    let m = app.marks(s);
    if let Some(r) = m.role {
        first.push(Span::raw(" "));
        first.push(Span::styled(format!(" {} ", r.as_str()), t.role(r)));
    }
    match m.candidate {
        Some(true) => first.push(Span::styled(" ◆ candidate", t.candidate)),
        Some(false) => first.push(Span::styled(" ◇ pruned", t.pruned)),
        None => {}
    }
    let (marked, excluded, pinned) = app.user_marks(s);
    for (on, label, style) in [
        (pinned, " ★ pinned by you", t.pinned),
        (marked, " + marked by you", t.marked),
        (excluded, " ✗ excluded by you", t.excluded),
    ] {
        if on {
            first.push(Span::styled(label, style));
        }
    }
    let flags = sum.flags.names();
    if !flags.is_empty() {
        first.push(Span::styled(format!(" [{}]", flags.join(", ")), t.warn));
    }
    vec![Line::from(first), provenance_line(app, s, width), Line::styled("─".repeat(width as usize), t.dim)]
}

fn provenance_line(app: &App, s: usize, width: u16) -> Line<'static> {
    let t = &app.theme;
    let sum = &app.hierarchy().steps[s];
    let uses: Vec<String> = sum
        .uses
        .iter()
        .map(|(k, o)| match o {
            Origin::Given => format!("{} ← task", clean(k)),
            Origin::Step(i) => format!("{} ← #{i}", clean(k)),
        })
        .collect();
    let intro: Vec<String> = sum.introduces.iter().map(|k| clean(k)).collect();
    let mut text = String::new();
    if !uses.is_empty() {
        text.push_str(&format!("uses {}", uses.join(", ")));
    }
    if !intro.is_empty() {
        let sep = if text.is_empty() { "" } else { " · " };
        text.push_str(&format!("{sep}introduces {}", intro.join(", ")));
    }
    if text.is_empty() {
        text.push_str("no values used or introduced");
    }
    Line::styled(text::clip(&text, width as usize), t.value)
}

fn render_edges(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let focused = app.focus == Pane::Edges;
    let edges = app.edges();
    let n_in = edges.iter().filter(|e| e.0).count();
    let right = format!("step {} · {} in · {} out", app.step, n_in, edges.len() - n_in);
    let block = pane(app, "Dependencies", focused, right);
    let inner = block.inner(area);
    f.render_widget(block, area);
    focus_height(app, Pane::Edges, inner);
    if app.graph().is_none() {
        return f.render_widget(Paragraph::new("building the dependency graph…").style(t.dim), inner);
    }
    if edges.is_empty() {
        return f.render_widget(Paragraph::new("no dependency edges for this step").style(t.dim), inner);
    }
    let h = inner.height as usize;
    let off = scroll_offset(&app.ui.edge_offset, app.edge, edges.len(), h);
    let lines: Vec<Line> = edges
        .iter()
        .enumerate()
        .skip(off)
        .take(h)
        .map(|(i, (incoming, other, e))| {
            let kind_style = if e.kind == EdgeKind::Semantic { t.edge_semantic } else { t.edge_protocol };
            let label = e.label.map_or("·".to_string(), |l| l.as_str().to_string());
            let shared = text::clip(&e.shared.iter().map(|k| clean(k)).collect::<Vec<_>>().join(", "), 22);
            let sum = &app.hierarchy().steps[*other];
            let line = Line::from(vec![
                Span::styled(if *incoming { "← " } else { "→ " }, t.key),
                Span::styled(format!("#{other:<5}"), t.text),
                Span::styled(col(&e.kind.label(), 21), kind_style),
                Span::styled(col(&label, 13), t.candidate),
                Span::styled(col(&shared, 23), t.value),
                Span::styled(format!("{}: {}", clean(&sum.agent), clean(&sum.decision)), t.dim),
            ]);
            row(app, line, i == app.edge, focused, inner.width)
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}
