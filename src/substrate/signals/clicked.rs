//! A page opened for another place or thing of the same name than the one asked for: told to
//! "click the Wikipedia result for Portland, Maine", the web agent reports "I clicked 'Portland,
//! Oregon - Wikipedia'". Everything read from that page is about the wrong Portland.
//! docs/METHODS.md, "Targets".

use std::sync::LazyLock;

use regex::Regex;

use super::{Context, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// How many steps back the instruction is looked for.
const WINDOW: usize = 12;

/// What a web agent says it clicked or opened: `I clicked 'Portland, Oregon - Wikipedia'`.
/// Group 1 (or 2): the title.
static CLICKED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\bI (?:clicked|opened|selected)(?: on)? (?:the (?:link|result) )?(?:'([^'\n]{3,200})'|"([^"\n]{3,200})")"#)
        .unwrap()
});

/// A name with its qualifier: `Portland, Maine`, `Springfield, Illinois`, `Paris, Texas`.
/// Groups: the name, the qualifier.
static QUALIFIED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b([A-Z][a-z]+(?: [A-Z][a-z]+){0,2}), ([A-Z][a-z]+(?: [A-Z][a-z]+){0,2})\b").unwrap()
});

/// Step `i`, an agent's report that it clicked or opened a titled link ([`CLICKED`]), where the
/// title names something with its qualifier (`Portland, Oregon`) and the last instruction handed
/// to that agent (a delegation within [`WINDOW`] steps) names the same thing with another
/// qualifier (`Portland, Maine`) that the title does not hold.
pub(super) fn other_namesake_opened(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    let step = &t.steps[i];
    if step.kind == StepKind::ToolResult || super::actions::served_person(step) {
        return;
    }
    if !["licked", "pened", "elected"].iter().any(|w| step.content.contains(w)) {
        return;
    }
    let Some(c) = CLICKED.captures(&step.content) else { return };
    let Some(title) = c.get(1).or_else(|| c.get(2)).map(|m| m.as_str()) else { return };
    let Some(instruction) = (i.saturating_sub(WINDOW)..i)
        .rev()
        .find(|&j| t.steps[j].kind == StepKind::Delegation && t.steps[j].delegate_to.as_deref() == Some(&step.agent))
    else {
        return;
    };
    let asked = &t.steps[instruction].content;
    for got in QUALIFIED.captures_iter(title) {
        for want in QUALIFIED.captures_iter(asked) {
            if got[1] != want[1] || got[2] == want[2] || title.contains(&want[2]) {
                continue;
            }
            out.push(finding(
                Signal::ArgumentMismatch,
                weights::ARGUMENT_MISMATCH,
                prose![
                    format!("opens '{}', while the instruction at step ", crate::text::clip(title, 60)),
                    Part::Step(instruction),
                    format!(" asks for {}, {}: another {}", &want[1], &want[2], &want[1]),
                ],
            ));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clicked_title_and_qualified_names_are_read() {
        let c = CLICKED.captures("I clicked 'Portland, Oregon - Wikipedia'.").unwrap();
        assert_eq!(&c[1], "Portland, Oregon - Wikipedia");
        let q = QUALIFIED.captures("the Wikipedia result for Portland, Maine and read").unwrap();
        assert_eq!((&q[1], &q[2]), ("Portland", "Maine"));
    }
}
