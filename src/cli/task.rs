//! `--task TEXT` / `--task-file FILE`: the task (the user's request) given on the command line,
//! for traces that do not record it (`codex exec --json` streams hold no prompt, an Agents SDK
//! span list holds no input) or record it wrongly. `inspect`, `diagnose` and `open` take it.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

/// The task given beside the trace.
#[derive(Debug, Clone, Default, Args)]
pub struct TaskArgs {
    /// The task (the user's request) of every trajectory of the trace, for a trace that does not
    /// record it (`codex exec --json` writes no prompt) or records it wrongly; it replaces the
    /// recorded one, with a note.
    #[arg(long, value_name = "TEXT", conflicts_with = "task_file")]
    pub task: Option<String>,
    /// As `--task`, the text read from this file (UTF-8; `-` is not standard input here).
    #[arg(long, value_name = "FILE")]
    pub task_file: Option<PathBuf>,
}

impl TaskArgs {
    /// The task given, trimmed; `None` when neither option is given.
    ///
    /// # Errors
    /// The file of `--task-file` cannot be read or is not UTF-8 (naming it), or the task given is
    /// empty.
    pub fn read(&self) -> anyhow::Result<Option<String>> {
        let text = match (&self.task, &self.task_file) {
            (Some(t), _) => t.clone(),
            (None, Some(path)) => {
                let bytes =
                    std::fs::read(path).with_context(|| format!("cannot read the task file {}", path.display()))?;
                String::from_utf8(bytes)
                    .map_err(|e| anyhow::anyhow!("the task file {} is not UTF-8 text ({e})", path.display()))?
            }
            (None, None) => return Ok(None),
        };
        let text = text.trim();
        anyhow::ensure!(!text.is_empty(), "the task given with --task/--task-file is empty");
        Ok(Some(text.to_string()))
    }
}
