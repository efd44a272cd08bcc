//! The views other than the hierarchy: candidates, roles, prior, verdict and methods side by
//! side. [`render_view`] is the one place a new view is wired in.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::hierarchy;
use super::{col, fit, pane, selected, visible_offset, wrap_hanging};
use crate::diagnosis::{Candidate, Criterion, Detail, Diagnosis, Origin};
use crate::methods::Method;
use crate::text;
use crate::tui::action::Action;
use crate::tui::app::{App, View, clean, prob};
use crate::tui::links::Linker;

/// Draws the current view into `area`.
pub fn render_view(app: &App, f: &mut Frame, area: Rect) {
    match app.nav.view {
        View::Hierarchy => hierarchy::render(app, f, area),
        View::Candidates => render_candidates(app, f, area),
        View::Roles => render_roles(app, f, area),
        View::Prior => render_prior(app, f, area),
        View::Verdict => render_verdict(app, f, area),
        View::Methods => render_methods(app, f, area),
    }
}

/// The step references of the current view's prose, in reading order, as it draws them: the
/// verdict's, the selected candidate's detail, the roles view's header, the selected method's
/// details (see [`Linker`]).
pub(crate) fn prose_links(app: &App) -> Vec<usize> {
    match app.nav.view {
        View::Verdict => verdict_content(app).1,
        View::Candidates => app.selected_candidate().map(|c| candidate_detail(app, c).1).unwrap_or_default(),
        View::Roles => roles_head(app).1,
        View::Methods => method_detail(app).1,
        _ => Vec::new(),
    }
}

/// A linker over the steps that can be shown, selecting the reference `selected`.
fn linker(app: &App, selected: Option<usize>) -> Linker {
    Linker::new(app.n_steps(), selected, app.theme.selection)
}

/// A label and prose whose step references are links; continuations hang under the prose.
fn kv_prose(app: &App, k: &str, v: &str, style: Style, l: &mut Linker) -> Line<'static> {
    let mut spans = vec![Span::styled(format!("  {k}: "), app.theme.dim), Span::raw("")];
    spans.extend(l.prose(v, style));
    Line::from(spans)
}

/// Indented prose whose step references are links.
fn prose_line(indent: &str, v: &str, style: Style, l: &mut Linker) -> Line<'static> {
    let mut spans = vec![Span::raw(indent.to_string()), Span::raw("")];
    spans.extend(l.prose(v, style));
    Line::from(spans)
}

/// The current view's scrollable text, before wrapping: the verdict, the prior, the selected
/// candidate's detail, the selected method's details; nothing in the other views.
pub(crate) fn text_lines(app: &App) -> Vec<Line<'static>> {
    match app.nav.view {
        View::Verdict => verdict_content(app).0,
        View::Prior => prior_lines(app),
        View::Candidates => app.selected_candidate().map(|c| candidate_detail(app, c).0).unwrap_or_default(),
        View::Methods => method_detail(app).0,
        View::Hierarchy | View::Roles => Vec::new(),
    }
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

fn not_run(app: &App, what: &str, stage_key: Action) -> Vec<Line<'static>> {
    let t = &app.theme;
    vec![
        Line::raw(""),
        Line::styled(format!("no {what} yet."), t.text),
        Line::raw(""),
        Line::from(vec![
            Span::styled("press ", t.dim),
            Span::styled(app.keymap.hint(Action::RunAll), t.key),
            Span::styled(" to run the whole pipeline, or ", t.dim),
            Span::styled(app.keymap.hint(stage_key), t.key),
            Span::styled(format!(" for the stage that computes the {what}."), t.dim),
        ]),
    ]
}

fn list_rows(app: &App, area: Rect, len: usize) -> (usize, usize) {
    let h = area.height.saturating_sub(2) as usize;
    (visible_offset(app.nav.offsets.list, app.nav.list_sel, len, h), h)
}

/// The candidates view's list and detail areas.
pub fn candidates_areas(area: Rect) -> [Rect; 2] {
    Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(area)
}

/// The roles view's header and list areas: the header as tall as its wrapped lines (at least
/// three rows, at most a third of the area), so that a long re-search reason does not hide the
/// dependency path below it.
pub fn roles_areas(app: &App, area: Rect) -> [Rect; 2] {
    let head = wrap_hanging(roles_head(app).0, area.width).len() as u16;
    let head = head.clamp(3, (area.height / 3).max(3));
    Layout::vertical([Constraint::Length(head), Constraint::Min(3)]).areas(area)
}

