//! Unit tests of the LLM judge against a loopback mock server (a plain `TcpListener` on
//! 127.0.0.1 that answers from a closure): retries, errors, repair, fallback, context overflow,
//! budget, record/replay, dry run, secrets, and calls from blocking threads of a runtime.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::graph::DepGraph;
use crate::hierarchy::{self, Hierarchy};
use crate::judge::{CriterionKind, QuestionKind};
use crate::methods::falat as pipeline;
use crate::methods::falat::{Options, Stage};
use crate::model::{Step, StepKind};

type Reply = (u16, Vec<(&'static str, String)>, String);

#[derive(Debug, Clone)]
struct Seen {
    head: String,
    body: Value,
}

struct Mock {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Mock {
    fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
    fn bodies(&self) -> Vec<Value> {
        self.seen.lock().unwrap().iter().map(|s| s.body.clone()).collect()
    }
}

/// A server on 127.0.0.1 that reads each request in turn and hands it to `f(stream, head,
/// body)`; returns its base URL (`http://127.0.0.1:PORT/v1`).
fn serve(f: impl Fn(TcpStream, String, Value) + Send + 'static) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in l.incoming().flatten() {
            let Some((head, body)) = read_request(&stream) else { continue };
            f(stream, head, body);
        }
    });
    url
}

/// A server on 127.0.0.1 answering each request with `f(body, n)` (n counts from 0).
fn mock(f: impl Fn(&Value, usize) -> Reply + Send + Sync + 'static) -> Mock {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let url = serve(move |stream, head, body| {
        // Only chat completions are the test's: a probe of llama.cpp's `/props` (or anything
        // else) gets a 404 and is not counted.
        if !head.starts_with("POST ") || !head.lines().next().is_some_and(|l| l.contains("/chat/completions")) {
            write_response(stream, 404, &[], "{}");
            return;
        }
        let n = {
            let mut s = log.lock().unwrap();
            s.push(Seen { head, body: body.clone() });
            s.len() - 1
        };
        let (status, headers, text) = f(&body, n);
        write_response(stream, status, &headers, &text);
    });
    Mock { url, seen }
}

fn read_request(mut s: &TcpStream) -> Option<(String, Value)> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 16384];
    loop {
        let n = s.read(&mut tmp).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
        let head = String::from_utf8_lossy(&buf[..p]).to_string();
        let len = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)))
            .unwrap_or(0usize);
        while buf.len() < p + 4 + len {
            let n = s.read(&mut tmp).ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&tmp[..n]);
        }
        return Some((head, serde_json::from_slice(&buf[p + 4..p + 4 + len]).unwrap_or(Value::Null)));
    }
}

fn write_response(mut s: TcpStream, status: u16, headers: &[(&str, String)], body: &str) {
    let mut out = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    let _ = s.write_all(out.as_bytes());
}

/// A 200 answer whose content is `content`, with usage `(100 + n, 7)`.
fn ok(content: &str, n: usize) -> Reply {
    let body = json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100 + n, "completion_tokens": 7},
    });
    (200, vec![], body.to_string())
}

fn error(status: u16, message: &str, kind: &str) -> Reply {
    (status, vec![], json!({"error": {"code": status, "message": message, "type": kind}}).to_string())
}

/// A minimal valid instance of a JSON schema (`i` picks enum values, so array items differ).
fn instance(s: &Value, i: usize) -> Value {
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        let vals: Vec<&Value> = e.iter().filter(|v| !v.is_null()).collect();
        return vals.get(i % vals.len().max(1)).map_or(Value::Null, |v| (*v).clone());
    }
    if let Some(first) = s.get("anyOf").and_then(|a| a.get(0)) {
        return instance(first, i);
    }
    match s.get("type").and_then(Value::as_str) {
        Some("object") => {
            let mut o = serde_json::Map::new();
            for k in s.get("required").and_then(Value::as_array).into_iter().flatten() {
                let k = k.as_str().unwrap();
                o.insert(k.into(), instance(&s["properties"][k], i));
            }
            Value::Object(o)
        }
        Some("array") => {
            let n = s.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
            Value::Array((0..n).map(|k| instance(&s["items"], k)).collect())
        }
        Some("integer") => json!(s.get("minimum").and_then(Value::as_u64).unwrap_or(0) + 1),
        Some("boolean") => json!(true),
        Some("number") => json!(0.5),
        Some("null") => Value::Null,
        _ => json!("a short answer"),
    }
}

/// Answers every request with a valid instance of the request's schema.
fn schema_reply(body: &Value, n: usize) -> Reply {
    let schema = &body["response_format"]["json_schema"]["schema"];
    ok(&instance(schema, 0).to_string(), n)
}

struct Fx {
    t: Trajectory,
    h: Hierarchy,
    g: DepGraph,
    facts: crate::substrate::Facts,
}

impl Fx {
    fn ctx(&self) -> Context<'_> {
        Context {
            trajectory: &self.t,
            hierarchy: &self.h,
            prior: None,
            graph: Some(&self.g),
            facts: &self.facts,
            ground_truth: true,
        }
    }
}

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llm").join(name)
}

fn fixture(name: &str) -> Fx {
    let t = crate::ingest::fs::load_path(&fixture_path(name), None).unwrap().trajectories.remove(0);
    fx(t)
}

fn fx(t: Trajectory) -> Fx {
    let h = hierarchy::build(&t);
    let g = DepGraph::build(&t, &h);
    Fx { t, h, g, facts: crate::substrate::Facts::default() }
}

/// A synthetic trajectory with long steps and several phases.
fn long_trajectory() -> Fx {
    let filler = "The agent reports details of its work on the census table. ".repeat(40);
    let texts = [
        ("Planner", StepKind::Message, format!("Here is the plan: look up both towns. {filler}")),
        ("WebSurfer", StepKind::Message, format!("I typed 'Seattle population' into the search bar. {filler}")),
        ("Coder", StepKind::Message, format!("```python\nprint(737015 - 4965)\n```\n{filler}")),
        ("Computer_terminal", StepKind::ToolResult, "exitcode: 0 (execution succeeded)\nCode output: 732050".into()),
        ("Verifier", StepKind::Message, format!("I verified the result 732,050 is correct. {filler}")),
        ("Planner", StepKind::Message, "The final answer is 732,050. TERMINATE".into()),
    ];
    let mut t = Trajectory {
        id: "long".into(),
        task: "What is the population difference between Seattle and Colville in the 2020 census?".into(),
        expected_output: Some("732,000".into()),
        ..Trajectory::default()
    };
    for (i, (a, k, c)) in texts.into_iter().enumerate() {
        t.steps.push(Step { index: i, agent: a.into(), kind: k, content: c, ..Step::default() });
    }
    t.refresh_agents();
    fx(t)
}

fn judge_for(url: &str) -> LlmJudge {
    let mut cfg = LlmConfig::new(Some(url), "test-model");
    cfg.retries = 0;
    cfg.timeout = Duration::from_secs(20);
    LlmJudge::with_api_key(cfg, None).unwrap()
}

fn zero_walls(mut d: crate::diagnosis::Diagnosis) -> crate::diagnosis::Diagnosis {
    for s in &mut d.cost {
        s.cost.wall = Duration::ZERO;
    }
    d
}

#[test]
fn whole_diagnosis_costs_match_usage_and_replays_identically() {
    let m = mock(schema_reply);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = LlmConfig::new(Some(&m.url), "test-model");
    cfg.record_dir = Some(dir.path().to_path_buf());
    let f = fixture("algorithm-generated-10.json");
    let opts = Options::new(true);
    let judge = LlmJudge::with_api_key(cfg.clone(), None).unwrap();
    let d = crate::methods::run(
        crate::methods::Method::Falat,
        &f.t,
        &judge,
        &crate::methods::MethodOptions::for_falat(opts.clone()),
    );
    assert!(d.decisive_step.is_some());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    let total = d.total_cost();
    let n = m.count() as u64;
    assert_eq!(total.calls, n);
    assert_eq!(total.prompt_tokens, (0..n).map(|k| 100 + k).sum::<u64>());
    assert_eq!(total.completion_tokens, 7 * n);
    assert!(n <= 8, "{n} calls");
    drop(judge);
    let replay = LlmConfig { base_url: None, record_dir: None, replay_dir: Some(dir.path().to_path_buf()), ..cfg };
    let judge = LlmJudge::with_api_key(replay, None).unwrap();
    let again = crate::methods::run(
        crate::methods::Method::Falat,
        &f.t,
        &judge,
        &crate::methods::MethodOptions::for_falat(opts.clone()),
    );
    assert_eq!(zero_walls(again), zero_walls(d));
    assert_eq!(judge.stats().replayed, n);
    assert_eq!(m.count() as u64, n, "replay sent nothing");
}

