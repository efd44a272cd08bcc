//! `falat eval DIR... [--method a,b] [--no-ground-truth] [--tolerance 0,1,3,5] [--jobs N]
//! [--out FILE.jsonl] [--labels FILE] [--folds K] [--limit N] [--per-file] [--dry-run]`: diagnoses
//! every labelled trajectory of benchmark folders (Who&When layout: one JSON file per trajectory,
//! the subset is the file's folder; gold labels from the trace or from label files,
//! `docs/LABELS.md`) and prints, per method, subset and part of the fixed tune/report split,
//! agent-level accuracy, step-level accuracy exact and within each tolerance, top-k hit rates,
//! mean reciprocal rank, expected calibration error, candidate recall, and mean calls, tokens and
//! time (see [`crate::eval`] for the exact scoring), then a reliability table per method. With
//! `--per-file`, one line per trajectory and method follows (prediction, gold label, hits); with
//! `--judge llm`, a table of calls and tokens per subset (medians and maxima).
//!
//! Loading and evaluation are [`crate::eval::benchmark`]'s, the functions the accuracy tests call:
//! files that cannot be used are reported on stderr (file, line, reason) and skipped.
//!
//! With `--folds K` and the fitted judge, the tune part is scored by K-fold cross-validation
//! (the ranker refitted without each fold; trajectories of one task stay in one fold) and the
//! report part by a ranker fitted on the whole tune part.
//!
//! With `--ablate`, each method runs once as its paper gives it (`falat`) and once more per listed
//! component it has, with that component off (`falat-hierarchy`), every row on the same
//! trajectories with the same judge: the papers' ablation tables.
//!
//! With `--dry-run` (the LLM judge's: `--judge llm` or no `--judge`, as `diagnose --dry-run`),
//! nothing is sent: each trajectory's requests are counted (calls and prompt tokens per
//! trajectory and method, then medians and maxima per subset), to price a run before making it.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use super::judge::JudgeChoice;
use crate::eval::Variant;
use crate::eval::benchmark::{self, Benchmark, Case, Judges};
use crate::eval::{self, Record};
use crate::methods::ablation::Component;
use crate::methods::{Method, MethodOptions};

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
    /// trajectories finish (so a long run stopped half-way keeps what it did), then a regular
    /// file is rewritten in file and method order at the end. A symbolic link is written through
    /// (the link stays), a FIFO or device gets the lines once, as they finish. `-` writes the
    /// lines to standard output at the end, in order, and the tables to stderr.
    #[arg(long, value_name = "FILE.jsonl")]
    pub out: Option<PathBuf>,
    /// Also print one line per trajectory and method: predicted step and agent, gold step and
    /// agent, and which of them were hit.
    #[arg(long)]
    pub per_file: bool,
    /// Score only the first N labelled trajectories of each subset (in path order).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
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
    /// Half-width of FALAT's local re-search window, in steps.
    #[arg(long, default_value_t = 3)]
    pub window: usize,
    /// ECHO's panel size: analysts drawn per trajectory (1 to 6).
    #[arg(long, value_name = "K", default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=6))]
    pub panel: u16,
    /// FALAT: a phase whose suspicion is below this is not searched for candidates.
    #[arg(long, value_name = "X")]
    pub phase_threshold: Option<f32>,
    /// FALAT: a candidate scoring below this is not decisive (off by default, as in the paper).
    #[arg(long, value_name = "X")]
    pub score_floor: Option<f32>,
    /// Label files to apply (AgentRx ground truth, or falat labels JSONL; see docs/LABELS.md).
    /// Label files inside the folders are found by their content.
    #[arg(long, value_name = "FILE")]
    pub labels: Vec<PathBuf>,
    /// Cross-validate the step ranker in K folds over the tune part (K ≥ 2; with the offline or
    /// the fitted judge).
    #[arg(long, value_name = "K")]
    pub folds: Option<usize>,
    /// Count the requests and prompt tokens each trajectory would need with the LLM judge, send
    /// nothing (`--judge llm` or no `--judge`).
    #[arg(long)]
    pub dry_run: bool,
    /// The judge.
    #[command(flatten)]
    pub judge: super::judge::JudgeArgs,
}

