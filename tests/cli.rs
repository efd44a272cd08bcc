//! The `falat` binary end to end: `inspect` on the bundled samples (text and `--json`), the
//! format override, error exits, `--help` and `--version`.

use std::path::Path;

use assert_cmd::Command;
use falat::ingest::FormatChoice;
use serde_json::Value;

const HAND: &str = "sample_traces/who-and-when-hand-crafted-47.json";
const ALGO: &str = "sample_traces/who-and-when-algorithm-generated-30.json";
const TAU: &str = "sample_traces/tau-bench-retail-task2.json";

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

/// Runs a failing command; returns stderr after checking exit code 2 and an empty stdout.
fn stderr_of(args: &[&str]) -> String {
    let out = falat().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn inspect_hand_crafted_sample() {
    let text = stdout_of(&["inspect", HAND]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("file        {HAND}"));
    assert_eq!(lines[1], "format      who-and-when-hand");
    assert_eq!(lines[6], "agents      human, Orchestrator, WebSurfer, FileSurfer, ComputerTerminal, Assistant");
    assert_eq!(lines[7], "gold        Orchestrator, step 51: The Orchestrator writes incorrect code.");
    assert_eq!(lines[9], "steps       67");
    let steps: Vec<&str> = lines[11..11 + 67].to_vec();
    assert!(steps[0].starts_with("      0  human             message      According to the World Bank"));
    assert!(
        steps[3].starts_with("      3  Orchestrator      delegation   -> WebSurfer: Please navigate to the World Bank")
    );
    // "New plan:" alone says nothing: the lines after it continue the summary.
    assert_eq!(
        steps[51],
        "*    51  Orchestrator      thought      New plan: We are working to address the following user request: \
         According to the World Bank, which …"
    );
    assert_eq!(steps.iter().filter(|l| l.starts_with('*')).count(), 1);
    assert_eq!(lines[11 + 67], "diagnostics none");
    assert_eq!(lines.len(), 11 + 67 + 1);
}

#[test]
fn inspect_algorithm_generated_and_tau_samples() {
    let text = stdout_of(&["inspect", ALGO]);
    assert!(text.contains("\nformat      who-and-when-algorithm\n"));
    assert!(text.contains("\ngold        Culinary_Expert, step 3 [Factual_Error]: "));
    assert!(text.contains("\n      1  Computer_terminal                 tool_result  "));

    let text = stdout_of(&["inspect", TAU]);
    assert!(text.contains("\nformat      tau-bench\ntrajectory  task-2-trial-2\n"));
    assert!(text.contains("\nexpected    10\n"));
    assert!(text.contains("\n     10  assistant  tool_call    find_user_id_by_name_zip({\"first_name\":\"Yusuf\""));
    assert!(text.contains("\n     11  tool       tool_result  yusuf_rossi_9620\n"));
}

#[test]
fn inspect_json_carries_steps_links_and_label() {
    let text = stdout_of(&["inspect", "--json", HAND]);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["format"], "who-and-when-hand");
    let t = &v["trajectories"][0];
    assert_eq!(t["steps"].as_array().unwrap().len(), 67);
    assert_eq!(t["gold"]["agent"], "Orchestrator");
    assert_eq!(t["gold"]["step"], 51);
    assert_eq!(t["steps"][3]["kind"], "delegation");
    assert_eq!(t["steps"][3]["delegate_to"], "WebSurfer");
    assert_eq!(t["metadata"]["level"], "2");
    let raw: Value =
        serde_json::from_slice(&std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(HAND)).unwrap()).unwrap();
    assert_eq!(t["steps"][51]["content"], raw["history"][51]["content"]);
    assert_eq!(v["diagnostics"], Value::Array(vec![]));

    let v: Value = serde_json::from_str(&stdout_of(&["inspect", "--json", TAU])).unwrap();
    let links = v["trajectories"][0]["links"].as_array().unwrap();
    assert_eq!(links.len(), 10);
    assert_eq!(links[0], serde_json::json!({"from": 2, "to": 3, "kind": "tool_result"}));
}

#[test]
fn format_override() {
    let text = stdout_of(&["inspect", "--format", "who-and-when", HAND]);
    assert!(text.contains("\nformat      who-and-when-hand\n"));
    let text = stdout_of(&["inspect", "-f", "magentic-one", HAND]);
    assert!(text.contains("\nformat      magentic-one\n"));

    let err = stderr_of(&["inspect", "--format", "tau-bench", HAND]);
    assert_eq!(
        err,
        format!("falat: {HAND}: as tau-bench: no usable trajectory (record: missing \"traj\"; record skipped)\n")
    );
    let err = stderr_of(&["inspect", "--format", "otlp", HAND]);
    assert!(
        err.contains("unknown format \"otlp\", expected one of: auto, who-and-when, who-and-when-algorithm, who-and-when-hand, magentic-one, swe-agent, mini-swe-agent, openhands, smolagents, pydantic-ai, strands, otel-genai, openinference, any-agent, claude-code, codex, langsmith, langfuse, openai-agents, codex-exec, gemini-cli, google-adk, mlflow, inspect-ai, tau-bench, openai-chat, falat-jsonl"),
        "{err}"
    );
}

#[test]
fn broken_inputs_exit_2_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "[\n  {\"role\": \"user\" \"content\": 1}\n]").unwrap();
    let err = stderr_of(&["inspect", broken.to_str().unwrap()]);
    assert_eq!(
        err,
        format!("falat: {}:2:19: not JSON: expected `,` or `}}`; expected a JSON or JSONL trace\n", broken.display())
    );
    let err = stderr_of(&["inspect", "no/such/file.json"]);
    assert!(err.starts_with("falat: no/such/file.json: cannot read: "), "{err}");
    // eval names a missing folder once, and a file given for a folder as such.
    let err = stderr_of(&["eval", "no/such/dir"]);
    assert!(err.starts_with("falat: no/such/dir: cannot read: "), "{err}");
    assert_eq!(err.matches("no/such/dir").count(), 1, "{err}");
    let err = stderr_of(&["eval", ALGO]);
    assert_eq!(
        err,
        format!(
            "falat: {ALGO}: a file; eval reads labelled benchmark folders (such as data/who-and-when), searched for traces\n"
        )
    );
    // An empty object is described as one; an empty label file is not "unreadable".
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "{}").unwrap();
    let err = stderr_of(&["inspect", empty.to_str().unwrap()]);
    assert!(err.ends_with("; found an empty object\n"), "{err}");
    let err = stderr_of(&["inspect", ALGO, "--labels", empty.to_str().unwrap()]);
    assert_eq!(
        err,
        format!(
            "falat: {}: as labels: expected an AgentRx ground-truth array [{{trajectory_id, failures, root_cause}}] or JSON Lines {{\"trajectory\", \"step\", \"agent\"}}\n",
            empty.display()
        )
    );
}

#[test]
fn trace_text_cannot_reach_the_terminal_raw() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("evil.jsonl");
    let jsonl = "{\"falat\": 1, \"task\": \"\\u001b]52;c;SGVsbG8=\\u0007steal\"}\n\
                 {\"agent\": \"a\\u001b[2J\", \"content\": \"\\u001b[31mred\\u009b1mx\\r\\n\"}\n\
                 {\"agent\": \"b\", \"content\": \"ok\"}\n";
    std::fs::write(&path, jsonl).unwrap();
    let text = stdout_of(&["inspect", path.to_str().unwrap()]);
    assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
    assert!(text.contains("\ntask        steal\n"));
    assert!(text.contains("\n      0  a      message      redx\n"));
}

