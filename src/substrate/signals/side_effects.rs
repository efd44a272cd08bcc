//! A command with side effects wider than the task (docs/METHODS.md, "Coding-agent sessions"): a
//! package manager's command that re-resolves the dependencies and upgrades many packages the
//! task never named, on a task that asks for a narrow change (a hotfix, "keep the change small",
//! "don't upgrade anything").
//!
//! The effect is read from the outputs, in the package managers' own words: poetry's `Updating
//! name (1.0 -> 2.0)` (and `Downgrading`), cargo's `Updating name v1.0 -> v2.0`, uv's `Updated
//! name v1.0 -> v2.0`, `go get`'s `go: upgraded name v1.0 => v2.0`, Composer's `Upgrading name
//! (v1.0 => v2.0)`, Bundler's `Installing name 2.0 (was 1.0)`, the `- name 1.0` / `+ name 2.0`
//! pairs of pnpm and uv, pip's `Found existing installation: name 1.0` beside `Successfully
//! installed name-2.0`, npm's `changed N packages`. It is attributed to the command that caused
//! it: the command that printed it, or, when that command only installs what a lock file says
//! (`poetry install`, `npm ci`, `uv sync`), the same package manager's latest command before it
//! that re-resolved the lock (`poetry lock`, `npm update`, `cargo update`…).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use super::shell::{self, Command};
use super::{Context, actions, call_command, finding, result_of};
use crate::diagnosis::{Finding, Part, Prose, Signal};
use crate::model::{StepKind, Trajectory};

/// How many steps before the output the command that re-resolved the lock is looked for.
const CAUSE_WINDOW: usize = 40;

/// How many packages the task did not name must change version for the effect to be wider than
/// a narrow task.
const MANY: usize = 3;

/// The weight of the finding: a broken instruction with a lasting effect, as a forbidden change.
const WEIGHT: f32 = super::weights::FORBIDDEN_CHANGE;

/// The package managers' family of a program: `pip`, `pip3`, `pip-compile` and `pip-sync` are
/// one (`pip`), `bundle`/`bundler` one; `None` for a program that manages no packages.
fn family(program: &str) -> Option<&'static str> {
    Some(match program {
        "poetry" => "poetry",
        "uv" => "uv",
        "pdm" => "pdm",
        "pipenv" => "pipenv",
        "pip" | "pip3" | "pip-compile" | "pip-sync" => "pip",
        "npm" => "npm",
        "pnpm" => "pnpm",
        "yarn" => "yarn",
        "cargo" => "cargo",
        "go" => "go",
        "bundle" | "bundler" => "bundle",
        "composer" => "composer",
        _ => return None,
    })
}

/// Whether a command line installs dependencies: one of its simple commands is a package
/// manager's `install`, `i`, `ci`, `add` or `sync` ([`family`]: `pip install -e '.[dev]'`,
/// `npm ci`, `poetry install`, `cargo add`), `python -m pip install`, or a system package
/// manager's install (`apt-get`, `apt`, `apk`, `dnf`, `yum`, `brew`). Installing prepares the
/// environment: it checks no change to the code, and a check after an edit is the next command
/// that runs something.
pub(crate) fn installs_dependencies(line: &str) -> bool {
    super::shell::commands(line).iter().any(|c| {
        let Some(inv) = c.invocation() else { return false };
        let words: Vec<&str> = inv.args.iter().map(|w| w.text.as_str()).collect();
        let sub = first_word(c).unwrap_or_default();
        match inv.program {
            "python" | "python3" | "py" => words.windows(3).any(|w| w == ["-m", "pip", "install"]),
            "apt-get" | "apt" | "apk" | "dnf" | "yum" | "brew" => matches!(sub.as_str(), "install" | "add"),
            p if family(p).is_some() => {
                matches!(sub.as_str(), "install" | "i" | "ci" | "add" | "sync")
                    || p == "uv" && sub == "pip" && words.contains(&"install")
            }
            _ => false,
        }
    })
}

/// The first word of a command's arguments that is no option.
fn first_word(c: &Command) -> Option<String> {
    let inv = c.invocation()?;
    inv.args.iter().map(|w| w.text.as_str()).find(|w| !w.starts_with('-')).map(str::to_string)
}

