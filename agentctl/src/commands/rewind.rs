//! `agentctl diff` (what a run or the session changed in the workspace, coloured) and
//! `agentctl rewind` (the session's runs to go back to; a preview of the files it would
//! restore and remove, asked, then done: the workspace's files, the conversation as a new
//! session, or both).

use std::io::IsTerminal;

use protocol::checkpoint::*;
use protocol::methods::{SessionCheckpoints, SessionDiff, SessionRewind};

use crate::Context;
use crate::client::Connection;
use crate::output::{CommandError, print_json};
use crate::render::{Style, paint};

/// The session a command is about: the given id (or prefix), else the newest of this directory.
async fn session_of(
    connection: &Connection,
    given: Option<String>,
) -> Result<String, CommandError> {
    match given {
        Some(given) => crate::ids::session(connection, &given).await,
        None => {
            let cwd = std::env::current_dir().map_err(|err| {
                CommandError::failed(format!("cannot read the current directory: {err}"))
            })?;
            Ok(
                crate::commands::run_input::newest_session_in(connection, &cwd)
                    .await?
                    .session_id,
            )
        }
    }
}

/// A run by its number in `agentctl rewind`'s list (1 = the first), its id or an id prefix.
pub fn pick_run<'a>(
    runs: &'a [RunCheckpoint],
    given: &str,
) -> Result<&'a RunCheckpoint, CommandError> {
    if let Ok(number) = given.parse::<usize>() {
        return number
            .checked_sub(1)
            .and_then(|index| runs.get(index))
            .ok_or_else(|| {
                CommandError::usage(format!(
                    "run {number} does not exist: the session has {} run(s); `agentctl rewind SESSION` lists them",
                    runs.len()
                ))
            });
    }
    let wanted = if given.starts_with("run_") {
        given.to_owned()
    } else {
        format!("run_{given}")
    };
    let mut found = runs.iter().filter(|run| run.run_id.starts_with(&wanted));
    match (found.next(), found.next()) {
        (Some(run), None) => Ok(run),
        (Some(_), Some(_)) => Err(CommandError::usage(format!(
            "{given} names more than one run; give more of its id"
        ))),
        (None, _) => Err(CommandError::usage(format!(
            "{given} is not a run of this session; `agentctl rewind SESSION` lists them"
        ))),
    }
}

/// A unified diff with its added lines green, removed red and headers dimmed.
pub fn colour_diff(diff: &str, color: bool) -> String {
    let mut out = String::with_capacity(diff.len());
    for line in diff.split_inclusive('\n') {
        let (text, newline) = match line.strip_suffix('\n') {
            Some(text) => (text, "\n"),
            None => (line, ""),
        };
        let style = if text.starts_with("+++")
            || text.starts_with("---")
            || text.starts_with("diff ")
            || text.starts_with("index ")
        {
            Some(Style::Dim)
        } else if text.starts_with('+') {
            Some(Style::Good)
        } else if text.starts_with('-') {
            Some(Style::Bad)
        } else if text.starts_with("@@") {
            Some(Style::Attention)
        } else {
            None
        };
        match style {
            Some(style) => out.push_str(&paint(color, style, text)),
            None => out.push_str(text),
        }
        out.push_str(newline);
    }
    out
}

/// `agentctl diff [SESSION] [--run N]`.
pub async fn diff(
    ctx: &Context,
    session: Option<String>,
    run: Option<String>,
) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let session_id = session_of(&connection, session).await?;
    let run_id = match run {
        Some(given) => {
            let list = connection
                .request::<SessionCheckpoints>(&SessionCheckpointsParams {
                    session_id: session_id.clone(),
                })
                .await?;
            Some(pick_run(&list.runs, &given)?.run_id.clone())
        }
        None => None,
    };
    let result = connection
        .request::<SessionDiff>(&SessionDiffParams { session_id, run_id })
        .await?;
    if ctx.json {
        print_json(&result);
        return Ok(());
    }
    if result.files.is_empty() {
        crate::say!("no changes");
        return Ok(());
    }
    crate::say_raw!(
        "{}",
        colour_diff(
            &result.diff,
            super::color_on(ctx, std::io::stdout().is_terminal())
        )
    );
    if result.truncated {
        crate::warn_line!(
            "(the diff was cut; `agentctl diff --json` has the list of every changed file)"
        );
    }
    Ok(())
}

