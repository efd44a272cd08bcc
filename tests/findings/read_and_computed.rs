//! What an agent reads from a table and what its code computes (docs/METHODS.md, "Grounding" and
//! "Instructions"): a figure stated for one column of a table that gives it under another, and
//! code that prints a mean under the name of the median, an amount in cents stated as euros; a
//! terminal's output linked to the code
//! it ran, and a file browser's page read as a file read.

use falat::diagnosis::Signal;
use falat::model::{LinkKind, Trajectory};
use serde_json::json;

use crate::chat::{
    assistant, call, evidence, falat, falat_with, fixture, load, steps_saying, steps_with, system, user, who_and_when,
};

#[test]
fn a_revenue_figure_read_from_the_prior_year_column_is_the_decisive_step() {
    // A held-out user's OpenAI Agents SDK trace: the page's key-figures table gives revenue
    // 4,312 (Q3 2025) and 4,064 (Q3 2024); the Research agent's notes say "Q3 2025 revenue: NOK
    // 4,064 million" and hand off; the Writer repeats the figure without a period.
    let t = fixture("handbuilt/openai-agents/briefing_prior_year_column.openai-agents.json");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![8]);
    assert_eq!(
        evidence(&t, 8, Signal::IgnoredResult),
        "states 4,064 for \"Q3 2025\", but the table at step 7 gives 4,064 under \"Q3 2024\" (row \"Revenue\"); \
         under \"Q3 2025\" it gives 4,312"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(8), Some("Research agent")), "{}", d.reason);
    assert_eq!(d.category.as_str(), "misread_tool_output");
}

#[test]
fn a_population_read_from_the_other_year_of_an_aligned_table_is_the_decisive_step() {
    // Another held-out user's Magentic-One run: a statistics page shows the populations of
    // 2024 and 2025 side by side, and the WebSurfer reports 2025 with the 2024 figure; the
    // orchestrator's final answer repeats it (written 78,745) and is no new error.
    let t = fixture("handbuilt/magentic-one/population_wrong_column.json");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![9, 13]);
    assert_eq!(
        evidence(&t, 9, Signal::IgnoredResult),
        "states 78 745 for \"2025\", but the table at step 7 gives 78 745 under \"2024\" (row \"5501 Tromsø\"); \
         under \"2025\" it gives 79 611"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(9), Some("WebSurfer")), "{}", d.reason);
}

/// A lookup returning a quarterly table with aligned columns (or as Markdown), then the
/// assistant's answer.
fn quarterly(markdown: bool, answer: &str) -> Trajectory {
    let table = if markdown {
        "| Segment | FY2025 | FY2024 |\n|---|---|---|\n| Retail | 18,240 | 16,905 |\n| Wholesale | 7,315 | 7,802 |"
    } else {
        "Segment        FY2025    FY2024\nRetail         18,240    16,905\nWholesale       7,315     7,802"
    };
    let mut m = vec![
        system("You answer questions about the company's annual report."),
        user("What were the Retail segment's sales in FY2025?"),
    ];
    m.extend(call("c1", "get_report_table", json!({"table": "segment_sales"}), table));
    m.push(assistant(answer));
    load(m)
}

#[test]
fn a_value_is_read_against_the_column_its_line_names() {
    for markdown in [false, true] {
        let wrong = quarterly(markdown, "Retail sales in FY2025 were 16,905 (in thousands).");
        assert_eq!(steps_with(&wrong, Signal::IgnoredResult), vec![4], "markdown {markdown}");
        assert_eq!(
            evidence(&wrong, 4, Signal::IgnoredResult),
            "states 16,905 for \"FY2025\", but the table at step 3 gives 16,905 under \"FY2024\" (row \"Retail\"); \
             under \"FY2025\" it gives 18,240"
        );
    }
    // The right column; both columns named on the line; a row the line does not name; no
    // column named at all: nothing to find.
    for answer in [
        "Retail sales in FY2025 were 18,240 (in thousands).",
        "Retail sales rose from 16,905 in FY2024 to 18,240 in FY2025.",
        "In FY2025 the figure was 16,905.",
        "Retail sales were 16,905.",
    ] {
        for markdown in [false, true] {
            let t = quarterly(markdown, answer);
            assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new(), "{answer}");
        }
    }
}

#[test]
fn code_that_prints_a_mean_as_the_median_is_the_decisive_step() {
    // A held-out user's Magentic-One run: the Coder's first script computes `.median()` and
    // fails for want of openpyxl; the second computes `.mean()` and prints it as
    // `median_oneway_min`; the orchestrator reports that figure as the median.
    let t = fixture("handbuilt/magentic-one/commute_median_as_mean.json");
    assert_eq!(steps_with(&t, Signal::WrongStatistic), vec![8]);
    assert_eq!(
        evidence(&t, 8, Signal::WrongStatistic),
        "reports a mean under the name \"median\": print(\"median_oneway_min =\", round(cyc[\"oneway_min\"].mean(), 1))"
    );
    // The terminal's replies are linked to the code they ran, and the file browser's page holds
    // no invented values.
    let executed: Vec<(usize, usize)> =
        t.links.iter().filter(|l| l.kind == LinkKind::Execution).map(|l| (l.from, l.to)).collect();
    assert_eq!(executed, vec![(5, 6), (8, 9)]);
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), Vec::<usize>::new());
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(8), Some("Coder")), "{}", d.reason);
    assert_eq!(d.category.as_str(), "instruction_or_plan_deviation");
}