/// The methods view's list pane, its header row, its rows, and the detail pane.
pub fn methods_areas(area: Rect) -> (Rect, Rect, Rect, Rect) {
    let rows = Method::ALL.len() as u16;
    let [list, detail] = Layout::vertical([Constraint::Length(rows + 3), Constraint::Min(3)]).areas(area);
    let inner = ratatui::widgets::Block::bordered().inner(list);
    let [head, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(inner);
    (list, head, body, detail)
}

// ----- candidates -----

fn render_candidates(app: &App, f: &mut Frame, area: Rect) {
    let cands = app.results.diagnosis.as_ref().map_or(&[][..], |d| d.candidates.as_slice());
    if cands.is_empty() {
        let block = pane(app, "Candidates", true, &[], area.width);
        let lines = if app.results.diagnosis.is_some() {
            vec![Line::styled("no candidate was found.", app.theme.text)]
        } else {
            not_run(app, "candidates", Action::RunDependencies)
        };
        return wrapped(f, area, block, lines);
    }
    let [list, detail] = candidates_areas(area);
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
        let (lines, _) = candidate_detail(app, c);
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
    let signal = c.main_signal().map_or("-", |s| s.as_str());
    let why = match &c.pruned {
        Some(p) => format!("{}: {}", p.transition, p.reason),
        None => c.findings.first().map(|f| f.evidence.clone()).unwrap_or_default(),
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

/// The candidate detail's lines and the step references in them (`tab` selects one).
fn candidate_detail(app: &App, c: &Candidate) -> (Vec<Line<'static>>, Vec<usize>) {
    let t = &app.theme;
    let mut l = linker(app, app.nav.link);
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("step {} ", c.step), t.title_focus),
        Span::styled(clean(&c.agent), t.text),
        Span::styled(
            format!(
                " · score {:.2} · {}",
                c.score,
                if c.origin == Origin::User { "added by you" } else { "found by the method" }
            ),
            t.dim,
        ),
    ])];
    lines.push(Line::styled("findings", t.title));
    for fi in &c.findings {
        let mut spans = vec![
            Span::styled(format!("  {:<20}", fi.signal.as_str()), t.warn),
            Span::styled(format!("{:.2}  ", fi.weight), t.dim),
            Span::raw(""),
        ];
        spans.extend(l.prose(&clean(&fi.evidence), t.text));
        lines.push(Line::from(spans));
    }
    lines.push(Line::styled("pruning", t.title));
    lines.push(match &c.pruned {
        Some(p) => {
            let mut spans = vec![Span::styled(format!("  pruned: {}", p.transition), t.pruned)];
            if let Some(s) = p.by_step {
                spans.push(Span::styled(" (by step ", t.pruned));
                spans.push(l.link(s, t.pruned));
                spans.push(Span::styled(")", t.pruned));
            }
            spans.push(Span::styled(" · ", t.pruned));
            spans.push(Span::raw(""));
            spans.extend(l.prose(&clean(&p.reason), t.text));
            Line::from(spans)
        }
        None => Line::styled("  kept: no transition label rules it out", t.ok),
    });
    lines.push(Line::styled("verification", t.title));
    match &c.verification {
        Some(v) => {
            for (name, cr) in [
                ("error independence", &v.independence),
                ("counterfactual sufficiency", &v.sufficiency),
                ("temporal precedence", &v.precedence),
            ] {
                lines.push(criterion_line(app, name, cr, &mut l));
            }
        }
        None if c.pruned.is_some() => lines.push(Line::styled("  not checked: pruned before verification", t.dim)),
        None => lines.push(Line::styled(
            format!("  not checked yet: press {} to run verification", app.keymap.hint(Action::RunVerification)),
            t.dim,
        )),
    }
    if !l.targets.is_empty() {
        let hint = match l.targets.len() {
            1 => format!(
                "{} selects the step reference above, {} jumps to it",
                app.keymap.hint(Action::NextPane),
                app.keymap.hint(Action::Enter)
            ),
            n => format!(
                "{} selects the {n} step references above, {} jumps to one",
                app.keymap.hint(Action::NextPane),
                app.keymap.hint(Action::Enter)
            ),
        };
        lines.push(Line::styled(hint, t.dim));
    }
    (lines, l.targets)
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

