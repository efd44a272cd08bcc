//! DeFA (the paper "DeFA: Dependency-Guided Failure Attribution for LLM Agents"): event
//! dependency graph, segmentation, per-segment candidate recall, failure propagation graph and
//! adjudication with an error category.
//!
//! 1. **Event dependency graph** (§3.2): protocol and semantic edges ([`DepGraph`], shared with
//!    FALAT).
//! 2. **Segmentation** (§3.2, [`segments`]): trajectories longer than the segment length are cut
//!    into segments, at boundaries that no protocol link crosses where possible; each segment is
//!    judged in full with the others summarised ([`segment_view`]), original step numbers kept.
//! 3. **Candidate recall** per segment (§3.3, [`Question::SegmentRecall`]): the task's
//!    requirements, the segment view and the graph relations touching the segment
//!    ([`relation_lines`]); each recall names at most
//!    [`SEGMENT_CANDIDATES`](crate::judge::attribution::SEGMENT_CANDIDATES) steps of its segment,
//!    so what a recall sees decides what it names.
//! 4. **Failure propagation** per segment (§3.4, [`Question::TracePropagation`]): each candidate's
//!    sources and effects (continued, amplified, corrected); sources join the graph's nodes.
//! 5. **Adjudication** (§3.5, [`Question::Adjudicate`]): the decisive step among the nodes and its
//!    category in the [`ErrorCategory`] taxonomy.
//!
//! Ablations (§4.6): [`Component::Segmentation`] judges the whole trajectory as one segment,
//! [`Component::Graph`] withholds the event dependency graph from recall and propagation, and
//! [`Component::Propagation`] adjudicates the recalled candidates without a propagation graph.

use std::ops::Range;

use super::ablation::Component;
use super::{Method, MethodOptions, Session, new_diagnosis, no_steps, view};
use crate::diagnosis::details::SegmentRecalled;
use crate::diagnosis::{Candidate, Detail, Diagnosis, Finding, Origin, Part, Prose, Role, StageName};
use crate::graph::DepGraph;
use crate::hierarchy::Hierarchy;
use crate::judge::attribution::{Effect, ErrorCategory, PropagationEdge};
use crate::judge::{Answer, Context, Judge, Question};
use crate::model::Trajectory;
use crate::substrate::Substrate;
use crate::substrate::signals::{combine, default_step, final_step};

/// Default segment length in steps.
pub const SEGMENT_LEN: usize = 24;
/// Milestones listed per summarised segment.
const SUMMARY_LINES: usize = 6;
/// Summarised segments shown around the segment in full (the nearest ones, before and after);
/// the rest are counted, so a view stays bounded on long trajectories.
pub const MAX_SUMMARISED: usize = 40;

/// Cuts `0..n` into segments of at most `len` steps (`len` is at least 2). Each boundary is the
/// latest step in `start + len/2 ..= start + len` that no protocol link crosses, or
/// `start + len` when every candidate boundary is crossed; the rest after the last boundary is the
/// last segment. A trajectory of at most `len` steps is one segment.
pub fn segments(t: &Trajectory, len: usize) -> Vec<Range<usize>> {
    let (n, len) = (t.steps.len(), len.max(2));
    // How many links cross the boundary before each step, counted once for all boundaries: a link
    // crosses every boundary `b` with `min < b <= max`
    // (one end before the boundary, one at or after it).
    let mut delta = vec![0i64; n + 2];
    for l in &t.links {
        let (lo, hi) = (l.from.min(l.to), l.from.max(l.to));
        if lo < hi {
            delta[(lo + 1).min(n + 1)] += 1;
            delta[(hi + 1).min(n + 1)] -= 1;
        }
    }
    let mut crossing = Vec::with_capacity(n + 1);
    let mut open = 0i64;
    for d in &delta[..=n] {
        open += d;
        crossing.push(open);
    }
    let mut out = Vec::new();
    let mut start = 0;
    while n - start > len {
        let ideal = start + len;
        let b = (start + len / 2..=ideal).rev().find(|&b| crossing[b] == 0).unwrap_or(ideal);
        out.push(start..b);
        start = b;
    }
    if start < n || out.is_empty() {
        out.push(start..n);
    }
    out
}

