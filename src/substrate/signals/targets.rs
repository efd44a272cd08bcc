//! A state change made on the wrong one of two objects the agent's own listing showed side by
//! side: an *argument-mismatch* finding of the changing call (docs/METHODS.md, "Targets").
//!
//! The user's request names an object by a word ("production", "the commit that shrank the
//! connection pool"); an earlier tool output of the run lists that object and a sibling of it;
//! the call changes the sibling. Nothing fails: every later check runs on the object that was
//! changed, and passes. Two shapes are read:
//!
//! - a file edited where a file whose name differs from it in one part only was listed with it
//!   (`settings-prelive.toml` edited, `settings-live.toml` listed; one differing part holds the
//!   other), and the request says the listed file's differing part ("live") and not the edited
//!   one's ([`sibling_file_edited`]);
//! - a commit reverted or cherry-picked from a `git log` listing, whose subject shares no word
//!   with the request, while another row of the same listing shares two or more, more than any
//!   other row ([`neighbouring_commit`]);
//! - a state change whose result echoes a target the call left to the tool's default
//!   (`"env": "staging"`), where the run's earlier call on the same object named the one the
//!   user asked for (`"env": "production"`; [`defaulted_target`]).
//!
//! Either way the run must never act on the object the request names.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use super::actions::is_human;
use super::coding::edited_files;
use super::{Context, call_command, edits, finding, result_of, weights};
use crate::diagnosis::{Finding, Part, Prose, Signal};
use crate::model::{StepKind, Trajectory};

/// The user's request before step `i`: the task and the user's turns before `i`, lower-cased,
/// with the first user turn (the step a finding points to, when there is one).
fn request(t: &Trajectory, i: usize) -> (String, Option<usize>) {
    let mut text = t.task.to_lowercase();
    let mut first = None;
    for (j, s) in t.steps.iter().enumerate().take(i) {
        if is_human(s) {
            first.get_or_insert(j);
            text.push('\n');
            text.push_str(&s.content.to_lowercase());
        }
    }
    (text, first)
}

/// The lower-case words of `text` (runs of letters and digits).
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect()
}

/// A file name's parts: its stem split at `-`, `_` and `.`, lower-cased, and its extension.
fn name_parts(name: &str) -> Option<(Vec<String>, String)> {
    let (stem, ext) = name.rsplit_once('.')?;
    if stem.is_empty() || ext.is_empty() || ext.len() > 5 || !ext.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let parts = stem.split(['-', '_', '.']).filter(|p| !p.is_empty()).map(str::to_lowercase).collect();
    Some((parts, ext.to_lowercase()))
}

/// The file names (last path parts with an extension) a tool output shows.
fn shown_names(text: &str) -> HashSet<&str> {
    text.split(|c: char| {
        c.is_whitespace() || matches!(c, '/' | '\\' | ':' | '"' | '\'' | '`' | '(' | ')' | '[' | ']' | ',' | '=')
    })
    .map(|w| w.trim_end_matches('.'))
    .filter(|w| name_parts(w).is_some_and(|(_, ext)| ext.chars().any(|c| c.is_ascii_alphabetic())))
    .collect()
}

/// Whether the request's words say `part`: a word equal to it, a word it begins (`prod` of
/// "production", for a part of three letters or more), or a word of four letters or more it
/// begins with ("prod" for `production`).
fn says(request: &[&str], part: &str) -> bool {
    request.iter().any(|w| *w == part || part.len() >= 3 && w.starts_with(part) || w.len() >= 4 && part.starts_with(*w))
}

