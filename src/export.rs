//! Back into the tracing tools: where each step came from in the source trace, and the verdict as
//! the body each tool's public API takes (`falat diagnose --format otlp|phoenix|langfuse`,
//! `docs/EXPORTS.md`).
//!
//! An edge module like [`crate::report`]: it builds `serde_json` values from a [`Diagnosis`] and
//! its [`Trajectory`], does no IO and never prints.
//!
//! - [`step_source`]: the ids a step has in its source file (trace id as written, span /
//!   observation / run / message id, 1-based file line), which both reports carry.
//! - [`otlp_logs`]: an OTLP/JSON `ExportLogsServiceRequest` (opentelemetry-proto
//!   `opentelemetry/proto/collector/logs/v1/logs_service.proto`, v1.5.0) with one log record per
//!   step the verdict gives a role, each carrying the step's `traceId`/`spanId`.
//! - [`phoenix_annotations`]: an Arize Phoenix `POST /v1/span_annotations` body (Phoenix REST API
//!   v1, `AnnotateSpansRequestBody`, Phoenix 8-11).
//! - [`langfuse_scores`]: Langfuse `POST /api/public/scores` bodies (`CreateScoreRequest`,
//!   Langfuse public API v2/v3), one per score.

use serde_json::{Value, json};

use crate::diagnosis::{Diagnosis, Role};
use crate::ingest::otlp::otel_id;
use crate::model::{SourceFormat, Trajectory};

/// The ids a step has in the file it was read from, so a verdict can be attached to it in the
/// tool that recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StepSource {
    /// The trace id as the file writes it (a decimal integer of any width is kept digit for
    /// digit; hex, base64 and `0x` ids are lowercase hex), for span-based formats (OTel GenAI,
    /// OpenInference, any-agent, LangSmith, Langfuse).
    pub trace_id: Option<String>,
    /// What [`StepSource::id`] is, as a report key: `span_id`, `observation_id`, `run_id`,
    /// `message_id` or `step_id`.
    pub id_key: &'static str,
    /// The step's own id in the format: the span id (lowercase hex, decimal ids of any-agent
    /// converted as OTLP writes them), Langfuse observation id, LangSmith run id, Claude Code
    /// message uuid, falat JSONL `id`; for Who&When, Magentic-One, OpenAI and τ-bench messages
    /// the message's `index` or 0-based position in the file's message list.
    pub id: Option<String>,
    /// The 1-based line of the file, for formats whose records are lines (falat JSONL, Codex).
    pub line: Option<usize>,
}

impl StepSource {
    /// The ids as a JSON object with only the keys present (`{"trace_id", "span_id", "line"}`).
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        if let Some(t) = &self.trace_id {
            m.insert("trace_id".into(), t.clone().into());
        }
        if let Some(id) = &self.id {
            m.insert(self.id_key.into(), id.clone().into());
        }
        if let Some(l) = self.line {
            m.insert("line".into(), l.into());
        }
        Value::Object(m)
    }

    /// The ids as one line of text (`trace 1009…, span_id 8100d9dbee1f3e47, line 3`); empty when
    /// the step has none. Not sanitised: the caller does.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = &self.trace_id {
            parts.push(format!("trace_id {t}"));
        }
        if let Some(id) = &self.id {
            parts.push(format!("{} {id}", self.id_key));
        }
        if let Some(l) = self.line {
            parts.push(format!("line {l}"));
        }
        parts.join(", ")
    }

    /// Whether the step has no id at all.
    pub fn is_empty(&self) -> bool {
        self.trace_id.is_none() && self.id.is_none() && self.line.is_none()
    }
}

/// The report key of a format's step id.
fn id_key(format: SourceFormat) -> Option<&'static str> {
    Some(match format {
        SourceFormat::OtelGenAi
        | SourceFormat::OpenInference
        | SourceFormat::AnyAgent
        | SourceFormat::PydanticAi
        | SourceFormat::Strands
        | SourceFormat::OpenAiAgents
        | SourceFormat::Mlflow => "span_id",
        // OpenHands and Google ADK events carry their own `id`.
        SourceFormat::OpenHands | SourceFormat::GoogleAdk => "event_id",
        // `codex exec --json` items carry their own `id`.
        SourceFormat::CodexExec => "item_id",
        SourceFormat::Langfuse => "observation_id",
        SourceFormat::LangSmith => "run_id",
        SourceFormat::FalatJsonl => "step_id",
        // The id of a Codex step is its line, given as `line`.
        SourceFormat::Codex => return None,
        SourceFormat::ClaudeCode
        | SourceFormat::WhoWhenAlgorithm
        | SourceFormat::WhoWhenHand
        | SourceFormat::MagenticLog
        | SourceFormat::OpenAiChat
        | SourceFormat::TauBench
        | SourceFormat::SweAgent
        | SourceFormat::MiniSweAgent
        | SourceFormat::Smolagents
        | SourceFormat::GeminiCli
        | SourceFormat::InspectAi => "message_id",
    })
}

