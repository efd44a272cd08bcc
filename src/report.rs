//! Diagnosis reports: Markdown for people and versioned JSON for programs (schema documented in
//! `docs/REPORT_SCHEMA.md`). This is an edge module: it builds `serde_json` values from the core
//! types; the core stays free of serde.

use serde_json::{Value, json};

use crate::diagnosis::{Candidate, Caveat, Claim, Detail, Diagnosis, Part, Role, Rule, Standing};
use crate::export;
use crate::model::{Step, StepKind, Trajectory};
use crate::text;

pub use crate::substrate::signals::revert::{Revert, reverted_at};

/// How many best-ranked steps the reports list.
pub const RANKED_SHOWN: usize = 10;

/// The JSON report schema identifier; bump the version on any incompatible change.
pub const SCHEMA: &str = "falat.diagnosis/v1";

/// The tool a step calls, for a one-line view of it: the step's tool name (sanitised) when the
/// step is a tool call whose content does not already start with that name. Span formats
/// (LangSmith, OpenTelemetry, Google ADK, OpenAI Agents SDK) keep only the arguments as a tool
/// call's content (`{"order_id": "58213"}`, `{}`); OpenAI chat logs write `name({...})` already.
pub fn called_tool(step: &Step) -> Option<String> {
    let name = step.tool_name.as_deref().map(str::trim).filter(|n| !n.is_empty())?;
    (step.kind == StepKind::ToolCall && !step.content.trim_start().starts_with(name)).then(|| text::sanitize(name))
}

/// A step's content in one line of at most `max` characters (sanitised, `…` when clipped), as
/// the tables and lists show it: a tool call as it reads ([`call_line`]), else the first
/// non-empty line.
pub fn step_line(step: &Step, max: usize) -> String {
    call_line(step, max).or_else(|| handoff_line(step, max)).unwrap_or_else(|| text::first_line(&step.content, max))
}

/// A hand-off whose content is only the call's arguments naming the target (Google ADK's
/// `transfer_to_agent({"agent_name": "flight_agent"})`, an Agents SDK `transfer_to_*` call with
/// `{}`) in one line: `→ flight_agent (transfer_to_agent)`. `None` for other steps and for a
/// hand-off that carries an instruction (a `Task` prompt, a Magentic-One orchestrator's message).
fn handoff_line(step: &Step, max: usize) -> Option<String> {
    if step.kind != StepKind::Delegation {
        return None;
    }
    let to = step.delegate_to.as_deref().map(str::trim).filter(|t| !t.is_empty())?;
    let content = step.content.trim();
    let only_target = content.is_empty()
        || matches!(serde_json::from_str::<serde_json::Value>(content), Ok(serde_json::Value::Object(m))
            if m.len() <= 1 && m.values().all(|v| v.is_null() || v.as_str().is_some_and(|s| s.trim() == to)));
    if !only_target {
        return None;
    }
    let tool = step.tool_name.as_deref().map(str::trim).filter(|n| !n.is_empty());
    let line = match tool {
        Some(tool) => format!("→ {to} ({tool})"),
        None => format!("→ {to}"),
    };
    Some(text::clip(&text::sanitize(&line), max))
}

/// A tool call in one line of at most `max` characters (sanitised, `…` when clipped), reading as
/// what it does; `None` for other steps, a call without a tool name, and a call whose content
/// already starts with its tool's name and says nothing more to read ([`call_subject`]):
/// - a shell call its command: `shell: cd x && pytest -q` for Codex's
///   `{"command": ["bash", "-lc", "cd x && pytest -q"]}` (the command read as the substrate reads
///   it, [`crate::substrate::signals::shell_command`]; its lines joined by ` ↵ `);
/// - an edit its tool and file first, then the change: `Edit tests/test_x.py: old → new`
///   ([`call_subject`]);
/// - a call whose arguments are plain text (not JSON) `tool: text`;
/// - any other call whose content lacks the tool's name ([`called_tool`]) `tool(arguments)`,
///   the arguments' lines joined by spaces.
pub fn call_line(step: &Step, max: usize) -> Option<String> {
    if let Some((name, subject)) = call_subject(step) {
        return Some(text::clip(&text::sanitize(&format!("{name}{subject}")), max));
    }
    let name = called_tool(step)?;
    let args: Vec<&str> = step.content.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    Some(text::clip(&format!("{name}({})", text::sanitize(&args.join(" "))), max))
}

/// The tool call's name and what it acts on, unsanitised, when its arguments say it: the
/// separator is part of the subject (`": cd x && pytest -q"`, `" tests/test_x.py: old → new"`).
/// Read from the arguments each agent writes (content, or `name(arguments)` in chat logs):
/// - shell tools (Claude Code `Bash`, Codex `shell`/`exec_command`/`local_shell`, OpenHands
///   `execute_bash`, Gemini CLI `run_shell_command`, mini-swe-agent and SWE-agent `bash`): the
///   command;
/// - edits: a JSON object with a file (`file_path`, `path`, `absolute_path`, `notebook_path`,
///   `filename`, `target_file`) and a change (`old_string`/`new_string` of Claude Code `Edit` and
///   Gemini CLI `replace`, `old_str`/`new_str` of OpenHands and Anthropic's `str_replace_editor`,
///   `old`/`new`, Claude Code `MultiEdit`'s `edits`, or the whole text: `content`, `file_text`,
///   `new_source`), or an editor's `command` (`str_replace_editor view`); Codex `apply_patch`'s
///   patch (`*** Update File: path`, its first removed and added lines); a long absolute path
///   keeps its last folder and file ([`short_path`]);
/// - plain-text arguments of any other tool: the text.
pub fn call_subject(step: &Step) -> Option<(String, String)> {
    if step.kind != StepKind::ToolCall {
        return None;
    }
    let name = step.tool_name.as_deref().map(str::trim).filter(|n| !n.is_empty())?;
    let content = step.content.trim();
    // Some formats write a call as `name(arguments)` (OpenAI chat logs).
    let (args, named) = match (content.find('('), content.strip_suffix(')')) {
        (Some(open), Some(inner)) if content[..open].trim() == name => (inner[open + 1..].trim(), true),
        _ => (content, false),
    };
    if args.is_empty() {
        return None;
    }
    let subject = if let Some(cmd) = crate::substrate::signals::shell_command(&name.to_ascii_lowercase(), args) {
        // An argument vector joined with spaces (Codex `local_shell`: `bash -lc cd x && ls`)
        // keeps its shell wrapper unquoted.
        let cmd = unwrap_shell(&cmd);
        let lines: Vec<&str> = cmd.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        (!lines.is_empty()).then(|| format!(": {}", lines.join(" ↵ ")))?
    } else if let Some(patch) = patch_subject(args) {
        patch
    } else {
        match serde_json::from_str::<Value>(args) {
            Ok(Value::Object(o)) => edit_subject(&o)?,
            Ok(Value::String(s)) if !s.trim().is_empty() => format!(": {}", squash(&s, usize::MAX)),
            Ok(_) => return None,
            // Plain text: the call's argument itself, unless the content already reads
            // `name ...` (SWE-agent's `str_replace_editor view /x.py`).
            Err(_) if named || content.starts_with(name) => return None,
            Err(_) => format!(": {}", squash(args, usize::MAX)),
        }
    };
    Some((name.to_string(), subject))
}

/// `cmd` without a leading unquoted `bash -lc ` / `sh -c ` (an argument vector joined by spaces).
fn unwrap_shell(cmd: &str) -> &str {
    let mut words = cmd.trim_start().splitn(3, ' ');
    match (words.next(), words.next(), words.next()) {
        (Some(sh), Some("-c" | "-lc"), Some(rest))
            if ["sh", "bash", "zsh", "/bin/sh", "/bin/bash", "/usr/bin/bash", "/bin/zsh"].contains(&sh) =>
        {
            rest
        }
        _ => cmd,
    }
}

/// A file path as a one-line view names it: an absolute path longer than [`PATH_CHARS`] loses
/// its leading folders (`…/versions/0003_fk.py`), so the file's name stays in a narrow list.
fn short_path(path: &str) -> String {
    let path = path.trim();
    if !path.starts_with('/') || path.chars().count() <= PATH_CHARS {
        return path.to_string();
    }
    let parts: Vec<&str> = path.rsplitn(3, '/').collect();
    match parts.as_slice() {
        [file, dir, _] => format!("…/{dir}/{file}"),
        _ => path.to_string(),
    }
}

