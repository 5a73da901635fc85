//! The `switchboard` command line: a thin program over the `switchboard` library. It owns
//! presentation (text, `--json`, exit codes); the library owns behaviour.
//!
//! Exit codes: 0 success; 1 the command failed (the error is on stderr); 2 usage error.

mod args;
mod catalog_cmds;
mod interact;
mod mcp;
mod mcp_auth;
mod mcp_import;
mod output;
mod probe;
mod serve;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    init_logging();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            let mut stderr = std::io::stderr().lock();
            // Errors may quote what a server or a file said.
            let _ = writeln!(stderr, "error: {}", output::clean(&err.to_string()));
            for cause in err.chain().skip(1) {
                let _ = writeln!(stderr, "  caused by: {}", output::clean(&cause.to_string()));
            }
            ExitCode::FAILURE
        }
    }
}

/// Diagnostics go to stderr, `warn` and above unless `SWITCHBOARD_LOG` says otherwise.
fn init_logging() {
    let filter = std::env::var(switchboard::env_vars::EnvVars::SWITCHBOARD_LOG)
        .unwrap_or_else(|_| "warn".to_owned());
    let filter = tracing_subscriber::EnvFilter::try_new(&filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Plain text: tracing-subscriber is built without its `ansi` feature, and asking it for
        // colours then panics (a terminal on stderr used to crash every command).
        .with_ansi(false)
        .without_time()
        .try_init();
}

fn run(cli: args::Cli) -> anyhow::Result<ExitCode> {
    let ctx = mcp::Context::new(&cli.global)?;
    match cli.command {
        args::Command::Mcp(cmd) => mcp::run(&ctx, cmd),
        args::Command::Serve(args) => serve::run(&ctx, args),
        other => catalog_cmds::run(&ctx, other),
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}
