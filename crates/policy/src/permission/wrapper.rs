//! What a command runs besides itself: the inner command of a wrapper (`sudo`, `timeout 5`,
//! `find -exec`), the script of an interpreter (`sh -c`, `eval`, `su -c`, `env -S`, a git
//! alias), or a note that it cannot be known before it runs (a shell reading standard input).

use super::script_runs::{sg_run, shell_run, watch_run};
use super::shell::{
    MAX_NESTING, Nested, NestedKind, Parser, Pipeline, SHELLS, SimpleCommand, basename,
    is_redirection,
};

/// One thing a command runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Run {
    /// These words run as a command of their own (`sudo rm x` runs `rm x`).
    Command(Vec<String>),
    /// This text runs as a shell script.
    Script(String),
    /// Something runs that the parser cannot see; the reason says what.
    Unknown(&'static str),
}

/// What `words` (one simple command, redirections included) runs besides itself.
pub(crate) fn runs(words: &[String]) -> Vec<Run> {
    let plain = without_redirections(words);
    let effective = effective_words(&plain);
    let mut runs = Vec::new();
    if !effective.is_empty() && effective.len() < plain.len() {
        runs.push(Run::Command(effective.to_vec()));
    }
    let Some((name, args)) = effective.split_first() else {
        return runs;
    };
    if name.contains(['$', '`']) {
        runs.push(Run::Unknown("its command name is only known when it runs"));
        return runs;
    }
    let name = basename(name);
    match name {
        "eval" => runs.push(Run::Script(args.join(" "))),
        "su" | "runuser" => {
            if let Some(script) = option_value(args, &["-c", "--command"]) {
                runs.push(Run::Script(script));
            }
        }
        "env" => {
            if let Some(script) = option_value(args, &["-S", "--split-string"]) {
                runs.push(Run::Script(script));
            }
        }
        "flock" => match option_value(args, &["-c", "--command"]) {
            Some(script) => runs.push(Run::Script(script)),
            None => runs.push(Run::Unknown(
                "flock runs a command the parser does not know",
            )),
        },
        "find" => runs.extend(find_runs(args)),
        "git" => runs.extend(git_alias_runs(args)),
        "watch" => runs.extend(watch_run(args)),
        "sg" => runs.extend(sg_run(args)),
        "script" => {
            if let Some(script) = option_value(args, &["-c", "--command"]) {
                runs.push(Run::Script(script));
            }
        }
        _ if SHELLS.contains(&name) => runs.extend(shell_run(args)),
        _ if is_interpreter(name) && args.iter().all(|arg| arg.starts_with('-')) => {
            runs.push(Run::Unknown(
                "an interpreter reads its program from standard input",
            ));
        }
        _ => {}
    }
    runs
}

/// Programs that run a program text they are given.
fn is_interpreter(name: &str) -> bool {
    name.starts_with("python")
        || matches!(
            name,
            "node" | "deno" | "bun" | "perl" | "ruby" | "php" | "lua"
        )
}

impl Parser<'_> {
    /// Adds what `command` runs besides itself (a wrapper's inner command, an interpreter's
    /// script) as nested lists, or notes that it cannot be known.
    pub(super) fn add_runs(&mut self, command: &mut SimpleCommand) {
        let words = command.words.clone();
        let text = command.text.clone();
        command.nested.extend(self.runs_of(&words, &text));
    }

    fn runs_of(&mut self, words: &[String], text: &str) -> Vec<Nested> {
        let mut nested = Vec::new();
        for run in runs(words) {
            match run {
                Run::Script(body) => {
                    let pipelines = self.nested_text(&body);
                    nested.push(Nested {
                        kind: NestedKind::Script,
                        pipelines,
                    });
                }
                Run::Command(inner_words) => {
                    if self.depth >= MAX_NESTING {
                        self.too_deep = true;
                        continue;
                    }
                    self.depth += 1;
                    let inner_text = join_words(&inner_words);
                    let inner = SimpleCommand {
                        nested: self.runs_of(&inner_words, &inner_text),
                        text: inner_text,
                        words: inner_words,
                        ..SimpleCommand::default()
                    };
                    self.depth -= 1;
                    nested.push(Nested {
                        kind: NestedKind::Wrapped,
                        pipelines: vec![Pipeline {
                            commands: vec![inner],
                        }],
                    });
                }
                Run::Unknown(why) => self.unaccounted(&format!("`{text}`: {why}")),
            }
        }
        nested
    }
}

