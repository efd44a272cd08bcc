//! What a tool-using assistant tells or books against what its tools returned (docs/METHODS.md,
//! "Grounding" and "Actions"): a time promised that the tool left empty, a booking made at the
//! clock time it checked but in another zone, and a correct run whose failed query was repaired
//! after a look at the schema and whose percentage is the share of two returned counts; a currency
//! conversion run the wrong way round; an amount filed without the currency the user gave.

use falat::diagnosis::Signal;
use falat::model::Trajectory;
use serde_json::json;

use crate::chat::{assistant, call, evidence, falat, findings, fixture, load, steps_with, system, user};

#[test]
fn a_pickup_promised_for_tomorrow_when_the_refill_has_no_ready_date_is_the_decisive_step() {
    // A held-out user's OpenAI chat log: the refill request goes to the prescriber
    // (`PENDING_PRESCRIBER`, `"estimated_ready": null`, "typical response 1-3 business days"), and
    // the assistant tells the patient to pick it up tomorrow.
    let t = fixture("handbuilt/openai-chat/refill_pickup_promised.openai-chat.json");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![12]);
    assert_eq!(
        evidence(&t, 12, Signal::IgnoredResult),
        "tells the user \"Your lisinopril refill request has gone through (request RR…\" (\"tomorrow\") but the \
         tool result at step 11 gives \"estimated_ready\": null"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(12), Some("assistant")), "{}", d.reason);
}

/// A delivery question: the lookup's result (`eta` as given), then the assistant's answer.
fn delivery(eta: serde_json::Value, answer: &str) -> Trajectory {
    let mut m =
        vec![system("You are the support assistant of a parcel service."), user("When will parcel 88-1042 arrive?")];
    m.extend(call(
        "c1",
        "get_parcel",
        json!({"parcel_id": "88-1042"}),
        &json!({"parcel_id": "88-1042", "status": "held_at_customs", "eta": eta}).to_string(),
    ));
    m.push(assistant(answer));
    load(m)
}

#[test]
fn a_time_told_is_read_against_the_empty_time_of_the_lookup() {
    let promised = delivery(json!(null), "It is held at customs, but it will arrive tomorrow.");
    assert_eq!(steps_with(&promised, Signal::IgnoredResult), vec![4]);
    // The time given by the tool, an answer that owns up to not knowing, or one that tells no time:
    // nothing to find.
    for (eta, answer) in [
        (json!("2026-12-03"), "It is held at customs and should arrive tomorrow, 3 December."),
        (json!(null), "It is held at customs, so I can't say when it will arrive; usually within 2 days."),
        (json!(null), "It is held at customs at the moment; I have opened a ticket with the carrier."),
    ] {
        let t = delivery(eta, answer);
        assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new(), "{answer}");
    }
}

#[test]
fn a_booking_at_the_checked_clock_time_in_another_zone_is_the_decisive_step() {
    // A held-out user's Langfuse trace: the availability check asks for 15:00+01:00 (the user's
    // Berlin time), `create_event` books 15:00Z, an hour later; the calendar echoes 16:00+01:00.
    let t = fixture("handbuilt/langfuse/scheduler_booked_in_utc.langfuse.json");
    assert_eq!(t.steps[12].tool_name.as_deref(), Some("create_event"));
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![12]);
    assert_eq!(
        evidence(&t, 12, Signal::ArgumentMismatch),
        "calls create_event with start 2026-12-09T15:00Z, but its check_availability call at step 10 gave start \
         2026-12-09T15:00+01:00: the same clock time in another zone, 1 h apart"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(12), Some("scheduler")), "{}", d.reason);
}

