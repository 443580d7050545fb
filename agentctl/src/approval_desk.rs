//! The approvals of `agentctl run`'s own run and of the child tasks that run started
//! (`PendingApproval.parentRunId`), and its pauses at a budget (`budgetExceeded`, asked the
//! same way: `approval_desk::ask`): a pure state machine that takes events, key presses and
//! failed answers and says what to do (print, answer, prompt, stop prompting). `follow`
//! performs the actions; no I/O here. A standing `--approve` policy never raises a budget:
//! `wait` leaves the pause for another client, the others stop the run. Across a lost
//! connection and a daemon restart (`approval_desk::restart`): nothing is prompted while
//! disconnected, what was asked is asked again once the replay is through, and an approval the
//! daemon asks again gets the answer already given.

use std::collections::{HashMap, HashSet, VecDeque};

use protocol::approval::{ApprovalDecision, PendingApproval};
use protocol::budget::{BudgetDecision, BudgetKind, BudgetRequest};
use protocol::error::{ALREADY_DECIDED, NOT_FOUND};
use protocol::event::Event;

use crate::approval_view::{asked_by, wait_line, what};
use crate::approve_policy::{
    ApprovePolicy, Handling, KeyAction, PERSON_ONLY_REASON, decide, decision_words, key_action,
};
use crate::ids::short;
/// A budget's amount in its unit (`$0.1000`, `2000 tokens`, `60 s`), for the lists.
pub(crate) use ask::amount as budget_amount;
use ask::{Ask, budget_key, budget_resolved_line, budget_wait_line, question_wait_line};
use protocol::elicitation::{ElicitationAction, ElicitationRequest};

/// Longest reason a person may type after `n` (bytes): it goes to the model.
const REASON_MAX_BYTES: usize = 1000;

/// The question while a denial's reason is typed.
const REASON_QUESTION: &str = "why not? (told to the model; Enter sends, empty for none): ";

/// Something `follow` must do for the desk, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum DeskAction {
    /// A line on stderr.
    Note(String),
    /// Send `approval/respond`.
    Respond {
        approval_id: String,
        decision: ApprovalDecision,
        reason: Option<String>,
        /// The `--approve` policy that answered (`--approve never`); `None` for a person.
        policy: Option<String>,
    },
    /// Show `header` as a line and `question` as the prompt, and start reading keys.
    Prompt { header: String, question: String },
    /// Keep reading keys; the prompt line now says `question` (the reason typed so far).
    Reprompt(String),
    /// Stop reading keys and erase the prompt.
    ClosePrompt,
    /// Send `elicitation/respond`.
    RespondQuestion {
        elicitation_id: String,
        action: ElicitationAction,
        content: Option<serde_json::Map<String, serde_json::Value>>,
    },
    /// Send `budget/respond` (`continue` with the suggested limit, or `stop`).
    RespondBudget {
        request_id: String,
        decision: BudgetDecision,
        /// The `--approve` policy that answered; `None` for a person.
        policy: Option<String>,
    },
}

/// The approvals of one run (`run`), or of every run of a session (`attach`).
#[derive(Debug)]
pub struct ApprovalDesk {
    /// The run whose approvals are ours, with its children's; `None`: every run of the session.
    run_id: Option<String>,
    /// The runs of the child tasks our run started whose approvals we saw: their
    /// resolutions are ours too.
    child_runs: HashSet<String>,
    handling: Handling,
    /// `attach` replays the session first: requests are only queued (and resolutions take
    /// them back) until the replay reaches this seq, then what is still pending is prompted.
    held_until: Option<u64>,
    /// The approval or budget pause the prompt shows.
    prompting: Option<Ask>,
    /// `n` was pressed for the prompted approval: the reason typed so far (bytes, so a
    /// character typed in several reads stays whole).
    typing_reason: Option<Vec<u8>>,
    /// Approvals asked while another was prompted, oldest first (parallel tool calls).
    queued: VecDeque<Ask>,
    /// What this client answered, by approval id, until its resolution is seen: the agreeing
    /// resolution announces a key's answer once it is final; one that differs was decided
    /// elsewhere first; the daemon asking again (after a restart) gets the same answer.
    answered: HashMap<String, Answer>,
    /// Approval and budget request ids seen, so a replayed request is not handled twice.
    seen: HashSet<String>,
    /// Approvals whose resolution was seen: never asked again.
    decided: HashSet<String>,
    /// Approvals whose `approval needed` line `attach`'s replay showed: their prompt does not
    /// repeat it.
    noted: HashSet<String>,
    /// The kind of each budget pause seen, to word its resolution.
    budget_kinds: HashMap<String, BudgetKind>,
    /// The connection was lost and made again since the desk started: an answer the daemon
    /// does not know (yet) is kept for when it asks again, not reported.
    reconnected: bool,
}

