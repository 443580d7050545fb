//! Which operands name a root whose loss wrecks a system or a home (`/`, `/usr`, `~`, `$HOME`,
//! `..`, spelled with globs, braces or `${HOME:?}`), which name a device, and where a relative
//! operand lands after a `cd` to such a root.

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

/// Variables naming the user, as in `/home/$USER`.
const USER_VARIABLES: &[&str] = &["USER", "LOGNAME", "USERNAME"];

/// Device files that are safe to write to.
const SAFE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
];
const SAFE_DEVICE_DIRS: &[&str] = &["/dev/fd/", "/dev/shm/", "/dev/pts/"];

/// Brace expansion stops after this many words: `{a,b}{c,d}…` cannot grow without bound.
const MAX_BRACE_WORDS: usize = 64;

/// The working directory a command runs in, as far as the line shows it: `cd /` before
/// `rm -rf *` makes `*` mean `/*`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Cwd {
    /// No `cd` seen: relative operands are the workspace's.
    #[default]
    Workspace,
    /// `cd DIR` to a directory the line names (absolute, `~` or `$HOME` based).
    Known(String),
    /// `cd $X` or `cd -`: only known when it runs.
    Unknown,
}

impl Cwd {
    /// The directory after `cd ARGS` from this one.
    pub(crate) fn after_cd(&self, args: &[String]) -> Cwd {
        let target = args.iter().find(|arg| !arg.starts_with('-') || *arg == "-");
        let Some(target) = target else {
            return Cwd::Known("~".to_owned());
        };
        if target == "-" || target.contains('`') {
            return Cwd::Unknown;
        }
        if target.starts_with(['/', '~']) || starts_with_home(target) {
            return Cwd::Known(target.clone());
        }
        if target.starts_with('$') {
            return Cwd::Unknown;
        }
        match self {
            Cwd::Known(dir) => Cwd::Known(format!("{}/{target}", dir.trim_end_matches('/'))),
            // `cd ..` leaves the workspace: `rm -rf *` there is `rm -rf ../*`.
            Cwd::Workspace if target.starts_with("..") => Cwd::Known(target.clone()),
            Cwd::Workspace => Cwd::Workspace,
            Cwd::Unknown => Cwd::Unknown,
        }
    }

    /// `operand` as seen from this directory: relative operands are joined to a known one.
    pub(crate) fn resolve(&self, operand: &str) -> String {
        match self {
            Cwd::Known(dir) if !is_anchored(operand) => {
                format!("{}/{operand}", dir.trim_end_matches('/'))
            }
            _ => operand.to_owned(),
        }
    }
}

/// Whether `operand` (seen from `cwd`) names a root: see [`is_root`].
pub(crate) fn names_root(operand: &str, cwd: &Cwd) -> Option<String> {
    let resolved = cwd.resolve(operand);
    if is_root(&resolved) {
        return Some(resolved);
    }
    // `..` from a known directory may still leave it: judged as written too.
    is_root(operand).then(|| operand.to_owned())
}

/// `/`, `/*`, `~`, `~user`, `$HOME`, `${HOME:?}`, `/home/$USER`, a top-level system directory
/// like `/usr` or `/etc/`, a glob or brace expansion that can be one of those (`/e*c`,
/// `/{etc,usr}`), `${X:-/}` whose default is one, or the parent of the working directory
/// (`..`, `../*`, `.*`, which older shells expand to `..` too).
pub(crate) fn is_root(operand: &str) -> bool {
    if operand.is_empty() {
        return false;
    }
    brace_expansions(operand)
        .iter()
        .any(|word| defaults(word).iter().any(|word| is_root_word(word)))
}

/// A device file other than the safe ones (`/dev/null`, `/dev/zero`, …).
pub(crate) fn is_unsafe_device(path: &str) -> bool {
    let path = normalize(path);
    let path = path.as_str();
    path.starts_with("/dev/")
        && !SAFE_DEVICES.contains(&path)
        && !SAFE_DEVICE_DIRS.iter().any(|dir| path.starts_with(dir))
}

/// An operand only known when the command runs (`$DEV`, `$(…)`).
pub(crate) fn is_variable(operand: &str) -> bool {
    operand.contains(['$', '`'])
}

