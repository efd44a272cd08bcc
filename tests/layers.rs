//! The import graph between `src/`'s top-level modules has no cycle.
//!
//! Reads every `.rs` file under `src/`, drops comments, and collects the `crate::NAME` paths each
//! top-level module uses (including the items of `use crate::{a::…, b}` groups). The command line
//! and the terminal UI sit on top and may use anything, so they are left out. The test fails with
//! the modules of every cycle it finds, and with each edge of the cycle and the file that makes it.
//! Unit tests (files named `tests.rs` and a file's `#[cfg(test)] mod tests { … }` block, which ends it) may build
//! their fixtures with any layer and are not counted: they are not part of the library.
//! `docs/ARCHITECTURE.md` ("Layers") draws the intended order.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Modules allowed to import anything: they are the edges (arguments, terminal, files).
const ON_TOP: [&str; 4] = ["cli", "tui", "main", "lib"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source without `//` line comments (doc comments included), `/* */` block comments and the
/// contents of string literals, so that paths named in prose or strings do not count.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' && (i == 0 || b[i - 1] != b'\'') {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

fn ident_at(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// Top-level module names a piece of code refers to through `crate::`.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(pos) = rest.find("crate::") {
        let after = rest[pos + 7..].trim_start();
        if let Some(group) = after.strip_prefix('{') {
            // Items of the group at depth 1, each up to its first `::`, `,` or `}`.
            let mut depth = 1;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => start = true,
                    c if start && depth == 1 && (c.is_ascii_alphabetic() || c == '_') => {
                        found.insert(ident_at(&group[i..]).to_string());
                        start = false;
                    }
                    c if c.is_whitespace() => {}
                    _ => start = false,
                }
            }
        } else {
            let name = ident_at(after);
            if !name.is_empty() {
                found.insert(name.to_string());
            }
        }
        rest = &rest[pos + 7..];
    }
    found
}

/// `module -> {module it imports -> first file that does}` for the top-level modules of `src/`.
fn import_graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let modules: BTreeSet<String> = files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(&src).unwrap();
            let first = rel.components().next().unwrap().as_os_str().to_string_lossy().to_string();
            first.trim_end_matches(".rs").to_string()
        })
        .collect();
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel.components().next().unwrap().as_os_str().to_string_lossy().to_string();
        let module = first.trim_end_matches(".rs").to_string();
        if f.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = fs::read_to_string(f).unwrap();
        let library = text.split("\n#[cfg(test)]\nmod tests {").next().unwrap_or_default();
        let code = code_only(library);
        let edges = graph.entry(module.clone()).or_default();
        for target in crate_paths(&code) {
            if target != module && modules.contains(&target) {
                edges.entry(target).or_insert_with(|| rel.display().to_string());
            }
        }
    }
    graph
}

/// Strongly connected components with more than one module (Tarjan, by hand to keep the test
/// free of the library's own graph code).
fn cycles(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    let mut g = petgraph::graph::DiGraph::<&str, ()>::new();
    let mut node = BTreeMap::new();
    for m in graph.keys() {
        node.insert(m.as_str(), g.add_node(m.as_str()));
    }
    for (m, edges) in graph {
        for t in edges.keys() {
            if let (Some(&a), Some(&b)) = (node.get(m.as_str()), node.get(t.as_str())) {
                g.add_edge(a, b, ());
            }
        }
    }
    petgraph::algo::tarjan_scc(&g)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut names: Vec<String> = c.iter().map(|&n| g[n].to_string()).collect();
            names.sort();
            names
        })
        .collect()
}

#[test]
fn top_level_modules_import_each_other_without_a_cycle() {
    let mut graph = import_graph();
    graph.retain(|m, _| !ON_TOP.contains(&m.as_str()));
    let found = cycles(&graph);
    let mut msg = String::new();
    for cycle in &found {
        msg.push_str(&format!("cycle: {}\n", cycle.join(", ")));
        for m in cycle {
            for (t, file) in &graph[m] {
                if cycle.contains(t) {
                    msg.push_str(&format!("  {m} -> {t}  (src/{file})\n"));
                }
            }
        }
    }
    assert!(found.is_empty(), "import cycles between top-level modules of src/:\n{msg}");
}

#[test]
fn the_scanner_sees_grouped_and_plain_paths_and_skips_comments() {
    let code = code_only(
        "use crate::{judge::{Context, X}, rank};\n// crate::report\nlet s = \"crate::eval\";\nfn f() { crate::graph::walk(); }",
    );
    let found: Vec<String> = crate_paths(&code).into_iter().collect();
    assert_eq!(found, ["graph", "judge", "rank"]);
}
