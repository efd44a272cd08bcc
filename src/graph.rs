//! The typed dependency graph of FALAT stage 2 (docs/DESIGN.md §2): a directed graph over steps with
//! protocol edges (fixed by the framework: tool call → result, delegation → reply, code → terminal
//! output, parent → child) and semantic edges (value provenance: a value first seen at step i that
//! reappears at step j gives i → j, weighted by the value's rarity).
//!
//! Built on `petgraph::stable_graph::StableDiGraph`; node weights are 0-based step indices and a
//! node's index equals its step index.

use std::collections::{HashMap, VecDeque};

use petgraph::Direction;
use petgraph::stable_graph::{EdgeIndex, NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;

use crate::diagnosis::Transition;
use crate::hierarchy::{Hierarchy, Origin};
use crate::model::{LinkKind, Trajectory};

/// Where an edge comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// Fixed by the framework.
    Protocol(LinkKind),
    /// A value of the earlier step reused by the later one.
    Semantic,
}

impl EdgeKind {
    /// `protocol:<link>` or `semantic`.
    pub fn label(&self) -> String {
        match self {
            EdgeKind::Protocol(l) => format!("protocol:{}", l.as_str()),
            EdgeKind::Semantic => "semantic".into(),
        }
    }
}

/// An edge of the dependency graph, from an earlier step to a later one.
#[derive(Debug, Clone, PartialEq)]
pub struct DepEdge {
    /// Protocol or semantic.
    pub kind: EdgeKind,
    /// The value keys the later step takes from the earlier one (empty for bare protocol edges).
    pub shared: Vec<String>,
    /// Strength, 0..=1: protocol edges 1, semantic edges by the rarity of the shared values.
    pub weight: f32,
    /// The transition label, set for edges leaving a candidate (stage 2).
    pub label: Option<Transition>,
}

/// The dependency graph of one trajectory.
#[derive(Debug, Clone, Default)]
pub struct DepGraph {
    /// The graph; node weight = step index. Edges are added only by [`DepGraph::build`]: the
    /// indexes below are built with them (labels may be set on edges afterwards).
    pub graph: StableDiGraph<usize, DepEdge>,
    /// Each edge by its ends `(from, to)`: a later edge between the same two steps replaces the
    /// earlier, as petgraph's `find_edge` would see it. A value first seen at one step and used by
    /// thousands of later steps gives that step thousands of edges: looking an edge up by a scan
    /// of them, for every one, was quadratic on long runs.
    ends: HashMap<(usize, usize), EdgeIndex>,
    /// For each step, the steps its protocol edges lead to (a call's result, a delegate), in the
    /// order they were added.
    protocol_children: Vec<Vec<usize>>,
}

