//! Choosing a session to resume: `chat --resume` before the chat starts and `/resume` inside
//! it open a `picker` of the sessions, this directory's first (Tab: every directory's), last
//! used first, each row its age since the last activity, its tokens, its title and its first
//! prompt; `/resume ID` takes an id (or a unique prefix) instead. The chosen session is opened
//! as `chat --session ID` opens one: its banner, its last turns, its events followed.

use protocol::session::{SessionInfo, SessionStatus};

use super::Chat;
use super::session::session_info;
use crate::client::{ClientError, Connection};
use crate::output::CommandError;
use crate::picker::{Picker, Row, RowSet};
use crate::platform::Interrupts;
use crate::render::one_line;
use crate::safe_text::neutralise;

/// The picker's title.
const TITLE: &str = "resume a session";

impl Chat {
    /// `/resume [ID]`: pick a session (or take ID) and go on in it; the session left stays.
    pub(super) async fn resume(&mut self, given: Option<String>) -> Result<(), CommandError> {
        let session_id = match given {
            Some(given) => match crate::ids::session(&self.connection, &given).await {
                Ok(session_id) => session_id,
                Err(err) => {
                    self.say(&format!("agentctl: {}", err.message)).await;
                    return Ok(());
                }
            },
            None => {
                let current = self.session.as_ref().map(|s| s.session_id.clone());
                let sets = match session_sets(&self.connection, &self.cwd, current.as_deref()).await
                {
                    Ok(sets) => sets,
                    Err(err) => {
                        self.say(&format!("agentctl: {err}")).await;
                        return Ok(());
                    }
                };
                let Some(sets) = sets else {
                    self.say("no other session to resume").await;
                    return Ok(());
                };
                // The picker has the terminal to itself: what the chat said is written first.
                self.editor.flushed().await;
                let mut picker = Picker::new(TITLE, sets);
                match crate::picker::choose(&mut picker, &mut self.interrupts).await {
                    Ok(Some(session_id)) => session_id,
                    Ok(None) => {
                        self.say("(no session chosen)").await;
                        return Ok(());
                    }
                    Err(err) => {
                        self.say(&format!("agentctl: cannot read keys: {err}"))
                            .await;
                        return Ok(());
                    }
                }
            }
        };
        if self.session.as_ref().map(|s| s.session_id.as_str()) == Some(session_id.as_str()) {
            self.say(&format!("this chat is in {session_id} already"))
                .await;
            return Ok(());
        }
        let info = match session_info(&self.connection, &session_id).await {
            Ok(info) => info,
            Err(err) => {
                self.say(&format!("agentctl: {err}")).await;
                return Ok(());
            }
        };
        self.detach().await;
        self.open_session(info).await?;
        self.refresh_command_names().await;
        Ok(())
    }

    /// Go on in `info`'s session: its banner (the title, or its first prompt), its last turns,
    /// its events followed from here, and a run already going shown.
    pub(super) async fn open_session(&mut self, info: SessionInfo) -> Result<(), CommandError> {
        let title = info
            .title
            .clone()
            .or_else(|| info.preview.clone())
            .unwrap_or_else(|| "(no prompt yet)".to_owned());
        self.say(&format!(
            "session {} · {} · {} · {}",
            info.session_id,
            info.model,
            info.permission_mode.as_str(),
            one_line(&title)
        ))
        .await;
        self.replay_last_turns(&info.session_id).await;
        self.attach(&info.session_id, info.last_seq).await?;
        // A run already going is shown from here on, and typed lines steer it.
        if let (SessionStatus::Running, Some(run_id)) = (info.status, info.run_id) {
            self.show_run(run_id);
        }
        Ok(())
    }
}

/// `chat --resume`: the session picked before the chat starts; `None` when the picker was
/// cancelled.
pub async fn pick_at_start(
    connection: &Connection,
    cwd: &std::path::Path,
    interrupts: &mut Interrupts,
) -> Result<Option<String>, CommandError> {
    let Some(sets) = session_sets(connection, cwd, None).await? else {
        return Err(CommandError::failed(
            "no session to resume; `agentctl chat` starts one",
        ));
    };
    let mut picker = Picker::new(TITLE, sets);
    crate::picker::choose(&mut picker, interrupts)
        .await
        .map_err(|err| CommandError::failed(format!("cannot read keys: {err}")))
}

