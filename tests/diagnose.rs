//! The diagnosis of real Who&When trajectories: report snapshots, the CLI, and the accuracy the
//! offline judge reaches on the bundled set (a regression fails).

use std::path::Path;
use std::time::Duration;

use falat::diagnosis::Diagnosis;
use falat::eval;
use falat::ingest::fs::{dataset_files, load_path};
use falat::judge::heuristic::HeuristicJudge;
use falat::model::Trajectory;
use falat::pipeline::{Options, diagnose};
use falat::report;

fn load(rel: &str) -> Trajectory {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    load_path(&path, None).expect("loads").trajectories.remove(0)
}

/// The diagnosis with wall times zeroed, so reports are stable.
fn stable(t: &Trajectory, gt: bool) -> Diagnosis {
    let mut d = diagnose(t, &HeuristicJudge, &Options::new(gt));
    for s in &mut d.cost {
        s.cost.wall = Duration::ZERO;
    }
    d
}

#[test]
fn algorithm_generated_10_finds_the_invented_census_figures() {
    let t = load("data/who-and-when/Algorithm-Generated/10.json");
    let d = stable(&t, true);
    assert_eq!(d.decisive_step, Some(5));
    assert_eq!(d.agent.as_deref(), Some("Validation_Expert"));
    assert_eq!(d.category, "hallucination");
    assert_eq!(d.role_of(5), Some(falat::diagnosis::Role::RootCause));
    insta::assert_snapshot!("report_ag10_md", report::to_markdown(&t, &d));
    insta::assert_json_snapshot!("report_ag10_json", report::to_json(&t, &d));
}

#[test]
fn hand_crafted_1_finds_the_irrelevant_click() {
    let t = load("data/who-and-when/Hand-Crafted/1.json");
    let d = stable(&t, true);
    assert_eq!(d.decisive_step, Some(12));
    assert_eq!(d.agent.as_deref(), Some("WebSurfer"));
    let json = report::to_json(&t, &d);
    assert_eq!(json["schema"], "falat.diagnosis/v1");
    assert_eq!(json["decisive_step"], 12);
    assert!(json["roles"].as_array().unwrap().iter().any(|r| r["role"] == "ROOT_CAUSE" && r["step"] == 12));
}

/// `(agent hits, exact step hits, n)` per subset, in subset name order.
fn accuracy(gt: bool) -> Vec<(String, usize, usize, usize)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/who-and-when");
    let mut records = Vec::new();
    for f in dataset_files(&dir).unwrap() {
        let t = load_path(&f, None).unwrap().trajectories.remove(0);
        let subset = f.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
        let d = diagnose(&t, &HeuristicJudge, &Options::new(gt));
        records.push(eval::score(&f.display().to_string(), &subset, &d, t.gold.as_ref().unwrap()));
    }
    let mut subsets: Vec<String> = records.iter().map(|r| r.subset.clone()).collect();
    subsets.sort();
    subsets.dedup();
    subsets
        .into_iter()
        .map(|s| {
            let rs: Vec<&eval::Record> = records.iter().filter(|r| r.subset == s).collect();
            let agent = rs.iter().filter(|r| r.agent_hit).count();
            let step = rs.iter().filter(|r| r.step_hit).count();
            (s, agent, step, rs.len())
        })
        .collect()
}

#[test]
fn who_and_when_accuracy_does_not_regress() {
    // Measured with the heuristic judge; see the README's accuracy table.
    let with_gt = accuracy(true);
    let expected = [("Algorithm-Generated", 47, 33, 76), ("Hand-Crafted", 21, 7, 35)];
    check(&with_gt, &expected);
    let without = accuracy(false);
    let expected = [("Algorithm-Generated", 45, 32, 76), ("Hand-Crafted", 20, 3, 35)];
    check(&without, &expected);
}

fn check(got: &[(String, usize, usize, usize)], expected: &[(&str, usize, usize, usize)]) {
    assert_eq!(got.len(), expected.len(), "{got:?}");
    for ((s, a, st, n), (es, ea, est, en)) in got.iter().zip(expected) {
        assert_eq!((s.as_str(), *n), (*es, *en));
        assert!(a >= ea, "{s}: agent hits {a} < {ea}");
        assert!(st >= est, "{s}: step hits {st} < {est}");
    }
}
