//! config.toml as written (the `File…` shapes, unknown fields refused) and how each section
//! is checked and applied to the `Config` that `load` assembles: bounds of every duration and
//! size, the user's permission rules, memory limits and MCP settings, each error naming the file.

use super::*;
use agentd_llm::FilePrices;

/// config.toml as written; unknown fields are errors so typos are reported.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    default_provider: Option<String>,
    max_steps: Option<u32>,
    tool_output_max_chars: Option<usize>,
    #[serde(default)]
    providers: BTreeMap<String, FileProvider>,
    permissions: Option<TomlPermissions>,
    sessions: Option<FileSessions>,
    memory: Option<FileMemory>,
    sandbox: Option<agentd_policy::process::sandbox::SandboxSection>,
    shell: Option<agentd_policy::process::shell_program::ShellSection>,
    context: Option<FileContext>,
    mcp: Option<agentd_work::mcp::config::McpSection>,
    tasks: Option<crate::task::TasksSection>,
    checkpoints: Option<super::checkpoints::CheckpointsSection>,
    tools: Option<super::tools::ToolsSection>,
    extensions: Option<FileExtensions>,
    llm: Option<FileLlm>,
    /// Kept as values so one bad entry is a problem of that server, not of the whole file.
    #[serde(default)]
    mcp_servers: BTreeMap<String, toml::Value>,
    /// Claude Code's hooks shape; checked by `agentd_agent::hooks::parse_section`.
    hooks: Option<BTreeMap<toml::Spanned<String>, toml::Value>>,
}

/// `[llm]` as written: what holds for every provider unless its own section says otherwise.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLlm {
    stream_idle_secs: Option<u64>,
}

/// `[extensions]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileExtensions {
    call_timeout_ms: Option<u64>,
}

/// Longest `[extensions] call_timeout_ms`: a run waits this long at most for one extension.
const MAX_EXTENSION_CALL_TIMEOUT_MS: u64 = 10 * 60 * 1000;

/// `[memory]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMemory {
    memory_chars: Option<u64>,
    user_chars: Option<u64>,
    /// false: sessions have no memory.
    enabled: Option<bool>,
    /// `project` (the default) or `user`: whose `MEMORY.md` is when the project keeps no
    /// `.agents/memory/`.
    scope: Option<String>,
}

/// `[context]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileContext {
    soft_limit_percent: Option<u8>,
    hard_limit_percent: Option<u8>,
}

