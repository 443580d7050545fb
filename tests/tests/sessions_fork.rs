//! `session/fork` end to end: a fork at a seq holds the source's history and settings of that
//! point, leaves the source untouched and sends the source's request bytes (the prompt cache
//! prefix); points inside a run, past the end or of unknown sessions are refused; `agentctl
//! sessions fork` and `list --tree`; and the `task` tool's fork mode.

use agentd_tests::mock_llm::{Format, RecordedRequest, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::Event;
use serde_json::{Value, json};

fn session_file(s: &Scenario, id: &str) -> std::path::PathBuf {
    s.daemon
        .env
        .path("state")
        .join("agentd/sessions")
        .join(format!("{id}.jsonl"))
}

async fn history(client: &mut agentd_tests::harness::Client, id: &str) -> Vec<Value> {
    let got = client
        .request(
            "session/get",
            json!({"sessionId": id, "includeHistory": true}),
        )
        .await
        .expect("session/get");
    got["history"].as_array().cloned().unwrap_or_default()
}

fn json_of(events: &[Envelope]) -> Vec<Value> {
    events
        .iter()
        .map(|envelope| serde_json::to_value(&envelope.event).unwrap())
        .collect()
}

both_formats!(a_fork_at_a_seq_holds_that_point_and_sends_the_sources_request_bytes);
async fn a_fork_at_a_seq_holds_that_point_and_sends_the_sources_request_bytes(format: Format) {
    let s = Scenario::start(format).await;
    std::fs::write(s.workspace().join("a.txt"), "alpha\n").unwrap();
    let (mut client, source) = s.session().await;
    client
        .request(
            "session/update",
            json!({"sessionId": source, "title": "first title", "permissionMode": "acceptEdits"}),
        )
        .await
        .expect("session/update");
    s.mock
        .push(Reply::tool_call("c1", "read_file", json!({"path": "a.txt"})).with_text("reading"));
    s.mock.push(Reply::text("it says alpha"));
    client.prompt(&source, "read a.txt").await;
    let first_run = client.events_until_run_finished().await;
    let fork_point = first_run.last().unwrap().seq;

    // After the point: a new title, and a second run whose request the fork must repeat.
    client
        .request(
            "session/update",
            json!({"sessionId": source, "title": "second title"}),
        )
        .await
        .expect("session/update");
    s.mock.push(Reply::text("the source's second answer"));
    client.prompt(&source, "and then?").await;
    client.events_until_run_finished().await;
    let source_requests = s.mock.requests();
    assert_eq!(source_requests.len(), 3);
    let source_history = history(&mut client, &source).await;
    assert_eq!(source_history.len(), 6, "{source_history:#?}");
    let file_before = std::fs::read(session_file(&s, &source)).unwrap();

    let forked = client
        .request(
            "session/fork",
            json!({"sessionId": source, "atSeq": fork_point}),
        )
        .await
        .expect("session/fork");
    let fork = forked["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(fork, source);
    let info = &forked["session"];
    assert_eq!(info["sessionId"], json!(fork));
    assert_eq!(
        info["forkedFrom"],
        json!({"sessionId": source, "seq": fork_point})
    );
    // The settings of the point: the title then, the mode, the model.
    assert_eq!(info["title"], json!("first title"));
    assert_eq!(info["permissionMode"], json!("acceptEdits"));
    assert_eq!(info["model"], json!("mock-model"));
    assert_eq!(info["status"], json!("idle"));
    assert_eq!(info["lastSeq"], json!(fork_point + 1));
    assert_eq!(info["usage"]["inputTokens"], json!(0), "{info}");
    assert_eq!(info["preview"], json!("read a.txt"));

    // The source is untouched: its file byte for byte, its history.
    assert_eq!(
        std::fs::read(session_file(&s, &source)).unwrap(),
        file_before
    );
    assert_eq!(history(&mut client, &source).await, source_history);

    // The fork's history is the source's up to the point; its log replays the source's events
    // up to it, then its own `sessionCreated`.
    let mut fork_client = s.client().await;
    assert_eq!(history(&mut fork_client, &fork).await, source_history[..4]);
    fork_client.subscribe(&fork, Some(0)).await;
    let replayed = fork_client.events_through_seq(fork_point + 1).await;
    assert_eq!(
        json_of(&replayed[..replayed.len() - 1]),
        json_of(&first_run),
        "the fork replays the source's events up to the point"
    );
    let created = replayed.last().unwrap();
    assert_eq!(created.seq, fork_point + 1);
    assert!(
        matches!(&created.event, Event::SessionCreated { forked_from: Some(point), .. }
            if point.session_id == source && point.seq == fork_point),
        "{created:?}"
    );
    // The listing knows it, with its source.
    let listed = client
        .request("session/list", json!({}))
        .await
        .expect("session/list");
    let listed_fork = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|session| session["sessionId"] == json!(fork))
        .cloned()
        .expect("the fork is listed");
    assert_eq!(listed_fork["forkedFrom"]["sessionId"], json!(source));

    // Its first request is the source's at that point, byte for byte (the same system prompt,
    // tools, messages and prompt cache key): the provider's cache prefix hits.
    s.mock.push(Reply::text("the fork's own answer"));
    fork_client.prompt(&fork, "and then?").await;
    let fork_run = fork_client.events_until_run_finished().await;
    assert_eq!(run_status(&fork_run), protocol::event::RunStatus::Completed);
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[3].body, source_requests[2].body);
    // Its usage is its own, from its first call on.
    let after = fork_client
        .request("session/get", json!({"sessionId": fork}))
        .await
        .expect("session/get");
    let source_info = client
        .request("session/get", json!({"sessionId": source}))
        .await
        .expect("session/get");
    let tokens = |info: &Value| info["session"]["usage"]["inputTokens"].as_u64().unwrap();
    assert!(tokens(&after) > 0 && tokens(&after) < tokens(&source_info));

    // A fork of the fork names its direct source; the default point is the last seq.
    let again = fork_client
        .request("session/fork", json!({"sessionId": fork, "title": "third"}))
        .await
        .expect("session/fork of a fork");
    let last = fork_run.last().unwrap().seq;
    assert_eq!(
        again["session"]["forkedFrom"],
        json!({"sessionId": fork, "seq": last})
    );
    assert_eq!(again["session"]["title"], json!("third"));
    let again_id = again["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(
        history(&mut fork_client, &again_id).await,
        history(&mut fork_client, &fork).await
    );
}

