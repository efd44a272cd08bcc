//! How FALAT decides on runs shaped like the ones people debug (docs/METHODS.md, "When
//! verification does not discriminate", "Assertion", "Progress", "No failure found", "The final
//! output"): small OpenAI Chat Completions runs built here, and every bundled hand-crafted
//! Who&When run.

use falat::diagnosis::{Rule, Signal};
use falat::judge::heuristic::HeuristicJudge;
use falat::methods::{self, Method, MethodOptions};
use falat::model::Trajectory;
use falat::substrate::{Context, Substrate, signals};
use serde_json::json;

use crate::chat::{assistant, call, evidence, falat, falat_with, load, steps_with, user, who_and_when};

#[test]
fn a_completion_claim_before_any_observation_of_its_value_is_an_unverified_assertion() {
    // Step 0 asks; step 1 answers from nothing: the answer's value was never observed.
    let t = load(vec![
        user("How many invoices did the Oslo office send in March?"),
        assistant("I checked the ledger. FINAL ANSWER: 4310 invoices."),
    ]);
    assert_eq!(steps_with(&t, Signal::UnverifiedAssertion), vec![1]);
    let e = evidence(&t, 1, Signal::UnverifiedAssertion);
    assert_eq!(
        e,
        "asserts the final result (\"I checked the ledger. FINAL ANSWER: 4310 invoices.\") but \"4310 invoices\" appears in no observation before it"
    );

    // The same answer after a tool output that shows the value: verified, no finding.
    let mut m = vec![user("How many invoices did the Oslo office send in March?")];
    m.extend(call("c1", "count_invoices", json!({"office": "Oslo", "month": "March"}), "{\"count\": 4310}"));
    m.push(assistant("FINAL ANSWER: 4310 invoices."));
    let t = load(m);
    assert_eq!(steps_with(&t, Signal::UnverifiedAssertion), Vec::<usize>::new());
}

#[test]
fn only_the_first_assertion_counts_and_a_bare_claim_needs_an_observation_after_the_last_action() {
    // Step 1 changes a record, the tool answers (step 2), then the agent claims completion (3):
    // the claim reports on an observed effect.
    let mut m = vec![user("Please cancel order 18.")];
    m.extend(call("c1", "cancel_order", json!({"order": "18"}), "{\"status\": \"cancelled\"}"));
    m.push(assistant("Your request has been successfully completed."));
    m.push(assistant("The task is complete."));
    let t = load(m);
    assert_eq!(steps_with(&t, Signal::UnverifiedAssertion), Vec::<usize>::new());

    // Claimed done with the action's result never seen: the call's answer is missing.
    let t = load(vec![
        user("Please cancel order 18."),
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "cancel_order", "arguments": "{\"order\":\"18\"}"}}]}),
        assistant("The task is complete."),
        assistant("Request satisfied."),
    ]);
    let at = steps_with(&t, Signal::UnverifiedAssertion);
    assert_eq!(at, vec![2], "the first claim only");
    assert!(evidence(&t, 2, Signal::UnverifiedAssertion).starts_with("claims the task done"));
}

#[test]
fn an_action_that_brings_back_what_was_already_seen_makes_no_progress() {
    let page = "Results: 1. Lincoln Park Zoo opening hours 10:00-17:00. 2. Lincoln Park \
                Conservatory tickets free. 3. Nature boardwalk map and trail guide.";
    let mut m = vec![user("Find a supermarket within two blocks of Lincoln Park.")];
    m.extend(call("c1", "web_search", json!({"q": "supermarket Lincoln Park"}), page));
    m.extend(call("c2", "web_search", json!({"q": "grocery near Lincoln Park"}), page));
    m.extend(call("c3", "web_search", json!({"q": "Lincoln Park food"}), "No results found."));
    m.push(assistant("There is no supermarket near Lincoln Park."));
    let t = load(m);
    // Step 1 saw the page first; step 3 saw it again; step 5's search came back empty.
    assert_eq!(steps_with(&t, Signal::NoProgress), vec![3, 5]);
    assert_eq!(
        evidence(&t, 3, Signal::NoProgress),
        "brings nothing new toward the task: its observation (step 4) repeats step 2's"
    );
    assert_eq!(
        evidence(&t, 5, Signal::NoProgress),
        "brings nothing new toward the task: its observation (step 6) is empty"
    );
}

