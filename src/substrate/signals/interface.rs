//! A file's interface, for a user who protects it rather than the file: "Don't change the public
//! API of gateway/ratelimit.py". Which protected paths a sentence scopes so
//! ([`interface_paths`]), and whether an edit of such a path changes a public definition of it
//! ([`changed_definition`]). docs/METHODS.md, "Instructions" (a change the user forbade).
//!
//! A definition is compared by what its callers depend on: a Python function by its decorators,
//! name, parameter names and defaults (not its annotations, comments or layout: a signature
//! spread over several lines is one); a Python module constant by its name; a definition of
//! another language by its header with whitespace and comments left out.

use std::sync::LazyLock;

use regex::Regex;

use crate::model::Trajectory;

/// Words that name a file's interface, followed (within its clause) by "of" or "in": "the public
/// API of", "the signature of `allow` in", "the exports of".
static INTERFACE_BEFORE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:api|apis|interfaces?|signatures?|exports|exported\s+(?:names|functions|symbols)|public\s+(?:functions|methods|classes|names|surface|definitions|symbols))\b[^,;]*?\b(?:of|in)\b[^,;]*$")
        .expect("a valid pattern")
});

/// The same after a path, as a possessive: "gateway/ratelimit.py's public API".
static INTERFACE_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[`'\x22]?['’]s\s+(?:public\s+|exported\s+)?(?:api|apis|interfaces?|signatures?|exports)\b")
        .expect("a valid pattern")
});

/// Where a clause of a sentence starts: after a comma, a semicolon, "and", "but", "or".
static CLAUSE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)[,;]|\b(?:and|but|or)\b").expect("a valid pattern"));

/// The paths of `paths` (lower case, as the prohibition holds them) whose interface, not their
/// text, `sentence` protects: an interface word and "of" / "in" before the path in its clause
/// ("don't change the public API of gateway/ratelimit.py", "the signature of `allow` in …"), or a
/// possessive after it ("gateway/ratelimit.py's public API"). Another path of the same sentence
/// ("Don't touch gateway/config.py and don't change the API of …") stays protected whole.
pub(super) fn interface_paths(sentence: &str, paths: &[String]) -> Vec<String> {
    let low = sentence.to_ascii_lowercase();
    let mut out = Vec::new();
    for p in paths {
        let Some(at) = low.find(p.as_str()) else { continue };
        let before = &sentence[..at];
        let clause = CLAUSE.find_iter(before).last().map_or(before, |m| &before[m.end()..]);
        let after = &sentence[at + p.len()..];
        if INTERFACE_BEFORE.is_match(clause) || INTERFACE_AFTER.is_match(after) {
            out.push(p.clone());
        }
    }
    out
}

/// A public definition's first line: a Python `def` / `class` (public unless its name starts
/// with one `_`; a dunder such as `__init__` or `__call__` is public) or module constant
/// (`UPPER_CASE =`); JavaScript / TypeScript `function`, `export`, or a class method (`name(…)
/// {`, `public name(`); a Rust `pub` item; a Go `func` or `type` with a capitalised name.
static DEFINITION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(?:(?:async\s+)?def\s+(?P<py>__\w+__|[A-Za-z]\w*)\s*\(|class\s+(?P<cls>[A-Za-z]\w*)\b",
        r"|(?P<konst>[A-Z][A-Z0-9_]*[A-Z0-9])\s*(?::[^=]+)?=[^=]",
        r"|export\s+(?:default\s+)?(?:declare\s+)?(?:async\s+)?(?:function\*?|class|const|let|var|interface|type|enum|abstract\s+class)\s+(?P<js>[A-Za-z$_]\w*)",
        r"|(?:async\s+)?function\*?\s+(?P<fun>[A-Za-z$]\w*)\s*\(",
        r"|(?:public\s+|static\s+|async\s+|readonly\s+)*(?P<method>[A-Za-z$]\w*)\s*(?:<[^>]*>)?\s*\([^)]*\)\s*(?::\s*[^{=;]+)?\{\s*$",
        r"|pub\s+(?:const\s+|unsafe\s+|async\s+|extern\s+\x22[^\x22]*\x22\s+)*(?:fn|struct|enum|trait|type|const|static|mod|union)\s+(?P<rs>[A-Za-z_]\w*)",
        r"|func\s+(?:\([^)]*\)\s*)?(?P<gofn>[A-Z]\w*)\s*\(|type\s+(?P<goty>[A-Z]\w*)\s",
        r")",
    ))
    .expect("a valid pattern")
});

