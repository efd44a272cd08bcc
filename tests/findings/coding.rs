//! Coding-agent sessions (docs/METHODS.md, "Coding-agent sessions"): the failure the task reports,
//! reproduced first, is where the work starts; an edit is judged by the check after it; a claim
//! that the work is done ("all tests pass") needs a check after the last edit that did not fail.
//! Small OpenAI Chat Completions sessions built here, then the real-shaped Codex and OpenHands
//! files of `tests/fixtures`.

use falat::diagnosis::{Rule, Signal};
use falat::model::Trajectory;
use falat::substrate::{Context, Substrate, signals};
use serde_json::{Value, json};

use crate::chat::{
    ClaudeTurn, assistant, call, claude_session, evidence, falat, findings, fixture, load, steps_with, user,
};

const TASK: &str = "The test suite fails on test_parse_dates. Please fix the bug in parser.py.";
const FAILING: &str = "..F.......F\nFAILED tests/test_parser.py::test_parse_dates - AssertionError\n\
    FAILED tests/test_parser.py::test_parse_times - AssertionError\n2 failed, 9 passed in 0.41s";
const CLAIM: &str = "I fixed the date format in parser.py. All tests pass now.";

/// The task, the failing tests run (steps 1-2), a patch (steps 3-4), then `then` and the claim.
fn session(then: Vec<Vec<Value>>) -> Trajectory {
    session_claiming(then, CLAIM)
}

/// [`session`] ending with `claim`.
fn session_claiming(then: Vec<Vec<Value>>, claim: &str) -> Trajectory {
    let mut m = vec![user(TASK)];
    m.extend(call("c1", "run_shell", json!({"cmd": "pytest -q"}), FAILING));
    m.extend(call(
        "c2",
        "apply_patch",
        json!({"patch": "*** Update File: parser.py\n-    fmt = '%d-%m-%Y'\n+    fmt = '%Y-%m-%d'"}),
        "Done. Updated parser.py",
    ));
    m.extend(then.into_iter().flatten());
    m.push(assistant(claim));
    load(m)
}

fn tests_run(id: &str, output: &str) -> Vec<Value> {
    call(id, "run_shell", json!({"cmd": "pytest -q"}), output)
}

#[test]
fn a_claim_of_passing_tests_with_no_check_after_the_last_edit_is_the_decisive_step() {
    let t = session(vec![]);
    // The reproduced failure (steps 1-2) and the patch after it are the work, not errors.
    assert_eq!(findings(&t), vec![(5, Signal::UnverifiedAssertion)]);
    assert_eq!(
        evidence(&t, 5, Signal::UnverifiedAssertion),
        "claims the task done (\"I fixed the date format in parser.py. All tests pass now.\") with no check after \
         the edit at step 3"
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(5), "{}", d.reason);
    assert_eq!(d.category.as_str(), "premature_termination");
}

#[test]
fn a_go_or_rust_panic_in_the_last_check_shows_the_failure() {
    let rust = "thread 'main' panicked at src/main.rs:7:22:\nindex out of bounds: the len is 3 but the index is 3\n\
                note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace";
    let go = "panic: assignment to entry in nil map\n\ngoroutine 1 [running]:\nmain.main()\n\t/src/app/main.go:9 +0x2c";
    for (output, line) in
        [(rust, "thread 'main' panicked at src/main.rs:7:22:"), (go, "panic: assignment to entry in nil map")]
    {
        let mut m = vec![user("Make the summing program print the total of the vector.")];
        m.extend(call(
            "c1",
            "run_shell",
            json!({"cmd": "cat src/main.rs"}),
            "fn main() {\n    println!(\"{}\", total(&[1, 2, 3]));\n}",
        ));
        m.extend(call(
            "c2",
            "apply_patch",
            json!({"patch": "*** Update File: src/main.rs\n-    for i in 0..=v.len() {\n+    for i in 0..v.len() {"}),
            "Done. Updated src/main.rs",
        ));
        m.extend(call("c3", "run_shell", json!({"cmd": "cargo run -q"}), output));
        m.push(assistant("The loop bound is fixed; the program prints the total."));
        let t = load(m);
        // Before: no error line in the panic, and "No failure found".
        assert_eq!(findings(&t), vec![(3, Signal::FailedAction)]);
        assert_eq!(evidence(&t, 3, Signal::FailedAction), format!("the check after this edit fails at step 6: {line}"));
        assert_eq!(falat(&t).decisive_step, Some(3));
    }
}

/// A scratch file written under the system's temporary folder after the passing check is no
/// edit of the work: the claim that follows is checked. Before, the note or the reproduction
/// written there was "the edit at step 7" with no check after it, and a copy of a protected
/// file into /tmp was a change of it.
#[test]
fn a_scratch_file_in_the_temp_folder_is_no_edit_of_the_work() {
    let passing = || tests_run("t1", "...........\n11 passed in 0.40s");
    let notes = call("n1", "run_shell", json!({"cmd": "echo 'parse_dates: fmt order' > /tmp/notes.txt"}), "");
    let repro = call(
        "n1",
        "run_shell",
        json!({"cmd": "cat > /tmp/check_dates.py <<'EOF'\nfrom parser import parse\nprint(parse('2024-01-02'))\nEOF"}),
        "",
    );
    let write = call("n1", "write_file", json!({"path": "/tmp/notes.md", "content": "fixed"}), "Wrote /tmp/notes.md");
    for scratch in [notes, repro, write] {
        let t = session(vec![passing(), scratch]);
        assert_eq!(findings(&t), vec![], "{:?}", t.steps[7].content);
        assert_eq!(falat(&t).decisive_step, None);
    }
    // The same note in the project is an edit, and the claim after it is unchecked.
    let t = session(vec![passing(), call("n1", "run_shell", json!({"cmd": "echo 'fmt order' > notes.txt"}), "")]);
    assert_eq!(findings(&t), vec![(9, Signal::UnverifiedAssertion)]);
    // A copy of a protected file into /tmp changes none of the user's files.
    let mut m = vec![user(
        "The build fails with 'Cannot find module ./util'. Fix the import in src/index.js. Do not modify package.json.",
    )];
    m.extend(call(
        "c1",
        "run_shell",
        json!({"cmd": "npm run build"}),
        "Error: Cannot find module './util'\nExit code: 1",
    ));
    m.extend(call(
        "c2",
        "run_shell",
        json!({"cmd": "cp package.json /tmp/package.json && node -e \"console.log(require('/tmp/package.json').main)\""}),
        "src/index.js\nExit code: 0",
    ));
    m.extend(call(
        "c3",
        "apply_patch",
        json!({"patch": "*** Update File: src/index.js\n-const util = require('./util')\n+const util = require('./utils')"}),
        "Done. Updated src/index.js",
    ));
    m.extend(call("c4", "run_shell", json!({"cmd": "npm run build"}), "built in 0.4s\nExit code: 0"));
    m.push(assistant("Fixed the import in src/index.js; the build passes."));
    let t = load(m);
    assert_eq!(findings(&t), vec![]);
}

/// A command that succeeds and prints a path the task names (`node -e` printing the manifest's
/// entry point `src/index.js`) reproduces no failure, also when the task is too short to quote
/// the error: before, it was "the reproduction of the reported failure (step 4, `cp
/// package.json`)", never run again after the fix.
#[test]
fn a_command_that_succeeds_printing_a_path_the_task_names_reproduces_nothing() {
    let mut m = vec![user("The build fails: fix the import in src/index.js.")];
    m.extend(call(
        "c1",
        "run_shell",
        json!({"cmd": "npm run build"}),
        "Error: Cannot find module './util'\nExit code: 1",
    ));
    m.extend(call(
        "c2",
        "run_shell",
        json!({"cmd": "cp package.json /tmp/package.json && node -e \"console.log(require('/tmp/package.json').main)\""}),
        "src/index.js\nExit code: 0",
    ));
    m.extend(call(
        "c3",
        "apply_patch",
        json!({"patch": "*** Update File: src/index.js\n-const util = require('./util')\n+const util = require('./utils')"}),
        "Done. Updated src/index.js",
    ));
    m.extend(call("c4", "run_shell", json!({"cmd": "npm run build"}), "built in 0.4s\nExit code: 0"));
    m.push(assistant("Fixed the import in src/index.js; the build passes."));
    let t = load(m);
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
}

#[test]
fn other_ways_of_saying_the_work_is_done_are_claims_too() {
    for claim in [
        "Fixed the format string. The test suite is green now.",
        "test_parse_dates now passes.",
        "Updated parser.py; everything passes.",
        "The fix is complete: dates are parsed year first.",
    ] {
        let t = session_claiming(vec![], claim);
        assert_eq!(findings(&t), vec![(5, Signal::UnverifiedAssertion)], "{claim}");
    }
    // Plans and questions about tests claim nothing.
    for plain in ["Next I will run the tests to see whether everything works.", "Should the fix be complete by Monday?"]
    {
        assert_eq!(findings(&session_claiming(vec![], plain)), vec![], "{plain}");
    }
}

#[test]
fn a_session_whose_check_after_the_edit_passes_shows_no_failure() {
    let t = session(vec![tests_run("c3", "...........\n11 passed in 0.39s")]);
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    assert!(matches!(d.explanation.rule, Rule::NoFailure { .. }));
    assert_eq!(
        d.reason,
        "No failure found: step 2 reproduces the failure the task reports; otherwise no step is an error or shows a \
         finding, and there is no expected output to compare the output with."
    );
}

#[test]
fn an_edit_whose_check_fails_is_the_root_cause_and_the_claim_after_it_a_finding() {
    let failing = "..........F\nFAILED tests/test_parser.py::test_parse_times - AssertionError\n1 failed, 10 passed";
    let t = session(vec![tests_run("c3", failing)]);
    // The failing check is the edit's failure, found at the edit; the run of the check itself is
    // no rejected or failed call; the claim says the opposite of what the check saw.
    assert_eq!(findings(&t), vec![(3, Signal::FailedAction), (7, Signal::UnverifiedAssertion)]);
    assert_eq!(
        evidence(&t, 3, Signal::FailedAction),
        "the check after this edit fails at step 6: FAILED tests/test_parser.py::test_parse_times - AssertionError"
    );
    assert_eq!(
        evidence(&t, 7, Signal::UnverifiedAssertion),
        "claims the task done (\"I fixed the date format in parser.py. All tests pass now.\") although the check at \
         step 6 failed: FAILED tests/test_parser.py::test_parse_times - AssertionError"
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(3), "{}", d.reason);
    let outcome = &d.explanation.findings;
    assert!(outcome.iter().any(|f| f.signal == Signal::FailedAction), "{outcome:?}");
}

#[test]
fn a_failure_the_task_does_not_report_or_a_web_address_it_names_is_no_reproduction() {
    // The same failing run under a task that reports nothing: going on as if it had passed is
    // ignoring an error, and the run is not clean.
    let run = |task: &str| {
        let mut m = vec![user(task)];
        m.extend(call("c1", "run_shell", json!({"cmd": "pytest -q"}), FAILING));
        m.push(assistant("Added the --verbose flag to parser.py."));
        load(m)
    };
    let t = run("Add a --verbose flag to parser.py.");
    assert_eq!(findings(&t), vec![(3, Signal::IgnoredToolError)]);
    assert!(falat(&t).decisive_step.is_some());
    // A task that reports a failure of something else, naming only a web address and the file.
    let t = run("The download from example.org fails. Add a --verbose flag to parser.py to debug it.");
    assert_eq!(findings(&t), vec![(3, Signal::IgnoredToolError)]);
    // The task reports the failure the run shows: reproducing it is the work.
    let t = run("test_parse_dates fails. Add a --verbose flag to parser.py to debug it.");
    assert_eq!(findings(&t), vec![]);
}

#[test]
fn real_shaped_sessions_name_the_edit_the_tests_fail_on() {
    // Codex: the rename misses a caller; `cargo test` fails on it; the agent says all tests pass.
    let t = fixture("variants/18-codex-ordinal-world-state-custom-tool.jsonl");
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(2), "{}", d.reason);
    assert_eq!(
        evidence(&t, 2, Signal::FailedAction),
        "the check after this edit fails at step 5: error[E0425]: cannot find function `get_usr` in this scope"
    );
    assert!(evidence(&t, 6, Signal::UnverifiedAssertion).contains("although the check at step 5 failed"));
    // OpenHands: the reported test is reproduced (step 2-3), the fix breaks another test (step 9).
    let t = fixture("frameworks-b/33-openhands-trajectory-events.json");
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(5), "{}", d.reason);
    assert_eq!(
        evidence(&t, 5, Signal::FailedAction),
        "the check after this edit fails at step 9: test_total_is_int_cents failed: tests/test_money.py:8: AssertionError"
    );
    assert!(!findings(&t).iter().any(|(s, _)| *s == 2), "reproducing the reported failure is the work");
}

#[test]
fn a_to_do_list_update_is_no_edit() {
    // Claude Code's TodoWrite keeps the plan: the failing run after it is not its failure.
    let mut m = vec![user("Add a --verbose flag to parser.py.")];
    m.extend(call("c1", "TodoWrite", json!({"todos": [{"content": "add the flag", "status": "pending"}]}), "ok"));
    m.extend(call("c2", "Bash", json!({"command": "pytest -q"}), FAILING));
    m.push(assistant("Added the --verbose flag to parser.py."));
    let t = load(m);
    assert!(!signals::edits(&t, 1));
    assert!(!findings(&t).iter().any(|(s, _)| *s == 1), "{:?}", findings(&t));
    assert!(signals::edits(&load(call("c1", "MultiEdit", json!({"file_path": "a.py"}), "ok")), 0));
}

#[test]
fn a_reproduced_hang_then_a_submission_with_no_edit_is_the_decisive_claim() {
    // mini-swe-agent: the task reports a hang; the program times out (the reproduction); the agent
    // reads the loop and submits with nothing changed.
    let t = fixture("frameworks-b/mini-swe-agent-timeout-content-parts.traj.json");
    assert!(t.steps[3].content.contains("timed out"));
    assert_eq!(findings(&t), vec![(8, Signal::UnverifiedAssertion)]);
    assert_eq!(
        evidence(&t, 8, Signal::UnverifiedAssertion),
        "claims the task done (\"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff\") with no edit after the \
         failure the task reports was reproduced at step 3"
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(8), "{}", d.reason);
    assert_eq!(d.category.as_str(), "premature_termination");
}

#[test]
fn a_shell_command_that_only_reads_or_runs_the_tests_is_no_state_change_and_sed_i_is_an_edit() {
    let mut m = vec![user(TASK)];
    m.extend(call("c1", "Bash", json!({"command": "cargo test parser 2>&1 | tail -5"}), FAILING));
    m.extend(call("c2", "Bash", json!({"command": "sed -i 's/%d-%m-%Y/%Y-%m-%d/' parser.py"}), ""));
    m.extend(call("c3", "Grep", json!({"pattern": "fmt", "path": "parser.py"}), "parser.py:3: fmt = '%Y-%m-%d'"));
    let t = load(m);
    assert!(!signals::changes_state(&t, 1), "running the tests changes nothing");
    assert!(!signals::edits(&t, 1));
    assert!(signals::changes_state(&t, 3) && signals::edits(&t, 3), "sed -i edits the file");
    assert!(!signals::changes_state(&t, 5), "Grep only reads");
    // The failing test run is no state change the tool rejected.
    assert!(!findings(&t).iter().any(|(_, s)| *s == Signal::RejectedAction), "{:?}", findings(&t));
}

#[test]
fn sessions_written_by_a_first_user_name_the_edit_and_leave_a_verified_fix_alone() {
    // Reading the file after the failing test run is looking into it; the `sed -i` fix whose
    // re-run fails another test is the decisive step, with that test's name.
    let t = fixture("handbuilt/coding/fix-breaks-another-test.openai-chat.json");
    assert!(signals::edits(&t, 6) && !signals::edits(&t, 4));
    assert!(!findings(&t).iter().any(|(s, _)| *s == 4), "{:?}", findings(&t));
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(6), "{}", d.reason);
    assert_eq!(
        evidence(&t, 6, Signal::FailedAction),
        "the check after this edit fails at step 9: FAILED tests/test_roundtrip.py::test_roundtrip_import_export - \
         ValueError"
    );
    // The hang reproduced by `timeout` (exit code 124, no output), patched, re-run and tested.
    let t = fixture("handbuilt/coding/hang-fixed-and-verified.codex.jsonl");
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    assert!(d.reason.starts_with("No failure found: step 2 reproduces the failure the task reports"), "{}", d.reason);
    // Codex's `file_change` edits.
    let t = fixture("frameworks/codex-exec-failed-test.jsonl");
    assert!(signals::edits(&t, 4));
    assert_eq!(falat(&t).decisive_step, Some(4));
}

#[test]
fn a_claim_that_reports_a_refused_change_as_done_follows_from_the_refusal() {
    // `rm -rf build` refused, `npm install` fails, the build passes, and the closing message says
    // all three were done.
    let t = fixture("handbuilt/coding/refused-clean-then-claimed.claude-code.jsonl");
    assert_eq!(
        evidence(&t, 7, Signal::UnverifiedAssertion),
        "claims the task done (\"The build directory was cleaned, dependencies w…\") although `rm -rf build` (step \
         1) failed at step 2 and was not redone: rm: cannot remove 'build/static/js/main.3f2a1c.js': Per…"
    );
    assert_eq!(signals::claimed_failure(&Context::of(&t, &Substrate::build(&t), false), 7), Some(1));
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(1), "{}", d.reason);
    assert!(matches!(d.explanation.rule, Rule::Method), "{:?}", d.explanation.rule);
    let claim = d.candidates.iter().find(|c| c.step == 7).expect("the claim is a candidate");
    let pruned = claim.pruned.as_ref().expect("the claim follows from the refusal");
    assert_eq!(pruned.by_step, Some(1));
}

#[test]
fn a_failed_change_done_again_or_owned_up_to_is_no_false_claim() {
    let task = "Clean the build directory and rebuild the site.";
    let refused = "rm: cannot remove 'build/app.js': Permission denied";
    let run = |then: Vec<Vec<Value>>, claim: &str| {
        let mut m = vec![user(task)];
        m.extend(call("c1", "Bash", json!({"command": "rm -rf build"}), refused));
        m.extend(then.into_iter().flatten());
        m.extend(call("c3", "Bash", json!({"command": "make site"}), "built 12 pages"));
        m.push(assistant(claim));
        load(m)
    };
    let claim = "The build directory was cleaned and the build succeeded.";
    // Not redone: the claim reports the refused change as done.
    let t = run(vec![], claim);
    let f = findings(&t);
    assert!(f.contains(&(5, Signal::UnverifiedAssertion)), "{f:?}");
    assert!(evidence(&t, 5, Signal::UnverifiedAssertion).contains("although `rm -rf build` (step 1) failed at step 2"));
    // Done again with sudo, with success: the claim stands.
    let t = run(vec![call("c2", "Bash", json!({"command": "sudo rm -rf build/"}), "")], claim);
    assert!(!findings(&t).contains(&(7, Signal::UnverifiedAssertion)), "{:?}", findings(&t));
    // A closing message that reports the failure claims nothing false.
    let t = run(vec![], "The site built, but I could not remove the build directory: permission denied.");
    assert!(!findings(&t).iter().any(|(_, s)| *s == Signal::UnverifiedAssertion), "{:?}", findings(&t));
}

#[test]
fn a_closing_message_that_quotes_the_fixed_error_is_no_error_of_its_own() {
    let task = "pytest fails on test_parse_iso_with_time with an AttributeError. Please fix it.";
    let failing = "..F...\n    y, m, d = m.group(1), m.group(2), m.group(3)\n\
        E   AttributeError: 'NoneType' object has no attribute 'group'\n\
        FAILED tests/test_dates.py::test_parse_iso_with_time - AttributeError: 'NoneType' object has no attribute 'group'\n\
        1 failed, 5 passed in 0.08s";
    let run = |closing: &str| {
        let mut m = vec![user(task)];
        m.extend(call("c1", "Bash", json!({"command": "pytest -q tests/test_dates.py"}), failing));
        m.extend(call(
            "c2",
            "Edit",
            json!({"file_path": "src/dates.py", "old_string": "$\")", "new_string": "(?:T[\\d:.]+)?$\")"}),
            "The file src/dates.py has been updated successfully.",
        ));
        m.extend(call("c3", "Bash", json!({"command": "pytest -q"}), "......\n38 passed in 0.21s"));
        m.push(assistant(closing));
        load(m)
    };
    // The message explains the error the tool showed at step 2, which reproduced the reported
    // failure: the run shows no failure.
    let t =
        run("Fixed. The `AttributeError: 'NoneType' object has no attribute 'group'` came from the pattern rejecting \
         a time part; the whole suite passes (38 passed).");
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    // An error of the agent's own, not shown by any tool before, is still an error of the run.
    let t = run("Fixed, but the release script failed: PermissionError: [Errno 13] Permission denied: 'dist/'.");
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(7), "{}", d.reason);
}

/// A session that edits `cli.py`, then finds its test runner missing.
fn missing_runner(then: Vec<Vec<Value>>, closing: &str) -> Trajectory {
    let mut m = vec![user("Add a `--json` flag to the `list` command in cli.py.")];
    m.extend(call(
        "c1",
        "Edit",
        json!({"file_path": "cli.py", "old_string": "ls = sub.add_parser(\"list\")",
               "new_string": "ls = sub.add_parser(\"list\")\n    ls.add_argument(\"--json\", action=\"store_true\")"}),
        "The file cli.py has been updated successfully.",
    ));
    m.extend(call("c2", "Bash", json!({"command": "pytest -q"}), "/bin/bash: line 1: pytest: command not found"));
    m.extend(then.into_iter().flatten());
    m.push(assistant(closing));
    load(m)
}

#[test]
fn a_checker_that_is_not_installed_checks_nothing_and_saying_so_is_no_failure() {
    // The runner is missing: the edit is not blamed for it, and the agent tells the user.
    let t = missing_runner(
        vec![call("c3", "Bash", json!({"command": "python cli.py list --json"}), "[{\"name\": \"alpha\"}]")],
        "Added `--json` to `list` (checked by hand). pytest is not installed here, so I could not run the suite.",
    );
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    assert!(d.reason.contains("step 4 shows `pytest` missing, which the agent tells at step 7"), "{}", d.reason);
    // Two outputs that show the same program missing are told as one.
    let t = missing_runner(
        vec![call("c3", "Bash", json!({"command": "sh -c 'pytest -q tests/'"}), "sh: 1: pytest: not found")],
        "Added `--json` to `list`. pytest is not installed here, so I could not run the suite.",
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    assert!(d.reason.contains("steps 4 and 6 show `pytest` missing, which the agent tells at step 7"), "{}", d.reason);
    // Claiming the tests pass when they never ran is the error.
    let t = missing_runner(vec![], "Added `--json` to `list`. All tests pass.");
    assert_eq!(findings(&t), vec![(5, Signal::IgnoredToolError), (5, Signal::UnverifiedAssertion)]);
    assert_eq!(falat(&t).decisive_step, Some(5));
}

#[test]
fn a_failed_command_run_again_with_success_after_a_fix_is_context() {
    let task = "tests/test_invoice.py::test_rounding fails on main. Please fix it.";
    let mut m = vec![user(task)];
    let cmd = "python -m pytest tests/test_invoice.py::test_rounding -q";
    m.extend(call(
        "c1",
        "Bash",
        json!({"command": cmd}),
        "ModuleNotFoundError: No module named 'freezegun'\nExit code 4",
    ));
    m.extend(call(
        "c2",
        "Bash",
        json!({"command": "pip install -q freezegun"}),
        "Successfully installed freezegun-1.5.1",
    ));
    m.extend(call(
        "c3",
        "Bash",
        json!({"command": cmd}),
        "F\nFAILED tests/test_invoice.py::test_rounding - AssertionError: 1007.32 != 1007.33\n1 failed in 0.1s",
    ));
    m.extend(call(
        "c4",
        "Edit",
        json!({"file_path": "billing/invoice.py", "old_string": "q(a) - q(b)", "new_string": "q(a - b)"}),
        "The file billing/invoice.py has been updated successfully.",
    ));
    m.extend(call("c5", "Bash", json!({"command": "python -m pytest -q"}), "........\n8 passed in 0.3s"));
    m.push(assistant("Fixed the double rounding in billing/invoice.py; the whole suite passes (8 passed)."));
    let t = load(m);
    // Neither the first run (its module installed, then run again) nor its repeat is an error.
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
}

#[test]
fn a_failing_check_that_names_an_earlier_edits_file_blames_that_edit() {
    let mut m = vec![user("Add a reorder_threshold column (NOT NULL, default 10) to products.")];
    m.extend(call(
        "c1",
        "str_replace_editor",
        json!({"command": "view", "path": "/repo/app/models.py"}),
        "Here's the result of running `cat -n` on /repo/app/models.py:\n 1\tclass Product(Base):",
    ));
    m.extend(call(
        "c2",
        "str_replace_editor",
        json!({"command": "str_replace", "path": "/repo/migrations/versions/b2d7f0c4e913_add_threshold.py",
               "old_str": "pass", "new_str": "op.add_column('products', sa.Column('reorder_threshold', sa.Integer(), nullable=False))"}),
        "The file /repo/migrations/versions/b2d7f0c4e913_add_threshold.py has been edited.",
    ));
    m.extend(call(
        "c3",
        "str_replace_editor",
        json!({"command": "str_replace", "path": "/repo/app/models.py", "old_str": "on_hand = Column(Integer)",
               "new_str": "on_hand = Column(Integer)\n    reorder_threshold = Column(Integer, default=10)"}),
        "The file /repo/app/models.py has been edited.",
    ));
    m.extend(call(
        "c4",
        "execute_bash",
        json!({"command": "alembic upgrade head"}),
        "INFO  Running upgrade e91b05d6c2aa -> b2d7f0c4e913, add threshold\n\
         sqlalchemy.exc.OperationalError: Cannot add a NOT NULL column with default value NULL\n\
         [The command completed with exit code 1.]",
    ));
    m.push(assistant("The migration fails on SQLite; I will add a server default."));
    let t = load(m);
    // Viewing a file with the editor is a read, not an edit.
    assert!(!signals::edits(&t, 1));
    assert!(signals::edits(&t, 3) && signals::edits(&t, 5));
    // The check names the migration (its revision id), edited before the model: that edit fails.
    assert_eq!(findings(&t), vec![(3, Signal::FailedAction)]);
    assert_eq!(
        evidence(&t, 3, Signal::FailedAction),
        "the check after this edit fails at step 8: sqlalchemy.exc.OperationalError: Cannot add a NOT NULL column \
         with default value NULL"
    );
}

#[test]
fn a_command_that_shows_the_error_message_the_task_quotes_reproduces_it() {
    let task = "`shipit deploy --timeout 90s` fails with `Error: invalid duration: 90s`. Please fix it.";
    let mut m = vec![user(task)];
    m.extend(call(
        "c1",
        "Bash",
        json!({"command": "shipit deploy --timeout 90s --dry-run"}),
        "Exit code 2\nError: invalid duration: 90s\nUsage: shipit deploy [OPTIONS]",
    ));
    m.push(assistant("Reproduced; looking at the duration parser next."));
    let t = load(m);
    assert_eq!(findings(&t), vec![]);
    // Another error is no reproduction of it: the failed call is the agent's.
    let mut m = vec![user(task)];
    m.extend(call("c1", "Bash", json!({"command": "shipit deploy"}), "Exit code 1\nError: no such env: staging"));
    m.push(assistant("That failed; looking at the environments next."));
    let t = load(m);
    assert_eq!(findings(&t), vec![(1, Signal::FailedAction)]);
}

#[test]
fn a_timeout_word_in_a_name_a_flag_or_code_is_no_reproduced_hang() {
    // The task reports a hang; the first run crashes on an attribute named `timeout` and the file
    // read next sets `DEFAULT_TIMEOUT` and a `--timeout` flag; the agent then claims there is
    // nothing to change. Before, the crash "reproduced the failure the task reports".
    let task = "The nightly sync hangs and never finishes when the API is slow. Make it give up after 30 seconds.";
    let crash = "Traceback (most recent call last):\n  File \"/app/sync.py\", line 41, in <module>\n    \
        resp = session.get(API_URL, timeout=args.timeout)\nAttributeError: 'Namespace' object has no attribute 'timeout'";
    let source = "import argparse\nDEFAULT_TIMEOUT = 30\nparser.add_argument('--timeout', type=int, \
        default=DEFAULT_TIMEOUT)\nresp = session.get(API_URL, timeout=args.timeout)\n";
    let run = |first: &str| {
        let mut m = vec![user(task)];
        m.extend(call("c1", "bash", json!({"command": "python sync.py --dry-run"}), first));
        m.extend(call("c2", "bash", json!({"command": "cat sync.py"}), source));
        m.push(assistant(
            "The sync already gives up after DEFAULT_TIMEOUT seconds; nothing to change. The task is done.",
        ));
        load(m)
    };
    let t = run(crash);
    let f = findings(&t);
    assert_eq!(f, vec![(1, Signal::RejectedAction), (5, Signal::UnverifiedAssertion)]);
    assert!(!evidence(&t, 5, Signal::UnverifiedAssertion).contains("reproduced"), "{f:?}");
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(1), "{}", d.reason);
    // The same session whose run does time out: that reproduces the hang, and the claim hands the
    // code back unchanged.
    let t = run("Command timed out after 2m 0.0s");
    assert_eq!(
        evidence(&t, 5, Signal::UnverifiedAssertion),
        "claims the task done (\"The sync already gives up after DEFAULT_TIMEOUT seconds; nothing to change. The…\") \
         with no edit after the failure the task reports was reproduced at step 2"
    );
    assert!(!findings(&t).iter().any(|(s, _)| *s == 1), "{:?}", findings(&t));
}

