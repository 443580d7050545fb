//! The bound on runs a session starts for background task notifications without user input:
//! a model that starts a new background task on every `<task-notification>` would otherwise
//! keep itself running for ever. After `[tasks] max_notification_runs` such runs in a row, a
//! notification is held for the user's next prompt (`SessionState::held`) and a warning says
//! so; any input of the user (a prompt, a follow-up, a steer) starts the count again.
//! It also knows which task each held message is the notification of: the task's record keeps
//! the notification owed until a run takes the held message (`take_held`), so a daemon that
//! stops meanwhile delivers it after the restart.

use std::collections::VecDeque;

/// Runs started by notifications since the user last said something, and the cap.
#[derive(Debug)]
pub struct NotificationChain {
    /// Runs in a row started by a notification, none by the user in between.
    in_a_row: u32,
    /// `[tasks] max_notification_runs`.
    cap: u32,
    /// The task of each message held (`SessionState::held`, in the same order; None: not a
    /// task's notification).
    held_tasks: VecDeque<Option<String>>,
}

/// What to do with a notification that would start a run.
#[derive(Debug, PartialEq, Eq)]
pub enum Admission {
    /// Start the run (counted).
    Start,
    /// The cap is reached: hold the notification for the user's next prompt; the warning to
    /// record says why.
    Hold { warning: String },
}

impl NotificationChain {
    pub fn new(cap: u32) -> NotificationChain {
        NotificationChain {
            in_a_row: 0,
            cap,
            held_tasks: VecDeque::new(),
        }
    }

    /// A message was held (the notification of `task_id`, if any).
    pub fn held(&mut self, task_id: Option<String>) {
        self.held_tasks.push_back(task_id);
    }

    /// The oldest held message was dropped (too many were held): its task stays owed.
    pub fn dropped_oldest(&mut self) {
        self.held_tasks.pop_front();
    }

    /// A run took every held message: the tasks whose notifications they were.
    pub fn take_held(&mut self) -> Vec<String> {
        self.held_tasks.drain(..).flatten().collect()
    }

    /// The user said something: notifications may start runs again.
    pub fn user_input(&mut self) {
        self.in_a_row = 0;
    }

    /// A notification would start a run of the idle session.
    pub fn admit(&mut self) -> Admission {
        if self.in_a_row >= self.cap {
            return Admission::Hold {
                warning: format!(
                    "a background task's result waits for your next prompt: {} runs in a row \
                     were started by task notifications without user input (the limit, \
                     [tasks] max_notification_runs = {}); any prompt delivers it",
                    self.in_a_row, self.cap
                ),
            };
        }
        self.in_a_row += 1;
        Admission::Start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_holds_notifications_until_the_user_says_something() {
        let mut chain = NotificationChain::new(2);
        assert_eq!(chain.admit(), Admission::Start);
        assert_eq!(chain.admit(), Admission::Start);
        let Admission::Hold { warning } = chain.admit() else {
            panic!("the third run in a row was admitted")
        };
        assert!(
            warning.contains("2 runs in a row") && warning.contains("max_notification_runs = 2"),
            "{warning}"
        );
        assert!(matches!(chain.admit(), Admission::Hold { .. }));
        chain.user_input();
        assert_eq!(chain.admit(), Admission::Start);
    }

    #[test]
    fn held_tasks_follow_the_held_queue() {
        let mut chain = NotificationChain::new(2);
        chain.held(Some("task_a".to_owned()));
        chain.held(None);
        chain.held(Some("task_b".to_owned()));
        chain.dropped_oldest();
        assert_eq!(chain.take_held(), vec!["task_b".to_owned()]);
        assert!(chain.take_held().is_empty());
    }
}
