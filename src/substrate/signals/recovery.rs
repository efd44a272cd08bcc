//! Errors of a coding session the agent recovered from by another command (docs/METHODS.md,
//! "Coding-agent sessions"): a check (a test run, a build, a linter) that failed, after which the
//! agent changed the code or the environment and the same check, or a broader one, passed; a
//! program found missing that the agent then ran another way; code that failed and was run again
//! corrected. And the opposite reading of a check run again: a weaker one (a flag or a selection
//! of the first run dropped), which shows nothing about the failure the first run showed.
//!
//! Every rule reads the calls, their command lines ([`super::shell`]) and their outputs only: no
//! tool, file or benchmark is named. Every scan over later steps is bounded by
//! [`RECOVERY_WINDOW`] steps.

use std::collections::BTreeSet;

use super::shell::{self, Command};
use super::{Context, call_command, call_error, check_fails, edits, failing_tests, refused_call, result_of};
use crate::model::{StepKind, Trajectory};

/// How many steps after a failed call its recovery is looked for.
pub(crate) const RECOVERY_WINDOW: usize = 200;

/// Options of a check that select what it checks and take a value (`-k NAME`, `--test NAME`,
/// `-run REGEX`, cargo's `-p PACKAGE`): dropping one checks more, adding one checks less.
const SELECT_WITH_VALUE: [&str; 15] = [
    "-k",
    "--test",
    "-run",
    "--run",
    "-t",
    "--testnamepattern",
    "--grep",
    "-g",
    "--filter",
    "-p",
    "--package",
    "--bin",
    "--example",
    "--bench",
    "--workspace-member",
];

/// Options of a check that select what it checks without a value (`cargo test --lib`, pytest's
/// `--lf`).
const SELECT_FLAGS: [&str; 8] =
    ["--lib", "--bins", "--tests", "--doc", "--lf", "--last-failed", "--only-failures", "--examples"];

/// Options that change only how a check reports or how often it runs, not what it checks
/// (`-v`, `-q`, `-x`, `--tb=short`, `-count=1`, `--color never`, ruff's `--statistics`): neither kept nor dropped
/// matters. Compared without their `=value`.
const OUTPUT_OPTIONS: [&str; 30] = [
    "--statistics",
    "--show-fixes",
    "--show-source",
    "--output-format",
    "-v",
    "-vv",
    "-vvv",
    "-q",
    "-qq",
    "-x",
    "-s",
    "--quiet",
    "--verbose",
    "--tb",
    "--no-header",
    "-ra",
    "-rA",
    "-count",
    "--count",
    "--color",
    "--colors",
    "--nocapture",
    "--no-fail-fast",
    "--exitfirst",
    "--maxfail",
    "--message-format",
    "--format",
    "--reporter",
    "--silent",
    "--no-capture",
];

/// Programs whose first word that is no option names what they do (`cargo test`, `go vet`,
/// `npm test`): two runs check the same thing only with the same such word.
const WITH_SUBCOMMAND: [&str; 13] =
    ["cargo", "go", "npm", "yarn", "pnpm", "bun", "make", "mix", "dotnet", "deno", "gradle", "mvn", "swift"];

/// One check a shell call runs: its program, its subcommand (for [`WITH_SUBCOMMAND`]), the
/// options that decide how it checks (not [`OUTPUT_OPTIONS`], not a selection) and what it
/// selects (its other arguments and the values of [`SELECT_WITH_VALUE`], each as written;
/// [`SELECT_FLAGS`] too). An empty selection checks everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Check {
    /// The program (`go`, `pytest`, `python` for a script run).
    pub program: String,
    /// Its subcommand (`test`), or empty.
    pub sub: String,
    /// The options that decide how it checks (`-race`, `-D`), without their `=value`.
    pub modes: BTreeSet<String>,
    /// What it selects (`./internal/bucket/...`, `cli_status`, `--lib`).
    pub selection: Vec<String>,
}

impl Check {
    /// Whether `other` checks the same thing as `self`, or more: the same program and
    /// subcommand, every option of `self` that decides how it checks kept, and a selection that
    /// is empty or covers each of its items with one of `self`'s (equal, or a folder or prefix
    /// of it: `./...` covers `./internal/bucket/...`).
    pub fn covered_by(&self, other: &Check) -> bool {
        self.program == other.program
            && self.sub == other.sub
            && self.modes.is_subset(&other.modes)
            && (other.selection.is_empty()
                || !self.selection.is_empty()
                    && other.selection.iter().all(|b| self.selection.iter().any(|a| selects_within(a, b))))
    }

    /// What `other`, a run of the same program and subcommand, leaves out of `self`: the first
    /// option of `self` that decides how it checks and `other` drops (`-race`), else the first
    /// selection item `other` adds (`-k timeout`); `None` when `other` covers `self` or runs
    /// another check.
    pub fn weakened_by(&self, other: &Check) -> Option<String> {
        if self.program != other.program || self.sub != other.sub || self.covered_by(other) {
            return None;
        }
        if let Some(m) = self.modes.difference(&other.modes).next() {
            return Some(format!("without `{m}`"));
        }
        other
            .selection
            .iter()
            .find(|b| self.selection.is_empty() || !self.selection.iter().any(|a| selects_within(a, b)))
            .map(|b| format!("on `{}` only", crate::text::clip(b, 40)))
    }

    /// The check as a short command (`go test -race`), for a reason.
    pub fn label(&self) -> String {
        let mut s = self.program.clone();
        if !self.sub.is_empty() {
            s.push(' ');
            s.push_str(&self.sub);
        }
        for m in &self.modes {
            s.push(' ');
            s.push_str(m);
        }
        s
    }
}

/// Whether selection item `b` selects everything `a` does: equal, or a prefix of it at a path or
/// name boundary (`./...`, `tests/`, `tests` of `tests/test_x.py::test_y`), Go's `/...` and a
/// leading `./` not counted.
fn selects_within(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.trim_start_matches("./").trim_end_matches("...").trim_end_matches('/').to_string();
    let (a, b) = (norm(a), norm(b));
    b.is_empty() || a == b || a.starts_with(&b) && a[b.len()..].starts_with(['/', ':', '.'])
}

/// The checks shell call `c` runs, one per simple command that reads or checks
/// ([`shell::reads_or_checks`]) and is not a plain reader ([`shell::READ_PROGRAMS`], `git`,
/// `sed`, `find`, a one-line probe, a `--version` or `--help` run), plus a script run by an
/// interpreter (`python repro.py`, `node check.js`). Empty for any other call.
pub(crate) fn checks(t: &Trajectory, c: usize) -> Vec<Check> {
    if t.steps[c].kind != StepKind::ToolCall {
        return Vec::new();
    }
    let Some(cmd) = call_command(t, c) else { return Vec::new() };
    shell::commands(&cmd).iter().filter_map(check_of).collect()
}

