//! The files a shell command line writes through output redirection (`>`, `>>`, `>|`, `&>`,
//! `&>>`, `2>`, `<>`, `>&FILE`) and `tee FILE`, so the policy treats them as writes: a target
//! outside the workspace, in a protected directory, or one that cannot be known before the
//! command runs asks, whatever allow rule covers the command.

use std::path::{Path, PathBuf};

use super::shell::{Pipeline, basename, effective_words, parse};

/// What a command line writes to files, as the words name them (quotes removed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct WriteTargets {
    /// Redirection and `tee` targets, outermost first, standard streams (`/dev/null`, …) left out.
    pub paths: Vec<String>,
    /// The line changes directory (`cd`, `pushd`, `popd`), so a relative target is relative to
    /// a directory the policy cannot know.
    pub changes_dir: bool,
}

/// Where a write target lands, for the policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TargetPlace {
    /// Inside the workspace and not protected: like any write the command makes there.
    Workspace,
    /// Outside the workspace (the resolved path is not under it).
    Outside,
    /// A protected path (`.git`, `.agents`, `.claude`, `.mcp.json`, `skills/`) or a notes file
    /// (`AGENTS.md`, `CLAUDE.md`): what the file tools refuse or ask about every time.
    Protected(String),
    /// Expansions, globs, `~` or a relative path after `cd`: known only when the shell runs.
    Unknown,
}

/// Device files a redirection may write that reach no file: writing them is not a write.
pub(crate) const STANDARD_STREAMS: &[&str] =
    &["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"];

/// Characters that make a target word depend on the shell (expansions, globs, braces).
const EXPANDING: &[char] = &['$', '`', '*', '?', '[', '{', '~'];

/// The files `command` writes through redirections and `tee`, in every nested part.
pub(crate) fn write_targets(command: &str) -> WriteTargets {
    let parsed = parse(command);
    let mut targets = WriteTargets::default();
    collect(&parsed.pipelines, &mut targets);
    let mut seen = std::collections::HashSet::new();
    targets.paths.retain(|path| seen.insert(path.clone()));
    targets
}

/// Classifies one target of a line run in `workspace` (canonical), with its resolved path when
/// it lies inside the workspace; `protected` names the protected component of a resolved path
/// inside the workspace, if any.
pub(crate) fn place_of(
    target: &str,
    changes_dir: bool,
    workspace: &Path,
    protected: impl Fn(&Path) -> Option<String>,
) -> (TargetPlace, Option<PathBuf>) {
    if target.contains(EXPANDING) || (changes_dir && !target.starts_with('/')) {
        return (TargetPlace::Unknown, None);
    }
    match agentd_core::workspace::resolve_in_workspace(workspace, target) {
        Ok(resolved) => match protected(&resolved) {
            Some(component) => (TargetPlace::Protected(component), Some(resolved)),
            None => (TargetPlace::Workspace, Some(resolved)),
        },
        Err(_) => (TargetPlace::Outside, None),
    }
}

fn collect(pipelines: &[Pipeline], targets: &mut WriteTargets) {
    for pipeline in pipelines {
        for command in &pipeline.commands {
            let words = &command.words;
            for &index in &command.operators {
                if let (Some(operator), Some(target)) = (words.get(index), words.get(index + 1))
                    && writes_file(operator, target)
                {
                    push(targets, target);
                }
            }
            let effective = effective_words(words);
            if let Some((name, _)) = effective.split_first() {
                match basename(name) {
                    "cd" | "pushd" | "popd" => targets.changes_dir = true,
                    "tee" => {
                        let first_arg = words.len() - effective.len() + 1;
                        tee_files(words, first_arg, &command.operators, targets);
                    }
                    _ => {}
                }
            }
            for nested in &command.nested {
                collect(&nested.pipelines, targets);
            }
        }
    }
}

/// Whether redirection `operator` followed by `target` opens `target` for writing: any
/// operator with `>` (`<>` too), except `>&N` / `>&-` which duplicate or close a descriptor.
fn writes_file(operator: &str, target: &str) -> bool {
    if !operator.contains('>') {
        return false;
    }
    let duplicates = operator.ends_with('&')
        && !operator.starts_with('&')
        && (target == "-" || target.chars().all(|c| c.is_ascii_digit()));
    !duplicates
}

