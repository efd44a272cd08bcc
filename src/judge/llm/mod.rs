//! The LLM judge (docs/DESIGN.md §4): any OpenAI-compatible chat-completions server answers the stages'
//! questions; every exchange can be recorded and replayed; invalid answers get one repair request
//! and then fall back to the heuristic judge with a visible warning.
//!
//! - [`client`]: the HTTP client (reqwest + rustls, backon retries, `Retry-After`).
//! - [`prompts`]: one prompt file and [`prompts::Kind`] per question kind, built from the hierarchy.
//! - [`validate`]: JSON extraction and strict per-kind validation.
//! - [`cache`]: record/replay JSONL keyed by SHA-256 of the request body.
//!
//! # Sync over async
//! [`Judge::ask`] is synchronous. The judge owns a small multi-thread tokio runtime (2 workers)
//! and hands each request to it with `Runtime::spawn`, then waits on a `std::sync::mpsc` channel.
//! This works from plain threads (eval), from `tokio::task::spawn_blocking` threads (TUI) and
//! from a thread of any other runtime, because the caller never enters our runtime (no
//! `block_on`, so no "cannot start a runtime from within a runtime" panic) and our runtime never
//! waits on the caller's. Do not call `ask` from inside an async task: it blocks that worker.
//! Dropping the judge shuts the runtime down in the background, which is allowed anywhere.
//! Concurrency across threads is bounded by a semaphore of `jobs` permits.
//!
//! # Batching
//! The pipeline asks one question at a time; the judge answers several with one call and keeps
//! the rest for when they are asked (memo per trajectory): all phase summaries in one call, the
//! most suspicious phases' candidates in one call (phases not sent are not examined), all edges
//! leaving the recalled candidates in one call, both verification criteria of every live
//! candidate in one call. Answers served from the memo cost nothing; the call's cost is carried
//! by the question that triggered it, so stage costs still sum to the server's `usage`.

pub mod cache;
pub mod client;
pub mod prompts;
pub mod validate;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

use self::cache::{Cache, Recorded};
use self::client::{CallError, ChatRequest, Client, Completion, FormatMode, Message};
use self::prompts::{Detail, Kind, Known};
use super::attribution::{ErrorCategory, Half};
use super::{Answer, Context, Judge, Judged, Question, heuristic};
use crate::diagnosis::Cost;
use crate::model::Trajectory;

/// The environment variable holding the API key unless configured otherwise.
pub const DEFAULT_KEY_ENV: &str = "OPENAI_API_KEY";
/// The environment variable naming a config file (TOML with an `[llm]` table).
pub const CONFIG_ENV: &str = "FALAT_CONFIG";

/// How the LLM judge reaches and uses a server. Its `Debug` shows the base URL without
/// credentials.
#[derive(Clone, PartialEq)]
pub struct LlmConfig {
    /// Base URL of the OpenAI-compatible API (e.g. `http://127.0.0.1:8080/v1`); `None` only in
    /// replay or dry-run mode.
    pub base_url: Option<String>,
    /// The environment variable the API key is read from (the key itself is never stored here).
    pub api_key_env: String,
    /// The model name sent in every request.
    pub model: String,
    /// Timeout of one HTTP request.
    pub timeout: Duration,
    /// Retries after a transient failure (connection, timeout, 429, 5xx).
    pub retries: usize,
    /// Most requests in flight at once, across threads.
    pub jobs: usize,
    /// Most tokens spent on one trajectory: completion tokens plus the prompt tokens the server
    /// computed (those it served from its prompt cache are not counted, so the shared prefix of a
    /// trajectory's prompts counts once); then the heuristic answers. A call is not made when the
    /// tokens spent, its whole prompt and its `max_tokens` would pass the budget.
    pub token_budget: Option<u64>,
    /// Append every exchange to `DIR/exchanges.jsonl`.
    pub record_dir: Option<PathBuf>,
    /// Answer from the exchanges recorded in `DIR`. Alone, nothing else is asked (no network; a
    /// question never recorded gets the heuristic's answer with a warning). With
    /// [`LlmConfig::record_dir`] too, the run resumes: recorded questions are answered from
    /// `DIR`, the others are sent to the server and recorded.
    pub replay_dir: Option<PathBuf>,
    /// Send nothing; record what would be sent (see [`dry_run`]).
    pub dry_run: bool,
    /// Most wall time spent on the calls of one trajectory (from its first call); later
    /// questions of it are answered offline with a warning. `None`: no limit.
    pub trajectory_deadline: Option<Duration>,
    /// Most wall time spent on calls by this judge (from its first call), over every trajectory.
    pub run_deadline: Option<Duration>,
    /// Longest `Retry-After` honoured (a longer one is cut to this).
    pub max_retry_after: Duration,
    /// Largest response body read, in bytes.
    pub max_response_bytes: usize,
    /// What a command does when the server cannot be used at the start (`--llm-fallback`).
    pub fallback: LlmFallback,
}

/// What `--judge llm` does when the server check fails before any work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LlmFallback {
    /// Stop with exit status 2 and one line naming the URL and the cause (the default).
    #[default]
    Fail,
    /// Go on with the heuristic judge; reports name it `heuristic (LLM unreachable)`.
    Heuristic,
}

impl LlmFallback {
    /// Reads `fail` or `heuristic`.
    pub fn parse(s: &str) -> Option<LlmFallback> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fail" | "none" => Some(LlmFallback::Fail),
            "heuristic" => Some(LlmFallback::Heuristic),
            _ => None,
        }
    }
}

impl std::fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmConfig")
            .field("base_url", &self.base_url.as_deref().map(client::without_credentials))
            .field("api_key_env", &self.api_key_env)
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .field("jobs", &self.jobs)
            .field("token_budget", &self.token_budget)
            .field("record_dir", &self.record_dir)
            .field("replay_dir", &self.replay_dir)
            .field("dry_run", &self.dry_run)
            .field("trajectory_deadline", &self.trajectory_deadline)
            .field("run_deadline", &self.run_deadline)
            .field("max_retry_after", &self.max_retry_after)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("fallback", &self.fallback)
            .finish()
    }
}

impl LlmConfig {
    /// Whether questions may be sent to the server: not in dry-run mode, and not when replaying
    /// without recording.
    pub fn online(&self) -> bool {
        !self.dry_run && (self.replay_dir.is_none() || self.record_dir.is_some())
    }

    /// A config for `base_url` and `model` with the defaults: key from `OPENAI_API_KEY`, 180 s
    /// timeout, 3 retries, 2 jobs, a budget of 60,000 tokens per trajectory, a deadline of 30
    /// minutes per trajectory and none per run, `Retry-After` honoured up to 30 s, responses up
    /// to 4 MiB, and a failed server check stops the command.
    pub fn new(base_url: Option<&str>, model: &str) -> LlmConfig {
        LlmConfig {
            base_url: base_url.map(str::to_string),
            api_key_env: DEFAULT_KEY_ENV.into(),
            model: model.into(),
            timeout: Duration::from_secs(180),
            retries: 3,
            jobs: 2,
            token_budget: Some(60_000),
            record_dir: None,
            replay_dir: None,
            dry_run: false,
            trajectory_deadline: Some(Duration::from_secs(30 * 60)),
            run_deadline: None,
            max_retry_after: client::Limits::default().max_retry_after,
            max_response_bytes: client::Limits::default().max_body_bytes,
            fallback: LlmFallback::Fail,
        }
    }

