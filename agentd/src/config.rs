//! Configuration: config.toml and environment quick start.
//!
//! `load` reads the file (a missing file is fine, a bad one is an error, never a silent fallback)
//! and adds the environment quick-start providers; `Config::resolve_provider` picks the provider
//! and model for a session.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::permission::{
    PermissionMode, RuleError, RuleLayer, RuleSet, RuleSource, TomlPermissions,
};
use agentd_core::text_position::line_and_column;
use agentd_llm::{FilePrices, ProviderConfig, ProviderKind};

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
    /// Character limits of the curated memory stores (`[memory] memory_chars`, `user_chars`).
    pub memory: crate::memory::MemoryLimits,
    /// `[sandbox]`: how `run_shell` is confined.
    pub sandbox: crate::process::sandbox::SandboxConfig,
    /// When old tool results are cleared and the history compacted (`[context]`).
    pub context: ContextConfig,
    /// `[mcp]` (idle stop, startup grace) and the user's servers (`[mcp_servers.<name>]`;
    /// an entry that cannot be used is a problem the session reports, not a config error).
    pub mcp: crate::mcp::config::McpSettings,
    /// `[tasks]`: the cap on running subagents, parallel writers, idle parents notified.
    pub tasks: crate::task::TaskSettings,
}

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
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
pub const OPENAI_DEFAULT_MODEL: &str = "gpt-4o-mini";
pub const ANTHROPIC_DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// The largest config.toml read: a config is a few kilobytes; anything bigger is a mistake,
/// and a FIFO at the config path must not hang startup either; a file of another user (not
/// root) is refused (`regular_file::read_config_text`).
const MAX_CONFIG_BYTES: usize = 1024 * 1024;

/// Loads the configuration from `path` (None or a missing file: environment only) and `env`.
pub fn load(
    path: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    // Empty variables count as unset: `FOO= agentd` should not configure anything.
    let env = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let mut config = Config {
        source: None,
        path: path.map(Path::to_path_buf),
        default_provider: None,
        providers: BTreeMap::new(),
        max_steps: DEFAULT_MAX_STEPS,
        tool_output_max_chars: DEFAULT_TOOL_OUTPUT_MAX_CHARS,
        permissions: PermissionsConfig::default(),
        session_idle_unload: std::time::Duration::from_secs(DEFAULT_SESSION_IDLE_UNLOAD_SECS),
        memory: crate::memory::MemoryLimits::default(),
        sandbox: crate::process::sandbox::SandboxConfig::default(),
        context: ContextConfig::default(),
        mcp: crate::mcp::config::McpSettings::default(),
        tasks: crate::task::TaskSettings::default(),
    };
    if let Some(path) = path {
        match agentd_core::regular_file::read_config_text(path, MAX_CONFIG_BYTES) {
            Ok(read) if read.truncated => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source: std::io::Error::other(format!(
                        "the file is larger than {MAX_CONFIG_BYTES} bytes"
                    )),
                });
            }
            Ok(read) => {
                apply_file(&mut config, path, &read.text, &env)?;
                config.source = Some(path.to_path_buf());
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        }
    }
    add_env_providers(&mut config, &env);
    if config.default_provider.is_none() {
        config.default_provider = env("AGENTD_PROVIDER");
    }
    Ok(config)
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
    sandbox: Option<crate::process::sandbox::SandboxSection>,
    context: Option<FileContext>,
    mcp: Option<crate::mcp::config::McpSection>,
    tasks: Option<crate::task::TasksSection>,
    /// Kept as values so one bad entry is a problem of that server, not of the whole file.
    #[serde(default)]
    mcp_servers: BTreeMap<String, toml::Value>,
}

/// `[memory]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMemory {
    memory_chars: Option<u64>,
    user_chars: Option<u64>,
}

/// `[context]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileContext {
    soft_limit_percent: Option<u8>,
    hard_limit_percent: Option<u8>,
}

/// `[sessions]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSessions {
    idle_unload_secs: Option<u64>,
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

fn apply_file(
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
    let idle_unload_secs = bounded(
        path,
        "sessions.idle_unload_secs",
        file.sessions.and_then(|sessions| sessions.idle_unload_secs),
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
        config.memory = memory_limits(path, memory)?;
    }
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
    config.mcp.servers = crate::mcp::config::McpEntries::from_toml(path, file.mcp_servers);
    if let Some(tasks) = &file.tasks {
        config.tasks = tasks.resolve().map_err(invalid)?;
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
            DEFAULT_STREAM_IDLE_TIMEOUT_SECS,
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

/// A duration setting: `value` or `default`, refused when above `max` (in `unit`).
fn bounded(
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

/// `[memory]`: each limit at least 1 and at most `memory::MAX_STORE_CHARS`.
fn memory_limits(
    path: &Path,
    memory: &FileMemory,
) -> Result<crate::memory::MemoryLimits, ConfigError> {
    use crate::memory::{DEFAULT_MEMORY_CHARS, DEFAULT_USER_CHARS, MAX_STORE_CHARS};
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
    Ok(crate::memory::MemoryLimits {
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
    mcp: &crate::mcp::config::McpSection,
    settings: &mut crate::mcp::config::McpSettings,
) -> Result<(), ConfigError> {
    use crate::mcp::config::{MAX_IDLE_STOP_SECS, MAX_STARTUP_GRACE_SECS};
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
                stream_idle_timeout_secs: DEFAULT_STREAM_IDLE_TIMEOUT_SECS,
                prices: None,
            },
        );
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
