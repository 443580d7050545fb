//! `agentctl approvals list`, `agentctl approve` and `agentctl deny`: answer pending approvals
//! (and runs paused at a budget, `commands::budgets`) from another terminal than the run's.

use std::time::{SystemTime, UNIX_EPOCH};

use protocol::approval::{
    ApprovalDecision, ApprovalListParams, ApprovalRespondParams, PendingApproval,
};
use protocol::budget::BudgetDecision;
use protocol::methods::{ApprovalList, ApprovalRespond};

use crate::Context;
use crate::approve_policy::decision_words;
use crate::client::{ClientError, Connection};
use crate::commands::budgets;
use crate::ids::Pending;
use crate::output::{CommandError, print_json};
use crate::render::{one_line, truncate};

/// Longest summary / reason cell in the table.
const CELL_MAX_CHARS: usize = 50;

/// `agentctl approvals list [--session ID]`: pending approvals, oldest first, then the runs
/// paused at a budget. `--json`: `{approvals, budgetPauses}` (`approval/list`'s and
/// `budget/list`'s entries).
pub async fn list(ctx: &Context, session_id: Option<String>) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let session_id = match session_id {
        Some(given) => Some(crate::ids::session(&connection, &given).await?),
        None => None,
    };
    let params = ApprovalListParams {
        session_id: session_id.clone(),
    };
    let approvals = connection.request::<ApprovalList>(&params).await?.approvals;
    let pauses = budgets::pending(&connection, session_id).await?;
    if ctx.json {
        print_json(&serde_json::json!({"approvals": approvals, "budgetPauses": pauses}));
        return Ok(());
    }
    if approvals.is_empty() && pauses.is_empty() {
        crate::say!("no pending approvals or budget pauses");
        return Ok(());
    }
    let now = now_unix();
    if !approvals.is_empty() {
        crate::say_raw!("{}", format_table(&approvals, now));
    }
    if !pauses.is_empty() {
        if !approvals.is_empty() {
            crate::say!("");
        }
        crate::say_raw!("{}", budgets::format_table(&pauses, now));
    }
    Ok(())
}

/// What `agentctl approve` or `agentctl deny` answers, by what the id names: an approval
/// the decision of the flags, a budget pause `continue` (to `limit`) or `stop`.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub approval: ApprovalDecision,
    pub reason: Option<String>,
    pub budget: BudgetDecision,
    pub limit: Option<f64>,
    /// A flag given that only an approval takes (`--session`, `--always`, `--cancel`,
    /// `--reason`): refused for a budget pause.
    approval_flag: Option<&'static str>,
}

impl Answer {
    /// `agentctl approve ID [--session|--always|--limit N]`.
    pub fn approve(session: bool, always: bool, limit: Option<f64>) -> Answer {
        let approval = match (session, always) {
            (_, true) => ApprovalDecision::AllowAlways,
            (true, false) => ApprovalDecision::AllowSession,
            (false, false) => ApprovalDecision::AllowOnce,
        };
        Answer {
            approval,
            reason: None,
            budget: BudgetDecision::Continue,
            limit,
            approval_flag: flag_given(&[(always, "--always"), (session, "--session")]),
        }
    }

    /// `agentctl deny ID [--cancel|--always] [--reason TEXT]`.
    pub fn deny(cancel: bool, always: bool, reason: Option<String>) -> Answer {
        let approval = match (cancel, always) {
            (true, _) => ApprovalDecision::DenyAndCancel,
            (false, true) => ApprovalDecision::DenyAlways,
            (false, false) => ApprovalDecision::Deny,
        };
        let flag = flag_given(&[
            (cancel, "--cancel"),
            (always, "--always"),
            (reason.is_some(), "--reason"),
        ]);
        Answer {
            approval,
            reason,
            budget: BudgetDecision::Stop,
            limit: None,
            approval_flag: flag,
        }
    }
}

