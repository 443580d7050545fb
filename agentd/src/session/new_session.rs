//! A new session: `session/create` (its cwd, rules, mode and system prompt checked and
//! settled), then adding it: its file (the header, written whole) and its first events, shared
//! with the `task` tool's child sessions.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

use protocol::error::echo;
use protocol::event::Event;
use protocol::session::SessionCreateParams;

use super::events::EventLog;
use super::{Session, SessionError, SessionManager, Slot, evict, system_prompt};
use crate::store::{self, SessionHeader};

impl SessionManager {
    /// Write a new session's file (its header) and load it; `notes` go into its log as
    /// warnings after `sessionCreated`. Not half-created on failure: no slot, no file.
    pub(super) async fn add_session(
        &self,
        header: SessionHeader,
        notes: Vec<String>,
    ) -> Result<Arc<Session>, SessionError> {
        let now = SystemTime::now();
        let id = header.id.clone();
        let path = store::session_path(&self.deps.paths.sessions_dir, &id);
        let line = store::encode(&store::Entry::Header(header.clone()))
            .map_err(|err| SessionError::Internal(err.to_string()))?;
        let mut events = vec![Event::SessionCreated {
            cwd: header.cwd.clone(),
            model: header.model.clone(),
            forked_from: None,
        }];
        events.extend(notes.into_iter().map(|message| Event::Warning { message }));
        // Written whole (the header and the first events) or not at all: a failed create
        // leaves no file; nothing is read back.
        let (log, created) =
            EventLog::create(&id, path, line, events, self.daemon.clone(), &self.tasks)
                .await
                .map_err(|err| {
                    SessionError::Internal(format!(
                        "{err:#}; check free space in the state directory"
                    ))
                })?;
        let session = Arc::new(Session::create(
            header.clone(),
            self.deps.clone(),
            log,
            &self.tasks,
        ));
        let slot = Arc::new(Slot {
            header,
            file_updated_at: Some(now),
            loaded: evict::LoadedCell::with(session.clone()),
            deleted: AtomicBool::new(false),
        });
        self.write_slots().insert(id, slot);
        self.listing.invalidate();
        // Announced once the session can be found.
        if let Err(err) = session.log.publish_created(created) {
            tracing::warn!("cannot announce the new session {}: {err:#}", session.id());
        }
        Ok(session)
    }

