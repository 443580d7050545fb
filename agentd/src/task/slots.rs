//! Run slots for subagents: at most `max_running` at once, the rest wait in a FIFO queue; a
//! writing agent also needs its workspace free of other writers (unless `parallel_writers`),
//! while read-only agents never wait for a writer. A waiter that can start is never held
//! back by an earlier one that cannot (a writer waiting for its workspace).

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use super::TaskLimits;

/// The shared scheduler state; slots hand themselves back to it on drop.
pub(super) struct Slots {
    limits: TaskLimits,
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    running: usize,
    /// Running writers per workspace.
    writers: HashMap<PathBuf, usize>,
    /// Waiters in arrival order. Bounded by the tasks that wait: one entry per `slot` call.
    queue: VecDeque<Waiter>,
}

struct Waiter {
    workspace: PathBuf,
    read_only: bool,
    grant: oneshot::Sender<Grant>,
}

/// What a granted slot holds: which workspace it writes in, if any.
pub(super) struct Grant {
    slots: Arc<Slots>,
    writes_in: Option<PathBuf>,
    /// False once handed back (a grant whose waiter had gone is undone in place).
    held: bool,
}

impl Slots {
    pub(super) fn new(limits: TaskLimits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            state: Mutex::new(SlotState::default()),
        })
    }

    /// Waits for a slot. Cancel-safe: a waiter dropped before its grant leaves the queue, and
    /// a grant sent to a dropped waiter is handed back.
    pub(super) async fn acquire(self: &Arc<Self>, workspace: &Path, read_only: bool) -> Grant {
        let receiver = {
            let mut state = self.lock();
            // Every waiter that could start has been granted at the last release, so one that
            // can start now jumps no one who could.
            if self.can_start(&state, workspace, read_only) {
                return self.take(&mut state, workspace, read_only);
            }
            let (grant, receiver) = oneshot::channel();
            state.queue.push_back(Waiter {
                workspace: workspace.to_path_buf(),
                read_only,
                grant,
            });
            receiver
        };
        match receiver.await {
            Ok(grant) => grant,
            // The sender is only dropped with the whole scheduler, which we hold.
            Err(_) => self.take(&mut self.lock(), workspace, read_only),
        }
    }

    /// How many slots are held now.
    pub(super) fn running(&self) -> usize {
        self.lock().running
    }

    fn can_start(&self, state: &SlotState, workspace: &Path, read_only: bool) -> bool {
        state.running < self.limits.max_running.max(1)
            && (read_only
                || self.limits.parallel_writers
                || state.writers.get(workspace).copied().unwrap_or(0) == 0)
    }

    fn take(self: &Arc<Self>, state: &mut SlotState, workspace: &Path, read_only: bool) -> Grant {
        state.running += 1;
        let writes_in = (!read_only).then(|| workspace.to_path_buf());
        if let Some(workspace) = &writes_in {
            *state.writers.entry(workspace.clone()).or_insert(0) += 1;
        }
        Grant {
            slots: self.clone(),
            writes_in,
            held: true,
        }
    }

    fn give_back(state: &mut SlotState, writes_in: Option<&PathBuf>) {
        state.running = state.running.saturating_sub(1);
        if let Some(workspace) = writes_in
            && let Some(count) = state.writers.get_mut(workspace)
        {
            *count = count.saturating_sub(1);
            if *count == 0 {
                state.writers.remove(workspace);
            }
        }
    }

    /// Hands slots to waiters that can start now, in arrival order.
    fn wake(self: &Arc<Self>, state: &mut SlotState) {
        let mut index = 0;
        while index < state.queue.len() {
            if state.queue[index].grant.is_closed() {
                state.queue.remove(index);
                continue;
            }
            let (workspace, read_only) = {
                let waiter = &state.queue[index];
                (waiter.workspace.clone(), waiter.read_only)
            };
            if !self.can_start(state, &workspace, read_only) {
                index += 1;
                continue;
            }
            let Some(waiter) = state.queue.remove(index) else {
                break;
            };
            let grant = self.take(state, &workspace, read_only);
            if let Err(mut grant) = waiter.grant.send(grant) {
                // The waiter went away between the check and the send: undo in place.
                grant.held = false;
                Self::give_back(state, grant.writes_in.as_ref());
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        if !self.held {
            return;
        }
        self.held = false;
        let slots = self.slots.clone();
        let mut state = slots.lock();
        Slots::give_back(&mut state, self.writes_in.as_ref());
        slots.wake(&mut state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn limits(max_running: usize, parallel_writers: bool) -> TaskLimits {
        TaskLimits {
            max_running,
            parallel_writers,
        }
    }

    /// Whether the future is still waiting after the runtime had a chance to run it.
    async fn granted_now(slots: &Arc<Slots>, workspace: &str, read_only: bool) -> Option<Grant> {
        tokio::time::timeout(
            Duration::ZERO,
            slots.acquire(Path::new(workspace), read_only),
        )
        .await
        .ok()
    }

    #[tokio::test]
    async fn the_cap_queues_the_rest_in_order() {
        let slots = Slots::new(limits(2, false));
        let first = granted_now(&slots, "/a", true).await;
        let second = granted_now(&slots, "/b", true).await;
        assert!(first.is_some() && second.is_some());
        let waiting_third = tokio::spawn({
            let slots = slots.clone();
            async move { slots.acquire(Path::new("/c"), true).await }
        });
        tokio::task::yield_now().await;
        assert!(
            granted_now(&slots, "/d", true).await.is_none(),
            "the cap holds"
        );
        assert_eq!(slots.running(), 2);
        drop(first);
        let third = waiting_third.await.ok();
        assert!(third.is_some(), "the first waiter got the freed slot");
        assert_eq!(slots.running(), 2);
        drop((second, third));
        assert_eq!(slots.running(), 0);
    }

    #[tokio::test]
    async fn one_writer_per_workspace_but_readers_pass() {
        let slots = Slots::new(limits(4, false));
        let writer = granted_now(&slots, "/w", false).await;
        assert!(writer.is_some());
        let second_writer = tokio::spawn({
            let slots = slots.clone();
            async move { slots.acquire(Path::new("/w"), false).await }
        });
        tokio::task::yield_now().await;
        assert!(
            granted_now(&slots, "/w", true).await.is_some(),
            "readers never wait"
        );
        assert!(
            granted_now(&slots, "/other", false).await.is_some(),
            "other workspace"
        );
        assert!(!second_writer.is_finished());
        drop(writer);
        assert!(second_writer.await.is_ok());
    }

    #[tokio::test]
    async fn parallel_writers_when_configured_and_dropped_waiters_leave() {
        let slots = Slots::new(limits(1, true));
        let first = granted_now(&slots, "/w", false).await;
        assert!(first.is_some());
        // A waiter that gives up leaves the queue and its grant is not lost.
        assert!(granted_now(&slots, "/w", false).await.is_none());
        drop(first);
        assert_eq!(slots.running(), 0);
        let again = granted_now(&slots, "/w", false).await;
        assert!(again.is_some());
        assert_eq!(slots.running(), 1);
    }
}
