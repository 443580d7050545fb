//! What a daemon restart shows: the run suspended (`runSuspended`) and resumed (`runResumed`),
//! and the message it was streaming, which is never completed (the resumed run asks the model
//! again), left on a line of its own so the new answer does not continue it.

use super::{Output, Renderer};

impl Renderer {
    /// The caller follows the run across a restart of the daemon (`follow` waits for it to
    /// come back): `runSuspended` then says so instead of pointing at `agentctl attach`.
    pub fn set_follows_across_restarts(&mut self, follows: bool) {
        self.follows_across_restarts = follows;
    }

    /// What the caller follows, for its own notes: "the run" or "the session".
    pub fn following(&self) -> &'static str {
        match &self.mode {
            super::Mode::Run { .. }
            | super::Mode::Attach {
                until: super::AttachUntil::RunFinished(_),
            } => "the run",
            super::Mode::Attach { .. } => "the session",
        }
    }

    pub(super) fn run_suspended(&mut self, session_id: &str, run_id: &str, out: &mut Vec<Output>) {
        self.drop_cut_message(run_id, out);
        let line = if self.follows_across_restarts {
            "the daemon is stopping: this run resumes when it starts again".to_owned()
        } else {
            format!(
                "the daemon is stopping: this run resumes when it starts again (follow it with `agentctl attach {session_id}`)"
            )
        };
        self.stderr_line(&line, out);
    }

    pub(super) fn run_resumed(
        &mut self,
        run_id: &str,
        attempt: u32,
        interrupted_tool_calls: usize,
        out: &mut Vec<Output>,
    ) {
        // After a crash nothing said the run stopped: its cut message ends here.
        self.drop_cut_message(run_id, out);
        let interrupted = match interrupted_tool_calls {
            0 => String::new(),
            1 => "; 1 tool call was interrupted and is not run again".to_owned(),
            n => format!("; {n} tool calls were interrupted and are not run again"),
        };
        self.stderr_line(
            &format!("resumed after a daemon restart (resume {attempt} of at most 2){interrupted}"),
            out,
        );
    }

    /// The text streamed of `run_id`'s message in progress will never be completed: forget it
    /// (its `messageCompleted` would not start with it) and end its line.
    fn drop_cut_message(&mut self, run_id: &str, out: &mut Vec<Output>) {
        self.activity.stop_thinking();
        if self
            .streamed
            .remove(run_id)
            .is_some_and(|text| !text.is_empty())
        {
            self.end_stdout_line(out);
        }
    }
}
