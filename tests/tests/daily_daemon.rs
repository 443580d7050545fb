//! The daemon side of the daily-driver CLI (issue 13): `session/update`, model and key
//! errors at session creation, what `daemon/status` tells of providers and the environment,
//! the user's own notes file, `appendSystemPrompt` and a prompt's `maxSteps`.

use agentd_tests::harness::{Daemon, TestEnv};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::{Scenario, config_toml, create_session};
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

/// A second provider `other` on the same mock, `mock` staying the default.
fn two_providers(mock: &MockLlm) -> String {
    format!(
        "default_provider = \"mock\"\n\
         [providers.other]\n\
         kind = \"openai\"\n\
         base_url = \"{}\"\n\
         api_key = \"other-key\"\n\
         model = \"other-model\"\n\
         [providers.keyless]\n\
         kind = \"anthropic\"\n\
         api_key_env = \"AGENTD_TEST_UNSET_KEY\"\n\
         model = \"m\"\n",
        mock.openai_base_url()
    )
}

async fn start_two_providers() -> (Daemon, MockLlm) {
    let mock = MockLlm::start().await;
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, &two_providers(&mock)));
    (Daemon::start_in(env).await, mock)
}

/// The text of the system prompt of a recorded OpenAI request.
fn system_prompt(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn session_update_changes_mode_model_and_title_from_the_next_run_and_persists() {
    let (mut daemon, mock) = start_two_providers().await;
    let mut client = daemon.client().await;
    let session_id = create_session(&mut client, &daemon.env.workspace()).await;
    client.subscribe(&session_id, Some(0)).await;
    mock.push(Reply::text("first answer"));
    client
        .prompt(&session_id, "the first prompt\nof this session")
        .await;
    client.events_until_run_finished().await;

    let updated = client
        .request(
            "session/update",
            json!({"sessionId": session_id, "model": "other:big-model",
                   "permissionMode": "plan", "title": "  renamed  "}),
        )
        .await
        .expect("session/update");
    let session = &updated["session"];
    assert_eq!(session["provider"], "other", "{updated}");
    assert_eq!(session["model"], "big-model");
    assert_eq!(session["permissionMode"], "plan");
    assert_eq!(session["title"], "renamed");
    assert_eq!(session["preview"], "the first prompt of this session");
    // Recorded in the log, for every subscriber.
    let recorded = client
        .persisted_events_until(|event| matches!(event, Event::SessionUpdated { .. }))
        .await;
    let Some(Event::SessionUpdated {
        provider,
        model,
        permission_mode,
        ..
    }) = recorded.last().map(|envelope| envelope.event.clone())
    else {
        panic!("no sessionUpdated: {recorded:?}");
    };
    assert_eq!(provider.as_deref(), Some("other"));
    assert_eq!(model.as_deref(), Some("big-model"));
    assert_eq!(permission_mode.map(|m| m.as_str()), Some("plan"));

    // The next run uses the new model.
    mock.push(Reply::text("second answer"));
    client.prompt(&session_id, "again").await;
    client.events_until_run_finished().await;
    let requests = mock.requests();
    assert_eq!(requests[0].json["model"], "mock-model");
    assert_eq!(requests[1].json["model"], "big-model");

    // A restart reads the update back: listed from the file (after a crash, no index) or
    // from the index (after a clean stop), and loaded.
    drop(client);
    daemon.kill().await;
    daemon.restart().await;
    for clean_stop_before in [false, true] {
        if clean_stop_before {
            daemon.signal(libc::SIGTERM);
            daemon.wait_exit().await;
            daemon.restart().await;
        }
        let mut client = daemon.client().await;
        let listed = client
            .request("session/list", json!({}))
            .await
            .expect("list");
        let entry = &listed["sessions"][0];
        assert_eq!(entry["model"], "big-model", "{listed}");
        assert_eq!(entry["permissionMode"], "plan");
        assert_eq!(entry["title"], "renamed");
        assert_eq!(entry["preview"], "the first prompt of this session");
    }
    let mut client = daemon.client().await;
    let got = client
        .request("session/get", json!({"sessionId": session_id}))
        .await
        .expect("get");
    assert_eq!(got["session"]["model"], "big-model");
    assert_eq!(got["session"]["permissionMode"], "plan");

    // An empty title removes it; nothing given changes nothing.
    let cleared = client
        .request(
            "session/update",
            json!({"sessionId": session_id, "title": ""}),
        )
        .await
        .expect("update");
    assert!(cleared["session"].get("title").is_none(), "{cleared}");
    let same = client
        .request("session/update", json!({"sessionId": session_id}))
        .await
        .expect("update");
    assert_eq!(same["session"]["model"], "big-model");
}

#[tokio::test]
async fn an_unknown_provider_prefix_or_an_unset_key_variable_is_refused_clearly() {
    let (daemon, _mock) = start_two_providers().await;
    let mut client = daemon.client().await;
    let cwd = daemon.env.workspace().display().to_string();
    let error = client
        .request(
            "session/create",
            json!({"cwd": cwd, "model": "opnai:gpt-5"}),
        )
        .await
        .expect_err("unknown prefix");
    assert_eq!(error.code, i64::from(protocol::error::CONFIG_ERROR));
    assert!(
        error.message.contains("unknown provider \"opnai\"")
            && error.message.contains("keyless, mock, other"),
        "{}",
        error.message
    );
    let error = client
        .request("session/create", json!({"cwd": cwd, "model": "keyless"}))
        .await
        .expect_err("unset key variable");
    assert!(
        error.message.contains("AGENTD_TEST_UNSET_KEY") && error.message.contains("not set"),
        "{}",
        error.message
    );
    // The same checks guard session/update, which then changes nothing.
    let session_id = create_session(&mut client, &daemon.env.workspace()).await;
    for model in ["opnai:gpt-5", "keyless:m"] {
        let error = client
            .request(
                "session/update",
                json!({"sessionId": session_id, "model": model}),
            )
            .await
            .expect_err("refused");
        assert_eq!(
            error.code,
            i64::from(protocol::error::CONFIG_ERROR),
            "{model}"
        );
    }
    let got = client
        .request("session/get", json!({"sessionId": session_id}))
        .await
        .expect("get");
    assert_eq!(got["session"]["model"], "mock-model");
}

#[tokio::test]
async fn daemon_status_shows_providers_the_config_and_a_hash_of_the_environment_never_keys() {
    let (daemon, mock) = start_two_providers().await;
    let mut client = daemon.client().await;
    let status = client
        .request("daemon/status", json!({}))
        .await
        .expect("status");
    assert_eq!(status["configLoaded"], true, "{status}");
    assert_eq!(status["defaultProvider"], "mock");
    let providers = status["providers"].as_array().expect("providers");
    let names: Vec<&str> = providers
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["keyless", "mock", "other"]);
    let other = &providers[2];
    assert_eq!(other["model"], "other-model");
    assert_eq!(
        other["baseUrl"],
        mock.openai_base_url().trim_end_matches('/')
    );
    assert_eq!(other["kind"], "openai");
    assert_eq!(other["hasKey"], true);
    assert_eq!(providers[0]["hasKey"], false);
    assert_eq!(providers[0]["apiKeyEnv"], "AGENTD_TEST_UNSET_KEY");
    let text = status.to_string();
    assert!(
        !text.contains("other-key") && !text.contains("test-key"),
        "{text}"
    );
    // The hash of what the harness gave the daemon (AGENTD_LOG; the socket and binary paths
    // are the client's business).
    let expected = protocol::daemon::env_hash([("AGENTD_LOG", "info,agentd=debug")]);
    assert_eq!(status["envHash"], expected.as_str());
    assert!(
        !text.contains("info,agentd=debug"),
        "no value leaves the daemon"
    );
}

