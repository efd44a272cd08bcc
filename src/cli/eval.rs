//! `falat eval DIR... [--method a,b] [--no-ground-truth] [--tolerance 0,1,3,5] [--jobs N]
//! [--out FILE.jsonl] [--labels FILE] [--folds K]`: diagnoses every labelled trajectory of
//! benchmark folders (Who&When layout: one JSON file per trajectory, the subset is the file's
//! folder; gold labels from the trace or from label files, `docs/LABELS.md`) and prints, per
//! method, subset and part of the fixed tune/report split, agent-level accuracy, step-level
//! accuracy exact and within each tolerance, top-k hit rates, mean reciprocal rank, expected
//! calibration error, candidate recall, and mean calls, tokens and time (see [`crate::eval`] for
//! the exact scoring), then a reliability table per method.
//!
//! With `--folds K` and the fitted judge, the tune part is scored by K-fold cross-validation
//! (the ranker refitted without each fold; trajectories of one task stay in one fold) and the
//! report part by a ranker fitted on the whole tune part.
//!
//! With `--ablate`, each method runs once as its paper gives it (`falat`) and once more per listed
//! component it has, with that component off (`falat-hierarchy`), every row on the same
//! trajectories with the same judge: the papers' ablation tables.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use std::sync::Arc;

use crate::diagnosis::Diagnosis;
use crate::eval::{self, Record};
use crate::ingest::fs::load_labelled;
use crate::judge::Judge;
use crate::judge::fitted::FittedJudge;
use crate::methods::ablation::{self, Ablations, Component};
use crate::methods::{self, Method, MethodOptions};
use crate::model::Trajectory;
use crate::rank::split::{Part, part_of};

/// Arguments of `falat eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Benchmark folders (searched recursively for .json/.jsonl files).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Do not give the expected output `o*` to the analysis.
    #[arg(long)]
    pub no_ground_truth: bool,
    /// Step tolerances k for the ±k columns (0 is the exact column, always shown).
    #[arg(long, value_delimiter = ',', default_value = "0,1,3,5")]
    pub tolerance: Vec<usize>,
    /// Trajectories diagnosed in parallel.
    #[arg(long, short = 'j', default_value_t = 2)]
    pub jobs: usize,
    /// Write one JSON line per trajectory and method to this file. Lines are appended as
    /// trajectories finish (so a long run stopped half-way keeps what it did), then the file is
    /// rewritten in file and method order at the end.
    #[arg(long, value_name = "FILE.jsonl")]
    pub out: Option<PathBuf>,
    /// Methods to compare, comma-separated (falat, echo, defa, all-at-once, step-by-step,
    /// binary-search, random) or all; one table row per method and subset.
    #[arg(long, short = 'm', default_value = "falat", value_parser = Method::parse_list)]
    pub method: std::vec::Vec<Method>,
    /// Components to switch off one at a time, comma-separated: hierarchy, prior, pruning,
    /// verification, research (FALAT), hierarchy, decoupling, consensus (ECHO), segmentation,
    /// graph, propagation (DeFA). Adds one row per method and component it has.
    #[arg(long, value_name = "COMPONENTS", value_parser = Component::parse_list)]
    pub ablate: Option<std::vec::Vec<Component>>,
    /// Seed of the random baseline and of ECHO's analyst draw.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Label files to apply (AgentRx ground truth, or falat labels JSONL; see docs/LABELS.md).
    /// Label files inside the folders are found by their content.
    #[arg(long, value_name = "FILE")]
    pub labels: Vec<PathBuf>,
    /// Cross-validate the fitted ranker in K folds over the tune part (K ≥ 2; with --judge fitted).
    #[arg(long, value_name = "K")]
    pub folds: Option<usize>,
    /// The judge.
    #[command(flatten)]
    pub judge: super::judge::JudgeArgs,
}

/// One labelled trajectory to score.
struct Item {
    file: String,
    subset: String,
    trajectory: Trajectory,
    part: Part,
    /// The judge that scores it (an index into the run's judges).
    judge: usize,
}

