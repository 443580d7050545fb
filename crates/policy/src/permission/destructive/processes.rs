//! Commands that take the machine or the user's session down: fork bombs (functions calling
//! themselves twice concurrently, endless loops starting background jobs), signals to every
//! process (`kill -9 -1`, `pkill -u USER`, `killall5`), shutdown, reboot and session ends
//! (`systemctl poweroff`, `loginctl terminate-user`, the login1 D-Bus methods).

/// `systemctl` verbs that stop the machine or drop to single-user mode.
const SYSTEMCTL_POWER: &[&str] = &[
    "poweroff",
    "reboot",
    "halt",
    "kexec",
    "soft-reboot",
    "rescue",
    "emergency",
];

/// Targets whose start or isolation stops the machine or its sessions.
const POWER_TARGETS: &[&str] = &[
    "poweroff",
    "reboot",
    "halt",
    "kexec",
    "soft-reboot",
    "rescue",
    "emergency",
    "shutdown",
];

/// `loginctl` verbs that stop the machine or end the user's sessions.
const LOGINCTL_ENDS: &[&str] = &[
    "poweroff",
    "reboot",
    "halt",
    "kexec",
    "soft-reboot",
    "terminate-user",
    "kill-user",
    "terminate-session",
    "kill-session",
    "terminate-seat",
];

/// login1 and systemd1 D-Bus methods that stop the machine or end sessions.
const DBUS_POWER_METHODS: &[&str] = &[
    "PowerOff",
    "Reboot",
    "Halt",
    "KExec",
    "SoftReboot",
    "TerminateUser",
    "KillUser",
    "TerminateSession",
    "KillSession",
    "TerminateSeat",
];

/// `pkill` and `killall` options that take a value.
const PKILL_VALUE_OPTIONS: &[&str] = &[
    "-u",
    "-U",
    "-g",
    "-G",
    "-P",
    "-s",
    "-t",
    "-F",
    "-q",
    "-o",
    "-y",
    "-n",
    "-Z",
    "--signal",
    "--euid",
    "--uid",
    "--user",
    "--pgroup",
    "--group",
    "--parent",
    "--session",
    "--terminal",
    "--pidfile",
    "--ns",
    "--nslist",
    "--older-than",
    "--younger-than",
    "--context",
];

/// Patterns that match every process name.
const MATCH_ALL: &[&str] = &["", ".", ".*", ".+", "^", "$", "^.*", "^.*$", "^.", "*"];

/// Signals that do not end a process, so sending them to pid 1 is not destructive.
const HARMLESS_SIGNALS: &[&str] = &[
    "0", "HUP", "SIGHUP", "1", "USR1", "SIGUSR1", "USR2", "SIGUSR2",
];

/// Why this command (name and arguments, wrappers stripped) takes the system down, or None.
pub(super) fn check(name: &str, args: &[String]) -> Option<String> {
    let has = |words: &[&str]| args.iter().any(|arg| words.contains(&arg.as_str()));
    let power = || Some("shuts down or restarts the machine".to_owned());
    if args.iter().any(|arg| arg == "--help") {
        return None;
    }
    match name {
        "kill" => kill(args),
        "pkill" | "killall" => pkill(name, args),
        "killall5" => Some("signals every process".to_owned()),
        "shutdown" if !has(&["-c", "-k"]) => power(),
        "reboot" | "halt" | "poweroff" | "openrc-shutdown" => power(),
        "init" | "telinit" if has(&["0", "6", "1", "S", "s", "single"]) => power(),
        "systemctl" if has(SYSTEMCTL_POWER) => power(),
        "systemctl"
            if has(&["start", "isolate"])
                && args.iter().any(|arg| {
                    POWER_TARGETS.contains(&arg.strip_suffix(".target").unwrap_or(arg))
                }) =>
        {
            power()
        }
        "loginctl" if has(LOGINCTL_ENDS) => {
            Some("shuts down the machine or ends the user's sessions".to_owned())
        }
        "kexec" if has(&["-e", "--exec", "-f", "--force"]) => power(),
        "dbus-send" | "busctl" | "gdbus" | "qdbus"
            if args
                .iter()
                .any(|arg| DBUS_POWER_METHODS.contains(&arg.rsplit('.').next().unwrap_or(arg))) =>
        {
            Some("asks systemd to shut down the machine or end sessions".to_owned())
        }
        _ => None,
    }
}

/// `kill [-SIG | -s SIG | -n NUM] [--] PID…`: refused for pid `-1` (every process the user
/// may signal) with any signal but 0, and for pid 1 with one that ends it.
fn kill(args: &[String]) -> Option<String> {
    let mut signal = "TERM".to_owned();
    let mut pids = Vec::new();
    let mut args = args.iter().peekable();
    let mut options_done = false;
    let mut first = true;
    while let Some(arg) = args.next() {
        let is_first = std::mem::take(&mut first);
        if options_done || !arg.starts_with('-') || arg == "-" {
            pids.push(arg.as_str());
            continue;
        }
        match arg.as_str() {
            "--" => options_done = true,
            "-l" | "-L" | "--list" | "--table" => return None,
            "-s" | "-n" | "--signal" => {
                if let Some(value) = args.next() {
                    signal = value.clone();
                }
            }
            "-q" | "--queue" | "--timeout" => {
                args.next();
            }
            _ if is_first => signal = arg.trim_start_matches('-').to_owned(),
            // After the signal, `-N` is a process group (`-1`: every process).
            _ => pids.push(arg.as_str()),
        }
    }
    let signal = signal.to_ascii_uppercase();
    if signal == "0" {
        return None;
    }
    if pids.contains(&"-1") {
        return Some("signals every process of the user".to_owned());
    }
    (pids.contains(&"1") && !HARMLESS_SIGNALS.contains(&signal.as_str()))
        .then(|| "kills init, which takes the whole system down".to_owned())
}