/// `tee`'s file arguments: `words` from `first_arg` on, options skipped until `--`,
/// redirections (at `operators`) and their targets skipped.
fn tee_files(words: &[String], first_arg: usize, operators: &[usize], targets: &mut WriteTargets) {
    let mut options = true;
    let mut index = first_arg;
    while let Some(arg) = words.get(index) {
        if operators.contains(&index) {
            index += 2;
            continue;
        }
        index += 1;
        if options && arg == "--" {
            options = false;
            continue;
        }
        if options && arg.starts_with('-') && arg.len() > 1 {
            continue;
        }
        push(targets, arg);
    }
}

fn push(targets: &mut WriteTargets, target: &str) {
    let stream = STANDARD_STREAMS.contains(&target)
        || target
            .strip_prefix("/dev/fd/")
            .is_some_and(|fd| !fd.is_empty() && fd.chars().all(|c| c.is_ascii_digit()));
    if !stream {
        targets.paths.push(target.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(command: &str, expected: &[&str]) {
        assert_eq!(write_targets(command).paths, expected, "{command}");
    }

    #[test]
    fn every_output_redirection_and_tee_is_a_write_target() {
        check("echo hi > out.txt", &["out.txt"]);
        check("echo hi >> /etc/profile", &["/etc/profile"]);
        check("echo hi>out", &["out"]);
        check("make &> build.log", &["build.log"]);
        check("make &>> build.log", &["build.log"]);
        check("make 2> errors.txt", &["errors.txt"]);
        check("make 2>>errors.txt", &["errors.txt"]);
        check("echo x >| clobber", &["clobber"]);
        check("cat <> both", &["both"]);
        check("make >& all.log", &["all.log"]);
        check("echo 'a b' > \"my file\"", &["my file"]);
        check(
            "echo x | tee a.txt -a b.txt -- -c",
            &["a.txt", "b.txt", "-c"],
        );
        check(
            "echo x | sudo tee -a /etc/hosts > /dev/null",
            &["/etc/hosts"],
        );
        check("( echo x ) > group.txt", &["group.txt"]);
        check("echo $(echo x > inner.txt)", &["inner.txt"]);
        check("bash -c 'echo x > script.txt'", &["script.txt"]);
        check("echo a > same; echo b > same", &["same"]);
    }

    #[test]
    fn reads_duplications_and_standard_streams_are_not_write_targets() {
        check("sort < in.txt", &[]);
        check("cat <<EOF", &[]);
        check("cat <<< text", &[]);
        check("make 2>&1", &[]);
        check("make >&2", &[]);
        check("make 2>&-", &[]);
        check("make > /dev/null 2> /dev/stderr", &[]);
        check("echo x > /dev/fd/3", &[]);
        check("echo '>' not.a.target", &[]);
        check("tee", &[]);
    }

    #[test]
    fn cd_makes_relative_targets_unknowable() {
        assert!(write_targets("cd /etc && echo x > passwd").changes_dir);
        assert!(!write_targets("echo x > passwd").changes_dir);
    }

    #[test]
    fn places_targets_against_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().canonicalize().unwrap();
        let protected = |path: &Path| {
            path.strip_prefix(&workspace)
                .ok()
                .filter(|relative| relative.starts_with(".git"))
                .map(|_| ".git".to_owned())
        };
        let place = |target: &str, changes_dir: bool| {
            place_of(target, changes_dir, &workspace, protected).0
        };
        assert_eq!(place("out.txt", false), TargetPlace::Workspace);
        assert_eq!(place("sub/new/out.txt", false), TargetPlace::Workspace);
        assert_eq!(place("/etc/passwd", false), TargetPlace::Outside);
        assert_eq!(place("../x", false), TargetPlace::Outside);
        assert_eq!(
            place(".git/hooks/pre-commit", false),
            TargetPlace::Protected(".git".to_owned())
        );
        assert_eq!(place("$HOME/.bashrc", false), TargetPlace::Unknown);
        assert_eq!(place("~/.bashrc", false), TargetPlace::Unknown);
        assert_eq!(place("out-*.txt", false), TargetPlace::Unknown);
        assert_eq!(place("out.txt", true), TargetPlace::Unknown);
        assert_eq!(place("/etc/passwd", true), TargetPlace::Outside);
    }
}
