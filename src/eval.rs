//! Benchmark scoring (docs/DESIGN.md §7): exact agent and step accuracy, step accuracy within ±k, and
//! mean cost, per subset and method. The scoring and tables here are pure; [`benchmark`] loads
//! labelled folders (through [`crate::ingest::fs`]) and runs the methods over them, the one path
//! `falat eval`, the accuracy tests and library users share.
//!
//! Scoring is exact: integer step equality (0-based steps) and whole agent names compared
//! case-insensitively (the original Who&When scorer matched substrings, so step 1 matched 10).

pub mod benchmark;
pub mod fit;

pub use crate::rank::split::Part;
pub use benchmark::{Benchmark, Case, Judges, evaluate, variants};

use std::collections::BTreeMap;

use crate::diagnosis::ablation::Ablations;
use crate::diagnosis::{Diagnosis, Method};
use crate::model::GoldLabel;

/// One row of an evaluation table: a method, with the components of `ablations` switched off.
/// Displayed as its name: the method's (`falat`), or the method's with each component off
/// appended (`falat-hierarchy`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Variant {
    /// The method.
    pub method: Method,
    /// Components switched off; empty runs the method as its paper gives it.
    pub ablations: Ablations,
}

impl Variant {
    /// The method as its paper gives it.
    pub fn of(method: Method) -> Variant {
        Variant { method, ablations: Ablations::none() }
    }

    /// Parses [`Variant::name`]: a method's name, then `-component` for each component off.
    pub fn parse(name: &str) -> Option<Variant> {
        // Method names hold hyphens (`all-at-once`): take the longest that starts the name.
        let method =
            Method::ALL.into_iter().filter(|m| name.starts_with(m.as_str())).max_by_key(|m| m.as_str().len())?;
        let rest = &name[method.as_str().len()..];
        if rest.is_empty() {
            return Some(Variant::of(method));
        }
        let ablations = rest
            .strip_prefix('-')?
            .split('-')
            .map(crate::diagnosis::ablation::Component::parse)
            .collect::<Option<Ablations>>()?;
        Some(Variant { method, ablations })
    }

    /// The row's name (`falat`, `falat-hierarchy`).
    pub fn name(&self) -> String {
        if self.ablations.is_empty() {
            self.method.as_str().to_string()
        } else {
            format!("{}{}", self.method, self.ablations.label())
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&self.name())
    }
}

impl PartialEq<str> for Variant {
    fn eq(&self, other: &str) -> bool {
        self.name() == other
    }
}

impl PartialEq<&str> for Variant {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

/// The outcome on one labelled trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The file the trajectory came from; `FILE#ID` (the trajectory's id) when that file holds
    /// several labelled trajectories.
    pub file: String,
    /// The subset (the file's folder name, e.g. `Hand-Crafted`).
    pub subset: String,
    /// The row: the method and the components switched off.
    pub method: Variant,
    /// Predicted agent.
    pub pred_agent: Option<String>,
    /// Predicted step, 0-based.
    pub pred_step: Option<usize>,
    /// Gold agent.
    pub gold_agent: String,
    /// Gold step, 0-based.
    pub gold_step: Option<usize>,
    /// Whether the agents match (case-insensitive whole names).
    pub agent_hit: bool,
    /// Whether the steps are equal.
    pub step_hit: bool,
    /// Judge calls.
    pub calls: u64,
    /// Prompt plus completion tokens.
    pub tokens: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Of the prompt tokens, those the server served from its cache (as it reported them).
    pub cached_tokens: u64,
    /// Who answered the LLM judge's questions (all 0 for the offline judges).
    pub answers: crate::diagnosis::AnswerCounts,
    /// Wall time in milliseconds.
    pub millis: f64,
    /// Warnings the diagnosis carries (for an LLM judge, mostly answers that fell back to the
    /// heuristic judge).
    pub warnings: usize,
    /// Questions an LLM judge did not find in its replay folder
    /// ([`crate::diagnosis::Cost::replay_misses`]; the heuristic judge answered them).
    pub replay_misses: usize,
    /// Prompt tokens sent after the trajectory's first call
    /// ([`crate::diagnosis::Cost::later_prompt_tokens`]).
    pub later_prompt_tokens: u64,
    /// Of those, served from the server's cache ([`crate::diagnosis::Cost::later_cached_tokens`]).
    pub later_cached_tokens: u64,
    /// The part of the data ([`crate::rank::split`]); `None` when not split.
    pub part: Option<Part>,
    /// The diagnosis' confidence: its probability that the decisive step is right.
    pub confidence: f32,
    /// 1-based rank of the gold step in the diagnosis' ranking (`None`: not ranked).
    pub gold_rank: Option<usize>,
    /// Number of candidates in the method's search space (0 for methods without candidates).
    pub candidates: usize,
    /// Whether the gold step is among those candidates.
    pub gold_in_candidates: bool,
    /// The rule that named the decisive step ([`crate::diagnosis::Rule::as_str`]: `method_rule`,
    /// `fallback`, `ranked_first`, `pinned`, `no_failure`, `nothing`).
    pub rule: &'static str,
    /// The most probable step of the diagnosis' ranking (0-based), whatever the method named.
    pub ranked_best: Option<usize>,
}

