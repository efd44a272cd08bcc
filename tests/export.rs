//! Back into the tracing tools: the source ids both reports give every step they name, and the
//! `falat diagnose --format otlp|phoenix|langfuse` exports validated against typed mirrors of
//! each vendor's published request body (`tests/fixtures/export/vendor_types.rs`).

use assert_cmd::Command;
use serde_json::Value;

#[path = "fixtures/export/vendor_types.rs"]
mod vendor;

const ANY_AGENT: &str = "tests/fixtures/corpus/otel-genai/any-agent_OPENAI_trace.json";
const OTLP: &str = "tests/fixtures/corpus/otel-genai/genai-interlingua_raw_in.otlp.json";
const OPENINFERENCE: &str = "tests/fixtures/corpus/openinference/genai-interlingua_openinference_in.otlp.json";
const LANGFUSE: &str = "tests/fixtures/variants/06-langfuse-observations-api-list.json";
const WHO_WHEN: &str = "sample_traces/who-and-when-hand-crafted-47.json";
/// The any-agent dump's trace id, a 128-bit decimal integer as the file writes it.
const ANY_AGENT_TRACE: &str = "100927429609276267646756448943279827607";

fn falat() -> Command {
    let mut cmd = Command::cargo_bin("falat").unwrap();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

fn stdout_of(args: &[&str]) -> String {
    let out = falat().args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The output as JSON; `--format json` is always an array, and these runs diagnose one trace with
/// one method, so its one element.
fn json_of(args: &[&str]) -> Value {
    let v: Value = serde_json::from_str(&stdout_of(args)).unwrap();
    if args.windows(2).any(|w| w == ["--format", "json"]) {
        let [one] = <[Value; 1]>::try_from(v.as_array().cloned().expect("an array")).expect("one report");
        return one;
    }
    v
}

/// The span ids of the any-agent dump as OTLP writes them: its decimal `span_id`s in 16-digit
/// hex, read from the file's text here, apart from falat's loader.
fn any_agent_span_ids() -> Vec<String> {
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(ANY_AGENT)).unwrap();
    let re = regex::Regex::new(r#""span_id": (\d+)"#).unwrap();
    re.captures_iter(&text).map(|c| format!("{:016x}", c[1].parse::<u64>().unwrap())).collect()
}

// These traces are runs that went well: FALAT says "no failure found" on them and names no step
// (tested below), so the exports' mechanics are tested on ECHO's verdicts, which always name one.

#[test]
fn a_run_without_a_failure_has_nothing_to_export_and_says_so() {
    let r = json_of(&["diagnose", "--format", "json", ANY_AGENT]);
    assert_eq!(r["decisive_step"], Value::Null);
    assert_eq!(r["explanation"]["rule"], "no_failure");
    let out = falat().args(["diagnose", "--format", "otlp", ANY_AGENT]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("falat names no decisive step, so there is nothing to attach in OTLP"), "{err}");
}

#[test]
fn the_json_report_gives_every_named_step_its_source_ids_and_the_trace_id_as_written() {
    let r = json_of(&["diagnose", "--method", "echo", "--format", "json", ANY_AGENT]);
    assert_eq!(r["trajectory"]["trace_id"], ANY_AGENT_TRACE);
    let spans = any_agent_span_ids();
    let decisive = r["decisive_step"].as_u64().unwrap();
    assert_eq!(r["decisive_source"]["trace_id"], ANY_AGENT_TRACE);
    let span = r["decisive_source"]["span_id"].as_str().unwrap();
    assert!(spans.iter().any(|s| s == span), "{span} is no span of the file");
    for entry in r["ranking"].as_array().unwrap().iter().chain(r["roles"].as_array().unwrap()) {
        assert_eq!(entry["source"]["trace_id"], ANY_AGENT_TRACE, "{entry}");
        let s = entry["source"]["span_id"].as_str().unwrap();
        assert!(spans.iter().any(|x| x == s), "{s}");
    }
    let ranked_first = &r["ranking"][0];
    assert_eq!(ranked_first["step"].as_u64(), Some(decisive));
    assert_eq!(ranked_first["source"], r["decisive_source"]);
    assert_eq!(r["path"].as_array().unwrap().len(), r["path_sources"].as_array().unwrap().len());
    // The same ids through inspect --json, which lists every step with its own id.
    let inspected = json_of(&["inspect", "--json", ANY_AGENT]);
    let steps = inspected["trajectories"][0]["steps"].as_array().unwrap();
    assert_eq!(steps[decisive as usize]["id"], span);
}

#[test]
fn the_markdown_report_names_the_trace_and_the_decisive_span() {
    let json = json_of(&["diagnose", "--method", "echo", "--format", "json", ANY_AGENT]);
    let span = json["decisive_source"]["span_id"].as_str().unwrap().to_string();
    let md = stdout_of(&["diagnose", "--method", "echo", ANY_AGENT]);
    assert!(md.contains(&format!("In the source: trace_id {ANY_AGENT_TRACE}, span_id {span}\n")), "{md}");
    assert!(md.contains(&format!("## Source ids\n\nTrace id: `{ANY_AGENT_TRACE}`\n")), "{md}");
    assert!(!md.contains("e+38") && !md.contains("e38"), "the trace id was re-typed through a float");
    let decisive = json["decisive_step"].as_u64().unwrap();
    assert!(md.contains(&format!("| {decisive} | any_agent | span_id `{span}` | - |")), "{md}");
}

#[test]
fn a_falat_jsonl_step_gives_its_id_and_file_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    std::fs::write(
        &path,
        concat!(
            "{\"falat\": 1, \"task\": \"What is 2 + 2?\", \"expected_output\": \"4\"}\n",
            "{\"agent\": \"user\", \"content\": \"What is 2 + 2?\", \"id\": \"m1\"}\n",
            "\n",
            "{\"agent\": \"solver\", \"content\": \"2 + 2 = 5. FINAL ANSWER: 5\", \"id\": \"m2\", \"parent\": \"m1\"}\n",
        ),
    )
    .unwrap();
    let r = json_of(&["diagnose", "--format", "json", path.to_str().unwrap()]);
    let expected = [serde_json::json!({"step_id": "m1", "line": 2}), serde_json::json!({"step_id": "m2", "line": 4})];
    let ranking = r["ranking"].as_array().unwrap();
    assert_eq!(ranking.len(), 2);
    for entry in ranking {
        assert_eq!(entry["source"], expected[entry["step"].as_u64().unwrap() as usize], "{entry}");
    }
    assert_eq!(r["decisive_source"], expected[r["decisive_step"].as_u64().unwrap() as usize]);
}

fn otlp_records(body: &str) -> Vec<vendor::LogRecord> {
    let req: vendor::ExportLogsServiceRequest = serde_json::from_str(body).expect("an ExportLogsServiceRequest");
    let mut out = Vec::new();
    for rl in req.resource_logs {
        let resource = rl.resource.expect("a resource");
        assert!(resource.attributes.iter().any(|kv| kv.key == "service.name"));
        for sl in rl.scope_logs {
            assert_eq!(sl.scope.expect("a scope").name.as_deref(), Some("falat"));
            out.extend(sl.log_records);
        }
    }
    for r in &out {
        assert!(r.time_unix_nano.as_ref().is_some_and(vendor::is_u64));
        assert!(r.observed_time_unix_nano.as_ref().is_some_and(vendor::is_u64));
        assert!(r.severity_number.is_some_and(|n| (1..=24).contains(&n)));
        assert!(vendor::is_hex_id(r.trace_id.as_deref().unwrap(), 16), "{:?}", r.trace_id);
        assert!(vendor::is_hex_id(r.span_id.as_deref().unwrap(), 8), "{:?}", r.span_id);
        assert_eq!(r.body.as_ref().unwrap().set_fields(), 1);
        for kv in &r.attributes {
            assert_eq!(kv.value.set_fields(), 1, "{}", kv.key);
            if let Some(i) = &kv.value.int_value {
                assert!(i.as_str().is_some_and(|s| s.parse::<i64>().is_ok()), "int64 as a decimal string: {i}");
            }
        }
    }
    out
}

fn attr<'a>(r: &'a vendor::LogRecord, key: &str) -> &'a vendor::AnyValue {
    &r.attributes.iter().find(|kv| kv.key == key).unwrap_or_else(|| panic!("no attribute {key}")).value
}

