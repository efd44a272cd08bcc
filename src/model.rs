//! The trajectory model: what every loader produces and every method reads.
//!
//! No serde here (serde types live at the edges, in `ingest` and `report`). Terms follow
//! `docs/DESIGN.md` §1: a [`Trajectory`] is one run, a [`Step`] one record of it, `index` the 0-based
//! position as loaded (the base Who&When's `mistake_step` uses).

use std::fmt;

/// One run of an agent system: task, ordered steps, outputs and an optional gold label.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trajectory {
    /// Identifier: the file stem, a task id, or a trace id, as the format gives it.
    pub id: String,
    /// The format the trajectory was read from.
    pub source: SourceFormat,
    /// The question or task text given to the system (may be empty when the format has none).
    pub task: String,
    /// The reference answer `o*`, when the format carries one.
    pub expected_output: Option<String>,
    /// The answer the run gave `ô`, when it can be found.
    pub observed_output: Option<String>,
    /// The steps in the order loaded; `steps[i].index == i`.
    pub steps: Vec<Step>,
    /// Agents in order of first appearance, with their role text (system prompt, description).
    pub agents: Vec<AgentInfo>,
    /// Protocol links fixed by the framework (tool call → result, delegation → reply, parent → child).
    pub links: Vec<Link>,
    /// The human label of the decisive error, when the data set has one.
    pub gold: Option<GoldLabel>,
    /// Other key/value facts of the format (level, question id, reward...), for display only.
    pub metadata: Vec<(String, String)>,
}

impl Trajectory {
    /// Agent names in order of first appearance among the steps, then agents that only have a role.
    pub fn agent_names(&self) -> Vec<&str> {
        self.agents.iter().map(|a| a.name.as_str()).collect()
    }

    /// Rebuilds `agents` from the steps, keeping any role text already known.
    ///
    /// Agents that appear in `agents` but never act keep their place at the end.
    pub fn refresh_agents(&mut self) {
        let mut out: Vec<AgentInfo> = Vec::new();
        for step in &self.steps {
            if !out.iter().any(|a| a.name == step.agent) {
                let role = self.agents.iter().find(|a| a.name == step.agent).and_then(|a| a.role.clone());
                out.push(AgentInfo { name: step.agent.clone(), role });
            }
        }
        for a in &self.agents {
            if !out.iter().any(|o| o.name == a.name) {
                out.push(a.clone());
            }
        }
        self.agents = out;
    }

    /// The role text of an agent (case-insensitive name match), if known.
    pub fn agent_role(&self, name: &str) -> Option<&str> {
        self.agents.iter().find(|a| a.name.eq_ignore_ascii_case(name)).and_then(|a| a.role.as_deref())
    }
}

/// An agent of a trajectory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentInfo {
    /// The name recorded at its steps (`WebSurfer`, `Excel_Expert`, `assistant`).
    pub name: String,
    /// Its system prompt or description, when the format gives one.
    pub role: Option<String>,
}

/// The annotated decisive error of a failed trajectory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GoldLabel {
    /// The agent responsible ("who"); compare case-insensitively.
    pub agent: String,
    /// The decisive step ("when"), 0-based like [`Step::index`]; `None` when the label names none.
    pub step: Option<usize>,
    /// The annotator's reason, when given.
    pub reason: Option<String>,
    /// An error category, when the data set gives one.
    pub category: Option<String>,
}

/// The kind of a step, as the trace model of `TRACE_FORMATS.md` §0 defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum StepKind {
    /// A message to another agent or the user.
    #[default]
    Message,
    /// The agent's own reasoning, not addressed to anyone.
    Thought,
    /// A call of a tool (function call, code to execute, span of a tool).
    ToolCall,
    /// What a tool returned (terminal output, function result).
    ToolResult,
    /// A hand-off of work to another agent (`Orchestrator (-> WebSurfer)`, a `Task` call).
    Delegation,
}

impl StepKind {
    /// All kinds, in declaration order.
    pub const ALL: [StepKind; 5] =
        [StepKind::Message, StepKind::Thought, StepKind::ToolCall, StepKind::ToolResult, StepKind::Delegation];

