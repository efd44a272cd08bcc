//! `falat man`: the manual page (roff, section 1), generated from the clap definition by
//! clap_mangen, with one section per subcommand, on stdout.

use std::io::Write;

use clap::{Args, CommandFactory};

/// Arguments of `falat man`.
#[derive(Debug, Args)]
pub struct ManArgs {}

/// Writes the man page to `out` (`falat man > falat.1`, or `falat man | man -l -`); returns exit
/// code 0.
///
/// # Errors
/// A failed write.
pub fn run(_args: &ManArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let cmd = super::Cli::command();
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    // One section per command, with its own options (clap_mangen's subcommands section lists
    // only their names).
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("falat {}", sub.get_name());
        writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
        let sub_man = clap_mangen::Man::new(sub.clone().bin_name(name));
        let mut body = Vec::new();
        sub_man.render_synopsis_section(&mut body)?;
        sub_man.render_description_section(&mut body)?;
        sub_man.render_options_section(&mut body)?;
        // clap_mangen heads each part `.SH`; under the command's own section they are `.SS`.
        out.write_all(
            String::from_utf8_lossy(&body).replace("\n.SH ", "\n.SS ").replacen(".SH ", ".SS ", 1).as_bytes(),
        )?;
    }
    man.render_version_section(out)?;
    Ok(0)
}