#[test]
fn help_and_version() {
    let help = stdout_of(&["--help"]);
    assert!(help.contains("inspect"), "{help}");
    assert!(help.contains("Usage: falat"), "{help}");
    let inspect_help = stdout_of(&["inspect", "--help"]);
    for name in FormatChoice::names() {
        assert!(inspect_help.contains(name), "{name} missing from {inspect_help}");
    }
    assert_eq!(stdout_of(&["--version"]), format!("falat {}\n", env!("CARGO_PKG_VERSION")));
    let out = falat().output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn open_rejects_an_unknown_method_before_touching_the_terminal() {
    let err = stderr_of(&["open", "--method", "oracle", HAND]);
    assert!(
        err.contains(
            "unknown method \"oracle\"; one of falat, echo, defa, all-at-once, step-by-step, binary-search, random"
        ),
        "{err}"
    );
}

#[cfg(feature = "llm")]
#[test]
fn dry_run_lists_each_methods_own_questions_without_a_server() {
    let text = stdout_of(&[
        "diagnose",
        "--judge",
        "llm",
        "--model",
        "any-model",
        "--dry-run",
        "--method",
        "echo,all-at-once,defa",
        ALGO,
    ]);
    // A section starts at its `# TRAJECTORY (FILE), method M` line (the table header is `#    kind`).
    let mut sections: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.starts_with("# ") && !line.starts_with("#  ") {
            sections.push(String::new());
        }
        let last = sections.last_mut().expect("output starts with a section line");
        last.push_str(line);
        last.push('\n');
    }
    assert_eq!(sections.len(), 3, "{text}");
    for (section, method, kind) in
        [(0, "echo", "analyst_vote"), (1, "all-at-once", "locate_error"), (2, "defa", "segment_recall")]
    {
        let s = &sections[section];
        assert!(s.lines().next().unwrap().ends_with(&format!("method {method}")), "{s}");
        assert!(s.contains("dry run for model any-model: nothing was sent"), "{s}");
        assert!(s.contains(kind), "{method}: no {kind} question in\n{s}");
        assert!(!s.contains("recall_candidates"), "{method} asks FALAT's questions:\n{s}");
    }
}

/// A build without the `tui` or `llm` feature keeps the options and names the missing feature.
#[cfg(not(feature = "tui"))]
#[test]
fn open_without_the_tui_feature_names_it() {
    for args in [&["open", HAND][..], &[HAND][..]] {
        let err = stderr_of(args);
        assert_eq!(
            err,
            "falat: `falat open` needs the `tui` feature, which this build of falat was compiled without; \
             rebuild with `--features tui` (on by default, e.g. `cargo install falat`)\n"
        );
    }
}

#[cfg(not(feature = "llm"))]
#[test]
fn llm_judge_and_dry_run_without_the_llm_feature_name_it() {
    let err = stderr_of(&["diagnose", "--judge", "llm", "--model", "m", HAND]);
    assert!(err.starts_with("falat: `--judge llm` needs the `llm` feature"), "{err}");
    assert!(err.contains("rebuild with `--features llm`"), "{err}");
    let err = stderr_of(&["diagnose", "--judge", "llm", "--model", "m", "--dry-run", HAND]);
    assert!(err.starts_with("falat: `--dry-run` needs the `llm` feature"), "{err}");
    let err = stderr_of(&["eval", "--judge", "llm", "data/who-and-when/Hand-Crafted"]);
    assert!(err.starts_with("falat: `--judge llm` needs the `llm` feature"), "{err}");
}

/// `falat eval` prints exactly the records `falat::eval::benchmark` gives the accuracy tests: the
/// command and the tests run one evaluation path.
#[test]
fn eval_scores_what_the_library_evaluation_scores() {
    use std::sync::Arc;

    use falat::eval::benchmark::{self, Benchmark, Judges};
    use falat::judge::heuristic::HeuristicJudge;
    use falat::methods::{Method, MethodOptions};

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.jsonl");
    let table =
        stdout_of(&["eval", "data/who-and-when/Hand-Crafted", "-m", "echo,defa", "--out", out.to_str().unwrap()]);
    assert!(table.starts_with("35 trajectories (25 tune, 10 report), ground truth used, judge heuristic\n"), "{table}");
    let lines: Vec<Value> =
        std::fs::read_to_string(&out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bench = Benchmark::load(&[root.join("data/who-and-when/Hand-Crafted")], &[]).unwrap();
    let rows = benchmark::variants(&[Method::Echo, Method::Defa], &[]);
    let judges = Judges::shared(Arc::new(HeuristicJudge));
    let records = benchmark::evaluate(&bench.cases, &rows, &judges, &MethodOptions::new(true), 1, &|_, _| {});
    assert_eq!(lines.len(), 70);
    assert_eq!(records.len(), 70);
    for (line, r) in lines.iter().zip(&records) {
        assert!(r.file.ends_with(line["file"].as_str().unwrap()), "{} vs {}", r.file, line["file"]);
        assert_eq!(line["method"], r.method.name());
        assert_eq!(line["part"], r.part.map_or("", falat::eval::Part::as_str));
        assert_eq!(line["pred_step"].as_u64().map(|s| s as usize), r.pred_step, "{}", r.file);
        assert_eq!(line["pred_agent"].as_str(), r.pred_agent.as_deref(), "{}", r.file);
        assert_eq!(line["gold_step"].as_u64().map(|s| s as usize), r.gold_step);
        assert_eq!((line["agent_hit"].as_bool(), line["step_hit"].as_bool()), (Some(r.agent_hit), Some(r.step_hit)));
    }
    // The floors of tests/methods_accuracy.rs for the hand-crafted runs.
    let hits = |m: &str| records.iter().filter(|r| r.method == m && r.step_hit).count();
    assert!(hits("echo") >= 7 && hits("defa") >= 7, "{} {}", hits("echo"), hits("defa"));
}

#[test]
fn eval_reports_unusable_files_and_scores_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("Hand-Crafted");
    std::fs::create_dir(&set).unwrap();
    for n in ["1", "3"] {
        std::fs::copy(format!("data/who-and-when/Hand-Crafted/{n}.json"), set.join(format!("{n}.json"))).unwrap();
    }
    std::fs::write(set.join("7.json"), "{\n  \"history\": [\n    {\"role\" 1}\n  ]\n}").unwrap();
    std::fs::write(set.join("9.jsonl"), "{\"agent\": \"a\", \"content\": \"no label\"}\n").unwrap();
    let out = falat().args(["eval", "--per-file"]).arg(dir.path()).output().unwrap();
    // The table of the readable runs is printed; the unreadable file makes the status 2.
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8(out.stderr).unwrap();
    let shown = |n: &str| set.join(n).display().to_string();
    assert_eq!(
        err,
        format!(
            "falat: {}:3:13: not JSON: expected `:`; expected a JSON or JSONL trace; skipped\n\
             falat: {}: 9: no gold label with a step; skipped\n",
            shown("7.json"),
            shown("9.jsonl")
        )
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("2 trajectories (2 tune, 0 report), ground truth used, judge heuristic\n"), "{text}");
    let per_file: Vec<Vec<&str>> = text
        .lines()
        .skip_while(|l| !l.contains("pred agent"))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(per_file.len(), 2, "{text}");
    assert_eq!(per_file[0][4..], ["12", "WebSurfer", "12", "WebSurfer", "AS"]);
    assert_eq!(per_file[1][4..], ["12", "WebSurfer", "32", "WebSurfer", "A-"]);
}

