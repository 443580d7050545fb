//! Memory over uptime: idle sessions are unloaded and load again transparently, replay reads
//! the log in pages from a seq index (exactly the tail after `afterSeq`, everything in order
//! from 0), and listing comes from a summary index that survives restarts and notices files
//! changed behind its back.

use std::io::Write;
use std::time::Instant;

use agentd_tests::harness::{Client, Daemon, TestEnv, WAIT};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

/// `[sessions]` with a one-second idle time, as extra config lines.
const QUICK_UNLOAD: &str = "[sessions]\nidle_unload_secs = 1\n";

/// `loadedSessions` of `daemon/status`.
async fn loaded_sessions(client: &mut Client) -> u64 {
    let status = client
        .request("daemon/status", json!({}))
        .await
        .expect("daemon/status");
    status["counts"]["loadedSessions"]
        .as_u64()
        .unwrap_or_else(|| panic!("no counts.loadedSessions in {status}"))
}

/// A client watching the daemon stream (it does not answer approvals, so it changes no
/// approval's outcome), to wait for `sessionUnloaded` events.
async fn unload_watcher(s: &Scenario) -> Client {
    let mut watcher = Client::connect_raw(s.daemon.socket())
        .await
        .expect("connect");
    watcher.initialize_as("unload-watcher", false).await;
    watcher
        .request("daemon/subscribe", json!({}))
        .await
        .expect("daemon/subscribe");
    watcher
}

/// Wait for the daemon to say it unloaded `session` (eviction is driven by time; the event
/// says when it happened).
async fn wait_unloaded(watcher: &mut Client, session: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(
            Instant::now() < deadline,
            "{session} was not unloaded within {WAIT:?}"
        );
        let envelope = watcher.next_daemon_event().await;
        if matches!(envelope.event, Event::SessionUnloaded {}) && envelope.session_id == session {
            return;
        }
    }
}

both_formats!(an_idle_session_is_unloaded_and_loads_again_with_its_history);
async fn an_idle_session_is_unloaded_and_loads_again_with_its_history(format: Format) {
    let s = Scenario::start_with(format, QUICK_UNLOAD).await;
    let mut watcher = unload_watcher(&s).await;
    s.mock.push(Reply::text("first answer").usage(11, 3, 0));
    s.mock.push(Reply::text("second answer"));
    let mut client = s.client().await;
    let session = create_session(&mut client, &s.workspace()).await;
    let subscription = client.subscribe(&session, Some(0)).await;
    client.prompt(&session, "one").await;
    let first = client.events_until_run_finished().await;
    assert_eq!(run_status(&first), RunStatus::Completed);
    let last_seq = first.last().map(|e| e.seq).unwrap_or_default();
    client
        .request("session/unsubscribe", json!([subscription]))
        .await
        .expect("unsubscribe");

    wait_unloaded(&mut watcher, &session).await;
    assert_eq!(loaded_sessions(&mut client).await, 0);

    // Listed from its summary, as it was.
    let listed = client
        .request("session/list", json!({}))
        .await
        .expect("session/list");
    assert_eq!(listed["sessions"][0]["sessionId"], json!(session));
    assert_eq!(listed["sessions"][0]["lastSeq"], json!(last_seq));
    assert_eq!(listed["sessions"][0]["usage"]["inputTokens"], json!(11));
    assert_eq!(
        loaded_sessions(&mut client).await,
        0,
        "listing loads nothing"
    );

    // The next method loads it again, history intact.
    let got = client
        .request(
            "session/get",
            json!({"sessionId": session, "includeHistory": true}),
        )
        .await
        .expect("session/get");
    assert_eq!(got["session"]["lastSeq"], json!(last_seq));
    let history: Vec<(String, String)> = got["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        history,
        vec![
            ("user".to_owned(), "one".to_owned()),
            ("assistant".to_owned(), "first answer".to_owned()),
        ]
    );

    // Its events replay from the file, and a prompt continues the same conversation.
    client.subscribe(&session, Some(0)).await;
    assert_eq!(
        loaded_sessions(&mut client).await,
        1,
        "a subscription keeps it"
    );
    let replayed = client.events_through_seq(last_seq).await;
    assert_eq!(replayed, first);
    client.prompt(&session, "two").await;
    let second = client.events_until_run_finished().await;
    assert_eq!(run_status(&second), RunStatus::Completed);
    assert_eq!(second[0].seq, last_seq + 1, "{second:#?}");
    let requests = s.mock.wait_for_requests(2).await;
    assert_eq!(
        request_user_texts(format, &requests[1]),
        vec!["one".to_owned(), "two".to_owned()]
    );
    let transcript = request_transcript(format, &requests[1]);
    assert!(
        transcript.contains(&"assistant:first answer".to_owned()),
        "{transcript:?}"
    );
}

