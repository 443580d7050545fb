//! `mcpServerStatus` events: every status change of an MCP server goes to the daemon stream
//! (`daemon/subscribe`, not persisted there) and to the log of each session that uses the
//! server (persisted). A session says which servers it uses by registering the keys of its
//! handles ([`McpStatusRegistry::register`]); the registration ends when its guard is dropped.

use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::SessionManager;
use super::change_forward::{ChangeNames, SESSION_APPEND_DEADLINE, forward_changes};
use super::events::{DaemonStream, EventLog};
use agentd_work::mcp::{McpStatusChange, ServerKey};

/// Which sessions use which servers, for the forwarder.
#[derive(Debug, Default)]
pub struct McpStatusRegistry {
    sessions: Mutex<HashMap<u64, Registered>>,
    next_id: AtomicU64,
}

/// A session's registration; dropping it ends it (the session stopped using its servers, was
/// unloaded or deleted).
#[derive(Debug)]
pub struct McpStatusRegistration {
    registry: Arc<McpStatusRegistry>,
    id: u64,
}

#[derive(Debug)]
struct Registered {
    keys: BTreeSet<ServerKey>,
    /// Weak: a registration never keeps an unloaded session's log open.
    log: Weak<EventLog>,
}

impl McpStatusRegistry {
    pub fn new() -> Arc<McpStatusRegistry> {
        Arc::new(McpStatusRegistry::default())
    }

    /// From now on, status changes of the servers `keys` are appended to `log`.
    pub fn register(
        self: &Arc<Self>,
        log: &Arc<EventLog>,
        keys: impl IntoIterator<Item = ServerKey>,
    ) -> McpStatusRegistration {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let registered = Registered {
            keys: keys.into_iter().collect(),
            log: Arc::downgrade(log),
        };
        self.lock().insert(id, registered);
        McpStatusRegistration {
            registry: self.clone(),
            id,
        }
    }

