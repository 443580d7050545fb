//! The daemon harness: starts the real `agentd` binary on its own socket with temp XDG dirs,
//! talks to it over raw NDJSON JSON-RPC (typed helpers on top), and kills it on drop.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// How long any single wait in a test may take before it fails with a clear message.
pub const WAIT: Duration = Duration::from_secs(30);

/// Path of a workspace binary built next to the running executable: a test binary lives in
/// `target/<profile>/deps/`, a tool like `bench` in `target/<profile>/`.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("executable path");
    let here = exe.parent().expect("executable directory");
    let candidates = [Some(here), here.parent()];
    candidates
        .into_iter()
        .flatten()
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{name} is missing next to {}: build the binaries first (`cargo build --workspace --all-targets`)",
                exe.display()
            )
        })
}

/// A test's private environment: temp home, XDG dirs and socket path.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    /// Extra environment for the daemon and agentctl (provider URLs, keys, …).
    pub vars: Vec<(String, String)>,
    /// Extra command-line arguments for `agentd` (e.g. `--socket PATH`).
    pub daemon_args: Vec<String>,
    /// The file mode creation mask the daemon starts with; the test's own when `None`.
    pub daemon_umask: Option<libc::mode_t>,
}

impl TestEnv {
    pub fn new() -> TestEnv {
        let dir = tempfile::Builder::new()
            .prefix("agentd-t")
            .tempdir_in("/tmp")
            .expect("temp dir");
        let socket = dir.path().join("run").join("agentd.sock");
        for sub in ["home", "run", "state", "config", "data", "work"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("create temp dirs");
        }
        TestEnv {
            dir,
            socket,
            vars: Vec::new(),
            daemon_args: Vec::new(),
            daemon_umask: None,
        }
    }

    pub fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// A workspace directory for sessions.
    pub fn workspace(&self) -> PathBuf {
        self.path("work")
    }

    /// An extra variable; a test seam's (`test_seams`) only for a daemon built with its seams.
    pub fn var(mut self, key: &str, value: impl Into<String>) -> Self {
        crate::test_seams::require_if_seam(key);
        self.vars.push((key.to_owned(), value.into()));
        self
    }

    /// Start the daemon with this umask (e.g. `0o022`, the usual one that leaves files
    /// readable by others), whatever the test runner's is.
    pub fn umask(mut self, mask: libc::mode_t) -> Self {
        self.daemon_umask = Some(mask);
        self
    }

    /// Start the daemon with `--socket path` (and connect there): the flag, not the variable.
    pub fn socket_flag(mut self, path: PathBuf) -> Self {
        self.daemon_args = vec!["--socket".to_owned(), path.display().to_string()];
        self.socket = path;
        self
    }

    /// Write `config.toml` where the daemon looks for it.
    pub fn config(self, toml: &str) -> Self {
        let path = self.path("config").join("agentd").join("config.toml");
        std::fs::create_dir_all(path.parent().expect("config dir")).expect("create config dir");
        std::fs::write(path, toml).expect("write config");
        self
    }

    /// Apply the test environment to a command: a clean env with only what the test chose.
    pub fn apply(&self, command: &mut tokio::process::Command) {
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .env("XDG_RUNTIME_DIR", self.path("run"))
            .env("XDG_STATE_HOME", self.path("state"))
            .env("XDG_CONFIG_HOME", self.path("config"))
            .env("XDG_DATA_HOME", self.path("data"))
            .env("AGENTD_SOCKET", &self.socket)
            .env("AGENTD_LOG", "info,agentd=debug")
            .env("AGENTD_BIN", binary("agentd"));
        for (key, value) in &self.vars {
            command.env(key, value);
        }
    }

