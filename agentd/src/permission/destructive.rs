//! The built-in list of destructive shell commands, a hard limit no rule, mode or hook lifts.
//!
//! Commands are matched by their command word and arguments (after quote removal and wrapper
//! stripping: `sudo`, `env`, `nohup`, …) on every part of a compound command, never by
//! substring: `echo "rm -rf /"` prints text and is not flagged, while `rm -rf "/"`,
//! `sudo rm -rf /`, `sh -c 'rm -rf /'` and `echo $(rm -rf /)` are. Pipelines are checked as a
//! whole for "download piped into a shell".

use super::shell::{
    NestedKind, ParsedShell, Pipeline, SHELLS, SimpleCommand, basename, effective_words,
    is_redirection, parse,
};

/// Why `command` is refused by the destructive-command list, or None. The reason names the
/// offending part, e.g. "`rm -rf /` deletes `/` recursively".
pub fn destructive_reason(command: &str) -> Option<String> {
    if let Some(reason) = fork_bomb(command) {
        return Some(reason);
    }
    let parsed: ParsedShell = parse(command);
    if parsed.too_deep {
        return Some(
            "the command nests substitutions or `sh -c` bodies too deeply to be checked".to_owned(),
        );
    }
    check_pipelines(&parsed.pipelines)
}

/// Directories directly under `/` whose recursive removal or permission change wrecks a system.
const SYSTEM_DIRS: &[&str] = &[
    "bin",
    "boot",
    "dev",
    "etc",
    "home",
    "lib",
    "lib32",
    "lib64",
    "opt",
    "proc",
    "root",
    "sbin",
    "srv",
    "sys",
    "usr",
    "var",
    "Users",
    "System",
    "Library",
    "Applications",
];

/// Programs that download.
const DOWNLOADERS: &[&str] = &["curl", "wget"];

/// Device files that are safe to write to.
const SAFE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
];
const SAFE_DEVICE_DIRS: &[&str] = &["/dev/fd/", "/dev/shm/", "/dev/pts/"];

fn check_pipelines(pipelines: &[Pipeline]) -> Option<String> {
    for pipeline in pipelines {
        if let Some(reason) = download_into_shell(pipeline) {
            return Some(reason);
        }
        for command in &pipeline.commands {
            if let Some(why) = destructive_command(&command.words) {
                return Some(format!("`{}` {why}", command.text));
            }
            for nested in &command.nested {
                if let Some(reason) = check_pipelines(&nested.pipelines) {
                    return Some(reason);
                }
            }
        }
    }
    None
}

/// Why one simple command is destructive, or None.
fn destructive_command(words: &[String]) -> Option<String> {
    if let Some(why) = writes_to_device(words) {
        return Some(why);
    }
    let words = effective_words(words);
    let (name, args) = words.split_first()?;
    let name = basename(name);
    let options = || {
        args.iter()
            .filter(|arg| arg.starts_with('-') && arg.len() > 1)
    };
    let operands = || args.iter().filter(|arg| !arg.starts_with('-'));
    match name {
        "rm" => {
            let recursive = options().any(|option| {
                option == "--recursive"
                    || (!option.starts_with("--") && option.contains(['r', 'R']))
            });
            if options().any(|option| option == "--no-preserve-root") {
                return Some("removes `/` (--no-preserve-root)".to_owned());
            }
            let target = operands().find(|operand| is_system_root(operand))?;
            recursive.then(|| format!("deletes `{target}` recursively"))
        }
        "chmod" | "chown" | "chgrp" => {
            let recursive = options().any(|option| {
                option == "--recursive" || (!option.starts_with("--") && option.contains('R'))
            });
            let target = operands().find(|operand| is_system_root(operand))?;
            recursive.then(|| format!("changes ownership or permissions of `{target}` recursively"))
        }
        _ if name.starts_with("mkfs") || name == "wipefs" || name == "mkswap" => {
            Some("formats or wipes a filesystem".to_owned())
        }
        "dd" => args
            .iter()
            .filter_map(|arg| arg.strip_prefix("of="))
            .find(|target| is_unsafe_device(target))
            .map(|target| format!("writes raw data to the device `{target}`")),
        "cp" | "mv" | "install" | "rsync" | "ln" => operands()
            .next_back()
            .filter(|target| is_unsafe_device(target))
            .map(|target| format!("writes to the device `{target}`")),
        "tee" | "shred" | "blkdiscard" | "truncate" => operands()
            .find(|target| is_unsafe_device(target))
            .map(|target| format!("writes to the device `{target}`")),
        "shutdown" | "reboot" | "halt" | "poweroff" => {
            Some("shuts down or restarts the machine".to_owned())
        }
        "init" | "telinit" if args.iter().any(|arg| arg == "0" || arg == "6") => {
            Some("shuts down or restarts the machine".to_owned())
        }
        "systemctl"
            if args.iter().any(|arg| {
                matches!(
                    arg.as_str(),
                    "poweroff" | "reboot" | "halt" | "kexec" | "soft-reboot"
                )
            }) =>
        {
            Some("shuts down or restarts the machine".to_owned())
        }
        _ => None,
    }
}