#[test]
fn retry_after_is_honoured_on_429() {
    let m =
        mock(|b, n| if n == 0 { (429, vec![("Retry-After", "1".into())], "{}".into()) } else { schema_reply(b, n) });
    let mut cfg = LlmConfig::new(Some(&m.url), "test-model");
    cfg.retries = 2;
    let judge = LlmJudge::with_api_key(cfg, None).unwrap();
    let f = fixture("hand-crafted-24.json");
    let t0 = Instant::now();
    let j = judge.ask(&f.ctx(), &Question::Prior);
    assert!(t0.elapsed() >= Duration::from_millis(950));
    assert_eq!(m.count(), 2);
    assert_eq!(j.warning, None);
    assert_eq!((j.cost.calls, j.cost.prompt_tokens), (1, 101));
}

#[test]
fn retries_stop_after_the_limit_even_with_retry_after() {
    let m = mock(|_, _| (429, vec![("Retry-After", "0".into())], "{}".into()));
    let mut cfg = LlmConfig::new(Some(&m.url), "test-model");
    cfg.retries = 2;
    let judge = LlmJudge::with_api_key(cfg, None).unwrap();
    let f = fixture("hand-crafted-24.json");
    let w = judge.ask(&f.ctx(), &Question::Prior).warning.unwrap();
    assert!(w.contains("rate limited by the LLM server (HTTP 429) after 3 attempts"), "{w}");
    assert_eq!(m.count(), 3);
}

#[test]
fn unauthorized_warns_once_per_trajectory_and_stops_calling() {
    let m = mock(|_, _| error(401, "Invalid API Key", "authentication_error"));
    let mut cfg = LlmConfig::new(Some(&m.url), "test-model");
    cfg.api_key_env = "FALAT_TEST_KEY_VAR".into();
    let judge = LlmJudge::with_api_key(cfg, Some("wrong".into())).unwrap();
    let f = fixture("hand-crafted-24.json");
    let j = judge.ask(&f.ctx(), &Question::Prior);
    let w = j.warning.unwrap();
    assert!(w.contains("rejected the API key (HTTP 401)") && w.contains("$FALAT_TEST_KEY_VAR"), "{w}");
    assert_eq!(j.answer, heuristic::answer(&f.ctx(), &Question::Prior));
    assert!(w.contains("the judge stops calling"), "{w}");
    let j = judge.ask(&f.ctx(), &Question::PhaseSummary { phase: 0 });
    assert_eq!(j.warning, None, "one warning per trajectory for a fatal error");
    assert_eq!(m.count(), 1, "a fatal error stops further calls");
    let judge_warnings =
        |d: &crate::diagnosis::Diagnosis| d.warnings.iter().filter(|w| w.starts_with("llm judge")).count();
    let d = crate::methods::run(
        crate::methods::Method::Falat,
        &f.t,
        &judge,
        &crate::methods::MethodOptions::for_falat(Options::new(true)),
    );
    assert_eq!(judge_warnings(&d), 1, "the memoised prior keeps its warning: {:?}", d.warnings);
    let other = fixture("algorithm-generated-10.json");
    let d = crate::methods::run(
        crate::methods::Method::Falat,
        &other.t,
        &judge,
        &crate::methods::MethodOptions::for_falat(Options::new(true)),
    );
    assert_eq!(judge_warnings(&d), 1, "{:?}", d.warnings);
    assert_eq!(m.count(), 1);
    assert!(matches!(judge.check(), Err(CallError::Unauthorized { status: 401, .. })));
}

#[test]
fn unreachable_server_is_reported_with_what_to_do() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let judge = judge_for(&format!("http://127.0.0.1:{port}/v1"));
    let f = fixture("hand-crafted-24.json");
    let w = judge.ask(&f.ctx(), &Question::Prior).warning.unwrap();
    assert!(w.contains("cannot reach the LLM server") && w.contains("--llm-url"), "{w}");
    assert!(matches!(judge.check(), Err(CallError::Unreachable { .. })));
}

#[test]
fn unknown_model_is_reported() {
    let m = mock(|_, _| error(404, "The model `gpt-9` does not exist", "invalid_request_error"));
    let judge = judge_for(&m.url);
    let f = fixture("hand-crafted-24.json");
    let w = judge.ask(&f.ctx(), &Question::Prior).warning.unwrap();
    assert!(w.contains("does not serve the model `test-model`"), "{w}");
}

#[test]
fn invalid_answer_gets_one_repair_then_falls_back_with_a_warning() {
    let bad = "Sure! The answer is:\n{\"candidates\": [{\"step\": 99, \"signal\": \"assumption\", \"evidence\": \"a guess\", \"severity\": 2}]}\nThanks.";
    let m = mock(move |_, n| ok(bad, n));
    let judge = judge_for(&m.url);
    let f = fixture("algorithm-generated-10.json");
    let q = Question::RecallCandidates { range: 0..f.t.steps.len() };
    let j = judge.ask(&f.ctx(), &q);
    let w = j.warning.unwrap();
    assert!(w.contains("invalid answer after one repair request") && w.contains("step 99"), "{w}");
    assert_eq!(j.answer, heuristic::answer(&f.ctx(), &q));
    assert_eq!(m.count(), 2);
    let repair = &m.bodies()[1]["messages"];
    assert_eq!(repair.as_array().unwrap().len(), 4);
    assert_eq!(repair[2]["role"], "assistant");
    assert!(repair[3]["content"].as_str().unwrap().contains("step 99 is not one of the steps given"));
    assert_eq!((j.cost.calls, judge.stats().repairs, judge.stats().fallbacks), (2, 1, 1));
}

#[test]
fn a_repair_can_succeed() {
    let m = mock(|b, n| if n == 0 { ok("{\"answer_type\": \"number\", \"constr", n) } else { schema_reply(b, n) });
    let judge = judge_for(&m.url);
    let f = fixture("hand-crafted-24.json");
    let j = judge.ask(&f.ctx(), &Question::Prior);
    assert_eq!(j.warning, None);
    assert!(matches!(j.answer, Answer::Prior(_)));
    assert_eq!((j.cost.calls, j.cost.prompt_tokens, judge.stats().repairs), (2, 201, 1));
    let repair = m.bodies()[1]["messages"][3]["content"].as_str().unwrap().to_string();
    assert!(repair.contains("truncated JSON"), "{repair}");
}

