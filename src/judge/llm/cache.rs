//! Record and replay of LLM exchanges, so runs are reproducible and shareable.
//!
//! # Format
//! A cache is a folder with one or more `*.jsonl` files; the judge appends to
//! `exchanges.jsonl`. Each line is one exchange:
//! `{"v": 1, "key": HEX, "kind": QUESTION_KIND, "request": BODY, "response": {"content", "finish_reason", "usage"}}`
//! or, for a refusal that is a property of the request (context too long, body refused),
//! `{..., "error": {"kind": "context_too_long", "message": ...}}`.
//! `key` is the SHA-256 of the request body (model, messages, temperature, seed, max_tokens,
//! response_format) serialised as JSON. The body is exactly what was sent; it holds no
//! credentials (the API key travels only in an HTTP header, and headers are never stored).
//! Transient failures (unreachable, timeouts, 429, 5xx, 401) are never recorded.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::client::{CallError, Completion};

/// The file new exchanges are appended to.
pub const FILE: &str = "exchanges.jsonl";

/// The cache key of a request body: lower-case hex SHA-256 of its JSON text.
pub fn key(body: &Value) -> String {
    let digest = Sha256::digest(body.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A recorded outcome.
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded {
    /// The server answered.
    Answer(Completion),
    /// The server refused the request for a reason that replays (context too long, bad body).
    Refusal(CallError),
}

/// Replay store (read at start) and record sink (append-only).
#[derive(Debug, Default)]
pub struct Cache {
    replay: HashMap<String, Recorded>,
    record: Option<Mutex<File>>,
    record_path: Option<PathBuf>,
}

/// Why a record or replay folder cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    /// The record folder could not be created.
    #[error("cannot create record folder {}: {reason}", dir.display())]
    CreateFolder {
        /// The folder.
        dir: PathBuf,
        /// The system's reason.
        reason: String,
    },
    /// The record file could not be opened for appending.
    #[error("cannot open {}: {reason}", path.display())]
    OpenRecord {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        reason: String,
    },
    /// The replay folder could not be listed.
    #[error("cannot read replay folder {}: {reason}", dir.display())]
    ReadFolder {
        /// The folder.
        dir: PathBuf,
        /// The system's reason.
        reason: String,
    },
    /// The replay folder holds no `*.jsonl` file.
    #[error("replay folder {} has no *.jsonl exchanges", dir.display())]
    NoExchanges {
        /// The folder.
        dir: PathBuf,
    },
    /// A replay file could not be read (`line` 0: it could not be opened).
    #[error("{}", if *line == 0 { format!("cannot read {}: {reason}", path.display()) } else { format!("{}: line {line}: {reason}", path.display()) })]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// 1-based line where reading failed; 0 when the file could not be opened.
        line: usize,
        /// The system's reason.
        reason: String,
    },
}

impl Cache {
    /// Opens the caches: loads every `*.jsonl` of `replay` and opens `record/exchanges.jsonl` for
    /// appending (creating the folder). When both are given (resuming a run), a replay folder that
    /// does not exist yet or holds no exchanges is an empty cache, not an error.
    ///
    /// # Errors
    /// A [`CacheError`] naming the folder or file that could not be read or created.
    pub fn open(replay: Option<&Path>, record: Option<&Path>) -> Result<Cache, CacheError> {
        let mut cache = Cache::default();
        if let Some(dir) = replay {
            let fresh = record.is_some() && (!dir.exists() || jsonl_files(dir)?.is_empty());
            if !fresh {
                cache.replay = load(dir)?;
            }
        }
        if let Some(dir) = record {
            std::fs::create_dir_all(dir)
                .map_err(|e| CacheError::CreateFolder { dir: dir.to_path_buf(), reason: e.to_string() })?;
            let path = dir.join(FILE);
            let mut f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| CacheError::OpenRecord { path: path.clone(), reason: e.to_string() })?;
            // A run killed mid-write leaves a cut-off last line; end it so the next exchange
            // starts on a line of its own.
            if ends_mid_line(&path) {
                let _ = writeln!(f);
            }
            cache.record = Some(Mutex::new(f));
            cache.record_path = Some(path);
        }
        Ok(cache)
    }

    /// The recorded outcome of a request key.
    pub fn get(&self, key: &str) -> Option<&Recorded> {
        self.replay.get(key)
    }

    /// Number of replayable exchanges.
    pub fn len(&self) -> usize {
        self.replay.len()
    }

    /// Whether nothing can be replayed.
    pub fn is_empty(&self) -> bool {
        self.replay.is_empty()
    }

    /// Appends an exchange when recording; refusals are kept only when they replay (context too
    /// long, refused body). Write errors are logged, never fatal.
    pub fn put(&self, kind: &str, body: &Value, outcome: &Result<Completion, CallError>) {
        let Some(file) = &self.record else { return };
        let mut line = json!({"v": 1, "key": key(body), "kind": kind, "request": body});
        match outcome {
            Ok(c) => line["response"] = c.to_json(),
            Err(e @ (CallError::ContextTooLong { .. } | CallError::Refused { .. })) => {
                line["error"] = json!({"kind": e.kind(), "message": e.to_string(), "status": status_of(e)});
            }
            Err(_) => return,
        }
        let mut f = file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = writeln!(f, "{line}") {
            tracing::warn!("cannot record an llm exchange to {:?}: {e}", self.record_path);
        }
    }
}

