//! `agentctl trust [DIR]` and `agentctl untrust [DIR]`: trust or stop trusting the project
//! DIR (default: the current directory) belongs to; the daemon resolves its root.

use std::path::{Path, PathBuf};

use protocol::methods::{ProjectTrust, ProjectUntrust};
use protocol::project::ProjectTrustParams;

use crate::Context;
use crate::output::{CommandError, print_json};

/// `agentctl trust [DIR]`.
pub async fn trust(ctx: &Context, dir: Option<PathBuf>) -> Result<(), CommandError> {
    let params = params(dir.as_deref())?;
    let connection = ctx.connect().await?;
    let result = connection.request::<ProjectTrust>(&params).await?;
    if ctx.json {
        print_json(&result);
    } else {
        crate::say!(
            "trusted {}: its allow rules apply from the next run",
            result.root
        );
    }
    Ok(())
}

/// `agentctl untrust [DIR]`.
pub async fn untrust(ctx: &Context, dir: Option<PathBuf>) -> Result<(), CommandError> {
    let params = params(dir.as_deref())?;
    let connection = ctx.connect().await?;
    let result = connection.request::<ProjectUntrust>(&params).await?;
    if ctx.json {
        print_json(&result);
    } else if result.was_trusted {
        crate::say!(
            "untrusted {}: only its deny and ask rules apply from the next run",
            result.root
        );
    } else {
        crate::say!("{} was not trusted; nothing changed", result.root);
    }
    Ok(())
}

/// The absolute path of DIR (or the current directory) the daemon resolves.
fn params(dir: Option<&Path>) -> Result<ProjectTrustParams, CommandError> {
    let cwd = std::env::current_dir()
        .map_err(|err| CommandError::failed(format!("cannot read the current directory: {err}")))?;
    let path = match dir {
        Some(dir) => cwd.join(dir),
        None => cwd,
    };
    Ok(ProjectTrustParams {
        path: path.display().to_string(),
    })
}
