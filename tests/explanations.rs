//! What a user reads cannot contradict itself: over every bundled trajectory (the Who&When and
//! τ-bench sets, the samples, the corpus of other formats, the agent-framework fixtures) and every
//! method, offline,
//!
//! - the reason names the decisive step first and makes no claim about the ranking in prose;
//! - every claim of the explanation is true of the ranking, the path and the trace: "ranks
//!   first", "more probable", the dependency path, and "first appears here" in a finding (the
//!   quoted value, and every number in it, is not in an earlier step);
//! - the headline category is the explanation's (the category of its strongest finding);
//! - the Markdown and the JSON report carry the same verdict, reason and claims.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use falat::diagnosis::{Claim, Diagnosis, ErrorCategory, Part, Prose, Rule, Signal};
use falat::judge::heuristic::HeuristicJudge;
use falat::methods::{self, Method, MethodOptions};
use falat::model::Trajectory;
use falat::report;
use falat::substrate::Substrate;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "json" || x == "jsonl") {
            out.push(p);
        }
    }
}

/// Every bundled trajectory: the labelled sets, the samples and the corpus.
fn trajectories() -> Vec<(String, Trajectory)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    for d in [
        "data/who-and-when",
        "data/agentrx-tau",
        "sample_traces",
        "tests/fixtures/corpus",
        "tests/fixtures/frameworks",
        "tests/fixtures/frameworks-b",
        "tests/fixtures/formats-c",
    ] {
        files(&root.join(d), &mut paths);
    }
    paths.sort();
    let mut out = Vec::new();
    for p in paths {
        // Label files and sub-agent files are read with their traces.
        let Ok(loaded) = falat::ingest::fs::load_path(&p, None) else { continue };
        for t in loaded.trajectories {
            out.push((p.strip_prefix(root).unwrap().display().to_string(), t));
        }
    }
    assert!(out.len() >= 140, "only {} trajectories loaded", out.len());
    out
}

/// The 0-based step numbers a text names, in order ("step 4", "Step 12").
fn steps_named(text: &str) -> Vec<usize> {
    let re = regex::Regex::new(r"(?i)\bsteps? (\d+)").unwrap();
    re.captures_iter(text).map(|c| c[1].parse().unwrap()).collect()
}

/// Whether step `i` states the run's answer, read independently of the analysis: a line that
/// opens with "Final answer:" (bold or not), or the observed output's first line (8 characters or
/// more) written in it.
fn states_answer(t: &Trajectory, i: usize) -> bool {
    let content = &t.steps[i].content;
    let answer_line = content.lines().any(|l| {
        let l = l.trim().trim_start_matches("**").to_lowercase();
        l.strip_prefix("final answer").is_some_and(|r| r.trim_start_matches("**").trim_start().starts_with([':', '：']))
    });
    let observed = t.observed_output.as_deref().and_then(|o| o.lines().map(str::trim).find(|l| !l.is_empty()));
    answer_line || observed.is_some_and(|o| o.chars().count() >= 8 && content.contains(o))
}

fn shown(p: f32) -> f32 {
    (p * 100.0).round()
}

fn check_claims(file: &str, t: &Trajectory, d: &Diagnosis) -> Vec<String> {
    let mut bad = Vec::new();
    let Some(s) = d.decisive_step else { return bad };
    let p_of = |step: usize| d.ranking.iter().find(|r| r.step == step).map(|r| r.probability);
    let best = d.ranking.iter().map(|r| r.probability).fold(0.0_f32, f32::max);
    for c in &d.explanation.claims {
        let ok = match c {
            Claim::RanksFirst { step, p } => *step == s && p_of(s) == Some(*p) && *p >= best,
            Claim::MoreProbable { step, p, named, p_named, .. } => {
                *named == s && p_of(*step) == Some(*p) && p_of(s) == Some(*p_named) && shown(*p) > shown(*p_named)
            }
            Claim::PathToOutput { path, answer_stated } => {
                path.first() == Some(&s)
                    && path == &d.path
                    && d.final_output_step.is_none_or(|e| path.last() == Some(&e))
                    && path.last().is_some_and(|&e| *answer_stated == states_answer(t, e))
            }
            Claim::NoPathToOutput { from, final_step, answer_stated, .. } => {
                *from == s
                    && d.path.is_empty()
                    && *final_step == d.final_output_step
                    && *answer_stated == final_step.is_some_and(|e| states_answer(t, e))
            }
        };
        if !ok {
            bad.push(format!(
                "{file} {}: claim {c:?} is not true of the ranking {:?}",
                d.method,
                &d.ranking[..3.min(d.ranking.len())]
            ));
        }
    }
    // A claim about the ranking is made once, as data; prose never states one.
    for phrase in ["ranks first", "more probable"] {
        if d.reason.contains(phrase) {
            bad.push(format!("{file} {}: the reason states \"{phrase}\" in prose: {}", d.method, d.reason));
        }
    }
    // "first appears here": the quoted value and each of its numbers are not in an earlier step.
    let number = regex::Regex::new(r"\d[\d,]*(?:\.\d+)?").unwrap();
    for f in &d.explanation.findings {
        let Some(rest) = f.evidence.strip_prefix("the output's \"") else { continue };
        let Some((value, tail)) = rest.split_once('"') else { continue };
        if !tail.starts_with(" first appears here") {
            continue;
        }
        let value_low = value.to_lowercase();
        for (j, step) in t.steps.iter().enumerate().take(s) {
            let low = step.content.to_lowercase();
            let numbers: Vec<&str> =
                number.find_iter(value).map(|m| m.as_str()).filter(|n| n.replace(',', "").len() > 2).collect();
            let has_number = |n: &str| {
                regex::Regex::new(&format!(r"(?:^|[^\d.,]){}(?:$|[^\d,])", regex::escape(n)))
                    .unwrap()
                    .is_match(&step.content)
            };
            let whole = regex::Regex::new(&format!(r"(?:^|[^\w.,]){}(?:$|[^\w,])", regex::escape(&value_low))).unwrap();
            if whole.is_match(&low) || numbers.iter().any(|n| has_number(n)) {
                bad.push(format!(
                    "{file} {}: \"{value}\" is said to first appear at step {s}, but step {j} has it",
                    d.method
                ));
                break;
            }
        }
    }
    bad
}

