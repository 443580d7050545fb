//! `agentctl init [NOTES]`: the daemon's `/init` run (a model run that writes or improves the
//! workspace's AGENTS.md) started as `agentctl run "/init NOTES"` in a new session.

use crate::Context;
use crate::cli::{InitArgs, RunArgs, RunOutput};
use crate::output::CommandError;

/// Run `/init` in a new session of the workspace: the exit code is the run's, as for `run`.
pub async fn init(ctx: &Context, args: InitArgs) -> Result<u8, CommandError> {
    let run = run_args(args);
    super::run::run(ctx, run, &mut crate::follow::write_to_terminal).await
}

/// `agentctl run "/init NOTES"` with the workspace, model and approval policy given.
fn run_args(args: InitArgs) -> RunArgs {
    let prompt = format!("/init {}", args.notes.join(" "));
    RunArgs {
        cwd: args.cwd,
        model: args.model,
        session: None,
        continue_session: false,
        title: None,
        background: false,
        approve: args.approve,
        mode: None,
        agent: None,
        allow: Vec::new(),
        deny: Vec::new(),
        max_steps: None,
        append_system_prompt: None,
        images: Vec::new(),
        output: RunOutput::default(),
        prompt: prompt.trim_end().to_owned(),
    }
}
