//! The foundation: handshake, error codes, limits, socket handling, single instance, shutdown,
//! and agentctl's auto-start, `--json` and exit codes.

use std::os::unix::fs::PermissionsExt;

use agentd_tests::harness::{Client, Daemon, TestEnv, decode};
use pretty_assertions::assert_eq;
use protocol::daemon::{DaemonStatusParams, DaemonStatusResult, InitializeResult};
use protocol::error as codes;
use protocol::methods::DaemonStatus;
use serde_json::{Value, json};

#[tokio::test]
async fn initialize_returns_server_info_and_capabilities() {
    let daemon = Daemon::start().await;
    let mut client = Client::connect_raw(daemon.socket()).await.unwrap();
    let result: InitializeResult = decode(client.initialize().await);
    assert_eq!(result.server_info.name, "agentd");
    assert_eq!(result.protocol_version, protocol::PROTOCOL_VERSION);
    assert!(
        result
            .capabilities
            .methods
            .contains(&"daemon/status".to_owned())
    );
    assert_eq!(result.capabilities.max_line_bytes, 16 * 1024 * 1024);
}

#[tokio::test]
async fn methods_before_initialize_are_refused_and_the_connection_survives() {
    let daemon = Daemon::start().await;
    let mut client = Client::connect_raw(daemon.socket()).await.unwrap();
    let err = client
        .request("daemon/status", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code, codes::NOT_INITIALIZED as i64);
    assert!(err.message.contains("initialize"), "{}", err.message);
    client.initialize().await;
    let status: DaemonStatusResult = client
        .call::<DaemonStatus>(&DaemonStatusParams {})
        .await
        .unwrap();
    assert_eq!(status.pid, daemon.pid());
}

#[tokio::test]
async fn a_request_pipelined_right_after_initialize_sees_the_connection_initialised() {
    let daemon = Daemon::start().await;
    let mut client = Client::connect_raw(daemon.socket()).await.unwrap();
    let init = json!({"jsonrpc":"2.0","id":"a","method":"initialize","params":{"clientInfo":{"name":"t","version":"0"},"protocolVersion":"1.0"}});
    let status = json!({"jsonrpc":"2.0","id":"b","method":"daemon/status"});
    client.send_line(&format!("{init}\n{status}")).await;
    let first = client.response_for(&json!("a")).await;
    assert!(first.get("result").is_some(), "{first}");
    let second = client.response_for(&json!("b")).await;
    assert!(second.get("result").is_some(), "{second}");
}

#[tokio::test]
async fn a_different_protocol_major_version_is_refused() {
    let daemon = Daemon::start().await;
    let mut client = Client::connect_raw(daemon.socket()).await.unwrap();
    let err = client
        .request(
            "initialize",
            json!({"clientInfo": {"name": "t", "version": "0"}, "protocolVersion": "9.0"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, codes::UNSUPPORTED_PROTOCOL_VERSION as i64);
}

#[tokio::test]
async fn every_json_rpc_error_code_leaves_the_connection_usable() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let cases: &[(&str, i32)] = &[
        ("this is not json", codes::PARSE_ERROR),
        ("{\"jsonrpc\":\"2.0\",\"id\":1,", codes::PARSE_ERROR),
        (
            "{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"daemon/status\"}",
            codes::INVALID_REQUEST,
        ),
        ("{\"jsonrpc\":\"2.0\",\"id\":7}", codes::INVALID_REQUEST),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"daemon/status\",\"params\":3}",
            codes::INVALID_REQUEST,
        ),
        ("[]", codes::INVALID_REQUEST),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"no/such\"}",
            codes::METHOD_NOT_FOUND,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"session/list\",\"params\":{\"limit\":\"many\"}}",
            codes::INVALID_PARAMS,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}",
            codes::INVALID_PARAMS,
        ),
    ];
    for (line, code) in cases {
        client.send_line(line).await;
        let response = client.read_message().await;
        assert_eq!(
            response["error"]["code"],
            json!(code),
            "for {line}: {response}"
        );
        // The connection lives on.
        let status = client.request("daemon/status", json!({})).await;
        assert!(status.is_ok(), "after {line}: {status:?}");
    }
}

#[tokio::test]
async fn params_may_be_an_object_a_one_element_array_or_absent() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    for params in [json!({}), json!([{}]), json!([])] {
        client.request("daemon/status", params).await.unwrap();
    }
    client
        .send_line("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"daemon/status\"}")
        .await;
    let response = client.response_for(&json!("x")).await;
    assert!(response.get("result").is_some(), "{response}");
}

#[tokio::test]
async fn notifications_from_the_client_get_no_answer() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    client
        .send_line("{\"jsonrpc\":\"2.0\",\"method\":\"daemon/status\"}")
        .await;
    client
        .send_line("{\"jsonrpc\":\"2.0\",\"id\":\"after\",\"method\":\"daemon/status\"}")
        .await;
    // The first message back must be the answer to the request, not anything about the
    // notification: read raw messages, so nothing is set aside.
    let first = client.read_message().await;
    assert_eq!(first["id"], json!("after"), "{first}");
    assert!(first.get("result").is_some(), "{first}");
    // Nothing else arrives for the notification either: the next message on the connection is
    // the answer to the next request.
    client
        .send_line("{\"jsonrpc\":\"2.0\",\"id\":\"next\",\"method\":\"daemon/status\"}")
        .await;
    let second = client.read_message().await;
    assert_eq!(second["id"], json!("next"), "{second}");
}

