//! Exit codes and how results and errors reach the user: text for people, one JSON object on
//! stdout with `--json`.

use std::process::ExitCode;

use serde::Serialize;

use crate::client::ClientError;

/// The operation succeeded.
pub const EXIT_OK: u8 = 0;
/// The operation failed (the daemon answered with an error, or the run failed).
pub const EXIT_FAILED: u8 = 1;
/// The command line was wrong.
pub const EXIT_USAGE: u8 = 2;
/// The daemon could not be reached, or the connection to it was lost.
pub const EXIT_UNREACHABLE: u8 = 3;
/// The run was cancelled (Ctrl-C), like a shell's 128 + SIGINT.
pub const EXIT_CANCELLED: u8 = 130;
/// The run stopped at a budget nobody raised (`runFinished` status `budget`).
pub const EXIT_BUDGET: u8 = 4;

/// A failed command: what to tell the user and which exit code to use.
#[derive(Debug)]
pub struct CommandError {
    pub code: u8,
    pub message: String,
}

impl CommandError {
    pub fn failed(message: impl Into<String>) -> Self {
        CommandError {
            code: EXIT_FAILED,
            message: message.into(),
        }
    }

    pub fn usage(message: impl Into<String>) -> Self {
        CommandError {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }

    /// The connection to the daemon broke mid-command (it stopped or crashed).
    pub fn connection_lost(message: impl Into<String>) -> Self {
        CommandError {
            code: EXIT_UNREACHABLE,
            message: message.into(),
        }
    }
}

impl From<ClientError> for CommandError {
    fn from(err: ClientError) -> Self {
        match &err {
            ClientError::Unreachable { .. } => CommandError {
                code: EXIT_UNREACHABLE,
                message: format!(
                    "{err}\nstart it with `agentctl daemon start`, or check AGENTD_SOCKET"
                ),
            },
            // The daemon read its environment and config file when it started: a key exported
            // since, or a config file fixed since, only counts after a restart.
            ClientError::Rpc { code, .. } if *code == protocol::error::CONFIG_ERROR => {
                CommandError::failed(format!(
                    "{err}\nnote: agentd reads its environment and config file when it starts; after changing them, restart it with `agentctl daemon restart`"
                ))
            }
            ClientError::NotAnswering { .. } => CommandError {
                code: EXIT_UNREACHABLE,
                message: err.to_string(),
            },
            // Running but full: starting another daemon would not help.
            ClientError::Busy { message } => {
                let message = if message.starts_with("agentd is busy") {
                    message.clone()
                } else {
                    format!("agentd is busy: {message}")
                };
                CommandError::failed(message)
            }
            ClientError::Rpc { data, .. } => {
                let hint = data
                    .as_ref()
                    .and_then(|data| data.suggest.as_ref())
                    .map(|suggest| format!("\nhint: {}", suggestion_hint(&suggest.method)))
                    .unwrap_or_default();
                CommandError::failed(format!("{err}{hint}"))
            }
            ClientError::Transport(_) => CommandError::failed(err.to_string()),
        }
    }
}

/// The daemon's suggestion (`error.data.suggest.method`) as an agentctl command, or as the
/// method itself when agentctl has no command for it.
pub fn suggestion_hint(method: &str) -> String {
    use protocol::Method;
    use protocol::methods::{
        ApprovalList, BudgetList, CommandsList, McpList, SessionList, TaskList,
    };
    if method == CommandsList::NAME {
        "`/help` lists the commands".to_owned()
    } else if method == SessionList::NAME {
        "list sessions with `agentctl sessions list`".to_owned()
    } else if method == McpList::NAME {
        "list MCP servers with `agentctl mcp list`".to_owned()
    } else if method == TaskList::NAME {
        "list tasks with `agentctl task list --all`".to_owned()
    } else if method == ApprovalList::NAME {
        "list pending approvals with `agentctl approvals list`".to_owned()
    } else if method == BudgetList::NAME {
        "list the runs paused at a budget with `agentctl approvals list`".to_owned()
    } else {
        format!("the daemon suggests calling `{method}`")
    }
}

/// Print one JSON object on stdout.
pub fn print_json<T: Serialize>(value: &T) {
    match serde_json::to_string(value) {
        Ok(text) => println!("{text}"),
        Err(err) => eprintln!("agentctl: cannot encode output: {err}"),
    }
}

/// Report an error and turn it into the exit code.
pub fn report(err: CommandError, json: bool) -> ExitCode {
    if json {
        print_json(
            &serde_json::json!({ "error": { "message": err.message, "exitCode": err.code } }),
        );
    } else {
        crate::warn_line!("agentctl: {}", err.message);
    }
    ExitCode::from(err.code)
}

#[cfg(test)]
mod tests {
    use protocol::error::{ErrorData, NOT_FOUND};

    use super::*;

    fn rpc(data: Option<ErrorData>) -> CommandError {
        CommandError::from(ClientError::Rpc {
            code: NOT_FOUND,
            message: "session not found: ses_x".to_owned(),
            data,
        })
    }

    #[test]
    fn a_suggested_method_becomes_a_hint_line() {
        let cases = [
            (
                Some("session/list"),
                "\nhint: list sessions with `agentctl sessions list`",
            ),
            (
                Some("approval/list"),
                "\nhint: list pending approvals with `agentctl approvals list`",
            ),
            (
                Some("later/method"),
                "\nhint: the daemon suggests calling `later/method`",
            ),
            (None, ""),
        ];
        for (method, hint) in cases {
            let error = rpc(method.map(ErrorData::suggest_method));
            assert_eq!(error.message, format!("session not found: ses_x{hint}"));
            assert_eq!(error.code, EXIT_FAILED);
        }
        assert_eq!(
            rpc(Some(ErrorData::default())).message,
            "session not found: ses_x"
        );
    }
}