/// Absolute paths longer than this many characters are shortened in one-line views.
const PATH_CHARS: usize = 30;

/// At most this many characters of an edit's removed text, so that the added text shows too.
const OLD_CHARS: usize = 48;

/// An edit call's subject from its JSON arguments (see [`call_subject`]); `None` when the
/// arguments name no file or no change.
fn edit_subject(o: &serde_json::Map<String, Value>) -> Option<String> {
    let text = |keys: &[&str]| keys.iter().find_map(|k| o.get(*k).and_then(Value::as_str)).map(str::to_string);
    let path = short_path(&text(&["file_path", "path", "absolute_path", "notebook_path", "filename", "target_file"])?);
    let command = text(&["command"]).filter(|c| !c.trim().is_empty() && !c.contains(char::is_whitespace));
    let old = text(&["old_string", "old_str", "old", "old_text"]);
    let new = text(&["new_string", "new_str", "new", "new_text"]);
    let whole = text(&["content", "file_text", "new_source"]);
    let change = match (old, new) {
        (Some(old), Some(new)) => Some(format!("{} → {}", squash(&old, OLD_CHARS), squash(&new, usize::MAX))),
        (None, Some(new)) => Some(format!("+ {}", squash(&new, usize::MAX))),
        _ => match (o.get("edits").and_then(Value::as_array), whole) {
            (Some(edits), _) if !edits.is_empty() => {
                let e = |k: &str| edits[0].get(k).and_then(Value::as_str).unwrap_or_default();
                let more = match edits.len() - 1 {
                    0 => String::new(),
                    n => format!(" (+{n} more {})", if n == 1 { "edit" } else { "edits" }),
                };
                Some(format!("{} → {}{more}", squash(e("old_string"), OLD_CHARS), squash(e("new_string"), usize::MAX)))
            }
            (_, Some(whole)) => Some(squash(&whole, usize::MAX)),
            _ => None,
        },
    };
    let verb = command.map(|c| format!(" {c}")).unwrap_or_default();
    match change {
        Some(change) => Some(format!("{verb} {path}: {change}")),
        None if !verb.is_empty() => Some(format!("{verb} {path}")),
        None => None,
    }
}

/// A Codex `apply_patch` call's subject from its patch (raw, or in an `input` member): the first
/// file with its operation unless it is an update (`add src/x.rs`), how many more files, and for
/// an update its first removed and added lines. `None` when the text is no patch.
fn patch_subject(args: &str) -> Option<String> {
    let patch = match serde_json::from_str::<Value>(args) {
        Ok(Value::Object(o)) => o.get("input").and_then(Value::as_str)?.to_string(),
        Ok(_) => return None,
        Err(_) => args.to_string(),
    };
    if !patch.trim_start().starts_with("*** Begin Patch") {
        return None;
    }
    let mut files: Vec<(&str, &str)> = Vec::new();
    let (mut removed, mut added) = (None, None);
    for line in patch.lines() {
        let line = line.trim_end();
        let op = ["Update", "Add", "Delete"].into_iter().find_map(|op| {
            line.strip_prefix("*** ")?.strip_prefix(op)?.strip_prefix(" File: ").map(|p| (op, p.trim()))
        });
        if let Some(f) = op {
            files.push(f);
        } else if line.starts_with("***") || line.starts_with("@@") {
            continue;
        } else if let Some(r) = line.strip_prefix('-').filter(|r| !r.trim().is_empty()) {
            removed.get_or_insert(r);
        } else if let Some(a) = line.strip_prefix('+').filter(|a| !a.trim().is_empty()) {
            added.get_or_insert(a);
        }
    }
    let (op, path) = *files.first()?;
    let op = if op == "Update" { String::new() } else { format!(" {}", op.to_ascii_lowercase()) };
    let more = match files.len() - 1 {
        0 => String::new(),
        n => format!(" (+{n} more {})", if n == 1 { "file" } else { "files" }),
    };
    let change = match (removed, added) {
        (Some(r), Some(a)) => format!(": {} → {}", squash(r, OLD_CHARS), squash(a, usize::MAX)),
        (None, Some(a)) => format!(": + {}", squash(a, usize::MAX)),
        (Some(r), None) => format!(": - {}", squash(r, OLD_CHARS)),
        (None, None) => String::new(),
    };
    Some(format!("{op} {}{more}{change}", short_path(path)))
}

/// `s` on one line: runs of whitespace (line breaks too) made one space, trimmed, clipped to
/// `max` characters; `""` for empty text (an edit that deletes).
fn squash(s: &str, max: usize) -> String {
    // Only the start of a long text can show in one line.
    let head: String = s.chars().take(max.min(400).saturating_add(1)).collect();
    let line = head.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() { "\"\"".to_string() } else { text::clip(&line, max.min(400)) }
}

/// A step's kind as a header names it: `tool_call get_order` for a tool call or result with a
/// known tool, else the kind (`message`); sanitised.
pub fn kind_and_tool(step: &Step) -> String {
    match step.tool_name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        Some(name) if matches!(step.kind, StepKind::ToolCall | StepKind::ToolResult) => {
            format!("{} {}", step.kind, text::sanitize(name))
        }
        _ => step.kind.to_string(),
    }
}

/// The low-confidence sentence's clause after "confidence is low (0.28): ", when the verdict
/// carries the low-confidence caveat, built from the ranking claim the verdict carries so that it
/// never contradicts the ranking printed beside it: when another step is more probable than the
/// named one, it says so; when the named step ranks first, it gives its `P` (which may be high:
/// the confidence is that `P` calibrated, and capped when no candidate passed verification, which
/// it then says); else it points to the ranked steps. Steps are [`Part::Step`]s.
pub fn low_confidence_parts(d: &Diagnosis) -> Option<(f32, Vec<Part>)> {
    let confidence = d.explanation.caveats.iter().find_map(|c| match c {
        Caveat::LowConfidence { confidence } => Some(*confidence),
        _ => None,
    })?;
    let t = |s: String| Part::Text(s);
    let claim =
        d.explanation.claims.iter().find(|c| matches!(c, Claim::MoreProbable { .. } | Claim::RanksFirst { .. }));
    // A fallback's cap, not the ranking, may be what keeps the confidence low: say so.
    let capped = d.explanation.caveats.iter().find_map(|c| match c {
        Caveat::ConfidenceCapped { cap } => Some(format!(" (no candidate passed verification: at most {cap:.2})")),
        _ => None,
    });
    let parts = match claim {
        Some(Claim::MoreProbable { step, p, named, p_named, standing, .. }) => {
            // Why the more probable step is not the verdict, when verification says.
            let why = match standing {
                Standing::PassedVerification => " and passed verification too".to_string(),
                s => s.clause().map(|c| format!(" but{c}")).unwrap_or_default(),
            };
            vec![
                t("the named step ".into()),
                Part::Step(*named),
                t(format!(" has P {p_named:.2}, and step ")),
                Part::Step(*step),
                t(format!(" is more probable (P {p:.2}){why}; read both")),
            ]
        }
        Some(Claim::RanksFirst { step, p }) => vec![
            t("step ".into()),
            Part::Step(*step),
            t(format!(
                " ranks first (P {p:.2}), but its chance of being the decisive step is low{}; check the other \
                 ranked steps too",
                capped.unwrap_or_default()
            )),
        ],
        _ => vec![t("check the ranked steps, not only the named one".into())],
    };
    Some((confidence, parts))
}

/// Why the named step is missing from the candidates, when it is: the rule that named it instead
/// (the ranking, a fallback, the best-ranked step, the user's pin, the method's own rule), as
/// parts ("step 44, the step named, is not a candidate: …"). `None` when no step is named or
/// the named step is a candidate.
pub fn named_outside_candidates(d: &Diagnosis) -> Option<Vec<Part>> {
    let s = d.decisive_step?;
    if d.candidates.iter().any(|c| c.step == s) {
        return None;
    }
    let t = |s: &str| Part::Text(s.to_string());
    let clause = |p: &crate::diagnosis::Prose| p.clone().sanitized(usize::MAX).parts().to_vec();
    let mut out = vec![t("Step "), Part::Step(s), t(", the step named, is not a candidate: ")];
    match &d.explanation.rule {
        Rule::Ranking { why, .. } => {
            out.push(t("the ranking named it ("));
            out.extend(clause(why));
            out.push(t(")."));
        }
        Rule::Fallback { name, why } => {
            out.push(if name.is_empty() {
                t("the fallback named it (")
            } else {
                Part::Text(format!("the {} fallback named it (", text::sanitize(name)))
            });
            out.extend(clause(why));
            out.push(t(")."));
        }
        Rule::RankedFirst => out.push(t("the method named no step, so the best-ranked step is named.")),
        Rule::Pinned => out.push(t("you pinned it.")),
        Rule::Method | Rule::Nothing | Rule::NoFailure { .. } => {
            out.push(Part::Text(format!("{} named it as {}.", d.method.title(), d.method.decision_rule())));
        }
    }
    Some(out)
}