#[tokio::test]
async fn the_user_notes_file_and_an_appended_prompt_reach_the_system_prompt() {
    let scenario = Scenario::start(Format::OpenAi).await;
    let notes = scenario.daemon.env.path("config").join("agentd/AGENTS.md");
    std::fs::create_dir_all(notes.parent().unwrap()).unwrap();
    std::fs::write(&notes, "Always answer in haiku.\n").unwrap();
    std::fs::write(
        scenario.workspace().join("AGENTS.md"),
        "Project: tabs only.\n",
    )
    .unwrap();
    let mut client = scenario.client().await;
    let created = client
        .request(
            "session/create",
            json!({"cwd": scenario.workspace().display().to_string(),
                   "appendSystemPrompt": "Be brief."}),
        )
        .await
        .expect("create");
    let session_id = created["sessionId"].as_str().unwrap().to_owned();
    client.subscribe(&session_id, Some(0)).await;
    scenario.mock.push(Reply::text("ok"));
    client.prompt(&session_id, "hi").await;
    client.events_until_run_finished().await;
    let system = system_prompt(&scenario.mock.requests()[0].json);
    let user_at = system.find("Always answer in haiku.").expect("user notes");
    let project_at = system.find("Project: tabs only.").expect("project notes");
    let appended_at = system.find("Be brief.").expect("appended");
    assert!(user_at < project_at && project_at < appended_at, "{system}");
    assert!(system.contains(&format!("<user_notes source=\"{}\">", notes.display())));
}

