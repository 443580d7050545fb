//! Skills and the todo list end to end: discovery from the workspace up to the git root and the
//! user's skills dir, the catalogue in the frozen system prompt, `load_skill` (never cut by the
//! output cap), `skills/list` and `agentctl skills list`; `todo_write` and its `todoUpdated`
//! events, and how `agentctl run` shows them.

use std::path::Path;

use agentd_tests::harness::{TestEnv, text};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::{Event, RunStatus};
use protocol::skills::{SkillSource, SkillsListResult};
use protocol::todo::{TodoItem, TodoStatus};
use serde_json::json;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill_md(name: Option<&str>, description: Option<&str>, body: &str) -> String {
    let mut text = String::from("---\n");
    if let Some(name) = name {
        text.push_str(&format!("name: {name}\n"));
    }
    if let Some(description) = description {
        text.push_str(&format!("description: {description}\n"));
    }
    text.push_str("---\n");
    text.push_str(body);
    text
}

/// Skills of a test environment: the workspace is a git root with a nested `app/` dir (the
/// session's cwd), skills at both levels and in the user's dir, one collision and one without
/// a description. Returns the cwd.
fn plant_skills(env: &TestEnv) -> std::path::PathBuf {
    let root = env.workspace();
    let cwd = root.join("app");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    write(
        &cwd.join(".claude/skills/pdf/SKILL.md"),
        &skill_md(
            None,
            Some("Fill PDF forms; use it for any PDF form"),
            "# PDF forms\nRun scripts/fill.py with the form.\n",
        ),
    );
    write(&cwd.join(".claude/skills/pdf/scripts/fill.py"), "print()\n");
    write(&cwd.join(".claude/skills/pdf/reference.md"), "ref\n");
    write(
        &root.join("skills/review/SKILL.md"),
        &skill_md(Some("review"), Some("Review a change"), "Review body\n"),
    );
    write(
        &root.join(".agents/skills/nodesc/SKILL.md"),
        &skill_md(Some("nodesc"), None, "never offered\n"),
    );
    let user = env.path("config").join("agentd/skills");
    write(
        &user.join("commit/SKILL.md"),
        &skill_md(None, Some("Write commit messages"), "Commit body\n"),
    );
    write(
        &user.join("pdf/SKILL.md"),
        &skill_md(None, Some("the user's pdf"), "shadowed\n"),
    );
    cwd.canonicalize().unwrap()
}