impl DepGraph {
    /// Builds protocol edges from the trajectory's links and semantic edges from the provenance in
    /// the hierarchy. Parallel protocol and semantic edges between the same pair are merged into
    /// the protocol edge (which then carries the shared values).
    pub fn build(t: &Trajectory, h: &Hierarchy) -> DepGraph {
        let mut graph = StableDiGraph::with_capacity(t.steps.len(), t.links.len() * 2);
        for i in 0..t.steps.len() {
            graph.add_node(i);
        }
        let mut g = DepGraph {
            graph,
            ends: HashMap::with_capacity(t.links.len() * 2),
            protocol_children: vec![Vec::new(); t.steps.len()],
        };
        for l in &t.links {
            if l.from < t.steps.len() && l.to < t.steps.len() && l.from != l.to {
                g.add(l.from, l.to, EdgeKind::Protocol(l.kind), Vec::new(), 1.0);
            }
        }
        // A tool result goes back to its caller: the caller's next step reads it (found in the
        // caller's own steps, indexed once, not by a scan per link).
        let mut by_agent: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, s) in t.steps.iter().enumerate() {
            by_agent.entry(s.agent.as_str()).or_default().push(i);
        }
        for l in &t.links {
            if matches!(l.kind, LinkKind::ToolResult | LinkKind::Execution)
                && l.to < t.steps.len()
                && l.from < t.steps.len()
            {
                let own = by_agent.get(t.steps[l.from].agent.as_str()).map_or(&[][..], Vec::as_slice);
                if let Some(&next) = own.get(own.partition_point(|&j| j <= l.to))
                    && g.find(l.to, next).is_none()
                {
                    g.add(l.to, next, EdgeKind::Protocol(LinkKind::ToolResult), Vec::new(), 1.0);
                }
            }
        }
        let counts = value_counts(h);
        let mut semantic: HashMap<(usize, usize), Vec<String>> = HashMap::new();
        for s in &h.steps {
            for (key, origin) in &s.uses {
                if let Origin::Step(i) = origin
                    && *i != s.index
                {
                    semantic.entry((*i, s.index)).or_default().push(key.clone());
                }
            }
        }
        let mut pairs: Vec<_> = semantic.into_iter().collect();
        pairs.sort_by_key(|(k, _)| *k);
        for ((from, to), shared) in pairs {
            let weight =
                shared.iter().map(|k| 1.0 / counts.get(k.as_str()).copied().unwrap_or(1) as f32).fold(0.0, f32::max);
            match g.find(from, to) {
                Some(e) => g.graph[e].shared = shared,
                None => g.add(from, to, EdgeKind::Semantic, shared, weight.clamp(0.05, 1.0)),
            }
        }
        g
    }

    fn add(&mut self, from: usize, to: usize, kind: EdgeKind, shared: Vec<String>, weight: f32) {
        let protocol = matches!(kind, EdgeKind::Protocol(_));
        let e = self.graph.add_edge(
            NodeIndex::new(from),
            NodeIndex::new(to),
            DepEdge { kind, shared, weight, label: None },
        );
        self.ends.insert((from, to), e);
        if protocol {
            self.protocol_children[from].push(to);
        }
    }

    /// The edge from `from` to `to`, if any (the last added when there are several), found in
    /// constant time.
    pub fn find(&self, from: usize, to: usize) -> Option<EdgeIndex> {
        self.ends.get(&(from, to)).copied()
    }

    /// The steps that protocol edges from `step` lead to (a call's result, a delegate); empty for
    /// a step out of range.
    pub fn protocol_children(&self, step: usize) -> &[usize] {
        self.protocol_children.get(step).map_or(&[], Vec::as_slice)
    }

    /// The number of edges leaving and entering `step` (0 for a step out of range), without
    /// listing them.
    pub fn degree(&self, step: usize) -> (usize, usize) {
        if step >= self.len() {
            return (0, 0);
        }
        let n = NodeIndex::new(step);
        (
            self.graph.edges_directed(n, Direction::Outgoing).count(),
            self.graph.edges_directed(n, Direction::Incoming).count(),
        )
    }

    /// Whether any edge leaves `step`, in constant time.
    pub fn has_outgoing(&self, step: usize) -> bool {
        step < self.len() && self.graph.neighbors_directed(NodeIndex::new(step), Direction::Outgoing).next().is_some()
    }

    /// Number of steps (nodes).
    pub fn len(&self) -> usize {
        self.graph.node_count()
    }

    /// Whether the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.graph.node_count() == 0
    }

    /// Edges leaving a step: `(to, edge)`, sorted by `to`.
    pub fn outgoing(&self, step: usize) -> Vec<(usize, &DepEdge)> {
        self.edges(step, Direction::Outgoing)
    }

    /// Edges entering a step: `(from, edge)`, sorted by `from`.
    pub fn incoming(&self, step: usize) -> Vec<(usize, &DepEdge)> {
        self.edges(step, Direction::Incoming)
    }

    fn edges(&self, step: usize, dir: Direction) -> Vec<(usize, &DepEdge)> {
        if step >= self.len() {
            return Vec::new();
        }
        let mut v: Vec<(usize, &DepEdge)> = self
            .graph
            .edges_directed(NodeIndex::new(step), dir)
            .map(|e| {
                let other = if dir == Direction::Outgoing { e.target() } else { e.source() };
                (self.graph[other], e.weight())
            })
            .collect();
        v.sort_by_key(|(s, _)| *s);
        v
    }

    /// Sets the transition label of the edge `from → to`; returns false when there is no edge.
    pub fn set_label(&mut self, from: usize, to: usize, label: Transition) -> bool {
        match self.find(from, to) {
            Some(e) => {
                self.graph[e].label = Some(label);
                true
            }
            None => false,
        }
    }

    /// Steps reachable from `from` (excluding it), following edges forward.
    pub fn descendants(&self, from: usize) -> Vec<usize> {
        let mut seen = vec![false; self.len()];
        let mut queue = VecDeque::from([from]);
        let mut out = Vec::new();
        while let Some(s) = queue.pop_front() {
            for (to, _) in self.outgoing(s) {
                if !seen[to] {
                    seen[to] = true;
                    out.push(to);
                    queue.push_back(to);
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// A shortest path of steps from `from` to `to` (both included), following edges forward.
    pub fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        if from >= self.len() || to >= self.len() {
            return None;
        }
        let mut prev: Vec<Option<usize>> = vec![None; self.len()];
        let mut queue = VecDeque::from([from]);
        let mut seen = vec![false; self.len()];
        seen[from] = true;
        while let Some(s) = queue.pop_front() {
            if s == to {
                let mut path = vec![to];
                let mut cur = to;
                while let Some(p) = prev[cur] {
                    path.push(p);
                    cur = p;
                }
                path.reverse();
                return Some(path);
            }
            for (next, _) in self.outgoing(s) {
                if !seen[next] {
                    seen[next] = true;
                    prev[next] = Some(s);
                    queue.push_back(next);
                }
            }
        }
        None
    }
}

impl DepGraph {
    /// For every step, whether it reaches `target` along edges forward (`target` itself included):
    /// one backward walk from `target`, O(steps + edges). `result[s]` equals
    /// `self.path(s, target).is_some()`.
    pub fn ancestors(&self, target: usize) -> Vec<bool> {
        let mut seen = vec![false; self.len()];
        if target >= self.len() {
            return seen;
        }
        seen[target] = true;
        let mut stack = vec![target];
        while let Some(s) = stack.pop() {
            for e in self.graph.edges_directed(NodeIndex::new(s), Direction::Incoming) {
                let from = self.graph[e.source()];
                if !seen[from] {
                    seen[from] = true;
                    stack.push(from);
                }
            }
        }
        seen
    }

    /// For every step `s`, the smallest of `sources` that reaches `s` by at least one edge, or
    /// `None`. One walk per source over steps not yet reached by a smaller one, so O(steps +
    /// edges) in all: a step reached from an earlier source passes everything it reaches on to
    /// that source. `sources` need not be sorted.
    pub fn earliest_reaching(&self, sources: &[usize]) -> Vec<Option<usize>> {
        let mut sorted: Vec<usize> = sources.iter().copied().filter(|&s| s < self.len()).collect();
        sorted.sort_unstable();
        sorted.dedup();
        let mut out: Vec<Option<usize>> = vec![None; self.len()];
        let mut expanded = vec![false; self.len()];
        let mut stack = Vec::new();
        for src in sorted {
            if expanded[src] {
                continue;
            }
            expanded[src] = true;
            stack.push(src);
            while let Some(s) = stack.pop() {
                for e in self.graph.edges_directed(NodeIndex::new(s), Direction::Outgoing) {
                    let to = self.graph[e.target()];
                    if out[to].is_none() {
                        out[to] = Some(src);
                    }
                    if !expanded[to] {
                        expanded[to] = true;
                        stack.push(to);
                    }
                }
            }
        }
        out
    }
}

/// In how many steps each value key appears (for rarity weights).
fn value_counts(h: &Hierarchy) -> HashMap<&str, usize> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for s in &h.steps {
        for k in s.introduces.iter().chain(s.uses.iter().map(|(k, _)| k)) {
            *counts.entry(k.as_str()).or_default() += 1;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy;
    use crate::model::{Link, Step, StepKind};

    /// The lookups the judge makes for every edge of a candidate answer from the indexes, and
    /// agree with the graph: a value first seen at step 0 and used by 2,000 later steps gives
    /// step 0 2,000 edges, each found directly; protocol children are listed; a protocol edge
    /// that also shares a value is one edge carrying it.
    #[test]
    fn edges_are_found_by_their_ends_on_a_hub_step() {
        let mut steps =
            vec![Step { index: 0, agent: "A".into(), content: "The code is 48213".into(), ..Step::default() }];
        for i in 1..=2000 {
            steps.push(Step { index: i, agent: "B".into(), content: format!("using 48213 at {i}"), ..Step::default() });
        }
        let n = steps.len();
        steps.push(Step {
            index: n,
            agent: "B".into(),
            kind: StepKind::ToolCall,
            content: "lookup 48213".into(),
            ..Step::default()
        });
        steps.push(Step {
            index: n + 1,
            agent: "tool".into(),
            kind: StepKind::ToolResult,
            content: "ok".into(),
            ..Step::default()
        });
        let t = Trajectory {
            steps,
            links: vec![Link { from: n, to: n + 1, kind: LinkKind::ToolResult }],
            ..Trajectory::default()
        };
        let h = hierarchy::build(&t);
        let g = DepGraph::build(&t, &h);
        assert_eq!(g.degree(0), (2001, 0));
        for to in [1, 1000, 2000, n] {
            let e = g.find(0, to).expect("an edge from the value's origin");
            assert_eq!(g.graph[e].shared, vec!["48213".to_string()]);
        }
        assert_eq!(g.find(1, 0), None);
        assert_eq!(g.protocol_children(n), &[n + 1]);
        assert_eq!(g.protocol_children(0), &[] as &[usize]);
        assert_eq!(g.protocol_children(n + 5), &[] as &[usize]);
        assert!(g.has_outgoing(0) && g.has_outgoing(n) && !g.has_outgoing(n + 1) && !g.has_outgoing(n + 5));
    }

    #[test]
    fn protocol_and_semantic_edges() {
        let steps = vec![
            Step { index: 0, agent: "A".into(), content: "The price is 1,234 dollars".into(), ..Step::default() },
            Step { index: 1, agent: "B".into(), kind: StepKind::ToolCall, content: "call".into(), ..Step::default() },
            Step {
                index: 2,
                agent: "tool".into(),
                kind: StepKind::ToolResult,
                content: "ok".into(),
                ..Step::default()
            },
            Step { index: 3, agent: "B".into(), content: "So 1234 it is".into(), ..Step::default() },
        ];
        let t = Trajectory {
            steps,
            links: vec![Link { from: 1, to: 2, kind: LinkKind::ToolResult }],
            ..Trajectory::default()
        };
        let h = hierarchy::build(&t);
        let g = DepGraph::build(&t, &h);
        let out0: Vec<(usize, EdgeKind, Vec<String>)> =
            g.outgoing(0).into_iter().map(|(s, e)| (s, e.kind, e.shared.clone())).collect();
        assert_eq!(out0, vec![(3, EdgeKind::Semantic, vec!["1234".to_string()])]);
        assert_eq!(g.outgoing(1)[0].0, 2);
        assert_eq!(g.path(0, 3), Some(vec![0, 3]));
        assert_eq!(g.path(3, 0), None);
        assert_eq!(g.descendants(1), vec![2, 3]);
    }

    /// Two shell calls whose arguments are JSON share their member names (`"command":`,
    /// `"description":`), or the shell and its flag (`"bash", "-lc"`), and nothing else: no
    /// edge. A command both calls quote still links them.
    #[test]
    fn tool_call_member_names_are_no_shared_value() {
        let call = |index: usize, args: &str| Step {
            index,
            agent: "claude".into(),
            kind: StepKind::ToolCall,
            tool_name: Some("Bash".into()),
            content: args.into(),
            ..Step::default()
        };
        let steps = vec![
            call(0, r#"{"command": "docker compose up -d", "description": "Start the services"}"#),
            call(1, r#"{"command": "git status --short", "description": "Show what changed"}"#),
            call(2, r#"{"command" : "docker compose up -d", "description": "Start them again"}"#),
        ];
        let t = Trajectory { steps, ..Trajectory::default() };
        let h = hierarchy::build(&t);
        let g = DepGraph::build(&t, &h);
        assert!(
            g.find(0, 1).is_none(),
            "{:?}",
            g.outgoing(0).iter().map(|(s, e)| (*s, e.shared.clone())).collect::<Vec<_>>()
        );
        let shared: Vec<(usize, Vec<String>)> = g.outgoing(0).into_iter().map(|(s, e)| (s, e.shared.clone())).collect();
        assert_eq!(shared, vec![(2, vec!["docker compose up -d".to_string()])]);
        // Codex's argument lists repeat the shell and its flag in every call.
        let steps = vec![
            call(0, r#"{"command": ["bash", "-lc", "cat .python-version"], "timeout_ms": 120000}"#),
            call(1, r#"{"command": ["bash", "-lc", "pytest -q tests/unit"], "timeout_ms": 600000}"#),
        ];
        let t = Trajectory { steps, ..Trajectory::default() };
        let h = hierarchy::build(&t);
        assert!(DepGraph::build(&t, &h).find(0, 1).is_none());
    }
}