    /// Builds the config from command-line values, then the environment (`OPENAI_BASE_URL`),
    /// then the config file's `[llm]` table (`base_url` or `url`, `model`, `api_key_env`,
    /// `timeout_secs`, `retries`, `jobs`, `token_budget`, `trajectory_deadline_secs`,
    /// `run_deadline_secs`, `max_retry_after_secs`, `max_response_bytes`, `fallback` = `"fail"` or
    /// `"heuristic"`; `docs/CONFIG.md`), then the defaults of [`LlmConfig::new`]. A deadline of 0
    /// means none. The config file is `--llm-config FILE`, else [`CONFIG_ENV`], else
    /// `args.default_config_file` when it exists.
    /// `env` reads an environment variable (pass `|k| std::env::var(k).ok()`).
    ///
    /// # Errors
    /// [`LlmError::NoUrl`] without a base URL (unless replaying without recording, or
    /// dry-running),
    /// [`LlmError::BadUrl`], [`LlmError::NoModel`], [`LlmError::ConfigFile`].
    pub fn from_env_and_args(args: &LlmArgs, env: impl Fn(&str) -> Option<String>) -> Result<LlmConfig, LlmError> {
        let file_path = args
            .config_file
            .clone()
            .or_else(|| env(CONFIG_ENV).map(PathBuf::from))
            .or_else(|| args.default_config_file.clone().filter(|p| p.is_file()));
        let file = match &file_path {
            Some(p) => read_config_file(p)?,
            None => toml::Table::new(),
        };
        let fs = |k: &str| {
            let alias = (k == "base_url").then(|| file.get("url")).flatten();
            file.get(k).or(alias).and_then(|v| v.as_str()).map(str::to_string)
        };
        let fi = |k: &str| file.get(k).and_then(|v| v.as_integer()).and_then(|i| u64::try_from(i).ok());
        let base_url = args.llm_url.clone().or_else(|| env("OPENAI_BASE_URL")).or_else(|| fs("base_url"));
        if let Some(u) = &base_url {
            if !(u.starts_with("http://") || u.starts_with("https://")) {
                return Err(LlmError::BadUrl(u.clone()));
            }
        } else if (args.replay.is_none() || args.record.is_some()) && !args.dry_run {
            return Err(LlmError::NoUrl);
        }
        let model = args.model.clone().or_else(|| fs("model")).ok_or(LlmError::NoModel)?;
        let mut cfg = LlmConfig::new(base_url.as_deref(), &model);
        cfg.api_key_env = args.api_key_env.clone().or_else(|| fs("api_key_env")).unwrap_or(cfg.api_key_env);
        if let Some(t) = args.timeout_secs.or_else(|| fi("timeout_secs")) {
            cfg.timeout = Duration::from_secs(t.max(1));
        }
        cfg.retries = args.retries.or_else(|| fi("retries").map(|r| r as usize)).unwrap_or(cfg.retries);
        cfg.jobs = args.jobs.or_else(|| fi("jobs").map(|j| j as usize)).unwrap_or(cfg.jobs).max(1);
        cfg.token_budget = args.token_budget.or_else(|| fi("token_budget")).or(cfg.token_budget).filter(|b| *b > 0);
        if let Some(t) = args.trajectory_deadline_secs.or_else(|| fi("trajectory_deadline_secs")) {
            cfg.trajectory_deadline = (t > 0).then(|| Duration::from_secs(t));
        }
        if let Some(t) = args.run_deadline_secs.or_else(|| fi("run_deadline_secs")) {
            cfg.run_deadline = (t > 0).then(|| Duration::from_secs(t));
        }
        if let Some(t) = fi("max_retry_after_secs") {
            cfg.max_retry_after = Duration::from_secs(t);
        }
        if let Some(b) = fi("max_response_bytes") {
            cfg.max_response_bytes = (b as usize).max(1024);
        }
        let fb = args.fallback.clone().or_else(|| fs("fallback"));
        if let Some(f) = fb {
            cfg.fallback = LlmFallback::parse(&f).ok_or_else(|| LlmError::ConfigFile {
                path: file_path.as_ref().map_or_else(|| "--llm-fallback".into(), |p| p.display().to_string()),
                message: format!("fallback must be `fail` or `heuristic`, not `{}`", crate::text::sanitize(&f)),
            })?;
        }
        cfg.record_dir = args.record.clone();
        cfg.replay_dir = args.replay.clone();
        cfg.dry_run = args.dry_run;
        Ok(cfg)
    }
}

/// The keys of the `[llm]` table: string keys, then non-negative integer keys (`docs/CONFIG.md`).
const STRING_KEYS: [&str; 4] = ["base_url", "url", "model", "api_key_env"];
const INTEGER_KEYS: [&str; 4] = ["timeout_secs", "retries", "jobs", "token_budget"];

fn read_config_file(p: &Path) -> Result<toml::Table, LlmError> {
    let err = |message: String| LlmError::ConfigFile { path: p.display().to_string(), message };
    let text = std::fs::read_to_string(p).map_err(|e| err(e.to_string()))?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| err(e.to_string()))?;
    let llm = match table.get("llm") {
        Some(toml::Value::Table(t)) => t.clone(),
        Some(_) => return Err(err("[llm] must be a table".into())),
        None => toml::Table::new(),
    };
    // A misspelt or mistyped entry would otherwise be ignored without a word.
    for (key, value) in &llm {
        if STRING_KEYS.contains(&key.as_str()) {
            if !value.is_str() {
                return Err(err(format!(
                    "[llm] {key}: expected a string like {key} = \"...\", found {}",
                    value.type_str()
                )));
            }
        } else if INTEGER_KEYS.contains(&key.as_str()) {
            if value.as_integer().is_none_or(|i| i < 0) {
                return Err(err(format!(
                    "[llm] {key}: expected a whole number of 0 or more like {key} = 60, found {}",
                    value.type_str()
                )));
            }
        } else {
            let known: Vec<&str> = STRING_KEYS.iter().chain(&INTEGER_KEYS).copied().collect();
            return Err(err(format!("[llm] has no key {key:?}; the keys are {}", known.join(", "))));
        }
    }
    if llm.contains_key("url") && llm.contains_key("base_url") {
        return Err(err("[llm] gives both url and base_url; keep one".into()));
    }
    Ok(llm)
}