#[test]
fn refused_json_schema_falls_back_to_json_object() {
    let prior = r#"{"answer_type": "number", "constraints": [], "requirements": [], "key_terms": ["tizin"]}"#;
    let m = mock(move |b, n| match b["response_format"]["type"].as_str() {
        Some("json_schema") => error(400, "response_format json_schema is not supported", "invalid_request_error"),
        _ => ok(prior, n),
    });
    let judge = judge_for(&m.url);
    let f = fixture("hand-crafted-24.json");
    let j = judge.ask(&f.ctx(), &Question::Prior);
    assert_eq!(j.warning, None);
    assert_eq!((j.cost.calls, j.cost.answers.model), (3, 1), "three formats tried, the model answered");
    let b = m.bodies();
    // The full schema, then a simpler one (no enums or bounds, not strict), then json_object.
    assert_eq!(b[0]["response_format"]["json_schema"]["strict"], true);
    assert_eq!(b[1]["response_format"]["json_schema"]["strict"], false);
    assert!(!b[1]["response_format"].to_string().contains("\"enum\""), "{}", b[1]["response_format"]);
    assert_eq!(b[2]["response_format"]["type"], "json_object");
    // One refusal never changes how later questions are asked, of this trajectory or another.
    let _ = judge.ask(&f.ctx(), &Question::PhaseSummary { phase: 0 });
    assert_eq!(m.bodies()[3]["response_format"]["json_schema"]["strict"], true, "the next question starts over");
    let other = fixture("algorithm-generated-10.json");
    let before = m.bodies().len();
    let _ = judge.ask(&other.ctx(), &Question::Prior);
    let kinds: Vec<String> =
        m.bodies()[before..].iter().map(|b| b["response_format"]["type"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(kinds, ["json_schema", "json_schema", "json_object"]);
}

#[test]
fn a_schema_refused_only_in_full_is_answered_with_the_simpler_one_and_validated_in_full() {
    // A server that refuses `enum` (as llama.cpp refuses an empty one) but takes the simpler
    // schema; its answer names a step the full schema does not allow, which validation rejects.
    let m = mock(move |b, n| {
        let rf = b["response_format"].to_string();
        if rf.contains("\"enum\"") {
            return error(400, "JSON schema error at #/properties/x: enum is not supported", "invalid_request_error");
        }
        ok(r#"{"phases": [{"phase": 999, "summary": "s", "suspicion": 3}]}"#, n)
    });
    let judge = judge_for(&m.url);
    let f = fixture("hand-crafted-24.json");
    let j = judge.ask(&f.ctx(), &Question::PhaseSummary { phase: 0 });
    let w = j.warning.expect("an answer outside the full schema falls back");
    assert!(w.contains("invalid answer"), "{w}");
    assert_eq!(j.cost.answers.fallback_invalid, 1);
    let bodies = m.bodies();
    assert!(
        bodies.iter().skip(1).all(|b| b["response_format"]["json_schema"]["strict"] == false),
        "simpler schema kept for the repair"
    );
}

#[test]
fn context_overflow_splits_the_batch() {
    // Any request with more than one phase is "too long": the batch is split down to single phases.
    let m = mock(|b, n| {
        let ids = &b["response_format"]["json_schema"]["schema"]["properties"]["phases"]["items"]["properties"]["phase"]
            ["enum"];
        if ids.as_array().is_some_and(|a| a.len() > 1) {
            error(
                400,
                "request (5031 tokens) exceeds the available context size (4096 tokens)",
                "exceed_context_size_error",
            )
        } else {
            schema_reply(b, n)
        }
    });
    let judge = judge_for(&m.url);
    let f = long_trajectory();
    let phases = f.h.phases.len();
    assert!(phases > 1);
    for p in 0..phases {
        let j = judge.ask(&f.ctx(), &Question::PhaseSummary { phase: p });
        assert_eq!(j.warning, None);
        assert!(matches!(j.answer, Answer::PhaseSummary { .. }));
    }
    let s = judge.stats();
    assert!(s.context_overflows >= 1);
    assert_eq!(s.calls - s.context_overflows, phases as u64);
}

#[test]
fn context_overflow_trims_the_prompt_or_falls_back() {
    // The server's context is one byte shorter than the first, full prompt.
    let limit = Arc::new(Mutex::new(None::<usize>));
    let l = Arc::clone(&limit);
    let m = mock(move |b, n| {
        let len = b.to_string().len();
        let max = *l.lock().unwrap().get_or_insert(len - 1);
        if len > max {
            error(400, "the request exceeds the available context size", "exceed_context_size_error")
        } else {
            schema_reply(b, n)
        }
    });
    let judge = judge_for(&m.url);
    let f = long_trajectory();
    let q = Question::Roles { window: 1..6 };
    let j = judge.ask(&f.ctx(), &q);
    assert_eq!(j.warning, None);
    assert!(judge.stats().context_overflows >= 1);
    *limit.lock().unwrap() = Some(10);
    let q = Question::Roles { window: 0..5 };
    let j = judge.ask(&f.ctx(), &q);
    assert!(j.warning.unwrap().contains("longer than the model's context"));
    assert_eq!(j.answer, heuristic::answer(&f.ctx(), &q));
}

#[test]
fn questions_outside_the_trajectory_are_not_sent() {
    let m = mock(schema_reply);
    let judge = judge_for(&m.url);
    let f = fixture("hand-crafted-24.json");
    for q in [
        Question::PhaseSummary { phase: 99 },
        Question::LabelTransition { from: 1, to: 99 },
        Question::Roles { window: 3..12 },
        Question::Verify { step: 50, criterion: CriterionKind::Independence, live: vec![].into() },
    ] {
        let j = judge.ask(&f.ctx(), &q);
        assert!(j.warning.unwrap().contains("does not have"));
        assert_eq!(j.answer, neutral(&q));
    }
    assert_eq!(m.count(), 0);
}

#[test]
fn every_edge_of_a_candidate_is_labelled_by_the_model_in_one_call() {
    let m = mock(schema_reply);
    let judge = judge_for(&m.url);
    let f = fixture("algorithm-generated-10.json");
    let mut asked = 0;
    let mut froms = 0;
    for from in 0..f.t.steps.len() {
        let targets = prompts::effect_targets(&f.g, from);
        froms += usize::from(!targets.is_empty());
        for to in targets {
            let j = judge.ask(&f.ctx(), &Question::LabelTransition { from, to });
            assert!(matches!(j.answer, Answer::Transition(_)) && j.warning.is_none());
            asked += 1;
        }
    }
    assert!(asked > 3, "{asked} edges");
    assert_eq!(m.count(), froms, "one call per candidate, no call cap and no fallback");
}

#[test]
fn every_question_kind_has_a_prompt() {
    let mut all = prompts::kinds();
    all.sort_unstable();
    let mut expected = vec![
        "prior",
        "phase_summary",
        "recall_candidates",
        "label_transition",
        "verify",
        "roles",
        "locate_error",
        "is_decisive",
        "locate_in_range",
        "analyst_vote",
        "segment_recall",
        "trace_propagation",
        "adjudicate",
    ];
    expected.sort_unstable();
    assert_eq!(all, expected);
}

/// The user message of a request.
fn user_text(body: &Value) -> String {
    body["messages"][1]["content"].as_str().unwrap_or_default().to_string()
}

#[test]
fn attribution_questions_send_their_view_and_map_the_answer() {
    use crate::judge::attribution::{ErrorCategory, Half, Perspective, VoteTarget};
    let m = mock(schema_reply);
    let judge = judge_for(&m.url);
    let f = fixture("algorithm-generated-10.json");
    let n = f.t.steps.len();
    let first_agent = f.t.agents[0].name.clone();
    let view = |r: std::ops::Range<usize>| crate::methods::view::log(&f.t, r);
    let halves = format!("second half, steps {}-{}", n / 2, n - 1);
    let cases: Vec<(Question, Answer, &str)> = vec![
        (
            Question::LocateError { context: view(0..n) },
            Answer::Attribution {
                agent: first_agent.clone(),
                step: 0,
                reason: "a short answer".into(),
                confidence: 0.5,
            },
            "Which agent made the mistake",
        ),
        (
            Question::IsDecisive { step: 2, context: view(0..3) },
            Answer::Verdict { decisive: true, reason: "a short answer".into(), confidence: 0.5 },
            "Is step 2 (by",
        ),
        (
            Question::LocateInRange { range: 0..n, split: n / 2, context: view(0..n) },
            Answer::Half { half: Half::First, reason: "a short answer".into() },
            &halves,
        ),
        (
            Question::SegmentRecall { segment: 1..4, context: view(1..4) },
            Answer::Candidates(Vec::new()),
            "Which of steps 1-3 may be the decisive error?",
        ),
        (
            Question::TracePropagation { candidates: vec![1, 3], context: view(1..4) },
            Answer::Propagation { edges: Vec::new() },
            "Candidates for the decisive error: step 1, step 3.",
        ),
        (
            Question::Adjudicate { candidates: vec![3, 1], edges: Vec::new(), context: view(1..4) },
            Answer::Adjudication {
                step: 3,
                category: ErrorCategory::Hallucination,
                reason: "a short answer".into(),
                confidence: 0.5,
            },
            "Classify it as one of: hallucination, tool_parameter_or_invocation_error",
        ),
    ];
    for (k, (q, expected, phrase)) in cases.iter().enumerate() {
        let got = judge.ask(&f.ctx(), q);
        assert_eq!((&got.answer, &got.warning), (expected, &None), "{}", q.kind());
        assert_eq!(got.cost.calls, 1, "{}", q.kind());
        let sent = user_text(&m.bodies()[k]);
        assert!(sent.contains(phrase), "{}: {phrase:?} not in\n{sent}", q.kind());
        assert!(sent.contains("[step 1] "), "{}: the view is sent", q.kind());
        assert!(sent.starts_with("Task: "), "{}", q.kind());
    }
    let q =
        Question::AnalystVote { perspective: Perspective::Skeptical, target: VoteTarget::Step, context: view(0..n) };
    let got = judge.ask(&f.ctx(), &q);
    let Answer::Analysis(a) = got.answer else { panic!("{:?}", got.answer) };
    assert_eq!((a.step, a.confidence, got.warning), (Some(0), 0.5, None));
    let sent = user_text(m.bodies().last().unwrap());
    assert!(sent.contains("You are the skeptical analyst"), "{sent}");
    assert!(sent.contains("At which step was the decisive error made"), "{sent}");
    assert!(!sent.contains(&format!("found {first_agent}")), "the step analyst is not told the agent vote: {sent}");
}

#[test]
fn a_long_method_view_is_trimmed_to_fit() {
    let m = mock(schema_reply);
    let judge = judge_for(&m.url);
    let f = long_trajectory();
    let huge: String = (0..400)
        .map(|i| format!("[step {}] A (message):\n{}", i % f.t.steps.len(), "word ".repeat(200)))
        .collect::<Vec<_>>()
        .join("\n\n");
    let got = judge.ask(&f.ctx(), &Question::LocateError { context: huge.clone() });
    assert_eq!(got.warning, None);
    let sent = user_text(&m.bodies()[0]);
    assert!(huge.len() > 400_000 && sent.len() < 30_000, "{} characters sent", sent.len());
    assert!(sent.contains("steps left out to fit the model's context"));
}

#[test]
fn spent_budget_falls_back_without_calling() {
    let m = mock(schema_reply);
    let mut cfg = LlmConfig::new(Some(&m.url), "test-model");
    cfg.token_budget = Some(50);
    let judge = LlmJudge::with_api_key(cfg, None).unwrap();
    let f = fixture("hand-crafted-24.json");
    let w = judge.ask(&f.ctx(), &Question::Prior).warning.unwrap();
    assert!(w.contains("token budget of 50 tokens"), "{w}");
    assert_eq!(m.count(), 0);
}

#[test]
fn replay_miss_falls_back_and_never_connects() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.jsonl"), "{\"key\": \"0\", \"response\": {\"content\": \"{}\"}}\n").unwrap();
    let mut cfg = LlmConfig::new(None, "test-model");
    cfg.replay_dir = Some(dir.path().to_path_buf());
    let judge = LlmJudge::with_api_key(cfg, None).unwrap();
    let f = fixture("hand-crafted-24.json");
    let j = judge.ask(&f.ctx(), &Question::Prior);
    let w = j.warning.unwrap();
    assert!(w.contains("not in the replay cache"), "{w}");
    // `falat eval` counts misses from the cost, each question once however often it is asked.
    assert_eq!((j.cost.replay_misses, j.cost.answers.fallback_replay), (1, 1));
    let again = judge.ask(&f.ctx(), &Question::Prior);
    assert_eq!((again.cost.replay_misses, again.cost.answers.fallback_replay), (0, 1));
}

#[test]
fn record_with_replay_resumes_asking_only_what_was_not_recorded() {
    let m = mock(schema_reply);
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let resume = |url: &str| {
        let mut cfg = LlmConfig::new(Some(url), "test-model");
        (cfg.record_dir, cfg.replay_dir) = (Some(run.clone()), Some(run.clone()));
        LlmJudge::with_api_key(cfg, None).unwrap()
    };
    let f = fixture("hand-crafted-24.json");
    let first = resume(&m.url).ask(&f.ctx(), &Question::Prior);
    assert_eq!((m.count(), first.warning.as_deref()), (1, None), "a fresh folder starts empty");
    let judge = resume(&m.url);
    let again = judge.ask(&f.ctx(), &Question::Prior);
    assert_eq!((m.count(), judge.stats().replayed), (1, 1), "the recorded question is not sent again");
    assert_eq!(again.answer, first.answer);
    judge.ask(&f.ctx(), &Question::PhaseSummary { phase: 0 });
    assert_eq!(m.count(), 2, "a new question goes to the server");
    drop(judge);
    let lines = std::fs::read_to_string(run.join(cache::FILE)).unwrap().lines().count();
    assert_eq!(lines, 2, "each exchange is recorded once");
    // Without a server URL, resuming is refused up front (replay alone needs none).
    let args = LlmArgs { model: Some("m".into()), record: Some(run.clone()), replay: Some(run), ..LlmArgs::default() };
    assert_eq!(LlmConfig::from_env_and_args(&args, |_| None), Err(LlmError::NoUrl));
}

/// Everything logged by any test of this binary (TRACE level, all threads).
fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let b = Arc::clone(&buf);
        let sub = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || Sink(Arc::clone(&b)))
            .finish();
        let _ = tracing::subscriber::set_global_default(sub);
        buf
    })
    .clone()
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_api_key_never_reaches_cache_logs_or_reports() {
    const KEY: &str = "sk-falat-SECRET-0123456789abcdef";
    let logs = captured_logs();
    // A 429 first (a retry is logged), then invalid answers (repairs and fallback warnings).
    let m = mock(|b, n| match n {
        0 => (429, vec![("Retry-After", "0".into())], "{}".into()),
        _ if n % 3 == 0 => ok("not json", n),
        _ => schema_reply(b, n),
    });
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = LlmConfig::new(Some(&m.url), "test-model");
    cfg.record_dir = Some(dir.path().to_path_buf());
    let judge = LlmJudge::with_api_key(cfg, Some(KEY.into())).unwrap();
    let f = fixture("algorithm-generated-10.json");
    let d = crate::methods::run(
        crate::methods::Method::Falat,
        &f.t,
        &judge,
        &crate::methods::MethodOptions::for_falat(Options::new(true)),
    );
    assert!(m.seen.lock().unwrap().iter().all(|s| s.head.contains(&format!("Bearer {KEY}"))), "the key was sent");
    let mut everything = std::fs::read_to_string(dir.path().join(cache::FILE)).unwrap();
    assert!(everything.lines().count() > 3);
    everything.push_str(&crate::report::to_json(&f.t, &d).to_string());
    everything.push_str(&crate::report::to_markdown(&f.t, &d));
    everything.push_str(&format!("{judge:?} {:?} {:?}", judge.config(), d.warnings));
    everything.push_str(&String::from_utf8_lossy(&logs.lock().unwrap()));
    assert!(String::from_utf8_lossy(&logs.lock().unwrap()).contains("retrying"), "logs were captured");
    assert!(!everything.contains(KEY) && !everything.contains("SECRET"));
    assert!(!everything.to_lowercase().contains("authorization"));
}

