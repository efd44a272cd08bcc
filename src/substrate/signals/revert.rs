//! Whether a later step undid an edit. The one reader of reverts: an edit its agent reverted is no
//! finding (`coding::reverted`, docs/METHODS.md, "Coding-agent sessions"), and a verdict that
//! still names a reverted edit (the ranking's, another method's) says so ([`reverted_at`]):
//! otherwise its dependency path, which runs on through later edits, reads as if the edit were
//! still in the code the run leaves behind.

use serde_json::Value;

use crate::model::{StepKind, Trajectory};
use crate::substrate::LinkIndex;
use crate::substrate::signals::{self, shell};

/// A later step that undid an edit ([`reverted_at`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revert {
    /// The step that undid it, 0-based.
    pub step: usize,
    /// How, in a few words: the command (`git checkout -- src/a.ts`, unsanitised, as written)
    /// or `an inverse edit of FILE`.
    pub how: String,
}

/// One file an edit changed, with the text it replaced and the text it wrote when the call says
/// them (an `old_string`/`new_string` pair, a patch's removed and added lines).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Change {
    path: String,
    old: Option<String>,
    new: Option<String>,
}

/// The later step that reverts the edit at step `edit`, if one does: a command that restores the
/// edited file from git (`git checkout [REV] -- FILE`, `git restore FILE` without `--staged`
/// alone, of the file, a folder holding it or the whole tree, or `git reset --hard`), puts the
/// work aside (`git stash`, `git stash push`, not popped or applied in the same command line), or
/// a later edit of the same file that writes back what the edit replaced (its old and new text
/// swapped). Every file the edit changed must be restored; a reverting command whose result is
/// marked an error does not count, and neither does a revert after which the same change is made
/// again. `None` when step `edit` is no file edit or nothing undoes it. Reads every later step:
/// for one verdict; findings use [`reverted_within`].
pub fn reverted_at(t: &Trajectory, edit: usize) -> Option<Revert> {
    reverted_within(t, &LinkIndex::build(t), edit, usize::MAX)
}

/// [`reverted_at`] with the run's links given and only the `window` steps after the edit read
/// (for the revert, and for the same change made again).
pub(crate) fn reverted_within(t: &Trajectory, links: &LinkIndex, edit: usize, window: usize) -> Option<Revert> {
    if edit >= t.steps.len() || !signals::edits(t, edit) {
        return None;
    }
    let changes = changes(t, edit);
    if changes.is_empty() {
        return None;
    }
    let end = t.steps.len().min(edit.saturating_add(1).saturating_add(window));
    let failed = |k: usize| links.result_of.get(k).copied().flatten().is_some_and(|r| t.steps[r].is_error);
    for k in edit + 1..end {
        let s = &t.steps[k];
        if s.kind != StepKind::ToolCall || failed(k) {
            continue;
        }
        let found = match command_line(t, k) {
            // Only a `git` command restores files.
            Some(line) if line.contains("git") => restores(&line, &changes).map(|how| Revert { step: k, how }),
            Some(_) => None,
            None if signals::edits(t, k) => {
                let later = self::changes(t, k);
                inverse(&changes, &later).map(|path| Revert { step: k, how: format!("an inverse edit of {path}") })
            }
            None => None,
        };
        if let Some(r) = found {
            // The same change made again after the revert: the edit is back in the code.
            let redone = (k + 1..end).any(|j| {
                t.steps[j].kind == StepKind::ToolCall && !failed(j) && same_change(&changes, &changes_of(t, j))
            });
            return (!redone).then_some(r);
        }
    }
    None
}

/// The changes of step `k` when it edits files ([`changes`]), else none.
fn changes_of(t: &Trajectory, k: usize) -> Vec<Change> {
    if signals::edits(t, k) && command_line(t, k).is_none() { changes(t, k) } else { Vec::new() }
}

/// The shell command line of a tool call, when it is one.
fn command_line(t: &Trajectory, k: usize) -> Option<String> {
    let s = &t.steps[k];
    let tool = s.tool_name.as_deref()?.to_ascii_lowercase();
    signals::shell_command(&tool, args(&tool, &s.content))
}

/// A call's arguments: its content, or what is inside `name(…)` (OpenAI chat logs).
fn args<'a>(tool: &str, content: &'a str) -> &'a str {
    let c = content.trim();
    match (c.find('('), c.strip_suffix(')')) {
        (Some(open), Some(inner)) if c[..open].trim().eq_ignore_ascii_case(tool) => inner[open + 1..].trim(),
        _ => c,
    }
}

