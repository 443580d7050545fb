//! The model's reasoning reaches a session's subscribers as `thinkingDelta` while it streams,
//! and is neither persisted nor sent back to the model.

use agentd_tests::mock_llm::Reply;
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::{Event, RunStatus};

#[tokio::test]
async fn reasoning_streams_as_thinking_deltas_and_is_never_kept() {
    for format in FORMATS {
        let s = Scenario::start(format).await;
        s.mock
            .push(Reply::text("it is 4").with_thinking("two and two make four"));
        s.mock.push(Reply::text("still 4"));
        let (mut client, session) = s.session().await;
        client.prompt(&session, "two plus two?").await;
        let mut thinking = String::new();
        let mut seen_text = false;
        loop {
            let envelope = client.next_event().await;
            match envelope.event {
                Event::ThinkingDelta { text, .. } => {
                    assert!(!seen_text, "{format:?}: reasoning after the reply");
                    thinking.push_str(&text);
                }
                Event::MessageDelta { .. } => seen_text = true,
                Event::RunFinished { status, .. } => {
                    assert_eq!(status, RunStatus::Completed);
                    break;
                }
                _ => {}
            }
        }
        assert_eq!(thinking, "two and two make four", "{format:?}");
        // Not in the session's history, so not in the next request either.
        client.prompt(&session, "sure?").await;
        client.events_until_run_finished().await;
        let requests = s.mock.wait_for_requests(2).await;
        assert!(
            !requests[1].body.contains("two and two make four"),
            "{format:?}: {}",
            requests[1].body
        );
        let got = client
            .request(
                "session/get",
                serde_json::json!({"sessionId": session, "includeHistory": true}),
            )
            .await
            .unwrap();
        assert!(!got.to_string().contains("two and two make four"), "{got}");
    }
}

#[tokio::test]
async fn agentctl_run_shows_reasoning_with_thinking_full_and_not_by_default_off_a_terminal() {
    let s = Scenario::start(agentd_tests::mock_llm::Format::OpenAi).await;
    s.mock
        .push(Reply::text("it is 4").with_thinking("two and two\nmake four"));
    s.mock
        .push(Reply::text("still 4").with_thinking("hidden reasoning"));
    let full = s
        .daemon
        .env
        .run_agentctl(&["--thinking", "full", "run", "two plus two?"])
        .await;
    assert!(full.status.success(), "{full:?}");
    let stderr = String::from_utf8_lossy(&full.stderr);
    assert!(stderr.contains("two and two\nmake four\n"), "{stderr}");
    let brief = s.daemon.env.run_agentctl(&["run", "-c", "sure?"]).await;
    assert!(brief.status.success(), "{brief:?}");
    assert!(String::from_utf8_lossy(&brief.stdout).contains("still 4"));
    // `brief` shows reasoning beside the timer on a terminal only: none in a pipe.
    let stderr = String::from_utf8_lossy(&brief.stderr);
    assert!(!stderr.contains("hidden reasoning"), "{stderr}");
}
