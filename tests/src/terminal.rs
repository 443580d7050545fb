//! `agentctl` under a pseudo-terminal of a chosen width, through util-linux `script`: what a
//! person would see, escape sequences and all (stdout and stderr share the terminal).

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::{TestEnv, WAIT, binary};

/// A word for `sh -c`, single-quoted.
pub fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// A running `agentctl` on a pseudo-terminal: read what it shows, type keys.
pub struct TerminalSession {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
    /// Everything the terminal received so far.
    pub screen: String,
    bytes: Vec<u8>,
}

impl TerminalSession {
    /// Read until the screen contains `text` after byte `from` of it (bounded by [`WAIT`]);
    /// returns where that text ends, for the next wait.
    pub async fn wait_for(&mut self, text: &str, from: usize) -> usize {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(at) = self.screen.get(from..).and_then(|rest| rest.find(text)) {
                return from + at + text.len();
            }
            let mut buffer = [0_u8; 4096];
            let read = tokio::time::timeout_at(deadline, self.stdout.read(&mut buffer))
                .await
                .unwrap_or_else(|_| panic!("{text:?} never showed; the screen: {:?}", self.screen))
                .expect("read the terminal");
            assert!(
                read > 0,
                "the terminal closed before {text:?}: {:?}",
                self.screen
            );
            self.bytes.extend_from_slice(&buffer[..read]);
            self.screen = String::from_utf8_lossy(&self.bytes).into_owned();
        }
    }

    /// Type `keys`.
    pub async fn type_keys(&mut self, keys: &str) {
        self.stdin
            .write_all(keys.as_bytes())
            .await
            .expect("type on the terminal");
        self.stdin.flush().await.expect("flush the terminal");
    }

    /// Read to the end and wait for agentctl's exit status (bounded by [`WAIT`]).
    pub async fn finish(mut self) -> (String, Option<i32>) {
        let mut rest = Vec::new();
        tokio::time::timeout(WAIT, self.stdout.read_to_end(&mut rest))
            .await
            .expect("agentctl did not finish in time")
            .expect("read the terminal");
        self.bytes.extend_from_slice(&rest);
        drop(self.stdin);
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("script did not exit")
            .expect("wait for script");
        (
            String::from_utf8_lossy(&self.bytes).into_owned(),
            status.code(),
        )
    }
}

impl TestEnv {
    /// Start `agentctl ARGS` on a terminal `columns` wide, its keys typed by the test.
    pub fn spawn_agentctl_in_terminal(&self, columns: u16, args: &[&str]) -> TerminalSession {
        let mut command = self.script_command(columns, &[], args);
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = command.spawn().expect("spawn script");
        let stdin = child.stdin.take().expect("script stdin");
        let stdout = child.stdout.take().expect("script stdout");
        TerminalSession {
            child,
            stdin,
            stdout,
            screen: String::new(),
            bytes: Vec::new(),
        }
    }

    /// `script` running `agentctl ARGS` on a terminal `columns` wide.
    fn script_command(
        &self,
        columns: u16,
        extra: &[(&str, &str)],
        args: &[&str],
    ) -> tokio::process::Command {
        let mut line = format!(
            "stty cols {columns} rows 40; exec {}",
            shell_quote(&binary("agentctl").to_string_lossy())
        );
        for arg in args {
            line.push(' ');
            line.push_str(&shell_quote(arg));
        }
        let mut command = tokio::process::Command::new("script");
        self.apply(&mut command);
        command
            .env("TERM", "xterm-256color")
            .env("COLUMNS", columns.to_string())
            .envs(extra.iter().copied())
            .args(["--quiet", "--return", "--command", &line, "/dev/null"])
            .current_dir(self.workspace())
            .kill_on_drop(true);
        command
    }

    /// Run `agentctl ARGS` on a terminal `columns` wide (`stty cols`, and `$COLUMNS` for good
    /// measure) with `extra` environment variables; returns what the terminal received and
    /// the exit status of agentctl. Bounded by [`WAIT`].
    pub async fn run_agentctl_in_terminal(
        &self,
        columns: u16,
        extra: &[(&str, &str)],
        args: &[&str],
    ) -> (String, Option<i32>) {
        let mut command = self.script_command(columns, extra, args);
        command.stdin(std::process::Stdio::null());
        let output = tokio::time::timeout(WAIT, command.output())
            .await
            .expect("agentctl under script did not finish in time")
            .expect("run script");
        (
            String::from_utf8_lossy(&output.stdout).into_owned(),
            output.status.code(),
        )
    }
}

/// `screen` without SGR colour sequences (`ESC [ … m`).
pub fn without_colors(screen: &str) -> String {
    let mut out = String::with_capacity(screen.len());
    let mut rest = screen;
    while let Some(start) = rest.find("\x1b[") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find(|c: char| !(c.is_ascii_digit() || c == ';')) {
            Some(end) if after[end..].starts_with('m') => rest = &after[end + 1..],
            _ => {
                out.push_str("\x1b[");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}
