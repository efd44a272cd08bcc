//! Writing and reading files without destroying what is there: the one place falat writes a
//! file (reports with `-o`/`--out`, `falat train`'s model, the TUI's overrides and exports).
//!
//! Two kinds of target, two rules:
//!
//! - **A path the user named** (`falat diagnose -o PATH`, `falat eval --out PATH`):
//!   [`write_output`] writes as a shell redirection does. A new file or a regular file is
//!   replaced atomically (a temporary file beside it, then a rename); a symbolic link is written
//!   through to its target, in place, and the link stays (a dangling link or a link to a folder
//!   is refused); a device or a FIFO is written in place (a FIFO no process reads is refused
//!   rather than waited on); a folder or a socket is refused. `-` is standard output, which the
//!   commands handle before calling this ([`is_stdout`]).
//! - **Files falat keeps beside a trace** (`TRACE.falat.json` and its backups, exported
//!   reports): the trace's folder is as untrusted as the trace. [`read_private`] opens without
//!   following a symbolic link (`O_NOFOLLOW`) and reads only a regular file the user owns;
//!   [`write_private`] writes atomically and refuses to replace anything but a regular file of
//!   the user's (never a link); [`move_aside`] renames a file to the first free `.bak`,
//!   `.bak.1`... name (a hard link then an unlink: it never replaces or follows what is there).
//!
//! Temporary files are named `.NAME.XXXXXX.falat-tmp` beside their target `NAME`;
//! [`clean_stale_temps`] removes those a killed falat left behind.
//!
//! Paths in error messages are sanitised ([`crate::text::sanitize`]): a file name may come from
//! a trace folder and must not drive the terminal.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::Context;

/// The suffix of falat's temporary files (`.NAME.XXXXXX.falat-tmp`).
pub const TEMP_SUFFIX: &str = ".falat-tmp";

/// The path with `suffix` appended to the full file name (`a/b.json` → `a/b.json.falat.json`).
pub fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// How old a temporary file of falat's must be before [`clean_stale_temps`] removes it: a write
/// in progress takes milliseconds, so one this old was left by a process that was killed.
pub const STALE_AFTER: Duration = Duration::from_secs(120);

/// `path` for messages: displayed and sanitised.
pub fn shown(path: &Path) -> String {
    crate::text::sanitize(&path.display().to_string())
}

/// The folder a file at `path` is created in: its parent, `.` for a bare name.
fn folder_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Why a file (or a folder, `what`) could not be created at `path`, in the user's terms, from
/// the OS error `e` and what is on the way to it: every write of a file the user names or that
/// falat keeps (reports, `-o`, `--out`, `falat train`'s model, the TUI's overrides and exports)
/// words its failure with this one function. The message names the path and what is wrong:
///
/// - `cannot write /proc/x.md: the folder /proc exists but is not an ordinary folder: no file can be created in it (a system folder such as /proc or /sys)`
/// - `cannot write /tmp/ro/x.md: the folder /tmp/ro exists but you may not create files in it (permission denied)`
/// - `... the folder /mnt/cd is on a read-only file system`
/// - `... /tmp/notes is a file, not a folder`
/// - `... the folder /tmp/a does not exist`
///
/// and otherwise the OS error's own text.
pub fn write_failure(path: &Path, e: &std::io::Error) -> anyhow::Error {
    anyhow::anyhow!("cannot write {}: {}", shown(path), why_not_created(folder_of(path), e))
}

/// [`std::fs::create_dir_all`], with a failure worded as [`write_failure`] words it
/// (`cannot create the folder PATH: ...`).
///
/// # Errors
/// The folder cannot be created; the message names it and what is in the way.
pub fn create_folder(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        let why = match std::fs::metadata(dir) {
            Ok(m) if !m.is_dir() => format!("{} is a file, not a folder", shown(dir)),
            _ => why_not_created(folder_of(dir), &e),
        };
        anyhow::anyhow!("cannot create the folder {}: {why}", shown(dir))
    })
}

