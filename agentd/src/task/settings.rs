//! `[tasks]` of config.toml: the limits of the task manager (running subagents, writers per
//! workspace), notification runs and the background shells' output cap, checked where they
//! are read.

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
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self {
            limits: TaskLimits::default(),
            notify_idle_parent: true,
            shell_output_max_bytes: shell_output::DEFAULT_SHELL_OUTPUT_MAX_BYTES,
            max_notification_runs: DEFAULT_MAX_NOTIFICATION_RUNS,
        }
    }
}

/// `[tasks]` as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TasksSection {
    pub max_running: Option<u64>,
    pub parallel_writers: Option<bool>,
    pub notify_idle_parent: Option<bool>,
    pub shell_output_max_bytes: Option<u64>,
    pub max_notification_runs: Option<u64>,
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
        Ok(TaskSettings {
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
