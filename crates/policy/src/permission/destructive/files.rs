//! Commands that delete, move away or lock up a root's files: recursive `rm`, `chmod`,
//! `chown`, `chgrp`, `setfacl`, `chattr`; `mv` of a root; `rsync --delete` onto one;
//! `find ROOT -delete` (or `-exec rm`); `git clean` / `reset --hard` on one.

use super::paths::{Cwd, names_root};
use crate::permission::shell::basename;

/// `find` tests that narrow what it matches, so `find / -name '*.pyc' -delete` is not a
/// whole root's removal.
const FIND_NARROWING_TESTS: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-newer",
    "-anewer",
    "-cnewer",
    "-newermt",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-size",
    "-user",
    "-uid",
    "-group",
    "-gid",
    "-inum",
    "-samefile",
    "-links",
    "-perm",
    "-empty",
    "-lname",
    "-ilname",
];

/// Programs that delete the files `find -exec` or `xargs` hand them.
const DELETERS: &[&str] = &["rm", "shred", "unlink", "rmdir", "srm", "wipe"];

/// Why this file command (name and arguments, wrappers stripped) wrecks a root, or None.
pub(super) fn check(name: &str, args: &[String], cwd: &Cwd) -> Option<String> {
    match name {
        "rm" => rm(args, cwd),
        "chmod" | "chown" | "chgrp" | "setfacl" | "chattr" => change_mode(name, args, cwd),
        "mv" => mv(args, cwd),
        "rsync" => rsync(args, cwd),
        "find" => find(args, cwd),
        "git" => git(args, cwd),
        _ => None,
    }
}

/// The roots `find ARGS` walks when nothing narrows what it matches: what `find / | xargs rm`
/// hands on.
pub(super) fn unnarrowed_find_roots(args: &[String]) -> Vec<String> {
    if args
        .iter()
        .any(|arg| FIND_NARROWING_TESTS.contains(&arg.as_str()))
    {
        return Vec::new();
    }
    find_start_paths(args)
}

fn options(args: &[String]) -> impl Iterator<Item = &String> {
    args.iter()
        .take_while(|arg| *arg != "--")
        .filter(|arg| arg.starts_with('-') && arg.len() > 1)
}

/// Operands: arguments that are not options, and all after `--`.
fn operands(args: &[String]) -> Vec<&String> {
    let mut operands = Vec::new();
    let mut after_dashes = false;
    for arg in args {
        if after_dashes {
            operands.push(arg);
        } else if arg == "--" {
            after_dashes = true;
        } else if !(arg.starts_with('-') && arg.len() > 1) {
            operands.push(arg);
        }
    }
    operands
}

/// `-r`, `-R`, `-fr`, `--recursive` (and `-R` only, for `chmod` and friends, where `-r` is not
/// recursion).
fn recursive(args: &[String], short: &[char]) -> bool {
    options(args).any(|option| {
        option == "--recursive" || (!option.starts_with("--") && option.contains(short))
    })
}

fn first_root(operands: &[&String], cwd: &Cwd) -> Option<String> {
    operands.iter().find_map(|operand| names_root(operand, cwd))
}

fn rm(args: &[String], cwd: &Cwd) -> Option<String> {
    if options(args).any(|option| option == "--no-preserve-root") {
        return Some("removes `/` (--no-preserve-root)".to_owned());
    }
    let target = first_root(&operands(args), cwd)?;
    recursive(args, &['r', 'R']).then(|| format!("deletes `{target}` recursively"))
}

fn change_mode(name: &str, args: &[String], cwd: &Cwd) -> Option<String> {
    let operands = operands(args);
    let target = first_root(&operands, cwd)?;
    if recursive(args, &['R']) {
        return Some(format!(
            "changes ownership, permissions or attributes of `{target}` recursively"
        ));
    }
    // `chmod 000 /` locks every user out of the whole tree without recursing.
    (name == "chmod" && (target == "/" || target == "/."))
        .then(|| format!("changes the permissions of `{target}`"))
}

