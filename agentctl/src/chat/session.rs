//! The chat's session: created with the first prompt (or continued), its one event
//! subscription, and the terminal settings the chat puts back when it ends.

use protocol::methods::{SessionCreate, SessionGet};
use protocol::session::{SessionCreateParams, SessionGetParams, SessionInfo};

use super::{Attached, Chat};
use crate::client::{ClientError, Connection};
use crate::follow;
use crate::output::CommandError;

impl Chat {
    /// A new session in the chat's directory, with the model and mode `/model` and `/mode`
    /// chose; its events followed from its creation on.
    pub(super) async fn create_session(&mut self) -> Result<String, ClientError> {
        let params = SessionCreateParams {
            cwd: self.cwd.to_string_lossy().into_owned(),
            model: self.new_session.model.clone(),
            title: None,
            permission_mode: self.new_session.mode,
            permission_rules: None,
            mcp_servers: None,
            agent_type: None,
            append_system_prompt: None,
        };
        let created = match self.connection.request::<SessionCreate>(&params).await {
            Err(err) if crate::env_check::is_no_provider(&err) => {
                // The line editor owns the terminal: say what to run instead of asking.
                use crate::env_check::ProviderAdvice;
                match crate::env_check::advice(&self.connection).await {
                    ProviderAdvice::Restart { hint: text, .. }
                    | ProviderAdvice::ServiceEnvironment(text) => self.say(&text).await,
                    ProviderAdvice::None => {}
                }
                return Err(err);
            }
            created => created?,
        };
        let session_id = created.session_id;
        self.say(&format!(
            "session {session_id} · {} · {}",
            created.session.model,
            created.session.permission_mode.as_str()
        ))
        .await;
        let events =
            follow::subscribe(&self.connection, &session_id, created.session.last_seq).await;
        match events {
            Ok(events) => {
                self.last_seq = created.session.last_seq;
                self.session = Some(Attached {
                    session_id: session_id.clone(),
                    events,
                });
                // The session's MCP prompts join the names Tab completes.
                self.refresh_command_names().await;
                Ok(session_id)
            }
            Err(err) => Err(ClientError::Transport(err.message)),
        }
    }

    /// Follow `session_id`'s events after `after_seq`.
    pub(super) async fn attach(
        &mut self,
        session_id: &str,
        after_seq: u64,
    ) -> Result<(), CommandError> {
        let events = follow::subscribe(&self.connection, session_id, after_seq).await?;
        self.last_seq = after_seq;
        self.session = Some(Attached {
            session_id: session_id.to_owned(),
            events,
        });
        Ok(())
    }

    /// Stop following the session; the next prompt creates a new one.
    pub(super) async fn detach(&mut self) {
        if let Some(session) = self.session.take() {
            // A subscription the daemon no longer has is just as gone.
            let _ = self.connection.unsubscribe(session.events).await;
        }
        self.last_seq = 0;
    }
}

/// `session/get` without history.
pub(super) async fn session_info(
    connection: &Connection,
    session_id: &str,
) -> Result<SessionInfo, ClientError> {
    let params = SessionGetParams {
        session_id: session_id.to_owned(),
        include_history: false,
    };
    Ok(connection.request::<SessionGet>(&params).await?.session)
}