#[tokio::test]
async fn skills_list_shows_nearer_first_with_the_skipped_ones_as_warnings() {
    let s = Scenario::start(Format::OpenAi).await;
    let cwd = plant_skills(&s.daemon.env);
    let mut client = s.client().await;
    let result: SkillsListResult = agentd_tests::harness::decode(
        client
            .request("skills/list", json!({"cwd": cwd.display().to_string()}))
            .await
            .unwrap(),
    );
    let found: Vec<(&str, &str, SkillSource)> = result
        .skills
        .iter()
        .map(|skill| {
            (
                skill.name.as_str(),
                skill.description.as_str(),
                skill.source,
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("commit", "Write commit messages", SkillSource::User),
            (
                "pdf",
                "Fill PDF forms; use it for any PDF form",
                SkillSource::Project
            ),
            ("review", "Review a change", SkillSource::Project),
        ]
    );
    assert_eq!(
        result.skills[1].path,
        cwd.join(".claude/skills/pdf/SKILL.md")
            .display()
            .to_string()
    );
    let warnings = result.warnings.join("\n");
    assert_eq!(result.warnings.len(), 2, "{warnings}");
    assert!(
        warnings.contains("nodesc") && warnings.contains("no description"),
        "{warnings}"
    );
    assert!(
        warnings.contains("skill `pdf`") && warnings.contains("nearer"),
        "{warnings}"
    );

    let err = client
        .request("skills/list", json!({"cwd": "relative/dir"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, i64::from(protocol::error::INVALID_PARAMS));
    assert!(err.message.contains("absolute"), "{}", err.message);
}

both_formats!(the_catalogue_is_in_the_prompt_and_load_skill_returns_the_body_and_files);
async fn the_catalogue_is_in_the_prompt_and_load_skill_returns_the_body_and_files(format: Format) {
    let s = Scenario::start(format).await;
    let cwd = plant_skills(&s.daemon.env);
    s.mock
        .push(Reply::tool_call("c1", "load_skill", json!({"name": "pdf"})));
    s.mock.push(Reply::tool_call(
        "c2",
        "load_skill",
        json!({"name": "nope"}),
    ));
    s.mock.push(Reply::text("done"));
    let mut client = s.client().await;
    // Plan mode: loading a skill is read-only, it runs without asking.
    let session = client
        .request(
            "session/create",
            json!({"cwd": cwd.display().to_string(), "permissionMode": "plan"}),
        )
        .await
        .unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    client.subscribe(&session, Some(0)).await;
    client.prompt(&session, "fill the form").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);

    let requests = s.mock.requests();
    let system = request_system_text(format, &requests[0]);
    assert!(
        system.contains(
            "<available_skills>\n\
             Skills are instructions for specific tasks. When a task matches a skill's \
             description, call load_skill with its name before starting, then follow what it says.\n\
             - commit: Write commit messages\n\
             - pdf: Fill PDF forms; use it for any PDF form\n\
             - review: Review a change\n\
             </available_skills>"
        ),
        "{system}"
    );
    assert!(
        !system.contains("Run scripts/fill.py"),
        "no bodies in the prompt: {system}"
    );
    assert!(!system.contains("nodesc"), "{system}");
    assert_eq!(request_system_text(format, &requests[2]), system, "frozen");

    let results = tool_results(&events);
    assert_eq!(
        results[0],
        (
            "c1".to_owned(),
            "[skill] pdf\n\n# PDF forms\nRun scripts/fill.py with the form.\n\n\
             Other files of this skill (in .claude/skills/pdf); read them when the instructions need them:\n\
             - .claude/skills/pdf/reference.md\n\
             - .claude/skills/pdf/scripts/fill.py\n"
                .to_owned(),
            false
        )
    );
    assert_eq!(
        results[1],
        (
            "c2".to_owned(),
            "no skill named `nope`; available skills: commit, pdf, review".to_owned(),
            true
        )
    );
    let seen = request_tool_results(format, &requests[2]);
    assert!(seen[0].1.starts_with("[skill] pdf\n"), "{seen:?}");
}

#[tokio::test]
async fn a_skill_is_never_cut_by_the_output_cap() {
    let s = Scenario::start_with(Format::Anthropic, "tool_output_max_chars = 2000").await;
    let body: String = (0..600).map(|i| format!("step {i:04}\n")).collect();
    write(
        &s.workspace().join("skills/long/SKILL.md"),
        &skill_md(None, Some("A long skill"), &body),
    );
    s.mock.push(Reply::tool_calls(vec![
        ("c1", "load_skill", json!({"name": "long"}).to_string()),
        (
            "c2",
            "read_file",
            json!({"path": "skills/long/SKILL.md"}).to_string(),
        ),
    ]));
    s.mock.push(Reply::text("ok"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "go").await;
    let events = client.events_until_run_finished().await;
    // Both calls are read-only and run in parallel: their results come in either order.
    let results = tool_results(&events);
    let result_of = |id: &str| {
        results
            .iter()
            .find(|(call, _, _)| call == id)
            .map(|(_, text, _)| text.clone())
            .unwrap_or_else(|| panic!("no result for {id}: {results:?}"))
    };
    assert!(body.len() > 2 * 2000);
    assert_eq!(result_of("c1"), format!("[skill] long\n\n{body}"));
    let read = result_of("c2");
    assert!(
        read.chars().count() < 2200,
        "the cap applies to other tools: {} chars",
        read.chars().count()
    );
    let seen = request_tool_results(s.format, &s.mock.requests()[1]);
    assert_eq!(seen[0].1, format!("[skill] long\n\n{body}"));
}

fn todo_items(events: &[Envelope]) -> Vec<Vec<TodoItem>> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::TodoUpdated { items, .. } => Some(items.clone()),
            _ => None,
        })
        .collect()
}