/// A code tool called with `code`, answered with `printed`.
fn computed(code: &str, printed: &str) -> Trajectory {
    let mut m = vec![user("What is the median order value in orders.csv?")];
    m.extend(call("c1", "run_python", json!({ "code": code }), printed));
    m.push(assistant(&format!("The answer is {printed}.")));
    load(m)
}

#[test]
fn a_statistic_is_read_against_the_name_it_is_printed_or_assigned_under() {
    let wrong = computed(
        "import pandas as pd\ndf = pd.read_csv('orders.csv')\nmedian_value = df['value'].mean()\nprint(median_value)",
        "48.20",
    );
    assert_eq!(steps_with(&wrong, Signal::WrongStatistic), vec![1]);
    assert_eq!(
        evidence(&wrong, 1, Signal::WrongStatistic),
        "reports a mean under the name \"median\": median_value = df['value'].mean()"
    );
    // The statistic named; a column whose name holds "median"; both named and computed.
    for code in [
        "import pandas as pd\ndf = pd.read_csv('orders.csv')\nprint('median:', df['value'].median())",
        "import pandas as pd\ndf = pd.read_csv('orders.csv')\nx = df['median_value'].mean()\nprint(x)",
        "import numpy as np\nprint('mean and median', np.mean(v), np.median(v))",
    ] {
        let t = computed(code, "41.00");
        assert_eq!(steps_with(&t, Signal::WrongStatistic), Vec::<usize>::new(), "{code}");
    }
}

/// An amount the billing API gives in cents (the system message says amounts are in the minor
/// unit) stated as euros in a reminder's draft is the decisive step (a held-out user's OpenAI
/// chat run: `"amount_remaining": 220000`, then "€220,000.00 outstanding").
#[test]
fn an_amount_in_cents_stated_as_euros_is_a_misread() {
    let t = fixture("handbuilt/openai-chat/reminder_cents_read_as_euros.json");
    assert_eq!(steps_with(&t, Signal::IgnoredResult).first(), Some(&9));
    assert_eq!(
        evidence(&t, 9, Signal::IgnoredResult),
        "states €220,000.00, but amount_remaining 220000 at step 5 is in the minor unit (cents): 2,200.00"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.category.as_str()), (Some(9), "misread_tool_output"), "{}", d.reason);
    // Built here: the same figure from an API that says nothing of cents, and the amount read
    // right, are no misread.
    let run = |policy: &str, said: &str| {
        let mut m = vec![system(policy), user("How much does ACME still owe?")];
        m.extend(call(
            "c1",
            "get_invoice",
            json!({"id": "in_1"}),
            r#"{"currency": "eur", "amount_remaining": 220000, "status": "open"}"#,
        ));
        m.push(assistant(said));
        load(m)
    };
    // The misread's own words: another finding may hold for an answer that repeats no figure.
    let misread = |t: &Trajectory| steps_saying(t, Signal::IgnoredResult, "in the minor unit");
    let cents = "You are a billing assistant. Amounts are integers in the currency's minor unit (cents).";
    assert_eq!(misread(&run(cents, "ACME still owes €220,000.00.")), vec![4]);
    assert_eq!(misread(&run(cents, "ACME still owes €2,200.00.")), Vec::<usize>::new());
    assert_eq!(misread(&run("You are a billing assistant.", "ACME still owes €220,000.00.")), Vec::<usize>::new());
}

/// The findings of `signal` at step `step` of `t`, as their evidence texts.
fn unsourced_at(t: &Trajectory, step: usize) -> Vec<usize> {
    steps_with(t, Signal::UnsourcedValue).into_iter().filter(|&i| i == step).collect()
}

/// A lookup returning `result`, then the assistant's `reply` (step 4).
fn looked_up(result: &str, reply: &str) -> Trajectory {
    let mut m = vec![system("You help the user with their travel and expenses."), user("What does it look like?")];
    m.extend(call("c1", "lookup", json!({"q": "status"}), result));
    m.push(assistant(reply));
    load(m)
}

