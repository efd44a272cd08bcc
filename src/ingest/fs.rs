//! The file-system edge of ingest: reading files and folders, then handing bytes to the parsers.

use std::path::{Path, PathBuf};

use super::{FormatChoice, LoadError, Loaded, SUPPORTED, parse_with_related};
use crate::model::SourceFormat;

/// Reads and parses one trace file; `format` overrides detection.
///
/// Files the trace refers to (Claude Code sub-agent sessions, Codex sub-agent threads) are read
/// from beside it, see [`read_related`].
///
/// # Errors
/// [`LoadError::Io`] when the file cannot be read, otherwise what [`parse_with_related`] returns.
pub fn load_path(path: &Path, format: Option<SourceFormat>) -> Result<Loaded, LoadError> {
    let choice = match format {
        Some(f) => FormatChoice::Force(f),
        None => FormatChoice::Detect(SUPPORTED.to_vec()),
    };
    load_path_with(path, &choice)
}

/// Reads and parses one trace file with the format chosen by `choice`.
///
/// # Errors
/// [`LoadError::Io`] when the file cannot be read, otherwise what [`parse_with_related`] returns.
pub fn load_path_with(path: &Path, choice: &FormatChoice) -> Result<Loaded, LoadError> {
    let shown = path.display().to_string();
    let bytes = read_trace_file(path)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    parse_with_related(&shown, &bytes, choice, &|rel| read_related(&dir, rel))
}

/// The name under which standard input is shown in messages and reports when `-` is given as a
/// trace.
pub const STDIN_NAME: &str = "<stdin>";

/// Whether a trace path means standard input (`-`).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// [`load_path_with`], or, for `-`, the trace read from standard input (shown as
/// [`STDIN_NAME`]; no files beside it are read).
///
/// # Errors
/// [`LoadError::Io`] when standard input or the file cannot be read, otherwise what
/// [`parse_with_related`] returns.
pub fn load_input(path: &Path, choice: &FormatChoice) -> Result<Loaded, LoadError> {
    if !is_stdin(path) {
        return load_path_with(path, choice);
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes)
        .map_err(|e| LoadError::Io { path: STDIN_NAME.into(), message: e.to_string() })?;
    parse_with_related(STDIN_NAME, &bytes, choice, &|_| None)
}

/// The most bytes falat reads from one file (1 GiB): loading takes a small multiple of the file
/// in memory (`docs/FORMATS.md`, "Cost"), so a larger file is refused before it is read.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// Reads a file falat loads (a trace, a related file, a label file): only a regular file (or a
/// link to one), of at most [`MAX_FILE_BYTES`]. A FIFO, a device (`/dev/zero`), a socket or a
/// folder is refused without being opened for reading, so it can neither block nor fill memory.
///
/// # Errors
/// [`LoadError::Io`] naming the file and saying what it is instead, how large it is, or the OS
/// error.
pub fn read_trace_file(path: &Path) -> Result<Vec<u8>, LoadError> {
    use std::io::Read;
    let io = |message: String| LoadError::Io { path: path.display().to_string(), message };
    let meta = std::fs::metadata(path).map_err(|e| io(e.to_string()))?;
    if !meta.is_file() {
        return Err(io(format!("{}, expected a regular file", file_kind(&meta))));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(io(too_large(meta.len())));
    }
    let file = std::fs::File::open(path).map_err(|e| io(e.to_string()))?;
    // The file may have been replaced or may grow after `metadata`: read one byte past the cap
    // at most.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| io(e.to_string()))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(io(too_large(bytes.len() as u64)));
    }
    Ok(bytes)
}

fn too_large(len: u64) -> String {
    format!("the file has {len} bytes, more than the {} MiB falat reads from one file", MAX_FILE_BYTES >> 20)
}

/// What a file that is not a regular file is, for messages.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_dir() {
        return "it is a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "it is a FIFO (named pipe)";
        }
        if ft.is_char_device() || ft.is_block_device() {
            return "it is a device";
        }
        if ft.is_socket() {
            return "it is a socket";
        }
    }
    "it is not a regular file"
}