    /// An `agentctl` command in this environment.
    pub fn agentctl(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(binary("agentctl"));
        self.apply(&mut command);
        // Nothing piped unless a test pipes it: `run` attaches piped stdin to its prompt.
        command
            .current_dir(self.workspace())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// Run `agentctl ARGS` in this environment to completion (bounded by [`WAIT`]).
    pub async fn run_agentctl(&self, args: &[&str]) -> std::process::Output {
        tokio::time::timeout(WAIT, self.agentctl().args(args).output())
            .await
            .expect("agentctl did not finish in time")
            .expect("run agentctl")
    }

    /// Spawn `agentd` without waiting for it (for tests of startup failures).
    pub fn spawn_daemon(&self) -> tokio::process::Child {
        self.daemon_command().spawn().expect("spawn agentd")
    }

    /// The `agentd` command of this environment: its env, its arguments, stderr piped.
    fn daemon_command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(binary("agentd"));
        self.apply(&mut command);
        command
            .args(&self.daemon_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(mask) = self.daemon_umask {
            // SAFETY: umask is async-signal-safe and only changes the child's own mask.
            unsafe {
                command.pre_exec(move || {
                    libc::umask(mask);
                    Ok(())
                });
            }
        }
        command
    }
}

impl TestEnv {
    /// Start `agentd` expecting it to refuse to start: its exit status and stderr, once it
    /// exited (bounded by [`WAIT`]).
    pub async fn daemon_refusal(&self) -> (ExitStatus, String) {
        let child = self.spawn_daemon();
        let output = tokio::time::timeout(WAIT, child.wait_with_output())
            .await
            .expect("agentd kept running; it should have refused to start")
            .expect("wait for agentd");
        (output.status, text(&output.stderr))
    }
}

impl Drop for TestEnv {
    /// A daemon that agentctl auto-started in this environment dies with it.
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        let Ok(file) = std::fs::File::open(lock_path(&self.socket)) else {
            return;
        };
        // Only a daemon that still holds its lock is alive; never signal a reused pid.
        // SAFETY: flock on an open descriptor has no memory-safety preconditions.
        let free = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0;
        if free {
            return;
        }
        let pid = std::fs::read_to_string(lock_path(&self.socket)).unwrap_or_default();
        if let Ok(pid) = pid.trim().parse::<i32>() {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// The daemon's lock file for `socket` (it holds the daemon's pid).
pub fn lock_path(socket: &Path) -> PathBuf {
    agentd_core::paths::lock_path_for(socket)
}

impl Default for TestEnv {
    fn default() -> Self {
        TestEnv::new()
    }
}

/// A running daemon owned by a test.
pub struct Daemon {
    pub env: TestEnv,
    child: Option<tokio::process::Child>,
}

impl Daemon {
    /// Start a daemon in a fresh environment.
    pub async fn start() -> Daemon {
        Daemon::start_in(TestEnv::new()).await
    }

    /// Start a daemon in `env` and wait until it answers `initialize`.
    pub async fn start_in(env: TestEnv) -> Daemon {
        let child = Daemon::spawn_ready(&env).await;
        Daemon {
            env,
            child: Some(child),
        }
    }

    /// Start a new daemon in the same environment (same sessions, config and socket) after
    /// this one exited (`wait_exit`) or was killed (`kill`).
    pub async fn restart(&mut self) {
        assert!(
            self.child.is_none(),
            "restart: the previous daemon is still running; stop or kill it first"
        );
        self.child = Some(Daemon::spawn_ready(&self.env).await);
    }

    /// Spawn `agentd` in `env` and wait until it says it is ready, the way systemd hears it
    /// (`READY=1` on `NOTIFY_SOCKET`): an event, with no probe connection left behind that a
    /// test could count among the daemon's clients.
    async fn spawn_ready(env: &TestEnv) -> tokio::process::Child {
        let notify_path = env.dir.path().join("notify.sock");
        // A previous daemon of this environment (before a restart) used the same path.
        let _ = std::fs::remove_file(&notify_path);
        let notify = tokio::net::UnixDatagram::bind(&notify_path).expect("bind notify socket");
        let mut child = env
            .daemon_command()
            .env("NOTIFY_SOCKET", &notify_path)
            .spawn()
            .expect("spawn agentd");
        let deadline = tokio::time::Instant::now() + WAIT;
        let mut datagram = vec![0u8; 4096];
        loop {
            tokio::select! {
                received = notify.recv(&mut datagram) => {
                    let len = received.expect("read notify socket");
                    let message = String::from_utf8_lossy(&datagram[..len]);
                    if message.lines().any(|line| line == "READY=1") {
                        break;
                    }
                }
                status = child.wait() => {
                    let status = status.expect("wait for agentd");
                    let mut stderr = String::new();
                    if let Some(mut pipe) = child.stderr.take() {
                        use tokio::io::AsyncReadExt;
                        let _ = pipe.read_to_string(&mut stderr).await;
                    }
                    panic!("agentd exited during startup with {status}:\n{stderr}");
                }
                _ = tokio::time::sleep_until(deadline) => {
                    panic!("agentd did not say it was ready within {WAIT:?}");
                }
            }
        }
        // Its stderr is not read from here on; stop piping it so it never blocks.
        drop(child.stderr.take());
        child
    }

    /// A raw connection that has called `initialize` as `client_name`, split so a test can
    /// write without reading (a flooding or hostile client).
    pub async fn initialized_stream(
        &self,
        client_name: &str,
    ) -> (BufReader<OwnedReadHalf>, OwnedWriteHalf) {
        let stream = UnixStream::connect(self.socket()).await.expect("connect");
        let (read, mut write) = stream.into_split();
        let mut read = BufReader::new(read);
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"clientInfo": {"name": client_name, "version": "0"}, "protocolVersion": protocol::PROTOCOL_VERSION}});
        write
            .write_all(format!("{initialize}\n").as_bytes())
            .await
            .expect("write initialize");
        let mut line = String::new();
        tokio::time::timeout(WAIT, read.read_line(&mut line))
            .await
            .expect("initialize answer in time")
            .expect("read initialize answer");
        assert!(line.contains("\"result\""), "initialize failed: {line}");
        (read, write)
    }

