//! The diagnosis of real Who&When trajectories: report snapshots, the CLI, and the accuracy the
//! offline judge reaches on the bundled set (a regression fails).

use std::path::Path;
use std::time::Duration;

use falat::diagnosis::Diagnosis;
use falat::eval;
use falat::ingest::fs::{dataset_files, load_path};
use falat::judge::heuristic::HeuristicJudge;
use falat::methods::falat::Options;
use falat::model::Trajectory;
use falat::report;

fn load(rel: &str) -> Trajectory {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    load_path(&path, None).expect("loads").trajectories.remove(0)
}

/// The diagnosis with wall times zeroed, so reports are stable.
fn stable(t: &Trajectory, gt: bool) -> Diagnosis {
    let mut d = falat::methods::run(
        falat::methods::Method::Falat,
        t,
        &HeuristicJudge,
        &falat::methods::MethodOptions::for_falat(Options::new(gt)),
    );
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
    // serde_json writes the JSON: insta's own serialiser would see serde_json's
    // `arbitrary_precision` numbers as maps.
    insta::assert_snapshot!("report_ag10_json", serde_json::to_string_pretty(&report::to_json(&t, &d)).unwrap());
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
        let d = falat::methods::run(
            falat::methods::Method::Falat,
            &t,
            &HeuristicJudge,
            &falat::methods::MethodOptions::for_falat(Options::new(gt)),
        );
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
    // FALAT as the paper gives it (earliest valid candidate, no score floor, pruning by labels,
    // blind re-search) with the offline judge: algorithm-generated 47 -> 49 agent and 33 -> 35
    // step hits; hand-crafted 21 -> 16 agent and 7 -> 6 step hits (the offline criteria pass
    // early weak candidates, such as the first plan, that the floor used to rule out).
    // With the whole-word value match, the policy and task statement never decisive, and the
    // best-ranked step instead of a fixed fallback: 49 -> 50 / 35 -> 37 and 16 -> 17 / 6 -> 7.
    // A step where the output's wrong value first appears is no longer pruned as a dead end:
    // hand-crafted 7 -> 6 step hits (Hand-Crafted/24 had been right through the fallback, after
    // its step 2 was pruned so); the agent floor is raised to the 20 hits measured.
    // When verification does not tell candidates apart the ranking decides, the final output is
    // the FINAL ANSWER step, and the findings about actions, grounding, assertions and progress
    // feed the refitted ranker: 50 -> 49 / 37 -> 38 and 20 -> 22 / 6 -> 6.
    let expected = [("Algorithm-Generated", 49, 38, 76), ("Hand-Crafted", 22, 6, 35)];
    check(&with_gt, &expected);
    let without = accuracy(false);
    // Without o*: algorithm-generated 45 -> 50 agent and 32 -> 37 step hits; hand-crafted
    // 20 -> 15 agent and 3 -> 1 step hits.
    // Then 50 -> 51 / 37 -> 39 and 15 -> 18 / 1 -> 3.
    // Then (the ranking deciding, the new findings): 51 -> 50 / 39 -> 39 and 18 -> 22 / 3 -> 5.
    let expected = [("Algorithm-Generated", 50, 39, 76), ("Hand-Crafted", 22, 5, 35)];
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

fn falat() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("falat").unwrap();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

#[test]
fn diagnose_command_writes_json_and_markdown() {
    let out = falat()
        .args(["diagnose", "--format", "json", "data/who-and-when/Algorithm-Generated/10.json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Always an array, one element per trajectory and method, even for one trace.
    assert_eq!(all.as_array().map(Vec::len), Some(1), "{all}");
    let v = &all[0];
    assert_eq!(v["schema"], "falat.diagnosis/v1");
    assert_eq!(v["decisive_step"], 5);
    assert_eq!(v["agent"], "Validation_Expert");
    for key in ["trajectory", "method", "judge", "category", "reason", "confidence", "roles", "candidates", "cost"] {
        assert!(v.get(key).is_some(), "{key} missing");
    }
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("report.md");
    let out = falat()
        .args(["diagnose", "-m", "falat,echo", "data/who-and-when/Algorithm-Generated/10.json", "-o"])
        .arg(&md)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("- method: falat (judge: heuristic)"));
    assert!(text.contains("- method: echo (judge: heuristic)"));
}

#[test]
fn eval_command_prints_a_row_per_method_and_writes_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("eval.jsonl");
    let out = falat()
        .args(["eval", "data/who-and-when/Hand-Crafted", "--method", "falat,random", "--tolerance", "0,1", "--out"])
        .arg(&jsonl)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.starts_with("35 trajectories (25 tune, 10 report), ground truth used, judge heuristic\n"), "{table}");
    assert!(table.contains("top1%") && table.contains("ECE"), "{table}");
    assert!(table.contains("reliability of falat (35 trajectories, ECE "), "{table}");
    assert!(table.lines().any(|l| l.starts_with("falat ") && l.contains("Hand-Crafted")), "{table}");
    assert!(table.lines().any(|l| l.starts_with("random ") && l.contains("Hand-Crafted")), "{table}");
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&jsonl).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 70);
    for key in
        ["file", "subset", "method", "pred_agent", "pred_step", "gold_agent", "gold_step", "agent_hit", "step_hit"]
    {
        assert!(lines[0].get(key).is_some(), "{key} missing");
    }
    assert_eq!(lines.iter().filter(|l| l["method"] == "falat" && l["step_hit"] == true).count(), 6);
}

