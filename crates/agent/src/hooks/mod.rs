//! Hooks in Claude Code's format: commands from the user's config.toml (`[hooks]`), the
//! project's settings files (`.claude/settings.json`, `.claude/settings.local.json`,
//! `.agents/settings.*`) and a subagent's definition, run at the points of a session's life
//! (`intercept::Point`) with Claude Code's event names and stdin JSON, so existing hook
//! scripts work unchanged. [`Hooks`] is the session's [`Interceptor`].
//!
//! - Which hooks apply ([`load`]): the user's always; a project file's only while the project is
//!   trusted and that file's content is pinned (`FileTrust::Pinned`); a definition's while that
//!   subagent runs: from the user's dir always, from the project only while trust pins the
//!   definition's content (else not run, with a warning saying why).
//! - Matching: `matcher` is a regex over the whole tool name (ours, or Claude Code's name of it:
//!   `Write` matches `write_file`); `""`, `*` or none match all. SessionStart matches `source`,
//!   PreCompact/PostCompact `trigger`, SessionEnd `reason`, SubagentStart/SubagentStop the
//!   agent type; other events ignore it.
//! - Running (`runner`): every matching hook at once, `sh -c` in the session's cwd through the
//!   one process wrapper (its own group, killed as a whole on timeout or when the run is
//!   cancelled), the shell's scrubbed environment plus `CLAUDE_PROJECT_DIR`, project hooks in
//!   the shell's sandbox, stdin written without blocking, output bounded.
//! - Outcomes (`decision`): exit 0 with JSON on stdout (`decision`, `hookSpecificOutput`,
//!   `continue`, `systemMessage`, …) or plain text (context for UserPromptSubmit and
//!   SessionStart); exit 2 blocks with stderr as the reason; anything else is a warning.
//!   SessionStart's context goes into the session's first prompt ([`PendingStart`]).
//! - Each run is recorded as `hookStarted` / `hookCompleted` in the session's log.

mod config;
mod decision;
mod input;
mod runner;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};

use crate::intercept::{At, CompactTrigger, Interceptor, Outcome, Point};
use agentd_policy::process::sandbox::ShellSandbox;
use agentd_policy::trust::{FileTrust, ProjectTrust};
use protocol::event::Event;

pub use config::{
    DEFAULT_HOOK_TIMEOUT, HookProblem, MAX_HOOK_TIMEOUT, MAX_HOOKS_PER_SOURCE, parse_section,
};
pub use runner::{MAX_HOOK_OUTPUT_BYTES, MAX_HOOK_STDIN_BYTES};

/// The events hooks run at, with Claude Code's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PermissionRequest,
    PostToolUse,
    PostToolUseFailure,
    Notification,
    Stop,
    SubagentStart,
    SubagentStop,
    PreCompact,
    PostCompact,
    SessionEnd,
}

impl HookEvent {
    pub const ALL: &[HookEvent] = &[
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::Notification,
        HookEvent::Stop,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
        HookEvent::SessionEnd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::Notification => "Notification",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::PostCompact => "PostCompact",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }

    /// The event asked at `point` (None: hooks have no event there, e.g. a model request).
    pub fn of(point: &Point<'_>) -> Option<HookEvent> {
        let name = point.hook_event_name();
        HookEvent::ALL
            .iter()
            .copied()
            .find(|event| event.name() == name)
    }

    /// Whether a block (exit 2, `decision: "block"`) changes what happens at this event; at
    /// the others it is a warning.
    pub fn can_block(self) -> bool {
        matches!(
            self,
            HookEvent::UserPromptSubmit
                | HookEvent::PreToolUse
                | HookEvent::PermissionRequest
                | HookEvent::PostToolUse
                | HookEvent::PostToolUseFailure
                | HookEvent::Stop
                | HookEvent::SubagentStop
        )
    }
}

impl std::str::FromStr for HookEvent {
    type Err = ();

    fn from_str(text: &str) -> Result<Self, ()> {
        HookEvent::ALL
            .iter()
            .copied()
            .find(|event| event.name() == text)
            .ok_or(())
    }
}

/// Where a hook was defined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookSource {
    /// The user's config.toml `[hooks]`.
    Config(PathBuf),
    /// A project settings file, with its content's trust when it was read.
    Project { path: PathBuf, trust: FileTrust },
    /// A subagent definition's frontmatter, active while that subagent runs (`path`: its file).
    Agent { name: String, path: Option<PathBuf> },
}

