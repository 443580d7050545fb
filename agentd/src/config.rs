//! Configuration: config.toml and environment quick start.
//!
//! `load` reads the file (a missing file is fine, a bad one is an error, never a silent fallback)
//! and adds the environment quick-start providers; `Config::resolve_provider` picks the provider
//! and model for a session.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use agentd_core::text_position::line_and_column;
use agentd_llm::{ProviderConfig, ProviderKind};
use agentd_policy::permission::{
    PermissionMode, RuleError, RuleLayer, RuleSet, RuleSource, TomlPermissions,
};

mod checkpoints;
mod file;
pub mod live;
mod restart_only;
mod tools;

/// The daemon configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The config file that was read, if one existed.
    pub source: Option<PathBuf>,
    /// Where the config file is looked for (named in error messages even when it is missing).
    pub path: Option<PathBuf>,
    /// The default provider name: the file's `default_provider`, else `AGENTD_PROVIDER`.
    pub default_provider: Option<String>,
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Model calls per run before the run stops with `maxSteps`.
    pub max_steps: u32,
    /// Tool output longer than this is cut, keeping head and tail.
    pub tool_output_max_chars: usize,
    /// The user layer of permission rules and the default mode (`[permissions]`).
    pub permissions: PermissionsConfig,
    /// How long a loaded session may sit idle before it is unloaded from memory
    /// (`[sessions] idle_unload_secs`); the next request on it loads it again.
    pub session_idle_unload: std::time::Duration,
    /// Runs active when the daemon stopped go on at its next start (`[sessions]
    /// resume_after_restart`, on unless set to false).
    pub resume_after_restart: bool,
    /// What one run of any session may spend before it pauses and asks (`[sessions]
    /// max_cost_usd`, `max_tokens`, `max_run_secs`; each per run).
    pub session_budgets: agentd_agent::budget::SessionBudgets,
    /// The curated memory stores (`[memory]`): `enabled`, `scope`, and the character limits
    /// `memory_chars`, `user_chars`.
    pub memory: agentd_knowledge::memory::MemorySettings,
    /// `[shell] windows`: the shell scripts run in on Windows (PowerShell unless set).
    pub windows_shell: agentd_policy::process::shell_program::WindowsShell,
    /// `[sandbox]`: how `run_shell` is confined.
    pub sandbox: agentd_policy::process::sandbox::SandboxConfig,
    /// When old tool results are cleared and the history compacted (`[context]`).
    pub context: ContextConfig,
    /// `[mcp]` (idle stop, startup grace) and the user's servers (`[mcp_servers.<name>]`;
    /// an entry that cannot be used is a problem the session reports, not a config error).
    pub mcp: agentd_work::mcp::config::McpSettings,
    /// `[tasks]`: the cap on running subagents, parallel writers, idle parents notified.
    pub tasks: crate::task::TaskSettings,
    /// `[checkpoints]`: whether the workspace's files are checkpointed, and the limits.
    pub checkpoints: agentd_work::checkpoint::CheckpointSettings,
    /// `[tools]`: when MCP tools are searched (`search_tools`) rather than listed.
    pub tool_search: agentd_work::tools::tool_search::ToolSearchSettings,
    /// How long the daemon waits for an extension's answer (`[extensions] call_timeout_ms`).
    pub extension_call_timeout: std::time::Duration,
    /// `[hooks]`: the user's hooks (Claude Code's shape), for every session.
    pub hooks: Vec<agentd_agent::hooks::HookDef>,
    /// `[llm] stream_idle_secs`: how long a provider may send nothing (headers, then between
    /// stream events) before the attempt counts as a cut stream; a provider's own
    /// `stream_idle_timeout_secs` overrides it.
    pub stream_idle_secs: u64,
    /// Problems of `[hooks]` that do not refuse the file (a bad matcher: its hooks are
    /// skipped), announced as warnings at each run.
    pub hook_warnings: Vec<String>,
}

/// How long the daemon waits for an extension's answer unless `[extensions] call_timeout_ms`
/// says otherwise: long enough for a local process, short enough that a stuck one costs a
/// run little.
pub const DEFAULT_EXTENSION_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// `[context]` of config.toml: the soft and hard limits, in percent of the model's window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextConfig {
    /// Over this, old tool results are cleared before the next model call.
    pub soft_limit_percent: u8,
    /// Over this, the older history is summarised before the next model call.
    pub hard_limit_percent: u8,
}

