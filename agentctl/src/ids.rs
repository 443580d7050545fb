//! Unique-prefix ids: `ses_8244` (or just `8244`) names the one session whose id starts so,
//! `apr_…` prefixes name pending approvals, `task_…` ones tasks (finished ones too) and `bud_…`
//! ones runs paused at a budget (a bare
//! prefix given to `approve`/`deny` may name either); an ambiguous prefix lists the candidates. An id
//! the daemon knows as given costs nothing more; only one it does not know is looked up among
//! the listed ids, and one that matches nothing is passed on as given, so the daemon's own
//! error (with its hint) answers it.

use protocol::approval::ApprovalListParams;
use protocol::budget::BUDGET_REQUEST_ID_PREFIX;
use protocol::methods::{ApprovalList, SessionGet, TaskList};
use protocol::session::SessionGetParams;
use protocol::task::TaskListParams;

use crate::client::{ClientError, Connection};
use crate::output::CommandError;

/// Length of a full id: the prefix and 32 hex digits (`ses_`, `apr_`, `bud_`).
const FULL_ID_LEN: usize = 36;
/// Length of a full task id: `task_` and 32 hex digits.
const TASK_ID_LEN: usize = 37;
/// Tasks asked for per `task/list` page while resolving a prefix.
const LIST_PAGE: u32 = 1000;
/// Candidates named when a prefix is ambiguous.
const SHOWN_CANDIDATES: usize = 8;

/// Hex digits an id keeps in human output: enough to be unique among a person's sessions and
/// approvals, and accepted back as a prefix; `--json` has the whole id.
pub const SHORT_ID_HEX: usize = 8;

/// `id` as people read it: its kind and first `SHORT_ID_HEX` digits (`ses_8244ab12`). An id of
/// another shape is kept whole.
pub fn short(id: &str) -> &str {
    let Some((kind, hex)) = id.split_once('_') else {
        return id;
    };
    if hex.len() <= SHORT_ID_HEX || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return id;
    }
    &id[..kind.len() + 1 + SHORT_ID_HEX]
}

/// The session id `given` names: itself when whole, else the one session whose id starts with
/// it (`ses_` may be left out).
pub async fn session(connection: &Connection, given: &str) -> Result<String, CommandError> {
    let prefix = with_kind(given, "ses_");
    if prefix.len() >= FULL_ID_LEN {
        return Ok(prefix);
    }
    let params = SessionGetParams {
        session_id: prefix.clone(),
        include_history: false,
    };
    match connection.request::<SessionGet>(&params).await {
        Ok(_) => return Ok(prefix),
        Err(ClientError::Rpc { code, .. }) if is_unknown_id(code) => {}
        Err(err) => return Err(err.into()),
    }
    let ids = crate::commands::sessions::all(connection)
        .await?
        .into_iter()
        .map(|session| session.session_id)
        .collect();
    pick(&prefix, ids, "session", "agentctl sessions list")
}

/// The pending approval id `given` names (`apr_` may be left out).
pub async fn approval(connection: &Connection, given: &str) -> Result<String, CommandError> {
    let prefix = with_kind(given, "apr_");
    if prefix.len() >= FULL_ID_LEN {
        return Ok(prefix);
    }
    let pending = connection
        .request::<ApprovalList>(&ApprovalListParams { session_id: None })
        .await?;
    let ids = pending
        .approvals
        .into_iter()
        .map(|a| a.approval_id)
        .collect();
    pick(&prefix, ids, "approval", "agentctl approvals list")
}

/// What an id given to `approve` or `deny` names.
#[derive(Debug, PartialEq, Eq)]
pub enum Pending {
    Approval(String),
    Budget(String),
}

/// The pending approval or budget pause `given` names: a `bud_…` id or prefix is a budget
/// pause's, any other with a kind (`apr_…`) an approval's, as given (its answer resolves a
/// prefix, see [`approval`]); a bare prefix is looked up among both.
pub async fn pending(connection: &Connection, given: &str) -> Result<Pending, CommandError> {
    let given = given.trim();
    if given.starts_with(BUDGET_REQUEST_ID_PREFIX) {
        return budget(connection, given).await.map(Pending::Budget);
    }
    if given.contains('_') {
        return Ok(Pending::Approval(given.to_owned()));
    }
    let approvals = connection
        .request::<ApprovalList>(&ApprovalListParams { session_id: None })
        .await?
        .approvals
        .into_iter()
        .map(|a| a.approval_id);
    let budgets = crate::commands::budgets::pending(connection, None)
        .await?
        .into_iter()
        .map(|pause| pause.request.request_id);
    let candidates = approvals
        .chain(budgets)
        .filter(|id| {
            id.split_once('_')
                .is_some_and(|(_, body)| body.starts_with(given))
        })
        .collect();
    let picked = one_of(
        given,
        candidates,
        "approval or budget pause",
        "agentctl approvals list",
    )?;
    Ok(if picked.starts_with(BUDGET_REQUEST_ID_PREFIX) {
        Pending::Budget(picked)
    } else if picked == given {
        // Nothing matched: the approval's answer tells the daemon's error.
        Pending::Approval(with_kind(given, "apr_"))
    } else {
        Pending::Approval(picked)
    })
}