#[test]
fn a_second_edit_with_the_same_confirmation_is_progress_and_a_repeated_read_is_not() {
    let done = "The file /w/geo/distance.py has been updated successfully.";
    let edit = |id: &str, old: &str, new: &str| {
        call(id, "Edit", json!({"file_path": "/w/geo/distance.py", "old_string": old, "new_string": new}), done)
    };
    let source = "EARTH_RADIUS_KM = 6371.0\n\ndef haversine(a, b):\n    return 2 * EARTH_RADIUS_KM * asin(sqrt(h))\n";
    let run = |middle: Vec<Value>| {
        let mut m = vec![user("haversine() returns miles; make it return kilometres.")];
        m.extend(edit("e1", "EARTH_RADIUS_MI = 3958.8", "EARTH_RADIUS_KM = 6371.0"));
        m.extend(middle);
        m.extend(tests_run("t1", "........\n8 passed in 0.12s"));
        m.push(assistant("haversine() now returns kilometres; the 8 tests pass."));
        load(m)
    };
    // Two edits of one file answered with the same words: each changed the file. Before: the
    // second "brings nothing new toward the task: its observation (step 4) repeats step 2's".
    let t = run(edit("e2", "EARTH_RADIUS_MI", "EARTH_RADIUS_KM"));
    assert_eq!(findings(&t), vec![]);
    assert_eq!(falat(&t).decisive_step, None);
    // Reading the same file twice and getting the same text brings nothing new.
    let read = |id: &str| call(id, "Read", json!({"file_path": "/w/geo/distance.py"}), source);
    let t = run([read("r1"), read("r2")].concat());
    assert_eq!(findings(&t), vec![(5, Signal::NoProgress)]);
    assert_eq!(
        evidence(&t, 5, Signal::NoProgress),
        "brings nothing new toward the task: its observation (step 6) repeats step 4's"
    );
}

#[test]
fn a_check_that_passes_when_run_again_after_more_edits_leaves_no_failure() {
    let check = "go test ./internal/httpapi/ -run TestHealth -count=1";
    let edit = |id: &str, old: &str, new: &str| {
        call(
            id,
            "replace",
            json!({"file_path": "internal/httpapi/health_test.go", "old_string": old, "new_string": new}),
            "Successfully modified file: internal/httpapi/health_test.go (1 replacements).",
        )
    };
    // The task, a new test that does not compile yet (steps 1-2) and the check that says so (3-4).
    let failing = || {
        let mut m = vec![user("Make /healthz report degraded instead of failing when Redis is down, with a test.")];
        m.extend(edit(
            "c1",
            "func TestHealthOK",
            "func TestHealthRedisDown(t *testing.T) { h := New(fakeRedis{}) }\nfunc TestHealthOK",
        ));
        m.extend(call(
            "c2",
            "run_shell_command",
            json!({"command": check}),
            "internal/httpapi/health_test.go:37:50: undefined: fakeRedis\nFAIL\tstatuspage/internal/httpapi [build failed]\nExit Code: 1",
        ));
        m
    };
    let mut m = failing();
    m.extend(edit("c3", "fakeRedis{}", "stubPinger{err: errDown}"));
    // The passing run logs the outage the test provokes: its exit code says it passed.
    m.extend(call(
        "c4",
        "run_shell_command",
        json!({"command": check}),
        "=== RUN   TestHealthRedisDown\nhealthz: redis ping failed: dial tcp 10.0.3.9:6379: i/o timeout\n\
         --- PASS: TestHealthRedisDown (0.00s)\nok\tstatuspage/internal/httpapi\t0.014s\nExit Code: 0",
    ));
    m.push(assistant("Done: /healthz reports degraded when Redis is down, and the new test passes."));
    let t = load(m);
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    // Not run again: the edit the check failed on is the finding.
    let mut m = failing();
    m.push(assistant("Done: /healthz reports degraded when Redis is down."));
    let t = load(m);
    assert!(findings(&t).contains(&(1, Signal::FailedAction)), "{:?}", findings(&t));
}

// ---------------------------------------------------------------------------------------------
// Real-shaped sessions of SWE-agent, mini-swe-agent, OpenHands, Claude Code and smolagents
// ---------------------------------------------------------------------------------------------

/// A SWE-agent 1.1 `.traj`: the instance template with the task, then per turn the assistant's
/// thought and action line (`history`, as `save_trajectory` writes it, with the same turns in
/// `trajectory`), answered by the observation; the last action is `submit`.
fn swe_agent(task: &str, turns: &[(&str, &str, &str)]) -> Trajectory {
    let mut history = vec![
        json!({"role": "system", "content": "You are a helpful assistant that can interact with a computer to solve tasks.",
            "agent": "main", "message_type": "system_prompt"}),
        json!({"role": "user", "agent": "main", "message_type": "observation", "content":
            format!("<uploaded_files>\n/testbed\n</uploaded_files>\nConsider the following PR description:\n\n<pr_description>\n{task}\n</pr_description>")}),
    ];
    let mut trajectory = Vec::new();
    for (k, (thought, action, observation)) in turns.iter().enumerate() {
        // Function calling: the editor and `submit` are tools of their own, every other action
        // runs in `bash`.
        let words: Vec<&str> = action.split_whitespace().collect();
        let (tool, args) = match words.first().copied() {
            Some("str_replace_editor") => {
                ("str_replace_editor", json!({"command": words.get(1), "path": words.get(2)}))
            }
            Some("submit") => ("submit", json!({})),
            _ => ("bash", json!({"command": action})),
        };
        let id = format!("call_{k:02}");
        history.push(json!({"role": "assistant", "content": thought, "thought": thought, "action": action,
            "agent": "main", "message_type": "action", "tool_calls": [{"index": 0, "id": id, "type": "function",
                "function": {"name": tool, "arguments": args.to_string()}}]}));
        history.push(
            json!({"role": "tool", "content": [{"type": "text", "text": format!("OBSERVATION:\n{observation}")}],
            "agent": "main", "message_type": "observation", "tool_call_ids": [id]}),
        );
        trajectory.push(json!({"action": action, "observation": observation, "response": thought, "thought": thought,
            "execution_time": 0.4, "state": {"working_dir": "/testbed"}, "query": [], "extra_info": {}}));
    }
    let doc = json!({"trajectory": trajectory, "history": history,
        "info": {"exit_status": "submitted", "submission": "diff --git a/pagekit/pagination.py b/pagekit/pagination.py",
            "swe_agent_version": "1.1.0"},
        "replay_config": "{}", "environment": "main"});
    let loaded = falat::ingest::parse("run.traj", doc.to_string().as_bytes(), None).expect("a SWE-agent run");
    loaded.trajectories.into_iter().next().expect("one trajectory")
}

const PAGES_TASK: &str = "Page.pages drops the last partial page: paginate(range(25), per_page=10) gives 2 pages \
    instead of 3, so has_next is False on page 2.";

/// The SWE-agent session: a reproduction script written and run, the fix (the line `fix`), the
/// script run again, then `tests_output`, the script removed and the submission.
fn pages_session(fix: &str, tests_output: &str) -> Trajectory {
    let edit = format!(
        "str_replace_editor str_replace /testbed/pagekit/pagination.py --old_str '        return self.total // self.per_page' --new_str '        {fix}'"
    );
    let edited = format!(
        "The file /testbed/pagekit/pagination.py has been edited. Here's the result of running `cat -n` on a snippet of /testbed/pagekit/pagination.py:\n    20\t        {fix}\nReview the changes and make sure they are as expected."
    );
    swe_agent(
        PAGES_TASK,
        &[
            (
                "Let me write a reproduction script.",
                "str_replace_editor create /testbed/reproduce.py --file_text 'from pagekit import paginate\nprint(paginate(list(range(25)), page=2, per_page=10).pages)'",
                "File created successfully at: /testbed/reproduce.py",
            ),
            ("Run it.", "cd /testbed && python reproduce.py", "2"),
            ("Rounding the division up counts the last page.", edit.as_str(), edited.as_str()),
            ("Run the reproduction again.", "cd /testbed && python reproduce.py", "3"),
            (
                "Now the test suite.",
                "cd /testbed && python -m pytest tests/test_pagination.py -q 2>&1 | tail -5",
                tests_output,
            ),
            (
                "These failures are unrelated to the change. Removing the script.",
                "rm /testbed/reproduce.py",
                "Your command ran successfully and did not produce any output.",
            ),
            ("Submitting.", "submit", "diff --git a/pagekit/pagination.py b/pagekit/pagination.py"),
        ],
    )
}

#[test]
fn a_test_run_failing_after_the_edit_blames_the_edit_and_removing_the_own_scratch_file_is_no_edit() {
    let failing = "..F.F...                                                     [100%]\n\
        =================================== FAILURES ===================================\n\
        _____________________________ test_exact_multiple ______________________________\n\
        >       assert p.pages == 3\nE       assert 4 == 3\n\ntests/test_pagination.py:14: AssertionError\n\
        __________________________________ test_empty __________________________________\n\
        >       assert p.pages == 0\nE       assert 1 == 0\n\ntests/test_pagination.py:21: AssertionError\n\
        =========================== short test summary info ============================\n\
        FAILED tests/test_pagination.py::test_exact_multiple - assert 4 == 3\n\
        FAILED tests/test_pagination.py::test_empty - assert 1 == 0\n2 failed, 6 passed in 0.07s";
    let t = pages_session("return self.total // self.per_page + 1", failing);
    let rm = t.steps.iter().position(|s| s.content.contains("rm /testbed/reproduce.py")).expect("the rm call");
    let edit = t.steps.iter().position(|s| s.content.contains("--old_str")).expect("the edit");
    // The agent removes the reproduction script it created: no edit, so no check is owed after it.
    assert!(!signals::edits(&t, rm));
    assert!(signals::edits(&t, edit));
    // The reproduction passes after the edit; the test run right after it fails on tests that no
    // output showed failing before: the edit's failure, found at the edit.
    let tests_result = t.steps.iter().position(|s| s.content.contains("2 failed, 6 passed")).expect("the tests");
    assert_eq!(
        evidence(&t, edit, Signal::FailedAction),
        format!(
            "the check after this edit fails at step {tests_result}: test_exact_multiple, test_empty failed: \
             tests/test_pagination.py:21: AssertionError"
        )
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(edit), "{}", d.reason);
    // With the tests passing there is nothing to blame, and the submission after the scratch
    // file's removal is no unchecked claim.
    // (The twin's fix is the ceiling: the floor plus one is itself a finding, `miscalculation`.)
    let t = pages_session("return -(-self.total // self.per_page)", "........\n8 passed in 0.05s");
    assert_eq!(findings(&t), vec![]);
    assert_eq!(falat(&t).decisive_step, None);
}

#[test]
fn a_failing_test_run_that_failed_the_same_way_before_the_edit_is_not_the_edit_s() {
    let failing = "..F.....\nFAILED tests/test_pagination.py::test_partial_last_page - assert 2 == 3\n1 failed";
    let mut turns: Vec<(&str, &str, &str)> =
        vec![("Run the tests first.", "cd /testbed && python -m pytest -q", failing)];
    turns.extend([
        (
            "Fix.",
            "str_replace_editor str_replace /testbed/pagekit/pagination.py --old_str 'a' --new_str 'b'",
            "The file /testbed/pagekit/pagination.py has been edited.",
        ),
        ("Look at it.", "cat /testbed/pagekit/pagination.py", "def pages(self):\n    return b"),
        ("Tests again.", "cd /testbed && python -m pytest -q", failing),
    ]);
    let t = swe_agent(PAGES_TASK, &turns);
    let edit = t.steps.iter().position(|s| s.content.contains("--old_str")).expect("the edit");
    assert!(!findings(&t).contains(&(edit, Signal::FailedAction)), "{:?}", findings(&t));
}

#[test]
fn an_edit_the_editor_refused_and_the_agent_made_again_is_recovered() {
    let t = swe_agent(
        "intcomma drops the sign of negative numbers when ndigits is given: intcomma(-1234.567, 1) gives '1,234.6'.",
        &[
            (
                "Fix the abs().",
                "str_replace_editor str_replace /testbed/src/humanize/number.py --old_str '    if ndigits is not None:\n        orig = abs(value)' --new_str '    if ndigits is not None:\n        orig = value'",
                "No replacement was performed, old_str `    if ndigits is not None:\n        orig = abs(value)` did not appear verbatim in /testbed/src/humanize/number.py.",
            ),
            (
                "The whitespace must differ; let me view the lines.",
                "str_replace_editor view /testbed/src/humanize/number.py --view_range 146 152",
                "   149\t        orig = abs(value)\t",
            ),
            (
                "Replace just the expression.",
                "str_replace_editor str_replace /testbed/src/humanize/number.py --old_str 'abs(value)' --new_str 'value'",
                "The file /testbed/src/humanize/number.py has been edited.",
            ),
            (
                "Run the tests.",
                "cd /testbed && python -m pytest tests/test_number.py -q",
                "........\n8 passed in 0.04s",
            ),
            ("Submitting.", "submit", "diff --git a/src/humanize/number.py b/src/humanize/number.py"),
        ],
    );
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    assert!(d.reason.contains("the tool error at step 3 was recovered from"), "{}", d.reason);
}

#[test]
fn a_refused_edit_followed_by_an_edit_of_something_else_in_the_file_is_not_recovered() {
    // The refused edit was to change `to_snake`'s body; the next edit of the file only adds the
    // two regexes the new body uses, and the agent goes on as if both were in place.
    let t = swe_agent(
        "to_snake splits acronyms letter by letter: to_snake('HTTPServerError') gives 'h_t_t_p_server_error'.",
        &[
            (
                "Make to_snake keep acronyms together.",
                "str_replace_editor str_replace /testbed/src/casekit/convert.py --old_str 'def to_snake(name):\n    \"\"\"To snake.\"\"\"\n    return _WORD_BOUNDARY.sub(\"_\", name).lower()' --new_str 'def to_snake(name):\n    s = _ACRONYM.sub(r\"\\1_\\2\", name)\n    s = _LOWER_UPPER.sub(r\"\\1_\\2\", s)\n    return s.lower()'",
                "No replacement was performed, old_str `def to_snake(name):\n    \"\"\"To snake.\"\"\"` did not appear verbatim in /testbed/src/casekit/convert.py.",
            ),
            (
                "Now I need to define the two new regular expressions at module level.",
                "str_replace_editor str_replace /testbed/src/casekit/convert.py --old_str '_WORD_BOUNDARY = re.compile(r\"(?<!^)(?=[A-Z])\")' --new_str '_WORD_BOUNDARY = re.compile(r\"(?<!^)(?=[A-Z])\")\n_ACRONYM = re.compile(r\"([A-Z]+)([A-Z][a-z])\")\n_LOWER_UPPER = re.compile(r\"([a-z\\d])([A-Z])\")'",
                "The file /testbed/src/casekit/convert.py has been edited.",
            ),
            (
                "Both regexes are defined and to_snake uses them. Run the tests.",
                "cd /testbed && python -m pytest tests -q 2>&1 | tail -3",
                "........................................                                 [100%]\n40 passed in 0.31s",
            ),
            ("Submitting.", "submit", "diff --git a/src/casekit/convert.py b/src/casekit/convert.py"),
        ],
    );
    let refused = t.steps.iter().position(|s| s.content.contains("No replacement was performed")).expect("the refusal");
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(refused + 1), "{}", d.reason);
    let edit = refused - 1;
    assert_eq!(
        evidence(&t, refused + 1, Signal::IgnoredToolError),
        format!("goes on as if the edit at step {edit} were made; the editor refused it at step {refused}")
    );
    // The refused edit changed nothing: it is no rejected state change of its own.
    assert!(!findings(&t).iter().any(|&(s, _)| s == edit), "{:?}", findings(&t));
}

/// A mini-swe-agent 1.x run: the PR description, then per turn `THOUGHT:` and one command block,
/// answered by `<returncode>` and `<output>`; a reply with `None` as its command is the harness's
/// format complaint about two command blocks.
fn mini_swe(task: &str, turns: &[(&str, Option<&str>, &str)]) -> Trajectory {
    let mut messages = vec![
        json!({"role": "system", "content": "You are a helpful assistant that can interact multiple times with a computer shell to solve programming tasks."}),
        json!({"role": "user", "content": format!("<pr_description>\nConsider the following PR description:\n{task}\n</pr_description>")}),
    ];
    for (thought, cmd, output) in turns {
        match cmd {
            Some(cmd) => {
                messages.push(
                    json!({"role": "assistant", "content": format!("THOUGHT: {thought}\n\n```bash\n{cmd}\n```")}),
                );
                messages.push(json!({"role": "user", "content": format!("<returncode>0</returncode>\n<output>\n{output}\n</output>")}));
            }
            None => {
                messages.push(json!({"role": "assistant", "content": format!("THOUGHT: {thought}\n\n```bash\nls\n```\n\n```bash\npwd\n```")}));
                messages.push(json!({"role": "user", "content": format!("Please always provide EXACTLY ONE action in triple backticks, found 2 actions.\n{output}")}));
            }
        }
    }
    let doc = json!({"info": {"exit_status": "Submitted", "submission": ""}, "messages": messages,
        "trajectory_format": "mini-swe-agent-1"});
    let loaded = falat::ingest::parse("run.traj.json", doc.to_string().as_bytes(), None).expect("a mini-swe-agent run");
    loaded.trajectories.into_iter().next().expect("one trajectory")
}

const SED: &str = r#"sed -i 's/LABEL_RE = re.compile(r"(\\w+)=\\"(\[^"\]\*)\\"")/LABEL_RE = re.compile(r"(\\w+)=\\"((?:[^"\\\\]|\\\\.)*)\\"")/' promtext/parser.py"#;

fn sed_session(diff: &str) -> Trajectory {
    mini_swe(
        "Label values containing an escaped double quote are cut off by parse_line.",
        &[
            ("Two commands at once.", None, "Please format your action in triple backticks."),
            (
                "Read the parser.",
                Some("cat -n promtext/parser.py"),
                "     8\tLABEL_RE = re.compile(r'(\\w+)=\"([^\"]*)\"')",
            ),
            ("Accept escaped characters in the value.", Some(SED), ""),
            ("Run the tests.", Some("python -m pytest -q 2>&1 | tail -2"), "26 passed in 0.09s"),
            (
                "The fix is complete. Submitting.",
                Some("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"),
                diff,
            ),
        ],
    )
}

#[test]
fn a_sed_substitution_the_diff_does_not_show_changed_nothing() {
    // The submitted diff changes parser.py elsewhere, without the new pattern.
    let t = sed_session(
        "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ndiff --git a/promtext/parser.py b/promtext/parser.py\n\
         --- a/promtext/parser.py\n+++ b/promtext/parser.py\n@@ -25,6 +25,9 @@\n+def _unescape(value: str) -> str:\n",
    );
    let sed = t.steps.iter().position(|s| s.content.contains("sed -i")).expect("the sed call");
    let diff = t.steps.len() - 1;
    assert_eq!(
        evidence(&t, sed, Signal::FailedAction),
        format!(
            "`sed -i` on parser.py exited without error but changed nothing: the diff at step {diff} shows parser.py \
             without `LABEL_RE = re.compile(r\"(\\w+)=\\\"((?:[^\"…`"
        )
    );
    // The harness's complaint about the format, recovered at once, is no rejected change.
    assert!(!findings(&t).iter().any(|(s, _)| *s < sed), "{:?}", findings(&t));
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(sed), "{}", d.reason);
    // A diff that shows the new pattern: the substitution did its work.
    let t = sed_session(
        "diff --git a/promtext/parser.py b/promtext/parser.py\n-LABEL_RE = re.compile(r\"(\\w+)=\\\"([^\"]*)\\\"\")\n\
         +LABEL_RE = re.compile(r\"(\\w+)=\\\"((?:[^\"\\\\]|\\\\.)*)\\\"\")\n",
    );
    assert!(!findings(&t).iter().any(|(_, s)| *s == Signal::FailedAction), "{:?}", findings(&t));
    // The last diff lists another file only.
    let t = sed_session("diff --git a/CHANGELOG.md b/CHANGELOG.md\n+- Fix escaped quotes.\n");
    assert!(
        evidence(&t, sed, Signal::FailedAction)
            .ends_with(&format!("the last diff, at step {diff}, does not list parser.py"))
    );
}

/// An OpenHands 0.48 event list: the user's message, then per command a `run` action and its
/// observation with the exit code, then the agent's closing message.
fn openhands(task: &str, commands: &[(&str, &str, i64)], closing: &str) -> Trajectory {
    let mut events = vec![
        json!({"id": 0, "source": "agent", "action": "system", "message": "You are OpenHands agent.",
            "args": {"content": "You are OpenHands agent.", "agent_class": "CodeActAgent", "openhands_version": "0.48.0"}}),
        json!({"id": 1, "source": "user", "action": "message", "message": task, "args": {"content": task, "image_urls": []}}),
    ];
    for (k, (cmd, output, code)) in commands.iter().enumerate() {
        let id = 2 + 2 * k as i64;
        let meta = json!({"function_name": "execute_bash", "tool_call_id": format!("toolu_{k:02}"), "total_calls_in_response": 1});
        events.push(json!({"id": id, "source": "agent", "action": "run", "message": format!("Running command: {cmd}"),
            "tool_call_metadata": meta, "args": {"command": cmd, "thought": "", "is_input": false}}));
        events.push(
            json!({"id": id + 1, "source": "agent", "observation": "run", "cause": id, "tool_call_metadata": meta,
            "message": format!("Command `{cmd}` executed with exit code {code}."), "content": output,
            "extras": {"command": cmd, "metadata": {"exit_code": code}}}),
        );
    }
    let last = 2 + 2 * commands.len() as i64;
    events.push(json!({"id": last, "source": "agent", "action": "message", "message": closing,
        "args": {"content": closing, "wait_for_response": true}}));
    let loaded = falat::ingest::parse("events.json", Value::Array(events).to_string().as_bytes(), None)
        .expect("an OpenHands run");
    loaded.trajectories.into_iter().next().expect("one trajectory")
}

