//! Files beside the trace: the user's overrides (`TRACE.falat.json`, written atomically at each
//! change and restored on open) and the exported reports (`TRACE.falat.md`,
//! `TRACE.falat.report.json`).
//!
//! When a file cannot be written beside the trace (its folder cannot be written: a shared data
//! set, a mounted volume, installed samples; or a symbolic link or a folder stands where the file
//! goes, which is never followed or replaced), the overrides go to the user's state folder
//! (`$XDG_STATE_HOME/falat/traces/KEY`, else `~/.local/state/...`) and the reports to the data
//! folder (`$XDG_DATA_HOME/falat/reports/KEY`, else `~/.local/share/...`), where KEY is the
//! trace's file name and a hash of its path and content ([`Places`]); callers say where the
//! files went and why ([`Fallback`]). `--export-dir` chooses the reports' folder instead.
//!
//! The trace's folder is as untrusted as the trace: every file here is read and written through
//! [`crate::fsutil`], without following symbolic links and only as regular files of the user's.
//! A corrupt overrides file is never overwritten silently: it is moved aside (renamed to `.bak`)
//! and the problem is reported. The newest save wins wherever it is (beside the trace or in the
//! fallback). Two windows on one trace do not lose each other's overrides: a save merges with
//! what another saved meanwhile ([`save_places`], [`merge`]). The undo history is saved with
//! the overrides (`falat.overrides/v2`; v1 files are still read).

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
    /// What this instance last read from or wrote to the overrides file ([`load_places`],
    /// [`save_places`]); `None` before, or when there was no file.
    pub seen: Option<Seen>,
    /// Whether files may go beside the trace: false for a trace read from standard input, whose
    /// overrides and reports go to the fallback folders ([`Places::for_stdin`]).
    pub beside: bool,
}

/// Why overrides or reports went to the fallback folders instead of beside the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fallback {
    /// The trace's folder cannot be written (no file can be made in it): the error.
    Unwritable(String),
    /// What stands where the file beside the trace goes is not a regular file of the user's (a
    /// symbolic link, never followed; a folder; another user's file), and is left as it is.
    NotPrivate {
        /// The file's name (`TRACE.falat.json`).
        file: String,
        /// What stands there.
        what: fsutil::NotPrivate,
    },
    /// Writing beside the trace failed in a folder that can be written (no space left, a
    /// rename refused): the error.
    Failed(String),
    /// The trace was read from standard input: there is no file to write beside.
    Stdin,
}

impl Fallback {
    /// Why the files of a trace could not be written at `paths`, beside it, given the error of
    /// the write ([`fsutil::write_private`]): something other than a regular file of the user's
    /// stands at one of them ([`Fallback::NotPrivate`]), else the folder takes no new file
    /// ([`Fallback::Unwritable`], tried with a nameless temporary file), else the error itself
    /// ([`Fallback::Failed`]).
    fn of_write(paths: &[&Path], e: &anyhow::Error) -> Fallback {
        for path in paths {
            if let Err(what) = fsutil::check_private(path) {
                let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                return Fallback::NotPrivate { file, what };
            }
        }
        let folder = paths.first().and_then(|p| p.parent()).filter(|d| !d.as_os_str().is_empty());
        match tempfile::tempfile_in(folder.unwrap_or(Path::new("."))) {
            Err(_) => Fallback::Unwritable(format!("{e:#}")),
            Ok(_) => Fallback::Failed(format!("{e:#}")),
        }
    }

    /// The reason in a few words, as the status line puts it before the place: what really
    /// stopped the write ("the trace's folder cannot be written", "TRACE.falat.json is a symbolic
    /// link, which falat does not follow", or the error's own text).
    pub fn reason(&self) -> String {
        match self {
            Fallback::Unwritable(_) => "the trace's folder cannot be written".into(),
            Fallback::NotPrivate { file, what: fsutil::NotPrivate::SymbolicLink } => {
                format!("{file} is a symbolic link, which falat does not follow")
            }
            Fallback::NotPrivate { file, what } => format!("{file} is {what}, which falat leaves alone"),
            Fallback::Failed(e) => e.clone(),
            Fallback::Stdin => "the trace came from standard input".into(),
        }
    }
}

impl Places {
    /// The places of `trace`; `root` replaces the XDG state and data folders (tests, portable
    /// use): overrides then go to `root/state/KEY` and reports to `root/data/KEY`.
    pub fn new(trace: &Path, export_dir: Option<PathBuf>, root: Option<&Path>) -> Places {
        Places::keyed(trace, &trace_key(trace), export_dir, root)
    }

    /// The places of `trace` with its fallback folders named `key`.
    fn keyed(trace: &Path, key: &str, export_dir: Option<PathBuf>, root: Option<&Path>) -> Places {
        let (state, data) = match root {
            Some(r) => (Some(r.join("state")), Some(r.join("data"))),
            None => (xdg_dir("XDG_STATE_HOME", ".local/state"), xdg_dir("XDG_DATA_HOME", ".local/share")),
        };
        Places {
            trace: trace.to_path_buf(),
            export_dir,
            state: state.map(|d| d.join("falat").join("traces").join(key)),
            data: data.map(|d| d.join("falat").join("reports").join(key)),
            seen: None,
            beside: true,
        }
    }