#[test]
fn dry_run_reports_prompts_without_sending() {
    let m = mock(schema_reply);
    let f = fixture("hand-crafted-24.json");
    let r = dry_run_with(&LlmConfig::new(Some(&m.url), "test-model"), |j| {
        let _ = crate::methods::run(
            crate::methods::Method::Falat,
            &f.t,
            j,
            &crate::methods::MethodOptions::for_falat(Options::new(true)),
        );
    })
    .unwrap();
    assert_eq!(m.count(), 0);
    assert!(r.calls.len() >= 4, "{}", r.render());
    assert!(r.calls.iter().all(|c| c.prompt_tokens == count_tokens(&c.messages) && c.questions >= 1));
    assert_eq!(r.calls[0].kind, "prior");
    assert!(r.render().contains(&format!("{} prompt tokens", r.prompt_tokens())));
    // The listing shows the question each request asks, and FALAT's questions in the paper's
    // order: prior, phases, recall, labels, verification, blind re-search with per-step checks.
    let kinds: Vec<&str> = r.calls.iter().map(|c| c.kind.as_str()).collect();
    let first = |k: &str| kinds.iter().position(|x| *x == k).unwrap_or(usize::MAX);
    assert!(
        first("prior") < first("phase_summary") && first("phase_summary") < first("recall_candidates"),
        "{kinds:?}"
    );
    assert!(first("recall_candidates") < first("roles") && kinds.last() == Some(&"verify"), "{kinds:?}");
    let roles = r.calls.iter().find(|c| c.kind == "roles").expect("a re-search request");
    let asks = roles.question().unwrap();
    assert!(asks.starts_with("Compare the steps with each other"), "{asks}");
    let sent: String = roles.messages.iter().map(|m| m.content.as_str()).collect();
    for hint in ["was chosen", "chosen so far", "keep step", "current choice"] {
        assert!(!sent.contains(hint), "the re-search prompt hints at the current choice ({hint}): {sent}");
    }
    assert!(sent.contains("Expected way to solve the task (prior)"), "π reaches re-search");
    assert!(r.render().contains("     asks: Compare the steps with each other"), "{}", r.render());
}

