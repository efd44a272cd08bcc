//! One file per agent framework in a variant of its export that the other fixtures do not cover
//! (`tests/fixtures/sweep/`, see its README): each loads to the exact steps (kinds, agents),
//! tools, links and error flags, with its failed tool call flagged, and is claimed by its format
//! and no other.

use falat::ingest::fs::load_path;
use falat::ingest::{SUPPORTED, matches, parse_document};
use falat::model::{LinkKind, SourceFormat, StepKind, Trajectory};

use StepKind::{Delegation, Message, Thought, ToolCall, ToolResult};

use super::support::{errors, links, shape};

const R: LinkKind = LinkKind::ToolResult;
const D: LinkKind = LinkKind::Delegation;

/// The single trajectory of a fixture, checking the detected format and that loading it gave no
/// diagnostic.
fn one(name: &str, format: SourceFormat) -> Trajectory {
    super::support::one_in("sweep", name, format, true)
}

fn tools(t: &Trajectory) -> Vec<&str> {
    t.steps.iter().filter(|s| s.kind == ToolCall).map(|s| s.tool_name.as_deref().unwrap_or("")).collect()
}

const FIXTURES: [(&str, SourceFormat); 9] = [
    ("openai-agents-responses-handoff-list.json", SourceFormat::OpenAiAgents),
    ("langsmith-wrap-openai-traceable-runs.json", SourceFormat::LangSmith),
    ("langfuse-v3-openai-integration-nested-agent.json", SourceFormat::Langfuse),
    ("adk-session-snake-case-agent-tool.json", SourceFormat::GoogleAdk),
    ("pydantic-ai-v3-execute-tool-nested-agent.otlp.json", SourceFormat::PydanticAi),
    ("smolagents-1.10-codeagent-step-key-managed-agent.json", SourceFormat::Smolagents),
    ("mlflow-2-trace-context-span-ids.json", SourceFormat::Mlflow),
    ("autogen-swarm-handoff-message-list.json", SourceFormat::MagenticLog),
    ("openhands-0.59-delegate-browsing-agent-events.json", SourceFormat::OpenHands),
];

#[test]
fn each_sweep_fixture_is_detected_as_its_format_and_no_other() {
    for (name, format) in &FIXTURES {
        let path = super::support::fixture_in("sweep", name);
        let bytes = std::fs::read(&path).unwrap();
        let doc = parse_document(name, &bytes).unwrap();
        let matched: Vec<SourceFormat> = SUPPORTED.into_iter().filter(|f| matches(&doc, *f)).collect();
        assert_eq!(matched, vec![*format], "{name}");
        assert_eq!(load_path(&path, None).unwrap().format, *format, "{name}");
    }
}

#[test]
fn openai_agents_responses_run_hands_off_with_no_generation_holding_the_transfer_call() {
    let t = one("openai-agents-responses-handoff-list.json", SourceFormat::OpenAiAgents);
    let b = "Billing Agent";
    assert_eq!(
        shape(&t),
        vec![
            ("Triage Agent", Delegation),
            ("Billing Agent", ToolCall),
            ("Billing Agent", ToolResult),
            ("Billing Agent", ToolCall),
            ("Billing Agent", ToolResult),
            ("Billing Agent", ToolCall),
            ("Billing Agent", ToolResult),
        ]
    );
    assert_eq!(t.steps[0].delegate_to.as_deref(), Some(b));
    assert_eq!(t.steps[0].tool_name.as_deref(), Some("transfer_to_billing_agent"));
    assert_eq!(tools(&t), ["lookup_invoice", "lookup_invoice", "issue_refund"]);
    assert_eq!(links(&t), [(0, 1, D), (1, 2, R), (3, 4, R), (5, 6, R)]);
    // The non-fatal tool error (the SDK's `failure_error_function` answer) is flagged.
    assert_eq!(errors(&t), [2]);
    assert!(t.steps[2].content.contains("invoice INV-20931 not found in region eu-west"));
    // `response` spans hold only an id: there is no prompt and no answer to read.
    assert_eq!((t.task.as_str(), t.observed_output.as_deref()), ("", None));
}