#[test]
fn values_worked_out_from_what_was_read_are_no_invented_values() {
    // Each pair: a reply whose figure is worked out from the lookup or from the reply's own
    // figures, and the same reply with a figure nothing gives, which is still found.
    let cases = [
        // A clock time shifted by a duration the reply states.
        (
            "UA 1472: new estimated departure 9:50 PM (was 9:05 PM), gate B44; boarding closes 15 min before departure.",
            "New departure 9:50 PM. Boarding closes 15 min before departure, so be at the gate by 9:35 PM.",
            "New departure 9:50 PM. Boarding closes 15 min before departure, so be at the gate by 9:20 PM.",
            "states 20 with no earlier source",
        ),
        // A change between two figures, stated as a percentage.
        (
            "q3_total: 50532.45 EUR\nq2_total: 41120.70 EUR",
            "Q3 travel spend: €50,532.45.\nThat is up 22.9% on Q2 (€41,120.70).",
            "Q3 travel spend: €50,532.45.\nThat is up 27.4% on Q2 (€41,120.70).",
            "states 27.4 with no earlier source",
        ),
        // A count that is the total of a column of the reply's own table.
        (
            "July 18240.55 61\nAugust 9875.10 33\nSeptember 22416.80 74",
            "168 expense lines in Q3:\n\n| Month | Spend | Lines |\n|---|---|---|\n| July | €18,240.55 | 61 |\n| August | €9,875.10 | 33 |\n| September | €22,416.80 | 74 |",
            "171 expense lines in Q3:\n\n| Month | Spend | Lines |\n|---|---|---|\n| July | €18,240.55 | 61 |\n| August | €9,875.10 | 33 |\n| September | €22,416.80 | 74 |",
            "states 171 with no earlier source",
        ),
        // A total of a price and a price per night times the nights.
        (
            "Transavia LIS-AMS return 164.96 EUR; Motel One Waterlooplein 139 EUR per night",
            "Hotels for 3 nights:\n- Motel One: €139/night\nFlight: Transavia €164.96.\nCheapest combination: €581.96 in total.",
            "Hotels for 3 nights:\n- Motel One: €139/night\nFlight: Transavia €164.96.\nCheapest combination: €590.45 in total.",
            "states 590.45 with no earlier source; the amounts before it add up to 581.96 (164.96 + 139 × 3)",
        ),
        // A size in another unit, rounded.
        (
            " pg_size_pretty | count\n----------------+-------\n 1712 kB        |  4210",
            "The table is small (4,210 rows, 1.7 MB): no long lock.",
            "The table is small (4,210 rows, 2.4 MB): no long lock.",
            "states 2.4 with no earlier source",
        ),
        // A temperature in the other scale beside the one read, and a reading cut to one
        // decimal (a set 30 Magentic-One run's "95°F (35.0°C)" and "89.1°F" after 89.06).
        (
            "date       tmax_f\n2023-07-28 95.0\n2023-07-16 89.06",
            "The hottest day was July 28 at 95°F (35.0°C); July 16 came close at 89.1°F.",
            "The hottest day was July 28 at 95°F (36.5°C); July 16 came close at 89.1°F.",
            "states 36.5 with no earlier source",
        ),
        // A part of a compound duration the tool printed, and that part in seconds.
        (
            "assert_eq!(parse_duration(\"1h30m\").unwrap(), Duration::from_secs(5400));\nleft: 1800s",
            "The loop keeps only the last component of 1h30m (30m = 1800s).",
            "The loop keeps only the last component of 1h30m (45m = 2700s).",
            "states 45, 2700 with no earlier source",
        ),
    ];
    for (result, worked_out, invented, reason) in cases {
        let t = looked_up(result, worked_out);
        assert_eq!(unsourced_at(&t, 4), Vec::<usize>::new(), "{worked_out}");
        let t = looked_up(result, invented);
        assert_eq!(evidence(&t, 4, Signal::UnsourcedValue), reason, "{invented}");
    }
}

#[test]
fn correct_runs_whose_figures_are_worked_out_are_no_failure() {
    // Held-out users' correct runs: a trip total of a flight and three nights at a price per
    // night (Google ADK); a compound duration taken apart in a Codex exec run's reasoning.
    for rel in [
        "handbuilt/google-adk/trip_options_total_per_night.adk.json",
        "handbuilt/codex/compound_duration_fixed.codex-exec.jsonl",
    ] {
        let t = fixture(rel);
        assert_eq!(steps_with(&t, Signal::UnsourcedValue), Vec::<usize>::new(), "{rel}");
        assert_eq!(falat(&t).decisive_step, None, "{rel}");
    }
}

#[test]
fn an_executor_reply_after_the_orchestrator_hands_it_the_code_is_what_the_code_printed() {
    // Magentic-One with a code executor: the Coder writes the code (step 13), the orchestrator
    // tells the Executor to run it (14), the Executor answers "42.2%" (15).
    let t = fixture("handbuilt/magentic-one/executor_after_handover.json");
    assert_eq!(t.steps[15].agent, "Executor");
    assert_eq!(unsourced_at(&t, 15), Vec::<usize>::new());
    // The final answer's long claim and values are clipped, not the end of the sentence.
    assert_eq!(
        evidence(&t, 16, Signal::UnverifiedAssertion),
        "asserts the final result (\"FINAL ANSWER: According to RenewableUK,…\") but \"according to renewableuk\", \
         \"the uk had 21.1 gw of offshore wind oper…\" appear in no observation before it"
    );
}

