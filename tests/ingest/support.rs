//! Helpers the loader tests of `tests/ingest.rs` and its modules share: where a fixture is,
//! loading it, and the projections of a trajectory the assertions compare.

use std::path::{Path, PathBuf};

use falat::ingest::Loaded;
use falat::ingest::fs::load_path;
use falat::model::{Link, LinkKind, SourceFormat, StepKind, Trajectory};

/// `tests/fixtures/DIR/REL` (`dir` empty for `tests/fixtures` itself).
pub fn fixture_in(dir: &str, rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(dir).join(rel)
}

/// A fixture loaded as `falat inspect` would, panicking with the load error.
pub fn load_fixture(dir: &str, rel: &str) -> Loaded {
    load_path(&fixture_in(dir, rel), None).unwrap_or_else(|e| panic!("{e}"))
}

/// The single trajectory of a fixture, checking the detected format and, when `clean`, that
/// loading it gave no diagnostic.
pub fn one_in(dir: &str, rel: &str, format: SourceFormat, clean: bool) -> Trajectory {
    let loaded = load_fixture(dir, rel);
    assert_eq!(loaded.format, format, "{rel}");
    if clean {
        assert!(loaded.diagnostics.is_empty(), "{rel}: {:?}", loaded.diagnostics);
    }
    assert_eq!(loaded.trajectories.len(), 1, "{rel}");
    loaded.trajectories.into_iter().next().unwrap()
}

/// The kind of every step.
pub fn kinds(t: &Trajectory) -> Vec<StepKind> {
    t.steps.iter().map(|s| s.kind).collect()
}

/// The agent of every step.
pub fn step_agents(t: &Trajectory) -> Vec<&str> {
    t.steps.iter().map(|s| s.agent.as_str()).collect()
}

/// `(agent, kind)` of every step.
pub fn shape(t: &Trajectory) -> Vec<(&str, StepKind)> {
    t.steps.iter().map(|s| (s.agent.as_str(), s.kind)).collect()
}

/// The steps flagged as errors.
pub fn errors(t: &Trajectory) -> Vec<usize> {
    t.steps.iter().filter(|s| s.is_error).map(|s| s.index).collect()
}

/// Whether the trajectory has this link.
pub fn has(t: &Trajectory, from: usize, to: usize, kind: LinkKind) -> bool {
    t.links.contains(&Link { from, to, kind })
}

/// How many links of one kind.
pub fn count(t: &Trajectory, kind: LinkKind) -> usize {
    t.links.iter().filter(|l| l.kind == kind).count()
}

/// The links of one kind as `(from, to)` pairs, sorted.
pub fn links_of(t: &Trajectory, kind: LinkKind) -> Vec<(usize, usize)> {
    let mut l: Vec<(usize, usize)> = t.links.iter().filter(|l| l.kind == kind).map(|l| (l.from, l.to)).collect();
    l.sort();
    l
}

/// A step's `(input, output)` token counts.
pub fn tokens(t: &Trajectory, i: usize) -> Option<(u64, u64)> {
    t.steps[i].tokens.map(|k| (k.input, k.output))
}

/// Links other than parent links, sorted.
pub fn links(t: &Trajectory) -> Vec<(usize, usize, LinkKind)> {
    let mut out: Vec<_> =
        t.links.iter().filter(|l| l.kind != LinkKind::Parent).map(|l| (l.from, l.to, l.kind)).collect();
    out.sort();
    out
}