/// Options of `docker run` / `docker exec` (and `podman`'s) that take a value.
const CONTAINER_VALUE_OPTIONS: [&str; 16] = [
    "-v",
    "--volume",
    "-w",
    "--workdir",
    "-e",
    "--env",
    "--env-file",
    "--name",
    "--network",
    "-p",
    "--publish",
    "-u",
    "--user",
    "--mount",
    "--platform",
    "--entrypoint",
];

/// The command a container runs (`docker run --rm -v $PWD:/repo IMAGE python -m pytest -q tests`:
/// `python -m pytest -q tests`), for `docker`/`podman` `run` (after the image) and `exec` (after
/// the container); `None` for any other command or when nothing follows the image.
fn in_container(c: &Command) -> Option<Command> {
    let inv = c.invocation()?;
    if !matches!(inv.program, "docker" | "podman") {
        return None;
    }
    let words: Vec<&str> = inv.args.iter().map(|w| w.text.as_str()).collect();
    let (sub, mut k) = (words.iter().position(|w| !w.starts_with('-'))?, 0);
    if !matches!(words[sub], "run" | "exec") {
        return None;
    }
    k += sub + 1;
    while k < words.len() && words[k].starts_with('-') {
        k += if CONTAINER_VALUE_OPTIONS.contains(&words[k]) { 2 } else { 1 };
    }
    // The image or the container, then its command.
    let rest = words.get(k + 1..).filter(|r| !r.is_empty())?;
    shell::commands(&rest.join(" ")).into_iter().next()
}

/// Whether one simple command runs tests ([`shell::runs_tests`]), also inside a container
/// ([`in_container`]).
fn runs_tests_anywhere(c: &Command) -> bool {
    shell::runs_tests(c) || in_container(c).is_some_and(|x| shell::runs_tests(&x))
}

/// The check one simple command runs ([`checks`]).
fn check_of(c: &Command) -> Option<Check> {
    let inv = c.invocation()?;
    let program = inv.program;
    let words: Vec<&str> = inv.args.iter().map(|w| w.text.as_str()).collect();
    // `pnpm vitest run FILE`, `yarn jest`: pnpm, yarn and bun run a package's program when no
    // command or script of theirs has its name, so the check is that program's.
    if matches!(program, "pnpm" | "yarn" | "bun") {
        let first = words.iter().position(|w| !w.starts_with(['-', '+']));
        if let Some(p) = first.filter(|&p| PACKAGE_RUNNERS.contains(&words[p])) {
            let line = words[p..].join(" ");
            return shell::commands(&line).first().and_then(check_of);
        }
    }
    let script = matches!(program, "python" | "python3" | "node" | "ruby" | "bash" | "sh")
        && words.first().is_some_and(|w| !w.starts_with('-') && w.contains('.'));
    let plain = shell::READ_PROGRAMS.contains(&program)
        || matches!(
            program,
            "git" | "sed" | "find" | "awk" | "source" | "." | "export" | "set" | "unset" | "pip" | "pip3"
        );
    if !script && (plain || !shell::reads_or_checks(c) || words.iter().any(|w| matches!(*w, "-c" | "-e"))) {
        return None;
    }
    // `ruff --version`, `pytest --help`: the program prints and exits, checking nothing.
    if words.iter().any(|w| matches!(*w, "--version" | "--help")) {
        return None;
    }
    let mut k = 0;
    let mut sub = String::new();
    if WITH_SUBCOMMAND.contains(&program) {
        while k < words.len() && words[k].starts_with(['-', '+']) {
            k += 1;
        }
        sub = words.get(k).map_or(String::new(), |w| w.to_string());
        k += 1;
    }
    let (mut modes, mut selection) = (BTreeSet::new(), Vec::new());
    while k < words.len() {
        let w = words[k];
        k += 1;
        if w == "--" {
            continue;
        }
        if !w.starts_with('-') || w == "-" {
            selection.push(w.to_string());
            continue;
        }
        let (name, value) = w.split_once('=').map_or((w, None), |(n, v)| (n, Some(v)));
        let low = name.to_ascii_lowercase();
        // `-p` selects a package for cargo only: pytest's `-p no:cacheprovider` loads or blocks
        // a plugin, `go test -p 4` sets how many run at once. Neither selects what is checked.
        if low == "-p" && program != "cargo" {
            if value.is_none() {
                k += 1;
            }
            continue;
        }
        if SELECT_WITH_VALUE.contains(&low.as_str()) {
            match value {
                Some(v) => selection.push(format!("{low}={v}")),
                None => {
                    selection.push(format!("{low}={}", words.get(k).copied().unwrap_or("")));
                    k += 1;
                }
            }
        } else if SELECT_FLAGS.contains(&low.as_str()) {
            selection.push(low);
        } else if OUTPUT_OPTIONS.iter().any(|o| o.eq_ignore_ascii_case(name)) {
            // `-count 1`, `--tb short`, `--color never`: skip the value too.
            if value.is_none()
                && words.get(k).is_some_and(|v| !v.starts_with('-') && v.len() <= 6 && !v.contains(['/', '.']))
                && !matches!(
                    low.as_str(),
                    "-v" | "-vv"
                        | "-vvv"
                        | "-q"
                        | "-qq"
                        | "-x"
                        | "-s"
                        | "--quiet"
                        | "--verbose"
                        | "--no-header"
                        | "--nocapture"
                        | "--no-fail-fast"
                        | "--exitfirst"
                        | "--silent"
                        | "--no-capture"
                        | "--statistics"
                        | "--show-fixes"
                        | "--show-source"
                        | "-ra"
                )
            {
                k += 1;
            }
        } else {
            modes.insert(name.to_string());
        }
    }
    Some(Check { program: program.to_string(), sub, modes, selection })
}

/// Test runners and checkers that a package manager (`pnpm`, `yarn`, `bun`) runs by their name
/// from the project's installed packages (`pnpm vitest run`).
const PACKAGE_RUNNERS: [&str; 5] = ["jest", "vitest", "mocha", "tsc", "eslint"];

/// How many lines of a package script run's output are read for the command it echoes.
const SCRIPT_ECHO_LINES: usize = 12;

