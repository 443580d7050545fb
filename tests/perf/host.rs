//! The daemon hosted in this process, so that the counting allocator sees its allocations: the
//! real `agentd::run_main` (logging, hardening, its own runtime, the socket) on a thread of its
//! own, in a private environment (temp XDG dirs, only `PATH` kept of ours), against the mock
//! LLM. Its stderr (its log lines) goes to a file while it runs.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use agentd_tests::harness::WAIT;
use agentd_tests::mock_llm::{Format, MockLlm};

/// The private directories of one hosted daemon.
pub struct HostDirs {
    pub dir: tempfile::TempDir,
}

impl HostDirs {
    pub fn new() -> HostDirs {
        let dir = tempfile::Builder::new()
            .prefix("agentd-perf")
            .tempdir_in("/tmp")
            .expect("temp dir");
        for sub in ["home", "run", "state", "config/agentd", "data", "work"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("create temp dirs");
        }
        HostDirs { dir }
    }

    pub fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    pub fn socket(&self) -> PathBuf {
        self.path("run/agentd.sock")
    }

    pub fn workspace(&self) -> PathBuf {
        self.path("work")
    }

    /// The session log of `session_id`.
    pub fn session_file(&self, session_id: &str) -> PathBuf {
        self.path("state/agentd/sessions")
            .join(format!("{session_id}.jsonl"))
    }

    fn notify_socket(&self) -> PathBuf {
        self.path("notify.sock")
    }

    /// The environment the daemon reads, as the harness gives it to the binary: nothing of the
    /// runner's but `PATH`. SAFETY: call while this process has one thread (the variables
    /// are process-wide and `set_var` races other threads' reads).
    pub unsafe fn make_process_environment(&self) {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let names: Vec<_> = std::env::vars_os().map(|(name, _)| name).collect();
        let vars = [
            ("HOME", self.path("home")),
            ("XDG_RUNTIME_DIR", self.path("run")),
            ("XDG_STATE_HOME", self.path("state")),
            ("XDG_CONFIG_HOME", self.path("config")),
            ("XDG_DATA_HOME", self.path("data")),
            ("AGENTD_SOCKET", self.socket()),
            ("NOTIFY_SOCKET", self.notify_socket()),
        ];
        // SAFETY: the caller guarantees no other thread runs.
        unsafe {
            for name in names {
                std::env::remove_var(name);
            }
            std::env::set_var("PATH", path);
            for (name, value) in vars {
                std::env::set_var(name, value);
            }
        }
    }

    /// `config.toml` for the mock, in the scenarios' form (tools run without asking).
    pub fn write_config(&self, mock: &MockLlm) {
        // No checkpoints: the steps measured read and never checkpoint, and a run's start
        // checkpoint spawns git, whose cost (the /proc scan after each child) moves with the
        // machine's process count, which a count must not. `bench` times checkpoints.
        let toml = agentd_tests::scenario::config_toml(
            mock,
            Format::OpenAi,
            "[checkpoints]\nenabled = false\n",
        );
        std::fs::write(self.path("config/agentd/config.toml"), toml).expect("write config");
    }
}

/// A daemon running on a thread of this process.
pub struct HostedDaemon {
    thread: JoinHandle<anyhow::Result<()>>,
}

impl HostedDaemon {
    /// Start `agentd::run_main` on its own thread and wait for its `READY=1`.
    pub async fn start(dirs: &HostDirs) -> HostedDaemon {
        let notify = tokio::net::UnixDatagram::bind(dirs.notify_socket()).expect("bind notify");
        let thread = std::thread::Builder::new()
            .name("agentd-main".to_owned())
            .spawn(|| agentd::run_main(agentd::daemon::DaemonOptions::default()))
            .expect("spawn the daemon's thread");
        let mut datagram = vec![0u8; 4096];
        loop {
            let len = tokio::time::timeout(WAIT, notify.recv(&mut datagram))
                .await
                .unwrap_or_else(|_| panic!("the daemon did not say READY=1 within {WAIT:?}"))
                .expect("read the notify socket");
            let message = String::from_utf8_lossy(&datagram[..len]);
            if message.lines().any(|line| line == "READY=1") {
                return HostedDaemon { thread };
            }
        }
    }

    /// Wait for the daemon's thread after `daemon/shutdown`.
    pub fn join(self) {
        match self.thread.join() {
            Ok(Ok(())) => {}
            Ok(Err(err)) => panic!("the daemon stopped with an error: {err:#}"),
            Err(_) => panic!("the daemon's thread panicked"),
        }
    }
}

/// The process's stderr sent to a file until dropped (then it is the terminal's again).
pub struct StderrToFile {
    saved: libc::c_int,
    pub path: PathBuf,
}

impl StderrToFile {
    pub fn new(path: &Path) -> StderrToFile {
        let file = std::fs::File::create(path).expect("create the stderr file");
        // SAFETY: dup and dup2 on open descriptors have no memory-safety preconditions.
        let saved = unsafe { libc::dup(2) };
        assert!(saved >= 0, "cannot duplicate stderr");
        // SAFETY: as above; `file` stays open until dup2 returns.
        let moved = unsafe { libc::dup2(file.as_raw_fd(), 2) };
        assert!(moved >= 0, "cannot send stderr to {}", path.display());
        StderrToFile {
            saved,
            path: path.to_path_buf(),
        }
    }

    /// What was written to stderr meanwhile (the last `max` bytes).
    pub fn tail(&self, max: usize) -> String {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        let start = text.len().saturating_sub(max);
        let start = (start..text.len())
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(text.len());
        text[start..].to_owned()
    }
}

impl Drop for StderrToFile {
    fn drop(&mut self) {
        // SAFETY: `saved` is the descriptor dup returned; restoring and closing it is sound.
        unsafe {
            libc::dup2(self.saved, 2);
            libc::close(self.saved);
        }
    }
}