/// An answer this client sent (or tried to send).
#[derive(Clone, Debug)]
struct Answer {
    decision: ApprovalDecision,
    reason: Option<String>,
    /// The `--approve` policy that answered; `None` for a person.
    policy: Option<String>,
    /// Its line was already shown (a policy's): the resolution says nothing more.
    announced: bool,
}

impl ApprovalDesk {
    pub fn new(run_id: String, handling: Handling) -> ApprovalDesk {
        ApprovalDesk::with_scope(Some(run_id), handling, None)
    }

    /// The desk of `attach`: every run of the session, prompting once the replay has reached
    /// `replay_end` (the session's last seq when attaching).
    pub fn for_session(handling: Handling, replay_end: u64) -> ApprovalDesk {
        ApprovalDesk::with_scope(None, handling, Some(replay_end))
    }

    fn with_scope(
        run_id: Option<String>,
        handling: Handling,
        held_until: Option<u64>,
    ) -> ApprovalDesk {
        ApprovalDesk {
            run_id,
            child_runs: HashSet::new(),
            handling,
            held_until,
            prompting: None,
            typing_reason: None,
            queued: VecDeque::new(),
            answered: HashMap::new(),
            seen: HashSet::new(),
            decided: HashSet::new(),
            noted: HashSet::new(),
            budget_kinds: HashMap::new(),
            reconnected: false,
        }
    }

    /// Whether the prompt is up (keys are wanted).
    pub fn is_prompting(&self) -> bool {
        self.prompting.is_some()
    }

    /// Whether the prompt is an MCP server's question (a form: lines are answers).
    pub fn is_asking_question(&self) -> bool {
        matches!(self.prompting, Some(Ask::Question { .. }))
    }

    /// One event of the session (each once, in order).
    pub fn on_event(&mut self, event: &Event) -> Vec<DeskAction> {
        match event {
            Event::ApprovalRequested { run_id, approval }
                if self.is_ours(run_id) || self.is_our_child(approval) =>
            {
                if self.run_id.is_some() && !self.is_ours(run_id) {
                    self.child_runs.insert(run_id.clone());
                }
                if !self.seen.insert(approval.approval_id.clone()) {
                    return self.asked_again(approval);
                }
                self.requested(approval.clone())
            }
            Event::BudgetExceeded { run_id, request }
                if self.is_ours(run_id)
                    || self.is_our_child_run(request.parent_run_id.as_deref()) =>
            {
                if self.run_id.is_some() && !self.is_ours(run_id) {
                    self.child_runs.insert(run_id.clone());
                }
                if !self.seen.insert(request.request_id.clone()) {
                    return Vec::new();
                }
                self.budget_kinds
                    .insert(request.request_id.clone(), request.budget);
                self.budget_requested(run_id, request.clone())
            }
            Event::BudgetResolved {
                run_id,
                request_id,
                decision,
                decided_by,
                new_limit,
            } if self.is_ours(run_id) => {
                let kind = self.budget_kinds.get(request_id).copied();
                let note = DeskAction::Note(budget_resolved_line(
                    request_id, kind, *decision, *new_limit, decided_by,
                ));
                self.withdrawn(request_id, note)
            }
            Event::ApprovalResolved {
                run_id,
                approval_id,
                decision,
                decided_by,
                ..
            } if self.is_ours(run_id) => self.resolved(approval_id, *decision, decided_by),
            Event::ElicitationRequested { run_id, request } if self.is_ours(run_id) => {
                if !self.seen.insert(request.elicitation_id.clone()) {
                    return Vec::new();
                }
                self.question_requested(run_id, request.clone())
            }
            Event::ElicitationResolved {
                run_id,
                elicitation_id,
                action,
                decided_by,
                ..
            } if self.is_ours(run_id) => {
                let note = DeskAction::Note(format!(
                    "question {}: {} by {decided_by}",
                    short(elicitation_id),
                    action.as_str()
                ));
                self.withdrawn(elicitation_id, note)
            }
            Event::RunResumed { run_id, .. } if self.is_ours(run_id) => self.run_resumed(run_id),
            Event::RunFinished { run_id, .. } if self.is_ours(run_id) => {
                self.queued.retain(|ask| ask.run_id() != run_id);
                let prompted_here = self
                    .prompting
                    .as_ref()
                    .is_some_and(|ask| ask.run_id() == run_id);
                if !prompted_here {
                    return Vec::new();
                }
                self.typing_reason = None;
                self.prompting = None;
                let mut actions = vec![DeskAction::ClosePrompt];
                actions.extend(self.prompt_next());
                actions
            }
            _ => Vec::new(),
        }
    }