/// A flight status in UTC, the airport's offset (when `offset`), then the assistant's `reply`.
fn departure(offset: bool, reply: &str) -> Trajectory {
    let mut m = vec![
        system("You are a travel desk. Tools return times in UTC. Give times in the airport's local time."),
        user("Is my flight UA 1472 from Denver still on time?"),
    ];
    m.extend(call(
        "c1",
        "flight_status",
        json!({"flight": "UA1472"}),
        r#"{"status": "DELAYED", "departure": {"airport": "DEN", "scheduled": "2025-11-19T21:05:00Z", "estimated": "2025-11-19T21:50:00Z"}}"#,
    ));
    if offset {
        m.extend(call(
            "c2",
            "airport_info",
            json!({"iata": "DEN"}),
            r#"{"iata": "DEN", "utc_offset_on_date": "-07:00"}"#,
        ));
    }
    m.push(assistant(reply));
    load(m)
}

#[test]
fn a_utc_time_told_as_local_time_is_a_misread() {
    let t = departure(true, "It is delayed: new estimated departure **9:50 PM** Mountain Time (was 9:05 PM).");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![6]);
    assert_eq!(
        evidence(&t, 6, Signal::IgnoredResult),
        "states 9:50 PM as local time, but 2025-11-19T21:50:00Z at step 3 is UTC: at the local offset -07:00 it is 14:50"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.category.as_str()), (Some(6), "misread_tool_output"), "{}", d.reason);
    // Converted right, told as UTC, or no offset known: nothing to find.
    for (offset, reply) in [
        (true, "It is delayed: new estimated departure 2:50 PM Mountain Time (was 2:05 PM)."),
        (true, "It is delayed: new estimated departure 21:50 UTC (was 21:05 UTC)."),
        (false, "It is delayed: new estimated departure 9:50 PM local time (was 9:05 PM)."),
    ] {
        let t = departure(offset, reply);
        assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new(), "{reply}");
    }
}

/// An expense run: the user gives the receipt's amount with a decimal comma and its VAT rate;
/// the assistant restates it with a point and works out the VAT included (`answer`).
fn expense_run(answer: &str) -> Trajectory {
    load(vec![
        system("You are an expense assistant. Restate the expense and ask before filing it."),
        user("I need to file a taxi from the airport on 12 Feb, the receipt says 78,40 EUR incl. 7% VAT."),
        assistant(answer),
    ])
}

#[test]
fn an_amount_with_a_decimal_comma_and_the_vat_it_includes_are_sourced() {
    // 78.40 is the user's 78,40; 5.13 is the 7% VAT included in it (78.40 × 7 / 107).
    let t = expense_run("Here's what I'd file: Taxi on 12 Feb, 78.40 EUR (incl. 7% VAT = 5.13 EUR). Shall I file it?");
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), Vec::<usize>::new());
    assert_eq!(falat(&t).decisive_step, None, "{}", falat(&t).reason);
    // A VAT that is no share of the amount, and an amount the user did not give, are invented.
    let t = expense_run("Here's what I'd file: Taxi on 12 Feb, 87.40 EUR (incl. 7% VAT = 5.81 EUR). Shall I file it?");
    assert_eq!(evidence(&t, 2, Signal::UnsourcedValue), "states 87.4, 5.81 with no earlier source");
}

#[test]
fn a_date_given_without_its_year_and_dated_by_the_agent_is_sourced() {
    // The user gives "Friday Dec 12"; the agent writes it as 2025-12-12: the date and its year are
    // the user's date, completed.
    let run = |reply: &str| {
        load(vec![
            system("You are a travel assistant."),
            user("Find me the earliest direct flight from Oslo to Berlin on Friday Dec 12 and hold it."),
            assistant(reply),
        ])
    };
    for reply in [
        "Searching direct OSL→BER flights on 2025-12-12 for one adult.",
        "I will look for flights on 12 December 2025, direct only.",
    ] {
        let t = run(reply);
        assert_eq!(steps_with(&t, Signal::UnsourcedValue), Vec::<usize>::new(), "{reply}");
        assert_eq!(falat(&t).decisive_step, None, "{}", falat(&t).reason);
    }
    // Another day is no completion of the user's date.
    let t = run("Searching direct OSL→BER flights on 2025-12-13 for one adult.");
    assert_eq!(evidence(&t, 2, Signal::UnsourcedValue), "states 2025, 2025-12-13, 13 with no earlier source");
}

