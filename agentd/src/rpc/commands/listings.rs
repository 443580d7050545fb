//! The built-ins that show a listing (`/memory`, `/skills`, `/agents`, `/tasks`, `/mcp`): the
//! answer of the method that lists it (`memory/get`, `skills/list`, …), as lines of text.

use std::sync::Arc;

use super::super::RpcResult;
use crate::server::ConnectionContext;
use crate::state::DaemonState;
use crate::task::{TaskFilter, TaskRecord};

/// Entries `/memory` shows of one store; the rest is counted.
const MEMORY_ENTRIES_SHOWN: usize = 50;

/// `/memory`.
pub(super) async fn memory(
    state: &Arc<DaemonState>,
    cwd: &str,
    connection: &Arc<ConnectionContext>,
) -> RpcResult<String> {
    let params = protocol::memory::MemoryGetParams {
        cwd: cwd.to_owned(),
    };
    let got = super::super::memory::get(Arc::clone(state), params, Arc::clone(connection)).await?;
    let mut lines = Vec::new();
    if !got.enabled {
        lines.push(
            "memory is off ([memory] enabled = false): sessions neither see nor save it".to_owned(),
        );
    }
    for (title, store) in [("memory", &got.memory), ("user", &got.user)] {
        lines.push(format!(
            "{title}: {} ({}; {} of {} chars)",
            store.path,
            store.whose(),
            store.usage_chars,
            store.limit_chars
        ));
        if store.entries.is_empty() {
            lines.push("  (empty)".to_owned());
        }
        for entry in store.entries.iter().take(MEMORY_ENTRIES_SHOWN) {
            lines.push(format!(
                "  - {}",
                entry.split_whitespace().collect::<Vec<_>>().join(" ")
            ));
        }
        if store.entries.len() > MEMORY_ENTRIES_SHOWN {
            lines.push(format!(
                "  … {} more",
                store.entries.len() - MEMORY_ENTRIES_SHOWN
            ));
        }
    }
    Ok(lines.join("\n"))
}

/// `/skills`.
pub(super) async fn skills(
    state: &Arc<DaemonState>,
    cwd: &str,
    connection: &Arc<ConnectionContext>,
) -> RpcResult<String> {
    let params = protocol::skills::SkillsListParams {
        cwd: cwd.to_owned(),
    };
    let listed =
        super::super::skills::list(Arc::clone(state), params, Arc::clone(connection)).await?;
    let mut lines: Vec<String> = listed
        .skills
        .iter()
        .map(|skill| format!("{}: {}", skill.name, skill.description))
        .collect();
    if lines.is_empty() {
        lines.push("no skills here".to_owned());
    }
    lines.extend(
        listed
            .warnings
            .iter()
            .map(|warning| format!("not used: {warning}")),
    );
    Ok(lines.join("\n"))
}

/// `/agents`.
pub(super) async fn agents(
    state: &Arc<DaemonState>,
    cwd: &str,
    connection: &Arc<ConnectionContext>,
) -> RpcResult<String> {
    let params = protocol::agents::AgentsListParams {
        cwd: cwd.to_owned(),
    };
    let listed =
        super::super::agents::list(Arc::clone(state), params, Arc::clone(connection)).await?;
    let mut lines: Vec<String> = listed
        .agents
        .iter()
        .map(|agent| format!("{}: {}", agent.name, agent.description))
        .collect();
    lines.extend(
        listed
            .problems
            .iter()
            .map(|problem| format!("not used: {}: {}", problem.path, problem.reason)),
    );
    Ok(lines.join("\n"))
}

/// `/tasks`: the session's pending and running tasks.
pub(super) fn tasks(state: &DaemonState, session_id: &str) -> String {
    let filter = TaskFilter {
        parent_session_id: Some(session_id.to_owned()),
        status: None,
        all: false,
    };
    let tasks: Vec<String> = state
        .tasks
        .list(&filter)
        .iter()
        .map(TaskRecord::to_info)
        .map(|task| {
            format!(
                "{} {}: {}",
                task.task_id,
                task.status.as_str(),
                task.description
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        })
        .collect();
    if tasks.is_empty() {
        return "no task of this session is pending or running".to_owned();
    }
    tasks.join("\n")
}

/// `/mcp`: the servers configured for the directory and the ones running.
pub(super) async fn mcp(
    state: &Arc<DaemonState>,
    cwd: &str,
    connection: &Arc<ConnectionContext>,
) -> RpcResult<String> {
    let params = protocol::mcp::McpListParams {
        cwd: Some(cwd.to_owned()),
    };
    let listed = super::super::mcp::list(Arc::clone(state), params, Arc::clone(connection)).await?;
    let wire = |value: serde_json::Result<serde_json::Value>| {
        value
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    let mut lines: Vec<String> = listed
        .servers
        .iter()
        .map(|server| {
            let mut line = format!(
                "{} ({}): {}, {} tools",
                server.name,
                wire(serde_json::to_value(server.source)),
                wire(serde_json::to_value(server.status)),
                server.tools.len()
            );
            if let Some(error) = &server.last_error {
                line.push_str(&format!("; last error: {error}"));
            }
            line
        })
        .collect();
    if lines.is_empty() {
        lines.push("no MCP servers here".to_owned());
    }
    lines.extend(
        listed
            .problems
            .iter()
            .map(|problem| format!("not used: {}", problem.reason)),
    );
    Ok(lines.join("\n"))
}
