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
        why: Prose,
    },
    /// The method's rule did not tell its candidates apart (FALAT: every verified candidate passed,
    /// or none did) and handed the decision to the calibrated ranking: the most probable step the
    /// user did not exclude. `why` says what verification did, one clause.
    Ranking {
        /// What verification did, one clause.
        why: Prose,
        /// When the named step has no finding of its own: the first sign that the run failed,
        /// one clause (`step 3 is an error`), so the verdict does not read like a run with no
        /// failure given a ROOT_CAUSE anyway.
        failure: Option<Prose>,
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
        why: Prose,
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

/// Where a step more probable than the named one stood in the method's verification, so that
/// the claim can say why it is not the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// The method verifies no candidates: nothing to say beyond the rule.
    Unverified,
    /// It was not kept as a candidate, so it was never verified.
    NotCandidate,
    /// It was a candidate, set aside (pruned) before verification.
    Pruned,
    /// It was a candidate left unchecked.
    Unchecked,
    /// It was verified and failed independence or sufficiency.
    FailedVerification,
    /// It was verified and passed both; the rule named another step.
    PassedVerification,
}

impl Standing {
    /// Why the step is not the verdict, one clause after its number ("step 24 was not a
    /// candidate and was not verified"), or `None` when the method verifies nothing.
    pub fn clause(self) -> Option<&'static str> {
        match self {
            Standing::Unverified => None,
            Standing::NotCandidate => Some(" was not a candidate and was not verified"),
            Standing::Pruned => Some(" was a candidate set aside before verification"),
            Standing::Unchecked => Some(" was a candidate but was not verified"),
            Standing::FailedVerification => Some(" failed verification"),
            Standing::PassedVerification => Some(" passed verification too"),
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
        /// Where the more probable step stood in verification: why it is not the verdict.
        standing: Standing,
    },
    /// A dependency path leads from the decisive step to the final output's step.
    PathToOutput {
        /// The path, 0-based steps, the decisive step first; one step when it is itself the final
        /// output's step.
        path: Vec<usize>,
        /// Whether the final output's step states the run's answer (a final-answer line, the
        /// recorded observed output); `false` when it is only the run's last step of substance.
        answer_stated: bool,
    },
    /// No dependency path leads from the decisive step to the final output's step.
    NoPathToOutput {
        /// The decisive step.
        from: usize,
        /// The step the analysis takes as the final output, when it has one.
        final_step: Option<usize>,
        /// Whether that step states the run's answer (as in [`Claim::PathToOutput`]).
        answer_stated: bool,
        /// Whether the decisive step states the observed output itself.
        states_observed: bool,
        /// The evidence of its passed sufficiency check, when it passed on other evidence.
        sufficiency: Option<Prose>,
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
            Claim::PathToOutput { path, .. } => path.clone(),
            Claim::NoPathToOutput { from, final_step, .. } => std::iter::once(*from).chain(*final_step).collect(),
        }
    }

    /// The claim as one or two sentences (sanitised). `method` and `fallback` word the
    /// "more probable" claim: the rule or fallback that named the step instead of the ranking.
    pub fn sentence(&self, method: Method, rule: &Rule) -> String {
        join(&self.parts(method, rule))
    }

    /// [`Claim::sentence`] as [`Part`]s: every step the sentence names is a [`Part::Step`], so a
    /// reader can make it a link without reading the text back.
    pub fn parts(&self, method: Method, rule: &Rule) -> Vec<Part> {
        use Part::{Step, Text};
        let t = |s: &str| Text(s.to_string());
        match self {
            Claim::RanksFirst { step, p } => {
                vec![t("Step "), Step(*step), Text(format!(" ranks first among all steps (P = {p:.2})."))]
            }
            Claim::MoreProbable { step, agent, p, named, p_named, standing } => {
                let how: Vec<Part> = match rule {
                    Rule::Fallback { why, .. } => [vec![t(" by its fallback (")], clean(why), vec![t(")")]].concat(),
                    Rule::Pinned => vec![t(" because you pinned it")],
                    Rule::RankedFirst => vec![t(", the best-ranked step you did not exclude")],
                    Rule::Ranking { why, .. } => [vec![t(" because ")], clean(why)].concat(),
                    Rule::Method | Rule::Nothing | Rule::NoFailure { .. } => {
                        vec![Text(format!(" because it is {}", method.decision_rule()))]
                    }
                };
                let mut out = vec![
                    t("Step "),
                    Step(*step),
                    Text(format!(" ({}) is more probable than step ", text::sanitize(agent))),
                    Step(*named),
                    Text(format!(" (P {p:.2} against {p_named:.2}). {} names step ", method.title())),
                    Step(*named),
                ];
                out.extend(how);
                match standing.clause() {
                    Some(why) => out.extend([t("; step "), Step(*step), Text(format!("{why}, so read both."))]),
                    None => out.push(t("; it does not name the step that ranks first by P, so read both.")),
                }
                out
            }
            Claim::PathToOutput { path, answer_stated } if path.len() == 1 => vec![
                t("Step "),
                Step(path[0]),
                Text(format!(" is itself the final output's step ({}).", final_output_gloss(*answer_stated))),
            ],
            Claim::PathToOutput { path, .. } => {
                let mut out = vec![t("Dependency path to the final output: ")];
                for (i, s) in path.iter().enumerate() {
                    if i > 0 {
                        out.push(t(" → "));
                    }
                    out.push(Step(*s));
                }
                out.push(t("."));
                out
            }
            Claim::NoPathToOutput { from, final_step, answer_stated, states_observed, sufficiency } => {
                let mut out = vec![t("The dependency graph has no path from step "), Step(*from), t(" to ")];
                match final_step {
                    Some(e) => out.extend([
                        t("step "),
                        Step(*e),
                        Text(format!(", the final output's step ({})", final_output_gloss(*answer_stated))),
                    ]),
                    None => out.push(t("the final output's step")),
                }
                out.push(t("."));
                if *states_observed {
                    out.extend([t(" Step "), Step(*from), t(" states the observed output itself.")]);
                }
                if let Some(e) = sufficiency {
                    out.push(t(" Its sufficiency check passed on other evidence: "));
                    out.extend(clean(e));
                    out.push(t("."));
                }
                out
            }
        }
    }
}

