//! Method-specific details of a diagnosis, as data: what each method's paper has it produce
//! besides the verdict (ECHO's panel, analyses, votes, agent evidence and alternatives; DeFA's
//! segments and failure propagation graph; the Who&When baselines' walks and rounds; FALAT's
//! options, ablations, phase search and re-search checks). The JSON report carries them as
//! structured objects (docs/REPORT_SCHEMA.md); the Markdown report and the TUI render them with
//! [`Detail::title`] and [`Detail::lines`].

use std::ops::Range;

use crate::diagnosis::Purpose;
use crate::diagnosis::ablation::Component;
use crate::diagnosis::attribution::{
    Alternative, Analysis, Conclusion, Evaluation, Half, Perspective, PropagationEdge, VoteTarget,
};
use crate::text;

use super::explanation::Part;

/// ECHO drops analyses under this confidence (ECHO §3.3, A.7); shown beside the consensus.
pub const ECHO_MIN_CONFIDENCE: f32 = 0.3;

/// One phase of FALAT's coarse-to-fine search (FALAT §1).
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseSearched {
    /// 0-based phase number.
    pub phase: usize,
    /// Its steps, 0-based, end exclusive.
    pub steps: Range<usize>,
    /// Its purpose.
    pub purpose: Purpose,
    /// The agent it is about.
    pub agent: String,
    /// The judge's suspicion, 0..=1.
    pub suspicion: f32,
    /// Whether recall searched it.
    pub searched: bool,
}

/// One re-search counterfactual check (FALAT §4): both criteria of one step of the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepCheck {
    /// 0-based step.
    pub step: usize,
    /// Error independence passed.
    pub independence: bool,
    /// Counterfactual sufficiency passed.
    pub sufficiency: bool,
}

/// An ECHO consensus vote (ECHO §3.3, A.7) over one target's analyses.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Votes {
    /// Summed confidence per conclusion type.
    pub types: Vec<(Conclusion, f32)>,
    /// Weighted votes per agent, highest first.
    pub agents: Vec<(String, f32)>,
    /// Weighted votes per step (0-based), highest first.
    pub steps: Vec<(usize, f32)>,
    /// Analyses dropped under [`ECHO_MIN_CONFIDENCE`].
    pub dropped: usize,
    /// Step votes outside the trajectory.
    pub out_of_range: usize,
    /// Highest minus lowest kept confidence.
    pub spread: f32,
    /// Whether the disagreement calls for review.
    pub review: bool,
}

/// One DeFA segment (DeFA §3.2) and the candidates its recall named.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentRecalled {
    /// Its steps, 0-based, end exclusive.
    pub steps: Range<usize>,
    /// The candidate steps recalled in it, 0-based.
    pub candidates: Vec<usize>,
}

/// One step-by-step verdict (Who&When step-by-step).
#[derive(Debug, Clone, PartialEq)]
pub struct StepVerdict {
    /// 0-based step.
    pub step: usize,
    /// Whether the judge called it decisive; `None` when it gave no usable verdict.
    pub decisive: Option<bool>,
    /// The judge's confidence, 0..=1.
    pub confidence: f32,
}

/// One binary-search round (Who&When binary search).
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// The range searched, 0-based, end exclusive.
    pub range: Range<usize>,
    /// The first step of the second half.
    pub split: usize,
    /// The half the judge named.
    pub half: Half,
}

/// One method-specific detail of a diagnosis.
#[derive(Debug, Clone, PartialEq)]
pub enum Detail {
    /// Options that depart from the paper or fill what it leaves open, `name = value (why)`.
    Options(Vec<String>),
    /// The method ran with the offline judge, a stand-in for the paper's model.
    OfflineJudge,
    /// Components switched off for an ablation row, in table order.
    Ablated(Vec<Component>),
    /// FALAT's coarse-to-fine search: every phase, its suspicion and whether it was searched.
    PhaseSearch(Vec<PhaseSearched>),
    /// FALAT's re-search: the counterfactual check of each step of the window.
    ReSearchChecks(Vec<StepCheck>),
    /// ECHO's analyst panel.
    Panel(Vec<Perspective>),
    /// ECHO's analyses of one target (agent, step, or both in the unified ablation).
    Analyses(VoteTarget, Vec<Analysis>),
    /// ECHO's consensus over one target's analyses.
    Consensus(VoteTarget, Votes),
    /// ECHO's per-agent likelihood and evidence, aggregated over the agent analysts.
    AgentEvidence(Vec<Evaluation>),
    /// ECHO's alternative hypotheses of both votes, strongest first.
    Alternatives(Vec<Alternative>),
    /// DeFA's segments and what each recall named.
    Segments(Vec<SegmentRecalled>),
    /// DeFA's failure propagation graph.
    PropagationGraph(Vec<PropagationEdge>),
    /// The steps DeFA's adjudicator compared (candidates and the sources propagation added).
    AdjudicatedNodes(Vec<usize>),
    /// All-at-once: the judge's answer.
    JudgeAnswer {
        /// The agent the judge named.
        agent: String,
        /// The step it named, 0-based.
        step: usize,
    },
    /// Step-by-step: the verdict on each step walked.
    Verdicts(Vec<StepVerdict>),
    /// Binary search: the rounds.
    Rounds(Vec<Round>),
}

