//! The Unix layers: death signal, markers, records, the subreaper.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use tokio_util::sync::CancellationToken;

use super::{MARKER_VAR, fnv1a};
use crate::process::procfs;

/// The daemon's process bookkeeping, installed once at startup ([`install`]).
#[derive(Debug)]
struct Supervisor {
    /// A hash of the socket path: the same for every daemon that serves this socket, so a new
    /// daemon recognises what the one before it left.
    owner: String,
    /// Where live process groups are recorded.
    records_dir: PathBuf,
}

static SUPERVISOR: OnceLock<Supervisor> = OnceLock::new();

/// Numbers the processes started by this daemon, for their markers.
static NEXT_SPAWN: AtomicU64 = AtomicU64::new(1);

/// Processes agentd killed that are not group leaders it started (escapees); if they were
/// re-parented to the daemon, [`reap_orphans`] reaps them by pid.
static TO_REAP: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

/// Makes the daemon a child subreaper, kills what a previous daemon on `socket` left running
/// and records process groups under `state_dir` from now on. Returns how many processes were
/// killed. Blocking: call it on the blocking pool, before any tool runs.
pub fn install(state_dir: &Path, socket: &Path) -> io::Result<usize> {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only changes this process's attributes.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        tracing::warn!(error = %io::Error::last_os_error(), "cannot become a child subreaper");
    }
    let records_dir = state_dir.join("processes");
    // Records name the tools' process groups: private, like the rest of the state dir.
    agentd_core::paths::prepare_private_dir(&records_dir)
        .map_err(|error| io::Error::other(format!("{error:#}")))?;
    let owner = format!("{:016x}", fnv1a(socket.as_os_str().as_encoded_bytes()));
    let killed = kill_leftovers(&owner, &records_dir);
    if killed > 0 {
        tracing::warn!(
            killed,
            "killed processes a previous agentd left running (it did not stop cleanly)"
        );
    }
    let _ = SUPERVISOR.set(Supervisor { owner, records_dir });
    Ok(killed)
}

/// A new marker entry (`AGENTD_PROCESS=<owner>.<n>`) for a process about to be started.
pub(crate) fn new_marker() -> (String, String) {
    let owner = SUPERVISOR.get().map_or_else(
        || format!("pid{}", std::process::id()),
        |supervisor| supervisor.owner.clone(),
    );
    let spawn = NEXT_SPAWN.fetch_add(1, Ordering::Relaxed);
    (MARKER_VAR.to_owned(), format!("{owner}.{spawn}"))
}

/// Records the live group `pgid` (blocking); returns the record's path to remove it later.
pub(crate) fn record_group(pgid: i32) -> Option<PathBuf> {
    let supervisor = SUPERVISOR.get()?;
    let start_time = procfs::stat(pgid)?.start_time;
    let path = supervisor
        .records_dir
        .join(format!("{}-{pgid}", supervisor.owner));
    let record = format!("{} {start_time}\n", procfs::boot_id());
    match write_record(&path, &record) {
        Ok(()) => Some(path),
        Err(error) => {
            tracing::warn!(pgid, %error, "cannot record a process group");
            None
        }
    }
}

/// Writes a record 0600 whatever the umask (one left behind under the same name is replaced
/// and made 0600 too); never through a symlink or into anything but a regular file.
fn write_record(path: &Path, record: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut file = agentd_core::regular_file::open_with(
        path,
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(agentd_core::paths::PRIVATE_FILE_MODE),
    )?;
    file.set_permissions(std::fs::Permissions::from_mode(
        agentd_core::paths::PRIVATE_FILE_MODE,
    ))?;
    file.write_all(record.as_bytes())?;
    Ok(())
}

