//! The nested-command and wrapper corpus, as data: each line is decided by a policy in default
//! mode that allows `echo`, `ls`, `cat`, `find`, `git status`, `sudo`, `timeout` and `xargs`
//! and denies `touch` and `curl`. Expected: "allow", "ask", "deny" (a deny rule) or "refused"
//! (the built-in destructive list).

use serde_json::json;

use super::{Decision, PermissionMode, Policy, RuleLayer, RuleSet, RuleSource, ToolRequest};

/// (command, expected decision)
const CORPUS: &[(&str, &str)] = &[
    // Plain commands the rules cover.
    ("echo hi", "allow"),
    ("echo ${HOME}/x", "allow"),
    ("echo ${x:-default}", "allow"),
    ("echo $((1 + 2))", "allow"),
    ("echo $(ls)", "allow"),
    ("cat <<< hello", "allow"),
    ("find . -name '*.rs' -exec cat {} ;", "allow"),
    ("timeout 5 ls", "allow"),
    // Commands nested in parameter expansion and arithmetic are parts of their own.
    ("echo ${x:-$(whoami)}", "ask"),
    ("echo ${x:=`whoami`}", "ask"),
    ("echo ${V:+`whoami`}", "ask"),
    ("echo \"${x:-$(whoami)}\"", "ask"),
    ("echo $(( $(whoami) + 1 ))", "ask"),
    ("echo ${x:-${y:-$(whoami)}}", "ask"),
    ("cat <(whoami)", "ask"),
    ("cat <<< $(whoami)", "ask"),
    ("echo ${x:-$(touch pwned)}", "deny"),
    ("echo $(( $(touch pwned) ))", "deny"),
    ("echo ${x:+`touch pwned`}", "deny"),
    ("cat <<< \"$(touch pwned)\"", "deny"),
    ("echo >(touch pwned)", "deny"),
    ("echo ${x:-$(rm -rf /)}", "refused"),
    ("echo $(( $(rm -rf ~) ))", "refused"),
    ("echo ${x:=`rm -rf /`}", "refused"),
    // Wrappers are analysed on their inner command.
    ("sudo touch pwned", "deny"),
    ("sudo whoami", "ask"),
    ("timeout 5 touch pwned", "deny"),
    ("nice -n 5 touch pwned", "deny"),
    ("nohup touch pwned", "deny"),
    ("setsid touch pwned", "deny"),
    ("setsid rm -rf /", "refused"),
    ("chroot / touch pwned", "deny"),
    ("chroot /srv rm -rf /", "refused"),
    ("flock /tmp/lock touch pwned", "deny"),
    ("flock /tmp/lock -c 'touch pwned'", "deny"),
    ("flock -c 'rm -rf /' /tmp/lock", "refused"),
    ("busybox touch pwned", "deny"),
    ("busybox rm -rf /", "refused"),
    ("env -S 'touch pwned'", "deny"),
    ("env -S'rm -rf /'", "refused"),
    ("env --split-string='rm -rf /'", "refused"),
    ("su -c 'touch pwned' root", "deny"),
    ("su root -c 'rm -rf /'", "refused"),
    ("find . | xargs touch", "deny"),
    ("find . -exec touch {} ;", "deny"),
    ("find . -execdir whoami ;", "ask"),
    ("find / -exec rm -rf / +", "refused"),
    ("find . -delete", "ask"),
    ("git status", "allow"),
    ("git -c alias.x='!touch pwned' x", "deny"),
    ("git -c alias.x=!whoami x", "ask"),
    ("git -c alias.x='!rm -rf /' x", "refused"),
    ("git -c core.pager='touch pwned' log", "deny"),
    ("git -c core.sshCommand='rm -rf ~' fetch", "refused"),
    ("git -c core.hooksPath=/tmp/hooks status", "ask"),
    ("git commit -c alias.x=!whoami", "ask"),
    ("command -v touch", "ask"),
    ("bash -xc 'touch pwned'", "deny"),
    ("bash -c -- 'touch pwned'", "deny"),
    ("bash -c -x 'touch pwned'", "deny"),
    ("bash -o pipefail -c 'touch pwned'", "deny"),
    ("sh -c 'touch \"$1\"' sh pwned", "deny"),
    ("bash -s -- --yes", "ask"),
    ("unshare -r touch pwned", "deny"),
    ("unshare -S 0 touch pwned", "deny"),
    ("nsenter -t 1 -m touch pwned", "deny"),
    ("runuser -u me -- touch pwned", "deny"),
    ("runuser me -c 'touch pwned'", "deny"),
    ("pkexec --user root touch pwned", "deny"),
    ("strace -f -o /dev/null touch pwned", "deny"),
    ("ltrace touch pwned", "deny"),
    ("taskset -c 0 touch pwned", "deny"),
    ("taskset 0x1 touch pwned", "deny"),
    ("chrt -f 1 touch pwned", "deny"),
    ("systemd-run --user --uid 0 touch pwned", "deny"),
    ("prlimit --nofile=10 touch pwned", "deny"),
    ("setpriv --reuid 0 touch pwned", "deny"),
    ("fakeroot touch pwned", "deny"),
    ("watch touch pwned", "deny"),
    ("watch -n 1 'touch pwned'", "deny"),
    ("watch -x touch pwned", "deny"),
    ("sg wheel -c 'touch pwned'", "deny"),
    ("script -qc 'touch pwned' /dev/null", "deny"),
    ("watch -x rm -rf /", "refused"),
    ("bash --norc -ec 'rm -rf /'", "refused"),
    ("eval 'touch pwned'", "deny"),
    // What cannot be known asks, whatever allow rule names the line.
    ("echo dG91Y2g= | base64 -d | sh", "ask"),
    ("cat script | bash", "ask"),
    ("echo whoami | sudo sh -s", "ask"),
    ("x=whoami; echo $($x)", "ask"),
    ("echo ${x:-$(whoami", "ask"),
    ("echo 'unterminated", "ask"),
    ("sudo $CMD", "ask"),
    ("timeout 5 `echo whoami`", "ask"),
    ("echo 'print(1)' | python3", "ask"),
    ("echo 'import os' | python3 -", "ask"),
    ("python3 -m json.tool data.json", "allow"),
    // Hard limits through path tricks, loops and devices.
    ("rm -rf /usr/../etc", "refused"),
    ("rm -rf $'/'", "refused"),
    ("rm -rf $'\\x2f'", "refused"),
    ("rm -rf $'\\057usr'", "refused"),
    ("rm -rf //usr/./", "refused"),
    ("function f { rm -rf ~; }; f", "refused"),
    // A loop variable is known only when it runs: the approval step (and the sandbox) stop it.
    ("for d in /; do rm -rf $d; done", "ask"),
    ("f() { rm -rf /; }; f", "refused"),
    ("cp /dev/zero /dev/sda", "refused"),
    ("echo x | tee /dev/sda", "refused"),
    ("shred /dev/sda", "refused"),
    ("echo cm0gLXJmIC8= | base64 -d | sh", "ask"),
];

