//! A small builder of steps and links for the loaders whose records are already in order
//! (event streams and chat logs: Codex exec, Gemini CLI, Google ADK, Inspect AI).
//!
//! It numbers steps as they are pushed, remembers tool calls by the format's call id, links a
//! result to its call ([`LinkKind::ToolResult`]) and a delegation to the delegate's next step
//! ([`LinkKind::Delegation`]), and collects agents' role text.

use std::collections::HashMap;

use crate::model::{AgentInfo, Link, LinkKind, Step, StepIds, StepKind, TokenCounts};

/// Steps, links and agents being built, in order.
#[derive(Debug, Default)]
pub struct Builder {
    /// The steps so far (`index` set).
    pub steps: Vec<Step>,
    /// The links so far.
    pub links: Vec<Link>,
    /// Agents with role text (system prompts).
    pub agents: Vec<AgentInfo>,
    /// Call id → its call step.
    calls: HashMap<String, usize>,
    /// Delegation steps not yet linked, with the agent delegated to.
    delegations: Vec<(usize, String)>,
}

impl Builder {
    /// Appends a step; returns its index.
    pub fn push(&mut self, agent: &str, role: &str, kind: StepKind, content: String) -> usize {
        let index = self.steps.len();
        self.steps.push(Step {
            index,
            agent: agent.to_string(),
            role: role.to_string(),
            kind,
            content,
            ..Step::default()
        });
        index
    }

    /// The last step pushed.
    pub fn last(&mut self) -> Option<&mut Step> {
        self.steps.last_mut()
    }

    /// Appends a tool call step for `tool`, remembered under `id` when given.
    pub fn call(&mut self, agent: &str, role: &str, tool: &str, id: Option<&str>, content: String) -> usize {
        let s = self.push(agent, role, StepKind::ToolCall, content);
        self.steps[s].tool_name = Some(tool.to_string());
        if let Some(id) = id.filter(|i| !i.is_empty()) {
            self.steps[s].ids.refs.push(id.to_string());
            self.calls.insert(id.to_string(), s);
        }
        s
    }

    /// Appends a tool result step answering call `id`, linked to that call when it is known; its
    /// tool name is the call's when `tool` is `None`.
    pub fn result(&mut self, agent: &str, role: &str, tool: Option<&str>, id: Option<&str>, content: String) -> usize {
        let call = id.and_then(|i| self.calls.get(i).copied());
        let s = self.push(agent, role, StepKind::ToolResult, content);
        let name = tool.map(str::to_string).or_else(|| call.and_then(|c| self.steps[c].tool_name.clone()));
        self.steps[s].tool_name = name;
        if let Some(id) = id.filter(|i| !i.is_empty()) {
            self.steps[s].ids.refs.push(id.to_string());
        }
        if let Some(c) = call {
            self.link(c, s, LinkKind::ToolResult);
        }
        s
    }

    /// The call step remembered under `id`.
    pub fn call_step(&self, id: &str) -> Option<usize> {
        self.calls.get(id).copied()
    }

    /// Marks step `s` as a delegation to `to`, linked to `to`'s next step when [`Builder::finish`]
    /// runs.
    pub fn delegate(&mut self, s: usize, to: &str) {
        self.steps[s].kind = StepKind::Delegation;
        self.steps[s].delegate_to = Some(to.to_string());
        self.delegations.push((s, to.to_string()));
    }

    /// Adds a link (no self-links, no duplicates).
    pub fn link(&mut self, from: usize, to: usize, kind: LinkKind) {
        let l = Link { from, to, kind };
        if from != to && !self.links.contains(&l) {
            self.links.push(l);
        }
    }

    /// Sets the ids and timestamp of step `s`.
    pub fn ids(&mut self, s: usize, id: Option<String>, parent: Option<String>, timestamp: Option<String>) {
        let step = &mut self.steps[s];
        step.ids = StepIds { id, parent, refs: std::mem::take(&mut step.ids.refs), line: step.ids.line };
        step.timestamp = timestamp;
    }

    /// Puts token counts on step `s` unless it has some.
    pub fn tokens(&mut self, s: usize, input: u64, output: u64) {
        let step = &mut self.steps[s];
        if step.tokens.is_none() {
            step.tokens = Some(TokenCounts { input, output });
        }
    }

    /// Adds role text (a system prompt) to an agent.
    pub fn role(&mut self, agent: &str, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        match self.agents.iter_mut().find(|a| a.name == agent) {
            Some(a) if a.role.as_deref().is_some_and(|r| r.contains(text)) => {}
            Some(a) => a.role = Some(format!("{}\n\n{text}", a.role.take().unwrap_or_default()).trim().to_string()),
            None => self.agents.push(AgentInfo { name: agent.to_string(), role: Some(text.to_string()) }),
        }
    }

    /// Links each delegation to the delegate's next step.
    pub fn finish(&mut self) {
        for (s, to) in std::mem::take(&mut self.delegations) {
            if let Some(j) = (s + 1..self.steps.len()).find(|&j| self.steps[j].agent == to) {
                self.link(s, j, LinkKind::Delegation);
            }
        }
    }
}

/// `text` with `[error] detail` appended on a new line unless it already holds `detail`.
pub fn with_error(text: &str, detail: &str) -> String {
    match (text.trim().is_empty(), detail.trim().is_empty() || text.contains(detail)) {
        (_, true) => text.to_string(),
        (true, false) => format!("[error] {detail}"),
        (false, false) => format!("{text}\n[error] {detail}"),
    }
}
