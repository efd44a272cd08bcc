//! The hierarchy view: `Phases` (M_hi), `Steps` (M_mid), `Evidence` (M_lo) and the selected
//! step's `Dependencies`. Lists draw only their visible rows.

use ratatui::Frame;
use ratatui::layout::{Margin, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Scrollbar, ScrollbarOrientation, ScrollbarState};

use super::{col, fit, list_scrollbar, pane, selected, visible_offset};
use crate::diagnosis::{Role, Transition};
use crate::graph::{DepEdge, EdgeKind};
use crate::hierarchy::Origin;
use crate::model::{LinkKind, StepKind};
use crate::text;
use crate::tui::app::{App, Pane, clean};
use crate::tui::highlight;
use crate::tui::view::{edge_areas, evidence_areas, pane_areas};

/// Draws the four panes.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let [phases, steps, evidence, edges] = pane_areas(area);
    render_phases(app, f, phases);
    render_steps(app, f, steps);
    render_evidence(app, f, evidence);
    render_edges(app, f, edges);
}

fn render_phases(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let phases = app.phases();
    let focused = app.nav.focus == Pane::Phases;
    let info = [
        format!("phase {} · {}", app.nav.phase, count(phases.len(), "phase")),
        format!("{}/{}", app.nav.phase, phases.len()),
    ];
    let block = pane(app, "Phases", focused, &info, area.width);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let h = inner.height as usize;
    let off = visible_offset(app.nav.offsets.phase, app.nav.phase, phases.len(), h);
    let scored = app.results.pipeline.space.is_some();
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
            row(app, fit(line, inner.width), i == app.nav.phase, focused, inner.width)
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
    list_scrollbar(f, area, phases.len(), h, off);
}

