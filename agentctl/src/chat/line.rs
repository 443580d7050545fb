//! What a typed chat line means: a command (`/help`, `/mode plan`, …: the chat's own, or the
//! daemon's slash commands), a follow-up (a leading `>>`, or Alt+Enter), or plain text (a
//! prompt when idle, a steer while a run streams; a leading `//` keeps a line text, sent with one `/`). Pure: the
//! chat loop acts on the answer.

use protocol::approval::PermissionMode;

use crate::commands::slash::Slash;

/// One typed line, understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Typed {
    /// Nothing but whitespace.
    Empty,
    /// Text for the model: a prompt when idle, a steer while a run streams.
    Text(String),
    /// Text for the model, delivered when the run would end (a prompt when idle).
    FollowUp(String),
    /// A command answered here, without a model call.
    Command(LocalCommand),
}

/// The local commands (`/help` lists them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocalCommand {
    Help,
    Status,
    /// `/mode MODE`: the permission mode from the next run on.
    Mode(PermissionMode),
    /// `/model MODEL`: the model from the next run on.
    Model(String),
    /// `/model`: the configured providers' models, the chat's marked.
    Models,
    /// `/context`: how full the model's context window is, and the compaction limits.
    Context,
    Cost,
    Sessions,
    /// `/resume [ID]`: go on in another session, picked (or given).
    Resume(Option<String>),
    /// `/new`: the next prompt starts a new session.
    New,
    /// `/fork [TITLE]`: the chat goes on in a fork of its session (`session/fork`).
    Fork(Option<String>),
    /// `/diff [N|all]`: what the last run (run N, the session) changed.
    Diff(Option<String>),
    /// `/rewind [N [files|conversation] [yes]]`: a run picked, a preview, or the rewind.
    Rewind {
        run: Option<String>,
        what: super::rewind::RewindWhat,
        confirm: bool,
    },
    /// `/expand`: the whole result of the last tool call.
    Expand,
    Quit,
    /// A command that cannot be run as typed: the reason, said to the person.
    Invalid(String),
    /// A slash command of the daemon's (`session/command`).
    Daemon(Slash),
}

/// The help text of the chat's own commands, one per line; the daemon's follow it.
pub const HELP: &str = "\
/sessions       recent sessions of this directory
/resume [ID]    pick a session to go on in (arrows, type to filter, Tab: all directories)
/new            start a new session with the next prompt
/fork [TITLE]   go on in a fork of this session (it stays as it is)
/diff [N|all]   what the last run (run N, the whole session) changed in the files
/rewind [N]     pick a run (or run N): back to before it (files and conversation), previewed first
/expand         the whole result of the last tool call
/context        how full the model's context window is, and when it is compacted
/model [NAME]   the configured models, or the model from the next run on
/quit           leave (the session stays; `agentctl chat -c` continues it)
Tab completes a command's name; a line starting with // is sent as text.
While a run streams: Enter sends a steer, Alt+Enter or a leading >> a follow-up;
Ctrl-C cancels the run. When idle: Ctrl-C twice or Ctrl-D quits.";

/// The chat's own command names, completed with the daemon's.
pub const LOCAL_NAMES: &[&str] = &[
    "sessions", "resume", "new", "fork", "diff", "rewind", "expand", "context", "model", "quit",
    "exit",
];

/// Understand `line`, sent with Alt+Enter when `follow_up`.
pub fn parse(line: &str, follow_up: bool) -> Typed {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Typed::Empty;
    }
    if let Some(rest) = trimmed.strip_prefix(">>") {
        return match rest.trim() {
            "" => Typed::Empty,
            text => Typed::FollowUp(text.to_owned()),
        };
    }
    if let Some(slash) = crate::commands::slash::parse(trimmed) {
        return Typed::Command(command_of(slash));
    }
    // `//etc/hosts is wrong` is the text `/etc/hosts is wrong`: the escape goes.
    let text = match trimmed.strip_prefix("//") {
        Some(rest) => format!("/{rest}"),
        None => trimmed.to_owned(),
    };
    if follow_up {
        Typed::FollowUp(text)
    } else {
        Typed::Text(text)
    }
}