#[test]
fn langsmith_wrap_openai_runs_read_the_chat_completion_outputs() {
    let t = one("langsmith-wrap-openai-traceable-runs.json", SourceFormat::LangSmith);
    assert_eq!(
        shape(&t),
        vec![
            ("user", Delegation),
            ("support_bot", ToolCall),
            ("support_bot", ToolResult),
            ("support_bot", Message),
            ("support_bot", ToolCall),
            ("support_bot", ToolResult),
            ("support_bot", ToolCall),
            ("support_bot", ToolResult),
            ("support_bot", Message),
        ]
    );
    // The model's calls come from `outputs.choices[0].message.tool_calls`, once each; the
    // `tool` runs answer them by name; no step is the response object as JSON.
    assert_eq!(tools(&t), ["lookup_order", "lookup_order", "open_claim"]);
    assert_eq!(links(&t), [(0, 1, D), (1, 2, R), (4, 5, R), (6, 7, R)]);
    assert!(!t.steps.iter().any(|s| s.content.contains("\"choices\"")));
    assert_eq!(t.steps[3].content, "That id was malformed; retrying with the dash.");
    assert_eq!(errors(&t), [2]);
    assert!(t.steps[2].content.starts_with("OrderNotFound('no order with id KO4471')"));
    // The root's one-text request is the delegation, not repeated as a user message.
    assert_eq!(t.steps[0].content, "Order KO-4471 never arrived. Can you check it and refund me if it is lost?");
    assert_eq!(t.task, t.steps[0].content);
    assert_eq!(super::support::tokens(&t, 1), Some((182, 19)), "usage_metadata of the first call");
    assert!(t.observed_output.as_deref().unwrap().starts_with("Order KO-4471 was marked lost"));
}

#[test]
fn langfuse_v3_observe_and_openai_integration_with_a_sub_agent_inside_a_tool() {
    let t = one("langfuse-v3-openai-integration-nested-agent.json", SourceFormat::Langfuse);
    assert_eq!(
        shape(&t),
        vec![
            ("user", Delegation),
            ("travel_desk", ToolCall),
            ("travel_desk", ToolResult),
            ("travel_desk", ToolCall),
            ("travel_desk", ToolResult),
            ("travel_desk", Message),
            ("travel_desk", ToolCall),
            ("travel_desk", Delegation),
            ("flight_agent", ToolCall),
            ("flight_agent", ToolResult),
            ("flight_agent", Message),
            ("travel_desk", ToolResult),
            ("travel_desk", Message),
        ]
    );
    assert_eq!(tools(&t), ["search_hotels", "search_hotels", "book_flights", "find_flights"]);
    // The flight agent runs inside the `book_flights` tool: the tool's result follows its steps.
    assert_eq!(links(&t), [(0, 1, D), (1, 2, R), (3, 4, R), (6, 11, R), (7, 8, D), (8, 9, R)]);
    assert_eq!(t.steps[7].delegate_to.as_deref(), Some("flight_agent"));
    assert_eq!(errors(&t), [2]);
    assert_eq!(t.steps[2].content, "UnknownCity: no city named 'Oporto' in the catalogue");
    // `@observe` records `{args, kwargs}`: the one argument is the task.
    assert_eq!(
        t.task,
        "Two nights in Porto from 12 December under 120 EUR a night, and a flight from Berlin on the 12th."
    );
}

#[test]
fn adk_snake_case_session_with_parallel_calls_an_agent_tool_and_a_transfer() {
    let t = one("adk-session-snake-case-agent-tool.json", SourceFormat::GoogleAdk);
    assert_eq!(
        shape(&t),
        vec![
            ("user", Message),
            ("coordinator", ToolCall),
            ("coordinator", ToolCall),
            ("coordinator", ToolResult),
            ("coordinator", ToolResult),
            ("coordinator", Message),
            ("coordinator", ToolCall),
            ("coordinator", ToolResult),
            ("coordinator", Delegation),
            ("coordinator", ToolResult),
            ("booking_agent", ToolCall),
            ("booking_agent", ToolResult),
            ("booking_agent", Message),
        ]
    );
    assert_eq!(tools(&t), ["check_disruptions", "find_trains", "status_agent", "reserve_seat"]);
    // Two calls of one event answered by the two responses of the next, by id.
    assert_eq!(links(&t), [(1, 3, R), (2, 4, R), (6, 7, R), (8, 9, R), (8, 10, D), (10, 11, R)]);
    assert_eq!(t.steps[8].delegate_to.as_deref(), Some("booking_agent"));
    assert_eq!(errors(&t), [3], "status: error");
    assert!(t.steps[3].content.contains("disruption feed timed out"));
    assert_eq!(super::support::tokens(&t, 1), Some((903, 61)));
}