/// Scores a diagnosis against a gold label.
pub fn score(file: &str, subset: &str, d: &Diagnosis, gold: &GoldLabel) -> Record {
    let cost = d.total_cost();
    let agent_hit = d.agent.as_deref().is_some_and(|a| same_agent(a, &gold.agent));
    let step_hit = d.decisive_step.is_some() && d.decisive_step == gold.step;
    Record {
        file: file.to_string(),
        subset: subset.to_string(),
        method: Variant::of(d.method),
        pred_agent: d.agent.clone(),
        pred_step: d.decisive_step,
        gold_agent: gold.agent.clone(),
        gold_step: gold.step,
        agent_hit,
        step_hit,
        calls: cost.calls,
        tokens: cost.prompt_tokens + cost.completion_tokens,
        prompt_tokens: cost.prompt_tokens,
        cached_tokens: cost.cached_tokens,
        answers: cost.answers,
        millis: cost.wall.as_secs_f64() * 1000.0,
        warnings: d.warnings.len(),
        // Counted by the judge, each missing question once however often it is asked.
        replay_misses: cost.replay_misses as usize,
        later_prompt_tokens: cost.later_prompt_tokens,
        later_cached_tokens: cost.later_cached_tokens,
        part: None,
        confidence: d.confidence,
        gold_rank: gold.step.and_then(|g| d.rank_of(g)),
        candidates: d.candidates.len(),
        gold_in_candidates: gold.step.is_some_and(|g| d.candidate(g).is_some()),
        rule: d.explanation.rule.as_str(),
        ranked_best: d
            .ranking
            .iter()
            .max_by(|a, b| a.probability.total_cmp(&b.probability).then(b.step.cmp(&a.step)))
            .map(|r| r.step),
    }
}

/// Whole-name, case-insensitive agent comparison (surrounding white space ignored).
pub fn same_agent(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// Accuracy figures of one method on one subset (or `all`).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Subset name, or `all`.
    pub subset: String,
    /// The row: the method and the components switched off.
    pub method: Variant,
    /// Number of trajectories scored.
    pub n: usize,
    /// Agent-level accuracy, percent.
    pub agent: f64,
    /// Exact step-level accuracy, percent.
    pub step: f64,
    /// Step-level accuracy within ±k, percent, per tolerance k.
    pub within: Vec<(usize, f64)>,
    /// Mean judge calls per trajectory.
    pub calls: f64,
    /// Median judge calls per trajectory.
    pub median_calls: f64,
    /// Mean tokens per trajectory.
    pub tokens: f64,
    /// Median prompt tokens per trajectory.
    pub median_prompt_tokens: f64,
    /// Mean wall time per trajectory, milliseconds.
    pub millis: f64,
    /// The part, `None` when the records are not split.
    pub part: Option<Part>,
    /// Top-k hit rates, percent: the gold step among the k best-ranked steps, k = 1, 3, 5.
    pub top: [f64; 3],
    /// Mean reciprocal rank of the gold step (0 where it is not ranked).
    pub mrr: f64,
    /// Expected calibration error of the confidence against exact step hits, 10 equal bins.
    pub ece: f64,
    /// Share of trajectories whose gold step is among the method's candidates, percent (`None`
    /// for a method without candidates).
    pub candidate_recall: Option<f64>,
    /// Median number of candidates.
    pub median_candidates: f64,
}

