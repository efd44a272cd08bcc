//! Kinds of fault first users wrote into their runs, each read as a kind: an edit of a file the
//! traceback does not go through, a cluster change sent to the current (production) context, a
//! loop over pages that stops before the last, a plan that leaves out a step of the procedure
//! the user asked to follow, a change made while the user was still checking, a conversion
//! written the wrong way round, a namesake page opened, a figure read under a list's lead-in
//! column, a stock figure stated after the agent's own reservation, a day counted in UTC against
//! the documented zone, a quotation credited to the wrong person, a meeting booked a day late
//! across the date line, a total replaced by a later result and a top-N sort the wrong way in
//! pandas or an API, a lower bound taken for the count, "none" concluded from one narrow query
//! that found nothing, a plan that drops a requirement the task insists on, a failed audit told
//! as satisfied, a cluster change that drops the context the calls before it named, a confirmed
//! sum sent in another currency, a sub-agent's "complete set" short of its own grep, a refund
//! amount read from the next charge of a listing, one fixed offset across a daylight-saving change
//! a month's last day set as an exclusive end, and a wrong figure chosen from results that listed
//! the right one beside it (docs/METHODS.md,
//! "Targets", "Instructions", "Grounding", "Actions"). Each fault has a correct twin.

use falat::diagnosis::Signal;
use serde_json::json;

use crate::chat::{assistant, call, evidence, falat, falat_with, fixture, load, steps_with, system, user};

/// Asserts FALAT's step and agent for the run of fixture `rel`, and returns the verdict's reason.
fn named(rel: &str, step: usize, agent: &str) -> String {
    let d = falat(&fixture(rel));
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(step), Some(agent)), "{rel}: {}", d.reason);
    d.reason.to_string()
}

#[test]
fn coding_sessions_name_the_edit_the_plan_or_the_command_that_went_wrong() {
    let r = named("handbuilt/claude-code/edit_outside_traceback.jsonl", 12, "claude");
    assert!(
        r.contains("which the traceback at step 3 does not go through: it fails in invoicekit/utils/durations.py"),
        "{r}"
    );
    let r = named("handbuilt/claude-code/helm_upgrade_on_prod_context.jsonl", 14, "claude");
    assert!(r.contains("gke_acme-prod_europe-west1_prod-1 (production, step 9), while the c"), "{r}");
    let r = named("handbuilt/codex/pages_range_stops_before_last.jsonl", 15, "codex");
    assert!(r.contains("`range(2, total_pages)` counts from 2 and stops before total_pages"), "{r}");
    let r = named("handbuilt/codex/release_plan_leaves_out_lock_step.jsonl", 10, "codex");
    assert!(r.contains("the plan leaves out step 3 of RELEASING.md, read at step 5"), "{r}");
    let r = named("handbuilt/openhands/release_skips_make_lock.json", 14, "CodeActAgent");
    assert!(r.contains("the plan says to skip step 4 of RELEASING.md, read at step 4"), "{r}");
    let r = named("handbuilt/gemini-cli/gemini_day_counted_in_utc.json", 13, "gemini");
    assert!(r.contains("bounds created_at by the bare date 2025-10-05 in the session's zone, while step 3 says days are in America/Los_Angeles"), "{r}");
    let r = named("handbuilt/openhands/p95_read_as_p99.json", 13, "CodeActAgent");
    assert!(r.contains("states 188 for \"p99_ms\", but the table at step 9 gives 188 under \"p95_ms\""), "{r}");
    // The endpoint read from the neighbouring line is found where it is written; the verdict
    // stays with the ranking (the edit the failing diff shows).
    let t = fixture("handbuilt/mini-swe-agent/endpoint_of_neighbouring_row.mini-swe-agent.json");
    assert_eq!(
        evidence(&t, 13, Signal::IgnoredResult),
        "states https://api.arn.nimbus.example for eu-central-2, but step 12 gives it on the eu-north-1 line; the \
         eu-central-2 line gives https://api.fra2.nimbus.example"
    );
}