/// Whether one simple command re-resolves the dependencies, choosing versions anew (what a lock
/// records may change): `lock`, `update`, `upgrade`, `up`, `add`, `relock` of poetry, uv, pdm,
/// pipenv, npm, pnpm, yarn, Bundler and Composer (`require` too), `cargo update` and
/// `generate-lockfile`, `go get` and `go mod tidy`, `pip-compile` and `uv pip compile`, and an
/// install that names packages (`npm install left-pad`, `pip install -U x`). The family
/// ([`family`]) when it does.
fn resolves(c: &Command) -> Option<&'static str> {
    let inv = c.invocation()?;
    let fam = family(inv.program)?;
    let words: Vec<&str> = inv.args.iter().map(|w| w.text.as_str()).collect();
    let sub = first_word(c).unwrap_or_default();
    let names_packages = words.iter().filter(|w| !w.starts_with('-')).count() > 1;
    let yes = match inv.program {
        "pip-compile" => true,
        "pip" | "pip3" => sub == "install" && (words.contains(&"-U") || words.contains(&"--upgrade")),
        "cargo" => matches!(sub.as_str(), "update" | "generate-lockfile"),
        "go" => sub == "get" || sub == "mod" && words.contains(&"tidy"),
        "composer" => matches!(sub.as_str(), "update" | "upgrade" | "require"),
        "uv" => matches!(sub.as_str(), "lock" | "add") || sub == "pip" && words.contains(&"compile"),
        _ => {
            matches!(sub.as_str(), "lock" | "update" | "upgrade" | "up" | "add" | "relock")
                || matches!(sub.as_str(), "install" | "i") && names_packages
        }
    };
    yes.then_some(fam)
}

/// The packages an output shows changing version, each once with its old and new version, in
/// the order written: the package managers' lines of the module's documentation; a version
/// written the same on both sides (poetry's `(1.0.1 -> 1.0.1)`) is no change.
fn upgraded(text: &str) -> Vec<(String, String, String)> {
    static ARROW: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?im)^\s*(?:[-*•]\s+)?(?:go:\s+)?(?:updating|updated|upgrading|upgraded|downgrading|downgraded)\s+([@\w./-]+)\s+\(?v?(\d[\w.+-]*)\s*(?:->|=>|→)\s*v?(\d[\w.+-]*)\)?",
        )
        .unwrap()
    });
    static WAS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?m)^\s*Installing\s+([\w.-]+)\s+(\d[\w.]*)\s+\(was\s+(\d[\w.]*)\)").unwrap());
    static PAIR: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?m)^\s*([-+])\s+(@?[\w./-]+?)(?:==|\s+v?)(\d[\w.+-]*)\s*$").unwrap());
    static EXISTING: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?m)Found existing installation:\s+([\w.-]+)\s+(\d[\w.+-]*)").unwrap());
    static INSTALLED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?m)^Successfully installed\s+(.+)$").unwrap());
    let mut out: Vec<(String, String, String)> = Vec::new();
    let key = |name: &str| name.to_ascii_lowercase().replace('_', "-");
    let mut push = |name: &str, from: &str, to: &str| {
        if from != to && !out.iter().any(|(n, _, _)| key(n) == key(name)) {
            out.push((name.to_string(), from.to_string(), to.to_string()));
        }
    };
    for c in ARROW.captures_iter(text) {
        push(&c[1], &c[2], &c[3]);
    }
    for c in WAS.captures_iter(text) {
        push(&c[1], &c[3], &c[2]);
    }
    let (mut gone, mut came): (BTreeMap<String, String>, Vec<(String, String)>) = (BTreeMap::new(), Vec::new());
    for c in PAIR.captures_iter(text) {
        if &c[1] == "-" {
            gone.insert(c[2].to_string(), c[3].to_string());
        } else {
            came.push((c[2].to_string(), c[3].to_string()));
        }
    }
    for (name, to) in came {
        if let Some(from) = gone.get(&name) {
            push(&name, from, &to);
        }
    }
    let existing: BTreeMap<String, String> =
        EXISTING.captures_iter(text).map(|c| (key(&c[1]), c[2].to_string())).collect();
    for c in INSTALLED.captures_iter(text) {
        for w in c[1].split_whitespace() {
            let Some(k) = w
                .char_indices()
                .rev()
                .find(|&(k, ch)| ch == '-' && w[k + 1..].starts_with(|d: char| d.is_ascii_digit()))
                .map(|(k, _)| k)
            else {
                continue;
            };
            if let Some(from) = existing.get(&key(&w[..k])) {
                push(&w[..k], from, &w[k + 1..]);
            }
        }
    }
    out
}

