//! run_shell in a sandbox: with Landlock the shell writes only in the workspace (`.git`
//! included), the temp dir and `[sandbox] writable` dirs; the project's configuration
//! (`.agents/`, `.claude/`, `skills/`, `.mcp.json`, `.git/hooks/`, `.git/config`, `AGENTS.md`,
//! `CLAUDE.md`) stays read-only where a mount namespace can be made, and what a command
//! creates of it is said in the result; signals and abstract sockets are scoped; `network = false` refuses TCP;
//! `pass_env` lets named variables through. `daemon/status` and `agentctl status` say what is
//! enforced. Scenarios run in `bypass` mode: the mode never turns the sandbox off.
//!
//! Each test branches on the status the daemon reports, and that status is checked against
//! the kernel, so on a machine with Landlock the confined path is the one exercised.

use std::path::PathBuf;

use agentd_tests::harness::{Daemon, TestEnv};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::*;
use protocol::daemon::{DaemonStatusParams, DaemonStatusResult};
use protocol::event::RunStatus;
use protocol::methods::DaemonStatus;
use serde_json::json;

/// A daemon whose temp dir (`TMPDIR`) is the test's own `tmp/`, so the rest of the test's
/// directory (under /tmp) is outside everything the sandbox lets the shell write.
pub(crate) struct Sandboxed {
    pub(crate) scenario: Scenario,
    pub(crate) env_dir: PathBuf,
}

pub(crate) async fn sandboxed(extra: &str, vars: &[(&str, &str)]) -> Sandboxed {
    let mock = MockLlm::start().await;
    let mut env = TestEnv::new();
    let env_dir = env.dir.path().to_path_buf();
    for sub in ["tmp", "outside", "extra"] {
        std::fs::create_dir_all(env_dir.join(sub)).unwrap();
    }
    env = env.var("TMPDIR", env_dir.join("tmp").display().to_string());
    for (key, value) in vars {
        env = env.var(key, *value);
    }
    let extra = extra.replace("{dir}", &env_dir.display().to_string());
    let env = env.config(&config_toml(&mock, Format::OpenAi, &extra));
    Sandboxed {
        scenario: Scenario {
            daemon: Daemon::start_in(env).await,
            mock,
            format: Format::OpenAi,
        },
        env_dir,
    }
}

impl Sandboxed {
    pub(crate) async fn status(&self) -> String {
        let mut client = self.scenario.client().await;
        let status: DaemonStatusResult = client
            .call::<DaemonStatus>(&DaemonStatusParams {})
            .await
            .unwrap();
        check_status_shape(&status.sandbox);
        status.sandbox
    }

    /// Runs `command` through run_shell in a new session; returns its output.
    pub(crate) async fn shell(&self, command: &str) -> String {
        let s = &self.scenario;
        s.mock.push(Reply::tool_call(
            "c_sh",
            "run_shell",
            json!({ "command": command }),
        ));
        s.mock.push(Reply::text("done"));
        let (mut client, session) = s.session().await;
        client.prompt(&session, "run it").await;
        let events = client.events_until_run_finished().await;
        assert_eq!(run_status(&events), RunStatus::Completed);
        let results = tool_results(&events);
        results[0].1.clone()
    }
}

/// `landlock abi N…` or `none: <why>`; and Landlock whenever this kernel has it.
fn check_status_shape(status: &str) {
    if let Some(rest) = status.strip_prefix("landlock abi ") {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        assert!(!digits.is_empty(), "no abi number in {status:?}");
    } else {
        assert!(status.starts_with("none: "), "unexpected status {status:?}");
    }
}

/// The kernel's Landlock ABI (0 without Landlock), asked directly.
pub(crate) fn kernel_landlock_abi() -> i64 {
    // SAFETY: with a null attribute and LANDLOCK_CREATE_RULESET_VERSION the call only returns
    // a number.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    abi.max(0)
}

/// Whether the reported status confines writes; on a kernel with Landlock it must.
pub(crate) fn confined(status: &str) -> bool {
    let confined = status.starts_with("landlock abi ");
    if kernel_landlock_abi() > 0 {
        assert!(
            confined,
            "the kernel has landlock but the status is {status:?}"
        );
    }
    confined
}

