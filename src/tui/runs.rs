//! Background runs as a component: the run in progress, the one queued behind it (the latest
//! wins: asking for a run while one goes cancels it and queues the new one) and the ids that
//! tell a finished run's result from a stale one. The app decides what a run does and what its
//! result changes; this keeps only the bookkeeping, like gitui's `AsyncSingleJob`.

use std::time::Instant;

use super::job::RunTarget;
use crate::diagnosis::PipelineProgress;
use crate::methods::Method;
use crate::methods::falat::Stage;

/// What a run is doing, as its progress reports say: a stage of the FALAT pipeline, stage 2's
/// candidate recall, or one method of a methods run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// A stage of the FALAT pipeline.
    Stage(Stage),
    /// Stage 2's candidate recall, phase by phase, before the pruning.
    Recall,
    /// A method of a methods run (or the method `a` runs).
    Method(Method),
}

impl Activity {
    /// The name the status line shows (the stage's name in costs and reports, the method's).
    pub fn label(self) -> &'static str {
        match self {
            Activity::Stage(s) => s.as_str(),
            Activity::Recall => RECALL,
            Activity::Method(m) => m.as_str(),
        }
    }

    /// The pipeline stage it is part of (the status line's stage chip), `None` for a method.
    pub fn stage(self) -> Option<Stage> {
        match self {
            Activity::Stage(s) => Some(s),
            Activity::Recall => Some(Stage::Dependencies),
            Activity::Method(_) => None,
        }
    }

    /// The activity a progress report of the FALAT pipeline names
    /// (`judge::session::ProgressFn`).
    pub fn of_pipeline(p: PipelineProgress) -> Activity {
        match p {
            PipelineProgress::Stage(s) => Activity::Stage(s),
            PipelineProgress::Recall => Activity::Recall,
        }
    }
}

/// The name the status line shows for stage 2's candidate recall.
const RECALL: &str = "recall";

/// A run in progress.
#[derive(Debug, Clone)]
pub struct Running {
    /// The run's id.
    pub id: u64,
    /// What it does.
    pub target: RunTarget,
    /// What it is doing now.
    pub activity: Activity,
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

    /// Records a new run of `target` starting with `activity`; returns its id (ids start at 1).
    pub fn begin(&mut self, target: RunTarget, activity: Activity) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.running = Some(Running {
            id,
            target,
            activity,
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
    pub fn progress(&mut self, id: u64, activity: Activity, done: usize, total: usize) {
        if let Some(r) = self.running.as_mut().filter(|r| r.id == id) {
            r.activity = activity;
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

    #[test]
    fn the_latest_request_wins_and_stale_results_are_ignored() {
        let mut r = Runs::default();
        assert!(!r.queue(RunTarget::All), "nothing runs: nothing to queue behind");
        let first = r.begin(RunTarget::All, Activity::Stage(Stage::SearchSpace));
        assert_eq!(first, 1);
        assert!(r.queue(RunTarget::Stage(Stage::Verification)));
        assert!(r.queue(RunTarget::Stage(Stage::ReSearch)));
        assert!(r.running.as_ref().is_some_and(|x| x.cancelling));
        let verify = Activity::Stage(Stage::Verification);
        r.progress(first + 7, verify, 3, 9);
        assert_eq!(r.running.as_ref().map(|x| x.done), Some(0), "progress of another run is ignored");
        r.progress(first, verify, 3, 9);
        assert_eq!(r.running.as_ref().map(|x| (x.activity, x.done, x.total)), Some((verify, 3, 9)));
        assert!(r.finish(first + 1).is_none(), "a stale result ends nothing");
        assert_eq!(r.finish(first).map(|x| x.id), Some(first));
        assert!(matches!(r.take_pending(), Some(RunTarget::Stage(Stage::ReSearch))), "the latest wins");
        assert!(r.take_pending().is_none());
        let second = r.begin(RunTarget::All, Activity::Stage(Stage::SearchSpace));
        assert_eq!(second, 2);
        assert!(r.cancel() && r.take_pending().is_none(), "cancel drops what was queued");
    }

    #[test]
    fn the_pipelines_progress_reports_map_to_activities() {
        for s in Stage::ALL {
            assert_eq!(Activity::of_pipeline(PipelineProgress::Stage(s)), Activity::Stage(s));
            assert_eq!(Activity::Stage(s).label(), s.as_str());
        }
        assert_eq!(Activity::of_pipeline(PipelineProgress::Recall).stage(), Some(Stage::Dependencies));
        assert_eq!(Activity::Recall.label(), "recall");
        assert_eq!(Activity::Method(Method::Echo).stage(), None);
    }
}
