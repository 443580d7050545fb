//! Whose memory a session sees: `MEMORY.md` per project root by default (kept in the state
//! dir, never written into the repository), `USER.md` per user, one `MEMORY.md` for every
//! project with `[memory] scope = "user"`, and none at all with `[memory] enabled = false`.

use std::path::{Path, PathBuf};

use agentd_tests::harness::text;
use agentd_tests::mcp_scenario::request_tool_names;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use protocol::event::RunStatus;
use serde_json::json;

const DEFAULT_MODE: &str = "[permissions]\ndefault_mode = \"default\"\n";

fn add(id: &str, target: &str, content: &str) -> Reply {
    Reply::tool_call(
        id,
        "memory",
        json!({"target": target, "action": "add", "content": content}),
    )
}

/// Two repositories beside each other in the scenario's workspace.
fn two_projects(s: &Scenario) -> (PathBuf, PathBuf) {
    let make = |name: &str| {
        let root = s.workspace().join(name);
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        root.canonicalize().unwrap()
    };
    (make("one"), make("two"))
}

/// Runs one prompt in a new session in `cwd` to its end.
async fn run_in(s: &Scenario, cwd: &Path, prompt: &str) {
    let mut client = s.client().await;
    let session = create_session(&mut client, cwd).await;
    client.subscribe(&session, Some(0)).await;
    client.prompt(&session, prompt).await;
    assert_eq!(
        run_status(&client.events_until_run_finished().await),
        RunStatus::Completed
    );
}

/// Project one saves a note and a preference, then project two and project one start a
/// session each: the system prompts of their first requests.
async fn saved_in_one_then_seen(s: &Scenario) -> (String, String) {
    let (one, two) = two_projects(s);
    s.mock
        .push(add("m1", "memory", "ONE-FACT builds with make"));
    s.mock.push(add("m2", "user", "USER-FACT prefers tabs"));
    s.mock.push(Reply::text("saved"));
    run_in(s, &one.join("src"), "remember").await;
    s.mock.push(Reply::text("in two"));
    run_in(s, &two, "hello").await;
    s.mock.push(Reply::text("in one"));
    run_in(s, &one, "hello again").await;
    let requests = s.mock.wait_for_requests(5).await;
    (
        request_system_text(Format::OpenAi, &requests[3]),
        request_system_text(Format::OpenAi, &requests[4]),
    )
}

#[tokio::test]
async fn two_projects_keep_separate_memories_and_share_the_users_profile() {
    let s = Scenario::start_with(Format::OpenAi, DEFAULT_MODE).await;
    let (in_two, in_one) = saved_in_one_then_seen(&s).await;
    assert!(!in_two.contains("ONE-FACT"), "project two: {in_two}");
    assert!(in_one.contains("ONE-FACT"), "project one: {in_one}");
    for system in [&in_one, &in_two] {
        assert!(system.contains("USER-FACT"), "{system}");
        assert!(system.contains("MEMORY.md is this project's"), "{system}");
    }
    // Nothing was written into either repository.
    let (one, two) = two_projects(&s);
    assert!(!one.join(".agents").exists() && !two.join(".agents").exists());

    // memory/get says whose each store is.
    let mut client = s.client().await;
    let got = client
        .request(
            "memory/get",
            json!({"cwd": one.join("src").display().to_string()}),
        )
        .await
        .unwrap();
    assert_eq!(got["memory"]["projectRoot"], one.display().to_string());
    assert_eq!(
        got["memory"]["entries"],
        json!(["ONE-FACT builds with make"])
    );
    let other = client
        .request("memory/get", json!({"cwd": two.display().to_string()}))
        .await
        .unwrap();
    assert_eq!(other["memory"]["entries"], json!([]));
    assert_eq!(other["user"]["entries"], json!(["USER-FACT prefers tabs"]));
    assert_ne!(other["memory"]["path"], got["memory"]["path"]);
}

#[tokio::test]
async fn with_the_user_scope_one_memory_is_seen_in_every_project() {
    let config = format!("{DEFAULT_MODE}[memory]\nscope = \"user\"\n");
    let s = Scenario::start_with(Format::OpenAi, &config).await;
    let (in_two, in_one) = saved_in_one_then_seen(&s).await;
    assert!(in_two.contains("ONE-FACT"), "project two: {in_two}");
    assert!(in_one.contains("ONE-FACT"), "project one: {in_one}");
    assert!(in_two.contains("Both stores are the user's"), "{in_two}");
    assert!(
        s.daemon
            .env
            .path("data")
            .join("agentd/memory/MEMORY.md")
            .exists()
    );
}

#[tokio::test]
async fn with_memory_off_a_session_has_no_memory_section_and_no_memory_tool() {
    let config = format!("{DEFAULT_MODE}[memory]\nenabled = false\n");
    let s = Scenario::start_with(Format::OpenAi, &config).await;
    let user_dir = s.daemon.env.path("data").join("agentd/memory");
    std::fs::create_dir_all(&user_dir).unwrap();
    std::fs::write(user_dir.join("USER.md"), "PLANTED-PROFILE\n").unwrap();
    s.mock.push(Reply::text("hi"));
    run_in(&s, &s.workspace(), "hello").await;
    let request = &s.mock.wait_for_requests(1).await[0];
    let system = request_system_text(Format::OpenAi, request);
    assert!(!system.contains("<memory>"), "{system}");
    assert!(!system.contains("PLANTED-PROFILE"), "{system}");
    let tools = request_tool_names(Format::OpenAi, request);
    assert!(!tools.iter().any(|tool| tool == "memory"), "{tools:?}");
    assert!(tools.iter().any(|tool| tool == "read_file"), "{tools:?}");

    let mut client = s.client().await;
    let got = client
        .request(
            "memory/get",
            json!({"cwd": s.workspace().display().to_string()}),
        )
        .await
        .unwrap();
    assert_eq!(got["enabled"], false);
    let shown = s.daemon.env.run_agentctl(&["memory", "show"]).await;
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    assert!(
        text(&shown.stdout).starts_with("memory is off"),
        "{}",
        text(&shown.stdout)
    );
}
