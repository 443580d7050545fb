//! Approvals at the chat's prompt: the run's `approval_desk::ApprovalDesk` gets the keys and
//! lines typed while it asks, and its actions (notes, the question, `approval/respond`) are
//! performed here.

use std::collections::VecDeque;

use super::Chat;
use crate::approval_desk::DeskAction;
use crate::follow;

impl Chat {
    /// A line typed while an approval prompt waits: one of the keys shown alone on the line
    /// (then Enter) answers; once `n` asked for a reason, the line is that reason. Any other
    /// text is a message, never an answer: it goes to the run as a steer (its letters must not
    /// pick answers: `sure, go ahead` is not `s`), and the approval still waits.
    pub(super) async fn on_approval_line(&mut self, text: &str) {
        let Some(run) = self.run.as_mut() else {
            return;
        };
        if run.desk.is_asking_question() {
            // A server's question: each line answers one field (empty: its default).
            let mut actions = Vec::new();
            for key in text.trim().bytes().chain([b'\r']) {
                actions.extend(run.desk.on_key(key));
                if actions.contains(&DeskAction::ClosePrompt) {
                    break;
                }
            }
            // Only the form's last redraw is worth a line.
            let last = actions
                .iter()
                .rposition(|action| matches!(action, DeskAction::Reprompt(_)));
            let actions = actions
                .into_iter()
                .enumerate()
                .filter(|(at, action)| {
                    !matches!(action, DeskAction::Reprompt(_)) || Some(*at) == last
                })
                .map(|(_, action)| action)
                .collect();
            self.perform(actions).await;
            return;
        }
        let keys: Vec<u8> = match (run.typing_reason, text.trim().as_bytes()) {
            (true, typed) => typed.to_vec(),
            (false, [key]) => vec![*key],
            (false, _) => Vec::new(),
        };
        if keys.is_empty() && !run.typing_reason {
            if !text.trim().is_empty() {
                self.steer(text.trim().to_owned()).await;
            }
            self.say("the approval still waits: type one of the keys shown, then Enter")
                .await;
            return;
        }
        // A key answers (or asks for a reason) by itself; a reason ends with its Enter.
        let enter = run.typing_reason.then_some(b'\r');
        let mut actions = Vec::new();
        for key in keys.into_iter().chain(enter) {
            actions.extend(run.desk.on_key(key));
            // Answered: the rest must not answer the next approval.
            if actions.contains(&DeskAction::ClosePrompt) {
                break;
            }
        }
        if actions.is_empty() {
            self.say("that key answers nothing here: type one of the keys shown, then Enter")
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
                    let mut hint = "(type the key, then Enter)";
                    if let Some(run) = self.run.as_mut() {
                        run.typing_reason = false;
                        if run.desk.is_asking_question() {
                            hint = "(type the answer, then Enter; an empty line takes the default)";
                        }
                    }
                    self.say(&format!("{header}\n{question}{hint}")).await;
                }
                DeskAction::Reprompt(question)
                    if self
                        .run
                        .as_ref()
                        .is_some_and(|run| run.desk.is_asking_question()) =>
                {
                    self.say(&question).await;
                }
                DeskAction::Reprompt(question) => {
                    // `n` asked for a reason: from now on a typed line is that reason, so its
                    // letters are text again. Asked once; the desk's redraws per key are not.
                    let Some(run) = self.run.as_mut() else {
                        continue;
                    };
                    if !run.typing_reason {
                        run.typing_reason = true;
                        self.say(&question).await;
                    }
                }
                DeskAction::ClosePrompt => {
                    if let Some(run) = self.run.as_mut() {
                        run.typing_reason = false;
                    }
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
                DeskAction::RespondQuestion {
                    elicitation_id,
                    action,
                    content,
                } => {
                    let Some(run) = self.run.as_mut() else {
                        continue;
                    };
                    actions.extend(
                        follow::answer_question(
                            &self.connection,
                            &mut run.desk,
                            elicitation_id,
                            action,
                            content,
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
