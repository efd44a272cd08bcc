//! Files beside the trace: the user's overrides (`TRACE.falat.json`, written atomically at each
//! change and restored on open) and the exported reports (`TRACE.falat.md`,
//! `TRACE.falat.report.json`).
//!
//! A corrupt overrides file is never overwritten silently: it is copied to a backup first and the
//! problem is reported.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::diagnosis::{Diagnosis, Overrides};
use crate::model::Trajectory;
use crate::report;

/// The schema name of the overrides file.
pub const OVERRIDES_SCHEMA: &str = "falat.overrides/v1";

/// The path with `suffix` appended to the full file name (`a/b.json` → `a/b.json.falat.json`).
pub fn beside(trace: &Path, suffix: &str) -> PathBuf {
    let mut name = trace.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// The overrides file of a trace: the trace path plus `.falat.json`.
pub fn overrides_path(trace: &Path) -> PathBuf {
    beside(trace, ".falat.json")
}

#[derive(Debug, Serialize, Deserialize)]
struct OverridesFile {
    schema: String,
    #[serde(default)]
    trajectory: String,
    #[serde(default)]
    marked: Vec<usize>,
    #[serde(default)]
    excluded: Vec<usize>,
    #[serde(default)]
    pinned: Option<usize>,
}

/// What was found when loading the overrides.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Restored {
    /// The overrides (empty when there was no file or it was unusable).
    pub overrides: Overrides,
    /// Problems to show: a corrupt file and where its backup is, steps out of range.
    pub problems: Vec<String>,
}

/// Loads the overrides beside `trace` for a trajectory of `n_steps` steps. A missing file gives
/// empty overrides. An unreadable or corrupt file is copied to a backup (`.bak`, `.bak.1`...) and
/// reported; steps out of range are dropped and reported.
pub fn load_overrides(trace: &Path, n_steps: usize) -> Restored {
    let path = overrides_path(trace);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Restored::default(),
        Err(e) => return corrupt(&path, &format!("cannot read it: {e}")),
    };
    let file = match serde_json::from_str::<OverridesFile>(&text) {
        Ok(f) if f.schema == OVERRIDES_SCHEMA => f,
        Ok(f) => return corrupt(&path, &format!("unknown schema '{}'", f.schema)),
        Err(e) => return corrupt(&path, &format!("not valid: {e}")),
    };
    let mut problems = Vec::new();
    let mut keep = |v: Vec<usize>, what: &str| -> Vec<usize> {
        let (ok, bad): (Vec<usize>, Vec<usize>) = v.into_iter().partition(|s| *s < n_steps);
        if !bad.is_empty() {
            problems.push(format!("ignored {what} steps out of range: {bad:?}"));
        }
        ok
    };
    let marked = keep(file.marked, "marked");
    let excluded = keep(file.excluded, "excluded");
    let pinned = keep(file.pinned.into_iter().collect(), "pinned").first().copied();
    Restored { overrides: Overrides { marked, excluded, pinned }, problems }
}

fn corrupt(path: &Path, why: &str) -> Restored {
    let msg = match backup(path) {
        Ok(b) => format!("overrides file {} {why}; kept a backup at {}", path.display(), b.display()),
        Err(e) => format!("overrides file {} {why}; backup failed ({e:#}), it will not be overwritten", path.display()),
    };
    Restored { overrides: Overrides::default(), problems: vec![msg] }
}

/// Copies `path` to the first free `path.bak`, `path.bak.1`, ...
fn backup(path: &Path) -> anyhow::Result<PathBuf> {
    let mut n = 0;
    loop {
        let suffix = if n == 0 { ".bak".to_string() } else { format!(".bak.{n}") };
        let candidate = beside(path, &suffix);
        if !candidate.exists() {
            std::fs::copy(path, &candidate).with_context(|| format!("copy to {}", candidate.display()))?;
            return Ok(candidate);
        }
        n += 1;
    }
}

/// Writes the overrides beside `trace` atomically (temporary file in the same folder, then
/// rename). Empty overrides are written too, so that undoing everything is remembered.
///
/// # Errors
/// When the folder is not writable.
pub fn save_overrides(trace: &Path, trajectory: &str, o: &Overrides) -> anyhow::Result<PathBuf> {
    let file = OverridesFile {
        schema: OVERRIDES_SCHEMA.into(),
        trajectory: trajectory.into(),
        marked: o.marked.clone(),
        excluded: o.excluded.clone(),
        pinned: o.pinned,
    };
    let text = serde_json::to_string_pretty(&file)? + "\n";
    let path = overrides_path(trace);
    write_atomic(&path, text.as_bytes())?;
    Ok(path)
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename.
///
/// # Errors
/// When the temporary file cannot be created, written or renamed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(())
}

/// The two report files written by an export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// The Markdown report.
    pub markdown: PathBuf,
    /// The JSON report.
    pub json: PathBuf,
}

/// Writes the Markdown and JSON reports beside `trace`: the machine's verdict, and the user's
/// decision (the diagnosis with the overrides) beside it when there is one.
///
/// # Errors
/// When a file cannot be written.
pub fn export(trace: &Path, t: &Trajectory, machine: &Diagnosis, user: Option<&Diagnosis>) -> anyhow::Result<Exported> {
    let markdown = beside(trace, ".falat.md");
    let json = beside(trace, ".falat.report.json");
    write_atomic(&markdown, report::to_markdown_with(t, machine, user).as_bytes())?;
    let value = report::to_json_with(t, machine, user);
    write_atomic(&json, (serde_json::to_string_pretty(&value)? + "\n").as_bytes())?;
    Ok(Exported { markdown, json })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let trace = dir.path().join("t.json");
        let o = Overrides { marked: vec![1, 4], excluded: vec![2], pinned: Some(4) };
        let p = save_overrides(&trace, "t", &o).expect("saved");
        assert_eq!(p, dir.path().join("t.json.falat.json"));
        let r = load_overrides(&trace, 10);
        assert_eq!(r, Restored { overrides: o, problems: vec![] });
    }

    #[test]
    fn missing_file_is_no_override() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(load_overrides(&dir.path().join("x.json"), 3), Restored::default());
    }

    #[test]
    fn corrupt_file_is_backed_up_and_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let trace = dir.path().join("t.json");
        std::fs::write(overrides_path(&trace), "{ not json").expect("write");
        let r = load_overrides(&trace, 10);
        assert!(r.overrides.is_empty());
        assert!(r.problems[0].contains("kept a backup at"), "{:?}", r.problems);
        let bak = dir.path().join("t.json.falat.json.bak");
        assert_eq!(std::fs::read_to_string(&bak).expect("backup"), "{ not json");
        // A second corrupt load keeps the first backup and makes another.
        let r = load_overrides(&trace, 10);
        assert!(r.problems[0].contains(".bak.1"), "{:?}", r.problems);
    }

    #[test]
    fn out_of_range_steps_are_dropped_and_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let trace = dir.path().join("t.json");
        let o = Overrides { marked: vec![1, 40], excluded: vec![], pinned: Some(99) };
        save_overrides(&trace, "t", &o).expect("saved");
        let r = load_overrides(&trace, 10);
        assert_eq!(r.overrides, Overrides { marked: vec![1], excluded: vec![], pinned: None });
        assert_eq!(r.problems.len(), 2);
    }
}
