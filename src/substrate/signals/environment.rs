//! A cluster change run against another environment than the one it is for: `helm upgrade
//! ingest-worker ./chart -f deploy/values-staging.yaml` with no `--kube-context`, while the
//! context list the agent printed marks `gke_acme-prod_europe-west1_prod-1` as the current one.
//! The staging values land on production. docs/METHODS.md, "Targets".

use super::shell::{self, Command};
use super::{Context, call_command, finding, weights};
use crate::diagnosis::{Finding, Part, Signal};
use crate::model::StepKind;

/// How many steps back the current context is looked for.
const WINDOW: usize = 80;

/// The environments a name can mark, each with the words that mark it.
const ENVIRONMENTS: [(&str, &[&str]); 4] = [
    ("production", &["prod", "production", "prd", "live"]),
    ("staging", &["staging", "stg", "stage"]),
    ("development", &["dev", "development"]),
    ("QA", &["qa", "uat"]),
];

/// The environments the words of `text` mark (split at anything but letters and digits), each
/// once, in the order of [`ENVIRONMENTS`].
fn environments(text: &str) -> Vec<&'static str> {
    let words: Vec<String> = text.split(|c: char| !c.is_ascii_alphanumeric()).map(str::to_ascii_lowercase).collect();
    ENVIRONMENTS
        .iter()
        .filter(|(_, marks)| words.iter().any(|w| marks.contains(&w.as_str())))
        .map(|(name, _)| *name)
        .collect()
}

/// Whether a command changes what runs in a cluster (`helm upgrade|install|rollback|uninstall`,
/// `kubectl apply|delete|scale|patch|set|edit|replace|create|rollout restart|rollout undo`),
/// and whether it names its context (`--kube-context`, `--context`).
fn cluster_change(c: &Command) -> Option<bool> {
    let inv = c.invocation()?;
    let args: Vec<&str> = inv.args.iter().map(|w| w.text.as_str()).collect();
    // The first word that is neither an option nor the value of one (`--context stg-1`).
    let takes_value = ["-n", "--namespace", "--context", "--kube-context", "--kubeconfig", "-f", "--values", "-o"];
    let mut sub = "";
    let mut k = 0;
    while let Some(a) = args.get(k) {
        if takes_value.contains(a) {
            k += 2;
        } else if a.starts_with('-') {
            k += 1;
        } else {
            sub = a;
            break;
        }
    }
    let changes = match inv.program {
        "helm" => matches!(sub, "upgrade" | "install" | "rollback" | "uninstall" | "delete"),
        "kubectl" => {
            matches!(sub, "apply" | "delete" | "scale" | "patch" | "set" | "edit" | "replace" | "create")
                || sub == "rollout" && args.iter().any(|a| matches!(*a, "restart" | "undo"))
        }
        _ => false,
    };
    let named = args
        .iter()
        .any(|a| a.starts_with("--kube-context") || a.starts_with("--context") || a.starts_with("--kubeconfig"));
    changes.then_some(named)
}

/// The current context a tool output shows: the row of a `kubectl config get-contexts` table
/// marked `*`, or the one line `kubectl config current-context` prints.
fn current_context(call: Option<&str>, output: &str) -> Option<String> {
    let star = output.lines().find_map(|l| {
        let rest = l.trim_start().strip_prefix('*')?;
        rest.split_whitespace().next().map(str::to_string)
    });
    let asked = call.is_some_and(|c| c.contains("current-context"));
    star.filter(|_| call.is_some_and(|c| c.contains("get-contexts")))
        .or_else(|| asked.then(|| output.trim().lines().next().map(|l| l.trim().to_string())).flatten())
}

/// The context the last call of step `i`'s agent before it (within [`WINDOW`] steps) named with
/// `--context`/`--kube-context` (`--context X` or `--context=X`), with that call's step.
fn named_context_before(ctx: &Context<'_>, i: usize) -> Option<(usize, String)> {
    let t = ctx.trajectory;
    (i.saturating_sub(WINDOW)..i).rev().find_map(|j| {
        let s = &t.steps[j];
        if s.kind != StepKind::ToolCall || s.agent != t.steps[i].agent {
            return None;
        }
        let line = call_command(t, j)?;
        let words: Vec<&str> = line.split_whitespace().collect();
        words.iter().enumerate().find_map(|(k, w)| {
            let value = match w.split_once('=') {
                Some(("--context" | "--kube-context", v)) => Some(v),
                _ if matches!(*w, "--context" | "--kube-context") => words.get(k + 1).copied(),
                _ => None,
            }?;
            let value = value.trim_matches(|c| c == '"' || c == '\'');
            (!value.is_empty()).then(|| (j, value.to_string()))
        })
    })
}