/// The k of the top-k columns.
pub const TOP_K: [usize; 3] = [1, 3, 5];

/// Number of equal-width confidence bins of the reliability table and the ECE.
pub const BINS: usize = 10;

/// One bin of a reliability table.
#[derive(Debug, Clone, PartialEq)]
pub struct Bin {
    /// Lower edge (inclusive), 0..1.
    pub from: f64,
    /// Upper edge (exclusive, 1.0 inclusive for the last bin).
    pub to: f64,
    /// Trajectories whose confidence falls in the bin.
    pub n: usize,
    /// Their mean confidence.
    pub confidence: f64,
    /// Their exact step accuracy, 0..=1.
    pub accuracy: f64,
}

/// The reliability table of some records: [`BINS`] equal-width bins of confidence.
pub fn reliability(rs: &[&Record]) -> Vec<Bin> {
    let mut bins: Vec<Bin> = (0..BINS)
        .map(|b| Bin {
            from: b as f64 / BINS as f64,
            to: (b + 1) as f64 / BINS as f64,
            n: 0,
            confidence: 0.0,
            accuracy: 0.0,
        })
        .collect();
    for r in rs {
        let c = f64::from(r.confidence).clamp(0.0, 1.0);
        let b = ((c * BINS as f64) as usize).min(BINS - 1);
        bins[b].n += 1;
        bins[b].confidence += c;
        bins[b].accuracy += if r.step_hit { 1.0 } else { 0.0 };
    }
    for b in &mut bins {
        if b.n > 0 {
            b.confidence /= b.n as f64;
            b.accuracy /= b.n as f64;
        }
    }
    bins
}

/// Expected calibration error: `Σ_b (n_b / N) · |accuracy_b − confidence_b|` over the bins of
/// [`reliability`]; 0 for no records.
pub fn ece(rs: &[&Record]) -> f64 {
    let total = rs.len();
    if total == 0 {
        return 0.0;
    }
    reliability(rs).iter().map(|b| b.n as f64 / total as f64 * (b.accuracy - b.confidence).abs()).sum()
}

/// The reliability table as text: one line per non-empty bin.
pub fn render_reliability(method: &str, rs: &[&Record]) -> String {
    let mut out = format!(
        "reliability of {method} ({} trajectories, ECE {:.3}): confidence bin, n, mean confidence, step accuracy\n",
        rs.len(),
        ece(rs)
    );
    for b in reliability(rs).iter().filter(|b| b.n > 0) {
        out.push_str(&format!("  {:.1}-{:.1} {:>5} {:>8.3} {:>8.3}\n", b.from, b.to, b.n, b.confidence, b.accuracy));
    }
    out
}

