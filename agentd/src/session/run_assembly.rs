//! Run assembly: how the session's actor puts a run together. What can fail is prepared first
//! (`Prepared`); the run's parts are then named one by one (`ToolParts`, `RunParts`), so a
//! part left out is a compile error rather than a default, and the run is spawned.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{ActiveRun, Actor, SessionError};
use crate::session::SessionShared;
use crate::store::SessionHeader;
use agentd_agent::budget::RunBudget;
use agentd_agent::gate::RunPermissions;
use agentd_agent::intercept::Interceptors;
use agentd_agent::sink::RunLog;
use agentd_agent::tool_set::RunTools;
use agentd_agent::{Run, RunStart};
use agentd_knowledge::context::ContextLimits;
use agentd_llm::LlmClient;
use agentd_work::tools::{
    BackgroundShells, FetchClients, NoFetchRules, ProgressSink, ReadFilter, SubagentLauncher,
    TodoSink, ToolContext, ToolLimits,
};
use protocol::event::{Event, RunStartOptions, UserMessageKind};

/// How a prompted run goes, beyond its text.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Keep its approvals pending while no client that answers approvals follows
    /// (`session/prompt {holdApprovals}`).
    pub hold_approvals: bool,
    /// Its own step limit (`session/prompt {maxSteps}`), under the config's `max_steps`.
    pub max_steps: Option<u32>,
    /// A subagent's run: the parent's run that started it, named in its approvals
    /// (`PendingApproval.parentRunId`).
    pub parent_run_id: Option<String>,
    /// A model for this run only (a slash command's `model`), resolved as `session/update`'s;
    /// one that does not resolve is a warning and the session's model runs.
    pub model: Option<String>,
    /// A slash command's `allowed-tools`: the run is offered only these tools.
    pub narrowing: Option<agentd_work::commands::ToolNarrowing>,
    /// Images the prompt carries (`session/prompt {images}`), checked; they join the run's
    /// user message (and the log with it), so a resumed run needs none.
    pub images: Vec<agentd_core::conversation::ToolImage>,
}

impl RunOptions {
    /// What the run's `runStarted` records of these options (None: none was asked for), so
    /// that the run keeps them if it resumes after a restart.
    pub(super) fn recorded(&self) -> Option<RunStartOptions> {
        let recorded = RunStartOptions {
            model: self.model.clone(),
            allowed_tools: (self.narrowing.as_ref()).map(|narrowing| narrowing.names().to_vec()),
            max_steps: self.max_steps,
            hold_approvals: self.hold_approvals,
            parent_run_id: self.parent_run_id.clone(),
        };
        (!recorded.is_default()).then_some(recorded)
    }

    /// The options of a run resumed after a restart: those its `runStarted` recorded (its
    /// model asked again, which may no longer resolve: a warning then; its narrowing applied
    /// again, never widened), holding its approvals, as its client is reconnecting (a
    /// subagent's run holds them as it did: it decides as its parent run would).
    pub(super) fn resumed(recorded: Option<&RunStartOptions>) -> RunOptions {
        let recorded = recorded.cloned().unwrap_or_default();
        RunOptions {
            hold_approvals: recorded.parent_run_id.is_none() || recorded.hold_approvals,
            max_steps: recorded.max_steps,
            parent_run_id: recorded.parent_run_id,
            model: recorded.model,
            narrowing: recorded
                .allowed_tools
                .map(agentd_work::commands::ToolNarrowing::new),
            images: Vec::new(),
        }
    }
}

/// How a run opens: with a prompt, or going on with the run the daemon stopped in.
pub(super) enum Opening {
    Prompt {
        text: String,
        kind: UserMessageKind,
        client_request_id: Option<String>,
    },
    Resume {
        run_id: String,
        plan: agentd_agent::resume::Resumption,
    },
}