    /// The snake_case name used in reports and the falat JSONL format.
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Message => "message",
            StepKind::Thought => "thought",
            StepKind::ToolCall => "tool_call",
            StepKind::ToolResult => "tool_result",
            StepKind::Delegation => "delegation",
        }
    }

    /// Parses the snake_case name; `None` for anything else.
    pub fn parse(s: &str) -> Option<StepKind> {
        StepKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Ids a format gives a step, kept beside the 0-based index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StepIds {
    /// The step's own id (span id, message uuid, line number as text).
    pub id: Option<String>,
    /// The id of its parent (parent span, `parentUuid`, parent run).
    pub parent: Option<String>,
    /// Reference ids: tool-call ids, call ids, hand-off or spawn targets.
    pub refs: Vec<String>,
    /// The 1-based line of the file the step was read from, for line-based formats whose lines
    /// are records (falat JSONL, Codex rollouts, Claude Code sessions, `codex exec --json`; a
    /// Codex spawned thread's steps give the line in the thread's own file, a Claude Code
    /// sub-agent file's steps none); `None` elsewhere.
    pub line: Option<usize>,
}

/// Token counts reported by the format for one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenCounts {
    /// Prompt / input tokens.
    pub input: u64,
    /// Completion / output tokens.
    pub output: u64,
}

/// One record of a trajectory.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Step {
    /// 0-based position in the trajectory as loaded.
    pub index: usize,
    /// The actor recorded at this step.
    pub agent: String,
    /// The raw role string of the format (`assistant`, `Orchestrator (-> WebSurfer)`, `tool`).
    pub role: String,
    /// What kind of record this is.
    pub kind: StepKind,
    /// For a delegation: the agent the work is handed to.
    pub delegate_to: Option<String>,
    /// For tool calls and results: the tool's name, when known.
    pub tool_name: Option<String>,
    /// The full text of the step (untrusted: sanitise before showing it in a terminal).
    pub content: String,
    /// The format's own ids.
    pub ids: StepIds,
    /// The timestamp as the format writes it (ISO 8601 or unix nanoseconds as text).
    pub timestamp: Option<String>,
    /// Token counts, when present.
    pub tokens: Option<TokenCounts>,
    /// The format marks this step as an error (tool `is_error`, span status ERROR).
    pub is_error: bool,
    /// The format marks this step with a warning, which is no error (Langfuse `level: WARNING`):
    /// the warning's message (`statusMessage`, also written into `content` as `[warning] …`), or
    /// `"WARNING"` when the record gives none. `None` for a step without one.
    pub warning: Option<String>,
}

/// What a protocol link stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LinkKind {
    /// A tool call to its result (matched by call id, or by adjacency where the format has no ids).
    ToolResult,
    /// A delegation to the delegate's reply, or a spawn / hand-off.
    Delegation,
    /// A parent span / run / message to its child.
    Parent,
    /// A code block to the terminal output that ran it.
    Execution,
}

impl LinkKind {
    /// The snake_case name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkKind::ToolResult => "tool_result",
            LinkKind::Delegation => "delegation",
            LinkKind::Parent => "parent",
            LinkKind::Execution => "execution",
        }
    }
}

/// A protocol dependency between two steps, fixed by the framework rather than inferred.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Link {
    /// The earlier (or parent) step, 0-based.
    pub from: usize,
    /// The later (or child) step, 0-based.
    pub to: usize,
    /// What the link stands for.
    pub kind: LinkKind,
}

/// Every format falat reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SourceFormat {
    /// Who&When algorithm-generated (AG2 CaptainAgent teams, `name` is the agent).
    WhoWhenAlgorithm,
    /// Who&When hand-crafted (Magentic-One, agent in the `role` string).
    WhoWhenHand,
    /// A Magentic-One `[{role, content}]` log without labels (AgentRx).
    MagenticLog,
    /// OpenAI Chat Completions messages.
    OpenAiChat,
    /// A τ-bench result record.
    TauBench,
    /// The documented falat JSONL format.
    #[default]
    FalatJsonl,
    /// OTLP/JSON with OpenTelemetry GenAI attributes.
    OtelGenAi,
    /// OpenInference spans.
    OpenInference,
    /// any-agent trace dumps.
    AnyAgent,
    /// Claude Code session JSONL.
    ClaudeCode,
    /// Codex CLI rollout JSONL.
    Codex,
    /// LangSmith run export.
    LangSmith,
    /// Langfuse trace export.
    Langfuse,
    /// SWE-agent 1.x `.traj` trajectory.
    SweAgent,
    /// mini-SWE-agent trajectory (`trajectory_format: mini-swe-agent-1`).
    MiniSweAgent,
    /// OpenHands event list.
    OpenHands,
    /// smolagents memory dump.
    Smolagents,
    /// pydantic-ai spans (OTLP/JSON, Logfire).
    PydanticAi,
    /// Strands Agents spans (OTLP/JSON).
    Strands,
    /// OpenAI Agents SDK trace export (`{"data": [trace, spans...]}`, span lists).
    OpenAiAgents,
    /// `codex exec --json` event stream.
    CodexExec,
    /// Gemini CLI chat recording (`session-*.json`, or its JSON Lines form).
    GeminiCli,
    /// Google ADK saved session, or a list of its events.
    GoogleAdk,
    /// MLflow trace JSON (`Trace.to_dict`, MLflow 2 and 3).
    Mlflow,
    /// Inspect AI eval log (JSON, or the `.eval` ZIP archive).
    InspectAi,
}

