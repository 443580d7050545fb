//! Tests of the live configuration's state machine: valid, invalid, unchanged, back again,
//! a missing file, settings that need a restart, and the watch's poll.

use super::*;

/// A config dir with config.toml written by rename (as editors save), and a live config on it.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    /// Replaces the file whole (a new inode), so every write is a new fingerprint.
    fn write(&self, text: &str) {
        let staged = self.dir.path().join("config.toml.new");
        std::fs::write(&staged, text).unwrap();
        std::fs::rename(&staged, self.path()).unwrap();
    }

    fn live(&self) -> LiveConfig {
        LiveConfig::load(self.path(), Arc::new(|_: &str| None))
    }
}

fn max_steps(live: &LiveConfig) -> u32 {
    live.snapshot().unwrap().max_steps
}

#[tokio::test]
async fn a_valid_edit_is_swapped_in_and_a_snapshot_keeps_its_settings() {
    let fixture = Fixture::new();
    fixture.write("max_steps = 3\n");
    let live = fixture.live();
    let before = live.snapshot().unwrap();
    let loaded_at = live.state().loaded_at;
    assert_eq!(live.file_state().await, FileState::Current);

    fixture.write("max_steps = 7\n");
    assert_eq!(live.file_state().await, FileState::Changed, "not read yet");
    let reload = live.reload().await;
    assert_eq!(reload.outcome, ReloadOutcome::Reloaded);
    assert_eq!(reload.current.unwrap().max_steps, 7);
    assert_eq!(max_steps(&live), 7);
    assert_eq!(
        before.max_steps, 3,
        "a snapshot taken before keeps its settings"
    );
    assert!(live.state().loaded_at >= loaded_at);
    assert_eq!(live.file_state().await, FileState::Current);
}

#[tokio::test]
async fn an_invalid_edit_keeps_the_old_config_and_says_where_until_it_is_fixed() {
    let fixture = Fixture::new();
    fixture.write("max_steps = 3\n");
    let live = fixture.live();

    fixture.write("max_steps = 3\n[permissions\n");
    let reload = live.reload().await;
    assert_eq!(reload.outcome, ReloadOutcome::Invalid);
    let error = reload.error.unwrap();
    let expected = format!("{}:2:", fixture.path().display());
    assert!(error.starts_with(&expected), "file:line:col in {error:?}");
    assert_eq!(max_steps(&live), 3, "the old configuration stays in use");
    assert_eq!(live.state().error.as_deref(), Some(error.as_str()));
    assert_eq!(live.file_state().await, FileState::Invalid);

    // The same file again is still invalid; a fix applies.
    assert_eq!(live.reload().await.outcome, ReloadOutcome::Invalid);
    fixture.write("max_steps = 9\n");
    assert_eq!(live.reload().await.outcome, ReloadOutcome::Reloaded);
    assert_eq!(max_steps(&live), 9);
    assert_eq!(live.state().error, None);
    assert_eq!(live.file_state().await, FileState::Current);
}

#[tokio::test]
async fn the_same_text_is_unchanged_and_going_back_after_an_invalid_edit_recovers() {
    let fixture = Fixture::new();
    fixture.write("max_steps = 3\n");
    let live = fixture.live();
    let loaded_at = live.state().loaded_at;

    fixture.write("max_steps = 3\n");
    let reload = live.reload().await;
    assert_eq!(reload.outcome, ReloadOutcome::Unchanged);
    assert!(!reload.recovered);

    fixture.write("max_steps = 0\n");
    assert_eq!(live.reload().await.outcome, ReloadOutcome::Invalid);
    fixture.write("max_steps = 3\n");
    let reload = live.reload().await;
    assert_eq!(reload.outcome, ReloadOutcome::Unchanged);
    assert!(reload.recovered, "invalid → current again");
    assert_eq!(live.state().loaded_at, loaded_at, "nothing new was loaded");
    assert_eq!(live.file_state().await, FileState::Current);
}

#[tokio::test]
async fn a_file_made_later_loads_and_one_invalid_from_the_start_has_no_config_until_fixed() {
    let fixture = Fixture::new();
    let live = fixture.live();
    assert!(
        live.snapshot().unwrap().source.is_none(),
        "no file: the environment alone"
    );
    fixture.write("max_steps = 4\n");
    assert_eq!(live.reload().await.outcome, ReloadOutcome::Reloaded);
    assert_eq!(max_steps(&live), 4);

    let broken = Fixture::new();
    broken.write("max_steps = \"many\"\n");
    let live = broken.live();
    assert!(live.snapshot().is_err());
    assert_eq!(live.file_state().await, FileState::Invalid);
    broken.write("max_steps = 5\n");
    assert_eq!(live.reload().await.outcome, ReloadOutcome::Reloaded);
    assert_eq!(max_steps(&live), 5);
}

#[tokio::test]
async fn settings_read_only_at_start_are_named_and_the_file_stays_changed() {
    let fixture = Fixture::new();
    fixture.write("max_steps = 3\n");
    let live = fixture.live();
    fixture.write("max_steps = 4\n[memory]\nmemory_chars = 100\n[mcp]\nidle_stop_secs = 5\n");
    let reload = live.reload().await;
    assert_eq!(reload.outcome, ReloadOutcome::Reloaded);
    assert_eq!(reload.needs_restart, ["memory", "mcp.idle_stop_secs"]);
    assert_eq!(max_steps(&live), 4, "the rest applies");
    assert_eq!(live.file_state().await, FileState::Changed);
    // Back to the start's values: nothing waits for a restart any more.
    fixture.write("max_steps = 4\n");
    assert!(live.reload().await.needs_restart.is_empty());
    assert_eq!(live.file_state().await, FileState::Current);
}

#[tokio::test]
async fn the_poll_reloads_an_edit_once_it_held_still_and_sees_a_removed_file() {
    let fixture = Fixture::new();
    fixture.write("max_steps = 3\n");
    let live = fixture.live();
    let mut previous = None;
    assert!(
        !live.poll(&mut previous).await,
        "first look: nothing to compare"
    );
    assert!(!live.poll(&mut previous).await, "unchanged");

    fixture.write("max_steps = 4\n");
    assert!(
        !live.poll(&mut previous).await,
        "just changed: wait one interval"
    );
    assert!(live.poll(&mut previous).await, "held still: reload");
    live.reload().await;
    assert!(!live.poll(&mut previous).await, "read now");

    std::fs::remove_file(fixture.path()).unwrap();
    assert!(!live.poll(&mut previous).await);
    assert!(live.poll(&mut previous).await);
    assert_eq!(live.reload().await.outcome, ReloadOutcome::Reloaded);
    assert_eq!(max_steps(&live), crate::config::DEFAULT_MAX_STEPS);
}

#[tokio::test]
async fn a_missing_directory_is_a_missing_file() {
    let fixture = Fixture::new();
    let path = fixture.dir.path().join("not-yet").join("config.toml");
    let live = LiveConfig::load(path.clone(), Arc::new(|_: &str| None));
    assert!(live.snapshot().is_ok());
    assert_eq!(live.file_state().await, FileState::Current);
    std::fs::create_dir(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "max_steps = 2\n").unwrap();
    assert_eq!(live.file_state().await, FileState::Changed);
    assert_eq!(live.reload().await.outcome, ReloadOutcome::Reloaded);
    assert_eq!(max_steps(&live), 2);
}