/// The command name and arguments of `words` with leading variable assignments, shell keywords
/// (`if`, `then`, `!`, …) and wrappers that run their arguments (`sudo`, `env`, `nohup`,
/// `timeout 5`, `xargs -n1`, `setsid`, `chroot DIR`, `flock FILE`, `busybox`, `unshare`,
/// `nsenter`, `runuser -u USER`, `pkexec`, `strace`, `systemd-run`, `taskset MASK`, `chrt PRIO`,
/// `prlimit`, `setpriv`, `fakeroot`, …) stripped:
/// `sudo -u root rm -rf /` → `rm -rf /`. `env -S` and `flock -c` run a script, not their
/// arguments, and are kept (see [`runs`]).
pub(crate) fn effective_words(words: &[String]) -> &[String] {
    let mut index = 0;
    loop {
        let Some(word) = words.get(index) else {
            return &[];
        };
        if is_assignment(word) || (word.ends_with("()") && word.len() > 2) {
            // A variable assignment, or the name of a function defined here (`f() { …; }`).
            index += 1;
            continue;
        }
        if word == "function" {
            index += 2; // `function f { …; }`
            continue;
        }
        let name = basename(word);
        let rest = words.get(index + 1..).unwrap_or(&[]);
        let runs_script = |options: &[&str]| {
            rest.iter()
                .any(|arg| options.iter().any(|option| arg.starts_with(option)))
        };
        if (name == "env" && runs_script(&["-S", "--split-string"]))
            || (name == "flock" && runs_script(&["-c", "--command"]))
        {
            return words.get(index..).unwrap_or(&[]);
        }
        if name == "command" && rest.first().is_some_and(|arg| arg == "-v" || arg == "-V") {
            // `command -v rm` looks a name up, it runs nothing.
            return words.get(index..).unwrap_or(&[]);
        }
        if name == "runuser"
            && (runs_script(&["-c", "--command", "--session-command"])
                || !rest
                    .iter()
                    .any(|arg| arg == "-u" || arg.starts_with("--user")))
        {
            // `runuser USER -c SCRIPT` runs a script, `runuser USER` a login shell.
            return words.get(index..).unwrap_or(&[]);
        }
        if matches!(name, "taskset" | "chrt")
            && rest.iter().any(|arg| arg == "-p" || arg == "--pid")
        {
            // `taskset -p MASK PID` changes a running process, it runs nothing.
            return words.get(index..).unwrap_or(&[]);
        }
        let options_with_values: &[&str] = match name {
            "sudo" | "doas" => &["-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t", "-T"],
            "env" => &["-u", "-C", "-S"],
            "nice" => &["-n"],
            "ionice" => &["-c", "-n", "-p"],
            "timeout" => &["-s", "-k", "--signal", "--kill-after"],
            "xargs" => &["-I", "-n", "-P", "-d", "-L", "-s", "-E", "-a"],
            "stdbuf" => &["-i", "-o", "-e"],
            "exec" => &["-a"],
            "flock" => &["-w", "--timeout", "-E", "--conflict-exit-code"],
            "chroot" => &["--userspec", "--groups"],
            "setsid" | "busybox" | "nohup" | "eatmydata" => &[],
            "unshare" => &[
                "-S",
                "-G",
                "-R",
                "-w",
                "-l",
                "--setuid",
                "--setgid",
                "--root",
                "--wd",
                "--load-interp",
                "--propagation",
                "--setgroups",
                "--map-user",
                "--map-group",
                "--map-users",
                "--map-groups",
                "--monotonic",
                "--boottime",
            ],
            "nsenter" => &["-t", "--target", "-S", "--setuid", "-G", "--setgid"],
            "runuser" => &[
                "-u",
                "--user",
                "-g",
                "--group",
                "-G",
                "--supp-group",
                "-s",
                "--shell",
                "-w",
                "--whitelist-environment",
            ],
            "pkexec" => &["-u", "--user"],
            "strace" | "ltrace" => &[
                "-o",
                "-e",
                "-p",
                "-P",
                "-s",
                "-u",
                "-E",
                "-a",
                "-b",
                "-I",
                "-X",
                "-O",
                "-S",
                "-U",
                "-n",
                "-A",
                "-D",
                "-F",
                "-l",
                "-w",
                "-x",
                "-L",
                "--output",
                "--user",
                "--env",
                "--attach",
                "--trace-path",
                "--string-limit",
            ],
            "systemd-run" => &[
                "-u",
                "--unit",
                "-p",
                "--property",
                "--description",
                "--slice",
                "-E",
                "--setenv",
                "--uid",
                "--gid",
                "--nice",
                "--working-directory",
                "-M",
                "--machine",
                "-H",
                "--host",
                "-C",
                "--capsule",
                "--on-active",
                "--on-boot",
                "--on-startup",
                "--on-unit-active",
                "--on-unit-inactive",
                "--on-calendar",
                "--timer-property",
                "--path-property",
                "--socket-property",
                "--service-type",
            ],
            "taskset" => &[],
            "chrt" => &[
                "-T",
                "-P",
                "-D",
                "--sched-runtime",
                "--sched-period",
                "--sched-deadline",
            ],
            "prlimit" => &["-o", "--output"],
            "setpriv" => &[
                "--reuid",
                "--regid",
                "--ruid",
                "--euid",
                "--rgid",
                "--egid",
                "--groups",
                "--securebits",
                "--pdeathsig",
                "--inh-caps",
                "--ambient-caps",
                "--bounding-set",
                "--selinux-label",
                "--apparmor-profile",
                "--landlock-access",
                "--landlock-rule",
            ],
            "fakeroot" => &["-l", "--lib", "--faked", "-s", "-i", "-b"],
            "time" | "command" | "builtin" | "if" | "then" | "else" | "elif" | "do" | "while"
            | "until" | "!" | "{" => &[],
            _ => return words.get(index..).unwrap_or(&[]),
        };
        index += 1;
        while let Some(word) = words.get(index) {
            if word == "--" {
                index += 1;
                break;
            }
            if word.starts_with('-') && word.len() > 1 {
                index += if options_with_values.contains(&word.as_str()) {
                    2
                } else {
                    1
                };
                continue;
            }
            if name == "env" && is_assignment(word) {
                index += 1;
                continue;
            }
            break;
        }
        if matches!(name, "timeout" | "chroot" | "flock" | "taskset" | "chrt")
            && index < words.len()
        {
            index += 1; // the duration, the new root, the lock file, the CPU mask, the priority
        }
    }
}