#[test]
fn otlp_export_is_an_export_logs_service_request_on_the_decisive_span() {
    let report = json_of(&["diagnose", "--method", "echo", "--format", "json", ANY_AGENT]);
    let body = stdout_of(&["diagnose", "--method", "echo", "--format", "otlp", ANY_AGENT]);
    let records = otlp_records(&body);
    let first = &records[0];
    // 100927429609276267646756448943279827607 in hex.
    assert_eq!(first.trace_id.as_deref(), Some("4bedea77bb33b9c5f280371eae21ea97"));
    assert_eq!(first.span_id.as_deref(), report["decisive_source"]["span_id"].as_str());
    assert_eq!(first.event_name.as_deref(), Some("falat.decisive_error"));
    assert_eq!(
        attr(first, "falat.step").int_value.as_ref().unwrap(),
        &Value::from(report["decisive_step"].to_string())
    );
    assert_eq!(attr(first, "falat.role").string_value.as_deref(), Some("ROOT_CAUSE"));
    assert_eq!(attr(first, "falat.agent").string_value.as_deref(), report["agent"].as_str());
    assert_eq!(attr(first, "falat.category").string_value.as_deref(), report["category"].as_str());
    assert_eq!(attr(first, "falat.confidence").double_value, report["confidence"].as_f64());
    // One record per step with a role, each on its own span.
    assert_eq!(records.len(), report["roles"].as_array().unwrap().len().max(1));
    // An OTLP/JSON trace with hex ids exports them unchanged.
    let records = otlp_records(&stdout_of(&["diagnose", "--method", "echo", "--format", "otlp", OTLP]));
    let src = &json_of(&["diagnose", "--method", "echo", "--format", "json", OTLP])["decisive_source"];
    assert_eq!(records[0].span_id.as_deref(), src["span_id"].as_str());
    assert_eq!(records[0].trace_id.as_deref(), src["trace_id"].as_str());
}