/// The checks call `c` runs ([`checks`]), and for a package script run (`npm test`, `pnpm test`,
/// `yarn run lint`, `bun run test`) also those of the script, read from the lines its output
/// echoes before running it: npm and pnpm print `> NAME@VERSION SCRIPT [DIR]` then `> COMMAND`
/// (`> tsc --noEmit && vitest run`), yarn 1 and bun print `$ COMMAND`; only the first
/// [`SCRIPT_ECHO_LINES`] lines are read. So `pnpm test` whose script runs `vitest run` covers an
/// earlier `pnpm vitest run test/a.test.ts`.
pub(crate) fn checks_run(ctx: &Context<'_>, c: usize) -> Vec<Check> {
    let t = ctx.trajectory;
    let mut out = checks(t, c);
    if !out.iter().any(|x| matches!(x.program.as_str(), "npm" | "pnpm" | "yarn" | "bun")) {
        return out;
    }
    let Some(r) = result_of(ctx, c) else { return out };
    let mut header = false;
    for line in t.steps[r].content.lines().take(SCRIPT_ECHO_LINES) {
        let line = line.trim();
        let echoed = match line.strip_prefix("> ") {
            // npm's and pnpm's header names the package with its version.
            Some(rest) if !header && rest.split_whitespace().next().is_some_and(|w| w.contains('@')) => {
                header = true;
                continue;
            }
            Some(rest) if header => Some(rest),
            _ => line.strip_prefix("$ "),
        };
        if let Some(cmd) = echoed {
            out.extend(shell::commands(cmd).iter().filter_map(check_of));
            header = false;
        }
    }
    out
}

/// Whether every check of `a` is covered by one of `b`'s ([`Check::covered_by`]).
fn all_covered(a: &[Check], b: &[Check]) -> bool {
    !a.is_empty() && a.iter().all(|x| b.iter().any(|y| x.covered_by(y)))
}

/// Whether a path is a test file: a folder `test`, `tests`, `__tests__`, `spec` or `testdata` on
/// it, or a name `test_*`, `*_test.*`, `*.test.*`, `*.spec.*`, `*_spec.*`, `*Test.*`, `*Tests.*`.
pub(crate) fn is_test_path(path: &str) -> bool {
    let parts: Vec<&str> = path.split(['/', '\\']).collect();
    let name = parts.last().copied().unwrap_or("");
    let stem = name.split('.').next().unwrap_or(name);
    parts[..parts.len().saturating_sub(1)]
        .iter()
        .any(|p| matches!(*p, "test" | "tests" | "__tests__" | "spec" | "testdata"))
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_spec")
        || stem.ends_with("Test")
        || stem.ends_with("Tests")
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// Whether call `k`, a change made after the failed check `c` (output `r`), can have fixed what
/// `c` showed: a change that edits no test file (the code, a manifest, a dependency installed),
/// or an edit of a test file holding a failing test the agent wrote itself before `c` (every
/// test `r` names as failed is named in an edit of a test file by the agent before `c`; when `r`
/// names none, a test file the agent edited before `c`). Rewriting a test that was there before, so that it
/// passes, fixes nothing it reported.
fn fixes(ctx: &Context<'_>, c: usize, r: usize, k: usize) -> bool {
    let t = ctx.trajectory;
    let files = super::coding::edited_files(t, k);
    if files.iter().all(|f| !is_test_path(f)) {
        return true;
    }
    let agent = &t.steps[c].agent;
    // The agent's own edits of test files before `c` (a test named in an edit of the code, `slugify`
    // in `src/lib/slug.ts`, is not a test the agent wrote).
    let own_edits = || {
        (c.saturating_sub(RECOVERY_WINDOW)..c).filter(|&j| {
            t.steps[j].agent == *agent
                && edits(t, j)
                && super::coding::edited_files(t, j).iter().any(|f| is_test_path(f))
        })
    };
    // The failed assertion compares the new value the task asks for with the old one it
    // replaces ("raise the timeout from 10s to 30s": `assert 30.0 == 10`), and the edit writes the
    // new value into the test: the test pinned the behaviour the task changes.
    if replaced_values(&t.task).iter().any(|(old, new)| {
        asserts_both(&t.steps[r].content, old, new) && numbers_in(&t.steps[k].content).any(|n| n == *new)
    }) {
        return true;
    }
    if pinned_old_value(ctx, c, k) {
        return true;
    }
    let failing = failing_tests(&t.steps[r].content);
    if failing.is_empty() {
        return files.iter().filter(|f| is_test_path(f)).all(|f| {
            let name = super::coding::file_name(f);
            own_edits().any(|j| super::coding::edited_files(t, j).iter().any(|g| super::coding::file_name(g) == name))
        });
    }
    failing.iter().all(|name| {
        let short = name.rsplit("::").next().unwrap_or(name);
        own_edits().any(|j| super::contains_word(&t.steps[j].content, short))
    })
}

/// Whether test edit `k`, made after the failed check `c`, drops an assertion of a value the
/// behaviour the task changes had: a line it removes asserts ([`super::coding::asserts`]) a number
/// (not 0 or 1) that the task names ("sleeps a fixed 2 s between attempts … make it exponential
/// backoff") and that an edit of a file other than a test, by the same agent within
/// [`RECOVERY_WINDOW`] steps before `c`, removed with its line (`RETRY_SLEEP_S = 2.0`) and set
/// again in no constant it adds (`BULK_MIN = 10` removed and added back keeps the value), and no
/// line `k` adds holds it again nor asserts against a constant the code edits set (`assert
/// attempts == MAX_ATTEMPTS` follows the code, whatever it does). The test pinned the old behaviour the task asks to replace; updating
/// it with the code is part of the change. A rewrite of the expected value to the one a buggy fix
/// prints is not this: the value it drops is the task's wanted one, which no code edit removed.
fn pinned_old_value(ctx: &Context<'_>, c: usize, k: usize) -> bool {
    let t = ctx.trajectory;
    let Some((removed, added)) = super::coding::edit_lines(t, k) else { return false };
    let dropped: Vec<String> = removed
        .iter()
        .filter(|l| super::coding::asserts(l) && !added.contains(l))
        .flat_map(|l| numbers_in(l).collect::<Vec<_>>())
        .filter(|n| n != "0" && n != "1")
        .filter(|n| !added.iter().any(|l| numbers_in(l).any(|m| m == *n)))
        .collect();
    if dropped.is_empty() {
        return false;
    }
    let task: Vec<String> = numbers_in(&t.task).collect();
    let agent = &t.steps[c].agent;
    let code_edits: Vec<(Vec<String>, Vec<String>)> = (c.saturating_sub(RECOVERY_WINDOW)..c)
        .filter(|&j| {
            t.steps[j].agent == *agent
                && edits(t, j)
                && super::coding::edited_files(t, j).iter().all(|f| !is_test_path(f))
        })
        .filter_map(|j| super::coding::edit_lines(t, j))
        .collect();
    // A constant the code edits set (`BULK_MIN = 10`, `MAX_ATTEMPTS = 2`): its value is still
    // the code's, and a test that now asserts against its name follows the code whatever it is.
    static ASSIGNED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^\s*(?:(?:const|let|var|static|final|pub)\s+)*([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]+)?=\s*(.+)$",
        )
        .unwrap()
    });
    let assigned: Vec<(String, String)> = code_edits
        .iter()
        .flat_map(|(_, add)| add.iter())
        .filter_map(|l| ASSIGNED.captures(l).map(|c| (c[1].to_string(), c[2].to_string())))
        .collect();
    let still_set: Vec<String> = assigned.iter().flat_map(|(_, v)| numbers_in(v).collect::<Vec<_>>()).collect();
    let follows_code = added.iter().any(|l| {
        super::coding::asserts(l) && assigned.iter().any(|(name, _)| name.len() >= 3 && super::contains_word(l, name))
    });
    if follows_code {
        return false;
    }
    let code_removed: Vec<String> = code_edits
        .iter()
        .flat_map(|(rem, add)| {
            rem.iter().filter(|l| !add.contains(l)).flat_map(|l| numbers_in(l).collect::<Vec<_>>()).collect::<Vec<_>>()
        })
        .collect();
    dropped.iter().any(|n| task.contains(n) && code_removed.contains(n) && !still_set.contains(n))
}