#[test]
fn eval_limit_takes_the_first_runs_of_each_subset() {
    let text = stdout_of(&["eval", "data/who-and-when", "--limit", "2", "--per-file", "-m", "falat,random"]);
    assert!(text.starts_with("4 trajectories (4 tune, 0 report), ground truth used, judge heuristic\n"), "{text}");
    let per_file: Vec<String> = text
        .lines()
        .skip_while(|l| !l.contains("pred agent"))
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        per_file,
        [
            // This run has no candidate and its ranking between steps 0 and 4 is a 0.001 tie
            // (docs/RANKER.md): step 4 from the refit on the claimed-lookup finding until the refit
            // on quoted strings paired in order, step 0 before and after.
            "falat Algorithm-Generated tune data/who-and-when/Algorithm-Generated/1.json 0 Excel_Expert 0 Excel_Expert AS",
            "random Algorithm-Generated tune data/who-and-when/Algorithm-Generated/1.json 5 DataVerification_Expert 0 Excel_Expert --",
            "falat Algorithm-Generated tune data/who-and-when/Algorithm-Generated/5.json 1 Gaming_Awards_Expert 3 DataVerification_Expert --",
            "random Algorithm-Generated tune data/who-and-when/Algorithm-Generated/5.json 8 DataVerification_Expert 3 DataVerification_Expert A-",
            "falat Hand-Crafted tune data/who-and-when/Hand-Crafted/1.json 12 WebSurfer 12 WebSurfer AS",
            "random Hand-Crafted tune data/who-and-when/Hand-Crafted/1.json 18 Orchestrator 12 WebSurfer --",
            "falat Hand-Crafted tune data/who-and-when/Hand-Crafted/3.json 12 WebSurfer 32 WebSurfer A-",
            "random Hand-Crafted tune data/who-and-when/Hand-Crafted/3.json 54 Orchestrator 32 WebSurfer --",
        ]
    );
}

#[cfg(feature = "llm")]
#[test]
fn eval_dry_run_counts_each_runs_requests_without_a_server() {
    let text = stdout_of(&[
        "eval",
        "--judge",
        "llm",
        "--model",
        "tiny",
        "--dry-run",
        "--limit",
        "1",
        "-m",
        "falat,echo",
        "data/who-and-when",
    ]);
    let rows: Vec<String> = text.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    assert_eq!(rows[0], "dry run for model tiny: nothing was sent");
    // 7104 prompt tokens (total 84615) until the ranker was refitted on the claimed-lookup
    // finding, 7126 (total 84637; the hand-crafted run 19141) until quoted strings were paired in
    // order and the ranker refitted: its probabilities choose what FALAT asks about this run, and
    // the values a prompt lists come from the quotes.
    assert_eq!(rows[2], "falat Algorithm-Generated data/who-and-when/Algorithm-Generated/1.json 5 7104");
    assert_eq!(rows[3], "echo Algorithm-Generated data/who-and-when/Algorithm-Generated/1.json 6 21322");
    assert_eq!(rows[4], "falat Hand-Crafted data/who-and-when/Hand-Crafted/1.json 10 19208");
    assert_eq!(rows[5], "echo Hand-Crafted data/who-and-when/Hand-Crafted/1.json 6 37048");
    assert_eq!(rows[7], "total: 27 calls, 84682 prompt tokens (completion tokens are not counted)");
    assert_eq!(rows[9], "falat Algorithm-Generated 1 5.0 5 7104 7104");
}

/// `--dry-run` counts the LLM judge's requests in `diagnose` and `eval` alike: with `--judge llm`
/// or without `--judge` the same, and with another judge named an error. Before, `eval --dry-run`
/// refused without `--judge llm` while `diagnose --dry-run` went on.
#[cfg(feature = "llm")]
#[test]
fn dry_run_is_the_llm_judges_in_diagnose_and_eval_alike() {
    let eval = ["eval", "--model", "tiny", "--dry-run", "--limit", "1", "data/who-and-when"];
    let diagnose = ["diagnose", "--model", "tiny", "--dry-run", HAND];
    for args in [&eval[..], &diagnose[..]] {
        let without = stdout_of(args);
        assert!(without.contains("dry run for model tiny: nothing was sent"), "{without}");
        let with_llm = stdout_of(&[args, &["--judge", "llm"][..]].concat());
        assert_eq!(without, with_llm, "{args:?}");
        for judge in ["heuristic", "fitted"] {
            let err = stderr_of(&[args, &["--judge", judge][..]].concat());
            assert_eq!(
                err,
                format!(
                    "falat: --dry-run counts the LLM judge's requests and --judge {judge} sends none: leave --judge out \
                     or use --judge llm\n"
                )
            );
        }
    }
}

/// Library warnings (`tracing`) reach stderr, never stdout; `RUST_LOG` chooses what is shown.
#[test]
fn warnings_go_to_stderr_and_rust_log_filters_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    std::fs::write(
        &path,
        "{\"falat\": 1, \"task\": \"t\"}\n{\"agent\": \"a\", \"content\": \"hello\"}\nnot json\n{\"agent\": \"b\", \"content\": \"7\"}\n",
    )
    .unwrap();
    let run = |rust_log: Option<&str>, verbose: bool| {
        let mut cmd = falat();
        match rust_log {
            Some(v) => cmd.env("RUST_LOG", v),
            None => cmd.env_remove("RUST_LOG"),
        };
        if verbose {
            cmd.arg("-v");
        }
        let out = cmd.env("NO_COLOR", "1").args(["diagnose", path.to_str().unwrap()]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
    };
    let warning = format!(
        "falat: warning: {}: line 3: skipped: not JSON at column 2: no JSON value here (an object, an array, a string, a number, true, false or null)\n",
        path.display()
    );
    let (stdout, stderr) = run(None, false);
    assert_eq!(stderr, warning);
    assert!(stdout.starts_with("# falat diagnosis: run\n") && !stdout.contains("falat: warning"), "{stdout}");
    assert_eq!(run(None, true).1, warning);
    assert_eq!(run(Some("off"), false).1, "");
    assert_eq!(
        run(Some("bad["), false).1,
        format!("falat: warning: RUST_LOG is not a valid filter (invalid filter directive); using \"warn\"\n{warning}")
    );
}

/// The LLM client's retry warnings reach stderr; the API key never does, at any log level.
#[cfg(feature = "llm")]
#[test]
fn llm_client_warnings_reach_stderr_without_the_api_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("falat.toml");
    std::fs::write(&config, "[llm]\nretries = 1\ntimeout_secs = 5\n").unwrap();
    // A port nothing listens on: the connection is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let key = "sk-falat-test-0123456789abcdef";
    let out = falat()
        .env("FALAT_TEST_SECRET_KEY", key)
        .env("RUST_LOG", "trace")
        .env("NO_COLOR", "1")
        .args(["diagnose", "--judge", "llm", "--model", "m", "--api-key-env", "FALAT_TEST_SECRET_KEY"])
        .args(["--llm-url", &format!("http://127.0.0.1:{port}/v1"), "--llm-config", config.to_str().unwrap(), ALGO])
        .output()
        .unwrap();
    // The server check before any work fails: exit 2 (see the next test).
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert!(stderr.contains("falat: warning: llm call failed (unreachable), retrying in "), "{stderr}");
    assert!(!stdout.contains("retrying in"), "{stdout}");
    assert!(!stderr.contains(key) && !stdout.contains(key), "the key leaked");
}

