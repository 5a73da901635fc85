//! `switchboard completions SHELL` and `switchboard man`: generated from the same clap
//! definitions as the parser, so they never drift from it.
//!
//! Completion is dynamic: the script a shell loads calls `switchboard` back with
//! `COMPLETE=<shell>` set (clap_complete's `CompleteEnv`, handled first thing in `main`), so
//! subcommands and flags come from the parser, and server names from the configuration of the
//! directory the user is in.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::env::{Bash, EnvCompleter, Fish, Zsh};

use crate::args::{Cli, ShellArg};

/// The variable the shell scripts set when they ask `switchboard` for completions.
pub(crate) const COMPLETE_VAR: &str = switchboard::env_vars::EnvVars::COMPLETE;

/// Answers a shell that asks for completions (`COMPLETE=<shell> switchboard -- …`) and exits;
/// returns at once otherwise.
pub(crate) fn answer_if_asked() {
    clap_complete::CompleteEnv::with_factory(Cli::command)
        .var(COMPLETE_VAR)
        .complete();
}

/// Prints the completion script for `shell` on stdout.
pub(crate) fn completions(shell: ShellArg) -> anyhow::Result<ExitCode> {
    let shell: &dyn EnvCompleter = match shell {
        ShellArg::Bash => &Bash,
        ShellArg::Zsh => &Zsh,
        ShellArg::Fish => &Fish,
    };
    let mut out = std::io::stdout().lock();
    shell.write_registration(
        COMPLETE_VAR,
        "switchboard",
        "switchboard",
        "switchboard",
        &mut out,
    )?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the manual page (roff) on stdout.
pub(crate) fn man() -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
