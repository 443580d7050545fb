//! `agentctl sessions list|show|fork|rm`: durable sessions, listed as a table (forks under
//! their source with `--tree`), shown with their history, forked at a seq.

use std::fmt::Write as _;

use protocol::methods::{SessionDelete, SessionFork, SessionGet, SessionList};
use protocol::session::{
    HistoryMessage, SessionForkParams, SessionGetParams, SessionGetResult, SessionInfo,
    SessionListParams, SessionRef, SessionStatus,
};

use crate::Context;
use crate::commands::approvals::short_time;
use crate::output::{CommandError, print_json};
use crate::render::{one_line, truncate};

/// Sessions asked for per `session/list` page.
const LIST_PAGE: u32 = 1000;

/// Longest title/cwd cell in the table.
const TITLE_MAX_CHARS: usize = 60;

/// Longest tool call arguments / result shown per line in `sessions show`.
const TOOL_TEXT_MAX_CHARS: usize = 100;

/// Every session the daemon lists, all pages.
pub async fn all(
    connection: &crate::client::Connection,
) -> Result<Vec<protocol::session::SessionInfo>, crate::client::ClientError> {
    let mut sessions = Vec::new();
    let mut cursor = None;
    loop {
        let params = SessionListParams {
            cursor: cursor.take(),
            limit: Some(LIST_PAGE),
        };
        let page = connection.request::<SessionList>(&params).await?;
        sessions.extend(page.sessions);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(sessions),
        }
    }
}

/// `agentctl sessions list [--cwd DIR] [--limit N] [--tree]`: sessions newest first (all
/// pages), only those of DIR with `--cwd`, at most N; with `--tree` each fork follows the
/// session it was forked from, indented.
pub async fn list(
    ctx: &Context,
    cwd: Option<std::path::PathBuf>,
    limit: Option<usize>,
    tree: bool,
) -> Result<(), CommandError> {
    let wanted_cwd = match cwd {
        Some(dir) => {
            let absolute = std::path::absolute(&dir).map_err(|err| {
                CommandError::usage(format!("bad --cwd {}: {err}", dir.display()))
            })?;
            let canonical = std::fs::canonicalize(&absolute).unwrap_or(absolute);
            Some(canonical.to_string_lossy().into_owned())
        }
        None => None,
    };
    let connection = ctx.connect().await?;
    let mut sessions = all(&connection).await?;
    if let Some(cwd) = &wanted_cwd {
        sessions.retain(|session| &session.cwd == cwd);
    }
    last_used_first(&mut sessions);
    if let Some(limit) = limit {
        sessions.truncate(limit);
    }
    if ctx.json {
        print_json(&serde_json::json!({ "sessions": sessions }));
    } else if sessions.is_empty() {
        crate::say!("no sessions; start one with `agentctl run \"…\"`");
    } else {
        let now = crate::commands::approvals::now_unix();
        let table = match tree {
            true => format_tree(&sessions, now),
            false => format_table(&sessions, now),
        };
        crate::say_raw!("{table}");
    }
    Ok(())
}

/// `agentctl sessions fork ID [--at SEQ] [--title T]`: prints the new session's id.
pub async fn fork(
    ctx: &Context,
    session_id: String,
    at_seq: Option<u64>,
    title: Option<String>,
) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let session_id = crate::ids::session(&connection, &session_id).await?;
    let params = SessionForkParams {
        session_id,
        at_seq,
        title,
    };
    let result = connection.request::<SessionFork>(&params).await?;
    if ctx.json {
        print_json(&result);
    } else {
        crate::say_raw!("{}\n", result.session_id);
    }
    Ok(())
}

/// Last used first, as AGE reads (the daemon lists them newest created first). The daemon's
/// RFC 3339 times (UTC, whole seconds) sort as text; ties keep the daemon's order.
fn last_used_first(sessions: &mut [SessionInfo]) {
    sessions.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
}

/// `agentctl sessions show ID`: the session's details and its history.
pub async fn show(ctx: &Context, session_id: String) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let session_id = crate::ids::session(&connection, &session_id).await?;
    let params = SessionGetParams {
        session_id,
        include_history: true,
    };
    let session = connection.request::<SessionGet>(&params).await?;
    if ctx.json {
        print_json(&session);
    } else {
        crate::say_raw!("{}", format_session(&session));
    }
    Ok(())
}

