//! `agentctl run` and `attach` across a daemon restart: the command keeps following its run
//! through a graceful stop (SIGTERM) or a crash (SIGKILL) and the next start, and ends with the
//! run's exit code, the model's answer printed once; a daemon that does not come back ends it
//! in bounded time (`AGENTCTL_RECONNECT_SECS`), pointing at `agentctl attach`, which then
//! follows the rest; Ctrl-C while waiting stops waiting; a daemon that agentctl itself started
//! is started again by it after a crash.

use std::process::Stdio;

use agentd_tests::harness::{TestEnv, WAIT, lock_path, text};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::*;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::restart_resume::{blocking_call, kill_group, started_shell, started_shell_in};

/// What agentctl says when the connection is lost mid-run.
const WAITING: &str = "agentd stopped; waiting for it to come back to follow the run…";

/// The model's answer after the resumed run reads the interrupted call's result.
const ANSWER: &str = "checked, all done";

/// `agentctl --no-start ARGS` in `env`, waiting at most `wait_secs` for a lost daemon, its
/// output piped.
fn spawn_agentctl(env: &TestEnv, wait_secs: u64, args: &[&str]) -> tokio::process::Child {
    env.agentctl()
        .env("AGENTCTL_RECONNECT_SECS", wait_secs.to_string())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agentctl")
}

/// A run that blocks in a tool, then answers [`ANSWER`].
fn script_blocking_run(mock: &MockLlm) {
    mock.push(blocking_call("c_block"));
    mock.push(Reply::text(ANSWER));
}

/// Read `pipe` line by line until a line contains `wanted`; the lines read.
async fn read_until(pipe: &mut (impl AsyncRead + Unpin), wanted: &str) -> String {
    let mut lines = BufReader::new(pipe).lines();
    let mut read = String::new();
    let found = tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.expect("read agentctl's output") {
            read.push_str(&line);
            read.push('\n');
            if line.contains(wanted) {
                return true;
            }
        }
        false
    })
    .await;
    assert!(
        matches!(found, Ok(true)),
        "agentctl never said {wanted:?}:\n{read}"
    );
    read
}

async fn finished(child: tokio::process::Child) -> std::process::Output {
    tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("agentctl finished in time")
        .expect("wait for agentctl")
}

async fn run_survives(graceful: bool) {
    let mut s = Scenario::start(Format::OpenAi).await;
    script_blocking_run(&s.mock);
    let child = spawn_agentctl(&s.daemon.env, 30, &["--no-start", "run", "block"]);
    let shell = started_shell(&s, 1).await;
    if graceful {
        s.daemon.signal(libc::SIGTERM);
        s.daemon.wait_exit().await;
    } else {
        s.daemon.kill().await;
        kill_group(shell);
    }
    s.daemon.restart().await;

    let output = finished(child).await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(
        stdout,
        format!("{ANSWER}\n"),
        "the answer once; stderr:\n{stderr}"
    );
    assert_eq!(stderr.matches(WAITING).count(), 1, "{stderr}");
    assert!(
        stderr.contains(
            "resumed after a daemon restart (resume 1 of at most 2); 1 tool call was interrupted"
        ),
        "{stderr}"
    );
    assert_eq!(
        stderr.contains("the daemon is stopping: this run resumes when it starts again\n"),
        graceful,
        "{stderr}"
    );
    assert!(
        !stderr.contains("agentctl attach"),
        "it followed on: {stderr}"
    );
    assert_eq!(s.mock.requests().len(), 2, "the model was asked once more");
}

#[tokio::test]
async fn run_follows_its_run_through_a_graceful_restart_and_exits_with_its_status() {
    run_survives(true).await;
}

#[tokio::test]
async fn run_follows_its_run_through_a_crash_and_a_restart() {
    run_survives(false).await;
}

