//! A hand-off against the delegating agent's routing instructions (docs/METHODS.md, "Wrong
//! delegation"): real-shaped multi-agent runs whose triage agent's instructions say which
//! specialist takes what, in the ways instructions say it ("Billing Agent (charges, …)", "route
//! billing, charges and refunds to billing_agent", a list of topics and hand-off tools); and a
//! worker that searches a query its instruction quotes with a number changed.

use falat::diagnosis::Signal;
use falat::model::Trajectory;
use serde_json::json;

use crate::chat::{evidence, falat, falat_with, findings, fixture, load_beside, no_failure, steps_with, who_and_when};

#[test]
fn a_takeover_report_handed_to_billing_against_a_security_first_rule_is_the_decisive_step() {
    // A held-out user's OpenAI Agents SDK export: the customer reports a password change they did
    // not make and an unknown charge; the triage agent's instructions give suspected takeovers to
    // the Account Security Agent (a specialist that never acts in this run) and put security
    // first; it hands off to the Billing Agent, which refunds the charge.
    let t = fixture("handbuilt/openai-agents/agents-sdk_account_takeover_to_billing.jsonl");
    assert_eq!(t.steps[3].delegate_to.as_deref(), Some("Billing Agent"));
    let wrong: Vec<usize> =
        findings(&t).into_iter().filter(|(_, s)| *s == Signal::WrongDelegation).map(|(i, _)| i).collect();
    assert_eq!(wrong, vec![3]);
    assert_eq!(
        evidence(&t, 3, Signal::WrongDelegation),
        "hands off to Billing Agent; its instructions give Account Security Agent \"suspected account takeover, \
         password or…\" first, which the request matches (account, changed, email, password)"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(3), Some("Triage Agent")), "{}", d.reason);
}

#[test]
fn a_hand_off_against_a_list_of_topics_and_hand_off_tools_is_the_decisive_step() {
    // A hand-built OpenAI Agents SDK export: the triage agent's instructions route topics to
    // hand-off tools as a Markdown list ("- **Payments, duplicate bills, refunds, direct
    // debits**: `transfer_to_accounts_agent`"); a refund of a direct debit taken twice is handed
    // to the Network Agent, which runs a line test and cannot refund.
    let t = fixture("handbuilt/openai-agents/agents-sdk_duplicate_debit_to_network.jsonl");
    assert_eq!(t.steps[5].delegate_to.as_deref(), Some("Network Agent"));
    let wrong: Vec<usize> =
        findings(&t).into_iter().filter(|(_, s)| *s == Signal::WrongDelegation).map(|(i, _)| i).collect();
    assert_eq!(wrong, vec![5]);
    assert_eq!(
        evidence(&t, 5, Signal::WrongDelegation),
        "hands off to Network Agent; its instructions give transfer_to_accounts_agent \"payments, duplicate bills, \
         refunds, dir…\", which the request matches (debit, direct, refund)"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(5), Some("Triage Agent")), "{}", d.reason);
}

#[test]
fn a_billing_request_routed_to_tech_support_is_found_and_a_right_route_is_not() {
    // A first user's LangSmith export: "Route billing, charges and refunds to billing_agent; route
    // outages, login and connectivity problems to tech_support", and a refund request sent to
    // tech_support.
    let mut t = fixture("handbuilt/langsmith/r09_wrong_delegation.langsmith.json");
    let handoff = t.steps.iter().position(|s| s.delegate_to.as_deref() == Some("tech_support")).expect("a hand-off");
    assert_eq!(handoff, 3);
    assert_eq!(
        evidence(&t, 3, Signal::WrongDelegation),
        "hands off to tech_support; its instructions give billing_agent \"route billing, charges and refunds to\", \
         which the request matches (charged, refund)"
    );
    assert_eq!(falat(&t).decisive_step, Some(3));
    // The same run with a request about a login problem (the task: the user's turn is the run's
    // first hand-off here): routed right, no finding.
    t.task = "I cannot log in since this morning, the connectivity test fails too.".into();
    assert!(!findings(&t).iter().any(|(_, s)| *s == Signal::WrongDelegation), "{:?}", findings(&t));
}