/// The command-line values the CLI passes to [`LlmConfig::from_env_and_args`] (all optional).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmArgs {
    /// `--llm-url`.
    pub llm_url: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--api-key-env NAME`: read the key from `$NAME` instead of `OPENAI_API_KEY`.
    pub api_key_env: Option<String>,
    /// `--jobs`.
    pub jobs: Option<usize>,
    /// Request timeout in seconds.
    pub timeout_secs: Option<u64>,
    /// Retries after transient failures.
    pub retries: Option<usize>,
    /// Tokens per trajectory.
    pub token_budget: Option<u64>,
    /// `--record DIR`.
    pub record: Option<PathBuf>,
    /// `--replay DIR`.
    pub replay: Option<PathBuf>,
    /// `--dry-run`.
    pub dry_run: bool,
    /// `--llm-config FILE`.
    pub config_file: Option<PathBuf>,
    /// The user's config file (`~/.config/falat/config.toml`), read when it exists and neither
    /// `config_file` nor [`CONFIG_ENV`] names another.
    pub default_config_file: Option<PathBuf>,
    /// `--llm-deadline SECS`: per trajectory (0: none).
    pub trajectory_deadline_secs: Option<u64>,
    /// `--llm-run-deadline SECS`: per run (0: none).
    pub run_deadline_secs: Option<u64>,
    /// `--llm-fallback fail|heuristic`.
    pub fallback: Option<String>,
}

/// A configuration the LLM judge cannot start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// No base URL anywhere.
    #[error(
        "no LLM server configured: pass --llm-url URL (e.g. http://127.0.0.1:8080/v1), set OPENAI_BASE_URL, or set base_url in the [llm] table of the config file"
    )]
    NoUrl,
    /// The base URL is not http(s).
    #[error("the LLM server URL `{0}` must start with http:// or https://")]
    BadUrl(String),
    /// No model name anywhere.
    #[error("no model configured: pass --model NAME or set model in the [llm] table of the config file")]
    NoModel,
    /// The config file could not be read.
    #[error("config file {path}: {message}")]
    ConfigFile {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The record or replay folder could not be used.
    #[error(transparent)]
    Cache(#[from] cache::CacheError),
    /// The HTTP client or the runtime could not be set up.
    #[error("cannot start the LLM client: {reason}")]
    Setup {
        /// The HTTP stack's or the runtime's reason.
        reason: String,
    },
}

/// Counters of one judge (over all trajectories it answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Requests sent or replayed (including repairs and refused ones).
    pub calls: u64,
    /// Repair requests after an invalid answer.
    pub repairs: u64,
    /// Questions answered by the heuristic judge with a warning.
    pub fallbacks: u64,
    /// Prompts the server found longer than the model's context.
    pub context_overflows: u64,
    /// Exchanges served from the replay cache.
    pub replayed: u64,
    /// Prompt tokens (from `usage`, else counted).
    pub prompt_tokens: u64,
    /// Completion tokens (from `usage`, else counted).
    pub completion_tokens: u64,
    /// Prompt tokens the server served from its cache (as it reported them).
    pub cached_tokens: u64,
}

/// One request a dry run would send.
#[derive(Debug, Clone, PartialEq)]
pub struct DryRunCall {
    /// The question kind.
    pub kind: String,
    /// Questions the call answers.
    pub questions: usize,
    /// Prompt tokens, counted as [`DryRunReport::counter`] says.
    pub prompt_tokens: u64,
    /// The request's `max_tokens`.
    pub max_completion_tokens: u32,
    /// The messages.
    pub messages: Vec<Message>,
}

impl DryRunCall {
    /// The question the request asks: the last paragraph of the user message before the
    /// `JSON:` answer format, on one line.
    pub fn question(&self) -> Option<String> {
        let user = self.messages.iter().rev().find(|m| m.role == "user")?;
        let head = user.content.rsplit_once("\nJSON:").map_or(user.content.as_str(), |(h, _)| h);
        let para = head.trim_end().rsplit("\n\n").next()?.trim();
        (!para.is_empty()).then(|| crate::text::sanitize(&para.split_whitespace().collect::<Vec<_>>().join(" ")))
    }
}

/// What [`dry_run`] found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DryRunReport {
    /// The model named in the requests.
    pub model: String,
    /// The requests in order.
    pub calls: Vec<DryRunCall>,
    /// What counted their prompt tokens.
    pub counter: TokenCounter,
}

/// What counted a dry run's prompt tokens.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TokenCounter {
    /// `tiktoken-rs` `o200k_base`, offline: nothing is sent.
    #[default]
    O200k,
    /// The server's own tokenizer: llama.cpp `POST /tokenize` at this URL (credentials removed);
    /// nothing else is sent.
    Server(String),
}

impl TokenCounter {
    /// One sentence saying how the prompt tokens were counted and what they are worth.
    pub fn note(&self) -> String {
        match self {
            TokenCounter::O200k => format!(
                "prompt tokens counted with o200k_base (nothing is sent, not even to a tokenizer); a server's own tokenizer may count more: {O200K_MARGIN} (repairs and refusals are not included)"
            ),
            TokenCounter::Server(url) => format!(
                "prompt tokens counted by the server's tokenizer ({}; nothing else was sent), +4 per message and +3 per reply (repairs and refusals are not included)",
                crate::text::sanitize(url)
            ),
        }
    }
}

/// How far `o200k_base` counts stand from a server's tokenizer, as measured.
pub const O200K_MARGIN: &str = "SmolLM2's counted 7-8 % more on these prompts";

/// Counts a dry run's prompt tokens: with the server's tokenizer (llama.cpp `POST /tokenize`)
/// when a base URL is configured and the server answers it, else with `o200k_base`. Made once
/// for a whole set ([`dry_run_counting`]); it remembers each message's count, so the system
/// message shared by every request is sent to the tokenizer once.
pub struct DryRunCounter {
    /// The runtime and client reaching `/tokenize`; `None` to count with `o200k_base`.
    server: Option<(tokio::runtime::Runtime, Client)>,
    url: String,
    memo: Mutex<HashMap<String, u64>>,
}

impl std::fmt::Debug for DryRunCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DryRunCounter").field("counter", &self.counter()).finish()
    }
}

impl Drop for DryRunCounter {
    fn drop(&mut self) {
        if let Some((rt, _)) = self.server.take() {
            rt.shutdown_background();
        }
    }
}

impl DryRunCounter {
    /// A counter for `cfg`: when `cfg.base_url` is set, asks the server's `/tokenize` once (with
    /// the key from `$cfg.api_key_env`) and uses it if it answers; otherwise `o200k_base`.
    ///
    /// # Errors
    /// [`LlmError::Setup`] when the HTTP client or its runtime cannot start.
    pub fn new(cfg: &LlmConfig) -> Result<DryRunCounter, LlmError> {
        let mut counter = DryRunCounter { server: None, url: String::new(), memo: Mutex::new(HashMap::new()) };
        let Some(url) = cfg.base_url.as_deref() else { return Ok(counter) };
        let key = std::env::var(&cfg.api_key_env).ok().filter(|k| !k.is_empty());
        let client = Client::new(url, key, &cfg.api_key_env, cfg.timeout, 0)
            .map_err(|e| LlmError::Setup { reason: e.reason })?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("falat-tokenize")
            .enable_all()
            .build()
            .map_err(|e| LlmError::Setup { reason: e.to_string() })?;
        counter.url = client.tokenize_url();
        counter.server = Some((rt, client));
        if counter.server_count("falat").is_none() {
            tracing::info!("{} did not answer; the dry run counts with o200k_base", counter.url);
            if let Some((rt, _)) = counter.server.take() {
                rt.shutdown_background();
            }
        }
        Ok(counter)
    }

    /// The counter in use.
    pub fn counter(&self) -> TokenCounter {
        match self.server {
            Some(_) => TokenCounter::Server(self.url.clone()),
            None => TokenCounter::O200k,
        }
    }

    fn server_count(&self, text: &str) -> Option<u64> {
        if let Some(n) = self.memo.lock().unwrap_or_else(|p| p.into_inner()).get(text) {
            return Some(*n);
        }
        let (rt, client) = self.server.as_ref()?;
        let (client, owned) = (client.clone(), text.to_string());
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        rt.spawn(async move {
            let _ = tx.send(client.tokenize(&owned).await);
        });
        let n = rx.recv().ok().flatten()?;
        self.memo.lock().unwrap_or_else(|p| p.into_inner()).insert(text.to_string(), n);
        Some(n)
    }

    /// Prompt tokens of a message list with the server's tokenizer (+4 per message, +3 per
    /// reply, as [`count_tokens`]); `None` when the server does not answer.
    fn server_tokens(&self, messages: &[Message]) -> Option<u64> {
        messages.iter().map(|m| self.server_count(&m.content).map(|n| n + 4)).sum::<Option<u64>>().map(|n| n + 3)
    }

    /// Counts every call of a report with this counter and names it in the report. Should the
    /// server stop answering half-way, every call is counted with `o200k_base` instead, so one
    /// report never mixes two tokenizers.
    fn count(&self, report: &mut DryRunReport) {
        report.counter = TokenCounter::O200k;
        if self.server.is_none() {
            return;
        }
        let counts: Option<Vec<u64>> = report.calls.iter().map(|c| self.server_tokens(&c.messages)).collect();
        match counts {
            Some(counts) => {
                for (c, n) in report.calls.iter_mut().zip(counts) {
                    c.prompt_tokens = n;
                }
                report.counter = self.counter();
            }
            None => tracing::warn!("{} stopped answering; these prompts are counted with o200k_base", self.url),
        }
    }
}

impl DryRunReport {
    /// Sum of prompt tokens.
    pub fn prompt_tokens(&self) -> u64 {
        self.calls.iter().map(|c| c.prompt_tokens).sum()
    }

    /// A plain-text table: one row per request with, beneath it, the question it asks (the
    /// paragraph before the answer format, cut at 200 characters), then the total.
    pub fn render(&self) -> String {
        let sent = match self.counter {
            TokenCounter::O200k => "nothing was sent",
            TokenCounter::Server(_) => "nothing was sent but the prompts to the server's tokenizer",
        };
        let mut out = format!("dry run for model {}: {sent}\n", self.model);
        out.push_str(&format!(
            "{:<4} {:<18} {:>9} {:>13} {:>10}\n",
            "#", "kind", "questions", "prompt tok", "max compl"
        ));
        for (i, c) in self.calls.iter().enumerate() {
            out.push_str(&format!(
                "{:<4} {:<18} {:>9} {:>13} {:>10}\n",
                i + 1,
                c.kind,
                c.questions,
                c.prompt_tokens,
                c.max_completion_tokens
            ));
            if let Some(q) = c.question() {
                out.push_str(&format!("     asks: {}\n", crate::text::clip(&q, 200)));
            }
        }
        out.push_str(&format!("total: {} calls, {} prompt tokens\n", self.calls.len(), self.prompt_tokens()));
        out.push_str(&self.counter.note());
        out.push('\n');
        out
    }
}

/// A dry run: `run` diagnoses with a judge that sends nothing (for example
/// `|j| { methods::run(Method::Echo, t, j, &opts); }`), and the report lists every request it
/// would send, with its prompt tokens (the heuristic judge answers meanwhile, so later prompts are
/// the ones that follow heuristic answers; repair requests are not included). The command line
/// chooses what runs (`falat diagnose --dry-run`), so the judge needs no method or pipeline. The
/// tokens are counted by a [`DryRunCounter`] made for `cfg`: the server's `/tokenize` when a base
/// URL is configured and the server answers it (the only thing sent), else `o200k_base`.
///
/// # Errors
/// An [`LlmError`] from setting up the judge or the counter.
pub fn dry_run_with(cfg: &LlmConfig, run: impl FnOnce(&dyn Judge)) -> Result<DryRunReport, LlmError> {
    dry_run_counting(cfg, &DryRunCounter::new(cfg)?, run)
}

/// [`dry_run_with`] with a counter made once for many dry runs (`falat eval --dry-run`).
///
/// # Errors
/// An [`LlmError`] from setting up the judge.
pub fn dry_run_counting(
    cfg: &LlmConfig,
    counter: &DryRunCounter,
    run: impl FnOnce(&dyn Judge),
) -> Result<DryRunReport, LlmError> {
    let cfg = LlmConfig { dry_run: true, record_dir: None, replay_dir: None, ..cfg.clone() };
    let judge = LlmJudge::with_api_key(cfg, None)?;
    run(&judge);
    let calls = judge.lock().dry.clone();
    let mut report = DryRunReport { model: judge.cfg.model.clone(), calls, counter: TokenCounter::O200k };
    counter.count(&mut report);
    Ok(report)
}

/// Prompt tokens of a message list, counted with `o200k_base` (+4 per message, +3 per reply).
pub fn count_tokens(messages: &[Message]) -> u64 {
    let bpe = tiktoken_rs::o200k_base_singleton();
    messages.iter().map(|m| bpe.encode_ordinary(&m.content).len() as u64 + 4).sum::<u64>() + 3
}

fn count_text(s: &str) -> u64 {
    tiktoken_rs::o200k_base_singleton().encode_ordinary(s).len() as u64
}

#[derive(Debug, Clone)]
struct Memo {
    answer: Answer,
    warning: Option<String>,
    origin: Origin,
}

/// Who answered a question (counted in [`Cost::answers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Model,
    Repaired,
    NotAsked,
    FallbackInvalid,
    FallbackError,
    FallbackBudget,
    FallbackReplay,
}

