//! A tool-using assistant acting on the wrong record (docs/METHODS.md, "Actions"): a message that
//! pairs an identifier with the item another record of the lookups holds, and a state change on a
//! record whose own lookup breaks a requirement the user insisted on.

use falat::diagnosis::Signal;
use falat::model::Trajectory;
use serde_json::json;

use crate::chat::{assistant, call, evidence, falat, fixture, load, steps_with, system, user};

#[test]
fn a_plan_that_pairs_a_delivery_number_with_the_other_deliverys_piece_is_the_decisive_step() {
    // Two deliveries looked up one by one: D-7730412 holds the sofa, D-7730421 the bookshelf the
    // user wants moved. The plan calls D-7730412 "the Oak bookshelf"; the user says yes and the
    // sofa's delivery is moved.
    let t = fixture("handbuilt/openai-chat/reschedule_neighbouring_delivery.openai-chat.json");
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![8]);
    assert_eq!(
        evidence(&t, 8, Signal::ArgumentMismatch),
        "pairs D-7730412 with \"Oak bookshelf\"; the lookup at step 5 shows D-7730412 is \"Three-seat sofa\" and \
         \"Oak bookshelf\" is D-7730421 (step 7)"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(8), Some("assistant")), "{}", d.reason);
}

/// Two rentals looked up in one list, then the agent's plan `plan` and the user's yes.
fn rentals_run(plan: &str) -> Trajectory {
    let list = r#"{"rentals": [
        {"rental_id": "RN-40917", "status": "reserved", "items": [{"name": "Touring kayak", "sku": "KY-TR-2"}, {"name": "Paddle set", "sku": "PD-2"}]},
        {"rental_id": "RN-40971", "status": "reserved", "items": [{"name": "Stand-up board", "sku": "SUP-11"}, {"name": "Paddle set", "sku": "PD-2"}]}]}"#;
    load(
        [
            vec![
                system("You are the rental desk of Lakeside Outdoor. Cancel reservations only after the customer says yes."),
                user("Please cancel the reservation with the stand-up board; keep the kayak. Account lina.ek@mail.se"),
            ],
            call("c1", "list_rentals", json!({"email": "lina.ek@mail.se"}), list),
            vec![assistant(plan), user("yes")],
        ]
        .concat(),
    )
}

#[test]
fn an_identifier_paired_with_its_own_item_or_an_item_both_records_hold_is_no_finding() {
    // The neighbouring number with the board: one digit pair apart, the other record's item.
    let t = rentals_run(
        "I will cancel RN-40917 (the Stand-up board and its paddles). Shall I go ahead?\n\nPlease answer yes or no.",
    );
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::ArgumentMismatch),
        "pairs RN-40917 with \"Stand-up board\"; the lookup at step 3 shows RN-40917 is \"Touring kayak\" and \
         \"Paddle set\" and \"Stand-up board\" is RN-40971"
    );
    // The right number with the board.
    assert_eq!(
        steps_with(&rentals_run("I will cancel RN-40971 (the Stand-up board)."), Signal::ArgumentMismatch),
        Vec::<usize>::new()
    );
    // An item both reservations hold says nothing of which one is meant.
    assert_eq!(
        steps_with(&rentals_run("I will cancel RN-40917 (the one with the Paddle set)."), Signal::ArgumentMismatch),
        Vec::<usize>::new()
    );
    // Naming the record's own item too, a contrast, or a question: no pairing.
    for plan in [
        "RN-40917 holds the Touring kayak, and the Stand-up board is in the other one.",
        "I will cancel RN-40917, not the Stand-up board.",
        "Is RN-40917 the one with the Stand-up board?",
    ] {
        assert_eq!(steps_with(&rentals_run(plan), Signal::ArgumentMismatch), Vec::<usize>::new(), "{plan}");
    }
}

#[test]
fn a_connecting_flight_booked_after_the_user_asked_for_direct_flights_only_is_the_decisive_call() {
    // An Agents SDK run: "It has to be direct flights only"; the offer's details say `"stops": 1`
    // and the agent books it, while a direct offer was listed.
    let t = fixture("handbuilt/openai-agents/connecting_flight_against_direct_only.openai-agents.json");
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![6]);
    assert_eq!(
        evidence(&t, 6, Signal::ArgumentMismatch),
        "book_offer on offer_id OF-88213: the record at step 4 has \"stops\": 1, but the user required a direct \
         route at step 0 (\"It has to be direct flights only\")"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(6), Some("Travel Assistant")), "{}", d.reason);
}