/// What preparing a run found; everything in it could fail, before anything was written.
struct Prepared {
    llm: LlmClient,
    context_limits: ContextLimits,
    /// The run's step limit: the agent's, the prompt's and the config's, the smallest.
    max_steps: u32,
    permissions: RunPermissions,
    /// The built-ins and the session's MCP servers, filtered for a subagent.
    tools: RunTools,
    /// Announced as `warning` events once the run has started.
    warnings: Vec<String>,
    /// The session's hooks and extensions, asked at each point of the run.
    interceptors: Interceptors,
    /// Its prices and budgets (`[sessions]`, the agent's definition).
    budget: RunBudget,
}

/// What a run's tools work with, from its session: the session's parts of a `ToolContext`.
struct ToolParts {
    /// The session's cwd, the workspace root.
    workspace: PathBuf,
    session_id: String,
    fetch: FetchClients,
    limits: ToolLimits,
    sandbox: Arc<agentd_policy::process::sandbox::ShellSandbox>,
    background: BackgroundShells,
    /// The run's Read deny rules, which listings and searches apply to every path they find.
    read_filter: ReadFilter,
    /// None for a subagent's run (its children answer to no one), or before the manager exists.
    subagents: Option<Arc<dyn SubagentLauncher>>,
}

impl ToolParts {
    fn into_context(self) -> ToolContext {
        ToolContext {
            workspace: self.workspace,
            // The run gives each batch of calls its cancellation, fetch rules and todo list
            // (`Run::execute_allowed`), and each call its progress sink.
            cancel: CancellationToken::new(),
            progress: ProgressSink::none(),
            fetch: self.fetch,
            fetch_rules: Arc::new(NoFetchRules),
            read_filter: self.read_filter,
            todo: TodoSink::default(),
            sandbox: self.sandbox,
            subagents: self.subagents,
            background: Some(self.background),
            limits: self.limits,
            session_id: Some(self.session_id),
            tool_call_id: None,
            server_requests: None,
        }
    }
}

/// Every part of a run, once it has an id and its `runStarted` is written.
struct RunParts {
    run_id: String,
    prepared: Prepared,
    tools: ToolParts,
    shared: Arc<SessionShared>,
    /// The session's log, or one that also tells a subagent's parent of its approvals.
    log: Arc<dyn RunLog>,
    /// Its cancellation and why it stopped, shared with the `Session` handle.
    active: ActiveRun,
    /// Its checkpoints of the workspace (None: off in the config).
    checkpoints: Option<Arc<agentd_agent::checkpoint::RunCheckpoints>>,
}

impl RunParts {
    fn into_run(self, header: &SessionHeader) -> Run {
        Run {
            session_id: header.id.as_str().into(),
            cache_key: header.cache_key().into(),
            run_id: self.run_id,
            system: header.system_prompt.clone(),
            llm: self.prepared.llm,
            tools: self.prepared.tools,
            tool_context: self.tools.into_context(),
            max_steps: self.prepared.max_steps,
            budget: self.prepared.budget,
            shared: self.shared,
            log: self.log,
            cancel: self.active.cancel,
            stop_reason: self.active.stop_reason,
            permissions: self.prepared.permissions,
            context_limits: self.prepared.context_limits,
            interceptors: self.prepared.interceptors,
            checkpoints: self.checkpoints,
        }
    }
}

impl Actor {
    /// Prepare everything that can fail, persist `runStarted`, then spawn the run, which
    /// persists the user's message; returns once that message is persisted (or the run already
    /// ended). From `runStarted` on, whatever fails or panics ends the run with `runFinished`
    /// (`Run::execute_guarded`), so the session never stays `running` without a run.
    pub(super) async fn start_run(
        &mut self,
        text: String,
        kind: UserMessageKind,
        client_request_id: Option<String>,
        options: RunOptions,
    ) -> Result<String, SessionError> {
        let opening = Opening::Prompt {
            text,
            kind,
            client_request_id,
        };
        self.launch_run(opening, options).await
    }