#[test]
fn eval_ablate_adds_one_row_per_component_on_the_same_data() {
    let out = falat()
        .args([
            "eval",
            "data/who-and-when/Hand-Crafted",
            "-m",
            "falat,defa",
            "--ablate",
            "pruning,segmentation,consensus",
        ])
        .args(["--tolerance", "0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.contains("Hand-Crafted") && l.contains(" tune "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    // ECHO's component is listed but ECHO is not run; each method gets only its own components.
    assert_eq!(rows, ["falat", "falat-pruning", "defa", "defa-segmentation"], "{table}");
    assert!(
        table.lines().all(|l| !l.contains("Hand-Crafted") || l.contains(" 25 ") || l.contains(" 10 ")),
        "same data: {table}"
    );
    let bad = falat().args(["eval", "data/who-and-when/Hand-Crafted", "--ablate", "nope"]).output().unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown component \"nope\""));
}

/// One run of the bundled AgentRx τ-bench file, by trajectory id.
fn tau(id: &str) -> Trajectory {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/agentrx-tau/tau_dataset_failed.json");
    let loaded = load_path(&path, None).expect("loads");
    loaded.trajectories.into_iter().find(|t| t.id == id).expect("the run is bundled")
}

#[test]
fn tau_bench_41_blames_the_change_that_locked_the_order() {
    // The assistant modified the order's items (which locks a pending order) before changing its
    // address; the address call then failed. The AgentRx label names the item change (step 16).
    let t = tau("task-41-trial-41");
    let d = stable(&t, true);
    assert_eq!(d.decisive_step, Some(16));
    assert_eq!(d.agent.as_deref(), Some("assistant"));
    assert_eq!(d.category, "instruction_or_plan_deviation");
    let c = d.candidates.iter().find(|c| c.step == 16).expect("step 16 is a candidate");
    let f = c.findings.iter().find(|f| f.signal == falat::diagnosis::Signal::BlockingChange).expect("blocking_change");
    assert_eq!(
        f.evidence,
        "changes order_id=#W4082615; the later modify_pending_order_address on it fails at step 18: Error: non-pending order cannot be modified"
    );
    let md = report::to_markdown(&t, &d);
    assert!(md.contains("blocking_change"), "{md}");
}

