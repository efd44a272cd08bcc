//! The status line's message and its level: plain state that the app, the overrides store and the
//! drawing code share without depending on each other.

/// How a status message looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Information.
    Info,
    /// Done.
    Ok,
    /// Something to look at.
    Warn,
    /// Something failed.
    Error,
}

/// The message in the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// Lowercase text.
    pub text: String,
    /// How it looks.
    pub level: Level,
}
