//! Search in step content as a component: the query (`/`), its compiled pattern and how many
//! steps match; `n`/`N` find the next or previous matching step from the selected one. The
//! app moves the selection; this keeps only what the search needs.

use regex::{Regex, RegexBuilder};

use crate::model::Step;

/// The last search.
#[derive(Debug, Clone, Default)]
pub struct Search {
    /// The query as typed (the evidence pane marks its matches).
    pub query: Option<String>,
    re: Option<Regex>,
    total: usize,
}

impl Search {
    /// Starts a search for `q` (case-insensitive, literal) over `steps`; false when `q` is
    /// empty (the last search stays).
    pub fn start(&mut self, q: &str, steps: &[Step]) -> bool {
        if q.is_empty() {
            return false;
        }
        self.re = RegexBuilder::new(&regex::escape(q)).case_insensitive(true).build().ok();
        self.total = self.re.as_ref().map_or(0, |re| steps.iter().filter(|st| re.is_match(&st.content)).count());
        self.query = Some(q.to_string());
        true
    }

    /// The number of steps that match (over the whole trajectory).
    pub fn total(&self) -> usize {
        self.total
    }

    /// The next matching step after `from` (before it when `forward` is false) among the first
    /// `n` steps, wrapping around; `None` when there is no search or no match.
    pub fn find(&self, steps: &[Step], from: usize, n: usize, forward: bool) -> Option<usize> {
        let re = self.re.as_ref()?;
        let n = n.min(steps.len());
        if n == 0 {
            return None;
        }
        (1..=n)
            .map(|k| if forward { (from + k) % n } else { (from + n * 2 - k) % n })
            .find(|&s| re.is_match(&steps[s].content))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(texts: &[&str]) -> Vec<Step> {
        texts.iter().map(|t| Step { content: (*t).to_string(), ..Step::default() }).collect()
    }

    #[test]
    fn finds_forward_and_backward_with_wrap_around() {
        let st = steps(&["alpha", "Beta one", "gamma", "beta two"]);
        let mut s = Search::default();
        assert!(!s.start("", &st));
        assert_eq!(s.find(&st, 0, 4, true), None, "no search yet");
        assert!(s.start("BETA", &st));
        assert_eq!(s.total(), 2);
        assert_eq!(s.find(&st, 0, 4, true), Some(1));
        assert_eq!(s.find(&st, 1, 4, true), Some(3));
        assert_eq!(s.find(&st, 3, 4, true), Some(1), "wraps around");
        assert_eq!(s.find(&st, 1, 4, false), Some(3), "backwards wraps too");
        assert_eq!(s.find(&st, 0, 2, true), Some(1), "only the indexed steps");
    }
}
