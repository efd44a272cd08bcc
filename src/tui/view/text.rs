//! The text of the views, with its links: the verdict, the prior, a candidate's detail, the roles
//! view's header, a method's details. Built from the app's state by a [`Linker`], so that every
//! link is a step taken from the data (the diagnosis's steps, the [`Part::Step`]s of its reason
//! and claims), never a number found in prose. The view model counts and places these lines; the
//! drawing (`ui::views`) draws them.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::diagnosis::explanation::{clip_parts, join};
use crate::diagnosis::{Candidate, Claim, Criterion, Detail, Diagnosis, Origin, Part, Rule, Stage, StageName};
use crate::methods::Method;
use crate::text;
use crate::tui::action::Action;
use crate::tui::app::{App, View, clean, prob};
use crate::tui::links::Linker;

/// A linker over the steps that can be shown, selecting the link `selected`.
fn linker(app: &App, selected: Option<usize>) -> Linker {
    Linker::new(app.n_steps(), selected, app.theme.selection)
}

/// The text of the current view whose step references are links, before wrapping: the verdict,
/// the prior, the selected candidate's detail, the roles view's header, the selected method's
/// details; nothing in the hierarchy view.
pub fn view_text(app: &App) -> Linker {
    match app.nav.view {
        View::Verdict => verdict(app),
        View::Prior => {
            let mut l = linker(app, None);
            l.extend(prior_lines(app));
            l
        }
        View::Candidates => app.selected_candidate().map_or_else(|| linker(app, None), |c| candidate_detail(app, c)),
        View::Roles => roles_head(app),
        View::Methods => method_detail(app),
        View::Hierarchy => linker(app, None),
    }
}

/// Whether the view's text ([`view_text`]) scrolls in a pane below the view's list (or is the
/// view): every view but the hierarchy and the roles view, whose text is a fixed header.
pub fn scrolls(view: View) -> bool {
    !matches!(view, View::Hierarchy | View::Roles)
}

/// A label and its value on one line; continuations hang under the value.
pub fn kv(app: &App, k: &str, v: &str, style: Style) -> Line<'static> {
    Line::from(vec![Span::styled(format!("  {k}: "), app.theme.dim), Span::styled(v.to_string(), style)])
}

/// Indented parts whose steps are links; continuations hang under the text.
fn parts_line(l: &mut Linker, indent: &str, parts: &[Part], style: Style) {
    let mut spans = vec![Span::raw(indent.to_string()), Span::raw("")];
    l.parts(&mut spans, parts, style);
    l.push(spans);
}

/// The reason of a diagnosis as parts: its explanation's (the decisive step a link) when they
/// render the reason it carries, else the reason as text.
fn reason_parts(d: &Diagnosis) -> Vec<Part> {
    let parts = d.explanation.parts(d.decisive_step, d.agent.as_deref());
    if join(&parts) == d.reason { parts } else { vec![Part::Text(d.reason.clone())] }
}

/// The lines a view shows before its stage ran.
pub fn not_run(app: &App, what: &str, stage_key: Action) -> Vec<Line<'static>> {
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

// ----- candidates -----

/// The candidates view's note when the step the verdict names is not among the candidates
/// ([`crate::report::named_outside_candidates`]): which step, who named it instead and why, so
/// that the user who looks for it here learns where it came from. Empty otherwise.
pub fn candidates_note(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let Some(parts) = app.results.diagnosis.as_ref().and_then(crate::report::named_outside_candidates) else {
        return Vec::new();
    };
    vec![Line::from(vec![Span::styled("▶ ", t.root_cause), Span::raw(""), Span::styled(join(&parts), t.text)])]
}

/// The reason of a verdict that found no failure ("No failure found: the tool error at step 7
/// was recovered from; otherwise …"), indented, for the views it leaves empty (candidates,
/// roles); `None` for any other verdict or none yet.
pub fn no_failure_reason(app: &App) -> Option<Line<'static>> {
    let d = app.machine_verdict().or(app.results.diagnosis.as_ref())?;
    if d.decisive_step.is_some() || !matches!(d.explanation.rule, Rule::NoFailure { .. }) {
        return None;
    }
    Some(Line::from(vec![Span::raw("  "), Span::raw(""), Span::styled(join(&reason_parts(d)), app.theme.text)]))
}