#[test]
fn a_delegation_that_drops_the_python_version_the_user_stressed_is_the_decisive_step() {
    // A held-out user's Claude Code session: "Important: tinyrate still supports Python 3.8 …, so
    // the tests must stay 3.8-compatible"; the main agent hands the conversion to a sub-agent with
    // a prompt asking for type hints and no word of 3.8; the sub-agent writes `list[bool]`.
    let t = load_beside(&fixture_dir().join("tests_converted_without_py38.jsonl"));
    let wrong: Vec<usize> =
        findings(&t).into_iter().filter(|(_, s)| *s == Signal::WrongDelegation).map(|(i, _)| i).collect();
    assert_eq!(wrong, vec![6]);
    assert_eq!(
        evidence(&t, 6, Signal::WrongDelegation),
        "hands the work to general-purpose without the user's constraint \"Python 3.8\" (step 0: \"Important: \
         tinyrate still supports Python 3.8 (requires-pyt…\"); general-purpose then edits files (step 10)"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(6), Some("claude")), "{}", d.reason);
}

#[test]
fn a_delegation_that_carries_the_version_or_a_version_said_in_passing_is_no_finding() {
    // Built from the same session: the prompt names the version, or the user only mentions one.
    let base = std::fs::read_to_string(fixture_dir().join("tests_converted_without_py38.jsonl")).expect("the fixture");
    for (from, to) in [
        ("- type hints on fixtures and helpers", "- type hints on fixtures and helpers, valid on Python 3.8"),
        (
            "Important: tinyrate still supports Python 3.8 (requires-python >=3.8 in pyproject), and CI runs the \
             suite on 3.8 through 3.13, so the tests must stay 3.8-compatible.",
            "The CI image has Python 3.12 and 3.13 installed.",
        ),
    ] {
        assert!(base.contains(from), "{from}");
        // The session beside a copy of its sub-agent file, as the main agent's hand-off needs it.
        let dir = tempfile::tempdir().expect("a temporary folder");
        let sub = dir.path().join("session/subagents");
        std::fs::create_dir_all(&sub).expect("the sub-agent folder");
        std::fs::copy(
            fixture_dir().join("tests_converted_without_py38/subagents/agent-a7c31e9.jsonl"),
            sub.join("agent-a7c31e9.jsonl"),
        )
        .expect("the sub-agent file");
        std::fs::write(dir.path().join("session.jsonl"), base.replace(from, to)).expect("the session");
        let t = load_beside(&dir.path().join("session.jsonl"));
        let wrong: Vec<usize> =
            findings(&t).into_iter().filter(|(_, s)| *s == Signal::WrongDelegation).map(|(i, _)| i).collect();
        assert_eq!(wrong, Vec::<usize>::new(), "{to}");
    }
}

/// The folder of the hand-built Claude Code sessions.
fn fixture_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/handbuilt/claude-code")
}

#[test]
fn a_delegate_filtering_on_another_listed_entry_than_its_brief_names_is_the_decisive_step() {
    // A hand-built Langfuse trace (agents as tools): the coordinator briefs data_puller for
    // warehouse BER2; data_puller lists the warehouses (AMS1, BER2, MAD1, WAW3), then counts
    // shipments for MAD1 twice and labels the counts "warehouse BER2"; the coordinator works out
    // the month-on-month change (+9.4%) and the writer and the answer repeat it.
    let t = fixture("handbuilt/langfuse/late_shipments_wrong_warehouse.langfuse.json");
    assert_eq!(t.steps[3].delegate_to.as_deref(), Some("data_puller"));
    let found: Vec<(usize, Signal)> = findings(&t)
        .into_iter()
        .filter(|(_, s)| matches!(s, Signal::ArgumentMismatch | Signal::UnsourcedValue))
        .collect();
    assert_eq!(found, vec![(8, Signal::ArgumentMismatch), (10, Signal::ArgumentMismatch)]);
    assert_eq!(
        evidence(&t, 8, Signal::ArgumentMismatch),
        "calls count_shipments with 'MAD1', but its brief at step 3 asks for BER2, and the listing at step 7 \
         gives BER2 and MAD1 as different entries"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(8), Some("data_puller")), "{}", d.reason);
    assert_eq!(d.role_of(8), Some(falat::diagnosis::Role::RootCause));
    // The same run counting the warehouse the brief names: no mismatch, and the change worked out
    // from the two counts ("1,894 against 1,731 is +9.4%") is no invented value.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/handbuilt/langfuse/late_shipments_wrong_warehouse.langfuse.json");
    let text = std::fs::read_to_string(&path)
        .expect("reads")
        .replace(r#"\"warehouse\": \"MAD1\""#, r#"\"warehouse\": \"BER2\""#)
        .replace(r#""warehouse": "MAD1""#, r#""warehouse": "BER2""#);
    let right =
        falat::ingest::parse("right.langfuse.json", text.as_bytes(), None).expect("loads").trajectories.remove(0);
    let found: Vec<(usize, Signal)> = findings(&right)
        .into_iter()
        .filter(|(_, s)| matches!(s, Signal::ArgumentMismatch | Signal::UnsourcedValue))
        .collect();
    assert_eq!(found, vec![]);
}

#[test]
fn a_status_word_the_user_wrote_is_no_pointer_to_another_record_after_a_wrong_hand_off() {
    // A hand-built OpenAI Agents SDK export (JSON lines): a top-up "failed the first time", then
    // went through twice; the front desk's instructions send any payment question to the Payments
    // Agent unless someone else used the account, and it hands off to Trust & Safety, which opens
    // a fraud case on the second successful top-up and freezes the wallet. "failed" is the status
    // of the one payment that needs nothing: it says what happened, not which payment to act on.
    let t = fixture("handbuilt/openai-agents/agents-sdk_duplicate_topup_to_trust_safety.jsonl");
    assert_eq!(t.steps[3].delegate_to.as_deref(), Some("Trust & Safety Agent"));
    let signals = findings(&t);
    let on = |signal: Signal| -> Vec<usize> { signals.iter().filter(|(_, s)| *s == signal).map(|(i, _)| *i).collect() };
    assert_eq!(on(Signal::ArgumentMismatch), Vec::<usize>::new());
    assert_eq!(on(Signal::WrongDelegation), vec![3]);
    assert_eq!(
        evidence(&t, 3, Signal::WrongDelegation),
        "hands off to Trust & Safety Agent; its instructions give Payments Agent \"top-ups, duplicate payments, \
         refunds, r…\", which the request matches (payments, refund)"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(3), Some("Triage Agent")), "{}", d.reason);
}