/// Runs the evaluation and prints the table; returns exit code 0 (1 when nothing was scored).
///
/// # Errors
/// An unreadable folder or output file.
pub fn run(args: &EvalArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let mut items = load_items(&args.dirs, &args.labels)?;
    if items.is_empty() {
        writeln!(out, "no labelled trajectory found in {}", show_dirs(&args.dirs))?;
        return Ok(1);
    }
    let gt = !args.no_ground_truth;
    let judge = args.judge.build()?;
    let mut judges: Vec<Arc<dyn Judge>> = vec![judge.clone()];
    let mut tune_note =
        "tune rows: the shipped ranker and the offline signals were fitted or tuned on the bundled tune part";
    if let Some(k) = args.folds {
        anyhow::ensure!(k >= 2, "--folds needs at least 2 folds, got {k}");
        anyhow::ensure!(
            args.judge.judge == super::judge::JudgeChoice::Fitted,
            "--folds cross-validates the fitted ranker: use it with --judge fitted"
        );
        judges = cross_validation_judges(&mut items, k)?;
        tune_note = "tune rows: cross-validation by task (ranker refitted without each fold); report rows: ranker fitted on the tune part";
    }
    let mut opts = MethodOptions::new(gt);
    opts.seed = args.seed;
    let rows = variants(&args.method, args.ablate.as_deref().unwrap_or_default());
    let names: Vec<&str> = rows.iter().map(|(n, _, _)| n.as_str()).collect();
    // An ablation row gets a judge of its own: a judge remembers its answers per trajectory and
    // question, and a row with a component off must not reuse the full method's answers.
    let extra: Vec<Arc<dyn Judge>> =
        rows.iter().filter(|(_, _, a)| !a.is_empty()).map(|_| args.judge.build()).collect::<Result<_, _>>()?;
    let judge_of = |item: &Item, name: &str| -> &dyn Judge {
        let k = rows.iter().filter(|(_, _, a)| !a.is_empty()).position(|(n, _, _)| n == name);
        match k {
            Some(k) => extra[k].as_ref(),
            None => judges[item.judge].as_ref(),
        }
    };
    let diagnose = |item: &Item, name: &str| {
        let (_, m, ablations) = rows.iter().find(|(n, _, _)| n == name).expect("a listed variant");
        let opts = MethodOptions { ablations: ablations.clone(), ..opts.clone() };
        let mut d = methods::run(*m, &item.trajectory, judge_of(item, name), &opts);
        d.method = name.to_string();
        d
    };
    let sink = match &args.out {
        Some(path) => {
            Some(Mutex::new(std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?))
        }
        None => None,
    };
    let records = evaluate(&items, &names, args.jobs, &diagnose, sink.as_ref());
    if let Some(path) = &args.out {
        write_jsonl(path, &records)?;
    }
    let summaries = eval::summarize(&records, &args.tolerance);
    let report = items.iter().filter(|i| i.part == Part::Report).count();
    writeln!(
        out,
        "{} trajectories ({} tune, {report} report), ground truth {}, judge {}",
        items.len(),
        items.len() - report,
        if gt { "used" } else { "not used" },
        judge.name()
    )?;
    writeln!(out, "{tune_note}")?;
    out.write_all(eval::render_table(&summaries).as_bytes())?;
    for m in &names {
        let rs: Vec<&Record> = records.iter().filter(|r| r.method == *m).collect();
        writeln!(out)?;
        out.write_all(eval::render_reliability(m, &rs).as_bytes())?;
    }
    Ok(0)
}

/// The table rows: each method as its paper gives it (named after the method), then, per listed
/// component the method has, the method with that component off (`falat-hierarchy`).
fn variants(methods: &[Method], components: &[Component]) -> Vec<(String, Method, Ablations)> {
    let mut out = Vec::new();
    for &m in methods {
        for a in ablation::rows(m, components) {
            let name = if a.is_empty() { m.as_str().to_string() } else { format!("{m}{}", a.label()) };
            out.push((name, m, a));
        }
    }
    out
}

/// Assigns each tune item to a fold by its task and fits one ranker per fold on the other folds'
/// tune items, and one on the whole tune part for the report items. Returns the judges, indexed
/// by `Item::judge`.
fn cross_validation_judges(items: &mut [Item], k: usize) -> anyhow::Result<Vec<Arc<dyn Judge>>> {
    use crate::rank::{split::fold_of, train};
    let examples: Vec<(Option<train::Example>, Option<train::Example>)> =
        items.iter().map(|i| (train::example(&i.trajectory, true), train::example(&i.trajectory, false))).collect();
    let fit = |keep: &dyn Fn(usize) -> bool, what: &str| -> anyhow::Result<Arc<dyn Judge>> {
        let pick = |gt: bool| -> Vec<train::Example> {
            (0..items.len())
                .filter(|&n| items[n].part == Part::Tune && keep(n))
                .filter_map(|n| if gt { examples[n].0.clone() } else { examples[n].1.clone() })
                .collect()
        };
        let model = train::train_examples(&pick(true), &pick(false), what)
            .map_err(|e| anyhow::anyhow!("cannot fit the ranker ({what}): {e}"))?;
        Ok(Arc::new(FittedJudge::with_model(model)))
    };
    let folds: Vec<usize> = items.iter().map(|i| fold_of(&i.trajectory.task, k)).collect();
    let mut judges = vec![fit(&|_| true, "tune part")?];
    for f in 0..k {
        judges.push(fit(&|n| folds[n] != f, &format!("fold {f} held out"))?);
    }
    for (n, item) in items.iter_mut().enumerate() {
        item.judge = if item.part == Part::Tune { 1 + folds[n] } else { 0 };
    }
    Ok(judges)
}

