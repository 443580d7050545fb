//! Startup and shutdown: paths, the single-instance lock, the stale-socket check, binding the
//! socket, signals, and the graceful drain that ends with the socket removed and exit 0.
//! The socket is 0600, its dir made 0700 only when the daemon creates it; a socket passed by
//! systemd is served and never unlinked. The process is hardened before any thread starts
//! (`harden_process`: not dumpable, no core file). A stop interrupts runs, then drains
//! in-flight requests, all within [`STOP_DEADLINE`]; a second signal exits at once.

mod lock;
pub mod service;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use interprocess::local_socket::traits::tokio::Stream as _;
use interprocess::local_socket::{GenericFilePath, ListenerOptions, ToFsName};
use interprocess::os::unix::local_socket::ListenerOptionsExt;
use tokio_util::sync::CancellationToken;

pub use lock::InstanceLock;

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
    let socket_dir = paths
        .socket
        .parent()
        .context("the socket path has no parent directory")?;
    paths::prepare_socket_dir(socket_dir)?;
    // Before the lock file is created beside it: a path that holds anything but a socket is
    // refused (checked again under the lock, where a stale socket is removed).
    existing_socket(&paths.socket)?;
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

    raise_open_file_limit();
    // Before the activation variables are read: whether systemd runs us, for `daemon/status`.
    let service_unit = service::systemd_unit();
    let executable = std::env::current_exe().ok();
    let activated = activated_listener()?;
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
            remove_stale_socket(&paths.socket).await?;
            let listener = bind(&paths.socket)?;
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
    let signals = spawn_signal_listener(shutdown.clone(), sessions.clone())?;
    // Under systemd (Type=notify) say we are ready; elsewhere this does nothing.
    notify_systemd(&[sd_notify::NotifyState::Ready]);

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
            notify_systemd(&[sd_notify::NotifyState::Stopping]);
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
        match std::fs::remove_file(&paths.socket) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => tracing::warn!(%err, "cannot remove the socket file"),
        }
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

/// Whether a socket file is at `socket`. Refuses a path that holds anything else (a regular
/// file, a directory, a symlink): it is somebody's, and the daemon never removes it.
fn existing_socket(socket: &Path) -> Result<bool> {
    use std::os::unix::fs::FileTypeExt;
    let meta = match std::fs::symlink_metadata(socket) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => {
            return Err(err).with_context(|| format!("cannot inspect {}", socket.display()));
        }
    };
    if !meta.file_type().is_socket() {
        bail!(
            "{} exists and is not a socket ({}); agentd will not replace it: move it away or choose another socket path (--socket or AGENTD_SOCKET)",
            socket.display(),
            agentd_core::regular_file::kind_of(&meta.file_type())
        );
    }
    Ok(true)
}

/// A socket file nobody answers on is left over from a crash: remove it. One that answers
/// belongs to a live daemon that does not hold our lock (another version): refuse. Anything
/// that is not a socket is refused, never removed.
async fn remove_stale_socket(socket: &Path) -> Result<()> {
    if !existing_socket(socket)? {
        return Ok(());
    }
    let name = socket.to_fs_name::<GenericFilePath>()?;
    let connect = interprocess::local_socket::tokio::Stream::connect(name);
    if let Ok(Ok(_stream)) = tokio::time::timeout(Duration::from_secs(2), connect).await {
        bail!(
            "another agentd answers on {}; stop it first (`agentctl daemon stop`)",
            socket.display()
        );
    }
    tracing::info!(socket = %socket.display(), "removing stale socket");
    std::fs::remove_file(socket)
        .with_context(|| format!("cannot remove stale socket {}", socket.display()))
}

/// The listening socket systemd passed by socket activation (`systemd/agentd.socket`), if any.
fn activated_listener() -> Result<Option<interprocess::local_socket::tokio::Listener>> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = sd_notify::listen_fds()
        .context("systemd passed unusable LISTEN_FDS/LISTEN_PID variables")?;
    let Some(fd) = fds.next() else {
        return Ok(None);
    };
    // SAFETY: systemd passed this descriptor to this process (LISTEN_PID matched) and nothing
    // else takes ownership of it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let listener = interprocess::os::unix::uds_local_socket::tokio::Listener::try_from(owned)
        .context("the socket systemd passed is not a listening Unix socket")?;
    Ok(Some(interprocess::local_socket::tokio::Listener::from(
        listener,
    )))
}

/// Keep tools (processes of the same user) out of the daemon: not dumpable, so `/proc/<pid>/`
/// `environ`, `mem` and `maps` become root's and ptrace is refused (the provider keys in the
/// daemon's environment stay private), and no core file that would hold them. Codex does the
/// same. What the daemon reads of `/proc` is other processes' `stat` and `environ` (its own
/// entry is never read), and `stat` stays readable to all. A failure is logged, not fatal.
pub fn harden_process() {
    // SAFETY: prctl with PR_SET_DUMPABLE only changes this process's attributes.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "cannot make the daemon non-dumpable; tools may read its environment and memory"
        );
    }
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit only reads the struct passed.
    if unsafe { libc::setrlimit(libc::RLIMIT_CORE, &no_core) } != 0 {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "cannot disable core dumps of the daemon"
        );
    }
}

/// Each loaded session keeps its log open and each client holds a socket: raise the soft limit
/// on open files to the hard limit, as long-lived servers do, so hundreds of sessions fit.
fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 || limit.rlim_cur >= limit.rlim_max
        {
            return;
        }
        let wanted = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) != 0 {
            tracing::debug!("cannot raise the open-file limit");
        }
    }
}

fn notify_systemd(state: &[sd_notify::NotifyState<'_>]) {
    if let Err(err) = sd_notify::notify(state) {
        tracing::debug!(%err, "cannot notify systemd");
    }
}

fn bind(socket: &Path) -> Result<interprocess::local_socket::tokio::Listener> {
    use std::os::unix::fs::PermissionsExt;
    let name = socket.to_fs_name::<GenericFilePath>()?;
    let listener = ListenerOptions::new()
        .name(name)
        .mode(0o600)
        .try_overwrite(false)
        .create_tokio()
        .with_context(|| format!("cannot listen on {}", socket.display()))?;
    // `mode` is applied through the umask on some systems; set it explicitly too.
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot make {} private (0600)", socket.display()))?;
    Ok(listener)
}

/// SIGTERM and SIGINT stop the daemon gracefully; SIGHUP reads config.toml again.
fn spawn_signal_listener(
    shutdown: CancellationToken,
    sessions: Arc<SessionManager>,
) -> Result<signal_hook_tokio::Handle> {
    use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook_tokio::Signals::new([SIGTERM, SIGINT, SIGHUP])
        .context("cannot install signal handlers")?;
    let handle = signals.handle();
    tokio::spawn(async move {
        while let Some(signal) = signals.next().await {
            if signal == SIGHUP {
                tracing::info!("SIGHUP received; reading the configuration again");
                sessions
                    .reload_config(crate::session::config_reload::ReloadTrigger::Signal)
                    .await;
                continue;
            }
            if shutdown.is_cancelled() {
                tracing::warn!(signal, "second stop signal: exiting now");
                std::process::exit(1);
            }
            tracing::info!(signal, "stop signal received; shutting down");
            shutdown.cancel();
        }
    });
    Ok(handle)
}