/// The JSON report of the machine's verdict with the user's decision beside it: `machine` is the
/// diagnosis without overrides, `user` the one with the user's overrides (see
/// `docs/REPORT_SCHEMA.md`, `user_decision`). The verdict fields, the confidence and the
/// candidates are always the machine's.
pub fn to_json_with(t: &Trajectory, machine: &Diagnosis, user: Option<&Diagnosis>) -> Value {
    let mut v = to_json(t, machine);
    if let Some(u) = user {
        v["overrides"] = overrides_json(&u.overrides);
        v["user_decision"] = json!({
            "decisive_step": u.decisive_step,
            "agent": u.agent,
            "category": u.category.as_str(),
            "reason": u.reason,
            "roles": u.roles.iter().map(|(s, r)| json!({"step": s, "role": r.as_str()})).collect::<Vec<_>>(),
            "path": u.path,
        });
    } else {
        v["user_decision"] = Value::Null;
    }
    v
}

fn overrides_json(o: &crate::diagnosis::Overrides) -> Value {
    json!({"marked": o.marked, "excluded": o.excluded, "pinned": o.pinned})
}

/// The JSON report of one diagnosis (see `docs/REPORT_SCHEMA.md`).
pub fn to_json(t: &Trajectory, d: &Diagnosis) -> Value {
    let total = d.total_cost();
    json!({
        "schema": SCHEMA,
        "trajectory": {
            "id": t.id,
            "format": t.source.as_str(),
            "task": t.task,
            "steps": t.steps.len(),
            "agents": t.agent_names(),
            "expected_output": t.expected_output,
            "observed_output": t.observed_output,
            "trace_id": export::trace_id(t),
        },
        "method": d.method.as_str(),
        "judge": d.judge,
        "used_ground_truth": d.used_ground_truth,
        "decisive_step": d.decisive_step,
        "decisive_source": d.decisive_step.map(|s| source(t, s)),
        "agent": d.agent,
        "category": d.category.as_str(),
        "reason": d.reason,
        "explanation": explanation_json(d),
        // A verdict that names no step ("No failure found") has no step to be sure of.
        "confidence": d.decisive_step.map(|_| round3(d.confidence)),
        "low_confidence": d.decisive_step.is_some() && d.low_confidence(),
        "ranking": d.ranking.iter().take(RANKED_SHOWN).map(|r| json!({
            "step": r.step,
            "agent": r.agent,
            "probability": round3(r.probability),
            "source": source(t, r.step),
        })).collect::<Vec<_>>(),
        "agent_ranking": d.agent_ranking().into_iter().map(|(a, p)| json!({
            "agent": a,
            "probability": round3(p),
        })).collect::<Vec<_>>(),
        "roles": d.roles.iter().map(|(s, r)| json!({"step": s, "role": r.as_str(), "source": source(t, *s)})).collect::<Vec<_>>(),
        "path": d.path,
        "path_sources": d.path.iter().map(|s| source(t, *s)).collect::<Vec<_>>(),
        "final_output_step": d.final_output_step,
        "candidates": d.candidates.iter().map(|c| {
            let mut v = candidate_json(c);
            v["source"] = source(t, c.step);
            v
        }).collect::<Vec<_>>(),
        "cost": {
            "stages": d.cost.iter().map(|s| cost_json(s.stage.as_str(), &s.cost)).collect::<Vec<_>>(),
            "total": cost_json("", &total),
        },
        "overrides": overrides_json(&d.overrides),
        "warnings": d.warnings,
        "fallback": d.fallback.as_deref(),
        "details": d.details.iter().map(detail_json).collect::<Vec<_>>(),
        "gold": t.gold.as_ref().map(|g| json!({"agent": g.agent, "step": g.step, "reason": g.reason, "source": g.step.map(|s| source(t, s))})),
    })
}

/// The explanation as data (docs/REPORT_SCHEMA.md, "explanation"): the rule, the findings, the
/// method's account, the re-search, and each claim and caveat with its kind, the steps it cites
/// and the sentence the Markdown report prints for it.
fn explanation_json(d: &Diagnosis) -> Value {
    let e = &d.explanation;
    let (fallback_name, fallback_why) = match &e.rule {
        Rule::Fallback { name, why } => (Some(name.as_str()).filter(|n| !n.is_empty()), Some(why.as_str())),
        _ => (None, None),
    };
    json!({
        "rule": e.rule.as_str(),
        "fallback": fallback_name,
        "fallback_reason": fallback_why,
        "fallback_reason_steps": match &e.rule {
            Rule::Fallback { why, .. } => Some(why.steps().collect::<Vec<_>>()),
            _ => None,
        },
        "failure_shown": match &e.rule {
            Rule::Ranking { failure, .. } => failure.as_deref(),
            _ => None,
        },
        "failure_shown_steps": match &e.rule {
            Rule::Ranking { failure: Some(f), .. } => Some(f.steps().collect::<Vec<_>>()),
            _ => None,
        },
        "findings": e.findings.iter().map(|f| json!({
            "signal": f.signal.as_str(),
            "category": f.signal.category().as_str(),
            "evidence": f.evidence.as_str(),
            "steps": f.evidence.steps().collect::<Vec<_>>(),
            "weight": round3(f.weight),
        })).collect::<Vec<_>>(),
        "account": (!e.account.is_empty()).then_some(&e.account),
        "research": e.research.as_deref(),
        "research_steps": e.research.as_ref().map(|r| r.steps().collect::<Vec<_>>()),
        "claims": e.claims.iter().map(|c| {
            let mut v = match c {
                Claim::RanksFirst { step, p } => json!({"step": step, "probability": round3(*p)}),
                Claim::MoreProbable { step, agent, p, named, p_named, .. } => json!({
                    "step": step, "agent": agent, "probability": round3(*p),
                    "named": named, "named_probability": round3(*p_named),
                }),
                Claim::PathToOutput { path, answer_stated } => {
                    json!({"path": path, "final_output_states_answer": answer_stated})
                }
                Claim::NoPathToOutput { from, final_step, answer_stated, states_observed, sufficiency } => json!({
                    "from": from, "final_output_step": final_step, "final_output_states_answer": answer_stated,
                    "states_observed_output": states_observed, "sufficiency_evidence": sufficiency.as_deref(),
                }),
            };
            v["kind"] = json!(c.as_str());
            v["steps"] = json!(c.steps());
            v["text"] = json!(c.sentence(d.method, &e.rule));
            v
        }).collect::<Vec<_>>(),
        "caveats": e.caveats.iter().map(|c| {
            let mut v = match c {
                Caveat::ConfidenceCapped { cap } => json!({"cap": round3(*cap)}),
                Caveat::LowConfidence { confidence } => json!({"confidence": round3(*confidence)}),
                Caveat::OfflineJudge => json!({}),
            };
            v["kind"] = json!(c.as_str());
            v
        }).collect::<Vec<_>>(),
    })
}

/// The source ids of a step as a JSON object (`docs/REPORT_SCHEMA.md`, "Source ids").
fn source(t: &Trajectory, step: usize) -> Value {
    export::step_source(t, step).to_json()
}

/// The "Source ids" section: every step the report names, with the ids it has in the source
/// file (trace id as written, span / observation / message id, file line), so the verdict can be
/// found in the tool that recorded the trace. Nothing when the format gives no ids.
fn sources_section(out: &mut String, t: &Trajectory, d: &Diagnosis) {
    let mut named: Vec<usize> = d.decisive_step.into_iter().collect();
    named.extend(d.ranking.iter().take(RANKED_SHOWN).map(|r| r.step));
    named.extend(d.roles.iter().map(|(s, _)| *s));
    named.extend(d.candidates.iter().map(|c| c.step));
    named.extend(d.path.iter().copied());
    named.extend(t.gold.as_ref().and_then(|g| g.step));
    named.sort_unstable();
    named.dedup();
    let rows: Vec<(usize, export::StepSource)> =
        named.into_iter().map(|s| (s, export::step_source(t, s))).filter(|(_, src)| !src.is_empty()).collect();
    if rows.is_empty() {
        return;
    }
    out.push_str("\n## Source ids\n\n");
    if let Some(tr) = export::trace_id(t) {
        out.push_str(&format!("Trace id: `{}`\n\n", inline(tr)));
    }
    out.push_str("| step | agent | id | line |\n| ---: | --- | --- | ---: |\n");
    for (s, src) in rows {
        let id = src.id.as_deref().map_or("-".to_string(), |i| format!("{} `{}`", src.id_key, inline(i)));
        out.push_str(&format!(
            "| {s} | {} | {id} | {} |\n",
            cell(&t.steps[s].agent),
            src.line.map_or("-".to_string(), |l| l.to_string())
        ));
    }
}

