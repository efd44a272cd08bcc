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
    /// A shorter form the status line shows when `text` does not fit (a narrow terminal): the
    /// same facts with fewer words, so that cutting it loses less; the messages overlay keeps
    /// `text` whole.
    pub short: Option<String>,
    /// How it looks.
    pub level: Level,
}
