//! A run resumed after a restart keeps what it was started with, as its `runStarted` recorded
//! it: a slash command's `allowed-tools` (the resumed run is offered no more tools than before)
//! and `model`, a prompt's `maxSteps`; a recorded model that no longer resolves is a warning,
//! and the session's model runs.

use agentd_tests::harness::{Daemon, TestEnv};
use agentd_tests::mcp_scenario::request_tool_names;
use agentd_tests::mock_llm::{Format, MockLlm, RecordedRequest, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::{Event, RunStatus};
use serde_json::json;

use crate::restart_resume::{blocking_call, finished_log, kill_group, started_shell};

/// A command that narrows its run to the shell and reading, on `model`.
fn plant_guarded_command(s: &Scenario, model: &str) {
    let path = s
        .workspace()
        .canonicalize()
        .unwrap()
        .join(".agents/commands/guarded.md");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        path,
        format!(
            "---\ndescription: Shell and reading only\nmodel: {model}\nallowed-tools: Bash, Read\n---\nRun the check\n"
        ),
    )
    .unwrap();
}

/// The tools a recorded request offers, sorted.
fn offered(request: &RecordedRequest) -> Vec<String> {
    let mut tools = request_tool_names(Format::OpenAi, request);
    tools.sort();
    tools
}

/// Start `/guarded` in a new session, kill the daemon while its first tool call runs, and
/// start it again (after `before_restart`); returns the session, the run and its whole log.
async fn guarded_run_across_a_crash(
    s: &mut Scenario,
    before_restart: impl FnOnce(&Scenario),
) -> (String, String, Vec<Envelope>) {
    let (mut client, session) = s.session().await;
    let started = client
        .request(
            "session/command",
            json!({"sessionId": session, "name": "guarded", "args": ""}),
        )
        .await
        .expect("session/command");
    let run_id = started["runId"].as_str().unwrap().to_owned();
    client
        .persisted_events_until(|event| matches!(event, Event::ToolStarted { .. }))
        .await;
    let shell = started_shell(s, 1).await;
    s.daemon.kill().await;
    kill_group(shell);
    drop(client);
    before_restart(s);
    s.daemon.restart().await;
    let log = finished_log(s, &session).await;
    (session, run_id, log)
}

#[tokio::test]
async fn a_commands_run_resumed_after_a_crash_keeps_its_allowed_tools_and_its_model() {
    let mut s = Scenario::start(Format::OpenAi).await;
    plant_guarded_command(&s, "mock:command-model");
    s.mock.push(blocking_call("c_block"));
    s.mock.push(Reply::text("checked"));
    let (_, run_id, log) = guarded_run_across_a_crash(&mut s, |_| {}).await;
    assert!(
        matches!(&log.last().unwrap().event, Event::RunFinished { run_id: r, status: RunStatus::Completed, .. } if *r == run_id),
        "{log:#?}"
    );
    let recorded = log.iter().find_map(|e| match &e.event {
        Event::RunStarted { options, .. } => Some(options.clone()),
        _ => None,
    });
    let recorded = recorded.flatten().expect("runStarted records the options");
    assert_eq!(
        recorded.allowed_tools,
        Some(vec!["run_shell".to_owned(), "read_file".to_owned()])
    );
    assert_eq!(recorded.model.as_deref(), Some("mock:command-model"));

    let requests = s.mock.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    // Before the crash and after it: only the command's tools, on the command's model.
    let narrowed = ["read_file".to_owned(), "run_shell".to_owned()];
    assert_eq!(offered(&requests[0]), narrowed);
    assert_eq!(
        offered(&requests[1]),
        narrowed,
        "the resumed run was widened"
    );
    assert_eq!(requests[0].json["model"], "command-model");
    assert_eq!(requests[1].json["model"], "command-model");
}

#[tokio::test]
async fn a_run_resumed_after_a_crash_stops_at_its_prompts_max_steps() {
    let mut s = Scenario::start(Format::OpenAi).await;
    s.mock.push(blocking_call("c_block"));
    s.mock
        .push(Reply::tool_call("c_list", "list_dir", json!({"path": "."})));
    s.mock.push(Reply::text("never asked for"));
    let (mut client, session) = s.session().await;
    let started = client
        .request(
            "session/prompt",
            json!({"sessionId": session, "text": "two steps at most", "maxSteps": 2}),
        )
        .await
        .expect("session/prompt");
    let run_id = started["runId"].as_str().unwrap().to_owned();
    let shell = started_shell(&s, 1).await;
    s.daemon.kill().await;
    kill_group(shell);
    drop(client);
    s.daemon.restart().await;

    let log = finished_log(&s, &session).await;
    assert!(
        log.iter()
            .any(|e| matches!(&e.event, Event::RunResumed { run_id: r, .. } if *r == run_id)),
        "{log:#?}"
    );
    assert!(
        matches!(&log.last().unwrap().event, Event::RunFinished { run_id: r, status: RunStatus::MaxSteps, .. } if *r == run_id),
        "{log:#?}"
    );
    // Step 1 before the crash, step 2 after it, and no third.
    assert_eq!(s.mock.requests().len(), 2);
    assert_eq!(s.mock.remaining(), 1);
}

#[tokio::test]
async fn a_resumed_runs_model_gone_from_the_config_is_a_warning_and_the_narrowing_holds() {
    let mock = MockLlm::start().await;
    let other = format!(
        "default_provider = \"mock\"\n\
         [providers.other]\n\
         kind = \"openai\"\n\
         base_url = \"{}\"\n\
         api_key = \"other-key\"\n\
         model = \"other-model\"\n",
        mock.openai_base_url()
    );
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, &other));
    let mut s = Scenario {
        daemon: Daemon::start_in(env).await,
        mock,
        format: Format::OpenAi,
    };
    plant_guarded_command(&s, "other:command-model");
    s.mock.push(blocking_call("c_block"));
    s.mock.push(Reply::text("checked"));
    // While the daemon is down, the provider `other` leaves config.toml.
    let (_, run_id, log) = guarded_run_across_a_crash(&mut s, |s| {
        let path = s.daemon.env.path("config").join("agentd/config.toml");
        std::fs::write(path, config_toml(&s.mock, Format::OpenAi, "")).unwrap();
    })
    .await;
    assert!(
        matches!(&log.last().unwrap().event, Event::RunFinished { run_id: r, status: RunStatus::Completed, .. } if *r == run_id),
        "{log:#?}"
    );
    let warnings: Vec<&str> = log
        .iter()
        .filter_map(|e| match &e.event {
            Event::Warning { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        warnings.iter().any(|warning| warning
            .starts_with("the command's model other:command-model is not used")
            && warning.ends_with("the session's model runs")),
        "{warnings:?}"
    );
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(requests[0].json["model"], "command-model");
    assert_eq!(requests[1].json["model"], "mock-model");
    assert_eq!(
        offered(&requests[1]),
        ["read_file".to_owned(), "run_shell".to_owned()]
    );
}
