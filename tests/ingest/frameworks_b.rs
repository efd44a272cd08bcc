//! Loaders of agent frameworks and coding agents, set B (SWE-agent, mini-SWE-agent, OpenHands,
//! smolagents, pydantic-ai, Strands, Claude Code inline sidechains), on the fixtures of
//! `tests/fixtures/frameworks-b/` (see its README): exact steps, kinds, agents, links, error
//! flags, task and output; detection picks each format and no other, and a file that matches a
//! format only in part is refused with the closest format and what it lacks.

use std::path::PathBuf;

use falat::ingest::fs::load_path;
use falat::ingest::{self, Loaded, SUPPORTED, matches, parse, parse_document};
use falat::model::{Link, LinkKind, SourceFormat, StepKind, Trajectory};

use StepKind::{Delegation, Message, Thought, ToolCall, ToolResult};

use super::support::{errors, links, shape};

fn fixture(name: &str) -> PathBuf {
    super::support::fixture_in("frameworks-b", name)
}

fn load(name: &str) -> Loaded {
    super::support::load_fixture("frameworks-b", name)
}

/// The single trajectory of a fixture, checking the detected format and that nothing was skipped.
fn one(name: &str, format: SourceFormat) -> Trajectory {
    super::support::one_in("frameworks-b", name, format, true)
}

fn tools(t: &Trajectory) -> Vec<Option<&str>> {
    t.steps.iter().filter(|s| s.kind == ToolCall).map(|s| s.tool_name.as_deref()).collect()
}

const R: LinkKind = LinkKind::ToolResult;
const D: LinkKind = LinkKind::Delegation;

// ----- SWE-agent -----

#[test]
fn swe_agent_traj_reads_history_once_with_calls_linked_by_id_and_the_failed_edit_flagged() {
    let t = one("32-swe-agent-traj.traj", SourceFormat::SweAgent);
    let m = "main";
    assert_eq!(
        shape(&t),
        vec![
            ("user", Message),
            (m, Thought),
            (m, ToolCall),
            (m, ToolResult),
            (m, Thought),
            (m, ToolCall),
            (m, ToolResult),
            (m, Thought),
            (m, ToolCall),
            (m, ToolResult),
            (m, Thought),
            (m, ToolCall),
            (m, ToolResult),
            (m, ToolCall),
            (m, ToolResult),
        ]
    );
    assert_eq!(
        tools(&t),
        vec![Some("str_replace_editor"), Some("bash"), Some("str_replace_editor"), Some("submit"), Some("submit")]
    );
    // Each call answered by the tool message naming its id; trajectory[] adds nothing.
    assert_eq!(links(&t), vec![(2, 3, R), (5, 6, R), (8, 9, R), (11, 12, R), (13, 14, R)]);
    assert_eq!(t.steps[8].ids.refs, vec!["toolu_01Pn4XdL7zVg3RsW1oHcJ9bF".to_string()]);
    assert_eq!(t.steps[9].ids.refs, t.steps[8].ids.refs);
    // The failed edit is kept and flagged.
    assert_eq!(errors(&t), vec![9]);
    assert!(t.steps[9].content.starts_with("No replacement was performed, old_str"), "{}", t.steps[9].content);
    assert!(t.steps[8].content.starts_with("str_replace_editor str_replace /testbed/src/humanize/filesize.py"));
    // The task is the issue text, not the whole instance template.
    assert!(t.task.starts_with("naturalsize() ignores the sign of negative values"), "{}", t.task);
    assert!(!t.task.contains("<uploaded_files>"));
    assert_eq!(t.observed_output, None, "the submission is empty");
    assert_eq!(
        t.agent_role("main"),
        Some("You are a helpful assistant that can interact with a computer to solve tasks.")
    );
    assert!(t.metadata.contains(&("exit_status".into(), "submitted".into())));
}

