//! One daemon session as the editor follows it: a subscription of its own connection (which
//! declares that it answers approvals) whose events become `session/update`s, whose
//! approvals and budget pauses become `session/request_permission` requests and its MCP
//! servers' questions `elicitation/create` requests (`question`; all cancelled when another
//! client answers first), and whose `runFinished` ends the prompt turn waiting for it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{RequestPermissionRequest, SessionNotification};
use agent_client_protocol::{Client, RequestCancellationHandle};
use protocol::Method;
use protocol::approval::PendingApproval;
use protocol::budget::{BudgetDecision, BudgetListParams, BudgetRequest};
use protocol::event::{Event, RunStatus};
use protocol::methods::{ApprovalRespond, BudgetList, BudgetRespond};
use tokio::sync::oneshot;

use super::permission;
use super::stdio::UpdateWindow;
use super::translate::{self, Moment, Translator};
use crate::client::{Connection, EventStream};

/// Runs that ended before their prompt turn asked (a run can end before `session/prompt`'s
/// answer reaches the bridge), kept per session so the turn still finds its end. Older ones
/// are dropped: nobody waits for a run that many prompts ago.
pub const FINISHED_RUNS_KEPT: usize = 32;

/// The `policy` of the `stop` sent for a budget pause the editor could not be asked about
/// (its permission request failed): like a run with nobody to ask, it does not go on, and
/// the daemon records that the client's standing rule decided (`policy:acp:<editor>`), not a
/// person.
const EDITOR_NOT_ASKED: &str = "acp: the editor could not be asked";

/// How a run ended, as its prompt turn learns it.
#[derive(Clone, Debug, PartialEq)]
pub enum RunEnd {
    Finished {
        status: RunStatus,
        error: Option<String>,
    },
    /// The subscription ended (the daemon stopped, or the session was closed).
    Lost(String),
}

/// The bridge's side of one session: who waits for which run, which permission requests
/// are open.
pub struct Link {
    pub session_id: String,
    runs: Mutex<Runs>,
    /// Open permission requests by approval id (or budget request id), to cancel when it is
    /// decided elsewhere. At most one per pending approval or pause, which the daemon bounds.
    open_requests: Mutex<HashMap<String, RequestCancellationHandle>>,
}

#[derive(Default)]
struct Runs {
    /// Turns waiting for each run: several when a prompt joined an active run as a follow-up.
    waiting: HashMap<String, Vec<oneshot::Sender<RunEnd>>>,
    finished: VecDeque<(String, RunEnd)>,
    lost: Option<String>,
}

/// Replay before live events (`session/load`): events through `through_seq` are history;
/// `caught_up` is told when they are all sent. Approvals still pending then are asked once
/// `answered` says the load's answer is out (or will never be), so the editor knows the
/// session before it is asked about it.
pub struct Replay {
    pub through_seq: u64,
    pub caught_up: oneshot::Sender<()>,
    pub answered: oneshot::Receiver<()>,
}

impl Link {
    pub fn new(session_id: String) -> Link {
        Link {
            session_id,
            runs: Mutex::new(Runs::default()),
            open_requests: Mutex::new(HashMap::new()),
        }
    }

    /// Wait for run `run_id` to end.
    pub async fn run_end(&self, run_id: &str) -> RunEnd {
        let receiver = {
            let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(position) = runs.finished.iter().position(|(id, _)| id == run_id)
                && let Some((_, end)) = runs.finished.remove(position)
            {
                return end;
            }
            if let Some(reason) = &runs.lost {
                return RunEnd::Lost(reason.clone());
            }
            let (sender, receiver) = oneshot::channel();
            runs.waiting
                .entry(run_id.to_owned())
                .or_default()
                .push(sender);
            receiver
        };
        receiver
            .await
            .unwrap_or_else(|_| RunEnd::Lost("the session is no longer followed".to_owned()))
    }