/// Summaries per (method, subset) and per method over all subsets, in method order then subset
/// name order with `all` last. Tolerances of 0 are skipped (exact is always given).
pub fn summarize(records: &[Record], tolerances: &[usize]) -> Vec<Summary> {
    let mut methods: Vec<&Variant> = Vec::new();
    for r in records {
        if !methods.contains(&&r.method) {
            methods.push(&r.method);
        }
    }
    // Parts in the tables' order: unsplit, then `report`, then `tune`.
    let order = |p: Option<Part>| p.map_or("", Part::as_str);
    let mut out = Vec::new();
    for m in methods {
        let mut by_subset: BTreeMap<(&str, &str, Option<Part>), Vec<&Record>> = BTreeMap::new();
        let mut by_part: BTreeMap<(&str, Option<Part>), Vec<&Record>> = BTreeMap::new();
        for r in records.iter().filter(|r| r.method == *m) {
            by_subset.entry((&r.subset, order(r.part), r.part)).or_default().push(r);
            by_part.entry((order(r.part), r.part)).or_default().push(r);
        }
        let subsets: std::collections::BTreeSet<&str> = by_subset.keys().map(|(s, _, _)| *s).collect();
        for ((subset, _, part), rs) in &by_subset {
            out.push(summary(subset, *part, m, rs, tolerances));
        }
        if subsets.len() > 1 {
            for ((_, part), rs) in &by_part {
                out.push(summary("all", *part, m, rs, tolerances));
            }
        }
    }
    out
}

fn summary(subset: &str, part: Option<Part>, method: &Variant, rs: &[&Record], tolerances: &[usize]) -> Summary {
    let n = rs.len().max(1) as f64;
    let pct = |count: usize| 100.0 * count as f64 / n;
    let within = tolerances
        .iter()
        .filter(|k| **k > 0)
        .map(|&k| {
            let hits = rs
                .iter()
                .filter(|r| matches!((r.pred_step, r.gold_step), (Some(p), Some(g)) if p.abs_diff(g) <= k))
                .count();
            (k, pct(hits))
        })
        .collect();
    Summary {
        subset: subset.to_string(),
        method: method.clone(),
        n: rs.len(),
        agent: pct(rs.iter().filter(|r| r.agent_hit).count()),
        step: pct(rs.iter().filter(|r| r.step_hit).count()),
        within,
        calls: rs.iter().map(|r| r.calls as f64).sum::<f64>() / n,
        median_calls: median(rs.iter().map(|r| r.calls)),
        tokens: rs.iter().map(|r| r.tokens as f64).sum::<f64>() / n,
        median_prompt_tokens: median(rs.iter().map(|r| r.prompt_tokens)),
        millis: rs.iter().map(|r| r.millis).sum::<f64>() / n,
        part,
        top: TOP_K.map(|k| pct(rs.iter().filter(|r| r.gold_rank.is_some_and(|g| g <= k)).count())),
        mrr: rs.iter().map(|r| r.gold_rank.map_or(0.0, |g| 1.0 / g as f64)).sum::<f64>() / n,
        ece: ece(rs),
        candidate_recall: rs
            .iter()
            .any(|r| r.candidates > 0)
            .then(|| pct(rs.iter().filter(|r| r.gold_in_candidates).count())),
        median_candidates: median(rs.iter().map(|r| r.candidates as u64)),
    }
}

/// The median of some counts (the mean of the middle two for an even number; 0 for none).
fn median(values: impl Iterator<Item = u64>) -> f64 {
    let mut v: Vec<u64> = values.collect();
    v.sort_unstable();
    match v.len() {
        0 => 0.0,
        l if l % 2 == 1 => v[l / 2] as f64,
        l => (v[l / 2 - 1] + v[l / 2]) as f64 / 2.0,
    }
}