fn status_of(e: &CallError) -> u16 {
    match e {
        CallError::Refused { status, .. } => *status,
        _ => 400,
    }
}

/// Whether a file exists, is not empty and does not end with a newline.
fn ends_mid_line(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = File::open(path) else { return false };
    let mut last = [0u8; 1];
    f.seek(SeekFrom::End(-1)).is_ok() && f.read_exact(&mut last).is_ok() && last[0] != b'\n'
}

/// The `*.jsonl` files of a folder, sorted by name.
fn jsonl_files(dir: &Path) -> Result<Vec<PathBuf>, CacheError> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| CacheError::ReadFolder { dir: dir.to_path_buf(), reason: e.to_string() })?;
    let mut files: Vec<PathBuf> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "jsonl")).collect();
    files.sort();
    Ok(files)
}

fn load(dir: &Path) -> Result<HashMap<String, Recorded>, CacheError> {
    let files = jsonl_files(dir)?;
    if files.is_empty() {
        return Err(CacheError::NoExchanges { dir: dir.to_path_buf() });
    }
    let mut out = HashMap::new();
    for path in files {
        let f = File::open(&path).map_err(|e| CacheError::ReadFile {
            path: path.clone(),
            line: 0,
            reason: e.to_string(),
        })?;
        for (n, line) in BufReader::new(f).lines().enumerate() {
            let line =
                line.map_err(|e| CacheError::ReadFile { path: path.clone(), line: n + 1, reason: e.to_string() })?;
            if line.trim().is_empty() {
                continue;
            }
            match parse_line(&line) {
                Some((k, r)) => {
                    out.insert(k, r);
                }
                None => tracing::warn!("{}: line {}: not a recorded exchange, skipped", path.display(), n + 1),
            }
        }
    }
    Ok(out)
}

fn parse_line(line: &str) -> Option<(String, Recorded)> {
    let v: Value = serde_json::from_str(line).ok()?;
    let key = v.get("key")?.as_str()?.to_string();
    if let Some(r) = v.get("response") {
        return Some((key, Recorded::Answer(Completion::from_cached(r).ok()?)));
    }
    let e = v.get("error")?;
    let detail = e.get("message").and_then(Value::as_str).unwrap_or_default().to_string();
    let err = match e.get("kind").and_then(Value::as_str)? {
        "context_too_long" => CallError::ContextTooLong { detail },
        _ => {
            let status = e.get("status").and_then(Value::as_u64).unwrap_or(400) as u16;
            CallError::Refused { status, detail }
        }
    };
    Some((key, Recorded::Refusal(err)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::llm::client::Usage;

    #[test]
    fn record_then_replay_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "q"}]});
        let other = json!({"model": "m", "messages": [{"role": "user", "content": "long"}]});
        let ok = Completion {
            content: "{\"a\":1}".into(),
            finish_reason: Some("stop".into()),
            usage: Some(Usage { prompt_tokens: 7, completion_tokens: 3, cached_tokens: 0 }),
        };
        {
            let c = Cache::open(None, Some(dir.path())).unwrap();
            c.put("prior", &body, &Ok(ok.clone()));
            c.put("prior", &other, &Err(CallError::ContextTooLong { detail: "5031 > 4096".into() }));
            c.put("prior", &other, &Err(CallError::Timeout { secs: 1 }));
        }
        let c = Cache::open(Some(dir.path()), None).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c.get(&key(&body)), Some(&Recorded::Answer(ok)));
        assert!(matches!(c.get(&key(&other)), Some(Recorded::Refusal(CallError::ContextTooLong { .. }))));
        assert_ne!(key(&body), key(&other));
    }

    #[test]
    fn empty_replay_folder_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = Cache::open(Some(dir.path()), None).unwrap_err();
        assert_eq!(e, CacheError::NoExchanges { dir: dir.path().to_path_buf() });
        assert!(e.to_string().contains("no *.jsonl"), "{e}");
    }

    #[test]
    fn resuming_starts_from_an_empty_or_missing_folder_and_reads_what_was_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("run");
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "q"}]});
        let ok = Completion { content: "{}".into(), finish_reason: Some("stop".into()), usage: None };
        {
            let c = Cache::open(Some(&sub), Some(&sub)).unwrap();
            assert!(c.is_empty());
            c.put("prior", &body, &Ok(ok.clone()));
        }
        // A run killed mid-write leaves a cut-off last line: it is skipped, the rest replays.
        let mut f = OpenOptions::new().append(true).open(sub.join(FILE)).unwrap();
        write!(f, "{{\"v\": 1, \"key\": \"ab").unwrap();
        drop(f);
        let other = json!({"model": "m", "messages": [{"role": "user", "content": "r"}]});
        {
            let c = Cache::open(Some(&sub), Some(&sub)).unwrap();
            assert_eq!(c.len(), 1);
            assert_eq!(c.get(&key(&body)), Some(&Recorded::Answer(ok.clone())));
            c.put("prior", &other, &Ok(ok.clone()));
        }
        let c = Cache::open(Some(&sub), None).unwrap();
        assert_eq!(c.len(), 2, "the exchange after the cut-off line is kept");
        assert_eq!(c.get(&key(&other)), Some(&Recorded::Answer(ok)));
    }
}
