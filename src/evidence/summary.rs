//! What a test runner's own summary line says of a run: passed or failed, read from its counts,
//! whatever exit status the run reports (docs/METHODS.md, "A test summary that counts failures").
//!
//! A build tool set to ignore test failures (Gradle's `ignoreFailures`, Maven's
//! `testFailureIgnore`), a pipe into `tail` or `tee`, or `|| true` make a run that failed tests exit
//! with 0; the runner's summary still counts the failures, and that is what the run showed.

use std::sync::LazyLock;

use regex::Regex;

static PYTEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^=*\s*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)(?:, )?)+) in \d+(?:\.\d+)?s\b",
    )
    .unwrap()
});
static JEST: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*Tests?:?\s+((?:\d+ \w+, )*\d+ total)").unwrap());
static VITEST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*Tests\s+((?:\d+ \w+(?: \| )?)+)\s*\(\d+\)").unwrap());
static COUNT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(\d+) (passed|failed|errors?)").unwrap());
static GRADLE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*(\d+) tests? completed, (\d+) failed\b").unwrap());
static MAVEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:\[(?:INFO|ERROR|WARNING)\]\s*)?Tests run: (\d+), Failures: (\d+), Errors: (\d+)").unwrap()
});
static RSPEC: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*(\d+) examples?, (\d+) failures?\b").unwrap());
static MOCHA: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*(\d+) (failing|passing)\b").unwrap());
static GO_FAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^FAIL(?:\s+\S+\s+(?:\d+(?:\.\d+)?s|\(cached\)|\[build failed\]|\[setup failed\]))?\s*$").unwrap()
});

/// What the last summary line of a test runner in `text` says: `Some(true)` when it counts
/// passed tests and no failed or erroring one, `Some(false)` when it counts failures (one or
/// more), `None` when there is no such line. Read, from the last line up:
///
/// - pytest's `38 passed, 2 skipped in 2.91s` (with or without its `===` rule; `1 failed, 36
///   passed in 2.87s`);
/// - Jest's `Tests:  1 failed, 11 passed, 12 total` and Vitest's `Tests  1 failed | 11 passed
///   (12)`;
/// - cargo's `test result: ok.` / `test result: FAILED.`;
/// - Gradle's `43 tests completed, 1 failed` (else its `There were failing tests`);
/// - Maven Surefire's `Tests run: 12, Failures: 1, Errors: 0, Skipped: 0` (failures and errors
///   count);
/// - RSpec's `12 examples, 1 failure` (`, 2 pending` after it);
/// - Mocha's `1 failing` (after `11 passing (40ms)`, which alone passes);
/// - unittest's `FAILED (failures=1)`;
/// - `go test`'s package line `FAIL  example.com/pkg  0.12s` or a bare `FAIL` line (any one
///   of them fails the run, since each package prints its own line and the last may be `ok`).
///
/// A count of zero failures passes (`0 failed`, `Failures: 0`, `0 failures`); skipped, pending
/// and deselected tests are neither. Captured log lines above the summary (`ERROR syncd.worker:
/// … Read timed out`, from a test that simulates the error on purpose) do not make a run that the
/// summary says passed fail.
///
/// # Example
///
/// ```
/// use falat::evidence::summary::test_summary_passed;
/// assert_eq!(test_summary_passed("43 tests completed, 1 failed\n\nBUILD SUCCESSFUL in 47s"), Some(false));
/// assert_eq!(test_summary_passed("Tests run: 40, Failures: 0, Errors: 0, Skipped: 1"), Some(true));
/// assert_eq!(test_summary_passed("BUILD SUCCESSFUL in 12s"), None);
/// ```
pub fn test_summary_passed(text: &str) -> Option<bool> {
    test_summary(text).map(|(passed, _)| passed)
}

/// The summary line [`test_summary_passed`] reads in `text`, trimmed, with what it says
/// (`true`: passed). For a `go test` run that fails, its first `FAIL` line.
///
/// ```
/// use falat::evidence::summary::test_summary;
/// let out = "43 tests completed, 1 failed\n\nThere were failing tests.\n\nBUILD SUCCESSFUL in 47s";
/// assert_eq!(test_summary(out), Some((false, "43 tests completed, 1 failed")));
/// ```
pub fn test_summary(text: &str) -> Option<(bool, &str)> {
    if let Some(m) = GO_FAIL.find(text) {
        return Some((false, m.as_str().trim()));
    }
    let found = text.lines().rev().find_map(|line| {
        let line = line.trim_end();
        summary_verdict(line).map(|passed| (passed, line.trim()))
    });
    // Gradle's closing sentence fails a run whose count line did not reach the output.
    found
        .or_else(|| text.lines().map(str::trim).find(|l| l.starts_with("There were failing tests")).map(|l| (false, l)))
}

