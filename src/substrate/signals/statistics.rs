//! Code that computes one statistic and names it another: `print("median =", x.mean())`; a share
//! worked out over another figure than the whole the user asked about. docs/METHODS.md,
//! "Instructions".

use std::sync::LazyLock;

use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Signal};
use crate::model::StepKind;

/// A call computing a central statistic: `.mean(`, `np.median(`, `statistics.fmean(`,
/// `np.nanmean(`, `np.average(`. Group 1 is the function's name.
static CALL: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"\b(?:np\.|numpy\.|statistics\.|torch\.|\.)?(median|nanmedian|mean|nanmean|fmean|average)\s*\(")
        .unwrap()
});

/// A string literal in a line of code (single or double quotes, no escapes across).
static LITERAL: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r#""([^"\n]*)"|'([^'\n]*)'"#).unwrap());

/// The name assigned on a line: `median_min = …` (not `==`).
static ASSIGNED: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=[^=]").unwrap());

/// What a step writes: a call's string arguments (`run_python({"code": "…"})`, the code is in
/// its string values), else its text.
fn written(step: &crate::model::Step) -> std::borrow::Cow<'_, str> {
    match (step.kind == StepKind::ToolCall).then(|| super::call_strings(&step.content)).flatten() {
        Some(args) => std::borrow::Cow::Owned(args),
        None => std::borrow::Cow::Borrowed(&step.content),
    }
}

/// The two statistics told apart: the median, and the mean (the average).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Statistic {
    Median,
    Mean,
}

impl Statistic {
    fn of_call(name: &str) -> Statistic {
        if name.contains("median") { Statistic::Median } else { Statistic::Mean }
    }

    fn of_word(w: &str) -> Option<Statistic> {
        match w {
            "median" => Some(Statistic::Median),
            "mean" | "average" | "avg" => Some(Statistic::Mean),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Statistic::Median => "median",
            Statistic::Mean => "mean",
        }
    }
}

/// The statistics a line of code names in what it prints or assigns: the words of its string
/// literals that are not subscripts (`df["median_income"]` names a column, not the result), and
/// of the name it assigns. Words split at anything but letters (`median_oneway_min` →
/// `median`, `oneway`, `min`).
fn named(line: &str) -> Vec<Statistic> {
    let mut texts: Vec<&str> = Vec::new();
    for m in LITERAL.find_iter(line) {
        let before = line[..m.start()].trim_end().chars().next_back();
        let after = line[m.end()..].trim_start().chars().next();
        if before == Some('[') || after == Some(']') {
            continue;
        }
        // An f-string's text outside its braces.
        texts.push(m.as_str());
    }
    if let Some(c) = ASSIGNED.captures(line) {
        texts.push(c.get(1).map_or("", |m| m.as_str()));
    }
    let mut out = Vec::new();
    for text in texts {
        let outside: String = {
            let mut depth = 0usize;
            text.chars()
                .map(|c| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth = depth.saturating_sub(1),
                        _ => {}
                    }
                    if depth > 0 || c == '}' { ' ' } else { c }
                })
                .collect()
        };
        for w in outside.to_lowercase().split(|c: char| !c.is_alphabetic()) {
            if let Some(s) = Statistic::of_word(w)
                && !out.contains(&s)
            {
                out.push(s);
            }
        }
    }
    out
}

/// Step `i`, an agent's code (a message with code or a call of a code tool), has a line that
/// prints or assigns under the name of one statistic ([`named`]: "median", or "mean",
/// "average") a value it computes with a call of the other only ([`CALL`]):
/// `print("median_oneway_min =", round(cyc["oneway_min"].mean(), 1))`. What it reports under that
/// name is another statistic: the code departs from what it says it computes (and, as a rule,
/// from the instruction that asked for it). docs/METHODS.md, "Instructions".
pub(super) fn wrong_statistic(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let step = &ctx.trajectory.steps[i];
    if !matches!(step.kind, StepKind::Message | StepKind::ToolCall)
        || super::actions::is_human(step)
        || super::is_outside_agent(&step.agent)
        || !CALL.is_match(&step.content)
    {
        return;
    }
    let code = written(step);
    let code = code.as_ref();
    for line in code.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || trimmed.starts_with("//") {
            continue;
        }
        let calls: Vec<Statistic> =
            CALL.captures_iter(line).filter_map(|c| c.get(1)).map(|m| Statistic::of_call(m.as_str())).collect();
        if calls.is_empty() {
            continue;
        }
        // The call's own name is no label: read the line without it.
        let labels = named(&CALL.replace_all(line, "("));
        let Some(label) = labels.iter().find(|l| !calls.contains(l)) else { continue };
        if labels.iter().any(|l| calls.contains(l)) {
            continue;
        }
        let computed = calls[0];
        out.push(finding(
            Signal::WrongStatistic,
            weights::WRONG_STATISTIC,
            format!(
                "reports a {} under the name \"{}\": {}",
                computed.name(),
                label.name(),
                crate::text::first_line(trimmed, 120)
            ),
        ));
        return;
    }
}

