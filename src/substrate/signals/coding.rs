//! Readings of coding-agent sessions that several findings share (docs/METHODS.md, "Coding-agent
//! sessions"): a scratch file the agent made and removed, an edit the agent made again after the
//! editor refused it, a `sed -i` that changed nothing, and a fix never checked against the
//! reproduction of the reported failure.
//!
//! Every rule reads the calls, their command lines ([`super::shell`]) and their outputs only: no
//! tool, file or benchmark is named.

use std::sync::LazyLock;

use regex::Regex;

use super::constraints::{self, above, version_parts};
use super::instructions::{changed_paths, made_in_run};
use super::shell::{self, Change};
use super::{Context, call_command, call_error, edits, finding, links, result_of, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::{StepKind, Trajectory};
use crate::prose;

/// The file name of a path (its last component).
pub(super) fn file_name(path: &str) -> &str {
    path.trim_end_matches('/').rsplit(['/', '\\']).next().unwrap_or(path)
}

/// Whether the file at `path` is one the agent made itself before call `c`: the first step
/// before `c` that names it (its file name, three characters or more), not counting the agent's
/// own thoughts and messages, is a call of the agent that writes it (a `create` command, a
/// redirection or `tee` into it, a tool that writes or creates files) or an output that reports
/// making it ([`made_in_run`]). A file the task or a tool output named first was there before
/// the agent.
pub(super) fn made_by_agent(t: &Trajectory, path: &str, c: usize) -> bool {
    static CREATE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)\bcreate\b").unwrap());
    let name = file_name(path);
    if name.len() < 3 {
        return false;
    }
    let agent = &t.steps[c.min(t.steps.len() - 1)].agent;
    let Some(first) = (0..c).find(|&j| {
        let s = &t.steps[j];
        let own_words = s.agent == *agent && matches!(s.kind, StepKind::Thought | StepKind::Message);
        !own_words && s.content.contains(name)
    }) else {
        return false;
    };
    let s = &t.steps[first];
    if s.kind != StepKind::ToolCall || s.agent != *agent {
        return false;
    }
    if made_in_run(t, path, c) {
        return true;
    }
    // An editor's replacement or insertion needs the file to be there already; a shell command
    // writing it, or a tool that writes or creates files, makes it.
    let tool = s.tool_name.as_deref().unwrap_or_default().to_ascii_lowercase();
    let edits_in_place = super::shell_command(&tool, &s.content).is_none()
        && !tool.contains("write")
        && !tool.contains("create")
        && s.content.split_whitespace().nth(1).is_some_and(|w| matches!(w, "str_replace" | "insert" | "undo_edit"));
    let writes =
        !edits_in_place && changed_paths(t, first).iter().any(|(p, how)| *how == Change::Edits && file_name(p) == name);
    let line = s.content.lines().find(|l| l.contains(name)).unwrap_or("");
    writes || CREATE.is_match(line)
}

/// Whether shell call `i` only removes scratch files the agent made itself in the run
/// ([`made_by_agent`]): every simple command of it that edits files is an `rm` or `unlink` of
/// such files (`rm reproduce.py`, `rm -f repro.py && git status`). Cleaning up its own
/// reproduction script changes none of the code under test: it is no edit that needs a check.
pub(super) fn removes_own_scratch(t: &Trajectory, i: usize) -> bool {
    let Some(cmd) = call_command(t, i) else { return false };
    let mut removed = false;
    for c in shell::commands(&cmd).iter().filter(|c| shell::command_edits(c)) {
        let rm = c.invocation().is_some_and(|inv| matches!(inv.program, "rm" | "unlink"));
        let paths = shell::written_paths(c);
        if !rm || c.writes_file() || paths.is_empty() || !paths.iter().all(|(p, _)| made_by_agent(t, p, i)) {
            return false;
        }
        removed = true;
    }
    removed
}

/// The file edit call `c` changes: the first path [`changed_paths`] reads from its arguments,
/// else, for an editor written as a command line (SWE-agent's `str_replace PATH --old_str …`),
/// its first word that looks like a file path (a `/` and a name with an extension).
pub(super) fn edited_file(t: &Trajectory, c: usize) -> Option<String> {
    if let Some((p, _)) = changed_paths(t, c).into_iter().next() {
        return Some(p);
    }
    t.steps[c]
        .content
        .split_whitespace()
        .take(4)
        .find(|w| w.contains('/') && file_name(w).contains('.') && !w.contains("://"))
        .map(|w| w.trim_matches(['"', '\'']).to_string())
}

/// Every file edit call `c` changes ([`changed_paths`]), else the one [`edited_file`] reads.
pub(super) fn edited_files(t: &Trajectory, c: usize) -> Vec<String> {
    let paths: Vec<String> = changed_paths(t, c).into_iter().map(|(p, _)| p).collect();
    if paths.is_empty() { edited_file(t, c).into_iter().collect() } else { paths }
}

/// How many steps after a refused edit the agent's next edit of the same file is looked for.
const EDIT_RETRY_WINDOW: usize = 40;

/// Whether the edit call `c`, which the editor refused (its result is an error: "No replacement
/// was performed", "old_string not found"), was made again: the same agent's next edit of the
/// same file ([`edited_file`]), within [`EDIT_RETRY_WINDOW`] steps, succeeded and writes the
/// change the refused one meant ([`writes_meant_change`]). The agent read the refusal and
/// corrected its edit; the refusal is part of the work. A successful edit of something else in
/// the file (the helpers the refused change was to use, added while the change itself is never
/// made) recovers nothing.
pub(crate) fn recovered_edit(ctx: &Context<'_>, c: usize) -> bool {
    let t = ctx.trajectory;
    if !edits(t, c) || call_error(ctx, c).is_none() {
        return false;
    }
    let Some(file) = edited_file(t, c) else { return false };
    let agent = &t.steps[c].agent;
    let end = t.steps.len().min(c + 1 + EDIT_RETRY_WINDOW);
    (c + 1..end)
        .find(|&k| {
            t.steps[k].kind == StepKind::ToolCall
                && t.steps[k].agent == *agent
                && edits(t, k)
                && edited_file(t, k).is_some_and(|f| file_name(&f) == file_name(&file))
        })
        .is_some_and(|k| result_of(ctx, k).is_some() && call_error(ctx, k).is_none() && writes_meant_change(t, c, k))
}

/// Whether call `c` is an editor's edit that the editor refused (not a shell command; its result
/// is an error: "No replacement was performed", "String to replace not found"): the file is as it
/// was, so the refusal is no rejected state change of its own. Going on as if the edit were made
/// is the error (`ignored_tool_error` at the step after the refusal), unless the agent
/// made it again ([`recovered_edit`]).
pub(crate) fn refused_edit(ctx: &Context<'_>, c: usize) -> bool {
    let t = ctx.trajectory;
    let tool = t.steps[c].tool_name.as_deref().unwrap_or_default().to_ascii_lowercase();
    edits(t, c) && shell::shell_command(&tool, &t.steps[c].content).is_none() && call_error(ctx, c).is_some()
}

/// Whether edit call `c` makes the very change the task asks for: a version the task names
/// (`0.28.1` of "bump httpx to 0.28.1") is among the lines it adds and not among those it
/// removes ([`edit_lines`]). What then fails is what the requested change brings, which the
/// agent has to deal with ("fix whatever breaks"): the edit itself is not the error, what the
/// agent does about the failure is.
pub(crate) fn makes_requested_change(ctx: &Context<'_>, c: usize) -> bool {
    let t = ctx.trajectory;
    let Some((removed, added)) = edit_lines(t, c) else { return false };
    let (removed, added) = (removed.join("\n"), added.join("\n"));
    crate::evidence::extract_text(&t.task).iter().filter(|e| e.kind == crate::evidence::EvidenceKind::Version).any(
        |e| {
            let v = e.text(&t.task);
            added.contains(v) && !removed.contains(v)
        },
    )
}

/// Whether edit call `k` writes the change the refused edit call `c` meant: at least half of the
/// lines `c` adds that it did not also remove (trimmed, four characters or more) are among the
/// lines `k` adds (or in `k`'s text when its lines cannot be read), or every line `k` adds that it
/// does not remove is part of `c`'s new text (the same change made narrower: `abs(value)` to
/// `value` after `orig = abs(value)` to `orig = value` was refused). `true` when `c`'s lines
/// cannot be read ([`edit_lines`]) or it adds no new line (a deletion made again differently).
fn writes_meant_change(t: &Trajectory, c: usize, k: usize) -> bool {
    let Some((removed, added)) = edit_lines(t, c) else { return true };
    let meant: Vec<&String> = added.iter().filter(|l| l.len() >= 4 && !removed.contains(l)).collect();
    if meant.is_empty() {
        return true;
    }
    let Some((k_removed, k_added)) = edit_lines(t, k) else {
        return meant.iter().filter(|l| t.steps[k].content.contains(l.as_str())).count() * 2 >= meant.len();
    };
    let k_new: Vec<&String> = k_added.iter().filter(|l| !k_removed.contains(l)).collect();
    let c_text = added.join("\n");
    meant.iter().filter(|l| k_added.contains(l)).count() * 2 >= meant.len()
        || !k_new.is_empty() && k_new.iter().all(|l| c_text.contains(l.as_str()))
}

/// How many steps after a failed shell edit the agent's next call, which checks or corrects it,
/// is looked for ([`edit_checked_at_once`]).
const CHECK_AT_ONCE_WINDOW: usize = 12;

/// Whether shell call `c`, which edits files ([`shell::command_edits`]: `sed -i`, a redirection
/// into a file…) and whose result is an error, was checked and corrected at once: the same
/// agent's next call names a file `c` edits and succeeds, and it either edits that file again
/// (the command made again, its quoting corrected) or reads it and shows the text of `c`'s
/// substitution (a literal piece of a `sed` replacement, six characters or more): the edit took
/// effect, and what failed was another part of the command (a trailing `sed -n` with a broken
/// quote). Looked for within [`CHECK_AT_ONCE_WINDOW`] steps. The agent saw the error, looked,
/// and the state is what it meant: no rejected or failed change.
pub(crate) fn edit_checked_at_once(ctx: &Context<'_>, c: usize) -> bool {
    let t = ctx.trajectory;
    if t.steps[c].kind != StepKind::ToolCall || call_error(ctx, c).is_none() {
        return false;
    }
    let Some(cmd) = call_command(t, c) else { return false };
    let cmds = shell::commands(&cmd);
    let files: Vec<String> = cmds
        .iter()
        .filter(|x| shell::command_edits(x))
        .flat_map(shell::written_paths)
        .filter(|(p, how)| *how == Change::Edits && file_name(p).len() >= 3)
        .map(|(p, _)| p)
        .collect();
    if files.is_empty() {
        return false;
    }
    let literals: Vec<String> = cmds
        .iter()
        .filter_map(shell::sed_substitution)
        .flat_map(|s| s.replacement_literals())
        .map(|p| p.trim().to_string())
        .filter(|p| p.chars().count() >= 6)
        .collect();
    let agent = &t.steps[c].agent;
    let end = t.steps.len().min(c + 1 + CHECK_AT_ONCE_WINDOW);
    let Some(k) = (c + 1..end).find(|&k| t.steps[k].kind == StepKind::ToolCall && t.steps[k].agent == *agent) else {
        return false;
    };
    if !files.iter().any(|f| t.steps[k].content.contains(file_name(f))) {
        return false;
    }
    let Some(r) = result_of(ctx, k) else { return false };
    if call_error(ctx, k).is_some() || super::shows_failure(ctx, r) {
        return false;
    }
    edits(t, k) || literals.iter().any(|p| t.steps[r].content.contains(p.as_str()))
}

// ---------------------------------------------------------------------------------------------
// A substitution that changed nothing
// ---------------------------------------------------------------------------------------------