    /// The places of a trace read from standard input: nothing beside a file, the overrides in
    /// the state folder and the reports in the data folder (or `export_dir`), keyed by the
    /// content's hash (`stdin-HASH`), so that the same trace piped again finds its overrides.
    /// The reports are named after `stdin` (`stdin.falat.md`, `stdin.falat.report.json`).
    pub fn for_stdin(bytes: &[u8], export_dir: Option<PathBuf>, root: Option<&Path>) -> Places {
        use sha2::{Digest, Sha256};
        let hex: String = Sha256::digest(bytes).iter().take(8).map(|b| format!("{b:02x}")).collect();
        let key = format!("stdin-{hex}");
        Places { beside: false, ..Places::keyed(Path::new("stdin"), &key, export_dir, root) }
    }

    /// The overrides file beside the trace, `None` when nothing may go beside it.
    fn beside_overrides(&self) -> Option<PathBuf> {
        self.beside.then(|| overrides_path(&self.trace))
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

/// The schema name of the overrides file this version writes: `v2` adds the undo history.
pub const OVERRIDES_SCHEMA: &str = "falat.overrides/v2";
/// The schema of files written before the undo history was kept; still read.
pub const OVERRIDES_SCHEMA_V1: &str = "falat.overrides/v1";
/// How many undo steps are kept in the file (the oldest are dropped).
pub const UNDO_KEPT: usize = 200;

use crate::fsutil::{self, ReadError, shown};
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
    #[serde(flatten)]
    current: Entry,
    /// The undo history, oldest first (v2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    undo: Vec<Entry>,
}

/// One state of the overrides in the file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Entry {
    #[serde(default)]
    marked: Vec<usize>,
    #[serde(default)]
    excluded: Vec<usize>,
    #[serde(default)]
    pinned: Option<usize>,
}

impl From<&Overrides> for Entry {
    fn from(o: &Overrides) -> Entry {
        Entry { marked: o.marked.clone(), excluded: o.excluded.clone(), pinned: o.pinned }
    }
}

impl From<Entry> for Overrides {
    fn from(e: Entry) -> Overrides {
        Overrides { marked: e.marked, excluded: e.excluded, pinned: e.pinned }
    }
}

/// What was found when loading the overrides.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Restored {
    /// The overrides (empty when there was no file or it was unusable).
    pub overrides: Overrides,
    /// The undo history saved with them, oldest first (empty for a v1 file).
    pub undo: Vec<Overrides>,
    /// Problems to show: a corrupt file and where it was moved, a file left alone, steps out of
    /// range.
    pub problems: Vec<String>,
}

/// What this instance of falat last read from or wrote to a trace's overrides file: a save
/// compares it with what is there now, so that another window's save is merged, not lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The file's text.
    pub text: String,
    /// The overrides it held (the base of the three-way merge, [`merge`]).
    pub overrides: Overrides,
}

/// The overrides files of `places` that exist as regular files of the user's, newest first
/// (beside the trace, and the fallback), with what was left alone and why.
fn present(places: &Places) -> (Vec<(PathBuf, fsutil::PrivateFile)>, Vec<String>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for path in places.beside_overrides().into_iter().chain(places.fallback_overrides()) {
        match fsutil::read_private(&path) {
            Ok(f) => found.push((path, f)),
            Err(ReadError::Missing) => {}
            Err(ReadError::NotPrivate(what)) => {
                problems.push(format!("left {} alone: it is {what}, not an overrides file of yours", shown(&path)));
            }
            Err(ReadError::Io(e)) => problems.push(format!("cannot read the overrides file {}: {e}", shown(&path))),
        }
    }
    // The newest save wins wherever it is; on a tie, the file beside the trace.
    found.sort_by_key(|f| std::cmp::Reverse(f.1.modified));
    (found, problems)
}

/// Loads the overrides of a trace from the newest of the file beside it and the fallback file
/// (the newest save wins: a save that fell back to the state folder because the trace's folder
/// was full or read-only is newer than the file beside the trace). Removes the temporary files
/// a killed falat left beside them ([`fsutil::clean_stale_temps`]); a corrupt file is moved aside
/// and reported ([`load_overrides_at`]); a symbolic link or another user's file is left alone and
/// reported. Records what was read in `places.seen`; returns the overrides and their file.
pub fn load_places(places: &mut Places, n_steps: usize) -> (Restored, Option<PathBuf>) {
    for target in places.beside_overrides().into_iter().chain(places.fallback_overrides()) {
        fsutil::clean_stale_temps(&target);
    }
    places.seen = None;
    let (found, mut problems) = present(places);
    for (path, file) in found {
        let parsed = match parse(&file.text) {
            Ok(f) => f,
            Err(why) => {
                // Moved aside; an older file may still be good.
                problems.extend(corrupt(&path, &why.to_string()).problems);
                continue;
            }
        };
        let restored = restore(parsed, n_steps);
        places.seen = Some(Seen { text: file.text, overrides: restored.overrides.clone() });
        problems.extend(restored.problems.iter().cloned());
        return (Restored { problems, ..restored }, Some(path));
    }
    (Restored { problems, ..Restored::default() }, None)
}