#[tokio::test]
async fn batches_get_an_array_of_responses() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    client
        .send_line(r#"[{"jsonrpc":"2.0","id":1,"method":"daemon/status"},{"jsonrpc":"2.0","id":2,"method":"nope"}]"#)
        .await;
    let response = client.read_message().await;
    let items = response.as_array().expect("batch response is an array");
    assert_eq!(items.len(), 2);
    assert!(items[0].get("result").is_some());
    assert_eq!(items[1]["error"]["code"], json!(codes::METHOD_NOT_FOUND));
}

#[tokio::test]
async fn an_oversized_line_is_rejected_and_the_connection_survives() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon/status\",\"params\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(16 * 1024 * 1024)
    );
    client.send_line(&huge).await;
    let response = client.read_message().await;
    assert_eq!(
        response["error"]["code"],
        json!(codes::PARSE_ERROR),
        "{response}"
    );
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too long"),
        "{response}"
    );
    assert!(client.request("daemon/status", json!({})).await.is_ok());
}

#[tokio::test]
async fn socket_is_private_to_the_user() {
    // In a directory the daemon creates, as `$XDG_RUNTIME_DIR/agentd` by default: it is made
    // 0700 (an existing directory keeps its mode, see `reliability_files`).
    let mut env = TestEnv::new();
    env.socket = env.path("run").join("agentd").join("agentd.sock");
    let daemon = Daemon::start_in(env).await;
    let socket_mode = std::fs::metadata(daemon.socket())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(socket_mode & 0o777, 0o600);
    let dir_mode = std::fs::metadata(daemon.socket().parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
}

#[tokio::test]
async fn status_reports_paths_counts_and_clients() {
    let daemon = Daemon::start().await;
    let mut first = daemon.client().await;
    let _second = daemon.client().await;
    // The harness waits for readiness without a connection of its own, and both clients are
    // counted once their `initialize` is answered: the count is exact at once.
    let status: DaemonStatusResult = first
        .call::<DaemonStatus>(&DaemonStatusParams {})
        .await
        .unwrap();
    assert_eq!(status.socket_path, daemon.socket().display().to_string());
    assert_eq!(status.connected_clients, 2);
    assert_eq!(status.counts.tasks, 0);
    assert!(
        status
            .state_dir
            .starts_with(&daemon.env.path("state").display().to_string())
    );
}

#[tokio::test]
async fn a_stale_socket_file_is_replaced() {
    let env = TestEnv::new();
    // A socket file nobody listens on, as a crashed daemon leaves behind.
    std::fs::set_permissions(
        env.socket.parent().unwrap(),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    drop(std::os::unix::net::UnixListener::bind(&env.socket).unwrap());
    assert!(env.socket.exists());
    let daemon = Daemon::start_in(env).await;
    let mut client = daemon.client().await;
    assert!(client.request("daemon/status", json!({})).await.is_ok());
}

#[tokio::test]
async fn a_second_daemon_on_the_same_socket_is_refused() {
    let daemon = Daemon::start().await;
    let second = daemon.env.spawn_daemon();
    let output = second.wait_with_output().await.unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("already running"), "{stderr}");
    // The first one is untouched.
    let mut client = daemon.client().await;
    assert!(client.request("daemon/status", json!({})).await.is_ok());
}

#[tokio::test]
async fn sigterm_drains_removes_the_socket_and_exits_zero() {
    let mut daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    daemon.signal(libc::SIGTERM);
    assert!(client.closed_by_daemon().await);
    let status = daemon.wait_exit().await;
    assert!(status.success(), "{status:?}\n{}", daemon.log());
    assert!(!daemon.socket().exists());
    // It logged to its file in the state directory, start to stop.
    let log = daemon.log();
    assert!(log.contains("agentd listening"), "{log}");
    assert!(log.contains("agentd stopped"), "{log}");
}

#[tokio::test]
async fn daemon_shutdown_answers_then_stops() {
    let mut daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let result = client.request("daemon/shutdown", json!({})).await.unwrap();
    assert_eq!(result, json!({"shuttingDown": true}));
    let status = daemon.wait_exit().await;
    assert!(status.success());
    assert!(!daemon.socket().exists());
}

#[tokio::test]
async fn agentctl_auto_starts_the_daemon_and_prints_one_json_object() {
    let env = TestEnv::new();
    let output = env
        .agentctl()
        .args(["status", "--json"])
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let status: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        status["socketPath"],
        json!(env.socket.display().to_string())
    );
    let pid = status["pid"].as_u64().unwrap();

    // `daemon start` is idempotent: the same daemon answers.
    let output = env
        .agentctl()
        .args(["daemon", "start", "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success());
    let started: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(started["started"], json!(false));
    assert_eq!(started["pid"].as_u64().unwrap(), pid);

    let output = env
        .agentctl()
        .args(["daemon", "stop", "--json"])
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stopped: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(stopped["stopped"], json!(true));
    assert!(!env.socket.exists());
}

#[tokio::test]
async fn agentctl_exits_3_when_the_daemon_is_unreachable_with_no_start() {
    let env = TestEnv::new();
    let output = env
        .agentctl()
        .args(["--no-start", "status"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot reach agentd"), "{stderr}");
    assert!(stderr.contains("agentctl daemon start"), "{stderr}");
    // `daemon status` never starts it either.
    let output = env
        .agentctl()
        .args(["daemon", "status", "--json"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    let err: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(err["error"]["exitCode"], json!(3));
}

#[tokio::test]
async fn agentctl_usage_errors_exit_2() {
    let env = TestEnv::new();
    let output = env
        .agentctl()
        .args(["no-such-command"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[tokio::test]
async fn a_bad_config_file_is_reported_with_file_and_line_and_never_replaced() {
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "sk-test")
        .config("max_steps = 5\n[providers.local]\nkind = \"openai\"\nbase_url = \n");
    let daemon = Daemon::start_in(env).await;
    let mut client = daemon.client().await;
    let status: DaemonStatusResult = client
        .call::<DaemonStatus>(&DaemonStatusParams {})
        .await
        .unwrap();
    let error = status.config_error.expect("config error reported");
    assert!(error.contains("config.toml:4"), "{error}");
    // The environment provider is not used instead of the broken file.
    let workspace = daemon.env.workspace();
    let err = client
        .request("session/create", json!({"cwd": workspace}))
        .await
        .unwrap_err();
    assert_eq!(err.code, codes::CONFIG_ERROR as i64);
    assert!(err.message.contains("config.toml:4"), "{}", err.message);
}

#[tokio::test]
async fn a_socket_passed_by_systemd_activation_is_served_and_left_in_place() {
    use std::os::fd::AsRawFd;
    let env = TestEnv::new();
    std::fs::set_permissions(
        env.socket.parent().unwrap(),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    // What systemd does for agentd.socket: listen, then start the service with the socket as
    // fd 3 and LISTEN_PID/LISTEN_FDS naming it.
    let listener = std::os::unix::net::UnixListener::bind(&env.socket).unwrap();
    let fd = listener.as_raw_fd();
    let mut command = tokio::process::Command::new("sh");
    env.apply(&mut command);
    command
        .arg("-c")
        .arg(format!(
            "LISTEN_PID=$$ LISTEN_FDS=1 exec {}",
            agentd_tests::harness::binary("agentd").display()
        ))
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and exec.
    unsafe {
        command.pre_exec(move || {
            if fd == 3 {
                if libc::fcntl(3, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut daemon = command.spawn().unwrap();
    // Connections queue on the socket even before the daemon runs: connect at once.
    let mut client = Client::connect_raw(&env.socket).await.unwrap();
    client.initialize().await;
    let status: DaemonStatusResult = client
        .call::<DaemonStatus>(&DaemonStatusParams {})
        .await
        .unwrap();
    assert_eq!(status.pid, daemon.id().unwrap());
    client.request("daemon/shutdown", json!({})).await.unwrap();
    let exit = tokio::time::timeout(agentd_tests::harness::WAIT, daemon.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(exit.success(), "{exit:?}");
    // The socket belongs to systemd: still there for the next activation.
    assert!(env.socket.exists());
}

/// Defence in depth behind the 0600 socket: a connection from another uid gets one
/// "forbidden" error and is closed. Needs root to act as another user (`nobody`).
#[tokio::test]
async fn another_users_connection_is_refused() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("another_users_connection_is_refused needs root to connect as another uid");
        return;
    }
    let daemon = Daemon::start().await;
    // Open the file permissions so only the peer-credential check stands in the way.
    let dir = daemon.socket().parent().unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(daemon.socket(), std::fs::Permissions::from_mode(0o666)).unwrap();
    let script = "import socket,sys\n\
                  s=socket.socket(socket.AF_UNIX)\n\
                  s.connect(sys.argv[1])\n\
                  s.sendall(b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon/status\"}\\n')\n\
                  f=s.makefile('rb')\n\
                  print(f.readline().decode().strip())\n\
                  print('EOF' if f.readline()==b'' else 'MORE')\n";
    let mut command = std::process::Command::new("python3");
    command.args(["-c", script]).arg(daemon.socket());
    std::os::unix::process::CommandExt::uid(&mut command, 65534);
    std::os::unix::process::CommandExt::gid(&mut command, 65534);
    let output = tokio::process::Command::from(command)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut lines = stdout.lines();
    let error: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(error["error"]["code"], json!(codes::FORBIDDEN), "{error}");
    assert_eq!(lines.next(), Some("EOF"), "the connection is closed");
    // Our own user is still served.
    let mut client = daemon.client().await;
    assert!(client.request("daemon/status", json!({})).await.is_ok());
}