/// What stops a new entry in folder `dir`, given the OS error of the attempt.
fn why_not_created(dir: &Path, e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    // The first of `dir` and its ancestors that exists, and whether it is a folder.
    let mut existing = Some(dir);
    while let Some(d) = existing {
        if std::fs::symlink_metadata(d).is_ok() {
            break;
        }
        existing = d.parent().filter(|p| !p.as_os_str().is_empty());
    }
    let is_dir = |d: &Path| std::fs::metadata(d).is_ok_and(|m| m.is_dir());
    match existing {
        Some(d) if !is_dir(d) && std::fs::metadata(d).is_ok() => {
            return format!("{} is a file, not a folder", shown(d));
        }
        Some(d) if d != dir => {
            let missing = dir.ancestors().take_while(|a| *a != d).last().unwrap_or(dir);
            return format!("the folder {} does not exist", shown(missing));
        }
        None => return format!("the folder {} does not exist", shown(dir)),
        _ => {}
    }
    let folder = shown(dir);
    match e.kind() {
        K::PermissionDenied => {
            format!("the folder {folder} exists but you may not create files in it (permission denied)")
        }
        K::ReadOnlyFilesystem => format!("the folder {folder} is on a read-only file system"),
        K::StorageFull => format!("no space is left on the device that holds {folder}"),
        K::QuotaExceeded => format!("your disk quota is used up on the device that holds {folder}"),
        // The folder exists, yet creating in it says "no such file": a file system that takes no
        // new files (procfs, sysfs).
        K::NotFound => format!(
            "the folder {folder} exists but is not an ordinary folder: no file can be created in it (a system folder such as /proc or /sys)"
        ),
        K::NotADirectory => format!("{folder} is not a folder"),
        // tempfile adds ` at path "<temporary file>"`: the cause alone.
        _ => {
            let text = e.to_string();
            text.find(" at path \"").map_or(text.clone(), |i| text[..i].to_string())
        }
    }
}

/// Whether an output path means standard output (`-`).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// How [`write_output`] wrote a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// A new or regular file, replaced atomically.
    Replaced,
    /// Through a symbolic link, in place; the link is kept.
    ThroughLink,
    /// In place: a device or a FIFO.
    InPlace,
}

/// Writes `bytes` to a path the user named, as a shell redirection would, never replacing a
/// symbolic link or a special file by a regular file (see the module doc).
///
/// # Errors
/// A folder, a socket, a dangling link, a FIFO that no process reads, or a failed write; the
/// message names the path.
pub fn write_output(path: &Path, bytes: &[u8]) -> anyhow::Result<Written> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            write_atomic(path, bytes)?;
            return Ok(Written::Replaced);
        }
        Err(e) => return Err(write_failure(path, &e)),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        let target = match std::fs::metadata(path) {
            Ok(t) => t,
            Err(e) => {
                let to = std::fs::read_link(path).map(|t| shown(&t)).unwrap_or_else(|_| "?".into());
                anyhow::bail!(
                    "cannot write {}: it is a symbolic link to {to}, which cannot be opened ({e}); not written",
                    shown(path)
                );
            }
        };
        anyhow::ensure!(!target.is_dir(), "cannot write {}: it is a symbolic link to a folder", shown(path));
        write_in_place(path, bytes, target.is_file())?;
        return Ok(Written::ThroughLink);
    }
    if ft.is_file() {
        write_atomic(path, bytes)?;
        return Ok(Written::Replaced);
    }
    anyhow::ensure!(!ft.is_dir(), "cannot write {}: it is a folder", shown(path));
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        anyhow::ensure!(!ft.is_socket(), "cannot write {}: it is a socket", shown(path));
    }
    write_in_place(path, bytes, false)?;
    Ok(Written::InPlace)
}

/// Opens `path` (following links) for writing, truncating a regular file, and writes `bytes`.
fn write_in_place(path: &Path, bytes: &[u8], regular: bool) -> anyhow::Result<()> {
    let mut file = open_in_place(path, regular)?;
    file.write_all(bytes).and_then(|()| file.flush()).map_err(|e| write_failure(path, &e))
}

/// Opens `path` (following links) for writing, truncating a regular file. A FIFO is opened
/// without blocking, so that one nobody reads is an error, not a hang; the file is then switched
/// back to blocking writes.
fn open_in_place(path: &Path, regular: bool) -> anyhow::Result<std::fs::File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).truncate(regular);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file = opts.open(path).map_err(|e| {
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ENXIO) {
            return anyhow::anyhow!("cannot write {}: it is a FIFO that no process is reading", shown(path));
        }
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            return anyhow::anyhow!(
                "cannot write {}: the file exists but you may not write it (permission denied)",
                shown(path)
            );
        }
        write_failure(path, &e)
    })?;
    #[cfg(unix)]
    {
        // Back to blocking writes: a full pipe waits for its reader instead of failing.
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: fcntl on a descriptor this function owns, with flags read from it.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }
    Ok(file)
}

