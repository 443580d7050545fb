//! What a provider's model costs: `[providers.NAME.prices]` in config.toml, in US dollars per
//! million tokens. Used for the cost a run reports (`runFinished.costUsd`) and for an agent
//! definition's `maxBudgetUsd`. Without prices no cost is reported and no budget can be kept.

use serde::Deserialize;

use agentd_core::conversation::Usage;

/// The highest price per million tokens accepted (anything above is a typo, not a model).
pub const MAX_PRICE_PER_MTOK: f64 = 10_000.0;

/// Prices of one model, US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    /// Prompt tokens read from the provider's cache (default: `input`).
    pub cached_input: f64,
    /// Prompt tokens written to the provider's cache (default: `input`).
    pub cache_write: f64,
}

/// `[providers.NAME.prices]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilePrices {
    input: f64,
    output: f64,
    cached_input: Option<f64>,
    cache_write: Option<f64>,
}

impl FilePrices {
    /// The checked prices, or what is wrong with them (`what` names the table).
    pub fn check(&self, what: &str) -> Result<Prices, String> {
        let prices = Prices {
            input: self.input,
            output: self.output,
            cached_input: self.cached_input.unwrap_or(self.input),
            cache_write: self.cache_write.unwrap_or(self.input),
        };
        for (name, value) in [
            ("input", prices.input),
            ("output", prices.output),
            ("cached_input", prices.cached_input),
            ("cache_write", prices.cache_write),
        ] {
            if !value.is_finite() || !(0.0..=MAX_PRICE_PER_MTOK).contains(&value) {
                return Err(format!(
                    "{what}.{name} = {value} is not a price: give US dollars per million tokens, from 0 to {MAX_PRICE_PER_MTOK}"
                ));
            }
        }
        Ok(prices)
    }
}

impl Prices {
    /// What `usage` costs, in US dollars. `usage.input_tokens` counts cached and
    /// cache-written tokens too; each part is priced once.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input_tokens;
        let written = usage.cache_creation_input_tokens;
        let fresh = usage
            .input_tokens
            .saturating_sub(cached)
            .saturating_sub(written);
        let per_token = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per_token(fresh, self.input)
            + per_token(cached, self.cached_input)
            + per_token(written, self.cache_write)
            + per_token(usage.output_tokens, self.output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prices(text: &str) -> Result<Prices, String> {
        let file: FilePrices = toml::from_str(text).map_err(|err| err.to_string())?;
        file.check("providers.p.prices")
    }

    #[test]
    fn each_part_of_the_prompt_is_priced_once() {
        let prices =
            prices("input = 3.0\noutput = 15.0\ncached_input = 0.3\ncache_write = 3.75").unwrap();
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cached_input_tokens: 500_000,
            cache_creation_input_tokens: 100_000,
            estimated: false,
        };
        // 400k fresh × 3 + 500k cached × 0.3 + 100k written × 3.75 + 100k out × 15
        let expected = 1.2 + 0.15 + 0.375 + 1.5;
        assert!(
            (prices.cost(&usage) - expected).abs() < 1e-9,
            "{}",
            prices.cost(&usage)
        );
    }

    #[test]
    fn cache_prices_default_to_the_input_price_and_counts_never_underflow() {
        let prices = prices("input = 2.0\noutput = 4.0").unwrap();
        assert_eq!(prices.cached_input, 2.0);
        assert_eq!(prices.cache_write, 2.0);
        // A broken endpoint reporting more cached than input tokens costs no negative tokens.
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 0,
            cached_input_tokens: 1_000_000,
            cache_creation_input_tokens: 0,
            estimated: false,
        };
        assert!((prices.cost(&usage) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn bad_prices_say_what_to_give() {
        let err = prices("input = -1.0\noutput = 4.0").unwrap_err();
        assert!(err.contains("providers.p.prices.input = -1"), "{err}");
        assert!(err.contains("per million tokens"), "{err}");
        let err = prices("input = 1.0").unwrap_err();
        assert!(err.contains("output"), "{err}");
        let err = prices("input = 1.0\noutput = 1.0\nsurprise = 2").unwrap_err();
        assert!(err.contains("surprise"), "{err}");
    }
}
