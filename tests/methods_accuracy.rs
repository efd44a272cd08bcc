//! Accuracy floors of every method on the bundled Who&When development split
//! (`data/who-and-when`, 76 algorithm-generated and 35 hand-crafted trajectories), offline with
//! the heuristic judge, with ground truth, seed 0, panel 3.
//!
//! The cases are loaded and scored by `falat::eval::benchmark`, the functions `falat eval` calls:
//! these are the figures of `falat eval data/who-and-when --method M`.
//!
//! The floors are the hit counts measured when the methods were written: a method may improve,
//! but a change that loses a single hit on any figure fails here. Raise the floors when a method
//! improves. Counts, not percentages, so the comparison is exact.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use falat::eval::Record;
use falat::eval::benchmark::{self, Benchmark, Case, Judges};
use falat::judge::heuristic::HeuristicJudge;
use falat::methods::{Method, MethodOptions};

/// Hit counts of one method on one subset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hits {
    n: usize,
    agent: usize,
    step: usize,
    within1: usize,
    within3: usize,
}

fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data/who-and-when"));
        let bench = Benchmark::load(&[dir], &[]).expect("the bundled Who&When split loads");
        assert!(bench.skipped.is_empty(), "{:?}", bench.skipped);
        bench.cases
    })
}

fn hits(records: &[Record], subset: &str) -> Hits {
    let rs: Vec<&Record> = records.iter().filter(|r| r.subset == subset).collect();
    let within = |k: usize| {
        rs.iter().filter(|r| matches!((r.pred_step, r.gold_step), (Some(p), Some(g)) if p.abs_diff(g) <= k)).count()
    };
    Hits {
        n: rs.len(),
        agent: rs.iter().filter(|r| r.agent_hit).count(),
        step: rs.iter().filter(|r| r.step_hit).count(),
        within1: within(1),
        within3: within(3),
    }
}

/// Runs `method` and checks its counts against the floors `[algorithm-generated, hand-crafted]`.
fn check(method: Method, floors: [Hits; 2]) {
    let judges = Judges::shared(Arc::new(HeuristicJudge));
    let rows = benchmark::variants(&[method], &[]);
    let records = benchmark::evaluate(cases(), &rows, &judges, &MethodOptions::new(true), 2, &|_, _| {});
    let measured = [hits(&records, "Algorithm-Generated"), hits(&records, "Hand-Crafted")];
    for (m, f) in measured.iter().zip(&floors) {
        let ok =
            m.n == f.n && m.agent >= f.agent && m.step >= f.step && m.within1 >= f.within1 && m.within3 >= f.within3;
        assert!(ok, "{method}: measured {measured:?}, floors {floors:?}");
    }
}

const fn h(n: usize, agent: usize, step: usize, within1: usize, within3: usize) -> Hits {
    Hits { n, agent, step, within1, within3 }
}

#[test]
fn the_split_has_76_and_35_labelled_trajectories() {
    let ag = cases().iter().filter(|c| c.subset == "Algorithm-Generated").count();
    let hc = cases().iter().filter(|c| c.subset == "Hand-Crafted").count();
    assert_eq!((ag, hc), (76, 35));
}

#[test]
fn falat() {
    // FALAT as the paper gives it (the earliest candidate passing both criteria with no score
    // floor, pruning by transition labels, blind re-search) with the offline judge: on
    // algorithm-generated runs +2 agent, +2 step, 0 ±1, -3 ±3 hits; on hand-crafted runs -5 agent,
    // -1 step, -2 ±1 hits. The offline criteria pass early weak candidates (often the first
    // plan) that the floor used to rule out.
    // Then, with whole-word value matching, the policy and task statement never decisive and the
    // best-ranked step instead of a fixed fallback: +1 agent, +2 step, +2 ±1, +1 ±3 hits on
    // algorithm-generated runs; +1 agent, +1 step, +1 ±1 on hand-crafted runs.
    // Hand-crafted 7 -> 6 step hits once a step where the output's wrong value first appears is
    // not pruned as a dead end (Hand-Crafted/24 had been right through the fallback); the agent
    // floor is raised to the 20 hits measured.
    // Then (the ranking deciding where verification does not tell candidates apart, the FINAL
    // ANSWER step as the final output, the findings about actions, grounding, assertions and
    // progress, the ranker refitted on them): -1 agent, +1 step, -1 ±1, +1 ±3 on
    // algorithm-generated runs; +2 agent, 0 step, 0 ±1, -1 ±3 on hand-crafted runs.
    // Then the claimed-lookup finding and the refit on it: +1 agent, 0 step, 0 ±1, -1 ±3 on
    // algorithm-generated runs (measured 50 / 38 / 45 / 60; the ±3 hit is Algorithm-Generated/1,
    // whose named step moved from 0 to 4 on a 0.001 tie of the ranking; docs/RANKER.md).
    // Then figures told rounded from a longer one and the refit on them: -1 agent (measured 49 /
    // 38 / 45 / 60): Algorithm-Generated/34, decided by the ranking, moved from step 2 (right
    // agent) to step 6 on a near tie the refit turned; no step hit moved.
    check(Method::Falat, [h(76, 49, 38, 45, 60), h(35, 22, 6, 10, 11)]);
}