/// The whole a question asks a share of: "what share of our Q3 2026 signups came through …",
/// "the percentage of orders that were refunded", "what fraction of the tickets …". Group 1 is up to
/// six words after "of", up to a verb, a relative word or a punctuation mark.
static SHARE_OF: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b(?:share|percentage|percent|proportion|fraction|portion)\s+of\s+((?:[\w'-]+\s+){0,5}?[\w'-]+)\s*(?:[?.,;:!]|$|\s(?:came|come|comes|were|was|are|is|that|which|who|whose|from|through|via|in|by|did|do|does|had|have|has|went|got|made|used|paid|\w{3,}ed)\b)",
    )
    .unwrap()
});

/// A division of two written numbers: `612 / 1530`, `612/1,530`, `612 ÷ 1530` (group 1 the
/// dividend, group 2 the divisor).
static DIVISION: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?:^|[^\w.])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)\s*[/÷]\s*(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:[^\w./]|$)")
        .unwrap()
});

/// A figure as a person writes it: `1530`, `12.5`.
fn figure(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 { format!("{}", x as i64) } else { format!("{x}") }
}

/// A word compared with others by its stem: lower case, a plural's final `s` dropped.
fn stem(w: &str) -> String {
    let w = w.to_lowercase();
    match w.strip_suffix('s') {
        Some(s) if s.len() >= 3 && !s.ends_with('s') => s.to_string(),
        _ => w,
    }
}

/// Words of a member's name that say how a figure is kept, not what it counts: `total_signups`,
/// `signupCount`, `num_orders` name signups and orders.
const GENERIC: &[&str] = &["total", "count", "number", "num", "n", "all", "sum"];

/// Whether member name `key` names the asked `whole` (stemmed words): every word of the name but
/// the [`GENERIC`] ones is among the whole's words, and one is left.
fn names_whole(key: &str, whole: &[String]) -> bool {
    let words: Vec<String> =
        super::actions::name_words(key).iter().map(|w| stem(w)).filter(|w| !GENERIC.contains(&w.as_str())).collect();
    !words.is_empty() && words.iter().all(|w| whole.contains(w))
}

/// The values of the members of record `o` that name the asked `whole`.
fn whole_values<'a>(o: &'a serde_json::Value, whole: &'a [String]) -> impl Iterator<Item = f64> + 'a {
    o.as_object()
        .into_iter()
        .flat_map(|m| m.iter())
        .filter(move |(k, _)| names_whole(k, whole))
        .filter_map(|(_, v)| v.as_f64())
}

/// The divisions `text` writes, as (dividend, divisor), the divisor above 0.
fn divisions(text: &str) -> Vec<(f64, f64)> {
    DIVISION
        .captures_iter(text)
        .filter_map(|c| Some((c[1].replace(',', "").parse::<f64>().ok()?, c[2].replace(',', "").parse::<f64>().ok()?)))
        .filter(|(_, d)| *d > 0.0)
        .collect()
}

/// Whether an agent's call or message anywhere in the run divides by `whole`.
fn divides_by_anywhere(ctx: &Context<'_>, whole: f64) -> bool {
    ctx.trajectory.steps.iter().any(|s| {
        matches!(s.kind, StepKind::Message | StepKind::ToolCall)
            && !super::actions::is_human(s)
            && s.content.contains(['/', '÷'])
            && { divisions(&written(s)).iter().any(|(_, d)| (d - whole).abs() < 1e-9) }
    })
}

/// The stemmed words of the wholes the person asks a share of, in the task and their turns before
/// step `i`.
fn asked_wholes(ctx: &Context<'_>, i: usize) -> Vec<(String, Vec<String>)> {
    let mut texts: Vec<&str> = vec![ctx.trajectory.task.as_str()];
    let users = super::actions::user_steps(ctx);
    texts.extend(users[..users.partition_point(|&u| u < i)].iter().map(|&u| ctx.trajectory.steps[u].content.as_str()));
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for t in texts {
        for c in SHARE_OF.captures_iter(t) {
            let words: Vec<String> = c[1].split_whitespace().map(stem).collect();
            if !out.iter().any(|(_, w)| *w == words) {
                out.push((c[1].to_string(), words));
            }
        }
    }
    out
}