/// The values a task asks to change, as (old, new), normalised
/// ([`crate::evidence::normalize_number`]): "raise the default timeout from 10s to 30s" → (10,
/// 30), "from 1.5 % to 2 %" → (1.5, 2).
fn replaced_values(task: &str) -> Vec<(String, String)> {
    static FROM_TO: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)\bfrom\s+(\d+(?:\.\d+)?)\s*[a-z%]{0,8}\s+to\s+(\d+(?:\.\d+)?)").unwrap()
    });
    FROM_TO
        .captures_iter(task)
        .map(|c| (crate::evidence::normalize_number(&c[1]), crate::evidence::normalize_number(&c[2])))
        .filter(|(a, b)| !a.is_empty() && !b.is_empty() && a != b)
        .collect()
}

/// The numbers of `text`, normalised ([`crate::evidence::normalize_number`]).
fn numbers_in(text: &str) -> impl Iterator<Item = String> + '_ {
    static NUMBER: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\d+(?:\.\d+)?").unwrap());
    NUMBER.find_iter(text).map(|m| crate::evidence::normalize_number(m.as_str()))
}

/// Whether a line of a test run's output that asserts or expects (`assert 30.0 == 10`,
/// `Expected: 10, Received: 30`) holds both `old` and `new`.
fn asserts_both(output: &str, old: &str, new: &str) -> bool {
    output
        .lines()
        .filter(|l| {
            let low = l.to_ascii_lowercase();
            low.contains("assert") || low.contains("expected") || low.contains("received")
        })
        .any(|l| {
            let ns: Vec<String> = numbers_in(l).collect();
            ns.iter().any(|n| n == old) && ns.iter().any(|n| n == new)
        })
        || {
            // Expected and received on lines of their own (Jest).
            let lines: Vec<&str> = output.lines().collect();
            lines.windows(2).any(|w| {
                let joined = format!("{} {}", w[0], w[1]).to_ascii_lowercase();
                joined.contains("expected") && joined.contains("received") && {
                    let ns: Vec<String> = numbers_in(&joined).collect();
                    ns.iter().any(|n| n == old) && ns.iter().any(|n| n == new)
                }
            })
        }
}

/// The result step of shell call `c` and the checks it ran ([`checks_run`]), when it ran some
/// and they failed ([`check_fails`]); `None` otherwise.
fn failed_checks(ctx: &Context<'_>, c: usize) -> Option<(usize, Vec<Check>)> {
    let r = result_of(ctx, c).filter(|&r| check_fails(ctx, r))?;
    let first = checks_run(ctx, c);
    (!first.is_empty()).then_some((r, first))
}

/// Whether the agent recovered from the failed check `c` (a shell call whose checks
/// ([`checks`]) failed) by another command: within [`RECOVERY_WINDOW`] steps the same agent
/// changed something that can fix it ([`fixes`]: the code, a manifest, a dependency, its own new
/// test), and the last run after that of the same check or a broader one ([`Check::covered_by`]:
/// `cargo test` after `cargo test --test cli_status`; also when the call that runs it changes
/// something first, `mv stale_test.go /tmp && go test ./...`, but not after `git stash`) passed;
/// or a run that sets aside a file the agent never edited nor made ([`set_aside`],
/// [`foreign_file`]: a stray file left in the tree breaking the build) passed. A check that failed on work in
/// progress and passes once the work is finished is part of the work, not the run's error. A
/// check that passes only after a test that was there before was rewritten is not recovered;
/// nor one whose later runs are all weaker ([`Check::weakened_by`]: `-race` dropped); nor one
/// after whose passing run a test run of another kind fails (the suite run in the container
/// image, [`in_container`]), when the failed check ran tests itself: the session's last checks
/// do not pass. A type-check that passes again is recovered whatever a later test run shows.
pub(crate) fn check_recovered(ctx: &Context<'_>, c: usize) -> bool {
    let t = ctx.trajectory;
    let Some((r, first)) = failed_checks(ctx, c) else { return false };
    let agent = &t.steps[c].agent;
    let end = t.steps.len().min(c + 1 + RECOVERY_WINDOW);
    let (mut fixed, mut last) = (false, None);
    let tests_first = runs_tests_later(t, c);
    for k in c + 1..end {
        let s = &t.steps[k];
        if s.kind != StepKind::ToolCall || s.agent != *agent || refused_call(ctx, k) {
            continue;
        }
        // Tests run another way after the passing run (in the image the code ships in) fail:
        // the session's last checks do not pass. Only for a failed check that ran tests itself: a
        // type-check or build that passes again is recovered whatever a later test run shows
        // (that run judges the work of its own, after the edits before it).
        if tests_first
            && last == Some(true)
            && runs_tests_later(t, k)
            && result_of(ctx, k).is_some_and(|rk| check_fails(ctx, rk))
        {
            return false;
        }
        if super::changes_state(t, k) {
            if fixing_change(ctx, c, r, k) {
                fixed = true;
            }
            // A command that changes something and then runs the check (`mv stale_test.go /tmp
            // && go test ./...`) is a run of the check too, unless it swaps the agent's work out
            // of the tree first (`git stash && pytest`: that checks the code as it was).
            if checks(t, k).is_empty()
                || call_command(t, k).is_some_and(|cmd| shell::commands(&cmd).iter().any(shell::swaps_tree))
            {
                continue;
            }
        }
        if all_covered(&first, &checks_run(ctx, k)) {
            // A file that is not the agent's, set aside for this run only.
            let aside = set_aside(t, k).iter().any(|name| foreign_file(ctx, c, name));
            last = Some((fixed || aside) && result_of(ctx, k).is_some_and(|rk| !check_fails(ctx, rk)));
        }
    }
    last == Some(true)
}

