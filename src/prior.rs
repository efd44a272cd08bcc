//! The task-conditioned prior `π` of FALAT stage 1: how the task should be solved, derived only
//! from the task text, the agents' names and roles (system prompts), never from the steps.
//!
//! The prior gives the expected answer type and constraints, the capabilities the task needs
//! with the agent expected to provide each, the tools the team has, and the expected procedure:
//! the ordered steps a correct run would take (FALAT, "task-conditioned prior": an external
//! expectation of how the task should be solved, built from the task specification, agent roles,
//! system prompts and available tools). Later FALAT stages compare the run against it: recall
//! (deviations from the procedure or the constraints), transition labelling, verification and
//! re-search all see it. The heuristic judge computes it lexically ([`derive`]); the LLM judge
//! asks a model and returns the same type.

use std::sync::LazyLock;

use regex::Regex;

use crate::model::AgentInfo;

/// What kind of value the answer should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnswerType {
    /// A count, amount, percentage or other number.
    Number,
    /// A year or a date.
    Date,
    /// A person's, place's or thing's name.
    Name,
    /// Several items.
    List,
    /// A URL or link.
    Url,
    /// Free text.
    Text,
}

impl AnswerType {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerType::Number => "number",
            AnswerType::Date => "date",
            AnswerType::Name => "name",
            AnswerType::List => "list",
            AnswerType::Url => "url",
            AnswerType::Text => "text",
        }
    }

    /// Parses the lower-case name.
    pub fn parse(s: &str) -> Option<AnswerType> {
        [Self::Number, Self::Date, Self::Name, Self::List, Self::Url, Self::Text].into_iter().find(|a| a.as_str() == s)
    }
}

/// A capability the task needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// Looking things up on the web.
    WebLookup,
    /// Reading an attached or local file.
    FileReading,
    /// Computing (counting, arithmetic, code).
    Computation,
    /// Checking the result against the constraints.
    Verification,
}

impl Capability {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::WebLookup => "web-lookup",
            Capability::FileReading => "file-reading",
            Capability::Computation => "computation",
            Capability::Verification => "verification",
        }
    }

    /// Parses the lower-case name.
    pub fn parse(s: &str) -> Option<Capability> {
        [Self::WebLookup, Self::FileReading, Self::Computation, Self::Verification]
            .into_iter()
            .find(|c| c.as_str() == s)
    }

    fn agent_words(self) -> &'static [&'static str] {
        match self {
            Capability::WebLookup => &["websurfer", "web", "search", "research", "browser", "internet"],
            Capability::FileReading => &["filesurfer", "file", "excel", "document", "reader", "extraction"],
            Capability::Computation => {
                &["terminal", "python", "coder", "code", "math", "calculat", "analysis", "computer"]
            }
            Capability::Verification => &["verif", "valid", "check", "review"],
        }
    }
}

/// One capability with the agent expected to provide it, if any agent fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The capability.
    pub capability: Capability,
    /// The agent whose name or role fits it best.
    pub agent: Option<String>,
}

/// One step of the expected procedure: what should be done and which agent should do it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedStep {
    /// The capability the step exercises (`None` for the final answer).
    pub capability: Option<Capability>,
    /// The agent expected to do it, when one fits.
    pub agent: Option<String>,
    /// What the step does, one short line.
    pub action: String,
}

/// The task-conditioned prior `π`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Prior {
    /// The expected type of the answer.
    pub answer_type: Option<AnswerType>,
    /// Constraints on the answer, quoted from the task (units, rounding, dates, limits).
    pub constraints: Vec<String>,
    /// What the task needs and who should provide it.
    pub requirements: Vec<Requirement>,
    /// Key terms of the task (lower case), used to judge relevance of what the agents do.
    pub key_terms: Vec<String>,
    /// The tools the team has, each with the agent that holds it (`code execution (Computer_terminal)`),
    /// from the agents' names and roles.
    pub tools: Vec<String>,
    /// The expected procedure, in order: gather (web, files), compute, verify against the
    /// constraints, answer in the expected form.
    pub procedure: Vec<ExpectedStep>,
}

impl Prior {
    /// The agent expected to provide a capability, if any.
    pub fn agent_for(&self, c: Capability) -> Option<&str> {
        self.requirements.iter().find(|r| r.capability == c).and_then(|r| r.agent.as_deref())
    }

    /// Whether the task needs a capability.
    pub fn needs(&self, c: Capability) -> bool {
        self.requirements.iter().any(|r| r.capability == c)
    }

