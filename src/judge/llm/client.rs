//! A thin client for `POST {base}/chat/completions` of any OpenAI-compatible server.
//!
//! # Why a thin client of our own rather than `async-openai`
//! falat needs one endpoint, and it needs it raw: the exact JSON body we send is what the
//! record/replay cache hashes and stores, servers deviate from OpenAI's schema (llama.cpp adds
//! `timings`, reports an over-long prompt as `exceed_context_size_error`, vLLM and Ollama word their
//! errors differently), and the judge must map each failure to an action a user can take
//! (unreachable, 401, unknown model, context too long, rate limited). With `async-openai` we would
//! still use its `byot` untyped mode for the body, wrap its retry layer to see `Retry-After`
//! ourselves, and map its error enum back to status codes, while pulling in a large crate. The
//! hand-written client is about 250 lines over `reqwest` (rustls) and `backon`, and is tested
//! against a real llama.cpp server and a loopback mock. Revisit if streaming or tool calls are
//! wanted.
//!
//! # Retries
//! Connection errors, timeouts, HTTP 429 and 5xx are retried with exponential backoff (from
//! 500 ms, factor 2, at most 8 s, with jitter) up to `retries` times; a `Retry-After` header (in
//! seconds, capped at 60 s) replaces the computed delay. Other failures are returned at once.
//!
//! # Secrets
//! The API key is sent as a `Bearer` header marked sensitive (reqwest then never shows it in
//! `Debug`), is not part of any value this module returns, and [`Client`]'s `Debug` omits it.

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use serde_json::{Value, json};

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    /// The text.
    pub content: String,
}

/// How the answer format is requested from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FormatMode {
    /// `response_format: {type: json_schema, json_schema: {name, strict, schema}}`.
    JsonSchema,
    /// The same with a simpler schema ([`simplify_schema`]: no `enum`, length or count bounds),
    /// for a server that refused the full one; the answer is still validated against the full.
    SimpleSchema,
    /// `response_format: {type: json_object}`; the schema is described in the prompt.
    JsonObject,
    /// No `response_format`; the JSON is extracted from plain text.
    Plain,
}

impl FormatMode {
    /// The next weaker mode, if any.
    pub fn weaker(self) -> Option<FormatMode> {
        match self {
            FormatMode::JsonSchema => Some(FormatMode::SimpleSchema),
            FormatMode::SimpleSchema => Some(FormatMode::JsonObject),
            FormatMode::JsonObject => Some(FormatMode::Plain),
            FormatMode::Plain => None,
        }
    }
}

/// A chat-completions request; [`ChatRequest::body`] is exactly what is sent and hashed.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The model name.
    pub model: String,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Upper bound on completion tokens.
    pub max_tokens: u32,
    /// The JSON schema of the answer.
    pub schema: Value,
    /// How the schema is requested.
    pub format: FormatMode,
}

impl ChatRequest {
    /// The JSON body: model, messages, `temperature` 0, `seed` 0, `max_tokens`, and the
    /// `response_format` of [`ChatRequest::format`]. Contains no credentials.
    pub fn body(&self) -> Value {
        let messages: Vec<Value> =
            self.messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect();
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "temperature": 0,
            "seed": 0,
            "max_tokens": self.max_tokens,
        });
        match self.format {
            FormatMode::JsonSchema => {
                body["response_format"] = json!({
                    "type": "json_schema",
                    "json_schema": {"name": "answer", "strict": true, "schema": self.schema},
                });
            }
            FormatMode::SimpleSchema => {
                body["response_format"] = json!({
                    "type": "json_schema",
                    "json_schema": {"name": "answer", "strict": false, "schema": simplify_schema(&self.schema)},
                });
            }
            FormatMode::JsonObject => body["response_format"] = json!({"type": "json_object"}),
            FormatMode::Plain => {}
        }
        body
    }
}