/// What the final output's step is, in parentheses after its name: the step stating the run's
/// answer, or, when no step states one, the run's last step of substance.
fn final_output_gloss(answer_stated: bool) -> &'static str {
    if answer_stated {
        "the step that states the run's answer"
    } else {
        "the run's last step of substance: no step states an answer"
    }
}

/// A piece of a rendered sentence: prose, or a step it names (0-based). Rendering joins them
/// ([`join`]); the TUI makes each [`Part::Step`] a link, so links come from the data that wrote
/// the sentence, never from reading step numbers back out of prose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text, sanitised.
    Text(String),
    /// A step the text names, written as its number.
    Step(usize),
}

impl Part {
    /// The part as written.
    pub fn as_text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Part::Text(t) => std::borrow::Cow::Borrowed(t),
            Part::Step(s) => std::borrow::Cow::Owned(s.to_string()),
        }
    }
}

impl From<&str> for Part {
    fn from(s: &str) -> Part {
        Part::Text(s.to_string())
    }
}

impl From<String> for Part {
    fn from(s: String) -> Part {
        Part::Text(s)
    }
}

impl From<&String> for Part {
    fn from(s: &String) -> Part {
        Part::Text(s.clone())
    }
}

/// A sentence that names steps as data: its [`Part`]s (text and 0-based [`Part::Step`]s) with the
/// joined text kept beside them, so it reads as a `str` (it dereferences to its text) while
/// the TUI links each step and the JSON report lists them ([`Prose::steps`]). Findings' evidence,
/// pruning reasons, verification criteria and rule clauses are `Prose`; build one with the
/// [`crate::prose!`] macro (`prose!["repeats step ", Part::Step(4), "'s observation"]`) or from
/// a plain string, which names no step.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Prose {
    parts: Vec<Part>,
    text: String,
}

