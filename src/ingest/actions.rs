//! A builder of steps for agent harnesses that log actions and observations in order
//! (SWE-agent, mini-SWE-agent, OpenHands, smolagents): tool calls are linked to their results by
//! the harness's own ids, or, where the harness gives none, by order (the oldest call without a
//! result).

use std::collections::HashMap;

use crate::model::{Link, LinkKind, Step, StepIds, StepKind};

/// Steps and links being built; indices are 0-based positions in `steps`.
#[derive(Debug, Default)]
pub struct Actions {
    /// The steps so far.
    pub steps: Vec<Step>,
    /// The links so far.
    pub links: Vec<Link>,
    /// Call id → call step.
    calls: HashMap<String, usize>,
    /// Call steps without a result yet, oldest first.
    open: Vec<usize>,
}

impl Actions {
    /// Appends a step of `kind` by `agent` with `content` and the record's id; returns its index.
    pub fn push(&mut self, agent: &str, role: &str, kind: StepKind, content: String, id: Option<String>) -> usize {
        let index = self.steps.len();
        self.steps.push(Step {
            index,
            agent: agent.to_string(),
            role: role.to_string(),
            kind,
            content,
            ids: StepIds { id, ..StepIds::default() },
            ..Step::default()
        });
        index
    }

    /// Appends a tool call of `tool` with its call id (kept in `ids.refs`); returns its index.
    pub fn call(&mut self, agent: &str, role: &str, tool: &str, content: String, call_id: Option<&str>) -> usize {
        let s = self.push(agent, role, StepKind::ToolCall, content, None);
        self.steps[s].tool_name = Some(tool.to_string()).filter(|t| !t.is_empty());
        if let Some(id) = call_id.filter(|i| !i.is_empty()) {
            self.steps[s].ids.refs.push(id.to_string());
            self.calls.insert(id.to_string(), s);
        }
        self.open.push(s);
        s
    }

    /// Appends the result of the calls named by `call_ids` (by order when none is given or none is
    /// known: the oldest call still open), linked to each of them; returns its index.
    pub fn result(&mut self, agent: &str, role: &str, content: String, call_ids: &[String], is_error: bool) -> usize {
        let mut targets: Vec<usize> = call_ids.iter().filter_map(|id| self.calls.get(id).copied()).collect();
        if targets.is_empty() && !self.open.is_empty() {
            targets.push(self.open[0]);
        }
        let s = self.push(agent, role, StepKind::ToolResult, content, None);
        self.steps[s].is_error = is_error || super::failed_exit(&self.steps[s].content).is_some();
        self.steps[s].ids.refs = call_ids.to_vec();
        for &c in &targets {
            self.open.retain(|&o| o != c);
            self.link(c, s, LinkKind::ToolResult);
        }
        if let Some(&c) = targets.first() {
            self.steps[s].tool_name = self.steps[c].tool_name.clone();
        }
        s
    }

    /// Appends one result that answers every call still open (a harness that answers a turn's
    /// actions with one observation: mini-SWE-agent's format error for a turn with several),
    /// linked to each of them; returns its index.
    pub fn result_of_open(&mut self, agent: &str, role: &str, content: String, is_error: bool) -> usize {
        let rest: Vec<usize> = self.open.iter().skip(1).copied().collect();
        let s = self.result(agent, role, content, &[], is_error);
        for c in rest {
            self.link(c, s, LinkKind::ToolResult);
        }
        self.open.clear();
        s
    }

    /// Closes every open call without a result (a new turn started without one).
    pub fn close_open(&mut self) {
        self.open.clear();
    }

    /// The call step of a call id, when known.
    pub fn call_step(&self, call_id: &str) -> Option<usize> {
        self.calls.get(call_id).copied()
    }

    /// Adds a link once.
    pub fn link(&mut self, from: usize, to: usize, kind: LinkKind) {
        let l = Link { from, to, kind };
        if from != to && !self.links.contains(&l) {
            self.links.push(l);
        }
    }
}

/// The text inside the first `<tag>…</tag>` of `text`, trimmed (`pr_description` of an
/// instance template, `output` of an observation); `None` when the tag is absent or empty.
pub fn tagged<'a>(text: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&close).map_or(text.len(), |e| start + e);
    Some(text[start..end].trim()).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_link_by_id_then_by_order() {
        let mut a = Actions::default();
        let c1 = a.call("main", "assistant", "bash", "ls".into(), Some("c1"));
        let c2 = a.call("main", "assistant", "bash", "pwd".into(), None);
        let r1 = a.result("main", "tool", "Exit code: 2".into(), &["c1".into()], false);
        let r2 = a.result("main", "tool", "/".into(), &[], false);
        let link = |from, to| Link { from, to, kind: LinkKind::ToolResult };
        assert_eq!(a.links, vec![link(c1, r1), link(c2, r2)]);
        assert!(a.steps[r1].is_error);
        assert_eq!(a.steps[r2].tool_name.as_deref(), Some("bash"));
    }

    #[test]
    fn tagged_text_is_trimmed() {
        assert_eq!(tagged("x <pr_description>\n fix it \n</pr_description>", "pr_description"), Some("fix it"));
        assert_eq!(tagged("<output></output>", "output"), None);
    }
}