#[test]
fn tau_bench_98_reads_a_worked_out_refund_as_arithmetic_and_blames_the_locking_change() {
    // Step 12 states a refund of $3.76 = $302.67 − $298.91, both prices in the same message: a
    // computed value, not an invented one. The decisive error is step 20, which modified the
    // order's items before its address (the address change at step 22 then failed).
    let t = tau("task-98-trial-98");
    let d = stable(&t, true);
    assert!(d.candidates.iter().all(|c| c.step != 12), "{:?}", d.candidates.iter().map(|c| c.step).collect::<Vec<_>>());
    assert_eq!(d.decisive_step, Some(20));
    let c = d.candidates.iter().find(|c| c.step == 20).expect("step 20 is a candidate");
    assert_eq!(c.findings[0].signal, falat::diagnosis::Signal::BlockingChange);
    assert!(c.findings[0].evidence.contains("the later modify_pending_order_address on it fails at step 22"));
}

/// The report of the hand-crafted sample says why the named step is not the most probable one,
/// and that its sufficiency rests on steering the run when no value of it reaches the output.
#[test]
fn the_report_explains_a_named_step_below_the_most_probable_and_without_a_value_path() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces/who-and-when-hand-crafted-47.json");
    let loaded = load_path(&path, None).expect("load");
    let t = &loaded.trajectories[0];
    let d = falat::methods::run(
        falat::methods::Method::Falat,
        t,
        &HeuristicJudge,
        &falat::methods::MethodOptions::for_falat(Options::new(false)),
    );
    // The verified step 46 is moved back to step 44 by the re-search, whose phase recall did not
    // search: its findings are still given (the comparison read them).
    assert_eq!(d.decisive_step, Some(44));
    assert!(
        d.reason.starts_with(
            "step 44 (FileSurfer): lands on \"Download complete.\", unrelated to the task and the instruction \
             (prior_deviation); brings nothing new toward the task: it shows what step 40 already showed (no_progress)."
        ),
        "{}",
        d.reason
    );
    let md = report::to_markdown(t, &d);
    assert!(
        md.contains(
            "Step 24 (FileSurfer) is more probable than step 44 (P 0.08 against 0.01). FALAT names step 44 because \
             it is the earliest candidate that passes verification (temporal precedence), unless the local \
             re-search moved the decision within its window; step 24 was not a candidate and was not verified, so \
             read both."
        ),
        "{md}"
    );
    // The final output is the FINAL ANSWER step (66), not "Request satisfied." (65).
    assert!(
        md.contains(
            "None: the dependency graph has no path from step 44 to step 66, the final output's step (the step that \
             states the run's answer).\n"
        ),
        "{md}"
    );
    // FALAT's confidence cap is said only where it applied (a step its fallback named).
    assert!(!md.contains("at most 0.20"), "{md}");
}

/// A step that states the observed output, followed by a closing turn (a simulated user's
/// goodbye): the step stating the answer is the final output, not the goodbye.
#[test]
fn a_step_stating_the_observed_output_before_a_closing_turn_is_the_final_output() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/agentrx-tau/tau_dataset_failed.json");
    let loaded = load_path(&path, None).expect("load");
    let t = loaded.trajectories.iter().find(|t| t.id == "task-28-trial-28").expect("task 28");
    let d = falat::methods::run(
        falat::methods::Method::Falat,
        t,
        &HeuristicJudge,
        &falat::methods::MethodOptions::for_falat(Options::new(true)),
    );
    assert_eq!((d.decisive_step, d.final_output_step, d.path.as_slice()), (Some(41), Some(41), &[41][..]));
    let md = report::to_markdown(t, &d);
    assert!(md.contains("Step 41 is itself the final output's step (the step that states the run's answer)."), "{md}");
}

