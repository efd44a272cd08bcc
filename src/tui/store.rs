//! Files beside the trace: the user's overrides (`TRACE.falat.json`, written atomically at each
//! change and restored on open) and the exported reports (`TRACE.falat.md`,
//! `TRACE.falat.report.json`).
//!
//! When the trace's folder cannot be written (a shared data set, a mounted volume, installed
//! samples), the overrides go to the user's state folder (`$XDG_STATE_HOME/falat/traces/KEY`,
//! else `~/.local/state/...`) and the reports to the data folder (`$XDG_DATA_HOME/falat/
//! reports/KEY`, else `~/.local/share/...`), where KEY is the trace's file name and a hash of
//! its path and content ([`Places`]); callers say where the files went. `--export-dir` chooses
//! the reports' folder instead.
//!
//! A corrupt overrides file is never overwritten silently: it is copied to a backup first and the
//! problem is reported.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::diagnosis::{Diagnosis, Overrides};
use crate::model::Trajectory;
use crate::report;

/// Where the files of one trace go: beside it, or the fallback folders (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// The trace file.
    pub trace: PathBuf,
    /// The folder the user chose for exports (`--export-dir`); `None` writes beside the trace.
    pub export_dir: Option<PathBuf>,
    /// The overrides' fallback folder (state), `None` when no home folder is known.
    pub state: Option<PathBuf>,
    /// The reports' fallback folder (data), `None` when no home folder is known.
    pub data: Option<PathBuf>,
}

impl Places {
    /// The places of `trace`; `root` replaces the XDG state and data folders (tests, portable
    /// use): overrides then go to `root/state/KEY` and reports to `root/data/KEY`.
    pub fn new(trace: &Path, export_dir: Option<PathBuf>, root: Option<&Path>) -> Places {
        let key = trace_key(trace);
        let (state, data) = match root {
            Some(r) => (Some(r.join("state")), Some(r.join("data"))),
            None => (xdg_dir("XDG_STATE_HOME", ".local/state"), xdg_dir("XDG_DATA_HOME", ".local/share")),
        };
        Places {
            trace: trace.to_path_buf(),
            export_dir,
            state: state.map(|d| d.join("falat").join("traces").join(&key)),
            data: data.map(|d| d.join("falat").join("reports").join(&key)),
        }
    }

    /// The places of one trajectory of a file that holds several, other than its first: its
    /// files are named after the trace plus `#NAME` (`runs.json#task-41.falat.json`), and its
    /// fallback folders get a sub-folder `NAME`, so the overrides of two runs of one file never
    /// mix. `NAME` is the id itself when it is 1 to 80 characters of `A-Za-z0-9._-` and not only
    /// dots; otherwise those characters (others replaced by `_`, at most 60) and the first 8 hex
    /// digits of the id's SHA-256, so that two ids never share a name and none names a parent
    /// folder. The first trajectory keeps the trace's own names.
    pub fn for_run(mut self, id: &str) -> Places {
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        let plain = !id.is_empty() && id.len() <= 80 && id.chars().all(allowed) && !id.chars().all(|c| c == '.');
        let safe = if plain {
            id.to_string()
        } else {
            use sha2::{Digest, Sha256};
            let cleaned: String = id.chars().map(|c| if allowed(c) { c } else { '_' }).take(60).collect();
            let hex: String = Sha256::digest(id.as_bytes()).iter().take(4).map(|b| format!("{b:02x}")).collect();
            format!("{}-{hex}", cleaned.trim_matches('.'))
        };
        self.trace = beside(&self.trace, &format!("#{safe}"));
        self.state = self.state.map(|d| d.join(&safe));
        self.data = self.data.map(|d| d.join(&safe));
        self
    }

    /// The fallback overrides file.
    pub fn fallback_overrides(&self) -> Option<PathBuf> {
        self.state.as_ref().map(|d| d.join("overrides.falat.json"))
    }
}

/// `$VAR` when set and absolute, else `$HOME/default`.
fn xdg_dir(var: &str, default: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(default)))
}

