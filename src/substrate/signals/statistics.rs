//! Code that computes one statistic and names it another: `print("median =", x.mean())`.
//! docs/METHODS.md, "Instructions".

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
    // A call's arguments as JSON (`run_python({"code": "…"})`): the code is in its string values.
    let decoded = (step.kind == StepKind::ToolCall).then(|| super::call_strings(&step.content)).flatten();
    let code = decoded.as_deref().unwrap_or(&step.content);
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
