//! `falat train [DIR...] [--labels FILE] [-o FILE] [--check]`: fits the step ranker on the tune
//! part of labelled benchmark folders and writes the model file (`docs/RANKER.md`).
//!
//! The defaults rebuild the shipped model: the bundled `data/who-and-when` and
//! `data/agentrx-tau` folders, written to `models/step_ranker.json`. The fit is deterministic,
//! so the same data gives the same file byte for byte; `--check` compares instead of writing.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::eval::fit::{Labelled, fit_ranker};
use crate::ingest::fs::load_labelled;
use crate::rank::split::{Part, part_of};

/// Arguments of `falat train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Labelled benchmark folders (default: the bundled data/who-and-when and data/agentrx-tau).
    pub dirs: Vec<PathBuf>,
    /// Label files to apply (see docs/LABELS.md).
    #[arg(long, value_name = "FILE")]
    pub labels: Vec<PathBuf>,
    /// Where to write the model.
    #[arg(long, short = 'o', default_value = "models/step_ranker.json")]
    pub out: PathBuf,
    /// Do not write: exit 1 when the file differs from what training gives.
    #[arg(long)]
    pub check: bool,
}

/// The bundled folders the shipped model is trained on, under `root`.
pub fn bundled_dirs(root: &Path) -> Vec<PathBuf> {
    ["data/who-and-when", "data/agentrx-tau"].iter().map(|d| root.join(d)).collect()
}

/// The model file's text fitted on the tune part of `dirs` (pretty JSON, newline at the end).
///
/// # Errors
/// Unreadable folders or label files, or nothing to fit on.
pub fn model_text(dirs: &[PathBuf], labels: &[PathBuf]) -> anyhow::Result<String> {
    let set = load_labelled(dirs, labels).context("cannot read the training data")?;
    let tune: Vec<&crate::model::Trajectory> = set
        .items
        .iter()
        .filter(|l| part_of(&l.file.display().to_string(), &l.trajectory.id) == Part::Tune)
        .map(|l| &l.trajectory)
        .collect();
    let names: Vec<String> = dirs
        .iter()
        .map(|d| d.file_name().map_or_else(|| d.display().to_string(), |n| n.to_string_lossy().into()))
        .collect();
    let what = format!("tune part of {} ({} labelled trajectories)", names.join(", "), tune.len());
    let runs: Vec<Labelled<'_>> = tune.iter().map(|t| Labelled::of(t)).collect();
    let model = fit_ranker(&runs, &what).map_err(|e| anyhow::anyhow!("cannot fit the ranker: {e}"))?;
    Ok(serde_json::to_string_pretty(&model.to_json())? + "\n")
}

/// Trains and writes (or checks) the model; returns the exit code.
///
/// # Errors
/// What [`model_text`] returns, or an unwritable output file.
pub fn run(args: &TrainArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let dirs = if args.dirs.is_empty() { bundled_dirs(Path::new(".")) } else { args.dirs.clone() };
    // The output's folder first: an -o that cannot be written fails at once, not after the fit.
    let writes = !args.check && !crate::fsutil::is_stdout(&args.out);
    if let Some(dir) = args.out.parent().filter(|d| writes && !d.as_os_str().is_empty()) {
        crate::fsutil::create_folder(dir)?;
    }
    let text = model_text(&dirs, &args.labels)?;
    if args.check {
        let old = std::fs::read_to_string(&args.out).unwrap_or_default();
        let same = old == text;
        writeln!(
            out,
            "{}: {}",
            crate::fsutil::shown(&args.out),
            if same { "up to date" } else { "differs from a fresh fit" }
        )?;
        return Ok(if same { 0 } else { 1 });
    }
    if crate::fsutil::is_stdout(&args.out) {
        out.write_all(text.as_bytes())?;
        return Ok(0);
    }
    crate::fsutil::write_output(&args.out, text.as_bytes())?;
    writeln!(out, "wrote {}", crate::fsutil::shown(&args.out))?;
    Ok(0)
}