fn target_name(t: VoteTarget) -> &'static str {
    match t {
        VoteTarget::Agent => "agent",
        VoteTarget::Step => "step",
        VoteTarget::Both => "unified",
    }
}

impl Detail {
    /// The section title (`options`, `phase search`, `agent consensus`...).
    pub fn title(&self) -> String {
        match self {
            Detail::Options(_) => "options".into(),
            Detail::OfflineJudge => "judge".into(),
            Detail::Ablated(_) => "ablated".into(),
            Detail::PhaseSearch(_) => "phase search".into(),
            Detail::ReSearchChecks(_) => {
                "re-search checks (each step of the window, against the window's steps only)".into()
            }
            Detail::Panel(_) => "panel".into(),
            Detail::Analyses(VoteTarget::Both, _) => "analyses".into(),
            Detail::Analyses(t, _) => format!("{} analyses", target_name(*t)),
            Detail::Consensus(VoteTarget::Both, _) => "consensus".into(),
            Detail::Consensus(t, _) => format!("{} consensus", target_name(*t)),
            Detail::AgentEvidence(_) => "agent evidence".into(),
            Detail::Alternatives(_) => "alternatives".into(),
            Detail::Segments(_) => "segments".into(),
            Detail::PropagationGraph(_) => "propagation graph".into(),
            Detail::AdjudicatedNodes(_) => "adjudicated nodes".into(),
            Detail::JudgeAnswer { .. } => "judge's answer".into(),
            Detail::Verdicts(_) => "verdicts".into(),
            Detail::Rounds(_) => "rounds".into(),
        }
    }

    /// One display line per item (sanitised text, 0-based steps).
    pub fn lines(&self) -> Vec<String> {
        self.parts().iter().map(|l| super::explanation::join(l)).collect()
    }