    fn finish_run(&self, run_id: &str, end: RunEnd) {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        match runs.waiting.remove(run_id) {
            Some(waiters) => {
                for waiter in waiters {
                    let _ = waiter.send(end.clone());
                }
            }
            None => {
                if runs.finished.len() >= FINISHED_RUNS_KEPT {
                    runs.finished.pop_front();
                }
                runs.finished.push_back((run_id.to_owned(), end));
            }
        }
    }

    /// The subscription ended: every waiting turn ends with `reason`.
    pub fn lose(&self, reason: &str) {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        runs.lost = Some(reason.to_owned());
        for waiter in runs.waiting.drain().flat_map(|(_, waiters)| waiters) {
            let _ = waiter.send(RunEnd::Lost(reason.to_owned()));
        }
        drop(runs);
        self.cancel_open_requests();
    }

    /// Withdraw every open permission request (the session is closed or lost).
    pub fn cancel_open_requests(&self) {
        let open: Vec<_> = self
            .open_requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .collect();
        for (_, handle) in open {
            let _ = handle.cancel();
        }
    }

    /// Whether the request for `id` was still open, no longer: false when it was withdrawn
    /// (decided elsewhere, or the session closed), so its answer must decide nothing.
    pub(super) fn take_request(&self, id: &str) -> bool {
        self.open_requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
            .is_some()
    }

    pub(super) fn open_request(&self, approval_id: &str, handle: RequestCancellationHandle) {
        self.open_requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(approval_id.to_owned(), handle);
    }

    /// The approval was decided: withdraw the editor's request for it, if still open.
    fn close_request(&self, approval_id: &str) {
        let handle = self
            .open_requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(approval_id);
        if let Some(handle) = handle {
            let _ = handle.cancel();
        }
    }
}

/// Forward the session's events to the editor until the subscription ends.
pub async fn pump(
    link: Arc<Link>,
    editor: ConnectionTo<Client>,
    window: Arc<UpdateWindow>,
    daemon: Arc<Connection>,
    mut stream: EventStream,
    mut translator: Translator,
    mut replay: Option<Replay>,
) {
    // Approvals and budget pauses seen in the replay and not yet decided: asked once the
    // replay is done.
    let mut replayed_pending: Vec<PendingApproval> = Vec::new();
    let mut replayed_budgets: Vec<BudgetRequest> = Vec::new();
    if let Some(done) = replay.take_if(|replay| replay.through_seq == 0) {
        let _ = done.caught_up.send(());
        let _ = done.answered.await;
    }
    let reason = loop {
        let envelope = match stream.next().await {
            Some(Ok(envelope)) => envelope,
            Some(Err(err)) => break format!("reading the session's events failed: {err}"),
            None => break lost_reason(&stream),
        };
        let moment = match &replay {
            Some(replay) if envelope.seq <= replay.through_seq => Moment::Replay,
            _ => Moment::Live,
        };
        let seq = envelope.seq;
        let (updates, event) = if envelope.event["type"] == "sessionUpdated" {
            (translate::session_updated(&envelope.event), None)
        } else {
            // Event types this agentctl does not know yet are skipped, not fatal.
            match serde_json::from_value::<Event>(envelope.event) {
                Ok(event) => (translator.updates(&event, moment), Some(event)),
                Err(_) => (Vec::new(), None),
            }
        };
        for update in updates {
            let notification = SessionNotification::new(link.session_id.clone(), update);
            if window.send(&editor, notification).await.is_err() {
                return;
            }
        }
        match event {
            Some(Event::ApprovalRequested { approval, .. }) => match moment {
                Moment::Replay => replayed_pending.push(approval),
                Moment::Live => ask(&link, &editor, &daemon, &translator, approval),
            },
            Some(Event::ApprovalResolved { approval_id, .. }) => {
                replayed_pending.retain(|pending| pending.approval_id != approval_id);
                link.close_request(&approval_id);
            }
            Some(Event::BudgetExceeded { request, .. }) => match moment {
                Moment::Replay => replayed_budgets.push(request),
                Moment::Live => ask_budget(&link, &editor, &daemon, request),
            },
            // A question is asked live only: after a load, one still open waits for another
            // client (the editor learns of it from the replay's tool call).
            Some(Event::ElicitationRequested { request, .. }) if moment == Moment::Live => {
                super::question::ask(&link, &editor, &daemon, request);
            }
            Some(Event::ElicitationResolved { elicitation_id, .. }) => {
                link.close_request(&elicitation_id);
            }
            Some(Event::BudgetResolved { request_id, .. }) => {
                replayed_budgets.retain(|pending| pending.request_id != request_id);
                link.close_request(&request_id);
            }
            Some(Event::RunFinished {
                run_id,
                status,
                error,
                ..
            }) => link.finish_run(&run_id, RunEnd::Finished { status, error }),
            _ => {}
        }
        // Whatever the last replayed event was (one this agentctl skips included), the
        // history is complete once its seq is reached.
        if let Some(done) = replay.take_if(|replay| seq >= replay.through_seq) {
            let _ = done.caught_up.send(());
            let budgets = still_paused(&daemon, std::mem::take(&mut replayed_budgets)).await;
            if !replayed_pending.is_empty() || !budgets.is_empty() {
                let _ = done.answered.await;
            }
            for approval in replayed_pending.drain(..) {
                ask(&link, &editor, &daemon, &translator, approval);
            }
            for request in budgets {
                ask_budget(&link, &editor, &daemon, request);
            }
        }
    };
    // Editors keep an agent's stderr as its log: say why the session stopped updating.
    crate::warn_line!("agentctl acp: session {}: {reason}", link.session_id);
    link.lose(&reason);
}