/// What `agentctl rewind` is asked to do.
pub struct RewindArgs {
    pub session: Option<String>,
    pub run: Option<String>,
    pub seq: Option<u64>,
    pub conversation: bool,
    pub no_files: bool,
    pub yes: bool,
}

/// `agentctl rewind [SESSION] [--run N | --seq SEQ] [--conversation] [--no-files] [--yes]`.
pub async fn rewind(ctx: &Context, args: RewindArgs) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let session_id = session_of(&connection, args.session).await?;
    let list = connection
        .request::<SessionCheckpoints>(&SessionCheckpointsParams {
            session_id: session_id.clone(),
        })
        .await?;
    let to_run_id = match (&args.run, args.seq) {
        (None, None) => {
            list_runs(ctx, &session_id, &list);
            return Ok(());
        }
        (Some(given), _) => Some(pick_run(&list.runs, given)?.run_id.clone()),
        (None, Some(_)) => None,
    };
    let mut params = SessionRewindParams {
        session_id: session_id.clone(),
        to_run_id,
        to_seq: args.seq,
        files: !args.no_files,
        conversation: args.conversation,
        confirm: false,
        expect: None,
    };
    let preview = connection.request::<SessionRewind>(&params).await?;
    if !ctx.json {
        show_plan(&preview);
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(CommandError::usage(
                "this would change the workspace; run it on a terminal to be asked, or add --yes",
            ));
        }
        if !crate::terminal::ask_yes("Rewind?").await {
            crate::warn_line!("nothing changed");
            return Ok(());
        }
    }
    params.confirm = true;
    params.expect = preview.current.clone();
    let done = connection.request::<SessionRewind>(&params).await?;
    if ctx.json {
        print_json(&done);
        return Ok(());
    }
    if let Some(plan) = &done.plan {
        crate::say!(
            "restored {} file(s), removed {}",
            plan.restore.len()
                - done
                    .failed
                    .iter()
                    .filter(|f| plan.restore.contains(&f.path))
                    .count(),
            plan.delete.len()
                - done
                    .failed
                    .iter()
                    .filter(|f| plan.delete.contains(&f.path))
                    .count()
        );
    }
    for failure in &done.failed {
        crate::warn_line!("not restored: {}: {}", failure.path, failure.error);
    }
    if let Some(undo) = done.undo_seq {
        crate::say!("undo with: agentctl rewind {session_id} --seq {undo}");
    }
    if let Some(branch) = &done.session_id {
        crate::say!("the conversation continues in {branch} (agentctl chat --session {branch})");
    }
    if !done.failed.is_empty() {
        return Err(CommandError::failed(
            "some files could not be restored (listed above)",
        ));
    }
    Ok(())
}

fn list_runs(ctx: &Context, session_id: &str, list: &SessionCheckpointsResult) {
    if ctx.json {
        print_json(list);
        return;
    }
    if let Some(reason) = &list.reason {
        crate::warn_line!("checkpoints: {reason}");
    }
    if list.runs.is_empty() {
        crate::say!("no runs in {session_id} yet");
        return;
    }
    for (index, run) in list.runs.iter().enumerate() {
        let changed = match (run.changed_files, run.finished, &run.checkpoint) {
            (_, _, None) => "no checkpoint".to_owned(),
            (_, false, _) => "running".to_owned(),
            (Some(1), _, _) => "1 file".to_owned(),
            (Some(n), _, _) => format!("{n} files"),
            (None, _, _) => "?".to_owned(),
        };
        crate::say!(
            "{:>3}  {:<13}  {}",
            index + 1,
            changed,
            crate::render::one_line(&run.prompt)
        );
    }
    crate::say!(
        "rewind to before run N with: agentctl rewind {session_id} --run N [--conversation]"
    );
}

fn show_plan(result: &SessionRewindResult) {
    let Some(plan) = &result.plan else {
        crate::say!("the conversation continues from that point in a new session (this one stays)");
        return;
    };
    if plan.restore.is_empty() && plan.delete.is_empty() {
        crate::say!("no file differs from that point");
    }
    for path in &plan.restore {
        let conflict = if plan.conflicts.contains(path) {
            "  (changed since the session's last run: that change is lost)"
        } else {
            ""
        };
        crate::say!("restore  {path}{conflict}");
    }
    for path in &plan.delete {
        let conflict = if plan.conflicts.contains(path) {
            "  (changed since the session's last run)"
        } else {
            ""
        };
        crate::say!("remove   {path}{conflict}");
    }
    for skipped in &plan.skipped {
        crate::say!("leave    {skipped}");
    }
}
