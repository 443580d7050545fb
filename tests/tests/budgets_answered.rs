//! Budget pauses answered like approvals: `budget/list` lists a pause while its run waits,
//! `agentctl approvals list` shows it and `agentctl approve`/`deny` answer it, and the ACP
//! bridge asks the editor with `session/request_permission`.

use agentd_tests::acp_client::{AcpClient, initialize};
use agentd_tests::harness::{Client, text};
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::budget::{BudgetDecision, BudgetKind, BudgetListResult};
use protocol::event::{Event, RunStatus};
use serde_json::json;

use crate::budgets::{resolved, script_counting_subagent, until_paused};

/// A token budget of 20: a first model call that uses 40 reaches it.
const TOKENS_20: &str = "[sessions]\nmax_tokens = 20\n";

/// Script one run that pauses at its budget (a tool call using 40 tokens), then ends with
/// `done` if it goes on.
fn push_pausing_run(s: &Scenario, call_id: &str) {
    s.mock
        .push(Reply::tool_call(call_id, "list_dir", json!({"path": "."})).usage(30, 10, 0));
    s.mock.push(Reply::text("done"));
}

async fn budget_list(client: &mut Client, params: serde_json::Value) -> BudgetListResult {
    let listed = client.request("budget/list", params).await.unwrap();
    serde_json::from_value(listed).unwrap()
}

/// `budget/list` shows the pause (daemon-wide and for its session, not for another), with
/// its session, run and request; answered, the list is empty (the refused requests and
/// what they suggest are `protocol_errors`').
#[tokio::test]
async fn budget_list_shows_a_pause_until_it_is_answered() {
    let s = Scenario::start_with(Format::OpenAi, TOKENS_20).await;
    push_pausing_run(&s, "call_1");
    let (mut client, session) = s.session().await;
    let mut other = s.client().await;
    let elsewhere = create_session(&mut other, &s.workspace()).await;
    assert!(budget_list(&mut other, json!({})).await.requests.is_empty());

    let run_id = client.prompt(&session, "look around").await;
    let request = until_paused(&mut client).await;
    let listed = budget_list(&mut other, json!({})).await.requests;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].session_id, session);
    assert_eq!(listed[0].run_id, run_id);
    assert_eq!(listed[0].request, request, "as budgetExceeded carried it");
    assert!(
        listed[0].requested_at.ends_with('Z'),
        "{}",
        listed[0].requested_at
    );
    let of_session = budget_list(&mut other, json!({"sessionId": session})).await;
    assert_eq!(of_session.requests, listed);
    let of_other = budget_list(&mut other, json!({"sessionId": elsewhere})).await;
    assert!(of_other.requests.is_empty(), "{of_other:?}");

    other
        .request(
            "budget/respond",
            json!({"requestId": request.request_id, "decision": "continue"}),
        )
        .await
        .unwrap();
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert!(budget_list(&mut other, json!({})).await.requests.is_empty());
}

/// A subagent's pause is listed with its child session and the labels its request carries.
#[tokio::test]
async fn budget_list_labels_a_subagents_pause() {
    let s = Scenario::start(Format::OpenAi).await;
    script_counting_subagent(&s);
    let (mut client, session) = s.session().await;
    let parent_run = client.prompt(&session, "count").await;
    let request = until_paused(&mut client).await;
    let listed = budget_list(&mut client, json!({})).await.requests;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let pause = &listed[0];
    assert_ne!(pause.session_id, session, "the child session's id");
    assert_eq!(pause.request.task_id, request.task_id);
    assert_eq!(pause.request.agent_type.as_deref(), Some("counter"));
    assert_eq!(
        pause.request.parent_run_id.as_deref(),
        Some(parent_run.as_str())
    );
    let of_child = budget_list(&mut client, json!({"sessionId": pause.session_id})).await;
    assert_eq!(of_child.requests, listed);
    client
        .request(
            "budget/respond",
            json!({"requestId": request.request_id, "decision": "stop"}),
        )
        .await
        .unwrap();
    client.events_until_run_finished().await;
    assert!(
        budget_list(&mut client, json!({}))
            .await
            .requests
            .is_empty()
    );
}

