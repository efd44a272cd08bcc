//! Development aid: diagnoses every file under the given folders and prints the accuracy table
//! plus per-file predictions. `cargo run --example quick_eval -- data/who-and-when`.
use falat::eval;
use falat::ingest::fs::{dataset_files, load_path};
use falat::judge::heuristic::HeuristicJudge;
use falat::pipeline::{Options, diagnose};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gt = !args.iter().any(|a| a == "--no-ground-truth");
    let verbose = args.iter().any(|a| a == "-v");
    let mut records = Vec::new();
    for dir in args.iter().filter(|a| !a.starts_with('-')) {
        for f in dataset_files(std::path::Path::new(dir)).unwrap() {
            let loaded = load_path(&f, None).unwrap();
            let t = &loaded.trajectories[0];
            let Some(gold) = &t.gold else { continue };
            let d = diagnose(t, &HeuristicJudge, &Options::new(gt));
            let subset = f.parent().unwrap().file_name().unwrap().to_string_lossy().to_string();
            let r = eval::score(&f.display().to_string(), &subset, &d, gold);
            if verbose {
                println!(
                    "{:<45} pred {:?} {:?} gold {:?} {} | {} | {}",
                    r.file,
                    r.pred_step,
                    r.pred_agent,
                    r.gold_step,
                    r.gold_agent,
                    d.category,
                    d.candidates
                        .iter()
                        .filter(|c| c.pruned.is_none())
                        .map(|c| format!("{}:{:.2}", c.step, c.score))
                        .collect::<Vec<_>>()
                        .join(" ")
                );
            }
            records.push(r);
        }
    }
    print!("{}", eval::render_table(&eval::summarize(&records, &[0, 1, 3, 5])));
}
