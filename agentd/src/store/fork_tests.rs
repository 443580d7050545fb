//! Where a fork cuts a session file: between runs only, past the end refused, the lines after
//! the point left out, and the settings and preview at the point.

use super::*;
use crate::store::{FORMAT_VERSION, encode, encode_event, encode_message};
use agentd_core::conversation::Message;
use protocol::event::RunStatus;

fn header() -> SessionHeader {
    serde_json::from_value(serde_json::json!({
        "version": FORMAT_VERSION, "id": "ses_src", "createdAt": "2026-11-30T00:00:00Z",
        "cwd": "/w", "provider": "p", "model": "m", "systemPrompt": "sys",
    }))
    .unwrap()
}

fn started(run: &str, prompt: &str) -> Event {
    Event::RunStarted {
        run_id: run.to_owned(),
        prompt: prompt.to_owned(),
        client_request_id: None,
        options: None,
    }
}

fn finished(run: &str) -> Event {
    Event::RunFinished {
        run_id: run.to_owned(),
        status: RunStatus::Completed,
        error: None,
        usage: Default::default(),
        cost_usd: None,
    }
}

/// A file: two finished runs (seqs 2–3 and 5–6), a title change at 4 and a run still going
/// from 7. Returns the bytes and the end of each event's line by seq.
fn file() -> (Vec<u8>, Vec<usize>) {
    let mut bytes = encode(&Entry::Header(header())).unwrap().into_bytes();
    let mut ends = vec![bytes.len()];
    let mut event = |bytes: &mut Vec<u8>, seq: u64, event: Event| {
        bytes.extend_from_slice(encode_event(seq, &event).unwrap().as_bytes());
        ends.push(bytes.len());
    };
    let message = |bytes: &mut Vec<u8>, text: &str| {
        let line = encode_message(&Message::user(text)).unwrap();
        bytes.extend_from_slice(line.as_bytes());
    };
    event(
        &mut bytes,
        1,
        Event::SessionCreated {
            cwd: "/w".into(),
            model: "m".into(),
            forked_from: None,
        },
    );
    event(&mut bytes, 2, started("run_a", "first prompt"));
    message(&mut bytes, "first prompt");
    event(&mut bytes, 3, finished("run_a"));
    event(
        &mut bytes,
        4,
        Event::SessionUpdated {
            permission_mode: None,
            provider: None,
            model: Some("m2".into()),
            title: Some("renamed".into()),
        },
    );
    message(&mut bytes, "written before run_b started");
    event(&mut bytes, 5, started("run_b", "second"));
    message(&mut bytes, "second");
    event(&mut bytes, 6, finished("run_b"));
    event(&mut bytes, 7, started("run_c", "third"));
    message(&mut bytes, "third");
    (bytes, ends)
}

#[test]
fn a_point_between_runs_keeps_every_line_up_to_its_event_and_the_settings_then() {
    let (bytes, ends) = file();
    let cut_at = |at: u64| cut(&bytes, at, 7).unwrap();

    let after_first = cut_at(3);
    assert_eq!(after_first.kept.end, ends[3]);
    assert_eq!(after_first.preview.as_deref(), Some("first prompt"));
    assert_eq!(after_first.settings.model, "m");
    assert_eq!(after_first.settings.title, None);
    assert_eq!(after_first.header.id, "ses_src");

    // After the update: its settings; the message after it belongs to run_b, not to seq 4.
    let updated = cut_at(4);
    assert_eq!(updated.kept.end, ends[4]);
    assert_eq!(updated.settings.model, "m2");
    assert_eq!(updated.settings.title.as_deref(), Some("renamed"));

    let kept = cut_at(6);
    let text = std::str::from_utf8(&bytes[kept.kept.clone()]).unwrap();
    assert_eq!(kept.kept.end, ends[6]);
    assert!(text.contains("written before run_b started"), "{text}");
    assert!(!text.contains("third"));

    // Seq 0: the header only.
    assert_eq!(cut_at(0).kept, ends[0]..ends[0]);
}