impl Default for ContextConfig {
    fn default() -> Self {
        Self {
            soft_limit_percent: DEFAULT_SOFT_LIMIT_PERCENT,
            hard_limit_percent: DEFAULT_HARD_LIMIT_PERCENT,
        }
    }
}

/// `[permissions]` of config.toml: the user layer of the permission policy.
#[derive(Clone, Debug)]
pub struct PermissionsConfig {
    /// User rules (their source is the config path, for messages).
    pub rules: RuleSet,
    /// The mode sessions start in unless the project or the session says otherwise.
    pub default_mode: PermissionMode,
    /// How long an approval request waits for the user before it counts as denied: long enough
    /// to come back to the terminal, short enough that an unattended run ends.
    pub approval_timeout_secs: u64,
}

impl Default for PermissionsConfig {
    fn default() -> Self {
        Self {
            rules: RuleSet::default(),
            default_mode: PermissionMode::Default,
            approval_timeout_secs: DEFAULT_APPROVAL_TIMEOUT_SECS,
        }
    }
}

/// Why the configuration could not be loaded or a provider not resolved.
#[derive(thiserror::Error, Debug)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {reason}")]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        reason: String,
    },
    #[error("{path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
    /// Bad permission rules or mode, each with its position; all are reported at once.
    #[error("{}", rule_errors_text(.errors))]
    Permissions { errors: Vec<RuleError> },
    #[error(
        "no provider configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or add [providers.NAME] to {config_path}"
    )]
    NoProvider { config_path: String },
    #[error(
        "several providers configured ({names}): set default_provider in {config_path} or AGENTD_PROVIDER, or pick one with the model name PROVIDER:MODEL"
    )]
    AmbiguousProvider { names: String, config_path: String },
    #[error("unknown provider {name:?} (from {origin}); configured providers: {names}")]
    UnknownProvider {
        name: String,
        origin: &'static str,
        names: String,
    },
    #[error(
        "unknown provider {name:?} in model {model:?}; configured providers: {names}; name a model whose name contains ':' with its provider first (PROVIDER:MODEL)"
    )]
    UnknownModelProvider {
        name: String,
        model: String,
        names: String,
    },
}

/// Defaults (data, not magic numbers inside functions).
pub const DEFAULT_MAX_STEPS: u32 = 50;
pub const DEFAULT_TOOL_OUTPUT_MAX_CHARS: usize = 30_000;
pub const DEFAULT_MAX_RETRIES: u32 = 4;
pub const DEFAULT_RETRY_BASE_DELAY_MS: u64 = 500;
pub const DEFAULT_RETRY_MAX_DELAY_MS: u64 = 30_000;
pub const DEFAULT_STREAM_IDLE_TIMEOUT_SECS: u64 = 90;
pub const DEFAULT_APPROVAL_TIMEOUT_SECS: u64 = 600;
/// Idle sessions are unloaded after this long: long enough that a user coming back to a
/// conversation finds it warm, short enough that a daemon up for weeks holds only what is used.
pub const DEFAULT_SESSION_IDLE_UNLOAD_SECS: u64 = 600;
/// Old tool results are cleared at half the window: early enough that the window rarely
/// fills, late enough that the prefix cache is broken rarely.
pub const DEFAULT_SOFT_LIMIT_PERCENT: u8 = 50;
/// The history is compacted at 80% of the window, leaving room for the reply and the summary.
pub const DEFAULT_HARD_LIMIT_PERCENT: u8 = 80;

