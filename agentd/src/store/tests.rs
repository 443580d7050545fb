//! Tests of session-file loading, encoding, summaries and replays.

use super::*;
use std::io::Write;

/// A whole replay of `path` (`after < seq <= up_to`) as subscribers get it: page by page from
/// a seq index of the file (`session::replay`).
fn read_events(path: &Path, after: u64, up_to: u64) -> Result<Vec<Replayed>> {
    use crate::session::replay::{SeqIndex, read_page};
    let index = SeqIndex::build(path, std::fs::metadata(path)?.len())?;
    let mut cursor = index.cursor(after, up_to);
    let mut items = Vec::new();
    while !cursor.is_done() {
        items.extend(read_page(path, &mut cursor)?);
    }
    Ok(items)
}

fn header() -> SessionHeader {
    SessionHeader {
        version: FORMAT_VERSION,
        id: "ses_1".into(),
        created_at: "2026-11-30T00:00:00Z".into(),
        cwd: "/w".into(),
        provider: "openai".into(),
        model: "m".into(),
        title: None,
        permission_mode: Default::default(),
        permission_rules: Default::default(),
        mcp_servers: serde_json::Value::Null,
        child_mcp: None,
        system_prompt: "sys".into(),
        agent: None,
        parent_session_id: None,
        agent_type: None,
        task_id: None,
        tool_filter: None,
        max_turns: None,
        max_budget_usd: None,
        max_tokens: None,
        forked_from: None,
        prompt_cache_key: None,
    }
}

fn write(path: &Path, entries: &[Entry], tail: &str) {
    let mut file = std::fs::File::create(path).unwrap();
    for entry in entries {
        file.write_all(encode(entry).unwrap().as_bytes()).unwrap();
    }
    file.write_all(tail.as_bytes()).unwrap();
}

#[test]
fn round_trips_messages_and_events_and_skips_a_torn_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let run_started = Event::RunStarted {
        run_id: "run_1".into(),
        prompt: "hi".into(),
        client_request_id: None,
        options: None,
    };
    write(
        &path,
        &[
            Entry::Header(header()),
            Entry::Event {
                seq: 1,
                event: run_started.clone(),
            },
            Entry::Message {
                message: Message::user("hi"),
            },
            Entry::Event {
                seq: 2,
                event: Event::Warning {
                    message: "w".into(),
                },
            },
        ],
        "{\"type\":\"message\",\"message\":{\"role\":\"assis",
    );
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.header, header());
    assert_eq!(loaded.history, vec![Message::user("hi")]);
    assert_eq!(loaded.last_seq, 2);
    assert_eq!(loaded.unfinished_run.as_deref(), Some("run_1"));
    assert_eq!(loaded.warnings.len(), 1);
    assert!(loaded.warnings[0].contains("torn"), "{:?}", loaded.warnings);
    assert_eq!(
        loaded.valid_len,
        std::fs::metadata(&path).unwrap().len() - 42
    );
    assert!(!loaded.missing_newline);
    assert_eq!(
        read_events(&path, 0, 1).unwrap(),
        vec![Replayed::Event(1, run_started)]
    );
    assert_eq!(read_events(&path, 1, 2).unwrap().len(), 1);
}

#[test]
fn unreadable_or_unwritten_events_are_reported_as_missing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let warning = |seq| Entry::Event {
        seq,
        event: Event::Warning {
            message: "w".into(),
        },
    };
    write(
        &path,
        &[Entry::Header(header()), warning(1)],
        "{\"type\":\"event\",\"seq\":2,\"ev garbage\n",
    );
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(encode(&warning(3)).unwrap().as_bytes())
        .unwrap();
    // Seqs 4 and 5 went to events that could not be written.
    file.write_all(encode(&Entry::Gap { from: 4, to: 5 }).unwrap().as_bytes())
        .unwrap();
    assert_eq!(load(&path).unwrap().last_seq, 5);
    let kinds: Vec<String> = read_events(&path, 0, 5)
        .unwrap()
        .iter()
        .map(|item| match item {
            Replayed::Event(seq, _) => format!("event {seq}"),
            Replayed::Missing { from, to } => format!("missing {from}..={to}"),
        })
        .collect();
    assert_eq!(
        kinds,
        ["event 1", "missing 2..=2", "event 3", "missing 4..=5"]
    );
}

#[test]
fn borrowed_encoders_match_the_entry_format() {
    let event = Event::Warning {
        message: "w".into(),
    };
    assert_eq!(
        encode_event(3, &event).unwrap(),
        encode(&Entry::Event { seq: 3, event }).unwrap()
    );
    let message = Message::user("x");
    assert_eq!(
        encode_message(&message).unwrap(),
        encode(&Entry::Message { message }).unwrap()
    );
}