fn row(app: &App, line: Line<'static>, is_sel: bool, focused: bool, width: u16) -> Line<'static> {
    match (is_sel, focused) {
        (true, true) => selected(line, app.theme.selection, width),
        (true, false) => selected(line, app.theme.selection_unfocused, width),
        _ => line,
    }
}

fn render_steps(app: &App, f: &mut Frame, area: Rect) {
    let range = app.phases().get(app.nav.phase).map(|p| p.range.clone()).unwrap_or(0..0);
    let focused = app.nav.focus == Pane::Steps;
    let (first, last, total) = (range.start, range.end.saturating_sub(1), app.total_steps());
    let info = [
        format!("phase {} · steps {first}-{last} of {total}", app.nav.phase),
        format!("steps {first}-{last} of {total}"),
        format!("{first}-{last}"),
    ];
    let block = pane(app, "Steps", focused, &info, area.width);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let h = inner.height as usize;
    let sel = app.nav.step.saturating_sub(range.start);
    let off = visible_offset(app.nav.offsets.step, sel, range.len(), h);
    let cols = StepColumns::new(app, inner.width);
    let lines: Vec<Line> = (range.start + off..range.end)
        .take(h)
        .map(|s| row(app, fit(step_row(app, s, &cols), inner.width), s == app.nav.step, focused, inner.width))
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
    list_scrollbar(f, area, range.len(), h, off);
}

/// The columns of a step row at a width. The role tag (ROOT, PROP, SYMP, CONT) is kept at every
/// width once a run found roles; the kind column is left out of narrow rows; the agent column is
/// as wide as the longest agent name allows; the decision text takes the rest, at least a quarter
/// of the row with a role column and a third without, and is what gets cut.
struct StepColumns {
    digits: usize,
    agent: usize,
    kind: bool,
    role: bool,
}

impl StepColumns {
    fn new(app: &App, width: u16) -> StepColumns {
        let width = width as usize;
        let digits = app.total_steps().saturating_sub(1).to_string().len();
        let longest = app.traj.agents.iter().map(|a| clean(&a.name).chars().count()).max().unwrap_or(5).max(5);
        // Markers and number; the decision keeps at least a quarter of the row when the role tag
        // needs room, a third otherwise.
        let fixed = 2 + digits + 2;
        let kind = width >= 70;
        let role = app.results.diagnosis.as_ref().is_some_and(|d| !d.roles.is_empty());
        let extra = if kind { 8 } else { 0 } + if role { 5 } else { 0 };
        let room = width.saturating_sub(fixed + extra + width / if role { 4 } else { 3 });
        StepColumns { digits, agent: (longest + 1).min(room.max(6)), kind, role }
    }
}

/// `★◆ 12 WebSurfer      msg    ROOT I typed ...`
fn step_row(app: &App, s: usize, cols: &StepColumns) -> Line<'static> {
    let t = &app.theme;
    let sum = &app.hierarchy().steps[s];
    let (marked, excluded, pinned) = app.user_marks(s);
    let m = app.marks(s);
    let user = match (pinned, excluded, marked) {
        (true, _, _) => Span::styled("★", t.pinned),
        (_, true, _) => Span::styled("⊘", t.excluded),
        (_, _, true) => Span::styled("+", t.marked),
        _ => Span::raw(" "),
    };
    // With overrides the roles are the user's decision: the machine's decisive step, when it is
    // no longer the root cause there, keeps a mark of its own.
    let machine_only =
        app.user_decision().is_some() && app.results.decisive_step() == Some(s) && m.role != Some(Role::RootCause);
    let cand = match m.candidate {
        _ if machine_only => Span::styled("▶", t.candidate),
        Some(true) => Span::styled("◆", t.candidate),
        Some(false) => Span::styled("◇", t.pruned),
        None if sum.flags.error || sum.flags.failed_execution => Span::styled("▲", t.error),
        None if app.traj.steps.get(s).is_some_and(|st| st.warning.is_some()) => Span::styled("△", t.warn),
        None => Span::raw(" "),
    };
    let digits = cols.digits;
    // A record of the file left out right after (or, first of all, before) this step.
    let gap = match app.skipped_next_to(s).is_empty() {
        true => Span::raw(" "),
        false => Span::styled("⋯", t.warn),
    };
    let mut spans = vec![
        user,
        cand,
        Span::styled(format!(" {s:>digits$}"), t.dim),
        gap,
        Span::styled(col(&clean(&sum.agent), cols.agent), t.text),
    ];
    if cols.kind {
        spans.push(Span::styled(col(short_kind(sum.kind), 8), t.dim));
    }
    if cols.role {
        spans.push(match m.role {
            Some(r) => Span::styled(format!("{:<5}", short_role(r)), t.role(r)),
            None => Span::raw("     "),
        });
    }
    spans.push(Span::styled(app.step_line(s), t.text));
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
    let focused = app.nav.focus == Pane::Evidence;
    let (head, body, text_area) = evidence_areas(area);
    let lines =
        if text_area.width > 0 { app.evidence_lines(app.nav.step, text_area.width) } else { Default::default() };
    let h = text_area.height as usize;
    let scroll = app.nav.evidence_scroll.min(lines.len().saturating_sub(h));
    let (from, to, n) = ((scroll + 1).min(lines.len()), (scroll + h).min(lines.len()), lines.len());
    let info = [format!("step {} · lines {from}-{to} of {n}", app.nav.step), format!("{from}-{to} of {n}")];
    f.render_widget(pane(app, "Evidence", focused, &info, area.width), area);
    let header: Vec<Line> = evidence_header(app, head.width).into_iter().map(|l| fit(l, head.width)).collect();
    f.render_widget(Paragraph::new(header), head);
    let q = app.search.query.as_deref().filter(|q| !q.is_empty());
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

/// Two lines about the step (agent, kind, markers, flags, what a tool call does; values used and
/// introduced) and a rule.
fn evidence_header(app: &App, width: u16) -> Vec<Line<'static>> {
    let t = &app.theme;
    let s = app.nav.step;
    let step = &app.traj.steps[s];
    let sum = &app.hierarchy().steps[s];
    let mut first = vec![Span::styled(format!("#{s} "), t.title_focus), Span::styled(clean(&step.agent), t.text)];
    // A tool call or result names its tool before anything else (a narrow pane cuts the end of
    // the line, and a span format's tool call shows only its arguments below); other steps their
    // kind.
    match step.tool_name.as_deref().filter(|n| !n.trim().is_empty()) {
        Some(tool) if matches!(step.kind, StepKind::ToolCall | StepKind::ToolResult) => {
            let what = if step.kind == StepKind::ToolCall { " · call " } else { " · result of " };
            first.push(Span::styled(what, t.dim));
            first.push(Span::styled(clean(tool), t.text));
            first.push(Span::styled(format!(" · {}", sum.action.as_str()), t.dim));
        }
        _ => first.push(Span::styled(format!(" · {} · {}", step.kind, sum.action.as_str()), t.dim)),
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
        (excluded, " ⊘ excluded by you", t.excluded),
    ] {
        if on {
            first.push(Span::styled(label, style));
        }
    }
    let flags = sum.flags.names();
    if !flags.is_empty() {
        first.push(Span::styled(format!(" [{}]", flags.join(", ")), t.warn));
    }
    for (p, after) in app.skipped_next_to(s) {
        let at = if after { "after" } else { "before" };
        first.push(Span::styled(format!(" ⋯ line {} of the file, {at} this step, was not read", p.line), t.warn));
    }
    // Last, where a wide pane has room: what the call does (a shell call's command, an edit's
    // file and change), which its arguments below show only as JSON.
    if let Some((_, subject)) = crate::report::call_subject(step) {
        let subject = subject.trim_start_matches(':').trim();
        first.push(Span::styled(format!(" · {}", clean(&crate::text::clip(subject, 120))), t.text));
    }
    vec![Line::from(first), provenance_line(app, s, width), Line::styled("─".repeat(width as usize), t.dim)]
}