/// A one-shot HTTP server on 127.0.0.1 answering every request with `status` and `body` (at most
/// `max` requests, then its thread ends).
#[cfg(feature = "llm")]
fn http_server(max: usize, status: u16, body: &'static str) -> String {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten().take(max) {
            let mut buf = [0u8; 65536];
            let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// `--judge llm` checks the server before any work: unreachable or a refused key stops the
/// command at once with exit 2 and one line naming the URL and the cause; `--llm-fallback
/// heuristic` goes on offline and the report names that judge.
#[cfg(feature = "llm")]
#[test]
fn llm_judge_fails_fast_on_an_unreachable_server_or_a_wrong_key() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let t0 = std::time::Instant::now();
    let out = falat()
        .env_remove("OPENAI_API_KEY")
        .args(["diagnose", "--judge", "llm", "--model", "m", "--llm-url", &url, HAND])
        .output()
        .unwrap();
    assert!(t0.elapsed() < std::time::Duration::from_secs(8), "{:?}", t0.elapsed());
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "no report");
    let stderr = String::from_utf8(out.stderr).unwrap();
    // The error line; warnings are `falat: warning: …`.
    let last: Vec<&str> =
        stderr.lines().filter(|l| l.starts_with("falat: ") && !l.starts_with("falat: warning: ")).collect();
    assert_eq!(last.len(), 1, "{stderr}");
    assert!(
        last[0].starts_with(&format!("falat: cannot reach the LLM server at {url}/chat/completions (")),
        "{stderr}"
    );
    assert!(last[0].contains("--llm-fallback heuristic"), "{stderr}");

    let key = "sk-falat-wrong-0123456789abcdef";
    let keyed = http_server(4, 401, r#"{"error": {"message": "Invalid API Key", "type": "authentication_error"}}"#);
    let out = falat()
        .env("OPENAI_API_KEY", key)
        .args(["diagnose", "--judge", "llm", "--model", "m", "--llm-url", &keyed, HAND])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(&format!("falat: the LLM server at {keyed}/chat/completions rejected the API key (HTTP 401)")),
        "{stderr}"
    );
    assert!(!stderr.contains(key), "the key was printed");

    let out = falat()
        .env_remove("OPENAI_API_KEY")
        .args(["diagnose", "--judge", "llm", "--model", "m", "--llm-url", &url, "--llm-fallback", "heuristic", HAND])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("(judge: heuristic (LLM unreachable))"), "{stdout}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("--llm-fallback heuristic: the offline judge answers instead"), "{stderr}");
}

#[test]
fn verbose_flags_may_come_before_a_trace() {
    let args = |v: &[&str]| v.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
    assert_eq!(falat::cli::normalize_args(args(&["falat", "-v", "t.json"])), args(&["falat", "-v", "open", "t.json"]));
    assert_eq!(falat::cli::normalize_args(args(&["falat", "-vv", "eval", "d"])), args(&["falat", "-vv", "eval", "d"]));
    assert_eq!(falat::cli::normalize_args(args(&["falat", "t.json"])), args(&["falat", "open", "t.json"]));
    // `-` is standard input: `falat -` opens the piped trace (issue 28).
    assert_eq!(falat::cli::normalize_args(args(&["falat", "-"])), args(&["falat", "open", "-"]));
    assert_eq!(falat::cli::normalize_args(args(&["falat", "-v", "-"])), args(&["falat", "-v", "open", "-"]));
    // A file without an extension that exists is a trace too; a bare word that names no file is
    // left to clap as a command.
    assert_eq!(falat::cli::normalize_args(args(&["falat", "README.md"])), args(&["falat", "open", "README.md"]));
    assert_eq!(falat::cli::normalize_args(args(&["falat", "src"])), args(&["falat", "open", "src"]));
    assert_eq!(
        falat::cli::normalize_args(args(&["falat", "diagnos", "t.json"])),
        args(&["falat", "diagnos", "t.json"])
    );
}

/// `--trace-format` names the trace format in every command (`diagnose` keeps `--format` for the
/// report's).
#[test]
fn trace_format_is_accepted_by_inspect_as_by_diagnose() {
    let text = stdout_of(&["inspect", "--trace-format", "tau-bench", TAU]);
    assert!(text.contains("\nformat      tau-bench\n"), "{text}");
    let err = stderr_of(&["inspect", "--trace-format", "codex", TAU]);
    assert!(err.contains("codex"), "{err}");
}

/// A mistyped command is reported as one, with the command it resembles, not read as a trace.
#[test]
fn a_mistyped_command_is_named_with_a_suggestion() {
    let out = falat().args(["diagnos", ALGO]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("unrecognized subcommand 'diagnos'"), "{err}");
    assert!(err.contains("a similar subcommand exists: 'diagnose'"), "{err}");
}

#[cfg(feature = "llm")]
#[test]
fn eval_names_questions_missing_from_the_replay_folder() {
    let runs = tempfile::tempdir().unwrap();
    let subset = runs.path().join("Algorithm-Generated");
    std::fs::create_dir(&subset).unwrap();
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(ALGO), subset.join("30.json")).unwrap();
    let replay = tempfile::tempdir().unwrap();
    std::fs::write(replay.path().join("x.jsonl"), "{\"key\": \"0\", \"response\": {\"content\": \"{}\"}}\n").unwrap();
    let out = falat()
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .args(["eval", runs.path().to_str().unwrap(), "--judge", "llm", "--model", "m", "--replay"])
        .arg(replay.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr.lines().find(|l| l.contains("not in the replay folder")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.starts_with("falat: "), "{line}");
    assert!(line.contains(" questions of 1 run were not in the replay folder "), "{line}");
    assert!(
        line.ends_with(
            "the heuristic judge answered them instead (to record them, run again with a server and --record)"
        ),
        "{line}"
    );
}

#[test]
fn diagnose_reports_the_readable_files_and_names_the_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.json");
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(ALGO)).unwrap();
    std::fs::write(&broken, &text[..text.len() / 2]).unwrap();
    let out = falat().args(["diagnose", ALGO]).arg(&broken).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("# falat diagnosis: "), "{stdout}");
    assert_eq!(stdout.matches("# falat diagnosis: ").count(), 1, "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr.lines().find(|l| l.contains("broken.json")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.starts_with("falat: ") && line.contains("not JSON") && line.ends_with("; skipped"), "{line}");
    // Alone, the broken file is an error as before.
    let out = falat().arg("diagnose").arg(&broken).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn diagnose_says_that_overrides_saved_by_the_tui_are_not_applied() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run.json");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(ALGO), &trace).unwrap();
    let quiet = falat().arg("diagnose").arg(&trace).output().unwrap();
    assert!(quiet.status.success());
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("overrides"));
    std::fs::write(dir.path().join("run.json.falat.json"), "{}").unwrap();
    let out = falat().arg("diagnose").arg(&trace).output().unwrap();
    assert!(out.status.success());
    // The verdict is the machine's either way (the cost table's times differ between runs).
    let verdict =
        |o: &[u8]| String::from_utf8_lossy(o).lines().find(|l| l.starts_with("**Decisive step")).map(String::from);
    assert!(verdict(&quiet.stdout).is_some());
    assert_eq!(verdict(&out.stdout), verdict(&quiet.stdout));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "run.json.falat.json: overrides saved by the TUI are not applied here; this report is the machine's verdict"
        ),
        "{stderr}"
    );
}