#[test]
fn the_summary_comes_from_the_tail_and_matches_a_full_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let usage = |n: u64| protocol::event::Usage {
        input_tokens: n,
        output_tokens: 1,
        cached_input_tokens: 0,
        cache_creation_input_tokens: 0,
        estimated: false,
    };
    let mut entries = vec![Entry::Header(header())];
    for seq in 1..=3000u64 {
        let event = if seq % 10 == 0 {
            Event::UsageUpdated {
                run_id: "r".into(),
                usage: usage(seq),
                total: usage(seq),
                context_window: None,
                total_cost_usd: None,
            }
        } else {
            Event::Warning {
                message: "x".repeat(100),
            }
        };
        entries.push(Entry::Event { seq, event });
    }
    write(&path, &entries, "{\"type\":\"event\",\"seq\":3001,\"ev");
    let summary = read_summary(&path).unwrap().expect("usage is in the tail");
    let loaded = load(&path).unwrap();
    assert_eq!(summary.last_seq, loaded.last_seq);
    assert_eq!(summary.last_seq, 3000);
    assert_eq!(summary.usage, loaded.usage);
    assert_eq!(summary.usage.input_tokens, 3000);

    // No model call in the tail of a long file: the caller must load it.
    let mut entries = vec![Entry::Header(header())];
    for seq in 1..=3000u64 {
        entries.push(Entry::Event {
            seq,
            event: Event::Warning {
                message: "x".repeat(100),
            },
        });
    }
    write(&path, &entries, "");
    assert_eq!(read_summary(&path).unwrap(), None);

    // A short file is read whole: no usage means none yet.
    write(&path, &[Entry::Header(header())], "");
    assert_eq!(read_summary(&path).unwrap(), Some(Summary::default()));
}

#[test]
fn unknown_entry_types_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    write(
        &path,
        &[Entry::Header(header())],
        "{\"type\":\"fromTheFuture\",\"x\":1}\n",
    );
    let loaded = load(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn read_header_reads_only_the_first_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    write(&path, &[Entry::Header(header())], "garbage\n");
    assert_eq!(read_header(&path).unwrap().id, "ses_1");
}

#[test]
fn a_file_of_a_newer_format_is_refused_by_version_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ses_1.jsonl");
    let newer = SessionHeader {
        version: FORMAT_VERSION + 1,
        ..header()
    };
    write(&path, &[Entry::Header(newer)], "");
    for err in [read_header(&path).unwrap_err(), load(&path).unwrap_err()] {
        let refused = err
            .downcast_ref::<NewerFormat>()
            .expect("a NewerFormat error");
        assert_eq!(refused.version, FORMAT_VERSION + 1);
        let message = err.to_string();
        assert!(
            message.contains(&format!("format {}", FORMAT_VERSION + 1))
                && message.contains(&format!("format {FORMAT_VERSION}")),
            "{message}"
        );
    }
    // Older and current formats load.
    write(&path, &[Entry::Header(header())], "");
    assert!(load(&path).is_ok());
}

#[test]
fn a_header_without_mcp_servers_still_loads_and_one_with_them_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ses_1.jsonl");
    let mut old = serde_json::to_value(Entry::Header(header())).unwrap();
    old.as_object_mut().unwrap().remove("mcpServers");
    std::fs::write(&path, format!("{old}\n")).unwrap();
    let loaded = read_header(&path).unwrap();
    assert_eq!(loaded.mcp_servers, serde_json::Value::Null);
    assert_eq!(
        loaded.mcp_servers(),
        agentd_work::mcp::config::McpEntries::default()
    );

    let servers = serde_json::json!({"time": {"command": "uvx", "args": ["mcp-server-time"]}});
    let with = SessionHeader {
        mcp_servers: servers.clone(),
        ..header()
    };
    write(&path, &[Entry::Header(with)], "");
    let loaded = read_header(&path).unwrap();
    assert_eq!(loaded.mcp_servers, servers);
    let entries = loaded.mcp_servers();
    assert_eq!(entries.entries["time"].args, ["mcp-server-time"]);
}

#[test]
fn the_unfinished_runs_recorded_options_are_read_back_and_an_old_logs_run_has_none() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let options = protocol::event::RunStartOptions {
        model: Some("mock:command-model".into()),
        allowed_tools: Some(vec!["read_file".into(), "run_shell".into()]),
        max_steps: Some(3),
        hold_approvals: true,
        parent_run_id: None,
    };
    let started =
        |run_id: &str, options: Option<protocol::event::RunStartOptions>| Event::RunStarted {
            run_id: run_id.into(),
            prompt: "p".into(),
            client_request_id: None,
            options,
        };
    let mut entries = vec![
        Entry::Header(header()),
        Entry::Event {
            seq: 1,
            event: started("run_1", Some(options.clone())),
        },
        Entry::Event {
            seq: 2,
            event: Event::TurnStarted {
                run_id: "run_1".into(),
                step: 1,
            },
        },
    ];
    write(&path, &entries, "");
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.unfinished_run.as_deref(), Some("run_1"));
    assert_eq!(loaded.progress.options, Some(options.clone()));
    assert_eq!(loaded.progress.steps, 1);

    // On the wire: camelCase, only what was asked for; a plain run carries no `options`.
    let line: serde_json::Value = serde_json::from_str(&encode(&entries[1]).unwrap()).unwrap();
    assert_eq!(
        line["event"]["options"],
        serde_json::json!({
            "model": "mock:command-model",
            "allowedTools": ["read_file", "run_shell"],
            "maxSteps": 3,
            "holdApprovals": true,
        })
    );
    let plain = serde_json::to_value(started("run_2", None)).unwrap();
    assert_eq!(plain.get("options"), None, "{plain}");

    // That run ended; the next one, written by an older daemon, has no options: it does not
    // inherit the previous run's.
    entries.push(Entry::Event {
        seq: 3,
        event: Event::RunFinished {
            run_id: "run_1".into(),
            status: protocol::event::RunStatus::Completed,
            error: None,
            usage: Default::default(),
            cost_usd: None,
        },
    });
    write(
        &path,
        &entries,
        "{\"type\":\"event\",\"seq\":4,\"event\":{\"type\":\"runStarted\",\"runId\":\"run_2\",\"prompt\":\"old\"}}\n",
    );
    let loaded = load(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.unfinished_run.as_deref(), Some("run_2"));
    assert_eq!(loaded.progress.options, None);
}
