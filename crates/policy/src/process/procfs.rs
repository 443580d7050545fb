//! What `/proc` says about other processes: their state, parent, group and start time, and
//! whether their environment carries agentd's marker. Reads of procfs are served from kernel
//! memory; callers on the async runtime still run scans on the blocking pool.

use std::os::unix::fs::MetadataExt;

/// The fields of `/proc/<pid>/stat` agentd uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    /// `R`, `S`, `Z` (zombie), …
    pub state: char,
    pub ppid: i32,
    pub pgid: i32,
    /// Clock ticks after boot at which the process started: with the pid, its identity.
    pub start_time: u64,
}

/// `/proc/<pid>/stat`, or `None` when the process is gone.
pub(crate) fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Parses a stat line; the command name (in parentheses) may itself hold spaces and `)`.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Field 3 of proc(5) (state) is index 0 here, so field n is index n - 3.
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

/// This boot's id: process start times only compare within one boot.
pub(crate) fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|id| id.trim().to_owned())
        .unwrap_or_default()
}

/// Pids of this user's processes, except this process itself. A process that made itself
/// non-dumpable (ssh-agent, gpg-agent, anything calling `PR_SET_DUMPABLE 0`) has a `/proc`
/// entry owned by root: its real uid is read from its `status` instead.
pub(crate) fn own_pids() -> Vec<i32> {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let uid = agentd_core::regular_file::current_uid();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let owner = entry.metadata().ok()?.uid();
            let owned = owner == uid || (owner == 0 && uid != 0 && real_uid(pid) == Some(uid));
            (owned && pid != me).then_some(pid)
        })
        .collect()
}

/// The real uid of `pid`, from the `Uid:` line of its `status` (readable by everyone).
fn real_uid(pid: i32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_real_uid(&status)
}

/// The real uid in a `status` text: the first number of its `Uid:` line.
fn parse_real_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Whether one of `pid`'s environment entries (`NAME=value`) satisfies `matches`; false when
/// the process is gone or its environment cannot be read.
pub(crate) fn environ_any(pid: i32, matches: impl Fn(&[u8]) -> bool) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|environ| environ.split(|&byte| byte == 0).any(matches))
}

/// SIGKILL to one process; one that is already gone is fine.
pub(crate) fn kill(pid: i32) {
    if pid <= 1 {
        return;
    }
    // SAFETY: kill only sends a signal.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_even_with_odd_names() {
        let line = "4242 (we) ird (name)) S 1 4240 4240 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 \
                    1 0 987654 1000 10 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                state: 'S',
                ppid: 1,
                pgid: 4240,
                start_time: 987654,
            })
        );
        assert_eq!(parse_stat("1 (x) S 0"), None);
        assert_eq!(
            parse_real_uid("Name:\tssh-agent\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\n"),
            Some(1000)
        );
        assert_eq!(parse_real_uid("Name:\tx\n"), None);
        let me = i32::try_from(std::process::id()).unwrap();
        assert_eq!(real_uid(me), Some(agentd_core::regular_file::current_uid()));
        let me = stat(i32::try_from(std::process::id()).unwrap()).unwrap();
        assert!(me.ppid > 0 && me.start_time > 0, "{me:?}");
    }
}
