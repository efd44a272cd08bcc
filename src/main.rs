//! The `falat` binary: a thin shell over the library (see `falat::cli`).
//!
//! Temporary on the `tui` branch: `falat open TRACE` and `falat TRACE` open the TUI; the CLI
//! branch replaces this file with the full command line.

use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = match args.as_slice() {
        [cmd, path] if cmd == "open" => path,
        [path] if !path.starts_with('-') => path,
        _ => {
            eprintln!("usage: falat open TRACE");
            std::process::exit(2);
        }
    };
    if let Err(e) = falat::tui::run(Path::new(path), falat::tui::TuiOptions::default()) {
        eprintln!("falat: {e:#}");
        std::process::exit(1);
    }
}
