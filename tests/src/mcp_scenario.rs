//! Helpers of the MCP session tests: `[mcp_servers.*]` and `.mcp.json` text for the real
//! servers of `mcp_servers`, what a recorded request offered, warnings of a run, and the
//! server processes a daemon runs (found in `/proc` by ancestry, polled with a deadline: the
//! outside world).

use std::time::{Duration, Instant};

use protocol::event::Event;
use serde_json::{Value, json};

use crate::harness::WAIT;
use crate::mcp_servers::ServerCommand;
use crate::mock_llm::{Format, RecordedRequest};
use crate::scenario::Envelope;

/// `[mcp_servers.<name>]` running `server`, with `extra` lines in the table.
pub fn server_toml(name: &str, server: &ServerCommand, extra: &str) -> String {
    let quote = |text: &str| Value::String(text.to_owned()).to_string();
    let args: Vec<String> = server.args.iter().map(|arg| quote(arg)).collect();
    let env: Vec<String> = server
        .env
        .iter()
        .map(|(key, value)| format!("{key} = {}", quote(value)))
        .collect();
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}]\nenv = {{ {} }}\n{extra}\n",
        quote(&server.command),
        args.join(", "),
        env.join(", ")
    )
}

/// `[mcp_servers.everything]`: server-everything over stdio, `extra` lines in its table.
pub fn everything(extra: &str) -> String {
    server_toml("everything", &crate::mcp_servers::everything_stdio(), extra)
}

/// The tool names of a recorded request, in its order, in either format.
pub fn request_tool_names(format: Format, request: &RecordedRequest) -> Vec<String> {
    request.json["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| {
            let name = match format {
                Format::OpenAi => &tool["function"]["name"],
                Format::Anthropic => &tool["name"],
            };
            name.as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

/// The tool `name` of a recorded request (OpenAI format): `(description, parameters)`.
pub fn openai_tool(request: &RecordedRequest, name: &str) -> (String, Value) {
    let tool = request.json["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|tool| tool["function"]["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name} in {}", request.json["tools"]));
    (
        tool["function"]["description"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        tool["function"]["parameters"].clone(),
    )
}

/// Warnings among `events`.
pub fn warnings(events: &[Envelope]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// The pids of live processes descending from `ancestor` whose command line contains
/// `marker`.
pub fn descendants_running(ancestor: u32, marker: &str) -> Vec<u32> {
    let parent_of = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The fields after the command name (which may hold spaces) start after the last ')'.
        let rest = &stat[stat.rfind(')')? + 2..];
        let mut fields = rest.split(' ');
        let state = fields.next()?;
        if state == "Z" {
            return None;
        }
        fields.next()?.parse().ok()
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(marker) {
            continue;
        }
        let mut current = pid;
        let mut hops = 0;
        while let Some(parent) = parent_of(current) {
            if parent == ancestor {
                found.push(pid);
                break;
            }
            if parent <= 1 || hops > 64 {
                break;
            }
            current = parent;
            hops += 1;
        }
    }
    found
}

/// Waits (polling the outside world, bounded by [`WAIT`]) until exactly one process of
/// `ancestor` runs `marker`; returns its pid.
pub async fn the_one_server(ancestor: u32, marker: &str) -> u32 {
    let deadline = Instant::now() + WAIT;
    loop {
        let pids = descendants_running(ancestor, marker);
        if pids.len() == 1 {
            return pids[0];
        }
        assert!(
            Instant::now() < deadline,
            "expected one {marker} process of {ancestor}, found {pids:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (polling the outside world, bounded by [`WAIT`]) until exactly one process of
/// `ancestor` runs `marker` and it is not `old`; returns its pid.
pub async fn the_one_server_but(ancestor: u32, marker: &str, old: u32) -> u32 {
    let deadline = Instant::now() + WAIT;
    loop {
        let pids = descendants_running(ancestor, marker);
        if pids.len() == 1 && pids[0] != old {
            return pids[0];
        }
        assert!(
            Instant::now() < deadline,
            "expected one new {marker} process of {ancestor}, found {pids:?} (old {old})"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What the command line of a server-everything process contains.
pub const EVERYTHING_MARKER: &str = "server-everything";

/// A `.mcp.json` with `servers` by name.
pub fn mcp_json(servers: &[(&str, ServerCommand)]) -> String {
    let servers: serde_json::Map<String, Value> = servers
        .iter()
        .map(|(name, server)| {
            (
                (*name).to_owned(),
                json!({"command": server.command, "args": server.args, "env": server.env}),
            )
        })
        .collect();
    json!({ "mcpServers": servers }).to_string()
}

/// Waits (polling the outside world, bounded by [`WAIT`]) until no process of `ancestor` runs
/// `marker`.
pub async fn no_server_left(ancestor: u32, marker: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let pids = descendants_running(ancestor, marker);
        if pids.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{marker} processes of {ancestor} still run: {pids:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Follows `agentctl mcp logs SERVER -f` until a line contains `needle`, then stops it with
/// Ctrl-C; the lines read, for messages. Fails after `WAIT` without the line.
pub async fn wait_for_mcp_log_line(env: &crate::harness::TestEnv, server: &str, needle: &str) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut follow = env
        .agentctl()
        .args(["mcp", "logs", server, "-f"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("agentctl mcp logs -f");
    let mut lines = BufReader::new(follow.stdout.take().expect("stdout")).lines();
    let mut seen = Vec::new();
    loop {
        let line = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("{needle:?} not in the log of {server}: {seen:#?}"))
            .expect("read agentctl's stdout")
            .unwrap_or_else(|| panic!("agentctl mcp logs ended: {seen:#?}"));
        if line.contains(needle) {
            break;
        }
        seen.push(line);
    }
    if let Some(pid) = follow.id() {
        // SAFETY: kill(2) on the child we started, still unreaped.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
    }
    let _ = tokio::time::timeout(WAIT, follow.wait()).await;
}
