//! Tests of the session event log: seqs, the writer task, cancel safety, replay pages.

use super::*;
use std::future::Future;

async fn open_log(dir: &std::path::Path, tasks: &TaskTracker) -> EventLog {
    let path = dir.join("s.jsonl");
    std::fs::write(&path, "{\"type\":\"header\"}\n").unwrap();
    let position = LogPosition {
        last_seq: 0,
        valid_len: 18,
        missing_newline: false,
    };
    EventLog::open("ses_1", path, position, DaemonStream::new(8), tasks)
        .await
        .unwrap()
}

fn warning(n: usize) -> Event {
    Event::Warning {
        message: format!("w{n}"),
    }
}

/// Seqs of the event lines in the file, in order.
fn file_seqs(dir: &std::path::Path) -> Vec<u64> {
    std::fs::read_to_string(dir.join("s.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|value| value["seq"].as_u64())
        .collect()
}

#[tokio::test]
async fn appends_dropped_mid_write_leave_no_duplicate_or_hole() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = TaskTracker::new();
    let log = open_log(dir.path(), &tasks).await;
    for n in 0..15 {
        // Poll once (the write starts), then drop it, as a `select!` or an abort does.
        let mut append = std::pin::pin!(log.append(warning(n)));
        let waker = futures::task::noop_waker();
        let _ = append
            .as_mut()
            .poll(&mut std::task::Context::from_waker(&waker));
    }
    let last = log.append(warning(99)).await.unwrap();
    assert_eq!(last, 16);
    assert_eq!(file_seqs(dir.path()), (1..=16).collect::<Vec<u64>>());
    log.close();
    tasks.close();
    tasks.wait().await;
}

#[tokio::test]
async fn once_the_writer_has_stopped_every_accepted_append_is_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = TaskTracker::new();
    let log = Arc::new(open_log(dir.path(), &tasks).await);
    let appends: Vec<_> = (0..20)
        .map(|n| {
            let log = log.clone();
            tokio::spawn(async move { log.append(warning(n)).await })
        })
        .collect();
    tokio::task::yield_now().await;
    log.close();
    log.writer_stopped().await;
    // What unloading relies on: nothing is written after this, and nothing accepted is lost.
    let in_file = file_seqs(dir.path());
    let mut accepted = Vec::new();
    for append in appends {
        if let Ok(seq) = append.await.unwrap() {
            accepted.push(seq);
        }
    }
    accepted.sort_unstable();
    assert_eq!(in_file, accepted);
    assert_eq!(file_seqs(dir.path()), in_file);
    assert!(log.append(warning(99)).await.is_err());
}

#[tokio::test]
async fn a_subscriber_replays_missing_seqs_as_one_marked_warning() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = TaskTracker::new();
    let log = open_log(dir.path(), &tasks).await;
    for n in 0..3 {
        log.append(warning(n)).await.unwrap();
    }
    // Damage the second event line (keeping its length: the index's offsets stay true).
    let path = dir.path().join("s.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let damaged = text.replacen("\"seq\":2,\"event\":{", "\"seq\":2,\"event\":[", 1);
    assert_ne!(damaged, text);
    std::fs::write(&path, damaged).unwrap();
    let replayed = replay_all(&log, Some(0)).await;
    let seqs: Vec<(u64, bool)> = replayed.iter().map(|p| (p.seq, not_persisted(p))).collect();
    assert_eq!(seqs, [(1, false), (2, true), (3, false)]);
    assert!(
        matches!(&replayed[1].event, Event::Warning { message } if message.starts_with("event 2 ")),
        "{:?}",
        replayed[1].event
    );
    assert!(replayed[1].json.get().contains("\"notPersisted\":true"));
    log.close();
}

/// Everything a subscription after `after_seq` replays, page by page.
async fn replay_all(log: &EventLog, after_seq: Option<u64>) -> Vec<Arc<Published>> {
    let mut subscription = log.subscribe(after_seq).await.unwrap();
    let mut replayed = Vec::new();
    while !subscription.replay.is_done() {
        replayed.extend(log.replay_page(&mut subscription.replay).await.unwrap());
    }
    replayed
}