#[tokio::test]
async fn a_session_with_a_subscriber_is_never_unloaded() {
    let s = Scenario::start_with(Format::OpenAi, QUICK_UNLOAD).await;
    let mut unloads = unload_watcher(&s).await;
    s.mock.push(Reply::text("still here"));
    let mut watcher = s.client().await;
    let watched = create_session(&mut watcher, &s.workspace()).await;
    watcher.subscribe(&watched, None).await;
    let mut other = s.client().await;
    let idle = create_session(&mut other, &s.workspace()).await;

    // The session created later goes; the watched one, idle longer, stays.
    wait_unloaded(&mut unloads, &idle).await;
    assert_eq!(loaded_sessions(&mut other).await, 1);
    let listed = other
        .request("session/get", json!({"sessionId": idle}))
        .await
        .expect("the unloaded session loads again");
    assert_eq!(listed["session"]["status"], json!("idle"));

    // The watcher's subscription still delivers: its session was never closed under it.
    watcher.prompt(&watched, "hello?").await;
    let events = watcher.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
}

/// Write a session file of `events` warnings (a conversation message every 10) in `env`,
/// before the daemon starts; returns its id. Lines are written with sorted keys, not in the
/// daemon's own key order: the index must still find every event.
fn write_long_session(env: &TestEnv, events: u64) -> String {
    let id = "ses_0123456789abcdef0123456789abcdef".to_owned();
    let path = session_file(env, &id);
    std::fs::create_dir_all(path.parent().expect("sessions dir")).expect("create sessions dir");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).expect("session file"));
    let header = json!({
        "type": "header",
        "version": 1,
        "id": id,
        "createdAt": "2026-11-30T00:00:00Z",
        "cwd": env.workspace().display().to_string(),
        "provider": "mock",
        "model": "mock-model",
        "systemPrompt": "You are a test.",
    });
    writeln!(file, "{header}").expect("write header");
    for seq in 1..=events {
        if seq % 10 == 0 {
            let message = json!({"type": "message", "message": {"role": "user", "content": format!("note {seq}")}});
            writeln!(file, "{message}").expect("write message");
        }
        let event = Event::Warning {
            message: format!("event {seq} {}", "x".repeat(seq as usize % 50)),
        };
        let line = json!({"type": "event", "seq": seq, "event": event});
        writeln!(file, "{line}").expect("write event");
    }
    file.flush().expect("flush session file");
    id
}