#[test]
fn swe_agent_without_function_calls_answers_actions_by_order_and_leaves_out_the_demonstration() {
    let loaded = load("swe-agent-thought-action.traj");
    assert_eq!(loaded.format, SourceFormat::SweAgent);
    assert_eq!(loaded.skipped().not_steps, 1, "the demonstration message");
    let t = &loaded.trajectories[0];
    assert_eq!(
        shape(t),
        vec![
            ("user", Message),
            ("main", Thought),
            ("main", ToolCall),
            ("main", ToolResult),
            ("main", Thought),
            ("main", ToolCall),
            ("main", ToolResult),
            ("main", Thought),
            ("main", ToolCall),
            ("main", ToolResult),
        ]
    );
    assert_eq!(tools(t), vec![Some("python"), Some("open"), Some("submit")]);
    assert_eq!(links(t), vec![(2, 3, R), (5, 6, R), (8, 9, R)]);
    assert_eq!(errors(t), vec![3], "Exit code: 2");
    assert!(!t.steps.iter().any(|s| s.content.contains("[demonstration]")));
    assert_eq!(t.steps[2].content.trim(), "python reproduce.py");
    assert_eq!(t.steps[6].content.lines().next(), Some("[File: /testbed/src/slug.py (12 lines total)]"));
    assert_eq!(t.task, "slugify() drops digits at the end of a title");
    assert!(t.observed_output.as_deref().unwrap().contains("+    return re.sub(r'[^a-z0-9]+'"));
}

// ----- mini-SWE-agent -----

#[test]
fn mini_swe_agent_bash_blocks_are_calls_answered_by_the_next_observation() {
    let t = one("mini-swe-agent.traj.json", SourceFormat::MiniSweAgent);
    let a = "mini-swe-agent";
    assert_eq!(
        shape(&t),
        vec![
            ("user", Message),
            (a, Thought),
            (a, ToolCall),
            (a, ToolResult),
            (a, Thought),
            (a, ToolCall),
            (a, ToolResult),
            (a, Thought),
            ("user", Message),
            (a, Thought),
            (a, ToolCall),
            (a, ToolResult),
        ]
    );
    assert_eq!(links(&t), vec![(2, 3, R), (5, 6, R), (10, 11, R)]);
    assert_eq!(t.steps[2].content, "grep -rn \"def parse_duration\" src/");
    assert_eq!(t.steps[1].content, "Let me find the parser first.");
    // returncode 1, then the format-error template after a turn without an action.
    assert_eq!(errors(&t), vec![6, 8]);
    assert!(t.steps[8].content.starts_with("Please always provide EXACTLY ONE action"));
    assert_eq!(t.task, "parse_duration('1h30m') returns 90 seconds instead of 5400");
    assert!(t.observed_output.as_deref().unwrap().ends_with("+UNITS = {\"h\": 3600, \"m\": 60, \"s\": 1}"));
    assert!(t.agent_role(a).unwrap().starts_with("You are a helpful assistant"));
    assert!(t.metadata.contains(&("mini_version".into(), "1.9.0".into())));
}

#[test]
fn mini_swe_agent_timeout_and_long_output_templates_with_content_parts() {
    let t = one("mini-swe-agent-timeout-content-parts.traj.json", SourceFormat::MiniSweAgent);
    let a = "mini-swe-agent";
    assert_eq!(
        shape(&t),
        vec![
            ("user", Message),
            (a, Thought),
            (a, ToolCall),
            (a, ToolResult),
            (a, Thought),
            (a, ToolCall),
            (a, ToolResult),
            (a, Thought),
            (a, ToolCall),
            (a, ToolResult),
        ]
    );
    assert_eq!(links(&t), vec![(2, 3, R), (5, 6, R), (8, 9, R)]);
    assert_eq!(errors(&t), vec![3], "the timeout template; the long output's returncode is 0");
    assert!(t.steps[6].content.contains("<output_head>\n12:    while pos < len(line):"));
    assert_eq!(t.task, "The CSV export hangs on files with a trailing comma.");
    // The submission is empty and nothing follows the submit marker: no answer.
    assert_eq!(t.observed_output, None);
}