/// The candidate detail's lines; its links are the steps its findings, its pruning and its
/// verification name, taken from their [`crate::diagnosis::Prose`] (`tab` selects one).
pub fn candidate_detail(app: &App, c: &Candidate) -> Linker {
    let t = &app.theme;
    let mut l = linker(app, app.nav.link);
    l.push_line(Line::from(vec![
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
    ]));
    l.push_line(Line::styled("findings", t.title));
    for fi in &c.findings {
        let mut spans = vec![
            Span::styled(format!("  {:<20} ", fi.signal.as_str()), t.warn),
            Span::styled(format!("{:.2}  ", fi.weight), t.dim),
            Span::raw(""),
        ];
        l.parts(&mut spans, fi.evidence.parts(), t.text);
        l.push(spans);
    }
    l.push_line(Line::styled("pruning", t.title));
    match &c.pruned {
        Some(p) => {
            let mut spans = vec![Span::styled(format!("  pruned: {}", p.transition), t.pruned)];
            if let Some(s) = p.by_step {
                spans.push(Span::styled(" (by step ", t.pruned));
                l.link(&mut spans, s, t.pruned);
                spans.push(Span::styled(")", t.pruned));
            }
            spans.push(Span::styled(" · ", t.pruned));
            spans.push(Span::raw(""));
            l.parts(&mut spans, p.reason.parts(), t.text);
            l.push(spans);
        }
        None => l.push_line(Line::styled("  kept: no transition label rules it out", t.ok)),
    }
    l.push_line(Line::styled("verification", t.title));
    match &c.verification {
        Some(v) => {
            for (name, cr) in [
                ("error independence", &v.independence),
                ("counterfactual sufficiency", &v.sufficiency),
                ("temporal precedence", &v.precedence),
            ] {
                criterion_line(app, &mut l, name, cr);
            }
        }
        None if c.pruned.is_some() => l.push_line(Line::styled("  not checked: pruned before verification", t.dim)),
        None => l.push_line(Line::styled(
            format!("  not checked yet: press {} to run verification", app.keymap.hint(Action::RunVerification)),
            t.dim,
        )),
    }
    if !l.links.is_empty() {
        let hint = match l.links.len() {
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
        l.push_line(Line::styled(hint, t.dim));
    }
    l
}

fn criterion_line(app: &App, l: &mut Linker, name: &str, c: &Criterion) {
    let t = &app.theme;
    let (mark, style) = if c.passed { ("✓ pass", t.ok) } else { ("✗ fail", t.error) };
    let mut spans =
        vec![Span::styled(format!("  {mark} "), style), Span::styled(format!("{name:<27}"), t.text), Span::raw("")];
    l.parts(&mut spans, c.evidence.parts(), t.dim);
    l.push(spans);
}

// ----- roles -----

/// The roles view's header: which steps have roles (FALAT's: the window around the decisive
/// step; the others are unclassified), the dependency path, the re-search's reason (last: the
/// header is cut to a third of the view on a small terminal); its links are the decisive step,
/// the path's steps and the steps the reason names (`tab` selects one).
pub fn roles_head(app: &App) -> Linker {
    let t = &app.theme;
    let mut l = linker(app, app.nav.link);
    let d = app.results.diagnosis.as_ref();
    let reason = app.results.pipeline.research.as_ref().map(|r| r.reason.parts().to_vec()).unwrap_or_default();
    // Which steps have roles at all: FALAT classifies only the re-search window around the
    // decisive step; say so, or the steps outside it read as having no role.
    let mut first = Vec::new();
    match d.and_then(|d| d.decisive_step.map(|s| (d, s))) {
        Some((d, s)) if d.method == crate::diagnosis::Method::Falat => {
            let w = crate::tui::app::ROLE_WINDOW;
            let (lo, hi) = (s.saturating_sub(w), (s + w).min(app.n_steps().saturating_sub(1)));
            first.push(Span::styled(format!("roles of steps {lo}–{hi} only (±{w} around the decisive step "), t.dim));
            l.link(&mut first, s, t.title_focus);
            first.push(Span::styled(
                format!("); other steps unclassified ({} goes to any step)", app.keymap.hint(Action::JumpToStep)),
                t.dim,
            ));
        }
        Some((d, s)) => {
            first.push(Span::styled(format!("roles as {} gives them, around the decisive step ", d.method), t.dim));
            l.link(&mut first, s, t.title_focus);
            first.push(Span::styled("; steps without one are unclassified", t.dim));
        }
        None => first.push(Span::styled("no decisive step: no roles", t.dim)),
    }
    l.push(first);
    let mut path = vec![Span::styled("dependency path to the final output: ", t.dim), Span::raw("")];
    for (i, s) in d.map_or(&[][..], |d| d.path.as_slice()).iter().enumerate() {
        if i > 0 {
            path.push(Span::styled(" → ", t.text));
        }
        l.link(&mut path, *s, t.text);
    }
    if let Some(d) = d.filter(|d| d.path.is_empty() && d.decisive_step.is_some()) {
        path.push(Span::styled(format!("none from step {}", d.decisive_step.unwrap_or_default()), t.text));
    }
    l.push(path);
    if !reason.is_empty() {
        let mut spans = vec![Span::styled("re-search: ", t.dim), Span::raw("")];
        l.parts(&mut spans, &reason, t.text);
        l.push(spans);
    }
    l
}

// ----- prior -----

/// The prior view's lines: the task, the outputs, the prior π.
pub fn prior_lines(app: &App) -> Vec<Line<'static>> {
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

// ----- verdict -----

/// The verdict view's lines; its links, in reading order, are the steps the verdict names: the
/// decisive step, the ranked steps, the steps of the explanation's claims and of its reason, the
/// user's decision, the dependency path and the gold step (the view's selection moves through
/// them; Enter jumps to the selected one).
pub fn verdict(app: &App) -> Linker {
    let mut l = linker(app, Some(app.nav.list_sel));
    match &app.results.diagnosis {
        None => l.extend(not_run(app, "verdict", Action::RunResearch)),
        Some(_) => verdict_lines(app, &mut l),
    }
    if app.method != Method::Falat {
        let note = format!(
            "method {} selected (--method): {} runs it; overrides apply to falat only",
            app.method,
            app.keymap.hint(Action::RunAll)
        );
        l.prepend(Line::styled(note, app.theme.warn));
    }
    l
}

fn verdict_lines(app: &App, l: &mut Linker) {
    let t = &app.theme;
    let Some(current) = &app.results.diagnosis else { return };
    let machine = app.machine_verdict();
    let d = machine.unwrap_or(current);
    match (machine, d.decisive_step) {
        (None, _) => l.push_line(Line::styled(
            format!(
                "the machine's verdict without your overrides is not known yet: press {}",
                app.keymap.hint(Action::RunAll)
            ),
            t.warn,
        )),
        (Some(_), Some(s)) => {
            let bar = "█".repeat((d.confidence * 10.0).round() as usize);
            let mut spans =
                vec![Span::styled(" ROOT_CAUSE ", t.root_cause), Span::styled("  decisive step ", t.title_focus)];
            l.link(&mut spans, s, t.title_focus);
            spans.push(Span::styled(format!(" · agent {}", clean(d.agent.as_deref().unwrap_or("?"))), t.text));
            spans.push(Span::styled(format!(" · {}", d.category.as_str()), t.warn));
            l.push(spans);
            // The category's name in plain words, for this step when the name misleads (an edit
            // that applied and whose check failed reads as a malformed call).
            if let Some(g) = crate::report::category_gloss(&app.traj, d) {
                l.push_line(kv(app, "category", &g, t.dim));
            }
            l.push_line(Line::from(vec![
                Span::styled("  confidence ", t.dim),
                Span::styled(format!("{} {bar:<10}", prob(d.confidence)), t.info),
                Span::styled(format!(" · method {} · judge {}", d.method, clean(&d.judge)), t.dim),
            ]));
            decisive_step_lines(app, l, s);
            if let Some(r) = crate::report::reverted_at(&app.traj, s) {
                // Continuations hang under the sentence, not under the step's number.
                let mut spans = vec![Span::raw("  "), Span::raw(""), Span::styled("reverted at step ", t.warn)];
                l.link(&mut spans, r.step, t.warn);
                spans.push(Span::styled(
                    format!(
                        " ({}): a later step undid this edit, so the code the run leaves behind does not hold it",
                        clean(&text::clip(&r.how, 120))
                    ),
                    t.warn,
                ));
                l.push(spans);
            }
        }
        (Some(m), None) if matches!(m.explanation.rule, Rule::NoFailure { .. }) => {
            l.push_line(Line::from(vec![
                Span::styled(" NO FAILURE FOUND ", t.title_focus),
                Span::styled("  no ROOT_CAUSE is named: no step is shown to be the error (why below)", t.text),
            ]));
        }
        (Some(_), None) => l.push_line(Line::styled(
            format!(
                "no decisive step named yet: stages so far leave it open; press {}",
                app.keymap.hint(Action::RunAll)
            ),
            t.warn,
        )),
    }
    // Worded from the ranking claim the verdict carries, so it agrees with the ranking below.
    match crate::report::low_confidence_parts(d) {
        Some((_, parts)) => l.push_line(Line::from(vec![
            Span::styled("  low confidence: ", t.warn),
            Span::raw(""),
            Span::styled(join(&parts), t.warn),
        ])),
        None if d.decisive_step.is_some() && d.low_confidence() => {
            l.push_line(Line::styled("  low confidence: check the ranked steps, not only the first", t.warn));
        }
        None => {}
    }
    // With no failure found, the ranking only says where to look if the user suspects one: its
    // `P` adds up to 1 over the run's steps whatever happened, so a high `P` is no failure.
    let no_failure = d.decisive_step.is_none() && matches!(d.explanation.rule, Rule::NoFailure { .. });
    if !d.ranking.is_empty() {
        // The named step first, then by the ranker's probability `P` (not the confidence, which
        // is the named step's `P` calibrated).
        let head =
            if no_failure { "  if you suspect a failure anyway, read first (ranker P): " } else { "  ranker P " };
        let mut spans = vec![Span::styled(head, t.dim), Span::raw("")];
        for (i, r) in d.ranking.iter().take(5).enumerate() {
            if i > 0 {
                spans.push(Span::styled(" · ", t.text));
            }
            l.link(&mut spans, r.step, t.text);
            let named = if i == 0 && d.decisive_step == Some(r.step) { ", named" } else { "" };
            spans.push(Span::styled(format!(" ({}{named})", prob(r.probability)), t.text));
        }
        l.push(spans);
        if no_failure {
            l.push_line(Line::styled(
                "  P only orders the steps for that search: it sums to 1 over this run's steps, so a high P is no sign of a failure",
                t.dim,
            ));
        }
        // The method's rule, not the ranking, named the step: the explanation's claim says so
        // beside the ranking, as prose, so it wraps under its own indent with its links.
        for c in &d.explanation.claims {
            if matches!(c, Claim::MoreProbable { .. }) {
                parts_line(l, "  ", &c.parts(d.method, &d.explanation.rule), t.dim);
            }
        }
    }
    if let (Some(u), true) = (app.user_decision(), app.overrides_kept_the_step()) {
        // Overrides that lead to the machine's own step decided nothing: the step stays the
        // machine's.
        l.push_line(Line::raw(""));
        let mut spans = vec![Span::styled("  with your overrides the decisive step is still step ", t.text)];
        match u.decisive_step {
            Some(s) => l.link(&mut spans, s, t.title_focus),
            None => spans.push(Span::styled("none", t.title_focus)),
        }
        spans.push(Span::styled(": the machine's, not a decision of yours", t.text));
        l.push(spans);
    } else if let Some(u) = app.user_decision() {
        l.push_line(Line::raw(""));
        let mut head = vec![Span::styled(" YOUR DECISION ", t.pinned.reversed())];
        match u.decisive_step {
            Some(s) => {
                head.push(Span::styled("  step ", t.title_focus));
                l.link(&mut head, s, t.title_focus);
                head.push(Span::styled(format!(" · agent {}", clean(u.agent.as_deref().unwrap_or("?"))), t.text));
                head.push(Span::styled(format!(" · {}", u.category.as_str()), t.warn));
            }
            None => head.push(Span::styled("  no step can be named with your overrides", t.title_focus)),
        }
        l.push(head);
        l.push_line(Line::styled("  yours, not the machine's: its verdict and confidence above are unchanged", t.dim));
        parts_line(l, "  ", &reason_parts(u), t.text);
    }
    l.push_line(Line::raw(""));
    l.push_line(Line::styled("why", t.title));
    parts_line(l, "  ", &reason_parts(d), t.text);
    l.push_line(Line::raw(""));
    if !d.path.is_empty() {
        let mut spans = vec![Span::styled("  dependency path to the final output: ", t.dim), Span::raw("")];
        for (i, s) in d.path.iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" → ", t.dim));
            }
            l.link(&mut spans, *s, t.text);
        }
        l.push(spans);
    } else if let Some(c) = d.explanation.claims.iter().find(|c| matches!(c, Claim::NoPathToOutput { .. })) {
        parts_line(l, "  ", &c.parts(d.method, &d.explanation.rule), t.dim);
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
    l.push_line(kv(app, "your overrides", &ov, t.marked));
    if let Some(g) = &app.traj.gold {
        let mut spans = vec![Span::styled("  gold label: ", t.dim), Span::styled("step ", t.dim)];
        match g.step {
            Some(s) => l.link(&mut spans, s, t.dim),
            None => spans.push(Span::styled("?", t.dim)),
        }
        let agree = d.decisive_step.is_some() && d.decisive_step == g.step;
        let note = if agree { " (same step)" } else { "" };
        spans.push(Span::styled(format!(" by {}{note}", clean(&g.agent)), t.dim));
        l.push(spans);
    }
    // A verification stage that asked nothing had nothing to ask: say so, beside the status bar's
    // "verify –", instead of a bare "0 calls" that reads as if it had not run.
    let calls: Vec<String> = d
        .cost
        .iter()
        .map(|c| match (c.stage, c.cost.calls) {
            (StageName::Falat(Stage::Verification), 0) => {
                "verification 0 calls (no candidate left to verify)".to_string()
            }
            (stage, n) => format!("{stage} {}", crate::text::count(n, "call", "calls")),
        })
        .collect();
    l.push_line(kv(app, "judge calls", &calls.join(" · "), t.dim));
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
        l.push_line(kv(app, "llm", &text, style));
    }
    for w in &d.warnings {
        l.push_line(kv(app, "warning", &clean(w), t.warn));
    }
    if let Some(e) = &app.exported {
        l.push_line(kv(app, "exported", &clean(&format!("{} · {}", e.markdown.display(), e.json.display())), t.ok));
    } else {
        let how = match &app.places.export_dir {
            Some(dir) => {
                format!("press {} to write the reports into {}", app.keymap.hint(Action::Export), dir.display())
            }
            None => format!("press {} to write the reports beside the trace", app.keymap.hint(Action::Export)),
        };
        l.push_line(kv(app, "export", &how, t.dim));
    }
}

