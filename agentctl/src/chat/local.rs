//! The chat's local commands (`/help`, `/status`, `/mode`, `/model`, `/cost`, `/sessions`,
//! `/new`, `/quit`): answered from the daemon's state, never by a model call. `/mode` and
//! `/model` change the session with `session/update` (from its next run on), or the session
//! the next prompt creates.

use protocol::approval::PermissionMode;
use protocol::error::METHOD_NOT_FOUND;
use protocol::methods::{SessionList, SessionUpdate};
use protocol::session::{SessionInfo, SessionListParams, SessionUpdateParams};

use super::line::{HELP, LocalCommand};
use super::session::session_info;
use super::{Chat, Next};
use crate::client::ClientError;
use crate::commands::approvals::now_unix;
use crate::commands::sessions::format_table;
use crate::output::CommandError;

/// Sessions `/sessions` shows.
const SESSIONS_SHOWN: usize = 10;

/// Sessions `/sessions` asks the daemon for before keeping this directory's.
const SESSIONS_ASKED: u32 = 200;

impl Chat {
    pub(super) async fn on_command(&mut self, command: LocalCommand) -> Result<Next, CommandError> {
        match command {
            LocalCommand::Help => self.say(HELP).await,
            LocalCommand::Status => self.status().await,
            LocalCommand::Mode(mode) => self.set_mode(mode).await,
            LocalCommand::Model(model) => self.set_model(model).await,
            LocalCommand::Cost => self.cost().await,
            LocalCommand::Sessions => self.sessions().await,
            LocalCommand::New if self.run.is_some() => {
                self.say("a run is active: wait for it or Ctrl-C to cancel it, then /new")
                    .await
            }
            LocalCommand::New => {
                self.detach().await;
                self.say("the next prompt starts a new session").await;
            }
            LocalCommand::Quit => return Ok(Next::Quit),
            LocalCommand::Invalid(message) => self.say(&message).await,
        }
        Ok(Next::Continue)
    }

    /// The session as the daemon has it, or what the next prompt will create.
    async fn current(&mut self) -> Option<SessionInfo> {
        let session_id = self.session.as_ref()?.session_id.clone();
        match session_info(&self.connection, &session_id).await {
            Ok(info) => Some(info),
            Err(err) => {
                self.say(&format!("agentctl: {err}")).await;
                None
            }
        }
    }

    async fn status(&mut self) {
        if self.session.is_none() {
            let model = self
                .new_session
                .model
                .as_deref()
                .unwrap_or("the default model");
            let mode = self
                .new_session
                .mode
                .map_or("the default mode", PermissionMode::as_str);
            let text = format!(
                "no session yet: the first prompt starts one in {} ({model}, {mode})",
                self.cwd.display()
            );
            self.say(&text).await;
            return;
        }
        let Some(info) = self.current().await else {
            return;
        };
        let state = if self.run.is_some() {
            "running"
        } else {
            "idle"
        };
        let text = format!(
            "session {}\nmodel {}:{} · mode {} · {state}\ncwd {}\n{}",
            info.session_id,
            info.provider,
            info.model,
            info.permission_mode.as_str(),
            info.cwd,
            tokens_line(&info)
        );
        self.say(&text).await;
    }

    async fn cost(&mut self) {
        if self.session.is_none() {
            self.say("no session yet: nothing used").await;
            return;
        }
        if let Some(info) = self.current().await {
            self.say(&tokens_line(&info)).await;
        }
    }

    async fn set_mode(&mut self, mode: PermissionMode) {
        let Some(session) = &self.session else {
            self.new_session.mode = Some(mode);
            let text = format!(
                "mode {} for the session the next prompt starts",
                mode.as_str()
            );
            self.say(&text).await;
            return;
        };
        let params = SessionUpdateParams {
            session_id: session.session_id.clone(),
            permission_mode: Some(mode),
            ..SessionUpdateParams::default()
        };
        let text = match self.update(&params).await {
            Ok(info) => format!("mode {} from the next run", info.permission_mode.as_str()),
            Err(message) => message,
        };
        self.say(&text).await;
    }

    async fn set_model(&mut self, model: String) {
        let Some(session) = &self.session else {
            let text = format!("model {model} for the session the next prompt starts");
            self.new_session.model = Some(model);
            self.say(&text).await;
            return;
        };
        let params = SessionUpdateParams {
            session_id: session.session_id.clone(),
            model: Some(model),
            ..SessionUpdateParams::default()
        };
        let text = match self.update(&params).await {
            Ok(info) => format!("model {}:{} from the next run", info.provider, info.model),
            Err(message) => message,
        };
        self.say(&text).await;
    }

    /// `session/update`: the session as it now reads, or the failure as the person should
    /// read it.
    async fn update(&self, params: &SessionUpdateParams) -> Result<SessionInfo, String> {
        match self.connection.request::<SessionUpdate>(params).await {
            Ok(result) => Ok(result.session),
            Err(ClientError::Rpc { code, .. }) if code == METHOD_NOT_FOUND => Err(
                "this agentd cannot change a session's mode or model; after updating agentd, \
                 run `agentctl daemon restart` and chat again"
                    .to_owned(),
            ),
            Err(err) => Err(format!("agentctl: {err}")),
        }
    }

    async fn sessions(&mut self) {
        let params = SessionListParams {
            cursor: None,
            limit: Some(SESSIONS_ASKED),
        };
        let listed = match self.connection.request::<SessionList>(&params).await {
            Ok(listed) => listed,
            Err(err) => {
                self.say(&format!("agentctl: {err}")).await;
                return;
            }
        };
        let cwd = self.cwd.to_string_lossy().into_owned();
        let mut mine: Vec<SessionInfo> = listed
            .sessions
            .into_iter()
            .filter(|session| session.cwd == cwd)
            .collect();
        mine.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
        mine.truncate(SESSIONS_SHOWN);
        if mine.is_empty() {
            self.say("no sessions in this directory yet").await;
            return;
        }
        let mut text = format_table(&mine, now_unix());
        if let Some(session) = &self.session {
            text.push_str(&format!("\nthis chat: {}", session.session_id));
        }
        text.push_str("\n`agentctl chat --session ID` continues one");
        self.say(&text).await;
    }
}

/// Tokens the session used so far.
fn tokens_line(info: &SessionInfo) -> String {
    let usage = &info.usage;
    // The cost when the daemon priced the session's calls (`[providers.NAME.prices]`).
    let cost = info
        .cost_usd
        .filter(|cost| cost.is_finite() && *cost >= 0.0)
        .map(|cost| format!(", ${cost:.4}"))
        .unwrap_or_default();
    format!(
        "tokens: {} in ({} cached), {} out{cost}",
        usage.input_tokens, usage.cached_input_tokens, usage.output_tokens
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tokens_line_adds_the_cost_only_when_priced() {
        let mut info: SessionInfo = serde_json::from_value(serde_json::json!({
            "sessionId": "ses_1", "cwd": "/w", "provider": "p", "model": "m",
            "permissionMode": "default", "createdAt": "t", "updatedAt": "t",
            "status": "idle", "lastSeq": 3,
            "usage": {"inputTokens": 10, "outputTokens": 5, "cachedInputTokens": 2,
                      "cacheCreationInputTokens": 0},
        }))
        .unwrap();
        assert_eq!(tokens_line(&info), "tokens: 10 in (2 cached), 5 out");
        info.cost_usd = Some(0.015);
        assert_eq!(
            tokens_line(&info),
            "tokens: 10 in (2 cached), 5 out, $0.0150"
        );
    }
}
