//! The permission inputs of a run, gathered when it starts: user rules (config.toml and the
//! "always allow" rules added since startup), project rules (read now), the session's own
//! rules and its remembered "allow for session" answers.

use super::{SessionDeps, SessionManager, SessionShared};
use crate::store::SessionHeader;

impl SessionManager {
    /// The rules `session`'s next run would go with (user, project and session layers merged,
    /// each rule with its source), and the problems the project's settings have (`/permissions`).
    pub async fn permissions_in_force(
        &self,
        session: &super::actor::Session,
    ) -> anyhow::Result<(agentd_policy::permission::RuleSet, Vec<String>)> {
        let config = self.deps.config.snapshot().map_err(anyhow::Error::msg)?;
        let (permissions, warnings) =
            run_permissions(&session.header, &session.shared, &self.deps, &config).await?;
        Ok((permissions.rules, warnings))
    }
}

/// The permission inputs of a run: user rules (config), project rules (read now, so edits
/// apply to the next run; problems are returned as warnings for the run to announce), the
/// session's own rules and remembered "allow for session" answers.
pub(super) async fn run_permissions(
    header: &SessionHeader,
    shared: &SessionShared,
    deps: &SessionDeps,
    config: &crate::config::Config,
) -> anyhow::Result<(agentd_agent::gate::RunPermissions, Vec<String>)> {
    use agentd_policy::permission::{RuleList, RuleSet, RuleSource, load_project_settings};
    let cwd = std::path::PathBuf::from(&header.cwd);
    let trust = deps.trust.clone();
    let (project, project_trust) = tokio::task::spawn_blocking(move || {
        let project_trust = trust.project(&agentd_policy::trust::project_root(&cwd));
        (load_project_settings(&cwd, &project_trust), project_trust)
    })
    .await?;
    let mut warnings = Vec::new();
    let project_rules = match project {
        Ok(settings) => {
            warnings.extend(
                settings
                    .withheld
                    .iter()
                    .map(|withheld| withheld_allow_warning(withheld, &project_trust)),
            );
            warnings.extend(
                settings
                    .errors
                    .iter()
                    .map(|error| format!("ignored permission rule: {error}")),
            );
            warnings.extend(
                settings
                    .refused
                    .iter()
                    .map(|refusal| format!("project settings not used: {refusal}")),
            );
            settings.rules
        }
        Err(err) => {
            warnings.push(format!("project settings not used: {err}"));
            RuleSet::default()
        }
    };
    let session = &header.permission_rules;
    let (mut session_rules, _) = RuleSet::parse(
        &RuleSource::session(),
        &session.allow,
        &session.ask,
        &session.deny,
    );
    let remembered = shared.lock().remembered_allow_rules.clone();
    for text in remembered {
        if let Ok(rule) =
            agentd_policy::permission::Rule::parse(&text, RuleSource::session(), RuleList::Allow)
        {
            session_rules.push(rule);
        }
    }
    // The user layer: config.toml as loaded at startup, plus the rules "always allow"
    // appended to it since (the config is not reloaded).
    let mut user_rules = config.permissions.rules.clone();
    let user_source = RuleSource::file(
        agentd_policy::permission::RuleLayer::User,
        &deps.paths.config,
    );
    let added = deps
        .approvals
        .always_rules()
        .into_iter()
        .map(|text| (text, RuleList::Allow));
    let denied = deps
        .approvals
        .never_rules()
        .into_iter()
        .map(|text| (text, RuleList::Deny));
    for (text, list) in added.chain(denied) {
        if let Ok(rule) = agentd_policy::permission::Rule::parse(&text, user_source.clone(), list) {
            user_rules.push(rule);
        }
    }
    let permissions = agentd_agent::gate::RunPermissions {
        mode: header.permission_mode.into(),
        rules: RuleSet::merge([user_rules, project_rules, session_rules]),
        home: directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf()),
        // The config refuses larger values; the bound holds for a `Config` built in code too.
        approval_timeout: std::time::Duration::from_secs(
            config
                .permissions
                .approval_timeout_secs
                .min(crate::config::MAX_APPROVAL_TIMEOUT_SECS),
        ),
        broker: deps.approvals.clone(),
        elicitations: deps.elicitations.clone(),
        task_label: header.task_id.clone().zip(header.agent_type.clone()),
        hold_approvals: false,
        parent_run_id: None,
        prior: Default::default(),
    };
    Ok((permissions, warnings))
}

/// The most allow rules an untrusted project's warning names (the rest are counted): the
/// warning is one readable line, however many rules a repository lists.
const MAX_RULES_NAMED_IN_WARNING: usize = 10;

/// The warning of a run whose project has a settings file with allow rules the user has not
/// trusted in this content: which file, which rules wait, and how to review and trust them.
fn withheld_allow_warning(
    withheld: &agentd_policy::permission::WithheldSettings,
    project: &agentd_policy::trust::ProjectTrust,
) -> String {
    let mut rules: Vec<&str> = withheld
        .allow
        .iter()
        .take(MAX_RULES_NAMED_IN_WARNING)
        .map(String::as_str)
        .collect();
    let more = withheld
        .allow
        .len()
        .saturating_sub(MAX_RULES_NAMED_IN_WARNING);
    let more_text = format!("{more} more");
    if more > 0 {
        rules.push(&more_text);
    }
    format!(
        "{}, so the allow rules of {} are not applied ({}); its deny and ask rules are. To \
         apply them, {}",
        project.why_withheld(&withheld.path, withheld.verdict),
        withheld.path.display(),
        rules.join(", "),
        project.how_to_trust()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_policy::permission::WithheldSettings;
    use agentd_policy::trust::{FileTrust, ProjectTrust};

    #[test]
    fn the_withheld_warning_names_the_file_a_few_rules_and_counts_the_rest() {
        let withheld = WithheldSettings {
            path: std::path::PathBuf::from("/src/app/.claude/settings.json"),
            verdict: FileTrust::Untrusted,
            allow: (0..25).map(|n| format!("Bash(tool{n}:*)")).collect(),
        };
        let project = ProjectTrust::untrusted(std::path::Path::new("/src/app"));
        let warning = withheld_allow_warning(&withheld, &project);
        assert!(warning.contains("Bash(tool9:*), 15 more)"), "{warning}");
        assert!(!warning.contains("tool10"), "{warning}");
        assert!(
            warning.contains("/src/app/.claude/settings.json"),
            "{warning}"
        );
        assert!(
            warning.contains("agentctl trust --show /src/app"),
            "{warning}"
        );
        assert!(warning.contains("`agentctl trust /src/app`"), "{warning}");
    }
}