/// Runs the evaluation and prints the table; returns exit code 0, 2 when a file could not be read
/// (the table is of the others), 1 when nothing was scored.
///
/// # Errors
/// An unreadable folder or output file, bad options, a judge that cannot be set up.
pub fn run(args: &EvalArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let bench = load(args)?;
    if bench.cases.is_empty() {
        writeln!(out, "no labelled trajectory found in {}", show_dirs(&args.dirs))?;
        return Ok(1);
    }
    let rows = benchmark::variants(&args.method, args.ablate.as_deref().unwrap_or_default());
    let opts = method_options(args);
    if args.dry_run {
        return dry_run(args, &bench, &rows, &opts, out);
    }
    let gt = !args.no_ground_truth;
    let mut tune_note = "tune rows: runs in the tune part of the fixed split (for the bundled data, the shipped ranker and the offline signals were fitted or tuned on them)";
    let judges = match args.folds {
        Some(k) => {
            anyhow::ensure!(k >= 2, "--folds needs at least 2 folds, got {k}");
            let kind = match args.judge.choice() {
                JudgeChoice::Fitted => crate::judge::JudgeKind::Fitted,
                JudgeChoice::Heuristic => crate::judge::JudgeKind::Heuristic,
                JudgeChoice::Llm => anyhow::bail!(
                    "--folds cross-validates the step ranker: use it with --judge heuristic or --judge fitted"
                ),
            };
            tune_note = "tune rows: cross-validation by task (ranker refitted without each fold); report rows: ranker fitted on the tune part";
            Judges::cross_validated(&bench.cases, k, &rows, kind)?
        }
        None => Judges::fresh(&rows, || args.judge.build())?,
    };
    let to_stdout = args.out.as_deref().is_some_and(crate::fsutil::is_stdout);
    // The file to stream into, and whether it is a regular file to rewrite in order at the end.
    let (sink, rewrite) = match args.out.as_deref().filter(|_| !to_stdout) {
        Some(path) => {
            let (file, regular) = crate::fsutil::open_output(path)?;
            (Some(Mutex::new(file)), regular)
        }
        None => (None, false),
    };
    let start = Instant::now();
    let records = with_progress(&bench.cases, &rows, |on_record| {
        benchmark::evaluate(&bench.cases, &rows, &judges, &opts, args.jobs, &|case: &Case, r: &Record| {
            if let Some(f) = &sink {
                let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
                if let Err(e) = writeln!(f, "{}", record_json(r)).and_then(|()| f.flush()) {
                    super::note(&format!("cannot append to the --out file: {e}"));
                }
            }
            on_record(case, r);
        })
    });
    let wall = start.elapsed();
    let misses: usize = records.iter().map(|r| r.replay_misses).sum();
    if misses > 0 {
        // Runs, not rows: with --ablate one run's missing questions show in several rows.
        let runs = records
            .iter()
            .filter(|r| r.replay_misses > 0)
            .map(|r| r.file.as_str())
            .collect::<std::collections::HashSet<_>>()
            .len();
        let dir = args.judge.replay.as_deref().map(|d| crate::text::sanitize(&d.display().to_string()));
        eprintln!(
            "falat: {} of {} {} in the replay folder {}: the heuristic judge answered them instead \
             (to record them, run again with a server and --record)",
            crate::text::count(misses, "question", "questions"),
            crate::text::count(runs, "run", "runs"),
            if misses == 1 { "was not" } else { "were not" },
            dir.unwrap_or_default(),
        );
    }
    match &args.out {
        Some(_) if to_stdout => {
            out.write_all(jsonl_text(&records).as_bytes())?;
        }
        Some(path) if rewrite => {
            crate::fsutil::write_output(path, jsonl_text(&records).as_bytes())?;
        }
        _ => {}
    }
    // With `--out -` the JSON lines are standard output: the tables go to stderr.
    let mut stderr = std::io::stderr();
    let out: &mut dyn Write = if to_stdout { &mut stderr } else { out };
    let summaries = eval::summarize(&records, &args.tolerance);
    let report = bench.report_count();
    writeln!(
        out,
        "{} ({} tune, {report} report), ground truth {}, judge {}",
        crate::text::count(bench.cases.len(), "trajectory", "trajectories"),
        bench.cases.len() - report,
        if gt { "used" } else { "not used" },
        judges.name()
    )?;
    // The note is about the tune rows: a set without any (one's own few runs, all in the report
    // part) has nothing for it to explain.
    if bench.cases.len() > report {
        writeln!(out, "{tune_note}")?;
    }
    out.write_all(eval::render_table(&summaries).as_bytes())?;
    out.write_all(eval::TABLE_LEGEND.as_bytes())?;
    for v in &rows {
        let rs: Vec<&Record> = records.iter().filter(|r| r.method == *v).collect();
        writeln!(out)?;
        out.write_all(eval::render_reliability(&v.name(), &rs).as_bytes())?;
    }
    if args.judge.choice() == JudgeChoice::Llm {
        writeln!(out, "\njudge calls and tokens per trajectory ({:.0} s wall)", wall.as_secs_f64())?;
        out.write_all(eval::render_costs(&records, false).as_bytes())?;
    }
    if args.per_file {
        writeln!(out)?;
        out.write_all(eval::render_per_file(&records).as_bytes())?;
    }
    // Files that could not be read were named on stderr and left out; the table is of the rest.
    Ok(if bench.unreadable > 0 { 2 } else { 0 })
}

