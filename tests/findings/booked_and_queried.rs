//! Calls whose arguments say something other than what the run asked or read: a time booked at
//! the time zone's offset of the other season, a top-N query sorted the wrong way, a record acted
//! on at a superseded revision, a change made on a "sure" that answered a request for details;
//! and what is no finding: a percentage that rounds a fraction a tool gave (docs/METHODS.md,
//! "Actions", "Grounding", "Values in context"). Each fault has a correct twin.

use falat::diagnosis::Signal;
use serde_json::json;

use crate::chat::{assistant, call, evidence, falat, fixture, load, steps_with, system, user};

/// Asserts FALAT's step and agent for the run of fixture `rel`.
fn named(rel: &str, step: usize, agent: &str) {
    let d = falat(&fixture(rel));
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(step), Some(agent)), "{rel}: {}", d.reason);
}

/// A scheduling run: the user asks for 9am their time, the profile gives their zone, the event
/// is created at `start`.
fn booking(start: &str) -> falat::model::Trajectory {
    let mut m = vec![
        system("You schedule meetings for the signed-in user."),
        user("Set up a 30 min call with Priya next Tuesday at 9am my time, titled 'Q2 sync'."),
    ];
    m.extend(call(
        "c1",
        "get_user",
        json!({"user_id": "u_2231"}),
        r#"{"name": "Dana", "timezone": "America/New_York"}"#,
    ));
    m.extend(call(
        "c2",
        "create_event",
        json!({"title": "Q2 sync", "start": start, "attendees": ["priya@example.com"]}),
        r#"{"event_id": "evt_1", "status": "confirmed"}"#,
    ));
    m.push(assistant("Booked: Q2 sync on Tuesday at 9:00 AM your time."));
    load(m)
}

#[test]
fn a_time_booked_at_the_zone_s_offset_of_the_other_season_is_the_decisive_call() {
    // 2025-03-11: daylight time began in New York on 9 March, so 9:00 there is 13:00Z; 14:00Z is
    // 9:00 at the standard offset, 10:00 that day.
    let t = booking("2025-03-11T14:00:00Z");
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::ArgumentMismatch),
        "books 2025-03-11T14:00:00Z, which is 10:00 in America/New_York on 2025-03-11 (EDT, UTC−04:00); \
         the 09:00 asked for is 13:00 UTC: the offset used, UTC−05:00, is not the one in force that day"
    );
    assert_eq!(falat(&t).decisive_step, Some(4));
    // The right offset for the date, in March and in January: no finding.
    assert_eq!(steps_with(&booking("2025-03-11T13:00:00Z"), Signal::ArgumentMismatch), Vec::<usize>::new());
    assert_eq!(steps_with(&booking("2025-01-14T14:00:00Z"), Signal::ArgumentMismatch), Vec::<usize>::new());
    // The same time written with the wrong offset.
    assert_eq!(steps_with(&booking("2025-03-11T09:00:00-05:00"), Signal::ArgumentMismatch), vec![4]);
    // A first user's OpenAI Agents SDK run of the same fault, with a recovered date-format error.
    named(
        "handbuilt/openai-agents/meeting_booked_at_standard_time_in_march.openai-agents.json",
        10,
        "Scheduling Agent",
    );
}

/// A reporting run: the task asks `question`, the agent runs `query` and answers.
fn top_n(question: &str, query: &str) -> falat::model::Trajectory {
    let mut m = vec![system("You answer questions from the analytics database with run_sql."), user(question)];
    m.extend(call(
        "c1",
        "run_sql",
        json!({ "query": query }),
        " endpoint | p95_ms\n----------+-------\n GET /a   |  38.2\n GET /b   |  41.7\n GET /c   |  44.9\n(3 rows)",
    ));
    m.push(assistant("Here are the three endpoints: GET /a, GET /b and GET /c."));
    load(m)
}