/// The command a slash line names.
fn command_of(slash: Slash) -> LocalCommand {
    let mut words = slash.args.split_whitespace();
    let name = slash.name.as_str();
    let argument = words.next();
    let extra = words.next().is_some();
    let no_argument = |command: LocalCommand| match argument {
        None => command,
        Some(_) => LocalCommand::Invalid(format!("/{name} takes no argument")),
    };
    match name {
        "help" => no_argument(LocalCommand::Help),
        "status" => no_argument(LocalCommand::Status),
        "cost" => no_argument(LocalCommand::Cost),
        "sessions" => no_argument(LocalCommand::Sessions),
        "resume" => match (argument, extra) {
            (id, false) => LocalCommand::Resume(id.map(str::to_owned)),
            _ => LocalCommand::Invalid("usage: /resume [ID]".to_owned()),
        },
        "new" => no_argument(LocalCommand::New),
        "fork" => LocalCommand::Fork(Some(slash.args.trim().to_owned()).filter(|t| !t.is_empty())),
        "quit" | "exit" => no_argument(LocalCommand::Quit),
        "expand" => no_argument(LocalCommand::Expand),
        "context" => no_argument(LocalCommand::Context),
        "diff" => match (argument, extra) {
            (run, false) => LocalCommand::Diff(run.map(str::to_owned)),
            _ => LocalCommand::Invalid("usage: /diff [N|all]".to_owned()),
        },
        "rewind" => rewind_of(&slash.args),
        "mode" => match (argument, extra) {
            (Some(mode), false) => match mode_named(mode) {
                Some(mode) => LocalCommand::Mode(mode),
                None => LocalCommand::Invalid(format!(
                    "unknown mode {mode}; use one of {}",
                    mode_names()
                )),
            },
            _ => LocalCommand::Invalid(format!("usage: /mode MODE ({})", mode_names())),
        },
        "model" => match (argument, extra) {
            (Some(model), false) => LocalCommand::Model(model.to_owned()),
            (None, _) => LocalCommand::Models,
            _ => LocalCommand::Invalid(
                "usage: /model MODEL (a model of the provider, or provider:model)".to_owned(),
            ),
        },
        _ => LocalCommand::Daemon(slash),
    }
}

/// `/rewind [N [files|conversation] [yes]]`.
fn rewind_of(args: &str) -> LocalCommand {
    use super::rewind::RewindWhat;
    let mut words = args.split_whitespace();
    let run = words.next().map(str::to_owned);
    let mut what = RewindWhat::Both;
    let mut confirm = false;
    for word in words {
        match word {
            "files" if what == RewindWhat::Both => what = RewindWhat::Files,
            "conversation" if what == RewindWhat::Both => what = RewindWhat::Conversation,
            "yes" if !confirm => confirm = true,
            _ => {
                return LocalCommand::Invalid(
                    "usage: /rewind [N [files|conversation] [yes]]".to_owned(),
                );
            }
        }
    }
    LocalCommand::Rewind { run, what, confirm }
}

/// A mode by its wire name, or a few spellings people type.
fn mode_named(name: &str) -> Option<PermissionMode> {
    let wanted = name.to_ascii_lowercase().replace(['-', '_'], "");
    PermissionMode::ALL
        .into_iter()
        .find(|mode| mode.as_str().to_ascii_lowercase() == wanted)
}

fn mode_names() -> String {
    PermissionMode::ALL.map(PermissionMode::as_str).join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(line: &str, follow_up: bool, expected: Typed) {
        assert_eq!(parse(line, follow_up), expected, "{line:?}");
    }

    #[test]
    fn text_follow_ups_and_commands() {
        check("  ", false, Typed::Empty);
        check("fix the bug", false, Typed::Text("fix the bug".into()));
        check("fix the bug", true, Typed::FollowUp("fix the bug".into()));
        check(">> then test", false, Typed::FollowUp("then test".into()));
        check(">>", false, Typed::Empty);
        check("//help me", false, Typed::Text("/help me".into()));
        check("//", true, Typed::FollowUp("/".into()));
        check("/help", false, Typed::Command(LocalCommand::Help));
        check("/quit", true, Typed::Command(LocalCommand::Quit));
        check("/exit", false, Typed::Command(LocalCommand::Quit));
        check("/fork", false, Typed::Command(LocalCommand::Fork(None)));
        check(
            "/fork  try the other way ",
            false,
            Typed::Command(LocalCommand::Fork(Some("try the other way".into()))),
        );
        check(
            "/mode plan",
            false,
            Typed::Command(LocalCommand::Mode(PermissionMode::Plan)),
        );
        check(
            "/mode accept-edits",
            false,
            Typed::Command(LocalCommand::Mode(PermissionMode::AcceptEdits)),
        );
        check(
            "/model mock:other",
            false,
            Typed::Command(LocalCommand::Model("mock:other".into())),
        );
        assert_eq!(parse("/model", false), Typed::Command(LocalCommand::Models));
        assert_eq!(
            parse("/context", false),
            Typed::Command(LocalCommand::Context),
        );
        // A lone `/` and a path are text; `//` escapes a leading slash and sends one.
        check("//etc/hosts", false, Typed::Text("/etc/hosts".into()));
        check("/", false, Typed::Text("/".into()));
        check(
            "/etc/hosts is odd",
            false,
            Typed::Text("/etc/hosts is odd".into()),
        );
        check(
            "/fix 42 a.rs",
            false,
            Typed::Command(LocalCommand::Daemon(Slash {
                name: "fix".into(),
                args: "42 a.rs".into(),
            })),
        );
    }

    #[test]
    fn invalid_commands_say_what_to_do() {
        for (line, expected) in [
            ("/mode", "usage: /mode MODE"),
            (
                "/mode sideways",
                "unknown mode sideways; use one of default",
            ),
            ("/model a b", "usage: /model MODEL"),
            ("/context now", "/context takes no argument"),
            ("/status now", "/status takes no argument"),
        ] {
            let Typed::Command(LocalCommand::Invalid(message)) = parse(line, false) else {
                panic!("{line} should be invalid");
            };
            assert!(message.starts_with(expected), "{line}: {message}");
        }
    }
}