impl Origin {
    fn count(self, c: &mut crate::diagnosis::AnswerCounts) {
        match self {
            Origin::Model => c.model += 1,
            Origin::Repaired => c.repaired += 1,
            Origin::NotAsked => c.not_asked += 1,
            Origin::FallbackInvalid => c.fallback_invalid += 1,
            Origin::FallbackError => c.fallback_error += 1,
            Origin::FallbackBudget => c.fallback_budget += 1,
            Origin::FallbackReplay => c.fallback_replay += 1,
        }
    }
}

/// One line of progress: a question of a trajectory that needed at least one call.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressEvent {
    /// The trajectory's id.
    pub trajectory: String,
    /// Questions of this trajectory asked so far (this one included).
    pub question: u64,
    /// The question in words (`candidates in steps 3-10`).
    pub what: String,
    /// Its kind (`recall_candidates`).
    pub kind: &'static str,
    /// Calls made for it (repairs and retried formats included).
    pub calls: u64,
    /// Prompt tokens sent, and how many of them the server served from its cache.
    pub prompt_tokens: u64,
    /// Of [`ProgressEvent::prompt_tokens`], served from the server's cache.
    pub cached_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Wall time.
    pub wall: Duration,
    /// `model`, `repaired` or why the offline judge answered.
    pub outcome: &'static str,
}

impl ProgressEvent {
    /// `falat: llm 12 task-3 recall_candidates (candidates in steps 3-10): 2 calls, 1,523 prompt
    /// tokens (1,200 cached), 57 completion, 3.2 s: model` (sanitized).
    pub fn line(&self) -> String {
        crate::text::sanitize(&format!(
            "falat: llm q{} {} {} ({}): {} call{}, {} prompt tokens ({} cached), {} completion, {:.1} s: {}",
            self.question,
            crate::text::clip(&self.trajectory, 40),
            self.kind,
            self.what,
            self.calls,
            if self.calls == 1 { "" } else { "s" },
            self.prompt_tokens,
            self.cached_tokens,
            self.completion_tokens,
            self.wall.as_secs_f64(),
            self.outcome
        ))
    }
}

/// Receives a [`ProgressEvent`] per question that needed a call.
pub type ProgressSink = Arc<dyn Fn(&ProgressEvent) + Send + Sync>;

/// What the judge knows of the server's slots (llama.cpp `/props` `total_slots`), so that one
/// trajectory's calls go to one slot and reuse its cached prompt.
#[derive(Debug, Default)]
struct Slots {
    /// `None` until probed; `Some(0)` when the server is not llama.cpp (nothing is pinned).
    count: Option<usize>,
    /// Requests in flight and the last start, per slot.
    load: Vec<(usize, Option<Instant>)>,
    /// The slot each trajectory uses.
    of: HashMap<String, usize>,
}

#[derive(Default)]
struct State {
    memo: HashMap<(String, String), Memo>,
    known: HashMap<String, Known>,
    spent: HashMap<String, u64>,
    fatal: Option<CallError>,
    fatal_warned: std::collections::HashSet<String>,
    kind_warned: std::collections::HashSet<(String, String)>,
    /// When each trajectory's first call started (its deadline counts from there).
    started: HashMap<String, Instant>,
    /// When the judge's first call started (the run deadline counts from there).
    run_started: Option<Instant>,
    /// Questions asked per trajectory (for progress lines).
    asked: HashMap<String, u64>,
    stats: Stats,
    dry: Vec<DryRunCall>,
    /// Trajectories whose first call was made (for [`Cost::later_prompt_tokens`]).
    first_call_done: std::collections::HashSet<String>,
    /// Questions whose replay miss was counted ([`Cost::replay_misses`] counts each once).
    misses_counted: std::collections::HashSet<(String, String)>,
}