/// The section of a unified diff (`diff --git a/… b/…` up to the next such line) about the file
/// at `path`: `Some(Some(section))` when the text is a diff that has one, `Some(None)` when it is
/// a diff without one, `None` when the text is no diff.
fn diff_section<'a>(text: &'a str, path: &str) -> Option<Option<&'a str>> {
    let starts: Vec<usize> = text.match_indices("diff --git ").map(|(k, _)| k).collect();
    if starts.is_empty() {
        return None;
    }
    let name = file_name(path);
    for (n, &k) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(text.len());
        let header = text[k..end].lines().next().unwrap_or("");
        let names_it = header.split_whitespace().skip(2).any(|p| {
            let p = p.trim_start_matches("a/").trim_start_matches("b/");
            file_name(p) == name && (path.ends_with(p) || p.ends_with(path.trim_start_matches("./")))
        });
        if names_it {
            return Some(Some(&text[k..end]));
        }
    }
    Some(None)
}

/// Step `i`, a shell call running `sed -i 's/OLD/NEW/' FILE` that exited without error, changed
/// nothing, as a later output shows: a later diff's section for FILE has none of NEW's literal
/// pieces (six characters or more; [`shell::SedSubstitution::replacement_literals`]), the run's
/// last diff does not list FILE at all, or a later read of FILE still shows OLD (when OLD matches
/// only itself) and none of NEW. A later call that writes NEW's text itself (the agent made the
/// change another way) clears it. A substitution whose pattern matches nothing exits with 0 and
/// says nothing: the change the agent then builds on was never made.
pub(super) fn silent_noop(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let Some(cmd) = call_command(t, i) else { return };
    let Some(r) = result_of(ctx, i) else { return };
    if call_error(ctx, i).is_some() || super::refused_call(ctx, i) {
        return;
    }
    for c in shell::commands(&cmd) {
        let Some(sub) = shell::sed_substitution(&c) else { continue };
        let pieces: Vec<String> = sub
            .replacement_literals()
            .into_iter()
            .map(|p| p.trim().to_string())
            .filter(|p| p.chars().count() >= 6)
            .collect();
        if pieces.is_empty() {
            continue;
        }
        let written = |k: usize| pieces.iter().any(|p| t.steps[k].content.contains(p.as_str()));
        let old = sub
            .pattern_literal()
            .filter(|o| o.trim().chars().count() >= 6 && !pieces.iter().any(|p| p.contains(o.trim())));
        for file in &sub.files {
            let name = file_name(file);
            // The run's last output that is a diff, to tell a file the final diff leaves out.
            let last_diff = (r + 1..t.steps.len())
                .rev()
                .find(|&k| t.steps[k].kind == StepKind::ToolResult && t.steps[k].content.contains("diff --git "));
            for k in r + 1..t.steps.len() {
                let s = &t.steps[k];
                if s.kind == StepKind::ToolCall && written(k) {
                    break;
                }
                if s.kind != StepKind::ToolResult {
                    continue;
                }
                let shown: Option<(&str, String)> = match diff_section(&s.content, file) {
                    Some(Some(section)) if !pieces.iter().any(|p| section.contains(p.as_str())) => Some((
                        "the diff at step ",
                        format!(" shows {name} without `{}`", crate::text::clip(&pieces[0], 40)),
                    )),
                    Some(Some(_)) => return,
                    Some(None) if Some(k) == last_diff => {
                        Some(("the last diff, at step ", format!(", does not list {name}")))
                    }
                    Some(None) => None,
                    None => {
                        let read = links(ctx).produced_by.get(k).copied().flatten().is_some_and(|q| {
                            t.steps[q].kind == StepKind::ToolCall
                                && t.steps[q].content.contains(name)
                                && !super::changes_state(t, q)
                        });
                        match &old {
                            Some(o) if read && s.content.contains(o.trim()) && !written(k) => Some((
                                "the read at step ",
                                format!(" still shows `{}`", crate::text::clip(o.trim(), 40)),
                            )),
                            _ if read && written(k) => return,
                            _ => None,
                        }
                    }
                };
                if let Some((lead, tail)) = shown {
                    out.push(finding(
                        Signal::FailedAction,
                        weights::FAILED_ACTION,
                        prose![
                            format!("`sed -i` on {name} exited without error but changed nothing: {lead}"),
                            Part::Step(k),
                            tail
                        ],
                    ));
                    return;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A fix never checked against the reproduction
// ---------------------------------------------------------------------------------------------

/// The program and first argument that is no option of each simple command of shell call `c`
/// that is not a plain reader (`cd`, `cat`…): `("python", "reproduce.py")`, `("shipit",
/// "deploy")`; with whether one of them runs tests ([`shell::runs_tests`]).
fn command_keys(t: &Trajectory, c: usize) -> Option<(Vec<(String, String)>, bool)> {
    let cmd = call_command(t, c)?;
    let cmds = shell::commands(&cmd);
    let tests = cmds.iter().any(shell::runs_tests);
    let keys = cmds
        .iter()
        .filter_map(|x| {
            let inv = x.invocation()?;
            if shell::READ_PROGRAMS.contains(&inv.program) {
                return None;
            }
            let first = inv.args.iter().map(|w| w.text.as_str()).find(|w| !w.starts_with('-')).unwrap_or("");
            Some((inv.program.to_string(), first.to_string()))
        })
        .collect();
    Some((keys, tests))
}

/// Whether call `i` is the first edit of the run's code after the reproduction: an edit
/// ([`edits`]) of a file that is not the agent's own scratch file ([`made_by_agent`]).
pub(super) fn edits_code(t: &Trajectory, i: usize) -> bool {
    if !edits(t, i) {
        return false;
    }
    match edited_file(t, i) {
        Some(p) => !made_by_agent(t, &p, i + 1),
        None => true,
    }
}

/// Step `i`, the first edit of the code ([`edits_code`]) after a shell command reproduced the
/// failure the task reports ([`super::reproduces_reported_failure`]), when that command is never
/// run again after it (no later command runs the same program with the same first argument;
/// for a reproduction by a test run, no later test run), though the agent checked the fix some
/// other way (a call after it that is no edit and does more than read files,
/// [`super::only_reads`]), and then reports to the reader: the fix was
/// claimed without showing that the reported failure is gone. Also when every later run of the
/// reproduction's check is weaker than it ([`super::recovery::weaker_reruns`]: a flag such as
/// `-race` dropped, a narrower selection added), which cannot show the failure again.
pub(super) fn reproduction_not_rerun(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if !edits_code(t, i) || (0..i).any(|j| edits_code(t, j)) {
        return;
    }
    let produced_by = &links(ctx).produced_by;
    let Some((r, rc)) = (0..i).find_map(|r| {
        let c = produced_by.get(r).copied().flatten()?;
        (t.steps[r].kind == StepKind::ToolResult && super::reproduces_reported_failure(ctx, r)).then_some((r, c))
    }) else {
        return;
    };
    let Some((keys, tests)) = command_keys(t, rc) else { return };
    if keys.is_empty() {
        return;
    }
    let agent = &t.steps[i].agent;
    let rerun = (i + 1..t.steps.len()).any(|k| {
        t.steps[k].kind == StepKind::ToolCall
            && command_keys(t, k).is_some_and(|(ks, runs)| tests && runs || ks.iter().any(|x| keys.contains(x)))
    });
    let reports = (i + 1..t.steps.len()).any(|k| t.steps[k].kind == StepKind::Message && t.steps[k].agent == *agent);
    // With no check at all after the fix, the claim is unverified as it stands (a finding of
    // the claim): this finding is for a fix checked some other way only.
    // A read (`cat`, `sed -n`) shows the code; it checks nothing.
    let checked = (i + 1..t.steps.len())
        .any(|k| t.steps[k].kind == StepKind::ToolCall && !edits(t, k) && !super::only_reads(t, k));
    if !reports || !checked {
        return;
    }
    // Run again only weaker (`go test` without the `-race` that showed the race, `pytest -k`
    // on a part of what failed): the reported failure is not looked for again either.
    if rerun {
        if let Some((k, what)) = super::recovery::weaker_reruns(t, rc, i) {
            out.push(finding(
                Signal::UnverifiedAssertion,
                weights::UNVERIFIED_ASSERTION,
                prose![
                    "the fix starts here, and the check that showed the reported failure (step ",
                    Part::Step(r),
                    format!(") is run again after it only weaker: {what} (step "),
                    Part::Step(k),
                    ")"
                ],
            ));
        }
        return;
    }
    let (program, arg) = &keys[0];
    let what = if arg.is_empty() { program.clone() } else { format!("{program} {arg}") };
    out.push(finding(
        Signal::UnverifiedAssertion,
        weights::UNVERIFIED_ASSERTION,
        prose![
            "the fix starts here, and the reproduction of the reported failure (step ",
            Part::Step(r),
            format!(", `{}`) is never run again after it", crate::text::clip(&what, 40))
        ],
    ));
}

// ---------------------------------------------------------------------------------------------
// Edits reverted, and a test's expected value rewritten to the behaviour it caught
// ---------------------------------------------------------------------------------------------

/// How many steps after an edit its revert, and before an edit the failing check it answers, are
/// looked for.
const EDIT_HISTORY_WINDOW: usize = 200;

/// The lines edit call `c` removes and adds, each trimmed, empty ones left out: a patch's `-` and
/// `+` lines (Codex `apply_patch`, raw or in an `input` member), else the old and new text of a
/// JSON edit (`old_string`/`new_string` of Claude Code `Edit` and Gemini CLI `replace`,
/// `old_str`/`new_str` of `str_replace_editor`, `old`/`new`, `old_text`/`new_text`, each of
/// `MultiEdit`'s `edits`). `None` when the call's text holds neither.
pub(super) fn edit_lines(t: &Trajectory, c: usize) -> Option<(Vec<String>, Vec<String>)> {
    let content = &t.steps[c].content;
    let lines = |text: &str| -> Vec<String> {
        text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
    };
    let json = super::call_arguments(content);
    if let Some(patch) = patch_text(content, json.as_ref()) {
        let (mut removed, mut added) = (Vec::new(), Vec::new());
        for line in patch.lines() {
            if line.starts_with("***") || line.starts_with("---") || line.starts_with("+++") {
                continue;
            }
            if let Some(r) = line.strip_prefix('-') {
                removed.extend(lines(r));
            } else if let Some(a) = line.strip_prefix('+') {
                added.extend(lines(a));
            }
        }
        return Some((removed, added));
    }
    let pairs = match json.map(edit_pairs).filter(|p| !p.is_empty()) {
        Some(pairs) => pairs,
        None => vec![editor_command_pair(content)?],
    };
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    for (r, a) in &pairs {
        removed.extend(lines(r));
        added.extend(lines(a));
    }
    (!pairs.is_empty()).then_some((removed, added))
}

/// The old and new text of an editor call written as its command line, as SWE-agent writes one:
/// `str_replace_editor str_replace PATH --old_str 'OLD' --new_str 'NEW'` (shell-quoted; a missing
/// `--new_str` is an empty new text). `None` for any other text.
fn editor_command_pair(content: &str) -> Option<(String, String)> {
    if !content.trim_start().starts_with("str_replace_editor") && !content.contains(" str_replace ") {
        return None;
    }
    let commands = shell::commands(content);
    let words = &commands.first()?.words;
    if words.get(1).map(|w| w.text.as_str()) != Some("str_replace") {
        return None;
    }
    let value =
        |flag: &str| words.iter().position(|w| w.text == flag).and_then(|k| words.get(k + 1)).map(|w| w.text.clone());
    Some((value("--old_str")?, value("--new_str").unwrap_or_default()))
}

/// The old and new text of each replacement of a JSON edit's arguments `args`, as written:
/// `old_string`/`new_string` (Claude Code `Edit`, Gemini CLI `replace`), `old_str`/`new_str`
/// (`str_replace_editor`), `old`/`new`, `old_text`/`new_text`, and each of `MultiEdit`'s `edits`.
/// Empty when it holds none.
pub(super) fn edit_pairs(args: serde_json::Map<String, serde_json::Value>) -> Vec<(String, String)> {
    let v = serde_json::Value::Object(args);
    let text = |o: &serde_json::Value, keys: &[&str]| {
        keys.iter().find_map(|k| o.get(*k).and_then(serde_json::Value::as_str)).map(str::to_string)
    };
    const OLD: [&str; 4] = ["old_string", "old_str", "old", "old_text"];
    const NEW: [&str; 4] = ["new_string", "new_str", "new", "new_text"];
    let mut objects: Vec<&serde_json::Value> = vec![&v];
    if let Some(edits) = v.get("edits").and_then(serde_json::Value::as_array) {
        objects.extend(edits.iter());
    }
    objects.into_iter().filter_map(|o| Some((text(o, &OLD)?, text(o, &NEW)?))).collect()
}

/// The patch text of an edit call (Codex `apply_patch`, raw or in an `input` or `patch` member of
/// its arguments `json`): `None` when the call holds no `*** ` patch header.
fn patch_text(content: &str, json: Option<&serde_json::Map<String, serde_json::Value>>) -> Option<String> {
    json.and_then(|v| v.get("input").or_else(|| v.get("patch")))
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
        .or_else(|| content.contains("*** Begin Patch").then(|| content.to_string()))
        .filter(|p| p.contains("*** "))
}

/// A file's path with the lines an edit removes from it and adds to it, each trimmed.
type FileLines = (String, Vec<String>, Vec<String>);

/// The lines a patch edit call `c` removes and adds ([`edit_lines`]), file by file: each
/// `*** Update File:` / `*** Add File:` section's path with its `-` and `+` lines, in order. `None`
/// for a call that holds no patch.
fn patch_files(t: &Trajectory, c: usize) -> Option<Vec<FileLines>> {
    let content = &t.steps[c].content;
    let patch = patch_text(content, super::call_arguments(content).as_ref())?;
    let mut out: Vec<FileLines> = Vec::new();
    for line in patch.lines() {
        if let Some(path) =
            ["*** Update File: ", "*** Add File: ", "*** Delete File: "].iter().find_map(|h| line.strip_prefix(h))
        {
            out.push((path.trim().to_string(), Vec::new(), Vec::new()));
            continue;
        }
        if line.starts_with("***") || line.starts_with("---") || line.starts_with("+++") {
            continue;
        }
        let Some((_, removed, added)) = out.last_mut() else { continue };
        let (side, rest) = match line.chars().next() {
            Some('-') => (removed, &line[1..]),
            Some('+') => (added, &line[1..]),
            _ => continue,
        };
        side.extend(rest.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string));
    }
    Some(out)
}

/// The new text of edit call `c` in order, each line trimmed (empty ones left out) with whether
/// the edit adds it: a patch's context lines (` `) and added lines (`+`), where [`edit_lines`]
/// keeps only the added ones, so a line the edit writes can be placed beside an unchanged one (a
/// skip marker put above a test's `def` the patch leaves as it was); for a JSON edit, its new text,
/// every line of it counted as added, as [`edit_lines`] does. `None` as for [`edit_lines`].
fn edit_new_side(t: &Trajectory, c: usize) -> Option<Vec<(bool, String)>> {
    let content = &t.steps[c].content;
    if let Some(patch) = patch_text(content, super::call_arguments(content).as_ref()) {
        let mut out = Vec::new();
        for line in patch.lines() {
            if line.starts_with("***") || line.starts_with("+++") {
                continue;
            }
            // A hunk header may name the line it is found by (`@@ def test_x():`): a line of the file.
            if let Some(anchor) = line.strip_prefix("@@") {
                // A unified diff's `@@ -12,7 +12,8 @@ def f():` names it after its ranges.
                let anchor = match anchor.trim_start().starts_with('-') {
                    true => anchor.split_once("@@").map_or("", |(_, a)| a),
                    false => anchor,
                };
                let anchor = anchor.trim();
                if !anchor.is_empty() {
                    out.push((false, anchor.to_string()));
                }
                continue;
            }
            let (added, rest) = match line.chars().next() {
                Some('+') => (true, &line[1..]),
                Some(' ') => (false, &line[1..]),
                _ => continue,
            };
            let rest = rest.trim();
            if !rest.is_empty() {
                out.push((added, rest.to_string()));
            }
        }
        return Some(out);
    }
    let (_, added) = edit_lines(t, c)?;
    Some(added.into_iter().map(|l| (true, l)).collect())
}

/// The call that reverts edit call `e`, when the same agent reverts it within
/// [`EDIT_HISTORY_WINDOW`] steps with a call the user did not refuse: a `git` command that
/// restores the edited file or puts the work aside, or the inverse edit
/// ([`super::revert::reverted_within`], the one reader of reverts).
pub(crate) fn reverted(ctx: &Context<'_>, e: usize) -> Option<usize> {
    let t = ctx.trajectory;
    if !edits(t, e) || call_command(t, e).is_some() {
        return None;
    }
    let r = super::revert::reverted_within(t, super::links(ctx), e, EDIT_HISTORY_WINDOW)?;
    (t.steps[r.step].agent == t.steps[e].agent && !super::refused_call(ctx, r.step)).then_some(r.step)
}

/// The literal values written in a line of code: quoted strings (their text, quotes off),
/// numbers, and the boolean and null constants of the common languages (`true`, `False`,
/// `None`, `nil`, `null`), which a test's expected value often is.
fn literals(line: &str) -> Vec<String> {
    static LITERAL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"'([^'\n]*)'|"([^"\n]*)"|`([^`\n]*)`|(?:^|[^\w.])(-?\d+(?:\.\d+)?)\b|\b(true|false|True|False|None|nil|null)\b"#)
            .unwrap()
    });
    LITERAL
        .captures_iter(line)
        .filter_map(|c| c.get(1).or(c.get(2)).or(c.get(3)).or(c.get(4)).or(c.get(5)))
        .map(|m| m.as_str().to_string())
        .collect()
}

/// A line of code with its literals ([`literals`]) blanked out, to pair a removed line with the
/// added line that differs from it only in a value.
fn skeleton(line: &str) -> String {
    static LITERAL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"'[^'\n]*'|"[^"\n]*"|`[^`\n]*`|\b\d+(?:\.\d+)?\b|\b(?:true|false|True|False|None|nil|null)\b"#)
            .unwrap()
    });
    LITERAL.replace_all(line, "_").into_owned()
}

/// The words two string literals differ in, when both are sentences (a test's failure message,
/// Go's `"Allow() = %v, want true"` becoming `"… want false"`): the first word of `a` that `b`
/// lacks and the first word of `b` that `a` lacks (words of letters, digits, `.`, `-`, `_`).
/// `None` when either literal is one word, or either side has no word of its own.
fn words_changed<'a>(a: &'a str, b: &'a str) -> Option<(&'a str, &'a str)> {
    let words = |s: &'a str| -> Vec<&'a str> {
        s.split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '-' | '_')))
            .map(|w| w.trim_matches(['.', '-']))
            .filter(|w| !w.is_empty())
            .collect()
    };
    let (wa, wb) = (words(a), words(b));
    if wa.len() < 2 || wb.len() < 2 {
        return None;
    }
    let x = wa.iter().find(|w| !wb.contains(w))?;
    let y = wb.iter().find(|w| !wa.contains(w))?;
    Some((x, y))
}