/// The labelled cases of the folders (at most `--limit` per subset); what cannot be used is
/// reported on stderr and skipped.
fn load(args: &EvalArgs) -> anyhow::Result<Benchmark> {
    // eval reads folders; a file given in their place is named as such (the load error would only
    // say "Not a directory").
    if let Some(f) = args.dirs.iter().find(|d| d.is_file()) {
        anyhow::bail!(
            "{}: a file; eval reads labelled benchmark folders (such as data/who-and-when), searched for traces",
            crate::text::sanitize(&f.display().to_string())
        );
    }
    // The load error names the folder or file it could not read.
    let mut bench = Benchmark::load(&args.dirs, &args.labels)?;
    for s in &bench.skipped {
        eprintln!("falat: {}; skipped", crate::text::sanitize(s));
    }
    if let Some(n) = args.limit {
        bench.limit_per_subset(n);
    }
    Ok(bench)
}

fn method_options(args: &EvalArgs) -> MethodOptions {
    let mut opts = MethodOptions::new(!args.no_ground_truth);
    opts.seed = args.seed;
    opts.panel = usize::from(args.panel);
    opts.pipeline.window = args.window;
    if let Some(x) = args.phase_threshold {
        opts.pipeline.falat.phase_threshold = x;
    }
    if args.score_floor.is_some() {
        opts.pipeline.falat.score_floor = args.score_floor;
    }
    opts
}

fn show_dirs(dirs: &[PathBuf]) -> String {
    dirs.iter().map(|d| crate::fsutil::shown(d)).collect::<Vec<_>>().join(", ")
}

/// How often a run without a terminal reports its progress on stderr.
const PLAIN_PROGRESS: Duration = Duration::from_secs(30);

/// Runs `work` with a progress bar on stderr over every case and row; `work` gets the callback
/// to call per scored record. Without a terminal the bar is hidden: a long run (an LLM judge)
/// then says how far it got on stderr every [`PLAIN_PROGRESS`].
fn with_progress<T>(cases: &[Case], rows: &[Variant], work: impl FnOnce(&(dyn Fn(&Case, &Record) + Sync)) -> T) -> T {
    let total = cases.len() * rows.len();
    let bar = ProgressBar::new(total as u64);
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("valid template"));
    let last_said = Mutex::new(Instant::now());
    let tick = |case: &Case, r: &Record| {
        // File names come from the data set's folder: sanitised like trace text.
        let file = crate::text::sanitize(&case.file);
        bar.set_message(format!("{} {file}", r.method));
        bar.inc(1);
        let mut last = last_said.lock().unwrap_or_else(|p| p.into_inner());
        if bar.is_hidden() && last.elapsed() >= PLAIN_PROGRESS {
            *last = Instant::now();
            eprintln!("falat eval: {}/{total} done ({} {file})", bar.position(), r.method);
        }
    };
    let out = work(&tick);
    bar.finish_and_clear();
    out
}

/// The `--out` lines of every record, in order.
fn jsonl_text(records: &[Record]) -> String {
    let mut text = String::new();
    for r in records {
        text.push_str(&record_json(r).to_string());
        text.push('\n');
    }
    text
}

