//! Connecting to configured servers for a listing: start them all in parallel, name those still
//! connecting on a terminal, gather what each reports, and shut them down.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use switchboard::ServerState;
use switchboard::config::ConfigSet;
use switchboard::config::{EntryStatus, ServerEntry};
use switchboard::env_vars::Limits;

use crate::context::{Context, interrupted};
use crate::output::status;

/// What a probe found for one server that was started.
#[derive(Debug, Clone)]
pub(crate) struct Probed {
    pub(crate) state: ServerState,
    pub(crate) tools: Option<usize>,
    /// How many of its tools are held (see `mcp diff`).
    pub(crate) held: usize,
    pub(crate) stderr: Option<String>,
}

/// Starts every startable server of `set` (or only `only`), waits for all to settle, and
/// returns their states. A lazy server is not started unless `eager`: it shows its kept
/// list. Ctrl-C stops the servers and exits.
pub(crate) async fn probe(
    ctx: &Context,
    set: &ConfigSet,
    only: Option<&str>,
    eager: bool,
) -> anyhow::Result<BTreeMap<String, Probed>> {
    let limits = Limits::from_env(&ctx.env)?;
    let total = set
        .startable()
        .filter(|c| only.is_none_or(|n| c.name.as_str() == n))
        .count();
    if total == 0 {
        return Ok(BTreeMap::new());
    }
    // The same host as every other command's (capabilities, roots, permissions), so a server
    // lists here what it lists to `tools`.
    let mut builder = crate::start::host_builder(ctx, set.clone())?
        .builder
        .all_eager(eager);
    if let Some(only) = only {
        builder = builder.only(vec![only.to_owned()]);
    }
    let host = builder.start()?;

    // Every server has its own connect timeout, counted from when its turn to connect comes;
    // the bound covers the last one's wait for its turn, so a server past its handshake
    // timeout is shown failed, never still pending (it only guards a stuck supervisor).
    let bound = host.settle_bound();
    // One listener for the whole probe: once tokio has installed its handler, a signal that
    // arrives while nobody listens is swallowed, not fatal (the tool lookups below ignored
    // Ctrl-C and SIGTERM that way).
    let interrupted = interrupted();
    tokio::pin!(interrupted);
    tokio::select! {
        // On a terminal, a spinner names the servers still connecting after a second.
        _ = crate::start::wait_in_view(&host, bound) => {}
        _ = &mut interrupted => {
            host.shutdown().await;
            std::process::exit(130);
        }
    }

    let states = host.servers();
    let lookups = states.iter().map(|(name, state)| {
        let host = &host;
        async move {
            let tools = match state {
                ServerState::Connected(_) => {
                    // Bounded like a connect: a server that never answers is not waited for.
                    tokio::time::timeout(limits.connect_timeout, host.server_tools(name))
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .map(|t| t.len())
                }
                ServerState::Lazy { tools, .. } => *tools,
                _ => None,
            };
            let stderr = match state {
                ServerState::Failed(f) => f.stderr.clone(),
                _ => None,
            };
            (
                name.clone(),
                Probed {
                    state: state.clone(),
                    tools,
                    held: 0,
                    stderr,
                },
            )
        }
    });
    // The held tools are counted beside the lookups, under the same Ctrl-C and SIGTERM: the
    // count lists every connected server, and a server that never answers its listing must
    // not keep a signal from stopping the probe.
    let found: BTreeMap<String, Probed> = tokio::select! {
        (found, held_tools) = futures::future::join(
            futures::future::join_all(lookups),
            host.held_tools(),
        ) => {
            let mut found: BTreeMap<String, Probed> = found.into_iter().collect();
            for tool in held_tools {
                if let Some(probed) = found.get_mut(tool.server.as_deref().unwrap_or_default()) {
                    probed.held += 1;
                }
            }
            found
        }
        _ = &mut interrupted => {
            host.shutdown().await;
            std::process::exit(130);
        }
    };
    host.shutdown().await;
    Ok(found)
}

/// The status of an entry after a probe: a symbol, the state, and a reason.
pub(crate) fn probed_status(
    entry: &ServerEntry,
    probed: Option<&Probed>,
) -> (String, Option<String>) {
    let Some(probed) = probed else {
        let (word, reason) = status(entry);
        let symbol = match entry.status() {
            EntryStatus::Invalid(_) | EntryStatus::Denied(_) => "✗",
            EntryStatus::PendingApproval | EntryStatus::ChangedSinceApproval => "…",
            _ => "-",
        };
        return (format!("{symbol} {word}"), reason);
    };
    match &probed.state {
        ServerState::Connected(_) => {
            let held = match probed.held {
                0 => String::new(),
                n => format!(", {n} held"),
            };
            let tools = probed
                .tools
                .map(|n| format!(" ({n} tool{}{held})", if n == 1 { "" } else { "s" }))
                .unwrap_or_default();
            (format!("✓ connected{tools}"), None)
        }
        ServerState::Failed(f) => ("✗ failed".to_owned(), Some(f.message.clone())),
        ServerState::NeedsAuth { message } => ("! needs auth".to_owned(), Some(message.clone())),
        ServerState::Pending { .. } => (
            "… pending".to_owned(),
            Some("still connecting when the wait ended".to_owned()),
        ),
        ServerState::Disabled => ("- disabled".to_owned(), None),
        ServerState::Lazy { tools, listed_at } => {
            let listed = match (tools, listed_at) {
                (Some(n), Some(at)) => format!(
                    " ({n} tool{}, listed {})",
                    if *n == 1 { "" } else { "s" },
                    ago(*at)
                ),
                _ => String::new(),
            };
            (format!("○ lazy{listed}"), None)
        }
    }
}

/// How long ago `at` was, roughly: `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago`.
fn ago(at: std::time::SystemTime) -> String {
    let secs = at.elapsed().map(|d| d.as_secs()).unwrap_or_default();
    match secs {
        0..60 => format!("{secs} s ago"),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86400 => format!("{} h ago", secs / 3600),
        _ => format!("{} d ago", secs / 86400),
    }
}

pub(crate) fn state_json(probed: &Probed) -> Value {
    let mut value = json!({"state": probed.state.label(), "tools": probed.tools});
    if probed.held > 0 {
        value["heldTools"] = json!(probed.held);
    }
    match &probed.state {
        ServerState::Connected(info) => {
            value["protocolVersion"] = json!(info.protocol_version);
            value["serverInfo"] =
                json!({"name": info.name, "title": info.title, "version": info.version});
            value["capabilities"] = json!(info.capabilities.names());
            if !info.capabilities.extensions.is_empty() {
                value["extensions"] = info.capabilities.extensions.to_json();
            }
            value["instructions"] = json!(info.instructions);
        }
        ServerState::Failed(f) => {
            value["error"] = json!(f.message);
            value["hint"] = json!(f.hint);
            value["stderr"] = json!(probed.stderr);
        }
        ServerState::NeedsAuth { message } => value["error"] = json!(message),
        ServerState::Lazy {
            listed_at: Some(at),
            ..
        } => {
            let ms = at
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or_default();
            value["listedAtMs"] = json!(u64::try_from(ms).unwrap_or(u64::MAX));
        }
        _ => {}
    }
    value
}