/// The trace id of a trajectory as its file writes it (`trace_id` in its metadata), if any.
pub fn trace_id(t: &Trajectory) -> Option<&str> {
    t.metadata.iter().find(|(k, _)| k == "trace_id").map(|(_, v)| v.as_str())
}

/// The source ids of step `step` (0-based) of `t`; empty for a step out of range.
pub fn step_source(t: &Trajectory, step: usize) -> StepSource {
    let Some(s) = t.steps.get(step) else { return StepSource::default() };
    let key = id_key(t.source);
    StepSource {
        trace_id: trace_id(t).map(str::to_string),
        id_key: key.unwrap_or("id"),
        id: key.and(s.ids.id.clone()),
        line: s.ids.line,
    }
}

/// An export that cannot be made: what the trace lacks for the tool (exit 2 at the command line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportError(pub String);

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ExportError {}

/// The name every export gives the verdict (OTLP event name, Phoenix annotation name, Langfuse
/// score name prefix).
pub const VERDICT_NAME: &str = "falat.decisive_error";

/// The decisive step and its OTel ids, or an error naming what is missing for `tool`.
fn decisive_otel(t: &Trajectory, d: &Diagnosis, tool: &str) -> Result<(usize, String, String), ExportError> {
    let step = decisive(t, d, tool)?;
    let src = step_source(t, step);
    let trace = otel_trace(t, &src, tool)?;
    let span = otel_span(t, &src, step, tool)?;
    Ok((step, trace, span))
}

fn decisive(t: &Trajectory, d: &Diagnosis, tool: &str) -> Result<usize, ExportError> {
    d.decisive_step.ok_or_else(|| {
        ExportError(format!(
            "trajectory {}: {} names no decisive step, so there is nothing to attach in {tool}",
            crate::text::sanitize(&t.id),
            d.method.as_str()
        ))
    })
}

fn otel_trace(t: &Trajectory, src: &StepSource, tool: &str) -> Result<String, ExportError> {
    let id = crate::text::sanitize(&t.id);
    match &src.trace_id {
        None => Err(ExportError(format!(
            "trajectory {id} ({}) has no trace id, which {tool} needs; export a trace with span ids (OTLP/JSON, OpenInference, any-agent, Langfuse) instead",
            t.source
        ))),
        Some(tr) => otel_id(tr, 16).ok_or_else(|| {
            ExportError(format!(
                "trajectory {id}: trace id {} is not an OpenTelemetry trace id (16 bytes as 32 hex digits or a decimal integer), which {tool} needs",
                crate::text::sanitize(tr)
            ))
        }),
    }
}

fn otel_span(t: &Trajectory, src: &StepSource, step: usize, tool: &str) -> Result<String, ExportError> {
    let id = crate::text::sanitize(&t.id);
    let span = (src.id_key == "span_id" || src.id_key == "observation_id").then_some(src.id.as_deref()).flatten();
    match span {
        None => Err(ExportError(format!(
            "trajectory {id} ({}): step {step} has no span id, which {tool} needs; export a trace with span ids (OTLP/JSON, OpenInference, any-agent, Langfuse) instead",
            t.source
        ))),
        Some(s) => otel_id(s, 8).ok_or_else(|| {
            ExportError(format!(
                "trajectory {id}: step {step}'s id {} is not an OpenTelemetry span id (8 bytes as 16 hex digits), which {tool} needs",
                crate::text::sanitize(s)
            ))
        }),
    }
}

fn round3(x: f32) -> f64 {
    (f64::from(x) * 1000.0).round() / 1000.0
}