    /// `π` as text for a judge's prompt: answer type, constraints, procedure, tools, key terms.
    pub fn describe(&self) -> String {
        let mut out = vec![format!("expected answer: {}", self.answer_type.map_or("unknown", AnswerType::as_str))];
        if !self.constraints.is_empty() {
            out.push(format!("constraints: {}", self.constraints.join("; ")));
        }
        if !self.procedure.is_empty() {
            let steps: Vec<String> = self
                .procedure
                .iter()
                .enumerate()
                .map(|(k, s)| match &s.agent {
                    Some(a) => format!("{}. {} ({a})", k + 1, s.action),
                    None => format!("{}. {}", k + 1, s.action),
                })
                .collect();
            out.push(format!("expected procedure: {}", steps.join("; ")));
        }
        if !self.tools.is_empty() {
            out.push(format!("tools: {}", self.tools.join(", ")));
        }
        if !self.key_terms.is_empty() {
            out.push(format!("key terms: {}", self.key_terms.join(", ")));
        }
        out.join("\n")
    }
}

static CONSTRAINT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(round(ed)? to [^,.;?]+|to the nearest [^,.;?]+|in (thousands|millions|km|miles|meters|minutes|hours|usd|dollars)\b[^,.;?]*|as of [^,.;?]+|(within|under|less than|more than|at least|at most|before|after|between) [^,.;?]+|(comma|space)[- ]separated[^,.;?]*|(two|three|\d) decimal places|without [^,.;?]+|in alphabetical order|abbreviat[^,.;?]+)").unwrap()
});
static WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[A-Za-z][A-Za-z'-]{2,}").unwrap());

const STOP: &[&str] = &[
    "the", "and", "for", "are", "was", "what", "which", "who", "whom", "that", "this", "with", "from", "have", "has",
    "how", "many", "much", "does", "did", "you", "your", "can", "could", "would", "should", "there", "their", "they",
    "into", "about", "give", "answer", "please", "also", "than", "then", "when", "where", "will", "were", "been",
    "only", "some", "each", "other", "more", "most", "such", "just", "any", "all", "its", "it's", "our", "not",
];

/// Derives `π` from the task and the agents, lexically (the heuristic judge's answer).
pub fn derive(task: &str, agents: &[AgentInfo]) -> Prior {
    let lower = task.to_lowercase();
    let answer_type = answer_type(&lower);
    let constraints = CONSTRAINT.find_iter(task).map(|m| m.as_str().trim().to_string()).take(8).collect();
    let mut caps = vec![];
    if has_any(
        &lower,
        &[
            "website",
            "web",
            "wikipedia",
            "online",
            "search",
            "according to",
            "latest",
            "published",
            "article",
            "news",
            "walk",
            "near",
            "open at",
            "price",
            "available on",
            "ranked",
            "imdb",
            "google",
        ],
    ) {
        caps.push(Capability::WebLookup);
    }
    if has_any(
        &lower,
        &[
            "attached",
            "file",
            "spreadsheet",
            ".csv",
            ".xlsx",
            "image",
            "pdf",
            "audio",
            "excel",
            "document",
            "provided",
            "the following",
        ],
    ) {
        caps.push(Capability::FileReading);
    }
    if has_any(
        &lower,
        &[
            "how many",
            "calculate",
            "percentage",
            "percent",
            "sum",
            "average",
            "difference",
            "total",
            "compute",
            "count",
            "number of",
            "ratio",
            "round",
        ],
    ) {
        caps.push(Capability::Computation);
    }
    caps.push(Capability::Verification);
    let requirements: Vec<Requirement> =
        caps.into_iter().map(|c| Requirement { capability: c, agent: best_agent(c, agents) }).collect();
    let mut p = Prior { answer_type, constraints, requirements, key_terms: key_terms(task), ..Prior::default() };
    p.tools = tools(agents);
    p.procedure = procedure(&p);
    p
}

/// The tools the team holds: an agent whose name or role names a tool-backed capability
/// (browsing, file reading, code execution) holds that tool.
pub fn tools(agents: &[AgentInfo]) -> Vec<String> {
    let kinds = [
        (Capability::WebLookup, "web browser"),
        (Capability::FileReading, "file reader"),
        (Capability::Computation, "code execution"),
    ];
    kinds.iter().filter_map(|(c, name)| best_agent(*c, agents).map(|a| format!("{name} ({a})"))).collect()
}

/// The expected procedure from the requirements: every needed capability in the order a run uses
/// them (gather, compute, verify), then the answer in the expected form under the constraints.
pub fn procedure(p: &Prior) -> Vec<ExpectedStep> {
    let mut out = Vec::new();
    let topic = p.key_terms.iter().take(4).cloned().collect::<Vec<_>>().join(" ");
    for r in &p.requirements {
        let action = match r.capability {
            Capability::WebLookup => format!("look up {topic} from an authoritative source"),
            Capability::FileReading => "read the provided file".to_string(),
            Capability::Computation => "compute the answer from the gathered values".to_string(),
            Capability::Verification => "check the result against the task and its constraints".to_string(),
        };
        out.push(ExpectedStep { capability: Some(r.capability), agent: r.agent.clone(), action });
    }
    let form = p.answer_type.map_or("the answer", AnswerType::as_str);
    let action = if p.constraints.is_empty() {
        format!("answer with a {form}")
    } else {
        format!("answer with a {form} that meets: {}", p.constraints.join("; "))
    };
    out.push(ExpectedStep { capability: None, agent: None, action });
    out
}

fn answer_type(lower: &str) -> Option<AnswerType> {
    let rules: &[(&[&str], AnswerType)] = &[
        (&["url", "link to"], AnswerType::Url),
        (
            &[
                "how many",
                "how much",
                "what percentage",
                "what number",
                "what is the total",
                "how long",
                "how far",
                "how old",
                "what is the sum",
                "what is the average",
                "calculate",
                "what is the difference",
            ],
            AnswerType::Number,
        ),
        (
            &["what year", "which year", "in what year", "what date", "when did", "when was", "what month"],
            AnswerType::Date,
        ),
        (&["list", "which ones", "what are the", "name all", "comma separated", "comma-separated"], AnswerType::List),
        (
            &[
                "who ",
                "whom",
                "what is the name",
                "which person",
                "what's the name",
                "which company",
                "which city",
                "which country",
                "what is the title",
                "which ",
                "where ",
            ],
            AnswerType::Name,
        ),
    ];
    rules.iter().find(|(words, _)| has_any(lower, words)).map(|(_, t)| *t).or(Some(AnswerType::Text))
}

fn has_any(hay: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| hay.contains(n))
}

