//! `/hooks`: the hooks a session in a directory loads (the user's `[hooks]`, each project
//! settings file's, as `session::hooks` loads them for a run), grouped by where each comes
//! from, with whether it runs and, when it does not, why (a project file's hooks run only once
//! the project is trusted with that very content).

use std::path::Path;

use crate::state::DaemonState;

/// Hook commands listed; the rest is counted.
const HOOKS_LISTED: usize = 100;

/// The hooks found for `cwd`, source by source.
pub(super) async fn describe(state: &DaemonState, cwd: &str) -> String {
    let listings = state.sessions.hooks_for(Path::new(cwd)).await;
    if listings.is_empty() {
        return "no hooks: neither your config.toml nor the project's settings files have `hooks`"
            .to_owned();
    }
    let mut lines = Vec::new();
    let mut source: Option<&str> = None;
    for listing in listings.iter().take(HOOKS_LISTED) {
        if source != Some(listing.source.as_str()) {
            source = Some(&listing.source);
            let whose = if listing.source == "config" {
                "your config.toml".to_owned()
            } else {
                listing.source.clone()
            };
            lines.push(whose);
        }
        let matcher = match listing.matcher.as_str() {
            "" | "*" => String::new(),
            matcher => format!(" [{matcher}]"),
        };
        let runs = match &listing.note {
            None => "runs".to_owned(),
            Some(note) => format!("does not run: {note}"),
        };
        lines.push(format!(
            "  {}{matcher}: {} (timeout {} s; {runs})",
            listing.event, listing.command, listing.timeout_secs
        ));
    }
    if listings.len() > HOOKS_LISTED {
        lines.push(format!("… {} more", listings.len() - HOOKS_LISTED));
    }
    lines.join("\n")
}
