//! The system prompt a new session freezes in its header: the normal one (instructions,
//! environment, project notes, memory, skills and agents catalogues), or, for a session run as
//! a subagent (`session/create {agentType}`), the definition's own prompt and tool filter.

use std::path::{Path, PathBuf};

use protocol::approval::PermissionMode;

use agentd_work::agents::ToolFilter;

/// What `session/create` freezes: the prompt, and the tool filter of a subagent session.
pub struct FrozenPrompt {
    pub system_prompt: String,
    pub tool_filter: Option<ToolFilter>,
    /// The permission mode the agent's definition asks for (ours, already mapped).
    pub agent_mode: Option<String>,
    /// The model the agent's definition asks for (None: `inherit` or not said).
    pub agent_model: Option<String>,
    /// The definition's `maxTurns`.
    pub max_turns: Option<u32>,
    /// The definition's `maxBudgetUsd` (a session run as an agent).
    pub max_budget_usd: Option<f64>,
    /// The definition's `maxTokens` (a session run as an agent).
    pub max_tokens: Option<u64>,
    /// The definition's `mcpServers` (a session run as an agent): those servers instead.
    pub child_mcp: Option<Box<crate::store::ChildMcpServers>>,
}

/// Where the user's own definitions are, and what the new session is run as.
pub struct PromptSources {
    pub memory: std::sync::Arc<agentd_knowledge::memory::MemoryStores>,
    pub user_skills: PathBuf,
    pub user_agents: PathBuf,
    /// `session/create {agentType}` (None: a normal top-level session).
    pub agent_type: Option<String>,
    /// The user's own notes file (`Paths::user_notes`).
    pub user_notes: PathBuf,
    /// `session/create {appendSystemPrompt}`: appended last, to either kind of prompt.
    pub append: Option<String>,
}

/// What the client of `session/create` chose itself (it wins over the agent's definition).
pub struct Asked {
    pub agent_type: Option<String>,
    /// A permission mode was given.
    pub mode: bool,
    /// A model was given.
    pub model: bool,
}

impl Asked {
    pub fn of(params: &protocol::session::SessionCreateParams) -> Self {
        Self {
            agent_type: params.agent_type.clone(),
            mode: params.permission_mode.is_some(),
            model: params.model.is_some(),
        }
    }
}

/// The frozen prompt of a session in `cwd` created on `date`; the error (an unknown agent
/// type, listing the available ones) is for the client. Blocking: reads files.
pub fn build(cwd: &Path, date: &str, sources: &PromptSources) -> Result<FrozenPrompt, String> {
    let skills = agentd_knowledge::skills::discover(
        cwd,
        Some(&sources.user_skills),
        &agentd_knowledge::skills::SkillLimits::default(),
    );
    for warning in &skills.warnings {
        tracing::info!("{warning}");
    }
    let agents = agentd_work::agents::discover(cwd, Some(&sources.user_agents));
    for agent in &agents.agents {
        for warning in &agent.warnings {
            tracing::info!("agent definition {}: {warning}", agent.name);
        }
    }
    for problem in &agents.problems {
        tracing::info!(
            "agent definition {} is not used: {}",
            problem.path.display(),
            problem.reason
        );
    }
    if let Some(agent_type) = &sources.agent_type {
        // A subagent's prompt is its definition's with the environment and notes: no memory,
        // no agents catalogue.
        let definition = agents
            .get(agent_type)
            .ok_or_else(|| agents.unknown(agent_type))?;
        let context = agentd_agent::prompt::context_sections(cwd, date, Some(&sources.user_notes));
        let mut system_prompt =
            agentd_work::agents::child_system_prompt(definition, &context, &skills);
        if let Some(append) = &sources.append {
            system_prompt.push_str(&agentd_agent::prompt::appended_section(append));
        }
        return Ok(FrozenPrompt {
            system_prompt,
            tool_filter: Some(ToolFilter::of(definition)),
            agent_mode: definition.permission_mode.clone(),
            agent_model: definition.model.clone(),
            max_turns: definition.max_turns,
            max_budget_usd: definition.max_budget_usd,
            max_tokens: definition.max_tokens,
            child_mcp: crate::store::ChildMcpServers::of(definition).map(Box::new),
        });
    }
    let mut prompt = agentd_agent::prompt::build(cwd, date, Some(&sources.user_notes));
    // The memory snapshot is frozen with the rest: writes show in later sessions.
    let snapshot = sources.memory.snapshot(cwd);
    prompt.push_str(&agentd_agent::prompt::memory_section(&snapshot));
    prompt.push_str(&agentd_knowledge::skills::skills_section(&skills.skills));
    prompt.push_str(&agentd_agent::prompt::agents_section(&agents.agents));
    if let Some(append) = &sources.append {
        prompt.push_str(&agentd_agent::prompt::appended_section(append));
    }
    Ok(FrozenPrompt {
        system_prompt: prompt,
        tool_filter: None,
        agent_mode: None,
        agent_model: None,
        max_turns: None,
        max_budget_usd: None,
        max_tokens: None,
        child_mcp: None,
    })
}