/// `NAME-HASH`: the trace's file name and 16 hex digits of a SHA-256 over its absolute path and
/// its content, so that two traces of the same name, or a trace that changed, never share
/// overrides.
pub fn trace_key(trace: &Path) -> String {
    use sha2::{Digest, Sha256};
    let abs = std::path::absolute(trace).unwrap_or_else(|_| trace.to_path_buf());
    let mut h = Sha256::new();
    h.update(abs.as_os_str().as_encoded_bytes());
    h.update([0]);
    if let Ok(bytes) = std::fs::read(trace) {
        h.update(Sha256::digest(&bytes));
    }
    let hex: String = h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
    let name: String = trace
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .chars()
                .map(|c| if c.is_alphanumeric() || "._-".contains(c) { c } else { '_' })
                .collect()
        })
        .unwrap_or_default();
    format!("{name}-{hex}")
}

/// The schema name of the overrides file.
pub const OVERRIDES_SCHEMA: &str = "falat.overrides/v1";

pub use crate::ingest::fs::beside;
use crate::ingest::fs::{OVERRIDES_SUFFIX, REPORT_JSON_SUFFIX, REPORT_MD_SUFFIX};

/// The overrides file of a trace: the trace path plus `.falat.json`.
pub fn overrides_path(trace: &Path) -> PathBuf {
    beside(trace, OVERRIDES_SUFFIX)
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

/// Loads the overrides of a trace: beside it, else from the fallback folder (see
/// [`load_overrides_at`]); returns where they were found.
pub fn load_places(places: &Places, n_steps: usize) -> (Restored, Option<PathBuf>) {
    let candidates = std::iter::once(overrides_path(&places.trace)).chain(places.fallback_overrides());
    for path in candidates {
        if path.is_file() {
            return (load_overrides_at(&path, n_steps), Some(path));
        }
    }
    (Restored::default(), None)
}

/// Loads the overrides beside `trace` (see [`load_overrides_at`]).
pub fn load_overrides(trace: &Path, n_steps: usize) -> Restored {
    load_overrides_at(&overrides_path(trace), n_steps)
}

/// Loads an overrides file for a trajectory of `n_steps` steps. A missing file gives empty
/// overrides. An unreadable or corrupt file is copied to a backup (`.bak`, `.bak.1`...) and
/// reported; steps out of range are dropped and reported.
pub fn load_overrides_at(path: &Path, n_steps: usize) -> Restored {
    let path = path.to_path_buf();
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
    let text = overrides_json(trajectory, o)?;
    let path = overrides_path(trace);
    write_atomic(&path, text.as_bytes())?;
    Ok(path)
}

/// The overrides file's text (`falat` overrides schema, pretty JSON with a final newline).
fn overrides_json(trajectory: &str, o: &Overrides) -> anyhow::Result<String> {
    let file = OverridesFile {
        schema: OVERRIDES_SCHEMA.into(),
        trajectory: trajectory.into(),
        marked: o.marked.clone(),
        excluded: o.excluded.clone(),
        pinned: o.pinned,
    };
    Ok(serde_json::to_string_pretty(&file)? + "\n")
}

/// Where a file was written, and whether that is the fallback folder because the trace's own
/// folder could not be written (`why` says what failed there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    /// The file written.
    pub path: PathBuf,
    /// Why the first choice failed, when the fallback was used.
    pub fallback: Option<String>,
}

/// Saves the overrides beside the trace, else in the fallback state folder.
///
/// # Errors
/// When neither can be written (the message names both).
pub fn save_places(places: &Places, trajectory: &str, o: &Overrides) -> anyhow::Result<Saved> {
    let first = match save_overrides(&places.trace, trajectory, o) {
        Ok(path) => return Ok(Saved { path, fallback: None }),
        Err(e) => format!("{e:#}"),
    };
    let Some(path) = places.fallback_overrides() else {
        anyhow::bail!("{first}; and no home folder is known for a fallback");
    };
    let text = overrides_json(trajectory, o)?;
    write_creating(&path, text.as_bytes()).with_context(|| format!("{first}; and the fallback"))?;
    Ok(Saved { path, fallback: Some(first) })
}

/// [`write_atomic`] after creating the folder.
fn write_creating(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    write_atomic(path, bytes)
}

/// Writes `bytes` to `path` atomically ([`crate::cli::diagnose::write_atomic`]).
///
/// # Errors
/// When the temporary file cannot be created, written or renamed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    crate::cli::diagnose::write_atomic(path, bytes)
}

