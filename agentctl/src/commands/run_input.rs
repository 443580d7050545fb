//! What `run` sends and where: the prompt with piped stdin attached, the session to continue
//! (`-c`), and the controlling terminal for approval keys once stdin was a pipe.

use std::io::Read;
use std::path::Path;

use protocol::session::SessionInfo;

use crate::client::Connection;
use crate::output::CommandError;

/// Piped input attached to a prompt is cut here: it goes into the session's history and every
/// later request.
pub const MAX_PIPED_BYTES: usize = 200 * 1024;

/// The prompt to send: `arg` itself (`-`: all of stdin), with what is piped into stdin
/// attached as a fenced block when a prompt is given and stdin is a pipe or a file.
pub async fn prompt_text(arg: &str) -> Result<String, CommandError> {
    if arg == "-" {
        return super::message_text(arg, "prompt");
    }
    if arg.trim().is_empty() {
        return Err(CommandError::usage("the prompt is empty"));
    }
    if !stdin_is_piped() {
        return Ok(arg.to_owned());
    }
    let piped = tokio::task::spawn_blocking(read_piped)
        .await
        .map_err(|err| CommandError::failed(format!("cannot read stdin: {err}")))??;
    Ok(attach(arg, &piped.0, piped.1))
}

/// Whether stdin is a pipe or a regular file (not a terminal, not the null device).
pub fn stdin_is_piped() -> bool {
    crate::platform::stdin_is_piped()
}

/// Up to `MAX_PIPED_BYTES` of stdin (lossy UTF-8), and whether there was more. Blocking.
fn read_piped() -> Result<(String, bool), CommandError> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_PIPED_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| CommandError::failed(format!("cannot read stdin: {err}")))?;
    let cut = bytes.len() > MAX_PIPED_BYTES;
    bytes.truncate(MAX_PIPED_BYTES);
    Ok((String::from_utf8_lossy(&bytes).into_owned(), cut))
}

/// `prompt` with `piped` after it in a fence longer than any backtick run inside.
pub fn attach(prompt: &str, piped: &str, cut: bool) -> String {
    if piped.trim().is_empty() {
        return prompt.to_owned();
    }
    let longest_run = piped.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest_run.max(2) + 1);
    let body = piped.strip_suffix('\n').unwrap_or(piped);
    let note = if cut {
        format!("\n(stdin was cut at {} KiB)", MAX_PIPED_BYTES / 1024)
    } else {
        String::new()
    };
    format!("{prompt}\n\n{fence}stdin\n{body}\n{fence}{note}")
}

/// Make the controlling terminal stdin again, so the approval prompt reads keys from it after
/// stdin was a pipe. False when there is none (then approvals follow `--approve`).
pub fn reattach_terminal_to_stdin() -> bool {
    crate::platform::reattach_terminal_to_stdin()
}

/// The newest session (last updated) whose workspace is `cwd`, subagents' sessions aside.
pub async fn newest_session_in(
    connection: &Connection,
    cwd: &Path,
) -> Result<SessionInfo, CommandError> {
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let wanted = cwd.to_string_lossy();
    let newest = crate::commands::sessions::all(connection)
        .await?
        .into_iter()
        .filter(|session| session.cwd == wanted && session.parent_session_id.is_none())
        // The first of those used last, as listed.
        .reduce(|best, session| {
            if session.updated_at > best.updated_at {
                session
            } else {
                best
            }
        });
    newest.ok_or_else(|| {
        CommandError::failed(format!(
            "no session in {wanted} to continue; start one with `agentctl run \"…\"`"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piped_text_is_fenced_after_the_prompt_longer_than_its_backticks() {
        assert_eq!(
            attach("review this", "diff --git a b\n+x\n", false),
            "review this\n\n```stdin\ndiff --git a b\n+x\n```"
        );
        assert_eq!(
            attach("p", "has ```` inside", true),
            "p\n\n`````stdin\nhas ```` inside\n`````\n(stdin was cut at 200 KiB)"
        );
        assert_eq!(
            attach("p", " \n", false),
            "p",
            "nothing piped: the prompt alone"
        );
    }
}
