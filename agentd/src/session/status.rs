//! What `daemon/status` reads of the sessions' configuration: whether the config file
//! loaded, the providers (never a key) and the default one.

use super::SessionManager;

impl SessionManager {
    /// Whether the config file existed and was read.
    pub fn config_loaded(&self) -> bool {
        self.deps
            .config
            .as_ref()
            .is_ok_and(|config| config.source.is_some())
    }

    /// The configured providers as `daemon/status` shows them (never a key).
    pub fn providers(&self) -> Vec<protocol::daemon::ProviderInfo> {
        let Ok(config) = &self.deps.config else {
            return Vec::new();
        };
        config.providers().map(crate::wire::provider_info).collect()
    }

    /// The default provider's name, when there is one.
    pub fn default_provider(&self) -> Option<String> {
        let config = self.deps.config.as_ref().ok()?;
        config
            .default_provider()
            .map(|provider| provider.name.clone())
    }
}