#[test]
fn a_top_n_query_sorted_the_other_way_than_the_task_asks_is_found_at_the_query() {
    let worst = "Which 3 endpoints had the worst p95 latency yesterday?";
    let asc = "SELECT endpoint, p95_ms FROM latency GROUP BY endpoint ORDER BY p95_ms ASC LIMIT 3;";
    let t = top_n(worst, asc);
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![2]);
    assert!(
        evidence(&t, 2, Signal::ArgumentMismatch).starts_with(
            "sorts by p95_ms ascending (`ORDER BY p95_ms ASC`) and keeps the first rows, the lowest values"
        ),
        "{}",
        evidence(&t, 2, Signal::ArgumentMismatch)
    );
    // No direction is ascending too; "slowest" asks for the highest.
    let t =
        top_n("List the 3 slowest endpoints by p95.", "SELECT endpoint, p95_ms FROM latency ORDER BY p95_ms LIMIT 3");
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![2]);
    // The right direction, a request for the lowest, a query without a bound: no finding.
    let desc = "SELECT endpoint, p95_ms FROM latency GROUP BY endpoint ORDER BY p95_ms DESC LIMIT 3;";
    assert_eq!(steps_with(&top_n(worst, desc), Signal::ArgumentMismatch), Vec::<usize>::new());
    let fastest = "Which 3 endpoints had the lowest p95 latency yesterday?";
    assert_eq!(steps_with(&top_n(fastest, asc), Signal::ArgumentMismatch), Vec::<usize>::new());
    let unbounded = "SELECT endpoint, p95_ms FROM latency ORDER BY p95_ms ASC";
    assert_eq!(steps_with(&top_n(worst, unbounded), Signal::ArgumentMismatch), Vec::<usize>::new());
    // A sort by another measure than the one the task names is not read.
    let other = "SELECT endpoint, requests FROM latency ORDER BY requests ASC LIMIT 3;";
    assert_eq!(steps_with(&top_n(worst, other), Signal::ArgumentMismatch), Vec::<usize>::new());
}

/// A purchasing run: the quote, the discount applied to it (revision 2), then the order placed
/// with `order_args`.
fn order(order_args: serde_json::Value) -> falat::model::Trajectory {
    let mut m = vec![
        system("You buy equipment for the IT team."),
        user("Get a quote for 10 switches from Norvik, apply our code SAVE10 and place the order."),
    ];
    m.extend(call(
        "c1",
        "get_quote",
        json!({"sku": "SW-24", "qty": 10}),
        r#"{"quote_id": "Q-1", "version": 1, "total": 500.0}"#,
    ));
    m.extend(call(
        "c2",
        "apply_discount",
        json!({"quote_id": "Q-1", "code": "SAVE10"}),
        r#"{"quote_id": "Q-1", "version": 2, "supersedes_version": 1, "total": 450.0}"#,
    ));
    m.extend(call("c3", "place_order", order_args, r#"{"order_id": "PO-7", "status": "placed"}"#));
    m.push(assistant("Order PO-7 is placed."));
    load(m)
}

#[test]
fn a_record_acted_on_at_a_superseded_revision_is_found_at_the_call() {
    let t = order(json!({"quote_id": "Q-1", "amount": 500.0}));
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![6]);
    assert_eq!(
        evidence(&t, 6, Signal::IgnoredResult),
        "acts on revision 1 of Q-1 with total 500 where it is now 450; step 5 returned revision 2 of it"
    );
    let t = order(json!({"quote_id": "Q-1", "quote_version": 1}));
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![6]);
    // The current revision: no finding.
    assert_eq!(
        steps_with(&order(json!({"quote_id": "Q-1", "amount": 450.0})), Signal::IgnoredResult),
        Vec::<usize>::new()
    );
    assert_eq!(
        steps_with(&order(json!({"quote_id": "Q-1", "quote_version": 2})), Signal::IgnoredResult),
        Vec::<usize>::new()
    );
    // A first user's LangGraph supervisor run: the PO raised from version 1 is named; the
    // supervisor handing the next part of the request to po_agent, and quote_agent handing back,
    // are no wrong delegation.
    let rel = "handbuilt/langsmith/po_from_superseded_quote.langsmith.json";
    let t = fixture(rel);
    assert_eq!(steps_with(&t, Signal::WrongDelegation), Vec::<usize>::new());
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![17]);
    named(rel, 17, "po_agent");
}