#[tokio::test]
async fn run_gives_up_in_bounded_time_pointing_at_attach_which_follows_the_rest() {
    let mut s = Scenario::start(Format::OpenAi).await;
    script_blocking_run(&s.mock);
    let child = spawn_agentctl(&s.daemon.env, 1, &["--no-start", "run", "block"]);
    started_shell(&s, 1).await;
    s.daemon.signal(libc::SIGTERM);
    s.daemon.wait_exit().await;

    let output = finished(child).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "stderr:\n{stderr}");
    let session = stderr
        .split("`agentctl attach ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no `agentctl attach SESSION` in:\n{stderr}"))
        .to_owned();
    assert!(
        stderr.contains(&format!(
            "agentctl: agentd did not come back within 1 s; once it is back, follow the run with `agentctl attach {session}`"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("sessions show"), "{stderr}");

    // Once it is back, the command it names shows the rest of the run.
    s.daemon.restart().await;
    let attached = s
        .daemon
        .env
        .run_agentctl(&["--no-start", "attach", &session])
        .await;
    let stdout = text(&attached.stdout);
    assert_eq!(
        attached.status.code(),
        Some(0),
        "{}",
        text(&attached.stderr)
    );
    assert_eq!(stdout.matches(ANSWER).count(), 1, "{stdout}");
}

#[tokio::test]
async fn ctrl_c_while_waiting_stops_waiting_and_says_how_to_follow_on() {
    let mut s = Scenario::start(Format::OpenAi).await;
    script_blocking_run(&s.mock);
    let mut child = spawn_agentctl(&s.daemon.env, 30, &["--no-start", "run", "block"]);
    started_shell(&s, 1).await;
    s.daemon.signal(libc::SIGTERM);
    let mut stderr_pipe = child.stderr.take().expect("stderr piped");
    let before = read_until(&mut stderr_pipe, WAITING).await;
    s.daemon.wait_exit().await;
    let pid = child.id().expect("agentctl runs") as i32;
    // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("agentctl stopped waiting")
        .expect("wait for agentctl");
    let mut rest = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stderr_pipe, &mut rest)
        .await
        .expect("read the rest of stderr");
    assert_eq!(status.code(), Some(130), "{before}{rest}");
    assert!(
        rest.contains("agentctl: stopped waiting; the run goes on once agentd is back: follow it with `agentctl attach ses_"),
        "{before}{rest}"
    );
}

#[tokio::test]
async fn attach_follows_a_running_session_through_a_restart() {
    let mut s = Scenario::start(Format::OpenAi).await;
    script_blocking_run(&s.mock);
    let (mut client, session) = s.session().await;
    client.prompt(&session, "block").await;
    started_shell(&s, 1).await;
    let mut child = spawn_agentctl(&s.daemon.env, 30, &["--no-start", "attach", &session]);
    // Subscribed once the transcript's replay shows the prompt.
    let mut stdout_pipe = child.stdout.take().expect("stdout piped");
    let replayed = read_until(&mut stdout_pipe, "> block").await;
    s.daemon.signal(libc::SIGTERM);
    s.daemon.wait_exit().await;
    drop(client);
    s.daemon.restart().await;

    let output = finished(child).await;
    let mut stdout = replayed;
    tokio::io::AsyncReadExt::read_to_string(&mut stdout_pipe, &mut stdout)
        .await
        .expect("read the rest of stdout");
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(stdout.matches(ANSWER).count(), 1, "{stdout}");
    assert!(stderr.contains(WAITING), "{stderr}");
}

#[tokio::test]
async fn a_daemon_that_agentctl_started_is_started_again_after_a_crash() {
    let mock = MockLlm::start().await;
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    script_blocking_run(&mock);
    // No daemon runs: `run` starts one.
    let child = spawn_agentctl(&env, 30, &["run", "block"]);
    let shell = started_shell_in(&env.workspace(), 1).await;
    let first: i32 = std::fs::read_to_string(lock_path(&env.socket))
        .expect("the daemon's lock file")
        .trim()
        .parse()
        .expect("its pid");
    // SAFETY: kill has no memory-safety preconditions; the pid holds this test's lock.
    unsafe {
        libc::kill(first, libc::SIGKILL);
    }
    kill_group(shell);

    let output = finished(child).await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(stdout, format!("{ANSWER}\n"));
    assert!(stderr.contains(WAITING), "{stderr}");
    let second: i32 = std::fs::read_to_string(lock_path(&env.socket))
        .expect("the new daemon's lock file")
        .trim()
        .parse()
        .expect("its pid");
    assert_ne!(second, first, "a new daemon runs the rest");
}
