//! `switchboard completions SHELL` and `switchboard man`: generated from the same clap
//! definitions as the parser, so they never drift from it.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::args::{Cli, ShellArg};

/// Prints the completion script for `shell` on stdout.
pub(crate) fn completions(shell: ShellArg) -> anyhow::Result<ExitCode> {
    let shell = match shell {
        ShellArg::Bash => Shell::Bash,
        ShellArg::Zsh => Shell::Zsh,
        ShellArg::Fish => Shell::Fish,
    };
    let mut command = Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(shell, &mut command, "switchboard", &mut out);
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