#[test]
fn a_successful_run_gets_no_failure_found_instead_of_a_root_cause() {
    let mut m = vec![user("What is the weather in Paris?")];
    m.extend(call("c1", "get_weather", json!({"city": "Paris"}), "rainy, 57F"));
    m.push(assistant("It is rainy in Paris."));
    let t = load(m);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None);
    assert!(matches!(d.explanation.rule, Rule::NoFailure { .. }), "{:?}", d.explanation.rule);
    assert_eq!(d.explanation.rule.as_str(), "no_failure");
    assert_eq!(
        d.reason,
        "No failure found: no step is an error or shows a finding, and there is no expected output to compare the output with."
    );
    assert!(d.roles.is_empty(), "no ROOT_CAUSE: {:?}", d.roles);
    // The ranking is still there for a reader who knows the run failed.
    assert_eq!(d.ranking.len(), t.steps.len());
    let report = falat::report::to_markdown(&t, &d);
    assert!(report.contains("**No failure found**: no ROOT_CAUSE is named."), "{report}");

    // The same run with a tool error is not clean: a step is named.
    let mut m = vec![user("What is the weather in Paris?")];
    m.extend(call("c1", "get_weather", json!({"city": "Paris"}), "Error: division by zero"));
    m.push(assistant("It is rainy in Paris."));
    let d = falat(&load(m));
    assert!(d.decisive_step.is_some());
    assert!(!matches!(d.explanation.rule, Rule::NoFailure { .. }));
}

#[test]
fn a_tool_error_the_agent_recovered_from_is_no_failure_of_the_run() {
    // The lookup fails (step 2), the agent retries it with the form the tool asked for and it
    // succeeds (steps 3-4), then answers from what it observed.
    let mut m = vec![user("Will it rain in Porto tomorrow?")];
    m.extend(call("c1", "get_forecast", json!({"city": "Porto"}), "Error: unknown city 'Porto', use 'Porto, PT'"));
    m.extend(call("c2", "get_forecast", json!({"city": "Porto, PT"}), "{\"rain_mm\": 0.0, \"summary\": \"dry\"}"));
    m.push(assistant("No rain is expected in Porto tomorrow: the forecast says dry."));
    let t = load(m);
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
    assert_eq!(
        d.reason,
        "No failure found: the tool error at step 2 was recovered from; otherwise no step is an error or shows a \
         finding, and there is no expected output to compare the output with."
    );

    // Not retried: the error stands, a failure is named, and a verdict on a step with no finding
    // of its own says what shows the failure.
    let mut m = vec![user("Will it rain in Porto tomorrow?")];
    m.extend(call("c1", "get_forecast", json!({"city": "Porto"}), "Error: unknown city 'Porto', use 'Porto, PT'"));
    m.push(assistant("I could not get the forecast."));
    let d = falat(&load(m));
    assert!(d.decisive_step.is_some(), "{}", d.reason);
    assert!(!matches!(d.explanation.rule, Rule::NoFailure { .. }));
}

#[test]
fn an_answer_that_uses_nothing_its_lookup_returned_is_a_failure_not_a_clean_run() {
    // The recovered lookup of the test above, but the answer says the opposite of the forecast.
    let mut m = vec![user("Will it rain in Porto tomorrow?")];
    m.extend(call("c1", "get_forecast", json!({"city": "Porto"}), "Error: unknown city 'Porto', use 'Porto, PT'"));
    m.extend(call(
        "c2",
        "get_forecast",
        json!({"city": "Porto, PT"}),
        "{\"rain_mm\": 14.2, \"summary\": \"heavy showers from 11:00\"}",
    ));
    m.push(assistant("No rain is expected in Porto tomorrow: it will be dry and sunny."));
    let t = load(m);
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(5), "{}", d.reason);
    assert_eq!(d.category.as_str(), "misread_tool_output");
    assert!(
        d.reason.starts_with(
            "step 5 (assistant): tells the user \"No rain is expected in Porto tomorrow: it will be dry and s…\" right \
             after the tool result at step 4 and uses none of the values it returned (14.2, \"heavy showers from \
             11:00\") (ignored_result)."
        ),
        "{}",
        d.reason
    );
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![5]);
}

