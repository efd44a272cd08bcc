//! The LLM judge against a real OpenAI-compatible server: llama.cpp (PyPI `xllamacpp`) serving
//! SmolLM2-135M-Instruct, started by `scripts/start_llm_server.sh`, which exports
//! `FALAT_TEST_LLM_URL` (main server), `FALAT_TEST_LLM_KEYED_URL` and `FALAT_TEST_LLM_KEY` (a second
//! server with an API key and a 1024-token context). Without them each test prints why it is
//! skipped and passes.
//!
//! A 135M model answers poorly: that is the point, the validation, repair and fallback paths run
//! for real.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use falat::diagnosis::Diagnosis;
use falat::graph::DepGraph;
use falat::hierarchy;
use falat::judge::llm::client::CallError;
use falat::judge::llm::{LlmConfig, LlmJudge, cache};
use falat::judge::{Answer, Context, Judge, Question};
use falat::methods::falat::{Options, Pipeline, Stage};
use falat::model::Trajectory;
use serde_json::Value;

const MODEL: &str = "smollm2-135m";

/// Held by every test that sends questions to the main server: its two slots then serve one
/// test at a time, so no test's prompt evicts another's from the slot it uses (the cached share
/// measured below would otherwise depend on what runs beside it).
static MAIN_SERVER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn main_server() -> std::sync::MutexGuard<'static, ()> {
    MAIN_SERVER.lock().unwrap_or_else(|p| p.into_inner())
}

fn env(name: &str, test: &str) -> Option<String> {
    let v = std::env::var(name).ok().filter(|v| !v.is_empty());
    if v.is_none() {
        // Written to the real stderr (not the captured `eprintln!`), so the reason shows in CI.
        let _ = writeln!(
            std::io::stderr(),
            "skipped {test}: {name} is not set (source scripts/start_llm_server.sh to run it)"
        );
    }
    v
}

/// The keyed, small-context server and its key.
fn keyed(test: &str) -> Option<(String, String)> {
    let url = env("FALAT_TEST_LLM_KEYED_URL", test)?;
    Some((url, env("FALAT_TEST_LLM_KEY", test)?))
}

fn fixture(name: &str) -> Trajectory {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llm").join(name);
    falat::ingest::fs::load_path(&p, None).unwrap().trajectories.remove(0)
}

fn config(url: &str) -> LlmConfig {
    let mut cfg = LlmConfig::new(Some(url), MODEL);
    cfg.timeout = Duration::from_secs(600);
    cfg
}

/// `(calls, prompt tokens, completion tokens)` of the recorded exchanges from line `from` on, as
/// the server's `usage` reported them.
fn recorded_usage(dir: &Path, from: usize) -> (usize, u64, u64, usize) {
    let text = std::fs::read_to_string(dir.join(cache::FILE)).unwrap_or_default();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut out = (0, 0, 0, lines.len());
    for l in &lines[from.min(lines.len())..] {
        out.0 += 1;
        if let Some(u) = l.pointer("/response/usage").filter(|u| !u.is_null()) {
            out.1 += u["prompt_tokens"].as_u64().unwrap();
            out.2 += u["completion_tokens"].as_u64().unwrap();
        }
    }
    out
}

fn zero_walls(mut d: Diagnosis) -> Diagnosis {
    for s in &mut d.cost {
        s.cost.wall = Duration::ZERO;
    }
    d
}