fn check_reason(file: &str, d: &Diagnosis) -> Vec<String> {
    let mut bad = Vec::new();
    if let Some(s) = d.decisive_step {
        match steps_named(&d.reason).first() {
            Some(&first) if first == s => {}
            other => {
                bad.push(format!("{file} {}: names step {s}, the reason names {other:?} first: {}", d.method, d.reason))
            }
        }
        // The headline category is the explanation's.
        if d.category != d.explanation.category(d.category) {
            bad.push(format!(
                "{file} {}: headline {} against the explanation's {}",
                d.method,
                d.category,
                d.explanation.category(d.category)
            ));
        }
        let main = falat::diagnosis::explanation::main_signal(&d.explanation.findings);
        if d.explanation.rule != Rule::Pinned
            && let Some(m) = main
        {
            if d.category != m.category() {
                bad.push(format!(
                    "{file} {}: headline {} but the strongest finding is {}",
                    d.method,
                    d.category,
                    m.as_str()
                ));
            }
            if !d.reason.contains(m.as_str()) && !d.reason.ends_with('…') {
                bad.push(format!(
                    "{file} {}: the reason does not state its strongest finding {}",
                    d.method,
                    m.as_str()
                ));
            }
        }
    }
    bad
}

fn check_reports(file: &str, t: &Trajectory, d: &Diagnosis) -> Vec<String> {
    let mut bad = Vec::new();
    let json = report::to_json(t, d);
    let md = report::to_markdown(t, d);
    let cat = d.category.as_str();
    if json["decisive_step"].as_u64().map(|x| x as usize) != d.decisive_step || json["category"] != cat {
        bad.push(format!("{file} {}: the JSON verdict is not the diagnosis'", d.method));
    }
    if let Some(s) = d.decisive_step {
        let head = format!("**Decisive step {s}**");
        let tail = format!(": {cat} (confidence {:.2})", d.confidence);
        if !md.contains(&head) || !md.contains(&tail) {
            bad.push(format!("{file} {}: the Markdown headline misses {head} … {tail}", d.method));
        }
    }
    if json["reason"] != d.reason.as_str() || !md.contains(&falat::text::sanitize(&d.reason)) {
        bad.push(format!("{file} {}: the reason differs between the reports", d.method));
    }
    let claims = json["explanation"]["claims"].as_array().cloned().unwrap_or_default();
    if claims.len() != d.explanation.claims.len() {
        bad.push(format!(
            "{file} {}: {} claims in JSON, {} in the diagnosis",
            d.method,
            claims.len(),
            d.explanation.claims.len()
        ));
    }
    for c in &claims {
        let text = c["text"].as_str().unwrap_or_default();
        // The path claim of more than one step is printed as the path itself.
        let found = match c["kind"].as_str() {
            Some("path_to_output") if c["path"].as_array().is_some_and(|p| p.len() > 1) => {
                let p: Vec<String> = c["path"].as_array().unwrap().iter().map(|x| x.to_string()).collect();
                md.contains(&p.join(" → "))
            }
            Some("no_path_to_output") => md.contains(&text[1..]),
            _ => md.contains(text),
        };
        if !found {
            bad.push(format!("{file} {}: the JSON claim \"{text}\" is not in the Markdown report", d.method));
        }
    }
    bad
}

