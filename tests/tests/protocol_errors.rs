//! Daemon errors speak to every client, editors included: their messages name no `agentctl`
//! command, what the client can do next travels in `error.data` (`{"suggest": {"method": …}}`),
//! and agentctl words that suggestion as its own command.

use std::path::Path;

use agentd_tests::harness::text;
use agentd_tests::mock_llm::Format;
use agentd_tests::scenario::Scenario;
use agentd_tests::sources::{daemon_source_dirs, rust_files};
use serde_json::{Value, json};

/// A request the daemon refuses, the code it answers with and the method it suggests.
struct Refused {
    method: &'static str,
    params: Value,
    code: i32,
    suggest: &'static str,
}

fn refused_requests() -> Vec<Refused> {
    use protocol::error::{INVALID_PARAMS, NOT_FOUND};
    vec![
        Refused {
            method: "session/get",
            params: json!({"sessionId": "ses_missing"}),
            code: NOT_FOUND,
            suggest: "session/list",
        },
        Refused {
            method: "session/get",
            params: json!({"sessionId": "not a session id"}),
            code: INVALID_PARAMS,
            suggest: "session/list",
        },
        Refused {
            method: "session/delete",
            params: json!({"sessionId": "ses_missing"}),
            code: NOT_FOUND,
            suggest: "session/list",
        },
        Refused {
            method: "approval/list",
            params: json!({"sessionId": "not a session id"}),
            code: INVALID_PARAMS,
            suggest: "session/list",
        },
        Refused {
            method: "approval/respond",
            params: json!({"approvalId": "apr_missing", "decision": "allowOnce"}),
            code: NOT_FOUND,
            suggest: "approval/list",
        },
        Refused {
            method: "approval/respond",
            params: json!({"approvalId": "not an approval id", "decision": "deny"}),
            code: INVALID_PARAMS,
            suggest: "approval/list",
        },
        Refused {
            method: "budget/list",
            params: json!({"sessionId": "not a session id"}),
            code: INVALID_PARAMS,
            suggest: "session/list",
        },
        Refused {
            method: "budget/respond",
            params: json!({"requestId": "bud_missing", "decision": "stop"}),
            code: NOT_FOUND,
            suggest: "budget/list",
        },
        Refused {
            method: "budget/respond",
            params: json!({"requestId": "not a budget id", "decision": "continue"}),
            code: INVALID_PARAMS,
            suggest: "budget/list",
        },
    ]
}

#[tokio::test]
async fn daemon_errors_name_no_agentctl_command_and_suggest_a_method_in_data() {
    let s = Scenario::start(Format::OpenAi).await;
    let mut client = s.client().await;
    for case in refused_requests() {
        let id = client.send_request(case.method, &case.params).await;
        let response = client.response_for(&json!(id)).await;
        let error = &response["error"];
        let what = format!("{} {}: {response}", case.method, case.params);
        assert_eq!(error["code"], json!(case.code), "{what}");
        let message = error["message"].as_str().expect("an error message");
        assert!(!message.contains("agentctl"), "{what}");
        assert_eq!(
            error["data"]["suggest"]["method"],
            json!(case.suggest),
            "{what}"
        );
    }
}

#[tokio::test]
async fn agentctl_words_the_suggestion_as_its_own_command() {
    let s = Scenario::start(Format::OpenAi).await;
    let env = &s.daemon.env;
    let cases: [(&[&str], &str); 5] = [
        (
            &["sessions", "show", "ses_missing"],
            "agentctl sessions list",
        ),
        (
            &["sessions", "rm", "not-a-session"],
            "agentctl sessions list",
        ),
        (&["approve", "apr_missing"], "agentctl approvals list"),
        (&["deny", "not-an-approval"], "agentctl approvals list"),
        (&["approve", "bud_missing"], "agentctl approvals list"),
    ];
    for (args, hint) in cases {
        let output = env.run_agentctl(args).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(hint), "{args:?}: {stderr}");
    }
}

/// Files of the daemon's crates (paths under their `src`) whose messages may name agentctl,
/// with why.
const MAY_NAME_AGENTCTL: &[(&str, &str)] = &[
    (
        "daemon/lock.rs",
        "agentd's own startup refusal, printed on the stderr of whoever started it",
    ),
    (
        "daemon/mod.rs",
        "agentd's own startup refusal, printed on the stderr of whoever started it",
    ),
    (
        "server/os/mod.rs",
        "agentd's own startup refusal (a live daemon on the socket or pipe), printed on the \
         stderr of whoever started it",
    ),
    (
        "trust.rs",
        "the warning of a file withheld for trust (its allow rules, mode or MCP servers) names the \
         commands to review and trust it (issue 8 asks for them); it names no wire method, which \
         is no word for a person (issue 24)",
    ),
];

/// The whole class, not just the ids tested above: no code line of the daemon (comments and
/// test modules aside) names agentctl, except the files listed with their reason.
#[test]
fn no_daemon_message_names_agentctl() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for (src, file) in daemon_source_dirs()
        .map(|dir| root.join(dir))
        .flat_map(|src| {
            rust_files(&src)
                .into_iter()
                .map(move |file| (src.clone(), file))
        })
    {
        let relative = file.strip_prefix(&src).unwrap().display().to_string();
        let is_test_file = relative.ends_with("tests.rs") || relative.ends_with("test_support.rs");
        if is_test_file || MAY_NAME_AGENTCTL.iter().any(|(path, _)| *path == relative) {
            continue;
        }
        let source = std::fs::read_to_string(&file).unwrap();
        for (number, line) in source.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            let code = line.trim_start();
            if !code.starts_with("//") && code.contains("agentctl") {
                found.push(format!("{relative}:{}: {code}", number + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "daemon messages reach editors too: put the hint in error.data \
         (protocol::error::ErrorData) and let agentctl word it:\n{}",
        found.join("\n")
    );
}