/// Step `e`, an edit of file `F`, when an earlier tool output of the run shows `F`'s name next to
/// a sibling `G` (same extension, same number of name parts, two or more, all equal but one, and
/// of the two differing parts one holds the other: `live` and `prelive`), the request says `G`'s differing part and neither says nor contains `F`'s, and no call of the
/// run edits `G`: the edit went to the neighbour of the file asked for ("edits
/// settings-prelive.toml, but the request says "live" (step 0): settings-live.toml, listed beside
/// it at step 3, is never edited").
pub(super) fn sibling_file_edited(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if t.steps[e].kind != StepKind::ToolCall || !edits(t, e) {
        return;
    }
    let files = edited_files(t, e);
    let Some(path) = files.first() else { return };
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let Some((parts, ext)) = name_parts(name) else { return };
    if parts.len() < 2 {
        return;
    }
    let (text, user) = request(t, e);
    if text.contains(&name.to_lowercase()) {
        return;
    }
    let asked = words(&text);
    let edited_anywhere = |other: &str| {
        (0..t.steps.len())
            .any(|j| edits(t, j) && edited_files(t, j).iter().any(|p| p.rsplit(['/', '\\']).next() == Some(other)))
    };
    for r in (0..e).rev() {
        let s = &t.steps[r];
        if s.kind != StepKind::ToolResult || !s.content.contains(name) {
            continue;
        }
        for other in shown_names(&s.content) {
            let Some((o_parts, o_ext)) = name_parts(other) else { continue };
            if o_ext != ext || o_parts.len() != parts.len() {
                continue;
            }
            let differ: Vec<usize> = (0..parts.len()).filter(|&k| parts[k] != o_parts[k]).collect();
            let [k] = differ[..] else { continue };
            let (mine, theirs) = (&parts[k], &o_parts[k]);
            // Close names only: one part holds the other (`live` in `prelive`, `prod` in
            // `preprod`), so that one is easily taken for the other.
            if mine.chars().all(|c| c.is_ascii_digit())
                || theirs.chars().all(|c| c.is_ascii_digit())
                || !(mine.contains(theirs.as_str()) || theirs.contains(mine.as_str()))
            {
                continue;
            }
            if says(&asked, mine) || text.contains(mine.as_str()) || !says(&asked, theirs) || edited_anywhere(other) {
                continue;
            }
            let said =
                asked.iter().find(|w| **w == theirs || w.starts_with(theirs.as_str())).copied().unwrap_or(theirs);
            let head = format!("edits {name}, but the request says \"{said}\"");
            let mut parts = vec![Part::from(head)];
            if let Some(u) = user {
                parts.extend([Part::from(" (step "), Part::Step(u), Part::from(")")]);
            }
            parts.extend([
                Part::from(format!(": {other}, listed beside it at step ")),
                Part::Step(r),
                Part::from(", is never edited"),
            ]);
            out.push(finding(Signal::ArgumentMismatch, weights::ARGUMENT_MISMATCH, Prose::new(parts)));
            return;
        }
    }
}

/// Words of a commit subject or a request that say nothing of which commit is meant.
const COMMIT_STOP_WORDS: &[&str] = &[
    "commit", "commits", "revert", "reverted", "merge", "pull", "request", "requests", "branch", "from", "into",
    "that", "this", "with", "when", "then", "after", "before", "change", "changes", "changed", "update", "updated",
    "fix", "fixes", "fixed", "main", "master", "test", "tests", "have", "sure", "fairly", "locally", "push", "tell",
];

/// The content words of `text`: four letters or more, not all digits, not [`COMMIT_STOP_WORDS`].
fn content_words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 4 && !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .filter(|w| !COMMIT_STOP_WORDS.contains(&w.as_str()))
        .collect()
}

/// The commit shell call `c` reverts or cherry-picks (`git revert --no-edit 1a2b3c4`): the first
/// argument after the subcommand that is seven to forty hex digits.
fn acted_commit(t: &Trajectory, c: usize) -> Option<(String, &'static str)> {
    static GIT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\bgit\s+(revert|cherry-pick)\b((?:\s+-[\w-]+)*)\s+([0-9a-f]{7,40})\b").unwrap());
    let cmd = call_command(t, c)?;
    let m = GIT.captures(&cmd)?;
    let verb = if &m[1] == "revert" { "reverts" } else { "cherry-picks" };
    Some((m[3].to_string(), verb))
}

/// One row of a commit listing: the abbreviated hash and the rest of the line.
struct Row<'a> {
    hash: &'a str,
    subject: &'a str,
}

