//! Opens the TUI on a trace file: `cargo run --example falat_tui -- TRACE [THEME]`.
//!
//! The `falat` binary (`falat TRACE`, `falat open TRACE`) does the same; this example only uses
//! the library's public entry point.

use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: falat_tui TRACE [THEME]");
        std::process::exit(2);
    };
    let opts = falat::tui::TuiOptions { theme: args.get(1).cloned(), ..falat::tui::TuiOptions::default() };
    if let Err(e) = falat::tui::run(Path::new(path), opts) {
        eprintln!("falat_tui: {e:#}");
        std::process::exit(1);
    }
}
