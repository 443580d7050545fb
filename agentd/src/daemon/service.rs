//! Whether a service manager started the daemon, and as which unit: systemd marks what it
//! starts with `INVOCATION_ID` (and socket activation with `LISTEN_FDS`), but both are
//! inherited by whatever a service starts (a shell of a terminal that runs as a user service),
//! so the daemon's own cgroup must also be an `agentd…service` unit. `agentctl daemon restart`
//! asks the service manager to restart such a daemon instead of starting a second one itself.

/// The systemd unit the daemon runs as, if systemd started it. Reads the environment and
/// `/proc/self/cgroup` (small, at start, before any client).
pub fn systemd_unit() -> Option<String> {
    let marked = ["INVOCATION_ID", "LISTEN_FDS"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()));
    if !marked {
        return None;
    }
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    unit_of(&cgroup)
}

/// The agentd unit of a `/proc/self/cgroup` text: the last part of the unified hierarchy's
/// path (`0::/user.slice/…/app.slice/agentd.service`), if it is `agentd.service` or
/// `agentd@….service`.
fn unit_of(cgroup: &str) -> Option<String> {
    let path = cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .or_else(|| cgroup.lines().find_map(|line| line.split(':').nth(2)))?;
    let unit = path.trim().rsplit('/').next()?;
    let agentd =
        unit == "agentd.service" || (unit.starts_with("agentd@") && unit.ends_with(".service"));
    agentd.then(|| unit.to_owned())
}

#[cfg(test)]
mod tests {
    use super::unit_of;

    #[test]
    fn only_an_agentd_service_cgroup_is_a_service_managed_daemon() {
        let check = |cgroup: &str, expect: Option<&str>| {
            assert_eq!(unit_of(cgroup).as_deref(), expect, "{cgroup:?}");
        };
        check(
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/agentd.service\n",
            Some("agentd.service"),
        );
        check(
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/agentd@work.service\n",
            Some("agentd@work.service"),
        );
        // A shell of a terminal that runs as a user service has INVOCATION_ID too.
        check(
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/gnome-terminal-server.service\n",
            None,
        );
        check("0::/user.slice/user-1000.slice/session-2.scope\n", None);
        check(
            "12:pids:/user.slice/agentd.service\n0::/user.slice/x/agentd.service/sub\n",
            None,
        );
        check(
            "1:name=systemd:/user.slice/a/agentd.service\n",
            Some("agentd.service"),
        );
        check("", None);
    }
}