#[test]
fn corpus() {
    let source = RuleSource::new(RuleLayer::User, "corpus".to_owned());
    let strings = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let (rules, errors) = RuleSet::parse(
        &source,
        &strings(&[
            "Bash(echo:*)",
            "Bash(ls:*)",
            "Bash(cat:*)",
            "Bash(find:*)",
            "Bash(git status)",
            "Bash(sudo:*)",
            "Bash(timeout:*)",
            "Bash(xargs:*)",
            "Bash(base64:*)",
            "Bash(sh:*)",
            "Bash(bash:*)",
            "Bash(python3:*)",
        ]),
        &[],
        &strings(&["Bash(touch:*)", "Bash(curl:*)"]),
    );
    assert!(errors.is_empty(), "{errors:?}");
    let policy = Policy::new(PermissionMode::Default, rules);
    let workspace = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (command, expected) in CORPUS {
        let input = json!({ "command": command });
        let request = ToolRequest {
            tool: "run_shell",
            input: &input,
            read_only: false,
            workspace: workspace.path(),
        };
        let decision = policy.evaluate(&request);
        let actual = match &decision {
            Decision::Allow { .. } => "allow",
            Decision::Ask { .. } => "ask",
            Decision::Deny { reason } if reason.starts_with("refused") => "refused",
            Decision::Deny { .. } => "deny",
        };
        if actual != *expected {
            failures.push(format!(
                "{command:?}: expected {expected}, got {decision:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
