//! Subagents: the `task` tool's child sessions. A child is a new session whose header names
//! its parent, agent type and task; its system prompt is the definition's, its one user
//! message the prompt (in fork mode, `subagent_fork`: the parent's system prompt and
//! conversation, then the prompt), its tools the parent's filtered by the definition and never
//! `task`, `task_*`, `memory`, `todo_write`. A foreground child's final
//! message is the tool result; a background one's result reaches the parent as a
//! `<task-notification>` follow-up. The task record (`crate::task`) follows it all.

use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use protocol::task::{TaskKind, TaskStatus};
use tokio_util::sync::CancellationToken;

use super::{Session, SessionError, SessionManager};
use crate::store::SessionHeader;
use crate::task::{NewTask, TaskManager, TaskRecord};
use agentd_work::agents::{AgentDefinition, ToolFilter};
use agentd_work::tools::{SubagentLauncher, TaskParams, ToolOutput};
use child::{ChildRun, deliver};
pub(crate) use child::{deliver as deliver_notification, notification_task_id};

pub(crate) use resume::resume_background_tasks;

#[path = "subagent_child.rs"]
mod child;
#[path = "subagent_fork.rs"]
mod fork;
#[path = "subagent_mcp.rs"]
mod mcp;
use crate::store::ChildMcpServers;
pub(crate) use mcp::narrow as narrow_mcp_servers;
#[path = "subagent_resume.rs"]
mod resume;

/// The tool result of a foreground child that said nothing at the end.
pub const NO_SUMMARY: &str = "(no summary)";

/// Starts subagents for one run of a parent session.
pub struct SubagentRunner {
    sessions: Weak<SessionManager>,
    parent: Arc<SessionHeader>,
    parent_run: Arc<ParentRun>,
}

/// The parent's run whose `task` calls start children: its id labels their approvals, so
/// the client answering that run answers them; they hold their approvals as it does. Without
/// `hold_approvals`, a child's approval with nobody to answer it, on the child or the parent,
/// is decided by mode at once: a headless run never waits on a child.
#[derive(Clone, Debug)]
pub struct ParentRun {
    pub run_id: String,
    pub hold_approvals: bool,
}

/// How a child's run ended, as its task records it.
#[derive(Debug)]
struct ChildOutcome {
    status: TaskStatus,
    result: Option<String>,
    error: Option<String>,
    /// The child run's tokens (recorded in the task).
    usage: Option<protocol::event::Usage>,
}

impl SubagentRunner {
    pub fn new(
        sessions: Weak<SessionManager>,
        parent: SessionHeader,
        parent_run: ParentRun,
    ) -> Self {
        Self {
            sessions,
            parent: Arc::new(parent),
            parent_run: Arc::new(parent_run),
        }
    }
}