#[test]
fn mini_swe_agent_format_error_answers_every_block_of_its_turn_and_later_turns_stay_paired() {
    // A turn with two bash blocks is refused by the format-error template (none ran); the turns
    // after it keep their own observations.
    let turn = |text: &str| serde_json::json!({"role": "assistant", "content": text});
    let obs = |text: &str| serde_json::json!({"role": "user", "content": text});
    let doc = serde_json::json!({
        "trajectory_format": "mini-swe-agent-1",
        "info": {"exit_status": "Submitted", "submission": ""},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
            obs("<pr_description>\nThe timeout variable is ignored.\n</pr_description>"),
            turn("THOUGHT: two at once.\n\n```bash\ngrep -n from_env tests/test_client.py\n```\n\n```bash\ngrep -rn TIMEOUT_MS src\n```"),
            obs("Please always provide EXACTLY ONE action in triple backticks, found 2 actions."),
            turn("THOUGHT: one at a time.\n\n```bash\ngrep -n from_env tests/test_client.py\n```"),
            obs("<returncode>0</returncode>\n<output>\n41:def test_from_env_timeout_ms():\n</output>"),
            turn("THOUGHT: now the source.\n\n```bash\ncat -n src/httpkit/client.py\n```"),
            obs("<returncode>0</returncode>\n<output>\n1\timport os\n</output>"),
        ]
    });
    let loaded = parse("m.traj.json", doc.to_string().as_bytes(), None).unwrap();
    assert_eq!(loaded.format, SourceFormat::MiniSweAgent);
    let t = &loaded.trajectories[0];
    let a = "mini-swe-agent";
    assert_eq!(
        shape(t),
        vec![
            ("user", Message),
            (a, Thought),
            (a, ToolCall),
            (a, ToolCall),
            (a, ToolResult),
            (a, Thought),
            (a, ToolCall),
            (a, ToolResult),
            (a, Thought),
            (a, ToolCall),
            (a, ToolResult),
        ]
    );
    assert_eq!(links(t), vec![(2, 4, R), (3, 4, R), (6, 7, R), (9, 10, R)]);
    assert_eq!(errors(t), vec![4]);
}

// ----- OpenHands -----

#[test]
fn openhands_calls_link_to_observations_by_cause_and_failed_runs_are_flagged() {
    let loaded = load("33-openhands-trajectory-events.json");
    assert_eq!(loaded.format, SourceFormat::OpenHands);
    assert_eq!(loaded.skipped().not_steps, 2, "two agent_state_changed records");
    let t = &loaded.trajectories[0];
    let a = "CodeActAgent";
    assert_eq!(
        shape(t),
        vec![
            ("user", Message),
            (a, Thought),
            (a, ToolCall),
            (a, ToolResult),
            (a, Thought),
            (a, ToolCall),
            (a, ToolResult),
            (a, Thought),
            (a, ToolCall),
            (a, ToolResult),
            (a, Message),
        ]
    );
    assert_eq!(tools(t), vec![Some("execute_bash"), Some("str_replace_editor"), Some("execute_bash")]);
    assert_eq!(links(t), vec![(2, 3, R), (5, 6, R), (8, 9, R)]);
    assert_eq!(t.steps[3].ids.parent.as_deref(), Some("3"), "the observation's cause");
    assert_eq!(errors(t), vec![3, 9], "both runs exited with code 1");
    assert_eq!(t.steps[2].content, "cd /workspace/billing && python -m pytest tests/test_invoice.py -q");
    let finish = "I fixed Invoice.total() to apply the discount. test_total_with_discount passes and the whole test suite passes.";
    assert_eq!(t.steps[10].content, finish);
    assert_eq!(t.observed_output.as_deref(), Some(finish));
    assert!(t.task.starts_with("CI fails on tests/test_invoice.py::test_total_with_discount."));
    assert!(t.agent_role(a).unwrap().starts_with("You are OpenHands agent"));
}

#[test]
fn openhands_evaluation_record_reads_its_history_with_delegation_and_error_observation() {
    let t = one("openhands-eval-output-record.json", SourceFormat::OpenHands);
    let a = "CodeActAgent";
    assert_eq!(
        shape(&t),
        vec![
            ("user", Message),
            (a, Thought),
            (a, ToolCall),
            (a, ToolResult),
            (a, Thought),
            (a, Delegation),
            (a, ToolResult),
            (a, ToolCall),
            (a, ToolResult),
            (a, Message),
            (a, Thought),
            (a, Message),
        ]
    );
    assert_eq!(t.steps[5].delegate_to.as_deref(), Some("BrowsingAgent"));
    assert_eq!(links(&t), vec![(2, 3, R), (5, 6, D), (7, 8, R)]);
    // exit code 2 with success false; the error observation.
    assert_eq!(errors(&t), vec![8, 9]);
    assert_eq!(t.steps[9].content, "AgentStuckInLoopError: Agent got stuck in a loop");
    assert_eq!(t.steps[2].content, "import pandas as pd\ndf = pd.read_csv('data/sale.csv')\n(df.amount < 0).sum()");
    assert_eq!(t.observed_output.as_deref(), Some("There are 0 rows with a negative amount."));
    assert_eq!(t.task, "How many rows of data/sales.csv have a negative amount?");
}

