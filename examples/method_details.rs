//! Development aid: runs one method on one trace and prints its diagnosis with the method's
//! details. `cargo run --example method_details -- METHOD FILE`.
use falat::ingest::fs::load_path;
use falat::judge::heuristic::HeuristicJudge;
use falat::methods::{self, Method, MethodOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let method = Method::parse(&args.next().expect("METHOD")).expect("known method");
    let path = args.next().expect("FILE");
    let loaded = load_path(std::path::Path::new(&path), None).unwrap();
    let t = &loaded.trajectories[0];
    println!("gold: {:?}", t.gold.as_ref().map(|g| (g.step, &g.agent)));
    let d = methods::run(method, t, &HeuristicJudge, &MethodOptions::new(true));
    println!("=> {:?} {:?} {} conf {:.2}\n{}", d.decisive_step, d.agent, d.category, d.confidence, d.reason);
    for (title, lines) in &d.details {
        println!("{title}:");
        for l in lines {
            println!("  {l}");
        }
    }
    for w in &d.warnings {
        println!("warning: {w}");
    }
    for c in &d.cost {
        println!("cost {}: {} calls, {:?}", c.stage, c.cost.calls, c.cost.wall);
    }
}