#[test]
fn pydantic_ai_v3_execute_tool_spans_and_an_agent_run_inside_a_tool() {
    let t = one("pydantic-ai-v3-execute-tool-nested-agent.otlp.json", SourceFormat::PydanticAi);
    assert_eq!(
        shape(&t),
        vec![
            ("user", Delegation),
            ("user", Message),
            ("offsite_planner", ToolCall),
            ("offsite_planner", ToolResult),
            ("offsite_planner", ToolCall),
            ("offsite_planner", ToolResult),
            ("offsite_planner", Message),
            ("offsite_planner", ToolCall),
            ("offsite_planner", Delegation),
            ("offsite_planner", Message),
            ("catering_agent", ToolCall),
            ("catering_agent", ToolResult),
            ("catering_agent", Message),
            ("offsite_planner", ToolResult),
            ("offsite_planner", Message),
        ]
    );
    assert_eq!(tools(&t), ["find_room", "find_room", "ask_catering_agent", "search_caterers"]);
    assert_eq!(links(&t), [(0, 2, D), (2, 3, R), (4, 5, R), (7, 13, R), (8, 10, D), (10, 11, R)]);
    // The sub-agent's prompt is its caller's request, not the user's words.
    assert_eq!(t.steps[9].content, "Vegetarian lunch for 14 at Zebrastraat Loft, Ghent, 2025-11-20");
    // The ModelRetry answer (`gen_ai.tool.call.result`, ending in the retry prompt) is flagged.
    assert_eq!(errors(&t), [3]);
    assert!(t.steps[3].content.starts_with("Unknown city 'Gent'"));
}

#[test]
fn smolagents_1_10_memory_with_the_step_key_and_the_two_part_plan() {
    let t = one("smolagents-1.10-codeagent-step-key-managed-agent.json", SourceFormat::Smolagents);
    assert_eq!(
        shape(&t),
        vec![
            ("user", Message),
            ("agent", Thought),
            ("agent", Thought),
            ("agent", Thought),
            ("agent", ToolCall),
            ("agent", ToolResult),
            ("agent", Thought),
            ("agent", ToolCall),
            ("agent", ToolResult),
            ("agent", Thought),
            ("agent", ToolCall),
            ("agent", ToolResult),
            ("agent", Thought),
            ("agent", ToolCall),
            ("agent", ToolResult),
        ]
    );
    assert_eq!(tools(&t), ["python_interpreter"; 4]);
    assert_eq!(links(&t), [(4, 5, R), (7, 8, R), (10, 11, R), (13, 14, R)]);
    assert!(t.steps[5].content.contains("Here is the final answer from your managed agent 'web_agent'"));
    assert_eq!(errors(&t), [8]);
    assert!(t.steps[8].content.contains("InterpreterError: The variable `Counter` is not defined."));
    // No `is_final_answer` yet: the last step's `action_output` is the answer.
    assert_eq!(t.observed_output.as_deref(), Some("Tadej Pogacar, 6 stages"));
}

#[test]
fn mlflow_2_trace_with_a_failed_tool_and_an_agent_inside_a_tool() {
    let t = one("mlflow-2-trace-context-span-ids.json", SourceFormat::Mlflow);
    assert_eq!(
        shape(&t),
        vec![
            ("user", Delegation),
            ("warehouse_assistant", ToolCall),
            ("warehouse_assistant", ToolResult),
            ("warehouse_assistant", ToolCall),
            ("warehouse_assistant", ToolResult),
            ("warehouse_assistant", ToolCall),
            ("warehouse_assistant", Delegation),
            ("pricing_agent", ToolCall),
            ("pricing_agent", ToolResult),
            ("pricing_agent", Message),
            ("warehouse_assistant", ToolResult),
            ("warehouse_assistant", Message),
        ]
    );
    assert_eq!(tools(&t), ["get_stock", "get_stock", "ask_pricing_agent", "price_list"]);
    assert_eq!(links(&t), [(0, 1, D), (1, 2, R), (3, 4, R), (5, 10, R), (6, 7, D), (7, 8, R)]);
    assert_eq!(errors(&t), [2]);
    assert_eq!(t.steps[2].content, "KeyError: 'A1180'");
    assert_eq!(t.steps[6].content, "Unit price of A-1180 with a 10% discount?");
    assert_eq!(t.task, "How many units of SKU A-1180 do we have, and what would a 10% discount make the unit price?");
}