/// Whether a line of a test asserts: `assert`, `expect(`, `assertEqual`, `toBe`, `toEqual`,
/// `want`, `should`, `==`.
pub(super) fn asserts(line: &str) -> bool {
    static ASSERT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(assert\w*|expect|to(?:be|equal|strictequal|match\w*)|want\w*|should|equals?)\b|==").unwrap()
    });
    ASSERT.is_match(line)
}

/// Whether the text shows `a` and `b` (as written, each between non-word characters) on one line
/// or on two lines next to each other (`expected '2026-03-28' to be '2026-03-29'`, `assert 4 ==
/// 3`, Jest's `Expected: 3` and `Received: 4`).
fn shows_pair(text: &str, a: &str, b: &str) -> bool {
    let has = |l: &str, x: &str| {
        l.match_indices(x).any(|(i, _)| {
            let before = l[..i].chars().next_back();
            let after = l[i + x.len()..].chars().next();
            let part = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
            before.is_none_or(|c| !part(c)) && after.is_none_or(|c| !part(c))
        })
    };
    let lines: Vec<&str> = text.lines().collect();
    (0..lines.len()).any(|k| {
        let near = &lines[k..lines.len().min(k + 2)];
        near.iter().any(|l| has(l, a)) && near.iter().any(|l| has(l, b))
    })
}

/// Step `e` edits a test file ([`super::recovery::is_test_path`]) and changes the expected value
/// of an assertion that was there before the agent (a removed line that asserts, paired with an
/// added line that differs from it only in its literals, no earlier edit of the agent having
/// written it) from A to B (a literal, a boolean or null constant, or, in a message string, the
/// word changed: [`words_changed`], Go's `want true` becoming `want false`), where a check that
/// failed before the agent's first edit, and
/// reproduced the failure the task reports ([`super::reproduces_reported_failure`]), or a failing
/// output after it (the bug as a partial fix left it), showed A and B side by side (`expected
/// '2026-03-28' to be '2026-03-29'`): the test that caught the reported bug is made to expect the
/// value the code gives instead of the code being fixed. Looked for
/// within [`EDIT_HISTORY_WINDOW`] steps before the edit.
pub(super) fn expectation_rewritten(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let content = &t.steps[e].content;
    if t.steps[e].kind != StepKind::ToolCall || !(content.contains("test") || content.contains("spec")) {
        return;
    }
    if !edits(t, e) || call_error(ctx, e).is_some() {
        return;
    }
    let Some(file) = edited_files(t, e).into_iter().find(|f| super::recovery::is_test_path(f)) else { return };
    let Some((removed, added)) = edit_lines(t, e) else { return };
    let agent = &t.steps[e].agent;
    let start = e.saturating_sub(EDIT_HISTORY_WINDOW);
    // Failing outputs that reproduce the reported failure, before any edit of the run.
    let reproductions: Vec<usize> = (start..e)
        .filter(|&r| {
            t.steps[r].kind == StepKind::ToolResult
                && super::shows_failure(ctx, r)
                && super::reproduces_reported_failure(ctx, r)
        })
        .collect();
    let Some(&first) = reproductions.first() else { return };
    // The failing runs since the reproduction: the bug as reproduced, or as a partial fix left it
    // (`cre-me-bru-le-e` after `crme-brle`), each a value the code gave instead of the expected one.
    let failing: Vec<usize> =
        (first..e).filter(|&r| t.steps[r].kind == StepKind::ToolResult && super::shows_failure(ctx, r)).collect();
    for old in removed.iter().filter(|l| asserts(l)) {
        let own =
            (start..e).any(|j| t.steps[j].agent == *agent && edits(t, j) && t.steps[j].content.contains(old.as_str()));
        if own {
            continue;
        }
        let shape = skeleton(old);
        let Some(new) = added.iter().find(|a| skeleton(a) == shape && *a != old) else { continue };
        let (was, now) = (literals(old), literals(new));
        let gone: Vec<&String> = was.iter().filter(|x| !now.contains(x) && !x.trim().is_empty()).collect();
        let came: Vec<&String> = now.iter().filter(|x| !was.contains(x) && !x.trim().is_empty()).collect();
        let (Some(a), Some(b)) = (gone.first(), came.first()) else { continue };
        // In a message (`t.Errorf("got %v, want true")`) the expected value is the word changed.
        let (a, b) = words_changed(a, b).unwrap_or((a.as_str(), b.as_str()));
        let Some(&r) = failing.iter().find(|&&r| shows_pair(&t.steps[r].content, a, b)) else { continue };
        out.push(finding(
            Signal::FailedAction,
            weights::FAILED_ACTION,
            prose![
                format!(
                    "rewrites a test's expected value in {} from `{}` to `{}`, the value the failing test showed at step ",
                    file_name(&file),
                    crate::text::clip(a, 40),
                    crate::text::clip(b, 40)
                ),
                Part::Step(r),
                ": the test is made to expect the bug instead of the code being fixed"
            ],
        ));
        return;
    }
}