/// `[sessions]` as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSessions {
    idle_unload_secs: Option<u64>,
    resume_after_restart: Option<bool>,
    max_cost_usd: Option<f64>,
    max_tokens: Option<u64>,
    max_run_secs: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileProvider {
    kind: FileProviderKind,
    base_url: Option<String>,
    api_key: Option<String>,
    api_key_env: Option<String>,
    model: String,
    context_window: Option<u64>,
    max_output_tokens: Option<u64>,
    reasoning_effort: Option<String>,
    max_retries: Option<u32>,
    retry_base_delay_ms: Option<u64>,
    retry_max_delay_ms: Option<u64>,
    stream_idle_timeout_secs: Option<u64>,
    prices: Option<FilePrices>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum FileProviderKind {
    #[serde(alias = "openai-compatible", alias = "openai_compatible")]
    OpenAi,
    Anthropic,
}

pub(super) fn apply_file(
    config: &mut Config,
    path: &Path,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), ConfigError> {
    let file: FileConfig = toml::from_str(text).map_err(|error| {
        let (line, column) = error
            .span()
            .map(|span| line_and_column(text, span.start))
            .unwrap_or((1, 1));
        ConfigError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            reason: error.message().trim().to_owned(),
        }
    })?;
    let invalid = |reason: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    if let Some(max_steps) = file.max_steps {
        if max_steps == 0 {
            return Err(invalid("max_steps must be at least 1".to_owned()));
        }
        config.max_steps = max_steps;
    }
    if let Some(chars) = file.tool_output_max_chars {
        config.tool_output_max_chars = chars;
    }
    if let Some(permissions) = &file.permissions {
        config.permissions = parse_permissions(path, text, permissions)?;
    }
    if let Some(resume) = file
        .sessions
        .as_ref()
        .and_then(|sessions| sessions.resume_after_restart)
    {
        config.resume_after_restart = resume;
    }
    let sessions = file.sessions.unwrap_or_default();
    config.session_budgets = session_budgets(path, &sessions)?;
    let idle_unload_secs = bounded(
        path,
        "sessions.idle_unload_secs",
        sessions.idle_unload_secs,
        DEFAULT_SESSION_IDLE_UNLOAD_SECS,
        MAX_SESSION_IDLE_UNLOAD_SECS,
        "seconds",
    )?;
    if idle_unload_secs == 0 {
        return Err(invalid(
            "sessions.idle_unload_secs must be at least 1".to_owned(),
        ));
    }
    config.session_idle_unload = std::time::Duration::from_secs(idle_unload_secs);
    if let Some(memory) = &file.memory {
        config.memory = memory_settings(path, memory)?;
    }
    config.windows_shell = file
        .shell
        .and_then(|shell| shell.windows)
        .unwrap_or_default();
    if let Some(sandbox) = file.sandbox {
        config.sandbox = sandbox
            .resolve(env("HOME").map(PathBuf::from))
            .map_err(invalid)?;
    }
    if let Some(context) = &file.context {
        let soft = context
            .soft_limit_percent
            .unwrap_or(DEFAULT_SOFT_LIMIT_PERCENT);
        let hard = context
            .hard_limit_percent
            .unwrap_or(DEFAULT_HARD_LIMIT_PERCENT);
        if !(1..=100).contains(&soft) || !(1..=100).contains(&hard) || soft > hard {
            return Err(invalid(format!(
                "context.soft_limit_percent = {soft} and context.hard_limit_percent = {hard}: each must be between 1 and 100, the soft limit at most the hard one"
            )));
        }
        config.context = ContextConfig {
            soft_limit_percent: soft,
            hard_limit_percent: hard,
        };
    }
    if let Some(mcp) = &file.mcp {
        mcp_settings(path, mcp, &mut config.mcp)?;
    }
    config.mcp.servers = agentd_work::mcp::config::McpEntries::from_toml(path, file.mcp_servers);
    if let Some(extensions) = &file.extensions {
        let default = DEFAULT_EXTENSION_CALL_TIMEOUT.as_millis() as u64;
        let ms = bounded(
            path,
            "extensions.call_timeout_ms",
            extensions.call_timeout_ms,
            default,
            MAX_EXTENSION_CALL_TIMEOUT_MS,
            "milliseconds",
        )?;
        if ms == 0 {
            return Err(invalid(
                "extensions.call_timeout_ms must be at least 1".to_owned(),
            ));
        }
        config.extension_call_timeout = std::time::Duration::from_millis(ms);
    }
    if let Some(tasks) = &file.tasks {
        config.tasks = tasks.resolve().map_err(invalid)?;
    }
    if let Some(checkpoints) = &file.checkpoints {
        config.checkpoints = checkpoints.resolve(path)?;
    }
    if let Some(tools) = &file.tools {
        config.tool_search = tools.resolve(path)?;
    }
    if let Some(hooks) = file.hooks {
        hooks_section(config, path, text, hooks)?;
    }
    if let Some(llm) = &file.llm {
        let secs = bounded(
            path,
            "llm.stream_idle_secs",
            llm.stream_idle_secs,
            DEFAULT_STREAM_IDLE_TIMEOUT_SECS,
            MAX_STREAM_IDLE_TIMEOUT_SECS,
            "seconds",
        )?;
        if secs == 0 {
            return Err(invalid(
                "llm.stream_idle_secs must be at least 1".to_owned(),
            ));
        }
        config.stream_idle_secs = secs;
    }
    for (name, provider) in file.providers {
        let (kind, default_url, default_key_env) = match provider.kind {
            FileProviderKind::OpenAi => (
                ProviderKind::OpenAi,
                OPENAI_DEFAULT_BASE_URL,
                "OPENAI_API_KEY",
            ),
            FileProviderKind::Anthropic => (
                ProviderKind::Anthropic,
                ANTHROPIC_DEFAULT_BASE_URL,
                "ANTHROPIC_API_KEY",
            ),
        };
        if provider.model.trim().is_empty() {
            return Err(invalid(format!("providers.{name}.model is empty")));
        }
        let retry_base_delay_ms = bounded(
            path,
            &format!("providers.{name}.retry_base_delay_ms"),
            provider.retry_base_delay_ms,
            DEFAULT_RETRY_BASE_DELAY_MS,
            MAX_RETRY_DELAY_MS,
            "milliseconds",
        )?;
        let retry_max_delay_ms = bounded(
            path,
            &format!("providers.{name}.retry_max_delay_ms"),
            provider.retry_max_delay_ms,
            DEFAULT_RETRY_MAX_DELAY_MS,
            MAX_RETRY_DELAY_MS,
            "milliseconds",
        )?;
        let stream_idle_timeout_secs = bounded(
            path,
            &format!("providers.{name}.stream_idle_timeout_secs"),
            provider.stream_idle_timeout_secs,
            config.stream_idle_secs,
            MAX_STREAM_IDLE_TIMEOUT_SECS,
            "seconds",
        )?;
        let prices = match &provider.prices {
            Some(prices) => Some(
                prices
                    .check(&format!("providers.{name}.prices"))
                    .map_err(invalid)?,
            ),
            None => None,
        };
        let base_url = provider
            .base_url
            .unwrap_or_else(|| default_url.to_owned())
            .trim_end_matches('/')
            .to_owned();
        // The provider's own endpoint always needs a key: default to its usual variable. A
        // custom endpoint (Ollama, vLLM) may need none.
        let api_key_env = provider.api_key_env.or_else(|| {
            (provider.api_key.is_none() && base_url == default_url)
                .then(|| default_key_env.to_owned())
        });
        let api_key = provider
            .api_key
            .or_else(|| api_key_env.as_deref().and_then(env));
        config.providers.insert(
            name.clone(),
            ProviderConfig {
                name,
                kind,
                base_url,
                api_key,
                api_key_env,
                model: provider.model,
                context_window: provider.context_window,
                max_output_tokens: provider.max_output_tokens,
                reasoning_effort: provider.reasoning_effort,
                max_retries: provider.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
                retry_base_delay_ms,
                retry_max_delay_ms,
                stream_idle_timeout_secs,
                prices,
            },
        );
    }
    if let Some(default) = file.default_provider {
        if !config.providers.contains_key(&default) {
            return Err(invalid(format!(
                "default_provider {default:?} is not one of [providers.*] ({})",
                config.provider_names()
            )));
        }
        config.default_provider = Some(default);
    }
    Ok(())
}