fn is_root_word(word: &str) -> bool {
    let home = home_spelled_plainly(word);
    let normalized = normalize(&home);
    let trimmed = strip_trailing(&normalized);
    if matches!(trimmed, "" | "~" | "$HOME" | "/." | "/..") {
        return true;
    }
    if is_tilde_user(trimmed) || is_parent(trimmed) {
        return true;
    }
    let Some(rest) = trimmed.strip_prefix('/') else {
        return false;
    };
    let rest = rest.trim_start_matches('/');
    if let Some(user) = rest
        .strip_prefix("home/")
        .or_else(|| rest.strip_prefix("Users/"))
    {
        let user = user.trim_start_matches('$').trim_matches(['{', '}']);
        if USER_VARIABLES.contains(&user) {
            return true;
        }
    }
    if rest.contains('/') {
        return false;
    }
    if rest.contains(['*', '?', '[']) {
        return SYSTEM_DIRS
            .iter()
            .chain(&[".", ".."])
            .any(|dir| glob_matches(rest, dir));
    }
    SYSTEM_DIRS.contains(&rest)
}

/// `path` without trailing `/`, `/.`, `/*` and `/.*` (what they remove is the directory's
/// content, as good as the directory).
fn strip_trailing(path: &str) -> &str {
    let mut trimmed = path;
    loop {
        let before = trimmed;
        trimmed = trimmed
            .strip_suffix("/*")
            .or_else(|| trimmed.strip_suffix("/.*"))
            .or_else(|| trimmed.strip_suffix("/."))
            .or_else(|| trimmed.strip_suffix('/'))
            .unwrap_or(trimmed);
        if trimmed == before {
            return trimmed;
        }
    }
}

/// `..`, `../..`, `./..`, `.*` (relative): the parent of the working directory or above.
fn is_parent(path: &str) -> bool {
    path == ".*"
        || (path.contains("..")
            && path
                .split('/')
                .all(|component| matches!(component, "." | ".." | "" | ".*" | "*")))
}

/// `~root`, `~alice/`: another user's home.
fn is_tilde_user(path: &str) -> bool {
    path.strip_prefix('~').is_some_and(|user| {
        !user.is_empty()
            && user
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    })
}

fn starts_with_home(word: &str) -> bool {
    home_spelled_plainly(word).starts_with("$HOME")
}

/// Whether `operand` does not depend on the working directory.
fn is_anchored(operand: &str) -> bool {
    operand.starts_with(['/', '~', '$'])
}

/// `${HOME}`, `${HOME:?}`, `${HOME:?msg}`, `${HOME?}`, `${HOME:-x}`, `${HOME%/}` at the start
/// of `word` spelled `$HOME`.
fn home_spelled_plainly(word: &str) -> String {
    let Some(inner) = word.strip_prefix("${HOME") else {
        return word.to_owned();
    };
    let Some(close) = inner.find('}') else {
        return word.to_owned();
    };
    let (operator, rest) = (&inner[..close], &inner[close + 1..]);
    if operator.is_empty() || operator.starts_with([':', '?', '-', '=', '%', '#']) {
        format!("$HOME{rest}")
    } else {
        word.to_owned()
    }
}

/// `word`, and for `${NAME:-DEFAULT}…` (also `-`, `:=`, `=`) the word with the default in its
/// place: `${TARGET:-/}` may be `/`.
fn defaults(word: &str) -> Vec<String> {
    let mut words = vec![word.to_owned()];
    if let Some(inner) = word.strip_prefix("${")
        && let Some(close) = inner.find('}')
    {
        let body = &inner[..close];
        let rest = &inner[close + 1..];
        let name_end = body
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(body.len());
        let operator = &body[name_end..];
        for prefix in [":-", ":=", "-", "="] {
            if let Some(default) = operator.strip_prefix(prefix) {
                words.push(format!("{default}{rest}"));
                break;
            }
        }
    }
    words
}

