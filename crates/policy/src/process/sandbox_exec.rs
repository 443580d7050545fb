//! `agentd __sandbox-exec [--abi N] [--deny-network] [--writable DIR]… [--read-only DIR]…
//! [--mask FILE]… -- PROGRAM ARGS…`: the sandbox helper of an unprivileged daemon. The daemon's `run_shell`
//! child re-executes the agentd binary with this plan; the helper, a fresh dumpable process
//! holding no secret, enters a user and mount namespace (writing its own id maps, which a
//! forked child of the non-dumpable daemon cannot), makes the read-only bind mounts, restricts
//! itself with Landlock (ABI 0: no ruleset, the startup probe) and execs the program in place
//! (same pid, process group, death signal and environment).

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use super::confine::{Confinement, Namespaces};

/// The first argument that turns agentd into the helper.
pub(crate) const HELPER_ARG: &str = "__sandbox-exec";

/// The program a child runs to become the helper: the daemon's own binary, even after it was
/// replaced on disk (the link names the running image).
pub(crate) const HELPER_PROGRAM: &str = "/proc/self/exe";

/// The exit status of a helper that could not confine or start the program (as a shell says
/// for a command it cannot run).
const HELPER_FAILED: u8 = 126;

/// What the helper does before exec.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The Landlock ABI to build the ruleset for; 0 for none.
    pub(crate) abi: i32,
    pub(crate) deny_network: bool,
    pub(crate) writable: Vec<PathBuf>,
    pub(crate) read_only: Vec<PathBuf>,
    /// Files covered by `/dev/null` (the daemon's socket).
    pub(crate) masked: Vec<PathBuf>,
}

impl Plan {
    /// The helper's arguments for running `program args` under this plan.
    pub(crate) fn to_args(&self, program: &OsStr, args: &[OsString]) -> Vec<OsString> {
        let mut out: Vec<OsString> = vec![
            HELPER_ARG.into(),
            "--abi".into(),
            self.abi.to_string().into(),
        ];
        if self.deny_network {
            out.push("--deny-network".into());
        }
        for dir in &self.writable {
            out.push("--writable".into());
            out.push(dir.into());
        }
        for dir in &self.read_only {
            out.push("--read-only".into());
            out.push(dir.into());
        }
        for file in &self.masked {
            out.push("--mask".into());
            out.push(file.into());
        }
        out.push("--".into());
        out.push(program.into());
        out.extend(args.iter().cloned());
        out
    }

    /// Parses what [`Plan::to_args`] wrote after [`HELPER_ARG`]: the plan, the program and
    /// its arguments.
    pub(crate) fn parse(
        mut args: impl Iterator<Item = OsString>,
    ) -> io::Result<(Plan, OsString, Vec<OsString>)> {
        let mut plan = Plan::default();
        let bad = |what: &str| io::Error::other(format!("bad sandbox helper arguments: {what}"));
        loop {
            let arg = args.next().ok_or_else(|| bad("no program"))?;
            match arg.to_str() {
                Some("--abi") => {
                    plan.abi = args
                        .next()
                        .and_then(|abi| abi.to_str()?.parse().ok())
                        .ok_or_else(|| bad("--abi needs a number"))?;
                }
                Some("--deny-network") => plan.deny_network = true,
                Some("--writable") => {
                    plan.writable.push(
                        args.next()
                            .ok_or_else(|| bad("--writable needs a path"))?
                            .into(),
                    );
                }
                Some("--read-only") => {
                    plan.read_only.push(
                        args.next()
                            .ok_or_else(|| bad("--read-only needs a path"))?
                            .into(),
                    );
                }
                Some("--mask") => {
                    plan.masked.push(
                        args.next()
                            .ok_or_else(|| bad("--mask needs a path"))?
                            .into(),
                    );
                }
                Some("--") => break,
                _ => return Err(bad(&format!("unknown argument {arg:?}"))),
            }
        }
        let program = args.next().ok_or_else(|| bad("no program after --"))?;
        Ok((plan, program, args.collect()))
    }
}

/// When agentd was started as the helper, runs it: it returns only when it failed (the
/// program replaced it otherwise). None for an ordinary start.
pub fn main_if_helper() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(HELPER_ARG)) {
        return None;
    }
    let error = match Plan::parse(args) {
        Ok((plan, program, args)) => run(&plan, &program, &args),
        Err(error) => error,
    };
    // The helper has no log; its stderr is the command's, which run_shell shows.
    #[allow(clippy::print_stderr)]
    {
        eprintln!("agentd sandbox: {error}");
    }
    Some(ExitCode::from(HELPER_FAILED))
}

/// Confines this process as `plan` says, then execs `program`; returns only the error.
fn run(plan: &Plan, program: &OsStr, args: &[OsString]) -> io::Error {
    let mounts =
        match super::sandbox::read_only_mounts_of(Namespaces::UserAndMount, &plan.read_only)
            .and_then(|mounts| mounts.masking(&plan.masked))
        {
            Ok(mounts) => mounts,
            Err(error) => return error,
        };
    if plan.abi == 0 {
        if let Err(error) = mounts.enter() {
            return io::Error::other(format!("cannot make the read-only mounts: {error}"));
        }
    } else {
        let ruleset =
            match super::sandbox::landlock_ruleset(plan.abi, plan.deny_network, &plan.writable) {
                Ok(ruleset) => ruleset,
                Err(error) => return error,
            };
        let confinement = Confinement {
            mounts: Some(mounts),
            ruleset,
        };
        if let Err(error) = confinement.enter() {
            return io::Error::other(format!("cannot confine the command: {error}"));
        }
    }
    // The helper replaces itself with the confined shell (exec, no child): inside `process`.
    #[allow(clippy::disallowed_methods)]
    let error = std::process::Command::new(program).args(args).exec();
    io::Error::other(format!("cannot run {}: {error}", program.to_string_lossy()))
}
