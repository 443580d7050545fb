//! `[tools]` of config.toml: when MCP tools are searched rather than listed in every request
//! (`search`), and the two thresholds of `auto` (`agentd_work::tools::tool_search`).

use std::path::Path;

use agentd_work::tools::tool_search::{
    DEFAULT_SEARCH_OVER_CONTEXT_PERCENT, DEFAULT_SEARCH_OVER_TOOLS, ToolSearchMode,
    ToolSearchSettings,
};

use super::ConfigError;

/// The most `[tools] search_over_tools` may be: far above the tools of 100 servers of 1000.
const MAX_SEARCH_OVER_TOOLS: u64 = 1_000_000;

/// `[tools]` as written.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ToolsSection {
    search: Option<String>,
    search_over_tools: Option<u64>,
    search_over_context_percent: Option<u64>,
}

impl ToolsSection {
    /// The settings, or which value is not allowed (in `path`).
    pub(super) fn resolve(&self, path: &Path) -> Result<ToolSearchSettings, ConfigError> {
        let mode = match self.search.as_deref() {
            None => ToolSearchMode::default(),
            Some(text) => ToolSearchMode::parse(text).ok_or_else(|| ConfigError::Invalid {
                path: path.to_path_buf(),
                reason: format!(
                    "tools.search = {text:?} is not a mode; use \"auto\" (MCP tools searched past search_over_tools or search_over_context_percent, the default), \"always\" or \"never\" (every MCP tool listed)"
                ),
            })?,
        };
        let over_tools = super::file::bounded(
            path,
            "tools.search_over_tools",
            self.search_over_tools,
            DEFAULT_SEARCH_OVER_TOOLS as u64,
            MAX_SEARCH_OVER_TOOLS,
            "tools",
        )?;
        let percent = super::file::bounded(
            path,
            "tools.search_over_context_percent",
            self.search_over_context_percent,
            u64::from(DEFAULT_SEARCH_OVER_CONTEXT_PERCENT),
            100,
            "percent",
        )?;
        Ok(ToolSearchSettings {
            mode,
            over_tools: over_tools as usize,
            over_context_percent: percent as u8,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use agentd_work::tools::tool_search::{ToolSearchMode, ToolSearchSettings};

    fn load(text: &str) -> Result<crate::config::Config, crate::config::ConfigError> {
        crate::config::from_text(Some(Path::new("/c/config.toml")), Some(text), &|_| None)
    }

    #[test]
    fn the_section_sets_the_mode_and_thresholds_and_refuses_what_is_not_allowed() {
        assert_eq!(load("").unwrap().tool_search, ToolSearchSettings::default());
        let config = load(
            "[tools]\nsearch = \"always\"\nsearch_over_tools = 5\nsearch_over_context_percent = 3\n",
        )
        .unwrap();
        assert_eq!(
            config.tool_search,
            ToolSearchSettings {
                mode: ToolSearchMode::Always,
                over_tools: 5,
                over_context_percent: 3,
            }
        );
        let error = load("[tools]\nsearch = \"sometimes\"\n").unwrap_err();
        assert!(
            error.to_string().contains("tools.search = \"sometimes\""),
            "{error}"
        );
        let error = load("[tools]\nsearch_over_context_percent = 101\n").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("tools.search_over_context_percent = 101"),
            "{error}"
        );
        let error = load("[tools]\nsearch_over = 1\n").unwrap_err();
        assert!(error.to_string().contains("search_over"), "{error}");
    }
}
