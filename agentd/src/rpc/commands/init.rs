//! `/init`: a run whose fixed prompt asks the model to look at the workspace with its read
//! tools and write `AGENTS.md` (the build and test commands, the layout, the conventions), or,
//! when the workspace has one, to improve it rather than write it anew. The write is a normal
//! tool call, so the session's permissions decide it as they decide any other.

use std::path::Path;

use protocol::commands::SessionCommandResult;

use super::super::RpcResult;
use super::run_prompt;
use crate::session::actor::Session;
use crate::state::DaemonState;

/// The notes file `/init` writes, at the workspace's root.
pub(super) const NOTES_FILE: &str = "AGENTS.md";

/// What the prompt asks for, whether the file exists or not.
const WHAT_TO_WRITE: &str = "\
AGENTS.md is what a coding agent reads before it works in this repository, so keep it short \
and concrete: the exact commands to build, test, lint and run (one test alone too); the layout \
(the main directories and what each holds); the conventions the code follows that a newcomer \
would get wrong (style, naming, errors, tests, commits); anything surprising. Write only what \
you found in the repository, no generic advice.";

/// Start the `/init` run in `session`; `args` (trimmed) are the person's additions.
pub(super) async fn start(
    state: &DaemonState,
    session: &Session,
    args: &str,
    client_request_id: Option<String>,
) -> RpcResult<SessionCommandResult> {
    let workspace = Path::new(&session.header.cwd).to_path_buf();
    let exists = tokio::task::spawn_blocking(move || workspace.join(NOTES_FILE).is_file())
        .await
        .unwrap_or(false);
    let prompt = run_prompt::Prompt {
        text: prompt(exists, args),
        model: None,
        narrowing: None,
    };
    run_prompt::start(state, session, prompt, client_request_id).await
}

/// The run's prompt: write the file, or improve the one there; `args` added as the person's.
pub(super) fn prompt(exists: bool, args: &str) -> String {
    let task = if exists {
        format!(
            "This workspace has an {NOTES_FILE} at its root. Read it, then look at the \
             repository with your read tools (list_dir, glob, grep, read_file: the README, the \
             build and CI files, a few sources and tests) and improve {NOTES_FILE} rather than \
             replace it: keep what is still true, correct what the repository contradicts, add \
             what is missing. Write the result with edit_file or write_file."
        )
    } else {
        format!(
            "Write an {NOTES_FILE} at the root of this workspace. First look at the repository \
             with your read tools (list_dir, glob, grep, read_file: the README, the build and \
             CI files, a few sources and tests), then write {NOTES_FILE} with write_file."
        )
    };
    let mut text = format!("{task}\n\n{WHAT_TO_WRITE}");
    if !args.is_empty() {
        text.push_str(&format!("\n\nThe user adds: {args}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_writes_a_new_file_or_improves_the_one_there() {
        let new = prompt(false, "");
        assert!(new.starts_with("Write an AGENTS.md at the root"), "{new}");
        assert!(
            new.contains("write_file") && !new.contains("improve"),
            "{new}"
        );
        let improve = prompt(true, "mention the Windows build");
        assert!(
            improve.contains("improve AGENTS.md rather than replace it"),
            "{improve}"
        );
        assert!(
            improve.ends_with("The user adds: mention the Windows build"),
            "{improve}"
        );
    }
}