/// A share worked out over the wrong whole (`wrong_statistic`): step `i` (an agent's call or
/// message) divides by a figure that an earlier tool output's record gives under one member,
/// while the person asked for a share of what another member of the same record counts, whose
/// figure differs. "What share of our Q3 signups came through referrals?", a funnel summary
/// `{"signups": 4800, "activated": 1530, …}`, then `612 / 1530 * 100`: "divides by 1530, which
/// step 7 gives as activated, but the user asked for a share of signups, which step 7 gives as
/// 4800". The whole's member is the one numeric member whose name's words are all among the asked
/// whole's words (`signups` for "our Q3 2026 signups"; exactly one such member); the divisor must be
/// another numeric member's value of that record (any other divisor is not read). The first such
/// step only; tool outputs of the last 60 steps.
pub(super) fn wrong_base(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let step = &ctx.trajectory.steps[i];
    if !matches!(step.kind, StepKind::Message | StepKind::ToolCall)
        || super::actions::is_human(step)
        || super::is_outside_agent(&step.agent)
        || !step.content.contains(['/', '÷'])
    {
        return;
    }
    let text = written(step);
    let text = text.as_ref();
    let divisions = divisions(text);
    if divisions.is_empty() {
        return;
    }
    let wholes = asked_wholes(ctx, i);
    if wholes.is_empty() {
        return;
    }
    for r in (i.saturating_sub(60)..i).rev() {
        let s = &ctx.trajectory.steps[r];
        if s.kind != StepKind::ToolResult || !s.content.contains('{') {
            continue;
        }
        let Some(json) = super::grounding::json_of(&s.content) else { continue };
        let mut objects = vec![&json];
        let mut k = 0;
        while k < objects.len() && objects.len() < 64 {
            match objects[k] {
                serde_json::Value::Object(m) => objects.extend(m.values().filter(|v| v.is_object())),
                serde_json::Value::Array(a) => objects.extend(a.iter().filter(|v| v.is_object())),
                _ => {}
            }
            k += 1;
        }
        for o in &objects {
            let serde_json::Value::Object(m) = o else { continue };
            let numbers: Vec<(&str, f64)> =
                m.iter().filter_map(|(k, v)| Some((k.as_str(), v.as_f64()?))).filter(|(_, v)| *v > 0.0).collect();
            if numbers.len() < 2 {
                continue;
            }
            for (asked, whole) in &wholes {
                let of_whole: Vec<&(&str, f64)> = numbers.iter().filter(|(k, _)| names_whole(k, whole)).collect();
                let [(whole_key, whole_value)] = of_whole.as_slice() else { continue };
                // The asked whole divided by somewhere in the run: the share was worked out, and
                // another division is an aside (a sub-group's rate, revenue per user).
                if divides_by_anywhere(ctx, *whole_value) {
                    continue;
                }
                for &(n, d) in &divisions {
                    // A share is a part of its whole: a dividend above the divisor is a rate.
                    if n > d || (d - whole_value).abs() < 1e-9 {
                        continue;
                    }
                    let Some((other, _)) = numbers.iter().find(|(k, v)| k != whole_key && (v - d).abs() < 1e-9) else {
                        continue;
                    };
                    // The divisor is the whole of another record of the output (a sibling region's
                    // signups): the agent read another record, which this rule does not judge.
                    if objects.iter().any(|o| whole_values(o, whole).any(|w| (w - d).abs() < 1e-9)) {
                        continue;
                    }
                    out.push(finding(
                        Signal::WrongStatistic,
                        weights::WRONG_STATISTIC,
                        crate::prose![
                            format!("divides by {}, which step ", figure(d)),
                            crate::diagnosis::Part::Step(r),
                            format!(
                                " gives as {other}, but the user asked for a share of {asked}, which that step gives as {} ({whole_key})",
                                figure(*whole_value)
                            )
                        ],
                    ));
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_read_from_printed_text_and_assigned_names_not_subscripts() {
        let l = |s: &str| named(&CALL.replace_all(s, "("));
        assert_eq!(l(r#"print("median_oneway_min =", round(cyc["oneway_min"].mean(), 1))"#), vec![Statistic::Median]);
        assert_eq!(l("median_age = df.age.mean()"), vec![Statistic::Median]);
        assert_eq!(l(r#"print(f"Average: {df['x'].median():.1f}")"#), vec![Statistic::Mean]);
        // A column named "median_income" is a subscript, not the result's name.
        assert!(l(r#"x = df["median_income"].mean()"#).is_empty());
        assert_eq!(l(r#"print("mean of medians", np.mean(m))"#), vec![Statistic::Mean]);
    }
}