/// The verdict in one sentence (`Decisive step 3 by any_agent: wrong_tool_use (confidence 0.41).
/// <reason>`), sanitised.
fn verdict_text(d: &Diagnosis, step: usize) -> String {
    format!(
        "Decisive step {step} by {}: {} (confidence {:.2}). {}",
        crate::text::sanitize(d.agent.as_deref().unwrap_or("?")),
        d.category.as_str(),
        d.confidence,
        crate::text::sanitize(&d.reason)
    )
}

fn kv(key: &str, value: Value) -> Value {
    json!({"key": key, "value": value})
}

/// An OTLP/JSON `ExportLogsServiceRequest` (`POST /v1/logs` of an OTLP/HTTP receiver): one
/// resource (`service.name = falat`), one scope (`falat`, the crate version), and per diagnosis
/// one log record per step with a role (the decisive step's first), each with the `traceId` and
/// `spanId` (hex, as the OTLP/JSON encoding writes them) of that step, `eventName`
/// `falat.decisive_error`, the verdict sentence as `body`, and attributes `falat.step`
/// (0-based), `falat.agent`, `falat.role` (`ROOT_CAUSE`, `PROPAGATION`... as in the report),
/// `falat.category`, `falat.confidence`, `falat.method`,
/// `falat.judge`, `falat.trajectory`. `now_unix_nano` is the records' `timeUnixNano`.
///
/// # Errors
/// A diagnosis with no decisive step, or whose decisive step has no OTel trace or span id.
pub fn otlp_logs(results: &[(Trajectory, Diagnosis)], now_unix_nano: u128) -> Result<Value, ExportError> {
    let mut records = Vec::new();
    for (t, d) in results {
        let (decisive_step, trace, _) = decisive_otel(t, d, "OTLP")?;
        let mut steps: Vec<(usize, Role)> = vec![(decisive_step, Role::RootCause)];
        steps.extend(d.roles.iter().copied().filter(|(s, _)| *s != decisive_step));
        for (step, role) in steps {
            let src = step_source(t, step);
            // Other roles are attached where the step has a span; the decisive step must have one.
            let Ok(span) = otel_span(t, &src, step, "OTLP") else { continue };
            let agent = t.steps.get(step).map(|s| s.agent.as_str()).unwrap_or_default();
            let body = if step == decisive_step {
                verdict_text(d, step)
            } else {
                format!(
                    "Step {step} is a {} of the decisive error at step {decisive_step}.",
                    role.as_str().to_lowercase().replace('_', " ")
                )
            };
            records.push(json!({
                "timeUnixNano": now_unix_nano.to_string(),
                "observedTimeUnixNano": now_unix_nano.to_string(),
                "severityNumber": if step == decisive_step { 13 } else { 9 },
                "severityText": if step == decisive_step { "WARN" } else { "INFO" },
                "eventName": VERDICT_NAME,
                "body": {"stringValue": body},
                "attributes": [
                    kv("falat.trajectory", json!({"stringValue": crate::text::sanitize(&t.id)})),
                    kv("falat.step", json!({"intValue": step.to_string()})),
                    kv("falat.agent", json!({"stringValue": crate::text::sanitize(agent)})),
                    kv("falat.role", json!({"stringValue": role.as_str()})),
                    kv("falat.category", json!({"stringValue": d.category.as_str()})),
                    kv("falat.confidence", json!({"doubleValue": round3(d.confidence)})),
                    kv("falat.method", json!({"stringValue": d.method.as_str()})),
                    kv("falat.judge", json!({"stringValue": crate::text::sanitize(&d.judge)})),
                ],
                "traceId": trace,
                "spanId": span,
            }));
        }
    }
    Ok(json!({
        "resourceLogs": [{
            "resource": {"attributes": [kv("service.name", json!({"stringValue": "falat"}))]},
            "scopeLogs": [{
                "scope": {"name": "falat", "version": env!("CARGO_PKG_VERSION")},
                "logRecords": records,
            }],
        }],
    }))
}

/// Phoenix's annotator kind of a judge: `LLM` for the LLM judge, `CODE` for the offline ones.
fn annotator_kind(d: &Diagnosis) -> &'static str {
    if d.judge.starts_with("llm") { "LLM" } else { "CODE" }
}