/// Whether call `k`, made after the failed check `c` (output `r`), is a change that can have
/// fixed what `c` showed: it changes something ([`super::changes_state`]), it did not fail
/// ([`call_error`]), and it is no rewrite of a test that was there before ([`fixes`]). The one
/// test of a change, for a check that passes after a fix ([`check_recovered`]) and for the same
/// command line run again with success ([`rerun_counts`]).
fn fixing_change(ctx: &Context<'_>, c: usize, r: usize, k: usize) -> bool {
    super::changes_state(ctx.trajectory, k) && call_error(ctx, k).is_none() && fixes(ctx, c, r, k)
}

/// Whether the passing run `k` of the check `c` (the same command line, run again by the same
/// agent) says the failure `c` showed is gone: `c` did not fail, or the agent changed nothing
/// between the two runs (a call the user refused passed over), or one of its changes between them
/// can have fixed it ([`fixing_change`]). A check that passes only after a test that was there
/// before was rewritten (its expected value moved to what the code returns) fixed nothing: the
/// same protection as [`check_recovered`]'s.
pub(crate) fn rerun_counts(ctx: &Context<'_>, c: usize, k: usize) -> bool {
    let t = ctx.trajectory;
    let Some(r) = result_of(ctx, c).filter(|&r| check_fails(ctx, r)) else { return true };
    let agent = &t.steps[c].agent;
    let changes: Vec<usize> = (c + 1..k)
        .filter(|&j| {
            t.steps[j].kind == StepKind::ToolCall
                && t.steps[j].agent == *agent
                && !refused_call(ctx, j)
                && super::changes_state(t, j)
        })
        .collect();
    changes.is_empty() || changes.iter().any(|&j| fixing_change(ctx, c, r, j))
}

/// Whether the failed check `c` (a shell call whose checks ([`checks_run`]) failed) passed when
/// the same agent ran the same check or a broader one ([`Check::covered_by`]) again, within
/// `window` steps, with no call of the agent changing anything in between ([`super::changes_state`]:
/// no edit, no install, no setting changed): nothing the code holds made the first run fail (a
/// quoting slip, a flaky test), so its failure is no verdict on the code.
pub(crate) fn rerun_unchanged_passes(ctx: &Context<'_>, c: usize, window: usize) -> bool {
    let t = ctx.trajectory;
    let Some((_, first)) = failed_checks(ctx, c) else { return false };
    let agent = &t.steps[c].agent;
    for k in c + 1..t.steps.len().min(c + 1 + window) {
        let s = &t.steps[k];
        if s.kind != StepKind::ToolCall || refused_call(ctx, k) {
            continue;
        }
        if s.agent != *agent || edits(t, k) || super::changes_state(t, k) {
            return false;
        }
        if all_covered(&first, &checks_run(ctx, k)) {
            return result_of(ctx, k).is_some_and(|rk| !check_fails(ctx, rk));
        }
    }
    false
}

/// The file names shell call `k` sets aside while it runs: moved away by one `mv` and moved
/// back by a later `mv` of the same command line (`mv internal/store/cursor_test.go /tmp/aside/
/// && go test ./...; mv /tmp/aside/cursor_test.go internal/store/`). The tree is left as it was.
fn set_aside(t: &Trajectory, k: usize) -> Vec<String> {
    let Some(cmd) = call_command(t, k) else { return Vec::new() };
    let moves: Vec<Vec<String>> = shell::commands(&cmd)
        .iter()
        .filter_map(|x| {
            let inv = x.invocation()?;
            (inv.program == "mv").then(|| {
                inv.args.iter().map(|w| w.text.clone()).filter(|w| !w.starts_with('-') && !w.is_empty()).collect()
            })
        })
        .filter(|args: &Vec<String>| args.len() == 2)
        .collect();
    let name = |p: &str| super::coding::file_name(p).to_string();
    let mut out = Vec::new();
    for (n, away) in moves.iter().enumerate() {
        let file = name(&away[0]);
        if file.len() >= 3 && moves[n + 1..].iter().any(|back| name(&back[0]) == file) && !out.contains(&file) {
            out.push(file);
        }
    }
    out
}

/// Whether the file `name`, which a run after the failed check `c` set aside, is not the agent's
/// work: the agent of `c` neither edited nor made a file of that name before `c` (within
/// [`RECOVERY_WINDOW`] steps). When the same check passes with only such a file set aside, the
/// failure was that file's (a stray file left in the tree breaking the build), not the agent's.
fn foreign_file(ctx: &Context<'_>, c: usize, name: &str) -> bool {
    let t = ctx.trajectory;
    let agent = &t.steps[c].agent;
    !(c.saturating_sub(RECOVERY_WINDOW)..c).any(|j| {
        t.steps[j].agent == *agent
            && super::changes_state(t, j)
            && super::coding::edited_files(t, j).iter().any(|f| super::coding::file_name(f) == name)
    })
}

/// Whether call `k` is a shell call that runs tests, also inside a container
/// ([`runs_tests_anywhere`]).
fn runs_tests_later(t: &Trajectory, k: usize) -> bool {
    call_command(t, k).is_some_and(|cmd| shell::commands(&cmd).iter().any(runs_tests_anywhere))
}

/// Whether the program tool output `r` found missing, or the command name the shell could not
/// run ([`super::shell_could_not_run`]: `"python -m pytest"` quoted as one word), was run
/// another way, with success, by the same agent within [`RECOVERY_WINDOW`] steps: a later shell
/// call that names the program as a word (`docker run … actionlint`, `npx eslint`, `python -m
/// pytest`), repeats every argument of the failed command (`grep -rn tokens src` after `rg -n
/// tokens src`) or runs the same check again ([`Check::covered_by`]: `PYTHONPATH=src python
/// repro.py` after `python repro.py` found a module missing), and did not fail. A checker that is not installed, run through a container or
/// a runner, checked the code after all.
pub(crate) fn missing_program_recovered(ctx: &Context<'_>, r: usize) -> bool {
    let t = ctx.trajectory;
    let Some(name) = super::shell_could_not_run(ctx, r) else { return false };
    let Some(c) = super::links(ctx).produced_by.get(r).copied().flatten() else { return false };
    let Some(cmd) = call_command(t, c) else { return false };
    let args: Vec<String> = shell::commands(&cmd)
        .iter()
        .filter_map(|x| {
            let inv = x.invocation()?;
            (inv.program == name).then(|| {
                inv.args.iter().filter(|w| !w.text.starts_with('-')).map(|w| w.text.clone()).collect::<Vec<_>>()
            })
        })
        .next()
        .unwrap_or_default();
    let agent = &t.steps[c].agent;
    let end = t.steps.len().min(c + 1 + RECOVERY_WINDOW);
    let first = checks(t, c);
    (c + 1..end)
        .filter(|&k| t.steps[k].kind == StepKind::ToolCall && t.steps[k].agent == *agent)
        .filter_map(|k| Some((k, call_command(t, k)?)))
        .find(|&(k, ref line)| {
            // The same check run again once the environment has what it missed (`PYTHONPATH=src
            // python repro.py` after `No module named 'hookrelay'`).
            if all_covered(&first, &checks(t, k)) {
                return true;
            }
            let words: Vec<String> =
                shell::commands(line).iter().flat_map(|x| x.words.iter().map(|w| w.text.clone())).collect();
            let named = words.iter().any(|w| w.rsplit(['/', ':']).any(|p| p == name) && *w != name)
                || words.first().is_some_and(|w| w != &name) && words.contains(&name);
            let repeated = !args.is_empty() && args.iter().all(|a| words.contains(a)) && !words.contains(&name);
            named || repeated
        })
        .and_then(|(k, _)| result_of(ctx, k))
        .is_some_and(|rk| !check_fails(ctx, rk) && super::shell_could_not_run(ctx, rk).is_none())
}