impl SubagentLauncher for SubagentRunner {
    fn launch(
        &self,
        params: TaskParams,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ToolOutput> {
        let sessions = self.sessions.clone();
        let parent = self.parent.clone();
        let parent_run = self.parent_run.clone();
        Box::pin(async move {
            let Some(sessions) = sessions.upgrade() else {
                return ToolOutput::error("the daemon is stopping; no subagent can start");
            };
            // In a task of the manager's tracker: a parent run cancelled mid-launch drops this
            // call, and the task record must still be finished (the cancel reaches the child).
            let launching =
                sessions
                    .tasks
                    .spawn(launch(sessions.clone(), parent, parent_run, params, cancel));
            match launching.await {
                Ok(output) => output,
                Err(err) => ToolOutput::error(format!("the subagent stopped unexpectedly: {err}")),
            }
        })
    }
}

/// A subagent ready to run: its task record (pending) and its child session.
struct Prepared {
    task: TaskRecord,
    run: ChildRun,
    definition: AgentDefinition,
}

/// Why a subagent could not be prepared.
enum PrepareError {
    /// The agent type names no definition: the message lists the available ones.
    UnknownAgent(String),
    Failed(String),
}

impl PrepareError {
    fn message(self) -> String {
        match self {
            PrepareError::UnknownAgent(message) | PrepareError::Failed(message) => message,
        }
    }
}

/// Finds the definition, records the task and creates the child session. `base` gives the
/// workspace, provider, permission mode, rules and MCP servers (the parent's header, or one
/// made for `task/start`); `parent_id` is the session the task reports to, if any; `options`
/// shape the child's run.
async fn prepare(
    sessions: &Arc<SessionManager>,
    base: &SessionHeader,
    parent_id: Option<String>,
    params: &TaskParams,
    options: super::RunOptions,
) -> Result<Prepared, PrepareError> {
    let agent_type = params
        .agent_type
        .clone()
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| agentd_work::agents::GENERAL_PURPOSE.to_owned());
    let cwd = std::path::PathBuf::from(&base.cwd);
    let agents_dir = sessions.deps.paths.agents_dir.clone();
    let skills_dir = sessions.deps.paths.skills_dir.clone();
    let user_notes = sessions.deps.paths.user_notes.clone();
    let discover_cwd = cwd.clone();
    let found = tokio::task::spawn_blocking(move || {
        let catalogue = agentd_work::agents::discover(&discover_cwd, Some(&agents_dir));
        let skills = agentd_knowledge::skills::discover(
            &discover_cwd,
            Some(&skills_dir),
            &agentd_knowledge::skills::SkillLimits::default(),
        );
        // The environment and notes its parent's prompt has, as of today.
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        let date = now.get(..10).unwrap_or(&now);
        let context =
            agentd_agent::prompt::context_sections(&discover_cwd, date, Some(&user_notes));
        (catalogue, skills, context)
    })
    .await;
    let Ok((catalogue, skills, context)) = found else {
        return Err(PrepareError::Failed(
            "cannot read the agent definitions; try again".to_owned(),
        ));
    };
    let Some(definition) = catalogue.get(&agent_type).cloned() else {
        return Err(PrepareError::UnknownAgent(catalogue.unknown(&agent_type)));
    };
    let tasks = sessions.deps.tasks.clone();
    // Fork mode: the parent's conversation so far and its system prompt, byte for byte.
    let seed = match (params.fork, &parent_id) {
        (false, _) => None,
        (true, None) => {
            return Err(PrepareError::Failed(
                "fork mode needs a parent session to fork from; a task started on its own has none"
                    .to_owned(),
            ));
        }
        (true, Some(parent)) => Some(
            fork::parent_conversation(sessions, parent)
                .await
                .map_err(PrepareError::Failed)?,
        ),
    };
    let system_prompt = match &seed {
        Some(_) => base.system_prompt.clone(),
        None => agentd_core::interned::SYSTEM_PROMPTS.intern(
            &agentd_work::agents::child_system_prompt(&definition, &context, &skills),
        ),
    };
    // The record (written and synced) and the child's session file at the same time.
    let task_id = TaskManager::new_id();
    let (task, child) = tokio::join!(
        tasks.create_as(
            task_id.clone(),
            NewTask {
                kind: TaskKind::Subagent,
                parent_session_id: parent_id.clone(),
                agent_type: Some(definition.name.clone()),
                description: params.description.clone(),
                prompt: params.prompt.clone(),
                cwd: cwd.clone(),
                // A client's task (no parent) runs in the background too.
                background: params.run_in_background || parent_id.is_none(),
            }
        ),
        sessions.create_child(
            base,
            parent_id.clone(),
            &definition,
            system_prompt,
            &task_id,
            seed,
        ),
    );
    let task = match task {
        Ok(task) => task,
        Err(err) => {
            // No task to report to: the child session goes too.
            if let Ok(child) = &child
                && let Err(delete) = sessions.delete(child.id()).await
            {
                tracing::warn!("cannot remove the session of a task not started: {delete}");
            }
            return Err(PrepareError::Failed(format!(
                "the subagent did not start: {err}"
            )));
        }
    };
    let child = match child {
        Ok(child) => child,
        Err(err) => {
            let message = format!("the subagent's session could not be created: {err}");
            let _ = tasks
                .update(&task.task_id, |task| {
                    task.status = TaskStatus::Failed;
                    task.error = Some(message.clone());
                })
                .await;
            return Err(PrepareError::Failed(message));
        }
    };
    // SubagentStart hooks of the parent's session (its header: the definition's own hooks are
    // the child's), recorded in the parent's log (the child's for a task with no parent).
    let parent = match &parent_id {
        Some(parent) => sessions.get(parent).await.ok(),
        None => None,
    };
    let hook_log = parent.as_ref().map_or(&child.log, |parent| &parent.log);
    let hook_context = super::hooks::at_session_point(
        base,
        &sessions.deps,
        &**hook_log,
        agentd_agent::intercept::Point::SubagentStart {
            agent_type: &definition.name,
        },
    )
    .await;
    let child_id = child.id().to_owned();
    let task = tasks
        .update_deferred(&task.task_id, |task| task.child_session_id = Some(child_id))
        .unwrap_or(task);
    let run = ChildRun {
        tasks,
        task_id: task.task_id.clone(),
        child,
        // What the SubagentStart hooks add, after the prompt (as a prompt hook's context).
        prompt: hook_context
            .iter()
            .fold(params.prompt.clone(), |prompt, context| {
                format!("{prompt}\n\n{context}")
            }),
        workspace: cwd,
        read_only: definition.read_only,
        options,
        notify_parent: params.run_in_background && parent_id.is_some(),
    };
    Ok(Prepared {
        task,
        run,
        definition,
    })
}

