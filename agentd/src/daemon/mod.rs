//! Startup and shutdown: paths, the single-instance lock, the stale-socket check, binding the
//! socket, signals, and the graceful drain that ends with the socket removed and exit 0.
//! The socket is 0600, its dir made 0700 only when the daemon creates it; a socket passed by
//! systemd is served and never unlinked. The process is hardened before any thread starts
//! (`platform::harden_process`: not dumpable, no core file). What differs per platform (the
//! socket or named pipe, signals, systemd) is in [`crate::server::os`]. A stop interrupts runs, then drains
//! in-flight requests, all within [`STOP_DEADLINE`]; a second signal exits at once.

mod lock;

pub mod service;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

pub use lock::InstanceLock;

use crate::server::os as platform;
use crate::server::{self, ConnectionStats, ServerLimits};
use crate::session::{SessionDeps, SessionManager};
use crate::state::DaemonState;
use agentd_core::paths::{self, Paths};

/// How the daemon was asked to start.
#[derive(Clone, Debug, Default)]
pub struct DaemonOptions {
    /// `--socket`: overrides `AGENTD_SOCKET` and the default path.
    pub socket: Option<PathBuf>,
}

/// Run the daemon until a signal or `daemon/shutdown`. Returns once the socket is removed and
/// every connection has finished (or the drain deadline passed).
pub async fn run(options: DaemonOptions) -> Result<()> {
    let paths = Paths::resolve(options.socket.as_deref())?;
    let limits = ServerLimits::from_env()?;
    // Before the lock file is created beside it: a path that holds anything but a socket is
    // refused (checked again under the lock, where a stale socket is removed).
    platform::prepare_endpoint(&paths.socket)?;
    // Transcripts: private whatever the umask, and so is the state dir above them (logging
    // prepared it already when `run_main` started the daemon). The data dir holds the user's
    // memory stores: private too, before anything is written there.
    let (state_dir, sessions_dir) = (paths.state_dir.clone(), paths.sessions_dir.clone());
    let data_dir = paths.data_dir.clone();
    let (tightened, data_tightened) = tokio::task::spawn_blocking(move || {
        anyhow::Ok((
            paths::prepare_private_dir(&state_dir)? | paths::prepare_private_dir(&sessions_dir)?,
            paths::prepare_private_dir(&data_dir)?,
        ))
    })
    .await
    .context("cannot prepare the state and data directories")??;
    if tightened {
        tracing::info!(dir = %paths.state_dir.display(), "made the state directory private (0700)");
    }
    if data_tightened {
        tracing::info!(dir = %paths.data_dir.display(), "made the data directory private (0700)");
    }

    platform::raise_open_file_limit();
    // Before the activation variables are read: whether systemd runs us, for `daemon/status`.
    let service_unit = service::systemd_unit();
    let executable = std::env::current_exe().ok();
    let activated = platform::activated_listener()?;
    let _lock = InstanceLock::acquire(&paths.lock, &paths.socket)?;
    // A socket systemd handed over is systemd's: never replaced, never removed by us.
    let owns_socket = activated.is_none();
    let listener = match activated {
        Some(listener) => {
            tracing::info!(
                pid = std::process::id(),
                "agentd listening on the socket systemd passed"
            );
            listener
        }
        None => {
            platform::remove_stale_endpoint(&paths.socket).await?;
            let listener = platform::bind(&paths.socket)?;
            tracing::info!(socket = %paths.socket.display(), pid = std::process::id(), "agentd listening");
            listener
        }
    };

    // We own the socket now: kill what a previous daemon on it left running, before any tool.
    let (state_dir, socket) = (paths.state_dir.clone(), paths.socket.clone());
    tokio::task::spawn_blocking(move || {
        agentd_policy::process::supervisor::install(&state_dir, &socket)
    })
    .await
    .context("cannot set up process supervision")?
    .context("cannot set up process supervision")?;
    let stop_reaping = CancellationToken::new();
    let reaper = tokio::spawn(agentd_policy::process::supervisor::reap_orphans(
        stop_reaping.clone(),
    ));

    let sessions = Arc::new(SessionManager::open(session_deps(&paths).await?).await?);
    sessions.start_evictor();
    sessions.start_mcp_status_events();
    sessions.start_task_events();
    // Runs the daemon was in when it last stopped go on (in the background).
    sessions.resume_marked_runs().await;
    sessions.start_config_watch();
    let shutdown = CancellationToken::new();
    let state = Arc::new(DaemonState {
        paths: paths.clone(),
        started_at: SystemTime::now(),
        started: Instant::now(),
        shutdown: shutdown.clone(),
        connections: Arc::new(ConnectionStats::default()),
        approvals: sessions.approvals(),
        trust: sessions.trust(),
        memory: sessions.memory(),
        mcp: sessions.mcp(),
        tasks: sessions.tasks(),
        extensions: sessions.extensions(),
        sessions: sessions.clone(),
        service_unit,
        executable,
    });
    let module = crate::rpc::build(state.clone())?;
    let signals = platform::spawn_signal_listener(shutdown.clone(), sessions.clone())?;
    // Under systemd (Type=notify) say we are ready; elsewhere this does nothing.
    platform::notify_ready();

    // Runs are interrupted as soon as the stop begins, while clients are still connected to
    // see their `runFinished`: connections are closed only once the runs have stopped (new
    // work is refused meanwhile, `rpc::refuse_if_stopping`). Closing them on `shutdown` itself
    // raced the runs, and subscribers lost the `runFinished{interrupted}` of their run.
    let close_connections = CancellationToken::new();
    let stop_sessions = {
        let shutdown = shutdown.clone();
        let close_connections = close_connections.clone();
        tokio::spawn(async move {
            shutdown.cancelled().await;
            platform::notify_stopping();
            let mcp = sessions.mcp();
            // Top-level runs are suspended first (they resume at the next start), before a
            // subagent they wait for is stopped under them. Then tasks: subagents are
            // cancelled and background shells killed, so their runs end with the others.
            sessions.suspend_runs(RUN_STOP_DEADLINE / 2).await;
            sessions.tasks().shutdown().await;
            sessions.shell_tasks().shutdown(RUN_STOP_DEADLINE).await;
            sessions.shutdown(RUN_STOP_DEADLINE).await;
            // Runs have stopped: no call needs a server any more.
            mcp.shutdown().await;
            close_connections.cancel();
        })
    };
    let serving = server::serve(
        listener,
        module.into(),
        limits,
        state.connections.clone(),
        close_connections,
    );
    // One deadline for the whole stop, from the signal on: whatever is still running then is
    // abandoned (aborted, or dropped with the runtime) and the daemon exits anyway.
    let stop_deadline_passed = async {
        shutdown.cancelled().await;
        tokio::time::sleep(STOP_DEADLINE).await;
    };
    let abort_stop_sessions = stop_sessions.abort_handle();
    let stopped = async {
        serving.await;
        let _ = stop_sessions.await;
    };
    tokio::select! {
        () = stopped => {}
        () = stop_deadline_passed => {
            tracing::warn!(
                deadline = ?STOP_DEADLINE,
                "the stop took longer than its deadline; exiting with work left"
            );
            abort_stop_sessions.abort();
        }
    }

    signals.close();
    stop_reaping.cancel();
    let _ = reaper.await;
    // The listener unlinks the path it created when dropped; make sure, in case it did not.
    if owns_socket {
        platform::remove_endpoint(&paths.socket);
    }
    tracing::info!("agentd stopped");
    Ok(())
}

