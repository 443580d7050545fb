//! What a run may spend: the prices of its model (`[providers.NAME.prices]`) and its budgets,
//! each counted per run: cost (`[sessions] max_cost_usd`, a definition's `maxBudgetUsd`),
//! tokens (`[sessions] max_tokens`, a definition's `maxTokens`) and working time
//! (`[sessions] max_run_secs`); where both the config and the definition set one, the smaller
//! holds. Checked before each model call (`Spending::reached`); a reached budget pauses the
//! run and asks (`budget_pause`). The cost goes into `runFinished.costUsd`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentd_core::conversation::Usage;
use agentd_llm::Prices;
use protocol::budget::BudgetKind;

use crate::budget_pause::BudgetBroker;

/// `[sessions]`'s budgets, for every run of every session (config.toml).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SessionBudgets {
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    pub max_run_secs: Option<u64>,
}

/// An agent definition's budgets (its session header's copy of them).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AgentBudgets {
    /// `maxBudgetUsd`.
    pub max_usd: Option<f64>,
    /// `maxTokens`.
    pub max_tokens: Option<u64>,
}

/// One budget: its limit and the setting it comes from (named in messages: how to raise it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Limit {
    pub(crate) value: f64,
    pub(crate) setting: &'static str,
}

/// A run's prices and budgets, and where a reached budget asks.
#[derive(Clone, Default)]
pub struct RunBudget {
    pub(crate) prices: Option<Prices>,
    pub(crate) cost: Option<Limit>,
    pub(crate) tokens: Option<Limit>,
    pub(crate) run_secs: Option<Limit>,
    /// Where a pause waits for `budget/respond`; none (unit tests): a reached budget stops.
    pub(crate) broker: Option<Arc<BudgetBroker>>,
}

impl std::fmt::Debug for RunBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunBudget")
            .field("prices", &self.prices)
            .field("cost", &self.cost)
            .field("tokens", &self.tokens)
            .field("run_secs", &self.run_secs)
            .finish_non_exhaustive()
    }
}

/// A budget the run has reached: what it used, and the limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Reached {
    pub(crate) kind: BudgetKind,
    pub(crate) used: f64,
    pub(crate) limit: Limit,
}

/// What a run has spent so far against its (possibly raised) limits.
#[derive(Debug)]
pub(crate) struct Spending {
    cost: Option<Limit>,
    tokens: Option<Limit>,
    run_secs: Option<Limit>,
    started: Instant,
    /// Time paused on budgets: not working time.
    paused: Duration,
}

impl RunBudget {
    /// The budgets of a run on `provider`: `[sessions]`'s and the agent's (the smaller of
    /// each), answered through `broker`; and a warning for the run when a cost budget cannot
    /// be kept (no prices for the model; token and time budgets still hold).
    pub fn for_run(
        session: SessionBudgets,
        agent: AgentBudgets,
        provider: &agentd_llm::ProviderConfig,
        broker: Arc<BudgetBroker>,
    ) -> (RunBudget, Option<String>) {
        let budget = RunBudget::new(session, agent, provider.prices, broker);
        let warning = budget.unenforced(&provider.model, &provider.name);
        (budget, warning)
    }

    fn new(
        session: SessionBudgets,
        agent: AgentBudgets,
        prices: Option<Prices>,
        broker: Arc<BudgetBroker>,
    ) -> RunBudget {
        let smaller = |config: Option<Limit>, agent: Option<Limit>| match (config, agent) {
            (Some(config), Some(agent)) if config.value < agent.value => Some(config),
            (config, None) => config,
            (_, agent) => agent,
        };
        let limit = |value: Option<f64>, setting| value.map(|value| Limit { value, setting });
        RunBudget {
            prices,
            cost: smaller(
                limit(
                    session.max_cost_usd,
                    "max_cost_usd in [sessions] of config.toml",
                ),
                limit(agent.max_usd, "maxBudgetUsd of the agent's definition"),
            ),
            tokens: smaller(
                limit(
                    session.max_tokens.map(|tokens| tokens as f64),
                    "max_tokens in [sessions] of config.toml",
                ),
                limit(
                    agent.max_tokens.map(|tokens| tokens as f64),
                    "maxTokens of the agent's definition",
                ),
            ),
            run_secs: limit(
                session.max_run_secs.map(|secs| secs as f64),
                "max_run_secs in [sessions] of config.toml",
            ),
            broker: Some(broker),
        }
    }

