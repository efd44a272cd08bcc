//! The candidates view's list as a component: a filter typed after `/` (k9s style: the list
//! narrows as you type) and a sort key cycled with `s`. It keeps the rows it shows (indices into
//! the diagnosis' candidates), recomputed when the diagnosis, the filter or the sort changes, so
//! that drawing 25,000 candidates only slices them.

use crate::diagnosis::{Candidate, Diagnosis, Origin};

/// How the candidates are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CandidateSort {
    /// By step, earliest first (the pipeline's order).
    #[default]
    Step,
    /// By score, strongest first.
    Score,
    /// By agent name, then step.
    Agent,
    /// Kept first, then the user's, then pruned; by step within each.
    State,
}

impl CandidateSort {
    /// The next key in the cycle.
    pub fn next(self) -> CandidateSort {
        match self {
            CandidateSort::Step => CandidateSort::Score,
            CandidateSort::Score => CandidateSort::Agent,
            CandidateSort::Agent => CandidateSort::State,
            CandidateSort::State => CandidateSort::Step,
        }
    }

    /// The key's name for the pane title.
    pub fn name(self) -> &'static str {
        match self {
            CandidateSort::Step => "step",
            CandidateSort::Score => "score",
            CandidateSort::Agent => "agent",
            CandidateSort::State => "state",
        }
    }
}

/// The state of a candidate as the list shows it: `kept`, `user`, `pruned` or `excluded`.
pub fn state(c: &Candidate) -> &'static str {
    match (&c.pruned, c.origin) {
        (Some(p), _) if p.by_user => "excluded",
        (Some(_), _) => "pruned",
        (None, Origin::User) => "user",
        (None, Origin::Machine) => "kept",
    }
}

/// The filtered, sorted candidates list.
#[derive(Debug, Clone, Default)]
pub struct CandidateList {
    /// The filter text (case-insensitive; matches the step number, agent, state, signals and
    /// evidence); empty shows every candidate.
    pub filter: String,
    /// The sort key.
    pub sort: CandidateSort,
    rows: Vec<usize>,
    total: usize,
}

impl CandidateList {
    /// The shown rows: indices into the diagnosis' candidates.
    pub fn rows(&self) -> &[usize] {
        &self.rows
    }

    /// The number of candidates before filtering.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The candidate shown at `row`.
    pub fn get<'a>(&self, d: Option<&'a Diagnosis>, row: usize) -> Option<&'a Candidate> {
        d.and_then(|d| self.rows.get(row).and_then(|&i| d.candidates.get(i)))
    }

    /// The row showing `step`, if it is shown.
    pub fn row_of(&self, d: Option<&Diagnosis>, step: usize) -> Option<usize> {
        let d = d?;
        self.rows.iter().position(|&i| d.candidates.get(i).is_some_and(|c| c.step == step))
    }

    /// Recomputes the rows from the diagnosis, the filter and the sort.
    pub fn refresh(&mut self, d: Option<&Diagnosis>) {
        let cands = d.map_or(&[][..], |d| d.candidates.as_slice());
        self.total = cands.len();
        let needle = self.filter.trim().to_lowercase();
        self.rows = (0..cands.len()).filter(|&i| needle.is_empty() || matches(&cands[i], &needle)).collect();
        let key = |i: &usize| &cands[*i];
        match self.sort {
            CandidateSort::Step => self.rows.sort_by_key(|i| key(i).step),
            CandidateSort::Score => {
                self.rows.sort_by(|a, b| key(b).score.total_cmp(&key(a).score).then(key(a).step.cmp(&key(b).step)))
            }
            CandidateSort::Agent => self.rows.sort_by(|a, b| {
                key(a).agent.to_lowercase().cmp(&key(b).agent.to_lowercase()).then(key(a).step.cmp(&key(b).step))
            }),
            CandidateSort::State => {
                let rank = |c: &Candidate| ["kept", "user", "pruned", "excluded"].iter().position(|s| *s == state(c));
                self.rows.sort_by_key(|i| (rank(key(i)), key(i).step));
            }
        }
    }
}

fn matches(c: &Candidate, needle: &str) -> bool {
    c.step.to_string() == needle
        || c.agent.to_lowercase().contains(needle)
        || state(c).contains(needle)
        || c.findings.iter().any(|f| f.signal.as_str().contains(needle) || f.evidence.to_lowercase().contains(needle))
        || c.pruned.as_ref().is_some_and(|p| p.transition.as_str().contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(step: usize, agent: &str, score: f32) -> Candidate {
        Candidate {
            step,
            agent: agent.into(),
            findings: Vec::new(),
            score,
            pruned: None,
            verification: None,
            origin: Origin::Machine,
        }
    }

    #[test]
    fn a_candidate_is_excluded_only_when_the_user_excluded_it() {
        use crate::diagnosis::{Pruning, Transition};
        let mut c = cand(30, "assistant", 0.7);
        // A pruning whose sentence mentions the user is still the machine's.
        let reason = crate::prose![
            "it reports the outcome that candidate step ",
            crate::diagnosis::Part::Step(6),
            " set through what it told the user"
        ];
        c.pruned = Some(Pruning { transition: Transition::FollowUp, by_step: Some(6), reason, by_user: false });
        assert_eq!(state(&c), "pruned");
        c.pruned = Some(Pruning {
            transition: Transition::NoInfluence,
            by_step: None,
            reason: "excluded by the user".into(),
            by_user: true,
        });
        assert_eq!(state(&c), "excluded");
    }

    #[test]
    fn filters_and_sorts() {
        let d = Diagnosis {
            candidates: vec![cand(3, "Bob", 0.2), cand(1, "alice", 0.9), cand(7, "Bob", 0.5)],
            ..Diagnosis::default()
        };
        let mut l = CandidateList::default();
        l.refresh(Some(&d));
        assert_eq!(l.rows(), [1, 0, 2]);
        l.sort = CandidateSort::Score;
        l.refresh(Some(&d));
        assert_eq!(l.rows(), [1, 2, 0]);
        l.filter = "bob".into();
        l.refresh(Some(&d));
        assert_eq!(l.rows(), [2, 0]);
        assert_eq!((l.total(), l.row_of(Some(&d), 3)), (3, Some(1)));
        l.filter = "7".into();
        l.refresh(Some(&d));
        assert_eq!(l.rows(), [2]);
    }
}