/// A Who&When hand-crafted (Magentic-One) run: the search page's snippet says the branches opened
/// "between 1926 and 1931" (step 5); the WebSurfer opens the article and its page text shows the
/// branches table (step 9), after which it `tells` the opening year. The run answers `answer`;
/// the expected answer is 1926 (Riverside's row).
fn library_branches(tells: &str, answer: &str) -> Trajectory {
    let q = "The English Wikipedia article on the Ashford public library system lists its branches in a table. \
             In what year did the Riverside branch open? Answer with the year only.";
    let ledger = |satisfied: bool, next: &str| {
        format!(
            "Updated Ledger:\n{{\n    \"is_request_satisfied\": {{\"reason\": \"-\", \"answer\": {satisfied}}},\n    \
             \"next_speaker\": {{\"reason\": \"-\", \"answer\": \"{next}\"}}\n}}"
        )
    };
    let run = json!({
        "is_correct": answer == "1926",
        "question": q,
        "ground_truth": "1926",
        "history": [
            {"role": "human", "content": q},
            {"role": "Orchestrator (thought)", "content": format!("Initial plan:\n\nWe are working to address the following user request:\n\n{q}\n\nHere is the plan to follow as best as possible:\n\n- WebSurfer opens the Wikipedia article and reads the branches table.")},
            {"role": "Orchestrator (thought)", "content": ledger(false, "WebSurfer")},
            {"role": "Orchestrator (-> WebSurfer)", "content": "Please open the English Wikipedia article 'Ashford Public Library' and go to its Branches table."},
            {"role": "Orchestrator (thought)", "content": "Next speaker WebSurfer"},
            {"role": "WebSurfer", "content": "I typed 'Ashford Public Library Wikipedia' into the browser search bar.\n\nHere is a screenshot of [Ashford Public Library - Search](https://www.bing.com/search?q=Ashford+Public+Library).\nAutomatic OCR of the page screenshot has detected the following text:\n\nAshford Public Library - Wikipedia\nThe Ashford Public Library opened its first branch in 1902; further branches followed between 1926 and 1931."},
            {"role": "Orchestrator (thought)", "content": ledger(false, "WebSurfer")},
            {"role": "Orchestrator (-> WebSurfer)", "content": "Please open the Wikipedia result and transcribe the Branches table."},
            {"role": "Orchestrator (thought)", "content": "Next speaker WebSurfer"},
            {"role": "WebSurfer", "content": format!("I clicked 'Ashford Public Library - Wikipedia'.\n\nHere is a screenshot of [Ashford Public Library - Wikipedia](https://en.wikipedia.org/wiki/Ashford_Public_Library).\nAutomatic OCR of the page screenshot has detected the following text:\n\n2 Branches\nBranch | Opened | Renovated | Notes\nCentral | 1902 | 1988 | Carnegie building\nRiverside | 1926 | 2004 | Moved in 1958\nHillcrest | 1931 | 1999 |\n3 Funding\n\n{tells}")},
            {"role": "Orchestrator (thought)", "content": ledger(true, "Orchestrator")},
            {"role": "Orchestrator (thought)", "content": "Request satisfied."},
            {"role": "Orchestrator (thought)", "content": answer},
        ]
    });
    who_and_when(&run)
}

#[test]
fn a_year_read_from_the_next_row_of_a_table_is_the_decisive_step() {
    // The WebSurfer gives Riverside the opening year of the row below it (Hillcrest's 1931). The
    // number is first written in the search snippet, which is right for what it says; the value
    // is wrong where it is read for Riverside, with Riverside's own 1926 on the same page.
    let t = library_branches(
        "The table lists three branches. The Riverside branch opened in 1931 (it moved in 1958).",
        "1931",
    );
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![9]);
    assert_eq!(
        evidence(&t, 9, Signal::IgnoredResult),
        "states 1931 for \"Riverside\" (\"Opened\"), but the table at step 9 gives it 1926 there; 1931 is the \
         \"Opened\" of \"Hillcrest\""
    );
    for ground_truth in [false, true] {
        let d = falat_with(&t, ground_truth);
        assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(9), Some("WebSurfer")), "{}", d.reason);
        assert_eq!(d.category.as_str(), "misread_tool_output");
        if ground_truth {
            // The orchestrator's request after the snippet "did not carry on" 1926, but the
            // WebSurfer had it again in the table: that candidate does not explain the answer.
            let c = d.candidates.iter().find(|c| c.step == 7).expect("step 7 is a candidate");
            let sufficiency = c.verification.as_ref().map(|v| v.sufficiency.evidence.to_string());
            assert_eq!(
                sufficiency.as_deref(),
                Some(
                    "the output's wrong \"1931\" is read at step 9 from another row of a table that shows the right \
                     one: it does not follow from this step"
                )
            );
        }
    }
}

#[test]
fn a_year_read_from_its_own_row_or_told_for_the_row_that_holds_it_is_no_misread() {
    for tells in [
        "The table lists three branches. The Riverside branch opened in 1926 (it moved in 1958).",
        "The table lists three branches. Riverside opened in 1926; Hillcrest opened in 1931.",
    ] {
        let t = library_branches(tells, "1926");
        assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new(), "{tells}");
        assert_eq!(falat(&t).decisive_step, None, "{tells}");
    }
}

