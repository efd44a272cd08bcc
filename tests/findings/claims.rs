//! What an agent says that is no failure: an apology that is a courtesy, a hedging word the tool
//! wrote in another form, a duration worked out from two timestamps of a record, a rounded
//! figure whose finer one was read, warnings the agent calls harmless when the command did what
//! it was asked (docs/METHODS.md, "Claims that are no failure"). Each correct run has a twin
//! with the fault, named at its step.

use falat::diagnosis::Signal;
use falat::model::Trajectory;

use crate::chat::{assistant, call, evidence, falat, fixture, load, no_failure, steps_with, system, user};
use serde_json::json;

/// Whether step `i` counts as an error (its `error` flag).
fn error_flag(t: &Trajectory, i: usize) -> bool {
    falat::hierarchy::build(t).steps[i].flags.error
}

/// Asserts FALAT's step and agent for the run of fixture `rel`.
fn named(rel: &str, step: usize, agent: &str) {
    let d = falat(&fixture(rel));
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(step), Some(agent)), "{rel}: {}", d.reason);
}

#[test]
fn an_apology_is_an_error_only_when_it_leads_into_what_could_not_be_done() {
    // "I'm sorry for the wait! Good news: …": a courtesy before the answer.
    let ok = "handbuilt/openai-chat/order_status_apology_ok.openai-chat.json";
    assert!(!error_flag(&fixture(ok), 4));
    no_failure(ok);
    // "I'm sorry, I couldn't find a shipment …" after a lookup that found it: the agent gives up.
    let bad = "handbuilt/openai-chat/order_status_apology_gave_up.openai-chat.json";
    assert!(error_flag(&fixture(bad), 4));
    named(bad, 4, "assistant");
    // A web surfer's "I'm sorry for the delay" before the page it read; its twin could not load
    // the page, and the orchestrator answers anyway.
    let ok = "handbuilt/magentic-one/flam_railway_apology_ok.json";
    assert!(!error_flag(&fixture(ok), 3));
    no_failure(ok);
    let bad = "handbuilt/magentic-one/flam_railway_apology_gave_up.json";
    assert!(error_flag(&fixture(bad), 3));
    let t = fixture(bad);
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![5]);
    named(bad, 5, "MagenticOneOrchestrator");
}

#[test]
fn a_hedging_word_the_tool_wrote_in_another_form_is_no_assumption() {
    // `"delivery_estimate"` in the tracking result, "estimated delivery date" in the answer.
    no_failure("handbuilt/openai-chat/parcel_estimate_field_ok.openai-chat.json");
    let t = fixture("handbuilt/openai-chat/parcel_estimate_invented.openai-chat.json");
    assert_eq!(steps_with(&t, Signal::Assumption), vec![4]);
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![4]);
    named("handbuilt/openai-chat/parcel_estimate_invented.openai-chat.json", 4, "assistant");
    // `"completion_estimates"` in an OpenAI Agents SDK tool span, "The estimated completion date"
    // in the answer; the twin's ticket gives no date.
    no_failure("handbuilt/openai-agents/repair_completion_estimates_ok.openai-agents.json");
    let bad = "handbuilt/openai-agents/repair_completion_estimated_unsourced.openai-agents.json";
    let t = fixture(bad);
    assert_eq!(steps_with(&t, Signal::Assumption), vec![3]);
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![3]);
    named(bad, 3, "Repair desk");
}

#[test]
fn a_duration_between_two_timestamps_of_a_record_is_worked_out() {
    // 01:48 to 03:05 UTC is 77 minutes; 71 is no gap of the record.
    no_failure("handbuilt/openai-chat/warehouse_load_duration_ok.openai-chat.json");
    let bad = "handbuilt/openai-chat/warehouse_load_duration_invented.openai-chat.json";
    let t = fixture(bad);
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![4]);
    assert_eq!(evidence(&t, 4, Signal::UnsourcedValue), "states 71 with no earlier source");
    named(bad, 4, "assistant");
    // 23:30 to 01:15 the next day, at +01:00, is 1.75 hours; 1.25 is not.
    no_failure("handbuilt/magentic-one/backup_duration_ok.json");
    let bad = "handbuilt/magentic-one/backup_duration_invented.json";
    let t = fixture(bad);
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![5]);
    assert_eq!(evidence(&t, 5, Signal::UnsourcedValue), "states 1.25 with no earlier source");
    named(bad, 5, "MagenticOneOrchestrator");
}

#[test]
fn a_rounded_figure_is_sourced_by_the_finer_one_it_rounds() {
    // "about 1.6 million" for 1,588,457; 1.8 million rounds nothing the tool gave.
    no_failure("handbuilt/openai-chat/metro_population_rounded_ok.openai-chat.json");
    let bad = "handbuilt/openai-chat/metro_population_misrounded.openai-chat.json";
    let t = fixture(bad);
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![4]);
    assert_eq!(evidence(&t, 4, Signal::UnsourcedValue), "states 1.8 with no earlier source");
    named(bad, 4, "assistant");
    // "about 6.4 million" for 6,412,880 on the page the web surfer read; 6.9 million is not.
    no_failure("handbuilt/magentic-one/airport_passengers_rounded_ok.json");
    let bad = "handbuilt/magentic-one/airport_passengers_misrounded.json";
    let t = fixture(bad);
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![4]);
    assert_eq!(evidence(&t, 4, Signal::UnsourcedValue), "states 6.9 with no earlier source");
    named(bad, 4, "MagenticOneOrchestrator");
}