/// The first flag of `flags` that was given.
fn flag_given(flags: &[(bool, &'static str)]) -> Option<&'static str> {
    flags
        .iter()
        .find(|(given, _)| *given)
        .map(|(_, name)| *name)
}

/// Answer the approval or budget pause `given` names (a whole id or a unique prefix).
/// Unknown (NOT_FOUND) or already decided (ALREADY_DECIDED) fail with the daemon's message
/// (exit 1); a flag the named kind does not take is a usage error.
pub async fn respond(ctx: &Context, given: String, answer: Answer) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    match crate::ids::pending(&connection, &given).await? {
        Pending::Budget(request_id) => {
            if let Some(flag) = answer.approval_flag {
                return Err(CommandError::usage(format!(
                    "{flag} answers an approval, and {request_id} is a run paused at a budget: `agentctl approve {request_id} [--limit N]` lets it continue, `agentctl deny {request_id}` stops it"
                )));
            }
            budgets::respond(ctx, &connection, request_id, answer.budget, answer.limit).await
        }
        Pending::Approval(approval_id) => {
            if answer.limit.is_some() {
                return Err(CommandError::usage(format!(
                    "--limit answers a run paused at a budget (`bud_…`), and {approval_id} is an approval: approve it once, --session or --always"
                )));
            }
            respond_approval(
                ctx,
                &connection,
                approval_id,
                answer.approval,
                answer.reason,
            )
            .await
        }
    }
}

/// Answer one approval; an id the daemon does not know may be a unique prefix of one.
async fn respond_approval(
    ctx: &Context,
    connection: &Connection,
    approval_id: String,
    decision: ApprovalDecision,
    reason: Option<String>,
) -> Result<(), CommandError> {
    let mut params = ApprovalRespondParams {
        policy: None,
        approval_id,
        decision,
        reason,
    };
    let result = match connection.request::<ApprovalRespond>(&params).await {
        Ok(result) => result,
        // Not a whole id of a pending approval: maybe a unique prefix of one.
        Err(ClientError::Rpc { code, .. }) if crate::ids::is_unknown_id(code) => {
            let resolved = crate::ids::approval(connection, &params.approval_id).await?;
            if resolved == params.approval_id {
                // Still unknown: the daemon's own answer says so.
                connection.request::<ApprovalRespond>(&params).await?
            } else {
                params.approval_id = resolved;
                connection.request::<ApprovalRespond>(&params).await?
            }
        }
        Err(err) => return Err(err.into()),
    };
    if ctx.json {
        print_json(&result);
    } else {
        crate::say!(
            "approval {}: {}",
            crate::ids::short(&result.approval_id),
            decision_words(result.decision)
        );
        if let Some(rule) = &result.rule_added {
            let list = if decision == ApprovalDecision::DenyAlways {
                "deny"
            } else {
                "allow"
            };
            crate::say!("added the {list} rule {rule} to the user config");
        }
    }
    Ok(())
}

/// The `approvals list` table: id, session, tool, summary, reason, age (at `now`, unix seconds).
/// A subagent's approval names its agent type and task beside its session.
pub fn format_table(approvals: &[PendingApproval], now: i64) -> String {
    use crate::ids::short;
    let header = ["ID", "SESSION", "TOOL", "SUMMARY", "REASON", "AGE"];
    let rows: Vec<[String; 6]> = approvals
        .iter()
        .map(|approval| {
            let age = unix_seconds(&approval.requested_at)
                .map(|at| format_age(now - at))
                .unwrap_or_else(|| "?".to_owned());
            [
                short(&approval.approval_id).to_owned(),
                match (&approval.agent_type, &approval.task_id) {
                    (Some(agent), Some(task)) => {
                        format!("{} ({agent} {})", short(&approval.session_id), short(task))
                    }
                    _ => short(&approval.session_id).to_owned(),
                },
                approval.tool.clone(),
                truncate(&one_line(&approval.summary), CELL_MAX_CHARS),
                truncate(&one_line(&approval.reason), CELL_MAX_CHARS),
                age,
            ]
        })
        .collect();
    crate::table::format(header, &rows)
}

/// `45s`, `3m`, `2h`, `4d`; a time in the future (clock skew) is `0s`.
pub fn format_age(seconds: i64) -> String {
    let seconds = seconds.max(0);
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m", seconds / 60),
        3600..86_400 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86_400),
    }
}