impl HookSource {
    /// Whether the hook runs in the shell's sandbox: hooks a repository brought.
    fn sandboxed(&self) -> bool {
        matches!(self, HookSource::Project { .. })
    }

    /// Whether hooks from here run (a project file only when pinned).
    pub fn applies(&self) -> bool {
        match self {
            HookSource::Project { trust, .. } => *trust == FileTrust::Pinned,
            HookSource::Config(_) | HookSource::Agent { .. } => true,
        }
    }

    /// "config", the file's path, or "agent NAME" (for `/hooks`).
    pub fn label(&self) -> String {
        match self {
            HookSource::Config(_) => "config".to_owned(),
            HookSource::Project { path, .. } => path.display().to_string(),
            HookSource::Agent { name, .. } => format!("agent {name}"),
        }
    }
}

/// What a matcher matches: everything, or a regex over the whole subject.
#[derive(Clone, Debug)]
pub(crate) enum Matcher {
    All,
    Regex(regex::Regex),
}

impl Matcher {
    fn new(text: &str) -> Result<Matcher, regex::Error> {
        let text = text.trim();
        if text.is_empty() || text == "*" {
            return Ok(Matcher::All);
        }
        regex::RegexBuilder::new(&format!("^(?:{text})$"))
            .size_limit(1 << 20)
            .build()
            .map(Matcher::Regex)
    }

    fn matches(&self, subject: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Regex(regex) => {
                regex.is_match(subject)
                    || claude_code_name(subject).is_some_and(|name| regex.is_match(name))
            }
        }
    }
}

/// Claude Code's names of our tools, so a matcher written for it (`Write|Edit`, `Bash`) works.
const CLAUDE_CODE_TOOL_NAMES: &[(&str, &str)] = &[
    ("read_file", "Read"),
    ("write_file", "Write"),
    ("edit_file", "Edit"),
    ("list_dir", "LS"),
    ("glob", "Glob"),
    ("grep", "Grep"),
    ("run_shell", "Bash"),
    ("fetch_url", "WebFetch"),
    ("todo_write", "TodoWrite"),
    ("task", "Task"),
];

fn claude_code_name(ours: &str) -> Option<&'static str> {
    CLAUDE_CODE_TOOL_NAMES
        .iter()
        .find(|(name, _)| *name == ours)
        .map(|(_, theirs)| *theirs)
}

/// One hook command.
#[derive(Clone, Debug)]
pub struct HookDef {
    pub event: HookEvent,
    /// As written (`""`: all).
    pub matcher: String,
    compiled: Matcher,
    pub command: String,
    pub timeout: std::time::Duration,
    pub source: Arc<HookSource>,
}

impl HookDef {
    fn matches(&self, point: &Point<'_>) -> bool {
        match subject(point) {
            Some(subject) => self.compiled.matches(subject),
            None => true,
        }
    }
}

/// What a matcher is matched against at `point` (None: the matcher is not used there).
fn subject<'a>(point: &'a Point<'a>) -> Option<&'a str> {
    match point {
        Point::ToolCall { call }
        | Point::PermissionRequest { call, .. }
        | Point::ToolResult { call, .. } => Some(&call.name),
        Point::SessionStart { source } => Some(source),
        Point::SessionEnd { reason } => Some(reason),
        Point::SubagentStart { agent_type } => Some(agent_type),
        Point::Stop { agent_type, .. } => *agent_type,
        Point::PreCompact { trigger, .. } | Point::PostCompact { trigger, .. } => {
            Some(trigger_name(*trigger))
        }
        Point::UserPrompt { .. }
        | Point::Notification { .. }
        | Point::Request { .. }
        | Point::ProviderRequest { .. } => None,
    }
}

fn trigger_name(trigger: CompactTrigger) -> &'static str {
    match trigger {
        CompactTrigger::Manual => "manual",
        CompactTrigger::Auto => "auto",
    }
}

/// The session a hook runs for: what its stdin names and where it runs.
#[derive(Clone, Debug)]
pub struct HookEnv {
    pub session_id: String,
    /// The session file (`transcript_path`).
    pub transcript_path: PathBuf,
    /// The session's cwd: the hook's cwd.
    pub cwd: PathBuf,
    /// The project root (`CLAUDE_PROJECT_DIR`).
    pub project_dir: PathBuf,
    /// The session's mode as Claude Code names it (`default`, `plan`, `acceptEdits`,
    /// `bypassPermissions`).
    pub permission_mode: String,
    /// The shell's sandbox, entered by project hooks.
    pub sandbox: Arc<ShellSandbox>,
}

