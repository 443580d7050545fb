//! The script a shell, `watch` or `sg` runs: `sh -c SCRIPT NAME ARG…` (options around `-c`,
//! `--`, positional parameters put in place), `watch CMD…` (joined into a script unless `-x`)
//! and `sg GROUP -c CMD`.

use super::wrapper::Run;

/// `sh -c SCRIPT [NAME [ARG…]]`: the script is the first operand after the options (`-c` may
/// come before other options, `--` ends them); `$0`, `$1`…, `$@` and `$*` in it are the operands
/// after it, put in their place.
pub(super) fn shell_run(args: &[String]) -> Option<Run> {
    let mut runs_command_text = false;
    let mut reads_stdin = false;
    let mut operands = Vec::new();
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        index += 1;
        if !operands.is_empty() {
            operands.push(arg.clone());
        } else if arg == "--" {
            operands.extend(args.get(index..).unwrap_or(&[]).iter().cloned());
            break;
        } else if matches!(
            arg.as_str(),
            "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file"
        ) {
            index += 1;
        } else if arg.starts_with("--") {
            continue;
        } else if arg.len() > 1 && arg.starts_with(['-', '+']) {
            runs_command_text |= arg.starts_with('-') && arg.contains('c');
            reads_stdin |= arg.starts_with('-') && arg.contains('s');
        } else {
            operands.push(arg.clone());
        }
    }
    if !runs_command_text {
        return (operands.is_empty() || reads_stdin)
            .then_some(Run::Unknown("a shell reads its script from standard input"));
    }
    match operands.split_first() {
        Some((script, positional)) => Some(Run::Script(with_positional(script, positional))),
        None => Some(Run::Unknown("a shell's `-c` has no script")),
    }
}

/// `script` with `$0`…`$9`, `${N}`, `$@`, `$*` (and `${@}`, `${*}`) replaced by `positional`
/// (`$0` the first), so `sh -c 'rm -rf "$1"' sh /` is judged as `rm -rf "/"`.
fn with_positional(script: &str, positional: &[String]) -> String {
    if positional.is_empty() || !script.contains('$') {
        return script.to_owned();
    }
    let as_text = |word: &String| {
        if word.is_empty()
            || word.contains(|c: char| c.is_whitespace() || "'\"\\;&|<>()`$".contains(c))
        {
            format!("'{}'", word.replace('\'', r"'\''"))
        } else {
            word.clone()
        }
    };
    let all = positional
        .get(1..)
        .unwrap_or(&[])
        .iter()
        .map(as_text)
        .collect::<Vec<_>>()
        .join(" ");
    // `"$@"` is one word per operand, not one word holding them all.
    let mut text = script.replace("\"$@\"", &all).replace("\"${@}\"", &all);
    text = text.replace("${@}", &all).replace("${*}", &all);
    text = text.replace("$@", &all).replace("$*", &all);
    for (number, word) in positional.iter().enumerate().take(10).rev() {
        let value = as_text(word);
        text = text
            .replace(&format!("${{{number}}}"), &value)
            .replace(&format!("${number}"), &value);
    }
    text
}

/// `watch [-x] CMD…`: without `-x` the arguments are joined into a `sh -c` script.
pub(super) fn watch_run(args: &[String]) -> Option<Run> {
    let mut exec = false;
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        match arg.as_str() {
            "--" => {
                index += 1;
                break;
            }
            "-n" | "--interval" | "-q" | "--equexit" => index += 2,
            "-x" | "--exec" => {
                exec = true;
                index += 1;
            }
            _ if arg.starts_with("--") => index += 1,
            _ if arg.starts_with('-') && arg.len() > 1 => {
                exec |= arg.trim_start_matches('-').contains('x') && !arg.starts_with("-n");
                index += 1;
            }
            _ => break,
        }
    }
    let command = args.get(index..).filter(|rest| !rest.is_empty())?;
    Some(if exec {
        Run::Command(command.to_vec())
    } else {
        Run::Script(command.join(" "))
    })
}

/// `sg [-] GROUP [-c] COMMAND`: the command is a `sh -c` script.
pub(super) fn sg_run(args: &[String]) -> Option<Run> {
    let mut rest = args.iter().skip_while(|arg| *arg == "-");
    rest.next()?;
    let command: Vec<&String> = rest.skip_while(|arg| *arg == "-c").collect();
    (!command.is_empty()).then(|| {
        Run::Script(
            command
                .iter()
                .map(|word| word.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        )
    })
}