/// Reads `rel` (a `/`-separated path relative to `dir`, see [`super::Related`]); a last component
/// with one `*` reads the first matching file in name order. `None` when nothing matches, the file
/// cannot be read, or `rel` is absolute or climbs out of `dir` with `..`.
pub fn read_related(dir: &Path, rel: &str) -> Option<Vec<u8>> {
    let parts: Vec<&str> = rel.split('/').collect();
    let unsafe_part = |p: &&str| p.is_empty() || *p == "." || *p == ".." || p.contains('\\');
    if rel.starts_with('/') || parts.iter().any(unsafe_part) {
        return None;
    }
    let (name, folders) = parts.split_last()?;
    let folder = folders.iter().fold(dir.to_path_buf(), |d, p| d.join(p));
    let Some((prefix, suffix)) = name.split_once('*') else {
        return read_trace_file(&folder.join(name)).ok();
    };
    let mut matches: Vec<PathBuf> = std::fs::read_dir(&folder)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
            n.len() >= prefix.len() + suffix.len() && n.starts_with(prefix) && n.ends_with(suffix)
        })
        .collect();
    matches.sort();
    matches.into_iter().find_map(|p| read_trace_file(&p).ok())
}

/// The trace files of a data-set folder, recursively, sorted by path (`.json`, `.jsonl` and
/// Inspect AI `.eval`), without falat's own files ([`falat_file_kind`]: overrides, their backups,
/// exported reports, temporary files). Symbolic links are followed, but a link back to a folder
/// being walked (a loop, `back -> ..`) is not, and a file reached twice (through two links) is
/// listed once. An entry named like a trace that is not a regular file (a FIFO, a device) is
/// listed too, so that loading it reports it ([`read_trace_file`]) instead of blocking on it.
///
/// # Errors
/// [`LoadError::Io`] when `dir` cannot be listed.
pub fn dataset_files(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for entry in walkdir::WalkDir::new(dir).follow_links(true) {
        let entry = match entry {
            Ok(e) => e,
            // The root itself: say it cannot be listed. Below it, a loop or an unreadable
            // sub-folder is left out, as the files in it cannot be traces of this set.
            Err(e) if e.depth() == 0 => {
                let message = e.io_error().map_or_else(|| e.to_string(), ToString::to_string);
                return Err(LoadError::Io { path: dir.display().to_string(), message });
            }
            Err(_) => continue,
        };
        let p = entry.path();
        if entry.file_type().is_dir()
            || !p.extension().is_some_and(|e| e == "json" || e == "jsonl" || e == "eval")
            || falat_file_kind(p).is_some()
        {
            continue;
        }
        let id = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if seen.insert(id) {
            out.push(p.to_path_buf());
        }
    }
    out.sort_by_key(|a| natural_key(a));
    Ok(out)
}

/// The suffix of the user's overrides file beside a trace (`TRACE.falat.json`).
pub const OVERRIDES_SUFFIX: &str = ".falat.json";
/// The suffix of the lock file beside an overrides file (`TRACE.falat.json.lock`), held while
/// one falat reads, merges and writes the overrides, so that two windows never interleave.
pub const OVERRIDES_LOCK_SUFFIX: &str = ".falat.json.lock";

/// The suffix of the exported Markdown report beside a trace (`TRACE.falat.md`).
pub const REPORT_MD_SUFFIX: &str = ".falat.md";
/// The suffix of the exported JSON report beside a trace (`TRACE.falat.report.json`).
pub const REPORT_JSON_SUFFIX: &str = ".falat.report.json";

/// The path with `suffix` appended to the full file name (`a/b.json` → `a/b.json.falat.json`).
pub fn beside(trace: &Path, suffix: &str) -> PathBuf {
    crate::fsutil::beside(trace, suffix)
}

/// What a file is when falat wrote it beside a trace, by its name: `"overrides file"`
/// ([`OVERRIDES_SUFFIX`]), `"overrides backup"` (`.falat.json.bak`, `.falat.json.bak.N`),
/// `"exported report"` ([`REPORT_JSON_SUFFIX`], [`REPORT_MD_SUFFIX`]) or `"temporary file"`
/// ([`crate::fsutil::TEMP_SUFFIX`]) or `"overrides lock"` ([`OVERRIDES_LOCK_SUFFIX`]); `None` for
/// any other file.
pub fn falat_file_kind(p: &Path) -> Option<&'static str> {
    let name = p.file_name()?.to_string_lossy();
    let backup = name.rsplit_once(".bak").is_some_and(|(head, tail)| {
        head.ends_with(OVERRIDES_SUFFIX)
            && (tail.is_empty()
                || tail.strip_prefix('.').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
    });
    if name.ends_with(REPORT_JSON_SUFFIX) || name.ends_with(REPORT_MD_SUFFIX) {
        Some("exported report")
    } else if name.ends_with(OVERRIDES_SUFFIX) {
        Some("overrides file")
    } else if backup {
        Some("overrides backup")
    } else if name.ends_with(crate::fsutil::TEMP_SUFFIX) {
        Some("temporary file")
    } else if name.ends_with(OVERRIDES_LOCK_SUFFIX) {
        Some("overrides lock")
    } else {
        None
    }
}

