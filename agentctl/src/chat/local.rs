//! The chat's commands. Its own (`/sessions`, `/resume`, `/new`, `/fork`, `/expand`, `/quit`) are answered here; the rest are
//! the daemon's slash commands (`session/command`), sent in the chat's session (made first for
//! a command that needs one). Before the first prompt, `/status`, `/cost`, `/mode` and `/model`
//! are answered here too (`/mode` and `/model` then choose the session the next prompt
//! creates). `/help` lists both.

use protocol::approval::PermissionMode;
use protocol::commands::{CommandsListParams, CommandsListResult};
use protocol::error::METHOD_NOT_FOUND;
use protocol::methods::{CommandsList, SessionFork, SessionList, SessionUpdate};
use protocol::session::{SessionForkParams, SessionInfo, SessionListParams, SessionUpdateParams};

use super::line::{HELP, LOCAL_NAMES, LocalCommand};
use super::session::session_info;
use super::{Chat, Next};
use crate::client::ClientError;
use crate::commands::approvals::now_unix;
use crate::commands::sessions::format_table;
use crate::commands::slash::Slash;
use crate::output::CommandError;

/// Sessions `/sessions` shows.
const SESSIONS_SHOWN: usize = 10;

/// Sessions `/sessions` asks the daemon for before keeping this directory's.
const SESSIONS_ASKED: u32 = 200;

impl Chat {
    pub(super) async fn on_command(&mut self, command: LocalCommand) -> Result<Next, CommandError> {
        // With a session, the daemon answers these (and knows more: runs, costs).
        if self.session.is_some() {
            let slash = |name: &str, args: &str| Slash {
                name: name.to_owned(),
                args: args.to_owned(),
            };
            let forwarded = match &command {
                LocalCommand::Status => Some(slash("status", "")),
                LocalCommand::Cost => Some(slash("cost", "")),
                LocalCommand::Mode(mode) => Some(slash("mode", mode.as_str())),
                LocalCommand::Model(model) => Some(slash("model", model)),
                _ => None,
            };
            if let Some(slash) = forwarded {
                return self.daemon_command(slash).await;
            }
        }
        match command {
            LocalCommand::Help => self.help().await,
            LocalCommand::Daemon(slash) => return self.daemon_command(slash).await,
            LocalCommand::Status => self.status().await,
            LocalCommand::Mode(mode) => self.set_mode(mode).await,
            LocalCommand::Model(model) => self.set_model(model).await,
            LocalCommand::Cost => self.cost().await,
            LocalCommand::Sessions => self.sessions().await,
            LocalCommand::Resume(_) if self.run.is_some() => {
                self.say("a run is active: wait for it or Ctrl-C to cancel it, then /resume")
                    .await
            }
            LocalCommand::Resume(given) => self.resume(given).await?,
            LocalCommand::New if self.run.is_some() => {
                self.say("a run is active: wait for it or Ctrl-C to cancel it, then /new")
                    .await
            }
            LocalCommand::New => {
                self.detach().await;
                self.say("the next prompt starts a new session").await;
            }
            LocalCommand::Fork(_) if self.run.is_some() => {
                self.say("a run is active: wait for it or Ctrl-C to cancel it, then /fork")
                    .await
            }
            LocalCommand::Fork(title) => self.fork(title).await?,
            LocalCommand::Diff(which) => self.diff(which).await,
            LocalCommand::Rewind { .. } if self.run.is_some() => {
                self.say("a run is active: wait for it or Ctrl-C to cancel it, then /rewind")
                    .await
            }
            LocalCommand::Rewind { run, what, confirm } => self.rewind(run, what, confirm).await?,
            LocalCommand::Expand => self.expand().await,
            LocalCommand::Context => self.context_gauge().await,
            LocalCommand::Models => self.models().await,
            LocalCommand::Quit => return Ok(Next::Quit),
            LocalCommand::Invalid(message) => self.say(&message).await,
        }
        Ok(Next::Continue)
    }

    /// `/help`: the chat's own commands, then the daemon's.
    async fn help(&mut self) {
        let mut text = HELP.to_owned();
        match self.list_commands().await {
            Ok(listed) => {
                let shown = |name: &str, hint: &Option<String>| match hint {
                    Some(hint) => format!("/{name} {hint}"),
                    None => format!("/{name}"),
                };
                for command in &listed.commands {
                    text.push_str(&format!(
                        "\n{:15} {}",
                        shown(&command.name, &command.argument_hint),
                        command.description
                    ));
                }
            }
            Err(err) => text.push_str(&format!("\n(the daemon's commands: {err})")),
        }
        self.say(&text).await;
    }

    /// `commands/list` for the chat's directory and session.
    pub(super) async fn list_commands(&self) -> Result<CommandsListResult, ClientError> {
        let session_id = self.session.as_ref().map(|s| s.session_id.as_str());
        list_commands(&self.connection, &self.cwd, session_id).await
    }

