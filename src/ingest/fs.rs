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
    let bytes = std::fs::read(path).map_err(|e| LoadError::Io { path: shown.clone(), message: e.to_string() })?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    parse_with_related(&shown, &bytes, choice, &|rel| read_related(&dir, rel))
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
        return std::fs::read(folder.join(name)).ok();
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
    matches.into_iter().find_map(|p| std::fs::read(p).ok())
}

/// The trace files of a data-set folder, recursively, sorted by path (`.json` and `.jsonl`).
///
/// # Errors
/// [`LoadError::Io`] when a folder cannot be listed.
pub fn dataset_files(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d)
            .map_err(|e| LoadError::Io { path: d.display().to_string(), message: e.to_string() })?;
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "json" || e == "jsonl")
                && !p.to_string_lossy().ends_with(".falat.json")
            {
                out.push(p);
            }
        }
    }
    out.sort_by_key(|a| natural_key(a));
    Ok(out)
}

/// Sort key that orders `2.json` before `10.json` within one folder.
fn natural_key(p: &Path) -> (PathBuf, u64, String) {
    let parent = p.parent().map(Path::to_path_buf).unwrap_or_default();
    let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    (parent, stem.parse::<u64>().unwrap_or(u64::MAX), stem)
}
