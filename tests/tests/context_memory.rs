//! Curated memory end to end: the model's `memory` tool writes the store files without asking,
//! `memory/get` and `agentctl memory show` show them, each session's system prompt holds the
//! snapshot taken when it was created, sessions writing at once lose nothing, and plan mode
//! refuses the writes.

use agentd_tests::harness::text;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::error as codes;
use protocol::event::RunStatus;
use serde_json::{Value, json};

/// Sessions run in the default mode: the memory tool must not need an approval.
const DEFAULT_MODE: &str = "[permissions]\ndefault_mode = \"default\"\n";

fn add(id: &str, target: &str, content: &str) -> Reply {
    Reply::tool_call(
        id,
        "memory",
        json!({"target": target, "action": "add", "content": content}),
    )
}

/// `<XDG_DATA_HOME>/agentd/memory/<name>` of the scenario's daemon.
fn store_file(s: &Scenario, name: &str) -> std::path::PathBuf {
    s.daemon.env.path("data").join("agentd/memory").join(name)
}

async fn memory_get(client: &mut agentd_tests::harness::Client, cwd: &std::path::Path) -> Value {
    client
        .request("memory/get", json!({"cwd": cwd.display().to_string()}))
        .await
        .expect("memory/get")
}

both_formats!(the_memory_tool_saves_without_asking_and_memory_get_shows_it);
async fn the_memory_tool_saves_without_asking_and_memory_get_shows_it(format: Format) {
    let s = Scenario::start_with(format, DEFAULT_MODE).await;
    s.mock.push(add("m1", "user", "prefers tabs"));
    s.mock
        .push(add("m2", "memory", "tests run with `make check`"));
    s.mock.push(Reply::text("noted"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "I like tabs").await;
    let events = client.events_until_run_finished().await;

    assert_eq!(run_status(&events), RunStatus::Completed);
    assert!(
        !kinds(&events)
            .iter()
            .any(|kind| kind == "approvalRequested"),
        "{:?}",
        kinds(&events)
    );
    let results = tool_results(&events);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(!results[0].2, "{}", results[0].1);
    assert!(results[0].1.contains("12/1,375 chars"), "{}", results[0].1);
    assert!(results[1].1.contains("27/2,200 chars"), "{}", results[1].1);
    assert_eq!(
        std::fs::read_to_string(store_file(&s, "USER.md")).unwrap(),
        "prefers tabs\n"
    );
    // MEMORY.md is the project's, kept in the state dir (never in the repository).
    assert!(!store_file(&s, "MEMORY.md").exists());
    assert!(!s.workspace().join(".agents").exists());

    let got = memory_get(&mut client, &s.workspace()).await;
    assert_eq!(got["scope"], "project");
    assert_eq!(got["enabled"], true);
    assert_eq!(got["user"]["scope"], "user");
    assert_eq!(got["memory"]["scope"], "project");
    let workspace = s.workspace().canonicalize().unwrap();
    assert_eq!(
        got["memory"]["projectRoot"],
        workspace.display().to_string()
    );
    let memory_file = std::path::PathBuf::from(got["memory"]["path"].as_str().unwrap());
    assert!(
        memory_file.starts_with(s.daemon.env.path("state").join("agentd/memory/projects")),
        "{memory_file:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&memory_file).unwrap(),
        "tests run with `make check`\n"
    );
    assert_eq!(got["user"]["entries"], json!(["prefers tabs"]));
    assert_eq!(got["user"]["usageChars"], 12);
    assert_eq!(got["user"]["limitChars"], 1375);
    assert_eq!(
        got["memory"]["entries"],
        json!(["tests run with `make check`"])
    );
    assert_eq!(got["memory"]["limitChars"], 2200);

    let shown = s.daemon.env.run_agentctl(&["memory", "show"]).await;
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    let out = text(&shown.stdout);
    assert!(
        out.contains("USER.md  the user's, seen in every project  12/1,375 chars"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "MEMORY.md  project {}  27/2,200 chars",
            workspace.display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("file: {}", memory_file.display())),
        "{out}"
    );
    assert!(out.contains("- prefers tabs"), "{out}");
    assert!(out.contains("- tests run with `make check`"), "{out}");
    let json_out = s
        .daemon
        .env
        .run_agentctl(&["memory", "show", "--json"])
        .await;
    assert!(json_out.status.success(), "{}", text(&json_out.stderr));
    let parsed: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert_eq!(parsed, got);
}

both_formats!(a_sessions_prompt_keeps_the_snapshot_taken_when_it_was_created);
async fn a_sessions_prompt_keeps_the_snapshot_taken_when_it_was_created(format: Format) {
    let s = Scenario::start(format).await;
    // Session A saves a fact in its first run.
    s.mock
        .push(add("m1", "memory", "deploys go through ./ship.sh"));
    s.mock.push(Reply::text("saved"));
    let (mut first, session_a) = s.session().await;
    first.prompt(&session_a, "remember how we deploy").await;
    assert_eq!(
        run_status(&first.events_until_run_finished().await),
        RunStatus::Completed
    );
    // Session B, created after the write, sees it; A's next run still does not.
    s.mock.push(Reply::text("hello from B"));
    let (mut second, session_b) = s.session().await;
    second.prompt(&session_b, "how do we deploy?").await;
    second.events_until_run_finished().await;
    s.mock.push(Reply::text("A again"));
    first.prompt(&session_a, "and now?").await;
    first.events_until_run_finished().await;

    let requests = s.mock.wait_for_requests(4).await;
    let systems: Vec<String> = requests
        .iter()
        .map(|request| request_system_text(format, request))
        .collect();
    let fact = "deploys go through ./ship.sh";
    assert!(systems[2].contains(fact), "session B: {}", systems[2]);
    assert!(systems[2].contains("MEMORY.md (your notes, 28/2,200 chars)"));
    for a in [0, 1, 3] {
        assert!(!systems[a].contains(fact), "session A request {a}");
        assert_eq!(systems[a], systems[0], "session A's prompt changed");
    }
    assert!(systems[0].contains("MEMORY.md (your notes, 0/2,200 chars)"));
}

both_formats!(two_sessions_writing_at_once_both_land);
async fn two_sessions_writing_at_once_both_land(format: Format) {
    let s = Scenario::start(format).await;
    let batch = |who: &str| {
        Reply::tool_calls(
            (0..8)
                .map(|n| {
                    let args = json!({"target": "memory", "action": "add", "content": format!("{who} fact {n}")});
                    (format!("{who}{n}"), "memory".to_owned(), args.to_string())
                })
                .collect(),
        )
    };
    // Whichever session takes which batch, every one of the 16 adds must be in the file.
    s.mock.push(batch("a"));
    s.mock.push(batch("b"));
    s.mock.push(Reply::text("done"));
    s.mock.push(Reply::text("done"));
    let (mut one, session_one) = s.session().await;
    let (mut two, session_two) = s.session().await;
    one.prompt(&session_one, "save yours").await;
    two.prompt(&session_two, "save yours").await;
    let (events_one, events_two) = tokio::join!(
        one.events_until_run_finished(),
        two.events_until_run_finished()
    );
    for events in [&events_one, &events_two] {
        assert_eq!(run_status(events), RunStatus::Completed);
        for (id, output, is_error) in tool_results(events) {
            assert!(!is_error, "{id}: {output}");
        }
    }
    let got = memory_get(&mut one, &s.workspace()).await;
    let mut entries: Vec<String> = got["memory"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry.as_str().unwrap().to_owned())
        .collect();
    entries.sort();
    let mut want: Vec<String> = ["a", "b"]
        .iter()
        .flat_map(|who| (0..8).map(move |n| format!("{who} fact {n}")))
        .collect();
    want.sort();
    assert_eq!(entries, want);
}

both_formats!(plan_mode_refuses_memory_writes);
async fn plan_mode_refuses_memory_writes(format: Format) {
    let s = Scenario::start_with(format, DEFAULT_MODE).await;
    s.mock.push(add("m1", "user", "likes plans"));
    s.mock.push(Reply::text("here is the plan"));
    let mut client = s.client().await;
    let session = client
        .request(
            "session/create",
            json!({"cwd": s.workspace().display().to_string(), "permissionMode": "plan"}),
        )
        .await
        .unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    client.subscribe(&session, Some(0)).await;
    client.prompt(&session, "plan it").await;
    let events = client.events_until_run_finished().await;

    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    assert_eq!(results.len(), 1);
    assert!(results[0].2, "{}", results[0].1);
    assert!(results[0].1.contains("plan mode"), "{}", results[0].1);
    assert!(!store_file(&s, "USER.md").exists());
}

#[tokio::test]
async fn a_project_with_agents_memory_uses_it_and_bad_dirs_are_refused() {
    let s = Scenario::start(Format::OpenAi).await;
    let project = s.workspace().join("proj");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(project.join(".agents/memory")).unwrap();
    std::fs::write(
        project.join(".agents/memory/MEMORY.md"),
        "uses nix\n§\nuses nix\n§\nCI is on buildkite\n",
    )
    .unwrap();
    let sub = project.join("src");
    std::fs::create_dir(&sub).unwrap();
    let mut client = s.client().await;

    let got = memory_get(&mut client, &sub).await;
    assert_eq!(got["scope"], "project");
    assert_eq!(
        got["dir"],
        project.join(".agents/memory").display().to_string()
    );
    // Duplicates are dropped on load.
    assert_eq!(
        got["memory"]["entries"],
        json!(["uses nix", "CI is on buildkite"])
    );
    assert_eq!(got["memory"]["usageChars"], 8 + 3 + 18);
    assert_eq!(got["memory"]["inRepository"], true);
    // USER.md stays the user's.
    assert_eq!(got["user"]["scope"], "user");
    // Outside that project, its memory is not used: the workspace is a project of its own.
    let outside = memory_get(&mut client, &s.workspace()).await;
    assert_eq!(outside["scope"], "project");
    assert_eq!(outside["memory"]["entries"], json!([]));
    assert_eq!(outside["memory"].get("inRepository"), None);

    for cwd in ["relative/dir", "/nonexistent/agentd-memory"] {
        let error = client
            .request("memory/get", json!({"cwd": cwd}))
            .await
            .unwrap_err();
        assert_eq!(error.code, codes::INVALID_PARAMS as i64, "{error:?}");
    }
}
