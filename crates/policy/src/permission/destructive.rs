//! The built-in list of destructive shell commands, a hard limit no rule, mode or hook lifts.
//!
//! Commands are matched by their command word and arguments (after quote removal and wrapper
//! stripping: `sudo`, `env`, `nohup`, `unshare`, `strace`, `systemd-run`, …) on every part of a
//! compound command, never by substring: `echo "rm -rf /"` prints text and is not flagged, while
//! `rm -rf "/"`, `sudo rm -rf /`, `sh -c -- 'rm -rf /'`, `watch rm -rf /` and `echo $(rm -rf /)`
//! are. A `cd` to a root makes the relative operands after it count (`cd / && rm -rf *`), and
//! `echo / | xargs rm -rf` hands the echoed words on. Pipelines are checked as a whole for
//! "download piped into a shell". What each class is lives with its noun: [`paths`] (which
//! operands are roots or devices), [`files`] (deleting, moving or locking up a root),
//! [`devices`] (filesystems, partitions, raw devices), [`processes`] (fork bombs, killing every
//! process, shutdown) and [`code`] (interpreter one-liners).

mod code;
mod devices;
mod files;
mod paths;
mod processes;

use self::paths::Cwd;
use super::shell::{
    NestedKind, ParsedShell, Pipeline, SHELLS, SimpleCommand, basename, effective_words,
    is_redirection, parse,
};
use super::wrapper::{Run, runs, without_redirections};

/// Why `command` is refused by the destructive-command list, or None. The reason names the
/// offending part, e.g. "`rm -rf /` deletes `/` recursively".
pub(crate) fn destructive_reason(command: &str) -> Option<String> {
    reason_at(command, 0)
}

/// [`destructive_reason`] for a line found `depth` program texts deep (a shell line inside a
/// `python3 -c` program inside a shell line).
fn reason_at(command: &str, depth: usize) -> Option<String> {
    if let Some(reason) = processes::fork_bomb(command) {
        return Some(reason);
    }
    let parsed: ParsedShell = parse(command);
    if parsed.too_deep {
        return Some(
            "the command nests substitutions or `sh -c` bodies too deeply to be checked".to_owned(),
        );
    }
    Checker { depth }.pipelines(&parsed.pipelines, &mut Cwd::default())
}

/// Programs that download.
const DOWNLOADERS: &[&str] = &["curl", "wget"];

/// Programs whose output `xargs` hands on as operands, when the line names it.
const LISTERS: &[&str] = &["echo", "printf", "find"];

/// Walks a parsed line, keeping the working directory the `cd`s in it lead to.
struct Checker {
    depth: usize,
}

impl Checker {
    fn pipelines(&self, pipelines: &[Pipeline], cwd: &mut Cwd) -> Option<String> {
        for pipeline in pipelines {
            if let Some(reason) = download_into_shell(pipeline) {
                return Some(reason);
            }
            let mut previous: Option<&SimpleCommand> = None;
            for command in &pipeline.commands {
                if let Some(why) = self.simple_command(command, previous, cwd) {
                    return Some(format!("`{}` {why}", command.text));
                }
                for run in runs(&command.words) {
                    if let Run::Script(body) = run
                        && let Some(reason) = processes::fork_bomb(&body)
                    {
                        return Some(reason);
                    }
                }
                for nested in &command.nested {
                    // A subshell's or script's `cd` stays inside it.
                    let mut inner = cwd.clone();
                    if let Some(reason) = self.pipelines(&nested.pipelines, &mut inner) {
                        return Some(reason);
                    }
                }
                if pipeline.commands.len() == 1 {
                    let plain = without_redirections(&command.words);
                    if let Some((name, args)) = effective_words(&plain).split_first()
                        && matches!(name.as_str(), "cd" | "pushd")
                    {
                        *cwd = cwd.after_cd(args);
                    }
                }
                previous = Some(command);
            }
        }
        None
    }

    /// Why one simple command is destructive, or None; `previous` is the command piping into
    /// it.
    fn simple_command(
        &self,
        command: &SimpleCommand,
        previous: Option<&SimpleCommand>,
        cwd: &Cwd,
    ) -> Option<String> {
        if let Some(why) = devices::redirection_into_device(&command.words, cwd) {
            return Some(why);
        }
        let plain = without_redirections(&command.words);
        let words = effective_words(&plain);
        if let Some(why) = self.words(words, cwd) {
            return Some(why);
        }
        // `echo / | xargs rm -rf`: the listed words become the operands.
        let fed_by_xargs = plain
            .iter()
            .find(|word| !word.contains('='))
            .is_some_and(|word| basename(word) == "xargs");
        if fed_by_xargs && let Some(previous) = previous {
            let listed = listed_words(&previous.words);
            if !listed.is_empty() {
                let mut fed = words.to_vec();
                fed.extend(listed);
                return self.words(&fed, cwd);
            }
        }
        None
    }