fn seqs(events: &[Envelope]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

#[tokio::test]
async fn replay_of_a_long_session_gets_exactly_the_tail_or_everything_in_order() {
    const EVENTS: u64 = 3000;
    let mock = MockLlm::start().await;
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let session = write_long_session(&env, EVENTS);
    let daemon = Daemon::start_in(env).await;

    let mut tail = daemon.client().await;
    tail.subscribe(&session, Some(EVENTS - 5)).await;
    let got = tail.events_through_seq(EVENTS).await;
    assert_eq!(seqs(&got), (EVENTS - 4..=EVENTS).collect::<Vec<_>>());

    let mut whole = daemon.client().await;
    whole.subscribe(&session, Some(0)).await;
    let got = whole.events_through_seq(EVENTS).await;
    assert_eq!(
        seqs(&got),
        (1..=EVENTS).collect::<Vec<_>>(),
        "gaps, duplicates or disorder"
    );
    assert!(
        matches!(&got[EVENTS as usize - 1].event, Event::Warning { message } if message.starts_with(&format!("event {EVENTS} "))),
        "{:?}",
        got.last()
    );

    // Events appended after load are indexed too: a late subscriber gets exactly them.
    mock.push(Reply::text("appended"));
    whole.prompt(&session, "more").await;
    let run = whole.events_until_run_finished().await;
    assert_eq!(run[0].seq, EVENTS + 1);
    let mut late = daemon.client().await;
    late.subscribe(&session, Some(EVENTS + 1)).await;
    let last = run.last().map(|e| e.seq).unwrap_or_default();
    let got = late.events_through_seq(last).await;
    assert_eq!(got, run[1..].to_vec());
}

#[tokio::test]
async fn the_listing_index_survives_a_restart_and_notices_a_changed_file() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("indexed"));
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let mut daemon = Daemon::start_in(env).await;
    let mut client = daemon.client().await;
    let untouched = create_session(&mut client, &daemon.env.workspace()).await;
    let session = create_session(&mut client, &daemon.env.workspace()).await;
    client.subscribe(&session, Some(0)).await;
    client.prompt(&session, "hi").await;
    let run = client.events_until_run_finished().await;
    let last_seq = run.last().map(|e| e.seq).unwrap_or_default();
    drop(client);
    daemon.signal(libc::SIGTERM);
    daemon.wait_exit().await;

    let index_path = daemon.env.path("state").join("agentd/sessions/index.json");
    let mut index: Value = serde_json::from_slice(&std::fs::read(&index_path).expect("index.json"))
        .expect("index.json parses");
    assert_eq!(
        index["sessions"][&session]["lastSeq"],
        json!(last_seq),
        "{index}"
    );
    assert_eq!(
        index["sessions"][&untouched]["lastSeq"],
        json!(1),
        "{index}"
    );
    // A figure only the index holds: listed after the restart, it shows the listing came from
    // the index and not from the (unchanged) file.
    index["sessions"][&untouched]["lastSeq"] = json!(4242);
    std::fs::write(&index_path, index.to_string()).expect("rewrite index.json");

    // Changed behind the daemon's back: the entry no longer matches and is re-summarised.
    let file = session_file(&daemon.env, &session);
    // As the daemon writes it (`type` first): the tail reader looks for that prefix.
    let extra = format!(
        r#"{{"type":"event","seq":{},"event":{{"type":"warning","message":"added"}}}}"#,
        last_seq + 1
    );
    let mut handle = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .expect("open session file");
    writeln!(handle, "{extra}").expect("append");
    drop(handle);

    daemon.restart().await;
    let mut client = daemon.client().await;
    let listed = client
        .request("session/list", json!({}))
        .await
        .expect("session/list");
    let last_seqs: Vec<(Value, Value)> = listed["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| (s["sessionId"].clone(), s["lastSeq"].clone()))
        .collect();
    assert!(
        last_seqs.contains(&(json!(session), json!(last_seq + 1))),
        "the changed file is re-summarised: {listed}"
    );
    assert!(
        last_seqs.contains(&(json!(untouched), json!(4242))),
        "the unchanged file is listed from the index: {listed}"
    );
    assert_eq!(
        loaded_sessions(&mut client).await,
        0,
        "listing loads nothing"
    );
}