/// Writes outside everything allowed fail under Landlock; the workspace, `.git` (with real
/// git), the temp dir, a `writable` dir and /dev/null work.
#[tokio::test]
async fn the_shell_writes_only_where_the_sandbox_allows() {
    let t = sandboxed("[sandbox]\nwritable = [\"{dir}/extra\"]\n", &[]).await;
    let status = t.status().await;
    let outside = t.env_dir.join("outside").join("escaped");
    let extra = t.env_dir.join("extra").join("listed");
    let command = format!(
        "echo x > {outside} && echo outside-written; \
         echo x > inside && echo inside-written; \
         git init -q && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m one \
           && echo git-committed; \
         echo x > \"$TMPDIR/temp\" && echo temp-written; \
         echo x > {extra} && echo extra-written; \
         echo x > /dev/null && echo null-written",
        outside = outside.display(),
        extra = extra.display(),
    );
    let output = t.shell(&command).await;
    for written in [
        "inside-written",
        "git-committed",
        "temp-written",
        "extra-written",
        "null-written",
    ] {
        assert!(output.contains(written), "{written} missing:\n{output}");
    }
    assert!(t.scenario.workspace().join(".git").join("HEAD").exists());
    assert!(extra.exists());
    if confined(&status) {
        assert!(!output.contains("outside-written"), "{output}");
        assert!(output.contains("Permission denied"), "{output}");
        assert!(!outside.exists(), "the shell wrote {}", outside.display());
    } else {
        assert!(output.contains("outside-written"), "{output}");
    }
}

/// `[sandbox] enabled = false` runs the shell unconfined, and both `daemon/status` and
/// `agentctl status` say so.
#[tokio::test]
async fn disabled_in_config_the_shell_writes_anywhere() {
    let t = sandboxed("[sandbox]\nenabled = false\n", &[]).await;
    let status = t.status().await;
    assert_eq!(
        status,
        "none: disabled in config ([sandbox] enabled = false)"
    );
    let outside = t.env_dir.join("outside").join("free");
    let output = t
        .shell(&format!("echo x > {} && echo written", outside.display()))
        .await;
    assert!(output.contains("written"), "{output}");
    assert!(outside.exists());
}

/// `agentctl status` prints the sandbox line `daemon/status` reports.
#[tokio::test]
async fn agentctl_status_shows_the_sandbox() {
    let t = sandboxed("", &[]).await;
    let status = t.status().await;
    confined(&status);
    let output = t.scenario.daemon.env.run_agentctl(&["status"]).await;
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find(|line| line.trim_start().starts_with("sandbox"))
        .unwrap_or_else(|| panic!("no sandbox line in:\n{stdout}"));
    assert_eq!(
        line.trim_start().trim_start_matches("sandbox").trim(),
        status
    );
}

/// `.agents/`, `.claude/` and `skills/` in the workspace are read-only for the shell where
/// the status says so (a read-only bind mount in the child's mount namespace); the rest of
/// the workspace stays writable and those dirs stay readable.
#[tokio::test]
async fn project_agent_dirs_are_read_only_for_the_shell() {
    let t = sandboxed("", &[]).await;
    let status = t.status().await;
    let workspace = t.scenario.workspace();
    for dir in [".agents", ".claude", "skills"] {
        std::fs::create_dir_all(workspace.join(dir)).unwrap();
        std::fs::write(workspace.join(dir).join("kept"), "original").unwrap();
    }
    let output = t
        .shell(
            "for d in .agents .claude skills; do \
               echo x > $d/new && echo $d-created; \
               echo x > $d/kept && echo $d-overwritten; \
               cat $d/kept; echo; \
             done; echo x > other && echo other-written",
        )
        .await;
    assert!(output.contains("other-written"), "{output}");
    assert_eq!(output.matches("original").count(), 3, "{output}");
    if confined(&status) && status.contains("read-only project configuration") {
        for dir in [".agents", ".claude", "skills"] {
            assert!(!output.contains(&format!("{dir}-created")), "{output}");
            assert!(!output.contains(&format!("{dir}-overwritten")), "{output}");
            assert!(!workspace.join(dir).join("new").exists());
            assert_eq!(
                std::fs::read_to_string(workspace.join(dir).join("kept")).unwrap(),
                "original"
            );
        }
        assert!(output.contains("Read-only file system"), "{output}");
    } else {
        assert!(output.contains(".agents-created"), "{output}");
    }
    // On this kind of machine (root, or user namespaces allowed) the mounts are made.
    if kernel_landlock_abi() > 0 && unshare_works() {
        assert!(
            status.contains("read-only project configuration"),
            "{status}"
        );
    }
}

