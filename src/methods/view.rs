//! The text a judge is shown: steps with explicit 0-based step numbers, so a model never has to
//! count (the original Who&When prompts made it count, and it miscounted).
//!
//! Three granularities: [`full`] (header and the whole content), [`decision`] (the hierarchy's
//! key decision with the values a step introduces and uses) and [`brief`] (one clipped line).

use std::ops::Range;

use crate::hierarchy::Hierarchy;
use crate::model::{Step, Trajectory};
use crate::text;

/// The header of a step: `[step 3] WebSurfer (tool_result)`, a delegation with ` -> Target`.
pub fn header(s: &Step) -> String {
    let to = s.delegate_to.as_deref().map(|t| format!(" -> {t}")).unwrap_or_default();
    format!("[step {}] {} ({}{to})", s.index, s.agent, s.kind)
}

/// A step in full: its header, then its content (terminal escapes removed).
pub fn full(s: &Step) -> String {
    format!("{}:\n{}", header(s), text::sanitize(s.content.trim()))
}

/// A step in full up to `max` characters of content; a longer content is cut with a note of how
/// much was left out.
pub fn capped(s: &Step, max: usize) -> String {
    let content = text::sanitize(s.content.trim());
    let n = content.chars().count();
    if n <= max {
        return format!("{}:\n{content}", header(s));
    }
    let kept: String = content.chars().take(max).collect();
    format!("{}:\n{kept}\n[… {} more characters]", header(s), n - max)
}

/// A step's key decision: header, action, the hierarchy's decision line, flags, and the values it
/// introduces (ECHO L2).
pub fn decision(t: &Trajectory, h: &Hierarchy, i: usize) -> String {
    let s = &h.steps[i];
    let flags = s.flags.names();
    let flags = if flags.is_empty() { String::new() } else { format!(" [{}]", flags.join(", ")) };
    let values = if s.introduces.is_empty() {
        String::new()
    } else {
        let v: Vec<&str> = s.introduces.iter().take(6).map(String::as_str).collect();
        format!(" (new values: {})", v.join(", "))
    };
    format!("{} {}: {}{flags}{values}", header(&t.steps[i]), s.action.as_str(), s.decision)
}

/// A step as one short line: header, action and the decision clipped to `max` characters.
pub fn brief(t: &Trajectory, h: &Hierarchy, i: usize, max: usize) -> String {
    let s = &h.steps[i];
    let flags = s.flags.names();
    let flags = if flags.is_empty() { String::new() } else { format!(" [{}]", flags.join(", ")) };
    format!("{} {}: {}{flags}", header(&t.steps[i]), s.action.as_str(), text::clip(&s.decision, max))
}

/// The steps of `range` in full, separated by blank lines (the Who&When log form).
pub fn log(t: &Trajectory, range: Range<usize>) -> String {
    let end = range.end.min(t.steps.len());
    t.steps[range.start.min(end)..end].iter().map(full).collect::<Vec<_>>().join("\n\n")
}