/// `agentctl sessions rm ID`.
pub async fn remove(ctx: &Context, session_id: String) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let session_id = crate::ids::session(&connection, &session_id).await?;
    let params = SessionRef {
        session_id: session_id.clone(),
    };
    let result = connection.request::<SessionDelete>(&params).await?;
    if ctx.json {
        print_json(&result);
    } else if result.deleted {
        crate::say!("deleted session {session_id}");
    } else {
        return Err(CommandError::failed(format!(
            "session {session_id} was not deleted"
        )));
    }
    Ok(())
}

/// The `sessions list` table: id, status, age (since the last update), tokens (in/out),
/// model, and the title, else the first prompt's preview, else the cwd. `now` in seconds since
/// the epoch.
pub fn format_table(sessions: &[SessionInfo], now: i64) -> String {
    let flat: Vec<(usize, &SessionInfo)> = sessions.iter().map(|session| (0, session)).collect();
    format_rows(&flat, now)
}

/// The table of `sessions list --tree`: each fork right after the session it was forked from
/// (siblings in listing order), its id indented one step per level; a fork whose source is
/// not listed stands at the top.
pub fn format_tree(sessions: &[SessionInfo], now: i64) -> String {
    format_rows(&tree_order(sessions), now)
}

/// `sessions` in tree order, each with its depth.
fn tree_order<'a>(sessions: &'a [SessionInfo]) -> Vec<(usize, &'a SessionInfo)> {
    let listed: std::collections::HashSet<&'a str> = sessions
        .iter()
        .map(|session| session.session_id.as_str())
        .collect();
    let source_of = |session: &'a SessionInfo| -> Option<&'a str> {
        session
            .forked_from
            .as_ref()
            .map(|point| point.session_id.as_str())
            .filter(|source| listed.contains(source) && *source != session.session_id)
    };
    let mut ordered = Vec::with_capacity(sessions.len());
    let mut placed = std::collections::HashSet::new();
    // Depth first from each top session; `placed` also stops a cycle of hand-edited files.
    let mut stack: Vec<(usize, &SessionInfo)> = sessions
        .iter()
        .rev()
        .filter(|session| source_of(session).is_none())
        .map(|session| (0, session))
        .collect();
    while let Some((depth, session)) = stack.pop() {
        if !placed.insert(session.session_id.as_str()) {
            continue;
        }
        ordered.push((depth, session));
        stack.extend(
            sessions
                .iter()
                .rev()
                .filter(|fork| source_of(fork) == Some(session.session_id.as_str()))
                .map(|fork| (depth + 1, fork)),
        );
    }
    // Those only a cycle reaches, as they come.
    for session in sessions {
        if placed.insert(session.session_id.as_str()) {
            ordered.push((0, session));
        }
    }
    ordered
}

/// The rows of the table, each id indented by its depth.
fn format_rows(sessions: &[(usize, &SessionInfo)], now: i64) -> String {
    let header = [
        "ID",
        "STATUS",
        "AGE",
        "TOKENS",
        "MODEL",
        "TITLE / FIRST PROMPT",
    ];
    let rows: Vec<[String; 6]> = sessions
        .iter()
        .map(|(depth, session)| {
            let id = match depth {
                0 => crate::ids::short(&session.session_id).to_owned(),
                depth => format!(
                    "{}└ {}",
                    "  ".repeat(depth - 1),
                    crate::ids::short(&session.session_id)
                ),
            };
            let age = crate::commands::approvals::unix_seconds(&session.updated_at)
                .map(|updated| crate::commands::approvals::format_age(now - updated))
                .unwrap_or_else(|| short_time(&session.updated_at));
            let label = session
                .title
                .as_deref()
                .or(session.preview.as_deref())
                .unwrap_or(&session.cwd);
            [
                id,
                status_name(session.status).to_owned(),
                age,
                format!(
                    "{}/{}",
                    tokens(session.usage.input_tokens),
                    tokens(session.usage.output_tokens)
                ),
                session.model.clone(),
                truncate(&one_line(label), TITLE_MAX_CHARS),
            ]
        })
        .collect();
    crate::table::format(header, &rows)
}

