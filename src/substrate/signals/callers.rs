//! An edit that breaks callers the agent had seen (docs/METHODS.md, "Coding-agent sessions"): a
//! function's definition narrowed (a parameter dropped), renamed or removed, while an earlier
//! output of the session (a search's `path:line:text` lines) shows calls of it in other files that
//! the new definition no longer accepts, and the run never edits those files.
//!
//! Reads the edit's removed and added lines ([`super::coding::edit_lines`]) and the outputs'
//! search lines only: `def`, `function`, `fn` and `func` definitions, so Python, JavaScript and
//! TypeScript, Rust and Go read alike; no tool, repository or file is named.

use std::sync::LazyLock;

use regex::Regex;

use super::coding::{edit_lines, edited_files, reverted};
use super::{Context, call_command, call_error, edits, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::{StepKind, Trajectory};
use crate::prose;

/// How many steps before the edit the search that shows the callers is looked for, and how far
/// around it an edit of a caller is looked for.
const WINDOW: usize = 200;

/// A function's definition as written: its name, its parameters' names in order (not `self`,
/// `cls`, `this`, nor the `*` and `/` markers), and whether it takes any number of positional
/// arguments (`*args`, `...rest`, Go's `...T`) or of keyword arguments (`**kwargs`).
#[derive(Debug, Clone, PartialEq)]
struct Signature {
    name: String,
    params: Vec<String>,
    variadic: bool,
    keywords: bool,
}

/// The text between the parenthesis that opens at `open` (the byte after `(`) and its match,
/// with whether the match was found (a line cut before it is not).
fn balanced(text: &str, open: usize) -> (&str, bool) {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (k, ch) in text[open..].char_indices() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'' | '`') => quote = Some(ch),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') if depth == 0 => return (&text[open..open + k], ch == ')'),
            (None, ')' | ']' | '}') => depth -= 1,
            _ => {}
        }
    }
    (&text[open..], false)
}

/// The pieces of an argument or parameter list split at its top-level commas, trimmed, empty ones
/// left out.
fn top_level(list: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start, mut quote) = (Vec::new(), 0i32, 0, None::<char>);
    for (k, ch) in list.char_indices() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'' | '`') => quote = Some(ch),
            (None, '(' | '[' | '{' | '<') => depth += 1,
            (None, ')' | ']' | '}' | '>') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(list[start..k].trim());
                start = k + 1;
            }
            _ => {}
        }
    }
    out.push(list[start..].trim());
    out.into_iter().filter(|p| !p.is_empty()).collect()
}

/// The leading identifier of a text (letters, digits, `_`), `None` when it opens with none.
fn identifier(text: &str) -> Option<&str> {
    let end = text.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(text.len());
    (end > 0 && !text.starts_with(|c: char| c.is_ascii_digit())).then(|| &text[..end])
}

/// The functions a text defines (`def name(…)`, `async def`, `function name(…)`, `fn name<T>(…)`,
/// `func (r *T) Name(…)`), each with its whole parameter list; a definition whose list a line
/// cut before it closed is left out.
fn definitions(text: &str) -> Vec<Signature> {
    static DEF: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?:^|[^\w.])(?:def|function|fn|func)\s+(?:\([^()]*\)\s*)?([A-Za-z_]\w*)\s*(?:<[^<>()]*>)?\s*\(")
            .unwrap()
    });
    let mut out = Vec::new();
    for m in DEF.captures_iter(text) {
        let (Some(all), Some(name)) = (m.get(0), m.get(1)) else { continue };
        let (list, closed) = balanced(text, all.end());
        if !closed {
            continue;
        }
        let mut sig =
            Signature { name: name.as_str().to_string(), params: Vec::new(), variadic: false, keywords: false };
        for p in top_level(list) {
            let p = p.trim_start_matches('&').trim_start_matches("mut ").trim();
            if p == "*" || p == "/" {
                continue;
            }
            if p.starts_with("**") {
                sig.keywords = true;
                continue;
            }
            if p.starts_with('*') || p.starts_with("...") || p.contains("...") {
                sig.variadic = true;
                continue;
            }
            match identifier(p) {
                Some("self" | "cls" | "this") | None => {}
                Some(n) => sig.params.push(n.to_string()),
            }
        }
        out.push(sig);
    }
    out
}

/// One call of `name` on a line of code: its keyword arguments' names (`header=`), how many
/// positional arguments it passes, and whether that count is known (the call closes on the line
/// and spreads no list: `*rows`, `...args`).
#[derive(Debug)]
struct Call {
    keywords: Vec<String>,
    positional: usize,
    counted: bool,
}

