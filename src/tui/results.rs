//! What is known about the open trajectory, as a component: its substrate (built once and shared
//! with every run), the pipeline's stages so far, the diagnosis with the user's overrides and the
//! machine's verdict beside it, every method's last verdict, and what each step carries from the
//! diagnosis. It takes finished runs ([`Results::take_run`]) and answers the views' questions; it
//! does not move the selection or write the status line (the app does).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::job::{JobDone, RunRequest, RunTarget};
use super::runs::Activity;
use crate::diagnosis::{Diagnosis, Overrides, Role};
use crate::graph::DepGraph;
use crate::hierarchy::{Hierarchy, Phase};
use crate::methods::Method;
use crate::methods::falat::{Cancelled, Options, Pipeline, Stage};
use crate::model::Trajectory;
use crate::substrate::Substrate;

/// What a step carries from the diagnosis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StepMarks {
    /// `Some(true)` kept candidate, `Some(false)` pruned candidate.
    pub candidate: Option<bool>,
    /// Its role around the decisive step.
    pub role: Option<Role>,
    /// It is the decisive step.
    pub decisive: bool,
}

/// What a finished run changed, for the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// Every method ran; this many verdicts.
    Methods(usize),
    /// One method or pipeline stages ran; the decisive step before the run.
    Verdict {
        /// The machine's decisive step before the run.
        before: Option<usize>,
    },
    /// A cancelled pipeline run kept its finished stages, through the named one.
    KeptStages(Stage),
    /// Cancelled without results.
    Cancelled,
}

/// The results of the analysis of one trajectory.
pub struct Results {
    /// The substrate the views and every run read: of the whole trajectory, or, while a large
    /// trace is indexed in the background ([`Results::indexing`]), of its first steps.
    pub substrate: Arc<Substrate>,
    /// The substrate covers only the first [`super::app::SYNC_STEPS`] steps; the whole one is
    /// being built.
    pub indexing: bool,
    /// The stages run so far (over the whole trajectory's substrate).
    pub pipeline: Pipeline,
    /// The diagnosis of the last finished run, with the user's overrides applied (the user's
    /// decision when there are overrides).
    pub diagnosis: Option<Diagnosis>,
    /// The machine's verdict of the same stages without the overrides, kept while
    /// [`Results::diagnosis`] carries overrides (see [`Results::machine_verdict`]).
    pub machine: Option<Diagnosis>,
    /// The last diagnosis of each method run from the methods view (or by `a` with another
    /// method).
    pub methods: BTreeMap<Method, Diagnosis>,
    marks: HashMap<usize, StepMarks>,
}

impl Results {
    /// Results of a trajectory whose substrate is `substrate`; `indexing` when it covers only the
    /// first steps.
    pub fn new(substrate: Arc<Substrate>, indexing: bool) -> Results {
        let pipeline = if indexing { Pipeline::default() } else { Pipeline::new(Arc::clone(&substrate)) };
        Results {
            substrate,
            indexing,
            pipeline,
            diagnosis: None,
            machine: None,
            methods: BTreeMap::new(),
            marks: HashMap::new(),
        }
    }

    /// The whole trajectory's substrate arrived: runs share it from now on.
    pub fn indexed(&mut self, substrate: Arc<Substrate>) {
        self.pipeline.substrate = Some(Arc::clone(&substrate));
        self.substrate = substrate;
        self.indexing = false;
    }

    /// The hierarchy: stage 1's (with suspicion) once it ran, else the substrate's.
    pub fn hierarchy(&self) -> &Hierarchy {
        self.pipeline.space.as_ref().map_or(&self.substrate.hierarchy, |s| &s.hierarchy)
    }

    /// The phases.
    pub fn phases(&self) -> &[Phase] {
        &self.hierarchy().phases
    }

    /// The dependency graph: stage 2's (with transition labels) once it ran, else the
    /// substrate's.
    pub fn graph(&self) -> &DepGraph {
        self.pipeline.deps.as_ref().map_or(&self.substrate.graph, |d| &d.graph)
    }

    /// What the diagnosis says about a step.
    pub fn marks(&self, step: usize) -> StepMarks {
        self.marks.get(&step).copied().unwrap_or_default()
    }

    /// The machine's verdict: the diagnosis itself when it carries no override, else the one
    /// computed without them (`None` before any run, or while it is unknown).
    pub fn machine_verdict(&self) -> Option<&Diagnosis> {
        match &self.diagnosis {
            Some(d) if d.overrides.is_empty() => Some(d),
            Some(_) => self.machine.as_ref(),
            None => None,
        }
    }

    /// The user's decision: the diagnosis with the overrides, when there are any.
    pub fn user_decision(&self) -> Option<&Diagnosis> {
        self.diagnosis.as_ref().filter(|d| !d.overrides.is_empty())
    }

    /// The decisive step of the machine's verdict (of the diagnosis while that is unknown).
    pub fn decisive_step(&self) -> Option<usize> {
        self.machine_verdict().or(self.diagnosis.as_ref()).and_then(|d| d.decisive_step)
    }

    /// The number of candidates in the diagnosis.
    pub fn n_candidates(&self) -> usize {
        self.diagnosis.as_ref().map_or(0, |d| d.candidates.len())
    }

    /// The rows of the roles view: every step in the re-search window (`window` steps each side)
    /// around the decisive step and every step with a role, by step, with its role if it has one;
    /// steps from `n_steps` on are left out.
    pub fn role_rows(&self, window: usize, n_steps: usize) -> Vec<(usize, Option<Role>)> {
        let Some(d) = self.diagnosis.as_ref().filter(|d| !d.roles.is_empty()) else { return Vec::new() };
        let mut steps: BTreeSet<usize> = d.roles.iter().map(|(s, _)| *s).collect();
        if let Some(s) = d.decisive_step {
            steps.extend(s.saturating_sub(window)..=(s + window).min(n_steps.saturating_sub(1)));
        }
        steps.into_iter().map(|s| (s, d.role_of(s))).collect()
    }