#[test]
fn labels_files_show_gold_beside_inspect_and_diagnose_and_never_change_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    // falat labels JSONL for the τ-bench sample: its id, falat's 0-based step 10, a reason.
    let labels = dir.path().join("labels.jsonl");
    std::fs::write(
        &labels,
        "{\"trajectory\": \"task-2-trial-2\", \"step\": 10, \"agent\": \"assistant\", \"reason\": \"wrong user\"}\nnot json\n",
    )
    .unwrap();
    let l = labels.to_str().unwrap();
    let out = falat().args(["inspect", TAU, "--labels", l]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("\ngold        assistant, step 10: wrong user\n"), "{text}");
    // The record that is not a label is named with its line; the rest is kept.
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("labels.jsonl:2: "), "{err}");

    let plain = stdout_of(&["diagnose", TAU]);
    let out = falat().args(["diagnose", TAU, "--labels", l]).output().unwrap();
    assert!(out.status.success());
    let labelled = String::from_utf8(out.stdout).unwrap();
    assert!(labelled.contains("\nGold label: step 10 by assistant\n"), "{labelled}");
    assert!(!plain.contains("Gold label"));
    // The verdict is the same with and without labels: they only show beside it. The whole JSON
    // report but the label and the timings is equal.
    let verdict = |r: &str| r.lines().find(|l| l.starts_with("**Decisive step")).map(str::to_string);
    assert_eq!(verdict(&plain), verdict(&labelled));
    assert!(verdict(&plain).is_some());
    let json = |args: &[&str]| {
        let mut v: Value = serde_json::from_str(&stdout_of(args)).unwrap();
        let o = v[0].as_object_mut().unwrap();
        assert!(o.remove("gold").is_some() && o.remove("cost").is_some());
        v
    };
    assert_eq!(
        json(&["diagnose", TAU, "--format", "json"]),
        json(&["diagnose", TAU, "--format", "json", "--labels", l])
    );

    // AgentRx ground truth applies by task id, message numbers mapped to steps.
    let rx = "data/agentrx-tau/tau_ground_truth.json";
    let report =
        stdout_of(&["diagnose", "data/agentrx-tau/tau_dataset_failed.json", "--labels", rx, "--format", "json"]);
    let reports: Value = serde_json::from_str(&report).unwrap();
    let golds: Vec<(String, Option<u64>)> = reports
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| {
            let id = d["trajectory"]["id"].as_str()?.to_string();
            Some((id, d["gold"]["step"].as_u64()))
        })
        .collect();
    assert!(golds.contains(&("task-41-trial-41".to_string(), Some(16))), "{golds:?}");
    // A label whose agent is not the one at its step is kept, and said.
    let out = falat().args(["inspect", "data/agentrx-tau/tau_dataset_failed.json", "--labels", rx]).output().unwrap();
    assert!(out.status.success());
    // The annotator's reason counts steps from 1 as AgentRx does; the gold line says so.
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(
        text.contains(
            "Assistant, step 6 [Misinterpretation of Tool Output]: AgentRx message 7 (counted from 1): At step 7,"
        ),
        "{text}"
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("the label of task-80-trial-80 names agent Assistant at step 25, which user took; kept as given"),
        "{err}"
    );

    // A label file that names none of the trace's runs says so, with the ids it has.
    let other = dir.path().join("other.jsonl");
    std::fs::write(&other, "{\"trajectory\": \"nope\", \"step\": 1, \"agent\": \"a\"}\n").unwrap();
    let out = falat().args(["inspect", TAU, "--labels", other.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("none of its 1 labels names a trajectory of this trace (its ids: task-2-trial-2)"), "{err}");

    // Over several traces the label file is read once: its skipped record is said once, and a
    // trace it does not name is said with the trace's path.
    let out = falat().args(["diagnose", TAU, ALGO, "--labels", l]).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.matches("labels.jsonl:2: ").count(), 1, "{err}");
    assert!(err.contains(&format!("falat: {ALGO}: {l}: none of its 1 labels names a trajectory")), "{err}");

    // A file that is not a label file is an error naming it.
    let err = stderr_of(&["inspect", TAU, "--labels", ALGO]);
    assert!(err.contains(ALGO) && err.contains("as labels"), "{err}");
}

#[test]
fn eval_exits_0_when_the_runs_it_leaves_out_are_only_unlabelled() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("Algorithm-Generated");
    std::fs::create_dir(&sub).unwrap();
    std::fs::copy(ALGO, sub.join("30.json")).unwrap();
    // The τ-bench sample has no gold label: left out, named, and no error status.
    std::fs::copy(TAU, sub.join("tau.json")).unwrap();
    let out = falat().args(["eval", dir.path().to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.starts_with("1 trajectory (0 tune, 1 report)"), "{table}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("tau.json: task-2-trial-2: no gold label with a step; skipped"), "{err}");
}

// ----- falat in a script's workflow: writes that never destroy, names sanitised -----

/// Whether `s` holds a character a terminal acts on: ESC, BEL, a C1 control or a bidi override.
fn has_terminal_controls(s: &str) -> bool {
    s.chars().any(|c| c == '\u{1b}' || c == '\u{7}' || falat::text::is_terminal_control(c))
}

#[cfg(unix)]
#[test]
fn diagnose_output_through_a_symlink_writes_the_target_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("real.md");
    std::fs::write(&target, "old").unwrap();
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = falat().args(["diagnose", ALGO, "-o"]).arg(&link).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
    assert!(std::fs::read_to_string(&target).unwrap().starts_with("# falat diagnosis: "));
    // `/dev/stdout`-like: a link to a FIFO nobody reads is refused, and stays as it was.
    let fifo = dir.path().join("pipe");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let to_fifo = dir.path().join("stdout");
    std::os::unix::fs::symlink(&fifo, &to_fifo).unwrap();
    let err = stderr_of(&["diagnose", ALGO, "-o", to_fifo.to_str().unwrap()]);
    assert!(err.contains("it is a FIFO that no process is reading"), "{err}");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&to_fifo).unwrap().file_type().is_symlink());
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    // With a reader, the report goes through the FIFO.
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let mut written = false;
    for _ in 0..300 {
        let out = falat().args(["diagnose", ALGO, "--format", "jsonl", "-o"]).arg(&to_fifo).output().unwrap();
        if out.status.success() {
            written = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(written);
    let through = reader.join().unwrap();
    let v: Value = serde_json::from_str(through.trim_end()).unwrap();
    assert_eq!(v["schema"], "falat.diagnosis/v1");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "still a FIFO");
}

/// An output file that cannot be created is named with what is wrong, in the user's terms, the
/// same for `diagnose -o`, `eval --out` and `train -o`; nothing depends on running as root.
#[test]
fn an_output_that_cannot_be_created_says_why_in_the_user_s_terms() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes");
    std::fs::write(&file, "a file").unwrap();
    let d = file.display();
    let set = dir.path().join("set").join("Algorithm-Generated");
    std::fs::create_dir_all(&set).unwrap();
    std::fs::copy(ALGO, set.join("30.json")).unwrap();
    let set = dir.path().join("set");
    let under_file = file.join("report.md");
    let missing = dir.path().join("gone").join("deeper").join("report.md");
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["diagnose".into(), ALGO.into(), "-o".into(), under_file.display().to_string()],
            format!("falat: cannot write {}: {d} is a file, not a folder\n", under_file.display()),
        ),
        (
            vec!["diagnose".into(), ALGO.into(), "-o".into(), missing.display().to_string()],
            format!(
                "falat: cannot write {}: the folder {} does not exist\n",
                missing.display(),
                dir.path().join("gone").display()
            ),
        ),
        (
            vec!["eval".into(), set.display().to_string(), "--out".into(), under_file.display().to_string()],
            format!("falat: cannot write {}: {d} is a file, not a folder\n", under_file.display()),
        ),
        (
            vec![
                "train".into(),
                set.display().to_string(),
                "-o".into(),
                file.join("m").join("model.json").display().to_string(),
            ],
            format!("falat: cannot create the folder {}: {d} is a file, not a folder\n", file.join("m").display()),
        ),
    ];
    for (args, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(stderr_of(&args), want, "{args:?}");
    }
    // A folder that exists but takes no new files: /proc, where the kernel allows none, root or
    // not ("No such file or directory" was all the OS said).
    if Path::new("/proc/self").is_dir() {
        let err = stderr_of(&["diagnose", ALGO, "-o", "/proc/x.md"]);
        assert_eq!(
            err,
            "falat: cannot write /proc/x.md: the folder /proc exists but is not an ordinary folder: no file can be \
             created in it (a system folder such as /proc or /sys)\n"
        );
    } else {
        eprintln!("no /proc here: its case is skipped");
    }
}

