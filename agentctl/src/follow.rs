//! Following one session's event stream until the renderer says it is done: reads the
//! `session/event` subscription, feeds the pure `render::Renderer`, writes what it answers,
//! animates the spinner, handles Ctrl-C and a lost connection: it waits for the daemon to come
//! back (`follow::reconnect`) and goes on after the last seq shown, so a restart or a crash of
//! the daemon mid-run is a pause, not the end. Shared by `run` and `attach`.

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
use tokio::time::Instant;

use crate::approval_desk::{ApprovalDesk, DeskAction};
use crate::client::{ClientError, Connection, EventStream};
use crate::output::{CommandError, EXIT_CANCELLED};
use crate::platform::Interrupts;
use crate::render::{Output, Renderer};
use crate::terminal::PromptInput;
use reconnect::Reconnected;

pub mod reconnect;

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

/// How `follow` behaves.
#[derive(Clone, Copy, Debug)]
pub struct FollowOptions {
    pub on_interrupt: OnInterrupt,
    /// Animate the activity line (a terminal, not `--json`).
    pub animate_spinner: bool,
    /// How long to wait for the daemon to come back when the connection to it is lost
    /// (`Context::reconnect_wait`); zero gives up at once.
    pub reconnect_wait: Duration,
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
    Ok(open_subscription(connection, session_id, after_seq).await?)
}

/// `subscribe`, its error as the client's (whether trying again may help).
async fn open_subscription(
    connection: &Connection,
    session_id: &str,
    after_seq: u64,
) -> Result<EventSubscription, ClientError> {
    let params = SessionSubscribeParams {
        session_id: session_id.to_owned(),
        after_seq: Some(after_seq),
    };
    connection
        .subscribe(
            SessionSubscribe::NAME,
            &params,
            SESSION_EVENT,
            SESSION_UNSUBSCRIBE,
        )
        .await
}