#[test]
fn desks_and_teams_name_the_step_that_misread_or_acted_too_soon() {
    let r = named("handbuilt/openai-chat/cancel_while_user_checks_with_husband.openai-chat.json", 12, "assistant");
    assert!(r.contains("cancel_reservation changes state without the user's confirmation"), "{r}");
    let r = named("handbuilt/openai-chat/wire_converted_wrong_way.openai-chat.json", 14, "assistant");
    assert!(r.contains("converts EUR to USD by dividing by 1.0842, which step 13 gives as USD per 1 EUR: 500.00 EUR is 542.10 USD, not 461.17"), "{r}");
    let r = named("handbuilt/magentic-one/other_portland_opened.json", 12, "WebSurfer");
    assert!(r.contains("asks for Portland, Maine: another Portland"), "{r}");
    let r = named("handbuilt/langsmith/stock_stated_after_own_reservation.langsmith.json", 14, "agent");
    assert!(
        r.contains(
            "states 120, the \"available\" step 3 read, but reserve_stock at step 11 took 80 of it since: 40 are left"
        ),
        "{r}"
    );
    let r = named("handbuilt/otel/quote_credited_to_ceo.otlp.json", 9, "writer");
    assert!(r.contains("to Marta Ruiz; step 6 gives it to Dev Patel"), "{r}");
    // The free-busy check already asks for the wrong day; the booking repeats it.
    let r = named("handbuilt/otel/tokyo_sync_booked_a_day_late.otlp.json", 9, "scheduler");
    assert!(
        r.contains("which is 09:00 on Wednesday 2025-06-11 in Asia/Tokyo; the Tuesday 09:00 asked for there is Monday 2025-06-09 20:00 at UTC−04:00"),
        "{r}"
    );
}

#[test]
fn a_bound_taken_for_a_count_a_none_from_one_narrow_query_and_a_dropped_requirement_are_named() {
    let r = named("handbuilt/magentic-one/main_breaks_lower_bound_as_count.json", 17, "Orchestrator");
    assert!(
        r.contains(
            "uses 140 as the exact figure; step 16 gives it only as a bound: \"more than 140 water main breaks\""
        ),
        "{r}"
    );
    let r = named("handbuilt/smolagents/cve_none_from_narrow_query.json", 11, "agent");
    assert!(
        r.contains("concludes \"no CVE\" from one search that found nothing (step 10), whose query was narrow: \"jinja2\" CVE-2024 \"sandbox escape\""),
        "{r}"
    );
    let rel = "handbuilt/coding/timeout_rename_drops_deprecation.swe-agent.traj";
    let r = named(rel, 15, "main");
    assert!(
        r.contains(
            "passed both independence and sufficiency and the earliest holds a finding the ranking has no feature for"
        ),
        "{r}"
    );
    let e = evidence(&fixture(rel), 15, Signal::IgnoredResult);
    assert!(
        e.starts_with(
            "neither the plan nor a call after it writes `DeprecationWarning` or `TypeError`, which the request at step 0 \
             insists on: \"Backwards compatibility: this ships in a minor release, so the old"
        ),
        "{e}"
    );
    // The twin: a plan that keeps the old keyword with its warning drops nothing.
    let mut t = fixture(rel);
    t.steps[15].content.push_str("\n5. Keep `timeout` as a deprecated alias: emit a `DeprecationWarning`, raise `TypeError` when both are passed.");
    assert!(!steps_with(&t, Signal::IgnoredResult).contains(&15), "{}", evidence(&t, 15, Signal::IgnoredResult));
}