#[cfg(unix)]
#[test]
fn eval_out_through_a_symlink_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("set").join("Algorithm-Generated");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::copy(ALGO, sub.join("30.json")).unwrap();
    let target = dir.path().join("results.jsonl");
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    std::fs::write(&target, "").unwrap();
    let out = falat().arg("eval").arg(dir.path().join("set")).arg("--out").arg(&link).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    let lines: Vec<Value> =
        std::fs::read_to_string(&target).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 1);
    assert!(lines[0]["file"].as_str().unwrap().ends_with("Algorithm-Generated/30.json"), "{}", lines[0]);
}

#[test]
fn a_dash_is_standard_input_and_standard_output() {
    let trace = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(ALGO)).unwrap();
    let out = falat().args(["inspect", "-"]).write_stdin(trace.clone()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("file        <stdin>\nformat      who-and-when-algorithm\n"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let out = falat()
        .current_dir(dir.path())
        .args(["diagnose", "-", "--format", "json", "-o", "-"])
        .write_stdin(trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let from_file: Value = serde_json::from_str(&stdout_of(&["diagnose", ALGO, "--format", "json"])).unwrap();
    assert_eq!((&v[0]["decisive_step"], &v[0]["agent"]), (&from_file[0]["decisive_step"], &from_file[0]["agent"]));
    assert_eq!(v[0]["decisive_step"], 4, "{v}");
    assert_eq!(v[0]["trajectory"]["id"], "<stdin>");
    assert!(!dir.path().join("-").exists(), "no file named -");
}

#[test]
fn jsonl_has_one_diagnosis_per_trajectory_and_method_per_line_and_json_is_always_an_array() {
    let out = stdout_of(&["diagnose", ALGO, TAU, "-m", "falat,random", "--format", "jsonl"]);
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let got: Vec<(String, String)> = lines
        .iter()
        .map(|v| (v["trajectory"]["id"].as_str().unwrap().to_string(), v["method"].as_str().unwrap().to_string()))
        .collect();
    let algo_id = lines[0]["trajectory"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        got,
        [
            (algo_id.clone(), "falat".to_string()),
            (algo_id, "random".to_string()),
            ("task-2-trial-2".to_string(), "falat".to_string()),
            ("task-2-trial-2".to_string(), "random".to_string())
        ]
    );
    assert!(lines.iter().all(|v| v["schema"] == "falat.diagnosis/v1"));
    let one: Value = serde_json::from_str(&stdout_of(&["diagnose", ALGO, "--format", "json"])).unwrap();
    let two: Value =
        serde_json::from_str(&stdout_of(&["diagnose", ALGO, "-m", "falat,echo", "--format", "json"])).unwrap();
    assert_eq!((one.as_array().map(Vec::len), two.as_array().map(Vec::len)), (Some(1), Some(2)));
}

#[test]
fn method_all_headings_name_each_method() {
    let md = stdout_of(&["diagnose", ALGO, "--method", "all"]);
    let headings: Vec<&str> = md.lines().filter(|l| l.starts_with("# falat diagnosis: ")).collect();
    let methods: Vec<&str> =
        headings.iter().map(|h| h.rsplit_once("(method ").unwrap().1.trim_end_matches(')')).collect();
    assert_eq!(
        methods,
        ["falat", "echo", "defa", "all-at-once", "step-by-step", "binary-search", "random"],
        "{headings:?}"
    );
    // One method: the heading is the trajectory's alone.
    let md = stdout_of(&["diagnose", ALGO]);
    assert!(!md.lines().next().unwrap().contains("(method"), "{md}");
}

#[test]
fn diagnose_over_a_glob_skips_falat_s_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run.json");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(ALGO), &trace).unwrap();
    let own = ["run.json.falat.json", "run.json.falat.json.bak", "run.json.falat.report.json"];
    for name in own {
        std::fs::write(dir.path().join(name), "{\"schema\": \"falat.overrides/v2\"}").unwrap();
    }
    // What `diagnose dir/*` passes: every file of the folder.
    let mut cmd = falat();
    cmd.args(["diagnose", "--format", "jsonl"]).arg(&trace);
    for name in own {
        cmd.arg(dir.path().join(name));
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 1);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("run.json.falat.json: falat's own overrides file, not a trace; skipped"), "{err}");
    assert!(err.contains("run.json.falat.json.bak: falat's own overrides backup, not a trace; skipped"), "{err}");
    assert!(err.contains("run.json.falat.report.json: falat's own exported report, not a trace; skipped"), "{err}");
}

#[test]
fn eval_walks_a_folder_with_a_symlink_loop_and_reads_each_file_once() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("Algorithm-Generated");
    std::fs::create_dir(&sub).unwrap();
    std::fs::copy(ALGO, sub.join("30.json")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("..", sub.join("back")).unwrap();
    let jsonl = dir.path().join("out.jsonl");
    let out = falat().arg("eval").arg(dir.path()).arg("--out").arg(&jsonl).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8(out.stdout).unwrap().starts_with("1 trajectory (0 tune, 1 report)"));
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap().lines().count(), 1);
}

#[test]
fn names_and_keys_reach_the_terminal_sanitised_and_json_escaped() {
    let dir = tempfile::tempdir().unwrap();
    // A file name and object keys that would set the clipboard (OSC 52), add a hyperlink (OSC 8),
    // clear the screen (C1 CSI) and reverse the text (bidi override).
    let name = "evil\u{1b}]52;c;SGVsbG8=\u{7}\u{202e}.json";
    let path = dir.path().join(name);
    std::fs::write(&path, "{\"k\\u001b]8;;http://x\\u0007\": 1, \"\\u009b2Jclear\": 2, \"\\u202egnp.exe\": 3}")
        .unwrap();
    let err = stderr_of(&["inspect", path.to_str().unwrap()]);
    assert!(err.contains("an object with keys [k, clear, gnp.exe]"), "{err:?}");
    assert!(!has_terminal_controls(&err), "{err:?}");
    // Among several traces the same message goes through the skip note.
    let out = falat().args(["diagnose", ALGO]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("; skipped") && !has_terminal_controls(&err), "{err:?}");
    // The `wrote` line names the file sanitised.
    let report = dir.path().join("r\u{1b}]8;;x\u{7}.md");
    let out = falat().args(["diagnose", ALGO, "-o"]).arg(&report).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(said.starts_with("wrote ") && !has_terminal_controls(&said), "{said:?}");
    assert!(report.exists());
    // JSON output keeps the strings but escapes C1 controls and bidi overrides.
    let trace = dir.path().join("t.jsonl");
    std::fs::write(
        &trace,
        "{\"falat\": 1, \"task\": \"t\\u0085ask\"}\n{\"agent\": \"a\\u202e\", \"content\": \"x\\u009b2Jy\\u2066z\"}\n",
    )
    .unwrap();
    for args in [vec!["inspect", "--json"], vec!["diagnose", "--format", "json"], vec!["diagnose", "--format", "jsonl"]]
    {
        let text = stdout_of(&[args.as_slice(), &[trace.to_str().unwrap()]].concat());
        assert!(!has_terminal_controls(&text), "{args:?}: {text:?}");
        assert!(text.contains("\\u202e"), "{args:?}: {text}");
    }
    let v: Value = serde_json::from_str(&stdout_of(&["inspect", "--json", trace.to_str().unwrap()])).unwrap();
    assert_eq!(v["trajectories"][0]["steps"][0]["content"], "x\u{9b}2Jy\u{2066}z", "the value is unchanged");
}