fn best_agent(c: Capability, agents: &[AgentInfo]) -> Option<String> {
    let score = |a: &AgentInfo| {
        let name = a.name.to_lowercase();
        let role = a.role.as_deref().unwrap_or_default().to_lowercase();
        c.agent_words().iter().map(|w| 2 * usize::from(name.contains(w)) + usize::from(role.contains(w))).sum::<usize>()
    };
    agents.iter().map(|a| (score(a), a)).filter(|(s, _)| *s > 0).max_by_key(|(s, _)| *s).map(|(_, a)| a.name.clone())
}

/// Content words of the task (lower case, no stop words, first occurrence order, at most 24).
pub fn key_terms(task: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in WORD.find_iter(task) {
        let w = m.as_str().to_lowercase();
        if w.len() < 4 || STOP.contains(&w.as_str()) || out.contains(&w) {
            continue;
        }
        out.push(w);
        if out.len() == 24 {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prior_from_task_and_agents() {
        let agents = vec![
            AgentInfo { name: "WebSurfer".into(), role: None },
            AgentInfo { name: "ComputerTerminal".into(), role: None },
            AgentInfo { name: "Verification_Expert".into(), role: None },
        ];
        let p = derive(
            "How many studio albums were published by Mercedes Sosa between 2000 and 2009 according to Wikipedia?",
            &agents,
        );
        assert_eq!(p.answer_type, Some(AnswerType::Number));
        assert_eq!(p.constraints, vec!["between 2000 and 2009 according to Wikipedia".to_string()]);
        let caps: Vec<(Capability, Option<&str>)> =
            p.requirements.iter().map(|r| (r.capability, r.agent.as_deref())).collect();
        assert_eq!(
            caps,
            vec![
                (Capability::WebLookup, Some("WebSurfer")),
                (Capability::Computation, Some("ComputerTerminal")),
                (Capability::Verification, Some("Verification_Expert")),
            ]
        );
        assert!(p.key_terms.contains(&"mercedes".to_string()));
        assert_eq!(
            p.tools,
            vec!["web browser (WebSurfer)".to_string(), "code execution (ComputerTerminal)".to_string()]
        );
        let procedure: Vec<(Option<Capability>, Option<&str>, &str)> =
            p.procedure.iter().map(|s| (s.capability, s.agent.as_deref(), s.action.as_str())).collect();
        assert_eq!(
            procedure,
            vec![
                (
                    Some(Capability::WebLookup),
                    Some("WebSurfer"),
                    "look up studio albums published mercedes from an authoritative source"
                ),
                (
                    Some(Capability::Computation),
                    Some("ComputerTerminal"),
                    "compute the answer from the gathered values"
                ),
                (
                    Some(Capability::Verification),
                    Some("Verification_Expert"),
                    "check the result against the task and its constraints"
                ),
                (None, None, "answer with a number that meets: between 2000 and 2009 according to Wikipedia"),
            ]
        );
        assert_eq!(p.agent_for(Capability::Computation), Some("ComputerTerminal"));
        assert!(!p.needs(Capability::FileReading));
        assert!(p.describe().contains("expected procedure: 1. look up studio albums published mercedes"));
    }
}