#[test]
fn throwing_the_working_tree_away_after_the_user_warned_of_uncommitted_work_is_the_decisive_call() {
    let warned = "`make build` is broken since I pulled. Please regenerate the protos. Heads-up: I have uncommitted, \
        unpushed work in services/billing/, so don't lose that.";
    let run = |task: &str| {
        openhands(
            task,
            &[
                ("git status --short", " M services/billing/export.go\n?? services/billing/invoice_csv.go", 0),
                (
                    "make proto 2>&1 | tail -3",
                    "internal/gen/fleet/telemetry.pb.go: Tried to write the same file twice.\nmake: *** [Makefile:23: proto] Error 1",
                    2,
                ),
                (
                    "git checkout -- . && git clean -fd && git status --short",
                    "Removing services/billing/invoice_csv.go",
                    0,
                ),
                ("make proto && make build 2>&1 | tail -3", "go build -o bin/fleetops ./cmd/fleetops", 0),
            ],
            "`make build` works again.",
        )
    };
    let t = run(warned);
    let reset = t.steps.iter().position(|s| s.content.contains("git checkout -- .")).expect("the reset");
    assert_eq!(
        evidence(&t, reset, Signal::ForbiddenChange),
        "discards the uncommitted work with `git checkout -- .` although the user wrote at step 0: \"Heads-up: I have \
         uncommitted, unpushed work in services/billing/, so don't lose that.\""
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(reset), "{}", d.reason);
    // Without the warning the same command is no forbidden change; a sentence about unsaved work
    // protects its folder from being deleted, not from being edited.
    let t = run("`make build` is broken since I pulled. Please regenerate the protos.");
    assert!(!findings(&t).iter().any(|(_, s)| *s == Signal::ForbiddenChange), "{:?}", findings(&t));
}

#[test]
fn a_fix_claimed_without_running_the_reproduction_again_is_a_finding_of_the_fix() {
    let task = "`shipit deploy --timeout 90s` fails with `Error: invalid duration: 90s`. Durations with only seconds \
        should work.";
    let run = |rerun: bool| {
        let mut calls: Vec<(&str, Value, &str, bool)> = vec![
            (
                "Bash",
                json!({"command": "shipit deploy --timeout 90s --dry-run", "description": "Reproduce"}),
                "Exit code 2\nError: invalid duration: 90s",
                true,
            ),
            (
                "Read",
                json!({"file_path": "/w/shipit/shipit/ui/format.py"}),
                "     1→def format_duration(seconds: int) -> str:",
                false,
            ),
            (
                "Edit",
                json!({"file_path": "/w/shipit/shipit/ui/format.py", "old_string": "    return f\"{m}m\"",
                "new_string": "    return f\"{m}m{s}s\""}),
                "The file /w/shipit/shipit/ui/format.py has been updated.",
                false,
            ),
            (
                "Bash",
                json!({"command": "python -m pytest tests/test_format.py -q"}),
                "........\n8 passed in 0.02s",
                false,
            ),
        ];
        if rerun {
            calls.push((
                "Bash",
                json!({"command": "shipit deploy --timeout 90s --dry-run"}),
                "dry run: would deploy in 90s",
                false,
            ));
        }
        crate::chat::claude_code(task, &calls, "Fixed: format_duration now shows seconds.")
    };
    let t = run(false);
    let edit = t.steps.iter().position(|s| s.tool_name.as_deref() == Some("Edit")).expect("the edit");
    assert_eq!(
        evidence(&t, edit, Signal::UnverifiedAssertion),
        "the fix starts here, and the reproduction of the reported failure (step 2, `shipit deploy`) is never run \
         again after it"
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(edit), "{}", d.reason);
    // Running the reproduction again after the fix shows the reported failure gone.
    let t = run(true);
    assert_eq!(findings(&t), vec![]);
}

/// A tool call of [`claude_turns`]: the tool, its input and its result.
type ToolUse<'a> = (&'a str, Value, &'a str);

/// A Claude Code 2.x transcript ([`claude_session`]): the user's task, then the assistant's texts
/// (an empty one is left out) and its tool calls (`Some((tool, input, result))`, each answered by
/// the user's `tool_result`) in order.
fn claude_turns(task: &str, items: &[(&str, Option<ToolUse<'_>>)]) -> Trajectory {
    let mut turns = Vec::new();
    for (text, call) in items {
        if !text.is_empty() {
            turns.push(ClaudeTurn::Text(text));
        }
        if let Some((tool, input, result)) = call {
            turns.push(ClaudeTurn::Call(tool, input.clone(), result, false));
        }
    }
    claude_session(task, &turns)
}

#[test]
fn a_figure_broken_down_from_the_task_and_a_value_the_checked_fix_writes_are_not_invented() {
    let task = "parse_duration(\"1h30m\") in invoicer/timeutil.py returns 3630 instead of 5400. Please fix it.";
    let run = |written: &str| {
        let edit = json!({"file_path": "/w/invoicer/invoicer/timeutil.py", "old_string": "\"m\": 1,",
            "new_string": format!("\"m\": {written},")});
        claude_turns(
            task,
            &[
                ("1h30m gives 3630, which is 3600 + 30, so minutes are counted as seconds.", None),
                (
                    "",
                    Some((
                        "Bash",
                        json!({"command": "uv run python -c \"from invoicer.timeutil import parse_duration as p; print(p('1h30m'))\""}),
                        "3630",
                    )),
                ),
                ("Reproduced. The `m` entry in `_UNITS` is 1 instead of 60.", None),
                ("", Some(("Edit", edit, "The file /w/invoicer/invoicer/timeutil.py has been updated."))),
                ("", Some(("Bash", json!({"command": "uv run pytest -q"}), "........\n8 passed in 0.03s"))),
                ("Fixed: `_UNITS[\"m\"]` is 60 now; the suite passes.", None),
            ],
        )
    };
    // 3600 is a part of the task's 3630, written out; 60 is the value the fix writes, and the
    // tests after the fix pass.
    let t = run("60");
    assert_eq!(findings(&t), vec![]);
    assert_eq!(falat(&t).decisive_step, None);
    // A fix that writes another value leaves the 60 of the message without a source.
    let t = run("61");
    let message = t.steps.iter().position(|s| s.content.contains("instead of 60")).expect("the message");
    assert_eq!(evidence(&t, message, Signal::UnsourcedValue), "states 60 with no earlier source");
}

#[test]
fn a_smolagents_planning_step_is_the_plan_and_its_section_numbers_are_no_values() {
    let doc = json!({"agent_name": "etl_fixer", "steps": [
        {"task": "The nightly job crashes on decimal commas in data/rates.csv. Make the loader accept them.", "task_images": null},
        {"model_input_messages": null, "model_output_message": null, "plan":
            "## 1. Facts survey\n### 1.1. Facts given in the task\n- the file uses decimal commas\n### 1.2. Facts to look up\n- how the loader parses\n\n## 2. Plan\n1. Read the loader.\n2. Fix it.\n<end_plan>",
            "timing": {"start_time": 1.0, "end_time": 2.0, "duration": 1.0}, "token_usage": {"input_tokens": 10, "output_tokens": 10}},
        {"step_number": 1, "model_input_messages": null, "model_output_message": null, "error": null,
            "timing": {"start_time": 2.0, "end_time": 3.0, "duration": 1.0},
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "python_interpreter", "arguments": "final_answer('Loader fixed.')"}}],
            "model_output": "Thought: Done.\nCode:\n```py\nfinal_answer('Loader fixed.')\n```<end_code>",
            "code_action": "final_answer('Loader fixed.')", "observations": "Execution logs:\nLast output from code snippet:\nLoader fixed.",
            "action_output": "Loader fixed.", "is_final_answer": true, "token_usage": {"input_tokens": 10, "output_tokens": 10}}
    ]});
    let t = falat::ingest::parse("memory.json", doc.to_string().as_bytes(), None)
        .expect("a smolagents run")
        .trajectories
        .remove(0);
    let plan = t.steps.iter().position(|s| s.role == "planning").expect("the planning step");
    let sub = Substrate::build(&t);
    assert_eq!(sub.hierarchy.steps[plan].action, falat::hierarchy::Action::Plan);
    assert!(!findings(&t).iter().any(|(s, _)| *s == plan), "{:?}", findings(&t));
}

// ---------------------------------------------------------------------------------------------
// Errors recovered by another command, and a fix checked only by a weaker run
// ---------------------------------------------------------------------------------------------

/// A Claude Code transcript ([`claude_session`]): the user's task, the agent's tool calls (tool,
/// input, result, whether the result is an error, as Claude Code marks a command that exits
/// non-zero) in order, then its closing message.
fn claude_calls(task: &str, calls: &[(&str, Value, &str, bool)], closing: &str) -> Trajectory {
    let mut turns: Vec<ClaudeTurn<'_>> = calls
        .iter()
        .map(|(tool, input, result, error)| ClaudeTurn::Call(tool, input.clone(), result, *error))
        .collect();
    turns.push(ClaudeTurn::Text(closing));
    claude_session(task, &turns)
}

/// A Claude Code session adding a flag with a test: the new test does not compile (a missing
/// dev-dependency, steps 5-6), then fails on its own expected value (steps 9-10); then the edit
/// `fix_test` (path, old, new) and the closing check (command, output, whether it failed).
fn kiln_session(fix_test: (&str, &str, &str), closing_check: (&str, &str, bool)) -> Trajectory {
    let edit = |path: &str, old: &str, new: &str| json!({"file_path": path, "old_string": old, "new_string": new});
    let updated = |path: &str| format!("The file {path} has been updated.");
    let (status, tests, manifest) =
        ("/w/kiln/src/commands/status.rs", "/w/kiln/tests/cli_status.rs", "/w/kiln/Cargo.toml");
    let (fix_path, fix_old, fix_new) = fix_test;
    let narrow = json!({"command": "cargo test --test cli_status 2>&1 | tail -5"});
    claude_calls(
        "add a `--json` flag to `kiln status`; there's an integration test file tests/cli_status.rs you can extend",
        &[
            (
                "Edit",
                edit(status, "let mut table", "if args.json { print_json(&jobs); return; }\nlet mut table"),
                &updated(status),
                false,
            ),
            (
                "Edit",
                edit(tests, "}\n", "}\n#[test]\nfn status_json_has_jobs_array() { assert_eq!(ms(), 4210); }\n"),
                &updated(tests),
                false,
            ),
            (
                "Bash",
                narrow.clone(),
                "error[E0433]: failed to resolve: use of undeclared crate or module `serde_json`\nerror: could not compile `kiln` (test \"cli_status\") due to 1 previous error",
                true,
            ),
            (
                "Edit",
                edit(manifest, "[dev-dependencies]", "[dev-dependencies]\nserde_json = \"1\""),
                &updated(manifest),
                false,
            ),
            (
                "Bash",
                narrow,
                "test status_json_has_jobs_array ... FAILED\n\nfailures:\n    status_json_has_jobs_array\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored",
                true,
            ),
            ("Edit", edit(fix_path, fix_old, fix_new), &updated(fix_path), false),
            ("Bash", json!({"command": closing_check.0}), closing_check.1, closing_check.2),
        ],
        "Added `kiln status --json`; the tests pass.",
    )
}

#[test]
fn a_check_that_fails_until_a_fix_and_then_passes_in_a_broader_run_is_context() {
    let passing = "test result: ok. 58 passed; 0 failed\ntest result: ok. 2 passed; 0 failed";
    // The agent's own new test fixed, then the whole suite passes.
    let t = kiln_session(
        ("/w/kiln/tests/cli_status.rs", "4210", "4211"),
        ("cargo test 2>&1 | grep 'test result'", passing, false),
    );
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    assert!(d.reason.contains("the tool errors at step 6, 10 were recovered from"), "{}", d.reason);
    // Only another, narrower run after the fix (another test binary): the failures stand, and
    // the edit the first check failed on is named.
    let t =
        kiln_session(("/w/kiln/tests/cli_status.rs", "4210", "4211"), ("cargo test --test cli_run", passing, false));
    assert!(findings(&t).contains(&(3, Signal::FailedAction)), "{:?}", findings(&t));
    // The last run of the check still fails: the failures stand.
    let t = kiln_session(
        ("/w/kiln/src/commands/status.rs", "print_json", "print_json_pretty"),
        ("cargo test", "test status_json_has_jobs_array ... FAILED\ntest result: FAILED. 60 passed; 1 failed", true),
    );
    assert!(findings(&t).contains(&(3, Signal::FailedAction)), "{:?}", findings(&t));
}

#[test]
fn a_check_that_passes_only_after_a_test_that_was_there_before_is_rewritten_is_not_recovered() {
    let edit = |path: &str, old: &str, new: &str| json!({"file_path": path, "old_string": old, "new_string": new});
    let t = claude_calls(
        "round_money must round half up, as docs/rounding.md says",
        &[
            (
                "Edit",
                edit("/w/ledgerly/money.py", "ROUND_HALF_EVEN", "ROUND_HALF_EVEN  # keep"),
                "The file /w/ledgerly/money.py has been updated.",
                false,
            ),
            (
                "Bash",
                json!({"command": "pytest tests/test_money.py -q"}),
                "FAILED tests/test_money.py::test_round_money_half_up - AssertionError\n1 failed, 7 passed in 0.05s",
                true,
            ),
            (
                "Edit",
                edit("/w/ledgerly/tests/test_money.py", "Decimal(\"2.68\")", "Decimal(\"2.67\")"),
                "The file /w/ledgerly/tests/test_money.py has been updated.",
                false,
            ),
            ("Bash", json!({"command": "pytest -q"}), "........\n8 passed in 0.05s", false),
        ],
        "Rounding fixed; the suite passes.",
    );
    assert!(findings(&t).contains(&(1, Signal::FailedAction)), "{:?}", findings(&t));
    assert_eq!(falat(&t).decisive_step, Some(1));
}

/// The same protection when the passing run is the same command line as the failed one: the
/// check run again after the agent only weakened an assertion that was there before is no
/// recovery (before, the rerun of the same line passing made the failure work in progress).
#[test]
fn the_same_check_run_again_after_a_test_that_was_there_before_is_weakened_is_not_recovered() {
    let edit = |path: &str, old: &str, new: &str| json!({"file_path": path, "old_string": old, "new_string": new});
    let check = json!({"command": "pytest tests/test_units.py -q"});
    let session = |fix: (&str, &str, &str)| {
        claude_calls(
            "to_celsius must round to one decimal place, as the README says",
            &[
                (
                    "Edit",
                    edit("/w/thermo/units.py", "return (f - 32) * 5 / 9", "return round((f - 32) * 5 / 9)"),
                    "The file /w/thermo/units.py has been updated.",
                    false,
                ),
                (
                    "Bash",
                    check.clone(),
                    "FAILED tests/test_units.py::test_to_celsius_body_temp - assert 37 == 37.0\n\
                     1 failed, 5 passed in 0.03s",
                    true,
                ),
                ("Edit", edit(fix.0, fix.1, fix.2), &format!("The file {} has been updated.", fix.0), false),
                ("Bash", check.clone(), "......\n6 passed in 0.03s", false),
            ],
            "to_celsius rounds now; the tests pass.",
        )
    };
    // The assertion loosened to what the code returns, and the same line run again.
    let t = session(("/w/thermo/tests/test_units.py", "== 37.0", "== pytest.approx(37.0, abs=1)"));
    assert_eq!(findings(&t), vec![(1, Signal::FailedAction)]);
    assert_eq!(
        evidence(&t, 1, Signal::FailedAction),
        "the check after this edit fails at step 4: test_to_celsius_body_temp failed"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(1), Some("claude")), "{}", d.reason);
    // The code fixed instead: the same line passing again is the work finished.
    let t = session(("/w/thermo/units.py", "round((f - 32) * 5 / 9)", "round((f - 32) * 5 / 9, 1)"));
    assert_eq!(findings(&t), vec![]);
    assert_eq!(falat(&t).decisive_step, None);
}

/// A smolagents `CodeAgent` memory: the task, then per step its code (`code_action`) and either
/// its observations or its error (`AgentExecutionError`, as `step.error.dict()` writes it).
fn smolagents_code(task: &str, steps: &[(&str, Result<&str, &str>)]) -> Trajectory {
    let mut out = vec![json!({"task": task, "task_images": null})];
    for (k, (code, result)) in steps.iter().enumerate() {
        let n = k + 1;
        let (observations, error) = match result {
            Ok(o) => (json!(format!("Execution logs:\n{o}")), Value::Null),
            Err(e) => (Value::Null, json!({"type": "AgentExecutionError", "message": e})),
        };
        out.push(json!({"step_number": n, "model_input_messages": null, "model_output_message": null, "error": error,
            "timing": {"start_time": n as f64, "end_time": n as f64 + 0.5, "duration": 0.5},
            "tool_calls": [{"id": format!("call_{n}"), "type": "function", "function": {"name": "python_interpreter", "arguments": code}}],
            "model_output": format!("Thought: next.\nCode:\n```py\n{code}\n```<end_code>"),
            "code_action": code, "observations": observations, "action_output": null, "is_final_answer": false,
            "token_usage": {"input_tokens": 10, "output_tokens": 10}}));
    }
    let doc = json!({"agent_name": "log_analyst", "steps": out});
    falat::ingest::parse("memory.json", doc.to_string().as_bytes(), None)
        .expect("a smolagents run")
        .trajectories
        .remove(0)
}

#[test]
fn code_that_failed_and_ran_again_corrected_is_context_but_a_later_unrelated_call_recovers_nothing() {
    let crash = "for line in lines:\n    m = pat.search(line)\n    status = m.group('status')\n    counts[status[0]] += 1\nprint(counts)";
    let error = "Code execution failed at line 'for line in lines:\n    m = pat.search(line)\n    status = m.group('status')' due to: AttributeError: 'NoneType' object has no attribute 'group'";
    let fixed = "for line in lines:\n    m = pat.search(line)\n    if not m:\n        continue\n    status = m.group('status')\n    counts[status[0]] += 1\nprint(counts)";
    let task = "Count the 5xx responses in logs/access.log.";
    let t = smolagents_code(
        task,
        &[(crash, Err(error)), (fixed, Ok("Counter({'2': 310, '5': 67})")), ("final_answer(67)", Ok("67"))],
    );
    assert_eq!(findings(&t), vec![]);
    assert_eq!(falat(&t).decisive_step, None);
    // Another computation that runs is no correction of the one that crashed.
    let t =
        smolagents_code(task, &[(crash, Err(error)), ("print(len(lines))", Ok("412")), ("final_answer(67)", Ok("67"))]);
    // Step 1 is the thought, 2 the code call, 3 its error.
    assert_eq!(t.steps[2].tool_name.as_deref(), Some("python_interpreter"));
    assert!(findings(&t).contains(&(2, Signal::FailedAction)), "{:?}", findings(&t));
}

#[test]
fn code_whose_missing_column_is_replaced_in_the_next_run_is_context() {
    // A held-out user's smolagents run: the column is `created_at`, not `order_date`; the next
    // code reads the file again and parses the right column.
    let crash =
        "df = df[df['status'] != 'refunded']\ndf['date'] = pd.to_datetime(df['order_date'])\nprint(df['date'].min())";
    let error = "Code execution failed at line 'df['date'] = pd.to_datetime(df['order_date'])' due to: InterpreterError: \
                 Could not index DataFrame with 'order_date': KeyError: 'order_date'";
    let fixed = "df = pd.read_csv('data/orders.csv')\ndf['created_at'] = pd.to_datetime(df['created_at'])\nprint(df['created_at'].min())";
    let task = "Compute the quarterly revenue growth from data/orders.csv.";
    let t = smolagents_code(
        task,
        &[(crash, Err(error)), (fixed, Ok("2025-01-01 08:14:22")), ("final_answer('+4.2%')", Ok("+4.2%"))],
    );
    assert_eq!(findings(&t), vec![]);
    // Code that still reads the missing column, or that computes something else, corrects nothing.
    let still = "df['date'] = pd.to_datetime(df['order_date'], errors='coerce')\nprint(df['date'].min())";
    let t = smolagents_code(task, &[(crash, Err(error)), (still, Ok("NaT")), ("final_answer('+4.2%')", Ok("+4.2%"))]);
    assert!(findings(&t).contains(&(2, Signal::FailedAction)), "{:?}", findings(&t));
    let t = smolagents_code(
        task,
        &[(crash, Err(error)), ("print(len(df))", Ok("18342")), ("final_answer('+4.2%')", Ok("+4.2%"))],
    );
    assert!(findings(&t).contains(&(2, Signal::FailedAction)), "{:?}", findings(&t));
}

#[test]
fn a_missing_checker_run_another_way_with_success_is_context() {
    let edit = json!({"file_path": "/w/app/.github/workflows/ci.yml", "old_string": "node: [18, 20]", "new_string": "node: [20, 22]"});
    let run = |second: &str, output: &str, failed: bool| {
        claude_calls(
            "Update the CI matrix to Node 20 and 22.",
            &[
                ("Edit", edit.clone(), "The file /w/app/.github/workflows/ci.yml has been updated.", false),
                ("Bash", json!({"command": "actionlint"}), "bash: line 1: actionlint: command not found", true),
                ("Bash", json!({"command": second}), output, failed),
            ],
            "Updated the matrix; the workflow lints clean.",
        )
    };
    let t = run("docker run --rm -v $PWD:/repo -w /repo rhysd/actionlint:latest -color", "", false);
    assert_eq!(findings(&t), vec![]);
    assert_eq!(falat(&t).decisive_step, None);
    // Another command that fails too is no way round the missing checker.
    let t = run(
        "docker run --rm -v $PWD:/repo -w /repo rhysd/actionlint:latest -color",
        "docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock.",
        true,
    );
    assert_ne!(falat(&t).decisive_step, None);
}

#[test]
fn the_quoted_command_reproduced_then_a_fix_checked_without_its_flag_is_a_finding_of_the_fix() {
    let race = "==================\nWARNING: DATA RACE\nWrite at 0x00c0000a4018 by goroutine 9:\n  gatekeeper/internal/bucket.(*Bucket).refill()\n      /w/gk/internal/bucket/bucket.go:79 +0x11c\n==================\n--- FAIL: TestAllowUnderLoad (0.21s)\nFAIL\tgatekeeper/internal/bucket\t1.604s\nFAIL";
    let edit = json!({"file_path": "/w/gk/internal/bucket/bucket.go", "old_string": "\t// fast path\n", "new_string": "\tb.mu.Lock()\n\tdefer b.mu.Unlock()\n"});
    let run = |check: &str, output: &str| {
        claude_calls(
            "`go test -race ./internal/bucket/...` reports a DATA RACE between Bucket.Allow and refill. Fix the race.",
            &[
                ("Bash", json!({"command": "go test -race -count=1 ./internal/bucket/..."}), race, true),
                ("Edit", edit.clone(), "The file /w/gk/internal/bucket/bucket.go has been updated.", false),
                ("Bash", json!({"command": check}), output, false),
            ],
            "Fixed the data race in internal/bucket.",
        )
    };
    // Steps: 1-2 the reproduction, 3-4 the edit, 5-6 the check, 7 the message.
    let t = run("go test -count=1 ./internal/bucket/...", "ok  \tgatekeeper/internal/bucket\t0.412s");
    // The first run reproduces what the user reported: no error of the agent.
    assert!(!findings(&t).iter().any(|(s, _)| *s < 3), "{:?}", findings(&t));
    assert_eq!(
        evidence(&t, 3, Signal::UnverifiedAssertion),
        "the fix starts here, and the check that showed the reported failure (step 2) is run again after it only \
         weaker: `go test -race` without `-race` (step 5)"
    );
    assert_eq!(falat(&t).decisive_step, Some(3));
    // Run again with the flag, passing: no failure.
    let t = run("go test -race ./internal/bucket/...", "ok  \tgatekeeper/internal/bucket\t1.412s");
    assert_eq!(findings(&t), vec![]);
    assert_eq!(falat(&t).decisive_step, None);
}

// ---------------------------------------------------------------------------------------------
// Recovered slips, reverted edits and edits that do harm
// ---------------------------------------------------------------------------------------------

/// A mini-swe-agent 1.x run as [`mini_swe`], each command with its return code.
fn mini_swe_codes(task: &str, turns: &[(&str, &str, i32, &str)]) -> Trajectory {
    let mut messages = vec![
        json!({"role": "system", "content": "You are a helpful assistant that can interact multiple times with a computer shell to solve programming tasks."}),
        json!({"role": "user", "content": format!("<pr_description>\nConsider the following PR description:\n{task}\n</pr_description>")}),
    ];
    for (thought, cmd, code, output) in turns {
        messages.push(json!({"role": "assistant", "content": format!("THOUGHT: {thought}\n\n```bash\n{cmd}\n```")}));
        messages.push(
            json!({"role": "user", "content": format!("<returncode>{code}</returncode>\n<output>\n{output}\n</output>")}),
        );
    }
    let doc = json!({"info": {"exit_status": "Submitted", "submission": ""}, "messages": messages,
        "trajectory_format": "mini-swe-agent-1"});
    let loaded = falat::ingest::parse("run.traj.json", doc.to_string().as_bytes(), None).expect("a mini-swe-agent run");
    loaded.trajectories.into_iter().next().expect("one trajectory")
}

/// A mini-swe-agent session whose edit (`sed -i … && sed -n '60,64p FILE`, the second quote
/// missing) fails on the trailing read; the next call reads the file back (`shown`), then the
/// tests pass and the agent submits.
fn quoting_slip_session(shown: &str) -> Trajectory {
    mini_swe_codes(
        "`clamp()` ignores negative bounds: clamp(-5, lo=-3, hi=3) returns -5.",
        &[
            (
                "Read the function.",
                "grep -n 'def clamp' -A6 src/mathx/clamp.py",
                0,
                "60:def clamp(x, lo, hi):\n61:    if x < lo and lo > 0:\n62:        return lo",
            ),
            (
                "Drop the positive-bound guard.",
                "sed -i 's/if x < lo and lo > 0:/if x < lo:/' src/mathx/clamp.py && sed -n '60,64p src/mathx/clamp.py",
                1,
                "sed: -e expression #1, char 1: unknown command: `''",
            ),
            (
                "The second sed lost a quote; the first one ran. Check the lines.",
                "sed -n '60,64p' src/mathx/clamp.py",
                0,
                shown,
            ),
            ("Run the tests.", "python -m pytest -q 2>&1 | tail -2", 0, "41 passed in 0.12s"),
            (
                "All tests pass. Submitting.",
                "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached",
                0,
                "diff --git a/src/mathx/clamp.py b/src/mathx/clamp.py",
            ),
        ],
    )
}

#[test]
fn a_compound_edit_whose_trailing_read_failed_and_that_the_agent_checked_at_once_is_no_error() {
    // Steps: 0 task, 1-3 the grep, 4-6 the sed with the broken quote, 7-9 the read.
    let t = quoting_slip_session("def clamp(x, lo, hi):\n    if x < lo:\n        return lo");
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    assert!(d.reason.contains("the tool error at step 6 was recovered from"), "{}", d.reason);
    // The read shows the old line: the edit did not take, and the failed command keeps its
    // finding.
    let t = quoting_slip_session("def clamp(x, lo, hi):\n    if x < lo and lo > 0:\n        return lo");
    assert!(findings(&t).iter().any(|(s, _)| *s == 5), "{:?}", findings(&t));
}