/// Sort key that orders `2.json` before `10.json` within one folder.
fn natural_key(p: &Path) -> (PathBuf, u64, String) {
    let parent = p.parent().map(Path::to_path_buf).unwrap_or_default();
    let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    (parent, stem.parse::<u64>().unwrap_or(u64::MAX), stem)
}

/// A labelled trajectory of a benchmark folder and where it came from.
#[derive(Debug, Clone)]
pub struct LabelledFile {
    /// The file the trajectory came from.
    pub file: PathBuf,
    /// The trajectory; its gold label comes from the trace or from a label file.
    pub trajectory: crate::model::Trajectory,
}

/// Everything [`load_labelled`] read: labelled trajectories in path order, and one message per
/// file or trajectory it skipped (unreadable, unlabelled, a label outside its trajectory).
#[derive(Debug, Clone, Default)]
pub struct LabelledSet {
    /// Trajectories with a gold step.
    pub items: Vec<LabelledFile>,
    /// What was skipped and why.
    pub skipped: Vec<String>,
    /// How many of `skipped` are files that could not be read or parsed (trace or label files),
    /// as opposed to trajectories without a label: a caller exits with an error status for them.
    pub unreadable: usize,
}

fn parse_labels(p: &Path, text: &str) -> Result<super::labels::LabelSet, LoadError> {
    super::labels::parse(text).map_err(|e| LoadError::Labels { path: p.display().to_string(), message: e.to_string() })
}

/// One `FILE:LINE: message` per record of a label file that was skipped.
fn skipped_records(file: &Path, set: &super::labels::LabelSet) -> Vec<String> {
    set.diagnostics
        .iter()
        .map(|d| {
            let at = d.line.map(|l| format!(":{l}")).unwrap_or_default();
            format!("{}{at}: {}", file.display(), d.message)
        })
        .collect()
}

/// Reads and parses one label file (`docs/LABELS.md`: AgentRx ground truth or falat labels JSONL).
///
/// # Errors
/// [`LoadError::Io`] naming the file when it cannot be read or is not a label file.
pub fn read_label_file(path: &Path) -> Result<super::labels::LabelSet, LoadError> {
    let bytes = read_trace_file(path)?;
    let text = String::from_utf8(bytes).map_err(|e| LoadError::Io {
        path: path.display().to_string(),
        message: format!("not UTF-8 (invalid byte at offset {})", e.utf8_error().valid_up_to()),
    })?;
    parse_labels(path, &text)
}

/// Label files as read: each path with its parsed set.
pub type LabelSets = Vec<(PathBuf, super::labels::LabelSet)>;

/// Reads every label file of `label_files` once (`docs/LABELS.md`), for [`apply_label_sets`]: the
/// parsed sets beside their paths, and one message per record that was skipped (with its file and
/// line, sanitised: a record's message may quote the file's content).
///
/// # Errors
/// A label file that cannot be read or parsed ([`read_label_file`]).
pub fn read_label_files(label_files: &[PathBuf]) -> Result<(LabelSets, Vec<String>), LoadError> {
    let mut sets = Vec::with_capacity(label_files.len());
    let mut notes = Vec::new();
    for f in label_files {
        let set = read_label_file(f)?;
        notes.extend(skipped_records(f, &set).iter().map(|n| crate::text::sanitize(n)));
        sets.push((f.clone(), set));
    }
    Ok((sets, notes))
}