#[test]
fn a_verdict_on_a_step_with_no_finding_says_what_shows_the_run_failed() {
    // The bundled algorithm-generated sample: nothing was left to verify and the ranking's step
    // has no finding of its own; the run failed, and the reason says what shows it. With the
    // expected output, that no output of the run agrees with it (falat finds no answer line in
    // this run, so it does not say "the output disagrees"); without, the weakest sign there is:
    // the code executor's "There is no code from the last 1 message for me to execute" at step
    // 1, a turn with nothing to run (no failed command: not "an error").
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/sample_traces/who-and-when-algorithm-generated-30.json");
    let bytes = std::fs::read(path).expect("the sample");
    let t = falat::ingest::parse(path, &bytes, None).expect("the sample").trajectories.remove(0);
    for (ground_truth, shown) in [
        (false, "the code executor had no code to run at step 1"),
        (true, "the run states no output that agrees with the expected output"),
    ] {
        let d = falat_with(&t, ground_truth);
        assert_eq!(d.decisive_step, Some(4));
        assert!(d.explanation.findings.is_empty());
        assert!(
            d.reason.starts_with(&format!(
                "step 4 (TranscriptionVerification_Expert): no finding recorded for this step; the run shows its \
                 failure elsewhere: {shown}; named by the ranking: no candidate was left to verify."
            )),
            "{}",
            d.reason
        );
    }
}

#[test]
fn the_ranking_s_guess_is_never_the_final_submission_when_an_earlier_step_holds_a_finding() {
    // mini-swe-agent: the closing thought states a TTL bound nothing gives (step 16), then the run
    // submits with `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached`
    // (step 17). Nothing was left to verify; the ranking puts the submission first, far above the
    // thought (0.36 and 0.06). As `falat diagnose` runs it by default (with ground truth): without
    // it, step 8 (the edit) ties with the submission at 0.36 and comes first since quoted strings
    // are paired in order and the ranker refitted on them, and the verdict is step 8.
    let t = crate::chat::fixture("handbuilt/mini-swe-agent/ttl_clamp_bound_invented.mini-swe-agent.json");
    assert!(signals::actions::final_submission(&t, 17));
    assert!(!signals::actions::final_submission(&t, 16));
    let d = falat_with(&t, true);
    let p = |s: usize| d.ranking.iter().find(|r| r.step == s).map_or(0.0, |r| r.probability);
    assert!(d.ranking.iter().all(|r| r.probability <= p(17)), "the submission ranks first: {:?}", d.ranking);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(16), Some("mini-swe-agent")), "{}", d.reason);
    assert_eq!(d.category.as_str(), "hallucination");
    assert_eq!(d.explanation.findings[0].signal, Signal::UnsourcedValue);
    assert!(
        d.reason.contains(
            "the ranking's most probable step is the final submission, which only hands in what earlier steps made"
        ),
        "{}",
        d.reason
    );
    assert!(d.confidence <= 0.2, "unverified: {}", d.confidence);
    // The twin, whose bound the run's own figures give, has no failure at all.
    let ok = crate::chat::fixture("handbuilt/mini-swe-agent/ttl_clamp_bound_derived_ok.mini-swe-agent.json");
    assert_eq!(falat(&ok).decisive_step, None);
}

