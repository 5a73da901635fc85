//! Starting the host a command runs on: the configuration's errors printed, the servers the
//! command needs (and every `required` one), the command line's interaction and roots, the
//! guard process; then waiting for the servers to settle.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::bail;
use switchboard::ServerState;
use switchboard::host::{Host, HostBuilder, Readiness};

use crate::context::Context;
use crate::output::{clean, print_issues};

/// A host's builder, and whether the configuration it is built from has errors.
#[derive(Debug)]
pub(crate) struct Planned {
    pub(crate) builder: HostBuilder,
    /// A file, an entry, a permission rule or a hook has an error (printed on stderr): the
    /// command runs what it can and exits 1.
    pub(crate) config_errors: bool,
}

/// The host's builder for these servers, after checking that each can start. The
/// configuration's errors are printed on stderr (its warnings are for `mcp list`).
pub(crate) fn builder(ctx: &Context, only: Option<Vec<String>>) -> anyhow::Result<Planned> {
    builder_with(ctx, only, true)
}

/// [`builder`], for a command that needs only the servers it names (`switchboard call`): a
/// `required` server is not started for it (`required` governs `mcp list` and the start of
/// the commands that list or serve, not one call).
pub(crate) fn builder_for_call(ctx: &Context, only: Vec<String>) -> anyhow::Result<Planned> {
    builder_with(ctx, Some(only), false)
}