/// A car rental: the user's request, the rate details looked up (`refundable` as given), a reply
/// of the user before the booking when `then` holds one, and the booking of that rate.
fn car_run(request: &str, refundable: bool, then: Option<&str>) -> Trajectory {
    let rate = format!(
        r#"{{"station_id": "ST-2291", "rate_code": "PREPAID-S", "price_eur": 212.0, "terms": {{"refundable": {refundable}, "deposit_eur": 300}}}}"#
    );
    let mut m = vec![system("You are the booking assistant of Cartago Rentals."), user(request)];
    m.extend(call("c1", "get_rate", json!({"station_id": "ST-2291", "rate_code": "PREPAID-S"}), &rate));
    if let Some(reply) = then {
        m.extend([assistant("The prepaid rate costs EUR 212. Shall I book it?"), user(reply)]);
    }
    m.extend(call(
        "c2",
        "create_reservation",
        json!({"station_id": "ST-2291", "rate_code": "PREPAID-S", "pickup": "2026-05-04"}),
        r#"{"reservation": "CT-88120", "status": "confirmed"}"#,
    ));
    m.push(assistant("Booked: reservation CT-88120."));
    load(m)
}

#[test]
fn a_booking_of_a_rate_whose_details_break_the_users_must_is_found_and_one_that_keeps_it_is_not() {
    let must =
        "A small car in Porto from 4 May please. The booking must be fully refundable, my trip is not certain yet.";
    let t = car_run(must, false, None);
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::ArgumentMismatch),
        "create_reservation on rate_code PREPAID-S, station_id ST-2291: the record at step 3 has \"refundable\": \
         false, but the user required free cancellation at step 1 (\"The booking must be fully refundable\")"
    );
    // The record keeps the requirement.
    assert_eq!(steps_with(&car_run(must, true, None), Signal::ArgumentMismatch), Vec::<usize>::new());
    // The user gives it up before the booking.
    assert_eq!(
        steps_with(&car_run(must, false, Some("Fine, non-refundable is ok for that price.")), Signal::ArgumentMismatch),
        Vec::<usize>::new()
    );
    // Asked about, not insisted on.
    let asked = "A small car in Porto from 4 May please. Is it refundable?";
    assert_eq!(steps_with(&car_run(asked, false, None), Signal::ArgumentMismatch), Vec::<usize>::new());
}

#[test]
fn a_record_picked_against_the_birth_date_the_user_gave_is_the_decisive_step() {
    // A hand-built Google ADK session: the user gives the father's date of birth day first
    // ("21.09.1941"); the lookup returns two records of the same name, one born 1941-09-12 and
    // one 1941-09-21. The assistant opens the first, tells the user's date back right after the
    // record showed the other one, and sends the refill for that record.
    let t = fixture("handbuilt/google-adk/repeat_refill_lookalike_birth_date.adk.json");
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![3]);
    assert_eq!(
        evidence(&t, 3, Signal::ArgumentMismatch),
        "get_repeat_medications picks patient_ref PT-880312 (birth_date 1941-09-12), but the user gave \
         \"21.09.1941\" at step 0, and patient_ref PT-880321 of the list at step 2 has birth_date 1941-09-21"
    );
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![5]);
    assert_eq!(
        evidence(&t, 5, Signal::IgnoredResult),
        "tells 21.09.1941 as the user gave it at step 0, but the get_repeat_medications output at step 4 just \
         before gives birth_date 1941-09-12"
    );
    // The refill at step 7 names the same record again: the first pick is the error.
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(3), Some("refill_assistant")), "{}", d.reason);
}

#[test]
fn the_record_that_matches_the_birth_date_the_user_gave_is_no_finding() {
    // The same session with the record born 1941-09-21 picked and its items refilled.
    let t = fixture("handbuilt/google-adk/repeat_refill_matching_birth_date_ok.adk.json");
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), Vec::<usize>::new());
    assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new());
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
}

/// A member lookup that lists two records, then the agent's call `pick` on one of them, in a run
/// where the user gave `stated`.
fn members_run(stated: &str, pick: &str) -> Trajectory {
    let list = r#"{"members": [
        {"member_no": "40311", "name": "Jonas Bergström", "born": "1990-04-18", "postcode": "75320"},
        {"member_no": "40313", "name": "Jonas Berg", "born": "1990-08-14", "postcode": "75230"}]}"#;
    load(
        [
            vec![
                system("You are the front desk of Fyris Climbing Club. Identify members before changing bookings."),
                user(stated),
            ],
            call("c1", "find_members", json!({"first_name": "Jonas"}), list),
            call(
                "c2",
                "book_course",
                json!({"member_no": pick, "course": "Lead climbing 1"}),
                r#"{"status": "booked"}"#,
            ),
            vec![assistant("You're booked on Lead climbing 1.")],
        ]
        .concat(),
    )
}

