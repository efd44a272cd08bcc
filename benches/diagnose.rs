//! Diagnosis benchmark: `cargo bench --bench diagnose`.
//!
//! Times the whole offline FALAT pipeline (heuristic judge, with ground truth) on the largest
//! bundled Who&When trajectory and on every bundled Who&When trajectory in turn, loading
//! excluded, and prints the median, fastest and slowest of repeated runs.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use falat::ingest::fs::{dataset_files, load_path};
use falat::judge::heuristic::HeuristicJudge;
use falat::model::Trajectory;
use falat::pipeline::{Options, diagnose};

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/who-and-when");
    let files = dataset_files(&dir).expect("list data/who-and-when");
    let all: Vec<(u64, Trajectory)> = files
        .iter()
        .map(|f| {
            let size = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
            (size, load_path(f, None).expect("loads").trajectories.remove(0))
        })
        .collect();
    let (size, largest) = all.iter().max_by_key(|(s, _)| *s).expect("files");
    let opts = Options::new(true);
    println!("diagnose benchmark (heuristic judge, ground truth on; median / fastest / slowest)");
    let times = repeat(|| {
        black_box(diagnose(largest, &HeuristicJudge, &opts));
    });
    report(&format!("largest trajectory {} ({} steps, {} kB)", largest.id, largest.steps.len(), size / 1000), &times);
    let times = repeat(|| {
        for (_, t) in &all {
            black_box(diagnose(t, &HeuristicJudge, &opts));
        }
    });
    report(&format!("whole bundled set ({} trajectories)", all.len()), &times);
}

/// Runs `f` after one warm-up until about two seconds have passed (at least 5 runs).
fn repeat(mut f: impl FnMut()) -> Vec<Duration> {
    f();
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < 5 || start.elapsed() < Duration::from_secs(2) {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
    }
    times.sort();
    times
}

fn report(name: &str, times: &[Duration]) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name:<60} {:>9.2} ms {:>9.2} ms {:>9.2} ms  ({} runs)",
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1]),
        times.len()
    );
}