/// The rows of a commit listing in a tool output (`git log --oneline`, `--format='%h %s'`):
/// lines that open with seven to forty hex digits (after `git log --graph`'s `*`).
fn commit_rows(text: &str) -> Vec<Row<'_>> {
    static ROW: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?m)^[\s*|]*([0-9a-f]{7,40})\s+(?:\([^)\n]*\)\s+)?(.+)$").unwrap());
    ROW.captures_iter(text)
        .filter_map(|c| Some(Row { hash: c.get(1)?.as_str(), subject: c.get(2)?.as_str().trim() }))
        .collect()
}

/// Whether two abbreviations name the same commit (one begins the other).
fn same_commit(a: &str, b: &str) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// Step `c`, a `git revert` or `git cherry-pick` of a commit, when an earlier tool output lists
/// it among other commits, its row shares no content word with the request ([`content_words`]),
/// another row shares two or more (more than every other row), the request does not give the
/// acted-on hash, and no later call of the run acts on the other row's commit: the agent took the
/// neighbouring row of the one the user described ("reverts 1a2b3c4 ("Raise log level"), but
/// the request's words (cache, expiry) describe 9f8e7d6 ("Lower cache expiry") listed at step
/// 5"; the first three shared words are given).
pub(super) fn neighbouring_commit(ctx: &Context<'_>, c: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if t.steps[c].kind != StepKind::ToolCall {
        return;
    }
    let Some((hash, verb)) = acted_commit(t, c) else { return };
    let (text, _) = request(t, c);
    if text.contains(&hash) {
        return;
    }
    let asked = content_words(&text);
    for r in (0..c).rev() {
        let s = &t.steps[r];
        if s.kind != StepKind::ToolResult || !s.content.contains(&hash[..7]) {
            continue;
        }
        let rows = commit_rows(&s.content);
        let Some(mine) = rows.iter().find(|w| same_commit(w.hash, &hash)) else { continue };
        let shared = |w: &Row<'_>| {
            let mut x: Vec<String> = content_words(w.subject).intersection(&asked).cloned().collect();
            x.sort();
            x
        };
        if !shared(mine).is_empty() {
            return;
        }
        let mut scored: Vec<(usize, &Row<'_>)> = rows.iter().map(|w| (shared(w).len(), w)).collect();
        scored.sort_by_key(|s| std::cmp::Reverse(s.0));
        let [(best, other), rest @ ..] = &scored[..] else { return };
        if *best < 2 || rest.first().is_some_and(|(n, _)| n == best) || same_commit(other.hash, &hash) {
            return;
        }
        let acted_later =
            (c + 1..t.steps.len()).any(|k| acted_commit(t, k).is_some_and(|(h, _)| same_commit(&h, other.hash)));
        if acted_later {
            return;
        }
        let words = shared(other);
        let said = if words.len() > 3 { format!("{}…", words[..3].join(", ")) } else { words.join(", ") };
        let tail = subject_tail(mine.subject);
        let mut parts = vec![Part::from(format!("{verb} {hash} (\"{}\"", crate::text::clip(tail, 40)))];
        // The call's own output naming the acted-on subject (`Revert "…"`) says which was taken.
        if let Some(res) = result_of(ctx, c).filter(|&res| !tail.is_empty() && t.steps[res].content.contains(tail)) {
            parts.extend([Part::from(", as its output at step "), Part::Step(res), Part::from(" shows")]);
        }
        parts.extend([
            Part::from(format!(
                "), but the request's words ({said}) describe {} (\"{}\") listed at step ",
                other.hash,
                crate::text::clip(subject_tail(other.subject), 40),
            )),
            Part::Step(r),
        ]);
        out.push(finding(Signal::ArgumentMismatch, weights::ARGUMENT_MISMATCH, Prose::new(parts)));
        return;
    }
}

/// The last five words of a listed row: its subject, without the date and the author a
/// `--format` may put first.
fn subject_tail(row: &str) -> &str {
    let starts: Vec<usize> = row.match_indices(' ').map(|(k, _)| k + 1).collect();
    if starts.len() < 5 { row } else { &row[starts[starts.len() - 5]..] }
}

