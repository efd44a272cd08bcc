//! A worker's report of an outcome that its own tool output denies (docs/METHODS.md,
//! "Grounding"): in a team run, an agent reports an entity as passed, met, confirmed or available
//! while its own last tool output about it says failed, not significant, unconfirmed or
//! unavailable; another agent that relays the outcome follows from the report.

use falat::diagnosis::Signal;

use crate::chat::{evidence, falat, findings, fixture};

#[test]
fn a_qa_report_of_a_failed_soak_test_as_passed_is_the_decisive_step_not_the_writer_who_relays_it() {
    // A hand-built Google ADK session: a coordinator hands a go/no-go question to qa_agent, whose
    // two soak reports say RC-118 PASSED and RC-121 FAILED (3 reboots, limit 0); its report calls
    // both "Passed", and the release writer's note relays "both … passed".
    let t = fixture("handbuilt/google-adk/soak_failure_reported_passed.adk.json");
    let misread: Vec<usize> =
        findings(&t).into_iter().filter(|(_, s)| *s == Signal::IgnoredResult).map(|(i, _)| i).collect();
    assert_eq!(misread, vec![7]);
    assert_eq!(
        evidence(&t, 7, Signal::IgnoredResult),
        "reports RC-121 as \"Passed\", but its own get_soak_report output at step 6 says \"FAILED\""
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.agent.as_deref()), (Some(7), Some("qa_agent")), "{}", d.reason);
    let relay = falat::substrate::Substrate::build(&t);
    let ctx = falat::substrate::Context::of(&t, &relay, false);
    assert_eq!(falat::substrate::signals::relayed_outcome(&ctx, 10), Some(7));
}

#[test]
fn a_qa_report_that_tells_the_failed_soak_test_as_failed_is_no_failure() {
    let t = fixture("handbuilt/google-adk/soak_failure_reported_failed_ok.adk.json");
    assert!(findings(&t).is_empty(), "{:?}", findings(&t));
    let d = falat(&t);
    assert_eq!(d.decisive_step, None, "{}", d.reason);
}
