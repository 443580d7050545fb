//! `/permissions`: the permission rules a session's next run goes with (as `run_permissions`
//! gathers them: config.toml and its "always" answers, the project's settings files, the
//! session's own rules and "allow for session" answers), deny first, each with its layer and
//! the file it comes from, and the problems the project's settings have.

use std::sync::Arc;

use agentd_policy::permission::{Rule, RuleLayer, RuleSet};
use protocol::approval::PermissionMode;

use super::super::{RpcResult, rpc_error};
use crate::session::actor::Session;
use crate::state::DaemonState;

/// Rules listed; the rest is counted.
const RULES_LISTED: usize = 200;

pub(super) async fn describe(state: &DaemonState, session: &Arc<Session>) -> RpcResult<String> {
    let (rules, warnings) = state
        .sessions
        .permissions_in_force(session)
        .await
        .map_err(|err| rpc_error(protocol::error::INTERNAL_ERROR, format!("{err:#}")))?;
    Ok(text(session.settings().permission_mode, &rules, &warnings))
}

fn layer_name(layer: RuleLayer) -> &'static str {
    match layer {
        RuleLayer::User => "user",
        RuleLayer::Project => "project",
        RuleLayer::Session => "session",
    }
}

fn text(mode: PermissionMode, rules: &RuleSet, warnings: &[String]) -> String {
    let mut lines = vec![format!(
        "mode {} (/mode changes it); deny rules win over ask, ask over allow",
        mode.as_str()
    )];
    let listed: Vec<(&str, &Rule)> = [
        ("deny", &rules.deny),
        ("ask", &rules.ask),
        ("allow", &rules.allow),
    ]
    .into_iter()
    .flat_map(|(list, rules)| rules.iter().map(move |rule| (list, rule)))
    .collect();
    if listed.is_empty() {
        lines.push(
            "no rules: what the mode does not allow is asked ([permissions] of config.toml, \
             .agents/settings.toml)"
                .to_owned(),
        );
    }
    let width = listed
        .iter()
        .take(RULES_LISTED)
        .map(|(_, rule)| rule.text.chars().count())
        .max()
        .unwrap_or(0);
    for (list, rule) in listed.iter().take(RULES_LISTED) {
        let origin = match rule.source.layer {
            // A session's rules have no file.
            RuleLayer::Session => String::new(),
            _ => format!("  {}", rule.source.origin),
        };
        lines.push(format!(
            "{list:5}  {:width$}  {}{origin}",
            rule.text,
            layer_name(rule.source.layer),
        ));
    }
    if listed.len() > RULES_LISTED {
        lines.push(format!("… {} more", listed.len() - RULES_LISTED));
    }
    lines.extend(warnings.iter().map(|warning| format!("warning: {warning}")));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_policy::permission::RuleSource;
    use std::path::Path;

    #[test]
    fn rules_are_listed_deny_first_with_their_layer_and_file() {
        let user = RuleSource::file(RuleLayer::User, Path::new("/c/config.toml"));
        let (mut rules, errors) = RuleSet::parse(
            &user,
            &["Bash(git log:*)".to_owned()],
            &[],
            &["Bash(rm -rf:*)".to_owned()],
        );
        assert!(errors.is_empty(), "{errors:?}");
        let (session, _) =
            RuleSet::parse(&RuleSource::session(), &["read_file".to_owned()], &[], &[]);
        rules = RuleSet::merge([rules, session]);
        let shown = text(PermissionMode::Default, &rules, &["a warning".to_owned()]);
        let lines: Vec<&str> = shown.lines().collect();
        assert!(lines[0].starts_with("mode default"), "{shown}");
        assert_eq!(lines[1], "deny   Bash(rm -rf:*)   user  /c/config.toml");
        assert_eq!(lines[2], "allow  Bash(git log:*)  user  /c/config.toml");
        assert_eq!(lines[3], "allow  read_file        session");
        assert_eq!(lines[4], "warning: a warning");
        let none = text(PermissionMode::Plan, &RuleSet::default(), &[]);
        assert!(none.contains("no rules"), "{none}");
    }
}