/// The whole stop, from the signal to the end of `run`: well under systemd's
/// `TimeoutStopSec=30` (`systemd/agentd.service`), leaving room for the runtime's own
/// shutdown (2 s for blocking work) and the log flush.
pub const STOP_DEADLINE: Duration = Duration::from_secs(15);

/// How long runs get to record that they were interrupted when the daemon stops (part of
/// [`STOP_DEADLINE`]; connections get `ServerLimits::stop_flush_deadline` after it).
const RUN_STOP_DEADLINE: Duration = Duration::from_secs(10);

/// Load the configuration (a bad file is reported, never silently replaced) and build what
/// sessions need.
async fn session_deps(paths: &Paths) -> Result<SessionDeps> {
    // Startup, before any client: reading the small config file here blocks nobody.
    let live = Arc::new(crate::config::live::LiveConfig::load(
        paths.config.clone(),
        Arc::new(|name: &str| std::env::var(name).ok()),
    ));
    // What is read once, from the start's configuration (the environment's alone while the
    // file is unusable): a reload that changes it says `needsRestart`.
    let config = live.started();
    let mut tool_limits = agentd_work::tools::ToolLimits::default();
    tool_limits.output_max_chars = config.tool_output_max_chars;
    let memory = Arc::new(agentd_knowledge::memory::MemoryStores::new(
        &paths.data_dir,
        &paths.state_dir,
        config.memory,
    ));
    let task_settings = config.tasks;
    // Thousands of task records may be read: on the blocking pool, once, before any client.
    let tasks_state_dir = paths.state_dir.clone();
    let tasks = tokio::task::spawn_blocking(move || {
        let tasks = crate::task::TaskManager::load(&tasks_state_dir, task_settings.limits);
        tasks.prune_at_start(task_settings.retention);
        tasks
    })
    .await
    .context("cannot read the task records")?;
    tasks.start_retention(task_settings.retention);
    if let Some(stall) = task_settings.stall {
        tasks.start_stall_watchdog(stall);
    }
    let tools = tool_registry(paths, &memory, &tasks);
    let sandbox_config = config.sandbox.clone();
    let sandbox = Arc::new(
        agentd_policy::process::sandbox::ShellSandbox::probe(
            sandbox_config,
            Some(paths.socket.clone()),
        )
        .await,
    );
    // Startup, before any client: reading the small trust file here blocks nobody.
    let trust = match agentd_policy::trust::TrustStore::load(&paths.state_dir) {
        Ok(trust) => trust,
        Err(err) => {
            tracing::error!("trusted projects not loaded, none is trusted: {err:#}");
            agentd_policy::trust::TrustStore::empty(&paths.state_dir)
        }
    };
    let mcp_idle_stop = config.mcp.idle_stop;
    let mcp_unconfined = config.mcp.unconfined.clone();
    let extension_call_timeout = config.extension_call_timeout;
    Ok(SessionDeps {
        paths: paths.clone(),
        trust: Arc::new(trust),
        config: Arc::clone(&live),
        http: agentd_llm::HttpClients::new()?,
        fetch: agentd_work::tools::FetchClients::new()?,
        tools: Arc::new(tools),
        memory,
        mcp: agentd_work::mcp::McpManager::confining(
            paths.state_dir.join("mcp"),
            mcp_idle_stop,
            agentd_work::mcp::McpLimits::default(),
            agentd_work::mcp::ServerConfinement {
                sandbox: Some(Arc::clone(&sandbox)),
                unconfined: mcp_unconfined,
            },
        ),
        mcp_status: crate::session::mcp_status::McpStatusRegistry::new(),
        extensions: Arc::new(crate::extension::Extensions::new(extension_call_timeout)),
        tasks,
        checkpoints: agentd_work::checkpoint::Checkpoints::new(
            paths.state_dir.join("checkpoints"),
            config.checkpoints,
            directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf()),
        ),
        manager: std::sync::OnceLock::new(),
        shell_tasks: crate::task::shell::ShellTasks::new(task_settings.shell_output_max_bytes),
        tool_limits,
        sandbox,
        approvals: Arc::new(agentd_policy::approval::ApprovalBroker::with_config(
            paths.config.clone(),
        )),
        budgets: Arc::default(),
        elicitations: Arc::default(),
    })
}

