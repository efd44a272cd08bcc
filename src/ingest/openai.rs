//! OpenAI Chat Completions message arrays, τ-bench result records and the falat JSONL format.
//! (To be filled in: detection and loading.)

use super::{Document, Loaded};
use crate::model::SourceFormat;

/// Which of the three formats a document is, if any.
pub fn detect(_doc: &Document) -> Option<SourceFormat> {
    None
}

/// Loads a document as `format`.
///
/// # Errors
/// A message naming what is missing.
pub fn load(_name: &str, _doc: &Document, format: SourceFormat) -> Result<Loaded, String> {
    Err(format!("{format} is not implemented yet"))
}
