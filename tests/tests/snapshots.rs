//! Snapshot tests (`expect-test`) of the three outputs people read, each through the real
//! binaries and the scripted mock: the frozen system prompt a session sends, the lines
//! `agentctl run` prints for a scripted run, and the ACP messages `agentctl acp` emits for one.
//! A change to any of them fails here with a diff; `UPDATE_EXPECT=1` rewrites the snapshots.
//! What differs between machines and runs (temp paths, the date, OS, ids, timings) is replaced
//! by a `$NAME` placeholder before comparing.

use std::path::Path;

use agentd_tests::acp_client::{AcpClient, initialize};
use agentd_tests::harness::{TestEnv, text};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::{Scenario, request_system_text};
use expect_test::expect;
use serde_json::{Value, json};

use crate::approvals::ASK;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `text` with what differs between machines and runs replaced: the test's temp dir, the OS
/// and architecture, the date, ids (`ses_…`, `run_…`, `apr_…`) and durations.
fn normalise(env: &TestEnv, text: &str) -> String {
    let mut text = text.to_owned();
    let dir = env.dir.path();
    if let Ok(canonical) = dir.canonicalize() {
        text = text.replace(&canonical.display().to_string(), "$TMP");
    }
    text = text.replace(&dir.display().to_string(), "$TMP");
    text = text.replace(
        &format!("os: {} ({})", std::env::consts::OS, std::env::consts::ARCH),
        "os: $OS ($ARCH)",
    );
    let rules = [
        (r"date: \d{4}-\d{2}-\d{2}", "date: $$DATE"),
        (r"\b(ses|run|apr|task)_[0-9a-f]{8,}\b", "${1}_$$ID"),
        (r"\b\d+(\.\d+)? (ms|s)\b", "$$DURATION"),
    ];
    for (pattern, replacement) in rules {
        let regex = regex::Regex::new(pattern).unwrap();
        text = regex.replace_all(&text, replacement).into_owned();
    }
    text
}

