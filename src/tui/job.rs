//! Pipeline runs off the UI thread: a [`RunRequest`] is executed on tokio's blocking pool with
//! the pipeline's cancel flag and a throttled progress callback; results come back as
//! [`JobMsg`]s. [`execute`] is the same run done synchronously (tests, headless use).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use crate::diagnosis::Diagnosis;
use crate::graph::DepGraph;
use crate::hierarchy::Hierarchy;
use crate::judge::Judge;
use crate::model::Trajectory;
use crate::pipeline::{Cancelled, Options, Pipeline, ProgressFn, Stage};

/// What a run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunTarget {
    /// All four stages from scratch.
    All,
    /// One stage, after any earlier stage that has not run.
    Stage(Stage),
    /// Re-run from `from` through `to` (after an override changed).
    Rerun {
        /// The first stage to re-run.
        from: Stage,
        /// The last stage to run.
        to: Stage,
    },
}

impl RunTarget {
    /// A lowercase label for the status line.
    pub fn label(self) -> String {
        match self {
            RunTarget::All => "all stages".into(),
            RunTarget::Stage(s) => s.as_str().into(),
            RunTarget::Rerun { from, to } if from == to => format!("{} with overrides", from.as_str()),
            RunTarget::Rerun { from, to } => format!("{} to {} with overrides", from.as_str(), to.as_str()),
        }
    }
}

/// A run to execute: the pipeline state it starts from and the options (overrides included).
#[derive(Clone)]
pub struct RunRequest {
    /// Identifies the run; messages of older runs are ignored.
    pub id: u64,
    /// What to run.
    pub target: RunTarget,
    /// The state the run starts from (cloned; the app keeps its own until the run is done).
    pub pipeline: Pipeline,
    /// Ground truth, window and overrides (cancel and progress are set by the runner).
    pub opts: Options,
}

/// The result of a run.
pub struct JobDone {
    /// The run's id.
    pub id: u64,
    /// The pipeline after the run (only meaningful when `outcome` is `Ok`).
    pub pipeline: Pipeline,
    /// Finished or cancelled.
    pub outcome: Result<(), Cancelled>,
    /// The diagnosis of the finished run, with the overrides it ran with.
    pub diagnosis: Option<Diagnosis>,
    /// Wall time.
    pub elapsed: Duration,
}

/// Messages from background work to the app.
pub enum JobMsg {
    /// Progress of a run: stage name, judge calls done and expected.
    Progress {
        /// The run's id.
        id: u64,
        /// Stage name.
        stage: String,
        /// Done so far.
        done: usize,
        /// Total expected.
        total: usize,
    },
    /// A run ended.
    Done(Box<JobDone>),
    /// The dependency graph of the cheap hierarchy is ready (large traces build it in the
    /// background).
    Graph(Arc<DepGraph>),
    /// The full hierarchy of a large trace is ready.
    Hierarchy(Arc<Hierarchy>),
}

/// Runs a request synchronously.
pub fn execute(
    req: &RunRequest,
    t: &Trajectory,
    judge: &dyn Judge,
    cancel: Arc<AtomicBool>,
    progress: Option<ProgressFn>,
) -> JobDone {
    let start = Instant::now();
    let mut p = req.pipeline.clone();
    let opts = Options { cancel: Some(cancel), progress, ..req.opts.clone() };
    let outcome = match req.target {
        RunTarget::All => p.run_all(t, judge, &opts),
        RunTarget::Stage(s) => p.run(t, judge, &opts, s),
        RunTarget::Rerun { from, to } => {
            p.run(t, judge, &opts, from).and_then(|()| if to > from { p.run(t, judge, &opts, to) } else { Ok(()) })
        }
    };
    let diagnosis = outcome.is_ok().then(|| p.diagnosis(t, judge, &opts));
    JobDone { id: req.id, pipeline: p, outcome, diagnosis, elapsed: start.elapsed() }
}

/// A run in the background.
pub struct JobHandle {
    /// The run's id.
    pub id: u64,
    cancel: Arc<AtomicBool>,
}

impl JobHandle {
    /// Asks the run to stop at the next judge call.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

/// Progress messages at most this often (the last one of a stage always goes through).
const PROGRESS_EVERY: Duration = Duration::from_millis(50);

/// Starts a run on the blocking pool; its messages go to `tx`.
pub fn spawn(req: RunRequest, t: Arc<Trajectory>, judge: Arc<dyn Judge>, tx: UnboundedSender<JobMsg>) -> JobHandle {
    let cancel = Arc::new(AtomicBool::new(false));
    let id = req.id;
    let last = Mutex::new(Instant::now() - PROGRESS_EVERY);
    let ptx = tx.clone();
    let progress: ProgressFn = Arc::new(move |stage: &str, done: usize, total: usize| {
        let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
        if done >= total || last.elapsed() >= PROGRESS_EVERY {
            *last = Instant::now();
            let _ = ptx.send(JobMsg::Progress { id, stage: stage.to_string(), done, total });
        }
    });
    let flag = Arc::clone(&cancel);
    tokio::task::spawn_blocking(move || {
        let done = execute(&req, &t, judge.as_ref(), flag, Some(progress));
        let _ = tx.send(JobMsg::Done(Box::new(done)));
    });
    JobHandle { id, cancel }
}

/// Builds the full hierarchy of a large trace, then its dependency graph, on the blocking pool.
pub fn spawn_index(t: Arc<Trajectory>, tx: UnboundedSender<JobMsg>) {
    tokio::task::spawn_blocking(move || {
        let h = Arc::new(crate::hierarchy::build(&t));
        if tx.send(JobMsg::Hierarchy(Arc::clone(&h))).is_ok() {
            let g = DepGraph::build(&t, &h);
            let _ = tx.send(JobMsg::Graph(Arc::new(g)));
        }
    });
}