/// The files edit call `k` changes, with its old and new text where the call says them: the
/// `*** Update File:` sections of a Codex patch, the file and `old_*`/`new_*` strings of a JSON
/// edit (Claude Code `Edit`, `str_replace_editor`, Gemini CLI `replace`), the files a shell
/// command writes (no text).
fn changes(t: &Trajectory, k: usize) -> Vec<Change> {
    let s = &t.steps[k];
    let tool = s.tool_name.as_deref().unwrap_or_default().to_ascii_lowercase();
    let a = args(&tool, &s.content);
    if let Some(line) = signals::shell_command(&tool, a) {
        return shell::commands(&line)
            .iter()
            .flat_map(shell::written_paths)
            .map(|(path, _)| Change { path, old: None, new: None })
            .collect();
    }
    let json = serde_json::from_str::<Value>(a).ok();
    let patch = match &json {
        Some(Value::Object(o)) => o.get("input").or_else(|| o.get("patch")).and_then(Value::as_str).map(str::to_string),
        _ => Some(a.to_string()),
    };
    if let Some(p) = patch.filter(|p| p.contains("*** Update File:") || p.contains("*** Add File:")) {
        return patch_changes(&p);
    }
    let Some(Value::Object(o)) = json else { return Vec::new() };
    let text = |keys: &[&str]| keys.iter().find_map(|k| o.get(*k).and_then(Value::as_str)).map(str::to_string);
    let Some(path) = text(&["file_path", "path", "absolute_path", "notebook_path", "filename", "target_file"]) else {
        return Vec::new();
    };
    vec![Change {
        path,
        old: text(&["old_string", "old_str", "old", "old_text"]),
        new: text(&["new_string", "new_str", "new", "new_text"]),
    }]
}

/// The files of a Codex patch (`*** Update File: PATH`), each with its removed and added lines.
fn patch_changes(patch: &str) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    let (mut old, mut new) = (Vec::new(), Vec::new());
    let flush = |out: &mut Vec<Change>, old: &mut Vec<String>, new: &mut Vec<String>| {
        if let Some(c) = out.last_mut() {
            c.old = Some(old.join("\n"));
            c.new = Some(new.join("\n"));
        }
        old.clear();
        new.clear();
    };
    for line in patch.lines() {
        let line = line.trim_end();
        if let Some(p) = line.strip_prefix("*** Update File: ").or_else(|| line.strip_prefix("*** Add File: ")) {
            flush(&mut out, &mut old, &mut new);
            out.push(Change { path: p.trim().to_string(), old: None, new: None });
        } else if line.starts_with("***") {
            if line.starts_with("*** Delete File: ") {
                flush(&mut out, &mut old, &mut new);
            }
        } else if let Some(r) = line.strip_prefix('-') {
            old.push(r.trim().to_string());
        } else if let Some(a) = line.strip_prefix('+') {
            new.push(a.trim().to_string());
        }
    }
    flush(&mut out, &mut old, &mut new);
    out
}

/// How a command line restores every file of `changes`, if it does: the simple command that does.
fn restores(line: &str, changes: &[Change]) -> Option<String> {
    let cmds = shell::commands(line);
    for (n, c) in cmds.iter().enumerate() {
        let Some(inv) = c.invocation() else { continue };
        if inv.program != "git" {
            continue;
        }
        let words: Vec<&str> = inv.args.iter().map(|w| w.text.as_str()).collect();
        // The subcommand: the first word that is no option, past `-C DIR` and `-c KEY=VALUE`.
        let mut k = 0;
        while k < words.len() && words[k].starts_with('-') {
            k += if matches!(words[k], "-C" | "-c" | "--git-dir" | "--work-tree") { 2 } else { 1 };
        }
        let Some(&sub) = words.get(k) else { continue };
        let rest = &words[k + 1..];
        let covered = match sub {
            "reset" => rest.contains(&"--hard"),
            // `git stash` puts every change aside, unless the same line brings it back.
            "stash" if matches!(rest.iter().find(|w| !w.starts_with('-')).copied(), None | Some("push" | "save")) => {
                !cmds[n + 1..].iter().any(|later| {
                    later.invocation().is_some_and(|i| {
                        i.program == "git"
                            && i.args.iter().any(|w| w.text == "stash")
                            && i.args.iter().any(|w| matches!(w.text.as_str(), "pop" | "apply"))
                    })
                })
            }
            "checkout" | "restore" => {
                // `git restore --staged FILE` only unstages: the edit stays in the file.
                let staged_only = sub == "restore"
                    && rest.iter().any(|w| *w == "--staged" || *w == "-S")
                    && !rest.iter().any(|w| *w == "--worktree" || *w == "-W");
                // `git checkout BRANCH` switches branches; only paths (after `--`, or files
                // the edit changed) restore files.
                let paths: Vec<&str> = match rest.iter().position(|w| *w == "--") {
                    Some(dd) => rest[dd + 1..].to_vec(),
                    None => rest.iter().copied().filter(|w| !w.starts_with('-')).collect(),
                };
                !staged_only && !paths.is_empty() && changes.iter().all(|ch| paths.iter().any(|p| covers(p, &ch.path)))
            }
            _ => false,
        };
        if covered {
            return Some(c.text.clone());
        }
    }
    None
}