async fn launch(
    sessions: Arc<SessionManager>,
    parent: Arc<SessionHeader>,
    parent_run: Arc<ParentRun>,
    params: TaskParams,
    cancel: CancellationToken,
) -> ToolOutput {
    let options = super::RunOptions {
        hold_approvals: parent_run.hold_approvals,
        max_steps: None,
        parent_run_id: Some(parent_run.run_id.clone()),
        ..Default::default()
    };
    let Prepared {
        task,
        run,
        definition,
    } = match prepare(
        &sessions,
        &parent,
        Some(parent.id.clone()),
        &params,
        options,
    )
    .await
    {
        Ok(prepared) => prepared,
        Err(err) => return ToolOutput::error(err.message()),
    };
    let agent_type = definition.name.clone();
    if params.run_in_background {
        let task_id = task.task_id.clone();
        let notify_idle_parent = sessions.notify_idle_parent();
        let weak = Arc::downgrade(&sessions);
        sessions.tasks.spawn(async move {
            // Suspended by a stop, it records nothing (and owes nothing yet): it resumes.
            run.run(None).await;
            // At shutdown no new run starts: the record keeps the notification owed, and the
            // next start delivers it.
            if let Some(sessions) = weak.upgrade()
                && !sessions.deps.tasks.is_stopping()
                && let Some(task) = sessions.deps.tasks.get(&task_id)
                && task.notification_pending
            {
                deliver(&sessions, &task, notify_idle_parent, false).await;
            }
        });
        return ToolOutput::ok(format!(
            "started task {} ({}) in the background; its result will arrive as a \
             <task-notification> message",
            task.task_id, agent_type
        ));
    }
    // The child runs in a task of its own: the parent's tool call may be dropped (the parent
    // run cancelled) and the child must still hear of it and record its end.
    let running = sessions.tasks.spawn(run.run(Some(cancel)));
    let outcome = match running.await {
        Ok(outcome) => outcome,
        Err(err) => ChildOutcome {
            status: TaskStatus::Failed,
            result: None,
            error: Some(format!("the subagent stopped unexpectedly: {err}")),
            usage: None,
        },
    };
    match outcome.status {
        TaskStatus::Completed => ToolOutput::ok(outcome.result.unwrap_or_default()),
        _ => ToolOutput::error(format!(
            "the subagent ({agent_type}, task {}) ended {}: {}",
            task.task_id,
            outcome.status.as_str(),
            outcome.error.unwrap_or_default()
        )),
    }
}

impl SessionManager {
    /// `[tasks] notify_idle_parent` as the configuration now says.
    pub(crate) fn notify_idle_parent(&self) -> bool {
        self.deps
            .config
            .snapshot()
            .map(|config| config.tasks.notify_idle_parent)
            .unwrap_or(true)
    }

    /// `task/start`: a background subagent a client starts, with no parent session. It runs
    /// in `cwd` with the default provider, `permission_mode` (else the workspace's default
    /// mode) and no session rules or MCP servers of a parent; its result stays in the task.
    pub async fn start_task(
        self: &Arc<Self>,
        cwd: std::path::PathBuf,
        params: TaskParams,
        permission_mode: Option<protocol::approval::PermissionMode>,
    ) -> Result<TaskRecord, SessionError> {
        let (_, provider) = self.deps.provider(None)?;
        let permission_mode = match permission_mode {
            Some(mode) => mode,
            None => self.default_mode(&cwd).await?.0,
        };
        let base = SessionHeader {
            version: crate::store::FORMAT_VERSION,
            id: String::new(),
            created_at: String::new(),
            cwd: cwd.display().to_string(),
            provider: provider.name.clone(),
            model: provider.model.clone(),
            title: None,
            permission_mode,
            permission_rules: Default::default(),
            mcp_servers: serde_json::Value::Null,
            child_mcp: None,
            system_prompt: "".into(),
            agent: None,
            parent_session_id: None,
            agent_type: None,
            task_id: None,
            tool_filter: None,
            max_turns: None,
            max_budget_usd: None,
            max_tokens: None,
            forked_from: None,
            prompt_cache_key: None,
        };
        // No parent to answer for it: its approvals wait for a client (or the timeout), as
        // the client that started it may answer later.
        let options = super::RunOptions {
            hold_approvals: true,
            max_steps: None,
            parent_run_id: None,
            ..Default::default()
        };
        let Prepared { task, run, .. } = prepare(self, &base, None, &params, options)
            .await
            .map_err(|err| match err {
                PrepareError::UnknownAgent(message) => SessionError::InvalidParams(message),
                PrepareError::Failed(message) => SessionError::Internal(message),
            })?;
        self.tasks.spawn(async move {
            run.run(None).await;
        });
        Ok(task)
    }
}