/// A check of a slot at `checked`, then a booking at `booked` (OpenAI chat shape).
fn booked(checked: &str, booked: &str) -> Trajectory {
    // Berlin is at UTC+01:00 in December (Lisbon, which this test once named, is at UTC+00:00
    // then: its +01:00 is summer time, which `zones::other_season_offset` finds).
    let mut m = vec![user("Book the small room on 9 December at 10:00 my time (Europe/Berlin) for an hour.")];
    m.extend(call("c1", "check_room", json!({"room": "small", "start": checked}), r#"{"free": true}"#));
    m.extend(call("c2", "book_room", json!({"room": "small", "start": booked}), r#"{"booking_id": "BK-2211"}"#));
    m.push(assistant("Booked the small room for 9 December, 10:00-11:00."));
    load(m)
}

#[test]
fn only_the_same_clock_time_in_another_zone_is_a_shift() {
    assert_eq!(
        steps_with(&booked("2026-12-09T10:00:00+01:00", "2026-12-09T10:00:00Z"), Signal::ArgumentMismatch),
        vec![3]
    );
    // The same instant written in another zone, the same zone, or another time: no finding.
    for b in ["2026-12-09T09:00:00Z", "2026-12-09T10:00:00+01:00", "2026-12-09T11:00:00Z"] {
        assert_eq!(
            steps_with(&booked("2026-12-09T10:00:00+01:00", b), Signal::ArgumentMismatch),
            Vec::<usize>::new(),
            "{b}"
        );
    }
}

#[test]
fn a_query_repaired_from_the_schema_and_a_share_of_two_returned_counts_are_no_failure() {
    // A held-out user's pydantic-ai (Logfire OTLP) run: `run_sql` fails on a wrong column, the
    // agent describes the table and reruns the corrected SELECT, then reports "412 of the 9,873
    // orders …, i.e. 4.2%".
    let t = fixture("handbuilt/pydantic-ai/late_orders_share_ok.pydantic-ai.json");
    assert!(t.steps[3].is_error || t.steps[3].content.contains("UndefinedColumn"), "{}", t.steps[3].content);
    assert_eq!(findings(&t), Vec::<(usize, Signal)>::new());
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
}

/// An expense in Swedish kronor added to a report kept in euros: the conversion `from` → `to`,
/// then the line entered with the conversion's result as `amount_eur`.
fn expense(from: &str, to: &str, result: f64) -> Trajectory {
    let mut m = vec![user("Paid 1 250 kr for the hotel in Stockholm on 14 May. Add it to report ER-7 in EUR.")];
    m.extend(call(
        "c1",
        "convert_currency",
        json!({"amount": 1250, "from_currency": from, "to_currency": to, "date": "2025-05-14"}),
        &json!({"amount": 1250.0, "from": from, "to": to, "rate": 10.9215, "result": result}).to_string(),
    ));
    m.extend(call(
        "c2",
        "add_expense_line",
        json!({"report_id": "ER-7", "merchant": "Hotel Rival", "amount_eur": result, "original_currency": "SEK"}),
        r#"{"line_id": 4, "ok": true}"#,
    ));
    m.push(assistant("Added the hotel to ER-7."));
    load(m)
}

#[test]
fn a_conversion_whose_result_is_entered_in_the_currency_it_came_from_is_the_decisive_step() {
    let backwards = expense("EUR", "SEK", 13651.88);
    assert_eq!(steps_with(&backwards, Signal::ArgumentMismatch), vec![1]);
    assert_eq!(
        evidence(&backwards, 1, Signal::ArgumentMismatch),
        "calls convert_currency from EUR to SEK, but step 3 enters its result 13651.88 as amount_eur: the \
         conversion ran the wrong way round"
    );
    assert_eq!(falat(&backwards).decisive_step, Some(1));
    // Converted from kronor to euros, and entered as euros: nothing to find.
    assert_eq!(steps_with(&expense("SEK", "EUR", 114.45), Signal::ArgumentMismatch), Vec::<usize>::new());
}

/// A train ticket the user paid in euros, filed by a call with no currency: the tool records it in
/// `recorded` (the project's default).
fn filed(amount: &str, recorded: &str) -> Trajectory {
    let mut m = vec![user(&format!("Please file the Lyon train ticket as an expense: {amount}, SNCF, 14 March."))];
    m.extend(call(
        "c1",
        "create_expense",
        json!({"amount": 84.5, "merchant": "SNCF", "date": "2026-03-14"}),
        &json!({"amount": 84.5, "currency": recorded, "expense_id": "EXP-100923", "status": "submitted"}).to_string(),
    ));
    m.push(assistant("Filed the SNCF ticket for 84.50 € as EXP-100923."));
    load(m)
}

#[test]
fn an_amount_filed_without_the_users_currency_and_recorded_in_another_is_the_decisive_call() {
    let t = filed("84.50 EUR", "USD");
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![1]);
    assert_eq!(
        evidence(&t, 1, Signal::ArgumentMismatch),
        "calls create_expense with 84.5 and no currency, but the user wrote 84.50 EUR at step 0 and the result at \
         step 2 records it in USD"
    );
    assert_eq!(falat(&t).decisive_step, Some(1));
    // Recorded in the user's currency (written as a symbol or a comma decimal): nothing to find.
    for (amount, recorded) in [("84.50 EUR", "EUR"), ("84,50 €", "EUR"), ("$84.50", "USD")] {
        assert_eq!(steps_with(&filed(amount, recorded), Signal::ArgumentMismatch), Vec::<usize>::new(), "{amount}");
    }
}

#[test]
fn a_count_above_the_list_and_its_total_is_the_decisive_step_and_a_date_retry_is_no_drift() {
    // A hand-built Langfuse trace: the incident search fails on a date in words ("422 …
    // opened_after must be an ISO 8601 date"), the retry writes both dates in ISO form, and the
    // search returns five SEV2 incidents (`"total": 5`); the answer says "6 SEV2 incidents": "SEV2"
    // is a value the search asked for.
    let t = fixture("handbuilt/langfuse/incident_count_after_date_retry.langfuse.json");
    assert_eq!(t.steps[4].tool_name.as_deref(), Some("list_incidents"));
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), Vec::<usize>::new());
    assert_eq!(steps_with(&t, Signal::CountMismatch), vec![6]);
    assert_eq!(
        evidence(&t, 6, Signal::CountMismatch),
        "says \"6 SEV2 incidents\"; the list it counts at step 5 has 5 (total 5)"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(6), Some("oncall_assistant")), "{}", d.reason);
}