/// A method whose rule named no step says that its fallback named it, not its rule; and a method
/// without FALAT's cap does not claim it.
#[test]
fn a_fallback_is_given_as_the_reason_and_other_methods_do_not_claim_falat_s_cap() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces/who-and-when-algorithm-generated-30.json");
    let loaded = load_path(&path, None).expect("load");
    let t = &loaded.trajectories[0];
    let opts = falat::methods::MethodOptions::new(true);
    let d = falat::methods::run(falat::diagnosis::Method::StepByStep, t, &HeuristicJudge, &opts);
    assert_eq!(d.fallback.as_deref(), Some("the judge called no step decisive; step 0 was its least certain \"no\""));
    let md = report::to_markdown(t, &d);
    assert!(
        md.contains(
            "Step-by-step names step 0 by its fallback (the judge called no step decisive; step 0 was its least \
             certain \"no\"); it does not name the step that ranks first by P"
        ),
        "{md}"
    );
    assert!(!md.contains("at most 0.20"), "{md}");
    // A detail section with nothing in it says so instead of leaving a bare heading.
    let echo = falat::methods::run(falat::diagnosis::Method::Echo, t, &HeuristicJudge, &opts);
    let md = report::to_markdown(t, &echo);
    assert!(md.contains("\n## Agent evidence\n\nNone.\n"), "{md}");
    // ECHO's analysts found no clear fault but still put a step forward: a fallback, said as one
    // and among the warnings (the Why had said "no agent is clearly at fault" beside a verdict).
    let why = "the step analysts concluded that no agent is clearly at fault; step 2 is the step their analyses \
               put forward as the most likely";
    assert_eq!((echo.decisive_step, echo.fallback.as_deref()), (Some(2), Some(why)));
    assert!(echo.warnings.iter().any(|w| w == why), "{:?}", echo.warnings);
    // DeFA's fallback when nothing was recalled is said, and a step that reaches nothing has no
    // path (not a one-step one).
    let defa = falat::methods::run(falat::diagnosis::Method::Defa, t, &HeuristicJudge, &opts);
    assert_eq!(
        (defa.decisive_step, defa.fallback.as_deref(), defa.path.as_slice()),
        (Some(2), Some("no candidate was recalled; step 2 is the first to act on the task"), &[][..])
    );
}

/// A step named by the fallback that the re-search's window check passes: the warning says the
/// check looked at the window only, so the two do not read as a contradiction.
#[test]
fn an_unverified_step_that_passes_the_window_check_says_which_check_passed() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces/who-and-when-algorithm-generated-30.json");
    let loaded = load_path(&path, None).expect("load");
    let d = falat::methods::run(
        falat::methods::Method::Falat,
        &loaded.trajectories[0],
        &HeuristicJudge,
        &falat::methods::MethodOptions::for_falat(Options::default()),
    );
    assert_eq!(d.decisive_step, Some(4));
    assert_eq!(
        d.warnings.iter().find(|w| w.starts_with("unverified:")).map(String::as_str),
        Some(
            "unverified: no candidate was left to verify, so the ranking's most probable step is named (step 4) \
             (the re-search's check passes it, but against the steps of its window only)"
        )
    );
    assert!(d.confidence <= 0.2);
    assert_eq!(
        d.fallback.as_deref(),
        Some("no candidate was left to verify, so the ranking's most probable step is named")
    );
    let md = report::to_markdown(&loaded.trajectories[0], &d);
    assert!(md.contains("here at most 0.20 because no candidate passed verification."), "{md}");
    assert_eq!(report::to_json(&loaded.trajectories[0], &d)["fallback"], d.fallback.as_deref().unwrap());
    // The run records no observed output: the one-step path says which step the analysis takes as
    // the final output and why, not that the step states the run's answer.
    assert!(loaded.trajectories[0].observed_output.is_none());
    assert!(
        md.contains(
            "\nStep 4 is itself the final output's step (the run's last step of substance: no step states an \
             answer).\n"
        ),
        "{md}"
    );
}