/// A price list returned as a table whose rows end on a bar, then the assistant's answer.
fn price_list(answer: &str) -> Trajectory {
    let mut m = vec![
        system("You answer questions about our subscription plans."),
        user("What is the Team plan's annual price?"),
    ];
    m.extend(call(
        "c1",
        "get_price_list",
        json!({"currency": "USD"}),
        "Plan | Monthly | Annual | Notes\nStarter | 19.00 | 190.00 |\nTeam | 49.00 | 490.00 | 5 seats\nBusiness | 99.00 | 990.00 |",
    ));
    m.push(assistant(answer));
    load(m)
}

#[test]
fn a_price_told_for_one_plan_from_the_next_plans_row_is_a_misread() {
    let t = price_list("The Team plan's annual price is $990.00.");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::IgnoredResult),
        "states 990.00 for \"Team\" (\"Annual\"), but the table at step 3 gives it 490.00 there; 990.00 is the \
         \"Annual\" of \"Business\""
    );
    assert_eq!(falat(&t).decisive_step, Some(4));
    for right in [
        "The Team plan's annual price is $490.00.",
        "The Team plan's annual price is $490.00; Business is $990.00 annual.",
    ] {
        assert_eq!(steps_with(&price_list(right), Signal::IgnoredResult), Vec::<usize>::new(), "{right}");
    }
}

#[test]
fn a_row_misread_is_found_when_labels_share_a_word_or_the_table_has_one_numeric_column() {
    // Benchmark names share `parse`: naming parse_large does not name parse_nested, whose p99
    // the agent gives it.
    let bench = "| Benchmark | Mean (ms) | p50 | p99 |\n|---|---|---|---|\n| parse_small | 0.412 | 0.398 | 0.701 |\n\
                 | parse_large | 41.96 | 40.12 | 48.31 |\n| parse_nested | 12.77 | 12.10 | 19.86 |";
    let mut m = vec![user("Run the parser benchmarks and tell me the p99 latency of parse_large.")];
    m.extend(call("b1", "Bash", json!({"command": "cargo bench --bench parse"}), bench));
    m.push(assistant("The benchmarks ran cleanly. parse_large's p99 latency is 19.86 ms on this machine."));
    let t = load(m);
    assert_eq!(
        evidence(&t, 3, Signal::IgnoredResult),
        "states 19.86 for \"parse_large\" (\"p99\"), but the table at step 2 gives it 48.31 there; 19.86 is the \
         \"p99\" of \"parse_nested\""
    );
    // One numeric column beside a text one.
    let stations = "Station | Opened | Notes\nKellerman Road | 1884 | junction\nMill Road | 1891 | terminus";
    let mut m = vec![user("When did Kellerman Road station open?")];
    m.extend(call("s1", "lookup_stations", json!({"line": "Harlow Valley"}), stations));
    m.push(assistant("Kellerman Road station opened in 1891."));
    let t = load(m);
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![3]);
    let mut m = vec![user("When did Kellerman Road station open?")];
    m.extend(call("s1", "lookup_stations", json!({"line": "Harlow Valley"}), stations));
    m.push(assistant("Kellerman Road station opened in 1884."));
    assert_eq!(steps_with(&load(m), Signal::IgnoredResult), Vec::<usize>::new());
}

#[test]
fn a_row_misread_is_found_in_a_table_whose_cells_carry_units() {
    // A monitoring table writes each latency with its unit; the assistant gives checkout-api the
    // p95 of the row under it.
    let table = "SERVICE          REQS/S      P50        P95        ERRORS\n\
                 auth-api         1,250       12.4 ms    38.7 ms    0.02%\n\
                 checkout-api     310         88.2 ms    412.6 ms   1.40%\n\
                 search-api       2,040       21.9 ms    264.3 ms   0.11%";
    let run = |reply: &str| {
        let mut m = vec![user("What is checkout-api's p95 latency right now? I need it for the incident note.")];
        m.extend(call("m1", "Bash", json!({"command": "svcstat --window 15m"}), table));
        m.push(assistant(reply));
        load(m)
    };
    let t = run("checkout-api is at 264.3 ms p95 over the last 15 minutes, well under the 500 ms budget.");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![3]);
    assert_eq!(
        evidence(&t, 3, Signal::IgnoredResult),
        "states 264.3 for \"checkout-api\" (\"P95\"), but the table at step 2 gives it 412.6 ms there; 264.3 is \
         the \"P95\" of \"search-api\""
    );
    assert_eq!(falat(&t).decisive_step, Some(3));
    for right in [
        "checkout-api is at 412.6 ms p95 over the last 15 minutes, under the 500 ms budget.",
        "checkout-api is at 412.6 ms p95; search-api is at 264.3 ms p95.",
    ] {
        assert_eq!(steps_with(&run(right), Signal::IgnoredResult), Vec::<usize>::new(), "{right}");
    }
}