/// Loads the overrides beside `trace` (see [`load_overrides_at`]).
pub fn load_overrides(trace: &Path, n_steps: usize) -> Restored {
    load_overrides_at(&overrides_path(trace), n_steps)
}

/// Loads an overrides file (schema v1 or v2) for a trajectory of `n_steps` steps, without
/// following a symbolic link. A missing file gives empty overrides; a link or another user's file
/// is left alone and reported; a corrupt file is moved aside (renamed to `.bak`, `.bak.1`...,
/// never copied) and reported; steps out of range are dropped and reported.
pub fn load_overrides_at(path: &Path, n_steps: usize) -> Restored {
    match fsutil::read_private(path) {
        Ok(f) => from_text(path, &f.text, n_steps),
        Err(ReadError::Missing) => Restored::default(),
        Err(ReadError::NotPrivate(what)) => Restored {
            problems: vec![format!("left {} alone: it is {what}, not an overrides file of yours", shown(path))],
            ..Restored::default()
        },
        Err(ReadError::Io(e)) => Restored {
            problems: vec![format!("cannot read the overrides file {}: {e}", shown(path))],
            ..Restored::default()
        },
    }
}

/// Why an overrides file's text is not one (displayed after the file's name: "… is not valid:
/// …").
#[derive(Debug, thiserror::Error)]
enum Corrupt {
    /// Its `schema` is neither of the overrides schemas this falat reads (sanitised).
    #[error("has an unknown schema '{0}'")]
    Schema(String),
    /// It is not the JSON of an overrides file.
    #[error("is not valid: {0}")]
    Json(#[from] serde_json::Error),
}

/// Parses an overrides file's text: the file, or why it is not one.
fn parse(text: &str) -> Result<OverridesFile, Corrupt> {
    let f = serde_json::from_str::<OverridesFile>(text)?;
    if f.schema == OVERRIDES_SCHEMA || f.schema == OVERRIDES_SCHEMA_V1 {
        Ok(f)
    } else {
        Err(Corrupt::Schema(crate::text::sanitize(&f.schema)))
    }
}

/// The overrides of the text read from `path` (a corrupt file is moved aside).
fn from_text(path: &Path, text: &str, n_steps: usize) -> Restored {
    match parse(text) {
        Ok(f) => restore(f, n_steps),
        Err(why) => corrupt(path, &why.to_string()),
    }
}

/// The overrides of a parsed file for a trajectory of `n_steps` steps (steps out of range
/// dropped and reported).
fn restore(file: OverridesFile, n_steps: usize) -> Restored {
    let mut problems = Vec::new();
    let mut keep = |v: Vec<usize>, what: &str| -> Vec<usize> {
        let (ok, bad): (Vec<usize>, Vec<usize>) = v.into_iter().partition(|s| *s < n_steps);
        if !bad.is_empty() {
            problems.push(format!("ignored {what} steps out of range: {bad:?}"));
        }
        ok
    };
    let marked = keep(file.current.marked, "marked");
    let excluded = keep(file.current.excluded, "excluded");
    let pinned = keep(file.current.pinned.into_iter().collect(), "pinned").first().copied();
    // The history is the user's past states: one that names a step out of range is dropped with
    // everything before it (undo stops there).
    let in_range = |e: &Entry| e.marked.iter().chain(&e.excluded).chain(&e.pinned).all(|&s| s < n_steps);
    let first_kept = file.undo.iter().rposition(|e| !in_range(e)).map_or(0, |i| i + 1);
    let undo = file.undo.into_iter().skip(first_kept).map(Overrides::from).collect();
    Restored { overrides: Overrides { marked, excluded, pinned }, undo, problems }
}

fn corrupt(path: &Path, why: &str) -> Restored {
    let msg = match fsutil::move_aside(path) {
        Ok(b) => format!("overrides file {} {why}; moved it aside to {}", shown(path), shown(&b)),
        Err(e) => format!("overrides file {} {why}; it could not be moved aside ({e:#})", shown(path)),
    };
    Restored { problems: vec![msg], ..Restored::default() }
}

/// Writes the overrides beside `trace` atomically (temporary file in the same folder, then
/// rename; never over a symbolic link, see [`fsutil::write_private`]), with no undo history.
/// Empty overrides are written too, so that undoing everything is remembered.
///
/// # Errors
/// When the folder is not writable or something other than a regular file of the user's is
/// there.
pub fn save_overrides(trace: &Path, trajectory: &str, o: &Overrides) -> anyhow::Result<PathBuf> {
    let text = overrides_json(trajectory, o, &[])?;
    let path = overrides_path(trace);
    fsutil::write_private(&path, text.as_bytes())?;
    Ok(path)
}

/// The overrides file's text (`falat.overrides/v2`, pretty JSON with a final newline): the
/// overrides and the last [`UNDO_KEPT`] states of the undo history, oldest first.
fn overrides_json(trajectory: &str, o: &Overrides, undo: &[Overrides]) -> anyhow::Result<String> {
    let file = OverridesFile {
        schema: OVERRIDES_SCHEMA.into(),
        trajectory: trajectory.into(),
        current: o.into(),
        undo: undo[undo.len().saturating_sub(UNDO_KEPT)..].iter().map(Entry::from).collect(),
    };
    Ok(serde_json::to_string_pretty(&file)? + "\n")
}

/// Where a file was written, and whether that is the fallback folder because the trace's own
/// folder could not be written (`why` says what failed there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    /// The file written.
    pub path: PathBuf,
    /// Why the fallback was used, when it was.
    pub fallback: Option<Fallback>,
    /// The overrides written when they are not the ones given: another falat saved overrides of
    /// this trace since this one last read or wrote them, and both were merged ([`merge`]).
    pub merged: Option<Overrides>,
    /// What the merge did, in words (never empty when `merged` is set).
    pub warnings: Vec<String>,
}

