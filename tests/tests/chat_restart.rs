//! `agentctl chat` across a daemon restart: a run shown in the chat goes on through a graceful
//! stop (SIGTERM) or a crash (SIGKILL) and the next start; the chat says it waits, follows the
//! session again after the last event shown, and shows the rest of the run once.

use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::pty::Pty;
use agentd_tests::scenario::*;

use crate::restart_resume::{blocking_call, kill_group, started_shell};

/// The model's answer after the resumed run reads the interrupted call's result.
const ANSWER: &str = "checked, all done";

async fn chat_survives(graceful: bool) {
    let mut s = Scenario::start(Format::OpenAi).await;
    s.mock.push(blocking_call("c_block"));
    s.mock.push(Reply::text(ANSWER));
    let mut command = s.daemon.env.agentctl();
    command.args(["--no-start", "chat"]);
    command.env("AGENTCTL_RECONNECT_SECS", "30");
    let mut pty = Pty::spawn(command, 100, 40);
    pty.expect("/help for commands").await;
    pty.send("block\r");
    let shell = started_shell(&s, 1).await;
    if graceful {
        s.daemon.signal(libc::SIGTERM);
        s.daemon.wait_exit().await;
    } else {
        s.daemon.kill().await;
        kill_group(shell);
    }
    pty.expect("waiting for it to come back").await;
    s.daemon.restart().await;
    pty.expect("agentd is back").await;
    pty.expect(ANSWER).await;
    let parser = pty
        .wait_visible("the after-run line", |screen| {
            screen.contents().contains(" out · ")
        })
        .await;
    let contents = parser.screen().contents();
    assert_eq!(contents.matches(ANSWER).count(), 1, "{contents}");
    assert!(!contents.contains("lost the connection"), "{contents}");
    assert_eq!(s.mock.requests().len(), 2, "the model was asked once more");
}

#[tokio::test]
async fn chat_follows_its_run_through_a_graceful_restart() {
    chat_survives(true).await;
}

#[tokio::test]
async fn chat_follows_its_run_through_a_crash_and_a_restart() {
    chat_survives(false).await;
}