/// How many lines of the decisive step the verdict view quotes.
const QUOTED_LINES: usize = 3;

/// At most this many characters of each quoted line: two rows at 80 columns.
const QUOTED_WIDTH: usize = 150;

/// The decisive step under the verdict's headline, as the Markdown report quotes it: its agent,
/// its kind and tool, and its first lines (sanitised, each clipped; a tool call in one line as it
/// reads, [`crate::report::call_line`]), with how many lines are left out.
fn decisive_step_lines(app: &App, l: &mut Linker, s: usize) {
    let t = &app.theme;
    let Some(st) = app.traj.steps.get(s) else { return };
    l.push_line(Line::from(vec![
        Span::styled("  the step: ", t.dim),
        Span::styled(clean(&st.agent), t.text),
        Span::styled(format!(" · {}", crate::report::kind_and_tool(st)), t.dim),
    ]));
    let lines: Vec<String> = if let Some(line) = crate::report::call_line(st, QUOTED_WIDTH) {
        vec![line]
    } else {
        text::sanitize(&st.content)
            .lines()
            .map(str::trim_end)
            .filter(|x| !x.trim().is_empty())
            .map(String::from)
            .collect()
    };
    for line in lines.iter().take(QUOTED_LINES) {
        l.push_line(Line::from(vec![
            Span::styled("  > ", t.dim),
            Span::raw(""),
            Span::styled(text::clip(&clean(line), QUOTED_WIDTH), t.text),
        ]));
    }
    if lines.len() > QUOTED_LINES {
        let more = lines.len() - QUOTED_LINES;
        l.push_line(Line::styled(
            format!("  > … {} more in the step's evidence", text::count(more, "line", "lines")),
            t.dim,
        ));
    }
}