/// Three-way merge of the overrides: `base` as this window last read or wrote them, `mine` its
/// overrides now, `theirs` what another window saved meanwhile. A step's mark or exclusion
/// follows the side that changed it (so both sides' new marks and exclusions are kept, the union
/// of the changes, and an unmark is not undone); a step both marked and excluded takes this
/// window's state. The pin: when both changed it differently, this window's (the newer save)
/// is kept and a warning names the other's. A pinned step is never excluded. Returns the merged
/// overrides and the warnings.
pub fn merge(base: &Overrides, mine: &Overrides, theirs: &Overrides) -> (Overrides, Vec<String>) {
    let three = |b: &[usize], m: &[usize], t: &[usize]| -> Vec<usize> {
        let mut all: Vec<usize> = b.iter().chain(m).chain(t).copied().collect();
        all.sort_unstable();
        all.dedup();
        all.into_iter()
            .filter(|s| {
                let (in_b, in_m, in_t) = (b.contains(s), m.contains(s), t.contains(s));
                if in_m != in_b { in_m } else { in_t }
            })
            .collect()
    };
    let mut marked = three(&base.marked, &mine.marked, &theirs.marked);
    let mut excluded = three(&base.excluded, &mine.excluded, &theirs.excluded);
    let both: Vec<usize> = marked.iter().copied().filter(|s| excluded.contains(s)).collect();
    for s in both {
        if mine.excluded.contains(&s) {
            marked.retain(|&x| x != s);
        } else {
            excluded.retain(|&x| x != s);
        }
    }
    let mut warnings = Vec::new();
    let mut pinned = if mine.pinned != base.pinned { mine.pinned } else { theirs.pinned };
    if mine.pinned != base.pinned && theirs.pinned != base.pinned && theirs.pinned != mine.pinned {
        let theirs_pin = theirs.pinned.map_or("unpinned the step".to_string(), |s| format!("pinned step {s}"));
        let mine_pin = mine.pinned.map_or("your unpin".to_string(), |s| format!("your pin, step {s}"));
        warnings.push(format!("the other window {theirs_pin}; kept {mine_pin} (the newer)"));
    }
    if let Some(p) = pinned.filter(|p| excluded.contains(p)) {
        if mine.excluded.contains(&p) && mine.pinned != Some(p) {
            warnings.push(format!("dropped the other window's pin of step {p}, which you excluded"));
            pinned = None;
        } else {
            excluded.retain(|&x| x != p);
        }
    }
    (Overrides { marked, excluded, pinned }, warnings)
}

/// Saves the overrides and their undo history beside the trace, else in the fallback state
/// folder. When the newest overrides file ([`load_places`]'s choice) is not what this instance
/// last read or wrote (`places.seen`), another falat saved meanwhile: both are merged
/// ([`merge`]) and [`Saved::merged`] says what was written. A file that changed into something
/// unreadable is moved aside first. Records what was written in `places.seen`.
///
/// # Errors
/// When neither place can be written (the message names both).
pub fn save_places(places: &mut Places, trajectory: &str, o: &Overrides, undo: &[Overrides]) -> anyhow::Result<Saved> {
    // Held until this function returns: another falat saving the same trace waits here, then
    // reads what this one wrote and merges with it, so neither save is lost.
    let _lock = lock_overrides(places);
    let mut merged = o.clone();
    let mut warnings = Vec::new();
    let (found, _) = present(places);
    if let Some((path, file)) = found.into_iter().next()
        && places.seen.as_ref().is_none_or(|s| s.text != file.text)
    {
        match parse(&file.text) {
            Ok(f) => {
                let theirs = Overrides::from(f.current);
                let base = places.seen.as_ref().map(|s| s.overrides.clone()).unwrap_or_default();
                let (m, w) = merge(&base, o, &theirs);
                if m != *o || !w.is_empty() {
                    warnings.push(format!(
                        "another falat saved overrides to {} since you opened the trace; merged them with yours",
                        shown(&path)
                    ));
                }
                merged = m;
                warnings.extend(w);
            }
            Err(why) => warnings.extend(corrupt(&path, &why.to_string()).problems),
        }
    }
    let text = overrides_json(trajectory, &merged, undo)?;
    let (first, why) = match places.beside_overrides() {
        None => (Fallback::Stdin, Fallback::Stdin.reason()),
        Some(beside) => match fsutil::write_private(&beside, text.as_bytes()) {
            Ok(()) => {
                places.seen = Some(Seen { text, overrides: merged.clone() });
                let merged = (merged != *o).then_some(merged);
                return Ok(Saved { path: beside, fallback: None, merged, warnings });
            }
            Err(e) => (Fallback::of_write(&[&beside], &e), format!("{e:#}")),
        },
    };
    let Some(path) = places.fallback_overrides() else {
        anyhow::bail!("{why}; and no home folder is known for a fallback");
    };
    write_creating(&path, text.as_bytes()).with_context(|| format!("{why}; and the fallback"))?;
    places.seen = Some(Seen { text, overrides: merged.clone() });
    let merged = (merged != *o).then_some(merged);
    Ok(Saved { path, fallback: Some(first), merged, warnings })
}