/// The user layer of permissions; every bad rule (and a bad mode) is reported, with its line.
fn parse_permissions(
    path: &Path,
    text: &str,
    permissions: &TomlPermissions,
) -> Result<PermissionsConfig, ConfigError> {
    let source = RuleSource::file(RuleLayer::User, path);
    let (rules, mut errors) = permissions.rules(&source, text);
    let mut default_mode = PermissionMode::Default;
    if let Some(mode) = &permissions.default_mode {
        match mode.get_ref().parse::<PermissionMode>() {
            Ok(mode) => default_mode = mode,
            Err(message) => errors.push(RuleError {
                source: source.clone(),
                location: "permissions.default_mode".to_owned(),
                line_col: Some(line_and_column(text, mode.span().start)),
                rule: mode.get_ref().clone(),
                message,
            }),
        }
    }
    if !errors.is_empty() {
        return Err(ConfigError::Permissions { errors });
    }
    let approval_timeout_secs = bounded(
        path,
        "permissions.approval_timeout_secs",
        permissions
            .approval_timeout_secs
            .as_ref()
            .map(|timeout| *timeout.get_ref()),
        DEFAULT_APPROVAL_TIMEOUT_SECS,
        MAX_APPROVAL_TIMEOUT_SECS,
        "seconds",
    )?;
    if approval_timeout_secs == 0 {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            reason: "permissions.approval_timeout_secs must be at least 1".to_owned(),
        });
    }
    Ok(PermissionsConfig {
        rules,
        default_mode,
        approval_timeout_secs,
    })
}