#[test]
fn a_member_picked_against_the_users_name_code_or_us_date_is_found_and_the_matching_one_is_not() {
    let cases = [
        ("Book me on Lead climbing 1, I'm Jonas Berg.", "name Jonas Bergström", "\"Jonas Berg\"", "name Jonas Berg"),
        ("Book me on Lead climbing 1. Postcode 75230.", "postcode 75320", "\"75230\"", "postcode 75230"),
        ("Book me on Lead climbing 1. Born 08/14/1990.", "born 1990-04-18", "\"08/14/1990\"", "born 1990-08-14"),
    ];
    for (stated, chosen, given, other) in cases {
        let t = members_run(stated, "40311");
        assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![4], "{stated}");
        assert_eq!(
            evidence(&t, 4, Signal::ArgumentMismatch),
            format!(
                "book_course picks member_no 40311 ({chosen}), but the user gave {given} at step 1, and member_no \
                 40313 of the list at step 3 has {other}"
            )
        );
        assert_eq!(
            steps_with(&members_run(stated, "40313"), Signal::ArgumentMismatch),
            Vec::<usize>::new(),
            "{stated}"
        );
    }
    // The user named the record picked: their choice.
    assert_eq!(
        steps_with(
            &members_run("I'm Jonas Berg, but book member 40311 (my cousin).", "40311"),
            Signal::ArgumentMismatch
        ),
        Vec::<usize>::new()
    );
}

/// A card desk: the account read (statement balance 1287.4), the late fee waived (its result gives
/// the new statement balance 1248.4), then the payment the agent proposes.
fn payment_run(proposal: &str) -> Trajectory {
    load(
        [
            vec![
                system("You are the card-servicing assistant of a credit union."),
                user("I got a $39 late fee but I paid on time. Please waive it, then pay off the statement balance from checking."),
            ],
            call(
                "c1",
                "get_card_account",
                json!({"member_id": "M-20418837"}),
                r#"{"card_account_id": "VISA-7731-0042", "statement": {"statement_balance": 1287.4, "minimum_due": 40.0}, "current_balance": 1342.95}"#,
            ),
            call(
                "c2",
                "waive_fee",
                json!({"card_account_id": "VISA-7731-0042", "fee_id": "FEE-88213"}),
                r#"{"status": "waived", "amount": 39.0, "new_statement_balance": 1248.4, "new_current_balance": 1303.95}"#,
            ),
            vec![assistant(proposal)],
        ]
        .concat(),
    )
}

#[test]
fn a_balance_proposed_as_read_before_a_change_replaced_it_is_the_decisive_step() {
    let t =
        payment_run("The fee is waived. I'll pay $1,287.40, your statement balance, from checking. Shall I go ahead?");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![6]);
    assert_eq!(
        evidence(&t, 6, Signal::IgnoredResult),
        "uses 1287.4 (\"statement_balance\" at step 3), but step 5, after waive_fee, gives \"new_statement_balance\": 1248.4"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(6), Some("assistant")), "{}", d.reason);
    // The new balance proposed: no finding.
    let t = payment_run(
        "The fee is waived. I'll pay $1,248.40, your new statement balance, from checking. Shall I go ahead?",
    );
    assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new());
}

/// A key rotation by shell: the secret read, a new key minted, then the secret written.
fn rotation_run(written: &str) -> Trajectory {
    load(
        [
            vec![user("Rotate the partner API key of billing-worker in prod; the current one leaked.")],
            call(
                "c1",
                "run_shell",
                json!({"command": "kubectl -n billing get secret billing-worker-partner -o jsonpath='{.data.KEY}' | base64 -d"}),
                "pk_live_51Hx9QeR2m7VtA0cJd",
            ),
            call(
                "c2",
                "run_shell",
                json!({"command": "partnerctl keys create --service billing-worker"}),
                "Created key key_9b27d3f1\n\nSecret (shown once):\n  pk_live_83Kd0WsN4pYc1LrTq9",
            ),
            call(
                "c3",
                "run_shell",
                json!({"command": format!("kubectl -n billing create secret generic billing-worker-partner --from-literal=KEY={written} --dry-run=client -o yaml | kubectl apply -f -")}),
                "secret/billing-worker-partner configured",
            ),
            vec![assistant("The key is rotated.")],
        ]
        .concat(),
    )
}