    /// [`Detail::lines`] as [`Part`]s: each step a line names is a [`Part::Step`] (a range's
    /// first and last step, a segment's candidates, a propagation edge's ends, a vote's step), so
    /// a reader can make it a link without reading the text back.
    pub fn parts(&self) -> Vec<Vec<Part>> {
        use Part::{Step, Text};
        let clean = |s: &str, n: usize| text::clip(&text::sanitize(s), n);
        let t = |s: String| Text(s);
        let plain = |v: Vec<String>| v.into_iter().map(|l| vec![Text(l)]).collect::<Vec<_>>();
        match self {
            Detail::Options(v) => plain(v.clone()),
            Detail::Ablated(v) => plain(v.iter().map(|c| c.as_str().to_string()).collect()),
            Detail::OfflineJudge => plain(vec![
                "offline heuristic judge: lexical and structural signals stand in for the model the paper uses".into(),
            ]),
            Detail::PhaseSearch(v) => v
                .iter()
                .map(|p| {
                    vec![
                        t(format!("phase {} (steps ", p.phase)),
                        Step(p.steps.start),
                        t("-".into()),
                        Step(p.steps.end.saturating_sub(1)),
                        t(format!(
                            ", {} {}): suspicion {:.2}, {}",
                            p.purpose.as_str(),
                            clean(&p.agent, 60),
                            p.suspicion,
                            if p.searched { "searched" } else { "skipped" }
                        )),
                    ]
                })
                .collect(),
            Detail::ReSearchChecks(v) => {
                // The rows are context for one rule (decision::research_move): without it a row
                // that passes before the named step reads as a contradiction.
                let rule = "the decision moves only to the step the blind comparison names, when that step passes \
                            both checks and is earlier (or the decided step fails them); each step is checked \
                            against the window's steps, not the candidates verification compared, so a verified \
                            step fails independence here when an earlier step of the window feeds it"
                    .to_string();
                std::iter::once(vec![Text(rule)])
                    .chain(v.iter().map(|k| {
                        let v = |b: bool| if b { "pass" } else { "fail" };
                        vec![
                            t("step ".into()),
                            Step(k.step),
                            t(format!(": independence {}, sufficiency {}", v(k.independence), v(k.sufficiency))),
                        ]
                    }))
                    .collect()
            }
            Detail::Panel(v) => plain(v.iter().map(|p| p.as_str().to_string()).collect()),
            Detail::Analyses(_, v) => v
                .iter()
                .map(|a| {
                    let kept = if a.confidence >= ECHO_MIN_CONFIDENCE { "" } else { " (dropped)" };
                    let mut l = vec![t(format!("{} {} step ", a.conclusion.as_str(), a.agents.join("+")))];
                    l.push(a.step.map_or(t("-".into()), Step));
                    l.push(t(format!(" confidence {:.2}{kept}: {}", a.confidence, text::clip(&a.reasoning, 160))));
                    l
                })
                .collect(),
            Detail::Consensus(_, c) => {
                let types: Vec<String> = c.types.iter().map(|(t, v)| format!("{} {v:.2}", t.as_str())).collect();
                let agents: Vec<String> = c.agents.iter().map(|(a, v)| format!("{a} {v:.2}")).collect();
                let mut steps = vec![t("steps: ".into())];
                for (i, (s, v)) in c.steps.iter().enumerate() {
                    if i > 0 {
                        steps.push(t(", ".into()));
                    }
                    steps.extend([Step(*s), t(format!(" {v:.2}"))]);
                }
                vec![
                    vec![t(format!("types: {}", types.join(", ")))],
                    vec![t(format!("agents: {}", agents.join(", ")))],
                    steps,
                    vec![t(format!(
                        "dropped {} under {ECHO_MIN_CONFIDENCE}, {} step votes out of range, spread {:.2}, review {}",
                        c.dropped, c.out_of_range, c.spread, c.review
                    ))],
                ]
            }
            Detail::AgentEvidence(v) => plain(
                v.iter()
                    .map(|e| {
                        let ev = if e.evidence.is_empty() {
                            "no evidence given".to_string()
                        } else {
                            text::clip(&e.evidence, 200)
                        };
                        format!("{} likelihood {:.2}: {ev}", e.agent, e.likelihood)
                    })
                    .collect(),
            ),
            Detail::Alternatives(v) if v.is_empty() => plain(vec!["none".into()]),
            Detail::Alternatives(v) => v
                .iter()
                .map(|a| {
                    let mut l = vec![t(format!("{} step ", a.agent))];
                    l.push(a.step.map_or(t("-".into()), Step));
                    l.push(t(format!(" weight {:.2}: {}", a.likelihood, text::clip(&a.reason, 160))));
                    l
                })
                .collect(),
            Detail::Segments(v) => v
                .iter()
                .enumerate()
                .map(|(k, s)| {
                    let mut l = vec![
                        t(format!("segment {k}: steps ")),
                        Step(s.steps.start),
                        t("-".into()),
                        Step(s.steps.end.saturating_sub(1)),
                        t(", candidates [".into()),
                    ];
                    for (i, c) in s.candidates.iter().enumerate() {
                        if i > 0 {
                            l.push(t(", ".into()));
                        }
                        l.push(Step(*c));
                    }
                    l.push(t("]".into()));
                    l
                })
                .collect(),
            Detail::PropagationGraph(v) => v
                .iter()
                .map(|e| vec![Step(e.from), t(" -> ".into()), Step(e.to), t(format!(" {}", e.effect.as_str()))])
                .collect(),
            Detail::AdjudicatedNodes(v) => {
                let mut l = vec![t("[".into())];
                for (i, s) in v.iter().enumerate() {
                    if i > 0 {
                        l.push(t(", ".into()));
                    }
                    l.push(Step(*s));
                }
                l.push(t("]".into()));
                vec![super::explanation::clip_parts(l, 400)]
            }
            Detail::JudgeAnswer { agent, step } => vec![vec![t(format!("agent {agent}, step ")), Step(*step)]],
            Detail::Verdicts(v) => v
                .iter()
                .map(|x| {
                    let what = match x.decisive {
                        Some(true) => format!(": decisive ({:.2})", x.confidence),
                        Some(false) => format!(": not decisive ({:.2})", x.confidence),
                        None => ": no usable verdict".to_string(),
                    };
                    vec![t("step ".into()), Step(x.step), t(what)]
                })
                .collect(),
            Detail::Rounds(v) => v
                .iter()
                .map(|r| {
                    vec![
                        Step(r.range.start),
                        t(format!("..{} split ", r.range.end)),
                        Step(r.split),
                        t(format!(": {}", r.half.as_str())),
                    ]
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_details_parts_name_their_steps_and_join_to_the_lines() {
        let segs = Detail::Segments(vec![SegmentRecalled { steps: 4..9, candidates: vec![5, 7] }]);
        let parts = &segs.parts()[0];
        let steps: Vec<usize> =
            parts.iter().filter_map(|p| if let Part::Step(s) = p { Some(*s) } else { None }).collect();
        assert_eq!(steps, [4, 8, 5, 7]);
        assert_eq!(segs.lines(), ["segment 0: steps 4-8, candidates [5, 7]"]);
        let nodes = Detail::AdjudicatedNodes((0..200).collect());
        assert_eq!(nodes.lines()[0], text::clip(&format!("{:?}", (0..200).collect::<Vec<usize>>()), 400));
    }
}