#[test]
fn a_run_whose_record_says_it_failed_is_never_called_clean() {
    let mut m = vec![user("What is the weather in Paris?")];
    m.extend(call("c1", "get_weather", json!({"city": "Paris"}), "rainy, 57F"));
    m.push(assistant("It is rainy in Paris."));
    let mut t = load(m);
    t.metadata.push(("reward".into(), "0.0".into()));
    let d = falat(&t);
    assert!(d.decisive_step.is_some(), "a recorded failure has a step to attribute");
    assert_eq!(signals::recorded_failure(&t).as_deref(), Some("reward=0.0"));
}

/// The bundled hand-crafted Who&When runs (Magentic-One logs).
fn hand_crafted() -> Vec<(String, Trajectory)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/who-and-when/Hand-Crafted");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).expect("the bundled data") {
        let path = e.expect("entry").path();
        if path.extension().is_some_and(|x| x == "json") {
            let bytes = std::fs::read(&path).expect("readable");
            let name = path.display().to_string();
            let loaded = falat::ingest::parse(&name, &bytes, None).expect("a Who&When run");
            out.extend(loaded.trajectories.into_iter().map(|t| (name.clone(), t)));
        }
    }
    out
}

#[test]
fn the_final_output_of_every_hand_crafted_run_with_a_final_answer_line_is_that_line() {
    let runs = hand_crafted();
    assert_eq!(runs.len(), 35, "the bundled hand-crafted runs");
    let mut with_line = 0;
    for (name, t) in &runs {
        let line = t.steps.iter().rposition(|s| {
            s.kind != falat::model::StepKind::ToolResult
                && s.content.lines().any(|l| l.trim_start().to_ascii_uppercase().starts_with("FINAL ANSWER:"))
        });
        let Some(line) = line else { continue };
        with_line += 1;
        let sub = Substrate::build(t);
        let ctx = Context::of(t, &sub, true);
        assert_eq!(signals::final_step(&ctx), Some(line), "{name}: the final output is the FINAL ANSWER step");
        // Its verdict cites the same step as the final output.
        let d = methods::run(Method::Falat, t, &HeuristicJudge, &MethodOptions::new(true));
        assert_eq!(d.final_output_step, Some(line), "{name}");
    }
    assert_eq!(with_line, 33, "runs with a FINAL ANSWER line");
}

#[test]
fn when_every_verified_candidate_passes_the_verdict_says_the_ranking_decided() {
    // Over the bundled hand-crafted runs: whenever the rule is the ranking's, the named step is a
    // candidate that passed both criteria (never a step outside the candidates), and its reason
    // says the ranking decided.
    let mut seen = 0;
    for (name, t) in hand_crafted() {
        let d = methods::run(Method::Falat, &t, &HeuristicJudge, &MethodOptions::new(true));
        let Rule::Ranking { why, .. } = &d.explanation.rule else { continue };
        seen += 1;
        let s = d.decisive_step.expect("a step");
        assert!(d.reason.contains("; named by the ranking: "), "{name}: {}", d.reason);
        if why.starts_with("all ") {
            let c = d.candidate(s).unwrap_or_else(|| panic!("{name}: step {s} is a candidate"));
            let v = c.verification.as_ref().expect("verified");
            assert!(v.independence.passed && v.sufficiency.passed, "{name}: step {s}");
            // The most probable of the passing candidates.
            let p = |x: usize| d.ranking.iter().find(|r| r.step == x).map_or(0.0, |r| r.probability);
            for o in d
                .candidates
                .iter()
                .filter(|c| c.verification.as_ref().is_some_and(|v| v.independence.passed && v.sufficiency.passed))
            {
                assert!(p(o.step) <= p(s) + 1e-6, "{name}: step {} is more probable than {s}", o.step);
            }
        }
    }
    assert!(seen >= 5, "the ranking decided {seen} hand-crafted runs");
}

fn corpus(rel: &str) -> Trajectory {
    crate::chat::fixture(&format!("corpus/{rel}"))
}