/// How many steps before an edit [`failing_test_removed`] looks for the failed test run it answers.
const REMOVED_TEST_WINDOW: usize = 40;

/// A line that skips or disables a test: pytest's and unittest's skip and xfail decorators, Jest's,
/// Mocha's and Vitest's `.skip` / `xit` / `xdescribe`, Rust's `#[ignore]`, Go's `t.Skip`, JUnit's
/// `@Disabled` / `@Ignore`, RSpec's `skip` / `pending`.
static SKIPS_TEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"@pytest\.mark\.(?:skip|xfail)|\bpytest\.skip\(|\bself\.skipTest\(|@unittest\.(?:skip|expectedFailure)|\b(?:it|test|describe)\.skip\(|\bx(?:it|describe|test)\(|#\[ignore|\bt\.Skip(?:Now|f)?\(|@(?:Disabled|Ignore)\b|^(?:skip|pending)(?:\s+["']|\s+do\b|\s*$)"#,
    )
    .expect("a valid pattern")
});

/// A line that defines a test: `def test_…`, `fn test_…` / `#[test]`, Go's `func TestX(`, Jest's,
/// Mocha's and Vitest's `it(` / `test(`, JUnit's `@Test`, RSpec's `it "…" do`.
static DEFINES_TEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^\s*(?:async\s+)?def test|\bfn test_|#\[(?:tokio::)?test\b|^\s*func Test|^\s*(?:it|test)\s*\(|@Test\b|^\s*it\s+["']"#)
        .expect("a valid pattern")
});

/// A test that an edit drops: what [`hidden_test`] finds.
pub(crate) struct HiddenTest {
    /// The failed test run's output that named the test as failing.
    pub run: usize,
    /// The test's bare name (`test_x` of `tests/t.py::test_x`).
    pub name: String,
    /// The test file the edit changes.
    pub file: String,
    /// Whether the edit removes the test (else it marks it skipped).
    pub removed: bool,
    /// Whether the edit deletes the whole test file the test is in.
    pub file_deleted: bool,
}

/// The bare name of a test a runner reports (`test_x` of `TestSuite.test_x`, of
/// `t.py::TestX::test_x` and of `test_x[0.125]`): the parameters go first, as they may hold dots.
fn bare_test_name(name: &str) -> &str {
    let unparametrised = name.split('[').next().unwrap_or(name);
    unparametrised.rsplit(['.', ':']).next().unwrap_or(unparametrised).trim()
}

/// Edit `e` deletes the test source file `path` (a name with `test` or `spec` in it and a
/// source extension: `test_export.py`, `cart.spec.ts`, `store_test.go`) after the failed test run
/// `r`, which names a failing test on a line that names the file (`FAILED
/// tests/test_export.py::test_x`): that test is dropped with its file. Not a file the agent made in
/// the run ([`made_in_run`], [`made_by_agent`], a patch's `*** Add File:`: its own reproduction),
/// nor one a run after `r`
/// shows passing (an output naming the file or the test that reports no failure), nor one an
/// edit of the same agent writes again within [`REMOVED_TEST_WINDOW`] steps (the tests moved or
/// rewritten).
fn deleted_test_file(ctx: &Context<'_>, e: usize, r: usize, path: &str) -> Option<HiddenTest> {
    const SOURCE: [&str; 16] =
        ["py", "js", "jsx", "ts", "tsx", "mjs", "cjs", "go", "rs", "java", "kt", "rb", "php", "cs", "swift", "scala"];
    let t = ctx.trajectory;
    let name = file_name(path);
    let lower = name.to_ascii_lowercase();
    let source = lower
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| SOURCE.contains(&ext) && (stem.contains("test") || stem.contains("spec")));
    let output = &t.steps[r].content;
    // A patch of the run that added the file (`*** Add File: tests/test_repro.py`).
    let added_by_patch = (0..e).any(|j| {
        t.steps[j].kind == StepKind::ToolCall
            && t.steps[j].content.contains("*** Add File:")
            && t.steps[j]
                .content
                .split("*** Add File:")
                .skip(1)
                .any(|rest| rest.split(['\n', '\\']).next().is_some_and(|p| file_name(p.trim()) == name))
    });
    if name.len() < 4
        || !source
        || !output.contains(name)
        || added_by_patch
        || made_in_run(t, path, e)
        || made_by_agent(t, path, e)
    {
        return None;
    }
    let agent = &t.steps[e].agent;
    let end = (e + REMOVED_TEST_WINDOW).min(t.steps.len());
    if (e + 1..end)
        .any(|j| t.steps[j].agent == *agent && edits(t, j) && edited_files(t, j).iter().any(|f| file_name(f) == name))
    {
        return None;
    }
    let failing = super::failing_tests(output);
    let test = failing
        .iter()
        .map(|n| bare_test_name(n).to_string())
        .find(|b| output.lines().any(|l| l.contains(name) && l.contains(b.as_str())))?;
    // A run since that passes with the file or the test in it: the failure was fixed before.
    if (r + 1..e).any(|j| {
        let c = &t.steps[j].content;
        t.steps[j].kind == StepKind::ToolResult
            && (c.contains(name) || c.contains(test.as_str()))
            && !super::shows_failure(ctx, j)
    }) {
        return None;
    }
    Some(HiddenTest { run: r, name: test, file: path.to_string(), removed: true, file_deleted: true })
}

/// Step `e` edits a test file ([`super::recovery::is_test_path`]) so that a test the last test run
/// naming failed tests, of the [`REMOVED_TEST_WINDOW`] steps before it, names as failing
/// ([`super::failing_tests`]) no longer runs: the edit removes the line that defines it (a removed
/// line holding the test's name, which no added line holds), or adds a skip marker ([`SKIPS_TEST`])
/// beside a line holding its name. The test that caught the failure is dropped instead of the
/// code being fixed. Not when the task asks for tests to be removed or skipped, nor when the
/// test is one the agent wrote itself in an earlier edit of the run.
pub(crate) fn hidden_test(ctx: &Context<'_>, e: usize) -> Option<HiddenTest> {
    static ASKS_REMOVAL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(?:remove|delete|drop|skip|disable)\b[^.\n]{0,40}\btests?\b|\btests?\b[^.\n]{0,30}\b(?:obsolete|no longer needed)")
            .expect("a valid pattern")
    });
    let t = ctx.trajectory;
    let content = &t.steps[e].content;
    if t.steps[e].kind != StepKind::ToolCall || !(content.contains("test") || content.contains("spec")) {
        return None;
    }
    // The task asks for tests to go ("remove the obsolete tests"), unless it says not to ("do not
    // delete or skip any tests", which makes dropping one a breach, not a request).
    let asks_removal = ASKS_REMOVAL.find_iter(&t.task).any(|m| {
        let before = &t.task[..m.start()];
        let cut = before.char_indices().rev().nth(23).map_or(0, |(k, _)| k);
        let near = before[cut..].to_ascii_lowercase();
        !["not ", "n't ", "never ", "without ", "no "].iter().any(|n| near.contains(n))
    });
    if !edits(t, e) || call_error(ctx, e).is_some() || asks_removal {
        return None;
    }
    let file = edited_files(t, e).into_iter().find(|f| super::recovery::is_test_path(f))?;
    let agent = &t.steps[e].agent;
    let start = e.saturating_sub(REMOVED_TEST_WINDOW);
    // The last test run before the edit that names failing tests.
    let r = (start..e)
        .rev()
        .find(|&r| t.steps[r].kind == StepKind::ToolResult && !super::failing_tests(&t.steps[r].content).is_empty())?;
    if !super::shows_failure(ctx, r) {
        return None;
    }
    // The whole test file deleted (`rm`, `git rm`, a patch's `*** Delete File:`).
    if let Some(h) = changed_paths(t, e)
        .into_iter()
        .filter(|(p, how)| *how == Change::Deletes && super::recovery::is_test_path(p))
        .find_map(|(p, _)| deleted_test_file(ctx, e, r, &p))
    {
        return Some(h);
    }
    let (removed, added) = edit_lines(t, e)?;
    let new_side = edit_new_side(t, e).unwrap_or_default();
    for name in super::failing_tests(&t.steps[r].content) {
        let bare = bare_test_name(&name);
        if bare.len() < 4 {
            continue;
        }
        // A test the agent defined itself in an earlier edit, or one it moves (a later edit
        // defines it again), is not dropped.
        let defines = |j: usize| {
            t.steps[j].agent == *agent
                && edits(t, j)
                && edit_lines(t, j).is_some_and(|(r, a)| {
                    a.iter().any(|l| l.contains(bare) && DEFINES_TEST.is_match(l))
                        && !r.iter().any(|l| l.contains(bare))
                })
        };
        let later = e + 1..(e + REMOVED_TEST_WINDOW).min(t.steps.len());
        if (start..e).any(defines) || later.clone().any(defines) {
            continue;
        }
        // Removed, and not replaced by another test in its place (a test renamed for the value the
        // task changes, `test_timeout_is_10s` → `test_timeout_is_30s`, is rewritten, not dropped).
        let gone = removed.iter().any(|l| l.contains(bare))
            && !added.iter().any(|l| l.contains(bare))
            && !added.iter().any(|l| DEFINES_TEST.is_match(l));
        // A skip marker added to the test: in the new text (a line the edit writes, or one a patch
        // leaves as it was), at most three lines above the line that holds its name, or at most
        // three below it with no other test defined in between (a skip call in its body); a
        // marker of a test defined next to it is not its.
        let named_at: Vec<usize> = (0..new_side.len()).filter(|&k| new_side[k].1.contains(bare)).collect();
        let marks = |k: usize, n: usize| {
            let line = &new_side[k].1;
            if k < n {
                n - k <= 3
            } else {
                // Below the name only a call in the body (`pytest.skip(`, `t.Skip()`); a decorator
                // there belongs to the next test.
                k - n <= 3
                    && !line.starts_with('@')
                    && !line.starts_with("#[")
                    && !(n + 1..=k).any(|m| DEFINES_TEST.is_match(&new_side[m].1))
            }
        };
        let skipped = !removed.iter().any(|l| SKIPS_TEST.is_match(l))
            && (0..new_side.len())
                .filter(|&k| new_side[k].0 && SKIPS_TEST.is_match(&new_side[k].1))
                .any(|k| named_at.iter().any(|&n| marks(k, n)));
        if gone || skipped {
            return Some(HiddenTest { run: r, name: bare.to_string(), file, removed: gone, file_deleted: false });
        }
    }
    None
}

/// The first edit of the same agent after edit `i`, within [`REMOVED_TEST_WINDOW`] steps, that
/// drops ([`hidden_test`]) a test the failed run `c` named: the failure the check after `i`
/// showed is then hidden there, and that edit, not `i`, is where the run is lost (`i`'s failure
/// was caught and could still be fixed).
pub(crate) fn failure_hidden(ctx: &Context<'_>, i: usize, c: usize) -> Option<usize> {
    let t = ctx.trajectory;
    let end = (c + REMOVED_TEST_WINDOW).min(t.steps.len());
    let named = super::failing_tests(&t.steps[c].content);
    (c + 1..end).filter(|&e| t.steps[e].agent == t.steps[i].agent).find(|&e| {
        hidden_test(ctx, e).is_some_and(|h| {
            h.run == c || h.run > c && named.iter().any(|n| n.split('[').next().is_some_and(|n| n.ends_with(&h.name)))
        })
    })
}

