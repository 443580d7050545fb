//! Interpreter one-liners that destroy: the program text of `python3 -c`, `perl -e`,
//! `ruby -e`, `node -e`, `php -r`, `lua -e`, `deno eval` and `awk 'PROGRAM'` is read with a
//! careful heuristic, not parsed. It is refused when it deletes a root through a library call
//! (`shutil.rmtree("/")`, `rmtree "/"`, `FileUtils.rm_rf(Dir.home)`, `fs.rmSync("/", …)`), runs
//! a destructive shell line (`os.system("rm -rf /")`, `system "rm", "-rf", "/"`, `` `rm -rf ~` ``,
//! `print "rm -rf /" | "sh"`), or forks without end (`fork while fork`). Text the program only
//! prints (`print("rm -rf /")`) is not run and not refused.

use super::paths::is_root;

/// Shell lines inside program text inside shell lines… are checked this many levels deep.
const MAX_CODE_DEPTH: usize = 4;

/// Library calls that delete a directory tree.
const TREE_DELETERS: &[&str] = &[
    "rmtree",
    "remove_tree",
    "rm_rf",
    "rm_r",
    "remove_dir",
    "remove_entry",
    "rmSync",
    "rmdirSync",
    "rimraf",
    "removedirs",
    "fs.rm",
    "promises.rm",
    "RemoveAll",
];

/// Functions that run a command line or a program: their arguments are checked as shell text.
const RUNNERS: &[&str] = &[
    "system",
    "popen",
    "Popen",
    "spawn",
    "spawnSync",
    "exec",
    "execSync",
    "execFile",
    "execFileSync",
    "execute",
    "call",
    "check_call",
    "check_output",
    "run",
    "getoutput",
    "getstatusoutput",
    "shell_exec",
    "passthru",
    "proc_open",
    "execv",
    "execvp",
    "execve",
    "execl",
    "execlp",
    "spawnv",
    "spawnvp",
];

/// Spellings of the user's home directory in program text.
const HOME_EXPRESSIONS: &[&str] = &["home()", "homedir()", "Dir.home", "env.HOME", "{HOME}"];

/// Literals naming a shell, as in awk's `print CMD | "sh"`.
const SHELL_LITERALS: &[&str] = &["sh", "bash", "/bin/sh", "/bin/bash", "zsh", "dash"];

/// Why the program text this interpreter command runs is destructive, or None.
pub(super) fn check(name: &str, args: &[String], depth: usize) -> Option<String> {
    if depth >= MAX_CODE_DEPTH {
        return None;
    }
    let language = Language::of(name)?;
    let code = language.program_text(args)?;
    reason(&code, language, depth)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Language {
    Python,
    Perl,
    Ruby,
    Node,
    Deno,
    Php,
    Lua,
    Awk,
}

impl Language {
    fn of(name: &str) -> Option<Language> {
        Some(match name {
            _ if name.starts_with("python") || name == "pypy3" => Language::Python,
            _ if name.starts_with("perl") => Language::Perl,
            "ruby" => Language::Ruby,
            "node" | "nodejs" | "bun" => Language::Node,
            "deno" => Language::Deno,
            _ if name.starts_with("php") => Language::Php,
            _ if name.starts_with("lua") || name == "luajit" => Language::Lua,
            "awk" | "gawk" | "mawk" | "nawk" => Language::Awk,
            _ => return None,
        })
    }

    /// Whether `` `…` `` runs a shell command in this language.
    fn backticks_run(self) -> bool {
        matches!(self, Language::Perl | Language::Ruby | Language::Php)
    }

    /// The program text given on the command line (all `-e` pieces joined), or None when the
    /// program is a file or a module.
    fn program_text(self, args: &[String]) -> Option<String> {
        // (letters whose value is code, letters taking a value of their own, those of them
        // whose value may be the next argument, long options whose value is code)
        let (code_letters, value_letters, separate_letters, code_long): (
            &str,
            &str,
            &str,
            &[&str],
        ) = match self {
            Language::Python => ("c", "WXQ", "WXQ", &[]),
            Language::Perl => ("eE", "MmIix0dDC", "", &[]),
            Language::Ruby => ("e", "rICEKTxWF", "rICE", &[]),
            Language::Node => ("ep", "rC", "rC", &["--eval", "--print"]),
            Language::Php => ("r", "dcz", "dcz", &[]),
            Language::Lua => ("e", "l", "l", &[]),
            Language::Deno => return deno_eval(args),
            Language::Awk => return awk_program(args),
        };
        let mut pieces = Vec::new();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            if let Some((option, value)) = arg.split_once('=')
                && code_long.contains(&option)
            {
                pieces.push(value.to_owned());
                continue;
            }
            if code_long.contains(&arg.as_str()) {
                pieces.extend(args.next().cloned());
                continue;
            }
            if arg == "--" || !arg.starts_with('-') || arg.len() == 1 {
                break; // a script file: what follows are its arguments
            }
            if arg.starts_with("--") {
                continue;
            }
            if self == Language::Python && arg.starts_with("-m") {
                return None; // a module
            }
            for (at, letter) in arg.char_indices().skip(1) {
                let rest = arg.get(at + letter.len_utf8()..).unwrap_or("");
                if code_letters.contains(letter) {
                    if rest.is_empty() {
                        pieces.extend(args.next().cloned());
                    } else {
                        pieces.push(rest.to_owned());
                    }
                    break;
                }
                if value_letters.contains(letter) {
                    if rest.is_empty() && separate_letters.contains(letter) {
                        args.next();
                    }
                    break;
                }
            }
            if self == Language::Python && !pieces.is_empty() {
                break; // `-c CODE`: the rest is the program's argv
            }
        }
        (!pieces.is_empty()).then(|| pieces.join("\n"))
    }
}