#[test]
fn a_call_the_user_refused_is_the_user_s_decision_not_the_agent_s_error() {
    // Claude Code: the user refused both tool calls and interrupted the run. Nothing the agent
    // did failed, and "-80" of `head -80` is no stated value.
    let t = corpus("claude-code/spotter_short.jsonl");
    let d = falat(&t);
    assert_eq!(d.decisive_step, None);
    assert_eq!(
        d.reason,
        "No failure found: the user refused the call at step 3 (the refusal is step 5); otherwise no step is an \
         error or shows a finding, and there is no expected output to compare the output with."
    );
    // An OpenInference run that asked the weather and reported it: nothing went wrong.
    let t = corpus("openinference/arize_openinference_client_span_tool_calls.attrs.json");
    let d = falat(&t);
    assert!(matches!(d.explanation.rule, Rule::NoFailure { .. }), "{}", d.reason);
}

#[test]
fn an_assertion_names_each_unobserved_value_once() {
    // The answer lists the same number twice and a second one; neither was observed.
    let t = load(vec![user("Which numbers did the lottery draw?"), assistant("FINAL ANSWER: 35, 35, 12")]);
    let e = evidence(&t, 1, Signal::UnverifiedAssertion);
    assert!(e.ends_with("but \"35\", \"12\" appear in no observation before it"), "{e}");
}

#[test]
fn a_figure_the_task_gives_is_not_what_a_completion_claim_asserts() {
    // The claim restates the task's threshold ("35%", "2001", "2010"): it asserts nothing the
    // run had to observe. The same claim with a threshold of its own still asserts it.
    let claim = |said: &str| {
        let mut m =
            vec![user("Which countries had gross savings of over 35% of GDP for every year in the period 2001-2010?")];
        m.extend(call("c1", "fetch_indicator", json!({"indicator": "NY.GDS.TOTL.ZS"}), "{\"rows\": 266}"));
        m.push(assistant(said));
        m.push(assistant("Brunei, China, Morocco, Singapore"));
        load(m)
    };
    let t = claim("Request satisfied: these countries stay over 35% of GDP in every year from 2001 to 2010.");
    assert_eq!(steps_with(&t, Signal::UnverifiedAssertion), Vec::<usize>::new());
    let t = claim("Request satisfied: these countries stay over 36% of GDP in every year from 2001 to 2010.");
    assert_eq!(steps_with(&t, Signal::UnverifiedAssertion), vec![3]);
    let e = evidence(&t, 3, Signal::UnverifiedAssertion);
    assert!(e.ends_with("but \"36\" appears in no observation before it"), "{e}");
}

/// A message of agent `name` in a Who&When algorithm-generated history.
fn said(name: &str, content: &str) -> serde_json::Value {
    json!({"role": "assistant", "name": name, "content": content})
}

/// A Who&When algorithm-generated run: the expert's search helper fails (step 1), the verifier
/// fetches the page (3-4), a regex finds nothing on it (5-6), and the expert then states
/// `figure` from memory (7); the verifier agrees from recollection (8) and the run answers.
fn from_memory(figure: &str) -> Trajectory {
    let q = "According to Statistics Norway, what was the population of the municipality of Bergen on 1 January \
             2022? Answer with an integer.";
    let run = json!({
        "question": q,
        "ground_truth": "285911",
        "history": [
            said("Population_Expert", &format!("# General Task\n{q}\n\n## Plan for solving the task\n1. Retrieve the figure from the statistics office's table for the municipality.\n2. Verify it is the 1 January 2022 figure.")),
            said("Population_Expert", "Let me search first.\n```python\nfrom functions import perform_web_search\nprint(perform_web_search('SSB population Bergen 2022'))\n```"),
            said("Computer_terminal", "exitcode: 1 (execution failed)\nCode output: Traceback (most recent call last):\n  File \"\", line 1, in <module>\n    from functions import perform_web_search\nModuleNotFoundError: No module named 'functions'"),
            said("Verification_Expert", "The helper is missing, but we can fetch the table directly:\n```python\nimport requests\nr = requests.get('https://www.ssb.no/en/statbank/table/07459', timeout=30)\nprint(r.status_code, len(r.text))\n```"),
            said("Computer_terminal", "exitcode: 0 (execution succeeded)\nCode output: 200 98311"),
            said("Verification_Expert", "Let's extract Bergen's row:\n```python\nimport re, requests\nr = requests.get('https://www.ssb.no/en/statbank/table/07459', timeout=30)\nm = re.search(r'Bergen[^0-9]*([0-9 ]+)', r.text)\nprint(m.group(1) if m else 'not found')\n```"),
            said("Computer_terminal", "exitcode: 0 (execution succeeded)\nCode output: not found"),
            said("Population_Expert", &format!("The table is rendered by script, so the regex cannot see it. No need to parse further: I remember this figure. Bergen had {figure} inhabitants on 1 January 2022.")),
            said("Verification_Expert", &format!("{figure} matches what I recall for Bergen. Verified.")),
            said("Population_Expert", &format!("The answer is {figure}.")),
            said("Verification_Expert", "TERMINATE"),
        ]
    });
    who_and_when(&run)
}