/// The calls of `name` on one line of code (`name(` or `.name(` after no word character), not its
/// definitions.
fn calls(line: &str, name: &str) -> Vec<Call> {
    let mut out = Vec::new();
    let pat = format!("{name}(");
    let mut from = 0;
    while let Some(k) = line[from..].find(&pat) {
        let at = from + k;
        from = at + pat.len();
        let before = &line[..at];
        if before.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let head = before.trim_end();
        if ["def", "function", "fn", "func"].iter().any(|d| head.ends_with(d)) {
            continue;
        }
        let (list, closed) = balanced(line, from);
        let mut call = Call { keywords: Vec::new(), positional: 0, counted: closed };
        for a in top_level(list) {
            if a.starts_with('*') || a.starts_with("...") {
                call.counted = false;
            } else if let Some(n) = identifier(a)
                && let Some(rest) = a[n.len()..].trim_start().strip_prefix('=')
                && !rest.starts_with('=')
            {
                call.keywords.push(n.to_string());
            } else {
                call.positional += 1;
            }
        }
        out.push(call);
    }
    out
}

/// `n` and the noun, in the plural when `n` is not 1 ("1 file", "2 files").
fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// How the edit changes a definition: what the callers of the old one may now pass.
enum Change {
    /// The definition now takes these parameters; these were dropped.
    Narrowed { new: Signature, dropped: Vec<String> },
    /// The definition is gone, or now carries another name.
    Gone { renamed_to: Option<String> },
}

/// Whether `call` of the old definition breaks under `change`: it passes a dropped keyword
/// parameter (and the new definition takes no `**kwargs`), passes more positional arguments than
/// the new definition takes (and it takes no `*args`), or calls a name that is gone. The reason
/// (the keywords it passes that were dropped, or "N arguments"), or `None`.
fn breaks(call: &Call, change: &Change) -> Option<Vec<String>> {
    match change {
        Change::Gone { .. } => Some(Vec::new()),
        Change::Narrowed { new, dropped } => {
            let kw: Vec<String> = if new.keywords {
                Vec::new()
            } else {
                call.keywords.iter().filter(|k| dropped.contains(k)).cloned().collect()
            };
            if !kw.is_empty() {
                return Some(kw);
            }
            (call.counted && !new.variadic && call.positional > new.params.len())
                .then(|| vec![format!("{} arguments", call.positional)])
        }
    }
}

/// The search lines of an output: `path:line:text` (`grep -rn`, `rg -n`, `git grep -n`) or
/// `path:text`, the path with a file extension, `./` left off.
fn search_lines(text: &str) -> Vec<(&str, &str)> {
    static LINE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^(?:\./)?([\w./-]*\w\.\w+):(?:\d+[:-])?(.*)$").unwrap());
    text.lines()
        .filter_map(|l| {
            let c = LINE.captures(l)?;
            Some((c.get(1)?.as_str(), c.get(2)?.as_str()))
        })
        .collect()
}

/// Whether the paths `a` and `b` name the same file: one ends with the other at a folder boundary
/// (`/workspace/app/kestrel/cli.py` and `kestrel/cli.py`).
pub(super) fn same_file(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim_start_matches("./"), b.trim_start_matches("./"));
    let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    !short.is_empty()
        && long.ends_with(short)
        && (long.len() == short.len() || long[..long.len() - short.len()].ends_with('/'))
}

/// Whether call `j` changes the file at `path`: an edit ([`edits`]) whose files
/// ([`edited_files`]) include it, or a shell command that edits files and names it.
fn edits_path(t: &Trajectory, j: usize, path: &str) -> bool {
    if !edits(t, j) {
        return false;
    }
    if edited_files(t, j).iter().any(|f| same_file(f, path)) {
        return true;
    }
    call_command(t, j).is_some_and(|cmd| cmd.contains(path.trim_start_matches("./")))
}

