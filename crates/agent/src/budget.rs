//! What a run may spend: the prices of its model (`[providers.NAME.prices]`) and the budget of
//! the agent it runs as (`maxBudgetUsd` of its definition). Checked before each model call
//! against what the run has used so far; the cost goes into `runFinished.costUsd`.

use agentd_core::conversation::Usage;
use agentd_llm::Prices;

/// A run's prices and budget.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunBudget {
    pub(crate) prices: Option<Prices>,
    /// US dollars one run may spend; None: no limit.
    pub(crate) max_usd: Option<f64>,
}

impl RunBudget {
    /// The budget of a run on `provider` of a session whose agent may spend `max_usd` (its
    /// header's `max_budget_usd`), and a warning for the run when the budget cannot be kept (no
    /// prices for the model).
    pub fn for_run(
        max_usd: Option<f64>,
        provider: &agentd_llm::ProviderConfig,
    ) -> (RunBudget, Option<String>) {
        let budget = RunBudget {
            prices: provider.prices,
            max_usd,
        };
        let warning = match (budget.max_usd, budget.prices) {
            (Some(limit), None) => Some(format!(
                "this agent's budget (maxBudgetUsd {limit}) is not enforced: no prices are configured for model {} of provider {}; add [providers.{}.prices] input and output (US dollars per million tokens) to config.toml",
                provider.model, provider.name, provider.name
            )),
            _ => None,
        };
        (budget, warning)
    }

    /// What `usage` cost, when the prices are known.
    pub(crate) fn cost(&self, usage: &Usage) -> Option<f64> {
        self.prices.map(|prices| prices.cost(usage))
    }

    /// Why the run must stop before another model call: it has spent its budget.
    pub(crate) fn exceeded(&self, used: &Usage) -> Option<String> {
        let limit = self.max_usd?;
        let spent = self.cost(used)?;
        (spent >= limit).then(|| {
            format!(
                "stopped: this run has cost ${spent:.4}, which reaches its agent's budget of ${limit:.4} (maxBudgetUsd); send a follow-up to continue"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_stops_only_once_reached_and_only_with_prices() {
        let prices = Prices {
            input: 1.0,
            output: 2.0,
            cached_input: 1.0,
            cache_write: 1.0,
        };
        let usage = |input: u64| Usage {
            input_tokens: input,
            ..Usage::default()
        };
        let budget = RunBudget {
            prices: Some(prices),
            max_usd: Some(0.5),
        };
        assert_eq!(budget.exceeded(&usage(499_999)), None);
        let why = budget.exceeded(&usage(500_000)).unwrap();
        assert!(
            why.contains("$0.5000") && why.contains("maxBudgetUsd"),
            "{why}"
        );
        let unpriced = RunBudget {
            prices: None,
            max_usd: Some(0.5),
        };
        assert_eq!(unpriced.exceeded(&usage(10_000_000)), None);
        let unlimited = RunBudget {
            prices: Some(prices),
            max_usd: None,
        };
        assert_eq!(unlimited.exceeded(&usage(10_000_000)), None);
        assert_eq!(unlimited.cost(&usage(1_000_000)), Some(1.0));
    }
}
