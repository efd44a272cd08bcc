//! FALAT's decision rule on every bundled Who&When run (`data/who-and-when`, offline heuristic
//! judge, with ground truth): where verification tells the candidates apart (some pass, some
//! fail, or a single one passes), the decisive step is the earliest candidate that passed both
//! criteria, with no score floor (FALAT §3). Where it does not (every one of two or more passed,
//! or none did), the calibrated ranking decides: the most probable of the passing candidates, or
//! the ranking's most probable step, and the report says so (docs/METHODS.md, "When verification
//! does not discriminate"). Re-search may move the step only to a step of its window that passes
//! both criteria in its own counterfactual check, and forward only when the chosen step fails its
//! check there (FALAT §4).

use falat::eval::Benchmark;
use falat::judge::heuristic::HeuristicJudge;
use falat::methods::falat::decision::{Undiscriminating, Verdict};
use falat::methods::falat::{Options, Pipeline};

#[test]
fn the_decision_rule_holds_on_every_bundled_run() {
    let dir = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data/who-and-when"));
    let cases = Benchmark::load(&[dir], &[]).expect("the bundled Who&When split loads").cases;
    assert_eq!(cases.len(), 111);
    let opts = Options::new(true);
    assert_eq!(opts.falat.score_floor, None, "the floor is off by default");
    let (mut with_valid, mut all_passed, mut none_passed, mut moved_back, mut moved_forward) = (0, 0, 0, 0, 0);
    let mut all_passed_unseen = 0;
    for case in &cases {
        let t = &case.trajectory;
        let mut p = Pipeline::default();
        p.run_all(t, &HeuristicJudge, &opts).expect("not cancelled");
        let v = p.verified.as_ref().expect("stage 3 ran");
        let r = p.research.as_ref().expect("stage 4 ran");
        let d = p.diagnosis(t, &HeuristicJudge, &opts);
        let passed: Vec<usize> = v
            .candidates
            .iter()
            .filter(|c| {
                c.pruned.is_none()
                    && c.verification.as_ref().is_some_and(|k| k.independence.passed && k.sufficiency.passed)
            })
            .map(|c| c.step)
            .collect();
        // Every unpruned candidate was verified on both criteria.
        for c in v.candidates.iter().filter(|c| c.pruned.is_none()) {
            assert!(c.verification.is_some(), "{}: live candidate {} was not verified", case.file, c.step);
        }
        let live = v.candidates.iter().filter(|c| c.pruned.is_none()).count();
        let p = |s: usize| d.ranking.iter().find(|x| x.step == s).map_or(0.0, |x| x.probability);
        let best = d.ranking.iter().map(|x| x.probability).fold(0.0_f32, f32::max);
        let stage3 = match (passed.iter().min(), passed.len() == live && live >= 2) {
            (Some(_), true) => {
                all_passed += 1;
                let Some(Verdict::Ranked(s, Undiscriminating::AllPassed { checked, unseen })) = v.verdict else {
                    panic!("{}: {:?}", case.file, v.verdict)
                };
                assert_eq!(checked, live);
                assert!(passed.contains(&s), "{}: the ranking names a passing candidate", case.file);
                let holds_unseen = |o: usize| {
                    v.candidates.iter().any(|c| c.step == o && falat::methods::falat::decision::unseen_by_ranking(c))
                };
                let top = passed.iter().copied().max_by(|a, b| p(*a).total_cmp(&p(*b)).then(b.cmp(a))).unwrap();
                if unseen {
                    // The earliest passing candidate with a finding the ranking cannot weigh,
                    // before the ranking's most probable one.
                    all_passed_unseen += 1;
                    assert!(holds_unseen(s) && s < top, "{}: step {s} before {top}", case.file);
                    assert!(passed.iter().all(|&o| o >= s || !holds_unseen(o)), "{}: the earliest such", case.file);
                } else {
                    assert!(
                        passed.iter().all(|o| p(*o) <= p(s)),
                        "{}: step {s} is the most probable of {passed:?}",
                        case.file
                    );
                    assert!(
                        passed.iter().all(|&o| o >= s || !holds_unseen(o)),
                        "{}: an earlier unseen finding",
                        case.file
                    );
                }
                s
            }
            (Some(&earliest), false) => {
                with_valid += 1;
                assert_eq!(v.verdict, Some(Verdict::Valid(earliest)), "{}: {passed:?}", case.file);
                earliest
            }
            (None, _) => {
                none_passed += 1;
                let Some(Verdict::Ranked(s, Undiscriminating::NonePassed { past_submission, .. })) = v.verdict else {
                    panic!("{}: {:?}", case.file, v.verdict)
                };
                // Unless the most probable step is a final submission after a step with a finding.
                assert!(past_submission || p(s) == best, "{}: the ranking's most probable step", case.file);
                s
            }
        };
        assert_eq!(v.chosen, Some(stage3));
        if r.decisive == stage3 {
            if passed.is_empty() {
                assert!(d.warnings.iter().any(|w| w.starts_with("unverified:")), "{}: {:?}", case.file, d.warnings);
                assert!(d.confidence <= 0.2, "{}: {}", case.file, d.confidence);
            }
            if !passed.is_empty() && passed.len() == live && live >= 2 || passed.is_empty() {
                assert!(d.reason.starts_with(&format!("step {stage3} (")), "{}: {}", case.file, d.reason);
                assert!(d.reason.contains("; named by the ranking: "), "{}: {}", case.file, d.reason);
                assert_eq!(d.explanation.rule.as_str(), "ranking");
            }
            continue;
        }
        let check = |s: usize| r.checks.iter().find(|k| k.step == s);
        let to = check(r.decisive).expect("the moved-to step was checked");
        assert!(to.independence.passed && to.sufficiency.passed, "{}: moved to a failing step", case.file);
        assert!(r.reason.starts_with("moved"), "{}: {}", case.file, r.reason);
        if r.decisive < stage3 {
            moved_back += 1;
        } else {
            moved_forward += 1;
            let own = check(stage3).expect("the chosen step was checked");
            assert!(!(own.independence.passed && own.sufficiency.passed), "{}: forward past a valid step", case.file);
        }
        assert_eq!(d.decisive_step, Some(r.decisive));
    }
    // Verification told the candidates apart in 53 runs; in 37 every candidate passed and in 21
    // none did (or none was left), where the ranking decided; re-search moved 2 decisions back.
    // (Before the offline judge searched the other phases when the suspicious ones recalled
    // nothing, verification told them apart in 49 runs, 25 had none passing and one decision
    // moved forward; the step figures are the same.) Before the ranking decided those, the earliest valid candidate was named in 85
    // runs and a fallback in 26 (3 moved back, 2 forward).
    let counts = (with_valid, all_passed, none_passed, moved_back, moved_forward);
    assert_eq!(counts, (53, 37, 21, 2, 0), "{counts:?}");
    eprintln!("all passed, named for a finding the ranking has no feature for: {all_passed_unseen}");
}