impl SourceFormat {
    /// All formats, in the order auto-detection tries them: formats recognised by a
    /// distinctive structure (`history` with Who&When's own keys, SWE-agent `trajectory` +
    /// `history` + `info`, `trajectory_format`, OpenHands events, smolagents steps, OTLP of
    /// pydantic-ai and Strands, `resourceSpans`, `openinference.span.kind`, span lists, Claude Code
    /// `uuid` + `message` lines, Codex `payload` lines, `run_type`, `observations`, `trace.span`
    /// objects, `thread.`/`turn.`/`item.` events, `projectHash`, ADK `invocation_id`, `mlflow.*`
    /// attributes, Inspect `eval`) before the generic message shapes (τ-bench, OpenAI chat, falat
    /// JSONL).
    pub const ALL: [SourceFormat; 25] = [
        SourceFormat::WhoWhenAlgorithm,
        SourceFormat::WhoWhenHand,
        SourceFormat::MagenticLog,
        SourceFormat::SweAgent,
        SourceFormat::MiniSweAgent,
        SourceFormat::OpenHands,
        SourceFormat::Smolagents,
        SourceFormat::PydanticAi,
        SourceFormat::Strands,
        SourceFormat::OtelGenAi,
        SourceFormat::OpenInference,
        SourceFormat::AnyAgent,
        SourceFormat::ClaudeCode,
        SourceFormat::Codex,
        SourceFormat::LangSmith,
        SourceFormat::Langfuse,
        SourceFormat::OpenAiAgents,
        SourceFormat::CodexExec,
        SourceFormat::GeminiCli,
        SourceFormat::GoogleAdk,
        SourceFormat::Mlflow,
        SourceFormat::InspectAi,
        SourceFormat::TauBench,
        SourceFormat::OpenAiChat,
        SourceFormat::FalatJsonl,
    ];

    /// The name used by `--format` and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceFormat::WhoWhenAlgorithm => "who-and-when-algorithm",
            SourceFormat::WhoWhenHand => "who-and-when-hand",
            SourceFormat::MagenticLog => "magentic-one",
            SourceFormat::OpenAiChat => "openai-chat",
            SourceFormat::TauBench => "tau-bench",
            SourceFormat::FalatJsonl => "falat-jsonl",
            SourceFormat::OtelGenAi => "otel-genai",
            SourceFormat::OpenInference => "openinference",
            SourceFormat::AnyAgent => "any-agent",
            SourceFormat::ClaudeCode => "claude-code",
            SourceFormat::Codex => "codex",
            SourceFormat::LangSmith => "langsmith",
            SourceFormat::Langfuse => "langfuse",
            SourceFormat::SweAgent => "swe-agent",
            SourceFormat::MiniSweAgent => "mini-swe-agent",
            SourceFormat::OpenHands => "openhands",
            SourceFormat::Smolagents => "smolagents",
            SourceFormat::PydanticAi => "pydantic-ai",
            SourceFormat::Strands => "strands",
            SourceFormat::OpenAiAgents => "openai-agents",
            SourceFormat::CodexExec => "codex-exec",
            SourceFormat::GeminiCli => "gemini-cli",
            SourceFormat::GoogleAdk => "google-adk",
            SourceFormat::Mlflow => "mlflow",
            SourceFormat::InspectAi => "inspect-ai",
        }
    }

    /// Parses an exact format name as [`SourceFormat::as_str`] writes it (case-insensitive).
    ///
    /// Aliases that stand for several formats (`who-and-when` for either subset) are a `--format`
    /// concern and live in `ingest::FormatChoice`.
    pub fn parse(s: &str) -> Option<SourceFormat> {
        let s = s.trim().to_ascii_lowercase();
        SourceFormat::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

impl fmt::Display for SourceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A problem found while loading that did not stop the load (a skipped record, a guessed field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// 1-based line in the file, when known.
    pub line: Option<usize>,
    /// What was found and what was done about it.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {l}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}
