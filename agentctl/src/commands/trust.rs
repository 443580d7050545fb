//! `agentctl trust [DIR] [--show]` and `agentctl untrust [DIR]`: review, trust or stop trusting
//! the project DIR (default: the current directory) belongs to; the daemon resolves its root.
//! A trust pins exactly the files the review before it read (their digests go back with the
//! request), so what is trusted is what was printed.

use std::path::{Path, PathBuf};

use protocol::methods::{ProjectTrust, ProjectUntrust};
use protocol::project::{
    PinnedFile, ProjectFile, ProjectFileStatus, ProjectTrustParams, ProjectTrustResult,
    ProjectUntrustParams,
};

use crate::Context;
use crate::output::{CommandError, print_json};

/// `agentctl trust [DIR] [--show]`.
pub async fn trust(ctx: &Context, dir: Option<PathBuf>, show: bool) -> Result<(), CommandError> {
    let path = absolute(dir.as_deref())?;
    let connection = ctx.connect().await?;
    let review = connection
        .request::<ProjectTrust>(&ProjectTrustParams {
            path: path.clone(),
            dry_run: true,
            files: None,
        })
        .await?;
    if show {
        if ctx.json {
            print_json(&review);
        } else {
            print_review(&review, true);
        }
        return Ok(());
    }
    let pinned = review
        .files
        .iter()
        .map(|file| PinnedFile {
            path: file.path.clone(),
            digest: file.digest.clone(),
        })
        .collect();
    let result = connection
        .request::<ProjectTrust>(&ProjectTrustParams {
            path,
            dry_run: false,
            files: Some(pinned),
        })
        .await?;
    if ctx.json {
        print_json(&result);
    } else {
        print_review(&result, false);
    }
    Ok(())
}

/// `agentctl untrust [DIR]`.
pub async fn untrust(ctx: &Context, dir: Option<PathBuf>) -> Result<(), CommandError> {
    let params = ProjectUntrustParams {
        path: absolute(dir.as_deref())?,
    };
    let connection = ctx.connect().await?;
    let result = connection.request::<ProjectUntrust>(&params).await?;
    if ctx.json {
        print_json(&result);
    } else if result.was_trusted {
        crate::say!(
            "untrusted {}: only the deny and ask rules of its files apply from the next run",
            result.root
        );
    } else {
        crate::say!("{} was not trusted; nothing changed", result.root);
    }
    Ok(())
}

/// The review (`show`) or the outcome of a trust, file by file: what each file applies, the
/// new and changed ones first.
fn print_review(result: &ProjectTrustResult, show: bool) {
    let fresh: Vec<&ProjectFile> = result
        .files
        .iter()
        .filter(|file| file.status != ProjectFileStatus::Unchanged)
        .collect();
    let unchanged = result.files.len() - fresh.len();
    if show {
        let state = if result.trusted {
            "trusted"
        } else {
            "not trusted"
        };
        crate::say!("project {} ({state})", result.root);
    } else {
        crate::say!(
            "trusted {}: its files below apply from the next run, as long as they stay as they are now",
            result.root
        );
    }
    for file in &fresh {
        print_file(file);
    }
    if unchanged > 0 {
        let files: Vec<&str> = result
            .files
            .iter()
            .filter(|file| file.status == ProjectFileStatus::Unchanged)
            .map(|file| file.path.as_str())
            .collect();
        crate::say!("  unchanged since trusted: {}", files.join(", "));
    }
    for gone in &result.removed {
        crate::say!("  removed since trusted: {gone}");
    }
    for unreadable in &result.unreadable {
        crate::say!("  never applied: {unreadable}");
    }
    if result.files.is_empty() && result.removed.is_empty() {
        crate::say!("  no settings or .mcp.json files: trusting changes nothing yet");
    }
    if show {
        if fresh.is_empty() && result.removed.is_empty() && result.trusted {
            crate::say!("nothing new to trust");
        } else {
            crate::say!("trust exactly this with `agentctl trust {}`", result.root);
        }
    }
}

/// One new or changed file and what it sets.
fn print_file(file: &ProjectFile) {
    let status = match file.status {
        ProjectFileStatus::New => "new",
        ProjectFileStatus::Changed => "changed",
        ProjectFileStatus::Unchanged => "unchanged",
    };
    crate::say!("  {status}: {}", file.path);
    let list = |label: &str, rules: &[String]| {
        if !rules.is_empty() {
            crate::say!("    {label}: {}", rules.join(", "));
        }
    };
    list("allow", &file.allow);
    list("ask", &file.ask);
    list("deny", &file.deny);
    if let Some(mode) = &file.default_mode {
        crate::say!("    default mode: {mode}");
    }
    for server in &file.servers {
        match &server.url {
            Some(url) if server.command.is_empty() => {
                crate::say!("    MCP server {} (http): {url}", server.name);
            }
            _ => crate::say!(
                "    MCP server {} (runs): {}",
                server.name,
                server.command.join(" ")
            ),
        }
        if let Some(cwd) = &server.cwd {
            crate::say!("      cwd: {cwd}");
        }
        for pair in server.env.iter().chain(&server.headers) {
            crate::say!("      {pair}");
        }
    }
    if let Some(hooks) = &file.hooks {
        crate::say!("    hooks: {hooks}");
    }
    for problem in &file.problems {
        crate::say!("    problem: {problem}");
    }
}

/// The absolute path of DIR (or the current directory) the daemon resolves.
fn absolute(dir: Option<&Path>) -> Result<String, CommandError> {
    let cwd = std::env::current_dir()
        .map_err(|err| CommandError::failed(format!("cannot read the current directory: {err}")))?;
    let path = match dir {
        Some(dir) => cwd.join(dir),
        None => cwd,
    };
    Ok(path.display().to_string())
}
