//! Tests of the shell sandbox's status line and environment.

use super::*;

fn sandbox(config: SandboxConfig, support: Support) -> ShellSandbox {
    ShellSandbox { config, support }
}

#[test]
fn status_says_what_is_enforced() {
    let check = |network: bool, support: Support, expect: &str| {
        let config = SandboxConfig {
            network,
            ..SandboxConfig::default()
        };
        assert_eq!(sandbox(config, support).status(), expect);
    };
    check(
        true,
        Support::Landlock {
            abi: 7,
            mounts: Ok(Namespaces::MountOnly),
        },
        "landlock abi 7, read-only .agents/.claude/skills",
    );
    check(
        false,
        Support::Landlock {
            abi: 7,
            mounts: Err("no mount namespace: eperm".to_owned()),
        },
        "landlock abi 7, .agents/.claude/skills writable (no mount namespace: eperm), network denied",
    );
    check(
        false,
        Support::Landlock {
            abi: 3,
            mounts: Ok(Namespaces::UserAndMount),
        },
        "landlock abi 3, read-only .agents/.claude/skills, network allowed (denying it needs landlock abi 4)",
    );
    check(
        true,
        Support::None("the kernel has no landlock".to_owned()),
        "none: the kernel has no landlock",
    );
}

#[tokio::test]
async fn disabled_in_config_is_none_and_prepares_nothing() {
    let sandbox = Arc::new(
        ShellSandbox::probe(SandboxConfig {
            enabled: false,
            ..SandboxConfig::default()
        })
        .await,
    );
    assert_eq!(
        sandbox.status(),
        "none: disabled in config ([sandbox] enabled = false)"
    );
    assert!(sandbox.prepare(Path::new("/")).await.unwrap().is_none());
}

#[test]
fn pass_env_adds_only_listed_variables_the_daemon_has() {
    let config = SandboxConfig {
        pass_env: vec!["PATH".to_owned(), "AGENTD_UNSET_FOR_TEST_42".to_owned()],
        ..SandboxConfig::default()
    };
    let sandbox = sandbox(config, Support::None("test".to_owned()));
    let env = sandbox.shell_env(vec![("PATH".into(), "/stale".into())]);
    assert_eq!(env.len(), 1);
    assert_eq!(env[0].0, "PATH");
    assert_eq!(Some(&env[0].1), std::env::var_os("PATH").as_ref());
}