impl FrozenPrompt {
    /// The mode and provider of the new session once the agent's definition is heard
    /// (`mode_for`, `provider_for`), with the notes for its log.
    pub fn agent_settings(
        &self,
        mode: PermissionMode,
        provider: agentd_llm::ProviderConfig,
        config: &crate::config::Config,
        asked: &Asked,
    ) -> (PermissionMode, agentd_llm::ProviderConfig, Vec<String>) {
        let agent_type = asked.agent_type.as_deref();
        let (mode, mode_note) = self.mode_for(mode, asked.mode, agent_type);
        let (provider, model_note) = self.provider_for(provider, config, asked.model, agent_type);
        (
            mode,
            provider,
            mode_note.into_iter().chain(model_note).collect(),
        )
    }

    /// The session's mode once the agent's definition is heard: a mode the client gave wins;
    /// otherwise the definition's applies when it is not looser than `mode` (a definition file,
    /// maybe a project's, may tighten a session, never loosen it). The note says why a looser
    /// one is not used, for the session's log.
    pub fn mode_for(
        &self,
        mode: PermissionMode,
        explicit: bool,
        agent_type: Option<&str>,
    ) -> (PermissionMode, Option<String>) {
        if explicit {
            return (mode, None);
        }
        match agentd_work::agents::mode_within(mode, self.agent_mode.as_deref()) {
            Ok(mode) => (mode, None),
            Err(wanted_mode) => {
                let note = format!(
                    "agent `{}` asks for permission mode {wanted_mode}, looser than the session's ({}); it is not used: choose it with the session's permissionMode",
                    agent_type.unwrap_or_default(),
                    agentd_policy::permission::PermissionMode::from(mode)
                );
                (mode, Some(note))
            }
        }
    }

    /// The provider of a session run as an agent: the definition's `model` when the client
    /// gave none and it names a configured provider (`provider` or `provider:model`); a bare
    /// name like Claude Code's `sonnet` is not sent to the default provider as a model id (it
    /// would fail every request), the note says the session keeps `provider`.
    pub fn provider_for(
        &self,
        provider: agentd_llm::ProviderConfig,
        config: &crate::config::Config,
        explicit: bool,
        agent_type: Option<&str>,
    ) -> (agentd_llm::ProviderConfig, Option<String>) {
        let Some(wanted) = self.agent_model.as_deref().filter(|_| !explicit) else {
            return (provider, None);
        };
        let provider_name = wanted.split_once(':').map_or(wanted, |(name, _)| name);
        if config.providers.contains_key(provider_name)
            && let Ok(chosen) = config.resolve_provider(Some(wanted))
        {
            return (chosen, None);
        }
        let note = format!(
            "agent `{}` asks for model `{wanted}`, which names no configured provider (`provider` or `provider:model`); the session uses {} of {}",
            agent_type.unwrap_or_default(),
            provider.model,
            provider.name
        );
        (provider, Some(note))
    }
}
