//! The chat's `/diff` and `/rewind`: what a run changed, shown in the chat, and going back
//! to before a run (its files, its conversation or both), previewed first and done only when
//! the same command is typed again with `yes`. `/rewind` alone picks the run in a `picker`.

use protocol::checkpoint::*;
use protocol::methods::{SessionCheckpoints, SessionDiff, SessionRewind};

use super::Chat;
use crate::output::CommandError;
use crate::picker::{Picker, Row, RowSet};
use crate::safe_text::neutralise;

/// The most lines of a diff the chat shows; `agentctl diff` prints the rest.
const DIFF_LINES_SHOWN: usize = 400;

/// What `/rewind N …` goes back in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewindWhat {
    Both,
    Files,
    Conversation,
}

impl Chat {
    async fn runs(&mut self, session_id: &str) -> Option<SessionCheckpointsResult> {
        let params = SessionCheckpointsParams {
            session_id: session_id.to_owned(),
        };
        match self.connection.request::<SessionCheckpoints>(&params).await {
            Ok(list) => Some(list),
            Err(err) => {
                self.say(&format!("agentctl: {err}")).await;
                None
            }
        }
    }

    fn current_id(&self) -> Option<String> {
        self.session
            .as_ref()
            .map(|session| session.session_id.clone())
    }

    /// `/diff [N|all]`: the last run's changes (run N's, or the whole session's).
    pub(super) async fn diff(&mut self, which: Option<String>) {
        let Some(session_id) = self.current_id() else {
            self.say("no session yet: nothing changed").await;
            return;
        };
        let run_id = match which.as_deref() {
            Some("all") => None,
            given => {
                let Some(list) = self.runs(&session_id).await else {
                    return;
                };
                let picked = match given {
                    Some(given) => crate::commands::rewind::pick_run(&list.runs, given)
                        .map(|run| run.run_id.clone())
                        .map_err(|err| err.message),
                    None => list
                        .runs
                        .last()
                        .map(|run| run.run_id.clone())
                        .ok_or_else(|| "no run yet: nothing changed".to_owned()),
                };
                match picked {
                    Ok(run_id) => Some(run_id),
                    Err(message) => {
                        self.say(&message).await;
                        return;
                    }
                }
            }
        };
        let params = SessionDiffParams {
            session_id: session_id.clone(),
            run_id,
        };
        let result = match self.connection.request::<SessionDiff>(&params).await {
            Ok(result) => result,
            Err(err) => {
                self.say(&format!("agentctl: {err}")).await;
                return;
            }
        };
        if result.files.is_empty() {
            self.say("no changes").await;
            return;
        }
        let lines: Vec<&str> = result.diff.lines().collect();
        let mut text = lines
            .iter()
            .take(DIFF_LINES_SHOWN)
            .copied()
            .collect::<Vec<_>>()
            .join("\n");
        if lines.len() > DIFF_LINES_SHOWN || result.truncated {
            text.push_str(&format!(
                "\n… (more: `agentctl diff {session_id}{}`)",
                which.map(|n| format!(" --run {n}")).unwrap_or_default()
            ));
        }
        self.say(&text).await;
    }

