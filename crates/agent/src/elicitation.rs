//! An MCP server's question to the user during one of the run's tool calls: registered with
//! the `ElicitationBroker`, persisted and announced (`elicitationRequested`), and answered by
//! the first `elicitation/respond` of any client that answers approvals (accept with answers
//! checked against the requested schema, decline, cancel). With nobody who answers (and no
//! `holdApprovals`) it is declined at once, the reason sent to the server; the approval
//! timeout and a cancel end the wait. The answer is recorded (`elicitationResolved`) before the
//! server is told. A question pending when the daemon stops is cancelled with the run (decided
//! by `restart`); after a crash its server is gone with the daemon, so there is nothing left to
//! answer.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::sink::RunLog;
use agentd_policy::approval::waitlist::Waitlist;
use agentd_work::tools::server_requests::{McpElicitation, McpElicitationAnswer, check_answers};
use protocol::elicitation::{ElicitationAction, ElicitationRequest, PendingElicitation};
use protocol::event::Event;

/// How a question was decided.
#[derive(Clone, Debug, PartialEq)]
pub struct ElicitationResolution {
    pub answer: McpElicitationAnswer,
    /// `client:<name>`, `mode`, `timeout`, `cancel` or `restart`.
    pub decided_by: String,
}

/// Why an answer was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ElicitationRespondError {
    #[error(
        "elicitation not found: {}; it is answered once, while its server waits",
        protocol::error::echo(.0)
    )]
    NotFound(String),
    #[error(
        "elicitation {} was already answered ({} by {decided_by})",
        protocol::error::echo(id),
        action.as_str()
    )]
    AlreadyDecided {
        id: String,
        action: ElicitationAction,
        decided_by: String,
    },
    #[error(
        "invalid elicitation id {:?}: elicitation ids are `eli_` followed by letters, digits, `_` or `-`",
        protocol::error::echo(.0)
    )]
    InvalidId(String),
    /// Accepted answers that do not fit the requested schema: the question stays open.
    #[error("the answers do not fit the question: {0}; the question is still open")]
    BadAnswers(String),
}

/// Every question servers wait on, across sessions.
#[derive(Default)]
pub struct ElicitationBroker {
    state: Mutex<Waitlist<PendingElicitation, ElicitationResolution>>,
}

impl ElicitationBroker {
    /// A client's answer to question `id`: accepted answers are checked against its schema
    /// (defaults filled in); returns what the server is sent.
    pub fn respond(
        &self,
        id: &str,
        action: ElicitationAction,
        content: Option<serde_json::Map<String, serde_json::Value>>,
        decided_by: String,
    ) -> Result<McpElicitationAnswer, ElicitationRespondError> {
        if !protocol::elicitation::is_elicitation_id(id) {
            return Err(ElicitationRespondError::InvalidId(id.to_owned()));
        }
        let mut state = self.lock();
        let Some(pending) = state.get(id) else {
            return Err(match state.earlier(id) {
                Some(earlier) => ElicitationRespondError::AlreadyDecided {
                    id: id.to_owned(),
                    action: earlier.answer.action,
                    decided_by: earlier.decided_by.clone(),
                },
                None => ElicitationRespondError::NotFound(id.to_owned()),
            });
        };
        let content = match action {
            ElicitationAction::Accept => Some(
                check_answers(
                    &pending.request.requested_schema,
                    &content.unwrap_or_default(),
                )
                .map_err(ElicitationRespondError::BadAnswers)?,
            ),
            ElicitationAction::Decline | ElicitationAction::Cancel => None,
        };
        let answer = McpElicitationAnswer {
            action,
            content,
            reason: None,
        };
        state.finish(
            id,
            ElicitationResolution {
                answer: answer.clone(),
                decided_by,
            },
        );
        Ok(answer)
    }

    /// The questions pending now, oldest first, optionally of one session.
    pub fn list(&self, session_id: Option<&str>) -> Vec<PendingElicitation> {
        self.lock()
            .oldest_first(|pending| session_id.is_none_or(|id| pending.session_id == id))
            .into_iter()
            .cloned()
            .collect()
    }

    fn register(&self, pending: PendingElicitation) -> oneshot::Receiver<ElicitationResolution> {
        let id = pending.request.elicitation_id.clone();
        self.lock().register(id, pending)
    }

    fn decide(&self, id: &str, resolution: ElicitationResolution) -> bool {
        self.lock().finish(id, resolution)
    }

    fn withdraw(&self, id: &str) -> bool {
        self.lock().withdraw(id)
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, Waitlist<PendingElicitation, ElicitationResolution>> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Withdraws a registered question when dropped (the call went away undecided).
struct Registered<'a> {
    broker: &'a ElicitationBroker,
    id: &'a str,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if self.broker.withdraw(self.id) {
            tracing::debug!(elicitation = self.id, "withdrew an unanswered elicitation");
        }
    }
}

/// What asking a question needs of its run.
pub(crate) struct Asking<'a> {
    pub(crate) broker: &'a ElicitationBroker,
    pub(crate) log: &'a dyn RunLog,
    pub(crate) session_id: &'a str,
    pub(crate) run_id: &'a str,
    pub(crate) timeout: Duration,
    pub(crate) hold: bool,
    pub(crate) cancel: &'a CancellationToken,
    /// Whether the run's cancel is a daemon shutdown (decided by `restart`).
    pub(crate) shutting_down: &'a (dyn Fn() -> bool + Send + Sync),
}