/// Words that open a statement, not a method: `if (…) {`, `for (…) {`.
const NOT_METHODS: [&str; 8] = ["if", "for", "while", "switch", "catch", "with", "return", "function"];

/// A public definition found in a text: its name, the key it is compared by, and its header as
/// written (one line, spaces collapsed) for the finding.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Definition {
    name: String,
    key: String,
    header: String,
}

/// The text of a line without its trailing comment (`# …`, `// …` after a space).
fn code_of(line: &str) -> &str {
    [" #", "\t#", " //", "\t//"].iter().filter_map(|c| line.find(c)).min().map_or(line, |p| &line[..p])
}

/// The public definitions of `text` (an edit's old or new side).
fn definitions(text: &str) -> Vec<Definition> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = code_of(line).trim();
        let Some(c) = DEFINITION.captures(trimmed) else { continue };
        let python = c.name("py").is_some() || c.name("cls").is_some();
        let name = ["py", "cls", "konst", "js", "fun", "method", "rs", "gofn", "goty"]
            .iter()
            .find_map(|k| c.name(k))
            .map_or("", |m| m.as_str())
            .to_string();
        if c.name("method").is_some() && NOT_METHODS.contains(&name.as_str()) {
            continue;
        }
        if c.name("konst").is_some() {
            // A module constant: its name is what importers use. Indented, it is a class's or a
            // function's, which another definition already covers.
            if line.starts_with(char::is_whitespace) {
                continue;
            }
            out.push(Definition { key: name.clone(), header: trimmed.to_string(), name });
            continue;
        }
        // The header: this line and the next ones while a bracket is open, at most 12 lines.
        let mut header = String::new();
        let mut depth = 0i32;
        for l in lines[i..].iter().take(12) {
            let code = code_of(l).trim();
            header.push_str(code);
            header.push(' ');
            depth += code.matches(['(', '[']).count() as i32 - code.matches([')', ']']).count() as i32;
            if depth <= 0 {
                break;
            }
        }
        // The decorators right above it (`@property` turns a method into an attribute).
        let decorators: Vec<&str> =
            lines[..i].iter().rev().map(|l| code_of(l).trim()).take_while(|l| l.starts_with('@')).collect();
        let key = if python { python_key(&decorators, &name, &header) } else { compact(&header) };
        let written: Vec<&str> = decorators.iter().rev().copied().chain([header.as_str()]).collect();
        let header = written.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
        out.push(Definition { name, key, header });
    }
    out
}