/// Opens a path the user named to stream lines into (`falat eval --out`, appended to as runs
/// finish), under the rules of [`write_output`]: a new or regular file is created or truncated,
/// a symbolic link is opened through (the link stays), a device or FIFO is opened in place; a
/// folder, a socket or a dangling link is refused. Returns the file and whether it is a regular
/// file, which the caller may rewrite whole at the end with [`write_output`] (a FIFO or a device
/// must not get the lines twice).
///
/// # Errors
/// What [`write_output`] refuses, or a failed open; the message names the path.
pub fn open_output(path: &Path) -> anyhow::Result<(std::fs::File, bool)> {
    let regular = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(write_failure(path, &e)),
        Ok(m) if m.file_type().is_symlink() => {
            let target = std::fs::metadata(path).map_err(|e| {
                anyhow::anyhow!("cannot write {}: it is a symbolic link that cannot be opened ({e})", shown(path))
            })?;
            anyhow::ensure!(!target.is_dir(), "cannot write {}: it is a symbolic link to a folder", shown(path));
            target.is_file()
        }
        Ok(m) => {
            anyhow::ensure!(!m.is_dir(), "cannot write {}: it is a folder", shown(path));
            #[cfg(unix)]
            {
                use std::os::unix::fs::FileTypeExt;
                anyhow::ensure!(!m.file_type().is_socket(), "cannot write {}: it is a socket", shown(path));
            }
            m.is_file()
        }
    };
    if regular && !path.exists() {
        let file = std::fs::File::create(path).map_err(|e| write_failure(path, &e))?;
        return Ok((file, true));
    }
    Ok((open_in_place(path, regular)?, regular))
}

/// Writes a file atomically: a temporary file of falat's naming beside it, then a rename over
/// `path` (which replaces `path` itself, never what a link there points to). The file gets the
/// mode of any new file (0666 less the umask).
///
/// # Errors
/// The folder cannot be written, or the rename fails; the message names the folder or the file,
/// not the temporary file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = folder_of(path);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(TEMP_SUFFIX).rand_bytes(6);
    // A report or an overrides file is an ordinary file of the user's: created like any other
    // (0666 less the umask), not with the temporary file's owner-only mode.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    // tempfile's error names the temporary file: the message names `path` and its folder.
    let mut tmp = builder.tempfile_in(dir).map_err(|e| write_failure(path, &e))?;
    tmp.write_all(bytes).and_then(|()| tmp.as_file().sync_all()).map_err(|e| write_failure(path, &e))?;
    tmp.persist(path).map_err(|e| e.error).with_context(|| format!("cannot replace {}", shown(path)))?;
    Ok(())
}

/// Why a file beside a trace was not read.
#[derive(Debug)]
pub enum ReadError {
    /// There is no such file.
    Missing,
    /// It is not a regular file of the user's (a symbolic link, a FIFO, another user's file):
    /// left alone, neither read nor changed.
    NotPrivate(NotPrivate),
    /// Reading failed.
    Io(std::io::Error),
}

/// What [`read_private`] read: the text and when the file was last changed.
#[derive(Debug, Clone)]
pub struct PrivateFile {
    /// The content (invalid UTF-8 replaced).
    pub text: String,
    /// Its modification time.
    pub modified: SystemTime,
}

/// Reads a file that falat keeps beside a trace without following a symbolic link and without
/// blocking on a FIFO: only a regular file owned by the user who runs falat is read.
///
/// # Errors
/// [`ReadError`]: missing, not a regular file of the user's (with what it is), or unreadable.
pub fn read_private(path: &Path) -> Result<PrivateFile, ReadError> {
    use std::io::Read;
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    #[cfg(not(unix))]
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(ReadError::NotPrivate(NotPrivate::SymbolicLink));
    }
    let mut file = match opts.open(path) {
        Ok(f) => f,
        // A folder on the way that is a file is no file either (a fallback folder never made).
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            return Err(ReadError::Missing);
        }
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(ReadError::NotPrivate(NotPrivate::SymbolicLink));
        }
        Err(e) => return Err(ReadError::Io(e)),
    };
    let meta = file.metadata().map_err(ReadError::Io)?;
    if let Some(why) = not_private(&meta) {
        return Err(ReadError::NotPrivate(why));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(ReadError::Io)?;
    let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    Ok(PrivateFile { text: String::from_utf8_lossy(&bytes).into_owned(), modified })
}

/// What is at a path where falat keeps a file of its own, when it is not a regular file of the
/// user's (displayed as "a symbolic link", "owned by another user (uid 1001)"...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotPrivate {
    /// A symbolic link (never followed there).
    #[error("a symbolic link")]
    SymbolicLink,
    /// A folder.
    #[error("a folder")]
    Folder,
    /// A FIFO, a socket or a device.
    #[error("not a regular file")]
    NotRegular,
    /// A regular file of another user (its uid).
    #[error("owned by another user (uid {0})")]
    OtherOwner(u32),
}