/// How many steps back the earlier calls that named a target are looked for.
const DEFAULTED_WINDOW: usize = 40;

/// Step `i`, a state-changing call, lands on another target than the one the run worked on: its
/// result echoes a member (`"env": "staging"`) that the call did not pass, while an earlier call
/// of the same agent that shares an argument value with it (`"service": "payments-api"`) passed
/// that member another value (`"env": "production"`), which a user turn before names too. The
/// call left the target to the tool's default: "set_config applied to "env": "staging" (its
/// result at step 9), a value the call did not give; the call at step 6 gave "env":
/// "production"".
pub(crate) fn defaulted_target(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let s = &t.steps[i];
    if s.kind != StepKind::ToolCall || !super::changes_state(t, i) {
        return;
    }
    let Some(args) = super::call_arguments(&s.content) else { return };
    let Some(r) = super::result_of(ctx, i) else { return };
    let Some(serde_json::Value::Object(result)) = super::grounding::json_of(&t.steps[r].content) else { return };
    let shared = |other: &serde_json::Map<String, serde_json::Value>| {
        args.iter().any(|(k, v)| v.is_string() && other.get(k) == Some(v))
    };
    let users: Vec<&str> =
        (0..i).filter(|&u| super::actions::is_human(&t.steps[u])).map(|u| t.steps[u].content.as_str()).collect();
    for (name, value) in &result {
        let Some(landed) = value.as_str() else { continue };
        if args.contains_key(name) || landed.len() < 3 {
            continue;
        }
        let earlier = (i.saturating_sub(DEFAULTED_WINDOW)..i).rev().find_map(|c| {
            let x = &t.steps[c];
            if x.kind != StepKind::ToolCall || x.agent != s.agent {
                return None;
            }
            let a = super::call_arguments(&x.content)?;
            let asked = a.get(name)?.as_str()?;
            (asked != landed && asked.len() >= 3 && shared(&a)).then(|| (c, asked.to_string()))
        });
        let Some((c, asked)) = earlier else { continue };
        if !users.iter().any(|u| super::contains_word(u, &asked)) {
            continue;
        }
        let tool = s.tool_name.as_deref().unwrap_or("the call");
        out.push(finding(
            Signal::ArgumentMismatch,
            weights::ARGUMENT_MISMATCH,
            crate::prose![
                format!("{tool} applied to \"{name}\": \"{}\" (its result at step ", crate::text::clip(landed, 30)),
                Part::Step(r),
                "), a value the call did not give; the call at step ",
                Part::Step(c),
                format!(" gave \"{name}\": \"{}\", which the user named", crate::text::clip(&asked, 30))
            ],
        ));
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sibling_names_differ_in_one_part() {
        assert_eq!(name_parts("settings-live.toml"), Some((vec!["settings".into(), "live".into()], "toml".into())));
        let shown = shown_names("Listing:\nconf/settings-live.toml\nsettings-canary.toml\nREADME");
        assert!(shown.contains("settings-live.toml") && shown.contains("settings-canary.toml"));
        assert!(!shown.contains("README"));
    }

    #[test]
    fn request_says_a_part_by_its_prefix() {
        let asked = words("the live tier and prod");
        assert!(says(&asked, "live"));
        assert!(says(&asked, "production"));
        assert!(!says(&asked, "canary"));
        assert!(!says(&asked, "preprod"));
    }

    #[test]
    fn commit_rows_read_oneline_and_graph_listings() {
        let rows =
            commit_rows("* 9f8e7d6 (HEAD -> main) Lower cache TTL\n1a2b3c4 2026-01-02 Ann Raise log level\nnot a row");
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].hash, rows[0].subject), ("9f8e7d6", "Lower cache TTL"));
        assert_eq!(rows[1].subject, "2026-01-02 Ann Raise log level");
        assert_eq!(subject_tail("2026-01-02 Ann Raise the log level now"), "Raise the log level now");
    }
}