/// [`hidden_test`] as a finding of the edit that drops the test, naming the failed run and, when
/// one caused it, the edit whose check it was: "removes the test test_x in test_export.py, which
/// failed at step 15 after the edit at step 12: the test that caught the failure is dropped
/// instead of the code being fixed".
pub(super) fn failing_test_removed(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    let Some(h) = hidden_test(ctx, e) else { return };
    let t = ctx.trajectory;
    let how = match (h.file_deleted, h.removed) {
        (true, _) => "deletes, with its file, the test",
        (false, true) => "removes the test",
        (false, false) => "skips the test",
    };
    // The edit whose check this run was.
    let edit = (h.run.saturating_sub(REMOVED_TEST_WINDOW)..h.run).rev().find(|&j| {
        t.steps[j].agent == t.steps[e].agent
            && edits(t, j)
            && super::failed_check_after_edit(ctx, j)
                .is_some_and(|(c, _)| c <= h.run && failure_hidden(ctx, j, c) == Some(e))
    });
    let mut parts: Vec<Part> = vec![
        Part::from(format!(
            "{how} {} in {}, which failed at step ",
            crate::text::clip(&h.name, 60),
            file_name(&h.file)
        )),
        Part::Step(h.run),
    ];
    if let Some(j) = edit {
        parts.extend([Part::from(" after the edit at step "), Part::Step(j)]);
    }
    parts.push(Part::from(": the test is dropped instead of the code fixed"));
    out.push(finding(Signal::FailedAction, weights::FAILED_ACTION, crate::diagnosis::Prose::new(parts)));
}

/// A line that waits or retries instead of synchronising: a sleep (`time.sleep(`,
/// `asyncio.sleep(`, `Thread.sleep(`, `thread::sleep(`, `tokio::time::sleep(`, Go's
/// `time.Sleep(`, a `setTimeout(` promise, a shell `sleep N`), or a rerun of a failing test
/// (`@pytest.mark.flaky`, `@flaky`, `reruns=`, `jest.retryTimes(`, `this.retries(`,
/// `@RepeatedTest`, `@Retry`).
static WAITS_OR_RETRIES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(?:time|asyncio|trio|anyio)\.sleep\(|\bThread\.sleep\(|\bthread::sleep\(|\btime::sleep\(|\btime\.Sleep\(|(?:^|[^.\w])setTimeout\(|(?:^|[;&|]\s*)sleep\s+\d|@pytest\.mark\.flaky|@flaky\b|\breruns\s*=|\bjest\.retryTimes\(|\bthis\.retries\(|@RepeatedTest\b|@Retry\b",
    )
    .expect("a valid pattern")
});

/// A request that reports a failure that comes and goes: flaky, intermittent, a race, a timing
/// problem, a test that fails only sometimes.
static REPORTS_FLAKINESS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bflak(?:y|iness)\b|\bintermittent(?:ly)?\b|\brace(?: condition)?s?\b|\bnon-?deterministic|\b(?:sometimes|randomly|occasionally|every (?:few|other) runs?) (?:fails?|breaks?|times? out|hangs?)\b|\bfails? (?:sometimes|randomly|occasionally|now and then)\b")
        .expect("a valid pattern")
});

/// A user turn that tells the agent not to wait it away: "don't (just) add a sleep", "don't just
/// make the test slower", "no sleeps", "not by adding a sleep", "without adding retries". A
/// description of the bug ("gives up without retry") rules nothing out.
static FORBIDS_WAITING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b(?:don'?t|do not|never)\s+(?:just\s+)?(?:add|use|put|insert|rely on)\b[^.\n]{0,30}\b(?:sleeps?|waits?|delays?|retr(?:y|ies)|reruns?)\b",
        r"|\b(?:don'?t|do not|never)\s+(?:just\s+)?make\b[^.\n]{0,30}\bslower\b",
        r"|\bno (?:sleeps?|reruns?|retries)\b\s*(?:[,.;:!)]|$|please|here|in the tests?)",
        r"|\bnot by (?:adding|making|waiting|sleeping|retrying)\b",
        r"|\bwithout (?:adding (?:a |any )?(?:sleeps?|waits?|delays?|retries)|making\b[^.\n]{0,30}\bslower)\b",
    ))
        .expect("a valid pattern")
});

/// Step `e`, an edit the agent did not revert, adds a wait or a retry ([`WAITS_OR_RETRIES`], in
/// an added line that no removed line holds) to a test file ([`super::recovery::is_test_path`])
/// while the task reports a failure that comes and goes ([`REPORTS_FLAKINESS`]), or to any file
/// after a user turn ruled waiting out ([`FORBIDS_WAITING`]): the timing that makes the test fail
/// is hidden, not fixed, and a green run after it proves nothing. "adds `time.sleep(0.2)` to
/// test_pool.py while the task reports a race: the failure is waited out, not fixed".
pub(super) fn timing_waited_out(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if t.steps[e].kind != StepKind::ToolCall || !edits(t, e) || call_error(ctx, e).is_some() {
        return;
    }
    // Each file's lines apart (a patch may change the code and its test at once).
    let per_file: Vec<(Option<String>, Vec<String>, Vec<String>)> = match patch_files(t, e) {
        Some(files) => files.into_iter().map(|(f, r, a)| (Some(f), r, a)).collect(),
        None => match edit_lines(t, e) {
            Some((removed, added)) => vec![(None, removed, added)],
            None => return,
        },
    };
    // `sleep(0)` hands control to the event loop; it waits nothing out. A wait changed (a shorter
    // sleep, a sleep moved, to another file too) is not one added.
    let removed_anywhere: Vec<&String> = per_file.iter().flat_map(|(_, removed, _)| removed).collect();
    if removed_anywhere.iter().any(|l| WAITS_OR_RETRIES.is_match(l)) {
        return;
    }
    let waits: Vec<(Option<String>, &String)> = per_file
        .iter()
        .filter_map(|(f, _, added)| {
            let line = added
                .iter()
                .find(|l| WAITS_OR_RETRIES.is_match(l) && !l.contains("sleep(0)") && !removed_anywhere.contains(l))?;
            Some((f.clone(), line))
        })
        .collect();
    if waits.is_empty() {
        return;
    }
    let users: Vec<&str> = t.steps[..e]
        .iter()
        .filter(|s| super::actions::served_person(s) && s.kind != StepKind::ToolResult)
        .map(|s| s.content.as_str())
        .collect();
    let forbidden = FORBIDS_WAITING.is_match(&t.task) || users.iter().any(|u| FORBIDS_WAITING.is_match(u));
    // The file the wait is added to: a test file first; any file when the user ruled waits out.
    let placed: Vec<(String, &String)> = waits
        .iter()
        .flat_map(|(f, line)| match f {
            Some(f) => vec![(f.clone(), *line)],
            None => edited_files(t, e).into_iter().map(|f| (f, *line)).collect(),
        })
        .collect();
    let Some((file, line)) =
        placed.iter().find(|(f, _)| super::recovery::is_test_path(f)).or(placed.first().filter(|_| forbidden)).cloned()
    else {
        return;
    };
    let flaky = REPORTS_FLAKINESS.is_match(&t.task) || users.iter().any(|u| REPORTS_FLAKINESS.is_match(u));
    if !(flaky || forbidden) || reverted(ctx, e).is_some() {
        return;
    }
    let why = if forbidden {
        "after the user ruled waiting out"
    } else {
        "while the task reports a failure that comes and goes"
    };
    out.push(finding(
        Signal::FailedAction,
        weights::FAILED_ACTION,
        format!(
            "adds `{}` to {} {why}: the failure is waited out, not fixed",
            crate::text::clip(line, 50),
            file_name(&file)
        ),
    ));
}

// ---------------------------------------------------------------------------------------------
// A substitution wider than its target
// ---------------------------------------------------------------------------------------------

/// The identifiers in `text` that hold `old` inside a longer identifier (letters, digits, `_`
/// around it: `max_conn_idle` for `max_conn`), each once, in order.
fn longer_identifiers(text: &str, old: &str) -> Vec<String> {
    let part = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out: Vec<String> = Vec::new();
    for (i, _) in text.match_indices(old) {
        let start = text[..i].char_indices().rev().take_while(|&(_, c)| part(c)).last().map_or(i, |(k, _)| k);
        let end =
            i + old.len() + text[i + old.len()..].chars().take_while(|&c| part(c)).map(char::len_utf8).sum::<usize>();
        if start == i && end == i + old.len() {
            continue;
        }
        let word = &text[start..end];
        if !out.iter().any(|w| w == word) {
            out.push(word.to_string());
        }
    }
    out
}

/// Step `i`, a shell call whose `sed -i` substitution replaces an identifier (`s/OLD/NEW/g`, OLD
/// of letters, digits and `_`, three characters or more, no word boundary such as `\b` or `\<`
/// around it), where an earlier output of a call that searched for OLD (its text names OLD),
/// within [`EDIT_HISTORY_WINDOW`] steps, shows OLD inside longer identifiers (`max_conn_idle`,
/// `max_conn_lifetime_s` for `max_conn`): the substitution renames those too. Names that start
/// with NEW (already renamed) do not count, and a later call of the agent that writes one of the
/// longer names back (its text holds it) clears the finding.
pub(super) fn overbroad_substitution(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if t.steps[i].kind != StepKind::ToolCall || !t.steps[i].content.contains("sed") {
        return;
    }
    let Some(cmd) = call_command(t, i) else { return };
    if call_error(ctx, i).is_some() || super::refused_call(ctx, i) {
        return;
    }
    let agent = &t.steps[i].agent;
    for c in shell::commands(&cmd) {
        let Some(sub) = shell::sed_substitution(&c) else { continue };
        let Some(old) = sub.pattern_literal() else { continue };
        if old.len() < 3 || !old.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_') {
            continue;
        }
        let new = sub.replacement.as_str();
        let start = i.saturating_sub(EDIT_HISTORY_WINDOW);
        let shown = (start..i).find_map(|r| {
            let s = &t.steps[r];
            if s.kind != StepKind::ToolResult {
                return None;
            }
            let q = links(ctx).produced_by.get(r).copied().flatten()?;
            if t.steps[q].agent != *agent || !t.steps[q].content.contains(old.as_str()) {
                return None;
            }
            let others: Vec<String> = longer_identifiers(&s.content, &old)
                .into_iter()
                .filter(|w| new.is_empty() || !w.starts_with(new) && !w.contains(new))
                .collect();
            (!others.is_empty()).then_some((r, others))
        });
        let Some((r, others)) = shown else { continue };
        let end = t.steps.len().min(i + 1 + EDIT_HISTORY_WINDOW);
        let restored = (i + 1..end).any(|k| {
            t.steps[k].kind == StepKind::ToolCall
                && t.steps[k].agent == *agent
                && others.iter().any(|w| t.steps[k].content.contains(w.as_str()))
        });
        if restored {
            continue;
        }
        let names: Vec<&str> = others.iter().take(3).map(String::as_str).collect();
        out.push(finding(
            Signal::FailedAction,
            weights::FAILED_ACTION,
            prose![
                format!(
                    "`sed` replaces `{}` with no word boundary: it also renames {}, which the search at step ",
                    crate::text::clip(&old, 30),
                    names.join(", ")
                ),
                Part::Step(r),
                " showed"
            ],
        ));
        return;
    }
}

// ---------------------------------------------------------------------------------------------
// An edit of the installed copy
// ---------------------------------------------------------------------------------------------

/// Folders that hold installed code, outside any repository: Python's `site-packages` and
/// `dist-packages`, `node_modules`.
const INSTALLED: [&str; 3] = ["site-packages", "dist-packages", "node_modules"];