#[test]
fn a_gate_told_satisfied_a_context_dropped_a_currency_changed_and_a_coded_sum_are_named() {
    let r = named("handbuilt/gemini-cli/gemini_audit_gate_told_satisfied.jsonl", 18, "gemini");
    assert!(
        r.contains("says `npm audit --audit-level=high` \"is satisfied\" right after it failed at step 17: 4 vulnerabilities (2 moderate, 2 high)"),
        "{r}"
    );
    let r = named("handbuilt/codex/scale_on_staging_context.jsonl", 16, "codex");
    assert!(
        r.contains(
            "with no context named, so it goes to the current one, gke_acme-staging_europe-west1_main (staging, step 4)"
        ),
        "{r}"
    );
    let e = evidence(&fixture("handbuilt/codex/scale_on_staging_context.jsonl"), 16, Signal::ArgumentMismatch);
    assert!(e.ends_with("(staging, step 4); step 13 named the production one"), "{e}");
    let r = named("handbuilt/openai-chat/wire_sent_in_usd.openai-chat.json", 16, "assistant");
    assert!(
        r.contains("create_international_wire passes currency USD, but the proposal at step 14 that the user confirmed at step 15 names £2,400.00"),
        "{r}"
    );
    let r = named("handbuilt/langsmith/hotel_total_miscalculated.langsmith.json", 12, "planner");
    assert!(r.contains("writes \"3 x 265 = EUR 695\", which comes to 795"), "{r}");
}

#[test]
fn a_sub_agent_s_complete_set_that_leaves_out_a_file_of_its_own_grep_is_named() {
    let r = named("handbuilt/claude-code/subagent_complete_set_leaves_out_worker.jsonl", 12, "general-purpose");
    assert!(
        r.contains("says \"That is the complete set\", but its searches (steps 5, 8) listed 7 files; it leaves out worker/jobs/export.py"),
        "{r}"
    );
    use falat::substrate::signals::instructions::claims_nothing_more;
    assert!(claims_nothing_more("That is the complete set: 6 files, 12 references."));
    assert!(!claims_nothing_more("Here is the complete set of changes I made."));
}

/// A gate run: `npm audit` exits `code` with `output`, then the agent says `told`.
fn audit(code: i32, output: &str, told: &str) -> falat::model::Trajectory {
    let mut m = vec![system("You maintain the storefront."), user("Make `npm audit --audit-level=high` pass.")];
    m.extend(call(
        "c1",
        "run_shell_command",
        json!({"command": "npm audit --audit-level=high"}),
        &format!("Command: npm audit --audit-level=high\nStdout: {output}\nExit Code: {code}"),
    ));
    m.push(assistant(told));
    load(m)
}

#[test]
fn a_gate_is_told_passing_only_when_it_passed() {
    let found = "braces <3.0.3\nSeverity: high\n2 vulnerabilities (1 moderate, 1 high)";
    let t = audit(1, found, "Only moderate advisories are left, so `npm audit --audit-level=high` is satisfied.");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![4]);
    let t = audit(1, found, "`npm audit --audit-level=high` still fails on braces; I will bump micromatch.");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new());
    let t = audit(0, "found 0 vulnerabilities", "`npm audit --audit-level=high` is satisfied now.");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new());
}

/// A wire desk: the proposal names `proposal`, the user says yes, the call passes `currency`.
fn wire_in(proposal: &str, currency: &str) -> falat::model::Trajectory {
    let mut m = vec![system("You send wires for business customers."), user("Pay Hartwell Textiles their invoice.")];
    m.push(assistant(&format!("The payee receives {proposal}. Shall I send it? (yes/no)")));
    m.push(user("yes, go ahead"));
    m.extend(call(
        "c1",
        "create_international_wire",
        json!({"payee_id": "pye_7Qm2", "amount": 2400.0, "currency": currency}),
        r#"{"wire_id": "WR-1", "status": "submitted"}"#,
    ));
    load(m)
}

#[test]
fn a_confirmed_sum_is_sent_in_its_own_currency() {
    assert_eq!(steps_with(&wire_in("£2,400.00", "USD"), Signal::ArgumentMismatch), vec![4]);
    assert_eq!(steps_with(&wire_in("£2,400.00", "GBP"), Signal::ArgumentMismatch), Vec::<usize>::new());
}

