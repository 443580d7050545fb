//! Which program runs a shell script (`run_shell`, hooks, shell tasks): `sh -c` on Unix; on
//! Windows the shell `[shell] windows` names, PowerShell unless set: `powershell`
//! (`-EncodedCommand`, so no quoting rule of the command line can change the script), `cmd`
//! (`/D /S /C`, the script put on the command line as written, which is how cmd reads it) or
//! `sh` (Git for Windows' or another on `PATH`).
//!
//! The choice is one per daemon: the config sets it at start and on each reload
//! ([`set_windows_shell`]); every [`super::ProcessSpec::shell`] reads it.

use std::ffi::OsString;
use std::sync::atomic::{AtomicU8, Ordering};

use base64::Engine as _;

/// The shell that runs scripts on Windows (`[shell] windows`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WindowsShell {
    /// `powershell.exe -NoProfile -NonInteractive -EncodedCommand …` (Windows PowerShell 5,
    /// which every Windows has).
    #[default]
    Powershell,
    /// `cmd.exe /D /S /C "…"`.
    Cmd,
    /// `sh -c …` from `PATH` (Git for Windows, MSYS2, Cygwin).
    Sh,
}

impl WindowsShell {
    fn from_u8(value: u8) -> Self {
        match value {
            1 => Self::Cmd,
            2 => Self::Sh,
            _ => Self::Powershell,
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            Self::Powershell => 0,
            Self::Cmd => 1,
            Self::Sh => 2,
        }
    }

    /// The name as config.toml writes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Powershell => "powershell",
            Self::Cmd => "cmd",
            Self::Sh => "sh",
        }
    }
}

/// `[shell]` of config.toml as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellSection {
    /// The shell scripts run in on Windows; Unix always uses `sh`.
    pub windows: Option<WindowsShell>,
}

static WINDOWS_SHELL: AtomicU8 = AtomicU8::new(0);

/// Sets the shell later scripts run in on Windows (no effect on Unix, where it is `sh`).
pub fn set_windows_shell(shell: WindowsShell) {
    WINDOWS_SHELL.store(shell.to_u8(), Ordering::Relaxed);
}

/// The shell scripts run in on Windows now.
pub fn windows_shell() -> WindowsShell {
    WindowsShell::from_u8(WINDOWS_SHELL.load(Ordering::Relaxed))
}

/// A script's command line: the program, its arguments, and whether they go on the command
/// line verbatim (Windows only; see [`super::ProcessSpec::verbatim_args`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Invocation {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub verbatim: bool,
}

/// How this platform runs `script`.
pub(crate) fn invocation(script: &str) -> Invocation {
    if cfg!(windows) {
        windows_invocation(windows_shell(), script)
    } else {
        sh(script)
    }
}

fn sh(script: &str) -> Invocation {
    Invocation {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        verbatim: false,
    }
}

/// How `shell` runs `script` on Windows.
pub(crate) fn windows_invocation(shell: WindowsShell, script: &str) -> Invocation {
    match shell {
        WindowsShell::Powershell => {
            let utf16le: Vec<u8> = script.encode_utf16().flat_map(u16::to_le_bytes).collect();
            let encoded = base64::engine::general_purpose::STANDARD.encode(utf16le);
            Invocation {
                program: "powershell.exe".into(),
                args: [
                    "-NoLogo",
                    "-NoProfile",
                    "-NonInteractive",
                    "-EncodedCommand",
                ]
                .into_iter()
                .map(OsString::from)
                .chain([OsString::from(encoded)])
                .collect(),
                verbatim: false,
            }
        }
        // `/S`: cmd drops the first and the last quote of what follows `/C` and runs the rest as
        // written, inner quotes and all; `/D`: no AutoRun commands from the registry.
        WindowsShell::Cmd => Invocation {
            program: "cmd.exe".into(),
            args: vec![
                "/D".into(),
                "/S".into(),
                "/C".into(),
                format!("\"{script}\"").into(),
            ],
            verbatim: true,
        },
        WindowsShell::Sh => sh(script),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powershell_gets_the_script_as_utf16_base64() {
        let invocation = windows_invocation(WindowsShell::Powershell, "echo \"hé\"");
        assert_eq!(invocation.program, "powershell.exe");
        assert!(!invocation.verbatim);
        let encoded = invocation.args.last().unwrap().to_str().unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        let units: Vec<u16> = bytes
            .chunks(2)
            .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
            .collect();
        assert_eq!(String::from_utf16(&units).unwrap(), "echo \"hé\"");
        assert_eq!(
            invocation.args[invocation.args.len() - 2],
            "-EncodedCommand"
        );
    }

    #[test]
    fn cmd_gets_the_script_verbatim_between_the_quotes_s_drops() {
        let invocation = windows_invocation(WindowsShell::Cmd, "type \"a b.txt\" & echo x");
        assert_eq!(invocation.program, "cmd.exe");
        assert!(invocation.verbatim);
        assert_eq!(
            invocation.args,
            ["/D", "/S", "/C", "\"type \"a b.txt\" & echo x\""]
        );
    }

    #[test]
    fn unix_and_windows_sh_are_sh_dash_c() {
        let expected = Invocation {
            program: "sh".into(),
            args: vec!["-c".into(), "ls".into()],
            verbatim: false,
        };
        assert_eq!(windows_invocation(WindowsShell::Sh, "ls"), expected);
        if cfg!(unix) {
            assert_eq!(invocation("ls"), expected);
        }
    }

    #[test]
    fn config_names_parse() {
        for shell in [
            WindowsShell::Powershell,
            WindowsShell::Cmd,
            WindowsShell::Sh,
        ] {
            let parsed: WindowsShell = serde_json::from_value(shell.name().into()).unwrap();
            assert_eq!(parsed, shell);
            assert_eq!(WindowsShell::from_u8(shell.to_u8()), shell);
        }
    }
}
