//! Values in context are not stated values, and a tool error written in content is an error.
//!
//! Over every bundled corpus file, no unsourced-value finding and no reason quotes a command-line
//! flag, a search-query term, a line number or an id as a value the step states: each quoted value
//! is looked up in the step's text and must occur there at least once outside those places (the
//! places are recognised here with checks of their own, not with the library's classifier). Small
//! OpenAI-chat runs built here pin a tool message that opens with an error, commands that are not
//! claims, and a stated figure that stays unsourced.

use std::path::PathBuf;
use std::sync::LazyLock;

use falat::diagnosis::{Diagnosis, Signal};
use falat::ingest::fs::load_path;
use falat::judge::heuristic::HeuristicJudge;
use falat::methods::falat::Options;
use falat::methods::{Method, MethodOptions};
use falat::model::Trajectory;
use falat::substrate::{Context, Substrate, signals};
use regex::Regex;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn diagnose(t: &Trajectory) -> Diagnosis {
    falat::methods::run(Method::Falat, t, &HeuristicJudge, &MethodOptions::for_falat(Options::new(true)))
}

/// The bundled corpus files (`tests/fixtures/corpus/`, every sub-folder) and the sample traces.
fn corpus_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root().join("tests/fixtures/corpus"), root().join("sample_traces")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("reads the folder") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "json" || x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// `(step, values)` of every "states X, Y with no earlier source" in a diagnosis: in its
/// candidates' findings, the decisive step's findings and the reason.
fn statements(d: &Diagnosis) -> Vec<(usize, Vec<String>)> {
    static REASON: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"step (\d+) \([^)]*\): states (.+?) with no earlier source").unwrap());
    let mut out = Vec::new();
    let parse = |e: &str| e.strip_prefix("states ").and_then(|r| r.strip_suffix(" with no earlier source")).map(values);
    for c in &d.candidates {
        for f in c.findings.iter().filter(|f| f.signal == Signal::UnsourcedValue) {
            out.push((c.step, parse(&f.evidence).unwrap_or_else(|| panic!("unparsed evidence {:?}", f.evidence))));
        }
    }
    if let Some(step) = d.decisive_step {
        for f in d.explanation.findings.iter().filter(|f| f.signal == Signal::UnsourcedValue) {
            out.push((step, parse(&f.evidence).unwrap_or_else(|| panic!("unparsed evidence {:?}", f.evidence))));
        }
    }
    for c in REASON.captures_iter(&d.reason) {
        out.push((c[1].parse().unwrap(), values(&c[2])));
    }
    // A count told against the list it counts (`says "11 available T-shirt options"; the list…`)
    // states its number too.
    let count = |e: &str| {
        let quoted = e.strip_prefix("says \"")?;
        let n = quoted.split(|c: char| !c.is_ascii_digit()).next().filter(|n| !n.is_empty())?;
        Some(vec![n.to_string()])
    };
    for c in &d.candidates {
        out.extend(
            c.findings
                .iter()
                .filter(|f| f.signal == Signal::CountMismatch)
                .filter_map(|f| Some((c.step, count(&f.evidence)?))),
        );
    }
    out
}

/// Splits "737015, october 2, 2019, 2019" into its values, keeping a date's year with it.
fn values(list: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in list.split(", ") {
        let year = part.len() == 4 && part.bytes().all(|b| b.is_ascii_digit());
        match out.last_mut() {
            Some(last)
                if year && last.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) && !last.contains(',') =>
            {
                last.push_str(", ");
                last.push_str(part);
            }
            _ => out.push(part.to_string()),
        }
    }
    out
}

/// Byte offsets where the value (a normalised number, or a date as written) occurs in `text`.
fn occurrences(text: &str, value: &str) -> Vec<(usize, usize)> {
    static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"-?\$?\d[\d,]*(?:\.\d+)?").unwrap());
    if let Ok(v) = value.parse::<f64>() {
        return NUMBER
            .find_iter(text)
            .filter(|m| {
                let digits: String = m.as_str().chars().filter(|c| *c != ',' && *c != '$').collect();
                let digits = digits.trim_end_matches('.');
                digits.parse::<f64>().is_ok_and(|x| (x - v).abs() < 1e-9)
                    || digits.trim_start_matches('-').parse::<f64>().is_ok_and(|x| (x - v).abs() < 1e-9)
            })
            .map(|m| (m.start(), m.end()))
            .collect();
    }
    let low = text.to_ascii_lowercase();
    low.match_indices(value).map(|(p, s)| (p, p + s.len())).collect()
}

