//! The error of a loader: why a recognised document, or one record of it, is unusable.
//!
//! Loaders return a [`FormatError`]; [`super::load_as`] wraps it in [`super::LoadError::Invalid`]
//! with the file and the format, and a loader that skips a record writes it into the record's
//! diagnostic (with the record's line or place). Each variant carries what was expected and,
//! where there is one, what was found and the field or place it was found at.

use std::borrow::Cow;

/// Why a loader could not read a document or a record (a message without the file name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// The format is one JSON document, and the file is JSON Lines.
    #[error("expected {expected}, found JSON Lines")]
    JsonLines {
        /// The document the format expects (`one JSON document`).
        expected: &'static str,
    },
    /// The document lacks the shape of the format where it matters.
    #[error("expected {expected}")]
    Shape {
        /// The shape expected, in the format's own terms (`a session {id, app_name, ...}`).
        expected: Cow<'static, str>,
    },
    /// The document has the format's shape but no record of it.
    #[error("expected {expected}, found none")]
    NoRecords {
        /// The records expected (`OpenInference spans`).
        expected: &'static str,
    },
    /// A value (the document, a record) is of another JSON type or shape than expected.
    #[error("expected {expected}, found {found}")]
    Found {
        /// What was expected (`an object`).
        expected: &'static str,
        /// What was found (`an array`, see [`super::type_name`]).
        found: Cow<'static, str>,
    },
    /// A field holds a value of the wrong type or an unknown value.
    #[error("\"{field}\"{what} is {found}, expected {expected}")]
    Field {
        /// The field (`kind`, `tokens.input`).
        field: String,
        /// What the field is, when its name does not say (` (the agent)`), or its index (`[2]`),
        /// or empty.
        what: Cow<'static, str>,
        /// What it holds (`a number`, `"call"`).
        found: String,
        /// What it should hold (`a string`).
        expected: Cow<'static, str>,
    },
    /// A required field is absent.
    #[error("missing \"{field}\"{what}")]
    Missing {
        /// The field (`content`, `root_cause.failure_id`).
        field: &'static str,
        /// What the field is, when its name does not say (` (the agent)`, ` array`), or empty.
        what: &'static str,
    },
    /// A required text field is empty.
    #[error("\"{field}\"{what} is empty")]
    EmptyField {
        /// The field (`agent`, `name`).
        field: &'static str,
        /// What the field is, when its name does not say (` (the agent)`), or empty.
        what: &'static str,
    },
    /// A list the format needs is empty, or none of its items is usable.
    #[error("{list} {problem}")]
    NothingUsable {
        /// The list, as the format names it (`the history`, `the eval log`).
        list: Cow<'static, str>,
        /// What is wrong with it (`is empty, expected at least one message`).
        problem: &'static str,
    },
    /// None of the items of a list could be used.
    #[error("no usable {item} in {list}")]
    NoUsable {
        /// What an item is (`message`, `span`).
        item: &'static str,
        /// The list (`"traj"`).
        list: &'static str,
    },
    /// The document (a label file) is not JSON.
    #[error("not JSON: {message} at line {line} column {column}")]
    NotJson {
        /// The parser's message.
        message: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
    },
    /// A reference names an item that is not in the list it refers to.
    #[error("{what} is not among \"{list}\"")]
    NotAmong {
        /// What refers (`root cause failure 3`).
        what: String,
        /// The list (`failures`).
        list: &'static str,
    },
    /// A step number given by the document lies outside the steps or names a skipped record.
    #[error("{field} {step} {problem}; gold step dropped")]
    GoldStep {
        /// The field that gives the step (`mistake_step`).
        field: &'static str,
        /// The step number as given (quoted when it is not a number).
        step: String,
        /// Why it cannot be used (`is past the end of history (12 records)`).
        problem: String,
    },
}

impl FormatError {
    /// A field of the wrong JSON type: `"{field}" is {type of found}, expected {expected}`.
    pub fn wrong_type(field: impl Into<String>, found: &serde_json::Value, expected: &'static str) -> FormatError {
        FormatError::Field {
            field: field.into(),
            what: "".into(),
            found: super::type_name(found).into(),
            expected: expected.into(),
        }
    }

    /// A value of the wrong JSON type: `expected {expected}, found {type of found}`.
    pub fn not_a(expected: &'static str, found: &serde_json::Value) -> FormatError {
        FormatError::Found { expected, found: super::type_name(found).into() }
    }

    /// A required field that is absent.
    pub fn missing(field: &'static str) -> FormatError {
        FormatError::Missing { field, what: "" }
    }
}

/// Why a `--format` value names no format this build can load ([`super::FormatChoice::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatNameError {
    /// The name is no format's.
    #[error("unknown format {name:?}, expected one of: {}", expected.join(", "))]
    Unknown {
        /// The name as given.
        name: String,
        /// Every accepted name.
        expected: Vec<&'static str>,
    },
    /// The format is known but this build has no loader for it.
    #[error("format {format} has no loader in this build, expected one of: {}", expected.join(", "))]
    NoLoader {
        /// The format named.
        format: crate::model::SourceFormat,
        /// Every accepted name.
        expected: Vec<&'static str>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_field_and_what_was_expected() {
        let v = serde_json::json!(3);
        assert_eq!(
            FormatError::wrong_type("content", &v, "a string").to_string(),
            "\"content\" is a number, expected a string"
        );
        assert_eq!(FormatError::not_a("an object", &v).to_string(), "expected an object, found a number");
        assert_eq!(FormatError::missing("traj").to_string(), "missing \"traj\"");
        assert_eq!(
            FormatError::Missing { field: "role", what: " (the agent)" }.to_string(),
            "missing \"role\" (the agent)"
        );
        assert_eq!(
            FormatError::GoldStep { field: "mistake_step", step: "9".into(), problem: "names a skipped record".into() }
                .to_string(),
            "mistake_step 9 names a skipped record; gold step dropped"
        );
        assert_eq!(
            FormatError::JsonLines { expected: "one JSON document" }.to_string(),
            "expected one JSON document, found JSON Lines"
        );
    }
}
