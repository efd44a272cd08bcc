//! The `falat` binary: a thin shell over the library (see `falat::cli`).

use std::io::Write;

use clap::Parser;

fn main() {
    let cli = falat::cli::Cli::parse_from(falat::cli::normalize_args(std::env::args_os().collect()));
    cli.init_logging();
    // The TUI owns the terminal: it must not find stdout locked by this thread's writer.
    let mut out: Box<dyn Write> = if cli.is_interactive() {
        Box::new(std::io::sink())
    } else {
        Box::new(std::io::BufWriter::new(std::io::stdout().lock()))
    };
    let result = falat::cli::run(cli, &mut out).and_then(|code| {
        out.flush()?;
        Ok(code)
    });
    let code = match result {
        Ok(code) => code,
        Err(err) if falat::cli::is_broken_pipe(&err) => 0,
        Err(err) => {
            // The chain names files and may quote a trace's keys: sanitised like trace text.
            falat::cli::note(&format!("{err:#}"));
            2
        }
    };
    drop(out);
    std::process::exit(code);
}
