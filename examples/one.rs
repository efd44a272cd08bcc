//! Development aid: diagnoses one trace N times (for profiling). `cargo run --release --example one -- FILE N`.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let t = falat::ingest::fs::load_path(std::path::Path::new(&a[1]), None).unwrap().trajectories.remove(0);
    let n: usize = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let start = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(falat::pipeline::diagnose(
            &t,
            &falat::judge::heuristic::HeuristicJudge,
            &falat::pipeline::Options::new(true),
        ));
    }
    println!("{:?} per run", start.elapsed() / n as u32);
}
