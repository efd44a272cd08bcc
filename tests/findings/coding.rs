//! Coding-agent sessions (docs/METHODS.md, "Coding-agent sessions"): the failure the task reports,
//! reproduced first, is where the work starts; an edit is judged by the check after it; a claim
//! that the work is done ("all tests pass") needs a check after the last edit that did not fail.
//! Small OpenAI Chat Completions sessions built here, then the real-shaped Codex and OpenHands
//! files of `tests/fixtures`.

use falat::diagnosis::{Rule, Signal};
use falat::model::Trajectory;
use falat::substrate::{Context, Substrate, signals};
use serde_json::{Value, json};

use crate::chat::{assistant, call, evidence, falat, findings, fixture, load, user};

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
