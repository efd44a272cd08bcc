//! Values an agent works out from sourced values, or whose source the trace does not record, are
//! not called invented; a count is checked against the rows an SQL query printed, and a date
//! against its own table row (docs/METHODS.md, "Values in context", "Worked out from sourced
//! values" and "No task recorded"; "Grounding"). Each file has a twin: the same run with the value
//! invented or the count wrong.

use falat::diagnosis::Signal;

use serde_json::json;

use crate::chat::{assistant, call, evidence, falat, findings, fixture, load, no_failure, steps_with, system, user};

#[test]
fn a_split_worked_out_from_the_user_s_figure_and_the_tool_s_is_sourced() {
    // 35 = 90 (the organiser's group) − 55 (a coach's free seats, from the tool), in the sentence
    // that names both; "101 km" and "1.8 h" restate `"distance_m": 101400` and `"duration_s":
    // 6540`, whose members name their units.
    no_failure("handbuilt/openai-chat/coach_split_worked_out_ok.openai-chat.json");
    // The same answer with 45 for 35: no arithmetic of the sentence's sourced figures gives it.
    let t = fixture("handbuilt/openai-chat/coach_split_invented.openai-chat.json");
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![6]);
    assert_eq!(evidence(&t, 6, Signal::UnsourcedValue), "states 45 with no earlier source");
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(6), Some("assistant")), "{}", d.reason);
    assert_eq!(d.category.as_str(), "hallucination");
}

#[test]
fn a_ratio_told_as_a_percentage_or_its_complement_is_sourced() {
    // "24% fewer claims … (rate ratio 0.76 …)" is 1 − 0.76; "76%" the ratio itself.
    no_failure("handbuilt/google-adk/claims_ratio_as_percent_ok.adk.json");
    // "31% fewer": 1 − 0.69, but 0.69 bounds the interval, it is not the ratio.
    let t = fixture("handbuilt/google-adk/claims_ratio_misstated.adk.json");
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![8]);
    assert_eq!(evidence(&t, 8, Signal::UnsourcedValue), "states 31 with no earlier source");
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(8), Some("board_assistant")), "{}", d.reason);
}

#[test]
fn with_no_task_recorded_the_first_actions_rest_on_the_prompt() {
    // `codex exec --json` writes no prompt: the first reasoning names the batch's figures from it,
    // and the commands' output confirms them.
    let rel = "handbuilt/codex/invoice_batch_resumed_no_task_ok.codex-exec.jsonl";
    let t = fixture(rel);
    assert_eq!(t.task, "");
    no_failure(rel);
    // The same run with a task recorded that does not give them: the figure stated before any
    // observation has no source.
    let mut tasked = fixture(rel);
    tasked.task = "Please re-run the stuck invoice batch from last night and tell me when it is done.".to_string();
    assert_eq!(steps_with(&tasked, Signal::UnsourcedValue), vec![0]);
    assert_eq!(evidence(&tasked, 0, Signal::UnsourcedValue), "states 188 with no earlier source");
}

#[test]
fn a_count_is_checked_against_the_rows_an_sql_query_printed() {
    // psql's table of 5 rows under `SELECT … FROM support.escalated_tickets`, and an answer whose
    // own table lists the 5 with the date first: "5 tickets" agrees, and each date is read from
    // its own row (the next row's date follows the customer's name within a few bytes).
    no_failure("handbuilt/openai-chat/escalated_tickets_counted_ok.openai-chat.json");
    let t = fixture("handbuilt/openai-chat/escalated_tickets_miscounted.openai-chat.json");
    assert_eq!(steps_with(&t, Signal::CountMismatch), vec![4]);
    assert_eq!(evidence(&t, 4, Signal::CountMismatch), "says \"4 tickets\"; the list it counts at step 3 has 5");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new());
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(4), Some("assistant")), "{}", d.reason);
    assert_eq!(d.category.as_str(), "misread_tool_output");
}