/// An absolute path with `.`, `..` and repeated `/` resolved lexically (`/usr/../etc` →
/// `/etc`); other words unchanged. A trailing `/*` is kept for the caller.
pub(crate) fn normalize(path: &str) -> String {
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

/// The words a brace expression stands for (`/{etc,usr}` → `/etc`, `/usr`; `{a..c}` → `a`,
/// `b`, `c`), at most [`MAX_BRACE_WORDS`]; a word without braces is itself.
fn brace_expansions(word: &str) -> Vec<String> {
    let mut done = Vec::new();
    let mut pending = vec![word.to_owned()];
    while let Some(word) = pending.pop() {
        if done.len() + pending.len() >= MAX_BRACE_WORDS {
            done.push(word);
            continue;
        }
        match expand_first_brace(&word) {
            Some(expanded) => pending.extend(expanded),
            None => done.push(word),
        }
    }
    done
}

/// Expands the first `{…}` of `word` holding a top-level `,` or a `..` range.
fn expand_first_brace(word: &str) -> Option<Vec<String>> {
    let chars: Vec<char> = word.chars().collect();
    for open in 0..chars.len() {
        if chars.get(open) != Some(&'{') || (open > 0 && chars.get(open - 1) == Some(&'$')) {
            continue;
        }
        let mut depth = 0;
        let mut commas = Vec::new();
        let mut close = None;
        for (index, c) in chars.iter().enumerate().skip(open) {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(index);
                        break;
                    }
                }
                ',' if depth == 1 => commas.push(index),
                _ => {}
            }
        }
        let close = close?;
        let text = |from: usize, to: usize| -> String {
            chars.get(from..to).unwrap_or(&[]).iter().collect()
        };
        let prefix = text(0, open);
        let suffix = text(close + 1, chars.len());
        let alternatives: Vec<String> = if commas.is_empty() {
            let Some(range) = range_words(&text(open + 1, close)) else {
                continue;
            };
            range
        } else {
            let mut bounds = vec![open];
            bounds.extend(&commas);
            bounds.push(close);
            bounds
                .windows(2)
                .map(|pair| text(pair[0] + 1, pair[1]))
                .collect()
        };
        return Some(
            alternatives
                .into_iter()
                .map(|alternative| format!("{prefix}{alternative}{suffix}"))
                .collect(),
        );
    }
    None
}

/// `a..e` or `1..3` as its words, when short enough to list.
fn range_words(body: &str) -> Option<Vec<String>> {
    let (from, to) = body.split_once("..")?;
    let single = |text: &str| {
        let mut chars = text.chars();
        chars.next().filter(|_| chars.next().is_none())
    };
    if let (Some(from), Some(to)) = (single(from), single(to))
        && from.is_ascii_alphabetic()
        && to.is_ascii_alphabetic()
    {
        let (low, high) = (from.min(to), from.max(to));
        return Some((low..=high).map(String::from).collect());
    }
    let (from, to) = (from.parse::<i64>().ok()?, to.parse::<i64>().ok()?);
    let (low, high) = (from.min(to), from.max(to));
    let count = usize::try_from(high - low).ok()?;
    (count < MAX_BRACE_WORDS).then(|| (low..=high).map(|n| n.to_string()).collect())
}

/// Shell pattern matching of one path component: `*`, `?` and `[…]` (with `!` or `^`).
fn glob_matches(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    glob_from(&pattern, &name)
}

fn glob_from(pattern: &[char], name: &[char]) -> bool {
    let Some((first, rest)) = pattern.split_first() else {
        return name.is_empty();
    };
    match first {
        '*' => (0..=name.len()).any(|skip| glob_from(rest, name.get(skip..).unwrap_or(&[]))),
        '?' => name
            .split_first()
            .is_some_and(|(_, name_rest)| glob_from(rest, name_rest)),
        '[' => {
            let Some(end) = rest.iter().skip(1).position(|c| *c == ']').map(|i| i + 1) else {
                return name.first() == Some(&'[') && glob_from(rest, &name[1..]);
            };
            let Some((c, name_rest)) = name.split_first() else {
                return false;
            };
            let class = &rest[..end];
            let (negated, class) = match class.split_first() {
                Some(('!' | '^', class)) => (true, class),
                _ => (false, class),
            };
            let mut matched = false;
            let mut index = 0;
            while let Some(member) = class.get(index) {
                if class.get(index + 1) == Some(&'-')
                    && let Some(high) = class.get(index + 2)
                {
                    matched |= (*member..=*high).contains(c);
                    index += 3;
                } else {
                    matched |= member == c;
                    index += 1;
                }
            }
            matched != negated && glob_from(&rest[end + 1..], name_rest)
        }
        literal => name
            .split_first()
            .is_some_and(|(c, name_rest)| c == literal && glob_from(rest, name_rest)),
    }
}
