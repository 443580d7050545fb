//! The deny and ask rules for reading, applied to each path a listing or search would return:
//! the gate decides a `grep`, `glob` or `list_dir` call on the path it names, and these rules
//! decide every path it finds below (see `tools::ReadFilter`). A path an ask rule
//! covers is withheld too: a search cannot stop to ask per file, and showing it would read it
//! without the approval the rule requires (`read_file` on it asks).

use std::path::{Path, PathBuf};

use super::rule::PathContext;
use super::{Rule, RuleSet};

/// Tools whose results are paths or file contents; a deny rule naming one of them filters its
/// results. A rule naming `read_file` filters all of them: a file the model may not read is
/// not shown by a listing or search either.
const READ_TOOLS: &[&str] = &["read_file", "list_dir", "glob", "grep"];

/// The deny and ask rules of a run (every layer) that name a reading tool, with what their
/// patterns are matched against. Pure: paths are given resolved, nothing touches the file
/// system.
#[derive(Clone, Debug)]
pub struct ReadWithholdRules {
    rules: Vec<Rule>,
    /// Canonical workspace root, for workspace-relative patterns.
    workspace: PathBuf,
    /// For `~/…` patterns; None: they match nothing.
    home: Option<PathBuf>,
}

impl ReadWithholdRules {
    /// The deny and ask rules of `rules` that name a reading tool.
    pub fn new(rules: &RuleSet, workspace: &Path, home: Option<&Path>) -> Self {
        Self {
            rules: rules
                .deny
                .iter()
                .chain(&rules.ask)
                .filter(|rule| READ_TOOLS.iter().any(|tool| rule.names_tool(tool)))
                .cloned()
                .collect(),
            workspace: workspace.to_path_buf(),
            home: home.map(Path::to_path_buf),
        }
    }

    /// Whether a deny rule for `tool` or for `read_file` covers `path` (absolute, resolved).
    pub fn denies(&self, tool: &str, path: &Path) -> bool {
        let context = self.context();
        self.rules_for(tool)
            .any(|rule| rule.matches_path(path, &context))
    }

    /// Whether such a rule covers every path under the directory `dir` (absolute, resolved),
    /// so a walk need not enter it.
    pub fn denies_everything_under(&self, tool: &str, dir: &Path) -> bool {
        let context = self.context();
        self.rules_for(tool)
            .any(|rule| rule.matches_everything_under(dir, &context))
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    fn rules_for<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = &'a Rule> + 'a {
        self.rules
            .iter()
            .filter(move |rule| rule.names_tool(tool) || rule.names_tool("read_file"))
    }

    fn context(&self) -> PathContext<'_> {
        PathContext {
            workspace: &self.workspace,
            home: self.home.as_deref(),
        }
    }
}

/// The deny and ask rules a listing or search applies to each path it would return (implemented by
/// [`ReadWithholdRules`]; a listing or search of `tools` holds them in its `ReadFilter`). Paths are absolute and resolved.
pub trait ReadRules: Send + Sync {
    /// Whether a deny rule for `tool` (or for reading files) covers `path`.
    fn denies(&self, tool: &str, path: &Path) -> bool;
    /// Whether such a rule covers every path under the directory `dir`.
    fn denies_everything_under(&self, tool: &str, dir: &Path) -> bool;
}

impl ReadRules for ReadWithholdRules {
    fn denies(&self, tool: &str, path: &Path) -> bool {
        ReadWithholdRules::denies(self, tool, path)
    }

    fn denies_everything_under(&self, tool: &str, dir: &Path) -> bool {
        ReadWithholdRules::denies_everything_under(self, tool, dir)
    }
}