/// Kills every process outside group `pgid` (which was killed as a whole) whose environment
/// holds exactly `marker` (`NAME=value`): what a tool process started and left running outside
/// its group. Returns how many were killed. Blocking (a `/proc` scan).
pub(crate) fn kill_marked(marker: &str, pgid: i32) -> usize {
    let marker = marker.as_bytes();
    let killed: Vec<i32> = procfs::own_pids()
        .into_iter()
        .filter(|&pid| procfs::stat(pid).is_some_and(|stat| stat.pgid != pgid))
        .filter(|&pid| procfs::environ_any(pid, |entry| entry == marker))
        .collect();
    // Listed for reaping before the kill: a reap pass that runs on the escapee's death (its
    // SIGCHLD) must already know it, or its zombie would wait for a SIGCHLD that never comes.
    if !killed.is_empty() {
        let mut to_reap = TO_REAP
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        to_reap.get_or_insert_with(HashSet::new).extend(&killed);
    }
    for &pid in &killed {
        procfs::kill(pid);
    }
    killed.len()
}

/// Reaps orphans re-parented to the daemon each time a child exits, until `stop` fires.
pub async fn reap_orphans(stop: CancellationToken) {
    use futures::StreamExt;
    // signal-hook chains its handler with tokio's own SIGCHLD handler: both see every exit.
    let mut exits = match signal_hook_tokio::Signals::new([libc::SIGCHLD]) {
        Ok(exits) => exits,
        Err(error) => {
            tracing::warn!(%error, "cannot watch child exits; orphans are not reaped");
            return;
        }
    };
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            signal = exits.next() => if signal.is_none() { break },
        }
        if let Err(error) = tokio::task::spawn_blocking(reap_once).await {
            tracing::warn!(%error, "reaping orphans failed");
        }
    }
    exits.handle().close();
}

/// One pass: waits for each zombie child that is not a group leader (tokio's children all
/// are) or that agentd killed as an escapee. Never `waitpid(-1)`.
fn reap_once() {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let mut to_reap = TO_REAP
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let listed = to_reap.get_or_insert_with(HashSet::new);
    for pid in procfs::own_pids() {
        let Some(stat) = procfs::stat(pid) else {
            continue;
        };
        if stat.ppid != me || stat.state != 'Z' {
            continue;
        }
        if stat.pgid != pid || listed.contains(&pid) {
            let mut status = 0;
            // SAFETY: waits for one specific child of ours, without blocking.
            unsafe {
                libc::waitpid(pid, &mut status, libc::WNOHANG);
            }
        }
    }
    // Forget pids that are gone. One that is not our child yet stays listed: it is re-parented
    // to the daemon (a subreaper) when its parent dies, maybe already a zombie.
    listed.retain(|&pid| procfs::stat(pid).is_some());
}