#[test]
fn phoenix_export_is_a_span_annotations_body() {
    let report = json_of(&["diagnose", "--method", "echo", "--format", "json", OPENINFERENCE]);
    let body = stdout_of(&["diagnose", "--format", "phoenix", "--method", "echo,all-at-once", OPENINFERENCE]);
    let req: vendor::AnnotateSpansRequestBody = serde_json::from_str(&body).expect("an AnnotateSpansRequestBody");
    assert_eq!(req.data.len(), 2, "one annotation per method");
    let a = &req.data[0];
    assert_eq!(Some(a.span_id.as_str()), report["decisive_source"]["span_id"].as_str());
    assert!(vendor::is_hex_id(&a.span_id, 8));
    assert_eq!(a.name, "falat.decisive_error");
    assert_eq!(a.annotator_kind, vendor::AnnotatorKind::Code);
    assert_eq!(a.identifier, "echo");
    assert_eq!(req.data[1].identifier, "all-at-once");
    let result = a.result.as_ref().unwrap();
    assert_eq!(result.label.as_deref(), report["category"].as_str());
    assert_eq!(result.score, report["confidence"].as_f64());
    assert!(
        result.explanation.as_deref().unwrap().starts_with(&format!("Decisive step {} by ", report["decisive_step"]))
    );
    assert_eq!(a.metadata.as_ref().unwrap()["step"], report["decisive_step"]);
}

#[test]
fn langfuse_export_is_a_list_of_score_bodies_on_the_trace_and_observation() {
    let report = json_of(&["diagnose", "--method", "echo", "--format", "json", LANGFUSE]);
    let reports: Vec<Value> = match report {
        Value::Array(v) => v,
        one => vec![one],
    };
    let body: Vec<Value> =
        serde_json::from_str(&stdout_of(&["diagnose", "--method", "echo", "--format", "langfuse", LANGFUSE])).unwrap();
    assert_eq!(body.len(), 2 * reports.len(), "a numeric and a categorical score per diagnosis");
    for (pair, r) in body.chunks(2).zip(&reports) {
        let scores: Vec<vendor::CreateScoreRequest> =
            pair.iter().map(|s| serde_json::from_value(s.clone()).expect("a CreateScoreRequest")).collect();
        for s in &scores {
            assert!(s.value_matches_type(), "{s:?}");
            assert_eq!(s.trace_id.as_deref(), r["decisive_source"]["trace_id"].as_str());
            assert_eq!(s.observation_id.as_deref(), r["decisive_source"]["observation_id"].as_str());
            assert!(s.observation_id.is_some());
        }
        assert_eq!(
            (scores[0].name.as_str(), scores[0].data_type.as_ref()),
            ("falat.decisive_error", Some(&vendor::ScoreDataType::Numeric))
        );
        assert_eq!(scores[0].value.as_f64(), r["confidence"].as_f64());
        assert_eq!(scores[1].value.as_str(), r["category"].as_str());
        assert_eq!(scores[1].data_type, Some(vendor::ScoreDataType::Categorical));
    }
}

#[test]
fn an_export_the_trace_has_no_ids_for_says_what_is_missing() {
    for format in ["otlp", "phoenix", "langfuse"] {
        let out = falat().args(["diagnose", "--format", format, WHO_WHEN]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{format}");
        assert!(out.stdout.is_empty());
        let err = String::from_utf8(out.stderr).unwrap();
        let missing =
            if format == "phoenix" { "has no span id, which Phoenix needs" } else { "has no trace id, which " };
        assert!(err.starts_with("falat: trajectory who-and-when-hand-crafted-47 (who-and-when-hand"), "{err}");
        assert!(err.contains(missing), "{format}: {err}");
    }
}
