//! A hand-off against the delegating agent's routing instructions (docs/METHODS.md, "Wrong
//! delegation"): two real-shaped multi-agent runs whose triage agent's instructions say which
//! specialist takes what, in the two ways instructions say it ("Billing Agent (charges, …)" and
//! "route billing, charges and refunds to billing_agent").

use falat::diagnosis::Signal;

use crate::chat::{evidence, falat, findings, fixture};

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