    /// Start a run that opens with a prompt, or go on with one the daemon stopped in.
    pub(super) async fn launch_run(
        &mut self,
        opening: Opening,
        mut options: RunOptions,
    ) -> Result<String, SessionError> {
        let internal = |err: anyhow::Error| SessionError::Internal(format!("{err:#}"));
        let mut prepared = self.prepare_run(&options).await?;
        let workspace = PathBuf::from(&self.header.cwd);
        // Listings and searches apply the run's Read deny rules to every path they find.
        let read_filter =
            ReadFilter::new(Arc::new(agentd_policy::permission::ReadWithholdRules::new(
                &prepared.permissions.rules,
                &workspace,
                prepared.permissions.home.as_deref(),
            )));
        // The previous run may still be writing its `runFinished`: runs of a session never
        // overlap in the log.
        if let Some(previous) = self.previous_run.take() {
            let _ = previous.await;
        }
        let run_id = match &opening {
            Opening::Prompt { .. } => format!("run_{}", uuid::Uuid::new_v4().simple()),
            Opening::Resume { run_id, .. } => run_id.clone(),
        };
        // Its children answer to whoever answers this run, and hold their approvals as it does.
        let subagents = crate::session::subagent::launcher_for(
            &self.header,
            &self.deps,
            crate::session::subagent::ParentRun {
                run_id: run_id.clone(),
                hold_approvals: options.hold_approvals,
            },
        );
        let tools = ToolParts {
            workspace,
            session_id: self.header.id.clone(),
            fetch: self.deps.fetch.clone(),
            limits: self.deps.tool_limits.clone(),
            sandbox: Arc::clone(&self.deps.sandbox),
            background: BackgroundShells {
                shells: Arc::new(crate::task::BackgroundShellStarter {
                    tasks: Arc::clone(&self.deps.tasks),
                    shells: Arc::clone(&self.deps.shell_tasks),
                }),
                session_id: self.header.id.clone(),
            },
            read_filter,
            subagents,
        };
        let (text, kind, resume) = match opening {
            Opening::Prompt {
                text,
                kind,
                client_request_id,
            } => {
                // A tool call left without a result (its pairing could not be written) is
                // paired before anything follows it: providers reject an unpaired call.
                agentd_agent::pair_orphaned_tool_calls(
                    &*self.log,
                    &self.shared,
                    "interrupted: the result of this tool call was lost (the session log could not be written)",
                    agentd_agent::Pairing::Quiet,
                )
                .await
                .map_err(internal)?;
                self.log
                    .append(Event::RunStarted {
                        run_id: run_id.clone(),
                        prompt: text.clone(),
                        client_request_id,
                        options: options.recorded(),
                    })
                    .await
                    .map_err(internal)?;
                self.mark_running(&run_id);
                (text, kind, None)
            }
            // Its `runStarted` is in the log, its queues as the log left them.
            Opening::Resume { plan, .. } => {
                {
                    let mut state = self.shared.lock();
                    state.run_id = Some(run_id.clone());
                    state.updated_at = Some(SystemTime::now());
                }
                (String::new(), UserMessageKind::Prompt, Some(plan))
            }
        };
        crate::session::resume::mark_active(&self.deps.paths, &self.header.id).await;

        let active = ActiveRun {
            run_id: run_id.clone(),
            cancel: CancellationToken::new(),
            stop_reason: Arc::new(Mutex::new(None)),
            abort: Arc::new(Mutex::new(None)),
            ended: CancellationToken::new(),
        };
        if let Ok(mut slot) = self.active.lock() {
            *slot = Some(active.clone());
        }
        // A subagent's approvals also reach its parent's subscribers.
        let log = crate::session::child_log::run_log_for(&self.header, &self.deps, &self.log).await;
        let start = RunStart {
            text,
            kind,
            images: std::mem::take(&mut options.images),
            warnings: std::mem::take(&mut prepared.warnings),
            resume,
        };
        let checkpoints = self.deps.checkpoints.settings().enabled.then(|| {
            agentd_agent::checkpoint::RunCheckpoints::new(
                Arc::clone(&self.deps.checkpoints),
                PathBuf::from(&self.header.cwd),
            )
        });
        let run = RunParts {
            run_id: run_id.clone(),
            prepared,
            tools,
            shared: self.shared.clone(),
            log,
            active,
            checkpoints,
        }
        .into_run(&self.header);
        self.spawn_run(run, start).await;
        // The run took the held messages into its history: their tasks are owed nothing more.
        for task_id in self.notification_chain.take_held() {
            self.deps.tasks.mark_notified(&task_id).await;
        }
        Ok(run_id)
    }

