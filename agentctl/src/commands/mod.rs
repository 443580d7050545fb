//! One module per group of subcommands.

pub mod agents;
pub mod approvals;
pub mod attach;
pub mod budgets;
pub mod control;
pub mod daemon;
pub mod init;
pub mod mcp;
pub mod mcp_login;
pub mod memory;
pub mod restart;
pub mod rewind;
pub mod run;
pub mod run_input;
pub mod run_result;
pub mod sessions;
pub mod skills;
pub mod slash;
pub mod task;
pub mod trust;

use std::io::{IsTerminal, Read};

use crate::Context;
use crate::cli::ColorChoice;
use crate::output::CommandError;
use crate::render::RenderOptions;
use crate::render::markdown::MarkdownOptions;

/// The text of a message argument: `-` reads all of stdin. Empty text is a usage error.
pub fn message_text(arg: &str, what: &str) -> Result<String, CommandError> {
    let text = if arg == "-" {
        // Blocking is fine: nothing else runs yet.
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|err| {
            CommandError::failed(format!("cannot read the {what} from stdin: {err}"))
        })?;
        text
    } else {
        arg.to_owned()
    };
    if text.trim().is_empty() {
        return Err(CommandError::usage(format!("the {what} is empty")));
    }
    Ok(text)
}

/// How `run` and `attach` render: JSON lines with `--json`, an activity line redrawn in place
/// when stderr is a terminal of known width, the answer's markdown rendered when stdout is a
/// terminal, colours as `--color` and `NO_COLOR` say.
pub fn render_options(ctx: &Context) -> RenderOptions {
    let stderr_is_tty = std::io::stderr().is_terminal();
    let stdout_is_tty = std::io::stdout().is_terminal();
    let color = color_on(ctx, stderr_is_tty);
    RenderOptions {
        json: ctx.json,
        stderr_is_tty,
        width: stderr_is_tty.then(crate::terminal::stderr_width).flatten(),
        color,
        markdown: (stdout_is_tty && !ctx.json).then(|| markdown_options(ctx)),
    }
}

/// How the answer's markdown is rendered on a terminal's stdout: in colour as `--color` and
/// `NO_COLOR` say, wrapped to its width.
pub fn markdown_options(ctx: &Context) -> MarkdownOptions {
    MarkdownOptions {
        color: color_on(ctx, true),
        width: crate::terminal::stdout_width().unwrap_or(FALLBACK_WIDTH),
    }
}

/// Columns assumed when a terminal does not say its width.
pub const FALLBACK_WIDTH: usize = 80;

/// Whether output to a stream that is a terminal when `is_tty` gets colours: `--color`, and with
/// `auto` the terminal, `NO_COLOR` and `TERM`.
pub fn color_on(ctx: &Context, is_tty: bool) -> bool {
    match ctx.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => crate::render::auto_color(
            is_tty,
            std::env::var("NO_COLOR").ok().as_deref(),
            std::env::var("TERM").ok().as_deref(),
        ),
    }
}