fn lost_reason(stream: &EventStream) -> String {
    match stream.close_reason() {
        Some(jsonrpsee::core::client::SubscriptionCloseReason::Lagged) => {
            "the bridge fell behind the session's events; load the session again".to_owned()
        }
        _ => "the connection to agentd was lost; load the session again once it runs".to_owned(),
    }
}

/// Ask the editor about `approval` and send its answer to the daemon. The request stays
/// open until the editor answers or the approval is decided elsewhere (then it is cancelled);
/// a cancelled or failed request decides nothing.
fn ask(
    link: &Arc<Link>,
    editor: &ConnectionTo<Client>,
    daemon: &Arc<Connection>,
    translator: &Translator,
    approval: PendingApproval,
) {
    let tool_call =
        translator.tool_call_update(&approval.tool_call_id, &approval.tool, &approval.input);
    let request = RequestPermissionRequest::new(
        link.session_id.clone(),
        tool_call,
        permission::options(&approval.options),
    );
    let sent = editor.send_request(request);
    link.open_request(&approval.approval_id, sent.cancellation_handle());
    let link = link.clone();
    let daemon = daemon.clone();
    let spawned = editor.spawn(async move {
        let answer = sent.block_task().await;
        link.take_request(&approval.approval_id);
        let Some(decision) = answer
            .ok()
            .and_then(|answer| permission::decision(&answer, &approval.options))
        else {
            return Ok(());
        };
        // By name and as JSON: fields later protocol versions add stay absent.
        let params = serde_json::json!({
            "approvalId": approval.approval_id,
            "decision": decision,
        });
        // An error answer means it was decided elsewhere in the meantime (the other answer
        // stands) or the daemon is gone (the pump reports that); either way nothing to do, and
        // a task of the editor connection must not fail (that would end the bridge).
        let _ = daemon.request_raw(ApprovalRespond::NAME, params).await;
        Ok(())
    });
    // The connection is closing: nothing is left to answer.
    let _ = spawned;
}