/// An OpenAI chat run: the user asks `question`, a funnel summary comes back, and the assistant
/// works out `expression` with a calculator and tells `answer`.
fn funnel_share(question: &str, expression: &str, result: &str, answer: &str) -> Trajectory {
    let summary = "{\"period\": \"2026-Q2\", \"visits\": 91200, \"trials\": 3600, \"converted\": 1125, \"paid\": 840, \
                   \"trials_by_channel\": {\"partner\": 450, \"organic\": 2010, \"ads\": 1140}}";
    let mut m = vec![user(question)];
    m.extend(call("c1", "get_funnel", json!({"period": "2026-Q2"}), summary));
    m.extend(call("c2", "calculator", json!({"expression": expression}), result));
    m.push(assistant(answer));
    load(m)
}

#[test]
fn a_share_worked_out_over_another_figure_of_the_record_than_the_whole_asked_about() {
    let q = "What share of our Q2 trials came from the partner channel?";
    // 450 of the 3600 trials is 12.5 %; the assistant divides by the 1125 converted instead.
    let t = funnel_share(q, "450 / 1125 * 100", "{\"result\": 40.0}", "40.0% of Q2 trials came from partners.");
    assert_eq!(steps_with(&t, Signal::WrongStatistic), vec![3]);
    assert_eq!(
        evidence(&t, 3, Signal::WrongStatistic),
        "divides by 1125, which step 2 gives as converted, but the user asked for a share of our Q2 trials, which \
         that step gives as 3600 (trials)"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(3), Some("assistant")), "{}", d.reason);

    // The whole asked about as the divisor: no finding, and the run is clean.
    let t = funnel_share(q, "450 / 3600 * 100", "{\"result\": 12.5}", "12.5% of Q2 trials came from partners.");
    assert_eq!(steps_with(&t, Signal::WrongStatistic), Vec::<usize>::new());
    assert_eq!(falat(&t).decisive_step, None);
    // A share of another whole ("of converted trials that paid") divides by that member.
    let t = funnel_share(
        "What percentage of converted trials paid in Q2?",
        "840 / 1125 * 100",
        "{\"result\": 74.67}",
        "74.67% of converted trials paid.",
    );
    assert_eq!(steps_with(&t, Signal::WrongStatistic), Vec::<usize>::new());
    // A divisor that is no member of the record (a target the user gave elsewhere) is not read,
    // and a question that asks no share leaves every division alone.
    let t = funnel_share(q, "450 / 500 * 100", "{\"result\": 90.0}", "Partners reached 90% of the 500 target.");
    assert_eq!(steps_with(&t, Signal::WrongStatistic), Vec::<usize>::new());
    // Revenue per converted customer beside a share worked out right: a rate, not the share.
    let mut m =
        vec![user("What share of our Q2 trials came from partners, and what was revenue per converted customer?")];
    m.extend(call(
        "c1",
        "get_funnel",
        json!({"period": "2026-Q2"}),
        "{\"trials\": 3600, \"converted\": 1125, \"partner_trials\": 450, \"revenue\": 91800}",
    ));
    m.extend(call("c2", "calculator", json!({"expression": "450 / 3600 * 100"}), "{\"result\": 12.5}"));
    m.extend(call("c3", "calculator", json!({"expression": "91800 / 1125"}), "{\"result\": 81.6}"));
    m.push(assistant("12.5% of Q2 trials came from partners; revenue per converted customer was 81.6."));
    assert_eq!(steps_with(&load(m), Signal::WrongStatistic), Vec::<usize>::new());
    // A whole kept as `total_trials` is the trials asked about.
    let mut m = vec![user("What share of our Q2 trials came from partners?")];
    m.extend(call(
        "c1",
        "get_funnel",
        json!({"period": "2026-Q2"}),
        "{\"total_trials\": 3600, \"converted\": 1125, \"partner_trials\": 450}",
    ));
    m.extend(call("c2", "calculator", json!({"expression": "450 / 1125 * 100"}), "{\"result\": 40.0}"));
    m.push(assistant("40.0% of Q2 trials came from partners."));
    assert_eq!(steps_with(&load(m), Signal::WrongStatistic), vec![3]);
    // Records of several regions: a divisor that is another region's trials is not this rule's.
    let mut m = vec![user("What share of EU trials came from partners in Q2?")];
    m.extend(call(
        "c1",
        "get_funnel",
        json!({"period": "2026-Q2"}),
        "[{\"region\": \"NA\", \"trials\": 3600, \"converted\": 1125}, {\"region\": \"EU\", \"trials\": 1125, \"converted\": 300, \"partner_trials\": 90}]",
    ));
    m.extend(call("c2", "calculator", json!({"expression": "90 / 1125 * 100"}), "{\"result\": 8.0}"));
    m.push(assistant("8.0% of EU trials came from partners."));
    assert_eq!(steps_with(&load(m), Signal::WrongStatistic), Vec::<usize>::new());
    let t = funnel_share(
        "How many Q2 trials per converted customer did we need?",
        "3600 / 1125",
        "{\"result\": 3.2}",
        "3.2 trials per conversion.",
    );
    assert_eq!(steps_with(&t, Signal::WrongStatistic), Vec::<usize>::new());
}

