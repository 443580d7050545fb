//! `agentctl mcp list|restart|logs`: the MCP servers the daemon runs (and, for a directory, the
//! ones configured there), restarting one, and reading one's stderr log.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use protocol::mcp::{
    McpListParams, McpRestartParams, McpServerListing, McpServerSource, McpServerState,
    McpTransportKind,
};
use protocol::methods::{McpList, McpRestart};
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use crate::Context;
use crate::output::{CommandError, print_json};
use crate::platform::Interrupts;
use crate::render::{one_line, truncate};

/// Longest last error shown in the table.
const ERROR_MAX_CHARS: usize = 60;
/// How often `logs -f` looks for new lines (the file is the outside world: polled).
const FOLLOW_POLL: Duration = Duration::from_millis(200);
/// Bytes read from the log per step, so a huge log is streamed, never held whole.
const READ_CHUNK: usize = 64 * 1024;

/// `agentctl mcp list [--cwd DIR]`.
pub async fn list(ctx: &Context, cwd: Option<PathBuf>) -> Result<(), CommandError> {
    let cwd = absolute(cwd)?;
    let connection = ctx.connect().await?;
    let params = McpListParams {
        cwd: Some(cwd.display().to_string()),
    };
    let result = connection.request::<McpList>(&params).await?;
    if ctx.json {
        print_json(&result);
        return Ok(());
    }
    if result.servers.is_empty() {
        crate::say!(
            "no MCP servers for {}; add one under [mcp_servers.<name>] in config.toml or in the project's .mcp.json",
            cwd.display()
        );
    } else {
        crate::say_raw!("{}", format_table(&result.servers));
    }
    for server in &result.servers {
        if let Some(warning) = &server.warning {
            crate::warn_line!("warning: {}", one_line(warning));
        }
    }
    for problem in &result.problems {
        let mut place = String::new();
        if let Some(file) = &problem.file {
            place.push_str(file);
            place.push_str(": ");
        }
        if let Some(server) = &problem.server {
            let _ = write!(place, "server {server}: ");
        }
        crate::warn_line!("problem: {place}{}", one_line(&problem.reason));
    }
    for server in &result.servers {
        if server.status == McpServerState::NeedsLogin {
            crate::warn_line!(
                "note: MCP server {} needs a login: run `agentctl mcp login {}`",
                server.name,
                server.name
            );
        }
    }
    if result
        .servers
        .iter()
        .any(|server| server.status == McpServerState::Untrusted)
    {
        crate::warn_line!(
            "note: untrusted project servers start once you trust the project with `agentctl trust`"
        );
    }
    Ok(())
}

/// `agentctl mcp restart NAME [--cwd DIR]`.
pub async fn restart(
    ctx: &Context,
    name: String,
    cwd: Option<PathBuf>,
) -> Result<(), CommandError> {
    let cwd = match cwd {
        Some(dir) => Some(absolute(Some(dir))?.display().to_string()),
        None => None,
    };
    let connection = ctx.connect().await?;
    let result = connection
        .request::<McpRestart>(&McpRestartParams {
            name: name.clone(),
            cwd,
        })
        .await?;
    if ctx.json {
        print_json(&result);
    } else {
        crate::say!("MCP server {name} is restarting; `agentctl mcp list` shows when it is ready");
    }
    Ok(())
}