#[test]
fn whole_diagnosis_of_a_who_and_when_trajectory_then_replay_without_server() {
    let Some(url) = env("FALAT_TEST_LLM_URL", "whole_diagnosis") else { return };
    let _server = main_server();
    let t = fixture("hand-crafted-24.json");
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&url);
    cfg.record_dir = Some(dir.path().to_path_buf());
    let judge = LlmJudge::new(cfg.clone()).unwrap();
    judge.check().unwrap();
    let opts = Options::new(true);
    let mut p = Pipeline::default();
    let mut seen = 0;
    for stage in Stage::ALL {
        p.run(&t, &judge, &opts, stage).unwrap();
        let (calls, prompt, completion, total) = recorded_usage(dir.path(), seen);
        seen = total;
        let c = p.costs.iter().find(|c| c.stage == stage.as_str()).unwrap().cost;
        eprintln!("{}: {c:?}", stage.as_str());
        assert_eq!(
            (c.calls as usize, c.prompt_tokens, c.completion_tokens),
            (calls, prompt, completion),
            "{}",
            stage.as_str()
        );
    }
    let d = p.diagnosis(&t, &judge, &opts);
    let stats = judge.stats();
    // The real server refused nothing (no empty enum, no other schema it rejects).
    let recorded = std::fs::read_to_string(dir.path().join(cache::FILE)).unwrap();
    let refused: Vec<&str> = recorded.lines().filter(|l| l.contains("\"error\"")).collect();
    assert!(refused.is_empty(), "the server refused: {refused:?}");
    // One trajectory, one slot: after the first call the server reuses the cached prefix.
    let total = d.total_cost();
    assert!(total.cached_tokens > 0 && total.cached_tokens < total.prompt_tokens, "{total:?}");
    assert_eq!(stats.cached_tokens, total.cached_tokens);
    let a = total.answers;
    assert!(a.model + a.repaired > 0, "the model answered nothing: {a:?}");
    assert_eq!(a.fallback_error + a.fallback_budget + a.fallback_replay, 0, "{a:?}");
    eprintln!("decisive {:?} by {:?}; {stats:?}\nwarnings: {:#?}", d.decisive_step, d.agent, d.warnings);
    assert!(d.decisive_step.is_some_and(|s| s < t.steps.len()));
    assert_eq!(d.judge, format!("llm:{MODEL}"));
    let total = d.total_cost();
    assert_eq!((total.prompt_tokens, total.completion_tokens), (stats.prompt_tokens, stats.completion_tokens));
    // Every answer that stayed invalid after its repair left exactly one warning.
    let fallbacks = d.warnings.iter().filter(|w| w.starts_with("llm judge:")).count() as u64;
    assert_eq!(fallbacks, stats.fallbacks);
    drop(judge);

    // Replay: no server is contacted (there is no URL at all).
    let replay = LlmConfig { base_url: None, record_dir: None, replay_dir: Some(dir.path().to_path_buf()), ..cfg };
    let judge = LlmJudge::new(replay).unwrap();
    let again = falat::methods::run(
        falat::methods::Method::Falat,
        &t,
        &judge,
        &falat::methods::MethodOptions::for_falat(opts.clone()),
    );
    assert_eq!(zero_walls(again), zero_walls(d));
    assert_eq!(judge.stats().replayed, stats.calls);
}

#[test]
fn a_wrong_key_gets_401_and_the_key_is_never_recorded() {
    let (Some(url), Some(key)) = (env("FALAT_TEST_LLM_KEYED_URL", "wrong_key"), env("FALAT_TEST_LLM_KEY", "wrong_key"))
    else {
        return;
    };
    let t = fixture("hand-crafted-24.json");
    let h = hierarchy::build(&t);
    let ctx = Context {
        trajectory: &t,
        hierarchy: &h,
        prior: None,
        graph: None,
        facts: &falat::substrate::Facts::default(),
        ground_truth: true,
    };
    let wrong = LlmJudge::with_api_key(config(&url), Some("sk-wrong-key".into())).unwrap();
    assert!(matches!(wrong.check(), Err(CallError::Unauthorized { status: 401, .. })), "{:?}", wrong.check());
    let w = wrong.ask(&ctx, &Question::Prior).warning.unwrap();
    assert!(w.contains("rejected the API key (HTTP 401)"), "{w}");

    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&url);
    cfg.record_dir = Some(dir.path().to_path_buf());
    let right = LlmJudge::with_api_key(cfg, Some(key.clone())).unwrap();
    right.check().unwrap();
    let j = right.ask(&ctx, &Question::Prior);
    assert!(matches!(j.answer, Answer::Prior(_)));
    let recorded = std::fs::read_to_string(dir.path().join(cache::FILE)).unwrap();
    assert!(!recorded.is_empty());
    let everything = format!("{recorded}{right:?}{wrong:?}{:?}{w}", j.warning);
    assert!(!everything.contains(&key) && !everything.contains("sk-wrong-key"));
}

#[test]
fn a_prompt_longer_than_the_context_is_split_or_trimmed() {
    let Some((url, key)) = keyed("context_overflow") else { return };
    // The keyed server has a 1024-token context; the recall prompt of this trajectory is longer.
    let t = fixture("algorithm-generated-10.json");
    let h = hierarchy::build(&t);
    let g = DepGraph::build(&t, &h);
    let ctx = Context {
        trajectory: &t,
        hierarchy: &h,
        prior: None,
        graph: Some(&g),
        facts: &falat::substrate::Facts::default(),
        ground_truth: true,
    };
    let judge = LlmJudge::with_api_key(config(&url), Some(key)).unwrap();
    let j = judge.ask(&ctx, &Question::RecallCandidates { range: 0..t.steps.len() });
    let stats = judge.stats();
    eprintln!("{stats:?}; warning: {:?}", j.warning);
    assert!(stats.context_overflows >= 1, "the prompt did not overflow: {stats:?}");
    assert!(matches!(j.answer, Answer::Candidates(_)));
    // Either a trimmed prompt fitted, or the heuristic answered with a warning saying why.
    assert!(stats.calls > stats.context_overflows || j.warning.is_some_and(|w| w.contains("context")));
}