/// The tools every session offers: the built-ins, `load_skill` (which also looks in the
/// user's skills directory), `memory` (which writes the shared stores; none with memory off), `task` (subagents;
/// never offered to a subagent) and the `task_*` tools (which read and stop the session's own
/// tasks).
fn tool_registry(
    paths: &agentd_core::paths::Paths,
    memory: &Arc<agentd_knowledge::memory::MemoryStores>,
    tasks: &Arc<crate::task::TaskManager>,
) -> agentd_work::tools::ToolRegistry {
    let mut tools = agentd_work::tools::ToolRegistry::builtin();
    tools.register(Arc::new(agentd_work::tools::LoadSkill::new(Some(
        paths.skills_dir.clone(),
    ))));
    // `[memory] enabled = false`: no session gets the tool.
    if memory.enabled() {
        tools.register(Arc::new(agentd_work::tools::MemoryTool::new(
            memory.clone(),
        )));
    }
    tools.register(Arc::new(agentd_work::tools::TaskTool));
    tools.register(Arc::new(agentd_work::tools::TaskList(tasks.clone())));
    tools.register(Arc::new(agentd_work::tools::TaskGet(tasks.clone())));
    tools.register(Arc::new(agentd_work::tools::TaskOutputTool(tasks.clone())));
    tools.register(Arc::new(agentd_work::tools::TaskStop(tasks.clone())));
    tools
}