    /// The warning of a cost budget that cannot be kept: no prices for `model` of `provider`.
    fn unenforced(&self, model: &str, provider: &str) -> Option<String> {
        match (self.cost, self.prices) {
            (Some(limit), None) => Some(format!(
                "this run's cost budget (${} from {}) is not enforced: no prices are configured for model {model} of provider {provider}; add [providers.{provider}.prices] input and output (US dollars per million tokens) to config.toml",
                limit.value, limit.setting
            )),
            _ => None,
        }
    }

    /// What `usage` cost, when the prices are known.
    pub(crate) fn cost(&self, usage: &Usage) -> Option<f64> {
        self.prices.map(|prices| prices.cost(usage))
    }

    /// The run's spending from now, against these budgets.
    pub(crate) fn start(&self) -> Spending {
        Spending {
            cost: self.cost,
            tokens: self.tokens,
            run_secs: self.run_secs,
            started: Instant::now(),
            paused: Duration::ZERO,
        }
    }
}

impl Spending {
    /// The first budget `used` (and the time worked) reaches, if any: cost (only with
    /// prices), tokens, time.
    pub(crate) fn reached(&self, used: &Usage, prices: Option<Prices>) -> Option<Reached> {
        self.reached_at(used, prices, Instant::now())
    }

    fn reached_at(&self, used: &Usage, prices: Option<Prices>, now: Instant) -> Option<Reached> {
        let cost = prices.map(|prices| prices.cost(used));
        let tokens = used.input_tokens.saturating_add(used.output_tokens) as f64;
        let worked = now
            .saturating_duration_since(self.started)
            .saturating_sub(self.paused)
            .as_secs_f64();
        [
            (BudgetKind::CostUsd, self.cost, cost),
            (BudgetKind::Tokens, self.tokens, Some(tokens)),
            (BudgetKind::RunSecs, self.run_secs, Some(worked)),
        ]
        .into_iter()
        .find_map(|(kind, limit, used)| {
            let (limit, used) = (limit?, used?);
            (used >= limit.value).then_some(Reached { kind, used, limit })
        })
    }

    /// Count `pause` as not worked.
    pub(crate) fn paused_for(&mut self, pause: Duration) {
        self.paused = self.paused.saturating_add(pause);
    }

    /// The run goes on with `value` as its `kind` limit.
    pub(crate) fn raise(&mut self, kind: BudgetKind, value: f64) {
        let slot = match kind {
            BudgetKind::CostUsd => &mut self.cost,
            BudgetKind::Tokens => &mut self.tokens,
            BudgetKind::RunSecs => &mut self.run_secs,
        };
        if let Some(limit) = slot {
            limit.value = value;
        }
    }
}

impl Reached {
    /// `$0.0500`, `1200 tokens`, `31 s`: an amount of this budget.
    pub(crate) fn amount(&self, value: f64) -> String {
        match self.kind {
            BudgetKind::CostUsd => format!("${value:.4}"),
            BudgetKind::Tokens => format!("{value:.0} tokens"),
            BudgetKind::RunSecs => format!("{value:.0} s"),
        }
    }

    /// What this run has used and the budget it reaches, with its setting.
    pub(crate) fn describe(&self) -> String {
        let what = match self.kind {
            BudgetKind::CostUsd => "has cost",
            BudgetKind::Tokens => "has used",
            BudgetKind::RunSecs => "has worked",
        };
        format!(
            "this run {what} {}, which reaches its budget of {} ({})",
            self.amount(self.used),
            self.amount(self.limit.value),
            self.limit.setting
        )
    }