#[test]
fn warnings_the_agent_calls_harmless_are_no_failure_when_the_command_did_its_work() {
    // Font warnings, then "Saved chart to …", then "Those font warnings are harmless".
    let ok = "handbuilt/openai-chat/sales_chart_font_warnings_ok.openai-chat.json";
    assert!(!error_flag(&fixture(ok), 3));
    no_failure(ok);
    // The same warnings and words, but the output ends on a PermissionError: the save failed.
    let bad = "handbuilt/openai-chat/sales_chart_save_failed.openai-chat.json";
    let t = fixture(bad);
    assert!(error_flag(&t, 3));
    assert_eq!(steps_with(&t, Signal::IgnoredToolError), vec![4]);
    named(bad, 2, "assistant");
    // A deprecation warning and a git warning before "Loaded 1,284 orders", waved off by the
    // Coder; the twin's loader ends on a refused database login.
    let ok = "handbuilt/magentic-one/order_loader_warnings_ok.json";
    assert!(!error_flag(&fixture(ok), 4));
    no_failure(ok);
    let bad = "handbuilt/magentic-one/order_loader_failed_last_line.json";
    let t = fixture(bad);
    assert!(error_flag(&t, 4));
    assert_eq!(steps_with(&t, Signal::UnsourcedValue), vec![5]);
    named(bad, 5, "Coder");
}

#[test]
fn a_change_the_tool_did_not_make_told_as_made_is_the_decisive_step() {
    // `change_plan` answers `"dry_run": true, "applied": false`; the reply says the plan "has been
    // switched". The twin says it was a dry run and asks to apply it.
    let bad = "handbuilt/openai-chat/plan_change_dry_run_told_done.openai-chat.json";
    let t = fixture(bad);
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::IgnoredResult),
        "tells the user the change was made, but its result at step 3 says `\"dry_run\": true`: nothing was changed"
    );
    named(bad, 4, "assistant");
    no_failure("handbuilt/openai-chat/plan_change_dry_run_told_ok.openai-chat.json");
}

#[test]
fn data_the_tool_marks_cached_told_as_current_is_the_decisive_step() {
    // `"cached": true, "as_of": …` told as "currently operational"; the twin says it is cached.
    let bad = "handbuilt/openai-chat/payments_status_cached_told_live.openai-chat.json";
    let t = fixture(bad);
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::IgnoredResult),
        "tells the data as current, but its result at step 3 says `\"cached\": true`"
    );
    named(bad, 4, "assistant");
    no_failure("handbuilt/openai-chat/payments_status_cached_told_ok.openai-chat.json");
}

#[test]
fn stock_a_cache_served_told_as_in_stock_is_the_decisive_step() {
    // `"source": "cache", "cached_at": …` told as "in stock … 3 pairs on hand"; the twin says the
    // count is cached and may be out of date.
    let bad = "handbuilt/openai-chat/boot_stock_cached_told_in_stock.openai-chat.json";
    let t = fixture(bad);
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![4]);
    assert_eq!(
        evidence(&t, 4, Signal::IgnoredResult),
        "tells the data as current, but its result at step 3 says `\"source\": \"cache\"`"
    );
    named(bad, 4, "assistant");
    no_failure("handbuilt/openai-chat/boot_stock_cached_told_ok.openai-chat.json");
    // The stock told as in stock comes from a live lookup; only the opening hours, another
    // lookup, were a cache hit: the claim rests on the live result that shares its values.
    no_failure("handbuilt/openai-chat/boot_stock_live_hours_cached_ok.openai-chat.json");
}