/// A method detail as a JSON object: `kind`, `title`, the typed fields of its kind, and the
/// display `lines` (docs/REPORT_SCHEMA.md, "details").
fn detail_json(x: &Detail) -> Value {
    let r2 = |v: f32| (f64::from(v) * 100.0).round() / 100.0;
    let range = |r: &std::ops::Range<usize>| json!({"start": r.start, "end": r.end});
    let (kind, data) = match x {
        Detail::Options(v) => ("options", json!({"options": v})),
        Detail::OfflineJudge => ("offline_judge", json!({})),
        Detail::Ablated(v) => ("ablated", json!({"components": v.iter().map(|c| c.as_str()).collect::<Vec<_>>()})),
        Detail::PhaseSearch(v) => (
            "phase_search",
            json!({"phases": v.iter().map(|p| json!({
                "phase": p.phase, "steps": range(&p.steps), "purpose": p.purpose.as_str(), "agent": p.agent,
                "suspicion": r2(p.suspicion), "searched": p.searched,
            })).collect::<Vec<_>>()}),
        ),
        Detail::ReSearchChecks(v) => (
            "research_checks",
            json!({"checks": v.iter().map(|k| json!({
                "step": k.step, "independence": k.independence, "sufficiency": k.sufficiency,
            })).collect::<Vec<_>>()}),
        ),
        Detail::Panel(v) => ("panel", json!({"perspectives": v.iter().map(|p| p.as_str()).collect::<Vec<_>>()})),
        Detail::Analyses(t, v) => (
            "analyses",
            json!({"target": t.as_str(), "analyses": v.iter().map(|a| json!({
                "conclusion": a.conclusion.as_str(), "agents": a.agents, "step": a.step,
                "confidence": r2(a.confidence), "reasoning": a.reasoning,
                "evaluations": a.evaluations.iter().map(|e| json!({"agent": e.agent, "likelihood": r2(e.likelihood), "evidence": e.evidence})).collect::<Vec<_>>(),
                "alternatives": a.alternatives.iter().map(|e| json!({"agent": e.agent, "step": e.step, "likelihood": r2(e.likelihood), "reason": e.reason})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>()}),
        ),
        Detail::Consensus(t, c) => (
            "consensus",
            json!({
                "target": t.as_str(),
                "types": c.types.iter().map(|(k, v)| json!({"conclusion": k.as_str(), "weight": r2(*v)})).collect::<Vec<_>>(),
                "agents": c.agents.iter().map(|(k, v)| json!({"agent": k, "weight": r2(*v)})).collect::<Vec<_>>(),
                "steps": c.steps.iter().map(|(k, v)| json!({"step": k, "weight": r2(*v)})).collect::<Vec<_>>(),
                "dropped": c.dropped, "out_of_range": c.out_of_range, "spread": r2(c.spread), "review": c.review,
            }),
        ),
        Detail::AgentEvidence(v) => (
            "agent_evidence",
            json!({"agents": v.iter().map(|e| json!({"agent": e.agent, "likelihood": r2(e.likelihood), "evidence": e.evidence})).collect::<Vec<_>>()}),
        ),
        Detail::Alternatives(v) => (
            "alternatives",
            json!({"alternatives": v.iter().map(|a| json!({"agent": a.agent, "step": a.step, "likelihood": r2(a.likelihood), "reason": a.reason})).collect::<Vec<_>>()}),
        ),
        Detail::Segments(v) => (
            "segments",
            json!({"segments": v.iter().map(|s| json!({"steps": range(&s.steps), "candidates": s.candidates})).collect::<Vec<_>>()}),
        ),
        Detail::PropagationGraph(v) => (
            "propagation_graph",
            json!({"edges": v.iter().map(|e| json!({"from": e.from, "to": e.to, "effect": e.effect.as_str()})).collect::<Vec<_>>()}),
        ),
        Detail::AdjudicatedNodes(v) => ("adjudicated_nodes", json!({"steps": v})),
        Detail::JudgeAnswer { agent, step } => ("judge_answer", json!({"agent": agent, "step": step})),
        Detail::Verdicts(v) => (
            "verdicts",
            json!({"verdicts": v.iter().map(|x| json!({"step": x.step, "decisive": x.decisive, "confidence": r2(x.confidence)})).collect::<Vec<_>>()}),
        ),
        Detail::Rounds(v) => (
            "rounds",
            json!({"rounds": v.iter().map(|r| json!({"range": range(&r.range), "split": r.split, "half": r.half.as_str()})).collect::<Vec<_>>()}),
        ),
    };
    let mut out = json!({"kind": kind, "title": x.title(), "lines": x.lines()});
    if let (Some(o), Value::Object(d)) = (out.as_object_mut(), data) {
        o.extend(d);
    }
    out
}

fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

fn candidate_json(c: &Candidate) -> Value {
    json!({
        "step": c.step,
        "agent": c.agent,
        "origin": match c.origin { crate::diagnosis::Origin::Machine => "machine", crate::diagnosis::Origin::User => "user" },
        "score": round3(c.score),
        "findings": c.findings.iter().map(|f| json!({
            "signal": f.signal.as_str(),
            "weight": round3(f.weight),
            "evidence": f.evidence.as_str(),
            "steps": f.evidence.steps().collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "pruned": c.pruned.as_ref().map(|p| json!({
            "transition": p.transition.as_str(),
            "by_step": p.by_step,
            "reason": p.reason.as_str(),
            "steps": p.reason.steps().collect::<Vec<_>>(),
        })),
        "verification": c.verification.as_ref().map(|v| json!({
            "error_independence": criterion_json(&v.independence),
            "counterfactual_sufficiency": criterion_json(&v.sufficiency),
            "temporal_precedence": criterion_json(&v.precedence),
        })),
    })
}

/// One verification criterion: whether it passed, why, and the steps the why names.
fn criterion_json(c: &crate::diagnosis::Criterion) -> Value {
    json!({"passed": c.passed, "evidence": c.evidence.as_str(), "steps": c.evidence.steps().collect::<Vec<_>>()})
}

/// [`to_markdown`] of the machine's verdict, with the user's overrides after the ranking when
/// the user overrode it (`user` is the diagnosis with the overrides): "Your decision" when they
/// changed the decisive step, "Your overrides" when the step is still the machine's. The
/// verdict, its confidence and the candidates stay the machine's.
pub fn to_markdown_with(t: &Trajectory, machine: &Diagnosis, user: Option<&Diagnosis>) -> String {
    markdown(t, machine, user)
}

/// The user's section of [`to_markdown_with`].
fn user_section(out: &mut String, machine: &Diagnosis, u: &Diagnosis) {
    let same = u.decisive_step == machine.decisive_step;
    out.push_str(if same { "\n## Your overrides\n\n" } else { "\n## Your decision\n\n" });
    let o = &u.overrides;
    let list = |v: &[usize]| if v.is_empty() { "none".to_string() } else { steps(v) };
    out.push_str(&format!(
        "You overrode the machine: marked {}, excluded {}, pinned {}.\n\n",
        list(&o.marked),
        list(&o.excluded),
        o.pinned.map_or("none".to_string(), |p| p.to_string())
    ));
    match u.decisive_step {
        Some(s) if same => out.push_str(&format!(
            "With your overrides the decisive step is still **step {s}**, the machine's: not a decision of yours.\n"
        )),
        Some(s) => out.push_str(&format!(
            "With your overrides the decisive step is **step {s}** by **{}** ({}). The machine's verdict above is unchanged.\n",
            cell(u.agent.as_deref().unwrap_or("?")),
            u.category
        )),
        None => out.push_str("With your overrides no decisive step can be named. The machine's verdict above is unchanged.\n"),
    }
    if !same {
        out.push_str(&format!("\n{}\n", text::sanitize(&u.reason)));
    }
}

/// One stage's cost (`stage` empty: the total, which has no name). With the LLM judge, also the
/// prompt tokens the server served from its cache and who answered the questions.
fn cost_json(stage: &str, c: &crate::diagnosis::Cost) -> Value {
    let mut v = json!({
        "calls": c.calls,
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
        "wall_ms": ms(c.wall),
    });
    if !stage.is_empty() {
        v["stage"] = json!(stage);
    }
    if c.answers.any() || c.cached_tokens > 0 {
        v["cached_tokens"] = json!(c.cached_tokens);
        v["later_prompt_tokens"] = json!(c.later_prompt_tokens);
        v["later_cached_tokens"] = json!(c.later_cached_tokens);
        v["answers"] = answers_json(&c.answers);
    }
    v
}

/// Who answered an LLM judge's questions.
fn answers_json(a: &crate::diagnosis::AnswerCounts) -> Value {
    json!({
        "model": a.model,
        "repaired": a.repaired,
        "not_asked": a.not_asked,
        "fallback": {
            "invalid": a.fallback_invalid,
            "error": a.fallback_error,
            "budget": a.fallback_budget,
            "replay_miss": a.fallback_replay,
        },
    })
}

fn steps(v: &[usize]) -> String {
    v.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
}

/// The Markdown report a person reads: task, verdict, why, roles, candidates, path, cost.
/// All trace content is sanitised and table cells are escaped.
pub fn to_markdown(t: &Trajectory, d: &Diagnosis) -> String {
    markdown(t, d, None)
}

/// The Markdown report, with the user's section after the ranking when `user` is given.
fn markdown(t: &Trajectory, d: &Diagnosis, user: Option<&Diagnosis>) -> String {
    let mut out = String::new();
    out.push_str(&format!("# falat diagnosis: {}\n\n", cell(&t.id)));
    let answers = d.total_cost().answers;
    if answers.mostly_fallback() {
        out.push_str(&format!(
            "**Most answers are the offline judge's, not the LLM's**: {} of {} questions fell back ({}).\n\n",
            answers.fallbacks(),
            answers.model + answers.repaired + answers.fallbacks(),
            answers.describe()
        ));
    }
    out.push_str(&format!(
        "- format: {}\n- method: {} (judge: {})\n- steps: {}, agents: {}\n",
        t.source,
        d.method,
        d.judge,
        t.steps.len(),
        cell(&t.agent_names().join(", "))
    ));
    out.push_str(&format!(
        "- ground truth (the expected output) used: {}\n\n",
        if d.used_ground_truth { "yes" } else { "no" }
    ));
    out.push_str("## Task\n\n");
    match t.task.trim().is_empty() {
        true => out.push_str("(none recorded; `--task` or `--task-file` gives it)\n"),
        false => out.push_str(&quote(&t.task)),
    }
    if let Some(e) = &t.expected_output {
        let unused = if d.used_ground_truth { "" } else { " (not given to the analysis)" };
        out.push_str(&format!("\nExpected output{unused}: `{}`\n", inline(e)));
    }
    if let Some(o) = &t.observed_output {
        out.push_str(&format!("\nObserved output: `{}`\n", inline(o)));
    }
    verdict(&mut out, t, d);
    ranking(&mut out, t, d);
    if let Some(u) = user {
        user_section(&mut out, d, u);
    }
    roles(&mut out, t, d);
    candidates(&mut out, t, d);
    path_and_cost(&mut out, d);
    sources_section(&mut out, t, d);
    if !d.warnings.is_empty() {
        out.push_str("\n## Warnings\n\n");
        for w in &d.warnings {
            out.push_str(&format!("- {}\n", cell(w)));
        }
    }
    for detail in &d.details {
        let lines = detail.lines();
        out.push_str(&format!("\n## {}\n\n", cell(&crate::text::sentence_case(&detail.title()))));
        if lines.is_empty() {
            // A heading over nothing reads as a missing section.
            out.push_str("None.\n");
        }
        for l in &lines {
            out.push_str(&format!("- {}\n", cell(l)));
        }
    }
    out
}

/// The prefix of the report warnings that carry the trace file's load diagnostics (`falat
/// diagnose` puts them first: `loading: line 6: skipped: not JSON ...`).
pub const LOADING: &str = "loading: ";

/// The records of the trace file the loader skipped, from the report's load warnings ([`LOADING`]
/// and a diagnostic that says `skipped`): how many, and the 1-based lines of those that name one.
pub fn unread_records(warnings: &[String]) -> (usize, Vec<usize>) {
    let mut count = 0;
    let mut lines = Vec::new();
    for w in warnings {
        let Some(diag) = w.strip_prefix(LOADING) else { continue };
        if !(diag.contains(" skipped") || diag.contains("skipped:")) {
            continue;
        }
        count += 1;
        let line = diag.strip_prefix("line ").and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next());
        if let Some(l) = line.and_then(|l| l.parse().ok()) {
            lines.push(l);
        }
    }
    (count, lines)
}

/// Whether the trajectory ends without a final answer from an agent: no observed output, or a
/// last step that is not an agent's (non-user) message with text.
fn ends_without_answer(t: &Trajectory) -> bool {
    let last_is_answer = t.steps.last().is_some_and(|s| {
        s.kind == crate::model::StepKind::Message
            && !s.agent.eq_ignore_ascii_case("user")
            && !s.is_error
            && !s.content.trim().is_empty()
    });
    t.observed_output.as_deref().is_none_or(|o| o.trim().is_empty()) || !last_is_answer
}

/// The sentence said right under the verdict of a trajectory that records no task: the rules that
/// compare the run with the request read nothing, and a value from the unrecorded request has no
/// source in the trace, so the reader should know before reading the step (the same warning is
/// under Warnings, where a reader of the verdict alone does not look).
const NO_TASK_NOTE: &str = "**No task recorded**: the trace does not hold the user's request, so this verdict was made \
     without it (what was asked, its constraints and its values read nothing). Give it with `--task` or `--task-file` \
     and diagnose again.";

/// The sentence said right under the verdict when records of the file could not be read and the
/// run ends without an answer: the answer may be among the lost records.
fn lost_answer_note(t: &Trajectory, warnings: &[String]) -> Option<String> {
    let (n, lines) = unread_records(warnings);
    if n == 0 || !ends_without_answer(t) {
        return None;
    }
    let records = if n == 1 { "1 record".to_string() } else { format!("{n} records") };
    let at = match lines.as_slice() {
        [] => String::new(),
        [l] => format!(" (line {l})"),
        ls => format!(" (lines {})", ls.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    };
    Some(format!(
        "**The run's answer may be lost**: {records} of the file could not be read{at}, and the trajectory \
         ends without a final answer from an agent. The answer may be among them: read this verdict with \
         that in mind (see Warnings)."
    ))
}

/// What a verdict's category means, in a few plain words for the reader of the verdict (the
/// names are the taxonomy's, [`crate::diagnosis::ErrorCategory::TAXONOMY`]): for the decisive
/// step itself when the name alone misleads ([`category_caveat`], after `here, `), else what
/// the category stands for. `None` for `other` and the values that are no error kind
/// (`unknown`, `user_marked`, `user_pinned`).
pub fn category_gloss(t: &Trajectory, d: &Diagnosis) -> Option<String> {
    use crate::diagnosis::ErrorCategory as C;
    if let Some(c) = category_caveat(t, d) {
        return Some(format!("here, {c}"));
    }
    let g = match d.category {
        C::Hallucination => "a value, fact or source stated with nothing behind it",
        C::ToolInvocationError => "a call with a wrong argument, or one the tool rejected or that failed",
        C::MisreadToolOutput => "a tool's output read wrongly, or an error in it ignored",
        C::InstructionOrPlanDeviation => "work against the task, the user's or the agent's instructions, or the plan",
        C::WrongDelegation => "work handed to an agent that cannot do it, or with an instruction that cannot work",
        C::PrematureTermination => "done or answered before the answer or its check was established",
        C::VerificationFailure => "a check that claims success without evidence, or misses the error",
        C::RepeatedFailingAction => "an action that already failed, repeated without change",
        C::UnsupportedAssumption => "reasoning built on an assumption, a placeholder or made-up data",
        C::Other | C::UserMarked | C::UserPinned | C::Unknown => return None,
    };
    Some(g.to_string())
}

/// What the category's name gets wrong about the decisive step, when it does. A
/// `wrong_value_origin` verdict whose value first appears in the output of what the step ran
/// ([`crate::substrate::signals::IN_ITS_OUTPUT`]: an instruction to run a script, a call) is a
/// `hallucination` by its finding, yet the step's own words state no value. A file edit
/// ([`crate::substrate::signals::edits`]) whose own result shows no error is a
/// `tool_parameter_or_invocation_error` by its finding (`failed_action`: the check after it
/// failed, a test's expectation rewritten to the bug), yet the call was well formed: the change
/// it made was wrong. No category of the taxonomy
/// names a wrong change, so the name stays and this says what it means here. `None` for every
/// other verdict.
pub fn category_caveat(t: &Trajectory, d: &Diagnosis) -> Option<&'static str> {
    use crate::diagnosis::{ErrorCategory, Signal};
    let s = d.decisive_step.filter(|&s| s < t.steps.len())?;
    let main = crate::diagnosis::explanation::main_signal(&d.explanation.findings);
    if d.category == ErrorCategory::Hallucination
        && main == Some(Signal::WrongValueOrigin)
        && d.explanation.findings.iter().any(|f| {
            f.signal == Signal::WrongValueOrigin && f.evidence.contains(crate::substrate::signals::IN_ITS_OUTPUT)
        })
    {
        return Some(
            "the wrong value first appears in the output of what this step ran or asked for, not in its own words",
        );
    }
    if d.category != ErrorCategory::ToolInvocationError
        || main != Some(Signal::FailedAction)
        || !crate::substrate::signals::edits(t, s)
    {
        return None;
    }
    let links = crate::substrate::LinkIndex::build(t);
    let applied = links.result_of.get(s).copied().flatten().is_none_or(|r| !t.steps[r].is_error);
    applied.then_some("the edit applied without error: the change it made was wrong, not the call")
}

fn verdict(out: &mut String, t: &Trajectory, d: &Diagnosis) {
    out.push_str("\n## Verdict\n\n");
    match d.decisive_step {
        Some(s) => out.push_str(&format!(
            "**Decisive step {s}** by **{}**: {} (confidence {:.2})\n",
            cell(d.agent.as_deref().unwrap_or("?")),
            d.category,
            d.confidence
        )),
        None if matches!(d.explanation.rule, crate::diagnosis::Rule::NoFailure { .. }) => {
            out.push_str("**No failure found**: no ROOT_CAUSE is named.\n")
        }
        None => out.push_str("No decisive step could be named.\n"),
    }
    if let Some(g) = category_caveat(t, d) {
        out.push_str(&format!("\nThe category `{}` means here that {g}.\n", d.category));
    }
    if let Some(note) = lost_answer_note(t, &d.warnings) {
        out.push_str(&format!("\n{note}\n"));
    }
    if t.task.trim().is_empty() {
        out.push_str(&format!("\n{NO_TASK_NOTE}\n"));
    }
    if let Some(s) = d.decisive_step.and_then(|s| t.steps.get(s)) {
        let src = export::step_source(t, s.index);
        if !src.is_empty() {
            // falat counts the steps it read from 0; the source's own numbering may differ
            // (a system prompt it keeps apart, records it skipped): say whose number is whose.
            let own = match src.id.as_deref().and_then(|id| id.parse::<usize>().ok()) {
                Some(n) if n != s.index => format!(" (the source's own numbering of falat's step {})", s.index),
                _ => String::new(),
            };
            out.push_str(&format!("\nIn the source: {}{own}\n", cell(&src.describe())));
        }
        // The whole step, quoted: the reader of a ticket sees what the verdict is about. A span
        // format's tool call is its arguments only: the tool's name goes above them.
        if let Some(name) = called_tool(s) {
            out.push_str(&format!("\nA call of the tool `{}`:\n", inline(&name)));
        }
        out.push('\n');
        out.push_str(&quote_all(&s.content));
        if let Some(r) = d.decisive_step.and_then(|k| reverted_at(t, k)) {
            out.push_str(&format!(
                "\n**Reverted at step {}** (`{}`): a later step undid this edit, so the code the run leaves behind \
                 does not hold it.\n",
                r.step,
                inline(&r.how)
            ));
        }
    }
    out.push_str(&format!("\n### Why\n\n{}\n", text::sanitize(&d.reason)));
    for c in &d.explanation.claims {
        if matches!(c, Claim::RanksFirst { .. } | Claim::MoreProbable { .. }) {
            out.push_str(&format!("\n{}\n", c.sentence(d.method, &d.explanation.rule)));
        }
    }
    if !d.overrides.is_empty() {
        let o = &d.overrides;
        out.push_str(&format!(
            "\nUser overrides: marked {:?}, excluded {:?}, pinned {}\n",
            o.marked,
            o.excluded,
            o.pinned.map_or("none".to_string(), |p| p.to_string())
        ));
    }
    if let Some(g) = &t.gold {
        out.push_str(&match g.step {
            Some(s) => format!("\nGold label: step {s} by {}\n", cell(&g.agent)),
            // The label's step was dropped on reading (past the history's end, a skipped
            // record): its warning says why; the agent still counts.
            None => {
                format!("\nGold label: {} (the label's step is at no step read: see the warnings)\n", cell(&g.agent))
            }
        });
    }
}

/// The best-ranked steps with their probabilities.
fn ranking(out: &mut String, t: &Trajectory, d: &Diagnosis) {
    if d.ranking.is_empty() {
        return;
    }
    out.push_str("\n## Ranked steps\n\n");
    if let Some(s) = d.decisive_step {
        // A method that caps the confidence of a step its fallback named: say so where it applied.
        let cap = d.explanation.caveats.iter().find_map(|c| match c {
            Caveat::ConfidenceCapped { cap } => {
                Some(format!(", here at most {cap:.2} because no candidate passed verification"))
            }
            _ => None,
        });
        out.push_str(&format!(
            "Step {s}, the step named, comes first; the others follow by `P`, the ranker's probability that \
             the step is the decisive one. The confidence ({:.2}) is the chance that step {s} is right: its \
             `P` calibrated on the methods' past decisions{}.\n\n",
            d.confidence,
            cap.unwrap_or_default()
        ));
    }
    if d.decisive_step.is_none() && matches!(d.explanation.rule, Rule::NoFailure { .. }) {
        // P sums to 1 over the run's steps whatever happened in it: without this, a step with
        // P 1.00 reads as a failure the verdict denies.
        out.push_str(
            "No failure was found, so no step is named. `P` only orders the steps by where the ranker would \
             look first if the run had failed: it sums to 1 over this run's steps, so a high `P` is no sign of \
             a failure.\n\n",
        );
    }
    if let Some((c, parts)) = low_confidence_parts(d) {
        out.push_str(&format!("Confidence is low ({c:.2}): {}.\n\n", crate::diagnosis::explanation::join(&parts)));
    }
    out.push_str("| rank | step | agent | P | content |\n| ---: | ---: | --- | ---: | --- |\n");
    for (k, r) in d.ranking.iter().take(RANKED_SHOWN).enumerate() {
        let content = t.steps.get(r.step).map_or(String::new(), |s| step_line(s, 80));
        out.push_str(&format!(
            "| {} | {} | {} | {:.2} | {} |\n",
            k + 1,
            r.step,
            cell(&r.agent),
            r.probability,
            cell(&content)
        ));
    }
}

fn roles(out: &mut String, t: &Trajectory, d: &Diagnosis) {
    if d.roles.is_empty() {
        return;
    }
    out.push_str("\n## Roles\n\n| step | agent | role | content |\n| ---: | --- | --- | --- |\n");
    for (s, r) in &d.roles {
        let step = &t.steps[*s];
        let marker = if *r == Role::RootCause { "**ROOT_CAUSE**".to_string() } else { r.as_str().to_string() };
        out.push_str(&format!("| {s} | {} | {marker} | {} |\n", cell(&step.agent), cell(&step_line(step, 80))));
    }
}

/// Where the Candidates section sends the reader for what supports a step the ranking named
/// with no candidates: its findings under **Why** when it has some; else that it has none of its
/// own, and where the run shows its failure (the method's account when it gave one), so the
/// sentence never promises findings that are not there.
fn named_step_support(d: &Diagnosis) -> String {
    let e = &d.explanation;
    if !e.findings.is_empty() {
        return " (its findings are under **Why**)".to_string();
    }
    match &e.rule {
        Rule::Ranking { failure: Some(f), .. } => {
            format!("; it has no finding of its own, and the run shows its failure elsewhere: {}", cell(f))
        }
        _ if !e.account.trim().is_empty() => {
            "; it has no finding of its own (the method's account of it is under **Why**)".to_string()
        }
        _ => "; it has no finding of its own".to_string(),
    }
}

/// The candidates table; a note above it names the decisive step when it is not among them, and
/// why ([`named_outside_candidates`]).
fn candidates(out: &mut String, t: &Trajectory, d: &Diagnosis) {
    out.push_str("\n## Candidates\n\n");
    if let Some(parts) = named_outside_candidates(d) {
        let content = d.decisive_step.and_then(|s| t.steps.get(s)).map(|s| step_line(s, 80)).unwrap_or_default();
        let note = crate::diagnosis::explanation::join(&parts);
        out.push_str(&format!("{} It reads `{}`.\n\n", cell(&note), inline(&content)));
    }
    if d.candidates.is_empty() {
        // A bare "None." under a named step reads as if the verdict had no support: say that no
        // step was left to verify, so the verdict (if any) is the ranking's.
        match d.decisive_step {
            Some(_) => out.push_str(&format!(
                "None: no step was kept as a candidate to verify, so the step named comes from the ranking{}.\n",
                named_step_support(d)
            )),
            None => out.push_str("None: no step was kept as a candidate to verify.\n"),
        }
        return;
    }
    out.push_str("| step | agent | score | findings | pruned | independence | sufficiency | precedence |\n");
    out.push_str("| ---: | --- | ---: | --- | --- | --- | --- | --- |\n");
    for c in &d.candidates {
        let findings: Vec<String> =
            c.findings.iter().map(|f| format!("{}: {}", f.signal.as_str(), f.evidence)).collect();
        let pruned = c.pruned.as_ref().map_or("-".to_string(), |p| format!("{} ({})", p.transition, p.reason));
        let crit = |x: Option<&crate::diagnosis::Criterion>| {
            x.map_or("-".to_string(), |c| format!("{} {}", if c.passed { "pass" } else { "fail" }, c.evidence))
        };
        let v = c.verification.as_ref();
        out.push_str(&format!(
            "| {} | {} | {:.2} | {} | {} | {} | {} | {} |\n",
            c.step,
            cell(&c.agent),
            c.score,
            cell(&findings.join("; ")),
            cell(&pruned),
            cell(&crit(v.map(|v| &v.independence))),
            cell(&crit(v.map(|v| &v.sufficiency))),
            cell(&crit(v.map(|v| &v.precedence))),
        ));
    }
}

fn path_and_cost(out: &mut String, d: &Diagnosis) {
    for c in &d.explanation.claims {
        let sentence = c.sentence(d.method, &d.explanation.rule);
        match c {
            Claim::PathToOutput { path, .. } if path.len() > 1 => {
                let p: Vec<String> = path.iter().map(|s| s.to_string()).collect();
                out.push_str(&format!("\n## Dependency path to the final output\n\n{}\n", p.join(" → ")));
            }
            Claim::PathToOutput { .. } => {
                out.push_str(&format!("\n## Dependency path to the final output\n\n{sentence}\n"));
            }
            Claim::NoPathToOutput { .. } => {
                // "None: the dependency graph has no path…": the sentence continues the "None".
                let mut chars = sentence.chars();
                let rest: String = chars.next().map(|c| c.to_lowercase().chain(chars).collect()).unwrap_or_default();
                out.push_str(&format!("\n## Dependency path to the final output\n\nNone: {rest}\n"));
            }
            _ => {}
        }
    }
    let llm = d.cost.iter().any(|s| s.cost.answers.any());
    if llm {
        out.push_str("\n## Cost\n\n| stage | calls | prompt tokens | cached | completion tokens | ms | answered by |\n| --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
    } else {
        out.push_str("\n## Cost\n\n| stage | calls | prompt tokens | completion tokens | ms |\n| --- | ---: | ---: | ---: | ---: |\n");
    }
    for s in &d.cost {
        if llm {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {:.1} | {} |\n",
                s.stage,
                s.cost.calls,
                s.cost.prompt_tokens,
                s.cost.cached_tokens,
                s.cost.completion_tokens,
                s.cost.wall.as_secs_f64() * 1000.0,
                s.cost.answers.describe()
            ));
        } else {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {:.1} |\n",
                s.stage,
                s.cost.calls,
                s.cost.prompt_tokens,
                s.cost.completion_tokens,
                s.cost.wall.as_secs_f64() * 1000.0
            ));
        }
    }
    let total = d.total_cost();
    if let (true, Some(share)) = (llm, total.later_cached_share()) {
        out.push_str(&format!(
            "\nPrompt tokens served from the server's cache after the trajectory's first call: {} of {} ({:.1} %).\n",
            total.later_cached_tokens,
            total.later_prompt_tokens,
            100.0 * share
        ));
    }
}

/// Sanitised text safe inside a Markdown table cell (one line, `|` escaped).
fn cell(s: &str) -> String {
    text::sanitize(s).replace('\n', " ").replace('|', "\\|")
}

fn inline(s: &str) -> String {
    text::clip(&cell(s), 200).replace('`', "'")
}

/// Every line of `s`, sanitised, as a Markdown block quote (blank lines kept as `>`).
fn quote_all(s: &str) -> String {
    let body: Vec<String> = text::sanitize(s.trim_end())
        .lines()
        .map(|l| if l.trim().is_empty() { ">".to_string() } else { format!("> {}", l.trim_end()) })
        .collect();
    body.join("\n") + "\n"
}

/// A number in 0..=1 from an `f32` rounded to three decimals, without the float noise of the
/// conversion (`0.4000000059604645` becomes `0.4`).
fn round3(x: f32) -> f64 {
    (f64::from(x) * 1000.0).round() / 1000.0
}

fn quote(s: &str) -> String {
    let body: Vec<String> = text::sanitize(s.trim()).lines().take(20).map(|l| format!("> {l}")).collect();
    body.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnosis::RankedStep;

    fn call(tool: Option<&str>, content: &str) -> Step {
        Step {
            kind: StepKind::ToolCall,
            tool_name: tool.map(String::from),
            content: content.into(),
            agent: "supervisor".into(),
            ..Step::default()
        }
    }

    #[test]
    fn a_tool_call_reads_as_its_tool_and_arguments_in_one_line() {
        // A span format's call: only the arguments, pretty-printed over lines.
        let s = call(Some("get_order"), "{\n  \"order_id\": \"58213\"\n}");
        assert_eq!(step_line(&s, 80), "get_order({ \"order_id\": \"58213\" })");
        assert_eq!(called_tool(&s).as_deref(), Some("get_order"));
        // A hand-off tool without arguments.
        assert_eq!(step_line(&call(Some("transfer_to_billing"), "{}"), 80), "transfer_to_billing({})");
        assert_eq!(step_line(&call(Some("transfer_to_billing"), ""), 80), "transfer_to_billing()");
        // Clipped as before.
        assert_eq!(step_line(&s, 12), "get_order({…");
        // An OpenAI chat call already names its tool; a call with no known tool is its content.
        let chat = call(Some("get_order"), "get_order({\"order_id\": \"58213\"})");
        assert_eq!(called_tool(&chat), None);
        assert_eq!(step_line(&chat, 80), "get_order({\"order_id\": \"58213\"})");
        assert_eq!(step_line(&call(None, "{\"q\": 1}"), 80), "{\"q\": 1}");
        assert_eq!(step_line(&call(Some("  "), "{\"q\": 1}"), 80), "{\"q\": 1}");
        // A result keeps its content; the header names its tool.
        let result = Step { kind: StepKind::ToolResult, ..call(Some("get_order"), "{\"status\": \"ok\"}") };
        assert_eq!(step_line(&result, 80), "{\"status\": \"ok\"}");
        assert_eq!(kind_and_tool(&result), "tool_result get_order");
        assert_eq!(kind_and_tool(&Step { kind: StepKind::Message, ..call(Some("x"), "hi") }), "message");
        // Trace text never reaches the terminal raw, the tool's name included.
        let hostile = call(Some("evil\u{1b}[2J"), "{\"a\": \"\u{1b}]0;x\u{7}\"}");
        assert!(!step_line(&hostile, 80).contains('\u{1b}'), "{:?}", step_line(&hostile, 80));
    }

    #[test]
    fn a_shell_call_reads_as_its_command_and_an_edit_as_its_file_first() {
        let line = |tool: &str, content: &str| step_line(&call(Some(tool), content), 200);
        // Codex: `shell` with an argument vector, `exec_command` with `cmd`, `local_shell` (the
        // argument vector joined by spaces at ingest).
        assert_eq!(
            line("shell", r#"{"command": ["bash", "-lc", "cd x && pytest -q"], "workdir": "/w"}"#),
            "shell: cd x && pytest -q"
        );
        assert_eq!(line("exec_command", r#"{"cmd": "cargo test", "yield_time_ms": 1000}"#), "exec_command: cargo test");
        assert_eq!(line("local_shell", "bash -lc cd x && pytest -q"), "local_shell: cd x && pytest -q");
        // A multi-line command keeps its line breaks visible.
        assert_eq!(line("Bash", r#"{"command": "cd x\nmake test"}"#), "Bash: cd x ↵ make test");
        // OpenHands' `CmdRunAction` (`run`): its text is the command.
        assert_eq!(line("run", "ls -la"), "run: ls -la");
        // A chat log's `name(arguments)`.
        assert_eq!(step_line(&call(Some("bash"), r#"bash({"command": "ls"})"#), 80), "bash: ls");
        // Edits: Claude Code `MultiEdit` and `Write`, a Codex patch adding a file.
        assert_eq!(
            line(
                "MultiEdit",
                r#"{"file_path": "src/a.py", "edits": [{"old_string": "x = 1", "new_string": "x = 2"}, {"old_string": "", "new_string": "y"}]}"#
            ),
            "MultiEdit src/a.py: x = 1 → x = 2 (+1 more edit)"
        );
        assert_eq!(
            line("Write", r##"{"file_path": "README.md", "content": "# Title\n\nText"}"##),
            "Write README.md: # Title Text"
        );
        assert_eq!(
            line("apply_patch", r#"{"input": "*** Begin Patch\n*** Add File: b.rs\n+fn main() {}\n*** End Patch"}"#),
            "apply_patch add b.rs: + fn main() {}"
        );
        // A long old text gives way to the new one.
        let long = format!(r#"{{"file_path": "a.py", "old_string": "{}", "new_string": "new"}}"#, "o".repeat(100));
        assert!(line("Edit", &long).ends_with("o… → new"), "{}", line("Edit", &long));
        // Not a shell, no file: the tool and its arguments as before.
        assert_eq!(line("Grep", r#"{"pattern": "x"}"#), r#"Grep({"pattern": "x"})"#);
        // Sanitised.
        let hostile = line("Bash", r#"{"command": "echo \u001b]0;pwned\u0007 hi"}"#);
        assert!(!hostile.contains('\u{1b}') && !hostile.contains('\u{7}'), "{hostile:?}");
        assert!(hostile.starts_with("Bash: echo "), "{hostile:?}");
    }

    fn low(ranking: &[(usize, f32)], named: usize, claim: Claim) -> Diagnosis {
        let mut d = Diagnosis {
            decisive_step: Some(named),
            confidence: 0.2,
            ranking: ranking
                .iter()
                .map(|&(step, probability)| RankedStep { step, agent: "a".into(), probability })
                .collect(),
            ..Diagnosis::default()
        };
        d.explanation.claims.push(claim);
        d.explanation.caveats.push(Caveat::LowConfidence { confidence: 0.2 });
        d
    }

    #[test]
    fn the_low_confidence_sentence_agrees_with_the_ranking() {
        let more = Claim::MoreProbable {
            step: 5,
            agent: "a".into(),
            p: 0.52,
            named: 4,
            p_named: 0.19,
            standing: Standing::Unverified,
        };
        let d = low(&[(4, 0.19), (5, 0.52)], 4, more.clone());
        let (c, parts) = low_confidence_parts(&d).expect("a low-confidence verdict");
        assert_eq!(c, 0.2);
        let sentence = crate::diagnosis::explanation::join(&parts);
        assert_eq!(sentence, "the named step 4 has P 0.19, and step 5 is more probable (P 0.52); read both");
        // Verification says why the more probable step is not the verdict.
        let Claim::MoreProbable { step, agent, p, named, p_named, .. } = more else { unreachable!() };
        let unverified = Claim::MoreProbable { step, agent, p, named, p_named, standing: Standing::NotCandidate };
        let d = low(&[(4, 0.19), (5, 0.52)], 4, unverified);
        assert_eq!(
            crate::diagnosis::explanation::join(&low_confidence_parts(&d).expect("low").1),
            "the named step 4 has P 0.19, and step 5 is more probable (P 0.52) but was not a candidate and was not \
             verified; read both"
        );
        assert!(!sentence.contains("stands out"));
        let steps: Vec<usize> =
            parts.iter().filter_map(|p| if let Part::Step(s) = p { Some(*s) } else { None }).collect();
        assert_eq!(steps, [4, 5]);
        let d = low(&[(44, 0.10), (4, 0.08)], 44, Claim::RanksFirst { step: 44, p: 0.10 });
        let md = to_markdown(&Trajectory::default(), &d);
        assert!(
            md.contains(
                "Confidence is low (0.20): step 44 ranks first (P 0.10), but its chance of being the decisive step \
                 is low; check the other ranked steps too.\n"
            ),
            "{md}"
        );
        // A high P whose confidence a fallback capped: the cap is the reason.
        let mut capped = low(&[(44, 0.57), (4, 0.08)], 44, Claim::RanksFirst { step: 44, p: 0.57 });
        capped.explanation.caveats.push(Caveat::ConfidenceCapped { cap: 0.2 });
        let sentence = crate::diagnosis::explanation::join(&low_confidence_parts(&capped).expect("low").1);
        assert_eq!(
            sentence,
            "step 44 ranks first (P 0.57), but its chance of being the decisive step is low (no candidate passed \
             verification: at most 0.20); check the other ranked steps too"
        );
        // Confident: no sentence.
        let mut sure = d.clone();
        sure.explanation.caveats.clear();
        assert!(low_confidence_parts(&sure).is_none());
    }

    #[test]
    fn a_named_step_that_is_no_candidate_is_named_above_the_candidates_with_its_rule() {
        let mut d = low(&[(2, 0.3)], 2, Claim::RanksFirst { step: 2, p: 0.3 });
        d.explanation.rule = Rule::Ranking { why: "no verified candidate passed both checks".into(), failure: None };
        let t = Trajectory {
            steps: (0..3).map(|i| Step { index: i, ..call(Some("transfer_to_billing"), "{}") }).collect(),
            ..Trajectory::default()
        };
        let md = to_markdown(&t, &d);
        // The verdict's quote of a call that is only its arguments names the tool above them.
        assert!(md.contains("\nA call of the tool `transfer_to_billing`:\n\n> {}\n"), "{md}");
        assert!(
            md.contains(
                "## Candidates\n\nStep 2, the step named, is not a candidate: the ranking named it (no verified \
                 candidate passed both checks). It reads `transfer_to_billing({})`.\n\nNone: no step was kept as a \
                 candidate to verify, so the step named comes from the ranking; it has no finding of its own.\n"
            ),
            "{md}"
        );
        // No finding on the named step: the section says where the run shows its failure, and
        // never points to findings under **Why** that are not there.
        let failure = Some(crate::prose!["step ", Part::Step(1), " shows a finding (unsourced_value): states 42"]);
        d.explanation.rule = Rule::Ranking { why: "no candidate was left to verify".into(), failure };
        assert!(
            to_markdown(&t, &d).contains(
                "\nNone: no step was kept as a candidate to verify, so the step named comes from the ranking; it has \
                 no finding of its own, and the run shows its failure elsewhere: step 1 shows a finding \
                 (unsourced_value): states 42.\n"
            ),
            "{md}"
        );
        d.explanation.findings.push(crate::diagnosis::Finding {
            signal: crate::diagnosis::Signal::UnsourcedValue,
            evidence: "states 42 with no earlier source".into(),
            weight: 0.5,
        });
        assert!(to_markdown(&t, &d).contains("comes from the ranking (its findings are under **Why**).\n"), "{md}");
        d.explanation.findings.clear();
        d.explanation.rule =
            Rule::Fallback { name: "strongest-live".into(), why: "no candidate passed verification".into() };
        let note = crate::diagnosis::explanation::join(&named_outside_candidates(&d).expect("a note"));
        assert_eq!(
            note,
            "Step 2, the step named, is not a candidate: the strongest-live fallback named it (no candidate passed \
             verification)."
        );
        d.candidates.push(Candidate {
            step: 2,
            agent: "a".into(),
            findings: Vec::new(),
            score: 0.5,
            pruned: None,
            verification: None,
            origin: crate::diagnosis::Origin::Machine,
        });
        assert!(named_outside_candidates(&d).is_none(), "a candidate needs no note");
    }
}
