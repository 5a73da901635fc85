//! Embedding Switchboard in a program: build a host from a configuration, wait for its servers,
//! list their tools, call one, print what happened on the way, shut down.
//!
//! ```text
//! cargo run -p switchboard --example embed -- CONFIG TOOL [ARGUMENTS]
//! ```
//!
//! - `CONFIG`: an `mcp.json` file (`{"mcpServers": {…}}`) or the same JSON inline — what
//!   `switchboard --mcp-config` takes. As there, it comes on top of the user's configuration
//!   (set `SWITCHBOARD_CONFIG_DIR` to an empty folder to leave that out).
//! - `TOOL`: the qualified name of the tool to call, `mcp__<server>__<tool>`.
//! - `ARGUMENTS`: the call's arguments as a JSON object (default `{}`).
//!
//! With the bundled configuration and the test server, from the repository's root:
//!
//! ```text
//! cargo build -p switchboard-testkit --bin testkit-server
//! cargo run -p switchboard --example embed -- examples/mcp.json mcp__echo__echo '{"text": "hi"}'
//! ```
//!
//! It exits with 0 when the tool ran, 1 when the tool reported an error (`isError`), and 2 on
//! a usage error, a `required` server that did not connect or a call that failed (no such
//! tool, invalid arguments, denied, the server did not answer…).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use switchboard::permissions::{PermissionAnswer, PermissionPrompter, PermissionRequest};
use switchboard::{CallOptions, Host, Readiness};

/// How long the servers get to connect (the connect timeout, `MCP_TIMEOUT`, bounds each one).
const SETTLE: Duration = Duration::from_secs(30);

/// Answers "yes" whenever the rules leave a call to a person — an `ask` rule, or a tool no rule
/// names — and says so on stderr. A real program asks its user here (a dialog, a prompt in the
/// terminal) and answers `AllowOnce`, `AllowAlways` or `Deny`; with no prompter at all, such
/// calls from a program are denied. `deny` rules and hooks still apply: they are never asked.
#[derive(Debug)]
struct AllowAll;

impl PermissionPrompter for AllowAll {
    fn ask<'a>(&'a self, request: &'a PermissionRequest) -> BoxFuture<'a, PermissionAnswer> {
        eprintln!("allowing {} (the rules say ask)", request.qualified_tool);
        async { PermissionAnswer::AllowOnce }.boxed()
    }
}

// The CLI runs Switchboard on a current-thread runtime too; a multi-threaded one works the same.
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run().await {
        Ok(code) => code,
        Err(message) => {
            eprintln!("embed: {message}");
            ExitCode::from(2)
        }
    }
}

async fn run() -> Result<ExitCode, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (config, tool, arguments) = match args.as_slice() {
        [config, tool] => (config, tool, "{}"),
        [config, tool, arguments] => (config, tool, arguments.as_str()),
        _ => return Err("usage: embed CONFIG TOOL [ARGUMENTS]".to_owned()),
    };
    let arguments: Map<String, Value> = serde_json::from_str(arguments)
        .map_err(|e| format!("ARGUMENTS must be a JSON object: {e}"))?;

    // The configuration of every scope for the working directory (the builder's default), plus
    // CONFIG. `start` returns at once: the servers connect in the background.
    let host = Host::builder()
        .dynamic_config(vec![config.clone()])
        .permissions(Arc::new(AllowAll))
        .start()
        .map_err(|e| e.to_string())?;
    // Everything that happens behind the host from now on: server states, tool list changes,
    // servers' log messages. (A program would usually watch it in a task of its own.)
    let mut events = host.events();
    for issue in &host.config().issues {
        eprintln!("config: {issue}");
    }

    // Settled: every server is connected, failed, waiting for a login or disabled. A `required`
    // server that did not connect is an error.
    let readiness = match host.wait_settled(SETTLE).await {
        Ok(readiness) => readiness,
        Err(error) => {
            host.shutdown().await;
            return Err(switchboard::error_chain(&error));
        }
    };
    println!("readiness: {readiness:?}");
    if let Readiness::TimedOut { pending } = &readiness {
        eprintln!("still connecting: {}", pending.join(", "));
    }
    for (server, state) in host.servers() {
        println!("server {server}: {}", state.label());
    }

    let snapshot = host.tools().await;
    println!("tools ({}):", snapshot.tools.len());
    for tool in &snapshot.tools {
        let description = tool.description.as_deref().unwrap_or("");
        println!("  {} - {}", tool.qualified_name, first_line(description));
    }
    for issue in &snapshot.issues {
        eprintln!("catalogue: {issue}");
    }

    // `CallSource::Program` (the default): what the rules leave to ask goes to the prompter
    // above. A program that passes on what a person typed, as `switchboard call` does, says
    // `CallSource::CommandLine` instead: that person's typing is the approval.
    println!("calling {tool}");
    let code = match host.call(tool, arguments, CallOptions::default()).await {
        Ok(outcome) => {
            let result = serde_json::to_string_pretty(&outcome.result).unwrap_or_default();
            println!(
                "result (about {} tokens):\n{result}",
                outcome.estimated_tokens
            );
            for note in &outcome.notes {
                println!("note: {note}");
            }
            if outcome.is_error {
                println!("the tool reported an error");
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(error) => {
            // Errors keep their cause as `source()`; `error_chain` prints the whole chain.
            eprintln!("call failed: {}", switchboard::error_chain(&error));
            ExitCode::from(2)
        }
    };

    // The events that arrived meanwhile, without waiting for more.
    println!("events:");
    while let Some(event) = events.try_recv() {
        println!("  {event:?}");
    }

    host.shutdown().await;
    Ok(code)
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