/// Show events until the renderer has an exit code or Ctrl-C. With a desk (`run`), the run's
/// approvals are answered by policy or by prompting; the prompt reads keys on a blocking
/// thread while events keep flowing. A lost connection is waited out (up to
/// `options.reconnect_wait`); `connection` is then the new one.
pub async fn follow(
    connection: &mut Connection,
    session_id: &str,
    mut subscription: EventSubscription,
    mut renderer: Renderer,
    options: FollowOptions,
    desk: Option<ApprovalDesk>,
    emit: &mut dyn FnMut(Vec<Output>),
) -> Result<u8, CommandError> {
    renderer.set_approvals_handled(desk.is_some());
    renderer.set_follows_across_restarts(true);
    let mut interrupts = Interrupts::listen()
        .map_err(|err| CommandError::failed(format!("cannot listen for Ctrl-C: {err}")))?;
    let mut follower = Follower {
        started_daemon: connection.started_daemon,
        connection,
        session_id,
        renderer,
        desk,
        prompt_input: None,
        daemon_stopping: false,
        emit,
    };
    let mut ticker = tokio::time::interval(SPINNER_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // Set once Ctrl-C asked the daemon to cancel: give up waiting at this instant.
    let mut cancel_deadline: Option<Instant> = None;
    loop {
        if let Some(code) = follower.renderer.exit_code() {
            follower.finish();
            return Ok(code);
        }
        let give_up = async {
            match cancel_deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        let key = async {
            match follower.prompt_input.as_mut() {
                Some(input) => input.keys.next().await,
                None => std::future::pending().await,
            }
        };
        let wake = tokio::select! {
            next = subscription.next() => Wake::Event(next),
            key = key => Wake::Key(key),
            _ = interrupts.recv() => Wake::Interrupt,
            _ = ticker.tick(), if options.animate_spinner => Wake::Tick,
            () = give_up => Wake::GiveUp,
        };
        match wake {
            Wake::Event(Some(Ok(envelope))) => follower.on_envelope(&envelope).await,
            Wake::Key(key) => {
                let actions = match (follower.desk.as_mut(), key) {
                    (Some(desk), Some(key)) => desk.on_key(key),
                    (Some(desk), None) => {
                        follower.prompt_input = None;
                        (follower.emit)(follower.renderer.close_prompt());
                        desk.prompt_failed("stdin ended")
                    }
                    (None, _) => Vec::new(),
                };
                follower.perform(actions).await;
            }
            Wake::Event(Some(Err(err))) => {
                follower.note(&format!("agentctl: skipping an unreadable event: {err}"));
            }
            Wake::Event(None) => {
                let lagged = matches!(
                    subscription.close_reason(),
                    Some(SubscriptionCloseReason::Lagged)
                );
                if lagged && follower.connection.is_connected() {
                    // We could not keep up; the daemon replays what we missed. The old
                    // subscription ends first (it still has a forwarder in the daemon).
                    let _ = follower.connection.unsubscribe(subscription).await;
                    let after_seq = follower.renderer.last_seq();
                    subscription = subscribe(follower.connection, session_id, after_seq).await?;
                    continue;
                }
                if follower.connection.is_connected() {
                    follower.finish();
                    return Err(CommandError::failed(format!(
                        "agentd ended the event stream of session {session_id} (was it deleted?)"
                    )));
                }
                if cancel_deadline.is_some() {
                    // Whether the cancel was done before the daemon went is for it to say.
                    follower.finish();
                    return Err(CommandError::connection_lost(format!(
                        "lost the connection to agentd while cancelling the run; once it is \
                         back, `agentctl attach {session_id}` shows how it ended"
                    )));
                }
                match follower
                    .wait_out_loss(options.reconnect_wait, &mut interrupts)
                    .await
                {
                    AfterLoss::Resubscribed(resubscribed) => subscription = resubscribed,
                    AfterLoss::End(outcome) => return outcome,
                }
            }
            Wake::Interrupt => {
                let actions = follower.desk.as_mut().map(ApprovalDesk::interrupt);
                follower.perform(actions.unwrap_or_default()).await;
                if options.on_interrupt == OnInterrupt::Detach || cancel_deadline.is_some() {
                    follower.finish();
                    return Ok(EXIT_CANCELLED);
                }
                follower.note("cancelling… (Ctrl-C again to quit at once)");
                cancel_deadline = Some(Instant::now() + CANCEL_WAIT);
                if let Err(message) = cancel(follower.connection, session_id).await {
                    follower.note(&message);
                }
            }
            Wake::Tick => {
                follower.renderer.set_width(crate::terminal::stderr_width());
                (follower.emit)(follower.renderer.tick());
            }
            Wake::GiveUp => {
                follower.finish();
                follower.note(&format!(
                    "agentctl: the run did not finish within {}s of cancelling; \
                     see `agentctl sessions show {session_id}`",
                    CANCEL_WAIT.as_secs()
                ));
                return Ok(EXIT_CANCELLED);
            }
        }
    }
}

/// What the follow loop holds while it runs.
struct Follower<'a> {
    connection: &'a mut Connection,
    session_id: &'a str,
    renderer: Renderer,
    desk: Option<ApprovalDesk>,
    /// The terminal in single-key mode while a prompt waits; dropped (restored) on every way
    /// out of `follow`.
    prompt_input: Option<PromptInput>,
    /// This command started the daemon (`Connection::started_daemon`).
    started_daemon: bool,
    /// The daemon said it is stopping (`runSuspended`, not yet followed by `runResumed`).
    daemon_stopping: bool,
    emit: &'a mut dyn FnMut(Vec<Output>),
}

/// How waiting out a lost connection ended.
enum AfterLoss {
    /// Back: go on with this subscription.
    Resubscribed(EventSubscription),
    /// What `follow` returns.
    End(Result<u8, CommandError>),
}

impl Follower<'_> {
    async fn on_envelope(&mut self, envelope: &RawEnvelope) {
        // Approval events are persisted: one at or below the last seq is a replay.
        let fresh = envelope.seq > self.renderer.last_seq();
        (self.emit)(self.renderer.handle(envelope));
        if !fresh {
            return;
        }
        let Ok(event) = serde_json::from_value::<Event>(envelope.event.clone()) else {
            return;
        };
        match &event {
            Event::RunSuspended { .. } => self.daemon_stopping = true,
            Event::RunResumed { .. } => self.daemon_stopping = false,
            _ => {}
        }
        if let Some(desk) = self.desk.as_mut() {
            let mut actions = desk.on_event(&event);
            actions.extend(desk.caught_up(envelope.seq));
            self.perform(actions).await;
        }
    }

    /// The connection is lost: say so, wait for the daemon, and subscribe again after the
    /// last seq shown; the desk stops prompting meanwhile and syncs again after the replay.
    async fn wait_out_loss(&mut self, wait: Duration, interrupts: &mut Interrupts) -> AfterLoss {
        let actions = self.desk.as_mut().map(ApprovalDesk::connection_lost);
        self.perform(actions.unwrap_or_default()).await;
        let following = self.renderer.following();
        self.note(&format!(
            "agentd stopped; waiting for it to come back to follow {following}…"
        ));
        // Start a daemon while waiting only when this command started the one that went
        // (nothing else, no service manager, would start it again) and it went without a
        // word: a crash. One that said it is stopping was stopped on purpose: by `agentctl
        // daemon stop` (starting it again would undo that), or by a restart (`agentctl daemon
        // restart`, systemd) that starts the next one itself; a second start racing it would
        // fail on the daemon's lock, or win and leave the restart failing, or run the daemon
        // outside its service manager. Otherwise wait for whoever starts it.
        let start = self.started_daemon && !self.daemon_stopping;
        let session_id = self.session_id;
        let after_seq = self.renderer.last_seq();
        let back = reconnect::wait_for_daemon(
            self.connection,
            session_id,
            after_seq,
            start,
            wait,
            interrupts,
        )
        .await;
        let (connection, subscription, replay_end) = match back {
            Reconnected::Back {
                connection,
                subscription,
                replay_end,
            } => (connection, subscription, replay_end),
            Reconnected::Interrupted => {
                self.finish();
                self.note(&format!(
                    "agentctl: stopped waiting; {following} goes on once agentd is back: \
                     follow it with `agentctl attach {session_id}`"
                ));
                return AfterLoss::End(Ok(EXIT_CANCELLED));
            }
            Reconnected::TimedOut => {
                self.finish();
                let what = match wait.is_zero() {
                    true => "lost the connection to agentd (did it stop or crash?)".to_owned(),
                    false => format!("agentd did not come back within {}", wait_words(wait)),
                };
                return AfterLoss::End(Err(CommandError::connection_lost(format!(
                    "{what}; once it is back, follow {following} with \
                     `agentctl attach {session_id}`"
                ))));
            }
            Reconnected::Refused(err) => {
                self.finish();
                return AfterLoss::End(Err(err.into()));
            }
        };
        *self.connection = connection;
        self.daemon_stopping = false;
        if let Some(desk) = self.desk.as_mut() {
            desk.reconnected(replay_end);
            let actions = desk.caught_up(after_seq);
            self.perform(actions).await;
        }
        AfterLoss::Resubscribed(subscription)
    }

    /// Do what the desk asks (there is a desk whenever it asks something).
    async fn perform(&mut self, actions: Vec<DeskAction>) {
        if let Some(desk) = self.desk.as_mut() {
            perform(
                self.connection,
                desk,
                &mut self.renderer,
                &mut self.prompt_input,
                actions,
                self.emit,
            )
            .await;
        }
    }

    fn note(&mut self, text: &str) {
        (self.emit)(self.renderer.note(text));
    }

    /// Leave the terminal tidy before returning.
    fn finish(&mut self) {
        (self.emit)(self.renderer.finish());
    }
}