/// An Arize Phoenix `POST /v1/span_annotations` body: `{"data": [...]}` with one
/// `SpanAnnotationData` per diagnosis on the decisive step's span: `name` `falat.decisive_error`,
/// `annotator_kind` `LLM` or `CODE`, `result` `{label: category, score: confidence,
/// explanation: the verdict}`, `identifier` the method (Phoenix keeps one annotation per span,
/// name and identifier, so methods do not overwrite each other), and `metadata` (step, agent,
/// method, judge, trajectory, the trace id).
///
/// # Errors
/// A diagnosis with no decisive step, or whose decisive step has no OTel span id.
pub fn phoenix_annotations(results: &[(Trajectory, Diagnosis)]) -> Result<Value, ExportError> {
    let mut data = Vec::new();
    for (t, d) in results {
        let step = decisive(t, d, "Phoenix")?;
        let src = step_source(t, step);
        let span = otel_span(t, &src, step, "Phoenix")?;
        data.push(json!({
            "span_id": span,
            "name": VERDICT_NAME,
            "annotator_kind": annotator_kind(d),
            "result": {
                "label": d.category.as_str(),
                "score": round3(d.confidence),
                "explanation": verdict_text(d, step),
            },
            "metadata": {
                "step": step,
                "agent": crate::text::sanitize(d.agent.as_deref().unwrap_or_default()),
                "role": Role::RootCause.as_str(),
                "method": d.method.as_str(),
                "judge": crate::text::sanitize(&d.judge),
                "trajectory": crate::text::sanitize(&t.id),
                "trace_id": src.trace_id.as_deref().map(crate::text::sanitize),
            },
            "identifier": d.method.as_str(),
        }));
    }
    Ok(json!({"data": data}))
}

/// Langfuse `POST /api/public/scores` bodies, as a JSON array (the endpoint takes one body per
/// request): per diagnosis a `NUMERIC` score `falat.decisive_error` (the confidence, with the
/// verdict as `comment`) and a `CATEGORICAL` score `falat.error_category` (the category), both on
/// the trace (`traceId`) and, when the step has one, the decisive step's observation
/// (`observationId`: a Langfuse observation id, or the span id that Langfuse's OTel ingestion
/// takes as the observation id), with `metadata` (step, agent, method, judge) and an `id` made
/// from trace, observation, method and name, so posting again updates the score.
///
/// # Errors
/// A diagnosis with no decisive step, or a trajectory with no trace id.
pub fn langfuse_scores(results: &[(Trajectory, Diagnosis)]) -> Result<Value, ExportError> {
    let mut scores = Vec::new();
    for (t, d) in results {
        let step = decisive(t, d, "Langfuse")?;
        let src = step_source(t, step);
        let trace = match t.source {
            // A Langfuse trace id is the export's own (any string); an OTel trace ingested by
            // Langfuse gets the 32-digit hex of its trace id.
            SourceFormat::Langfuse => src.trace_id.clone().ok_or_else(|| {
                ExportError(format!("trajectory {}: the Langfuse export has no trace id", crate::text::sanitize(&t.id)))
            })?,
            _ => otel_trace(t, &src, "Langfuse")?,
        };
        let observation = match t.source {
            SourceFormat::Langfuse => src.id.clone(),
            _ => otel_span(t, &src, step, "Langfuse").ok(),
        };
        let metadata = json!({
            "step": step,
            "agent": crate::text::sanitize(d.agent.as_deref().unwrap_or_default()),
            "method": d.method.as_str(),
            "judge": crate::text::sanitize(&d.judge),
            "trajectory": crate::text::sanitize(&t.id),
        });
        let score_id =
            |name: &str| format!("{trace}-{}-{}-{name}", observation.as_deref().unwrap_or("trace"), d.method.as_str());
        let mut numeric = json!({
            "id": score_id(VERDICT_NAME),
            "traceId": trace,
            "name": VERDICT_NAME,
            "value": round3(d.confidence),
            "dataType": "NUMERIC",
            "comment": verdict_text(d, step),
            "metadata": metadata,
        });
        let mut category = json!({
            "id": score_id("falat.error_category"),
            "traceId": trace,
            "name": "falat.error_category",
            "value": d.category.as_str(),
            "dataType": "CATEGORICAL",
            "comment": format!("Error category of the decisive step {step}."),
            "metadata": metadata,
        });
        if let Some(o) = &observation {
            numeric["observationId"] = o.clone().into();
            category["observationId"] = o.clone().into();
        }
        scores.push(numeric);
        scores.push(category);
    }
    Ok(Value::Array(scores))
}
