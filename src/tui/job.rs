//! Pipeline and method runs off the UI thread: a [`RunRequest`] is executed on tokio's blocking
//! pool with the pipeline's cancel flag and a throttled progress callback; results come back as
//! [`JobMsg`]s. [`execute`] is the same run done synchronously (tests, headless use).
//!
//! Every run reads the substrate the app built once for the trajectory (carried by the request's
//! [`Pipeline`]). Method runs ([`RunTarget::Method`], [`RunTarget::AllMethods`]) go through
//! [`crate::methods::run_on`]; cancelling works as for the pipeline, through the judge session
//! ([`crate::judge::session::Session`]) the options' cancel flag controls: once it is set, the
//! remaining questions get the offline judge's instant answers, the stop points end the run, and
//! the run's results are dropped (a pipeline run keeps the stages it finished).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use super::runs::Activity;

use crate::diagnosis::Diagnosis;
use crate::diagnosis::PipelineProgress;
use crate::judge::Judge;
use crate::methods::falat::{Cancelled, Options, Pipeline, ProgressFn, Stage};
use crate::methods::{self, Method, MethodOptions};
use crate::model::Trajectory;
use crate::substrate::Substrate;

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
    /// One method through [`crate::methods::run`] (the `--method` of `falat open`, when it is not
    /// falat).
    Method(Method),
    /// Every method of [`Method::ALL`], one after the other (the methods view).
    AllMethods,
}

impl RunTarget {
    /// A lowercase label for the status line.
    pub fn label(self) -> String {
        match self {
            RunTarget::All => "all stages".into(),
            RunTarget::Stage(s) => s.as_str().into(),
            RunTarget::Rerun { from, to } if from == to => format!("{} with overrides", from.as_str()),
            RunTarget::Rerun { from, to } => format!("{} to {} with overrides", from.as_str(), to.as_str()),
            RunTarget::Method(m) => format!("method {m}"),
            RunTarget::AllMethods => "all methods".into(),
        }
    }