/// `pkill -u USER` or `killall -u USER` with no name (every process of the user), or a pattern
/// that matches every process (`pkill .`, `killall -r .`).
fn pkill(name: &str, args: &[String]) -> Option<String> {
    let mut by_user = false;
    let mut regex = name == "pkill";
    let mut patterns = Vec::new();
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        index += 1;
        if arg == "--" {
            patterns.extend(args.get(index..).unwrap_or(&[]).iter());
            break;
        }
        if !arg.starts_with('-') || arg.len() == 1 {
            patterns.push(arg);
            continue;
        }
        let option = arg.split('=').next().unwrap_or(arg);
        by_user |= matches!(option, "--euid" | "--uid" | "--user")
            || !arg.starts_with("--") && (arg.starts_with("-u") || arg.starts_with("-U"));
        regex |= matches!(arg.as_str(), "-r" | "--regexp");
        if PKILL_VALUE_OPTIONS.contains(&arg.as_str()) {
            index += 1;
        }
    }
    if patterns.is_empty() && by_user {
        return Some("kills every process of a user".to_owned());
    }
    (regex
        && patterns
            .iter()
            .any(|pattern| MATCH_ALL.contains(&pattern.as_str())))
    .then(|| "kills every process".to_owned())
}

/// `:(){ :|:& };:`, `bomb() { bomb | bomb & }`, `function f { f & f; }`, or
/// `while true; do $0 & done`, outside quotes (`echo ':(){ :|:& };:'` prints it).
pub(super) fn fork_bomb(text: &str) -> Option<String> {
    let compact = compact_unquoted(text);
    if recursive_function(&compact) || endless_background_loop(&compact) {
        return Some(format!("`{}` is a fork bomb", text.trim()));
    }
    None
}

/// `text` with the contents of quotes dropped, `function NAME` spelled `NAME()`, newlines as
/// `;` and no other whitespace.
fn compact_unquoted(text: &str) -> String {
    let mut unquoted = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                }
                unquoted.push_str("''");
            }
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                unquoted.push_str("\"\"");
            }
            '\\' => {
                unquoted.push(c);
                if let Some(next) = chars.next() {
                    unquoted.push(next);
                }
            }
            '\n' => unquoted.push_str(" ; "),
            _ => unquoted.push(c),
        }
    }
    let mut words: Vec<String> = Vec::new();
    let mut tokens = unquoted.split_whitespace().peekable();
    while let Some(token) = tokens.next() {
        if token == "function"
            && let Some(name) = tokens.next()
        {
            let name = name.trim_end_matches('{');
            words.push(if name.ends_with("()") {
                name.to_owned()
            } else {
                format!("{name}()")
            });
            continue;
        }
        words.push(token.to_owned());
    }
    words.concat()
}

/// A function whose body calls it at least twice, at least once in a pipe or the background.
fn recursive_function(compact: &str) -> bool {
    let mut search_from = 0;
    while let Some(found) = compact.get(search_from..).and_then(|rest| rest.find("()")) {
        let at = search_from + found;
        search_from = at + 2;
        let before = compact.get(..at).unwrap_or("");
        let name_start = before
            .rfind(|c: char| !is_name_char(c))
            .map_or(0, |index| index + 1);
        let name = before.get(name_start..).unwrap_or("");
        let after = compact.get(at + 2..).unwrap_or("");
        let Some(body) = group_body(after) else {
            continue;
        };
        let calls = body
            .split(|c: char| "|&;(){}".contains(c))
            .filter(|token| *token == name)
            .count();
        if !name.is_empty() && calls >= 2 && is_concurrent(body) {
            return true;
        }
    }
    false
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | ':' | '.' | '-')
}

/// The text inside the `{ … }` or `( … )` that `text` starts with.
fn group_body(text: &str) -> Option<&str> {
    let open = text.chars().next()?;
    let close = match open {
        '{' => '}',
        '(' => ')',
        _ => return None,
    };
    let mut depth = 0;
    for (index, c) in text.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return text.get(1..index);
            }
        }
    }
    text.get(1..)
}

/// A `|` or `&` that is not `||`, `&&` or part of a redirection.
fn is_concurrent(body: &str) -> bool {
    let chars: Vec<char> = body.chars().collect();
    chars.iter().enumerate().any(|(index, c)| {
        let before = index.checked_sub(1).and_then(|i| chars.get(i)).copied();
        let after = chars.get(index + 1).copied();
        match c {
            '|' => before != Some('|') && after != Some('|') && before != Some('>'),
            '&' => {
                before != Some('&')
                    && after != Some('&')
                    && before != Some('>')
                    && after != Some('>')
            }
            _ => false,
        }
    })
}

/// `while true; do CMD & done` and its spellings (`while :`, `until false`, `for ((;;))`)
/// with no `sleep`, `wait`, `break` or `exit` in the body.
fn endless_background_loop(compact: &str) -> bool {
    const ENDLESS: &[&str] = &[
        "whiletrue;do",
        "while:;do",
        "while[1];do",
        "while((1));do",
        "untilfalse;do",
        "for((;;));do",
    ];
    const PACING: &[&str] = &["sleep", "wait", "break", "exit", "read", "return"];
    ENDLESS.iter().any(|start| {
        compact.match_indices(start).any(|(at, _)| {
            let body = compact.get(at + start.len()..).unwrap_or("");
            let body = body.split("done").next().unwrap_or(body);
            is_concurrent(body) && !PACING.iter().any(|word| body.contains(word))
        })
    })
}