/// Text without whitespace.
fn compact(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// A Python definition's key: its decorators, name and each parameter's name and default, the
/// annotations left out (`def allow(self, key: str) -> bool:` is `def allow(self, key):` to its
/// callers).
fn python_key(decorators: &[&str], name: &str, header: &str) -> String {
    let mut key: String = decorators.iter().rev().map(|d| compact(d)).collect::<Vec<_>>().join("");
    key.push_str(name);
    let Some(open) = header.find('(') else { return key };
    // The parameters: up to the bracket that closes the first one.
    let mut depth = 0i32;
    let mut params = String::new();
    for ch in header[open..].chars() {
        match ch {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
        params.push(ch);
        if depth == 0 {
            break;
        }
    }
    let inner = params.strip_prefix('(').and_then(|p| p.strip_suffix(')')).unwrap_or(&params);
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (k, ch) in inner.char_indices() {
        match ch {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    let params: Vec<String> = parts
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (head, default) = p.split_once('=').map_or((p, None), |(h, d)| (h, Some(compact(d))));
            let pname = head.split(':').next().unwrap_or(head).trim();
            match default {
                Some(d) => format!("{pname}={d}"),
                None => pname.to_string(),
            }
        })
        .collect();
    format!("{key}({})", params.join(","))
}

/// Two headers as a finding shows them, at most `n` characters each: from their start, or, when
/// they agree further than that, from a little before where they part (`…greeting: str = 'hi'`).
pub(super) fn shown_apart(a: &str, b: &str, n: usize) -> (String, String) {
    let same = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    if same + 8 <= n {
        return (crate::text::clip(a, n), crate::text::clip(b, n));
    }
    let from = same.saturating_sub(12);
    let tail = |s: &str| format!("…{}", crate::text::clip(&s.chars().skip(from).collect::<String>(), n));
    (tail(a), tail(b))
}

/// What an edit did to the interface of a path it changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum InterfaceChange {
    /// A public definition changed (its header before, and after when it is still there).
    Changed { before: String, after: Option<String> },
    /// The file was moved to another path: every importer breaks.
    Moved(String),
    /// The edit's old side cannot be read (a whole file written, a shell edit): it may have.
    Unknown,
}

/// The old and new text of call `c`'s edit of `path`: the `old_string`/`new_string` pairs of a JSON
/// edit (each of `MultiEdit`'s `edits` too), or the section of a patch (`*** Update File:`, a
/// unified diff's `+++ b/…`) whose file is `path`: its context and removed lines, its context and
/// added lines (a hunk header's `@@ def x():` anchor in both). `Err(to)` for a patch that moves
/// the file (`*** Move to: to`); `Ok(None)` when neither can be read.
fn sides(t: &Trajectory, c: usize, path: &str) -> Result<Option<(String, String)>, String> {
    let content = &t.steps[c].content;
    let args = super::call_arguments(content);
    let patch = args
        .as_ref()
        .and_then(|v| v.get("input").or_else(|| v.get("patch")))
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
        .or_else(|| content.contains("*** Begin Patch").then(|| content.to_string()));
    if let Some(patch) = patch.filter(|p| p.contains("*** ") || p.contains("+++ ")) {
        let same = |p: &str| {
            let p = p.trim().trim_start_matches("b/").trim_start_matches("./").to_ascii_lowercase();
            let path = path.to_ascii_lowercase();
            !p.is_empty() && (path == p || path.ends_with(&format!("/{p}")) || p.ends_with(&format!("/{path}")))
        };
        let (mut old, mut new) = (String::new(), String::new());
        let mut inside = false;
        for line in patch.lines() {
            let header = ["*** Update File: ", "*** Add File: ", "*** Delete File: ", "+++ "]
                .iter()
                .find_map(|h| line.strip_prefix(h));
            if let Some(p) = header {
                inside = same(p);
                continue;
            }
            if let Some(to) = line.strip_prefix("*** Move to: ") {
                if inside {
                    return Err(to.trim().to_string());
                }
                continue;
            }
            if !inside || line.starts_with("***") || line.starts_with("---") {
                continue;
            }
            if let Some(anchor) = line.strip_prefix("@@") {
                let anchor = match anchor.trim_start().starts_with('-') {
                    true => anchor.split_once("@@").map_or("", |(_, a)| a),
                    false => anchor,
                };
                for side in [&mut old, &mut new] {
                    side.push_str(anchor.trim());
                    side.push('\n');
                }
                continue;
            }
            match line.chars().next() {
                Some('-') => {
                    old.push_str(&line[1..]);
                    old.push('\n');
                }
                Some('+') => {
                    new.push_str(&line[1..]);
                    new.push('\n');
                }
                _ => {
                    let rest = line.strip_prefix(' ').unwrap_or(line);
                    for side in [&mut old, &mut new] {
                        side.push_str(rest);
                        side.push('\n');
                    }
                }
            }
        }
        return Ok(Some((old, new)));
    }
    let Some(args) = args else { return Ok(None) };
    let pairs = super::coding::edit_pairs(args);
    if pairs.is_empty() {
        return Ok(None);
    }
    let (mut old, mut new) = (String::new(), String::new());
    for (a, b) in pairs {
        old.push_str(&a);
        old.push('\n');
        new.push_str(&b);
        new.push('\n');
    }
    Ok(Some((old, new)))
}

/// Whether edit call `c` changes the interface of `path`, and how: a public definition of its old
/// side ([`definitions`]) that its new side no longer has, or has with another key (other
/// parameters or defaults, another decorator; for other languages another header), or a move of
/// the file. `None` when every public definition it touches stays as it was (a body rewritten
/// under the same `def`, a private helper renamed, annotations added, a comment on the `def`
/// line).
pub(super) fn changed_definition(t: &Trajectory, c: usize, path: &str) -> Option<InterfaceChange> {
    let (old, new) = match sides(t, c, path) {
        Err(to) => return Some(InterfaceChange::Moved(to)),
        Ok(None) => return Some(InterfaceChange::Unknown),
        Ok(Some(s)) => s,
    };
    let after = definitions(&new);
    for d in definitions(&old) {
        match after.iter().find(|a| a.name == d.name) {
            None => return Some(InterfaceChange::Changed { before: d.header, after: None }),
            Some(a) if a.key != d.key && !after.iter().any(|b| b.name == d.name && b.key == d.key) => {
                return Some(InterfaceChange::Changed { before: d.header, after: Some(a.header.clone()) });
            }
            Some(_) => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<String> {
        definitions(text).into_iter().map(|d| d.key).collect()
    }

    #[test]
    fn a_python_signature_is_its_names_and_defaults_over_any_layout() {
        assert_eq!(keys("def allow(self, key: str) -> bool:  # noqa: C901"), ["allow(self,key)"]);
        assert_eq!(keys("def allow(\n    self,\n    key,\n    cost=1,\n):\n    pass"), ["allow(self,key,cost=1)"]);
        assert_eq!(keys("    @property\n    def remaining(self):"), ["@propertyremaining(self)"]);
        assert_eq!(definitions("@property\ndef remaining(self):")[0].header, "@property def remaining(self):");
        assert_eq!(keys("def _bucket(self):\n    def __call__(self, key):"), ["__call__(self,key)"]);
        assert_eq!(keys("DEFAULT_WINDOW_S = 60\n    LIMIT = 3\nif x == 1:"), ["DEFAULT_WINDOW_S"]);
    }

    #[test]
    fn headers_that_agree_long_are_shown_from_where_they_part() {
        let (a, b) = shown_apart(
            "def greet(name: str, greeting: str = 'hello')",
            "def greet(name: str, greeting: str = 'hi')",
            30,
        );
        assert_eq!((a.as_str(), b.as_str()), ("…ng: str = 'hello')", "…ng: str = 'hi')"));
        let (a, b) = shown_apart("def allow(self, key):", "def allow(self, client_id):", 30);
        assert_eq!((a.as_str(), b.as_str()), ("def allow(self, key):", "def allow(self, client_id):"));
    }

    #[test]
    fn other_languages_are_compared_by_their_header() {
        assert_eq!(keys("pub const fn bucket(t: u64) -> u64 {"), ["pubconstfnbucket(t:u64)->u64{"]);
        assert_eq!(keys("  allow(key: string): boolean {\n  if (x) {"), ["allow(key:string):boolean{"]);
        assert_eq!(
            keys("func (l *Limiter) Allow(key string) bool {\nfunc helper() {"),
            ["func(l*Limiter)Allow(keystring)bool{"]
        );
        assert_eq!(keys("export function slugify(s) {"), ["exportfunctionslugify(s){"]);
    }

    #[test]
    fn the_interface_words_scope_the_path_of_their_clause() {
        let p = |s: &str| vec![s.to_string()];
        assert_eq!(
            interface_paths("Don't change the public API of gateway/ratelimit.py.", &p("gateway/ratelimit.py")),
            p("gateway/ratelimit.py")
        );
        assert_eq!(
            interface_paths(
                "Don't change the signature of `allow` in gateway/ratelimit.py",
                &p("gateway/ratelimit.py")
            ),
            p("gateway/ratelimit.py")
        );
        assert_eq!(
            interface_paths("Don't change gateway/ratelimit.py's public API.", &p("gateway/ratelimit.py")),
            p("gateway/ratelimit.py")
        );
        let two = vec!["gateway/config.py".to_string(), "gateway/ratelimit.py".to_string()];
        assert_eq!(
            interface_paths(
                "Don't touch gateway/config.py and don't change the public API of gateway/ratelimit.py.",
                &two
            ),
            p("gateway/ratelimit.py")
        );
        assert!(interface_paths("Don't touch gateway/ratelimit.py.", &p("gateway/ratelimit.py")).is_empty());
    }
}