/// Whether a path lies in installed code or an environment: under one of [`INSTALLED`], under
/// `/usr/lib/` or `/usr/local/lib/`, or in a virtualenv (`.venv`, `venv`, `.virtualenvs`, `.tox`,
/// `.nox`).
fn installed_path(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    parts.iter().any(|p| INSTALLED.contains(p) || matches!(*p, ".venv" | "venv" | ".virtualenvs" | ".tox" | ".nox"))
        || path.starts_with("/usr/lib/")
        || path.starts_with("/usr/local/lib/")
}

/// The module path of an installed file: what follows the last folder of [`INSTALLED`]
/// (`prettytable/prettytable.py` of `/usr/local/lib/python3.11/site-packages/prettytable/
/// prettytable.py`), else what follows `lib/pythonX.Y/` or `lib/`; `None` when fewer than two
/// parts (a folder and a file) follow.
fn module_path(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split('/').collect();
    let at = parts
        .iter()
        .rposition(|p| INSTALLED.contains(p))
        .or_else(|| parts.iter().rposition(|p| p.starts_with("python") && p.contains('.')))
        .or_else(|| parts.iter().rposition(|p| *p == "lib"))?;
    let rest = &parts[at + 1..];
    (rest.len() >= 2 && rest.iter().all(|p| !p.is_empty())).then(|| rest.join("/"))
}

/// A path another step writes that ends with `tail` and lies outside installed code
/// ([`installed_path`]): the repository's own copy of the module (`/testbed/src/prettytable/
/// prettytable.py`).
fn repository_copy(text: &str, tail: &str) -> Option<String> {
    let stop = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '(' | '[' | '=' | ',');
    text.match_indices(tail).find_map(|(i, _)| {
        let end = i + tail.len();
        if text[end..].chars().next().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            return None;
        }
        let start = text[..i].char_indices().rev().take_while(|&(_, c)| !stop(c)).last().map_or(i, |(k, _)| k);
        let path = &text[start..end];
        let whole = start == i || path[..i - start].ends_with('/');
        (whole && !installed_path(path)).then(|| path.to_string())
    })
}

/// Step `i` edits a file of installed code (an absolute path under `site-packages`,
/// `dist-packages`, `node_modules`, `/usr/lib`, a virtualenv: [`installed_path`]) while a step
/// within [`EDIT_HISTORY_WINDOW`] steps before it (a search, a listing, the task) shows the
/// repository's own copy of the same module ([`module_path`], [`repository_copy`]): the change
/// misses the repository. The checks after it pass because they import the installed copy; the
/// repository's diff does not hold the fix.
pub(super) fn outside_repository(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let content = &t.steps[i].content;
    let installed = INSTALLED.iter().any(|m| content.contains(m))
        || ["/usr/lib/", "/usr/local/lib/", "venv", ".tox", ".nox"].iter().any(|m| content.contains(m));
    if t.steps[i].kind != StepKind::ToolCall || !installed || !edits(t, i) || call_error(ctx, i).is_some() {
        return;
    }
    let Some((path, tail)) = edited_files(t, i)
        .into_iter()
        .filter(|p| p.starts_with('/') && installed_path(p))
        .find_map(|p| module_path(&p).map(|m| (p, m)))
    else {
        return;
    };
    let start = i.saturating_sub(EDIT_HISTORY_WINDOW);
    let Some((k, copy)) = (start..i).find_map(|k| repository_copy(&t.steps[k].content, &tail).map(|c| (k, c))) else {
        return;
    };
    // The installed path from its `site-packages` (or the like) on, to keep the reason short.
    let shown = INSTALLED
        .iter()
        .filter_map(|m| path.rfind(&format!("/{m}/")).map(|k| &path[k + 1..]))
        .min_by_key(|p| p.len())
        .unwrap_or(&path);
    out.push(finding(
        Signal::FailedAction,
        weights::FAILED_ACTION,
        prose![
            format!(
                "edits the installed copy {}, not the repository's {} (step ",
                crate::text::clip(shown, 60),
                crate::text::clip(&copy, 50)
            ),
            Part::Step(k),
            "): checks run that copy; the repository's diff lacks the fix"
        ],
    ));
}

// ---------------------------------------------------------------------------------------------
// An error silenced, and code deleted by an automatic fixer
// ---------------------------------------------------------------------------------------------

/// The exception classes an added `except` clause catches (`except AttributeError:`, `except
/// (KeyError, ValueError) as e:`), with `*` for one that catches everything (a bare `except:`,
/// `except Exception`, `except BaseException`, a JavaScript `catch`).
fn caught(line: &str) -> Vec<String> {
    static EXCEPT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:\}\s*)?(?:except\b\s*(\(?[\w., ]*\)?)?(?:\s+as\s+\w+)?\s*:|catch\b)").unwrap()
    });
    let Some(c) = EXCEPT.captures(line) else { return Vec::new() };
    let classes: Vec<String> = c
        .get(1)
        .map(|m| {
            // `except ValueError as exc:`: the name bound is no class.
            let group = m.as_str();
            let group = group.split_once(" as ").map_or(group, |(classes, _)| classes);
            group.trim_matches(['(', ')', ' ']).split(',').map(|x| x.trim().to_string()).collect()
        })
        .unwrap_or_default();
    let classes: Vec<String> = classes.into_iter().filter(|x| !x.is_empty()).collect();
    if classes.is_empty() || classes.iter().any(|x| matches!(x.as_str(), "Exception" | "BaseException")) {
        return vec!["*".into()];
    }
    classes
}

/// Whether a line of an exception handler does nothing in the error's place: `pass`, `...`,
/// `continue`, `break`, a `return`, a print or a log call (`print(`, `log.warning(`,
/// `logger.`, `logging.`, `warnings.warn(`, `console.`), a comment, a closing brace.
fn silent(line: &str) -> bool {
    static SILENT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:pass|\.\.\.|continue|break|return\b.*|\}|#.*|//.*|(?:print|console\.\w+|log\w*\.\w+|logger\.\w+|logging\.\w+|warnings\.warn|sys\.stderr\.write)\s*\(.*)$").unwrap()
    });
    SILENT.is_match(line.trim())
}

/// The exception class an error output names (`AttributeError: 'DataFrame' object has no
/// attribute 'map'`): the first word of eight characters or more ending in `Error` or
/// `Exception` that opens a line or follows `: `.
fn exception_class(text: &str) -> Option<String> {
    static CLASS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?m)(?:^|: |\s)(?:\w+\.)*(\w{3,}(?:Error|Exception))\b:").unwrap());
    CLASS.captures_iter(text).last().map(|c| c[1].to_string())
}

/// Step `e`, an edit that puts a `try` around a line of code that failed at an earlier output of
/// the same agent (within [`EDIT_HISTORY_WINDOW`] steps: the traceback quotes the line, which `e`
/// removes and adds back) and catches the exception that output names (or everything): the
/// error is silenced, not fixed ("wraps the line that failed at step 11 … in try/except
/// AttributeError instead of fixing it"), when the handler only passes, logs or returns
/// ([`silent`]); a handler that does the work another way (`import tomli as tomllib`) is a
/// fallback. The run that passes after it proves nothing: the code
/// that failed is skipped.
pub(super) fn masks_error(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let content = &t.steps[e].content;
    if t.steps[e].kind != StepKind::ToolCall || !(content.contains("except") || content.contains("catch")) {
        return;
    }
    if !edits(t, e) || call_error(ctx, e).is_some() {
        return;
    }
    let Some((removed, added)) = edit_lines(t, e) else { return };
    let catches: Vec<String> = added.iter().flat_map(|l| caught(l)).collect();
    if catches.is_empty()
        || removed.iter().any(|l| !caught(l).is_empty())
        || !added.iter().any(|l| l.starts_with("try"))
    {
        return;
    }
    // The handler does something else instead (`import tomli as tomllib`): a fallback, not a
    // silenced error. Only a handler that passes, logs or returns silences it.
    // The handler ends at its first jump (`continue`, `break`, `return`, `raise`, `throw`): the
    // lines after it are the code after the `try`, not the handler (the lines are read without
    // their indentation).
    let mut handler: Vec<&String> = Vec::new();
    for l in added.iter().skip_while(|l| caught(l).is_empty()).skip(1) {
        handler.push(l);
        if JUMP.is_match(l) {
            break;
        }
    }
    if !handler.iter().all(|l| silent(l)) {
        return;
    }
    // A handler that skips to the next item (`continue`) does what a task that asks to skip bad
    // items asks, unless the task also asks for each skipped one to be recorded, which the
    // handler does not do.
    let skips = handler.iter().any(|l| l.trim_end_matches(';') == "continue");
    let task = &t.task;
    let asked = if skips && SKIP_ASKED.is_match(task) {
        let Some(m) = RECORD_ASKED.find(task) else { return };
        Some(clause_from(task, m.start()))
    } else {
        None
    };
    let kept: Vec<&String> = removed.iter().filter(|l| l.len() >= 8 && added.contains(l)).collect();
    if kept.is_empty() {
        return;
    }
    let agent = &t.steps[e].agent;
    let start = e.saturating_sub(EDIT_HISTORY_WINDOW);
    let shown = (start..e).rev().find_map(|r| {
        let s = &t.steps[r];
        if s.kind != StepKind::ToolResult || !super::shows_failure(ctx, r) {
            return None;
        }
        let q = links(ctx).produced_by.get(r).copied().flatten()?;
        if t.steps[q].agent != *agent {
            return None;
        }
        let class = exception_class(&s.content)?;
        if !catches.iter().any(|x| x == "*" || *x == class || x.ends_with(&format!(".{class}"))) {
            return None;
        }
        let line = kept.iter().find(|l| s.content.lines().any(|x| x.trim() == l.as_str()))?;
        Some((r, class, line.to_string()))
    });
    let Some((r, class, line)) = shown else { return };
    let why = match asked {
        Some(said) => {
            format!(
                ", in try/except {class} and skips it unrecorded; the task says to \"{}\"",
                crate::text::clip(&said, 56)
            )
        }
        None => format!(", in try/except {class} instead of fixing it: the error is silenced, not recovered"),
    };
    out.push(finding(
        Signal::FailedAction,
        weights::FAILED_ACTION,
        prose![format!("wraps `{}`, which failed at step ", crate::text::clip(&line, 50)), Part::Step(r), why],
    ));
}

/// A handler line that leaves it: `continue`, `break`, a `return`, `raise` or `throw`.
static JUMP: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(?:continue|break|return|raise|throw)\b").unwrap());

/// A task that asks for bad items to be skipped: "skip them", "skip malformed rows", "ignore
/// invalid lines", "drop bad records", "must not crash".
static SKIP_ASKED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:skip|skipping|ignore|ignoring|drop|dropping|must not crash|should not crash|shouldn't crash)\b",
    )
    .unwrap()
});

/// A task that asks for what is skipped to be recorded, as an instruction whose object is the
/// skipped items: "record each one", "collect the errors", "keep track of them", "report every
/// rejected row", "count them" (not "the customer reports a crash").
static RECORD_ASKED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b(?:record|collect|keep track of|track|report|count|list)\s+",
        r"(?:each|every|all|them|those|these|the (?:skipped|rejected|failed|failing|bad|invalid|malformed|errors?))\b"
    ))
    .unwrap()
});

/// The words of `text` from byte `at` to the end of their sentence (a `.`, `!` or `?` followed
/// by a space, or a line break), trimmed.
fn clause_from(text: &str, at: usize) -> String {
    let rest = &text[at..];
    let end = [". ", "! ", "? ", "\n"].iter().filter_map(|p| rest.find(p).map(|k| k + 1)).min().unwrap_or(rest.len());
    rest[..end].trim().to_string()
}