#[tokio::test]
async fn a_run_waiting_for_an_approval_keeps_its_session_loaded() {
    use crate::approvals::{ASK, respond, shell, until_approval};
    let s = Scenario::start_with(Format::OpenAi, &format!("{QUICK_UNLOAD}{ASK}")).await;
    let mut unloads = unload_watcher(&s).await;
    s.mock.push(shell("c1", "echo approved"));
    s.mock.push(Reply::text("done"));
    let mut client = s.client().await;
    let waiting = create_session(&mut client, &s.workspace()).await;
    // Subscribed while the approval is requested (so it waits for an answer), then gone.
    let subscription = client.subscribe(&waiting, None).await;
    client.prompt(&waiting, "run it").await;
    let (events, approval) = until_approval(&mut client).await;
    let asked_at = events.last().map(|e| e.seq).unwrap_or_default();
    client
        .request("session/unsubscribe", json!([subscription]))
        .await
        .expect("unsubscribe");

    // A session created later, idle, goes; the one with the pending approval stays.
    let mut other = s.client().await;
    let idle = create_session(&mut other, &s.workspace()).await;
    wait_unloaded(&mut unloads, &idle).await;
    assert_eq!(loaded_sessions(&mut other).await, 1);

    // The run is still the live one: answered, it finishes, and a subscriber sees it.
    client.subscribe(&waiting, Some(asked_at)).await;
    respond(&mut client, &approval.approval_id, "allowOnce", None)
        .await
        .expect("approval/respond");
    let rest = client.events_until_run_finished().await;
    assert_eq!(run_status(&rest), RunStatus::Completed, "{rest:#?}");
    let results = tool_results(&rest);
    assert_eq!(results.len(), 1, "{rest:#?}");
    assert!(results[0].1.contains("approved"), "{results:?}");
}

#[tokio::test]
async fn an_unloaded_session_keeps_its_client_request_ids_and_replays_a_damaged_line_as_a_gap() {
    let s = Scenario::start_with(Format::OpenAi, QUICK_UNLOAD).await;
    let mut watcher = unload_watcher(&s).await;
    s.mock.push(Reply::text("once"));
    let mut client = s.client().await;
    let session = create_session(&mut client, &s.workspace()).await;
    let subscription = client.subscribe(&session, Some(0)).await;
    let prompt = json!({"sessionId": session, "text": "only once", "clientRequestId": "req-1"});
    let first = client
        .request("session/prompt", prompt.clone())
        .await
        .expect("session/prompt");
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let last_seq = events.last().map(|e| e.seq).unwrap_or_default();
    client
        .request("session/unsubscribe", json!([subscription]))
        .await
        .expect("unsubscribe");
    wait_unloaded(&mut watcher, &session).await;

    // Unloaded, nothing writes its file: damage one event line there that loading does not
    // need (not the run's start, which holds the clientRequestId, nor its end or usage).
    let file = session_file(&s.daemon.env, &session);
    let text = std::fs::read_to_string(&file).expect("session file");
    let victim = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["type"] == "event")
        .find(|entry| {
            let kind = entry["event"]["type"].as_str().unwrap_or_default();
            ![
                "sessionCreated",
                "runStarted",
                "runFinished",
                "usageUpdated",
            ]
            .contains(&kind)
        })
        .and_then(|entry| entry["seq"].as_u64())
        .unwrap_or_else(|| panic!("no event to damage in {text}"));
    let prefix = format!("{{\"type\":\"event\",\"seq\":{victim},");
    let damaged = text.replacen(&prefix, &format!("{prefix},"), 1);
    std::fs::write(&file, damaged).expect("damage the session file");

    // The same clientRequestId finds the same run: it was read back from the file.
    let again = client
        .request("session/prompt", prompt)
        .await
        .expect("session/prompt again");
    assert_eq!(again["runId"], first["runId"], "{again}");
    assert_eq!(again["queued"], json!(false), "{again}");
    assert_eq!(s.mock.requests().len(), 1);

    // The paged replay reports the damaged seq as a marked warning, not a silent hole.
    client.subscribe(&session, Some(0)).await;
    let replayed = client.events_through_seq(last_seq).await;
    assert_seqs_increase(&replayed);
    let gaps: Vec<u64> = replayed
        .iter()
        .filter(|e| e.not_persisted)
        .map(|e| e.seq)
        .collect();
    assert_eq!(gaps, [victim], "{replayed:#?}");
    assert_eq!(replayed.len() as u64, last_seq, "{replayed:#?}");
}