#[test]
fn a_point_inside_a_run_is_refused_naming_the_seqs_around_it() {
    let (bytes, _) = file();
    match cut(&bytes, 5, 7) {
        Err(ForkRefused::InsideRun {
            run_id,
            started,
            before,
            finished,
            ..
        }) => assert_eq!(
            (run_id.as_str(), started, before, finished),
            ("run_b", 5, 4, 6)
        ),
        other => panic!("not refused as inside run_b: {other:?}"),
    }
    let message = cut(&bytes, 2, 7).unwrap_err().to_string();
    assert_eq!(
        message,
        "seq 2 is inside run run_a (seqs 2 to 3): fork at seq 1, just before it started, or at seq 3, its end"
    );
    // The run still going (the default point, its last seq, included).
    let running = cut(&bytes, 7, 7).unwrap_err();
    assert!(
        matches!(
            &running,
            ForkRefused::InsideRunningRun {
                started: 7,
                before: 6,
                ..
            }
        ),
        "{running:?}"
    );
    assert!(running.to_string().contains("still running"), "{running}");
    // Past the end.
    assert_eq!(
        cut(&bytes, 8, 7).unwrap_err().to_string(),
        "atSeq 8 is past the end of the session's log: its last seq is 7"
    );
}

#[test]
fn a_point_the_log_could_not_write_is_refused_and_a_gap_before_it_is_kept() {
    let mut bytes = encode(&Entry::Header(header())).unwrap().into_bytes();
    bytes.extend_from_slice(encode_event(1, &started("run_a", "p")).unwrap().as_bytes());
    bytes.extend_from_slice(encode(&Entry::Gap { from: 2, to: 3 }).unwrap().as_bytes());
    bytes.extend_from_slice(encode_event(4, &finished("run_a")).unwrap().as_bytes());
    let refused = cut(&bytes, 2, 4).unwrap_err();
    assert!(
        matches!(
            refused,
            ForkRefused::NotWritten {
                from: 2,
                to: 3,
                before: 1,
                ..
            }
        ),
        "{refused:?}"
    );
    let kept = cut(&bytes, 4, 4).unwrap();
    assert_eq!(kept.kept.end, bytes.len());
}

#[test]
fn event_line_seqs_are_read_without_decoding_and_other_lines_have_none() {
    assert_eq!(
        event_line_seq(br#"{"type":"event","seq":42,"event":{"type":"lagged"}}"#),
        Some(42)
    );
    assert_eq!(
        event_line_seq(br#"{"type":"message","message":{"role":"user","content":"x"}}"#),
        None
    );
    assert_eq!(
        event_line_seq(br#"{"seq":7,"type":"event","event":{"type":"lagged"}}"#),
        Some(7)
    );
    assert_eq!(event_line_seq(b"torn {\"type"), None);
}

#[test]
fn a_forks_usage_and_request_ids_count_from_its_own_session_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ses_fork.jsonl");
    let total = protocol::event::Usage {
        input_tokens: 100,
        output_tokens: 10,
        ..Default::default()
    };
    let created = |forked: bool| Event::SessionCreated {
        cwd: "/w".into(),
        model: "m".into(),
        forked_from: forked.then(|| protocol::session::ForkPoint {
            session_id: "ses_src".into(),
            seq: 4,
        }),
    };
    let mut bytes = encode(&Entry::Header(header())).unwrap().into_bytes();
    let events = [
        created(false),
        Event::RunStarted {
            run_id: "run_a".into(),
            prompt: "p".into(),
            client_request_id: Some("c-1".into()),
            options: None,
        },
        Event::UsageUpdated {
            run_id: "run_a".into(),
            usage: total,
            total,
            context_window: None,
            total_cost_usd: Some(0.5),
        },
        finished("run_a"),
        created(true),
    ];
    for (seq, event) in (1..).zip(&events) {
        bytes.extend_from_slice(encode_event(seq, event).unwrap().as_bytes());
    }
    std::fs::write(&path, &bytes).unwrap();
    let loaded = crate::store::load(&path).unwrap();
    assert_eq!(loaded.usage, Default::default());
    assert_eq!(loaded.cost_usd, None);
    assert!(loaded.request_ids.is_empty());
    assert_eq!(loaded.preview.as_deref(), Some("p"));
    assert_eq!(loaded.last_seq, 5);
    let summary = crate::store::read_summary(&path).unwrap().unwrap();
    assert_eq!((summary.last_seq, summary.usage), (5, Default::default()));
}

#[test]
fn deciding_lines_are_told_by_their_type_wherever_it_is_written() {
    assert!(decides(
        br#"{"type":"event","seq":3,"event":{"type":"runFinished","runId":"r"}}"#
    ));
    assert!(!decides(
        br#"{"type":"event","seq":3,"event":{"type":"warning","message":"\"type\":\"runStarted\""}}"#
    ));
    assert!(decides(
        br#"{"seq":3,"type":"event","event":{"runId":"r","type":"runStarted","prompt":"p"}}"#
    ));
}