/// Of the budget pauses a replay left undecided, those still pending: a pause does not
/// survive a daemon restart (its run asks again, with a new id), so the log alone cannot
/// tell. Daemon-wide, as a subagent's pause has its child session's id.
async fn still_paused(daemon: &Connection, replayed: Vec<BudgetRequest>) -> Vec<BudgetRequest> {
    if replayed.is_empty() {
        return replayed;
    }
    let Ok(listed) = daemon
        .request::<BudgetList>(&BudgetListParams::default())
        .await
    else {
        return Vec::new();
    };
    replayed
        .into_iter()
        .filter(|request| {
            listed
                .requests
                .iter()
                .any(|pause| pause.request.request_id == request.request_id)
        })
        .collect()
}

/// Ask the editor about budget pause `request` (continue to the suggested limit, or stop)
/// and send its answer with `budget/respond`. Withdrawn when it is decided elsewhere; a
/// cancelled request decides nothing (a cancelled prompt turn cancels the run); a request
/// the editor fails to answer stops the run, as a run with nobody to ask stops.
fn ask_budget(
    link: &Arc<Link>,
    editor: &ConnectionTo<Client>,
    daemon: &Arc<Connection>,
    request: BudgetRequest,
) {
    let permission_request = RequestPermissionRequest::new(
        link.session_id.clone(),
        permission::budget_tool_call(&request),
        permission::budget_options(&request),
    );
    let sent = editor.send_request(permission_request);
    link.open_request(&request.request_id, sent.cancellation_handle());
    let link = link.clone();
    let daemon = daemon.clone();
    let spawned = editor.spawn(async move {
        let answer = sent.block_task().await;
        if !link.take_request(&request.request_id) {
            return Ok(());
        }
        let (decision, policy) = match answer {
            Ok(response) => match permission::budget_decision(&response) {
                Some(decision) => (decision, None),
                None => return Ok(()),
            },
            Err(_) => (BudgetDecision::Stop, Some(EDITOR_NOT_ASKED)),
        };
        // By name and as JSON: fields later protocol versions add stay absent. `continue`
        // without `newLimit` takes the suggested limit the option named.
        let mut params = serde_json::json!({
            "requestId": request.request_id,
            "decision": decision,
        });
        if let Some(policy) = policy {
            params["policy"] = serde_json::json!(policy);
        }
        // As for approvals: an error means it was decided elsewhere or the daemon is gone.
        let _ = daemon.request_raw(BudgetRespond::NAME, params).await;
        Ok(())
    });
    let _ = spawned;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completed() -> RunEnd {
        RunEnd::Finished {
            status: RunStatus::Completed,
            error: None,
        }
    }

    #[tokio::test]
    async fn a_run_that_ended_before_its_turn_waited_is_still_found() {
        let link = Link::new("ses_1".into());
        link.finish_run("run_1", completed());
        assert_eq!(link.run_end("run_1").await, completed());
    }

    #[tokio::test]
    async fn every_turn_waiting_for_a_run_learns_its_end() {
        let link = Arc::new(Link::new("ses_1".into()));
        let first = tokio::spawn({
            let link = link.clone();
            async move { link.run_end("run_1").await }
        });
        let second = tokio::spawn({
            let link = link.clone();
            async move { link.run_end("run_1").await }
        });
        // Both are registered once the map holds two waiters (no sleeping).
        while link
            .runs
            .lock()
            .unwrap()
            .waiting
            .get("run_1")
            .map_or(0, Vec::len)
            < 2
        {
            tokio::task::yield_now().await;
        }
        link.finish_run("run_1", completed());
        assert_eq!(first.await.unwrap(), completed());
        assert_eq!(second.await.unwrap(), completed());
    }

    #[tokio::test]
    async fn a_lost_subscription_ends_waiting_and_later_turns() {
        let link = Link::new("ses_1".into());
        link.lose("gone");
        assert_eq!(link.run_end("run_9").await, RunEnd::Lost("gone".into()));
    }

    #[test]
    fn finished_runs_kept_are_bounded() {
        let link = Link::new("ses_1".into());
        for n in 0..FINISHED_RUNS_KEPT + 5 {
            link.finish_run(&format!("run_{n}"), completed());
        }
        assert_eq!(link.runs.lock().unwrap().finished.len(), FINISHED_RUNS_KEPT);
    }
}