#[tokio::test]
async fn a_point_inside_a_run_or_past_the_end_is_refused_saying_which_seqs_to_use() {
    let s = Scenario::start(Format::OpenAi).await;
    let (mut client, source) = s.session().await;
    s.mock.push(Reply::held("thinking", " done"));
    client.prompt(&source, "take your time").await;
    let started = client
        .persisted_events_until(|event| matches!(event, Event::RunStarted { .. }))
        .await;
    let run_start = started.last().unwrap().seq;
    s.mock.wait_for_requests(1).await;

    // Now (the default) and the run's start are inside the running run: a conflict.
    for params in [
        json!({"sessionId": source}),
        json!({"sessionId": source, "atSeq": run_start}),
    ] {
        let err = client
            .request("session/fork", params.clone())
            .await
            .expect_err("a fork inside the running run");
        assert_eq!(err.code, i64::from(protocol::error::CONFLICT), "{params}");
        assert!(
            err.message.contains("still running")
                && err
                    .message
                    .contains(&format!("fork at seq {}", run_start - 1)),
            "{}",
            err.message
        );
    }
    // Just before it started is a point between runs.
    let before = client
        .request(
            "session/fork",
            json!({"sessionId": source, "atSeq": run_start - 1}),
        )
        .await
        .expect("a fork before the run");
    let before_id = before["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(history(&mut client, &before_id).await, Vec::<Value>::new());

    s.mock.release();
    let finished = client.events_until_run_finished().await;
    let run_end = finished.last().unwrap().seq;
    // Inside the finished run: invalid, naming its start and end.
    let err = client
        .request(
            "session/fork",
            json!({"sessionId": source, "atSeq": run_start + 1}),
        )
        .await
        .expect_err("a fork inside a finished run");
    assert_eq!(err.code, i64::from(protocol::error::INVALID_PARAMS));
    assert!(
        err.message.contains(&format!(
            "(seqs {run_start} to {run_end}): fork at seq {}, just before it started, or at seq {run_end}, its end",
            run_start - 1
        )),
        "{}",
        err.message
    );
    // Past the end.
    let err = client
        .request(
            "session/fork",
            json!({"sessionId": source, "atSeq": run_end + 5}),
        )
        .await
        .expect_err("a fork past the end");
    assert_eq!(err.code, i64::from(protocol::error::INVALID_PARAMS));
    assert!(
        err.message.contains(&format!(
            "past the end of the session's log: its last seq is {run_end}"
        )),
        "{}",
        err.message
    );
    // Its end is a point between runs.
    let at_end = client
        .request(
            "session/fork",
            json!({"sessionId": source, "atSeq": run_end}),
        )
        .await
        .expect("a fork at the run's end");
    let at_end_id = at_end["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(
        history(&mut client, &at_end_id).await,
        history(&mut client, &source).await
    );
}

#[tokio::test]
async fn forking_an_unknown_or_malformed_session_id_is_refused_like_any_method() {
    let s = Scenario::start(Format::OpenAi).await;
    let mut client = s.client().await;
    let err = client
        .request(
            "session/fork",
            json!({"sessionId": "ses_0123456789abcdef0123456789abcdef"}),
        )
        .await
        .expect_err("an unknown session");
    assert_eq!(err.code, i64::from(protocol::error::NOT_FOUND));
    assert!(err.message.contains("session not found"), "{}", err.message);
    let err = client
        .request("session/fork", json!({"sessionId": "../etc"}))
        .await
        .expect_err("a malformed id");
    assert_eq!(err.code, i64::from(protocol::error::INVALID_PARAMS));
    let listed = client
        .request("session/list", json!({}))
        .await
        .expect("session/list");
    assert_eq!(listed["sessions"], json!([]), "nothing was made");
}

#[tokio::test]
async fn agentctl_sessions_fork_prints_the_new_id_and_list_tree_shows_it_under_its_source() {
    let s = Scenario::start(Format::OpenAi).await;
    let (mut client, source) = s.session().await;
    s.mock.push(Reply::text("one"));
    client.prompt(&source, "the first prompt").await;
    let end = client.events_until_run_finished().await.last().unwrap().seq;
    let other = create_session(&mut client, &s.workspace()).await;

    let output = s
        .daemon
        .env
        .run_agentctl(&[
            "sessions",
            "fork",
            &source[..12],
            "--at",
            &end.to_string(),
            "--title",
            "the fork",
        ])
        .await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let fork = stdout.trim().to_owned();
    assert!(
        fork.starts_with("ses_") && fork != source,
        "prints the new id: {stdout:?}"
    );
    let forked_twice = s
        .daemon
        .env
        .run_agentctl(&["sessions", "fork", &fork])
        .await;
    assert!(forked_twice.status.success());
    let grandchild = String::from_utf8_lossy(&forked_twice.stdout)
        .trim()
        .to_owned();

    let listed = s
        .daemon
        .env
        .run_agentctl(&["sessions", "list", "--tree"])
        .await;
    assert!(listed.status.success());
    let table = String::from_utf8_lossy(&listed.stdout).into_owned();
    let ids: Vec<&str> = table
        .lines()
        .skip(1)
        .map(|line| line.split("  idle").next().unwrap().trim_end())
        .collect();
    // The table shows short ids (`ses_` and 8 digits).
    let short = agentctl::ids::short;
    let at = |id: &str| {
        ids.iter()
            .position(|row| row.trim_start_matches([' ', '└']) == short(id))
            .unwrap_or_else(|| panic!("{id} not listed:\n{table}"))
    };
    assert!(
        at(&source) < at(&fork) && at(&fork) < at(&grandchild),
        "{table}"
    );
    assert_eq!(ids[at(&fork)], format!("└ {}", short(&fork)), "{table}");
    assert_eq!(
        ids[at(&grandchild)],
        format!("  └ {}", short(&grandchild)),
        "{table}"
    );
    assert_eq!(ids[at(&other)], short(&other), "{table}");
    assert!(table.contains("the fork"), "{table}");

    // A point inside a run: exit 1 with the daemon's message.
    let refused = s
        .daemon
        .env
        .run_agentctl(&["sessions", "fork", &source, "--at", "3"])
        .await;
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("is inside run"), "{stderr}");
}