/// The user asks for 3 nights from October 14; the hotel search goes out with check-out on the
/// 16th (set 30's Google ADK run had this shape). Built here: a booking assistant's run.
#[test]
fn a_stay_searched_for_fewer_nights_than_the_user_asked_is_the_decisive_step() {
    let run = |ask: &str, check_out: &str| {
        let mut m = vec![system("You book hotels for the user."), user(ask)];
        m.extend(call(
            "c1",
            "search_hotels",
            json!({"city": "Lisbon", "adults": 2, "check_in": "2025-10-14", "check_out": check_out}),
            r#"{"results": [{"offer_id": "off_1", "hotel": "Casa do Largo", "price_per_night": 165}]}"#,
        ));
        m.push(assistant("Casa do Largo has a double room at €165 a night with free cancellation."));
        load(m)
    };
    let ask = "I need a hotel in Lisbon for 3 nights starting Tuesday October 14, for two adults.";
    let t = run(ask, "2025-10-16");
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![2]);
    assert_eq!(
        evidence(&t, 2, Signal::ArgumentMismatch),
        "calls search_hotels with check_in 2025-10-14 and check_out 2025-10-16: 2 nights, but the user asked for \
         \"3 nights\" (step 1)"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.category.as_str()), (Some(2), "tool_parameter_or_invocation_error"), "{}", d.reason);
    // The nights asked for; a user who names two lengths of stay: no finding.
    assert_eq!(steps_with(&run(ask, "2025-10-17"), Signal::ArgumentMismatch), Vec::<usize>::new());
    let two = "A hotel in Lisbon for two nights, or three nights if the price is right, from October 14.";
    assert_eq!(steps_with(&run(two, "2025-10-18"), Signal::ArgumentMismatch), Vec::<usize>::new());
}