/// Whether `unshare -m` (root) or `unshare -U -m -r` works here, as the daemon's probe needs.
fn unshare_works() -> bool {
    ["-m", "-Umr"].iter().any(|flags| {
        std::process::Command::new("unshare")
            .args([*flags, "true"])
            .status()
            .is_ok_and(|status| status.success())
    })
}

/// `[sandbox] network = false` refuses a TCP connect where the ABI allows it (4 and later):
/// no connection reaches the test's listener. With the default the same request arrives.
#[tokio::test]
async fn network_false_refuses_tcp_from_the_shell() {
    let denied = sandboxed("[sandbox]\nnetwork = false\n", &[]).await;
    let allowed = sandboxed("", &[]).await;
    for (t, network) in [(&denied, false), (&allowed, true)] {
        let status = t.status().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let abi: i64 = status
            .strip_prefix("landlock abi ")
            .and_then(|rest| rest.split(',').next())
            .and_then(|abi| abi.parse().ok())
            .unwrap_or(0);
        if !network && confined(&status) && abi >= 4 {
            assert!(status.contains("network denied"), "{status}");
            // Nobody answers: a connection that got through would wait out curl's bound and
            // stay in the listener's queue.
            let output = t
                .shell(&format!(
                    "curl -sS --max-time 5 -o /dev/null http://127.0.0.1:{port}/ && echo connected"
                ))
                .await;
            assert!(!output.contains("connected"), "{output}");
            let listener = listener.into_std().unwrap();
            listener.set_nonblocking(true).unwrap();
            let queued = listener.accept();
            assert!(
                queued
                    .as_ref()
                    .is_err_and(|error| error.kind() == std::io::ErrorKind::WouldBlock),
                "a connection got through: {queued:?}\n{output}"
            );
        } else {
            // Answers one request with an empty 200.
            let server = tokio::spawn(async move {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut request = [0u8; 1024];
                let _ = tokio::io::AsyncReadExt::read(&mut stream, &mut request).await;
                tokio::io::AsyncWriteExt::write_all(
                    &mut stream,
                    b"HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n",
                )
                .await
                .unwrap();
            });
            let output = t
                .shell(&format!(
                    "curl -sS -o /dev/null http://127.0.0.1:{port}/ && echo connected"
                ))
                .await;
            assert!(output.contains("connected"), "{status}: {output}");
            server.await.unwrap();
        }
    }
}

/// The shell's environment carries no key; `[sandbox] pass_env` lets a listed variable
/// through and nothing else.
#[tokio::test]
async fn pass_env_lets_listed_variables_through_and_keys_stay_out() {
    let t = sandboxed(
        "[sandbox]\npass_env = [\"AGENTD_TEST_PASSED\"]\n",
        &[
            ("AGENTD_TEST_PASSED", "passed-value"),
            ("AGENTD_TEST_UNLISTED", "unlisted-value"),
            ("GITHUB_TOKEN", "ghp-sandbox-secret"),
        ],
    )
    .await;
    let output = t.shell("env").await;
    assert!(
        output.contains("AGENTD_TEST_PASSED=passed-value"),
        "{output}"
    );
    assert!(!output.contains("unlisted-value"), "{output}");
    assert!(!output.contains("ghp-sandbox-secret"), "{output}");
}

