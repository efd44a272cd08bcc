//! Why a diagnosis names its decisive step, as data.
//!
//! Every method returns a raw verdict: the step, the rule that chose it and the evidence it
//! read ([`Explanation::findings`], [`Explanation::account`]). The shared finishing step
//! (`methods::finish`) adds what follows from the ranking and the dependency graph as
//! [`Claim`]s, each built from the facts it states, and the [`Caveat`]s that apply. The Markdown
//! report, the JSON report and the TUI render this one value ([`Explanation::render`],
//! [`Claim::sentence`]), so they cannot disagree with each other or with the facts. Steps are
//! 0-based everywhere.

use super::{ErrorCategory, Finding, Method, Signal};
use crate::text;

/// How the decisive step was chosen.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Rule {
    /// The method's own decision rule named it ([`Method::decision_rule`]).
    #[default]
    Method,
    /// The user pinned it; the method's findings on it, if any, are kept as context.
    Pinned,
    /// The method's rule named nothing and its fallback named the step; `why` says which
    /// fallback and why in one clause.
    Fallback {
        /// The fallback's name when the method has named fallbacks (FALAT: `strongest-live`,
        /// `earliest-live`, `ranked-first`); empty otherwise.
        name: String,
        /// Why the rule named nothing and what the fallback did, one clause.
        why: String,
    },
    /// The method's rule did not tell its candidates apart (FALAT: every verified candidate passed,
    /// or none did) and handed the decision to the calibrated ranking: the most probable step the
    /// user did not exclude. `why` says what verification did, one clause.
    Ranking {
        /// What verification did, one clause.
        why: String,
        /// When the named step has no finding of its own: the first sign that the run failed,
        /// one clause (`step 3 is an error`), so the verdict does not read like a run with no
        /// failure given a ROOT_CAUSE anyway.
        failure: Option<String>,
    },
    /// The method named no step at all; the finishing step named the best-ranked step the user did
    /// not exclude.
    RankedFirst,
    /// No step could be named (an empty trajectory).
    Nothing,
    /// The run shows no failure (FALAT: nothing recalled, no error, no mismatch with the expected
    /// output), so no ROOT_CAUSE is named; `why` says what was checked, one clause.
    NoFailure {
        /// What was checked, one clause.
        why: String,
    },
}

impl Rule {
    /// The snake_case name of the rule for the JSON report.
    pub fn as_str(&self) -> &'static str {
        match self {
            Rule::Method => "method_rule",
            Rule::Pinned => "pinned",
            Rule::Fallback { .. } => "fallback",
            Rule::Ranking { .. } => "ranking",
            Rule::RankedFirst => "ranked_first",
            Rule::Nothing => "nothing",
            Rule::NoFailure { .. } => "no_failure",
        }
    }
}

/// A statement a report makes about the decisive step, built from the facts it states.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The decisive step is the most probable step of the ranking.
    RanksFirst {
        /// The step, 0-based.
        step: usize,
        /// Its probability `P`.
        p: f32,
    },
    /// Another step is more probable than the decisive one (as reports print them, two decimals).
    MoreProbable {
        /// The more probable step, 0-based.
        step: usize,
        /// Its agent.
        agent: String,
        /// Its probability `P`.
        p: f32,
        /// The decisive step, 0-based.
        named: usize,
        /// The decisive step's probability.
        p_named: f32,
    },
    /// A dependency path leads from the decisive step to the final output's step.
    PathToOutput {
        /// The path, 0-based steps, the decisive step first; one step when it is itself the final
        /// output's step.
        path: Vec<usize>,
    },
    /// No dependency path leads from the decisive step to the final output's step.
    NoPathToOutput {
        /// The decisive step.
        from: usize,
        /// The step the analysis takes as the final output, when it has one.
        final_step: Option<usize>,
        /// Whether the decisive step states the observed output itself.
        states_observed: bool,
        /// The evidence of its passed sufficiency check, when it passed on other evidence.
        sufficiency: Option<String>,
    },
}