/// Words as a command line again, quoting those that need it: the text rules match.
pub(crate) fn join_words(words: &[String]) -> String {
    let quoted: Vec<String> = words
        .iter()
        .map(|word| {
            if !word.is_empty()
                && !word.contains(|c: char| c.is_whitespace() || "'\"\\|&;<>()$`*?[]#~".contains(c))
            {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect();
    quoted.join(" ")
}

/// `words` without redirection operators and their targets.
pub(crate) fn without_redirections(words: &[String]) -> Vec<String> {
    let mut plain = Vec::new();
    let mut skip_next = false;
    for word in words {
        if skip_next {
            skip_next = false;
            continue;
        }
        if is_redirection(word) {
            skip_next = true;
            continue;
        }
        plain.push(word.clone());
    }
    plain
}

/// The value of the first of `names` in `args`: `-c x`, `-cx`, `--command x`, `--command=x`,
/// or an option cluster ending in the short name (`-lc x`).
fn option_value(args: &[String], names: &[&str]) -> Option<String> {
    for (index, arg) in args.iter().enumerate() {
        for name in names {
            if let Some(value) = arg
                .strip_prefix(name)
                .and_then(|rest| rest.strip_prefix('='))
                .filter(|_| name.starts_with("--"))
            {
                return Some(value.to_owned());
            }
            let short_cluster = name.len() == 2
                && !name.starts_with("--")
                && arg.starts_with('-')
                && !arg.starts_with("--")
                && arg.ends_with(&name[1..]);
            if let Some(attached) = arg
                .strip_prefix(name)
                .filter(|rest| name.len() == 2 && !rest.is_empty())
            {
                return Some(attached.to_owned());
            }
            if arg == name || short_cluster {
                return args.get(index + 1).cloned();
            }
        }
    }
    None
}

/// `find … -exec cmd {} ;` runs `cmd {}`; `-delete` deletes what matches.
fn find_runs(args: &[String]) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        index += 1;
        match arg.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let mut command = Vec::new();
                while let Some(word) = args.get(index) {
                    index += 1;
                    if word == ";" || word == "+" {
                        break;
                    }
                    command.push(word.clone());
                }
                if !command.is_empty() {
                    runs.push(Run::Command(command));
                }
            }
            "-delete" => runs.push(Run::Unknown("find -delete deletes every file it matches")),
            _ => {}
        }
    }
    runs
}