#[test]
fn a_total_of_the_quantity_the_user_asked_for_at_a_looked_up_price_is_worked_out() {
    // The user asks for 300 boxes; the catalogue gives the unit price; the reply's total is 300 ×
    // the price although its sentence does not repeat the 300. A total no quantity of the
    // request gives is still unsourced.
    let run = |reply: &str| {
        let mut m = vec![
            system("You are the purchasing assistant of Harlow Print Ltd."),
            user("Quote me 300 boxes of the A4 copier paper (SKU PAP-A4-80), delivered to the Leeds office."),
        ];
        m.extend(call(
            "c1",
            "catalogue_lookup",
            json!({"sku": "PAP-A4-80"}),
            "{\"sku\": \"PAP-A4-80\", \"name\": \"A4 copier paper 80gsm, box of 5 reams\", \"unit_price_gbp\": 61.50, \"in_stock\": 1240}",
        ));
        m.push(assistant(reply));
        load(m)
    };
    let t = run("The A4 paper is £61.50 a box, so the order comes to £18,450.00 before delivery.");
    assert_eq!(unsourced_at(&t, 4), Vec::<usize>::new());
    assert_eq!(falat(&t).decisive_step, None);
    let t = run("The A4 paper is £61.50 a box, so the order comes to £18,540.00 before delivery.");
    assert_eq!(evidence(&t, 4, Signal::UnsourcedValue), "states 18540 with no earlier source");
    // A quantity the user took back is no longer asked for: 300 × 61.50 after "make it 250".
    let mut m = vec![
        system("You are the purchasing assistant of Harlow Print Ltd."),
        user("Quote me 300 boxes of the A4 copier paper (SKU PAP-A4-80)."),
        user("Actually make it 250 boxes, we have some left."),
    ];
    m.extend(call("c1", "catalogue_lookup", json!({"sku": "PAP-A4-80"}), "{\"unit_price_gbp\": 61.50}"));
    m.push(assistant("The A4 paper is £61.50 a box, so the order comes to £18,450.00 before delivery."));
    assert_eq!(evidence(&load(m), 5, Signal::UnsourcedValue), "states 18450 with no earlier source");
}

/// A user gives the time of a spike on a board set to Berlin time; a deploy history prints UTC
/// times; the assistant lines the two up as one clock (`reply`), and rolls back.
fn spike_at_berlin_time(reply: &str) -> Trajectory {
    let history = "TIME (UTC)             SERVICE       DEPLOY  MESSAGE\n\
                   2025-10-14T12:01:55Z   checkout-api  #4469   cart: dedupe promo codes\n\
                   2025-10-14T13:20:03Z   checkout-api  #4470   flags: new_address_form -> 10%\n\
                   2025-10-14T14:02:37Z   checkout-api  #4471   logging: structured json";
    let mut m = vec![user(
        "checkout-api 5xx jumped to 6% at 14:05 today (the Grafana board is set to Europe/Berlin). Find the deploy \
         that caused it and roll it back.",
    )];
    m.extend(call("d1", "shell", json!({"command": "deployctl history checkout-api --limit 20"}), history));
    m.push(assistant(reply));
    m.extend(call("d2", "shell", json!({"command": "deployctl rollback checkout-api --to 4470"}), "rolled back"));
    load(m)
}

#[test]
fn a_local_time_the_user_gave_compared_with_utc_times_is_a_misread() {
    let t = spike_at_berlin_time(
        "The spike starts at 14:05. The last deploy before it is #4471 at 14:02:37, which fits a rollout \
         finishing just before the errors. Rolling back to #4470.",
    );
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![3]);
    assert_eq!(
        evidence(&t, 3, Signal::IgnoredResult),
        "compares 14:05, which the user gave at step 0 in Europe/Berlin time, with 14:02, a UTC time of step 2, as \
         if both were one clock"
    );
    assert_eq!(falat(&t).decisive_step, Some(3));
    // Converted first: 14:05 Berlin (CEST) is 12:05 UTC, so #4469 is the one before it; also
    // when the sentence names the zone before the time and the converted time well after it.
    for converted in [
        "14:05 Berlin time is 12:05 UTC. The last deploy before that is #4469 at 12:01:55. Rolling back to #4468.",
        "Germany is on CEST in October, so the 14:05 jump on your Grafana board was at 12:05 UTC. The last deploy \
         before it is #4469 at 12:01:55.",
        "Your board shows 14:05, which was at 12:05 UTC. The last deploy before it is #4469 at 12:01:55.",
    ] {
        let t = spike_at_berlin_time(converted);
        assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new(), "{converted}");
    }
}