    /// The limit a `continue` without one sets: another budget as big, from what is used.
    pub(crate) fn suggested_limit(&self) -> f64 {
        let next = self.used + self.limit.value;
        match self.kind {
            BudgetKind::CostUsd => next,
            BudgetKind::Tokens | BudgetKind::RunSecs => next.ceil(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRICES: Prices = Prices {
        input: 1.0,
        output: 2.0,
        cached_input: 1.0,
        cache_write: 1.0,
    };

    fn usage(input: u64) -> Usage {
        Usage {
            input_tokens: input,
            ..Usage::default()
        }
    }

    #[test]
    fn a_budget_is_reached_only_once_used_and_cost_only_with_prices() {
        let broker = Arc::new(BudgetBroker::default());
        let agent = AgentBudgets {
            max_usd: Some(0.5),
            max_tokens: None,
        };
        let budget = RunBudget::new(
            SessionBudgets::default(),
            agent,
            Some(PRICES),
            broker.clone(),
        );
        assert_eq!(budget.unenforced("m", "mock"), None);
        let spending = budget.start();
        assert_eq!(spending.reached(&usage(499_999), budget.prices), None);
        let reached = spending.reached(&usage(500_000), budget.prices).unwrap();
        assert_eq!(reached.kind, BudgetKind::CostUsd);
        let why = reached.describe();
        assert!(
            why.contains("$0.5000") && why.contains("maxBudgetUsd"),
            "{why}"
        );
        assert!((reached.suggested_limit() - 1.0).abs() < 1e-9);

        let unpriced = RunBudget::new(SessionBudgets::default(), agent, None, broker);
        let warning = unpriced.unenforced("m", "mock").unwrap();
        assert!(
            warning.contains("maxBudgetUsd") && warning.contains("[providers."),
            "{warning}"
        );
        assert_eq!(
            unpriced
                .start()
                .reached(&usage(10_000_000), unpriced.prices),
            None
        );
    }

    #[test]
    fn the_smaller_of_config_and_definition_holds_and_a_raise_lets_it_go_on() {
        let budget = RunBudget::new(
            SessionBudgets {
                max_tokens: Some(1000),
                ..SessionBudgets::default()
            },
            AgentBudgets {
                max_usd: None,
                max_tokens: Some(300),
            },
            None,
            Arc::new(BudgetBroker::default()),
        );
        let mut spending = budget.start();
        let reached = spending.reached(&usage(300), None).unwrap();
        assert_eq!(reached.kind, BudgetKind::Tokens);
        assert!(reached.describe().contains("maxTokens"), "{reached:?}");
        assert_eq!(reached.suggested_limit(), 600.0);
        spending.raise(BudgetKind::Tokens, 600.0);
        assert_eq!(spending.reached(&usage(599), None), None);
        assert!(spending.reached(&usage(600), None).is_some());
    }

    #[test]
    fn working_time_leaves_out_the_pauses() {
        let budget = RunBudget::new(
            SessionBudgets {
                max_run_secs: Some(10),
                ..SessionBudgets::default()
            },
            AgentBudgets::default(),
            None,
            Arc::new(BudgetBroker::default()),
        );
        let mut spending = budget.start();
        let at = |secs| spending.started + Duration::from_secs(secs);
        assert_eq!(spending.reached_at(&usage(0), None, at(9)), None);
        spending.paused_for(Duration::from_secs(5));
        let at = |secs| spending.started + Duration::from_secs(secs);
        assert_eq!(spending.reached_at(&usage(0), None, at(14)), None);
        let reached = spending.reached_at(&usage(0), None, at(15)).unwrap();
        assert_eq!(reached.kind, BudgetKind::RunSecs);
        assert!(reached.describe().contains("max_run_secs"), "{reached:?}");
    }
}