#[test]
fn every_verdict_explains_itself_without_contradiction() {
    let judge = HeuristicJudge;
    let mut bad = Vec::new();
    let mut checked = 0;
    let mut claims = 0;
    for (file, t) in trajectories() {
        let sub = Arc::new(Substrate::build(&t));
        for &method in &Method::ALL {
            let d = methods::run_on(method, &t, &sub, &judge, &MethodOptions::new(true));
            bad.extend(check_reason(&file, &d));
            bad.extend(check_claims(&file, &t, &d));
            bad.extend(check_reports(&file, &t, &d));
            checked += 1;
            claims += d.explanation.claims.len();
        }
    }
    assert!(checked >= 140 * Method::ALL.len(), "{checked}");
    assert!(claims >= checked, "every named step has at least one claim about the ranking: {claims} for {checked}");
    assert!(bad.is_empty(), "{} contradictions:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn a_step_with_findings_is_headlined_by_its_strongest_finding() {
    use falat::diagnosis::Finding;
    use falat::diagnosis::explanation::Explanation;
    let e = Explanation {
        findings: vec![
            Finding { signal: Signal::FailedAction, evidence: "its code failed at step 5".into(), weight: 0.9 },
            Finding {
                signal: Signal::UnsourcedValue,
                evidence: "states 80 with no earlier source".into(),
                weight: 0.4,
            },
        ],
        ..Explanation::default()
    };
    // What a step invents outranks how its actions fail (Signal::PRIORITY).
    assert_eq!(e.category(ErrorCategory::Unknown), ErrorCategory::Hallucination);
    assert_eq!(
        e.render(Some(3), Some("claude")),
        "step 3 (claude): its code failed at step 5 (failed_action); states 80 with no earlier source (unsourced_value)."
    );
}

/// Every [`Prose`] a diagnosis carries for a reader to follow (findings, pruning reasons,
/// verification criteria, the re-search, the rule's clauses), with where it comes from.
fn proses(d: &Diagnosis) -> Vec<(String, &Prose)> {
    let mut out: Vec<(String, &Prose)> = Vec::new();
    for f in &d.explanation.findings {
        out.push((format!("finding {}", f.signal.as_str()), &f.evidence));
    }
    for c in &d.candidates {
        for f in &c.findings {
            out.push((format!("candidate {} finding {}", c.step, f.signal.as_str()), &f.evidence));
        }
        if let Some(p) = &c.pruned {
            out.push((format!("candidate {} pruning", c.step), &p.reason));
        }
        if let Some(v) = &c.verification {
            for (name, cr) in
                [("independence", &v.independence), ("sufficiency", &v.sufficiency), ("precedence", &v.precedence)]
            {
                out.push((format!("candidate {} {name}", c.step), &cr.evidence));
            }
        }
    }
    if let Some(r) = &d.explanation.research {
        out.push(("re-search".into(), r));
    }
    match &d.explanation.rule {
        Rule::Fallback { why, .. } | Rule::NoFailure { why } => out.push(("rule".into(), why)),
        Rule::Ranking { why, failure } => {
            out.push(("rule".into(), why));
            out.extend(failure.iter().map(|f| ("failure shown".to_string(), f)));
        }
        _ => {}
    }
    for c in &d.explanation.claims {
        if let Claim::NoPathToOutput { sufficiency: Some(s), .. } = c {
            out.push(("claim sufficiency".into(), s));
        }
    }
    out
}

#[test]
fn every_step_a_sentence_names_is_data_a_reader_can_follow() {
    // The TUI links the steps of findings, prunings, criteria and rule clauses, and the JSON
    // report lists them: a step written into the text instead would be a dead reference.
    let judge = HeuristicJudge;
    let mut bad = Vec::new();
    let mut linked = 0;
    for (file, t) in trajectories() {
        let sub = Arc::new(Substrate::build(&t));
        for &method in &Method::ALL {
            let d = methods::run_on(method, &t, &sub, &judge, &MethodOptions::new(true));
            for (what, p) in proses(&d) {
                linked += p.steps().count();
                for part in p.parts() {
                    if let Part::Text(text) = part
                        && !steps_named(text).is_empty()
                    {
                        bad.push(format!("{file} {} {what}: a step written as text in \"{p}\"", d.method));
                    }
                }
                if p.steps().any(|s| s >= t.steps.len()) {
                    bad.push(format!("{file} {} {what}: names a step outside the run: \"{p}\"", d.method));
                }
            }
        }
    }
    // 1,362 when this was written: every finding, pruning and criterion that cites a step.
    assert!(linked >= 1200, "only {linked} steps named as data");
    bad.sort();
    bad.dedup();
    assert!(bad.is_empty(), "{} texts name steps as text:\n{}", bad.len(), bad.join("\n"));
}