/// Gives the trajectories of one trace the gold labels of `sets` ([`read_label_files`]) that name
/// them (a label in the trace itself is replaced), for `inspect`, `diagnose` and `open --labels`.
/// Labels only show beside a verdict; no method reads them.
///
/// Returns one message per thing worth saying about this trace: a label whose step lies outside
/// its trajectory, a label whose agent is not the one recorded at its step, and, when no label of
/// a file names any of the trajectories, which ids they have.
pub fn apply_label_sets(
    sets: &[(PathBuf, super::labels::LabelSet)],
    trajectories: &mut [crate::model::Trajectory],
) -> Vec<String> {
    let mut notes = Vec::new();
    for (f, set) in sets {
        let file = crate::text::sanitize(&f.display().to_string());
        let (diagnostics, applied) = super::labels::apply_each(set, trajectories);
        for d in diagnostics {
            notes.push(format!("{file}: {}", d.message));
        }
        // A label whose agent is not the one recorded at its step is kept as given (the
        // annotator may blame the agent behind a step), but a person comparing should know.
        for &(ti, li) in &applied {
            let (t, l) = (&trajectories[ti], &set.labels[li]);
            let Some(step) = t.gold.as_ref().and_then(|g| g.step).and_then(|s| t.steps.get(s)) else { continue };
            if !l.agent.trim().is_empty() && !l.agent.trim().eq_ignore_ascii_case(step.agent.trim()) {
                notes.push(format!(
                    "{file}: the label of {} names agent {} at step {}, which {} took; kept as given",
                    crate::text::sanitize(&t.id),
                    crate::text::sanitize(&l.agent),
                    step.index,
                    crate::text::sanitize(&step.agent)
                ));
            }
        }
        let named = set.labels.iter().any(|l| trajectories.iter().any(|t| super::labels::names(&l.trajectory, t)));
        if !named && !set.labels.is_empty() {
            let ids: Vec<String> = trajectories.iter().take(5).map(|t| crate::text::sanitize(&t.id)).collect();
            let more =
                if trajectories.len() > 5 { format!(" and {} more", trajectories.len() - 5) } else { String::new() };
            notes.push(format!(
                "{file}: none of its {} labels names a trajectory of this trace (its ids: {}{more})",
                set.labels.len(),
                ids.join(", ")
            ));
        }
    }
    notes
}

/// Gives every trajectory of one trace the task given on the command line (`--task`,
/// `--task-file`), for a trace that does not record it or records it wrongly.
///
/// Returns one note per trajectory whose recorded, non-empty task differs and is replaced (its
/// id and the recorded task's first line, sanitised), so a replaced request is never silent.
pub fn apply_task(task: &str, trajectories: &mut [crate::model::Trajectory]) -> Vec<String> {
    let mut notes = Vec::new();
    for t in trajectories.iter_mut() {
        let recorded = t.task.trim();
        if !recorded.is_empty() && recorded != task.trim() {
            let first: String = recorded.lines().next().unwrap_or_default().chars().take(80).collect();
            notes.push(crate::text::sanitize(&format!("the task given replaces the one {} records: {first:?}", t.id)));
        }
        t.task = task.to_string();
    }
    notes
}

/// [`read_label_files`] then [`apply_label_sets`], for one trace: the skipped records' messages
/// first, then the trace's.
///
/// # Errors
/// A label file that cannot be read or parsed ([`read_label_file`]).
pub fn apply_label_files(
    label_files: &[PathBuf],
    trajectories: &mut [crate::model::Trajectory],
) -> Result<Vec<String>, LoadError> {
    let (sets, mut notes) = read_label_files(label_files)?;
    notes.extend(apply_label_sets(&sets, trajectories));
    Ok(notes)
}

