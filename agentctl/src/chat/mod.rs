//! `agentctl chat` (and `agentctl` alone on a terminal): an interactive session in the current
//! directory. A line editor (`editor`) reads prompts while the session's events stream through
//! the same `render::Renderer` and `approval_desk::ApprovalDesk` that `run` uses; what the
//! renderer writes and its activity line show in a live area above the prompt (`live`; `showing`
//! sets the renderer up and brings the area up to date); a line
//! typed during a run is a steer or a follow-up (`line`), commands are answered in `local`
//! (the chat's own) or sent to the daemon, and Tab completes their names (`completion`).

mod approvals;
mod completion;
mod editor;
mod gauges;
mod line;
mod live;
mod local;
mod mentions;
mod printer;
mod reconnect;
mod replay;
mod resume;
mod rewind;
mod session;
mod showing;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use protocol::approval::PermissionMode;
use protocol::error::CONFLICT;
use protocol::event::Event;
use protocol::methods::{SessionFollowUp, SessionPrompt, SessionSteer};
use protocol::session::{QueueMessageParams, SessionInfo, SessionPromptParams};
use tokio::time::{Interval, MissedTickBehavior};

use crate::Context;
use crate::approval_desk::ApprovalDesk;
use crate::client::{ClientError, Connection, EventStream};
use crate::commands::run_input::newest_session_in;
use crate::follow::{self, RawEnvelope};
use crate::output::{CommandError, EXIT_OK};
use crate::platform::{Interrupts, SavedTerminal};
use crate::render::{Renderer, one_line};
use editor::{Input, LineEditor};
use line::Typed;
use live::LiveArea;
use session::session_info;

/// The editor's prompt. One for every state: a line being typed keeps its prompt while a run
/// starts or ends, so what a line becomes (a prompt when idle, a steer while a run streams) is
/// said when it is sent ("queued steer: …").
const PROMPT: &str = "› ";

/// How often the live area is brought up to date while a run is shown: the text streamed
/// meanwhile is written in one message (the printer's queue stays short), and the activity
/// line's spinner and seconds move on.
const LIVE_INTERVAL: Duration = Duration::from_millis(100);

/// Which session the chat starts in.
#[derive(Clone, Debug, Default)]
pub struct ChatStart {
    /// Continue this session.
    pub session: Option<String>,
    /// Continue the newest session of the current directory.
    pub continue_latest: bool,
    /// Pick the session to continue (`--resume`).
    pub resume: bool,
    /// Model of the session the first prompt creates.
    pub model: Option<String>,
    /// Permission mode of the session the first prompt creates.
    pub mode: Option<PermissionMode>,
}

/// Run the chat until the person quits; the session stays.
pub async fn chat(ctx: &Context, start: ChatStart) -> Result<u8, CommandError> {
    if ctx.json {
        return Err(CommandError::usage(
            "agentctl chat is interactive and has no --json output; use `agentctl run --json`",
        ));
    }
    // Before anything starts a daemon: a script gets its answer at once.
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        if start.resume {
            return Err(CommandError::usage(
                "agentctl chat --resume picks a session on a terminal, and stdin or stdout is \
                 not one; `agentctl sessions list` shows the sessions, `agentctl chat --session \
                 ID` (on a terminal) or `agentctl run --session ID PROMPT` continues one",
            ));
        }
        return Err(not_a_terminal("stdin or stdout is not a terminal"));
    }
    let cwd = std::env::current_dir()
        .map_err(|err| CommandError::failed(format!("cannot read the current directory: {err}")))?;
    let connection = ctx.connect_answering_approvals().await?;
    // Said before the editor takes the terminal, as `run` says it.
    crate::env_check::warn_if_differs(&connection).await;
    // Before the picker: Ctrl-C cancels it rather than killing the process in raw mode.
    let mut interrupts = Interrupts::listen()
        .map_err(|err| CommandError::failed(format!("cannot listen for Ctrl-C: {err}")))?;
    let session = match (&start.session, start.continue_latest) {
        (Some(given), _) => {
            let session_id = crate::ids::session(&connection, given).await?;
            Some(session_info(&connection, &session_id).await?)
        }
        (None, true) => Some(newest_session_in(&connection, &cwd).await?),
        (None, false) if start.resume => {
            match resume::pick_at_start(&connection, &cwd, &mut interrupts).await? {
                Some(session_id) => Some(session_info(&connection, &session_id).await?),
                None => {
                    crate::say!("no session chosen");
                    return Ok(EXIT_OK);
                }
            }
        }
        (None, false) => None,
    };
    // Saved before the editor thread can put the terminal in raw mode.
    let saved_terminal = SavedTerminal::save();
    let command_names = completion::CommandNames::default();
    // The names are there before the first prompt shows (the session's MCP prompts join once
    // it is attached).
    command_names.set(local::command_names(&connection, &cwd, None).await);
    let editor = LineEditor::start(PROMPT, editor::history_path(), command_names.clone())
        .map_err(|err| not_a_terminal(&err.to_string()))?;
    let mut live_ticks = tokio::time::interval(LIVE_INTERVAL);
    live_ticks.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut chat = Chat {
        connection,
        cwd,
        editor,
        live: LiveArea::default(),
        live_ticks,
        session: None,
        last_seq: 0,
        new_session: start,
        run: None,
        next_run: None,
        idle_interrupts: 0,
        interrupts,
        last_words: String::new(),
        reconnect_wait: ctx.reconnect_wait,
        command_names,
        thinking: ctx.thinking,
        // Stdout is a terminal here: colours unless `--color never` or `NO_COLOR`.
        color: crate::commands::color_on(ctx, true),
        last_result: None,
        context: None,
    };
    let result = chat.run(session).await;
    let Chat {
        editor, last_words, ..
    } = chat;
    // Joining the printer waits for the terminal: off the async runtime.
    let stopped = tokio::task::spawn_blocking(move || editor.stop(&last_words)).await;
    drop(saved_terminal);
    if let Err(err) = stopped {
        return Err(CommandError::failed(format!(
            "agentctl chat could not stop its line editor: {err}"
        )));
    }
    result
}