/// `[sessions]`'s budgets: each, when set, above zero (and the time within `MAX_RUN_SECS`).
fn session_budgets(
    path: &Path,
    sessions: &FileSessions,
) -> Result<agentd_agent::budget::SessionBudgets, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    if let Some(usd) = sessions.max_cost_usd
        && !(usd.is_finite() && usd > 0.0)
    {
        return Err(invalid(format!(
            "sessions.max_cost_usd = {usd} is not a budget: give US dollars above 0, or remove it for no cost budget"
        )));
    }
    for (key, value) in [
        ("max_tokens", sessions.max_tokens),
        ("max_run_secs", sessions.max_run_secs),
    ] {
        if value == Some(0) {
            return Err(invalid(format!(
                "sessions.{key} must be at least 1, or be removed for no such budget"
            )));
        }
    }
    if let Some(secs) = sessions.max_run_secs
        && secs > MAX_RUN_SECS
    {
        return Err(invalid(format!(
            "sessions.max_run_secs = {secs} is too large (at most {MAX_RUN_SECS} seconds); set a smaller value, or remove it for no time budget"
        )));
    }
    Ok(agentd_agent::budget::SessionBudgets {
        max_cost_usd: sessions.max_cost_usd,
        max_tokens: sessions.max_tokens,
        max_run_secs: sessions.max_run_secs,
    })
}

/// A duration setting: `value` or `default`, refused when above `max` (in `unit`).
pub(super) fn bounded(
    path: &Path,
    key: &str,
    value: Option<u64>,
    default: u64,
    max: u64,
    unit: &str,
) -> Result<u64, ConfigError> {
    let value = value.unwrap_or(default);
    if value > max {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            reason: format!(
                "{key} = {value} is too large (at most {max} {unit}); set a smaller value, or remove it for the default ({default} {unit})"
            ),
        });
    }
    Ok(value)
}

/// `[memory]`: whether sessions have memory, whose `MEMORY.md` is (`scope`), and the limits.
fn memory_settings(
    path: &Path,
    memory: &FileMemory,
) -> Result<agentd_knowledge::memory::MemorySettings, ConfigError> {
    use agentd_knowledge::memory::Scope;
    let scope = match memory.scope.as_deref() {
        None | Some("project") => Scope::Project,
        Some("user") => Scope::User,
        Some(other) => {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                reason: format!(
                    "memory.scope = {other:?} is not a scope; use \"project\" (each project root its own MEMORY.md, the default) or \"user\" (one MEMORY.md for every project)"
                ),
            });
        }
    };
    Ok(agentd_knowledge::memory::MemorySettings {
        limits: memory_limits(path, memory)?,
        disabled: memory.enabled == Some(false),
        scope,
    })
}

/// `[memory]` limits: each at least 1 and at most `memory::MAX_STORE_CHARS`.
fn memory_limits(
    path: &Path,
    memory: &FileMemory,
) -> Result<agentd_knowledge::memory::MemoryLimits, ConfigError> {
    use agentd_knowledge::memory::{DEFAULT_MEMORY_CHARS, DEFAULT_USER_CHARS, MAX_STORE_CHARS};
    let limit = |key: &str, value: Option<u64>, default: usize| {
        let chars = bounded(
            path,
            key,
            value,
            default as u64,
            MAX_STORE_CHARS as u64,
            "characters",
        )?;
        if chars == 0 {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                reason: format!("{key} must be at least 1"),
            });
        }
        Ok(usize::try_from(chars).unwrap_or(MAX_STORE_CHARS))
    };
    Ok(agentd_knowledge::memory::MemoryLimits {
        memory_chars: limit(
            "memory.memory_chars",
            memory.memory_chars,
            DEFAULT_MEMORY_CHARS,
        )?,
        user_chars: limit("memory.user_chars", memory.user_chars, DEFAULT_USER_CHARS)?,
    })
}

