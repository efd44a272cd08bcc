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
    // clap_complete panics when its writer fails (`falat completions bash | head -1` closes the
    // pipe): the script is built in memory and written here, so a closed pipe is an error the
    // caller treats as every command's (no error at all).
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "falat", &mut script);
    out.write_all(&script)?;
    out.flush()?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose reader went away (`| head -1`).
    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_a_broken_pipe_error_not_a_panic() {
        let err = run(&CompletionsArgs { shell: Shell::Bash }, &mut ClosedPipe).expect_err("the write fails");
        assert!(crate::cli::is_broken_pipe(&err), "{err:#}");
        let mut out = Vec::new();
        assert_eq!(run(&CompletionsArgs { shell: Shell::Zsh }, &mut out).expect("written"), 0);
        assert!(String::from_utf8(out).expect("utf-8").starts_with("#compdef falat"));
    }
}