/// The picker's row sets: this directory's sessions and every session (subagents' aside, and
/// `current`), last used first; the set with rows first. `None` when there is none at all.
async fn session_sets(
    connection: &Connection,
    cwd: &std::path::Path,
    current: Option<&str>,
) -> Result<Option<Vec<RowSet>>, ClientError> {
    let mut sessions = crate::commands::sessions::all(connection).await?;
    sessions.retain(|session| {
        session.parent_session_id.is_none() && Some(session.session_id.as_str()) != current
    });
    if sessions.is_empty() {
        return Ok(None);
    }
    // RFC 3339 times in UTC sort as text; ties keep the daemon's order.
    sessions.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let cwd = cwd.to_string_lossy();
    let now = crate::commands::approvals::now_unix();
    let here = RowSet {
        label: "this directory".to_owned(),
        rows: sessions
            .iter()
            .filter(|session| session.cwd == cwd)
            .map(|session| row(session, now, false))
            .collect(),
    };
    let everywhere = RowSet {
        label: "all directories".to_owned(),
        rows: sessions
            .iter()
            .map(|session| row(session, now, true))
            .collect(),
    };
    Ok(Some(match here.rows.is_empty() {
        true => vec![everywhere, here],
        false => vec![here, everywhere],
    }))
}

/// A session as a picker row: `AGE  TOKENS  TITLE · FIRST PROMPT` (the directory too, among
/// every directory's), found by its id, title, first prompt and directory.
fn row(session: &SessionInfo, now: i64, with_cwd: bool) -> Row {
    let age = crate::commands::approvals::unix_seconds(&session.updated_at)
        .map(|updated| crate::commands::approvals::format_age(now - updated))
        .unwrap_or_else(|| "?".to_owned());
    let tokens =
        crate::commands::sessions::tokens(session.usage.input_tokens + session.usage.output_tokens);
    let preview = session.preview.as_deref().map(one_line);
    let title = session.title.as_deref().map(one_line);
    let mut label = match (&title, &preview) {
        (Some(title), Some(preview)) if title != preview => format!("{title} · {preview}"),
        (Some(title), _) => title.clone(),
        (None, Some(preview)) => preview.clone(),
        (None, None) => "(no prompt yet)".to_owned(),
    };
    if with_cwd {
        label = format!("{label}  ({})", session.cwd);
    }
    let running = match session.status {
        SessionStatus::Running => " running",
        SessionStatus::Idle => "",
    };
    Row {
        key: session.session_id.clone(),
        text: neutralise(&format!("{age:>4}  {tokens:>6} tok{running}  {label}")).into_owned(),
        search: neutralise(&format!("{} {}", session.session_id, session.cwd)).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_shows_age_tokens_title_and_first_prompt() {
        let session: SessionInfo = serde_json::from_value(serde_json::json!({
            "sessionId": "ses_abc", "cwd": "/w", "provider": "p", "model": "m",
            "permissionMode": "default", "createdAt": "2026-01-01T00:00:00Z",
            "updatedAt": "2026-01-01T00:00:00Z", "status": "idle", "lastSeq": 3,
            "title": "Parser", "preview": "fix the \u{1b}[31mparser",
            "usage": {"inputTokens": 1500, "outputTokens": 500, "cachedInputTokens": 0,
                      "cacheCreationInputTokens": 0},
        }))
        .unwrap();
        let now = crate::commands::approvals::unix_seconds("2026-01-01T00:05:00Z").unwrap();
        let row = row(&session, now, false);
        assert_eq!(row.key, "ses_abc");
        assert!(
            row.text.starts_with("  5m    2.0k tok  Parser · fix the "),
            "{}",
            row.text
        );
        assert!(!row.text.contains('\u{1b}'), "{}", row.text);
        assert!(row.search.contains("ses_abc"));
    }
}