/// The schema with every construct some server refuses removed: `enum` (llama.cpp refuses an
/// empty one, others long ones), `minItems`/`maxItems`, `minLength`/`maxLength`,
/// `minimum`/`maximum`. Types, properties and `required` stay. What it drops is still checked by
/// the judge's validation of the answer.
pub fn simplify_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(m) => {
            let mut out = serde_json::Map::new();
            for (k, v) in m {
                match k.as_str() {
                    "enum" | "minItems" | "maxItems" | "minLength" | "maxLength" | "minimum" | "maximum" => {}
                    // A property name is data, not a keyword: keep every one, simplify its schema.
                    "properties" => {
                        let props = v.as_object().map(|p| {
                            p.iter()
                                .map(|(name, sub)| (name.clone(), simplify_schema(sub)))
                                .collect::<serde_json::Map<_, _>>()
                        });
                        out.insert(k.clone(), props.map_or_else(|| v.clone(), Value::Object));
                    }
                    _ => {
                        out.insert(k.clone(), simplify_schema(v));
                    }
                }
            }
            // An `{"enum": [...]}` without a type (a nullable choice) keeps a permissive type.
            if m.contains_key("enum") && !out.contains_key("type") {
                let types: Vec<&str> =
                    m["enum"].as_array().map(|a| a.iter().map(json_type).collect()).unwrap_or_default();
                let mut types: Vec<&str> = types;
                types.sort_unstable();
                types.dedup();
                if !types.is_empty() {
                    out.insert("type".into(), json!(types));
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(simplify_schema).collect()),
        v => v.clone(),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The problems that make a schema unsendable to the servers falat supports (OpenAI, vLLM,
/// SGLang, llama.cpp, Ollama): an empty `enum` (nothing to choose from; llama.cpp answers
/// HTTP 400 "enum must be a non-empty array"), an object whose `required` names a property it
/// does not define. Each problem is a JSON pointer and a sentence; empty when the schema is
/// fine.
pub fn schema_problems(schema: &Value) -> Vec<String> {
    fn walk(v: &Value, at: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(e) = m.get("enum")
                    && e.as_array().is_none_or(Vec::is_empty)
                {
                    out.push(format!("{at}: enum must be a non-empty array"));
                }
                if let (Some(Value::Array(req)), props) =
                    (m.get("required"), m.get("properties").and_then(Value::as_object))
                {
                    for r in req.iter().filter_map(Value::as_str) {
                        if props.is_none_or(|p| !p.contains_key(r)) {
                            out.push(format!("{at}: required property `{r}` is not defined"));
                        }
                    }
                }
                for (k, sub) in m {
                    if k == "enum" {
                        continue;
                    }
                    walk(sub, &format!("{at}/{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, sub) in a.iter().enumerate() {
                    walk(sub, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(schema, "#", &mut out);
    out
}

/// Token usage as the server reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: u64,
    /// `usage.completion_tokens`.
    pub completion_tokens: u64,
    /// Prompt tokens the server served from its prompt cache: OpenAI, vLLM and SGLang
    /// `usage.prompt_tokens_details.cached_tokens`, llama.cpp `timings.cache_n`; 0 when it says
    /// nothing.
    pub cached_tokens: u64,
}

/// The useful part of a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// `choices[0].message.content` (empty when absent).
    pub content: String,
    /// `choices[0].finish_reason` (`stop`, `length`...).
    pub finish_reason: Option<String>,
    /// `usage`, when the server sent one.
    pub usage: Option<Usage>,
}

impl Completion {
    /// Reads a response body.
    ///
    /// # Errors
    /// [`CallError::BadResponse`] when there is no `choices[0].message`.
    pub fn from_body(v: &Value) -> Result<Completion, CallError> {
        let choice = v.get("choices").and_then(|c| c.get(0)).ok_or_else(|| bad("no choices[0]", v))?;
        let message = choice.get("message").ok_or_else(|| bad("no choices[0].message", v))?;
        let content = message.get("content").and_then(Value::as_str).unwrap_or_default().to_string();
        let finish_reason = choice.get("finish_reason").and_then(Value::as_str).map(str::to_string);
        let cached = v
            .pointer("/usage/prompt_tokens_details/cached_tokens")
            .and_then(Value::as_u64)
            .or_else(|| v.pointer("/timings/cache_n").and_then(Value::as_u64))
            .unwrap_or(0);
        let usage = v.get("usage").and_then(|u| {
            Some(Usage {
                prompt_tokens: u.get("prompt_tokens")?.as_u64()?,
                completion_tokens: u.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0),
                cached_tokens: cached,
            })
        });
        Ok(Completion { content, finish_reason, usage })
    }

    /// The JSON form stored in the cache.
    pub fn to_json(&self) -> Value {
        json!({
            "content": self.content,
            "finish_reason": self.finish_reason,
            "usage": self.usage.map(|u| {
                let mut j = json!({"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens});
                if u.cached_tokens > 0 {
                    j["cached_tokens"] = json!(u.cached_tokens);
                }
                j
            }),
        })
    }

    /// Reads the cached form back.
    ///
    /// # Errors
    /// [`CallError::BadResponse`] when `content` is missing.
    pub fn from_cached(v: &Value) -> Result<Completion, CallError> {
        let content = v.get("content").and_then(Value::as_str).ok_or_else(|| bad("cached answer has no content", v))?;
        let usage = v.get("usage").filter(|u| !u.is_null()).map(|u| Usage {
            prompt_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
            completion_tokens: u.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0),
            cached_tokens: u.get("cached_tokens").and_then(Value::as_u64).unwrap_or(0),
        });
        let finish_reason = v.get("finish_reason").and_then(Value::as_str).map(str::to_string);
        Ok(Completion { content: content.to_string(), finish_reason, usage })
    }
}

fn bad(what: &str, v: &Value) -> CallError {
    CallError::BadResponse(format!("{what} in {}", crate::text::clip(&v.to_string(), 200)))
}

/// The HTTP client could not be built (its TLS or HTTP stack did not start).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct SetupError {
    /// The HTTP stack's reason.
    pub reason: String,
}

/// Why a call failed, worded for the person running falat. Every text it carries (URLs, the
/// server's messages) has the API key and the URL's credentials scrubbed out ([`Client`] builds
/// them so).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No connection could be made (after retries).
    #[error("cannot reach the LLM server at {url} ({detail}); is it running? check --llm-url / OPENAI_BASE_URL")]
    Unreachable {
        /// The endpoint (without credentials).
        url: String,
        /// The transport error.
        detail: String,
    },
    /// HTTP 401 or 403.
    #[error(
        "the LLM server at {url} rejected the API key (HTTP {status}); set a valid key in ${key_env} (or --api-key-env)"
    )]
    Unauthorized {
        /// The endpoint (without credentials).
        url: String,
        /// 401 or 403.
        status: u16,
        /// The environment variable the key was read from.
        key_env: String,
    },
    /// The server does not serve the model.
    #[error(
        "the LLM server does not serve the model `{model}` ({detail}); pass --model with one it lists at /v1/models"
    )]
    UnknownModel {
        /// The model asked for.
        model: String,
        /// The server's message.
        detail: String,
    },
    /// The prompt does not fit the model's context.
    #[error("the prompt is longer than the model's context ({detail})")]
    ContextTooLong {
        /// The server's message.
        detail: String,
    },
    /// HTTP 429 after all retries.
    #[error("rate limited by the LLM server (HTTP 429) after {attempts} attempts; lower --llm-jobs or wait")]
    RateLimited {
        /// Attempts made.
        attempts: usize,
    },
    /// HTTP 5xx after all retries.
    #[error("the LLM server failed (HTTP {status}): {detail}")]
    Server {
        /// The status.
        status: u16,
        /// The server's message.
        detail: String,
    },
    /// HTTP 400 and other 4xx: the server refused the body.
    #[error("the LLM server refused the request (HTTP {status}): {detail}")]
    Refused {
        /// The status.
        status: u16,
        /// The server's message.
        detail: String,
    },
    /// A redirect to another origin (scheme, host or port), which is not followed: the prompt and
    /// the key go only to the configured server.
    #[error(
        "the LLM server at {url} redirected to {location} (HTTP {status}), another origin: not followed; point --llm-url at the server itself"
    )]
    Redirected {
        /// The endpoint (without credentials).
        url: String,
        /// The `Location` it named (without credentials).
        location: String,
        /// The 3xx status.
        status: u16,
    },
    /// No answer within the timeout (after retries).
    #[error("no answer from the LLM server within {secs} s; raise the timeout or check the server")]
    Timeout {
        /// The timeout.
        secs: u64,
    },
    /// The overall deadline of the trajectory or of the run passed.
    #[error("the LLM deadline of {secs} s for this {scope} passed; later questions are answered offline")]
    Deadline {
        /// `trajectory` or `run`.
        scope: &'static str,
        /// The deadline.
        secs: u64,
    },
    /// The body is not a chat completion (or is larger than the cap and was cut).
    #[error("unreadable answer from the LLM server: {0}")]
    BadResponse(String),
    /// Replay mode and the exchange is not in the cache.
    #[error("the exchange is not in the replay cache (replay never contacts a server)")]
    ReplayMiss,
    /// Dry-run mode: nothing is sent.
    #[error("dry run: not sent")]
    DryRun,
}