/// Whether shell call `c` runs, another way, a program that the output of the same agent's
/// previous call (within [`CORRECTION_WINDOW`] steps) found missing ([`super::missing_program`]:
/// `docker run … rhysd/actionlint` after `command not found: actionlint`; the program named as a
/// word of another command, or a part of one split at `/` and `:`), where the agent later tells
/// the reader it could not run that program ([`super::missing_program_reported`]). Whether that
/// attempt fails or not, it is the agent looking for the checker, not going on past an error or
/// a state change refused: the gap of the environment the agent owned up to.
pub(crate) fn missing_program_tried_again(ctx: &Context<'_>, c: usize) -> bool {
    let t = ctx.trajectory;
    if t.steps[c].kind != StepKind::ToolCall {
        return false;
    }
    let agent = &t.steps[c].agent;
    let Some(p) = (c.saturating_sub(CORRECTION_WINDOW)..c)
        .rev()
        .find(|&j| t.steps[j].kind == StepKind::ToolCall && t.steps[j].agent == *agent)
    else {
        return false;
    };
    let Some(rp) = result_of(ctx, p) else { return false };
    // The words every missing-program message has, before the pattern is run.
    let said = &t.steps[rp].content;
    if !(said.contains("not found") || said.contains("No module named") || said.contains("not recognized")) {
        return false;
    }
    let Some(name) = super::missing_program(ctx, rp) else { return false };
    if super::missing_program_reported(ctx, rp).is_none() {
        return false;
    }
    let Some(line) = call_command(t, c) else { return false };
    let words: Vec<String> =
        shell::commands(&line).iter().flat_map(|x| x.words.iter().map(|w| w.text.clone())).collect();
    words.iter().any(|w| w.rsplit(['/', ':']).any(|part| part == name) && *w != name)
        || words.first().is_some_and(|w| w != &name) && words.contains(&name)
}

/// Whether the agent recovered from the error of call `c` by another command:
/// [`check_recovered`], [`code_recovered`], the program its output found missing run another
/// way ([`missing_program_recovered`]), or the same command run again at once in a corrected
/// environment, with success ([`environment_corrected`]).
pub(crate) fn recovered_by_another_command(ctx: &Context<'_>, c: usize) -> bool {
    check_recovered(ctx, c)
        || code_recovered(ctx, c)
        || result_of(ctx, c).is_some_and(|r| missing_program_recovered(ctx, r))
        || environment_corrected(ctx, c)
            .and_then(|k| result_of(ctx, k))
            .is_some_and(|rk| !check_fails(ctx, rk) && super::missing_program(ctx, rk).is_none())
}

/// Commands that only set up the environment the next ones run in: the working folder and the
/// shell's variables.
const SETUP: [&str; 9] = ["cd", "pushd", "popd", "export", "source", ".", "set", "unset", "setenv"];

/// A command line read as its work and its setup: the work is, per simple command that runs a
/// program other than a [`SETUP`] one, that program and its arguments ([`Command::invocation`]:
/// assignments and `env` dropped); the setup is the text of every [`SETUP`] command and every
/// variable assignment (`DJANGO_SETTINGS_MODULE=app.settings`, `PYTHONPATH=src`).
fn work_and_setup(line: &str) -> (Vec<Vec<String>>, Vec<String>) {
    let (mut work, mut setup) = (Vec::new(), Vec::new());
    for c in shell::commands(line) {
        let Some(inv) = c.invocation() else {
            setup.push(c.text.clone());
            continue;
        };
        if SETUP.contains(&inv.program) {
            setup.push(c.text.clone());
            continue;
        }
        // The words before the program that assign (`A=1 python …`, `env A=1 …`).
        let before = c.words.len().saturating_sub(inv.args.len() + 1);
        let assigns = |w: &&shell::Word| {
            w.text
                .split_once('=')
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|x| x.is_ascii_alphanumeric() || x == '_'))
        };
        setup.extend(c.words[..before].iter().filter(assigns).map(|w| w.text.clone()));
        let mut run = vec![inv.program.to_string()];
        run.extend(inv.args.iter().map(|w| w.text.clone()));
        work.push(run);
    }
    (work, setup)
}

/// How many steps after a failed command [`environment_corrected`] looks for its rerun.
const CORRECTION_WINDOW: usize = 12;

/// The rerun of shell call `c`, whose output shows a failure ([`check_fails`]), in a corrected
/// environment: the same agent's next call (within [`CORRECTION_WINDOW`] steps, a call the user
/// refused passed over) runs the same work as `c` ([`work_and_setup`]: the same programs with the
/// same arguments) with another setup (a variable set, another working folder:
/// `DJANGO_SETTINGS_MODULE=ledgerly.settings python -c …` after `python -c …` failed with
/// "settings are not configured"), and its output is not the same failure (it passed, or it
/// fails on another error line). The first run failed on the environment, not on the code it
/// ran: the rerun is the check that counts. `None` otherwise.
pub(crate) fn environment_corrected(ctx: &Context<'_>, c: usize) -> Option<usize> {
    let t = ctx.trajectory;
    if t.steps[c].kind != StepKind::ToolCall {
        return None;
    }
    let r = result_of(ctx, c).filter(|&r| check_fails(ctx, r))?;
    let agent = &t.steps[c].agent;
    let end = t.steps.len().min(c + 1 + CORRECTION_WINDOW);
    let k = (c + 1..end)
        .find(|&k| t.steps[k].kind == StepKind::ToolCall && t.steps[k].agent == *agent && !refused_call(ctx, k))?;
    let (line, later) = (call_command(t, c)?, call_command(t, k)?);
    // The same line again is no correction ([`super::rerun_passes`] reads that); a corrected one
    // ends as the first did (the setup goes first: `cd app && X=1 pytest -q`), before anything
    // is parsed.
    let tail = |l: &str| l.trim_end().chars().rev().take(12).collect::<String>();
    if line.trim() == later.trim() || tail(&line) != tail(&later) {
        return None;
    }
    let (work, setup) = work_and_setup(&line);
    if work.is_empty() {
        return None;
    }
    let (again, other) = work_and_setup(&later);
    if again != work || other == setup {
        return None;
    }
    let rk = result_of(ctx, k)?;
    let same = check_fails(ctx, rk) && super::error_line(ctx, rk) == super::error_line(ctx, r);
    (!same).then_some(k)
}