    pub fn socket(&self) -> &Path {
        &self.env.socket
    }

    pub fn pid(&self) -> u32 {
        self.child
            .as_ref()
            .and_then(|c| c.id())
            .expect("daemon is running")
    }

    /// A new initialised client connection.
    pub async fn client(&self) -> Client {
        let mut client = Client::connect_raw(self.socket()).await.expect("connect");
        client.initialize().await;
        client
    }

    /// The daemon's memory from `/proc/<pid>/status`: resident now (`VmRSS`) and the peak
    /// so far (`VmHWM`), in bytes.
    pub fn memory(&self) -> Memory {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("read the daemon's /proc status");
        let field = |name: &str| -> u64 {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .unwrap_or_else(|| panic!("no {name} in /proc status:\n{status}"))
                * 1024
        };
        Memory {
            resident: field("VmRSS:"),
            peak: field("VmHWM:"),
        }
    }

    /// Send a signal to the daemon.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill with a valid pid and signal number has no memory-safety concerns.
        unsafe {
            libc::kill(self.pid() as i32, signal);
        }
    }

    /// Wait for the daemon to exit on its own.
    pub async fn wait_exit(&mut self) -> ExitStatus {
        let child = self.child.as_mut().expect("daemon is running");
        let status = tokio::time::timeout(WAIT, child.wait())
            .await
            .expect("daemon did not exit in time")
            .expect("wait for daemon");
        self.child = None;
        status
    }

    /// Kill the daemon hard (a crash), leaving its files behind.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// The daemon's log file, for failure messages.
    pub fn log(&self) -> String {
        let dir = self.env.path("state").join("agentd");
        let mut logs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|entry| entry.path())
                    .filter(|path| {
                        path.file_name()
                            .and_then(|name| name.to_str())
                            .is_some_and(|name| {
                                name.starts_with("agentd.") && name.ends_with(".log")
                            })
                    })
                    .collect()
            })
            .unwrap_or_default();
        logs.sort();
        logs.iter()
            .filter_map(|path| std::fs::read_to_string(path).ok())
            .collect()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
    }
}

/// A process's memory, in bytes.
#[derive(Clone, Copy, Debug)]
pub struct Memory {
    pub resident: u64,
    pub peak: u64,
}

/// Mebibytes, for messages.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Raise this process's open-file soft limit to its hard limit (tests that hold hundreds of
/// connections).
pub fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write to and read from a valid rlimit struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// A JSON-RPC error as received.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

/// A raw NDJSON JSON-RPC client: sends lines, matches responses by id, queues notifications.
pub struct Client {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    next_id: u64,
    notifications: VecDeque<Value>,
    /// Responses that arrived while waiting for another id.
    responses: Vec<Value>,
}

impl Client {
    /// Connect without `initialize`.
    pub async fn connect_raw(socket: &Path) -> std::io::Result<Client> {
        let stream = UnixStream::connect(socket).await?;
        let (read, write) = stream.into_split();
        Ok(Client {
            reader: BufReader::new(read),
            writer: write,
            next_id: 1,
            notifications: VecDeque::new(),
            responses: Vec::new(),
        })
    }

    /// `initialize` as `agentd-tests`, declaring that this client answers approvals (so its
    /// subscriptions make a run wait for an answer, as approval tests expect).
    pub async fn initialize(&mut self) -> Value {
        self.initialize_as("agentd-tests", true).await
    }