impl Prose {
    /// Prose of `parts`; adjacent text parts are merged and empty ones dropped.
    pub fn new(parts: Vec<Part>) -> Prose {
        let mut merged: Vec<Part> = Vec::with_capacity(parts.len());
        for p in parts {
            match (merged.last_mut(), p) {
                (_, Part::Text(t)) if t.is_empty() => {}
                (Some(Part::Text(a)), Part::Text(b)) => a.push_str(&b),
                (_, p) => merged.push(p),
            }
        }
        let text = join(&merged);
        Prose { parts: merged, text }
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The text as written (step numbers as their numbers).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The steps the text names, 0-based, in order of mention (repeats kept).
    pub fn steps(&self) -> impl Iterator<Item = usize> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Step(s) => Some(*s),
            Part::Text(_) => None,
        })
    }

    /// The same prose with every text part passed through [`text::sanitize`] (trace text is
    /// untrusted) and clipped to `max` characters ([`clip_parts`]).
    pub fn sanitized(self, max: usize) -> Prose {
        let parts = self
            .parts
            .into_iter()
            .map(|p| match p {
                Part::Text(t) => Part::Text(text::sanitize(&t)),
                step => step,
            })
            .collect();
        Prose::new(clip_parts(parts, max))
    }

    /// Prose with `more` appended.
    pub fn with(self, more: impl Into<Prose>) -> Prose {
        let mut parts = self.parts;
        parts.extend(more.into().parts);
        Prose::new(parts)
    }
}

impl std::ops::Deref for Prose {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl std::fmt::Display for Prose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::fmt::Debug for Prose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.text, f)
    }
}

impl From<String> for Prose {
    fn from(s: String) -> Prose {
        Prose::new(vec![Part::Text(s)])
    }
}

impl From<&str> for Prose {
    fn from(s: &str) -> Prose {
        Prose::new(vec![Part::Text(s.to_string())])
    }
}

impl From<&String> for Prose {
    fn from(s: &String) -> Prose {
        Prose::from(s.as_str())
    }
}

impl From<Vec<Part>> for Prose {
    fn from(parts: Vec<Part>) -> Prose {
        Prose::new(parts)
    }
}

impl From<Prose> for String {
    fn from(p: Prose) -> String {
        p.text
    }
}