/// The lines of code (trimmed, eight characters or more, no comment) of a code call's text.
fn code_lines(text: &str) -> Vec<&str> {
    text.lines().map(str::trim).filter(|l| l.len() >= 8 && !l.starts_with('#') && !l.starts_with("//")).collect()
}

/// Whether code call `c` (a call of a tool that runs code, not a shell: smolagents' Python
/// interpreter, a `run_python` tool), whose run failed ([`call_error`]: `AgentExecutionError`,
/// a traceback), was run again corrected: the same agent's last later call of the same tool
/// within [`RECOVERY_WINDOW`] steps that holds at least half of the failing lines (the lines of
/// `c`'s code its error quotes, else all of its lines) ran without error; or the name the error
/// reports missing ([`MISSING_NAME`]), written in the failing code, is gone from the agent's next
/// call of the same tool, which calls a function the failing lines call and ran without error; or
/// the read that failed on the environment was retried at once with a working variant
/// ([`read_retried`]). Code that crashed and was then fixed and run is part of the work, not the
/// run's error.
pub(crate) fn code_recovered(ctx: &Context<'_>, c: usize) -> bool {
    let t = ctx.trajectory;
    let s = &t.steps[c];
    if s.kind != StepKind::ToolCall || call_command(t, c).is_some() || edits(t, c) || call_error(ctx, c).is_none() {
        return false;
    }
    let Some(r) = result_of(ctx, c) else { return false };
    let lines = code_lines(&s.content);
    if lines.is_empty() {
        return false;
    }
    let error = &t.steps[r].content;
    let quoted: Vec<&str> = lines.iter().copied().filter(|l| error.contains(l)).collect();
    let anchor = if quoted.is_empty() { lines } else { quoted };
    let end = t.steps.len().min(c + 1 + RECOVERY_WINDOW);
    let last = (c + 1..end).rev().find(|&k| {
        let x = &t.steps[k];
        x.kind == StepKind::ToolCall && x.agent == s.agent && x.tool_name == s.tool_name && {
            let later = code_lines(&x.content);
            2 * anchor.iter().filter(|l| later.contains(l)).count() >= anchor.len()
        }
    });
    if last.is_some_and(|k| result_of(ctx, k).is_some() && call_error(ctx, k).is_none()) {
        return true;
    }
    if read_retried(ctx, c, &anchor, error) {
        return true;
    }
    // The name the error reports missing (`KeyError: 'order_date'`, `name 'x' is not defined`,
    // `has no attribute 'map'`), written in the failing code and gone from the agent's next call
    // of the same tool, which runs: the reference was corrected (the column was `created_at`).
    let names: Vec<&str> = MISSING_NAME
        .captures_iter(error)
        .filter_map(|m| m.get(1).or_else(|| m.get(2)).map(|n| n.as_str()))
        .filter(|n| super::contains_word(&s.content, n))
        .collect();
    if names.is_empty() {
        return false;
    }
    let next = (c + 1..end).find(|&k| {
        let x = &t.steps[k];
        x.kind == StepKind::ToolCall && x.agent == s.agent && x.tool_name == s.tool_name
    });
    // The next call redoes the failing computation: it calls a function the failing lines call
    // (`pd.to_datetime(`), not something else that happens to run.
    let called = |text: &str| -> Vec<String> {
        CALLED
            .captures_iter(text)
            .filter_map(|m| m.get(1).map(|n| n.as_str().to_string()))
            .filter(|n| n.len() >= 4 && n != "print")
            .collect()
    };
    let failing = called(&anchor.join("\n"));
    next.is_some_and(|k| {
        let later = &t.steps[k].content;
        result_of(ctx, k).is_some()
            && call_error(ctx, k).is_none()
            && !names.iter().any(|n| super::contains_word(later, n))
            && called(later).iter().any(|n| failing.contains(n))
    })
}

/// Whether the read that failed in code call `c` (its failing lines `anchor`, the error text
/// `error`) for the environment, not the code's logic, was retried at once with a working
/// variant: the error is an encoding error (`UnicodeDecodeError`, `codec can't decode`) or a
/// missing dependency (`ModuleNotFoundError`, `ImportError`, `No module named`, pandas'
/// `Missing optional dependency`); a failing line calls a read ([`READ_CALL`]: `pd.read_csv(`,
/// `open(`, `json.load(`, `np.loadtxt(`) on a first argument; and the same agent's next call of
/// the same tool (within [`RETRY_WINDOW`] steps) calls a read on the same first argument
/// (`pd.read_csv('data/customers.csv', encoding='latin-1')`, `pd.read_excel(p,
/// engine='calamine')`) and ran without error. The file was read the second time; what failed
/// was the environment's default, not the work.
fn read_retried(ctx: &Context<'_>, c: usize, anchor: &[&str], error: &str) -> bool {
    const ENVIRONMENT: [&str; 7] = [
        "UnicodeDecodeError",
        "UnicodeError",
        "codec can't decode",
        "ModuleNotFoundError",
        "ImportError",
        "No module named",
        "Missing optional dependency",
    ];
    if !ENVIRONMENT.iter().any(|w| error.contains(w)) {
        return false;
    }
    let reads = |text: &str| -> Vec<String> {
        READ_CALL.captures_iter(text).filter_map(|m| m.get(2).map(|a| a.as_str().trim().to_string())).collect()
    };
    let failing = reads(&anchor.join("\n"));
    if failing.is_empty() {
        return false;
    }
    let t = ctx.trajectory;
    let s = &t.steps[c];
    let end = t.steps.len().min(c + 1 + RETRY_WINDOW);
    let next = (c + 1..end).find(|&k| {
        let x = &t.steps[k];
        x.kind == StepKind::ToolCall && x.agent == s.agent && x.tool_name == s.tool_name
    });
    next.is_some_and(|k| {
        result_of(ctx, k).is_some()
            && call_error(ctx, k).is_none()
            && reads(&t.steps[k].content).iter().any(|a| failing.contains(a))
    })
}

/// How many steps after a failed read [`read_retried`] looks for the agent's next call.
const RETRY_WINDOW: usize = 12;

/// A call that reads a file or stream: a function whose name is `open` or starts or ends with
/// `read` or `load` (`read_csv`, `read_excel`, `load`, `loadtxt`, `read_text`), with its first
/// argument (up to the first `,` or `)`, a literal or a name) as group 2.
static READ_CALL: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"\b(open|read\w*|load\w*|\w+_read|\w+_load)\(\s*([^,()\s][^,()]*?)\s*[,)]").unwrap()
});

