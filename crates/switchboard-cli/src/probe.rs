//! Connecting to configured servers for a listing: start them all in parallel, show a spinner
//! on a terminal while they connect, gather what each reports, and shut them down.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::Duration;

use switchboard::config::ConfigSet;
use switchboard::connection::ServerState;
use switchboard::env_vars::Limits;
use switchboard::manager::{ManagerOptions, ServerManager};

use crate::mcp::Context;

/// What a probe found for one server that was started.
#[derive(Debug, Clone)]
pub(crate) struct Probed {
    pub(crate) state: ServerState,
    pub(crate) tools: Option<usize>,
    pub(crate) stderr: Option<String>,
}

/// Starts every startable server of `set` (or only `only`), waits for all to settle, and
/// returns their states. Ctrl-C stops the servers and exits.
pub(crate) async fn probe(
    ctx: &Context,
    set: &ConfigSet,
    only: Option<&str>,
) -> anyhow::Result<BTreeMap<String, Probed>> {
    let limits = Limits::from_env(&ctx.env)?;
    let configs: Vec<_> = set
        .startable()
        .filter(|c| only.is_none_or(|n| c.name.as_str() == n))
        .cloned()
        .collect();
    if configs.is_empty() {
        return Ok(BTreeMap::new());
    }
    let total = configs.len();
    let options = ManagerOptions {
        limits,
        state_dir: Some(ctx.paths.state_dir.clone()),
        ..ManagerOptions::default()
    };
    let manager = ServerManager::start(configs, options);

    let spinner = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_message(format!("connecting to {total} server(s)…"));
        bar.enable_steady_tick(Duration::from_millis(80));
        bar
    });
    let mut events = manager.events();
    let progress = async {
        while events.recv().await.is_ok() {
            if let Some(bar) = &spinner {
                let settled = manager
                    .states()
                    .iter()
                    .filter(|(_, s)| s.is_settled())
                    .count();
                bar.set_message(format!("connecting: {settled}/{total} settled"));
            }
        }
    };
    // Every server has its own connect timeout; this only guards against a stuck supervisor.
    let bound = limits.connect_timeout + Duration::from_secs(5);
    tokio::select! {
        _ = manager.wait_settled(bound) => {}
        _ = progress => {}
        _ = interrupted() => {
            if let Some(bar) = &spinner { bar.finish_and_clear(); }
            manager.shutdown().await;
            std::process::exit(130);
        }
    }
    if let Some(bar) = &spinner {
        bar.finish_and_clear();
    }

    let states = manager.states();
    let lookups = states.iter().map(|(name, state)| {
        let manager = &manager;
        async move {
            let tools = match state {
                ServerState::Connected(_) => manager.list_tools(name).await.ok().map(|t| t.len()),
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
                    stderr,
                },
            )
        }
    });
    let found: BTreeMap<String, Probed> = futures::future::join_all(lookups)
        .await
        .into_iter()
        .collect();
    manager.shutdown().await;
    Ok(found)
}

/// Resolves on SIGINT or SIGTERM, so servers are shut down before the program goes.
pub(crate) async fn interrupted() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}