impl PartialEq<str> for Prose {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for Prose {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl PartialEq<String> for Prose {
    fn eq(&self, other: &String) -> bool {
        &self.text == other
    }
}

/// Builds a [`Prose`] from parts: strings are text, `Part::Step(i)` a step it names.
/// `prose!["it repeats candidate step ", Part::Step(f), " without new evidence"]`.
#[macro_export]
macro_rules! prose {
    ($($part:expr),* $(,)?) => {
        $crate::diagnosis::Prose::new(vec![$($crate::diagnosis::Part::from($part)),*])
    };
}

/// The parts as one string.
pub fn join(parts: &[Part]) -> String {
    parts.iter().map(|p| p.as_text()).collect()
}

/// Parts clipped like [`text::clip`] clips their joined text: at most `max` characters, ending in
/// `…` when cut; a step number that would be cut becomes text.
pub fn clip_parts(parts: Vec<Part>, max: usize) -> Vec<Part> {
    let total: usize = parts.iter().map(|p| p.as_text().chars().count()).sum();
    if total <= max {
        return parts;
    }
    let mut room = max.saturating_sub(1);
    let mut out = Vec::new();
    for p in parts {
        let n = p.as_text().chars().count();
        if n <= room {
            room -= n;
            out.push(p);
            continue;
        }
        let cut: String = p.as_text().chars().take(room).collect();
        if !cut.is_empty() {
            out.push(Part::Text(cut));
        }
        break;
    }
    out.push(Part::Text("…".into()));
    out
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
    pub research: Option<Prose>,
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
    /// (each finding with its signal), the rule when it is a fallback (before the step) or the
    /// ranking (after the evidence, in short: `…; named by the ranking: both verified candidates
    /// passed both independence and sufficiency.`), the re-search. Sanitised, at most 600
    /// characters.
    pub fn render(&self, step: Option<usize>, agent: Option<&str>) -> String {
        join(&self.parts(step, agent))
    }

    /// [`Explanation::render`] as [`Part`]s (the decisive step a [`Part::Step`]), clipped to the
    /// same 600 characters.
    pub fn parts(&self, step: Option<usize>, agent: Option<&str>) -> Vec<Part> {
        use Part::{Step, Text};
        let t = |s: &str| Text(s.to_string());
        let Some(s) = step else {
            return match &self.rule {
                Rule::NoFailure { why } => [vec![t("No failure found: ")], clean(why), vec![t(".")]].concat(),
                _ => vec![t("No step could be named.")],
            };
        };
        let who = text::sanitize(agent.unwrap_or("?"));
        // What was found on the step: each finding with its signal, then the method's account.
        let mut said: Vec<Part> = Vec::new();
        for f in self.findings.iter().filter(|f| !(self.rule == Rule::Pinned && f.signal == Signal::UserMarked)) {
            if !said.is_empty() {
                said.push(t("; "));
            }
            said.extend(clean(&f.evidence));
            said.push(Text(format!(" ({})", f.signal.as_str())));
        }
        let account = text::sanitize(self.account.trim().trim_end_matches('.'));
        if !account.is_empty() {
            if !said.is_empty() {
                said.push(t("; "));
            }
            said.push(Text(account));
        }
        if said.is_empty()
            && let Rule::Fallback { why, .. } = &self.rule
        {
            // Nothing found on the step: the fallback's own clause says why it is named.
            said = clean(why);
        }
        let after: Vec<Part> = match &self.rule {
            Rule::Pinned if said.is_empty() => vec![Text(format!(" ({who}) was pinned by the user."))],
            Rule::Pinned => {
                [vec![Text(format!(" ({who}) was pinned by the user; the machine found: "))], said, vec![t(".")]]
                    .concat()
            }
            Rule::RankedFirst if said.is_empty() => {
                vec![Text(format!(" ({who}): the method named no step; this is the best-ranked step."))]
            }
            Rule::Ranking { failure: Some(failure), .. } if said.is_empty() => [
                vec![Text(format!(
                    " ({who}): no finding recorded for this step; the run shows its failure elsewhere: "
                ))],
                clean(failure),
                vec![t(".")],
            ]
            .concat(),
            _ if said.is_empty() => vec![Text(format!(" ({who}): no finding recorded for this step."))],
            _ => [vec![Text(format!(" ({who}): "))], said, vec![t(".")]].concat(),
        };
        // The ranking's rule goes after what is wrong with the step, in short: what verification
        // did (the clause before its ", so …").
        let after = match &self.rule {
            Rule::Ranking { why, .. } => {
                [trim_end_dot(&after), vec![t("; named by the ranking: ")], short_clause(why), vec![t(".")]].concat()
            }
            _ => after,
        };
        // The sentence about the step, capitalised when a clause goes before it.
        let mut out = match &self.rule {
            Rule::Fallback { name, .. } if !name.is_empty() => {
                vec![Text(format!("Unverified ({name} fallback). Step "))]
            }
            Rule::Fallback { why, .. } => [vec![t("Fallback (")], clean(why), vec![t("). Step ")]].concat(),
            _ => vec![t("step ")],
        };
        out.push(Step(s));
        out.extend(after);
        if let Some(r) = &self.research {
            out.push(t(" Re-search: "));
            out.extend(clean(&Prose::new(trim_end_dot(r.parts()))));
            out.push(t("."));
        }
        clip_parts(Prose::new(out).parts().to_vec(), 600)
    }
}

/// A prose's parts with their text sanitised ([`text::sanitize`]), for a rendered sentence.
fn clean(p: &Prose) -> Vec<Part> {
    p.clone().sanitized(usize::MAX).parts().to_vec()
}

/// A rule's clause for the end of a sentence, sanitised: what it did without why it follows
/// (the text before its first ", so "), and without a closing full stop. A clause with no
/// ", so " stays whole.
fn short_clause(p: &Prose) -> Vec<Part> {
    let mut out = Vec::new();
    for part in clean(p) {
        match part {
            Part::Text(x) if x.contains(", so ") => {
                out.push(Part::Text(x[..x.find(", so ").unwrap_or(x.len())].to_string()));
                break;
            }
            other => out.push(other),
        }
    }
    trim_end_dot(&out)
}

/// `parts` without the full stops that end them.
fn trim_end_dot(parts: &[Part]) -> Vec<Part> {
    let mut out = parts.to_vec();
    if let Some(Part::Text(t)) = out.last_mut() {
        let trimmed = t.trim_end_matches('.').len();
        t.truncate(trimmed);
    }
    out
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

    #[test]
    fn prose_keeps_its_steps_as_data_through_sanitising_and_clipping() {
        let p = crate::prose!["repeats step ", Part::Step(4), "", " \u{1b}[31mred", Part::Step(12), " of ", "it"];
        assert_eq!(p, "repeats step 4 [31mred12 of it".replace("[31m", "\u{1b}[31m").as_str());
        assert_eq!(p.steps().collect::<Vec<_>>(), [4, 12]);
        // Adjacent text parts merge; empty ones go.
        assert_eq!(p.parts().len(), 5);
        let clean = p.clone().sanitized(200);
        assert!(!clean.contains('\u{1b}'), "{clean}");
        assert_eq!(clean.steps().collect::<Vec<_>>(), [4, 12]);
        // Clipped before the second step: that step is gone from the data too.
        let short = p.sanitized(16);
        assert_eq!(short.steps().collect::<Vec<_>>(), [4]);
        assert!(short.ends_with('…'), "{short}");
        assert_eq!(Prose::from("step 3 as text").steps().count(), 0);
    }

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
        let c = Claim::MoreProbable {
            step: 5,
            agent: "a".into(),
            p: 0.49,
            named: 2,
            p_named: 0.1,
            standing: Standing::Unverified,
        };
        assert_eq!(c.steps(), [5, 2]);
        let s = c.sentence(Method::Falat, &Rule::RankedFirst);
        assert!(s.starts_with("Step 5 (a) is more probable than step 2 (P 0.49 against 0.10)."), "{s}");
        assert!(s.contains("the best-ranked step you did not exclude"), "{s}");
        assert!(s.ends_with("it does not name the step that ranks first by P, so read both."), "{s}");
        // When the more probable step was no verified candidate, the sentence says so.
        let why = Rule::Ranking { why: "all 2 verified candidates passed".into(), failure: None };
        let c = Claim::MoreProbable {
            step: 5,
            agent: "a".into(),
            p: 0.49,
            named: 2,
            p_named: 0.1,
            standing: Standing::NotCandidate,
        };
        let s = c.sentence(Method::Falat, &why);
        assert!(s.ends_with("; step 5 was not a candidate and was not verified, so read both."), "{s}");
        let p = Claim::PathToOutput { path: vec![4], answer_stated: true };
        assert_eq!(
            p.sentence(Method::Falat, &Rule::Method),
            "Step 4 is itself the final output's step (the step that states the run's answer)."
        );
        let p = Claim::PathToOutput { path: vec![4], answer_stated: false };
        assert_eq!(
            p.sentence(Method::Falat, &Rule::Method),
            "Step 4 is itself the final output's step (the run's last step of substance: no step states \
             an answer)."
        );
    }