/// In a τ-bench run the last step is the simulated user's goodbye, which quotes nothing: a step
/// where the output's wrong value first appears still reaches the output by that value and is
/// not pruned as a dead end.
#[test]
fn a_step_where_the_output_s_wrong_value_first_appears_is_never_a_dead_end() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces/tau-bench-retail-task2.json");
    let loaded = load_path(&path, None).expect("load");
    let d = falat::methods::run(
        falat::methods::Method::Falat,
        &loaded.trajectories[0],
        &HeuristicJudge,
        &falat::methods::MethodOptions::for_falat(Options::new(true)),
    );
    let origins: Vec<(usize, bool)> = d
        .candidates
        .iter()
        .filter(|c| c.findings.iter().any(|f| f.signal == falat::diagnosis::Signal::WrongValueOrigin))
        .map(|c| (c.step, c.pruned.is_some()))
        .collect();
    // Step 30, the answer the run returned (the final output), carries the wrong value on: it is
    // pruned as a follow-up of an earlier candidate (step 6's miscount), never as a dead end.
    assert_eq!(origins, vec![(26, false), (30, true)]);
    let thirty = d.candidate(30).and_then(|c| c.pruned.as_ref()).expect("pruned");
    assert_eq!((thirty.transition, thirty.by_step), (falat::diagnosis::Transition::FollowUp, Some(6)));
    // No dependency edge leads from 6 to 30 (the report says so under the path): the prune says
    // how step 6 reaches it instead of claiming an adopted error.
    assert_eq!(d.path, Vec::<usize>::new());
    assert_eq!(
        thirty.reason,
        "it reports the outcome that candidate step 6 set through what it told the user, not by a dependency edge"
    );
    // An earlier candidate passes verification first: step 6 tells the user "11 available
    // T-shirt options" where the product's record lists 12 variants, 10 of them available (the
    // task's expected answer is 10). It is named, not a fallback.
    assert_eq!(d.decisive_step, Some(6));
    assert_eq!(d.fallback, None);
    let six = d.candidates.iter().find(|c| c.step == 6).expect("step 6 is a candidate");
    assert!(six.pruned.is_none());
    let count = six.findings.iter().find(|f| f.signal == falat::diagnosis::Signal::CountMismatch).expect("a count");
    assert_eq!(
        count.evidence,
        "says \"11 available T-shirt options\"; the list it counts at step 5 has 12 (10 with available=true)"
    );
}

#[test]
fn a_cut_off_last_line_that_may_hold_the_answer_is_said_under_the_verdict() {
    // ADK events as JSON Lines whose last line (the agent's answer) was cut half-way: the
    // verdict must say up front that a record could not be read, not only the Warnings at the end.
    let trace = "tests/fixtures/frameworks/adk-truncated-last-line.jsonl";
    let out = falat().args(["diagnose", trace]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = String::from_utf8(out.stdout).unwrap();
    let verdict = md.split("## Verdict\n\n").nth(1).unwrap();
    let (head, _) = verdict.split_once("### Why").unwrap();
    assert_eq!(
        head.trim(),
        "**No failure found**: no ROOT_CAUSE is named.\n\n**The run's answer may be lost**: 1 record of the file \
         could not be read (line 6), and the trajectory ends without a final answer from an agent. The answer may \
         be among them: read this verdict with that in mind (see Warnings)."
    );
    assert!(md.contains("- loading: line 6: skipped: not JSON at column 80"), "{md}");
    // The same file with the cut line left out entirely reads as whole: no such note.
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("five.jsonl");
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(trace)).unwrap();
    std::fs::write(&whole, text.lines().take(5).collect::<Vec<_>>().join("\n")).unwrap();
    let md = String::from_utf8(falat().args(["diagnose"]).arg(&whole).output().unwrap().stdout).unwrap();
    assert!(!md.contains("answer may be lost"), "{md}");
}

#[test]
fn unread_records_are_counted_from_the_load_warnings_with_their_lines() {
    let w = |s: &str| s.to_string();
    let warnings = [
        w("loading: line 6: skipped: not JSON at column 80"),
        w("loading: runs[3] skipped: expected a run with \"id\" and \"run_type\""),
        w("loading: line 9: skipped: not JSON"),
        w("loading: 2 model call(s) hold their own reply in their recorded input"),
        w("the judge fell back"),
    ];
    assert_eq!(report::unread_records(&warnings), (3, vec![6, 9]));
    assert_eq!(report::unread_records(&[]), (0, vec![]));
}