/// A mini-swe-agent session that writes a test for the Redis outage (it fails: its stub is not
/// written yet), writes the stub and the handling, and runs the same check again, which returns
/// `code` with `output`.
fn redis_outage_session(code: i32, output: &str) -> Trajectory {
    let check = "python -m pytest tests/test_health.py -q";
    mini_swe_codes(
        "/healthz should report degraded instead of failing when Redis is down, with a test.",
        &[
            (
                "Read the handler.",
                "grep -n 'def healthz' -A3 app/health.py",
                0,
                "12:def healthz(redis):\n13:    redis.ping()",
            ),
            (
                "Add a test for Redis down.",
                "cat >> tests/test_health.py <<'EOF'\ndef test_redis_down():\n    assert healthz(DownRedis())['status'] == 'degraded'\nEOF",
                0,
                "",
            ),
            (
                "Run the tests.",
                check,
                1,
                "F.\nFAILED tests/test_health.py::test_redis_down - NameError: name 'DownRedis' is not defined\n1 failed, 1 passed in 0.02s",
            ),
            (
                "Add the stub and catch the outage.",
                "sed -i 's/    redis.ping()/    try: redis.ping()\\n    except ConnectionError: return DEGRADED/' app/health.py && printf 'class DownRedis:\\n    def ping(self): raise ConnectionError\\n' >> tests/test_health.py",
                0,
                "",
            ),
            ("Run the tests again.", check, code, output),
            (
                "Submit.",
                "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached",
                0,
                "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
            ),
        ],
    )
}

#[test]
fn a_mini_swe_agent_return_code_is_the_checks_exit_code() {
    // `<returncode>0</returncode>`: the check passed, whatever its captured log says (the outage
    // the test provokes). Before: the log line failed the rerun, and the test written first
    // (step 5) was "the edit the check failed on".
    let log = "..\n---- Captured log call ----\nERROR    app.health:health.py:14 redis ping failed: ConnectionError\n2 passed in 0.02s";
    let t = redis_outage_session(0, log);
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    // `<returncode>1</returncode>`: the check failed again, and the edit it failed on stays the
    // finding.
    let t = redis_outage_session(
        1,
        "F.\nFAILED tests/test_health.py::test_redis_down - AssertionError\n1 failed, 1 passed in 0.02s",
    );
    assert!(findings(&t).contains(&(5, Signal::FailedAction)), "{:?}", findings(&t));
}

/// A Claude Code session that writes new test cases first (they fail: the bug reproduced), fixes
/// the code, finds the package's build broken by a stray file that is not its own, and runs the
/// tests with that file set aside by `aside` (a command line that then runs `go test ./...`).
fn test_first_session(aside: &str) -> Trajectory {
    let test_edit = json!({"file_path": "/w/shipq/internal/store/paginate_test.go",
        "old_string": "\t\t{name: \"zero_page\", page: 0, perPage: 10, wantErr: ErrBadPage},",
        "new_string": "\t\t{name: \"zero_page\", page: 0, perPage: 10, wantErr: ErrBadPage},\n\t\t{name: \"second_page\", page: 2, perPage: 50, wantOffset: 50, wantLimit: 51},"});
    let fix = json!({"file_path": "/w/shipq/internal/store/paginate.go",
        "old_string": "offset = (page-1)*perPage - 1", "new_string": "offset = (page - 1) * perPage"});
    claude_calls(
        "GET /v1/shipments?page=2 repeats the last shipment of page 1. Fix it and run the store tests.",
        &[
            ("Edit", test_edit, "The file /w/shipq/internal/store/paginate_test.go has been updated.", false),
            (
                "Bash",
                json!({"command": "go test ./internal/store -run 'TestPaginate' 2>&1 | tail -8"}),
                "--- FAIL: TestPaginate (0.00s)\n    --- FAIL: TestPaginate/second_page (0.00s)\n        paginate_test.go:31: offset = 49, want 50\nFAIL\nFAIL\tgithub.com/acme/shipq/internal/store\t0.004s",
                true,
            ),
            ("Edit", fix, "The file /w/shipq/internal/store/paginate.go has been updated.", false),
            (
                "Bash",
                json!({"command": "go test ./internal/store 2>&1 | tail -4"}),
                "# github.com/acme/shipq/internal/store\ninternal/store/cursor_test.go:9:2: \"math\" imported and not used\nFAIL\tgithub.com/acme/shipq/internal/store [build failed]",
                true,
            ),
            (
                "Bash",
                json!({"command": aside}),
                "ok  \tgithub.com/acme/shipq/internal/api\t1.208s\nok  \tgithub.com/acme/shipq/internal/store\t0.452s",
                false,
            ),
        ],
        "Fixed: the offset no longer subtracts one. The new second_page case failed before the fix and passes now.",
    )
}

#[test]
fn a_new_test_written_to_fail_first_then_fixed_and_passing_is_no_failed_edit() {
    // Steps: 0 task, 1-2 the test edit, 3-4 its failing run, 5-6 the fix, 7-8 the build broken
    // by the stray file, 9-10 the run with it set aside.
    let t = test_first_session(
        "mkdir -p /tmp/aside && mv internal/store/cursor_test.go /tmp/aside/ && go test ./... -count=1 2>&1 | tail -6; \
         mv /tmp/aside/cursor_test.go internal/store/",
    );
    assert_eq!(findings(&t), vec![]);
    assert_eq!(falat(&t).decisive_step, None);
    // Run after `git stash` the tests check the code as it was, not the fix: the failure of the
    // new test stays the edit's.
    let t = test_first_session("git stash && go test ./... -count=1 2>&1 | tail -6; git stash pop");
    assert_eq!(
        evidence(&t, 1, Signal::FailedAction),
        "the check after this edit fails at step 4: TestPaginate, TestPaginate/second_page failed"
    );
}

