//! The `switchboard` command line: a thin program over the `switchboard` library. It owns
//! presentation (text, `--json`, exit codes); the library owns behaviour.
//!
//! Exit codes: 0 success; 1 the command failed (the error is on stderr); 2 usage error.

mod args;
mod catalog_cmds;
mod completions;
mod console;
mod context;
mod interact;
mod mcp;
mod mcp_auth;
mod mcp_bundle;
mod mcp_import;
mod mcp_pins;
mod mcp_registry;
mod mcp_scan;
mod output;
mod plugin;
mod probe;
mod reference;
mod serve;
mod skill_cmds;
mod start;
mod tasks;
mod trust;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

/// jemalloc, not the system's malloc: glibc's keeps what a burst of gateway sessions freed
/// (their channels and tasks, spread over its arenas), so `serve --http` never shrank after
/// one; jemalloc's background thread returns freed pages to the system within seconds (see
/// BENCHMARKS.md, the session soak).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// How long a freed page stays with jemalloc before it goes back to the system: 1 s, not its
/// 10 s. With 10 s, what a burst of gateway sessions freed came back only in part (the background
/// thread stops waking once the process is idle): RSS stayed 15–19 % above its start after
/// 20 000 sessions, against 0–1 % with 1 s (BENCHMARKS.md, the session soak).
const DIRTY_DECAY_MS: isize = 1_000;

/// Applies [`DIRTY_DECAY_MS`] to the arenas that exist (`arena.<all>`) and to those made later.
fn tune_allocator() {
    use tikv_jemalloc_ctl::{Access, AsName};
    for key in [
        &b"arenas.dirty_decay_ms\0"[..],
        b"arena.4096.dirty_decay_ms\0",
    ] {
        // A failure leaves jemalloc's own decay: slower to give memory back, nothing worse.
        let _ = key.name().write(DIRTY_DECAY_MS);
    }
}

/// `--version`: the crate's version and the commit it was built from.
pub(crate) const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("SWITCHBOARD_COMMIT"),
    ")"
);

/// Switchboard's own messages, `warn` and above. The MCP SDK (rmcp) logs a failed connection
/// at `ERROR` too; Switchboard reports that itself (the server's state), so the SDK's line only
/// looked like a crash and is left out unless asked for.
const DEFAULT_LOG: &str = "warn,rmcp=off";

/// The hidden first argument that makes this program a host's guard process
/// ([`switchboard::guard`]): every command that starts servers starts one.
pub(crate) const GUARD_ARG: &str = "__guard";

fn main() -> ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == GUARD_ARG)
    {
        return switchboard::guard::run();
    }
    completions::answer_if_asked();
    let cli = if opens_console() {
        args::Cli::parse_from(["switchboard", "console"])
    } else {
        args::Cli::parse()
    };
    init_logging(cli.global.verbose, cli.global.log_format);
    tune_allocator();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            let mut stderr = std::io::stderr().lock();
            // Errors may quote what a server or a file said.
            let mut previous = err.to_string();
            // URLs lose userinfo and query values: a configured one may carry a secret.
            let shown =
                |text: &str| output::clean(&switchboard::redact::redact_urls_in(text)).into_owned();
            let _ = writeln!(stderr, "error: {}", shown(&previous));
            for cause in err.chain().skip(1) {
                // Many messages already end with their cause ("cannot read X: Is a directory").
                let text = cause.to_string();
                if previous.contains(&text) {
                    continue;
                }
                let _ = writeln!(stderr, "  caused by: {}", shown(&text));
                previous = text;
            }
            ExitCode::FAILURE
        }
    }
}

/// Diagnostics go to stderr: `SWITCHBOARD_LOG` (else `RUST_LOG`) when set, `info` with
/// `--verbose`, else [`DEFAULT_LOG`].
fn init_logging(verbose: bool, format: args::LogFormat) {
    use switchboard::env_vars::EnvVars;
    let explicit = [EnvVars::SWITCHBOARD_LOG, EnvVars::RUST_LOG]
        .into_iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()));
    let filter = match explicit {
        Some(filter) => filter,
        None if verbose => "info".to_owned(),
        None => DEFAULT_LOG.to_owned(),
    };
    let filter = tracing_subscriber::EnvFilter::try_new(&filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| RedactingStderr)
        // Plain text: tracing-subscriber is built without its `ansi` feature, and asking it for
        // colours then panics (a terminal on stderr used to crash every command).
        .with_ansi(false);
    let _ = match format {
        args::LogFormat::Text => builder.without_time().try_init(),
        // A collector wants the time; one line an event, the span's fields flattened in.
        args::LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// stderr for log lines, each passed through [`switchboard::redact::redact_urls_in`]: the
/// MCP SDK and the HTTP client log URLs (`reqwest::Error { url: "…?api_key=…" }`), and a
/// configured URL may carry `user:pass@` or a key in its query.
struct RedactingStderr;

impl std::io::Write for RedactingStderr {
    /// The formatter writes each event whole, so a URL is never split between two writes.
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = switchboard::redact::redact_urls_in(&String::from_utf8_lossy(buf));
        // While the console has the screen, a line on stderr would land in its middle.
        if !console::take_log_line(&text) {
            std::io::stderr().lock().write_all(text.as_bytes())?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

fn run(cli: args::Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        args::Command::Completions { shell } => return completions::completions(shell),
        args::Command::Man => return completions::man(),
        args::Command::Reference { page } => return reference::run(page),
        _ => {}
    }
    let ctx = context::Context::new(&cli.global)?;
    match cli.command {
        args::Command::Mcp(cmd) => mcp::run(&ctx, cmd),
        args::Command::Plugin(cmd) => plugin::run(&ctx, cmd),
        args::Command::Serve(args) => serve::run(&ctx, *args),
        args::Command::Console => console::run(&ctx),
        args::Command::Tasks { command, json } => tasks::run(&ctx, command, json),
        other => catalog_cmds::run(&ctx, other),
    }
}

/// `switchboard` alone opens the console when a person is at a terminal (stdin and stdout);
/// in a pipe or CI it prints the help, as clap does for a missing command.
fn opens_console() -> bool {
    use std::io::IsTerminal;
    std::env::args_os().len() == 1
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}