/// A research run: the report's reader says `report`, then the plan multiplies `count`.
fn breaks(report: &str) -> falat::model::Trajectory {
    let mut m = vec![
        system("You answer questions from the attached report."),
        user("How much did the district spend on main break repairs in 2024?"),
    ];
    m.extend(call("c1", "read_report", json!({"page": 7}), report));
    m.push(assistant("Total: 140 main breaks × $12,400 = $1,736,000."));
    load(m)
}

#[test]
fn a_bound_is_no_count_but_a_count_is() {
    let bound = breaks("Crews responded to more than 140 water main breaks in 2024; average cost $12,400.");
    assert_eq!(steps_with(&bound, Signal::IgnoredResult), vec![4]);
    let count = breaks("Table 3: 140 water main breaks repaired in 2024; average cost $12,400.");
    assert_eq!(steps_with(&count, Signal::IgnoredResult), Vec::<usize>::new());
    // A limit is no partial count: "up to 600 requests per minute", then 600 per minute.
    let limit = breaks("The API allows up to 600 requests per minute; 140 water main breaks; average cost $12,400.");
    assert_eq!(steps_with(&limit, Signal::IgnoredResult), Vec::<usize>::new());
}

/// A search for `query` that found nothing, then `conclusion`.
fn none_found(query: &str, conclusion: &str) -> falat::model::Trajectory {
    let mut m = vec![system("You check packages for advisories."), user("Did jinja2 have a CVE in 2024?")];
    m.extend(call("c1", "web_search", json!({"query": query}), "No results found."));
    m.push(assistant(conclusion));
    load(m)
}

#[test]
fn none_is_concluded_from_a_narrow_query_only() {
    let narrow =
        none_found("\"jinja2\" \"sandbox escape\" CVE-2024 site:nvd.nist.gov", "So jinja2 had no CVE in 2024.");
    assert_eq!(steps_with(&narrow, Signal::PartialSearch), vec![4]);
    let broad = none_found("jinja2 CVE 2024", "So jinja2 had no CVE in 2024.");
    assert_eq!(steps_with(&broad, Signal::PartialSearch), Vec::<usize>::new());
    let careful = none_found(
        "\"jinja2\" \"sandbox escape\" site:nvd.nist.gov",
        "That query found nothing; I will search more broadly.",
    );
    assert_eq!(steps_with(&careful, Signal::PartialSearch), Vec::<usize>::new());
}

/// A desk run: the user asks `ask`, confirms with `answer`, and the agent changes state.
fn cancel_after(answer: &str) -> falat::model::Trajectory {
    let mut m = vec![
        system(
            "Before cancelling a reservation you must list the details and obtain explicit user confirmation (yes).",
        ),
        user("Please cancel reservation ZK3F9Q."),
    ];
    m.extend(call(
        "c1",
        "get_reservation_details",
        json!({"reservation_id": "ZK3F9Q"}),
        r#"{"reservation_id": "ZK3F9Q", "status": "active"}"#,
    ));
    m.push(assistant("Reservation ZK3F9Q, JFK to DEN on June 12. Shall I cancel it?"));
    m.push(user(answer));
    m.extend(call(
        "c2",
        "cancel_reservation",
        json!({"reservation_id": "ZK3F9Q"}),
        r#"{"reservation_id": "ZK3F9Q", "status": "cancelled"}"#,
    ));
    m.push(assistant("Cancelled."));
    load(m)
}

#[test]
fn a_go_ahead_put_off_until_someone_is_asked_is_no_confirmation() {
    let t = cancel_after("OK, I think I'll go ahead, but let me just double-check with my husband first.");
    assert_eq!(steps_with(&t, Signal::UnconfirmedAction), vec![6]);
    let t = cancel_after("Yes, go ahead.");
    assert_eq!(steps_with(&t, Signal::UnconfirmedAction), Vec::<usize>::new());
}

/// A wire: the quote gives the rate as USD per 1 EUR and the agent writes `conversion`.
fn wire(conversion: &str) -> falat::model::Trajectory {
    let mut m = vec![system("You help bank customers send wires."), user("Send €500 to my landlord.")];
    m.extend(call(
        "c1",
        "get_fx_quote",
        json!({"sell_currency": "USD", "buy_currency": "EUR"}),
        r#"{"rate": 1.0842, "rate_basis": "USD per 1 EUR"}"#,
    ));
    m.push(assistant(&format!("Amount converted: {conversion}. Shall I send it?")));
    load(m)
}