impl Claim {
    /// The kind's snake_case name for the JSON report.
    pub fn as_str(&self) -> &'static str {
        match self {
            Claim::RanksFirst { .. } => "ranks_first",
            Claim::MoreProbable { .. } => "more_probable",
            Claim::PathToOutput { .. } => "path_to_output",
            Claim::NoPathToOutput { .. } => "no_path_to_output",
        }
    }

    /// The steps the claim cites, 0-based, in the order the sentence names them.
    pub fn steps(&self) -> Vec<usize> {
        match self {
            Claim::RanksFirst { step, .. } => vec![*step],
            Claim::MoreProbable { step, named, .. } => vec![*step, *named],
            Claim::PathToOutput { path } => path.clone(),
            Claim::NoPathToOutput { from, final_step, .. } => std::iter::once(*from).chain(*final_step).collect(),
        }
    }

    /// The claim as one or two sentences (sanitised). `method` and `fallback` word the
    /// "more probable" claim: the rule or fallback that named the step instead of the ranking.
    pub fn sentence(&self, method: Method, rule: &Rule) -> String {
        match self {
            Claim::RanksFirst { step, p } => format!("Step {step} ranks first among all steps (P = {p:.2})."),
            Claim::MoreProbable { step, agent, p, named, p_named } => {
                let how = match rule {
                    Rule::Fallback { why, .. } => format!("step {named} by its fallback ({})", text::sanitize(why)),
                    Rule::Pinned => format!("step {named} because you pinned it"),
                    Rule::RankedFirst => format!("step {named}, the best-ranked step you did not exclude"),
                    Rule::Ranking { why, .. } => format!("step {named} because {}", text::sanitize(why)),
                    Rule::Method | Rule::Nothing | Rule::NoFailure { .. } => {
                        format!("step {named} because it is {}", method.decision_rule())
                    }
                };
                format!(
                    "Step {step} ({}) is more probable than step {named} (P {p:.2} against {p_named:.2}). {} names \
                     {how}; it does not name the step that ranks first by P, so read both.",
                    text::sanitize(agent),
                    method.title()
                )
            }
            Claim::PathToOutput { path } if path.len() == 1 => {
                format!("Step {} is itself the final output's step (the step that states the run's answer).", path[0])
            }
            Claim::PathToOutput { path } => {
                let p: Vec<String> = path.iter().map(|s| s.to_string()).collect();
                format!("Dependency path to the final output: {}.", p.join(" → "))
            }
            Claim::NoPathToOutput { from, final_step, states_observed, sufficiency } => {
                let end = match final_step {
                    Some(e) => format!("step {e}, the final output's step (the step that states the run's answer)"),
                    None => "the final output's step".to_string(),
                };
                let mut s = format!("The dependency graph has no path from step {from} to {end}.");
                if *states_observed {
                    s.push_str(&format!(" Step {from} states the observed output itself."));
                }
                if let Some(e) = sufficiency {
                    s.push_str(&format!(" Its sufficiency check passed on other evidence: {}.", text::sanitize(e)));
                }
                s
            }
        }
    }
}

/// Something a reader should weigh with the verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Caveat {
    /// The method caps the confidence of a step its fallback named; the cap applied here.
    ConfidenceCapped {
        /// The cap, 0..=1.
        cap: f32,
    },
    /// The confidence is below [`super::LOW_CONFIDENCE`]: no step stands out.
    LowConfidence {
        /// The stated confidence.
        confidence: f32,
    },
    /// The offline judge answered the method's questions in place of the model its paper uses.
    OfflineJudge,
}

impl Caveat {
    /// The kind's snake_case name for the JSON report.
    pub fn as_str(&self) -> &'static str {
        match self {
            Caveat::ConfidenceCapped { .. } => "confidence_capped",
            Caveat::LowConfidence { .. } => "low_confidence",
            Caveat::OfflineJudge => "offline_judge",
        }
    }
}

/// Why a diagnosis names its decisive step: the rule, the evidence, the claims and the caveats.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Explanation {
    /// The rule that chose the decisive step.
    pub rule: Rule,
    /// The findings on the decisive step the method read (FALAT: its candidate's findings; DeFA:
    /// the adjudicated candidate's), strongest first as the method recorded them.
    pub findings: Vec<Finding>,
    /// The method's or its judge's own words about the step (ECHO's synthesis, a baseline judge's
    /// reason, DeFA's adjudication), without the step's name, which rendering puts first; empty
    /// when the findings say it all.
    pub account: String,
    /// FALAT's local re-search: what the blind comparison concluded, one clause.
    pub research: Option<String>,
    /// What follows from the ranking and the graph ([`Claim`]), set by the finishing step.
    pub claims: Vec<Claim>,
    /// What to weigh with the verdict ([`Caveat`]), set by the finishing step.
    pub caveats: Vec<Caveat>,
}

impl Explanation {
    /// The category the explanation supports: the user's pin, else the strongest finding's
    /// category (the first in [`Signal::PRIORITY`] order among the findings), else `fallback`
    /// (the category the method's judge gave, for methods without findings).
    pub fn category(&self, fallback: ErrorCategory) -> ErrorCategory {
        if self.rule == Rule::Pinned {
            return ErrorCategory::UserPinned;
        }
        main_signal(&self.findings).map_or(fallback, Signal::category)
    }