/// npm's and yarn's count of packages that changed version (`changed 31 packages`), 0 without.
fn changed_count(text: &str) -> usize {
    static CHANGED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\bchanged (\d+) packages?\b").unwrap());
    CHANGED.captures_iter(text).filter_map(|c| c[1].parse::<usize>().ok()).max().unwrap_or(0)
}

/// Words of a request that keep it narrow: a hotfix, "keep the change small" (minimal, tight,
/// focused), a small or minimal fix, change or diff, a release or code freeze, "don't upgrade"
/// (bump, update dependencies).
static NARROW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(hot-?fix(?:es)?|keep\s+(?:the|this|it|your|changes?)\s*(?:\w+\s+)?(?:small|minimal|tight|focused|narrow|minimum)|(?:small|minimal|minimum|tiny|surgical)\s+(?:fix|change|diff|patch)|(?:release|code)\s+freeze|(?:don'?t|do\s+not|no|without|never)\s+(?:\w+\s+)?(?:upgrad\w*|bump\w*|updat\w+\s+(?:any\s+|other\s+)?(?:dependenc\w+|deps|packages)))",
    )
    .unwrap()
});

/// Words of a request that ask for versions to move: upgrade, bump, "update the dependencies",
/// "the latest version"; not after a negation ("don't upgrade").
fn asks_upgrade(text: &str) -> bool {
    static UP: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(upgrad\w*|bump\w*|updat\w+\s+(?:all\s+|the\s+|our\s+)?(?:dependenc\w+|deps|packages|requirements)|latest\s+versions?)\b").unwrap()
    });
    static NEG: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)\b(don'?t|do\s+not|no|not|without|never|avoid)\b[^.;!?]{0,20}$").unwrap());
    UP.find_iter(text).any(|m| !NEG.is_match(&text[..m.start()]))
}

/// The words of the user's turns before step `i` (the task first) that keep the request narrow
/// ([`NARROW`]), when none of those turns asks for an upgrade ([`asks_upgrade`]); `None` when the
/// request is not narrow.
fn narrow_request(t: &Trajectory, i: usize) -> Option<String> {
    let turns: Vec<&str> = std::iter::once(t.task.as_str())
        .chain(t.steps[..i].iter().filter(|s| actions::is_human(s)).map(|s| s.content.as_str()))
        .collect();
    if turns.iter().any(|x| asks_upgrade(x)) {
        return None;
    }
    turns.iter().find_map(|x| NARROW.find(x)).map(|m| m.as_str().to_string())
}

/// Whether a package's name (or its name with `-` for `_`) is a word of the text.
fn named_in(text: &str, name: &str) -> bool {
    let low = text.to_ascii_lowercase().replace('_', "-");
    let name = name.to_ascii_lowercase().replace('_', "-");
    let name = name.as_str();
    low.match_indices(name).any(|(k, _)| {
        let before = low[..k].chars().next_back();
        let after = low[k + name.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '-')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '-')
    })
}