    /// The request of run `id` of `target` from the stages so far with `opts` (the user's
    /// overrides stay out of method runs: the methods view compares machine verdicts).
    pub fn run_request(&self, id: u64, target: RunTarget, mut opts: Options) -> RunRequest {
        if !target.is_pipeline() {
            opts.overrides = Overrides::default();
        }
        // An override re-run keeps the machine verdict already known; any other run asks anew.
        let machine = target.is_pipeline()
            && !opts.overrides.is_empty()
            && (self.machine_verdict().is_none() || !matches!(target, RunTarget::Rerun { .. }));
        RunRequest { id, target, pipeline: self.pipeline.clone(), opts, machine }
    }

    /// The stage (or method) a run starts with, shown until its first progress report.
    pub fn first_stage(&self, target: RunTarget) -> Activity {
        let next = match self.pipeline.last_stage() {
            None => Stage::SearchSpace,
            Some(last) => Stage::ALL.into_iter().find(|s| *s > last).unwrap_or(Stage::ReSearch),
        };
        match target {
            RunTarget::Method(m) => Activity::Method(m),
            RunTarget::AllMethods => Activity::Method(Method::ALL[0]),
            RunTarget::All => Activity::Stage(Stage::SearchSpace),
            RunTarget::Stage(s) => Activity::Stage(s.min(next)),
            RunTarget::Rerun { from, .. } => Activity::Stage(from),
        }
    }

    /// Takes a finished run: its stages, diagnosis and method verdicts replace the old ones
    /// (a cancelled pipeline run keeps the stages it finished).
    pub fn take_run(&mut self, d: JobDone, target: RunTarget) -> Taken {
        let before = self.decisive_step();
        let taken = match (d.outcome, target) {
            (Ok(()), RunTarget::AllMethods) => {
                let n = d.methods.len();
                self.insert_methods(d.methods);
                Taken::Methods(n)
            }
            (Ok(()), RunTarget::Method(m)) => {
                if let Some(r) = d.methods.into_iter().next() {
                    self.methods.insert(m, r);
                }
                self.diagnosis = d.diagnosis;
                Taken::Verdict { before }
            }
            (Ok(()), _) => {
                self.pipeline = d.pipeline;
                let previous = std::mem::replace(&mut self.diagnosis, d.diagnosis);
                self.keep_machine_verdict(previous, d.machine);
                Taken::Verdict { before }
            }
            (Err(Cancelled), target) if target.is_pipeline() && d.pipeline.last_stage().is_some() => {
                let kept = d.pipeline.last_stage().unwrap_or(Stage::SearchSpace);
                self.pipeline = d.pipeline;
                self.diagnosis = d.diagnosis;
                Taken::KeptStages(kept)
            }
            (Err(Cancelled), _) => return Taken::Cancelled,
        };
        self.refresh_marks();
        taken
    }

    fn insert_methods(&mut self, list: Vec<Diagnosis>) {
        for m in list {
            self.methods.insert(m.method, m);
        }
    }

    /// After a pipeline run: which machine verdict stands beside the new diagnosis.
    fn keep_machine_verdict(&mut self, previous: Option<Diagnosis>, computed: Option<Diagnosis>) {
        let with_overrides = self.diagnosis.as_ref().is_some_and(|d| !d.overrides.is_empty());
        self.machine = match (computed, previous) {
            _ if !with_overrides => None,
            (Some(m), _) => Some(m),
            (None, Some(p)) if p.overrides.is_empty() => Some(p),
            (None, _) => self.machine.take(),
        };
        // The methods view's falat row is the machine's verdict of a full run.
        if self.pipeline.research.is_some()
            && let Some(m) = self.machine_verdict().cloned()
        {
            self.methods.insert(Method::Falat, m);
        }
    }

    /// Recomputes what each step carries from the diagnosis.
    pub fn refresh_marks(&mut self) {
        self.marks.clear();
        let Some(d) = &self.diagnosis else { return };
        for c in &d.candidates {
            self.marks.entry(c.step).or_default().candidate = Some(c.pruned.is_none());
        }
        for (s, r) in &d.roles {
            self.marks.entry(*s).or_default().role = Some(*r);
        }
        if let Some(s) = d.decisive_step {
            self.marks.entry(s).or_default().decisive = true;
        }
    }
}

/// The substrate shown first: of the whole trajectory when it has at most `sync_steps` steps,
/// else of its first `sync_steps` (the whole one is then built in the background). Returns the
/// substrate and whether it is partial.
pub fn first_substrate(t: &Trajectory, sync_steps: usize) -> (Arc<Substrate>, bool) {
    if t.steps.len() <= sync_steps {
        return (Substrate::shared(t), false);
    }
    (Substrate::shared(&prefix(t, sync_steps)), true)
}

/// The first `n` steps of a trajectory, with the links among them.
fn prefix(t: &Trajectory, n: usize) -> Trajectory {
    let mut p = Trajectory::default();
    p.id.clone_from(&t.id);
    p.source = t.source;
    p.task.clone_from(&t.task);
    p.agents.clone_from(&t.agents);
    p.steps = t.steps[..n.min(t.steps.len())].to_vec();
    p.links = t.links.iter().filter(|l| l.from < n && l.to < n).copied().collect();
    p
}
