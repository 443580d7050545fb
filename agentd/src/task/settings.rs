//! `[tasks]` of config.toml: the limits of the task manager (running subagents, writers per
//! workspace), notification runs, the background shells' output cap, how many finished
//! records are kept (`keep_finished`, `keep_finished_days`) and when a task counts as stalled
//! (`stall_secs`), checked where they are read.

use super::shell_output;

/// Default cap on running subagents (`[tasks] max_running`).
pub const DEFAULT_MAX_RUNNING: usize = 4;

/// Limits of the task manager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskLimits {
    pub max_running: usize,
    /// More than one writing agent in one workspace at a time.
    pub parallel_writers: bool,
}

impl Default for TaskLimits {
    fn default() -> Self {
        Self {
            max_running: DEFAULT_MAX_RUNNING,
            parallel_writers: false,
        }
    }
}

/// The most `[tasks] max_running` may be: each running subagent holds a model stream and a
/// session in memory.
pub const MAX_MAX_RUNNING: u64 = 64;

/// Runs in a row a session starts for background task notifications without user input
/// (`[tasks] max_notification_runs`): enough for a model that works through a few rounds of
/// background work on its own, few enough that one starting a new task on every result stops.
pub const DEFAULT_MAX_NOTIFICATION_RUNS: u32 = 20;

/// The most `[tasks] max_notification_runs` may be: each such run costs model tokens nobody
/// asked for.
pub const MAX_MAX_NOTIFICATION_RUNS: u64 = 1000;

/// Finished task records kept at most (`[tasks] keep_finished`): the newest are kept, older
/// ones pruned with their output files. Enough to look back over weeks of a busy day's work,
/// few enough that the records in memory stay small.
pub const DEFAULT_KEEP_FINISHED: usize = 500;

/// The most `[tasks] keep_finished` may be: every record is held in memory.
pub const MAX_KEEP_FINISHED: u64 = 100_000;

/// Days a finished task's record is kept (`[tasks] keep_finished_days`; 0: no age limit).
pub const DEFAULT_KEEP_FINISHED_DAYS: u32 = 30;

/// The most `[tasks] keep_finished_days` may be (ten years).
pub const MAX_KEEP_FINISHED_DAYS: u64 = 3650;

/// Seconds without progress after which a running task shows `stalled` (`[tasks]
/// stall_secs`; 0: never). Five minutes: longer than a slow model's answer or a quiet build
/// step, short enough that a stuck child is noticed before the user gives up on it.
pub const DEFAULT_STALL_SECS: u64 = 300;

/// The most `[tasks] stall_secs` may be (a day).
pub const MAX_STALL_SECS: u64 = 86_400;

/// Which finished records are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// The newest this many finished records are kept (at least 1).
    pub keep_finished: usize,
    /// Finished records older than this are pruned (None: no age limit).
    pub max_age: Option<std::time::Duration>,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            keep_finished: DEFAULT_KEEP_FINISHED,
            max_age: days(u64::from(DEFAULT_KEEP_FINISHED_DAYS)),
        }
    }
}

fn days(days: u64) -> Option<std::time::Duration> {
    (days > 0).then(|| std::time::Duration::from_secs(days * 86_400))
}

/// `[tasks]` of config.toml, resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskSettings {
    pub limits: TaskLimits,
    /// A background task's result starts a run of its idle parent (`notify_idle_parent`);
    /// when false it waits as a follow-up for the parent's next run.
    pub notify_idle_parent: bool,
    /// The cap of a background shell's output file (`shell_output_max_bytes`; head and tail
    /// kept).
    pub shell_output_max_bytes: usize,
    /// Runs in a row started by task notifications without user input, after which results
    /// wait for the user's next prompt (`max_notification_runs`).
    pub max_notification_runs: u32,
    /// Which finished records are kept (`keep_finished`, `keep_finished_days`).
    pub retention: Retention,
    /// A running task with no progress for this long shows `stalled` (`stall_secs`; None:
    /// never).
    pub stall: Option<std::time::Duration>,
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self {
            limits: TaskLimits::default(),
            notify_idle_parent: true,
            shell_output_max_bytes: shell_output::DEFAULT_SHELL_OUTPUT_MAX_BYTES,
            max_notification_runs: DEFAULT_MAX_NOTIFICATION_RUNS,
            retention: Retention::default(),
            stall: Some(std::time::Duration::from_secs(DEFAULT_STALL_SECS)),
        }
    }
}

/// `[tasks]` as written.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TasksSection {
    pub max_running: Option<u64>,
    pub parallel_writers: Option<bool>,
    pub notify_idle_parent: Option<bool>,
    pub shell_output_max_bytes: Option<u64>,
    pub max_notification_runs: Option<u64>,
    pub keep_finished: Option<u64>,
    pub keep_finished_days: Option<u64>,
    pub stall_secs: Option<u64>,
}

