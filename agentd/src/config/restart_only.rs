//! The settings of config.toml that are read once, when the daemon starts: a reload that
//! changes one of them swaps in the rest and names these (`needsRestart` of `daemon/status`)
//! instead of pretending they applied.

use super::Config;

/// The settings read once at start, by the name `needsRestart` gives them, each with whether
/// it differs between `started` (what the daemon started with) and `new`.
fn settings(started: &Config, new: &Config) -> [(&'static str, bool); 9] {
    [
        // The tool limits are built once, with the tool registry.
        (
            "tool_output_max_chars",
            started.tool_output_max_chars != new.tool_output_max_chars,
        ),
        // The memory stores are opened once with their limits.
        ("memory", started.memory != new.memory),
        // The shell's sandbox is probed once; project MCP servers share it.
        ("sandbox", started.sandbox != new.sandbox),
        // The task manager holds its run slots from its start.
        (
            "tasks.max_running, tasks.parallel_writers",
            started.tasks.limits != new.tasks.limits,
        ),
        (
            "tasks.shell_output_max_bytes",
            started.tasks.shell_output_max_bytes != new.tasks.shell_output_max_bytes,
        ),
        // The MCP manager's idle stop and confinement are fixed when it is made.
        (
            "mcp.idle_stop_secs",
            started.mcp.idle_stop != new.mcp.idle_stop,
        ),
        (
            "mcp.unconfined",
            started.mcp.unconfined != new.mcp.unconfined,
        ),
        // The checkpoint stores are made once, with their settings.
        ("checkpoints", started.checkpoints != new.checkpoints),
        (
            "extensions.call_timeout_ms",
            started.extension_call_timeout != new.extension_call_timeout,
        ),
    ]
}

/// The settings read once at start that `new` changes from `started`, by name.
pub(super) fn changed(started: &Config, new: &Config) -> Vec<String> {
    settings(started, new)
        .into_iter()
        .filter(|(_, differs)| *differs)
        .map(|(name, _)| name.to_owned())
        .collect()
}
