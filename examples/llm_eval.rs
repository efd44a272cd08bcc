//! Runs the FALAT diagnosis with the LLM judge over benchmark folders (Who&When layout) and
//! prints, per subset, accuracy and the median prompt tokens and calls per trajectory.
//!
//! ```text
//! cargo run --release --example llm_eval -- [--url URL] [--model NAME] [--jobs N] [--limit N]
//!     [--record DIR] [--replay DIR] [--dry-run] [--no-ground-truth] DIR_OR_FILE...
//! ```
//! The URL defaults to `$FALAT_TEST_LLM_URL`, then `$OPENAI_BASE_URL`; the model to
//! `smollm2-135m`. `falat eval --judge llm` gives the same table for real runs (with median
//! calls and prompt tokens); this example adds `--dry-run` over a whole set and `--limit`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use falat::eval::{self, Record};
use falat::ingest::fs::{dataset_files, load_path};
use falat::judge::llm::{self, LlmArgs, LlmConfig, LlmJudge};
use falat::model::Trajectory;
use falat::pipeline::{self, Options};

struct Args {
    dirs: Vec<PathBuf>,
    llm: LlmArgs,
    limit: Option<usize>,
    ground_truth: bool,
}

fn parse_args() -> Args {
    let mut a = Args { dirs: Vec::new(), llm: LlmArgs::default(), limit: None, ground_truth: true };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--url" => a.llm.llm_url = Some(val()),
            "--model" => a.llm.model = Some(val()),
            "--jobs" => a.llm.jobs = val().parse().ok(),
            "--limit" => a.limit = val().parse().ok(),
            "--record" => a.llm.record = Some(PathBuf::from(val())),
            "--replay" => a.llm.replay = Some(PathBuf::from(val())),
            "--dry-run" => a.llm.dry_run = true,
            "--no-ground-truth" => a.ground_truth = false,
            _ => a.dirs.push(PathBuf::from(arg)),
        }
    }
    a.llm.llm_url = a.llm.llm_url.or_else(|| std::env::var("FALAT_TEST_LLM_URL").ok());
    a.llm.model = a.llm.model.or_else(|| Some("smollm2-135m".into()));
    a
}

fn load_all(dirs: &[PathBuf], limit: Option<usize>) -> Vec<(String, String, Trajectory)> {
    let mut out = Vec::new();
    for dir in dirs {
        let files = if dir.is_file() { vec![dir.clone()] } else { dataset_files(dir).expect("readable data folder") };
        for f in files {
            let subset =
                f.parent().and_then(Path::file_name).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let Ok(loaded) = load_path(&f, None) else { continue };
            for t in loaded.trajectories.into_iter().filter(|t| t.gold.is_some()) {
                out.push((f.display().to_string(), subset.clone(), t));
            }
        }
    }
    if let Some(n) = limit {
        // Keep the first n of every subset.
        let mut seen: Vec<(String, usize)> = Vec::new();
        out.retain(|(_, s, _)| {
            let c = match seen.iter_mut().find(|(x, _)| x == s) {
                Some((_, c)) => c,
                None => {
                    seen.push((s.clone(), 0));
                    &mut seen.last_mut().expect("pushed").1
                }
            };
            *c += 1;
            *c <= n
        });
    }
    out
}

fn median(mut xs: Vec<u64>) -> f64 {
    xs.sort_unstable();
    match xs.len() {
        0 => 0.0,
        n if n % 2 == 1 => xs[n / 2] as f64,
        n => (xs[n / 2 - 1] + xs[n / 2]) as f64 / 2.0,
    }
}

fn main() {
    let args = parse_args();
    let cfg = LlmConfig::from_env_and_args(&args.llm, |k| std::env::var(k).ok()).unwrap_or_else(|e| {
        eprintln!("llm_eval: {e}");
        std::process::exit(2)
    });
    let items = load_all(&args.dirs, args.limit);
    let opts = Options::new(args.ground_truth);
    if cfg.dry_run {
        for (file, subset, t) in &items {
            let r = llm::dry_run_with(&cfg, |j| {
                let _ = pipeline::diagnose(t, j, &opts);
            })
            .expect("dry-run judge");
            println!("{subset}\t{file}\tcalls {}\tprompt tokens {}", r.calls.len(), r.prompt_tokens());
        }
        return;
    }
    let judge = LlmJudge::new(cfg.clone()).unwrap_or_else(|e| {
        eprintln!("llm_eval: {e}");
        std::process::exit(2)
    });
    if let Err(e) = judge.check() {
        eprintln!("llm_eval: {e}");
        std::process::exit(2)
    }
    let next = AtomicUsize::new(0);
    let records: Mutex<Vec<(Record, usize)>> = Mutex::new(Vec::new());
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..cfg.jobs {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((file, subset, t)) = items.get(i) else { break };
                    let t0 = Instant::now();
                    let d = pipeline::diagnose(t, &judge, &opts);
                    let r = eval::score(file, subset, &d, t.gold.as_ref().expect("gold"));
                    eprintln!(
                        "[{}/{}] {file}: step {:?} (gold {:?}) agent {:?} calls {} prompt {} compl {} warnings {} {:.0}s",
                        i + 1,
                        items.len(),
                        r.pred_step,
                        r.gold_step,
                        r.pred_agent,
                        r.calls,
                        r.prompt_tokens,
                        d.total_cost().completion_tokens,
                        d.warnings.len(),
                        t0.elapsed().as_secs_f64()
                    );
                    records.lock().expect("records").push((r, d.warnings.len()));
                }
            });
        }
    });
    let records = records.into_inner().expect("records");
    report(&records, judge.stats(), start.elapsed().as_secs_f64());
}

fn report(records: &[(Record, usize)], stats: llm::Stats, secs: f64) {
    let plain: Vec<Record> = records.iter().map(|(r, _)| r.clone()).collect();
    print!("{}", eval::render_table(&eval::summarize(&plain, &[1, 3])));
    let mut subsets: Vec<&str> = plain.iter().map(|r| r.subset.as_str()).collect();
    subsets.sort_unstable();
    subsets.dedup();
    println!(
        "\n{:<20} {:>4} {:>14} {:>12} {:>14} {:>10} {:>14}",
        "subset", "n", "med.prompt", "med.calls", "max.prompt", "max.calls", "w/ warnings"
    );
    for s in subsets {
        let rs: Vec<&(Record, usize)> = records.iter().filter(|(r, _)| r.subset == s).collect();
        let prompts: Vec<u64> = rs.iter().map(|(r, _)| r.prompt_tokens).collect();
        let calls: Vec<u64> = rs.iter().map(|(r, _)| r.calls).collect();
        println!(
            "{:<20} {:>4} {:>14.0} {:>12.1} {:>14} {:>10} {:>14}",
            s,
            rs.len(),
            median(prompts.clone()),
            median(calls.clone()),
            prompts.iter().max().unwrap_or(&0),
            calls.iter().max().unwrap_or(&0),
            rs.iter().filter(|(_, w)| *w > 0).count()
        );
    }
    println!("\njudge: {stats:?}\nwall: {secs:.0} s");
}
