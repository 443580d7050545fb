//! Following one session's event stream until the renderer says it is done: reads the
//! `session/event` subscription, feeds the pure `render::Renderer`, writes what it answers,
//! animates the spinner, handles Ctrl-C and a lost connection. Shared by `run` and `attach`.

use std::collections::VecDeque;
use std::io::Write;
use std::time::Duration;

use jsonrpsee::core::client::SubscriptionCloseReason;
use protocol::Method;
use protocol::approval::ApprovalRespondParams;
use protocol::budget::{BudgetDecision, BudgetRespondParams};
use protocol::event::{Event, SESSION_EVENT, SessionEventEnvelope};
use protocol::methods::{
    ApprovalRespond, BudgetRespond, SESSION_UNSUBSCRIBE, SessionCancel, SessionSubscribe,
};
use protocol::session::{SessionRef, SessionSubscribeParams};
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::Instant;

use crate::approval_desk::{ApprovalDesk, DeskAction};
use crate::client::{ClientError, Connection, EventStream};
use crate::output::{CommandError, EXIT_CANCELLED};
use crate::render::{Output, Renderer};
use crate::terminal::PromptInput;

/// The envelope as it arrives: the event stays raw JSON so unknown event types survive.
pub type RawEnvelope = SessionEventEnvelope<serde_json::Value>;

/// A live subscription to one session's events.
pub type EventSubscription = EventStream;

/// What Ctrl-C does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnInterrupt {
    /// `run`: cancel the run and keep showing events until it finishes (bounded); a second
    /// Ctrl-C quits at once.
    CancelRun,
    /// `attach`: stop watching; the run goes on.
    Detach,
}

/// How long `run` waits for `runFinished` after asking the daemon to cancel.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// How long the `session/cancel` request itself may take.
const CANCEL_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Spinner frame interval on a terminal.
const SPINNER_INTERVAL: Duration = Duration::from_millis(100);

/// How long an `approval/respond` request may take.
const RESPOND_TIMEOUT: Duration = Duration::from_secs(10);

/// Subscribe to `session_id`'s events with `seq > after_seq` (replayed first, then live).
pub async fn subscribe(
    connection: &Connection,
    session_id: &str,
    after_seq: u64,
) -> Result<EventSubscription, CommandError> {
    let params = SessionSubscribeParams {
        session_id: session_id.to_owned(),
        after_seq: Some(after_seq),
    };
    Ok(connection
        .subscribe(
            SessionSubscribe::NAME,
            &params,
            SESSION_EVENT,
            SESSION_UNSUBSCRIBE,
        )
        .await?)
}