// ----- methods -----

/// The selected method's details; its links are the step it named (in the heading and in its
/// reason) and the steps its details name as data ([`Detail::parts`]).
pub fn method_detail(app: &App) -> Linker {
    let t = &app.theme;
    let m = app.selected_method();
    let mut l = linker(app, app.nav.link);
    if app.method != Method::Falat {
        l.push_line(Line::styled(
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
            l.push_line(Line::styled(format!("{m} has not run on this trajectory yet."), t.text));
            l.push_line(Line::from(vec![
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
        Some(d) => method_detail_lines(app, m, d, &mut l),
    }
    l
}

fn method_detail_lines(app: &App, m: Method, d: &Diagnosis, l: &mut Linker) {
    let t = &app.theme;
    let mut head = Vec::new();
    match d.decisive_step {
        Some(s) => {
            head.push(Span::styled("step ", t.title_focus));
            l.link(&mut head, s, t.title_focus);
            head.push(Span::raw(" "));
        }
        None => head.push(Span::styled("no step ", t.title_focus)),
    }
    head.extend([
        Span::styled(clean(d.agent.as_deref().unwrap_or("?")), t.text),
        Span::styled(
            // A verdict that names no step has no confidence to give.
            match d.decisive_step {
                Some(_) => {
                    format!(" · {} · confidence {:.2} · judge {}", d.category.as_str(), d.confidence, clean(&d.judge))
                }
                None => format!(" · {} · judge {}", d.category.as_str(), clean(&d.judge)),
            },
            t.dim,
        ),
    ]);
    l.push(head);
    parts_line(l, "  ", &clip_parts(reason_parts(d), 240), t.text);
    if m == Method::Echo {
        let review = d.details.iter().any(|x| matches!(x, Detail::Consensus(_, v) if v.review));
        let (text, style) = if review {
            ("review flagged: the panel disagrees (confidence spread or conclusion types)", t.warn)
        } else {
            ("review not flagged: the panel agrees", t.ok)
        };
        l.push_line(Line::styled(text, style));
    }
    // The votes and the propagation graph first: they are what the view is for.
    let key = |x: &Detail| !matches!(x, Detail::Consensus(..) | Detail::PropagationGraph(_));
    let mut details: Vec<&Detail> = d.details.iter().collect();
    details.sort_by_key(|x| key(x));
    for detail in details {
        let body = detail.parts();
        l.push_line(Line::styled(clean(&detail.title()), t.title));
        if body.is_empty() {
            l.push_line(Line::styled("  none", t.dim));
        }
        for b in &body {
            parts_line(l, "  ", b, t.text);
        }
    }
    for w in &d.warnings {
        l.push_line(kv(app, "warning", &clean(w), t.warn));
    }
}