/// `[mcp]`: the idle stop (at least 1 s) and the startup grace, each bounded; the variables a
/// project's `.mcp.json` may expand; the project servers that run unconfined.
fn mcp_settings(
    path: &Path,
    mcp: &agentd_work::mcp::config::McpSection,
    settings: &mut agentd_work::mcp::config::McpSettings,
) -> Result<(), ConfigError> {
    use agentd_work::mcp::config::{MAX_IDLE_STOP_SECS, MAX_STARTUP_GRACE_SECS};
    let idle_stop_secs = bounded(
        path,
        "mcp.idle_stop_secs",
        mcp.idle_stop_secs,
        settings.idle_stop.as_secs(),
        MAX_IDLE_STOP_SECS,
        "seconds",
    )?;
    if idle_stop_secs == 0 {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            reason: "mcp.idle_stop_secs must be at least 1".to_owned(),
        });
    }
    let startup_grace_secs = bounded(
        path,
        "mcp.startup_grace_secs",
        mcp.startup_grace_secs,
        settings.startup_grace.as_secs(),
        MAX_STARTUP_GRACE_SECS,
        "seconds",
    )?;
    settings.idle_stop = std::time::Duration::from_secs(idle_stop_secs);
    settings.startup_grace = std::time::Duration::from_secs(startup_grace_secs);
    if let Some(bad) = mcp.expand_env.iter().find(|name| {
        name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    }) {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            reason: format!(
                "mcp.expand_env: {bad:?} is not an environment variable name (letters, digits, _)"
            ),
        });
    }
    settings.expand_env = mcp.expand_env.clone();
    settings.unconfined = mcp.unconfined.clone();
    Ok(())
}

/// `[hooks]`: the user's hooks. A structural problem (an unknown event, a hook without a
/// command) refuses the file with its event's position; a bad matcher or a timeout cut to the
/// cap is a warning of every run.
fn hooks_section(
    config: &mut Config,
    path: &Path,
    text: &str,
    hooks: BTreeMap<toml::Spanned<String>, toml::Value>,
) -> Result<(), ConfigError> {
    let source = std::sync::Arc::new(agentd_agent::hooks::HookSource::Config(path.to_path_buf()));
    for (event, groups) in hooks {
        let (line, column) = line_and_column(text, event.span().start);
        let mut one = serde_json::Map::new();
        let groups = serde_json::to_value(groups).map_err(|error| ConfigError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            reason: format!("hooks.{}: {error}", event.get_ref()),
        })?;
        one.insert(event.get_ref().clone(), groups);
        let (found, problems) =
            agentd_agent::hooks::parse_section(&serde_json::Value::Object(one), &source);
        if let Some(problem) = problems.iter().find(|problem| !problem.minor) {
            return Err(ConfigError::Syntax {
                path: path.to_path_buf(),
                line,
                column,
                reason: problem.to_string(),
            });
        }
        config.hook_warnings.extend(
            problems
                .iter()
                .map(|problem| format!("{}: {problem}", path.display())),
        );
        config.hooks.extend(found);
    }
    if config.hooks.len() > agentd_agent::hooks::MAX_HOOKS_PER_SOURCE {
        return Err(invalid_hooks(path, config.hooks.len()));
    }
    Ok(())
}

fn invalid_hooks(path: &Path, count: usize) -> ConfigError {
    ConfigError::Invalid {
        path: path.to_path_buf(),
        reason: format!(
            "[hooks] defines {count} hooks; at most {} are allowed",
            agentd_agent::hooks::MAX_HOOKS_PER_SOURCE
        ),
    }
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