fn builder_with(
    ctx: &Context,
    only: Option<Vec<String>>,
    with_required: bool,
) -> anyhow::Result<Planned> {
    let config = ctx.load();
    print_issues(
        &config
            .issues
            .iter()
            .filter(|i| i.is_error())
            .cloned()
            .collect::<Vec<_>>(),
    );
    let profile = match &ctx.profile {
        Some(name) => Some(config.profile(name).map_err(|e| anyhow::anyhow!(e))?),
        None => None,
    };
    if let Some(names) = &only {
        for name in names {
            let Some(entry) = config.get(name) else {
                bail!("no server named `{name}`")
            };
            if let Some(profile) = &profile
                && !profile.servers.iter().any(|s| s == name)
            {
                bail!(
                    "server `{name}` is not in profile `{}` (it has {})",
                    profile.name,
                    profile
                        .servers
                        .iter()
                        .map(|s| format!("`{s}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            if entry.startable().is_none() {
                let (status, reason) = crate::output::status(entry);
                bail!(
                    "server `{name}` is {status}{}",
                    reason.map(|r| format!(": {r}")).unwrap_or_default()
                );
            }
        }
    }
    // A `required` server is started by every command: none runs without it (a profile names
    // what it starts).
    let with_required = with_required && profile.is_none();
    let only = only.map(|mut names| {
        for required in config.startable().filter(|c| c.required && with_required) {
            if !names.iter().any(|n| n == required.name.as_str()) {
                names.push(required.name.as_str().to_owned());
            }
        }
        names
    });
    let mut planned = host_builder(ctx, config)?;
    if let Some(profile) = profile {
        planned.builder = planned.builder.profile(profile);
    }
    if let Some(only) = only {
        planned.builder = planned.builder.only(only);
    }
    Ok(planned)
}

/// The host every command builds: the command line's interaction (terminal questions,
/// `--elicit-json`, the sampling command) and roots, over `config`. The permission settings'
/// problems are printed on stderr here.
pub(crate) fn host_builder(
    ctx: &Context,
    config: switchboard::config::ConfigSet,
) -> anyhow::Result<Planned> {
    let (interaction, roots) = crate::interact::setup(ctx, &config)?;
    let settings = crate::trust::check_settings(&config, &ctx.env);
    let config_errors = config.has_errors() || settings.has_errors;
    // Most commands end soon: a remote server down now fails them at once. `serve` and the
    // console run for long and say otherwise.
    let mut builder = Host::builder()
        .one_shot(true)
        .trust_project(settings.trusted)
        .config(config)
        .env(ctx.env.clone())
        .interaction(interaction)
        .roots(roots);
    // A guard process stops the stdio servers' process groups if this program is killed.
    match std::env::current_exe() {
        Ok(exe) => builder = builder.child_guard(exe, [crate::GUARD_ARG]),
        Err(e) => eprintln!(
            "warning: cannot find this program's executable for its guard process ({e}); if it is killed, its servers' child processes may outlive it"
        ),
    }
    Ok(Planned {
        builder,
        config_errors,
    })
}

/// Waits for the servers to connect and says which did not, with what a failed one wrote on
/// stderr last. A `required` server that did not connect fails the command.
pub(crate) async fn settle(host: &Host) -> anyhow::Result<()> {
    let bound = host.settle_bound();
    let readiness = host.wait_settled(bound).await;
    report_failures(host);
    readiness?;
    Ok(())
}

/// How long a start may be silent on a terminal before it says what it waits for.
const QUIET_START: Duration = Duration::from_secs(1);
/// How many of the servers still connecting the spinner names.
const SHOWN_NAMES: usize = 4;

/// [`settle`], for a command a person waits on: on a terminal, once the wait passes
/// [`QUIET_START`], a spinner names the servers still connecting (quiet when stderr is not a
/// terminal).
pub(crate) async fn settle_in_view(host: &Host) -> anyhow::Result<()> {
    let bound = host.settle_bound();
    let readiness = wait_in_view(host, bound).await;
    report_failures(host);
    readiness?;
    Ok(())
}

/// Waits (at most `bound`) for the servers to settle; on a terminal, after [`QUIET_START`], a
/// spinner on stderr names those still connecting until they all have settled.
pub(crate) async fn wait_in_view(
    host: &Host,
    bound: Duration,
) -> Result<Readiness, switchboard::HostError> {
    let waiting = host.wait_settled(bound);
    tokio::pin!(waiting);
    if !std::io::stderr().is_terminal() {
        return waiting.await;
    }
    let mut events = host.events();
    tokio::select! {
        done = &mut waiting => return done,
        _ = tokio::time::sleep(QUIET_START) => {}
    }
    // Cleared however the wait ends (a Ctrl-C drops it).
    let bar =
        indicatif::ProgressBar::new_spinner().with_finish(indicatif::ProgressFinish::AndClear);
    bar.enable_steady_tick(Duration::from_millis(80));
    let show = || {
        let servers = host.servers();
        let pending: Vec<&str> = servers
            .iter()
            .filter(|(_, state)| !state.is_settled())
            .map(|(name, _)| name.as_str())
            .collect();
        // A long list would wrap, and a spinner redraws one line only.
        let mut names = pending
            .iter()
            .take(SHOWN_NAMES)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if pending.len() > SHOWN_NAMES {
            names.push_str(&format!(" and {} more", pending.len() - SHOWN_NAMES));
        }
        bar.set_message(format!(
            "still connecting ({} of {}): {names}",
            pending.len(),
            servers.len(),
        ));
    };
    show();
    let done = loop {
        tokio::select! {
            done = &mut waiting => break done,
            event = events.recv() => match event {
                Some(_) => show(),
                // The host is shutting down: its wait ends now too.
                None => break waiting.await,
            },
        }
    };
    bar.finish_and_clear();
    done
}

/// Warns on stderr of each server that failed or waits for a login, with its hint and stderr.
pub(crate) fn report_failures(host: &Host) {
    for (name, state) in host.servers() {
        match state {
            ServerState::Failed(f) => {
                eprintln!("warning: server `{name}` failed: {}", clean(&f.message));
                if let Some(hint) = &f.hint {
                    eprintln!("  hint: {}", clean(hint));
                }
                if let Some(stderr) = &f.stderr {
                    crate::output::print_stderr_tail(stderr);
                }
            }
            ServerState::NeedsAuth { message } => {
                eprintln!(
                    "warning: server `{name}` needs authorization: {}",
                    clean(&message)
                )
            }
            _ => {}
        }
    }
}