#[test]
fn prompts_send_only_what_the_question_needs() {
    let f = long_trajectory();
    let known = Known::default();
    let prior = prompts::kind(QuestionKind::Prior).unwrap();
    let text = prompts::render(prior.template(), &prior.fill(&f.ctx(), &[Question::Prior], &known, Detail::FULL));
    assert!(text.contains("Seattle") && !text.contains("I typed") && !text.contains("{{"), "{text}");
    let recall = prompts::kind(QuestionKind::RecallCandidates).unwrap();
    let q = Question::RecallCandidates { range: 2..4 };
    let text = prompts::render(recall.template(), &recall.fill(&f.ctx(), &[q], &known, Detail::FULL));
    assert!(text.contains("--- step 2 (Coder, message)") && !text.contains("--- step 1 "), "{text}");
    assert!(text.contains("phase 0 (steps 0-"), "phase summaries come first: {text}");
    let v = prompts::kind(QuestionKind::Verify).unwrap();
    let q = Question::Verify { step: 2, criterion: CriterionKind::Sufficiency, live: vec![2, 4].into() };
    let batch = v.batch(&f.ctx(), &q, &known);
    assert_eq!(batch.len(), 4, "both criteria of both candidates");
    // Every kind of question has its prompt, named after the kind.
    for k in QuestionKind::ALL {
        assert_eq!(prompts::kind(k).map(|p| p.name()), Some(k.as_str()));
        assert_eq!(QuestionKind::parse(k.as_str()), Some(k));
    }
    assert_eq!(QuestionKind::parse("echo_vote"), None);
}

#[test]
fn asks_from_blocking_threads_of_a_runtime_and_drops_inside_one() {
    let m = mock(schema_reply);
    let judge = Arc::new(judge_for(&m.url));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let j = Arc::clone(&judge);
    let answer = rt.block_on(async move {
        tokio::task::spawn_blocking(move || {
            let f = fixture("hand-crafted-24.json");
            j.ask(&f.ctx(), &Question::Prior)
        })
        .await
        .unwrap()
    });
    assert_eq!(answer.warning, None);
    rt.block_on(async move { drop(judge) });
}

#[test]
fn config_comes_from_args_then_env_then_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("falat.toml");
    std::fs::write(
        &file,
        "[llm]\nbase_url = \"http://file/v1\"\nmodel = \"file-model\"\njobs = 3\ntoken_budget = 9000\n",
    )
    .unwrap();
    let env = |k: &str| (k == "FALAT_CONFIG").then(|| file.display().to_string());
    let cfg = LlmConfig::from_env_and_args(&LlmArgs::default(), env).unwrap();
    assert_eq!((cfg.base_url.as_deref(), cfg.model.as_str(), cfg.jobs), (Some("http://file/v1"), "file-model", 3));
    assert_eq!(cfg.token_budget, Some(9000));
    let env2 = |k: &str| match k {
        "FALAT_CONFIG" => Some(file.display().to_string()),
        "OPENAI_BASE_URL" => Some("http://env/v1".to_string()),
        _ => None,
    };
    let args = LlmArgs { model: Some("arg-model".into()), ..LlmArgs::default() };
    let cfg = LlmConfig::from_env_and_args(&args, env2).unwrap();
    assert_eq!((cfg.base_url.as_deref(), cfg.model.as_str()), (Some("http://env/v1"), "arg-model"));
    let none = |_: &str| None;
    let e = LlmConfig::from_env_and_args(&LlmArgs { model: Some("m".into()), ..LlmArgs::default() }, none);
    assert_eq!(e, Err(LlmError::NoUrl));
    assert!(LlmError::NoUrl.to_string().contains("--llm-url"));
    let bad = LlmArgs { llm_url: Some("127.0.0.1:8080".into()), model: Some("m".into()), ..LlmArgs::default() };
    assert!(matches!(LlmConfig::from_env_and_args(&bad, none), Err(LlmError::BadUrl(_))));
    let nomodel = LlmArgs { llm_url: Some("http://x/v1".into()), ..LlmArgs::default() };
    assert_eq!(LlmConfig::from_env_and_args(&nomodel, none), Err(LlmError::NoModel));
    let replay = LlmArgs { replay: Some(dir.path().into()), model: Some("m".into()), ..LlmArgs::default() };
    assert!(LlmConfig::from_env_and_args(&replay, none).is_ok());
    assert!(matches!(LlmJudge::new(LlmConfig::from_env_and_args(&replay, none).unwrap()), Err(LlmError::Cache(_))));
}

#[test]
fn the_user_config_file_s_llm_table_is_read_and_the_command_line_and_environment_win() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, "theme = \"light\"\n[llm]\nurl = \"http://file/v1\"\nmodel = \"file-model\"\ntimeout_secs = 7\napi_key_env = \"MY_KEY\"\n").unwrap();
    let none = |_: &str| None;
    let args = LlmArgs { default_config_file: Some(file.clone()), ..LlmArgs::default() };
    let cfg = LlmConfig::from_env_and_args(&args, none).unwrap();
    assert_eq!((cfg.base_url.as_deref(), cfg.model.as_str()), (Some("http://file/v1"), "file-model"));
    assert_eq!((cfg.timeout, cfg.api_key_env.as_str()), (std::time::Duration::from_secs(7), "MY_KEY"));
    let cli = LlmArgs { llm_url: Some("http://cli/v1".into()), model: Some("cli-model".into()), ..args.clone() };
    let env = |k: &str| (k == "OPENAI_BASE_URL").then(|| "http://env/v1".to_string());
    let cfg = LlmConfig::from_env_and_args(&cli, env).unwrap();
    assert_eq!((cfg.base_url.as_deref(), cfg.model.as_str()), (Some("http://cli/v1"), "cli-model"));
    let cfg = LlmConfig::from_env_and_args(&args, env).unwrap();
    assert_eq!((cfg.base_url.as_deref(), cfg.model.as_str()), (Some("http://env/v1"), "file-model"));
    // A missing default file is no error; a bad entry says which key and what was expected.
    let missing = LlmArgs {
        default_config_file: Some(dir.path().join("none.toml")),
        model: Some("m".into()),
        llm_url: Some("http://x/v1".into()),
        ..LlmArgs::default()
    };
    assert!(LlmConfig::from_env_and_args(&missing, none).is_ok());
    std::fs::write(&file, "[llm]\nmodel = 3\n").unwrap();
    let e = LlmConfig::from_env_and_args(&args, none).unwrap_err().to_string();
    assert_eq!(
        e,
        format!("config file {}: [llm] model: expected a string like model = \"...\", found integer", file.display())
    );
    std::fs::write(&file, "[llm]\nmodle = \"x\"\n").unwrap();
    let e = LlmConfig::from_env_and_args(&args, none).unwrap_err().to_string();
    assert!(e.ends_with("[llm] has no key \"modle\"; the keys are base_url, url, model, api_key_env, timeout_secs, retries, jobs, token_budget"), "{e}");
}

#[test]
fn stage_costs_sum_per_stage() {
    let m = mock(schema_reply);
    let judge = judge_for(&m.url);
    let f = fixture("hand-crafted-24.json");
    let opts = Options::new(true);
    let mut p = pipeline::Pipeline::default();
    let mut before = 0;
    for stage in Stage::ALL {
        p.run(&f.t, &judge, &opts, stage).unwrap();
        let sent = m.count();
        let c = p.costs.iter().find(|c| c.stage == stage.as_str()).unwrap().cost;
        assert_eq!(c.calls as usize, sent - before, "{}", stage.as_str());
        assert_eq!(c.prompt_tokens, (before..sent).map(|k| 100 + k as u64).sum::<u64>());
        before = sent;
    }
}