    /// The reason in a few sentences: the decisive step and its agent first, then the evidence
    /// (each finding with its signal), the rule when it is a fallback, the re-search. Sanitised,
    /// at most 600 characters.
    pub fn render(&self, step: Option<usize>, agent: Option<&str>) -> String {
        let Some(s) = step else {
            return match &self.rule {
                Rule::NoFailure { why } => format!("No failure found: {}.", text::sanitize(why)),
                _ => "No step could be named.".to_string(),
            };
        };
        let who = text::sanitize(agent.unwrap_or("?"));
        let evidence: Vec<String> = self
            .findings
            .iter()
            .filter(|f| !(self.rule == Rule::Pinned && f.signal == Signal::UserMarked))
            .map(|f| format!("{} ({})", f.evidence, f.signal.as_str()))
            .collect();
        let mut said = evidence.join("; ");
        let account = text::sanitize(self.account.trim().trim_end_matches('.'));
        if !account.is_empty() {
            said = if said.is_empty() { account } else { format!("{said}; {account}") };
        }
        if said.is_empty()
            && let Rule::Fallback { why, .. } = &self.rule
        {
            // Nothing found on the step: the fallback's own clause says why it is named.
            said = text::sanitize(why);
        }
        let mut out = match &self.rule {
            Rule::Pinned if said.is_empty() => format!("step {s} ({who}) was pinned by the user."),
            Rule::Pinned => format!("step {s} ({who}) was pinned by the user; the machine found: {said}."),
            Rule::RankedFirst if said.is_empty() => {
                format!("step {s} ({who}): the method named no step; this is the best-ranked step.")
            }
            Rule::Ranking { failure: Some(failure), .. } if said.is_empty() => format!(
                "step {s} ({who}): no finding recorded for this step; the run shows its failure elsewhere: {}.",
                text::sanitize(failure)
            ),
            _ if said.is_empty() => format!("step {s} ({who}): no finding recorded for this step."),
            _ => format!("step {s} ({who}): {said}."),
        };
        match &self.rule {
            Rule::Fallback { name, .. } if !name.is_empty() => {
                out = format!("Unverified ({name} fallback). {}", text::sentence_case(&out));
            }
            Rule::Fallback { why, .. } => {
                out = format!("Fallback ({}). {}", text::sanitize(why), text::sentence_case(&out));
            }
            Rule::Ranking { why, .. } => {
                out = format!("Decided by the ranking ({}). {}", text::sanitize(why), text::sentence_case(&out));
            }
            _ => {}
        }
        if let Some(r) = &self.research {
            out.push_str(&format!(" Re-search: {}.", text::sanitize(r.trim_end_matches('.'))));
        }
        text::clip(&out, 600)
    }
}

/// The signal that best names the error among `findings`: by [`Signal::PRIORITY`] (what a step
/// invents or assumes outranks how its actions fail), ties broken by weight.
pub fn main_signal(findings: &[Finding]) -> Option<Signal> {
    let rank = |s: Signal| Signal::PRIORITY.iter().position(|p| *p == s).unwrap_or(usize::MAX);
    findings
        .iter()
        .min_by(|a, b| rank(a.signal).cmp(&rank(b.signal)).then(b.weight.total_cmp(&a.weight)))
        .map(|f| f.signal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(signal: Signal, evidence: &str) -> Finding {
        Finding { signal, evidence: evidence.into(), weight: 0.5 }
    }

    #[test]
    fn the_reason_names_the_step_first_and_a_fallback_says_so() {
        let mut e = Explanation {
            findings: vec![finding(Signal::UnsourcedValue, "states 42 with no earlier source")],
            ..Explanation::default()
        };
        assert_eq!(
            e.render(Some(3), Some("Coder")),
            "step 3 (Coder): states 42 with no earlier source (unsourced_value)."
        );
        assert_eq!(e.category(ErrorCategory::Unknown), ErrorCategory::Hallucination);
        e.rule = Rule::Fallback { name: "strongest-live".into(), why: "no candidate passed".into() };
        e.research = Some("the blind comparison also names step 3".into());
        assert_eq!(
            e.render(Some(3), Some("Coder")),
            "Unverified (strongest-live fallback). Step 3 (Coder): states 42 with no earlier source \
             (unsourced_value). Re-search: the blind comparison also names step 3."
        );
        e.rule = Rule::Pinned;
        assert_eq!(e.category(ErrorCategory::Unknown), ErrorCategory::UserPinned);
        assert_eq!(e.render(None, None), "No step could be named.");
    }

    #[test]
    fn claims_cite_their_steps_and_word_the_rule() {
        let c = Claim::MoreProbable { step: 5, agent: "a".into(), p: 0.49, named: 2, p_named: 0.1 };
        assert_eq!(c.steps(), [5, 2]);
        let s = c.sentence(Method::Falat, &Rule::RankedFirst);
        assert!(s.starts_with("Step 5 (a) is more probable than step 2 (P 0.49 against 0.10)."), "{s}");
        assert!(s.contains("the best-ranked step you did not exclude"), "{s}");
        let p = Claim::PathToOutput { path: vec![4] };
        assert_eq!(
            p.sentence(Method::Falat, &Rule::Method),
            "Step 4 is itself the final output's step (the step that states the run's answer)."
        );
    }
}
