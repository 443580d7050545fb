//! What `agentctl run` and `attach` show a person (issue 13, "Seeing what happens"): text
//! from the model and tools neutralised, the after-run line, approvals with what they approve,
//! bounded lines in a narrow terminal, colours on request only.

use agentd_tests::harness::{TestEnv, text};
use agentd_tests::mock_llm::{MockLlm, Reply};
use serde_json::{Value, json};

/// An environment whose daemon talks to `mock` (OpenAI format), running tools without asking.
fn bypass_env(mock: &MockLlm) -> TestEnv {
    TestEnv::new()
        .var("OPENAI_API_KEY", "sk-test")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .config("[permissions]\ndefault_mode = \"bypass\"\n")
}

/// An OSC 52 clipboard write, a title change and a screen clear.
const HOSTILE: &str = "\x1b]52;c;cHduZWQ=\x07\x1b]0;owned\x07\x1b[2J";

#[tokio::test]
async fn control_sequences_never_reach_the_terminal_raw_but_json_keeps_them() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": format!("echo '{HOSTILE}' && false")}),
    ));
    mock.push(Reply::text(format!("answer {HOSTILE} end")));
    let env = bypass_env(&mock);
    let output = env.run_agentctl(&["run", "go"]).await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        !stdout.contains('\x1b') && !stdout.contains('\x07'),
        "{stdout:?}"
    );
    assert!(
        !stderr.contains('\x1b') && !stderr.contains('\x07'),
        "{stderr:?}"
    );
    assert_eq!(stdout, "answer ^[]52;c;cHduZWQ=^G^[]0;owned^G^[[2J end\n");
    assert!(stderr.contains("^[]52;c;"), "the tool summary: {stderr:?}");

    // --json keeps the exact text (JSON-escaped).
    mock.push(Reply::text(format!("again {HOSTILE}")));
    let output = env.run_agentctl(&["--json", "run", "go"]).await;
    let stdout = text(&output.stdout);
    assert!(!stdout.contains('\x1b'), "{stdout:?}");
    let completed: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("ndjson"))
        .filter(|line| {
            line["event"]["type"] == "messageCompleted" && line["event"]["role"] == "assistant"
        })
        .collect();
    assert_eq!(completed.len(), 1, "{stdout}");
    assert_eq!(completed[0]["event"]["content"], format!("again {HOSTILE}"));
}
