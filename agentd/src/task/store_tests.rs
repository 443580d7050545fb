//! Tests of the task record files: the format version, files from before it, newer formats.

use super::*;
use protocol::task::{TaskKind, TaskStatus};

fn sample(task_id: &str) -> TaskRecord {
    TaskRecord {
        task_id: task_id.to_owned(),
        kind: TaskKind::Shell,
        status: TaskStatus::Completed,
        parent_session_id: Some("ses_parent".to_owned()),
        child_session_id: None,
        agent_type: None,
        description: "cargo build".to_owned(),
        cwd: "/work/project".to_owned(),
        created_at: "2026-11-30T10:00:00Z".to_owned(),
        started_at: Some("2026-11-30T10:00:01Z".to_owned()),
        finished_at: Some("2026-11-30T10:00:09Z".to_owned()),
        result: Some("exit code 0".to_owned()),
        error: None,
        exit_code: Some(0),
        usage: Default::default(),
        notification_pending: false,
        not_persisted: false,
        stalled: false,
        background: false,
    }
}

fn tasks_dir() -> (tempfile::TempDir, PathBuf) {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("tasks");
    agentd_core::paths::prepare_private_dir(&dir).unwrap();
    (state, dir)
}

#[test]
fn a_record_round_trips_with_its_format_version() {
    let (_state, dir) = tasks_dir();
    let record = sample("task_01");
    write_record(&dir, &record).unwrap();
    let text = std::fs::read_to_string(record_path(&dir, "task_01")).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(file["version"], RECORD_FORMAT_VERSION, "{text}");
    let loaded = load_records(&dir).unwrap();
    assert!(loaded.unreadable.is_empty(), "{:?}", loaded.unreadable);
    assert_eq!(loaded.records, vec![record]);
}

/// The file form of a record, field by field: a change of the record or of the protocol's
/// value types it uses (kind, status, usage) shows here as a change of the stored format.
#[test]
fn the_file_form_of_a_record_is_pinned() {
    let bytes = encode_record(&sample("task_01")).unwrap();
    let expected = concat!(
        r#"{"version":1,"taskId":"task_01","kind":"shell","status":"completed","#,
        r#""parentSessionId":"ses_parent","description":"cargo build","cwd":"/work/project","#,
        r#""createdAt":"2026-11-30T10:00:00Z","startedAt":"2026-11-30T10:00:01Z","#,
        r#""finishedAt":"2026-11-30T10:00:09Z","result":"exit code 0","exitCode":0,"#,
        r#""usage":{"inputTokens":0,"outputTokens":0,"cachedInputTokens":0,"#,
        r#""cacheCreationInputTokens":0}}"#
    );
    assert_eq!(String::from_utf8(bytes).unwrap(), expected);
}

#[test]
fn a_versionless_file_from_before_loads_as_format_one() {
    let (_state, dir) = tasks_dir();
    // What a daemon wrote before records had a format version.
    let before = r#"{"taskId":"task_02","kind":"subagent","status":"interrupted","agentType":"explore","description":"look around","cwd":"/w","createdAt":"2026-01-01T00:00:00Z","finishedAt":"2026-01-01T00:01:00Z","error":"stopped","usage":{"inputTokens":5,"outputTokens":7,"cachedInputTokens":0,"cacheCreationInputTokens":0}}"#;
    std::fs::write(record_path(&dir, "task_02"), before).unwrap();
    let loaded = load_records(&dir).unwrap();
    assert!(loaded.unreadable.is_empty(), "{:?}", loaded.unreadable);
    let [record] = loaded.records.as_slice() else {
        panic!("{:?}", loaded.records);
    };
    assert_eq!(record.task_id, "task_02");
    assert_eq!(record.kind, TaskKind::Subagent);
    assert_eq!(record.status, TaskStatus::Interrupted);
    assert_eq!(record.agent_type.as_deref(), Some("explore"));
    assert_eq!(record.usage.output_tokens, 7);
}

#[test]
fn a_newer_format_is_refused_naming_the_file_and_the_version() {
    let (_state, dir) = tasks_dir();
    write_record(&dir, &sample("task_03")).unwrap();
    let newer = record_path(&dir, "task_04");
    std::fs::write(
        &newer,
        r#"{"version":2,"taskId":"task_04","kind":"shell","status":"completed","somethingNew":1}"#,
    )
    .unwrap();
    let loaded = load_records(&dir).unwrap();
    let ids: Vec<_> = loaded.records.iter().map(|r| r.task_id.as_str()).collect();
    assert_eq!(ids, ["task_03"]);
    let [(path, reason)] = loaded.unreadable.as_slice() else {
        panic!("{:?}", loaded.unreadable);
    };
    assert_eq!(path, &newer);
    assert!(reason.contains("task record format 2"), "{reason}");
    assert!(reason.contains(&newer.display().to_string()), "{reason}");
    assert!(newer.exists(), "a newer record must be left on disk");
}

#[test]
fn a_corrupt_record_is_unreadable_and_left_on_disk() {
    let (_state, dir) = tasks_dir();
    let corrupt = record_path(&dir, "task_05");
    std::fs::write(&corrupt, "{not json").unwrap();
    let loaded = load_records(&dir).unwrap();
    assert!(loaded.records.is_empty());
    let [(path, reason)] = loaded.unreadable.as_slice() else {
        panic!("{:?}", loaded.unreadable);
    };
    assert_eq!(path, &corrupt);
    assert!(reason.contains("is not a task record"), "{reason}");
    assert!(corrupt.exists());
}

#[test]
fn temp_files_a_killed_writer_left_are_removed_at_load() {
    let (_state, dir) = tasks_dir();
    write_record(&dir, &sample("task_06")).unwrap();
    // One of the writer before `atomic_file`, one of `atomic_file`, one of an output rewrite.
    for leftover in [
        ".tmp.0123abcd",
        ".task_06.json.41.0.tmp",
        ".task_06.out.41.1.tmp",
    ] {
        std::fs::write(dir.join(leftover), "torn").unwrap();
    }
    let loaded = load_records(&dir).unwrap();
    assert_eq!(loaded.records.len(), 1);
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("task_06.json")]);
}