/// The two report files written by an export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// The Markdown report.
    pub markdown: PathBuf,
    /// The JSON report.
    pub json: PathBuf,
    /// Why the reports are not beside the trace, when they went to the fallback folder.
    pub fallback: Option<String>,
}

/// Writes the reports into the folder chosen with `--export-dir`, else beside the trace, else
/// into the fallback data folder.
///
/// # Errors
/// When the chosen folder, or both the trace's folder and the fallback, cannot be written.
pub fn export_places(
    places: &Places,
    t: &Trajectory,
    machine: &Diagnosis,
    user: Option<&Diagnosis>,
) -> anyhow::Result<Exported> {
    let name = places.trace.file_name().map(|n| n.to_os_string()).unwrap_or_else(|| "trace".into());
    if let Some(dir) = &places.export_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        return export(&dir.join(&name), t, machine, user);
    }
    let first = match export(&places.trace, t, machine, user) {
        Ok(e) => return Ok(e),
        Err(e) => format!("{e:#}"),
    };
    let Some(dir) = &places.data else {
        anyhow::bail!("{first}; and no home folder is known for a fallback (use --export-dir)");
    };
    std::fs::create_dir_all(dir).with_context(|| format!("{first}; and cannot create {}", dir.display()))?;
    let e = export(&dir.join(&name), t, machine, user).with_context(|| format!("{first}; and the fallback"))?;
    Ok(Exported { fallback: Some(first), ..e })
}

/// Writes the Markdown and JSON reports beside `trace`: the machine's verdict, and the user's
/// decision (the diagnosis with the overrides) beside it when there is one.
///
/// # Errors
/// When a file cannot be written.
pub fn export(trace: &Path, t: &Trajectory, machine: &Diagnosis, user: Option<&Diagnosis>) -> anyhow::Result<Exported> {
    let markdown = beside(trace, REPORT_MD_SUFFIX);
    let json = beside(trace, REPORT_JSON_SUFFIX);
    write_atomic(&markdown, report::to_markdown_with(t, machine, user).as_bytes())?;
    let value = report::to_json_with(t, machine, user);
    write_atomic(&json, (serde_json::to_string_pretty(&value)? + "\n").as_bytes())?;
    Ok(Exported { markdown, json, fallback: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_of_a_file_gets_names_of_its_own() {
        let name = |id: &str| {
            let p = Places::new(Path::new("/d/runs.json"), None, Some(Path::new("/h"))).for_run(id);
            let file = p.trace.file_name().unwrap().to_string_lossy().into_owned();
            let sub = p.state.unwrap().file_name().unwrap().to_string_lossy().into_owned();
            assert_eq!(format!("runs.json#{sub}"), file, "the file and the fallback folder agree");
            sub
        };
        assert_eq!(name("task-41-trial-41"), "task-41-trial-41");
        // Ids that would clean to the same name, or name a folder, are told apart by a hash.
        let odd = [name("a/b"), name("a_b"), name("."), name(".."), name(""), name("é"), name("è")];
        assert_eq!(odd[1], "a_b");
        let mut unique = odd.to_vec();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), odd.len(), "{odd:?}");
        assert!(odd.iter().all(|n| !n.is_empty() && n.chars().any(|c| c != '.')), "{odd:?}");
        assert!(name(&"x".repeat(200)).len() <= 70);
    }

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
    fn the_fallback_key_follows_the_path_and_the_content() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("run 1.json");
        std::fs::write(&a, "[1]").expect("write");
        let key = trace_key(&a);
        assert!(key.starts_with("run_1.json-") && key.len() == "run_1.json-".len() + 16, "{key}");
        assert_eq!(trace_key(&a), key, "stable");
        std::fs::write(&a, "[2]").expect("write");
        assert_ne!(trace_key(&a), key, "another content, another folder");
        let b = dir.path().join("sub");
        std::fs::create_dir(&b).expect("dir");
        std::fs::write(b.join("run 1.json"), "[2]").expect("write");
        assert_ne!(trace_key(&b.join("run 1.json")), trace_key(&a), "another path, another folder");
        let places = Places::new(&a, None, Some(dir.path()));
        let state = places.fallback_overrides().expect("state");
        assert!(state.starts_with(dir.path().join("state/falat/traces")), "{}", state.display());
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