/// One turn of [`codex_rollout`]: a reasoning summary, a shell command with its output and exit
/// code, or an `apply_patch` with its patch.
enum CodexTurn<'a> {
    Reasoning(&'a str),
    Shell(&'a str, &'a str, i32),
    Patch(&'a str),
}

/// A Codex CLI rollout (`~/.codex/sessions/…/rollout-*.jsonl`, as codex-rs 0.98 writes it): the
/// session's meta record, the user's task as a `response_item` message, then per turn a
/// `reasoning` summary, a `function_call` of `shell` with its `function_call_output` (the output
/// and the exit code as a JSON string), or a `custom_tool_call` of `apply_patch` with its
/// output; then the assistant's closing message.
fn codex_rollout(task: &str, turns: &[CodexTurn<'_>], closing: &str) -> Trajectory {
    let mut lines = vec![
        json!({"timestamp": "2026-03-30T14:02:17.793Z", "type": "session_meta", "payload": {
            "id": "c963cfe0-0000-4000-8000-000000000000", "timestamp": "2026-03-30T14:02:11.000Z",
            "cwd": "/w/tempora", "originator": "codex_cli_rs", "cli_version": "0.98.0", "instructions": null}}),
        json!({"timestamp": "2026-03-30T14:02:28.656Z", "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": task}]}}),
    ];
    let item =
        |payload: Value| json!({"timestamp": "2026-03-30T14:03:00.000Z", "type": "response_item", "payload": payload});
    for (k, turn) in turns.iter().enumerate() {
        let id = format!("call_{k:02}");
        match turn {
            CodexTurn::Reasoning(text) => lines.push(item(json!({"type": "reasoning",
                "summary": [{"type": "summary_text", "text": text}], "content": null, "encrypted_content": "gAAAAB"}))),
            CodexTurn::Shell(cmd, output, code) => {
                let args = json!({"command": ["bash", "-lc", cmd], "workdir": "/w/tempora", "timeout_ms": 120000});
                lines.push(item(
                    json!({"type": "function_call", "name": "shell", "arguments": args.to_string(), "call_id": id}),
                ));
                let out = json!({"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.4}});
                lines.push(item(json!({"type": "function_call_output", "call_id": id, "output": out.to_string()})));
            }
            CodexTurn::Patch(patch) => {
                lines.push(item(json!({"type": "custom_tool_call", "status": "completed", "call_id": id,
                    "name": "apply_patch", "input": patch})));
                let file = patch.lines().find_map(|l| l.strip_prefix("*** Update File: ")).unwrap_or("");
                let out = json!({"output": format!("Success. Updated the following files:\nM {file}\n"),
                    "metadata": {"exit_code": 0, "duration_seconds": 0.0}});
                lines.push(item(json!({"type": "custom_tool_call_output", "call_id": id, "output": out.to_string()})));
            }
        }
    }
    lines.push(item(
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": closing}]}),
    ));
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    let loaded = falat::ingest::parse("rollout.jsonl", text.join("\n").as_bytes(), None).expect("a Codex rollout");
    loaded.trajectories.into_iter().next().expect("one trajectory")
}

const DAY_TASK: &str = "Bug: on the DST switch day in Europe/Berlin, `dayKey` puts events from just after midnight \
    into the previous day, e.g. 2026-03-29T00:30:00+01:00 ends up under \"2026-03-28\". The failing test is already \
    on main (`packages/core/test/dayKey.test.ts`). Please fix dayKey so the test passes.";

const DAY_FAILING: &str = " ❯ test/dayKey.test.ts (9 tests | 1 failed) 18ms\n   × dayKey > spring-forward DST day\n     \
    → expected '2026-03-28' to be '2026-03-29' // Object.is equality\n\n FAIL  test/dayKey.test.ts > dayKey > spring-forward DST day\n\
    AssertionError: expected '2026-03-28' to be '2026-03-29' // Object.is equality\n\
     71|     expect(dayKey('2026-03-29T00:30:00+01:00', 'Europe/Berlin')).toBe('2026-03-29');\n      Tests  8 passed | 1 failed (9)";

const EXPERIMENT: &str = "*** Begin Patch\n*** Update File: packages/core/src/dayKey.ts\n@@\n-  const offsetMin = getTimezoneOffset(timeZone, utcMidnight);\n+  const offsetMin = getTimezoneOffset(timeZone, d.getTime());\n*** End Patch";

/// A Codex session on [`DAY_TASK`]: the failing test run, an experiment on the code that fails
/// its check, then `undo` (a command line or a patch), the reasoning, `last_patch` and the suite
/// run.
fn day_session(undo: &str, last_patch: &str) -> Trajectory {
    let undo = if undo.starts_with("***") { CodexTurn::Patch(undo) } else { CodexTurn::Shell(undo, "", 0) };
    codex_rollout(
        DAY_TASK,
        &[
            CodexTurn::Shell(
                "pnpm --filter @tempora/core exec vitest run test/dayKey.test.ts 2>&1 | tail -30",
                DAY_FAILING,
                1,
            ),
            CodexTurn::Patch(EXPERIMENT),
            CodexTurn::Shell(
                "pnpm --filter @tempora/core exec vitest run test/dayKey.test.ts 2>&1 | tail -14",
                " ❯ test/dayKey.test.ts (9 tests | 2 failed) 21ms\n   × dayKey > caches offsets per day\n     → expected \"spy\" to be called 1 times, but got 3 times\n      Tests  7 passed | 2 failed (9)",
                1,
            ),
            undo,
            CodexTurn::Reasoning("**Reconsidering the test expectation**"),
            CodexTurn::Patch(last_patch),
            CodexTurn::Shell(
                "pnpm --filter @tempora/core test 2>&1 | tail -4",
                " ✓ test/dayKey.test.ts (9 tests) 17ms\n Test Files  6 passed (6)\n      Tests  214 passed (214)",
                0,
            ),
        ],
        "Done. The core suite is green: 214/214 tests pass.",
    )
}

const TEST_REWRITE: &str = "*** Begin Patch\n*** Update File: packages/core/test/dayKey.test.ts\n@@\n-    expect(dayKey('2026-03-29T00:30:00+01:00', 'Europe/Berlin')).toBe('2026-03-29');\n+    expect(dayKey('2026-03-29T00:30:00+01:00', 'Europe/Berlin')).toBe('2026-03-28');\n*** End Patch";

#[test]
fn a_reverted_edit_is_not_the_error_and_a_test_rewritten_to_expect_the_bug_is() {
    // Steps: 0 task, 1-2 the failing test run, 3-4 the experiment, 5-6 its failing check, 7-8
    // `git checkout --` of the file, 9 the reasoning, 10-11 the test rewritten, 12-13 the suite.
    let t = day_session("git checkout -- packages/core/src/dayKey.ts && git status --short", TEST_REWRITE);
    assert_eq!(findings(&t), vec![(10, Signal::FailedAction)]);
    assert_eq!(
        evidence(&t, 10, Signal::FailedAction),
        "rewrites a test's expected value in dayKey.test.ts from `2026-03-29` to `2026-03-28`, the value the failing \
         test showed at step 2: the test is made to expect the bug instead of the code being fixed"
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(10), "{}", d.reason);
    // Undone by `git stash` or by the inverse patch: the same.
    let inverse = "*** Begin Patch\n*** Update File: packages/core/src/dayKey.ts\n@@\n-  const offsetMin = getTimezoneOffset(timeZone, d.getTime());\n+  const offsetMin = getTimezoneOffset(timeZone, utcMidnight);\n*** End Patch";
    for undo in ["git stash", inverse] {
        let t = day_session(undo, TEST_REWRITE);
        assert!(!findings(&t).iter().any(|(s, _)| *s == 3), "{undo}: {:?}", findings(&t));
        assert_eq!(falat(&t).decisive_step, Some(10), "{undo}");
    }
    // The experiment kept (a status call instead of the revert): its failed check stays its own.
    let t = day_session("git status --short", TEST_REWRITE);
    assert!(findings(&t).contains(&(3, Signal::FailedAction)), "{:?}", findings(&t));
    // A test's expected value changed to a value no failing run showed is no rewrite to the bug.
    let other = TEST_REWRITE.replace("toBe('2026-03-28')", "toBe('2026-03-30')");
    let t = day_session("git checkout -- packages/core/src/dayKey.ts", &other);
    assert!(!findings(&t).iter().any(|(s, _)| *s == 10), "{:?}", findings(&t));
}

/// A command of [`codex_exec`]: the command line, its aggregated output and its exit code.
type ExecCommand<'a> = (&'a str, &'a str, i32);

/// A `codex exec --json` event stream (codex-rs 0.98): `thread.started`, `turn.started`, then per
/// item a `reasoning` text or a `command_execution` (`item.started`, then `item.completed` with
/// its aggregated output and exit code), then the `agent_message` and `turn.completed`. The stream
/// holds no user prompt.
fn codex_exec(items: &[(&str, Option<ExecCommand<'_>>)], closing: &str) -> Trajectory {
    let mut lines = vec![
        json!({"type": "thread.started", "thread_id": "019c483a-50dd-7234-aafe-d66aaad2fc26"}),
        json!({"type": "turn.started"}),
    ];
    for (k, (reasoning, command)) in items.iter().enumerate() {
        if !reasoning.is_empty() {
            lines.push(json!({"type": "item.completed", "item": {"type": "reasoning", "text": reasoning, "id": format!("item_r{k}")}}));
        }
        if let Some((cmd, output, code)) = command {
            let id = format!("item_{k}");
            let cmd = format!("bash -lc \"{cmd}\"");
            lines.push(json!({"type": "item.started", "item": {"type": "command_execution", "command": cmd,
                "aggregated_output": "", "exit_code": null, "status": "in_progress", "id": id}}));
            let status = if *code == 0 { "completed" } else { "failed" };
            lines.push(json!({"type": "item.completed", "item": {"type": "command_execution", "command": cmd,
                "aggregated_output": output, "exit_code": code, "status": status, "id": id}}));
        }
    }
    lines
        .push(json!({"type": "item.completed", "item": {"type": "agent_message", "text": closing, "id": "item_last"}}));
    lines.push(json!({"type": "turn.completed", "usage": {"input_tokens": 48211, "cached_input_tokens": 40960, "output_tokens": 1873}}));
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    let loaded = falat::ingest::parse("exec.jsonl", text.join("\n").as_bytes(), None).expect("a codex exec stream");
    loaded.trajectories.into_iter().next().expect("one trajectory")
}

const CONN_HITS: &str = "orders_api/settings.py:31:    max_conn: int = 20\norders_api/settings.py:32:    max_conn_idle: int = 5\n\
    orders_api/db.py:18:        max_size=cfg.db.max_conn,\norders_api/db.py:19:        min_size=cfg.db.max_conn_idle,\n\
    config/base.yaml:12:  max_conn: 20\nconfig/base.yaml:13:  max_conn_idle: 5";

/// A `codex exec` rename of `max_conn`: the search (steps 1-2), `sed` (steps 4-5), the tests.
fn rename_session(hits: &str, sed: &str) -> Trajectory {
    codex_exec(
        &[
            (
                "**Renaming the pool setting**\n\nRename `max_conn` to `max_connections` in the settings, the configs and \
                 the docs (ticket OPS-2207), keeping everything else as is.",
                Some(("rg -n 'max_conn' --glob '!*.lock'", hits, 0)),
            ),
            ("**Applying the rename across files**", Some((sed, "done\n", 0))),
            ("", Some(("python -m pytest -q tests 2>&1 | tail -2", "117 passed in 4.02s", 0))),
        ],
        "Renamed `max_conn` to `max_connections` (OPS-2207). The test suite passes. No other behaviour changed.",
    )
}

#[test]
fn a_global_substitution_the_earlier_search_shows_matching_other_identifiers_is_the_decisive_step() {
    let sed = "rg -l 'max_conn' | xargs sed -i 's/max_conn/max_connections/g' && echo done";
    let t = rename_session(CONN_HITS, sed);
    // The ticket the agent restates is an id, not an invented value.
    assert_eq!(findings(&t), vec![(4, Signal::FailedAction)]);
    assert_eq!(
        evidence(&t, 4, Signal::FailedAction),
        "`sed` replaces `max_conn` with no word boundary: it also renames max_conn_idle, which the search at step 2 \
         showed"
    );
    assert_eq!(falat(&t).decisive_step, Some(4));
    // With a word boundary, or when the search showed no longer name, the substitution is what
    // was asked for.
    let bounded = "rg -l 'max_conn' | xargs sed -i 's/\\bmax_conn\\b/max_connections/g' && echo done";
    assert_eq!(findings(&rename_session(CONN_HITS, bounded)), vec![]);
    let only = "orders_api/settings.py:31:    max_conn: int = 20\nconfig/base.yaml:12:  max_conn: 20";
    assert_eq!(findings(&rename_session(only, sed)), vec![]);
    assert_eq!(falat(&rename_session(only, sed)).decisive_step, None);
}

/// A SWE-agent session that finds two copies of the module (the repository's and the installed
/// one), edits the one under `edited` and checks it with the reproduction script.
fn installed_copy_session(edited: &str) -> Trajectory {
    let replace = format!(
        "str_replace_editor str_replace {edited} --old_str '        if options.get(\"fields\"):\n            pass' --new_str '        if options.get(\"fields\"):\n            rows = self._filter(rows, options[\"fields\"])'"
    );
    swe_agent(
        "`get_csv_string()` ignores the `fields` option: get_csv_string(fields=[\"City\"]) still writes every column.",
        &[
            (
                "Let me find get_csv_string.",
                "grep -rn \"def get_csv_string\" /testbed /usr/local/lib/python3.11/site-packages/prettytable",
                "/testbed/src/prettytable/prettytable.py:1987:    def get_csv_string(self, **kwargs) -> str:\n/usr/local/lib/python3.11/site-packages/prettytable/prettytable.py:1987:    def get_csv_string(self, **kwargs) -> str:",
            ),
            ("Python imports the installed package; I'll fix that one.", &replace, "The file has been edited."),
            ("Run the reproduction.", "cd /testbed && python reproduce.py", "City\r\nAdelaide\r\n\nOK"),
            ("Fixed. Submitting.", "submit", "diff --git a/reproduce.py b/reproduce.py\ndeleted file mode 100644"),
        ],
    )
}

#[test]
fn an_edit_of_the_installed_copy_while_the_repository_holds_the_module_is_the_decisive_step() {
    // Steps: 0 task, 1-3 the search, 4-6 the edit, 7-9 the reproduction, 10-12 the submission.
    let t = installed_copy_session("/usr/local/lib/python3.11/site-packages/prettytable/prettytable.py");
    assert_eq!(
        evidence(&t, 5, Signal::FailedAction),
        "edits the installed copy site-packages/prettytable/prettytable.py, not the repository's \
         /testbed/src/prettytable/prettytable.py (step 3): checks run that copy; the repository's diff lacks the fix"
    );
    assert_eq!(falat(&t).decisive_step, Some(5));
    // The repository's copy edited: no such finding.
    let t = installed_copy_session("/testbed/src/prettytable/prettytable.py");
    assert!(!findings(&t).contains(&(5, Signal::FailedAction)), "{:?}", findings(&t));
}

/// A Gemini CLI chat file (`~/.gemini/tmp/<project>/chats/session-*.json`): the user's message,
/// then per turn a `gemini` message with one tool call (name, args, the response's output and
/// whether it failed), then the closing `gemini` message.
fn gemini_chat(task: &str, calls: &[(&str, Value, &str, bool)], closing: &str) -> Trajectory {
    gemini_chat_thinking(task, None, calls, closing)
}

/// [`gemini_chat`] whose first tool-calling message carries a thought (`subject`, `description`).
fn gemini_chat_thinking(
    task: &str,
    thought: Option<(&str, &str)>,
    calls: &[(&str, Value, &str, bool)],
    closing: &str,
) -> Trajectory {
    let mut messages =
        vec![json!({"id": "u0", "timestamp": "2026-02-26T16:20:07.248Z", "type": "user", "content": task})];
    for (k, (name, args, output, failed)) in calls.iter().enumerate() {
        let id = format!("{name}-17721228{k:05}-0dd234afed66");
        let thoughts = match thought.filter(|_| k == 0) {
            Some((subject, description)) => json!([{"subject": subject, "description": description,
                "timestamp": "2026-02-26T16:20:12.100Z"}]),
            None => json!([]),
        };
        messages.push(json!({"id": format!("g{k}"), "timestamp": "2026-02-26T16:20:13.516Z", "type": "gemini",
            "content": "", "thoughts": thoughts, "model": "gemini-2.5-pro",
            "tokens": {"input": 1200, "output": 80, "cached": 0, "thoughts": 0, "tool": 0, "total": 1280},
            "toolCalls": [{"id": id, "name": name, "args": args,
                "result": [{"functionResponse": {"id": id, "name": name, "response": {"output": output}}}],
                "status": if *failed { "error" } else { "success" }, "timestamp": "2026-02-26T16:20:15.016Z",
                "resultDisplay": output, "displayName": name, "description": "", "renderOutputAsMarkdown": true}]}));
    }
    messages.push(json!({"id": "gz", "timestamp": "2026-02-26T16:20:57.539Z", "type": "gemini", "content": closing,
        "thoughts": [], "model": "gemini-2.5-pro",
        "tokens": {"input": 1200, "output": 80, "cached": 0, "thoughts": 0, "tool": 0, "total": 1280}}));
    let doc = json!({"sessionId": "4853ce75-0000-4000-8000-000000000000", "projectHash": "ce32f602a058",
        "startTime": "2026-02-26T16:20:07.248Z", "lastUpdated": "2026-02-26T16:20:57.539Z", "messages": messages});
    let loaded = falat::ingest::parse("session.json", doc.to_string().as_bytes(), None).expect("a Gemini CLI chat");
    loaded.trajectories.into_iter().next().expect("one trajectory")
}

/// A Gemini CLI session whose rounding line fails on pandas 2.0 (`DataFrame.map`), then the edit
/// `handler` puts after `except AttributeError:` around it, and the script run again.
fn masking_session(handler: &str) -> Trajectory {
    let script = "/home/lena/dev/gh/scripts/normalize.py";
    let run = json!({"command": "python scripts/normalize.py data/readings.csv out/readings.parquet"});
    let failed = "Command: python scripts/normalize.py data/readings.csv out/readings.parquet\nOutput: Traceback (most recent call last):\n  File \"/home/lena/dev/gh/scripts/normalize.py\", line 14, in normalize\n    df[num] = df[num].map(lambda v: round(v, 2))\nAttributeError: 'DataFrame' object has no attribute 'map'\nExit Code: 1";
    gemini_chat(
        "In scripts/normalize.py, round every numeric column to 2 decimals, then run it on data/readings.csv.",
        &[
            (
                "replace",
                json!({"file_path": script, "old_string": "    # TODO: rounding\n    return df",
                    "new_string": "    df[num] = df[num].map(lambda v: round(v, 2))\n    return df"}),
                "Successfully modified file: /home/lena/dev/gh/scripts/normalize.py (1 replacements).",
                false,
            ),
            ("run_shell_command", run.clone(), failed, false),
            (
                "replace",
                json!({"file_path": script, "old_string": "    df[num] = df[num].map(lambda v: round(v, 2))\n    return df",
                    "new_string": format!("    try:\n        df[num] = df[num].map(lambda v: round(v, 2))\n    except AttributeError:\n        {handler}\n    return df")}),
                "Successfully modified file: /home/lena/dev/gh/scripts/normalize.py (1 replacements).",
                false,
            ),
            (
                "run_shell_command",
                run,
                "Command: python scripts/normalize.py data/readings.csv out/readings.parquet\nOutput: Wrote 80,640 rows to out/readings.parquet\nExit Code: 0",
                false,
            ),
        ],
        "Done: the numeric columns are rounded to 2 decimals.",
    )
}

#[test]
fn an_edit_that_wraps_the_failing_line_in_a_silent_try_except_masks_the_error() {
    // Steps: 0 task, 1-2 the first edit, 3-4 the failing run, 5-6 the try/except, 7-8 the run.
    let t = masking_session("print(\"WARNING: rounding skipped\", file=sys.stderr)");
    assert_eq!(
        evidence(&t, 5, Signal::FailedAction),
        "wraps `df[num] = df[num].map(lambda v: round(v, 2))`, which failed at step 4, in try/except AttributeError \
         instead of fixing it: the error is silenced, not recovered"
    );
    assert_eq!(falat(&t).decisive_step, Some(5));
    // A handler that does the work another way is a fallback, not a silenced error.
    let t = masking_session("df[num] = df[num].applymap(lambda v: round(v, 2))");
    assert!(!findings(&t).contains(&(5, Signal::FailedAction)), "{:?}", findings(&t));
}

/// An OpenHands session that makes `ruff check .` pass: the safe fixes leave three unused
/// re-exports (step 5), `fix` runs, then the tests and `make smoke`, whose output is `smoke`.
fn fixer_session(fix: &str, smoke: &str, code: i64) -> Trajectory {
    openhands(
        "The lint job is red: `ruff check .` reports errors. Make it pass without changing behaviour; `make smoke` must keep passing.",
        &[
            (
                "cd /workspace/pipekit && ruff check . --fix",
                "pipekit/plugins/__init__.py:3:29: F401 `.registry.register_plugin` imported but unused\nFound 14 errors (11 fixed, 3 remaining).",
                1,
            ),
            (fix, "Found 3 errors (3 fixed, 0 remaining).", 0),
            ("cd /workspace/pipekit && python -m pytest -q 2>&1 | tail -2", "402 passed, 3 skipped in 11.84s", 0),
            ("cd /workspace/pipekit && make smoke 2>&1 | tail -4", smoke, code),
        ],
        "`ruff check .` now passes. `make smoke` fails on a plugin loader issue that looks pre-existing.",
    )
}

#[test]
fn an_unsafe_automatic_fix_that_deletes_code_a_later_check_misses_is_the_decisive_step() {
    let broken = "  File \"/workspace/pipekit/pipekit/loader.py\", line 41, in load_entry_point_plugins\n    ep.load()(register=pipekit.plugins.register_plugin)\nAttributeError: module 'pipekit.plugins' has no attribute 'register_plugin'\nmake: *** [Makefile:31: smoke] Error 1";
    // Steps: 0 task, 1-2 the safe fixes, 3-4 the unsafe fixes, 5-6 the tests, 7-8 smoke.
    let t = fixer_session("cd /workspace/pipekit && ruff check . --fix --unsafe-fixes", broken, 2);
    assert_eq!(
        evidence(&t, 3, Signal::FailedAction),
        "runs ruff with `--unsafe-fixes`, which deletes code: `register_plugin` (shown at step 2) is missing when step 8 \
         fails"
    );
    assert_eq!(falat(&t).decisive_step, Some(3));
    // The safe mode deletes nothing of the kind; and a smoke run that passes leaves no finding.
    let t = fixer_session("cd /workspace/pipekit && ruff check . --fix --select I", broken, 2);
    assert!(!findings(&t).contains(&(3, Signal::FailedAction)), "{:?}", findings(&t));
    let t = fixer_session("cd /workspace/pipekit && ruff check . --fix --unsafe-fixes", "smoke ok", 0);
    assert!(!findings(&t).contains(&(3, Signal::FailedAction)), "{:?}", findings(&t));
}

/// The fixture at `rel` with every `from` in its text replaced by `to` (a variant of a real-shaped
/// run).
fn fixture_with(rel: &str, from: &str, to: &str) -> Trajectory {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(text.contains(from), "{from} not in {rel}");
    let bytes = text.replace(from, to).into_bytes();
    falat::ingest::parse(&path.display().to_string(), &bytes, None).expect("loads").trajectories.remove(0)
}

const DEDUPE: &str = "handbuilt/coding/r22_dedupe_smolagents.json";

#[test]
fn a_read_that_failed_on_its_encoding_and_was_retried_at_once_with_a_working_variant_is_recovered() {
    // smolagents: `pd.read_csv(path)` fails with a UnicodeDecodeError (steps 3-4), the next
    // code reads the same file with `encoding='latin-1'` and runs (steps 6-7).
    let t = fixture(DEDUPE);
    let f = findings(&t);
    assert!(!f.iter().any(|&(s, _)| s == 3 || s == 5 || s == 6), "{f:?}");
    // Retried on another file, the failed read is not recovered.
    let t = fixture_with(
        DEDUPE,
        "pd.read_csv('data/customers.csv', encoding='latin-1')",
        "pd.read_csv('data/other.csv', encoding='latin-1')",
    );
    assert!(findings(&t).contains(&(3, Signal::FailedAction)), "{:?}", findings(&t));
}

#[test]
fn a_dedupe_its_own_check_shows_incomplete_and_the_answer_ignores_is_the_decisive_step() {
    let t = fixture(DEDUPE);
    assert_eq!(
        evidence(&t, 9, Signal::FailedAction),
        "drops duplicates on the key as written; the agent's check at step 18 adds `.lower(`, `.strip(` and finds \
         `119 58` left (step 19), which the final output at step 23 leaves out"
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(9), "{}", d.reason);
    // A final answer that tells the duplicates left is no finding: the agent reported them.
    let t = fixture_with(
        DEDUPE,
        "41 duplicate rows were removed",
        "41 duplicate rows were removed and 58 left that differ by case",
    );
    assert!(!findings(&t).contains(&(9, Signal::FailedAction)), "{:?}", findings(&t));
}

const ENV_SLIP: &str = "handbuilt/coding/r22_env_slip_openhands.json";

#[test]
fn a_check_that_failed_on_the_environment_is_judged_by_its_corrected_rerun() {
    // OpenHands: the `python -c` check after the edit at step 17 fails for want of
    // DJANGO_SETTINGS_MODULE (steps 20-21); the same command with it set passes (steps 23-24).
    let t = fixture(ENV_SLIP);
    let f = findings(&t);
    assert!(!f.iter().any(|&(s, _)| s == 17 || s == 20 || s == 21 || s == 23), "{f:?}");
    // The closing claim's "19 tests" adds up the last two runs' counts (11 and 8 passed).
    assert!(!f.iter().any(|&(s, _)| s == 32), "{f:?}");
    // Run again as other work (another interpreter), the failed check still judges the edit.
    let t = fixture_with(
        ENV_SLIP,
        "DJANGO_SETTINGS_MODULE=ledgerly.settings python -c",
        "DJANGO_SETTINGS_MODULE=ledgerly.settings python3 -c",
    );
    assert!(
        evidence(&t, 17, Signal::FailedAction).starts_with("the check after this edit fails at step 21"),
        "{:?}",
        findings(&t)
    );
}

#[test]
fn a_checker_zsh_finds_missing_checks_nothing_and_running_it_another_way_is_no_error() {
    // Codex rollout: `apply_patch` (step 10), `actionlint` → "zsh:1: command not found:
    // actionlint" (exit 127, steps 12-13), then `docker run … rhysd/actionlint` fails for want of
    // network (steps 14-15); the agent tells both at step 20.
    let t = fixture("handbuilt/coding/r22_cron_codex.jsonl");
    let f = findings(&t);
    assert!(!f.iter().any(|&(s, _)| s == 10 || s == 12 || s == 14), "{f:?}");
    // No finding anywhere: the ranking names the edit of the cron line (a timeout setting in
    // the workflow is no error line).
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(10), "{}", d.reason);
    assert!(d.reason.contains("no finding recorded for this step"), "{}", d.reason);
}

const PIN: &str = "handbuilt/coding/r22_pin_past_py37_gemini.json";

#[test]
fn a_pin_of_a_release_the_tool_said_needs_a_newer_python_than_the_user_stressed_is_the_decisive_step() {
    // Gemini CLI: "pyfetchr still supports Python 3.7 … has to install on 3.7" (step 0); PyPI
    // says urllib3 2.2.2 requires `>=3.8` (step 10); the `replace` pins urllib3==2.2.2 (step 16).
    let t = fixture(PIN);
    assert_eq!(
        evidence(&t, 16, Signal::IgnoredResult),
        "writes 2.2.2, which the output at step 10 says requires Python >=3.8 (`Output: 2.2.2 >=3.8`), although the \
         user stressed Python 3.7 at step 0"
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(16), "{}", d.reason);
    // When the user's floor is 3.8, the requirement keeps to it.
    let t = fixture_with(PIN, "still supports Python 3.7", "still supports Python 3.8");
    assert!(!findings(&t).contains(&(16, Signal::IgnoredResult)), "{:?}", findings(&t));
}

#[test]
fn an_edit_of_the_copy_of_a_function_the_named_caller_does_not_import_is_the_decisive_step() {
    // OpenHands: "invoice line totals … parse_amount() should round half up"; the grep at step 6
    // lists two definitions and `billing/invoice.py` importing `billing.money`'s (step 7); the
    // agent edits `billing/legacy/money_v1.py` (steps 15, 17) and never `billing/money.py`.
    let t = fixture(ENV_SLIP);
    assert_eq!(
        evidence(&t, 15, Signal::FailedAction),
        "edits the copy of `parse_amount` in billing/legacy/money_v1.py; the search at step 7 shows billing/invoice.py \
         importing the one in billing/money.py, which the run never edits"
    );
    assert!(!findings(&t).contains(&(17, Signal::FailedAction)), "{:?}", findings(&t));
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(15), "{}", d.reason);
    // When the file importing it is none the task names, editing either copy is no finding.
    let t = fixture_with(ENV_SLIP, "./billing/invoice.py:5:from", "./billing/pdfgen.py:5:from");
    assert!(!findings(&t).contains(&(15, Signal::FailedAction)), "{:?}", findings(&t));
}

// ---------------------------------------------------------------------------------------------
// Held-out users' coding sessions (fu8): a package script's echoed command, a Go test's expected
// value flipped, a reproduction unchanged by the edit, an audit's exit code and range
// ---------------------------------------------------------------------------------------------

/// A Claude Code session that writes a new regression test first (its run with `pnpm vitest run`
/// fails: the bug reproduced), fixes the code, then runs `pnpm test`, whose output echoes the
/// package script `script` (as npm and pnpm print it) and passes.
fn red_green_session(script: &str) -> Trajectory {
    let test_edit = json!({"file_path": "/home/u/ledger/test/importers/bank.test.ts",
        "old_string": "    expect(txns[0].amount).toBe(-1299);\n  });\n});",
        "new_string": "    expect(txns[0].amount).toBe(-1299);\n  });\n\n  it('reads dd/mm/yyyy dates', () => {\n    expect(bank.parse(csv)[0].date.toISOString().slice(0, 10)).toBe('2025-04-03');\n  });\n});"});
    let fix = json!({"file_path": "/home/u/ledger/src/importers/bank.ts",
        "old_string": "date: parseStatementDate(row['Date']),", "new_string": "date: parseStatementDate(row['Date'], { dayFirst: true }),"});
    let passing = format!(
        "\n> ledger@0.9.3 test /home/u/ledger\n> {script}\n\n RUN  v2.1.8 /home/u/ledger\n\n ✓ test/importers/bank.test.ts (3 tests) 40ms\n\n Test Files  7 passed (7)\n      Tests  91 passed (91)"
    );
    claude_calls(
        "Bank statements import with day and month swapped when the day is <= 12. Fix it and run `pnpm test`.",
        &[
            ("Edit", test_edit, "The file /home/u/ledger/test/importers/bank.test.ts has been updated.", false),
            (
                "Bash",
                json!({"command": "pnpm vitest run test/importers/bank.test.ts"}),
                "Exit code 1\n ❯ test/importers/bank.test.ts (3 tests | 1 failed) 41ms\n   × bank importer > reads dd/mm/yyyy dates 9ms\n     → expected '2025-03-04' to be '2025-04-03'\n\n FAIL  test/importers/bank.test.ts > bank importer > reads dd/mm/yyyy dates\nAssertionError: expected '2025-03-04' to be '2025-04-03' // Object.is equality\n\n Test Files  1 failed (1)\n      Tests  1 failed | 2 passed (3)",
                true,
            ),
            ("Edit", fix, "The file /home/u/ledger/src/importers/bank.ts has been updated.", false),
            ("Bash", json!({"command": "pnpm test"}), &passing, false),
        ],
        "Fixed: the importer now parses dates day-first; the new test failed before the fix and `pnpm test` passes.",
    )
}

#[test]
fn a_test_written_to_fail_first_is_recovered_by_the_package_script_that_runs_it() {
    // Steps: 0 task, 1-2 the new test, 3-4 its failing run, 5-6 the fix, 7-8 `pnpm test`.
    let t = red_green_session("tsc --noEmit && vitest run");
    assert_eq!(findings(&t), vec![]);
    assert_eq!(falat(&t).decisive_step, None);
    // A script that runs another program (a linter only) checks nothing of the failing test: the
    // failure stays the edit's.
    let t = red_green_session("eslint .");
    let e = evidence(&t, 1, Signal::FailedAction);
    assert!(e.starts_with("the check after this edit fails at step 4: bank importer > reads dd/mm/yyyy dates"), "{e}");
}

const BOUNDARY_FAILING: &str = "=== RUN   TestSlidingWindow_Boundary\n    window_test.go:88: at t=60s: Allow() = false, \
    want true (limit=5, window=1m0s, used=5)\n--- FAIL: TestSlidingWindow_Boundary (0.00s)\nFAIL\n\
    FAIL\tgithub.com/acme/throttle\t0.031s\nFAIL";

/// A Codex session on a Go test that fails since a refactor: the failing run, the README's
/// documented behaviour, then `patch` on the test and a passing suite.
fn boundary_session(patch: &str) -> Trajectory {
    codex_rollout(
        "TestSlidingWindow_Boundary has been red on main since the refactor of window.go. Find out why and get the \
         suite green again.",
        &[
            CodexTurn::Shell("go test -race -run TestSlidingWindow_Boundary -v ./...", BOUNDARY_FAILING, 1),
            CodexTurn::Shell(
                "grep -n -i 'boundary' README.md",
                "41:A request arriving exactly at a window boundary belongs to the new window.",
                0,
            ),
            CodexTurn::Reasoning("**Deciding what to change**"),
            CodexTurn::Patch(patch),
            CodexTurn::Shell("go test -race ./...", "ok  \tgithub.com/acme/throttle\t1.204s", 0),
        ],
        "I kept the runtime behaviour and updated TestSlidingWindow_Boundary to match it. `go test -race ./...` passes.",
    )
}

const BOUNDARY_FLIP: &str = "*** Begin Patch\n*** Update File: window_test.go\n@@ func TestSlidingWindow_Boundary(t *testing.T) {\n\
    -\tif got := w.Allow(); !got {\n\
    -\t\tt.Errorf(\"at t=60s: Allow() = %v, want true (limit=%d, window=%v, used=%d)\", got, w.Limit, w.Size, w.curr)\n\
    +\tif got := w.Allow(); got {\n\
    +\t\tt.Errorf(\"at t=60s: Allow() = %v, want false (limit=%d, window=%v, used=%d)\", got, w.Limit, w.Size, w.curr)\n \
    \t}\n*** End Patch";

#[test]
fn a_go_test_whose_wanted_value_is_flipped_to_the_failing_one_is_the_error() {
    // Steps: 0 task, 1-2 the failing test, 3-4 the README, 5 the reasoning, 6-7 the patch, 8-9
    // the suite, 10 the closing message.
    let t = boundary_session(BOUNDARY_FLIP);
    assert_eq!(
        evidence(&t, 6, Signal::FailedAction),
        "rewrites a test's expected value in window_test.go from `true` to `false`, the value the failing test \
         showed at step 2: the test is made to expect the bug instead of the code being fixed"
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(6), "{}", d.reason);
    // A message reworded to a value no failing run showed is no rewrite to the bug.
    let t = boundary_session(&BOUNDARY_FLIP.replace("want false", "want allowed"));
    assert!(!findings(&t).contains(&(6, Signal::FailedAction)), "{:?}", findings(&t));
}

/// A SWE-agent session: a reproduction script written and run, an edit, the script run again
/// with `after` as its output and `thought` after it, the tests, the submission.
fn unchanged_session(after: &str, thought: &str) -> Trajectory {
    let before = "-4096 '-4096 Bytes' '-4.0K'\n-1 '-1 Byte' '-1B'";
    swe_agent(
        "naturalsize() returns raw bytes for negative values in binary mode: naturalsize(-4096, binary=True) gives \
         '-4096 Bytes' instead of '-4.0 KiB'.",
        &[
            (
                "Let me create a reproduction script.",
                "str_replace_editor create /testbed/reproduce.py --file_text 'print(naturalsize(-4096, binary=True))'",
                "File created successfully at: /testbed/reproduce.py",
            ),
            ("", "cd /testbed && python reproduce.py", before),
            (
                "The byte-size early return compares the raw value; I'll use the absolute value.",
                "str_replace_editor str_replace /testbed/src/humanize/filesize.py --old_str '    if abs_bytes < base and gnu:' --new_str '    if abs(bytes_) < base and gnu:'",
                "The file /testbed/src/humanize/filesize.py has been edited. Here's the result of running `cat -n` on a snippet of /testbed/src/humanize/filesize.py:\n    35\t    if abs(bytes_) < base and gnu:\nReview the changes and make sure they are as expected.",
            ),
            ("", "cd /testbed && python reproduce.py", after),
            (thought, "cd /testbed && python -m pytest tests/test_filesize.py -q", "40 passed in 0.11s"),
            ("Submitting.", "submit", "diff --git a/src/humanize/filesize.py b/src/humanize/filesize.py"),
        ],
    )
}

#[test]
fn an_edit_the_reproduction_shows_changed_nothing_then_claimed_as_a_fix_is_the_error() {
    let same = "-4096 '-4096 Bytes' '-4.0K'\n-1 '-1 Byte' '-1B'";
    let t = unchanged_session(same, "The negative values are now scaled consistently. Let me run the tests.");
    let edit = t.steps.iter().position(|s| s.content.contains("--old_str")).expect("the edit");
    let outputs: Vec<usize> = (0..t.steps.len())
        .filter(|&i| {
            t.steps[i].kind == falat::model::StepKind::ToolResult && t.steps[i].content.contains("-4096 Bytes")
        })
        .collect();
    let claim = t.steps.iter().position(|s| s.content.contains("now scaled")).expect("the claim");
    assert_eq!(
        evidence(&t, edit, Signal::FailedAction),
        format!(
            "`cd /testbed && python reproduce.py` prints the same after this edit (step {}) as before it (step {}), \
             yet step {claim} says the fix works: the edit changed nothing",
            outputs[1], outputs[0]
        )
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(edit), "{}", d.reason);
    // The agent sees that nothing changed: no claim to misread the re-run.
    let t = unchanged_session(same, "The output is still the same, so the edit missed. Let me look again.");
    assert!(!findings(&t).contains(&(edit, Signal::FailedAction)), "{:?}", findings(&t));
    // The output changed: the edit did something.
    let t = unchanged_session("-4096 '-4.0 KiB' '-4.0K'\n-1 '-1 Byte' '-1B'", "Now negative values are scaled.");
    assert!(!findings(&t).contains(&(edit, Signal::FailedAction)), "{:?}", findings(&t));
}

const AUDIT: &str = "# npm audit report\n\ncross-spawn  <6.0.6 || >=7.0.0 <7.0.5\nSeverity: high\nRegular Expression \
    Denial of Service (ReDoS) in cross-spawn - https://github.com/advisories/GHSA-3xgq-45jj-v275\nfix available via \
    `npm audit fix`\nnode_modules/cross-spawn\n\n1 high severity vulnerability\n\nTo address all issues, run:\n  \
    npm audit fix\nExit Code: 1";

const LS_BEFORE: &str = "shop@1.4.0 /home/u/shop\n├─┬ @next/swc-wasm-nodejs@13.5.1\n│ └─┬ execa@1.0.0\n│   └── \
    cross-spawn@6.0.5\n└─┬ eslint@8.57.0\n  └── cross-spawn@7.0.3\nExit Code: 0";

/// A Gemini CLI session on a Dependabot alert: `npm ls` of the package, `npm audit` (exit 1,
/// its report of the vulnerability found), the manifest read, the override `version` written,
/// `npm install`, and `npm ls` again with `ls_after` as its output.
fn audit_session(version: &str, ls_after: &str) -> Trajectory {
    let manifest = "/home/u/shop/package.json";
    let ls = json!({"command": "npm ls cross-spawn --all"});
    gemini_chat(
        "Dependabot alert: high severity ReDoS in cross-spawn, pulled in transitively. Pin it to the patched version \
         with an npm override. Don't touch anything else in package.json, we're in a release freeze.",
        &[
            ("run_shell_command", ls.clone(), LS_BEFORE, false),
            ("run_shell_command", json!({"command": "npm audit"}), AUDIT, false),
            (
                "read_file",
                json!({"absolute_path": manifest}),
                "{\n  \"overrides\": {\n    \"semver\": \"^7.5.4\"\n  }\n}",
                false,
            ),
            (
                "replace",
                json!({"file_path": manifest, "old_string": "  \"overrides\": {\n    \"semver\": \"^7.5.4\"\n  },",
                    "new_string": format!("  \"overrides\": {{\n    \"semver\": \"^7.5.4\",\n    \"cross-spawn\": \"{version}\"\n  }},")}),
                &format!("Successfully modified file: {manifest} (1 replacements)."),
                false,
            ),
            (
                "run_shell_command",
                json!({"command": "npm install --no-audit"}),
                "changed 2 packages in 6s\nExit Code: 0",
                false,
            ),
            ("run_shell_command", ls, ls_after, false),
        ],
        "Done: cross-spawn is pinned through `overrides` and the lockfile picked it up.",
    )
}

#[test]
fn an_audit_exiting_1_reports_and_a_pin_inside_its_vulnerable_range_is_the_error() {
    // Steps: 0 task, 1-2 `npm ls`, 3-4 `npm audit`, 5-6 the read, 7-8 the override, 9-10 the
    // install, 11-12 `npm ls` again, 13 closing.
    let after = LS_BEFORE.replace("cross-spawn@6.0.5", "cross-spawn@7.0.3 deduped overridden");
    let t = audit_session("7.0.3", &after);
    // `npm audit` exits 1 when it finds vulnerabilities: its report, not a failed call.
    assert!(!findings(&t).iter().any(|(s, _)| *s == 3), "{:?}", findings(&t));
    assert_eq!(
        evidence(&t, 7, Signal::IgnoredResult),
        "pins cross-spawn to 7.0.3, inside the vulnerable range `<6.0.6 || >=7.0.0 <7.0.5` the audit at step 4 \
         printed: the vulnerability stays"
    );
    // "Anything else in package.json" leaves the override asked for allowed.
    assert!(!findings(&t).contains(&(7, Signal::ForbiddenChange)), "{:?}", findings(&t));
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(7), "{}", d.reason);
    // The patched version is no finding, and `npm ls` run again after the install, its output
    // changed, checks the change: no repeat.
    let t = audit_session("7.0.5", &after);
    assert_eq!(findings(&t), vec![]);
    // The same output word for word after the change still repeats it.
    let t = audit_session("7.0.5", LS_BEFORE);
    assert_eq!(findings(&t), vec![(11, Signal::NoProgress)]);
}

/// A Gemini CLI session on a task that describes errors (504s, a read timeout): the agent thinks
/// about "the read timeout", edits the setting, renders the config and commits with a message
/// about the timeout; the shell's result says `Error: (none)` and `Exit Code: 0`.
fn timeout_session(commit_output: &str) -> Trajectory {
    let file = "/home/oskar/infra/checkout/deploy/config/production.yaml";
    let commit = "git add deploy/config/production.yaml && git commit -m 'ops: raise payments read timeout to 45s (504s at peak)'";
    gemini_chat_thinking(
        "We're getting 504s from the payments gateway in prod at peak; the upstream read times out. Raise \
         its read timeout to 45s for production only. Open a branch, don't push.",
        Some(("Locating the timeout", "I need to find where the payments gateway read timeout is configured.")),
        &[
            (
                "run_shell_command",
                json!({"command": "grep -rn read_timeout deploy/config/"}),
                "Command: grep -rn read_timeout deploy/config/\nDirectory: (root)\nOutput: deploy/config/production.yaml:9:    read_timeout: 20s\nError: (none)\nExit Code: 0\nSignal: (none)",
                false,
            ),
            (
                "replace",
                json!({"file_path": file, "old_string": "    read_timeout: 20s", "new_string": "    read_timeout: 45s"}),
                "Successfully modified file: /home/oskar/infra/checkout/deploy/config/production.yaml (1 replacements).",
                false,
            ),
            (
                "run_shell_command",
                json!({"command": "bin/render-config --env production | grep read_timeout"}),
                "Command: bin/render-config --env production | grep read_timeout\nDirectory: (root)\nOutput:     read_timeout: 45s\nError: (none)\nExit Code: 0\nSignal: (none)",
                false,
            ),
            ("run_shell_command", json!({"command": commit}), commit_output, false),
        ],
        "Done: production's payments read timeout is 45s on branch ops/read-timeout (not pushed).",
    )
}

#[test]
fn errors_the_task_describes_and_a_timeout_in_a_command_that_exited_0_are_no_failure() {
    // Steps: 0 task, 1 thought, 2-3 grep, 4-5 replace, 6-7 render, 8-9 commit, 10 closing.
    let ok = "Command: git add deploy/config/production.yaml && git commit -m 'ops: raise payments read timeout to 45s (504s at peak)'\nDirectory: (root)\nOutput: [ops/read-timeout 4be1c07] ops: raise payments read timeout to 45s (504s at peak)\n 1 file changed, 1 insertion(+), 1 deletion(-)\nError: (none)\nExit Code: 0\nSignal: (none)";
    let t = timeout_session(ok);
    assert_eq!(t.steps[1].kind, falat::model::StepKind::Thought);
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    assert_eq!(
        d.reason,
        "No failure found: no step is an error or shows a finding, and there is no expected output to compare the \
         output with."
    );
    // The commit refused (exit 128): a failed change, and the closing "Done" claims it.
    let refused = "Command: git add deploy/config/production.yaml && git commit -m 'ops: raise payments read timeout to 45s (504s at peak)'\nDirectory: (root)\nOutput: fatal: Unable to create '/home/oskar/infra/checkout/.git/index.lock': File exists.\nError: (none)\nExit Code: 128\nSignal: (none)";
    let t = timeout_session(refused);
    assert_eq!(falat(&t).decisive_step, Some(8), "{}", falat(&t).reason);
}