    /// The logs of the sessions using `key` now.
    fn logs_for(&self, key: &ServerKey) -> Vec<Arc<EventLog>> {
        self.lock()
            .values()
            .filter(|registered| registered.keys.contains(key))
            .filter_map(|registered| registered.log.upgrade())
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Registered>> {
        // Nothing panics while holding it; a poisoned map is still consistent.
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl McpStatusRegistration {
    /// Replace the servers this session uses (a handle acquired or released).
    pub fn set_keys(&self, keys: impl IntoIterator<Item = ServerKey>) {
        if let Some(registered) = self.registry.lock().get_mut(&self.id) {
            registered.keys = keys.into_iter().collect();
        }
    }
}

impl Drop for McpStatusRegistration {
    fn drop(&mut self) {
        self.registry.lock().remove(&self.id);
    }
}

impl SessionManager {
    /// Start forwarding the MCP manager's status changes (stopped with the evictor, at
    /// shutdown). The task belongs to the sessions' task tracker.
    pub fn start_mcp_status_events(&self) {
        let changes = self.deps.mcp.status_changes();
        let registry = self.deps.mcp_status.clone();
        let daemon = self.daemon.clone();
        let stop = self.evictor_stop.clone();
        self.tasks
            .spawn(forward_status_changes(changes, registry, daemon, stop));
    }
}

/// Forward each change to the daemon stream, then to the sessions using the server. A
/// forwarder that falls behind loses changes (said in the daemon log); servers never wait on it.
async fn forward_status_changes(
    changes: broadcast::Receiver<McpStatusChange>,
    registry: Arc<McpStatusRegistry>,
    daemon: DaemonStream,
    stop: CancellationToken,
) {
    let names = ChangeNames {
        missed: "MCP status events",
        one: "an mcpServerStatus event",
    };
    let event_of: fn(&McpStatusChange) -> protocol::event::Event = crate::wire::mcp_status_event;
    forward_changes(changes, daemon, stop, names, event_of, |change, event| {
        log_in_sessions(registry.logs_for(&change.key), event)
    })
    .await;
}

/// Append `event` to each of `logs`, at the same time.
async fn log_in_sessions(
    logs: Vec<Arc<EventLog>>,
    event: protocol::event::Event,
) -> ControlFlow<()> {
    let appends = logs.iter().map(|log| {
        let event = event.clone();
        async move {
            match tokio::time::timeout(SESSION_APPEND_DEADLINE, log.append(event)).await {
                Ok(Ok(_)) => {}
                Ok(Err(err)) => tracing::debug!("an mcpServerStatus event not logged: {err:#}"),
                Err(_) => {
                    tracing::warn!("a session log took too long to take an mcpServerStatus event")
                }
            }
        }
    });
    futures::future::join_all(appends).await;
    ControlFlow::Continue(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::events::{LogPosition, Published};
    use agentd_work::mcp::McpStatus;
    use protocol::event::Event;
    use protocol::mcp::McpServerState;
    use std::time::Duration;
    use tokio_util::task::TaskTracker;

    async fn open_log(dir: &std::path::Path, id: &str, tasks: &TaskTracker) -> Arc<EventLog> {
        let path = dir.join(format!("{id}.jsonl"));
        std::fs::write(&path, "{\"type\":\"header\"}\n").unwrap();
        let position = LogPosition {
            last_seq: 0,
            valid_len: 18,
            missing_newline: false,
        };
        Arc::new(
            EventLog::open(id, path, position, DaemonStream::new(8), tasks)
                .await
                .unwrap(),
        )
    }

    fn key(name: &str) -> ServerKey {
        ServerKey {
            name: name.to_owned(),
            project_root: "/p".into(),
            config_digest: "d".to_owned(),
        }
    }

    fn change(name: &str, status: McpStatus) -> McpStatusChange {
        McpStatusChange {
            key: key(name),
            status,
        }
    }

    async fn next(live: &mut broadcast::Receiver<Arc<Published>>) -> Arc<Published> {
        tokio::time::timeout(Duration::from_secs(10), live.recv())
            .await
            .expect("an event in time")
            .expect("an event")
    }

    #[tokio::test]
    async fn changes_reach_the_daemon_stream_and_only_the_sessions_registered_for_the_server() {
        let dir = tempfile::tempdir().unwrap();
        let tasks = TaskTracker::new();
        let uses_a = open_log(dir.path(), "ses_a", &tasks).await;
        let uses_b = open_log(dir.path(), "ses_b", &tasks).await;
        let registry = McpStatusRegistry::new();
        let registration_a = registry.register(&uses_a, [key("a")]);
        let _registration_b = registry.register(&uses_b, [key("b")]);
        let daemon = DaemonStream::new(8);
        let mut daemon_live = daemon.events.subscribe();
        let mut live_a = uses_a.subscribe(None).await.unwrap().live;
        let mut live_b = uses_b.subscribe(None).await.unwrap().live;
        let (changes, receiver) = broadcast::channel(8);
        let stop = CancellationToken::new();
        tasks.spawn(forward_status_changes(
            receiver,
            registry.clone(),
            daemon,
            stop.clone(),
        ));

        changes
            .send(change("a", McpStatus::Ready { tools: 3 }))
            .unwrap();
        let on_daemon = next(&mut daemon_live).await;
        assert_eq!(on_daemon.seq, 0);
        assert!(!on_daemon.persisted);
        assert!(
            on_daemon.json.get().contains(r#""sessionId":"""#),
            "{}",
            on_daemon.json.get()
        );
        assert!(matches!(
            on_daemon.event,
            Event::McpServerStatus {
                status: McpServerState::Ready,
                tools: Some(3),
                ..
            }
        ));
        let in_a = next(&mut live_a).await;
        assert_eq!((in_a.seq, in_a.persisted), (1, true));
        assert_eq!(in_a.event, on_daemon.event);

        changes
            .send(change(
                "b",
                McpStatus::Failed {
                    error: "exited".to_owned(),
                    stderr_tail: "boom".to_owned(),
                },
            ))
            .unwrap();
        let in_b = next(&mut live_b).await;
        assert_eq!(in_b.seq, 1, "b got nothing of server a");
        assert!(matches!(
            &in_b.event,
            Event::McpServerStatus { stderr_tail: Some(tail), .. } if tail == "boom"
        ));

        // Unregistered: a's log gets no more (changes are forwarded in order, so once b has
        // the later one, the earlier one was handled).
        drop(registration_a);
        changes.send(change("a", McpStatus::Stopped)).unwrap();
        changes.send(change("b", McpStatus::Starting)).unwrap();
        assert_eq!(next(&mut live_b).await.seq, 2);
        assert_eq!(uses_a.last_seq(), 1);

        stop.cancel();
        uses_a.close();
        uses_b.close();
        tasks.close();
        tasks.wait().await;
    }
}
