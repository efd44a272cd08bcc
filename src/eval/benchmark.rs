//! The one evaluation path: loading labelled benchmark folders into [`Case`]s and running table
//! rows ([`Variant`]s: a method, possibly with components off) over them into scored
//! [`Record`]s. `falat eval`, the accuracy tests (`tests/methods_accuracy.rs`, `tests/ranker.rs`)
//! and library users call these same functions, so the tests measure what users run.
//!
//! Loading goes through [`crate::ingest::fs::load_labelled`]: a file that cannot be read or
//! parsed, or carries no gold step, is listed in [`Benchmark::skipped`] (file, line where it
//! applies, reason) and the rest loads. Each case is put in the fixed tune/report part of
//! [`crate::rank::split`].
//!
//! [`evaluate`] builds each case's [`Substrate`] once for the rows run as their papers give them
//! and once for each row with a component off (an ablated run must not reuse facts memoised by
//! the full one), diagnoses on `jobs` threads, and returns the records in case order, then row
//! order, whatever the scheduling.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::fit::{Labelled, fit_ranker};
use super::{Record, score};
use crate::eval::Variant;
use crate::ingest::LoadError;
use crate::ingest::fs::load_labelled;
use crate::judge::Judge;
use crate::judge::JudgeKind;
use crate::judge::fitted::FittedJudge;
use crate::judge::heuristic::HeuristicWithRanker;
use crate::methods::ablation::{self, Component};
use crate::methods::{self, Method, MethodOptions};
use crate::model::Trajectory;
use crate::rank::model::RankerError;
use crate::rank::split::{Part, fold_of, part_of};
use crate::substrate::Substrate;

/// A labelled trajectory of a benchmark and where it came from.
#[derive(Debug, Clone)]
pub struct Case {
    /// The file it was loaded from, as given (folder joined with the file's path in it).
    pub file: String,
    /// The subset: the name of the file's folder (`Hand-Crafted`, `agentrx-tau`).
    pub subset: String,
    /// Its part of the fixed tune/report split ([`part_of`] of the file name and trajectory id).
    pub part: Part,
    /// The trajectory; it has a gold label with a step.
    pub trajectory: Trajectory,
}

/// Labelled cases of benchmark folders, and what could not be used.
#[derive(Debug, Clone, Default)]
pub struct Benchmark {
    /// Labelled trajectories in path order (a file with several trajectories keeps their order).
    pub cases: Vec<Case>,
    /// One message per file or trajectory left out: unreadable or unparsable files (naming the
    /// file and, where it applies, the line and column), label files that do not parse, labels
    /// that match no step, trajectories without a gold step.
    pub skipped: Vec<String>,
    /// How many files of `skipped` could not be read or parsed (`falat eval` then exits with 2,
    /// after its table, as `diagnose` does over several files).
    pub unreadable: usize,
}

impl Benchmark {
    /// Loads every labelled trajectory under `dirs` (searched recursively for `.json` and
    /// `.jsonl` files, in natural path order). Gold labels come from the traces themselves, from
    /// label files found in a folder (applied to that folder) and from `labels` (applied to all),
    /// see `docs/LABELS.md`.
    ///
    /// # Errors
    /// A folder that cannot be listed, or a file of `labels` that cannot be read or parsed. A bad
    /// trace file is not an error: it is listed in [`Benchmark::skipped`].
    pub fn load(dirs: &[PathBuf], labels: &[PathBuf]) -> Result<Benchmark, LoadError> {
        let set = load_labelled(dirs, labels)?;
        let cases = set
            .items
            .into_iter()
            .map(|l| {
                let file = l.file.display().to_string();
                let part = part_of(&file, &l.trajectory.id);
                Case { file, subset: subset_of(&l.file), part, trajectory: l.trajectory }
            })
            .collect();
        Ok(Benchmark { cases, skipped: set.skipped, unreadable: set.unreadable })
    }

    /// Keeps the first `n` cases of every subset (in load order), for a quick or cheap run.
    pub fn limit_per_subset(&mut self, n: usize) {
        let mut seen: Vec<(String, usize)> = Vec::new();
        self.cases.retain(|c| {
            let k = match seen.iter().position(|(s, _)| *s == c.subset) {
                Some(k) => k,
                None => {
                    seen.push((c.subset.clone(), 0));
                    seen.len() - 1
                }
            };
            seen[k].1 += 1;
            seen[k].1 <= n
        });
    }

    /// Number of cases in the report part.
    pub fn report_count(&self) -> usize {
        self.cases.iter().filter(|c| c.part == Part::Report).count()
    }
}

/// The subset of a file: the name of its folder (`.` when it has none).
fn subset_of(f: &Path) -> String {
    f.parent().and_then(|p| p.file_name()).map_or_else(|| ".".into(), |n| n.to_string_lossy().into_owned())
}