/// The name an error output says is missing: `has no attribute 'x'`, `cannot import name 'x'`,
/// `name 'x' is not defined`, `has no exported member 'x'`, `does not provide an export named
/// 'x'`, `x is not defined`, Go's `undefined: x`, Rust's ``cannot find value `x` ``.
fn missing_name(text: &str) -> Option<String> {
    static MISSING: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(
            r#"has no attribute '(\w+)'|cannot import name '(\w+)'|name '(\w+)' is not defined"#,
            r#"|has no exported member '(\w+)'|does not provide an export named '(\w+)'"#,
            r#"|(?:^|\s)(\w+) is not defined|undefined: (\w+)|cannot find (?:value|function|type) `(\w+)`"#
        ))
        .unwrap()
    });
    MISSING.captures(text).and_then(|c| c.iter().skip(1).flatten().next()).map(|m| m.as_str().to_string())
}

/// Step `c`, a shell call that runs an automatic fixer in its unsafe mode ([`shell::UNSAFE_FIXES`]),
/// when the same agent's first failing call after it (within [`EDIT_HISTORY_WINDOW`] steps, with
/// no edit of the agent in between) fails on a missing name ([`missing_name`]) that an output
/// before `c` showed (the fixer's own report of what it would remove, a `cat` of the file): the
/// fixer deleted code that was used, and the check that then fails is its symptom.
pub(super) fn unsafe_fix(ctx: &Context<'_>, c: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let content = &t.steps[c].content;
    if t.steps[c].kind != StepKind::ToolCall || !shell::UNSAFE_FIXES.iter().any(|(_, o)| content.contains(o)) {
        return;
    }
    let Some(cmd) = call_command(t, c) else { return };
    if call_error(ctx, c).is_some() {
        return;
    }
    let mode = shell::commands(&cmd).iter().find_map(shell::unsafe_fix);
    let Some((program, option)) = mode else { return };
    let agent = &t.steps[c].agent;
    let end = t.steps.len().min(c + 1 + EDIT_HISTORY_WINDOW);
    let failing = (c + 1..end)
        .filter(|&k| t.steps[k].kind == StepKind::ToolCall && t.steps[k].agent == *agent)
        .take_while(|&k| !edits(t, k))
        .find_map(|k| result_of(ctx, k).filter(|&r| super::check_fails(ctx, r)));
    let Some(r) = failing else { return };
    let Some(name) = missing_name(&t.steps[r].content) else { return };
    let start = c.saturating_sub(EDIT_HISTORY_WINDOW);
    let Some(seen) = (start..c)
        .find(|&j| t.steps[j].kind == StepKind::ToolResult && super::contains_word(&t.steps[j].content, &name))
    else {
        return;
    };
    out.push(finding(
        Signal::FailedAction,
        weights::FAILED_ACTION,
        prose![
            format!(
                "runs {program} with `{option}`, which deletes code: `{}` (shown at step ",
                crate::text::clip(&name, 40)
            ),
            Part::Step(seen),
            ") is missing when step ",
            Part::Step(r),
            " fails"
        ],
    ));
}

// ---------------------------------------------------------------------------------------------
// A deduplication that the agent's own check shows incomplete
// ---------------------------------------------------------------------------------------------

/// Calls that drop duplicate rows (pandas' `drop_duplicates(`, Spark's `dropDuplicates(`,
/// polars' `unique(subset=`).
const DEDUPLICATES: [&str; 3] = ["drop_duplicates(", "dropDuplicates(", "unique(subset"];

/// Calls that count or mark duplicates (pandas' `duplicated(`, polars' `is_duplicated(`).
const FINDS_DUPLICATES: [&str; 2] = ["duplicated(", "is_duplicated("];

/// String normalisations a key can go through before it is compared (`.str.strip().str.lower()`,
/// `.casefold()`, `unicodedata.normalize(`).
const NORMALISES: [&str; 8] =
    [".lower(", ".strip(", ".casefold(", ".upper(", ".lstrip(", ".rstrip(", "normalize(", "unidecode("];

/// Step `d`, a call of code that ran without error and drops duplicates ([`DEDUPLICATES`]), when
/// a later call of the same agent (within [`EDIT_HISTORY_WINDOW`] steps, and the last such call
/// before the check) counts duplicates ([`FINDS_DUPLICATES`]) on a key normalised in a way `d`'s
/// code is not ([`NORMALISES`]: `.str.strip().str.lower()`), ran without error and printed a
/// count above zero on the first line of its output with a number, and then the agent neither
/// drops duplicates again nor states that count in its final output: the agent's own sanity check
/// showed duplicates the kept code leaves, and the answer ignores them ("drops duplicates on the
/// key as written; the agent's check at step 18 adds `.lower(`, `.strip(` and finds `119 58`
/// left (step 19), which the final output at step 23 leaves out").
pub(super) fn dedupe_incomplete(ctx: &Context<'_>, d: usize, out: &mut Vec<Finding>) {
    static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b\d+\b").unwrap());
    let t = ctx.trajectory;
    let s = &t.steps[d];
    let drops = |text: &str| DEDUPLICATES.iter().any(|w| text.contains(w));
    if s.kind != StepKind::ToolCall || !drops(&s.content) || call_command(t, d).is_some() {
        return;
    }
    if result_of(ctx, d).is_none() || call_error(ctx, d).is_some() {
        return;
    }
    let calls_of_agent = |from: usize, to: usize| {
        (from..to.min(t.steps.len())).filter(|&k| t.steps[k].kind == StepKind::ToolCall && t.steps[k].agent == s.agent)
    };
    let end = d + 1 + EDIT_HISTORY_WINDOW;
    // The first later call that counts duplicates, with no dedupe of the agent between.
    let Some(k) = calls_of_agent(d + 1, end)
        .take_while(|&k| !drops(&t.steps[k].content) || call_error(ctx, k).is_some())
        .find(|&k| FINDS_DUPLICATES.iter().any(|w| t.steps[k].content.contains(w)))
    else {
        return;
    };
    let normalised: Vec<&str> =
        NORMALISES.iter().copied().filter(|w| t.steps[k].content.contains(w) && !s.content.contains(w)).collect();
    if normalised.is_empty() || call_error(ctx, k).is_some() {
        return;
    }
    let Some(r) = result_of(ctx, k) else { return };
    let Some(line) = t.steps[r].content.lines().find(|l| NUMBER.is_match(l)) else { return };
    let counts: Vec<&str> =
        NUMBER.find_iter(line).map(|m| m.as_str()).filter(|n| n.parse::<u64>().is_ok_and(|v| v > 0)).collect();
    if counts.is_empty() || calls_of_agent(k + 1, k + 1 + EDIT_HISTORY_WINDOW).any(|j| drops(&t.steps[j].content)) {
        return;
    }
    let Some(f) = super::final_step(ctx).filter(|&f| f > r) else { return };
    if counts.iter().any(|n| super::contains_word(&t.steps[f].content, n)) {
        return;
    }
    let used: Vec<String> = normalised.iter().map(|w| format!("`{w}`")).collect();
    out.push(finding(
        Signal::FailedAction,
        weights::FAILED_ACTION,
        prose![
            "drops duplicates on the key as written; the agent's check at step ",
            Part::Step(k),
            format!(" adds {} and finds `{}` left (step ", used.join(", "), crate::text::clip(line.trim(), 30)),
            Part::Step(r),
            "), which the final output at step ",
            Part::Step(f),
            " leaves out"
        ],
    ));
}

// ---------------------------------------------------------------------------------------------
// A dependency pinned past a version the user stressed
// ---------------------------------------------------------------------------------------------

