//! Extensions: clients of the socket that registered (`extension/register`) tools, commands
//! and event handlers for the sessions of a scope. `Extensions` is the daemon's registry of
//! the live ones; it sits below the session and the server so both reach it: a run takes its
//! tools (`tool::ScopeTools`, asked at every step) and its interceptor (`events`) from it, the
//! server gives each registration its connection as an [`ExtensionPeer`]. A registration lives
//! as long as its connection: once the peer is gone it is skipped and pruned, so its tools
//! leave the next model call's set (recorded as `toolsChanged`) and calls in flight fail at
//! once. One connection may register several extensions (`MAX_EXTENSIONS_PER_CONNECTION`).
//!
//! Every request to an extension has a deadline (`[extensions] call_timeout_ms`, default
//! 10 s): an extension that is slow, dead or answers junk is skipped with a warning in the
//! session, never a hang.

mod events;
mod tool;
mod validate;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;

use agentd_agent::intercept::Interceptor;
use agentd_agent::tool_set::ToolSource;
use agentd_work::tools::Tool;
use protocol::extension::{
    ExtensionCommandSpec, ExtensionEventKind, ExtensionRegisterParams, ExtensionRegisterResult,
    ExtensionRunCommandParams, ExtensionRunCommandResult,
};

pub use validate::RegisterError;

/// How long the daemon waits for an extension's answer unless config.toml says otherwise.
#[cfg(test)]
pub use crate::config::DEFAULT_EXTENSION_CALL_TIMEOUT as DEFAULT_CALL_TIMEOUT;
/// Live extensions of the whole daemon: each adds tools to the requests of its sessions.
pub const MAX_EXTENSIONS: usize = 64;
/// Extensions one connection may register (one process may bring a few).
pub const MAX_EXTENSIONS_PER_CONNECTION: usize = 8;

/// The connection of an extension, as the registry sees it (`server::peer` implements it).
pub trait ExtensionPeer: Send + Sync {
    /// Sends `method` with `params` as a request and waits for its answer, at most
    /// `deadline` (sending included).
    fn request(
        &self,
        method: &'static str,
        params: serde_json::Value,
        deadline: Duration,
    ) -> BoxFuture<'_, Result<serde_json::Value, PeerError>>;

    /// Whether the connection has ended (then every request fails at once).
    fn is_gone(&self) -> bool;
}

/// Why a request to an extension got no usable answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PeerError {
    #[error("its connection is closed")]
    Gone,
    #[error("it did not answer within {} ms", .0.as_millis())]
    Timeout(Duration),
    #[error("too many requests to it are waiting for an answer ({0})")]
    TooMany(usize),
    #[error("the request is too big to send ({0} bytes)")]
    TooBig(usize),
    #[error("it answered with an error: {0}")]
    Refused(String),
    #[error("its answer is not what was asked for: {0}")]
    BadAnswer(String),
}

/// The daemon's live extensions.
pub struct Extensions {
    live: Mutex<Vec<Arc<Extension>>>,
    /// The deadline of every request to an extension.
    call_timeout: Duration,
}

/// One registration.
pub struct Extension {
    pub id: String,
    pub name: String,
    /// Canonical: sessions whose cwd is inside it. None: every session.
    scope: Option<PathBuf>,
    /// Its tools as the model calls them, built once.
    tools: Vec<Arc<dyn Tool>>,
    commands: Vec<ExtensionCommandSpec>,
    events: HashSet<ExtensionEventKind>,
    peer: Arc<dyn ExtensionPeer>,
    /// The connection it came on (a connection's registrations are counted).
    connection_id: u64,
}

impl Extension {
    fn in_scope(&self, cwd: &Path) -> bool {
        self.scope
            .as_ref()
            .is_none_or(|scope| cwd.starts_with(scope))
    }

    fn listens(&self, kind: ExtensionEventKind) -> bool {
        self.events.contains(&kind)
    }

    /// Sends one request with the registry's deadline; the result decoded as `T`.
    async fn ask<T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: impl serde::Serialize,
        deadline: Duration,
    ) -> Result<T, PeerError> {
        let params =
            serde_json::to_value(params).map_err(|err| PeerError::BadAnswer(err.to_string()))?;
        let answer = self.peer.request(method, params, deadline).await?;
        serde_json::from_value(answer).map_err(|err| {
            PeerError::BadAnswer(protocol::error::echo_message(&err.to_string()).into_owned())
        })
    }
}

/// A command of a live extension, as the slash-command dispatcher lists it.
// `commands_for` and `run_command` are the slash-command dispatcher's (`session/command`,
// `commands/list`), which lands apart from the registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtensionCommand {
    /// The extension's name.
    pub extension: String,
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
}

impl Extensions {
    pub fn new(call_timeout: Duration) -> Extensions {
        Extensions {
            live: Mutex::new(Vec::new()),
            call_timeout,
        }
    }