fn provenance_line(app: &App, s: usize, width: u16) -> Line<'static> {
    let t = &app.theme;
    let sum = &app.hierarchy().steps[s];
    // A small number "taken" from another step is mostly a coincidence (a count, a year): such
    // uses are only counted, like the dependency edges that carry nothing else.
    let small = |k: &str| k.len() <= 4 && k.chars().all(|c| c.is_ascii_digit());
    // Value keys are lower case (they match across steps); show each as this step writes it.
    let content = app.traj.steps.get(s).map_or("", |st| st.content.as_str());
    let evidence = app.hierarchy().evidence.get(s).map_or(&[][..], Vec::as_slice);
    let written = |k: &str| {
        let text = evidence.iter().find(|e| e.key == k).map_or(k, |e| e.text(content).trim());
        clean(if text.is_empty() { k } else { text })
    };
    let mut uses: Vec<String> = sum
        .uses
        .iter()
        .filter(|(k, o)| !(matches!(o, Origin::Step(_)) && small(k)))
        .map(|(k, o)| match o {
            Origin::Given => format!("{} ← task", written(k)),
            Origin::Step(i) => format!("{} ← #{i}", written(k)),
        })
        .collect();
    let hidden = sum.uses.iter().filter(|(k, o)| matches!(o, Origin::Step(_)) && small(k)).count();
    if hidden > 0 {
        uses.push(format!("+{}", crate::text::count(hidden, "small number", "small numbers")));
    }
    let intro: Vec<String> = sum.introduces.iter().map(|k| written(k)).collect();
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
    let focused = app.nav.focus == Pane::Edges;
    let edges = app.edges();
    let n_in = edges.iter().filter(|e| e.0).count();
    let (s, n_out) = (app.nav.step, edges.len() - n_in);
    let info = [format!("step {s} · {n_in} in · {n_out} out"), format!("{n_in} in · {n_out} out")];
    let block = pane(app, "Dependencies", focused, &info, area.width);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let [path_row, head, list] = edge_areas(area);
    f.render_widget(Paragraph::new(fit(path_line(app), inner.width)), path_row);
    let weak = app.weak_edges();
    if edges.is_empty() {
        let msg = if weak.is_empty() {
            "no dependency edges for this step".to_string()
        } else {
            format!("no dependency edges for this step but {} through small numbers only", weak.len())
        };
        return f.render_widget(Paragraph::new(fit(Line::styled(msg, t.dim), inner.width)), head);
    }
    let cols = EdgeColumns::new(app);
    f.render_widget(Paragraph::new(fit(Line::styled(cols.header(), t.dim), inner.width)), head);
    let h = list.height as usize;
    let off = visible_offset(app.nav.offsets.edge, app.nav.edge, edges.len(), h);
    let mut lines: Vec<Line> = edges
        .iter()
        .enumerate()
        .skip(off)
        .take(h)
        .map(|(i, (incoming, other, e))| {
            let line = fit(edge_row(app, &cols, *incoming, *other, e), list.width);
            row(app, line, i == app.nav.edge, focused, list.width)
        })
        .collect();
    if !weak.is_empty() && lines.len() < h {
        let values: Vec<String> = weak.iter().flat_map(|(_, _, e)| e.shared.iter().map(|k| clean(k))).collect();
        let note = format!("+{} links through small numbers only ({}), left out", weak.len(), values.join(", "));
        lines.push(fit(Line::styled(note, t.dim), list.width));
    }
    f.render_widget(Paragraph::new(lines), list);
}