/// The rows of `methods` with `components` off one at a time: each method as its paper gives it,
/// then, per listed component the method has, the method with that component off
/// ([`ablation::rows`]).
pub fn variants(methods: &[Method], components: &[Component]) -> Vec<Variant> {
    let mut out = Vec::new();
    for &m in methods {
        for a in ablation::rows(m, components) {
            out.push(Variant { method: m, ablations: a });
        }
    }
    out
}

/// Why cross-validated judges could not be made ([`Judges::cross_validated`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CrossValidationError {
    /// Fewer than 2 folds asked for.
    #[error("cross-validation needs at least 2 folds, got {0}")]
    TooFewFolds(usize),
    /// The ranker of one fold (or of the report part) could not be fitted.
    #[error("cannot fit the ranker ({what}): {source}")]
    Fit {
        /// Which fit: the fold, or the report part.
        what: String,
        /// Why.
        source: RankerError,
    },
}

/// Which judge answers for each case and row.
///
/// Cases sit in slots (one slot, or with cross-validation one per fold plus one for the report
/// part); the rows run as their papers give them share the slot's judge. A row with a component
/// off may get judges of its own (one per slot), because a judge that remembers its answers per
/// trajectory and question (the LLM judge) must not hand the full method's answers to it.
pub struct Judges {
    /// The judges of the full rows, one per slot.
    slots: Vec<Arc<dyn Judge>>,
    /// The slot of each case (empty: slot 0 for all).
    of_case: Vec<usize>,
    /// Per row, its own judge per slot (empty: the slot's judge).
    own: Vec<Vec<Arc<dyn Judge>>>,
}

impl Judges {
    /// One judge for every case and row. Fine for judges that remember nothing between
    /// questions (the heuristic and fitted judges).
    pub fn shared(judge: Arc<dyn Judge>) -> Judges {
        Judges { slots: vec![judge], of_case: Vec::new(), own: Vec::new() }
    }

    /// One judge from `make` for the full rows, and one more from `make` for each row of
    /// `variants` with a component off.
    ///
    /// # Errors
    /// The first error of `make`.
    pub fn fresh<E>(variants: &[Variant], mut make: impl FnMut() -> Result<Arc<dyn Judge>, E>) -> Result<Judges, E> {
        let slots = vec![make()?];
        let own = variants
            .iter()
            .map(|v| if v.ablations.is_empty() { Ok(Vec::new()) } else { make().map(|j| vec![j]) })
            .collect::<Result<_, E>>()?;
        Ok(Judges { slots, of_case: Vec::new(), own })
    }

    /// K-fold cross-validation of the fitted ranker (`docs/RANKER.md`): each tune case is put in
    /// a fold by its task ([`fold_of`]) and judged by a ranker fitted on the tune cases of the
    /// other folds; report cases are judged by a ranker fitted on the whole tune part. Rows with
    /// a component off get their own judges with the same rankers. `kind` says which judge ranks
    /// with them: [`JudgeKind::Fitted`] the fitted judge, any other the offline judge (whose
    /// decisions also read the ranking: FALAT's when verification does not tell candidates apart).
    ///
    /// # Errors
    /// [`CrossValidationError`]: `k` below 2, or a ranker that cannot be fitted (naming the fold).
    pub fn cross_validated(
        cases: &[Case],
        k: usize,
        variants: &[Variant],
        kind: JudgeKind,
    ) -> Result<Judges, CrossValidationError> {
        if k < 2 {
            return Err(CrossValidationError::TooFewFolds(k));
        }
        let labelled: Vec<Labelled<'_>> = cases.iter().map(|c| Labelled::of(&c.trajectory)).collect();
        let folds: Vec<usize> = cases.iter().map(|c| fold_of(&c.trajectory.task, k)).collect();
        let fit = |keep: &dyn Fn(usize) -> bool, what: &str| {
            let runs: Vec<Labelled<'_>> = (0..cases.len())
                .filter(|&n| cases[n].part == Part::Tune && keep(n))
                .map(|n| labelled[n].clone())
                .collect();
            fit_ranker(&runs, what).map_err(|source| CrossValidationError::Fit { what: what.to_string(), source })
        };
        let mut models = vec![fit(&|_| true, "tune part")?];
        for f in 0..k {
            models.push(fit(&|n| folds[n] != f, &format!("fold {f} held out"))?);
        }
        let judges = |models: &[crate::rank::model::RankerModel]| -> Vec<Arc<dyn Judge>> {
            models
                .iter()
                .map(|m| match kind {
                    JudgeKind::Fitted => Arc::new(FittedJudge::with_model(m.clone())) as Arc<dyn Judge>,
                    _ => Arc::new(HeuristicWithRanker::new(m.clone())) as Arc<dyn Judge>,
                })
                .collect()
        };
        let of_case = cases.iter().zip(&folds).map(|(c, f)| if c.part == Part::Tune { 1 + f } else { 0 }).collect();
        let own = variants.iter().map(|v| if v.ablations.is_empty() { Vec::new() } else { judges(&models) }).collect();
        Ok(Judges { slots: judges(&models), of_case, own })
    }