/// The helper an unprivileged daemon confines its shell with (`agentd __sandbox-exec`, which
/// makes a user namespace for the read-only mounts), run as an unprivileged uid: writes land
/// only where the plan allows, the read-only dir and file stay read-only, the masked socket is no
/// socket, and the shell keeps its uid.
/// Needs root (to become that uid), Landlock and user namespaces; elsewhere there is nothing
/// to run.
#[tokio::test]
async fn the_sandbox_helper_confines_an_unprivileged_shell() {
    const UID: u32 = 65534;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || kernel_landlock_abi() == 0 || !unshare_works() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("agentd-helper")
        .tempdir_in("/tmp")
        .unwrap();
    let root = dir.path();
    for sub in ["work/.agents", "outside"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::write(root.join("work/.agents/kept"), "original").unwrap();
    std::fs::write(root.join("work/AGENTS.md"), "notes").unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(root.join("daemon.sock")).unwrap();
    for path in [
        root.to_path_buf(),
        root.join("work"),
        root.join("work/.agents"),
        root.join("work/.agents/kept"),
        root.join("work/AGENTS.md"),
        root.join("outside"),
    ] {
        std::os::unix::fs::chown(&path, Some(UID), Some(UID)).unwrap();
    }
    let work = root.join("work");
    let abi = kernel_landlock_abi().to_string();
    let output = tokio::process::Command::new(agentd_tests::harness::binary("agentd"))
        .args(["__sandbox-exec", "--abi", &abi, "--writable"])
        .arg(&work)
        .arg("--writable")
        .arg("/dev/null")
        .arg("--read-only")
        .arg(work.join(".agents"))
        .arg("--read-only")
        .arg(work.join("AGENTS.md"))
        .arg("--mask")
        .arg(root.join("daemon.sock"))
        .args(["--", "sh", "-c"])
        .arg(format!(
            "id -u; test -S {socket} && echo socket-visible; \
             echo x > {outside}/escaped && echo outside-written; \
             echo x > .agents/kept && echo agents-written; \
             echo x > AGENTS.md && echo notes-written; rm -f AGENTS.md && echo notes-removed; \
             echo x > inside && echo inside-written; cat .agents/kept",
            outside = root.join("outside").display(),
            socket = root.join("daemon.sock").display(),
        ))
        .current_dir(&work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .uid(UID)
        .gid(UID)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [UID.to_string().as_str(), "inside-written", "original"],
        "{stderr}"
    );
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert!(stderr.contains("Read-only file system"), "{stderr}");
    assert!(!root.join("outside/escaped").exists());
    assert_eq!(
        std::fs::read_to_string(work.join("AGENTS.md")).unwrap(),
        "notes"
    );
}

/// The daemon's socket is covered by `/dev/null` in the shell's mount namespace where the
/// status says so: a command cannot connect to it to answer its own approvals or trust its
/// own project. Without the mounts it stays a socket.
#[tokio::test]
async fn the_shell_cannot_reach_the_daemons_socket() {
    let t = sandboxed("", &[]).await;
    let status = t.status().await;
    let socket = t.scenario.daemon.socket().display().to_string();
    let output = t
        .shell(&format!(
            "test -S {socket} && echo socket-visible; \
             curl -sS --max-time 5 --unix-socket {socket} http://agentd/ >/dev/null 2>&1; \
             echo curl-exit=$?"
        ))
        .await;
    if confined(&status) && status.contains("daemon socket hidden") {
        assert!(!output.contains("socket-visible"), "{output}");
        // 7: curl could not connect.
        assert!(output.contains("curl-exit=7"), "{output}");
    } else {
        assert!(output.contains("socket-visible"), "{output}");
    }
    if kernel_landlock_abi() > 0 && unshare_works() {
        assert!(status.contains("daemon socket hidden"), "{status}");
    }
    // The daemon itself still answers on it.
    assert_eq!(t.status().await, status);
}

/// Landlock scopes (ABI 6 and later): a command cannot signal a process outside its sandbox
/// (`kill -0` on the daemon is refused) nor connect to an abstract unix socket made outside it
/// (the test's own listener gets no connection); the status says so. Below ABI 6 both work
/// and the status says scopes need ABI 6.
#[tokio::test]
async fn the_shell_cannot_signal_the_daemon_nor_reach_abstract_sockets() {
    use std::os::linux::net::SocketAddrExt;
    let t = sandboxed("", &[]).await;
    let status = t.status().await;
    let name = format!("agentd-test-scope-{}", std::process::id());
    let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind_addr(&address).unwrap();
    listener.set_nonblocking(true).unwrap();
    let output = t
        .shell(&format!(
            "kill -0 {pid} && echo signalled; \
             python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); \
             s.connect(chr(0) + '{name}'); print('connected')\"",
            pid = t.scenario.daemon.pid(),
        ))
        .await;
    let accepted = listener.accept();
    if confined(&status) && kernel_landlock_abi() >= 6 {
        assert!(
            status.contains("signals and abstract sockets scoped"),
            "{status}"
        );
        assert!(!output.contains("signalled"), "{output}");
        assert!(!output.contains("connected"), "{output}");
        assert!(output.contains("Operation not permitted"), "{output}");
        assert!(
            accepted
                .as_ref()
                .is_err_and(|error| error.kind() == std::io::ErrorKind::WouldBlock),
            "a connection got through: {accepted:?}\n{output}"
        );
    } else {
        assert!(output.contains("signalled"), "{output}");
        assert!(output.contains("connected"), "{output}");
        if confined(&status) {
            assert!(
                status.contains("not scoped (needs landlock abi 6)"),
                "{status}"
            );
        }
    }
}