impl CallError {
    /// Whether every later call would fail the same way (the judge then stops calling).
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            CallError::Unreachable { .. }
                | CallError::Unauthorized { .. }
                | CallError::UnknownModel { .. }
                | CallError::Redirected { .. }
        )
    }

    /// Whether a retry may help.
    fn is_transient(&self) -> bool {
        matches!(
            self,
            CallError::Unreachable { .. }
                | CallError::Timeout { .. }
                | CallError::RateLimited { .. }
                | CallError::Server { .. }
        )
    }

    /// Whether the server refused the `response_format` (then a weaker [`FormatMode`] is tried
    /// for that request).
    pub fn is_format_refusal(&self) -> bool {
        match self {
            CallError::Refused { detail, .. } => {
                let d = detail.to_lowercase();
                d.contains("response_format")
                    || d.contains("json_schema")
                    || d.contains("schema")
                    || d.contains("grammar")
                    || d.contains("parser")
            }
            _ => false,
        }
    }

    /// A stable name for the cache and statistics.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::Unreachable { .. } => "unreachable",
            CallError::Unauthorized { .. } => "unauthorized",
            CallError::UnknownModel { .. } => "unknown_model",
            CallError::ContextTooLong { .. } => "context_too_long",
            CallError::RateLimited { .. } => "rate_limited",
            CallError::Server { .. } => "server",
            CallError::Refused { .. } => "refused",
            CallError::Redirected { .. } => "redirected",
            CallError::Timeout { .. } => "timeout",
            CallError::Deadline { .. } => "deadline",
            CallError::BadResponse(_) => "bad_response",
            CallError::ReplayMiss => "replay_miss",
            CallError::DryRun => "dry_run",
        }
    }
}