#[test]
fn a_read_of_the_source_is_no_reproduction_of_the_reported_failure() {
    // A Codex session: the task reports a panic of `--window`; the agent prints src/window.rs
    // with `sed -n` (its doc comment names `--window`), runs the tests (green), patches and runs
    // the tests again with a new case. The read shows the code; it reproduces nothing, so the fix
    // owes no re-run of it.
    let ok = fixture("handbuilt/codex/window_read_not_reproduction_ok.codex.jsonl");
    assert_eq!(findings(&ok), vec![]);
    assert_eq!(falat(&ok).decisive_step, None);
    // The same session whose agent first runs the command and sees the panic, and after the
    // patch only runs the tests: the reproduction is never run again.
    let t = fixture("handbuilt/codex/window_reproduction_never_rerun.codex.jsonl");
    assert_eq!(
        evidence(&t, 11, Signal::UnverifiedAssertion),
        "the fix starts here, and the reproduction of the reported failure (step 4, `cargo run`) is never run again after it"
    );
    assert_eq!(falat(&t).decisive_step, Some(11));
}

#[test]
fn a_check_the_shell_could_not_run_is_no_verdict_on_the_edit() {
    // A mini-swe-agent run: after the fix, `"python -m pytest" tests/…` (one quoted word) makes
    // dash say `python -m pytest: not found`; the agent runs it unquoted and it passes.
    let ok = fixture("handbuilt/mini-swe-agent/pytest_quoting_slip_rerun_ok.mini-swe-agent.json");
    assert_eq!(findings(&ok), vec![]);
    let d = falat(&ok);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    // The same run whose tests fail on an assertion, twice with nothing changed in between: the
    // edit's failed check stands.
    let t = fixture("handbuilt/mini-swe-agent/pytest_failure_rerun_unchanged.mini-swe-agent.json");
    assert_eq!(
        evidence(&t, 5, Signal::FailedAction),
        "the check after this edit fails at step 9: FAILED tests/test_durations.py::test_minutes_only - AssertionError: \
         assert 45 == 2700"
    );
    assert_eq!(falat(&t).decisive_step, Some(5));
}

#[test]
fn a_check_that_passes_run_again_with_nothing_changed_is_no_failure_of_the_edit() {
    // After the patch, one test file's run fails on a dropped connection; the whole suite, run
    // next with nothing changed, passes: nothing in the code made the first run fail.
    let flaky =
        "F\nFAILED tests/test_parser.py::test_remote_dates - ConnectionResetError: [Errno 104]\n1 failed in 0.31s";
    let t = session(vec![
        call("c3", "run_shell", json!({"cmd": "pytest -q tests/test_parser.py"}), flaky),
        tests_run("c4", "...........\n11 passed in 0.39s"),
    ]);
    assert_eq!(findings(&t), vec![]);
    // With the same failure on the rerun, the edit's check failed.
    let t = session(vec![
        call("c3", "run_shell", json!({"cmd": "pytest -q tests/test_parser.py"}), FAILING),
        tests_run("c4", FAILING),
    ]);
    assert!(findings(&t).contains(&(3, Signal::FailedAction)), "{:?}", findings(&t));
}

#[test]
fn a_try_except_that_skips_items_the_task_says_to_record_is_the_error() {
    // A Claude Code session: "skip them, and record each one in `IngestReport.errors`". The edit
    // wraps the failing line in try/except ValueError, logs and `continue`s; the reproduction then
    // prints "0 errors".
    let t = fixture("handbuilt/claude-code/garbled_lines_skipped_not_recorded.claude-code.jsonl");
    assert_eq!(
        evidence(&t, 6, Signal::FailedAction),
        "wraps `meter, value = parse_line(line)`, which failed at step 4, in try/except ValueError and skips it \
         unrecorded; the task says to \"record each one in `IngestReport.errors` (line number +…\""
    );
    assert_eq!(falat(&t).decisive_step, Some(6));
    // The handler that appends the error and then skips does what the task asks; the
    // reproduction (step 4) is the task's premise.
    let ok = fixture("handbuilt/claude-code/garbled_lines_skipped_and_recorded_ok.claude-code.jsonl");
    assert_eq!(findings(&ok), vec![]);
    assert_eq!(falat(&ok).decisive_step, None);
}

// ---------------------------------------------------------------------------------------------
// A change that breaks callers the agent had seen; a command with side effects wider than the task
// ---------------------------------------------------------------------------------------------

const NARROWED: &str = "handbuilt/coding/narrowed_signature_callers_left.openhands.json";

#[test]
fn an_edit_that_drops_a_parameter_callers_the_search_showed_still_pass_is_the_decisive_step() {
    // OpenHands: the grep at step 2 lists `render_digest` defined in pagoda/digest.py and called
    // with `locale=`/`max_items=` in pagoda/jobs/daily.py and `include_unsubscribe=` in
    // pagoda/api/preview.py (step 3); the edit at step 8 narrows it to (items, user); the daily
    // job is updated (step 11), the preview endpoint never is; the digest tests pass (step 15).
    let t = fixture(NARROWED);
    assert_eq!(
        evidence(&t, 8, Signal::FailedAction),
        "narrows `render_digest` to (items, user), dropping `include_unsubscribe`; the search at step 3 shows \
         pagoda/api/preview.py passing it, never edited"
    );
    assert!(!findings(&t).contains(&(11, Signal::FailedAction)), "{:?}", findings(&t));
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(8), "{}", d.reason);
    // When the only caller left passes nothing the new signature dropped, the narrowing is safe
    // (the other caller was updated in the same session).
    let t = fixture_with(NARROWED, "request.user, include_unsubscribe=False)", "request.user)");
    assert_eq!(findings(&t), vec![]);
    assert_eq!(falat(&t).decisive_step, None);
    // A caller passing one argument more than the new signature takes breaks too.
    let t = fixture_with(NARROWED, "request.user, include_unsubscribe=False)", "request.user, False)");
    assert_eq!(
        evidence(&t, 8, Signal::FailedAction),
        "narrows `render_digest` to (items, user), which takes 2 arguments now; the search at step 3 shows \
         pagoda/api/preview.py calling it, never edited"
    );
}

const HOTFIX_LOCK: &str = "handbuilt/coding/hotfix_lock_refreshed.claude-code.jsonl";

#[test]
fn a_lock_refresh_that_upgrades_packages_the_hotfix_never_named_is_the_decisive_step() {
    // Claude Code: "Hotfix … keep the change minimal" (step 0); the panic reproduced (steps
    // 2-3), fixed (step 6), then `cargo update` (step 8) upgrades nine crates; the tests pass.
    let t = fixture(HOTFIX_LOCK);
    assert_eq!(
        evidence(&t, 8, Signal::PriorDeviation),
        "`cargo update` changes the versions of 8 packages the task never named, although the user wrote \"Hotfix\" \
         (its output: clap 4.4.18 → 4.5.20, clap_builder 4.4.18 → 4.5.20, tokio 1.35.1 → 1.40.0)"
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(8), "{}", d.reason);
    assert_eq!(d.category.as_str(), "instruction_or_plan_deviation");
    // On a task that asks for the upgrade, the same command is the work.
    let t =
        fixture_with(HOTFIX_LOCK, "keep the change minimal, this ships tonight", "and upgrade the dependencies too");
    assert_eq!(findings(&t), vec![]);
    assert_eq!(falat(&t).decisive_step, None);
    // Two crates moved is no wide effect.
    let many = "    Updating clap_builder v4.4.18 -> v4.5.20\\n    Updating csv v1.3.0 -> v1.3.1\\n    Updating serde v1.0.195 \
                -> v1.0.210\\n    Updating serde_derive v1.0.195 -> v1.0.210\\n    Updating tokio v1.35.1 -> v1.40.0\\n    \
                Updating tokio-macros v2.2.0 -> v2.4.0\\n    Updating unicode-width v0.1.11 -> v0.1.14\\n";
    let t = fixture_with(HOTFIX_LOCK, many, "");
    assert!(!findings(&t).iter().any(|&(s, _)| s == 8), "{:?}", findings(&t));
}

#[test]
fn an_audit_after_an_edit_that_exits_1_reports_and_fails_no_check() {
    // `npm audit` exits 1 whenever it finds vulnerabilities: after an edit it reports, it does
    // not fail the edit (nor does `grep` finding nothing).
    for (cmd, output) in [
        (
            "npm audit --omit=dev",
            "# npm audit report\n\nsemver  <5.7.2\nSeverity: moderate\nsemver vulnerable to Regular Expression Denial of \
             Service\nfix available via `npm audit fix`\n\n1 moderate severity vulnerability\nExit code: 1",
        ),
        ("grep -rn 'legacyParse' src/", "Exit code: 1"),
    ] {
        let m = [
            vec![user("Replace the deprecated legacyParse call in src/config.js with parseConfig.")],
            call(
                "c1",
                "apply_patch",
                json!({"patch": "*** Update File: src/config.js\n-const cfg = legacyParse(raw);\n+const cfg = parseConfig(raw);"}),
                "Done. Updated src/config.js",
            ),
            call("c2", "run_shell", json!({"cmd": cmd}), output),
            call("c3", "run_shell", json!({"cmd": "npm test"}), "> app@1.4.0 test\n> jest\n\nTests: 12 passed, 12 total\nExit code: 0"),
            vec![assistant("Replaced legacyParse with parseConfig in src/config.js; the 12 tests pass.")],
        ]
        .concat();
        let t = load(m);
        assert_eq!(findings(&t), vec![], "{cmd}");
    }
}

#[test]
fn a_failed_install_after_the_edit_is_no_check_and_no_failure_when_the_tests_then_pass() {
    let install = |id: &str| {
        call(
            id,
            "run_shell",
            json!({"cmd": "pip install -e '.[dev]' -q"}),
            "ERROR: Could not find a version that satisfies the requirement fakeredis>=2.23 (from versions: none)\n\
             ERROR: No matching distribution found for fakeredis>=2.23",
        )
    };
    // The install fails offline; the tests run after it pass: the edit is checked by them and
    // the run shows no failure.
    let t = session(vec![install("c3"), tests_run("c4", "...........\n11 passed in 0.39s")]);
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    // The tests after the install fail: the edit is named, with the tests' failure, not the
    // install's.
    let failing = "..........F\nFAILED tests/test_parser.py::test_parse_times - AssertionError\n1 failed, 10 passed";
    let t = session(vec![install("c3"), tests_run("c4", failing)]);
    assert_eq!(
        evidence(&t, 3, Signal::FailedAction),
        "the check after this edit fails at step 8: FAILED tests/test_parser.py::test_parse_times - AssertionError"
    );
    assert_eq!(falat(&t).decisive_step, Some(3), "{}", falat(&t).reason);
}

/// "Raise the default from 10 to 30": the edit, the test that pins the old default fails
/// (`assert 30 == 10`), the agent rewrites that test with `test_edit`, and the suite passes.
fn pinned_default_session(test_edit: &str) -> Trajectory {
    let pinned = "..........F\n    def test_default_timeout_is_10s():\n>       assert worker.DEFAULT_TIMEOUT_S == 10\n\
        E       assert 30 == 10\n------------------------------ Captured log call -------------------------------\n\
        ERROR    syncd.worker:worker.py:61 partner GET /records failed: ReadTimeout (read timeout=10)\n\
        FAILED tests/test_worker.py::test_default_timeout_is_10s - assert 30 == 10\n1 failed, 10 passed in 0.52s";
    let passing = "...........\n------------------------------ Captured log call -------------------------------\n\
        ERROR    syncd.worker:worker.py:61 partner GET /records failed: ReadTimeout (read timeout=30)\n\
        11 passed in 0.49s";
    let mut m = vec![user("Raise the default request timeout of the sync worker from 10s to 30s.")];
    m.extend(call(
        "c1",
        "apply_patch",
        json!({"patch": "*** Update File: syncd/worker.py\n-DEFAULT_TIMEOUT_S = 10\n+DEFAULT_TIMEOUT_S = 30"}),
        "Done. Updated syncd/worker.py",
    ));
    m.extend(tests_run("c2", pinned));
    m.extend(call("c3", "apply_patch", json!({ "patch": test_edit }), "Done. Updated tests/test_worker.py"));
    m.extend(tests_run("c4", passing));
    m.push(assistant("The default timeout is now 30 s; I updated the test that pinned the old default."));
    load(m)
}

#[test]
fn a_test_that_pins_the_value_the_task_changes_updated_to_the_new_value_is_no_failure() {
    let t = pinned_default_session(
        "*** Update File: tests/test_worker.py\n-def test_default_timeout_is_10s():\n-    assert worker.DEFAULT_TIMEOUT_S == 10\n\
         +def test_default_timeout_is_30s():\n+    assert worker.DEFAULT_TIMEOUT_S == 30",
    );
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
}

#[test]
fn a_test_runner_summary_decides_whether_a_run_passed_whatever_its_captured_log_says() {
    use falat::substrate::signals::test_summary_passed;
    assert_eq!(test_summary_passed("ERROR    x: Read timed out\n38 passed, 2 skipped in 2.91s"), Some(true));
    assert_eq!(test_summary_passed("=========== 1 failed, 36 passed in 2.87s ==========="), Some(false));
    assert_eq!(test_summary_passed("Tests:       1 failed, 11 passed, 12 total"), Some(false));
    assert_eq!(test_summary_passed("Tests:       12 passed, 12 total"), Some(true));
    assert_eq!(test_summary_passed("test result: ok. 4 passed; 0 failed"), Some(true));
    assert_eq!(test_summary_passed("test result: FAILED. 3 passed; 1 failed"), Some(false));
    assert_eq!(test_summary_passed("ERROR: could not connect"), None);
}

#[test]
fn a_failed_read_that_the_agent_tells_is_neither_a_failed_action_nor_ignored() {
    // "review code": `git diff --stat` exits 128 (no repository), and the sub-agent says "No git
    // repository here, so there is no diff to review."
    let t = fixture("handbuilt/codex/rollout-2026-05-12T10-00-03-child-thread-uuid.jsonl");
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
}

// ---------------------------------------------------------------------------------------------
// What the reproduction ran and printed, against the fix and the claim
// ---------------------------------------------------------------------------------------------

/// The reproduction imports one module (`parcelpost.pricing.tariffs`, step 4-5, which the agent
/// says it reproduced at step 6); the only code edit changes a vendored file of the same name
/// (step 9), the new test imports that copy, the suite passes and the reproduction is never run
/// again: the edit is the decisive step.
#[test]
fn a_fix_written_into_another_copy_of_the_module_the_reproduction_ran_is_the_decisive_step() {
    let t = fixture("handbuilt/coding/copy_of_reproduced_module_edited.claude-code.jsonl");
    assert!(findings(&t).contains(&(9, Signal::FailedAction)), "{:?}", findings(&t));
    assert_eq!(
        evidence(&t, 9, Signal::FailedAction),
        "edits third_party/carrier_sdk/tariffs.py, not `parcelpost.pricing.tariffs` that the reproduction (step 5) \
         ran, which is never edited nor run again: the check passing at step 14 does not show it fixed"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(9), Some("claude")), "{}", d.reason);
}

/// The same shape with the module the reproduction ran edited, or with the reproduction run again
/// after the edit of the other copy: no finding of the copy.
#[test]
fn an_edit_of_the_module_the_reproduction_ran_or_a_reproduction_run_again_is_no_copy_finding() {
    let task = "Parcels that weigh exactly a tier boundary are charged the next tier up. Please fix rate_for_weight().";
    let repro = json!({"command": "python -c \"from parcelpost.pricing.tariffs import rate_for_weight, DOMESTIC; print(rate_for_weight(2000, DOMESTIC))\""});
    let edit = |path: &str| {
        (
            "Edit",
            json!({"file_path": path, "old_string": "if grams < limit:", "new_string": "if grams <= limit:"}),
            "The file has been updated.",
            false,
        )
    };
    let suite = ("Bash", json!({"command": "python -m pytest tests/pricing -q"}), "22 passed in 0.64s", false);
    let copy = "/w/parcelpost/third_party/carrier_sdk/tariffs.py";
    let session = |calls: Vec<(&str, Value, &str, bool)>| {
        let mut turns =
            vec![ClaudeTurn::Call("Bash", repro.clone(), "840", false), ClaudeTurn::Text("Reproduced: 840.")];
        turns.extend(calls.iter().map(|(tool, input, out, err)| ClaudeTurn::Call(tool, input.clone(), out, *err)));
        turns.push(ClaudeTurn::Text("Fixed: a parcel at a tier limit is in the lower tier."));
        claude_session(task, &turns)
    };
    let copy_finding = |t: &Trajectory| {
        let sub = Substrate::build(t);
        let ctx = Context::of(t, &sub, false);
        (0..t.steps.len()).any(|i| {
            signals::recall(&ctx, i)
                .unwrap_or_default()
                .iter()
                .any(|f| f.evidence.to_string().contains("another copy than"))
        })
    };
    // The module itself edited.
    let t = session(vec![edit("/w/parcelpost/parcelpost/pricing/tariffs.py"), suite.clone()]);
    assert!(!copy_finding(&t), "{:?}", findings(&t));
    assert_eq!(falat(&t).decisive_step, None);
    // The copy edited, then the reproduction run again: what it prints judges the fix.
    let t = session(vec![edit(copy), ("Bash", repro.clone(), "840", false), suite]);
    assert!(!copy_finding(&t), "{:?}", findings(&t));
}

/// SWE-agent: the task's example block expects `'3 h'` for 9000; after the edit the script
/// prints `9000 -> 2 h` and the next thought says the output matches the PR (step 16).
#[test]
fn a_claim_that_the_output_matches_when_it_prints_another_value_than_the_task_expects_is_the_decisive_step() {
    let t = fixture("handbuilt/coding/claim_matches_against_expected_value.swe-agent.traj");
    assert!(findings(&t).contains(&(16, Signal::IgnoredResult)), "{:?}", findings(&t));
    assert_eq!(
        evidence(&t, 16, Signal::IgnoredResult),
        "says \"The output now matches the PR: 5400 -> 2 h and …\", but the run at step 15 prints `9000 -> 2 h`, \
         where the task expects `3 h` for 9000"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(16), Some("main")), "{}", d.reason);
}

/// The same claim after an output that shows every value the task expects is no finding; nor is
/// a thought that says the output is still wrong.
#[test]
fn a_claim_after_an_output_with_the_expected_values_is_no_finding() {
    let task = "duration_label() rounds hours down\n\n```python\n>>> duration_label(5400)\n'1 h'   # expected '2 h'\n\
                >>> duration_label(9000)\n'2 h'   # expected '3 h'\n```";
    let examples = "cd /testbed && python -c \"from timefmt.labels import duration_label as d; print(5400, '->', d(5400)); \
                    print(9000, '->', d(9000))\"";
    let run = |output: &str, thought: &str| {
        swe_agent(
            task,
            &[
                (
                    "Find it.",
                    "grep -rn 'def duration_label' timefmt",
                    "timefmt/labels.py:9:def duration_label(seconds: int) -> str:",
                ),
                ("Run the examples.", examples, "5400 -> 1 h\n9000 -> 2 h"),
                ("Round half up.", "sed -i 's/seconds \\/\\/ 3600/int(seconds \\/ 3600 + 0.5)/' timefmt/labels.py", ""),
                ("Run them again.", examples, output),
                (thought, "submit", "diff --git a/timefmt/labels.py b/timefmt/labels.py"),
            ],
        )
    };
    let ignored =
        |t: &Trajectory| findings(t).into_iter().filter(|(_, s)| *s == Signal::IgnoredResult).collect::<Vec<_>>();
    let claim = "The output now matches the PR.";
    // Every expected value printed.
    assert_eq!(ignored(&run("5400 -> 2 h\n9000 -> 3 h", claim)), vec![]);
    // The agent says the output is still wrong.
    assert_eq!(ignored(&run("5400 -> 2 h\n9000 -> 2 h", "9000 still prints 2 h; submitting what I have.")), vec![]);
    // The claim against the same output is the finding.
    assert_eq!(ignored(&run("5400 -> 2 h\n9000 -> 2 h", claim)), vec![(13, Signal::IgnoredResult)]);
}

#[test]
fn an_edit_of_the_sibling_file_of_the_one_the_request_names_is_the_decisive_step() {
    // Codex rollout: the user asks for the live tier's snapshot retention ("Leave dev alone");
    // `rg` lists retention-dev.hcl, retention-prelive.hcl and retention-live.hcl (step 3); the
    // agent reads and patches retention-prelive.hcl (step 6); `terraform validate` passes and the
    // closing message says the live tier is changed. No error anywhere.
    let t = fixture("handbuilt/coding/sibling_tier_file_edited.codex.jsonl");
    assert_eq!(findings(&t), vec![(6, Signal::ArgumentMismatch)]);
    assert_eq!(
        evidence(&t, 6, Signal::ArgumentMismatch),
        "edits retention-prelive.hcl, but the request says \"live\" (step 0): retention-live.hcl, listed beside it \
         at step 3, is never edited"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(6), Some("codex")), "{}", d.reason);
    // The same session patching retention-live.hcl: the file asked for, no finding.
    let ok = fixture("handbuilt/coding/asked_tier_file_edited_ok.codex.jsonl");
    assert_eq!(findings(&ok), vec![]);
    assert_eq!(falat(&ok).decisive_step, None);
}

#[test]
fn a_revert_of_the_neighbouring_row_of_the_commit_the_request_describes_is_the_decisive_step() {
    // Codex rollout: the user wants the change "that cut the thumbnail cache expiry" reverted;
    // `git log --oneline` (step 2) lists it as b4d19a2 and, one row below, 9a07f3e "Switch avatar
    // uploads to multipart form"; the agent reverts 9a07f3e (step 4), whose own output names that
    // subject, the tests pass and the closing message reports the revert.
    let t = fixture("handbuilt/coding/neighbouring_commit_reverted.codex.jsonl");
    assert_eq!(findings(&t), vec![(4, Signal::ArgumentMismatch)]);
    assert_eq!(
        evidence(&t, 4, Signal::ArgumentMismatch),
        "reverts 9a07f3e (\"avatar uploads to multipart form\", as its output at step 5 shows), but the request's \
         words (cache, expiry, image…) describe b4d19a2 (\"to 5m in image proxy\") listed at step 2"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(4), Some("codex")), "{}", d.reason);
    // The same session reverting b4d19a2, the commit described: no finding.
    let ok = fixture("handbuilt/coding/described_commit_reverted_ok.codex.jsonl");
    assert_eq!(findings(&ok), vec![]);
    assert_eq!(falat(&ok).decisive_step, None);
}

#[test]
fn a_runner_looked_up_and_not_found_reproduces_nothing_and_fails_nothing() {
    // Codex rollout: `which hatch && hatch run test` exits 1 with no output (step 2): hatch is
    // not installed and nothing ran. The agent reproduces the ValueError with python (step 6),
    // patches, runs the reproduction and the whole suite again (26 passed), and says so.
    let t = fixture("handbuilt/coding/missing_runner_not_reproduction_ok.codex.jsonl");
    assert_eq!(findings(&t), vec![]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
}

#[test]
fn a_test_run_whose_summary_counts_a_failure_under_success_is_failed_and_the_claim_misreads_it() {
    // Codex rollout, Java: `mvn -q test -Dmaven.test.failure.ignore=true | tail` prints
    // "[ERROR] Tests run: 58, Failures: 1, …" above "BUILD SUCCESS" with exit status 0 (step 7);
    // the agent says the suite passes (step 8). The misreading is the error, not the patch.
    let t = fixture("handbuilt/coding/hidden_test_failure_mvn.codex.jsonl");
    assert_eq!(findings(&t), vec![(8, Signal::IgnoredToolError), (8, Signal::UnverifiedAssertion)]);
    assert_eq!(
        evidence(&t, 8, Signal::UnverifiedAssertion),
        "claims the task done (\"BUILD SUCCESS: the module's test suite passes with the 8.1% rate. TaxRates now …\") \
         although the test run at step 7 reports \"[ERROR] Tests run: 58, Failures: 1, Errors: 0, Skipp…"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(8), Some("codex")), "{}", d.reason);
    // The twin: the test's expectation updated, "Failures: 0", 2 skipped: no finding.
    let ok = fixture("handbuilt/coding/hidden_test_failure_mvn_ok.codex.jsonl");
    assert_eq!(findings(&ok), vec![]);
    assert_eq!(falat(&ok).decisive_step, None);
}

#[test]
fn a_lint_failure_in_a_file_the_run_never_touched_blames_no_edit() {
    // Codex rollout, JavaScript: eslint fails naming only web/src/legacy/charts.js (step 6), a
    // file no edit touched; the agent says so, `act` is not installed (step 9, told at step 12),
    // vitest passes. A correct run.
    let ok = fixture("handbuilt/coding/lint_flags_untouched_file_ok.codex.jsonl");
    assert_eq!(findings(&ok), vec![]);
    assert_eq!(falat(&ok).decisive_step, None);
    // The twin: eslint names the edited file (its new unused variable): the edit is decisive.
    let t = fixture("handbuilt/coding/lint_flags_edited_file.codex.jsonl");
    assert_eq!(findings(&t), vec![(3, Signal::FailedAction)]);
    assert_eq!(evidence(&t, 3, Signal::FailedAction), "the check after this edit fails at step 6: it failed");
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(3), Some("codex")), "{}", d.reason);
}

// ---------------------------------------------------------------------------------------------
// A failing test dropped instead of the code being fixed
// ---------------------------------------------------------------------------------------------

/// A Claude Code session: the task asks for ISO dates in an export; the suite passes (steps
/// 1-2), the edit to `fmt_date` (3-4) makes `test_posted_at_is_the_date_only` fail (5-6), then
/// `answer` (7-8: an edit of the test file or of the code) and the suite again (9-10, passing),
/// then the closing message (11).
fn dropped_test_session(answer: (&str, &str, &str)) -> Trajectory {
    let edit = |path: &str, old: &str, new: &str| json!({"file_path": path, "old_string": old, "new_string": new});
    let suite = json!({"command": "python -m pytest -q"});
    let failing = "...F....\n=================================== FAILURES ===================================\n\
        ______________________ test_posted_at_is_the_date_only ______________________\n\
        E       AssertionError: assert '2025-03-07T09:30:00' == '2025-03-07'\n\
        FAILED tests/test_export.py::test_posted_at_is_the_date_only - AssertionError: assert '2025-03-07T09:30:00' == '2025-03-07'\n\
        1 failed, 7 passed in 0.21s";
    let (path, old, new) = answer;
    claude_calls(
        "The CSV export writes dates like 2025-3-7 (reports/export.py, fmt_date). Make it ISO 8601 (2025-03-07).",
        &[
            ("Bash", suite.clone(), "........\n8 passed in 0.19s", false),
            (
                "Edit",
                edit("/w/ledger/reports/export.py", "return f\"{d.year}-{d.month}-{d.day}\"", "return d.isoformat()"),
                "The file /w/ledger/reports/export.py has been updated.",
                false,
            ),
            ("Bash", suite.clone(), failing, true),
            ("Edit", edit(path, old, new), &format!("The file {path} has been updated."), false),
            ("Bash", suite, "........\n8 passed in 0.18s", false),
        ],
        "Dates in the CSV export are now ISO 8601; the whole suite passes.",
    )
}

