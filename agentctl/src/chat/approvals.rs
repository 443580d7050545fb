//! Approvals at the chat's prompt: the run's `approval_desk::ApprovalDesk` gets the keys and
//! lines typed while it asks, and its actions (notes, the question, `approval/respond`) are
//! performed here.

use std::collections::VecDeque;

use super::Chat;
use crate::approval_desk::DeskAction;
use crate::follow;

impl Chat {
    /// A line typed while an approval prompt waits, as if typed at `run`'s prompt: one key,
    /// then Enter; or, once `n` asked for a reason, the reason, then Enter. Any other line
    /// answers nothing (its letters must not pick answers).
    pub(super) async fn on_approval_line(&mut self, text: &str) {
        let Some(run) = self.run.as_mut() else {
            return;
        };
        let keys: Vec<u8> = match (run.typing_reason, text.trim().as_bytes()) {
            (true, typed) => typed.to_vec(),
            (false, [key]) => vec![*key],
            (false, _) => Vec::new(),
        };
        let mut actions = Vec::new();
        if !keys.is_empty() || run.typing_reason {
            for key in keys.into_iter().chain(std::iter::once(b'\r')) {
                actions.extend(run.desk.on_key(key));
                // Answered: the rest must not answer the next approval.
                if actions.contains(&DeskAction::ClosePrompt) {
                    break;
                }
            }
        }
        if actions.is_empty() {
            self.say("an approval is waiting: answer with one of the keys shown")
                .await;
            return;
        }
        self.perform(actions).await;
    }

    pub(super) async fn on_key(&mut self, key: u8) {
        let Some(run) = self.run.as_mut() else {
            return;
        };
        let actions = run.desk.on_key(key);
        if actions.is_empty() {
            self.say("that key answers nothing here: use one of the keys shown")
                .await;
            return;
        }
        self.perform(actions).await;
    }

    /// Do what the approval desk asks, in order.
    pub(super) async fn perform(&mut self, actions: Vec<DeskAction>) {
        let mut actions = VecDeque::from(actions);
        while let Some(action) = actions.pop_front() {
            match action {
                DeskAction::Note(text) => self.say(&text).await,
                DeskAction::Prompt { header, question } => {
                    if let Some(run) = self.run.as_mut() {
                        run.typing_reason = false;
                    }
                    // Keys answer from the moment the question can be seen.
                    self.editor.set_approval_pending(true);
                    self.say(&format!("{header}\n{question}(type the key)"))
                        .await;
                }
                DeskAction::Reprompt(question) => {
                    // `n` asked for a reason: from now on a typed line is that reason, so its
                    // letters are text again. Asked once; the desk's redraws per key are not.
                    let Some(run) = self.run.as_mut() else {
                        continue;
                    };
                    if !run.typing_reason {
                        run.typing_reason = true;
                        self.editor.set_approval_pending(false);
                        self.say(&question).await;
                    }
                }
                DeskAction::ClosePrompt => {
                    if let Some(run) = self.run.as_mut() {
                        run.typing_reason = false;
                    }
                    self.editor.set_approval_pending(false);
                }
                DeskAction::Respond {
                    approval_id,
                    decision,
                    reason,
                    policy,
                } => {
                    let Some(run) = self.run.as_mut() else {
                        continue;
                    };
                    actions.extend(
                        follow::answer_approval(
                            &self.connection,
                            &mut run.desk,
                            approval_id,
                            decision,
                            reason,
                            policy,
                        )
                        .await,
                    );
                }
                DeskAction::RespondBudget {
                    request_id,
                    decision,
                    policy,
                } => {
                    let Some(run) = self.run.as_mut() else {
                        continue;
                    };
                    actions.extend(
                        follow::answer_budget(
                            &self.connection,
                            &mut run.desk,
                            request_id,
                            decision,
                            policy,
                        )
                        .await,
                    );
                }
            }
        }
    }
}