/// A plain-text table of summaries, one row per (method, subset).
pub fn render_table(summaries: &[Summary]) -> String {
    let tol: Vec<usize> = summaries.first().map(|s| s.within.iter().map(|(k, _)| *k).collect()).unwrap_or_default();
    let mut header =
        format!("{:<14} {:<20} {:<6} {:>4} {:>7} {:>7}", "method", "subset", "part", "n", "agent%", "step%");
    for k in &tol {
        header.push_str(&format!(" {:>7}", format!("±{k}%")));
    }
    header.push_str(&format!(
        " {:>6} {:>6} {:>6} {:>5} {:>5} {:>6} {:>5}",
        "top1%", "top3%", "top5%", "MRR", "ECE", "cand%", "cands"
    ));
    header.push_str(&format!(" {:>7} {:>9} {:>9} {:>10} {:>9}", "calls", "med.calls", "tokens", "med.prompt", "ms"));
    let mut out = vec![header];
    for s in summaries {
        let part = s.part.map_or("-", Part::as_str);
        let mut row =
            format!("{:<14} {:<20} {:<6} {:>4} {:>7.1} {:>7.1}", s.method, s.subset, part, s.n, s.agent, s.step);
        for (_, v) in &s.within {
            row.push_str(&format!(" {v:>7.1}"));
        }
        // A method without a candidate list shows `-` in both candidate columns.
        let (recall, median) = match s.candidate_recall {
            Some(r) => (format!("{r:.1}"), format!("{:.1}", s.median_candidates)),
            None => ("-".to_string(), "-".to_string()),
        };
        row.push_str(&format!(
            " {:>6.1} {:>6.1} {:>6.1} {:>5.2} {:>5.2} {:>6} {:>5}",
            s.top[0], s.top[1], s.top[2], s.mrr, s.ece, recall, median
        ));
        row.push_str(&format!(
            " {:>7.1} {:>9.1} {:>9.0} {:>10.0} {:>9.2}",
            s.calls, s.median_calls, s.tokens, s.median_prompt_tokens, s.millis
        ));
        out.push(row);
    }
    out.join("\n") + "\n"
}

/// What the columns of [`render_table`] mean, a few lines for under the table.
pub const TABLE_LEGEND: &str = "\
columns: agent% and step% exact hits; ±k% the step within k; top1/3/5% the labelled step among the
k best-ranked steps; MRR its mean reciprocal rank; ECE the confidence's expected calibration error
(10 bins); cand% how often the labelled step is among the method's candidates and cands their
median number (- for a method without candidates); calls and med.calls judge calls per run (mean,
median); tokens mean tokens and med.prompt median prompt tokens per run; ms mean time per run.
";

/// One line per record: row, subset, part, file, predicted step and agent, gold step and agent,
/// and which of agent and step were hit (`A`, `S`, `-`). Agent names and files are sanitised
/// (trace text is untrusted); steps are 0-based, `-` when absent.
pub fn render_per_file(records: &[Record]) -> String {
    let step = |s: Option<usize>| s.map_or_else(|| "-".to_string(), |s| s.to_string());
    let mut out = format!(
        "{:<14} {:<20} {:<6} {:<44} {:>5} {:<24} {:>5} {:<24} hit\n",
        "method", "subset", "part", "file", "pred", "pred agent", "gold", "gold agent"
    );
    for r in records {
        let part = r.part.map_or("-", Part::as_str);
        let hit = format!("{}{}", if r.agent_hit { "A" } else { "-" }, if r.step_hit { "S" } else { "-" });
        out.push_str(&format!(
            "{:<14} {:<20} {:<6} {:<44} {:>5} {:<24} {:>5} {:<24} {hit}\n",
            r.method,
            crate::text::sanitize(&r.subset),
            part,
            crate::text::sanitize(&r.file),
            step(r.pred_step),
            crate::text::sanitize(r.pred_agent.as_deref().unwrap_or("-")),
            step(r.gold_step),
            crate::text::sanitize(&r.gold_agent),
        ));
    }
    out
}