/// Whether a path argument of a restoring command covers the edited file `file`: the whole tree
/// (`.`, `:/`, `*`), the file itself (one path may be relative to a folder of the other), or a
/// folder holding it.
fn covers(arg: &str, file: &str) -> bool {
    let norm = |p: &str| p.trim().trim_start_matches("./").trim_end_matches('/').to_string();
    let (a, f) = (norm(arg), norm(file));
    if matches!(a.as_str(), "" | "." | ":/" | "*" | ":/*" | ":/.") {
        return true;
    }
    let a = a.trim_start_matches(":/").to_string();
    f == a
        || f.ends_with(&format!("/{a}"))
        || a.ends_with(&format!("/{f}"))
        || f.starts_with(&format!("{a}/"))
        || f.contains(&format!("/{a}/"))
}

/// Whether two paths name the same file (one may be relative to a folder of the other).
fn same_file(a: &str, b: &str) -> bool {
    let norm = |p: &str| p.trim().trim_start_matches("./").to_string();
    let (a, b) = (norm(a), norm(b));
    a == b || a.ends_with(&format!("/{b}")) || b.ends_with(&format!("/{a}"))
}

/// The file of the first change `later` reverses: the same file, its new text the old text of
/// the change in `earlier` and its old text the new one (both known, not both empty); `None`
/// unless every change of `earlier` is reversed so.
fn inverse(earlier: &[Change], later: &[Change]) -> Option<String> {
    let reversed = |e: &Change| {
        later.iter().any(|l| {
            same_file(&e.path, &l.path)
                && matches!((&e.old, &e.new, &l.old, &l.new), (Some(eo), Some(en), Some(lo), Some(ln))
                    if squash(eo) == squash(ln) && squash(en) == squash(lo) && !(eo.trim().is_empty() && en.trim().is_empty()))
        })
    };
    (!earlier.is_empty() && earlier.iter().all(reversed)).then(|| earlier[0].path.clone())
}

/// Whether `later` makes the same changes as `earlier` again (the same files, old and new texts).
fn same_change(earlier: &[Change], later: &[Change]) -> bool {
    !later.is_empty()
        && earlier.iter().all(|e| {
            e.old.is_some()
                && later.iter().any(|l| {
                    same_file(&e.path, &l.path)
                        && e.old.as_deref().map(squash) == l.old.as_deref().map(squash)
                        && e.new.as_deref().map(squash) == l.new.as_deref().map(squash)
                })
        })
}

