//! A lookup an agent claims with nothing looked up before it: an unsourced-value finding of the
//! stating step (docs/METHODS.md, "Values in context"). Small OpenAI chat runs: the claim with no
//! call before it, the same claim after a call, a plan to search, and the user's own claim.

use falat::diagnosis::{ErrorCategory, Signal};
use falat::model::Trajectory;
use falat::substrate::{Context, Substrate, signals};
use serde_json::json;

use crate::chat::{assistant, call, falat, load, user};

const TASK: &str = "Who designed the Golden Gate Bridge? Give the chief engineer's name.";
const CLAIM: &str = "I have successfully retrieved the article on the bridge from the museum's website. \
     According to the museum's website, the chief engineer was Leon Moisseiff.";

/// The evidence of every unsourced-value finding of step `i` (without ground truth).
fn unsourced(t: &Trajectory, i: usize) -> Vec<String> {
    let sub = Substrate::build(t);
    let ctx = Context::of(t, &sub, false);
    signals::recall(&ctx, i)
        .unwrap_or_default()
        .into_iter()
        .filter(|f| f.signal == Signal::UnsourcedValue)
        .map(|f| f.evidence.to_string())
        .collect()
}

#[test]
fn a_lookup_claimed_with_nothing_looked_up_is_unsourced() {
    let t = load(vec![user(TASK), assistant(CLAIM), assistant("The answer is Leon Moisseiff.")]);
    assert_eq!(
        unsourced(&t, 1),
        vec![
            "claims a lookup (\"I have successfully retrieved the article on the bridge fro…\") with no tool \
             call, tool output or page read before it"
        ]
    );
    let d = falat(&t);
    assert_eq!(d.decisive_step, Some(1), "{}", d.reason);
    assert_eq!(d.category, ErrorCategory::Hallucination, "{}", d.reason);
}

#[test]
fn the_same_claim_after_a_tool_call_is_no_finding() {
    let mut messages = vec![user(TASK)];
    messages.extend(call(
        "call_1",
        "web_search",
        json!({"query": "Golden Gate Bridge chief engineer"}),
        "Golden Gate Bridge - museum page: chief engineer Joseph Strauss; Leon Moisseiff, consulting engineer.",
    ));
    messages.push(assistant(CLAIM));
    let t = load(messages);
    assert_eq!(unsourced(&t, 3), Vec::<String>::new());
}

#[test]
fn a_plan_to_search_and_the_users_own_claim_are_no_findings() {
    let t = load(vec![
        user(TASK),
        assistant("I will search the museum's website for the chief engineer and then read the article."),
        user("I already looked it up: according to the museum's website it was Joseph Strauss."),
    ]);
    assert_eq!(unsourced(&t, 1), Vec::<String>::new());
    assert_eq!(unsourced(&t, 2), Vec::<String>::new());
}