#[test]
fn openhands_output_jsonl_is_one_trajectory_per_record_and_a_bad_line_is_named() {
    // An evaluation's `output.jsonl`: the fixture record twice (two instance ids), a line that is
    // not a record between them, one that is not JSON after them.
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("openhands-eval-output-record.json")).unwrap()).unwrap();
    let mut second = record.clone();
    second["instance_id"] = "pandas-dev__pandas-2".into();
    let text = format!("{}\n{{\"instance_id\": \"x\", \"history\": 3}}\n{}\n{{\"instance_id\": \n", record, second);
    let loaded = parse("output.jsonl", text.as_bytes(), None).unwrap();
    assert_eq!(loaded.format, SourceFormat::OpenHands);
    let single = one("openhands-eval-output-record.json", SourceFormat::OpenHands);
    let ids: Vec<&str> = loaded.trajectories.iter().map(|t| t.id.as_str()).collect();
    let first = format!("output#{}", record["instance_id"].as_str().unwrap());
    assert_eq!(ids, [first.as_str(), "output#pandas-dev__pandas-2"]);
    for t in &loaded.trajectories {
        assert_eq!(shape(t), shape(&single));
        assert_eq!(links(t), links(&single));
        assert_eq!(errors(t), errors(&single));
        assert_eq!(t.task, single.task);
    }
    let msgs: Vec<String> = loaded.diagnostics.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        msgs,
        [
            "line 2: skipped: expected an evaluation record {instance_id, history: [events]}",
            "line 4: skipped: not JSON at column 16: the text ends where a value should follow (the file may be cut short)",
        ]
    );
}

// ----- smolagents -----

#[test]
fn smolagents_memory_steps_map_to_plan_calls_and_results_without_the_model_inputs() {
    let t = one("smolagents-memory-full-steps.json", SourceFormat::Smolagents);
    assert_eq!(
        shape(&t),
        vec![
            ("user", Message),
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
        ]
    );
    assert_eq!(tools(&t), vec![Some("web_search"), Some("calculator"), Some("final_answer")]);
    assert_eq!(links(&t), vec![(3, 4, R), (6, 7, R), (9, 10, R)]);
    assert_eq!(t.steps[3].ids.refs, vec!["call_k1".to_string()]);
    assert_eq!(errors(&t), vec![7]);
    assert!(t.steps[7].content.starts_with("[error] AgentToolExecutionError: Error executing tool 'calculator'"));
    assert!(t.steps[1].content.starts_with("## Facts survey"), "the plan");
    assert!(!t.steps.iter().any(|s| s.content.contains("New task:")), "model inputs are context");
    assert_eq!(t.task, "What is the population of the capital of Australia, divided by 1000?");
    assert_eq!(t.observed_output.as_deref(), Some("5231.15"));
    assert_eq!(t.steps[3].tokens.map(|k| (k.input, k.output)), None);
    assert_eq!(t.steps[2].tokens.map(|k| (k.input, k.output)), Some((1200, 30)));
    assert_eq!(t.agent_role("agent"), Some("You are an expert assistant who can solve any task using tool calls."));
}

#[test]
fn smolagents_wrapped_code_agent_dump_names_its_agent_and_flags_the_failed_code() {
    let t = one("smolagents-codeagent-wrapped.json", SourceFormat::Smolagents);
    let a = "data_analyst";
    assert_eq!(
        shape(&t),
        vec![
            ("user", Message),
            (a, Thought),
            (a, ToolCall),
            (a, ToolResult),
            (a, Thought),
            (a, ToolCall),
            (a, ToolResult)
        ]
    );
    assert_eq!(tools(&t), vec![Some("python_interpreter"), Some("python_interpreter")]);
    assert_eq!(links(&t), vec![(2, 3, R), (5, 6, R)]);
    assert_eq!(errors(&t), vec![3]);
    assert!(t.steps[3].content.ends_with("InterpreterError: The variable `reslt` is not defined."));
    assert_eq!(t.steps[5].content, "final_answer(2**10)");
    assert_eq!(t.observed_output.as_deref(), Some("1024"));
    assert_eq!(t.steps[1].tokens.map(|k| (k.input, k.output)), Some((400, 40)));
}