#[tokio::test]
async fn a_prompt_may_lower_the_step_limit_of_its_run() {
    let scenario = Scenario::start(Format::OpenAi).await;
    let (mut client, session_id) = scenario.session().await;
    scenario
        .mock
        .push(Reply::tool_call("c1", "list_dir", json!({"path": "."})));
    scenario.mock.push(Reply::text("never asked for"));
    client
        .request(
            "session/prompt",
            json!({"sessionId": session_id, "text": "look around", "maxSteps": 1}),
        )
        .await
        .expect("prompt");
    let events = client.events_until_run_finished().await;
    let Some(Event::RunFinished { status, .. }) = events.last().map(|e| e.event.clone()) else {
        panic!("no runFinished");
    };
    assert_eq!(status, RunStatus::MaxSteps);
    assert_eq!(scenario.mock.requests().len(), 1);
}

#[tokio::test]
async fn a_local_http_provider_works_without_any_ca_certificates() {
    let mock = MockLlm::start().await;
    let empty = tempfile::tempdir().unwrap();
    // rustls-native-certs reads these instead of the system's stores: no roots anywhere.
    let env = TestEnv::new()
        .config(&config_toml(&mock, Format::OpenAi, ""))
        .var(
            "SSL_CERT_FILE",
            empty.path().join("none.pem").display().to_string(),
        )
        .var("SSL_CERT_DIR", empty.path().display().to_string());
    let daemon = Daemon::start_in(env).await;
    let mut client = daemon.client().await;
    let session_id = create_session(&mut client, &daemon.env.workspace()).await;
    client.subscribe(&session_id, Some(0)).await;
    mock.push(Reply::text("served over plain http"));
    client.prompt(&session_id, "hi").await;
    let events = client.events_until_run_finished().await;
    let Some(Event::RunFinished { status, error, .. }) = events.last().map(|e| e.event.clone())
    else {
        panic!("no runFinished");
    };
    assert_eq!(status, RunStatus::Completed, "{error:?}");
}

#[tokio::test]
async fn a_run_going_keeps_its_model_and_the_next_run_takes_the_update() {
    let mock = MockLlm::start().await;
    let extra = format!(
        "{}[permissions]\ndefault_mode = \"default\"\n",
        two_providers(&mock)
    );
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, &extra));
    let daemon = Daemon::start_in(env).await;
    let mut client = agentd_tests::harness::Client::connect_raw(daemon.socket())
        .await
        .unwrap();
    client.initialize_as("test", true).await;
    let session_id = create_session(&mut client, &daemon.env.workspace()).await;
    client.subscribe(&session_id, Some(0)).await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "touch x"}),
    ));
    mock.push(Reply::text("done"));
    client.prompt(&session_id, "make x").await;
    // The run waits for a person: change the model meanwhile.
    let asked = client
        .persisted_events_until(|event| matches!(event, Event::ApprovalRequested { .. }))
        .await;
    let Some(Event::ApprovalRequested { approval, .. }) = asked.last().map(|e| e.event.clone())
    else {
        panic!("no approval");
    };
    client
        .request(
            "session/update",
            json!({"sessionId": session_id, "model": "other:next-model"}),
        )
        .await
        .expect("update during a run");
    client
        .request(
            "approval/respond",
            json!({"approvalId": approval.approval_id, "decision": "allowOnce"}),
        )
        .await
        .expect("respond");
    client.events_until_run_finished().await;
    mock.push(Reply::text("next"));
    client.prompt(&session_id, "again").await;
    client.events_until_run_finished().await;
    let models: Vec<Value> = mock
        .requests()
        .iter()
        .map(|r| r.json["model"].clone())
        .collect();
    assert_eq!(
        models,
        [
            json!("mock-model"),
            json!("mock-model"),
            json!("next-model")
        ]
    );
}
