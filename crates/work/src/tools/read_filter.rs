//! What a listing or search may show of the paths it finds. The gate decides a `grep`, `glob`
//! or `list_dir` call on the one path it names; the run's Read deny and ask rules ([`ReadRules`], set
//! on the [`super::ToolContext`]) and the workspace boundary decide every path found below it.
//! Withheld entries are counted, never named, and a walk does not enter a directory whose
//! whole contents are denied.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use agentd_policy::permission::ReadRules;

/// The run's [`ReadRules`], or none (tests, tools used outside a run). Cheap to clone.
#[derive(Clone, Default)]
pub struct ReadFilter(Option<Arc<dyn ReadRules>>);

/// Why an entry was left out of a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WithheldBy {
    DenyRule,
    /// A symlink whose target lies outside the workspace (the hard limit file tools obey).
    OutsideWorkspace,
}

/// How many entries a result left out, by reason; the tool output says the numbers only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Withheld {
    pub(crate) by_deny_rules: usize,
    pub(crate) outside_workspace: usize,
}

impl ReadFilter {
    pub fn new(rules: Arc<dyn ReadRules>) -> Self {
        Self(Some(rules))
    }

    /// No rules: only the workspace boundary filters.
    pub(crate) fn none() -> Self {
        Self(None)
    }

    /// Whether `tool` must not show `path` (absolute, resolved).
    pub(crate) fn denies(&self, tool: &str, path: &Path) -> bool {
        self.0
            .as_ref()
            .is_some_and(|rules| rules.denies(tool, path))
    }

    /// Whether `tool` must not show anything under the directory `dir`, so it need not read it.
    pub(crate) fn denies_everything_under(&self, tool: &str, dir: &Path) -> bool {
        self.0
            .as_ref()
            .is_some_and(|rules| rules.denies_everything_under(tool, dir))
    }

    /// Why `tool` must not show the directory entry `path` (a child of a resolved directory
    /// under `workspace`), if it must not. A symlink is judged by where it leads too: out of
    /// the workspace, or to a denied path. Blocking: it resolves symlinks.
    pub(crate) fn judge_entry(
        &self,
        tool: &str,
        workspace: &Path,
        path: &Path,
        is_symlink: bool,
    ) -> Option<WithheldBy> {
        if self.denies(tool, path) {
            return Some(WithheldBy::DenyRule);
        }
        if !is_symlink {
            return None;
        }
        // A dangling link leads nowhere: its own path was judged above.
        let target = std::fs::canonicalize(path).ok()?;
        if !target.starts_with(workspace) {
            Some(WithheldBy::OutsideWorkspace)
        } else if self.denies(tool, &target) {
            Some(WithheldBy::DenyRule)
        } else {
            None
        }
    }
}

impl fmt::Debug for ReadFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "ReadFilter(..)"
        } else {
            "ReadFilter(none)"
        })
    }
}

impl Withheld {
    pub(crate) fn count(&mut self, by: WithheldBy) {
        match by {
            WithheldBy::DenyRule => self.by_deny_rules += 1,
            WithheldBy::OutsideWorkspace => self.outside_workspace += 1,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        *self == Withheld::default()
    }

    /// The lines the tool output ends with (each with its newline; empty when nothing was
    /// withheld), e.g. `[2 entries withheld by permission rules]`.
    pub(crate) fn note(&self) -> String {
        let mut note = String::new();
        if self.by_deny_rules > 0 {
            note.push_str(&format!(
                "[{} withheld by permission rules]\n",
                entries(self.by_deny_rules)
            ));
        }
        if self.outside_workspace > 0 {
            note.push_str(&format!(
                "[{} withheld: symlinks that lead outside the workspace]\n",
                entries(self.outside_workspace)
            ));
        }
        note
    }
}

fn entries(count: usize) -> String {
    if count == 1 {
        "1 entry".to_owned()
    } else {
        format!("{count} entries")
    }
}
