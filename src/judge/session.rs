//! One session for asking the judge, used by FALAT's stages, ECHO, DeFA and the Who&When
//! baselines alike: it counts calls, tokens and wall time per named stage, collects the judge's
//! warnings, reports progress, and honours a cancel flag.
//!
//! Cancellation has two forms. [`Session::check`] is a stop point: it returns [`Cancelled`] once
//! the flag is set, and the FALAT stages call it between questions so that a cancelled stage
//! returns no value (the stages finished before it keep theirs). Methods without stop points keep
//! asking, but once the flag is set [`Session::ask`] answers from the offline
//! [`HeuristicJudge`] at no cost instead of the session's judge, so a long LLM run ends within
//! one call; [`Session::cancelled`] then says the result is not the judge's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::heuristic::HeuristicJudge;
use super::{Answer, Context, Judge, Question};
use crate::diagnosis::{Cost, Diagnosis, PipelineProgress, StageCost, StageName};

/// Progress callback: `(what, done, total)`.
pub type ProgressFn = Arc<dyn Fn(PipelineProgress, usize, usize) + Send + Sync>;

/// A stage stopped because the session's cancel flag was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// Asks a judge and records calls, tokens and time per named stage.
pub struct Session<'j> {
    judge: &'j dyn Judge,
    /// Cost per stage, in the order the stages ran.
    pub costs: Vec<StageCost>,
    /// Judge warnings and the method's own.
    pub warnings: Vec<String>,
    current: Option<usize>,
    cancel: Option<Arc<AtomicBool>>,
    progress: Option<ProgressFn>,
    cancelled: bool,
}

impl<'j> Session<'j> {
    /// The kind of the judge the session asks.
    pub fn judge_kind(&self) -> super::JudgeKind {
        self.judge.kind()
    }

    /// A session without cancel flag or progress callback.
    pub fn new(judge: &'j dyn Judge) -> Session<'j> {
        Session::controlled(judge, None, None)
    }

    /// A session that stops when `cancel` is set and reports to `progress`.
    pub fn controlled(
        judge: &'j dyn Judge,
        cancel: Option<Arc<AtomicBool>>,
        progress: Option<ProgressFn>,
    ) -> Session<'j> {
        Session { judge, costs: Vec::new(), warnings: Vec::new(), current: None, cancel, progress, cancelled: false }
    }

