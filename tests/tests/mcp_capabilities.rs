//! The MCP client capabilities agentd offers, with real servers: `roots` (npm
//! server-filesystem started with no directory, the usual set-up elsewhere, works in the
//! session's project root through roots alone and refuses paths outside it; a session in a
//! repository's subdirectory offers the repository's root, over HTTP too).

use agentd_tests::mcp_scenario::*;
use agentd_tests::mcp_servers::filesystem_stdio;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::RunStatus;
use serde_json::{Value, json};

#[tokio::test]
async fn server_filesystem_without_a_directory_works_in_the_project_root_through_roots() {
    let config = server_toml("fs", &filesystem_stdio(), "");
    let s = Scenario::start_with(Format::OpenAi, &config).await;
    let notes = s.workspace().join("notes.txt");
    std::fs::write(&notes, "roots-work-7f3a\n").unwrap();
    let outside = s.daemon.env.path("home").join("secret.txt");
    std::fs::write(&outside, "not yours\n").unwrap();
    let (mut client, session_id) = s.session().await;

    // A first run starts the server; it asks for the roots once initialized.
    s.mock.push(Reply::text("Hello."));
    client.prompt(&session_id, "hello").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    // The server says on stderr when it took the roots (the outside world, with a deadline).
    agentd_tests::mcp_scenario::wait_for_mcp_log_line(
        &s.daemon.env,
        "fs",
        "Updated allowed directories from MCP roots: 1 valid",
    )
    .await;

    s.mock.push(Reply::tool_calls(vec![
        (
            "in",
            "mcp__fs__read_text_file",
            json!({"path": notes.display().to_string()}).to_string(),
        ),
        (
            "out",
            "mcp__fs__read_text_file",
            json!({"path": outside.display().to_string()}).to_string(),
        ),
        ("dirs", "mcp__fs__list_allowed_directories", "{}".to_owned()),
    ]));
    s.mock.push(Reply::text("Read."));
    client.prompt(&session_id, "read the notes").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[0].0, "in");
    assert!(!results[0].2, "{results:?}");
    assert!(results[0].1.contains("roots-work-7f3a"), "{results:?}");
    assert_eq!(results[1].0, "out");
    assert!(
        results[1].2 && results[1].1.contains("Access denied"),
        "a path outside the root is refused: {results:?}"
    );
    let root = std::fs::canonicalize(s.workspace()).unwrap();
    assert!(
        results[2].1.contains(&root.display().to_string()),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_session_in_a_subdirectory_of_a_repository_offers_the_repository_root() {
    let server = agentd_tests::mcp_servers::EverythingHttp::start().await;
    let config = format!(
        "[mcp_servers.web]\ntype = \"http\"\nurl = {}\n",
        Value::String(server.url())
    );
    let s = Scenario::start_with(Format::OpenAi, &config).await;
    let repo = s.workspace().join("my repo");
    let sub = repo.join("sub");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&sub).unwrap();
    let mut client = s.client().await;
    let session_id = create_session(&mut client, &sub).await;
    client.subscribe(&session_id, Some(0)).await;
    s.mock
        .push(Reply::tool_call("r", "mcp__web__get-roots-list", json!({})));
    s.mock.push(Reply::text("Listed."));
    client.prompt(&session_id, "list the roots").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    assert_eq!(results.len(), 1, "{results:?}");
    let listed = &results[0].1;
    let root = std::fs::canonicalize(&repo).unwrap();
    let uri = format!("file://{}", root.display()).replace(' ', "%20");
    assert!(
        listed.contains("(1 total)") && listed.contains(&format!("URI: {uri}\n")),
        "the repository's root, its space encoded, and it alone: {listed}"
    );
    assert!(
        listed.contains("1. my repo\n"),
        "named by its directory: {listed}"
    );
}