#[test]
fn a_disputed_payment_handed_to_the_meter_agent_against_an_even_if_rule_is_named_before_what_the_meter_agent_says() {
    // A hand-built OpenAI Agents SDK export: "When a customer disputes a payment, the Billing
    // Agent takes it, even if a meter fault is mentioned as well"; a direct debit taken twice,
    // with a display fault mentioned, is handed to the Meter Agent, which re-pairs the display
    // and promises a credit no tool gave (an unsourced value at step 7). The Meter Agent only
    // works on a request it should never have had: its step follows from the hand-off.
    let t = fixture("handbuilt/openai-agents/double_debit_to_meter_agent.openai-agents.json");
    assert_eq!(t.steps[2].delegate_to.as_deref(), Some("Meter Agent"));
    let wrong: Vec<usize> =
        findings(&t).into_iter().filter(|(_, s)| *s == Signal::WrongDelegation).map(|(i, _)| i).collect();
    assert_eq!(wrong, vec![2]);
    assert_eq!(
        evidence(&t, 2, Signal::WrongDelegation),
        "hands off to Meter Agent; its instructions give Billing Agent \"bills, payments, direct debits, refunds…\" \
         first, which the request matches (debit, direct, payment, refund)"
    );
    assert_eq!(evidence(&t, 7, Signal::UnsourcedValue), "states 15 with no earlier source");
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(2), Some("Triage Agent")), "{}", d.reason);
    let pruned =
        d.candidates.iter().find(|c| c.step == 7).and_then(|c| c.pruned.as_ref()).map(|p| p.reason.to_string());
    assert_eq!(pruned.as_deref(), Some("it adopts the error of candidate step 2"));
}

#[test]
fn the_same_double_debit_handed_to_the_billing_agent_is_no_failure() {
    let t = fixture("handbuilt/openai-agents/double_debit_to_billing_ok.openai-agents.json");
    assert_eq!(t.steps[2].delegate_to.as_deref(), Some("Billing Agent"));
    assert!(findings(&t).is_empty(), "{:?}", findings(&t));
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
}

#[test]
fn a_refund_the_supervisor_of_prebuilt_agents_routes_to_the_tech_agent_is_its_hand_off() {
    // A hand-built LangSmith export of langgraph-supervisor's `create_supervisor` over two
    // `create_react_agent` workers, whose model calls run in each agent's own `agent` node: the
    // supervisor's prompt says "Billing and refund requests go to billing_agent; device and
    // connectivity problems go to tech_agent", and it sends a refund of a direct debit taken
    // twice to tech_agent, which runs a line test and cannot refund.
    let t = fixture("handbuilt/langsmith/supervisor_refund_to_tech_agent.langsmith.json");
    assert_eq!((t.steps[3].agent.as_str(), t.steps[3].delegate_to.as_deref()), ("supervisor", Some("tech_agent")));
    assert_eq!(steps_with(&t, Signal::WrongDelegation), vec![3]);
    assert_eq!(
        evidence(&t, 3, Signal::WrongDelegation),
        "hands off to tech_agent; its instructions give billing_agent \"invoices, payments, duplicate charges a…\", \
         which the request matches (duplicate, payment, refund)"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(3), Some("supervisor")), "{}", d.reason);
}

