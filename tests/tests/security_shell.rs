//! Commands nested in parameter expansion (`${x:-$(cmd)}`), arithmetic (`$(( $(cmd) ))`) and
//! wrappers (`find -exec`, `sudo`) are parts a rule sees; a line whose commands cannot all be
//! known (a script piped into `sh`) asks whatever allow rule names it.

use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::RunStatus;

use crate::approvals::{requested, respond, result_of, shell, started, until_approval};

/// `echo`, `find` and `sh` are allowed, `touch` is denied; anything else asks.
const RULES: &str = "[permissions]\n\
     default_mode = \"default\"\n\
     allow = [\"Bash(echo:*)\", \"Bash(find:*)\", \"Bash(sh:*)\"]\n\
     deny = [\"Bash(touch:*)\"]\n";

both_formats!(nested_commands_meet_deny_allow_and_the_hard_limit);
async fn nested_commands_meet_deny_allow_and_the_hard_limit(format: Format) {
    let s = Scenario::start_with(format, RULES).await;
    let calls = [
        ("c1", "echo ${x:-$(touch pwned1)}"),
        ("c2", "echo $(( $(touch pwned2) ))"),
        ("c3", "echo ${x:-$(rm -rf /)}"),
        ("c4", "find . -maxdepth 0 -exec touch pwned3 \\;"),
        ("c5", "echo ${x:-$(echo ran > ran.txt)}"),
        ("c6", "echo ${x:=`id -u > asked.txt`}"),
        ("c7", "echo touch pwned4 | sh"),
    ];
    for (id, command) in calls {
        s.mock.push(shell(id, command));
    }
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "go").await;
    let mut events = Vec::new();
    for (call, fragment) in [("c6", "approval needed"), ("c7", "standard input")] {
        let (seen, approval) = until_approval(&mut client).await;
        events.extend(seen);
        assert_eq!(approval.tool_call_id, call);
        assert!(approval.reason.contains(fragment), "{}", approval.reason);
        respond(&mut client, &approval.approval_id, "deny", None)
            .await
            .unwrap();
    }
    events.extend(client.events_until_run_finished().await);

    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(requested(&events).len(), 2, "only c6 and c7 ask");
    for call in ["c1", "c2", "c4"] {
        let (output, is_error) = result_of(&events, call);
        assert!(
            is_error && output.contains("Bash(touch:*)"),
            "{call}: {output}"
        );
        assert!(!started(&events, call));
    }
    let (output, is_error) = result_of(&events, "c3");
    assert!(is_error && output.contains("refused"), "{output}");
    assert!(started(&events, "c5"), "{:?}", result_of(&events, "c5"));
    assert_eq!(
        std::fs::read_to_string(s.workspace().join("ran.txt")).unwrap(),
        "ran\n"
    );
    for call in ["c6", "c7"] {
        assert!(!started(&events, call));
    }
    for file in ["pwned1", "pwned2", "pwned3", "pwned4", "asked.txt"] {
        assert!(!s.workspace().join(file).exists(), "{file}");
    }
}

both_formats!(destructive_forms_are_refused_in_bypass_mode);
/// `bypass` with every shell command allowed: nothing asks, yet the destructive forms that
/// used to slip past the list (`bash -c --`, a wrapper like `taskset`, `$1` of `sh -c`) are
/// refused, and a line that only prints such a command runs. Each refused form falls back on
/// `rm -rf /`, which GNU rm refuses by itself, should the refusal ever fail.
async fn destructive_forms_are_refused_in_bypass_mode(format: Format) {
    let rules = "[permissions]\n\
         default_mode = \"bypass\"\n\
         allow = [\"Bash\"]\n";
    let s = Scenario::start_with(format, rules).await;
    let calls = [
        ("c1", "bash -c -- 'rm -rf /'"),
        ("c2", "taskset -c 0 rm -rf /"),
        ("c3", "sh -c 'rm -rf \"$1\"' sh /"),
        ("c4", "echo \"rm -rf /\""),
    ];
    for (id, command) in calls {
        s.mock.push(shell(id, command));
    }
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "go").await;
    let events = client.events_until_run_finished().await;

    assert_eq!(run_status(&events), RunStatus::Completed);
    assert!(requested(&events).is_empty(), "bypass never asks");
    for call in ["c1", "c2", "c3"] {
        let (output, is_error) = result_of(&events, call);
        assert!(is_error, "{call}: {output}");
        assert!(output.contains("refused"), "{call}: {output}");
        assert!(
            output.contains("deletes `/` recursively"),
            "{call}: {output}"
        );
        assert!(!started(&events, call), "{call} must never start");
    }
    let (output, is_error) = result_of(&events, "c4");
    assert!(!is_error && output.contains("rm -rf /"), "{output}");
    // The model read the refusal as the call's result.
    let last = s.mock.requests().pop().unwrap();
    assert!(
        last.body.contains("Destructive commands are blocked"),
        "{}",
        last.body
    );
}