    /// Whether the daemon lists `name` for this directory (true when it cannot say: the
    /// daemon's answer to the command will).
    async fn is_command(&self, name: &str) -> bool {
        match self.list_commands().await {
            Ok(listed) => listed.commands.iter().any(|command| command.name == name),
            Err(_) => true,
        }
    }

    /// Bring Tab's names up to date: the daemon's commands and the chat's own.
    pub(super) async fn refresh_command_names(&self) {
        let session_id = self.session.as_ref().map(|s| s.session_id.as_str());
        let names = command_names(&self.connection, &self.cwd, session_id).await;
        self.command_names.set(names);
    }

    /// A slash command of the daemon's, in the session (made first when there is none): its
    /// answer said, the run it started shown, the session `/clear` made followed.
    async fn daemon_command(&mut self, slash: Slash) -> Result<Next, CommandError> {
        let session_id = match &self.session {
            Some(session) => session.session_id.clone(),
            // No session is made for a name that is no command.
            None if !self.is_command(&slash.name).await => {
                self.say(&format!(
                    "unknown command /{}; /help lists the commands (start a line with // to \
                     send it as text)",
                    slash.name
                ))
                .await;
                return Ok(Next::Continue);
            }
            None => match self.create_session().await {
                Ok(session_id) => session_id,
                Err(err) => {
                    self.say(&format!("agentctl: {err}")).await;
                    return Ok(Next::Continue);
                }
            },
        };
        let request_id = Some(format!("chat_{}", uuid::Uuid::new_v4().simple()));
        let result =
            match crate::commands::slash::send(&self.connection, &session_id, &slash, request_id)
                .await
            {
                Ok(result) => result,
                Err(err) => {
                    let err = crate::commands::slash::error(err);
                    self.say(&format!("agentctl: {}", err.message)).await;
                    return Ok(Next::Continue);
                }
            };
        for warning in &result.warnings {
            self.say(&format!("warning: {warning}")).await;
        }
        if let Some(output) = &result.output {
            self.say(output).await;
        }
        if let Some(new_session) = result.session_id {
            match session_info(&self.connection, &new_session).await {
                Ok(info) => {
                    self.detach().await;
                    self.attach(&info.session_id, info.last_seq).await?;
                }
                Err(err) => self.say(&format!("agentctl: {err}")).await,
            }
        }
        if let Some(run_id) = result.run_id {
            self.show_run(run_id);
        }
        self.refresh_command_names().await;
        Ok(Next::Continue)
    }

    /// The session as the daemon has it, or what the next prompt will create.
    pub(super) async fn current(&mut self) -> Option<SessionInfo> {
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

    /// `/fork`: fork the chat's session now and go on in the fork; the source stays as it is.
    async fn fork(&mut self, title: Option<String>) -> Result<(), CommandError> {
        let Some(session) = &self.session else {
            self.say("no session yet: nothing to fork (the first prompt starts one)")
                .await;
            return Ok(());
        };
        let source = session.session_id.clone();
        let params = SessionForkParams {
            session_id: source.clone(),
            at_seq: None,
            title,
        };
        let forked = match self.connection.request::<SessionFork>(&params).await {
            Ok(forked) => forked,
            Err(ClientError::Rpc { code, .. }) if code == METHOD_NOT_FOUND => {
                self.say(
                    "this agentd cannot fork sessions; after updating agentd, run `agentctl \
                     daemon restart` and chat again",
                )
                .await;
                return Ok(());
            }
            Err(err) => {
                self.say(&format!("agentctl: {err}")).await;
                return Ok(());
            }
        };
        self.detach().await;
        self.attach(&forked.session_id, forked.session.last_seq)
            .await?;
        self.refresh_command_names().await;
        let text = format!(
            "forked {source} into {}: this chat goes on in the fork; {source} stays as it was \
             (`agentctl chat --session {source}` continues it)",
            forked.session_id
        );
        self.say(&text).await;
        Ok(())
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
        text.push_str("\n/resume picks one to go on in (`agentctl chat --resume` too)");
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

/// `commands/list` for `cwd` (and the session's MCP prompts, with `session_id`).
async fn list_commands(
    connection: &crate::client::Connection,
    cwd: &std::path::Path,
    session_id: Option<&str>,
) -> Result<CommandsListResult, ClientError> {
    let params = CommandsListParams {
        cwd: cwd.to_string_lossy().into_owned(),
        session_id: session_id.map(str::to_owned),
    };
    connection.request::<CommandsList>(&params).await
}

/// The names Tab completes: the daemon's commands for `cwd` (and the session) and the chat's
/// own. Asked before the first prompt shows too, so a Tab typed at once has them.
pub(super) async fn command_names(
    connection: &crate::client::Connection,
    cwd: &std::path::Path,
    session_id: Option<&str>,
) -> Vec<String> {
    let mut names: Vec<String> = LOCAL_NAMES.iter().map(|name| (*name).to_owned()).collect();
    if let Ok(listed) = list_commands(connection, cwd, session_id).await {
        names.extend(listed.commands.into_iter().map(|command| command.name));
    }
    names
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