    /// The event at `seq` was handled: once `attach`'s replay is through, prompt for what is
    /// still pending.
    pub fn caught_up(&mut self, seq: u64) -> Vec<DeskAction> {
        match self.held_until {
            Some(until) if seq >= until => {
                self.held_until = None;
                self.prompt_next()
            }
            _ => Vec::new(),
        }
    }

    fn is_ours(&self, run_id: &str) -> bool {
        self.run_id.as_deref().is_none_or(|ours| ours == run_id) || self.child_runs.contains(run_id)
    }

    /// Asked by a child task our run started: answered as our run's own are.
    fn is_our_child(&self, approval: &PendingApproval) -> bool {
        self.is_our_child_run(approval.parent_run_id.as_deref())
    }

    fn is_our_child_run(&self, parent_run_id: Option<&str>) -> bool {
        self.run_id
            .as_deref()
            .is_some_and(|ours| parent_run_id == Some(ours))
    }

    /// A key pressed while prompting.
    pub fn on_key(&mut self, key: u8) -> Vec<DeskAction> {
        let approval = match &mut self.prompting {
            None => return Vec::new(),
            Some(Ask::Question { form, .. }) => {
                return match form.on_key(key) {
                    form::FormStep::Show(question) => vec![DeskAction::Reprompt(question)],
                    form::FormStep::Done { action, content } => {
                        self.answer_question(action, content)
                    }
                };
            }
            Some(Ask::Budget { .. }) => {
                return match budget_key(key) {
                    Some(decision) => self.answer_budget(decision),
                    None => Vec::new(),
                };
            }
            Some(Ask::Approval(approval)) => approval,
        };
        if self.typing_reason.is_some() {
            return self.reason_key(key);
        }
        let KeyAction::Decide(decision) = key_action(key, &approval.options) else {
            return Vec::new();
        };
        if decision == ApprovalDecision::Deny {
            // `n` asks what to tell the model ("no, use tabs") before answering.
            self.typing_reason = Some(Vec::new());
            return vec![DeskAction::Reprompt(REASON_QUESTION.to_owned())];
        }
        self.answer(decision, None)
    }