// ---- Hostile and broken servers (issue 27): bounded time and memory, no key anywhere. ----

/// A raw server on 127.0.0.1: `f(stream, request head, n)` handles each of at most `max`
/// connections (then the thread ends by itself).
fn raw(max: usize, f: impl Fn(TcpStream, String, usize) + Send + Sync + 'static) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let f = Arc::new(f);
    std::thread::spawn(move || {
        for (n, stream) in l.incoming().flatten().take(max).enumerate() {
            let f = Arc::clone(&f);
            std::thread::spawn(move || {
                let Some((head, _)) = read_request(&stream) else { return };
                f(stream, head, n);
            });
        }
    });
    format!("http://{addr}/v1")
}

fn hostile_judge(url: &str, key: Option<&str>, tune: impl FnOnce(&mut LlmConfig)) -> LlmJudge {
    let mut cfg = LlmConfig::new(Some(url), "test-model");
    cfg.retries = 1;
    cfg.timeout = Duration::from_secs(20);
    tune(&mut cfg);
    LlmJudge::with_api_key(cfg, key.map(str::to_string)).unwrap()
}

#[test]
fn a_server_that_never_answers_is_cut_by_the_trajectory_deadline() {
    let url = raw(50, |s, _, _| {
        // Holds the connection without a byte for 30 s (then lets go).
        std::thread::sleep(Duration::from_secs(30));
        drop(s);
    });
    let judge = hostile_judge(&url, None, |c| c.trajectory_deadline = Some(Duration::from_secs(2)));
    let f = fixture("hand-crafted-24.json");
    let t0 = Instant::now();
    let d = crate::methods::run(
        crate::methods::Method::Falat,
        &f.t,
        &judge,
        &crate::methods::MethodOptions::for_falat(Options::new(true)),
    );
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert!(d.warnings.iter().any(|w| w.contains("deadline of 2 s for this trajectory")), "{:?}", d.warnings);
    let a = d.total_cost().answers;
    assert_eq!((a.model, a.repaired), (0, 0));
    assert!(a.fallback_budget > 0, "{a:?}");
}

#[test]
fn retry_after_is_capped_and_never_outlasts_the_deadline() {
    let url = raw(50, |s, _, _| {
        write_response(s, 503, &[("Retry-After", "100000".into())], r#"{"error":{"message":"busy"}}"#);
    });
    // The cap alone: two retries of at most 1 s each.
    let judge = hostile_judge(&url, None, |c| {
        c.retries = 2;
        c.max_retry_after = Duration::from_secs(1);
        c.trajectory_deadline = None;
    });
    let f = fixture("hand-crafted-24.json");
    let t0 = Instant::now();
    let j = judge.ask(&f.ctx(), &Question::Prior);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert!(j.warning.unwrap().contains("HTTP 503"));
    // The deadline: a 30 s Retry-After is not waited for when the deadline is 2 s away.
    let judge = hostile_judge(&url, None, |c| {
        c.retries = 3;
        c.max_retry_after = Duration::from_secs(30);
        c.trajectory_deadline = Some(Duration::from_secs(2));
    });
    let t0 = Instant::now();
    let _ = judge.ask(&f.ctx(), &Question::Prior);
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
}

#[test]
fn an_endless_response_is_cut_at_the_size_cap() {
    let url = raw(10, |mut s, _, _| {
        let _ = s.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"choices\": [\"",
        );
        let chunk = vec![b'a'; 64 * 1024];
        // Bounded: 256 MiB at most, far past the 1 MiB cap; stops when the client hangs up.
        for _ in 0..4096 {
            if s.write_all(&chunk).is_err() {
                return;
            }
        }
    });
    let judge = hostile_judge(&url, None, |c| c.max_response_bytes = 1 << 20);
    let f = fixture("hand-crafted-24.json");
    let t0 = Instant::now();
    let j = judge.ask(&f.ctx(), &Question::Prior);
    let w = j.warning.unwrap();
    assert!(w.contains("longer than 1048576 bytes and was cut"), "{w}");
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
}

#[test]
fn a_server_echoing_headers_and_credentials_never_gets_them_into_outputs() {
    const KEY: &str = "sk-falat-ECHO-0123456789abcdef";
    // Echoes the whole request head (Authorization included) in its error message, also as
    // HTML, a 500 and a 200 that is not JSON.
    let url = raw(200, |s, head, n| {
        let body = match n % 3 {
            0 => json!({"error": {"message": format!("bad request: {head}")}}).to_string(),
            1 => format!("<html>{head}</html>"),
            _ => format!("not json {head}"),
        };
        let status = [400, 500, 200][n % 3];
        write_response(s, status, &[], &body);
    });
    let with_creds = url.replace("http://", "http://alice:pa55w0rd-XYZ@");
    let dir = tempfile::tempdir().unwrap();
    let judge = hostile_judge(&with_creds, Some(KEY), |c| {
        c.retries = 0;
        c.record_dir = Some(dir.path().to_path_buf());
    });
    let f = fixture("hand-crafted-24.json");
    let d = crate::methods::run(
        crate::methods::Method::Falat,
        &f.t,
        &judge,
        &crate::methods::MethodOptions::for_falat(Options::new(true)),
    );
    let mut everything = std::fs::read_to_string(dir.path().join(cache::FILE)).unwrap_or_default();
    everything.push_str(&crate::report::to_markdown(&f.t, &d));
    everything.push_str(&crate::report::to_json(&f.t, &d).to_string());
    everything.push_str(&format!("{judge:?} {:?}", judge.check()));
    assert!(everything.contains("<redacted>"), "the echo was seen: {everything}");
    for secret in [KEY, "pa55w0rd-XYZ", "alice:"] {
        assert!(!everything.contains(secret), "`{secret}` leaked: {everything}");
    }
}

#[test]
fn unreachable_url_credentials_are_not_shown() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let judge = hostile_judge(&format!("http://bob:hunter2-secret@127.0.0.1:{port}/v1"), None, |c| c.retries = 0);
    let e = judge.check().unwrap_err();
    let text = format!("{e} {e:?}");
    assert!(text.contains(&format!("http://127.0.0.1:{port}/v1/chat/completions")), "{text}");
    assert!(!text.contains("hunter2") && !text.contains("bob"), "{text}");
}

#[test]
fn a_redirect_to_another_origin_is_not_followed() {
    let other = mock(schema_reply);
    let target = format!("{}/chat/completions", other.url);
    let url = raw(20, move |s, _, _| {
        write_response(s, 307, &[("Location", target.clone())], "");
    });
    let judge = hostile_judge(&url, Some("sk-redirect-key"), |_| {});
    let f = fixture("hand-crafted-24.json");
    let j = judge.ask(&f.ctx(), &Question::Prior);
    let w = j.warning.unwrap();
    assert!(w.contains("redirected to") && w.contains("another origin: not followed"), "{w}");
    assert_eq!(other.count(), 0, "the other origin received the prompt");
    assert!(matches!(judge.check(), Err(CallError::Redirected { status: 307, .. })));
}

#[test]
fn a_question_with_nothing_to_choose_from_is_not_asked() {
    let m = mock(schema_reply);
    let judge = judge_for(&m.url);
    let f = fixture("hand-crafted-24.json");
    // Phase 0 of a Magentic-One run is the task statement: no step of it may be named.
    let p0 = f.h.phases[0].range.clone();
    assert!(prompts::kind(QuestionKind::RecallCandidates).is_some());
    let j = judge.ask(&f.ctx(), &Question::RecallCandidates { range: p0 });
    assert_eq!(j.answer, Answer::Candidates(Vec::new()));
    assert_eq!((j.cost.calls, j.cost.answers.not_asked, j.warning), (0, 1, None));
    assert_eq!(m.count(), 0);
}

/// Whether a request's schema has a construct the servers refuse (an empty enum...).
fn refused_schema(b: &Value) -> Option<String> {
    let schema = b.pointer("/response_format/json_schema/schema")?;
    let p = client::schema_problems(schema);
    (!p.is_empty()).then(|| p.join("; "))
}