/// One failed attempt, with the server's `Retry-After` when it sent one.
#[derive(Debug)]
struct Attempt {
    error: CallError,
    retry_after: Option<Duration>,
}

/// Bounds on what one server may cost: the wait a `Retry-After` may impose and the size of a
/// response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest wait a `Retry-After` header is honoured for (a longer one is cut to this).
    pub max_retry_after: Duration,
    /// Largest response body read, in bytes; a longer (or endless) one is cut there and the
    /// call fails with [`CallError::BadResponse`] saying so.
    pub max_body_bytes: usize,
}

impl Default for Limits {
    /// 30 s and 4 MiB (the longest answer falat asks for is a few kilobytes).
    fn default() -> Limits {
        Limits { max_retry_after: Duration::from_secs(30), max_body_bytes: 4 << 20 }
    }
}

/// Removes secrets from any text that may reach a warning, a report, a recording or a log: the
/// API key, the user name and password of the URL (as written and percent-decoded), and any
/// `Bearer` or `Basic` token a server echoes back.
#[derive(Clone, Default)]
pub struct Scrubber {
    secrets: Vec<String>,
}

impl Scrubber {
    /// A scrubber for `key` and the credentials of `url`.
    pub fn new(key: Option<&str>, url: &str) -> Scrubber {
        let mut secrets: Vec<String> = key.map(str::to_string).into_iter().collect();
        if let Ok(u) = reqwest::Url::parse(url) {
            let user = u.username().to_string();
            let pw = u.password().map(str::to_string);
            for s in [Some(user), pw].into_iter().flatten() {
                let decoded = percent_decode(&s);
                secrets.push(s);
                secrets.push(decoded);
            }
        }
        secrets.retain(|s| s.len() >= 3);
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Scrubber { secrets }
    }

    /// `text` with every secret replaced by `<redacted>`.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "<redacted>");
            }
        }
        redact_auth_tokens(&out)
    }
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Scrubber({} secrets)", self.secrets.len())
    }
}

/// Replaces the token after `Bearer ` / `Basic ` (any case) with `<redacted>`.
fn redact_auth_tokens(text: &str) -> String {
    let low = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let hit = ["bearer ", "basic "].iter().find(|p| low[i..].starts_with(*p));
        match hit {
            Some(p) => {
                out.push_str(&text[i..i + p.len()]);
                i += p.len();
                let rest = &text[i..];
                let end = rest
                    .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';' | '}' | ']' | '\\'))
                    .unwrap_or(rest.len());
                if end > 0 {
                    out.push_str("<redacted>");
                }
                i += end;
            }
            None => {
                let c = text[i..].chars().next().expect("in bounds");
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16)
        {
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `url` without its user name and password.
pub fn without_credentials(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string().trim_end_matches('/').to_string()
        }
        _ => url.to_string(),
    }
}