fn criterion_line(app: &App, name: &str, c: &Criterion, l: &mut Linker) -> Line<'static> {
    let t = &app.theme;
    let (mark, style) = if c.passed { ("✓ pass", t.ok) } else { ("✗ fail", t.error) };
    let mut spans =
        vec![Span::styled(format!("  {mark} "), style), Span::styled(format!("{name:<27}"), t.text), Span::raw("")];
    spans.extend(l.prose(&clean(&c.evidence), t.dim));
    Line::from(spans)
}

// ----- roles -----

fn render_roles(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let rows = app.role_rows();
    if rows.is_empty() {
        let block = pane(app, "Roles", true, &[], area.width);
        return wrapped(f, area, block, not_run(app, "roles", Action::RunResearch));
    }
    let (head, _) = roles_head(app);
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
                Span::styled(clean(&sum.decision), t.dim),
            ]);
            let line = fit(line, inner.width);
            if i == app.nav.list_sel { selected(line, t.selection, inner.width) } else { line }
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}

/// The roles view's header (the decisive step, the re-search's reason, the dependency path) and
/// the step references in it (`tab` selects one).
fn roles_head(app: &App) -> (Vec<Line<'static>>, Vec<usize>) {
    let t = &app.theme;
    let mut l = linker(app, app.nav.link);
    let d = app.results.diagnosis.as_ref();
    let reason = app.results.pipeline.research.as_ref().map(|r| clean(&r.reason)).unwrap_or_default();
    let mut first = vec![Span::styled("around the decisive step ", t.dim)];
    first.push(match d.and_then(|d| d.decisive_step) {
        Some(s) => l.link(s, t.title_focus),
        None => Span::styled("-", t.title_focus),
    });
    first.push(Span::styled(format!(" (window ±{}) · re-search: ", crate::tui::app::ROLE_WINDOW), t.dim));
    first.push(Span::raw(""));
    first.extend(l.prose(&reason, t.text));
    let mut path = vec![Span::styled("dependency path to the final output: ", t.dim), Span::raw("")];
    for (i, s) in d.map_or(&[][..], |d| d.path.as_slice()).iter().enumerate() {
        if i > 0 {
            path.push(Span::styled(" → ", t.text));
        }
        path.push(l.link(*s, t.text));
    }
    if let Some(d) = d.filter(|d| d.path.is_empty() && d.decisive_step.is_some()) {
        path.push(Span::styled(format!("none from step {}", d.decisive_step.unwrap_or_default()), t.text));
    }
    (vec![Line::from(first), Line::from(path)], l.targets)
}

// ----- prior -----

fn render_prior(app: &App, f: &mut Frame, area: Rect) {
    let block = pane(app, "Prior", true, &[], area.width);
    scrolled(app, f, area, block, prior_lines(app));
}

/// The prior view's lines: the task, the outputs, the prior π.
fn prior_lines(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let tr = &app.traj;
    let mut lines = vec![Line::styled("task", t.title)];
    for l in text::sanitize(tr.task.trim()).lines().take(8) {
        lines.push(Line::styled(format!("  {l}"), t.text));
    }
    let gt = if app.ground_truth { "used" } else { "not used" };
    if let Some(e) = &tr.expected_output {
        lines.push(kv(app, &format!("expected output o* ({gt})"), &clean(e), t.ok));
    }
    if let Some(o) = &tr.observed_output {
        lines.push(kv(app, "observed output ô", &text::clip(&clean(o), 300), t.warn));
    }
    lines.push(Line::raw(""));
    match &app.results.pipeline.space {
        None => lines.extend(not_run(app, "prior π", Action::RunPrior)),
        Some(s) => {
            let p = &s.prior;
            lines.push(Line::styled("prior π (from the task and the agents' roles only)", t.title));
            lines.push(kv(app, "answer type", p.answer_type.map_or("unknown", |a| a.as_str()), t.text));
            let constraints =
                if p.constraints.is_empty() { "none found".into() } else { clean(&p.constraints.join("; ")) };
            lines.push(kv(app, "constraints", &constraints, t.text));
            lines.push(Line::styled("  requirements", t.dim));
            for r in &p.requirements {
                let who = r.agent.as_deref().map_or("no agent named".to_string(), clean);
                lines.push(Line::from(vec![
                    Span::styled(format!("    {:<14}", r.capability.as_str()), t.info),
                    Span::styled(format!("→ {who}"), t.text),
                ]));
            }
            lines.push(kv(app, "key terms", &clean(&p.key_terms.join(", ")), t.value));
            let tools = if p.tools.is_empty() { "none found".into() } else { clean(&p.tools.join(", ")) };
            lines.push(kv(app, "tools", &tools, t.text));
            lines.push(Line::styled("  expected procedure", t.dim));
            for (k, e) in p.procedure.iter().enumerate() {
                let who = e.agent.as_deref().map_or(String::new(), |a| format!(" ({})", clean(a)));
                lines.push(Line::styled(format!("    {}. {}{who}", k + 1, clean(&e.action)), t.text));
            }
        }
    }
    lines
}

