//! Placing sub-agent threads (Claude Code sidechains, Codex spawned threads) inside the thread
//! that delegated to them, so a session with sub-agents loads as one trajectory.

use std::collections::HashMap;

use crate::model::{Diagnostic, Link, LinkKind, Step, StepKind};

/// The steps and links of one thread (0-based indices local to `steps`).
#[derive(Debug, Clone, Default)]
pub struct Thread {
    /// The steps in file order.
    pub steps: Vec<Step>,
    /// Links between `steps`.
    pub links: Vec<Link>,
    /// Steps with no parent inside the thread: where a delegating step hangs the thread.
    pub roots: Vec<usize>,
}

/// Inserts each sub-thread of `subs` (keyed by the index of its delegating step in `main`) right
/// after that step. The delegating step gets a [`LinkKind::Delegation`] link to the sub-thread's
/// first step and a [`LinkKind::Parent`] link to each of its roots; the sub-thread's report (its
/// last message, else its last step) gets a [`LinkKind::Delegation`] link to the result the
/// delegating call received (the report handed back: a `Task` call's result, a spawned thread's
/// answer), when `main` links the call to one; all links are re-indexed.
pub fn splice(main: Thread, mut subs: HashMap<usize, Thread>) -> Thread {
    if subs.is_empty() {
        return main;
    }
    let mut new_index = Vec::with_capacity(main.steps.len());
    let mut steps = Vec::new();
    let mut links = Vec::new();
    // (delegating step in `main`, the sub-thread's report in the output).
    let mut reports: Vec<(usize, usize)> = Vec::new();
    for (i, step) in main.steps.into_iter().enumerate() {
        let at = steps.len();
        new_index.push(at);
        steps.push(step);
        let Some(sub) = subs.remove(&i) else {
            continue;
        };
        let offset = steps.len();
        if !sub.steps.is_empty() {
            links.push(Link { from: at, to: offset, kind: LinkKind::Delegation });
            let report = sub.steps.iter().rposition(|s| s.kind == StepKind::Message).unwrap_or(sub.steps.len() - 1);
            reports.push((i, offset + report));
        }
        links.extend(sub.roots.iter().map(|r| Link { from: at, to: offset + r, kind: LinkKind::Parent }));
        links.extend(sub.links.iter().map(|l| Link { from: l.from + offset, to: l.to + offset, kind: l.kind }));
        steps.extend(sub.steps);
    }
    links.extend(main.links.iter().map(|l| Link { from: new_index[l.from], to: new_index[l.to], kind: l.kind }));
    for (call, report) in reports {
        if let Some(l) = main.links.iter().find(|l| l.from == call && l.kind == LinkKind::ToolResult) {
            links.push(Link { from: report, to: new_index[l.to], kind: LinkKind::Delegation });
        }
    }
    Thread { steps, links, roots: main.roots.iter().map(|&r| new_index[r]).collect() }
}

/// Who acts in the file being read (a session or one of its sub-agent files); shared by the
/// Claude Code and Codex loaders.
pub struct Who<'a> {
    /// The agent of assistant lines and tool results.
    pub agent: &'a str,
    /// The speaker of user text (the delegating agent in a sub-agent file).
    pub user: &'a str,
    /// The related file name, for diagnostics (`None` for the file being loaded).
    pub file: Option<&'a str>,
    /// A prompt to leave out (the sub-agent's copy of the `Task` prompt).
    pub skip_prompt: Option<&'a str>,
}

impl Who<'_> {
    /// A diagnostic at `line` of the file being read (named when it is a related file).
    pub fn diag(&self, line: usize, message: String) -> Diagnostic {
        match self.file {
            Some(f) => Diagnostic { line: None, message: format!("{f}:{line}: {message}") },
            None => Diagnostic { line: Some(line), message },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(agents: &[&str], links: Vec<Link>) -> Thread {
        Thread {
            steps: agents.iter().map(|a| Step { agent: a.to_string(), ..Step::default() }).collect(),
            links,
            roots: vec![0],
        }
    }

    #[test]
    fn sub_thread_lands_after_its_delegating_step_and_links_shift() {
        let l = |from, to, kind| Link { from, to, kind };
        let main = thread(&["m", "m", "m"], vec![l(1, 2, LinkKind::ToolResult)]);
        let sub = thread(&["s", "s"], vec![l(0, 1, LinkKind::Parent)]);
        let out = splice(main, HashMap::from([(1, sub)]));
        let agents: Vec<&str> = out.steps.iter().map(|s| s.agent.as_str()).collect();
        assert_eq!(agents, ["m", "m", "s", "s", "m"]);
        assert!(out.links.contains(&l(1, 2, LinkKind::Delegation)));
        assert!(out.links.contains(&l(1, 2, LinkKind::Parent)));
        assert!(out.links.contains(&l(2, 3, LinkKind::Parent)));
        assert!(out.links.contains(&l(1, 4, LinkKind::ToolResult)));
        // The sub-thread's report (its last message) is handed back to the result.
        assert!(out.links.contains(&l(3, 4, LinkKind::Delegation)));
    }

    #[test]
    fn the_sub_threads_last_message_is_its_report() {
        let l = |from, to, kind| Link { from, to, kind };
        let main = thread(&["m", "m"], vec![l(0, 1, LinkKind::ToolResult)]);
        let mut sub = thread(&["s", "s", "s"], vec![]);
        sub.steps[1].kind = StepKind::Message;
        sub.steps[2].kind = StepKind::Thought;
        let out = splice(main, HashMap::from([(0, sub)]));
        assert!(out.links.contains(&l(2, 4, LinkKind::Delegation)), "{:?}", out.links);
        assert!(!out.links.contains(&l(3, 4, LinkKind::Delegation)));
    }
}