#[test]
fn a_count_a_cache_served_told_as_available_is_the_decisive_step() {
    // "40 units available" after `"source": "cache", "cached_at": …` with no word of the cache.
    let run = |reply: &str| {
        let mut m = vec![
            system("You are the inventory agent."),
            user("Brightline needs 35 units of HX-410 shipped today from LDS. Is there enough stock?"),
        ];
        m.extend(call(
            "c1",
            "check_stock",
            json!({"sku": "HX-410", "warehouse": "LDS"}),
            r#"{"sku": "HX-410", "warehouse": "LDS", "available": 40, "reserved": 0, "source": "cache", "cached_at": "2026-11-27T06:00:00Z"}"#,
        ));
        m.push(assistant(reply));
        load(m)
    };
    for reply in [
        "HX-410 at LDS: 40 units available, 0 reserved. That covers the 35 units, so it can ship today.",
        "There are 40 left at LDS, enough for the 35 units.",
        "LDS has **40 units** available, enough for the 35.",
        "Stock for HX-410 at LDS:\n- Available: 40 units\n- Reserved: 0",
        "Yes. LDS has 40 units of HX-410, which covers the 35 units; it can ship today.",
    ] {
        let t = run(reply);
        assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![4], "{reply}");
        assert_eq!(
            evidence(&t, 4, Signal::IgnoredResult),
            "tells the data as current, but its result at step 3 says `\"source\": \"cache\"`"
        );
    }
    // Told as the cache's count, or a count the result does not hold: no finding.
    for reply in [
        "The cached count (as of 27 Nov) shows 40 units available; I'll refresh it before we promise today.",
        "I can look at 2 warehouses remaining if you want.",
        "40 units available per the count from 27 Nov, which is a few days old.",
        "The last inventory sync (Nov 27) shows 40 units available; have the warehouse confirm.",
        "I have 3 remaining steps for HX-410 at LDS: recount, reserve, ship.",
        "LDS lists 40 units of HX-410; version 2.32.3 available upstream.",
    ] {
        assert_eq!(steps_with(&run(reply), Signal::IgnoredResult), Vec::<usize>::new(), "{reply}");
    }
}

/// An OpenAI chat run: the user asks for the Python support line of release notes, the assistant
/// reads a dependency's changelog and writes `note`.
fn release_note(note: &str) -> Trajectory {
    let changelog = "Changelog\n6.0.0 (2026-09-14)\nBreaking changes\n- Dropped support for Python 3.8 and 3.9. \
                     quillhttp now requires Python >= 3.10.\nNew\n- Wheels for Python 3.13.";
    let mut m = vec![user(
        "Write the 'Python support' line of the ledgerkit 2.0 release notes. ledgerkit 2.0 now depends on \
         quillhttp 6.0, so check what quillhttp 6.0 supports first.",
    )];
    m.extend(call("c1", "fetch_page", json!({"url": "https://quillhttp.example/changelog"}), changelog));
    m.push(assistant(note));
    load(m)
}

#[test]
fn versions_told_as_supported_after_a_source_said_their_support_was_dropped() {
    let t = release_note(
        "**Python support.** ledgerkit 2.0 keeps the same Python support: Python 3.8 through 3.13 are supported.",
    );
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![3]);
    assert_eq!(
        evidence(&t, 3, Signal::IgnoredResult),
        "says \"Python 3.8 through 3.13 are supported.\", but step 2 says \"- Dropped support for Python 3.8 and 3.9.\""
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(3), Some("assistant")), "{}", d.reason);
    // One dropped version named alone is found too.
    let t = release_note("ledgerkit 2.0 supports Python 3.9, 3.10, 3.11, 3.12 and 3.13.");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), vec![3]);
    // The range the source leaves, the drop told as such, a lower bound, and another product's
    // versions: no finding.
    for note in [
        "ledgerkit 2.0 supports Python 3.10 through 3.13.",
        "Python 3.8 and 3.9 are no longer supported; ledgerkit 2.0 needs Python 3.10 or later.",
        "ledgerkit 2.0 requires Python >= 3.10 and is supported up to 3.13.",
        "ledgerkit 2.0 is compatible with Django 3.8 through 4.2.",
        // The range of an older release, in contrast.
        "Unlike ledgerkit 1.x, which supported Python 3.8 through 3.12, ledgerkit 2.0 supports Python 3.10 through 3.13.",
    ] {
        let t = release_note(note);
        assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new(), "{note}");
    }
}

#[test]
fn a_drop_in_other_words_or_of_older_versions_counts_and_a_restored_version_does_not() {
    let read = |page: &str, note: &str| {
        let mut m =
            vec![user("Write the platform support line of the release notes; check the dependency's notes first.")];
        m.extend(call("c1", "fetch_page", json!({"url": "https://deps.example/notes"}), page));
        m.push(assistant(note));
        load(m)
    };
    for (page, note) in [
        (
            "quillhttp 6.0.0\n\nThis release drops Python 3.8. Tested on Python 3.9 to 3.12.",
            "We support Python 3.8-3.12.",
        ),
        (
            "kubeclient 30.0\n- Dropped support for Kubernetes 1.27 and older.",
            "It is compatible with Kubernetes 1.26 and later.",
        ),
        (
            "nodeshim 4.0\nSupport for Node 16 has ended with this release.",
            "nodeshim 4.0 works with Node 16, 18 and 20.",
        ),
    ] {
        assert_eq!(steps_with(&read(page, note), Signal::IgnoredResult), vec![3], "{page}");
    }
    // 6.1.0 restored what 6.0.0 dropped: the newer notes stand.
    let page = "6.1.0\n- Restored support for Python 3.9.\n6.0.0\n- Dropped support for Python 3.8 and 3.9.";
    let t = read(page, "It supports Python 3.9 through 3.13.");
    assert_eq!(steps_with(&t, Signal::IgnoredResult), Vec::<usize>::new());
}