/// An exclusive advisory lock (`File::lock`, released when the file is dropped) on the lock file
/// beside the overrides (`TRACE.falat.json.lock`), else beside the fallback overrides file; `None`
/// when neither can be created (a read-only folder and no home folder): the save then goes on
/// unlocked, as before.
fn lock_overrides(places: &Places) -> Option<std::fs::File> {
    let beside =
        places.beside.then(|| crate::ingest::fs::beside(&places.trace, crate::ingest::fs::OVERRIDES_LOCK_SUFFIX));
    let fallback = places.fallback_overrides().map(|p| {
        let mut name = p.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        name.push(".lock");
        p.with_file_name(name)
    });
    [beside, fallback].into_iter().flatten().find_map(|path| {
        let file = open_lock(&path).ok()?;
        file.lock().ok()?;
        Some(file)
    })
}

/// Opens (creating, mode 0600 on Unix) a lock file without following a symbolic link.
fn open_lock(path: &Path) -> std::io::Result<std::fs::File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    opts.open(path)
}

/// [`fsutil::write_private`] after creating the folder.
fn write_creating(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        fsutil::create_folder(dir)?;
    }
    fsutil::write_private(path, bytes)
}

/// The two report files written by an export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// The Markdown report.
    pub markdown: PathBuf,
    /// The JSON report.
    pub json: PathBuf,
    /// Why the reports are not beside the trace, when they went to the fallback folder.
    pub fallback: Option<Fallback>,
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
        fsutil::create_folder(dir)?;
        return export(&dir.join(&name), t, machine, user);
    }
    let (first, why) = if places.beside {
        match export(&places.trace, t, machine, user) {
            Ok(e) => return Ok(e),
            Err(e) => {
                let (md, json) = (beside(&places.trace, REPORT_MD_SUFFIX), beside(&places.trace, REPORT_JSON_SUFFIX));
                (Fallback::of_write(&[&md, &json], &e), format!("{e:#}"))
            }
        }
    } else {
        (Fallback::Stdin, Fallback::Stdin.reason())
    };
    let Some(dir) = &places.data else {
        anyhow::bail!("{why}; and no home folder is known for a fallback (use --export-dir)");
    };
    fsutil::create_folder(dir).with_context(|| format!("{why}; and the fallback"))?;
    let e = export(&dir.join(&name), t, machine, user).with_context(|| format!("{why}; and the fallback"))?;
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
    fsutil::write_private(&markdown, report::to_markdown_with(t, machine, user).as_bytes())?;
    let value = report::to_json_with(t, machine, user);
    fsutil::write_private(&json, (serde_json::to_string_pretty(&value)? + "\n").as_bytes())?;
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
    fn a_trace_from_standard_input_keeps_its_files_in_the_fallback_folders_keyed_by_its_content() {
        let root = tempfile::tempdir().expect("tempdir");
        let mut p = Places::for_stdin(b"[1]", None, Some(root.path()));
        assert_eq!(p, Places::for_stdin(b"[1]", None, Some(root.path())), "the same content, the same places");
        assert_ne!(p.state, Places::for_stdin(b"[2]", None, Some(root.path())).state);
        let state = p.state.clone().expect("a state folder");
        assert!(state.starts_with(root.path().join("state/falat/traces")), "{}", state.display());
        let o = Overrides { marked: vec![3], ..Overrides::default() };
        let saved = save_places(&mut p, "t", &o, &[]).expect("saved");
        assert_eq!((saved.path, saved.fallback), (state.join("overrides.falat.json"), Some(Fallback::Stdin)));
        let (restored, from) = load_places(&mut Places::for_stdin(b"[1]", None, Some(root.path())), 5);
        assert_eq!((restored.overrides, from), (o, Some(state.join("overrides.falat.json"))));
        assert!(!Path::new("stdin.falat.json").exists(), "nothing beside a file named stdin");
    }

    #[test]
    fn overrides_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let trace = dir.path().join("t.json");
        let o = Overrides { marked: vec![1, 4], excluded: vec![2], pinned: Some(4) };
        let p = save_overrides(&trace, "t", &o).expect("saved");
        assert_eq!(p, dir.path().join("t.json.falat.json"));
        let r = load_overrides(&trace, 10);
        assert_eq!(r, Restored { overrides: o, undo: vec![], problems: vec![] });
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
    fn corrupt_file_is_moved_aside_and_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let trace = dir.path().join("t.json");
        std::fs::write(overrides_path(&trace), "{ not json").expect("write");
        let r = load_overrides(&trace, 10);
        assert!(r.overrides.is_empty());
        assert!(r.problems[0].contains("moved it aside to"), "{:?}", r.problems);
        let bak = dir.path().join("t.json.falat.json.bak");
        assert_eq!(std::fs::read_to_string(&bak).expect("backup"), "{ not json");
        assert!(!overrides_path(&trace).exists(), "moved, not copied");
        // Another corrupt file keeps the first backup and makes another.
        std::fs::write(overrides_path(&trace), "[]").expect("write");
        let r = load_overrides(&trace, 10);
        assert!(r.problems[0].contains(".bak.1"), "{:?}", r.problems);
    }

    /// Two windows saving at the same moment, again and again: the lock beside the overrides
    /// makes each read-merge-write whole, so the last file holds every mark both made. (Without
    /// the lock both read the same file and the later write drops the other's new mark.)
    #[test]
    fn two_windows_saving_at_once_lose_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let trace = dir.path().join("t.json");
        std::fs::write(&trace, "[]").expect("trace");
        let home = dir.path().join("home");
        let rounds = 40;
        let window = |first: usize| {
            let (trace, home) = (trace.clone(), home.clone());
            std::thread::spawn(move || {
                let mut p = Places::new(&trace, None, Some(&home));
                let mut mine = load_places(&mut p, 1000).0.overrides;
                for k in 0..rounds {
                    mine.marked.push(first + 2 * k);
                    mine.marked.sort_unstable();
                    let saved = save_places(&mut p, "t", &mine, &[]).expect("saves");
                    if let Some(m) = saved.merged {
                        mine = m;
                    }
                }
            })
        };
        let (a, b) = (window(0), window(1));
        a.join().expect("window a");
        b.join().expect("window b");
        let all: Vec<usize> = (0..2 * rounds).collect();
        assert_eq!(load_overrides(&trace, 1000).overrides.marked, all);
        assert!(dir.path().join("t.json.falat.json.lock").exists());
        assert_eq!(
            crate::ingest::fs::falat_file_kind(&dir.path().join("t.json.falat.json.lock")),
            Some("overrides lock")
        );
    }

    /// Two windows on one trace: each opens, then they save in turn. Nothing either did is lost;
    /// a conflicting pin keeps the newer save's, with a warning.
    #[test]
    fn two_windows_saving_in_turn_merge_and_lose_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let trace = dir.path().join("t.json");
        std::fs::write(&trace, "[]").expect("trace");
        let open = || {
            let mut p = Places::new(&trace, None, Some(&dir.path().join("home")));
            let (r, _) = load_places(&mut p, 20);
            (p, r.overrides)
        };
        let (mut a, _) = open();
        let (mut b, _) = open();
        // A marks 1 and pins 3.
        let a_now = Overrides { marked: vec![1], excluded: vec![], pinned: Some(3) };
        let saved = save_places(&mut a, "t", &a_now, &[]).expect("a saves");
        assert_eq!((saved.merged, saved.warnings.len()), (None, 0), "nothing to merge yet");
        // B, which never saw A's save, marks 5 and excludes 2.
        let b_now = Overrides { marked: vec![5], excluded: vec![2], pinned: None };
        let saved = save_places(&mut b, "t", &b_now, &[Overrides::default()]).expect("b saves");
        let both = Overrides { marked: vec![1, 5], excluded: vec![2], pinned: Some(3) };
        assert_eq!(saved.merged, Some(both.clone()));
        assert!(saved.warnings[0].contains("another falat saved overrides"), "{:?}", saved.warnings);
        assert_eq!(load_overrides(&trace, 20).overrides, both);
        // A unmarks 1 and pins 7; B's mark and exclusion stay, A's unmark holds.
        let a_now = Overrides { marked: vec![], excluded: vec![], pinned: Some(7) };
        let saved = save_places(&mut a, "t", &a_now, &[]).expect("a saves again");
        let after = Overrides { marked: vec![5], excluded: vec![2], pinned: Some(7) };
        assert_eq!(saved.merged, Some(after.clone()));
        // B pins 9 meanwhile (from the state it merged): its pin is the newer one and wins,
        // with a warning naming A's.
        let b_now = Overrides { marked: vec![1, 5], excluded: vec![2], pinned: Some(9) };
        let saved = save_places(&mut b, "t", &b_now, &[]).expect("b saves again");
        let last = Overrides { marked: vec![5], excluded: vec![2], pinned: Some(9) };
        assert_eq!(saved.merged, Some(last.clone()));
        assert!(
            saved.warnings.iter().any(|w| w.contains("pinned step 7") && w.contains("step 9")),
            "{:?}",
            saved.warnings
        );
        assert_eq!(load_overrides(&trace, 20).overrides, last);
        // Saving again without another window in between merges nothing.
        let saved = save_places(&mut b, "t", &last, &[]).expect("b saves once more");
        assert_eq!((saved.merged, saved.warnings), (None, vec![]));
    }

    #[test]
    fn the_undo_history_is_saved_with_the_overrides_and_v1_files_still_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        let trace = dir.path().join("t.json");
        let mut p = Places::new(&trace, None, Some(dir.path()));
        let history = vec![Overrides::default(), Overrides { marked: vec![2], ..Overrides::default() }];
        let now = Overrides { marked: vec![2], excluded: vec![], pinned: Some(4) };
        save_places(&mut p, "t", &now, &history).expect("saved");
        let text = std::fs::read_to_string(overrides_path(&trace)).expect("file");
        assert!(text.contains("\"schema\": \"falat.overrides/v2\""), "{text}");
        let (r, _) = load_places(&mut Places::new(&trace, None, Some(dir.path())), 10);
        assert_eq!((r.overrides, r.undo), (now, history));
        std::fs::write(
            overrides_path(&trace),
            r#"{"schema": "falat.overrides/v1", "trajectory": "t", "marked": [1], "excluded": [], "pinned": null}"#,
        )
        .expect("v1");
        let r = load_overrides(&trace, 10);
        assert_eq!((r.overrides.marked, r.undo, r.problems), (vec![1], vec![], vec![]));
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_backup_link_is_never_written_through() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("outside");
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "precious").expect("victim");
        let trace = dir.path().join("t.json");
        std::fs::write(&trace, "[]").expect("trace");
        std::fs::write(overrides_path(&trace), "{ corrupt").expect("corrupt");
        let bak = dir.path().join("t.json.falat.json.bak");
        std::os::unix::fs::symlink(&victim, &bak).expect("link");
        let (r, _) = load_places(&mut Places::new(&trace, None, Some(dir.path())), 10);
        assert!(r.problems.iter().any(|p| p.contains("moved it aside to") && p.contains(".bak.1")), "{:?}", r.problems);
        assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "precious", "nothing written through the link");
        assert!(std::fs::symlink_metadata(&bak).expect("bak").file_type().is_symlink(), "the link is left as it is");
        assert_eq!(std::fs::read_to_string(dir.path().join("t.json.falat.json.bak.1")).expect("moved"), "{ corrupt");
    }

    #[cfg(unix)]
    #[test]
    fn an_overrides_file_that_is_a_link_to_a_secret_is_never_read_or_copied() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("outside");
        let secret = outside.path().join("id_ed25519");
        std::fs::write(&secret, "SECRET KEY").expect("secret");
        let trace = dir.path().join("t.json");
        std::fs::write(&trace, "[]").expect("trace");
        let planted = overrides_path(&trace);
        std::os::unix::fs::symlink(&secret, &planted).expect("link");
        let mut places = Places::new(&trace, None, Some(&dir.path().join("home")));
        let (r, from) = load_places(&mut places, 10);
        assert_eq!((r.overrides.is_empty(), from), (true, None));
        assert!(r.problems[0].contains("it is a symbolic link"), "{:?}", r.problems);
        // A save neither writes through nor replaces the link: it goes to the fallback.
        let o = Overrides { marked: vec![1], ..Overrides::default() };
        let saved = save_places(&mut places, "t", &o, &[]).expect("saved to the fallback");
        assert!(saved.fallback.is_some() && saved.path.starts_with(dir.path().join("home")), "{saved:?}");
        assert_eq!(std::fs::read_to_string(&secret).expect("secret"), "SECRET KEY");
        assert!(std::fs::symlink_metadata(&planted).expect("link").file_type().is_symlink());
        // Nothing in the trace's folder holds the secret.
        for e in std::fs::read_dir(dir.path()).expect("dir").flatten() {
            if e.file_type().expect("type").is_file() {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                assert!(!text.contains("SECRET KEY"), "{} holds the secret", e.path().display());
            }
        }
    }

    /// The overrides file is a symbolic link in a folder that can be written:
    /// the save goes to the fallback, and the reason names the link, not the folder. Before, it
    /// read "the trace's folder cannot be written".
    #[cfg(unix)]
    #[test]
    fn a_save_beside_a_symbolic_link_names_the_link_as_the_reason() {
        let dir = tempfile::tempdir().expect("tempdir");
        let trace = dir.path().join("t.json");
        std::fs::write(&trace, "[]").expect("trace");
        let target = dir.path().join("mine.json");
        std::fs::write(&target, "kept").expect("target");
        std::os::unix::fs::symlink(&target, overrides_path(&trace)).expect("link");
        let mut places = Places::new(&trace, None, Some(&dir.path().join("home")));
        let o = Overrides { pinned: Some(3), ..Overrides::default() };
        let saved = save_places(&mut places, "t", &o, &[]).expect("saved to the fallback");
        let why = saved.fallback.expect("a fallback");
        assert_eq!(
            why,
            Fallback::NotPrivate { file: "t.json.falat.json".into(), what: fsutil::NotPrivate::SymbolicLink }
        );
        assert_eq!(why.reason(), "t.json.falat.json is a symbolic link, which falat does not follow");
        // Nothing is lost: the overrides are in the fallback, the link and its target as they were.
        assert_eq!(load_overrides_at(&saved.path), o);
        assert_eq!(std::fs::read_to_string(&target).expect("target"), "kept");
        assert!(std::fs::symlink_metadata(overrides_path(&trace)).expect("link").file_type().is_symlink());
    }

    /// The reason of each kind of failed write beside the trace: a folder that takes no file (a
    /// system folder, even for root), and any other error in a folder that can be written.
    #[test]
    fn a_failed_write_beside_the_trace_gives_the_reason_that_stopped_it() {
        let e = anyhow::anyhow!("cannot write /proc/self/t.json.falat.json: no file can be created in it");
        let why = Fallback::of_write(&[Path::new("/proc/self/t.json.falat.json")], &e);
        assert_eq!(why, Fallback::Unwritable(format!("{e:#}")));
        assert_eq!(why.reason(), "the trace's folder cannot be written");
        let dir = tempfile::tempdir().expect("tempdir");
        let e = anyhow::anyhow!("cannot replace t.json.falat.json: rename refused");
        let why = Fallback::of_write(&[&dir.path().join("t.json.falat.json")], &e);
        assert_eq!(why.reason(), "cannot replace t.json.falat.json: rename refused");
        std::fs::create_dir(dir.path().join("t.json.falat.md")).expect("folder");
        let why = Fallback::of_write(&[&dir.path().join("t.json.falat.md")], &e);
        assert_eq!(why.reason(), "t.json.falat.md is a folder, which falat leaves alone");
    }

    /// The overrides of the file at `path`.
    fn load_overrides_at(path: &Path) -> Overrides {
        let text = std::fs::read_to_string(path).expect("overrides");
        Overrides::from(parse(&text).expect("parses").current)
    }

    #[test]
    fn stale_temporary_files_are_cleaned_up_on_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let trace = dir.path().join("t.json");
        let stale = dir.path().join(".t.json.falat.json.Xy12Zw.falat-tmp");
        std::fs::write(&stale, "{\"schema\": ").expect("stale");
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options().write(true).open(&stale).expect("open").set_modified(old).expect("mtime");
        let (r, _) = load_places(&mut Places::new(&trace, None, Some(dir.path())), 10);
        assert_eq!(r, Restored::default());
        assert!(!stale.exists(), "the killed save's temporary file is gone");
    }

    /// The trace's folder was writable for a first save, then not (full, or read-only): the
    /// newer save went to the state folder, and the next open takes it, not the older file
    /// beside the trace.
    #[test]
    fn the_newest_save_wins_over_the_older_file_beside_the_trace() {
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = dir.path().join("traces");
        std::fs::create_dir(&folder).expect("folder");
        let trace = folder.join("t.json");
        std::fs::write(&trace, "[]").expect("trace");
        let home = dir.path().join("home");
        let mut places = Places::new(&trace, None, Some(&home));
        let first = Overrides { pinned: Some(1), ..Overrides::default() };
        let saved = save_places(&mut places, "t", &first, &[]).expect("first save");
        assert_eq!(saved.path, overrides_path(&trace));
        // The first save is a minute old.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options().write(true).open(&saved.path).expect("open").set_modified(old).expect("mtime");
        let newer = Overrides { marked: vec![2], excluded: vec![], pinned: Some(4) };
        set_read_only(&folder, true);
        let saved = save_places(&mut places, "t", &newer, &[]);
        set_read_only(&folder, false);
        let saved = match saved.expect("second save") {
            s if s.fallback.is_some() => s,
            // Running as root, a read-only folder is still written: put the newer save where a
            // full disk would have sent it.
            _ => {
                std::fs::File::options()
                    .write(true)
                    .open(overrides_path(&trace))
                    .expect("o")
                    .set_modified(old)
                    .expect("m");
                let path = places.fallback_overrides().expect("fallback");
                write_creating(&path, overrides_json("t", &newer, &[]).expect("json").as_bytes()).expect("fallback");
                std::fs::write(overrides_path(&trace), overrides_json("t", &first, &[]).expect("json")).expect("old");
                std::fs::File::options()
                    .write(true)
                    .open(overrides_path(&trace))
                    .expect("o")
                    .set_modified(old)
                    .expect("m");
                Saved { path, fallback: Some(Fallback::Unwritable("simulated".into())), merged: None, warnings: vec![] }
            }
        };
        assert!(saved.path.starts_with(&home), "{}", saved.path.display());
        assert_eq!(load_overrides(&trace, 10).overrides, first, "the older file is still beside the trace");
        let mut reopened = Places::new(&trace, None, Some(&home));
        let (r, from) = load_places(&mut reopened, 10);
        assert_eq!(r.overrides, newer);
        assert_eq!(from, Some(saved.path));
    }

    fn set_read_only(dir: &Path, ro: bool) {
        let mut perm = std::fs::metadata(dir).expect("meta").permissions();
        perm.set_readonly(ro);
        std::fs::set_permissions(dir, perm).expect("chmod");
    }

    #[test]
    fn merge_follows_the_side_that_changed_each_step() {
        let o = |m: &[usize], x: &[usize], p: Option<usize>| Overrides {
            marked: m.to_vec(),
            excluded: x.to_vec(),
            pinned: p,
        };
        let base = o(&[1, 2], &[3], None);
        // Mine unmarks 1 and excludes 4; theirs marks 6 and includes 3 again.
        let (m, w) = merge(&base, &o(&[2], &[3, 4], None), &o(&[1, 2, 6], &[], None));
        assert_eq!((m, w), (o(&[2, 6], &[4], None), vec![]));
        // A step they marked and I excluded takes my state.
        let (m, _) = merge(&o(&[], &[], None), &o(&[], &[5], None), &o(&[5], &[], None));
        assert_eq!(m, o(&[], &[5], None));
        // Their pin of a step I excluded is dropped, with a warning.
        let (m, w) = merge(&o(&[], &[], None), &o(&[], &[5], None), &o(&[], &[], Some(5)));
        assert_eq!(m, o(&[], &[5], None));
        assert_eq!(w.len(), 1, "{w:?}");
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