/// The tool filter of a run of the session `header`: a child session (or one run as an
/// agent) keeps the tools its definition allows, never `task`, `task_*`, `memory` or
/// `todo_write` (`agents::ToolFilter`), built-in and MCP alike.
pub fn run_filter(header: &SessionHeader) -> Option<ToolFilter> {
    match &header.tool_filter {
        Some(filter) => Some(filter.clone()),
        None if header.parent_session_id.is_some() || header.task_id.is_some() => {
            Some(ToolFilter::default())
        }
        None => None,
    }
}

/// Where the `task` tool of a run of `header` starts subagents: only a top-level session
/// delegates (a task's session, with a parent or not, never gets a launcher, whatever its
/// tools).
pub fn launcher_for(
    header: &SessionHeader,
    deps: &super::SessionDeps,
    parent_run: ParentRun,
) -> Option<Arc<dyn SubagentLauncher>> {
    if header.parent_session_id.is_some() || header.task_id.is_some() {
        return None;
    }
    let manager = deps.manager.get()?.clone();
    Some(Arc::new(SubagentRunner::new(
        manager,
        header.clone(),
        parent_run,
    )))
}

impl SessionManager {
    /// A new child session run as `definition` for task `task_id`: `base`'s workspace,
    /// provider, permission mode (tightened by the definition's), rules and MCP servers, the
    /// definition's prompt and tools; `parent_id` is the session it reports to, if any. With
    /// `seed` (fork mode) its history starts with those messages and its requests share the
    /// parent's prompt cache key.
    pub async fn create_child(
        &self,
        parent: &SessionHeader,
        parent_id: Option<String>,
        definition: &AgentDefinition,
        system_prompt: std::sync::Arc<str>,
        task_id: &str,
        seed: Option<Vec<agentd_core::conversation::Message>>,
    ) -> Result<Arc<Session>, SessionError> {
        let config = self.deps.config.snapshot().map_err(SessionError::Config)?;
        // `inherit` (or a model this daemon has no provider for): the parent's.
        let (provider, model) = match definition
            .model
            .as_deref()
            .filter(|model| *model != "inherit")
            .and_then(|model| config.resolve_provider(Some(model)).ok())
        {
            Some(provider) => (provider.name.clone(), provider.model.clone()),
            None => (parent.provider.clone(), parent.model.clone()),
        };
        let header = SessionHeader {
            version: crate::store::FORMAT_VERSION,
            id: format!("ses_{}", uuid::Uuid::new_v4().simple()),
            created_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            cwd: parent.cwd.clone(),
            provider,
            model,
            title: None,
            permission_mode: tightened(parent.permission_mode, definition),
            permission_rules: parent.permission_rules.clone(),
            mcp_servers: parent.mcp_servers.clone(),
            child_mcp: ChildMcpServers::of(definition).map(Box::new),
            system_prompt,
            agent: None,
            parent_session_id: parent_id,
            agent_type: Some(definition.name.clone()),
            task_id: Some(task_id.to_owned()),
            tool_filter: Some(ToolFilter::of(definition)),
            max_turns: definition.max_turns,
            max_budget_usd: definition.max_budget_usd,
            max_tokens: definition.max_tokens,
            forked_from: None,
            prompt_cache_key: seed.as_ref().map(|_| parent.cache_key().to_owned()),
        };
        match seed {
            Some(messages) => self.add_seeded(header, messages).await,
            // What of the definition is not used: warnings of the child's log.
            None => {
                self.add_session(header, definition_warnings(definition))
                    .await
            }
        }
    }
}

/// The warnings of `definition` (keys not used, bad `mcpServers` items), each naming its file.
fn definition_warnings(definition: &AgentDefinition) -> Vec<String> {
    let file = definition
        .source
        .path()
        .map(|path| path.display().to_string())
        .unwrap_or_else(|| definition.name.clone());
    definition
        .warnings
        .iter()
        .map(|warning| format!("agent definition {file}: {warning}"))
        .collect()
}

/// A child's permission mode: `base`, or the definition's when it is tighter (a definition,
/// maybe a project's, never loosens what its parent runs under).
fn tightened(
    base: protocol::approval::PermissionMode,
    definition: &AgentDefinition,
) -> protocol::approval::PermissionMode {
    agentd_work::agents::mode_within(base, definition.permission_mode.as_deref()).unwrap_or(base)
}