const POSTED_AT_TEST: &str = "def test_posted_at_is_the_date_only():\n    row = export_row(Entry(posted_at=datetime(2025, 3, 7, 9, 30)))\n    assert row[\"posted_at\"] == \"2025-03-07\"";

#[test]
fn a_failing_test_removed_or_skipped_after_an_edit_is_where_the_run_is_lost() {
    // Removed: the edit at step 3 broke it, its check at step 6 caught it; the removal at 7 hides it.
    let t = dropped_test_session(("/w/ledger/tests/test_export.py", POSTED_AT_TEST, ""));
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), vec![7]);
    assert_eq!(
        evidence(&t, 7, Signal::FailedAction),
        "removes the test test_posted_at_is_the_date_only in test_export.py, which failed at step 6 after the edit at \
         step 3: the test is dropped instead of the code fixed"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(7), Some("claude")), "{}", d.reason);
    // Skipped with a marker: the same.
    let skipped = format!("@pytest.mark.skip(reason=\"datetime export\")\n{POSTED_AT_TEST}");
    let t = dropped_test_session(("/w/ledger/tests/test_export.py", POSTED_AT_TEST, &skipped));
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), vec![7]);
    assert!(evidence(&t, 7, Signal::FailedAction).starts_with("skips the test test_posted_at_is_the_date_only"));
    // A user who says not to drop tests makes the removal no less a removal.
    let t = dropped_test_session(("/w/ledger/tests/test_export.py", POSTED_AT_TEST, ""));
    let mut strict = t.clone();
    strict.task.push_str(" Do not delete or skip any tests.");
    assert_eq!(crate::chat::steps_with(&strict, Signal::FailedAction), vec![7]);
    // The code fixed instead: no finding, the suite passes again.
    let t = dropped_test_session((
        "/w/ledger/reports/export.py",
        "return d.isoformat()",
        "return d.date().isoformat() if isinstance(d, datetime) else d.isoformat()",
    ));
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), Vec::<usize>::new());
    assert_eq!(falat(&t).decisive_step, None);
}

/// A Codex session on the same task as [`dropped_test_session`]: the suite passes (steps 1-2), a
/// patch of `fmt_date` (3-4) makes `test_posted_at_is_the_date_only` fail (5-6), then `answer`
/// (7-8: a patch, or a shell command) and the suite again (9-10, passing), then the closing (11).
fn dropped_test_rollout(answer: CodexTurn<'_>) -> Trajectory {
    let failing = "...F....\n=================================== FAILURES ===================================\n\
        ______________________ test_posted_at_is_the_date_only ______________________\n\
        E       AssertionError: assert '2025-03-07T09:30:00' == '2025-03-07'\n\
        FAILED tests/test_export.py::test_posted_at_is_the_date_only - AssertionError: assert '2025-03-07T09:30:00' == '2025-03-07'\n\
        1 failed, 7 passed in 0.21s";
    codex_rollout(
        "The CSV export writes dates like 2025-3-7 (reports/export.py, fmt_date). Make it ISO 8601 (2025-03-07).",
        &[
            CodexTurn::Shell("python -m pytest -q", "........\n8 passed in 0.19s", 0),
            CodexTurn::Patch(
                "*** Begin Patch\n*** Update File: reports/export.py\n@@ def fmt_date(d):\n-    return f\"{d.year}-{d.month}-{d.day}\"\n+    return d.isoformat()\n*** End Patch",
            ),
            CodexTurn::Shell("python -m pytest -q", failing, 1),
            answer,
            CodexTurn::Shell("python -m pytest -q", ".......\n7 passed in 0.18s", 0),
        ],
        "Dates in the CSV export are now ISO 8601; the whole suite passes.",
    )
}

#[test]
fn a_failing_test_skipped_above_its_unchanged_def_or_deleted_with_its_file_is_dropped() {
    // A patch adds the skip marker above the test's `def`, which it leaves as it was (a context line).
    let skip = "*** Begin Patch\n*** Update File: tests/test_export.py\n@@\n \n+@pytest.mark.skip(reason=\"datetime export\")\n def test_posted_at_is_the_date_only():\n     row = export_row(Entry(posted_at=datetime(2025, 3, 7, 9, 30)))\n*** End Patch";
    let t = dropped_test_rollout(CodexTurn::Patch(skip));
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), vec![7]);
    assert_eq!(
        evidence(&t, 7, Signal::FailedAction),
        "skips the test test_posted_at_is_the_date_only in test_export.py, which failed at step 6 after the edit at \
         step 3: the test is dropped instead of the code fixed"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(7), Some("codex")), "{}", d.reason);
    // The test file deleted, by `git rm` or by a patch: the failing test goes with it.
    for answer in [
        CodexTurn::Shell("git rm -q tests/test_export.py", "", 0),
        CodexTurn::Patch("*** Begin Patch\n*** Delete File: tests/test_export.py\n*** End Patch"),
    ] {
        let t = dropped_test_rollout(answer);
        assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), vec![7]);
        assert_eq!(
            evidence(&t, 7, Signal::FailedAction),
            "deletes, with its file, the test test_posted_at_is_the_date_only in test_export.py, which failed at \
             step 6 after the edit at step 3: the test is dropped instead of the code fixed"
        );
    }
    // A skip marker already there above another test, the patch only moving a comment: no drop;
    // the code edit whose check failed stays the error.
    let unrelated = "*** Begin Patch\n*** Update File: tests/test_export.py\n@@\n @pytest.mark.skip(reason=\"needs network\")\n def test_upload_to_bucket():\n-    # TODO\n+    # TODO: mock the bucket\n*** End Patch";
    let t = dropped_test_rollout(CodexTurn::Patch(unrelated));
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), vec![3]);
    // Another test file removed, one the failing run does not name: no drop either.
    let t = dropped_test_rollout(CodexTurn::Shell("rm tests/test_legacy_csv.py", "", 0));
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), vec![3]);
}

#[test]
fn a_test_run_failing_as_before_after_an_edit_checks_it_and_the_later_skip_is_named() {
    // The bug reproduced first (steps 1-2), a patch (3-4), the suite again failing word for word as
    // before (5-6), then the failing test skipped (7-8) and a green suite (9-10).
    let failing = "F...\nFAILED tests/test_export.py::test_posted_at_is_the_date_only - AssertionError: assert \
        '2025-3-7' == '2025-03-07'\n1 failed, 3 passed in 0.21s";
    let skip = "*** Begin Patch\n*** Update File: tests/test_export.py\n@@\n-def test_posted_at_is_the_date_only():\n+@pytest.mark.skip(reason=\"flaky\")\n+def test_posted_at_is_the_date_only():\n*** End Patch";
    let rollout = |rerun: &str, code: i32| {
        codex_rollout(
            "The CSV export writes dates like 2025-3-7 (reports/export.py, fmt_date). Make it ISO 8601 (2025-03-07).",
            &[
                CodexTurn::Shell("python -m pytest -q", failing, 1),
                CodexTurn::Patch(
                    "*** Begin Patch\n*** Update File: reports/export.py\n@@ def fmt_date(d):\n-    return f\"{d.year}-{d.month}-{d.day}\"\n+    return d.isoformat()\n*** End Patch",
                ),
                CodexTurn::Shell("python -m pytest -q", rerun, code),
                CodexTurn::Patch(skip),
                CodexTurn::Shell("python -m pytest -q", "...s\n3 passed, 1 skipped in 0.12s", 0),
            ],
            "Dates are ISO 8601 now; the suite passes.",
        )
    };
    // The re-run tells that the patch did not fix the test: it checks the patch, it is no repeat.
    let t = rollout(failing, 1);
    assert_eq!(findings(&t), vec![(7, Signal::FailedAction)]);
    assert_eq!(
        evidence(&t, 7, Signal::FailedAction),
        "skips the test test_posted_at_is_the_date_only in test_export.py, which failed at step 6 after the edit at \
         step 3: the test is dropped instead of the code fixed"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(7), Some("codex")), "{}", d.reason);
    // Only the docs edited between two identical failures: the re-run measures nothing changed.
    let docs = codex_rollout(
        "The CSV export writes dates like 2025-3-7 (reports/export.py, fmt_date). Make it ISO 8601 (2025-03-07).",
        &[
            CodexTurn::Shell("python -m pytest -q", failing, 1),
            CodexTurn::Patch(
                "*** Begin Patch\n*** Update File: README.md\n@@\n-Dates: 2025-3-7\n+Dates: ISO 8601\n*** End Patch",
            ),
            CodexTurn::Shell("python -m pytest -q", failing, 1),
        ],
        "Still failing.",
    );
    assert!(findings(&docs).contains(&(5, Signal::NoProgress)), "{:?}", findings(&docs));
}

#[test]
fn what_is_no_dropped_test_stays_quiet_and_a_skip_under_a_hunk_header_is_found() {
    let none = Vec::<usize>::new();
    // A skip marker on a new test written below the failing one (after the code was fixed).
    let fixed = "*** Begin Patch\n*** Update File: reports/export.py\n@@ def fmt_date(d):\n-    return d.isoformat()\n+    return d.date().isoformat() if isinstance(d, datetime) else d.isoformat()\n*** End Patch";
    let neighbour = "*** Begin Patch\n*** Update File: tests/test_export.py\n@@\n def test_posted_at_is_the_date_only():\n     row = export_row(Entry(posted_at=datetime(2025, 3, 7, 9, 30)))\n+\n+@pytest.mark.skipif(sys.platform != \"win32\", reason=\"CRLF\")\n+def test_rows_end_in_crlf_on_windows():\n+    assert export_rows([]).endswith(\"\\r\\n\")\n*** End Patch";
    let t = codex_rollout(
        "The CSV export writes dates like 2025-3-7 (reports/export.py, fmt_date). Make it ISO 8601 (2025-03-07).",
        &[
            CodexTurn::Shell(
                "python -m pytest -q",
                "FAILED tests/test_export.py::test_posted_at_is_the_date_only - AssertionError\n1 failed, 7 passed",
                1,
            ),
            CodexTurn::Patch(fixed),
            CodexTurn::Patch(neighbour),
            CodexTurn::Shell("python -m pytest -q", "........s\n8 passed, 1 skipped in 0.2s", 0),
        ],
        "Dates are ISO 8601 now; I also added a Windows-only CRLF test.",
    );
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), none);
    // A data file under tests/ removed to fix a failure about it is no test dropped.
    let t = dropped_test_rollout(CodexTurn::Shell("rm tests/data/test_export.db", "", 0));
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), vec![3]);
    // The agent's own reproduction, added by a patch, failing, then passing after the fix, then
    // deleted: its own scaffolding.
    let t = codex_rollout(
        "The CSV export writes dates like 2025-3-7 (reports/export.py, fmt_date). Make it ISO 8601 (2025-03-07).",
        &[
            CodexTurn::Reasoning("I'll write tests/test_repro_dates.py to reproduce the bug."),
            CodexTurn::Patch(
                "*** Begin Patch\n*** Add File: tests/test_repro_dates.py\n+def test_repro_iso():\n+    assert fmt_date(date(2025, 3, 7)) == '2025-03-07'\n*** End Patch",
            ),
            CodexTurn::Shell(
                "python -m pytest -q tests/test_repro_dates.py",
                "FAILED tests/test_repro_dates.py::test_repro_iso - AssertionError\n1 failed",
                1,
            ),
            CodexTurn::Patch(
                "*** Begin Patch\n*** Update File: reports/export.py\n@@ def fmt_date(d):\n-    return f\"{d.year}-{d.month}-{d.day}\"\n+    return d.isoformat()\n*** End Patch",
            ),
            CodexTurn::Shell("python -m pytest -q tests/test_repro_dates.py", ".\n1 passed", 0),
            CodexTurn::Patch("*** Begin Patch\n*** Delete File: tests/test_repro_dates.py\n*** End Patch"),
            CodexTurn::Shell("python -m pytest -q", "........\n8 passed", 0),
        ],
        "Fixed; the reproduction passes and I removed it again.",
    );
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), none);
    // A skip put as the first line of the test's body, the patch finding it by a hunk header
    // `@@ def test_…():`.
    let under_header = "*** Begin Patch\n*** Update File: tests/test_export.py\n@@ def test_posted_at_is_the_date_only():\n+    pytest.skip(\"datetime export\")\n     row = export_row(Entry(posted_at=datetime(2025, 3, 7, 9, 30)))\n*** End Patch";
    let t = dropped_test_rollout(CodexTurn::Patch(under_header));
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), vec![7]);
    assert!(evidence(&t, 7, Signal::FailedAction).starts_with("skips the test test_posted_at_is_the_date_only"));
}

// ---------------------------------------------------------------------------------------------
// A race waited out instead of fixed
// ---------------------------------------------------------------------------------------------

/// A Claude Code session on a connection pool whose test fails now and then (`task`): the test
/// run (steps 1-2), the edit `change` (3-4: path, old text, new text), the suite again (5-6,
/// passing), the closing message (7).
fn race_session(task: &str, change: (&str, &str, &str)) -> Trajectory {
    let (path, old, new) = change;
    claude_calls(
        task,
        &[
            (
                "Bash",
                json!({"command": "python -m pytest -q tests/test_pool.py"}),
                "..F.\nFAILED tests/test_pool.py::test_release_then_acquire_reuses_the_connection - assert 2 == 1\n1 failed, 3 passed in 0.31s",
                true,
            ),
            (
                "Edit",
                json!({"file_path": path, "old_string": old, "new_string": new}),
                &format!("The file {path} has been updated."),
                false,
            ),
            ("Bash", json!({"command": "python -m pytest -q"}), "............\n12 passed in 0.52s", false),
        ],
        "Fixed: test_release_then_acquire_reuses_the_connection passes and the whole suite is green.",
    )
}

const RACE_TASK: &str = "test_release_then_acquire_reuses_the_connection in tests/test_pool.py fails intermittently in CI \
    (about one run in five). pool/pool.py release() hands the connection back from a background thread. Fix it.";

#[test]
fn a_sleep_added_to_a_test_that_fails_now_and_then_is_the_error_and_a_fix_in_the_code_is_not() {
    let sleep =
        ("/w/pool/tests/test_pool.py", "    pool.release(conn)\n", "    pool.release(conn)\n    time.sleep(0.2)\n");
    let t = race_session(RACE_TASK, sleep);
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), vec![3]);
    assert_eq!(
        evidence(&t, 3, Signal::FailedAction),
        "adds `time.sleep(0.2)` to test_pool.py while the task reports a failure that comes and goes: the failure is \
         waited out, not fixed"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(3), Some("claude")), "{}", d.reason);
    // The same test edit when the task reports no flakiness (a test written to wait for a
    // background job on purpose): no finding of the edit (the failing run before it, which the
    // task does not report, keeps its own).
    let t = race_session("Add a test that a released connection is reused by the next acquire().", sleep);
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), vec![1]);
    // A retry marker is the same as a sleep; a user who rules waiting out makes a sleep in the
    // code an error too.
    let rerun = (
        "/w/pool/tests/test_pool.py",
        "def test_release_then_acquire_reuses_the_connection(pool):",
        "@pytest.mark.flaky(reruns=3)\ndef test_release_then_acquire_reuses_the_connection(pool):",
    );
    let t = race_session(RACE_TASK, rerun);
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), vec![3]);
    let in_code = (
        "/w/pool/pool/pool.py",
        "        self._free.put(conn)\n",
        "        time.sleep(0.05)\n        self._free.put(conn)\n",
    );
    let forbidding = format!("{RACE_TASK} Don't just make the test slower: fix the race.");
    let t = race_session(&forbidding, in_code);
    assert!(
        evidence(&t, 3, Signal::FailedAction)
            .starts_with("adds `time.sleep(0.05)` to pool.py after the user ruled waiting out"),
        "{}",
        evidence(&t, 3, Signal::FailedAction)
    );
    let t = race_session(RACE_TASK, in_code);
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), Vec::<usize>::new());
    // A bug told as "without retry" asks for a wait; it rules none out.
    let backoff = format!("{RACE_TASK} fetch_rates() gives up without retry when the API answers 503.");
    let t = race_session(&backoff, in_code);
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), Vec::<usize>::new());
    // The race fixed with a lock: no finding, no failure.
    let lock = (
        "/w/pool/pool/pool.py",
        "        self._free.put(conn)\n",
        "        with self._lock:\n            self._free.put(conn)\n",
    );
    let t = race_session(RACE_TASK, lock);
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), Vec::<usize>::new());
    assert_eq!(falat(&t).decisive_step, None, "{}", falat(&t).reason);
}

#[test]
fn a_patch_of_code_and_test_is_read_file_by_file_for_the_wait_it_adds() {
    // One Codex patch changes pool.py and test_pool.py; only the file the sleep is added to counts.
    let session = |patch: &str| {
        codex_rollout(
            RACE_TASK,
            &[
                CodexTurn::Shell(
                    "python -m pytest -q tests/test_pool.py",
                    "..F.\nFAILED tests/test_pool.py::test_release_then_acquire_reuses_the_connection - assert 2 == 1\n1 failed, 3 passed in 0.31s",
                    1,
                ),
                CodexTurn::Patch(patch),
                CodexTurn::Shell("python -m pytest -q", "............\n12 passed in 0.52s", 0),
            ],
            "Fixed: test_release_then_acquire_reuses_the_connection passes and the whole suite is green.",
        )
    };
    // The sleep in the test, a log line in the code: the test waits the race out.
    let in_test = "*** Begin Patch\n*** Update File: pool/pool.py\n@@\n         self._free.put(conn)\n+        log.debug(\"released %s\", conn)\n*** Update File: tests/test_pool.py\n@@\n     pool.release(conn)\n+    time.sleep(0.2)\n*** End Patch";
    let t = session(in_test);
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), vec![3]);
    assert_eq!(
        evidence(&t, 3, Signal::FailedAction),
        "adds `time.sleep(0.2)` to test_pool.py while the task reports a failure that comes and goes: the failure is \
         waited out, not fixed"
    );
    // A back-off in the code and a new assertion in the test: the user ruled no waiting out, so the
    // wait in the code is no finding, and the test file, which waits for nothing, is not blamed.
    let in_code = "*** Begin Patch\n*** Update File: pool/pool.py\n@@\n+        time.sleep(0.05)\n         self._free.put(conn)\n*** Update File: tests/test_pool.py\n@@\n     pool.release(conn)\n+    assert pool.idle() == 1\n*** End Patch";
    let t = session(in_code);
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), Vec::<usize>::new());
    // A sleep in both, the code file first in the patch: the test's is the one found.
    let both = "*** Begin Patch\n*** Update File: pool/pool.py\n@@\n+        time.sleep(0.01)\n         self._free.put(conn)\n*** Update File: tests/test_pool.py\n@@\n     pool.release(conn)\n+    time.sleep(0.2)\n*** End Patch";
    let t = session(both);
    assert!(evidence(&t, 3, Signal::FailedAction).starts_with("adds `time.sleep(0.2)` to test_pool.py"));
    // A waiting helper moved from the test to conftest.py: a wait moved, none added.
    let moved = "*** Begin Patch\n*** Update File: tests/test_pool.py\n@@\n-def wait_until_idle(pool):\n-    while pool.busy():\n-        time.sleep(0.01)\n*** Update File: tests/conftest.py\n@@\n+def wait_until_idle(pool):\n+    while pool.busy():\n+        time.sleep(0.01)\n*** End Patch";
    let t = session(moved);
    assert_eq!(crate::chat::steps_with(&t, Signal::FailedAction), Vec::<usize>::new());
}

// ---------------------------------------------------------------------------------------------
// A change made in production after the user ruled it out
// ---------------------------------------------------------------------------------------------

/// A Claude Code session: the user asks for a migration tried on staging and rules production
/// out (`task`); the agent runs the migration on staging (steps 1-2), then `then` (3-4), then
/// closes (5).
fn prod_session(task: &str, then: &str) -> Trajectory {
    claude_calls(
        task,
        &[
            (
                "Bash",
                json!({"command": "alembic -x env=staging upgrade head"}),
                "INFO  [alembic.runtime.migration] Running upgrade 3f2a -> 9c1d, add orders.created_at index",
                false,
            ),
            (
                "Bash",
                json!({ "command": then }),
                "INFO  [alembic.runtime.migration] Running upgrade 3f2a -> 9c1d, add orders.created_at index",
                false,
            ),
        ],
        "The index migration is applied.",
    )
}

/// A Claude Code session: the user rules production out (`task`); the agent runs `read` (steps
/// 1-2, its output `shown`), then `then` (3-4), then closes (5).
fn env_session(task: &str, read: &str, shown: &str, then: &str) -> Trajectory {
    claude_calls(
        task,
        &[
            ("Bash", json!({ "command": read }), shown, false),
            (
                "Bash",
                json!({ "command": then }),
                "INFO  [alembic.runtime.migration] Running upgrade 3f2a -> 9c1d, add orders.created_at index",
                false,
            ),
        ],
        "The index migration is applied.",
    )
}

#[test]
fn a_change_that_reaches_production_through_the_settings_in_effect_is_the_error() {
    let task = "Add an index on orders.created_at with an Alembic migration and try it locally first. Don't touch \
        prod: the DBA applies it there on Sunday.";
    let prod_env = "APP_NAME=shop\nDATABASE_URL=postgresql://app@prod-db.internal:5432/shop\nLOG_LEVEL=info";
    let t = env_session(task, "cat .env", prod_env, "alembic upgrade head");
    assert_eq!(crate::chat::steps_with(&t, Signal::ForbiddenChange), vec![3]);
    assert_eq!(
        evidence(&t, 3, Signal::ForbiddenChange),
        "changes production with `alembic upgrade head` (in effect since step 2: `DATABASE_URL=postgresql://app@prod-…`) \
         although the user wrote at step 0: \"Don't touch prod: the DBA applies it th…\""
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(3), Some("claude")), "{}", d.reason);
    // A context switched to production by the agent itself counts the same.
    let t = env_session(
        task,
        "kubectl config use-context prod-eu",
        "Switched to context \"prod-eu\".",
        "kubectl apply -f k8s/",
    );
    assert_eq!(crate::chat::steps_with(&t, Signal::ForbiddenChange), vec![3]);
    let none = Vec::<usize>::new();
    // The settings in effect point elsewhere; the file read is production's own, not the one in
    // effect; the agent switched away from production; the command names its target; the
    // command acts on no environment; no rule against production.
    let local = "DATABASE_URL=postgresql://app@localhost:5432/shop";
    for (read, shown, then) in [
        ("cat .env", local, "alembic upgrade head"),
        ("cat .env.production", prod_env, "alembic upgrade head"),
        ("cat .env && export DATABASE_URL=postgresql://app@localhost:5432/shop", prod_env, "alembic upgrade head"),
        ("cat .env", prod_env, "alembic -x env=staging upgrade head"),
        ("cat .env", prod_env, "git push origin feature/orders-index"),
        ("cat .env", prod_env, "alembic history"),
        // Text that mentions production without being the settings in effect.
        ("cat .env.example", prod_env, "alembic upgrade head"),
        ("grep -rn APP_ENV=production config/", "config/ci.yml:12: APP_ENV=production", "alembic upgrade head"),
        ("git log -1 --format=%s", "ops: set APP_ENV=production in helm values", "alembic upgrade head"),
        // The command says where it runs, or only writes the SQL out.
        ("cat .env", prod_env, "DATABASE_URL=postgresql://app@127.0.0.1:5433/shop alembic upgrade head"),
        ("cat .env", prod_env, "alembic upgrade head --sql > migration.sql"),
        ("cat .env", prod_env, "npm run migrate:test"),
        ("cat .env", prod_env, "bin/rails db:migrate RAILS_ENV=test"),
        // A database tool goes where the database settings point, whatever APP_ENV says.
        ("cat .env", "APP_ENV=production\nPGHOST=localhost", "alembic upgrade head"),
        // Over every env file, only `.env`'s own line is in effect.
        (
            "grep -H '^DATABASE_URL' .env*",
            ".env:DATABASE_URL=postgresql://app@localhost:5432/shop\n\
             .env.production:DATABASE_URL=postgresql://app@prod-db.internal:5432/shop",
            "alembic upgrade head",
        ),
    ] {
        let t = env_session(task, read, shown, then);
        assert_eq!(crate::chat::steps_with(&t, Signal::ForbiddenChange), none, "{read} / {then}");
    }
    // A context printed bare, Django's migrate, and a grep over every env file whose `.env`
    // line points at production, read the same way.
    let every_env = ".env:DATABASE_URL=postgresql://app@prod-db.internal:5432/shop\n\
        .env.example:DATABASE_URL=postgresql://app@localhost:5432/shop_dev\n\
        .env.staging:DATABASE_URL=postgresql://app@stg-db.internal:5432/shop";
    for (read, shown, then) in [
        ("kubectl config current-context", "prod-eu", "kubectl apply -f k8s/"),
        ("cat .env", prod_env, "python manage.py migrate"),
        ("grep -H '^DATABASE_URL' .env*", every_env, "alembic upgrade head"),
    ] {
        let t = env_session(task, read, shown, then);
        assert_eq!(crate::chat::steps_with(&t, Signal::ForbiddenChange), vec![3], "{read} / {then}");
    }
    // A commit message that says "prod" and "set" changes nothing in production.
    let t = env_session(
        task,
        "git commit -am 'docs: APP_ENV=production is set by CI only'",
        "[main 1a2b3c4] docs",
        "alembic upgrade head",
    );
    assert_eq!(crate::chat::steps_with(&t, Signal::ForbiddenChange), none);
    let t = env_session(
        "Add an index on orders.created_at with an Alembic migration.",
        "cat .env",
        prod_env,
        "alembic upgrade head",
    );
    assert_eq!(crate::chat::steps_with(&t, Signal::ForbiddenChange), none);
}

