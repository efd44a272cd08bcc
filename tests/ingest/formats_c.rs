//! The shapes of claimed formats that were misread (issue 26): one small real-shaped file per
//! fault (`tests/fixtures/formats-c/`, see its README), with the exact steps, agents, flags and
//! links each must load as.

use falat::model::{LinkKind, SourceFormat, StepKind, Trajectory};

use super::support::{has, links_of as links};
use StepKind::{Delegation, Message, Thought, ToolCall, ToolResult};

fn one(name: &str, format: SourceFormat) -> Trajectory {
    super::support::one_in("formats-c", name, format, false)
}

/// `(agent, kind, content, is_error)` of every step.
fn steps(t: &Trajectory) -> Vec<(&str, StepKind, &str, bool)> {
    t.steps.iter().map(|s| (s.agent.as_str(), s.kind, s.content.as_str(), s.is_error)).collect()
}

#[test]
fn langfuse_event_with_level_error_is_an_error_step_that_keeps_its_payload() {
    let t = one("langfuse-event-level-error.json", SourceFormat::Langfuse);
    assert_eq!(
        steps(&t),
        [
            ("user", Message, "What is the status of order 4417?", false),
            ("assistant", ToolCall, "{\"order_id\": 4417}", false),
            ("assistant", ToolResult, "timeout", false),
            (
                "assistant",
                Message,
                "{\"error\":{\"retries\":3,\"service\":\"orders\",\"status\":503}}\n[error] order service returned 503 after 3 retries",
                true
            ),
            ("assistant", Message, "I could not reach the order service.", false),
        ]
    );
    assert_eq!(links(&t, LinkKind::ToolResult), [(1, 2)]);
}

#[test]
fn langfuse_steps_follow_start_instants_levels_mark_steps_and_events_are_metadata() {
    let t = one("langfuse-levels-events-start-times.json", SourceFormat::Langfuse);
    // Start times written at other precisions and offsets (`…01Z`, `…01.250Z`,
    // `10:15:00.600+01:00`) order by the instant; the two observations starting at the same
    // instant (`…01.250Z`, `…01.250000+00:00`) keep the file's order, as Langfuse's stable sort.
    assert_eq!(
        steps(&t),
        [
            ("user", Message, "How long is the refund window for annual plans?", false),
            ("assistant", Message, "refund window annual plan", false),
            ("assistant", ToolCall, "refund window annual plan", false),
            (
                "assistant",
                ToolResult,
                "[{\"id\":\"kb:refunds#annual\",\"text\":\"Annual plans: full refund within 30 days.\"}]",
                false
            ),
            ("assistant", ToolCall, "{\"filter\":{\"locale\":\"de\"},\"query\":\"refund window annual plan\"}", false),
            ("assistant", ToolResult, "[]\n[warning] 0 documents matched filter {locale: de}", false),
            ("assistant", ToolCall, "1", false),
            ("assistant", ToolResult, "[\"kb:refunds#annual\"]", false),
            (
                "user",
                Message,
                "Context:\n[kb:refunds#annual] Annual plans: full refund within 30 days.\n\nQuestion: How long is the refund window for annual plans?",
                false
            ),
            (
                "assistant",
                Message,
                "Annual plans can be refunded within 30 days of purchase [kb:refunds#annual].",
                false
            ),
            ("assistant", Message, "[warning] citation kb:refunds#annual-v2 not found, dropped", false),
        ]
    );
    let tools: Vec<Option<&str>> = t.steps.iter().map(|s| s.tool_name.as_deref()).collect();
    assert_eq!(
        tools[2..8],
        [
            Some("kb-search"),
            Some("kb-search"),
            Some("kb-search-filtered"),
            Some("kb-search-filtered"),
            Some("rerank"),
            Some("rerank")
        ]
    );
    // WARNING marks the observation's last step with its `statusMessage` (a warning SPAN, which
    // has no step, gets one); DEBUG and DEFAULT mark nothing.
    let warned: Vec<(usize, &str)> =
        t.steps.iter().filter_map(|s| s.warning.as_deref().map(|w| (s.index, w))).collect();
    assert_eq!(
        warned,
        [(5, "0 documents matched filter {locale: de}"), (10, "citation kb:refunds#annual-v2 not found, dropped")]
    );
    // DEFAULT EVENTs are no steps: the trajectory's metadata lists them in start order, and the
    // observed output stays the trace's output.
    let events: Vec<&str> = t.metadata.iter().filter(|(k, _)| k == "event").map(|(_, v)| v.as_str()).collect();
    assert_eq!(
        events,
        ["cache-miss {\"key\":\"qa:refund-window\"}", "response-sent {\"channel\":\"web\",\"latency_ms\":4100}"]
    );
    assert!(t.steps.iter().all(|s| !s.content.contains("latency_ms")));
    assert_eq!(
        t.observed_output.as_deref(),
        Some("Annual plans can be refunded within 30 days of purchase [kb:refunds#annual].")
    );
    assert_eq!(links(&t, LinkKind::ToolResult), [(2, 3), (4, 5), (6, 7)]);
}

