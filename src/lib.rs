//! falat: a terminal debugger for failed LLM agent runs.
//!
//! It finds the decisive error of a failed trajectory (which agent, which step) with the FALAT
//! method and the ECHO, DeFA and Who&When baselines on one substrate. See `docs/ARCHITECTURE.md`
//! for the code map and `docs/DESIGN.md` terms: trajectory, step, decisive step, candidate.
//!
//! Cargo features (both on by default): `tui` builds the terminal debugger (`tui`, `falat open`)
//! and `llm` builds the OpenAI-compatible LLM judge (`judge::llm`). Without them the library keeps
//! ingest, the substrate, every method, the offline heuristic judge, eval and the reports.

pub mod cli;
pub mod diagnosis;
pub mod eval;
pub mod evidence;
pub mod export;
pub mod fsutil;
pub mod graph;
pub mod hierarchy;
pub mod ingest;
pub mod judge;
pub mod methods;
pub mod model;
pub mod prior;
pub mod rank;
pub mod report;
pub mod substrate;
pub mod text;
#[cfg(feature = "tui")]
pub mod tui;