#[test]
fn a_local_time_compared_with_utc_is_read_with_am_pm_and_not_for_zones_on_utc_in_winter() {
    let run = |asked: &str, reply: &str| {
        let history = "2025-01-14T13:20:03Z  r-2289  flags\n2025-01-14T14:02:37Z  r-2290  logging: structured json";
        let mut m = vec![user(asked)];
        m.extend(call("d1", "shell", json!({"command": "deployctl history api"}), history));
        m.push(assistant(reply));
        load(m)
    };
    let t = run(
        "Errors started at 2:05 PM PST today. Which release caused them?",
        "The errors began at 2:05 PM, three minutes after r-2290 shipped at 14:02 UTC, so r-2290 is the cause.",
    );
    assert_eq!(
        evidence(&t, 3, Signal::IgnoredResult),
        "compares 2:05 PM, which the user gave at step 0 in PST time, with 14:02, a UTC time of step 2, as if both \
         were one clock"
    );
    let t = run(
        "Errors started at 14:05 (Europe/London) today. Which release caused them?",
        "The errors began at 14:05, three minutes after r-2290 shipped at 14:02:37, so r-2290 is the cause.",
    );
    assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new());
}

/// A figure a search gives in US dollars, carried into the next message as euros with no
/// conversion, is the decisive step (set 30's LangGraph run had the same shape: "USD 9.8 billion"
/// briefed to the math agent as "EUR 9.8 billion"). Built here: a research assistant's run.
#[test]
fn a_figure_carried_over_in_another_currency_without_conversion_is_a_misread() {
    let run = |said: &str| {
        let mut m = vec![
            system("You are a market research assistant. Report figures in EUR."),
            user("How big was the European e-bike market in 2023, in EUR?"),
        ];
        m.extend(call(
            "c1",
            "web_search",
            json!({"query": "European e-bike market size 2023"}),
            r#"[{"title": "Europe E-Bike Market Report", "content": "The Europe e-bike market size was estimated at USD 9.8 billion in 2023."}, {"title": "ECB reference rates", "content": "Average of 2023: 1.0813 USD per EUR."}]"#,
        ));
        m.push(assistant(said));
        load(m)
    };
    let relabelled = |t: &Trajectory| steps_saying(t, Signal::IgnoredResult, "no step converts it");
    let t = run("The European e-bike market was worth EUR 9.8 billion in 2023.");
    assert_eq!(relabelled(&t), vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::IgnoredResult),
        "states EUR 9.8 billion, but step 3 gives that figure as USD 9.8 billion, and no step converts it"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.category.as_str()), (Some(4), "misread_tool_output"), "{}", d.reason);
    // Converted, compared side by side, or a figure of one significant digit: no relabel.
    for said in [
        "The market was worth USD 9.8 billion in 2023, about EUR 9.06 billion at 1.0813 USD per EUR.",
        "USD 9.8 billion is not EUR 9.8 billion: at 1.0813 USD per EUR it is about EUR 9.06 billion.",
        "It was worth USD 9.8 billion; the report costs €5 and the summary $5.",
    ] {
        assert_eq!(relabelled(&run(said)), Vec::<usize>::new(), "{said}");
    }
}

/// A search result gives a municipality's population by census year; the agent takes the 2011
/// figure for a question about the 2021 census (set 30's smolagents run had this shape: Sintra's
/// "2011 377,835 · 2021 385,606"). Built here: a research assistant's run.
#[test]
fn a_figure_the_results_give_for_another_year_than_the_asked_one_is_a_misread() {
    let run = |ask: &str, said: &str| {
        let mut m = vec![system("You answer questions about official statistics."), user(ask)];
        m.extend(call(
            "c1",
            "web_search",
            json!({"query": "Sintra municipality population census"}),
            "Sintra (Município) - City Population\nSintra: municipality in Lisboa district. Population: 1991 260,951 · \
             2001 363,749 · 2011 377,835 · 2021 385,606 (Census)...",
        ));
        m.push(assistant(said));
        load(m)
    };
    let ask = "What was the resident population of Sintra in the 2021 census?";
    let other_year = |t: &Trajectory| steps_saying(t, Signal::IgnoredResult, "the task asks about");
    let t = run(ask, "Sintra had 377,835 residents.");
    assert_eq!(other_year(&t), vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::IgnoredResult),
        "states 377,835, which step 3 gives for 2011 (\"2011 377,835 · 2021 385,606\"); the task asks about 2021, \
         for which it gives 385,606"
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.category.as_str()), (Some(4), "misread_tool_output"), "{}", d.reason);
    // The asked year's figure; a task that names two years; a figure the series gives for no
    // other year: no finding.
    assert_eq!(other_year(&run(ask, "Sintra had 385,606 residents.")), Vec::<usize>::new());
    let both = "How did Sintra's population change between the 2011 and 2021 censuses?";
    assert_eq!(other_year(&run(both, "From 377,835 to 385,606 residents.")), Vec::<usize>::new());
    assert_eq!(other_year(&run(ask, "Sintra had 380,000 residents.")), Vec::<usize>::new());
}