/// The budget pause id `given` names (`bud_` may be left out).
pub async fn budget(connection: &Connection, given: &str) -> Result<String, CommandError> {
    let prefix = with_kind(given, BUDGET_REQUEST_ID_PREFIX);
    if prefix.len() >= FULL_ID_LEN {
        return Ok(prefix);
    }
    let ids = crate::commands::budgets::pending(connection, None)
        .await?
        .into_iter()
        .map(|pause| pause.request.request_id)
        .collect();
    pick(&prefix, ids, "budget pause", "agentctl approvals list")
}

/// The task id `given` names: itself when whole, else the one task (finished or not) whose id
/// starts with it (`task_` may be left out).
pub async fn task(connection: &Connection, given: &str) -> Result<String, CommandError> {
    let prefix = with_kind(given, "task_");
    if prefix.len() >= TASK_ID_LEN {
        return Ok(prefix);
    }
    let mut ids = Vec::new();
    let mut cursor = None;
    loop {
        let params = TaskListParams {
            all: true,
            cursor: cursor.take(),
            limit: Some(LIST_PAGE),
            ..TaskListParams::default()
        };
        let page = connection.request::<TaskList>(&params).await?;
        ids.extend(page.tasks.into_iter().map(|task| task.task_id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    pick(&prefix, ids, "task", "agentctl task list --all")
}

/// Whether an error code says the id names nothing (unknown, or not a whole id).
pub fn is_unknown_id(code: i32) -> bool {
    code == protocol::error::NOT_FOUND || code == protocol::error::INVALID_PARAMS
}

/// `given` with its kind's prefix (`ses_`), unless it has one.
fn with_kind(given: &str, kind: &str) -> String {
    let given = given.trim();
    if given.starts_with(kind) || given.contains('_') {
        given.to_owned()
    } else {
        format!("{kind}{given}")
    }
}

/// The one id of `ids` that is `prefix` or starts with it; `prefix` itself when none does.
fn pick(prefix: &str, ids: Vec<String>, what: &str, list: &str) -> Result<String, CommandError> {
    if ids.iter().any(|id| id == prefix) {
        return Ok(prefix.to_owned());
    }
    let matching: Vec<String> = ids
        .into_iter()
        .filter(|id| id.starts_with(prefix))
        .collect();
    one_of(prefix, matching, what, list)
}

/// The one of `matching` (the ids `prefix` names); `prefix` itself when there is none, an
/// error listing them when there are several.
fn one_of(
    prefix: &str,
    mut matching: Vec<String>,
    what: &str,
    list: &str,
) -> Result<String, CommandError> {
    match matching.len() {
        0 => Ok(prefix.to_owned()),
        1 => Ok(matching.remove(0)),
        count => {
            matching.sort();
            let shown = matching
                .iter()
                .take(SHOWN_CANDIDATES)
                .map(|id| format!("  {id}"))
                .collect::<Vec<_>>()
                .join("\n");
            let more = if count > SHOWN_CANDIDATES {
                format!("\n  … and {} more", count - SHOWN_CANDIDATES)
            } else {
                String::new()
            };
            Err(CommandError::usage(format!(
                "{what} id prefix {prefix} is ambiguous: {count} {what}s match; give more characters\n{shown}{more}\n(see `{list}`)"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|id| (*id).to_owned()).collect()
    }

    #[test]
    fn a_short_id_is_its_kind_and_eight_digits() {
        assert_eq!(
            short("ses_8244ab12cd34ef560123456789abcdef"),
            "ses_8244ab12"
        );
        assert_eq!(
            short("task_0123456789abcdef0123456789abcdef"),
            "task_01234567"
        );
        // Ids of another shape stay whole.
        for id in ["ses_8244", "run_1", "call_abc-def-0123456789", "plain"] {
            assert_eq!(short(id), id);
        }
    }

    #[test]
    fn a_unique_prefix_names_its_id_and_an_ambiguous_one_lists_the_candidates() {
        let known = ids(&["ses_8244aa", "ses_8244bb", "ses_9100cc"]);
        let pick = |prefix: &str| pick(prefix, known.clone(), "session", "agentctl sessions list");
        assert_eq!(pick("ses_91").unwrap(), "ses_9100cc");
        assert_eq!(pick("ses_8244a").unwrap(), "ses_8244aa");
        assert_eq!(
            pick("ses_77").unwrap(),
            "ses_77",
            "no match: the daemon answers"
        );
        let error = pick("ses_8244").unwrap_err();
        assert_eq!(error.code, crate::output::EXIT_USAGE);
        assert!(
            error.message.contains("ambiguous: 2 sessions match")
                && error.message.contains("  ses_8244aa\n  ses_8244bb"),
            "{}",
            error.message
        );
        assert_eq!(with_kind("8244", "ses_"), "ses_8244");
        assert_eq!(with_kind("ses_8244", "ses_"), "ses_8244");
    }
}