#[test]
fn openllmetry_agent_spans_are_agents_with_delegations() {
    let t = one("openllmetry-traceloop-agents.otlp.json", SourceFormat::OtelGenAi);
    assert_eq!(t.agent_names(), ["user", "researcher", "writer"]);
    assert_eq!(t.task, "Plan a day in Lyon for someone who likes museums.");
    assert_eq!(
        t.observed_output.as_deref(),
        Some("Morning at the Musée des Confluences, afternoon at the Musée des Beaux-Arts.")
    );
    assert_eq!(
        steps(&t),
        [
            ("user", Delegation, "{\"city\":\"Lyon\",\"interest\":\"museums\"}", false),
            ("user", Message, "List museums in Lyon.", false),
            ("researcher", ToolCall, "{\"city\": \"Lyon\"}", false),
            ("researcher", ToolResult, "[\"Musée des Confluences\",\"Musée des Beaux-Arts\"]", false),
            ("user", Delegation, "Musée des Confluences; Musée des Beaux-Arts", false),
            ("user", Message, "Write a one-line plan from: Musée des Confluences; Musée des Beaux-Arts", false),
            ("writer", Message, "Morning at the Musée des Confluences, afternoon at the Musée des Beaux-Arts.", false),
        ]
    );
    assert_eq!(t.steps[0].delegate_to.as_deref(), Some("researcher"));
    assert_eq!(t.steps[4].delegate_to.as_deref(), Some("writer"));
    assert_eq!(t.steps[3].tool_name.as_deref(), Some("search_museums"));
    assert_eq!(links(&t, LinkKind::Delegation), [(0, 2), (4, 6)]);
    assert_eq!(links(&t, LinkKind::ToolResult), [(2, 3)]);
    assert_eq!(links(&t, LinkKind::Parent), [(0, 1), (0, 3), (4, 5)]);
}

#[test]
fn otel_genai_tool_message_log_records_are_tool_results_linked_by_id() {
    let t = one("otel-genai-log-records-tool-messages.otlp.json", SourceFormat::OtelGenAi);
    assert_eq!(
        steps(&t),
        [
            ("user", Message, "Is it warmer in Seville or in Oslo right now?", false),
            ("assistant", ToolCall, "{\"city\": \"Seville\"}", false),
            ("assistant", ToolCall, "{\"city\": \"Oslo\"}", false),
            ("assistant", ToolResult, "{\"city\": \"Seville\", \"temp_c\": 31}", false),
            ("assistant", ToolResult, "error: upstream timeout", false),
            ("assistant", Message, "Seville is at 31 °C; I could not get Oslo's temperature.", false),
        ]
    );
    assert_eq!(links(&t, LinkKind::ToolResult), [(1, 3), (2, 4)]);
    assert_eq!(t.steps[3].ids.refs, ["call_w1"]);
    assert_eq!(t.steps[4].tool_name.as_deref(), Some("get_weather"));
    assert_eq!(
        t.agents.iter().find(|a| a.name == "assistant").and_then(|a| a.role.as_deref()),
        Some("You answer weather questions with the get_weather tool.")
    );
}

#[test]
fn codex_mcp_outputs_are_decoded_and_their_failures_flagged() {
    let t = one("codex-mcp-content-array-output.jsonl", SourceFormat::Codex);
    assert_eq!(
        steps(&t),
        [
            ("user", Message, "Run the CI job for the svc repo and tell me whether it passes.", false),
            ("codex", ToolCall, "{\"job\": \"test\"}", false),
            ("codex", ToolResult, "running: make test\nFAIL svc/handlers 0.412s\nexit status 2", true),
            ("codex", ToolCall, "{\"job\": \"test\", \"lines\": 20}", false),
            ("codex", ToolResult, "log not available: job still archiving", true),
            ("codex", ToolCall, "{}", false),
            ("codex", ToolResult, "test, lint, build", false),
            ("codex", Message, "The CI test job passes.", false),
        ]
    );
    assert_eq!(links(&t, LinkKind::ToolResult), [(1, 2), (3, 4), (5, 6)]);
}

#[test]
fn claude_code_blocks_of_one_line_are_chained_in_order() {
    let t = one("claude-code-multi-block-lines.jsonl", SourceFormat::ClaudeCode);
    let kinds: Vec<StepKind> = t.steps.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, [Message, Thought, ToolCall, ToolResult, Message, ToolCall, ToolResult, Message]);
    // One unbroken parent chain from the prompt to the answer, through the thinking + tool_use
    // and text + tool_use lines.
    assert_eq!(links(&t, LinkKind::Parent), [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7)]);
    assert_eq!(links(&t, LinkKind::ToolResult), [(2, 3), (5, 6)]);
    assert!(t.steps[3].is_error);
    assert!(has(&t, 1, 2, LinkKind::Parent) && has(&t, 4, 5, LinkKind::Parent));
}

#[test]
fn openai_audio_replies_say_their_transcript() {
    let t = one("openai-chat-audio-transcript.json", SourceFormat::OpenAiChat);
    assert_eq!(
        steps(&t),
        [
            ("system", Message, "You are a voice assistant for a bakery.", false),
            ("user", Message, "[audio wav, 45 bytes]", false),
            ("assistant", Message, "We open at 7 in the morning and close at 6 in the evening.", false),
            ("user", Message, "And on Sundays?", false),
            ("assistant", Message, "On Sundays we are closed.", false),
        ]
    );
    assert_eq!(t.observed_output.as_deref(), Some("On Sundays we are closed."));
}