struct Inner {
    client: Option<Client>,
    sem: tokio::sync::Semaphore,
    slots: Mutex<Slots>,
}

/// The LLM judge. Cheap to share across threads (`&LlmJudge` is `Sync`).
pub struct LlmJudge {
    cfg: LlmConfig,
    inner: Arc<Inner>,
    cache: Cache,
    state: Mutex<State>,
    rt: Option<tokio::runtime::Runtime>,
    progress: Mutex<Option<ProgressSink>>,
}

impl std::fmt::Debug for LlmJudge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmJudge").field("cfg", &self.cfg).field("client", &self.inner.client).finish()
    }
}

impl Drop for LlmJudge {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Why one request did not give usable answers.
enum Failure {
    /// A call failed; the message says why.
    Call(CallError),
    /// The answer stayed invalid after the repair request.
    Invalid(validate::Invalid),
    /// The trajectory's token budget is spent.
    Budget(u64),
    /// The schema of the question cannot be sent (a server would refuse it).
    Unaskable(String),
}

impl Failure {
    fn warning(&self, what: &str) -> Option<String> {
        let why = match self {
            Failure::Call(CallError::DryRun) => return None,
            Failure::Call(e) => e.to_string(),
            Failure::Invalid(e) => format!("invalid answer after one repair request ({e})"),
            Failure::Budget(b) => format!("the token budget of {b} tokens for this trajectory is spent"),
            Failure::Unaskable(e) => format!("not asked, its answer schema is invalid ({e})"),
        };
        Some(format!("llm judge: {what}: {why}; the heuristic judge answered instead"))
    }
}

impl Failure {
    fn origin(&self) -> Origin {
        match self {
            Failure::Call(CallError::DryRun) => Origin::NotAsked,
            Failure::Call(CallError::ReplayMiss) => Origin::FallbackReplay,
            Failure::Call(CallError::Deadline { .. }) | Failure::Budget(_) => Origin::FallbackBudget,
            Failure::Call(_) | Failure::Unaskable(_) => Origin::FallbackError,
            Failure::Invalid(_) => Origin::FallbackInvalid,
        }
    }
}

impl LlmJudge {
    /// A judge reading its API key from `$cfg.api_key_env` (absent is fine for local servers).
    ///
    /// # Errors
    /// [`LlmError::NoUrl`] without a URL outside replay and dry-run mode; [`LlmError::Cache`]
    /// when the replay folder has no exchanges or the record folder cannot be created;
    /// [`LlmError::Setup`] when the HTTP client or runtime cannot start.
    pub fn new(cfg: LlmConfig) -> Result<LlmJudge, LlmError> {
        let key = std::env::var(&cfg.api_key_env).ok().filter(|k| !k.is_empty());
        LlmJudge::with_api_key(cfg, key)
    }

    /// A judge with an explicit API key (for embedding and tests); the key lives only in the
    /// HTTP client.
    ///
    /// # Errors
    /// As [`LlmJudge::new`].
    pub fn with_api_key(cfg: LlmConfig, key: Option<String>) -> Result<LlmJudge, LlmError> {
        let cache = Cache::open(cfg.replay_dir.as_deref(), cfg.record_dir.as_deref())?;
        let (client, rt) = if cfg.online() {
            let url = cfg.base_url.as_deref().ok_or(LlmError::NoUrl)?;
            let client = Client::new(url, key, &cfg.api_key_env, cfg.timeout, cfg.retries)
                .map_err(|e| LlmError::Setup { reason: e.reason })?
                .with_limits(client::Limits {
                    max_retry_after: cfg.max_retry_after,
                    max_body_bytes: cfg.max_response_bytes,
                });
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("falat-llm")
                .enable_all()
                .build()
                .map_err(|e| LlmError::Setup { reason: e.to_string() })?;
            (Some(client), Some(rt))
        } else {
            (None, None)
        };
        let inner = Arc::new(Inner {
            client,
            sem: tokio::sync::Semaphore::new(cfg.jobs.max(1)),
            slots: Mutex::new(Slots::default()),
        });
        Ok(LlmJudge { cfg, inner, cache, state: Mutex::new(State::default()), rt, progress: Mutex::new(None) })
    }

    /// The configuration.
    pub fn config(&self) -> &LlmConfig {
        &self.cfg
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        self.lock().stats
    }

    /// Sends a one-token request (with the configured key and model) to check the server
    /// before a long run: one attempt and one retry, within the request timeout (a refused
    /// connection or key fails at once; a busy server may take that long to answer).
    ///
    /// # Errors
    /// The [`CallError`] a real question would get (unreachable, 401, unknown model...).
    pub fn check(&self) -> Result<(), CallError> {
        let req = ChatRequest {
            model: self.cfg.model.clone(),
            messages: vec![Message { role: "user", content: "Reply with {}".into() }],
            max_tokens: 1,
            schema: Value::Null,
            format: FormatMode::Plain,
        };
        let (Some(rt), Some(client)) = (&self.rt, &self.inner.client) else { return Ok(()) };
        let client = client.clone();
        let timeout = self.cfg.timeout;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        rt.spawn(async move {
            // A busy server queues the request behind others: wait as long as for any request
            // (an unreachable one fails at once, or after the 10 s connect timeout).
            let quick = client.with_retries(1);
            let deadline = tokio::time::Instant::now() + timeout;
            let _ = tx.send(quick.send(&req, &[], Some((deadline, "server check", timeout.as_secs()))).await);
        });
        rx.recv()
            .unwrap_or_else(|_| Err(CallError::BadResponse("the check ended without an answer".into())))
            .map(|_| ())
    }