/// One line of the `--out` file.
fn record_json(r: &Record) -> serde_json::Value {
    json!({
            "file": r.file,
            "subset": r.subset,
            "method": r.method.name(),
            "pred_agent": r.pred_agent,
            "pred_step": r.pred_step,
            "gold_agent": r.gold_agent,
            "gold_step": r.gold_step,
            "agent_hit": r.agent_hit,
            "step_hit": r.step_hit,
            "calls": r.calls,
            "tokens": r.tokens,
            "prompt_tokens": r.prompt_tokens,
            "cached_tokens": r.cached_tokens,
            "later_prompt_tokens": r.later_prompt_tokens,
            "later_cached_tokens": r.later_cached_tokens,
            "answers": {
                "model": r.answers.model,
                "repaired": r.answers.repaired,
                "not_asked": r.answers.not_asked,
                "fallback_invalid": r.answers.fallback_invalid,
                "fallback_error": r.answers.fallback_error,
                "fallback_budget": r.answers.fallback_budget,
                "fallback_replay": r.answers.fallback_replay,
            },
            "wall_ms": (r.millis * 1000.0).round() / 1000.0,
            "warnings": r.warnings,
            "replay_misses": r.replay_misses,
            "part": r.part.map_or("", eval::Part::as_str),
            "confidence": r.confidence,
            "gold_rank": r.gold_rank,
            "candidates": r.candidates,
            "gold_in_candidates": r.gold_in_candidates,
            "rule": r.rule,
            "ranked_best": r.ranked_best,
    })
}

/// `--dry-run`: per trajectory and row, the requests the LLM judge would send and their prompt
/// tokens (the offline judge answers meanwhile), then medians and maxima per subset.
#[cfg(feature = "llm")]
fn dry_run(
    args: &EvalArgs,
    bench: &Benchmark,
    rows: &[Variant],
    opts: &MethodOptions,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    args.judge.check_dry_run()?;
    let cfg = args.judge.llm_config(true)?;
    let mut records = Vec::new();
    let counter = crate::judge::llm::DryRunCounter::new(&cfg)?;
    let sent = match counter.counter() {
        crate::judge::llm::TokenCounter::O200k => "nothing was sent",
        crate::judge::llm::TokenCounter::Server(_) => "nothing was sent but the prompts to the server's tokenizer",
    };
    writeln!(out, "dry run for model {}: {sent}", crate::text::sanitize(&cfg.model))?;
    let mut counted = Vec::new();
    writeln!(out, "{:<14} {:<20} {:<44} {:>6} {:>11}", "method", "subset", "file", "calls", "prompt tok")?;
    for case in &bench.cases {
        let sub = crate::substrate::Substrate::shared(&case.trajectory);
        for v in rows {
            let opts = MethodOptions { ablations: v.ablations.clone(), ..opts.clone() };
            let mut d = None;
            let report = crate::judge::llm::dry_run_counting(&cfg, &counter, |judge: &dyn crate::judge::Judge| {
                d = Some(crate::methods::run_on(v.method, &case.trajectory, &sub, judge, &opts));
            })?;
            let d = d.expect("the dry run ran the method");
            if !counted.contains(&report.counter) {
                counted.push(report.counter.clone());
            }
            let mut r = eval::score(&case.file, &case.subset, &d, case.trajectory.gold.as_ref().expect("labelled"));
            r.method = v.clone();
            (r.calls, r.prompt_tokens, r.tokens) =
                (report.calls.len() as u64, report.prompt_tokens(), report.prompt_tokens());
            r.part = Some(case.part);
            writeln!(
                out,
                "{:<14} {:<20} {:<44} {:>6} {:>11}",
                v,
                crate::text::sanitize(&case.subset),
                crate::text::sanitize(&case.file),
                r.calls,
                r.prompt_tokens
            )?;
            records.push(r);
        }
    }
    let calls: u64 = records.iter().map(|r| r.calls).sum();
    let prompt: u64 = records.iter().map(|r| r.prompt_tokens).sum();
    writeln!(out, "\ntotal: {calls} calls, {prompt} prompt tokens (completion tokens are not counted)")?;
    out.write_all(eval::render_costs(&records, true).as_bytes())?;
    for c in if counted.is_empty() { vec![counter.counter()] } else { counted } {
        writeln!(out, "\n{}", c.note())?;
    }
    Ok(0)
}

#[cfg(not(feature = "llm"))]
fn dry_run(_: &EvalArgs, _: &Benchmark, _: &[Variant], _: &MethodOptions, _: &mut dyn Write) -> anyhow::Result<i32> {
    Err(super::missing_feature("`--dry-run`", "llm"))
}