/// `sessions show`: details, then the history as a readable transcript.
pub fn format_session(result: &SessionGetResult) -> String {
    let session = &result.session;
    let mut text = String::new();
    let _ = writeln!(text, "session  {}", session.session_id);
    if let Some(title) = &session.title {
        let _ = writeln!(text, "title    {title}");
    }
    match &session.run_id {
        Some(run_id) => {
            let _ = writeln!(text, "status   {} ({run_id})", status_name(session.status));
        }
        None => {
            let _ = writeln!(text, "status   {}", status_name(session.status));
        }
    }
    let _ = writeln!(text, "model    {} ({})", session.model, session.provider);
    let _ = writeln!(text, "cwd      {}", session.cwd);
    let _ = writeln!(text, "created  {}", session.created_at);
    let _ = writeln!(text, "updated  {}", session.updated_at);
    let usage = &session.usage;
    let _ = writeln!(
        text,
        "tokens   {} in ({} cached), {} out",
        usage.input_tokens, usage.cached_input_tokens, usage.output_tokens
    );
    for steer in &result.queued_steers {
        let _ = writeln!(text, "queued steer      {}", one_line(steer));
    }
    for follow_up in &result.queued_follow_ups {
        let _ = writeln!(text, "queued follow-up  {}", one_line(follow_up));
    }
    if let Some(history) = &result.history {
        text.push('\n');
        text.push_str(&format_history(history));
    }
    text
}

/// The history: user messages as `> text`, assistant text as is, tool calls as `→ name(args)`
/// and tool results as `← name: first line` (`✗` on errors).
pub fn format_history(history: &[HistoryMessage]) -> String {
    let mut text = String::new();
    for message in history {
        match message {
            HistoryMessage::User {
                content,
                image_count,
            } => {
                for line in content.lines() {
                    let _ = writeln!(text, "> {line}");
                }
                if *image_count > 0 {
                    let _ = writeln!(text, "> [{image_count} image(s) attached]");
                }
            }
            HistoryMessage::Assistant {
                content,
                tool_calls,
            } => {
                if !content.is_empty() {
                    text.push_str(content);
                    if !content.ends_with('\n') {
                        text.push('\n');
                    }
                }
                for call in tool_calls {
                    let arguments = truncate(&one_line(&call.arguments), TOOL_TEXT_MAX_CHARS);
                    let _ = writeln!(text, "  → {}({arguments})", call.name);
                }
            }
            HistoryMessage::Tool {
                tool_name,
                content,
                is_error,
                ..
            } => {
                let mark = if *is_error { "✗" } else { "←" };
                let first = truncate(&one_line(content), TOOL_TEXT_MAX_CHARS);
                let _ = writeln!(text, "  {mark} {tool_name}: {first}");
            }
        }
    }
    text
}

fn status_name(status: SessionStatus) -> &'static str {
    match status {
        SessionStatus::Idle => "idle",
        SessionStatus::Running => "running",
    }
}