fn kv(app: &App, k: &str, v: &str, style: Style) -> Line<'static> {
    Line::from(vec![Span::styled(format!("  {k}: "), app.theme.dim), Span::styled(v.to_string(), style)])
}

// ----- verdict -----

fn render_verdict(app: &App, f: &mut Frame, area: Rect) {
    let block = pane(app, "Verdict", true, &[], area.width);
    let (lines, _) = verdict_content(app);
    scrolled(app, f, area, block, lines);
}

/// The verdict view's lines and the step each of its references names, in reading order (the
/// view's selection moves through them; Enter jumps to the selected one).
pub(crate) fn verdict_content(app: &App) -> (Vec<Line<'static>>, Vec<usize>) {
    let mut l = linker(app, Some(app.nav.list_sel));
    let mut lines = match &app.results.diagnosis {
        None => not_run(app, "verdict", Action::RunResearch),
        Some(_) => verdict_lines(app, &mut l),
    };
    if app.method != Method::Falat {
        let note = format!(
            "method {} selected (--method): {} runs it; overrides apply to falat only",
            app.method,
            app.keymap.hint(Action::RunAll)
        );
        lines.insert(0, Line::styled(note, app.theme.warn));
    }
    (lines, l.targets)
}

fn verdict_lines(app: &App, l: &mut Linker) -> Vec<Line<'static>> {
    let t = &app.theme;
    let Some(current) = &app.results.diagnosis else { return Vec::new() };
    let machine = app.machine_verdict();
    let d = machine.unwrap_or(current);
    let mut lines = Vec::new();
    match (machine, d.decisive_step) {
        (None, _) => lines.push(Line::styled(
            format!(
                "the machine's verdict without your overrides is not known yet: press {}",
                app.keymap.hint(Action::RunAll)
            ),
            t.warn,
        )),
        (Some(_), Some(s)) => {
            let bar = "█".repeat((d.confidence * 10.0).round() as usize);
            lines.push(Line::from(vec![
                Span::styled(" ROOT_CAUSE ", t.root_cause),
                Span::styled("  decisive step ", t.title_focus),
                l.link(s, t.title_focus),
                Span::styled(format!(" · agent {}", clean(d.agent.as_deref().unwrap_or("?"))), t.text),
                Span::styled(format!(" · {}", d.category.as_str()), t.warn),
            ]));
            lines.push(Line::from(vec![
                Span::styled("  confidence ", t.dim),
                Span::styled(format!("{} {bar:<10}", prob(d.confidence)), t.info),
                Span::styled(format!(" · method {} · judge {}", d.method, clean(&d.judge)), t.dim),
            ]));
        }
        (Some(m), None) if matches!(m.explanation.rule, crate::diagnosis::Rule::NoFailure { .. }) => {
            lines.push(Line::from(vec![
                Span::styled(" NO FAILURE FOUND ", t.title_focus),
                Span::styled(
                    "  no ROOT_CAUSE is named; the ranked steps below are the ones to read if it did fail",
                    t.text,
                ),
            ]));
        }
        (Some(_), None) => lines.push(Line::styled(
            format!(
                "no decisive step named yet: stages so far leave it open; press {}",
                app.keymap.hint(Action::RunAll)
            ),
            t.warn,
        )),
    }
    if d.decisive_step.is_some() && d.low_confidence() {
        lines.push(Line::styled("  low confidence: no step stands out; check the ranked steps", t.warn));
    }
    if !d.ranking.is_empty() {
        // The named step first, then by the ranker's probability `P` (not the confidence, which
        // is the named step's `P` calibrated).
        let mut spans = vec![Span::styled("  ranker P ", t.dim), Span::raw("")];
        for (i, r) in d.ranking.iter().take(5).enumerate() {
            if i > 0 {
                spans.push(Span::styled(" · ", t.text));
            }
            spans.push(l.link(r.step, t.text));
            let named = if i == 0 && d.decisive_step == Some(r.step) { ", named" } else { "" };
            spans.push(Span::styled(format!(" ({}{named})", prob(r.probability)), t.text));
        }
        lines.push(Line::from(spans));
        // The method's rule, not the ranking, named the step: the explanation's claim says so
        // beside the ranking, as prose, so it wraps under its own indent with its links.
        for c in &d.explanation.claims {
            if matches!(c, crate::diagnosis::Claim::MoreProbable { .. }) {
                lines.push(prose_line("  ", &c.sentence(d.method, &d.explanation.rule), t.dim, l));
            }
        }
    }
    if let (Some(u), true) = (app.user_decision(), app.overrides_kept_the_step()) {
        // Overrides that lead to the machine's own step decided nothing: the step stays the
        // machine's.
        lines.push(Line::raw(""));
        let mut spans = vec![Span::styled("  with your overrides the decisive step is still step ", t.text)];
        match u.decisive_step {
            Some(s) => spans.push(l.link(s, t.title_focus)),
            None => spans.push(Span::styled("none", t.title_focus)),
        }
        spans.push(Span::styled(": the machine's, not a decision of yours", t.text));
        lines.push(Line::from(spans));
    } else if let Some(u) = app.user_decision() {
        lines.push(Line::raw(""));
        let mut head = vec![Span::styled(" YOUR DECISION ", t.pinned.reversed())];
        match u.decisive_step {
            Some(s) => {
                head.push(Span::styled("  step ", t.title_focus));
                head.push(l.link(s, t.title_focus));
                head.push(Span::styled(format!(" · agent {}", clean(u.agent.as_deref().unwrap_or("?"))), t.text));
                head.push(Span::styled(format!(" · {}", u.category.as_str()), t.warn));
            }
            None => head.push(Span::styled("  no step can be named with your overrides", t.title_focus)),
        }
        lines.push(Line::from(head));
        lines.push(Line::styled("  yours, not the machine's: its verdict and confidence above are unchanged", t.dim));
        lines.push(prose_line("  ", &clean(&u.reason), t.text, l));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("why", t.title));
    lines.push(prose_line("  ", &clean(&d.reason), t.text, l));
    lines.push(Line::raw(""));
    if !d.path.is_empty() {
        let mut spans = vec![Span::styled("  dependency path to the final output: ", t.dim), Span::raw("")];
        for (i, s) in d.path.iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" → ", t.dim));
            }
            spans.push(l.link(*s, t.text));
        }
        lines.push(Line::from(spans));
    } else if let Some(c) =
        d.explanation.claims.iter().find(|c| matches!(c, crate::diagnosis::Claim::NoPathToOutput { .. }))
    {
        lines.push(prose_line("  ", &c.sentence(d.method, &d.explanation.rule), t.dim, l));
    }
    // The user's overrides, also when the lines above show the machine's verdict without them.
    let o = app.overrides();
    let ov = if o.is_empty() {
        "none".to_string()
    } else {
        format!(
            "marked {:?} · excluded {:?} · pinned {}",
            o.marked,
            o.excluded,
            o.pinned.map_or("none".into(), |p| p.to_string())
        )
    };
    lines.push(kv(app, "your overrides", &ov, t.marked));
    if let Some(g) = &app.traj.gold {
        let step = g.step.map_or(Span::styled("?", t.dim), |s| l.link(s, t.dim));
        let agree = d.decisive_step.is_some() && d.decisive_step == g.step;
        let note = if agree { " (same step)" } else { "" };
        lines.push(Line::from(vec![
            Span::styled("  gold label: ", t.dim),
            Span::styled("step ", t.dim),
            step,
            Span::styled(format!(" by {}{note}", clean(&g.agent)), t.dim),
        ]));
    }
    let calls: Vec<String> =
        d.cost.iter().map(|c| format!("{} {}", c.stage, crate::text::count(c.cost.calls, "call", "calls"))).collect();
    lines.push(kv(app, "judge calls", &calls.join(" · "), t.dim));
    // With the LLM judge: tokens, the server's cache and who answered, per stage.
    for c in d.cost.iter().filter(|c| c.cost.answers.any()) {
        let text = format!(
            "{}: {} prompt tokens ({} cached), {} completion; {}",
            c.stage,
            c.cost.prompt_tokens,
            c.cost.cached_tokens,
            c.cost.completion_tokens,
            c.cost.answers.describe()
        );
        let style = if c.cost.answers.fallbacks() > 0 { t.warn } else { t.dim };
        lines.push(kv(app, "llm", &text, style));
    }
    for w in &d.warnings {
        lines.push(kv_prose(app, "warning", &clean(w), t.warn, l));
    }
    if let Some(e) = &app.exported {
        lines.push(kv(app, "exported", &clean(&format!("{} · {}", e.markdown.display(), e.json.display())), t.ok));
    } else {
        lines.push(kv(
            app,
            "export",
            &match &app.places.export_dir {
                Some(dir) => {
                    format!("press {} to write the reports into {}", app.keymap.hint(Action::Export), dir.display())
                }
                None => format!("press {} to write the reports beside the trace", app.keymap.hint(Action::Export)),
            },
            t.dim,
        ));
    }
    lines
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
    scrolled(app, f, area, block, method_detail(app).0);
}