    /// `/rewind`: a run picked, then its preview; `/rewind N [files|conversation]`: the
    /// preview; `… yes`: done.
    pub(super) async fn rewind(
        &mut self,
        run: Option<String>,
        what: RewindWhat,
        confirm: bool,
    ) -> Result<(), CommandError> {
        let Some(session_id) = self.current_id() else {
            self.say("no session yet: nothing to rewind").await;
            return Ok(());
        };
        let Some(list) = self.runs(&session_id).await else {
            return Ok(());
        };
        let given = match run {
            Some(given) => given,
            None => match self.pick_run(&list).await {
                Some(given) => given,
                None => return Ok(()),
            },
        };
        let run_id = match crate::commands::rewind::pick_run(&list.runs, &given) {
            Ok(run) => run.run_id.clone(),
            Err(err) => {
                self.say(&err.message).await;
                return Ok(());
            }
        };
        let params = SessionRewindParams {
            session_id: session_id.clone(),
            to_run_id: Some(run_id),
            to_seq: None,
            files: what != RewindWhat::Conversation,
            conversation: what != RewindWhat::Files,
            confirm,
            expect: None,
        };
        let result = match self.connection.request::<SessionRewind>(&params).await {
            Ok(result) => result,
            Err(err) => {
                self.say(&format!("agentctl: {err}")).await;
                return Ok(());
            }
        };
        if !confirm {
            let mut text = match &result.plan {
                Some(plan) => plan_text(plan),
                None => String::new(),
            };
            if params.conversation {
                text.push_str("the conversation goes on from before that run, in a new session\n");
            }
            let word = match what {
                RewindWhat::Both => "",
                RewindWhat::Files => " files",
                RewindWhat::Conversation => " conversation",
            };
            text.push_str(&format!("to do it: /rewind {given}{word} yes"));
            self.say(&text).await;
            return Ok(());
        }
        let mut text = String::new();
        if let Some(plan) = &result.plan {
            text.push_str(&format!(
                "files back to before run {given}: {} restored, {} removed",
                plan.restore.len(),
                plan.delete.len()
            ));
            for failure in &result.failed {
                text.push_str(&format!(
                    "\nnot restored: {}: {}",
                    failure.path, failure.error
                ));
            }
            if let Some(undo) = result.undo_seq {
                text.push_str(&format!(
                    "\nundo: agentctl rewind {session_id} --seq {undo}"
                ));
            }
        }
        if let Some(branch) = result.session_id.clone() {
            let info = super::session::session_info(&self.connection, &branch).await?;
            self.detach().await;
            self.attach(&branch, info.last_seq).await?;
            self.refresh_command_names().await;
            text.push_str(&format!(
                "\nthis chat goes on in {branch}, from before run {given}; {session_id} stays as it was"
            ));
        }
        self.say(text.trim_start()).await;
        Ok(())
    }
}

impl Chat {
    /// `/rewind` alone: the runs in a picker, newest first; the number of the run chosen
    /// (`None`: nothing to choose, or cancelled, said).
    async fn pick_run(&mut self, list: &SessionCheckpointsResult) -> Option<String> {
        if let Some(reason) = &list.reason {
            self.say(&format!("checkpoints: {reason}")).await;
        }
        if list.runs.is_empty() {
            self.say("no run yet: nothing to rewind").await;
            return None;
        }
        let rows = list
            .runs
            .iter()
            .enumerate()
            .rev()
            .map(|(index, run)| {
                let changed = match (run.changed_files, run.finished) {
                    (_, false) => "running".to_owned(),
                    (Some(n), _) => format!("{n} file(s)"),
                    (None, _) => "?".to_owned(),
                };
                let prompt = crate::render::one_line(&run.prompt);
                Row {
                    key: (index + 1).to_string(),
                    text: neutralise(&format!("{:>3}  {changed:<10}  {prompt}", index + 1))
                        .into_owned(),
                    search: String::new(),
                }
            })
            .collect();
        let sets = vec![RowSet {
            label: "back to before the run chosen (a preview first)".to_owned(),
            rows,
        }];
        // The picker has the terminal to itself: what the chat said is written first.
        self.editor.flushed().await;
        let mut picker = Picker::new("rewind", sets);
        match crate::picker::choose(&mut picker, &mut self.interrupts).await {
            Ok(Some(run)) => Some(run),
            Ok(None) => {
                self.say("(no run chosen; /rewind N [files|conversation] picks one by number)")
                    .await;
                None
            }
            Err(err) => {
                self.say(&format!("agentctl: cannot read keys: {err}"))
                    .await;
                None
            }
        }
    }
}

fn plan_text(plan: &RewindPlan) -> String {
    let mut text = String::new();
    if plan.restore.is_empty() && plan.delete.is_empty() {
        text.push_str("no file differs from that point\n");
    }
    for path in &plan.restore {
        let lost = if plan.conflicts.contains(path) {
            "  (changed since: lost)"
        } else {
            ""
        };
        text.push_str(&format!("restore  {path}{lost}\n"));
    }
    for path in &plan.delete {
        let lost = if plan.conflicts.contains(path) {
            "  (changed since: lost)"
        } else {
            ""
        };
        text.push_str(&format!("remove   {path}{lost}\n"));
    }
    for skipped in &plan.skipped {
        text.push_str(&format!("leave    {skipped}\n"));
    }
    text
}