/// Step `e`, an edit, writes a release of a dependency (`urllib3==2.2.2`: the release's version
/// as a word of the edit) that an earlier tool output (within [`EDIT_HISTORY_WINDOW`] steps)
/// states needs a newer version of a language or runtime than one a turn of the served user
/// before that output stresses (a sentence with [`constraints::VERSION`] and
/// [`constraints::STRESSED`] words, through [`constraints::sentences`]: "pyfetchr still supports
/// Python 3.7 … has to install on 3.7"): the output names the requirement (`requires`, with the
/// language's name: PyPI's `requires_python`, `Requires-Python`, `python_requires`) and, on one
/// line, the release's version (three parts, `2.2.2`) beside a minimum above the user's (`>=3.8`).
/// The edit breaks the constraint the tool result showed; the checks after it ran on a newer
/// runtime and prove nothing about it.
pub(super) fn pinned_past_constraint(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    static MINIMUM: LazyLock<Regex> = LazyLock::new(|| Regex::new(r">=?\s*(\d+(?:\.\d+){0,2})\b").unwrap());
    static RELEASE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b\d+\.\d+\.\d+(?:\.\d+)?\b").unwrap());
    let t = ctx.trajectory;
    if t.steps[e].kind != StepKind::ToolCall || !edits(t, e) || call_error(ctx, e).is_some() {
        return;
    }
    let content = &t.steps[e].content;
    if !RELEASE.is_match(content) {
        return;
    }
    let agent = &t.steps[e].agent;
    let start = e.saturating_sub(EDIT_HISTORY_WINDOW);
    // The outputs of the agent that name a requirement, before anything else is read.
    let named: Vec<usize> = (start..e)
        .rev()
        .filter(|&r| {
            let s = &t.steps[r];
            s.kind == StepKind::ToolResult && s.agent == *agent && s.content.contains("equires")
        })
        .collect();
    if named.is_empty() {
        return;
    }
    let stressed = constraints::stressed_versions(ctx, e);
    if stressed.is_empty() {
        return;
    }
    for r in named {
        let s = &t.steps[r];
        let low = s.content.to_lowercase();
        for constraints::Stressed { step: u, name, version, parts } in &stressed {
            if *u > r || !low.contains(&name.to_lowercase()) {
                continue;
            }
            for line in s.content.lines() {
                let Some(m) = MINIMUM.captures(line) else { continue };
                if !version_parts(&m[1]).is_some_and(|p| above(&p, parts)) {
                    continue;
                }
                let Some(release) = RELEASE
                    .find_iter(line)
                    .map(|x| x.as_str())
                    .find(|v| super::contains_word(content, v) && !m[1].starts_with(*v))
                else {
                    continue;
                };
                out.push(finding(
                    Signal::IgnoredResult,
                    weights::MISREAD,
                    prose![
                        format!("writes {release}, which the output at step "),
                        Part::Step(r),
                        format!(
                            " says requires {} {} (`{}`), although the user stressed {} {version} at step ",
                            name,
                            crate::text::clip(&m[0], 20),
                            crate::text::clip(line.trim(), 60),
                            name
                        ),
                        Part::Step(*u)
                    ],
                ));
                return;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The other copy of a function defined twice
// ---------------------------------------------------------------------------------------------

/// Step `e`, the agent's first edit of a file (within [`EDIT_HISTORY_WINDOW`] steps), when the
/// task names a function (`parse_amount()`), an earlier output of the agent's search lists it
/// defined in two files or more (`path:line:def parse_amount(`, as `grep -n` writes it) and
/// imported (`from billing.money import parse_amount`) by a file whose name the task says
/// (`billing/invoice.py` for "invoice line totals"), `e` edits a copy other than the one that file
/// imports, and no edit of the agent after it (within the window) touches the imported copy: the
/// fix went into a copy the caller the user named does not use ("edits the copy of
/// `parse_amount` in billing/legacy/money_v1.py; the search at step 8 shows billing/invoice.py
/// importing the one in billing/money.py, which the run never edits").
pub(super) fn other_copy_edited(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    static NAMED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b([A-Za-z_][A-Za-z0-9_]{3,})\(\)").unwrap());
    static GREP: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?m)^(?:\./)?([\w./-]+):\d+:(.*)$").unwrap());
    let t = ctx.trajectory;
    if t.steps[e].kind != StepKind::ToolCall || !edits(t, e) || !t.task.contains("()") {
        return;
    }
    // The added lines of an edit of several files are not told apart: only an edit of one file is
    // read.
    let files = edited_files(t, e);
    if files.len() != 1 {
        return;
    }
    let Some(file) = files.first() else { return };
    let agent = &t.steps[e].agent;
    let start = e.saturating_sub(EDIT_HISTORY_WINDOW);
    let same_file = |j: usize| edited_files(t, j).iter().any(|f| f == file);
    if (start..e)
        .any(|j| t.steps[j].agent == *agent && t.steps[j].kind == StepKind::ToolCall && edits(t, j) && same_file(j))
    {
        return;
    }
    let task = t.task.to_lowercase();
    for m in NAMED.captures_iter(&t.task) {
        let name = &m[1];
        for r in (start..e).rev() {
            let s = &t.steps[r];
            if s.kind != StepKind::ToolResult || s.agent != *agent || !s.content.contains(name) {
                continue;
            }
            let mut defined: Vec<&str> = Vec::new();
            let mut used: Option<(String, String)> = None;
            for g in GREP.captures_iter(&s.content) {
                let (path, text) = (g.get(1).map_or("", |x| x.as_str()), g.get(2).map_or("", |x| x.as_str()).trim());
                let defines = ["def ", "function ", "func ", "fn "]
                    .iter()
                    .any(|k| text.starts_with(k) && text[k.len()..].starts_with(&format!("{name}(")));
                if defines && !defined.contains(&path) {
                    defined.push(path);
                }
                // `from MODULE import … NAME` in a file whose name the task says.
                let stem = file_name(path).split('.').next().unwrap_or("");
                if let Some(rest) = text.strip_prefix("from ")
                    && let Some((module, names)) = rest.split_once(" import ")
                    && names.split([',', ' ', '(', ')']).any(|n| n == name)
                    && stem.len() >= 5
                    && task.split(|c: char| !c.is_alphanumeric()).any(|w| w.starts_with(&stem.to_lowercase()))
                {
                    used = Some((path.to_string(), module.trim().replace('.', "/")));
                }
            }
            let Some((caller, module)) = used else { continue };
            if defined.len() < 2 {
                continue;
            }
            let Some(imported) = defined
                .iter()
                .find(|p| p.trim_end_matches(".py") == module || p.trim_end_matches("/__init__.py") == module)
            else {
                continue;
            };
            let edited_copy = defined.iter().any(|p| *p != *imported && file.ends_with(*p));
            if !edited_copy || file.ends_with(*imported) {
                continue;
            }
            let end = t.steps.len().min(e + 1 + EDIT_HISTORY_WINDOW);
            if (e + 1..end).any(|j| {
                t.steps[j].agent == *agent && edits(t, j) && edited_files(t, j).iter().any(|f| f.ends_with(*imported))
            }) {
                return;
            }
            let copy = defined.iter().find(|p| file.ends_with(**p)).copied().unwrap_or(file.as_str());
            out.push(finding(
                Signal::FailedAction,
                weights::FAILED_ACTION,
                prose![
                    format!("edits the copy of `{name}` in {copy}; the search at step "),
                    Part::Step(r),
                    format!(" shows {caller} importing the one in {imported}, which the run never edits")
                ],
            ));
            return;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// An edit its reproduction shows changed nothing
// ---------------------------------------------------------------------------------------------

/// An agent's words that the fix took effect: "now", "fixed", "works", "resolved", "correctly",
/// "as expected".
static FIX_CLAIM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(now|fixed|fixes|works|working|resolved|correctly|as expected|succeed(?:s|ed)?)\b").unwrap()
});

/// An agent's words that nothing changed: "still", "unchanged", "the same", "didn't", "not yet".
static NO_CHANGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(still|unchanged|the same|didn'?t|did not|doesn'?t|does not|hasn'?t|has not|no change|not yet)\b",
    )
    .unwrap()
});

/// The script shell call `c` runs: the file an interpreter (`python`, `node`, `ruby`, `bash`,
/// `sh`…) is given (`reproduce.py` of `cd /testbed && python reproduce.py`).
fn script_run(t: &Trajectory, c: usize) -> Option<String> {
    let cmd = call_command(t, c)?;
    shell::commands(&cmd).iter().find_map(|x| {
        let inv = x.invocation()?;
        let interpreter = inv.program.starts_with("python")
            || matches!(inv.program, "node" | "ruby" | "bash" | "sh" | "deno" | "bun" | "php" | "perl");
        let script = inv.args.iter().map(|w| w.text.as_str()).find(|w| !w.starts_with('-'))?;
        (interpreter && script.contains('.')).then(|| script.to_string())
    })
}

/// An output's lines, each trimmed, empty ones left out, to compare two runs' outputs.
fn output_lines(text: &str) -> Vec<&str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect()
}

/// Step `e`, the agent's first edit of the code ([`edits_code`]) after it ran its own
/// reproduction script ([`script_run`], [`made_by_agent`]; no other edit between), when the next
/// run of the same command line after it (within [`EDIT_HISTORY_WINDOW`] steps) prints the same
/// output, line for line, and a later thought or message of the agent, before its next edit,
/// says the fix took effect ([`FIX_CLAIM`]) without saying nothing changed ([`NO_CHANGE`]): the
/// edit changed nothing of the behaviour it was meant to change, and the claim misreads the
/// re-run. Checks that pass after it prove nothing (they passed before too).
pub(super) fn rerun_unchanged(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if t.steps[e].kind != StepKind::ToolCall || !edits(t, e) || call_error(ctx, e).is_some() {
        return;
    }
    let agent = &t.steps[e].agent;
    // The agent's last call before the edit that runs a script, with no edit between (checked
    // cheaply here; that the script is the agent's own is checked last).
    let mut before = None;
    for j in (e.saturating_sub(EDIT_HISTORY_WINDOW)..e).rev() {
        let s = &t.steps[j];
        if s.kind != StepKind::ToolCall || s.agent != *agent {
            continue;
        }
        if edits(t, j) {
            return;
        }
        if let Some(script) = script_run(t, j) {
            before = Some((j, script));
            break;
        }
    }
    let Some((rc, script)) = before else { return };
    let Some(line) = call_command(t, rc) else { return };
    let Some(r0) = result_of(ctx, rc) else { return };
    let was = output_lines(&t.steps[r0].content);
    if was.is_empty() {
        return;
    }
    let end = t.steps.len().min(e + 1 + EDIT_HISTORY_WINDOW);
    let Some(k) = (e + 1..end).find(|&k| {
        t.steps[k].kind == StepKind::ToolCall
            && t.steps[k].agent == *agent
            && t.steps[k].content.contains(script.as_str())
            && call_command(t, k).is_some_and(|x| x.trim() == line.trim())
    }) else {
        return;
    };
    let Some(r1) = result_of(ctx, k) else { return };
    if output_lines(&t.steps[r1].content) != was {
        return;
    }
    let Some(claim) = (r1 + 1..end)
        .take_while(|&m| !(t.steps[m].kind == StepKind::ToolCall && t.steps[m].agent == *agent && edits(t, m)))
        .find(|&m| {
            let s = &t.steps[m];
            s.agent == *agent
                && matches!(s.kind, StepKind::Thought | StepKind::Message)
                && FIX_CLAIM.is_match(&s.content)
                && !NO_CHANGE.is_match(&s.content)
        })
    else {
        return;
    };
    if super::refused_call(ctx, e) || !edits_code(t, e) || !made_by_agent(t, &script, rc) {
        return;
    }
    out.push(finding(
        Signal::FailedAction,
        weights::FAILED_ACTION,
        prose![
            format!("`{}` prints the same after this edit (step ", crate::text::clip(&line, 50)),
            Part::Step(r1),
            ") as before it (step ",
            Part::Step(r0),
            "), yet step ",
            Part::Step(claim),
            " says the fix works: the edit changed nothing"
        ],
    ));
}

// ---------------------------------------------------------------------------------------------
// A version pinned inside the vulnerable range an audit printed
// ---------------------------------------------------------------------------------------------

/// Whether version `v` satisfies one comparator (`<7.0.5`, `>=7.0.0`, `=7.0.3`, a bare version).
fn satisfies(v: &[u32], comparator: &str) -> bool {
    let (op, version) = match comparator.find(|c: char| c.is_ascii_digit()) {
        Some(k) => comparator.split_at(k),
        None => return false,
    };
    let Some(w) = version_parts(version.trim_start_matches('v')) else { return false };
    match op.trim() {
        "<" => above(&w, v),
        "<=" => !above(v, &w),
        ">" => above(v, &w),
        ">=" => !above(&w, v),
        "" | "=" | "==" => !above(v, &w) && !above(&w, v),
        _ => false,
    }
}

/// Whether version `v` is in a range as npm audit writes it (`<6.0.6 || >=7.0.0 <7.0.5`): one of
/// the `||` alternatives whose comparators (separated by spaces) it all satisfies. `false` for
/// a text that is no range.
fn in_range(v: &[u32], range: &str) -> bool {
    range.split("||").any(|alt| {
        let parts: Vec<&str> = alt.split_whitespace().collect();
        !parts.is_empty() && parts.iter().all(|c| satisfies(v, c))
    })
}

/// Step `e`, an edit of a manifest, writes a dependency's exact version (`"cross-spawn":
/// "7.0.3"` in JSON, `name==1.2.3`, `name@1.2.3`; `=` and `v` accepted, not `^`, `~`, `>=`)
/// that an earlier output of an audit (a text that says `vulnerab…`, within
/// [`EDIT_HISTORY_WINDOW`] steps) lists as vulnerable: a line that opens with the package's
/// name followed by a range of comparators (npm audit's `cross-spawn  <6.0.6 || >=7.0.0 <7.0.5`)
/// which the version is in ([`in_range`]). The pin keeps the vulnerability the task is about;
/// the install after it succeeds either way.
pub(super) fn pinned_vulnerable(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    static PIN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#""(@?[\w.\-/]+)"\s*:\s*"[=v]?(\d+\.\d+\.\d+)"|\b([\w.\-]+)==(\d+\.\d+\.\d+)\b|(@?[\w.\-/]+)@[=v]?(\d+\.\d+\.\d+)\b"#)
            .unwrap()
    });
    let t = ctx.trajectory;
    if t.steps[e].kind != StepKind::ToolCall || !edits(t, e) || call_error(ctx, e).is_some() {
        return;
    }
    let Some((_, added)) = edit_lines(t, e) else { return };
    let pins: Vec<(String, String)> = added
        .iter()
        .flat_map(|l| PIN.captures_iter(l).collect::<Vec<_>>())
        .filter_map(|c| {
            let name = c.get(1).or(c.get(3)).or(c.get(5))?.as_str().to_string();
            let version = c.get(2).or(c.get(4)).or(c.get(6))?.as_str().to_string();
            Some((name, version))
        })
        .collect();
    if pins.is_empty() {
        return;
    }
    for r in (e.saturating_sub(EDIT_HISTORY_WINDOW)..e).rev() {
        let s = &t.steps[r];
        if s.kind != StepKind::ToolResult || !s.content.to_ascii_lowercase().contains("vulnerab") {
            continue;
        }
        for (name, version) in &pins {
            let Some(v) = version_parts(version) else { continue };
            let listed = s.content.lines().find_map(|l| {
                let rest = l.trim_start().strip_prefix(name.as_str())?;
                let range = rest.trim();
                (rest.starts_with(char::is_whitespace) && range.starts_with(['<', '>', '=']) && in_range(&v, range))
                    .then_some(range)
            });
            if let Some(range) = listed {
                out.push(finding(
                    Signal::IgnoredResult,
                    weights::MISREAD,
                    prose![
                        format!(
                            "pins {name} to {version}, inside the vulnerable range `{}` the audit at step ",
                            crate::text::clip(range, 40)
                        ),
                        Part::Step(r),
                        " printed: the vulnerability stays"
                    ],
                ));
                return;
            }
        }
    }
}
