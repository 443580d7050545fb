//! Where the real MCP servers the tests run live (`tests/mcp-servers/`, installed by
//! `tests/mcp-servers/install.sh`, which `.ci/run` calls) and the commands that start them:
//! npm `@modelcontextprotocol/server-everything` over stdio and over streamable HTTP, npm
//! `@modelcontextprotocol/server-filesystem` (no directory: roots only) over stdio, and PyPI
//! `mcp-server-time` (a Python server) over stdio, and scripted Python servers that record
//! cancellations, that send results and tool lists at their limits and that offer 500 tools. A missing install fails the test with a
//! message naming the install script.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The command line of a stdio server (or of an HTTP server the test starts itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerCommand {
    /// An absolute path: the daemon's scrubbed environment need not find it on `PATH`.
    pub command: String,
    pub args: Vec<String>,
    /// Variables the server needs besides the safe base environment.
    pub env: BTreeMap<String, String>,
}

/// How long [`EverythingHttp::start`] waits for the server to listen.
pub const HTTP_START_DEADLINE: Duration = Duration::from_secs(30);

/// `tests/mcp-servers/` of this checkout.
pub fn install_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp-servers")
}

/// server-everything speaking MCP on stdin/stdout (`dist/index.js stdio`).
pub fn everything_stdio() -> ServerCommand {
    ServerCommand {
        command: node(),
        args: vec![everything_script(), "stdio".to_owned()],
        env: BTreeMap::new(),
    }
}

/// server-everything in streamable HTTP mode listening on `port` (every interface; the URL
/// to use is [`everything_http_url`]). The package reads its port from `PORT` and its transport
/// from its first argument.
pub fn everything_http(port: u16) -> ServerCommand {
    ServerCommand {
        command: node(),
        args: vec![everything_script(), "streamableHttp".to_owned()],
        env: BTreeMap::from([("PORT".to_owned(), port.to_string())]),
    }
}

/// The MCP endpoint of [`everything_http`] on `port`.
pub fn everything_http_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}/mcp")
}

/// mcp-server-time from the test venv (`python -m mcp_server_time`), its local zone fixed to
/// UTC so the answer does not depend on the machine.
pub fn time_stdio() -> ServerCommand {
    let python = install_dir().join("venv/bin/python");
    require(&python, "mcp-server-time (venv/bin/python)");
    ServerCommand {
        command: python.display().to_string(),
        args: vec![
            "-m".to_owned(),
            "mcp_server_time".to_owned(),
            "--local-timezone=UTC".to_owned(),
        ],
        env: BTreeMap::new(),
    }
}

/// A scripted server on the real Python SDK (`tests/mcp-servers/cancel_recorder.py`) whose
/// `wait {seconds}` tool appends `cancelled` to `record` when the client cancels the call.
pub fn cancel_recorder(record: &Path) -> ServerCommand {
    let mut server = time_stdio();
    server.args = vec![
        install_dir()
            .join("cancel_recorder.py")
            .display()
            .to_string(),
        record.display().to_string(),
    ];
    server
}

/// A scripted server on the real Python SDK (`tests/mcp-servers/results_server.py`) for
/// results and tool lists at their limits (an image with `structuredContent`, a result of N
/// megabytes, a tool that changes the tool list, a log message), with `args` (`--tools N`,
/// `--description-chars N`).
pub fn results_server(args: &[&str]) -> ServerCommand {
    let mut server = time_stdio();
    server.args = vec![
        install_dir()
            .join("results_server.py")
            .display()
            .to_string(),
    ];
    server.args.extend(args.iter().map(|arg| (*arg).to_owned()));
    server
}

/// A scripted server on the real Python SDK (`tests/mcp-servers/asking_server.py`) whose
/// tools ask the client: `ask_name` a question (elicitation), `summarize` the client's model
/// (sampling).
pub fn asking_server() -> ServerCommand {
    let mut server = time_stdio();
    server.args = vec![install_dir().join("asking_server.py").display().to_string()];
    server
}

/// A scripted server on the real Python SDK (`tests/mcp-servers/many_tools_server.py`)
/// offering a large tool set (`--tools N`, default 500; `item_271` reads tide tables).
pub fn many_tools_server(args: &[&str]) -> ServerCommand {
    let mut server = time_stdio();
    server.args = vec![
        install_dir()
            .join("many_tools_server.py")
            .display()
            .to_string(),
    ];
    server.args.extend(args.iter().map(|arg| (*arg).to_owned()));
    server
}

/// A loopback port nothing listens on now (bound and released; the caller binds it next).
pub fn free_loopback_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("local address").port()
}

/// A server-everything started by the test in streamable HTTP mode, in its own process group,
/// killed with its group on drop.
pub struct EverythingHttp {
    child: std::process::Child,
    pub port: u16,
}

impl EverythingHttp {
    /// Starts it on a free loopback port and waits (polling the outside world, bounded by
    /// [`HTTP_START_DEADLINE`]) until the port accepts connections.
    pub async fn start() -> EverythingHttp {
        Self::start_on(free_loopback_port()).await
    }

    /// Starts it on `port` (again, after [`EverythingHttp`] on it was dropped).
    pub async fn start_on(port: u16) -> EverythingHttp {
        Self::start_command(everything_http(port), port).await
    }

    /// Starts `server`, another HTTP server that listens on `port`, the same way.
    pub async fn start_command(server: ServerCommand, port: u16) -> EverythingHttp {
        let mut command = std::process::Command::new(&server.command);
        command
            .args(&server.args)
            .envs(&server.env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command.spawn().expect("start the HTTP server");
        let mut server = EverythingHttp { child, port };
        let started = Instant::now();
        loop {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the HTTP server on port {port} exited: {status}");
            }
            assert!(
                started.elapsed() < HTTP_START_DEADLINE,
                "the HTTP server did not listen on port {port} within {HTTP_START_DEADLINE:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn url(&self) -> String {
        everything_http_url(self.port)
    }
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        let group = self.child.id() as libc::pid_t;
        // SAFETY: kill(2) with a negative pid signals the child's own process group.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// npm server-filesystem over stdio with no directory argument: the directories it may use
/// are the client's roots.
pub fn filesystem_stdio() -> ServerCommand {
    let script =
        install_dir().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    require(&script, "@modelcontextprotocol/server-filesystem");
    ServerCommand {
        command: node(),
        args: vec![script.display().to_string()],
        env: BTreeMap::new(),
    }
}

pub fn everything_script() -> String {
    let script =
        install_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    require(&script, "@modelcontextprotocol/server-everything");
    script.display().to_string()
}

/// `node` as an absolute path, found on the test's `PATH`.
pub fn node() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("node"))
        .find(|candidate| candidate.is_file())
        .map(|found| found.display().to_string())
        .unwrap_or_else(|| {
            panic!("node is not on PATH: the MCP tests need node + npm (then run tests/mcp-servers/install.sh)")
        })
}

pub fn require(path: &Path, what: &str) {
    assert!(
        path.exists(),
        "{what} is not installed at {}: run tests/mcp-servers/install.sh (needs node + npm and python3)",
        path.display()
    );
}