/// The segment holding a step.
pub fn segment_of(segments: &[Range<usize>], step: usize) -> Option<usize> {
    segments.iter().position(|s| s.contains(&step))
}

/// A summary of a segment: its range, agents, steps with errors and up to six milestones.
pub fn summary(t: &Trajectory, h: &Hierarchy, k: usize, r: &Range<usize>) -> String {
    let mut agents: Vec<&str> = Vec::new();
    for s in &t.steps[r.clone()] {
        if !agents.contains(&s.agent.as_str()) {
            agents.push(&s.agent);
        }
    }
    let errors = r.clone().filter(|&i| h.steps[i].flags.error || h.steps[i].flags.failed_execution).count();
    let mut marks: Vec<usize> = r.clone().filter(|&i| super::echo::is_milestone(h, i)).collect();
    if marks.len() < 2 {
        let extra: Vec<usize> = r.clone().filter(|i| !marks.contains(i)).take(2).collect();
        marks.extend(extra);
        marks.sort_unstable();
    }
    let lines: Vec<String> =
        marks.iter().take(SUMMARY_LINES).map(|&i| format!("  {}", view::brief(t, h, i, 90))).collect();
    format!(
        "Segment {k} (steps {}-{}), agents {}, {errors} step(s) with errors:\n{}",
        r.start,
        r.end.saturating_sub(1),
        agents.join(", "),
        lines.join("\n")
    )
}

/// The view of segment `k`: the other segments summarised, this one in full, original step numbers.
/// Summaries come from `summaries` (one per segment, [`summary`]); at most [`MAX_SUMMARISED`] of
/// them, the nearest to `k`, are shown, with a line counting those left out.
pub fn segment_view(t: &Trajectory, segments: &[Range<usize>], summaries: &[String], k: usize) -> String {
    let half = MAX_SUMMARISED / 2;
    let mut lo = k.saturating_sub(half);
    let hi = (lo + MAX_SUMMARISED + 1).min(segments.len());
    lo = hi.saturating_sub(MAX_SUMMARISED + 1).min(lo);
    let mut parts = Vec::new();
    if lo > 0 {
        parts.push(format!("({lo} earlier segment(s), steps 0-{}, left out)", segments[lo].start.saturating_sub(1)));
    }
    for (j, r) in segments.iter().enumerate().take(hi).skip(lo) {
        if j == k {
            parts.push(format!(
                "Segment {k} of {} (steps {}-{}), in full:\n{}",
                segments.len(),
                r.start,
                r.end.saturating_sub(1),
                view::log(t, r.clone())
            ));
        } else {
            parts.push(summaries[j].clone());
        }
    }
    if hi < segments.len() {
        let last = segments[segments.len() - 1].end.saturating_sub(1);
        parts.push(format!(
            "({} later segment(s), steps {}-{last}, left out)",
            segments.len() - hi,
            segments[hi].start
        ));
    }
    parts.join("\n\n")
}

