//! The fixed split of labelled data into a part used for tuning and a part kept for reporting,
//! and the folds of cross-validation (`docs/RANKER.md`).
//!
//! Both come from FNV-1a (64 bit) hashes, so they are the same on every machine and in every
//! version: the part from `NAME#ID` (the file's name without its folders, the trajectory id),
//! the fold from the task text (lower case, white space collapsed), so that trajectories of one
//! task (runs of the same question) never sit on both sides of a fold.

/// Where a labelled trajectory belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Part {
    /// Used to fit and tune (the shipped ranker is trained on it).
    Tune,
    /// Only for reporting: nothing is fitted or tuned on it.
    Report,
}

impl Part {
    /// `tune` or `report`.
    pub fn as_str(self) -> &'static str {
        match self {
            Part::Tune => "tune",
            Part::Report => "report",
        }
    }

    /// Parses [`Part::as_str`].
    pub fn parse(s: &str) -> Option<Part> {
        [Part::Tune, Part::Report].into_iter().find(|p| p.as_str() == s)
    }
}

/// One in this many trajectories is kept for reporting.
pub const REPORT_EVERY: u64 = 3;

/// FNV-1a, 64 bit.
pub fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The part of a trajectory: `report` when the hash of `NAME#ID` is divisible by
/// [`REPORT_EVERY`], else `tune`. `file` may carry folders; only its last component counts.
pub fn part_of(file: &str, trajectory_id: &str) -> Part {
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    if fnv1a(&format!("{name}#{trajectory_id}")).is_multiple_of(REPORT_EVERY) { Part::Report } else { Part::Tune }
}

/// The fold (`0..k`) of a trajectory with this task text.
pub fn fold_of(task: &str, k: usize) -> usize {
    let norm: String = task.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    (fnv1a(&norm) % k.max(1) as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_stable_and_ignores_folders() {
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(part_of("x/y/1.json", "1"), part_of("1.json", "1"));
        assert_eq!(fold_of("Same  task\n", 5), fold_of("same task", 5));
        assert!(fold_of("anything", 4) < 4);
    }
}