/// The commander asks its log agent for "14:00 to 14:30 UTC"; the agent's query writes those
/// clock times with the +02:00 offset, two hours earlier (set 30's OTel incident run had this
/// shape). Built here: an on-call assistant's run.
#[test]
fn a_utc_window_written_with_a_local_offset_is_the_decisive_step() {
    let run = |ask: &str, start: &str, end: &str| {
        let mut m = vec![system("You are the on-call assistant. Investigate alerts with the log tools."), user(ask)];
        m.extend(call(
            "c1",
            "query_logs",
            json!({"selector": "{app=\"checkout-api\"}", "start": start, "end": end}),
            "query window: 2025-06-12T14:00:00+02:00 .. 2025-06-12T14:30:00+02:00\nmatched 233 lines: redis connection reset",
        ));
        m.push(assistant("The errors in the window are Redis connection resets."));
        load(m)
    };
    let ask = "Find errors in checkout-api between 14:00 and 14:30 UTC on 2025-06-12.";
    let t = run(ask, "2025-06-12T14:00:00+02:00", "2025-06-12T14:30:00+02:00");
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![2]);
    assert_eq!(
        evidence(&t, 2, Signal::ArgumentMismatch),
        "calls query_logs with 2025-06-12T14:00:00+02:00, but step 1 gives 14:00 in UTC: written at UTC+02:00, it \
         is 12:00 UTC"
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(2), "{}", d.reason);
    // Converted; or asked in local time with its offset: no finding.
    let converted = run(ask, "2025-06-12T16:00:00+02:00", "2025-06-12T16:30:00+02:00");
    assert_eq!(steps_with(&converted, Signal::ArgumentMismatch), Vec::<usize>::new());
    let local = "Find errors in checkout-api between 14:00 and 14:30 (UTC+02:00) on 2025-06-12.";
    let local = run(local, "2025-06-12T14:00:00+02:00", "2025-06-12T14:30:00+02:00");
    assert_eq!(steps_with(&local, Signal::ArgumentMismatch), Vec::<usize>::new());
}

/// A first user's incident run: the log agent's query writes the alert's UTC window with a
/// +02:00 offset (step 5); a later remediation phase has a rejected call and the strongest error.
/// The log agent's phase, whose summary alone stays under the search threshold, is searched
/// because a call of it contradicts the request, and the verdict is the query.
#[test]
fn a_phase_whose_call_contradicts_the_request_is_searched() {
    let t = fixture("handbuilt/otel/checkout_latency_utc_window.otlp.json");
    // Both of its queries carry the offset.
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![5, 8]);
    let sub = falat::substrate::Substrate::build(&t);
    let ctx = falat::judge::Context::of(&t, &sub, false);
    let phase = sub.hierarchy.phases.iter().position(|p| p.range.contains(&5)).expect("a phase holds step 5");
    let facts = falat::judge::heuristic::phase::facts(&ctx, &sub.hierarchy.phases[phase]);
    assert!(facts.contains(&falat::judge::heuristic::phase::PhaseFact::ArgumentMismatch), "{facts:?}");
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(5), Some("log_analyst")), "{}", d.reason);
}
