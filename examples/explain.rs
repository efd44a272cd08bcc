//! Development aid: prints the candidates of one trace. `cargo run --example explain -- FILE`.
use falat::ingest::fs::load_path;
use falat::judge::heuristic::HeuristicJudge;
use falat::pipeline::{Options, diagnose};

fn main() {
    let path = std::env::args().nth(1).expect("FILE");
    let loaded = load_path(std::path::Path::new(&path), None).unwrap();
    let t = &loaded.trajectories[0];
    println!(
        "observed: {:?} expected: {:?} gold: {:?}",
        t.observed_output,
        t.expected_output,
        t.gold.as_ref().map(|g| (g.step, &g.agent))
    );
    let d = diagnose(t, &HeuristicJudge, &Options::new(true));
    for c in &d.candidates {
        println!("#{} {} {:.2} pruned={:?}", c.step, c.agent, c.score, c.pruned.as_ref().map(|p| &p.reason));
        for f in &c.findings {
            println!("    {} {:.2} {}", f.signal.as_str(), f.weight, f.evidence);
        }
    }
    println!("=> {:?} {:?} {} | {}", d.decisive_step, d.agent, d.category, d.reason);
}
