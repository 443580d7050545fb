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
    assert!(!dir.path().join("task_2.out.tmp").exists());
}

#[test]
fn a_task_without_output_reads_empty() {
    let dir = tempfile::tempdir().unwrap();
    let read = read_file(&dir.path().join("none.out"), 0, Some(5)).unwrap();
    assert_eq!(read.text, "");
    assert_eq!(read.next_offset, 0);
    assert!(!read.truncated);
}
