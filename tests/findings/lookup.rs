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

/// An upgrade to "the first release that fixes" an advisory: the agent names the release from
/// memory (no tool output gives it) in its message before the install, or reads it from the
/// advisory it fetched first.
fn upgrade_run(advisory: Option<&str>) -> Trajectory {
    upgrade_run_saying(advisory, "CVE-2024-37891 was fixed in urllib3 2.2.2, so I'll install that release.")
}

/// [`upgrade_run`] whose message before the install says `claim`.
fn upgrade_run_saying(advisory: Option<&str>, claim: &str) -> Trajectory {
    let mut m = vec![
        crate::chat::system("You are a coding assistant with a shell."),
        user(
            "Our scanner flags CVE-2024-37891 in urllib3. Upgrade urllib3 to the first release that fixes it, \
             and tell me which one you installed.",
        ),
    ];
    m.extend(call(
        "c1",
        "run_shell",
        json!({"cmd": "pip show urllib3"}),
        "Name: urllib3\nVersion: 2.0.7\nLocation: /srv/app/.venv/lib/python3.11/site-packages",
    ));
    if let Some(text) = advisory {
        m.extend(call("c2", "fetch_url", json!({"url": "https://osv.dev/vulnerability/GHSA-34jh-p97f-mpxf"}), text));
    }
    m.push(json!({"role": "assistant", "content": claim,
        "tool_calls": [{"id": "c3", "type": "function", "function": {"name": "run_shell",
            "arguments": json!({"cmd": "pip install urllib3==2.2.2"}).to_string()}}]}));
    m.push(json!({"role": "tool", "tool_call_id": "c3", "content": "Successfully installed urllib3-2.2.2"}));
    m.push(assistant("Done: urllib3 2.2.2 is installed, the first release that fixes CVE-2024-37891."));
    load(m)
}

#[test]
fn a_fixed_release_stated_from_memory_is_unsourced_and_one_read_from_the_advisory_is_not() {
    let t = upgrade_run(None);
    let i = t.steps.iter().position(|s| s.content.starts_with("CVE-2024-37891 was fixed")).expect("the claim");
    assert_eq!(
        unsourced(&t, i),
        ["states \"CVE-2024-37891 was fixed in urllib3 2.2.2, so I'll install that release.\" from memory: no tool \
          output, page or user turn before it gives 2.2.2"]
    );
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.category), (Some(i), ErrorCategory::Hallucination), "{}", d.reason);
    // The advisory the agent fetched names the fixed releases: the same sentence is sourced.
    let t = upgrade_run(Some(
        "GHSA-34jh-p97f-mpxf: urllib3's Proxy-Authorization header is not stripped during \
        cross-origin redirects. Affected: >= 2.0.0, < 2.2.2; < 1.26.19. Fixed in 2.2.2 and 1.26.19.",
    ));
    let i = t.steps.iter().position(|s| s.content.starts_with("CVE-2024-37891 was fixed")).expect("the claim");
    assert_eq!(unsourced(&t, i), Vec::<String>::new());
    assert_eq!(falat(&t).decisive_step, None);
    // Told the other way round, the remembered release is found the same; a duration after
    // "fixed in" is no release.
    let t = upgrade_run_saying(None, "urllib3 2.2.2 is the first release with the fix for CVE-2024-37891.");
    assert_eq!(unsourced(&t, 4).len(), 1, "{:?}", t.steps[4].content);
    let t = upgrade_run_saying(
        None,
        "The CVE-2024-37891 bug was fixed in 1.5 days upstream; installing the fixed urllib3.",
    );
    assert_eq!(unsourced(&t, 4), ["states 1.5 with no earlier source"], "a figure, not a release from memory");
}

#[test]
fn a_release_told_from_memory_and_pinned_later_is_the_decisive_step() {
    // The agent lists the wheelhouse (1.26.16, 1.26.18, 1.26.20), says from memory that 1.26.17
    // fixed the advisory, pins it with a later call, and the install fails. The remembered
    // release flows to the pin and the answer as one value (not as the number 1.26, which every
    // wheel's name also spells), so its message is no dead end.
    let mut m = vec![
        crate::chat::system("You are a coding assistant with a shell."),
        user(
            "Our scanner flags urllib3 1.26.18 for CVE-2024-37891. We must stay on 1.26.x. Pin urllib3 in \
             requirements.txt to the first 1.26.x release that fixes it and check that it installs from the wheelhouse.",
        ),
    ];
    m.extend(call("c1", "run_shell", json!({"cmd": "grep urllib3 requirements.txt"}), "urllib3==1.26.18"));
    m.extend(call(
        "c2",
        "run_shell",
        json!({"cmd": "ls wheels/ | grep urllib3"}),
        "urllib3-1.26.16-py2.py3-none-any.whl\nurllib3-1.26.18-py2.py3-none-any.whl\nurllib3-1.26.20-py2.py3-none-any.whl",
    ));
    m.push(assistant(
        "The wheelhouse has 1.26.16, 1.26.18 and 1.26.20. I know this CVE: it was fixed in urllib3 1.26.17 on the \
         1.26 line, so that is the first fixed release.",
    ));
    m.extend(call(
        "c3",
        "run_shell",
        json!({"cmd": "sed -i 's/urllib3==1.26.18/urllib3==1.26.17/' requirements.txt"}),
        "",
    ));
    m.extend(call(
        "c4",
        "run_shell",
        json!({"cmd": "pip install --no-index --find-links wheels -r requirements.txt"}),
        "ERROR: Could not find a version that satisfies the requirement urllib3==1.26.17 (from versions: 1.26.16, \
         1.26.18, 1.26.20)\nERROR: No matching distribution found for urllib3==1.26.17",
    ));
    m.push(assistant("Pinned urllib3 to 1.26.17, the first 1.26.x release that fixes CVE-2024-37891."));
    let t = load(m);
    assert_eq!(unsourced(&t, 6).len(), 1, "{:?}", unsourced(&t, 6));
    let d = falat(&t);
    assert_eq!((d.decisive_step, d.category), (Some(6), ErrorCategory::Hallucination), "{}", d.reason);
}