    /// The model, the configuration, the permissions and the MCP servers of the next run:
    /// whatever of it fails refuses the prompt, before anything is written.
    async fn prepare_run(&mut self, options: &RunOptions) -> Result<Prepared, SessionError> {
        let mut command_warnings = Vec::new();
        let (llm, context_limits) = match options.model.as_deref() {
            None => self.model()?,
            Some(model) => self.model_named(model).or_else(|err| {
                command_warnings.push(format!(
                    "the command's model {model} is not used ({err}); the session's model runs"
                ));
                self.model()
            })?,
        };
        // The run keeps this snapshot for its whole life; a reload applies to the next run.
        let config = self.deps.config.snapshot().map_err(SessionError::Config)?;
        let config = &*config;
        let internal = |err: anyhow::Error| SessionError::Internal(format!("{err:#}"));
        // Both read the workspace's files (on the blocking pool): at the same time.
        let (permissions, servers) = tokio::join!(
            crate::session::run_permissions::run_permissions(
                &self.header,
                &self.shared,
                &self.deps,
                config
            ),
            self.mcp.for_run(&self.header, &self.deps, config),
        );
        let (mut permissions, mut warnings) = permissions.map_err(internal)?;
        warnings.append(&mut command_warnings);
        permissions.hold_approvals = options.hold_approvals;
        permissions.parent_run_id = options.parent_run_id.clone();
        let servers = servers.map_err(internal)?;
        self.mcp
            .register_status_events(&self.deps.mcp_status, &self.log);
        warnings.extend(servers.warnings);
        let tools = RunTools::new(
            self.deps.tools.clone(),
            servers.handles,
            config.mcp.startup_grace,
        )
        .with_filter(crate::session::subagent::run_filter(&self.header))
        .with_source(Some(
            self.deps.extensions.tools_for(self.header.cwd.as_ref()),
        ))
        .with_narrowing(options.narrowing.clone())
        .with_search(
            config.tool_search,
            context_limits.window,
            Arc::clone(&self.shared.loaded_tools),
        );
        let max_steps = [self.header.max_turns, options.max_steps]
            .into_iter()
            .flatten()
            .fold(config.max_steps, u32::min)
            .max(1);
        // Hooks and extensions join the run here.
        let (hooks, hook_warnings) = crate::session::hooks::session_hooks(
            &self.header,
            &self.deps,
            self.session_start.clone(),
        )
        .await;
        warnings.extend(hook_warnings);
        let interceptors = crate::session::hooks::interceptors(hooks)
            .with((self.deps.extensions).interceptor(self.header.cwd.as_ref(), &self.header.id));
        let (budget, budget_warning) = RunBudget::for_run(
            config.session_budgets,
            agentd_agent::budget::AgentBudgets {
                max_usd: self.header.max_budget_usd,
                max_tokens: self.header.max_tokens,
            },
            llm.provider(),
            self.deps.budgets.clone(),
        );
        warnings.extend(budget_warning);
        Ok(Prepared {
            llm,
            context_limits,
            max_steps,
            permissions,
            tools,
            warnings,
            interceptors,
            budget,
        })
    }