#[test]
fn no_question_of_the_bundled_hand_crafted_runs_has_a_schema_a_server_refuses() {
    // Like llama.cpp: a schema with an empty enum gets HTTP 400.
    let m = mock(|b, n| match refused_schema(b) {
        Some(p) => error(400, &format!("JSON schema error: {p}"), "invalid_request_error"),
        None => schema_reply(b, n),
    });
    let judge = judge_for(&m.url);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/who-and-when/Hand-Crafted");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert_eq!(files.len(), 35);
    let mut answers = crate::diagnosis::AnswerCounts::default();
    for p in &files {
        let t = crate::ingest::fs::load_path(p, None).unwrap().trajectories.remove(0);
        let d = crate::methods::run(
            crate::methods::Method::Falat,
            &t,
            &judge,
            &crate::methods::MethodOptions::for_falat(Options::new(true)),
        );
        answers.add(&d.total_cost().answers);
    }
    let refused: Vec<String> = m.bodies().iter().filter_map(refused_schema).collect();
    assert!(refused.is_empty(), "{} requests a server refuses: {:?}", refused.len(), &refused[..refused.len().min(3)]);
    assert_eq!(answers.fallback_error, 0, "{answers:?}");
    assert!(answers.model > 35 * 4, "{answers:?}");
}

#[test]
fn schemas_are_checked_and_simplified() {
    let bad =
        json!({"type": "object", "properties": {"step": {"type": "integer", "enum": []}}, "required": ["step", "x"]});
    let p = client::schema_problems(&bad);
    assert_eq!(
        p,
        vec![
            "#: required property `x` is not defined".to_string(),
            "#/properties/step: enum must be a non-empty array".to_string()
        ]
    );
    let s = client::simplify_schema(&json!({
        "type": "object",
        "properties": {"enum": {"enum": ["a", null]}, "n": {"type": "integer", "minimum": 0, "enum": [1, 2]}},
        "required": ["enum", "n"],
    }));
    assert_eq!(
        s,
        json!({"type": "object", "properties": {"enum": {"type": ["null", "string"]}, "n": {"type": "integer"}}, "required": ["enum", "n"]})
    );
}

#[test]
fn cached_tokens_are_read_from_openai_and_llama_cpp_usage() {
    let openai = json!({"choices": [{"message": {"content": "{}"}}], "usage": {"prompt_tokens": 2000, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 1536}}});
    assert_eq!(Completion::from_body(&openai).unwrap().usage.unwrap().cached_tokens, 1536);
    let llama = json!({"choices": [{"message": {"content": "{}"}}], "usage": {"prompt_tokens": 900, "completion_tokens": 5}, "timings": {"cache_n": 640, "prompt_n": 260}});
    let c = Completion::from_body(&llama).unwrap();
    assert_eq!(c.usage.unwrap().cached_tokens, 640);
    assert_eq!(Completion::from_cached(&c.to_json()).unwrap(), c, "kept in the recording");
}

#[test]
fn llama_cpp_gets_one_slot_per_trajectory_and_other_servers_no_extra_fields() {
    // A llama.cpp-like server: /props says 2 slots.
    let seen: Arc<Mutex<Vec<Value>>> = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let url = serve(move |stream, head, body| {
        if head.starts_with("GET /props") {
            write_response(stream, 200, &[], r#"{"total_slots": 2}"#);
            return;
        }
        let n = {
            let mut s = log.lock().unwrap();
            s.push(body.clone());
            s.len()
        };
        let (st, h, t) = schema_reply(&body, n);
        write_response(stream, st, &h, &t);
    });
    let judge = judge_for(&url);
    let a = fixture("hand-crafted-24.json");
    let b = fixture("algorithm-generated-10.json");
    for f in [&a, &b, &a] {
        let _ = judge.ask(&f.ctx(), &Question::Prior);
        let _ = judge.ask(&f.ctx(), &Question::PhaseSummary { phase: 0 });
    }
    let bodies = seen.lock().unwrap().clone();
    let slots: Vec<Option<u64>> = bodies.iter().map(|b| b["id_slot"].as_u64()).collect();
    assert_eq!(slots.len(), 4, "prior and phases of two trajectories (the third round is memoised)");
    assert_eq!(slots[0], slots[1], "one trajectory, one slot");
    assert_eq!(slots[2], slots[3]);
    assert_ne!(slots[0], slots[2], "two trajectories, two slots");
    assert!(bodies.iter().all(|b| b["cache_prompt"] == true));
    // The recorded key does not depend on the slot: a body without the extra fields.
    let m = mock(schema_reply);
    let judge = judge_for(&m.url);
    let _ = judge.ask(&a.ctx(), &Question::Prior);
    assert!(m.bodies()[0].get("id_slot").is_none() && m.bodies()[0].get("cache_prompt").is_none());
}

#[test]
fn answers_are_counted_by_who_gave_them_per_stage() {
    // Every answer valid except the first reply to the phase summaries (repaired).
    let m = mock(|b, n| if n == 1 { ok("no json here", n) } else { schema_reply(b, n) });
    let judge = judge_for(&m.url);
    let f = fixture("hand-crafted-24.json");
    let d = crate::methods::run(
        crate::methods::Method::Falat,
        &f.t,
        &judge,
        &crate::methods::MethodOptions::for_falat(Options::new(true)),
    );
    let total = d.total_cost().answers;
    assert_eq!(total.fallbacks(), 0, "{total:?}");
    // The three phases of this run were answered by the repair request; the rest at once.
    assert_eq!(total.repaired, 3, "{total:?}");
    assert!(total.model > 3, "{total:?}");
    let first = &d.cost[0];
    assert_eq!((first.stage.as_str(), first.cost.answers.repaired), ("prior+hierarchy", 3));
    let md = crate::report::to_markdown(&f.t, &d);
    assert!(md.contains("| answered by |") && md.contains("repaired"), "{md}");
    assert!(!md.contains("Most answers are the offline judge's"));
    let json = crate::report::to_json(&f.t, &d);
    assert_eq!(json["cost"]["total"]["answers"]["repaired"], total.repaired);
    // A judge whose server says no to everything: the headline says who answered.
    let m = mock(|_, n| ok("no json", n));
    let judge = judge_for(&m.url);
    let d = crate::methods::run(
        crate::methods::Method::Falat,
        &f.t,
        &judge,
        &crate::methods::MethodOptions::for_falat(Options::new(true)),
    );
    assert!(d.total_cost().answers.mostly_fallback());
    assert!(crate::report::to_markdown(&f.t, &d).contains("**Most answers are the offline judge's, not the LLM's**"));
}

#[test]
fn progress_lines_name_each_question_that_needed_a_call() {
    let m = mock(schema_reply);
    let judge = judge_for(&m.url);
    let lines: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lines);
    judge.set_progress(Some(Arc::new(move |e: &ProgressEvent| sink.lock().unwrap().push(e.line()))));
    let f = fixture("hand-crafted-24.json");
    let _ = judge.ask(&f.ctx(), &Question::Prior);
    let _ = judge.ask(&f.ctx(), &Question::PhaseSummary { phase: 0 });
    let _ = judge.ask(&f.ctx(), &Question::PhaseSummary { phase: 1 });
    let lines = lines.lock().unwrap().clone();
    assert_eq!(lines.len(), 2, "the memoised phase made no call: {lines:?}");
    assert!(
        lines[0].starts_with("falat: llm q1 ")
            && lines[0].contains(" prior (prior): 1 call, 100 prompt tokens (0 cached), 7 completion"),
        "{}",
        lines[0]
    );
    assert!(lines[0].ends_with(": model"), "{}", lines[0]);
    assert!(lines[1].contains("q2") && lines[1].contains("phase_summary (summary of phase 0)"), "{}", lines[1]);
}

// ---- One prompt prefix per trajectory (issue 27: pay for each prompt token once). ----

/// The bundled hand-crafted run with 17 steps (Who&When `Hand-Crafted/4.json`).
fn hand_crafted_4() -> Trajectory {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/who-and-when/Hand-Crafted/4.json");
    crate::ingest::fs::load_path(&p, None).unwrap().trajectories.remove(0)
}