/// Whether two URLs have the same origin (scheme, host, port).
fn same_origin(a: &reqwest::Url, b: &reqwest::Url) -> bool {
    a.scheme() == b.scheme() && a.host_str() == b.host_str() && a.port_or_known_default() == b.port_or_known_default()
}

/// The HTTP client of one judge: endpoint, key, timeout, retry policy and limits.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    key: Option<String>,
    key_env: String,
    retries: usize,
    timeout: Duration,
    limits: Limits,
    scrubber: Scrubber,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &without_credentials(&self.base))
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .field("retries", &self.retries)
            .field("timeout", &self.timeout)
            .field("limits", &self.limits)
            .finish()
    }
}

impl Client {
    /// A client for `base` (e.g. `http://127.0.0.1:8080/v1`; `/chat/completions` is appended),
    /// with the default [`Limits`]. Redirects are followed only within the same origin (at most
    /// 5); a redirect elsewhere is reported as [`CallError::Redirected`].
    ///
    /// # Errors
    /// [`SetupError`]: the TLS or HTTP stack could not be set up.
    pub fn new(
        base: &str,
        key: Option<String>,
        key_env: &str,
        timeout: Duration,
        retries: usize,
    ) -> Result<Client, SetupError> {
        let policy = reqwest::redirect::Policy::custom(|attempt| {
            let first = attempt.previous().first().cloned();
            match first {
                Some(f) if same_origin(&f, attempt.url()) && attempt.previous().len() <= 5 => attempt.follow(),
                _ => attempt.stop(),
            }
        });
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10).min(timeout))
            .timeout(timeout)
            .redirect(policy)
            .build()
            .map_err(|e| SetupError { reason: e.to_string() })?;
        let base = base.trim_end_matches('/').trim_end_matches("/chat/completions").to_string();
        let scrubber = Scrubber::new(key.as_deref(), &base);
        Ok(Client {
            http,
            base,
            key,
            key_env: key_env.to_string(),
            retries,
            timeout,
            limits: Limits::default(),
            scrubber,
        })
    }

    /// The same client with other [`Limits`].
    pub fn with_limits(mut self, limits: Limits) -> Client {
        self.limits = limits;
        self
    }

    /// The same client with another number of retries.
    pub fn with_retries(mut self, retries: usize) -> Client {
        self.retries = retries;
        self
    }

    /// The chat-completions endpoint, without credentials (for messages).
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", without_credentials(&self.base))
    }

    /// The scrubber of this client's key and URL credentials.
    pub fn scrubber(&self) -> &Scrubber {
        &self.scrubber
    }

    /// The server's root (the base URL without a trailing `/v1`), where llama.cpp serves
    /// `/props`, `/slots` and `/tokenize`.
    fn root(&self) -> String {
        self.base.trim_end_matches("/v1").to_string()
    }

    /// Asks llama.cpp's `/props` for its number of slots (`total_slots`); `None` from any other
    /// server or on any failure (within 5 s).
    pub async fn llama_cpp_slots(&self) -> Option<usize> {
        let mut rb = self.http.get(format!("{}/props", self.root())).timeout(Duration::from_secs(5).min(self.timeout));
        if let Some(k) = &self.key {
            rb = rb.bearer_auth(k);
        }
        let resp = rb.send().await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let text = self.read_capped(resp).await.ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        v.get("total_slots").and_then(Value::as_u64).map(|n| n as usize).filter(|n| *n > 0)
    }

    /// Where [`Client::tokenize`] asks, without credentials.
    pub fn tokenize_url(&self) -> String {
        without_credentials(&format!("{}/tokenize", self.root()))
    }

    /// Counts the tokens of `text` with the server's own tokenizer (llama.cpp `POST /tokenize`);
    /// `None` when the server has no such endpoint.
    pub async fn tokenize(&self, text: &str) -> Option<u64> {
        let mut rb =
            self.http.post(format!("{}/tokenize", self.root())).json(&json!({"content": text})).timeout(self.timeout);
        if let Some(k) = &self.key {
            rb = rb.bearer_auth(k);
        }
        let resp = rb.send().await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let text = self.read_capped(resp).await.ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        v.get("tokens").and_then(Value::as_array).map(|t| t.len() as u64)
    }

    /// Sends a request with retries, before `deadline` (the whole exchange, retries and waits
    /// included). `extra` fields are added to the body as sent (llama.cpp `id_slot`,
    /// `cache_prompt`) but are not part of [`ChatRequest::body`], which the cache hashes.
    ///
    /// # Errors
    /// A [`CallError`] saying what went wrong and what to do; [`CallError::Deadline`] when the
    /// deadline passed first.
    pub async fn send(
        &self,
        req: &ChatRequest,
        extra: &[(&'static str, Value)],
        deadline: Option<(tokio::time::Instant, &'static str, u64)>,
    ) -> Result<Completion, CallError> {
        let mut body = req.body();
        for (k, v) in extra {
            body[*k] = v.clone();
        }
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(500))
            .with_max_delay(Duration::from_secs(8))
            .with_max_times(self.retries)
            .with_jitter();
        let cap = self.limits.max_retry_after;
        let until = deadline.map(|(d, _, _)| d);
        let mut attempts = 0usize;
        let fut = (|| {
            attempts += 1;
            self.attempt(&body, &req.model)
        })
        .retry(backoff)
        .when(|a: &Attempt| a.error.is_transient())
        // `d` is `None` once the retries are used up: keep it so, whatever `Retry-After` says.
        // A wait that would end after the deadline is not made.
        .adjust(move |a: &Attempt, d| {
            let d = d.map(|d| a.retry_after.map_or(d, |r| r.min(cap)))?;
            match until {
                Some(u) if tokio::time::Instant::now() + d >= u => None,
                _ => Some(d),
            }
        })
        .notify(|a: &Attempt, d| tracing::warn!("llm call failed ({}), retrying in {d:?}", a.error.kind()));
        let result = match deadline {
            Some((d, scope, secs)) => match tokio::time::timeout_at(d, fut).await {
                Ok(r) => r,
                Err(_) => return Err(CallError::Deadline { scope, secs }),
            },
            None => fut.await,
        };
        result.map_err(|a| match a.error {
            CallError::RateLimited { .. } => CallError::RateLimited { attempts },
            e => e,
        })
    }

    /// Reads a body up to [`Limits::max_body_bytes`].
    async fn read_capped(&self, mut resp: reqwest::Response) -> Result<String, CallError> {
        let cap = self.limits.max_body_bytes;
        let mut buf: Vec<u8> = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if buf.len() + chunk.len() > cap {
                        return Err(CallError::BadResponse(format!(
                            "the response was longer than {cap} bytes and was cut there"
                        )));
                    }
                    buf.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => return Err(self.transport(&e).error),
            }
        }
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    async fn attempt(&self, body: &Value, model: &str) -> Result<Completion, Attempt> {
        let url = format!("{}/chat/completions", self.base);
        let mut rb = self.http.post(&url).json(body);
        if let Some(k) = &self.key {
            rb = rb.bearer_auth(k);
        }
        let resp = rb.send().await.map_err(|e| self.transport(&e))?;
        let status = resp.status().as_u16();
        let retry_after = retry_after(resp.headers());
        if resp.status().is_redirection() {
            let location = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .map(|l| self.scrubber.scrub(&crate::text::sanitize(&without_credentials(l))))
                .unwrap_or_else(|| "nowhere".into());
            return Err(Attempt {
                error: CallError::Redirected {
                    url: self.endpoint(),
                    location: crate::text::clip(&location, 200),
                    status,
                },
                retry_after: None,
            });
        }
        let text = self.read_capped(resp).await.map_err(|error| Attempt { error, retry_after: None })?;
        if status == 200 {
            let v: Value = serde_json::from_str(&text).map_err(|e| Attempt {
                error: CallError::BadResponse(
                    self.scrubber
                        .scrub(&format!("not JSON ({e}): {}", crate::text::clip(&crate::text::sanitize(&text), 200))),
                ),
                retry_after: None,
            })?;
            return Completion::from_body(&v).map_err(|error| Attempt {
                error: match error {
                    CallError::BadResponse(m) => {
                        CallError::BadResponse(self.scrubber.scrub(&crate::text::sanitize(&m)))
                    }
                    e => e,
                },
                retry_after: None,
            });
        }
        Err(Attempt { error: self.classify(status, &text, model), retry_after })
    }

    fn transport(&self, e: &reqwest::Error) -> Attempt {
        let error = if e.is_timeout() {
            CallError::Timeout { secs: self.timeout.as_secs() }
        } else {
            // Only the error chain's text (reqwest errors carry the URL, never headers), with the
            // URL's credentials scrubbed.
            let mut detail = e.to_string();
            if let Some(u) = e.url() {
                detail = detail.replace(u.as_str(), &without_credentials(u.as_str()));
            }
            let mut src = std::error::Error::source(e);
            while let Some(s) = src {
                detail = format!("{detail}: {s}");
                src = s.source();
            }
            CallError::Unreachable {
                url: self.endpoint(),
                detail: crate::text::clip(&self.scrubber.scrub(&crate::text::sanitize(&detail)), 300),
            }
        };
        Attempt { error, retry_after: None }
    }

    fn classify(&self, status: u16, text: &str, model: &str) -> CallError {
        let detail = self.scrubber.scrub(&error_message(text));
        let low = text.to_lowercase();
        match status {
            401 | 403 => CallError::Unauthorized { url: self.endpoint(), status, key_env: self.key_env.clone() },
            429 => CallError::RateLimited { attempts: 1 },
            s if s >= 500 => CallError::Server { status, detail },
            413 => CallError::ContextTooLong { detail },
            _ if is_context_error(&low) => CallError::ContextTooLong { detail },
            404 | 400 if low.contains("model") && (low.contains("not found") || low.contains("does not exist")) => {
                CallError::UnknownModel { model: model.to_string(), detail }
            }
            _ => CallError::Refused { status, detail },
        }
    }
}