#[test]
fn a_report_says_which_lines_of_a_truncated_trace_were_skipped() {
    // A JSON Lines trace cut in the middle of its last line (a copy stopped half-way): the
    // report must not read like one of the whole file.
    let dir = tempfile::tempdir().unwrap();
    let full = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus/claude-code/spotter_short.jsonl"),
    )
    .unwrap();
    let lines: Vec<&str> = full.lines().collect();
    let cut = format!("{}\n{}", lines[..8].join("\n"), &lines[8][..lines[8].len() / 2]);
    let trace = dir.path().join("cut.jsonl");
    std::fs::write(&trace, cut).unwrap();
    let report = dir.path().join("report.json");
    // `--out` is the same option as `--output`, as in `falat eval`.
    let out = falat()
        .args(["diagnose", trace.to_str().unwrap(), "--format", "json", "--out", report.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let warnings: Vec<&str> = v[0]["warnings"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    // The cut line is placed among the steps: it came after the last one read.
    let said = "loading: line 9 (after step 3, the last): skipped: not JSON";
    assert!(warnings.first().is_some_and(|w| w.starts_with(said)), "{warnings:?}");
    let md = stdout_of(&["diagnose", trace.to_str().unwrap()]);
    assert!(md.contains(&format!("- {said}")), "{md}");
    assert!(md.contains("could not be read (line 9)"), "{md}");
}

#[test]
fn a_no_failure_report_says_its_ranking_is_no_sign_of_a_failure() {
    // Two steps, nothing wrong: the softmax still gives one step P 1.00.
    let md =
        stdout_of(&["diagnose", "tests/fixtures/corpus/openinference/genai-interlingua_openinference_in.otlp.json"]);
    assert!(md.contains("No failure found"), "{md}");
    let ranked = &md[md.find("## Ranked steps").expect("a ranking")..];
    assert!(ranked.contains("a high `P` is no sign of a failure"), "{ranked}");
    assert!(ranked.contains("| 1 | 1 | assistant | 1.00 |"), "{ranked}");
}

/// A tool result whose text opens with an error is marked `!` by `inspect` even when the format
/// has no error flag (an OpenAI chat tool message is only text): the analysis reads it as an error
/// too, so the step list must not look clean where the verdict sees a failure.
#[test]
fn inspect_marks_an_error_written_in_a_tool_body() {
    let text =
        stdout_of(&["inspect", "tests/fixtures/handbuilt/openai-chat/cancel_rejected_in_json_body.openai-chat.json"]);
    let line =
        "!     3  tool       tool_result  {\"error\": \"order 4411 already shipped, cannot cancel\", \"status\": 409}";
    assert!(text.lines().any(|l| l == line), "{line}\nin\n{text}");
    assert!(
        text.lines().any(|l| l == "      2  assistant  tool_call    cancel_order({\"order_id\": \"4411\"})"),
        "{text}"
    );
    // A tool result that mentions an error further on is data, not a failed call.
    let text = stdout_of(&["inspect", "tests/fixtures/handbuilt/first-user/r05_wrong_id.openai.json"]);
    assert!(!text.lines().any(|l| l.starts_with('!')), "{text}");
}

/// A span format keeps only a tool call's arguments as its content: `inspect` names the tool, a
/// supervisor's hand-off tool included (`transfer_to_researcher({})` instead of `{}`), while an
/// OpenAI chat call, which already starts with its tool's name, reads as before.
#[test]
fn inspect_shows_a_tool_call_as_its_tool_and_its_arguments() {
    let text = stdout_of(&["inspect", "tests/fixtures/handbuilt/langsmith/supervisor_run.nested.json"]);
    for line in [
        "      2  supervisor   tool_call    transfer_to_researcher({})",
        "      5  researcher   tool_call    web_search({\"query\":\"Paris population 2023\"})",
        "      9  supervisor   tool_call    transfer_to_math_expert({})",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}\nin\n{text}");
    }
    let text = stdout_of(&["inspect", "tests/fixtures/frameworks/26-openai-agents-sdk-trace-ingest-payload.json"]);
    assert!(
        text.lines().any(|l| l.starts_with("      1  Triage Agent  tool_call    transfer_to_refund_agent(")),
        "{text}"
    );
    let text = stdout_of(&["inspect", "tests/fixtures/handbuilt/first-user/r05_wrong_id.openai.json"]);
    assert!(
        text.lines().any(|l| l == "      2  assistant  tool_call    get_order({\"order_id\": \"52813\"})"),
        "{text}"
    );
    let v: Value = serde_json::from_str(&stdout_of(&[
        "inspect",
        "--json",
        "tests/fixtures/handbuilt/langsmith/supervisor_run.nested.json",
    ]))
    .unwrap();
    let step = &v["trajectories"][0]["steps"][2];
    assert_eq!(step["summary"], "transfer_to_researcher({})", "{step}");
    assert_eq!(step["content"], "{}", "the content stays the format's");
}

#[test]
fn loader_diagnostics_of_a_broken_session_reach_inspect_and_diagnose() {
    // A Claude Code session whose Edit line has no `type` and a Codex rollout whose output answers
    // no call: `inspect` lists the diagnostics, `diagnose` reports them as warnings.
    let claude = "tests/fixtures/handbuilt/claude-code/b3_missing_type_claude.jsonl";
    let said =
        "line 4: line has no \"type\"; its message has role \"assistant\" and content: read as type \"assistant\"";
    let text = stdout_of(&["inspect", claude]);
    assert!(text.contains(&format!("diagnostics 1\n  {said}\n")), "{text}");
    assert!(text.contains("steps       8\n"), "{text}");
    let report = stdout_of(&["diagnose", claude]);
    assert!(report.contains(&format!("## Warnings\n\n- loading: {said}\n")), "{report}");
    let codex = "tests/fixtures/handbuilt/codex/b4b_unknown_type_codex.jsonl";
    let json: Value = serde_json::from_str(&stdout_of(&["diagnose", "--format", "json", codex])).unwrap();
    assert_eq!(
        json[0]["warnings"],
        serde_json::json!([
            "loading: line 12 (between steps 5 and 6): unknown line type \"response_item_v2\" holds a \
             custom_tool_call payload (a newer Codex version may write it); not read",
            "loading: line 13: output answers call_id \"call_1fd147a29679ebc48f0e1e88\", which no call of the file has; \
             kept as a result linked to no call"
        ])
    );
}

/// `codex exec --json` records no prompt: `inspect` and the report say the task is missing, and
/// `--task` / `--task-file` give it to every command that reads the trace.
#[test]
fn a_task_the_trace_does_not_record_is_said_and_can_be_given() {
    const EXEC: &str = "tests/fixtures/frameworks/codex-exec-failed-test.jsonl";
    const NO_TASK: &str = "the trace records no task (the user's request): what compares the run with what was \
                           asked read nothing; give it with --task or --task-file";
    let task_line = |text: &str| text.lines().find(|l| l.starts_with("task ")).unwrap().to_string();
    assert_eq!(
        task_line(&stdout_of(&["inspect", EXEC])),
        "task        (none recorded; --task or --task-file gives it)"
    );
    assert_eq!(
        task_line(&stdout_of(&["inspect", EXEC, "--task", "Make ISO week dates parse"])),
        "task        Make ISO week dates parse"
    );

    let report = |extra: &[&str]| -> Value {
        let mut args = vec!["diagnose", "--format", "json", EXEC];
        args.extend_from_slice(extra);
        serde_json::from_str::<Value>(&stdout_of(&args)).unwrap()[0].clone()
    };
    let without = report(&[]);
    assert_eq!(without["warnings"], serde_json::json!([NO_TASK]));
    let md = stdout_of(&["diagnose", EXEC]);
    assert!(md.contains("## Task\n\n(none recorded; `--task` or `--task-file` gives it)\n"), "{md}");
    // And right under the verdict, where a reader of the verdict alone looks, not only in Warnings.
    const NOTE: &str = "**No task recorded**: the trace does not hold the user's request, so this verdict was \
                        made without it (what was asked, its constraints and its values read nothing). Give it \
                        with `--task` or `--task-file` and diagnose again.";
    let verdict = &md[md.find("## Verdict").unwrap()..];
    let verdict = &verdict[..verdict.find("### Why").unwrap()];
    assert!(verdict.contains(&format!("\n\n{NOTE}\n")), "{verdict}");
    assert!(verdict.find(NOTE).unwrap() < verdict.find("\n> ").unwrap_or(usize::MAX), "{verdict}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prompt.txt");
    std::fs::write(&file, "  Make ISO week dates like 2026-W05-3 parse in parse_week_date.\n").unwrap();
    let with = report(&["--task-file", file.to_str().unwrap()]);
    assert_eq!(with["warnings"], serde_json::json!([]));
    let md = stdout_of(&["diagnose", EXEC, "--task-file", file.to_str().unwrap()]);
    assert!(md.contains("## Task\n\n> Make ISO week dates like 2026-W05-3 parse in parse_week_date.\n"), "{md}");
    assert!(!md.contains("No task recorded"), "{md}");

    // A recorded task replaced is said on stderr, never silently.
    let out = falat().args(["inspect", TAU, "--task", "Cancel order #W1"]).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.starts_with("falat: the task given replaces the one "), "{err}");
    assert_eq!(task_line(&String::from_utf8(out.stdout).unwrap()), "task        Cancel order #W1");

    // Bad input: a missing file is named; an empty task and both options are refused.
    let missing = dir.path().join("nope.txt");
    let err = stderr_of(&["diagnose", EXEC, "--task-file", missing.to_str().unwrap()]);
    assert!(err.starts_with(&format!("falat: cannot read the task file {}", missing.display())), "{err}");
    assert_eq!(
        stderr_of(&["diagnose", EXEC, "--task", " "]),
        "falat: the task given with --task/--task-file is empty\n"
    );
    let out = falat().args(["diagnose", EXEC, "--task", "x", "--task-file", file.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}

/// The report says whose number is whose when the source numbers a step otherwise than falat
/// (τ-bench keeps the system prompt apart: falat's step 6 is the source's message 7), and a gold
/// label whose step was dropped on reading shows its agent and why no step, not "step ?".
#[test]
fn the_report_tells_the_source_s_numbering_and_a_gold_label_without_its_step() {
    let report = stdout_of(&["diagnose", TAU]);
    assert!(report.contains("\n**Decisive step 6** by **assistant**"), "{report}");
    assert!(
        report.contains("\nIn the source: message_id 7 (the source's own numbering of falat's step 6)\n"),
        "{report}"
    );
    // Who&When numbers its history as falat does: no note.
    let report = stdout_of(&["diagnose", ALGO]);
    assert!(report.contains("\nIn the source: message_id 4\n"), "{report}");

    // The hand-crafted sample cut to its first 40 records: its label's step 51 is past the end.
    let dir = tempfile::tempdir().unwrap();
    let mut run: serde_json::Value = serde_json::from_slice(&std::fs::read(HAND).unwrap()).unwrap();
    run["history"].as_array_mut().unwrap().truncate(40);
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, run.to_string()).unwrap();
    let out = falat().env("NO_COLOR", "1").args(["diagnose", cut.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (report, err) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert!(
        report.contains("\nGold label: Orchestrator (the label's step is at no step read: see the warnings)\n"),
        "{report}"
    );
    assert!(
        err.contains(&format!(
            "falat: warning: {}: mistake_step 51 is past the end of history (40 records); gold step dropped\n",
            cut.display()
        )),
        "{err}"
    );
}

/// A `hallucination` verdict whose wrong value first appears in the output of what the step ran
/// (hand-crafted 47: the Orchestrator asks to run a script, whose output first holds "Algeria")
/// says what the category means there: the step's own words state no value.
#[test]
fn a_wrong_value_first_seen_in_what_the_step_ran_is_explained_beside_its_category() {
    let report = stdout_of(&["diagnose", HAND]);
    assert!(report.contains("\n**Decisive step 61** by **Orchestrator**: hallucination"), "{report}");
    assert!(
        report.contains(
            "\nThe category `hallucination` means here that the wrong value first appears in the output of what \
             this step ran or asked for, not in its own words.\n"
        ),
        "{report}"
    );
    // A verdict that states its wrong value itself has no such note.
    assert!(!stdout_of(&["diagnose", TAU]).contains("means here that"));
}

/// A coding session that ends on a tool result, no agent having answered, is "No failure found"
/// that says the run never answered; `inspect` counts only what it skipped ("1 line that is not a
/// step", no "0 records").
#[test]
fn a_run_that_never_answers_says_so_beside_no_failure_found() {
    const SPAWN: &str = "tests/fixtures/corpus/codex-cli/codemie_turn-spawn-skill.HANDBUILT.jsonl";
    let report = stdout_of(&["diagnose", SPAWN]);
    assert!(
        report.contains(
            "\nNo failure found: no step is an error or shows a finding, and there is no expected output to compare \
             the output with; but the run records no answer: it ends at step 6, a tool result, and no agent tells an \
             outcome after the last request, so the trace does not show whether the task was done.\n"
        ),
        "{report}"
    );
    let inspect = stdout_of(&["inspect", SPAWN]);
    assert!(inspect.contains("\nskipped     1 line that is not a step\n"), "{inspect}");
    // A run that answers says nothing of the kind.
    let answered = stdout_of(&[
        "diagnose",
        "tests/fixtures/corpus/openinference/arize_openinference_client_span_tool_calls.attrs.json",
    ]);
    assert!(answered.contains("No failure found") && !answered.contains("records no answer"), "{answered}");
    // A single model span that only calls a tool is a run cut before its answer.
    let cut =
        stdout_of(&["diagnose", "tests/fixtures/corpus/openinference/genai-interlingua_openinference_in.otlp.json"]);
    assert!(cut.contains("the run records no answer: it ends at step 1, a tool call,"), "{cut}");
}

/// The final output's step is glossed by what makes it final: the algorithm-generated sample
/// records no observed output and no final-answer line, so its step 4 is the run's last step of
/// substance, not "the step that states the run's answer".
#[test]
fn a_final_output_step_that_states_no_answer_is_called_the_last_step_of_substance() {
    let report = stdout_of(&["diagnose", ALGO]);
    assert!(
        report.contains(
            "\nStep 4 is itself the final output's step (the run's last step of substance: no step states an answer).\n"
        ),
        "{report}"
    );
    assert!(!report.contains("the step that states the run's answer"), "{report}");
}