#[test]
fn a_conversion_is_checked_against_the_rate_s_basis() {
    assert_eq!(steps_with(&wire("€500.00 ÷ 1.0842 = $461.17"), Signal::Miscalculation), vec![4]);
    assert_eq!(steps_with(&wire("€500.00 × 1.0842 = $542.10"), Signal::Miscalculation), Vec::<usize>::new());
}

/// An order desk: stock read, 80 reserved (or not, without `reserve`), then `told`.
fn stock(reserve: bool, told: &str) -> falat::model::Trajectory {
    let mut m = vec![
        system("You manage warehouse orders."),
        user("Reserve 80 PMP-220 for Helios, then check Brightline's 60."),
    ];
    m.extend(call(
        "c1",
        "get_stock",
        json!({"sku": "PMP-220", "warehouse": "RTM"}),
        r#"{"sku": "PMP-220", "warehouse": "RTM", "available": 120}"#,
    ));
    if reserve {
        m.extend(call(
            "c2",
            "reserve_stock",
            json!({"sku": "PMP-220", "warehouse": "RTM", "qty": 80}),
            r#"{"reservation_id": "RSV-1", "status": "reserved"}"#,
        ));
    }
    m.push(assistant(told));
    load(m)
}

#[test]
fn a_stock_figure_stated_after_the_agent_s_own_reservation_is_stale() {
    let told = "Rotterdam has 120 units available, which covers Brightline's 60.";
    assert_eq!(steps_with(&stock(true, told), Signal::IgnoredResult), vec![6]);
    // Stated before any reservation, or the figure left after it: no finding.
    assert_eq!(steps_with(&stock(false, told), Signal::IgnoredResult), Vec::<usize>::new());
    let left = "Rotterdam has 40 units left, short of Brightline's 60.";
    assert_eq!(steps_with(&stock(true, left), Signal::IgnoredResult), Vec::<usize>::new());
}