    /// A key while the reason of a denial is typed: Enter sends, Backspace and Ctrl-U edit,
    /// other control keys are ignored.
    fn reason_key(&mut self, key: u8) -> Vec<DeskAction> {
        let Some(typed) = self.typing_reason.as_mut() else {
            return Vec::new();
        };
        match key {
            b'\r' | b'\n' => {
                let reason = String::from_utf8_lossy(typed).trim().to_owned();
                self.typing_reason = None;
                return self.answer(
                    ApprovalDecision::Deny,
                    (!reason.is_empty()).then_some(reason),
                );
            }
            0x7f | 0x08 => {
                // One character: its continuation bytes, then its first.
                while typed.pop().is_some_and(|byte| byte & 0xc0 == 0x80) {}
            }
            0x15 => typed.clear(),
            0x00..=0x1f => return Vec::new(),
            _ if typed.len() < REASON_MAX_BYTES => typed.push(key),
            _ => return Vec::new(),
        }
        let shown = String::from_utf8_lossy(typed).into_owned();
        vec![DeskAction::Reprompt(format!("{REASON_QUESTION}{shown}"))]
    }

    /// Answer the prompted approval with `decision`, then prompt for the next one.
    fn answer(&mut self, decision: ApprovalDecision, reason: Option<String>) -> Vec<DeskAction> {
        let Some(Ask::Approval(approval)) = self.prompting.take() else {
            return Vec::new();
        };
        let approval_id = approval.approval_id;
        self.answered.insert(
            approval_id.clone(),
            Answer {
                decision,
                reason: reason.clone(),
                policy: None,
                announced: false,
            },
        );
        let mut actions = vec![
            DeskAction::ClosePrompt,
            DeskAction::Respond {
                approval_id,
                decision,
                reason,
                policy: None,
            },
        ];
        actions.extend(self.prompt_next());
        actions
    }

