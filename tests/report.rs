//! Reports a user pastes into a ticket must agree with themselves: for every bundled Who&When
//! trajectory (`data/who-and-when`), the Markdown and JSON reports name the same verdict, quote
//! the decisive step whole, give precedence texts that match the chosen step, say "first appears
//! here" only of the earliest step holding the value, and print no float noise.

use std::path::Path;

use falat::diagnosis::{Diagnosis, Rule};
use falat::ingest::fs::{dataset_files, load_path};
use falat::judge::heuristic::HeuristicJudge;
use falat::methods::falat::Options;
use falat::model::{StepKind, Trajectory};
use falat::{report, text};
use serde_json::Value;

fn bundled() -> Vec<(String, Trajectory, Diagnosis)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/who-and-when");
    let files = dataset_files(&dir).expect("the bundled data set");
    assert!(files.len() > 100, "{} files", files.len());
    files
        .iter()
        .map(|f| {
            let t = load_path(f, None).expect("loads").trajectories.remove(0);
            let d = falat::methods::run(
                falat::methods::Method::Falat,
                &t,
                &HeuristicJudge,
                &falat::methods::MethodOptions::for_falat(Options::new(true)),
            );
            (f.display().to_string(), t, d)
        })
        .collect()
}

/// Every number in the JSON with more than three decimals (`0.4000000059604645`).
fn noisy_numbers(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Number(n) if n.is_f64() => {
            let s = n.to_string();
            if s.split_once('.').is_some_and(|(_, frac)| frac.len() > 3) || s.contains('e') {
                out.push(format!("{at} = {s}"));
            }
        }
        Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| noisy_numbers(x, &format!("{at}[{i}]"), out)),
        Value::Object(o) => o.iter().for_each(|(k, x)| noisy_numbers(x, &format!("{at}.{k}"), out)),
        _ => {}
    }
}

/// Whether `needle` occurs in `hay` as a whole word (not inside a longer word or number).
fn has_word(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(i, m)| {
        let before = hay[..i].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = hay[i + m.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        before && after
    })
}