/// The system text and the user message of a request, as one string.
fn prompt_of(body: &Value) -> (String, String) {
    let m = body["messages"].as_array().unwrap();
    assert_eq!((m[0]["role"].as_str(), m[1]["role"].as_str()), (Some("system"), Some("user")));
    (m[0]["content"].as_str().unwrap().to_string(), m[1]["content"].as_str().unwrap().to_string())
}

fn common_prefix<'a>(a: &'a str, b: &str) -> &'a str {
    let n = a
        .char_indices()
        .zip(b.chars())
        .take_while(|((_, x), y)| x == y)
        .last()
        .map_or(0, |((i, c), _)| i + c.len_utf8());
    &a[..n]
}

#[test]
fn every_prompt_of_a_trajectory_starts_with_the_same_system_text_task_and_run() {
    let m = mock(schema_reply);
    let judge = judge_for(&m.url);
    let t = hand_crafted_4();
    let d = crate::methods::run(
        crate::methods::Method::Falat,
        &t,
        &judge,
        &crate::methods::MethodOptions::for_falat(Options::new(true)),
    );
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    let bodies = m.bodies();
    assert!(bodies.len() >= 4, "{} requests", bodies.len());
    let prompts: Vec<(String, String)> = bodies.iter().map(prompt_of).collect();
    // One system text for every request, the prior's included.
    assert!(prompts.iter().all(|p| p.0 == prompts[0].0));
    assert!(prompts[0].0.contains("Kinds of error (signal)") && prompts[0].0.contains("ROOT_CAUSE"));
    // The prior sees the task and the agents only; every later prompt starts with those bytes.
    let (_, prior) = &prompts[0];
    let opening = prior.split("\n\nWithout solving the task").next().unwrap();
    assert!(opening.starts_with("Task: ") && opening.contains("\n\nAgents of the team:\n- "), "{opening}");
    assert!(!prior.contains("The run, phase by phase"), "{prior}");
    // After the prior, every prompt shares one prefix: task, agents, outcome, the whole run (one
    // line per step) and the prior; what differs between stages comes after it.
    let mut shared = prompts[1].1.as_str();
    for (_, user) in &prompts[1..] {
        assert!(user.starts_with(opening), "{user}");
        shared = common_prefix(shared, user);
    }
    assert!(shared.contains("\nAnswer given by the run: "), "{shared}");
    assert!(shared.contains("The run, phase by phase, one line per step:\nphase 0 (steps 0-"), "{shared}");
    for i in 0..t.steps.len() {
        assert!(shared.contains(&format!("\n  step {i} ")), "step {i} is not in the shared prefix: {shared}");
    }
    assert!(shared.contains("Expected way to solve the task (prior):\nexpected answer: "), "{shared}");
    // The shared part (system text + prefix) is most of every prompt after the prior's.
    let tokens = |s: &str| count_text(s);
    let system = tokens(&prompts[0].0);
    let fixed = system + tokens(shared);
    let mut least = 1.0f64;
    for (sys, user) in &prompts[1..] {
        let share = fixed as f64 / (tokens(sys) + tokens(user)) as f64;
        least = least.min(share);
    }
    // 68.6 % (o200k_base) for the re-search prompt, which adds the raw text of five steps and the
    // roles; every other prompt shares more.
    assert!(least >= 0.68, "the shared prefix is only {:.1} % of a prompt", 100.0 * least);
}

#[test]
fn a_repair_resends_the_question_s_bytes_and_adds_only_the_correction() {
    let bad =
        "{\"candidates\": [{\"step\": 99, \"signal\": \"assumption\", \"evidence\": \"a guess\", \"severity\": 2}]}";
    let m = mock(move |b, n| if n == 0 { ok(bad, n) } else { schema_reply(b, n) });
    let judge = judge_for(&m.url);
    let f = fixture("algorithm-generated-10.json");
    let q = Question::RecallCandidates { range: 0..f.t.steps.len() };
    let j = judge.ask(&f.ctx(), &q);
    assert_eq!((j.warning, j.cost.calls, j.cost.answers.repaired), (None, 2, 1));
    let (first, repair) = (&m.bodies()[0], &m.bodies()[1]);
    let (a, b) = (first["messages"].as_array().unwrap(), repair["messages"].as_array().unwrap());
    // The question's messages byte for byte (so the server's cache serves them), the answer as the
    // model gave it, then the correction and nothing else.
    assert_eq!(&b[..2], &a[..]);
    assert_eq!(b[2], json!({"role": "assistant", "content": bad}));
    assert_eq!(
        b[3],
        json!({"role": "user", "content": "That answer cannot be used:\n- step 99 is not one of the steps given (0, 1, 2, 3, 4, 5, 6, 7, 9)\nReply again with only the corrected JSON object in the same format, using only the step numbers given."})
    );
    assert_eq!(b.len(), 4);
    for k in ["model", "max_tokens", "response_format", "temperature", "seed"] {
        assert_eq!(first[k], repair[k], "{k}");
    }
}

/// A llama.cpp-like `/tokenize` on 127.0.0.1 counting one token per word (or a 404 when
/// `answers` is false), recording the paths it was asked.
fn tokenizer(answers: bool) -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let url = serve(move |stream, head, body| {
        let path = head.lines().next().unwrap_or("").to_string();
        log.lock().unwrap().push(path.clone());
        if answers && path.starts_with("POST /tokenize ") {
            let n = body["content"].as_str().unwrap_or("").split_whitespace().count();
            write_response(stream, 200, &[], &json!({"tokens": vec![1; n]}).to_string());
        } else {
            write_response(stream, 404, &[], "{}");
        }
    });
    (url, seen)
}

fn falat_dry_run(url: &str) -> DryRunReport {
    let f = fixture("hand-crafted-24.json");
    dry_run_with(&LlmConfig::new(Some(url), "test-model"), |j| {
        let _ = crate::methods::run(
            crate::methods::Method::Falat,
            &f.t,
            j,
            &crate::methods::MethodOptions::for_falat(Options::new(true)),
        );
    })
    .unwrap()
}

#[test]
fn a_dry_run_counts_with_the_server_s_tokenizer_when_it_has_one() {
    let (url, seen) = tokenizer(true);
    let r = falat_dry_run(&url);
    let root = url.trim_end_matches("/v1");
    assert_eq!(r.counter, TokenCounter::Server(format!("{root}/tokenize")));
    assert!(r.calls.len() >= 4);
    for c in &r.calls {
        let words: u64 = c.messages.iter().map(|m| m.content.split_whitespace().count() as u64 + 4).sum();
        assert_eq!(c.prompt_tokens, words + 3, "{}", c.kind);
    }
    // Nothing but the tokenizer was asked, and each distinct message once (the system text once).
    let seen = seen.lock().unwrap().clone();
    assert!(seen.iter().all(|p| p.starts_with("POST /tokenize ")), "{seen:?}");
    let distinct: std::collections::HashSet<&str> =
        r.calls.iter().flat_map(|c| c.messages.iter().map(|m| m.content.as_str())).collect();
    assert_eq!(seen.len(), distinct.len() + 1, "one probe, then each distinct message once");
    let text = r.render();
    assert!(text.contains("nothing was sent but the prompts to the server's tokenizer"), "{text}");
    assert!(
        text.contains(&format!("counted by the server's tokenizer ({root}/tokenize; nothing else was sent)")),
        "{text}"
    );
}

#[test]
fn a_dry_run_counts_with_o200k_when_the_server_has_no_tokenizer_or_none_is_given() {
    let (url, seen) = tokenizer(false);
    let r = falat_dry_run(&url);
    assert_eq!(r.counter, TokenCounter::O200k);
    assert!(r.calls.iter().all(|c| c.prompt_tokens == count_tokens(&c.messages)));
    assert_eq!(seen.lock().unwrap().clone(), vec!["POST /tokenize HTTP/1.1".to_string()], "one probe only");
    assert!(r.render().contains("counted with o200k_base (nothing is sent"), "{}", r.render());
    let f = fixture("hand-crafted-24.json");
    let offline = dry_run_with(&LlmConfig::new(None, "test-model"), |j| {
        let _ = crate::methods::run(
            crate::methods::Method::Falat,
            &f.t,
            j,
            &crate::methods::MethodOptions::for_falat(Options::new(true)),
        );
    })
    .unwrap();
    assert_eq!((offline.counter, offline.calls), (TokenCounter::O200k, r.calls));
}
