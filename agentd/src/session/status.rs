//! What `daemon/status` reads of the sessions' configuration: whether the config file
//! loaded, how the file stands against what is loaded, the providers (never a key) and the
//! default one.

use super::SessionManager;
use crate::config::live::LiveConfig;

impl SessionManager {
    /// Whether the config file existed and was read.
    pub fn config_loaded(&self) -> bool {
        self.deps
            .config
            .snapshot()
            .is_ok_and(|config| config.source.is_some())
    }

    /// The live configuration (`daemon/status`, `daemon/reload`).
    pub fn live_config(&self) -> &LiveConfig {
        &self.deps.config
    }

    /// The configured providers as `daemon/status` shows them (never a key).
    pub fn providers(&self) -> Vec<protocol::daemon::ProviderInfo> {
        let Ok(config) = self.deps.config.snapshot() else {
            return Vec::new();
        };
        config.providers().map(crate::wire::provider_info).collect()
    }

    /// The default provider's name, when there is one.
    pub fn default_provider(&self) -> Option<String> {
        let config = self.deps.config.snapshot().ok()?;
        config
            .default_provider()
            .map(|provider| provider.name.clone())
    }

    /// The `[context]` limits in use.
    pub fn context_limits(&self) -> Option<protocol::daemon::ContextLimits> {
        let config = self.deps.config.snapshot().ok()?;
        Some(protocol::daemon::ContextLimits {
            soft_limit_percent: config.context.soft_limit_percent,
            hard_limit_percent: config.context.hard_limit_percent,
        })
    }
}