/// `deno eval CODE`.
fn deno_eval(args: &[String]) -> Option<String> {
    let mut args = args.iter().skip_while(|arg| arg.starts_with('-'));
    (args.next()? == "eval").then_some(())?;
    args.find(|arg| !arg.starts_with('-')).cloned()
}

/// The program of `awk [-F SEP] [-v X=Y] 'PROGRAM' FILE…` (or its `-e` / `--source` texts).
fn awk_program(args: &[String]) -> Option<String> {
    let mut pieces = Vec::new();
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        index += 1;
        match arg.as_str() {
            "--" => {
                pieces.extend(args.get(index).cloned().filter(|_| pieces.is_empty()));
                break;
            }
            "-f" | "--file" | "-E" | "--exec" => return None,
            "-e" | "--source" => {
                pieces.extend(args.get(index).cloned());
                index += 1;
            }
            "-F" | "-v" | "-W" | "-i" | "-l" | "--field-separator" | "--assign" | "--include"
            | "--load" => index += 1,
            _ if arg.starts_with("--source=") => {
                pieces.extend(arg.strip_prefix("--source=").map(str::to_owned));
            }
            _ if arg.starts_with('-') && arg.len() > 1 => {}
            _ => {
                if pieces.is_empty() {
                    pieces.push(arg.clone());
                }
                break;
            }
        }
    }
    (!pieces.is_empty()).then(|| pieces.join("\n"))
}

/// A string literal of program text, and whether the language runs it as a command line
/// (`` `…` ``, `qx{…}`, `%x(…)`).
struct Literal {
    text: String,
    runs: bool,
    /// Byte offsets of the literal, quotes included, in the program text.
    start: usize,
    end: usize,
}

fn reason(code: &str, language: Language, depth: usize) -> Option<String> {
    let literals = literals(code, language.backticks_run());
    if code.contains("fork")
        && ["while", "loop", "for(;;)", "for (;;)", "until"]
            .iter()
            .any(|word| code.contains(word))
    {
        return Some("forks processes without end (a fork bomb)".to_owned());
    }
    for deleter in TREE_DELETERS {
        for (at, _) in code.match_indices(deleter) {
            let argument = argument_after(code, at + deleter.len());
            if names_root(code, argument, &literals) {
                return Some(format!(
                    "deletes a root directory with `{deleter}` ({})",
                    code.get(argument.0..argument.1).unwrap_or("").trim()
                ));
            }
        }
    }
    let runs_commands = RUNNERS.iter().any(|runner| !calls(code, runner).is_empty())
        || literals.iter().any(|literal| literal.runs)
        || (code.contains('|')
            && literals
                .iter()
                .any(|literal| SHELL_LITERALS.contains(&literal.text.as_str())));
    if !runs_commands {
        return None;
    }
    let shell_reason = |line: &str| {
        super::reason_at(line, depth + 1).map(|why| format!("runs a destructive command: {why}"))
    };
    for literal in &literals {
        if let Some(reason) = shell_reason(&literal.text) {
            return Some(reason);
        }
    }
    for runner in RUNNERS {
        for at in calls(code, runner) {
            let (start, end) = argument_after(code, at + runner.len());
            let words: Vec<&str> = literals
                .iter()
                .filter(|literal| literal.start >= start && literal.end <= end)
                .map(|literal| literal.text.as_str())
                .collect();
            if words.len() > 1
                && let Some(reason) = shell_reason(&words.join(" "))
            {
                return Some(reason);
            }
        }
    }
    None
}

