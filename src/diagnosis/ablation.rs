//! Ablations: components of a method that can be switched off, so that the papers' ablation
//! tables can be reproduced with any judge (`falat eval --ablate hierarchy,pruning`).
//!
//! Each component belongs to one or more methods; switching off a component a method does not
//! have leaves that method unchanged. What "off" means for each is stated on its variant and in
//! `docs/METHODS.md`.

use std::collections::BTreeSet;
use std::fmt;

use crate::diagnosis::{Method, UnknownName};

/// A component of FALAT, ECHO or DeFA that an ablation switches off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Component {
    /// FALAT: the coarse-to-fine search over `M` (recall looks at every step, not at the
    /// suspicious phases first). ECHO: the L1-L4 hierarchical context (analysts see the fixed
    /// ±1-turn window of ECHO A.2 instead).
    Hierarchy,
    /// FALAT: the task-conditioned prior `π` is withheld from every later stage.
    Prior,
    /// FALAT: pruning by transition labels (every recalled candidate goes to verification).
    Pruning,
    /// FALAT: verification (the strongest live candidate is named, no criterion is checked).
    Verification,
    /// FALAT: local re-search (the verified step is final).
    Research,
    /// ECHO: decoupled agent and step analyses (one unified analysis names both).
    Decoupling,
    /// ECHO: the panel and its consensus vote (one general analyst decides).
    Consensus,
    /// DeFA: segmentation (the whole trajectory is one segment).
    Segmentation,
    /// DeFA: the event dependency graph (recall and propagation see no relations).
    Graph,
    /// DeFA: the failure propagation graph (adjudication sees the candidates only).
    Propagation,
}

impl Component {
    /// Every component, in table order.
    pub const ALL: [Component; 10] = [
        Component::Hierarchy,
        Component::Prior,
        Component::Pruning,
        Component::Verification,
        Component::Research,
        Component::Decoupling,
        Component::Consensus,
        Component::Segmentation,
        Component::Graph,
        Component::Propagation,
    ];

    /// The name used by `--ablate`.
    pub fn as_str(self) -> &'static str {
        match self {
            Component::Hierarchy => "hierarchy",
            Component::Prior => "prior",
            Component::Pruning => "pruning",
            Component::Verification => "verification",
            Component::Research => "research",
            Component::Decoupling => "decoupling",
            Component::Consensus => "consensus",
            Component::Segmentation => "segmentation",
            Component::Graph => "graph",
            Component::Propagation => "propagation",
        }
    }

    /// Parses [`Component::as_str`] (case-insensitive; `re-search` is accepted for `research`).
    pub fn parse(s: &str) -> Option<Component> {
        let s = s.trim().to_ascii_lowercase().replace('-', "");
        Component::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The methods that have this component.
    pub fn methods(self) -> &'static [Method] {
        match self {
            Component::Hierarchy => &[Method::Falat, Method::Echo],
            Component::Prior | Component::Pruning | Component::Verification | Component::Research => &[Method::Falat],
            Component::Decoupling | Component::Consensus => &[Method::Echo],
            Component::Segmentation | Component::Graph | Component::Propagation => &[Method::Defa],
        }
    }

    /// Parses a comma-separated list (`hierarchy,pruning`).
    ///
    /// # Errors
    /// [`UnknownName::Component`] for the first unknown name, with the known ones.
    pub fn parse_list(s: &str) -> Result<Vec<Component>, UnknownName> {
        s.split(',')
            .filter(|x| !x.trim().is_empty())
            .map(|x| {
                Component::parse(x).ok_or_else(|| UnknownName::Component {
                    name: x.trim().to_string(),
                    known: Component::ALL.iter().map(|c| c.as_str()).collect(),
                })
            })
            .collect()
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The set of components switched off for a run (empty: the method as its paper gives it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Ablations(BTreeSet<Component>);

impl Ablations {
    /// No component switched off.
    pub fn none() -> Ablations {
        Ablations::default()
    }

    /// One component switched off.
    pub fn of(c: Component) -> Ablations {
        Ablations(BTreeSet::from([c]))
    }

    /// Whether `c` is switched off.
    pub fn off(&self, c: Component) -> bool {
        self.0.contains(&c)
    }

    /// Whether nothing is switched off.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The components switched off, in table order.
    pub fn iter(&self) -> impl Iterator<Item = Component> + '_ {
        self.0.iter().copied()
    }

    /// The label of an ablation row: `full` or `-hierarchy` (`-a-b` for several).
    pub fn label(&self) -> String {
        if self.0.is_empty() { "full".into() } else { self.0.iter().map(|c| format!("-{c}")).collect::<String>() }
    }
}

impl FromIterator<Component> for Ablations {
    fn from_iter<I: IntoIterator<Item = Component>>(iter: I) -> Ablations {
        Ablations(iter.into_iter().collect())
    }
}

/// The rows of an ablation table for `method`: the full method first, then one row per listed
/// component the method has, each with only that component off.
pub fn rows(method: Method, components: &[Component]) -> Vec<Ablations> {
    let mut out = vec![Ablations::none()];
    for &c in components {
        if c.methods().contains(&method) && !out.contains(&Ablations::of(c)) {
            out.push(Ablations::of(c));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_rows_follow_the_method() {
        assert_eq!(
            Component::parse_list("hierarchy, re-search,Pruning"),
            Ok(vec![Component::Hierarchy, Component::Research, Component::Pruning])
        );
        assert_eq!(
            Component::parse_list("hierarchy,nope"),
            Err(UnknownName::Component { name: "nope".into(), known: Component::ALL.map(Component::as_str).to_vec() })
        );
        assert_eq!(
            Component::parse_list("nope").unwrap_err().to_string(),
            "unknown component \"nope\" (known: hierarchy, prior, pruning, verification, research, decoupling, consensus, segmentation, graph, propagation)"
        );
        let all = Component::ALL;
        let labels = |m| rows(m, &all).iter().map(Ablations::label).collect::<Vec<_>>();
        assert_eq!(labels(Method::Falat), ["full", "-hierarchy", "-prior", "-pruning", "-verification", "-research"]);
        assert_eq!(labels(Method::Echo), ["full", "-hierarchy", "-decoupling", "-consensus"]);
        assert_eq!(labels(Method::Defa), ["full", "-segmentation", "-graph", "-propagation"]);
        assert_eq!(labels(Method::Random), ["full"]);
        let two: Ablations = [Component::Graph, Component::Segmentation].into_iter().collect();
        assert_eq!(two.label(), "-segmentation-graph");
        assert!(two.off(Component::Graph) && !two.off(Component::Pruning));
    }
}