/// `2026-11-30T09:21:37Z` → `2026-11-30 09:21`; anything else as given.
/// A token count in few characters: `950`, `12.3k`, `4.1M`.
pub(crate) fn tokens(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..1_000_000 => format!("{:.1}k", count as f64 / 1_000.0),
        _ => format!("{:.1}M", count as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use protocol::event::{ToolCallInfo, Usage};

    use super::*;

    fn info(id: &str, title: Option<&str>, status: SessionStatus) -> SessionInfo {
        SessionInfo {
            permission_mode: Default::default(),
            session_id: id.to_owned(),
            title: title.map(str::to_owned),
            cwd: "/home/me/project".to_owned(),
            provider: "openai".to_owned(),
            model: "gpt-4o-mini".to_owned(),
            created_at: "2026-11-30T09:00:00Z".to_owned(),
            updated_at: "2026-11-30T09:21:37Z".to_owned(),
            status,
            run_id: None,
            last_seq: 7,
            usage: Usage::default(),
            preview: None,
            parent_session_id: None,
            cost_usd: None,
            forked_from: None,
        }
    }

    #[test]
    fn the_last_used_session_comes_first_and_ties_keep_the_daemons_order() {
        let at = |id: &str, updated: &str| {
            let mut session = info(id, None, SessionStatus::Idle);
            session.updated_at = updated.to_owned();
            session
        };
        // The daemon's order: newest created first.
        let mut sessions = vec![
            at("ses_new", "2026-11-30T09:00:00Z"),
            at("ses_tie", "2026-11-30T09:00:00Z"),
            at("ses_old_but_used", "2026-12-01T08:00:00Z"),
        ];
        last_used_first(&mut sessions);
        let order: Vec<&str> = sessions.iter().map(|s| s.session_id.as_str()).collect();
        assert_eq!(order, ["ses_old_but_used", "ses_new", "ses_tie"]);
    }

    #[test]
    fn table_aligns_columns_and_falls_back_to_cwd() {
        let mut previewed = info("ses_cc", None, SessionStatus::Idle);
        previewed.preview = Some("review the diff".to_owned());
        previewed.usage.input_tokens = 12_345;
        previewed.usage.output_tokens = 678;
        let now = crate::commands::approvals::unix_seconds("2026-11-30T11:21:37Z").unwrap();
        let table = format_table(
            &[
                info("ses_a", Some("fix the build"), SessionStatus::Running),
                info("ses_bbbb", None, SessionStatus::Idle),
                previewed,
            ],
            now,
        );
        assert_eq!(
            table,
            "ID        STATUS   AGE  TOKENS     MODEL        TITLE / FIRST PROMPT\n\
             ses_a     running  2h   0/0        gpt-4o-mini  fix the build\n\
             ses_bbbb  idle     2h   0/0        gpt-4o-mini  /home/me/project\n\
             ses_cc    idle     2h   12.3k/678  gpt-4o-mini  review the diff\n"
        );
    }

    #[test]
    fn the_tree_lists_each_fork_under_its_source() {
        let fork_of = |id: &str, source: &str| {
            let mut session = info(id, None, SessionStatus::Idle);
            session.forked_from = Some(protocol::session::ForkPoint {
                session_id: source.to_owned(),
                seq: 3,
            });
            session
        };
        let sessions = [
            info("ses_new", None, SessionStatus::Idle),
            fork_of("ses_f2", "ses_root"),
            fork_of("ses_ff", "ses_f1"),
            info("ses_root", None, SessionStatus::Idle),
            fork_of("ses_f1", "ses_root"),
            fork_of("ses_orphan", "ses_gone"),
        ];
        let now = crate::commands::approvals::unix_seconds("2026-11-30T11:21:37Z").unwrap();
        let ids: Vec<String> = format_tree(&sessions, now)
            .lines()
            .skip(1)
            .map(|line| line.split("  idle").next().unwrap().trim_end().to_owned())
            .collect();
        assert_eq!(
            ids,
            [
                "ses_new",
                "ses_root",
                "└ ses_f2",
                "└ ses_f1",
                "  └ ses_ff",
                "ses_orphan"
            ]
        );
    }

    #[test]
    fn session_is_shown_with_a_readable_history() {
        let mut session = info("ses_a", Some("demo"), SessionStatus::Running);
        session.run_id = Some("run_1".to_owned());
        let result = SessionGetResult {
            session,
            history: Some(vec![
                HistoryMessage::User {
                    content: "list files\nplease".to_owned(),
                    image_count: 0,
                },
                HistoryMessage::Assistant {
                    content: "Looking.".to_owned(),
                    tool_calls: vec![ToolCallInfo {
                        id: "c1".to_owned(),
                        name: "list_dir".to_owned(),
                        arguments: r#"{"path":"."}"#.to_owned(),
                    }],
                },
                HistoryMessage::Tool {
                    tool_call_id: "c1".to_owned(),
                    tool_name: "list_dir".to_owned(),
                    content: "a.rs\nb.rs".to_owned(),
                    is_error: false,
                },
                HistoryMessage::Tool {
                    tool_call_id: "c2".to_owned(),
                    tool_name: "read_file".to_owned(),
                    content: "not found".to_owned(),
                    is_error: true,
                },
                HistoryMessage::Assistant {
                    content: "Two files.".to_owned(),
                    tool_calls: Vec::new(),
                },
            ]),
            queued_steers: Vec::new(),
            queued_follow_ups: vec!["then commit".to_owned()],
            mcp_servers: Vec::new(),
        };
        let text = format_session(&result);
        assert!(text.starts_with("session  ses_a\ntitle    demo\nstatus   running (run_1)\n"));
        assert!(text.contains("model    gpt-4o-mini (openai)\n"));
        assert!(text.contains("queued follow-up  then commit\n"));
        assert!(text.ends_with(
            "\n> list files\n> please\nLooking.\n  → list_dir({\"path\":\".\"})\n  \
             ← list_dir: a.rs …\n  ✗ read_file: not found\nTwo files.\n"
        ));
    }
}