    /// Whether the cancel flag is set.
    pub fn is_cancel_requested(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// Whether a question was answered offline because the run was cancelled.
    pub fn cancelled(&self) -> bool {
        self.cancelled
    }

    /// A stop point: [`Cancelled`] once the cancel flag is set.
    ///
    /// # Errors
    /// [`Cancelled`].
    pub fn check(&self) -> Result<(), Cancelled> {
        if self.is_cancel_requested() { Err(Cancelled) } else { Ok(()) }
    }

    /// Reports progress: `done` of `total` units of `what`.
    pub fn tick(&self, what: PipelineProgress, done: usize, total: usize) {
        if let Some(p) = &self.progress {
            p(what, done, total);
        }
    }

    /// Runs `f` as the stage `name`: the judge calls inside count for it, and its wall time is the
    /// time `f` took.
    pub fn stage<T>(&mut self, name: StageName, f: impl FnOnce(&mut Self) -> T) -> T {
        let start = Instant::now();
        self.costs.push(StageCost { stage: name, cost: Cost::default() });
        let (idx, outer) = (self.costs.len() - 1, self.current);
        self.current = Some(idx);
        let out = f(self);
        self.current = outer;
        self.costs[idx].cost.wall = start.elapsed();
        out
    }

    /// Asks one question; its calls and tokens count for the current stage (a `judge` stage when
    /// none is open). Once the run is cancelled the offline judge answers, at no cost.
    pub fn ask(&mut self, ctx: &Context<'_>, q: &Question) -> Answer {
        if self.is_cancel_requested() {
            self.cancelled = true;
            return HeuristicJudge.ask(ctx, q).answer;
        }
        let j = self.judge.ask(ctx, q);
        let idx = match self.current {
            Some(i) => i,
            None => {
                self.costs.push(StageCost { stage: StageName::Judge, cost: Cost::default() });
                self.current = Some(self.costs.len() - 1);
                self.costs.len() - 1
            }
        };
        let c = &mut self.costs[idx].cost;
        c.calls += j.cost.calls;
        c.prompt_tokens += j.cost.prompt_tokens;
        c.completion_tokens += j.cost.completion_tokens;
        c.cached_tokens += j.cost.cached_tokens;
        c.answers.add(&j.cost.answers);
        c.later_prompt_tokens += j.cost.later_prompt_tokens;
        c.later_cached_tokens += j.cost.later_cached_tokens;
        c.replay_misses += j.cost.replay_misses;
        if let Some(w) = j.warning {
            self.warnings.push(w);
        }
        j.answer
    }

    /// The calls and tokens of every stage together (wall time summed).
    pub fn total(&self) -> Cost {
        let mut total = Cost::default();
        for s in &self.costs {
            total.add(&s.cost);
        }
        total
    }

    /// Ends a FALAT stage that began at `start`: its cost (every call of the session, the wall
    /// time since `start`), its warnings moved into `warnings`.
    pub fn close(self, start: Instant, warnings: &mut Vec<String>) -> Cost {
        let mut cost = self.total();
        cost.wall = start.elapsed();
        warnings.extend(self.warnings);
        cost
    }

    /// Moves the costs and warnings into a diagnosis (with a warning when the run was cancelled).
    pub fn finish(self, d: &mut Diagnosis) {
        d.cost = self.costs;
        d.warnings.extend(self.warnings);
        if self.cancelled {
            d.warnings.push("cancelled: later questions were answered by the offline judge".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::hierarchy;
    use crate::judge::Judged;
    use crate::model::{Step, Trajectory};
    use crate::substrate::Facts;

    /// A judge that must not be asked.
    struct MustNotAsk;

    impl Judge for MustNotAsk {
        fn name(&self) -> String {
            "must-not-ask".into()
        }
        fn ask(&self, _: &Context<'_>, _: &Question) -> Judged {
            panic!("asked after the cancel flag was set")
        }
    }

    #[test]
    fn a_cancelled_session_stops_and_answers_offline() {
        let step = Step { agent: "a".into(), content: "The total is 42 dollars.".into(), ..Step::default() };
        let t = Trajectory { steps: vec![step], ..Trajectory::default() };
        let h = hierarchy::build(&t);
        let facts = Facts::default();
        let ctx =
            Context { trajectory: &t, hierarchy: &h, prior: None, graph: None, facts: &facts, ground_truth: false };
        let flag = Arc::new(AtomicBool::new(false));
        let ticks = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&ticks);
        let progress: ProgressFn = Arc::new(move |p: PipelineProgress, d, n| seen.lock().unwrap().push((p, d, n)));
        let mut s = Session::controlled(&HeuristicJudge, Some(Arc::clone(&flag)), Some(progress));
        assert!(matches!(s.stage(StageName::RandomDraw, |s| s.ask(&ctx, &Question::Prior)), Answer::Prior(_)));
        s.tick(PipelineProgress::Recall, 1, 1);
        assert_eq!(s.check(), Ok(()));
        flag.store(true, Ordering::Relaxed);
        assert_eq!(s.check(), Err(Cancelled));
        let costs: Vec<(&str, u64)> = s.costs.iter().map(|c| (c.stage.as_str(), c.cost.calls)).collect();
        assert_eq!(costs, vec![("draw", 1)]);
        assert_eq!(*ticks.lock().unwrap(), vec![(PipelineProgress::Recall, 1, 1)]);

        let mut late = Session::controlled(&MustNotAsk, Some(flag), None);
        assert!(matches!(late.stage(StageName::AllAtOnce, |s| s.ask(&ctx, &Question::Prior)), Answer::Prior(_)));
        assert!(late.cancelled());
        assert_eq!(late.costs[0].cost.calls, 0, "offline answers cost nothing");
        let mut d = Diagnosis::default();
        late.finish(&mut d);
        assert_eq!(d.warnings, vec!["cancelled: later questions were answered by the offline judge".to_string()]);
    }
}