/// A bank desk whose policy asks for an explicit yes before a transfer: the agent asks for the
/// member's date of birth, the member answers "sure, …", then `then` (the agent's turns).
fn transfer(then: Vec<serde_json::Value>) -> falat::model::Trajectory {
    let mut m = vec![
        system(
            "Transfers are consequential. Before calling the tool, ask the member to confirm and wait for an explicit \"yes\".",
        ),
        user("Hi, please move $200 from savings to checking."),
        assistant("I can help. First I need to verify your identity: could you give me your date of birth?"),
        user("sure, it's 1988-03-14"),
    ];
    m.extend(call("c1", "verify_member", json!({"dob": "1988-03-14"}), r#"{"verified": true, "member_id": "M-1"}"#));
    m.extend(then);
    m.extend(call(
        "c2",
        "create_transfer",
        json!({"member_id": "M-1", "from": "savings", "to": "checking", "amount": 200}),
        r#"{"transfer_id": "T-9", "status": "completed"}"#,
    ));
    m.push(assistant("Done: $200 moved to checking."));
    load(m)
}

#[test]
fn a_sure_that_answers_a_request_for_details_is_no_confirmation() {
    // "sure, it's 1988-03-14" gives the date of birth; nobody confirmed the transfer.
    let t = transfer(Vec::new());
    assert_eq!(steps_with(&t, Signal::UnconfirmedAction), vec![6]);
    assert_eq!(falat(&t).decisive_step, Some(6));
    // The agent proposes the transfer and the member says yes: confirmed.
    let t = transfer(vec![
        assistant("Thanks, verified. Shall I move $200.00 from savings to checking now? There is no fee."),
        user("yes"),
    ]);
    assert_eq!(steps_with(&t, Signal::UnconfirmedAction), Vec::<usize>::new());
}

#[test]
fn a_percentage_that_rounds_a_fraction_a_tool_gave_is_sourced() {
    let ratio = |answer: &str| {
        let mut m = vec![user("Is the 429 ratio on payments-api coming down?")];
        m.extend(call(
            "c1",
            "get_metrics",
            json!({"metric": "http_429_ratio", "window": "5m"}),
            r#"{"points": [["06:45", 0.171], ["06:46", 0.184], ["06:47", 0.179]]}"#,
        ));
        m.push(assistant(answer));
        load(m)
    };
    let t = ratio("The 429 ratio is still ~18% over the last 5 minutes.");
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), Vec::<usize>::new());
    // 25% rounds nothing the tool gave.
    let t = ratio("The 429 ratio is still ~25% over the last 5 minutes.");
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![3]);
    assert_eq!(evidence(&t, 3, Signal::UnsourcedValue), "states 25 with no earlier source");
}

#[test]
fn code_written_for_a_newer_python_than_the_task_stresses_is_found_at_the_edit() {
    // SWE-agent: "dotfig still supports Python 3.8"; the fix writes `key.removeprefix(prefix)`.
    let rel = "handbuilt/coding/removeprefix_against_python38.swe-agent.traj";
    let t = fixture(rel);
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![20]);
    assert_eq!(
        evidence(&t, 20, Signal::IgnoredResult),
        "writes `return key.removeprefix(prefix)`: str.removeprefix is new in Python 3.9, but the user stressed Python 3.8 at step 0"
    );
    named(rel, 20, "main");
}

#[test]
fn a_python_here_document_that_rewrites_a_source_file_is_the_edit_its_failing_check_blames() {
    // mini-SWE-agent: a refused two-action turn, then `python - <<'EOF'` writing
    // src/httpkit/client.py; the test after it fails (2500.0 != 2.5).
    let rel = "handbuilt/mini-swe-agent/timeout_ms_passed_as_seconds.mini-swe-agent.json";
    let t = fixture(rel);
    assert_eq!(steps_with(&t, Signal::FailedAction), vec![18]);
    assert_eq!(steps_with(&t, Signal::NoProgress), Vec::<usize>::new(), "one observation answers both refused actions");
    named(rel, 18, "mini-swe-agent");
}

#[test]
fn a_type_check_that_passes_again_after_a_fix_is_recovered_whatever_a_later_test_run_shows() {
    // The rename breaks an import (tsc fails), the import is fixed and tsc passes; the test run
    // after it fails. The first edit's failed type-check was work in progress: the test run
    // judges the work after the fix.
    let t = crate::chat::claude_code(
        "Rename fetchUser to loadUser everywhere in src/api.",
        &[
            (
                "Edit",
                json!({"file_path": "/repo/src/api/users.ts", "old_string": "export function fetchUser(", "new_string": "export function loadUser("}),
                "The file /repo/src/api/users.ts has been updated.",
                false,
            ),
            (
                "Bash",
                json!({"command": "npx tsc --noEmit"}),
                "src/api/index.ts(3,10): error TS2305: Module './users' has no exported member 'fetchUser'.",
                true,
            ),
            (
                "Edit",
                json!({"file_path": "/repo/src/api/index.ts", "old_string": "import { fetchUser } from './users';", "new_string": "import { loadUser } from './users';"}),
                "The file /repo/src/api/index.ts has been updated.",
                false,
            ),
            ("Bash", json!({"command": "npx tsc --noEmit && echo TSC_OK"}), "TSC_OK", false),
            (
                "Bash",
                json!({"command": "npm test"}),
                "FAIL src/api/index.test.ts\n  ● exports fetchUser\nTests:       1 failed, 9 passed, 10 total",
                true,
            ),
        ],
        "Renamed fetchUser to loadUser; the type-check and the tests pass.",
    );
    let failed = steps_with(&t, Signal::FailedAction);
    assert!(!failed.contains(&1) && failed.contains(&5), "{failed:?}");
}