/// The step a precedence text names (`step 51 was chosen`, `step 51 is an earlier ...`).
fn named_step(evidence: &str) -> Option<usize> {
    let rest = evidence.split("step ").nth(1)?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

#[test]
fn reports_of_every_bundled_trajectory_agree_with_themselves() {
    let mut problems = Vec::new();
    for (file, t, d) in bundled() {
        let md = report::to_markdown(&t, &d);
        let json = report::to_json(&t, &d);
        let mut p = |msg: String| problems.push(format!("{file}: {msg}"));

        // The same verdict in both.
        assert_eq!(json["decisive_step"], serde_json::json!(d.decisive_step));
        if let Some(s) = d.decisive_step {
            if !md.contains(&format!("**Decisive step {s}**")) {
                p(format!("markdown does not name decisive step {s}"));
            }
            // The decisive step is quoted whole, every line of it.
            let content = text::sanitize(&t.steps[s].content);
            for line in content.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()) {
                if !md.contains(&format!("> {line}")) {
                    p(format!("markdown quote of step {s} lacks the line {line:?}"));
                    break;
                }
            }
        }

        // No float noise.
        let mut noisy = Vec::new();
        noisy_numbers(&json, "$", &mut noisy);
        if !noisy.is_empty() {
            p(format!("float noise: {}", noisy.join(", ")));
        }

        // Precedence: at most one candidate passes it, and every text names that step.
        let verified: Vec<_> = d.candidates.iter().filter_map(|c| c.verification.as_ref().map(|v| (c, v))).collect();
        let passed: Vec<usize> = verified.iter().filter(|(_, v)| v.precedence.passed).map(|(c, _)| c.step).collect();
        if passed.len() > 1 {
            p(format!("several candidates pass precedence: {passed:?}"));
        }
        for (c, v) in &verified {
            let e = &v.precedence.evidence;
            if let (Some(n), Some(chosen)) = (named_step(e), passed.first())
                && n != *chosen
            {
                p(format!("step {}: precedence {e:?} names step {n}, the chosen one is {chosen}", c.step));
            }
            // A candidate passing both checks is "valid" unless the text says why not.
            let both = v.independence.passed && v.sufficiency.passed;
            if both && !v.precedence.passed && e.starts_with("not valid") {
                p(format!("step {} passes both checks but its precedence says {e:?}", c.step));
            }
        }

        // "first appears here": the value is in that step and in no earlier one, as a search
        // for it would find.
        for c in &d.candidates {
            for f in &c.findings {
                if !f.evidence.contains("first appears here") {
                    continue;
                }
                // The quoted value, or how the step writes it when that differs.
                let quoted: Vec<&str> = f.evidence.split('"').skip(1).step_by(2).collect();
                let item = if f.evidence.contains("(written \"") { quoted[1] } else { quoted[0] };
                let item = item.to_lowercase();
                let here = t.steps[c.step].content.to_lowercase();
                let earlier = t.steps[..c.step].iter().position(|s| has_word(&s.content.to_lowercase(), &item));
                if !here.contains(&item) || earlier.is_some() {
                    p(format!("step {}: {:?} but a search finds it first at {earlier:?}", c.step, f.evidence));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// Overrides that leave the machine's step in place are the user's overrides, not a decision of
/// theirs; overrides that move the step are. The section sits after the ranking in both cases.
#[test]
fn the_user_s_section_says_a_decision_only_when_the_overrides_moved_the_step() {
    let (_, t, machine) = bundled().into_iter().find(|(f, _, _)| f.ends_with("Hand-Crafted/1.json")).expect("HC/1");
    let s = machine.decisive_step.expect("a step");
    let mut same = machine.clone();
    same.overrides.excluded = vec![(s + 1) % t.steps.len()];
    let md = report::to_markdown_with(&t, &machine, Some(&same));
    assert!(md.contains("## Your overrides"), "{md}");
    assert!(!md.contains("## Your decision"), "{md}");
    assert!(md.contains(&format!("the decisive step is still **step {s}**, the machine's")), "{md}");
    let mut moved = machine.clone();
    moved.decisive_step = Some((s + 1) % t.steps.len());
    moved.overrides.pinned = moved.decisive_step;
    let md = report::to_markdown_with(&t, &machine, Some(&moved));
    assert!(md.contains("## Your decision"), "{md}");
    let (section, ranked) = (md.find("## Your decision").unwrap(), md.find("## Ranked steps").unwrap());
    assert!(ranked < section && md.find("## Candidates").is_none_or(|c| section < c), "{md}");
}

fn diagnose(path: &str) -> (Trajectory, Diagnosis) {
    let t = load_path(Path::new(env!("CARGO_MANIFEST_DIR")).join(path).as_path(), None)
        .expect("loads")
        .trajectories
        .remove(0);
    let d = falat::methods::run(
        falat::methods::Method::Falat,
        &t,
        &HeuristicJudge,
        &falat::methods::MethodOptions::for_falat(Options::new(true)),
    );
    (t, d)
}

/// The rows of the Markdown table under `heading`.
fn table_rows<'a>(md: &'a str, heading: &str) -> Vec<&'a str> {
    let start = md.find(heading).unwrap_or_else(|| panic!("{heading} in\n{md}"));
    md[start..].lines().skip(1).skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|')).skip(2).collect()
}

/// A span format (LangSmith here) keeps only a tool call's arguments: the ranked steps and the
/// roles tables name the tool (`transfer_to_researcher({})`, not `{}`).
#[test]
fn report_tables_name_the_tool_of_a_span_formats_tool_call() {
    let (t, d) = diagnose("tests/fixtures/handbuilt/langsmith/supervisor_run.nested.json");
    let md = report::to_markdown(&t, &d);
    let ranked = table_rows(&md, "## Ranked steps");
    assert!(!ranked.is_empty(), "{md}");
    for row in &ranked {
        let cells: Vec<&str> = row.split(" | ").collect();
        let step: usize = cells[1].parse().expect("a step");
        let content = cells[4].trim_end_matches(" |");
        let st = &t.steps[step];
        if st.kind == falat::model::StepKind::ToolCall {
            let tool = st.tool_name.as_deref().expect("a tool name");
            assert!(content.starts_with(&format!("{tool}(")), "step {step}: {row}");
        }
        assert_ne!(content, "{}", "{row}");
    }
    // The supervisor's hand-off calls, whose content is `{}`.
    let all = ranked.join("\n");
    assert!(
        all.contains("transfer_to_researcher({})") || all.contains("transfer_to_math_expert({})"),
        "a hand-off call among the ranked steps:\n{all}"
    );
    // The math expert's call refused for its argument names is retried at once with the right
    // ones: no failure, so no roles table.
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    assert!(!md.contains("## Roles"), "{md}");
}

/// The verdict of a run decided by the ranking names a step that is no candidate: a note above
/// the candidates table says which step and why; the low-confidence sentence never says "no
/// step stands out" beside a more probable step.
#[test]
fn the_candidates_section_names_a_step_the_ranking_named_outside_them() {
    let (t, d) = diagnose("tests/fixtures/frameworks-b/openhands-eval-output-record.json");
    let s = d.decisive_step.expect("a step");
    assert!(d.candidates.iter().all(|c| c.step != s), "step {s} is a candidate: the test needs one that is not");
    let Rule::Ranking { why, .. } = &d.explanation.rule else { panic!("{:?}", d.explanation.rule) };
    let md = report::to_markdown(&t, &d);
    let section = &md[md.find("## Candidates\n\n").expect("the section")..];
    let expected = format!(
        "## Candidates\n\nStep {s}, the step named, is not a candidate: the ranking named it ({why}). It reads `{}`.\n\n| step |",
        report::step_line(&t.steps[s], 80)
    );
    assert!(section.starts_with(&expected), "{expected}\n---\n{section}");
    assert!(report::step_line(&t.steps[s], 80).starts_with(t.steps[s].tool_name.as_deref().unwrap_or("?")));

    let (t, d) = diagnose("tests/fixtures/handbuilt/first-user/r05_wrong_id.openai.json");
    let md = report::to_markdown(&t, &d);
    let (best, p_named) = d.more_probable_step().expect("a more probable step");
    let named = d.decisive_step.expect("a step");
    assert!(d.low_confidence());
    assert!(d.candidate(best.step).is_none(), "step {} is a candidate: the test needs one that is not", best.step);
    let expected = format!(
        "Confidence is low ({:.2}): the named step {named} has P {p_named:.2}, and step {} is more probable (P {:.2}) \
         but was not a candidate and was not verified; read both.",
        d.confidence, best.step, best.probability
    );
    assert!(md.contains(&expected), "{expected}\n{md}");
    assert!(!md.contains("stands out"), "{md}");
}

/// On every fixture of the project, the sentences that say why a step is named match the rule
/// the diagnosis records: "named by the ranking" only for the ranking's rule, the fallback's
/// wording only for a fallback, "the earliest candidate that passes verification" only for
/// FALAT's own rule; the low-confidence sentence agrees with the ranking claim; a named step that
/// is no candidate is named above the candidates.
#[test]
fn the_why_sentences_match_the_recorded_rule_on_every_fixture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut checked = 0;
    let mut problems = Vec::new();
    for entry in walkdir::WalkDir::new(&root).into_iter().filter_map(Result::ok).filter(|e| e.file_type().is_file()) {
        let Ok(loaded) = load_path(entry.path(), None) else { continue };
        for t in loaded.trajectories {
            let d = falat::methods::run(
                falat::methods::Method::Falat,
                &t,
                &HeuristicJudge,
                &falat::methods::MethodOptions::for_falat(Options::new(true)),
            );
            let md = report::to_markdown(&t, &d);
            let json = report::to_json(&t, &d);
            let mut p = |m: String| problems.push(format!("{}: {m}", entry.path().display()));
            let why = md.split("### Why\n\n").nth(1).and_then(|w| w.lines().next()).unwrap_or_default();
            let rule = json["explanation"]["rule"].as_str().unwrap_or_default().to_string();
            if why.contains("; named by the ranking: ") != (rule == "ranking") {
                p(format!("rule {rule}, why {why:?}"));
            }
            if why.starts_with("Unverified (") && rule != "fallback" {
                p(format!("rule {rule}, why {why:?}"));
            }
            for c in json["explanation"]["claims"].as_array().into_iter().flatten() {
                let text = c["text"].as_str().unwrap_or_default();
                if text.contains("because it is the earliest candidate that passes verification")
                    && rule != "method_rule"
                {
                    p(format!("rule {rule}, claim {text:?}"));
                }
                if c["kind"] == "more_probable" && md.contains("no step stands out") {
                    p(format!("a more probable step, yet: no step stands out ({text:?})"));
                }
            }
            if let Some(s) = d.decisive_step.filter(|s| d.candidates.iter().all(|c| c.step != *s))
                && !md.contains(&format!("Step {s}, the step named, is not a candidate: "))
            {
                p(format!("step {s} is no candidate and the candidates section does not say so"));
            }
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked} trajectories");
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

// ----- a first user's coding-agent sessions: tool calls as they read, no-failure verdicts -----

/// The first-user coding sessions (`tests/fixtures/handbuilt/coding/`, see its NOTE).
const CODING: &str = "tests/fixtures/handbuilt/coding";

fn coding(file: &str) -> (Trajectory, Diagnosis) {
    diagnose(&format!("{CODING}/{file}"))
}

/// A shell call reads as its command and an edit as its tool and file first, in every agent's
/// own arguments: Codex `shell` (`{"command": ["bash", "-lc", …]}`) and `apply_patch`, Claude
/// Code `Bash` and `Edit`, Gemini CLI `run_shell_command` and `replace`, OpenHands
/// `execute_bash` and `str_replace_editor`, mini-swe-agent `bash`.
#[test]
fn step_line_reads_a_tool_call_as_what_it_does() {
    let cases: [(&str, usize, &str); 11] = [
        ("r15_long_codex.jsonl", 1, "shell: cat .python-version && ls -1 ~/.pyenv/versions/"),
        ("r15_long_codex.jsonl", 4, "shell: python3.8 -m venv .venv && . .venv/bin/activate && python --version"),
        (
            "r15_long_codex.jsonl",
            37,
            "apply_patch tests/test_server.py: srv = start_http_server(0, registry=reg) → srv, _thread = \
             start_http_server(0, registry=reg)",
        ),
        ("r11_deleted_protected_claude.jsonl", 3, "Bash: alembic revision -m 'add coupon_code to orders'"),
        (
            "r11_deleted_protected_claude.jsonl",
            10,
            "Edit …/versions/7c1e2a9f4b3d_add_coupon_code_to_orders.py: def upgrade() -> None: pass → def upgrade() -> None: op.add_column('orders', sa.Column('coupon_code', sa.String(32), nullable=True))",
        ),
        (
            "r04_ok_gemini_go.json",
            2,
            "run_shell_command: go test ./internal/cache/ -run TestLRUEvictsOldest -v -count=1",
        ),
        ("r04_ok_gemini_go.json", 8, "replace …/cache/lru.go: old := c.ll.Front() → old := c.ll.Back()"),
        (
            "r03_ok_openhands_jest.json",
            2,
            "execute_bash: cd /workspace/repo && npm test -w packages/utils -- --silent 2>&1 | tail -30",
        ),
        (
            "r03_ok_openhands_jest.json",
            7,
            "str_replace_editor str_replace …/src/slugify.ts: return input .toLowerCase() → return input .normalize('NFKD') .replace(/[\\u0300-\\u036f]/g, '') .toLowerCase()",
        ),
        ("r05_recover_mini.json", 2, "bash: grep -rn 'def humanize_bytes' --include=*.py ."),
        ("r05_recover_mini.json", 14, "bash: sed -n 14,30p sizefmt/core.py"),
    ];
    for (file, step, want) in cases {
        let t = load_path(Path::new(env!("CARGO_MANIFEST_DIR")).join(CODING).join(file).as_path(), None)
            .expect("loads")
            .trajectories
            .remove(0);
        let st = &t.steps[step];
        assert_eq!(report::step_line(st, 400), want, "{file} step {step}: {:?}", st.content);
        // At 80 columns the tool and what it acts on come first.
        let short = report::step_line(st, 60);
        assert!(short.chars().count() <= 60, "{short}");
        assert!(want.starts_with(short.trim_end_matches('…')), "{short}");
    }
}

/// The Markdown tables quote each tool call as it reads: no Codex call is shown as its JSON.
#[test]
fn report_tables_quote_a_codex_shell_call_by_its_command() {
    let (t, d) = coding("r15_long_codex.jsonl");
    let md = report::to_markdown(&t, &d);
    let ranked = table_rows(&md, "## Ranked steps");
    assert!(!ranked.is_empty(), "{md}");
    for row in ranked.iter().chain(&table_rows(&md, "## Roles")) {
        assert!(!row.contains("{\"command\""), "{row}");
    }
    assert!(ranked.iter().any(|r| r.contains("| shell: . .venv/bin/activate && ")), "{ranked:?}");
}

/// "No failure found" names no step, so it gives no step confidence: `null` and not low in the
/// JSON, and the Markdown prints none.
#[test]
fn a_no_failure_verdict_has_no_confidence() {
    let (t, d) = coding("r04_ok_gemini_go.json");
    assert!(matches!(d.explanation.rule, Rule::NoFailure { .. }), "{:?}", d.explanation.rule);
    assert_eq!(d.decisive_step, None);
    let json = report::to_json(&t, &d);
    assert_eq!(json["confidence"], Value::Null, "{json}");
    assert_eq!(json["low_confidence"], Value::Bool(false), "{json}");
    let md = report::to_markdown(&t, &d);
    assert!(md.contains("**No failure found**: no ROOT_CAUSE is named."), "{md}");
    assert!(!md.contains("confidence"), "{md}");
    // A named step keeps its confidence.
    let (t, d) = coding("r08_subset_claude.jsonl");
    assert_eq!(d.decisive_step, Some(7));
    let json = report::to_json(&t, &d);
    let c = json["confidence"].as_f64().expect("a number");
    assert!((c - f64::from(d.confidence)).abs() < 1e-3, "{c} {}", d.confidence);
    assert_eq!(json["low_confidence"], Value::Bool(d.low_confidence()));
}

/// A verdict the ranking decided says what is wrong with the step first and the rule after it,
/// in short; the rule's record stays as it was.
#[test]
fn a_ranked_verdicts_reason_leads_with_the_finding() {
    let (t, d) = coding("fix-breaks-another-test.openai-chat.json");
    let Rule::Ranking { why, .. } = &d.explanation.rule else {
        panic!("decided by the ranking: {:?}", d.explanation.rule)
    };
    assert_eq!(d.decisive_step, Some(6));
    assert!(
        d.reason.starts_with(
            "step 6 (assistant): the check after this edit fails at step 9: FAILED \
             tests/test_roundtrip.py::test_roundtrip_import_export - ValueError (failed_action)"
        ),
        "{}",
        d.reason
    );
    assert!(!d.reason.contains("Decided by"), "{}", d.reason);
    assert!(
        d.reason.contains(
            "(failed_action); named by the ranking: both verified candidates passed both independence and \
             sufficiency. Re-search: "
        ),
        "{}",
        d.reason
    );
    // The rule itself is unchanged: its record names it, and its clause is whole.
    let json = report::to_json(&t, &d);
    assert_eq!(json["explanation"]["rule"], "ranking", "{json}");
    assert!(
        why.to_string().ends_with(
            "so verification did not tell them apart and the most probable of the verified candidates is named"
        ),
        "{why}"
    );
}

/// The Markdown verdict on an edit that applied says what its category means here (the change
/// was wrong, not the call), and a verdict that names an edit a later step reverted (`git
/// checkout -- FILE`) says so; a verdict on an edit nothing undid says neither.
#[test]
fn a_reverted_edit_that_applied_is_said_so_in_the_markdown_verdict() {
    // The run patches shop/money.py (step 7), reverts it (step 11) and rewrites the test's
    // expectation to the bug's value (step 14): the verdict is the rewrite, which stays.
    let (t, d) = coding("r21_reverted_patch_codex.jsonl");
    assert_eq!(d.decisive_step, Some(14));
    let gloss = "The category `tool_parameter_or_invocation_error` means here that the edit applied without error: \
                 the change it made was wrong, not the call.";
    let md = report::to_markdown(&t, &d);
    assert!(md.contains(gloss), "{md}");
    assert!(!md.contains("Reverted at step"), "{md}");
    assert_eq!(report::reverted_at(&t, 14), None);
    // The reverted patch is the ranking's second step; a verdict that names it (a reviewer's, a
    // ranking's when no finding decides) says it was undone.
    assert_eq!(
        report::reverted_at(&t, 7),
        Some(report::Revert { step: 11, how: "git checkout -- shop/money.py".into() })
    );
    let on_the_patch = Diagnosis { decisive_step: Some(7), ..d.clone() };
    let md = report::to_markdown(&t, &on_the_patch);
    assert!(
        md.contains(
            "**Reverted at step 11** (`git checkout -- shop/money.py`): a later step undid this edit, so the code \
             the run leaves behind does not hold it."
        ),
        "{md}"
    );
    // A `sed -i` edit whose check failed is glossed the same; nothing reverts it.
    let (t, d) = coding("fix-breaks-another-test.openai-chat.json");
    let md = report::to_markdown(&t, &d);
    assert!(md.contains("means here that the edit applied without error"), "{md}");
    assert!(!md.contains("Reverted at step"), "{md}");
    // A refused edit is a call the tool rejected: no gloss in the Markdown verdict.
    let (t, d) = coding("refused-edit-then-sed.claude-code.jsonl");
    let md = report::to_markdown(&t, &d);
    assert!(!md.contains("means here that") && !md.contains("Reverted at step"), "{md}");
}

/// A hand-off whose call carries nothing but its target reads as where the work goes: Google
/// ADK's `transfer_to_agent({"agent_name": …})`. A hand-off with an instruction keeps its text.
#[test]
fn step_line_reads_a_bare_handoff_as_its_target() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/handbuilt/google-adk/trip_options_total_per_night.adk.json");
    let t = load_path(path.as_path(), None).expect("loads").trajectories.remove(0);
    let lines: Vec<(usize, String)> = t
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Delegation)
        .map(|s| (s.index, report::step_line(s, 80)))
        .collect();
    assert_eq!(
        lines,
        vec![
            (2, "→ flight_agent (transfer_to_agent)".to_string()),
            (7, "→ trip_planner (transfer_to_agent)".to_string()),
            (9, "→ hotel_agent (transfer_to_agent)".to_string()),
            (16, "→ trip_planner (transfer_to_agent)".to_string()),
        ]
    );
    let mut told = t.steps[2].clone();
    told.content = r#"{"agent_name": "flight_agent", "request": "find direct flights under 250 EUR"}"#.into();
    assert!(report::step_line(&told, 80).starts_with("{\"agent_name\""), "{}", report::step_line(&told, 80));
}