    /// Make `run_id` the session's active run, with empty queues.
    fn mark_running(&self, run_id: &str) {
        let mut state = self.shared.lock();
        // Steers and follow-ups still queued belong to an earlier run that ended without
        // delivering them (cancelled or failed): they stayed visible in `session/get` for
        // the user to resend. Left here, a stale steer would make this run skip its tool
        // calls ("skipped: user steered") and a stale follow-up would be sent after this
        // run's answer, so a new run starts with empty queues.
        let stale_steers = std::mem::take(&mut state.steers);
        let stale_follow_ups = std::mem::take(&mut state.follow_ups);
        if !stale_steers.is_empty() || !stale_follow_ups.is_empty() {
            tracing::debug!(
                session = %self.header.id,
                steers = stale_steers.len(),
                follow_ups = stale_follow_ups.len(),
                "dropping messages queued for an earlier run"
            );
        }
        state.run_id = Some(run_id.to_owned());
        state.updated_at = Some(SystemTime::now());
    }

    /// Spawn the run, and wait until its prompt is in the history (or it already ended).
    async fn spawn_run(&mut self, run: Run, start: RunStart) {
        let ended_run_id = run.run_id.clone();
        let active_slot = self.active.clone();
        let shared = self.shared.clone();
        let run_finished = self.run_finished.clone();
        let (begun, begun_rx) = oneshot::channel();
        let active = self.active.lock().ok().and_then(|slot| slot.clone());
        let ended = active
            .as_ref()
            .map(|active| active.ended.clone())
            .unwrap_or_default();
        let paths = self.deps.paths.clone();
        let session_id = self.header.id.clone();
        let handle = self.tasks.spawn(async move {
            // Fires however the task ends: finished, or aborted by a graceful stop.
            let _ended = ended.drop_guard();
            let outcome = run.execute_guarded(start, begun).await;
            tracing::debug!(run = %ended_run_id, status = ?outcome.status, "run finished");
            crate::session::resume::clear_active(&paths, &session_id).await;
            // Clear the active run here, not only in the actor: the actor may be gone.
            {
                let mut state = shared.lock();
                state.run_id = None;
                state.updated_at = Some(SystemTime::now());
            }
            if let Ok(mut slot) = active_slot.lock()
                && slot.as_ref().map(|a| a.run_id.as_str()) == Some(ended_run_id.as_str())
            {
                *slot = None;
            }
            let _ = run_finished.send(());
        });
        if let Some(active) = active
            && let Ok(mut abort) = active.abort.lock()
        {
            *abort = Some(handle.abort_handle());
        }
        self.previous_run = Some(handle);
        let _ = begun_rx.await;
    }
}

#[cfg(test)]
mod tests {
    use super::RunOptions;
    use agentd_work::commands::ToolNarrowing;

    #[test]
    fn a_resumed_run_goes_on_with_the_options_recorded_and_a_top_level_one_holds_its_approvals() {
        assert_eq!(RunOptions::default().recorded(), None, "a plain prompt's");
        let command = RunOptions {
            hold_approvals: false,
            max_steps: Some(4),
            parent_run_id: Some("run_parent".into()),
            model: Some("mock:command-model".into()),
            narrowing: Some(ToolNarrowing::new(vec!["read_file".into()])),
            images: Vec::new(),
        };
        let resumed = RunOptions::resumed(command.recorded().as_ref());
        assert_eq!(resumed.narrowing, command.narrowing);
        assert_eq!(resumed.model, command.model);
        assert_eq!(resumed.max_steps, command.max_steps);
        assert_eq!(resumed.parent_run_id, command.parent_run_id);
        // A subagent's run decides as it did (as its parent run would)...
        assert!(!resumed.hold_approvals);
        // ...a top-level run holds them: its client is reconnecting.
        let top_level = RunOptions {
            parent_run_id: None,
            ..command.clone()
        };
        assert!(RunOptions::resumed(top_level.recorded().as_ref()).hold_approvals);

        // An old log's run: nothing recorded, nothing narrowed, and still held.
        let old = RunOptions::resumed(None);
        assert!(old.hold_approvals);
        assert_eq!(
            (old.narrowing, old.model, old.max_steps),
            (None, None, None)
        );
    }
}