#[test]
fn the_same_refund_routed_to_the_billing_agent_by_the_supervisor_of_prebuilt_agents_is_no_failure() {
    no_failure("handbuilt/langsmith/supervisor_refund_to_billing_agent_ok.langsmith.json");
}

/// A Who&When hand-crafted run (Magentic-One): the orchestrator asks WebSurfer to search a quoted
/// query, and WebSurfer reports what it typed (`typed`), then the run answers.
fn searched(instruction: &str, typed: &str) -> Trajectory {
    let run = json!({
        "question": "What was the men's winning time at the 2024 Kesselberg Trail 50K? Answer as h:mm:ss.",
        "ground_truth": "4:05:12",
        "history": [
            {"role": "human", "content": "What was the men's winning time at the 2024 Kesselberg Trail 50K? Answer as h:mm:ss."},
            {"role": "Orchestrator (thought)", "content": "Initial plan:\n\n1. WebSurfer searches the official 2024 results.\n2. Report the time."},
            {"role": "Orchestrator (-> WebSurfer)", "content": instruction},
            {"role": "Orchestrator (thought)", "content": "Next speaker WebSurfer"},
            {"role": "WebSurfer", "content": format!("I typed '{typed}' into the browser search bar.\n\nThe web browser is open to the page [{typed} - Search](https://www.bing.com/search?q=x).\nKesselberg Trail results: winner Lukas Brandl 4:12:37")},
            {"role": "Orchestrator (thought)", "content": "Updated Ledger: the winner's time is known."},
            {"role": "Orchestrator (termination condition)", "content": "FINAL ANSWER: 4:12:37"}
        ]
    });
    let bytes = serde_json::to_vec(&run).expect("serialises");
    falat::ingest::parse("run.json", &bytes, None).expect("a Who&When run").trajectories.remove(0)
}

#[test]
fn a_worker_that_types_the_quoted_query_with_another_year_is_found_at_its_search() {
    let asked = "Please search the web for 'Kesselberg Trail 50K 2024 Ergebnisse' and open the official results.";
    let t = searched(asked, "Kesselberg Trail 50K 2023 Ergebnisse");
    assert_eq!(t.steps[4].agent, "WebSurfer");
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::ArgumentMismatch),
        "types 'Kesselberg Trail 50K 2023 Ergebnisse', but the instruction at step 2 asks for 'Kesselberg Trail 50K \
         2024 Ergebnisse' (2024, not 2023)"
    );
    assert_eq!(falat(&t).decisive_step, Some(4));
    // The query as asked, one reworded (another word, not a number), or one with a word added:
    // no finding of this kind.
    for typed in [
        "Kesselberg Trail 50K 2024 Ergebnisse",
        "Kesselberg Trail 50K 2024 results",
        "Kesselberg Trail 50K 2024 Ergebnisse Herren",
    ] {
        let t = searched(asked, typed);
        assert_eq!(steps_with(&t, Signal::ArgumentMismatch), Vec::<usize>::new(), "{typed}");
    }
    // An instruction that quotes no query leaves the worker its own words.
    let t = searched(
        "Please find the official 2024 results of the Kesselberg Trail 50K.",
        "Kesselberg Trail 50K 2023 Ergebnisse",
    );
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), Vec::<usize>::new());
}

/// A Who&When hand-crafted run (Magentic-One) whose WebSurfer opens `pages` in turn (title,
/// address, text) and whose orchestrator answers `answer`.
fn read_pages(pages: &[(&str, &str, &str)], answer: &str) -> Trajectory {
    read_pages_expecting(pages, answer, "")
}