    /// Answer the prompted server question, then prompt for the next one.
    fn answer_question(
        &mut self,
        action: ElicitationAction,
        content: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Vec<DeskAction> {
        let Some(Ask::Question { request, .. }) = self.prompting.take() else {
            return Vec::new();
        };
        let mut actions = vec![
            DeskAction::ClosePrompt,
            DeskAction::RespondQuestion {
                elicitation_id: request.elicitation_id,
                action,
                content,
            },
        ];
        actions.extend(self.prompt_next());
        actions
    }

    /// Our `elicitation/respond` failed with `message`.
    pub fn on_question_respond_error(
        &mut self,
        elicitation_id: &str,
        message: &str,
    ) -> Vec<DeskAction> {
        vec![DeskAction::Note(format!(
            "agentctl: cannot answer question {}: {message}",
            short(elicitation_id)
        ))]
    }

    /// A server's question in run `run_id`: a form on the terminal, left for another client
    /// (`--approve wait`), or declined by a standing policy (it answers no questions).
    fn question_requested(&mut self, run_id: &str, request: ElicitationRequest) -> Vec<DeskAction> {
        match self.handling {
            Handling::Prompt => {
                let form = form::Form::new(&request);
                self.queued.push_back(Ask::Question {
                    run_id: run_id.to_owned(),
                    request,
                    form,
                });
                self.prompt_next()
            }
            Handling::Policy(ApprovePolicy::Wait) => {
                vec![DeskAction::Note(question_wait_line(&request))]
            }
            Handling::Policy(policy) => vec![
                DeskAction::Note(format!(
                    "question {}: declined: --approve {} answers no server's questions ({})",
                    short(&request.elicitation_id),
                    policy_name(policy),
                    crate::render::one_line(&request.message)
                )),
                DeskAction::RespondQuestion {
                    elicitation_id: request.elicitation_id,
                    action: ElicitationAction::Decline,
                    content: None,
                },
            ],
        }
    }

    /// Answer the prompted budget pause, then prompt for the next question.
    fn answer_budget(&mut self, decision: BudgetDecision) -> Vec<DeskAction> {
        let Some(Ask::Budget { request, .. }) = self.prompting.take() else {
            return Vec::new();
        };
        let mut actions = vec![
            DeskAction::ClosePrompt,
            DeskAction::RespondBudget {
                request_id: request.request_id,
                decision,
                policy: None,
            },
        ];
        actions.extend(self.prompt_next());
        actions
    }

    /// Our `budget/respond` failed with `code` and `message`.
    pub fn on_budget_respond_error(
        &mut self,
        request_id: &str,
        code: i32,
        message: &str,
    ) -> Vec<DeskAction> {
        let note = if code == ALREADY_DECIDED {
            format!("budget {request_id} was already decided by someone else ({message})")
        } else {
            format!("agentctl: cannot answer budget {request_id}: {message}")
        };
        vec![DeskAction::Note(note)]
    }

    /// Our `approval/respond` failed with `code` and `message`.
    pub fn on_respond_error(
        &mut self,
        approval_id: &str,
        code: i32,
        message: &str,
    ) -> Vec<DeskAction> {
        if code == NOT_FOUND && self.reconnected {
            // After a restart the resumed run may not have asked again yet: it gets this
            // answer when it does (`asked_again`), or its resolution says what became of it.
            return Vec::new();
        }
        self.answered.remove(approval_id);
        let approval_id = short(approval_id);
        let note = if code == ALREADY_DECIDED {
            format!("approval {approval_id} was already decided by someone else ({message})")
        } else {
            format!(
                "agentctl: cannot answer approval {approval_id}: {message}; \
                 answer with `agentctl approve {approval_id}` or `agentctl deny {approval_id}`"
            )
        };
        vec![DeskAction::Note(note)]
    }

    /// The prompt could not take the terminal: leave this and later approvals pending.
    pub fn prompt_failed(&mut self, error: &str) -> Vec<DeskAction> {
        self.handling = Handling::Policy(ApprovePolicy::Wait);
        let mut actions = vec![DeskAction::Note(format!(
            "agentctl: cannot read keys from the terminal ({error}); approvals wait for \
             another client"
        ))];
        self.typing_reason = None;
        let waiting = self
            .prompting
            .take()
            .into_iter()
            .chain(self.queued.drain(..));
        actions.extend(waiting.map(|ask| {
            DeskAction::Note(match &ask {
                Ask::Approval(approval) => wait_line(approval),
                Ask::Budget { request, .. } => budget_wait_line(request),
                Ask::Question { request, .. } => question_wait_line(request),
            })
        }));
        actions
    }

    /// Ctrl-C: stop prompting (the run is being cancelled, which resolves the approvals).
    pub fn interrupt(&mut self) -> Vec<DeskAction> {
        self.queued.clear();
        self.typing_reason = None;
        match self.prompting.take() {
            Some(_) => vec![DeskAction::ClosePrompt],
            None => Vec::new(),
        }
    }

    fn requested(&mut self, approval: PendingApproval) -> Vec<DeskAction> {
        let policy = match self.handling {
            Handling::Prompt => {
                let line = (self.held_until.is_some()).then(|| {
                    self.noted.insert(approval.approval_id.clone());
                    DeskAction::Note(format!("approval needed: {}", what(&approval)))
                });
                self.queued.push_back(Ask::Approval(approval));
                let mut actions: Vec<DeskAction> = line.into_iter().collect();
                actions.extend(self.prompt_next());
                return actions;
            }
            Handling::Policy(policy) => policy,
        };
        let Some((decision, reason)) = decide(policy, &approval) else {
            return vec![DeskAction::Note(wait_line(&approval))];
        };
        let what = format!("{}{}", what(&approval), asked_by(&approval));
        let note = match (decision.allows(), policy) {
            (true, _) => format!(
                "approval {}: {} {what} (--approve {})",
                short(&approval.approval_id),
                decision_words(decision),
                policy_name(policy)
            ),
            (false, ApprovePolicy::Never) => format!(
                "approval {}: denied {what}: agentctl run is not interactive (rerun with \
                 --approve edits|all, or --approve wait to answer from another terminal)",
                short(&approval.approval_id)
            ),
            (false, _) if reason.as_deref() == Some(PERSON_ONLY_REASON) => format!(
                "approval {}: denied {what}: it is asked of a person every time, which no \
                 --approve policy answers (answer it at a terminal, or run with --approve wait \
                 and `agentctl approve`)",
                short(&approval.approval_id)
            ),
            (false, _) => format!(
                "approval {}: denied {what}: --approve {} allows only write_file and edit_file",
                short(&approval.approval_id),
                policy_name(policy)
            ),
        };
        let policy = Some(format!("--approve {}", policy_name(policy)));
        self.answered.insert(
            approval.approval_id.clone(),
            Answer {
                decision,
                reason: reason.clone(),
                policy: policy.clone(),
                announced: true,
            },
        );
        vec![
            DeskAction::Note(note),
            DeskAction::Respond {
                approval_id: approval.approval_id,
                decision,
                reason,
                policy,
            },
        ]
    }

    /// A budget pause of run `run_id`: prompted, left for another client (`--approve wait`),
    /// or stopped by a standing policy.
    fn budget_requested(&mut self, run_id: &str, request: BudgetRequest) -> Vec<DeskAction> {
        let policy = match self.handling {
            Handling::Prompt => {
                let line = (self.held_until.is_some())
                    .then(|| DeskAction::Note(format!("budget reached: {}", request.message)));
                self.queued.push_back(Ask::Budget {
                    run_id: run_id.to_owned(),
                    request,
                });
                let mut actions: Vec<DeskAction> = line.into_iter().collect();
                actions.extend(self.prompt_next());
                return actions;
            }
            Handling::Policy(ApprovePolicy::Wait) => {
                return vec![DeskAction::Note(budget_wait_line(&request))];
            }
            Handling::Policy(policy) => policy,
        };
        vec![
            DeskAction::Note(format!(
                "budget {}: stopping the run: --approve {} never raises a budget ({})",
                request.request_id,
                policy_name(policy),
                crate::render::one_line(&request.message)
            )),
            DeskAction::RespondBudget {
                request_id: request.request_id,
                decision: BudgetDecision::Stop,
                policy: Some(format!("--approve {}", policy_name(policy))),
            },
        ]
    }

    /// Question `id` was decided (by anyone): stop asking it, say `note`.
    fn withdrawn(&mut self, id: &str, note: DeskAction) -> Vec<DeskAction> {
        if self.prompting.as_ref().is_some_and(|ask| ask.id() == id) {
            self.prompting = None;
            self.typing_reason = None;
            let mut actions = vec![DeskAction::ClosePrompt, note];
            actions.extend(self.prompt_next());
            return actions;
        }
        self.queued.retain(|ask| ask.id() != id);
        vec![note]
    }

    fn resolved(
        &mut self,
        approval_id: &str,
        decision: ApprovalDecision,
        decided_by: &str,
    ) -> Vec<DeskAction> {
        self.decided.insert(approval_id.to_owned());
        if let Some(ours) = self.answered.remove(approval_id)
            && ours.decision == decision
        {
            if ours.announced {
                return Vec::new();
            }
            return vec![DeskAction::Note(format!(
                "approval {}: {}",
                short(approval_id),
                decision_words(decision)
            ))];
        }
        let note = DeskAction::Note(format!(
            "approval {}: {} by {decided_by}",
            short(approval_id),
            decision_words(decision)
        ));
        self.withdrawn(approval_id, note)
    }

    /// Prompt for the oldest queued approval when none is prompted.
    fn prompt_next(&mut self) -> Vec<DeskAction> {
        if self.prompting.is_some() || self.held_until.is_some() {
            return Vec::new();
        }
        let Some(ask) = self.queued.pop_front() else {
            return Vec::new();
        };
        let (mut header, question) = ask.prompt();
        if let Ask::Approval(approval) = &ask
            && self.noted.remove(&approval.approval_id)
        {
            // The replay showed its first line (`approval needed: …`); the details follow.
            header = header
                .split_once('\n')
                .map(|(_, details)| format!("\n{details}"))
                .unwrap_or_default();
        }
        self.prompting = Some(ask);
        vec![DeskAction::Prompt { header, question }]
    }
}

fn policy_name(policy: ApprovePolicy) -> &'static str {
    match policy {
        ApprovePolicy::Never => "never",
        ApprovePolicy::Wait => "wait",
        ApprovePolicy::Edits => "edits",
        ApprovePolicy::All => "all",
    }
}

mod ask;
mod form;
mod restart;
#[cfg(test)]
mod restart_tests;
#[cfg(test)]
mod tests;