fn show_dirs(dirs: &[PathBuf]) -> String {
    dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// Loads every labelled trajectory (labels from the traces, from label files in the folders and
/// from `labels`); what cannot be loaded or carries no label is reported on stderr and skipped.
fn load_items(dirs: &[PathBuf], labels: &[PathBuf]) -> anyhow::Result<Vec<Item>> {
    let set = load_labelled(dirs, labels).with_context(|| format!("cannot read {}", show_dirs(dirs)))?;
    for s in &set.skipped {
        eprintln!("falat: {s}; skipped");
    }
    Ok(set
        .items
        .into_iter()
        .map(|l| {
            let file = l.file.display().to_string();
            let part = part_of(&file, &l.trajectory.id);
            Item { file, subset: subset_of(&l.file), trajectory: l.trajectory, part, judge: 0 }
        })
        .collect())
}

/// The subset of a file: the name of its folder.
fn subset_of(f: &Path) -> String {
    f.parent().and_then(|p| p.file_name()).map_or_else(|| ".".into(), |n| n.to_string_lossy().into_owned())
}

/// Diagnoses every item with every method on `jobs` threads; records come back in item order,
/// then method order, whatever the scheduling. Each record is also appended to `sink` as soon as
/// it is scored (a failed write is reported once and the run goes on).
/// How often a run without a terminal reports its progress on stderr.
const PLAIN_PROGRESS: Duration = Duration::from_secs(30);

fn evaluate(
    items: &[Item],
    methods: &[&str],
    jobs: usize,
    diagnose: &(dyn Fn(&Item, &str) -> Diagnosis + Sync),
    sink: Option<&Mutex<std::fs::File>>,
) -> Vec<Record> {
    let total = items.len() * methods.len();
    let bar = ProgressBar::new(total as u64);
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("valid template"));
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<Record>>> = Mutex::new(vec![None; total]);
    // Without a terminal the bar is hidden: a long run (an LLM judge) then says how far it got
    // on stderr every PLAIN_PROGRESS, and messages go to stderr directly.
    let last_said = Mutex::new(Instant::now());
    let say = |msg: String| if bar.is_hidden() { eprintln!("{msg}") } else { bar.println(msg) };
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= total {
                        break;
                    }
                    let (item, method) = (&items[k / methods.len()], methods[k % methods.len()]);
                    let d = diagnose(item, method);
                    let gold = item.trajectory.gold.as_ref().expect("labelled");
                    let mut r = eval::score(&item.file, &item.subset, &d, gold);
                    r.part = item.part.as_str().to_string();
                    if let Some(f) = sink {
                        let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
                        if let Err(e) = writeln!(f, "{}", record_json(&r)).and_then(|()| f.flush()) {
                            say(format!("falat: cannot append to the --out file: {e}"));
                        }
                    }
                    slots.lock().expect("no poisoned lock")[k] = Some(r);
                    bar.set_message(format!("{method} {}", item.file));
                    bar.inc(1);
                    let mut last = last_said.lock().unwrap_or_else(|p| p.into_inner());
                    if bar.is_hidden() && last.elapsed() >= PLAIN_PROGRESS {
                        *last = Instant::now();
                        say(format!("falat eval: {}/{total} done ({method} {})", bar.position(), item.file));
                    }
                }
            });
        }
    });
    bar.finish_and_clear();
    slots.into_inner().expect("no poisoned lock").into_iter().flatten().collect()
}

fn write_jsonl(path: &Path, records: &[Record]) -> anyhow::Result<()> {
    let mut text = String::new();
    for r in records {
        text.push_str(&record_json(r).to_string());
        text.push('\n');
    }
    super::diagnose::write_atomic(path, text.as_bytes())
}

/// One line of the `--out` file.
fn record_json(r: &Record) -> serde_json::Value {
    json!({
            "file": r.file,
            "subset": r.subset,
            "method": r.method,
            "pred_agent": r.pred_agent,
            "pred_step": r.pred_step,
            "gold_agent": r.gold_agent,
            "gold_step": r.gold_step,
            "agent_hit": r.agent_hit,
            "step_hit": r.step_hit,
            "calls": r.calls,
            "tokens": r.tokens,
            "prompt_tokens": r.prompt_tokens,
            "wall_ms": (r.millis * 1000.0).round() / 1000.0,
            "warnings": r.warnings,
            "part": r.part,
            "confidence": r.confidence,
            "gold_rank": r.gold_rank,
            "candidates": r.candidates,
            "gold_in_candidates": r.gold_in_candidates,
    })
}