/// Loads every trajectory under `dirs` and gives it a gold label: from the trace itself
/// (Who&When, falat JSONL), or from a label file (`docs/LABELS.md`): any file in the same folders
/// recognised by [`super::labels::detect`], and every file of `label_files`. Trajectories without
/// a gold step are left out (listed in `skipped`).
///
/// # Errors
/// A folder that cannot be listed, or a `label_files` entry that cannot be read or parsed.
pub fn load_labelled(dirs: &[PathBuf], label_files: &[PathBuf]) -> Result<LabelledSet, LoadError> {
    let mut out = LabelledSet::default();
    let mut traces: Vec<(PathBuf, crate::model::Trajectory)> = Vec::new();
    // Each label set with the folder it applies to (`None`: every folder).
    let mut sets: Vec<(PathBuf, Option<PathBuf>, super::labels::LabelSet)> = Vec::new();
    for f in label_files {
        sets.push((f.clone(), None, read_label_file(f)?));
    }
    for dir in dirs {
        for f in dataset_files(dir)? {
            let bytes = match read_trace_file(&f) {
                Ok(b) => b,
                Err(e) => {
                    out.skipped.push(e.to_string());
                    out.unreadable += 1;
                    continue;
                }
            };
            let text = String::from_utf8_lossy(&bytes);
            if super::labels::detect(&text).is_some() {
                match parse_labels(&f, &text) {
                    Ok(set) => {
                        let folder = f.parent().map(Path::to_path_buf);
                        sets.push((f, folder, set));
                    }
                    Err(e) => {
                        out.skipped.push(e.to_string());
                        out.unreadable += 1;
                    }
                }
                continue;
            }
            let shown = f.display().to_string();
            let folder = f.parent().map(Path::to_path_buf).unwrap_or_default();
            let choice = FormatChoice::Detect(SUPPORTED.to_vec());
            match parse_with_related(&shown, &bytes, &choice, &|rel| read_related(&folder, rel)) {
                Ok(loaded) => traces.extend(loaded.trajectories.into_iter().map(|t| (f.clone(), t))),
                Err(e) => {
                    out.skipped.push(e.to_string());
                    out.unreadable += 1;
                }
            }
        }
    }
    for (f, _, set) in &sets {
        out.skipped.extend(skipped_records(f, set));
    }
    // A label file inside a folder labels the traces of that folder only; `label_files` label all.
    for (f, folder, set) in &sets {
        let (mut mine, idx): (Vec<crate::model::Trajectory>, Vec<usize>) = traces
            .iter()
            .enumerate()
            .filter(|(_, (p, _))| folder.as_ref().is_none_or(|d| p.parent() == Some(d.as_path())))
            .map(|(i, (_, t))| (t.clone(), i))
            .unzip();
        for d in super::labels::apply(set, &mut mine) {
            out.skipped.push(format!("{}: {}", f.display(), d.message));
        }
        for (t, i) in mine.into_iter().zip(idx) {
            traces[i].1 = t;
        }
    }
    for (f, t) in traces {
        if t.gold.as_ref().is_some_and(|g| g.step.is_some()) {
            out.items.push(LabelledFile { file: f, trajectory: t });
        } else {
            out.skipped.push(format!("{}: {}: no gold label with a step", f.display(), t.id));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod dataset_tests {
    use super::*;

    #[test]
    fn dataset_files_leave_out_what_falat_wrote_beside_a_trace() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "2.json",
            "10.json",
            "run.jsonl",
            "2.json.falat.json",
            "2.json.falat.report.json",
            "notes.md",
            "2.json#a.falat.json",
        ] {
            std::fs::write(dir.path().join(name), "{}").unwrap();
        }
        let names: Vec<String> = dataset_files(dir.path())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["2.json", "10.json", "run.jsonl"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_loop_is_walked_once() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(dir.path().join("1.json"), "{}").unwrap();
        std::fs::write(sub.join("2.json"), "{}").unwrap();
        std::os::unix::fs::symlink("..", sub.join("back")).unwrap();
        std::os::unix::fs::symlink("2.json", sub.join("again.json")).unwrap();
        let files = dataset_files(dir.path()).unwrap();
        let rel: Vec<String> =
            files.iter().map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string()).collect();
        assert_eq!(rel.len(), 2, "each file once: {rel:?}");
        assert!(rel.contains(&"1.json".to_string()), "{rel:?}");
    }

    #[test]
    fn falat_s_own_files_are_known_by_name() {
        let kind = |n: &str| falat_file_kind(Path::new(n));
        assert_eq!(kind("d/t.json.falat.json"), Some("overrides file"));
        assert_eq!(kind("t.json.falat.json.bak"), Some("overrides backup"));
        assert_eq!(kind("t.json.falat.json.bak.12"), Some("overrides backup"));
        assert_eq!(kind("t.json.falat.report.json"), Some("exported report"));
        assert_eq!(kind(".t.json.falat.json.aB3dE9.falat-tmp"), Some("temporary file"));
        assert_eq!(kind("t.json"), None);
        assert_eq!(kind("t.json.bak"), None);
        assert_eq!(kind("t.json.falat.json.bak.x"), None);
    }
}