    /// Registers what `params` declares for `peer` (connection `connection_id`). `scope` is
    /// `params.scope.cwd` made canonical by the caller. Refused: a bad declaration, a name a
    /// live extension has, a command another one has, too many extensions.
    pub fn register(
        &self,
        params: ExtensionRegisterParams,
        scope: Option<PathBuf>,
        peer: Arc<dyn ExtensionPeer>,
        connection_id: u64,
    ) -> Result<ExtensionRegisterResult, RegisterError> {
        let declared = validate::check(&params)?;
        let id = format!("ext_{}", uuid::Uuid::new_v4().simple());
        let tools: Vec<Arc<dyn Tool>> = params
            .tools
            .iter()
            .zip(&declared.tool_names)
            .map(|(spec, exposed)| {
                Arc::new(tool::ExtensionTool::new(
                    exposed.clone(),
                    spec.clone(),
                    id.clone(),
                    params.name.clone(),
                    Arc::clone(&peer),
                    self.call_timeout,
                )) as Arc<dyn Tool>
            })
            .collect();
        let extension = Arc::new(Extension {
            id: id.clone(),
            name: params.name.clone(),
            scope,
            tools,
            commands: params.commands,
            events: params.events.into_iter().collect(),
            peer,
            connection_id,
        });
        let mut live = self.lock();
        live.retain(|one| !one.peer.is_gone());
        if live.len() >= MAX_EXTENSIONS {
            return Err(RegisterError::TooMany(format!(
                "the daemon has {MAX_EXTENSIONS} live extensions, its limit; end one of them first"
            )));
        }
        if live
            .iter()
            .filter(|one| one.connection_id == connection_id)
            .count()
            >= MAX_EXTENSIONS_PER_CONNECTION
        {
            return Err(RegisterError::TooMany(format!(
                "this connection registered {MAX_EXTENSIONS_PER_CONNECTION} extensions, its limit"
            )));
        }
        if live.iter().any(|one| one.name == extension.name) {
            return Err(RegisterError::Conflict(format!(
                "an extension named {:?} is already registered; pick another name, or end the other one first",
                extension.name
            )));
        }
        for command in &extension.commands {
            if let Some(other) = live
                .iter()
                .find(|one| one.commands.iter().any(|c| c.name == command.name))
            {
                return Err(RegisterError::Conflict(format!(
                    "the command {:?} is already registered by the extension {:?}; pick another name",
                    command.name, other.name
                )));
            }
        }
        live.push(extension);
        Ok(ExtensionRegisterResult {
            extension_id: id,
            tools: declared.tool_names,
        })
    }

    /// The live extensions whose scope holds `cwd`, in registration order.
    pub fn in_scope(&self, cwd: &Path) -> Vec<Arc<Extension>> {
        let mut live = self.lock();
        live.retain(|one| !one.peer.is_gone());
        live.iter()
            .filter(|one| one.in_scope(cwd))
            .cloned()
            .collect()
    }

    /// The tools of the extensions in scope of a session in `cwd`, asked at every step.
    pub fn tools_for(self: &Arc<Self>, cwd: &Path) -> Arc<dyn ToolSource> {
        Arc::new(tool::ScopeTools {
            extensions: Arc::clone(self),
            cwd: cwd.to_path_buf(),
        })
    }

    /// The interceptor of a run of session `session_id` in `cwd`: None when no live extension
    /// in scope listens to any event now (an extension that registers later joins the next
    /// run; one that goes away is skipped).
    pub fn interceptor(
        self: &Arc<Self>,
        cwd: &Path,
        session_id: &str,
    ) -> Option<Arc<dyn Interceptor>> {
        if self.in_scope(cwd).iter().all(|one| one.events.is_empty()) {
            return None;
        }
        Some(Arc::new(events::ExtensionEvents {
            extensions: Arc::clone(self),
            cwd: cwd.to_path_buf(),
            session_id: session_id.to_owned(),
        }))
    }

    /// The commands of the extensions in scope of `cwd`, by extension then as declared (for
    /// `commands/list` and the slash-command dispatcher).
    pub fn commands_for(&self, cwd: &Path) -> Vec<ExtensionCommand> {
        self.in_scope(cwd)
            .iter()
            .flat_map(|one| {
                one.commands.iter().map(|command| ExtensionCommand {
                    extension: one.name.clone(),
                    name: command.name.clone(),
                    description: command.description.clone(),
                    argument_hint: command.argument_hint.clone(),
                })
            })
            .collect()
    }

    /// Runs the command `name` of the extension in scope of `cwd` that declared it
    /// (`extension/runCommand`), within the deadline. The error says what failed, for the user.
    pub async fn run_command(
        &self,
        cwd: &Path,
        session_id: Option<&str>,
        name: &str,
        args: &str,
    ) -> Result<ExtensionRunCommandResult, String> {
        let Some(extension) = self
            .in_scope(cwd)
            .into_iter()
            .find(|one| one.commands.iter().any(|command| command.name == name))
        else {
            return Err(format!(
                "no live extension in scope of {} has the command {name:?}",
                cwd.display()
            ));
        };
        let params = ExtensionRunCommandParams {
            extension_id: extension.id.clone(),
            session_id: session_id.map(str::to_owned),
            cwd: cwd.display().to_string(),
            command: name.to_owned(),
            args: args.to_owned(),
        };
        extension
            .ask(protocol::extension::RUN_COMMAND, params, self.call_timeout)
            .await
            .map_err(|err| {
                format!(
                    "the extension {:?} did not run /{name}: {err}",
                    extension.name
                )
            })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Extension>>> {
        self.live
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests;