    /// Create a session in `params.cwd`.
    pub async fn create(&self, params: SessionCreateParams) -> Result<Arc<Session>, SessionError> {
        let (config, provider) = self.deps.provider(params.model.as_deref())?;
        let cwd = PathBuf::from(&params.cwd);
        if !cwd.is_absolute() {
            return Err(SessionError::InvalidParams(format!(
                "cwd must be an absolute path, got {:?}",
                echo(&params.cwd)
            )));
        }
        let cwd = tokio::fs::canonicalize(&cwd).await.map_err(|err| {
            SessionError::InvalidParams(format!("cwd {} is not usable: {err}", echo(&params.cwd)))
        })?;
        let is_dir = tokio::fs::metadata(&cwd)
            .await
            .is_ok_and(|metadata| metadata.is_dir());
        if !is_dir {
            return Err(SessionError::InvalidParams(format!(
                "cwd {} is not a directory",
                cwd.display()
            )));
        }
        let asked = system_prompt::Asked::of(&params);
        let mcp_servers = params.mcp_servers.unwrap_or_default();
        agentd_work::mcp::config::check_session_param(&mcp_servers)
            .map_err(SessionError::InvalidParams)?;
        let session_rules = params.permission_rules.unwrap_or_default();
        let (_, rule_errors) = agentd_policy::permission::RuleSet::parse(
            &agentd_policy::permission::RuleSource::session(),
            &session_rules.allow,
            &session_rules.ask,
            &session_rules.deny,
        );
        if !rule_errors.is_empty() {
            let errors: Vec<String> = rule_errors.iter().map(ToString::to_string).collect();
            return Err(SessionError::InvalidParams(format!(
                "bad permission rules: {}",
                errors.join("; ")
            )));
        }
        // A project mode looser than the user's, not used because the project is untrusted:
        // said in the new session's log, so whoever watches it knows why.
        let (permission_mode, ignored_mode) = match params.permission_mode {
            Some(mode) => (mode, None),
            None => self.default_mode(&cwd).await?,
        };
        let now = SystemTime::now();
        let created_at = humantime::format_rfc3339_seconds(now).to_string();
        let date = created_at.get(..10).unwrap_or(&created_at).to_owned();
        let prompt_cwd = cwd.clone();
        let sources = system_prompt::PromptSources {
            memory: self.deps.memory.clone(),
            user_skills: self.deps.paths.skills_dir.clone(),
            user_agents: self.deps.paths.agents_dir.clone(),
            agent_type: params.agent_type.clone(),
            user_notes: self.deps.paths.user_notes.clone(),
            append: params.append_system_prompt.clone(),
        };
        let frozen =
            tokio::task::spawn_blocking(move || system_prompt::build(&prompt_cwd, &date, &sources))
                .await
                .map_err(|err| SessionError::Internal(err.to_string()))?
                .map_err(SessionError::InvalidParams)?;
        let (permission_mode, provider, agent_notes) =
            frozen.agent_settings(permission_mode, provider, &config, &asked);
        provider
            .require_key()
            .map_err(|err| SessionError::Config(err.to_string()))?;
        let notes = ignored_mode.into_iter().chain(agent_notes);
        let id = format!("ses_{}", uuid::Uuid::new_v4().simple());
        let header = SessionHeader {
            version: store::FORMAT_VERSION,
            id: id.clone(),
            created_at,
            cwd: cwd.display().to_string(),
            provider: provider.name.clone(),
            model: provider.model.clone(),
            title: params.title.filter(|t| !t.trim().is_empty()),
            permission_mode,
            permission_rules: session_rules,
            mcp_servers,
            child_mcp: frozen.child_mcp,
            system_prompt: agentd_core::interned::SYSTEM_PROMPTS.intern(&frozen.system_prompt),
            agent: None,
            parent_session_id: None,
            agent_type: params.agent_type,
            task_id: None,
            tool_filter: frozen.tool_filter,
            max_turns: frozen.max_turns,
            max_budget_usd: frozen.max_budget_usd,
            max_tokens: frozen.max_tokens,
            forked_from: None,
            prompt_cache_key: None,
        };
        self.add_session(header, notes.collect()).await
    }

    /// The permission mode of a new session in `cwd` that names none: the project's
    /// (`.agents/settings.json`, …) when it is trusted or not looser than the user's, else the
    /// user's; the note says why a looser project mode was not used.
    pub async fn default_mode(
        &self,
        cwd: &std::path::Path,
    ) -> Result<(protocol::approval::PermissionMode, Option<String>), SessionError> {
        let config = self.deps.config.snapshot().map_err(SessionError::Config)?;
        let settings_cwd = cwd.to_path_buf();
        let trust = self.deps.trust.clone();
        let (project, project_trust) = tokio::task::spawn_blocking(move || {
            let project_trust = trust.project(&agentd_policy::trust::project_root(&settings_cwd));
            (
                agentd_policy::permission::load_project_settings(&settings_cwd, &project_trust),
                project_trust,
            )
        })
        .await
        .map_err(|err| SessionError::Internal(err.to_string()))?;
        let user_mode = config.permissions.default_mode;
        let Some(settings) = project.ok() else {
            return Ok((user_mode.into(), None));
        };
        Ok(match (settings.default_mode, settings.mode_source) {
            (Some(mode), Some((file, verdict)))
                if verdict != agentd_policy::trust::FileTrust::Pinned
                    && mode.loosens(user_mode) =>
            {
                (
                    user_mode.into(),
                    Some(format!(
                        "{}, so its permission mode {mode}, looser than yours ({user_mode}), is \
                         not used. To use it, {}",
                        project_trust.why_withheld(&file, verdict),
                        project_trust.how_to_trust()
                    )),
                )
            }
            (Some(mode), _) => (mode.into(), None),
            (None, _) => (user_mode.into(), None),
        })
    }
}
