//! Background runs as a component: the run in progress, the one queued behind it (the latest
//! wins: asking for a run while one goes cancels it and queues the new one) and the ids that
//! tell a finished run's result from a stale one. The app decides what a run does and what its
//! result changes; this keeps only the bookkeeping, like gitui's `AsyncSingleJob`.

use std::time::Instant;

use super::job::RunTarget;

/// A run in progress.
#[derive(Debug, Clone)]
pub struct Running {
    /// The run's id.
    pub id: u64,
    /// What it does.
    pub target: RunTarget,
    /// The current stage.
    pub stage: String,
    /// Judge calls done in the stage.
    pub done: usize,
    /// Judge calls expected in the stage.
    pub total: usize,
    /// When it started.
    pub started: Instant,
    /// Cancel was asked.
    pub cancelling: bool,
    /// Questions asked of the judge so far, and its calls (0 until the job says).
    pub questions: (usize, u64),
}

/// The run in progress and the one queued behind it.
#[derive(Debug, Clone)]
pub struct Runs {
    /// The run in progress, if any.
    pub running: Option<Running>,
    pending: Option<RunTarget>,
    next_id: u64,
}

impl Default for Runs {
    fn default() -> Runs {
        Runs { running: None, pending: None, next_id: 1 }
    }
}

impl Runs {
    /// Whether a run is in progress.
    pub fn busy(&self) -> bool {
        self.running.is_some()
    }

    /// Asks the run in progress to stop and queues `target` behind it; false (nothing queued)
    /// when nothing runs.
    pub fn queue(&mut self, target: RunTarget) -> bool {
        let Some(r) = &mut self.running else { return false };
        r.cancelling = true;
        self.pending = Some(target);
        true
    }

    /// Queues `target` to start when the app is ready (the substrate is still being built);
    /// a later request replaces it.
    pub fn defer(&mut self, target: RunTarget) {
        self.pending = Some(target);
    }

    /// Records a new run of `target` starting at `stage`; returns its id (ids start at 1).
    pub fn begin(&mut self, target: RunTarget, stage: &str) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.running = Some(Running {
            id,
            target,
            stage: stage.to_string(),
            done: 0,
            total: 0,
            started: Instant::now(),
            cancelling: false,
            questions: (0, 0),
        });
        id
    }

    /// Asks the run in progress to stop and drops the queued one; false when nothing runs.
    pub fn cancel(&mut self) -> bool {
        let Some(r) = &mut self.running else { return false };
        r.cancelling = true;
        self.pending = None;
        true
    }

    /// Progress of run `id` (ignored when that run is no longer in progress).
    pub fn progress(&mut self, id: u64, stage: String, done: usize, total: usize) {
        if let Some(r) = self.running.as_mut().filter(|r| r.id == id) {
            r.stage = stage;
            r.done = done;
            r.total = total;
        }
    }

    /// Questions and judge calls of run `id` so far (ignored when that run is no longer in
    /// progress).
    pub fn asked(&mut self, id: u64, questions: usize, calls: u64) {
        if let Some(r) = self.running.as_mut().filter(|r| r.id == id) {
            r.questions = (questions, calls);
        }
    }

    /// The run `id` when it is the one in progress (it ends here); `None` for a stale result.
    pub fn finish(&mut self, id: u64) -> Option<Running> {
        self.running.take_if(|r| r.id == id)
    }

    /// The run queued behind the one that just finished.
    pub fn take_pending(&mut self) -> Option<RunTarget> {
        self.pending.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::falat::Stage;

    #[test]
    fn the_latest_request_wins_and_stale_results_are_ignored() {
        let mut r = Runs::default();
        assert!(!r.queue(RunTarget::All), "nothing runs: nothing to queue behind");
        let first = r.begin(RunTarget::All, "search_space");
        assert_eq!(first, 1);
        assert!(r.queue(RunTarget::Stage(Stage::Verification)));
        assert!(r.queue(RunTarget::Stage(Stage::ReSearch)));
        assert!(r.running.as_ref().is_some_and(|x| x.cancelling));
        r.progress(first + 7, "verify".into(), 3, 9);
        assert_eq!(r.running.as_ref().map(|x| x.done), Some(0), "progress of another run is ignored");
        r.progress(first, "verify".into(), 3, 9);
        assert_eq!(r.running.as_ref().map(|x| (x.stage.as_str(), x.done, x.total)), Some(("verify", 3, 9)));
        assert!(r.finish(first + 1).is_none(), "a stale result ends nothing");
        assert_eq!(r.finish(first).map(|x| x.id), Some(first));
        assert!(matches!(r.take_pending(), Some(RunTarget::Stage(Stage::ReSearch))), "the latest wins");
        assert!(r.take_pending().is_none());
        let second = r.begin(RunTarget::All, "search_space");
        assert_eq!(second, 2);
        assert!(r.cancel() && r.take_pending().is_none(), "cancel drops what was queued");
    }
}