#[test]
fn echo() {
    // Independent step analysts (not told the agent vote) gained a step hit and cost two ±1 hits.
    // The same release moved the baselines, which share the offline findings and the refitted
    // ranker: here -3 agent, -1 step, -1 ±1, -2 ±3 on algorithm-generated runs, +1 agent on
    // hand-crafted ones.
    check(Method::Echo, [h(76, 43, 31, 43, 60), h(35, 21, 7, 11, 12)]);
}

#[test]
fn defa() {
    // Hand-crafted 22 -> 21 agent hits once line numbers are no stated values: on Hand-Crafted/39
    // the termination step had been named (its agent right) for "states 1500, 94, 116", where 94
    // and 116 are the line numbers of a Python warning printed into the log; with "states 1500"
    // alone DeFA names a WebSurfer step. Hand-Crafted/44 gains the agent and Hand-Crafted/20 loses
    // it the same way. No step hit moves.
    // Then (the findings and the refitted ranker of the release where the ranking decides FALAT's
    // undiscriminated verdicts): -2 agent, -2 step, -2 ±1, -3 ±3 on algorithm-generated runs,
    // -2 agent on hand-crafted ones.
    check(Method::Defa, [h(76, 41, 30, 40, 60), h(35, 19, 7, 11, 12)]);
}

#[test]
fn all_at_once() {
    // Then -3 agent, -2 step, -2 ±1, -1 ±3 on algorithm-generated runs (the same release as above).
    check(Method::AllAtOnce, [h(76, 39, 29, 42, 58), h(35, 21, 7, 11, 12)]);
}

#[test]
fn step_by_step() {
    // Then -2 agent, -2 step, -3 ±1, -2 ±3 on algorithm-generated runs, +1 on each hand-crafted count.
    check(Method::StepByStep, [h(76, 43, 32, 41, 61), h(35, 21, 7, 11, 12)]);
}

#[test]
fn binary_search() {
    // Then -2 agent, -2 step, -3 ±1, -1 ±3 on algorithm-generated runs, +2/+1/+1/+1 on hand-crafted.
    check(Method::BinarySearch, [h(76, 41, 31, 41, 58), h(35, 20, 7, 11, 12)]);
}

#[test]
fn random_is_the_floor() {
    check(Method::Random, [h(76, 29, 6, 22, 49), h(35, 15, 2, 4, 7)]);
}

#[test]
fn falat_s_confidence_is_calibrated_on_the_methods_decisions() {
    let judges = Judges::shared(Arc::new(HeuristicJudge));
    let rows = benchmark::variants(&[Method::Falat], &[]);
    let records = benchmark::evaluate(cases(), &rows, &judges, &MethodOptions::new(true), 2, &|_, _| {});
    let refs: Vec<&Record> = records.iter().collect();
    let ece = falat::eval::ece(&refs);
    // Measured 0.105 (0.109 before the blocking_change signal and the worked-out sums moved the
    // map) over the 111 runs with the map fitted on the methods' out-of-fold decisions
    // (0.127 with the map of the ranker's best steps): the stated confidence is the chance that
    // the named step is right (docs/RANKER.md). The tune runs' share of it is in-sample.
    assert!(ece <= 0.115, "ECE {ece}");
}