/// Show events until the renderer has an exit code, Ctrl-C, or the connection drops. With a
/// desk (`run`), the run's approvals are answered by policy or by prompting; the prompt reads
/// keys on a blocking thread while events keep flowing.
#[allow(clippy::too_many_arguments)]
pub async fn follow(
    connection: &Connection,
    session_id: &str,
    mut subscription: EventSubscription,
    mut renderer: Renderer,
    on_interrupt: OnInterrupt,
    animate_spinner: bool,
    mut desk: Option<ApprovalDesk>,
    emit: &mut dyn FnMut(Vec<Output>),
) -> Result<u8, CommandError> {
    renderer.set_approvals_handled(desk.is_some());
    // The terminal in single-key mode while a prompt waits; dropped (restored) on every way
    // out of this function.
    let mut prompt_input: Option<PromptInput> = None;
    let mut interrupts = signal(SignalKind::interrupt())
        .map_err(|err| CommandError::failed(format!("cannot listen for Ctrl-C: {err}")))?;
    let mut ticker = tokio::time::interval(SPINNER_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // Set once Ctrl-C asked the daemon to cancel: give up waiting at this instant.
    let mut cancel_deadline: Option<Instant> = None;
    loop {
        if let Some(code) = renderer.exit_code() {
            emit(renderer.finish());
            return Ok(code);
        }
        let give_up = async {
            match cancel_deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        let key = async {
            match prompt_input.as_mut() {
                Some(input) => input.keys.next().await,
                None => std::future::pending().await,
            }
        };
        let wake = tokio::select! {
            next = subscription.next() => Wake::Event(next),
            key = key => Wake::Key(key),
            _ = interrupts.recv() => Wake::Interrupt,
            _ = ticker.tick(), if animate_spinner => Wake::Tick,
            () = give_up => Wake::GiveUp,
        };
        match wake {
            Wake::Event(Some(Ok(envelope))) => {
                // Approval events are persisted: one at or below the last seq is a replay.
                let fresh = envelope.seq > renderer.last_seq();
                emit(renderer.handle(&envelope));
                if let Some(desk) = desk.as_mut()
                    && fresh
                    && let Ok(event) = serde_json::from_value::<Event>(envelope.event.clone())
                {
                    let mut actions = desk.on_event(&event);
                    actions.extend(desk.caught_up(envelope.seq));
                    perform(
                        connection,
                        desk,
                        &mut renderer,
                        &mut prompt_input,
                        actions,
                        emit,
                    )
                    .await;
                }
            }
            Wake::Key(key) => {
                if let Some(desk) = desk.as_mut() {
                    let actions = match key {
                        Some(key) => desk.on_key(key),
                        None => {
                            prompt_input = None;
                            emit(renderer.close_prompt());
                            desk.prompt_failed("stdin ended")
                        }
                    };
                    perform(
                        connection,
                        desk,
                        &mut renderer,
                        &mut prompt_input,
                        actions,
                        emit,
                    )
                    .await;
                }
            }
            Wake::Event(Some(Err(err))) => {
                emit(renderer.note(&format!("agentctl: skipping an unreadable event: {err}")));
            }
            Wake::Event(None) => {
                let lagged = matches!(
                    subscription.close_reason(),
                    Some(SubscriptionCloseReason::Lagged)
                );
                if lagged && connection.is_connected() {
                    // We could not keep up; the daemon replays what we missed. The old
                    // subscription ends first (it still has a forwarder in the daemon).
                    let _ = connection.unsubscribe(subscription).await;
                    subscription = subscribe(connection, session_id, renderer.last_seq()).await?;
                    continue;
                }
                emit(renderer.finish());
                if connection.is_connected() {
                    return Err(CommandError::failed(format!(
                        "agentd ended the event stream of session {session_id} (was it deleted?)"
                    )));
                }
                return Err(CommandError::connection_lost(format!(
                    "lost the connection to agentd (did it stop or crash?); \
                     once it is back, see `agentctl sessions show {session_id}`"
                )));
            }
            Wake::Interrupt => {
                if let Some(desk) = desk.as_mut() {
                    let actions = desk.interrupt();
                    perform(
                        connection,
                        desk,
                        &mut renderer,
                        &mut prompt_input,
                        actions,
                        emit,
                    )
                    .await;
                }
                if on_interrupt == OnInterrupt::Detach || cancel_deadline.is_some() {
                    emit(renderer.finish());
                    return Ok(EXIT_CANCELLED);
                }
                emit(renderer.note("cancelling… (Ctrl-C again to quit at once)"));
                cancel_deadline = Some(Instant::now() + CANCEL_WAIT);
                if let Err(message) = cancel(connection, session_id).await {
                    emit(renderer.note(&message));
                }
            }
            Wake::Tick => {
                renderer.set_width(crate::terminal::stderr_width());
                emit(renderer.tick());
            }
            Wake::GiveUp => {
                emit(renderer.finish());
                emit(renderer.note(&format!(
                    "agentctl: the run did not finish within {}s of cancelling; \
                     see `agentctl sessions show {session_id}`",
                    CANCEL_WAIT.as_secs()
                )));
                return Ok(EXIT_CANCELLED);
            }
        }
    }
}

/// Why the follow loop woke up.
enum Wake {
    Event(Option<Result<RawEnvelope, ClientError>>),
    /// A key while prompting; `None` when stdin ended.
    Key(Option<u8>),
    Interrupt,
    Tick,
    GiveUp,
}

/// Do what the approval desk asks, in order (a failed answer may add notes).
async fn perform(
    connection: &Connection,
    desk: &mut ApprovalDesk,
    renderer: &mut Renderer,
    prompt_input: &mut Option<PromptInput>,
    actions: Vec<DeskAction>,
    emit: &mut dyn FnMut(Vec<Output>),
) {
    let mut actions = VecDeque::from(actions);
    while let Some(action) = actions.pop_front() {
        match action {
            DeskAction::Note(text) => emit(renderer.note(&text)),
            DeskAction::Prompt { header, question } => match PromptInput::start() {
                Ok(input) => {
                    *prompt_input = Some(input);
                    emit(renderer.show_prompt(&header, &question));
                }
                Err(err) => {
                    emit(renderer.note(&header));
                    actions.extend(desk.prompt_failed(&err.to_string()));
                }
            },
            DeskAction::Reprompt(question) => emit(renderer.reprompt(&question)),
            DeskAction::ClosePrompt => {
                *prompt_input = None;
                emit(renderer.close_prompt());
            }
            DeskAction::Respond {
                approval_id,
                decision,
                reason,
                policy,
            } => {
                actions.extend(
                    answer_approval(connection, desk, approval_id, decision, reason, policy).await,
                );
            }
            DeskAction::RespondBudget {
                request_id,
                decision,
                policy,
            } => {
                actions.extend(answer_budget(connection, desk, request_id, decision, policy).await);
            }
        }
    }
}

/// Send the desk's answer to a budget pause (`continue` takes the suggested limit); what the
/// desk says to do when it fails.
pub async fn answer_budget(
    connection: &Connection,
    desk: &mut ApprovalDesk,
    request_id: String,
    decision: BudgetDecision,
    policy: Option<String>,
) -> Vec<DeskAction> {
    let params = BudgetRespondParams {
        request_id: request_id.clone(),
        decision,
        new_limit: None,
        policy,
    };
    let request = connection.request::<BudgetRespond>(&params);
    match tokio::time::timeout(RESPOND_TIMEOUT, request).await {
        Ok(Ok(_)) => Vec::new(),
        Ok(Err(ClientError::Rpc { code, message, .. })) => {
            desk.on_budget_respond_error(&request_id, code, &message)
        }
        Ok(Err(err)) => desk.on_budget_respond_error(&request_id, 0, &err.to_string()),
        Err(_) => desk.on_budget_respond_error(&request_id, 0, "agentd did not answer in time"),
    }
}

/// Send the desk's answer to an approval; what the desk says to do when it fails.
pub async fn answer_approval(
    connection: &Connection,
    desk: &mut ApprovalDesk,
    approval_id: String,
    decision: protocol::approval::ApprovalDecision,
    reason: Option<String>,
    policy: Option<String>,
) -> Vec<DeskAction> {
    let params = ApprovalRespondParams {
        approval_id: approval_id.clone(),
        decision,
        reason,
        policy,
    };
    let request = connection.request::<ApprovalRespond>(&params);
    let failure = match tokio::time::timeout(RESPOND_TIMEOUT, request).await {
        Ok(Ok(_)) => None,
        Ok(Err(ClientError::Rpc { code, message, .. })) => Some((code, message)),
        Ok(Err(err)) => Some((0, err.to_string())),
        Err(_) => Some((0, "agentd did not answer in time".to_owned())),
    };
    match failure {
        Some((code, message)) => desk.on_respond_error(&approval_id, code, &message),
        None => Vec::new(),
    }
}

/// Ask the daemon to cancel the session's run; the outcome arrives as `runFinished`.
pub async fn cancel(connection: &Connection, session_id: &str) -> Result<(), String> {
    let params = SessionRef {
        session_id: session_id.to_owned(),
    };
    let request = connection.request::<SessionCancel>(&params);
    match tokio::time::timeout(CANCEL_REQUEST_TIMEOUT, request).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(err)) => Err(format!("agentctl: cancel failed: {err}")),
        Err(_) => Err("agentctl: agentd did not answer the cancel request".to_owned()),
    }
}

/// The sink `run` and `attach` use: the terminal. Writes the renderer's output in order;
/// stdout is flushed before stderr is written so the two interleave as the renderer meant. Write errors (a closed pipe) are ignored: the run's
/// outcome still decides the exit code.
pub fn write_to_terminal(outputs: Vec<Output>) {
    if outputs.is_empty() {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    for output in outputs {
        match output {
            Output::Stdout(text) => {
                let _ = stdout.write_all(text.as_bytes());
            }
            Output::Stderr(text) => {
                let _ = stdout.flush();
                let _ = stderr.write_all(text.as_bytes());
            }
        }
    }
    let _ = stdout.flush();
    let _ = stderr.flush();
}

#[cfg(test)]
mod tests;