#[tokio::test]
async fn a_paged_replay_reports_missing_seqs_across_pages_and_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = TaskTracker::new();
    let log = open_log(dir.path(), &tasks).await;
    let total = 2 * replay::REPLAY_PAGE_EVENTS as u64 + 10;
    for n in 0..total {
        log.append(warning(n as usize)).await.unwrap();
    }
    // Damage seqs 100..=300 (across the first page boundary) and the last one.
    let path = dir.path().join("s.jsonl");
    let text: String = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|line| {
            let seq = serde_json::from_str::<serde_json::Value>(line).unwrap()["seq"].as_u64();
            match seq {
                Some(seq) if (100..=300).contains(&seq) || seq == total => {
                    // Same length: the index's offsets stay true.
                    let half = line.len() / 2;
                    format!("{}{}\n", &line[..half], "x".repeat(line.len() - half))
                }
                _ => format!("{line}\n"),
            }
        })
        .collect();
    std::fs::write(&path, text).unwrap();
    let replayed = replay_all(&log, Some(50)).await;
    let warnings: Vec<u64> = replayed
        .iter()
        .filter(|p| not_persisted(p))
        .map(|p| p.seq)
        .collect();
    assert_eq!(warnings, [300, total]);
    let events: Vec<u64> = replayed
        .iter()
        .filter(|p| !not_persisted(p))
        .map(|p| p.seq)
        .collect();
    let expected: Vec<u64> = (51..100).chain(301..total).collect();
    assert_eq!(events, expected);
    // Nothing after the last seq: done at once.
    assert!(replay_all(&log, Some(total)).await.is_empty());
    log.close();
    log.writer_stopped().await;
}

#[tokio::test]
async fn a_created_log_holds_its_first_events_indexed_and_publishes_them_when_told() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = TaskTracker::new();
    let daemon = DaemonStream::new(8);
    let mut lifecycle = daemon.events.subscribe();
    let (log, created) = EventLog::create(
        "ses_1",
        dir.path().join("s.jsonl"),
        "{\"type\":\"header\"}\n".to_owned(),
        vec![
            Event::SessionCreated {
                cwd: "/w".into(),
                model: "m".into(),
                forked_from: None,
            },
            warning(1),
        ],
        daemon.clone(),
        &tasks,
    )
    .await
    .unwrap();
    assert_eq!(file_seqs(dir.path()), vec![1, 2]);
    assert_eq!(log.last_seq(), 2);
    // Nothing is announced before the caller says the session can be found.
    assert!(lifecycle.try_recv().is_err());
    log.publish_created(created).unwrap();
    let announced = lifecycle.try_recv().unwrap();
    assert_eq!(announced.seq, 1);
    assert!(matches!(announced.event, Event::SessionCreated { .. }));
    // The index knows where they are: a replay from the start finds both, and appends go on
    // from seq 3.
    let replayed = replay_all(&log, Some(0)).await;
    assert_eq!(
        replayed.iter().map(|p| p.seq).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert_eq!(log.append(warning(3)).await.unwrap(), 3);
    assert_eq!(file_seqs(dir.path()), vec![1, 2, 3]);
    // An existing file is never overwritten.
    let again = EventLog::create(
        "ses_1",
        dir.path().join("s.jsonl"),
        "{\"type\":\"header\"}\n".to_owned(),
        Vec::new(),
        daemon,
        &tasks,
    )
    .await;
    assert!(again.is_err());
    assert_eq!(file_seqs(dir.path()), vec![1, 2, 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_and_subscriptions_queued_together_keep_order_with_no_gap_or_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = TaskTracker::new();
    let log = Arc::new(open_log(dir.path(), &tasks).await);
    // Many appenders and subscribers at once: the writer takes them in batches.
    let mut handles = Vec::new();
    let mut subscriptions = Vec::new();
    for n in 0..200 {
        let appender = log.clone();
        handles.push(tokio::spawn(
            async move { appender.append(warning(n)).await },
        ));
        if n % 50 == 0 {
            subscriptions.push(log.subscribe(None).await.unwrap());
        }
    }
    let mut seqs = Vec::new();
    for handle in handles {
        seqs.push(handle.await.unwrap().unwrap());
    }
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=200).collect::<Vec<_>>());
    assert_eq!(file_seqs(dir.path()), (1..=200).collect::<Vec<_>>());
    // Each subscriber hears exactly the events after the seq it caught up to, in order.
    for mut subscription in subscriptions {
        let mut heard = Vec::new();
        while let Ok(published) = subscription.live.try_recv() {
            heard.push(published.seq);
        }
        let expected: Vec<u64> = (subscription.caught_up_to + 1..=200).collect();
        assert_eq!(heard, expected);
    }
}

#[tokio::test]
async fn a_message_and_its_event_are_written_together_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = TaskTracker::new();
    let log = open_log(dir.path(), &tasks).await;
    let message = Message::user("hello");
    let seq = log
        .append_message_then(&message, vec![warning(1)])
        .await
        .unwrap();
    assert_eq!(seq, 1);
    let text = std::fs::read_to_string(dir.path().join("s.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[1].contains("hello") && !lines[1].contains("\"seq\""),
        "{text}"
    );
    assert!(lines[2].contains("\"seq\":1"), "{text}");
}

/// Whether an event was sent marked as missing from the file (`notPersisted`).
fn not_persisted(published: &Published) -> bool {
    let envelope: serde_json::Value = serde_json::from_str(published.json.get()).unwrap();
    envelope["notPersisted"] == serde_json::json!(true)
}