/// A checkout: the cart's total, a promo code that replaces it, then the charge of `amount`.
fn charge(amount: f64) -> falat::model::Trajectory {
    let mut m = vec![system("You run checkouts."), user("Apply SPRING10 to cart C-4471 and charge my card.")];
    m.extend(call("c1", "get_cart", json!({"cart_id": "C-4471"}), r#"{"cart_id": "C-4471", "total": 120.0}"#));
    m.extend(call(
        "c2",
        "apply_promo",
        json!({"cart_id": "C-4471", "code": "SPRING10"}),
        r#"{"cart_id": "C-4471", "total": 108.0}"#,
    ));
    m.extend(call("c3", "charge_card", json!({"cart_id": "C-4471", "amount": amount}), r#"{"status": "charged"}"#));
    m.push(assistant("Charged."));
    load(m)
}

#[test]
fn a_charge_at_a_total_a_later_result_replaced_is_found_at_the_charge() {
    let t = charge(120.0);
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![6]);
    assert_eq!(
        evidence(&t, 6, Signal::IgnoredResult),
        "passes 120 for C-4471, the total step 3 returned; step 5, later, returned total 108 for it"
    );
    assert_eq!(steps_with(&charge(108.0), Signal::IgnoredResult), Vec::<usize>::new());
}

/// An analytics run: the task asks `question`, the agent runs `code` in its Python tool.
fn analysis(question: &str, code: &str) -> falat::model::Trajectory {
    let mut m = vec![system("You answer questions about the sales data with run_python."), user(question)];
    m.extend(call(
        "c1",
        "run_python",
        json!({ "code": code }),
        "   customer  revenue\n0  Acme   1200\n1  Birch  1350\n2  Cobalt 1410",
    ));
    m.push(assistant("The three customers are Acme, Birch and Cobalt."));
    load(m)
}

#[test]
fn a_top_n_sort_the_other_way_is_read_in_pandas_and_api_arguments() {
    let top = "Who are our top 3 customers by revenue this quarter?";
    let t = analysis(top, r#"df.sort_values("revenue").head(3)"#);
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![2]);
    assert_eq!(
        steps_with(&analysis(top, r#"df.nlargest(3, "revenue")"#), Signal::ArgumentMismatch),
        Vec::<usize>::new()
    );
    assert_eq!(steps_with(&analysis(top, r#"df.nsmallest(3, "revenue")"#), Signal::ArgumentMismatch), vec![2]);
    let mut m = vec![system("You answer questions with the CRM API."), user(top)];
    m.extend(call(
        "c1",
        "list_customers",
        json!({"sort": "revenue", "order": "asc", "limit": 3}),
        r#"{"customers": []}"#,
    ));
    assert_eq!(steps_with(&load(m), Signal::ArgumentMismatch), vec![2]);
}

/// A scheduling run across the date line: 9:00 on Tuesday in Tokyo, booked at `start`.
fn tokyo(start: &str) -> falat::model::Trajectory {
    let mut m = vec![
        system("You schedule meetings."),
        user("Set up a call with Kenji from the Tokyo office next Tuesday at 9:00 am their time."),
    ];
    m.extend(call(
        "c1",
        "create_event",
        json!({"title": "Sync", "start": start}),
        r#"{"event_id": "evt_1", "status": "confirmed"}"#,
    ));
    m.push(assistant("Booked."));
    load(m)
}

#[test]
fn a_meeting_booked_a_day_late_across_the_date_line_is_found_at_the_booking() {
    assert_eq!(steps_with(&tokyo("2025-06-10T20:00:00-04:00"), Signal::ArgumentMismatch), vec![2]);
    // Monday 20:00 in New York is Tuesday 9:00 in Tokyo.
    assert_eq!(steps_with(&tokyo("2025-06-09T20:00:00-04:00"), Signal::ArgumentMismatch), Vec::<usize>::new());
}

#[test]
fn a_refund_amount_read_from_the_next_charge_is_found_at_the_refund() {
    let r = named("handbuilt/openai-agents/refund_amount_from_next_charge.openai-agents.json", 13, "Refunds Agent");
    assert!(
        r.contains(
            "passes amount 124.5 for ch_3PqB8m, but step 10 gives ch_3PqB8m amount 142.5; 124.5 is the amount of the next record (ch_3PqC2r)"
        ),
        "{r}"
    );
}

/// A refund desk: `list_charges` returns three charges; the agent refunds `charge` for `amount`.
fn refund(charge: &str, amount: f64, ask: &str) -> falat::model::Trajectory {
    let mut m = vec![system("You handle refunds."), user(ask)];
    m.extend(call(
        "c1",
        "list_charges",
        json!({"customer_id": "cus_7"}),
        r#"{"charges": [{"charge_id": "ch_A1", "amount": 58.0}, {"charge_id": "ch_B2", "amount": 215.4}, {"charge_id": "ch_C3", "amount": 39.9}]}"#,
    ));
    m.extend(call("c2", "create_refund", json!({"charge_id": charge, "amount": amount}), r#"{"status": "succeeded"}"#));
    m.push(assistant(&format!("I refunded ${amount:.2}. Thanks for your patience!")));
    load(m)
}

#[test]
fn a_call_passing_another_record_s_figure_is_found_and_its_twins_are_not() {
    let ask = "Please refund my charge of May 3.";
    let t = refund("ch_B2", 39.9, ask);
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::ArgumentMismatch),
        "passes amount 39.9 for ch_B2, but step 3 gives ch_B2 amount 215.4; 39.9 is the amount of the next record (ch_C3)"
    );
    // The named record's own amount, and a partial amount the user asked for, are no mismatch.
    assert_eq!(steps_with(&refund("ch_B2", 215.4, ask), Signal::ArgumentMismatch), Vec::<usize>::new());
    let partial = "Please refund 39.90 of my charge of May 3, the rest was fine.";
    assert_eq!(steps_with(&refund("ch_B2", 39.9, partial), Signal::ArgumentMismatch), Vec::<usize>::new());
    // The closing "Thanks for your patience" is no asserted value, and "$215.40" is the 215.4
    // the listing gave.
    assert_eq!(steps_with(&refund("ch_B2", 215.4, ask), Signal::UnverifiedAssertion), Vec::<usize>::new());
}

#[test]
fn one_fixed_offset_across_a_daylight_saving_change_is_found_at_the_code() {
    let r = named("handbuilt/smolagents/sla_outage_fixed_pacific_offset.json", 9, "agent");
    assert!(
        r.contains(
            "reads every time at the fixed offset UTC−08:00, but step 4 gives them in PST and PDT (UTC−07:00): the times in PDT come out an hour off"
        ),
        "{r}"
    );
    // The thought that rewrote the failed code after the `strptime` error did not go past it.
    let t = fixture("handbuilt/smolagents/sla_outage_fixed_pacific_offset.json");
    assert_eq!(steps_with(&t, Signal::IgnoredToolError), Vec::<usize>::new());
}

/// An outage report: the status page's updates, then `code` run over them.
fn outage(posted: [&str; 2], code: &str) -> falat::model::Trajectory {
    let mut m = vec![system("You compute outage durations."), user("How long was INC-9 down, in minutes?")];
    m.extend(call(
        "c1",
        "get_incident",
        json!({"id": "INC-9"}),
        &format!(r#"{{"updates": [{{"status": "Investigating", "posted": "{}"}}, {{"status": "Resolved", "posted": "{}"}}]}}"#, posted[0], posted[1]),
    ));
    m.extend(call("c2", "run_python", json!({ "code": code }), "duration_min: 150.0"));
    m.push(assistant("The outage lasted 150 minutes."));
    load(m)
}

#[test]
fn a_fixed_offset_is_found_only_where_the_times_change_offset() {
    let fixed = "tz = timezone(timedelta(hours=-5))\nstart = parse(a).replace(tzinfo=tz)";
    let across = ["Mar 9, 2025, 12:30 AM EST", "Mar 9, 2025, 4:00 AM EDT"];
    assert_eq!(steps_with(&outage(across, fixed), Signal::ArgumentMismatch), vec![4]);
    // Both times in standard time, or the zone named by its IANA name: no finding.
    let standard = ["Mar 2, 2025, 12:30 AM EST", "Mar 2, 2025, 3:00 AM EST"];
    assert_eq!(steps_with(&outage(standard, fixed), Signal::ArgumentMismatch), Vec::<usize>::new());
    let named_zone = "tz = ZoneInfo(\"America/New_York\")\nstart = parse(a).replace(tzinfo=tz)";
    assert_eq!(steps_with(&outage(across, named_zone), Signal::ArgumentMismatch), Vec::<usize>::new());
}

#[test]
fn a_month_s_last_day_set_as_an_exclusive_end_is_found_at_the_patch() {
    let r = named("handbuilt/codex/month_end_as_exclusive_bound.jsonl", 14, "codex");
    assert!(
        r.contains("sets `end = start.replace(day=last_day)`, the month's last day, as an end it calls exclusive"),
        "{r}"
    );
}

#[test]
fn a_wrong_figure_a_results_page_listed_beside_the_right_one_is_wrong_where_it_was_chosen() {
    // Without the expected output the namesake click is named by its own finding; with it, the
    // wrong figure's origin is the click too, not the results page that listed both cities.
    named("handbuilt/magentic-one/springfield_namesake_from_results.json", 16, "WebSurfer");
    let d = falat_with(&fixture("handbuilt/magentic-one/springfield_namesake_from_results.json"), true);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(16), Some("WebSurfer")), "{}", d.reason);
    assert!(
        d.reason.to_string().contains(
            "the output's \"169176\" (written \"169,176\") is chosen here; step 12 listed it beside the expected figure"
        ),
        "{}",
        d.reason
    );
}
