//! Skills, agent definitions and memory never follow a symlink out of the project (or out of
//! the user's config dir): a skill directory or `SKILL.md` linked to a file elsewhere, an agent
//! definition linked outside, a memory directory or store file that is a link elsewhere are
//! refused with a warning that says where the link leads, and nothing of theirs reaches the
//! model.

use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use protocol::event::RunStatus;
use serde_json::{Value, json};

/// What a planted file says: it must never show in a request to the model.
const SECRET: &str = "SECRET-d41d8cd9";

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn symlink(target: &std::path::Path, link: &std::path::Path) {
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

fn leak_skill() -> String {
    format!("---\nname: leak\ndescription: looks harmless\n---\n{SECRET}\n")
}

#[tokio::test]
async fn skills_linked_out_of_the_project_are_not_listed_nor_loaded() {
    let s = Scenario::start(Format::OpenAi).await;
    let workspace = s.workspace();
    let outside = s.daemon.env.path("outside");
    write(&outside.join("evil/SKILL.md"), &leak_skill());
    write(&outside.join("secret.md"), &leak_skill());
    symlink(&outside.join("evil"), &workspace.join("skills/evil"));
    symlink(
        &outside.join("secret.md"),
        &workspace.join(".claude/skills/linked/SKILL.md"),
    );
    write(
        &workspace.join("skills/fine/SKILL.md"),
        "---\ndescription: a real skill\n---\nbody\n",
    );

    let mut client = s.client().await;
    let listed = client
        .request(
            "skills/list",
            json!({"cwd": workspace.display().to_string()}),
        )
        .await
        .unwrap();
    let names: Vec<&str> = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|skill| skill["name"].as_str())
        .collect();
    assert_eq!(names, ["fine"], "{listed}");
    let warnings = listed["warnings"].to_string();
    for link in ["skills/evil", ".claude/skills/linked/SKILL.md"] {
        assert!(
            warnings.contains(&format!("{link} leads to")),
            "{link}: {warnings}"
        );
    }
    assert!(warnings.contains("through a symbolic link"), "{warnings}");
    assert!(!warnings.contains(SECRET), "{warnings}");

    s.mock.push(Reply::tool_call(
        "c1",
        "load_skill",
        json!({"name": "leak"}),
    ));
    s.mock.push(Reply::text("done"));
    let session = create_session(&mut client, &workspace).await;
    client.subscribe(&session, Some(0)).await;
    client.prompt(&session, "load it").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    assert!(
        results[0].2 && results[0].1.contains("no skill named `leak`"),
        "{results:?}"
    );
    for request in s.mock.requests() {
        assert!(!request.body.contains(SECRET), "{}", request.body);
        assert!(!request.body.contains("looks harmless"), "{}", request.body);
    }
}

#[tokio::test]
async fn an_agent_definition_linked_outside_is_a_problem_not_an_agent() {
    let s = Scenario::start(Format::OpenAi).await;
    let workspace = s.workspace();
    let outside = s.daemon.env.path("outside");
    write(
        &outside.join("evil.md"),
        &format!("---\ndescription: {SECRET}\npermissionMode: bypassPermissions\n---\nbody\n"),
    );
    symlink(
        &outside.join("evil.md"),
        &workspace.join(".claude/agents/evil.md"),
    );
    let user_agents = s.daemon.env.path("config").join("agentd/agents");
    symlink(&outside.join("evil.md"), &user_agents.join("mine.md"));

    let mut client = s.client().await;
    let listed: Value = client
        .request(
            "agents/list",
            json!({"cwd": workspace.display().to_string()}),
        )
        .await
        .unwrap();
    let names: Vec<&str> = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|agent| agent["name"].as_str())
        .collect();
    assert_eq!(names, ["general-purpose", "explore"], "{listed}");
    let problems = listed["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 2, "{listed}");
    for problem in problems {
        let reason = problem["reason"].as_str().unwrap();
        assert!(reason.contains("through a symbolic link"), "{reason}");
        assert!(!reason.contains(SECRET), "{reason}");
    }
}

#[tokio::test]
async fn memory_linked_elsewhere_is_neither_read_into_the_prompt_nor_written() {
    let s = Scenario::start(Format::OpenAi).await;
    let workspace = s.workspace();
    let outside = s.daemon.env.path("outside");
    // The project's memory dir is a link elsewhere; the user's profile a link to a key.
    write(
        &outside.join("memory/MEMORY.md"),
        &format!("{SECRET} memory"),
    );
    symlink(&outside.join("memory"), &workspace.join(".agents/memory"));
    write(&outside.join("id_ed25519"), &format!("{SECRET} key"));
    let user_store = s.daemon.env.path("data").join("agentd/memory");
    symlink(&outside.join("id_ed25519"), &user_store.join("USER.md"));

    s.mock.push(Reply::tool_call(
        "m1",
        "memory",
        json!({"target": "user", "action": "add", "content": "prefers tabs"}),
    ));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "remember").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    assert!(
        results[0].2 && results[0].1.contains("through a symbolic link"),
        "{results:?}"
    );
    let requests = s.mock.requests();
    let system = request_system_text(s.format, &requests[0]);
    assert!(system.contains("<memory>"), "{system}");
    assert!(!system.contains(SECRET), "{system}");
    assert_eq!(
        std::fs::read_to_string(outside.join("id_ed25519")).unwrap(),
        format!("{SECRET} key")
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("memory/MEMORY.md")).unwrap(),
        format!("{SECRET} memory")
    );
}
