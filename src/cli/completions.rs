//! `falat completions SHELL`: the shell completion script, generated from the clap definition by
//! clap_complete, on stdout.

use std::io::Write;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

/// Arguments of `falat completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell. Install e.g. with
    /// `falat completions bash > ~/.local/share/bash-completion/completions/falat`, `falat
    /// completions zsh > ~/.zfunc/_falat`, `falat completions fish >
    /// ~/.config/fish/completions/falat.fish`.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Writes the completion script of `args.shell` to `out`; returns exit code 0.
///
/// # Errors
/// A failed write.
pub fn run(args: &CompletionsArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let mut cmd = super::Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "falat", out);
    Ok(0)
}
