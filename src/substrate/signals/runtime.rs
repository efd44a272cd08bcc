//! Code written for a newer language than the one the user stressed: an edit writes
//! `key.removeprefix(prefix)` (new in Python 3.9) while the task says the project "still supports
//! Python 3.8". The tests the agent then runs on its own, newer interpreter pass and prove nothing
//! about the old one. docs/METHODS.md, "Instructions".

use std::sync::LazyLock;

use regex::Regex;

use super::coding::edit_lines;
use super::constraints::{self, above, version_parts};
use super::{Context, call_error, edits, finding, result_of, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;
use crate::prose;

/// Python features by the release that added them: (pattern, the feature as named, the release).
/// From the "What's New In Python" documents of 3.9 to 3.12; each pattern matches code that uses
/// the feature and fails on an older interpreter (a method or module that does not exist there,
/// or syntax it does not parse).
const PYTHON_FEATURES: [(&str, &str, &str); 16] = [
    (r"\.removeprefix\(", "str.removeprefix", "3.9"),
    (r"\.removesuffix\(", "str.removesuffix", "3.9"),
    (r"\bfunctools\.cache\b|\bfrom functools import [^\n]*\bcache\b", "functools.cache", "3.9"),
    (r"\bmath\.lcm\(", "math.lcm", "3.9"),
    (r"\bimport zoneinfo\b|\bfrom zoneinfo import\b", "the zoneinfo module", "3.9"),
    (r"\bitertools\.pairwise\b|\bfrom itertools import [^\n]*\bpairwise\b", "itertools.pairwise", "3.10"),
    (r"\bzip\([^)\n]*\bstrict\s*=", "zip(strict=…)", "3.10"),
    (r"\.bit_count\(\)", "int.bit_count", "3.10"),
    (r"(?m)^\s*match\s+[^=\n]+:\s*$", "the match statement", "3.10"),
    (r"\bimport tomllib\b|\bfrom tomllib import\b", "the tomllib module", "3.11"),
    (r"\bexcept\*", "except*", "3.11"),
    (r"\bdatetime\.UTC\b|\bfrom datetime import [^\n]*\bUTC\b", "datetime.UTC", "3.11"),
    (r"\benum\.StrEnum\b|\bfrom enum import [^\n]*\bStrEnum\b", "enum.StrEnum", "3.11"),
    (r"\basyncio\.TaskGroup\b", "asyncio.TaskGroup", "3.11"),
    (r"\bitertools\.batched\b|\bfrom itertools import [^\n]*\bbatched\b", "itertools.batched", "3.12"),
    (r"\btyping\.override\b|\bfrom typing import [^\n]*\boverride\b", "typing.override", "3.12"),
];

/// One of [`PYTHON_FEATURES`], compiled.
struct Feature {
    /// Matches code that uses it.
    pattern: Regex,
    /// The feature as named ("str.removeprefix").
    name: &'static str,
    /// The release that added it ("3.9") and its version parts.
    release: &'static str,
    parts: Vec<u32>,
}

/// [`PYTHON_FEATURES`] compiled.
static FEATURES: LazyLock<Vec<Feature>> = LazyLock::new(|| {
    PYTHON_FEATURES
        .iter()
        .map(|(p, name, v)| Feature {
            pattern: Regex::new(p).unwrap(),
            name,
            release: v,
            parts: version_parts(v).unwrap_or_default(),
        })
        .collect()
});

/// The code edit call `c` writes: the lines it adds ([`edit_lines`]), else, for an editor call
/// whose text holds no new text, the snippet of the file its result shows (the editor's `cat -n`
/// of the edited region, line numbers off).
fn written_code(ctx: &Context<'_>, c: usize) -> String {
    let t = ctx.trajectory;
    if let Some((_, added)) = edit_lines(t, c).filter(|(_, a)| !a.is_empty()) {
        return added.join("\n");
    }
    let Some(r) = result_of(ctx, c) else { return String::new() };
    t.steps[r]
        .content
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let digits = l.len() - l.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            (digits > 0 && l[digits..].starts_with('\t')).then(|| &l[digits + 1..])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Step `e`, an edit of a Python file (`.py`, or an editor call whose written code is Python by
/// its features), writes code that uses a feature of a Python release ([`PYTHON_FEATURES`]) above
/// the Python version a turn of the served user before it stresses (a sentence with
/// [`constraints::VERSION`] naming Python and [`constraints::STRESSED`] words: "dotfig still
/// supports Python 3.8 … keep the fix compatible with 3.8"). The first such edit is where the
/// constraint is broken; the agent's checks on a newer interpreter do not see it.
pub(super) fn newer_than_stressed(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if t.steps[e].kind != StepKind::ToolCall || !edits(t, e) || call_error(ctx, e).is_some() {
        return;
    }
    // The lowest Python version the user stressed.
    let stressed = constraints::stressed_versions(ctx, e)
        .into_iter()
        .filter(|s| s.name.eq_ignore_ascii_case("python"))
        .reduce(|low, s| if above(&low.parts, &s.parts) { s } else { low });
    let Some(constraints::Stressed { step: u, version, parts, .. }) = stressed else { return };
    let code = written_code(ctx, e);
    let Some((m, name, release)) = FEATURES
        .iter()
        .filter(|f| above(&f.parts, &parts))
        .find_map(|f| f.pattern.find(&code).map(|m| (m, f.name, f.release)))
    else {
        return;
    };
    let line = code[..m.start()].rfind('\n').map_or(0, |k| k + 1);
    let end = code[m.end()..].find('\n').map_or(code.len(), |k| m.end() + k);
    out.push(finding(
        Signal::IgnoredResult,
        weights::MISREAD,
        prose![
            format!(
                "writes `{}`: {name} is new in Python {release}, but the user stressed Python {version} at step ",
                crate::text::clip(code[line..end].trim(), 60)
            ),
            Part::Step(u)
        ],
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_feature_pattern_matches_its_use_and_not_an_older_spelling() {
        let hit = |code: &str| FEATURES.iter().find(|f| f.pattern.is_match(code)).map(|f| f.name);
        assert_eq!(hit("    return key.removeprefix(prefix)"), Some("str.removeprefix"));
        assert_eq!(hit("for a, b in zip(xs, ys, strict=True):"), Some("zip(strict=…)"));
        assert_eq!(hit("    match command.split():"), Some("the match statement"));
        assert_eq!(hit("import tomllib"), Some("the tomllib module"));
        // The 3.8 spellings of the same work.
        assert_eq!(hit("    return key[len(prefix):] if key.startswith(prefix) else key"), None);
        assert_eq!(hit("match = re.match(r'x', s)"), None);
        assert_eq!(hit("for a, b in zip(xs, ys):"), None);
    }
}