/// Offsets where `name` occurs as a whole identifier followed by `(` or a blank.
fn calls(code: &str, name: &str) -> Vec<usize> {
    code.match_indices(name)
        .filter(|(at, _)| {
            let before = code.get(..*at).and_then(|text| text.chars().next_back());
            let after = code
                .get(at + name.len()..)
                .and_then(|text| text.chars().next());
            !before.is_some_and(is_identifier_char)
                && after.is_some_and(|c| c == '(' || c.is_whitespace())
        })
        .map(|(at, _)| at)
        .collect()
}

fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The byte range of the argument after offset `from`: the balanced `( … )` if one follows
/// (after blanks), else the rest of the statement (up to `;`, a newline or `}`).
fn argument_after(code: &str, from: usize) -> (usize, usize) {
    let rest = code.get(from..).unwrap_or("");
    let skipped = rest.len() - rest.trim_start().len();
    let start = from + skipped;
    let text = code.get(start..).unwrap_or("");
    if text.starts_with('(') {
        let mut depth = 0;
        for (index, c) in text.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return (start, start + index + 1);
                    }
                }
                _ => {}
            }
        }
        return (start, code.len());
    }
    let end = text.find([';', '\n', '}']).unwrap_or(text.len());
    (start, start + end)
}

/// Whether the argument range names a root: a literal like `"/"`, `"/usr"` or `"~"`, a
/// literal `"HOME"` (an environment lookup) or a home expression like `Path.home()`.
fn names_root(code: &str, (start, end): (usize, usize), literals: &[Literal]) -> bool {
    let argument = code.get(start..end).unwrap_or("");
    literals
        .iter()
        .filter(|literal| literal.start >= start && literal.end <= end)
        .any(|literal| literal.text == "HOME" || is_root(&literal.text))
        || HOME_EXPRESSIONS
            .iter()
            .any(|expression| argument.contains(expression))
}

/// The string literals of `code`: `'…'`, `"…"`, `` `…` `` (running when `backticks_run`),
/// and Perl's `qx{…}` and Ruby's `%x(…)`, which run.
fn literals(code: &str, backticks_run: bool) -> Vec<Literal> {
    let chars: Vec<(usize, char)> = code.char_indices().collect();
    let mut literals = Vec::new();
    let mut index = 0;
    while let Some(&(start, c)) = chars.get(index) {
        index += 1;
        let prefix_runs = (c == 'q' || c == '%')
            && chars.get(index).is_some_and(|(_, next)| *next == 'x')
            && chars.get(index + 1).is_some_and(|(_, delimiter)| {
                !delimiter.is_alphanumeric() && !delimiter.is_whitespace()
            })
            && !code
                .get(..start)
                .and_then(|text| text.chars().next_back())
                .is_some_and(is_identifier_char);
        let (close, runs) = match c {
            '\'' | '"' => (c, false),
            '`' => ('`', backticks_run),
            _ if prefix_runs => {
                let open = chars
                    .get(index + 1)
                    .map_or(' ', |(_, delimiter)| *delimiter);
                index += 2;
                (closing(open), true)
            }
            _ => continue,
        };
        let mut text = String::new();
        let mut end = code.len();
        while let Some(&(at, c)) = chars.get(index) {
            index += 1;
            if c == '\\' {
                if let Some(&(_, next)) = chars.get(index) {
                    index += 1;
                    text.push(if next == 'n' { '\n' } else { next });
                }
                continue;
            }
            if c == close {
                end = at + c.len_utf8();
                break;
            }
            text.push(c);
        }
        literals.push(Literal {
            text,
            runs,
            start,
            end,
        });
    }
    literals
}

fn closing(open: char) -> char {
    match open {
        '(' => ')',
        '{' => '}',
        '[' => ']',
        '<' => '>',
        other => other,
    }
}