/// A wait as a person reads it: whole seconds (`60 s`), or milliseconds for less.
fn wait_words(wait: Duration) -> String {
    match wait.subsec_millis() {
        0 => format!("{} s", wait.as_secs()),
        _ => crate::render::format_duration(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)),
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
            DeskAction::RespondQuestion {
                elicitation_id,
                action,
                content,
            } => {
                actions.extend(
                    answer_question(connection, desk, elicitation_id, action, content).await,
                );
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

/// Send the desk's answer to an MCP server's question; what the desk says when it fails.
pub async fn answer_question(
    connection: &Connection,
    desk: &mut ApprovalDesk,
    elicitation_id: String,
    action: protocol::elicitation::ElicitationAction,
    content: Option<serde_json::Map<String, serde_json::Value>>,
) -> Vec<DeskAction> {
    let params = protocol::elicitation::ElicitationRespondParams {
        elicitation_id: elicitation_id.clone(),
        action,
        content,
    };
    let request = connection.request::<protocol::methods::ElicitationRespond>(&params);
    match tokio::time::timeout(RESPOND_TIMEOUT, request).await {
        Ok(Ok(_)) => Vec::new(),
        Ok(Err(err)) => desk.on_question_respond_error(&elicitation_id, &err.to_string()),
        Err(_) => desk.on_question_respond_error(&elicitation_id, "agentd did not answer in time"),
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
        // The connection broke: the desk keeps the answer and sends it again when the daemon,
        // back, asks again (`ApprovalDesk::asked_again`).
        Ok(Err(ClientError::Transport(_))) if !connection.is_connected() => None,
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
mod fake_daemon;
#[cfg(test)]
mod reconnect_tests;
#[cfg(test)]
mod tests;
