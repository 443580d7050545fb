//! The daemon going away under the chat (a restart, an upgrade, a crash): the chat waits for
//! it as `run` and `attach` do (`follow::reconnect`: bounded, `AGENTCTL_RECONNECT_SECS`),
//! subscribes again after the last seq shown, and the run shown goes on where it was; its
//! approvals are asked again once the replay is through (`approval_desk::restart`). With no
//! session yet, or when the daemon does not come back, the chat ends saying how to go on.
//! Unlike `run`, it never starts a daemon while waiting: a restart starts its own, and a
//! crashed one is started by its supervisor or by the next command.

use jsonrpsee::core::client::SubscriptionCloseReason;

use super::{Attached, Chat};
use crate::follow::reconnect::{self, Reconnected};
use crate::output::CommandError;

impl Chat {
    /// The subscription ended: subscribe again after a lag; the daemon gone, wait for it.
    pub(super) async fn on_stream_end(&mut self) -> Result<(), CommandError> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        let lagged = matches!(
            session.events.close_reason(),
            Some(SubscriptionCloseReason::Lagged)
        );
        let session_id = session.session_id.clone();
        if lagged && self.connection.is_connected() {
            let _ = self.connection.unsubscribe(session.events).await;
            return self.attach(&session_id, self.last_seq).await;
        }
        if self.connection.is_connected() {
            return Err(CommandError::failed(format!(
                "agentd ended the event stream of session {session_id} (was it deleted?)"
            )));
        }
        self.session = Some(session);
        self.wait_out_loss().await
    }

    /// The connection to the daemon is lost: wait for it (bounded) and follow the session
    /// again after the last seq shown. Err: no session to follow, or it did not come back.
    pub(super) async fn wait_out_loss(&mut self) -> Result<(), CommandError> {
        let Some(session_id) = self.session.as_ref().map(|s| s.session_id.clone()) else {
            return Err(self.lost());
        };
        if let Some(run) = self.run.as_mut() {
            let actions = run.desk.connection_lost();
            self.perform(actions).await;
        }
        self.say("agentd stopped; waiting for it to come back…")
            .await;
        let after_seq = self.last_seq;
        // Ctrl-C typed in the editor is a key, not a signal: the wait ends at its bound.
        let back = reconnect::wait_for_daemon(
            &self.connection,
            &session_id,
            after_seq,
            false,
            self.reconnect_wait,
            &mut self.interrupts,
        )
        .await;
        match back {
            Reconnected::Back {
                connection,
                subscription,
                replay_end,
            } => {
                self.connection = connection;
                self.session = Some(Attached {
                    session_id,
                    events: subscription,
                });
                self.say("agentd is back; the session goes on").await;
                if let Some(run) = self.run.as_mut() {
                    run.desk.reconnected(replay_end);
                    let actions = run.desk.caught_up(after_seq);
                    self.perform(actions).await;
                }
                Ok(())
            }
            Reconnected::Refused(err) => Err(err.into()),
            Reconnected::Interrupted | Reconnected::TimedOut => Err(self.lost()),
        }
    }

    /// The daemon went away for good: say how to go on once it is back.
    pub(super) fn lost(&self) -> CommandError {
        let next = match &self.session {
            Some(session) => format!("`agentctl chat --session {}` continues", session.session_id),
            None => "`agentctl chat` starts again".to_owned(),
        };
        CommandError::connection_lost(format!(
            "lost the connection to agentd (did it stop or crash?); once it is back, {next}"
        ))
    }
}