    /// Why the command `words` (wrappers and redirections stripped) is destructive, or None.
    fn words(&self, words: &[String], cwd: &Cwd) -> Option<String> {
        let (name, args) = words.split_first()?;
        let name = basename(name);
        files::check(name, args, cwd)
            .or_else(|| devices::check(name, args, cwd))
            .or_else(|| processes::check(name, args))
            .or_else(|| code::check(name, args, self.depth))
    }
}

/// The words `echo`, `printf` or an unnarrowed `find` writes, as far as the line shows them.
fn listed_words(words: &[String]) -> Vec<String> {
    let plain = without_redirections(words);
    let Some((name, args)) = effective_words(&plain).split_first() else {
        return Vec::new();
    };
    let name = basename(name);
    if !LISTERS.contains(&name) {
        return Vec::new();
    }
    match name {
        "find" => files::unnarrowed_find_roots(args),
        "printf" => args.iter().skip(1).cloned().collect(),
        _ => args
            .iter()
            .skip_while(|arg| matches!(arg.as_str(), "-n" | "-e" | "-E" | "-ne"))
            .cloned()
            .collect(),
    }
}

/// `curl … | sh`, `wget -O- … | sudo bash`, `bash <(curl …)`, `sh -c "$(curl …)"`.
fn download_into_shell(pipeline: &Pipeline) -> Option<String> {
    let mut download: Option<&SimpleCommand> = None;
    for command in &pipeline.commands {
        if let Some(source) = download
            && reads_script_from_stdin(&command.words)
        {
            return Some(format!(
                "`{}` pipes a download into `{}`; download the script, read it, then run it",
                source.text, command.text
            ));
        }
        if runs_script(&command.words)
            && command.nested.iter().any(|nested| {
                nested.kind != NestedKind::Group && nested.pipelines.iter().any(downloads)
            })
        {
            return Some(format!(
                "`{}` runs a downloaded script; download it, read it, then run it",
                command.text
            ));
        }
        if download.is_none() && command_downloads(command) {
            download = Some(command);
        }
    }
    None
}

fn downloads(pipeline: &Pipeline) -> bool {
    pipeline.commands.iter().any(command_downloads)
}

fn command_downloads(command: &SimpleCommand) -> bool {
    let words = effective_words(&command.words);
    words
        .first()
        .is_some_and(|name| DOWNLOADERS.contains(&basename(name)))
        || command
            .nested
            .iter()
            .any(|nested| nested.pipelines.iter().any(downloads))
}

fn is_interpreter(name: &str) -> bool {
    SHELLS.contains(&name)
        || name.starts_with("python")
        || matches!(name, "perl" | "ruby" | "node" | "php")
}

/// A shell or interpreter that runs a script text it is given: `bash`, `sh -c …`, `eval`,
/// `source`, `.`.
fn runs_script(words: &[String]) -> bool {
    let words = effective_words(words);
    words.first().is_some_and(|name| {
        let name = basename(name);
        is_interpreter(name) || matches!(name, "eval" | "source" | ".")
    })
}

/// A shell or interpreter reading its script from stdin: no script operand, or `-s` / `-`.
fn reads_script_from_stdin(words: &[String]) -> bool {
    let words = effective_words(words);
    let Some((name, args)) = words.split_first() else {
        return false;
    };
    if !is_interpreter(basename(name)) {
        return false;
    }
    let mut operands = Vec::new();
    let mut args = args.iter().peekable();
    while let Some(arg) = args.next() {
        if is_redirection(arg) {
            args.next();
            continue;
        }
        // `2>/dev/null`: the fd number before a redirection.
        if arg.chars().all(|c| c.is_ascii_digit())
            && args.peek().is_some_and(|next| is_redirection(next))
        {
            continue;
        }
        if arg == "-s" || arg == "-" {
            return true;
        }
        if !arg.starts_with('-') {
            operands.push(arg);
        }
    }
    operands.is_empty()
}