/// The place an occurrence sits in, when it is one that is never a stated value: a command-line
/// flag, a search-query term, a line number or an id. Checked on the text around it.
fn in_context(text: &str, start: usize, end: usize) -> Option<&'static str> {
    static JSON_STRING: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#""(\w+)"\s*:\s*"((?:[^"\\]|\\.)*)""#).unwrap());
    static SEARCHED: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"(?i)(?:searched for|typed|query:?)\s*["']([^"'\n]*)["']"#).unwrap());
    let before = &text[..start];
    let after = &text[end..];
    let word_before = before.trim_end().rsplit(char::is_whitespace).next().unwrap_or("");
    // A flag: `-20` after a program or option word, `--depth=3`, `-n 80`.
    if text[start..].starts_with('-') && before.ends_with(' ') && word_before.chars().all(|c| c.is_ascii_lowercase())
        || before.ends_with('=') && word_before.starts_with('-')
        || word_before.starts_with('-') && word_before.len() <= 3 && before.ends_with(' ')
    {
        return Some("a command-line flag");
    }
    for c in JSON_STRING.captures_iter(text) {
        let v = c.get(2).unwrap();
        if v.start() <= start && end <= v.end() {
            match &c[1] {
                "command" | "cmd" => return Some("part of a command"),
                "query" | "q" | "pattern" => return Some("a search-query term"),
                _ => {}
            }
        }
    }
    if SEARCHED.captures_iter(text).any(|c| {
        let g = c.get(1).unwrap();
        g.start() <= start && end <= g.end()
    }) {
        return Some("a search-query term");
    }
    // A line number: `line 42`, `file.py:42`.
    let low_before = before.to_ascii_lowercase();
    if low_before.ends_with("line ") || low_before.ends_with("lines ") {
        return Some("a line number");
    }
    static FILE_COLON: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\.[A-Za-z]\w{0,9}:$").unwrap());
    if FILE_COLON.is_match(before) {
        return Some("a line number");
    }
    // An id: `#123`, a token of letters and digits joined by `-` or `_` around the number.
    if before.ends_with('#') {
        return Some("an id");
    }
    let tok_start = before.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')).map_or(0, |p| p + 1);
    let tok_end =
        after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')).map_or(text.len(), |p| end + p);
    let token = &text[tok_start..tok_end];
    let joined = token.contains(['-', '_']) && token.chars().filter(|c| c.is_ascii_alphabetic()).count() >= 2;
    if joined
        && !text[tok_start..start].chars().all(|c| c == '-' || c == ' ')
        && text[tok_start..start].chars().any(|c| c.is_ascii_alphanumeric())
    {
        return Some("an id");
    }
    None
}

