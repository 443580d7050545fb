//! Tool search for large tool sets. Past a threshold ([`ToolSearchSettings::applies`]: more
//! MCP tools than a count, or their JSON over a share of the model's window) a step does not
//! list the MCP tools: [`offer`] keeps the other tools, the MCP tools the session loaded
//! ([`LoadedTools`]) and `search_tools`, which ranks the step's MCP tools by the words of a
//! query ([`rank`]: names first, then descriptions; ties by name) and loads the ones the model
//! names. A loaded tool is offered from the next step on, so the request's tools (part of its
//! cached prefix) change only at a load. A call to an MCP tool that is not loaded yet loads it
//! too ([`load_called`]): it runs like any call, through the gate.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolOutput, ToolRegistry, TypedTool, str_field};

/// The name the model calls the search by.
pub const SEARCH_TOOLS: &str = "search_tools";
/// More MCP tools than this and they are searched, not listed (`[tools] search_over_tools`):
/// a few dozen tools are what a model chooses among well.
pub const DEFAULT_SEARCH_OVER_TOOLS: usize = 50;
/// MCP tools whose JSON takes more than this percent of the model's window (at
/// `agentd_llm::usage_estimate::BYTES_PER_TOKEN`) are searched, not listed
/// (`[tools] search_over_context_percent`).
pub const DEFAULT_SEARCH_OVER_CONTEXT_PERCENT: u8 = 10;
/// Matches a search lists unless the call asks for fewer; the rest are counted.
const DEFAULT_RESULTS: usize = 10;
/// The most matches one search lists, so a result stays a few kilobytes.
const MAX_RESULTS: usize = 25;
/// The most tools one call loads: each one adds its definition to every later request.
const MAX_LOADS_PER_CALL: usize = 20;
/// A match's description is its first line, cut to this many characters.
const DESCRIPTION_LINE_CHARS: usize = 160;
/// The longest query read (the rest is ignored), and the most words of it used.
const MAX_QUERY_CHARS: usize = 1000;
const MAX_QUERY_WORDS: usize = 32;

/// `[tools] search`: when MCP tools are searched rather than listed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToolSearchMode {
    /// Past either threshold of [`ToolSearchSettings`].
    #[default]
    Auto,
    /// Whenever the session has MCP tools.
    Always,
    /// Never: every MCP tool is listed.
    Never,
}

impl ToolSearchMode {
    /// The mode spelled `text` in config.toml (`auto`, `always`, `never`).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(Self::Auto),
            "always" => Some(Self::Always),
            "never" => Some(Self::Never),
            _ => None,
        }
    }
}

/// `[tools]` of config.toml: the mode and the two thresholds of `auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolSearchSettings {
    pub mode: ToolSearchMode,
    /// More MCP tools than this: searched.
    pub over_tools: usize,
    /// MCP tools' JSON over this percent of the window: searched.
    pub over_context_percent: u8,
}

impl Default for ToolSearchSettings {
    fn default() -> Self {
        Self {
            mode: ToolSearchMode::Auto,
            over_tools: DEFAULT_SEARCH_OVER_TOOLS,
            over_context_percent: DEFAULT_SEARCH_OVER_CONTEXT_PERCENT,
        }
    }
}

impl ToolSearchSettings {
    /// Whether `count` MCP tools whose JSON is `bytes` long are searched rather than listed,
    /// for a model whose window is `window_tokens`.
    pub fn applies(&self, count: usize, bytes: u64, window_tokens: u64) -> bool {
        match self.mode {
            ToolSearchMode::Never => false,
            ToolSearchMode::Always => count > 0,
            ToolSearchMode::Auto => {
                let tokens = bytes.div_ceil(agentd_llm::usage_estimate::BYTES_PER_TOKEN);
                count > self.over_tools
                    || tokens.saturating_mul(100)
                        > window_tokens.saturating_mul(u64::from(self.over_context_percent))
            }
        }
    }
}

/// The MCP tools a session loaded (by the names the model calls them), shared by its runs and
/// its `search_tools`. Each load is recorded once, in the next step's `toolsChanged`
/// (`loaded`), from which a loaded session restores the set.
#[derive(Debug, Default)]
pub struct LoadedTools {
    state: Mutex<LoadedState>,
}

#[derive(Debug, Default)]
struct LoadedState {
    names: BTreeSet<String>,
    /// Loaded since the last `toolsChanged` was recorded.
    unrecorded: BTreeSet<String>,
}

impl LoadedTools {
    fn lock(&self) -> MutexGuard<'_, LoadedState> {
        // The set stays usable whatever panicked while it was held.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Loads recorded before (the session's log), not recorded again.
    pub fn restore(&self, names: impl IntoIterator<Item = String>) {
        self.lock().names.extend(names);
    }

    /// Loads `name`; false when it was loaded already.
    pub fn load(&self, name: &str) -> bool {
        let mut state = self.lock();
        let new = state.names.insert(name.to_owned());
        if new {
            state.unrecorded.insert(name.to_owned());
        }
        new
    }

    pub fn contains(&self, name: &str) -> bool {
        self.lock().names.contains(name)
    }

