//! Helpers for tests of child processes, here and in the crates above (`test-support`
//! feature): whether a process is dead, and bounded polls until it is.

/// Whether `pid` is gone or a zombie (killed, waiting for init to reap it).
pub fn process_is_dead(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X'))
        })
        .unwrap_or(true)
}

/// Polls until `condition` holds, failing after a generous bound.
pub async fn wait_until(mut condition: impl FnMut() -> bool) {
    for _ in 0..500 {
        if condition() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("condition still false");
}

/// Kills a process a test left behind on purpose.
pub fn kill_for_test(pid: i32) {
    super::procfs::kill(pid);
}

/// Polls the process table until `pid` is dead, failing after a generous bound.
pub async fn wait_until_dead(pid: i32) {
    for _ in 0..500 {
        if process_is_dead(pid) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("process {pid} is still alive");
}