fn is_context_error(low: &str) -> bool {
    low.contains("exceed_context_size")
        || low.contains("context_length_exceeded")
        || low.contains("maximum context length")
        || (low.contains("context") && (low.contains("exceed") || low.contains("too long")))
}

/// The server's error message (`error.message`, `message`, `detail`) or the clipped body.
fn error_message(text: &str) -> String {
    let v: Option<Value> = serde_json::from_str(text).ok();
    let msg = v.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail"))
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    crate::text::clip(&crate::text::sanitize(&msg.unwrap_or_else(|| text.to_string())), 300)
}

/// `Retry-After` in seconds (HTTP dates are ignored: the computed backoff applies).
fn retry_after(h: &reqwest::header::HeaderMap) -> Option<Duration> {
    let v = h.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s.min(86_400.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_has_no_credentials_and_the_requested_format() {
        let req = ChatRequest {
            model: "m".into(),
            messages: vec![Message { role: "user", content: "hi".into() }],
            max_tokens: 10,
            schema: json!({"type": "object"}),
            format: FormatMode::JsonSchema,
        };
        let b = req.body();
        assert_eq!(b["response_format"]["type"], "json_schema");
        assert_eq!(b["response_format"]["json_schema"]["schema"], json!({"type": "object"}));
        let plain = ChatRequest { format: FormatMode::Plain, ..req };
        assert!(plain.body().get("response_format").is_none());
    }

    #[test]
    fn errors_are_classified() {
        let c = Client::new("http://x/v1/", None, "OPENAI_API_KEY", Duration::from_secs(1), 0).unwrap();
        assert_eq!(c.endpoint(), "http://x/v1/chat/completions");
        let ctx = r#"{"error":{"code":400,"message":"request (5031 tokens) exceeds the available context size (4096 tokens)","type":"exceed_context_size_error"}}"#;
        assert!(matches!(c.classify(400, ctx, "m"), CallError::ContextTooLong { .. }));
        assert!(matches!(c.classify(401, "{}", "m"), CallError::Unauthorized { status: 401, .. }));
        let nf = r#"{"error":{"message":"The model `gpt-9` does not exist","code":"model_not_found"}}"#;
        assert!(matches!(c.classify(404, nf, "gpt-9"), CallError::UnknownModel { .. }));
        assert!(c.classify(400, r#"{"error":{"message":"response_format not supported"}}"#, "m").is_format_refusal());
        assert!(matches!(c.classify(503, "busy", "m"), CallError::Server { status: 503, .. }));
        assert!(!format!("{c:?}").contains("secret"));
    }
}