/// The context SessionStart hooks gave, until the session's first prompt takes it. Shared by
/// the session and its runs' [`Hooks`].
#[derive(Clone, Default)]
pub struct PendingStart {
    slot: Arc<Mutex<Option<HeldContext>>>,
}

/// The SessionStart hooks' context, awaited by whoever takes it.
type HeldContext = Shared<BoxFuture<'static, Vec<String>>>;

impl std::fmt::Debug for PendingStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PendingStart")
    }
}

impl PendingStart {
    /// Holds what `context` (the SessionStart hooks, already running) will give.
    pub fn hold(&self, context: BoxFuture<'static, Vec<String>>) {
        if let Ok(mut slot) = self.slot.lock() {
            *slot = Some(context.shared());
        }
    }

    /// The held context (waiting for the hooks to finish, each bounded by its timeout), once.
    async fn take(&self) -> Vec<String> {
        let held = self.slot.lock().ok().and_then(|mut slot| slot.take());
        match held {
            Some(context) => context.await,
            None => Vec::new(),
        }
    }
}

/// The hooks of one session (or one run of it), asked at each point: the session's
/// [`Interceptor`].
pub struct Hooks {
    list: Arc<[HookDef]>,
    env: Arc<HookEnv>,
    start: PendingStart,
}