/// Upper bounds of the durations config.toml sets. A larger value is rejected with a config
/// error naming the key, never clamped silently: durations are added to clocks and formatted as
/// dates, where a huge number overflows. Each bound is far above any useful setting.
///
/// An approval waits at most a week: past that nobody is coming back to it.
pub const MAX_APPROVAL_TIMEOUT_SECS: u64 = 7 * 24 * 60 * 60;
/// A retry waits at most an hour (`retry_base_delay_ms`, `retry_max_delay_ms`).
pub const MAX_RETRY_DELAY_MS: u64 = 60 * 60 * 1000;
/// A silent stream is given up after at most an hour (a slow local model reading a long
/// prompt stays well under it).
pub const MAX_STREAM_IDLE_TIMEOUT_SECS: u64 = 60 * 60;
/// An idle session is unloaded after at most 30 days (`[sessions] idle_unload_secs`).
pub const MAX_SESSION_IDLE_UNLOAD_SECS: u64 = 30 * 24 * 60 * 60;
/// A run works at most 30 days before it pauses (`[sessions] max_run_secs`).
pub const MAX_RUN_SECS: u64 = 30 * 24 * 60 * 60;
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
pub const OPENAI_DEFAULT_MODEL: &str = "gpt-4o-mini";
pub const ANTHROPIC_DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// The largest config.toml read: a config is a few kilobytes; anything bigger is a mistake,
/// and a FIFO at the config path must not hang startup either; a file of another user (not
/// root) is refused (`regular_file::read_config_text`).
const MAX_CONFIG_BYTES: usize = 1024 * 1024;

/// Loads the configuration from `path` (None or a missing file: environment only) and `env`
/// (the daemon goes through `live::LiveConfig`, which keeps the text it loaded).
#[cfg(test)]
pub fn load(
    path: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let text = match path {
        Some(path) => read_text(path)?,
        None => None,
    };
    from_text(path, text.as_deref(), env)
}