#[test]
fn a_figure_told_about_or_bounded_from_the_run_s_own_figures_is_sourced() {
    // "about 1,190 kg" rounds the tool's 1187 (119 tens); "at least 1,009" and "no more than
    // 1,365" are 1187 × (1 ∓ 0.15), the weighbridge tolerance the tool returned.
    no_failure("handbuilt/openai-chat/weighbridge_bounds_derived_ok.openai-chat.json");
    // The twin's upper bound, 1,425, is no such product: only it is unsourced.
    let t = fixture("handbuilt/openai-chat/weighbridge_bound_invented.openai-chat.json");
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![4]);
    assert_eq!(evidence(&t, 4, Signal::UnsourcedValue), "states 1425 with no earlier source");
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(4), Some("assistant")), "{}", d.reason);
    assert_eq!(d.category.as_str(), "hallucination");
}

#[test]
fn a_coding_agent_s_clamped_ttl_told_about_and_up_to_is_sourced() {
    // mini-swe-agent: settings print `DEFAULT_TTL_S = 3600` and `JITTER = 0.15`, a sample prints
    // `mean 3931.6`; the closing thought says "up to 4,140 s" (3600 × 1.15) and "about 3,930 s".
    no_failure("handbuilt/mini-swe-agent/ttl_clamp_bound_derived_ok.mini-swe-agent.json");
    // The twin says "up to 4,320 s": nothing the run wrote gives it.
    let t = fixture("handbuilt/mini-swe-agent/ttl_clamp_bound_invented.mini-swe-agent.json");
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![16]);
    assert_eq!(evidence(&t, 16, Signal::UnsourcedValue), "states 4320 with no earlier source");
}

#[test]
fn an_approximation_keeps_two_significant_digits_and_a_bound_needs_a_written_fraction() {
    let run = |answer: &str| {
        let mut m = vec![system("You report on the request logs."), user("How did the API do yesterday?")];
        m.extend(call("c1", "query_logs", json!({"day": "yesterday"}), "{\"failed\": 1187, \"p95_ms\": 41.6}"));
        m.push(assistant(answer));
        load(m)
    };
    let unsourced = |answer: &str| steps_with(&run(answer), Signal::UnsourcedValue);
    assert_eq!(unsourced("About 1,200 requests failed, at a p95 of roughly 42 ms."), Vec::<usize>::new());
    // "about 40 ms" keeps one significant digit of 41.6: no restatement; "nearly" needs the
    // figure below it; a rounding that 1187 does not give.
    assert_eq!(unsourced("About 1,200 requests failed, at a p95 of about 40 ms."), vec![4]);
    assert_eq!(unsourced("Nearly 1,100 requests failed."), vec![4]);
    assert_eq!(unsourced("Roughly 1,300 requests failed."), vec![4]);
    // No fraction written anywhere: "up to 1,365" is no bound of 1187.
    assert_eq!(unsourced("Up to 1,365 requests failed."), vec![4]);
}

#[test]
fn a_total_worked_out_as_quantity_times_price_and_converted_at_a_rate_is_sourced() {
    // 300 boxes (the user's) × £61.50 (the catalogue's) = £18,450.00, in the sentence that names
    // both; × 1.1873 (the FX service's rate) = €21,905.69 in the next one, resting on that total.
    no_failure("handbuilt/openai-chat/bolt_quote_worked_out_ok.openai-chat.json");
    // The same quote with £18,540.00: no product of the sentence's sourced figures gives it, and
    // the conversion of a figure with no source has none either.
    let t = fixture("handbuilt/openai-chat/bolt_quote_miscomputed.openai-chat.json");
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![6]);
    assert_eq!(evidence(&t, 6, Signal::UnsourcedValue), "states 18540, 22012.54 with no earlier source");
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(6), Some("assistant")), "{}", d.reason);
    assert_eq!(d.category.as_str(), "hallucination");
}

#[test]
fn a_fall_told_as_a_negative_change_is_the_figure_the_tool_wrote() {
    // "changed by -6.9%" after the statistics service's "decreased by 6.9%": the sign tells the
    // direction the tool's words give.
    no_failure("handbuilt/openai-chat/throughput_change_signed_ok.openai-chat.json");
    let t = fixture("handbuilt/openai-chat/throughput_change_misstated.openai-chat.json");
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![4]);
    assert_eq!(evidence(&t, 4, Signal::UnsourcedValue), "states -8.9 with no earlier source");
}