/// Why a file's metadata (taken without following links) is not a regular file of the user's;
/// `None` when it is.
fn not_private(meta: &std::fs::Metadata) -> Option<NotPrivate> {
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Some(NotPrivate::SymbolicLink);
    }
    if !ft.is_file() {
        return Some(if ft.is_dir() { NotPrivate::Folder } else { NotPrivate::NotRegular });
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me {
            return Some(NotPrivate::OtherOwner(meta.uid()));
        }
    }
    None
}

/// Whether `path` is free for [`write_private`] to write: nothing there, or a regular file of
/// the user's.
///
/// # Errors
/// What is there otherwise.
pub fn check_private(path: &Path) -> Result<(), NotPrivate> {
    match std::fs::symlink_metadata(path) {
        Err(_) => Ok(()),
        Ok(m) => not_private(&m).map_or(Ok(()), Err),
    }
}

/// Writes a file falat keeps beside a trace: atomically ([`write_atomic`]), and only when what
/// is at `path` is nothing or a regular file of the user's ([`check_private`]): a symbolic link
/// planted there is neither followed nor replaced.
///
/// # Errors
/// Something other than a regular file of the user's is at `path`, or the write fails.
pub fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Err(what) = check_private(path) {
        anyhow::bail!("will not replace {}: it is {what}", shown(path));
    }
    write_atomic(path, bytes)
}

