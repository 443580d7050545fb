//! Conversions between the daemon's own types and the wire types of `protocol` for the
//! methods that list and show them (providers, skills, agents, memory, MCP servers).
//! Conversation types have theirs in `conversation::wire`, a todo list in `tools::todo`, a task
//! record in `task::record`, the permission mode in `permission`: each beside its type, so
//! lower layers never import this one, and a wire change has one place per type to follow.

mod mcp;

pub use mcp::{mcp_configured_server, mcp_problem, mcp_running_server, mcp_status_event};

/// A discovered skill as `skills/list` shows it.
/// A configured provider as `daemon/status` shows it: name, kind, model, base URL, where its
/// key comes from and whether it is there; never the key.
pub fn provider_info(provider: &agentd_llm::ProviderConfig) -> protocol::daemon::ProviderInfo {
    protocol::daemon::ProviderInfo {
        name: provider.name.clone(),
        kind: match provider.kind {
            agentd_llm::ProviderKind::OpenAi => "openai",
            agentd_llm::ProviderKind::Anthropic => "anthropic",
        }
        .to_owned(),
        model: provider.model.clone(),
        base_url: provider.base_url.clone(),
        api_key_env: provider.api_key_env.clone(),
        has_key: provider.api_key.is_some(),
    }
}

pub fn skill_info(skill: &agentd_knowledge::skills::Skill) -> protocol::skills::SkillInfo {
    use protocol::skills::SkillSource as Wire;
    protocol::skills::SkillInfo {
        name: skill.name.clone(),
        description: skill.description.clone(),
        path: skill.path.display().to_string(),
        source: match skill.source {
            agentd_knowledge::skills::SkillSource::Project => Wire::Project,
            agentd_knowledge::skills::SkillSource::User => Wire::User,
        },
    }
}

/// A subagent definition as `agents/list` shows it.
pub fn agent_info(agent: &agentd_work::agents::AgentDefinition) -> protocol::agents::AgentInfo {
    use agentd_work::agents::AgentSource;
    use protocol::agents::AgentSource as Wire;
    protocol::agents::AgentInfo {
        name: agent.name.clone(),
        description: agent.description.clone(),
        source: match agent.source {
            AgentSource::BuiltIn => Wire::BuiltIn,
            AgentSource::Project(_) => Wire::Project,
            AgentSource::User(_) => Wire::User,
        },
        path: agent.source.path().map(|path| path.display().to_string()),
        tools: agent.tools.clone(),
        model: agent.model.clone(),
        read_only: agent.read_only,
        background: agent.background,
        warnings: agent.warnings.clone(),
    }
}

/// `memory/get`'s answer: both stores of a snapshot.
pub fn memory_get(
    snapshot: &agentd_knowledge::memory::MemorySnapshot,
) -> protocol::memory::MemoryGetResult {
    use protocol::memory::{MemoryGetResult, MemoryScope, MemoryStore};
    let scope = |scope: agentd_knowledge::memory::Scope| match scope {
        agentd_knowledge::memory::Scope::User => MemoryScope::User,
        agentd_knowledge::memory::Scope::Project => MemoryScope::Project,
    };
    let store = |view: &agentd_knowledge::memory::StoreView| MemoryStore {
        path: view.path.display().to_string(),
        scope: Some(scope(view.location.scope)),
        project_root: view
            .location
            .project_root
            .as_ref()
            .map(|root| root.display().to_string()),
        in_repository: view.location.in_repository,
        entries: view.entries.as_slice().to_vec(),
        usage_chars: view.entries.usage() as u64,
        limit_chars: view.limit as u64,
        warning: view.warning.clone(),
    };
    MemoryGetResult {
        dir: snapshot.memory.location.dir.display().to_string(),
        scope: scope(snapshot.memory.location.scope),
        enabled: snapshot.enabled,
        memory: store(&snapshot.memory),
        user: store(&snapshot.user),
    }
}