/// `agentctl approvals list` shows the pause beside the approvals (`--json` too);
/// `agentctl approve PREFIX --limit N` continues it, `agentctl deny ID` stops the next, and an
/// approval's flag is refused for a pause.
#[tokio::test]
async fn agentctl_lists_and_answers_a_budget_pause() {
    let s = Scenario::start_with(Format::OpenAi, TOKENS_20).await;
    push_pausing_run(&s, "call_1");
    let env = &s.daemon.env;
    let (mut client, session) = s.session().await;
    let none = env.run_agentctl(&["approvals", "list"]).await;
    assert_eq!(
        text(&none.stdout),
        "no pending approvals or budget pauses\n",
        "{}",
        text(&none.stderr)
    );

    client.prompt(&session, "look around").await;
    let request = until_paused(&mut client).await;
    let id = request.request_id.clone();
    let listed = env.run_agentctl(&["approvals", "list"]).await;
    let table = text(&listed.stdout);
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
    let row = table
        .lines()
        .find(|line| line.starts_with(&format!("{} ", agentctl::ids::short(&id))))
        .unwrap_or_else(|| panic!("no row for {id} in\n{table}"));
    // Short ids in the table (`bud_`/`ses_` and 8 digits); --json has them whole.
    for cell in [
        agentctl::ids::short(&session),
        "tokens",
        "40 tokens",
        "20 tokens",
        "60 tokens",
    ] {
        assert!(row.contains(cell), "{cell} not in {row}");
    }
    let json_list = env.run_agentctl(&["--json", "approvals", "list"]).await;
    let listed: serde_json::Value = serde_json::from_slice(&json_list.stdout).unwrap();
    assert_eq!(listed["approvals"], json!([]), "{listed}");
    assert_eq!(listed["budgetPauses"][0]["request"]["requestId"], json!(id));

    let refused = env.run_agentctl(&["approve", &id, "--session"]).await;
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("--session answers an approval"),
        "{}",
        text(&refused.stderr)
    );
    // A bare prefix of the id's body names it.
    let prefix = &id["bud_".len().."bud_".len() + 8];
    let approved = env
        .run_agentctl(&["approve", prefix, "--limit", "1000"])
        .await;
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        text(&approved.stderr)
    );
    assert_eq!(
        text(&approved.stdout),
        format!("budget {}: continued to 1000\n", agentctl::ids::short(&id))
    );
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(
        resolved(&events),
        (
            BudgetDecision::Continue,
            "client:agentctl".to_owned(),
            Some(1000.0)
        )
    );

    push_pausing_run(&s, "call_2");
    client.prompt(&session, "again").await;
    let request = until_paused(&mut client).await;
    let denied = env.run_agentctl(&["deny", &request.request_id]).await;
    assert_eq!(denied.status.code(), Some(0), "{}", text(&denied.stderr));
    assert_eq!(
        text(&denied.stdout),
        format!(
            "budget {}: stopped\n",
            agentctl::ids::short(&request.request_id)
        )
    );
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Budget);
    let again = env.run_agentctl(&["deny", &request.request_id]).await;
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("already decided"),
        "{}",
        text(&again.stderr)
    );
}

/// The bridge asks the editor about a pause of its session (continue to the suggested limit,
/// or stop); the editor continues and the run finishes. At the next pause the editor cannot
/// be asked (its request fails): the bridge stops the run, recorded as its policy.
#[tokio::test]
async fn the_acp_bridge_asks_the_editor_about_a_budget_pause() {
    let s = Scenario::start_with(Format::OpenAi, TOKENS_20).await;
    push_pausing_run(&s, "call_1");
    let mut editor = AcpClient::start(&s.daemon.env).await;
    initialize(&mut editor).await;
    let created = editor
        .request(
            "session/new",
            json!({"cwd": s.workspace().display().to_string(), "mcpServers": []}),
        )
        .await
        .expect("session/new");
    let session_id = created["sessionId"].as_str().unwrap().to_owned();
    let prompt_params =
        |text: &str| json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]});
    let mut raw = s.client().await;
    raw.subscribe(&session_id, Some(0)).await;

    let prompt = editor
        .send_request("session/prompt", prompt_params("look around"))
        .await;
    let request = until_paused(&mut raw).await;
    let (_, key, permission) = editor.until_permission().await;
    assert_eq!(permission["sessionId"], session_id.as_str());
    assert_eq!(
        permission["toolCall"]["toolCallId"],
        request.request_id.as_str()
    );
    assert_eq!(permission["toolCall"]["kind"], "other");
    assert_eq!(permission["toolCall"]["title"], request.message.as_str());
    let options: Vec<(String, String, String)> = permission["options"]
        .as_array()
        .expect("options")
        .iter()
        .map(|o| {
            let field = |name: &str| o[name].as_str().unwrap().to_owned();
            (field("optionId"), field("name"), field("kind"))
        })
        .collect();
    assert_eq!(
        options,
        [
            (
                "continue".to_owned(),
                "Continue to 60 tokens".to_owned(),
                "allow_once".to_owned()
            ),
            (
                "stop".to_owned(),
                "Stop the run".to_owned(),
                "reject_once".to_owned()
            ),
        ]
    );
    editor.choose(key, "continue").await;
    let answer = editor.answer(prompt).await.expect("the turn ends");
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    let events = raw.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(
        resolved(&events),
        (
            BudgetDecision::Continue,
            "client:acp:acp-test-client".to_owned(),
            Some(60.0)
        )
    );
    assert_eq!(s.mock.requests().len(), 2, "the run went on");

    push_pausing_run(&s, "call_2");
    let prompt = editor
        .send_request("session/prompt", prompt_params("again"))
        .await;
    let request = until_paused(&mut raw).await;
    assert_eq!(request.budget, BudgetKind::Tokens);
    let (_, key, _) = editor.until_permission().await;
    editor.fail_permission(key).await;
    let answer = editor.answer(prompt).await.expect("the turn ends");
    assert_eq!(answer["stopReason"], "max_tokens", "{answer}");
    let events = raw
        .persisted_events_until(|event| matches!(event, Event::RunFinished { .. }))
        .await;
    assert_eq!(run_status(&events), RunStatus::Budget);
    assert_eq!(
        resolved(&events),
        (
            BudgetDecision::Stop,
            "policy:acp:acp-test-client".to_owned(),
            None
        )
    );
    assert_eq!(s.mock.requests().len(), 3, "no call after the stop");
}
