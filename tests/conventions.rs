//! Command-line conventions: shell completions, the man page, global options anywhere on the
//! command line, and clear messages for a bad key map entry.

use assert_cmd::Command;
use clap::Parser;
use falat::cli::{Cli, Command as Sub, normalize_args};

const SUBCOMMANDS: [&str; 7] = ["open", "inspect", "diagnose", "eval", "train", "completions", "man"];

fn falat() -> Command {
    let mut cmd = Command::cargo_bin("falat").unwrap();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

fn stdout_of(args: &[&str]) -> String {
    let out = falat().args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn completions_for_bash_zsh_and_fish_name_every_subcommand() {
    let bash = stdout_of(&["completions", "bash"]);
    assert!(bash.contains("_falat()") && bash.contains("complete -F _falat"), "{bash}");
    let zsh = stdout_of(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef falat"), "{zsh}");
    let fish = stdout_of(&["completions", "fish"]);
    assert!(fish.contains("complete -c falat"), "{fish}");
    for sub in SUBCOMMANDS {
        assert!(bash.contains(&format!("falat,{sub})")), "bash: {sub}");
        assert!(zsh.contains(&format!("'{sub}:")), "zsh: {sub}");
        assert!(fish.contains(&format!("-a \"{sub}\"")), "fish: {sub}");
    }
    // Option values complete too: the report formats of diagnose, the themes' option.
    assert!(fish.contains("otlp") && fish.contains("langfuse") && fish.contains("-l theme"), "{fish}");
    let err = falat().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(err.status.code(), Some(2));
}

#[test]
fn the_man_page_is_roff_with_a_section_per_subcommand() {
    let man = stdout_of(&["man"]);
    assert!(man.starts_with(".ie \\n(.g .ds Aq \\(aq\n") || man.starts_with(".TH"), "{}", &man[..200.min(man.len())]);
    assert!(man.contains(".TH falat 1"), "{man}");
    assert!(man.contains(".SH NAME\nfalat"), "{man}");
    for sub in SUBCOMMANDS.iter().filter(|s| **s != "man" && **s != "completions") {
        assert!(man.contains(&format!(".SH \"FALAT {}\"", sub.to_uppercase())), "no section for {sub}");
    }
    // A command's own options are in its section: diagnose's --format with the export formats.
    let diagnose = &man[man.find(".SH \"FALAT DIAGNOSE\"").unwrap()..man.find(".SH \"FALAT EVAL\"").unwrap()];
    assert!(diagnose.contains("\\-\\-format") && diagnose.contains("langfuse"), "{diagnose}");
    assert!(diagnose.contains(".SS "), "the parts of a command's section are sub-sections");
}

fn parse(args: &[&str]) -> Cli {
    let os: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
    Cli::try_parse_from(normalize_args(os)).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn theme_and_verbose_are_accepted_before_or_after_the_trace_and_command() {
    let trace = "sample_traces/who-and-when-hand-crafted-47.json";
    for args in [
        vec!["falat", "--theme", "light", trace],
        vec!["falat", "--theme=light", trace],
        vec!["falat", trace, "--theme", "light"],
        vec!["falat", "-v", "--theme", "light", trace],
        vec!["falat", "--theme", "light", "-v", trace],
        vec!["falat", "--theme", "light", "open", trace],
        vec!["falat", "open", trace, "--theme", "light"],
    ] {
        let cli = parse(&args);
        assert_eq!(cli.theme.as_deref(), Some("light"), "{args:?}");
        match &cli.command {
            Sub::Open(o) => assert_eq!(o.trace, std::path::Path::new(trace), "{args:?}"),
            other => panic!("{args:?} parsed as {other:?}"),
        }
    }
    let cli = parse(&["falat", "-v", trace]);
    assert_eq!((cli.verbose, cli.theme.as_deref()), (1, None));
    // Global: also after another command's arguments.
    let cli = parse(&["falat", "diagnose", trace, "-vv", "--theme", "dark"]);
    assert_eq!((cli.verbose, cli.theme.as_deref()), (2, Some("dark")));
}

#[cfg(feature = "tui")]
#[test]
fn a_bad_key_map_entry_names_the_file_the_action_and_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keys.toml");
    std::fs::write(&path, "[keys]\nquit = \"Q\"\nmark = 7\n").unwrap();
    let (map, problems) = falat::tui::keymap::KeyMap::with_user_file(&path).unwrap();
    assert_eq!(
        problems,
        [format!(
            "key map {}: mark: expected a list of keys like [\"q\"], found an integer; the default keys are kept",
            path.display()
        )]
    );
    assert_eq!(map.all_keys(falat::tui::action::Action::Quit), "Q", "a string is a one-key list");
    assert_eq!(map.all_keys(falat::tui::action::Action::Mark), "m");
}

#[cfg(feature = "tui")]
#[test]
fn the_tui_warns_of_a_bad_entry_in_the_user_s_keys_toml_and_keeps_the_rest() {
    use falat::tui::{self, TuiOptions, app::Level};
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    std::fs::create_dir(&config).unwrap();
    let keys = config.join("keys.toml");
    std::fs::write(&keys, "[keys]\nquit = \"Q\"\nrun_all = 5\n").unwrap();
    let trace =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces/who-and-when-hand-crafted-47.json");
    let opts = TuiOptions { config_dir: Some(config), ..TuiOptions::default() };
    let app = tui::open(&trace, &opts, std::sync::Arc::new(falat::judge::heuristic::HeuristicJudge)).unwrap();
    let status = app.status.clone().expect("a status");
    assert_eq!(status.level, Level::Warn);
    assert!(
        status.text.contains(&format!(
            "key map {}: run_all: expected a list of keys like [\"q\"], found an integer; the default keys are kept",
            keys.display()
        )),
        "{}",
        status.text
    );
    assert_eq!(app.keymap.all_keys(falat::tui::action::Action::Quit), "Q");
    assert_eq!(app.keymap.all_keys(falat::tui::action::Action::RunAll), "a");
}

#[cfg(feature = "tui")]
#[test]
fn a_light_terminal_background_picks_the_light_theme_unless_one_is_set() {
    use falat::tui::{Background, default_theme};
    assert_eq!(default_theme(Some(Background::Light)), "light");
    assert_eq!(default_theme(Some(Background::Dark)), "dark");
    assert_eq!(default_theme(None), "dark", "a terminal that does not answer keeps the dark default");
}