/// Moves `path` aside to the first free `path.bak`, `path.bak.1`, ... and returns the new name.
/// A hard link then an unlink: a name already taken (by anything, a dangling link too) is
/// skipped, never replaced or written through. Nothing is copied.
///
/// # Errors
/// The link or the unlink fails for another reason than a taken name.
pub fn move_aside(path: &Path) -> anyhow::Result<PathBuf> {
    for n in 0..1000 {
        let suffix = if n == 0 { ".bak".to_string() } else { format!(".bak.{n}") };
        let candidate = beside(path, &suffix);
        match std::fs::hard_link(path, &candidate) {
            Ok(()) => {
                std::fs::remove_file(path).with_context(|| format!("cannot remove {}", shown(path)))?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot move {} aside", shown(path))),
        }
    }
    anyhow::bail!("cannot move {} aside: a thousand backups are there already", shown(path))
}

/// Removes falat's temporary files for `target` (`.NAME.XXXXXX.falat-tmp` beside it) that are
/// regular files of the user's older than [`STALE_AFTER`]: what a falat killed during a write
/// left behind. Returns the files removed.
pub fn clean_stale_temps(target: &Path) -> Vec<PathBuf> {
    let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let Some(name) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else { return Vec::new() };
    let prefix = format!(".{name}.");
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let now = SystemTime::now();
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(middle) = file.strip_prefix(&prefix).and_then(|r| r.strip_suffix(TEMP_SUFFIX)) else { continue };
        // Exactly the random part tempfile adds (six alphanumerics), so no other file matches.
        if middle.len() != 6 || !middle.chars().all(|c| c.is_ascii_alphanumeric()) {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        let old = meta.modified().ok().and_then(|m| now.duration_since(m).ok()).is_some_and(|age| age >= STALE_AFTER);
        if old && not_private(&meta).is_none() && std::fs::remove_file(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed.sort();
    removed
}

/// The user's config folder, which holds `config.toml` and `keys.toml` (`docs/CONFIG.md`):
/// `$XDG_CONFIG_HOME/falat`, else `~/.config/falat`; `None` without either variable. Shared by
/// the command line and the TUI.
pub fn config_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("falat"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_written_file_has_the_mode_of_any_new_file_not_the_temporary_file_s() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"x").unwrap();
        let written = dir.path().join("report.md");
        write_atomic(&written, b"# report\n").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&written), mode(&plain));
        assert_eq!(std::fs::read_to_string(&written).unwrap(), "# report\n");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left.len(), 2, "no temporary file left: {left:?}");
    }

    #[test]
    fn a_file_that_cannot_be_written_is_named_by_its_folder_not_the_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no").join("report.md");
        let err = format!("{:#}", write_atomic(&missing, b"x").unwrap_err());
        let folder = dir.path().join("no");
        assert_eq!(err, format!("cannot write {}: the folder {} does not exist", missing.display(), folder.display()));
        assert!(!err.contains(TEMP_SUFFIX) && !err.contains("at path"), "{err}");
    }

    #[test]
    fn every_write_says_what_is_in_the_way_in_the_user_s_terms() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("notes");
        std::fs::write(&file, "a file").unwrap();
        let f = file.display();
        let below = file.join("x.md");
        let want = format!("cannot write {}: {f} is a file, not a folder", below.display());
        assert_eq!(format!("{:#}", write_output(&below, b"x").unwrap_err()), want);
        assert_eq!(format!("{:#}", write_private(&below, b"x").unwrap_err()), want);
        assert_eq!(format!("{:#}", open_output(&below).unwrap_err()), want);
        assert_eq!(
            format!("{:#}", create_folder(&file.join("a").join("b")).unwrap_err()),
            format!("cannot create the folder {}: {f} is a file, not a folder", file.join("a").join("b").display())
        );
        assert_eq!(
            format!("{:#}", create_folder(&file).unwrap_err()),
            format!("cannot create the folder {f}: {f} is a file, not a folder")
        );
        // A folder that exists and takes no new files, root or not.
        if Path::new("/proc/self").is_dir() {
            let err = format!("{:#}", write_output(Path::new("/proc/falat-report.md"), b"x").unwrap_err());
            assert_eq!(
                err,
                "cannot write /proc/falat-report.md: the folder /proc exists but is not an ordinary folder: no file \
                 can be created in it (a system folder such as /proc or /sys)"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn an_output_symlink_is_written_through_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.md");
        std::fs::write(&target, "old content that is longer").unwrap();
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(write_output(&link, b"new\n").unwrap(), Written::ThroughLink);
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
        assert_eq!(std::fs::read_link(&link).unwrap(), target);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new\n", "the target is truncated and written");
        // A dangling link is refused and left as it is.
        let dangling = dir.path().join("dangling.md");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        let err = format!("{:#}", write_output(&dangling, b"x").unwrap_err());
        assert!(err.contains("symbolic link to") && err.contains("nowhere"), "{err}");
        assert!(std::fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
        assert!(!dir.path().join("nowhere").exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_written_in_place_or_refused_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Nobody reads: refused, not a hang, and the FIFO stays a FIFO.
        let err = format!("{:#}", write_output(&fifo, b"x").unwrap_err());
        assert!(err.contains("FIFO that no process is reading"), "{err}");
        // A reader: written in place.
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        let mut written = None;
        for _ in 0..200 {
            match write_output(&fifo, b"through the pipe\n") {
                Ok(w) => {
                    written = Some(w);
                    break;
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        assert_eq!(written, Some(Written::InPlace));
        assert_eq!(reader.join().unwrap(), "through the pipe\n");
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[cfg(unix)]
    #[test]
    fn private_files_are_never_read_or_written_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "TOP SECRET").unwrap();
        let planted = dir.path().join("t.json.falat.json");
        std::os::unix::fs::symlink(&secret, &planted).unwrap();
        assert!(matches!(read_private(&planted), Err(ReadError::NotPrivate(NotPrivate::SymbolicLink))));
        let err = format!("{:#}", write_private(&planted, b"{}").unwrap_err());
        assert!(err.contains("it is a symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "TOP SECRET");
        assert!(std::fs::symlink_metadata(&planted).unwrap().file_type().is_symlink());
    }

    #[cfg(unix)]
    #[test]
    fn moving_aside_skips_taken_names_and_never_follows_them() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("o.json");
        std::fs::write(&f, "corrupt").unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&elsewhere, dir.path().join("o.json.bak")).unwrap();
        let to = move_aside(&f).unwrap();
        assert_eq!(to, dir.path().join("o.json.bak.1"));
        assert!(!f.exists() && !elsewhere.exists());
        assert_eq!(std::fs::read_to_string(&to).unwrap(), "corrupt");
    }

    #[test]
    fn stale_temporary_files_are_removed_fresh_ones_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.json.falat.json");
        let stale = dir.path().join(".t.json.falat.json.aB3xYz.falat-tmp");
        let fresh = dir.path().join(".t.json.falat.json.Qw12Er.falat-tmp");
        let other = dir.path().join(".t.json.falat.json.notours.falat-tmp");
        for p in [&stale, &fresh, &other] {
            std::fs::write(p, "{").unwrap();
        }
        let old = SystemTime::now() - Duration::from_secs(3600);
        for p in [&stale, &other] {
            std::fs::File::options().write(true).open(p).unwrap().set_modified(old).unwrap();
        }
        assert_eq!(clean_stale_temps(&target), vec![stale.clone()]);
        assert!(!stale.exists() && fresh.exists() && other.exists());
    }
}