/// A workspace that is a git root (the notes walk stops there) with a project notes file, a
/// skill and a subagent definition, plus the user's own notes and a memory entry.
fn plant_fixture(env: &TestEnv) {
    let work = env.workspace();
    std::fs::create_dir_all(work.join(".git")).unwrap();
    write(
        &work.join("AGENTS.md"),
        "# Project notes\nRun `make check` before saying a change is done.\n",
    );
    write(
        &work.join(".agents/skills/release/SKILL.md"),
        "---\nname: release\ndescription: Cut a release: bump the version, tag, push\n---\nSteps.\n",
    );
    write(
        &work.join(".agents/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews a change for bugs\ntools: Read, Grep\n---\nReview.\n",
    );
    let config = env.path("config").join("agentd");
    write(&config.join("AGENTS.md"), "I prefer short answers.\n");
    // MEMORY.md is the project's (here its own `.agents/memory/`), USER.md the user's.
    write(
        &work.join(".agents/memory/MEMORY.md"),
        "the CI runs `make check` on every push\n",
    );
    write(
        &env.path("data").join("agentd/memory/USER.md"),
        "likes tabs\n",
    );
}

#[tokio::test]
async fn the_system_prompt_of_a_session() {
    let s = Scenario::start(Format::OpenAi).await;
    plant_fixture(&s.daemon.env);
    s.mock.push(Reply::text("ok"));
    let mut client = s.client().await;
    let created = client
        .request(
            "session/create",
            json!({
                "cwd": s.workspace().display().to_string(),
                "appendSystemPrompt": "Answer in English.",
            }),
        )
        .await
        .unwrap();
    let session = created["sessionId"].as_str().unwrap().to_owned();
    client.subscribe(&session, Some(0)).await;
    client.prompt(&session, "hi").await;
    client.events_until_run_finished().await;
    let system = request_system_text(Format::OpenAi, &s.mock.requests()[0]);
    expect![[r#"
        You are agentd, a capable software agent working in the user's workspace. You think, act with tools, and observe the results until the task is done.

        - Use the tools to inspect files before changing them; prefer small, precise edits (edit_file) over rewriting whole files.
        - File tools only reach the workspace directory below; paths are relative to it.
        - run_shell runs a command in the workspace with a timeout; check its exit code and output.
        - When several independent read-only lookups are needed, call those tools together in one turn.
        - A tool error is information: read it and correct the call rather than repeating it.
        - When the task is done, answer concisely with what you did and what the user should know.

        <environment>
        os: $OS ($ARCH)
        shell: /bin/sh
        workspace: $TMP/work
        date: $DATE
        </environment>

        <user_notes source="$TMP/config/agentd/AGENTS.md">
        I prefer short answers.
        </user_notes>

        <project_notes source="$TMP/work/AGENTS.md">
        # Project notes
        Run `make check` before saying a change is done.
        </project_notes>

        <memory>
        Your long-term memory, kept across sessions with the memory tool. It is a snapshot taken when this session started: what you save now shows in later sessions. Save what the user should not have to say twice: corrections, preferences, facts about their environment, project conventions.
        MEMORY.md is this project's ($TMP/work): other projects do not see it. USER.md is the user's, seen in every project.

        ## MEMORY.md (your notes, 38/2,200 chars)
        the CI runs `make check` on every push

        ## USER.md (the user's profile, 10/1,375 chars)
        likes tabs
        </memory>

        <available_skills>
        Skills are instructions for specific tasks. When a task matches a skill's description, call load_skill with its name before starting, then follow what it says.
        - release: Cut a release: bump the version, tag, push
        </available_skills>

        <available_agents>
        Subagents work on a task in their own fresh context and report back with one final message. Delegate with the task tool (prompt, agentType) when a task is self-contained or needs much searching or reading; give the subagent everything it needs in the prompt, since it sees nothing of this conversation. The default agentType is general-purpose.
        - general-purpose: General-purpose agent for multi-step tasks: researching, searching code, making changes. Use it when a task needs its own context.
        - explore: Read-only agent that explores a codebase fast: finds files, searches code, reads and answers questions about it. It cannot change anything.
        - reviewer: Reviews a change for bugs
        </available_agents>

        <appended_instructions>
        Answer in English.
        </appended_instructions>"#]]
    .assert_eq(&normalise(&s.daemon.env, &system));
}

/// `agentctl run` with approvals asked: its stdout and stderr, each normalised.
#[tokio::test]
async fn what_agentctl_run_prints() {
    let mock = MockLlm::start().await;
    mock.push(
        Reply::tool_call(
            "c1",
            "write_file",
            json!({"path": "notes.txt", "content": "milk\n"}),
        )
        .with_text("I will write the note first.")
        .usage(100, 10, 0),
    );
    mock.push(Reply::tool_call("c2", "read_file", json!({"path": "notes.txt"})).usage(120, 8, 100));
    mock.push(
        Reply::tool_call("c3", "run_shell", json!({"command": "rm -rf build"})).usage(140, 9, 120),
    );
    mock.push(Reply::text("The note says milk; I did not clean the build.").usage(160, 12, 140));
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "sk-test")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .config(ASK);
    std::fs::create_dir_all(env.workspace().join(".git")).unwrap();
    let output = env
        .run_agentctl(&["run", "--approve", "edits", "note it, then clean"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let printed = format!(
        "--- stdout\n{}--- stderr\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    expect![[r#"
        --- stdout
        I will write the note first.
        The note says milk; I did not clean the build.
        --- stderr
        approval apr_$ID: allowed once write_file notes.txt (--approve edits)
        [tool] write_file: notes.txt
        [tool] write_file done ($DURATION)
        [tool] read_file: notes.txt
        [tool] read_file done ($DURATION)
        approval apr_$ID: denied run_shell rm -rf build: --approve edits allows only write_file and edit_file
        [tool] run_shell failed ($DURATION): denied by the client's approval policy (policy:agentctl), n…
        tokens 520 in (360 cached) · 39 out · 4 steps · $DURATION · context 0% of 128k
        session: ses_$ID
    "#]]
    .assert_eq(&normalise(&env, &printed));
}

/// The ACP messages of one prompt: updates, the permission request (denied) and the answer,
/// one JSON line each, consecutive message chunks joined (how a reply is cut into deltas is
/// the provider's, not the translation's).
#[tokio::test]
async fn what_agentctl_acp_emits() {
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    std::fs::create_dir_all(s.workspace().join(".git")).unwrap();
    std::fs::write(s.workspace().join("a.txt"), "alpha\n").unwrap();
    s.mock.push(
        Reply::tool_call("c1", "read_file", json!({"path": "a.txt"})).with_text("Reading a.txt."),
    );
    s.mock.push(Reply::tool_call(
        "c2",
        "run_shell",
        json!({"command": "rm a.txt"}),
    ));
    s.mock.push(Reply::text("a.txt says alpha; it stays."));
    let mut editor = AcpClient::start(&s.daemon.env).await;
    initialize(&mut editor).await;
    let created = editor
        .request(
            "session/new",
            json!({"cwd": s.workspace().display().to_string(), "mcpServers": []}),
        )
        .await
        .unwrap();
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let prompt = editor
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "read it, then remove it"}]}),
        )
        .await;
    let (mut seen, key, _) = editor.until_permission().await;
    editor.choose(key, "deny").await;
    seen.extend(
        editor
            .until(|m| m["type"] == "response" && m["id"] == prompt)
            .await,
    );
    // The answers to `initialize` and `session/new` are kept in the stream too: not this run's.
    seen.retain(|message| message["type"] != "response" || message["id"] == prompt);
    // The command list goes out beside the session's answer, in no fixed place among this
    // run's updates; `commands::acp_receives_the_command_list_…` checks it.
    seen.retain(|message| {
        message["params"]["update"]["sessionUpdate"] != "available_commands_update"
    });
    let lines: Vec<String> = joined_chunks(seen)
        .into_iter()
        .map(|mut message| {
            // The order of an object's keys means nothing in JSON: sorted, a serializer's
            // change of order is no change here.
            message.sort_all_objects();
            serde_json::to_string(&message).unwrap()
        })
        .collect();
    expect![[r#"
        {"params":{"sessionId":"ses_$ID","update":{"content":{"text":"Reading a.txt.","type":"text"},"sessionUpdate":"agent_message_chunk"}},"type":"update"}
        {"params":{"sessionId":"ses_$ID","update":{"kind":"read","locations":[{"path":"$TMP/work/a.txt"}],"rawInput":{"path":"a.txt"},"sessionUpdate":"tool_call","title":"read_file: a.txt","toolCallId":"c1"}},"type":"update"}
        {"params":{"sessionId":"ses_$ID","update":{"sessionUpdate":"usage_update","size":128000,"used":15}},"type":"update"}
        {"params":{"sessionId":"ses_$ID","update":{"sessionUpdate":"tool_call_update","status":"in_progress","title":"read_file: a.txt","toolCallId":"c1"}},"type":"update"}
        {"params":{"sessionId":"ses_$ID","update":{"content":[{"content":{"text":"     1\talpha\n","type":"text"},"type":"content"}],"rawOutput":{"output":"     1\talpha\n"},"sessionUpdate":"tool_call_update","status":"completed","toolCallId":"c1"}},"type":"update"}
        {"params":{"sessionId":"ses_$ID","update":{"kind":"execute","rawInput":{"command":"rm a.txt"},"sessionUpdate":"tool_call","title":"run_shell: rm a.txt","toolCallId":"c2"}},"type":"update"}
        {"params":{"sessionId":"ses_$ID","update":{"sessionUpdate":"usage_update","size":128000,"used":15}},"type":"update"}
        {"key":1,"params":{"options":[{"kind":"allow_once","name":"Allow once","optionId":"allowOnce"},{"kind":"allow_always","name":"Allow for this session","optionId":"allowSession"},{"kind":"allow_always","name":"Always allow (adds a rule)","optionId":"allowAlways"},{"kind":"reject_once","name":"Reject","optionId":"deny"},{"kind":"reject_once","name":"Reject and stop the run","optionId":"denyAndCancel"},{"kind":"reject_always","name":"Always reject (adds a rule)","optionId":"denyAlways"}],"sessionId":"ses_$ID","toolCall":{"content":[],"kind":"execute","locations":[],"rawInput":{"command":"rm a.txt"},"title":"run_shell: rm a.txt","toolCallId":"c2"}},"type":"permission"}
        {"params":{"sessionId":"ses_$ID","update":{"content":[{"content":{"text":"denied by the user (client:acp:acp-test-client); do not retry the same call, ask the user or take another approach","type":"text"},"type":"content"}],"rawOutput":{"output":"denied by the user (client:acp:acp-test-client); do not retry the same call, ask the user or take another approach"},"sessionUpdate":"tool_call_update","status":"failed","toolCallId":"c2"}},"type":"update"}
        {"params":{"sessionId":"ses_$ID","update":{"content":{"text":"a.txt says alpha; it stays.","type":"text"},"sessionUpdate":"agent_message_chunk"}},"type":"update"}
        {"params":{"sessionId":"ses_$ID","update":{"sessionUpdate":"usage_update","size":128000,"used":15}},"type":"update"}
        {"id":3,"result":{"stopReason":"end_turn"},"type":"response"}
    "#]]
    .assert_eq(&normalise(&s.daemon.env, &(lines.join("\n") + "\n")));
}

/// `messages` with each run of `agent_message_chunk` updates of text merged into the first.
fn joined_chunks(messages: Vec<Value>) -> Vec<Value> {
    let is_chunk = |message: &Value| {
        message["type"] == "update"
            && message["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            && message["params"]["update"]["content"]["type"] == "text"
    };
    let mut joined: Vec<Value> = Vec::new();
    for message in messages {
        if is_chunk(&message)
            && let Some(last) = joined.last_mut().filter(|last| is_chunk(last))
        {
            let more = message["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let text = &mut last["params"]["update"]["content"]["text"];
            *text = Value::String(format!("{}{more}", text.as_str().unwrap_or_default()));
            continue;
        }
        joined.push(message);
    }
    joined
}