/// The widths of the dependency columns: the step column fits the largest step number.
struct EdgeColumns {
    step: usize,
}

impl EdgeColumns {
    fn new(app: &App) -> EdgeColumns {
        EdgeColumns { step: (app.total_steps().saturating_sub(1).to_string().len() + 2).max(5) }
    }

    fn header(&self) -> String {
        format!(
            "  {}{}{}{}{}{}",
            col("step", self.step),
            col("link", 15),
            col("strength", 9),
            col("transition", 17),
            col("shared values", 23),
            "agent: decision"
        )
    }
}

fn edge_row(app: &App, cols: &EdgeColumns, incoming: bool, other: usize, e: &DepEdge) -> Line<'static> {
    let t = &app.theme;
    let kind_style = if e.kind == EdgeKind::Semantic { t.edge_semantic } else { t.edge_protocol };
    let label = e.label.map_or("", plain_transition);
    let shared = text::clip(&e.shared.iter().map(|k| clean(k)).collect::<Vec<_>>().join(", "), 22);
    let sum = &app.hierarchy().steps[other];
    Line::from(vec![
        Span::styled(if incoming { "← " } else { "→ " }, t.key),
        Span::styled(col(&format!("#{other}"), cols.step), t.text),
        Span::styled(col(&plain_kind(&e.kind), 15), kind_style),
        Span::styled(col(&format!("{:.2}", e.weight), 9), t.dim),
        Span::styled(col(label, 17), t.candidate),
        Span::styled(col(&shared, 23), t.value),
        Span::styled(format!("{}: {}", clean(&sum.agent), app.step_line(other)), t.dim),
    ])
}

/// The path from the selected step to the final output, or why there is none.
fn path_line(app: &App) -> Line<'static> {
    let t = &app.theme;
    let last = app.final_step().unwrap_or(0);
    if app.nav.step == last {
        return Line::styled("this step gives the final output", t.dim);
    }
    if app.nav.step > last {
        return Line::styled(format!("after the final output (step {last})"), t.dim);
    }
    match app.path_to_output() {
        Some(p) => {
            let mut spans = vec![Span::styled("to the output: ", t.dim)];
            // A long path shows its first three and last two steps.
            let shown: Vec<Option<usize>> = if p.len() > 6 {
                p[..3].iter().map(|s| Some(*s)).chain([None]).chain(p[p.len() - 2..].iter().map(|s| Some(*s))).collect()
            } else {
                p.iter().map(|s| Some(*s)).collect()
            };
            for (i, s) in shown.iter().enumerate() {
                if i > 0 {
                    spans.push(Span::styled(" → ", t.dim));
                }
                match s {
                    Some(s) => {
                        let style = if *s == app.nav.step { t.title_focus } else { t.text };
                        spans.push(Span::styled(format!("#{s}"), style));
                    }
                    None => spans.push(Span::styled("…", t.dim)),
                }
            }
            let hops = p.len() - 1;
            spans.push(Span::styled(format!(" ({hops} {})", if hops == 1 { "hop" } else { "hops" }), t.dim));
            Line::from(spans)
        }
        None => Line::styled(
            format!("no dependency path from step {} to the final output (step {last})", app.nav.step),
            t.dim,
        ),
    }
}

/// An edge kind in plain words (the paper's term is in the help).
pub fn plain_kind(k: &EdgeKind) -> String {
    match k {
        EdgeKind::Semantic => "reuses values".into(),
        EdgeKind::Protocol(l) => match l {
            LinkKind::ToolResult => "tool result",
            LinkKind::Delegation => "delegation",
            LinkKind::Parent => "parent",
            LinkKind::Execution => "runs the code",
        }
        .into(),
    }
}

/// A transition label in plain words (the paper's term is in the help).
pub fn plain_transition(l: Transition) -> &'static str {
    match l {
        Transition::FollowUp => "follows it",
        Transition::Redundancy => "repeats it",
        Transition::NoInfluence => "not influenced",
        Transition::ErrorShift => "changes the error",
        Transition::Correction => "corrects it",
        Transition::DeadEnd => "dead end",
    }
}

/// `1 phase`, `3 phases`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}