/// A function called in code: its name right before `(`.
static CALLED: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"([A-Za-z_][A-Za-z0-9_]*)\(").unwrap());

/// A name an error reports missing: `KeyError: 'x'`, `name 'x' is not defined`, `has no
/// attribute 'x'`, `index … with 'x'`, `column 'x'`, `no such column: x`.
static MISSING_NAME: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r#"(?:KeyError:\s*|NameError:\s*name\s+|has no attribute\s+|with\s+|column\s+|key\s+)['"]([A-Za-z_][A-Za-z0-9_]*)['"]|no such column:\s*([A-Za-z_][A-Za-z0-9_]*)"#,
    )
    .unwrap()
});

/// The weaker run of a reproduction: for shell call `rc`, which showed a failure, the first
/// thing every later run after step `from` (within [`RECOVERY_WINDOW`] steps) of the same
/// program and subcommand leaves out ([`Check::weakened_by`]: "without `-race`"), when there are
/// such runs and none of them covers `rc`'s checks.
pub(crate) fn weaker_reruns(t: &Trajectory, rc: usize, from: usize) -> Option<(usize, String)> {
    let first = checks(t, rc);
    if first.is_empty() {
        return None;
    }
    let end = t.steps.len().min(from + 1 + RECOVERY_WINDOW);
    let mut weaker = None;
    for k in from + 1..end {
        let later = checks(t, k);
        if later.is_empty() {
            continue;
        }
        if all_covered(&first, &later) {
            return None;
        }
        if weaker.is_none() {
            weaker = first
                .iter()
                .find_map(|a| later.iter().find_map(|b| a.weakened_by(b)).map(|w| (k, format!("`{}` {w}", a.label()))));
        }
    }
    weaker
}

/// Whether tool output `r` shows the failure of a check the task quotes as a command (a
/// `` `go test -race ./internal/bucket/...` `` in backticks that parses as a check,
/// [`checks`]), run as quoted: its call runs a check that covers the quoted one
/// ([`Check::covered_by`]: `-count=1` added, the same selection). Running the command the user
/// says shows the failure, and seeing it fail, is the reproduction (the caller asks that no edit
/// came before).
pub(crate) fn runs_quoted_command(ctx: &Context<'_>, r: usize) -> bool {
    static QUOTE: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"`([^`\n]{3,200})`").unwrap());
    let t = ctx.trajectory;
    if t.steps[r].kind != StepKind::ToolResult || !check_fails(ctx, r) {
        return false;
    }
    let Some(c) = super::links(ctx).produced_by.get(r).copied().flatten() else { return false };
    let ran = checks(t, c);
    if ran.is_empty() {
        return false;
    }
    QUOTE.captures_iter(&t.task).any(|q| {
        shell::commands(&q[1]).iter().filter_map(check_of).any(|quoted| ran.iter().any(|x| quoted.covered_by(x)))
    })
}

/// Whether the whole number `key`, stated at step `i`, is the total of the tests one earlier
/// tool output within [`RECOVERY_WINDOW`] steps reports passed: the sum of its `N passed` counts
/// (`cargo test`'s result line per test binary, pytest's and Jest's summaries), with two counts
/// or more that are not all zero; or the sum of the single counts of the latest two or more
/// outputs with such a count, counted back from step `i` ("19 tests" after runs of 11 and 8
/// passed). A coding agent that says "all 73 tests pass" after result lines of 58, 9, 2 and 4
/// passed states what the run showed.
pub(crate) fn passed_total(ctx: &Context<'_>, i: usize, key: &str) -> bool {
    static PASSED: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\b(\d+) passed\b").unwrap());
    let Ok(total) = key.parse::<u64>() else { return false };
    let t = ctx.trajectory;
    let outputs = || (i.saturating_sub(RECOVERY_WINDOW)..i).rev().filter(|&j| t.steps[j].kind == StepKind::ToolResult);
    let counts = |j: usize| -> Vec<u64> {
        PASSED.captures_iter(&t.steps[j].content).filter_map(|c| c[1].parse().ok()).collect()
    };
    if total == 0 {
        return false;
    }
    // One pass: one output's counts added up, or the agent's last test runs, one count each,
    // added up ("19 tests pass" after 11 and 8 passed in two runs): the latest two or more runs
    // in a row, counted back from the step.
    let (mut sum, mut runs, mut running) = (0, 0, true);
    for c in outputs().map(counts).filter(|c| !c.is_empty()) {
        if c.len() >= 2 && c.iter().sum::<u64>() == total {
            return true;
        }
        if running {
            if c.len() != 1 {
                running = false;
                continue;
            }
            sum += c[0];
            runs += 1;
            if sum == total && runs >= 2 {
                return true;
            }
            running = sum < total;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(line: &str) -> Check {
        shell::commands(line).iter().find_map(check_of).unwrap()
    }

    #[test]
    fn a_broader_run_covers_a_selected_one_and_a_dropped_mode_weakens_it() {
        let narrow = check("cargo test --test cli_status");
        assert!(narrow.covered_by(&check("cargo test")));
        assert!(!check("cargo test").covered_by(&narrow));
        let race = check("go test -race -count=1 ./internal/bucket/...");
        assert!(race.covered_by(&check("go test -race ./...")));
        let plain = check("go test -count=1 ./internal/bucket/...");
        assert!(!race.covered_by(&plain));
        assert_eq!(race.weakened_by(&plain).as_deref(), Some("without `-race`"));
        assert_eq!(
            check("pytest tests").weakened_by(&check("pytest tests -k timeout")).as_deref(),
            Some("on `-k=timeout` only")
        );
        assert!(check("pytest -q tests/test_a.py").covered_by(&check("pytest tests")));
        assert_eq!(check("cargo clippy --all-targets").weakened_by(&check("cargo test")), None);
    }

    #[test]
    fn tests_run_in_a_container_are_tests() {
        let c = &shell::commands("docker run --rm -v $PWD:/repo -w /repo app:dev python -m pytest -q tests")[0];
        assert!(runs_tests_anywhere(c));
        let c = &shell::commands("docker run --rm -v $PWD:/repo rhysd/actionlint:latest -color")[0];
        assert!(!runs_tests_anywhere(c));
    }

    #[test]
    fn test_files_are_told_by_folder_and_name() {
        for p in
            ["tests/cli_status.rs", "src/lib/slug.test.ts", "pkg/bucket_test.go", "test_money.py", "spec/a_spec.rb"]
        {
            assert!(is_test_path(p), "{p}");
        }
        for p in ["src/cli.rs", "Cargo.toml", "internal/bucket/bucket.go", "src/contest.py"] {
            assert!(!is_test_path(p), "{p}");
        }
    }
}