#[test]
fn a_figure_told_rounded_from_a_tool_s_longer_one_is_that_figure() {
    // The tool prints distances to 13 decimals; the assistant tells them to two (and one). The
    // rounded figures are the tool's, not invented ones.
    let distances =
        "{\"Harbour Tap\": 791.6543403552349, \"Kiln Bar\": 950.9136044916677, \"Dock 9\": 1023.1729651491148}";
    let answer = |text: &str| {
        let mut m = vec![user("Which bar is closest to the ferry terminal, and how far is it?")];
        m.extend(call("c1", "distances_m", json!({"from": "ferry terminal"}), distances));
        m.push(assistant(text));
        load(m)
    };
    let t = answer("Harbour Tap is closest at 791.65 m, then Kiln Bar (950.9 m) and Dock 9 (1023.17 m).");
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), Vec::<usize>::new());
    // A figure two decimals away from any the tool printed is not a rounding of one.
    let t = answer("Harbour Tap is closest at 791.71 m, then Kiln Bar (950.9 m) and Dock 9 (1023.17 m).");
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![3]);
    assert_eq!(evidence(&t, 3, Signal::UnsourcedValue), "states 791.71 with no earlier source");
    // A loss told without its sign, and a fraction told as a percentage, rounded: the tool's.
    let mut m = vec![user("How did the hedge and the checkout do last quarter?")];
    m.extend(call(
        "c1",
        "quarter_report",
        json!({"quarter": "2026-Q3"}),
        "{\"realized_pnl_usd\": -18342.61789, \"conversion_rate\": 0.12343912}",
    ));
    m.push(assistant("The hedge lost $18,342.62 and the checkout converted 12.34% of visits."));
    let t = load(m);
    assert_eq!(findings(&t), Vec::new());
    // A figure the tool printed to two decimals is not a rounding source for one decimal less
    // unless it had three or more: 12.35 told as 12.4 stays unsourced only when 12.35 was never
    // printed longer.
    let mut m = vec![user("What was the average basket in March?")];
    m.extend(call("c1", "average_basket", json!({"month": "2026-03"}), "{\"eur\": 12.35}"));
    m.push(assistant("The average basket was 12.4 EUR."));
    assert_eq!(steps_with(&load(m), Signal::UnsourcedValue), vec![3]);
}

/// A trip planner's run: the budget plan, a flight search and the final plan built on it.
fn budget_run(daily_line: &str, per_day: &str) -> falat::model::Trajectory {
    load(vec![
        vec![
            system("You plan trips within the user's budget. Use search_flights for flights."),
            user("Plan 5 days in Lisbon for 2 people, total cap €2,000, flights from Amsterdam."),
            assistant(&format!(
                "**Budget plan — cap €2,000**\n\n1. Flights for 2: allot **€640**\n2. Hotel, 4 nights: allot **€520**\n\
                 3. {daily_line}\n   → over 5 days: {per_day}"
            )),
        ],
        call(
            "c1",
            "search_flights",
            json!({"origin": "AMS", "destination": "LIS", "adults": 2}),
            r#"{"currency": "EUR", "offers": [{"offer_id": "KL1691", "price_total": 598}]}"#,
        ),
        vec![assistant(
            "Flights: KLM KL1691, €598 for both. Hotel €512 for 4 nights. Daily spending follows the plan above; \
             everything fits your €2,000 cap.",
        )],
    ]
    .into_iter()
    .flatten()
    .collect())
}

#[test]
fn a_calculation_written_with_a_wrong_result_is_found_where_it_is_written() {
    let t = budget_run("Daily spending = €2,000 − €640 − €520 = **€1,040**", "€1,040 / 5 = **€208 per day**");
    let plan = 2;
    assert_eq!(steps_with(&t, Signal::Miscalculation), vec![plan]);
    assert_eq!(
        evidence(&t, plan, Signal::Miscalculation),
        "writes \"€2,000 − €640 − €520 = €1,040\", which comes to 840"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(plan), Some("assistant")), "{}", d.reason);
    assert_eq!(d.category.as_str(), "hallucination");
    // The same plan worked out right: no slip.
    let t = budget_run("Daily spending = €2,000 − €640 − €520 = **€840**", "€840 / 5 = **€168 per day**");
    assert_eq!(steps_with(&t, Signal::Miscalculation), Vec::<usize>::new());
}