both_formats!(todo_write_announces_the_list_and_refuses_two_items_in_progress);
async fn todo_write_announces_the_list_and_refuses_two_items_in_progress(format: Format) {
    let s = Scenario::start(format).await;
    s.mock.push(Reply::tool_call(
        "t1",
        "todo_write",
        json!({"items": [
            {"content": "read the code", "status": "completed"},
            {"content": "write the test", "status": "in_progress"},
            {"content": "fix it", "status": "pending"},
        ]}),
    ));
    s.mock.push(Reply::tool_call(
        "t2",
        "todo_write",
        json!({"items": [
            {"content": "write the test", "status": "in_progress"},
            {"content": "fix it", "status": "in_progress"},
        ]}),
    ));
    s.mock.push(Reply::text("planned"));
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

    let item = |content: &str, status| TodoItem {
        content: content.to_owned(),
        status,
    };
    assert_eq!(
        todo_items(&events),
        [vec![
            item("read the code", TodoStatus::Completed),
            item("write the test", TodoStatus::InProgress),
            item("fix it", TodoStatus::Pending),
        ]]
    );
    // Announced while the call runs, persisted like every event.
    let kinds = kinds(&events);
    let at = kinds.iter().position(|kind| kind == "todoUpdated").unwrap();
    assert_eq!(
        &kinds[at - 1..=at + 1],
        ["toolStarted", "todoUpdated", "toolCompleted"]
    );
    let results = tool_results(&events);
    assert_eq!(
        results[0],
        (
            "t1".to_owned(),
            "todo list updated:\n[x] read the code\n[>] write the test\n[ ] fix it".to_owned(),
            false
        )
    );
    assert!(results[1].2, "{:?}", results[1]);
    assert!(
        results[1]
            .1
            .starts_with("at most one item may be in_progress, found 2"),
        "{}",
        results[1].1
    );

    // A late subscriber replays the list from the log.
    let mut late = s.client().await;
    late.subscribe(&session, Some(0)).await;
    let last = events.last().unwrap().seq;
    let replayed = late.events_through_seq(last).await;
    assert_eq!(todo_items(&replayed), todo_items(&events));
}

/// An `agentctl` environment whose daemon talks to `mock` (OpenAI format) without asking.
fn cli_env(mock: &MockLlm) -> TestEnv {
    TestEnv::new()
        .var("OPENAI_API_KEY", "sk-test")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .config("[permissions]\ndefault_mode = \"bypass\"\n")
}

#[tokio::test]
async fn agentctl_skills_list_prints_a_table_the_warnings_and_json() {
    let mock = MockLlm::start().await;
    let env = cli_env(&mock);
    let cwd = plant_skills(&env);
    let cwd_arg = cwd.display().to_string();
    let output = env
        .run_agentctl(&["skills", "list", "--cwd", &cwd_arg])
        .await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let names: Vec<&str> = stdout
        .lines()
        .filter(|line| !line.starts_with(' '))
        .collect();
    assert_eq!(
        names,
        [
            "NAME    SOURCE   DESCRIPTION",
            "commit  user     Write commit messages",
            "pdf     project  Fill PDF forms; use it for any PDF form",
            "review  project  Review a change",
        ],
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{}/.claude/skills/pdf/SKILL.md", cwd_arg)),
        "{stdout}"
    );
    assert_eq!(stderr.matches("warning: ").count(), 2, "{stderr}");

    let output = env
        .run_agentctl(&["skills", "list", "--json", "--cwd", &cwd_arg])
        .await;
    assert_eq!(output.status.code(), Some(0));
    let result: SkillsListResult = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result.skills.len(), 3);
    assert_eq!(result.warnings.len(), 2);
}

#[tokio::test]
async fn agentctl_run_prints_the_todo_list_on_stderr() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "t1",
        "todo_write",
        json!({"items": [
            {"content": "read the code", "status": "completed"},
            {"content": "write the test", "status": "in_progress"},
        ]}),
    ));
    mock.push(Reply::text("Planned."));
    let env = cli_env(&mock);
    let output = env.run_agentctl(&["run", "plan it"]).await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("todo (1/2 done):\n  [x] read the code\n  [>] write the test\n"),
        "{stderr}"
    );
    assert!(!stdout.contains("[x]"), "{stdout}");
}