/// The changes edit `e` makes to the definitions it removes: for each function its removed lines
/// define, how its added lines define it again (fewer parameters), under another name, or not at
/// all. A definition the added lines keep as it was is no change.
fn changes(t: &Trajectory, e: usize) -> Vec<(Signature, Change)> {
    let Some((removed, added)) = edit_lines(t, e) else { return Vec::new() };
    let (old_text, new_text) = (removed.join("\n"), added.join("\n"));
    let (old, new) = (definitions(&old_text), definitions(&new_text));
    let mut out = Vec::new();
    for o in old {
        if let Some(n) = new.iter().find(|n| n.name == o.name) {
            let dropped: Vec<String> = o.params.iter().filter(|p| !n.params.contains(p)).cloned().collect();
            if !dropped.is_empty() || n.params.len() < o.params.len() {
                out.push((o, Change::Narrowed { new: n.clone(), dropped }));
            }
        } else if !new_text.contains(o.name.as_str()) {
            // Renamed in place (the added lines define one other function) or removed.
            let renamed_to = (new.len() == 1).then(|| new[0].name.clone());
            out.push((o, Change::Gone { renamed_to }));
        }
    }
    out
}

/// Step `e`, an edit that applied (no error, not refused, not reverted by its agent), narrows a
/// function's definition (drops a parameter), renames it or removes it ([`changes`]), while an
/// output before it (within [`WINDOW`] steps) shows, in search lines ([`search_lines`]), calls of
/// it in other files that the new definition does not accept ([`breaks`]: a dropped keyword
/// passed, more arguments than it now takes, a name that is gone), and no edit of the session
/// within [`WINDOW`] steps, before or after it, changes those files. A later edit that defines the
/// function again so that the calls fit, or (for a function gone) defines it anywhere, clears it.
/// The checks after such an edit pass when they never call it the old way: the breakage is in
/// the files the agent saw and left.
pub(super) fn callers_broken(ctx: &Context<'_>, e: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if t.steps[e].kind != StepKind::ToolCall || !edits(t, e) || call_error(ctx, e).is_some() {
        return;
    }
    let changes = changes(t, e);
    if changes.is_empty() || super::refused_call(ctx, e) || reverted(ctx, e).is_some() {
        return;
    }
    let own = edited_files(t, e);
    let start = e.saturating_sub(WINDOW);
    let end = t.steps.len().min(e + 1 + WINDOW);
    for (old, change) in &changes {
        // A later edit that defines the function again: the calls are judged against it.
        let later = (e + 1..end).filter(|&j| edits(t, j)).find_map(|j| {
            let (_, added) = edit_lines(t, j)?;
            definitions(&added.join("\n")).into_iter().find(|d| d.name == old.name)
        });
        let change = match (later, change) {
            (Some(_), Change::Gone { .. }) => continue,
            (Some(n), Change::Narrowed { .. }) => {
                let dropped: Vec<String> = old.params.iter().filter(|p| !n.params.contains(p)).cloned().collect();
                Change::Narrowed { new: n, dropped }
            }
            (None, Change::Narrowed { new, dropped }) => {
                Change::Narrowed { new: new.clone(), dropped: dropped.clone() }
            }
            (None, Change::Gone { renamed_to }) => Change::Gone { renamed_to: renamed_to.clone() },
        };
        // A function gone that another edit of the session defines elsewhere was moved.
        if matches!(change, Change::Gone { .. })
            && (start..end).filter(|&j| j != e && edits(t, j)).any(|j| {
                edit_lines(t, j).is_some_and(|(_, a)| definitions(&a.join("\n")).iter().any(|d| d.name == old.name))
            })
        {
            continue;
        }
        for r in (start..e).rev() {
            let s = &t.steps[r];
            if s.kind != StepKind::ToolResult || !s.content.contains(old.name.as_str()) {
                continue;
            }
            let mut files: Vec<&str> = Vec::new();
            let mut passed: Vec<String> = Vec::new();
            for (path, text) in search_lines(&s.content) {
                if own.iter().any(|f| same_file(f, path)) || files.contains(&path) {
                    continue;
                }
                let broken: Vec<Vec<String>> =
                    calls(text, &old.name).iter().filter_map(|c| breaks(c, &change)).collect();
                if broken.is_empty() || (start..end).any(|j| j != e && edits_path(t, j, path)) {
                    continue;
                }
                files.push(path);
                for b in broken.into_iter().flatten() {
                    if !passed.contains(&b) {
                        passed.push(b);
                    }
                }
            }
            if files.is_empty() {
                continue;
            }
            let files_text = match files.len() {
                1 => files[0].to_string(),
                2 => format!("{} and {}", files[0], files[1]),
                n => format!("{}, {} and {} more", files[0], files[1], n - 2),
            };
            let name = &old.name;
            let what = match &change {
                Change::Narrowed { new, .. } => {
                    let kw: Vec<String> =
                        passed.iter().filter(|p| !p.ends_with(" arguments")).map(|p| format!("`{p}`")).collect();
                    let lost = if kw.is_empty() {
                        format!("which takes {} now", plural(new.params.len(), "argument"))
                    } else {
                        format!("dropping {}", kw.join(", "))
                    };
                    format!("narrows `{name}` to ({}), {lost}", new.params.join(", "))
                }
                Change::Gone { renamed_to: Some(n) } => format!("renames `{name}` to `{n}`"),
                Change::Gone { renamed_to: None } => format!("removes `{name}`"),
            };
            let keyword = passed.iter().any(|p| !p.ends_with(" arguments"));
            let verb = match (&change, keyword) {
                (Change::Narrowed { .. }, true) if passed.len() == 1 => "passing it",
                (Change::Narrowed { .. }, true) => "passing them",
                _ => "calling it",
            };
            out.push(finding(
                Signal::FailedAction,
                weights::FAILED_ACTION,
                prose![
                    format!("{what}; the search at step "),
                    Part::Step(r),
                    format!(" shows {files_text} {verb}, never edited")
                ],
            ));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(text: &str) -> Signature {
        definitions(text).remove(0)
    }

    #[test]
    fn definitions_read_the_parameters_of_each_language() {
        let py = sig(r#"def write_csv(self, rows, fh, header=None, *, dialect="excel", **kw):"#);
        assert_eq!(py.params, ["rows", "fh", "header", "dialect"]);
        assert!(py.keywords && !py.variadic);
        let go = sig("func (s *Store) Put(ctx context.Context, key string, opts ...Option) error {");
        assert_eq!(
            (go.name.as_str(), go.params.clone(), go.variadic),
            ("Put", vec!["ctx".to_string(), "key".to_string()], true)
        );
        let rs = sig("pub fn render<W: Write>(&mut self, rows: &[Row], out: W) -> Result<()> {");
        assert_eq!(rs.params, ["rows", "out"]);
        let ts = sig("export async function fetchUser(id: string, opts: Options = {}): Promise<User> {");
        assert_eq!(ts.params, ["id", "opts"]);
        // A list a line cut before it closed is no definition.
        assert!(definitions("def f(a, b,").is_empty());
    }

    #[test]
    fn calls_count_positional_arguments_and_name_keywords() {
        let c = calls("    write_csv(rows, out, header=cols, dialect=args.dialect)", "write_csv");
        assert_eq!(
            (c[0].keywords.clone(), c[0].positional, c[0].counted),
            (vec!["header".into(), "dialect".into()], 2, true)
        );
        // A method call is a call; a definition, a longer name and a spread list are not counted.
        assert_eq!(calls("self.store.put(ctx, k, v)", "put")[0].positional, 3);
        assert!(calls("def put(ctx, k):", "put").is_empty());
        assert!(calls("output(ctx)", "put").is_empty());
        assert!(!calls("put(*args)", "put")[0].counted);
        // Comparisons inside an argument are no keyword.
        assert_eq!(calls("check(a == b)", "check")[0].keywords, Vec::<String>::new());
    }

    #[test]
    fn a_call_breaks_only_when_the_new_definition_refuses_it() {
        let new = sig("def f(rows, fh):");
        let narrowed = Change::Narrowed { new, dropped: vec!["header".into()] };
        assert_eq!(breaks(&calls("f(r, fh, header=h)", "f")[0], &narrowed), Some(vec!["header".to_string()]));
        assert_eq!(breaks(&calls("f(r, fh)", "f")[0], &narrowed), None);
        assert_eq!(breaks(&calls("f(r, fh, h)", "f")[0], &narrowed), Some(vec!["3 arguments".to_string()]));
        // A definition that takes **kwargs accepts any keyword.
        let open = Change::Narrowed { new: sig("def f(rows, fh, **kw):"), dropped: vec!["header".into()] };
        assert_eq!(breaks(&calls("f(r, fh, header=h)", "f")[0], &open), None);
    }

    #[test]
    fn search_lines_read_grep_and_ripgrep_output() {
        let out = "./app/cli.py:112:    write_csv(rows, out)\nsrc/lib.rs:7:fn x() {}\nno match here\napp/x.py:print(1)";
        assert_eq!(
            search_lines(out),
            vec![("app/cli.py", "    write_csv(rows, out)"), ("src/lib.rs", "fn x() {}"), ("app/x.py", "print(1)")]
        );
        assert!(same_file("/workspace/app/cli.py", "app/cli.py"));
        assert!(!same_file("/workspace/myapp/cli.py", "app/cli.py"));
    }
}
