//! What a coding agent's reproduction of the reported failure ran and printed, read against the
//! fix and the claim after it (docs/METHODS.md, "Coding-agent sessions"): a fix written into
//! another copy of the module the reproduction ran, and a claim that the output now matches
//! when the output printed after the last edit still shows a value the task gives as wrong.
//!
//! Every rule reads the calls, their command lines ([`super::shell`]), their outputs and the
//! task's text only: no tool, file or benchmark is named.

use std::sync::LazyLock;

use regex::Regex;

use super::coding::{edited_files, edits_code, file_name, made_by_agent};
use super::recovery::is_test_path;
use super::shell;
use super::{Context, call_command, check_fails, contains_word, edits, finding, only_reads, result_of, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::{StepKind, Trajectory};
use crate::prose;

/// How many steps after the reproduction its fix, its rerun and the agent's report are looked
/// for.
const WINDOW: usize = 200;

/// How many steps after an output the agent's words about it are looked for.
const WORDS_WINDOW: usize = 3;

/// A module a command runs: `path` without its extension (`parcelpost/pricing/tariffs`), and
/// how the command names it (`parcelpost.pricing.tariffs`).
#[derive(Debug, Clone, PartialEq)]
struct Module {
    path: String,
    shown: String,
}

impl Module {
    /// Whether the file at `file` (an edited path) is this module: its path without the extension
    /// (and without a package's `__init__` or `index`) is the module's path or ends with it.
    fn is(&self, file: &str) -> bool {
        let bare = module_path(file);
        bare == self.path || bare.ends_with(&format!("/{}", self.path))
    }

    /// Whether the file at `file` has this module's name (its last component) in another place.
    fn copied_by(&self, file: &str) -> bool {
        let name = self.path.rsplit('/').next().unwrap_or(&self.path);
        let bare = module_path(file);
        name.len() >= 3 && bare.rsplit('/').next() == Some(name) && !self.is(file)
    }
}

/// `file` without its extension, a package's `__init__` or `index`, and a leading `./`.
fn module_path(file: &str) -> String {
    let file = file.trim_start_matches("./").replace('\\', "/");
    let bare = match file.rsplit_once('.') {
        Some((stem, ext)) if !ext.contains('/') && !stem.is_empty() => stem.to_string(),
        _ => file,
    };
    bare.strip_suffix("/__init__").or_else(|| bare.strip_suffix("/index")).map_or(bare.clone(), str::to_string)
}

/// Programs that run a script given by its path.
const INTERPRETERS: [&str; 11] =
    ["python", "python3", "node", "ruby", "deno", "bun", "ts-node", "tsx", "php", "perl", "pypy3"];

/// The modules `text` imports: Python's `from a.b import x`, `import a.b` and `-m a.b` (a dotted
/// name of two parts or more: `a/b`), and JavaScript's `require('./src/fmt')`, `import … from
/// './src/fmt'` (a path with a `/`: `src/fmt`).
fn imports(text: &str) -> Vec<Module> {
    static PY: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?:\bfrom|\bimport|(?:^|\s)-m)\s+([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\b").unwrap());
    static JS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(?:\brequire\(|\bfrom\s+|\bimport\()\s*['"]((?:\.{1,2}/)*[\w@.-]+(?:/[\w@.-]+)+)['"]"#).unwrap()
    });
    let mut out: Vec<Module> = Vec::new();
    for c in PY.captures_iter(text) {
        out.push(Module { path: c[1].replace('.', "/"), shown: c[1].to_string() });
    }
    for c in JS.captures_iter(text) {
        let raw = c[1].trim_start_matches("./").trim_start_matches("../");
        out.push(Module { path: module_path(raw), shown: c[1].to_string() });
    }
    out.dedup();
    out
}

/// The modules shell call `c` runs: those its command line imports ([`imports`]), the scripts it
/// runs by their path through an interpreter ([`INTERPRETERS`]), and, for a script the agent
/// wrote itself ([`made_by_agent`]: `python reproduce.py`), the modules that script imports, read
/// from the call that wrote it (the script itself is the agent's scratch, not the code).
fn modules_run(t: &Trajectory, c: usize) -> Vec<Module> {
    let Some(line) = call_command(t, c) else { return Vec::new() };
    let mut out = imports(&line);
    for x in shell::commands(&line) {
        let Some(inv) = x.invocation() else { continue };
        if !INTERPRETERS.contains(&inv.program) {
            continue;
        }
        let Some(script) = inv.args.iter().map(|w| w.text.as_str()).find(|w| !w.starts_with('-')) else { continue };
        if !script.contains('.') || script.contains(['(', ' ', ';']) {
            continue;
        }
        if made_by_agent(t, script, c) {
            let name = file_name(script);
            let agent = &t.steps[c].agent;
            if let Some(j) = (0..c).rev().find(|&j| {
                t.steps[j].kind == StepKind::ToolCall && t.steps[j].agent == *agent && t.steps[j].content.contains(name)
            }) {
                out.extend(imports(&t.steps[j].content));
            }
        } else {
            out.push(Module { path: module_path(script), shown: script.to_string() });
        }
    }
    out.dedup();
    out
}

/// Whether the agent says, in its own words right after output `r` (before its next call, within
/// [`WORDS_WINDOW`] steps), that it reproduced or confirmed the failure ("Reproduced: …",
/// "Confirmed: …"), not that it could not.
fn says_reproduced(t: &Trajectory, r: usize) -> bool {
    static SAID: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)\b(reproduced|reproduces|confirmed|confirms)\b").unwrap());
    static NOT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(not|n't|cannot|unable to|fail(?:ed)? to|could ?not)\s+(?:\w+\s+)?(reproduce|confirm)")
            .unwrap()
    });
    let agent = &t.steps[r].agent;
    (r + 1..t.steps.len().min(r + 1 + WORDS_WINDOW)).take_while(|&m| t.steps[m].kind != StepKind::ToolCall).any(|m| {
        let s = &t.steps[m];
        s.agent == *agent
            && matches!(s.kind, StepKind::Thought | StepKind::Message)
            && SAID.is_match(&s.content)
            && !NOT.is_match(&s.content)
    })
}

/// The reproduction before the run's first edit of its code ([`edits_code`]) at `e`: the last
/// shell call of `agent` before `e` that does more than read files ([`only_reads`]) and whose
/// output reproduces the failure the task reports ([`super::reproduces_reported_failure`]) or
/// the agent says it does ([`says_reproduced`]), with that output.
fn reproduction(ctx: &Context<'_>, e: usize, agent: &str) -> Option<(usize, usize)> {
    let t = ctx.trajectory;
    (e.saturating_sub(WINDOW)..e).rev().find_map(|c| {
        let s = &t.steps[c];
        if s.kind != StepKind::ToolCall || s.agent != agent || call_command(t, c).is_none() || only_reads(t, c) {
            return None;
        }
        let r = result_of(ctx, c)?;
        (super::reproduces_reported_failure(ctx, r) || says_reproduced(t, r)).then_some((c, r))
    })
}

/// Step `e`, the run's first edit of its code ([`edits_code`]), when it edits a file named as a
/// module the reproduction of the reported failure ran ([`reproduction`], [`modules_run`]: the
/// module a `python -c "from … import …"` imports, the script it runs, the modules a scratch
/// reproduction script imports) in another place (`third_party/carrier_sdk/tariffs.py` for
/// `parcelpost.pricing.tariffs`), no edit of the agent after the reproduction changes that
/// module, the reproduction is not run again after the edit (no later call runs the same
/// module or the same command line), and the agent then reports: the fix went into a copy the
/// failing code does not run, and whatever check passes after it does not run the code the
/// reproduction showed failing.
pub(super) fn copy_of_reproduced_module(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if t.steps[e].kind != StepKind::ToolCall || !edits_code(t, e) || (0..e).any(|j| edits_code(t, j)) {
        return;
    }
    let agent = &t.steps[e].agent;
    let Some((rc, r)) = reproduction(ctx, e, agent) else { return };
    let modules = modules_run(t, rc);
    let files = edited_files(t, e);
    let Some((copy, module)) = files
        .iter()
        .filter(|f| !is_test_path(f))
        .find_map(|f| modules.iter().find(|m| m.copied_by(f)).map(|m| (f.clone(), m.clone())))
    else {
        return;
    };
    let end = t.steps.len().min(rc + 1 + WINDOW);
    let mine = |k: usize| t.steps[k].kind == StepKind::ToolCall && t.steps[k].agent == *agent;
    if (rc + 1..end).any(|k| mine(k) && edits(t, k) && edited_files(t, k).iter().any(|f| module.is(f))) {
        return;
    }
    let line = call_command(t, rc).unwrap_or_default();
    let rerun = |k: usize| {
        call_command(t, k).is_some_and(|cmd| cmd.trim() == line.trim())
            || modules_run(t, k).iter().any(|m| m.path == module.path)
    };
    if (e + 1..end).any(|k| mine(k) && rerun(k)) {
        return;
    }
    if !(e + 1..end).any(|k| t.steps[k].agent == *agent && t.steps[k].kind == StepKind::Message) {
        return;
    }
    // The last check after the edit that passed: no evidence about the reproduced failure.
    let passed = (e + 1..end)
        .rev()
        .filter(|&k| mine(k) && !edits(t, k) && call_command(t, k).is_some() && !only_reads(t, k))
        .filter_map(|k| result_of(ctx, k))
        .find(|&rk| !check_fails(ctx, rk));
    let tail = |p: &str| {
        let parts: Vec<&str> = p.trim_end_matches('/').split('/').filter(|x| !x.is_empty()).collect();
        parts[parts.len().saturating_sub(3)..].join("/")
    };
    let mut text = prose![
        format!("edits {}, not `{}` that the reproduction (step ", tail(&copy), crate::text::clip(&module.shown, 40)),
        Part::Step(r),
        ") ran, which is never edited nor run again"
    ];
    if let Some(k) = passed {
        text = text.with(prose![": the check passing at step ", Part::Step(k), " does not show it fixed"]);
    }
    out.push(finding(Signal::FailedAction, weights::FAILED_ACTION, text));
}

/// An output the task states for an input: "`label(5400)` … expected `1 h 30 min`".
#[derive(Debug, Clone, PartialEq)]
struct Expectation {
    /// The input: the first argument of the call the task shows (`5400` for `label(5_400)`,
    /// digits' `_` and `,` separators dropped), at least two characters.
    input: String,
    /// The value the task expects for it, as quoted.
    expected: String,
    /// The value the task gives as the wrong output, quoted on the same line before the
    /// expectation (`'2 h'  # expected '1 h 30 min'`), if any.
    wrong: Option<String>,
}

/// The outputs the task states for given inputs ([`Expectation`]): a line that says "expected",
/// "should be", "should print", "should return", "must be" (and the like) followed by a quoted
/// value (`'…'`, `"…"` or in backticks), for the call on that line before those words or, when
/// it has none, on the line before (a `>>> f(x)` prompt and its output under it).
fn expectations(task: &str) -> Vec<Expectation> {
    static SAYS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r#"(?i)\b(?:expected|expect|should (?:be|print|return|give|show|output|read)|must (?:be|print|return|give|show|output|read))\b[:\s]*(?:'([^'\n]+)'|"([^"\n]+)"|`([^`\n]+)`)"#,
        )
        .unwrap()
    });
    static CALL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b[A-Za-z_][\w.]*\(([^()\n]*)\)").unwrap());
    static QUOTED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"'([^'\n]+)'|"([^"\n]+)"|`([^`\n]+)`"#).unwrap());
    let lines: Vec<&str> = task.lines().collect();
    let mut out = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        for m in SAYS.captures_iter(line) {
            let whole = m.get(0).map_or(0..0, |x| x.range());
            let expected = m.get(1).or(m.get(2)).or(m.get(3)).map_or("", |x| x.as_str()).trim().to_string();
            let before = &line[..whole.start];
            let previous = lines[..n].iter().rev().find(|l| !l.trim().is_empty()).copied().unwrap_or("");
            let call = CALL.captures_iter(before).last().or_else(|| CALL.captures_iter(previous).last());
            let Some(call) = call else { continue };
            let first = call[1].split(',').next().unwrap_or("").trim().trim_matches(['\'', '"']);
            let input = normalise_digits(first);
            // The wrong value: quoted after the call on this line, before the expectation.
            let after_call =
                if CALL.is_match(before) { CALL.find_iter(before).last().map_or(0, |c| c.end()) } else { 0 };
            let wrong = QUOTED
                .captures_iter(&before[after_call..])
                .last()
                .and_then(|q| q.get(1).or(q.get(2)).or(q.get(3)))
                .map(|q| q.as_str().trim().to_string())
                .filter(|w| *w != expected && !w.is_empty());
            if input.chars().count() >= 2 && !expected.is_empty() {
                out.push(Expectation { input, expected, wrong });
            }
        }
    }
    out
}

/// `text` with the `_` and `,` between digits dropped (`1_000_000` and `1,000,000` are
/// `1000000`).
fn normalise_digits(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    chars
        .iter()
        .enumerate()
        .filter(|&(k, &c)| {
            !(matches!(c, '_' | ',')
                && k > 0
                && chars[k - 1].is_ascii_digit()
                && chars.get(k + 1).is_some_and(char::is_ascii_digit))
        })
        .map(|(_, &c)| c)
        .collect()
}

/// The line of output `text` that shows, for `x`'s input, something other than the value the
/// task expects: a line naming the input as a word, without the expected value, that shows the
/// value the task gives as wrong or, when the task gives none, an amount with a unit (`1.0 MiB`)
/// where the expected value is one too.
fn contradicting_line<'a>(text: &'a str, x: &Expectation) -> Option<&'a str> {
    static AMOUNT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^-?\d[\d.,]*\s*[A-Za-z%]+$").unwrap());
    static AMOUNT_IN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"-?\d[\d.,]*\s*[A-Za-z%]+\b").unwrap());
    text.lines().find(|line| {
        let normal = normalise_digits(line);
        if !contains_word(&normal, &x.input) || normal.contains(&x.expected) {
            return false;
        }
        match &x.wrong {
            Some(w) => normal.contains(w.as_str()),
            None => {
                AMOUNT.is_match(&x.expected)
                    && AMOUNT_IN.find_iter(&normal.replacen(&x.input, "", 1)).any(|m| m.as_str() != x.expected)
            }
        }
    })
}

/// Step `i`, an agent's words that the output now matches or works ("The output now matches the
/// PR", "works as expected"), right after the output `r` of a command run after an edit of the
/// code (the agent's words only between them), when the task states the output it expects for an
/// input ([`expectations`]) and a line of `r` shows something else for that input
/// ([`contradicting_line`]: `5400 -> 2 h` where the task expects `1 h 30 min`): the claim
/// says the opposite of what the run just printed.
pub(super) fn claim_against_expected(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    static CLAIM: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(match(?:es|ing)?|as expected|correct(?:ly)?|works|working|fixed|resolved)\b").unwrap()
    });
    static DOUBT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(still|not yet|doesn'?t|does not|don'?t|isn'?t|is not|wrong|incorrect|mismatch|should be)\b")
            .unwrap()
    });
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if !matches!(s.kind, StepKind::Thought | StepKind::Message)
        || !CLAIM.is_match(&s.content)
        || DOUBT.is_match(&s.content)
    {
        return;
    }
    let Some(r) = (i.saturating_sub(WORDS_WINDOW)..i)
        .rev()
        .find(|&j| t.steps[j].kind != StepKind::Thought && t.steps[j].kind != StepKind::Message)
    else {
        return;
    };
    if t.steps[r].kind != StepKind::ToolResult {
        return;
    }
    let Some(c) = super::links(ctx).produced_by.get(r).copied().flatten() else { return };
    if t.steps[c].agent != s.agent
        || call_command(t, c).is_none()
        || only_reads(t, c)
        || !(0..c).any(|j| edits_code(t, j))
    {
        return;
    }
    let output = &t.steps[r].content;
    for x in expectations(&t.task) {
        let Some(line) = contradicting_line(output, &x) else { continue };
        out.push(finding(
            Signal::IgnoredResult,
            weights::MISREAD,
            prose![
                format!("says \"{}\", but the run at step ", crate::text::clip(s.content.trim(), 48)),
                Part::Step(r),
                format!(
                    " prints `{}`, where the task expects `{}` for {}",
                    crate::text::clip(line.trim(), 48),
                    crate::text::clip(&x.expected, 32),
                    crate::text::clip(&x.input, 24)
                )
            ],
        ));
        return;
    }
}