    /// The judge of case `case` (an index into the evaluated cases) in row `variant`.
    pub fn judge(&self, case: usize, variant: usize) -> &dyn Judge {
        let slot = self.of_case.get(case).copied().unwrap_or(0);
        match self.own.get(variant).and_then(|own| own.get(slot)) {
            Some(j) => j.as_ref(),
            None => self.slots[slot].as_ref(),
        }
    }

    /// The name of the judge (`heuristic`, `fitted`, `llm:MODEL`).
    pub fn name(&self) -> String {
        self.slots[0].name()
    }
}

/// Diagnoses every case with every row and scores it against its gold label ([`score`]; the
/// record's `method` is the row's name, its `part` the case's part). `jobs` threads share the
/// cases (1 runs everything on the calling thread); `on_record` is called from the worker
/// threads as each record is scored (progress, a file written as the run goes). Records come
/// back in case order, then row order.
pub fn evaluate(
    cases: &[Case],
    variants: &[Variant],
    judges: &Judges,
    opts: &MethodOptions,
    jobs: usize,
    on_record: &(dyn Fn(&Case, &Record) + Sync),
) -> Vec<Record> {
    // A file holding several trajectories (a τ-bench results list) names each as `FILE#ID`.
    let mut per_file: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for c in cases {
        *per_file.entry(c.file.as_str()).or_default() += 1;
    }
    let run_case = |i: usize| -> Vec<Record> {
        let case = &cases[i];
        let file = if per_file.get(case.file.as_str()).copied().unwrap_or(0) > 1 {
            format!("{}#{}", case.file, case.trajectory.id)
        } else {
            case.file.clone()
        };
        let gold = case.trajectory.gold.clone().unwrap_or_default();
        // The full rows share one substrate; a row with a component off builds its own.
        let shared = variants.iter().any(|v| v.ablations.is_empty()).then(|| Substrate::shared(&case.trajectory));
        variants
            .iter()
            .enumerate()
            .map(|(k, v)| {
                let own;
                let sub = match &shared {
                    Some(s) if v.ablations.is_empty() => s,
                    _ => {
                        own = Substrate::shared(&case.trajectory);
                        &own
                    }
                };
                let opts = MethodOptions { ablations: v.ablations.clone(), ..opts.clone() };
                let d = methods::run_on(v.method, &case.trajectory, sub, judges.judge(i, k), &opts);
                let mut r = score(&file, &case.subset, &d, &gold);
                // The table's row: the method, or the method with what it ran without.
                r.method = v.clone();
                r.part = Some(case.part);
                on_record(case, &r);
                r
            })
            .collect()
    };
    in_parallel(cases.len(), jobs, run_case).into_iter().flatten().collect()
}