impl TasksSection {
    /// The settings, or why not (`max_running` between 1 and [`MAX_MAX_RUNNING`],
    /// `max_notification_runs` between 1 and [`MAX_MAX_NOTIFICATION_RUNS`]).
    pub fn resolve(&self) -> Result<TaskSettings, String> {
        let defaults = TaskSettings::default();
        let max_running = self
            .max_running
            .unwrap_or(defaults.limits.max_running as u64);
        if !(1..=MAX_MAX_RUNNING).contains(&max_running) {
            return Err(format!(
                "tasks.max_running = {max_running} must be between 1 and {MAX_MAX_RUNNING}; set one in that range, or remove it for the default ({DEFAULT_MAX_RUNNING})"
            ));
        }
        let shell_output_max_bytes = self
            .shell_output_max_bytes
            .unwrap_or(defaults.shell_output_max_bytes as u64);
        if !(shell_output::MIN_SHELL_OUTPUT_MAX_BYTES..=shell_output::MAX_SHELL_OUTPUT_MAX_BYTES)
            .contains(&shell_output_max_bytes)
        {
            return Err(format!(
                "tasks.shell_output_max_bytes = {shell_output_max_bytes} must be between {} and {}; set one in that range, or remove it for the default ({})",
                shell_output::MIN_SHELL_OUTPUT_MAX_BYTES,
                shell_output::MAX_SHELL_OUTPUT_MAX_BYTES,
                shell_output::DEFAULT_SHELL_OUTPUT_MAX_BYTES
            ));
        }
        let max_notification_runs = self
            .max_notification_runs
            .unwrap_or(u64::from(defaults.max_notification_runs));
        if !(1..=MAX_MAX_NOTIFICATION_RUNS).contains(&max_notification_runs) {
            return Err(format!(
                "tasks.max_notification_runs = {max_notification_runs} must be between 1 and {MAX_MAX_NOTIFICATION_RUNS}; set one in that range, or remove it for the default ({DEFAULT_MAX_NOTIFICATION_RUNS}); to never start a run for a task's result, set notify_idle_parent = false"
            ));
        }
        let keep_finished = self.keep_finished.unwrap_or(DEFAULT_KEEP_FINISHED as u64);
        if !(1..=MAX_KEEP_FINISHED).contains(&keep_finished) {
            return Err(format!(
                "tasks.keep_finished = {keep_finished} must be between 1 and {MAX_KEEP_FINISHED}; set one in that range, or remove it for the default ({DEFAULT_KEEP_FINISHED})"
            ));
        }
        let keep_finished_days = self
            .keep_finished_days
            .unwrap_or(u64::from(DEFAULT_KEEP_FINISHED_DAYS));
        if keep_finished_days > MAX_KEEP_FINISHED_DAYS {
            return Err(format!(
                "tasks.keep_finished_days = {keep_finished_days} must be at most {MAX_KEEP_FINISHED_DAYS}; set one in that range, 0 for no age limit, or remove it for the default ({DEFAULT_KEEP_FINISHED_DAYS})"
            ));
        }
        let stall_secs = self.stall_secs.unwrap_or(DEFAULT_STALL_SECS);
        if stall_secs > MAX_STALL_SECS {
            return Err(format!(
                "tasks.stall_secs = {stall_secs} must be at most {MAX_STALL_SECS}; set one in that range, 0 to never mark a task stalled, or remove it for the default ({DEFAULT_STALL_SECS})"
            ));
        }
        Ok(TaskSettings {
            retention: Retention {
                keep_finished: usize::try_from(keep_finished).unwrap_or(DEFAULT_KEEP_FINISHED),
                max_age: days(keep_finished_days),
            },
            stall: (stall_secs > 0).then(|| std::time::Duration::from_secs(stall_secs)),
            limits: TaskLimits {
                max_running: max_running as usize,
                parallel_writers: self
                    .parallel_writers
                    .unwrap_or(defaults.limits.parallel_writers),
            },
            notify_idle_parent: self
                .notify_idle_parent
                .unwrap_or(defaults.notify_idle_parent),
            shell_output_max_bytes: usize::try_from(shell_output_max_bytes)
                .unwrap_or(defaults.shell_output_max_bytes),
            max_notification_runs: u32::try_from(max_notification_runs)
                .unwrap_or(defaults.max_notification_runs),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_and_stall_have_defaults_bounds_and_an_off_switch() {
        let defaults = TasksSection::default().resolve().unwrap();
        assert_eq!(defaults.retention.keep_finished, DEFAULT_KEEP_FINISHED);
        assert_eq!(
            defaults.retention.max_age,
            Some(std::time::Duration::from_secs(30 * 86_400))
        );
        assert_eq!(
            defaults.stall,
            Some(std::time::Duration::from_secs(DEFAULT_STALL_SECS))
        );
        let off = TasksSection {
            keep_finished_days: Some(0),
            stall_secs: Some(0),
            keep_finished: Some(7),
            ..Default::default()
        }
        .resolve()
        .unwrap();
        assert_eq!(
            (off.retention.keep_finished, off.retention.max_age),
            (7, None)
        );
        assert_eq!(off.stall, None);
        for bad in [
            TasksSection {
                keep_finished: Some(0),
                ..Default::default()
            },
            TasksSection {
                keep_finished_days: Some(MAX_KEEP_FINISHED_DAYS + 1),
                ..Default::default()
            },
            TasksSection {
                stall_secs: Some(MAX_STALL_SECS + 1),
                ..Default::default()
            },
        ] {
            let err = bad.resolve().unwrap_err();
            assert!(err.contains("must be"), "{err}");
        }
    }
}