/// The refusal to chat without a terminal.
fn not_a_terminal(why: &str) -> CommandError {
    CommandError::usage(format!(
        "agentctl chat needs a terminal ({why}); use `agentctl run PROMPT` in scripts"
    ))
}

/// The chat's state.
struct Chat {
    connection: Connection,
    /// `--thinking`: how the model's reasoning is shown.
    thinking: crate::render::Thinking,
    /// Colours (`--color`, `NO_COLOR`), as `run` decides them.
    color: bool,
    /// How full the context window was at the last model call of a run no longer shown
    /// (`/context`).
    context: Option<crate::render::summary::Context>,
    /// The last tool call of a run no longer shown, for `/expand`.
    last_result: Option<crate::render::ToolResult>,
    cwd: PathBuf,
    editor: LineEditor,
    live: LiveArea,
    /// Ticks while a run is shown: the live area is redrawn at most this often.
    live_ticks: Interval,
    /// The session prompts go to, with its event subscription; `None` until the first prompt
    /// (or after `/new`).
    session: Option<Attached>,
    /// Seq of the last persisted event seen: a run's renderer starts after it.
    last_seq: u64,
    /// Model and mode of the session the next prompt creates.
    new_session: ChatStart,
    /// The run being shown.
    run: Option<ActiveRun>,
    /// A run started (by a follow-up that found the run ending) while another was shown;
    /// at most one, as runs of a session come one after another and words sent meanwhile
    /// are queued into it.
    next_run: Option<String>,
    /// Ctrl-C presses in a row while idle: the second quits.
    idle_interrupts: u32,
    interrupts: Interrupts,
    /// The line written once the editor has stopped.
    last_words: String,
    /// How long to wait for the daemon to come back when the connection is lost.
    reconnect_wait: Duration,
    /// The names Tab completes, refreshed from `commands/list`.
    command_names: completion::CommandNames,
}

struct Attached {
    session_id: String,
    events: EventStream,
}

/// One run shown as it streams, its approvals answered at the prompt.
struct ActiveRun {
    renderer: Renderer,
    desk: ApprovalDesk,
    /// Ctrl-C asked the daemon to cancel it; another Ctrl-C quits.
    cancelling: bool,
    /// `n` was pressed and the desk asks for a reason: the next line is that reason.
    typing_reason: bool,
}

/// Why the loop woke.
enum Wake {
    Input(Input),
    Event(Option<Result<RawEnvelope, ClientError>>),
    Interrupt,
    /// Time to redraw the live area.
    Tick,
    /// The daemon closed the connection (stopped or crashed).
    Disconnected,
}

/// How the loop ends.
enum Next {
    Continue,
    Quit,
}