/// `f(0)`, ..., `f(n - 1)` on `jobs` threads (1 runs them on the calling thread), each index
/// taken by the next free thread; the results come back in index order whatever the scheduling.
pub(crate) fn in_parallel<R: Send>(n: usize, jobs: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let jobs = jobs.clamp(1, n.max(1));
    if jobs == 1 {
        return (0..n).map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<R>>> = Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let r = f(i);
                    slots.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
                }
            });
        }
    });
    slots.into_inner().unwrap_or_else(|p| p.into_inner()).into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::heuristic::HeuristicJudge;
    use crate::model::{GoldLabel, Step, StepKind};

    fn case(file: &str, subset: &str, steps: &[(&str, &str)], gold: (usize, &str)) -> Case {
        let steps = steps
            .iter()
            .enumerate()
            .map(|(i, (agent, content))| Step {
                index: i,
                agent: (*agent).into(),
                kind: StepKind::Message,
                content: (*content).into(),
                ..Step::default()
            })
            .collect();
        let trajectory = Trajectory {
            id: file.into(),
            task: "How many rows does the table have?".into(),
            steps,
            gold: Some(GoldLabel { agent: gold.1.into(), step: Some(gold.0), ..GoldLabel::default() }),
            ..Trajectory::default()
        };
        Case { file: file.into(), subset: subset.into(), part: part_of(file, file), trajectory }
    }

    fn cases() -> Vec<Case> {
        let a = case(
            "a.json",
            "S",
            &[("user", "How many rows?"), ("coder", "Error: table not found, assuming 12 rows"), ("coder", "12")],
            (1, "coder"),
        );
        let b = case(
            "b.json",
            "T",
            &[("user", "Count the rows."), ("analyst", "I guess 7."), ("analyst", "7")],
            (2, "user"),
        );
        let c = case("c.json", "S", &[("user", "Rows?"), ("coder", "3")], (1, "coder"));
        vec![a, b, c]
    }

    #[test]
    fn records_come_in_case_then_row_order_whatever_the_threads() {
        let rows = variants(&[Method::AllAtOnce, Method::Random], &[]);
        let judges = Judges::shared(Arc::new(HeuristicJudge));
        let opts = MethodOptions::new(true);
        let seen = Mutex::new(0);
        let one = evaluate(&cases(), &rows, &judges, &opts, 1, &|_, _| *seen.lock().unwrap() += 1);
        let two = evaluate(&cases(), &rows, &judges, &opts, 2, &|_, _| {});
        assert_eq!(*seen.lock().unwrap(), 6);
        let key = |r: &Record| (r.file.clone(), r.method.clone(), r.pred_step, r.step_hit, r.part);
        assert_eq!(one.iter().map(key).collect::<Vec<_>>(), two.iter().map(key).collect::<Vec<_>>());
        let names: Vec<String> = one.iter().map(|r| r.method.name()).collect();
        let order: Vec<(&str, &str)> = one.iter().zip(&names).map(|(r, n)| (r.file.as_str(), n.as_str())).collect();
        assert_eq!(
            order,
            [
                ("a.json", "all-at-once"),
                ("a.json", "random"),
                ("b.json", "all-at-once"),
                ("b.json", "random"),
                ("c.json", "all-at-once"),
                ("c.json", "random")
            ]
        );
        // The tool error with an assumption at step 1 is where all-at-once points.
        assert_eq!((one[0].pred_step, one[0].step_hit, one[0].agent_hit), (Some(1), true, true));
        assert!(one.iter().all(|r| r.part.is_some()));
    }

    #[test]
    fn ablated_rows_are_named_after_the_component() {
        let rows = variants(&[Method::Falat, Method::Random], &[Component::Prior, Component::Consensus]);
        let names: Vec<String> = rows.iter().map(Variant::name).collect();
        assert_eq!(names, ["falat", "falat-prior", "random"]);
        let mut made = 0;
        let judges = Judges::fresh(&rows, || {
            made += 1;
            Ok::<_, ()>(Arc::new(HeuristicJudge) as Arc<dyn Judge>)
        })
        .unwrap();
        assert_eq!(made, 2, "one judge for the full rows, one for falat-prior");
        assert!(std::ptr::eq(judges.judge(0, 0), judges.judge(5, 2)));
        assert!(!std::ptr::eq(judges.judge(0, 0), judges.judge(0, 1)));
    }

    #[test]
    fn limit_keeps_the_first_cases_of_each_subset() {
        let mut b = Benchmark { cases: cases(), skipped: Vec::new(), unreadable: 0 };
        b.limit_per_subset(1);
        let files: Vec<&str> = b.cases.iter().map(|c| c.file.as_str()).collect();
        assert_eq!(files, ["a.json", "b.json"]);
    }

    #[test]
    fn a_bad_file_is_reported_with_its_line_and_the_rest_loads() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("Set");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("1.jsonl"), "{\"agent\": \"a\", \"content\": \"x\"}\n").unwrap();
        std::fs::write(sub.join("2.json"), "{\n  \"history\": [\n    {\"role\" 1}\n  ]\n}").unwrap();
        let good = "{\"falat\": 1, \"gold\": {\"step\": 1, \"agent\": \"b\"}}\n\
                    {\"agent\": \"a\", \"content\": \"go\"}\n{\"agent\": \"b\", \"content\": \"7\"}\n";
        std::fs::write(sub.join("3.jsonl"), good).unwrap();
        let b = Benchmark::load(&[dir.path().to_path_buf()], &[]).unwrap();
        assert_eq!(b.cases.len(), 1, "{:?}", b.skipped);
        assert_eq!(b.cases[0].subset, "Set");
        assert_eq!(b.cases[0].trajectory.gold.as_ref().unwrap().step, Some(1));
        let shown = |n: &str| sub.join(n).display().to_string();
        assert_eq!(b.skipped.len(), 2, "{:?}", b.skipped);
        assert!(b.skipped[0].starts_with(&format!("{}:3:13: not JSON", shown("2.json"))), "{:?}", b.skipped);
        assert!(b.skipped[1].starts_with(&format!("{}: ", shown("1.jsonl"))), "{:?}", b.skipped);
        assert!(b.skipped[1].ends_with("no gold label with a step"), "{:?}", b.skipped);
    }
}