    #[test]
    fn parts_join_to_the_sentence_and_name_its_steps_as_data() {
        let e = Explanation {
            rule: Rule::Ranking { why: "every candidate passed".into(), failure: None },
            findings: vec![finding(Signal::UnsourcedValue, "states 42 with no earlier source")],
            research: Some("the blind comparison also names step 3".into()),
            ..Explanation::default()
        };
        let parts = e.parts(Some(3), Some("Coder"));
        assert_eq!(join(&parts), e.render(Some(3), Some("Coder")));
        let steps: Vec<usize> =
            parts.iter().filter_map(|p| if let Part::Step(s) = p { Some(*s) } else { None }).collect();
        assert_eq!(steps, [3], "the step the re-search's prose mentions is not data");
        let c = Claim::NoPathToOutput {
            from: 2,
            final_step: Some(9),
            answer_stated: true,
            states_observed: true,
            sufficiency: None,
        };
        let parts = c.parts(Method::Falat, &Rule::Method);
        let steps: Vec<usize> =
            parts.iter().filter_map(|p| if let Part::Step(s) = p { Some(*s) } else { None }).collect();
        assert_eq!(steps, [2, 9, 2]);
        assert_eq!(
            join(&parts),
            "The dependency graph has no path from step 2 to step 9, the final output's step (the step that \
             states the run's answer). Step 2 states the observed output itself."
        );
        let long = vec![Part::Text("a".repeat(8)), Part::Step(12345), Part::Text("b".into())];
        assert_eq!(
            clip_parts(long.clone(), 11),
            vec![Part::Text("a".repeat(8)), Part::Text("12".into()), Part::Text("…".into())]
        );
        assert_eq!(join(&clip_parts(long.clone(), 11)), text::clip(&join(&long), 11));
    }
}
