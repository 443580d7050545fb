//! Tests of the capped output file and of reading it.

use super::*;

#[tokio::test]
async fn under_the_cap_the_file_holds_everything_and_reads_from_an_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("task_1.out");
    let mut file = OutputFile::create(path.clone(), 1024).await.unwrap();
    file.push(b"one\ntwo\n").await.unwrap();
    file.push(b"three\n").await.unwrap();
    file.finish().await.unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let all = read_file(&path, 0, None).unwrap();
    assert_eq!(all.text, "one\ntwo\nthree\n");
    assert_eq!(all.next_offset, 14);
    assert!(!all.truncated);
    let rest = read_file(&path, 8, None).unwrap();
    assert_eq!(rest.text, "three\n");
    let tail = read_file(&path, 0, Some(2)).unwrap();
    assert_eq!(tail.text, "two\nthree\n");
    assert!(tail.truncated);
    let past = read_file(&path, 99, None).unwrap();
    assert_eq!(past.text, "");
    assert_eq!(past.next_offset, 14);
}

#[tokio::test]
async fn past_the_cap_the_head_and_the_latest_tail_are_kept_with_a_marker() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("task_2.out");
    let mut file = OutputFile::create(path.clone(), 100).await.unwrap();
    file.push(b"FIRST-LINE\n").await.unwrap();
    for line in 0..1000 {
        file.push(format!("line {line}\n").as_bytes())
            .await
            .unwrap();
    }
    file.push(b"LAST-LINE\n").await.unwrap();
    file.finish().await.unwrap();
    let read = read_file(&path, 0, None).unwrap();
    assert!(read.text.starts_with("FIRST-LINE\n"), "{}", read.text);
    assert!(
        read.text.ends_with("line 999\nLAST-LINE\n"),
        "{}",
        read.text
    );
    assert!(read.text.contains("bytes omitted …]"), "{}", read.text);
    assert!(read.text.len() < 200, "{}", read.text);
    assert!(read.truncated);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("task_2.out")]);
}

#[test]
fn a_task_without_output_reads_empty() {
    let dir = tempfile::tempdir().unwrap();
    let read = read_file(&dir.path().join("none.out"), 0, Some(5)).unwrap();
    assert_eq!(read.text, "");
    assert_eq!(read.next_offset, 0);
    assert!(!read.truncated);
}

#[test]
fn the_cap_is_configured_in_tasks_and_bounded() {
    let section = |bytes: Option<u64>| crate::task::TasksSection {
        max_running: None,
        parallel_writers: None,
        notify_idle_parent: None,
        max_notification_runs: None,
        shell_output_max_bytes: bytes,
        ..Default::default()
    };
    assert_eq!(
        section(None).resolve().unwrap().shell_output_max_bytes,
        DEFAULT_SHELL_OUTPUT_MAX_BYTES
    );
    assert_eq!(
        section(Some(4096))
            .resolve()
            .unwrap()
            .shell_output_max_bytes,
        4096
    );
    for wrong in [0, 1023, MAX_SHELL_OUTPUT_MAX_BYTES + 1] {
        let error = section(Some(wrong)).resolve().unwrap_err();
        assert!(
            error.starts_with(&format!(
                "tasks.shell_output_max_bytes = {wrong} must be between"
            )),
            "{error}"
        );
    }
}

#[tokio::test]
async fn offsets_count_what_the_command_wrote_across_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("task_3.out");
    let mut file = OutputFile::create(path.clone(), 20).await.unwrap();
    file.push(b"0123456789").await.unwrap();
    file.finish().await.unwrap();
    let first = read_file(&path, 0, None).unwrap();
    assert_eq!((first.text.as_str(), first.next_offset), ("0123456789", 10));
    for _ in 0..10 {
        file.push(b"abcdefghij").await.unwrap();
    }
    file.push(b"KLMNOPQRST").await.unwrap();
    file.finish().await.unwrap();
    // 120 bytes written: the head 0..10, then 100 cut, then the last 10 kept.
    let next = read_file(&path, first.next_offset, None).unwrap();
    assert_eq!(next.next_offset, 120);
    assert_eq!(next.text, "\n[… 100 bytes omitted …]\nKLMNOPQRST");
    assert!(next.truncated);
    let inside_the_tail = read_file(&path, 115, None).unwrap();
    assert_eq!(inside_the_tail.text, "PQRST");
    assert!(!inside_the_tail.truncated);
    let at_the_end = read_file(&path, 120, None).unwrap();
    assert_eq!(
        (at_the_end.text.as_str(), at_the_end.next_offset),
        ("", 120)
    );
    let inside_the_head = read_file(&path, 5, None).unwrap();
    assert_eq!(
        inside_the_head.text,
        "56789\n[… 100 bytes omitted …]\nKLMNOPQRST"
    );
}
