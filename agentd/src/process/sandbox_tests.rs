//! Tests of the shell sandbox's status line and environment.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;

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

/// In a child, each kind of namespace this machine allows makes the dir read-only there (a
/// file cannot be created: EROFS) and nowhere else (the daemon still writes it).
#[tokio::test]
async fn read_only_mounts_hold_in_the_child_only() {
    let dir = tempfile::tempdir().unwrap();
    let created = CString::new(dir.path().join("created").as_os_str().as_bytes()).unwrap();
    let mut worked = 0;
    for namespaces in [Namespaces::MountOnly, Namespaces::UserAndMount] {
        let mounts = read_only_mounts_of(namespaces, &[dir.path().to_path_buf()]).unwrap();
        // Only the namespace step may fail for want of privilege; then the kind is skipped.
        let unshared = super::super::try_in_child({
            let mounts = read_only_mounts_of(namespaces, &[]).unwrap();
            move || mounts.enter()
        })
        .await;
        if unshared.is_err() {
            continue;
        }
        let created = created.clone();
        let result = super::super::try_in_child(move || {
            mounts.enter()?;
            // SAFETY: open and close on a NUL-terminated path.
            let fd = unsafe { libc::open(created.as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o600) };
            if fd >= 0 {
                unsafe { libc::close(fd) };
                return Err(io::Error::other("created a file in a read-only mount"));
            }
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EROFS) => Ok(()),
                _ => Err(io::Error::last_os_error()),
            }
        })
        .await;
        assert!(result.is_ok(), "{namespaces:?}: {result:?}");
        worked += 1;
    }
    std::fs::write(dir.path().join("outside"), "still writable").unwrap();
    tracing::debug!(worked, "namespace kinds tried");
}
