//! Development aid: diagnoses every file under the given folders with one or more methods and
//! prints the accuracy table plus, with `-v`, per-file predictions.
//!
//! `cargo run --example quick_eval -- data/who-and-when [--method falat,echo|all] [--seed N]
//! [--panel K] [--jobs N] [--phase-threshold X] [--score-floor X] [--no-ground-truth] [-v]`
use falat::eval;
use falat::judge::heuristic::HeuristicJudge;
use falat::methods::{self, Method, MethodOptions};

fn value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).map(String::as_str)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut opts = MethodOptions::new(!args.iter().any(|a| a == "--no-ground-truth"));
    let verbose = args.iter().any(|a| a == "-v");
    let list = value(&args, "--method").unwrap_or("falat");
    let methods = Method::parse_list(list).unwrap_or_else(|e| panic!("{e}"));
    opts.seed = value(&args, "--seed").map_or(0, |s| s.parse().expect("--seed N"));
    opts.panel = value(&args, "--panel").map_or(3, |s| s.parse().expect("--panel K"));
    let jobs = value(&args, "--jobs").map_or(2, |s| s.parse().expect("--jobs N"));
    if let Some(x) = value(&args, "--phase-threshold") {
        opts.pipeline.falat.phase_threshold = x.parse().expect("--phase-threshold X");
    }
    if let Some(x) = value(&args, "--score-floor") {
        opts.pipeline.falat.score_floor = Some(x.parse().expect("--score-floor X"));
    }
    let flags_with_value = ["--method", "--seed", "--panel", "--jobs", "--phase-threshold", "--score-floor"];
    let dirs: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with('-') && (*i == 0 || !flags_with_value.contains(&args[i - 1].as_str())))
        .map(|(_, a)| a)
        .collect();
    let cases = methods::load_cases(&dirs).expect("readable data set");
    let records = methods::evaluate(&methods, &cases, &HeuristicJudge, &opts, jobs);
    if verbose {
        for r in &records {
            println!(
                "{:<14} {:<50} pred {:?} {:?} gold {:?} {}",
                r.method, r.file, r.pred_step, r.pred_agent, r.gold_step, r.gold_agent
            );
        }
    }
    print!("{}", eval::render_table(&eval::summarize(&records, &[0, 1, 3, 5])));
}
