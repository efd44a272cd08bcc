//! Readings of coding-agent sessions that several findings share (docs/METHODS.md, "Coding-agent
//! sessions"): a scratch file the agent made and removed, an edit the agent made again after the
//! editor refused it, a `sed -i` that changed nothing, and a fix never checked against the
//! reproduction of the reported failure.
//!
//! Every rule reads the calls, their command lines ([`super::shell`]) and their outputs only: no
//! tool, file or benchmark is named.

use std::sync::LazyLock;

use regex::Regex;

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
    let writes = changed_paths(t, first).iter().any(|(p, how)| *how == Change::Edits && file_name(p) == name);
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
/// same file ([`edited_file`]), within [`EDIT_RETRY_WINDOW`] steps, succeeded. The agent read
/// the refusal and corrected its edit; the refusal is part of the work.
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
        .is_some_and(|k| result_of(ctx, k).is_some() && call_error(ctx, k).is_none())
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
    let Some(cmd) = call_command(t, c) else { return false };
    if call_error(ctx, c).is_none() {
        return false;
    }
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
fn edits_code(t: &Trajectory, i: usize) -> bool {
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
/// other way (a call after it that is no edit), and then reports to the reader: the fix was
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
    let checked = (i + 1..t.steps.len()).any(|k| t.steps[k].kind == StepKind::ToolCall && !edits(t, k));
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
