//! A session's hooks (`agentd_agent::hooks`): loaded for each run and each session-level point
//! (the user's `[hooks]`, the trusted project's pinned settings files, a subagent's definition),
//! and the points the session itself raises: SessionStart (its context is held for the first
//! prompt), SessionEnd and SubagentStart, each run off the actor's task so no hook stalls it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentd_agent::hooks::{AgentHooks, HookEnv, HookEvent, HookListing, Hooks, PendingStart};
use agentd_agent::intercept::{At, Interceptors, Point};
use agentd_agent::sink::RunLog;
use tokio_util::sync::CancellationToken;

use super::SessionDeps;
use crate::store::SessionHeader;

/// The hooks of a run (or a session-level point) of the session `header`, and the warnings of
/// what did not load. Reads files on the blocking pool.
pub(super) async fn session_hooks(
    header: &SessionHeader,
    deps: &SessionDeps,
    start: PendingStart,
) -> (Hooks, Vec<String>) {
    let user = deps
        .config
        .snapshot()
        .map(|config| (config.hooks.clone(), config.hook_warnings.clone()))
        .unwrap_or_default();
    let cwd = PathBuf::from(&header.cwd);
    let trust = Arc::clone(&deps.trust);
    let agents_dir = deps.paths.agents_dir.clone();
    // A child session's definition, for its own hooks.
    let agent_type = header
        .agent_type
        .clone()
        .filter(|_| header.parent_session_id.is_some() || header.task_id.is_some());
    let loading_cwd = cwd.clone();
    let (user_hooks, mut warnings) = user;
    let loaded = tokio::task::spawn_blocking(move || {
        let root = agentd_policy::trust::project_root(&loading_cwd);
        let project = trust.project(&root);
        let definition = agent_type.and_then(|name| {
            agentd_work::agents::discover(&loading_cwd, Some(&agents_dir))
                .get(&name)
                .cloned()
        });
        let agent = definition.as_ref().and_then(|definition| {
            Some(AgentHooks {
                name: &definition.name,
                path: definition.source.path(),
                withheld: withheld(definition, &project),
                raw: definition.hooks.as_deref()?,
            })
        });
        let (hooks, warnings) =
            agentd_agent::hooks::load(&user_hooks, &loading_cwd, &project, agent);
        (hooks, warnings, root)
    })
    .await;
    let (hooks, more, root) = match loaded {
        Ok(loaded) => loaded,
        Err(error) => (
            Vec::new(),
            vec![format!("hooks not loaded: {error}")],
            cwd.clone(),
        ),
    };
    warnings.extend(more);
    let env = HookEnv {
        session_id: header.id.clone(),
        transcript_path: crate::store::session_path(&deps.paths.sessions_dir, &header.id),
        cwd,
        project_dir: root,
        permission_mode: claude_code_mode(header.permission_mode.into()).to_owned(),
        sandbox: Arc::clone(&deps.sandbox),
    };
    (Hooks::new(hooks, env, start), warnings)
}

/// Why the hooks of `definition` do not run, if they do not: a project definition's run only
/// while the project is trusted with the very content they were read from.
fn withheld(
    definition: &agentd_work::agents::AgentDefinition,
    project: &agentd_policy::trust::ProjectTrust,
) -> Option<String> {
    let agentd_work::agents::AgentSource::Project(path) = &definition.source else {
        return None;
    };
    let verdict = match &definition.hooks_digest {
        Some(digest) => project.verdict_of_digest(path, digest),
        None => agentd_policy::trust::FileTrust::New,
    };
    (verdict != agentd_policy::trust::FileTrust::Pinned).then(|| {
        format!(
            "{}; {}",
            project.why_withheld(path, verdict),
            project.how_to_trust()
        )
    })
}

/// The session's hooks as the run's interceptors (none: empty, so the run pays nothing).
pub(super) fn interceptors(hooks: Hooks) -> Interceptors {
    if hooks.is_empty() {
        Interceptors::default()
    } else {
        Interceptors::new(vec![Arc::new(hooks)])
    }
}

/// Claude Code's name of a mode (its hooks read `permission_mode`).
fn claude_code_mode(mode: agentd_policy::permission::PermissionMode) -> &'static str {
    match mode {
        agentd_policy::permission::PermissionMode::Bypass => "bypassPermissions",
        other => other.as_str(),
    }
}

/// Runs SessionStart hooks (`source`: "startup" or "resume") in a task of `tasks`; their
/// context is held in `start` for the session's first prompt, which waits for it (each hook
/// bounded by its timeout). Without a SessionStart hook the task only reads the settings.
/// `closing` (the session closing) ends the task, killing a hook still running.
pub(super) fn session_start(
    header: SessionHeader,
    deps: Arc<SessionDeps>,
    log: Arc<dyn RunLog>,
    start: PendingStart,
    source: &'static str,
    tasks: &tokio_util::task::TaskTracker,
    closing: CancellationToken,
) {
    let held = start.clone();
    let hooks_of_the_start = async move {
        let (hooks, _) = session_hooks(&header, &deps, PendingStart::default()).await;
        if !hooks.has(HookEvent::SessionStart) {
            return Vec::new();
        }
        let at = At {
            run_id: None,
            log: &*log,
        };
        let outcome = hooks.ask(at, &Point::SessionStart { source }).await;
        for message in outcome.warnings {
            let _ = log
                .append(protocol::event::Event::Warning { message })
                .await;
        }
        outcome.context
    };
    // Boxed: the task's cell lives until the first prompt takes its context, and is as big
    // as the future it was spawned with; the boxed future is freed as soon as it ends.
    let running = tasks.spawn(Box::pin(async move {
        tokio::select! {
            context = hooks_of_the_start => context,
            () = closing.cancelled() => Vec::new(),
        }
    }));
    held.hold(Box::pin(async move { running.await.unwrap_or_default() }));
}

/// Runs the hooks of a session-level `point` (SessionEnd, SubagentStart) of `header` and waits
/// for them, each bounded by its timeout; their warnings go to `log`. Returns the context they
/// added (SubagentStart's goes to the child). Call it off the actor.
pub(super) async fn at_session_point(
    header: &SessionHeader,
    deps: &SessionDeps,
    log: &dyn RunLog,
    point: Point<'_>,
) -> Vec<String> {
    let (hooks, _) = session_hooks(header, deps, PendingStart::default()).await;
    let Some(event) = HookEvent::of(&point) else {
        return Vec::new();
    };
    if !hooks.has(event) {
        return Vec::new();
    }
    let at = At { run_id: None, log };
    let outcome = hooks.ask(at, &point).await;
    for message in outcome.warnings {
        let _ = log
            .append(protocol::event::Event::Warning { message })
            .await;
    }
    outcome.context
}

/// What hooks are loaded for a session in `cwd`, from where, trusted or not: the user's
/// `[hooks]` and every project settings file's (the `/hooks` command lists it). Reads files on
/// the blocking pool.
pub async fn describe(deps: &SessionDeps, cwd: &Path) -> Vec<HookListing> {
    let user = deps
        .config
        .snapshot()
        .map(|config| config.hooks.clone())
        .unwrap_or_default();
    let cwd = cwd.to_path_buf();
    let trust = Arc::clone(&deps.trust);
    tokio::task::spawn_blocking(move || {
        let project = trust.project(&agentd_policy::trust::project_root(&cwd));
        agentd_agent::hooks::describe(&user, &cwd, &project)
    })
    .await
    .unwrap_or_default()
}