/// `git -c alias.x='!cmd' x` runs `cmd` as a shell script, and so do settings whose value is a
/// command (`core.pager`, `core.sshCommand`, `diff.external`, …); settings that name hooks or
/// filters run what the parser cannot see. Only the options before git's subcommand count.
fn git_alias_runs(args: &[String]) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        index += 1;
        let setting = match arg.as_str() {
            "-c" => {
                index += 1;
                args.get(index - 1).map(String::as_str)
            }
            "-C" | "--git-dir" | "--work-tree" | "--namespace" => {
                index += 1;
                continue;
            }
            _ if arg.starts_with("-c") => arg.get(2..),
            _ if arg.starts_with('-') => continue,
            _ => break,
        };
        let Some((key, value)) = setting.and_then(|setting| setting.split_once('=')) else {
            continue;
        };
        let key = key.to_ascii_lowercase();
        if key.starts_with("alias.") {
            match value.strip_prefix('!') {
                Some(script) => runs.push(Run::Script(script.to_owned())),
                None => runs.push(Run::Unknown("a git alias set on the command line")),
            }
        } else if GIT_COMMAND_SETTINGS
            .iter()
            .any(|suffix| key.ends_with(suffix))
        {
            runs.push(Run::Script(value.to_owned()));
        } else if key.starts_with("filter.")
            || key.starts_with("core.hookspath")
            || key.starts_with("core.fsmonitor")
            || key.starts_with("pager.")
        {
            runs.push(Run::Unknown(
                "a git setting on the command line runs a program",
            ));
        }
    }
    runs
}

/// Git settings whose value is a shell command (matched as a key suffix, lowercase).
const GIT_COMMAND_SETTINGS: &[&str] = &[
    "core.pager",
    "core.editor",
    "core.sshcommand",
    "sequence.editor",
    "diff.external",
    ".textconv",
    "credential.helper",
    "gpg.program",
    "gpg.ssh.program",
];

/// `NAME=value` as a leading variable assignment.
fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// The text of `$'…'` with `\n`, `\t`, `\xHH`, octal `\NNN` and other `\c` escapes decoded
/// (`\x2f` is `/`), so a path spelled that way is judged as the path it is.
pub(crate) fn decode_ansi_c(body: &str) -> String {
    let mut decoded = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            decoded.push(c);
            continue;
        }
        let Some(escape) = chars.next() else {
            decoded.push('\\');
            break;
        };
        let (radix, max_digits, mut value, mut digits) = match escape {
            'n' => {
                decoded.push('\n');
                continue;
            }
            't' => {
                decoded.push('\t');
                continue;
            }
            'x' => (16, 2, 0, 0),
            '0'..='7' => (8, 3, escape.to_digit(8).unwrap_or(0), 1),
            other => {
                decoded.push(other);
                continue;
            }
        };
        while digits < max_digits
            && let Some(digit) = chars.peek().and_then(|d| d.to_digit(radix))
        {
            value = value * radix + digit;
            digits += 1;
            chars.next();
        }
        match char::from_u32(value).filter(|_| digits > 0) {
            Some(decoded_char) => decoded.push(decoded_char),
            None => decoded.push(escape),
        }
    }
    decoded
}
