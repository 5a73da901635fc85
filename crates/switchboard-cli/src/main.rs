//! The `switchboard` command line: a thin program over the `switchboard` library. It owns
//! presentation (text, `--json`, exit codes); the library owns behaviour.
//!
//! Exit codes: 0 success; 1 the command failed (the error is on stderr); 2 usage error.

mod args;
mod catalog_cmds;
mod mcp;
mod mcp_import;
mod output;
mod probe;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "error: {err}");
            for cause in err.chain().skip(1) {
                let _ = writeln!(stderr, "  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}

fn run(cli: args::Cli) -> anyhow::Result<ExitCode> {
    let ctx = mcp::Context::new(&cli.global)?;
    match cli.command {
        args::Command::Mcp(cmd) => mcp::run(&ctx, cmd),
        other => catalog_cmds::run(&ctx, other),
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}