/// Seconds since the epoch of an RFC 3339 time (`2026-11-30T09:21:37.5Z`,
/// `…+02:00`); `None` when it cannot be read. humantime reads the date and time (in UTC
/// only), so an offset is taken off here first.
pub fn unix_seconds(rfc3339: &str) -> Option<i64> {
    // RFC 3339 allows `t` and `z`; humantime reads them upper case.
    let upper = rfc3339.to_ascii_uppercase();
    let (utc, offset) = split_offset(&upper)?;
    // Nothing but fractional seconds may follow the seconds (humantime would take a second
    // `+00:00` there).
    let after_seconds = utc.get(19..)?;
    if let Some(fraction) = after_seconds.strip_prefix('.') {
        if !fraction.bytes().all(|byte| byte.is_ascii_digit()) {
            return None;
        }
    } else if !after_seconds.is_empty() {
        return None;
    }
    let at = humantime::parse_rfc3339_weak(utc).ok()?;
    let seconds = i64::try_from(at.duration_since(UNIX_EPOCH).ok()?.as_secs()).ok()?;
    Some(seconds - offset)
}

/// An RFC 3339 time split into the time without its offset and the offset in seconds east of
/// UTC (`Z`: 0); `None` without an offset.
fn split_offset(rfc3339: &str) -> Option<(&str, i64)> {
    if let Some(utc) = rfc3339.strip_suffix('Z') {
        return Some((utc, 0));
    }
    let (utc, offset) = rfc3339.split_at_checked(rfc3339.len().checked_sub(6)?)?;
    let sign = match offset.as_bytes() {
        [b'+', _, _, b':', _, _] => 1,
        [b'-', _, _, b':', _, _] => -1,
        _ => return None,
    };
    let hours: i64 = offset.get(1..3)?.parse().ok()?;
    let minutes: i64 = offset.get(4..6)?.parse().ok()?;
    Some((utc, sign * (hours * 3600 + minutes * 60)))
}

/// `2026-11-30 09:21` from an RFC 3339 time, for tables; what it cannot read is kept as it is.
pub fn short_time(rfc3339: &str) -> String {
    match (rfc3339.get(..10), rfc3339.get(11..16)) {
        (Some(date), Some(time)) if rfc3339.as_bytes().get(10) == Some(&b'T') => {
            format!("{date} {time}")
        }
        _ => rfc3339.to_owned(),
    }
}