impl Chat {
    async fn run(&mut self, session: Option<SessionInfo>) -> Result<u8, CommandError> {
        self.say(&format!(
            "agentctl chat in {} · /help for commands · Ctrl-D quits",
            self.cwd.display()
        ))
        .await;
        if let Some(info) = session {
            self.open_session(info).await?;
        }
        self.refresh_command_names().await;
        loop {
            let wake = {
                let events = self.session.as_mut().map(|session| &mut session.events);
                let ticks = self.run.is_some().then_some(&mut self.live_ticks);
                wait(
                    &self.connection,
                    &mut self.editor,
                    events,
                    &mut self.interrupts,
                    ticks,
                )
                .await
            };
            let next = match wake {
                Wake::Input(input) => self.on_input(input).await?,
                Wake::Interrupt => self.on_interrupt().await,
                Wake::Tick => {
                    self.on_tick().await;
                    Next::Continue
                }
                Wake::Event(Some(Ok(envelope))) => {
                    self.on_event(envelope).await;
                    Next::Continue
                }
                Wake::Event(Some(Err(err))) => {
                    self.say(&format!("agentctl: skipping an unreadable event: {err}"))
                        .await;
                    Next::Continue
                }
                Wake::Event(None) => {
                    self.on_stream_end().await?;
                    Next::Continue
                }
                Wake::Disconnected => {
                    self.wait_out_loss().await?;
                    Next::Continue
                }
            };
            if let Next::Quit = next {
                self.goodbye();
                return Ok(EXIT_OK);
            }
        }
    }

    async fn on_input(&mut self, input: Input) -> Result<Next, CommandError> {
        if !matches!(input, Input::Interrupt) {
            self.idle_interrupts = 0;
        }
        match input {
            Input::Interrupt => Ok(self.on_interrupt().await),
            Input::Eof if self.run.is_none() => Ok(Next::Quit),
            Input::Eof => {
                self.say("a run is active: Ctrl-C cancels it, then Ctrl-D quits")
                    .await;
                Ok(Next::Continue)
            }
            Input::Failed(err) => Err(CommandError::failed(format!(
                "agentctl chat cannot read the terminal: {err}"
            ))),
            Input::Line { text, follow_up } => {
                // The editor waits while the chat shows a picker: it reads again after this.
                let picks = editor::opens_picker(&text);
                let next = self.on_line(text, follow_up).await;
                if picks {
                    self.editor.go_on();
                }
                next
            }
        }
    }

    /// A typed line: a command, a steer or a follow-up, a prompt, or an approval's answer.
    async fn on_line(&mut self, text: String, follow_up: bool) -> Result<Next, CommandError> {
        // The editor erased the line it read: it stays on the screen as a line of
        // ours, above the live area.
        if !text.trim().is_empty() {
            self.say(&format!("{PROMPT}{text}")).await;
        }
        let typed = line::parse(&text, follow_up);
        // While an approval waits, a line answers it; local commands still work.
        if self.run.as_ref().is_some_and(|run| run.desk.is_prompting())
            && !matches!(typed, Typed::Command(_))
        {
            self.on_approval_line(&text).await;
            return Ok(Next::Continue);
        }
        match typed {
            Typed::Empty => Ok(Next::Continue),
            Typed::Command(command) => self.on_command(command).await,
            Typed::Text(text) if self.run.is_some() => {
                let text = self.with_text_mentions(text).await;
                self.steer(text).await;
                Ok(Next::Continue)
            }
            Typed::FollowUp(text) if self.run.is_some() => {
                let text = self.with_text_mentions(text).await;
                self.follow_up(text).await;
                Ok(Next::Continue)
            }
            Typed::Text(text) | Typed::FollowUp(text) => {
                let (text, images) = self.with_mentions(text).await;
                self.prompt(text, images).await?;
                Ok(Next::Continue)
            }
        }
    }

    /// Ctrl-C: cancel the run; when idle, the second in a row quits.
    async fn on_interrupt(&mut self) -> Next {
        let Some(run) = self.run.as_mut() else {
            self.idle_interrupts += 1;
            if self.idle_interrupts >= 2 {
                return Next::Quit;
            }
            self.say("(Ctrl-C again or Ctrl-D quits; the session stays)")
                .await;
            return Next::Continue;
        };
        if run.cancelling {
            return Next::Quit;
        }
        run.cancelling = true;
        let actions = run.desk.interrupt();
        self.perform(actions).await;
        self.say("cancelling… (Ctrl-C again quits)").await;
        if let Some(session) = &self.session
            && let Err(message) = follow::cancel(&self.connection, &session.session_id).await
        {
            self.say(&message).await;
        }
        Next::Continue
    }