    /// Every loaded name, sorted.
    pub fn names(&self) -> Vec<String> {
        self.lock().names.iter().cloned().collect()
    }

    /// The loads not recorded yet, sorted; they count as recorded from now on.
    pub fn take_unrecorded(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().unrecorded)
            .into_iter()
            .collect()
    }
}

/// The MCP tools of one step that `search_tools` searches and loads from, loaded or not.
#[derive(Debug, Default)]
pub struct SearchCatalogue {
    tools: ToolRegistry,
}

impl SearchCatalogue {
    /// The tool called `name`, if the step's servers offer it.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.get(name)
    }

    pub fn len(&self) -> usize {
        self.tools.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.tools.is_empty()
    }
}

/// A step's tools once search is applied.
pub struct Offered {
    /// What the model is offered and the gate and executor look up.
    pub registry: ToolRegistry,
    /// Every MCP tool of the step when they are searched (None: all are listed).
    pub catalogue: Option<Arc<SearchCatalogue>>,
}

/// `registry` as the model is offered it: as it is, or, when `settings` say its MCP tools are
/// searched for a window of `window_tokens`, without the MCP tools `loaded` does not hold and
/// with `search_tools`.
pub fn offer(
    registry: ToolRegistry,
    settings: &ToolSearchSettings,
    window_tokens: u64,
    loaded: &Arc<LoadedTools>,
) -> Offered {
    let is_mcp = |tool: &dyn Tool| tool.mcp_server().is_some();
    let (count, bytes) = registry
        .tools
        .values()
        .filter(|registered| is_mcp(registered.tool.as_ref()))
        .fold((0usize, 0u64), |(count, bytes), registered| {
            (count + 1, bytes + spec_bytes(&registered.spec))
        });
    if !settings.applies(count, bytes, window_tokens) {
        return Offered {
            registry,
            catalogue: None,
        };
    }
    let catalogue = Arc::new(SearchCatalogue {
        tools: registry.filtered_tools(is_mcp),
    });
    let mut offered = registry.filtered_tools(|tool| !is_mcp(tool) || loaded.contains(tool.name()));
    offered.register(Arc::new(SearchTools {
        catalogue: Arc::clone(&catalogue),
        loaded: Arc::clone(loaded),
    }));
    Offered {
        registry: offered,
        catalogue: Some(catalogue),
    }
}

/// Loads each of `names` that `catalogue` has and `loaded` does not hold yet (a call to an MCP
/// tool a search did not load); true when one was loaded.
pub fn load_called<'a>(
    catalogue: &SearchCatalogue,
    loaded: &LoadedTools,
    names: impl IntoIterator<Item = &'a str>,
) -> bool {
    let mut any = false;
    for name in names {
        if catalogue.get(name).is_some() {
            any |= loaded.load(name);
        }
    }
    any
}

/// About the bytes a spec takes in a request's tools (its name, description and schema).
fn spec_bytes(spec: &agentd_core::conversation::ToolSpec) -> u64 {
    /// The JSON around the three (keys, quotes, the provider's wrapping object).
    const WRAPPING_BYTES: usize = 60;
    (spec.name.len() + spec.description.len() + spec.input_schema.to_string().len())
        .saturating_add(WRAPPING_BYTES) as u64
}

/// The `search_tools` tool of one step: its catalogue and the session's loaded set.
struct SearchTools {
    catalogue: Arc<SearchCatalogue>,
    loaded: Arc<LoadedTools>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SearchToolsParams {
    /// Words of what a tool should do, matched against tool names and descriptions.
    #[serde(default)]
    query: Option<String>,
    /// Exact names of tools to load (from a search's results).
    #[serde(default)]
    load: Option<Vec<String>>,
    /// How many matches to list (default 10, at most 25).
    #[serde(default)]
    limit: Option<usize>,
}

impl TypedTool for SearchTools {
    type Params = SearchToolsParams;
    const NAME: &'static str = SEARCH_TOOLS;
    const DESCRIPTION: &'static str = "Find and load MCP tools: the session's MCP servers offer more tools than are \
         listed. `query`: words of what you need; lists the best matching tools (name and \
         description). `load`: exact names to load; a loaded tool is offered with its \
         parameters from your next step on and stays for the session. Both may be given at once.";
    const READ_ONLY: bool = true;

