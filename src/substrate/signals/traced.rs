//! An edit of a file the failing traceback does not name: the test output ends in
//! `invoicekit/utils/durations.py:23: ValueError: invalid duration '1mo'`, the agent edits
//! `invoicekit/schedule.py`, and the same error comes back on the next run. The fix went where
//! the failure is not. docs/METHODS.md, "Targets".

use std::sync::LazyLock;

use regex::Regex;

use super::callers::same_file;
use super::coding::{edited_files, file_name};
use super::{Context, edits, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// How many steps back the failing output is looked for, and forward the error's return.
const WINDOW: usize = 40;

/// The frames of a traceback that name a source file and a line: Python's `File "x.py", line
/// 23, in f`, pytest's `x.py:23: in f` and `x.py:23: ValueError`, a JavaScript stack's `at f
/// (src/x.ts:23:9)`. Group 1 (or 2, or 3): the path.
static FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"File "([^"\n]+\.\w+)", line \d+|(?m)^([\w./-]+\.\w+):\d+: (?:in \w|\w+(?:Error|Exception)\b)|\bat [^\n(]*\(([\w./-]+\.[jt]sx?):\d+:\d+\)"#,
    )
    .unwrap()
});

/// The error a failing run ends in: pytest's `E   ValueError: invalid duration '1mo'`, a
/// traceback's last line `ValueError: invalid duration '1mo'`. Group 1.
static ERROR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^(?:E\s+)?((?:[A-Z]\w*\.)*[A-Z]\w*(?:Error|Exception): [^\n]{4,})$").unwrap());

/// Whether a frame's path is the project's own code under test: not an installed package, the
/// standard library or a test file.
fn project_source(path: &str) -> bool {
    let name = file_name(path);
    let installed = ["site-packages", "dist-packages", "/lib/python", "node_modules", "<frozen", "/usr/lib/"]
        .iter()
        .any(|p| path.contains(p));
    !installed && !is_test_file(path) && !name.is_empty()
}

/// Whether `path` is a test file ([`super::recovery::is_test_path`]) or pytest's `conftest.py`.
fn is_test_file(path: &str) -> bool {
    super::recovery::is_test_path(path) || file_name(path) == "conftest.py"
}

/// The project frames ([`FRAME`], [`project_source`]) of a tool output, innermost last, and the
/// error it ends in ([`ERROR`], the last one).
fn failure(text: &str) -> Option<(Vec<&str>, &str)> {
    let frames: Vec<&str> = FRAME
        .captures_iter(text)
        .filter_map(|c| c.get(1).or_else(|| c.get(2)).or_else(|| c.get(3)).map(|m| m.as_str()))
        .filter(|p| project_source(p))
        .collect();
    let error = ERROR.captures_iter(text).last()?.get(1)?.as_str().trim();
    (!frames.is_empty()).then_some((frames, error))
}

/// Step `e`, a tool call, edits one source file (not a test) of the same kind (extension) as the
/// project files the last failing output of its agent before it names in a traceback
/// ([`failure`], within [`WINDOW`] steps, with no edit of the agent in between), and none of
/// them; and a later output of the agent's (within [`WINDOW`] steps, before any edit of a file
/// the traceback names) shows the same error again. The edit changed code the failure does not
/// go through.
pub(super) fn untraced_edit(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[e];
    if step.kind != StepKind::ToolCall || !edits(t, e) {
        return;
    }
    let files = edited_files(t, e);
    let [file] = files.as_slice() else { return };
    if is_test_file(file) {
        return;
    }
    let agent = &step.agent;
    let ext = |p: &str| file_name(p).rsplit_once('.').map(|(_, x)| x.to_string());
    // The agent's last output before the edit with a traceback, no edit of the agent between.
    let mut traced = None;
    for j in (e.saturating_sub(WINDOW)..e).rev() {
        let s = &t.steps[j];
        if s.agent != *agent {
            continue;
        }
        if s.kind == StepKind::ToolCall && edits(t, j) {
            return;
        }
        if s.kind == StepKind::ToolResult
            && let Some(f) = failure(&s.content)
        {
            traced = Some((j, f));
            break;
        }
    }
    let Some((at, (frames, error))) = traced else { return };
    if frames.iter().any(|f| same_file(f, file)) || !frames.iter().any(|f| ext(f) == ext(file)) {
        return;
    }
    let innermost = frames.last().copied().unwrap_or_default();
    // The same error again after the edit, before any edit of a file the traceback names.
    let end = t.steps.len().min(e + 1 + WINDOW);
    for j in e + 1..end {
        let s = &t.steps[j];
        if s.agent != *agent {
            continue;
        }
        if s.kind == StepKind::ToolCall
            && edits(t, j)
            && edited_files(t, j).iter().any(|p| frames.iter().any(|f| same_file(f, p)))
        {
            return;
        }
        if s.kind == StepKind::ToolResult && s.content.contains(error) {
            out.push(finding(
                Signal::ArgumentMismatch,
                weights::ARGUMENT_MISMATCH,
                prose![
                    format!("edits {}, which the traceback at step ", crate::text::clip(file, 60)),
                    Part::Step(at),
                    format!(
                        " does not go through: it fails in {} ({}); step ",
                        crate::text::clip(innermost, 60),
                        crate::text::clip(error, 60)
                    ),
                    Part::Step(j),
                    " shows the same error after the edit",
                ],
            ));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracebacks_give_their_project_frames_and_error() {
        let pytest = "tests/test_billing.py:58: \n_ _ _\ninvoicekit/billing.py:44: in billing_period\n    delta = parse_duration(spec)\n>           raise ValueError(f\"invalid duration {spec!r}\")\nE           ValueError: invalid duration '1mo'\n\ninvoicekit/utils/durations.py:23: ValueError\n";
        let (frames, error) = failure(pytest).unwrap();
        assert_eq!(frames, ["invoicekit/billing.py", "invoicekit/utils/durations.py"]);
        assert_eq!(error, "ValueError: invalid duration '1mo'");
        let python = "Traceback (most recent call last):\n  File \"/app/kit/cli.py\", line 9, in main\n  File \"/usr/lib/python3.11/json/__init__.py\", line 346, in loads\n  File \"/app/kit/io.py\", line 3, in read\nKeyError: 'id' missing\n";
        assert_eq!(failure(python).unwrap(), (vec!["/app/kit/cli.py", "/app/kit/io.py"], "KeyError: 'id' missing"));
        assert!(same_file("/home/dev/kit/kit/io.py", "kit/io.py"));
        assert!(!same_file("/home/dev/kit/kit/io.py", "t/io.py"));
    }
}
