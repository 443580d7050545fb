//! A leading `/` in what a person types (`agentctl run "/name args"`, a chat line, an ACP
//! prompt): a slash command, sent to the daemon as `session/command`. A line starting with
//! `//`, a lone `/`, or a `/` followed by something that is no command name (`/etc/hosts is
//! broken`) is text for the model, as typed.

use protocol::commands::{SessionCommandParams, SessionCommandResult};
use protocol::error::METHOD_NOT_FOUND;
use protocol::methods::SessionCommand;

use crate::client::{ClientError, Connection};
use crate::output::CommandError;

/// A typed slash command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slash {
    /// Without the `/`.
    pub name: String,
    /// Everything after the name, trimmed.
    pub args: String,
}

/// The slash command `text` is, if it is one.
pub fn parse(text: &str) -> Option<Slash> {
    let rest = text.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    let is_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '?'));
    is_name.then(|| Slash {
        name: if name == "?" {
            "help".to_owned()
        } else {
            name.to_owned()
        },
        args: rest[end..].trim().to_owned(),
    })
}

/// `session/command`, its absence from an older daemon worded as what to do.
pub async fn send(
    connection: &Connection,
    session_id: &str,
    slash: &Slash,
    client_request_id: Option<String>,
) -> Result<SessionCommandResult, ClientError> {
    let params = SessionCommandParams {
        session_id: session_id.to_owned(),
        name: slash.name.clone(),
        args: slash.args.clone(),
        client_request_id,
    };
    connection.request::<SessionCommand>(&params).await
}

/// An error of [`send`] as a person reads it.
pub fn error(err: ClientError) -> CommandError {
    match err {
        ClientError::Rpc { code, .. } if code == METHOD_NOT_FOUND => CommandError::failed(
            "this agentd has no slash commands; after updating agentd, run `agentctl daemon restart` (start the text with // to send it to the model as typed)",
        ),
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_args_and_text_that_only_looks_like_a_command() {
        let slash = |name: &str, args: &str| {
            Some(Slash {
                name: name.to_owned(),
                args: args.to_owned(),
            })
        };
        assert_eq!(parse("/help"), slash("help", ""));
        assert_eq!(parse("  /fix  42  src/a.rs "), slash("fix", "42  src/a.rs"));
        assert_eq!(parse("/git:commit -m x"), slash("git:commit", "-m x"));
        assert_eq!(
            parse("/mcp__everything__simple_prompt"),
            slash("mcp__everything__simple_prompt", "")
        );
        assert_eq!(parse("/?"), slash("help", ""));
        for text in [
            "//help",
            "/",
            "/ help",
            "/etc/hosts is broken",
            "fix /help",
            "",
        ] {
            assert_eq!(parse(text), None, "{text:?}");
        }
    }
}