pub fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rfc3339() {
        assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(unix_seconds("2000-03-01T00:00:00Z"), Some(951_868_800));
        assert_eq!(unix_seconds("2026-11-30T09:21:37Z"), Some(1_796_030_497));
        assert_eq!(
            unix_seconds("2026-11-30T09:21:37.123456Z"),
            Some(1_796_030_497)
        );
        assert_eq!(
            unix_seconds("2026-11-30T11:21:37+02:00"),
            Some(1_796_030_497)
        );
        assert_eq!(unix_seconds("yesterday"), None);
        assert_eq!(unix_seconds("2026-11-30T09:21:37"), None);
        assert_eq!(unix_seconds("2026-13-30T09:21:37Z"), None);
        assert_eq!(unix_seconds("2026-11-30t09:21:37z"), Some(1_796_030_497));
        assert_eq!(
            unix_seconds("2026-11-30 07:21:37-02:00"),
            Some(1_796_030_497)
        );
        assert_eq!(unix_seconds("2026-11-30T09:21:37+00:00+02:00"), None);
        assert_eq!(unix_seconds("2026-11-30T09:21:37.12a4Z"), None);
        assert_eq!(unix_seconds("2026-11-30T09:21:37+2:000"), None);
    }

    #[test]
    fn short_time_keeps_what_it_cannot_read() {
        assert_eq!(short_time("2026-11-30T09:21:37.123Z"), "2026-11-30 09:21");
        assert_eq!(short_time("yesterday"), "yesterday");
    }

    #[test]
    fn ages_are_short() {
        assert_eq!(format_age(-5), "0s");
        assert_eq!(format_age(45), "45s");
        assert_eq!(format_age(180), "3m");
        assert_eq!(format_age(7300), "2h");
        assert_eq!(format_age(4 * 86_400 + 5), "4d");
    }

    #[test]
    fn flags_map_to_decisions() {
        let approve = |session, always| Answer::approve(session, always, None).approval;
        assert_eq!(approve(false, false), ApprovalDecision::AllowOnce);
        assert_eq!(approve(true, false), ApprovalDecision::AllowSession);
        assert_eq!(approve(false, true), ApprovalDecision::AllowAlways);
        let deny = |cancel, always| Answer::deny(cancel, always, None).approval;
        assert_eq!(deny(false, false), ApprovalDecision::Deny);
        assert_eq!(deny(true, false), ApprovalDecision::DenyAndCancel);
        assert_eq!(deny(false, true), ApprovalDecision::DenyAlways);
    }

    #[test]
    fn a_budget_pause_continues_or_stops_and_refuses_an_approvals_flags() {
        let plain = Answer::approve(false, false, Some(500.0));
        assert_eq!(
            (plain.budget, plain.limit),
            (BudgetDecision::Continue, Some(500.0))
        );
        assert_eq!(plain.approval_flag, None);
        assert_eq!(
            Answer::deny(false, false, None).budget,
            BudgetDecision::Stop
        );
        assert_eq!(Answer::deny(false, false, None).approval_flag, None);
        assert_eq!(
            Answer::approve(true, false, None).approval_flag,
            Some("--session")
        );
        assert_eq!(
            Answer::deny(false, false, Some("no".into())).approval_flag,
            Some("--reason")
        );
        assert_eq!(
            Answer::deny(true, true, None).approval_flag,
            Some("--cancel")
        );
    }

    #[test]
    fn table_lists_id_session_tool_summary_reason_age() {
        let approval = PendingApproval {
            session_rule: None,
            always_rule: None,
            task_id: None,
            agent_type: None,
            parent_run_id: None,
            approval_id: "apr_1".to_owned(),
            session_id: "ses_1".to_owned(),
            run_id: "run_1".to_owned(),
            tool_call_id: "call_1".to_owned(),
            tool: "run_shell".to_owned(),
            summary: "cargo test\nmore".to_owned(),
            input: serde_json::json!({}),
            reason: "shell commands ask".to_owned(),
            options: vec![ApprovalDecision::AllowOnce],
            requested_at: "1970-01-01T00:00:00Z".to_owned(),
            expires_at: "1970-01-01T00:10:00Z".to_owned(),
        };
        assert_eq!(
            format_table(&[approval], 90),
            "ID     SESSION  TOOL       SUMMARY       REASON              AGE\n\
             apr_1  ses_1    run_shell  cargo test …  shell commands ask  1m\n"
        );
    }

    #[test]
    fn a_subagents_approval_names_its_agent_and_task() {
        let approval = PendingApproval {
            session_rule: None,
            always_rule: None,
            task_id: Some("task_9".to_owned()),
            agent_type: Some("explore".to_owned()),
            parent_run_id: None,
            approval_id: "apr_1".to_owned(),
            session_id: "ses_c".to_owned(),
            run_id: "run_1".to_owned(),
            tool_call_id: "call_1".to_owned(),
            tool: "grep".to_owned(),
            summary: "x".to_owned(),
            input: serde_json::json!({}),
            reason: "asks".to_owned(),
            options: vec![ApprovalDecision::AllowOnce],
            requested_at: "1970-01-01T00:00:00Z".to_owned(),
            expires_at: "1970-01-01T00:10:00Z".to_owned(),
        };
        let table = format_table(&[approval], 90);
        assert!(table.contains("ses_c (explore task_9)"), "{table}");
    }
}