/// [`read_pages`] with the run's expected answer (`ground_truth`).
fn read_pages_expecting(pages: &[(&str, &str, &str)], answer: &str, expected: &str) -> Trajectory {
    let q = "What is the maximum size of one object uploaded with a single PUT to the Stratos Object Storage API, \
        according to the current official documentation?";
    let mut history = vec![
        json!({"role": "human", "content": q}),
        json!({"role": "Orchestrator (thought)", "content": "Initial plan:\n\n1. WebSurfer reads the upload limits page.\n2. Report the limit."}),
    ];
    for (title, url, text) in pages {
        history.push(json!({"role": "Orchestrator (-> WebSurfer)", "content": "Please open the official documentation page on upload limits."}));
        history.push(json!({"role": "WebSurfer", "content": format!(
            "I clicked '{title}'.\n\nHere is a screenshot of [{title}]({url}). The viewport shows 41% of the webpage.\n\n\
             Automatic OCR of the page screenshot has detected the following text:\n\n{text}")}));
    }
    history.push(json!({"role": "Orchestrator (thought)", "content": "Request satisfied."}));
    history.push(json!({"role": "Orchestrator (termination condition)", "content": format!("FINAL ANSWER: {answer}")}));
    who_and_when(&json!({"question": q, "ground_truth": expected, "history": history}))
}

const V1: (&str, &str, &str) = (
    "Upload limits | Stratos API v1",
    "https://docs.stratos.cloud/object-storage/v1/upload-limits",
    "Stratos Docs  API v1\n⚠ You are viewing documentation for API v1, which was deprecated on 2021-03-31. See the \
     current version (v3).\nUpload limits\nSingle PUT request: objects up to 5 GB.\nMultipart: up to 10,000 parts.",
);

#[test]
fn an_answer_read_from_a_page_that_says_it_is_outdated_is_found_where_the_page_is_read() {
    let t = read_pages(&[V1], "5 GB");
    assert_eq!(t.steps[3].agent, "WebSurfer");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![3]);
    assert_eq!(
        evidence(&t, 3, Signal::IgnoredResult),
        "reads 5 GB from a page that says it is outdated (\"You are viewing documentation for API v1, which was \
         deprecated on 2021-03-31.\"), and the final answer at step 5 gives 5 GB"
    );
    assert_eq!(falat(&t).decisive_step, Some(3));

    // The current page read after it gives the answer: the outdated page is no source of it.
    let v3 = (
        "Upload limits | Stratos API v3",
        "https://docs.stratos.cloud/object-storage/v3/upload-limits",
        "Stratos Docs  API v3\nUpload limits\nSingle PUT request: objects up to 50 GB.",
    );
    let t = read_pages(&[V1, v3], "50 GB");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new());
    // The current page says the same as the old one: it vouches for the answer.
    let v3_same = (v3.0, v3.1, "Stratos Docs  API v3\nUpload limits\nSingle PUT request: objects up to 5 GB.");
    let t = read_pages(&[V1, v3_same], "5 GB");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new());
    // A page that marks one function deprecated is no outdated page.
    let t = read_pages(
        &[(
            V1.0,
            V1.1,
            "Upload limits\nThe `put_object_legacy` call is deprecated.\nSingle PUT request: objects up to 5 GB.",
        )],
        "5 GB",
    );
    assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new());
}

#[test]
fn an_answer_read_from_an_outdated_page_is_not_blamed_on_the_search_that_quoted_it() {
    // The search results quote the outdated page's limit in a snippet (step 3); the WebSurfer
    // then opens that page and answers from it (step 5). With the expected answer given, the
    // output's "5 GB" is first written in the snippet, but it is wrong where it is read from the
    // page that says not to answer from it.
    let search = (
        "Stratos Object Storage PUT maximum size - Search",
        "https://www.bing.com/search?q=Stratos+Object+Storage+PUT+maximum+size",
        "Limits and quotas | Stratos Object Storage API v3\nMaximum object size for a single PUT request ...\n\
         Upload limits | Stratos Object Storage API v1\nA single PUT request can upload an object of up to 5 GB.",
    );
    let t = read_pages_expecting(&[search, V1], "5 GB", "50 GB");
    assert_eq!(t.steps[5].agent, "WebSurfer");
    for ground_truth in [false, true] {
        let d = falat_with(&t, ground_truth);
        assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(5), Some("WebSurfer")), "{}", d.reason);
        if ground_truth {
            let origin = d.candidate(5).and_then(|c| c.findings.iter().find(|f| f.signal == Signal::WrongValueOrigin));
            assert_eq!(
                origin.map(|f| f.evidence.to_string()).as_deref(),
                Some(
                    "the output's \"5 GB\" is read here from a page that says it is outdated (the number is written \
                     first at step 3); expected 50 GB"
                )
            );
        }
    }
}