#[test]
fn autogen_swarm_message_list_links_the_hand_off_to_the_target() {
    let t = one("autogen-swarm-handoff-message-list.json", SourceFormat::MagenticLog);
    assert_eq!(
        shape(&t),
        vec![
            ("user", Message),
            ("travel_agent", Thought),
            ("travel_agent", ToolCall),
            ("travel_agent", ToolResult),
            ("travel_agent", ToolCall),
            ("travel_agent", ToolResult),
            ("travel_agent", ToolCall),
            ("travel_agent", ToolResult),
            ("travel_agent", Delegation),
            ("refunds_agent", ToolCall),
            ("refunds_agent", ToolResult),
            ("refunds_agent", Message),
        ]
    );
    assert_eq!(tools(&t), ["lookup_booking", "lookup_booking", "transfer_to_refunds_agent", "issue_refund"]);
    assert_eq!(links(&t), [(2, 3, R), (4, 5, R), (6, 7, R), (8, 9, D), (9, 10, R)]);
    assert_eq!(t.steps[8].delegate_to.as_deref(), Some("refunds_agent"));
    assert_eq!(errors(&t), [3], "is_error");
}

#[test]
fn openhands_delegate_steps_are_the_delegate_s_and_its_end_answers_the_delegation() {
    let t = one("openhands-0.59-delegate-browsing-agent-events.json", SourceFormat::OpenHands);
    assert_eq!(
        shape(&t),
        vec![
            ("user", Message),
            ("environment", Message),
            ("CodeActAgent", Thought),
            ("CodeActAgent", ToolCall),
            ("CodeActAgent", ToolResult),
            ("CodeActAgent", Thought),
            ("CodeActAgent", Delegation),
            ("BrowsingAgent", Thought),
            ("BrowsingAgent", ToolCall),
            ("BrowsingAgent", ToolResult),
            ("BrowsingAgent", Message),
            ("CodeActAgent", ToolResult),
            ("CodeActAgent", Thought),
            ("CodeActAgent", ToolCall),
            ("CodeActAgent", ToolResult),
            ("CodeActAgent", ToolCall),
            ("CodeActAgent", ToolResult),
            ("CodeActAgent", Message),
        ]
    );
    assert_eq!(tools(&t), ["execute_bash", "browse_interactive", "str_replace_editor", "execute_bash"]);
    // The delegation (no tool call behind it) reaches the delegate's first step, and the
    // observation without a cause that ends it answers it.
    assert_eq!(links(&t), [(3, 4, R), (6, 7, D), (6, 11, D), (8, 9, R), (13, 14, R), (15, 16, R)]);
    assert_eq!(t.steps[6].delegate_to.as_deref(), Some("BrowsingAgent"));
    assert_eq!(
        t.steps[6].content,
        r#"{"task":"Find in the Django 5.2 release notes what changed for FormMixin.get_form_kwargs."}"#
    );
    assert!(t.steps[10].content.starts_with("Django 5.2: FormMixin.get_form_kwargs() takes no extra"));
    assert_eq!(
        t.agent_role("BrowsingAgent"),
        Some("You are a browsing agent that can navigate web pages to gather information.")
    );
    assert!(t.agent_role("CodeActAgent").unwrap().starts_with("You are OpenHands agent"));
    assert_eq!(errors(&t), [4], "exit code 1");
    // The delegate's finish is not the run's answer; the recall is context, not a call.
    assert!(t.observed_output.as_deref().unwrap().starts_with("Fixed accounts/views.py"));
    assert_eq!(t.steps[1].content, "Added workspace context");
}
