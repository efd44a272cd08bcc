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
    /// `response_format: {type: json_object}`; the schema is described in the prompt.
    JsonObject,
    /// No `response_format`; the JSON is extracted from plain text.
    Plain,
}

impl FormatMode {
    /// The next weaker mode, if any.
    pub fn weaker(self) -> Option<FormatMode> {
        match self {
            FormatMode::JsonSchema => Some(FormatMode::JsonObject),
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
            FormatMode::JsonObject => body["response_format"] = json!({"type": "json_object"}),
            FormatMode::Plain => {}
        }
        body
    }
}

/// Token usage as the server reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: u64,
    /// `usage.completion_tokens`.
    pub completion_tokens: u64,
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
        let usage = v.get("usage").and_then(|u| {
            Some(Usage {
                prompt_tokens: u.get("prompt_tokens")?.as_u64()?,
                completion_tokens: u.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0),
            })
        });
        Ok(Completion { content, finish_reason, usage })
    }

    /// The JSON form stored in the cache.
    pub fn to_json(&self) -> Value {
        json!({
            "content": self.content,
            "finish_reason": self.finish_reason,
            "usage": self.usage.map(|u| json!({"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens})),
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
        });
        let finish_reason = v.get("finish_reason").and_then(Value::as_str).map(str::to_string);
        Ok(Completion { content: content.to_string(), finish_reason, usage })
    }
}

fn bad(what: &str, v: &Value) -> CallError {
    CallError::BadResponse(format!("{what} in {}", crate::text::clip(&v.to_string(), 200)))
}

/// Why a call failed, worded for the person running falat.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No connection could be made (after retries).
    #[error("cannot reach the LLM server at {url} ({detail}); is it running? check --llm-url / OPENAI_BASE_URL")]
    Unreachable {
        /// The endpoint.
        url: String,
        /// The transport error.
        detail: String,
    },
    /// HTTP 401 or 403.
    #[error(
        "the LLM server at {url} rejected the API key (HTTP {status}); set a valid key in ${key_env} (or --api-key-env)"
    )]
    Unauthorized {
        /// The endpoint.
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
    /// No answer within the timeout (after retries).
    #[error("no answer from the LLM server within {secs} s; raise the timeout or check the server")]
    Timeout {
        /// The timeout.
        secs: u64,
    },
    /// The body is not a chat completion.
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
        matches!(self, CallError::Unreachable { .. } | CallError::Unauthorized { .. } | CallError::UnknownModel { .. })
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

    /// Whether the server refused the `response_format` (then a weaker [`FormatMode`] is tried).
    pub fn is_format_refusal(&self) -> bool {
        match self {
            CallError::Refused { detail, .. } => {
                let d = detail.to_lowercase();
                d.contains("response_format") || d.contains("json_schema") || d.contains("schema")
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
            CallError::Timeout { .. } => "timeout",
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

/// The HTTP client of one judge: endpoint, key, timeout and retry policy.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    key: Option<String>,
    key_env: String,
    retries: usize,
    timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .field("retries", &self.retries)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Client {
    /// A client for `base` (e.g. `http://127.0.0.1:8080/v1`; `/chat/completions` is appended).
    ///
    /// # Errors
    /// The TLS or HTTP stack could not be set up (reported as text).
    pub fn new(
        base: &str,
        key: Option<String>,
        key_env: &str,
        timeout: Duration,
        retries: usize,
    ) -> Result<Client, String> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10).min(timeout))
            .timeout(timeout)
            .build()
            .map_err(|e| e.to_string())?;
        let base = base.trim_end_matches('/').trim_end_matches("/chat/completions").to_string();
        Ok(Client { http, base, key, key_env: key_env.to_string(), retries, timeout })
    }

    /// The chat-completions endpoint.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base)
    }

    /// Sends a request with retries.
    ///
    /// # Errors
    /// A [`CallError`] saying what went wrong and what to do.
    pub async fn send(&self, req: &ChatRequest) -> Result<Completion, CallError> {
        let body = req.body();
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(500))
            .with_max_delay(Duration::from_secs(8))
            .with_max_times(self.retries)
            .with_jitter();
        let mut attempts = 0usize;
        let result = (|| {
            attempts += 1;
            self.attempt(&body, &req.model)
        })
        .retry(backoff)
        .when(|a: &Attempt| a.error.is_transient())
        // `d` is `None` once the retries are used up: keep it so, whatever `Retry-After` says.
        .adjust(|a: &Attempt, d| d.map(|d| a.retry_after.map_or(d, |r| r.min(Duration::from_secs(60)))))
        .notify(|a: &Attempt, d| tracing::warn!("llm call failed ({}), retrying in {d:?}", a.error.kind()))
        .await;
        result.map_err(|a| match a.error {
            CallError::RateLimited { .. } => CallError::RateLimited { attempts },
            e => e,
        })
    }

    async fn attempt(&self, body: &Value, model: &str) -> Result<Completion, Attempt> {
        let url = self.endpoint();
        let mut rb = self.http.post(&url).json(body);
        if let Some(k) = &self.key {
            rb = rb.bearer_auth(k);
        }
        let resp = rb.send().await.map_err(|e| self.transport(&e))?;
        let status = resp.status().as_u16();
        let retry_after = retry_after(resp.headers());
        let text = resp.text().await.map_err(|e| self.transport(&e))?;
        if status == 200 {
            let v: Value = serde_json::from_str(&text).map_err(|e| Attempt {
                error: CallError::BadResponse(format!("not JSON ({e}): {}", crate::text::clip(&text, 200))),
                retry_after: None,
            })?;
            return Completion::from_body(&v).map_err(|error| Attempt { error, retry_after: None });
        }
        Err(Attempt { error: self.classify(status, &text, model), retry_after })
    }

    fn transport(&self, e: &reqwest::Error) -> Attempt {
        let error = if e.is_timeout() {
            CallError::Timeout { secs: self.timeout.as_secs() }
        } else {
            // Only the error chain's text: reqwest errors carry the URL, never headers.
            let mut detail = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(s) = src {
                detail = format!("{detail}: {s}");
                src = s.source();
            }
            CallError::Unreachable { url: self.endpoint(), detail: crate::text::clip(&detail, 300) }
        };
        Attempt { error, retry_after: None }
    }

    fn classify(&self, status: u16, text: &str, model: &str) -> CallError {
        let detail = error_message(text);
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
    v.trim().parse::<f64>().ok().filter(|s| *s >= 0.0).map(Duration::from_secs_f64)
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