/// A text with its runs of whitespace made one space, trimmed: indentation and line ends do not
/// tell two edits apart.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Link, LinkKind, Step};

    fn call(tool: &str, content: &str) -> Step {
        Step {
            agent: "codex".into(),
            kind: StepKind::ToolCall,
            tool_name: Some(tool.into()),
            content: content.into(),
            ..Step::default()
        }
    }

    fn result(content: &str, is_error: bool) -> Step {
        Step { agent: "codex".into(), kind: StepKind::ToolResult, content: content.into(), is_error, ..Step::default() }
    }

    /// A trajectory of calls, each answered by the result after it.
    fn run(steps: Vec<Step>) -> Trajectory {
        let links = (0..steps.len())
            .filter(|&i| steps[i].kind == StepKind::ToolCall && i + 1 < steps.len())
            .map(|i| Link { from: i, to: i + 1, kind: LinkKind::ToolResult })
            .collect();
        let steps = steps.into_iter().enumerate().map(|(i, s)| Step { index: i, ..s }).collect();
        Trajectory { steps, links, ..Trajectory::default() }
    }

    const PATCH: &str = "*** Begin Patch\n*** Update File: packages/core/src/dayKey.ts\n@@\n-  const off = at(midnight);\n+  const off = at(d.getTime());\n*** End Patch";

    fn shell(cmd: &str) -> Step {
        call("shell", &serde_json::json!({"command": ["bash", "-lc", cmd]}).to_string())
    }

    #[test]
    fn a_git_checkout_of_the_patched_file_reverts_the_patch() {
        let t = run(vec![
            call("apply_patch", PATCH),
            result("Success. Updated the following files:\nM packages/core/src/dayKey.ts", false),
            shell("pnpm test"),
            result("2 failed", true),
            shell("git checkout -- packages/core/src/dayKey.ts && git status --short"),
            result("", false),
        ]);
        let r = reverted_at(&t, 0).expect("reverted");
        assert_eq!(r, Revert { step: 4, how: "git checkout -- packages/core/src/dayKey.ts".into() });
        // From a sub-folder, relative to it; the whole tree; `git restore`; `git reset --hard`; the
        // work put aside.
        for cmd in [
            "cd packages/core && git checkout -- src/dayKey.ts",
            "git checkout .",
            "git restore packages/core/src/dayKey.ts",
            "git -C packages/core restore src",
            "git reset --hard HEAD",
            "git stash",
            "git stash push -u",
        ] {
            let mut t = t.clone();
            t.steps[4] = Step { index: 4, ..shell(cmd) };
            assert_eq!(reverted_at(&t, 0).map(|r| r.step), Some(4), "{cmd}");
        }
        // Not a revert: another file, a branch switch, unstaging only, a failed checkout, a diff, a
        // stash popped in the same line, a stash listed.
        for (cmd, failed) in [
            ("git checkout -- packages/core/src/other.ts", false),
            ("git checkout main", false),
            ("git restore --staged packages/core/src/dayKey.ts", false),
            ("git checkout -- packages/core/src/dayKey.ts", true),
            ("git diff packages/core/src/dayKey.ts", false),
            ("git stash && pnpm test; git stash pop", false),
            ("git stash list", false),
        ] {
            let mut t = t.clone();
            t.steps[4] = Step { index: 4, ..shell(cmd) };
            t.steps[5].is_error = failed;
            assert_eq!(reverted_at(&t, 0), None, "{cmd}");
        }
        // The step reverted is an edit: a test run has nothing to revert.
        assert_eq!(reverted_at(&t, 2), None);
    }

    #[test]
    fn an_edit_that_writes_back_the_old_text_reverts_and_one_redone_after_is_back() {
        let edit = |old: &str, new: &str| {
            call(
                "Edit",
                &serde_json::json!({"file_path": "/repo/src/money.py", "old_string": old, "new_string": new})
                    .to_string(),
            )
        };
        let t = run(vec![
            edit("return round(x)", "return int(x)"),
            result("The file /repo/src/money.py has been updated.", false),
            edit("return int(x)", "return round(x)"),
            result("The file /repo/src/money.py has been updated.", false),
        ]);
        assert_eq!(reverted_at(&t, 0), Some(Revert { step: 2, how: "an inverse edit of /repo/src/money.py".into() }));
        // The same change made again after it: the edit is in the code again.
        let mut again = t.steps.clone();
        again.push(edit("return round(x)", "return int(x)"));
        again.push(result("ok", false));
        assert_eq!(reverted_at(&run(again), 0), None);
        // A further change of the same lines is no revert.
        let t = run(vec![
            edit("return round(x)", "return int(x)"),
            result("ok", false),
            edit("return int(x)", "return int(x * 100)"),
            result("ok", false),
        ]);
        assert_eq!(reverted_at(&t, 0), None);
    }

    #[test]
    fn an_inverse_codex_patch_reverts() {
        let inverse = "*** Begin Patch\n*** Update File: packages/core/src/dayKey.ts\n@@\n-  const off = at(d.getTime());\n+  const off = at(midnight);\n*** End Patch";
        let t = run(vec![
            call("apply_patch", PATCH),
            result("Success.", false),
            call("apply_patch", inverse),
            result("Success.", false),
        ]);
        assert_eq!(reverted_at(&t, 0).map(|r| r.step), Some(2));
    }
}