#[test]
fn a_wrong_figure_told_from_memory_is_not_blamed_on_an_earlier_failed_call() {
    let t = from_memory("286,930");
    let sub = Substrate::build(&t);
    let opts = MethodOptions::new(true);
    let d = methods::run(Method::Falat, &t, &HeuristicJudge, &opts);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(7), Some("Population_Expert")), "{}", d.reason);
    // The failed import at step 1 is a candidate; its sufficiency fails: the wrong value is made
    // at step 7, where nothing before it holds it.
    let c1 = d.candidates.iter().find(|c| c.step == 1).expect("step 1 is a candidate");
    let sufficiency = c1.verification.as_ref().map(|v| v.sufficiency.evidence.to_string());
    assert_eq!(
        sufficiency.as_deref(),
        Some(
            "the output's wrong \"286,930\" is stated at step 7 with no earlier source: it does not follow from this step"
        )
    );
    let ctx = Context::of(&t, &sub, true);
    assert!(signals::recall(&ctx, 7).unwrap_or_default().iter().any(|f| f.signal == Signal::UnsourcedValue));
}

#[test]
fn a_final_step_that_works_the_answer_out_returns_its_answer_line_only() {
    // The figure fetched (285,911, an older count) is right for what it is; the expert adds a
    // growth it remembers and the closing step repeats the working before its answer line.
    let q = "What was the population of Bergen on 1 January 2022? Answer with an integer.";
    let run = json!({
        "question": q,
        "ground_truth": "285601",
        "history": [
            said("Population_Expert", &format!("# General Task\n{q}\n\n## Plan for solving the task\n1. Fetch the statistics office's figure.")),
            said("Population_Expert", "```python\nprint('Population 1 January 2021: 285,911')\n```"),
            said("Computer_terminal", "exitcode: 0 (execution succeeded)\nCode output: Population 1 January 2021: 285,911"),
            said("Population_Expert", "That is the 2021 count. Bergen grew by about 1,019 people in 2021 as I recall, so 285,911 + 1,019 = 286,930."),
            said("Verification_Expert", "285,911 + 1,019 = 286,930, so the count is 286,930. The answer is 286930."),
            said("Verification_Expert", "TERMINATE"),
        ]
    });
    let t = who_and_when(&run);
    let sub = Substrate::build(&t);
    let ctx = Context::of(&t, &sub, true);
    let origin =
        |i: usize| signals::recall(&ctx, i).unwrap_or_default().iter().any(|f| f.signal == Signal::WrongValueOrigin);
    // The wrong answer first appears where the expert adds the remembered growth, not at the
    // fetch whose figure the closing step only repeats in its working.
    assert!(origin(3), "step 3 is where 286,930 first appears");
    assert!(!origin(1) && !origin(2));
    let d = methods::run(Method::Falat, &t, &HeuristicJudge, &MethodOptions::new(true));
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(3), Some("Population_Expert")), "{}", d.reason);
}
