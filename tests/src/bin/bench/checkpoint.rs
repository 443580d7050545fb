//! Checkpoint figures of `bench` (`BENCH_ONLY=checkpoint` runs only these): a generated tree
//! of 10,000 files (100 directories of 100 small files) checkpointed through the daemon's own
//! store (`agentd_work::checkpoint`, the `git` command): the first checkpoint (every file
//! hashed), one of the unchanged tree (the usual one, before a batch that changed nothing
//! since), one after a single file changed, and a rewind's plan and restore of that file.

use std::time::{Duration, Instant};

use agentd_work::checkpoint::{CheckpointSettings, Checkpoints};

use super::report::Row;

/// Files of the generated tree.
const FILES: usize = 10_000;
/// Checkpoints timed for each figure (the median is shown).
const TIMED: usize = 20;

pub async fn figures(scale: usize, rows: &mut Vec<Row>) {
    let files = FILES * scale;
    let dir = tempfile::tempdir().expect("temp dir");
    let work = dir.path().join("work");
    for n in 0..files {
        let sub = work.join(format!("d{:03}", n / 100));
        if n % 100 == 0 {
            std::fs::create_dir_all(&sub).expect("mkdir");
        }
        std::fs::write(sub.join(format!("f{n}.txt")), format!("file {n}\n")).expect("write");
    }
    let checkpoints = Checkpoints::new(
        dir.path().join("store"),
        CheckpointSettings::default(),
        None,
    );
    if let Some(reason) = checkpoints.status().await.reason {
        rows.push(Row::text("checkpoints", format!("skipped: {reason}")));
        return;
    }
    let started = Instant::now();
    let first = checkpoints.snapshot(&work).await.expect("first checkpoint");
    let first_time = started.elapsed();
    let mut unchanged = Vec::with_capacity(TIMED);
    for _ in 0..TIMED {
        let started = Instant::now();
        let again = checkpoints.snapshot(&work).await.expect("checkpoint");
        unchanged.push(started.elapsed());
        assert_eq!(again.commit, first.commit);
    }
    let mut one_changed = Vec::with_capacity(TIMED);
    let mut last = first.clone();
    for round in 0..TIMED {
        std::fs::write(work.join("d000/f0.txt"), format!("changed {round}\n")).expect("write");
        let started = Instant::now();
        last = checkpoints.snapshot(&work).await.expect("checkpoint");
        one_changed.push(started.elapsed());
    }
    let started = Instant::now();
    let plan = checkpoints
        .plan(&work, &first.commit, &last, Some(&last.commit))
        .await
        .expect("plan");
    let done = checkpoints.apply(&work, &plan).await.expect("restore");
    let rewind = started.elapsed();
    assert_eq!(done.restored, 1);
    rows.push(Row::ms(
        format!("checkpoint of a {files}-file tree, the first"),
        first_time,
    ));
    rows.push(Row::with(
        "  unchanged since the last (goal: under 50 ms)",
        ms(median(&mut unchanged)),
        median(&mut unchanged).as_secs_f64() * 1000.0,
        "ms",
    ));
    rows.push(Row::with(
        "  one file changed",
        ms(median(&mut one_changed)),
        median(&mut one_changed).as_secs_f64() * 1000.0,
        "ms",
    ));
    rows.push(Row::ms("  rewind of that file (plan and restore)", rewind));
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(time: Duration) -> String {
    format!("{:.1} ms", time.as_secs_f64() * 1000.0)
}