#[test]
fn every_method_asks_the_server_with_its_own_prompts_then_replays() {
    use falat::methods::{self, Method, MethodOptions};
    let Some(url) = env("FALAT_TEST_LLM_URL", "every_method") else { return };
    let _server = main_server();
    let t = fixture("hand-crafted-24.json");
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&url);
    cfg.record_dir = Some(dir.path().to_path_buf());
    let judge = LlmJudge::new(cfg.clone()).unwrap();
    let opts = MethodOptions::new(true);
    let names = ["all-at-once", "binary-search", "step-by-step", "echo", "defa"];
    let mut done = Vec::new();
    for name in names {
        let d = methods::run(Method::parse(name).unwrap(), &t, &judge, &opts);
        eprintln!(
            "{name}: step {:?} agent {:?} calls {} warnings {:?}",
            d.decisive_step,
            d.agent,
            d.total_cost().calls,
            d.warnings
        );
        assert!(d.decisive_step.is_some_and(|s| s < t.steps.len()), "{name}");
        assert!(d.total_cost().calls > 0, "{name} asked the server nothing");
        assert!(d.warnings.iter().all(|w| !w.contains("no prompt")), "{name}: {:?}", d.warnings);
        done.push(d);
    }
    let text = std::fs::read_to_string(dir.path().join(cache::FILE)).unwrap();
    let kinds: std::collections::BTreeSet<String> =
        text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["kind"].as_str().unwrap().to_string()).collect();
    for k in ["locate_error", "locate_in_range", "is_decisive", "analyst_vote", "segment_recall"] {
        assert!(kinds.contains(k), "no `{k}` exchange recorded: {kinds:?}");
    }
    drop(judge);

    let replay = LlmConfig { base_url: None, record_dir: None, replay_dir: Some(dir.path().to_path_buf()), ..cfg };
    let judge = LlmJudge::new(replay).unwrap();
    for (name, d) in names.into_iter().zip(done) {
        let again = methods::run(Method::parse(name).unwrap(), &t, &judge, &opts);
        assert_eq!(zero_walls(again), zero_walls(d), "{name}");
    }
}

/// `falat diagnose --judge llm` against the keyed server with a wrong key stops before any work
/// with exit 2 and one line naming the URL and HTTP 401, never the key; with the right key the
/// progress lines name each question (`-v`) and the report says who answered.
#[test]
fn the_command_line_fails_fast_on_a_wrong_key_and_reports_who_answered_with_the_right_one() {
    let Some((url, key)) = keyed("cli_wrong_key") else { return };
    let trace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llm/hand-crafted-24.json");
    let falat = || assert_cmd::Command::cargo_bin("falat").unwrap();
    let wrong = "sk-falat-not-the-key-0123456789";
    let t0 = std::time::Instant::now();
    let out = falat()
        .env("OPENAI_API_KEY", wrong)
        .args(["diagnose", "--judge", "llm", "--model", MODEL, "--llm-url", &url, trace.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(&format!("the LLM server at {url}/chat/completions rejected the API key (HTTP 401)")),
        "{stderr}"
    );
    assert!(!stderr.contains(wrong) && !stderr.contains(&key), "{stderr}");

    let Some(main) = env("FALAT_TEST_LLM_URL", "cli_right_key") else { return };
    let _server = main_server();
    let out = falat()
        .env_remove("OPENAI_API_KEY")
        .args(["-v", "diagnose", "--judge", "llm", "--model", MODEL, "--llm-url", &main, trace.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("falat: llm q")).collect();
    assert!(lines.iter().any(|l| l.contains(" prior (prior): ")), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("| answered by |"), "{stdout}");
}

#[test]
fn a_trajectory_s_later_prompts_are_mostly_served_from_the_server_s_cache() {
    let Some(url) = env("FALAT_TEST_LLM_URL", "cached_share") else { return };
    let _server = main_server();
    // Who&When Hand-Crafted/48.json (5 steps), bundled under data/.
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/who-and-when/Hand-Crafted/48.json");
    let t = falat::ingest::fs::load_path(&p, None).unwrap().trajectories.remove(0);
    let mut cfg = config(&url);
    cfg.jobs = 1;
    let judge = LlmJudge::new(cfg.clone()).unwrap();
    let d = falat::methods::run(
        falat::methods::Method::Falat,
        &t,
        &judge,
        &falat::methods::MethodOptions::for_falat(Options::new(true)),
    );
    let total = d.total_cost();
    eprintln!("{total:?}");
    assert!(total.calls >= 4, "{total:?}");
    // Every prompt after the first starts with the system text, task, run and prior the
    // trajectory's earlier calls left in its llama.cpp slot.
    let share = total.later_cached_share().expect("calls after the first");
    assert!(share >= 0.70, "{:.1} % of the later prompt tokens were cached ({total:?})", 100.0 * share);
    // The dry run counts the same prompts with this server's tokenizer.
    let report = falat::judge::llm::dry_run_with(&cfg, |j| {
        falat::methods::run(
            falat::methods::Method::Falat,
            &t,
            j,
            &falat::methods::MethodOptions::for_falat(Options::new(true)),
        );
    })
    .unwrap();
    let root = url.trim_end_matches("/v1");
    assert_eq!(report.counter, falat::judge::llm::TokenCounter::Server(format!("{root}/tokenize")));
    assert!(
        report.prompt_tokens() > report.calls.iter().map(|c| falat::judge::llm::count_tokens(&c.messages)).sum::<u64>()
    );
}
