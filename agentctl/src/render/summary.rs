//! The line `agentctl run` prints after its run: tokens in, cached and out, steps, duration,
//! and the cost when the daemon priced the run (`runFinished.costUsd`); `~` before counts the
//! daemon estimated (`usage.estimated`: the provider reported none).

use std::time::Duration;

use protocol::event::Usage;

use super::format_duration;

/// `tokens 1200 in (1000 cached) · 56 out · 3 steps · 4.2 s · $0.0123`.
pub fn after_run_line(
    usage: &Usage,
    steps: u32,
    duration: Option<Duration>,
    cost_usd: Option<f64>,
    context: Option<Gauge>,
) -> String {
    let mut parts = Vec::new();
    let about = if usage.estimated { "~" } else { "" };
    let mut tokens = format!("tokens {about}{} in", usage.input_tokens);
    if usage.cached_input_tokens > 0 {
        tokens.push_str(&format!(" ({} cached)", usage.cached_input_tokens));
    }
    parts.push(tokens);
    parts.push(format!("{about}{} out", usage.output_tokens));
    parts.push(match steps {
        1 => "1 step".to_owned(),
        steps => format!("{steps} steps"),
    });
    if let Some(duration) = duration {
        parts.push(format_duration(duration.as_millis() as u64));
    }
    if let Some(gauge) = context.filter(|gauge| gauge.context.window > 0) {
        let Context { used, window } = gauge.context;
        let percent = used.saturating_mul(100) / window;
        let bar = match gauge.bar_cells {
            0 => String::new(),
            cells => format!("{} ", bar(used, window, cells)),
        };
        parts.push(format!(
            "context {bar}{}% of {}",
            percent.min(999),
            tokens_short(window)
        ));
    }
    if let Some(cost) = cost_usd.filter(|cost| cost.is_finite() && *cost >= 0.0) {
        parts.push(format!("${cost:.4}"));
    }
    parts.join(" · ")
}

/// How full the model's context window was at the run's last model call (`usageUpdated`: that
/// call's input and output tokens, and the window).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Context {
    pub used: u64,
    pub window: u64,
}

/// The context gauge of the after-run line: how full, and how wide its bar is (0: none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gauge {
    pub context: Context,
    pub bar_cells: usize,
}

/// `██░░░░░░`: `used` of `window` as `cells` cells, filled ones first (a full window fills
/// them all, any use at least one).
pub fn bar(used: u64, window: u64, cells: usize) -> String {
    let filled = if window == 0 {
        0
    } else {
        let exact = u128::from(used) * cells as u128 / u128::from(window);
        let at_least_one = usize::from(used > 0);
        (exact as usize).max(at_least_one).min(cells)
    };
    format!("{}{}", "█".repeat(filled), "░".repeat(cells - filled))
}

/// `128k`, `1M`, `8192`.
pub fn tokens_short(tokens: u64) -> String {
    match tokens {
        t if t >= 1_000_000 && t % 1_000_000 == 0 => format!("{}M", t / 1_000_000),
        t if t >= 1_000 => format!("{}k", t / 1_000),
        t => t.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_gauge_says_how_full_the_window_was() {
        let line = after_run_line(
            &Usage::default(),
            1,
            None,
            None,
            Some(Gauge {
                bar_cells: 0,
                context: Context {
                    used: 96_000,
                    window: 128_000,
                },
            }),
        );
        assert_eq!(line, "tokens 0 in · 0 out · 1 step · context 75% of 128k");
        assert_eq!(tokens_short(1_000_000), "1M");
        assert_eq!(tokens_short(8192), "8k");
        assert_eq!(tokens_short(500), "500");
        let with_bar = after_run_line(
            &Usage::default(),
            1,
            None,
            None,
            Some(Gauge {
                bar_cells: 8,
                context: Context {
                    used: 32_000,
                    window: 128_000,
                },
            }),
        );
        assert!(
            with_bar.ends_with("context ██░░░░░░ 25% of 128k"),
            "{with_bar}"
        );
    }

    #[test]
    fn the_bar_shows_any_use_and_never_overflows() {
        assert_eq!(bar(0, 100, 4), "░░░░");
        assert_eq!(bar(1, 100, 4), "█░░░");
        assert_eq!(bar(100, 100, 4), "████");
        assert_eq!(bar(500, 100, 4), "████");
        assert_eq!(bar(5, 0, 3), "░░░");
    }

    #[test]
    fn the_after_run_line_names_tokens_steps_duration_and_cost_when_known() {
        let usage = Usage {
            input_tokens: 1200,
            output_tokens: 56,
            cached_input_tokens: 1000,
            cache_creation_input_tokens: 0,
            estimated: false,
        };
        assert_eq!(
            after_run_line(
                &usage,
                3,
                Some(Duration::from_millis(4200)),
                Some(0.01234),
                Some(Gauge {
                    bar_cells: 0,
                    context: Context {
                        used: 1256,
                        window: 128_000,
                    },
                })
            ),
            "tokens 1200 in (1000 cached) · 56 out · 3 steps · 4.2 s · context 0% of 128k · $0.0123"
        );
        assert_eq!(
            after_run_line(&Usage::default(), 1, None, None, None),
            "tokens 0 in · 0 out · 1 step"
        );
        let estimated = Usage {
            input_tokens: 900,
            output_tokens: 12,
            estimated: true,
            ..Usage::default()
        };
        assert_eq!(
            after_run_line(&estimated, 1, None, None, None),
            "tokens ~900 in · ~12 out · 1 step"
        );
    }
}