#[test]
fn an_old_key_written_after_a_new_one_was_minted_is_the_decisive_call() {
    let t = rotation_run("pk_live_51Hx9QeR2m7VtA0cJd");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![5]);
    assert_eq!(
        evidence(&t, 5, Signal::IgnoredResult),
        "uses pk_live_51Hx9QeR2m7VtA0cJd, read at step 2, but step 4, after `partnerctl keys create --service \
         billing-worker`, gives a new one: pk_live_83Kd0WsN4pYc1LrTq9"
    );
    assert_eq!(falat(&t).decisive_step, Some(5));
    let t = rotation_run("pk_live_83Kd0WsN4pYc1LrTq9");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new());
}

/// An ops assistant: the config read in production, then the change, with or without `env`.
fn config_run(set_args: serde_json::Value, landed: &str) -> Trajectory {
    load(
        [
            vec![user("Please raise the payments-api rate limit from 300 to 600 requests/minute in production.")],
            call(
                "c1",
                "get_config",
                json!({"env": "production", "service": "payments-api"}),
                r#"{"service": "payments-api", "env": "production", "settings": {"rate_limit_rpm": 300}}"#,
            ),
            call(
                "c2",
                "set_config",
                set_args,
                &format!(r#"{{"service": "payments-api", "env": "{landed}", "key": "rate_limit_rpm", "old_value": 300, "new_value": 600}}"#),
            ),
            vec![assistant("Done: rate_limit_rpm is now 600.")],
        ]
        .concat(),
    )
}

#[test]
fn a_change_left_to_the_tools_default_target_is_the_decisive_call() {
    let t = config_run(json!({"service": "payments-api", "key": "rate_limit_rpm", "value": 600}), "staging");
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), vec![3]);
    assert_eq!(
        evidence(&t, 3, Signal::ArgumentMismatch),
        "set_config applied to \"env\": \"staging\" (its result at step 4), a value the call did not give; the call at \
         step 1 gave \"env\": \"production\", which the user named"
    );
    assert_eq!(falat(&t).decisive_step, Some(3));
    // Named in the call: no finding.
    let t = config_run(
        json!({"env": "production", "service": "payments-api", "key": "rate_limit_rpm", "value": 600}),
        "production",
    );
    assert_eq!(steps_with(&t, Signal::ArgumentMismatch), Vec::<usize>::new());
}

/// A policy search returns the 2022 policy marked superseded beside its 2024 revision; the
/// assistant applies the 2022 threshold (set 30's MLflow HR run had this shape: "below the
/// 32-hour threshold … 8 weeks" from the superseded record). Built here: a benefits assistant.
#[test]
fn a_figure_read_from_a_record_marked_superseded_beside_its_current_one_is_the_decisive_step() {
    let records = |old_status: &str| {
        json!({"results": [
            {"id": "PL-2022#3", "metadata": {"status": old_status, "superseded_by": if old_status == "superseded" { json!("PL-2024") } else { json!(null) }, "effective_from": "2022-01-01"},
             "text": "Employees working 32 hours per week or more receive 10 weeks of fully paid leave; below 32 hours, 8 weeks."},
            {"id": "PL-2024#2", "metadata": {"status": "active", "superseded_by": null, "effective_from": "2024-07-01"},
             "text": "All employees, regardless of working hours, receive 16 weeks of fully paid leave."}
        ]})
        .to_string()
    };
    let run = |old_status: &str, ask: &str, said: &str| {
        let mut m = vec![system("You are the HR benefits assistant. Answer from the policy documents."), user(ask)];
        m.extend(call(
            "c1",
            "policy_search",
            json!({"query": "parental leave fully paid weeks"}),
            &records(old_status),
        ));
        m.push(assistant(said));
        load(m)
    };
    let ask = "How many weeks of fully paid parental leave do I get? I work 30 hours a week.";
    let old = "You work 30 hours a week, below the 32-hour threshold, so you get 8 weeks of fully paid leave.";
    let t = run("superseded", ask, old);
    assert_eq!(steps_with(&t, Signal::UnavailableValue), vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::UnavailableValue),
        "states 32, which only the record PL-2022#3 at step 3 gives, and that record says \"status\": \"superseded\": \
         a current one was returned beside it"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.category.as_str()), (Some(4), "misread_tool_output"), "{}", d.reason);
    // The current record's figure; both records in force; the user's own figure: no finding.
    let read = |t: &Trajectory| steps_with(t, Signal::UnavailableValue);
    assert_eq!(
        read(&run("superseded", ask, "Regardless of your hours, you get 16 weeks of fully paid leave.")),
        Vec::<usize>::new()
    );
    assert_eq!(read(&run("active", ask, old)), Vec::<usize>::new());
    let ask32 = "I work 32 hours a week. How many weeks of fully paid parental leave do I get?";
    assert_eq!(
        read(&run("superseded", ask32, "At 32 hours a week you get 16 weeks of fully paid leave.")),
        Vec::<usize>::new()
    );
}