/// Step `i`, a shell call, changes what runs in a cluster ([`cluster_change`]) without naming
/// its context, while the last context the run showed as current (a `get-contexts` table's `*`
/// row, a `current-context` output, or a `use-context` call of the agent, within [`WINDOW`]
/// steps) marks one environment ([`environments`]) and the command's own words (a values file,
/// a namespace, a release name) mark another and not that one, or, when they mark none, the
/// context the agent's last call before it named does ([`named_context_before`]): the change
/// goes to the cluster of the current context, not the one the command was written for.
pub(super) fn other_environment_context(ctx: &Context<'_>, i: usize, out: &mut Vec<Finding>) {
    let t = ctx.trajectory;
    if t.steps[i].kind != StepKind::ToolCall {
        return;
    }
    let Some(line) = call_command(t, i) else { return };
    if !line.contains("helm") && !line.contains("kubectl") {
        return;
    }
    let Some(command) = shell::commands(&line).into_iter().find(|c| cluster_change(c) == Some(false)) else {
        return;
    };
    // The environment the command is for: its own words (a values file, a namespace), else the
    // context the agent's calls before it named (`kubectl --context gke_acme-prod… get deploy`).
    let mut meant = environments(&command.text);
    let mut named_before = None;
    if meant.is_empty()
        && let Some((j, name)) = named_context_before(ctx, i)
    {
        meant = environments(&name);
        named_before = Some((j, name));
    }
    if meant.len() != 1 {
        return;
    }
    // The latest current context before the call.
    let mut current = None;
    for j in (i.saturating_sub(WINDOW)..i).rev() {
        let s = &t.steps[j];
        if s.kind == StepKind::ToolCall
            && let Some(l) = call_command(t, j)
            && let Some(c) = shell::commands(&l).into_iter().rev().find(|c| c.text.contains("use-context"))
        {
            current = c.text.split_whitespace().last().map(|n| (j, n.to_string()));
            break;
        }
        if s.kind == StepKind::ToolResult {
            let call = (j > 0).then(|| call_command(t, j - 1)).flatten();
            if let Some(name) = current_context(call.as_deref(), &s.content) {
                current = Some((j, name));
                break;
            }
        }
    }
    let Some((shown, name)) = current else { return };
    let there = environments(&name);
    if there.len() != 1 || there == meant {
        return;
    }
    // The command is clipped shorter when the context named before is told too.
    let room = if named_before.is_some() { 40 } else { 70 };
    let mut parts = vec![
        Part::Text(format!(
            "runs `{}` with no context named, so it goes to the current one, {} ({}, step ",
            crate::text::clip(&command.text, room),
            crate::text::clip(&name, 50),
            there[0],
        )),
        Part::Step(shown),
    ];
    match &named_before {
        Some((j, _)) => parts.extend([
            Part::Text("); step ".into()),
            Part::Step(*j),
            Part::Text(format!(" named the {} one", meant[0])),
        ]),
        None => parts.push(Part::Text(format!("), while the command is written for {}", meant[0]))),
    }
    out.push(finding(Signal::ArgumentMismatch, weights::ARGUMENT_MISMATCH, crate::diagnosis::Prose::new(parts)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environments_and_the_current_context_are_read() {
        assert_eq!(environments("gke_acme-prod_europe-west1_prod-1"), ["production"]);
        assert_eq!(environments("helm upgrade w ./chart -f deploy/values-staging.yaml"), ["staging"]);
        assert!(environments("product-catalog devour").is_empty());
        let table = "CURRENT   NAME    CLUSTER\n          stg-1   stg-1\n*         prod-1  prod-1\n";
        assert_eq!(current_context(Some("kubectl config get-contexts"), table).as_deref(), Some("prod-1"));
        assert_eq!(current_context(Some("kubectl config current-context"), "prod-1\n").as_deref(), Some("prod-1"));
        let c = shell::commands("helm upgrade w ./chart -n ingest -f values-staging.yaml");
        assert_eq!(cluster_change(&c[0]), Some(false));
        let c = shell::commands("kubectl --context stg-1 -n ingest rollout restart deploy/w");
        assert_eq!(cluster_change(&c[0]), Some(true));
        let c = shell::commands("kubectl get pods");
        assert_eq!(cluster_change(&c[0]), None);
    }
}
