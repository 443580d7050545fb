//! The files a shell command line writes through its own arguments: `cp`/`mv`/`install`/`ln`/
//! `rsync` destinations, `rm`/`mkdir`/`touch`/`truncate`/`shred`/`chmod`/`chown` operands,
//! `dd of=` and `sed -i` files. The policy places them like redirection targets, so `cp x
//! /etc/` or `sed -i … ~/.bashrc` asks whatever allow rule covers the command.

use super::shell::{ParsedShell, Pipeline, basename, effective_words};

/// Glob characters: an operand with them names files the shell picks, all inside the
/// directory before the first of them.
const GLOB: &[char] = &['*', '?', '['];

/// The files `parsed` writes through command arguments, as the words name them. An operand
/// with a glob is replaced by its directory (`build/*.o` → `build`, `*.o` → `.`), which the
/// policy can place; one with an expansion is kept as written (the policy cannot know it).
pub(crate) fn operand_targets(parsed: &ParsedShell) -> Vec<String> {
    let mut targets = Vec::new();
    collect(&parsed.pipelines, &mut targets);
    let mut seen = std::collections::HashSet::new();
    targets.retain(|target| seen.insert(target.clone()));
    targets
}

fn collect(pipelines: &[Pipeline], targets: &mut Vec<String>) {
    for pipeline in pipelines {
        for command in &pipeline.commands {
            let words: Vec<String> = command
                .words
                .iter()
                .enumerate()
                .filter(|(index, _)| {
                    let redirection = |at: usize| command.operators.contains(&at);
                    !(redirection(*index) || index.checked_sub(1).is_some_and(redirection))
                })
                .map(|(_, word)| word.clone())
                .collect();
            let effective = effective_words(&words);
            if let Some((name, args)) = effective.split_first() {
                for operand in written_operands(basename(name), args) {
                    targets.push(directory_of_glob(operand));
                }
            }
            for nested in &command.nested {
                collect(&nested.pipelines, targets);
            }
        }
    }
}

/// The arguments of command `name` that it writes (creates, replaces, removes or changes).
fn written_operands<'a>(name: &str, args: &'a [String]) -> Vec<&'a str> {
    match name {
        "rm" | "rmdir" | "unlink" | "touch" | "shred" | "mkdir" | "mkfifo" | "mknod" => {
            operands(
                args,
                &["-m", "-d", "-t", "-r", "-n", "-s", "--mode", "--date"],
            )
            .0
        }
        "truncate" => operands(args, &["-s", "-r", "-o", "--size", "--reference"]).0,
        "chmod" | "chown" | "chgrp" => {
            let (operands, _) = operands(args, &[]);
            let by_reference = args.iter().any(|arg| arg.starts_with("--reference"));
            operands
                .into_iter()
                .skip(usize::from(!by_reference))
                .collect()
        }
        "cp" | "mv" | "install" | "ln" | "rsync" | "scp" => destination(name, args),
        "dd" => args
            .iter()
            .filter_map(|arg| arg.strip_prefix("of="))
            .collect(),
        "sed" => sed_in_place_files(args),
        _ => Vec::new(),
    }
}

/// Where `cp`, `mv`, `install`, `ln`, `rsync` and `scp` write: the `-t DIR` /
/// `--target-directory=DIR` directory, every operand of `install -d`, else the last operand
/// (when there are at least two; `ln -s x` links into the current directory).
fn destination<'a>(name: &str, args: &'a [String]) -> Vec<&'a str> {
    let valued = [
        "-t", "-S", "-m", "-o", "-g", "--suffix", "--mode", "--owner", "--group",
    ];
    let (operands, values) = operands(args, &valued);
    if let Some(dir) = values
        .iter()
        .find(|(option, _)| *option == "-t" || *option == "--target-directory")
        .map(|(_, value)| *value)
    {
        return vec![dir];
    }
    if let Some(dir) = args
        .iter()
        .find_map(|arg| arg.strip_prefix("--target-directory="))
    {
        return vec![dir];
    }
    let makes_dirs = name == "install"
        && args
            .iter()
            .any(|arg| arg == "-d" || arg == "--directory" || is_cluster_with(arg, 'd'));
    if makes_dirs {
        return operands;
    }
    match operands.as_slice() {
        [.., last] if operands.len() >= 2 => vec![*last],
        _ => Vec::new(),
    }
}

/// The files `sed` edits in place (`-i`, `-i.bak`, `--in-place`, a short cluster with `i`):
/// its operands after the script (the first operand, unless `-e`/`-f` gave it).
fn sed_in_place_files(args: &[String]) -> Vec<&str> {
    let in_place = args.iter().any(|arg| {
        arg.starts_with("--in-place") || arg.starts_with("-i") || is_cluster_with(arg, 'i')
    });
    if !in_place {
        return Vec::new();
    }
    let valued = ["-e", "-f", "-l", "--expression", "--file", "--line-length"];
    let (operands, values) = operands(args, &valued);
    let script_given = !values.is_empty()
        || args
            .iter()
            .any(|arg| arg.starts_with("--expression=") || arg.starts_with("--file="));
    operands
        .into_iter()
        .skip(usize::from(!script_given))
        .collect()
}