/// The messages of an OpenAI request after its system prompt.
fn conversation(request: &RecordedRequest) -> Vec<Value> {
    request.json["messages"]
        .as_array()
        .map(|messages| messages.iter().skip(1).cloned().collect())
        .unwrap_or_default()
}

fn tool_names(request: &RecordedRequest) -> Vec<String> {
    request.json["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_forked_subagent_starts_from_the_parents_conversation_and_system_prompt() {
    let s = Scenario::start(Format::OpenAi).await;
    let (mut client, parent) = s.session().await;
    s.mock.push(Reply::text("I see the parser bug."));
    client.prompt(&parent, "look at the bug").await;
    client.events_until_run_finished().await;

    s.mock.push(Reply::tool_call(
        "call_fork",
        "task",
        json!({"prompt": "dig into the parser", "fork": true}),
    ));
    s.mock.push(Reply::text("the parser drops the last token"));
    s.mock.push(Reply::text("done: it drops the last token"));
    client.prompt(&parent, "delegate the digging").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), protocol::event::RunStatus::Completed);
    let result = events
        .iter()
        .find_map(|envelope| match &envelope.event {
            Event::ToolCompleted {
                tool,
                output,
                is_error,
                ..
            } if tool == "task" => Some((output.clone(), *is_error)),
            _ => None,
        })
        .expect("the task's result");
    assert_eq!(
        result,
        ("the parser drops the last token".to_owned(), false)
    );

    let requests = s.mock.requests();
    assert_eq!(requests.len(), 4);
    let (delegating, child, after) = (&requests[1], &requests[2], &requests[3]);
    // The parent's system prompt, byte for byte, and its prompt cache key.
    assert_eq!(child.json["messages"][0], delegating.json["messages"][0]);
    assert_eq!(
        child.json["prompt_cache_key"],
        delegating.json["prompt_cache_key"]
    );
    // The parent's conversation up to its task call, that call answered, then the prompt.
    let parent_so_far = conversation(delegating);
    let child_messages = conversation(child);
    assert_eq!(child_messages[..parent_so_far.len()], parent_so_far[..]);
    let task_call = &conversation(after)[parent_so_far.len()];
    assert_eq!(child_messages[parent_so_far.len()], *task_call);
    let answered = &child_messages[parent_so_far.len() + 1];
    assert_eq!(answered["role"], json!("tool"));
    assert_eq!(answered["tool_call_id"], json!("call_fork"));
    assert!(
        answered["content"]
            .as_str()
            .unwrap()
            .starts_with("forked here"),
        "{answered}"
    );
    assert_eq!(
        child_messages[parent_so_far.len() + 2..],
        [json!({"role": "user", "content": "dig into the parser"})]
    );
    // The tools of any child: never task, task_*, memory or todo_write.
    let tools = tool_names(child);
    assert!(tools.contains(&"read_file".to_owned()), "{tools:?}");
    for absent in ["task", "task_list", "memory", "todo_write"] {
        assert!(!tools.iter().any(|tool| tool == absent), "{tools:?}");
    }

    // A subagent's session may be forked: the fork is a session of its own, with no parent.
    let child_id = events
        .iter()
        .find_map(|envelope| match &envelope.event {
            Event::TaskFinished { task } => task.child_session_id.clone(),
            _ => None,
        })
        .expect("the child's session");
    let forked = client
        .request("session/fork", json!({"sessionId": child_id}))
        .await
        .expect("a fork of the child");
    let info = &forked["session"];
    assert_eq!(info["forkedFrom"]["sessionId"], json!(child_id));
    assert!(info.get("parentSessionId").is_none(), "{info}");
    let fork_id = forked["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(
        history(&mut client, &fork_id).await,
        history(&mut client, &child_id).await
    );
}