#[test]
fn no_corpus_verdict_quotes_a_value_in_context_as_stated() {
    let files = corpus_files();
    assert!(files.len() >= 18, "the bundled corpus: {files:?}");
    let mut checked = 0;
    let mut bad = Vec::new();
    for path in &files {
        let loaded = load_path(path, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for t in &loaded.trajectories {
            let d = diagnose(t);
            for (step, vals) in statements(&d) {
                let text = &t.steps[step].content;
                for v in vals {
                    let occ = occurrences(text, &v);
                    assert!(
                        !occ.is_empty(),
                        "{}: step {step} states {v}, which its text does not hold",
                        path.display()
                    );
                    checked += 1;
                    let places: Vec<&str> = occ.iter().filter_map(|&(s, e)| in_context(text, s, e)).collect();
                    if places.len() == occ.len() {
                        bad.push(format!(
                            "{} step {step}: {v:?} is {} ({:?})",
                            path.file_name().unwrap().to_string_lossy(),
                            places[0],
                            falat::text::clip(text, 120)
                        ));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "values in context quoted as stated:\n{}", bad.join("\n"));
    // The corpus still has stated values: a count told to a customer that disagrees with its list.
    assert!(checked >= 2, "only {checked} stated values checked");
}

#[test]
fn the_checks_of_this_file_recognise_each_place() {
    let cases = [
        (r#"{"command":"mix phx.server 2>&1 | head -80","timeout":30000}"#, "-80", Some("a command-line flag")),
        (r#"{"query":"hex.pm opentelemetry_api elixir latest version 2026"}"#, "2026", Some("a search-query term")),
        ("/usr/lib/x/orchestrator.py:184: UserWarning: mismatch", "184", Some("a line number")),
        ("See issue #4512.", "4512", Some("an id")),
        ("Session 019b7f94-51b4-7593-922e ended.", "7593", Some("an id")),
        ("Currently, there are 11 available T-shirt options.", "11", None),
    ];
    for (text, value, want) in cases {
        let (s, e) = occurrences(text, value)[0];
        assert_eq!(in_context(text, s, e), want, "{text}");
    }
    assert_eq!(values("737015, october 2, 2019, 2019"), ["737015", "october 2, 2019", "2019"]);
}

/// A run of OpenAI chat messages, loaded as a file of that format would be.
fn chat(messages: serde_json::Value) -> Trajectory {
    let bytes = serde_json::to_vec(&messages).unwrap();
    let loaded = falat::ingest::parse("run.json", &bytes, None).expect("loads");
    assert_eq!(loaded.format.as_str(), "openai-chat");
    loaded.trajectories.into_iter().next().unwrap()
}

fn call(id: &str, name: &str, args: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}
    ]})
}

fn tool(id: &str, content: &str) -> serde_json::Value {
    serde_json::json!({"role": "tool", "tool_call_id": id, "content": content})
}

/// The signals of every step, as the judges read them.
fn findings(t: &Trajectory) -> Vec<Vec<(Signal, String)>> {
    let sub = Substrate::build(t);
    let ctx = Context::of(t, &sub, true);
    (0..t.steps.len())
        .map(|i| {
            signals::recall(&ctx, i)
                .unwrap_or_default()
                .into_iter()
                .map(|f| (f.signal, f.evidence.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn a_tool_message_that_opens_with_an_error_is_an_error_and_ignoring_it_is_a_candidate() {
    for error in [
        "Error: division by zero",
        r#"{"error": "division by zero"}"#,
        // An HTTP status told as the error, as a gateway in front of the tool writes it.
        "Error 503: Service Unavailable (upstream calc-svc)",
    ] {
        let t = chat(serde_json::json!([
            {"role": "system", "content": "You are a calculator. Use the divide tool."},
            {"role": "user", "content": "What is 84 divided by the number of items in my cart?"},
            call("call_1", "divide", serde_json::json!({"a": 84, "b": 0})),
            tool("call_1", error),
            {"role": "assistant", "content": "84 divided by the number of items in your cart is 42."}
        ]));
        assert_eq!(t.steps[3].content, error);
        assert!(!t.steps[3].is_error, "the format has no error flag here");
        let sub = Substrate::build(&t);
        assert!(sub.hierarchy.steps[3].flags.error, "{error}: the tool message is an error");
        let f = findings(&t);
        assert!(
            f[4].iter().any(|(s, e)| *s == Signal::IgnoredToolError && e == "goes on after the error at step 3"),
            "{error}: {:?}",
            f[4]
        );
        let d = diagnose(&t);
        let c = d.candidates.iter().find(|c| c.step == 4).unwrap_or_else(|| panic!("{error}: {:?}", d.candidates));
        assert!(c.findings.iter().any(|f| f.signal == Signal::IgnoredToolError), "{:?}", c.findings);
    }
    // A tool output with "error" in its data is no error.
    let t = chat(serde_json::json!([
        {"role": "user", "content": "How is the service doing?"},
        call("call_1", "get_metrics", serde_json::json!({"service": "api"})),
        tool("call_1", r#"{"error_rate": 0.02, "requests": 1200}"#),
        {"role": "assistant", "content": "The service handled 1,200 requests with a 2% error rate."}
    ]));
    assert!(!Substrate::build(&t).hierarchy.steps[2].flags.error);
    assert!(!findings(&t)[3].iter().any(|(s, _)| *s == Signal::IgnoredToolError));
}

#[test]
fn commands_are_not_claims_and_a_stated_total_stays_unsourced() {
    let t = chat(serde_json::json!([
        {"role": "user", "content": "Which invoice file is newest, and what is its total?"},
        call("call_1", "bash", serde_json::json!({"command": "ls -lt | head -20"})),
        tool("call_1", "invoice_a.txt\ninvoice_b.txt"),
        call("call_2", "bash", serde_json::json!({"command": "grep -n foo src/x.py:42"})),
        tool("call_2", "no match"),
        {"role": "assistant", "content": "Next I ran ls -lt | head -30 and `tail -n 75 invoice_a.txt`."},
        {"role": "assistant", "content": "The newest file is invoice_a.txt and the invoice total is 4,310."}
    ]));
    let f = findings(&t);
    for i in [1, 3, 5] {
        assert!(
            !f[i].iter().any(|(s, _)| *s == Signal::UnsourcedValue),
            "step {i}: {:?} {:?}",
            t.steps[i].content,
            f[i]
        );
    }
    assert!(
        f[6].iter().any(|(s, e)| *s == Signal::UnsourcedValue && e == "states 4310 with no earlier source"),
        "{:?}",
        f[6]
    );
    let d = diagnose(&t);
    assert_eq!(d.decisive_step, Some(6), "{}", d.reason);
    assert!(d.reason.contains("states 4310 with no earlier source"), "{}", d.reason);
    for (step, vals) in statements(&d) {
        assert_eq!((step, vals), (6, vec!["4310".to_string()]), "{}", d.reason);
    }
}

#[test]
fn a_value_the_tool_wrote_another_way_has_a_source() {
    // The same date, hour, id and percentage as the lookup wrote them, in the assistant's words.
    let t = chat(serde_json::json!([
        {"role": "user", "content": "Where is my order W-48213, and will it rain on delivery day?"},
        call("call_1", "get_order", serde_json::json!({"order_id": "W-48213"})),
        tool("call_1", r#"{"status": "delivered", "delivered_at": "2025-03-04T14:12:00Z", "hold_id": "H-88120", "rain_probability": 0.7}"#),
        {"role": "assistant", "content": "It was delivered on 4 March 2025 at 14:12 UTC (hold 88120); the chance of rain was 70% that day."},
        {"role": "assistant", "content": "Your refund of 1,337 EUR is on its way."}
    ]));
    let f = findings(&t);
    assert!(!f[3].iter().any(|(s, _)| *s == Signal::UnsourcedValue), "{:?}", f[3]);
    // A figure no step wrote stays unsourced.
    assert!(
        f[4].iter().any(|(s, e)| *s == Signal::UnsourcedValue && e == "states 1337 with no earlier source"),
        "{:?}",
        f[4]
    );
    // The date is one value, keyed by its ISO form, however it is written.
    for written in ["4 March 2025", "Mar 4, 2025", "March 4th 2025", "2025-03-04"] {
        assert_eq!(falat::evidence::date_key(written).as_deref(), Some("2025-03-04"), "{written}");
    }
    let ev = falat::evidence::extract_text("delivered_at: 2025-03-04T14:12:00Z");
    assert!(ev.iter().any(|e| e.kind == falat::evidence::EvidenceKind::Date && e.key == "2025-03-04"), "{ev:?}");
}

#[test]
fn a_total_the_amounts_add_up_to_is_worked_out_and_a_near_miss_is_shown() {
    let cart = |total: &str| {
        chat(serde_json::json!([
            {"role": "user", "content": "What do I pay for my cart?"},
            call("call_1", "get_cart", serde_json::json!({})),
            tool("call_1", r#"{"lines": [25.00, 34.90, 18.75], "shipping_eur": 4.95}"#),
            {"role": "assistant", "content": format!(
                "Your cart:\n- Espresso cups: 25.00 EUR\n- French press: 34.90 EUR\n- Beans: 18.75 EUR\n\
                 Subtotal 78.65 EUR, shipping 4.95 EUR.\nTotal to pay: {total} EUR."
            )}
        ]))
    };
    // 84.60 is 1.00 off the sum: unsourced, and the reason shows what the amounts add up to.
    let f = findings(&cart("84.60"));
    assert!(
        f[3].iter().any(|(s, e)| *s == Signal::UnsourcedValue
            && e == "states 84.6 with no earlier source; the amounts before it add up to 83.60 (78.65 + 4.95)"),
        "{:?}",
        f[3]
    );
    // The right total, and the subtotal of three lines, are worked out: no unsourced value.
    let f = findings(&cart("83.60"));
    assert!(!f[3].iter().any(|(s, _)| *s == Signal::UnsourcedValue), "{:?}", f[3]);
}

#[test]
fn a_value_restated_in_another_unit_has_a_source_and_a_users_figure_is_news() {
    let t = chat(serde_json::json!([
        {"role": "user", "content": "Which hotels are near Alexanderplatz?"},
        call("call_1", "search_hotels", serde_json::json!({"near": "Alexanderplatz"})),
        tool("call_1", r#"{"results": [{"name": "Motel One", "distance_m": 450, "walk_min": 6}, {"name": "ibis budget Ostbahnhof", "distance_m": 2300, "walk_min": 29}]}"#),
        {"role": "assistant", "content": "Motel One is 0.45 km away (6 min walk); ibis budget Ostbahnhof is 2.3 km (about 0.48 h on foot) and 1.7 km by tram."},
        {"role": "user", "content": "I just got a notification about a $35 fee?? what happened"}
    ]));
    let f = findings(&t);
    // 0.45 km = 450 m and 2.3 km = 2300 m were observed; 0.48 h is no exact restatement of 29 min
    // but `walk_min` names the unit of 29, and 29 min is 0.48 h at the written precision; 1.7 km
    // was never observed.
    assert!(
        f[3].iter().any(|(s, e)| *s == Signal::UnsourcedValue && e == "states 1.7 with no earlier source"),
        "{:?}",
        f[3]
    );
    // The user tells a figure of their own: no finding.
    assert!(!f[4].iter().any(|(s, _)| *s == Signal::UnsourcedValue), "{:?}", f[4]);
}

#[test]
fn a_figure_written_with_spaces_between_its_thousands_has_a_source() {
    // A statistics page writes "78 745" (the Norwegian way); the answer states 78745.
    let t = chat(serde_json::json!([
        {"role": "user", "content": "What was Tromsø's population on 1 January 2025?"},
        call("c1", "fetch_table", serde_json::json!({"table": "07459", "region": "5501"})),
        tool("c1", "region | 2025\n5501 Tromsø | 78 745"),
        {"role": "assistant", "content": "Tromsø had 78745 inhabitants on 1 January 2025."}
    ]));
    let f = findings(&t);
    assert!(!f[3].iter().any(|(s, _)| *s == Signal::UnsourcedValue), "{:?}", f[3]);
    // A figure the page does not write stays unsourced.
    let t = chat(serde_json::json!([
        {"role": "user", "content": "What was Tromsø's population on 1 January 2025?"},
        call("c1", "fetch_table", serde_json::json!({"table": "07459", "region": "5501"})),
        tool("c1", "region | 2025\n5501 Tromsø | 78 745"),
        {"role": "assistant", "content": "Tromsø had 79611 inhabitants on 1 January 2025."}
    ]));
    let f = findings(&t);
    assert!(f[3].iter().any(|(s, e)| *s == Signal::UnsourcedValue && e.contains("79611")), "{:?}", f[3]);
}

/// Figures worked out in the sentence that states them are no unsourced values: a share written
/// with its division ("1,284 / 15,870 = 0.0809", thousands grouped with commas) and the hours
/// between a booked arrival and a meeting ("arr … 11:30 … That leaves you 2.5 hours before your
/// 14:00 meeting"). Two held-out users' correct runs (a LangSmith SQL agent, Google ADK
/// sub-agents) that falat called hallucinations.
#[test]
fn a_share_written_with_its_division_and_a_time_between_two_clock_times_are_worked_out() {
    for rel in [
        "handbuilt/langsmith/sql_share_of_orders_to_canada.json",
        "handbuilt/google-adk/train_booked_time_to_meeting.adk.json",
    ] {
        let t = crate::chat::fixture(rel);
        let unsourced: Vec<usize> = crate::chat::findings(&t)
            .into_iter()
            .filter(|(_, s)| *s == Signal::UnsourcedValue)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(unsourced, Vec::<usize>::new(), "{rel}");
        let d = crate::chat::falat(&t);
        assert_eq!(d.decisive_step, None, "{rel}: {}", d.reason);
    }
}
