//! The performance budgets checked into the repository (`tests/perf-budgets.toml`): the
//! deterministic figures a busy machine cannot fool (sizes and counts, never times), each with
//! the most it may be. The guards (`perf_budgets` in the `all` binary, `tests/perf/main.rs`)
//! compare their figures with these and fail naming the figure and its budget.

use std::path::PathBuf;

/// The budgets file, from the workspace root.
pub const FILE: &str = "tests/perf-budgets.toml";

/// The parsed budgets file.
pub struct Budgets {
    table: toml::Table,
}

impl Budgets {
    /// Read `tests/perf-budgets.toml`; panics with the path when it is missing or invalid.
    pub fn load() -> Budgets {
        let path = path();
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("cannot read the budgets {}: {err}", path.display()));
        Budgets::parse(&text)
    }

    /// Budgets from the text of a budgets file.
    pub fn parse(text: &str) -> Budgets {
        let table = toml::from_str(text)
            .unwrap_or_else(|err| panic!("the budgets file {FILE} is not valid TOML: {err}"));
        Budgets { table }
    }

    /// The budget `section.key` (e.g. `tool_step.allocations`); panics when it is missing.
    pub fn get(&self, key: &str) -> u64 {
        let (section, name) = key
            .split_once('.')
            .unwrap_or_else(|| panic!("a budget key is `section.name`, not {key:?}"));
        self.table
            .get(section)
            .and_then(|section| section.get(name))
            .and_then(toml::Value::as_integer)
            .and_then(|value| u64::try_from(value).ok())
            .unwrap_or_else(|| panic!("{FILE} has no budget `{name}` in `[{section}]`"))
    }

    /// `None` when `figure` is within the budget `key`; else what failed, as
    /// "allocations per step: 812, budget 700 (tool_step.allocations in tests/perf-budgets.toml)".
    pub fn exceeded(&self, what: &str, key: &str, figure: u64) -> Option<String> {
        let budget = self.get(key);
        (figure > budget).then(|| format!("{what}: {figure}, budget {budget} ({key} in {FILE})"))
    }

    /// The figure beside its budget, for the printed report.
    pub fn line(&self, what: &str, key: &str, figure: u64) -> String {
        let budget = self.get(key);
        let verdict = if figure > budget { "OVER" } else { "ok" };
        format!("{what}: {figure} of a budget of {budget} ({verdict})")
    }
}

/// Where the budgets file is.
pub fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(FILE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_over_its_budget_is_named_with_the_budget() {
        let budgets = Budgets::parse("[tool_step]\nallocations = 700\n");
        assert_eq!(
            budgets.exceeded("allocations per step", "tool_step.allocations", 700),
            None
        );
        assert_eq!(
            budgets
                .exceeded("allocations per step", "tool_step.allocations", 812)
                .as_deref(),
            Some(
                "allocations per step: 812, budget 700 (tool_step.allocations in tests/perf-budgets.toml)"
            )
        );
    }
}