/// `agentctl mcp logs NAME [-f]`: the server's stderr log (named by `mcp/list`), then with
/// `follow` what it appends until Ctrl-C.
pub async fn logs(ctx: &Context, name: String, follow: bool) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let result = connection
        .request::<McpList>(&McpListParams::default())
        .await?;
    let file = log_file_of(&result.servers, &name)?;
    drop(connection);
    if tokio::fs::metadata(&file).await.is_err() {
        crate::warn_line!(
            "MCP server {name} has logged nothing yet (its log will be {})",
            file.display()
        );
        if !follow {
            return Ok(());
        }
        // Followed: the log is read once the server writes its first line.
        let mut interrupts = Interrupts::listen()
            .map_err(|err| CommandError::failed(format!("cannot watch for Ctrl-C: {err}")))?;
        while tokio::fs::metadata(&file).await.is_err() {
            tokio::select! {
                _ = interrupts.recv() => return Ok(()),
                () = tokio::time::sleep(FOLLOW_POLL) => {}
            }
        }
    }
    let mut file_handle = tokio::fs::File::open(&file).await.map_err(|err| {
        CommandError::failed(format!("cannot open the log {}: {err}", file.display()))
    })?;
    // Watched before anything is printed: a Ctrl-C right after the first lines ends it calmly.
    let Some(mut interrupts) = follow
        .then(Interrupts::listen)
        .transpose()
        .map_err(|err| CommandError::failed(format!("cannot watch for Ctrl-C: {err}")))?
    else {
        copy_to_stdout(&mut file_handle).await?;
        return Ok(());
    };
    let mut offset = copy_to_stdout(&mut file_handle).await?;
    loop {
        tokio::select! {
            _ = interrupts.recv() => return Ok(()),
            () = tokio::time::sleep(FOLLOW_POLL) => {}
        }
        let len = tokio::fs::metadata(&file)
            .await
            .map(|meta| meta.len())
            .unwrap_or(offset);
        if len < offset {
            // The server started again and its log began anew.
            file_handle = tokio::fs::File::open(&file).await.map_err(|err| {
                CommandError::failed(format!("cannot open the log {}: {err}", file.display()))
            })?;
            offset = 0;
        }
        if len > offset {
            file_handle
                .seek(std::io::SeekFrom::Start(offset))
                .await
                .map_err(|err| CommandError::failed(format!("cannot read the log: {err}")))?;
            offset += copy_to_stdout(&mut file_handle).await?;
        }
    }
}