/// The cost of a judge that sends requests, per method and subset (in the records' order):
/// trajectories, median and maximum judge calls and prompt tokens per trajectory and, unless
/// `dry_run` (nothing was answered), completion tokens and the number of trajectories whose
/// diagnosis carries warnings (for the LLM judge, mostly answers that fell back to the offline
/// judge), then the share of prompt tokens the server served from its cache (`cached%`: of all
/// prompt tokens; `later%`: of those sent after each trajectory's first call, the calls that can
/// reuse what the trajectory sent before) and who answered the questions: the model at once, after
/// a repair request, or the offline judge after a failure.
pub fn render_costs(records: &[Record], dry_run: bool) -> String {
    let mut groups: Vec<((&Variant, &str), Vec<&Record>)> = Vec::new();
    for r in records {
        let key = (&r.method, r.subset.as_str());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, rs)) => rs.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    let mut out = format!(
        "{:<14} {:<20} {:>4} {:>9} {:>9} {:>10} {:>10}",
        "method", "subset", "n", "med.calls", "max.calls", "med.prompt", "max.prompt"
    );
    if !dry_run {
        out.push_str(&format!(
            " {:>10} {:>10} {:>12} {:>8} {:>7} {:>7} {:>8} {:>8}",
            "med.compl", "max.compl", "w/ warnings", "cached%", "later%", "model", "repaired", "fallback"
        ));
    }
    out.push('\n');
    for ((method, subset), rs) in groups {
        let calls = || rs.iter().map(|r| r.calls);
        let prompt = || rs.iter().map(|r| r.prompt_tokens);
        let compl = || rs.iter().map(|r| r.tokens.saturating_sub(r.prompt_tokens));
        out.push_str(&format!(
            "{:<14} {:<20} {:>4} {:>9.1} {:>9} {:>10.0} {:>10}",
            method,
            crate::text::sanitize(subset),
            rs.len(),
            median(calls()),
            calls().max().unwrap_or(0),
            median(prompt()),
            prompt().max().unwrap_or(0),
        ));
        if !dry_run {
            let mut a = crate::diagnosis::AnswerCounts::default();
            for r in &rs {
                a.add(&r.answers);
            }
            let (cached, sent): (u64, u64) = (rs.iter().map(|r| r.cached_tokens).sum(), prompt().sum());
            let pct = |part: u64, whole: u64| {
                if whole == 0 { "-".to_string() } else { format!("{:.1}", 100.0 * part as f64 / whole as f64) }
            };
            let later: (u64, u64) =
                (rs.iter().map(|r| r.later_cached_tokens).sum(), rs.iter().map(|r| r.later_prompt_tokens).sum());
            out.push_str(&format!(
                " {:>10.0} {:>10} {:>12} {:>8} {:>7} {:>7} {:>8} {:>8}",
                median(compl()),
                compl().max().unwrap_or(0),
                rs.iter().filter(|r| r.warnings > 0).count(),
                pct(cached, sent),
                pct(later.0, later.1),
                a.model,
                a.repaired,
                a.fallbacks()
            ));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(subset: &str, pred: Option<usize>, gold: usize, agent_hit: bool) -> Record {
        Record {
            file: "f".into(),
            subset: subset.into(),
            method: Variant::of(Method::Falat),
            pred_agent: None,
            pred_step: pred,
            gold_agent: "A".into(),
            gold_step: Some(gold),
            agent_hit,
            step_hit: pred == Some(gold),
            calls: 2,
            tokens: 0,
            prompt_tokens: 0,
            cached_tokens: 0,
            answers: Default::default(),
            millis: 1.0,
            warnings: 0,
            replay_misses: 0,
            later_prompt_tokens: 0,
            later_cached_tokens: 0,
            part: None,
            confidence: 0.5,
            gold_rank: pred.map(|p| if p == gold { 1 } else { 2 }),
            candidates: 0,
            gold_in_candidates: false,
            rule: "method_rule",
            ranked_best: pred,
        }
    }

    #[test]
    fn exact_scoring_does_not_match_substrings() {
        assert!(same_agent("websurfer", "WebSurfer "));
        assert!(!same_agent("Web", "WebSurfer"));
        let d = Diagnosis { decisive_step: Some(1), agent: Some("Expert".into()), ..Diagnosis::default() };
        let r = score("x", "s", &d, &GoldLabel { agent: "expert".into(), step: Some(10), ..GoldLabel::default() });
        assert!(r.agent_hit);
        assert!(!r.step_hit);
    }

    #[test]
    fn summaries_per_subset_and_all() {
        let rs = vec![
            rec("A", Some(1), 1, true),
            rec("A", Some(3), 1, false),
            rec("B", Some(9), 5, true),
            rec("B", None, 5, false),
        ];
        let s = summarize(&rs, &[0, 1, 3]);
        assert_eq!(s.len(), 3);
        assert_eq!((s[0].subset.as_str(), s[0].agent, s[0].step), ("A", 50.0, 50.0));
        assert_eq!(s[0].within, vec![(1, 50.0), (3, 100.0)]);
        assert_eq!((s[2].subset.as_str(), s[2].n, s[2].step), ("all", 4, 25.0));
        assert_eq!(s[2].within, vec![(1, 25.0), (3, 50.0)]);
    }

    #[test]
    fn medians_of_calls_and_prompt_tokens() {
        let mut rs: Vec<Record> = [(3, 900), (9, 100), (5, 500)]
            .into_iter()
            .map(|(calls, prompt_tokens)| Record { calls, prompt_tokens, ..rec("A", Some(1), 1, true) })
            .collect();
        let s = summarize(&rs, &[0]);
        assert_eq!((s[0].median_calls, s[0].median_prompt_tokens, s[0].calls), (5.0, 500.0, 17.0 / 3.0));
        rs.push(Record { calls: 6, prompt_tokens: 600, ..rec("A", Some(1), 1, true) });
        let s = summarize(&rs, &[0]);
        assert_eq!((s[0].median_calls, s[0].median_prompt_tokens), (5.5, 550.0));
        let table = render_table(&s);
        assert!(table.lines().next().unwrap().contains("med.calls"), "{table}");
        assert!(table.lines().nth(1).unwrap().contains("      5.5 "), "{table}");
    }

    #[test]
    fn the_legend_names_every_column_and_methods_without_candidates_show_dashes() {
        let mut with = rec("A", Some(1), 1, true);
        with.candidates = 3;
        with.gold_in_candidates = true;
        let s = summarize(&[with], &[0, 1]);
        let table = render_table(&s);
        let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
        for col in header.iter().skip(4) {
            let name = col.trim_end_matches('%');
            let name = if name.starts_with('±') { "±k" } else { name };
            let name = if name.starts_with("top") { "top1/3/5" } else { name };
            assert!(TABLE_LEGEND.contains(name), "the legend does not explain {col}");
        }
        let mut without = summarize(&[rec("A", Some(1), 1, true)], &[0]);
        without[0].candidate_recall = None;
        let row = render_table(&without).lines().nth(1).unwrap().to_string();
        // ECE, then `cand%` and `cands` both `-`, then the calls.
        assert!(row.contains(" 0.50      -     -     2.0 "), "{row}");
    }

    #[test]
    fn replay_misses_and_the_later_cached_share_come_from_the_cost() {
        let cost = |misses: u64, later: u64, cached: u64| crate::diagnosis::StageCost {
            stage: crate::diagnosis::StageName::Judge,
            cost: crate::diagnosis::Cost {
                prompt_tokens: later + 100,
                replay_misses: misses,
                later_prompt_tokens: later,
                later_cached_tokens: cached,
                ..Default::default()
            },
        };
        let d = Diagnosis { cost: vec![cost(2, 1000, 600), cost(1, 500, 450)], ..Diagnosis::default() };
        let r = score("f", "A", &d, &crate::model::GoldLabel { agent: "A".into(), ..Default::default() });
        assert_eq!(
            (r.replay_misses, r.prompt_tokens, r.later_prompt_tokens, r.later_cached_tokens),
            (3, 1700, 1500, 1050)
        );
    }

    #[test]
    fn top_k_mrr_and_calibration() {
        let mut rs = vec![
            Record { gold_rank: Some(1), confidence: 0.95, ..rec("A", Some(1), 1, true) },
            Record { gold_rank: Some(3), confidence: 0.15, ..rec("A", Some(2), 1, true) },
            Record { gold_rank: Some(6), confidence: 0.12, ..rec("A", Some(2), 1, true) },
            Record { gold_rank: None, confidence: 0.18, ..rec("A", None, 1, true) },
        ];
        let s = summarize(&rs, &[0]);
        assert_eq!(s[0].top, [25.0, 50.0, 50.0]);
        assert!((s[0].mrr - (1.0 + 1.0 / 3.0 + 1.0 / 6.0) / 4.0).abs() < 1e-12);
        // Bin 0.9: one hit at 0.95 (gap 0.05); bin 0.1: three misses at mean 0.15 (gap 0.15).
        let refs: Vec<&Record> = rs.iter().collect();
        assert!((ece(&refs) - (0.25 * 0.05 + 0.75 * 0.15)).abs() < 1e-6, "{}", ece(&refs));
        let bins = reliability(&refs);
        assert_eq!((bins[1].n, bins[9].n, bins[9].accuracy), (3, 1, 1.0));
        rs[0].part = Some(Part::Report);
        let s = summarize(&rs, &[0]);
        assert_eq!(s.iter().map(|s| (s.part, s.n)).collect::<Vec<_>>(), vec![(None, 3), (Some(Part::Report), 1)]);
    }

    #[test]
    fn row_names_parse_back() {
        for name in ["falat", "all-at-once", "falat-hierarchy", "binary-search", "echo-decoupling-consensus"] {
            assert_eq!(Variant::parse(name).map(|v| v.name()).as_deref(), Some(name));
        }
        let v = Variant::parse("step-by-step").unwrap();
        assert_eq!((v.method, v.ablations.is_empty()), (Method::StepByStep, true));
        assert_eq!(Variant::parse("falat-nope"), None);
        assert_eq!(Variant::parse("nope"), None);
        assert_eq!(format!("[{:<8}]", Variant::of(Method::Echo)), "[echo    ]");
    }

    #[test]
    fn per_file_lines_show_prediction_gold_and_hits() {
        let mut a = rec("Hand-Crafted", Some(3), 3, true);
        a.pred_agent = Some("Web\u{1b}[2JSurfer".into());
        a.part = Some(Part::Report);
        let b = rec("Hand-Crafted", None, 5, false);
        let text = render_per_file(&[a, b]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("method         subset               part   file"), "{text}");
        let cols: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(cols, ["falat", "Hand-Crafted", "report", "f", "3", "WebSurfer", "3", "A", "AS"]);
        let cols: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(cols, ["falat", "Hand-Crafted", "-", "f", "-", "-", "5", "A", "--"]);
    }

    #[test]
    fn cost_table_gives_medians_maxima_and_warned_runs() {
        let mut rs: Vec<Record> = (0..3).map(|_| rec("S", Some(1), 1, true)).collect();
        for (i, r) in rs.iter_mut().enumerate() {
            r.calls = 5 + i as u64;
            r.prompt_tokens = 1000 * (i as u64 + 1);
            r.tokens = r.prompt_tokens + 100;
            r.warnings = i;
            r.cached_tokens = 500 * i as u64;
            r.later_prompt_tokens = 800 * (i as u64 + 1);
            r.later_cached_tokens = 400 * i as u64;
            r.answers = crate::diagnosis::AnswerCounts {
                model: 4,
                repaired: 1,
                fallback_invalid: i as u64,
                ..Default::default()
            };
        }
        let text = render_costs(&rs, false);
        let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
        // cached 1500 of 6000 prompt tokens, 1200 of the 4800 sent after each first call; 12
        // answered by the model, 3 repaired, 3 fell back.
        assert_eq!(
            row,
            ["falat", "S", "3", "6.0", "7", "2000", "3000", "100", "100", "2", "25.0", "25.0", "12", "3", "3"]
        );
        let text = render_costs(&rs, true);
        assert!(text.lines().next().unwrap().ends_with("max.prompt"), "{text}");
        let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(row, ["falat", "S", "3", "6.0", "7", "2000", "3000"]);
    }
}