/// The step whose command caused the changes output `r` shows: its own call when one of its
/// commands re-resolves ([`resolves`]), else the same agent's latest shell call within
/// [`CAUSE_WINDOW`] steps before it with a command of the same package manager that does (the
/// lock the install followed), else its own call. With the command's text.
fn cause(t: &Trajectory, call: usize) -> Option<(usize, String)> {
    let cmd = call_command(t, call)?;
    let commands = shell::commands(&cmd);
    let fams: Vec<&str> = commands.iter().filter_map(|c| c.invocation().and_then(|i| family(i.program))).collect();
    if fams.is_empty() {
        return None;
    }
    if let Some(c) = commands.iter().find(|c| resolves(c).is_some()) {
        return Some((call, c.text.clone()));
    }
    let agent = &t.steps[call].agent;
    for j in (call.saturating_sub(CAUSE_WINDOW)..call).rev() {
        if t.steps[j].agent != *agent || t.steps[j].kind != StepKind::ToolCall {
            continue;
        }
        let Some(line) = call_command(t, j) else { continue };
        if let Some(c) = shell::commands(&line).into_iter().find(|c| resolves(c).is_some_and(|f| fams.contains(&f))) {
            return Some((j, c.text.clone()));
        }
    }
    let own = commands.iter().find(|c| c.invocation().and_then(|i| family(i.program)).is_some())?;
    Some((call, own.text.clone()))
}