/// Kills what a previous daemon of `owner` left: recorded groups, then marked processes.
fn kill_leftovers(owner: &str, records_dir: &Path) -> usize {
    let pids = procfs::own_pids();
    let stats: Vec<(i32, procfs::Stat)> = pids
        .iter()
        .filter_map(|&pid| procfs::stat(pid).map(|stat| (pid, stat)))
        .collect();
    let mut doomed = HashSet::new();
    let boot_id = procfs::boot_id();
    let prefix = format!("{owner}-");
    for entry in std::fs::read_dir(records_dir)
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name();
        let Some(pgid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(&prefix))
            .and_then(|pgid| pgid.parse::<i32>().ok())
        else {
            continue;
        };
        let record = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let start_time = record
            .split_once(' ')
            .filter(|(boot, _)| *boot == boot_id)
            .and_then(|(_, start)| start.trim().parse::<u64>().ok());
        // The group is the recorded one if its leader is gone (a pgid is not reused while any
        // process still has it) or is the same process (same start time, same boot).
        let leader_matches = |start_time: u64| {
            stats
                .iter()
                .find(|(pid, _)| *pid == pgid)
                .is_none_or(|(_, leader)| leader.start_time == start_time)
        };
        if let Some(start_time) = start_time.filter(|&start| leader_matches(start)) {
            doomed.extend(
                stats
                    .iter()
                    .filter(|(_, stat)| stat.pgid == pgid && stat.start_time >= start_time)
                    .map(|(pid, _)| *pid),
            );
        }
        if let Err(error) = std::fs::remove_file(entry.path()) {
            tracing::warn!(%error, record = %entry.path().display(), "cannot remove a process record");
        }
    }
    let marker_prefix = format!("{MARKER_VAR}={owner}.");
    doomed.extend(pids.iter().copied().filter(|&pid| {
        procfs::environ_any(pid, |entry| entry.starts_with(marker_prefix.as_bytes()))
    }));
    for &pid in &doomed {
        procfs::kill(pid);
    }
    doomed.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::test_support::wait_until_dead;

    /// A `sleep` in a new process group, as a previous daemon's tool would have left it.
    fn leftover_group() -> std::process::Child {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap()
    }

    #[tokio::test]
    async fn recorded_groups_of_this_boot_are_killed_and_others_are_not() {
        let records = tempfile::tempdir().unwrap();
        let mut ours = leftover_group();
        let mut other_boot = leftover_group();
        let mut other_owner = leftover_group();
        let record = |owner: &str, child: &std::process::Child, boot: &str| {
            let pgid = i32::try_from(child.id()).unwrap();
            let start = procfs::stat(pgid).unwrap().start_time;
            std::fs::write(
                records.path().join(format!("{owner}-{pgid}")),
                format!("{boot} {start}\n"),
            )
            .unwrap();
        };
        record("me", &ours, &procfs::boot_id());
        record("me", &other_boot, "another-boot");
        record("someone", &other_owner, &procfs::boot_id());

        assert_eq!(kill_leftovers("me", records.path()), 1);
        ours.wait().unwrap();
        let alive = |child: &mut std::process::Child| child.try_wait().unwrap().is_none();
        assert!(alive(&mut other_boot));
        assert!(alive(&mut other_owner));
        // Our records are gone, another owner's stays.
        let left: Vec<String> = std::fs::read_dir(records.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, [format!("someone-{}", other_owner.id())]);
        for mut child in [other_boot, other_owner] {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    #[tokio::test]
    async fn marked_processes_of_the_owner_are_killed() {
        let records = tempfile::tempdir().unwrap();
        use std::os::unix::process::CommandExt;
        // Group leaders, like every child of the daemon: the reaper test running alongside
        // never takes them.
        let mut marked = std::process::Command::new("sleep")
            .arg("30")
            .env(MARKER_VAR, "owner.7")
            .process_group(0)
            .spawn()
            .unwrap();
        let mut unmarked = std::process::Command::new("sleep")
            .arg("30")
            .env(MARKER_VAR, "ownerx.7")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = i32::try_from(marked.id()).unwrap();
        // The marker is in the environment once the child has exec'd.
        crate::process::test_support::wait_until(|| {
            procfs::environ_any(pid, |entry| entry.starts_with(MARKER_VAR.as_bytes()))
        })
        .await;
        assert_eq!(kill_leftovers("owner", records.path()), 1);
        marked.wait().unwrap();
        assert!(unmarked.try_wait().unwrap().is_none());
        unmarked.kill().unwrap();
        unmarked.wait().unwrap();
        wait_until_dead(pid).await;
    }

    /// The reaper leaves group leaders (tokio's children) alone: their exit status is tokio's.
    #[tokio::test]
    async fn the_reaper_never_takes_a_group_leader() {
        let dir = tempfile::tempdir().unwrap();
        let spec = crate::process::ProcessSpec::shell("exit 3", dir.path().to_path_buf());
        let mut child = crate::process::ChildProcess::spawn(spec).await.unwrap();
        let pid = i32::try_from(child.pid()).unwrap();
        crate::process::test_support::wait_until(|| {
            procfs::stat(pid).is_some_and(|stat| stat.state == 'Z')
        })
        .await;
        reap_once();
        assert!(procfs::stat(pid).is_some(), "the reaper took tokio's child");
        assert_eq!(child.wait().await.unwrap().code(), Some(3));
    }

    #[test]
    fn the_owner_hash_is_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