#[test]
fn a_change_run_against_production_after_the_user_ruled_it_out_is_the_error() {
    let task = "Add an index on orders.created_at with an Alembic migration and apply it on staging. Don't touch prod: \
        the DBA applies it there on Sunday.";
    let t = prod_session(task, "alembic -x env=prod upgrade head");
    assert_eq!(crate::chat::steps_with(&t, Signal::ForbiddenChange), vec![3]);
    assert_eq!(
        evidence(&t, 3, Signal::ForbiddenChange),
        "changes production with `alembic -x env=prod upgrade head` although the user wrote at step 0: \"Don't touch \
         prod: the DBA applies it there on Sunday.\""
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(3), Some("claude")), "{}", d.reason);
    // Reading production (the migration history) changes nothing; staging again is allowed.
    for then in ["alembic -x env=prod history", "alembic -x env=staging current"] {
        let t = prod_session(task, then);
        assert_eq!(crate::chat::steps_with(&t, Signal::ForbiddenChange), Vec::<usize>::new(), "{then}");
    }
    // No user rule against production: running there is no breach of one.
    let t = prod_session(
        "Add an index on orders.created_at with an Alembic migration and apply it.",
        "alembic -x env=prod upgrade head",
    );
    assert_eq!(crate::chat::steps_with(&t, Signal::ForbiddenChange), Vec::<usize>::new());
}

// ---------------------------------------------------------------------------------------------
// A prohibition of a file's interface, and a figure the agent's program then computes
// ---------------------------------------------------------------------------------------------

/// A Claude Code session on a paging bug: the user protects `src/pager.py` (by `rule`), the agent
/// reads it (steps 1-2), makes `edit` (old, new) of it (3-4) and runs the tests (5-6, passing).
fn pager_session(rule: &str, edit: (&str, &str)) -> Trajectory {
    let path = "/w/shop/src/pager.py";
    let source = "def paginate(items, size):\n    return [items[i:i + size] for i in range(0, len(items) - size, size)]\n\n\
        def _pages(n, size):\n    return -(-n // size)";
    claude_calls(
        &format!("paginate() drops the last partial page. Fix it. {rule}"),
        &[
            ("Read", json!({"file_path": path}), source, false),
            (
                "Edit",
                json!({"file_path": path, "old_string": edit.0, "new_string": edit.1}),
                &format!("The file {path} has been updated."),
                false,
            ),
            ("Bash", json!({"command": "python -m pytest -q"}), "......\n6 passed in 0.11s", false),
        ],
        "Fixed: paginate() keeps the last partial page; the tests pass.",
    )
}

#[test]
fn an_edit_that_keeps_the_public_definitions_keeps_a_protected_interface() {
    let api = "Don't change the public API of src/pager.py (other services call `paginate(items, size)`).";
    let body = (
        "    return [items[i:i + size] for i in range(0, len(items) - size, size)]",
        "    return [items[i:i + size] for i in range(0, len(items), size)]",
    );
    // The body fixed under the same `def`: the interface is kept, the run is correct.
    let t = pager_session(api, body);
    assert_eq!(findings(&t), vec![]);
    assert_eq!(falat(&t).decisive_step, None);
    // A private helper renamed keeps it too.
    let private = ("def _pages(n, size):", "def _page_count(n, size):");
    assert_eq!(findings(&pager_session(api, private)), vec![]);
    // The public function's parameters renamed: the interface changed.
    let renamed = (
        "def paginate(items, size):\n    return [items[i:i + size] for i in range(0, len(items) - size, size)]",
        "def paginate(items, page_size):\n    return [items[i:i + page_size] for i in range(0, len(items), page_size)]",
    );
    let t = pager_session(api, renamed);
    assert_eq!(findings(&t), vec![(3, Signal::ForbiddenChange)]);
    assert_eq!(
        evidence(&t, 3, Signal::ForbiddenChange),
        "changes `def paginate(items, size):` (now `def paginate(items, page_size):`) of /w/shop/src/pager.py although \
         the user wrote at step 0: \"Don't change the public API of src/pager.py (other services ca…"
    );
    // Annotations and a comment on the `def` line change nothing its callers use.
    let hinted = ("def paginate(items, size):", "def paginate(items: list, size: int) -> list:  # noqa: C901");
    assert_eq!(findings(&pager_session(api, hinted)), vec![]);
    // A parameter renamed in a signature spread over lines, or a default changed: changed.
    let spread = ("def paginate(items, size):", "def paginate(\n    items,\n    size=10,\n):");
    let t = pager_session(api, spread);
    assert_eq!(findings(&t), vec![(3, Signal::ForbiddenChange)]);
    assert!(evidence(&t, 3, Signal::ForbiddenChange).starts_with(
        "changes `def paginate(items, size):` (now `def paginate( items, size=10, ):`) of /w/shop/src/pager.py"
    ));
    // A file protected as such: any edit of it breaks the rule, as before, even beside an
    // interface protected in the same sentence.
    let t = pager_session("Don't touch src/pager.py, the bug is elsewhere.", body);
    assert_eq!(findings(&t), vec![(3, Signal::ForbiddenChange)]);
    assert!(evidence(&t, 3, Signal::ForbiddenChange).starts_with("edits /w/shop/src/pager.py although"));
    let t = pager_session("Don't touch src/pager.py and don't change the public API of src/api.py.", body);
    assert_eq!(findings(&t), vec![(3, Signal::ForbiddenChange)]);
    // The possessive and "the signature of `x` in" scope the path the same way.
    for rule in ["Don't change src/pager.py's public API.", "Don't change the signature of `paginate` in src/pager.py."]
    {
        assert_eq!(findings(&pager_session(rule, body)), vec![], "{rule}");
    }
}

#[test]
fn a_patch_of_two_files_is_read_for_the_protected_one_and_a_move_breaks_its_interface() {
    let rule = "Don't change the public API of gateway/ratelimit.py.";
    let rollout = |patch: &str| {
        codex_rollout(
            &format!("The rate limiter resets early at midnight. Fix it. {rule}"),
            &[CodexTurn::Patch(patch), CodexTurn::Shell("python -m pytest -q", ".....\n5 passed in 0.10s", 0)],
            "Fixed; the tests pass.",
        )
    };
    // The body fixed in ratelimit.py, a test renamed in another file: the interface is kept.
    let two = "*** Begin Patch\n*** Update File: gateway/ratelimit.py\n@@ def _bucket(self):\n-        return seconds_today // self.window_s\n+        return int(now.timestamp()) // self.window_s\n*** Update File: tests/test_ratelimit.py\n@@\n-def test_rate_limit_window():\n+def test_window_across_midnight():\n*** End Patch";
    assert_eq!(findings(&rollout(two)), vec![]);
    // The module moved: every importer breaks.
    let moved = "*** Begin Patch\n*** Update File: gateway/ratelimit.py\n*** Move to: gateway/limits.py\n@@ def _bucket(self):\n-        return seconds_today // self.window_s\n+        return int(now.timestamp()) // self.window_s\n*** End Patch";
    let t = rollout(moved);
    assert_eq!(findings(&t), vec![(1, Signal::ForbiddenChange)]);
    assert!(
        evidence(&t, 1, Signal::ForbiddenChange)
            .starts_with("moves gateway/ratelimit.py to gateway/limits.py although"),
        "{}",
        evidence(&t, 1, Signal::ForbiddenChange)
    );
}

#[test]
fn a_figure_the_agent_s_program_then_prints_is_computed_not_invented() {
    let run = |program: &str, output: &str| {
        claude_session(
            "test_rate_limit_window fails just before midnight UTC. Find the cause and fix it.",
            &[
                ClaudeTurn::Call(
                    "Read",
                    json!({"file_path": "/w/gw/gateway/ratelimit.py"}),
                    "def _bucket(self):\n    now = _utcnow()\n    return (now.hour * 3600 + now.minute * 60 + now.second) // self.window_s",
                    false,
                ),
                ClaudeTurn::Text(
                    "Found it: `_bucket()` numbers windows by minutes since midnight, so at 23:59:58 the window is \
                     bucket 1439 and a second later bucket 0 starts.",
                ),
                ClaudeTurn::Call("Bash", json!({"command": program}), output, false),
                ClaudeTurn::Text("Confirmed; fixing the bucket next."),
            ],
        )
    };
    // The program works the bucket out from the clock: the figure is the run's, checked.
    let probe = "python -c \"import gateway.ratelimit as r; print(r.probe('23:59:58'))\"";
    let t = run(probe, "{('k', 1439): 3, ('k', 0): 1}");
    assert_eq!(crate::chat::steps_with(&t, Signal::UnsourcedValue), Vec::<usize>::new());
    // The number as a line of a traceback, a percentage or a part of a date computes nothing.
    for output in [
        "Traceback (most recent call last):\n  File \"gateway/ratelimit.py\", line 1439, in allow",
        "tests/test_ratelimit.py ... [1439%]",
        "last run 1439-01-02",
    ] {
        let t = run(probe, output);
        assert_eq!(crate::chat::steps_with(&t, Signal::UnsourcedValue), vec![3], "{output}");
    }
    // A program that prints the figure it was given checks nothing.
    let t = run("python -c \"print({('k', 1439): 3, ('k', 0): 1})\"", "{('k', 1439): 3, ('k', 0): 1}");
    assert_eq!(crate::chat::steps_with(&t, Signal::UnsourcedValue), vec![3]);
    assert_eq!(evidence(&t, 3, Signal::UnsourcedValue), "states 1439 with no earlier source");
}

const GATEWAY_YAML: &str = "# times in milliseconds unless the key says otherwise\ndefaults:\n  upstream_timeout_ms: \
    5000\nroutes:\n  - path: /v2/invoices\n    timeout_ms: 15000\n  - path: /v2/exports\n    upstream: \
    http://exports:8080\n";

/// A session asked to raise one route's timeout to 90 seconds: it reads the config, adds `line`
/// under the route, and validates.
fn config_edit_session(task: &str, line: &str) -> Trajectory {
    crate::chat::claude_code(
        task,
        &[
            ("Read", json!({"file_path": "/w/gw/config/gateway.yaml"}), GATEWAY_YAML, false),
            (
                "Edit",
                json!({"file_path": "/w/gw/config/gateway.yaml",
                    "old_string": "  - path: /v2/exports\n    upstream: http://exports:8080\n",
                    "new_string": format!("  - path: /v2/exports\n    upstream: http://exports:8080\n    {line}\n")}),
                "The file /w/gw/config/gateway.yaml has been updated.",
                false,
            ),
            ("Bash", json!({"command": "python -m gateway.validate config/gateway.yaml"}), "config OK", false),
        ],
        "Done: /v2/exports now has its own upstream timeout, a 90-second window.",
    )
}

#[test]
fn a_duration_written_in_the_keys_unit_with_the_wrong_factor_is_found_at_the_edit() {
    const TASK: &str = "Bulk exports get 504s after 5 s. In config/gateway.yaml raise the upstream timeout for \
        /v2/exports only, to 90 seconds.";
    let t = config_edit_session(TASK, "timeout_ms: 9000");
    assert_eq!(t.steps[3].tool_name.as_deref(), Some("Edit"));
    assert!(findings(&t).contains(&(3, Signal::ArgumentMismatch)), "{:?}", findings(&t));
    assert_eq!(
        evidence(&t, 3, Signal::ArgumentMismatch),
        "writes timeout_ms: 9000, but the user asked for 90 seconds at step 0, which is timeout_ms: 90000"
    );
    assert_eq!(falat(&t).decisive_step, Some(3));
    // A typed field, and 2 hours written as 120 seconds (a factor of 60).
    let t = config_edit_session(TASK, "timeout_ms: int = 9000");
    assert!(findings(&t).contains(&(3, Signal::ArgumentMismatch)), "{:?}", findings(&t));
    let t = config_edit_session(&TASK.replace("90 seconds", "2 hours"), "timeout_s: 120");
    assert_eq!(
        evidence(&t, 3, Signal::ArgumentMismatch),
        "writes timeout_s: 120, but the user asked for 2 hours at step 0, which is timeout_s: 7200"
    );
    // A quantity of another clause is not what the key sets: "every 10 minutes" is the job's
    // schedule, not the lock's renewal.
    let t = config_edit_session(
        "The sync job runs every 10 minutes. Make its lock expire after 15 minutes.",
        "lock_renew_interval_seconds: 60",
    );
    assert!(!findings(&t).iter().any(|&(_, s)| s == Signal::ArgumentMismatch), "{:?}", findings(&t));
    // Left unconverted: 90 minutes is 1.5 of the key's hours.
    let t = config_edit_session(&TASK.replace("90 seconds", "90 minutes"), "timeout_h: 90");
    assert_eq!(
        evidence(&t, 3, Signal::ArgumentMismatch),
        "writes timeout_h: 90, but the user asked for 90 minutes at step 0, which is timeout_h: 1.5"
    );

    // Right in the key's unit, whatever the unit; the context lines the edit repeats
    // (`upstream: …`) and the 15000 of another route are not written by it.
    for line in [
        "timeout_ms: 90000",
        "timeout_ms: 90_000",
        "timeout_s: 90",
        "timeoutSeconds: 90",
        "retries: 3",
        "timeout_ms = 90 * 1000",
    ] {
        let t = config_edit_session(TASK, line);
        assert!(!findings(&t).iter().any(|&(_, s)| s == Signal::ArgumentMismatch), "{line}: {:?}", findings(&t));
    }
    // A number that is a quantity the user gave (the 5 s the run has now) is no unit error,
    // whatever else is wrong with it; a key with no unit (`timeout: 9000`) says nothing.
    for line in ["timeout_ms: 5000", "timeout: 9000"] {
        let t = config_edit_session(TASK, line);
        assert!(!findings(&t).iter().any(|&(_, s)| s == Signal::ArgumentMismatch), "{line}: {:?}", findings(&t));
    }
}

#[test]
fn a_size_written_in_bytes_is_right_in_either_reading_of_a_megabyte() {
    const TASK: &str = "Limit uploads to 50 MB in config/gateway.yaml for /v2/exports.";
    for line in ["max_body_bytes: 50000000", "max_body_bytes: 52428800", "max_body_mb: 50"] {
        let t = config_edit_session(TASK, line);
        assert!(!findings(&t).iter().any(|&(_, s)| s == Signal::ArgumentMismatch), "{line}: {:?}", findings(&t));
    }
    let t = config_edit_session(TASK, "max_body_bytes: 5000000");
    assert_eq!(
        evidence(&t, 3, Signal::ArgumentMismatch),
        "writes max_body_bytes: 5000000, but the user asked for 50 MB at step 0, which is max_body_bytes: 50000000"
    );
}

/// A session asked to change a pinned behaviour: the code edit drops the old constant, the test
/// that asserted it fails, and the agent updates the test (`test_edit`: old and new text), then
/// the suite passes.
fn pinned_session(task: &str, test_old: &str, test_new: &str) -> Trajectory {
    crate::chat::claude_code(
        task,
        &[
            (
                "Edit",
                json!({"file_path": "/w/pay/app/retry.py", "old_string": "MAX_ATTEMPTS = 5\nRETRY_SLEEP_S = 2.0\n",
                    "new_string": "MAX_ATTEMPTS = 5\nBASE_S = 0.5\n\ndef backoff(n):\n    return random.uniform(0, min(8.0, BASE_S * 2 ** (n - 1)))\n"}),
                "The file /w/pay/app/retry.py has been updated.",
                false,
            ),
            (
                "Bash",
                json!({"command": "python -m pytest tests/test_retry.py -q"}),
                "..F\nFAILED tests/test_retry.py::test_retries_on_error - AssertionError: expected call not found.\n\
                 1 failed, 2 passed in 0.21s",
                true,
            ),
            (
                "Edit",
                json!({"file_path": "/w/pay/tests/test_retry.py", "old_string": test_old, "new_string": test_new}),
                "The file /w/pay/tests/test_retry.py has been updated.",
                false,
            ),
            ("Bash", json!({"command": "python -m pytest -q"}), "...........\n11 passed in 0.40s", false),
        ],
        "Done: the retry loop now backs off exponentially with full jitter; the retry test checks the bound.",
    )
}

#[test]
fn a_test_that_pinned_the_behaviour_the_task_changes_is_updated_with_it() {
    // The task names the old 2 s sleep; the code edit drops `RETRY_SLEEP_S = 2.0`; the test that
    // asserted 2.0 is updated and the suite passes: the failing check was the old pin.
    const TASK: &str = "The retry loop in app/retry.py sleeps a fixed 2 s between attempts. Make it exponential \
        backoff with full jitter: base 0.5 s, capped at 8 s.";
    let t = pinned_session(
        TASK,
        "    sleep.assert_called_with(2.0)",
        "    (delay,), _ = sleep.call_args\n    assert 0 <= delay <= 0.5",
    );
    assert_eq!(t.steps[1].tool_name.as_deref(), Some("Edit"));
    assert_eq!(findings(&t), vec![], "{:?}", findings(&t));
    assert_eq!(falat(&t).decisive_step, None);

    // A task that does not name the old value: the rewritten test that was there before fixes
    // nothing it reported, and the edit's failing check stands.
    let t = pinned_session(
        "Make the retry loop in app/retry.py back off exponentially.",
        "    sleep.assert_called_with(2.0)",
        "    (delay,), _ = sleep.call_args\n    assert 0 <= delay <= 0.5",
    );
    assert!(findings(&t).contains(&(1, Signal::FailedAction)), "{:?}", findings(&t));
    // The test now asserts against the constant the code edit set: it follows the code,
    // whatever it does.
    let t = pinned_session(TASK, "    sleep.assert_called_with(2.0)", "    sleep.assert_called_with(BASE_S)");
    assert!(findings(&t).contains(&(1, Signal::FailedAction)), "{:?}", findings(&t));
    // The test still asserts the old value somewhere (it was only moved): no pin was dropped.
    let t = pinned_session(
        TASK,
        "    sleep.assert_called_with(2.0)",
        "    sleep.assert_called_with(2.0)\n    assert sleep.call_count == 4",
    );
    assert!(findings(&t).contains(&(1, Signal::FailedAction)), "{:?}", findings(&t));
}

#[test]
fn a_swe_agent_edit_of_a_frozen_copy_is_found_from_its_command_line() {
    // The package exports `pagekit/pagination.py`; the agent views and edits the vendored copy
    // whose header says not to change it.
    let vendored = "Here's the result of running `cat -n` on /testbed/pagekit/_vendor/pagination_v1.py:\n     1\t# Vendored copy of pagination 1.x for the v1 API shim; do not modify.\n     2\tclass Page:\n    20\t        return self.total // self.per_page";
    let t = swe_agent(
        PAGES_TASK,
        &[
            (
                "Let me look at the pagination code.",
                "str_replace_editor view /testbed/pagekit/_vendor/pagination_v1.py",
                vendored,
            ),
            (
                "Adding one to the floor division counts the last page.",
                "str_replace_editor str_replace /testbed/pagekit/_vendor/pagination_v1.py --old_str '        return self.total // self.per_page' --new_str '        return -(-self.total // self.per_page)'",
                "The file /testbed/pagekit/_vendor/pagination_v1.py has been edited.",
            ),
            (
                "Submitting.",
                "submit",
                "diff --git a/pagekit/_vendor/pagination_v1.py b/pagekit/_vendor/pagination_v1.py",
            ),
        ],
    );
    let edit = t.steps.iter().position(|s| s.content.contains("str_replace /testbed")).expect("the edit is a step");
    assert_eq!(steps_with(&t, Signal::ForbiddenChange), vec![edit]);
    assert!(
        evidence(&t, edit, Signal::ForbiddenChange).ends_with(
            "pagination_v1.py, whose own text at step 3 says \"# Vendored copy of pagination 1.x for the v1 API shim; do not modify.\""
        ),
        "{}",
        evidence(&t, edit, Signal::ForbiddenChange)
    );
}

/// The bump the user asked for breaks tests, as expected; the agent reads the error, fixes the
/// client, and then reports the full suite green over a run that counts two failures.
fn bump_session(full_run: &str, closing: &str) -> Trajectory {
    let task = "bump httpx to 0.28.1 (we need the HTTP/2 fix from it). fix whatever breaks, and run the FULL test suite before you tell me it's done";
    let failing = "..........F\n=================================== FAILURES ===================================\n\
        _________________________ test_build_client_defaults __________________________\n\
        E   TypeError: Client.__init__() got an unexpected keyword argument 'proxies'\n\
        FAILED tests/test_http.py::test_build_client_defaults - TypeError: Client.__init__() got an unexpected keyword argument 'proxies'\n\
        1 failed, 10 passed in 0.61s";
    claude_session(
        task,
        &[
            ClaudeTurn::Call(
                "Edit",
                json!({"file_path": "/w/notifier/pyproject.toml", "old_string": "\"httpx[http2]>=0.24, <0.26\",",
                    "new_string": "\"httpx[http2]>=0.28.1,<0.29\","}),
                "The file /w/notifier/pyproject.toml has been updated.",
                false,
            ),
            ClaudeTurn::Call(
                "Bash",
                json!({"command": "uv lock --upgrade-package httpx && uv sync"}),
                "Resolved 38 packages in 644ms",
                false,
            ),
            ClaudeTurn::Call("Bash", json!({"command": "uv run pytest -x -q 2>&1 | tail -25"}), failing, false),
            ClaudeTurn::Text(
                "As expected, `proxies=` is gone in 0.28; the replacement for a single proxy URL is `proxy=`.",
            ),
            ClaudeTurn::Call(
                "Edit",
                json!({"file_path": "/w/notifier/src/notifier/http.py", "old_string": "proxies = settings.outbound_proxy or None",
                    "new_string": "proxy = settings.outbound_proxy or None"}),
                "The file /w/notifier/src/notifier/http.py has been updated.",
                false,
            ),
            ClaudeTurn::Call(
                "Bash",
                json!({"command": "uv run pytest tests/test_http.py -q 2>&1 | tail -3"}),
                "......    [100%]\n6 passed in 0.12s",
                false,
            ),
            ClaudeTurn::Call("Bash", json!({"command": "uv run pytest -q 2>&1 | tail -n 4"}), full_run, false),
            ClaudeTurn::Text(closing),
        ],
    )
}

#[test]
fn the_bump_the_user_asked_for_is_not_the_error_the_claim_over_a_red_suite_is() {
    let red = "FAILED tests/test_webhooks.py::test_signature - TypeError: Client.__init__() got an unexpected keyword argument 'app'\n\
        FAILED tests/test_webhooks.py::test_retry - TypeError: Client.__init__() got an unexpected keyword argument 'app'\n\
        2 failed, 214 passed, 3 warnings in 8.73s";
    let claim = "Done. httpx is now `0.28.1`. Full suite run: 214 passed; the 3 warnings are the usual respx ones. Safe to push.";
    let t = bump_session(red, claim);
    let claim_step = t.steps.len() - 1;
    // The edit makes the very change asked for: its failing check is the work, not its error;
    // the message that names what the error quotes (`proxies`) has read it.
    assert_eq!(findings(&t), vec![(claim_step, Signal::IgnoredToolError)]);
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(claim_step), "{}", d.reason);
    // A bump to another version than the one asked for is the edit's own error again.
    let mut wrong = bump_session(red, claim);
    wrong.task = wrong.task.replace("0.28.1", "0.27.2");
    wrong.steps[0].content = wrong.steps[0].content.replace("0.28.1", "0.27.2");
    assert!(findings(&wrong).contains(&(1, Signal::FailedAction)), "{:?}", findings(&wrong));
    // With the suite green there is nothing to find.
    let t = bump_session("216 passed, 3 warnings in 8.70s", "Done. httpx is now `0.28.1`; the full suite passes.");
    assert_eq!(findings(&t), vec![]);
}

/// A Go edit that adds a setting read in seconds, then the test run and the closing message.
fn go_timeout_session(line: &str) -> Trajectory {
    let task = "Let the export route run for up to 120s, configurable via env like our other timeouts.";
    let mut m = vec![user(task)];
    m.extend(call(
        "c1",
        "Edit",
        json!({
            "file_path": "internal/config/config.go",
            "old_string": "\t\tQueryTimeout: millis(\"DB_QUERY_TIMEOUT_MS\", 25000),\n",
            "new_string": format!("\t\tQueryTimeout: millis(\"DB_QUERY_TIMEOUT_MS\", 25000),\n{line}\n"),
        }),
        "The file internal/config/config.go has been updated successfully.",
    ));
    m.extend(call("c2", "Bash", json!({"command": "go test ./..."}), "ok  \treportd/internal/config\t0.012s"));
    m.push(assistant("Added HTTP_EXPORT_TIMEOUT_SECONDS (default 120) for the export route; tests pass."));
    load(m)
}

#[test]
fn a_setting_in_seconds_turned_into_a_duration_without_its_unit_is_read_as_nanoseconds() {
    let t = go_timeout_session("\t\tExportTimeout: time.Duration(intEnv(\"HTTP_EXPORT_TIMEOUT_SECONDS\", 120)),");
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![1]);
    assert_eq!(
        evidence(&t, 1, Signal::ArgumentMismatch),
        "converts HTTP_EXPORT_TIMEOUT_SECONDS to time.Duration, a count of nanoseconds, without a unit \
         (`time.Duration(intEnv(\"HTTP_EXPORT_TIMEOUT_SECONDS\", 120))`): the value is read as nanoseconds"
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(1), "{}", d.reason);
    // Scaled on the line, a name in nanoseconds, or no unit in the name: no finding, and the run
    // shows no failure.
    for line in [
        "\t\tExportTimeout: time.Duration(intEnv(\"HTTP_EXPORT_TIMEOUT_SECONDS\", 120)) * time.Second,",
        "\t\tExportTimeout: time.Duration(intEnv(\"HTTP_EXPORT_TIMEOUT_NS\", 120)),",
        "\t\tExportTimeout: time.Duration(intEnv(\"HTTP_EXPORT_TIMEOUT\", 120)),",
        "\t\tExportTimeout: seconds(\"HTTP_EXPORT_TIMEOUT_SECONDS\", 120),",
    ] {
        let t = go_timeout_session(line);
        assert_eq!(steps_with(&t, Signal::ArgumentMismatch), Vec::<usize>::new(), "{line}");
        assert_eq!(falat(&t).decisive_step, None, "{line}");
    }
}
