//! Tests of the shell sandbox's status line and environment.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;

use super::*;

fn sandbox(config: SandboxConfig, support: Support) -> ShellSandbox {
    ShellSandbox {
        config,
        support,
        daemon_socket: Some(PathBuf::from("/run/user/1000/agentd/agentd.sock")),
    }
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
            mounts: Ok(Mounts::InChild),
        },
        "landlock abi 7, read-only project configuration, daemon socket hidden, signals and abstract sockets scoped",
    );
    check(
        false,
        Support::Landlock {
            abi: 7,
            mounts: Err("no mount namespace: eperm".to_owned()),
        },
        "landlock abi 7, project configuration writable and the daemon socket reachable (no mount namespace: eperm), signals and abstract sockets scoped, network denied",
    );
    check(
        false,
        Support::Landlock {
            abi: 3,
            mounts: Ok(Mounts::Helper),
        },
        "landlock abi 3, read-only project configuration, daemon socket hidden, signals and abstract sockets not scoped (needs landlock abi 6), network allowed (denying it needs landlock abi 4)",
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
        ShellSandbox::probe(
            SandboxConfig {
                enabled: false,
                ..SandboxConfig::default()
            },
            None,
        )
        .await,
    );
    assert_eq!(
        sandbox.status(),
        "none: disabled in config ([sandbox] enabled = false)"
    );
    let spec = sandbox
        .apply(ProcessSpec::shell("true", PathBuf::from("/")))
        .await
        .unwrap();
    assert!(spec.confinement.is_none());
    assert_eq!(spec.program, "sh");
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
        let unshared = try_sh({
            let mounts = read_only_mounts_of(namespaces, &[]).unwrap();
            move || mounts.enter()
        })
        .await;
        if unshared.is_err() {
            continue;
        }
        let created = created.clone();
        let result = try_sh(move || {
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
    // Where this machine lets a process make a user and mount namespace, so must we.
    let unshare_works = std::process::Command::new("unshare")
        .args(["-Um", "true"])
        .status()
        .is_ok_and(|status| status.success());
    assert!(worked > 0 || !unshare_works, "no namespace kind worked");
}

#[test]
fn gpu_devices_are_found_by_name() {
    let dev = tempfile::tempdir().unwrap();
    for name in [
        "nvidia0",
        "nvidiactl",
        "nvidia-uvm",
        "kfd",
        "null",
        "vda",
        "sda1",
    ] {
        std::fs::write(dev.path().join(name), "").unwrap();
    }
    std::fs::create_dir(dev.path().join("dri")).unwrap();
    let mut found: Vec<String> = gpu_devices(dev.path())
        .iter()
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(found, ["dri", "kfd", "nvidia-uvm", "nvidia0", "nvidiactl"]);
    assert!(gpu_devices(&dev.path().join("missing")).is_empty());
}

/// `sh -c :` with `setup` before exec.
async fn try_sh(setup: impl FnMut() -> io::Result<()> + Send + Sync + 'static) -> io::Result<()> {
    super::super::try_in_child("sh".into(), vec!["-c".into(), ":".into()], setup).await
}

#[test]
fn the_helper_plan_survives_its_arguments() {
    let plan = super::super::sandbox_exec::Plan {
        abi: 7,
        deny_network: true,
        writable: vec![PathBuf::from("/work space"), PathBuf::from("/tmp")],
        read_only: vec![PathBuf::from("/work space/.agents")],
        masked: vec![PathBuf::from("/run/agentd.sock")],
    };
    let args = plan.to_args(std::ffi::OsStr::new("sh"), &["-c".into(), "echo --".into()]);
    assert_eq!(args[0], super::super::sandbox_exec::HELPER_ARG);
    let (parsed, program, rest) =
        super::super::sandbox_exec::Plan::parse(args.into_iter().skip(1)).unwrap();
    assert_eq!(parsed, plan);
    assert_eq!(program, "sh");
    assert_eq!(rest, ["-c", "echo --"]);
    let error = super::super::sandbox_exec::Plan::parse(
        ["--abi", "x", "--", "sh"].into_iter().map(OsString::from),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "bad sandbox helper arguments: --abi needs a number"
    );
}