    fn summary(&self, input: &serde_json::Value) -> String {
        let load = input
            .get("load")
            .and_then(serde_json::Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(serde_json::Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        match (str_field(input, "query"), load.as_str()) {
            (query, "") => super::one_line(query, 80),
            ("", load) => super::one_line(&format!("load {load}"), 80),
            (query, load) => super::one_line(&format!("{query}; load {load}"), 80),
        }
    }

    fn run<'a>(
        &'a self,
        params: SearchToolsParams,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(async move { self.answer(params).map(ToolOutput::ok) })
    }
}

impl SearchTools {
    fn answer(&self, params: SearchToolsParams) -> Result<String, String> {
        let query = params.query.unwrap_or_default();
        let load = params.load.unwrap_or_default();
        if query.trim().is_empty() && load.is_empty() {
            return Err(
                "give `query` (words of what you need) or `load` (names of tools to load)"
                    .to_owned(),
            );
        }
        if load.len() > MAX_LOADS_PER_CALL {
            return Err(format!(
                "{} names in `load`; load at most {MAX_LOADS_PER_CALL} at once",
                load.len()
            ));
        }
        let mut parts = Vec::new();
        if !load.is_empty() {
            parts.push(self.load(&load));
        }
        if !query.trim().is_empty() {
            let limit = params
                .limit
                .unwrap_or(DEFAULT_RESULTS)
                .clamp(1, MAX_RESULTS);
            parts.push(self.search(&query, limit));
        }
        Ok(parts.join("\n\n"))
    }

    fn load(&self, names: &[String]) -> String {
        let mut loaded = Vec::new();
        let mut already = Vec::new();
        let mut unknown = Vec::new();
        for name in names {
            if self.catalogue.get(name).is_none() {
                unknown.push(name.as_str());
            } else if self.loaded.load(name) {
                loaded.push(name.as_str());
            } else {
                already.push(name.as_str());
            }
        }
        let mut lines = Vec::new();
        if !loaded.is_empty() {
            lines.push(format!(
                "Loaded {}: offered with their parameters from your next step on.",
                loaded.join(", ")
            ));
        }
        if !already.is_empty() {
            lines.push(format!("Already loaded: {}.", already.join(", ")));
        }
        if !unknown.is_empty() {
            lines.push(format!(
                "No MCP tool of this session is named {}: search for it with `query` and load it by the name a result gives.",
                unknown.join(", ")
            ));
        }
        lines.join("\n")
    }

    fn search(&self, query: &str, limit: usize) -> String {
        let entries: Vec<(&str, &str)> = self
            .catalogue
            .tools
            .tools
            .iter()
            .map(|(name, registered)| (name.as_str(), registered.spec.description.as_str()))
            .collect();
        let ranked = rank(&entries, query);
        if ranked.is_empty() {
            return format!(
                "No tool of the {} MCP tools matches {query:?}; try other words (a tool's name or what it does).",
                entries.len()
            );
        }
        let shown = ranked.len().min(limit);
        let mut out = format!(
            "{} of the {} MCP tools match {query:?}; the best {shown}:",
            ranked.len(),
            entries.len()
        );
        for &index in &ranked[..shown] {
            let (name, description) = entries[index];
            let mark = if self.loaded.contains(name) {
                " (loaded)"
            } else {
                ""
            };
            out.push_str(&format!(
                "\n- {name}{mark}: {}",
                super::one_line(description, DESCRIPTION_LINE_CHARS)
            ));
        }
        out.push_str("\nLoad the ones you need: search_tools {\"load\": [names]}.");
        out
    }
}

/// The indices of `entries` (name, description) that match words of `query`, best first: a
/// query word that is a word of the name counts 3, the start of one 2, a word of the
/// description 2, the start of one 1 (a start needs 3 characters); the whole query naming
/// the tool counts 10 more. Ties go by name, so the order is the same every time.
pub fn rank(entries: &[(&str, &str)], query: &str) -> Vec<usize> {
    let query: String = query.chars().take(MAX_QUERY_CHARS).collect();
    let mut words = words_of(&query);
    words.dedup();
    words.truncate(MAX_QUERY_WORDS);
    let whole = query.trim().to_lowercase();
    let mut scored: Vec<(u32, usize)> = entries
        .iter()
        .enumerate()
        .filter_map(|(index, (name, description))| {
            let name_words = words_of(name);
            let description_words = words_of(description);
            let lower = name.to_lowercase();
            let mut score: u32 = if lower == whole || lower.ends_with(&format!("__{whole}")) {
                10
            } else {
                0
            };
            for word in &words {
                score += word_score(word, &name_words, 3, 2).max(word_score(
                    word,
                    &description_words,
                    2,
                    1,
                ));
            }
            (score > 0).then_some((score, index))
        })
        .collect();
    scored.sort_by(|(a_score, a), (b_score, b)| {
        b_score
            .cmp(a_score)
            .then_with(|| entries[*a].0.cmp(entries[*b].0))
    });
    scored.into_iter().map(|(_, index)| index).collect()
}

/// `exact` when `word` is one of `words`, `start` when it begins one (3 characters or more).
fn word_score(word: &str, words: &[String], exact: u32, start: u32) -> u32 {
    if words.iter().any(|candidate| candidate == word) {
        exact
    } else if word.chars().count() >= 3 && words.iter().any(|c| c.starts_with(word)) {
        start
    } else {
        0
    }
}

/// The lowercase words of `text`: runs of letters and digits, a camelCase name split at its
/// capitals; `mcp` (every MCP tool's prefix) left out; sorted.
fn words_of(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            words.push(std::mem::take(&mut current));
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    words.push(current);
    words.retain(|word| !word.is_empty() && word != "mcp");
    words.sort();
    words
}

#[cfg(test)]
#[path = "tool_search_tests.rs"]
mod tests;