/// `> /dev/sda` and friends: a redirection into a device that is not a safe one.
fn writes_to_device(words: &[String]) -> Option<String> {
    let mut words = words.iter();
    while let Some(word) = words.next() {
        if is_redirection(word) && word.contains('>') {
            let target = words.next()?;
            if is_unsafe_device(target) {
                return Some(format!("writes to the device `{target}`"));
            }
        }
    }
    None
}

fn is_unsafe_device(path: &str) -> bool {
    let path = normalize(path);
    let path = path.as_str();
    path.starts_with("/dev/")
        && !SAFE_DEVICES.contains(&path)
        && !SAFE_DEVICE_DIRS.iter().any(|dir| path.starts_with(dir))
}

/// `/`, `/*`, `~`, `$HOME`, `${HOME}` (with or without `/` or `/*`) and top-level system
/// directories like `/usr` or `/etc/`.
fn is_system_root(operand: &str) -> bool {
    let normalized = normalize(operand);
    let mut trimmed = normalized.as_str();
    loop {
        let before = trimmed;
        trimmed = trimmed
            .strip_suffix("/*")
            .or_else(|| trimmed.strip_suffix("/."))
            .or_else(|| trimmed.strip_suffix('/'))
            .unwrap_or(trimmed);
        if trimmed == before {
            break;
        }
    }
    if matches!(trimmed, "" | "~" | "$HOME" | "${HOME}" | "/." | "/..") && !operand.is_empty() {
        return true;
    }
    match trimmed.strip_prefix('/') {
        Some(rest) => {
            let rest = rest.trim_start_matches('/');
            SYSTEM_DIRS.contains(&rest)
        }
        None => false,
    }
}

/// An absolute path with `.`, `..` and repeated `/` resolved lexically (`/usr/../etc` →
/// `/etc`); other words unchanged. A trailing `/` or `/*` is kept for the caller.
fn normalize(path: &str) -> String {
    if !path.starts_with('/') || !(path.contains("/.") || path.contains("//")) {
        return path.to_owned();
    }
    let (body, tail) = match path.strip_suffix("/*") {
        Some(body) => (body, "/*"),
        None => (path, ""),
    };
    let mut components: Vec<&str> = Vec::new();
    for component in body.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                components.pop();
            }
            other => components.push(other),
        }
    }
    format!("/{}{tail}", components.join("/"))
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

/// `:(){ :|:& };:` and the same shape with any function name.
fn fork_bomb(command: &str) -> Option<String> {
    let compact: String = command.chars().filter(|c| !c.is_whitespace()).collect();
    let mut search_from = 0;
    while let Some(found) = compact.get(search_from..).and_then(|rest| rest.find("(){")) {
        let at = search_from + found;
        let before = compact.get(..at).unwrap_or("");
        let name_start = before
            .rfind(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | ':' | '.' | '-')))
            .map_or(0, |index| index + 1);
        let name = before.get(name_start..).unwrap_or("");
        let body = compact.get(at + 3..).unwrap_or("");
        if !name.is_empty() && body.starts_with(&format!("{name}|{name}&")) {
            return Some(format!("`{}` is a fork bomb", command.trim()));
        }
        search_from = at + 3;
    }
    None
}