/// Announce `question`, wait for the first answer (or decide it), record the answer; returns
/// what the server is told.
pub(crate) async fn ask(asking: Asking<'_>, question: McpElicitation) -> McpElicitationAnswer {
    let id = format!("eli_{}", uuid::Uuid::new_v4().simple());
    let now = SystemTime::now();
    let request = ElicitationRequest {
        elicitation_id: id.clone(),
        server: question.server,
        message: question.message,
        requested_schema: question.requested_schema,
        tool_call_id: question.tool_call_id,
        expires_at: crate::gate::expires_at(now, asking.timeout),
    };
    let announce = Event::ElicitationRequested {
        run_id: asking.run_id.to_owned(),
        request: request.clone(),
    };
    let resolution = if asking.log.has_answerers() || asking.hold {
        // Registered before it is announced, so the quickest answer finds it.
        let decided = asking.broker.register(PendingElicitation {
            session_id: asking.session_id.to_owned(),
            run_id: asking.run_id.to_owned(),
            requested_at: humantime::format_rfc3339_seconds(now).to_string(),
            request,
        });
        let _registered = Registered {
            broker: asking.broker,
            id: &id,
        };
        if let Err(err) = asking.log.append(announce).await {
            return McpElicitationAnswer::declined(format!(
                "the question could not be recorded: {err:#}"
            ));
        }
        wait(&asking, &id, decided).await
    } else {
        if let Err(err) = asking.log.append(announce).await {
            tracing::warn!("an elicitation could not be recorded: {err:#}");
        }
        ElicitationResolution {
            answer: McpElicitationAnswer::declined(
                "no client that answers is attached to the agentd session, so nobody could answer",
            ),
            decided_by: "mode".to_owned(),
        }
    };
    let resolved = Event::ElicitationResolved {
        run_id: asking.run_id.to_owned(),
        elicitation_id: id,
        action: resolution.answer.action,
        decided_by: resolution.decided_by.clone(),
        content: resolution.answer.content.clone(),
        reason: resolution.answer.reason.clone(),
    };
    if let Err(err) = asking.log.append(resolved).await {
        tracing::warn!("an elicitation's answer could not be recorded: {err:#}");
    }
    resolution.answer
}

/// The first answer, or a fallback: the timeout, a cancel (a shutdown is `restart`).
async fn wait(
    asking: &Asking<'_>,
    id: &str,
    decided: oneshot::Receiver<ElicitationResolution>,
) -> ElicitationResolution {
    let mut decided = std::pin::pin!(decided);
    let fallback = |action, who: &str, reason: String| ElicitationResolution {
        answer: McpElicitationAnswer {
            action,
            content: None,
            reason: Some(reason),
        },
        decided_by: who.to_owned(),
    };
    let fallback = tokio::select! {
        answer = &mut decided => return answer.unwrap_or_else(|_| gone()),
        () = tokio::time::sleep(asking.timeout) => fallback(
            ElicitationAction::Cancel,
            "timeout",
            format!("nobody answered within {} s", asking.timeout.as_secs()),
        ),
        () = asking.cancel.cancelled() => {
            if (asking.shutting_down)() {
                fallback(ElicitationAction::Cancel, "restart", "the agentd daemon stopped while the question was open".to_owned())
            } else {
                fallback(ElicitationAction::Cancel, "cancel", "the user cancelled the run".to_owned())
            }
        }
    };
    if asking.broker.decide(id, fallback.clone()) {
        fallback
    } else {
        // An answer came at the same moment: it wins.
        decided.await.unwrap_or_else(|_| gone())
    }
}

fn gone() -> ElicitationResolution {
    ElicitationResolution {
        answer: McpElicitationAnswer {
            action: ElicitationAction::Cancel,
            content: None,
            reason: Some("the question was dropped".to_owned()),
        },
        decided_by: "daemon".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pending(id: &str) -> PendingElicitation {
        PendingElicitation {
            session_id: "ses_1".into(),
            run_id: "run_1".into(),
            requested_at: "t".into(),
            request: ElicitationRequest {
                elicitation_id: id.into(),
                server: "s".into(),
                message: "name?".into(),
                requested_schema: json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]
                }),
                tool_call_id: None,
                expires_at: "t".into(),
            },
        }
    }

    #[test]
    fn the_first_answer_wins_and_bad_answers_leave_it_open() {
        let broker = ElicitationBroker::default();
        let mut decided = broker.register(pending("eli_1"));
        let bad = broker
            .respond(
                "eli_1",
                ElicitationAction::Accept,
                Some(json!({"name": 3}).as_object().unwrap().clone()),
                "client:a".into(),
            )
            .unwrap_err();
        assert!(
            matches!(bad, ElicitationRespondError::BadAnswers(_)),
            "{bad}"
        );
        assert_eq!(broker.list(None).len(), 1);
        let answer = broker
            .respond(
                "eli_1",
                ElicitationAction::Accept,
                Some(json!({"name": "Ada"}).as_object().unwrap().clone()),
                "client:a".into(),
            )
            .unwrap();
        assert_eq!(decided.try_recv().unwrap().answer, answer);
        let late = broker
            .respond("eli_1", ElicitationAction::Decline, None, "client:b".into())
            .unwrap_err();
        assert!(
            late.to_string()
                .contains("already answered (accept by client:a)"),
            "{late}"
        );
        assert!(matches!(
            broker.respond("apr_1", ElicitationAction::Cancel, None, "c".into()),
            Err(ElicitationRespondError::InvalidId(_))
        ));
    }
}