    async fn on_event(&mut self, envelope: RawEnvelope) {
        let Some(run) = self.run.as_mut() else {
            let persisted = serde_json::from_value::<Event>(envelope.event.clone())
                .ok()
                .is_none_or(|event| event.is_persisted());
            if persisted {
                self.last_seq = self.last_seq.max(envelope.seq);
            }
            return;
        };
        let fresh = envelope.seq > run.renderer.last_seq();
        let outputs = run.renderer.handle(&envelope);
        self.last_seq = run.renderer.last_seq();
        let actions = match serde_json::from_value::<Event>(envelope.event.clone()) {
            Ok(event) if fresh => {
                let mut actions = run.desk.on_event(&event);
                // After a reconnect, what was asked is asked again once the replay is through.
                actions.extend(run.desk.caught_up(envelope.seq));
                actions
            }
            _ => Vec::new(),
        };
        self.show(outputs);
        self.perform(actions).await;
        let Some(run) = self.run.as_mut() else {
            return;
        };
        if run.renderer.exit_code().is_some() {
            let outputs = run.renderer.finish();
            if let Some(run) = self.run.take() {
                self.keep_from_run(&run);
            }
            // The live area goes in the message that writes the after-run line.
            self.live.push(outputs);
            self.live.end_line();
            self.refresh().await;
            if let Some(run_id) = self.next_run.take() {
                self.show_run(run_id);
            }
        }
    }

    /// A new prompt: in the session, created first when there is none.
    async fn prompt(
        &mut self,
        text: String,
        images: Vec<protocol::session::PromptImage>,
    ) -> Result<(), CommandError> {
        if let Some(problem) = protocol::session::prompt_images_problem(&images) {
            self.say(&format!("agentctl: {problem}; nothing was sent"))
                .await;
            return Ok(());
        }
        let session_id = match &self.session {
            Some(session) => session.session_id.clone(),
            None => match self.create_session().await {
                Ok(session_id) => session_id,
                Err(err) => {
                    self.say(&format!("agentctl: {err}")).await;
                    return Ok(());
                }
            },
        };
        let params = SessionPromptParams {
            session_id,
            text,
            client_request_id: Some(format!("chat_{}", uuid::Uuid::new_v4().simple())),
            queue_if_busy: false,
            // The chat answers its approvals itself.
            hold_approvals: false,
            max_steps: None,
            images,
        };
        match self.connection.request::<SessionPrompt>(&params).await {
            Ok(started) => self.show_run(started.run_id),
            Err(err) => self.say(&format!("agentctl: {err}")).await,
        }
        Ok(())
    }

    async fn steer(&mut self, text: String) {
        let Some(session) = &self.session else {
            return;
        };
        let params = QueueMessageParams {
            session_id: session.session_id.clone(),
            text: text.clone(),
        };
        match self.connection.request::<SessionSteer>(&params).await {
            Ok(_) => {
                self.say(&format!("queued steer: {}", one_line(&text)))
                    .await
            }
            // The run ended meanwhile: the words still go to the model.
            Err(ClientError::Rpc { code, .. }) if code == CONFLICT => self.follow_up(text).await,
            Err(err) => self.say(&format!("agentctl: steer failed: {err}")).await,
        }
    }

    async fn follow_up(&mut self, text: String) {
        let Some(session) = &self.session else {
            return;
        };
        let params = QueueMessageParams {
            session_id: session.session_id.clone(),
            text: text.clone(),
        };
        match self.connection.request::<SessionFollowUp>(&params).await {
            Ok(result) if result.queued => {
                self.say(&format!("queued follow-up: {}", one_line(&text)))
                    .await
            }
            Ok(result) if self.run.is_some() => self.next_run = Some(result.run_id),
            Ok(result) => self.show_run(result.run_id),
            Err(err) => {
                self.say(&format!("agentctl: follow-up failed: {err}"))
                    .await
            }
        }
    }

    /// What to say last: where the session (or its run) goes on.
    fn goodbye(&mut self) {
        let line = match (&self.session, &self.run) {
            (Some(session), Some(_)) => format!(
                "the run goes on in session {id}; `agentctl attach {id}` shows it",
                id = session.session_id
            ),
            (Some(session), None) => format!(
                "session {id} stays; `agentctl chat --session {id}` (or `agentctl chat -c` \
                 here) continues it",
                id = session.session_id
            ),
            (None, _) => "bye".to_owned(),
        };
        // The live rows (if a run is shown) stay where they are: the editor may never write
        // a last message, so these words go straight below them.
        self.last_words = line;
    }
}

/// Wait for the next thing to handle: a typed line, an event of the session, or Ctrl-C
/// (the editor reads Ctrl-C as a key; SIGINT comes only in the instant between two reads).
async fn wait(
    connection: &Connection,
    editor: &mut LineEditor,
    events: Option<&mut EventStream>,
    interrupts: &mut Interrupts,
    ticks: Option<&mut Interval>,
) -> Wake {
    let event = async {
        match events {
            Some(events) => events.next().await,
            None => std::future::pending().await,
        }
    };
    let tick = async {
        match ticks {
            Some(ticks) => ticks.tick().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        input = editor.next() => Wake::Input(input),
        event = event => Wake::Event(event),
        _ = interrupts.recv() => Wake::Interrupt,
        _ = tick => Wake::Tick,
        () = connection.closed() => Wake::Disconnected,
    }
}