/// The event-graph relations touching the steps of `segment` (DeFA §3.3: recall sees the
/// relevant graph relations), one line each, `[step 3] -> [step 5] semantic: 1234`; edges
/// reaching into another segment keep the other end's original step number. At most
/// [`MAX_RELATIONS`] lines, the strongest (protocol first, then by weight) kept, in step order.
pub fn relation_lines(g: &DepGraph, segment: &Range<usize>) -> Vec<String> {
    let mut edges: Vec<(usize, usize, f32, String)> = Vec::new();
    for i in segment.clone().filter(|i| *i < g.len()) {
        for (to, e) in g.outgoing(i) {
            let shared = if e.shared.is_empty() { String::new() } else { format!(": {}", e.shared.join(", ")) };
            let w = if matches!(e.kind, crate::graph::EdgeKind::Protocol(_)) { 2.0 } else { e.weight };
            edges.push((i, to, w, format!("[step {i}] -> [step {to}] {}{shared}", e.kind.label())));
        }
        for (from, e) in g.incoming(i).into_iter().filter(|(f, _)| !segment.contains(f)) {
            let shared = if e.shared.is_empty() { String::new() } else { format!(": {}", e.shared.join(", ")) };
            let w = if matches!(e.kind, crate::graph::EdgeKind::Protocol(_)) { 2.0 } else { e.weight };
            edges.push((from, i, w, format!("[step {from}] -> [step {i}] {}{shared}", e.kind.label())));
        }
    }
    edges.sort_by(|a, b| b.2.total_cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
    edges.truncate(MAX_RELATIONS);
    edges.sort_by_key(|e| (e.0, e.1));
    edges.into_iter().map(|e| e.3).collect()
}

/// DeFA's options that fill in or depart from the paper, for reports.
pub fn departures(opts: &MethodOptions) -> Vec<String> {
    vec![
        format!("segments of {} steps (the paper does not fix a length)", opts.segment_len),
        format!("at most {MAX_RELATIONS} graph relations per recall (a prompt budget)"),
        "error categories beyond the two the paper names are falat's own".into(),
    ]
}

/// The relations listed per recall at most (a prompt budget).
pub const MAX_RELATIONS: usize = 40;

/// The dependency edges touching the candidates, as lines (`[step 3] -> [step 5] semantic: 1234`).
fn edge_lines(g: &DepGraph, candidates: &[usize]) -> Vec<String> {
    let mut out = Vec::new();
    for &c in candidates {
        let edges = g
            .incoming(c)
            .into_iter()
            .map(|(s, e)| (s, c, e))
            .chain(g.outgoing(c).into_iter().map(|(to, e)| (c, to, e)));
        for (from, to, e) in edges {
            let shared = if e.shared.is_empty() { String::new() } else { format!(": {}", e.shared.join(", ")) };
            out.push(format!("[step {from}] -> [step {to}] {}{shared}", e.kind.label()));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The segment views, built one at a time when a question needs one (a view of every segment at
/// once would hold the trajectory's text once per segment).
struct Views<'a> {
    trajectory: &'a Trajectory,
    segments: &'a [Range<usize>],
    summaries: &'a [String],
}

impl Views<'_> {
    fn view(&self, k: usize) -> String {
        segment_view(self.trajectory, self.segments, self.summaries, k)
    }

    /// What recall in segment `k` sees (DeFA §3.3): the task's requirements from `π`, the
    /// segment view, and the event-graph relations touching the segment (none without the graph).
    fn recall_view(&self, ctx: &Context<'_>, k: usize) -> String {
        let mut out = self.view(k);
        if let Some(p) = ctx.prior {
            out = format!("Task requirements:\n{}\n\n{out}", p.describe());
        }
        if let Some(g) = ctx.graph {
            let rel = relation_lines(g, &self.segments[k]);
            if !rel.is_empty() {
                out.push_str(&format!(
                    "\n\nRelations of the event dependency graph touching these steps:\n{}",
                    rel.join("\n")
                ));
            }
        }
        out
    }
}

/// The structure DeFA builds before adjudication.
struct Recalled {
    /// Candidates with findings, by step.
    candidates: Vec<(usize, Vec<Finding>)>,
    /// The failure propagation graph.
    edges: Vec<PropagationEdge>,
    /// Candidates and the sources propagation added, sorted.
    nodes: Vec<usize>,
}

/// Runs DeFA on a trajectory.
pub fn run(t: &Trajectory, sub: &Substrate, judge: &dyn Judge, opts: &MethodOptions) -> Diagnosis {
    if t.steps.is_empty() {
        return no_steps(Method::Defa, t, judge, opts);
    }
    let off = |c| opts.ablations.off(c);
    let (h, g) = (&sub.hierarchy, &sub.graph);
    let graph = (!off(Component::Graph)).then_some(g);
    let ctx = Context {
        trajectory: t,
        hierarchy: h,
        prior: Some(&sub.prior),
        graph,
        facts: &sub.facts,
        ground_truth: opts.ground_truth,
    };
    let mut session = super::session(judge, opts);
    let len = if off(Component::Segmentation) { t.steps.len().max(2) } else { opts.segment_len };
    let segs = session.stage(StageName::DefaSegmentation, |_| segments(t, len));
    let summaries: Vec<String> = segs.iter().enumerate().map(|(k, r)| summary(t, h, k, r)).collect();
    let views = Views { trajectory: t, segments: &segs, summaries: &summaries };
    let candidates = session.stage(StageName::DefaRecall, |s| recall(s, &ctx, &segs, &views));
    let edges = if off(Component::Propagation) {
        Vec::new()
    } else {
        session.stage(StageName::DefaPropagation, |s| propagate(s, &ctx, &segs, &views, &candidates))
    };
    let mut nodes: Vec<usize> = candidates.iter().map(|(c, _)| *c).collect();
    nodes.extend(edges.iter().filter(|e| nodes.binary_search(&e.to).is_ok()).map(|e| e.from).collect::<Vec<_>>());
    nodes.sort_unstable();
    nodes.dedup();
    let rec = Recalled { candidates, edges, nodes };
    let (step, category, reason, _confidence, fell_back) =
        session.stage(StageName::DefaAdjudication, |s| adjudicate(s, &ctx, &rec));
    let mut d = new_diagnosis(Method::Defa, t, judge, opts, Some(step));
    d.fallback = fell_back;
    d.category = category;
    d.explanation.account = reason;
    d.roles = roles(&ctx, &rec.edges, step);
    // Empty when no dependency path leads to the final output (a one-step path means the step
    // gives the output itself).
    let end = final_step(&ctx);
    d.path = end.and_then(|e| if step == e { Some(vec![step]) } else { g.path(step, e) }).unwrap_or_default();
    d.final_output_step = end;
    d.candidates = rec.candidates.iter().map(|(c, f)| candidate(t, *c, f)).collect();
    d.details = details(&segs, &rec);
    session.finish(&mut d);
    d
}

fn recall(
    s: &mut Session<'_>,
    ctx: &Context<'_>,
    segs: &[Range<usize>],
    views: &Views<'_>,
) -> Vec<(usize, Vec<Finding>)> {
    let mut out = Vec::new();
    for (k, seg) in segs.iter().enumerate() {
        let q = Question::SegmentRecall { segment: seg.clone(), context: views.recall_view(ctx, k) };
        match s.ask(ctx, &q) {
            Answer::Candidates(found) => {
                for (step, f) in found {
                    if !seg.contains(&step) {
                        s.warnings.push(format!("candidate step {step} is outside its segment {seg:?}; dropped"));
                    } else if !f.is_empty() {
                        out.push((step, f));
                    }
                }
            }
            _ => s.warnings.push(format!("no usable candidates for segment {seg:?}")),
        }
    }
    out.sort_by_key(|(c, _)| *c);
    out.dedup_by_key(|(c, _)| *c);
    out
}

fn propagate(
    s: &mut Session<'_>,
    ctx: &Context<'_>,
    segs: &[Range<usize>],
    views: &Views<'_>,
    candidates: &[(usize, Vec<Finding>)],
) -> Vec<PropagationEdge> {
    let n = ctx.trajectory.steps.len();
    let mut out = Vec::new();
    for (k, seg) in segs.iter().enumerate() {
        // Candidates are sorted by step: this segment's are one slice.
        let from = candidates.partition_point(|(c, _)| *c < seg.start);
        let to = candidates.partition_point(|(c, _)| *c < seg.end);
        let cands: Vec<usize> = candidates[from..to].iter().map(|(c, _)| *c).collect();
        if cands.is_empty() {
            continue;
        }
        let context = match ctx.graph {
            Some(g) => {
                format!(
                    "{}\n\nDependency edges of the candidates:\n{}",
                    views.view(k),
                    edge_lines(g, &cands).join("\n")
                )
            }
            None => views.view(k),
        };
        match s.ask(ctx, &Question::TracePropagation { candidates: cands, context }) {
            Answer::Propagation { edges } => out.extend(edges.into_iter().filter(|e| e.from < e.to && e.to < n)),
            _ => s.warnings.push(format!("no usable propagation for segment {seg:?}")),
        }
    }
    out.sort();
    out.dedup();
    out
}

fn adjudication_context(ctx: &Context<'_>, rec: &Recalled) -> String {
    let t = ctx.trajectory;
    let mut lines = vec!["Candidates and sources:".to_string()];
    for &c in &rec.nodes {
        let found = rec
            .candidates
            .binary_search_by_key(&c, |(s, _)| *s)
            .map(|k| rec.candidates[k].1.as_slice())
            .unwrap_or_default();
        let why: Vec<String> = found.iter().map(|f| format!("{} ({})", f.evidence, f.signal.as_str())).collect();
        let why = if why.is_empty() { "source found by propagation".to_string() } else { why.join("; ") };
        lines.push(format!("{}\n  evidence: {why}", view::brief(t, ctx.hierarchy, c, 160)));
    }
    lines.push("Failure propagation graph:".into());
    lines.extend(rec.edges.iter().map(|e| format!("[step {}] -> [step {}] {}", e.from, e.to, e.effect.as_str())));
    if let Some(end) = final_step(ctx) {
        lines.push(format!("Final output: {}", view::brief(t, ctx.hierarchy, end, 200)));
    }
    let categories: Vec<&str> = ErrorCategory::TAXONOMY.iter().map(|c| c.as_str()).collect();
    lines.push(format!("Categories: {}", categories.join(", ")));
    lines.join("\n")
}

/// The adjudicated step, its category, the reason, the confidence, and why a fallback named the
/// step when the adjudication could not (`None` when it did).
fn adjudicate(
    s: &mut Session<'_>,
    ctx: &Context<'_>,
    rec: &Recalled,
) -> (usize, ErrorCategory, String, f32, Option<Prose>) {
    if rec.nodes.is_empty() {
        let step = default_step(ctx, &[]).unwrap_or(0);
        let reason =
            crate::prose!["no candidate was recalled; step ", Part::Step(step), " is the first to act on the task"];
        return (step, ErrorCategory::Other, reason.to_string(), 0.15, Some(reason));
    }
    let q = Question::Adjudicate {
        candidates: rec.nodes.clone(),
        edges: rec.edges.clone(),
        context: adjudication_context(ctx, rec),
    };
    match s.ask(ctx, &q) {
        Answer::Adjudication { step, category, reason, confidence } if rec.nodes.contains(&step) => {
            (step, category, reason, confidence, None)
        }
        _ => {
            let (step, f) = strongest(rec);
            s.warnings.push(format!("no usable adjudication; the strongest candidate (step {step}) is named"));
            let category = f.map_or(ErrorCategory::Other, |f| ErrorCategory::of_signal(f.signal));
            let why = crate::prose!["no usable adjudication; step ", Part::Step(step), " is the strongest candidate"];
            (step, category, "the strongest candidate".into(), 0.2, Some(why))
        }
    }
}

/// The candidate with the highest score (the earliest on ties) and its strongest finding.
fn strongest(rec: &Recalled) -> (usize, Option<Finding>) {
    let best = rec.candidates.iter().fold(None, |b: Option<&(usize, Vec<Finding>)>, c| match b {
        Some(x) if combine(&x.1) >= combine(&c.1) => b,
        _ => Some(c),
    });
    match best {
        Some((s, f)) => (*s, f.iter().max_by(|a, b| a.weight.total_cmp(&b.weight)).cloned()),
        None => (rec.nodes[0], None),
    }
}

/// Roles from the propagation graph: the decisive step is the root cause, its sources contribute,
/// steps that continue or amplify it propagate it, and the final step it reaches is the symptom.
fn roles(ctx: &Context<'_>, edges: &[PropagationEdge], step: usize) -> Vec<(usize, Role)> {
    let mut out = vec![(step, Role::RootCause)];
    for e in edges {
        if e.to == step && !out.iter().any(|(s, _)| *s == e.from) {
            out.push((e.from, Role::Contributing));
        }
        if e.from == step && e.effect != Effect::Corrected && !out.iter().any(|(s, _)| *s == e.to) {
            let symptom = final_step(ctx) == Some(e.to);
            out.push((e.to, if symptom { Role::Symptom } else { Role::Propagation }));
        }
    }
    out.sort_by_key(|(s, _)| *s);
    out
}

fn candidate(t: &Trajectory, step: usize, findings: &[Finding]) -> Candidate {
    Candidate {
        step,
        agent: t.steps[step].agent.clone(),
        findings: findings.to_vec(),
        score: combine(findings),
        pruned: None,
        verification: None,
        origin: Origin::Machine,
    }
}

fn details(segs: &[Range<usize>], rec: &Recalled) -> Vec<Detail> {
    let segments = segs
        .iter()
        .map(|r| SegmentRecalled {
            steps: r.clone(),
            candidates: rec.candidates.iter().filter(|(s, _)| r.contains(s)).map(|(s, _)| *s).collect(),
        })
        .collect();
    vec![
        Detail::Segments(segments),
        Detail::PropagationGraph(rec.edges.clone()),
        Detail::AdjudicatedNodes(rec.nodes.clone()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy;
    use crate::judge::heuristic::HeuristicJudge;
    use crate::model::{Link, LinkKind, Step};

    fn numbered(n: usize, links: &[(usize, usize)]) -> Trajectory {
        let steps = (0..n)
            .map(|i| Step {
                index: i,
                agent: format!("Agent{}", i % 3),
                content: format!("Step number {i} reports on its part of the work."),
                ..Step::default()
            })
            .collect();
        let links = links.iter().map(|&(from, to)| Link { from, to, kind: LinkKind::ToolResult }).collect();
        Trajectory { id: "seg".into(), steps, links, ..Trajectory::default() }
    }

    #[test]
    fn segments_cut_at_the_length() {
        assert_eq!(segments(&numbered(10, &[]), 4), vec![0..4, 4..8, 8..10]);
        assert_eq!(segments(&numbered(8, &[]), 4), vec![0..4, 4..8]);
        assert_eq!(segments(&numbered(4, &[]), 4), vec![0..4]);
        assert_eq!(segments(&numbered(3, &[]), 24), vec![0..3]);
        assert_eq!(segments(&numbered(5, &[]), 0), vec![0..2, 2..4, 4..5], "length at least 2");
        assert_eq!(segments(&numbered(0, &[]), 4), vec![0..0]);
    }

    #[test]
    fn segments_keep_linked_steps_together() {
        // 3 -> 4 crosses the boundary at 4: the boundary moves back to 3.
        assert_eq!(segments(&numbered(10, &[(3, 4)]), 4), vec![0..3, 3..7, 7..10]);
        // 2 -> 5 crosses 3, 4 and 5: no boundary in 2..=4 is free but 2 itself.
        assert_eq!(segments(&numbered(10, &[(2, 5)]), 4), vec![0..2, 2..6, 6..10]);
        // A link spanning everything crosses every boundary: cut at the length.
        assert_eq!(segments(&numbered(10, &[(0, 9)]), 4), vec![0..4, 4..8, 8..10]);
    }

    #[test]
    fn segment_views_keep_original_step_numbers() {
        let t = numbered(10, &[]);
        let h = hierarchy::build(&t);
        let segs = segments(&t, 4);
        assert_eq!(segment_of(&segs, 0), Some(0));
        assert_eq!(segment_of(&segs, 5), Some(1));
        assert_eq!(segment_of(&segs, 9), Some(2));
        assert_eq!(segment_of(&segs, 10), None);
        let summaries: Vec<String> = segs.iter().enumerate().map(|(k, r)| summary(&t, &h, k, r)).collect();
        let v = segment_view(&t, &segs, &summaries, 1);
        assert!(v.contains("Segment 1 of 3 (steps 4-7), in full:\n[step 4] Agent1 (message):\nStep number 4 reports on its part of the work."));
        assert!(v.contains("[step 7] Agent1 (message):\nStep number 7"));
        assert!(v.contains(
            "Segment 0 (steps 0-3), agents Agent0, Agent1, Agent2, 0 step(s) with errors:\n  [step 0] Agent0"
        ));
        assert!(v.contains("Segment 2 (steps 8-9)"));
        assert!(!v.contains("[step 3]"), "other segments are summarised: milestones, else their first steps");
    }

    #[test]
    fn long_views_summarise_only_the_nearest_segments() {
        let t = numbered(200, &[]);
        let h = hierarchy::build(&t);
        let segs = segments(&t, 2);
        assert_eq!(segs.len(), 100);
        let summaries: Vec<String> = segs.iter().enumerate().map(|(k, r)| summary(&t, &h, k, r)).collect();
        let v = segment_view(&t, &segs, &summaries, 50);
        assert!(v.starts_with("(30 earlier segment(s), steps 0-59, left out)\n\nSegment 30 (steps 60-61)"), "{v}");
        assert!(v.contains("Segment 50 of 100 (steps 100-101), in full:"));
        assert!(v.ends_with("(29 later segment(s), steps 142-199, left out)"), "{v}");
        assert_eq!(v.matches("\n\nSegment ").count(), MAX_SUMMARISED + 1);
        let first = segment_view(&t, &segs, &summaries, 0);
        assert!(first.starts_with("Segment 0 of 100 (steps 0-1), in full:"));
        assert!(first.ends_with("(59 later segment(s), steps 82-199, left out)"), "{first}");
    }

    #[test]
    fn recall_returns_original_indices_per_segment() {
        let mut t = numbered(10, &[]);
        t.steps[6].content = "Let's assume the value is 4,321 for now.".into();
        let h = hierarchy::build(&t);
        let facts = crate::substrate::Facts::default();
        let ctx =
            Context { trajectory: &t, hierarchy: &h, prior: None, graph: None, facts: &facts, ground_truth: false };
        let segs = segments(&t, 4);
        let summaries: Vec<String> = segs.iter().enumerate().map(|(k, r)| summary(&t, &h, k, r)).collect();
        let views = Views { trajectory: &t, segments: &segs, summaries: &summaries };
        let mut s = Session::new(&HeuristicJudge);
        let found = recall(&mut s, &ctx, &segs, &views);
        assert!(found.iter().any(|(c, _)| *c == 6), "{found:?}");
        for (c, _) in &found {
            assert!(segs.iter().any(|r| r.contains(c)));
        }
        let costs: Vec<(&str, u64)> = s.costs.iter().map(|c| (c.stage.as_str(), c.cost.calls)).collect();
        assert_eq!(costs, vec![("judge", 3)], "outside a stage, calls count for one `judge` stage");
        let d = run(
            &t,
            &Substrate::build(&t),
            &HeuristicJudge,
            &MethodOptions { segment_len: 4, ..MethodOptions::new(false) },
        );
        assert_eq!(d.decisive_step, Some(6));
        let Detail::Segments(s) = &d.details[0] else { panic!("{:?}", d.details[0]) };
        assert_eq!((s[1].steps.clone(), s[1].candidates.clone()), (4..8, vec![6]));
        assert_eq!(d.details[0].lines()[1], "segment 1: steps 4-7, candidates [6]");
        assert_eq!(d.cost.iter().find(|c| c.stage == "recall").unwrap().cost.calls, 3, "one recall per segment");
    }
}