/// The log file of the server `name`: a clear error when it has none or several servers of
/// that name have one.
fn log_file_of(servers: &[McpServerListing], name: &str) -> Result<PathBuf, CommandError> {
    let named: Vec<&McpServerListing> = servers.iter().filter(|s| s.name == name).collect();
    if named.is_empty() {
        return Err(CommandError::failed(format!(
            "no MCP server named {name} runs; `agentctl mcp list` shows the servers"
        )));
    }
    let mut files: Vec<(&str, &str)> = named
        .iter()
        .filter_map(|server| {
            Some((
                server.log_file.as_deref()?,
                server.project_root.as_deref().unwrap_or(""),
            ))
        })
        .collect();
    files.sort_unstable();
    files.dedup_by(|a, b| a.0 == b.0);
    match files.as_slice() {
        [] => Err(CommandError::failed(format!(
            "MCP server {name} has no log: it is configured but has not run"
        ))),
        [(file, _)] => Ok(PathBuf::from(file)),
        several => Err(CommandError::failed(format!(
            "MCP servers named {name} run for several projects ({}); their logs are {}",
            several
                .iter()
                .map(|(_, root)| *root)
                .collect::<Vec<_>>()
                .join(", "),
            several
                .iter()
                .map(|(file, _)| *file)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Copy the rest of `file` to stdout; returns the bytes copied.
async fn copy_to_stdout(file: &mut tokio::fs::File) -> Result<u64, CommandError> {
    let mut buffer = vec![0_u8; READ_CHUNK];
    let mut copied = 0_u64;
    let mut stdout = std::io::stdout().lock();
    // A server's stderr is its own text: shown neutralised, like the model's.
    let mut held = None;
    loop {
        let read = file
            .read(&mut buffer)
            .await
            .map_err(|err| CommandError::failed(format!("cannot read the log: {err}")))?;
        let safe = crate::safe_text::neutralise_bytes(&buffer[..read], &mut held);
        if read == 0 {
            let _ = stdout.write_all(&safe);
            break;
        }
        copied += read as u64;
        stdout
            .write_all(&safe)
            .map_err(|err| CommandError::failed(format!("cannot write to stdout: {err}")))?;
    }
    let _ = stdout.flush();
    Ok(copied)
}

/// One line per server: name, source, transport, status, tools count, pid, restarts, the
/// project root it runs for, last error.
pub fn format_table(servers: &[McpServerListing]) -> String {
    use crate::table::Align::{Left, Right};
    let header = [
        "NAME",
        "SOURCE",
        "TRANSPORT",
        "STATUS",
        "TOOLS",
        "PID",
        "RESTARTS",
        "PROJECT",
        "LAST ERROR",
    ];
    let rows: Vec<[String; 9]> = servers
        .iter()
        .map(|server| {
            [
                server.name.clone(),
                source_word(server.source).to_owned(),
                transport_word(server.transport).to_owned(),
                if server.restart_pending {
                    // config.toml changed it: it restarts once no session uses it.
                    format!("{} (restart pending)", state_word(server.status))
                } else {
                    state_word(server.status).to_owned()
                },
                server.tools.len().to_string(),
                server.pid.map(|pid| pid.to_string()).unwrap_or_default(),
                server.restarts.to_string(),
                server.project_root.clone().unwrap_or_default(),
                server
                    .last_error
                    .as_deref()
                    .map(|error| truncate(&one_line(error), ERROR_MAX_CHARS))
                    .unwrap_or_default(),
            ]
        })
        .collect();
    let align = [Left, Left, Left, Left, Right, Right, Right, Left, Left];
    crate::table::format_aligned(header, &rows, align)
}

fn source_word(source: McpServerSource) -> &'static str {
    match source {
        McpServerSource::User => "user",
        McpServerSource::Project => "project",
        McpServerSource::Session => "session",
    }
}

fn transport_word(transport: McpTransportKind) -> &'static str {
    match transport {
        McpTransportKind::Stdio => "stdio",
        McpTransportKind::Http => "http",
    }
}

/// The status as the wire spells it.
pub fn state_word(state: McpServerState) -> &'static str {
    match state {
        McpServerState::Starting => "starting",
        McpServerState::Ready => "ready",
        McpServerState::Failed => "failed",
        McpServerState::Restarting => "restarting",
        McpServerState::Stopped => "stopped",
        McpServerState::Untrusted => "untrusted",
        McpServerState::Disabled => "disabled",
        McpServerState::Configured => "configured",
        McpServerState::NeedsLogin => "needs login",
    }
}

/// `dir` made absolute against the current directory (default: the current directory).
fn absolute(dir: Option<PathBuf>) -> Result<PathBuf, CommandError> {
    let here = std::env::current_dir()
        .map_err(|err| CommandError::failed(format!("cannot read the current directory: {err}")))?;
    Ok(match dir {
        Some(dir) => here.join(dir),
        None => here,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str, log: Option<&str>, root: &str) -> McpServerListing {
        McpServerListing {
            name: name.to_owned(),
            source: McpServerSource::User,
            file: None,
            transport: McpTransportKind::Stdio,
            status: McpServerState::Ready,
            project_root: Some(root.to_owned()),
            pid: Some(42),
            tools: vec!["echo".to_owned(), "add".to_owned()],
            restarts: 1,
            last_error: Some("exited:\nsignal 9".to_owned()),
            log_file: log.map(str::to_owned),
            users: 1,
            restart_pending: false,
            warning: None,
        }
    }

    #[test]
    fn the_table_shows_counts_pid_restarts_the_root_and_the_error_on_one_line() {
        let table = format_table(&[server("everything", None, "/p")]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("NAME"), "{table}");
        let row: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            row[..9],
            [
                "everything",
                "user",
                "stdio",
                "ready",
                "2",
                "42",
                "1",
                "/p",
                "exited:"
            ]
        );
    }

    #[test]
    fn a_server_config_toml_changed_says_its_restart_is_pending() {
        let mut changed = server("time", None, "/p");
        changed.restart_pending = true;
        let table = format_table(&[changed]);
        assert!(table.contains("ready (restart pending)"), "{table}");
    }

    #[test]
    fn logs_need_exactly_one_log_file() {
        let none = log_file_of(&[server("a", None, "/p")], "a").unwrap_err();
        assert!(none.message.contains("has no log"), "{}", none.message);
        let missing = log_file_of(&[], "a").unwrap_err();
        assert!(missing.message.contains("no MCP server named a"));
        let one = log_file_of(&[server("a", Some("/l/a.log"), "/p")], "a").unwrap();
        assert_eq!(one, std::path::Path::new("/l/a.log"));
        let several = log_file_of(
            &[
                server("a", Some("/l/a1.log"), "/p1"),
                server("a", Some("/l/a2.log"), "/p2"),
            ],
            "a",
        )
        .unwrap_err();
        assert!(several.message.contains("/p1, /p2"), "{}", several.message);
    }
}