/// The selected method's details and the step references in them, in reading order.
fn method_detail(app: &App) -> (Vec<Line<'static>>, Vec<usize>) {
    let t = &app.theme;
    let m = app.selected_method();
    let mut l = linker(app, app.nav.link);
    let mut lines = Vec::new();
    if app.method != Method::Falat {
        lines.push(Line::styled(
            format!(
                "{} runs method {} for the verdict, roles and candidates views (--method); overrides apply to falat only",
                app.keymap.hint(Action::RunAll),
                app.method
            ),
            t.warn,
        ));
    }
    match app.results.methods.get(&m) {
        None => {
            lines.push(Line::styled(format!("{m} has not run on this trajectory yet."), t.text));
            lines.push(Line::from(vec![
                Span::styled("press ", t.dim),
                Span::styled(app.keymap.hint(Action::RunMethods), t.key),
                Span::styled(
                    format!(
                        " to run all {} methods in the background with the judge {} ({} cancels).",
                        Method::ALL.len(),
                        clean(&app.judge.name()),
                        app.keymap.hint(Action::Cancel)
                    ),
                    t.dim,
                ),
            ]));
        }
        Some(d) => method_detail_lines(app, m, d, &mut lines, &mut l),
    }
    (lines, l.targets)
}

fn method_detail_lines(app: &App, m: Method, d: &Diagnosis, lines: &mut Vec<Line<'static>>, l: &mut Linker) {
    let t = &app.theme;
    let mut head = match d.decisive_step {
        Some(s) => vec![Span::styled("step ", t.title_focus), l.link(s, t.title_focus), Span::raw(" ")],
        None => vec![Span::styled("no step ", t.title_focus)],
    };
    head.extend([
        Span::styled(clean(d.agent.as_deref().unwrap_or("?")), t.text),
        Span::styled(
            format!(" · {} · confidence {:.2} · judge {}", d.category.as_str(), d.confidence, clean(&d.judge)),
            t.dim,
        ),
    ]);
    lines.push(Line::from(head));
    lines.push(prose_line("  ", &text::clip(&clean(&d.reason), 240), t.text, l));
    if m == Method::Echo {
        let review = d.details.iter().any(|x| matches!(x, Detail::Consensus(_, v) if v.review));
        let (text, style) = if review {
            ("review flagged: the panel disagrees (confidence spread or conclusion types)", t.warn)
        } else {
            ("review not flagged: the panel agrees", t.ok)
        };
        lines.push(Line::styled(text, style));
    }
    // The votes and the propagation graph first: they are what the view is for.
    let key = |x: &Detail| !matches!(x, Detail::Consensus(..) | Detail::PropagationGraph(_));
    let mut details: Vec<&Detail> = d.details.iter().collect();
    details.sort_by_key(|x| key(x));
    for detail in details {
        let body = detail.lines();
        lines.push(Line::styled(clean(&detail.title()), t.title));
        if body.is_empty() {
            lines.push(Line::styled("  none", t.dim));
        }
        for b in &body {
            lines.push(prose_line("  ", &clean(b), t.text, l));
        }
    }
    for w in &d.warnings {
        lines.push(kv_prose(app, "warning", &clean(w), t.warn, l));
    }
}