/// The text of config.toml at `path` (None: there is no file), bounded and our user's (or
/// root's). Blocking.
pub fn read_text(path: &Path) -> Result<Option<String>, ConfigError> {
    match agentd_core::regular_file::read_config_text(path, MAX_CONFIG_BYTES) {
        Ok(read) if read.truncated => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source: std::io::Error::other(format!(
                "the file is larger than {MAX_CONFIG_BYTES} bytes"
            )),
        }),
        Ok(read) => Ok(Some(read.text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The configuration of config.toml's `text` as read from `path` (None: no file) and `env`.
pub fn from_text(
    path: Option<&Path>,
    text: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    // Empty variables count as unset: `FOO= agentd` should not configure anything.
    let env = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let mut config = defaults(path);
    if let (Some(path), Some(text)) = (path, text) {
        file::apply_file(&mut config, path, text, &env)?;
        config.source = Some(path.to_path_buf());
    }
    add_env(&mut config, &env);
    Ok(config)
}

/// The configuration of `env` alone, as if there were no file at `path` (what the daemon is
/// built with while the file is unusable).
pub fn without_file(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Config {
    let env = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let mut config = defaults(Some(path));
    add_env(&mut config, &env);
    config
}

/// Every setting at its default, no provider.
fn defaults(path: Option<&Path>) -> Config {
    Config {
        source: None,
        path: path.map(Path::to_path_buf),
        default_provider: None,
        providers: BTreeMap::new(),
        max_steps: DEFAULT_MAX_STEPS,
        tool_output_max_chars: DEFAULT_TOOL_OUTPUT_MAX_CHARS,
        permissions: PermissionsConfig::default(),
        session_idle_unload: std::time::Duration::from_secs(DEFAULT_SESSION_IDLE_UNLOAD_SECS),
        resume_after_restart: true,
        session_budgets: Default::default(),
        memory: agentd_knowledge::memory::MemorySettings::default(),
        windows_shell: Default::default(),
        sandbox: agentd_policy::process::sandbox::SandboxConfig::default(),
        context: ContextConfig::default(),
        mcp: agentd_work::mcp::config::McpSettings::default(),
        tasks: crate::task::TaskSettings::default(),
        checkpoints: Default::default(),
        tool_search: Default::default(),
        extension_call_timeout: DEFAULT_EXTENSION_CALL_TIMEOUT,
        hooks: Vec::new(),
        stream_idle_secs: DEFAULT_STREAM_IDLE_TIMEOUT_SECS,
        hook_warnings: Vec::new(),
    }
}

/// The quick-start providers and the default provider of the environment.
fn add_env(config: &mut Config, env: &dyn Fn(&str) -> Option<String>) {
    add_env_providers(config, env);
    if config.default_provider.is_none() {
        config.default_provider = env("AGENTD_PROVIDER");
    }
}

impl Config {
    /// Picks the provider (and model) for `model`: None → the default provider; a provider name →
    /// that provider; `PROVIDER:MODEL` with a known provider → it with that model; anything else
    /// → the default provider with that model.
    pub fn resolve_provider(&self, model: Option<&str>) -> Result<ProviderConfig, ConfigError> {
        let Some(model) = model.map(str::trim).filter(|m| !m.is_empty()) else {
            return self.default_provider_config().cloned();
        };
        if let Some(provider) = self.providers.get(model) {
            return Ok(provider.clone());
        }
        if let Some((name, model)) = model.split_once(':')
            && let Some(provider) = self.providers.get(name)
            && !model.is_empty()
        {
            return Ok(with_model(provider, model));
        }
        if let Some((name, _)) = model.split_once(':') {
            return Err(ConfigError::UnknownModelProvider {
                name: name.to_owned(),
                model: model.to_owned(),
                names: self.provider_names(),
            });
        }
        Ok(with_model(self.default_provider_config()?, model))
    }

    /// The configured providers, by name.
    pub fn providers(&self) -> impl Iterator<Item = &ProviderConfig> {
        self.providers.values()
    }

    /// The provider sessions get when they name none (`None`: none is configured, or several
    /// without a default).
    pub fn default_provider(&self) -> Option<&ProviderConfig> {
        self.default_provider_config().ok()
    }

    fn default_provider_config(&self) -> Result<&ProviderConfig, ConfigError> {
        if let Some(name) = &self.default_provider {
            return self
                .providers
                .get(name)
                .ok_or_else(|| ConfigError::UnknownProvider {
                    name: name.clone(),
                    origin: "default_provider / AGENTD_PROVIDER",
                    names: self.provider_names(),
                });
        }
        let mut providers = self.providers.values();
        match (providers.next(), providers.next()) {
            (Some(only), None) => Ok(only),
            (None, _) => Err(ConfigError::NoProvider {
                config_path: self.path_for_messages(),
            }),
            (Some(_), Some(_)) => Err(ConfigError::AmbiguousProvider {
                names: self.provider_names(),
                config_path: self.path_for_messages(),
            }),
        }
    }

    fn provider_names(&self) -> String {
        if self.providers.is_empty() {
            return "none".to_owned();
        }
        self.providers
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn path_for_messages(&self) -> String {
        match &self.path {
            Some(path) => path.display().to_string(),
            None => "config.toml".to_owned(),
        }
    }
}

/// `provider` asked for another model: its prices are its configured model's, so they go.
fn with_model(provider: &ProviderConfig, model: &str) -> ProviderConfig {
    let prices = (provider.model == model)
        .then_some(provider.prices)
        .flatten();
    ProviderConfig {
        model: model.to_owned(),
        prices,
        ..provider.clone()
    }
}

fn rule_errors_text(errors: &[RuleError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Adds the `openai` / `anthropic` quick-start providers unless the file defines those names.
fn add_env_providers(config: &mut Config, env: &dyn Fn(&str) -> Option<String>) {
    let model_override = env("AGENTD_MODEL");
    let quick_starts = [
        (
            "openai",
            ProviderKind::OpenAi,
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            OPENAI_DEFAULT_BASE_URL,
            OPENAI_DEFAULT_MODEL,
        ),
        (
            "anthropic",
            ProviderKind::Anthropic,
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            ANTHROPIC_DEFAULT_BASE_URL,
            ANTHROPIC_DEFAULT_MODEL,
        ),
    ];
    for (name, kind, key_var, url_var, default_url, default_model) in quick_starts {
        let Some(api_key) = env(key_var) else {
            continue;
        };
        if config.providers.contains_key(name) {
            continue;
        }
        let base_url = env(url_var)
            .unwrap_or_else(|| default_url.to_owned())
            .trim_end_matches('/')
            .to_owned();
        config.providers.insert(
            name.to_owned(),
            ProviderConfig {
                name: name.to_owned(),
                kind,
                base_url,
                api_key: Some(api_key),
                api_key_env: Some(key_var.to_owned()),
                model: model_override
                    .clone()
                    .unwrap_or_else(|| default_model.to_owned()),
                context_window: None,
                max_output_tokens: None,
                reasoning_effort: None,
                max_retries: DEFAULT_MAX_RETRIES,
                retry_base_delay_ms: DEFAULT_RETRY_BASE_DELAY_MS,
                retry_max_delay_ms: DEFAULT_RETRY_MAX_DELAY_MS,
                stream_idle_timeout_secs: config.stream_idle_secs,
                prices: None,
            },
        );
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
