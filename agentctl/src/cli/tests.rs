//! The command line's help: the global options listed once, in `agentctl --help`.

use super::*;

/// Whether `help` lists `flag` as an option (its docs may still name it).
fn lists(help: &str, flag: &str) -> bool {
    help.lines().any(|line| line.trim_start().starts_with(flag))
}

fn help(path: &[&str]) -> String {
    let mut command = Cli::command();
    command.build();
    let mut at = &mut command;
    for name in path {
        at = at
            .find_subcommand_mut(name)
            .unwrap_or_else(|| panic!("no subcommand {name}"));
    }
    at.render_long_help().to_string()
}

#[test]
fn the_global_options_are_listed_once_in_the_top_help() {
    let top = help(&[]);
    for flag in ["--socket", "--no-start", "--json", "--color"] {
        assert!(lists(&top, flag), "{top}");
    }
    for path in [
        &["chat"][..],
        &["run"],
        &["sessions"],
        &["sessions", "list"],
        &["mcp", "logs"],
        &["task", "start"],
    ] {
        let sub = help(path);
        for flag in ["--socket", "--no-start", "--json", "--color"] {
            assert!(!lists(&sub, flag), "{path:?} lists {flag}:\n{sub}");
        }
    }
}

#[test]
fn the_global_options_are_still_taken_after_a_subcommand() {
    let parse = |args: &[&str]| {
        let matches = Cli::command()
            .try_get_matches_from(args)
            .unwrap_or_else(|err| panic!("{args:?}: {err}"));
        <Cli as clap::FromArgMatches>::from_arg_matches(&matches).expect("a command line")
    };
    let cli = parse(&["agentctl", "sessions", "list", "--json", "--no-start"]);
    assert!(cli.json && cli.no_start);
    let cli = parse(&["agentctl", "--json", "sessions", "list"]);
    assert!(cli.json && !cli.no_start);
    let cli = parse(&[
        "agentctl", "run", "--color", "never", "--socket", "/s", "hi",
    ]);
    assert_eq!(cli.color, ColorChoice::Never);
    assert_eq!(cli.socket, Some(PathBuf::from("/s")));
}