// ----- pydantic-ai -----

#[test]
fn pydantic_ai_events_attribute_gives_each_call_and_answer_once() {
    let t = one("36-pydantic-ai-logfire-events-attribute.otlp.json", SourceFormat::PydanticAi);
    let a = "trip_weather";
    assert_eq!(
        shape(&t),
        vec![
            ("user", Delegation),
            ("user", Message),
            (a, ToolCall),
            (a, ToolResult),
            (a, ToolCall),
            (a, ToolResult),
            (a, Message)
        ]
    );
    assert_eq!(t.steps[0].delegate_to.as_deref(), Some(a));
    assert_eq!(links(&t), vec![(0, 2, D), (2, 3, R), (4, 5, R)]);
    assert_eq!(t.steps[2].ids.refs, vec!["call_W7nQ2bLx9Rk4Tz1VpY8cMs3e".to_string()]);
    assert_eq!(t.steps[4].content, r#"{"city":"Porto, PT","date":"2025-07-13"}"#);
    // The retry prompt is the failed call's result, once.
    assert_eq!(errors(&t), vec![3]);
    assert_eq!(t.steps.iter().filter(|s| s.content.contains("Fix the errors and try again.")).count(), 1);
    let answer = "No umbrella needed: Porto will be dry and sunny tomorrow.";
    assert_eq!(t.steps.iter().filter(|s| s.content == answer).count(), 1);
    assert_eq!(t.observed_output.as_deref(), Some(answer));
    assert_eq!(t.task, "I'm flying to Porto tomorrow (2025-07-13). Do I need to pack an umbrella?");
    assert!(t.agent_role(a).unwrap().starts_with("You plan packing lists."));
    assert_eq!(t.steps[2].tokens.map(|k| (k.input, k.output)), Some((181, 24)));
}

#[test]
fn pydantic_ai_semconv_messages_and_all_messages_are_not_doubled() {
    let t = one("pydantic-ai-v2-gen-ai-messages.otlp.json", SourceFormat::PydanticAi);
    let a = "invoice_bot";
    assert_eq!(shape(&t), vec![("user", Delegation), ("user", Message), (a, ToolCall), (a, ToolResult), (a, Message)]);
    assert_eq!(links(&t), vec![(0, 2, D), (2, 3, R)]);
    assert_eq!(t.steps[3].content, "1250.00");
    assert_eq!(errors(&t), Vec::<usize>::new());
    assert_eq!(t.observed_output.as_deref(), Some("17% of 1250.00 is 21.25."));
    assert_eq!(t.task, "What is 17% of the invoice INV-204 total?");
}

// ----- Strands -----

#[test]
fn strands_bedrock_blocks_are_decoded_and_tool_use_linked_by_id() {
    let t = one("strands-agent-tool-error.otlp.json", SourceFormat::Strands);
    let a = "travel_agent";
    assert_eq!(
        shape(&t),
        vec![
            ("user", Delegation),
            (a, Message),
            (a, ToolCall),
            (a, ToolResult),
            (a, ToolCall),
            (a, ToolResult),
            (a, Message)
        ]
    );
    assert_eq!(tools(&t), vec![Some("search_flights"), Some("book_flight")]);
    assert_eq!(links(&t), vec![(0, 1, D), (2, 3, R), (4, 5, R)]);
    assert_eq!(t.steps[2].ids.refs, vec!["tooluse_S1".to_string()]);
    assert_eq!(t.steps[2].content, r#"{"date":"2025-10-03","direct":true,"from":"LIS","to":"OSL"}"#);
    assert_eq!(t.steps[3].content, r#"{"flights":[{"id":"TP1234","price":189},{"id":"SK5678","price":142}]}"#);
    assert_eq!(t.steps[5].content, "Payment declined: card expired");
    assert_eq!(errors(&t), vec![5], "status: error");
    assert!(!t.steps.iter().any(|s| s.content.contains("toolUse") || s.content.contains("toolResult")));
    let answer = "I could not book TP1234: the payment was declined (card expired).";
    assert_eq!(t.steps.iter().filter(|s| s.content == answer).count(), 1);
    assert_eq!(t.observed_output.as_deref(), Some(answer));
    assert_eq!(t.task, "Book the cheapest direct flight from Lisbon to Oslo on 2025-10-03.");
}

#[test]
fn strands_agent_as_tool_with_reasoning_and_an_image_prompt() {
    let t = one("strands-agent-as-tool-reasoning-image.otlp.json", SourceFormat::Strands);
    let (r, fx) = ("receipt_agent", "fx_agent");
    assert_eq!(
        shape(&t),
        vec![
            ("user", Delegation),
            (r, Thought),
            (r, ToolCall),
            (r, Delegation),
            (fx, Message),
            (r, ToolResult),
            (r, Message),
        ]
    );
    assert_eq!(t.steps[1].content, "The receipt is in USD; I need the rate.", "reasoningContent");
    assert_eq!(t.steps[2].tool_name.as_deref(), Some("fx_agent"));
    assert_eq!(t.steps[3].delegate_to.as_deref(), Some(fx));
    // The tool's result comes after the agent it ran: the tool returns when the agent answers.
    assert_eq!(links(&t), vec![(0, 1, D), (2, 5, R), (3, 4, D)]);
    assert_eq!(t.steps[0].content, "What does this receipt total, in EUR?\n\n[image png]");
    assert_eq!(t.task, "What does this receipt total, in EUR?\n\n[image png]");
    assert_eq!(errors(&t), Vec::<usize>::new());
    assert_eq!(t.observed_output.as_deref(), Some("The receipt totals 45.50 EUR."));
    assert_eq!(
        t.steps.iter().filter(|s| s.content == "1 USD = 0.91 EUR").count(),
        2,
        "the tool's result and the agent's answer"
    );
}

// ----- Claude Code inline sidechains -----

#[test]
fn claude_code_inline_sidechains_follow_their_task_call_as_the_sub_agent() {
    let t = one("claude-code-inline-sidechains.jsonl", SourceFormat::ClaudeCode);
    let (c, g, r) = ("claude", "general-purpose", "test-runner");
    assert_eq!(
        shape(&t),
        vec![
            ("user", Message),
            (c, Message),
            (c, Delegation),
            (g, ToolCall),
            (g, ToolResult),
            (g, Message),
            (c, ToolResult),
            (c, Delegation),
            (r, ToolCall),
            (r, ToolResult),
            (r, Message),
            (c, ToolResult),
            (c, Message),
        ]
    );
    assert_eq!(
        links(&t),
        vec![(2, 3, D), (2, 6, R), (3, 4, R), (5, 6, D), (7, 8, D), (7, 11, R), (8, 9, R), (10, 11, D)],
        "the first chain (root parent null) by its prompt, the second by its parent line; each chain's \
         report (5, 10) handed back to its Task call's result (6, 11)"
    );
    assert!(t.links.contains(&Link { from: 2, to: 3, kind: LinkKind::Parent }));
    assert!(t.links.contains(&Link { from: 2, to: 6, kind: LinkKind::Parent }), "the main chain goes on");
    assert_eq!(errors(&t), vec![9]);
    assert!(!t.steps.iter().any(|s| s.content.starts_with("Find every call site") && s.kind == Message));
    assert_eq!(t.agent_names(), vec!["user", c, g, r]);
}

// ----- detection -----

/// Every fixture, with the format it is.
const FIXTURES: [(&str, SourceFormat); 13] = [
    ("32-swe-agent-traj.traj", SourceFormat::SweAgent),
    ("swe-agent-thought-action.traj", SourceFormat::SweAgent),
    ("mini-swe-agent.traj.json", SourceFormat::MiniSweAgent),
    ("mini-swe-agent-timeout-content-parts.traj.json", SourceFormat::MiniSweAgent),
    ("33-openhands-trajectory-events.json", SourceFormat::OpenHands),
    ("openhands-eval-output-record.json", SourceFormat::OpenHands),
    ("smolagents-memory-full-steps.json", SourceFormat::Smolagents),
    ("smolagents-codeagent-wrapped.json", SourceFormat::Smolagents),
    ("36-pydantic-ai-logfire-events-attribute.otlp.json", SourceFormat::PydanticAi),
    ("pydantic-ai-v2-gen-ai-messages.otlp.json", SourceFormat::PydanticAi),
    ("strands-agent-tool-error.otlp.json", SourceFormat::Strands),
    ("strands-agent-as-tool-reasoning-image.otlp.json", SourceFormat::Strands),
    ("claude-code-inline-sidechains.jsonl", SourceFormat::ClaudeCode),
];

#[test]
fn each_fixture_is_detected_as_its_format_and_no_other() {
    for (name, format) in &FIXTURES {
        let bytes = std::fs::read(fixture(name)).unwrap();
        let doc = parse_document(name, &bytes).unwrap();
        let matched: Vec<SourceFormat> = SUPPORTED.into_iter().filter(|f| matches(&doc, *f)).collect();
        assert_eq!(matched, vec![*format], "{name}");
    }
}

#[test]
fn the_former_mis_detections_are_right() {
    let swe = parse_document("t.traj", &std::fs::read(fixture("32-swe-agent-traj.traj")).unwrap()).unwrap();
    assert_eq!(ingest::detect(&swe), Some(SourceFormat::SweAgent));
    assert!(!matches(&swe, SourceFormat::WhoWhenHand) && !matches(&swe, SourceFormat::WhoWhenAlgorithm));
    let mini = parse_document("m.json", &std::fs::read(fixture("mini-swe-agent.traj.json")).unwrap()).unwrap();
    assert_eq!(ingest::detect(&mini), Some(SourceFormat::MiniSweAgent));
    assert!(!matches(&mini, SourceFormat::OpenAiChat));
    // The same messages without mini-SWE-agent's keys are an OpenAI chat.
    let bare = std::fs::read_to_string(fixture("mini-swe-agent.traj.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&bare).unwrap();
    let messages = v["messages"].take();
    let chat = parse("chat.json", serde_json::json!({ "messages": messages }).to_string().as_bytes(), None).unwrap();
    assert_eq!(chat.format, SourceFormat::OpenAiChat);
}

#[test]
fn a_file_matching_a_format_in_part_is_refused_naming_the_closest_and_what_it_lacks() {
    let path = fixture("partial-swe-agent-no-trajectory.json");
    let err = load_path(&path, None).unwrap_err().to_string();
    assert!(
        err.ends_with(
            "found an object with keys [history, info]; the closest format is swe-agent (has \"history\", \"info\"; missing \"trajectory\")"
        ),
        "{err}"
    );
    // A history alone is neither Who&When nor SWE-agent: both are named.
    let e = parse("h.json", br#"{"history": [{"role": "user", "content": "hi"}]}"#, None).unwrap_err().to_string();
    assert!(
        e.ends_with(
            "the closest formats are who-and-when (has \"history\"; missing one of \"question\", \"ground_truth\", \"mistake_agent\", \"mistake_step\", \"mistake_reason\", \"system_prompt\", \"is_correct\", \"is_corrected\", \"question_ID\", \"level\") and swe-agent (has \"history\"; missing \"trajectory\", \"info\")"
        ),
        "{e}"
    );
    // Another tool's trajectory_format is not mini-SWE-agent, and not an OpenAI chat either.
    let other = br#"{"trajectory_format": "other-agent-2", "messages": [{"role": "user", "content": "x"}]}"#;
    let e = parse("o.json", other, None).unwrap_err().to_string();
    assert!(
        e.ends_with(
            "the closest format is mini-swe-agent (has \"trajectory_format\", \"messages\"; a value of the wrong type)"
        ),
        "{e}"
    );
    // --trace-format forces it.
    let forced = load_path(&path, Some(SourceFormat::SweAgent)).unwrap();
    assert_eq!(shape(&forced.trajectories[0]), vec![("user", Message)]);
    assert_eq!(forced.trajectories[0].task, "fix it");
}

#[test]
fn every_new_format_has_a_trace_format_name() {
    for (name, f) in [
        ("swe-agent", SourceFormat::SweAgent),
        ("mini-swe-agent", SourceFormat::MiniSweAgent),
        ("openhands", SourceFormat::OpenHands),
        ("smolagents", SourceFormat::Smolagents),
        ("pydantic-ai", SourceFormat::PydanticAi),
        ("strands", SourceFormat::Strands),
    ] {
        assert_eq!(ingest::FormatChoice::parse(name), Ok(ingest::FormatChoice::Force(f)));
        assert!(SUPPORTED.contains(&f));
    }
}