    /// Whether the run is made of FALAT pipeline stages (rather than methods).
    pub fn is_pipeline(self) -> bool {
        !matches!(self, RunTarget::Method(_) | RunTarget::AllMethods)
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
    /// Also compute the machine's verdict without the overrides (the app has none for this
    /// pipeline state yet), so that the user's decision is shown beside it, never in its place.
    pub machine: bool,
}

/// The result of a run.
pub struct JobDone {
    /// The run's id.
    pub id: u64,
    /// The pipeline after the run (only meaningful when `outcome` is `Ok`).
    pub pipeline: Pipeline,
    /// Finished or cancelled.
    pub outcome: Result<(), Cancelled>,
    /// The diagnosis of the finished run, with the overrides it ran with (of the one method, for
    /// [`RunTarget::Method`]; `None` for [`RunTarget::AllMethods`]).
    pub diagnosis: Option<Diagnosis>,
    /// The diagnoses of a method run, in [`Method::ALL`] order (empty for pipeline runs).
    pub methods: Vec<Diagnosis>,
    /// The verdict of the same stages without the user's overrides, when the request asked for
    /// it and the overrides are not empty.
    pub machine: Option<Diagnosis>,
    /// Wall time.
    pub elapsed: Duration,
}

/// Messages from background work to the app.
pub enum JobMsg {
    /// Progress of a run: what it is doing, judge calls done and expected.
    Progress {
        /// The run's id.
        id: u64,
        /// What it is doing.
        activity: Activity,
        /// Done so far.
        done: usize,
        /// Total expected.
        total: usize,
    },
    /// Questions the run has asked its judge so far, and the judge's calls for them (an LLM
    /// judge answers several questions with one call, and memoised ones with none).
    Asked {
        /// The run's id.
        id: u64,
        /// Questions asked.
        questions: usize,
        /// Judge calls made.
        calls: u64,
    },
    /// A run ended.
    Done(Box<JobDone>),
    /// The whole trajectory's substrate is ready (a large trace builds it in the background).
    Substrate(Arc<Substrate>),
}

/// The run's judge, reporting how many questions it was asked ([`JobMsg::Asked`], at most every
/// [`PROGRESS_EVERY`] unless a question needed a call).
struct Counting {
    inner: Arc<dyn Judge>,
    id: u64,
    tx: UnboundedSender<JobMsg>,
    seen: Mutex<(usize, u64, Instant)>,
}

impl Judge for Counting {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn ask(&self, ctx: &crate::judge::Context<'_>, q: &crate::judge::Question) -> crate::judge::Judged {
        let j = self.inner.ask(ctx, q);
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.0 += 1;
        seen.1 += j.cost.calls;
        // An LLM call is slow and worth a message; the offline judge's instant answers are not.
        if j.cost.prompt_tokens > 0 || seen.2.elapsed() >= PROGRESS_EVERY {
            seen.2 = Instant::now();
            let _ = self.tx.send(JobMsg::Asked { id: self.id, questions: seen.0, calls: seen.1 });
        }
        j
    }
}

/// A run's progress callback: what it is doing, units done and expected.
pub type Progress = Arc<dyn Fn(Activity, usize, usize) + Send + Sync>;

/// Runs a request synchronously.
pub fn execute(
    req: &RunRequest,
    t: &Trajectory,
    judge: &dyn Judge,
    cancel: Arc<AtomicBool>,
    progress: Option<Progress>,
) -> JobDone {
    if !req.target.is_pipeline() {
        return execute_methods(req, t, judge, cancel, progress);
    }
    let start = Instant::now();
    let mut p = req.pipeline.clone();
    // The pipeline reports through the judge session's callback.
    let progress = progress.map(|p| -> ProgressFn {
        Arc::new(move |what: PipelineProgress, done, total| p(Activity::of_pipeline(what), done, total))
    });
    let opts = Options { cancel: Some(cancel), progress, ..req.opts.clone() };
    let outcome = match req.target {
        RunTarget::All => p.run_all(t, judge, &opts),
        RunTarget::Stage(s) => p.run(t, judge, &opts, s),
        RunTarget::Rerun { from, to } => {
            p.run(t, judge, &opts, from).and_then(|()| if to > from { p.run(t, judge, &opts, to) } else { Ok(()) })
        }
        RunTarget::Method(_) | RunTarget::AllMethods => unreachable!("method runs are handled above"),
    };
    // A cancelled run still reports what its finished stages found.
    let diagnosis = (outcome.is_ok() || p.last_stage().is_some()).then(|| p.diagnosis(t, judge, &opts));
    let machine = (req.machine && outcome.is_ok() && !opts.overrides.is_empty())
        .then(|| machine_verdict(&p, t, judge, &opts))
        .flatten();
    JobDone { id: req.id, pipeline: p, outcome, diagnosis, methods: Vec::new(), machine, elapsed: start.elapsed() }
}

/// The verdict of the stages `p` ran, re-run from stage 2 (where overrides enter) without the
/// overrides; `None` when cancelled.
fn machine_verdict(p: &Pipeline, t: &Trajectory, judge: &dyn Judge, opts: &Options) -> Option<Diagnosis> {
    let o = Options { overrides: Default::default(), ..opts.clone() };
    let mut m = p.clone();
    if let Some(last) = p.last_stage().filter(|s| *s >= Stage::Dependencies) {
        m.run(t, judge, &o, Stage::Dependencies).ok()?;
        if last > Stage::Dependencies {
            m.run(t, judge, &o, last).ok()?;
        }
    }
    Some(m.diagnosis(t, judge, &o))
}

/// The options of a method run: the request's ground truth, window and overrides (FALAT applies
/// them), the default seed, panel and segment length, and the cancel flag for FALAT's stages.
pub fn method_options(opts: &Options, cancel: Option<Arc<AtomicBool>>) -> MethodOptions {
    let pipeline = Options { cancel, progress: None, ..opts.clone() };
    MethodOptions { pipeline, ..MethodOptions::new(opts.ground_truth) }
}

/// Runs one method or all of them; progress reports the method about to run and how many are
/// done.
fn execute_methods(
    req: &RunRequest,
    t: &Trajectory,
    judge: &dyn Judge,
    cancel: Arc<AtomicBool>,
    progress: Option<Progress>,
) -> JobDone {
    let start = Instant::now();
    let list: Vec<Method> = match req.target {
        RunTarget::Method(m) => vec![m],
        _ => Method::ALL.to_vec(),
    };
    let mopts = method_options(&req.opts, Some(Arc::clone(&cancel)));
    let mut out = Vec::new();
    let substrate = req.pipeline.substrate.clone().unwrap_or_else(|| Substrate::shared(t));
    for (i, m) in list.iter().enumerate() {
        if cancel.load(Ordering::Relaxed) {
            break;
        }
        if let Some(p) = &progress {
            p(Activity::Method(*m), i, list.len());
        }
        out.push(methods::run_on(*m, t, &substrate, judge, &mopts));
    }
    let outcome = if cancel.load(Ordering::Relaxed) { Err(Cancelled) } else { Ok(()) };
    if outcome.is_err() {
        out.clear();
    }
    let diagnosis = match req.target {
        RunTarget::Method(_) => out.first().cloned(),
        _ => None,
    };
    JobDone {
        id: req.id,
        pipeline: req.pipeline.clone(),
        outcome,
        diagnosis,
        methods: out,
        machine: None,
        elapsed: start.elapsed(),
    }
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
    let progress: Progress = Arc::new(move |activity: Activity, done: usize, total: usize| {
        let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
        if done >= total || last.elapsed() >= PROGRESS_EVERY {
            *last = Instant::now();
            let _ = ptx.send(JobMsg::Progress { id, activity, done, total });
        }
    });
    let flag = Arc::clone(&cancel);
    let counting =
        Counting { inner: judge, id, tx: tx.clone(), seen: Mutex::new((0, 0, Instant::now() - PROGRESS_EVERY)) };
    tokio::task::spawn_blocking(move || {
        let done = execute(&req, &t, &counting, flag, Some(progress));
        let _ = tx.send(JobMsg::Done(Box::new(done)));
    });
    JobHandle { id, cancel }
}

/// Builds the whole trajectory's substrate (hierarchy, graph, prior) on the blocking pool, once;
/// every later run shares it.
pub fn spawn_index(t: Arc<Trajectory>, tx: UnboundedSender<JobMsg>) {
    tokio::task::spawn_blocking(move || {
        let _ = tx.send(JobMsg::Substrate(Substrate::shared(&t)));
    });
}