/// `mv ROOT …`: every operand but the destination (all of them with `-t DIR`) is moved away.
fn mv(args: &[String], cwd: &Cwd) -> Option<String> {
    let mut target_dir = false;
    let mut skip_next = false;
    let mut sources = Vec::new();
    let mut after_dashes = false;
    for arg in args {
        if skip_next {
            skip_next = false;
        } else if after_dashes || !(arg.starts_with('-') && arg.len() > 1) {
            sources.push(arg);
        } else if arg == "--" {
            after_dashes = true;
        } else if arg == "-t" || arg == "--target-directory" || arg == "-S" || arg == "--suffix" {
            target_dir |= arg == "-t" || arg == "--target-directory";
            skip_next = true;
        } else {
            target_dir |= arg.starts_with("--target-directory=")
                || (!arg.starts_with("--") && arg.len() > 2 && arg.starts_with("-t"));
        }
    }
    if !target_dir {
        sources.pop();
    }
    let source = first_root(&sources, cwd)?;
    Some(format!("moves `{source}` away"))
}

/// `rsync --delete SRC ROOT`: the destination loses everything the source lacks.
fn rsync(args: &[String], cwd: &Cwd) -> Option<String> {
    let deletes = options(args).any(|option| option == "--del" || option.starts_with("--delete"));
    if !deletes {
        return None;
    }
    let operands = operands(args);
    let destination = operands.last()?;
    if destination.contains(':') {
        return None; // another host's files
    }
    let target = names_root(destination, cwd)?;
    Some(format!("deletes what `{target}` holds beyond the source"))
}

/// The start paths of `find`: the operands before the first expression.
fn find_start_paths(args: &[String]) -> Vec<String> {
    args.iter()
        .skip_while(|arg| matches!(arg.as_str(), "-H" | "-L" | "-P") || arg.starts_with("-O"))
        .take_while(|arg| !arg.starts_with(['-', '(', '!']) || arg.as_str() == "-")
        .cloned()
        .collect()
}

/// `find ROOT -delete` and `find ROOT -exec rm …`, unless a test narrows what matches.
fn find(args: &[String], cwd: &Cwd) -> Option<String> {
    let deletes = args
        .iter()
        .enumerate()
        .any(|(index, arg)| match arg.as_str() {
            "-delete" => true,
            "-exec" | "-execdir" | "-ok" | "-okdir" => args
                .get(index + 1)
                .is_some_and(|program| DELETERS.contains(&basename(program))),
            _ => false,
        });
    if !deletes {
        return None;
    }
    let roots = unnarrowed_find_roots(args);
    let root = roots.iter().find_map(|path| names_root(path, cwd))?;
    Some(format!("deletes everything under `{root}`"))
}

/// `git clean -f` with a root as work tree or pathspec, `git reset --hard` and
/// `git checkout -f` with a root as work tree.
fn git(args: &[String], cwd: &Cwd) -> Option<String> {
    let mut work_tree: Option<String> = None;
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        index += 1;
        match arg.as_str() {
            "-C" | "--work-tree" => {
                work_tree = args.get(index).cloned();
                index += 1;
            }
            "-c" | "--git-dir" | "--namespace" | "--exec-path" | "--super-prefix" => index += 1,
            _ if arg.starts_with("--work-tree=") => {
                work_tree = arg.strip_prefix("--work-tree=").map(str::to_owned);
            }
            _ if arg.starts_with('-') => {}
            _ => break,
        }
    }
    let subcommand = args.get(index.checked_sub(1)?)?;
    if subcommand.starts_with('-') {
        return None;
    }
    let rest = args.get(index..).unwrap_or(&[]);
    let root_tree = work_tree.as_deref().and_then(|tree| names_root(tree, cwd));
    let forced = |rest: &[String]| {
        options(rest).any(|option| {
            option == "--force" || (!option.starts_with("--") && option.contains('f'))
        })
    };
    match subcommand.as_str() {
        "clean" if forced(rest) => {
            let target = root_tree.or_else(|| first_root(&operands(rest), cwd))?;
            Some(format!("deletes every untracked file under `{target}`"))
        }
        "reset" if rest.iter().any(|arg| arg == "--hard") => {
            root_tree.map(|target| format!("overwrites the files under `{target}` (reset --hard)"))
        }
        "checkout" | "switch" | "restore" if forced(rest) || subcommand == "restore" => {
            root_tree.map(|target| format!("overwrites the files under `{target}`"))
        }
        _ => None,
    }
}