impl Hooks {
    pub fn new(list: Vec<HookDef>, env: HookEnv, start: PendingStart) -> Self {
        Self {
            list: list.into(),
            env: Arc::new(env),
            start,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Whether a hook is defined for `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.list.iter().any(|hook| hook.event == event)
    }

    /// Every matching hook at `point`, at once, merged in their order.
    pub async fn ask(&self, at: At<'_>, point: &Point<'_>) -> Outcome {
        let mut outcome = Outcome::default();
        if let Point::UserPrompt { .. } = point {
            outcome.context.extend(self.start.take().await);
        }
        let Some(event) = HookEvent::of(point) else {
            return outcome;
        };
        let matching: Vec<&HookDef> = self
            .list
            .iter()
            .filter(|hook| hook.event == event && hook.matches(point))
            .collect();
        if matching.is_empty() {
            return outcome;
        }
        let stdin: Arc<[u8]> = input::stdin_json(event, point, &self.env).into();
        let said = futures::future::join_all(
            matching
                .iter()
                .map(|hook| self.run_one(at, hook, event, &stdin)),
        )
        .await;
        for one in said {
            outcome.merge(one);
        }
        outcome
    }

    /// Runs one hook, recorded as `hookStarted` then `hookCompleted`.
    async fn run_one(
        &self,
        at: At<'_>,
        hook: &HookDef,
        event: HookEvent,
        stdin: &Arc<[u8]>,
    ) -> Outcome {
        let command = event_command(&hook.command);
        let run_id = at.run_id.map(str::to_owned);
        if let Err(error) = at
            .log
            .append(Event::HookStarted {
                run_id: run_id.clone(),
                event: event.name().to_owned(),
                command: command.clone(),
            })
            .await
        {
            tracing::debug!("hookStarted not logged: {error:#}");
        }
        let began = Instant::now();
        let ran = runner::run(hook, Arc::clone(stdin), &self.env).await;
        let decided = decision::decide(event, hook, &ran);
        let duration_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
        if let Err(error) = at
            .log
            .append(Event::HookCompleted {
                run_id,
                event: event.name().to_owned(),
                command,
                duration_ms,
                outcome: decided.status.to_owned(),
                reason: decided.reason,
            })
            .await
        {
            tracing::debug!("hookCompleted not logged: {error:#}");
        }
        decided.outcome
    }
}

impl Interceptor for Hooks {
    fn intercept<'a>(&'a self, at: At<'a>, point: &'a Point<'a>) -> BoxFuture<'a, Outcome> {
        self.ask(at, point).boxed()
    }
}

/// The most characters of a command an event carries (one line).
const MAX_EVENT_COMMAND_CHARS: usize = 200;

fn event_command(command: &str) -> String {
    let line = command.split_whitespace().collect::<Vec<_>>().join(" ");
    agentd_core::truncate::truncate_middle(&line, MAX_EVENT_COMMAND_CHARS).into_owned()
}

/// The hooks that apply to a run in `workspace` and why the others do not: the user's
/// (`user`, from config.toml), the project's pinned settings files, and `agent`'s (a running
/// subagent's definition, as `(name, its file, whether it is the project's, its hooks value)`).
/// Blocking: reads the project's settings files.
pub fn load(
    user: &[HookDef],
    workspace: &Path,
    trust: &ProjectTrust,
    agent: Option<AgentHooks<'_>>,
) -> (Vec<HookDef>, Vec<String>) {
    let mut hooks: Vec<HookDef> = user.to_vec();
    let (files, mut warnings) = config::project_files(workspace, trust);
    for file in files {
        if file.hooks.is_empty() {
            continue;
        }
        if file.verdict == FileTrust::Pinned {
            hooks.extend(file.hooks);
        } else {
            warnings.push(format!(
                "{}, so its {} hook(s) do not run. To run them, {}",
                trust.why_withheld(&file.path, file.verdict),
                file.hooks.len(),
                trust.how_to_trust()
            ));
        }
    }
    if let Some(agent) = agent {
        let (found, problems) = agent.hooks();
        warnings.extend(problems);
        hooks.extend(found);
    }
    (hooks, warnings)
}

/// A running subagent's definition, for its hooks.
#[derive(Clone, Debug)]
pub struct AgentHooks<'a> {
    pub name: &'a str,
    pub path: Option<&'a Path>,
    /// Why its hooks do not run (a project definition whose content trust does not pin), as a
    /// warning; None: they run.
    pub withheld: Option<String>,
    /// Its frontmatter's `hooks`, as written (a JSON object in a text).
    pub raw: &'a str,
}

impl AgentHooks<'_> {
    /// Its hooks (Stop is SubagentStop for a subagent, as in Claude Code) and its problems.
    fn hooks(&self) -> (Vec<HookDef>, Vec<String>) {
        let file = self
            .path
            .map(|path| path.display().to_string())
            .unwrap_or_else(|| self.name.to_owned());
        if let Some(why) = &self.withheld {
            return (
                Vec::new(),
                vec![format!(
                    "the hooks of the project's agent definition {file} do not run: {why}"
                )],
            );
        }
        let value: serde_json::Value = match serde_json::from_str(self.raw) {
            Ok(value) => value,
            Err(error) => {
                return (
                    Vec::new(),
                    vec![format!(
                        "the hooks of {file} are not used: `hooks` must be a JSON object ({error})"
                    )],
                );
            }
        };
        let source = Arc::new(HookSource::Agent {
            name: self.name.to_owned(),
            path: self.path.map(Path::to_path_buf),
        });
        let (mut hooks, problems) = parse_section(&value, &source);
        for hook in &mut hooks {
            if hook.event == HookEvent::Stop {
                hook.event = HookEvent::SubagentStop;
            }
        }
        let problems = problems
            .iter()
            .map(|problem| format!("{file}: {problem}"))
            .collect();
        (hooks, problems)
    }
}

/// One hook as `/hooks` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookListing {
    pub event: &'static str,
    /// As written (`""`: all).
    pub matcher: String,
    pub command: String,
    pub timeout_secs: u64,
    /// "config", the settings file's path, or "agent NAME".
    pub source: String,
    /// Whether it runs: always for the user's; for a project file, while its content is the
    /// one trusted.
    pub trusted: bool,
    /// Why it does not run (None: it does).
    pub note: Option<String>,
}

/// What hooks are loaded for `workspace`, from where, trusted or not: the user's `user`
/// (config.toml) and every project settings file's, applied or not (for `/hooks`). Blocking:
/// reads the project's settings files.
pub fn describe(user: &[HookDef], workspace: &Path, trust: &ProjectTrust) -> Vec<HookListing> {
    let (files, _) = config::project_files(workspace, trust);
    let listing = |hook: &HookDef, note: Option<String>| HookListing {
        event: hook.event.name(),
        matcher: hook.matcher.clone(),
        command: hook.command.clone(),
        timeout_secs: hook.timeout.as_secs(),
        source: hook.source.label(),
        trusted: note.is_none(),
        note,
    };
    let mut listed: Vec<HookListing> = user.iter().map(|hook| listing(hook, None)).collect();
    for file in files {
        let note = (file.verdict != FileTrust::Pinned)
            .then(|| trust.why_withheld(&file.path, file.verdict));
        listed.extend(file.hooks.iter().map(|hook| listing(hook, note.clone())));
    }
    listed
}