    /// Where each question that needed a call is reported (progress lines); `None` for quiet.
    pub fn set_progress(&self, sink: Option<ProgressSink>) {
        *self.progress.lock().unwrap_or_else(|p| p.into_inner()) = sink;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The deadline of a trajectory's next call: the earlier of its own and the run's, with the
    /// scope and length for the message; `None` without deadlines.
    fn deadline(&self, traj: &str) -> Option<(Instant, &'static str, u64)> {
        let mut st = self.lock();
        let now = Instant::now();
        let t0 = *st.started.entry(traj.to_string()).or_insert(now);
        let r0 = *st.run_started.get_or_insert(now);
        let t = self.cfg.trajectory_deadline.map(|d| (t0 + d, "trajectory", d.as_secs()));
        let r = self.cfg.run_deadline.map(|d| (r0 + d, "run", d.as_secs()));
        match (t, r) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    /// Runs a request on the judge's runtime and waits for it on this thread. On llama.cpp
    /// (probed once with `/props`), the request names the trajectory's slot (`id_slot`) and asks
    /// to keep its prompt cached (`cache_prompt`), so the trajectory's next call reuses it.
    fn send(&self, req: ChatRequest, traj: &str) -> Result<Completion, CallError> {
        let (Some(rt), Some(_)) = (&self.rt, &self.inner.client) else { return Err(CallError::DryRun) };
        let deadline = self.deadline(traj);
        if let Some((d, scope, secs)) = deadline
            && Instant::now() >= d
        {
            return Err(CallError::Deadline { scope, secs });
        }
        let inner = Arc::clone(&self.inner);
        let traj = traj.to_string();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        rt.spawn(async move {
            let client = inner.client.as_ref().expect("online judge has a client");
            let deadline = deadline.map(|(d, scope, secs)| (tokio::time::Instant::from_std(d), scope, secs));
            let result = match inner.sem.acquire().await {
                Ok(_permit) => {
                    let slot = pick_slot(&inner, client, &traj).await;
                    let extra: Vec<(&'static str, Value)> = match slot {
                        Some(s) => vec![("id_slot", Value::from(s)), ("cache_prompt", Value::Bool(true))],
                        None => Vec::new(),
                    };
                    let r = client.send(&req, &extra, deadline).await;
                    if let Some(s) = slot {
                        let mut slots = inner.slots.lock().unwrap_or_else(|p| p.into_inner());
                        if let Some(l) = slots.load.get_mut(s) {
                            l.0 = l.0.saturating_sub(1);
                        }
                    }
                    r
                }
                Err(_) => Err(CallError::BadResponse("the judge is shutting down".into())),
            };
            let _ = tx.send(result);
        });
        rx.recv().unwrap_or_else(|_| Err(CallError::BadResponse("the request task ended without an answer".into())))
    }

    /// One exchange with the server (or the cache), with cost accounting and the response-format
    /// fallback (json_schema, then json_object, then plain text).
    #[allow(clippy::too_many_arguments)]
    fn call(
        &self,
        kind: &str,
        traj: &str,
        messages: &[Message],
        schema: &Value,
        max_tokens: u32,
        format: &mut FormatMode,
        cost: &mut Cost,
    ) -> Result<Completion, CallError> {
        // The format falls back for this question only (its repair request keeps the format that
        // was accepted): one refusal never changes how later questions are asked.
        loop {
            let format_now = *format;
            let req = ChatRequest {
                model: self.cfg.model.clone(),
                messages: messages.to_vec(),
                max_tokens,
                schema: schema.clone(),
                format: format_now,
            };
            let body = req.body();
            let t0 = Instant::now();
            let result = self.exchange(kind, traj, &body, req);
            self.account(traj, messages, &result, t0.elapsed(), cost);
            match (&result, format_now.weaker()) {
                (Err(e), Some(weaker)) if e.is_format_refusal() => {
                    tracing::info!(
                        "llm server refused response_format {format_now:?} ({e}); this question tries {weaker:?}"
                    );
                    *format = weaker;
                }
                _ => return result,
            }
        }
    }

    fn exchange(&self, kind: &str, traj: &str, body: &Value, req: ChatRequest) -> Result<Completion, CallError> {
        if self.cfg.replay_dir.is_some() {
            let hit = self.cache.get(&cache::key(body)).cloned();
            self.lock().stats.replayed += u64::from(hit.is_some());
            match hit {
                Some(Recorded::Answer(c)) => return Ok(c),
                Some(Recorded::Refusal(e)) => return Err(e),
                None if !self.cfg.online() => return Err(CallError::ReplayMiss),
                None => {}
            }
        }
        if self.cfg.dry_run {
            let call = DryRunCall {
                kind: kind.to_string(),
                questions: 0,
                prompt_tokens: count_tokens(&req.messages),
                max_completion_tokens: req.max_tokens,
                messages: req.messages,
            };
            self.lock().dry.push(call);
            return Err(CallError::DryRun);
        }
        let result = self.send(req, traj);
        self.cache.put(kind, body, &result);
        result
    }

    fn account(
        &self,
        traj: &str,
        messages: &[Message],
        result: &Result<Completion, CallError>,
        wall: Duration,
        cost: &mut Cost,
    ) {
        let (p, c, cached) = match result {
            Ok(done) => match done.usage {
                Some(u) => (u.prompt_tokens, u.completion_tokens, u.cached_tokens.min(u.prompt_tokens)),
                None => (count_tokens(messages), count_text(&done.content), 0),
            },
            Err(CallError::ContextTooLong { .. } | CallError::Refused { .. }) => (0, 0, 0),
            Err(_) => return,
        };
        cost.calls += 1;
        cost.prompt_tokens += p;
        cost.completion_tokens += c;
        cost.cached_tokens += cached;
        cost.wall += wall;
        let mut st = self.lock();
        // Only a trajectory's later calls can reuse what it sent before.
        if !st.first_call_done.insert(traj.to_string()) {
            cost.later_prompt_tokens += p;
            cost.later_cached_tokens += cached;
        }
        st.stats.calls += 1;
        st.stats.prompt_tokens += p;
        st.stats.completion_tokens += c;
        st.stats.cached_tokens += cached;
        // What the server computed: the prompt tokens it served from its cache are paid once.
        *st.spent.entry(traj.to_string()).or_default() += p - cached + c;
        if matches!(result, Err(CallError::ContextTooLong { .. })) {
            st.stats.context_overflows += 1;
        }
    }

    /// Answers a batch: prompt, call, validate, repair once; splits the batch or trims the prompt
    /// when it does not fit the model's context. One result per question.
    fn answer_batch(
        &self,
        ctx: &Context<'_>,
        kind: &dyn Kind,
        batch: &[Question],
        known: &Known,
        cost: &mut Cost,
    ) -> Vec<Result<(Answer, Origin), Failure>> {
        let traj = traj_key(ctx.trajectory);
        let mut d = Detail::FULL;
        loop {
            let user = prompts::render(kind.template(), &kind.fill(ctx, batch, known, d));
            let messages = vec![
                Message { role: "system", content: prompts::render(kind.system(), &[]) },
                Message { role: "user", content: user },
            ];
            let schema = kind.schema(ctx, batch, d);
            let unsendable = client::schema_problems(&schema);
            if !unsendable.is_empty() {
                // A question with nothing to choose from is not asked (a server would refuse it).
                return fail_all(batch, || Failure::Unaskable(unsendable.join("; ")));
            }
            let max_tokens = kind.max_tokens(batch);
            if let Some(b) = self.cfg.token_budget {
                let spent = self.lock().spent.get(&traj).copied().unwrap_or(0);
                if spent + count_tokens(&messages) + u64::from(max_tokens) > b {
                    return batch.iter().map(|_| Err(Failure::Budget(b))).collect();
                }
            }
            let mut format = FormatMode::JsonSchema;
            match self.call(kind.name(), &traj, &messages, &schema, max_tokens, &mut format, cost) {
                Ok(c) => return self.validate(ctx, kind, batch, d, &traj, messages, &schema, &c, format, cost),
                Err(CallError::ContextTooLong { detail }) => {
                    if let Some(mid) = split_point(batch) {
                        tracing::info!(
                            "{} prompt too long ({detail}); splitting {} questions",
                            kind.name(),
                            batch.len()
                        );
                        let mut out = self.answer_batch(ctx, kind, &batch[..mid], known, cost);
                        out.extend(self.answer_batch(ctx, kind, &batch[mid..], known, cost));
                        return out;
                    }
                    match d.shrink() {
                        Some(smaller) => d = smaller,
                        None => {
                            return fail_all(batch, || {
                                Failure::Call(CallError::ContextTooLong { detail: detail.clone() })
                            });
                        }
                    }
                }
                Err(e) => {
                    if let (CallError::DryRun, Some(last)) = (&e, self.lock().dry.last_mut()) {
                        last.questions = batch.len();
                    }
                    if e.is_fatal() {
                        self.lock().fatal.get_or_insert(e.clone());
                    }
                    return fail_all(batch, || Failure::Call(e.clone()));
                }
            }
        }
    }

    /// Validates an answer; on any problem sends one repair request and keeps, per question, the
    /// first valid answer of the two.
    #[allow(clippy::too_many_arguments)]
    fn validate(
        &self,
        ctx: &Context<'_>,
        kind: &dyn Kind,
        batch: &[Question],
        d: Detail,
        traj: &str,
        mut messages: Vec<Message>,
        schema: &Value,
        c: &Completion,
        mut format: FormatMode,
        cost: &mut Cost,
    ) -> Vec<Result<(Answer, Origin), Failure>> {
        let first = parse_reply(ctx, kind, batch, d, c);
        let errors = problems(&first);
        if errors.is_empty() {
            return first.into_iter().map(|r| r.map(|a| (a, Origin::Model)).map_err(Failure::Invalid)).collect();
        }
        self.lock().stats.repairs += 1;
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        tracing::debug!("{} answer invalid: {}", kind.name(), errors.join("; "));
        messages.push(Message { role: "assistant", content: crate::text::clip(&c.content, 3000) });
        let list: Vec<String> = errors.iter().take(8).map(|e| format!("- {e}")).collect();
        messages
            .push(Message { role: "user", content: prompts::render(prompts::REPAIR, &[("errors", list.join("\n"))]) });
        let second = match self.call(kind.name(), traj, &messages, schema, kind.max_tokens(batch), &mut format, cost) {
            Ok(c2) => parse_reply(ctx, kind, batch, d, &c2),
            Err(e) => batch.iter().map(|_| Err(validate::Invalid::RepairCall(e.clone()))).collect(),
        };
        first
            .into_iter()
            .zip(second)
            .map(|(a, b)| match a {
                Ok(a) => Ok((a, Origin::Model)),
                Err(_) => b.map(|b| (b, Origin::Repaired)).map_err(Failure::Invalid),
            })
            .collect()
    }

    /// The heuristic's answer with the failure's warning. A fatal failure (unreachable server,
    /// rejected key, unknown model) warns once per trajectory, then its later fallbacks are quiet.
    fn fallback(&self, ctx: &Context<'_>, traj: &str, q: &Question, failure: &Failure) -> Memo {
        let mut warning = failure.warning(&describe(q));
        let mut st = self.lock();
        if warning.is_some() {
            st.stats.fallbacks += 1;
        }
        if let Failure::Call(e) = failure
            && e.is_fatal()
            && !st.fatal_warned.insert(traj.to_string())
        {
            warning = None;
        } else if let (Failure::Call(e), Some(w)) = (failure, warning.as_mut())
            && e.is_fatal()
        {
            w.push_str(" (the judge stops calling: every later question is answered by the heuristic judge)");
        }
        drop(st);
        Memo { answer: heuristic::answer(ctx, q), warning, origin: failure.origin() }
    }

    fn ask_uncached(&self, ctx: &Context<'_>, q: &Question, traj: &str, cost: &mut Cost) -> Memo {
        let Some(kind) = prompts::kind(q.kind()) else {
            // Warn once per trajectory and kind, not once per question.
            let mut st = self.lock();
            st.stats.fallbacks += 1;
            let first = st.kind_warned.insert((traj.to_string(), q.kind().to_string()));
            drop(st);
            let warning = first.then(|| {
                format!("llm judge: no prompt for question kind `{}`; the heuristic judge answers these", q.kind())
            });
            return Memo { answer: heuristic::answer(ctx, q), warning, origin: Origin::FallbackError };
        };
        if !in_range(ctx, q) {
            // Nothing to send (or to ask the heuristic) about steps the trajectory does not have.
            let warning = format!("llm judge: {} names steps or phases the trajectory does not have", describe(q));
            return Memo { answer: neutral(q), warning: Some(warning), origin: Origin::NotAsked };
        }
        let (known, fatal) = {
            let st = self.lock();
            (st.known.get(traj).cloned().unwrap_or_default(), st.fatal.clone())
        };
        if let Some(answer) = kind.skip(ctx, q, &known) {
            return Memo { answer, warning: None, origin: Origin::NotAsked };
        }
        if let Some(e) = fatal {
            return self.fallback(ctx, traj, q, &Failure::Call(e));
        }
        let batch: Vec<Question> = {
            let st = self.lock();
            let all = kind.batch(ctx, q, &known);
            all.into_iter()
                .enumerate()
                .filter(|(i, b)| *i == 0 || !st.memo.contains_key(&(traj.to_string(), memo_key(b))))
                .map(|(_, b)| b)
                .collect()
        };
        let results = self.answer_batch(ctx, kind, &batch, &known, cost);
        *self.lock().known.entry(traj.to_string()).or_default().calls.entry(kind.name().to_string()).or_default() += 1;
        let mut mine = None;
        for (b, r) in batch.iter().zip(results) {
            let m = match r {
                Ok((answer, origin)) => Memo { answer, warning: None, origin },
                Err(f) => self.fallback(ctx, traj, b, &f),
            };
            self.learn(traj, b, &m.answer);
            if b == q {
                mine = Some(m.clone());
            }
            self.lock().memo.insert((traj.to_string(), memo_key(b)), m);
        }
        mine.unwrap_or_else(|| Memo { answer: heuristic::answer(ctx, q), warning: None, origin: Origin::NotAsked })
    }

    /// Notes what batching later questions needs: recalled candidates, labelled candidates.
    fn learn(&self, traj: &str, q: &Question, a: &Answer) {
        let mut st = self.lock();
        let known = st.known.entry(traj.to_string()).or_default();
        match (q, a) {
            (Question::RecallCandidates { .. }, Answer::Candidates(found)) => {
                for (s, f) in found {
                    let what: Vec<String> =
                        f.iter().map(|f| format!("{}: {}", f.signal.as_str(), f.evidence)).collect();
                    known.recalled.push((*s, what.join("; ")));
                }
                known.recalled.sort_by_key(|(s, _)| *s);
            }
            (Question::LabelTransition { from, .. }, _) => {
                known.labelled.insert(*from);
            }
            _ => {}
        }
    }
}

impl Judge for LlmJudge {
    fn name(&self) -> String {
        format!("llm:{}", self.cfg.model)
    }

    fn kind(&self) -> crate::judge::JudgeKind {
        crate::judge::JudgeKind::Llm
    }

    fn ask(&self, ctx: &Context<'_>, question: &Question) -> Judged {
        let start = Instant::now();
        let traj = traj_key(ctx.trajectory);
        let key = (traj.clone(), memo_key(question));
        let memo = self.lock().memo.get(&key).cloned();
        let mut cost = Cost::default();
        let m = match memo {
            Some(m) => m,
            None => self.ask_uncached(ctx, question, &traj, &mut cost),
        };
        if m.origin == Origin::FallbackReplay && self.lock().misses_counted.insert(key) {
            cost.replay_misses += 1;
        }
        if cost.calls == 0 {
            cost.wall = start.elapsed();
        }
        m.origin.count(&mut cost.answers);
        let n = {
            let mut st = self.lock();
            let n = st.asked.entry(traj.clone()).or_default();
            *n += 1;
            *n
        };
        if cost.calls > 0 {
            let sink = self.progress.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(sink) = sink {
                sink(&ProgressEvent {
                    trajectory: ctx.trajectory.id.clone(),
                    question: n,
                    what: describe(question),
                    kind: question.kind().as_str(),
                    calls: cost.calls,
                    prompt_tokens: cost.prompt_tokens,
                    cached_tokens: cost.cached_tokens,
                    completion_tokens: cost.completion_tokens,
                    wall: cost.wall,
                    outcome: match m.origin {
                        Origin::Model => "model",
                        Origin::Repaired => "repaired",
                        Origin::NotAsked => "not asked",
                        Origin::FallbackInvalid => "offline judge (invalid answer)",
                        Origin::FallbackError => "offline judge (call failed)",
                        Origin::FallbackBudget => "offline judge (budget or deadline)",
                        Origin::FallbackReplay => "offline judge (not in replay)",
                    },
                });
            }
        }
        Judged { answer: m.answer, cost, warning: m.warning }
    }
}

/// The llama.cpp slot for a trajectory's call: the one it used before, or else the slot with
/// the fewest requests in flight (then the one idle longest). `None` when the server is not
/// llama.cpp (probed once with `/props`), where vLLM and SGLang reuse shared prefixes on their
/// own and hosted APIs cache prefixes of 1,024 tokens or more.
async fn pick_slot(inner: &Inner, client: &Client, traj: &str) -> Option<usize> {
    let probed = inner.slots.lock().unwrap_or_else(|p| p.into_inner()).count;
    let count = match probed {
        Some(n) => n,
        None => {
            let n = client.llama_cpp_slots().await.unwrap_or(0);
            let mut slots = inner.slots.lock().unwrap_or_else(|p| p.into_inner());
            if slots.count.is_none() {
                slots.count = Some(n);
                slots.load = vec![(0, None); n];
            }
            slots.count.unwrap_or(0)
        }
    };
    if count == 0 {
        return None;
    }
    let mut slots = inner.slots.lock().unwrap_or_else(|p| p.into_inner());
    let s = match slots.of.get(traj) {
        Some(s) => *s,
        None => {
            let s = (0..count).min_by_key(|&i| (slots.load[i].0, slots.load[i].1))?;
            slots.of.insert(traj.to_string(), s);
            s
        }
    };
    slots.load[s].0 += 1;
    slots.load[s].1 = Some(Instant::now());
    Some(s)
}

/// Whether every step and phase a question names exists.
fn in_range(ctx: &Context<'_>, q: &Question) -> bool {
    let n = ctx.trajectory.steps.len();
    match q {
        Question::PhaseSummary { phase } => *phase < ctx.hierarchy.phases.len(),
        Question::RecallCandidates { range } => range.start < n,
        Question::LabelTransition { from, to } => *from < n && *to < n,
        Question::Verify { step, live, .. } => *step < n && live.iter().all(|o| *o < n),
        Question::Roles { window } => window.end <= n && !window.is_empty(),
        Question::IsDecisive { step, .. } => *step < n,
        Question::LocateInRange { range, split, .. } => range.end <= n && range.start < *split && *split < range.end,
        Question::SegmentRecall { segment, .. } => segment.start < n,
        Question::TracePropagation { candidates, .. } | Question::Adjudicate { candidates, .. } => {
            candidates.iter().all(|c| *c < n)
        }
        Question::Prior | Question::LocateError { .. } | Question::AnalystVote { .. } => true,
    }
}

/// The answer that claims nothing, for a question about steps that do not exist.
fn neutral(q: &Question) -> Answer {
    match q {
        Question::PhaseSummary { .. } => Answer::PhaseSummary { summary: String::new(), suspicion: 0.0 },
        Question::LabelTransition { .. } => Answer::Transition(crate::diagnosis::Transition::NoInfluence),
        Question::Verify { step, .. } => Answer::Criterion(crate::diagnosis::Criterion {
            passed: false,
            evidence: crate::prose!["step ", crate::diagnosis::Part::Step(*step), " is not in the trajectory"],
        }),
        Question::Roles { window } => Answer::Roles {
            roles: Vec::new(),
            decisive: window.start,
            reason: "the window is outside the trajectory".into(),
        },
        Question::IsDecisive { step, .. } => Answer::Verdict {
            decisive: false,
            reason: format!("step {step} is not in the trajectory"),
            confidence: 0.0,
        },
        Question::LocateInRange { .. } => {
            Answer::Half { half: Half::First, reason: "the range is outside the trajectory".into() }
        }
        Question::TracePropagation { .. } => Answer::Propagation { edges: Vec::new() },
        Question::Adjudicate { .. } => Answer::Adjudication {
            step: 0,
            category: ErrorCategory::Other,
            reason: "the candidates are outside the trajectory".into(),
            confidence: 0.0,
        },
        // Always in range (no step numbers), or a list of candidates that may be empty.
        Question::Prior
        | Question::RecallCandidates { .. }
        | Question::SegmentRecall { .. }
        | Question::LocateError { .. }
        | Question::AnalystVote { .. } => Answer::Candidates(Vec::new()),
    }
}

/// Identifies a trajectory across calls: id, step count and a hash of the task and the steps'
/// agents and lengths (two data sets may both have a trajectory `1`).
fn traj_key(t: &Trajectory) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    t.task.hash(&mut h);
    for s in &t.steps {
        (&s.agent, s.content.len()).hash(&mut h);
    }
    format!("{}#{}#{:016x}", t.id, t.steps.len(), h.finish())
}

fn memo_key(q: &Question) -> String {
    q.to_json().to_string()
}

fn fail_all(batch: &[Question], f: impl Fn() -> Failure) -> Vec<Result<(Answer, Origin), Failure>> {
    batch.iter().map(|_| Err(f())).collect()
}

/// Where to split a batch that does not fit: the middle (between candidates for `verify`, whose
/// questions come in pairs); `None` for a single question.
fn split_point(batch: &[Question]) -> Option<usize> {
    let pairs = batch.iter().all(|q| matches!(q, Question::Verify { .. }));
    let mid = if pairs { (batch.len() / 4) * 2 } else { batch.len() / 2 };
    (mid > 0 && mid < batch.len()).then_some(mid)
}

fn parse_reply(
    ctx: &Context<'_>,
    kind: &dyn Kind,
    batch: &[Question],
    d: Detail,
    c: &Completion,
) -> Vec<Result<Answer, validate::Invalid>> {
    let parsed = validate::extract_json(&c.content).and_then(|v| kind.parse(ctx, batch, d, &v));
    match parsed {
        Ok(each) => each,
        Err(e) => {
            let e = if c.finish_reason.as_deref() == Some("length") {
                validate::Invalid::StoppedAtMaxTokens(Box::new(e))
            } else {
                e
            };
            batch.iter().map(|_| Err(e.clone())).collect()
        }
    }
}

/// The distinct problems of a parsed batch.
fn problems(results: &[Result<Answer, validate::Invalid>]) -> Vec<validate::Invalid> {
    let mut out: Vec<validate::Invalid> = Vec::new();
    for e in results.iter().filter_map(|r| r.as_ref().err()) {
        if !out.contains(e) {
            out.push(e.clone());
        }
    }
    out
}

/// A question in words, for warnings.
fn describe(q: &Question) -> String {
    match q {
        Question::Prior => "prior".into(),
        Question::PhaseSummary { phase } => format!("summary of phase {phase}"),
        Question::RecallCandidates { range } => {
            format!("candidates in steps {}-{}", range.start, range.end.saturating_sub(1))
        }
        Question::LabelTransition { from, to } => format!("transition {from}->{to}"),
        Question::Verify { step, criterion, .. } => format!("{} of step {step}", criterion.as_str()),
        Question::Roles { window } => format!("roles in steps {}-{}", window.start, window.end.saturating_sub(1)),
        Question::LocateError { .. } => "all-at-once attribution".into(),
        Question::IsDecisive { step, .. } => format!("step-by-step verdict on step {step}"),
        Question::LocateInRange { range, .. } => {
            format!("binary search over steps {}-{}", range.start, range.end.saturating_sub(1))
        }
        Question::AnalystVote { perspective, target, .. } => {
            format!("{perspective} analyst's {} vote", target.as_str())
        }
        Question::SegmentRecall { segment, .. } => {
            format!("candidates in segment {}-{}", segment.start, segment.end.saturating_sub(1))
        }
        Question::TracePropagation { candidates, .. } => format!("propagation of steps {candidates:?}"),
        Question::Adjudicate { .. } => "adjudication".into(),
    }
}

#[cfg(test)]
mod tests;