/// What one line says when it is a test runner's summary line ([`test_summary_passed`]).
fn summary_verdict(line: &str) -> Option<bool> {
    let verdict = |counts: &str| {
        let (mut passed, mut failed) = (0u64, 0u64);
        for c in COUNT.captures_iter(counts) {
            let n: u64 = c[1].parse().unwrap_or(0);
            if &c[2] == "passed" { passed += n } else { failed += n }
        }
        (passed + failed > 0).then_some(failed == 0)
    };
    let n = |s: &str| s.parse::<u64>().unwrap_or(0);
    let start = line.trim_start();
    if let Some(rest) = start.strip_prefix("test result: ") {
        return Some(rest.starts_with("ok"));
    }
    if start.starts_with("FAILED (failures=") || start.starts_with("FAILED (errors=") {
        return Some(false);
    }
    // Every other summary counts tests: a line without a digit is none (most lines of a tool's
    // output, read here for every result of a long run).
    if !start.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    if let Some(c) = PYTEST.captures(start.trim_start_matches('=').trim_start()) {
        return verdict(&c[1]);
    }
    if let Some(c) = GRADLE.captures(line) {
        return Some(n(&c[2]) == 0);
    }
    if let Some(c) = MAVEN.captures(start) {
        return (n(&c[1]) > 0).then(|| n(&c[2]) + n(&c[3]) == 0);
    }
    if let Some(c) = RSPEC.captures(line) {
        return Some(n(&c[2]) == 0);
    }
    if let Some(c) = MOCHA.captures(line) {
        return Some(&c[2] == "passing" || n(&c[1]) == 0);
    }
    JEST.captures(line).or_else(|| VITEST.captures(line)).and_then(|c| verdict(&c[1]))
}

#[cfg(test)]
mod tests {
    use super::test_summary_passed;

    #[track_caller]
    fn check(text: &str, expect: Option<bool>) {
        assert_eq!(test_summary_passed(text), expect, "{text}");
    }

    #[test]
    fn runners_that_count_failures_fail_whatever_follows() {
        check(
            "43 tests completed, 1 failed\n\nThere were failing tests. See the report\n\nBUILD SUCCESSFUL in 47s",
            Some(false),
        );
        check("17 tests completed, 2 failed, 1 skipped", Some(false));
        check("[ERROR] Tests run: 58, Failures: 1, Errors: 0, Skipped: 2\n[INFO] BUILD SUCCESS", Some(false));
        check("Tests run: 9, Failures: 0, Errors: 2, Skipped: 0", Some(false));
        check("Finished in 1.2 seconds\n31 examples, 3 failures, 1 pending", Some(false));
        check("  11 passing (40ms)\n  1 failing\n\n  1) parser\n", Some(false));
        check(" Test Files  1 failed | 4 passed (5)\n      Tests  2 failed | 40 passed (42)", Some(false));
        check("Ran 12 tests in 0.03s\n\nFAILED (failures=1)", Some(false));
        check(
            "--- FAIL: TestRefund (0.00s)\nFAIL\nFAIL\texample.com/pay\t0.41s\nok  \texample.com/cart\t0.12s",
            Some(false),
        );
        check("ok  \texample.com/cart\t0.12s\nFAIL\texample.com/pay [build failed]", Some(false));
    }

    #[test]
    fn zero_failures_pass_and_other_text_says_nothing() {
        check("40 tests completed, 0 failed", Some(true));
        check("[INFO] Tests run: 40, Failures: 0, Errors: 0, Skipped: 1\n[INFO] BUILD SUCCESS", Some(true));
        check("31 examples, 0 failures, 1 pending", Some(true));
        check("  11 passing (40ms)\n  2 pending", Some(true));
        check("      Tests  42 passed (42)", Some(true));
        check("ok  \texample.com/cart\t0.12s\nok  \texample.com/pay\t(cached)", None);
        check("BUILD SUCCESSFUL in 12s\n31 actionable tasks: 6 executed", None);
        check("FAIL is the word the linter prints for a failed rule", None);
    }
}