    /// `initialize` as `name`, declaring `capabilities.approvals` as given (a status bar or a
    /// viewer declares false: its subscriptions do not count as someone who may answer).
    pub async fn initialize_as(&mut self, name: &str, answers_approvals: bool) -> Value {
        self.request(
            "initialize",
            json!({
                "clientInfo": {"name": name, "version": "0"},
                "protocolVersion": protocol::PROTOCOL_VERSION,
                "capabilities": {"approvals": answers_approvals},
            }),
        )
        .await
        .expect("initialize")
    }

    /// Send one raw line (a `\n` is appended).
    pub async fn send_line(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).await.expect("write");
        self.writer.write_all(b"\n").await.expect("write");
        self.writer.flush().await.expect("flush");
    }

    /// Read the next message of any kind.
    pub async fn read_message(&mut self) -> Value {
        let mut line = String::new();
        let read = tokio::time::timeout(WAIT, self.reader.read_line(&mut line))
            .await
            .expect("timed out waiting for a message from agentd")
            .expect("read from agentd");
        assert!(read > 0, "agentd closed the connection");
        serde_json::from_str(&line)
            .unwrap_or_else(|err| panic!("bad JSON from agentd ({err}): {line}"))
    }

    /// Read until the daemon closes the connection (EOF), skipping what it sends before;
    /// panics after the wait limit.
    pub async fn wait_closed_by_daemon(&mut self) {
        let mut line = String::new();
        let closed = tokio::time::timeout(WAIT, async {
            loop {
                line.clear();
                match self.reader.read_line(&mut line).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(
            closed.is_ok(),
            "agentd did not close the connection within {WAIT:?}"
        );
    }

    /// True when the daemon closed the connection (reads EOF within the wait limit).
    pub async fn closed_by_daemon(&mut self) -> bool {
        let mut line = String::new();
        matches!(
            tokio::time::timeout(WAIT, self.reader.read_line(&mut line)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }

    /// Call `method` and wait for its response.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, RpcError> {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&line.to_string()).await;
        let response = self.response_for(&json!(id)).await;
        into_result(response)
    }

    /// Call method `M` with typed params and result.
    pub async fn call<M: protocol::Method>(
        &mut self,
        params: &M::Params,
    ) -> Result<M::Result, RpcError> {
        let value = self
            .request(
                M::NAME,
                serde_json::to_value(params).expect("encode params"),
            )
            .await?;
        Ok(serde_json::from_value(value)
            .unwrap_or_else(|err| panic!("bad {} result: {err}", M::NAME)))
    }

    /// Wait for the response with `id`, queueing notifications and other responses.
    pub async fn response_for(&mut self, id: &Value) -> Value {
        if let Some(pos) = self.responses.iter().position(|r| &r["id"] == id) {
            return self.responses.remove(pos);
        }
        loop {
            let message = self.read_message().await;
            if message.get("method").is_some() && message.get("id").is_none() {
                self.notifications.push_back(message);
            } else if &message["id"] == id {
                return message;
            } else {
                self.responses.push(message);
            }
        }
    }

    /// The next notification (queued or read), with the wait limit.
    pub async fn next_notification(&mut self) -> Value {
        if let Some(message) = self.notifications.pop_front() {
            return message;
        }
        loop {
            let message = self.read_message().await;
            if message.get("method").is_some() && message.get("id").is_none() {
                return message;
            }
            self.responses.push(message);
        }
    }

    /// The params of the next notification: for `session/event` and `daemon/event`, the
    /// envelope (`sessionId`, `seq`, `event`) beside the `subscriptionId`.
    pub async fn next_notification_result(&mut self) -> Value {
        let message = self.next_notification().await;
        message["params"].clone()
    }

    /// Send typed params without waiting (for pipelining tests); returns the id used.
    pub async fn send_request<P: Serialize>(&mut self, method: &str, params: &P) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&line.to_string()).await;
        id
    }
}

fn into_result(response: Value) -> Result<Value, RpcError> {
    if let Some(error) = response.get("error") {
        return Err(RpcError {
            code: error["code"].as_i64().expect("error code"),
            message: error["message"].as_str().unwrap_or_default().to_owned(),
        });
    }
    Ok(response["result"].clone())
}

/// Decode a value, with the value in the panic message when it does not fit.
pub fn decode<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value.clone())
        .unwrap_or_else(|err| panic!("cannot decode ({err}): {value}"))
}

/// Bytes a process printed, as text (lossy), for assertions and failure messages.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