/// Whether `arg` is a cluster of short options (`-ni`, `-Ei`) that holds `flag`.
fn is_cluster_with(arg: &str, flag: char) -> bool {
    arg.strip_prefix('-').is_some_and(|flags| {
        !flags.starts_with('-')
            && flags.chars().all(|c| c.is_ascii_alphabetic())
            && flags.contains(flag)
    })
}

/// Splits `args` into operands and the values of the options in `valued` (which take the next
/// word as their value). Other words starting with `-` are options until `--`; `-` alone is an
/// operand.
fn operands<'a>(args: &'a [String], valued: &[&str]) -> (Vec<&'a str>, Vec<(&'a str, &'a str)>) {
    let mut operands = Vec::new();
    let mut values = Vec::new();
    let mut options = true;
    let mut words = args.iter();
    while let Some(arg) = words.next() {
        if options && arg == "--" {
            options = false;
            continue;
        }
        if options && arg.starts_with('-') && arg.len() > 1 {
            if valued.contains(&arg.as_str())
                && let Some(value) = words.next()
            {
                values.push((arg.as_str(), value.as_str()));
            }
            continue;
        }
        operands.push(arg.as_str());
    }
    (operands, values)
}

/// `operand` itself, or for a glob without expansions the directory it matches in.
fn directory_of_glob(operand: &str) -> String {
    let expands = operand.contains(['$', '`', '~', '{']);
    match operand.find(GLOB) {
        Some(first) if !expands => match operand[..first].rfind('/') {
            Some(0) => "/".to_owned(),
            Some(slash) => operand[..slash].to_owned(),
            None => ".".to_owned(),
        },
        _ => operand.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::shell::parse;
    use super::*;

    fn check(command: &str, expected: &[&str]) {
        assert_eq!(operand_targets(&parse(command)), expected, "{command}");
    }

    #[test]
    fn destinations_of_copying_commands_are_written() {
        check("cp a.txt /etc/", &["/etc/"]);
        check("cp -r src dst", &["dst"]);
        check("mv a b c /tmp/out", &["/tmp/out"]);
        check("cp -t /usr/local/bin tool", &["/usr/local/bin"]);
        check("cp --target-directory=/opt x", &["/opt"]);
        check("install -m 755 tool /usr/bin/tool", &["/usr/bin/tool"]);
        check("install -d /opt/a /opt/b", &["/opt/a", "/opt/b"]);
        check("ln -sf target link", &["link"]);
        check("ln -s target", &[]);
        check("rsync -a src/ host:/backup", &["host:/backup"]);
        check("cp -- -odd /dev/sda", &["/dev/sda"]);
    }

    #[test]
    fn removed_created_and_changed_operands_are_written() {
        check("rm -f a b", &["a", "b"]);
        check("rm -rf build/*.o", &["build"]);
        check("rm *.tmp", &["."]);
        check("rm /tmp/*.log", &["/tmp"]);
        check("rm $HOME/x", &["$HOME/x"]);
        check("mkdir -p -m 700 out/dir", &["out/dir"]);
        check("touch -d yesterday stamp", &["stamp"]);
        check("truncate -s 0 /var/log/x", &["/var/log/x"]);
        check("shred -n 3 /dev/sda", &["/dev/sda"]);
        check("chmod 600 ~/.ssh/id", &["~/.ssh/id"]);
        check("chown root /etc/passwd", &["/etc/passwd"]);
        check("chmod --reference=a b", &["b"]);
        check("dd if=/dev/zero of=/dev/sda bs=1M", &["/dev/sda"]);
    }

    #[test]
    fn sed_writes_only_in_place() {
        check("sed 's/a/b/' file", &[]);
        check("sed -i 's/a/b/' file other", &["file", "other"]);
        check("sed -i.bak -e 's/a/b/' ~/.bashrc", &["~/.bashrc"]);
        check("sed -Ei 's/a/b/' /etc/hosts", &["/etc/hosts"]);
        check("sed --in-place=.orig -f script.sed conf", &["conf"]);
    }

    #[test]
    fn wrappers_nesting_and_redirections_are_seen_through() {
        check("sudo cp x /etc/x", &["/etc/x"]);
        check("echo $(rm /etc/x)", &["/etc/x"]);
        check("bash -c 'mv a /tmp/b'", &["/tmp/b"]);
        check("cp a b > log.txt", &["b"]);
        check("ls -la; cat x", &[]);
    }
}