/// Step `i`, a shell call, caused ([`cause`]) changes of version that a later output shows: the
/// first output of a package manager's command, at or after `i` and within [`CAUSE_WINDOW`]
/// steps, whose cause is `i`, lists [`MANY`] or more packages changing version ([`upgraded`];
/// npm's count of changed packages when it lists none) that no user turn names, on a request
/// that keeps the change narrow ([`narrow_request`]): the command did more than the task asked,
/// and the code then runs on other versions than it was written and tested for.
pub(super) fn wider_than_task(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if t.steps[i].kind != StepKind::ToolCall || super::refused_call(ctx, i) {
        return;
    }
    let Some(cmd) = call_command(t, i) else { return };
    if !shell::commands(&cmd).iter().any(|c| resolves(c).is_some()) {
        return;
    }
    let Some(words) = narrow_request(t, i) else { return };
    let users: Vec<&str> = std::iter::once(t.task.as_str())
        .chain(t.steps[..i].iter().filter(|s| actions::is_human(s)).map(|s| s.content.as_str()))
        .collect();
    let end = t.steps.len().min(i + 1 + CAUSE_WINDOW);
    for c in (i..end).filter(|&c| t.steps[c].kind == StepKind::ToolCall && t.steps[c].agent == t.steps[i].agent) {
        let Some((by, text)) = cause(t, c) else { continue };
        let Some(r) = result_of(ctx, c) else { continue };
        let output = &t.steps[r].content;
        let changes: Vec<(String, String, String)> =
            upgraded(output).into_iter().filter(|(n, _, _)| !users.iter().any(|u| named_in(u, n))).collect();
        let count = if changes.is_empty() { changed_count(output) } else { changes.len() };
        if count == 0 {
            continue;
        }
        if by != i || count < MANY {
            return;
        }
        // The widest jumps first: a major version, then a minor one, then the rest, as written.
        let jump = |a: &str, b: &str| {
            let parts = |v: &str| v.split('.').map(str::to_string).collect::<Vec<_>>();
            let (a, b) = (parts(a), parts(b));
            (0..2).find(|&k| a.get(k) != b.get(k)).unwrap_or(2)
        };
        let mut changes = changes;
        changes.sort_by_key(|(_, a, b)| jump(a, b));
        let examples: Vec<String> = changes.iter().take(3).map(|(n, a, b)| format!("{n} {a} → {b}")).collect();
        let shown = if examples.is_empty() { String::new() } else { format!(": {}", examples.join(", ")) };
        let mut parts = vec![Part::from(format!(
            "`{}` changes the versions of {count} packages the task never named, although the user wrote \"{}\" (",
            crate::text::clip(&text, 40),
            crate::text::clip(&words, 30)
        ))];
        if r == i + 1 {
            parts.push(Part::from("its output"));
        } else {
            parts.extend([Part::from("the output at step "), Part::Step(r)]);
        }
        parts.push(Part::from(format!("{shown})")));
        out.push(finding(Signal::PriorDeviation, WEIGHT, Prose::new(parts)));
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        upgraded(text).into_iter().map(|(n, a, b)| format!("{n} {a}>{b}")).collect()
    }

    #[test]
    fn upgrades_are_read_in_each_package_managers_words() {
        // poetry (an unchanged version is no change), cargo, uv, go, Composer, Bundler.
        assert_eq!(
            names(
                "  - Updating idna (3.6 -> 3.10)\n  - Updating asyncpg (0.29.0 -> 0.29.0)\n  - Downgrading h11 (0.16.0 -> 0.14.0)"
            ),
            ["idna 3.6>3.10", "h11 0.16.0>0.14.0"]
        );
        assert_eq!(
            names("    Updating serde v1.0.195 -> v1.0.210\n     Locking 3 packages"),
            ["serde 1.0.195>1.0.210"]
        );
        assert_eq!(names("Updated anyio v4.3.0 -> v4.8.0"), ["anyio 4.3.0>4.8.0"]);
        assert_eq!(names("go: upgraded golang.org/x/net v0.17.0 => v0.19.0"), ["golang.org/x/net 0.17.0>0.19.0"]);
        assert_eq!(names("  - Upgrading symfony/console (v6.3.0 => v6.4.1)"), ["symfony/console 6.3.0>6.4.1"]);
        assert_eq!(names("Installing rack 3.0.9 (was 2.2.8)"), ["rack 2.2.8>3.0.9"]);
        // pnpm's and uv's removed and added pairs; pip's existing and installed versions.
        assert_eq!(names("dependencies:\n- react 17.0.2\n+ react 18.2.0\n+ zod 3.22.4"), ["react 17.0.2>18.2.0"]);
        assert_eq!(names(" - idna==3.6\n + idna==3.10\n + rich==13.7.0"), ["idna 3.6>3.10"]);
        assert_eq!(
            names(
                "  Attempting uninstall: urllib3\n    Found existing installation: urllib3 1.26.18\nSuccessfully installed requests-2.32.3 urllib3-2.2.2"
            ),
            ["urllib3 1.26.18>2.2.2"]
        );
        assert_eq!(changed_count("added 2 packages, changed 31 packages, and audited 400 packages in 9s"), 31);
        // poetry's own banner and a download line are no upgrade.
        assert!(upgraded("Updating dependencies\nResolving dependencies...\nWriting lock file").is_empty());
    }

    #[test]
    fn a_request_is_narrow_unless_it_asks_for_an_upgrade() {
        assert!(NARROW.is_match("This is a hotfix branch going out today: keep the change small."));
        assert!(NARROW.is_match("Please don't upgrade anything else."));
        assert!(NARROW.is_match("We're in a release freeze."));
        assert!(!NARROW.is_match("Add a retry to the registry client."));
        assert!(asks_upgrade("Hotfix: bump requests to 2.32.3 for the CVE."));
        assert!(asks_upgrade("Update the dependencies to their latest versions."));
        assert!(!asks_upgrade("Please don't upgrade anything else."));
        assert!(!asks_upgrade("CI checks that poetry.lock is consistent, so update the lock too."));
    }

    #[test]
    fn installs_of_dependencies_are_told_from_checks() {
        for line in [
            "pip install -e '.[dev]' -q",
            "python -m pip install -r requirements.txt",
            "npm ci && echo ok",
            "poetry install --no-root",
            "uv pip install pytest",
            "sudo apt-get install -y libpq-dev",
            "cargo add serde",
        ] {
            assert!(installs_dependencies(line), "{line}");
        }
        for line in ["pytest -q", "npm test", "cargo test", "python -m pytest", "go test ./...", "pip list"] {
            assert!(!installs_dependencies(line), "{line}");
        }
    }

    #[test]
    fn resolvers_are_told_from_installs_that_follow_a_lock() {
        let one = |line: &str| resolves(&shell::commands(line)[0]);
        assert_eq!(one("poetry lock"), Some("poetry"));
        assert_eq!(one("cargo update"), Some("cargo"));
        assert_eq!(one("npm install left-pad"), Some("npm"));
        assert_eq!(one("go get -u ./..."), Some("go"));
        assert_eq!(one("pip install -U requests"), Some("pip"));
        assert_eq!(one("poetry install --sync"), None);
        assert_eq!(one("npm ci"), None);
        assert_eq!(one("npm install"), None);
        assert_eq!(one("cargo test"), None);
    }
}
