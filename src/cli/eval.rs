//! `falat eval DIR... [--method a,b] [--ablate c,d] [--no-ground-truth] [--tolerance 0,1,3,5]
//! [--jobs N] [--out FILE.jsonl]`: diagnoses every labelled trajectory of benchmark folders
//! (Who&When layout: one JSON file per trajectory, the subset is the file's folder) and prints,
//! per method and subset, agent-level accuracy, step-level accuracy exact and within each
//! tolerance, and mean calls, tokens and time (see [`crate::eval`] for the exact scoring).
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

use crate::diagnosis::Diagnosis;
use crate::eval::{self, Record};
use crate::ingest::fs::{dataset_files, load_path};
use crate::methods::ablation::{self, Ablations, Component};
use crate::methods::{self, Method, MethodOptions};
use crate::model::Trajectory;

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
    /// The judge.
    #[command(flatten)]
    pub judge: super::judge::JudgeArgs,
}

/// One labelled trajectory to score.
struct Item {
    file: String,
    subset: String,
    trajectory: Trajectory,
}

/// Runs the evaluation and prints the table; returns exit code 0 (1 when nothing was scored).
///
/// # Errors
/// An unreadable folder or output file.
pub fn run(args: &EvalArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let items = load_items(&args.dirs)?;
    if items.is_empty() {
        writeln!(out, "no labelled trajectory found in {}", show_dirs(&args.dirs))?;
        return Ok(1);
    }
    let gt = !args.no_ground_truth;
    let judge = args.judge.build()?;
    let mut opts = MethodOptions::new(gt);
    opts.seed = args.seed;
    let rows = variants(&args.method, args.ablate.as_deref().unwrap_or_default());
    let names: Vec<&str> = rows.iter().map(|(n, _, _)| n.as_str()).collect();
    // An ablation row gets a judge of its own: a judge remembers its answers per trajectory and
    // question, and a row with a component off must not reuse the full method's answers.
    let extra: Vec<std::sync::Arc<dyn crate::judge::Judge>> =
        rows.iter().filter(|(_, _, a)| !a.is_empty()).map(|_| args.judge.build()).collect::<Result<_, _>>()?;
    let judge_of = |name: &str| -> &dyn crate::judge::Judge {
        let k = rows.iter().filter(|(_, _, a)| !a.is_empty()).position(|(n, _, _)| n == name);
        match k {
            Some(k) => extra[k].as_ref(),
            None => judge.as_ref(),
        }
    };
    let diagnose = |t: &Trajectory, name: &str| {
        let (_, m, ablations) = rows.iter().find(|(n, _, _)| n == name).expect("a listed variant");
        let opts = MethodOptions { ablations: ablations.clone(), ..opts.clone() };
        let mut d = methods::run(*m, t, judge_of(name), &opts);
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
    writeln!(
        out,
        "{} trajectories, ground truth {}, judge {}",
        items.len(),
        if gt { "used" } else { "not used" },
        judge.name()
    )?;
    out.write_all(eval::render_table(&summaries).as_bytes())?;
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

fn show_dirs(dirs: &[PathBuf]) -> String {
    dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// Loads every labelled trajectory; files that fail to load or carry no label are reported on
/// stderr and skipped.
fn load_items(dirs: &[PathBuf]) -> anyhow::Result<Vec<Item>> {
    let mut items = Vec::new();
    for dir in dirs {
        let files = dataset_files(dir).with_context(|| format!("cannot list {}", dir.display()))?;
        for f in files {
            let subset = subset_of(&f);
            match load_path(&f, None) {
                Ok(loaded) => {
                    for t in loaded.trajectories {
                        if t.gold.as_ref().is_some_and(|g| g.step.is_some()) {
                            items.push(Item { file: f.display().to_string(), subset: subset.clone(), trajectory: t });
                        } else {
                            eprintln!("falat: {}: no gold label with a step; skipped", f.display());
                        }
                    }
                }
                Err(e) => eprintln!("falat: {e}; skipped"),
            }
        }
    }
    Ok(items)
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
    diagnose: &(dyn Fn(&Trajectory, &str) -> Diagnosis + Sync),
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
                    let d = diagnose(&item.trajectory, method);
                    let gold = item.trajectory.gold.as_ref().expect("labelled");
                    let r = eval::score(&item.file, &item.subset, &d, gold);
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
    })
}
