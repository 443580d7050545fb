//! `agentctl` under a pseudo-terminal of a chosen width, through util-linux `script`: what a
//! person would see, escape sequences and all (stdout and stderr share the terminal).

use crate::harness::{TestEnv, WAIT, binary};

/// A word for `sh -c`, single-quoted.
pub fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

impl TestEnv {
    /// Run `agentctl ARGS` on a terminal `columns` wide (`stty cols`, and `$COLUMNS` for good
    /// measure) with `extra` environment variables; returns what the terminal received and
    /// the exit status of agentctl. Bounded by [`WAIT`].
    pub async fn run_agentctl_in_terminal(
        &self,
        columns: u16,
        extra: &[(&str, &str)],
        args: &[&str],
    ) -> (String, Option<i32>) {
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
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
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
