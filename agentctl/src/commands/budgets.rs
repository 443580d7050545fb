//! Runs paused at a budget, from another terminal than the run's: listed by
//! `agentctl approvals list` beside the approvals, answered by `agentctl approve bud_…
//! [--limit N]` (continue) and `agentctl deny bud_…` (stop).

use protocol::budget::{BudgetDecision, BudgetListParams, BudgetRespondParams, PendingBudget};
use protocol::methods::{BudgetList, BudgetRespond};

use crate::Context;
use crate::approval_desk::budget_amount;
use crate::client::{ClientError, Connection};
use crate::commands::approvals::{format_age, unix_seconds};
use crate::output::{CommandError, print_json};

/// The runs paused at a budget now (of one session), oldest first. A daemon older than
/// `budget/list` (1.3) has none to list.
pub async fn pending(
    connection: &Connection,
    session_id: Option<String>,
) -> Result<Vec<PendingBudget>, ClientError> {
    match connection
        .request::<BudgetList>(&BudgetListParams { session_id })
        .await
    {
        Ok(result) => Ok(result.requests),
        Err(ClientError::Rpc { code, .. }) if code == protocol::error::METHOD_NOT_FOUND => {
            Ok(Vec::new())
        }
        Err(err) => Err(err),
    }
}

/// Answer budget pause `request_id`: `continue` (to `limit`, else the suggested limit) or
/// `stop`. Unknown or already decided fail with the daemon's message (exit 1).
pub async fn respond(
    ctx: &Context,
    connection: &Connection,
    request_id: String,
    decision: BudgetDecision,
    limit: Option<f64>,
) -> Result<(), CommandError> {
    let params = BudgetRespondParams {
        request_id,
        decision,
        new_limit: limit,
        policy: None,
    };
    let result = connection.request::<BudgetRespond>(&params).await?;
    let short = crate::ids::short;
    if ctx.json {
        print_json(&result);
    } else {
        match (result.decision, result.new_limit) {
            (BudgetDecision::Continue, Some(limit)) => {
                crate::say!("budget {}: continued to {limit}", short(&result.request_id));
            }
            _ => crate::say!("budget {}: stopped", short(&result.request_id)),
        }
    }
    Ok(())
}

/// The budget pauses' table: id, session, budget, used, limit, what `approve` continues to,
/// age (at `now`, unix seconds). A subagent's names its agent type and task beside its session.
pub fn format_table(pauses: &[PendingBudget], now: i64) -> String {
    use crate::ids::short;
    let header = [
        "ID",
        "SESSION",
        "BUDGET",
        "USED",
        "LIMIT",
        "CONTINUE TO",
        "AGE",
    ];
    let rows: Vec<[String; 7]> = pauses
        .iter()
        .map(|pause| {
            let request = &pause.request;
            let age = unix_seconds(&pause.requested_at)
                .map(|at| format_age(now - at))
                .unwrap_or_else(|| "?".to_owned());
            [
                short(&request.request_id).to_owned(),
                match (&request.agent_type, &request.task_id) {
                    (Some(agent), Some(task)) => {
                        format!("{} ({agent} {})", short(&pause.session_id), short(task))
                    }
                    _ => short(&pause.session_id).to_owned(),
                },
                request.budget.as_str().to_owned(),
                budget_amount(request.budget, request.used),
                budget_amount(request.budget, request.limit),
                budget_amount(request.budget, request.suggested_limit),
                age,
            ]
        })
        .collect();
    crate::table::format(header, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::budget::{BudgetKind, BudgetRequest};

    #[test]
    fn table_lists_id_session_budget_amounts_and_age() {
        let pause = |id: &str, budget, used, task: Option<&str>| PendingBudget {
            session_id: "ses_1".to_owned(),
            run_id: "run_1".to_owned(),
            requested_at: "1970-01-01T00:00:30Z".to_owned(),
            request: BudgetRequest {
                request_id: id.to_owned(),
                budget,
                used,
                limit: 20.0,
                suggested_limit: used + 20.0,
                message: "m".to_owned(),
                expires_at: "1970-01-01T00:10:00Z".to_owned(),
                task_id: task.map(str::to_owned),
                agent_type: task.map(|_| "explore".to_owned()),
                parent_run_id: None,
            },
        };
        let table = format_table(
            &[
                pause("bud_1", BudgetKind::Tokens, 40.0, None),
                pause("bud_2", BudgetKind::CostUsd, 0.025, Some("task_9")),
            ],
            90,
        );
        assert_eq!(
            table,
            "ID     SESSION                 BUDGET   USED       LIMIT      CONTINUE TO  AGE\n\
             bud_1  ses_1                   tokens   40 tokens  20 tokens  60 tokens    1m\n\
             bud_2  ses_1 (explore task_9)  costUsd  $0.0250    $20.0000   $20.0250     1m\n"
        );
    }
}
